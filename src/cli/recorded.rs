//! The contract and base URL an intent recorded, for commands on one intent that are given no contract file.
use std::path::PathBuf;

use super::{CliError, Context};
use crate::contract::Contract;
use crate::identity::DeliveryKey;
use crate::store::Store;

/// The kept contract file of the version `key`'s last attempt ran with, written to
/// `DATA_DIR/contracts/HASH.toml` (and checked to parse to that version), and the origin the intent is
/// bound to. Bad input, saying what to give instead, when the intent has neither yet.
pub(super) async fn recorded_contract(
    ctx: &Context,
    store: &Store,
    key: &DeliveryKey,
) -> Result<(PathBuf, String), CliError> {
    let timeline = store.timeline(key).await?;
    let give = "give --contract and --base-url";
    // A submitted intent recorded its contract version and whole base URL; otherwise the last attempt's
    // version and the bound origin.
    let Some(hash) = timeline
        .intent
        .queued_contract
        .clone()
        .or_else(|| timeline.attempts.last().map(|a| a.contract_hash.clone()))
    else {
        return Err(CliError::bad_input(format!(
            "intent {key} has no attempt yet, so no recorded contract: {give}"
        )));
    };
    let Some(base) = timeline
        .intent
        .base_url
        .clone()
        .or_else(|| timeline.intent.base_origin.clone())
    else {
        return Err(CliError::bad_input(format!(
            "intent {key} records no base URL: {give}"
        )));
    };
    let Some(source) = store.contract_source(&hash).await? else {
        return Err(CliError::bad_input(format!(
            "intent {key} last ran with contract version {hash}, which this store does not keep (recorded \
             before oncepost kept contracts): {give}"
        )));
    };
    let dir = ctx.ensure_data_dir()?.join("contracts");
    crate::durable::private_dir(&dir)
        .map_err(|e| CliError::internal(format!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join(format!("{hash}.toml"));
    let parsed = Contract::parse(&source, &path)
        .map_err(|e| CliError::internal(format!("the kept contract {hash} does not parse: {e}")))?;
    if parsed.hash() != hash {
        return Err(CliError::internal(format!(
            "the kept contract {hash} parses to version {}: the store's copy is not that version",
            parsed.hash()
        )));
    }
    crate::durable::write_atomic(&path, source.as_bytes())
        .map_err(|e| CliError::internal(format!("cannot write {}: {e}", path.display())))?;
    Ok((path, base))
}
