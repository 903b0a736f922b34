//! `begin`, the executor election: claim a pending intent (owner, lease, a generation from the sequence) and
//! mint exactly one attempt, or park it at the attempt cap.
use serde_json::json;
use sqlx::any::{AnyArguments, AnyRow};
use sqlx::query::Query;
use sqlx::{Any, Row};

use crate::store::error::{AuthorizeRefusal, StoreError};
use crate::store::model::*;
use crate::store::state::{EventKind, Status};
use crate::store::{NewEvent, Store, map_db};

use crate::identity::{AttemptToken, DeliveryKey};

impl Store {
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
        // First try: the common case (a pending row nobody has claimed) in one statement on PostgreSQL, in one
        // call on SQLite (src/store/one_call.rs). Anything else (a live or expired claim, the attempt cap, a
        // revoked or unknown account, no such key) is left to the transaction below, which decides it and
        // says why.
        let token = AttemptToken::mint();
        let one = OneBegin {
            key,
            owner,
            contract_hash,
            token: &token,
            now,
            expires: now.plus_ms(claim_lease_ms).0,
        };
        if self.dialect == crate::store::Dialect::Sqlite
            && let Some(claim) = self.begin_in_one_call(&one).await?
        {
            return Ok(Begun::Claimed(claim));
        }
        if self.dialect == crate::store::Dialect::Postgres {
            match self.begin_in_one_statement(&one).await {
                Ok(Some(claim)) => return Ok(Begun::Claimed(claim)),
                Ok(None) => {}
                // The answer was lost (the connection broke): the claim may have committed. Read it back
                // before deciding, or this caller would hold a claim it does not know of until its lease
                // runs out, and the post would wait for that.
                Err(e) if e.outcome_unknown() => {
                    tracing::warn!(key = %key, error = %e, "begin's outcome unknown; reading it back");
                    match self
                        .begin_after_doubt(key, owner, contract_hash, &token)
                        .await
                    {
                        Ok(Some(claim)) => return Ok(Begun::Claimed(claim)),
                        // Not committed: the transaction below decides afresh.
                        Ok(None) => {}
                        Err(_) => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            }
        }
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
            Ok(Begun::Claimed(claim_of(
                key,
                token,
                owner,
                contract_hash,
                Granted {
                    generation,
                    epoch,
                    lease_expires_at: expires,
                    ordinal,
                    credential_version,
                },
            )))
        }).await
    }
}

impl Store {
    /// PostgreSQL: `begin` for a pending intent with no claim on it, in one autocommit statement: lock the
    /// row, read the account's credential version (not revoked), issue the generation, read the epoch, the
    /// guarded claim (the transaction's guard, plus "nobody holds or held a claim": a takeover appends a
    /// release event, which the transaction path writes), the attempt row and the `begun` event. `None`
    /// when its guard matched nothing: nothing was written (a generation may have been issued and is never
    /// used; generations need only be unique and increasing).
    async fn begin_in_one_statement(
        &self,
        one: &OneBegin<'_>,
    ) -> Result<Option<Claim>, StoreError> {
        // The guard is `o`'s: its row lock waits for any transaction changing the row, and then checks the
        // row as that transaction left it (READ COMMITTED re-checks a locked row's WHERE), so two begins never
        // both find it unclaimed. The update then changes exactly the row `o` locked, at the generation it read.
        let row = one
            .bound(
                "/* oncepost: begin */ WITH o AS (\
                 SELECT id, generation, account FROM intents WHERE delivery_key = $1 AND state = 'pending' \
                 AND lease_owner IS NULL AND attempt_count < max_attempts \
                 AND (lease_expires_at IS NULL OR lease_expires_at <= $4) FOR UPDATE), \
             a AS (SELECT credential_version FROM accounts WHERE name = (SELECT account FROM o) AND revoked = 0), \
             g AS (SELECT nextval('fencing_generation') AS generation FROM o, a), \
             m AS (SELECT epoch FROM store_meta WHERE id = 1), \
             u AS (UPDATE intents i SET generation = g.generation, epoch = m.epoch, lease_owner = $2, \
                 lease_expires_at = $5, current_attempt = $3, attempt_count = i.attempt_count + 1, \
                 contract_hash = $6, credential_version = a.credential_version, updated_at = $4 \
                 FROM o, a, g, m WHERE i.id = o.id AND i.generation = o.generation \
                 RETURNING i.id, i.account, i.action_kind, i.attempt_count, i.generation, i.epoch, \
                 i.credential_version), \
             t AS (INSERT INTO attempts (token, intent_id, ordinal, account, action_kind, credential_version, \
                 contract_hash, generation, epoch, owner, created_at) \
                 SELECT $3, u.id, u.attempt_count, u.account, u.action_kind, u.credential_version, $6, \
                 u.generation, u.epoch, $2, $4 FROM u), \
             e AS (INSERT INTO events (intent_id, at, kind, from_state, to_state, actor, reason, details, \
                 attempt_token, generation) \
                 SELECT u.id, $4, 'begun', 'pending', 'pending', $2, NULL, \
                 ($7::jsonb || jsonb_build_object('ordinal', u.attempt_count, 'epoch', u.epoch, \
                 'credential_version', u.credential_version))::text, $3, u.generation FROM u) \
             SELECT attempt_count, generation, epoch, credential_version FROM u",
            )
            .fetch_optional(&self.pool)
            .await
            .map_err(map_db)?;
        let Some(row) = row else {
            return Ok(None);
        };
        self.commits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        one.claim(&row).map(Some)
    }

