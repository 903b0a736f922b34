//! Values that cross the store boundary: what callers pass in and what they get back.
use serde::{Deserialize, Serialize};

use super::state::{EventKind, Status};
use crate::identity::{ActionKind, AttemptToken, CanonicalRequest, DeliveryKey};

/// Milliseconds since the Unix epoch. Every time-dependent operation takes one from its caller, so tests
/// control time exactly and the database never consults its own clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The system clock now.
    pub fn now() -> Self {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp(d.as_millis() as i64)
    }

    /// This time plus `ms` milliseconds.
    pub fn plus_ms(self, ms: i64) -> Self {
        Timestamp(self.0.saturating_add(ms))
    }
}

/// Limits the store applies. Defaults are conservative; the CLI can override them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// How long a `begin` claim lasts before authorization (ms). Long enough to open a page and fill it.
    pub claim_lease_ms: i64,
    /// How long an authorized dispatch may take before the sweeper calls it indeterminate (ms).
    pub dispatch_lease_ms: i64,
    /// How long a reconcile lookup may run before the sweeper calls it interrupted and parks the intent
    /// (ms). Must cover the lookup's own bound and the recording of what it saw.
    pub lookup_lease_ms: i64,
    /// Attempts per intent before `begin` parks it instead.
    pub max_attempts: i64,
    /// How long a SQLite writer waits for another process's write lock before reporting "locked" (ms).
    pub lock_wait_ms: u64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            claim_lease_ms: 120_000,
            dispatch_lease_ms: 120_000,
            lookup_lease_ms: 120_000,
            max_attempts: 3,
            lock_wait_ms: 15_000,
        }
    }
}

/// A request to create (or find) an intent.
#[derive(Debug, Clone)]
pub struct NewIntent {
    /// The publishing account (must be registered).
    pub account: String,
    /// The kind of side effect.
    pub action: ActionKind,
    /// The target's stable identity (empty for a post on the account's own feed).
    pub target: String,
    /// The canonical request projection.
    pub request: CanonicalRequest,
    /// The claim the post makes about a source version (captured before), if it rests on one: it is part of
    /// the delivery key, and its id is stored as the intent's `source_ref`.
    pub source: Option<super::IntentClaim>,
}

/// An intent as stored.
#[derive(Debug, Clone, Serialize)]
pub struct Intent {
    /// The delivery key.
    pub key: DeliveryKey,
    /// Its state now.
    pub state: Status,
    /// The publishing account.
    pub account: String,
    /// The account's platform.
    pub platform: String,
    /// The kind of side effect.
    pub action: ActionKind,
    /// The target's identity.
    pub target: String,
    /// The canonical request.
    pub request: CanonicalRequest,
    /// sha256 of the normalized text.
    pub content_hash: String,
    /// The claim this post rests on (a `ClaimId`; see `Store::intent_source`), if it rests on a source.
    pub source_ref: Option<String>,
    /// The consumed key this intent redelivers, if it is a redelivery.
    pub redelivery_of: Option<DeliveryKey>,
    /// The redelivery authorization record (who, why, which key), if any.
    pub redelivery: Option<serde_json::Value>,
    /// The current fencing generation (0 before the first begin).
    pub generation: i64,
    /// The epoch the current claim was made in.
    pub epoch: i64,
    /// Who holds the live claim or lease, if anyone.
    pub lease_owner: Option<String>,
    /// When that claim or lease ends (ms).
    pub lease_expires_at: Option<i64>,
    /// The current attempt's token.
    pub current_attempt: Option<String>,
    /// Attempts minted so far.
    pub attempt_count: i64,
    /// The attempt cap.
    pub max_attempts: i64,
    /// Automatic and requested reconcile lookups recorded so far.
    pub reconcile_count: i64,
    /// While a reconcile lookup runs on an indeterminate intent: when its lease runs out (ms since epoch).
    pub lookup_expires_at: Option<i64>,
    /// The platform's id for the post, once known.
    pub platform_id: Option<String>,
    /// The post's permalink, once known.
    pub permalink: Option<String>,
    /// The platform of the contract this intent is bound to (set by the first publish; for intents from
    /// before the binding existed, the account's platform). Lookups through another platform never touch it.
    pub contract_platform: Option<String>,
    /// The origin (`scheme://host[:port]`) of the base URL it was published at, once bound (None: not recorded).
    pub base_origin: Option<String>,
    /// The contract version (hash) its latest attempt ran with (None: never begun).
    pub contract_version: Option<String>,
    /// The whole base URL it was submitted at (None: never submitted).
    pub base_url: Option<String>,
    /// The contract version it was submitted with (kept in the store; None: never submitted).
    pub queued_contract: Option<String>,
    /// Queued: the earliest time (ms) a worker may try it (None: not queued; a synchronous publish owns it).
    pub run_after: Option<i64>,
    /// Created (ms).
    pub created_at: i64,
    /// Last changed (ms).
    pub updated_at: i64,
}

