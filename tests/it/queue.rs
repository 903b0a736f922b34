//! The queue and the fleet's shared limits: `submit` queues an intent and returns its key, `worker` publishes
//! due intents through what they recorded, `wait` waits for them to rest; pacing caps, platform limits and
//! account leases are decided inside the authorization transaction, on both backends.
use std::collections::BTreeMap;
use std::sync::Arc;

use oncepost::fixture_platform::Fault;
use oncepost::identity::{ActionKind, CanonicalRequest};
use oncepost::store::*;
use serde_json::Value;

use crate::kit::{self, Backend, Env, TestDb, test_db, unique};

const T0: i64 = 1_800_000_000_000;
const CONTRACT: &str = "contract-v1";
const HOUR: i64 = 3_600_000;

fn at(ms: i64) -> Timestamp {
    Timestamp(T0 + ms)
}

async fn db(b: Backend, accounts: &[&str]) -> TestDb {
    let db = test_db(
        b,
        Policy {
            claim_lease_ms: 60_000,
            dispatch_lease_ms: 60_000,
            ..Policy::default()
        },
    )
    .await;
    for name in accounts {
        db.store
            .add_account(
                &NewAccount {
                    name: name.to_string(),
                    platform: "fixture".into(),
                    min_interval_ms: 0,
                    dup_window_ms: 0,
                },
                "test",
                at(0),
            )
            .await
            .expect("add account");
    }
    db
}

async fn claimed(s: &Store, account: &str, text: &str, owner: &str, now: Timestamp) -> Claim {
    let key = s
        .create_intent(
            &NewIntent {
                account: account.into(),
                action: ActionKind::Post,
                target: String::new(),
                request: CanonicalRequest::new(Some(text), &BTreeMap::new()),
                source: None,
            },
            now,
        )
        .await
        .expect("create")
        .intent
        .key;
    match s.begin(&key, owner, CONTRACT, now).await.expect("begin") {
        Begun::Claimed(c) => c,
        other => panic!("expected a claim, got {other:?}"),
    }
}

fn refusal(r: Result<DispatchAuthorization, StoreError>) -> AuthorizeRefusal {
    match r {
        Err(StoreError::Refused(why)) => why,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Hourly and daily caps count the account's dispatches in the rolling window; a refusal says until when.
async fn caps_refuse_until_the_window_moves(b: Backend) {
    let db = db(b, &["alice"]).await;
    let s = &db.store;
    s.set_account_pacing(
        "alice",
        Pacing {
            hourly_cap: Some(Some(2)),
            daily_cap: Some(Some(3)),
            jitter_ms: None,
        },
        "t",
        at(0),
    )
    .await
    .unwrap();
    for (i, t) in [0, 1_000].into_iter().enumerate() {
        let c = claimed(s, "alice", &format!("post {i}"), "w", at(t)).await;
        s.authorize_dispatch(&c, CONTRACT, at(t)).await.unwrap();
    }
    let c = claimed(s, "alice", "third", "w", at(2_000)).await;
    let why = refusal(s.authorize_dispatch(&c, CONTRACT, at(2_000)).await);
    assert_eq!(
        why,
        AuthorizeRefusal::Paced {
            account: "alice".into(),
            rule: "hourly cap 2".into(),
            until: T0 + HOUR,
        }
    );
    assert_eq!(why.retry_at(T0), Some(T0 + HOUR));
    // An hour after the first, the hourly cap allows one more; then the daily cap of 3 holds for a day.
    let c = claimed(s, "alice", "fourth", "w", at(HOUR + 1)).await;
    s.authorize_dispatch(&c, CONTRACT, at(HOUR + 1))
        .await
        .unwrap();
    let c = claimed(s, "alice", "fifth", "w", at(2 * HOUR + 10_000)).await;
    let why = refusal(
        s.authorize_dispatch(&c, CONTRACT, at(2 * HOUR + 10_000))
            .await,
    );
    assert!(
        matches!(&why, AuthorizeRefusal::Paced { rule, until, .. } if rule == "daily cap 3" && *until == T0 + 24 * HOUR),
        "{why:?}"
    );
    // Removing the caps lets it through.
    s.set_account_pacing(
        "alice",
        Pacing {
            hourly_cap: Some(None),
            daily_cap: Some(None),
            jitter_ms: None,
        },
        "t",
        at(0),
    )
    .await
    .unwrap();
    s.authorize_dispatch(&c, CONTRACT, at(2 * HOUR + 10_001))
        .await
        .expect("no caps");
}

/// Two hosts authorizing for one account at the same moment: the cap lets exactly one through, on both
/// backends (on PostgreSQL the account row's lock orders them; the count is a new statement after it).
async fn concurrent_authorizations_never_exceed_a_cap(b: Backend) {
    let db = db(b, &["alice"]).await;
    let s = Arc::new(db.store.clone());
    s.set_account_pacing(
        "alice",
        Pacing {
            hourly_cap: Some(Some(1)),
            ..Pacing::default()
        },
        "t",
        at(0),
    )
    .await
    .unwrap();
    for round in 0..4 {
        let now = at(round * 2 * HOUR);
        let mut claims = Vec::new();
        for w in 0..4 {
            claims.push(
                claimed(
                    &s,
                    "alice",
                    &format!("r{round} w{w}"),
                    &format!("w{w}"),
                    now,
                )
                .await,
            );
        }
        let mut tasks = Vec::new();
        for c in claims {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                s.authorize_dispatch(&c, CONTRACT, now).await
            }));
        }
        let mut passed = 0;
        for t in tasks {
            match t.await.unwrap() {
                Ok(_) => passed += 1,
                Err(StoreError::Refused(AuthorizeRefusal::Paced { .. })) => {}
                Err(StoreError::Refused(AuthorizeRefusal::Conflict)) => {}
                Err(e) => panic!("unexpected: {e}"),
            }
        }
        assert_eq!(passed, 1, "round {round}: one authorization per hour");
    }
}

