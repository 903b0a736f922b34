//! What a person does to an intent: retry a failed one, park, resolve a parked one, add a note, or knowingly
//! authorize a redelivery of a consumed one.
use serde_json::json;

use super::transition;
use crate::store::error::{AuthorizeRefusal, StoreError};
use crate::store::model::*;
use crate::store::state::{EventKind, Status};
use crate::store::{NewEvent, Store, map_db};

use crate::identity::DeliveryKey;

impl Store {
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
        // A post whose source moved on would only be parked again by the fence: the person's choice is the
        // new text against the new version (a new submit), or nothing.
        let source = match self.intent_source(key).await? {
            None => None,
            Some(s) if !s.is_fresh() => {
                return Err(StoreError::Invalid(format!(
                    "intent {key} rests on version {} of source {}, which version {} superseded: a redelivery \
                     would rest on the old version and be parked again; submit the post (its text revised if \
                     need be) with the source's current body instead",
                    s.version,
                    s.stable_id,
                    s.head.as_ref().map_or("(none)", |h| h.as_str())
                )));
            }
            Some(s) => Some(crate::store::IntentClaim {
                claim: s.claim,
                version: s.version,
                content: s.claim_content,
            }),
        };
        let new_key = DeliveryKey::for_redelivery(key, by, reason);
        let record =
            json!({ "by": by, "reason": reason, "consumed_key": key.as_str(), "at": now.0 });
        let new = NewIntent {
            account: old.account.clone(),
            action: old.action,
            target: old.target.clone(),
            request: old.request.clone(),
            source,
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
