//! Probes against real Chromium: verdicts flip when the page changes, every hostile write is blocked
//! before it leaves (proven server-side: wiremock `expect(0)` on every write route) while the probe
//! reports it, a dead browser ends the probe with a clear error, and a missing Chromium says how to install.
//!
//! Pages follow the agreed Fixturebook compose DOM. One browser is shared per test function (a browser's
//! handler task belongs to one runtime), so the suite stays fast.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use oncepost::browser::{
    BrowserSession, ProbeOptions, ProbePlan, ProbeReport, ProbeVerdict, probe,
};
use oncepost::contract::Contract;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const BIN: &str = env!("CARGO_BIN_EXE_oncepost");

fn contract_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("selectors/fixture.toml")
}

/// The agreed compose DOM, with extra markup/script for a variant.
fn compose(extra_style: &str, extra_body: &str) -> String {
    format!(
        r#"<!doctype html><html><head><meta name="csrf-token" content="tok"><title>Compose</title>
<style>body{{font:16px sans-serif;margin:20px}} {extra_style}</style></head><body>
<h1>Compose</h1>
<input id="post-title" name="title" aria-label="Title"><br>
<textarea id="post-text" name="text" aria-label="Post text"></textarea>
<button id="publish" type="button" disabled>Publish</button>
<div id="compose-status" role="status"></div>
<span class="post-author">alice</span>
<script>
const t = document.getElementById('post-text'), b = document.getElementById('publish');
if (t && b) t.addEventListener('input', () => {{ b.disabled = !t.value; }});
</script>
{extra_body}
</body></html>"#
    )
}

fn html(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.into_bytes(), "text/html; charset=utf-8")
}

/// Every route a page may read, and a zero-expectation on every write method.
async fn platform() -> MockServer {
    let s = MockServer::start().await;
    let pages: Vec<(&str, String)> = vec![
        ("/compose", compose("", "")),
        // Verdict variants.
        ("/v/never-enabled", compose("", "<script>t.replaceWith(t.cloneNode());</script>")),
        ("/v/hidden", compose("#post-text{display:none}", "")),
        ("/v/covered", compose("#cover{position:fixed;inset:0;background:rgba(255,255,255,.01)}", "<div id=cover></div>")),
        ("/v/moving", compose("#publish{position:relative}", "<script>let k=0;(function m(){b.style.left=(k++%50)+'px';requestAnimationFrame(m)})();</script>")),
        ("/v/duplicate", compose("", "<button id=\"publish\" type=\"button\">Publish</button>")),
        ("/v/missing", compose("", "<script>b.remove();</script>")),
        ("/v/role-only", compose("", "<script>b.removeAttribute('id');</script>")),
        ("/v/slow", compose("", "").replace("<h1>Compose</h1>", "<h1>Compose</h1><script>document.addEventListener('DOMContentLoaded',()=>{const f=[...document.body.children].filter(e=>e.id);f.forEach(e=>e.remove());setTimeout(()=>f.forEach(e=>document.body.append(e)),60000);});</script>")),
        // Hostile variants: every write goes to a POST route that must never be reached.
        ("/hostile/write-on-load", compose("", "<script>fetch('/api/drafts',{method:'POST',body:'load'}).catch(()=>{});</script>")),
        ("/hostile/write-on-focus", compose("", "<script>t.addEventListener('focus',()=>fetch('/api/sink/write-on-focus',{method:'POST',body:'f'}).catch(()=>{}));</script>")),
        ("/hostile/autosave", compose("", "<script>t.addEventListener('input',()=>fetch('/api/drafts',{method:'PUT',body:t.value}).catch(()=>{}));</script>")),
        ("/hostile/beacon", compose("", "<script>navigator.sendBeacon('/api/sink/beacon','b');</script>")),
        ("/hostile/form-submit-timer", compose("", "<form id=f method=post action=/api/sink/form-submit-timer><input name=x value=1></form><script>setTimeout(()=>document.getElementById('f').submit(),300);</script>")),
        ("/hostile/service-worker", compose("", "<script>navigator.serviceWorker.register('/hostile/sw.js').catch(e=>console.log(e));</script>")),
        ("/hostile/iframe", compose("", "<iframe src=\"/hostile/inner\" width=400 height=200></iframe>")),
        ("/hostile/inner", "<script>fetch('/api/sink/iframe',{method:'POST',body:'i'}).catch(()=>{});</script><p>inner</p>".to_string()),
        ("/hostile/worker", compose("", "<script>new Worker('/hostile/worker.js');</script>")),
        // The popup carries the opener's query (`?try=N`) into every request, so a request is attributed to
        // the probe that opened its popup, never to a late popup of an earlier one.
        ("/hostile/popup", compose("", "<script>window.open('/hostile/popped'+location.search);</script>")),
        // Its write goes first; only once that write settled (failed by the guard) does it read
        // `/hostile/popped-ran`, so a read the server sees proves the write was attempted and answered. (With
        // the read first, a popup torn down between the two under load made a run where the script ran but
        // never wrote: measured once in a loaded full run.)
        ("/hostile/popped", "<script>fetch('/api/sink/popup'+location.search,{method:'DELETE'}).catch(()=>{}).finally(()=>fetch('/hostile/popped-ran'+location.search).catch(()=>{}));</script>".to_string()),
        ("/hostile/dialogs", compose("", "<script>alert('hello'); confirm('post it?');</script>")),
    ];
    for (p, body) in pages {
        Mock::given(method("GET"))
            .and(path(p))
            .respond_with(html(body))
            .mount(&s)
            .await;
    }
    let js = |src: &str| {
        ResponseTemplate::new(200).set_body_raw(src.as_bytes().to_vec(), "text/javascript")
    };
    Mock::given(method("GET")).and(path("/hostile/sw.js"))
        .respond_with(js("self.addEventListener('install',e=>{e.waitUntil(fetch('/api/sink/service-worker',{method:'POST',body:'sw'}).catch(()=>{}))});"))
        .mount(&s).await;
    Mock::given(method("GET"))
        .and(path("/hostile/worker.js"))
        .respond_with(js(
            "fetch('/api/sink/worker',{method:'POST',body:'w'}).catch(()=>{});",
        ))
        .mount(&s)
        .await;
    for m in ["POST", "PUT", "PATCH", "DELETE"] {
        Mock::given(method(m))
            .respond_with(ResponseTemplate::new(201))
            .expect(0)
            .named(format!("every {m}"))
            .mount(&s)
            .await;
    }
    s
}