/// Jitter: the next dispatch may go only after the interval plus a drawn extra wait, within the bound.
async fn jitter_pushes_the_next_dispatch_within_its_bound(b: Backend) {
    let db = db(b, &["alice"]).await;
    let s = &db.store;
    s.set_account_limits("alice", Some(1_000), None, "t", at(0))
        .await
        .unwrap();
    s.set_account_pacing(
        "alice",
        Pacing {
            jitter_ms: Some(10_000),
            ..Pacing::default()
        },
        "t",
        at(0),
    )
    .await
    .unwrap();
    let mut draws = Vec::new();
    let mut t = 0;
    for i in 0..6 {
        let c = claimed(s, "alice", &format!("j{i}"), "w", at(t)).await;
        s.authorize_dispatch(&c, CONTRACT, at(t)).await.unwrap();
        let next = s.account("alice").await.unwrap().next_dispatch_at.unwrap();
        assert!((T0 + t + 1_000..=T0 + t + 11_000).contains(&next), "{next}");
        draws.push(next - (T0 + t));
        // Just before it: not yet, and the refusal names it.
        let c = claimed(s, "alice", &format!("j{i} early"), "w", Timestamp(next - 1)).await;
        let why = refusal(
            s.authorize_dispatch(&c, CONTRACT, Timestamp(next - 1))
                .await,
        );
        assert_eq!(why.retry_at(next - 1), Some(next), "{why:?}");
        t = next - T0;
    }
    draws.dedup();
    assert!(
        draws.len() > 1,
        "the extra wait is drawn, not fixed: {draws:?}"
    );
}

/// A platform limit on dispatches in flight holds across accounts; a settled dispatch frees its place.
async fn a_platform_limit_counts_dispatches_in_flight(b: Backend) {
    let db = db(b, &["alice", "bob"]).await;
    let s = &db.store;
    s.set_platform_limit("fixture", Some(1), "t", at(0))
        .await
        .unwrap();
    let c1 = claimed(s, "alice", "one", "w1", at(0)).await;
    let c2 = claimed(s, "bob", "two", "w2", at(0)).await;
    let a1 = s.authorize_dispatch(&c1, CONTRACT, at(1)).await.unwrap();
    let why = refusal(s.authorize_dispatch(&c2, CONTRACT, at(2)).await);
    assert_eq!(
        why,
        AuthorizeRefusal::PlatformBusy {
            platform: "fixture".into(),
            in_flight: 1,
            max: 1
        }
    );
    assert!(why.retry_at(0).is_some());
    s.settle(
        a1.fence(),
        &Settlement::Failed {
            proof: serde_json::json!({ "test": true }),
        },
        at(3),
    )
    .await
    .unwrap();
    s.authorize_dispatch(&c2, CONTRACT, at(4))
        .await
        .expect("a place is free");
    s.set_platform_limit("fixture", None, "t", at(5))
        .await
        .unwrap();
    assert!(s.platform_limits().await.unwrap().is_empty());
}