/// What happens next to an intent, and which command does it: printed by `redeliver` and shown on the review
/// page, so a person is never told that something will happen by itself when nothing will.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NextStep {
    /// One or two sentences for a person.
    pub says: String,
    /// The command that moves it on, if a command does (CONTRACT and URL stand for the platform's contract file
    /// and base URL, given when the intent records neither: see [`Intent::records_where_it_goes`]).
    pub command: Option<String>,
}

impl Intent {
    /// Whether the intent records the contract and base URL it goes out with (it was submitted, or an attempt
    /// ran): then `publish --key` and `reconcile --key` need neither flag.
    pub fn records_where_it_goes(&self) -> bool {
        (self.queued_contract.is_some() || self.contract_version.is_some())
            && (self.base_url.is_some() || self.base_origin.is_some())
    }

    /// What moves this intent on from its current state. A queued pending intent is sent by a running
    /// `worker`; any other pending intent only by `publish --key`.
    pub fn next_step(&self) -> NextStep {
        let k = self.key.as_str();
        let p = &self.platform;
        let recorded = self.records_where_it_goes();
        let flags = if recorded {
            ""
        } else {
            " --contract CONTRACT --base-url URL"
        };
        let publish = format!("oncepost publish --key {k}{flags}");
        let from = if recorded {
            "the contract and base URL it recorded".to_string()
        } else {
            format!("the contract and base URL of platform {p}")
        };
        let (says, command) = match (self.state, self.run_after) {
            (Status::Pending, Some(at)) => (
                format!(
                    "Queued; nothing has been sent. A running `oncepost worker` with this store sends it once, \
                     from {}, with {from}.",
                    crate::utc::rfc3339(at)
                ),
                Some("oncepost worker".to_string()),
            ),
            (Status::Pending, None) => (
                format!(
                    "Nothing has been sent. It is sent once, when someone runs the command below with {from} \
                     (the account, text and fields come from the intent); no worker does it by itself."
                ),
                Some(publish),
            ),
            (Status::Authorized, _) => (
                "A publish is sending it now. Its worker settles it; if that worker stopped, `oncepost sweep` \
                 makes it indeterminate once the dispatch lease runs out. Nothing re-sends it."
                    .to_string(),
                None,
            ),
            (Status::Published, _) => (
                "Published; nothing more happens. For one more copy a person authorizes a redelivery."
                    .to_string(),
                Some(format!(
                    "oncepost redeliver {k} --by NAME --reason WHY"
                )),
            ),
            (Status::Failed, queued) => (
                format!(
                    "Not sent (proven). It is sent only if someone re-opens it{}.",
                    if queued.is_some() {
                        " (`retry`); it is queued, so a running `oncepost worker` then sends it"
                    } else {
                        " and publishes it again"
                    }
                ),
                Some(if queued.is_some() {
                    format!("oncepost retry {k}")
                } else {
                    format!("oncepost retry {k} && {publish}")
                }),
            ),
            (Status::Indeterminate, _) => (
                "Nobody knows whether it was sent; it is never re-sent. A lookup on the platform decides \
                 (a running `oncepost worker` runs one automatically after the propagation window)."
                    .to_string(),
                Some(format!("oncepost reconcile --key {k}{flags}")),
            ),
            (Status::Parked, _) => (
                "A person decides, on the review page: found it (published), or authorize a redelivery."
                    .to_string(),
                Some("oncepost review".to_string()),
            ),
        };
        NextStep { says, command }
    }
}

