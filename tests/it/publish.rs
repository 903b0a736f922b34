//! Publish end to end through the real binary and real Chromium against the in-process Fixturebook
//! platform, with the number of create requests the SERVER received asserted in every case (the platform
//! counts a request the moment its head arrives, before any fault handling).
//!
//! Also, without a browser: the harness's sender never retries (a server that drops the connection after
//! reading the request receives exactly one), and a refused connection is "not sent".
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::time::Duration;

use oncepost::browser::{DispatchOutcome, OneShotSender, WireRequest};
use oncepost::fixture_platform::{Fault, FaultMode};
use serde_json::Value;
use tokio::io::AsyncReadExt;

use crate::kit::{self, unique};

/// The kit's platform and data dir with alice (handle alice) added; publishes through the bundled contract.
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
    async fn start(fault: Fault) -> Env {
        let kit = kit::Env::start(fault).await;
        kit.add_account("alice", &["--handle", "alice"]).await;
        Env {
            kit,
            contract: kit::fixture_contract(),
        }
    }

    /// `oncepost publish --json` of `text` as alice (logged in), with extra arguments.
    async fn publish_with(
        &self,
        contract: &Path,
        text: &str,
        extra: &[&str],
    ) -> (i32, Value, String) {
        self.kit.publish("alice", contract, text, extra).await
    }

    async fn publish(&self, text: &str, extra: &[&str]) -> (i32, Value, String) {
        let c = self.contract.clone();
        self.publish_with(&c, text, extra).await
    }
}

fn kinds(v: &Value) -> Vec<String> {
    kit::event_kinds(&v["timeline"])
}

/// A page with its own retry timer re-sends the create request after an error answer, with no click: the
/// harness fails it before it leaves (one arrival), binds a side-effect alarm to the intent, and parks it
/// (commit-then-500 would otherwise leave it indeterminate): a person looks before anything is pressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_retrying_the_create_request_by_itself_is_stopped_and_the_intent_parked() {
    let env = Env::start(Fault::new(FaultMode::CommitThen500)).await;
    let src = std::fs::read_to_string(&env.contract).unwrap();
    let retrying = src.replace(
        r#"url = "{base_url}/compose""#,
        r#"url = "{base_url}/compose?retry=1""#,
    );
    assert_ne!(retrying, src, "the fixture contract's compose url moved");
    let contract = env.home().join("retrying.toml");
    std::fs::write(&contract, retrying).unwrap();
    let text = unique("retry timer");
    let (code, v, err) = env.publish_with(&contract, &text, &[]).await;
    assert_eq!(code, 12, "{v} {err}");
    assert_eq!(v["state"], "parked");
    assert_eq!(env.arrivals(), 1, "the page's retry left");
    let alarms: Vec<&Value> = v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "side_effect_alarm")
        .collect();
    assert!(
        alarms.iter().any(|e| e["reason"]
            .as_str()
            .is_some_and(|r| r.contains("further create request"))),
        "{}",
        v["timeline"]
    );
    let parked = v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|e| e["kind"] == "parked")
        .expect("a parked event");
    assert!(
        parked["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("side_effect_alarm")),
        "{parked}"
    );
    // A rerun answers parked and presses nothing.
    let (code2, v2, _) = env.publish_with(&contract, &text, &[]).await;
    assert_eq!(code2, 12);
    assert_eq!(v2["pressed"], false);
    assert_eq!(env.arrivals(), 1);
}

/// normal: published with platform id and permalink, evidence of every capture point stored 0600 with
/// secrets redacted; a rerun answers the same outcome with zero new arrivals and nothing pressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn normal_publish_reads_back_stores_evidence_and_a_rerun_touches_nothing() {
    let env = Env::start(Fault::default()).await;
    let text = unique("hello");
    let (code, v, err) = env.publish(&text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published");
    assert_eq!(v["pressed"], true);
    assert_eq!(env.arrivals(), 1);
    assert_eq!(env.copies(&text), 1);
    let id = v["platform_id"].as_str().expect("platform id");
    assert!(
        v["permalink"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/p/{id}"))
    );
    assert!(v["attempt"].as_str().is_some());
    let k = kinds(&v);
    for want in [
        "created",
        "begun",
        "authorized",
        "request_sent",
        "published",
    ] {
        assert!(k.contains(&want.to_string()), "{want} missing from {k:?}");
    }
    // Progress went to stderr.
    assert!(err.contains("pressed; create request carried"), "{err}");
    let ev = v["evidence"].as_array().unwrap();
    let mut seen: Vec<&str> = ev.iter().map(|i| i["kind"].as_str().unwrap()).collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            "dom_excerpt",
            "readback",
            "screenshot_after_response",
            "screenshot_before_dispatch",
            "screenshot_readback",
            "write_log"
        ],
        "timeline: {}",
        v["timeline"]
    );
    use std::os::unix::fs::PermissionsExt;
    for i in ev {
        let p = env.home().join(i["path"].as_str().unwrap());
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(bytes.len() as u64, i["bytes"].as_u64().unwrap());
        let meta = std::fs::metadata(&p).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{}", p.display());
        if i["kind"] == "write_log" {
            let log = String::from_utf8(bytes).unwrap();
            assert!(log.contains("[redacted]"), "{log}");
            assert!(!log.contains("fb_session="), "session cookie leaked: {log}");
            assert!(log.contains("\"wire_request_hash\""), "{log}");
        }
    }
    // Rerun: same intent, same outcome, nothing pressed, nothing arrives.
    let (code2, v2, _) = env.publish(&text, &[]).await;
    assert_eq!(code2, 0);
    assert_eq!(v2["key"], v["key"]);
    assert_eq!(v2["pressed"], false);
    assert_eq!(v2["permalink"], v["permalink"]);
    assert_eq!(env.arrivals(), 1);
    assert_eq!(env.copies(&text), 1);
}

