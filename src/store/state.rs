//! The six states of a delivery intent, the events that move them, and the one transition function.
//!
//! ```text
//!   pending --begin--> pending (claimed: lease + one new attempt)
//!   pending --authorize_dispatch--> authorized (the last checkpoint before any byte)
//!   authorized --settle--> published | failed | indeterminate
//!   authorized --lease expired, sweep--> indeterminate          (never back to pending)
//!   failed --retry--> pending                                    (the ONLY retry)
//!   indeterminate --reconcile found--> published
//!   indeterminate --reconcile not found / unavailable--> parked  (or stays, by policy)
//!   pending | failed | indeterminate --park--> parked            (operator or policy)
//!   parked --resolve (a person)--> published
//! ```
//!
//! [`Status::next`] is used by every write (to decide the target state before the guarded SQL runs) and by
//! every read of a timeline (to replay the stored events and report a sequence that does not replay as
//! corruption), so the table in this file is the state machine; the SQL guards enforce the same table.
use std::fmt;

use serde::{Deserialize, Serialize};

/// The state of a delivery intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Created, or re-opened by `retry`. Nothing is in flight. `begin` claims it (lease + attempt) while it
    /// stays pending; a claim that expires before authorization is released by `sweep` or taken over by the
    /// next `begin`.
    Pending,
    /// `authorize_dispatch` passed: bytes may be leaving. Durable, with a lease deadline. Only the worker's
    /// `settle` (matching generation and epoch) or `sweep` after the deadline moves it on.
    Authorized,
    /// Terminal. The post was read back from the platform (or found by reconcile, or confirmed by a person).
    Published,
    /// Definitively not sent: provably zero bytes left. The only state `retry` accepts.
    Failed,
    /// Nobody knows whether it was sent. Never retried, never resent, never back to pending: only a lookup on
    /// the platform (reconcile) or a person moves it, to published or parked.
    Indeterminate,
    /// Terminal for machines, owned by a person: reconciliation was unavailable or found nothing, the attempt
    /// cap was hit, a live side effect was seen, or an operator stopped it. A person may resolve it.
    Parked,
}

impl Status {
    /// Every state, in declaration order.
    pub const ALL: [Status; 6] = [
        Status::Pending,
        Status::Authorized,
        Status::Published,
        Status::Failed,
        Status::Indeterminate,
        Status::Parked,
    ];

