//! The intent operations, one module per transition family. Each state change is one guarded UPDATE whose
//! affected-row count decides success, with its event appended in the same transaction (`Tx::append`). When a
//! guard matches nothing, the operation reads the row again only to say why (the read decides nothing).
//!
//! - `create`: create an intent, idempotent on its delivery key (shared with redelivery).
//! - `claim`: `begin`, the executor election: claim, lease and one attempt, or park at the attempt cap.
//! - `authorize`: `authorize_dispatch`, the last checkpoint before any byte, and why it refused.
//! - `settle`: the request hash under the fence, and the attempt's outcome.
//! - `recover`: the sweeper, reconcile lookups, found-before-write.
//! - `operator`: what a person does: retry, park, resolve, note, redeliver.
//! - `queue`: submit's record of what a worker needs, and a worker's pick of due intents (scheduling only).
//! - `lease`: account leases (one host at a time uses an account's login).
//! - `paced`: a claim given back because pacing says "not yet" (nothing was sent).
//! - `sources`: source captures (the stored-head chain), the freshness fence, the chain's reads.
//!
//! To add a transition: add its event to the state table (`state.rs`), then write it here as one
//! `Store::write` whose guarded UPDATE decides and whose `tx.append` records it (docs/store.md).
mod authorize;
mod claim;
mod create;
mod lease;
mod operator;
mod paced;
mod queue;
mod recover;
mod settle;
pub(crate) mod sources;

use super::error::StoreError;
use super::state::{EventKind, Status};

/// Pauses before each try of a transaction whose outcome was unknown (the first try at once): about 3 s in
/// all, long enough for a PostgreSQL crash-restart or a dropped connection to come back.
const UNKNOWN_OUTCOME_PAUSES_MS: [u64; 4] = [0, 250, 1_000, 2_000];

/// Wait before try number `i` (from 0) of [`UNKNOWN_OUTCOME_PAUSES_MS`]. No timer at all for the first: a
/// zero sleep still waits for the timer's next millisecond tick (measured: +1 ms on every settle).
async fn pause_before_try(pause_ms: u64) {
    if pause_ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(pause_ms)).await;
    }
}

/// Run `once` until its outcome is known: a try whose outcome is unknown (the connection broke, or the commit's
/// answer was lost) is tried again after each pause of [`UNKNOWN_OUTCOME_PAUSES_MS`]; `once` gets `true` on
/// every try after such a one (so it can recognise its own earlier commit). Only for writes a retry cannot
/// repeat: idempotent ones, or ones guarded against their own earlier commit. Still unknown after the last
/// try: the first error.
async fn until_known<T, F: Future<Output = Result<T, StoreError>>>(
    what: &str,
    key: &crate::identity::DeliveryKey,
    mut once: impl FnMut(bool) -> F,
) -> Result<T, StoreError> {
    let mut first_error = None;
    for pause_ms in UNKNOWN_OUTCOME_PAUSES_MS {
        pause_before_try(pause_ms).await;
        match once(first_error.is_some()).await {
            Err(e) if e.outcome_unknown() => {
                tracing::warn!(key = %key, error = %e, "{what}'s outcome unknown; trying again");
                first_error.get_or_insert(e);
            }
            done => return done,
        }
    }
    Err(first_error.unwrap_or(StoreError::Locked(0)))
}

impl super::Store {
    /// After a write whose outcome is unknown (the connection broke, or the commit's answer was lost): wait
    /// for the intent's row lock (on PostgreSQL the broken write's server process holds it until it commits
    /// or rolls back; bounded by a lock timeout), then read the row as committed. The read is retried over
    /// [`UNKNOWN_OUTCOME_PAUSES_MS`] while the database is away.
    async fn intent_after_doubt(
        &self,
        key: &crate::identity::DeliveryKey,
    ) -> Result<super::rows::IntentRow, StoreError> {
        let mut last = None;
        for pause_ms in UNKNOWN_OUTCOME_PAUSES_MS {
            pause_before_try(pause_ms).await;
            let read = self
                .write(async |tx| {
                    if tx.dialect() == super::Dialect::Postgres {
                        sqlx::query("SET LOCAL lock_timeout = '5s'")
                            .execute(tx.conn())
                            .await
                            .map_err(super::map_db)?;
                        sqlx::query("SELECT 1 FROM intents WHERE delivery_key = $1 FOR UPDATE")
                            .bind(key.as_str())
                            .execute(tx.conn())
                            .await
                            .map_err(super::map_db)?;
                    }
                    tx.intent(key).await
                })
                .await;
            match read {
                Err(e) if e.outcome_unknown() => last = Some(e),
                done => return done,
            }
        }
        Err(last.unwrap_or(StoreError::Locked(0)))
    }
}

/// The target state the state table gives, or a `WrongState` error for `operation`.
fn transition(
    from: Status,
    event: EventKind,
    operation: &'static str,
) -> Result<Status, StoreError> {
    from.next(event).map_err(|_| StoreError::WrongState {
        operation,
        actual: from,
    })
}
