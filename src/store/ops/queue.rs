//! The queue: `submit` records what a worker needs to run an intent (the whole base URL, the contract version)
//! and when it may run; a worker takes due intents. Taking is scheduling, not a claim: it moves `run_after`
//! forward by the claim lease so that other workers pass the intent by while this one opens its pages. The
//! executor is still elected by `begin`, and only the holder of the current claim can be authorized, exactly as
//! for a synchronous publish: two workers that take the same intent (a taker that stalled past the lease) meet
//! at `begin`, and at most one of them ever reaches the press.
use serde_json::json;

use crate::identity::DeliveryKey;
use crate::store::error::StoreError;
use crate::store::model::*;
use crate::store::state::{EventKind, Status};
use crate::store::{NewEvent, Store, map_db, map_row};

/// Longest base URL a submit records.
const MAX_BASE_URL_BYTES: usize = 2048;

impl Store {
    /// Queue a pending intent: record its whole base URL and the contract version it runs with (already kept
    /// by `record_contract_version`), and the earliest time a worker may run it. Queuing again (the same
    /// submit run twice, or `submit --key`) updates the time and the contract version; the base URL, once
    /// recorded, never changes. Anything but a pending intent is answered with `WrongState` and not touched.
    pub async fn queue_intent(
        &self,
        key: &DeliveryKey,
        base_url: &str,
        contract_hash: &str,
        run_after: Timestamp,
        actor: &str,
        now: Timestamp,
    ) -> Result<Intent, StoreError> {
        if base_url.is_empty() || base_url.len() > MAX_BASE_URL_BYTES {
            return Err(StoreError::Invalid(format!(
                "a base URL must be 1-{MAX_BASE_URL_BYTES} bytes"
            )));
        }
        self.write(async |tx| {
            let row = tx.intent(key).await?;
            if let Some(recorded) = &row.intent.base_url
                && recorded != base_url
            {
                return Err(StoreError::Invalid(format!(
                    "intent {key} was submitted at {recorded}, not {base_url}: a base URL never changes once \
                     recorded"
                )));
            }
            // Not a state change: pending stays pending. The guard keeps a settled or claimed-elsewhere intent
            // as it is (a live claim's holder is running it now).
            let r = sqlx::query(
                "UPDATE intents SET base_url = COALESCE(base_url, $2), queued_contract = $3, run_after = $4, \
                 updated_at = $5 \
                 WHERE id = $1 AND state = 'pending' AND (base_url IS NULL OR base_url = $2) \
                 AND EXISTS (SELECT 1 FROM contract_versions c WHERE c.hash = $3)",
            )
            .bind(row.id)
            .bind(base_url)
            .bind(contract_hash)
            .bind(run_after.0)
            .bind(now.0)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if r.rows_affected() != 1 {
                return Err(if row.intent.state != Status::Pending {
                    StoreError::WrongState {
                        operation: "queue",
                        actual: row.intent.state,
                    }
                } else {
                    StoreError::Invalid(format!(
                        "contract version {contract_hash} is not kept in this store"
                    ))
                });
            }
            tx.append(NewEvent {
                intent_id: row.id,
                at: now,
                kind: EventKind::Queued,
                from: Some(Status::Pending),
                to: Status::Pending,
                actor,
                reason: None,
                details: &json!({ "run_after": run_after.0, "contract_hash": contract_hash,
                                  "base_url": crate::redact::text(base_url) }),
                attempt: None,
                generation: None,
            })
            .await?;
            Ok(tx.intent(key).await?.intent)
        })
        .await
    }

    /// Take up to `limit` due queued intents for this worker, oldest `run_after` first: pending, due, nobody's
    /// live claim, under the attempt cap, the account neither revoked, nor paced past now, nor leased by a live
    /// holder other than `own_holder` (this worker's account-lease holder: the accounts whose browsers it keeps
    /// warm are its own). Each taken intent's `run_after` moves to `now + hold_ms` (see the module docs:
    /// scheduling only).
    pub async fn take_due(
        &self,
        limit: i64,
        hold_ms: i64,
        busy_accounts: &[String],
        own_holder: &str,
        now: Timestamp,
    ) -> Result<Vec<DeliveryKey>, StoreError> {
        if limit <= 0 {
            return Ok(Vec::new());
        }
        // Accounts this worker is publishing for already: one browser per account profile at a time.
        let busy: String = (0..busy_accounts.len())
            .map(|i| format!(" AND i.account <> ${}", i + 5))
            .collect();
        let keys: Vec<String> = self
            .write_generic_plans(async |tx| {
                let sql = format!(
                    "UPDATE intents SET run_after = $3 WHERE id IN ( \
                     SELECT i.id FROM intents i JOIN accounts a ON a.name = i.account \
                     WHERE i.state = 'pending' AND i.run_after IS NOT NULL AND i.run_after <= $1 \
                     AND i.base_url IS NOT NULL AND i.queued_contract IS NOT NULL \
                     AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= $1) \
                     AND i.attempt_count < i.max_attempts AND a.revoked = 0 \
                     AND (a.next_dispatch_at IS NULL OR a.next_dispatch_at <= $1) \
                     AND (a.last_dispatch_at IS NULL OR a.last_dispatch_at + a.min_interval_ms <= $1) \
                     AND NOT EXISTS (SELECT 1 FROM account_leases l WHERE l.account = i.account \
                                     AND l.expires_at > $1 AND l.holder <> $4) \
                     AND (a.hourly_cap IS NULL OR (SELECT COUNT(*) FROM dispatches d \
                          WHERE d.account = a.name AND d.at > $1 - 3600000) < a.hourly_cap) \
                     AND (a.daily_cap IS NULL OR (SELECT COUNT(*) FROM dispatches d \
                          WHERE d.account = a.name AND d.at > $1 - 86400000) < a.daily_cap){busy} \
                     ORDER BY i.run_after, i.id LIMIT $2{}) \
                     RETURNING delivery_key",
                    tx.dialect().skip_locked_of("i")
                );
                let mut q = sqlx::query_scalar(&sql)
                    .bind(now.0)
                    .bind(limit)
                    .bind(now.plus_ms(hold_ms).0)
                    .bind(own_holder);
                for a in busy_accounts {
                    q = q.bind(a.as_str());
                }
                q.fetch_all(tx.conn())
                    .await
                    .map_err(map_row)
            })
            .await?;
        keys.into_iter()
            .map(|k| {
                DeliveryKey::parse(&k)
                    .ok_or_else(|| StoreError::Decode(format!("delivery_key {k:?}")))
            })
            .collect()
    }

    /// Put a taken intent back for another try at `at` (its taker did not run it: the profile or the account
    /// was busy). Scheduling only; a pending queued intent alone is touched.
    pub async fn defer(&self, key: &DeliveryKey, at: Timestamp) -> Result<(), StoreError> {
        self.write(async |tx| {
            sqlx::query(
                "UPDATE intents SET run_after = $2 WHERE delivery_key = $1 AND state = 'pending' \
                 AND run_after IS NOT NULL",
            )
            .bind(key.as_str())
            .bind(at.0)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            Ok(())
        })
        .await
    }

    /// Whether any queued intent is due or will be (pending with a `run_after`): the earliest `run_after`.
    pub async fn next_queued_at(&self) -> Result<Option<i64>, StoreError> {
        sqlx::query_scalar(
            "SELECT MIN(run_after) FROM intents WHERE state = 'pending' AND run_after IS NOT NULL",
        )
        .fetch_one(self.pool())
        .await
        .map_err(map_row)
    }
}