    /// The one spelling of this state: serde, Display, the CLI and the SQL column all use it.
    pub fn label(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Authorized => "authorized",
            Status::Published => "published",
            Status::Failed => "failed",
            Status::Indeterminate => "indeterminate",
            Status::Parked => "parked",
        }
    }

    /// Parse a label written by [`Status::label`].
    pub fn from_label(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.label() == s)
    }

    /// Whether a machine may still move this intent (published and parked are final for machines).
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Published | Status::Parked)
    }

    /// The only way an intent changes state; also used when replaying stored events.
    pub fn next(self, event: EventKind) -> Result<Status, IllegalTransition> {
        use EventKind as E;
        use Status as S;
        let to = match (self, event) {
            // Facts that never change the state.
            (s, E::Note | E::Evidence | E::SideEffectAlarm) => s,
            (S::Pending, E::Begun | E::ClaimReleased | E::Queued) => S::Pending,
            (S::Pending, E::Authorized) => S::Authorized,
            (S::Pending, E::FoundBeforeWrite) => S::Published,
            (S::Authorized, E::RequestSent) => S::Authorized,
            (S::Authorized, E::Published) => S::Published,
            // Failed from pending: the claim holder proved nothing was sent before authorization.
            (S::Pending | S::Authorized, E::Failed) => S::Failed,
            (S::Authorized, E::Indeterminate | E::LeaseExpired) => S::Indeterminate,
            (S::Failed, E::Retried) => S::Pending,
            (S::Indeterminate | S::Parked, E::ReconcileStarted | E::ReconcileNotFound) => self,
            (S::Indeterminate | S::Parked, E::ReconcileFound) => S::Published,
            (S::Pending | S::Failed | S::Indeterminate, E::Parked) => S::Parked,
            (S::Parked, E::Resolved) => S::Published,
            (S::Published | S::Indeterminate | S::Parked, E::RedeliveryAuthorized) => self,
            (from, event) => {
                return Err(IllegalTransition {
                    from: Some(from),
                    event,
                });
            }
        };
        Ok(to)
    }

    /// Every change of state some event allows: the `(from, to)` pairs of different states for which
    /// [`Status::next`] has an event. The database triggers of migration 0003 accept exactly these changes of
    /// `intents.state` (and any update that keeps the state); tests/store_triggers.rs checks that on both
    /// backends, so the table in SQL and the table here cannot drift apart.
    pub fn allowed_changes() -> Vec<(Status, Status)> {
        let mut out = Vec::new();
        for from in Status::ALL {
            for to in Status::ALL {
                if from != to && EventKind::ALL.into_iter().any(|e| from.next(e) == Ok(to)) {
                    out.push((from, to));
                }
            }
        }
        out
    }

    /// Replay a whole event sequence from creation. The first event must be [`EventKind::Created`].
    pub fn replay(
        events: impl IntoIterator<Item = EventKind>,
    ) -> Result<Status, IllegalTransition> {
        let mut it = events.into_iter();
        match it.next() {
            Some(EventKind::Created) => {}
            Some(event) => return Err(IllegalTransition { from: None, event }),
            None => {
                return Err(IllegalTransition {
                    from: None,
                    event: EventKind::Note,
                });
            }
        }
        it.try_fold(Status::Pending, |s, e| s.next(e))
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// What happened to an intent: the `kind` column of an event row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The intent was created (pending).
    Created,
    /// `begin` claimed it and minted one attempt.
    Begun,
    /// An expired pre-authorization claim was released; its attempt never sent anything.
    ClaimReleased,
    /// Submitted to the queue (or queued again): a worker may run it from `run_after` on.
    Queued,
    /// The final before-byte authorization passed.
    Authorized,
    /// The create request went out; the wire request hash is in the details.
    RequestSent,
    /// Settled published after read-back.
    Published,
    /// Settled failed: definitive not-sent, with the proof in the details.
    Failed,
    /// Settled indeterminate by the worker (reason in the details).
    Indeterminate,
    /// The dispatch lease expired with no outcome; the sweeper made it indeterminate.
    LeaseExpired,
    /// Re-opened from failed by retry; creates no attempt.
    Retried,
    /// A reconcile lookup was recorded before it ran.
    ReconcileStarted,
    /// The lookup found the post.
    ReconcileFound,
    /// The lookup found nothing or could not run; this proves nothing.
    ReconcileNotFound,
    /// Parked by an operator or by policy.
    Parked,
    /// A person confirmed a parked intent as published.
    Resolved,
    /// Look-before-write found the post already on the platform; nothing was pressed.
    FoundBeforeWrite,
    /// A person authorized a redelivery of this (consumed) intent as a new intent.
    RedeliveryAuthorized,
    /// A note from a person (for example "keep parked").
    Note,
    /// Evidence was linked (screenshots, logs, DOM excerpts).
    Evidence,
    /// A write was observed where none was authorized.
    SideEffectAlarm,
}

impl EventKind {
    /// Every kind.
    pub const ALL: [EventKind; 21] = [
        EventKind::Created,
        EventKind::Begun,
        EventKind::ClaimReleased,
        EventKind::Queued,
        EventKind::Authorized,
        EventKind::RequestSent,
        EventKind::Published,
        EventKind::Failed,
        EventKind::Indeterminate,
        EventKind::LeaseExpired,
        EventKind::Retried,
        EventKind::ReconcileStarted,
        EventKind::ReconcileFound,
        EventKind::ReconcileNotFound,
        EventKind::Parked,
        EventKind::Resolved,
        EventKind::FoundBeforeWrite,
        EventKind::RedeliveryAuthorized,
        EventKind::Note,
        EventKind::Evidence,
        EventKind::SideEffectAlarm,
    ];

    /// The one spelling of this kind (the SQL column).
    pub fn label(self) -> &'static str {
        match self {
            EventKind::Created => "created",
            EventKind::Begun => "begun",
            EventKind::ClaimReleased => "claim_released",
            EventKind::Queued => "queued",
            EventKind::Authorized => "authorized",
            EventKind::RequestSent => "request_sent",
            EventKind::Published => "published",
            EventKind::Failed => "failed",
            EventKind::Indeterminate => "indeterminate",
            EventKind::LeaseExpired => "lease_expired",
            EventKind::Retried => "retried",
            EventKind::ReconcileStarted => "reconcile_started",
            EventKind::ReconcileFound => "reconcile_found",
            EventKind::ReconcileNotFound => "reconcile_not_found",
            EventKind::Parked => "parked",
            EventKind::Resolved => "resolved",
            EventKind::FoundBeforeWrite => "found_before_write",
            EventKind::RedeliveryAuthorized => "redelivery_authorized",
            EventKind::Note => "note",
            EventKind::Evidence => "evidence",
            EventKind::SideEffectAlarm => "side_effect_alarm",
        }
    }

    /// Parse a label written by [`EventKind::label`].
    pub fn from_label(s: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.label() == s)
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// An event that the state table does not allow in the given state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("illegal transition: event {event} in state {}", from.map(|s| s.label()).unwrap_or("(none)"))]
pub struct IllegalTransition {
    /// The state the intent was in (`None`: before creation).
    pub from: Option<Status>,
    /// The event that does not apply.
    pub event: EventKind,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn labels_round_trip() {
        for s in Status::ALL {
            assert_eq!(Status::from_label(s.label()), Some(s));
            assert_eq!(
                serde_json::to_string(&s).unwrap(),
                format!("\"{}\"", s.label())
            );
        }
        for k in EventKind::ALL {
            assert_eq!(EventKind::from_label(k.label()), Some(k));
            assert_eq!(
                serde_json::to_string(&k).unwrap(),
                format!("\"{}\"", k.label())
            );
        }
    }

