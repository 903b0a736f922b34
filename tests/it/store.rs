//! The intent store's proof lane: every item of the at-most-once checklist, on a real SQLite file and a real
//! PostgreSQL database (one database per test, migrated from 1). Each test is a behaviour sentence; each guard
//! in src/store has at least one test here that goes red when the guard is removed.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::kit::{Backend, TestDb, test_db};
use oncepost::identity::{ActionKind, CanonicalRequest, DeliveryKey};
use oncepost::store::*;
use serde_json::json;

const T0: i64 = 1_800_000_000_000;
const CONTRACT: &str = "contract-v1";
const WINDOW: i64 = 60_000;

fn policy() -> Policy {
    Policy {
        claim_lease_ms: 10_000,
        dispatch_lease_ms: 20_000,
        lookup_lease_ms: 30_000,
        max_attempts: 3,
        lock_wait_ms: 15_000,
    }
}

fn at(ms: i64) -> Timestamp {
    Timestamp(T0 + ms)
}

async fn db(b: Backend) -> TestDb {
    let db = test_db(b, policy()).await;
    add_account(&db.store, "alice", "fixture").await;
    db
}

async fn add_account(store: &Store, name: &str, platform: &str) {
    store
        .add_account(
            &NewAccount {
                name: name.into(),
                platform: platform.into(),
                min_interval_ms: 0,
                dup_window_ms: WINDOW,
            },
            "test",
            at(0),
        )
        .await
        .expect("add account");
}

fn post(account: &str, text: &str, target: &str) -> NewIntent {
    NewIntent {
        account: account.into(),
        action: ActionKind::Post,
        target: target.into(),
        request: CanonicalRequest::new(Some(text), &BTreeMap::new()),
        source: None,
    }
}

async fn create(store: &Store, account: &str, text: &str) -> DeliveryKey {
    store
        .create_intent(&post(account, text, ""), at(0))
        .await
        .expect("create")
        .intent
        .key
}

async fn claim(store: &Store, key: &DeliveryKey, owner: &str, now: Timestamp) -> Claim {
    match store.begin(key, owner, CONTRACT, now).await.expect("begin") {
        Begun::Claimed(c) => c,
        other => panic!("expected a claim, got {other:?}"),
    }
}

async fn authorized(
    store: &Store,
    text: &str,
    now: Timestamp,
) -> (DeliveryKey, DispatchAuthorization) {
    let key = create(store, "alice", text).await;
    let c = claim(store, &key, "w1", now).await;
    let auth = store
        .authorize_dispatch(&c, CONTRACT, now)
        .await
        .expect("authorize");
    (key, auth)
}

fn published() -> Settlement {
    Settlement::Published {
        platform_id: Some("p1".into()),
        permalink: Some("http://x/p/p1".into()),
        verdict: json!({"text": "match"}),
    }
}

fn failed() -> Settlement {
    Settlement::Failed {
        proof: json!({"connect": "refused before any byte"}),
    }
}

async fn attempts(store: &Store, key: &DeliveryKey) -> usize {
    store.timeline(key).await.expect("timeline").attempts.len()
}

fn refusal(r: Result<DispatchAuthorization, StoreError>) -> AuthorizeRefusal {
    match r {
        Err(StoreError::Refused(why)) => why,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------------------
// Creation and identity

async fn create_intent_is_idempotent(b: Backend) {
    let db = db(b).await;
    let first = db
        .store
        .create_intent(&post("alice", "hello", ""), at(0))
        .await
        .unwrap();
    let again = db
        .store
        .create_intent(&post("alice", "hello\r\n", ""), at(5))
        .await
        .unwrap();
    assert!(first.created);
    assert!(!again.created, "the same request made a second intent");
    assert_eq!(first.intent.key, again.intent.key);
    assert_eq!(db.store.intents(None, 100).await.unwrap().len(), 1);
    assert_eq!(
        db.store
            .timeline(&first.intent.key)
            .await
            .unwrap()
            .events
            .len(),
        1
    );
    // a like of the same target is another intent
    let like = NewIntent {
        action: ActionKind::Like,
        request: CanonicalRequest::default(),
        ..post("alice", "", "")
    };
    assert!(db.store.create_intent(&like, at(0)).await.unwrap().created);
}

/// The account's other posts, newest first, without the one asked about and without other accounts' (what a
/// create request must not carry beside its own post: door/carried.rs).
async fn other_texts_are_the_accounts_newest_others(b: Backend) {
    let db = db(b).await;
    add_account(&db.store, "bob", "fixture").await;
    let mut keys = Vec::new();
    for t in ["one", "two", "three", "four"] {
        keys.push(create(&db.store, "alice", t).await);
    }
    create(&db.store, "bob", "not alice's").await;
    let like = NewIntent {
        action: ActionKind::Like,
        request: CanonicalRequest::default(),
        ..post("alice", "", "p1")
    };
    db.store.create_intent(&like, at(0)).await.unwrap();
    let texts = db.store.other_texts("alice", &keys[3], 2).await.unwrap();
    assert_eq!(
        texts,
        vec!["three"],
        "the newest two: a like (no text) and three"
    );
    let texts = db.store.other_texts("alice", &keys[1], 10).await.unwrap();
    assert_eq!(texts, vec!["four", "three", "one"], "not two itself");
    assert!(
        db.store
            .other_texts("carol", &keys[0], 10)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn create_for_unknown_account_is_refused(b: Backend) {
    let db = db(b).await;
    let err = db
        .store
        .create_intent(&post("mallory", "hi", ""), at(0))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::UnknownAccount(ref a) if a == "mallory"),
        "{err}"
    );
    assert!(db.store.intents(None, 10).await.unwrap().is_empty());
}

async fn delivery_keys_and_attempt_tokens_are_unique_in_the_database(b: Backend) {
    let db = db(b).await;
    let key = create(&db.store, "alice", "x").await;
    let c = claim(&db.store, &key, "w1", at(0)).await;
    let dup_key = format!(
        "INSERT INTO intents (delivery_key, account, platform, action_kind, target, request_json, content_hash, \
         state, max_attempts, created_at, updated_at) VALUES ('{key}', 'alice', 'fixture', 'post', '', '{{}}', 'h', \
         'pending', 3, 0, 0)"
    );
    assert!(
        db.store.execute_raw_for_tests(&dup_key).await.is_err(),
        "a second row with the same key was accepted"
    );
    let dup_token = format!(
        "INSERT INTO attempts (token, intent_id, ordinal, account, action_kind, credential_version, contract_hash, \
         generation, epoch, owner, created_at) SELECT '{}', id, 9, 'alice', 'post', 1, 'c', 999, 1, 'x', 0 FROM intents",
        c.fence.attempt
    );
    assert!(
        db.store.execute_raw_for_tests(&dup_token).await.is_err(),
        "a second attempt with the same token was accepted"
    );
}

// ---------------------------------------------------------------------------------------------------------
// begin: atomic attempt creation, executor election, restart protection

async fn begin_mints_exactly_one_attempt_and_elects_one_executor(b: Backend) {
    let db = db(b).await;
    let key = create(&db.store, "alice", "x").await;
    let c = claim(&db.store, &key, "w1", at(0)).await;
    assert_eq!(c.ordinal, 1);
    let second = db
        .store
        .begin(&key, "w2", CONTRACT, at(1))
        .await
        .unwrap_err();
    assert!(
        matches!(second, StoreError::LeaseHeld { ref owner, .. } if owner == "w1"),
        "{second}"
    );
    // a restarted w1 (same name, new process) is also refused while the claim is live
    assert!(db.store.begin(&key, "w1", CONTRACT, at(2)).await.is_err());
    assert_eq!(attempts(&db.store, &key).await, 1);
    let it = db.store.intent(&key).await.unwrap();
    assert_eq!((it.state, it.attempt_count), (Status::Pending, 1));
}

async fn expired_claim_is_taken_over_and_its_worker_cannot_authorize(b: Backend) {
    let db = db(b).await;
    let key = create(&db.store, "alice", "x").await;
    let a = claim(&db.store, &key, "A", at(0)).await;
    let bc = claim(&db.store, &key, "B", at(10_001)).await;
    assert!(bc.fence.generation > a.fence.generation);
    assert_ne!(bc.fence.attempt, a.fence.attempt);
    let why = refusal(db.store.authorize_dispatch(&a, CONTRACT, at(10_002)).await);
    assert!(
        matches!(why, AuthorizeRefusal::StaleGeneration { .. }),
        "{why:?}"
    );
    let tl = db.store.timeline(&key).await.unwrap();
    assert_eq!(tl.attempts.len(), 2);
    assert!(tl.events.iter().any(|e| e.kind == EventKind::ClaimReleased
        && e.attempt.as_deref() == Some(a.fence.attempt.as_str())));
    db.store
        .authorize_dispatch(&bc, CONTRACT, at(10_003))
        .await
        .expect("the new executor authorizes");
}

async fn begin_on_a_revoked_account_mints_nothing(b: Backend) {
    let db = db(b).await;
    let key = create(&db.store, "alice", "x").await;
    db.store
        .revoke_account("alice", "ops", at(1))
        .await
        .unwrap();
    let e = db
        .store
        .begin(&key, "w", CONTRACT, at(2))
        .await
        .unwrap_err();
    assert!(
        matches!(e, StoreError::Refused(AuthorizeRefusal::Revoked { .. })),
        "{e}"
    );
    assert_eq!(attempts(&db.store, &key).await, 0);
    assert_eq!(db.store.intent(&key).await.unwrap().state, Status::Pending);
}

async fn a_restarted_worker_with_the_same_id_cannot_use_its_old_claim(b: Backend) {
    let db = db(b).await;
    let key = create(&db.store, "alice", "x").await;
    let old = claim(&db.store, &key, "host:1", at(0)).await;
    // the same worker id comes back after its claim expired and begins again
    let new = claim(&db.store, &key, "host:1", at(10_001)).await;
    let why = refusal(
        db.store
            .authorize_dispatch(&old, CONTRACT, at(10_002))
            .await,
    );
    assert!(
        matches!(why, AuthorizeRefusal::StaleGeneration { .. }),
        "{why:?}"
    );
    let e = db
        .store
        .settle(&old.fence, &failed(), at(10_003))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::Fenced { .. }), "{e}");
    db.store
        .authorize_dispatch(&new, CONTRACT, at(10_004))
        .await
        .expect("the current claim authorizes");
}

