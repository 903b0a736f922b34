//! Reads: one intent, lists, and timelines verified by replaying their events through the state table.
use super::error::StoreError;
use super::model::*;
use super::ops::{INTENT_COLUMNS, fetch_intent, intent_from_row};
use super::state::{EventKind, Status};
use super::{Store, col, map_db, read_pool};
use crate::identity::DeliveryKey;

impl Store {
    /// One intent by key.
    pub async fn intent(&self, key: &DeliveryKey) -> Result<Intent, StoreError> {
        read_pool!(self, |ex| { Ok(fetch_intent!(ex, key.as_str()).intent) })
    }

    /// The redelivery of a consumed intent, if a person authorized one (the oldest, for a store written
    /// before migration 0003 allowed only one).
    pub async fn redelivery_of(
        &self,
        consumed: &DeliveryKey,
    ) -> Result<Option<Intent>, StoreError> {
        read_pool!(self, |ex| {
            let sql = format!(
                "SELECT {INTENT_COLUMNS} FROM intents WHERE redelivery_of = $1 ORDER BY id LIMIT 1"
            );
            let row = sqlx::query(&sql)
                .bind(consumed.as_str())
                .fetch_optional(ex)
                .await
                .map_err(map_db)?;
            row.map(|r| intent_from_row(&r).map(|r| r.intent))
                .transpose()
        })
    }

    /// Intents, newest first, optionally in one state.
    pub async fn intents(
        &self,
        state: Option<Status>,
        limit: i64,
    ) -> Result<Vec<Intent>, StoreError> {
        read_pool!(self, |ex| {
            let sql = format!(
                "SELECT {INTENT_COLUMNS} FROM intents WHERE ($1 IS NULL OR state = $1) ORDER BY id DESC LIMIT $2"
            );
            let rows = sqlx::query(&sql)
                .bind(state.map(|s| s.label()))
                .bind(limit)
                .fetch_all(ex)
                .await
                .map_err(map_db)?;
            rows.iter()
                .map(|r| intent_from_row(r).map(|r| r.intent))
                .collect()
        })
    }

    /// The intent with its attempts and events. The events are replayed through [`Status::next`]; history
    /// that does not replay to the stored state is reported as [`StoreError::Corrupt`].
    pub async fn timeline(&self, key: &DeliveryKey) -> Result<Timeline, StoreError> {
        let (intent, attempts, events) = read_pool!(self, |ex| {
            let row = fetch_intent!(ex, key.as_str());
            let arows = sqlx::query(
                "SELECT token, ordinal, owner, generation, epoch, credential_version, contract_hash, created_at \
                 FROM attempts WHERE intent_id = $1 ORDER BY ordinal",
            )
            .bind(row.id)
            .fetch_all(ex)
            .await
            .map_err(map_db)?;
            let attempts = arows
                .iter()
                .map(|r| {
                    Ok(AttemptRecord {
                        token: col(r, "token")?,
                        ordinal: col(r, "ordinal")?,
                        owner: col(r, "owner")?,
                        generation: col(r, "generation")?,
                        epoch: col(r, "epoch")?,
                        credential_version: col(r, "credential_version")?,
                        contract_hash: col(r, "contract_hash")?,
                        created_at: col(r, "created_at")?,
                    })
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            let erows = sqlx::query(
                "SELECT id, at, kind, from_state, to_state, actor, reason, details, attempt_token, generation \
                 FROM events WHERE intent_id = $1 ORDER BY id",
            )
            .bind(row.id)
            .fetch_all(ex)
            .await
            .map_err(map_db)?;
            let events = erows
                .iter()
                .map(|r| {
                    let kind: String = col(r, "kind")?;
                    let from: Option<String> = col(r, "from_state")?;
                    let to: String = col(r, "to_state")?;
                    let details: String = col(r, "details")?;
                    Ok(EventRecord {
                        id: col(r, "id")?,
                        at: col(r, "at")?,
                        kind: EventKind::from_label(&kind)
                            .ok_or_else(|| StoreError::Decode(format!("event kind {kind:?}")))?,
                        from: from.as_deref().and_then(Status::from_label),
                        to: Status::from_label(&to)
                            .ok_or_else(|| StoreError::Decode(format!("state {to:?}")))?,
                        actor: col(r, "actor")?,
                        reason: col(r, "reason")?,
                        details: serde_json::from_str(&details)
                            .unwrap_or(serde_json::Value::String(details)),
                        attempt: col(r, "attempt_token")?,
                        generation: col(r, "generation")?,
                    })
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            Ok((row.intent, attempts, events))
        })?;
        let replayed = Status::replay(events.iter().map(|e| e.kind)).map_err(|source| {
            StoreError::Corrupt {
                key: key.to_string(),
                source,
            }
        })?;
        if replayed != intent.state {
            return Err(StoreError::StateMismatch {
                key: key.to_string(),
                replayed,
                stored: intent.state,
            });
        }
        Ok(Timeline {
            intent,
            attempts,
            events,
        })
    }

    /// Whether a non-exempt duplicate-text claim of this account covers `now`.
    pub(crate) async fn duplicate_text_claimed(
        &self,
        account: &str,
        content_hash: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        read_pool!(self, |ex| {
            let n: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM text_claims c JOIN accounts a ON a.name = c.account \
                 WHERE c.account = $1 AND c.content_hash = $2 AND c.exempt = 0 \
                 AND c.claimed_at < $3 + a.dup_window_ms AND $3 < c.claimed_at + c.window_ms",
            )
            .bind(account)
            .bind(content_hash)
            .bind(now.0)
            .fetch_one(ex)
            .await
            .map_err(map_db)?;
            Ok(n > 0)
        })
    }

    /// Counts of intents per state.
    pub async fn state_counts(&self) -> Result<Vec<(Status, i64)>, StoreError> {
        read_pool!(self, |ex| {
            let rows = sqlx::query("SELECT state, COUNT(*) AS n FROM intents GROUP BY state")
                .fetch_all(ex)
                .await
                .map_err(map_db)?;
            rows.iter()
                .map(|r| {
                    let s: String = col(r, "state")?;
                    Ok((
                        Status::from_label(&s).ok_or_else(|| StoreError::Decode(s.clone()))?,
                        col(r, "n")?,
                    ))
                })
                .collect()
        })
    }
}
