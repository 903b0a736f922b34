//! Posts that rest on a source (issue 14): source versions by normalized body, the chain that follows the
//! STORED head, the freshness fence before any browser, and the publish-time source gate in the
//! authorization; on both backends, in the store and through the binary.
use std::collections::BTreeMap;
use std::path::PathBuf;

use oncepost::fixture_platform::Fault;
use oncepost::identity::{ActionKind, CanonicalRequest, ClaimId};
use oncepost::source::SourceBody;
use oncepost::store::*;
use serde_json::Value;

use crate::kit::{self, Backend, Env, TestDb, test_db, unique};

const T0: i64 = 1_800_000_000_000;
const CONTRACT: &str = "contract-v1";

fn at(ms: i64) -> Timestamp {
    Timestamp(T0 + ms)
}

/// An article page whose chrome differs by `chrome` (a token, a render time, a "N minutes ago").
fn page(paragraphs: &[&str], chrome: u32) -> String {
    let body: String = paragraphs.iter().map(|p| format!("<p>{p}</p>")).collect();
    format!(
        "<!doctype html><html><head><meta name=csrf content=\"tok{chrome:08x}a1b2c3d4e5f6a7b8c9\">\
         <script>var n={chrome};</script></head><body><nav>Home · {chrome} unread</nav><article>\
         <h1>Release notes</h1><p class=meta>Updated {chrome} minutes ago, rendered 2026-12-0{}T1{}:0{}:1{}Z</p>\
         {body}<input type=hidden name=csrf value=\"{chrome:032x}\"></article><footer>© {chrome}</footer></body></html>",
        chrome % 9 + 1,
        chrome % 10,
        chrome % 10,
        chrome % 10
    )
}

fn body(id: &str, paragraphs: &[&str], chrome: u32) -> SourceBody {
    SourceBody::from_raw(id, page(paragraphs, chrome).as_bytes(), None, "test").expect("a body")
}

