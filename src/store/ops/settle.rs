//! After dispatch: the wire request hash recorded under the authorization's fence, and the attempt's outcome
//! (published, failed, indeterminate), fenced on (epoch, generation, attempt).
use serde_json::json;
use sqlx::Any;
use sqlx::any::AnyArguments;
use sqlx::query::Query;

use crate::store::error::StoreError;
use crate::store::model::*;
use crate::store::state::{EventKind, Status};
use crate::store::{NewEvent, Store, map_db};

impl Store {
    /// Record the wire request hash (and what else is known of the request) on the attempt's history, under
    /// the authorization's fence. It runs as the create request is held, before any byte of it leaves: a
    /// failure here stops the send.
    ///
    /// A record whose outcome is unknown (the connection broke, or the commit's answer was lost) is tried
    /// again over a few seconds (the request waits, inside its dispatch lease): the retry writes the event
    /// only if this attempt has none yet, so a first try that committed is found, not written twice. Without
    /// it a lost answer stopped a post that could be made (nothing sent, `failed`).
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
        super::until_known("request record", &fence.key, |again| {
            self.record_request_sent_once(fence, &details, now, again)
        })
        .await
    }

    /// One try of [`Store::record_request_sent`]; `again` after one whose outcome is unknown.
    async fn record_request_sent_once(
        &self,
        fence: &Fence,
        details: &serde_json::Value,
        now: Timestamp,
        again: bool,
    ) -> Result<(), StoreError> {
        // After an unknown outcome, only if this attempt has no request recorded yet (the first try's commit).
        let not_yet = if again {
            " AND NOT EXISTS (SELECT 1 FROM events e WHERE e.intent_id = intents.id \
             AND e.kind = 'request_sent' AND e.attempt_token = $4)"
        } else {
            ""
        };
        self.write(async |tx| {
            let r = sqlx::query(&format!(
                "/* oncepost: request_sent */ INSERT INTO events (intent_id, at, kind, from_state, to_state, \
                 actor, reason, details, attempt_token, generation) \
                 SELECT id, $5, 'request_sent', 'authorized', 'authorized', $6, NULL, $7, $4, $2 FROM intents \
                 WHERE delivery_key = $1 AND state = 'authorized' AND generation = $2 AND epoch = $3 \
                 AND current_attempt = $4{not_yet}"
            ))
            .bind(fence.key.as_str())
            .bind(fence.generation)
            .bind(fence.epoch)
            .bind(fence.attempt.as_str())
            .bind(now.0)
            .bind(&fence.owner)
            .bind(crate::redact::json(details).to_string())
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if r.rows_affected() == 1 {
                return Ok(());
            }
            let row = tx.intent(&fence.key).await?;
            let this_attempt = row.intent.state == Status::Authorized
                && row.intent.generation == fence.generation
                && row.intent.epoch == fence.epoch
                && row.intent.current_attempt.as_deref() == Some(fence.attempt.as_str());
            // The first try committed: this authorized attempt already has its request recorded.
            if again && this_attempt {
                return Ok(());
            }
            Err(StoreError::Fenced {
                actual: row.intent.state,
                held: fence.generation,
                current_generation: row.intent.generation,
            })
        })
        .await
    }

    /// Settle an attempt. Published and indeterminate need the intent authorized under this fence; failed is
    /// also accepted from the claim holder before authorization (nothing can have been sent then). A stale
    /// generation, epoch or attempt is rejected with [`StoreError::Fenced`].
    ///
    /// A settle whose outcome is unknown (the connection broke, or the commit's answer was lost) is tried
    /// again a few times over a few seconds: the retry finds either the row as it was (and settles it) or the
    /// row already at this settle's state under this very attempt (the first commit landed: nothing more is
    /// written). What the page did is known by then; losing it to a lost answer would leave a sent post for
    /// the sweep to call indeterminate.
    pub async fn settle(
        &self,
        fence: &Fence,
        outcome: &Settlement,
        now: Timestamp,
    ) -> Result<Status, StoreError> {
        super::until_known("settle", &fence.key, |again| {
            self.settle_once(fence, outcome, now, again)
        })
        .await
    }

    /// One settle transaction; `again` after one whose outcome is unknown.
    async fn settle_once(
        &self,
        fence: &Fence,
        outcome: &Settlement,
        now: Timestamp,
        again: bool,
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
        let mut d = details.clone();
        if let (Some(obj), true) = (
            d.as_object_mut(),
            platform_id.is_some() || permalink.is_some(),
        ) {
            obj.insert("platform_id".into(), json!(platform_id));
            obj.insert("permalink".into(), json!(permalink));
        }
        // First try: the whole transition in one statement on PostgreSQL (one round trip, its own commit), in
        // one call on SQLite (src/store/one_call.rs). It matches only the common case; anything else (a retry,
        // a stale fence) is decided by the transaction below, which reads the row and says why.
        if !again {
            let one = OneSettle {
                fence,
                event,
                to,
                reason: reason.as_deref(),
                details: &d,
                platform_id: platform_id.as_deref(),
                permalink: permalink.as_deref(),
                now,
            };
            let settled = match self.dialect {
                crate::store::Dialect::Postgres => self.settle_in_one_statement(&one).await?,
                crate::store::Dialect::Sqlite => self.settle_in_one_call(&one).await?,
            };
            if settled {
                return Ok(to);
            }
        }
        self.write(async |tx| {
            let row = tx.intent(&fence.key).await?;
            let from = row.intent.state;
            let stale = StoreError::Fenced {
                actual: from,
                held: fence.generation,
                current_generation: row.intent.generation,
            };
            // The earlier try committed: this attempt's row is already where this settle takes it.
            if again
                && from == to
                && row.intent.generation == fence.generation
                && row.intent.epoch == fence.epoch
                && row.intent.current_attempt.as_deref() == Some(fence.attempt.as_str())
            {
                return Ok(to);
            }
            if from.next(event).is_err() {
                return Err(stale);
            }
            // The guard: the state we read, this attempt's fence, the store's epoch, and (before authorization)
            // the claim still held by this worker.
            let r = sqlx::query(
                "/* oncepost: settle */ UPDATE intents SET state = $5, lease_owner = NULL, lease_expires_at = NULL, \
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
}

/// What [`Store::settle_in_one_statement`] and [`Store::settle_in_one_call`] write.
struct OneSettle<'a> {
    fence: &'a Fence,
    event: EventKind,
    to: Status,
    reason: Option<&'a str>,
    details: &'a serde_json::Value,
    platform_id: Option<&'a str>,
    permalink: Option<&'a str>,
    now: Timestamp,
}

impl<'a> OneSettle<'a> {
    /// `text` with the binds both backends' one-shot settles take: $1 key, $2 generation, $3 epoch, $4
    /// attempt, $5 the state it moves to, $6 platform id, $7 permalink, $8 now, $9 the states this event may
    /// leave for it (from the transition table itself, comma-separated), $10 owner, $11 the event, $12
    /// reason, $13 details.
    fn bound<'q>(&self, text: &'q str) -> Query<'q, Any, AnyArguments<'q>>
    where
        'a: 'q,
    {
        let from: Vec<&str> = Status::ALL
            .into_iter()
            .filter(|st| st.next(self.event) == Ok(self.to))
            .map(Status::label)
            .collect();
        sqlx::query(text)
            .bind(self.fence.key.as_str())
            .bind(self.fence.generation)
            .bind(self.fence.epoch)
            .bind(self.fence.attempt.as_str())
            .bind(self.to.label())
            .bind(self.platform_id)
            .bind(self.permalink.map(crate::redact::text))
            .bind(self.now.0)
            .bind(from.join(","))
            .bind(&self.fence.owner)
            .bind(self.event.label())
            // The same redaction as every appended event.
            .bind(self.reason.map(crate::redact::text))
            .bind(crate::redact::json(self.details).to_string())
    }
}

impl Store {
    /// PostgreSQL: a settle in one autocommit statement: lock the intent's row and read its state, the
    /// guarded update (the same guard as the transaction's: a state this event may leave, this attempt's
    /// fence, the store's epoch, the claim before authorization), the text claim released after a failure,
    /// and the event appended from what the update returned. `true` when it settled; `false` when its guard
    /// matched nothing (then nothing was written, and the transaction path decides and explains).
    ///
    /// Why one statement: each statement of a transaction is a round trip, and a settle in a transaction
    /// was five (`BEGIN`, read, update, append, `COMMIT`), about 0.1 ms each on loopback next to a 0.4 ms
    /// commit (docs/benchmarks.md, store lifecycle).
    async fn settle_in_one_statement(&self, s: &OneSettle<'_>) -> Result<bool, StoreError> {
        // Crash test: killed here, nothing of the settle is committed (as in the transaction's point).
        crate::failpoint::hit(crate::failpoint::FailPoint::DuringSettle);
        let settled = s
            .bound(
            "/* oncepost: settle */ WITH o AS (\
                 SELECT id, state FROM intents WHERE delivery_key = $1 FOR UPDATE), \
             u AS (UPDATE intents i SET state = $5, lease_owner = NULL, lease_expires_at = NULL, \
                 platform_id = COALESCE($6, i.platform_id), permalink = COALESCE($7, i.permalink), updated_at = $8 \
                 FROM o WHERE i.id = o.id AND o.state = ANY(string_to_array($9, ',')) AND i.state = o.state \
                 AND i.generation = $2 AND i.epoch = $3 AND i.current_attempt = $4 \
                 AND i.epoch = (SELECT m.epoch FROM store_meta m WHERE m.id = 1) \
                 AND (o.state <> 'pending' OR i.lease_owner = $10) \
                 RETURNING i.id, o.state AS from_state), \
             c AS (DELETE FROM text_claims t USING u WHERE t.intent_id = u.id AND $5 = 'failed'), \
             e AS (INSERT INTO events (intent_id, at, kind, from_state, to_state, actor, reason, details, \
                 attempt_token, generation) \
                 SELECT u.id, $8, $11, u.from_state, $5, $10, $12, $13, $4, $2 FROM u) \
             SELECT id FROM u",
            )
            .fetch_optional(&self.pool)
            .await
            .map_err(map_db)?;
        if settled.is_some() {
            self.commits
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(settled.is_some())
    }
}

impl Store {
    /// SQLite: a settle in one call (src/store/one_call.rs): the event (with the state it leaves) and the
    /// guarded update, under one guard (the transaction's: a state this event may leave, this attempt's
    /// fence, the store's epoch, the claim before authorization), both in one `BEGIN IMMEDIATE` (nothing
    /// writes between them, so they match together or not at all), and the text claim released after a
    /// failure. `true` when it settled (the update returned its row); `false` when its guard matched
    /// nothing (nothing was written, and the transaction path decides and explains).
    async fn settle_in_one_call(&self, s: &OneSettle<'_>) -> Result<bool, StoreError> {
        // Crash test: killed here, nothing of the settle is committed (as in the transaction's point).
        crate::failpoint::hit(crate::failpoint::FailPoint::DuringSettle);
        let guard = "delivery_key = $1 AND instr(',' || $9 || ',', ',' || state || ',') > 0 \
                     AND current_attempt = $4 AND generation = $2 AND epoch = $3 \
                     AND epoch = (SELECT m.epoch FROM store_meta m WHERE m.id = 1) \
                     AND (lease_owner = $10 OR state <> 'pending')";
        let text = format!(
            "/* oncepost: settle */ BEGIN IMMEDIATE; \
             INSERT INTO events (intent_id, at, kind, from_state, to_state, actor, reason, details, \
                 attempt_token, generation) \
                 SELECT id, $8, $11, state, $5, $10, $12, $13, $4, $2 FROM intents WHERE {guard}; \
             UPDATE intents SET state = $5, lease_owner = NULL, lease_expires_at = NULL, \
                 platform_id = COALESCE($6, platform_id), permalink = COALESCE($7, permalink), updated_at = $8 \
                 WHERE {guard} RETURNING id; \
             DELETE FROM text_claims WHERE $5 = 'failed' AND intent_id IN (SELECT id FROM intents \
                 WHERE delivery_key = $1 AND state = 'failed' AND current_attempt = $4); \
             COMMIT"
        );
        let rows = self.sqlite_one_call(s.bound(&text), map_db).await?;
        if rows.is_empty() {
            return Ok(false);
        }
        self.commits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(true)
    }
}
