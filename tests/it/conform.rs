//! The conformance kit: `oncepost fixtures proxy` (a fault-injecting reverse proxy in front of any site,
//! here Fixturebook) seen by a plain HTTP client, and `oncepost conform` (probe, one publish per fault,
//! sweep + reconcile, rerun, through that proxy) against Fixturebook.
use std::time::{Duration, Instant};

use oncepost::fixture_platform::{FixtureConfig, FixturePlatform, RunningPlatform};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

use crate::kit::Oncepost;

/// Bound on any single wait here.
const WAIT: Duration = Duration::from_secs(30);

/// A fresh client per request: no connection is reused, so no client re-sends anything on its own.
fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .timeout(WAIT)
        .build()
        .unwrap()
}

/// `oncepost fixtures proxy --json ARGS` in front of `upstream`; returns the child and its base URL.
async fn proxy(upstream: &str, args: &[&str]) -> (tokio::process::Child, String) {
    let home = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_oncepost"))
        .args(["fixtures", "proxy", "--json", "--upstream", upstream])
        .args(args)
        .env("ONCEPOST_HOME", home.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn oncepost");
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("prints in time")
        .unwrap()
        .expect("one line");
    let info: Value = serde_json::from_str(&line).expect("one JSON line");
    (child, info["base_url"].as_str().unwrap().to_owned())
}

async fn token(base: &str) -> String {
    let page = http()
        .get(format!("{base}/compose"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    regex::Regex::new(r#"csrf-token" content="([0-9a-f]+)""#)
        .unwrap()
        .captures(&page)
        .expect("a csrf token")[1]
        .to_owned()
}

/// One create request through `base` (anonymous session), on a new connection.
async fn create(base: &str, token: &str, text: &str) -> reqwest::Result<reqwest::Response> {
    http()
        .post(format!("{base}/api/posts"))
        .header("content-type", "application/json")
        .header("x-csrf-token", token)
        .body(serde_json::json!({ "text": text }).to_string())
        .send()
        .await
}

async fn stats(base: &str) -> Value {
    http()
        .get(format!("{base}/__oncepost_proxy/stats"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap()
}

async fn set_fault(base: &str, mode: &str, delay_ms: u64) {
    let r = http()
        .post(format!("{base}/__oncepost_proxy/fault"))
        .body(serde_json::json!({ "mode": mode, "delay_ms": delay_ms }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
}

async fn platform() -> (tempfile::TempDir, RunningPlatform) {
    let dir = tempfile::tempdir().unwrap();
    let p = FixturePlatform::start(FixtureConfig::new(dir.path().join("platform")))
        .await
        .expect("platform starts");
    (dir, p)
}

fn texts(p: &RunningPlatform) -> Vec<String> {
    p.posts().into_iter().map(|p| p.text).collect()
}

#[tokio::test]
async fn conform_proxy_gives_each_fault_as_documented_and_counts_what_it_forwards() {
    let (_dir, fb) = platform().await;
    let (_child, base) = proxy(&fb.base_url(), &[]).await;
    let tok = token(&base).await;

    // normal: forwarded, the upstream's 201 relayed.
    let r = create(&base, &tok, "conform normal").await.unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(texts(&fb), ["conform normal"]);

    // commit-then-500: the upstream stored it, the client hears 500.
    set_fault(&base, "commit-then-500", 0).await;
    let r = create(&base, &tok, "conform 500").await.unwrap();
    assert_eq!(r.status(), 500);
    assert!(texts(&fb).contains(&"conform 500".to_owned()));

    // commit-then-drop: stored, and the connection closes without an answer.
    set_fault(&base, "commit-then-drop", 0).await;
    let e = create(&base, &tok, "conform drop").await;
    assert!(e.is_err(), "a dropped connection is an error: {e:?}");
    assert!(texts(&fb).contains(&"conform drop".to_owned()));

    // commit-then-delay: stored at once, the 201 only after the delay.
    set_fault(&base, "commit-then-delay", 1500).await;
    let t = Instant::now();
    let r = create(&base, &tok, "conform delay").await.unwrap();
    assert_eq!(r.status(), 201);
    assert!(
        t.elapsed() >= Duration::from_millis(1400),
        "{:?}",
        t.elapsed()
    );

    // reset-before-read: never forwarded, nothing stored.
    set_fault(&base, "reset-before-read", 0).await;
    let e = create(&base, &tok, "conform reset").await;
    assert!(e.is_err(), "a reset connection is an error: {e:?}");
    assert!(!texts(&fb).contains(&"conform reset".to_owned()));

    // The browser's own re-send, played by hand: the same write on a new connection moments after a drop
    // is refused (409), counted, and never reaches the site.
    set_fault(&base, "commit-then-drop", 0).await;
    assert!(create(&base, &tok, "conform resend").await.is_err());
    let r = create(&base, &tok, "conform resend").await.unwrap();
    assert_eq!(r.status(), 409);

    let s = stats(&base).await;
    assert_eq!(s["forwarded_writes"]["POST /api/posts"], 5, "{s}");
    assert_eq!(s["forwarded_writes_total"], 5, "{s}");
    assert_eq!(s["matched_faults"], 7, "{s}");
    assert_eq!(s["resets"], 1, "{s}");
    assert_eq!(s["refused_resends"], 1, "{s}");
    // Server-side truth: five creates arrived at the site, control calls never did.
    assert_eq!(fb.stats().create_arrivals, 5);
    assert_eq!(fb.stats().other_writes_total, 0);
    assert_eq!(fb.posts().len(), 5);
    assert_eq!(
        texts(&fb)
            .iter()
            .filter(|t| t.as_str() == "conform resend")
            .count(),
        1
    );
}

#[tokio::test]
async fn conform_proxy_lets_resends_through_when_asked_and_faults_only_matching_writes() {
    let (_dir, fb) = platform().await;
    let (_child, base) = proxy(
        &fb.base_url(),
        &[
            "--fault",
            "commit-then-drop",
            "--let-resends-through",
            "--match",
            "^POST .*/api/posts$",
        ],
    )
    .await;
    let tok = token(&base).await;
    assert!(create(&base, &tok, "twice").await.is_err());
    assert!(create(&base, &tok, "twice").await.is_err());
    // Let through: both reached the site (and both were dropped).
    assert_eq!(fb.posts().len(), 2);
    // A write the regex does not match is forwarded untouched.
    let r = http()
        .post(format!("{base}/api/drafts"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let s = stats(&base).await;
    assert_eq!(s["refused_resends"], 0, "{s}");
    assert_eq!(s["matched_faults"], 2, "{s}");
    assert_eq!(s["forwarded_writes"]["POST /api/drafts"], 1, "{s}");
    assert_eq!(s["forwarded_writes_total"], 3, "{s}");
}

#[tokio::test]
async fn conform_proxy_refuses_bad_options_with_exit_2() {
    let home = tempfile::tempdir().unwrap();
    let o = Oncepost::new(home.path());
    for args in [
        &["fixtures", "proxy", "--upstream", "ftp://x"][..],
        &[
            "fixtures",
            "proxy",
            "--upstream",
            "http://x",
            "--match",
            "(",
        ],
        &[
            "fixtures",
            "proxy",
            "--upstream",
            "http://x",
            "--fault",
            "reject-4xx",
        ],
    ] {
        let (code, out, err) = o.run(args).await;
        assert_eq!(code, 2, "{args:?}: {out} {err}");
    }
}

/// `oncepost conform` against Fixturebook with `contract`, as account `alice` (registered with its handle).
async fn conform_run(
    contract: &std::path::Path,
) -> (i32, Value, String, RunningPlatform, tempfile::TempDir) {
    conform_run_with(contract, &[]).await
}

/// [`conform_run`] with `extra` arguments (`--field K=V`).
async fn conform_run_with(
    contract: &std::path::Path,
    extra: &[&str],
) -> (i32, Value, String, RunningPlatform, tempfile::TempDir) {
    let (dir, fb) = platform().await;
    let o = Oncepost::new(dir.path().join("home"));
    let (code, out, err) = o
        .run(&[
            "accounts",
            "add",
            "alice",
            "--platform",
            "fixture",
            "--handle",
            "alice",
        ])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let base = fb.base_url();
    let login = format!("{base}/login?account=alice");
    let mut args = vec![
        "conform",
        "--contract",
        contract.to_str().unwrap(),
        "--base-url",
        &base,
        "--account",
        "alice",
        "--login-url",
        &login,
        "--delay-ms",
        "4000",
        "--request-timeout",
        "2s",
        "--json",
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = o.run(&args).await;
    let table: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    (code, table, format!("{out}\n{err}"), fb, dir)
}

fn cell<'a>(table: &'a Value, fault: &str) -> &'a Value {
    table["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .find(|c| c["fault"] == fault)
        .unwrap_or_else(|| panic!("no {fault} cell in {table}"))
}

#[tokio::test]
async fn conform_passes_every_cell_on_fixturebook() {
    let (code, table, log, fb, _dir) = conform_run(&crate::kit::fixture_contract()).await;
    assert_eq!(code, 0, "{log}");
    assert_eq!(table["pass"], true, "{log}");
    assert_eq!(table["cells"].as_array().unwrap().len(), 6, "{log}");
    // The faults really happened: each commit-* left the publish unsure, and the lookup settled it.
    for fault in ["commit-then-500", "commit-then-drop", "commit-then-delay"] {
        let c = cell(&table, fault);
        assert_eq!(c["after_publish"], "indeterminate", "{fault}: {log}");
        assert_eq!(c["after_reconcile"], "published", "{fault}: {log}");
        assert_eq!(c["copies"], 1, "{fault}: {log}");
    }
    assert_eq!(cell(&table, "normal")["after_reconcile"], "published");
    let reset = cell(&table, "reset-before-read");
    assert_eq!(reset["copies"], 0, "{log}");
    assert_eq!(reset["after_reconcile"], "parked", "{log}");
    assert_eq!(cell(&table, "probe")["writes_forwarded"][0], 0);
    // Server-side truth: one post per text that reached it, four in all, never two of one text.
    let mut texts = texts(&fb);
    assert_eq!(texts.len(), 4, "{texts:?}");
    texts.sort();
    texts.dedup();
    assert_eq!(texts.len(), 4, "{texts:?}");
    assert_eq!(fb.stats().create_arrivals, 4);
}

#[tokio::test]
async fn conform_fails_a_cell_and_exits_3_when_the_create_matcher_misses_the_real_request() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(crate::kit::fixture_contract()).unwrap();
    let broken = text.replace(
        r#"create_request = { method = "POST", url = "{base_url}/api/posts" }"#,
        r#"create_request = { method = "POST", url = "{base_url}/api/other" }"#,
    );
    assert_ne!(broken, text);
    let contract = dir.path().join("broken.toml");
    std::fs::write(&contract, broken).unwrap();
    let (code, table, log, fb, _dir) = conform_run(&contract).await;
    assert_eq!(code, 3, "{log}");
    assert_eq!(table["pass"], false, "{log}");
    let normal = cell(&table, "normal");
    assert_eq!(normal["pass"], false, "{log}");
    assert_eq!(fb.posts().len(), 0, "{log}");
    assert_eq!(fb.stats().create_arrivals, 0);
}

/// `oncepost conform` with the shipped contract of a hostile Fixturebook variant (`fixtures/contracts/`):
/// the probe forwards no write, the publish with no fault is made and read back once, every fault leaves
/// at most one copy and a resting state after sweep and reconcile, and the reruns send nothing. The
/// faults hit the create request alone: the page's declared writes pass as they would.
async fn conform_variant(name: &str, extra: &[&str]) {
    let contract = crate::kit::repo_path(&format!("fixtures/contracts/{name}.toml"));
    let (code, table, log, fb, _dir) = conform_run_with(&contract, extra).await;
    assert_eq!(code, 0, "{name}: {log}");
    assert_eq!(table["pass"], true, "{name}: {log}");
    assert_eq!(cell(&table, "probe")["writes_forwarded"][0], 0, "{name}");
    let normal = cell(&table, "normal");
    assert_eq!(normal["after_reconcile"], "published", "{name}: {log}");
    assert_eq!(normal["copies"], 1, "{name}: {log}");
    for fault in ["commit-then-500", "commit-then-drop", "commit-then-delay"] {
        let c = cell(&table, fault);
        assert_eq!(
            c["copies"], 1,
            "{name} {fault}: the create reached the site once: {log}"
        );
        assert_eq!(
            c["after_reconcile"], "published",
            "{name} {fault}: reconcile found it: {log}"
        );
    }
    assert_eq!(
        cell(&table, "reset-before-read")["copies"],
        0,
        "{name}: {log}"
    );
    // Server-side truth: never two posts of one text.
    let mut texts = texts(&fb);
    let n = texts.len();
    texts.sort();
    texts.dedup();
    assert_eq!(texts.len(), n, "{name}: {texts:?}");
    assert_eq!(
        n, 4,
        "{name}: normal and the three commit-* faults: {texts:?}"
    );
}

#[tokio::test]
async fn conform_passes_every_cell_on_a_two_step_publish() {
    conform_variant("two-step", &[]).await;
}

#[tokio::test]
async fn conform_passes_every_cell_on_a_title_keyed_put() {
    conform_variant("title-put", &["--field", "title=Conform item"]).await;
}

#[tokio::test]
async fn conform_passes_every_cell_on_a_prefilled_field() {
    conform_variant("prefilled", &[]).await;
}

#[tokio::test]
async fn conform_passes_every_cell_on_a_chat_box_that_sends_on_enter() {
    conform_variant("enter-to-send", &[]).await;
}

#[tokio::test]
async fn conform_passes_every_cell_on_a_post_written_in_steps() {
    conform_variant("wizard", &["--field", "title=Conform wizard"]).await;
}

#[tokio::test]
async fn conform_passes_every_cell_on_an_app_that_syncs_in_the_background() {
    conform_variant("draft-sync", &[]).await;
}

#[tokio::test]
async fn conform_passes_every_cell_on_one_endpoint_told_apart_by_body() {
    conform_variant("one-endpoint", &[]).await;
}

#[tokio::test]
async fn conform_passes_every_cell_on_a_control_below_the_fold() {
    conform_variant("below-fold", &[]).await;
}

#[tokio::test]
async fn conform_passes_every_cell_on_a_graphql_app() {
    conform_variant("graphql", &[]).await;
}

#[tokio::test]
async fn conform_passes_every_cell_on_a_block_editor() {
    conform_variant("blocks", &[]).await;
}

#[tokio::test]
async fn conform_passes_every_cell_on_a_page_with_a_declared_live_socket() {
    conform_variant("live-sockets", &[]).await;
}