async fn db(b: Backend) -> TestDb {
    let db = test_db(
        b,
        Policy {
            claim_lease_ms: 60_000,
            dispatch_lease_ms: 60_000,
            ..Policy::default()
        },
    )
    .await;
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

/// The intent for `text` resting on `claim` about the version of `b`.
async fn resting(s: &Store, b: &SourceBody, text: &str, now: Timestamp) -> Created {
    let version = b.version();
    s.create_intent(
        &NewIntent {
            account: "alice".into(),
            action: ActionKind::Post,
            target: String::new(),
            request: CanonicalRequest::new(Some(text), &BTreeMap::new()),
            source: Some(IntentClaim {
                claim: ClaimId::of(&version, text),
                version,
                content: text.into(),
            }),
        },
        now,
    )
    .await
    .expect("create")
}

/// A page fetched again with other chrome is the same version (one row, two captures, two raw bodies); a
/// changed paragraph is a new version that supersedes the STORED head; a version that was never stored (a
/// failed capture) does not jam the chain; an old body captured late never moves the head back; and the
/// database refuses a hand edit that would.
async fn the_chain_follows_the_stored_head(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let id = "https://news.example/release-1";
    let v1 = body(id, &["Version 1.0 is out.", "It fixes 3 bugs."], 1);
    let c = s.capture_source(&v1, at(0)).await.unwrap();
    assert_eq!(
        (c.outcome, c.head.clone()),
        (CaptureOutcome::First, v1.version())
    );
    let again = body(id, &["Version 1.0 is out.", "It fixes 3 bugs."], 7);
    assert_ne!(again.raw_hash, v1.raw_hash, "the chrome differs");
    let c = s.capture_source(&again, at(5_000)).await.unwrap();
    assert_eq!(
        (c.outcome, &c.version),
        (CaptureOutcome::SameAsHead, &v1.version())
    );
    // v2 was fetched but never stored (its capture failed); v3 supersedes what the store holds: v1.
    let v3 = body(id, &["Version 1.0 is out.", "It fixes 4 bugs."], 3);
    let c = s.capture_source(&v3, at(10_000)).await.unwrap();
    assert_eq!(
        (c.outcome, &c.head, c.superseded.as_ref()),
        (CaptureOutcome::NewHead, &v3.version(), Some(&v1.version()))
    );
    // The old body again (a late fetch, a revert): recorded, the head stays.
    let late = s
        .capture_source(
            &body(id, &["Version 1.0 is out.", "It fixes 3 bugs."], 9),
            at(11_000),
        )
        .await
        .unwrap();
    assert_eq!(
        (late.outcome, &late.head),
        (CaptureOutcome::Superseded, &v3.version())
    );
    let chain = s
        .source_chain("HTTPS://news.example/release-1#top")
        .await
        .unwrap()
        .expect("found canonically");
    assert_eq!(chain.versions.len(), 2);
    let first = &chain.versions[0];
    assert_eq!(
        (
            &first.version,
            first.captures,
            first.raw_bodies,
            first.superseded_by.as_ref(),
            first.is_head
        ),
        (&v1.version(), 3, 3, Some(&v3.version()), false)
    );
    assert!(chain.versions[1].is_head);
    // A hand edit that moves the head back is refused by the database.
    let r = s
        .execute_raw_for_tests(&format!(
            "UPDATE sources SET head_version = '{}' WHERE stable_id = '{id}'",
            v1.version()
        ))
        .await;
    assert!(r.is_err(), "the head moved back by hand: {r:?}");
    let r = s.execute_raw_for_tests("DELETE FROM source_captures").await;
    assert!(r.is_err(), "captures are append-only: {r:?}");
}

/// The same work retried later (another fetch, other chrome) is the same claim and the same intent; the same
/// text about another source, or about another version, is another intent.
async fn a_retry_is_the_same_identity_and_another_source_is_not(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let text = "Release 1.0 fixes three bugs";
    let a1 = body("article-1", &["Release 1.0.", "Three bugs fixed."], 1);
    s.capture_source(&a1, at(0)).await.unwrap();
    let first = resting(s, &a1, text, at(0)).await;
    let a1_later = body("article-1", &["Release 1.0.", "Three bugs fixed."], 2);
    s.capture_source(&a1_later, at(60_000)).await.unwrap();
    let retry = resting(s, &a1_later, text, at(60_000)).await;
    assert_eq!(
        (&retry.intent.key, retry.created),
        (&first.intent.key, false)
    );
    let other = body("article-2", &["Release 1.0.", "Three bugs fixed."], 1);
    s.capture_source(&other, at(61_000)).await.unwrap();
    let about_other = resting(s, &other, text, at(61_000)).await;
    assert!(about_other.created && about_other.intent.key != first.intent.key);
    let no_source = s
        .create_intent(
            &NewIntent {
                account: "alice".into(),
                action: ActionKind::Post,
                target: String::new(),
                request: CanonicalRequest::new(Some(text), &BTreeMap::new()),
                source: None,
            },
            at(62_000),
        )
        .await
        .unwrap();
    assert!(no_source.created && no_source.intent.key != first.intent.key);
    assert_eq!(no_source.intent.source_ref, None);
    let src = s
        .intent_source(&first.intent.key)
        .await
        .unwrap()
        .expect("rests on a source");
    assert_eq!(
        (src.version, src.claim_content.as_str()),
        (a1.version(), text)
    );
}

/// Superseded between begin and authorization: the gate refuses (nothing authorized), says both versions, and
/// the fence then parks the intent; an intent on the new head authorizes. A superseded intent that nobody
/// claimed is parked by the fence alone.
async fn the_gate_refuses_a_superseded_source(b: Backend) {
    let db = db(b).await;
    let s = &db.store;
    let v1 = body("article-9", &["The meeting is on Monday."], 1);
    s.capture_source(&v1, at(0)).await.unwrap();
    let k = resting(s, &v1, "Meeting Monday", at(0)).await.intent.key;
    let idle = resting(s, &v1, "See you Monday", at(0)).await.intent.key;
    let claim = match s.begin(&k, "w1", CONTRACT, at(1_000)).await.unwrap() {
        Begun::Claimed(c) => c,
        other => panic!("{other:?}"),
    };
    let v2 = body("article-9", &["The meeting is on Tuesday."], 2);
    s.capture_source(&v2, at(2_000)).await.unwrap();
    match s.authorize_dispatch(&claim, CONTRACT, at(3_000)).await {
        Err(StoreError::Refused(AuthorizeRefusal::SourceSuperseded { version, head, .. })) => {
            assert_eq!(
                (version, head),
                (v1.version().to_string(), v2.version().to_string())
            );
        }
        other => panic!("expected the source gate, got {other:?}"),
    }
    assert_eq!(
        s.intent(&k).await.unwrap().state,
        Status::Pending,
        "nothing authorized"
    );
    match s.source_fence(&k, "w1", at(4_000)).await.unwrap() {
        Freshness::Superseded {
            parked: true,
            source,
        } => assert_eq!(source.head, Some(v2.version())),
        other => panic!("{other:?}"),
    }
    let tl = s.timeline(&k).await.unwrap();
    assert_eq!(tl.intent.state, Status::Parked);
    let park = tl.events.last().unwrap();
    assert_eq!(park.reason.as_deref(), Some("source_superseded"));
    assert_eq!(park.details["head"].as_str(), Some(v2.version().as_str()));
    assert!(!tl.events.iter().any(|e| e.kind == EventKind::Authorized));
    assert!(matches!(
        s.source_fence(&idle, "w2", at(5_000)).await.unwrap(),
        Freshness::Superseded { parked: true, .. }
    ));
    // A redelivery of a superseded post would only be parked again: refused, with what to do instead.
    let r = s.redeliver(&k, "pat", "try again", at(6_000)).await;
    assert!(
        matches!(&r, Err(StoreError::Invalid(m)) if m.contains("superseded")),
        "{r:?}"
    );
    // The same text about the head is another claim: it goes.
    let fresh = resting(s, &v2, "Meeting Monday", at(7_000))
        .await
        .intent
        .key;
    assert_ne!(fresh, k);
    let claim = match s.begin(&fresh, "w1", CONTRACT, at(7_000)).await.unwrap() {
        Begun::Claimed(c) => c,
        other => panic!("{other:?}"),
    };
    assert!(matches!(
        s.source_fence(&fresh, "w1", at(7_100)).await.unwrap(),
        Freshness::Fresh { .. }
    ));
    s.authorize_dispatch(&claim, CONTRACT, at(7_200))
        .await
        .expect("the head's claim is authorized");
}

/// Two captures of one source at once, each with a new body: one supersedes the other, never both the same
/// head (the row lock and the one-successor index), so the chain stays a line.
async fn concurrent_captures_keep_one_chain(b: Backend) {
    let db = db(b).await;
    let s = std::sync::Arc::new(db.store.clone());
    s.capture_source(&body("race", &["start"], 0), at(0))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..6u32 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let text = format!("body number {i}");
            s.capture_source(&body("race", &[text.as_str()], i), at(1_000 + i as i64))
                .await
        }));
    }
    for t in tasks {
        t.await.unwrap().expect("every capture lands");
    }
    let chain = s.source_chain("race").await.unwrap().unwrap();
    assert_eq!(chain.versions.len(), 7);
    let heads = chain
        .versions
        .iter()
        .filter(|v| v.superseded_by.is_none())
        .count();
    let roots = chain
        .versions
        .iter()
        .filter(|v| v.supersedes.is_none())
        .count();
    assert_eq!((heads, roots), (1, 1), "one line: {:?}", chain.versions);
    assert!(
        chain
            .versions
            .iter()
            .find(|v| v.is_head)
            .unwrap()
            .superseded_by
            .is_none()
    );
}

