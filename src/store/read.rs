//! Reads: one intent, lists, and timelines verified by replaying their events through the state table.
use super::error::StoreError;
use super::model::*;
use super::rows::{EventRow, INTENT_COLUMNS, IntentRecord, IntentRow, find_intent};
use super::state::Status;
use super::{Store, map_db, map_row};
use crate::identity::DeliveryKey;

impl Store {
    /// One intent by key.
    pub async fn intent(&self, key: &DeliveryKey) -> Result<Intent, StoreError> {
        find_intent(self.pool(), key.as_str())
            .await?
            .map(|row| row.intent)
            .ok_or_else(|| StoreError::UnknownKey(key.to_string()))
    }

    /// The redelivery of a consumed intent, if a person authorized one (the oldest, for a store written
    /// before migration 0003 allowed only one).
    pub async fn redelivery_of(
        &self,
        consumed: &DeliveryKey,
    ) -> Result<Option<Intent>, StoreError> {
        let sql = format!(
            "SELECT {INTENT_COLUMNS} FROM intents WHERE redelivery_of = $1 ORDER BY id LIMIT 1"
        );
        sqlx::query_as::<_, IntentRecord>(&sql)
            .bind(consumed.as_str())
            .fetch_optional(self.pool())
            .await
            .map_err(map_row)?
            .map(|r| IntentRow::try_from(r).map(|r| r.intent))
            .transpose()
    }

    /// The texts of the account's newest `limit` intents other than `except` (any state, newest first; an
    /// intent without text, a like, has none): what a create request for `except` must not carry besides
    /// its own post (door/carried.rs: a page's outbox sending earlier posts inside the new one's request).
    /// Read by the account's index in id order (SQLite's `intents_account` ends in the rowid; PostgreSQL's
    /// `intents_account_newest`, migration 0010): the walk stops at `limit`, however long the history.
    pub async fn other_texts(
        &self,
        account: &str,
        except: &DeliveryKey,
        limit: i64,
    ) -> Result<Vec<String>, StoreError> {
        let requests: Vec<String> = sqlx::query_scalar(
            "SELECT request_json FROM intents WHERE account = $1 AND delivery_key <> $2 \
             ORDER BY id DESC LIMIT $3",
        )
        .bind(account)
        .bind(except.as_str())
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(map_db)?;
        let mut texts = Vec::with_capacity(requests.len());
        for request in requests {
            let request: crate::identity::CanonicalRequest = serde_json::from_str(&request)
                .map_err(|e| StoreError::Decode(format!("request_json: {e}")))?;
            texts.extend(request.text.filter(|t| !t.is_empty()));
        }
        Ok(texts)
    }

    /// Intents, newest first, optionally in one state.
    pub async fn intents(
        &self,
        state: Option<Status>,
        limit: i64,
    ) -> Result<Vec<Intent>, StoreError> {
        let sql = format!(
            "SELECT {INTENT_COLUMNS} FROM intents WHERE ($1 IS NULL OR state = $1) ORDER BY id DESC LIMIT $2"
        );
        sqlx::query_as::<_, IntentRecord>(&sql)
            .bind(state.map(|s| s.label()))
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(map_row)?
            .into_iter()
            .map(|r| IntentRow::try_from(r).map(|r| r.intent))
            .collect()
    }

    /// The intent with its attempts and events. The events are replayed through [`Status::next`]; history
    /// that does not replay to the stored state is reported as [`StoreError::Corrupt`].
    pub async fn timeline(&self, key: &DeliveryKey) -> Result<Timeline, StoreError> {
        let row = find_intent(self.pool(), key.as_str())
            .await?
            .ok_or_else(|| StoreError::UnknownKey(key.to_string()))?;
        let attempts: Vec<AttemptRecord> = sqlx::query_as(
            "SELECT token, ordinal, owner, generation, epoch, credential_version, contract_hash, created_at \
             FROM attempts WHERE intent_id = $1 ORDER BY ordinal",
        )
        .bind(row.id)
        .fetch_all(self.pool())
        .await
        .map_err(map_row)?;
        let events = sqlx::query_as::<_, EventRow>(
            "SELECT id, at, kind, from_state, to_state, actor, reason, details, attempt_token, generation \
             FROM events WHERE intent_id = $1 ORDER BY id",
        )
        .bind(row.id)
        .fetch_all(self.pool())
        .await
        .map_err(map_row)?
        .into_iter()
        .map(EventRecord::try_from)
        .collect::<Result<Vec<_>, StoreError>>()?;
        let intent = row.intent;
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
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM text_claims c JOIN accounts a ON a.name = c.account \
                 WHERE c.account = $1 AND c.content_hash = $2 AND c.exempt = 0 \
                 AND c.claimed_at < $3 + a.dup_window_ms AND $3 < c.claimed_at + c.window_ms",
        )
        .bind(account)
        .bind(content_hash)
        .bind(now.0)
        .fetch_one(self.pool())
        .await
        .map_err(map_db)?;
        Ok(n > 0)
    }

    /// When the oldest pending intent was created (ms), if any is pending: the queue's age for operators.
    pub async fn oldest_pending_created_at(&self) -> Result<Option<i64>, StoreError> {
        let row: (Option<i64>,) =
            sqlx::query_as("SELECT MIN(created_at) FROM intents WHERE state = 'pending'")
                .fetch_one(self.pool())
                .await
                .map_err(map_row)?;
        Ok(row.0)
    }

    /// Counts of intents per state.
    pub async fn state_counts(&self) -> Result<Vec<(Status, i64)>, StoreError> {
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT state, COUNT(*) AS n FROM intents GROUP BY state")
                .fetch_all(self.pool())
                .await
                .map_err(map_row)?;
        rows.into_iter()
            .map(|(s, n)| {
                Ok((
                    Status::from_label(&s).ok_or_else(|| StoreError::Decode(s.clone()))?,
                    n,
                ))
            })
            .collect()
    }
}
