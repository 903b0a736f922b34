//! The intent operations. Each state change is one guarded UPDATE whose affected-row count decides success,
//! with its event appended in the same transaction. When a guard matches nothing, the operation reads the row
//! again only to say why (the read decides nothing).
use serde_json::json;

use super::error::{AuthorizeRefusal, StoreError};
use super::model::*;
use super::rows::find_intent;
use super::state::{EventKind, Status};
use super::{NewEvent, Store, is_duplicate_text, map_db, map_row};

use crate::identity::{AttemptToken, ContentHash, DeliveryKey};

/// Whether a database error is migration 0003's one-redelivery-per-consumed-intent trigger.
fn is_one_redelivery(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.message().contains("oncepost_one_redelivery"))
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

impl Store {
    /// Create the intent for `new`, or return the existing one with the same delivery key (idempotent: the
    /// same request never makes a second row).
    pub async fn create_intent(
        &self,
        new: &NewIntent,
        now: Timestamp,
    ) -> Result<Created, StoreError> {
        // A name from before the account-name rule (or a library caller's) never reaches a profile path.
        crate::identity::check_account_name(&new.account)
            .map_err(|e| StoreError::Invalid(e.to_string()))?;
        if let Some(t) = &new.request.text {
            crate::identity::check_text_size("the post text", t).map_err(StoreError::Invalid)?;
        }
        for (k, v) in &new.request.fields {
            crate::identity::check_text_size(&format!("field {k:?}"), v)
                .map_err(StoreError::Invalid)?;
        }
        let key = DeliveryKey::derive(&crate::identity::DeliverySpec {
            account: new.account.clone(),
            action: new.action,
            target: new.target.clone(),
            request: new.request.clone(),
        });
        self.insert_intent(new, &key, None, "creator", None, now)
            .await
    }

    /// Insert an intent row unless its key exists. Shared by create and redeliver.
    async fn insert_intent(
        &self,
        new: &NewIntent,
        key: &DeliveryKey,
        redelivery: Option<(&DeliveryKey, serde_json::Value)>,
        actor: &str,
        reason: Option<&str>,
        now: Timestamp,
    ) -> Result<Created, StoreError> {
        let content = ContentHash::of(new.action, new.request.text.as_deref());
        let request_json =
            serde_json::to_string(&new.request).map_err(|e| StoreError::Invalid(e.to_string()))?;
        let max_attempts = self.policy.max_attempts;
        self.write(async |tx| {
            let inserted: Result<Option<i64>, sqlx::Error> = sqlx::query_scalar(
                "INSERT INTO intents (delivery_key, account, platform, action_kind, target, request_json, \
                 content_hash, source_ref, redelivery_of, redelivery_json, state, max_attempts, created_at, \
                 updated_at) \
                 SELECT $1, a.name, a.platform, $3, $4, $5, $6, $7, $8, $9, 'pending', $10, $11, $11 \
                 FROM accounts a WHERE a.name = $2 \
                 ON CONFLICT (delivery_key) DO NOTHING RETURNING id",
            )
            .bind(key.as_str())
            .bind(&new.account)
            .bind(new.action.label())
            .bind(&new.target)
            .bind(&request_json)
            .bind(content.as_str())
            .bind(&new.source_ref)
            .bind(redelivery.as_ref().map(|(k, _)| k.as_str()))
            .bind(redelivery.as_ref().map(|(_, v)| v.to_string()))
            .bind(max_attempts)
            .bind(now.0)
            .fetch_optional(tx.conn())
            .await;
            let inserted = match inserted {
                Ok(id) => id,
                // Another redelivery of the consumed intent committed first (migration 0003's trigger):
                // roll back and let `redeliver` answer with that one.
                Err(e) if redelivery.is_some() && is_one_redelivery(&e) => {
                    return Err(StoreError::Refused(AuthorizeRefusal::Conflict));
                }
                Err(e) => return Err(map_db(e)),
            };
            match inserted {
                Some(id) => {
                    let details = match &redelivery {
                        Some((_, record)) => json!({ "redelivery": record }),
                        None => json!({ "source_ref": new.source_ref }),
                    };
                    tx.append(NewEvent {
                        intent_id: id,
                        at: now,
                        kind: EventKind::Created,
                        from: None,
                        to: Status::Pending,
                        actor,
                        reason,
                        details: &details,
                        attempt: None,
                        generation: None,
                    })
                    .await?;
                    if let Some((consumed, record)) = &redelivery {
                        let old = tx.intent(consumed).await?;
                        let to = transition(
                            old.intent.state,
                            EventKind::RedeliveryAuthorized,
                            "redeliver",
                        )?;
                        tx.append(NewEvent {
                            intent_id: old.id,
                            at: now,
                            kind: EventKind::RedeliveryAuthorized,
                            from: Some(old.intent.state),
                            to,
                            actor,
                            reason,
                            details: &json!({ "new_key": key.as_str(), "authorization": record }),
                            attempt: None,
                            generation: None,
                        })
                        .await?;
                    }
                    let row = tx.intent(key).await?;
                    Ok(Created {
                        intent: row.intent,
                        created: true,
                    })
                }
                None => {
                    let exists: i64 =
                        sqlx::query_scalar("SELECT COUNT(*) FROM accounts WHERE name = $1")
                            .bind(&new.account)
                            .fetch_one(tx.conn())
                            .await
                            .map_err(map_db)?;
                    if exists == 0 {
                        return Err(StoreError::UnknownAccount(new.account.clone()));
                    }
                    let row = tx.intent(key).await?;
                    Ok(Created {
                        intent: row.intent,
                        created: false,
                    })
                }
            }
        }).await
    }

