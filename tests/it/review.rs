//! The review page (`oncepost review`) through the real binary: every guard over plain HTTP (session token,
//! CSRF, Origin/Referer, POST-only actions, evidence by sha256 only, bind policy), the actions changing the
//! store, the static export, and the whole page in real Chromium through the project's own driver.
//!
//! Each test seeds its own data dir through the store API and the evidence layout (the convention in
//! docs/review.md), starts `oncepost review --port 0 --open-for 10m` and reads the URL it prints.
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use oncepost::identity::{ActionKind, CanonicalRequest, DeliveryKey};
use oncepost::store::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const BIN: &str = env!("CARGO_BIN_EXE_oncepost");
/// Bound on every wait in this file (server start, page loads, polls).
const WAIT: Duration = Duration::from_secs(30);

const PARKED_TEXT: &str = "Launch day! <b>bold</b> & \"quotes\" are text, not markup";
const INDETERMINATE_TEXT: &str = "Second post: did it go out?";
const BOB_TEXT: &str = "Bob's parked note on another platform";
const PUBLISHED_TEXT: &str = "Already published, not for review";

/// A seeded data dir.
struct Seed {
    home: tempfile::TempDir,
    store: Store,
    parked: DeliveryKey,
    indeterminate: DeliveryKey,
    bob: DeliveryKey,
    /// sha256 of the parked intent's first screenshot.
    shot: String,
    /// sha256 of a file stored in the evidence folder but linked only from bob's intent.
    bob_file: String,
}

fn png(w: u32, h: u32, seed: u8) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        if y < 60 {
            image::Rgb([29, 36, 51])
        } else if (x / 40 + y / 40) % 2 == 0 {
            image::Rgb([240, 242, 246])
        } else {
            image::Rgb([seed, 120, 200])
        }
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// Store bytes by the convention; returns the evidence item for the event details.
fn put_evidence(home: &Path, kind: &str, bytes: &[u8], ext: &str, media: &str) -> Value {
    let sha = hex::encode(Sha256::digest(bytes));
    let rel = format!("evidence/sha256/{}/{sha}.{ext}", &sha[..2]);
    let path = home.join(&rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, bytes).unwrap();
    json!({"kind": kind, "sha256": sha, "path": rel, "media_type": media, "bytes": bytes.len()})
}

async fn new_intent(store: &Store, account: &str, text: &str) -> DeliveryKey {
    store
        .create_intent(
            &NewIntent {
                account: account.into(),
                action: ActionKind::Post,
                target: String::new(),
                request: CanonicalRequest::new(Some(text), &BTreeMap::new()),
                source: None,
            },
            Timestamp::now(),
        )
        .await
        .unwrap()
        .intent
        .key
}

/// create -> begin -> authorize -> settle indeterminate; returns the attempt token.
async fn dispatch_unknown(store: &Store, key: &DeliveryKey) -> String {
    let now = Timestamp::now();
    let Begun::Claimed(claim) = store
        .begin(key, "worker-1", "contract-abc", now)
        .await
        .unwrap()
    else {
        panic!("not claimed")
    };
    let auth = store
        .authorize_dispatch(&claim, "contract-abc", now)
        .await
        .unwrap();
    let fence = auth.consume();
    store
        .settle(
            &fence,
            &Settlement::Indeterminate {
                reason: "connection closed after the request was sent".into(),
                details: json!({"error": "connection reset"}),
            },
            now,
        )
        .await
        .unwrap();
    fence.attempt.as_str().to_string()
}