fn plan_for(base: &str, page: &str) -> ProbePlan {
    let c = Contract::load(&contract_path()).expect("fixture contract loads");
    let mut plan = c.probe_plan(base).expect("plan");
    plan.url = format!("{base}{page}");
    plan
}

async fn launch(dir: &Path) -> BrowserSession {
    crate::kit::chromium::session(&dir.join("profile")).await
}

async fn run(
    session: &BrowserSession,
    base: &str,
    page: &str,
    fill: bool,
    observe_ms: u64,
) -> ProbeReport {
    let opts = ProbeOptions {
        fill: fill.then(|| "héllo ✓".to_string()),
        observe: Duration::from_millis(observe_ms),
        screenshot: false,
        ..ProbeOptions::default()
    };
    probe::run(session, &plan_for(base, page), &opts)
        .await
        .expect("probe runs")
        .0
}

fn check<'a>(r: &'a ProbeReport, name: &str) -> &'a oncepost::browser::LocatorCheck {
    r.locators
        .iter()
        .find(|c| c.name == name)
        .expect("locator in report")
}

/// No request other than GET/HEAD reached the server.
async fn assert_no_write_arrived(s: &MockServer) {
    let writes: Vec<String> = s
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| !matches!(r.method.as_str(), "GET" | "HEAD"))
        .map(|r| format!("{} {}", r.method, r.url))
        .collect();
    assert!(writes.is_empty(), "writes reached the server: {writes:?}");
    s.verify().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verdicts_flip_when_the_page_changes() {
    let s = platform().await;
    let base = s.uri();
    let dir = tempfile::tempdir().unwrap();
    let session = launch(dir.path()).await;

    // Clean page: all required locators pass; the publish control is disabled and that is expected.
    let clean = run(&session, &base, "/compose", false, 0).await;
    assert_eq!(clean.verdict, ProbeVerdict::Pass, "{:?}", clean.problems);
    assert!(!check(&clean, "publish").states.unwrap().enabled);
    // Filled: the page enables the button, and `enabled` is now required.
    let filled = run(&session, &base, "/compose", true, 0).await;
    assert_eq!(filled.verdict, ProbeVerdict::Pass, "{:?}", filled.problems);
    assert!(check(&filled, "publish").states.unwrap().enabled);
    assert_eq!(
        check(&filled, "field:text").text.as_deref(),
        Some("héllo ✓")
    );
    // disabled -> enabled: a page that never enables the button fails after filling.
    let never = run(&session, &base, "/v/never-enabled", true, 0).await;
    assert_eq!(never.verdict, ProbeVerdict::LocatorFailed);
    assert!(
        check(&never, "publish")
            .problems
            .iter()
            .any(|p| p == "not enabled"),
        "{:?}",
        never.problems
    );
    // hidden -> visible.
    let hidden = run(&session, &base, "/v/hidden", false, 0).await;
    assert_eq!(hidden.verdict, ProbeVerdict::LocatorFailed);
    assert!(!check(&hidden, "field:text").states.unwrap().visible);
    assert!(check(&clean, "field:text").states.unwrap().visible);
    // covered -> receives events.
    let covered = run(&session, &base, "/v/covered", false, 0).await;
    let c = check(&covered, "publish");
    assert!(
        !c.states.unwrap().receives_events && c.covered_by.as_deref() == Some("div#cover"),
        "{c:?}"
    );
    assert!(check(&clean, "publish").states.unwrap().receives_events);
    // moving -> stable.
    let moving = run(&session, &base, "/v/moving", false, 0).await;
    assert!(!check(&moving, "publish").states.unwrap().stable);
    assert!(check(&clean, "publish").states.unwrap().stable);
    // two matches -> strict failure.
    let dup = run(&session, &base, "/v/duplicate", false, 0).await;
    let d = check(&dup, "publish");
    assert!(
        !d.ok && d.count == 2 && d.problems[0].contains("strict"),
        "{d:?}"
    );
    // missing -> found; and the role+name fallback finds a button without its id.
    let missing = run(&session, &base, "/v/missing", false, 0).await;
    assert_eq!(check(&missing, "publish").used_strategy, None);
    assert_eq!(missing.verdict, ProbeVerdict::LocatorFailed);
    let role = run(&session, &base, "/v/role-only", false, 0).await;
    assert_eq!(check(&role, "publish").used_strategy, Some(1));
    assert_eq!(check(&role, "publish").counts, vec![0, 1]);
    assert!(check(&role, "publish").ok);
    assert_eq!(check(&clean, "publish").used_strategy, Some(0));

    session.close().await;
    assert_no_write_arrived(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hostile_write_is_blocked_before_it_leaves_and_reported() {
    let s = platform().await;
    let base = s.uri();
    let dir = tempfile::tempdir().unwrap();
    let session = launch(dir.path()).await;
    // (page, fill?, the write the probe must report)
    let cases = [
        ("/hostile/write-on-load", false, "POST", "/api/drafts"),
        (
            "/hostile/write-on-focus",
            false,
            "POST",
            "/api/sink/write-on-focus",
        ),
        ("/hostile/autosave", true, "PUT", "/api/drafts"),
        ("/hostile/beacon", false, "POST", "/api/sink/beacon"),
        (
            "/hostile/form-submit-timer",
            false,
            "POST",
            "/api/sink/form-submit-timer",
        ),
        ("/hostile/iframe", false, "POST", "/api/sink/iframe"),
        ("/hostile/worker", false, "POST", "/api/sink/worker"),
    ];
    for (page, fill, m, sink) in cases {
        let r = run(&session, &base, page, fill, 1500).await;
        let found = r
            .writes
            .iter()
            .find(|w| w.method == m && w.url == format!("{base}{sink}"));
        assert!(
            found.is_some_and(|w| w.blocked),
            "{page}: expected a blocked {m} {sink}, got {:?}",
            r.writes
        );
        assert!(
            matches!(
                r.verdict,
                ProbeVerdict::WriteAttempted | ProbeVerdict::LocatorFailedAndWriteAttempted
            ),
            "{page}"
        );
    }
    // Popups: with the default policy they are closed at once (their script may not even run); left open,
    // their writes are failed like the page's own. Either way the popup is recorded. A popup left open is in
    // front of the probe's page, which then gets no animation frames: its locator checks finish on the
    // checks' timer (without it, each waited out the 10 s call bound). Until each send's popup watcher was
    // stopped with its log, the earlier probes' watchers (close_popups on) closed these popups anyway.
    let opts = ProbeOptions {
        observe: Duration::from_millis(1500),
        screenshot: false,
        dialogs: oncepost::browser::DialogPolicy {
            close_popups: false,
            ..Default::default()
        },
        ..ProbeOptions::default()
    };
    let popped_ran = |attempt: usize| {
        let s = &s;
        async move {
            let want = format!("try={attempt}");
            s.received_requests()
                .await
                .unwrap_or_default()
                .iter()
                .filter(|q| q.url.path() == "/hostile/popped-ran" && q.url.query() == Some(&want))
                .count()
        }
    };
    // The popup's script runs on its own schedule (slow on a loaded machine): wait for the guard to record
    // its write, with a bound, instead of trusting the probe's observation window.
    // Measured: now and then the popup target is created (recorded, not closed) but never runs its script
    // and is gone from the browser's targets 15 s later; under 8 busy loops on 2 cores, 6 of 19 probes
    // (with a 1.5 s or a 4 s window alike, so not a matter of time), and once 5 in a row in a loaded
    // full-suite run. Such a run proves nothing about the popup's write, so it does not count: the probe is
    // run again (at most POPUP_TRIES times) until the popup's script ran (the server saw its first read), and
    // then its write must have been reported, blocked.
    let mut r = None;
    let mut tested = false;
    const POPUP_TRIES: usize = 12;
    for attempt in 0..POPUP_TRIES {
        let want = format!("{base}/api/sink/popup?try={attempt}");
        let mark = session.write_guard().mark();
        let page = format!("/hostile/popup?try={attempt}");
        let this = probe::run(&session, &plan_for(&base, &page), &opts)
            .await
            .unwrap()
            .0;
        let seen = wait_for_write(&session, mark, "DELETE", &want).await;
        let ran = popped_ran(attempt).await > 0;
        quiet(&session).await;
        match seen {
            Some(w) => {
                assert!(w.blocked, "{w:?}");
                tested = true;
                r = Some(this);
                break;
            }
            None => assert!(
                !ran,
                "the popup ran but its write was not reported: {:?} / {:?}",
                this.writes, this.dialogs
            ),
        }
        r = Some(this);
    }
    let r = r.expect("a popup probe ran");
    assert!(
        tested,
        "in {POPUP_TRIES} probes the popup's script never ran, so its write was never tested: {:?}",
        r.dialogs
    );
    assert!(
        r.dialogs.iter().any(|d| matches!(
            d,
            oncepost::browser::DialogEvent::Popup { closed: false, .. }
        )),
        "{:?}",
        r.dialogs
    );
    let r = run(&session, &base, "/hostile/popup", false, 300).await;
    assert!(
        r.dialogs.iter().any(|d| matches!(
            d,
            oncepost::browser::DialogEvent::Popup { closed: true, .. }
        )),
        "{:?}",
        r.dialogs
    );
    // a closed popup's request may still be answered late; let the guard go quiet before the next probe
    quiet(&session).await;
    // Service worker: its script is fetched, but its install-time POST never leaves (server-side check
    // below). Measured: it is not reported either, because the worker is held before it runs (see the
    // module docs of browser::write_guard): zero writes, but no alarm for this one.
    let r = run(&session, &base, "/hostile/service-worker", false, 1500).await;
    assert!(
        s.received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .any(|q| q.url.path() == "/hostile/sw.js")
    );
    assert!(r.writes.iter().all(|w| w.blocked), "{:?}", r.writes);
    // Dialogs are answered by the policy and recorded; the page is still checkable afterwards.
    let r = run(&session, &base, "/hostile/dialogs", false, 0).await;
    assert_eq!(r.verdict, ProbeVerdict::Pass, "{:?}", r.problems);
    let kinds: Vec<String> = r
        .dialogs
        .iter()
        .map(|d| serde_json::to_string(d).unwrap())
        .collect();
    assert!(
        kinds
            .iter()
            .any(|k| k.contains("\"alert\"") && k.contains("\"accepted\":true")),
        "{kinds:?}"
    );
    assert!(
        kinds
            .iter()
            .any(|k| k.contains("\"confirm\"") && k.contains("\"accepted\":false")),
        "{kinds:?}"
    );
    session.close().await;
    // Server side: not one write arrived, on any route.
    assert_no_write_arrived(&s).await;
}

fn oncepost(data: &Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .output()
        .expect("binary runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_probe_passes_and_stores_evidence_content_addressed() {
    use std::os::unix::fs::PermissionsExt;
    let s = platform().await;
    let dir = tempfile::tempdir().unwrap();
    let shot = dir.path().join("shot.png");
    let contract = contract_path();
    let out = oncepost(
        dir.path(),
        &[
            "probe",
            "--contract",
            contract.to_str().unwrap(),
            "--base-url",
            &s.uri(),
            "--json",
            "--account",
            "alice",
            "--fill",
            "--observe-ms",
            "300",
            "--screenshot",
            shot.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["verdict"], "pass");
    assert_eq!(report["writes"].as_array().map(Vec::len), Some(0));
    let sha = report["screenshot_sha256"]
        .as_str()
        .expect("screenshot hash")
        .to_string();
    let stored = dir
        .path()
        .join("evidence/sha256")
        .join(&sha[..2])
        .join(format!("{sha}.png"));
    let bytes = std::fs::read(&stored).expect("stored PNG");
    assert_eq!(
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes)),
        sha
    );
    assert_eq!(
        std::fs::metadata(&stored).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(std::fs::read(&shot).unwrap(), bytes);
    let img = image::load_from_memory(&bytes).expect("a PNG");
    assert!(img.width() > 0);
    let profile = dir.path().join("profiles/alice");
    assert_eq!(
        std::fs::metadata(&profile).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_no_write_arrived(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_probe_exits_3_when_the_page_writes_and_the_write_never_arrives() {
    let s = platform().await;
    let dir = tempfile::tempdir().unwrap();
    // A contract whose compose page is the hostile one: same DOM, writes on load.
    let text = std::fs::read_to_string(contract_path())
        .unwrap()
        .replace("{base_url}/compose", "{base_url}/hostile/write-on-load");
    let contract = dir.path().join("hostile.toml");
    std::fs::write(&contract, text).unwrap();
    let out = oncepost(
        dir.path(),
        &[
            "probe",
            "--contract",
            contract.to_str().unwrap(),
            "--base-url",
            &s.uri(),
            "--observe-ms",
            "300",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(3),
        "stdout: {stdout} stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("ALARM write attempted (blocked=true): POST")
            && stdout.contains("/api/drafts"),
        "{stdout}"
    );
    assert_no_write_arrived(&s).await;
}

#[test]
fn missing_chromium_says_how_to_install_it() {
    let dir = tempfile::tempdir().unwrap();
    let contract = contract_path();
    let out = Command::new(BIN)
        .env("ONCEPOST_CHROMIUM", dir.path().join("no-such-chromium"))
        .args([
            "--data-dir",
            dir.path().to_str().unwrap(),
            "probe",
            "--contract",
            contract.to_str().unwrap(),
            "--base-url",
            "http://127.0.0.1:9",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("Chromium not found")
            && err.contains("apt-get install chromium")
            && err.contains("ONCEPOST_CHROMIUM"),
        "{err}"
    );
}

/// Pids of processes whose command line mentions `needle`.
fn pids_mentioning(needle: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline"))
            && String::from_utf8_lossy(&cmd).contains(needle)
            && String::from_utf8_lossy(&cmd).contains("remote-debugging")
        {
            out.push(pid);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_chromium_mid_probe_ends_it_with_a_clear_error() {
    let s = platform().await;
    let dir = tempfile::tempdir().unwrap();
    // The slow page keeps the probe's first step waiting (up to its 10 s bound) for the compose form.
    let text = std::fs::read_to_string(contract_path())
        .unwrap()
        .replace("{base_url}/compose", "{base_url}/v/slow");
    let contract = dir.path().join("slow.toml");
    std::fs::write(&contract, text).unwrap();
    let child = Command::new(BIN)
        .args([
            "--data-dir",
            dir.path().to_str().unwrap(),
            "probe",
            "--account",
            "victim",
            "--contract",
            contract.to_str().unwrap(),
            "--base-url",
            &s.uri(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let profile = dir.path().join("profiles/victim");
    let needle = profile.to_str().unwrap().to_string();
    let mut pids = Vec::new();
    for _ in 0..200 {
        pids = pids_mentioning(&needle);
        // Wait until the page is being polled (the slow page is loaded) before killing.
        if !pids.is_empty()
            && s.received_requests()
                .await
                .unwrap_or_default()
                .iter()
                .any(|r| r.url.path() == "/v/slow")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!pids.is_empty(), "Chromium of the probe not found");
    let killed_at = Instant::now();
    for pid in &pids {
        // SAFETY: kill(2) on Chromium processes this test's probe launched (matched by its temp profile).
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    let out = child.wait_with_output().unwrap();
    eprintln!("probe ended {:?} after the kill", killed_at.elapsed());
    let err = String::from_utf8_lossy(&out.stderr);
    // Without the liveness bound the step would run into its 10 s wait and report a timed-out step (exit 3).
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(err.contains("the browser died"), "{err}");
}

/// Wait (bounded) until the guard has recorded a write with this method and URL after `mark`.
async fn wait_for_write(
    session: &BrowserSession,
    mark: usize,
    method: &str,
    url: &str,
) -> Option<oncepost::browser::WriteAttempt> {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while std::time::Instant::now() < deadline {
        if let Some(w) = session
            .write_guard()
            .writes_since(mark)
            .expect("the guard's log")
            .into_iter()
            .find(|w| w.method == method && w.url == url)
        {
            return Some(w);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// Wait (bounded) until no new write has been recorded for 700 ms: late writes of closed popups must not be
/// attributed to the next probe on this shared session.
async fn quiet(session: &BrowserSession) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut last = session.write_guard().mark();
    let mut since = std::time::Instant::now();
    while std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = session.write_guard().mark();
        if now != last {
            last = now;
            since = std::time::Instant::now();
        } else if since.elapsed() >= Duration::from_millis(700) {
            return;
        }
    }
}

/// `oncepost probe --json` (observing 300 ms) of the bundled contract moved to `/hostile/{variant}` (with
/// `frame`, every compose locator inside that iframe), on Fixturebook: (exit code, the report).
async fn probe_hostile(
    env: &crate::kit::Env,
    variant: &str,
    frame: Option<&str>,
    fill: bool,
) -> (i32, serde_json::Value) {
    let contract = env.write_file(
        &format!("{variant}.toml"),
        &crate::kit::hostile_contract_text(variant, frame),
    );
    let (code, out, err) = probe_contract(env, &contract, fill.then_some(None)).await;
    let report = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (code, report)
}

/// `oncepost probe --json` (observing 300 ms) of `contract` on Fixturebook, with `fill`: `--fill` (`None`
/// inside: its default text): (exit code, stdout, stderr).
async fn probe_contract(
    env: &crate::kit::Env,
    contract: &std::path::Path,
    fill: Option<Option<&str>>,
) -> (i32, String, String) {
    let c = contract.to_string_lossy().into_owned();
    let base = env.base_url();
    let mut args = vec![
        "probe",
        "--json",
        "--contract",
        &c,
        "--base-url",
        &base,
        "--observe-ms",
        "300",
    ];
    if let Some(text) = fill {
        args.push("--fill");
        args.extend(text);
    }
    env.run(&args).await
}

fn located<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["locators"]
        .as_array()
        .and_then(|a| a.iter().find(|l| l["name"] == name))
        .unwrap_or_else(|| panic!("{name} not in {report}"))
}

/// `covered-iframe`: the compose form is in a same-origin iframe and the TOP document lays an overlay over
/// the whole iframe. Inside the frame nothing is in the way; the hit test in the top document lands on the
/// overlay, so every compose locator fails `receives_events` naming it. The same framed contract on the
/// uncovered `iframe` variant passes the hit test (that page fails only for its own write on load).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_in_a_covered_iframe_fails_receives_events_naming_the_cover() {
    let env = crate::kit::Env::start(oncepost::fixture_platform::Fault::default()).await;
    let frame = Some("iframe#compose-frame");
    let (code, r) = probe_hostile(&env, "covered-iframe", frame, false).await;
    assert_eq!(code, 3, "{r}");
    assert_eq!(r["verdict"], "locator_failed", "{r}");
    for name in ["field:text", "publish"] {
        let l = located(&r, name);
        assert_eq!(l["used_strategy"], 0, "{name} found in the frame: {l}");
        assert_eq!(l["states"]["visible"], true, "{name}: {l}");
        assert_eq!(l["states"]["receives_events"], false, "{name}: {l}");
        assert_eq!(l["covered_by"], "div#frame-cover.overlay-promo", "{l}");
        assert!(
            l["problems"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p == "not receives_events (covered by div#frame-cover.overlay-promo)"),
            "{l}"
        );
    }
    // Control: no cover, same frames: the hit test passes in the frame and in the top document.
    let (_, plain) = probe_hostile(&env, "iframe", frame, false).await;
    for name in ["field:text", "publish"] {
        let l = located(&plain, name);
        assert_eq!(l["states"]["receives_events"], true, "{name}: {l}");
        assert!(l["covered_by"].is_null(), "{l}");
    }
    assert_eq!(env.arrivals(), 0);
}

/// `below-fold`: the publish control starts 3000 px below the fields, far below the 1280x900 window.
/// The probe scrolls it into view (a scroll, not a click) before measuring it, so it passes, filled and
/// enabled; nothing is written and nothing is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_control_below_the_fold_is_scrolled_into_view_and_passes() {
    let env = crate::kit::Env::start(oncepost::fixture_platform::Fault::default()).await;
    let (code, r) = probe_hostile(&env, "below-fold", None, true).await;
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["verdict"], "pass", "{r}");
    let p = located(&r, "publish");
    for state in ["in_viewport", "receives_events", "enabled", "stable"] {
        assert_eq!(p["states"][state], true, "{state}: {p}");
    }
    // Its box is where the page rests after the checks: inside the 900 px high window.
    let y = p["box"]["y"].as_f64().unwrap();
    assert!((0.0..900.0).contains(&y), "{p}");
    assert_eq!(r["writes"].as_array().map(Vec::len), Some(0), "{r}");
    assert_eq!(env.arrivals(), 0);
    assert_eq!(env.stats().other_writes_total, 0);
}

/// `probe --fill` reads every filled field back, as a publish does before its press: on a compose page whose
/// text field takes at most 10 characters (`/compose?maxlength=10`) the typed 30 are cut, and the probe fails
/// (exit 3) naming the field and what it shows. The same text on the unlimited page passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_fill_fails_on_a_field_that_cuts_the_typed_text() {
    let env = crate::kit::Env::start(oncepost::fixture_platform::Fault::default()).await;
    let src = std::fs::read_to_string(crate::kit::fixture_contract()).unwrap();
    let limited = crate::kit::compose_asking("maxlength=10");
    let fill = "thirty characters of some text";
    for (name, text, want) in [("limited", &limited, 3), ("plain", &src, 0)] {
        let contract = env.write_file(&format!("{name}.toml"), text);
        let (code, out, err) = probe_contract(&env, &contract, Some(Some(fill))).await;
        assert_eq!(code, want, "{name}: {out} {err}");
        let shows =
            out.contains("fill field:text: the field shows other text than was typed (10 of 30");
        assert_eq!(shows, want == 3, "{name}: {out}");
    }
}

/// `probe --fill` checks a filled field by the contract's read-back rule, as a publish does before its
/// press: an editor that rewrites markup (`/compose?rewrite=1`) fails it under `exact-nfc` and passes under
/// `visible-words`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_fill_checks_a_rewriting_editor_by_the_contracts_text_rule() {
    let env = crate::kit::Env::start(oncepost::fixture_platform::Fault::default()).await;
    let exact = crate::kit::compose_asking("rewrite=1");
    let words = crate::kit::comparing_visible_words(&exact);
    for (name, text, want) in [("exact", &exact, 3), ("words", &words, 0)] {
        let contract = env.write_file(&format!("{name}.toml"), text);
        let fill = "a \"quoted\" and **bold** text";
        let (code, out, err) = probe_contract(&env, &contract, Some(Some(fill))).await;
        assert_eq!(code, want, "{name}: {out} {err}");
        let shows = out.contains("fill field:text: the field shows other text than was typed");
        assert_eq!(shows, want == 3, "{name}: {out}");
    }
}