async fn begin_refuses_every_non_pending_state(b: Backend) {
    let db = db(b).await;
    let (key, auth) = authorized(&db.store, "x", at(0)).await;
    let e = db
        .store
        .begin(&key, "w2", CONTRACT, at(30_000))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            StoreError::WrongState {
                actual: Status::Authorized,
                ..
            }
        ),
        "{e}"
    );
    db.store
        .settle(&auth.consume(), &published(), at(1))
        .await
        .unwrap();
    let e = db
        .store
        .begin(&key, "w2", CONTRACT, at(2))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            StoreError::WrongState {
                actual: Status::Published,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(attempts(&db.store, &key).await, 1);
}

// ---------------------------------------------------------------------------------------------------------
// authorize_dispatch: the before-byte checkpoint re-checks each condition; each failing alone refuses

async fn authorize_passes_when_nothing_changed(b: Backend) {
    let db = db(b).await;
    let key = create(&db.store, "alice", "x").await;
    let c = claim(&db.store, &key, "w1", at(0)).await;
    let auth = db
        .store
        .authorize_dispatch(&c, CONTRACT, at(9_999))
        .await
        .expect("authorized");
    assert_eq!(auth.lease_expires_at(), at(9_999).0 + 20_000);
    let it = db.store.intent(&key).await.unwrap();
    assert_eq!(it.state, Status::Authorized);
    // one authorization per claim: a second call is refused
    let why = refusal(db.store.authorize_dispatch(&c, CONTRACT, at(10_000)).await);
    assert_eq!(
        why,
        AuthorizeRefusal::NotPending {
            actual: Status::Authorized
        }
    );
    // The same with no duplicate window: nothing but the intent's own guard refuses the second call (with a
    // window, the text claim's window refuses it too, and hid a missing state guard on SQLite).
    db.store
        .add_account(
            &NewAccount {
                name: "nowindow".into(),
                platform: "fixture".into(),
                min_interval_ms: 0,
                dup_window_ms: 0,
            },
            "test",
            at(0),
        )
        .await
        .unwrap();
    let key = create(&db.store, "nowindow", "x").await;
    let c = claim(&db.store, &key, "w1", at(0)).await;
    db.store
        .authorize_dispatch(&c, CONTRACT, at(1))
        .await
        .expect("authorized");
    let why = refusal(db.store.authorize_dispatch(&c, CONTRACT, at(2)).await);
    assert_eq!(
        why,
        AuthorizeRefusal::NotPending {
            actual: Status::Authorized
        }
    );
}