async fn seed() -> Seed {
    let home = tempfile::tempdir().unwrap();
    let store = Store::open(&StoreLocation::default_in(home.path()), Policy::default())
        .await
        .unwrap();
    for (name, platform) in [("alice", "fixturebook"), ("bob", "otherbook")] {
        store
            .add_account(
                &NewAccount {
                    name: name.into(),
                    platform: platform.into(),
                    min_interval_ms: 0,
                    dup_window_ms: 0,
                },
                "tester",
                Timestamp::now(),
            )
            .await
            .unwrap();
    }
    let h = home.path();
    // Parked, with a full set of evidence.
    let parked = new_intent(&store, "alice", PARKED_TEXT).await;
    let attempt = dispatch_unknown(&store, &parked).await;
    let before = put_evidence(
        h,
        "screenshot_before_dispatch",
        &png(1280, 1800, 30),
        "png",
        "image/png",
    );
    let after = put_evidence(
        h,
        "screenshot_after_response",
        &png(1280, 900, 200),
        "png",
        "image/png",
    );
    let shot = before["sha256"].as_str().unwrap().to_string();
    let log = json!({"requests": [{"method": "POST", "url": "http://127.0.0.1:9/api/posts",
        "headers": {"Cookie": "fb_session=SECRET-SESSION", "content-type": "application/json"},
        "body": {"text": PARKED_TEXT}, "response": null, "error": "connection reset"}]});
    let write_log = put_evidence(
        h,
        "write_log",
        log.to_string().as_bytes(),
        "json",
        "application/json",
    );
    let readback = put_evidence(
        h,
        "readback",
        json!({"searched": "/search?q=Launch", "found": false})
            .to_string()
            .as_bytes(),
        "json",
        "application/json",
    );
    let dom = put_evidence(
        h,
        "dom_excerpt",
        b"<div id=\"compose-status\"><script>alert(1)</script>Failed to fetch</div>",
        "html",
        "text/html",
    );
    for (point, items) in [
        ("before_dispatch", vec![before]),
        ("after_response", vec![after, write_log, dom]),
        ("readback", vec![readback]),
    ] {
        store
            .note(
                &parked,
                EventKind::Evidence,
                "worker-1",
                point,
                json!({"attempt": attempt, "items": items}),
                Timestamp::now(),
            )
            .await
            .unwrap();
    }
    store
        .park(
            &parked,
            "reconciler",
            "reconcile did not find the post",
            Timestamp::now(),
        )
        .await
        .unwrap();
    // Indeterminate, no evidence.
    let indeterminate = new_intent(&store, "alice", INDETERMINATE_TEXT).await;
    dispatch_unknown(&store, &indeterminate).await;
    // Bob's parked intent with one screenshot only it links.
    let bob = new_intent(&store, "bob", BOB_TEXT).await;
    let bob_item = put_evidence(
        h,
        "screenshot_readback",
        &png(800, 600, 90),
        "png",
        "image/png",
    );
    let bob_file = bob_item["sha256"].as_str().unwrap().to_string();
    store
        .note(
            &bob,
            EventKind::Evidence,
            "worker-2",
            "readback",
            json!({"attempt": null, "items": [bob_item]}),
            Timestamp::now(),
        )
        .await
        .unwrap();
    store
        .park(&bob, "operator", "stopped by hand", Timestamp::now())
        .await
        .unwrap();
    // Published: never listed.
    let published = new_intent(&store, "alice", PUBLISHED_TEXT).await;
    store
        .record_found_before_write(
            &published,
            "worker-1",
            Some("p1"),
            Some("http://127.0.0.1:9/p/p1"),
            json!({}),
            Timestamp::now(),
        )
        .await
        .unwrap();
    Seed {
        home,
        store,
        parked,
        indeterminate,
        bob,
        shot,
        bob_file,
    }
}

/// A running `oncepost review`; killed (by its own handle) when dropped.
struct Review {
    child: Child,
    /// `http://127.0.0.1:PORT/TOKEN/`
    url: String,
    /// `http://127.0.0.1:PORT`
    origin: String,
    /// `http://127.0.0.1:PORT/TOKEN`
    base: String,
}

impl Drop for Review {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(home: &Path) -> Review {
    let mut child = Command::new(BIN)
        .env("ONCEPOST_HOME", home)
        .env_remove("ONCEPOST_STORE")
        .args([
            "review",
            "--port",
            "0",
            "--open-for",
            "10m",
            "--by",
            "Rita Reviewer",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start oncepost review");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(u) = line.strip_prefix("review page: ") {
                let _ = tx.send(u.to_string());
            }
        }
    });
    let Ok(url) = rx.recv_timeout(WAIT) else {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "no URL printed; stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let parsed = url::Url::parse(&url).unwrap();
    let origin = parsed.origin().ascii_serialization();
    let base = url.trim_end_matches('/').to_string();
    Review {
        child,
        url,
        origin,
        base,
    }
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(WAIT)
        .build()
        .unwrap()
}

/// The CSRF token the page puts in its forms.
fn csrf_of(html: &str) -> String {
    let marker = "name=\"csrf\" value=\"";
    let i = html.find(marker).expect("csrf field on the page") + marker.len();
    html[i..i + 64].to_string()
}

async fn get(url: &str) -> (u16, String, reqwest::header::HeaderMap) {
    let r = http().get(url).send().await.unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, r.text().await.unwrap_or_default(), headers)
}

async fn post(
    url: &str,
    origin: Option<&str>,
    referer: Option<&str>,
    form: &[(&str, &str)],
) -> (u16, String) {
    let mut req = http().post(url).form(form);
    if let Some(o) = origin {
        req = req.header("origin", o);
    }
    if let Some(r) = referer {
        req = req.header("referer", r);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap_or_default())
}

async fn event_count(store: &Store, key: &DeliveryKey) -> usize {
    store.timeline(key).await.unwrap().events.len()
}

