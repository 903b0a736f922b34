//! Recovery against the real fixture platform: one recorded lookup per indeterminate intent, found ->
//! published, not found or unavailable -> parked, never a resend; the worker loop sweeps and reconciles and
//! stops cleanly.
use crate::kit;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::kit::{Backend, test_db};
use oncepost::contract::Binding;
use oncepost::fixture_platform::{FixtureConfig, FixturePlatform, RunningPlatform};
use oncepost::identity::{ActionKind, CanonicalRequest, DeliveryKey, normalize_text};
use oncepost::recover::{self, LookupResult, PlatformLookup, ReconcilePolicy, RecoverError};
use oncepost::store::*;
use serde_json::json;

/// Reads the fixture platform's post list over HTTP (GET only) and matches the normalized text exactly.
struct ApiLookup {
    base: String,
    calls: Arc<AtomicUsize>,
    binding: Binding,
}

/// The platform this lookup reads: the fixture platform, as the intents' attempts began ("c").
fn fixture_binding(base: &str) -> Binding {
    Binding {
        platform: "fixture".into(),
        version: "c".into(),
        origin: base.into(),
        allowed_origins: vec![base.into()],
    }
}

impl PlatformLookup for ApiLookup {
    type Hold = ();

    fn binding(&self) -> &Binding {
        &self.binding
    }

    async fn hold(&self, _intent: &Intent) -> Result<Option<()>, String> {
        Ok(Some(()))
    }

    async fn find(&self, intent: &Intent, _hold: &()) -> Result<LookupResult, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let url = format!("{}/api/posts", self.base);
        let body = reqwest::get(&url)
            .await
            .map_err(|e| e.to_string())?
            .text()
            .await
            .map_err(|e| e.to_string())?;
        let posts: Vec<serde_json::Value> =
            serde_json::from_str(&body).map_err(|e| e.to_string())?;
        let want = intent.request.text.clone().unwrap_or_default();
        let hit = posts
            .iter()
            .find(|p| p["text"].as_str().map(normalize_text).as_deref() == Some(want.as_str()));
        Ok(match hit {
            Some(p) => {
                let id = p["id"].as_str().unwrap_or_default().to_string();
                LookupResult::Found {
                    permalink: Some(format!("{}/p/{id}", self.base)),
                    platform_id: Some(id),
                    evidence: json!({ "searched": url, "posts": posts.len() }),
                }
            }
            None => LookupResult::NotFound {
                evidence: json!({ "searched": url, "posts": posts.len() }),
            },
        })
    }
}

async fn platform() -> (RunningPlatform, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let p = FixturePlatform::start(FixtureConfig::new(dir.path()))
        .await
        .unwrap();
    (p, dir)
}