/// Each case: a fresh account and intent, one change made between begin and authorize, the expected refusal.
async fn authorize_refuses_each_condition_alone(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let mut n = 0;
    let mut setup = |name: &str| {
        n += 1;
        format!("{name}{n}")
    };
    // kill switches: global, platform, account
    for (label, scope_of) in [
        ("global", None),
        ("platform", Some("platform")),
        ("account", Some("account")),
    ] {
        let acct = setup(label);
        let platform = format!("plat-{acct}");
        add_account(s, &acct, &platform).await;
        let key = create(s, &acct, "x").await;
        let c = claim(s, &key, "w", at(0)).await;
        let scope = match scope_of {
            None => SwitchScope::Global,
            Some("platform") => SwitchScope::Platform(platform.clone()),
            _ => SwitchScope::Account(acct.clone()),
        };
        s.set_switch(&scope, true, "ops", at(1)).await.unwrap();
        let why = refusal(s.authorize_dispatch(&c, CONTRACT, at(2)).await);
        assert!(
            matches!(why, AuthorizeRefusal::KillSwitch { ref scope, .. } if scope == label),
            "{label}: {why:?}"
        );
        // a switch on ANOTHER platform/account does not stop this one
        s.set_switch(&scope, false, "ops", at(3)).await.unwrap();
        s.set_switch(
            &SwitchScope::Platform("elsewhere".into()),
            true,
            "ops",
            at(3),
        )
        .await
        .unwrap();
        s.set_switch(
            &SwitchScope::Account("someone-else".into()),
            true,
            "ops",
            at(3),
        )
        .await
        .unwrap();
        s.authorize_dispatch(&c, CONTRACT, at(4))
            .await
            .unwrap_or_else(|e| panic!("{label} released: {e}"));
    }
    // revoked
    let acct = setup("rev");
    add_account(s, &acct, "fixture").await;
    let key = create(s, &acct, "x").await;
    let c = claim(s, &key, "w", at(0)).await;
    s.revoke_account(&acct, "ops", at(1)).await.unwrap();
    assert!(matches!(
        refusal(s.authorize_dispatch(&c, CONTRACT, at(2)).await),
        AuthorizeRefusal::Revoked { .. }
    ));
    // credential rotated
    let acct = setup("rot");
    add_account(s, &acct, "fixture").await;
    let key = create(s, &acct, "x").await;
    let c = claim(s, &key, "w", at(0)).await;
    s.rotate_account(&acct, "ops", at(1)).await.unwrap();
    let why = refusal(s.authorize_dispatch(&c, CONTRACT, at(2)).await);
    assert_eq!(
        why,
        AuthorizeRefusal::CredentialChanged {
            held: 1,
            current: 2
        }
    );
    // contract changed
    let acct = setup("con");
    add_account(s, &acct, "fixture").await;
    let key = create(s, &acct, "x").await;
    let c = claim(s, &key, "w", at(0)).await;
    let why = refusal(s.authorize_dispatch(&c, "contract-v2", at(2)).await);
    assert!(
        matches!(why, AuthorizeRefusal::ContractChanged { .. }),
        "{why:?}"
    );
    s.authorize_dispatch(&c, CONTRACT, at(3))
        .await
        .expect("same contract passes");
    // lease expired (claim still held by nobody else)
    let acct = setup("exp");
    add_account(s, &acct, "fixture").await;
    let key = create(s, &acct, "x").await;
    let c = claim(s, &key, "w", at(0)).await;
    let why = refusal(s.authorize_dispatch(&c, CONTRACT, at(10_000)).await);
    assert_eq!(why, AuthorizeRefusal::LeaseExpired);
    // parked meanwhile by an operator
    let acct = setup("park");
    add_account(s, &acct, "fixture").await;
    let key = create(s, &acct, "x").await;
    let c = claim(s, &key, "w", at(0)).await;
    s.park(&key, "ops", "stop this one", at(1)).await.unwrap();
    let why = refusal(s.authorize_dispatch(&c, CONTRACT, at(2)).await);
    assert_eq!(
        why,
        AuthorizeRefusal::NotPending {
            actual: Status::Parked
        }
    );
    // rate interval: second dispatch of the account before min_interval has passed
    let acct = setup("rate");
    s.add_account(
        &NewAccount {
            name: acct.clone(),
            platform: "fixture".into(),
            min_interval_ms: 5_000,
            dup_window_ms: 0,
        },
        "t",
        at(0),
    )
    .await
    .unwrap();
    let k1 = create(s, &acct, "one").await;
    let k2 = create(s, &acct, "two").await;
    let c1 = claim(s, &k1, "w", at(0)).await;
    s.authorize_dispatch(&c1, CONTRACT, at(0)).await.unwrap();
    let c2 = claim(s, &k2, "w", at(4_999)).await;
    let why = refusal(s.authorize_dispatch(&c2, CONTRACT, at(4_999)).await);
    assert!(
        matches!(
            why,
            AuthorizeRefusal::RateInterval {
                since_ms: 4_999,
                min_interval_ms: 5_000,
                ..
            }
        ),
        "{why:?}"
    );
    s.authorize_dispatch(&c2, CONTRACT, at(5_000))
        .await
        .expect("interval passed");
    // The interval raised after a dispatch holds at once: the next dispatch computed with the old interval
    // (10 s) is not the limit, the last dispatch plus the new interval (65 s) is.
    s.set_account_limits(&acct, Some(60_000), None, "ops", at(5_001))
        .await
        .unwrap();
    let k3 = create(s, &acct, "three").await;
    let c3 = claim(s, &k3, "w", at(10_000)).await;
    let why = refusal(s.authorize_dispatch(&c3, CONTRACT, at(10_000)).await);
    assert!(
        matches!(
            why,
            AuthorizeRefusal::RateInterval {
                since_ms: 5_000,
                min_interval_ms: 60_000,
                ..
            }
        ),
        "{why:?}"
    );
}

async fn epoch_bump_fences_out_pre_restore_workers(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    // a pre-authorization worker
    let key = create(s, "alice", "x").await;
    let c = claim(s, &key, "old", at(0)).await;
    // an authorized worker
    let (key2, auth2) = authorized(s, "y", at(0)).await;
    assert_eq!(
        s.bump_epoch("ops", "restored from backup", at(1))
            .await
            .unwrap(),
        2
    );
    let why = refusal(s.authorize_dispatch(&c, CONTRACT, at(2)).await);
    assert_eq!(
        why,
        AuthorizeRefusal::StaleEpoch {
            held: 1,
            current: 2
        }
    );
    let e = s
        .settle(&auth2.consume(), &published(), at(3))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::Fenced { .. }), "{e}");
    assert_eq!(s.intent(&key2).await.unwrap().state, Status::Authorized);
    // the epoch never goes back
    assert!(
        s.execute_raw_for_tests("UPDATE store_meta SET epoch = 1")
            .await
            .is_err()
    );
}

/// A restore from a backup rewinds the generation counter with the rows, so a generation can be issued twice
/// (once before the restore, to a worker still running, and once after it). The claim's epoch tells them
/// apart: the old worker's claim (epoch 1) never authorizes the new worker's claim of the same generation
/// (epoch 2), even though the row's generation, the store's epoch and the live lease all match.
async fn a_claim_from_before_a_restore_cannot_authorize_a_reissued_generation(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let key = create(s, "alice", "x").await;
    let old = claim(s, &key, "old", at(0)).await;
    assert_eq!(
        s.bump_epoch("ops", "restored from backup", at(1))
            .await
            .unwrap(),
        2
    );
    // The backup was taken before the old claim: its counter is one behind (what a restore brings back).
    let g = old.fence.generation;
    let rewind = match b {
        Backend::Sqlite => vec![
            "DROP TRIGGER fencing_counter_forward".to_string(),
            format!("UPDATE fencing_counter SET value = {} WHERE id = 1", g - 1),
        ],
        Backend::Postgres => vec![format!("SELECT setval('fencing_generation', {g}, false)")],
    };
    for sql in rewind {
        s.execute_raw_for_tests(&sql).await.unwrap();
    }
    // The old claim's lease runs out; a new worker claims the intent under the new epoch, same generation.
    let new = claim(s, &key, "new", at(20_000)).await;
    assert_eq!(
        (new.fence.generation, new.fence.epoch),
        (g, 2),
        "the generation is reissued"
    );
    let why = refusal(s.authorize_dispatch(&old, CONTRACT, at(20_001)).await);
    assert_eq!(
        why,
        AuthorizeRefusal::StaleEpoch {
            held: 1,
            current: 2
        }
    );
    assert_eq!(s.intent(&key).await.unwrap().state, Status::Pending);
    // The new claim is the one that authorizes.
    s.authorize_dispatch(&new, CONTRACT, at(20_002))
        .await
        .expect("the new claim authorizes");
}

// ---------------------------------------------------------------------------------------------------------
// Stale workers before authorization are rejected; authorized ones are never recovered

async fn pre_authorization_stale_worker_is_rejected_after_sweep(b: Backend) {
    let db = db(b).await;
    let key = create(&db.store, "alice", "x").await;
    let c = claim(&db.store, &key, "slow", at(0)).await;
    let r = db.store.sweep("sweeper", at(10_000)).await.unwrap();
    assert_eq!(r.claims_released, vec![key.clone()]);
    assert!(r.made_indeterminate.is_empty());
    assert_eq!(
        db.store.intent(&key).await.unwrap().state,
        Status::Pending,
        "a released claim stays pending"
    );
    let why = refusal(db.store.authorize_dispatch(&c, CONTRACT, at(10_001)).await);
    assert_eq!(why, AuthorizeRefusal::LeaseExpired);
    // and its pre-auth "failed" settle is fenced too
    let e = db
        .store
        .settle(&c.fence, &failed(), at(10_002))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::Fenced { .. }), "{e}");
}