/// The result of `create_intent`.
#[derive(Debug, Clone, Serialize)]
pub struct Created {
    /// The intent (new or existing).
    pub intent: Intent,
    /// False when the key already existed: nothing was written.
    pub created: bool,
}

/// The fencing identity of one attempt: every write a worker makes under its claim carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fence {
    /// The intent.
    pub key: DeliveryKey,
    /// The attempt's token.
    pub attempt: AttemptToken,
    /// The generation issued at begin (from the sequence / counter).
    pub generation: i64,
    /// The store epoch at begin.
    pub epoch: i64,
    /// The worker that holds the claim.
    pub owner: String,
}

/// What `begin` won: a live pre-authorization claim and one new attempt.
#[derive(Debug, Clone, Serialize)]
pub struct Claim {
    /// The fence for every later write.
    pub fence: Fence,
    /// When the claim ends (ms).
    pub lease_expires_at: i64,
    /// The attempt's ordinal within the intent (1, 2, ...).
    pub ordinal: i64,
    /// The platform contract hash the attempt was begun with.
    pub contract_hash: String,
    /// The account's credential version at begin.
    pub credential_version: i64,
    /// The account lease the publish holds (set by the publish after `begin`). Authorization refuses a claim
    /// without the account's live lease while another holder has one.
    pub account_lease: Option<AccountLease>,
}

/// An account's lease: its login is used by this holder (one publish, on one host) until `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccountLease {
    /// The account.
    pub account: String,
    /// Who holds it (the publish's owner id, `<hostname>:<pid>:<uuid>`).
    pub holder: String,
    /// Its fence: a generation from the fencing counter, new for each holder.
    pub fence: i64,
    /// Until when (ms).
    pub expires_at: i64,
}

/// An account's pacing beyond the minimum interval (`None` in a setter: leave as it is).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pacing {
    /// At most this many dispatches in any rolling hour (`Some(None)`: no cap).
    pub hourly_cap: Option<Option<i64>>,
    /// At most this many dispatches in any rolling day (`Some(None)`: no cap).
    pub daily_cap: Option<Option<i64>>,
    /// A random extra wait after each dispatch, 0 to this many ms.
    pub jitter_ms: Option<i64>,
}

/// The outcome of `begin`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Begun {
    /// The caller is the elected executor; proceed to compose, then authorize.
    Claimed(Claim),
    /// The attempt cap was reached: the intent was parked instead; proceed with nothing.
    Parked {
        /// Attempts made.
        attempts: i64,
    },
}

/// The only value that allows pressing a publish control. Returned by `authorize_dispatch`; not `Clone`, not
/// constructible outside the store, consumed by the sender, which gets the [`Fence`] back to settle with.
#[derive(Debug)]
pub struct DispatchAuthorization {
    fence: Fence,
    lease_expires_at: i64,
}

impl DispatchAuthorization {
    pub(crate) fn new(fence: Fence, lease_expires_at: i64) -> Self {
        DispatchAuthorization {
            fence,
            lease_expires_at,
        }
    }

    /// Read the fence without consuming the authorization (for logging and the wire-hash record).
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// When the dispatch lease ends (ms): after it, sweep calls the outcome indeterminate.
    pub fn lease_expires_at(&self) -> i64 {
        self.lease_expires_at
    }

    /// Consume the authorization: the sender calls this exactly once, at the moment it dispatches.
    pub fn consume(self) -> Fence {
        self.fence
    }
}

