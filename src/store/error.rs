//! Errors of the store boundary.
use serde::Serialize;

use super::state::{IllegalTransition, Status};

/// Why the final before-byte authorization refused. Each variant is one re-checked condition; when several
/// hold, the first in declaration order is reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum AuthorizeRefusal {
    /// The intent is no longer pending (parked by an operator, already authorized by someone else, ...).
    #[error("the intent is {actual}, not pending")]
    NotPending {
        /// Its state now.
        actual: Status,
    },
    /// Another claim (a newer generation) replaced this worker's claim, or the claim was released.
    #[error(
        "stale claim: the intent's fence is generation {current_generation}, this worker holds {held}"
    )]
    StaleGeneration {
        /// The generation this worker holds.
        held: i64,
        /// The intent's current generation.
        current_generation: i64,
    },
    /// The claim's lease expired (or was released by the sweeper) before authorization.
    #[error("the claim's lease expired before authorization")]
    LeaseExpired,
    /// The store's epoch moved on (a restore happened): this worker predates it.
    #[error("store epoch is {current}, this worker holds epoch {held}: it predates a restore")]
    StaleEpoch {
        /// The epoch this worker holds.
        held: i64,
        /// The store's epoch now.
        current: i64,
    },
    /// A kill switch is engaged.
    #[error("kill switch engaged: {scope}{}", if name.is_empty() { String::new() } else { format!(" {name}") })]
    KillSwitch {
        /// global, platform or account.
        scope: String,
        /// The platform or account name (empty for global).
        name: String,
    },
    /// The account's credentials were revoked.
    #[error("account {account} is revoked")]
    Revoked {
        /// The account.
        account: String,
    },
    /// The account's credentials were rotated since the attempt began.
    #[error("credential version changed: attempt began with {held}, account is now at {current}")]
    CredentialChanged {
        /// Version at begin.
        held: i64,
        /// Version now.
        current: i64,
    },
    /// The platform contract changed since the attempt began.
    #[error("platform contract changed: attempt began with {held}, now {current}")]
    ContractChanged {
        /// Hash at begin.
        held: String,
        /// Hash now.
        current: String,
    },
    /// The account's minimum interval between publishes has not passed.
    #[error(
        "account {account} published {since_ms} ms ago; its minimum interval is {min_interval_ms} ms"
    )]
    RateInterval {
        /// The account.
        account: String,
        /// Time since its last dispatch.
        since_ms: i64,
        /// The configured minimum.
        min_interval_ms: i64,
    },
    /// The account's pacing (minimum interval plus jitter, hourly or daily cap) allows its next dispatch
    /// only later: not yet, rather than no.
    #[error("account {account} is paced ({rule}): its next dispatch may go at {until} ms")]
    Paced {
        /// The account.
        account: String,
        /// Which rule: "interval and jitter", "hourly cap N", "daily cap N".
        rule: String,
        /// The earliest time the rule allows (ms since the epoch).
        until: i64,
    },
    /// The platform already has as many dispatches in flight as its limit allows.
    #[error("platform {platform} has {in_flight} dispatch(es) in flight; its limit is {max}")]
    PlatformBusy {
        /// The platform.
        platform: String,
        /// Dispatches authorized and not yet settled.
        in_flight: i64,
        /// The limit.
        max: i64,
    },
    /// Another publish (another host) holds the account's lease: its login is in use there.
    #[error("account {account} is leased to {holder} until {expires_at} ms")]
    AccountLeased {
        /// The account.
        account: String,
        /// Who holds it.
        holder: String,
        /// Until when.
        expires_at: i64,
    },
    /// The same text went out from this account within the duplicate-text window.
    #[error("the same text was dispatched by {account} within its duplicate-text window")]
    DuplicateText {
        /// The account.
        account: String,
    },
    /// The post rests on a source version that is no longer the source's head (the publish-time source gate):
    /// machines are done with it, a person decides (the new text against the new version, or nothing).
    #[error(
        "source {source_id} moved on: this post rests on version {version}, the head is {head}"
    )]
    SourceSuperseded {
        /// The source's stable id.
        source_id: String,
        /// The version the post rests on.
        version: String,
        /// The head now.
        head: String,
    },
    /// The guarded statement matched nothing, but no single condition explains it (a concurrent change).
    #[error("authorization lost a race with a concurrent change; nothing was authorized")]
    Conflict,
}

impl AuthorizeRefusal {
    /// For a refusal that means "not yet" (pacing, a busy platform, a leased account): the earliest time worth
    /// trying again. Nothing was sent, so the intent may wait for it pending.
    pub fn retry_at(&self, now: i64) -> Option<i64> {
        match self {
            AuthorizeRefusal::Paced { until, .. } => Some(*until),
            AuthorizeRefusal::RateInterval {
                since_ms,
                min_interval_ms,
                ..
            } => Some(now + (min_interval_ms - since_ms).max(0)),
            AuthorizeRefusal::PlatformBusy { .. } => Some(now + 2_000),
            AuthorizeRefusal::AccountLeased { expires_at, .. } => Some(*expires_at),
            _ => None,
        }
    }