/// `below-fold`: the publish control starts 3000 px below the fields, far below the browser's window. The
/// compose flow scrolls it into view before its strict checks (a scroll presses nothing) and clicks it
/// there: published, exactly one copy; a rerun presses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_control_below_the_fold_is_scrolled_into_view_and_pressed_once() {
    let env = Env::start(Fault::default()).await;
    let contract = env.write_file(
        "below-fold.toml",
        &kit::hostile_contract_text("below-fold", None),
    );
    let text = unique("below the fold");
    let (code, v, err) = env.publish_with(&contract, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(v["pressed"], true);
    assert_eq!(env.arrivals(), 1);
    assert_eq!(env.copies(&text), 1);
    let (code2, v2, _) = env.publish_with(&contract, &text, &[]).await;
    assert_eq!(code2, 0);
    assert_eq!(v2["pressed"], false);
    assert_eq!(env.arrivals(), 1, "the rerun sent nothing");
    assert_eq!(env.copies(&text), 1);
}

/// Pages that open an `alert()` while they load (Fixturebook's post and search pages with `?alert=1`), read
/// on both sides of the press: the look before writing (the search) and the read-back (the post's page). A
/// dialog holds the page's load and every evaluation until it is answered; the read-back pages answer it as
/// the compose page does, so the post is looked for, made once and read back: published. Without an answer
/// the look before writing waited out its navigation bound and nothing was published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_that_alert_while_they_load_are_still_read() {
    let env = Env::start(Fault::default()).await;
    let text = std::fs::read_to_string(kit::fixture_contract())
        .unwrap()
        .replace(
            r#"permalink = "{base_url}/p/{id}""#,
            r#"permalink = "{base_url}/p/{id}?alert=1""#,
        )
        .replace(
            r#"search = "{base_url}/search?q={text}""#,
            r#"search = "{base_url}/search?alert=1&q={text}""#,
        );
    assert!(text.contains("?alert=1") && text.contains("alert=1&q="));
    let contract = env.write_file("alerts.toml", &text);
    let post = unique("read past an alert");
    let (code, v, err) = env.publish_with(&contract, &post, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.arrivals(), 1);
    assert_eq!(env.copies(&post), 1);
    let steps = v["steps"].to_string();
    assert!(steps.contains("looked before writing"), "{steps}");
}

/// `covered-iframe`: the compose form is in a same-origin iframe under an overlay of the top document. The
/// text field (the contract's focus step waits for it) fails its hit test in the top document, naming the
/// overlay, before anything is typed: nothing is pressed (a click would land on the overlay) and the intent
/// settles failed with nothing sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compose_form_in_a_covered_iframe_is_never_pressed() {
    let env = Env::start(Fault::default()).await;
    let contract = env.write_file(
        "covered-iframe.toml",
        &kit::hostile_contract_text("covered-iframe", Some("iframe#compose-frame")),
    );
    let text = unique("covered iframe");
    // The field is waited for (the 10 s step bound) before the flow gives up on it.
    let run = env.publish_with(&contract, &text, &[]).await;
    // The failure's report (in the intent's history) names the overlay.
    env.assert_failed_before_the_press(
        run,
        "not receives_events (covered by div#frame-cover.overlay-promo)",
    )
    .await;
    assert_eq!(env.copies(&text), 0);
}

/// `key-events`: Publish follows the keys (a `keyup` handler), not the `input` events, as forms of the jQuery
/// era do. oncepost types a field's last character as a key press, so the page enables Publish as it would for
/// a person: pressed once and published; a rerun presses nothing. Typed without a key (all of it by
/// `Input.insertText`), Publish stayed disabled and the send failed before its press.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_control_that_follows_key_presses_is_enabled_by_the_typing_and_pressed_once() {
    let env = Env::start(Fault::default()).await;
    let contract = env.write_file(
        "key-events.toml",
        &kit::hostile_contract_text("key-events", None),
    );
    let text = unique("typed with keys");
    for run in 1..=2 {
        let (code, v, err) = env.publish_with(&contract, &text, &[]).await;
        assert_eq!(code, 0, "run {run}: {v} {err}");
        assert_eq!(v["state"], "published", "run {run}: {v}");
        assert_eq!(v["pressed"], run == 1, "run {run}: {v}");
    }
    assert_eq!(env.arrivals(), 1);
    assert_eq!(env.copies(&text), 1);
}