/// An account's lease: one holder at a time; the authorization refuses a claim whose publish does not hold
/// the live lease while someone else does, and a holder that lost it (expired, taken over) is refused.
async fn an_account_lease_fences_out_a_host_that_lost_it(b: Backend) {
    let db = db(b, &["alice"]).await;
    let s = &db.store;
    let a = s
        .acquire_account_lease("alice", "host-a", 10_000, at(0))
        .await
        .unwrap();
    match s
        .acquire_account_lease("alice", "host-b", 10_000, at(1))
        .await
    {
        Err(StoreError::LeaseHeld { owner, expires_at }) => {
            assert!(owner.contains("host-a"), "{owner}");
            assert_eq!(expires_at, T0 + 10_000);
        }
        other => panic!("expected LeaseHeld, got {other:?}"),
    }
    // Renewing keeps the fence.
    let renewed = s
        .acquire_account_lease("alice", "host-a", 10_000, at(2))
        .await
        .unwrap();
    assert_eq!(renewed.fence, a.fence);
    // Without the lease (host B never got it): refused while A holds it.
    let mut cb = claimed(s, "alice", "from b", "host-b", at(3)).await;
    let why = refusal(s.authorize_dispatch(&cb, CONTRACT, at(3)).await);
    assert!(
        matches!(&why, AuthorizeRefusal::AccountLeased { holder, .. } if holder == "host-a"),
        "{why:?}"
    );
    // A stalls past its lease; B takes the account over with a new fence.
    let mut ca = claimed(s, "alice", "from a", "host-a", at(4)).await;
    ca.account_lease = Some(renewed.clone());
    let b_lease = s
        .acquire_account_lease("alice", "host-b", 10_000, at(12_001))
        .await
        .unwrap();
    assert_ne!(b_lease.fence, renewed.fence);
    let why = refusal(s.authorize_dispatch(&ca, CONTRACT, at(12_002)).await);
    assert!(
        matches!(&why, AuthorizeRefusal::AccountLeased { holder, .. } if holder == "host-b"),
        "{why:?}"
    );
    // B, with its lease, goes through.
    cb.account_lease = Some(b_lease.clone());
    s.authorize_dispatch(&cb, CONTRACT, at(12_003))
        .await
        .expect("the lease holder authorizes");
    // A's release of a lease it no longer holds leaves B's alone.
    s.release_account_lease(&renewed, at(12_004)).await.unwrap();
    assert_eq!(
        s.account_lease("alice", at(12_004)).await.unwrap(),
        Some(b_lease.clone())
    );
    s.release_account_lease(&b_lease, at(12_004)).await.unwrap();
    assert_eq!(s.account_lease("alice", at(12_005)).await.unwrap(), None);
}

mod store_level {
    use super::*;
    on_both_backends!(
        caps_refuse_until_the_window_moves,
        concurrent_authorizations_never_exceed_a_cap,
        jitter_pushes_the_next_dispatch_within_its_bound,
        a_platform_limit_counts_dispatches_in_flight,
        an_account_lease_fences_out_a_host_that_lost_it,
    );
}

// ---------------------------------------------------------------------------------------------------------
// Through the binary

/// A Fixturebook env with `accounts` registered (handle = name) and logged in: one synchronous publish each
/// (the login link leaves a lasting session in the account's profile, which queued publishes use).
async fn env_with(b: Backend, accounts: &[&str]) -> Env {
    let env = Env::start_on(Fault::default(), b).await;
    for a in accounts {
        env.add_account(a, &["--handle", a]).await;
        let (code, v, err) = env
            .publish(
                a,
                &kit::fixture_contract(),
                &unique(&format!("{a} logs in")),
                &[],
            )
            .await;
        assert_eq!(code, 0, "{v} {err}");
    }
    env
}

async fn submit(env: &Env, account: &str, text: &str, extra: &[&str]) -> (i32, Value, String) {
    submit_with(env, &kit::fixture_contract(), account, text, extra).await
}

/// [`submit`] through `contract`.
async fn submit_with(
    env: &Env,
    contract: &std::path::Path,
    account: &str,
    text: &str,
    extra: &[&str],
) -> (i32, Value, String) {
    let base = env.base_url();
    let mut args = vec![
        "submit",
        "--json",
        "--contract",
        contract.to_str().unwrap(),
        "--account",
        account,
        "--base-url",
        &base,
        "--text",
        text,
    ];
    args.extend_from_slice(extra);
    env.oncepost.run_json(&args).await
}

async fn queued(env: &Env, account: &str, text: &str, extra: &[&str]) -> String {
    let (code, v, err) = submit(env, account, text, extra).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(
        (v["queued"].as_bool(), v["state"].as_str()),
        (Some(true), Some("pending")),
        "{v}"
    );
    v["key"].as_str().unwrap().to_string()
}

