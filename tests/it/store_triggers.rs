//! The database enforces the state table (migration 0003), on a real SQLite file and a real PostgreSQL
//! database: every (from, to) pair of states is tried by raw SQL and accepted exactly when `Status::next`
//! allows it; an intent cannot be deleted, re-keyed, rewritten or created in another state than pending; a
//! consumed intent has at most one redelivery. Through the binary: a published intent hand-edited back to
//! pending with the sqlite3 shell or psql is refused, and `publish` of it never presses again.
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Deref;

use crate::kit::{self, Backend, test_db};
use oncepost::fixture_platform::Fault;
use oncepost::identity::{ActionKind, CanonicalRequest, DeliveryKey};
use oncepost::store::*;
use serde_json::Value;
const T0: i64 = 1_800_000_000_000;

fn at(ms: i64) -> Timestamp {
    Timestamp(T0 + ms)
}

async fn db(b: Backend) -> kit::TestDb {
    let db = test_db(b, Policy::default()).await;
    db.store
        .add_account(
            &NewAccount {
                name: "alice".into(),
                platform: "fixture".into(),
                min_interval_ms: 0,
                dup_window_ms: 0,
            },
            "test",
            at(0),
        )
        .await
        .expect("add account");
    db
}

async fn create(store: &Store, text: &str) -> DeliveryKey {
    store
        .create_intent(
            &NewIntent {
                account: "alice".into(),
                action: ActionKind::Post,
                target: String::new(),
                request: CanonicalRequest::new(Some(text), &BTreeMap::new()),
                source: None,
            },
            at(0),
        )
        .await
        .expect("create")
        .intent
        .key
}

/// The raw UPDATE an operator would type to put `key` into `to`, with the columns the table's CHECK
/// constraints ask of that state (so only the state trigger can refuse it).
fn set_state(key: &DeliveryKey, to: Status) -> String {
    let cols = match to {
        Status::Authorized => {
            "lease_owner = 'hand', lease_expires_at = 1, authorized_at = 1, current_attempt = 'hand'"
        }
        Status::Published => {
            "lease_owner = NULL, lease_expires_at = NULL, permalink = 'https://fixture.test/p/1'"
        }
        _ => "lease_owner = NULL, lease_expires_at = NULL",
    };
    format!(
        "UPDATE intents SET state = '{}', {cols} WHERE delivery_key = '{}'",
        to.label(),
        key.as_str()
    )
}

/// A shortest path of allowed changes from pending to `to` (every state is reachable).
fn path_to(to: Status) -> Vec<Status> {
    let allowed = Status::allowed_changes();
    let mut prev = BTreeMap::new();
    let mut queue = VecDeque::from([Status::Pending]);
    let mut seen = BTreeSet::from([Status::Pending.label()]);
    while let Some(s) = queue.pop_front() {
        for &(a, b) in &allowed {
            if a == s && seen.insert(b.label()) {
                prev.insert(b.label(), a);
                queue.push_back(b);
            }
        }
    }
    let mut path = vec![to];
    let mut cur = to;
    while cur != Status::Pending {
        cur = *prev
            .get(cur.label())
            .unwrap_or_else(|| panic!("{to} unreachable"));
        path.push(cur);
    }
    path.reverse();
    path
}

async fn every_state_pair_is_accepted_exactly_when_the_state_table_allows_it(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let allowed: BTreeSet<(&str, &str)> = Status::allowed_changes()
        .into_iter()
        .map(|(a, b)| (a.label(), b.label()))
        .collect();
    assert_eq!(allowed.len(), 12, "the state table changed: {allowed:?}");
    let mut accepted = BTreeSet::new();
    for from in Status::ALL {
        for to in Status::ALL {
            let key = create(s, &format!("pair {from} {to}")).await;
            for step in path_to(from).into_iter().skip(1) {
                s.execute_raw_for_tests(&set_state(&key, step))
                    .await
                    .unwrap_or_else(|e| panic!("path to {from}: {step} refused: {e}"));
            }
            assert_eq!(s.intent(&key).await.unwrap().state, from);
            match s.execute_raw_for_tests(&set_state(&key, to)).await {
                Ok(n) => {
                    assert_eq!(n, 1);
                    accepted.insert((from.label(), to.label()));
                }
                Err(e) => assert!(
                    e.to_string().contains("not in the state table"),
                    "{from} -> {to} refused by something else than the state trigger: {e}"
                ),
            }
            let want = if allowed.contains(&(from.label(), to.label())) || from == to {
                to
            } else {
                from
            };
            assert_eq!(s.intent(&key).await.unwrap().state, want, "{from} -> {to}");
        }
    }
    let changes: BTreeSet<_> = accepted.into_iter().filter(|(a, b)| a != b).collect();
    assert_eq!(changes, allowed, "the database and Status::next disagree");
}