/// `enter-to-send`: a chat box with no Publish to click; the text field sends on Enter (`?key=ctrl`: on
/// Control+Enter, and Enter makes a line break). With `publish.key` the press focuses the field (the fill
/// ends in the title) and presses the key once: published once and read back, a rerun presses nothing. A
/// contract naming the wrong key (Enter where Control+Enter sends) presses a line break: nothing is sent and
/// the send ends `failed`, no copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_box_that_sends_on_a_key_is_published_once_by_that_key() {
    let env = Env::start(Fault::default()).await;
    let base = std::fs::read_to_string(kit::repo_path("fixtures/contracts/enter-to-send.toml"))
        .expect("the enter-to-send contract");
    let variant = |query: &str, key: &str| {
        base.replace(
            "/hostile/enter-to-send\"",
            &format!("/hostile/enter-to-send{query}\""),
        )
        .replace(
            "\nkey = \"enter\"\n",
            &format!("\nkey = \"{key}\"\ncreate_wait_ms = 1500\n"),
        )
    };
    for (query, key) in [("", "enter"), ("?key=ctrl", "ctrl_enter")] {
        let contract = env.write_file(&format!("chat-{key}.toml"), &variant(query, key));
        let text = unique(&format!("sent with {key}"));
        for run in 1..=2 {
            let (code, v, err) = env
                .publish_with(&contract, &text, &["--field", "title=a title typed last"])
                .await;
            assert_eq!(code, 0, "{key} run {run}: {v} {err}");
            assert_eq!(v["state"], "published", "{key} run {run}: {v}");
            assert_eq!(v["pressed"], run == 1, "{key} run {run}: {v}");
        }
        assert_eq!(env.copies(&text), 1, "{key}");
    }
    assert_eq!(env.arrivals(), 2);
    let wrong = env.write_file("chat-wrong-key.toml", &variant("?key=ctrl", "enter"));
    let text = unique("a line break, not a send");
    let (_, v, err) = env.publish_with(&wrong, &text, &[]).await;
    assert_eq!(v["state"], "failed", "{v} {err}");
    assert_eq!(env.copies(&text), 0);
    assert_eq!(env.arrivals(), 2);
}

/// `enter-to-send`: a post in two lines, in a chat box that sends on Enter, a textarea and (`&editable=1`) a
/// `contenteditable` box. The line break goes in as typed text, which sends no key: the post is published
/// once with both lines, and only the press's Enter sent it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_break_in_a_chat_box_that_sends_on_enter_is_typed_not_sent() {
    let env = Env::start(Fault::default()).await;
    let base = std::fs::read_to_string(kit::repo_path("fixtures/contracts/enter-to-send.toml"))
        .expect("the enter-to-send contract");
    for (query, kind) in [("", "textarea"), ("?editable=1", "contenteditable")] {
        let contract = base
            .replace(
                "/hostile/enter-to-send\"",
                &format!("/hostile/enter-to-send{query}\""),
            )
            .replace(
                "name = \"text\"\nkind = \"textarea\"",
                &format!("name = \"text\"\nkind = \"{kind}\""),
            );
        let contract = env.write_file(&format!("chat-{kind}.toml"), &contract);
        let text = format!(
            "{}\nand its second line",
            unique(&format!("two lines in a {kind}"))
        );
        let (code, v, err) = env.publish_with(&contract, &text, &[]).await;
        assert_eq!(code, 0, "{kind}: {v} {err}");
        assert_eq!(v["state"], "published", "{kind}: {v}");
        assert_eq!(env.copies(&text), 1, "{kind}");
    }
    assert_eq!(env.arrivals(), 2);
}