/// `worker --passes N`: its JSON lines.
async fn worker(env: &Env, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["worker", "--interval", "1s"];
    args.extend_from_slice(extra);
    let (code, out, err) = env.run(&args).await;
    assert_eq!(code, 0, "{out} {err}");
    out.lines().map(crate::kit::cli::json_or_null).collect()
}

fn runs(lines: &[Value]) -> Vec<&Value> {
    lines.iter().filter(|l| l.get("queue").is_some()).collect()
}

/// Submitted posts go out once each, through the worker, with what the intents recorded (no contract or base
/// URL given to the worker); a resubmit finds the same intent; a not-yet-due one waits; `wait` reports.
async fn submitted_posts_are_published_once_by_the_worker(b: Backend) {
    let env = env_with(b, &["alice", "bob"]).await;
    let before = env.arrivals();
    let (t1, t2, t3) = (
        unique("queued a"),
        unique("queued b"),
        unique("queued later"),
    );
    let k1 = queued(&env, "alice", &t1, &[]).await;
    let k2 = queued(&env, "bob", &t2, &["--not-before", "0s"]).await;
    let k3 = queued(&env, "alice", &t3, &["--not-before", "1h"]).await;
    let (code, again, err) = submit(&env, "alice", &t1, &[]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        (again["key"].as_str(), again["created"].as_bool()),
        (Some(k1.as_str()), Some(false))
    );
    assert_eq!(env.arrivals(), before, "submit sends nothing");
    let (code, _, _) = env.run(&["wait", &k1, "--timeout", "300ms"]).await;
    assert_eq!(code, 13, "not run yet");
    let lines = worker(&env, &["--passes", "1", "--concurrency", "2"]).await;
    let ran = runs(&lines);
    assert_eq!(ran.len(), 2, "{lines:?}");
    assert!(
        ran.iter()
            .all(|r| r["state"] == "published" && r["pressed"] == true),
        "{ran:?}"
    );
    for (k, t) in [(&k1, &t1), (&k2, &t2)] {
        let (code, out, err) = env.run(&["wait", k, "--timeout", "5s"]).await;
        assert_eq!(code, 0, "{out} {err}");
        assert_eq!(env.copies(t), 1);
    }
    assert_eq!(env.arrivals(), before + 2);
    let shown = env.show(&k1).await;
    let kinds: Vec<&str> = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"queued") && kinds.contains(&"published"),
        "{kinds:?}"
    );
    // Not due yet: untouched; another worker pass sends nothing more.
    worker(&env, &["--passes", "1"]).await;
    assert_eq!(env.arrivals(), before + 2);
    assert_eq!(env.show(&k3).await["intent"]["state"], "pending");
    assert_eq!(env.copies(&t3), 0);
    // Queued again for now, it goes out.
    let (code, v, err) = env
        .oncepost
        .run_json(&["submit", "--json", "--key", &k3, "--not-before", "0s"])
        .await;
    assert_eq!(code, 0, "{v} {err}");
    worker(&env, &["--passes", "1"]).await;
    let (code, _, _) = env.run(&["wait", &k3, "--timeout", "5s"]).await;
    assert_eq!(code, 0);
    assert_eq!(env.copies(&t3), 1);
}

/// A paced account's queued posts wait: the worker does not take what the cap forbids, a synchronous publish
/// is refused "not yet" by the authorization itself (exit 4, nothing sent, still pending), and once the cap
/// is lifted the worker makes the post.
async fn a_capped_account_waits_and_nothing_is_sent(b: Backend) {
    let env = env_with(b, &["alice"]).await;
    let (code, out, err) = env
        .run(&[
            "accounts",
            "pace",
            "alice",
            "--hourly-cap",
            "2",
            "--jitter",
            "0s",
        ])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    assert!(out.contains("hourly_cap=2"), "{out}");
    let before = env.arrivals();
    let (t1, t2) = (unique("capped one"), unique("capped two"));
    let k1 = queued(&env, "alice", &t1, &[]).await;
    let k2 = queued(&env, "alice", &t2, &[]).await;
    let lines = worker(&env, &["--passes", "4", "--concurrency", "2"]).await;
    assert_eq!(
        runs(&lines).len(),
        1,
        "one post allowed by the cap: {lines:?}"
    );
    assert_eq!(env.arrivals(), before + 1);
    let (first, second) = if env.copies(&t1) == 1 {
        (&k1, &k2)
    } else {
        (&k2, &k1)
    };
    assert_eq!(env.show(first).await["intent"]["state"], "published");
    assert_eq!(env.show(second).await["intent"]["state"], "pending");
    // The synchronous path meets the same cap inside the authorization.
    let (code, v, err) = env
        .oncepost
        .run_json(&["publish", "--json", "--key", second])
        .await;
    assert_eq!(code, 4, "{v} {err}");
    assert_eq!(v["state"], "pending", "{v}");
    assert_eq!(v["pressed"], false);
    assert!(
        v["summary"].as_str().unwrap().contains("hourly cap 2"),
        "{v}"
    );
    assert!(
        v["not_before"].as_i64().unwrap() > oncepost::store::Timestamp::now().0 + 50 * 60_000,
        "{v}"
    );
    assert_eq!(env.arrivals(), before + 1, "refused: nothing sent");
    // Lifted: the worker makes it.
    let (code, out, err) = env
        .run(&["accounts", "pace", "alice", "--hourly-cap", "none"])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    env.oncepost
        .run(&["submit", "--key", second, "--not-before", "0s"])
        .await;
    worker(&env, &["--passes", "1"]).await;
    assert_eq!(env.show(second).await["intent"]["state"], "published");
    assert_eq!(env.arrivals(), before + 2);
}

