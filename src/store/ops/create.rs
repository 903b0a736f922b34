//! Creating an intent: idempotent on its delivery key (the same request never makes a second row). Shared with
//! a person's redelivery, which creates the new intent and notes it on the consumed one in one transaction.
use serde_json::json;
use sqlx::any::{AnyArguments, AnyRow};
use sqlx::query::Query;
use sqlx::{Any, FromRow};

use super::transition;
use crate::store::error::{AuthorizeRefusal, StoreError};
use crate::store::model::*;
use crate::store::rows::{INTENT_COLUMNS, IntentRecord, IntentRow};
use crate::store::state::{EventKind, Status};
use crate::store::{NewEvent, Store, map_db, map_row};

use crate::identity::{ContentHash, DeliveryKey};

/// The intent's insert, one text for both paths of a create: only for a registered account (with its
/// platform), and nothing when the key exists (the caller adds what it returns).
macro_rules! insert_intent_sql {
    () => {
        "INSERT INTO intents (delivery_key, account, platform, action_kind, target, request_json, \
                 content_hash, source_ref, redelivery_of, redelivery_json, state, max_attempts, created_at, \
                 updated_at) \
                 SELECT $1, a.name, a.platform, $3, $4, $5, $6, $7, $8, $9, 'pending', $10, $11, $11 \
                 FROM accounts a WHERE a.name = $2 \
                 ON CONFLICT (delivery_key) DO NOTHING"
    };
}

