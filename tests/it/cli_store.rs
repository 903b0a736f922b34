//! The store's command line, through the real binary: administration, inspection, exit codes and the
//! clear errors a person gets for bad input, a locked database, and a database from a newer oncepost.
use crate::kit;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use oncepost::identity::{ActionKind, CanonicalRequest, DeliveryKey};
use oncepost::store::*;
use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_oncepost")
}

/// Run the binary with a data dir (and optional store URL); fail loudly with everything we know.
fn run(home: &Path, store: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.env("ONCEPOST_HOME", home)
        .env_remove("ONCEPOST_STORE")
        .env("USER", "tester");
    if let Some(s) = store {
        cmd.arg("--store").arg(s);
    }
    cmd.args(args);
    cmd.output().expect("run oncepost")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stdout_json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); status {:?}\nstdout:\n{}\nstderr:\n{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "failed: {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        stderr(o)
    );
}

async fn make_intent(store: &Store, text: &str) -> DeliveryKey {
    store
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
        .key
}

async fn round_trip(store_url: Option<String>) {
    let home = tempfile::tempdir().unwrap();
    let s = store_url.as_deref();
    ok(&run(
        home.path(),
        s,
        &[
            "accounts",
            "add",
            "alice",
            "--platform",
            "fixture",
            "--min-interval",
            "1s",
        ],
    ));
    let dup = run(
        home.path(),
        s,
        &["accounts", "add", "alice", "--platform", "fixture"],
    );
    assert_eq!(code(&dup), 2, "{}", stderr(&dup));
    assert!(stderr(&dup).contains("already exists"));
    let accounts = stdout_json(&run(home.path(), s, &["accounts", "list", "--json"]));
    assert_eq!(accounts[0]["min_interval_ms"], 1000);

    // create an intent through the library on the same store
    let location = match &store_url {
        Some(u) => StoreLocation::parse(u).unwrap(),
        None => StoreLocation::default_in(home.path()),
    };
    let store = Store::open(&location, Policy::default()).await.unwrap();
    let key = make_intent(&store, "hello from the CLI test").await;

    let list = stdout_json(&run(home.path(), s, &["intents", "list", "--json"]));
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["key"], key.as_str());
    assert_eq!(list[0]["state"], "pending");
    let pending = stdout_json(&run(
        home.path(),
        s,
        &["intents", "list", "--state", "parked", "--json"],
    ));
    assert_eq!(pending.as_array().unwrap().len(), 0);

    // retry from pending: refused by the state table, exit 4, nothing changes
    let r = run(home.path(), s, &["retry", key.as_str()]);
    assert_eq!(code(&r), 4, "{}", stderr(&r));
    assert!(stderr(&r).contains("not allowed"), "{}", stderr(&r));

    ok(&run(
        home.path(),
        s,
        &["park", key.as_str(), "--reason", "needs a human look"],
    ));
    let shown = stdout_json(&run(
        home.path(),
        s,
        &["intents", "show", key.as_str(), "--json"],
    ));
    assert_eq!(shown["intent"]["state"], "parked");
    let events = shown["events"].as_array().unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[1]["kind"], "parked");
    assert_eq!(events[1]["actor"], "tester");
    assert_eq!(events[1]["reason"], "needs a human look");
    let text = run(home.path(), s, &["intents", "show", key.as_str()]);
    ok(&text);
    assert!(String::from_utf8_lossy(&text.stdout).contains("parked"));

    let re = stdout_json(&run(
        home.path(),
        s,
        &[
            "redeliver",
            key.as_str(),
            "--by",
            "dana",
            "--reason",
            "lost",
            "--json",
        ],
    ));
    assert_eq!(re["created"], true);
    let re2 = stdout_json(&run(
        home.path(),
        s,
        &[
            "redeliver",
            key.as_str(),
            "--by",
            "dana",
            "--reason",
            "lost",
            "--json",
        ],
    ));
    assert_eq!(re2["created"], false);
    assert_eq!(re["intent"]["key"], re2["intent"]["key"]);
    assert_eq!(re["intent"]["redelivery_of"], key.as_str());

    // kill switch and epoch through the CLI are what authorization sees
    let new_key = DeliveryKey::parse(re["intent"]["key"].as_str().unwrap()).unwrap();
    let claim = match store
        .begin(&new_key, "w", "c", Timestamp::now())
        .await
        .unwrap()
    {
        Begun::Claimed(c) => c,
        other => panic!("{other:?}"),
    };
    ok(&run(
        home.path(),
        s,
        &["switch", "on", "--account", "alice"],
    ));
    match store
        .authorize_dispatch(&claim, "c", Timestamp::now())
        .await
    {
        Err(StoreError::Refused(AuthorizeRefusal::KillSwitch { .. })) => {}
        other => panic!("switch not honoured: {other:?}"),
    }
    ok(&run(
        home.path(),
        s,
        &["switch", "off", "--account", "alice"],
    ));
    let e = stdout_json(&run(
        home.path(),
        s,
        &["store", "bump-epoch", "--reason", "restore drill", "--json"],
    ));
    assert_eq!(e["epoch"], 2);
    match store
        .authorize_dispatch(&claim, "c", Timestamp::now())
        .await
    {
        Err(StoreError::Refused(AuthorizeRefusal::StaleEpoch {
            held: 1,
            current: 2,
        })) => {}
        other => panic!("epoch not honoured: {other:?}"),
    }
    ok(&run(home.path(), s, &["accounts", "rotate", "alice"]));
    ok(&run(home.path(), s, &["accounts", "revoke", "alice"]));
    let acct = stdout_json(&run(home.path(), s, &["accounts", "list", "--json"]));
    assert_eq!(
        (
            acct[0]["credential_version"].as_i64(),
            acct[0]["revoked"].as_bool()
        ),
        (Some(2), Some(true))
    );
    let sweep = stdout_json(&run(home.path(), s, &["sweep", "--json"]));
    assert!(sweep["made_indeterminate"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn administration_and_inspection_round_trip_on_sqlite() {
    round_trip(None).await;
}

#[tokio::test]
async fn administration_and_inspection_round_trip_on_postgres() {
    round_trip(Some(kit::fresh_pg_url())).await;
}

#[test]
fn bad_input_gets_a_clear_message_and_exit_2() {
    let home = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["intents", "show", "nope"], "is not a delivery key"),
        (&["intents", "show", &"a".repeat(64)], "no intent with key"),
        (
            &["--store", "mysql://db/x", "intents", "list"],
            "unsupported scheme",
        ),
        (
            &["--store", "sqlite::memory:", "intents", "list"],
            "in-memory",
        ),
        (&["accounts", "rotate", "nobody"], "unknown account"),
        (
            &[
                "accounts",
                "add",
                "x",
                "--platform",
                "p",
                "--dup-window",
                "5 weeks",
            ],
            "unit",
        ),
        (&["park", &"b".repeat(64), "--reason", ""], "--reason"),
        (&["intents", "list", "--limit", "0"], "--limit"),
    ];
    for (args, needle) in cases {
        let o = run(home.path(), None, args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?} panicked");
    }
}