/// Another host holds the account's lease: the worker leaves the account's intents alone (nothing launched,
/// nothing sent) until the lease runs out, then publishes them.
async fn a_leased_account_is_left_to_its_holder(b: Backend) {
    let env = env_with(b, &["alice"]).await;
    let store = env.open_store().await;
    let text = unique("leased");
    let key = queued(&env, "alice", &text, &[]).await;
    let before = env.arrivals();
    store
        .acquire_account_lease("alice", "other-host:1:x", 4_000, Timestamp::now())
        .await
        .unwrap();
    let lines = worker(&env, &["--passes", "1"]).await;
    assert!(runs(&lines).is_empty(), "{lines:?}");
    assert_eq!(env.arrivals(), before);
    tokio::time::sleep(std::time::Duration::from_millis(4_200)).await;
    let lines = worker(&env, &["--passes", "1"]).await;
    assert_eq!(runs(&lines).len(), 1, "{lines:?}");
    assert_eq!(env.show(&key).await["intent"]["state"], "published");
    assert_eq!(env.copies(&text), 1);
    assert_eq!(
        store
            .account_lease("alice", Timestamp::now())
            .await
            .unwrap(),
        None,
        "given back"
    );
}

on_both_backends!(
    submitted_posts_are_published_once_by_the_worker,
    a_capped_account_waits_and_nothing_is_sent,
    a_leased_account_is_left_to_its_holder,
);

/// Bad input to submit and wait: a clear error, exit 2, nothing created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_and_wait_refuse_bad_input() {
    let env = Env::start(Fault::default()).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let text = unique("bad input");
    for (extra, says) in [
        (vec!["--not-before", "soonish"], "--not-before"),
        (
            vec!["--not-before", "2026-12-03T14:00:00+01:00"],
            "UTC time",
        ),
        (
            vec!["--login-url", "http://127.0.0.1:9/login"],
            "login link",
        ),
        (vec!["--wait"], "oncepost wait"),
    ] {
        let (code, _, err) = submit(&env, "alice", &text, &extra).await;
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
    }
    let (code, _, err) = submit(&env, "nobody", &text, &[]).await;
    assert_eq!(code, 2, "{err}");
    let (code, out, _) = env.run(&["intents", "list", "--json"]).await;
    assert_eq!(code, 0);
    assert!(!out.contains(&text), "nothing created: {out}");
    let (code, _, err) = env.run(&["wait", "not-a-key"]).await;
    assert_eq!(code, 2, "{err}");
}