async fn authorized_intent_is_only_moved_by_its_worker_or_by_sweep_to_indeterminate(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let (key, auth) = authorized(s, "x", at(0)).await;
    // nothing else moves it while the lease is live
    assert!(matches!(
        s.park(&key, "ops", "stop", at(1)).await,
        Err(StoreError::WrongState { .. })
    ));
    assert!(matches!(
        s.retry(&key, "ops", at(1)).await,
        Err(StoreError::WrongState { .. })
    ));
    assert!(s.begin(&key, "w2", CONTRACT, at(1)).await.is_err());
    let early = s.sweep("sweeper", at(19_999)).await.unwrap();
    assert!(early.made_indeterminate.is_empty(), "swept a live lease");
    // after the deadline: indeterminate, never pending
    let r = s.sweep("sweeper", at(20_000)).await.unwrap();
    assert_eq!(r.made_indeterminate, vec![key.clone()]);
    let it = s.intent(&key).await.unwrap();
    assert_eq!(it.state, Status::Indeterminate);
    assert!(it.lease_owner.is_none());
    // the late worker's outcome is rejected: the sweeper's verdict stands
    let e = s
        .settle(&auth.consume(), &published(), at(20_001))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            StoreError::Fenced {
                actual: Status::Indeterminate,
                ..
            }
        ),
        "{e}"
    );
    // a second sweep does nothing
    assert_eq!(
        s.sweep("sweeper-2", at(30_000)).await.unwrap(),
        SweepReport::default()
    );
    // and indeterminate can't be retried or begun
    assert!(s.retry(&key, "ops", at(30_001)).await.is_err());
    assert!(s.begin(&key, "w3", CONTRACT, at(30_001)).await.is_err());
    assert_eq!(attempts(s, &key).await, 1);
}

