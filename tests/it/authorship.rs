//! Authorship through the real binary and real Chromium: two accounts post the same text on Fixturebook, and
//! another account's post is never taken as this account's, by look-before-write, by read-back through search
//! or by reconcile. It is a lead for a person (parked, the candidate in the history); the account's own post is
//! still found among the others (published with its own id).
use std::ops::Deref;
use std::path::PathBuf;
use std::time::Duration;

use oncepost::fixture_platform::{Fault, FaultMode};
use serde_json::Value;

use crate::kit::{self, unique};

fn fixture_contract() -> String {
    std::fs::read_to_string(kit::fixture_contract()).unwrap()
}

/// The kit's platform and data dir, alice (handle alice) added, the fixture contract copied next to them.
struct Env {
    kit: kit::Env,
    contract: PathBuf,
}

impl Deref for Env {
    type Target = kit::Env;
    fn deref(&self) -> &kit::Env {
        &self.kit
    }
}

impl Env {
    async fn start() -> Env {
        let kit = kit::Env::start(Fault::default()).await;
        let contract = kit.write_file("fixture.toml", &fixture_contract());
        let env = Env { kit, contract };
        env.account("alice", Some("alice")).await;
        env
    }

    async fn account(&self, name: &str, handle: Option<&str>) {
        let mut extra = vec![];
        if let Some(h) = handle {
            extra.extend(["--handle", h]);
        }
        self.add_account(name, &extra).await;
    }

    /// A contract file next to the store: the fixture contract with `edit` applied.
    fn contract_with(&self, name: &str, edit: impl Fn(String) -> String) -> PathBuf {
        let text = edit(fixture_contract());
        assert_ne!(text, fixture_contract(), "the edit changed nothing");
        self.write_file(name, &text)
    }

    /// A contract whose success signal carries no id (the "Saved." status), so the read-back goes through
    /// the search, whose index lags behind the posts (`lag`: the search URL's lag parameters), with a
    /// read-back window of `propagation_ms`.
    fn search_readback_contract(&self, lag: &str, propagation_ms: u64) -> PathBuf {
        self.contract_with(&format!("search-{}.toml", lag.replace(['=', '&'], "-")), |t| {
            t.replace(
                "[[success]]\nurl_regex = '/p/(?P<id>[a-z0-9]+)$'\n\n[[success]]\nresponse_status = 201\njson_field = \"id\"\n",
                "[[success]]\nelement = { strategies = [{ css = \"#compose-status.ok\" }] }\n",
            )
            .replace(
                "search = \"{base_url}/search?q={text}\"",
                &format!("search = \"{{base_url}}/search?{lag}&q={{text}}\""),
            )
            .replace(
                "propagation_ms = 2000",
                &format!("propagation_ms = {propagation_ms}"),
            )
        })
    }

    async fn reconcile(&self, key: &str) -> (i32, Value, String) {
        self.kit.reconcile_key(&self.contract, key).await
    }
}

