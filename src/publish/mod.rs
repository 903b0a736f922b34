//! The publish flow: an agent asks for a post, and it goes out at most once, verified by reading it back.
//!
//! ```text
//!  create_intent ──(terminal / in flight: answer, touch nothing)
//!       │
//!  look before write (search; found: published, nothing pressed)
//!       │
//!  begin (claim + attempt) → compose page: steps, fill, strict checks → evidence (screenshot, DOM)
//!       │
//!  authorize_dispatch (the final checkpoint; nothing slow after it)
//!       │
//!  PublishControl::press(auth) → takeover: paused → record_request_sent (hook) → sent ONCE → page fulfilled
//!       │
//!  status → success signal → read-back in a fresh page → settle::land → settle (+ park on mismatch)
//! ```
//!
//! Every outcome goes through [`settle::land`], the table of docs/states.md. Errors before authorization
//! settle failed (nothing can have left: the write guard fails every write and nothing was pressed); after
//! authorization they settle indeterminate, never failed.
mod bind;
pub mod set_aside;
pub mod settle;
pub mod warm;

pub use warm::{WarmBrowsers, WarmLimits};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};
use tracing::Instrument;

use crate::browser::{
    self, BrowserError, BrowserSession, ComposePage, DispatchOutcome, LaunchOptions, ReadVerdict,
    TransportOptions,
};
use crate::contract::{Contract, ContractError, PlanError, PublishPlan};
use crate::evidence::{EvidenceError, EvidenceStore, Item};
use crate::failpoint::{self, FailPoint};
use crate::identity::{ActionKind, CanonicalRequest, DeliveryKey};
use crate::store::{
    AccountLease, Begun, Claim, EventKind, NewIntent, Settlement, Status, Store, StoreError,
    Timestamp,
};
use settle::{Landing, Verdict};

/// What to publish, where, and how.
#[derive(Debug, Clone)]
pub struct PublishRequest {
    /// The contract file (re-read right before authorization).
    pub contract_path: PathBuf,
    /// The publishing account (registered in the store).
    pub account: String,
    /// The target's identity (empty: the account's own feed).
    pub target: String,
    /// The post text (goes into the contract's `text` field).
    pub text: String,
    /// Other fields, by contract field name.
    pub fields: BTreeMap<String, String>,
    /// The platform's base URL.
    pub base_url: String,
    /// The data dir (profiles, evidence).
    pub data_dir: PathBuf,
    /// The worker id (`<hostname>:<pid>:<uuid>`).
    pub owner: String,
    /// A URL opened before the compose page (a login link), if any.
    pub login_url: Option<String>,
    /// Bounds and switches.
    pub options: PublishOptions,
    /// The source the post rests on, if any (issue 14): a fresh capture, or what an existing intent recorded.
    pub source: Option<RequestSource>,
}

/// The source a post rests on, as a publish asks for it.
#[derive(Debug, Clone)]
pub struct RequestSource {
    /// The claim (source version + content) the post makes; part of its delivery key.
    pub claim: crate::store::IntentClaim,
    /// The body captured for this request (None: the intent's recorded claim, nothing captured now).
    pub capture: Option<crate::source::SourceBody>,
}

impl RequestSource {
    /// A fresh capture with the claim `claim` (by default the post text) about it.
    pub fn captured(body: crate::source::SourceBody, claim: &str) -> RequestSource {
        let version = body.version();
        RequestSource {
            claim: crate::store::IntentClaim {
                claim: crate::identity::ClaimId::of(&version, claim),
                version,
                content: crate::identity::normalize_text(claim),
            },
            capture: Some(body),
        }
    }
}

/// Bounds and switches of one publish.
#[derive(Debug, Clone)]
pub struct PublishOptions {
    /// Look for the exact text on the platform before writing.
    pub look_before_write: bool,
    /// Bound on waiting for the success signal after the response.
    pub success_timeout: Duration,
    /// Bound on each navigation.
    pub navigation_timeout: Duration,
    /// Bound on each step's wait for its target.
    pub step_timeout: Duration,
    /// Bound on each CDP call.
    pub call_timeout: Duration,
    /// Create-request transport bounds (the mode comes from the contract).
    pub transport: TransportOptions,
    /// How long to wait for the account's browser profile when another publish on this host uses it.
    pub profile_wait: Duration,
}

impl Default for PublishOptions {
    fn default() -> Self {
        PublishOptions {
            look_before_write: true,
            success_timeout: Duration::from_secs(10),
            navigation_timeout: Duration::from_secs(20),
            step_timeout: Duration::from_secs(10),
            call_timeout: Duration::from_secs(10),
            transport: TransportOptions::default(),
            profile_wait: Duration::from_secs(60),
        }
    }
}

/// One step of this run, for the progress output and the JSON.
#[derive(Debug, Clone, Serialize)]
pub struct StepTime {
    /// What.
    pub step: String,
    /// Milliseconds since the run started when it finished.
    pub at_ms: u64,
    /// How long it took.
    pub took_ms: u64,
}

/// The answer of a publish (also for a rerun, which touches nothing).
#[derive(Debug, Clone, Serialize)]
pub struct PublishOutcome {
    /// The delivery key.
    pub key: String,
    /// The intent's state now.
    pub state: Status,
    /// The attempt token of this run's attempt, or the intent's current one.
    pub attempt: Option<String>,
    /// Platform id.
    pub platform_id: Option<String>,
    /// Permalink.
    pub permalink: Option<String>,
    /// Whether this run pressed publish.
    pub pressed: bool,
    /// Whether this run created the intent.
    pub created: bool,
    /// Evidence files of the intent (paths relative to the data dir).
    pub evidence: Vec<Item>,
    /// The intent's history (from the store).
    pub timeline: Vec<Value>,
    /// This run's steps with their durations.
    pub steps: Vec<StepTime>,
    /// One line for a person.
    pub summary: String,
    /// Pending because the authorization said "not yet" (the account's pacing, a busy platform, the account
    /// leased elsewhere), or failed (queued again) because the platform answered "try later": the earliest
    /// time worth trying again (ms). Nothing was made.
    pub not_before: Option<i64>,
    /// What the post rests on (its claim, source version and the source's head now), if anything.
    pub source: Option<crate::store::IntentSource>,
    /// What this run's capture of the source did (None: nothing captured).
    pub capture: Option<crate::store::Captured>,
    /// This run's send showed that the account's login has ended (`settle::signed_out_sign`): what showed
    /// it. A worker sets the account aside on its host (`set_aside.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signed_out: Option<String>,
}

/// Why a publish could not run to an outcome.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The contract could not be loaded.
    #[error(transparent)]
    Contract(#[from] ContractError),
    /// The plan could not be built.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Bad input (unknown field, empty text).
    #[error("{0}")]
    BadInput(String),
    /// The store refused or failed (LeaseHeld: another worker is on it).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The browser failed before anything was authorized (the intent stays as it was or settles failed).
    #[error(transparent)]
    Browser(#[from] BrowserError),
    /// Evidence could not be written.
    #[error(transparent)]
    Evidence(#[from] EvidenceError),
    /// An alarm could not be recorded and the intent could not be parked for it either (the store is
    /// unreachable, or the intent is published, which nothing parks): the caller reports it (non-zero exit).
    #[error(
        "an alarm could not be recorded ({what}): {source}; and the intent could not be parked for it: {park}"
    )]
    AlarmNotRecorded {
        /// The alarm.
        what: String,
        /// Why the store did not record it.
        source: StoreError,
        /// Why the intent was not parked.
        park: String,
    },
}

/// Progress reporting: one call per finished step.
pub type Progress<'a> = &'a (dyn Fn(&StepTime) + Send + Sync);

struct Clock<'a> {
    t0: Instant,
    last: Instant,
    steps: Vec<StepTime>,
    progress: Progress<'a>,
}

impl Clock<'_> {
    fn step(&mut self, what: impl Into<String>) {
        let now = Instant::now();
        let s = StepTime {
            step: what.into(),
            at_ms: (now - self.t0).as_millis() as u64,
            took_ms: (now - self.last).as_millis() as u64,
        };
        (self.progress)(&s);
        tracing::info!(step = %s.step, took_ms = s.took_ms, "publish step");
        self.steps.push(s);
        self.last = now;
    }
}

