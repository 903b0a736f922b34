//! Platform binding and authorship records: which platform and deployment an intent belongs to, and which
//! handle an account posts as. The store only records them; `contract::Binding`, `publish` and `recover` decide
//! with them (a lookup through another platform never touches an intent; a search match settles an intent only
//! when it shows the account's handle).
use serde_json::json;

use super::error::StoreError;
use super::model::*;
use super::state::{EventKind, Status};
use super::{NewEvent, Store, map_db};
use crate::identity::DeliveryKey;

/// Longest handle accepted (platform handles are short; a display name is not what is asked for).
pub const MAX_HANDLE_CHARS: usize = 200;

fn check_handle(handle: &str) -> Result<(), StoreError> {
    let n = handle.chars().count();
    if handle.trim().is_empty()
        || handle.trim() != handle
        || n > MAX_HANDLE_CHARS
        || handle.chars().any(char::is_control)
    {
        return Err(StoreError::Invalid(format!(
            "handle {handle:?} must be 1-{MAX_HANDLE_CHARS} characters, without surrounding blanks or control \
             characters"
        )));
    }
    Ok(())
}

impl Store {
    /// Record (or, with `None`, clear) the handle an account posts as on its platform. Appends an admin event.
    pub async fn set_account_handle(
        &self,
        name: &str,
        handle: Option<&str>,
        actor: &str,
        now: Timestamp,
    ) -> Result<Account, StoreError> {
        if let Some(h) = handle {
            check_handle(h)?;
        }
        self.write(async |tx| {
            let r = sqlx::query("UPDATE accounts SET handle = $2 WHERE name = $1")
                .bind(name)
                .bind(handle)
                .execute(tx.conn())
                .await
                .map_err(map_db)?;
            if r.rows_affected() != 1 {
                return Err(StoreError::UnknownAccount(name.to_string()));
            }
            sqlx::query(
                "INSERT INTO admin_events (at, actor, action, details) VALUES ($1, $2, 'account_handle', $3)",
            )
            .bind(now.0)
            .bind(actor)
            .bind(json!({ "account": name, "handle": handle }).to_string())
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            Ok(())
        }).await?;
        self.account(name).await
    }

    /// Bind a pending intent to the contract platform and the base URL origin it is being published through.
    /// Only what is not recorded yet is filled in (a recorded binding never changes, and a trigger refuses a
    /// change too); a settled intent is not written. Returns the intent as it stands, so the caller compares
    /// the recorded binding with its own.
    pub async fn bind_intent(
        &self,
        key: &DeliveryKey,
        contract_platform: &str,
        base_origin: &str,
    ) -> Result<Intent, StoreError> {
        if contract_platform.is_empty() || base_origin.is_empty() {
            return Err(StoreError::Invalid(
                "a binding needs a platform and an origin".into(),
            ));
        }
        self.write(async |tx| {
            // Not a state change: the state guard only keeps a settled intent's record as it was.
            sqlx::query(
                "UPDATE intents SET contract_platform = COALESCE(contract_platform, $2), \
                 base_origin = COALESCE(base_origin, $3) \
                 WHERE delivery_key = $1 AND state = 'pending' \
                 AND (contract_platform IS NULL OR base_origin IS NULL)",
            )
            .bind(key.as_str())
            .bind(contract_platform)
            .bind(base_origin)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            Ok(tx.intent(key).await?.intent)
        })
        .await
    }

    /// Look-before-write found a post with this text whose authorship cannot be shown (another author, no
    /// author on the page, no handle recorded, a link outside the platform): a lead for a person. pending ->
    /// parked with the candidate in the event, without pressing anything. Refused while someone holds a live
    /// claim (they are the executor), like found-before-write.
    pub async fn park_lead(
        &self,
        key: &DeliveryKey,
        actor: &str,
        reason: &str,
        lead: serde_json::Value,
        now: Timestamp,
    ) -> Result<Intent, StoreError> {
        self.write(async |tx| {
            let row = tx.intent(key).await?;
            let to =
                row.intent
                    .state
                    .next(EventKind::Parked)
                    .map_err(|_| StoreError::WrongState {
                        operation: "park on a lead",
                        actual: row.intent.state,
                    })?;
            let r = sqlx::query(
                "UPDATE intents SET state = $2, updated_at = $3 \
                 WHERE id = $1 AND state = 'pending' AND (lease_expires_at IS NULL OR lease_expires_at <= $3)",
            )
            .bind(row.id)
            .bind(to.label())
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
                            operation: "park on a lead",
                            actual: row.intent.state,
                        },
                    },
                );
            }
            tx.append(NewEvent {
                intent_id: row.id,
                at: now,
                kind: EventKind::Parked,
                from: Some(row.intent.state),
                to,
                actor,
                reason: Some(reason),
                details: &lead,
                attempt: None,
                generation: None,
            })
            .await?;
            Ok(tx.intent(key).await?.intent)
        }).await
    }
}