/// HTML-escaped text, written out here independently of the page's own escaping.
fn escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[tokio::test]
async fn list_shows_parked_and_indeterminate_escaped_with_security_headers() {
    let s = seed().await;
    let r = start(s.home.path());
    let (status, body, headers) = get(&r.url).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(&escaped(PARKED_TEXT)), "parked text, escaped");
    assert!(!body.contains("<b>bold</b>"), "stored text is never markup");
    assert!(
        body.contains("Launch day! &lt;b&gt;bold&lt;/b&gt; &amp; &quot;quotes&quot; are text"),
        "escaped exactly"
    );
    assert!(body.contains(INDETERMINATE_TEXT));
    assert!(body.contains(&escaped(BOB_TEXT)));
    assert!(
        !body.contains(PUBLISHED_TEXT),
        "published intents are not listed"
    );
    assert!(
        body.contains("reconcile did not find the post"),
        "why it is parked"
    );
    assert!(body.contains(&format!("/intent/{}/thumb/{}", s.parked.as_str(), s.shot)));
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(headers["x-frame-options"], "DENY");
    assert!(!body.contains("<script"), "the page runs no script");

    // Filters.
    let (_, b, _) = get(&format!("{}?account=bob", r.url)).await;
    assert!(b.contains(&escaped(BOB_TEXT)) && !b.contains(INDETERMINATE_TEXT));
    let (_, b, _) = get(&format!("{}?state=indeterminate", r.url)).await;
    assert!(b.contains(INDETERMINATE_TEXT) && !b.contains(&escaped(BOB_TEXT)));
    let (_, b, _) = get(&format!("{}?platform=otherbook", r.url)).await;
    assert!(b.contains(&escaped(BOB_TEXT)) && !b.contains(INDETERMINATE_TEXT));
    let (_, b, _) = get(&format!("{}?min_age=1d", r.url)).await;
    assert!(b.contains("Showing 0 of 3"), "nothing is a day old");
    let (_, b, _) = get(&format!("{}?max_age=1d", r.url)).await;
    assert!(b.contains("Showing 3 of 3"));
    let (status, b, _) = get(&format!("{}?min_age=soon", r.url)).await;
    assert_eq!(status, 400);
    assert!(b.contains("is not an age like 30m"), "{b}");
}

#[tokio::test]
async fn an_unreadable_history_is_listed_with_its_problem_without_hiding_the_others() {
    let s = seed().await;
    // An operator forges history behind the store's back (the database refuses a hand edit of the state,
    // migration 0003, but an appended event is only caught on replay): bob's history no longer replays.
    let n = s
        .store
        .execute_raw_for_tests(&format!(
            "INSERT INTO events (intent_id, at, kind, from_state, to_state, actor, details) \
             SELECT id, 1, 'retried', 'parked', 'pending', 'forger', '{{}}' FROM intents WHERE delivery_key = '{}'",
            s.bob.as_str()
        ))
        .await
        .unwrap();
    assert_eq!(n, 1);
    let r = start(s.home.path());
    let (status, body, _) = get(&r.url).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("its history cannot be read"), "{body}");
    assert!(body.contains(&escaped(PARKED_TEXT)) && body.contains(INDETERMINATE_TEXT));
}