    /// SQLite: [`Store::begin_in_one_statement`] in one call (src/store/one_call.rs), in one `BEGIN
    /// IMMEDIATE`: the generation is issued only when the row is claimable (pending, nobody holds or held a
    /// claim, under the attempt cap, the account not revoked), and the guarded claim takes it under the same
    /// guard (nothing writes between the two, so both match or neither: a `changes() = 1` on the claim could
    /// never decide, and its mutant lived); then the attempt row and the `begun` event of this attempt (its
    /// token is minted here). `None` when the guard matched nothing: nothing was written.
    async fn begin_in_one_call(&self, one: &OneBegin<'_>) -> Result<Option<Claim>, StoreError> {
        let claimable = "i.delivery_key = $1 AND i.state = 'pending' AND i.lease_owner IS NULL \
                         AND i.attempt_count < i.max_attempts \
                         AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= $4) \
                         AND EXISTS (SELECT 1 FROM accounts a WHERE a.name = i.account AND a.revoked = 0)";
        let text = format!(
            "/* oncepost: begin */ BEGIN IMMEDIATE; \
             UPDATE fencing_counter SET value = value + 1 WHERE id = 1 \
                 AND EXISTS (SELECT 1 FROM intents i WHERE {claimable}); \
             UPDATE intents AS i SET generation = (SELECT value FROM fencing_counter WHERE id = 1), \
                 epoch = (SELECT epoch FROM store_meta WHERE id = 1), lease_owner = $2, lease_expires_at = $5, \
                 current_attempt = $3, attempt_count = attempt_count + 1, contract_hash = $6, \
                 credential_version = (SELECT a.credential_version FROM accounts a WHERE a.name = i.account), \
                 updated_at = $4 \
                 WHERE {claimable} \
                 RETURNING attempt_count, generation, epoch, credential_version; \
             INSERT INTO attempts (token, intent_id, ordinal, account, action_kind, credential_version, \
                 contract_hash, generation, epoch, owner, created_at) \
                 SELECT $3, id, attempt_count, account, action_kind, credential_version, $6, generation, epoch, \
                 $2, $4 FROM intents WHERE delivery_key = $1 AND current_attempt = $3; \
             INSERT INTO events (intent_id, at, kind, from_state, to_state, actor, reason, details, \
                 attempt_token, generation) \
                 SELECT id, $4, 'begun', 'pending', 'pending', $2, NULL, \
                 json_patch($7, json_object('ordinal', attempt_count, 'epoch', epoch, \
                 'credential_version', credential_version)), $3, generation \
                 FROM intents WHERE delivery_key = $1 AND current_attempt = $3; \
             COMMIT"
        );
        let rows = self.sqlite_one_call(one.bound(&text), map_db).await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        self.commits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        one.claim(row).map(Some)
    }