async fn concurrent_sweepers_move_each_intent_once(b: Backend) {
    let db = db(b).await;
    let s = Arc::new(db.store.clone());
    for i in 0..5 {
        authorized(&s, &format!("t{i}"), at(0)).await;
    }
    let mut tasks = Vec::new();
    for w in 0..8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            s.sweep(&format!("sweeper{w}"), at(20_000)).await.unwrap()
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap().made_indeterminate.len();
    }
    assert_eq!(
        total, 5,
        "each expired intent is moved by exactly one sweeper"
    );
    for it in s.intents(None, 10).await.unwrap() {
        let lease_expired = s
            .timeline(&it.key)
            .await
            .unwrap()
            .events
            .iter()
            .filter(|e| e.kind == EventKind::LeaseExpired)
            .count();
        assert_eq!(lease_expired, 1);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Fencing: generations from a sequence / counter that nothing resets

async fn late_write_of_an_older_generation_is_rejected_even_after_claim_data_is_wiped(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let key = create(s, "alice", "x").await;
    let a = claim(s, &key, "A", at(0)).await; // A is slow
    let bw = claim(s, &key, "B", at(10_000)).await;
    let auth_b = s
        .authorize_dispatch(&bw, CONTRACT, at(10_001))
        .await
        .unwrap();
    s.settle(&auth_b.consume(), &published(), at(10_002))
        .await
        .unwrap();
    // A wakes up late and reports: rejected
    let e = s.settle(&a.fence, &failed(), at(10_003)).await.unwrap_err();
    assert!(
        matches!(
            e,
            StoreError::Fenced {
                actual: Status::Published,
                ..
            }
        ),
        "{e}"
    );
    // Someone wipes the claim data (lease columns) and tries to reset the generation source.
    s.execute_raw_for_tests("UPDATE intents SET lease_owner = NULL, lease_expires_at = NULL")
        .await
        .unwrap();
    match b {
        Backend::Sqlite => {
            assert!(
                s.execute_raw_for_tests("DELETE FROM fencing_counter")
                    .await
                    .is_err(),
                "counter deletable"
            );
            assert!(
                s.execute_raw_for_tests("UPDATE fencing_counter SET value = 0")
                    .await
                    .is_err(),
                "counter resettable"
            );
        }
        Backend::Postgres => {
            // A sequence is untouched by TRUNCATE/DELETE of any table; show that the store does not derive
            // generations from rows: wipe every lease column and begin again.
        }
    }
    let key2 = create(s, "alice", "y").await;
    let c2 = claim(s, &key2, "C", at(10_004)).await;
    assert!(
        c2.fence.generation > bw.fence.generation,
        "a generation was reissued"
    );
    // A's old generation still cannot write anywhere
    let e = s.settle(&a.fence, &failed(), at(10_005)).await.unwrap_err();
    assert!(matches!(e, StoreError::Fenced { .. }), "{e}");
}

async fn a_stale_worker_cannot_settle_over_a_newer_authorized_dispatch(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let key = create(s, "alice", "x").await;
    let a = claim(s, &key, "A", at(0)).await; // A stalls before authorizing
    let bw = claim(s, &key, "B", at(10_001)).await;
    let auth_b = s
        .authorize_dispatch(&bw, CONTRACT, at(10_002))
        .await
        .unwrap();
    // A wakes up and reports an outcome for a dispatch it never made: every kind is rejected
    for outcome in [
        published(),
        failed(),
        Settlement::Indeterminate {
            reason: "x".into(),
            details: json!({}),
        },
    ] {
        let e = s.settle(&a.fence, &outcome, at(10_003)).await.unwrap_err();
        assert!(
            matches!(
                e,
                StoreError::Fenced {
                    actual: Status::Authorized,
                    ..
                }
            ),
            "{e}"
        );
    }
    assert!(
        s.record_request_sent(&a.fence, "h", json!({}), at(10_003))
            .await
            .is_err()
    );
    let it = s.intent(&key).await.unwrap();
    assert_eq!(
        (it.state, it.generation),
        (Status::Authorized, bw.fence.generation)
    );
    s.settle(&auth_b.consume(), &published(), at(10_004))
        .await
        .expect("B settles its own dispatch");
}

async fn generations_are_strictly_increasing_across_intents(b: Backend) {
    let db = db(b).await;
    let mut last = 0;
    for i in 0..10 {
        let key = create(&db.store, "alice", &format!("g{i}")).await;
        let c = claim(&db.store, &key, "w", at(0)).await;
        assert!(c.fence.generation > last);
        last = c.fence.generation;
    }
}

// ---------------------------------------------------------------------------------------------------------
// Settling

async fn settle_records_outcomes_under_the_fence(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let (k1, a1) = authorized(s, "one", at(0)).await;
    assert_eq!(
        s.settle(&a1.consume(), &published(), at(1)).await.unwrap(),
        Status::Published
    );
    let it = s.intent(&k1).await.unwrap();
    assert_eq!(
        (it.platform_id.as_deref(), it.permalink.as_deref()),
        (Some("p1"), Some("http://x/p/p1"))
    );
    let (k2, a2) = authorized(s, "two", at(0)).await;
    let ind = Settlement::Indeterminate {
        reason: "reset after bytes".into(),
        details: json!({}),
    };
    let f2 = a2.consume();
    assert_eq!(
        s.settle(&f2, &ind, at(1)).await.unwrap(),
        Status::Indeterminate
    );
    // settling twice is refused
    assert!(s.settle(&f2, &published(), at(2)).await.is_err());
    assert_eq!(s.intent(&k2).await.unwrap().state, Status::Indeterminate);
    // indeterminate cannot be settled from pending (nothing authorized)
    let k3 = create(s, "alice", "three").await;
    let c3 = claim(s, &k3, "w1", at(0)).await;
    assert!(s.settle(&c3.fence, &ind, at(1)).await.is_err());
    assert!(s.settle(&c3.fence, &published(), at(1)).await.is_err());
    // but failed from pending by the claim holder is fine (nothing can have been sent)
    assert_eq!(
        s.settle(&c3.fence, &failed(), at(1)).await.unwrap(),
        Status::Failed
    );
}

async fn request_hash_is_bound_to_the_authorized_attempt(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let (key, auth) = authorized(s, "x", at(0)).await;
    let fence = auth.consume();
    s.record_request_sent(
        &fence,
        "abc123",
        json!({"url": "http://x/api/posts"}),
        at(1),
    )
    .await
    .unwrap();
    let tl = s.timeline(&key).await.unwrap();
    let ev = tl
        .events
        .iter()
        .find(|e| e.kind == EventKind::RequestSent)
        .expect("request_sent event");
    assert_eq!(ev.details["wire_request_hash"], "abc123");
    assert_eq!(ev.attempt.as_deref(), Some(fence.attempt.as_str()));
    assert_eq!(ev.generation, Some(fence.generation));
    // after settling, or with a stale fence, nothing can be bound any more
    s.settle(&fence, &published(), at(2)).await.unwrap();
    assert!(matches!(
        s.record_request_sent(&fence, "zzz", json!({}), at(3)).await,
        Err(StoreError::Fenced { .. })
    ));
    // a pending (unauthorized) claim cannot record a sent request
    let k2 = create(s, "alice", "y").await;
    let c2 = claim(s, &k2, "w", at(0)).await;
    assert!(
        s.record_request_sent(&c2.fence, "h", json!({}), at(1))
            .await
            .is_err()
    );
}

// ---------------------------------------------------------------------------------------------------------
// Retry, cap, park, resolve

async fn retry_creates_no_attempt_and_next_begin_exactly_one(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let (key, auth) = authorized(s, "x", at(0)).await;
    let f1 = auth.consume();
    s.settle(&f1, &failed(), at(1)).await.unwrap();
    let before = s.timeline(&key).await.unwrap();
    s.retry(&key, "ops", at(2)).await.unwrap();
    let after = s.timeline(&key).await.unwrap();
    assert_eq!(
        after.attempts.len(),
        before.attempts.len(),
        "retry created an attempt"
    );
    assert_eq!(after.intent.state, Status::Pending);
    assert_eq!(after.intent.key, key);
    let c2 = claim(s, &key, "w2", at(3)).await;
    let tl = s.timeline(&key).await.unwrap();
    assert_eq!(tl.attempts.len(), 2);
    assert_ne!(c2.fence.attempt, f1.attempt);
    assert_eq!(c2.fence.key, key);
    assert_eq!(c2.ordinal, 2);
}

async fn retry_from_every_state_but_failed_is_rejected(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let pending = create(s, "alice", "p").await;
    let (authorized_key, _a) = authorized(s, "a", at(0)).await;
    let (published_key, a) = authorized(s, "pub", at(0)).await;
    s.settle(&a.consume(), &published(), at(1)).await.unwrap();
    let (ind, a) = authorized(s, "ind", at(0)).await;
    s.settle(
        &a.consume(),
        &Settlement::Indeterminate {
            reason: "x".into(),
            details: json!({}),
        },
        at(1),
    )
    .await
    .unwrap();
    let parked = create(s, "alice", "park").await;
    s.park(&parked, "ops", "why", at(1)).await.unwrap();
    for (key, st) in [
        (pending, Status::Pending),
        (authorized_key, Status::Authorized),
        (published_key, Status::Published),
        (ind, Status::Indeterminate),
        (parked, Status::Parked),
    ] {
        let e = s.retry(&key, "ops", at(2)).await.unwrap_err();
        assert!(
            matches!(e, StoreError::WrongState { actual, .. } if actual == st),
            "{st}: {e}"
        );
        assert_eq!(s.intent(&key).await.unwrap().state, st);
    }
}

async fn attempt_cap_exhaustion_parks_instead_of_looping(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let key = create(s, "alice", "x").await;
    for i in 0..3 {
        let c = claim(s, &key, "w", at(i * 100)).await;
        s.settle(&c.fence, &failed(), at(i * 100 + 1))
            .await
            .unwrap();
        s.retry(&key, "ops", at(i * 100 + 2)).await.unwrap();
    }
    match s.begin(&key, "w", CONTRACT, at(1_000)).await.unwrap() {
        Begun::Parked { attempts } => assert_eq!(attempts, 3),
        other => panic!("expected parked at the cap, got {other:?}"),
    }
    let tl = s.timeline(&key).await.unwrap();
    assert_eq!(tl.intent.state, Status::Parked);
    assert_eq!(tl.attempts.len(), 3);
    assert!(s.begin(&key, "w", CONTRACT, at(1_001)).await.is_err());
}

async fn park_and_resolve_are_recorded_with_the_person(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let key = create(s, "alice", "x").await;
    s.park(&key, "dana", "hold for legal", at(1)).await.unwrap();
    assert!(matches!(
        s.park(&key, "dana", "again", at(2)).await,
        Err(StoreError::WrongState { .. })
    ));
    s.note(
        &key,
        EventKind::Note,
        "dana",
        "keep parked",
        json!({}),
        at(3),
    )
    .await
    .unwrap();
    let it = s
        .resolve(&key, "dana", "http://x/p/42", Some("42"), at(4))
        .await
        .unwrap();
    assert_eq!(it.state, Status::Published);
    let tl = s.timeline(&key).await.unwrap();
    let kinds: Vec<_> = tl
        .events
        .iter()
        .map(|e| (e.kind, e.actor.as_str()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (EventKind::Created, "creator"),
            (EventKind::Parked, "dana"),
            (EventKind::Note, "dana"),
            (EventKind::Resolved, "dana")
        ]
    );
    assert!(
        s.resolve(&key, "dana", "http://x", None, at(5))
            .await
            .is_err(),
        "resolved twice"
    );
}

// ---------------------------------------------------------------------------------------------------------
// Reconcile: at most one automatic lookup, recorded before it runs; never back to pending

async fn reconcile_runs_exactly_once_and_found_publishes(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let (key, a) = authorized(s, "x", at(0)).await;
    s.settle(
        &a.consume(),
        &Settlement::Indeterminate {
            reason: "500 after commit".into(),
            details: json!({}),
        },
        at(1),
    )
    .await
    .unwrap();
    let t = s
        .start_reconcile(&key, "reconciler", false, at(2))
        .await
        .unwrap();
    assert_eq!(t.number, 1);
    let again = s
        .start_reconcile(&key, "reconciler", false, at(3))
        .await
        .unwrap_err();
    assert!(matches!(again, StoreError::ReconcileSpent(1)), "{again}");
    let found = ReconcileOutcome::Found {
        platform_id: Some("p9".into()),
        permalink: Some("http://x/p/p9".into()),
        evidence: json!({}),
    };
    assert_eq!(
        s.record_reconcile(&t, &found, NotFoundPolicy::Park, at(4))
            .await
            .unwrap(),
        Status::Published
    );
    let it = s.intent(&key).await.unwrap();
    assert_eq!(it.platform_id.as_deref(), Some("p9"));
    // a ticket can only be used once
    assert!(
        s.record_reconcile(&t, &found, NotFoundPolicy::Park, at(5))
            .await
            .is_err()
    );
}

/// A reconcile whose process died mid-lookup holds a lookup lease; once it runs out, the sweeper parks the
/// intent (the automatic lookup is spent, a person decides). Before that, the sweeper leaves it alone; a
/// lookup that did record in time clears the lease; a late record still lands from parked.
async fn an_interrupted_lookup_is_parked_by_the_sweeper_once_its_lease_runs_out(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let lease = s.policy().lookup_lease_ms;
    let indeterminate = |name: &'static str| async move {
        let (key, a) = authorized(s, name, at(0)).await;
        s.settle(
            &a.consume(),
            &Settlement::Indeterminate {
                reason: "reset after the bytes".into(),
                details: json!({}),
            },
            at(1),
        )
        .await
        .unwrap();
        key
    };
    let key = indeterminate("crashed lookup").await;
    let t = s
        .start_reconcile(&key, "reconciler", false, at(2))
        .await
        .unwrap();
    let it = s.intent(&key).await.unwrap();
    assert_eq!(it.lookup_expires_at, Some(at(2).0 + lease));
    // Still running: nothing moves.
    let r = s.sweep("sweeper", at(2 + lease - 1)).await.unwrap();
    assert!(r.lookups_interrupted.is_empty(), "{r:?}");
    assert_eq!(s.intent(&key).await.unwrap().state, Status::Indeterminate);
    // Ran out: parked, once, by one sweeper.
    let r = s.sweep("sweeper", at(2 + lease)).await.unwrap();
    assert_eq!(r.lookups_interrupted, vec![key.clone()]);
    let it = s.intent(&key).await.unwrap();
    assert_eq!(it.state, Status::Parked);
    assert_eq!(it.lookup_expires_at, None);
    let r = s.sweep("sweeper", at(3 + lease)).await.unwrap();
    assert!(r.lookups_interrupted.is_empty());
    let tl = s.timeline(&key).await.unwrap();
    let last = tl.events.last().unwrap();
    assert_eq!(last.kind, EventKind::Parked);
    assert_eq!(last.actor, "sweeper");
    // The slow lookup records after all: what it saw still lands (found: published).
    let found = ReconcileOutcome::Found {
        platform_id: Some("p1".into()),
        permalink: Some("http://x/p/p1".into()),
        evidence: json!({}),
    };
    assert_eq!(
        s.record_reconcile(&t, &found, NotFoundPolicy::Park, at(4 + lease))
            .await
            .unwrap(),
        Status::Published
    );
    // A lookup that records in time clears its lease: the sweeper never touches it.
    let k2 = indeterminate("recorded lookup").await;
    let t2 = s
        .start_reconcile(&k2, "reconciler", false, at(2))
        .await
        .unwrap();
    let nf = ReconcileOutcome::NotFound {
        evidence: json!({}),
    };
    s.record_reconcile(&t2, &nf, NotFoundPolicy::Stay, at(3))
        .await
        .unwrap();
    assert_eq!(s.intent(&k2).await.unwrap().lookup_expires_at, None);
    let r = s.sweep("sweeper", at(10 * lease)).await.unwrap();
    assert!(r.lookups_interrupted.is_empty(), "{r:?}");
    assert_eq!(s.intent(&k2).await.unwrap().state, Status::Indeterminate);
}

