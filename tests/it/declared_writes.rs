//! Writes a contract declares non-publishing, through the real binary and real Chromium against
//! `/hostile/draft-sync`: a single-page app that saves its UI state on load and its draft on input, retries a
//! failed sync by itself, and publishes only once every sync went through (as real SPAs do).
//!
//! Declared, the syncs go out (sent by oncepost: Chromium has no route out), the platform counts them, they
//! are evidence and never alarms, and the post is made exactly once. Undeclared, they are stopped as before:
//! the page never sends its create request, and the intent settles `failed` on the door's proof within the
//! contract's create wait. A probe sends none of them, declared or not. Every count is the platform's.
use std::ops::Deref;
use std::path::PathBuf;

use oncepost::fixture_platform::{Fault, FaultMode};
use serde_json::Value;

use crate::kit::{self, unique};

const UI_STATE: &str = "PUT /api/ui-state";
const DRAFTS: &str = "PUT /api/drafts";

const DECLARED: &str = r#"
[[non_publish_writes]]
method = "PUT"
url = "{base_url}/api/ui-state"
why = "the editor saves which panel is open"

[[non_publish_writes]]
method = "PUT"
url_regex = '^http://[^/]+/api/'
# Every PUT under /api/ except the UI state (declared above): only the draft is left.
not_url_regex = '/api/ui-state$'
why = "draft autosave"
"#;

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
    async fn start() -> Env {
        let kit = kit::Env::start(Fault::new(FaultMode::Normal)).await;
        kit.add_account("alice", &["--handle", "alice"]).await;
        Env { kit }
    }

    /// The bundled contract on `/hostile/draft-sync`, with the syncs declared or not, and `extra` lines in
    /// `[publish]`.
    fn contract(&self, declare: bool, publish_extra: &str) -> PathBuf {
        let mut c = std::fs::read_to_string(kit::repo_path("selectors/fixture.toml")).unwrap();
        c = c.replace(
            "url = \"{base_url}/compose\"",
            "url = \"{base_url}/hostile/draft-sync\"",
        );
        c = c.replace(
            "rejection_statuses = [422]",
            &format!("rejection_statuses = [422]\n{publish_extra}"),
        );
        assert!(c.contains("/hostile/draft-sync"));
        if !publish_extra.is_empty() {
            // `create_wait_ms` is format 2.
            c = c.replace("format = 1", "format = 2");
        }
        if declare {
            c.push_str(DECLARED);
        }
        let name = format!("draft-sync-{}.toml", uuid::Uuid::new_v4().simple());
        self.write_file(&name, &c)
    }

    fn syncs_arrived(&self) -> (u64, u64) {
        let s = self.stats();
        (s.writes_to(UI_STATE), s.writes_to(DRAFTS))
    }
}

fn events_of(show: &Value, kind: &str) -> Vec<Value> {
    show["events"]
        .as_array()
        .map(|t| t.iter().filter(|e| e["kind"] == kind).cloned().collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_syncs_go_out_and_the_post_is_made_once() {
    let env = Env::start().await;
    let contract = env.contract(true, "");
    let text = unique("synced draft then published");
    let (code, v, err) = env.kit.publish("alice", &contract, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1);
    assert_eq!(env.arrivals(), 1);
    let (ui, drafts) = env.syncs_arrived();
    assert!(ui >= 1 && drafts >= 1, "ui-state {ui}, drafts {drafts}");
    let key = v["key"].as_str().unwrap().to_string();
    let show = env.show(&key).await;
    assert!(
        events_of(&show, "side_effect_alarm").is_empty(),
        "declared writes are no alarm: {show}"
    );
    let noted = show["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["kind"] == "evidence" && e.to_string().contains("non_publish_writes"));
    assert!(noted, "the writes let through are evidence: {show}");
    // A rerun presses nothing and sends no more of anything.
    let (code, v, err) = env.kit.publish("alice", &contract, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(env.copies(&text), 1);
    assert_eq!(env.arrivals(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undeclared_syncs_are_stopped_so_the_page_never_publishes_and_nothing_is_sent() {
    let env = Env::start().await;
    let contract = env.contract(false, "create_wait_ms = 1500");
    let text = unique("undeclared syncs");
    let (code, v, err) = env.kit.publish("alice", &contract, &text, &[]).await;
    assert_eq!(v["state"], "failed", "{code} {v} {err}");
    assert_eq!(env.copies(&text), 0);
    assert_eq!(env.arrivals(), 0);
    assert_eq!(env.syncs_arrived(), (0, 0), "no sync left");
    let key = v["key"].as_str().unwrap().to_string();
    let show = env.show(&key).await;
    let timeline = show.to_string();
    assert!(
        timeline.contains("within 1500 ms of pressing"),
        "the contract's create wait bounds the wait: {show}"
    );
    let alarms = events_of(&show, "side_effect_alarm");
    assert!(
        alarms
            .iter()
            .any(|a| a.to_string().contains("/api/ui-state")),
        "an undeclared write is an alarm: {show}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_sends_no_declared_write_and_reports_them_apart_from_alarms() {
    let env = Env::start().await;
    let base = env.base_url();
    for declare in [true, false] {
        let contract = env.contract(declare, "");
        let (code, r, err) = env.kit.probe_fill(&contract, 1500).await;
        let out = r.to_string();
        let declared = r["declared_writes"].as_array().cloned().unwrap_or_default();
        let writes = r["writes"].as_array().cloned().unwrap_or_default();
        let has = |l: &[Value], path: &str| {
            l.iter()
                .any(|w| w["method"] == "PUT" && w["url"] == format!("{base}{path}"))
        };
        if declare {
            assert_eq!(code, 0, "declared writes do not fail a probe: {out} {err}");
            // The page retries its refused UI-state sync (the head of its queue) and never gets to the
            // draft: each retry is one more blocked, declared write.
            assert!(has(&declared, "/api/ui-state"), "{r}");
            assert!(writes.is_empty(), "{r}");
        } else {
            assert_eq!(code, 3, "undeclared writes fail a probe: {out} {err}");
            assert!(has(&writes, "/api/ui-state"), "{r}");
            assert!(declared.is_empty(), "{r}");
        }
        assert!(
            declared.iter().chain(&writes).all(|w| w["blocked"] == true),
            "{r}"
        );
    }
    assert_eq!(env.syncs_arrived(), (0, 0), "a probe sends nothing");
    assert_eq!(env.arrivals(), 0);
}