    /// Claim a pending intent for `owner` and mint exactly one attempt (executor election). Refuses while
    /// another worker holds a live claim or lease. An expired pre-authorization claim is taken over (its
    /// attempt never sent anything, and its holder's later authorize is rejected by the new generation). At
    /// the attempt cap the intent is parked instead.
    pub async fn begin(
        &self,
        key: &DeliveryKey,
        owner: &str,
        contract_hash: &str,
        now: Timestamp,
    ) -> Result<Begun, StoreError> {
        if owner.trim().is_empty() {
            return Err(StoreError::Invalid(
                "a worker needs a non-empty owner id".into(),
            ));
        }
        let claim_lease_ms = self.policy.claim_lease_ms;
        self.write(async |tx| {
            let row = tx.intent(key).await?;
            let it = &row.intent;
            let credential_version: Option<i64> =
                sqlx::query_scalar("SELECT credential_version FROM accounts WHERE name = $1")
                    .bind(&it.account)
                    .fetch_optional(tx.conn())
                    .await
                    .map_err(map_db)?;
            let credential_version =
                credential_version.ok_or_else(|| StoreError::UnknownAccount(it.account.clone()))?;
            let generation: i64 = sqlx::query_scalar(tx.dialect().next_generation_sql())
                .fetch_one(tx.conn())
                .await
                .map_err(map_db)?;
            let epoch: i64 = sqlx::query_scalar("SELECT epoch FROM store_meta WHERE id = 1")
                .fetch_one(tx.conn())
                .await
                .map_err(map_db)?;
            let token = AttemptToken::mint();
            let expires = now.plus_ms(claim_lease_ms).0;
            // The guard decides: still pending, nobody holds a live claim, under the attempt cap, the account
            // not revoked (pre-flight; authorization re-checks it), and nobody began since the row was read
            // (generation compare-and-swap).
            let claimed = sqlx::query(
                "UPDATE intents SET generation = $2, epoch = $3, lease_owner = $4, lease_expires_at = $5, \
                 current_attempt = $6, attempt_count = attempt_count + 1, contract_hash = $7, \
                 credential_version = $8, updated_at = $9 \
                 WHERE id = $1 AND state = 'pending' AND attempt_count < max_attempts \
                 AND (lease_expires_at IS NULL OR lease_expires_at <= $9) AND generation = $10 \
                 AND EXISTS (SELECT 1 FROM accounts a WHERE a.name = intents.account AND a.revoked = 0)",
            )
            .bind(row.id)
            .bind(generation)
            .bind(epoch)
            .bind(owner)
            .bind(expires)
            .bind(token.as_str())
            .bind(contract_hash)
            .bind(credential_version)
            .bind(now.0)
            .bind(it.generation)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if claimed.rows_affected() != 1 {
                // At the cap, the same kind of guarded statement parks it instead.
                let parked = sqlx::query(
                    "UPDATE intents SET state = 'parked', lease_owner = NULL, lease_expires_at = NULL, \
                     updated_at = $2 WHERE id = $1 AND state = 'pending' AND attempt_count >= max_attempts \
                     AND (lease_expires_at IS NULL OR lease_expires_at <= $2)",
                )
                .bind(row.id)
                .bind(now.0)
                .execute(tx.conn())
                .await
                .map_err(map_db)?;
                if parked.rows_affected() == 1 {
                    tx.append(NewEvent {
                        intent_id: row.id,
                        at: now,
                        kind: EventKind::Parked,
                        from: Some(Status::Pending),
                        to: Status::Parked,
                        actor: owner,
                        reason: Some("attempt_cap"),
                        details: &json!({ "attempts": it.attempt_count, "max_attempts": it.max_attempts }),
                        attempt: None,
                        generation: None,
                    })
                    .await?;
                    return Ok(Begun::Parked {
                        attempts: it.attempt_count,
                    });
                }
                // Nothing matched: say why from the row as read (this decides nothing).
                return Err(match (&it.lease_owner, it.lease_expires_at) {
                    _ if it.state != Status::Pending => StoreError::WrongState {
                        operation: "begin",
                        actual: it.state,
                    },
                    (Some(holder), Some(until)) if until > now.0 => StoreError::LeaseHeld {
                        owner: holder.clone(),
                        expires_at: until,
                    },
                    _ => {
                        let revoked: i64 =
                            sqlx::query_scalar("SELECT revoked FROM accounts WHERE name = $1")
                                .bind(&it.account)
                                .fetch_one(tx.conn())
                                .await
                                .map_err(map_db)?;
                        if revoked != 0 {
                            AuthorizeRefusal::Revoked {
                                account: it.account.clone(),
                            }
                            .into()
                        } else {
                            StoreError::LeaseHeld {
                                owner: "(concurrent worker)".into(),
                                expires_at: now.0,
                            }
                        }
                    }
                });
            }
            let ordinal = it.attempt_count + 1;
            sqlx::query(
                "INSERT INTO attempts (token, intent_id, ordinal, account, action_kind, credential_version, \
                 contract_hash, generation, epoch, owner, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            )
            .bind(token.as_str())
            .bind(row.id)
            .bind(ordinal)
            .bind(&it.account)
            .bind(it.action.label())
            .bind(credential_version)
            .bind(contract_hash)
            .bind(generation)
            .bind(epoch)
            .bind(owner)
            .bind(now.0)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if let (Some(stale_owner), Some(stale_attempt)) = (&it.lease_owner, &it.current_attempt)
            {
                tx.append(NewEvent {
                    intent_id: row.id,
                    at: now,
                    kind: EventKind::ClaimReleased,
                    from: Some(Status::Pending),
                    to: Status::Pending,
                    actor: owner,
                    reason: Some("expired claim taken over by begin"),
                    details: &json!({ "stale_owner": stale_owner, "expired_at": it.lease_expires_at }),
                    attempt: Some(stale_attempt.as_str()),
                    generation: Some(it.generation),
                })
                .await?;
            }
            tx.append(NewEvent {
                intent_id: row.id,
                at: now,
                kind: EventKind::Begun,
                from: Some(Status::Pending),
                to: Status::Pending,
                actor: owner,
                reason: None,
                details: &json!({ "ordinal": ordinal, "epoch": epoch, "lease_expires_at": expires,
                         "contract_hash": contract_hash, "credential_version": credential_version }),
                attempt: Some(token.as_str()),
                generation: Some(generation),
            })
            .await?;
            Ok(Begun::Claimed(Claim {
                fence: Fence {
                    key: key.clone(),
                    attempt: token,
                    generation,
                    epoch,
                    owner: owner.to_string(),
                },
                lease_expires_at: expires,
                ordinal,
                contract_hash: contract_hash.to_string(),
                credential_version,
            }))
        }).await
    }

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

    /// Record the wire request hash (and what else is known of the request) on the attempt's history, under
    /// the authorization's fence.
    pub async fn record_request_sent(
        &self,
        fence: &Fence,
        wire_hash: &str,
        details: serde_json::Value,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut details = details;
        if let Some(obj) = details.as_object_mut() {
            obj.insert("wire_request_hash".into(), json!(wire_hash));
        } else {
            details = json!({ "wire_request_hash": wire_hash, "details": details });
        }
        self.write(async |tx| {
            let r = sqlx::query(
                "INSERT INTO events (intent_id, at, kind, from_state, to_state, actor, reason, details, \
                 attempt_token, generation) \
                 SELECT id, $5, 'request_sent', 'authorized', 'authorized', $6, NULL, $7, $4, $2 FROM intents \
                 WHERE delivery_key = $1 AND state = 'authorized' AND generation = $2 AND epoch = $3 \
                 AND current_attempt = $4",
            )
            .bind(fence.key.as_str())
            .bind(fence.generation)
            .bind(fence.epoch)
            .bind(fence.attempt.as_str())
            .bind(now.0)
            .bind(&fence.owner)
            .bind(crate::redact::json(&details).to_string())
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if r.rows_affected() != 1 {
                let row = tx.intent(&fence.key).await?;
                return Err(StoreError::Fenced {
                    actual: row.intent.state,
                    held: fence.generation,
                    current_generation: row.intent.generation,
                });
            }
            Ok(())
        }).await
    }

    /// Settle an attempt. Published and indeterminate need the intent authorized under this fence; failed is
    /// also accepted from the claim holder before authorization (nothing can have been sent then). A stale
    /// generation, epoch or attempt is rejected with [`StoreError::Fenced`].
    pub async fn settle(
        &self,
        fence: &Fence,
        outcome: &Settlement,
        now: Timestamp,
    ) -> Result<Status, StoreError> {
        let (event, to, reason, details, platform_id, permalink) = match outcome {
            Settlement::Published {
                platform_id,
                permalink,
                verdict,
            } => {
                if platform_id.is_none() && permalink.is_none() {
                    return Err(StoreError::Invalid(
                        "published needs a platform id or a permalink".into(),
                    ));
                }
                (
                    EventKind::Published,
                    Status::Published,
                    None,
                    verdict.clone(),
                    platform_id.clone(),
                    permalink.clone(),
                )
            }
            Settlement::Failed { proof } => (
                EventKind::Failed,
                Status::Failed,
                None,
                proof.clone(),
                None,
                None,
            ),
            Settlement::Indeterminate { reason, details } => (
                EventKind::Indeterminate,
                Status::Indeterminate,
                Some(reason.clone()),
                details.clone(),
                None,
                None,
            ),
        };
        self.write(async |tx| {
            let row = tx.intent(&fence.key).await?;
            let from = row.intent.state;
            let stale = StoreError::Fenced {
                actual: from,
                held: fence.generation,
                current_generation: row.intent.generation,
            };
            if from.next(event).is_err() {
                return Err(stale);
            }
            // The guard: the state we read, this attempt's fence, the store's epoch, and (before authorization)
            // the claim still held by this worker.
            let r = sqlx::query(
                "UPDATE intents SET state = $5, lease_owner = NULL, lease_expires_at = NULL, \
                 platform_id = COALESCE($6, platform_id), permalink = COALESCE($7, permalink), updated_at = $8 \
                 WHERE id = $1 AND state = $9 AND generation = $2 AND epoch = $3 AND current_attempt = $4 \
                 AND epoch = (SELECT m.epoch FROM store_meta m WHERE m.id = 1) \
                 AND (state <> 'pending' OR lease_owner = $10)",
            )
            .bind(row.id)
            .bind(fence.generation)
            .bind(fence.epoch)
            .bind(fence.attempt.as_str())
            .bind(to.label())
            .bind(&platform_id)
            .bind(permalink.as_deref().map(crate::redact::text))
            .bind(now.0)
            .bind(from.label())
            .bind(&fence.owner)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if r.rows_affected() != 1 {
                return Err(stale);
            }
            if to == Status::Failed {
                // Proven not sent: the text did not go out, so it does not hold the duplicate window.
                sqlx::query("DELETE FROM text_claims WHERE intent_id = $1")
                    .bind(row.id)
                    .execute(tx.conn())
                    .await
                    .map_err(map_db)?;
            }
            let mut d = details.clone();
            if let (Some(obj), true) = (
                d.as_object_mut(),
                platform_id.is_some() || permalink.is_some(),
            ) {
                obj.insert("platform_id".into(), json!(platform_id));
                obj.insert("permalink".into(), json!(permalink));
            }
            tx.append(NewEvent {
                intent_id: row.id,
                at: now,
                kind: event,
                from: Some(from),
                to,
                actor: &fence.owner,
                reason: reason.as_deref(),
                details: &d,
                attempt: Some(fence.attempt.as_str()),
                generation: Some(fence.generation),
            })
            .await?;
            // Crash test: the UPDATE and its event are written but not committed.
            crate::failpoint::hit(crate::failpoint::FailPoint::DuringSettle);
            Ok(to)
        }).await
    }

    /// One sweeper pass: authorized intents whose dispatch lease expired become indeterminate (never pending);
    /// expired pre-authorization claims are released. Safe to run from many processes: each row moves by one
    /// guarded statement, so exactly one sweeper records each move.
    pub async fn sweep(&self, actor: &str, now: Timestamp) -> Result<SweepReport, StoreError> {
        let due: Vec<SweepCandidate> = sqlx::query_as::<_, SweepRow>(
            "SELECT delivery_key, generation, state, current_attempt, lease_owner, reconcile_count \
             FROM intents WHERE (state IN ('authorized', 'pending') AND lease_expires_at IS NOT NULL \
             AND lease_expires_at <= $1) OR (state = 'indeterminate' \
             AND lookup_expires_at IS NOT NULL AND lookup_expires_at <= $1) ORDER BY id",
        )
        .bind(now.0)
        .fetch_all(self.pool())
        .await
        .map_err(map_row)?
        .into_iter()
        .map(SweepCandidate::from)
        .collect();
        let mut report = SweepReport::default();
        for c in due {
            let moved = self.write(async |tx| {
                let sql = match c.kind {
                    SweepKind::DispatchExpired => {
                        "UPDATE intents SET state = 'indeterminate', lease_owner = NULL, lease_expires_at = NULL, \
                         updated_at = $3 WHERE delivery_key = $1 AND state = 'authorized' AND generation = $2 \
                         AND lease_expires_at <= $3 RETURNING id"
                    }
                    SweepKind::ClaimExpired => {
                        "UPDATE intents SET lease_owner = NULL, lease_expires_at = NULL, updated_at = $3 \
                         WHERE delivery_key = $1 AND state = 'pending' AND generation = $2 \
                         AND lease_expires_at <= $3 RETURNING id"
                    }
                    SweepKind::LookupInterrupted => {
                        "UPDATE intents SET state = 'parked', lookup_expires_at = NULL, updated_at = $3 \
                         WHERE delivery_key = $1 AND state = 'indeterminate' AND reconcile_count = $2 \
                         AND lookup_expires_at <= $3 RETURNING id"
                    }
                };
                let id: Option<i64> = sqlx::query_scalar(sql)
                    .bind(&c.key)
                    .bind(c.fence)
                    .bind(now.0)
                    .fetch_optional(tx.conn())
                    .await
                    .map_err(map_db)?;
                let Some(id) = id else { return Ok(false) };
                let (event, from, to, why, details, generation) = match c.kind {
                    SweepKind::DispatchExpired => (
                        EventKind::LeaseExpired,
                        Status::Authorized,
                        Status::Indeterminate,
                        "dispatch lease expired with no outcome: the worker may have sent",
                        json!({ "stale_owner": c.holder }),
                        Some(c.fence),
                    ),
                    SweepKind::ClaimExpired => (
                        EventKind::ClaimReleased,
                        Status::Pending,
                        Status::Pending,
                        "pre-authorization claim expired: nothing was sent",
                        json!({ "stale_owner": c.holder }),
                        Some(c.fence),
                    ),
                    SweepKind::LookupInterrupted => (
                        EventKind::Parked,
                        Status::Indeterminate,
                        Status::Parked,
                        "the reconcile lookup was interrupted before it recorded what it saw: the \
                         automatic lookup is spent, a person decides",
                        json!({ "lookup": c.fence }),
                        None,
                    ),
                };
                transition(from, event, "sweep")?;
                tx.append(NewEvent {
                    intent_id: id,
                    at: now,
                    kind: event,
                    from: Some(from),
                    to,
                    actor,
                    reason: Some(why),
                    details: &details,
                    attempt: c.attempt.as_deref(),
                    generation,
                })
                .await?;
                Ok(true)
            }).await?;
            if moved {
                let k =
                    DeliveryKey::parse(&c.key).ok_or_else(|| StoreError::Decode(c.key.clone()))?;
                match c.kind {
                    SweepKind::DispatchExpired => report.made_indeterminate.push(k),
                    SweepKind::ClaimExpired => report.claims_released.push(k),
                    SweepKind::LookupInterrupted => report.lookups_interrupted.push(k),
                }
            }
        }
        Ok(report)
    }

    /// Re-open a failed intent: failed -> pending. Creates no attempt; the next `begin` mints one.
    pub async fn retry(
        &self,
        key: &DeliveryKey,
        actor: &str,
        now: Timestamp,
    ) -> Result<Intent, StoreError> {
        self.simple_transition(
            key,
            EventKind::Retried,
            "retry",
            actor,
            None,
            json!({}),
            now,
        )
        .await
    }

    /// Park an intent for a person: from pending, failed or indeterminate. An authorized intent cannot be parked
    /// while its worker may be mid-flight: it must settle, or expire and be swept to indeterminate, first.
    pub async fn park(
        &self,
        key: &DeliveryKey,
        actor: &str,
        reason: &str,
        now: Timestamp,
    ) -> Result<Intent, StoreError> {
        self.simple_transition(
            key,
            EventKind::Parked,
            "park",
            actor,
            Some(reason),
            json!({}),
            now,
        )
        .await
    }

    /// A person confirms a parked intent as published, with the permalink they found.
    pub async fn resolve(
        &self,
        key: &DeliveryKey,
        actor: &str,
        permalink: &str,
        platform_id: Option<&str>,
        now: Timestamp,
    ) -> Result<Intent, StoreError> {
        if permalink.trim().is_empty() {
            return Err(StoreError::Invalid(
                "resolve needs the permalink of the post".into(),
            ));
        }
        let details = json!({ "permalink": permalink, "platform_id": platform_id });
        self.write(async |tx| {
            let row = tx.intent(key).await?;
            let to = transition(row.intent.state, EventKind::Resolved, "resolve")?;
            let r = sqlx::query(
                "UPDATE intents SET state = $2, permalink = $3, platform_id = COALESCE($4, platform_id), \
                 updated_at = $5 WHERE id = $1 AND state = 'parked'",
            )
            .bind(row.id)
            .bind(to.label())
            .bind(crate::redact::text(permalink))
            .bind(platform_id)
            .bind(now.0)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if r.rows_affected() != 1 {
                return Err(StoreError::WrongState {
                    operation: "resolve",
                    actual: row.intent.state,
                });
            }
            tx.append(NewEvent {
                intent_id: row.id,
                at: now,
                kind: EventKind::Resolved,
                from: Some(row.intent.state),
                to,
                actor,
                reason: None,
                details: &details,
                attempt: None,
                generation: None,
            })
            .await?;
            Ok(tx.intent(key).await?.intent)
        }).await
    }

    /// Look-before-write found the post already on the platform: pending -> published without pressing
    /// anything. Refused while someone holds a live claim (they are the executor).
    pub async fn record_found_before_write(
        &self,
        key: &DeliveryKey,
        actor: &str,
        platform_id: Option<&str>,
        permalink: Option<&str>,
        evidence: serde_json::Value,
        now: Timestamp,
    ) -> Result<Intent, StoreError> {
        if platform_id.is_none() && permalink.is_none() {
            return Err(StoreError::Invalid(
                "found-before-write needs a platform id or a permalink".into(),
            ));
        }
        self.write(async |tx| {
            let row = tx.intent(key).await?;
            let to = transition(
                row.intent.state,
                EventKind::FoundBeforeWrite,
                "found-before-write",
            )?;
            let r = sqlx::query(
                "UPDATE intents SET state = $2, platform_id = $3, permalink = $4, updated_at = $5 \
                 WHERE id = $1 AND state = 'pending' AND (lease_expires_at IS NULL OR lease_expires_at <= $5)",
            )
            .bind(row.id)
            .bind(to.label())
            .bind(platform_id)
            .bind(permalink.map(crate::redact::text))
            .bind(now.0)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if r.rows_affected() != 1 {
                return Err(
                    match (&row.intent.lease_owner, row.intent.lease_expires_at) {
                        (Some(o), Some(t)) if row.intent.state == Status::Pending => {
                            StoreError::LeaseHeld {
                                owner: o.clone(),
                                expires_at: t,
                            }
                        }
                        _ => StoreError::WrongState {
                            operation: "found-before-write",
                            actual: row.intent.state,
                        },
                    },
                );
            }
            tx.append(NewEvent {
                intent_id: row.id,
                at: now,
                kind: EventKind::FoundBeforeWrite,
                from: Some(row.intent.state),
                to,
                actor,
                reason: Some("the post was already on the platform; nothing was pressed"),
                details: &evidence,
                attempt: None,
                generation: None,
            })
            .await?;
            Ok(tx.intent(key).await?.intent)
        }).await
    }

    /// Record, before it runs, that a reconcile lookup is about to run. The automatic lookup happens at most
    /// once per intent (indeterminate, none recorded yet); `again` is a person asking for one more, on an
    /// indeterminate or parked intent, recorded as their action.
    pub async fn start_reconcile(
        &self,
        key: &DeliveryKey,
        actor: &str,
        again: bool,
        now: Timestamp,
    ) -> Result<ReconcileTicket, StoreError> {
        self.write(async |tx| {
            let row = tx.intent(key).await?;
            transition(row.intent.state, EventKind::ReconcileStarted, "reconcile")?;
            let r: Option<i64> = sqlx::query_scalar(
                "UPDATE intents SET reconcile_count = reconcile_count + 1, updated_at = $3, \
                 lookup_expires_at = CASE WHEN state = 'indeterminate' THEN $4 ELSE NULL END \
                 WHERE id = $1 AND ((state = 'indeterminate' AND reconcile_count = 0) \
                 OR ($2 = 1 AND state IN ('indeterminate', 'parked'))) RETURNING reconcile_count",
            )
            .bind(row.id)
            .bind(if again { 1_i64 } else { 0 })
            .bind(now.0)
            .bind(now.0.saturating_add(self.policy().lookup_lease_ms))
            .fetch_optional(tx.conn())
            .await
            .map_err(map_db)?;
            let Some(number) = r else {
                return Err(if row.intent.state == Status::Indeterminate {
                    StoreError::ReconcileSpent(row.intent.reconcile_count)
                } else {
                    StoreError::WrongState {
                        operation: "reconcile",
                        actual: row.intent.state,
                    }
                });
            };
            tx.append(NewEvent {
                intent_id: row.id,
                at: now,
                kind: EventKind::ReconcileStarted,
                from: Some(row.intent.state),
                to: row.intent.state,
                actor,
                reason: if again {
                    Some("requested by a person")
                } else {
                    Some("automatic lookup")
                },
                details: &json!({ "number": number, "again": again }),
                attempt: None,
                generation: None,
            })
            .await?;
            Ok(ReconcileTicket {
                key: key.clone(),
                number,
                actor: actor.to_string(),
            })
        })
        .await
    }

    /// Record what a reconcile lookup saw. Found: published, with the platform id and permalink bound to this
    /// intent. Not found or unavailable: proves nothing; the intent stays indeterminate or is parked, by policy.
    pub async fn record_reconcile(
        &self,
        ticket: &ReconcileTicket,
        outcome: &ReconcileOutcome,
        policy: NotFoundPolicy,
        now: Timestamp,
    ) -> Result<Status, StoreError> {
        self.write(async |tx| {
            let row = tx.intent(&ticket.key).await?;
            let from = row.intent.state;
            if row.intent.reconcile_count != ticket.number {
                return Err(StoreError::Fenced {
                    actual: from,
                    held: ticket.number,
                    current_generation: row.intent.reconcile_count,
                });
            }
            let (to, platform_id, permalink, details, event_kinds): (
                Status,
                Option<String>,
                Option<String>,
                serde_json::Value,
                Vec<EventKind>,
            ) = match outcome {
                ReconcileOutcome::Found {
                    platform_id,
                    permalink,
                    evidence,
                } => {
                    if platform_id.is_none() && permalink.is_none() {
                        return Err(StoreError::Invalid(
                            "a found post needs an id or a permalink".into(),
                        ));
                    }
                    let to = transition(from, EventKind::ReconcileFound, "record reconcile")?;
                    (
                        to,
                        platform_id.clone(),
                        permalink.clone(),
                        json!({ "number": ticket.number, "platform_id": platform_id, "permalink": permalink, "evidence": evidence }),
                        vec![EventKind::ReconcileFound],
                    )
                }
                ReconcileOutcome::NotFound { evidence } => {
                    let d = json!({ "number": ticket.number, "result": "not_found", "evidence": evidence });
                    not_found_target(from, policy, d)?
                }
                ReconcileOutcome::Unavailable { error } => {
                    let d =
                        json!({ "number": ticket.number, "result": "unavailable", "error": error });
                    not_found_target(from, policy, d)?
                }
            };
            let r = sqlx::query(
                "UPDATE intents SET state = $3, platform_id = COALESCE($4, platform_id), \
                 permalink = COALESCE($5, permalink), updated_at = $6, lookup_expires_at = NULL \
                 WHERE id = $1 AND state = $2 AND reconcile_count = $7",
            )
            .bind(row.id)
            .bind(from.label())
            .bind(to.label())
            .bind(&platform_id)
            .bind(permalink.as_deref().map(crate::redact::text))
            .bind(now.0)
            .bind(ticket.number)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if r.rows_affected() != 1 {
                return Err(StoreError::WrongState {
                    operation: "record reconcile",
                    actual: from,
                });
            }
            let mut state = from;
            for kind in event_kinds {
                let next = transition(state, kind, "record reconcile")?;
                let reason = match kind {
                    EventKind::Parked => Some("reconcile did not find the post; a person decides"),
                    _ => None,
                };
                tx.append(NewEvent {
                    intent_id: row.id,
                    at: now,
                    kind,
                    from: Some(state),
                    to: next,
                    actor: &ticket.actor,
                    reason,
                    details: &details,
                    attempt: None,
                    generation: None,
                })
                .await?;
                state = next;
            }
            Ok(to)
        }).await
    }

    /// A person knowingly authorizes another copy of a consumed intent: a NEW intent whose key includes the
    /// authorization record (who, why, which consumed key). The old intent stays as it is (an event notes the
    /// redelivery). A consumed intent has at most one redelivery: asking again (the same command, or another
    /// person with another reason) returns the existing one with `created: false`. To send yet another copy,
    /// redeliver the redelivery once it is consumed.
    pub async fn redeliver(
        &self,
        key: &DeliveryKey,
        by: &str,
        reason: &str,
        now: Timestamp,
    ) -> Result<Created, StoreError> {
        if by.trim().is_empty() || reason.trim().is_empty() {
            return Err(StoreError::Invalid(
                "a redelivery needs who authorizes it (--by) and why (--reason)".into(),
            ));
        }
        let old = self.intent(key).await?;
        match old.state {
            Status::Published | Status::Indeterminate | Status::Parked => {}
            Status::Failed => {
                return Err(StoreError::WrongState {
                    operation: "redeliver (a failed intent is retried, not redelivered)",
                    actual: old.state,
                });
            }
            Status::Pending | Status::Authorized => {
                return Err(StoreError::WrongState {
                    operation: "redeliver (still in flight)",
                    actual: old.state,
                });
            }
        }
        // One redelivery per consumed intent: whoever asks next (the same person again, or another reviewer
        // with another reason) gets the one that exists. The database refuses a second one too, for a race.
        if let Some(open) = self.redelivery_of(key).await? {
            return Ok(Created {
                intent: open,
                created: false,
            });
        }
        let new_key = DeliveryKey::for_redelivery(key, by, reason);
        let record =
            json!({ "by": by, "reason": reason, "consumed_key": key.as_str(), "at": now.0 });
        let new = NewIntent {
            account: old.account.clone(),
            action: old.action,
            target: old.target.clone(),
            request: old.request.clone(),
            source_ref: old.source_ref.clone(),
        };
        match self
            .insert_intent(&new, &new_key, Some((key, record)), by, Some(reason), now)
            .await
        {
            Err(StoreError::Refused(AuthorizeRefusal::Conflict)) => {
                let open = self.redelivery_of(key).await?.ok_or_else(|| {
                    StoreError::Decode(format!(
                        "a redelivery of {key} was refused as a second one, but none is stored"
                    ))
                })?;
                Ok(Created {
                    intent: open,
                    created: false,
                })
            }
            other => other,
        }
    }

    /// Append a note from a person (for example "keep parked") without changing the state.
    pub async fn note(
        &self,
        key: &DeliveryKey,
        kind: EventKind,
        actor: &str,
        reason: &str,
        details: serde_json::Value,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        if !matches!(
            kind,
            EventKind::Note | EventKind::Evidence | EventKind::SideEffectAlarm
        ) {
            return Err(StoreError::Invalid(format!("{kind} is not a note")));
        }
        self.write(async |tx| {
            let row = tx.intent(key).await?;
            let to = transition(row.intent.state, kind, "note")?;
            tx.append(NewEvent {
                intent_id: row.id,
                at: now,
                kind,
                from: Some(row.intent.state),
                to,
                actor,
                reason: Some(reason),
                details: &details,
                attempt: None,
                generation: None,
            })
            .await?;
            Ok(())
        })
        .await
    }

    /// A transition with no data of its own (retry, park): read the state, ask the table, run the guarded update.
    #[allow(clippy::too_many_arguments)]
    async fn simple_transition(
        &self,
        key: &DeliveryKey,
        event: EventKind,
        operation: &'static str,
        actor: &str,
        reason: Option<&str>,
        details: serde_json::Value,
        now: Timestamp,
    ) -> Result<Intent, StoreError> {
        self.write(async |tx| {
            let row = tx.intent(key).await?;
            let from = row.intent.state;
            let to = transition(from, event, operation)?;
            // Guard on the state we read: if anything moved it since, nothing changes.
            let r = sqlx::query(
                "UPDATE intents SET state = $3, lease_owner = NULL, lease_expires_at = NULL, updated_at = $4 \
                 WHERE id = $1 AND state = $2",
            )
            .bind(row.id)
            .bind(from.label())
            .bind(to.label())
            .bind(now.0)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if r.rows_affected() != 1 {
                return Err(StoreError::WrongState {
                    operation,
                    actual: from,
                });
            }
            tx.append(NewEvent {
                intent_id: row.id,
                at: now,
                kind: event,
                from: Some(from),
                to,
                actor,
                reason,
                details: &details,
                attempt: row.intent
                    .current_attempt
                    .as_deref()
                    .filter(|_| event == EventKind::Parked),
                generation: None,
            })
            .await?;
            Ok(tx.intent(key).await?.intent)
        }).await
    }
}

/// An intent the sweeper looks at: key, generation, state, current attempt, lease holder.
#[derive(sqlx::FromRow)]
struct SweepRow {
    delivery_key: String,
    generation: i64,
    state: String,
    current_attempt: Option<String>,
    lease_owner: Option<String>,
    reconcile_count: i64,
}

impl From<SweepRow> for SweepCandidate {
    fn from(r: SweepRow) -> Self {
        let kind = match r.state.as_str() {
            "authorized" => SweepKind::DispatchExpired,
            "pending" => SweepKind::ClaimExpired,
            _ => SweepKind::LookupInterrupted,
        };
        SweepCandidate {
            key: r.delivery_key,
            // The fence: the generation for leases, the lookup number for a lookup.
            fence: if kind == SweepKind::LookupInterrupted {
                r.reconcile_count
            } else {
                r.generation
            },
            kind,
            attempt: r.current_attempt,
            holder: r.lease_owner,
        }
    }
}

/// What the sweeper may move, and the value that fences its guarded UPDATE.
struct SweepCandidate {
    key: String,
    kind: SweepKind,
    fence: i64,
    attempt: Option<String>,
    holder: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SweepKind {
    /// authorized, dispatch lease expired -> indeterminate.
    DispatchExpired,
    /// pending, claim expired -> claim released.
    ClaimExpired,
    /// indeterminate, lookup lease expired with nothing recorded -> parked.
    LookupInterrupted,
}

/// Where a reconcile that did not find the post leaves the intent, and which events record it.
#[allow(clippy::type_complexity)]
fn not_found_target(
    from: Status,
    policy: NotFoundPolicy,
    details: serde_json::Value,
) -> Result<
    (
        Status,
        Option<String>,
        Option<String>,
        serde_json::Value,
        Vec<EventKind>,
    ),
    StoreError,
> {
    transition(from, EventKind::ReconcileNotFound, "record reconcile")?;
    match (from, policy) {
        (Status::Indeterminate, NotFoundPolicy::Park) => Ok((
            Status::Parked,
            None,
            None,
            details,
            vec![EventKind::ReconcileNotFound, EventKind::Parked],
        )),
        _ => Ok((
            from,
            None,
            None,
            details,
            vec![EventKind::ReconcileNotFound],
        )),
    }
}