async fn reconcile_not_found_parks_or_stays_and_never_resends(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let (key, a) = authorized(s, "x", at(0)).await;
    s.settle(
        &a.consume(),
        &Settlement::Indeterminate {
            reason: "timeout".into(),
            details: json!({}),
        },
        at(1),
    )
    .await
    .unwrap();
    let t = s
        .start_reconcile(&key, "reconciler", false, at(2))
        .await
        .unwrap();
    let nf = ReconcileOutcome::NotFound {
        evidence: json!({"searched": "x"}),
    };
    assert_eq!(
        s.record_reconcile(&t, &nf, NotFoundPolicy::Park, at(3))
            .await
            .unwrap(),
        Status::Parked
    );
    // a person asks for another lookup on the parked intent, recorded as their action
    let t2 = s.start_reconcile(&key, "dana", true, at(4)).await.unwrap();
    assert_eq!(t2.number, 2);
    let un = ReconcileOutcome::Unavailable {
        error: "platform down".into(),
    };
    assert_eq!(
        s.record_reconcile(&t2, &un, NotFoundPolicy::Park, at(5))
            .await
            .unwrap(),
        Status::Parked
    );
    // Stay policy on another intent
    let (k2, a2) = authorized(s, "y", at(0)).await;
    s.settle(
        &a2.consume(),
        &Settlement::Indeterminate {
            reason: "timeout".into(),
            details: json!({}),
        },
        at(1),
    )
    .await
    .unwrap();
    let t3 = s
        .start_reconcile(&k2, "reconciler", false, at(2))
        .await
        .unwrap();
    assert_eq!(
        s.record_reconcile(&t3, &nf, NotFoundPolicy::Stay, at(3))
            .await
            .unwrap(),
        Status::Indeterminate
    );
    assert_eq!(attempts(s, &key).await, 1);
    assert_eq!(attempts(s, &k2).await, 1);
    // reconcile is refused on states that are not unknown
    let k3 = create(s, "alice", "z").await;
    assert!(matches!(
        s.start_reconcile(&k3, "r", false, at(1)).await,
        Err(StoreError::WrongState { .. })
    ));
}

// ---------------------------------------------------------------------------------------------------------
// Duplicate-text window, in the database

async fn duplicate_text_window_at_its_edge(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let text = "the same words";
    let k1 = s
        .create_intent(&post("alice", text, "t1"), at(0))
        .await
        .unwrap()
        .intent
        .key;
    let c1 = claim(s, &k1, "w", at(0)).await;
    s.authorize_dispatch(&c1, CONTRACT, at(0)).await.unwrap();
    // just inside the window: refused
    let k2 = s
        .create_intent(&post("alice", text, "t2"), at(0))
        .await
        .unwrap()
        .intent
        .key;
    let c2 = claim(s, &k2, "w", at(WINDOW - 1)).await;
    let why = refusal(s.authorize_dispatch(&c2, CONTRACT, at(WINDOW - 1)).await);
    assert!(
        matches!(why, AuthorizeRefusal::DuplicateText { .. }),
        "{why:?}"
    );
    assert_eq!(
        s.intent(&k2).await.unwrap().state,
        Status::Pending,
        "refusal left a trace"
    );
    // just outside: allowed
    s.authorize_dispatch(&c2, CONTRACT, at(WINDOW))
        .await
        .expect("outside the window");
    // another account with the same text is not affected
    add_account(s, "bob", "fixture").await;
    let k3 = s
        .create_intent(&post("bob", text, "t1"), at(0))
        .await
        .unwrap()
        .intent
        .key;
    let c3 = claim(s, &k3, "w", at(1)).await;
    s.authorize_dispatch(&c3, CONTRACT, at(1))
        .await
        .expect("other account");
}

