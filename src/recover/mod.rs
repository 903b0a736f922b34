//! Recovery: sweep, one-lookup reconcile, and the worker loop that runs them unattended.
//!
//! ```text
//!   sweep ──▶ authorized + expired lease ──▶ indeterminate (never pending, never resent)
//!   reconcile ──▶ indeterminate past its propagation window
//!                  ├─ start_reconcile (recorded BEFORE the lookup runs; at most once automatically)
//!                  ├─ PlatformLookup::find (reads the platform; never writes)
//!                  └─ record_reconcile: found ──▶ published; not found / unavailable ──▶ parked
//! ```
//!
//! The lookup is a trait so that this module never touches the browser itself: the CLI passes the browser's
//! read-back, tests may pass a lookup that reads the fixture platform's JSON API.
//!
//! Every lookup declares the platform it reads ([`PlatformLookup::binding`]): an intent of another platform is
//! never looked up or recorded through it (the worker and `--due` do not even list it), and an intent whose
//! last attempt ran with another contract version, or that was published at another origin, is looked up only
//! when a person accepts the change (recorded in its history). A found post whose permalink is not http(s)
//! inside the contract's `origins.allowed` is an alarm and a lead, never a finding.
mod browser_lookup;

use std::future::Future;
use std::time::Duration;

use serde::Serialize;

use serde_json::json;

use crate::browser::readback::{ALARM_REASON, check_id, check_link};
use crate::contract::{Binding, BindingCheck};
use crate::identity::DeliveryKey;
use crate::store::{
    EventKind, Intent, NotFoundPolicy, ReconcileOutcome, Status, Store, StoreError, SweepReport,
    Timestamp,
};

pub use browser_lookup::BrowserLookup;

/// What a lookup on the platform saw.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum LookupResult {
    /// The post is there.
    Found {
        /// Its id on the platform.
        platform_id: Option<String>,
        /// Its permalink.
        permalink: Option<String>,
        /// What the lookup saw (URLs visited, texts compared, evidence links).
        evidence: serde_json::Value,
    },
    /// The lookup ran and did not find it. This proves nothing about whether it was sent.
    NotFound {
        /// What the lookup saw.
        evidence: serde_json::Value,
    },
    /// Posts with the text are there, but none can be shown to be this account's (another author, no author
    /// shown, no handle recorded, a link outside the platform): a lead for a person, never a finding.
    Lead {
        /// The candidates (id, permalink, author, why), as evidence.
        candidates: serde_json::Value,
        /// Ids or links the page supplied that were refused: each is recorded as an alarm.
        alarms: Vec<serde_json::Value>,
        /// What the lookup saw.
        evidence: serde_json::Value,
    },
}

/// Reads the platform to find an intent's post. Implementations must never write to the platform.
pub trait PlatformLookup {
    /// What a lookup holds while it runs (the browser lookup: the account's profile lock).
    type Hold;
    /// The platform, contract version and origin this lookup reads: only intents of that platform are
    /// looked up through it.
    fn binding(&self) -> &Binding;
    /// Take what the lookup needs, BEFORE the lookup is recorded (which spends the automatic one):
    /// `Ok(None)` means busy now (for example a publish of the same account holds the browser profile);
    /// nothing is recorded and a later pass tries again.
    fn hold(&self, intent: &Intent) -> impl Future<Output = Result<Option<Self::Hold>, String>>;
    /// Look for the intent's post, holding `hold`. `Err` means the lookup could not run (the platform is
    /// unavailable).
    fn find(
        &self,
        intent: &Intent,
        hold: &Self::Hold,
    ) -> impl Future<Output = Result<LookupResult, String>>;
}

/// Errors of recovery.
#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The intent's propagation window has not passed yet: a lookup now would mean nothing.
    #[error("the propagation window has not passed: a lookup means something in {0} ms")]
    TooEarly(i64),
    /// The lookup could not start now (its browser profile is busy); nothing was recorded or spent.
    #[error("not started, nothing recorded: {0}")]
    Busy(String),
    /// The intent belongs to another platform than the lookup's contract: never touched through it.
    #[error("not looked up, nothing recorded: {0}")]
    OtherPlatform(BindingCheck),
    /// Same platform, another contract version or origin: refused unless a person accepts the change.
    #[error(
        "not looked up, nothing recorded: {0}; a person who has checked the contract runs it again with \
         --accept-contract-change (recorded in the intent's history)"
    )]
    ContractChanged(BindingCheck),
}

/// What a person asks of one reconcile, beyond the automatic lookup.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Asked {
    /// One more lookup (also on a parked intent), recorded as theirs.
    pub again: bool,
    /// Look up through another contract version or origin than the intent's, recorded as theirs.
    pub accept_contract_change: bool,
}

/// The result of reconciling one intent.
#[derive(Debug, Clone, Serialize)]
pub struct Reconciled {
    /// The intent.
    pub key: DeliveryKey,
    /// Which lookup this was (1 = the automatic one).
    pub lookup: i64,
    /// What the lookup saw (or why it could not run).
    pub outcome: ReconcileOutcome,
    /// The state afterwards.
    pub state: Status,
}

