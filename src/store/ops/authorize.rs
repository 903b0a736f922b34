//! `authorize_dispatch`, the last checkpoint before any byte: every pre-flight condition re-checked by guarded
//! statements in one transaction, and, after a refusal, a read that says which condition failed.
use serde_json::json;

use crate::store::error::{AuthorizeRefusal, StoreError};
use crate::store::model::*;
use crate::store::rows::find_intent;
use crate::store::state::{EventKind, Status};
use crate::store::{NewEvent, Store, is_duplicate_text, map_db, map_row};

impl Store {
    /// The last checkpoint before any byte: re-check, in one transaction, everything checked before (claim
    /// live and current, epoch, kill switches, credentials, contract, rate interval, duplicate-text window) and
    /// move the intent to `authorized` with a dispatch lease. The returned value is the only way to dispatch.
    pub async fn authorize_dispatch(
        &self,
        claim: &Claim,
        current_contract_hash: &str,
        now: Timestamp,
    ) -> Result<DispatchAuthorization, StoreError> {
        let f = &claim.fence;
        let lease_until = now.plus_ms(self.policy.dispatch_lease_ms).0;
        // A guard that matches nothing returns this sentinel as an ERROR, so the transaction rolls back whole:
        // no partial authorization (intent moved, account not) can ever commit.
        let refused = || StoreError::Refused(AuthorizeRefusal::Conflict);
        let outcome = self.write(async |tx| {
            let id: Option<(i64, String)> = {
                sqlx::query_as(
                    // The claim's identity is its generation: issued once, from a source nothing resets, and
                    // paired with the epoch across restores. A released claim has no lease, so the liveness
                    // clause refuses it too.
                    "UPDATE intents SET state = 'authorized', lease_expires_at = $5, authorized_at = $4, \
                     updated_at = $4 \
                     WHERE delivery_key = $1 AND state = 'pending' AND generation = $2 AND epoch = $3 \
                     AND lease_expires_at > $4 \
                     AND contract_hash = $6 \
                     AND epoch = (SELECT m.epoch FROM store_meta m WHERE m.id = 1) \
                     AND NOT EXISTS (SELECT 1 FROM switches s WHERE s.engaged = 1 AND (s.scope = 'global' \
                         OR (s.scope = 'platform' AND s.name = intents.platform) \
                         OR (s.scope = 'platform' AND s.name = intents.contract_platform) \
                         OR (s.scope = 'account' AND s.name = intents.account))) \
                     RETURNING id, account",
                )
                .bind(f.key.as_str())
                .bind(f.generation)
                .bind(f.epoch)
                .bind(now.0)
                .bind(lease_until)
                .bind(current_contract_hash)
                .fetch_optional(tx.conn())
                .await
                .map_err(map_row)?
            };
            let Some((intent_id, account)) = id else {
                return Err(refused());
            };
            // The account's guard: not revoked, the credential version the attempt began with, and the minimum
            // interval since its last dispatch. The row lock also serializes authorizations per account.
            let acct = sqlx::query(
                "UPDATE accounts SET last_dispatch_at = $3 WHERE name = $1 AND revoked = 0 \
                 AND credential_version = $2 \
                 AND (last_dispatch_at IS NULL OR last_dispatch_at + min_interval_ms <= $3)",
            )
            .bind(&account)
            .bind(claim.credential_version)
            .bind(now.0)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if acct.rows_affected() != 1 {
                return Err(refused());
            }
            // The duplicate-text window is enforced by the database itself (exclusion constraint / trigger).
            let claimed = sqlx::query(
                "INSERT INTO text_claims (intent_id, account, content_hash, claimed_at, window_ms, exempt) \
                 SELECT i.id, i.account, i.content_hash, $2, a.dup_window_ms, \
                        CASE WHEN i.redelivery_of IS NULL THEN 0 ELSE 1 END \
                 FROM intents i JOIN accounts a ON a.name = i.account WHERE i.id = $1",
            )
            .bind(intent_id)
            .bind(now.0)
            .execute(tx.conn())
            .await;
            match claimed {
                Ok(r) if r.rows_affected() == 1 => {}
                Ok(_) => return Err(refused()),
                Err(e) if is_duplicate_text(&e) => return Err(refused()),
                Err(e) => return Err(map_db(e)),
            }
            tx.append(NewEvent {
                intent_id,
                at: now,
                kind: EventKind::Authorized,
                from: Some(Status::Pending),
                to: Status::Authorized,
                actor: &f.owner,
                reason: None,
                details: &json!({ "lease_expires_at": lease_until, "contract_hash": current_contract_hash,
                         "credential_version": claim.credential_version, "epoch": f.epoch }),
                attempt: Some(f.attempt.as_str()),
                generation: Some(f.generation),
            })
            .await?;
            Ok(())
        }).await;
        match outcome {
            Ok(()) => Ok(DispatchAuthorization::new(f.clone(), lease_until)),
            Err(StoreError::Refused(AuthorizeRefusal::Conflict)) => Err(StoreError::Refused(
                self.why_refused(claim, current_contract_hash, now).await?,
            )),
            Err(e) => Err(e),
        }
    }