/// Publish a post on the platform directly, as a page would (CSRF token from the compose page).
async fn post_directly(base: &str, text: &str) -> String {
    let page = reqwest::get(format!("{base}/compose"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let token = page
        .split("name=\"csrf-token\" content=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    let body = reqwest::Client::new()
        .post(format!("{base}/api/posts"))
        .header("x-csrf-token", token)
        .header("content-type", "application/json")
        .body(json!({ "text": text, "title": "" }).to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let r: serde_json::Value = serde_json::from_str(&body).unwrap();
    r["id"].as_str().unwrap().to_string()
}

/// An intent left indeterminate by a worker that sent and lost the answer.
async fn indeterminate(store: &Store, text: &str) -> DeliveryKey {
    let key = store
        .create_intent(
            &NewIntent {
                account: "alice".into(),
                action: ActionKind::Post,
                target: String::new(),
                request: CanonicalRequest::new(Some(text), &BTreeMap::new()),
                source: None,
            },
            Timestamp::now(),
        )
        .await
        .unwrap()
        .intent
        .key;
    let claim = match store.begin(&key, "w", "c", Timestamp::now()).await.unwrap() {
        Begun::Claimed(c) => c,
        other => panic!("{other:?}"),
    };
    let auth = store
        .authorize_dispatch(&claim, "c", Timestamp::now())
        .await
        .unwrap();
    store
        .settle(
            &auth.consume(),
            &Settlement::Indeterminate {
                reason: "connection reset after the request".into(),
                details: json!({}),
            },
            Timestamp::now(),
        )
        .await
        .unwrap();
    key
}

fn policy(propagation_ms: i64) -> ReconcilePolicy {
    ReconcilePolicy {
        propagation_ms,
        not_found: NotFoundPolicy::Park,
        lookup_timeout: Duration::from_secs(5),
    }
}

async fn setup(
    b: Backend,
) -> (
    kit::TestDb,
    RunningPlatform,
    tempfile::TempDir,
    ApiLookup,
    Arc<AtomicUsize>,
) {
    let db = test_db(b, Policy::default()).await;
    db.store
        .add_account(
            &NewAccount {
                name: "alice".into(),
                platform: "fixture".into(),
                min_interval_ms: 0,
                dup_window_ms: 0,
            },
            "t",
            Timestamp::now(),
        )
        .await
        .unwrap();
    let (p, dir) = platform().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let lookup = ApiLookup {
        base: p.base_url(),
        calls: calls.clone(),
        binding: fixture_binding(&p.base_url()),
    };
    (db, p, dir, lookup, calls)
}

async fn found_post_publishes_with_the_platform_id_bound(b: Backend) {
    let (db, p, _d, lookup, calls) = setup(b).await;
    let key = indeterminate(&db.store, "it did go out").await;
    let id = post_directly(&p.base_url(), "it did go out").await;
    let before = p.stats().create_arrivals;
    let r = recover::reconcile_one(
        &db.store,
        &lookup,
        &key,
        "reconciler",
        false,
        policy(0),
        Timestamp::now(),
    )
    .await
    .unwrap();
    assert_eq!(r.state, Status::Published);
    let it = db.store.intent(&key).await.unwrap();
    assert_eq!(it.platform_id.as_deref(), Some(id.as_str()));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        p.stats().create_arrivals,
        before,
        "reconcile wrote to the platform"
    );
}

/// A lookup that is busy the first time it is asked (its browser profile held by a publish).
struct BusyFirst {
    inner: ApiLookup,
    asked: AtomicUsize,
}

impl PlatformLookup for BusyFirst {
    type Hold = ();

    fn binding(&self) -> &Binding {
        self.inner.binding()
    }

    async fn hold(&self, intent: &Intent) -> Result<Option<()>, String> {
        if self.asked.fetch_add(1, Ordering::SeqCst) == 0 {
            return Ok(None);
        }
        self.inner.hold(intent).await
    }

    async fn find(&self, intent: &Intent, hold: &()) -> Result<LookupResult, String> {
        self.inner.find(intent, hold).await
    }
}

/// A lookup that cannot start (busy profile) records nothing and spends nothing: the intent stays
/// indeterminate with its automatic lookup, and the next pass runs it.
async fn a_lookup_that_cannot_start_spends_nothing(b: Backend) {
    let (db, p, _d, inner, calls) = setup(b).await;
    let key = indeterminate(&db.store, "the profile was busy").await;
    post_directly(&p.base_url(), "the profile was busy").await;
    let lookup = BusyFirst {
        inner,
        asked: AtomicUsize::new(0),
    };
    let busy = recover::reconcile_one(
        &db.store,
        &lookup,
        &key,
        "reconciler",
        false,
        policy(0),
        Timestamp::now(),
    )
    .await
    .unwrap_err();
    assert!(matches!(busy, RecoverError::Busy(_)), "{busy}");
    let it = db.store.intent(&key).await.unwrap();
    assert_eq!(it.state, Status::Indeterminate);
    assert_eq!(it.reconcile_count, 0, "the automatic lookup was spent");
    assert_eq!(it.lookup_expires_at, None);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let due = recover::due_for_reconcile(&db.store, 0, Timestamp::now())
        .await
        .unwrap();
    assert!(due.iter().any(|i| i.key == key), "no longer due");
    let r = recover::reconcile_one(
        &db.store,
        &lookup,
        &key,
        "reconciler",
        false,
        policy(0),
        Timestamp::now(),
    )
    .await
    .unwrap();
    assert_eq!(r.state, Status::Published);
    assert_eq!(r.lookup, 1);
}

async fn not_found_parks_and_nothing_is_resent(b: Backend) {
    let (db, p, _d, lookup, calls) = setup(b).await;
    let key = indeterminate(&db.store, "maybe it went out").await;
    let r = recover::reconcile_one(
        &db.store,
        &lookup,
        &key,
        "reconciler",
        false,
        policy(0),
        Timestamp::now(),
    )
    .await
    .unwrap();
    assert_eq!(r.state, Status::Parked);
    assert_eq!(
        p.stats().create_arrivals,
        0,
        "a create request followed an indeterminate state"
    );
    // the automatic lookup is spent: a second one is refused BEFORE any lookup runs
    let again = recover::reconcile_one(
        &db.store,
        &lookup,
        &key,
        "reconciler",
        false,
        policy(0),
        Timestamp::now(),
    )
    .await;
    assert!(
        matches!(
            again,
            Err(RecoverError::Store(StoreError::WrongState { .. }))
        ),
        "{again:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // a person asks again: recorded as theirs, runs once more
    let r2 = recover::reconcile_one(
        &db.store,
        &lookup,
        &key,
        "dana",
        true,
        policy(0),
        Timestamp::now(),
    )
    .await
    .unwrap();
    assert_eq!((r2.lookup, r2.state), (2, Status::Parked));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let tl = db.store.timeline(&key).await.unwrap();
    let starts: Vec<_> = tl
        .events
        .iter()
        .filter(|e| e.kind == EventKind::ReconcileStarted)
        .map(|e| e.actor.clone())
        .collect();
    assert_eq!(starts, vec!["reconciler".to_string(), "dana".to_string()]);
    assert_eq!(tl.attempts.len(), 1, "reconcile made an attempt");
}

async fn too_early_records_nothing(b: Backend) {
    let (db, _p, _d, lookup, calls) = setup(b).await;
    let key = indeterminate(&db.store, "wait for it").await;
    let r = recover::reconcile_one(
        &db.store,
        &lookup,
        &key,
        "reconciler",
        false,
        policy(60_000),
        Timestamp::now(),
    )
    .await;
    assert!(matches!(r, Err(RecoverError::TooEarly(_))), "{r:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(db.store.intent(&key).await.unwrap().reconcile_count, 0);
}

async fn unavailable_platform_parks_with_the_reason(b: Backend) {
    let (db, p, _d, lookup, _calls) = setup(b).await;
    let key = indeterminate(&db.store, "platform is down").await;
    p.shutdown().await;
    let r = recover::reconcile_one(
        &db.store,
        &lookup,
        &key,
        "reconciler",
        false,
        policy(0),
        Timestamp::now(),
    )
    .await
    .unwrap();
    assert_eq!(r.state, Status::Parked);
    assert!(
        matches!(r.outcome, ReconcileOutcome::Unavailable { .. }),
        "{:?}",
        r.outcome
    );
}

async fn worker_sweeps_reconciles_and_stops_cleanly(b: Backend) {
    let db = test_db(
        b,
        Policy {
            dispatch_lease_ms: 1,
            ..Policy::default()
        },
    )
    .await;
    db.store
        .add_account(
            &NewAccount {
                name: "alice".into(),
                platform: "fixture".into(),
                min_interval_ms: 0,
                dup_window_ms: 0,
            },
            "t",
            Timestamp::now(),
        )
        .await
        .unwrap();
    let (p, _dir) = platform().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let lookup = ApiLookup {
        base: p.base_url(),
        calls: calls.clone(),
        binding: fixture_binding(&p.base_url()),
    };
    // a worker that authorized and then crashed: its lease (1 ms) expires
    let key = db
        .store
        .create_intent(
            &NewIntent {
                account: "alice".into(),
                action: ActionKind::Post,
                target: String::new(),
                request: CanonicalRequest::new(Some("crashed worker"), &BTreeMap::new()),
                source: None,
            },
            Timestamp::now(),
        )
        .await
        .unwrap()
        .intent
        .key;
    let claim = match db
        .store
        .begin(&key, "crashed", "c", Timestamp::now())
        .await
        .unwrap()
    {
        Begun::Claimed(c) => c,
        other => panic!("{other:?}"),
    };
    let _auth = db
        .store
        .authorize_dispatch(&claim, "c", Timestamp::now())
        .await
        .unwrap();
    post_directly(&p.base_url(), "crashed worker").await; // the crashed worker's post did land
    tokio::time::sleep(Duration::from_millis(5)).await;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let mut reports = Vec::new();
    let mut tx = Some(tx);
    let passes = recover::run_worker(
        &db.store,
        &lookup,
        "worker",
        policy(0),
        Duration::from_millis(50),
        async {
            let _ = rx.await;
        },
        |r| {
            reports.push(r.clone());
            if let Some(tx) = tx.take() {
                let _ = tx.send(());
            }
        },
    )
    .await
    .unwrap();
    assert!(passes >= 1);
    assert_eq!(reports[0].sweep.made_indeterminate, vec![key.clone()]);
    assert_eq!(reports[0].reconciled.len(), 1);
    assert_eq!(
        db.store.intent(&key).await.unwrap().state,
        Status::Published
    );
    assert_eq!(
        p.stats().create_arrivals,
        1,
        "only the crashed worker's own post"
    );
}

on_both_backends!(
    a_lookup_that_cannot_start_spends_nothing,
    found_post_publishes_with_the_platform_id_bound,
    not_found_parks_and_nothing_is_resent,
    too_early_records_nothing,
    unavailable_platform_parks_with_the_reason,
    worker_sweeps_reconciles_and_stops_cleanly,
);