    /// A short name for metrics and logs.
    pub fn reason(&self) -> &'static str {
        match self {
            AuthorizeRefusal::NotPending { .. } => "not_pending",
            AuthorizeRefusal::StaleGeneration { .. } => "stale_generation",
            AuthorizeRefusal::LeaseExpired => "lease_expired",
            AuthorizeRefusal::StaleEpoch { .. } => "stale_epoch",
            AuthorizeRefusal::KillSwitch { .. } => "kill_switch",
            AuthorizeRefusal::Revoked { .. } => "revoked",
            AuthorizeRefusal::CredentialChanged { .. } => "credential_changed",
            AuthorizeRefusal::ContractChanged { .. } => "contract_changed",
            AuthorizeRefusal::RateInterval { .. } => "rate_interval",
            AuthorizeRefusal::Paced { .. } => "paced",
            AuthorizeRefusal::PlatformBusy { .. } => "platform_busy",
            AuthorizeRefusal::AccountLeased { .. } => "account_leased",
            AuthorizeRefusal::DuplicateText { .. } => "duplicate_text",
            AuthorizeRefusal::SourceSuperseded { .. } => "source_superseded",
            AuthorizeRefusal::Conflict => "conflict",
        }
    }
}

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No intent has this delivery key.
    #[error("no intent with key {0}")]
    UnknownKey(String),
    /// The account is not registered.
    #[error("unknown account {0:?}: add it with `oncepost accounts add`")]
    UnknownAccount(String),
    /// The account already exists.
    #[error("account {0:?} already exists")]
    AccountExists(String),
    /// The operation does not apply to the intent's current state (the state table forbids it).
    #[error("{operation} is not allowed: the intent is {actual}")]
    WrongState {
        /// What was attempted.
        operation: &'static str,
        /// The state the intent is in.
        actual: Status,
    },
    /// Another worker holds a live claim or lease on the intent (executor election lost).
    #[error("another worker ({owner}) holds the intent until {expires_at} ms")]
    LeaseHeld {
        /// The holder.
        owner: String,
        /// When its lease ends.
        expires_at: i64,
    },
    /// A write carried a fence (generation, epoch, attempt) that is no longer current: a late or stale worker.
    #[error(
        "fenced: the intent is {actual} at generation {current_generation}; this worker holds generation {held}"
    )]
    Fenced {
        /// The intent's state now.
        actual: Status,
        /// The generation the worker holds.
        held: i64,
        /// The generation now.
        current_generation: i64,
    },
    /// The final authorization refused; nothing may be sent.
    #[error("authorization refused: {0}")]
    Refused(#[from] AuthorizeRefusal),
    /// The automatic reconcile lookup already ran once for this intent.
    #[error(
        "reconcile already ran {0} time(s) for this intent; a person may ask again with --again"
    )]
    ReconcileSpent(i64),
    /// The store URL or path is not usable.
    #[error("bad store location {0:?}: {1}")]
    BadLocation(String, String),
    /// The database was written by a newer oncepost.
    #[error(
        "the database schema is at version {found}; this oncepost knows versions up to {known}: upgrade oncepost"
    )]
    SchemaTooNew {
        /// Highest version applied to the database.
        found: i64,
        /// Highest version this binary carries.
        known: i64,
    },
    /// The database is locked by another process for longer than the busy timeout.
    #[error(
        "the database is locked by another process (waited {0} ms); try again, or raise --lock-wait"
    )]
    Locked(u64),
    /// Stored history does not replay through the state table.
    #[error("corrupt history for {key}: {source}")]
    Corrupt {
        /// The intent.
        key: String,
        /// The first illegal step.
        source: IllegalTransition,
    },
    /// The stored state is not where the stored history leads.
    #[error("corrupt intent {key}: history replays to {replayed} but the row says {stored}")]
    StateMismatch {
        /// The intent.
        key: String,
        /// Where the events lead.
        replayed: Status,
        /// What the row says.
        stored: Status,
    },
    /// A stored value could not be read back.
    #[error("stored value unreadable: {0}")]
    Decode(String),
    /// Bad input to an administrative operation.
    #[error("invalid input: {0}")]
    Invalid(String),
    /// Migration failed.
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// Any other database error.
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
}

impl StoreError {
    /// Whether this error says "someone else is moving this intent" (the caller should stop, not fail).
    pub fn is_contended(&self) -> bool {
        matches!(
            self,
            StoreError::LeaseHeld { .. } | StoreError::Fenced { .. } | StoreError::Locked(_)
        )
    }

    /// Whether a write that failed this way may still have committed: the connection broke, the database
    /// went away or the commit's answer was lost (a partition between the worker and the database in the
    /// middle of a transaction). Its outcome is read back, never assumed.
    pub fn outcome_unknown(&self) -> bool {
        matches!(self, StoreError::Db(_) | StoreError::Locked(_))
    }
}