/// `multipart-form`: a classic server-rendered form with no script (forum and wiki edit forms are such), its
/// body `multipart/form-data` because it has a file input (left empty), the CSRF token in a hidden field; the
/// press submits it, a navigation POST. The harness sends that paused request itself, its body as Chromium
/// encoded it (the boundary in its `Content-Type`), the platform answers 303 to the post's page, and the
/// post is read back: published once, a rerun presses nothing. The same form urlencoded too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_classic_multipart_form_is_posted_once_by_the_harness_and_read_back() {
    let env = Env::start(Fault::default()).await;
    for (query, what) in [("", "multipart"), ("?enctype=urlencoded", "urlencoded")] {
        let text = kit::hostile_contract_text("multipart-form", None)
            .replace(
                "/hostile/multipart-form\"",
                &format!("/hostile/multipart-form{query}\""),
            )
            .replace(
                r#"url = "{base_url}/api/posts""#,
                r#"url = "{base_url}/forum/posts""#,
            );
        assert!(text.contains("{base_url}/forum/posts"), "{text}");
        let contract = env.write_file(&format!("form-{what}.toml"), &text);
        let post = unique(&format!("a topic sent as a {what} form, with ünïcode"));
        for run in 1..=2 {
            let (code, v, err) = env.publish_with(&contract, &post, &[]).await;
            assert_eq!(code, 0, "{what} run {run}: {v} {err}");
            assert_eq!(v["state"], "published", "{what} run {run}: {v}");
            assert_eq!(v["pressed"], run == 1, "{what} run {run}: {v}");
            assert!(
                v["permalink"].as_str().is_some_and(|p| p.contains("/p/")),
                "{what}: {v}"
            );
        }
        assert_eq!(env.copies(&post), 1, "{what}");
    }
    assert_eq!(env.arrivals(), 2);
    assert_eq!(env.stats().other_writes_total, 0, "{:?}", env.stats());
}