async fn intents_are_never_deleted(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let key = create(s, "kept forever").await;
    for sql in [
        format!("DELETE FROM intents WHERE delivery_key = '{key}'"),
        "DELETE FROM intents".to_string(),
    ] {
        let e = s.execute_raw_for_tests(&sql).await.unwrap_err();
        assert!(e.to_string().contains("never deleted"), "{sql}: {e}");
    }
    if b == Backend::Postgres {
        for sql in ["TRUNCATE intents", "TRUNCATE intents CASCADE"] {
            assert!(s.execute_raw_for_tests(sql).await.is_err(), "{sql}");
        }
    }
    let tl = s.timeline(&key).await.expect("history intact");
    assert_eq!(tl.events.len(), 1);
}

async fn identity_request_and_counters_cannot_be_edited(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let key = create(s, "what was asked").await;
    // A begun attempt moves the counters forward: attempt 1, a fresh generation.
    match s.begin(&key, "w", "c", at(1)).await.unwrap() {
        Begun::Claimed(_) => {}
        other => panic!("{other:?}"),
    }
    let other_key = "f".repeat(64);
    for (sql, why) in [
        (
            format!("UPDATE intents SET delivery_key = '{other_key}'"),
            "identity",
        ),
        (
            "UPDATE intents SET request_json = '{\"text\":\"else\",\"fields\":{}}'".into(),
            "identity",
        ),
        ("UPDATE intents SET content_hash = 'x'".into(), "identity"),
        ("UPDATE intents SET target = 'someone'".into(), "identity"),
        ("UPDATE intents SET created_at = 0".into(), "identity"),
        ("UPDATE intents SET attempt_count = 0".into(), "counters"),
        ("UPDATE intents SET generation = 0".into(), "counters"),
    ] {
        let e = s.execute_raw_for_tests(&sql).await.unwrap_err();
        assert!(e.to_string().contains(why), "{sql}: {e}");
    }
    // reconcile_count: on an indeterminate intent whose one lookup was recorded.
    let k2 = create(s, "looked up once").await;
    for st in path_to(Status::Indeterminate).into_iter().skip(1) {
        s.execute_raw_for_tests(&set_state(&k2, st)).await.unwrap();
    }
    s.start_reconcile(&k2, "w", false, at(2)).await.unwrap();
    let e = s
        .execute_raw_for_tests(&format!(
            "UPDATE intents SET reconcile_count = 0 WHERE delivery_key = '{k2}'"
        ))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("counters"), "{e}");
    assert!(matches!(
        s.start_reconcile(&k2, "w", false, at(3)).await,
        Err(StoreError::ReconcileSpent(1))
    ));
    let it = s.intent(&key).await.unwrap();
    assert_eq!(it.attempt_count, 1);
    assert_eq!(it.request.text.as_deref(), Some("what was asked"));
}