#[test]
fn unreachable_postgres_is_a_clear_error_not_a_panic() {
    let home = tempfile::tempdir().unwrap();
    // port 1 on loopback: nothing listens
    let o = run(
        home.path(),
        Some("postgres://nobody@127.0.0.1:1/none"),
        &["intents", "list"],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("bad store location"), "{}", stderr(&o));
}

#[tokio::test]
async fn a_database_locked_by_another_process_is_reported_with_exit_5() {
    let home = tempfile::tempdir().unwrap();
    ok(&run(
        home.path(),
        None,
        &["accounts", "add", "alice", "--platform", "fixture"],
    ));
    let db = home.path().join("oncepost.db");
    // another process holds the write lock
    let mut holder = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import sqlite3,sys,time\nc=sqlite3.connect({:?}, isolation_level=None)\nc.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\ntime.sleep(20)",
            db.display().to_string()
        ))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "locked");
    let o = run(
        home.path(),
        None,
        &[
            "--lock-wait",
            "300ms",
            "accounts",
            "add",
            "bob",
            "--platform",
            "fixture",
        ],
    );
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    assert!(stderr(&o).contains("locked"), "{}", stderr(&o));
    // and nothing was lost: once the lock is gone the same command works
    ok(&run(
        home.path(),
        None,
        &["accounts", "add", "bob", "--platform", "fixture"],
    ));
}

#[tokio::test]
async fn a_database_from_a_newer_oncepost_is_refused_with_exit_5() {
    let home = tempfile::tempdir().unwrap();
    ok(&run(
        home.path(),
        None,
        &["accounts", "add", "alice", "--platform", "fixture"],
    ));
    let store = Store::open(&StoreLocation::default_in(home.path()), Policy::default())
        .await
        .unwrap();
    store
        .execute_raw_for_tests(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (4242, 'future', 1, x'00', 1)",
        )
        .await
        .unwrap();
    store.close().await;
    let o = run(home.path(), None, &["intents", "list"]);
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    assert!(stderr(&o).contains("version 4242"), "{}", stderr(&o));
}