/// One test per fault mode: (mode, extra args, exit code, state, expected create arrivals).
async fn fault_case(
    mode: FaultMode,
    delay_ms: u64,
    extra: &[&str],
    exit: i32,
    state: &str,
) -> Value {
    let env = Env::start(Fault::new(mode).with_delay_ms(delay_ms)).await;
    let text = unique(&format!("{mode:?}"));
    let (code, v, err) = env.publish(&text, extra).await;
    assert_eq!(code, exit, "{mode:?}: {v} {err}");
    assert_eq!(v["state"], state, "{mode:?}");
    assert_eq!(v["pressed"], true);
    assert_eq!(
        env.arrivals(),
        1,
        "{mode:?}: exactly one create request must arrive"
    );
    // A rerun never presses again, whatever the state.
    let (code2, v2, _) = env.publish(&text, extra).await;
    assert_eq!(code2, exit);
    assert_eq!(v2["pressed"], false);
    assert_eq!(env.arrivals(), 1, "{mode:?}: the rerun sent nothing");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_then_500_is_indeterminate_with_one_arrival() {
    fault_case(FaultMode::CommitThen500, 0, &[], 10, "indeterminate").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_then_drop_is_indeterminate_with_exactly_one_arrival_through_the_harness() {
    fault_case(FaultMode::CommitThenDrop, 0, &[], 10, "indeterminate").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_then_delay_past_the_timeout_is_indeterminate_with_one_arrival() {
    fault_case(
        FaultMode::CommitThenDelay,
        4000,
        &["--request-timeout", "1s"],
        10,
        "indeterminate",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_before_read_is_indeterminate_with_one_arrival() {
    // The request head left (the server counted it) before the reset: nobody can know more.
    fault_case(FaultMode::ResetBeforeRead, 0, &[], 10, "indeterminate").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_4xx_rejection_is_failed_with_one_arrival() {
    let v = fault_case(FaultMode::Reject4xx, 0, &[], 11, "failed").await;
    assert!(kinds(&v).contains(&"failed".to_string()));
}

/// A create answered 401 (the account's session ended between the compose page's load and the press):
/// not declared a rejection, it is doubt (indeterminate), and why says to log the account in again, as
/// every later send of the account would meet the same answer. Nothing made, one arrival.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_answered_401_says_to_log_the_account_in_again() {
    let v = fault_case(FaultMode::SessionExpired, 0, &[], 10, "indeterminate").await;
    let summary = v["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("HTTP 401")
            && summary.contains("log the account's browser profile in again"),
        "{v}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_success_signal_is_indeterminate_with_one_arrival() {
    fault_case(
        FaultMode::NoSuccessSignal,
        0,
        &["--success-timeout", "1s"],
        10,
        "indeterminate",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_back_with_different_text_parks_with_one_arrival() {
    fault_case(FaultMode::ReadbackMismatch, 0, &[], 12, "parked").await;
}

/// `transport = "browser"` (Chromium sends the create request itself, and re-sends it on a connection that
/// closes before the response: 2-3 arrivals for one click were measured) cannot work behind oncepost's door,
/// where Chromium has no route out: such a contract is refused before anything starts, and nothing arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contract_that_lets_the_browser_send_is_refused_and_nothing_arrives() {
    let env = Env::start(Fault::new(FaultMode::CommitThenDrop)).await;
    let browser_contract = env.home().join("fixture-browser.toml");
    let c = std::fs::read_to_string(&env.contract).unwrap();
    assert!(c.contains("transport = \"harness\""));
    std::fs::write(
        &browser_contract,
        c.replace("transport = \"harness\"", "transport = \"browser\""),
    )
    .unwrap();
    let text = unique("browser transport");
    let (code, v, err) = env
        .publish_with(&browser_contract, &text, &["--request-timeout", "5s"])
        .await;
    assert_eq!(code, 2, "{v} {err}");
    assert!(err.contains("\"browser\" is not supported"), "{err}");
    assert_eq!(env.arrivals(), 0);
}

/// Look before write: the exact text is already on the platform, so the intent settles published without
/// pressing anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn look_before_write_finds_the_post_and_presses_nothing() {
    let env = Env::start(Fault::default()).await;
    let text = unique("already there");
    let base = env.platform.base_url();
    // Post it directly as alice, the way an earlier lost run of hers would have (her session cookie, so the
    // post shows her as its author: only her own post settles her intent).
    let r = kit::platform::post_directly(&base, "alice", &text).await;
    assert_eq!(r.status().as_u16(), 201);
    assert_eq!(env.arrivals(), 1);
    let (code, v, err) = env.publish(&text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false);
    assert!(kinds(&v).contains(&"found_before_write".to_string()));
    assert!(!kinds(&v).contains(&"authorized".to_string()));
    assert_eq!(env.arrivals(), 1);
    assert_eq!(env.copies(&text), 1);
}

/// 10,000 characters of non-ASCII text (accents, CJK, emoji, line breaks) round-trip byte-exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_characters_of_non_ascii_text_round_trip() {
    let env = Env::start(Fault::default()).await;
    let unit = "é✓ 一度だけ 🚀 ünïcödé\nzweite Zeile ";
    let mut text = unique("long");
    while text.chars().count() < 10_000 {
        text.push_str(unit);
    }
    let text: String = text
        .chars()
        .take(10_000)
        .collect::<String>()
        .trim()
        .to_string();
    let (code, v, err) = env.publish(&text, &["--no-look-before-write"]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(env.arrivals(), 1);
    assert_eq!(env.copies(&text), 1, "the platform holds the exact text");
}

/// 16 identical publish processes at once: exactly one create arrives and exactly one process pressed.
/// Eight run without `--wait` (each answers 13, in progress elsewhere, or 0 if it came after the first
/// had settled); eight run with `--wait` and all answer 0 with the same permalink.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_identical_processes_make_one_create() {
    let env = Env::start(Fault::default()).await;
    let text = unique("sixteen");
    let runs = (0..16).map(|i| {
        let extra: &'static [&'static str] = if i % 2 == 0 { &["--wait"] } else { &[] };
        env.publish(&text, extra)
    });
    let results = futures::future::join_all(runs).await;
    let mut pressed = 0;
    let mut permalinks = std::collections::BTreeSet::new();
    for (i, (code, v, err)) in results.iter().enumerate() {
        if i % 2 == 0 {
            assert_eq!(*code, 0, "--wait: {v} {err}");
            permalinks.insert(v["permalink"].as_str().unwrap_or("").to_string());
        } else {
            assert!(*code == 0 || *code == 13, "exit {code}: {v} {err}");
            assert!(
                v["key"].is_string(),
                "--json prints one object even for 13: {v}"
            );
        }
        if v["pressed"] == true {
            pressed += 1;
        }
    }
    assert_eq!(pressed, 1, "exactly one process pressed publish");
    assert_eq!(permalinks.len(), 1, "{permalinks:?}");
    assert!(
        results.iter().any(|(c, _, _)| *c == 13),
        "some process was turned away"
    );
    assert_eq!(env.arrivals(), 1);
    assert_eq!(env.copies(&text), 1);
    let (code, v, _) = env.publish(&text, &[]).await;
    assert_eq!((code, v["pressed"].clone()), (0, Value::Bool(false)));
}

/// Bad input is exit 2 before anything happens: unknown account, unknown field, empty text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_exits_2_and_sends_nothing() {
    let env = Env::start(Fault::default()).await;
    let c = env.contract.to_string_lossy().into_owned();
    let base = env.platform.base_url();
    // (arguments, what the message must say: each refusal for its own reason, not any exit 2)
    for (args, says) in [
        (
            vec![
                "publish",
                "--contract",
                &c,
                "--account",
                "nobody",
                "--base-url",
                &base,
                "--text",
                "x",
            ],
            "unknown account \"nobody\"",
        ),
        (
            vec![
                "publish",
                "--contract",
                &c,
                "--account",
                "alice",
                "--base-url",
                &base,
                "--text",
                "x",
                "--field",
                "nope=1",
            ],
            "the contract has no field \"nope\"",
        ),
        (
            vec![
                "publish",
                "--contract",
                &c,
                "--account",
                "alice",
                "--base-url",
                &base,
                "--text",
                "  ",
            ],
            "the post text is empty",
        ),
        (
            vec![
                "publish",
                "--contract",
                "/nonexistent.toml",
                "--account",
                "alice",
                "--base-url",
                &base,
                "--text",
                "x",
            ],
            "cannot read contract /nonexistent.toml",
        ),
    ] {
        let (code, out, err) = env.run(&args).await;
        assert_eq!(code, 2, "{args:?}: {out} {err}");
        assert!(!err.trim().is_empty());
        assert!(err.contains(says), "{args:?}: want {says:?} in: {err}");
    }
    assert_eq!(env.arrivals(), 0);
}

// ---------- the sender, without a browser ----------

/// A server that reads one request fully (head + body) and closes without answering, counting every
/// connection and every request it read.
async fn drop_after_read_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/api/posts", l.local_addr().unwrap());
    let seen = std::sync::Arc::new(AtomicU64::new(0));
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = l.accept().await {
            let s = s.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while let Ok(n) = sock.read(&mut chunk).await {
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| {
                                l.strip_prefix("content-length:")
                                    .map(|v| v.trim().parse().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + len {
                            s.fetch_add(1, Ordering::SeqCst);
                            break; // commit, then drop without a byte
                        }
                    }
                }
            });
        }
    });
    (url, seen)
}