/// Settings of a reconcile pass.
#[derive(Debug, Clone, Copy)]
pub struct ReconcilePolicy {
    /// How long after the unknown outcome a lookup means anything (the contract's propagation window).
    pub propagation_ms: i64,
    /// What "not found" does.
    pub not_found: NotFoundPolicy,
    /// Bound on one lookup.
    pub lookup_timeout: Duration,
}

/// Reconcile one intent: record the lookup, run it once, record what it saw. `again` is a person asking for
/// one more lookup (recorded as their action); without it, an intent gets at most one automatic lookup.
pub async fn reconcile_one<L: PlatformLookup>(
    store: &Store,
    lookup: &L,
    key: &DeliveryKey,
    actor: &str,
    again: bool,
    policy: ReconcilePolicy,
    now: Timestamp,
) -> Result<Reconciled, RecoverError> {
    let asked = Asked {
        again,
        accept_contract_change: false,
    };
    reconcile_asked(store, lookup, key, actor, asked, policy, now).await
}

/// [`reconcile_one`] with everything a person may ask. The binding is checked first: an intent of another
/// platform is refused whatever was asked; another contract version or origin only with
/// `accept_contract_change`, which is recorded (who, which versions and origins) before the lookup.
pub async fn reconcile_asked<L: PlatformLookup>(
    store: &Store,
    lookup: &L,
    key: &DeliveryKey,
    actor: &str,
    asked: Asked,
    policy: ReconcilePolicy,
    now: Timestamp,
) -> Result<Reconciled, RecoverError> {
    let again = asked.again;
    let intent = store.intent(key).await?;
    let accepted = match lookup.binding().check_intent(&intent) {
        BindingCheck::Same => None,
        c @ BindingCheck::OtherPlatform { .. } => return Err(RecoverError::OtherPlatform(c)),
        c @ BindingCheck::Changed { .. } if !asked.accept_contract_change => {
            return Err(RecoverError::ContractChanged(c));
        }
        c @ BindingCheck::Changed { .. } => Some(c),
    };
    let due_at = intent.updated_at + policy.propagation_ms;
    if intent.state == Status::Indeterminate && !again && now.0 < due_at {
        return Err(RecoverError::TooEarly(due_at - now.0));
    }
    // What the lookup needs comes first: a lookup that cannot start must not spend the ticket.
    let hold = match lookup.hold(&intent).await {
        Ok(Some(h)) => h,
        Ok(None) => {
            return Err(RecoverError::Busy(
                "the lookup's browser profile is busy; a later pass tries again".into(),
            ));
        }
        Err(e) => return Err(RecoverError::Busy(e)),
    };
    if let Some(BindingCheck::Changed { version, origin }) = &accepted {
        // The person's acceptance is history: who looked through which contract, before the lookup runs.
        let b = lookup.binding();
        store
            .note(
                key,
                EventKind::Note,
                actor,
                "contract change accepted for a reconcile lookup",
                json!({
                    "accept_contract_change": true,
                    "version": version.as_ref().map(|(r, g)| json!({ "recorded": r, "given": g })),
                    "origin": origin.as_ref().map(|(r, g)| json!({ "recorded": r, "given": g })),
                    "platform": b.platform,
                }),
                now,
            )
            .await?;
    }
    // Recorded before the lookup runs: a crash during the lookup leaves a visible, spent ticket (the
    // sweeper parks it once its lookup lease runs out).
    let ticket = store.start_reconcile(key, actor, again, now).await?;
    let found = lookup.find(&intent, &hold);
    let mut policy = policy;
    let result = match tokio::time::timeout(policy.lookup_timeout, found).await {
        Ok(Ok(r)) => Ok(refuse_outside(r, lookup.binding())),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(format!(
            "lookup timed out after {} ms",
            policy.lookup_timeout.as_millis()
        )),
    };
    // Each refused id or link is an alarm in the history. One the store does not take is not dropped: a
    // lead is always parked (below), and the failure goes into the evidence of that parking next to the
    // alarms themselves; when the store is unreachable, recording the lookup fails too and the caller
    // reports that error (non-zero exit).
    let mut unrecorded = None;
    if let Ok(LookupResult::Lead { alarms, .. }) = &result {
        for alarm in alarms {
            if let Err(e) = store
                .note(
                    key,
                    EventKind::Evidence,
                    actor,
                    &format!("alarm: {ALARM_REASON}"),
                    json!({ "alarm": alarm, "lookup": ticket.number }),
                    Timestamp::now().max(now),
                )
                .await
            {
                tracing::warn!(error = %e, "a reconcile alarm could not be recorded");
                unrecorded.get_or_insert_with(|| e.to_string());
            }
        }
    }
    let outcome = match result {
        Ok(LookupResult::Found {
            platform_id,
            permalink,
            evidence,
        }) => ReconcileOutcome::Found {
            platform_id,
            permalink,
            evidence,
        },
        Ok(LookupResult::NotFound { evidence }) => ReconcileOutcome::NotFound { evidence },
        Ok(LookupResult::Lead {
            candidates,
            alarms,
            evidence,
        }) => {
            // Not this account's post as far as anyone can show: for the state table a lookup that did not
            // find it, with the lead attached, and always parked (a person decides, even with --stay).
            policy.not_found = NotFoundPolicy::Park;
            let mut evidence = json!({ "lead": candidates, "alarms": alarms, "lookup": evidence });
            if let Some(e) = unrecorded {
                evidence["alarms_not_recorded"] = json!(e);
            }
            ReconcileOutcome::NotFound { evidence }
        }
        Err(error) => ReconcileOutcome::Unavailable { error },
    };
    let state = store
        .record_reconcile(
            &ticket,
            &outcome,
            policy.not_found,
            Timestamp::now().max(now),
        )
        .await?;
    Ok(Reconciled {
        key: key.clone(),
        lookup: ticket.number,
        outcome,
        state,
    })
}

