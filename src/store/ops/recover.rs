//! Recovery without a person: the sweeper (expired dispatch leases, expired claims, interrupted lookups), the
//! reconcile lookup (at most once automatically), and look-before-write finding the post already published.
use serde_json::json;

use super::transition;
use crate::store::error::StoreError;
use crate::store::model::*;
use crate::store::state::{EventKind, Status};
use crate::store::{NewEvent, Store, map_db, map_row};

use crate::identity::DeliveryKey;

impl Store {
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