fn wire(url: &str) -> WireRequest {
    WireRequest {
        method: "POST".into(),
        url: url.into(),
        headers: vec![("content-type".into(), "application/json".into())],
        body: br#"{"text":"once"}"#.to_vec(),
    }
}

#[tokio::test]
async fn the_sender_never_retries_a_request_whose_connection_dropped() {
    let (url, seen) = drop_after_read_server().await;
    let sender = OneShotSender::new(Duration::from_secs(5), Duration::from_secs(2)).unwrap();
    for round in 1..=3u64 {
        let out = sender.send_once(&wire(&url)).await;
        assert!(matches!(out, DispatchOutcome::Unknown { .. }), "{out:?}");
        // Give a (wrong) retry every chance to arrive before counting.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            seen.load(std::sync::atomic::Ordering::SeqCst),
            round,
            "one arrival per send"
        );
    }
}

#[tokio::test]
async fn a_refused_connection_is_not_sent() {
    // Bind then drop: the port is (very likely) closed now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let sender = OneShotSender::new(Duration::from_secs(5), Duration::from_secs(2)).unwrap();
    let out = sender
        .send_once(&wire(&format!("http://127.0.0.1:{port}/api/posts")))
        .await;
    assert!(matches!(out, DispatchOutcome::NotSent { .. }), "{out:?}");
}

// ---------- the press, through the library ----------

/// A page that sends a SECOND create request on the same click (a double submit): the press carries the
/// first one through the harness, the write guard fails the second before it leaves and records it.
/// The server sees exactly one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_create_request_for_one_authorization_is_failed_before_it_leaves() {
    use oncepost::browser::{ComposePage, TransportOptions};
    use oncepost::contract::Contract;
    use oncepost::identity::{ActionKind, CanonicalRequest};
    use oncepost::store::{Begun, NewAccount, NewIntent, Policy, Store, StoreLocation, Timestamp};

    let env = Env::start(Fault::default()).await;
    let base = env.platform.base_url();
    let plan = Contract::load(&env.contract)
        .unwrap()
        .publish_plan(&base)
        .unwrap();
    let store = Store::open(
        &StoreLocation::default_in(&env.home().join("lib")),
        Policy::default(),
    )
    .await
    .unwrap();
    let now = Timestamp::now();
    store
        .add_account(
            &NewAccount {
                name: "bob".into(),
                platform: "fixture".into(),
                min_interval_ms: 0,
                dup_window_ms: 0,
            },
            "test",
            now,
        )
        .await
        .unwrap();
    let text = unique("double submit");
    let intent = store
        .create_intent(
            &NewIntent {
                account: "bob".into(),
                action: ActionKind::Post,
                target: String::new(),
                request: CanonicalRequest::new(Some(&text), &Default::default()),
                source: None,
            },
            now,
        )
        .await
        .unwrap()
        .intent;
    let Begun::Claimed(claim) = store
        .begin(&intent.key, "test:1:x", "h", now)
        .await
        .unwrap()
    else {
        panic!("not claimed")
    };
    let session = kit::chromium::session(&env.home().join("profile")).await;
    let page = ComposePage::open(&session, &plan.probe, None, Duration::from_secs(20))
        .await
        .unwrap();
    page.prepare(
        &[("field:text".into(), text.clone())],
        Duration::from_secs(10),
    )
    .await
    .unwrap();
    let at = page
        .check_publish(&plan.probe.publish, oncepost::browser::probe::SETTLE)
        .await
        .unwrap()
        .expect("actionable");
    // The page's own click handler sends one create request; add a second one on the same click.
    let pages = session.browser().pages().await.unwrap();
    let mut injected = false;
    for p in pages {
        if p.url()
            .await
            .unwrap_or_default()
            .is_some_and(|u| u.ends_with("/compose"))
        {
            p.evaluate(
                "document.getElementById('publish').addEventListener('click', () => fetch('/api/posts', \
                 {method: 'POST', headers: {'content-type': 'application/json', 'x-csrf-token': \
                 document.querySelector('meta[name=csrf-token]').content}, body: JSON.stringify({text: 'second', title: ''})}).catch(() => {}))",
            )
            .await
            .unwrap();
            injected = true;
        }
    }
    assert!(injected);
    let auth = store
        .authorize_dispatch(&claim, "h", Timestamp::now())
        .await
        .unwrap();
    let hook = |_fence, _wire| async { Ok::<(), String>(()) };
    let pressed = plan
        .probe
        .publish
        .press(
            &page,
            &at,
            auth,
            &plan.create,
            &TransportOptions::default(),
            hook,
        )
        .await;
    assert!(
        matches!(
            pressed.outcome,
            DispatchOutcome::Response { status: 201, .. }
        ),
        "{:?}",
        pressed.outcome
    );
    // The second request is answered by the guard in its own task: wait (bounded) for its record.
    let mut extras = Vec::new();
    for _ in 0..50 {
        extras = session
            .write_guard()
            .extra_creates()
            .expect("the guard's log");
        if !extras.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        extras.len(),
        1,
        "the second create request was recorded: {extras:?}"
    );
    assert!(extras[0].blocked);
    assert_eq!(
        env.arrivals(),
        1,
        "only the harness's one create request arrived"
    );
    page.close().await;
    session.close().await;
}