fn kinds(t: &Value) -> Vec<String> {
    t["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .collect()
}

/// Every candidate recorded in the intent's history (`lead` arrays anywhere in event details).
fn leads(t: &Value) -> Vec<Value> {
    fn walk(v: &Value, out: &mut Vec<Value>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if k == "lead"
                        && let Some(a) = x.as_array()
                    {
                        out.extend(a.iter().cloned());
                    } else {
                        walk(x, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for e in t["events"].as_array().unwrap() {
        walk(&e["details"], &mut out);
    }
    out
}

/// Bob posted the text first; Alice's look-before-write finds it. It is not hers: her intent is parked as a
/// lead with Bob's post attached, nothing is pressed, and nothing is settled on Bob's permalink.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn look_before_write_never_takes_another_authors_post() {
    let env = Env::start().await;
    let text = unique("Quarterly results are out today");
    let bobs = env.post_as("bob", &text).await;
    let (code, v, err) = env.publish("alice", &env.contract, &text, &[]).await;
    assert_eq!(code, 12, "{v} {err}");
    assert_eq!(v["state"], "parked");
    assert_eq!(v["pressed"], false);
    assert_eq!(v["permalink"], Value::Null, "settled on someone's post");
    assert_eq!(v["platform_id"], Value::Null);
    let t = env.show(v["key"].as_str().unwrap()).await;
    assert!(!kinds(&t).contains(&"found_before_write".to_string()));
    assert!(!kinds(&t).contains(&"authorized".to_string()));
    let lead = leads(&t);
    assert_eq!(lead.len(), 1, "{t}");
    assert_eq!(lead[0]["author"], "bob");
    assert_eq!(lead[0]["why"], "other_author");
    assert_eq!(lead[0]["id"], bobs.as_str());
    assert_eq!(env.platform.stats().create_arrivals, 1, "only Bob's post");
}

/// Alice's own earlier post is found before writing even though Bob's newer post with the same text comes
/// first in the search: published with her post's id, nothing pressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn look_before_write_finds_the_accounts_own_post_among_others() {
    let env = Env::start().await;
    let text = unique("Quarterly results are out today");
    let hers = env.post_as("alice", &text).await;
    let bobs = env.post_as("bob", &text).await;
    let (code, v, err) = env.publish("alice", &env.contract, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false);
    assert_eq!(v["platform_id"], hers.as_str(), "not Bob's {bobs}");
    assert!(
        v["permalink"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/p/{hers}"))
    );
    assert_eq!(env.platform.stats().create_arrivals, 2);
}

/// Without a recorded handle nothing can show a post is the account's own: its own post with the text is a
/// lead (no_handle), not a settlement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_handle_a_text_match_is_only_a_lead() {
    let env = Env::start().await;
    env.account("carol", None).await;
    let text = unique("no handle recorded");
    env.post_as("carol", &text).await;
    let (code, v, err) = env.publish("carol", &env.contract, &text, &[]).await;
    assert_eq!(code, 12, "{v} {err}");
    let lead = leads(&env.show(v["key"].as_str().unwrap()).await);
    assert_eq!(lead[0]["why"], "no_handle", "{lead:?}");
    assert_eq!(lead[0]["author"], "carol");
    assert_eq!(v["permalink"], Value::Null);
}

/// Read-back through search after Alice's create: her post is not listed within the propagation window (the
/// index lags), Bob's older post with the same text is. Never published on Bob's post: parked as a lead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_back_by_search_never_takes_another_authors_post() {
    let env = Env::start().await;
    let text = unique("same words, two people");
    let bobs = env.post_as("bob", &text).await;
    // The index was last built right after Bob's post: Alice's is never listed.
    let as_of = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let contract = env.search_readback_contract(&format!("as_of_ms={as_of}"), 2_000);
    env.platform
        .set_fault(Fault::new(FaultMode::NoSuccessSignal));
    let (code, v, err) = env
        .publish("alice", &contract, &text, &["--no-look-before-write"])
        .await;
    assert_eq!(code, 12, "{v} {err}");
    assert_eq!(v["pressed"], true);
    assert_eq!(v["permalink"], Value::Null, "settled on someone's post");
    let t = env.show(v["key"].as_str().unwrap()).await;
    assert!(!kinds(&t).contains(&"published".to_string()), "{t}");
    let reasons: Vec<&str> = t["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["reason"].as_str())
        .collect();
    assert!(reasons.contains(&"readback_lead"), "{reasons:?}");
    let lead = leads(&t);
    assert!(
        lead.iter()
            .any(|c| c["id"] == bobs.as_str() && c["author"] == "bob"),
        "{lead:?}"
    );
    // Alice's post did go out, once; the person deciding sees both.
    env.post_id_of("alice", &text);
    assert_eq!(env.platform.stats().create_arrivals, 2);
}

/// The same race where Alice's post shows up within the window: Bob's is listed first and is skipped, and
/// the intent is published with her post's id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_back_by_search_finds_the_accounts_own_post() {
    let env = Env::start().await;
    // Her post is listed 5 s after its create, well within the 15 s window; the first reads (within 5 s of
    // the create, even on a loaded machine) show only Bob's.
    let contract = env.search_readback_contract("lag_ms=5000", 15_000);
    let text = unique("same words, two people");
    let bobs = env.post_as("bob", &text).await;
    tokio::time::sleep(Duration::from_millis(5_100)).await;
    env.platform
        .set_fault(Fault::new(FaultMode::NoSuccessSignal));
    let (code, v, err) = env
        .publish("alice", &contract, &text, &["--no-look-before-write"])
        .await;
    assert_eq!(code, 0, "{v} {err}");
    let hers = env.post_id_of("alice", &text);
    assert_eq!(v["platform_id"], hers.as_str(), "not Bob's {bobs}");
    // The read-back saw Bob's post first and read again (a lead is not an answer while the window lasts).
    let t = env.show(v["key"].as_str().unwrap()).await;
    let reads = t["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "published")
        .map(|e| {
            e["details"]["readback"]["readback"]["reads"]
                .as_u64()
                .unwrap_or(0)
        })
        .unwrap_or(0);
    assert!(reads > 1, "{t}");
}

/// Reconcile: Alice's create never arrived (reset before read), Bob's post has the text. The lookup finds
/// only Bob's: a lead, parked with it attached, never published on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_never_takes_another_authors_post() {
    let env = Env::start().await;
    let text = unique("reconcile same text");
    let bobs = env.post_as("bob", &text).await;
    env.platform
        .set_fault(Fault::new(FaultMode::ResetBeforeRead));
    let (code, v, err) = env
        .publish("alice", &env.contract, &text, &["--no-look-before-write"])
        .await;
    assert_eq!(code, 10, "{v} {err}");
    let key = v["key"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let (code, r, err) = env.reconcile(&key).await;
    assert_eq!(code, 12, "{r} {err}");
    assert_eq!(r["state"], "parked");
    assert_eq!(r["outcome"]["result"], "not_found");
    let lead = r["outcome"]["evidence"]["lead"].as_array().unwrap();
    assert_eq!(lead[0]["id"], bobs.as_str());
    assert_eq!(lead[0]["author"], "bob");
    let t = env.show(&key).await;
    assert_eq!(t["intent"]["permalink"], Value::Null);
    assert_eq!(t["intent"]["platform_id"], Value::Null);
    assert_eq!(
        env.platform.stats().create_arrivals,
        2,
        "bob's and the reset"
    );
}

/// Reconcile: Alice's create was committed (then a 500), and Bob posted the same text afterwards, so his post
/// comes first in the search. The lookup publishes her intent with her post's id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_finds_the_accounts_own_post_not_anothers() {
    let env = Env::start().await;
    let text = unique("reconcile same text");
    env.platform.set_fault(Fault::new(FaultMode::CommitThen500));
    let (code, v, err) = env
        .publish("alice", &env.contract, &text, &["--no-look-before-write"])
        .await;
    assert_eq!(code, 10, "{v} {err}");
    let key = v["key"].as_str().unwrap().to_string();
    env.platform.set_fault(Fault::default());
    let bobs = env.post_as("bob", &text).await;
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let (code, r, err) = env.reconcile(&key).await;
    assert_eq!(code, 0, "{r} {err}");
    let hers = env.post_id_of("alice", &text);
    assert_eq!(
        r["outcome"]["platform_id"],
        hers.as_str(),
        "not Bob's {bobs}"
    );
    assert_eq!(r["outcome"]["evidence"]["authorship"]["author"], "alice");
}
