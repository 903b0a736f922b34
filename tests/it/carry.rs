//! Intents carry their contract: the contract file each publish ran with is kept in the store once per version
//! (`contract_versions`), so `reconcile --key K` and `publish --key K` need no contract file or base URL, and
//! keep working when the file on disk changed or is gone. `contract list` shows the kept versions.
use oncepost::fixture_platform::{Fault, FaultMode};
use oncepost::store::{Policy, Timestamp};
use serde_json::Value;

use crate::kit::{self, Backend, test_db, unique};

const HASH: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

/// A version is kept once, its first text stays, and the database refuses to change or delete it.
async fn a_kept_version_is_written_once_and_never_changed(b: Backend) {
    let db = test_db(b, Policy::default()).await;
    let s = &db.store;
    s.record_contract_version(HASH, "fixture", "first text", Timestamp(1))
        .await
        .unwrap();
    s.record_contract_version(HASH, "fixture", "second text", Timestamp(2))
        .await
        .unwrap();
    assert_eq!(
        s.contract_source(HASH).await.unwrap().as_deref(),
        Some("first text")
    );
    assert_eq!(s.contract_source(&"b".repeat(64)).await.unwrap(), None);
    let versions = s.contract_versions().await.unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!((versions[0].first_seen_at, versions[0].intents), (1, 0));
    assert!(
        s.record_contract_version("short", "fixture", "x", Timestamp(3))
            .await
            .is_err()
    );
    // By raw SQL, as a person with a database shell would.
    for sql in [
        "UPDATE contract_versions SET source = 'edited'",
        "DELETE FROM contract_versions",
    ] {
        assert!(
            s.execute_raw_for_tests(sql).await.is_err(),
            "{sql} must be refused"
        );
    }
    assert_eq!(
        s.contract_source(HASH).await.unwrap().as_deref(),
        Some("first text")
    );
}

on_both_backends!(a_kept_version_is_written_once_and_never_changed);

/// Published through a copy of the contract that is then overwritten: the intent's kept version still
/// reconciles it and answers a `publish --key` rerun, with neither `--contract` nor `--base-url`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_on_one_intent_use_the_kept_contract_when_given_none() {
    let env = kit::Env::start(Fault::new(FaultMode::CommitThenDrop)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let src = std::fs::read_to_string(kit::fixture_contract()).unwrap();
    let copy = env.write_file("mine.toml", &src);
    let text = unique("kept contract");
    let (code, v, err) = env
        .publish("alice", &copy, &text, &["--no-look-before-write"])
        .await;
    assert_eq!(code, 10, "{v} {err}");
    let key = v["key"].as_str().unwrap().to_string();
    env.platform.set_fault(Fault::default());
    // The file changes (or goes): the intent's contract does not.
    std::fs::write(&copy, "this is not a contract").unwrap();
    let (code, out, err) = env.run(&["contract", "list", "--json"]).await;
    assert_eq!(code, 0, "{out} {err}");
    let list: Value = serde_json::from_str(&out).unwrap();
    let c = oncepost::contract::Contract::load(&kit::fixture_contract()).unwrap();
    assert_eq!(list[0]["hash"], c.hash(), "{list}");
    assert_eq!(list[0]["platform"], "fixture");
    assert_eq!(list[0]["intents"], 1, "{list}");
    tokio::time::sleep(std::time::Duration::from_millis(2_100)).await;
    let (code, r, err) = env
        .oncepost
        .run_json(&["reconcile", "--json", "--key", &key])
        .await;
    assert_eq!(code, 0, "{r} {err}");
    assert_eq!(r["state"], "published", "{r}");
    let (code, out, err) = env.run(&["publish", "--key", &key, "--json"]).await;
    assert_eq!(code, 0, "{out} {err}");
    let rerun: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rerun["pressed"], false, "{rerun}");
    assert_eq!(env.copies(&text), 1);
    assert_eq!(env.arrivals(), 1);
    assert!(
        env.home()
            .join("contracts")
            .join(format!("{}.toml", c.hash()))
            .is_file(),
        "the kept version is written out for the lookup"
    );
    // Another version given by hand is still refused, as before.
    let other = env.write_file(
        "other.toml",
        &src.replace("propagation_ms = 2000", "propagation_ms = 2500"),
    );
    let (code, out, err) = env
        .run(&[
            "reconcile",
            "--key",
            &key,
            "--again",
            "--contract",
            other.to_str().unwrap(),
            "--base-url",
            &env.base_url(),
        ])
        .await;
    assert_eq!(code, 4, "{out} {err}");
}

/// Without an attempt there is no kept contract: the command says what to give.
#[tokio::test]
async fn an_intent_that_never_ran_asks_for_the_contract() {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    // A publish refused before any attempt: the compose page never opens on a port nothing serves.
    let text = unique("never ran");
    let (code, out, err) = env
        .run(&[
            "publish",
            "--contract",
            kit::fixture_contract().to_str().unwrap(),
            "--account",
            "alice",
            "--text",
            &text,
            "--base-url",
            "http://127.0.0.1:9",
            "--json",
        ])
        .await;
    assert_eq!(code, 2, "{out} {err}");
    let (code, out, err) = env.run(&["intents", "list", "--json"]).await;
    assert_eq!(code, 0, "{out} {err}");
    let list: Value = serde_json::from_str(&out).unwrap();
    let key = list[0]["key"]
        .as_str()
        .unwrap_or_else(|| panic!("the intent is listed: {out}"))
        .to_string();
    let (code, out, err) = env.run(&["reconcile", "--key", &key]).await;
    assert_eq!(code, 2, "{out} {err}");
    assert!(err.contains("give --contract and --base-url"), "{err}");
}