mod store_level {
    use super::*;
    on_both_backends!(
        the_chain_follows_the_stored_head,
        a_retry_is_the_same_identity_and_another_source_is_not,
        the_gate_refuses_a_superseded_source,
        concurrent_captures_keep_one_chain,
    );
}

// ---------------------------------------------------------------------------------------------------------
// Through the binary

/// A script that counts its runs in `<dir>/launches` and then is Chromium: `ONCEPOST_CHROMIUM` for a run
/// that must launch nothing (or exactly so many).
fn counting_chromium(dir: &std::path::Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let real = oncepost::browser::find_chromium().expect("Chromium for the tests");
    let count = dir.join("launches");
    let script = dir.join("counting-chromium");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho launch >> '{}'\nexec '{}' \"$@\"\n",
            count.display(),
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, count)
}

/// One `worker --passes 1` with `chromium` as its Chromium; it must exit 0. Its stdout.
async fn worker_pass(env: &Env, chromium: &std::path::Path) -> String {
    let mut cmd = env.command(&["worker", "--interval", "1s", "--passes", "1"]);
    cmd.env("ONCEPOST_CHROMIUM", chromium);
    let out = cmd.output().await.unwrap();
    let (code, stdout, stderr) = kit::cli::output_of(&out);
    assert_eq!(code, 0, "{stdout} {stderr}");
    stdout
}