/// The platform's answer to the create request is a line of its own on the review page: an error answer
/// (status and body) and the answer of a post that went fine both show, redacted, in the static export.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_review_page_shows_the_platforms_answer_to_the_create_request() {
    let env = Env::start(Fault::new(FaultMode::CommitThen500)).await;
    let text = unique("answer shown");
    let (code, v, err) = env.publish(&text, &["--no-look-before-write"]).await;
    assert_eq!(code, 10, "{v} {err}");
    let key = v["key"].as_str().unwrap().to_string();
    let out = env.home().join("report");
    let (code, stdout, err) = env
        .run(&["review", "--export", out.to_str().unwrap()])
        .await;
    assert_eq!(code, 0, "{stdout} {err}");
    let page = std::fs::read_to_string(out.join(format!("intent-{key}.html"))).unwrap();
    let line = page
        .lines()
        .find(|l| l.contains("class=\"meta answer\""))
        .unwrap_or_else(|| panic!("no answer line in {page}"));
    assert!(
        line.contains("HTTP 500") && line.contains("internal server error"),
        "{line}"
    );
}

/// A text field with a length limit (`/compose?maxlength=40`) cuts a 60-character text without a word; the
/// page would publish the 40 characters it kept. Each filled field is read back before the press: it shows
/// other text than was typed, so nothing is pressed and the intent settles failed with nothing sent. Without
/// that check the cut text went out (one arrival) and could only be found different after it was live.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_that_cuts_the_typed_text_is_never_pressed() {
    let env = Env::start(Fault::default()).await;
    let contract = env.write_file("maxlength.toml", &kit::compose_asking("maxlength=40"));
    let text = format!("{} and then some more", unique("cut short"));
    assert!(text.chars().count() > 40, "{text}");
    let run = env.publish_with(&contract, &text, &[]).await;
    env.assert_failed_before_the_press(run, "the field shows other text than was typed (40 of")
        .await;
    // A text within the limit is published as ever.
    let short = format!("short enough {}", uuid_tail());
    let (code, v, err) = env.publish_with(&contract, &short, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(env.arrivals(), 1);
    assert_eq!(env.copies(&short), 1);
}

/// An editor that rewrites what it is given (`/compose?rewrite=1`: `**bold**` rendered, quotes made curly,
/// `--` a dash) publishes the same words in other characters. The field check before the press follows the
/// contract's read-back rule: under `exact-nfc` the field shows other text and nothing is pressed (the
/// read-back could never find the post); under `visible-words`, the rule of platforms that render markup, the
/// words are the same, the post goes out once and the read-back settles it `published`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_rewrites_markup_publishes_when_the_contract_compares_words() {
    let env = Env::start(Fault::default()).await;
    let src = kit::compose_asking("rewrite=1");
    let words = kit::comparing_visible_words(&src);
    let (exact, words) = (
        env.write_file("rewrite-exact.toml", &src),
        env.write_file("rewrite-words.toml", &words),
    );
    let tail = uuid_tail();
    let text = format!("say \"hi\" -- **now** {tail}");
    let run = env.publish_with(&exact, &text, &[]).await;
    env.assert_failed_before_the_press(run, "the field shows other text than was typed")
        .await;

    let text = format!("say \"hello\" -- **now** {tail}");
    let (code, v, err) = env.publish_with(&words, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.arrivals(), 1);
    let shown = format!("say \u{201c}hello\u{201d} \u{2014} now {tail}");
    assert_eq!(env.copies(&shown), 1, "the editor's text went out once");
}

