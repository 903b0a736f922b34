//! Redelivery end to end through the real binary, real Chromium and the in-process Fixturebook platform, on
//! SQLite and PostgreSQL: a parked send is redelivered once (whoever asks, however many at once), and
//! `publish --key NEWKEY` sends exactly one copy of what the intent recorded; `publish --key` on an intent that
//! is not pending presses nothing and answers its state's exit code.
use std::ops::Deref;

use crate::kit::{self, Backend, unique};
use oncepost::fixture_platform::Fault;
use serde_json::Value;

/// The kit's platform and data dir (the store on the test's backend) with alice added.
struct Env {
    kit: kit::Env,
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
        kit.add_account("alice", &[]).await;
        Env { kit }
    }

    /// `publish --json` with the contract, base URL and alice's login link, plus `args`.
    async fn publish(&self, args: &[&str]) -> (i32, Value, String) {
        let base = self.base_url();
        let login = format!("{base}/login?account=alice");
        let contract = kit::fixture_contract();
        let contract = contract.to_string_lossy();
        let mut all = vec![
            "publish",
            "--json",
            "--contract",
            &contract,
            "--base-url",
            &base,
            "--login-url",
            &login,
        ];
        all.extend_from_slice(args);
        self.oncepost.run_json(&all).await
    }

    /// A send that never left, parked by an operator: publish under the global kill switch (authorization
    /// refused: failed, nothing sent), release the switch, park it.
    async fn parked_send(&self, text: &str) -> String {
        let (code, _, err) = self.run(&["switch", "on", "--by", "op"]).await;
        assert_eq!(code, 0, "{err}");
        let (code, v, err) = self.publish(&["--account", "alice", "--text", text]).await;
        assert_eq!(code, 11, "{v} {err}");
        let key = v["key"].as_str().expect("key").to_string();
        let (code, _, err) = self.run(&["switch", "off", "--by", "op"]).await;
        assert_eq!(code, 0, "{err}");
        let (code, _, err) = self
            .run(&["park", &key, "--reason", "held for a person", "--by", "op"])
            .await;
        assert_eq!(code, 0, "{err}");
        assert_eq!(self.arrivals(), 0);
        key
    }

    async fn redeliver(&self, key: &str, by: &str, reason: &str) -> (i32, Value, String) {
        self.oncepost
            .run_json(&["redeliver", key, "--by", by, "--reason", reason, "--json"])
            .await
    }
}

async fn park_redeliver_then_publish_key_sends_exactly_one_copy(b: Backend) {
    let env = Env::start(b).await;
    let text = unique("redelivered");
    let old = env.parked_send(&text).await;

    // The person's words: what happens next, and the command that does it.
    let (code, out, err) = env
        .run(&[
            "redeliver",
            &old,
            "--by",
            "rita",
            "--reason",
            "not on the feed",
        ])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let new = out
        .split_whitespace()
        .nth(2)
        .expect("the new key")
        .to_string();
    assert!(
        out.starts_with(&format!("new intent {new} (pending) redelivers {old}")),
        "{out}"
    );
    assert!(out.contains("Nothing has been sent"), "{out}");
    assert!(
        out.contains(&format!(
            "oncepost publish --key {new} --contract CONTRACT --base-url URL"
        )),
        "{out}"
    );
    assert_eq!(env.arrivals(), 0, "redeliver itself sent something");

    // publish --key: what the intent recorded goes out once, and is read back.
    let (code, v, err) = env.publish(&["--key", &new]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["key"], new.as_str());
    assert_eq!(v["state"], "published");
    assert_eq!(v["pressed"], true);
    assert_eq!(env.arrivals(), 1);
    assert_eq!(env.copies(&text), 1);

    // Again: answered, nothing pressed. The old one stays parked.
    let (code, v, _) = env.publish(&["--key", &new]).await;
    assert_eq!((code, v["pressed"].clone()), (0, Value::Bool(false)), "{v}");
    assert_eq!(env.arrivals(), 1);
    let (_, out, _) = env.run(&["intents", "show", &old, "--json"]).await;
    let t: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(t["intent"]["state"], "parked");

    // Another reviewer asks for a redelivery of the same parked send: the existing one, nothing new.
    let (code, v, err) = env.redeliver(&old, "sam", "I checked too").await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        (v["created"].clone(), v["intent"]["key"].clone()),
        (Value::Bool(false), Value::from(new.as_str()))
    );
    assert_eq!(v["intent"]["state"], "published");
    let (_, out, _) = env
        .run(&[
            "redeliver",
            &old,
            "--by",
            "sam",
            "--reason",
            "I checked too",
        ])
        .await;
    assert!(
        out.contains(&format!(
            "already has its redelivery {new} (published), authorized by rita"
        )),
        "{out}"
    );
    assert_eq!(env.copies(&text), 1);
}

async fn concurrent_redeliveries_of_one_send_make_one_intent(b: Backend) {
    let env = Env::start(b).await;
    let old = env.parked_send(&unique("raced")).await;
    let runs = (0..4).map(|i| {
        let env = &env;
        let old = old.clone();
        async move {
            env.redeliver(&old, &format!("reviewer {i}"), &format!("reason {i}"))
                .await
        }
    });
    // The binaries run at once; this task only waits for all of them.
    let results = futures::future::join_all(runs).await;
    let mut keys = std::collections::BTreeSet::new();
    let mut created = 0;
    for (code, v, err) in &results {
        assert_eq!(*code, 0, "{v} {err}");
        keys.insert(v["intent"]["key"].as_str().unwrap().to_string());
        created += v["created"].as_bool().unwrap() as usize;
    }
    assert_eq!((keys.len(), created), (1, 1), "{results:?}");
    let (_, out, _) = env.run(&["intents", "list", "--json"]).await;
    let all: Value = serde_json::from_str(&out).unwrap();
    let redeliveries = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["redelivery_of"] == old.as_str())
        .count();
    assert_eq!(redeliveries, 1);
}