/// The owner id for `begin`: `<hostname>:<pid>:<uuid>`.
pub fn owner_id() -> String {
    // uname(2)'s nodename is what gethostname(2) returns on Linux (glibc implements one with the other).
    let uname = rustix::system::uname();
    let host = uname.nodename().to_string_lossy().into_owned();
    format!(
        "{host}:{}:{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    )
}

/// The intent a request maps to (validated against the contract's fields), without touching the store.
pub fn new_intent(req: &PublishRequest, contract: &Contract) -> Result<NewIntent, PublishError> {
    if req.text.trim().is_empty() {
        return Err(PublishError::BadInput("the post text is empty".into()));
    }
    let body = contract.body_field();
    if !contract.compose.fields.iter().any(|f| f.name == body) {
        return Err(PublishError::BadInput(format!(
            "the contract has no field named {body:?} for the post text (compose.body_field)"
        )));
    }
    for k in req.fields.keys() {
        if k == body {
            return Err(PublishError::BadInput(format!(
                "give the text with --text/--text-file, not --field {body}=... ({body:?} is the contract's body field)"
            )));
        }
        if contract.readback.marker_field.as_ref() == Some(k) {
            return Err(PublishError::BadInput(format!(
                "--field {k}: oncepost fills {k:?} with the intent's marker (readback.marker_field); give no value"
            )));
        }
        if !contract.compose.fields.iter().any(|f| &f.name == k) {
            return Err(PublishError::BadInput(format!(
                "--field {k}: the contract has no field {k:?} (fields: {})",
                contract
                    .compose
                    .fields
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let missing = contract.missing_value_fields(&req.fields);
    if !missing.is_empty() {
        return Err(PublishError::BadInput(format!(
            "the contract needs {}: give them with --field (they name the page to post on, or the choice a step picks)",
            missing
                .iter()
                .map(|f| format!("--field {f}=..."))
                .collect::<Vec<_>>()
                .join(" ")
        )));
    }
    Ok(NewIntent {
        account: req.account.clone(),
        action: ActionKind::Post,
        target: req.target.clone(),
        request: CanonicalRequest::new(Some(&req.text), &req.fields),
        source: req.source.as_ref().map(|s| s.claim.clone()),
    })
}

/// The alarms of one run (side effects the guard or the door saw, ids and links a read-back refused), each
/// recorded in the intent's history as it is seen. An alarm the store does not take is never dropped: the
/// first such failure is kept, and the run parks the intent for it as soon as the state allows (see
/// [`Alarms::park_if_lost`]). Only when parking fails too (the store is unreachable, or the intent is
/// published, which nothing parks) is it an error, [`PublishError::AlarmNotRecorded`], which the CLI reports
/// with a non-zero exit.
#[derive(Debug, Default)]
struct Alarms {
    lost: Option<Lost>,
}

/// The first alarm the store did not take.
#[derive(Debug)]
struct Lost {
    what: String,
    error: StoreError,
}

impl Lost {
    /// Why the intent is parked for it.
    fn why(&self) -> String {
        format!(
            "an alarm could not be recorded ({}: {})",
            self.what, self.error
        )
    }

    /// The error when the intent could not be parked for it (`park` says why not).
    fn unparked(self, park: String) -> PublishError {
        PublishError::AlarmNotRecorded {
            what: self.what,
            source: self.error,
            park,
        }
    }
}

impl Alarms {
    /// Record one alarm (`kind` is `SideEffectAlarm`, or `Evidence` for a read-back's refused value).
    async fn record(
        &mut self,
        store: &Store,
        key: &DeliveryKey,
        kind: EventKind,
        actor: &str,
        reason: &str,
        details: Value,
    ) {
        if let Err(e) = store
            .note(key, kind, actor, reason, details, Timestamp::now())
            .await
        {
            tracing::warn!(alarm = reason, error = %e, "an alarm could not be recorded");
            if self.lost.is_none() {
                self.lost = Some(Lost {
                    what: reason.to_string(),
                    error: e,
                });
            }
        }
    }

    /// Record each refused id or link of a read-back as an alarm (an evidence event).
    async fn readback(
        &mut self,
        store: &Store,
        key: &DeliveryKey,
        actor: &str,
        rb: &browser::Readback,
    ) {
        for alarm in &rb.alarms {
            self.record(
                store,
                key,
                EventKind::Evidence,
                actor,
                &format!("alarm: {}", browser::readback::ALARM_REASON),
                json!({ "alarm": alarm, "lookup": rb.url }),
            )
            .await;
        }
    }

    /// When an alarm was lost, park the intent for it (from pending, failed or indeterminate) and say why;
    /// when it cannot be parked, the error (see [`Alarms`]). Call once the intent has landed.
    async fn park_if_lost(
        self,
        store: &Store,
        key: &DeliveryKey,
        actor: &str,
    ) -> Result<Option<String>, PublishError> {
        let Some(lost) = self.lost else {
            return Ok(None);
        };
        let why = lost.why();
        match store
            .park(
                key,
                actor,
                &format!("side_effect_alarm: {why}"),
                Timestamp::now(),
            )
            .await
        {
            Ok(_) => Ok(Some(why)),
            Err(e) => Err(lost.unparked(e.to_string())),
        }
    }
}

/// How long an account lease lasts without renewal. A publish takes it before its browser starts, renews it
/// every third of this while it runs and right before authorization, and gives it back when the browser is
/// closed; a host that dies holds its accounts for at most this long.
pub const ACCOUNT_LEASE_MS: i64 = 30_000;

/// Take the account's lease for this publish, waiting (bounded by the profile wait) while another holder's
/// lease is live; still held then: `LeaseHeld` (exit 13), nothing begun.
async fn take_account_lease(
    store: &Store,
    req: &PublishRequest,
    holder: &str,
) -> Result<AccountLease, PublishError> {
    let deadline = Instant::now() + req.options.profile_wait;
    loop {
        match store
            .acquire_account_lease(&req.account, holder, ACCOUNT_LEASE_MS, Timestamp::now())
            .await
        {
            Ok(lease) => return Ok(lease),
            Err(StoreError::LeaseHeld { .. }) => {
                // Held by a process of this machine that is gone (killed, crashed): taken over at once
                // rather than after its expiry.
                if let Some(held) = store.account_lease(&req.account, Timestamp::now()).await?
                    && holder_is_gone(&held.holder)
                    && let Ok(lease) = store
                        .take_over_account_lease(&held, holder, ACCOUNT_LEASE_MS, Timestamp::now())
                        .await
                {
                    return Ok(lease);
                }
                if Instant::now() >= deadline {
                    return Err(StoreError::LeaseHeld {
                        owner: format!("another publish, on account {}'s lease", req.account),
                        expires_at: 0,
                    }
                    .into());
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// The account-lease holder of a publish: its owner id and, after `@`, where its pid means something (a hash
/// of the kernel's boot id and the pid namespace), so that a holder can be known to be gone only by a process
/// that sees the same pids: never by another machine, container or boot that happens to share a hostname.
fn lease_holder(owner: &str) -> String {
    format!("{owner}@{}", pid_scope())
}

/// A short hash of this kernel boot's id and this process's pid namespace; `unknown` where either cannot be
/// read (then no holder is ever taken for gone: its lease runs out instead).
fn pid_scope() -> String {
    use sha2::{Digest, Sha256};
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id");
    let ns = std::fs::read_link("/proc/self/ns/pid");
    match (boot, ns) {
        (Ok(boot), Ok(ns)) => {
            let mut h = Sha256::new();
            h.update(boot.trim().as_bytes());
            h.update(b"\0");
            h.update(ns.to_string_lossy().as_bytes());
            hex::encode(&h.finalize()[..8])
        }
        _ => "unknown".to_string(),
    }
}

/// Whether a lease holder (`<hostname>:<pid>:<uuid>@<scope>`, see [`lease_holder`]) is a process that no
/// longer exists, as seen from here: same hostname, same boot and pid namespace, and no such pid. Anything
/// else (another machine or container, an unreadable id, a live process) is not known to be gone.
fn holder_is_gone(holder: &str) -> bool {
    let Some((owner, scope)) = holder.rsplit_once('@') else {
        return false;
    };
    if scope == "unknown" || scope != pid_scope() {
        return false;
    }
    let mut parts = owner.splitn(3, ':');
    let (Some(host), Some(pid), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let uname = rustix::system::uname();
    if host != uname.nodename().to_string_lossy() {
        return false;
    }
    let Some(pid) = pid
        .parse::<i32>()
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    // kill(pid, 0): ESRCH means no such process (a zombie not yet reaped still counts as present).
    matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// How long the after-response capture may wait for the page to land (it may be navigating).
const AFTER_RESPONSE_SHOT: Duration = Duration::from_secs(6);

/// What a publish and a submit share before any browser: the contract (kept by version), the plan, the intent
/// (created, or the existing one checked against the request), its binding recorded or refused.
struct PreparedIntent {
    contract: Contract,
    plan: PublishPlan,
    created: crate::store::Created,
    /// The request as this run uses it (a redelivery skips look-before-write).
    req: PublishRequest,
    /// What capturing the request's source did, if it carried a body.
    capture: Option<crate::store::Captured>,
}

async fn prepare_intent(
    req: &PublishRequest,
    existing: Option<&DeliveryKey>,
    store: &Store,
) -> Result<PreparedIntent, PublishError> {
    let (contract, contract_source) = Contract::load_with_source(&req.contract_path)?;
    let mut values = req.fields.clone();
    values.insert(contract.body_field().to_string(), req.text.clone());
    // Built before the intent exists, so that a contract that cannot make a plan creates nothing.
    let mut plan = contract.publish_plan_for(&req.base_url, &values)?;
    let binding = contract.binding(&req.base_url)?;
    let new = new_intent(req, &contract)?;
    let account = bind::account_for(store, &req.account, &binding, &req.contract_path).await?;
    // Search matches settle only on items showing this account's handle (none recorded: leads only).
    plan.readback.handle = account.handle.clone();
    let mut req = req.clone();
    // The source first: the claim's version must be stored before the intent that rests on it. A capture
    // moves the source's head when the body is new; the fence below (and the authorization) judge the rest.
    let capture = match req.source.as_ref().and_then(|s| s.capture.as_ref()) {
        Some(body) => Some(store.capture_source(body, Timestamp::now()).await?),
        None => None,
    };
    let created = match existing {
        None => store.create_intent(&new, Timestamp::now()).await?,
        Some(key) => {
            let intent = store.intent(key).await?;
            if (
                &intent.account,
                intent.action,
                &intent.target,
                &intent.request,
            ) != (&new.account, new.action, &new.target, &new.request)
            {
                return Err(PublishError::BadInput(format!(
                    "intent {key} records another account, target or request than this publish asks for"
                )));
            }
            let asked = new.source.as_ref().map(|c| c.claim.as_str());
            if intent.source_ref.as_deref() != asked {
                return Err(PublishError::BadInput(format!(
                    "intent {key} rests on {} but this publish asks for {}",
                    intent
                        .source_ref
                        .as_deref()
                        .map_or("no source".to_string(), |c| format!("claim {c}")),
                    asked.map_or("no source".to_string(), |c| format!("claim {c}")),
                )));
            }
            if intent.redelivery_of.is_some() && req.options.look_before_write {
                req.options.look_before_write = false;
            }
            crate::store::Created {
                intent,
                created: false,
            }
        }
    };
    let key = created.intent.key.clone();
    if let Some(field) = &contract.readback.marker_field {
        // The intent's marker goes into its field on every attempt (and is what read-back and reconcile
        // look for): the plan is made again with it, now that the key is known.
        values.insert(field.clone(), key.marker());
        plan = contract.publish_plan_for(&req.base_url, &values)?;
        plan.readback.handle = account.handle.clone();
    }
    plan.readback.mark(&key);
    bind::bind_or_refuse(store, &created.intent, &binding).await?;
    // The contract this run uses, kept by version: later commands on the intent need no file.
    store
        .record_contract_version(
            &contract.hash(),
            &contract.platform,
            &contract_source,
            Timestamp::now(),
        )
        .await?;
    Ok(PreparedIntent {
        contract,
        plan,
        created,
        req,
        capture,
    })
}

/// What `submit` did.
#[derive(Debug, Clone, Serialize)]
pub struct Submitted {
    /// The delivery key.
    pub key: String,
    /// The intent's state now.
    pub state: Status,
    /// Whether this submit created the intent.
    pub created: bool,
    /// Whether it is queued for a worker (false: it already rests, or is in flight, and was left as it is).
    pub queued: bool,
    /// When a worker may run it (ms), if queued.
    pub run_after: Option<i64>,
    /// The contract version it runs with.
    pub contract_version: String,
    /// What the post rests on, if anything.
    pub source: Option<crate::store::IntentSource>,
    /// What this submit's capture of the source did (None: nothing captured).
    pub capture: Option<crate::store::Captured>,
    /// Why it was not queued, when its source already moved on (it is parked).
    pub summary: Option<String>,
}

/// Submit: create (or find) the intent exactly as `publish` would, record the contract version and the whole
/// base URL it runs with, and queue it for a worker from `run_after` on. No browser, nothing sent. An intent
/// that already rests or is in flight is answered as it stands, not queued.
pub async fn submit(
    req: &PublishRequest,
    existing: Option<&DeliveryKey>,
    run_after: Timestamp,
    store: &Store,
) -> Result<Submitted, PublishError> {
    let p = prepare_intent(req, existing, store).await?;
    let key = p.created.intent.key.clone();
    let version = p.contract.hash();
    // A post whose source already moved on is parked now, never queued (a worker would only park it).
    let fenced = fence_source(store, &key, &req.owner).await?;
    let queued = if fenced.is_some() {
        None
    } else {
        match store
            .queue_intent(
                &key,
                &req.base_url,
                &version,
                run_after,
                &req.owner,
                Timestamp::now(),
            )
            .await
        {
            Ok(i) => Some(i),
            Err(StoreError::WrongState { .. }) => None,
            Err(e) => return Err(e.into()),
        }
    };
    let now = store.intent(&key).await?;
    Ok(Submitted {
        key: key.as_str().to_string(),
        state: now.state,
        created: p.created.created,
        queued: queued.is_some(),
        run_after: queued.and_then(|i| i.run_after),
        contract_version: version,
        source: store.intent_source(&key).await?,
        capture: p.capture,
        summary: fenced,
    })
}

/// Publish: see the module docs. `LeaseHeld` comes back as `Err(PublishError::Store(..))` (exit 13).
pub async fn run(
    req: &PublishRequest,
    store: &Store,
    progress: Progress<'_>,
) -> Result<PublishOutcome, PublishError> {
    run_intent(req, None, store, progress, None).await
}

/// Publish an intent that already exists (a redelivery, or a failed one re-opened by `retry`) under its own
/// key. `req` must ask for exactly what the intent recorded (build it from the intent); a pending intent is
/// published like any other, anything else is answered as it stands with nothing pressed. A redelivery skips
/// look-before-write: the copy it would find is the one the person knowingly asked to send again.
pub async fn run_existing(
    req: &PublishRequest,
    key: &DeliveryKey,
    store: &Store,
    progress: Progress<'_>,
) -> Result<PublishOutcome, PublishError> {
    run_intent(req, Some(key), store, progress, None).await
}

/// [`run_existing`] for a worker's queued intent, on the account's warm browser when the worker keeps one
/// (and keeping the browser warm afterwards): see [`warm`].
pub async fn run_queued(
    req: &PublishRequest,
    key: &DeliveryKey,
    store: &Store,
    progress: Progress<'_>,
    warm: &WarmBrowsers,
) -> Result<PublishOutcome, PublishError> {
    run_intent(req, Some(key), store, progress, Some(warm)).await
}

async fn run_intent(
    req: &PublishRequest,
    existing: Option<&DeliveryKey>,
    store: &Store,
    progress: Progress<'_>,
    warm: Option<&WarmBrowsers>,
) -> Result<PublishOutcome, PublishError> {
    let mut clock = Clock {
        t0: Instant::now(),
        last: Instant::now(),
        steps: Vec::new(),
        progress,
    };
    let PreparedIntent {
        contract,
        plan,
        created,
        req,
        capture,
    } = prepare_intent(req, existing, store).await?;
    let req = &req;
    let key = created.intent.key.clone();
    clock.step(if created.created {
        "intent created"
    } else {
        "intent found"
    });
    // Field named `delivery`, not `key`: log lines are redacted and `key=...` reads as a credential there.
    let span = tracing::info_span!("intent", delivery = %key.as_str());
    let outcome = async {
        let it = &created.intent;
        if it.state != Status::Pending {
            return answer(
                store,
                &key,
                None,
                false,
                created.created,
                clock.steps,
                "already settled: nothing done",
            )
            .await;
        }
        // The freshness fence, before anything expensive: a post whose source moved on is parked for a
        // person here, with no lock taken and no browser launched.
        if let Some(why) = fence_source(store, &key, &req.owner).await? {
            return answer(store, &key, None, false, created.created, clock.steps, &why).await;
        }
        if let (Some(owner), Some(until)) = (&it.lease_owner, it.lease_expires_at)
            && until > Timestamp::now().0
        {
            return Err(PublishError::Store(StoreError::LeaseHeld {
                owner: owner.clone(),
                expires_at: until,
            }));
        }
        // A warm browser of this account (a worker's, idle since its last send) is used as it is: it holds
        // the profile lock and the account's lease already. Otherwise a browser is launched for this send.
        let taken = match warm {
            Some(w) => w.take(store, &req.account).await,
            None => None,
        };
        let (held, reused) = match taken {
            Some(mut w) => {
                // Renewed now (the authorization checks it again, before any byte).
                match store
                    .acquire_account_lease(
                        &w.lease.account,
                        &w.lease.holder,
                        ACCOUNT_LEASE_MS,
                        Timestamp::now(),
                    )
                    .await
                {
                    Ok(lease) => w.lease = lease,
                    Err(e) => {
                        w.close(store).await;
                        return Err(e.into());
                    }
                }
                (w, true)
            }
            None => match launch_for(req, store, &key, warm).await? {
                Some(w) => (w, false),
                None => {
                    return answer(
                        store,
                        &key,
                        None,
                        false,
                        created.created,
                        clock.steps,
                        "already settled: nothing done",
                    )
                    .await;
                }
            },
        };
        clock.step(if reused {
            "warm browser taken (no launch)"
        } else {
            "browser launched"
        });
        // Renewed while the publish runs (a lease another host took over is not renewed; the authorization
        // refuses this publish for it).
        let renew = async {
            loop {
                tokio::time::sleep(Duration::from_millis(ACCOUNT_LEASE_MS as u64 / 3)).await;
                if let Err(e) = store
                    .acquire_account_lease(
                        &held.lease.account,
                        &held.lease.holder,
                        ACCOUNT_LEASE_MS,
                        Timestamp::now(),
                    )
                    .await
                {
                    tracing::warn!(error = %e, "the account lease was not renewed");
                }
            }
        };
        let r = tokio::select! {
            r = with_session(
                req,
                store,
                &contract,
                &plan,
                &key,
                &held.session,
                &mut clock,
                &held.lease,
            ) => r,
            never = renew => never,
        };
        match warm {
            Some(pool) => match pool.give_back(store, held).await {
                None => clock.step("browser kept warm for the account's next send"),
                Some(_) => clock.step("browser closed"),
            },
            None => {
                held.close(store).await;
                clock.step("browser closed");
            }
        }
        let (attempt, pressed, summary) = r?;
        answer(
            store,
            &key,
            attempt,
            pressed,
            created.created,
            clock.steps,
            &summary,
        )
        .await
    }
    .instrument(span)
    .await?;
    Ok(PublishOutcome { capture, ..outcome })
}

/// The cold path: take the account's profile lock on this host (bounded by the profile wait), check the intent
/// is still pending (it may have moved while we queued), take the account's lease (a worker's with its pool's
/// holder id) and launch Chromium. `None`: the intent is no longer pending (nothing taken, nothing launched).
async fn launch_for(
    req: &PublishRequest,
    store: &Store,
    key: &DeliveryKey,
    warm: Option<&WarmBrowsers>,
) -> Result<Option<warm::WarmBrowser>, PublishError> {
    let profiles = req.data_dir.join("profiles");
    browser::private_dir(&profiles).map_err(|e| BrowserError::Io {
        what: format!("create {}", profiles.display()),
        source: e,
    })?;
    // One Chromium per profile: queue behind another publish of this account on this host.
    let lock_path = crate::lock::profile_lock_path(&profiles, &req.account)
        .map_err(|e| PublishError::BadInput(e.to_string()))?;
    let Some(profile_lock) =
        crate::lock::FileLock::take_within(&lock_path, req.options.profile_wait)
            .await
            .map_err(|e| BrowserError::Io {
                what: format!("lock {}", lock_path.display()),
                source: e,
            })?
    else {
        return Err(PublishError::Store(StoreError::LeaseHeld {
            owner: format!(
                "another publish using the browser profile of {}",
                req.account
            ),
            expires_at: 0,
        }));
    };
    // The intent may have moved while we queued.
    if store.intent(key).await?.state != Status::Pending {
        return Ok(None);
    }
    // The account's login is used by one host at a time: take its lease before the browser starts (wait
    // for it like for the profile lock, bounded), give it back once the browser is closed.
    let holder = match warm {
        Some(w) => w.holder().to_string(),
        None => lease_holder(&req.owner),
    };
    let lease = take_account_lease(store, req, &holder).await?;
    let mut launch = LaunchOptions::new(
        crate::lock::profile_dir(&profiles, &req.account)
            .map_err(|e| PublishError::BadInput(e.to_string()))?,
    );
    launch.call_timeout = req.options.call_timeout;
    if launch.guard.is_none() {
        let _ = store.release_account_lease(&lease, Timestamp::now()).await;
        // Without the guard, Chromium outlives a crashed worker and resumes the paused create request.
        return Err(PublishError::BadInput(format!(
            "cannot find the Chromium guard (the oncepost binary itself): set {}=/path/to/oncepost",
            "ONCEPOST_GUARD_BIN"
        )));
    }
    match BrowserSession::launch(&launch).await {
        Ok(session) => Ok(Some(warm::WarmBrowser::new(session, lease, profile_lock))),
        Err(e) => {
            let _ = store.release_account_lease(&lease, Timestamp::now()).await;
            Err(e.into())
        }
    }
}

/// What this process's publishes did, for `/metrics`: attempts begun and authorizations refused, by reason.
static ATTEMPTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static REFUSALS: std::sync::Mutex<BTreeMap<&'static str, u64>> =
    std::sync::Mutex::new(BTreeMap::new());

/// Attempts this process began (each `begin` that claimed an intent).
pub fn attempts_begun() -> u64 {
    ATTEMPTS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Authorizations this process was refused, by reason (`AuthorizeRefusal::reason`).
pub fn refusals_by_reason() -> BTreeMap<&'static str, u64> {
    REFUSALS.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

fn count_refusal(r: &crate::store::AuthorizeRefusal) {
    *REFUSALS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(r.reason())
        .or_default() += 1;
}

/// The freshness fence: `Some(why)` when the intent's source version is no longer the head (the intent is
/// parked for it if it was pending), `None` when it rests on no source or on the head.
async fn fence_source(
    store: &Store,
    key: &DeliveryKey,
    owner: &str,
) -> Result<Option<String>, PublishError> {
    Ok(
        match store.source_fence(key, owner, Timestamp::now()).await? {
            crate::store::Freshness::NoSource | crate::store::Freshness::Fresh { .. } => None,
            crate::store::Freshness::Superseded { source, parked } => Some(format!(
                "source {} moved on (this post rests on version {}, the head is {}): {}; nothing launched, \
             nothing sent",
                source.stable_id,
                short(source.version.as_str()),
                source.head.as_ref().map_or("(none)", |h| short(h.as_str())),
                if parked {
                    "parked for a person (submit the post again with the source's current body, or drop it)"
                } else {
                    "left as it is"
                }
            )),
        },
    )
}

/// The first 12 hex digits of an id, for a line a person reads.
fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

#[allow(clippy::too_many_arguments)]
async fn with_session(
    req: &PublishRequest,
    store: &Store,
    contract: &Contract,
    plan: &PublishPlan,
    key: &DeliveryKey,
    session: &BrowserSession,
    clock: &mut Clock<'_>,
    lease: &AccountLease,
) -> Result<(Option<String>, bool, String), PublishError> {
    let ev = EvidenceStore::new(&req.data_dir);
    let text = crate::identity::normalize_text(&req.text);
    let nav = req.options.navigation_timeout;
    let mark = session.write_guard().mark();
    let knock_mark = session.write_guard().door().sinkhole().mark();
    // The writes the contract declares non-publishing (draft autosave, UI-state sync) go out from now on,
    // sent by oncepost: a page whose publish waits for its own syncs could not publish otherwise. Never
    // the create request (the guard refuses that whatever a rule says), and never during a probe.
    let forwarded_mark = session.write_guard().forwarded_mark();
    session
        .write_guard()
        .let_declared_through(plan.probe.non_publish_writes.clone(), plan.create.clone());
    // Requests the contract declares reads by a write method (a GraphQL query) are sent like any read: the
    // look, the compose page and the read-back may all need them.
    session
        .write_guard()
        .let_reads_through(plan.probe.read_requests.clone(), plan.create.clone());
    // A platform that creates by GET: from now on no read matching the create leaves but the press's one.
    session.write_guard().know_create(&plan.create);
    // The live sockets the contract declares (a timeline's updates) are refused like every socket, but a try
    // is not taken for the page publishing another way: before the press it does not stop the publish, after
    // it it is no doubt (nothing went further: the sinkhole forwards nothing). Every publish sets its own.
    session
        .write_guard()
        .door()
        .sinkhole()
        .declare_live_sockets(plan.probe.live_sockets.clone());
    // Look-before-write runs between the login and the compose page, never beside them: a page loaded at
    // the same time as the compose page can open a second session or mint a newer token (measured on a real
    // tracker: two CSRF tokens, the form posted with the stale one, 400: 10 of 35 posts lost). So the order
    // is login (if any), search, compose, and the compose page is the last page loaded before the press (it
    // is loaded again when the login left it open, so it carries the newest token). The cost is the search
    // page's load, no longer hidden behind the compose page's (docs/publish.md).
    // The look's page is opened (blank) side by side with the compose page's opening and login: nothing
    // of the platform loads in it until the look navigates it, after the login.
    let begin = ComposePage::begin(session, &plan.probe, req.login_url.as_deref(), nav);
    let begun = if req.options.look_before_write {
        tokio::join!(begin, browser::readback::open_read_page_ahead(session)).0
    } else {
        begin.await
    };
    let lookup = match (&begun, req.options.look_before_write) {
        (Ok(_), true) => {
            Some(browser::readback::by_search(session, &plan.readback, &text, false, nav).await)
        }
        _ => None,
    };
    let compose_needed = match &lookup {
        None => true,
        Some(Err(_)) => false,
        Some(Ok(rb)) => !matches!(
            rb.verdict,
            ReadVerdict::Match { .. } | ReadVerdict::Lead { .. }
        ),
    };
    let opened = match begun {
        Ok(o) if compose_needed => o.compose(lookup.is_some(), nav).await,
        Ok(o) => {
            o.close().await;
            Err(BrowserError::Plan(
                "the compose page was not opened: the look before writing decided".into(),
            ))
        }
        Err(e) => Err(e),
    };
    // A platform that cannot be reached at the first page load is bad input (exit 2), not a failed attempt:
    // nothing is begun. (Later, the same error is an attempt's outcome.)
    let gone = [
        lookup.as_ref().and_then(|l| l.as_ref().err()),
        opened.as_ref().err(),
    ]
    .into_iter()
    .flatten()
    .find_map(BrowserError::unreachable);
    if let Some(code) = gone {
        if let Ok(p) = opened {
            p.close().await;
        }
        return Err(PublishError::BadInput(format!(
            "cannot reach the platform at {}: {code} at the first page load; check --base-url (nothing was begun or sent)",
            req.base_url
        )));
    }
    clock.step(if lookup.is_some() {
        "looked before writing; compose page open"
    } else {
        "compose page open"
    });
    if let Some(rb) = lookup {
        let rb = match rb {
            Ok(rb) => rb,
            Err(e) => {
                if let Ok(p) = opened {
                    p.close().await;
                }
                return Err(e.into());
            }
        };
        let mut alarms = Alarms::default();
        alarms.readback(store, key, &req.owner, &rb).await;
        // Nothing is begun yet: an alarm the store did not take parks the pending intent here, as a lead
        // would be (with what the lookup saw), before anything is recorded as found or pressed.
        let lost = alarms.lost;
        let found = matches!(
            rb.verdict,
            ReadVerdict::Match { .. } | ReadVerdict::Lead { .. }
        );
        if found || lost.is_some() {
            if let Ok(p) = opened {
                p.close().await;
            }
            let mut items =
                vec![ev.put_json("readback", &serde_json::to_value(&rb).unwrap_or_default())?];
            if let Some(png) = &rb.png {
                items.push(ev.put("screenshot_readback", png, "png", "image/png")?);
            }
            if let ReadVerdict::Match {
                id,
                permalink,
                authorship,
            } = &rb.verdict
                && lost.is_none()
            {
                store
                    .record_found_before_write(
                        key,
                        &req.owner,
                        id.as_deref(),
                        permalink.as_deref(),
                        json!({ "lookup": rb.url, "items": items, "authorship": authorship }),
                        Timestamp::now(),
                    )
                    .await?;
                return Ok((
                    None,
                    false,
                    "found on the platform before writing: nothing pressed".into(),
                ));
            }
            // The text is there but not shown to be this account's: maybe its own earlier post, maybe another
            // account's. Neither pressing (a possible second copy) nor settling (someone else's post) is safe:
            // a person decides, with the candidates.
            let candidates = match &rb.verdict {
                ReadVerdict::Lead { candidates } => candidates.clone(),
                _ => Vec::new(),
            };
            let why = candidates
                .first()
                .map(|c| c.why.describe())
                .unwrap_or("authorship not shown");
            let mut reason = if matches!(rb.verdict, ReadVerdict::Lead { .. }) {
                format!("lead: a post with this text is on the platform but {why}")
            } else {
                String::new()
            };
            let mut details = json!({ "lookup": rb.url, "items": items, "lead": candidates, "alarms": rb.alarms });
            if let Some(l) = &lost {
                let sep = if reason.is_empty() { "" } else { "; " };
                reason = format!("{reason}{sep}side_effect_alarm: {}", l.why());
                details["alarms_not_recorded"] = json!(l.error.to_string());
            }
            let parked = store
                .park_lead(
                    key,
                    &req.owner,
                    &format!("{reason}; nothing pressed, a person decides"),
                    details,
                    Timestamp::now(),
                )
                .await;
            if let (Err(e), Some(l)) = (&parked, lost) {
                return Err(l.unparked(e.to_string()));
            }
            parked?;
            // The lead's words as before; the lost alarm after them (or alone).
            let summary = match reason.strip_prefix("lead: ") {
                Some(lead) => lead.to_string(),
                None => reason,
            };
            return Ok((None, false, format!("parked before writing: {summary}")));
        }
    }
    let contract_hash = contract.hash();
    let claim = match store
        .begin(key, &req.owner, &contract_hash, Timestamp::now())
        .await?
    {
        Begun::Claimed(mut c) => {
            ATTEMPTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            failpoint::hit(FailPoint::AfterBegin);
            c.account_lease = Some(lease.clone());
            c
        }
        Begun::Parked { attempts } => {
            return Ok((
                None,
                false,
                format!("attempt cap reached after {attempts} attempts: parked"),
            ));
        }
    };
    let token = claim.fence.attempt.as_str().to_string();
    clock.step("begun (claim + attempt)");
    let span = tracing::info_span!("attempt", attempt = %token);
    let r = attempt(
        req,
        store,
        plan,
        key,
        session,
        clock,
        &ev,
        &text,
        claim,
        opened,
        (mark, knock_mark, forwarded_mark),
    )
    .instrument(span)
    .await;
    r.map(|(pressed, summary)| (Some(token), pressed, summary))
}

#[allow(clippy::too_many_arguments)]
async fn attempt(
    req: &PublishRequest,
    store: &Store,
    plan: &PublishPlan,
    key: &DeliveryKey,
    session: &BrowserSession,
    clock: &mut Clock<'_>,
    ev: &EvidenceStore,
    text: &str,
    claim: Claim,
    opened: Result<ComposePage<'_>, BrowserError>,
    (mark, knock_mark, forwarded_mark): (usize, usize, usize),
) -> Result<(bool, String), PublishError> {
    let token = claim.fence.attempt.as_str().to_string();
    let link = |point: &str, items: Vec<Item>| {
        let token = token.clone();
        let point = point.to_string();
        async move {
            let _ = store
                .note(
                    key,
                    EventKind::Evidence,
                    &req.owner,
                    &point,
                    json!({ "attempt": token, "items": items }),
                    Timestamp::now(),
                )
                .await;
        }
    };
    // Before authorization: any failure settles failed (nothing can have left).
    // The account's other posts, newest first: the create request must not carry one of them beside this
    // post (door/carried.rs: an outbox sending what it holds with the next post). Unread, nothing is pressed.
    let prepared = match store.other_texts(&req.account, key, EARLIER_POSTS).await {
        Ok(earlier) => prepare(req, plan, opened, clock, text, &earlier).await,
        Err(e) => Ok(Err((
            opened.ok(),
            json!({ "error": format!("the account's other posts could not be read: {e}") }),
        ))),
    };
    // A field typed once more (its read-back did not show what was typed: `ComposePage::verify`) is said in
    // the send's history, whether the second try made it show the text or not.
    let retyped = match &prepared {
        Ok(Ok((page, _))) | Ok(Err((Some(page), _))) => page.typed_again(),
        _ => Vec::new(),
    };
    if !retyped.is_empty() {
        let _ = store
            .note(
                key,
                EventKind::Note,
                &req.owner,
                TYPED_AGAIN_REASON,
                json!({ "attempt": token, "fields": retyped }),
                Timestamp::now(),
            )
            .await;
    }
    let (page, at) = match prepared {
        Ok(Ok((page, at))) => {
            failpoint::hit(FailPoint::AfterCompose);
            failpoint::pause(FailPoint::AfterCompose).await;
            (page, at)
        }
        Ok(Err((page, report))) => {
            if let Some(page) = page {
                if let Ok(png) = page.screenshot().await {
                    let item = ev.put("screenshot_before_dispatch", &png, "png", "image/png")?;
                    link("before_dispatch", vec![item]).await;
                }
                page.close().await;
            }
            let landing = settle::land(Verdict::NotActionable { report });
            return finish(store, &claim.fence, key, &req.owner, landing, false).await;
        }
        Err(e) => {
            let landing = settle::land(Verdict::NotActionable {
                report: json!({ "error": e.to_string() }),
            });
            return finish(store, &claim.fence, key, &req.owner, landing, false).await;
        }
    };
    let mut at = at;
    let mut filled_again = 0;
    loop {
        let mut before = Vec::new();
        let (png, html) = tokio::join!(page.screenshot(), page.dom_excerpt());
        if let Ok(png) = png {
            before.push(ev.put("screenshot_before_dispatch", &png, "png", "image/png")?);
        }
        if let Ok(html) = html {
            // Stored redacted and as plain text (.txt): the page's markup is evidence, never a page to open.
            before.push(ev.put("dom_excerpt", html.as_bytes(), "txt", "text/html")?);
        }
        link("before_dispatch", before).await;
        clock.step("evidence before dispatch");
        // The fields are read once more, last thing before the authorization: a page that puts a draft it
        // synced or restored late into a field after the fill check would have the press send that (another
        // post, or one missing its words, refused at the door after the authorization is spent). Typed
        // again (bounded), checked again, and the evidence taken again; still changing, nothing is pressed.
        let changed = match page.changed_since_checked().await {
            Ok(c) => c,
            Err(e) => {
                page.close().await;
                let landing = settle::land(Verdict::NotActionable {
                    report: json!({ "error": e.to_string() }),
                });
                return finish(store, &claim.fence, key, &req.owner, landing, false).await;
            }
        };
        if changed.is_empty() {
            break;
        }
        let fill = filled_again < FILL_AGAIN && changed.iter().all(|c| c.can_fill_again);
        let _ = store
            .note(
                key,
                EventKind::Note,
                &req.owner,
                FIELD_CHANGED_REASON,
                json!({ "attempt": token, "changed": changed, "typed_again": fill }),
                Timestamp::now(),
            )
            .await;
        let refilled = if fill {
            filled_again += 1;
            type_again(req, plan, &page, &changed).await
        } else {
            Err(json!({ "changed_after_check": changed }))
        };
        match refilled {
            Ok(now) => {
                at = now;
                clock.step("fields the page changed filled again");
            }
            Err(report) => {
                page.close().await;
                let landing = settle::land(Verdict::NotActionable { report });
                return finish(store, &claim.fence, key, &req.owner, landing, false).await;
            }
        }
    }
    // A field read by scrolling it was read so again just now, scrolling the page and putting it back: on a
    // page that scrolls smoothly, or an editor that scrolls to its caret when it is scrolled, the control
    // may not be back where it was checked. Checked once more, the press lands where it is (measured: the
    // press on the old position made nothing, "the create request never left").
    if page.read_by_scrolling() {
        match page
            .check_publish(&plan.probe.publish, crate::browser::probe::SETTLE)
            .await
        {
            Ok(Ok(now)) => at = now,
            Ok(Err(check)) => {
                page.close().await;
                let landing = settle::land(Verdict::NotActionable {
                    report: json!({ "publish_control": serde_json::to_value(check).unwrap_or_default() }),
                });
                return finish(store, &claim.fence, key, &req.owner, landing, false).await;
            }
            Err(e) => {
                page.close().await;
                let landing = settle::land(Verdict::NotActionable {
                    report: json!({ "error": e.to_string() }),
                });
                return finish(store, &claim.fence, key, &req.owner, landing, false).await;
            }
        }
        clock.step("publish control checked again after the scrolled read");
    }
    // A page that tried a channel the door refuses (a WebSocket, WebTransport or TURN tunnel from any frame
    // or worker) while it loaded and was filled may publish that way, which nothing can do at most once:
    // nothing left (the sinkhole forwards nothing) and nothing is pressed. Each attempt is an alarm.
    let knocks = session
        .write_guard()
        .door()
        .sinkhole()
        .page_knocks_since(knock_mark);
    if !knocks.is_empty() {
        let mut alarms = Alarms::default();
        alarm_refused_channels(&mut alarms, store, key, &req.owner, &token, &knocks).await;
        page.close().await;
        let landing = settle::land(Verdict::ChannelRefused {
            report: json!({
                "error": format!(
                    "the page tried {} channel(s) oncepost refuses before publish was pressed ({}): it may \
                     publish that way, which cannot be done at most once; nothing was pressed and nothing left \
                     (a socket the page only hears on, such as a timeline's updates, may be declared in the \
                     contract's [[live_sockets]], format 2)",
                    knocks.len(),
                    knocks[0].describe()
                ),
                "refused_channels": knocks,
            }),
        });
        let (pressed, summary) =
            finish(store, &claim.fence, key, &req.owner, landing, false).await?;
        // Settled failed first (the claim's fence is needed for that), then parked for a lost alarm.
        return Ok(match alarms.park_if_lost(store, key, &req.owner).await? {
            Some(why) => (pressed, format!("{summary}; parked: {why}")),
            None => (pressed, summary),
        });
    }
    // The contract is read again right before authorization: a changed file is refused by the store.
    let current_hash = match Contract::load(&req.contract_path) {
        Ok(c) => c.hash(),
        Err(e) => {
            page.close().await;
            let landing = settle::land(Verdict::NotActionable {
                report: json!({ "error": format!("contract unreadable before authorization: {e}") }),
            });
            return finish(store, &claim.fence, key, &req.owner, landing, false).await;
        }
    };
    // The account's lease is renewed right before authorization; a lease another host took over is not
    // renewed, and the authorization below refuses this claim for it.
    let mut claim = claim;
    if let Some(l) = &claim.account_lease {
        match store
            .acquire_account_lease(&l.account, &l.holder, ACCOUNT_LEASE_MS, Timestamp::now())
            .await
        {
            Ok(renewed) if renewed.fence == l.fence => claim.account_lease = Some(renewed),
            Ok(_) | Err(_) => {}
        }
    }
    let auth = match store
        .authorize_dispatch(&claim, &current_hash, Timestamp::now())
        .await
    {
        Ok(a) => {
            failpoint::hit(FailPoint::AfterAuthorize);
            // A test holds the publish here to change the page in the window between the fields' second
            // read and the press (tests/it/late_fields.rs); returns at once unless `ONCEPOST_PAUSE_AT` names it.
            failpoint::pause(FailPoint::AfterAuthorize).await;
            a
        }
        Err(StoreError::Refused(r)) if r.retry_at(Timestamp::now().0).is_some() => {
            count_refusal(&r);
            // Not yet rather than no: nothing was authorized, so nothing can have been sent. The claim is given
            // back and the intent stays pending (a queued one is picked up again from then on).
            page.close().await;
            let now = Timestamp::now();
            let at = Timestamp(r.retry_at(now.0).unwrap_or(now.0));
            store
                .release_not_yet(&claim.fence, at, &format!("not yet: {r}"), now)
                .await?;
            return Ok((
                false,
                format!("not yet: {r}; nothing pressed, the intent stays pending"),
            ));
        }
        Err(StoreError::Refused(r @ crate::store::AuthorizeRefusal::SourceSuperseded { .. })) => {
            count_refusal(&r);
            // The publish-time source gate: nothing was authorized, nothing pressed. The intent is parked
            // (still pending, this worker's claim held) by the same fence that runs before the browser.
            page.close().await;
            let why = fence_source(store, key, &req.owner)
                .await?
                .unwrap_or_else(|| format!("refused: {r}"));
            return Ok((false, format!("at authorization: {why}")));
        }
        Err(StoreError::Refused(r)) => {
            count_refusal(&r);
            page.close().await;
            let landing = settle::land(Verdict::AuthorizationRefused {
                refusal: r.to_string(),
            });
            return finish(store, &claim.fence, key, &req.owner, landing, false).await;
        }
        Err(e) => {
            page.close().await;
            return Err(e.into());
        }
    };
    // Nothing slow from here to the press.
    let mut topts = req.options.transport.clone();
    topts.mode = plan.transport;
    topts.pause_wait = plan.create_wait;
    let store2 = store.clone();
    let hook = move |fence: crate::store::Fence, wire: browser::WireRequest| async move {
        let hash = wire.hash();
        store2
            .record_request_sent(
                &fence,
                hash.as_str(),
                json!({ "method": wire.method, "url": wire.url, "body_bytes": wire.body.len() }),
                Timestamp::now(),
            )
            .await
            .map_err(|e| format!("the before-send record failed: {e}"))
    };
    let publish = plan.probe.publish.clone();
    let pressed = publish
        .press(&page, &at, auth, &plan.create, &topts, hook)
        .await;
    failpoint::hit(FailPoint::AfterResponse);
    clock.step("pressed; create request carried");
    let fence = pressed.fence.clone();
    let log = json!({ "attempt": token, "transport": plan.transport, "entries": pressed.log });
    // put_json redacts (headers, cookies, tokens in URLs and bodies) before anything reaches the disk.
    let log_item = ev.put_json("write_log", &log)?;
    link("write_log", vec![log_item]).await;
    let verdict = after_dispatch(
        req,
        plan,
        session,
        &page,
        clock,
        ev,
        text,
        &pressed.outcome,
        &link,
    )
    .await;
    // What the page did beyond the one create request, from the compose page's load until now (after the
    // response was handed to it and captured, so a page's own retry timer is seen): each further create
    // request and each other write attempt is a side-effect alarm bound to this intent.
    let mut alarms = Alarms::default();
    let guard = session.write_guard();
    // A poisoned guard log (see write_guard.rs) hides what the page did: an alarm like a write that could
    // not be stopped, so the intent is parked.
    let mut unblocked = false;
    let (extras, writes) = match (guard.extra_creates(), guard.writes_since(mark)) {
        (Ok(x), Ok(w)) => (x, w),
        (Err(e), _) | (_, Err(e)) => {
            unblocked = true;
            alarms
                .record(
                    store,
                    key,
                    EventKind::SideEffectAlarm,
                    &req.owner,
                    "what the page attempted is unknown: the write guard's log is unreadable",
                    json!({ "attempt": token, "error": e.to_string() }),
                )
                .await;
            (Vec::new(), Vec::new())
        }
    };
    for x in &extras {
        alarms
            .record(
                store,
                key,
                EventKind::SideEffectAlarm,
                &req.owner,
                match &x.not_the_post {
                    Some(browser::door::carried::NotThePost::Missing(_)) => {
                        "a create request that did not carry the post (an earlier one, perhaps) was failed before it left"
                    }
                    Some(browser::door::carried::NotThePost::Earlier(_)) => {
                        "a create request that carried another post of the account's too (a page's outbox) was failed before it left"
                    }
                    None => "a further create request for one authorization was failed before it left",
                },
                json!({ "attempt": token, "request": x }),
            )
            .await;
    }
    // Other writes the page attempted while we composed, pressed and watched: the guard failed them before they
    // left (blocked) unless its answer could not be delivered. Each is a side-effect alarm.
    for w in writes.iter().filter(|w| !extras.contains(w)) {
        unblocked |= !w.blocked;
        alarms
            .record(
                store,
                key,
                EventKind::SideEffectAlarm,
                &req.owner,
                if w.blocked {
                    "the page attempted a write that is not the create request; failed before it left"
                } else {
                    "the page attempted a write that is not the create request and it could not be stopped"
                },
                json!({ "attempt": token, "request": w }),
            )
            .await;
    }
    // Channels the door refused after the press (or too late to be seen before it): alarms, and a person
    // looks before anything is pressed again.
    let late_knocks = session
        .write_guard()
        .door()
        .sinkhole()
        .page_knocks_since(knock_mark);
    alarm_refused_channels(&mut alarms, store, key, &req.owner, &token, &late_knocks).await;
    page.close().await;
    // The declared live sockets the door refused during this publish: evidence that the page tried them and
    // that nothing went further (never an alarm: the contract declares them).
    let live = session
        .write_guard()
        .door()
        .sinkhole()
        .live_knocks_since(knock_mark);
    if !live.is_empty() {
        let item = ev.put_json(
            "live_sockets_refused",
            &json!({ "attempt": token, "count": live.len(), "refused": live }),
        )?;
        link("live_sockets_refused", vec![item]).await;
    }
    // The declared non-publish writes oncepost let through for this page, with their count: evidence of
    // what reached the platform besides the one create request (never an alarm: the contract declares them).
    if let Ok(forwarded) = guard.forwarded_since(forwarded_mark)
        && !forwarded.is_empty()
    {
        let item = ev.put_json(
            "non_publish_writes",
            &json!({ "attempt": token, "count": forwarded.len(), "writes": forwarded }),
        )?;
        link("non_publish_writes", vec![item]).await;
    }
    let retry_at = match &verdict {
        Verdict::RetryLater { retry_at, .. } => Some(*retry_at),
        _ => None,
    };
    let landing = settle::land(verdict);
    let (pressed, summary) = finish(store, &fence, key, &req.owner, landing, true).await?;
    // A side effect where none was authorized: a write that may have left, or a further create request
    // (failed before it left, but the page is not behaving as the contract says). A person must look
    // before anything is pressed again (unless it is published, which is terminal; the alarm stays in
    // its history).
    let alarm = if unblocked {
        Some("an unauthorized write could not be stopped")
    } else if !late_knocks.is_empty() {
        Some("the page tried a channel oncepost refuses (refused before any byte left)")
    } else if !extras.is_empty() {
        Some("a further create request for one authorization was seen (failed before it left)")
    } else {
        None
    };
    // An alarm that could not be recorded is one more reason to park (see `Alarms`).
    let lost = alarms.lost;
    let why = match (alarm, lost.as_ref().map(Lost::why)) {
        (Some(a), Some(l)) => Some(format!("{a}; {l}")),
        (Some(a), None) => Some(a.to_string()),
        (None, Some(l)) => Some(l),
        (None, None) => None,
    };
    let Some(why) = why else {
        return Ok(match retry_at {
            Some(at) => (
                pressed,
                try_later(store, key, &req.owner, at, summary).await?,
            ),
            None => (pressed, summary),
        });
    };
    let state = store.intent(key).await.map(|it| it.state);
    if let Ok(Status::Failed | Status::Indeterminate) = state {
        store
            .park(
                key,
                &req.owner,
                &format!("side_effect_alarm: {why}"),
                Timestamp::now(),
            )
            .await
            .map_err(|e| match lost {
                Some(l) => l.unparked(e.to_string()),
                None => e.into(),
            })?;
        return Ok((pressed, format!("{summary}; parked: {why}")));
    }
    if let Some(l) = lost {
        // Published (nothing parks it) or the state is unreadable: the lost alarm is the caller's to report.
        return Err(l.unparked(match state {
            Ok(s) => format!("the intent is {s}"),
            Err(e) => e.to_string(),
        }));
    }
    Ok((pressed, summary))
}

/// After a "try later" answer (settled failed: nothing was made): a queued intent is re-opened and queued
/// again for `at`, so a worker tries it then (each try is an attempt, so the attempt cap bounds a platform
/// that never stops saying it); a synchronous one stays failed, its summary saying when to retry. Two
/// transactions: a crash between them leaves it pending with its old time, taken again at once and
/// answered "later" again at worst.
async fn try_later(
    store: &Store,
    key: &DeliveryKey,
    owner: &str,
    at: i64,
    summary: String,
) -> Result<String, PublishError> {
    let when = crate::utc::rfc3339(at);
    let it = store.intent(key).await?;
    let (Status::Failed, Some(contract), Some(base)) = (
        it.state,
        it.queued_contract.as_deref(),
        it.base_url.as_deref(),
    ) else {
        return Ok(format!(
            "{summary}; the platform asked to try again from {when} (`oncepost retry {key}`, then publish it)"
        ));
    };
    let now = Timestamp::now();
    store.retry(key, owner, now).await?;
    store
        .queue_intent(key, base, contract, Timestamp(at), owner, now)
        .await?;
    Ok(format!(
        "{summary}; queued again for {when}, when the platform said to try again"
    ))
}

/// Whether `shown` is `sent` with other line breaks only (the same words, whitespace aside), while its lines
/// differ: what a rich editor typed as text, or a plain-text editor typed by keys, makes of a post in
/// paragraphs (measured on CKEditor, TinyMCE, ProseMirror, CodeMirror and Trix: docs/contracts.md).
fn only_line_breaks_differ(sent: &str, shown: &str) -> bool {
    sent.contains('\n')
        && sent.trim() != shown.trim()
        && sent.split_whitespace().eq(shown.split_whitespace())
}

/// `proof`, and when the page asked a `confirm()` that was dismissed, what it asked: a page that asks before
/// it publishes ("Publish this post?") sends nothing when told no (the contract's `publish.confirm`).
fn with_dismissed_confirms(proof: &str, dialogs: &[browser::DialogEvent]) -> String {
    let asked: Vec<&str> = dialogs
        .iter()
        .filter_map(|d| match d {
            browser::DialogEvent::Dialog {
                dialog_type,
                message,
                accepted: false,
                ..
            } if dialog_type == "confirm" => Some(message.as_str()),
            _ => None,
        })
        .collect();
    match asked.first() {
        None => proof.to_string(),
        Some(m) => format!(
            "{proof}; the page asked {} confirm(s) and each was dismissed (the first: {:?}): a page that asks \
             before it publishes needs publish.confirm = \"accept\" (format 2)",
            asked.len(),
            crate::redact::text(&m.chars().take(120).collect::<String>())
        ),
    }
}

/// One side-effect alarm per channel the door refused (one the store does not take is kept in `alarms`).
async fn alarm_refused_channels(
    alarms: &mut Alarms,
    store: &Store,
    key: &DeliveryKey,
    owner: &str,
    attempt: &str,
    knocks: &[browser::door::Knock],
) {
    for k in knocks {
        alarms
            .record(
                store,
                key,
                EventKind::SideEffectAlarm,
                owner,
                "the page tried a channel oncepost refuses; refused before any byte left",
                json!({ "attempt": attempt, "channel": k, "what": k.describe() }),
            )
            .await;
    }
}

/// Type the fields the page changed after their check again, read them back and check the publish
/// control again: where to press, or the report of why nothing is pressed.
async fn type_again(
    req: &PublishRequest,
    plan: &PublishPlan,
    page: &ComposePage<'_>,
    changed: &[browser::compose::FieldChanged],
) -> Result<browser::Actionable, Value> {
    let steps = page
        .fill_again(changed, req.options.step_timeout)
        .await
        .map_err(|e| json!({ "error": e.to_string() }))?;
    if !steps.iter().all(|s| s.ok) {
        return Err(json!({ "changed_after_check": changed, "steps": steps }));
    }
    page.check_publish(&plan.probe.publish, crate::browser::probe::SETTLE)
        .await
        .map_err(|e| json!({ "error": e.to_string() }))?
        .map_err(
            |check| json!({ "publish_control": serde_json::to_value(check).unwrap_or_default() }),
        )
}

type Prepared<'s> =
    Result<(ComposePage<'s>, browser::Actionable), (Option<ComposePage<'s>>, Value)>;

/// How many times the fields a page changed after their check are typed again before nothing is pressed:
/// a draft synced or restored late lands once; a page that keeps rewriting a field would publish its own
/// text whatever is typed.
const FILL_AGAIN: u32 = 2;

/// The reason of the note recording fields typed once more (`Note` event), each with why: its read-back did
/// not show what was typed, or the publish control stayed disabled though every field showed it
/// ([`CONTROL_STAYED_DISABLED`]).
pub const TYPED_AGAIN_REASON: &str = "a field was typed once more";

/// Why every field was typed once more when the publish control stayed disabled after the fill.
const CONTROL_STAYED_DISABLED: &str = "the publish control stayed disabled though every field showed what \
     was typed (the page may not have taken the typing)";

/// The reason of the note recording fields the page changed after their check (`Note` event).
pub const FIELD_CHANGED_REASON: &str = "the page changed a field after it was filled and checked";

/// How many of the account's newest other posts a create request is checked against (door/carried.rs): an
/// outbox holds what its last sends left, not the account's whole history.
const EARLIER_POSTS: i64 = 50;

async fn prepare<'s>(
    req: &PublishRequest,
    plan: &PublishPlan,
    opened: Result<ComposePage<'s>, BrowserError>,
    clock: &mut Clock<'_>,
    text: &str,
    earlier: &[String],
) -> Result<Prepared<'s>, BrowserError> {
    let page = match opened {
        Ok(p) => p,
        Err(BrowserError::Plan(why)) => return Ok(Err((None, json!({ "error": why })))),
        Err(e) => return Err(e),
    };
    // The post's fields as the plan holds them: the body, the given fields and the intent's marker.
    let mut values = vec![(
        format!("field:{}", plan.readback.body_field),
        text.to_string(),
    )];
    for (k, v) in &plan.readback.fields {
        if *k != plan.readback.body_field {
            values.push((format!("field:{k}"), v.clone()));
        }
    }
    // The page must show the account logged in before anything is typed (`compose.signed_in_as`): on a
    // platform that lets visitors post, a login that expired would make the post under no one's name.
    if let Some(s) = &plan.signed_in_as {
        let shown = page
            .signed_in_as(&s.css, s.attribute.as_deref(), req.options.step_timeout)
            .await?;
        // `pattern` was checked with the contract; one that did not compile shows no one.
        let pattern = match &s.pattern {
            Some(r) => regex::Regex::new(r).ok(),
            None => None,
        };
        let handle = shown.as_deref().and_then(|v| {
            if s.pattern.is_some() && pattern.is_none() {
                return None;
            }
            browser::readback::handle_shown(v, pattern.as_ref(), s.attribute.as_deref())
        });
        let ours = match (&plan.readback.handle, &handle) {
            (Some(h), Some(v)) => browser::readback::same_author(h, v),
            _ => false,
        };
        if !ours {
            let report =
                json!({ "signed_in_as": { "handle": plan.readback.handle, "shown": shown } });
            return Ok(Err((Some(page), report)));
        }
    }
    // The post's text is what the one create request must carry (door/carried.rs): the body alone, since
    // a title or another field may reach the platform changed (a slug) or by another request.
    let others: Vec<&str> = values.iter().skip(1).map(|(_, v)| v.as_str()).collect();
    page.expect_in_create(text, &others, earlier);
    let steps = page.prepare(&values, req.options.step_timeout).await?;
    clock.step("steps run and fields filled");
    // A field read back as not showing what was typed, then typed once more (`ComposePage::verify`): said
    // in the steps, with why, for whoever reads the send.
    for s in page.typed_again() {
        clock.step(format!("{} {}", s.target, s.outcome));
    }
    if let Some(bad) = steps.iter().find(|s| !s.ok) {
        let report = json!({ "step": serde_json::to_value(bad).unwrap_or_default() });
        return Ok(Err((Some(page), report)));
    }
    let mut checked = page
        .check_publish(&plan.probe.publish, crate::browser::probe::SETTLE)
        .await?;
    clock.step("publish control checked");
    // Disabled, though every field shows what was typed: the page's own state of the post may have missed
    // the typing (`ComposePage::type_checked_again`). Typed once more, then checked again; still disabled,
    // nothing is pressed.
    if let Err(check) = &checked
        && check.only_disabled()
        && page.has_fields_to_type_again()
        && let Some(steps) = page.type_checked_again(CONTROL_STAYED_DISABLED).await?
    {
        for s in page.typed_again() {
            if s.outcome.contains(CONTROL_STAYED_DISABLED) {
                clock.step(format!("{} {}", s.target, s.outcome));
            }
        }
        if let Some(bad) = steps.iter().find(|s| !s.ok) {
            let report = json!({ "step": serde_json::to_value(bad).unwrap_or_default() });
            return Ok(Err((Some(page), report)));
        }
        checked = page
            .check_publish(&plan.probe.publish, crate::browser::probe::SETTLE)
            .await?;
        clock.step("publish control checked again");
    }
    match checked {
        Ok(at) => Ok(Ok((page, at))),
        Err(check) => Ok(Err((
            Some(page),
            json!({ "publish_control": serde_json::to_value(check).unwrap_or_default() }),
        ))),
    }
}

#[allow(clippy::too_many_arguments)]
async fn after_dispatch<F, Fut>(
    req: &PublishRequest,
    plan: &PublishPlan,
    session: &BrowserSession,
    page: &ComposePage<'_>,
    clock: &mut Clock<'_>,
    ev: &EvidenceStore,
    text: &str,
    outcome: &DispatchOutcome,
    link: &F,
) -> Verdict
where
    F: Fn(&str, Vec<Item>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (status, body, headers) = match outcome {
        DispatchOutcome::NotSent { proof } => {
            return Verdict::NotSent {
                proof: with_dismissed_confirms(proof, &page.dialogs()),
            };
        }
        DispatchOutcome::Unknown { reason } => {
            return Verdict::TransportUnknown {
                reason: reason.clone(),
            };
        }
        DispatchOutcome::Response {
            status,
            body,
            headers,
        } => (Some(*status), body.as_slice(), headers.as_slice()),
        // A create message on a socket: no status; its answer is one of the platform's messages, which the
        // success signal `socket_answer` reads.
        DispatchOutcome::Delivered => (None, &[][..], &[][..]),
    };
    let early = status.and_then(|s| {
        settle::retry_later(
            s,
            headers,
            body,
            &plan.retry_later_statuses,
            Timestamp::now().0,
        )
        .or_else(|| settle::by_status(s, body, &plan.rejection_statuses))
    });
    let seen = if early.is_none() {
        page.wait_success(
            &plan.success,
            status.map(|s| (s, body)),
            req.options.success_timeout,
        )
        .await
    } else {
        Ok(None)
    };
    // The read-back, when there is a success signal to read back, runs beside the after-response capture:
    // one reads a fresh page, the other the compose page, and neither needs the other (measured on a warm
    // worker, in sequence they were 180-250 ms and 260-345 ms of a 1.5-1.7 s post: docs/benchmarks.md).
    let nav = req.options.navigation_timeout;
    let read_back = async {
        match (&early, &seen) {
            (None, Ok(Some(s))) => Some(match &s.id {
                Some(id) => browser::readback::by_id(session, &plan.readback, id, text, nav).await,
                None => {
                    browser::readback::by_search(session, &plan.readback, text, true, nav).await
                }
            }),
            _ => None,
        }
    };
    let (shot, rb) = tokio::join!(page.screenshot_settled(AFTER_RESPONSE_SHOT), read_back);
    // Capture where the page landed with the outcome it was handed (it may be navigating). A capture
    // that cannot be had is recorded as such, never dropped in silence.
    match shot {
        Ok(png) => match ev.put("screenshot_after_response", &png, "png", "image/png") {
            Ok(item) => link("after_response", vec![item]).await,
            Err(e) => tracing::warn!(error = %e, "after-response screenshot not stored"),
        },
        Err(e) => {
            tracing::warn!(error = %e, "no after-response screenshot");
            link(&format!("after_response: no screenshot ({e})"), vec![]).await;
        }
    }
    let seen = match (early, seen) {
        (None, Ok(Some(s))) => s,
        (early, seen) => {
            clock.step("response handled");
            return match (early, seen) {
                (Some(v), _) => v,
                (None, Err(e)) => Verdict::BrowserFailed {
                    error: e.to_string(),
                },
                (None, Ok(_)) => Verdict::NoSuccessSignal { status },
            };
        }
    };
    // The read-back page has been read; its verdict is not taken or recorded yet.
    failpoint::hit(FailPoint::DuringReadback);
    clock.step("response handled and read back (side by side)");
    let Some(rb) = rb else {
        return Verdict::BrowserFailed {
            error: "read-back did not run".into(),
        };
    };
    let rb = match rb {
        Ok(rb) => rb,
        Err(e) => {
            return Verdict::BrowserFailed {
                error: format!("read-back failed: {e}"),
            };
        }
    };
    let mut items = Vec::new();
    let rb_json = json!({ "success": seen, "readback": rb });
    if let Ok(i) = ev.put_json("readback", &rb_json) {
        items.push(i);
    }
    if let Some(png) = &rb.png
        && let Ok(i) = ev.put("screenshot_readback", png, "png", "image/png")
    {
        items.push(i);
    }
    link("readback", items).await;
    // Ids and links the read-back page supplied that point outside the platform: alarms, never findings.
    for alarm in &rb.alarms {
        let items = ev
            .put_json("alarm", &serde_json::to_value(alarm).unwrap_or_default())
            .map(|i| vec![i])
            .unwrap_or_default();
        link(
            &format!("alarm: {}", browser::readback::ALARM_REASON),
            items,
        )
        .await;
    }
    match &rb.verdict {
        ReadVerdict::Match { id, permalink, .. } => Verdict::Published {
            platform_id: id.clone().or(seen.id.clone()),
            permalink: permalink.clone(),
            readback: rb_json,
        },
        ReadVerdict::Mismatch { shown, .. } => Verdict::ReadbackMismatch {
            readback: match only_line_breaks_differ(text, shown) {
                true => json!({
                    "sent_chars": text.chars().count(), "readback": rb_json,
                    "why": "the platform shows the post's words with other line breaks: an editor that \
                            makes a paragraph on Enter needs the field's newlines = \"keys\", a plain-text \
                            editor the text as it is (docs/contracts.md, \"Posts in paragraphs\")",
                }),
                false => json!({ "sent_chars": text.chars().count(), "readback": rb_json }),
            },
        },
        ReadVerdict::Lead { candidates } => Verdict::ReadbackLead {
            readback: json!({ "lead": candidates, "readback": rb_json }),
        },
        ReadVerdict::NotFound => Verdict::ReadbackNotFound { readback: rb_json },
    }
}

async fn finish(
    store: &Store,
    fence: &crate::store::Fence,
    key: &DeliveryKey,
    actor: &str,
    landing: Landing,
    pressed: bool,
) -> Result<(bool, String), PublishError> {
    let now = Timestamp::now();
    let summary = match &landing {
        Landing::Failed(p) => format!(
            "failed: {}",
            p.get("why").and_then(|w| w.as_str()).unwrap_or("")
        ),
        Landing::Published { permalink, .. } => {
            format!("published: {}", permalink.as_deref().unwrap_or(""))
        }
        Landing::Indeterminate { reason, .. } => format!("indeterminate: {reason}"),
        Landing::Parked { reason, .. } => format!("parked: {reason}"),
    };
    match landing {
        Landing::Failed(proof) => {
            store
                .settle(fence, &Settlement::Failed { proof }, now)
                .await?;
        }
        Landing::Published {
            platform_id,
            permalink,
            verdict,
        } => {
            store
                .settle(
                    fence,
                    &Settlement::Published {
                        platform_id,
                        permalink,
                        verdict,
                    },
                    now,
                )
                .await?;
        }
        Landing::Indeterminate { reason, details } => {
            store
                .settle(fence, &Settlement::Indeterminate { reason, details }, now)
                .await?;
        }
        Landing::Parked { reason, details } => {
            store
                .settle(
                    fence,
                    &Settlement::Indeterminate {
                        reason: reason.clone(),
                        details,
                    },
                    now,
                )
                .await?;
            store.park(key, actor, &reason, Timestamp::now()).await?;
        }
    }
    Ok((pressed, summary))
}

/// Build the answer from the store (the same for a first run and a rerun).
async fn answer(
    store: &Store,
    key: &DeliveryKey,
    attempt: Option<String>,
    pressed: bool,
    created: bool,
    steps: Vec<StepTime>,
    summary: &str,
) -> Result<PublishOutcome, PublishError> {
    let tl = store.timeline(key).await?;
    let mut evidence = Vec::new();
    for e in &tl.events {
        if e.kind == EventKind::Evidence
            && let Some(items) = e.details.get("items").and_then(|i| i.as_array())
        {
            for i in items {
                if let Ok(item) = serde_json::from_value::<Item>(i.clone())
                    && !evidence.contains(&item)
                {
                    evidence.push(item);
                }
            }
        }
    }
    let timeline = tl
        .events
        .iter()
        .map(|e| {
            json!({
                "at": e.at, "kind": e.kind, "from": e.from, "to": e.to, "actor": e.actor,
                "reason": e.reason, "attempt": e.attempt,
            })
        })
        .collect();
    let it = &tl.intent;
    let not_before = match tl.events.last() {
        Some(e) if it.state == Status::Pending && e.kind == EventKind::ClaimReleased => {
            e.details.get("retry_at").and_then(Value::as_i64)
        }
        // A "try later" answer: failed with the time it named, or queued again for it.
        Some(e) if it.state == Status::Failed && e.kind == EventKind::Failed => {
            e.details.get("retry_at").and_then(Value::as_i64)
        }
        Some(e) if it.state == Status::Pending && e.kind == EventKind::Queued => {
            let later = tl.events.iter().rev().nth(2).is_some_and(|f| {
                f.kind == EventKind::Failed && f.details.get("retry_at").is_some()
            });
            later
                .then(|| e.details.get("run_after").and_then(Value::as_i64))
                .flatten()
        }
        _ => None,
    };
    // Only what this run's own attempt settled: an earlier attempt's answer says nothing of the login now.
    let signed_out = tl
        .events
        .last()
        .filter(|e| e.attempt.is_some() && e.attempt == attempt)
        .and_then(|e| settle::signed_out_sign(e.kind, &e.details));
    // The summary is printed and may quote a page's error or URL: redacted like everything printed.
    let summary = if summary.is_empty() {
        format!("{}", it.state)
    } else {
        crate::redact::text(summary)
    };
    Ok(PublishOutcome {
        key: key.as_str().to_string(),
        state: it.state,
        attempt: attempt.or(it.current_attempt.clone()),
        platform_id: it.platform_id.clone(),
        permalink: it.permalink.clone(),
        pressed,
        created,
        evidence,
        timeline,
        steps,
        summary,
        not_before,
        source: store.intent_source(key).await?,
        capture: None,
        signed_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NewAccount, Policy, StoreLocation};

    async fn store_with_intent(dir: &std::path::Path) -> (Store, DeliveryKey) {
        let location = StoreLocation::Sqlite(dir.join("oncepost.db"));
        let store = Store::open(&location, Policy::default()).await.unwrap();
        let account = NewAccount {
            name: "alice".into(),
            platform: "fixturebook".into(),
            min_interval_ms: 0,
            dup_window_ms: 0,
        };
        store
            .add_account(&account, "test", Timestamp::now())
            .await
            .unwrap();
        let new = NewIntent {
            account: "alice".into(),
            action: ActionKind::Post,
            target: String::new(),
            request: CanonicalRequest::new(Some("hello"), &BTreeMap::new()),
            source: None,
        };
        let key = store
            .create_intent(&new, Timestamp::now())
            .await
            .unwrap()
            .intent
            .key;
        (store, key)
    }

    #[tokio::test]
    async fn an_alarm_the_store_does_not_take_parks_the_intent() {
        let dir = tempfile::tempdir().unwrap();
        let (store, key) = store_with_intent(dir.path()).await;
        let mut alarms = Alarms::default();
        alarms
            .record(
                &store,
                &key,
                EventKind::SideEffectAlarm,
                "test",
                "recorded",
                json!({}),
            )
            .await;
        assert!(alarms.lost.is_none());
        // The store refuses this one (a state change is not a note): the store's refusal, seen as the
        // publish flow sees any failed `note`.
        alarms
            .record(
                &store,
                &key,
                EventKind::Parked,
                "test",
                "the page tried a channel",
                json!({}),
            )
            .await;
        let why = alarms
            .park_if_lost(&store, &key, "test")
            .await
            .unwrap()
            .expect("a lost alarm parks");
        assert!(why.contains("the page tried a channel"), "{why}");
        let tl = store.timeline(&key).await.unwrap();
        assert_eq!(tl.intent.state, Status::Parked);
        let parked = tl.events.last().unwrap();
        assert_eq!(parked.kind, EventKind::Parked);
        assert_eq!(
            parked.reason.as_deref(),
            Some(format!("side_effect_alarm: {why}").as_str())
        );
        // The recorded one is in the history.
        assert!(tl.events.iter().any(
            |e| e.kind == EventKind::SideEffectAlarm && e.reason.as_deref() == Some("recorded")
        ));
        // Nothing lost: nothing parked.
        assert!(
            Alarms::default()
                .park_if_lost(&store, &key, "test")
                .await
                .unwrap()
                .is_none()
        );
    }

    #[tokio::test]
    async fn an_alarm_lost_with_the_store_is_an_error_with_a_non_zero_exit() {
        let dir = tempfile::tempdir().unwrap();
        let (store, key) = store_with_intent(dir.path()).await;
        store.close().await;
        let mut alarms = Alarms::default();
        alarms
            .record(
                &store,
                &key,
                EventKind::SideEffectAlarm,
                "test",
                "a write that could not be stopped",
                json!({}),
            )
            .await;
        let e = alarms.park_if_lost(&store, &key, "test").await.unwrap_err();
        let PublishError::AlarmNotRecorded { what, source, .. } = &e else {
            panic!("{e}");
        };
        assert_eq!(what, "a write that could not be stopped");
        assert_ne!(crate::cli::Exit::of_store(source), crate::cli::Exit::Ok);
        assert!(e.to_string().contains("could not be parked"), "{e}");
    }

    #[test]
    fn only_a_gone_process_seen_from_the_same_pids_is_gone() {
        let me = lease_holder(&owner_id());
        assert!(!holder_is_gone(&me), "this process is alive: {me}");
        // A pid far above pid_max is no process.
        let host = rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned();
        let gone = lease_holder(&format!("{host}:2147483000:abc"));
        assert!(holder_is_gone(&gone), "{gone}");
        // The same dead pid seen from another boot, pid namespace or machine, or without a scope: not known.
        for other in [
            format!("{host}:2147483000:abc@0123456789abcdef"),
            format!("{host}:2147483000:abc@unknown"),
            format!("{host}:2147483000:abc"),
            format!("another-{host}:2147483000:abc@{}", pid_scope()),
            "garbage".to_string(),
        ] {
            assert!(!holder_is_gone(&other), "{other}");
        }
    }

    #[test]
    fn owner_ids_name_this_host_and_process_and_differ() {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        let a = super::owner_id();
        assert!(
            a.starts_with(&format!("{}:{}:", host.trim(), std::process::id())),
            "{a}"
        );
        assert_ne!(a, super::owner_id());
    }
}
