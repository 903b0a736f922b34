//! One endpoint for drafts and posts, through the real binary and real Chromium against
//! `/hostile/one-endpoint`: a CMS editor that saves its draft and publishes with the same `POST /api/posts`,
//! told apart only by the body's `"status"`, saves the draft once more on the press before it publishes,
//! stays on the page and shows it has synced by a class (its only sign of success).
//!
//! With the create request matched by its body (`body_regex`) and the draft save declared by its own, the
//! draft saves go out (sent by oncepost), the publish is the one create request and the post is made once.
//! Matched by URL alone, the draft save on the press is taken for the create request: it is sent once, the
//! real publish that follows is stopped as a second create request, and no post is made. A probe sends
//! neither. Every count is the platform's.
use std::path::PathBuf;

use oncepost::fixture_platform::{DRAFT_SAVE, Fault, FaultMode};
use serde_json::Value;

use crate::kit::{self, unique};

/// The create request by its body, and the draft save on the same URL by its own.
const BY_BODY: &str = r#"create_request = { method = "POST", url = "{base_url}/api/posts", body_regex = '"status":\s*"publish"' }"#;
const BY_URL: &str = r#"create_request = { method = "POST", url = "{base_url}/api/posts" }"#;
const DRAFT_DECLARED: &str = r#"
[[non_publish_writes]]
method = "POST"
url = "{base_url}/api/posts"
body_regex = '"status":\s*"draft"'
why = "the editor autosaves the draft through the create endpoint"
"#;

/// The bundled contract on `/hostile/one-endpoint`, format 2, success only by the synced class.
fn contract(env: &kit::Env, by_body: bool) -> PathBuf {
    let mut c = std::fs::read_to_string(kit::repo_path("selectors/fixture.toml")).unwrap();
    let replace = |c: &mut String, from: &str, to: &str| {
        assert!(c.contains(from), "{from}");
        *c = c.replace(from, to);
    };
    replace(&mut c, "format = 1", "format = 2");
    replace(
        &mut c,
        "url = \"{base_url}/compose\"",
        "url = \"{base_url}/hostile/one-endpoint\"",
    );
    replace(&mut c, BY_URL, if by_body { BY_BODY } else { BY_URL });
    let success_at = c.find("[[success]]").unwrap();
    let readback_at = c.find("[readback]").unwrap();
    c.replace_range(
        success_at..readback_at,
        "[[success]]\nsynced = { css = \"#compose-status\", class = \"synced\" }\n\n",
    );
    if by_body {
        c.push_str(DRAFT_DECLARED);
    }
    env.write_file(
        &format!("one-endpoint-{}.toml", uuid::Uuid::new_v4().simple()),
        &c,
    )
}

async fn start() -> kit::Env {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    env
}

