//! Platform binding at publish time: the account must be registered on the contract's platform, and an
//! intent once published through one platform and deployment (origin) is never published through another.
use std::path::Path;

use crate::contract::{Binding, BindingCheck};
use crate::store::{Account, Intent, Status, Store};

use super::PublishError;

/// The publishing account, refused (bad input) when it is registered on another platform than the contract's:
/// its session, its kill switch and its duplicate-text window belong to that other platform.
pub async fn account_for(
    store: &Store,
    name: &str,
    binding: &Binding,
    contract_path: &Path,
) -> Result<Account, PublishError> {
    let account = store.account(name).await?;
    if account.platform != binding.platform {
        return Err(PublishError::BadInput(format!(
            "account {name:?} is registered on platform {:?}, but {} is the contract of platform {:?}: publish \
             through a contract of {:?}, or register an account on {:?} (`oncepost accounts add NAME --platform {}`)",
            account.platform,
            contract_path.display(),
            binding.platform,
            account.platform,
            binding.platform,
            binding.platform,
        )));
    }
    Ok(account)
}

/// Record the binding on a pending intent (first publish), then refuse (bad input) to act on an intent bound
/// to another platform or origin. A settled or in-flight intent is only answered (nothing is read or pressed
/// for it), so only the platform is checked for it. The contract version is not compared here: each attempt
/// records its own, and the store refuses to authorize an attempt whose contract changed under it.
pub async fn bind_or_refuse(
    store: &Store,
    intent: &Intent,
    binding: &Binding,
) -> Result<(), PublishError> {
    let acting = intent.state == Status::Pending;
    let bound = if acting {
        store
            .bind_intent(&intent.key, &binding.platform, &binding.origin)
            .await?
    } else {
        intent.clone()
    };
    let origin = bound.base_origin.as_deref().filter(|_| acting);
    let platform = bound
        .contract_platform
        .as_deref()
        .unwrap_or(&bound.platform);
    match binding.check(platform, None, origin) {
        BindingCheck::Same => Ok(()),
        other => Err(PublishError::BadInput(format!(
            "intent {} is bound elsewhere: {other}; it is never published through another platform or \
             deployment (a new post there is a new intent: another --target or text)",
            intent.key.as_str()
        ))),
    }
}