async fn a_text_claim_is_released_only_by_a_failed_send(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let key = create(s, "claimed text").await;
    let claim = match s.begin(&key, "w", "c", at(1)).await.unwrap() {
        Begun::Claimed(c) => c,
        other => panic!("{other:?}"),
    };
    let auth = s.authorize_dispatch(&claim, "c", at(2)).await.unwrap();
    let e = s
        .execute_raw_for_tests("DELETE FROM text_claims")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("only when its send failed"), "{e}");
    if b == Backend::Postgres {
        assert!(
            s.execute_raw_for_tests("TRUNCATE text_claims")
                .await
                .is_err()
        );
    }
    // The store's own release, in settle failed, still works: nothing is left to delete afterwards.
    s.settle(
        &auth.consume(),
        &Settlement::Failed {
            proof: serde_json::json!({ "why": "connect refused" }),
        },
        at(3),
    )
    .await
    .unwrap();
    assert_eq!(
        s.execute_raw_for_tests("DELETE FROM text_claims")
            .await
            .unwrap(),
        0
    );
}

async fn an_intent_is_created_pending(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let insert = |state: &str, key: char| {
        format!(
            "INSERT INTO intents (delivery_key, account, platform, action_kind, target, request_json, \
             content_hash, state, max_attempts, permalink, created_at, updated_at) VALUES ('{}', 'alice', \
             'fixture', 'post', '', '{{}}', 'h', '{state}', 3, 'https://fixture.test/p/9', 0, 0)",
            key.to_string().repeat(64)
        )
    };
    for st in ["published", "failed", "parked", "indeterminate"] {
        let e = s.execute_raw_for_tests(&insert(st, 'a')).await.unwrap_err();
        assert!(e.to_string().contains("created pending"), "{st}: {e}");
    }
    assert_eq!(
        s.execute_raw_for_tests(&insert("pending", 'b'))
            .await
            .unwrap(),
        1
    );
}

async fn a_consumed_intent_has_one_redelivery_whoever_asks(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let key = create(s, "parked send").await;
    s.park(&key, "op", "stopped", at(1)).await.unwrap();
    let first = s
        .redeliver(&key, "rita", "not on the feed", at(2))
        .await
        .unwrap();
    assert!(first.created);
    // Another reviewer, another reason: the open one comes back, nothing new.
    let second = s
        .redeliver(&key, "sam", "I checked too", at(3))
        .await
        .unwrap();
    assert!(!second.created);
    assert_eq!(second.intent.key, first.intent.key);
    assert_eq!(second.intent.redelivery.as_ref().unwrap()["by"], "rita");
    // Concurrently, from many handles at once: still one.
    let mut tasks = Vec::new();
    let k2 = create(s, "parked send two").await;
    s.park(&k2, "op", "stopped", at(1)).await.unwrap();
    for i in 0..6 {
        let store = Store::open(&db.location, Policy::default()).await.unwrap();
        let k = k2.clone();
        tasks.push(tokio::spawn(async move {
            store
                .redeliver(&k, &format!("reviewer {i}"), "not there", at(4))
                .await
                .map(|c| (c.created, c.intent.key))
        }));
    }
    let mut keys = BTreeSet::new();
    let mut created = 0;
    for t in tasks {
        let (c, k) = t.await.unwrap().expect("redeliver");
        created += c as usize;
        keys.insert(k.as_str().to_string());
    }
    assert_eq!((created, keys.len()), (1, 1), "{keys:?}");
    let n: Vec<_> = s
        .intents(None, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|i| i.redelivery_of.as_ref() == Some(&k2))
        .collect();
    assert_eq!(n.len(), 1);
    // The database's half: a script inserting a second redelivery row is refused.
    let e = s
        .execute_raw_for_tests(&format!(
            "INSERT INTO intents (delivery_key, account, platform, action_kind, target, request_json, \
             content_hash, redelivery_of, state, max_attempts, created_at, updated_at) VALUES ('{}', 'alice', \
             'fixture', 'post', '', '{{}}', 'h', '{key}', 'pending', 3, 0, 0)",
            "c".repeat(64)
        ))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("oncepost_one_redelivery"), "{e}");
}

on_both_backends!(
    every_state_pair_is_accepted_exactly_when_the_state_table_allows_it,
    intents_are_never_deleted,
    identity_request_and_counters_cannot_be_edited,
    an_intent_is_created_pending,
    a_text_claim_is_released_only_by_a_failed_send,
    a_consumed_intent_has_one_redelivery_whoever_asks,
);

// ---------------------------------------------------------------------------------------------------------
// Through the binary: a hand edit with the sqlite3 shell or psql, then `publish` again.