/// A found post is a finding only with an id or permalink that stays inside the platform: whatever lookup
/// produced it, a permalink that is not http(s) inside `origins.allowed` (a `javascript:` URL, another site)
/// or an id that cannot be one turns it into a lead with an alarm.
fn refuse_outside(r: LookupResult, binding: &Binding) -> LookupResult {
    let LookupResult::Found {
        platform_id,
        permalink,
        evidence,
    } = r
    else {
        return r;
    };
    let mut alarms = Vec::new();
    if let Some(id) = &platform_id
        && let Err(why) = check_id(id)
    {
        alarms.push(json!({ "what": "id", "value": id, "why": why }));
    }
    if let Some(link) = &permalink
        && let Err(why) = check_link(link, &binding.allowed_origins)
    {
        alarms.push(json!({ "what": "permalink", "value": link, "why": why }));
    }
    if alarms.is_empty() {
        return LookupResult::Found {
            platform_id,
            permalink,
            evidence,
        };
    }
    LookupResult::Lead {
        candidates: json!([{ "id": platform_id, "permalink": null, "why": "link_refused" }]),
        alarms,
        evidence,
    }
}

/// Every indeterminate intent whose propagation window has passed and that has had no lookup yet.
pub async fn due_for_reconcile(
    store: &Store,
    propagation_ms: i64,
    now: Timestamp,
) -> Result<Vec<Intent>, StoreError> {
    Ok(store
        .intents(Some(Status::Indeterminate), 10_000)
        .await?
        .into_iter()
        .filter(|i| i.reconcile_count == 0 && i.updated_at + propagation_ms <= now.0)
        .collect())
}

/// [`due_for_reconcile`], only the intents of `binding`'s platform: another platform's intents are not
/// looked up through it, nor listed (an intent of the same platform with another contract version or origin
/// is listed, and refused with [`RecoverError::ContractChanged`] when reconciled).
pub async fn due_through(
    store: &Store,
    binding: &Binding,
    propagation_ms: i64,
    now: Timestamp,
) -> Result<Vec<Intent>, StoreError> {
    Ok(due_for_reconcile(store, propagation_ms, now)
        .await?
        .into_iter()
        .filter(|i| !matches!(binding.check_intent(i), BindingCheck::OtherPlatform { .. }))
        .collect())
}

/// What one worker pass did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PassReport {
    /// The sweep.
    pub sweep: SweepReport,
    /// Each reconcile, in order.
    pub reconciled: Vec<Reconciled>,
    /// Intents whose reconcile failed in the store (another process got there first, ...), with the reason.
    pub skipped: Vec<(DeliveryKey, String)>,
}

/// One pass: sweep, then reconcile everything due. Safe to run from many processes at once: every move is a
/// guarded statement, and a lookup another process already recorded is skipped.
pub async fn pass<L: PlatformLookup>(
    store: &Store,
    lookup: &L,
    actor: &str,
    policy: ReconcilePolicy,
    now: Timestamp,
) -> Result<PassReport, StoreError> {
    let sweep = store.sweep(actor, now).await?;
    let mut report = PassReport {
        sweep,
        ..PassReport::default()
    };
    for intent in due_through(store, lookup.binding(), policy.propagation_ms, now).await? {
        match reconcile_one(store, lookup, &intent.key, actor, false, policy, now).await {
            Ok(r) => report.reconciled.push(r),
            Err(e) => report.skipped.push((intent.key.clone(), e.to_string())),
        }
    }
    Ok(report)
}

/// Run passes every `interval` until `shutdown` resolves. A pass in progress is finished before returning
/// (every step it takes leaves the intent in a declared state), so stopping never cuts a reconcile in half.
pub async fn run_worker<L, F, R>(
    store: &Store,
    lookup: &L,
    actor: &str,
    policy: ReconcilePolicy,
    interval: Duration,
    shutdown: F,
    mut on_pass: R,
) -> Result<u64, StoreError>
where
    L: PlatformLookup,
    F: Future<Output = ()>,
    R: FnMut(&PassReport),
{
    tokio::pin!(shutdown);
    let mut passes = 0;
    loop {
        let report = pass(store, lookup, actor, policy, Timestamp::now()).await?;
        passes += 1;
        on_pass(&report);
        tokio::select! {
            _ = &mut shutdown => return Ok(passes),
            _ = tokio::time::sleep(interval) => {}
        }
    }
}
