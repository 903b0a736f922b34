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

/// `reconcile --due` and `worker` with no contract cover every platform: intents of two platforms (two
/// Fixturebooks, two contracts, one account each) left unknown by a dropped answer are each looked up through
/// their own kept contract at their own origin, and settle `published`; nothing is sent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_due_lookups_and_the_worker_cover_every_platform() {
    use oncepost::fixture_platform::{FixtureConfig, FixturePlatform};

    let env = kit::Env::start(Fault::new(FaultMode::CommitThenDrop)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let dir = tempfile::tempdir().unwrap();
    let two = FixturePlatform::start(FixtureConfig::new(dir.path().join("two")))
        .await
        .expect("a second platform");
    two.set_fault(Fault::new(FaultMode::CommitThenDrop));
    let (code, out, err) = env
        .run(&[
            "accounts",
            "add",
            "bob",
            "--platform",
            "second",
            "--handle",
            "bob",
        ])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let src = std::fs::read_to_string(kit::fixture_contract()).unwrap();
    let second = env.write_file(
        "second.toml",
        &src.replace("platform = \"fixture\"", "platform = \"second\""),
    );
    let publish =
        |account: &'static str, contract: std::path::PathBuf, base: String, text: String| {
            let env = &env;
            async move {
                let login = format!("{base}/login?account={account}");
                let (code, out, err) = env
                    .run(&[
                        "publish",
                        "--json",
                        "--no-look-before-write",
                        "--account",
                        account,
                        "--contract",
                        contract.to_str().unwrap(),
                        "--base-url",
                        &base,
                        "--login-url",
                        &login,
                        "--text",
                        &text,
                    ])
                    .await;
                assert_eq!(code, 10, "{out} {err}");
            }
        };
    let (a, b, c) = (
        unique("first platform"),
        unique("second platform"),
        unique("second again"),
    );
    publish("alice", kit::fixture_contract(), env.base_url(), a.clone()).await;
    publish("bob", second.clone(), two.base_url(), b.clone()).await;
    env.platform.set_fault(Fault::default());
    two.set_fault(Fault::default());
    tokio::time::sleep(std::time::Duration::from_millis(2_100)).await;
    let (code, out, err) = env.run(&["reconcile", "--due", "--json"]).await;
    assert_eq!(code, 0, "{out} {err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines.iter().all(|l| l["state"] == "published"), "{out}");
    // The worker, with no contract either.
    two.set_fault(Fault::new(FaultMode::CommitThenDrop));
    publish("bob", second.clone(), two.base_url(), c.clone()).await;
    two.set_fault(Fault::default());
    tokio::time::sleep(std::time::Duration::from_millis(2_100)).await;
    let (code, out, err) = env
        .run(&["worker", "--passes", "1", "--interval", "1s"])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let pass: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(
        pass["reconciled"].as_array().map(Vec::len),
        Some(1),
        "{pass}"
    );
    assert_eq!(pass["reconciled"][0]["state"], "published", "{pass}");
    assert_eq!(env.copies(&a), 1);
    assert_eq!(kit::platform::copies(&two, &b), 1);
    assert_eq!(kit::platform::copies(&two, &c), 1);
    assert_eq!(
        env.arrivals() + two.stats().create_arrivals,
        3,
        "nothing sent again"
    );
}