/// A refusal decided part way through the authorization, after the intent's guarded move (the duplicate text
/// at the text claim, the account's guard), leaves nothing of it behind: the intent pending, the account's
/// last dispatch and the dispatch rows as they were, no `authorized` event. And the store takes the next
/// writes at once, on every pooled connection: on SQLite the authorization is one call of a whole
/// transaction that such a refusal stops part way, and a connection left inside it would refuse the next
/// `BEGIN` or hold the write lock (src/store/one_call.rs).
async fn a_refusal_part_way_leaves_nothing_and_the_next_writes_go_through(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let text = "said once";
    let (_, first) = authorized(s, text, at(0)).await;
    drop(first);
    let dispatched = s.account("alice").await.unwrap().last_dispatch_at;
    assert_eq!(dispatched, Some(at(0).0));
    let k2 = s
        .create_intent(&post("alice", text, "elsewhere"), at(0))
        .await
        .unwrap()
        .intent
        .key;
    let c2 = claim(s, &k2, "w", at(5)).await;
    let why = refusal(s.authorize_dispatch(&c2, CONTRACT, at(5)).await);
    assert!(
        matches!(why, AuthorizeRefusal::DuplicateText { .. }),
        "{why:?}"
    );
    let left = |key: DeliveryKey| async move {
        let t = s.timeline(&key).await.unwrap();
        (
            t.intent.state,
            t.events
                .iter()
                .filter(|e| e.kind == EventKind::Authorized)
                .count(),
        )
    };
    assert_eq!(left(k2.clone()).await, (Status::Pending, 0));
    assert_eq!(
        s.account("alice").await.unwrap().last_dispatch_at,
        dispatched,
        "the refused authorization moved the account"
    );
    // The dispatch rows: one, the first authorization's (the refused one wrote none).
    assert_eq!(
        s.execute_raw_for_tests(
            "UPDATE accounts SET hourly_cap = hourly_cap WHERE name = 'alice' \
             AND (SELECT COUNT(*) FROM dispatches WHERE account = 'alice') = 1"
        )
        .await
        .unwrap(),
        1
    );
    // The account's guard, refused after the intent's move too.
    let k3 = create(s, "alice", "another text").await;
    let c3 = claim(s, &k3, "w", at(7)).await;
    s.revoke_account("alice", "ops", at(8)).await.unwrap();
    let why = refusal(s.authorize_dispatch(&c3, CONTRACT, at(9)).await);
    assert!(matches!(why, AuthorizeRefusal::Revoked { .. }), "{why:?}");
    assert_eq!(left(k3).await, (Status::Pending, 0));
    // More writes than the pool has connections, each at once (a connection left in a transaction fails the
    // next `BEGIN` on it; the write lock it holds makes every other one wait out the lock bound, then fail).
    add_account(s, "bob", "fixture").await;
    for i in 0..12 {
        let k = s
            .create_intent(&post("bob", &format!("next write {i}"), ""), at(10))
            .await
            .unwrap_or_else(|e| panic!("write {i} after the refusals: {e}"))
            .intent
            .key;
        claim(s, &k, "w", at(10)).await;
    }
}

async fn duplicate_text_is_enforced_by_the_database_itself(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let k1 = create(s, "alice", "x").await;
    let k2 = s
        .create_intent(&post("alice", "x", "other"), at(0))
        .await
        .unwrap()
        .intent
        .key;
    let (i1, i2) = (s.intent(&k1).await.unwrap(), s.intent(&k2).await.unwrap());
    let ins = |key: &DeliveryKey, t: i64| {
        format!(
            "INSERT INTO text_claims (intent_id, account, content_hash, claimed_at, window_ms) \
             SELECT id, account, content_hash, {t}, 1000 FROM intents WHERE delivery_key = '{key}'"
        )
    };
    assert_eq!(i1.content_hash, i2.content_hash);
    s.execute_raw_for_tests(&ins(&k1, 0)).await.unwrap();
    assert!(
        s.execute_raw_for_tests(&ins(&k2, 999)).await.is_err(),
        "overlapping claim accepted by the database"
    );
    s.execute_raw_for_tests(&ins(&k2, 1000))
        .await
        .expect("adjacent window is fine");
}

async fn failed_send_releases_its_text_and_redelivery_is_exempt(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let (k1, a1) = authorized(s, "words", at(0)).await;
    let f1 = a1.consume();
    s.settle(&f1, &failed(), at(1)).await.unwrap();
    // the failed send never went out, so the same text may go now
    let k2 = s
        .create_intent(&post("alice", "words", "elsewhere"), at(0))
        .await
        .unwrap()
        .intent
        .key;
    let c2 = claim(s, &k2, "w", at(2)).await;
    let a2 = s
        .authorize_dispatch(&c2, CONTRACT, at(2))
        .await
        .expect("failed send released the window");
    s.settle(&a2.consume(), &published(), at(3)).await.unwrap();
    // a person-authorized redelivery of the published one is exempt from the window
    let re = s
        .redeliver(
            &k2,
            "dana",
            "the first copy was removed by a moderator",
            at(4),
        )
        .await
        .unwrap();
    let c3 = claim(s, &re.intent.key, "w", at(5)).await;
    s.authorize_dispatch(&c3, CONTRACT, at(5))
        .await
        .expect("redelivery exempt");
    let _ = k1;
}

// ---------------------------------------------------------------------------------------------------------
// Redelivery

async fn redelivery_is_a_new_authorized_intent_and_the_old_one_stays(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let (key, a) = authorized(s, "x", at(0)).await;
    s.settle(&a.consume(), &published(), at(1)).await.unwrap();
    let r1 = s
        .redeliver(&key, "dana", "deleted by mistake", at(2))
        .await
        .unwrap();
    assert!(r1.created);
    assert_ne!(r1.intent.key, key);
    assert_eq!(r1.intent.state, Status::Pending);
    assert_eq!(r1.intent.redelivery_of.as_ref(), Some(&key));
    assert_eq!(r1.intent.redelivery.as_ref().unwrap()["by"], "dana");
    let r2 = s
        .redeliver(&key, "dana", "deleted by mistake", at(3))
        .await
        .unwrap();
    assert!(
        !r2.created,
        "repeating the command authorized a second copy"
    );
    assert_eq!(r2.intent.key, r1.intent.key);
    let old = s.timeline(&key).await.unwrap();
    assert_eq!(old.intent.state, Status::Published);
    assert_eq!(
        old.events
            .iter()
            .filter(|e| e.kind == EventKind::RedeliveryAuthorized)
            .count(),
        1
    );
    // failed intents are retried, in-flight ones are not redelivered
    let k2 = create(s, "alice", "y").await;
    assert!(matches!(
        s.redeliver(&k2, "dana", "r", at(4)).await,
        Err(StoreError::WrongState { .. })
    ));
    assert!(matches!(
        s.redeliver(&key, "", "r", at(4)).await,
        Err(StoreError::Invalid(_))
    ));
}

// ---------------------------------------------------------------------------------------------------------
// Append-only history, enforced by the database

async fn attempts_and_events_refuse_update_and_delete(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let (key, _a) = authorized(s, "x", at(0)).await;
    for sql in [
        "UPDATE events SET actor = 'someone else'",
        "DELETE FROM events",
        "UPDATE attempts SET owner = 'someone else'",
        "DELETE FROM attempts",
        "UPDATE admin_events SET actor = 'x'",
        "DELETE FROM admin_events",
    ] {
        assert!(
            s.execute_raw_for_tests(sql).await.is_err(),
            "history accepted: {sql}"
        );
    }
    if b == Backend::Postgres {
        for sql in ["TRUNCATE events CASCADE", "TRUNCATE attempts CASCADE"] {
            assert!(
                s.execute_raw_for_tests(sql).await.is_err(),
                "history accepted: {sql}"
            );
        }
    }
    let tl = s.timeline(&key).await.unwrap();
    assert_eq!(tl.events.len(), 3);
    assert_eq!(tl.events[0].actor, "creator");
}

async fn timeline_replay_detects_history_that_does_not_fit_the_state(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let key = create(s, "alice", "x").await;
    // forge an event that the state table never allows from pending
    s.execute_raw_for_tests(&format!(
        "INSERT INTO events (intent_id, at, kind, from_state, to_state, actor, details) \
         SELECT id, 1, 'resolved', 'pending', 'published', 'forger', '{{}}' FROM intents WHERE delivery_key = '{key}'"
    ))
    .await
    .unwrap();
    let e = s.timeline(&key).await.unwrap_err();
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
}

// ---------------------------------------------------------------------------------------------------------
// Schema

async fn a_newer_schema_is_refused_with_a_clear_error(b: Backend) {
    let db = db(b).await;
    let checksum = match b {
        Backend::Sqlite => "x'00'",
        Backend::Postgres => "'\\x00'::bytea",
    };
    db.store
        .execute_raw_for_tests(&format!(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (9999, 'from the future', true, {checksum}, 1)"
        ))
        .await
        .unwrap();
    db.store.close().await;
    let e = Store::open(&db.location, policy()).await.unwrap_err();
    assert!(
        matches!(e, StoreError::SchemaTooNew { found: 9999, .. }),
        "{e}"
    );
}