async fn publish_key_on_an_intent_that_is_not_pending_presses_nothing(b: Backend) {
    let env = Env::start(b).await;
    let (code, _, err) = env.run(&["switch", "on", "--by", "op"]).await;
    assert_eq!(code, 0, "{err}");
    let text = unique("not pending");
    let (code, v, err) = env.publish(&["--account", "alice", "--text", &text]).await;
    assert_eq!(code, 11, "{v} {err}");
    let failed = v["key"].as_str().unwrap().to_string();
    let (code, _, _) = env.run(&["switch", "off", "--by", "op"]).await;
    assert_eq!(code, 0);

    // failed: exit 11, nothing pressed; the words say retry first.
    let (code, v, err) = env.publish(&["--key", &failed]).await;
    assert_eq!(
        (code, v["state"].as_str(), v["pressed"].as_bool()),
        (11, Some("failed"), Some(false)),
        "{v} {err}"
    );
    let base = env.platform.base_url();
    let contract = kit::fixture_contract();
    let (code, out, _) = env
        .run(&[
            "publish",
            "--contract",
            &contract.to_string_lossy(),
            "--base-url",
            &base,
            "--key",
            &failed,
        ])
        .await;
    assert_eq!(code, 11);
    assert!(
        out.contains(&format!(
            "oncepost retry {failed} && oncepost publish --key {failed}"
        )),
        "{out}"
    );

    // parked: exit 12.
    let (code, _, _) = env
        .run(&["park", &failed, "--reason", "r", "--by", "op"])
        .await;
    assert_eq!(code, 0);
    let (code, v, _) = env.publish(&["--key", &failed]).await;
    assert_eq!(
        (code, v["state"].as_str(), v["pressed"].as_bool()),
        (12, Some("parked"), Some(false)),
        "{v}"
    );

    // Not a key, an unknown key, or --key with a text of its own: bad input, exit 2.
    let (code, _, err) = env.publish(&["--key", "nope"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("\"nope\" is not a delivery key"), "{err}");
    let (code, _, err) = env.publish(&["--key", &"a".repeat(64)]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no intent with key"), "{err}");
    let (code, _, err) = env.publish(&["--key", &failed, "--text", "other"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("'--key <KEY>' cannot be used with '--text <TEXT>'"),
        "{err}"
    );
    let (code, _, err) = env.publish(&["--key", &failed, "--account", "alice"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("'--key <KEY>' cannot be used with '--account <ACCOUNT>'"),
        "{err}"
    );
    assert_eq!(env.arrivals(), 0, "something was sent");
    assert_eq!(env.copies(&text), 0);
}

/// A failed send re-opened by `retry` is published by `publish --key` (its retried intent, same key).
async fn a_retried_failed_send_is_published_by_key(b: Backend) {
    let env = Env::start(b).await;
    let (code, _, _) = env.run(&["switch", "on", "--by", "op"]).await;
    assert_eq!(code, 0);
    let text = unique("retried");
    let (code, v, _) = env.publish(&["--account", "alice", "--text", &text]).await;
    assert_eq!(code, 11);
    let key = v["key"].as_str().unwrap().to_string();
    let (code, _, _) = env.run(&["switch", "off", "--by", "op"]).await;
    assert_eq!(code, 0);
    let (code, _, err) = env.run(&["retry", &key, "--by", "op"]).await;
    assert_eq!(code, 0, "{err}");
    let (code, v, err) = env.publish(&["--key", &key]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(
        (v["key"].as_str(), v["state"].as_str()),
        (Some(key.as_str()), Some("published"))
    );
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1));
}

/// A person redelivers a PUBLISHED send on purpose: `publish --key` sends the second copy. The look-before-write
/// search is skipped for a redelivery (it would find the first copy and settle the redelivery on it, sending
/// nothing the person asked for).
async fn a_redelivery_of_a_published_send_sends_the_second_copy_asked_for(b: Backend) {
    let env = Env::start(b).await;
    let text = unique("once more");
    let (code, v, err) = env.publish(&["--account", "alice", "--text", &text]).await;
    assert_eq!(code, 0, "{v} {err}");
    let first = v["permalink"].as_str().unwrap().to_string();
    let old = v["key"].as_str().unwrap().to_string();
    let (code, r, err) = env
        .redeliver(&old, "rita", "the campaign needs it twice")
        .await;
    assert_eq!(code, 0, "{err}");
    let new = r["intent"]["key"].as_str().unwrap().to_string();
    assert_eq!(
        r["next"]["command"],
        format!("oncepost publish --key {new} --contract CONTRACT --base-url URL")
    );
    let (code, v, err) = env.publish(&["--key", &new]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], true, "{v}");
    assert_ne!(
        v["permalink"].as_str(),
        Some(first.as_str()),
        "settled on the first copy"
    );
    assert_eq!((env.arrivals(), env.copies(&text)), (2, 2));
}

macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Backend::Sqlite).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Backend::Postgres).await
                }
            )*
        }
    };
}

both!(
    park_redeliver_then_publish_key_sends_exactly_one_copy,
    concurrent_redeliveries_of_one_send_make_one_intent,
    publish_key_on_an_intent_that_is_not_pending_presses_nothing,
    a_retried_failed_send_is_published_by_key,
    a_redelivery_of_a_published_send_sends_the_second_copy_asked_for,
);
