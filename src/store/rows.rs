//! Rows as the database returns them (`sqlx::FromRow`, one field per selected column), and their conversion to
//! the values callers see. Labels and JSON text are checked here, so a stored value that does not read back is a
//! [`StoreError::Decode`] naming it.
use super::error::StoreError;
use super::map_row;
use super::model::{Account, EventRecord, Intent, Switch};
use super::state::{EventKind, Status};
use crate::identity::{ActionKind, DeliveryKey};

/// Columns of `intents`, in the order [`IntentRecord`] reads them.
pub(crate) const INTENT_COLUMNS: &str = "id, delivery_key, state, account, platform, action_kind, target, \
    request_json, content_hash, source_ref, redelivery_of, redelivery_json, generation, epoch, lease_owner, \
    lease_expires_at, current_attempt, attempt_count, max_attempts, reconcile_count, lookup_expires_at, platform_id, permalink, \
    created_at, updated_at, contract_hash, credential_version, contract_platform, base_origin, base_url, queued_contract, run_after";

/// One `intents` row, as selected by [`INTENT_COLUMNS`].
#[derive(sqlx::FromRow)]
pub(crate) struct IntentRecord {
    id: i64,
    delivery_key: String,
    state: String,
    account: String,
    platform: String,
    action_kind: String,
    target: String,
    request_json: String,
    content_hash: String,
    source_ref: Option<String>,
    redelivery_of: Option<String>,
    redelivery_json: Option<String>,
    generation: i64,
    epoch: i64,
    lease_owner: Option<String>,
    lease_expires_at: Option<i64>,
    current_attempt: Option<String>,
    attempt_count: i64,
    max_attempts: i64,
    reconcile_count: i64,
    lookup_expires_at: Option<i64>,
    platform_id: Option<String>,
    permalink: Option<String>,
    created_at: i64,
    updated_at: i64,
    contract_hash: Option<String>,
    credential_version: Option<i64>,
    contract_platform: Option<String>,
    base_origin: Option<String>,
    base_url: Option<String>,
    queued_contract: Option<String>,
    run_after: Option<i64>,
}

/// An intent row plus the columns callers do not see.
pub(crate) struct IntentRow {
    pub id: i64,
    pub intent: Intent,
    pub contract_hash: Option<String>,
    /// The credential version the current claim began with.
    pub credential_version: Option<i64>,
}

impl TryFrom<IntentRecord> for IntentRow {
    type Error = StoreError;

    fn try_from(r: IntentRecord) -> Result<Self, StoreError> {
        let intent = Intent {
            key: DeliveryKey::parse(&r.delivery_key)
                .ok_or_else(|| StoreError::Decode(format!("delivery_key {:?}", r.delivery_key)))?,
            state: Status::from_label(&r.state)
                .ok_or_else(|| StoreError::Decode(format!("state {:?}", r.state)))?,
            account: r.account,
            platform: r.platform,
            action: ActionKind::from_label(&r.action_kind)
                .ok_or_else(|| StoreError::Decode(format!("action_kind {:?}", r.action_kind)))?,
            target: r.target,
            request: serde_json::from_str(&r.request_json)
                .map_err(|e| StoreError::Decode(format!("request_json: {e}")))?,
            content_hash: r.content_hash,
            source_ref: r.source_ref,
            redelivery_of: r.redelivery_of.and_then(|k| DeliveryKey::parse(&k)),
            redelivery: r
                .redelivery_json
                .and_then(|j| serde_json::from_str(&j).ok()),
            generation: r.generation,
            epoch: r.epoch,
            lease_owner: r.lease_owner,
            lease_expires_at: r.lease_expires_at,
            current_attempt: r.current_attempt,
            attempt_count: r.attempt_count,
            max_attempts: r.max_attempts,
            reconcile_count: r.reconcile_count,
            lookup_expires_at: r.lookup_expires_at,
            platform_id: r.platform_id,
            permalink: r.permalink,
            contract_platform: r.contract_platform,
            base_origin: r.base_origin,
            contract_version: r.contract_hash.clone(),
            base_url: r.base_url,
            queued_contract: r.queued_contract,
            run_after: r.run_after,
            created_at: r.created_at,
            updated_at: r.updated_at,
        };
        Ok(IntentRow {
            id: r.id,
            intent,
            contract_hash: r.contract_hash,
            credential_version: r.credential_version,
        })
    }
}