/// A platform that renders a post's lines as elements with nothing between them (`?paragraphs=1` on the
/// post and search pages: a `<p>` per paragraph, a `<br>` per line, as single-page apps render posts): the
/// text element's `textContent` glues the lines together ("first linesecond line..."). The read-back also
/// reads the text as laid out, so a post of three lines in two paragraphs is settled `published` by its
/// permalink, and the look before writing finds the account's own post of that text by the search. Before,
/// the post went out and was left in doubt (exit 10), and the look saw nothing and pressed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_whose_lines_the_platform_renders_as_elements_is_read_back() {
    let env = Env::start(Fault::default()).await;
    let contract = env.write_file("paragraphs.toml", &kit::read_pages_asking("paragraphs=1"));
    let tail = uuid_tail();
    let text = format!("first line {tail}\nsecond line\n\nnew paragraph");
    // Alice's own post of a text in lines, made before (another run), is found by the search.
    let earlier = format!("an earlier post {tail}\nin two lines");
    read_back_then_found_before_writing(&env, &contract, &text, &earlier).await;
}

/// A platform whose post page is not there yet right after the create (`/p/ID?lag_ms=600`: the not-found
/// page until the post is 600 ms old, as a replica behind its primary) and a contract whose item is the
/// page's whole main area (as a wiki's is): the first read finds an item that shows no post text at all.
/// That is no post shown, read again within the window, and the post is settled `published` once its page
/// is there. Before, the text-less item was taken for the post with other words: parked as a mismatch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_page_that_is_not_there_yet_is_read_again_not_taken_for_other_words() {
    let env = Env::start(Fault::default()).await;
    let c = std::fs::read_to_string(kit::fixture_contract())
        .unwrap()
        .replace(
            r#"permalink = "{base_url}/p/{id}""#,
            r#"permalink = "{base_url}/p/{id}?lag_ms=600""#,
        )
        .replace(
            r#"item = { strategies = [{ css = "article.post" }], strict = false }"#,
            r#"item = { strategies = [{ css = "main" }], strict = false }"#,
        );
    assert_eq!(c.matches("lag_ms=600").count(), 1);
    assert!(c.contains(r#"css = "main""#));
    let contract = env.write_file("lagging-page.toml", &c);
    let text = unique("not there yet");
    let (code, v, err) = env.publish_with(&contract, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1);
}

/// A platform whose post and search pages are single-page apps (`?spa=1`): each shows its posts only after
/// its own data request comes back, 300 ms after the page's load event. A read-back waits for the page's
/// data reads (which the door answers) to end and lists again: the post is settled `published` by its
/// permalink, and the look before writing finds the account's own post by the search. Before, the read-back
/// listed an empty page: the post went out and was left in doubt, and the look saw nothing and pressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_a_single_page_app_renders_after_loading_are_read_back() {
    let env = Env::start(Fault::default()).await;
    let contract = env.write_file("spa.toml", &kit::read_pages_asking("spa=1"));
    let text = unique("rendered by the app");
    let earlier = unique("an earlier post the app renders");
    read_back_then_found_before_writing(&env, &contract, &text, &earlier).await;
}

/// A platform whose post and search pages show their posts from a live feed's server-sent event stream
/// (`?spa=sse`: `GET /api/stream` sends one event 300 ms after it opens and then stays open, as a live feed
/// does). A fulfilled read gets its body whole, so the door hands an event stream over in pieces (what came
/// once an event is in and the stream went quiet) and counts it as the page's data: the post is read back
/// `published`, and the look before writing finds the account's own post. Before, the stream's read ended
/// only at the door's 30 s bound, failed: the pages never showed a post (the look saw nothing and pressed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_a_live_feed_sends_as_server_sent_events_are_read_back() {
    let env = Env::start(Fault::default()).await;
    let contract = env.write_file("sse.toml", &kit::read_pages_asking("spa=sse"));
    let text = unique("sent on the live feed");
    let earlier = unique("an earlier post the live feed shows");
    read_back_then_found_before_writing(&env, &contract, &text, &earlier).await;
}

/// Publish `text` with `contract` (pressed once, read back `published`), then publish `earlier`, alice's
/// own post made on the platform before (as by a lost run): the look before writing finds it, nothing is
/// pressed.
async fn read_back_then_found_before_writing(
    env: &Env,
    contract: &Path,
    text: &str,
    earlier: &str,
) {
    let (code, v, err) = env.publish_with(contract, text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(v["pressed"], true, "{v}");
    assert_eq!((env.arrivals(), env.copies(text)), (1, 1));
    let id = kit::platform::post_as(&env.base_url(), "alice", earlier).await;
    let (code, v, err) = env.publish_with(contract, earlier, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(v["platform_id"], id.as_str(), "{v}");
    assert_eq!((env.arrivals(), env.copies(earlier)), (2, 1));
}

/// Eight characters that make a text unique within a test run.
fn uuid_tail() -> String {
    unique("").trim().chars().take(8).collect()
}