    #[test]
    fn display_is_the_label() {
        for s in Status::ALL {
            assert_eq!(s.to_string(), s.label());
        }
        for k in EventKind::ALL {
            assert_eq!(k.to_string(), k.label());
        }
    }

    #[test]
    fn only_published_and_parked_are_terminal() {
        for s in Status::ALL {
            assert_eq!(
                s.is_terminal(),
                matches!(s, Status::Published | Status::Parked),
                "{s}"
            );
        }
    }

    #[test]
    fn indeterminate_is_never_retried_and_never_pending() {
        for e in EventKind::ALL {
            if let Ok(to) = Status::Indeterminate.next(e) {
                assert_ne!(
                    to,
                    Status::Pending,
                    "{e} took indeterminate back to pending"
                );
                assert_ne!(
                    to,
                    Status::Authorized,
                    "{e} re-authorized an indeterminate intent"
                );
            }
        }
        assert!(Status::Indeterminate.next(EventKind::Retried).is_err());
    }

    #[test]
    fn only_failed_retries() {
        for s in Status::ALL {
            assert_eq!(
                Status::next(s, EventKind::Retried).is_ok(),
                s == Status::Failed,
                "{s}"
            );
        }
    }

    #[test]
    fn published_is_final() {
        for e in EventKind::ALL {
            if let Ok(to) = Status::Published.next(e) {
                assert_eq!(to, Status::Published, "{e}");
            }
        }
    }

    #[test]
    fn authorized_cannot_be_parked_or_released() {
        assert!(Status::Authorized.next(EventKind::Parked).is_err());
        assert!(Status::Authorized.next(EventKind::ClaimReleased).is_err());
        assert!(Status::Authorized.next(EventKind::Authorized).is_err());
    }

    #[test]
    fn replay_requires_creation_first() {
        assert!(Status::replay([EventKind::Begun]).is_err());
        assert_eq!(
            Status::replay([
                EventKind::Created,
                EventKind::Begun,
                EventKind::Authorized,
                EventKind::RequestSent,
                EventKind::Published
            ]),
            Ok(Status::Published)
        );
    }

    /// The pairs spelled in the migrations' triggers (`'from>to'`) are exactly the code's allowed changes.
    #[test]
    fn the_migrations_spell_the_code_s_state_table() {
        let want: std::collections::BTreeSet<String> = Status::allowed_changes()
            .into_iter()
            .map(|(a, b)| format!("{a}>{b}"))
            .collect();
        for sql in [
            include_str!("../../migrations/sqlite/0003_state_table_enforced.sql"),
            include_str!("../../migrations/postgres/0003_state_table_enforced.sql"),
        ] {
            let got: std::collections::BTreeSet<String> = sql
                .split('\'')
                .filter(|lit| {
                    lit.split_once('>').is_some_and(|(a, b)| {
                        Status::from_label(a).is_some() && Status::from_label(b).is_some()
                    })
                })
                .map(String::from)
                .collect();
            assert_eq!(got, want);
        }
    }

    proptest! {
        /// Whatever events arrive, the only paths into `pending` are creation and retry-from-failed, and
        /// nothing ever leaves published.
        #[test]
        fn random_sequences_keep_the_invariants(seq in proptest::collection::vec(0usize..EventKind::ALL.len(), 0..40)) {
            let mut s = Status::Pending;
            for i in seq {
                let e = EventKind::ALL[i];
                if let Ok(to) = s.next(e) {
                    if to == Status::Pending && s != Status::Pending {
                        prop_assert_eq!((s, e), (Status::Failed, EventKind::Retried));
                    }
                    if s == Status::Published {
                        prop_assert_eq!(to, Status::Published);
                    }
                    s = to;
                }
            }
        }
    }
}