async fn reopening_keeps_everything(b: Backend) {
    let db = db(b).await;
    let (key, a) = authorized(&db.store, "x", at(0)).await;
    db.store.close().await;
    let again = Store::open(&db.location, policy()).await.unwrap();
    let it = again.intent(&key).await.unwrap();
    assert_eq!(
        it.state,
        Status::Authorized,
        "authorized is durable, not a variable"
    );
    again
        .settle(&a.consume(), &published(), at(1))
        .await
        .unwrap();
}

// ---------------------------------------------------------------------------------------------------------
// Concurrency: many workers, one key, exactly one authorization, every round

/// Rounds of the 32-racer test in every run, per backend.
const RACE_ROUNDS_MIN: i64 = 100;

/// [`RACE_ROUNDS_MIN`], or more with `ONCEPOST_RACE_ROUNDS` (a long run); the variable never lowers it, and a
/// value that is not a number fails the test instead of silently running the default.
fn race_rounds() -> i64 {
    match std::env::var("ONCEPOST_RACE_ROUNDS") {
        Err(_) => RACE_ROUNDS_MIN,
        Ok(v) => {
            let n: i64 = v
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("ONCEPOST_RACE_ROUNDS={v:?} is not a number of rounds"));
            n.max(RACE_ROUNDS_MIN)
        }
    }
}

async fn racing_workers_get_exactly_one_authorization(b: Backend) {
    let db = db(b).await;
    let s = Arc::new(db.store.clone());
    let rounds = race_rounds();
    let t0 = std::time::Instant::now();
    let mut raced = 0;
    for round in 0..rounds {
        let key = create(&s, "alice", &format!("race {round}")).await;
        let barrier = Arc::new(tokio::sync::Barrier::new(32));
        let mut tasks = Vec::new();
        for w in 0..32 {
            let (s, key, barrier) = (s.clone(), key.clone(), barrier.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                let now = at(round * 1_000);
                match s.begin(&key, &format!("w{w}"), CONTRACT, now).await {
                    Ok(Begun::Claimed(c)) => {
                        s.authorize_dispatch(&c, CONTRACT, now).await.is_ok() as u32
                    }
                    Ok(Begun::Parked { .. }) => 0,
                    Err(e) => {
                        assert!(
                            e.is_contended() || matches!(e, StoreError::WrongState { .. }),
                            "unexpected: {e}"
                        );
                        0
                    }
                }
            }));
        }
        let mut wins = 0;
        for t in tasks {
            wins += t.await.unwrap();
        }
        assert_eq!(wins, 1, "round {round}: {wins} authorizations");
        assert_eq!(attempts(&s, &key).await, 1, "round {round}: attempts");
        raced += 1;
    }
    // The count the suite claims is the count that ran (a loop that ran 0 rounds proves nothing).
    assert_eq!(raced, rounds);
    assert!(raced >= RACE_ROUNDS_MIN);
    eprintln!(
        "{b:?}: {raced} rounds of 32 racers, one authorization each, in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

/// Operators racing park on one key: exactly one succeeds and one event is written.
async fn racing_operators_move_an_intent_once(b: Backend) {
    let db = db(b).await;
    let s = Arc::new(db.store.clone());
    for round in 0..4 {
        let key = create(&s, "alice", &format!("park race {round}")).await;
        let c = claim(&s, &key, "w", at(0)).await;
        s.settle(&c.fence, &failed(), at(1)).await.unwrap();
        let barrier = Arc::new(tokio::sync::Barrier::new(16));
        let mut tasks = Vec::new();
        for w in 0..16 {
            let (s, key, barrier) = (s.clone(), key.clone(), barrier.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                s.park(&key, &format!("op{w}"), "race", at(2)).await.is_ok() as u32
            }));
        }
        let mut wins = 0;
        for t in tasks {
            wins += t.await.unwrap();
        }
        assert_eq!(wins, 1, "round {round}: {wins} operators moved it");
        let tl = s.timeline(&key).await.unwrap();
        let moves = tl
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Parked | EventKind::Retried))
            .count();
        assert_eq!(moves, 1, "round {round}");
    }
}

/// Stale and fresh workers racing authorize on one key after take-overs: still at most one authorization.
async fn racing_authorizations_with_stale_claims_allow_at_most_one(b: Backend) {
    let db = db(b).await;
    let s = Arc::new(db.store.clone());
    for round in 0..6 {
        let key = create(&s, "alice", &format!("stale race {round}")).await;
        // a chain of expired claims, each taken over by the next worker
        let mut claims = Vec::new();
        // (three claims: every take-over mints an attempt, and the cap is three)
        for i in 0..3 {
            claims.push(claim(&s, &key, &format!("w{i}"), at(i * 10_001)).await);
        }
        let now = at(2 * 10_001 + 1);
        let mut tasks = Vec::new();
        for c in claims {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                s.authorize_dispatch(&c, CONTRACT, now).await.is_ok() as u32
            }));
        }
        let mut wins = 0;
        for t in tasks {
            wins += t.await.unwrap();
        }
        assert_eq!(wins, 1, "round {round}");
    }
}

on_both_backends!(
    other_texts_are_the_accounts_newest_others,
    create_intent_is_idempotent,
    create_for_unknown_account_is_refused,
    delivery_keys_and_attempt_tokens_are_unique_in_the_database,
    begin_mints_exactly_one_attempt_and_elects_one_executor,
    expired_claim_is_taken_over_and_its_worker_cannot_authorize,
    begin_refuses_every_non_pending_state,
    begin_on_a_revoked_account_mints_nothing,
    a_restarted_worker_with_the_same_id_cannot_use_its_old_claim,
    authorize_passes_when_nothing_changed,
    authorize_refuses_each_condition_alone,
    epoch_bump_fences_out_pre_restore_workers,
    a_claim_from_before_a_restore_cannot_authorize_a_reissued_generation,
    pre_authorization_stale_worker_is_rejected_after_sweep,
    authorized_intent_is_only_moved_by_its_worker_or_by_sweep_to_indeterminate,
    concurrent_sweepers_move_each_intent_once,
    late_write_of_an_older_generation_is_rejected_even_after_claim_data_is_wiped,
    generations_are_strictly_increasing_across_intents,
    a_stale_worker_cannot_settle_over_a_newer_authorized_dispatch,
    settle_records_outcomes_under_the_fence,
    request_hash_is_bound_to_the_authorized_attempt,
    retry_creates_no_attempt_and_next_begin_exactly_one,
    retry_from_every_state_but_failed_is_rejected,
    attempt_cap_exhaustion_parks_instead_of_looping,
    park_and_resolve_are_recorded_with_the_person,
    reconcile_runs_exactly_once_and_found_publishes,
    reconcile_not_found_parks_or_stays_and_never_resends,
    an_interrupted_lookup_is_parked_by_the_sweeper_once_its_lease_runs_out,
    duplicate_text_window_at_its_edge,
    duplicate_text_is_enforced_by_the_database_itself,
    a_refusal_part_way_leaves_nothing_and_the_next_writes_go_through,
    failed_send_releases_its_text_and_redelivery_is_exempt,
    redelivery_is_a_new_authorized_intent_and_the_old_one_stays,
    attempts_and_events_refuse_update_and_delete,
    timeline_replay_detects_history_that_does_not_fit_the_state,
    a_newer_schema_is_refused_with_a_clear_error,
    reopening_keeps_everything,
    racing_workers_get_exactly_one_authorization,
    racing_operators_move_an_intent_once,
    racing_authorizations_with_stale_claims_allow_at_most_one,
);