#[tokio::test]
async fn intent_page_shows_timeline_evidence_redacted_log_and_readback() {
    let s = seed().await;
    let r = start(s.home.path());
    let (status, body, _) = get(&format!("{}/intent/{}", r.base, s.parked.as_str())).await;
    assert_eq!(status, 200, "{body}");
    for needle in [
        "Attempt 1",
        "Outcome unknown",
        "connection closed after the request was sent",
        "Parked",
        "Write-request log",
        "Read-back result",
        "/search?q=Launch",
        "worker-1",
        "reconciler",
    ] {
        assert!(body.contains(&escaped(needle)), "missing {needle:?}");
    }
    assert!(
        !body.contains("SECRET-SESSION"),
        "a cookie in the write log is redacted on the page"
    );
    assert!(body.contains("[redacted]"));
    assert!(
        !body.contains("<script>alert(1)"),
        "the DOM excerpt is shown as text"
    );
    assert!(
        body.contains("&lt;script&gt;[redacted]&lt;/script&gt;Failed to fetch"),
        "the DOM excerpt is shown as text, its script redacted"
    );
    assert!(
        body.contains("id=\"found-form\"")
            && body.contains("id=\"redeliver-form\"")
            && body.contains("id=\"keep-form\"")
    );
    assert!(
        body.contains("value=\"Rita Reviewer\""),
        "--by prefills the name"
    );
    // Evidence and thumbnails are served, as PNG.
    let r1 = http()
        .get(format!(
            "{}/intent/{}/evidence/{}",
            r.base,
            s.parked.as_str(),
            s.shot
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r1.status(), 200);
    assert_eq!(r1.headers()["content-type"], "image/png");
    let full = r1.bytes().await.unwrap();
    assert_eq!(hex::encode(Sha256::digest(&full)), s.shot);
    let t = http()
        .get(format!(
            "{}/intent/{}/thumb/{}",
            r.base,
            s.parked.as_str(),
            s.shot
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(t.status(), 200);
    let thumb = image::load_from_memory(&t.bytes().await.unwrap()).unwrap();
    assert!(thumb.width() <= 360 && thumb.width() > 0);
    // Cached content-addressed next to the evidence.
    let cached = s.home.path().join(format!(
        "evidence/thumbs/{}/{}-w360.png",
        &s.shot[..2],
        s.shot
    ));
    assert!(cached.exists(), "{}", cached.display());
}

#[tokio::test]
async fn wrong_or_missing_session_token_gets_nothing() {
    let s = seed().await;
    let r = start(s.home.path());
    let token = r.base.rsplit('/').next().unwrap().to_string();
    let mut wrong = token.clone();
    wrong.replace_range(63..64, if token.ends_with('0') { "1" } else { "0" });
    let key = s.parked.as_str();
    for url in [
        format!("{}/", r.origin),
        format!("{}/{wrong}/", r.origin),
        format!("{}/{}/", r.origin, &token[..63]),
        format!("{}/{token}x/", r.origin),
        format!("{}/{}/", r.origin, token.to_uppercase()),
        format!("{}/{wrong}/intent/{key}", r.origin),
        format!("{}/{wrong}/intent/{key}/evidence/{}", r.origin, s.shot),
        format!("{}/{wrong}/intent/{key}/thumb/{}", r.origin, s.shot),
        format!("{}/intent/{key}", r.origin),
    ] {
        let (status, body, headers) = get(&url).await;
        assert_eq!(status, 404, "{url}");
        assert!(
            !body.contains("Launch day") && !body.contains(key) && !body.contains("csrf"),
            "{url} revealed something"
        );
        assert_eq!(
            headers["x-frame-options"], "DENY",
            "security headers on errors too"
        );
    }
    // A POST with a wrong token changes nothing, whatever else it carries.
    let (_, page, _) = get(&format!("{}/intent/{key}", r.base)).await;
    let csrf = csrf_of(&page);
    let before = event_count(&s.store, &s.parked).await;
    let (status, _) = post(
        &format!("{}/{wrong}/intent/{key}/keep", r.origin),
        Some(&r.origin),
        None,
        &[("csrf", &csrf), ("by", "Mallory"), ("note", "wrong token")],
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(event_count(&s.store, &s.parked).await, before);
}

#[tokio::test]
async fn every_post_guard_refuses_and_changes_nothing() {
    let s = seed().await;
    let r = start(s.home.path());
    let key = s.parked.as_str();
    let page_url = format!("{}/intent/{key}", r.base);
    let (_, page, _) = get(&page_url).await;
    let csrf = csrf_of(&page);
    let keep = format!("{page_url}/keep");
    let before = event_count(&s.store, &s.parked).await;
    let mut wrong_csrf = csrf.clone();
    wrong_csrf.replace_range(0..1, if csrf.starts_with('a') { "b" } else { "a" });
    /// (what, Origin, Referer, form)
    type Case<'a> = (
        &'a str,
        Option<&'a str>,
        Option<&'a str>,
        Vec<(&'a str, &'a str)>,
    );
    let cases: Vec<Case> = vec![
        (
            "CSRF missing",
            Some(&r.origin),
            None,
            vec![("by", "M"), ("note", "n")],
        ),
        (
            "CSRF empty",
            Some(&r.origin),
            None,
            vec![("csrf", ""), ("by", "M"), ("note", "n")],
        ),
        (
            "CSRF wrong",
            Some(&r.origin),
            None,
            vec![("csrf", &wrong_csrf), ("by", "M"), ("note", "n")],
        ),
        (
            "Origin of another site",
            Some("http://evil.test"),
            None,
            vec![("csrf", &csrf), ("by", "M"), ("note", "n")],
        ),
        (
            "Origin: another port",
            Some("http://127.0.0.1:1"),
            None,
            vec![("csrf", &csrf), ("by", "M"), ("note", "n")],
        ),
        (
            "Origin null",
            Some("null"),
            None,
            vec![("csrf", &csrf), ("by", "M"), ("note", "n")],
        ),
        (
            "neither Origin nor Referer",
            None,
            None,
            vec![("csrf", &csrf), ("by", "M"), ("note", "n")],
        ),
        (
            "Referer of another site",
            None,
            Some("http://evil.test/x"),
            vec![("csrf", &csrf), ("by", "M"), ("note", "n")],
        ),
    ];
    for (what, origin, referer, form) in cases {
        let (status, body) = post(&keep, origin, referer, &form).await;
        assert_eq!(status, 403, "{what}: {body}");
        assert!(
            !body.contains("Launch day"),
            "{what}: the refusal reveals nothing"
        );
        assert_eq!(
            event_count(&s.store, &s.parked).await,
            before,
            "{what} changed the store"
        );
    }
    // GET on an action: not allowed, nothing changes.
    for action in ["keep", "found", "redeliver"] {
        let url = format!(
            "{page_url}/{action}?csrf={csrf}&by=M&note=n&reason=r&permalink=http://x.test/p/1"
        );
        let (status, _, _) = get(&url).await;
        assert_eq!(status, 405, "GET {action}");
    }
    assert_eq!(event_count(&s.store, &s.parked).await, before);
    assert_eq!(
        s.store.intent(&s.parked).await.unwrap().state,
        Status::Parked
    );
    // The same POST with the right token and origin works (so the refusals above are the guards' doing);
    // a Referer alone (no Origin) is accepted too.
    let (status, body) = post(
        &keep,
        Some(&r.origin),
        None,
        &[("csrf", &csrf), ("by", "Rita"), ("note", "still checking")],
    )
    .await;
    assert_eq!(status, 303, "{body}");
    let (status, _) = post(
        &keep,
        None,
        Some(&page_url),
        &[("csrf", &csrf), ("by", "Rita"), ("note", "via referer")],
    )
    .await;
    assert_eq!(status, 303);
    let t = s.store.timeline(&s.parked).await.unwrap();
    let notes: Vec<_> = t
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Note)
        .collect();
    assert_eq!(notes.len(), 2);
    assert_eq!(notes[0].actor, "Rita");
    assert_eq!(notes[0].reason.as_deref(), Some("still checking"));
}

#[tokio::test]
async fn evidence_is_served_by_sha256_only_when_linked_from_the_intent() {
    let s = seed().await;
    let h = s.home.path();
    // A file that is in the evidence folder but linked nowhere, and a link whose path escapes the folder.
    std::fs::write(h.join("secret.txt"), b"top secret").unwrap();
    let secret_sha = hex::encode(Sha256::digest(b"top secret"));
    s.store
        .note(
            &s.parked,
            EventKind::Evidence,
            "worker-1",
            "tampered",
            json!({"attempt": null, "items": [{"kind": "write_log", "sha256": secret_sha, "path": "../secret.txt", "media_type": "text/plain", "bytes": 10}]}),
            Timestamp::now(),
        )
        .await
        .unwrap();
    let r = start(h);
    let key = s.parked.as_str();
    let base = format!("{}/intent/{key}", r.base);
    for (what, url) in [
        (
            "another intent's file",
            format!("{base}/evidence/{}", s.bob_file),
        ),
        (
            "another intent's thumbnail",
            format!("{base}/thumb/{}", s.bob_file),
        ),
        (
            "a link with a traversal path",
            format!("{base}/evidence/{secret_sha}"),
        ),
        (
            "dot-dot in the hash",
            format!("{base}/evidence/..%2F..%2Fsecret.txt"),
        ),
        (
            "dot-dot segments",
            format!("{base}/evidence/../../../secret.txt"),
        ),
        ("absolute path", format!("{base}/evidence/%2Fetc%2Fpasswd")),
        ("a non-hash", format!("{base}/evidence/{}", &s.shot[..10])),
        (
            "uppercase hash",
            format!("{base}/evidence/{}", s.shot.to_uppercase()),
        ),
        (
            "a non-screenshot as thumbnail",
            format!("{base}/thumb/{secret_sha}"),
        ),
        (
            "unknown intent",
            format!("{}/intent/{}/evidence/{}", r.base, "0".repeat(64), s.shot),
        ),
    ] {
        let (status, body, _) = get(&url).await;
        assert_eq!(status, 404, "{what}: {url}");
        assert!(!body.contains("top secret"), "{what}");
    }
    // Bob's own page serves it.
    let (status, _, _) = get(&format!(
        "{}/intent/{}/evidence/{}",
        r.base,
        s.bob.as_str(),
        s.bob_file
    ))
    .await;
    assert_eq!(status, 200);
    // The broken link is named on the page, not followed.
    let (_, page, _) = get(&base).await;
    assert!(
        page.contains("does not follow the convention"),
        "bad link reported"
    );
    // A file changed after it was recorded is not served, and the page says why.
    let shot_path = h.join(format!("evidence/sha256/{}/{}.png", &s.shot[..2], s.shot));
    std::fs::write(&shot_path, png(100, 100, 1)).unwrap();
    let (status, _, _) = get(&format!("{base}/evidence/{}", s.shot)).await;
    assert_eq!(status, 404, "tampered file");
    let (_, page, _) = get(&base).await;
    assert!(page.contains("does not match its recorded sha256"));
}

#[tokio::test]
async fn actions_change_the_store_and_bad_input_changes_nothing() {
    let s = seed().await;
    let r = start(s.home.path());
    let page_of = |k: &DeliveryKey| format!("{}/intent/{}", r.base, k.as_str());
    let (_, page, _) = get(&page_of(&s.parked)).await;
    let csrf = csrf_of(&page);
    let o = Some(r.origin.as_str());

    // Bad input: a clear message on the page, nothing changed.
    let before = event_count(&s.store, &s.parked).await;
    for (action, form, message) in [
        (
            "found",
            vec![("by", "Rita"), ("permalink", "not a link")],
            "is not a permalink",
        ),
        (
            "found",
            vec![("by", ""), ("permalink", "https://x.test/p/1")],
            "Your name is required",
        ),
        (
            "found",
            vec![("by", "Rita"), ("permalink", "javascript:alert(1)")],
            "is not a permalink",
        ),
        (
            "redeliver",
            vec![("by", "Rita"), ("reason", "  ")],
            "Why is required",
        ),
        (
            "keep",
            vec![("by", "Rita\nEvil"), ("note", "n")],
            "single line",
        ),
    ] {
        let mut f = form.clone();
        f.push(("csrf", &csrf));
        let (status, body) = post(&format!("{}/{action}", page_of(&s.parked)), o, None, &f).await;
        assert_eq!(status, 400, "{action}: {body}");
        assert!(
            body.contains(&escaped(message)),
            "{action}: {message:?} not in page"
        );
        assert!(body.contains("Nothing changed"));
    }
    assert_eq!(event_count(&s.store, &s.parked).await, before);

    // Refused by the state table: redeliver of a pending intent (shown, nothing changed).
    // "keep" on the indeterminate one parks it, with the person's name.
    let (status, _) = post(
        &format!("{}/keep", page_of(&s.indeterminate)),
        o,
        None,
        &[
            ("csrf", &csrf),
            ("by", "Rita"),
            ("note", "I'll check tomorrow"),
        ],
    )
    .await;
    assert_eq!(status, 303);
    let i = s.store.timeline(&s.indeterminate).await.unwrap();
    assert_eq!(i.intent.state, Status::Parked);
    let last = i.events.last().unwrap();
    assert_eq!(
        (last.kind, last.actor.as_str()),
        (EventKind::Parked, "Rita")
    );

    // Redeliver the parked one: a new intent with the authorization record.
    let (status, _) = post(
        &format!("{}/redeliver", page_of(&s.parked)),
        o,
        None,
        &[
            ("csrf", &csrf),
            ("by", "Rita"),
            ("reason", "checked the feed: not there"),
        ],
    )
    .await;
    assert_eq!(status, 303);
    let all = s.store.intents(Some(Status::Pending), 10).await.unwrap();
    let new = all
        .iter()
        .find(|i| i.redelivery_of.as_ref() == Some(&s.parked))
        .expect("new intent");
    assert_eq!(new.redelivery.as_ref().unwrap()["by"], "Rita");
    assert_eq!(
        s.store.intent(&s.parked).await.unwrap().state,
        Status::Parked,
        "the old one stays"
    );
    // The new one is pending: its page offers no actions, and a "found it" POST is refused by the state
    // table, shown on the page.
    let (_, new_page, _) = get(&page_of(&new.key)).await;
    assert!(!new_page.contains("<form") && new_page.contains("nothing here waits"));
    // ... and says which command sends it (nothing publishes it by itself).
    assert!(
        new_page.contains(&format!(
            "oncepost publish --key {} --contract CONTRACT",
            new.key
        )),
        "{new_page}"
    );
    let before_new = event_count(&s.store, &new.key).await;
    let (status, body) = post(
        &format!("{}/found", page_of(&new.key)),
        o,
        None,
        &[
            ("csrf", &csrf),
            ("by", "Rita"),
            ("permalink", "https://x.test/p/1"),
        ],
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("Nothing changed"));
    assert_eq!(event_count(&s.store, &new.key).await, before_new);

    // Found it on bob's parked intent: published with the permalink and the person's name.
    let (status, _) = post(
        &format!("{}/found", page_of(&s.bob)),
        o,
        None,
        &[
            ("csrf", &csrf),
            ("by", "Rita"),
            ("permalink", "https://otherbook.test/p/77"),
            ("platform_id", "77"),
        ],
    )
    .await;
    assert_eq!(status, 303);
    let b = s.store.timeline(&s.bob).await.unwrap();
    assert_eq!(b.intent.state, Status::Published);
    assert_eq!(
        b.intent.permalink.as_deref(),
        Some("https://otherbook.test/p/77")
    );
    assert_eq!(b.events.last().unwrap().actor, "Rita");
}

#[tokio::test]
async fn found_it_on_an_indeterminate_intent_is_a_lookup_recorded_as_the_person() {
    let s = seed().await;
    let r = start(s.home.path());
    let url = format!("{}/intent/{}", r.base, s.indeterminate.as_str());
    let (_, page, _) = get(&url).await;
    let csrf = csrf_of(&page);
    let (status, _) = post(
        &format!("{url}/found"),
        Some(&r.origin),
        None,
        &[
            ("csrf", &csrf),
            ("by", "Rita"),
            ("permalink", "http://127.0.0.1:9/p/abc"),
        ],
    )
    .await;
    assert_eq!(status, 303);
    let t = s.store.timeline(&s.indeterminate).await.unwrap();
    assert_eq!(t.intent.state, Status::Published);
    let kinds: Vec<_> = t
        .events
        .iter()
        .rev()
        .take(2)
        .map(|e| (e.kind, e.actor.clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (EventKind::ReconcileFound, "Rita".into()),
            (EventKind::ReconcileStarted, "Rita".into())
        ]
    );
}

#[tokio::test]
async fn non_loopback_address_is_refused_unless_bind_is_explicit() {
    use oncepost::review::{BindChoice, ReviewError, ReviewOptions, ReviewServer};
    let s = seed().await;
    let opts = |bind| ReviewOptions {
        bind,
        by: "t".into(),
        data_dir: s.home.path().to_path_buf(),
    };
    for addr in ["0.0.0.0:0", "192.0.2.1:0", "[::]:0"] {
        let r = ReviewServer::bind(
            s.store.clone(),
            opts(BindChoice::Default(addr.parse().unwrap())),
        )
        .await;
        assert!(
            matches!(r, Err(ReviewError::NonLoopbackBind(_))),
            "{addr}: {r:?}"
        );
    }
    let ok = ReviewServer::bind(
        s.store.clone(),
        opts(BindChoice::Default("127.0.0.1:0".parse().unwrap())),
    )
    .await
    .unwrap();
    assert!(ok.url().starts_with("http://127.0.0.1:"));
    let token = ok
        .url()
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(token.len(), 64);
    assert!(
        !format!("{ok:?}").contains(&token),
        "the token never reaches a log line"
    );
    // The CLI's default is loopback, and an explicit loopback --bind works.
    let out = Command::new(BIN)
        .env("ONCEPOST_HOME", s.home.path())
        .args(["review", "--bind", "127.0.0.1", "--open-for", "1ms"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("review page: http://127.0.0.1:"));
}

fn export(home: &Path, dir: &Path) {
    let out = Command::new(BIN)
        .env("ONCEPOST_HOME", home)
        .arg("review")
        .arg("--export")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 sends"));
}

/// Every `href`/`src` in a page that points into the export.
fn local_links(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["href=\"", "src=\""] {
        for part in html.split(attr).skip(1) {
            let link = &part[..part.find('"').unwrap()];
            if !link.starts_with("http") && !link.starts_with('#') {
                out.push(link.to_string());
            }
        }
    }
    out
}

#[tokio::test]
async fn export_writes_the_same_content_as_static_html_without_actions() {
    let s = seed().await;
    let out = s.home.path().join("report");
    export(s.home.path(), &out);
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        index.contains(&escaped(PARKED_TEXT))
            && index.contains(INDETERMINATE_TEXT)
            && index.contains(&escaped(BOB_TEXT))
    );
    assert!(!index.contains(PUBLISHED_TEXT));
    let intent =
        std::fs::read_to_string(out.join(format!("intent-{}.html", s.parked.as_str()))).unwrap();
    for needle in [
        "Write-request log",
        "Read-back result",
        "Attempt 1",
        "reconcile did not find the post",
    ] {
        assert!(intent.contains(needle), "export misses {needle:?}");
    }
    for page in [&index, &intent] {
        assert!(
            !page.contains("<form") && !page.contains("csrf"),
            "no actions in the export"
        );
        assert!(!page.contains("SECRET-SESSION"));
        for link in local_links(page) {
            assert!(out.join(&link).is_file(), "broken link {link}");
        }
    }
    assert!(out.join(format!("evidence/{}.png", s.shot)).is_file());
    assert!(out.join(format!("thumbs/{}.png", s.shot)).is_file());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the report is private");
}

#[tokio::test]
async fn export_to_an_unwritable_place_is_bad_input() {
    let s = seed().await;
    std::fs::write(s.home.path().join("file"), b"x").unwrap();
    let out = Command::new(BIN)
        .env("ONCEPOST_HOME", s.home.path())
        .arg("review")
        .arg("--export")
        .arg(s.home.path().join("file/sub"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write the report"));
}

mod chromium {
    //! The page in real Chromium through `browser::BrowserSession`.
    //!
    //! A person's browser has neither oncepost's door nor its write guard: these tests drive a plain headless
    //! Chromium (chromiumoxide, launched directly), so the review page itself is what stops a forged POST.
    use super::*;
    use crate::kit::chromium::Chrome;
    use chromiumoxide::{Browser, Page};

    /// A person's browser: plain headless Chromium (the kit's), every call bounded.
    struct Person {
        chrome: Chrome,
    }

    /// Bounded calls, named like `BrowserSession::liveness().call(..)`.
    struct Calls;

    impl Calls {
        async fn call<T, E: std::fmt::Display>(
            &self,
            what: &str,
            fut: impl std::future::Future<Output = Result<T, E>>,
        ) -> Result<T, String> {
            match tokio::time::timeout(Duration::from_secs(10), fut).await {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(format!("{what} failed: {e}")),
                Err(_) => Err(format!("{what} did not finish within 10 s")),
            }
        }
    }

    impl Person {
        async fn launch(profile: &std::path::Path) -> Person {
            Person {
                chrome: Chrome::launch_in(profile, Some((1280, 900)), WAIT).await,
            }
        }

        fn liveness(&self) -> Calls {
            Calls
        }

        fn browser(&self) -> &Browser {
            self.chrome.browser()
        }

        async fn close(self) {
            self.chrome.close().await;
        }
    }

    async fn eval<T: serde::de::DeserializeOwned>(s: &Person, page: &Page, js: &str) -> T {
        s.liveness()
            .call("evaluate", page.evaluate(js))
            .await
            .unwrap_or_else(|e| panic!("evaluate {js}: {e}"))
            .into_value()
            .unwrap_or_else(|e| panic!("value of {js}: {e}"))
    }

    /// Poll a boolean expression until true, within [`WAIT`].
    async fn until(s: &Person, page: &Page, js: &str) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Ok(Ok(v)) = tokio::time::timeout(Duration::from_secs(5), page.evaluate(js)).await
                && v.into_value::<bool>().unwrap_or(false)
            {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {js}"
            );
            let _ = s;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn goto(s: &Person, page: &Page, url: &str) {
        s.liveness()
            .call("goto", page.goto(url))
            .await
            .unwrap_or_else(|e| panic!("goto {url}: {e}"));
        until(s, page, "document.readyState === 'complete'").await;
    }

    const IMAGES_LOADED: &str = "document.images.length > 0 && Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)";

    /// When REVIEW_SCREENSHOTS names a folder, save a full-page screenshot there (to look at the page).
    async fn maybe_screenshot(s: &Person, page: &Page, name: &str) {
        let Some(dir) = std::env::var_os("REVIEW_SCREENSHOTS") else {
            return;
        };
        use chromiumoxide::page::ScreenshotParams;
        let png = s
            .liveness()
            .call(
                "screenshot",
                page.screenshot(ScreenshotParams::builder().full_page(true).build()),
            )
            .await
            .unwrap();
        std::fs::write(PathBuf::from(dir).join(name), png).unwrap();
    }

    /// An attacker's page on another loopback port that auto-submits a form to the review page.
    async fn attacker(target: String) -> (String, tokio::task::JoinHandle<()>) {
        let html = format!(
            "<!doctype html><html><body><form id=f method=post action=\"{target}\">\
<input name=by value=Mallory><input name=note value=forged-note></form>\
<script>document.getElementById('f').submit();</script></body></html>"
        );
        let app = axum::Router::new().route(
            "/",
            axum::routing::get(move || async move { axum::response::Html(html) }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (url, task)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn page_in_chromium_lists_loads_screenshots_acts_and_refuses_forgery() {
        let s = seed().await;
        let r = start(s.home.path());
        let profile = tempfile::tempdir().unwrap();
        let session = Person::launch(&profile.path().join("profile")).await;
        let page = session
            .liveness()
            .call("new page", session.browser().new_page("about:blank"))
            .await
            .unwrap();

        // The list renders, with every card, and its thumbnails load.
        goto(&session, &page, &r.url).await;
        let cards: i64 = eval(
            &session,
            &page,
            "document.querySelectorAll('article.card').length",
        )
        .await;
        assert_eq!(cards, 3);
        let text: String = eval(&session, &page, "document.body.innerText").await;
        assert!(
            text.contains(PARKED_TEXT),
            "the stored text shows as text, markup included"
        );
        until(&session, &page, IMAGES_LOADED).await;
        maybe_screenshot(&session, &page, "list.png").await;

        // The intent page: screenshots load; a click on a thumbnail opens the full-size image.
        goto(
            &session,
            &page,
            &format!("{}/intent/{}", r.base, s.parked.as_str()),
        )
        .await;
        until(&session, &page, IMAGES_LOADED).await;
        let widths: Vec<i64> = eval(
            &session,
            &page,
            "Array.from(document.images).map(i => i.naturalWidth)",
        )
        .await;
        assert_eq!(widths.len(), 2);
        assert!(widths.iter().all(|w| *w > 0 && *w <= 360), "{widths:?}");
        maybe_screenshot(&session, &page, "intent.png").await;
        let _: bool = eval(
            &session,
            &page,
            "document.querySelector('#screenshots a').click(), true",
        )
        .await;
        until(&session, &page, "location.pathname.includes('/evidence/') && document.images.length === 1 && document.images[0].naturalWidth === 1280").await;

        // An action through the page's own form changes the store.
        goto(
            &session,
            &page,
            &format!("{}/intent/{}", r.base, s.parked.as_str()),
        )
        .await;
        let _: bool = eval(
            &session,
            &page,
            "document.querySelector('#keep-form textarea[name=note]').value = 'asked the account owner'; \
             document.querySelector('#keep-form').requestSubmit(); true",
        )
        .await;
        until(
            &session,
            &page,
            "location.search.includes('done=kept') && !!document.getElementById('message')",
        )
        .await;
        let t = s.store.timeline(&s.parked).await.unwrap();
        let note = t
            .events
            .iter()
            .find(|e| e.kind == EventKind::Note)
            .expect("the note is in the store");
        assert_eq!(note.actor, "Rita Reviewer");
        assert_eq!(note.reason.as_deref(), Some("asked the account owner"));
        maybe_screenshot(&session, &page, "after-action.png").await;

        // A forged POST from another site (it knows the URL with the token, not the CSRF token) is refused.
        let before = event_count(&s.store, &s.parked).await;
        let (evil, task) = attacker(format!("{}/intent/{}/keep", r.base, s.parked.as_str())).await;
        goto(&session, &page, &evil).await;
        until(
            &session,
            &page,
            "location.href.includes('/keep') && document.body.innerText.includes('403')",
        )
        .await;
        assert_eq!(
            event_count(&s.store, &s.parked).await,
            before,
            "the forged POST changed nothing"
        );
        assert!(
            !s.store
                .timeline(&s.parked)
                .await
                .unwrap()
                .events
                .iter()
                .any(|e| e.actor == "Mallory")
        );
        task.abort();

        // A wrong session token gets nothing: no list, no intent text, no images.
        let token = r.base.rsplit('/').next().unwrap();
        let wrong: String = token.chars().rev().collect();
        goto(&session, &page, &format!("{}/{wrong}/", r.origin)).await;
        let body: String = eval(&session, &page, "document.body.innerText").await;
        assert!(
            body.contains("404") && !body.contains("Launch day"),
            "{body}"
        );
        let img_ok: bool = eval(
            &session,
            &page,
            &format!(
                "new Promise(res => {{ const i = new Image(); i.onload = () => res(i.naturalWidth > 0); i.onerror = () => res(false); i.src = '{}/{wrong}/intent/{}/thumb/{}'; }})",
                r.origin,
                s.parked.as_str(),
                s.shot
            ),
        )
        .await;
        assert!(!img_ok, "a wrong token loads no screenshot");

        // The static export opens from disk, thumbnails included.
        let out = s.home.path().join("report");
        export(s.home.path(), &out);
        goto(
            &session,
            &page,
            &format!("file://{}", out.join("index.html").display()),
        )
        .await;
        until(&session, &page, IMAGES_LOADED).await;
        let cards: i64 = eval(
            &session,
            &page,
            "document.querySelectorAll('article.card').length",
        )
        .await;
        assert_eq!(cards, 3);
        let forms: i64 = eval(&session, &page, "document.forms.length").await;
        assert_eq!(forms, 0);
        maybe_screenshot(&session, &page, "export.png").await;

        let _ = page.close().await;
        session.close().await;
    }
}
