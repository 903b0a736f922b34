//! Separate `oncepost publish` processes racing one intent on one PostgreSQL store, as on separate hosts.
//!
//! store.rs races tasks on one pool in one process; publish.rs races processes on one host, where the
//! per-host intent lock (src/lock.rs) lines them up before they reach the store. Here every process has its
//! own data dir (its own locks and browser profile), so nothing but the store's guarded statements stands
//! between them and a second copy: the claim in `begin` elects one executor, `authorize_dispatch` re-checks
//! that claim, and the others are turned away or answered with the outcome.
use std::process::Stdio;
use std::time::Duration;

use crate::kit::{self, Backend, Oncepost, unique};
use oncepost::fixture_platform::Fault;
use serde_json::Value;

/// Processes in the race: each one launches its own Chromium, so a few are enough on a 2-core machine.
const RACERS: usize = 4;

/// Bound on the whole race (every process ends long before this unless something hangs).
const RACE_BOUND: Duration = Duration::from_secs(240);

/// The exit codes a racer may declare: 0 published (pressed, or answered as it stands), 13 in progress
/// elsewhere (another process holds the claim; what every loser answered in the runs so far, at `begin`), and
/// 4 refused by the state table, nothing changed (a racer slow enough that its look-before-write finds the
/// winner's post while the intent is no longer pending). Anything else (an internal error such as a
/// constraint violation, a signal, failed, indeterminate, parked) is not how a clean race ends.
const DECLARED: [i32; 3] = [0, 4, 13];

/// `RACERS` publish processes (same account, same text, same contract and platform) started together against
/// one PostgreSQL store: exactly one copy reaches the platform, the intent records exactly one attempt and
/// one authorization, exactly one process pressed publish, and every process ends with a declared outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn separate_publish_processes_on_one_postgres_store_make_one_copy() {
    let env = kit::Env::start_on(Fault::default(), Backend::Postgres).await;
    let store = env.oncepost.store().map(String::from);
    assert!(
        store.as_deref().is_some_and(|s| s.starts_with("postgres")),
        "the race runs on PostgreSQL: {store:?}"
    );
    env.add_account("alice", &["--handle", "alice"]).await;
    let text = unique("multi-process race");
    let args = env.publish_args("alice", &kit::fixture_contract(), &text);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    // One data dir per process ("host"), one store for all. Every process is started before any is waited on.
    let hosts: Vec<Oncepost> = (0..RACERS)
        .map(|i| Oncepost::new(env.dir.path().join(format!("host{i}"))).with_store(store.clone()))
        .collect();
    let children: Vec<_> = hosts
        .iter()
        .map(|h| {
            h.command(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn oncepost publish")
        })
        .collect();
    let outputs = tokio::time::timeout(
        RACE_BOUND,
        futures::future::join_all(children.into_iter().map(|c| c.wait_with_output())),
    )
    .await
    .expect("every racer ends in time");

    // Everything the race left, gathered before any assertion so a red run shows the whole picture.
    let racers: Vec<(i32, Value, String)> = outputs
        .into_iter()
        .map(|out| {
            let (code, stdout, stderr) = kit::cli::output_of(&out.expect("wait for a racer"));
            (code, kit::cli::json_or_null(&stdout), stderr)
        })
        .collect();
    let (code, list, err) = env.oncepost.run_json(&["intents", "list", "--json"]).await;
    assert_eq!(code, 0, "intents list: {err}");
    let keys: Vec<&str> = list
        .as_array()
        .expect("intents")
        .iter()
        .filter(|i| i["request"]["text"] == text.as_str())
        .filter_map(|i| i["key"].as_str())
        .collect();
    assert_eq!(keys.len(), 1, "one intent for one account and text: {list}");
    let shown = env.show(keys[0]).await;
    let kinds: Vec<&str> = shown["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    let count = |kind: &str| kinds.iter().filter(|k| **k == kind).count();
    let attempts = shown["attempts"].as_array().expect("attempts").len();
    let pressed = racers
        .iter()
        .filter(|(_, v, _)| v["pressed"] == true)
        .count();
    for (code, _, stderr) in &racers {
        eprintln!(
            "racer exited {code}: {}",
            stderr.lines().last().unwrap_or_default()
        );
    }
    eprintln!(
        "copies {}, arrivals {}, attempts {attempts}, begun {}, authorized {}, pressed {pressed}, state {}",
        env.copies(&text),
        env.arrivals(),
        count("begun"),
        count("authorized"),
        shown["intent"]["state"]
    );

    // The platform's count: one post with the text is stored, one create request arrived.
    assert_eq!(env.copies(&text), 1, "copies on the platform");
    assert_eq!(
        env.arrivals(),
        1,
        "create requests that reached the platform"
    );
    // The store's record: published, one attempt, one begin, one authorization.
    assert_eq!(shown["intent"]["state"], "published", "{shown}");
    assert_eq!(attempts, 1, "attempts recorded: {shown}");
    assert_eq!(shown["intent"]["attempt_count"], 1, "{shown}");
    assert_eq!(count("begun"), 1, "{kinds:?}");
    assert_eq!(count("authorized"), 1, "{kinds:?}");
    // The processes: one pressed, each ended with a declared outcome and said it.
    assert_eq!(pressed, 1, "exactly one process pressed publish");
    for (code, v, stderr) in &racers {
        assert!(
            DECLARED.contains(code),
            "a racer exited {code}, not a declared outcome of a race: {v} {stderr}"
        );
        match code {
            // Published: pressed by this process, or answered as the store has it.
            0 => assert_eq!(v["state"], "published", "{v} {stderr}"),
            // --json prints one object for 13 too.
            13 => assert_eq!(v["key"], keys[0], "{v} {stderr}"),
            // 4 is said on stderr.
            _ => assert!(!stderr.trim().is_empty(), "exit {code} said nothing"),
        }
    }
}