/// Read one intent row by key, inside a transaction or from the pool (`None`: no such key).
pub(crate) async fn find_intent<'e, E>(ex: E, key: &str) -> Result<Option<IntentRow>, StoreError>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    let sql = format!("SELECT {INTENT_COLUMNS} FROM intents WHERE delivery_key = $1");
    sqlx::query_as::<_, IntentRecord>(&sql)
        .bind(key)
        .fetch_optional(ex)
        .await
        .map_err(map_row)?
        .map(IntentRow::try_from)
        .transpose()
}

/// One `events` row.
#[derive(sqlx::FromRow)]
pub(crate) struct EventRow {
    id: i64,
    at: i64,
    kind: String,
    from_state: Option<String>,
    to_state: String,
    actor: String,
    reason: Option<String>,
    details: String,
    attempt_token: Option<String>,
    generation: Option<i64>,
}

impl TryFrom<EventRow> for EventRecord {
    type Error = StoreError;

    fn try_from(r: EventRow) -> Result<Self, StoreError> {
        Ok(EventRecord {
            id: r.id,
            at: r.at,
            kind: EventKind::from_label(&r.kind)
                .ok_or_else(|| StoreError::Decode(format!("event kind {:?}", r.kind)))?,
            from: r.from_state.as_deref().and_then(Status::from_label),
            to: Status::from_label(&r.to_state)
                .ok_or_else(|| StoreError::Decode(format!("state {:?}", r.to_state)))?,
            actor: r.actor,
            reason: r.reason,
            details: serde_json::from_str(&r.details)
                .unwrap_or(serde_json::Value::String(r.details)),
            attempt: r.attempt_token,
            generation: r.generation,
        })
    }
}

/// One `accounts` row (`revoked` is an integer on both backends).
#[derive(sqlx::FromRow)]
pub(crate) struct AccountRow {
    name: String,
    platform: String,
    credential_version: i64,
    revoked: i64,
    min_interval_ms: i64,
    dup_window_ms: i64,
    last_dispatch_at: Option<i64>,
    handle: Option<String>,
    hourly_cap: Option<i64>,
    daily_cap: Option<i64>,
    jitter_ms: i64,
    next_dispatch_at: Option<i64>,
}

impl From<AccountRow> for Account {
    fn from(r: AccountRow) -> Self {
        Account {
            name: r.name,
            platform: r.platform,
            credential_version: r.credential_version,
            revoked: r.revoked != 0,
            min_interval_ms: r.min_interval_ms,
            dup_window_ms: r.dup_window_ms,
            last_dispatch_at: r.last_dispatch_at,
            handle: r.handle,
            hourly_cap: r.hourly_cap,
            daily_cap: r.daily_cap,
            jitter_ms: r.jitter_ms,
            next_dispatch_at: r.next_dispatch_at,
        }
    }
}

/// One `switches` row (`engaged` is an integer on both backends).
#[derive(sqlx::FromRow)]
pub(crate) struct SwitchRow {
    scope: String,
    name: String,
    engaged: i64,
    changed_at: i64,
    changed_by: String,
}

impl From<SwitchRow> for Switch {
    fn from(r: SwitchRow) -> Self {
        Switch {
            scope: r.scope,
            name: r.name,
            engaged: r.engaged != 0,
            changed_at: r.changed_at,
            changed_by: r.changed_by,
        }
    }
}