    /// After a one-statement begin whose answer was lost: what committed (read under the row lock,
    /// `intent_after_doubt`). `Some` only when the row carries this very attempt (its token is minted here, so
    /// no other begin can have written it), still pending under this owner's live claim.
    async fn begin_after_doubt(
        &self,
        key: &DeliveryKey,
        owner: &str,
        contract_hash: &str,
        token: &AttemptToken,
    ) -> Result<Option<Claim>, StoreError> {
        let row = self.intent_after_doubt(key).await?;
        let it = &row.intent;
        let ours = it.state == Status::Pending
            && it.current_attempt.as_deref() == Some(token.as_str())
            && it.lease_owner.as_deref() == Some(owner)
            && it.lease_expires_at.is_some_and(|t| t > Timestamp::now().0);
        Ok(match (ours, it.lease_expires_at, row.credential_version) {
            (true, Some(until), Some(credential_version)) => Some(claim_of(
                key,
                token.clone(),
                owner,
                contract_hash,
                Granted {
                    generation: it.generation,
                    epoch: it.epoch,
                    lease_expires_at: until,
                    ordinal: it.attempt_count,
                    credential_version,
                },
            )),
            _ => None,
        })
    }
}

/// What a one-shot `begin` asks for (both backends): the intent, who asks, with which contract, the attempt's
/// token (minted before the statement, so a lost answer can be recognised) and the claim's lease.
struct OneBegin<'a> {
    key: &'a DeliveryKey,
    owner: &'a str,
    contract_hash: &'a str,
    token: &'a AttemptToken,
    now: Timestamp,
    expires: i64,
}

impl<'a> OneBegin<'a> {
    /// `text` with its binds: $1 key, $2 owner, $3 token, $4 now, $5 the claim's end, $6 contract, $7 what
    /// the `begun` event's details carry that is known here (through the redaction layer like every event;
    /// the row's numbers, ordinal, epoch and credential version, are merged in by the statement).
    fn bound<'q>(&self, text: &'q str) -> Query<'q, Any, AnyArguments<'q>>
    where
        'a: 'q,
    {
        let known = crate::redact::json(
            &json!({ "lease_expires_at": self.expires, "contract_hash": self.contract_hash }),
        );
        sqlx::query(text)
            .bind(self.key.as_str())
            .bind(self.owner)
            .bind(self.token.as_str())
            .bind(self.now.0)
            .bind(self.expires)
            .bind(self.contract_hash)
            .bind(known.to_string())
    }

    /// The claim granted, from the row the statement returned: attempt count (the ordinal), generation,
    /// epoch, credential version.
    fn claim(&self, row: &AnyRow) -> Result<Claim, StoreError> {
        let got = |i: usize| row.try_get::<i64, _>(i).map_err(map_db);
        Ok(claim_of(
            self.key,
            self.token.clone(),
            self.owner,
            self.contract_hash,
            Granted {
                ordinal: got(0)?,
                generation: got(1)?,
                epoch: got(2)?,
                lease_expires_at: self.expires,
                credential_version: got(3)?,
            },
        ))
    }
}

/// What a claim was granted, as the store wrote it.
struct Granted {
    generation: i64,
    epoch: i64,
    lease_expires_at: i64,
    ordinal: i64,
    credential_version: i64,
}

/// The claim a worker holds after `begin`, from what it asked and what it was granted.
fn claim_of(
    key: &DeliveryKey,
    token: AttemptToken,
    owner: &str,
    contract_hash: &str,
    g: Granted,
) -> Claim {
    Claim {
        fence: Fence {
            key: key.clone(),
            attempt: token,
            generation: g.generation,
            epoch: g.epoch,
            owner: owner.to_string(),
        },
        lease_expires_at: g.lease_expires_at,
        ordinal: g.ordinal,
        contract_hash: contract_hash.to_string(),
        credential_version: g.credential_version,
        account_lease: None,
    }
}