fn launches(count: &std::path::Path) -> usize {
    std::fs::read_to_string(count).map_or(0, |s| s.lines().count())
}

/// A Fixturebook env with alice registered and logged in, and the article `a1` published on it.
async fn env(b: Backend) -> Env {
    let env = Env::start_on(Fault::default(), b).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let (code, v, err) = env
        .publish(
            "alice",
            &kit::fixture_contract(),
            &unique("alice logs in"),
            &[],
        )
        .await;
    assert_eq!(code, 0, "{v} {err}");
    env.platform.set_article(
        "a1",
        "Release 1.0",
        &["Version 1.0 is out.", "It fixes three bugs."],
    );
    env
}

fn article_url(env: &Env) -> String {
    format!("{}/articles/a1", env.base_url())
}

async fn show_source(env: &Env, id: &str) -> Value {
    let (code, v, err) = env
        .oncepost
        .run_json(&["sources", "show", "--json", id])
        .await;
    assert_eq!(code, 0, "{v} {err}");
    v
}

fn event_kinds(shown: &Value) -> Vec<String> {
    shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str().map(str::to_string))
        .collect()
}

/// The article fetched again (its chrome is new on every fetch: nonce, CSRF token, render time, "updated N
/// seconds ago", a random sidebar) is one version: a retry of the same post with a later fetch is the same
/// intent and publishes nothing more. The source chain shows one version, two captures, two raw bodies.
async fn a_refetched_source_is_the_same_identity(b: Backend) {
    let env = env(b).await;
    let text = unique("release 1.0 is out");
    let url = article_url(&env);
    let (code, first, err) = env
        .publish(
            "alice",
            &kit::fixture_contract(),
            &text,
            &["--source-url", &url],
        )
        .await;
    assert_eq!(code, 0, "{first} {err}");
    assert_eq!(first["capture"]["outcome"], "first", "{first}");
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let (code, again, err) = env
        .publish(
            "alice",
            &kit::fixture_contract(),
            &text,
            &["--source-url", &url],
        )
        .await;
    assert_eq!(code, 0, "{again} {err}");
    assert_eq!(
        (again["key"].clone(), again["pressed"].clone()),
        (first["key"].clone(), Value::Bool(false))
    );
    assert_eq!(again["capture"]["outcome"], "same_as_head", "{again}");
    assert_eq!(env.copies(&text), 1);
    let chain = show_source(&env, &url).await;
    let versions = chain["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "{chain}");
    assert_eq!(
        (
            versions[0]["captures"].as_i64(),
            versions[0]["raw_bodies"].as_i64()
        ),
        (Some(2), Some(2))
    );
    assert_eq!(versions[0]["intents"][0]["key"], first["key"]);
}

/// Submitted against the article, then the article changes (captured with `sources capture`): the worker
/// skips the post before any browser starts (no Chromium launched, counted by a wrapper), parks it with both
/// versions, and sends nothing; the same text submitted against the new version goes out once.
async fn a_superseded_source_is_skipped_before_any_browser(b: Backend) {
    let env = env(b).await;
    let url = article_url(&env);
    let text = unique("three bugs fixed");
    let contract = kit::fixture_contract();
    let base = env.base_url();
    let submit = |extra: Vec<String>| {
        let mut args: Vec<String> = [
            "submit",
            "--json",
            "--contract",
            contract.to_str().unwrap(),
            "--account",
            "alice",
            "--base-url",
            &base,
            "--text",
            &text,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra);
        args
    };
    let args = submit(vec!["--source-url".into(), url.clone()]);
    let (code, old, err) = env
        .oncepost
        .run_json(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .await;
    assert_eq!(
        (code, old["queued"].as_bool()),
        (0, Some(true)),
        "{old} {err}"
    );
    env.platform.set_article(
        "a1",
        "Release 1.0",
        &["Version 1.0 is out.", "It fixes four bugs."],
    );
    let (code, cap, err) = env
        .oncepost
        .run_json(&["sources", "capture", "--json", "--source-url", &url])
        .await;
    assert_eq!(
        (code, cap["outcome"].as_str()),
        (0, Some("new_head")),
        "{cap} {err}"
    );
    let before = env.arrivals();
    let (wrapper, count) = counting_chromium(env.dir.path());
    let stdout = worker_pass(&env, &wrapper).await;
    assert_eq!(
        launches(&count),
        0,
        "no Chromium for a superseded source: {stdout}"
    );
    assert_eq!(env.arrivals(), before);
    let key = old["key"].as_str().unwrap();
    let shown = env.show(key).await;
    assert_eq!(shown["intent"]["state"], "parked", "{shown}");
    let park = shown["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(park["reason"], "source_superseded", "{park}");
    assert_eq!(park["details"]["head"], cap["version"], "{park}");
    assert_eq!(
        park["details"]["version"], old["source"]["version"],
        "{park}"
    );
    assert_eq!(
        (&shown["source"]["version"], &shown["source"]["head"]),
        (&old["source"]["version"], &cap["version"]),
        "intents show says what it rests on: {shown}"
    );
    // Against the new version: another claim, another intent; the worker publishes it (and the wrapper
    // counts its Chromium, so the count above is not a wrapper that never runs).
    let args = submit(vec!["--source-url".into(), url.clone()]);
    let (code, new, err) = env
        .oncepost
        .run_json(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .await;
    assert_eq!(
        (code, new["queued"].as_bool()),
        (0, Some(true)),
        "{new} {err}"
    );
    assert_ne!(new["key"], old["key"]);
    let stdout = worker_pass(&env, &wrapper).await;
    assert!(launches(&count) >= 1, "{stdout}");
    assert_eq!(
        env.show(new["key"].as_str().unwrap()).await["intent"]["state"],
        "published"
    );
    assert_eq!(env.copies(&text), 1);
    let (code, list, _) = env.oncepost.run_json(&["sources", "list", "--json"]).await;
    assert_eq!(code, 0);
    assert_eq!(
        (list[0]["versions"].as_i64(), list[0]["intents"].as_i64()),
        (Some(2), Some(2)),
        "{list}"
    );
}

/// Superseded while the compose page is filled (after the fence, before the authorization): the
/// authorization's source gate refuses, the intent is parked with both versions, and Fixturebook counts no
/// create request. The pause point holds the publish at that exact moment.
async fn a_source_superseded_before_authorization_is_parked_with_nothing_sent(b: Backend) {
    let env = env(b).await;
    let text = unique("meeting on monday");
    let v1 = env.write_file("v1.html", &page(&["The meeting is on Monday."], 1));
    let v2 = env.write_file("v2.html", &page(&["The meeting is on Tuesday."], 2));
    let before = env.arrivals();
    let mut args = env.publish_args("alice", &kit::fixture_contract(), &text);
    args.extend(
        [
            "--source-id",
            "meeting-notes",
            "--source-file",
            v1.to_str().unwrap(),
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (child, go) = env.spawn_paused_at(&args, "after_compose").await;
    let (code, cap, err) = env
        .oncepost
        .run_json(&[
            "sources",
            "capture",
            "--json",
            "--source-id",
            "meeting-notes",
            "--source-file",
            v2.to_str().unwrap(),
        ])
        .await;
    assert_eq!(
        (code, cap["outcome"].as_str()),
        (0, Some("new_head")),
        "{cap} {err}"
    );
    std::fs::write(&go, b"").unwrap();
    let out = child.wait_with_output().await.unwrap();
    let (code, stdout, stderr) = kit::cli::output_of(&out);
    assert_eq!(code, 12, "parked: {stdout} {stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert!(v["summary"].as_str().unwrap().contains("moved on"), "{v}");
    assert_eq!(
        (v["pressed"].as_bool(), v["source"]["head"].clone()),
        (Some(false), cap["version"].clone())
    );
    assert_eq!(env.arrivals(), before, "nothing sent");
    assert_eq!(env.copies(&text), 0);
    let shown = env.show(v["key"].as_str().unwrap()).await;
    let kinds = event_kinds(&shown);
    assert!(
        kinds.contains(&"begun".to_string()) && !kinds.contains(&"authorized".to_string()),
        "{kinds:?}"
    );
    let park = shown["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (park["kind"].as_str(), park["reason"].as_str()),
        (Some("parked"), Some("source_superseded"))
    );
}

/// A capture that fails (the URL answers 404) stores nothing; the next good capture supersedes what the store
/// holds, and a post against it publishes: a predecessor that was never stored does not jam the chain.
async fn a_failed_capture_does_not_jam_the_chain(b: Backend) {
    let env = env(b).await;
    let url = article_url(&env);
    let (code, v1, err) = env
        .oncepost
        .run_json(&["sources", "capture", "--json", "--source-url", &url])
        .await;
    assert_eq!(
        (code, v1["outcome"].as_str()),
        (0, Some("first")),
        "{v1} {err}"
    );
    let missing = format!("{}/articles/not-yet", env.base_url());
    let (code, out, err) = env
        .run(&[
            "sources",
            "capture",
            "--source-id",
            &url,
            "--source-url",
            &missing,
        ])
        .await;
    assert_eq!(code, 2, "{out} {err}");
    assert!(err.contains("404"), "{err}");
    assert_eq!(
        show_source(&env, &url).await["versions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    env.platform.set_article(
        "a1",
        "Release 1.0",
        &["Version 1.0 is out.", "It fixes five bugs."],
    );
    let text = unique("five bugs");
    let (code, v, err) = env
        .publish(
            "alice",
            &kit::fixture_contract(),
            &text,
            &["--source-url", &url],
        )
        .await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["capture"]["outcome"], "new_head");
    assert_eq!(v["capture"]["superseded"], v1["version"]);
    assert_eq!(env.copies(&text), 1);
}

on_both_backends!(
    a_refetched_source_is_the_same_identity,
    a_superseded_source_is_skipped_before_any_browser,
    a_source_superseded_before_authorization_is_parked_with_nothing_sent,
    a_failed_capture_does_not_jam_the_chain,
);

/// Bad source input: a clear error, exit 2, nothing created or captured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_source_input_is_refused_and_creates_nothing() {
    let env = Env::start(Fault::default()).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let text = unique("bad source");
    let empty = env.write_file(
        "empty.html",
        "<html><body><script>x()</script><nav>menu</nav></body></html>",
    );
    let binary = env.dir.path().join("binary.bin");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x80]).unwrap();
    let big = env.dir.path().join("big.txt");
    std::fs::write(&big, vec![b'a'; 4 * 1024 * 1024 + 1]).unwrap();
    let good = env.write_file("good.txt", "A paragraph.");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--source-id", "x"], "body"),
        (vec!["--claim", "it is so"], "source"),
        (
            vec!["--source-id", "x", "--source-file", empty.to_str().unwrap()],
            "nothing visible",
        ),
        (
            vec![
                "--source-id",
                "x",
                "--source-file",
                binary.to_str().unwrap(),
            ],
            "UTF-8",
        ),
        (
            vec!["--source-id", "x", "--source-file", big.to_str().unwrap()],
            "4 MiB",
        ),
        (
            vec!["--source-id", "  ", "--source-file", good.to_str().unwrap()],
            "source id",
        ),
        (vec!["--source-url", "ftp://example.org/a"], "http"),
        (
            vec![
                "--source-id",
                "x",
                "--source-file",
                good.to_str().unwrap(),
                "--claim",
                " ",
            ],
            "claim",
        ),
    ];
    for (extra, says) in cases {
        let (code, v, err) = env
            .publish("alice", &kit::fixture_contract(), &text, &extra)
            .await;
        assert_eq!(code, 2, "{extra:?}: {v} {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
    }
    let (code, out, _) = env.run(&["intents", "list", "--json"]).await;
    assert_eq!(code, 0);
    assert!(!out.contains(&text), "nothing created: {out}");
    let (code, out, _) = env.run(&["sources", "list", "--json"]).await;
    assert_eq!((code, out.trim()), (0, "[]"), "nothing captured");
    let (code, _, err) = env.run(&["sources", "show", "nothing-here"]).await;
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = env
        .run(&["publish", "--key", &"a".repeat(64), "--source-id", "x"])
        .await;
    assert_eq!(code, 2, "{err}");
}