/// How a worker settles its authorized attempt.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Settlement {
    /// Read back and matched.
    Published {
        /// The platform's id.
        platform_id: Option<String>,
        /// The permalink.
        permalink: Option<String>,
        /// The read-back verdict and anything else worth keeping.
        verdict: serde_json::Value,
    },
    /// Definitive not-sent, with the proof.
    Failed {
        /// Why it is known that nothing left.
        proof: serde_json::Value,
    },
    /// Nobody can know.
    Indeterminate {
        /// What happened.
        reason: String,
        /// Details (status codes, errors, evidence links).
        details: serde_json::Value,
    },
}

/// What the sweeper did in one pass.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct SweepReport {
    /// Authorized intents whose lease expired, now indeterminate.
    pub made_indeterminate: Vec<DeliveryKey>,
    /// Expired pre-authorization claims released (intent stays pending).
    pub claims_released: Vec<DeliveryKey>,
    /// Indeterminate intents whose reconcile lookup was interrupted (its lease ran out with nothing
    /// recorded), now parked: the automatic lookup is spent, a person decides.
    pub lookups_interrupted: Vec<DeliveryKey>,
}

/// A recorded reconcile lookup: the lookup may run only after this exists.
#[derive(Debug, Clone, Serialize)]
pub struct ReconcileTicket {
    /// The intent.
    pub key: DeliveryKey,
    /// Which lookup this is (1 = the automatic one).
    pub number: i64,
    /// Who asked.
    pub actor: String,
}

/// What a reconcile lookup saw.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum ReconcileOutcome {
    /// The post is on the platform.
    Found {
        /// Its id.
        platform_id: Option<String>,
        /// Its permalink.
        permalink: Option<String>,
        /// Evidence of the lookup.
        evidence: serde_json::Value,
    },
    /// The lookup ran and found nothing (this proves nothing about sending).
    NotFound {
        /// Evidence of the lookup.
        evidence: serde_json::Value,
    },
    /// The lookup could not run.
    Unavailable {
        /// Why.
        error: String,
    },
}

/// What to do when a lookup does not find the post.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum NotFoundPolicy {
    /// Leave it indeterminate.
    Stay,
    /// Park it for a person.
    Park,
}

/// One row of an intent's history.
#[derive(Debug, Clone, Serialize)]
pub struct EventRecord {
    /// Order of the event in the whole store.
    pub id: i64,
    /// When (ms).
    pub at: i64,
    /// What happened.
    pub kind: EventKind,
    /// State before.
    pub from: Option<Status>,
    /// State after.
    pub to: Status,
    /// Who (worker id, `sweeper`, a person's name).
    pub actor: String,
    /// Why, in words.
    pub reason: Option<String>,
    /// Structured details.
    pub details: serde_json::Value,
    /// The attempt involved, if any.
    pub attempt: Option<String>,
    /// The generation involved, if any.
    pub generation: Option<i64>,
}

/// One attempt row.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct AttemptRecord {
    /// The random token.
    pub token: String,
    /// 1, 2, ...
    pub ordinal: i64,
    /// The worker.
    pub owner: String,
    /// Fencing generation.
    pub generation: i64,
    /// Epoch.
    pub epoch: i64,
    /// Credential version at begin.
    pub credential_version: i64,
    /// Contract hash at begin.
    pub contract_hash: String,
    /// When (ms).
    pub created_at: i64,
}

/// An intent with its whole history, verified by replay.
#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    /// The intent.
    pub intent: Intent,
    /// Its attempts, in order.
    pub attempts: Vec<AttemptRecord>,
    /// Its events, in order.
    pub events: Vec<EventRecord>,
}

/// A registered account.
#[derive(Debug, Clone, Serialize)]
pub struct Account {
    /// Name.
    pub name: String,
    /// Platform.
    pub platform: String,
    /// Credential version (bumped by rotate).
    pub credential_version: i64,
    /// Revoked?
    pub revoked: bool,
    /// Minimum interval between publishes (ms).
    pub min_interval_ms: i64,
    /// Duplicate-text window (ms).
    pub dup_window_ms: i64,
    /// Last authorized dispatch (ms).
    pub last_dispatch_at: Option<i64>,
    /// At most this many dispatches in any rolling hour (None: no cap).
    pub hourly_cap: Option<i64>,
    /// At most this many dispatches in any rolling day (None: no cap).
    pub daily_cap: Option<i64>,
    /// A random extra wait after each dispatch, 0 to this many ms, on top of the minimum interval.
    pub jitter_ms: i64,
    /// The earliest next dispatch the interval and jitter allow (ms; None: no dispatch yet).
    pub next_dispatch_at: Option<i64>,
    /// The account's own handle on its platform, as items show their author (None: not recorded, so a post
    /// found by search can only be a lead for a person).
    pub handle: Option<String>,
}