/// A platform's rate limit (Fixturebook `rate-limited`: 429 with `Retry-After: 1`, nothing made), declared
/// `retry_later_statuses = [429]` (format 2). A queued post fails (nothing made), is re-opened and queued
/// again for the time the answer named, and the next worker pass after it makes the post, once. A synchronous
/// publish fails saying when (`not_before`) and how to retry. Red without the handling: undeclared, the 429 is
/// doubt (indeterminate, then parked), and the post is never made by a worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_the_platform_says_to_send_later_is_queued_again_and_made_once() {
    use oncepost::fixture_platform::FaultMode;
    let env = env_with(Backend::Sqlite, &["alice"]).await;
    let src = std::fs::read_to_string(kit::fixture_contract()).unwrap();
    let declared = src.replace("format = 1", "format = 2").replace(
        "rejection_statuses = [422]\n",
        "rejection_statuses = [422]\nretry_later_statuses = [429]\n",
    );
    assert!(declared.contains("retry_later_statuses"), "{declared}");
    let contract = env.write_file("rate-limited.toml", &declared);
    let text = unique("sent when the platform is ready");
    let (code, v, err) = submit_with(&env, &contract, "alice", &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    let key = v["key"].as_str().unwrap().to_string();
    let before = env.arrivals();

    env.platform
        .set_fault(Fault::new(FaultMode::RateLimited).with_delay_ms(1000));
    let asked = Timestamp::now().0;
    let lines = worker(&env, &["--passes", "1"]).await;
    assert_eq!(runs(&lines).len(), 1, "{lines:?}");
    assert_eq!(
        (env.arrivals(), env.copies(&text)),
        (before + 1, 0),
        "asked once, nothing made"
    );
    let shown = env.show(&key).await;
    assert_eq!(shown["intent"]["state"], "pending", "{shown}");
    let run_after = shown["intent"]["run_after"].as_i64().unwrap_or_default();
    assert!(
        run_after >= asked + 1000 && run_after < asked + 60_000,
        "queued again for Retry-After: {shown}"
    );
    let kinds = kit::event_kinds(&shown["events"]);
    let tail: Vec<&str> = kinds
        .iter()
        .rev()
        .take(3)
        .rev()
        .map(String::as_str)
        .collect();
    assert_eq!(tail, ["failed", "retried", "queued"], "{kinds:?}");

    env.platform.set_fault(Fault::new(FaultMode::Normal));
    tokio::time::sleep(std::time::Duration::from_millis(
        (run_after - Timestamp::now().0).clamp(0, 60_000) as u64 + 200,
    ))
    .await;
    worker(&env, &["--passes", "1"]).await;
    let (code, out, err) = env.run(&["wait", &key, "--timeout", "5s"]).await;
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!((env.arrivals(), env.copies(&text)), (before + 2, 1));

    // Synchronous: failed (nothing made), saying when to try again.
    env.platform
        .set_fault(Fault::new(FaultMode::RateLimited).with_delay_ms(30_000));
    let text = unique("published by hand while rate limited");
    let (code, v, err) = env.publish("alice", &contract, &text, &[]).await;
    assert_eq!(
        (code, v["state"].as_str()),
        (11, Some("failed")),
        "{v} {err}"
    );
    let not_before = v["not_before"].as_i64().unwrap_or_default();
    assert!(
        not_before >= Timestamp::now().0 + 20_000,
        "Retry-After 30 s: {v}"
    );
    assert!(
        v["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("oncepost retry"),
        "{v}"
    );
    assert_eq!(env.copies(&text), 0);
}

/// An account whose login ended on this host (Fixturebook `session-expired`: every create answered 401,
/// nothing made): the first queued send meets it (indeterminate, as a 401 not declared a rejection is) and
/// the worker sets the account aside on this host; its other queued posts stay pending, untouched, through
/// later worker runs, instead of each meeting the same answer (and each going to a person). `accounts list`
/// shows why; once the profile is logged in again, `accounts resume` takes the account back and the worker
/// makes each post once. Red without the set-aside: every queued post is sent into the 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_whose_login_ended_is_set_aside_and_its_queue_waits() {
    use oncepost::fixture_platform::FaultMode;
    let env = env_with(Backend::Sqlite, &["alice"]).await;
    let texts: Vec<String> = (1..=3)
        .map(|i| unique(&format!("queued before the login ended {i}")))
        .collect();
    let mut keys = Vec::new();
    for t in &texts {
        keys.push(queued(&env, "alice", t, &[]).await);
    }
    let before = env.arrivals();
    env.platform
        .set_fault(Fault::new(FaultMode::SessionExpired));
    let mut lines = Vec::new();
    for _ in 0..3 {
        lines.extend(worker(&env, &["--passes", "1", "--concurrency", "1"]).await);
    }
    let ran: Vec<&Value> = lines.iter().filter(|l| l["queue"] == "ran").collect();
    assert_eq!(ran.len(), 1, "one send met the ended login: {lines:?}");
    assert_eq!(ran[0]["state"], "indeterminate", "{lines:?}");
    let aside: Vec<&Value> = lines.iter().filter(|l| l["queue"] == "set_aside").collect();
    assert_eq!(aside.len(), 1, "{lines:?}");
    assert_eq!(aside[0]["account"], "alice");
    assert_eq!(aside[0]["key"], ran[0]["key"]);
    assert!(
        aside[0]["why"]
            .as_str()
            .is_some_and(|w| w.contains("HTTP 401")),
        "{lines:?}"
    );
    assert_eq!(env.arrivals(), before + 1, "the others were never sent");
    let waiting: Vec<&String> = keys
        .iter()
        .filter(|k| k.as_str() != ran[0]["key"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(waiting.len(), 2);
    for k in &waiting {
        let shown = env.show(k).await;
        assert_eq!(
            (
                shown["intent"]["state"].as_str(),
                shown["intent"]["attempt_count"].as_i64()
            ),
            (Some("pending"), Some(0)),
            "{shown}"
        );
    }
    let (code, out, err) = env.run(&["accounts", "list"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("set aside on this host"), "{out}");
    let (code, listed, err) = env.oncepost.run_json(&["accounts", "list", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        listed[0]["set_aside_here"]["why"]
            .as_str()
            .is_some_and(|w| w.contains("HTTP 401")),
        "{listed}"
    );

    // Logged in again (the platform takes the session again), then resumed: each post made once.
    env.platform.set_fault(Fault::new(FaultMode::Normal));
    let (code, v, err) = env
        .oncepost
        .run_json(&["accounts", "resume", "alice", "--json"])
        .await;
    assert_eq!((code, v["resumed"].as_bool()), (0, Some(true)), "{v} {err}");
    // One post per run (one account at a time per host); a run skipped because a pass's lookup held the
    // profile is deferred by the poll (1 s).
    for _ in 0..6 {
        worker(&env, &["--passes", "1", "--concurrency", "1"]).await;
        if env.arrivals() == before + 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    }
    for k in &waiting {
        let (code, out, err) = env.run(&["wait", k, "--timeout", "5s"]).await;
        assert_eq!(code, 0, "{out} {err}");
    }
    for (k, t) in keys.iter().zip(&texts) {
        let made = usize::from(waiting.contains(&k));
        assert_eq!(env.copies(t), made, "{t}");
    }
    assert_eq!(env.arrivals(), before + 3);
    let (code, v, err) = env
        .oncepost
        .run_json(&["accounts", "resume", "alice", "--json"])
        .await;
    assert_eq!(
        (code, v["resumed"].as_bool()),
        (0, Some(false)),
        "{v} {err}"
    );

    // Set aside again; a synchronous send of the account published from this host (logged in by its link)
    // shows the login works: the account is resumed with it.
    env.platform
        .set_fault(Fault::new(FaultMode::SessionExpired));
    queued(
        &env,
        "alice",
        &unique("queued as the login ended again"),
        &[],
    )
    .await;
    // (A pass's reconcile lookup of the first send may hold the profile: that run is skipped, and the
    // next worker run takes it.)
    let mut lines = Vec::new();
    for _ in 0..4 {
        lines.extend(worker(&env, &["--passes", "1", "--concurrency", "1"]).await);
        if lines.iter().any(|l| l["queue"] == "set_aside") {
            break;
        }
        // A skipped run is deferred by the poll (1 s).
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    }
    assert!(lines.iter().any(|l| l["queue"] == "set_aside"), "{lines:?}");
    env.platform.set_fault(Fault::new(FaultMode::Normal));
    published_by_hand_resumes(
        &env,
        "alice",
        &kit::fixture_contract(),
        &unique("logged in again by hand"),
    )
    .await;
    let (_, listed, _) = env.oncepost.run_json(&["accounts", "list", "--json"]).await;
    assert!(listed[0].get("set_aside_here").is_none(), "{listed}");
}

/// The same on a synchronous send (an agent calling `publish`, no worker): the send that meets the ended login
/// sets the account aside on this host, and the next send of it without a login link is refused before
/// anything is recorded or sent (exit 4, saying what to do) instead of meeting the same 401; a rerun of the
/// first is answered as it stands. Logged in again by its link, the next send is published and resumes the
/// account. Red without the refusal: the second send goes out into the 401 too (indeterminate).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synchronous_send_after_the_login_ended_is_refused_until_it_logs_in() {
    use oncepost::fixture_platform::FaultMode;
    let env = env_with(Backend::Sqlite, &["alice"]).await;
    let contract = kit::fixture_contract();
    let without_login = |text: &str| {
        let mut args = env.publish_args("alice", &contract, text);
        let at = args.iter().position(|a| a == "--login-url").unwrap();
        args.drain(at..at + 2);
        args
    };
    let env = &env;
    let run = |args: Vec<String>| async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        env.oncepost.run_json(&args).await
    };
    env.platform
        .set_fault(Fault::new(FaultMode::SessionExpired));
    let first = unique("sent as the login ended");
    let (code, v, err) = run(without_login(&first)).await;
    assert_eq!(code, 10, "{v} {err}");
    assert_eq!(
        v["signed_out"], "the create request was answered HTTP 401",
        "{v}"
    );
    assert!(err.contains("set aside on this host"), "{err}");
    let arrivals = env.arrivals();

    let second = unique("sent after the login ended");
    let (code, v, err) = run(without_login(&second)).await;
    assert_eq!(code, 4, "{v} {err}");
    assert!(
        err.contains("is set aside on this host") && err.contains("--login-url"),
        "{err}"
    );
    assert_eq!(env.arrivals(), arrivals, "nothing sent");
    let (code, listed, _) = env.oncepost.run_json(&["intents", "list", "--json"]).await;
    assert_eq!(code, 0);
    assert!(
        !listed.to_string().contains(&second),
        "nothing recorded: {listed}"
    );
    // A rerun of the first rests as it is: answered, not refused.
    let (code, v, err) = run(without_login(&first)).await;
    assert_eq!(
        (code, v["pressed"].as_bool()),
        (10, Some(false)),
        "{v} {err}"
    );

    env.platform.set_fault(Fault::new(FaultMode::Normal));
    published_by_hand_resumes(env, "alice", &contract, &second).await;
    let third = unique("sent once the login works again");
    let (code, v, err) = run(without_login(&third)).await;
    assert_eq!(
        (code, v["state"].as_str()),
        (0, Some("published")),
        "{v} {err}"
    );
    assert_eq!((env.copies(&second), env.copies(&third)), (1, 1));
}

/// The other sign: a platform visitors may post on, whose contract says where its page shows who is logged in
/// (`compose.signed_in_as`), and an account whose profile on this host is not logged in. Its first queued
/// send presses nothing (failed: the compose page does not show the account) and sets the account aside; the
/// next stays pending through later worker runs. A send of the account published from this host with its
/// login link resumes it, and the worker then makes the waiting post once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_not_shown_logged_in_is_set_aside_until_a_send_of_it_is_published() {
    let env = Env::start_on(Fault::default(), Backend::Sqlite).await;
    env.add_account("carol", &["--handle", "carol"]).await;
    let contract = env.signed_in_contract();
    let (first, second) = (unique("carol, not logged in"), unique("carol, waiting"));
    for t in [&first, &second] {
        let (code, v, err) = submit_with(&env, &contract, "carol", t, &[]).await;
        assert_eq!(code, 0, "{v} {err}");
    }
    let mut lines = Vec::new();
    for _ in 0..2 {
        lines.extend(worker(&env, &["--passes", "1", "--concurrency", "1"]).await);
    }
    let ran: Vec<&Value> = lines.iter().filter(|l| l["queue"] == "ran").collect();
    assert_eq!(ran.len(), 1, "{lines:?}");
    assert_eq!(
        (ran[0]["state"].as_str(), ran[0]["pressed"].as_bool()),
        (Some("failed"), Some(false)),
        "{lines:?}"
    );
    let aside: Vec<&Value> = lines.iter().filter(|l| l["queue"] == "set_aside").collect();
    assert_eq!(aside.len(), 1, "{lines:?}");
    assert_eq!(
        aside[0]["why"], "the compose page does not show the account logged in",
        "{lines:?}"
    );
    assert_eq!(env.arrivals(), 0, "nothing was sent");

    // Logged in by a synchronous send with its link: published, and the account is taken back.
    published_by_hand_resumes(&env, "carol", &contract, &unique("carol logs in")).await;
    for _ in 0..4 {
        worker(&env, &["--passes", "1", "--concurrency", "1"]).await;
        if env.copies(&second) + env.copies(&first) > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    }
    // The waiting one was made once; the first failed (nothing made) and stays a person's to retry.
    let made = [env.copies(&first), env.copies(&second)];
    assert!(made == [0, 1] || made == [1, 0], "{made:?}");
    assert_eq!(env.arrivals(), 2, "the login send and the waiting post");
}

/// A synchronous send of `account` with its login link: published, and the account, set aside on this host,
/// resumed with it (said on stderr).
async fn published_by_hand_resumes(
    env: &Env,
    account: &str,
    contract: &std::path::Path,
    text: &str,
) {
    let (code, v, err) = env.publish(account, contract, text, &[]).await;
    assert_eq!(
        (code, v["state"].as_str()),
        (0, Some("published")),
        "{v} {err}"
    );
    assert!(err.contains("resumed on this host"), "{err}");
}
