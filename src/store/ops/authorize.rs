//! `authorize_dispatch`, the last checkpoint before any byte: every pre-flight condition re-checked by guarded
//! statements that commit together (a whole transaction in one call on SQLite, one call of
//! `oncepost_authorize` on PostgreSQL), and, after a refusal, a read that says which condition failed.
use serde_json::json;
use sqlx::Any;
use sqlx::any::AnyArguments;
use sqlx::query::Query;

use crate::store::error::{AuthorizeRefusal, StoreError};
use crate::store::model::*;
use crate::store::rows::find_intent;
use crate::store::state::Status;
use crate::store::{Store, is_duplicate_text, map_db, map_row};

/// What an authorization whose outcome was unknown turned out to be.
enum Doubt {
    /// It committed, for this claim, with enough of its dispatch lease left to press.
    Committed(DispatchAuthorization),
    /// It did not commit: the intent is still pending under this claim.
    RolledBack,
    /// Anything else (another claim's, settled, swept, or committed with too little lease left).
    Neither,
}

impl Store {
    /// The last checkpoint before any byte: re-check, in one transaction, everything checked before (claim
    /// live and current, epoch, kill switches, credentials, contract, rate interval, duplicate-text window) and
    /// move the intent to `authorized` with a dispatch lease. The returned value is the only way to dispatch.
    ///
    /// A transaction whose outcome is unknown (the connection broke, or the commit's answer was lost) is read
    /// back under the intent's row lock before anything is decided: committed and still this claim's, the
    /// authorization is returned as if the answer had arrived; rolled back, it is tried once more; anything
    /// else is the original error, and nothing may be sent.
    pub async fn authorize_dispatch(
        &self,
        claim: &Claim,
        current_contract_hash: &str,
        now: Timestamp,
    ) -> Result<DispatchAuthorization, StoreError> {
        let (mut tries, mut now) = (0, now);
        loop {
            tries += 1;
            if tries > 1 {
                now = Timestamp::now();
            }
            let err = match self.authorize_once(claim, current_contract_hash, now).await {
                Err(e) if e.outcome_unknown() => e,
                done => return done,
            };
            tracing::warn!(key = %claim.fence.key, error = %err, "authorization's outcome unknown; reading it back");
            match self.authorization_after_doubt(claim).await {
                Ok(Doubt::Committed(auth)) => return Ok(auth),
                Ok(Doubt::RolledBack) if tries < 2 => continue,
                Ok(_) | Err(_) => return Err(err),
            }
        }
    }

    /// After an authorization whose outcome is unknown: what committed (read under the row lock,
    /// `intent_after_doubt`), for this claim.
    async fn authorization_after_doubt(&self, claim: &Claim) -> Result<Doubt, StoreError> {
        let f = &claim.fence;
        let row = self.intent_after_doubt(&f.key).await?;
        let it = &row.intent;
        let this_claim = it.generation == f.generation
            && it.epoch == f.epoch
            && it.current_attempt.as_deref() == Some(f.attempt.as_str());
        let now = Timestamp::now().0;
        Ok(match (it.state, this_claim, it.lease_expires_at) {
            // Committed, and enough of the dispatch lease is left for the press (the normal path presses
            // at once; this one has spent part of the lease finding out).
            (Status::Authorized, true, Some(until))
                if until - now >= self.policy.dispatch_lease_ms / 2 =>
            {
                Doubt::Committed(DispatchAuthorization::new(f.clone(), until))
            }
            (Status::Pending, true, _) => Doubt::RolledBack,
            _ => Doubt::Neither,
        })
    }

    /// One authorization transaction.
    async fn authorize_once(
        &self,
        claim: &Claim,
        current_contract_hash: &str,
        now: Timestamp,
    ) -> Result<DispatchAuthorization, StoreError> {
        let f = &claim.fence;
        let lease_until = now.plus_ms(self.policy.dispatch_lease_ms).0;
        let (lease_holder, lease_fence) = match &claim.account_lease {
            Some(l) => (l.holder.as_str(), l.fence),
            None => ("", -1),
        };
        let jitter_ppm = (uuid::Uuid::new_v4().as_u128() % 1_000_000) as i64;
        let details = json!({ "lease_expires_at": lease_until, "contract_hash": current_contract_hash,
                 "credential_version": claim.credential_version, "epoch": f.epoch });
        let call = AuthorizeBinds {
            claim,
            current_contract_hash,
            now,
            lease_until,
            lease_holder,
            lease_fence,
            jitter_ppm,
            details: &details,
        };
        let outcome = match self.dialect {
            crate::store::Dialect::Postgres => self.authorize_in_one_call(&call).await,
            crate::store::Dialect::Sqlite => self.authorize_in_one_sqlite_call(&call).await,
        };
        match outcome {
            Ok(()) => Ok(DispatchAuthorization::new(f.clone(), lease_until)),
            Err(StoreError::Refused(AuthorizeRefusal::Conflict)) => Err(StoreError::Refused(
                self.why_refused(claim, current_contract_hash, now).await?,
            )),
            Err(e) => Err(e),
        }
    }