/// Whether a database error is migration 0003's one-redelivery-per-consumed-intent trigger.
fn is_one_redelivery(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.message().contains("oncepost_one_redelivery"))
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
            claim: new.source.as_ref().map(|c| c.claim.clone()),
        });
        // A create whose outcome is unknown (the connection broke, or the commit's answer was lost) is simply
        // tried again: it is idempotent on its key, so the retry either inserts the row or finds the one the
        // first try committed (then `created` is false: this call cannot tell its own commit from another
        // caller's of the same request, and the two are the same intent).
        super::until_known("create", &key, |_| self.create_once(new, &key, now)).await
    }

    /// One try of a create.
    async fn create_once(
        &self,
        new: &NewIntent,
        key: &DeliveryKey,
        now: Timestamp,
    ) -> Result<Created, StoreError> {
        // A new intent without a source claim in one statement on PostgreSQL, in one call on SQLite
        // (src/store/one_call.rs). An existing key, an unknown account and a source claim are left to the
        // transaction below.
        if new.source.is_none() {
            let made = match self.dialect {
                crate::store::Dialect::Postgres => {
                    self.create_in_one_statement(new, key, now).await?
                }
                crate::store::Dialect::Sqlite => self.create_in_one_call(new, key, now).await?,
            };
            if let Some(intent) = made {
                return Ok(Created {
                    intent,
                    created: true,
                });
            }
        }
        self.insert_intent(new, key, None, "creator", None, now)
            .await
    }

    /// PostgreSQL: create an intent (no source claim, not a redelivery) in one autocommit statement: the
    /// insert, skipped when the key exists or the account does not, and its `created` event. `None` when
    /// nothing was inserted (then nothing was written; the transaction path finds the existing row or says
    /// which account is unknown).
    async fn create_in_one_statement(
        &self,
        new: &NewIntent,
        key: &DeliveryKey,
        now: Timestamp,
    ) -> Result<Option<Intent>, StoreError> {
        let sql = format!(
            "/* oncepost: create */ WITH n AS ({} RETURNING *), \
             e AS (INSERT INTO events (intent_id, at, kind, from_state, to_state, actor, reason, details, \
                 attempt_token, generation) \
                 SELECT n.id, $11, 'created', NULL, 'pending', 'creator', NULL, $12, NULL, NULL FROM n) \
             SELECT {INTENT_COLUMNS} FROM n",
            insert_intent_sql!()
        );
        let row = self
            .created_binds(&sql, new, key, now)?
            .fetch_optional(&self.pool)
            .await
            .map_err(map_row)?;
        let Some(row) = row else {
            return Ok(None);
        };
        self.commits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        intent_of(&row).map(Some)
    }

    /// `text` with the binds both backends' one-shot creates take: $1-$10 the intent's insert
    /// (`insert_intent_sql!`, no source claim and no redelivery), $11 now, $12 the `created` event's details
    /// (the same, through the same redaction, as the transaction path's event).
    fn created_binds<'q>(
        &self,
        text: &'q str,
        new: &'q NewIntent,
        key: &'q DeliveryKey,
        now: Timestamp,
    ) -> Result<Query<'q, Any, AnyArguments<'q>>, StoreError> {
        let content = ContentHash::of(new.action, new.request.text.as_deref());
        let request_json =
            serde_json::to_string(&new.request).map_err(|e| StoreError::Invalid(e.to_string()))?;
        let details = crate::redact::json(&json!({ "source_ref": serde_json::Value::Null }));
        Ok(sqlx::query(text)
            .bind(key.as_str())
            .bind(new.account.as_str())
            .bind(new.action.label())
            .bind(new.target.as_str())
            .bind(request_json)
            .bind(content.as_str().to_string())
            .bind(None::<&str>)
            .bind(None::<&str>)
            .bind(None::<&str>)
            .bind(self.policy.max_attempts)
            .bind(now.0)
            .bind(details.to_string()))
    }

    /// SQLite: [`Store::create_in_one_statement`] in one call (src/store/one_call.rs): the insert, skipped
    /// when the key exists or the account does not, then its `created` event and the new row, each only when
    /// the statement before it wrote its one row (`changes() = 1`), in one `BEGIN IMMEDIATE`. `None` when
    /// nothing was inserted.
    async fn create_in_one_call(
        &self,
        new: &NewIntent,
        key: &DeliveryKey,
        now: Timestamp,
    ) -> Result<Option<Intent>, StoreError> {
        let text = format!(
            "/* oncepost: create */ BEGIN IMMEDIATE; {}; \
             INSERT INTO events (intent_id, at, kind, from_state, to_state, actor, reason, details, \
                 attempt_token, generation) \
                 SELECT id, $11, 'created', NULL, 'pending', 'creator', NULL, $12, NULL, NULL FROM intents \
                 WHERE delivery_key = $1 AND changes() = 1; \
             SELECT {INTENT_COLUMNS} FROM intents WHERE delivery_key = $1 AND changes() = 1; \
             COMMIT",
            insert_intent_sql!()
        );
        let rows = self
            .sqlite_one_call(self.created_binds(&text, new, key, now)?, map_db)
            .await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        self.commits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        intent_of(row).map(Some)
    }

    /// Insert an intent row unless its key exists. Shared by create and redeliver.
    pub(super) async fn insert_intent(
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
        let source_ref = new.source.as_ref().map(|c| c.claim.as_str().to_string());
        self.write(async |tx| {
            if let Some(c) = &new.source {
                // The claim is stored once, with the intent that first makes it (its version was captured
                // before; the foreign key refuses a claim about a version the store does not hold).
                sqlx::query(
                    "INSERT INTO claims (claim_id, version_id, content, first_seen_at) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (claim_id) DO NOTHING",
                )
                .bind(c.claim.as_str())
                .bind(c.version.as_str())
                .bind(crate::identity::normalize_text(&c.content))
                .bind(now.0)
                .execute(tx.conn())
                .await
                .map_err(map_db)?;
            }
            let inserted: Result<Option<i64>, sqlx::Error> = sqlx::query_scalar(
                concat!(insert_intent_sql!(), " RETURNING id"),
            )
            .bind(key.as_str())
            .bind(&new.account)
            .bind(new.action.label())
            .bind(&new.target)
            .bind(&request_json)
            .bind(content.as_str())
            .bind(&source_ref)
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
                        None => json!({ "source_ref": source_ref }),
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
}

/// The intent a one-shot create returned (its `INTENT_COLUMNS`).
fn intent_of(row: &AnyRow) -> Result<Intent, StoreError> {
    let record = IntentRecord::from_row(row).map_err(map_row)?;
    Ok(IntentRow::try_from(record)?.intent)
}