    /// After a refused authorization (already rolled back), say which condition failed. This read decides
    /// nothing; the guarded statements did.
    async fn why_refused(
        &self,
        claim: &Claim,
        current_contract_hash: &str,
        now: Timestamp,
    ) -> Result<AuthorizeRefusal, StoreError> {
        let f = &claim.fence;
        let row = find_intent(self.pool(), f.key.as_str())
            .await?
            .ok_or_else(|| StoreError::UnknownKey(f.key.to_string()))?;
        let it = &row.intent;
        if it.state != Status::Pending {
            return Ok(AuthorizeRefusal::NotPending { actual: it.state });
        }
        if it.generation != f.generation
            || it.current_attempt.as_deref() != Some(f.attempt.as_str())
        {
            return Ok(AuthorizeRefusal::StaleGeneration {
                held: f.generation,
                current_generation: it.generation,
            });
        }
        if it.lease_owner.as_deref() != Some(f.owner.as_str())
            || it.lease_expires_at.is_none_or(|t| t <= now.0)
        {
            return Ok(AuthorizeRefusal::LeaseExpired);
        }
        let store_epoch = self.epoch().await?;
        if it.epoch != f.epoch || store_epoch != f.epoch {
            return Ok(AuthorizeRefusal::StaleEpoch {
                held: f.epoch,
                current: store_epoch,
            });
        }
        for sw in self.switches().await? {
            let applies = sw.engaged
                && (sw.scope == "global"
                    || (sw.scope == "platform" && sw.name == it.platform)
                    || (sw.scope == "platform" && it.contract_platform.as_ref() == Some(&sw.name))
                    || (sw.scope == "account" && sw.name == it.account));
            if applies {
                return Ok(AuthorizeRefusal::KillSwitch {
                    scope: sw.scope,
                    name: sw.name,
                });
            }
        }
        let acct = self.account(&it.account).await?;
        if acct.revoked {
            return Ok(AuthorizeRefusal::Revoked { account: acct.name });
        }
        if acct.credential_version != claim.credential_version {
            return Ok(AuthorizeRefusal::CredentialChanged {
                held: claim.credential_version,
                current: acct.credential_version,
            });
        }
        if row.contract_hash.as_deref() != Some(current_contract_hash) {
            return Ok(AuthorizeRefusal::ContractChanged {
                held: row.contract_hash.unwrap_or_default(),
                current: current_contract_hash.to_string(),
            });
        }
        if let Some(last) = acct.last_dispatch_at
            && last + acct.min_interval_ms > now.0
        {
            return Ok(AuthorizeRefusal::RateInterval {
                account: acct.name,
                since_ms: now.0 - last,
                min_interval_ms: acct.min_interval_ms,
            });
        }
        if self
            .duplicate_text_claimed(&it.account, &it.content_hash, now)
            .await?
        {
            return Ok(AuthorizeRefusal::DuplicateText { account: acct.name });
        }
        Ok(AuthorizeRefusal::Conflict)
    }
}