    /// SQLite: the guarded statements in one call (src/store/one_call.rs), in the order of PostgreSQL's
    /// `oncepost_authorize` and in one `BEGIN IMMEDIATE` (the single writer serializes them, so no row lock
    /// is needed). After each guard, a `guard_checks` row (migration 0009) stops the text when the guard
    /// matched nothing, so nothing after it runs and the whole transaction is rolled back: no partial
    /// authorization (intent moved, account not) can commit. A refusal is answered as `Conflict`, for
    /// `why_refused` to explain; the duplicate text is refused by the text claims' own trigger (the claim's
    /// insert always finds the intent and its account, so only that error can refuse it: a guard check after
    /// it could never decide, and its mutant lived).
    async fn authorize_in_one_sqlite_call(&self, a: &AuthorizeBinds<'_>) -> Result<(), StoreError> {
        let text = "/* oncepost: authorize */ BEGIN IMMEDIATE; \
             UPDATE intents SET state = 'authorized', lease_expires_at = $5, authorized_at = $4, updated_at = $4 \
                 WHERE delivery_key = $1 AND state = 'pending' AND generation = $2 AND epoch = $3 \
                 AND lease_expires_at > $4 \
                 AND contract_hash = $6 \
                 AND epoch = (SELECT m.epoch FROM store_meta m WHERE m.id = 1) \
                 AND NOT EXISTS (SELECT 1 FROM switches s WHERE s.engaged = 1 AND (s.scope = 'global' \
                     OR (s.scope = 'platform' AND s.name = intents.platform) \
                     OR (s.scope = 'platform' AND s.name = intents.contract_platform) \
                     OR (s.scope = 'account' AND s.name = intents.account))) \
                 AND NOT EXISTS (SELECT 1 FROM account_leases l WHERE l.account = intents.account \
                     AND l.expires_at > $4 AND NOT (l.holder = $7 AND l.fence = $8)); \
             INSERT INTO guard_checks (matched) VALUES (changes()); \
             INSERT INTO guard_checks (matched) SELECT i.source_ref IS NULL OR EXISTS (SELECT 1 FROM claims c \
                 JOIN source_versions v ON v.version_id = c.version_id JOIN sources s ON s.stable_id = v.stable_id \
                 WHERE c.claim_id = i.source_ref AND s.head_version = c.version_id) \
                 FROM intents i WHERE i.delivery_key = $1; \
             UPDATE accounts SET last_dispatch_at = $4, \
                 next_dispatch_at = $4 + min_interval_ms + (jitter_ms * $9) / 1000000 \
                 WHERE name = (SELECT i.account FROM intents i WHERE i.delivery_key = $1) \
                 AND revoked = 0 AND credential_version = $10 \
                 AND (last_dispatch_at IS NULL OR last_dispatch_at + min_interval_ms <= $4) \
                 AND (next_dispatch_at IS NULL OR next_dispatch_at <= $4); \
             INSERT INTO guard_checks (matched) VALUES (changes()); \
             INSERT INTO dispatches (account, intent_id, at) SELECT a.name, i.id, $4 \
                 FROM intents i JOIN accounts a ON a.name = i.account WHERE i.delivery_key = $1 \
                 AND (a.hourly_cap IS NULL OR (SELECT COUNT(*) FROM dispatches d \
                      WHERE d.account = a.name AND d.at > $4 - 3600000) < a.hourly_cap) \
                 AND (a.daily_cap IS NULL OR (SELECT COUNT(*) FROM dispatches d \
                      WHERE d.account = a.name AND d.at > $4 - 86400000) < a.daily_cap); \
             INSERT INTO guard_checks (matched) VALUES (changes()); \
             INSERT INTO guard_checks (matched) SELECT NOT EXISTS (SELECT 1 FROM platform_limits p \
                 WHERE p.platform = COALESCE(i.contract_platform, i.platform) \
                 AND (SELECT COUNT(*) FROM intents x WHERE x.state = 'authorized' \
                      AND COALESCE(x.contract_platform, x.platform) = p.platform) > p.max_in_flight) \
                 FROM intents i WHERE i.delivery_key = $1; \
             INSERT INTO text_claims (intent_id, account, content_hash, claimed_at, window_ms, exempt) \
                 SELECT i.id, i.account, i.content_hash, $4, a.dup_window_ms, \
                        CASE WHEN i.redelivery_of IS NULL THEN 0 ELSE 1 END \
                 FROM intents i JOIN accounts a ON a.name = i.account WHERE i.delivery_key = $1; \
             INSERT INTO events (intent_id, at, kind, from_state, to_state, actor, reason, details, \
                 attempt_token, generation) \
                 SELECT id, $4, 'authorized', 'pending', 'authorized', $11, NULL, $12, $13, $2 \
                 FROM intents WHERE delivery_key = $1; \
             COMMIT";
        self.sqlite_one_call(a.bound(text), refusal_or_error)
            .await?;
        self.commits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
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
        // The epoch first: after a restore a generation can be issued again, and then only the epoch tells
        // the claims apart (a_claim_from_before_a_restore_cannot_authorize_a_reissued_generation).
        let store_epoch = self.epoch().await?;
        if it.epoch != f.epoch || store_epoch != f.epoch {
            return Ok(AuthorizeRefusal::StaleEpoch {
                held: f.epoch,
                current: store_epoch,
            });
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
        if let Some(source) = self.intent_source(&f.key).await?
            && !source.is_fresh()
        {
            return Ok(AuthorizeRefusal::SourceSuperseded {
                source_id: source.stable_id,
                version: source.version.to_string(),
                head: source
                    .head
                    .map_or_else(|| "(none)".to_string(), |h| h.to_string()),
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
        if let Some(next) = acct.next_dispatch_at
            && next > now.0
        {
            return Ok(AuthorizeRefusal::Paced {
                account: acct.name,
                rule: format!(
                    "interval {} ms and jitter up to {} ms",
                    acct.min_interval_ms, acct.jitter_ms
                ),
                until: next,
            });
        }
        for (cap, window, name) in [
            (acct.hourly_cap, 3_600_000, "hourly"),
            (acct.daily_cap, 86_400_000, "daily"),
        ] {
            if let Some(cap) = cap
                && let Some(until) = self.cap_reached_until(&acct.name, cap, window, now).await?
            {
                return Ok(AuthorizeRefusal::Paced {
                    account: acct.name,
                    rule: format!("{name} cap {cap}"),
                    until,
                });
            }
        }
        if let Some(lease) = self.account_lease(&acct.name, now).await?
            && claim.account_lease.as_ref().is_none_or(|mine| {
                (mine.holder.as_str(), mine.fence) != (lease.holder.as_str(), lease.fence)
            })
        {
            return Ok(AuthorizeRefusal::AccountLeased {
                account: acct.name,
                holder: lease.holder,
                expires_at: lease.expires_at,
            });
        }
        let platform = it
            .contract_platform
            .clone()
            .unwrap_or_else(|| it.platform.clone());
        if let Some((in_flight, max)) = self.platform_in_flight(&platform).await?
            && in_flight >= max
        {
            return Ok(AuthorizeRefusal::PlatformBusy {
                platform,
                in_flight,
                max,
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

    /// When a cap of `cap` dispatches per `window_ms` is reached now: the time the oldest of the last `cap`
    /// dispatches leaves the window (None: not reached).
    async fn cap_reached_until(
        &self,
        account: &str,
        cap: i64,
        window_ms: i64,
        now: Timestamp,
    ) -> Result<Option<i64>, StoreError> {
        let recent: Vec<i64> = sqlx::query_scalar(
            "SELECT at FROM dispatches WHERE account = $1 AND at > $2 ORDER BY at DESC LIMIT $3",
        )
        .bind(account)
        .bind(now.0 - window_ms)
        .bind(cap.max(0))
        .fetch_all(self.pool())
        .await
        .map_err(map_row)?;
        if (recent.len() as i64) < cap {
            return Ok(None);
        }
        Ok(Some(
            recent.last().map_or(now.0, |oldest| oldest + window_ms),
        ))
    }

    /// The platform's dispatches in flight and its limit (None: no limit).
    pub async fn platform_in_flight(
        &self,
        platform: &str,
    ) -> Result<Option<(i64, i64)>, StoreError> {
        let max: Option<i64> =
            sqlx::query_scalar("SELECT max_in_flight FROM platform_limits WHERE platform = $1")
                .bind(platform)
                .fetch_optional(self.pool())
                .await
                .map_err(map_row)?;
        let Some(max) = max else {
            return Ok(None);
        };
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM intents WHERE state = 'authorized' \
             AND COALESCE(contract_platform, platform) = $1",
        )
        .bind(platform)
        .fetch_one(self.pool())
        .await
        .map_err(map_row)?;
        Ok(Some((n, max)))
    }
}

/// What an authorization binds.
#[derive(Clone, Copy)]
struct AuthorizeBinds<'a> {
    claim: &'a Claim,
    current_contract_hash: &'a str,
    now: Timestamp,
    lease_until: i64,
    lease_holder: &'a str,
    lease_fence: i64,
    jitter_ppm: i64,
    details: &'a serde_json::Value,
}

impl<'a> AuthorizeBinds<'a> {
    /// `text` with the binds both backends' authorizations take, in `oncepost_authorize`'s order: $1 key, $2
    /// generation, $3 epoch, $4 now, $5 the dispatch lease's end, $6 contract, $7 and $8 the account lease's
    /// holder and fence, $9 jitter, $10 credential version, $11 actor, $12 details, $13 attempt.
    fn bound<'q>(&self, text: &'q str) -> Query<'q, Any, AnyArguments<'q>>
    where
        'a: 'q,
    {
        let f = &self.claim.fence;
        sqlx::query(text)
            .bind(f.key.as_str())
            .bind(f.generation)
            .bind(f.epoch)
            .bind(self.now.0)
            .bind(self.lease_until)
            .bind(self.current_contract_hash)
            .bind(self.lease_holder)
            .bind(self.lease_fence)
            .bind(self.jitter_ppm)
            .bind(self.claim.credential_version)
            .bind(f.owner.as_str())
            // The same redaction as every appended event.
            .bind(crate::redact::json(self.details).to_string())
            .bind(f.attempt.as_str())
    }
}

/// A guard's refusal (or the duplicate-text window's) as the `Conflict` refusal `why_refused` explains;
/// any other error as the store's.
fn refusal_or_error(e: sqlx::Error) -> StoreError {
    if is_guard_refusal(&e) || is_duplicate_text(&e) {
        StoreError::Refused(AuthorizeRefusal::Conflict)
    } else {
        map_db(e)
    }
}

impl Store {
    /// PostgreSQL: the authorization as one call of `oncepost_authorize` (migrations/postgres/0009), one
    /// autocommit statement and one round trip where a transaction of the same guards was four or more. The
    /// function runs the guarded statements of the SQLite transaction above, in the same order; being
    /// VOLATILE, each of them reads a new snapshot, so the caps and the in-flight count are counted after the
    /// account's and the platform's row locks are held (a single statement could not: it reads the snapshot
    /// it started with). A guard that matches nothing raises `OP001`, which rolls the whole call back and is
    /// answered here as a refusal for `why_refused` to explain; a duplicate text raises the constraint's own
    /// error.
    async fn authorize_in_one_call(&self, a: &AuthorizeBinds<'_>) -> Result<(), StoreError> {
        // The call answers the intent's id; that it answered is what counts.
        a.bound(
                "/* oncepost: authorize */ SELECT oncepost_authorize($1, $2, $3, $4, $5, $6, $7, $8, $9, \
                 $10, $11, $12, $13)",
            )
            .fetch_one(&self.pool)
            .await
            .map_err(refusal_or_error)?;
        self.commits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

/// Whether the authorization refused: one of its guards matched nothing (SQLSTATE `OP001` from
/// `oncepost_authorize` on PostgreSQL, `oncepost_guard_refused` from `guard_checks` on SQLite).
fn is_guard_refusal(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db)
        if db.code().as_deref() == Some("OP001") || db.message().contains("oncepost_guard_refused"))
}
