//! A claim given back because the authorization said "not yet" (the account's pacing, a busy platform, the
//! account leased elsewhere): nothing was authorized, so nothing was sent, and the intent stays pending. A
//! queued intent gets the time worth trying again as its `run_after`, so a worker picks it up then.
use serde_json::json;

use crate::store::error::StoreError;
use crate::store::model::*;
use crate::store::state::{EventKind, Status};
use crate::store::{NewEvent, Store, map_db};

impl Store {
    /// Give back this claim (pending stays pending, lease cleared) after a "not yet" refusal, and move a queued
    /// intent's `run_after` to `retry_at`. `Fenced` when the claim is no longer this worker's.
    pub async fn release_not_yet(
        &self,
        fence: &Fence,
        retry_at: Timestamp,
        why: &str,
        now: Timestamp,
    ) -> Result<Intent, StoreError> {
        self.write(async |tx| {
            let row = tx.intent(&fence.key).await?;
            let r = sqlx::query(
                "UPDATE intents SET lease_owner = NULL, lease_expires_at = NULL, \
                 run_after = CASE WHEN queued_contract IS NULL THEN run_after ELSE $4 END, updated_at = $5 \
                 WHERE id = $1 AND state = 'pending' AND generation = $2 AND lease_owner = $3",
            )
            .bind(row.id)
            .bind(fence.generation)
            .bind(&fence.owner)
            .bind(retry_at.0)
            .bind(now.0)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if r.rows_affected() != 1 {
                return Err(StoreError::Fenced {
                    actual: row.intent.state,
                    held: fence.generation,
                    current_generation: row.intent.generation,
                });
            }
            tx.append(NewEvent {
                intent_id: row.id,
                at: now,
                kind: EventKind::ClaimReleased,
                from: Some(Status::Pending),
                to: Status::Pending,
                actor: &fence.owner,
                reason: Some(why),
                details: &json!({ "retry_at": retry_at.0, "queued": row.intent.queued_contract.is_some() }),
                attempt: Some(fence.attempt.as_str()),
                generation: Some(fence.generation),
            })
            .await?;
            Ok(tx.intent(&fence.key).await?.intent)
        })
        .await
    }
}