/// The kit's platform and data dir (the store on the test's backend) with alice added.
struct Env {
    kit: kit::Env,
    /// The PostgreSQL URL, or None for the default SQLite file in the data dir.
    pg: Option<String>,
}

impl Deref for Env {
    type Target = kit::Env;
    fn deref(&self) -> &kit::Env {
        &self.kit
    }
}

impl Env {
    async fn start(b: Backend) -> Env {
        let kit = kit::Env::start_on(Fault::default(), b).await;
        let pg = kit.oncepost.store().map(String::from);
        // No duplicate-text window: only the state table stands between a hand edit and a second copy.
        kit.add_account("alice", &["--dup-window", "0s"]).await;
        Env { kit, pg }
    }

    async fn publish(&self, text: &str, extra: &[&str]) -> (i32, Value, String) {
        self.kit
            .publish("alice", &kit::fixture_contract(), text, extra)
            .await
    }

    /// Run SQL the way an operator would: the sqlite3 shell on the store file, or psql on the URL.
    fn hand_edit(&self, sql: &str) -> (bool, String) {
        let out = match &self.pg {
            None => std::process::Command::new("sqlite3")
                .arg(self.home().join("oncepost.db"))
                .arg(sql)
                .output(),
            Some(url) => std::process::Command::new("psql")
                .args([url.as_str(), "-v", "ON_ERROR_STOP=1", "-qtAc", sql])
                .output(),
        }
        .expect("run the database shell");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }
}

async fn a_published_intent_edited_back_to_pending_by_hand_is_refused_and_never_sent_again(
    b: Backend,
) {
    let env = Env::start(b).await;
    let text = format!("hand edit {}", uuid::Uuid::new_v4().simple());
    let (code, v, err) = env.publish(&text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(env.copies(&text), 1);
    let key = v["key"].as_str().expect("key").to_string();
    for sql in [
        format!(
            "DELETE FROM text_claims WHERE intent_id = (SELECT id FROM intents WHERE delivery_key = '{key}')"
        ),
        format!("UPDATE intents SET state = 'pending' WHERE delivery_key = '{key}'"),
        format!("UPDATE intents SET state = 'failed' WHERE delivery_key = '{key}'"),
        format!("DELETE FROM intents WHERE delivery_key = '{key}'"),
        format!(
            "DELETE FROM events WHERE intent_id = (SELECT id FROM intents WHERE delivery_key = '{key}')"
        ),
        format!(
            "UPDATE intents SET delivery_key = '{}' WHERE delivery_key = '{key}'",
            "0".repeat(64)
        ),
    ] {
        let (ok, out) = env.hand_edit(&sql);
        assert!(!ok, "the database accepted: {sql}\n{out}");
        assert!(out.contains("oncepost"), "{sql}: {out}");
    }
    // The same publish again, without the search that would find the first copy: the intent is still
    // published, so nothing is pressed and nothing arrives (with the edit accepted, a second copy goes out).
    let (code, v2, err) = env.publish(&text, &["--no-look-before-write"]).await;
    assert_eq!(code, 0, "{v2} {err}");
    assert_eq!(v2["state"], "published");
    assert_eq!(v2["pressed"], false);
    assert_eq!(env.copies(&text), 1, "a second copy went out");
    let (code, out, err) = env.run(&["intents", "show", &key, "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let tl: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(tl["intent"]["state"], "published");
    let authorized = tl["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "authorized")
        .count();
    assert_eq!(authorized, 1, "authorized again: {}", tl["events"]);
}

mod binary {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite_a_published_intent_edited_back_to_pending_by_hand_is_refused_and_never_sent_again()
     {
        a_published_intent_edited_back_to_pending_by_hand_is_refused_and_never_sent_again(
            Backend::Sqlite,
        )
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_a_published_intent_edited_back_to_pending_by_hand_is_refused_and_never_sent_again()
     {
        a_published_intent_edited_back_to_pending_by_hand_is_refused_and_never_sent_again(
            Backend::Postgres,
        )
        .await
    }
}