fn draft_saves(env: &kit::Env) -> u64 {
    env.stats().writes_to(DRAFT_SAVE)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn told_apart_by_body_the_draft_saves_go_out_and_the_post_is_made_once() {
    let env = start().await;
    let c = contract(&env, true);
    let text = unique("one endpoint, told apart by body");
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1);
    assert_eq!(env.arrivals(), 1, "one create request reached the platform");
    assert!(
        draft_saves(&env) >= 1,
        "the draft save on the press went out"
    );
    let key = v["key"].as_str().unwrap().to_string();
    let show = env.show(&key).await;
    let s = show.to_string();
    assert!(
        s.contains(r#"\"via\":\"synced\""#) || s.contains(r#""via":"synced""#),
        "success by the synced class: {show}"
    );
    let alarms: Vec<&Value> = show["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "side_effect_alarm")
        .collect();
    assert!(
        alarms.is_empty(),
        "a declared draft save is no alarm: {alarms:?}"
    );
    // A rerun presses nothing.
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(env.copies(&text), 1);
    assert_eq!(env.arrivals(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matched_by_url_alone_the_draft_save_is_taken_for_the_publish_and_no_post_is_made() {
    let env = start().await;
    let c = contract(&env, false);
    let text = unique("one endpoint, by url alone");
    let (_code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_ne!(v["state"], "published", "{v} {err}");
    assert_eq!(env.copies(&text), 0, "the real publish was stopped");
    assert_eq!(env.arrivals(), 0, "no publish reached the platform");
    assert_eq!(
        draft_saves(&env),
        1,
        "the draft save was the one request sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_sends_no_draft_save_and_reports_it_declared() {
    let env = start().await;
    let c = contract(&env, true);
    let base = env.base_url();
    let (code, r, err) = env.probe_fill(&c, 800).await;
    assert_eq!(code, 0, "{r} {err}");
    let declared = r["declared_writes"].as_array().cloned().unwrap_or_default();
    assert!(
        declared
            .iter()
            .any(|w| w["method"] == "POST" && w["url"] == format!("{base}/api/posts")),
        "{r}"
    );
    assert_eq!(r["writes"].as_array().map(Vec::len), Some(0), "{r}");
    assert_eq!(draft_saves(&env), 0, "a probe sends nothing");
    assert_eq!(env.arrivals(), 0);
}

/// A contract that gets the page wrong in a way `contract check` cannot see: its create rule misses the
/// page's real publish (`"status": "publish"` with a space the page never writes) and its draft rule is
/// wider than the drafts (`"status":`, any status). The press's publish is then let through as a declared
/// write: the post is made outside the one authorized write, and the create never comes. That is not proof
/// of "not sent": a declared write that carried the post left after the press, so the intent is never
/// `failed` (from which a `retry` would make the post again) and is made once. Red without the check in
/// `not_sent_proof`: failed, with the post on the platform.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declaration_that_lets_the_publish_through_never_ends_in_not_sent() {
    let env = start().await;
    let good = std::fs::read_to_string(contract(&env, true)).unwrap();
    let wrong = good
        .replace(r#"'"status":\s*"publish"'"#, r#"'"status": "publish"'"#)
        .replace(r#"'"status":\s*"draft"'"#, r#"'"status":'"#)
        .replace(
            "rejection_statuses = [422]",
            "rejection_statuses = [422]\ncreate_wait_ms = 1500",
        );
    assert!(
        wrong.contains(r#"'"status": "publish"'"#)
            && wrong.contains(r#"body_regex = '"status":'"#)
            && wrong.contains("create_wait_ms"),
        "{wrong}"
    );
    let c = env.write_file("one-endpoint-wrong.toml", &wrong);
    let text = unique("one endpoint, a declaration too wide");
    let (_code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(
        env.copies(&text),
        1,
        "the declared write made it: {v} {err}"
    );
    assert_eq!(env.arrivals(), 1, "{v}");
    assert_ne!(
        v["state"], "failed",
        "a made post is never `failed`: {v} {err}"
    );
    let history = env.show(v["key"].as_str().unwrap()).await.to_string();
    assert!(
        history.contains("carried the post and left after the press") || v["state"] == "published",
        "{history}"
    );
}

#[tokio::test]
async fn a_contract_whose_draft_rule_cannot_tell_a_publish_apart_is_refused() {
    let env = start().await;
    let good = std::fs::read_to_string(contract(&env, true)).unwrap();
    let no_body = good.replace("body_regex = '\"status\":\\s*\"draft\"'\n", "");
    let wider = no_body.replace(
        "url = \"{base_url}/api/posts\"\nwhy",
        "url_regex = '/api/'\nwhy",
    );
    for (name, c, says) in [
        (
            "same-url",
            &no_body,
            "this non-publish write is the create request",
        ),
        ("wider", &wider, "told apart by its headers or body"),
    ] {
        assert_ne!(c, &good, "{name}");
        let path = env.write_file(&format!("one-endpoint-{name}.toml"), c);
        let (code, out, err) = env
            .run(&["contract", "check", path.to_str().unwrap()])
            .await;
        assert_eq!(code, 2, "{name}: {out} {err}");
        assert!(format!("{out}{err}").contains(says), "{name}: {out} {err}");
    }
}