/// Settings for a new account.
#[derive(Debug, Clone)]
pub struct NewAccount {
    /// Name.
    pub name: String,
    /// Platform (the contract's platform name).
    pub platform: String,
    /// Minimum interval between publishes (ms).
    pub min_interval_ms: i64,
    /// Duplicate-text window (ms).
    pub dup_window_ms: i64,
}

/// Where a kill switch applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "scope", content = "name", rename_all = "snake_case")]
pub enum SwitchScope {
    /// Everything.
    Global,
    /// One platform.
    Platform(String),
    /// One account.
    Account(String),
}

impl SwitchScope {
    pub(crate) fn parts(&self) -> (&'static str, &str) {
        match self {
            SwitchScope::Global => ("global", ""),
            SwitchScope::Platform(p) => ("platform", p),
            SwitchScope::Account(a) => ("account", a),
        }
    }
}

/// A kill switch's current position.
#[derive(Debug, Clone, Serialize)]
pub struct Switch {
    /// global, platform or account.
    pub scope: String,
    /// Platform or account name (empty for global).
    pub name: String,
    /// Engaged (publishing stopped)?
    pub engaged: bool,
    /// Last changed (ms).
    pub changed_at: i64,
    /// By whom.
    pub changed_by: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intent(state: Status) -> Intent {
        Intent {
            key: DeliveryKey::parse(&"ab".repeat(32)).expect("a key"),
            state,
            account: "alice".into(),
            platform: "fixture".into(),
            action: ActionKind::Post,
            target: String::new(),
            request: CanonicalRequest::default(),
            content_hash: String::new(),
            source_ref: None,
            redelivery_of: None,
            redelivery: None,
            generation: 0,
            epoch: 0,
            lease_owner: None,
            lease_expires_at: None,
            current_attempt: None,
            attempt_count: 0,
            max_attempts: 5,
            reconcile_count: 0,
            lookup_expires_at: None,
            platform_id: None,
            permalink: None,
            contract_platform: None,
            base_origin: None,
            contract_version: None,
            base_url: None,
            queued_contract: None,
            run_after: None,
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn the_next_step_names_flags_only_where_nothing_is_recorded_and_the_worker_for_a_queued_intent()
    {
        let k = "ab".repeat(32);
        let fresh = intent(Status::Pending);
        assert_eq!(
            fresh.next_step().command,
            Some(format!(
                "oncepost publish --key {k} --contract CONTRACT --base-url URL"
            ))
        );
        assert!(
            fresh
                .next_step()
                .says
                .contains("no worker does it by itself")
        );

        let mut queued = intent(Status::Pending);
        queued.queued_contract = Some("c".repeat(64));
        queued.base_url = Some("http://127.0.0.1:1".into());
        queued.run_after = Some(0);
        let step = queued.next_step();
        assert_eq!(step.command.as_deref(), Some("oncepost worker"));
        assert!(
            step.says.starts_with("Queued; nothing has been sent"),
            "{}",
            step.says
        );

        let mut ran = intent(Status::Indeterminate);
        ran.contract_version = Some("c".repeat(64));
        ran.base_origin = Some("http://127.0.0.1:1".into());
        assert_eq!(
            ran.next_step().command,
            Some(format!("oncepost reconcile --key {k}"))
        );
        ran.state = Status::Failed;
        assert_eq!(
            ran.next_step().command,
            Some(format!("oncepost retry {k} && oncepost publish --key {k}"))
        );
        ran.run_after = Some(0);
        assert_eq!(ran.next_step().command, Some(format!("oncepost retry {k}")));
    }
}
