//! Fixturebook, the bundled fixture platform: routes, escaping, persistence, fault modes at the socket
//! level, exact arrival counters, the `fixtures serve` binary, and (in real headless Chromium) the hostile
//! pages' writes and Chromium's silent re-send of a dropped POST.
//!
//! Every wait is bounded; no assertion depends on how long something took.
use std::path::Path;
use std::time::Duration;

use oncepost::fixture_platform::{
    Fault, FaultMode, FixtureConfig, FixturePlatform, HOSTILE_VARIANTS, Misbehaviour,
    RunningPlatform, STATE_FILE, Trigger,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Bound on any single wait in these tests (a hang becomes a failure, not a stuck run).
const WAIT: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------

async fn start(dir: &Path) -> RunningPlatform {
    FixturePlatform::start(FixtureConfig::new(dir))
        .await
        .expect("platform starts")
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(WAIT)
        .build()
        .expect("client")
}

/// GET a page and return (status, body).
async fn get(p: &RunningPlatform, path: &str, cookie: Option<&str>) -> (u16, String) {
    let mut rb = http().get(format!("{}{path}", p.base_url()));
    if let Some(c) = cookie {
        rb = rb.header("cookie", c);
    }
    let r = rb.send().await.expect("GET");
    let status = r.status().as_u16();
    (status, r.text().await.expect("body"))
}

/// The CSRF token a page embeds for this viewer.
async fn csrf(p: &RunningPlatform, cookie: Option<&str>) -> String {
    let (_, html) = get(p, "/compose", cookie).await;
    let re = regex::Regex::new(r#"<meta name="csrf-token" content="([0-9a-f]+)">"#).unwrap();
    re.captures(&html).expect("csrf meta")[1].to_owned()
}

/// Log in as `account`; returns the `fb_session=...` cookie pair.
async fn login(p: &RunningPlatform, account: &str) -> String {
    let r = http()
        .get(format!("{}/login?account={account}", p.base_url()))
        .send()
        .await
        .expect("login");
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(r.headers()["location"], "/compose");
    let set_cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(set_cookie.contains("HttpOnly"), "{set_cookie}");
    assert!(set_cookie.contains("Path=/"), "{set_cookie}");
    set_cookie.split(';').next().unwrap().to_owned()
}

/// POST /api/posts with a valid token; returns (status, JSON body).
async fn create(p: &RunningPlatform, cookie: Option<&str>, text: &str) -> (u16, serde_json::Value) {
    let token = csrf(p, cookie).await;
    let mut rb = http()
        .post(format!("{}/api/posts", p.base_url()))
        .header("content-type", "application/json")
        .header("x-csrf-token", token)
        .body(serde_json::json!({"text": text, "title": "t"}).to_string());
    if let Some(c) = cookie {
        rb = rb.header("cookie", c);
    }
    let r = rb.send().await.expect("POST");
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    (
        status,
        serde_json::from_str(&body).unwrap_or(serde_json::Value::Null),
    )
}

/// The JSON body of a response.
async fn jsonv(r: reqwest::Response) -> serde_json::Value {
    serde_json::from_str(&r.text().await.expect("body")).expect("JSON body")
}

/// What a raw client saw after sending a request.
#[derive(Debug, PartialEq)]
enum Raw {
    /// Bytes received, then EOF.
    Answer(String),
    /// EOF with not a single byte.
    ClosedWithoutBytes,
    /// ECONNRESET (with how many bytes arrived before it).
    Reset(usize),
}

/// The raw bytes of a create request (Connection: close, so a normal answer ends in EOF).
fn raw_create_request(token: &str, text: &str) -> (Vec<u8>, Vec<u8>) {
    let body = serde_json::json!({"text": text}).to_string();
    let head = format!(
        "POST /api/posts HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-csrf-token: {token}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    (head.into_bytes(), body.into_bytes())
}

async fn read_outcome(s: &mut TcpStream) -> Raw {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(WAIT, s.read(&mut buf))
            .await
            .expect("server neither answered nor closed within the bound")
        {
            Ok(0) if got.is_empty() => return Raw::ClosedWithoutBytes,
            Ok(0) => return Raw::Answer(String::from_utf8_lossy(&got).into_owned()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return Raw::Reset(got.len());
            }
            Err(e) => panic!("unexpected read error {e}"),
        }
    }
}

async fn raw_create(p: &RunningPlatform, text: &str) -> Raw {
    let token = csrf(p, None).await;
    let (head, body) = raw_create_request(&token, text);
    let mut s = TcpStream::connect(p.addr()).await.unwrap();
    s.write_all(&head).await.unwrap();
    s.write_all(&body).await.unwrap();
    read_outcome(&mut s).await
}

fn status_of(answer: &str) -> u16 {
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status line")
}

fn body_of(answer: &str) -> serde_json::Value {
    let body = answer.split("\r\n\r\n").nth(1).expect("body");
    serde_json::from_str(body).expect("JSON body")
}

/// Poll `cond` until true (`true`) or until `bound` runs out (`false`).
async fn within(bound: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + bound;
    while !cond() {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    true
}

/// Poll `cond` until true or the bound runs out.
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

// ---------------------------------------------------------------------------------------------------
// Routes and pages
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn compose_page_has_the_agreed_dom() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    let (status, html) = get(&p, "/compose", None).await;
    assert_eq!(status, 200);
    for needle in [
        r#"<textarea id="post-text" name="text" aria-label="Post text""#,
        r#"<input id="post-title" name="title" aria-label="Title""#,
        r#"<button id="publish" type="button" disabled>Publish</button>"#,
        r#"<div id="compose-status" role="status"></div>"#,
        r#"<meta name="csrf-token" content=""#,
        r#"<script src="/static/compose.js"></script>"#,
    ] {
        assert!(html.contains(needle), "compose page lacks {needle}");
    }
    let (s, js) = get(&p, "/static/compose.js", None).await;
    assert_eq!(s, 200);
    assert!(js.contains("fetch('/api/posts'") && js.contains("'x-csrf-token'"));
    let (s, css) = get(&p, "/static/style.css", None).await;
    assert_eq!(s, 200);
    assert!(css.contains("#publish"));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no external resources"
    );
    p.shutdown().await;
}

#[tokio::test]
async fn login_sets_an_httponly_session_and_posts_record_the_account() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    let cookie = login(&p, "alice").await;
    let (_, html) = get(&p, "/compose", Some(&cookie)).await;
    assert!(html.contains("alice"));
    let (status, body) = create(&p, Some(&cookie), "hello from alice").await;
    assert_eq!(status, 201);
    let (status, body2) = create(&p, None, "hello from nobody").await;
    assert_eq!(status, 201);
    let posts = p.posts();
    let by_id = |v: &serde_json::Value| {
        posts
            .iter()
            .find(|x| x.id == v["id"])
            .unwrap()
            .account
            .clone()
    };
    assert_eq!(by_id(&body), "alice");
    assert_eq!(by_id(&body2), "anonymous");
    // Bad account names are refused with a clear 400.
    for bad in ["", "a%20b", "anonymous", "%3Cscript%3E"] {
        let r = http()
            .get(format!("{}/login?account={bad}", p.base_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 400, "account {bad:?}");
    }
    p.shutdown().await;
}

#[tokio::test]
async fn create_answers_201_with_id_and_url_and_every_read_route_shows_the_post() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    let (status, body) = create(&p, None, "first post").await;
    assert_eq!(status, 201);
    let id = body["id"].as_str().unwrap().to_owned();
    assert!(regex::Regex::new("^[a-z0-9]+$").unwrap().is_match(&id));
    assert_eq!(body["url"], format!("/p/{id}"));
    let (_, second) = create(&p, None, "second post about first").await;
    let id2 = second["id"].as_str().unwrap().to_owned();

    let (s, perma) = get(&p, &format!("/p/{id}"), None).await;
    assert_eq!(s, 200);
    assert!(perma.contains(&format!(r#"<article class="post" data-post-id="{id}">"#)));
    assert!(perma.contains(r#"<p class="post-text">first post</p>"#));
    assert!(perma.contains(r#"<span class="post-author">anonymous</span>"#));

    let (s, feed) = get(&p, "/", None).await;
    assert_eq!(s, 200);
    let (a, b) = (feed.find(&id2).unwrap(), feed.find(&id).unwrap());
    assert!(a < b, "feed is newest first");
    assert!(feed.contains(&format!(r#"<a class="permalink" href="/p/{id}">"#)));

    let (s, exact) = get(&p, "/search?q=first%20post", None).await;
    assert_eq!(s, 200);
    assert!(exact.contains(&format!(r#"data-post-id="{id}" data-match="exact""#)));
    assert!(
        !exact.contains(&id2),
        "substring 'first post' is not in the second text"
    );
    let (_, sub) = get(&p, "/search?q=first", None).await;
    assert!(sub.contains(&format!(r#"data-post-id="{id2}" data-match="substring""#)));
    assert!(!sub.contains(&format!(r#"data-post-id="{id}" data-match="exact""#)));
    let (_, none) = get(&p, "/search?q=zzz", None).await;
    assert!(!none.contains("data-post-id"));

    let list: serde_json::Value =
        serde_json::from_str(&get(&p, "/api/posts", None).await.1).unwrap();
    assert_eq!(list[0]["id"], id2.as_str());
    assert_eq!(list[1]["text"], "first post");
    for key in ["id", "text", "title", "account", "created_at"] {
        assert!(list[1].get(key).is_some(), "missing {key}");
    }
    p.shutdown().await;
}

#[tokio::test]
async fn unknown_pages_and_posts_get_the_404_page() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    for path in [
        "/p/doesnotexist",
        "/nope",
        "/hostile/not-a-variant",
        "/p/a/b",
    ] {
        let (s, html) = get(&p, path, None).await;
        assert_eq!(s, 404, "{path}");
        assert!(html.contains(r#"id="not-found""#), "{path}");
    }
    let (s, _) = get(&p, "/p/%3Cx%3E", None).await;
    assert_eq!(s, 404);
    p.shutdown().await;
}

#[tokio::test]
async fn post_text_title_and_query_are_html_escaped_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    let evil = r#"<script>alert("x")</script> & 'q' {{csrf}}"#;
    let token = csrf(&p, None).await;
    let r = http()
        .post(format!("{}/api/posts", p.base_url()))
        .header("content-type", "application/json")
        .header("x-csrf-token", &token)
        .body(serde_json::json!({"text": evil, "title": "<b>title</b>"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let id = jsonv(r).await["id"].as_str().unwrap().to_owned();
    let escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39; {{csrf}}";
    for path in [
        format!("/p/{id}"),
        "/".to_owned(),
        "/search?q=%3Cscript%3E".to_owned(),
    ] {
        let (_, html) = get(&p, &path, None).await;
        assert!(
            html.contains(escaped),
            "{path} does not show the escaped text"
        );
        assert!(!html.contains("<script>alert"), "{path} renders raw markup");
        assert!(
            !html.contains("<b>title</b>") && html.contains("&lt;b&gt;title&lt;/b&gt;"),
            "{path}"
        );
    }
    let (_, search) = get(&p, "/search?q=%22%3E%3Cimg%3E", None).await;
    assert!(!search.contains(r#""><img>"#), "query echoed raw");
    p.shutdown().await;
}

#[tokio::test]
async fn create_refuses_bad_input_with_clear_errors_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    let token = csrf(&p, None).await;
    let url = format!("{}/api/posts", p.base_url());
    let cases: Vec<(Option<&str>, String, u16)> = vec![
        (
            None,
            serde_json::json!({"text": "no token"}).to_string(),
            403,
        ),
        (
            Some("0000"),
            serde_json::json!({"text": "wrong token"}).to_string(),
            403,
        ),
        (Some(&token), "not json".to_owned(), 400),
        (
            Some(&token),
            serde_json::json!({"title": "no text"}).to_string(),
            400,
        ),
        (
            Some(&token),
            serde_json::json!({"text": "   "}).to_string(),
            422,
        ),
        (
            Some(&token),
            serde_json::json!({"text": "x".repeat(10_001)}).to_string(),
            422,
        ),
    ];
    let n = cases.len() as u64;
    for (tok, body, want) in cases {
        let mut rb = http()
            .post(&url)
            .header("content-type", "application/json")
            .body(body.clone());
        if let Some(t) = tok {
            rb = rb.header("x-csrf-token", t);
        }
        let r = rb.send().await.unwrap();
        assert_eq!(r.status().as_u16(), want, "body {body:.40}");
        let err: serde_json::Value = jsonv(r).await;
        assert!(err["error"].as_str().is_some_and(|e| !e.is_empty()));
    }
    assert!(p.posts().is_empty());
    let stats = p.stats();
    assert_eq!(stats.create_arrivals, n, "refused requests still arrived");
    assert_eq!(stats.create_stored, 0);
    p.shutdown().await;
}

#[tokio::test]
async fn hostile_pages_are_served_with_the_compose_dom_and_the_worker_script() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    let names = HOSTILE_VARIANTS
        .iter()
        .map(|v| v.name)
        .filter(|n| !["iframe", "covered-iframe", "cross-origin", "other-origin"].contains(n))
        .chain(["iframe-inner", "covered-iframe-inner", "cross-origin-inner"]);
    for name in names {
        let (s, html) = get(&p, &format!("/hostile/{name}"), None).await;
        assert_eq!(s, 200, "{name}");
        assert!(
            html.contains(r#"id="post-text""#) && html.contains(r#"id="publish""#),
            "{name}"
        );
    }
    let (_, iframe) = get(&p, "/hostile/iframe", None).await;
    assert!(iframe.contains(r#"src="/hostile/iframe-inner""#));
    let (_, covered) = get(&p, "/hostile/covered-iframe", None).await;
    assert!(
        covered.contains(r#"src="/hostile/covered-iframe-inner""#)
            && covered.contains(r#"id="frame-cover""#)
    );
    // The compose page of the other origin: framed by a script, from the port it is given.
    let (_, other) = get(&p, "/hostile/other-origin?port=1", None).await;
    assert!(other.contains(r#"id="compose-frame""#) && other.contains("'/compose'"));
    let r = http()
        .get(format!("{}/compose", p.other_origin_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let framed = r.text().await.unwrap();
    assert!(framed.contains(r#"id="post-text""#) && framed.contains(r#"id="publish""#));
    let (_, dup) = get(&p, "/hostile/duplicate-match", None).await;
    assert_eq!(dup.matches(r#"id="publish""#).count(), 2);
    let r = http()
        .get(format!("{}/hostile/sw.js", p.base_url()))
        .send()
        .await
        .unwrap();
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(r.text().await.unwrap().contains("/api/sink/service-worker"));
    p.shutdown().await;
}

#[tokio::test]
async fn every_write_outside_the_create_route_is_counted_by_route_and_admin_calls_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    let c = http();
    let b = p.base_url();
    c.post(format!("{b}/api/drafts"))
        .body("d")
        .send()
        .await
        .unwrap();
    c.post(format!("{b}/api/sink/beacon"))
        .body("x")
        .send()
        .await
        .unwrap();
    c.post(format!("{b}/api/sink/beacon"))
        .body("x")
        .send()
        .await
        .unwrap();
    let r = c.put(format!("{b}/whatever")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 404);
    c.delete(format!("{b}/api/posts")).send().await.unwrap();
    c.get(format!("{b}/__admin/stats")).send().await.unwrap();
    c.post(format!("{b}/__admin/fault"))
        .body(r#"{"mode":"normal"}"#)
        .send()
        .await
        .unwrap();
    let stats = p.stats();
    assert_eq!(stats.writes_to("POST /api/drafts"), 1);
    assert_eq!(stats.writes_to("POST /api/sink/beacon"), 2);
    assert_eq!(stats.writes_to("PUT /whatever"), 1);
    assert_eq!(stats.writes_to("DELETE /api/posts"), 1);
    assert_eq!(stats.other_writes_total, 5);
    assert_eq!(stats.create_arrivals, 0);
    // The admin view says the same.
    let admin: serde_json::Value =
        jsonv(c.get(format!("{b}/__admin/stats")).send().await.unwrap()).await;
    assert_eq!(admin["other_writes"]["POST /api/sink/beacon"], 2);
    assert_eq!(admin["other_writes_total"], 5);
    p.shutdown().await;
}

#[tokio::test]
async fn admin_fault_and_reset_change_and_clear_the_platform() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    let c = http();
    let b = p.base_url();
    let r = c
        .post(format!("{b}/__admin/fault"))
        .body(r#"{"mode":"commit-then-delay","delay_ms":1234}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        p.fault(),
        Fault::new(FaultMode::CommitThenDelay).with_delay_ms(1234)
    );
    let got: serde_json::Value =
        jsonv(c.get(format!("{b}/__admin/fault")).send().await.unwrap()).await;
    assert_eq!(got["mode"], "commit-then-delay");
    for bad in [r#"{"mode":"explode"}"#, "nope", r#"{"delay_ms":5}"#] {
        let r = c
            .post(format!("{b}/__admin/fault"))
            .body(bad)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 400, "{bad}");
        let e: serde_json::Value = jsonv(r).await;
        assert!(
            e["error"].as_str().unwrap().contains("commit-then-drop"),
            "error lists the modes"
        );
    }
    assert_eq!(
        p.fault().mode,
        FaultMode::CommitThenDelay,
        "a bad request leaves the fault alone"
    );
    p.set_fault(Fault::default());
    create(&p, None, "to be cleared").await;
    assert_eq!(p.posts().len(), 1);
    let r = c.post(format!("{b}/__admin/reset")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(p.posts().is_empty());
    assert_eq!(p.stats(), Default::default());
    let restarted_view = std::fs::read_to_string(dir.path().join(STATE_FILE)).unwrap();
    assert!(
        !restarted_view.contains("to be cleared"),
        "reset is persisted"
    );
    p.shutdown().await;
}

#[tokio::test]
async fn posts_and_sessions_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    let cookie = login(&p, "bob").await;
    let (_, body) = create(&p, Some(&cookie), "persist me").await;
    let id = body["id"].as_str().unwrap().to_owned();
    let token_before = csrf(&p, Some(&cookie)).await;
    p.shutdown().await;

    let p = start(dir.path()).await;
    let (s, html) = get(&p, &format!("/p/{id}"), None).await;
    assert_eq!(s, 200);
    assert!(
        html.contains("persist me") && html.contains(r#"<span class="post-author">bob</span>"#)
    );
    assert_eq!(p.posts().len(), 1);
    // The open page's token stays valid and the session still names bob.
    assert_eq!(csrf(&p, Some(&cookie)).await, token_before);
    let (s, body) = create(&p, Some(&cookie), "after restart").await;
    assert_eq!(s, 201);
    assert_eq!(
        p.posts()
            .iter()
            .find(|x| x.id == body["id"])
            .unwrap()
            .account,
        "bob"
    );
    // Only the state file is left in the dir (temp files were renamed away).
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from(STATE_FILE)]);
    p.shutdown().await;
}

#[tokio::test]
async fn a_corrupt_state_file_stops_start_instead_of_being_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(STATE_FILE), "{ half a file").unwrap();
    let err = FixturePlatform::start(FixtureConfig::new(dir.path()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("corrupt"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join(STATE_FILE)).unwrap(),
        "{ half a file"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_are_all_stored_and_all_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    let token = csrf(&p, None).await;
    let url = format!("{}/api/posts", p.base_url());
    let mut handles = Vec::new();
    for i in 0..24 {
        let (url, token) = (url.clone(), token.clone());
        handles.push(tokio::spawn(async move {
            http()
                .post(url)
                .header("x-csrf-token", token)
                .body(serde_json::json!({"text": format!("concurrent {i}")}).to_string())
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }));
    }
    for h in handles {
        assert_eq!(h.await.unwrap(), 201);
    }
    assert_eq!(p.stats().create_arrivals, 24);
    p.shutdown().await;
    let p = start(dir.path()).await;
    let mut texts: Vec<String> = p.posts().into_iter().map(|x| x.text).collect();
    texts.sort();
    let mut want: Vec<String> = (0..24).map(|i| format!("concurrent {i}")).collect();
    want.sort();
    assert_eq!(texts, want);
    p.shutdown().await;
}

#[tokio::test]
async fn keep_alive_serves_several_requests_on_one_connection() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    let mut s = TcpStream::connect(p.addr()).await.unwrap();
    for _ in 0..3 {
        s.write_all(b"GET /api/posts HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout(WAIT, s.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        let head = String::from_utf8_lossy(&buf[..n]).to_string();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(
            !head.to_ascii_lowercase().contains("connection: close"),
            "{head}"
        );
    }
    p.shutdown().await;
}

#[tokio::test]
async fn a_taken_port_is_a_clear_bind_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    let other = tempfile::tempdir().unwrap();
    let mut config = FixtureConfig::new(other.path());
    config.port = p.addr().port();
    let err = FixturePlatform::start(config).await.unwrap_err();
    assert!(
        matches!(err, oncepost::fixture_platform::FixtureError::Bind { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains(&p.addr().port().to_string()),
        "{err}"
    );
    p.shutdown().await;
}

// ---------------------------------------------------------------------------------------------------
// Fault modes, observed at the socket
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn normal_mode_answers_201_on_the_socket_and_counts_one_arrival() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    let Raw::Answer(a) = raw_create(&p, "plain").await else {
        panic!("expected an answer")
    };
    assert_eq!(status_of(&a), 201);
    assert!(body_of(&a)["url"].as_str().unwrap().starts_with("/p/"));
    assert_eq!(p.stats().create_arrivals, 1);
    assert_eq!(p.stats().create_stored, 1);
    p.shutdown().await;
}

#[tokio::test]
async fn commit_then_500_stores_the_post_and_answers_500() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    p.set_fault(Fault::new(FaultMode::CommitThen500));
    let Raw::Answer(a) = raw_create(&p, "stored despite 500").await else {
        panic!("expected an answer")
    };
    assert_eq!(status_of(&a), 500);
    assert_eq!(p.posts().len(), 1);
    assert_eq!(p.posts()[0].text, "stored despite 500");
    assert_eq!(p.stats().create_arrivals, 1);
    p.shutdown().await;
}

#[tokio::test]
async fn commit_then_drop_stores_the_post_and_closes_without_a_single_byte() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    p.set_fault(Fault::new(FaultMode::CommitThenDrop));
    assert_eq!(
        raw_create(&p, "stored then dropped").await,
        Raw::ClosedWithoutBytes
    );
    assert_eq!(p.posts().len(), 1);
    assert_eq!(p.stats().create_arrivals, 1);
    assert_eq!(p.stats().create_stored, 1);
    p.shutdown().await;
}

#[tokio::test]
async fn reset_before_read_resets_after_the_head_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    p.set_fault(Fault::new(FaultMode::ResetBeforeRead));
    let token = csrf(&p, None).await;
    let (head, _body) = raw_create_request(&token, "never stored");
    let mut s = TcpStream::connect(p.addr()).await.unwrap();
    // Only the head goes out: the server resets without waiting for (or reading) the body.
    s.write_all(&head).await.unwrap();
    assert_eq!(read_outcome(&mut s).await, Raw::Reset(0));
    assert!(p.posts().is_empty());
    assert_eq!(p.stats().create_arrivals, 1);
    assert_eq!(p.stats().create_stored, 0);
    p.shutdown().await;
}

#[tokio::test]
async fn reject_4xx_answers_422_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    p.set_fault(Fault::new(FaultMode::Reject4xx));
    let Raw::Answer(a) = raw_create(&p, "rejected").await else {
        panic!("expected an answer")
    };
    assert_eq!(status_of(&a), 422);
    assert!(body_of(&a)["error"].is_string());
    assert!(p.posts().is_empty());
    assert_eq!(p.stats().create_arrivals, 1);
    p.shutdown().await;
}

#[tokio::test]
async fn commit_then_delay_stores_first_and_holds_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    // A delay far beyond this test's own bound: the answer cannot be there when we look.
    p.set_fault(Fault::new(FaultMode::CommitThenDelay).with_delay_ms(100_000));
    let token = csrf(&p, None).await;
    let (head, body) = raw_create_request(&token, "held");
    let mut s = TcpStream::connect(p.addr()).await.unwrap();
    s.write_all(&head).await.unwrap();
    s.write_all(&body).await.unwrap();
    eventually("the held post is stored", || p.posts().len() == 1).await;
    let mut buf = [0u8; 1];
    match s.try_read(&mut buf) {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("expected no response yet, got {other:?}"),
    }
    // A short delay is answered normally once it has passed.
    p.set_fault(Fault::new(FaultMode::CommitThenDelay).with_delay_ms(200));
    let Raw::Answer(a) = raw_create(&p, "held briefly").await else {
        panic!("expected an answer")
    };
    assert_eq!(status_of(&a), 201);
    assert!(body_of(&a)["id"].is_string());
    assert_eq!(p.stats().create_arrivals, 2);
    drop(s);
    p.shutdown().await;
}

#[tokio::test]
async fn no_success_signal_stores_and_answers_201_without_id_or_url() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    p.set_fault(Fault::new(FaultMode::NoSuccessSignal));
    let Raw::Answer(a) = raw_create(&p, "quietly stored").await else {
        panic!("expected an answer")
    };
    assert_eq!(status_of(&a), 201);
    let body = body_of(&a);
    assert!(
        body.get("id").is_none() && body.get("url").is_none(),
        "{body}"
    );
    assert_eq!(p.posts().len(), 1);
    assert_eq!(p.stats().create_arrivals, 1);
    p.shutdown().await;
}

#[tokio::test]
async fn readback_mismatch_stores_a_mutated_text_behind_a_normal_201() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    p.set_fault(Fault::new(FaultMode::ReadbackMismatch));
    let Raw::Answer(a) = raw_create(&p, "exact words").await else {
        panic!("expected an answer")
    };
    assert_eq!(status_of(&a), 201);
    let id = body_of(&a)["id"].as_str().unwrap().to_owned();
    let (_, html) = get(&p, &format!("/p/{id}"), None).await;
    assert!(html.contains(r#"<p class="post-text">exact words (edited)</p>"#));
    assert_eq!(p.posts()[0].text, "exact words (edited)");
    assert_eq!(p.stats().create_arrivals, 1);
    p.shutdown().await;
}

// ---------------------------------------------------------------------------------------------------
// Robustness: slow clients, shutdown
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_stalled_client_does_not_block_others_and_shutdown_closes_every_connection() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path()).await;
    // Half a request head, then silence.
    let mut stalled = TcpStream::connect(p.addr()).await.unwrap();
    stalled
        .write_all(b"POST /api/posts HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    // A create whose body never completes.
    let token = csrf(&p, None).await;
    let mut half_body = TcpStream::connect(p.addr()).await.unwrap();
    half_body
        .write_all(
            format!("POST /api/posts HTTP/1.1\r\nhost: x\r\nx-csrf-token: {token}\r\ncontent-length: 100\r\n\r\n{{\"te")
                .as_bytes(),
        )
        .await
        .unwrap();
    // An idle keep-alive connection.
    let mut idle = TcpStream::connect(p.addr()).await.unwrap();
    idle.write_all(b"GET /api/posts HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 4096];
    let n = tokio::time::timeout(WAIT, idle.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));

    let (status, _) = create(&p, None, "others still get served").await;
    assert_eq!(status, 201);
    // The half-body create was counted when its head arrived, though its body never came; the
    // half-head one was not (no complete head yet).
    eventually("two create arrivals", || p.stats().create_arrivals == 2).await;
    assert_eq!(p.posts().len(), 1);

    tokio::time::timeout(WAIT, p.shutdown())
        .await
        .expect("shutdown is bounded");
    for (name, s) in [
        ("stalled", &mut stalled),
        ("half body", &mut half_body),
        ("idle", &mut idle),
    ] {
        let mut rest = Vec::new();
        let r = tokio::time::timeout(WAIT, s.read_to_end(&mut rest)).await;
        assert!(r.is_ok(), "{name} connection still open after shutdown");
    }
}

// ---------------------------------------------------------------------------------------------------
// The real binary
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn fixtures_serve_prints_its_url_serves_persists_and_stops_on_sigterm() {
    use tokio::io::AsyncBufReadExt;
    let home = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_oncepost"))
        .args(["fixtures", "serve", "--json", "--fault", "commit-then-500"])
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
        .unwrap();
    let info: serde_json::Value = serde_json::from_str(&line).expect("one JSON line");
    let base = info["base_url"].as_str().unwrap().to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    assert_eq!(info["fault"]["mode"], "commit-then-500");

    let c = http();
    let compose = c
        .get(format!("{base}/compose"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let token = regex::Regex::new(r#"csrf-token" content="([0-9a-f]+)""#)
        .unwrap()
        .captures(&compose)
        .unwrap()[1]
        .to_owned();
    let r = c
        .post(format!("{base}/api/posts"))
        .header("x-csrf-token", token)
        .body(r#"{"text":"via the binary"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 500, "the --fault option took effect");
    let state = home.path().join("fixture-platform").join(STATE_FILE);
    assert!(
        std::fs::read_to_string(&state)
            .unwrap()
            .contains("via the binary")
    );

    let pid = child.id().expect("running") as libc::pid_t;
    // SAFETY: plain kill(2) on the child we spawned and still own.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("exits after SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[test]
fn fixtures_serve_rejects_an_unknown_fault_with_exit_2() {
    let home = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_oncepost"))
        .args(["fixtures", "serve", "--fault", "explode"])
        .env("ONCEPOST_HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("commit-then-drop"), "{err}");
}

// ---------------------------------------------------------------------------------------------------
// Real headless Chromium
// ---------------------------------------------------------------------------------------------------

mod chromium {
    use super::*;
    use crate::kit::chromium::{Chrome, click, type_text};
    use chromiumoxide::Page;
    use chromiumoxide::cdp::browser_protocol::input::InsertTextParams;

    pub async fn eval<T: serde::de::DeserializeOwned>(page: &Page, js: &str) -> T {
        tokio::time::timeout(WAIT, page.evaluate(js))
            .await
            .expect("evaluate in time")
            .expect("evaluate")
            .into_value()
            .expect("value")
    }

    /// Poll a JS boolean until true, bounded. Evaluation errors count as "not yet": while the page
    /// navigates, its old execution context is gone ("Cannot find context with specified id").
    pub async fn until_js(page: &Page, js: &str) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let done = match tokio::time::timeout(WAIT, page.evaluate(js)).await {
                Ok(Ok(v)) => v.into_value::<bool>().unwrap_or(false),
                Ok(Err(_)) => false,
                Err(_) => panic!("evaluate hung: {js}"),
            };
            if done {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for JS: {js}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// `/hostile/sw-outbox` misbehaves in a plain browser: its service worker sends the first post again,
    /// from the worker, when the second page announces its publish. Up to three tries, each on a fresh
    /// platform and browser: on a loaded machine Chromium has been seen not to run a page's service worker
    /// in time (`hostile_pages_write_when_chromium_merely_loads_them`); a try counts only when the worker
    /// came up on both pages, each given up to `WAIT`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_service_worker_outbox_sends_the_last_post_again_at_the_next_publish() {
        const FIRST: &str = "the outbox's first post";
        let mut seen = Vec::new();
        for _ in 0..3 {
            let dir = tempfile::tempdir().unwrap();
            let p = start(dir.path()).await;
            let chrome = Chrome::launch(WAIT).await;
            let url = format!("{}/hostile/sw-outbox", p.base_url());
            let mut ready = true;
            for text in [FIRST, "the outbox's second post"] {
                let page = chrome
                    .try_open_unattached(&url)
                    .await
                    .expect("a new page in time");
                // Up to WAIT: a full suite on 2 cores has left it down past 5 s in three browsers in a row
                // (stop 41), where an idle run has it up within a second.
                let mut up = false;
                for _ in 0..WAIT.as_millis() / 50 {
                    let sw: String =
                        eval(&page, "String(document.body.getAttribute('data-sw'))").await;
                    if sw == "ready" {
                        up = true;
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                if !up {
                    ready = false;
                    break;
                }
                type_text(&page, "#post-text", text).await;
                click(&page, "#publish").await;
                within(WAIT, || p.posts().iter().any(|q| q.text == text)).await;
            }
            // The worker's copy may come a moment after the page's own.
            within(WAIT, || {
                p.posts().iter().filter(|q| q.text == FIRST).count() >= 2
            })
            .await;
            let firsts = p.posts().iter().filter(|q| q.text == FIRST).count();
            chrome.close().await;
            seen.push((ready, firsts));
            if ready {
                assert!(
                    firsts >= 2,
                    "the worker sent the first post again: {seen:?}"
                );
                return;
            }
        }
        panic!("the page's service worker never came up in three tries: {seen:?}");
    }

    /// One load of a write-on-load page on a new tab of `browser`: a write to `sink` must arrive, and on the
    /// beacon page one more when the tab closes (closing hides it: the visibilitychange beacon). `Err` says
    /// which did not happen and what the page saw (the service-worker page records its registration).
    async fn load_and_watch(
        browser: &Chrome,
        p: &RunningPlatform,
        url: &str,
        sink: &str,
    ) -> Result<(), String> {
        let before = p.stats().writes_to(sink);
        let opened = if url.contains("service-worker") {
            browser.try_open_unattached(url).await
        } else {
            browser.try_open(url).await
        };
        let wrote = within(WAIT, || p.stats().writes_to(sink) > before).await;
        let page = match (opened, wrote) {
            (Ok(page), true) => page,
            // The write arrived though the tab never reported it open: the page wrote on load.
            (Err(_), true) if !sink.ends_with("/beacon") => return Ok(()),
            (Err(e), _) => return Err(format!("{e}; wrote: {wrote}")),
            (Ok(page), false) => {
                let saw = tokio::time::timeout(
                    WAIT / 4,
                    page.evaluate(
                        "String(document.readyState) + ' data-sw=' + document.body.getAttribute('data-sw')",
                    ),
                )
                .await
                .ok()
                .and_then(|r| r.ok())
                .and_then(|v| v.into_value::<String>().ok())
                .unwrap_or_else(|| "(no answer)".into());
                let _ = page.close().await;
                return Err(format!("nothing written in {WAIT:?} (the page: {saw})"));
            }
        };
        let after_load = p.stats().writes_to(sink);
        let _ = page.close().await;
        if sink.ends_with("/beacon")
            && !within(WAIT, || p.stats().writes_to(sink) > after_load).await
        {
            return Err(format!(
                "no beacon within {WAIT:?} of closing the tab (visibilitychange)"
            ));
        }
        Ok(())
    }

    /// Write-on-load style pages: loading alone makes the named sink's counter go up.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn hostile_pages_write_when_chromium_merely_loads_them() {
        let dir = tempfile::tempdir().unwrap();
        let p = start(dir.path()).await;
        let chrome = Chrome::launch(WAIT).await;
        let on_load: Vec<_> = HOSTILE_VARIANTS
            .iter()
            .filter_map(|v| match v.misbehaviour {
                Misbehaviour::Writes {
                    sink,
                    trigger: Trigger::Load,
                } => Some((v.name, sink)),
                _ => None,
            })
            .collect();
        assert_eq!(on_load.len(), 6, "{on_load:?}");
        for (name, sink) in on_load {
            // Up to three loads (five, below), each on a fresh tab: on a loaded machine Chromium has been seen to leave a
            // page's worker or popup without ever running it (a service worker, in full test runs: no write in
            // 20 s, nor in three 10 s loads, where an idle run writes within 1.5 s), and a full CI run once
            // failed here with the message lost. A retry runs in a browser of its own (a service worker once
            // registered stays in its profile, and a second load in the same one installs nothing: the write
            // is on install), and nothing one slow load does (a tab that never finishes opening, a beacon
            // that never leaves) fails the test alone. Each load must show the write on its own, so a page
            // that never writes still fails after the third, with what each load saw.
            // A fourth and fifth load only for the service worker, and only when Chromium never settled its
            // registration in any earlier load (`register()` neither resolved nor failed: `data-sw=null`),
            // which a full suite on 2 cores has shown in three browsers in a row (stop 41): Chromium not
            // running the page's script to its end, not a page that registered and wrote nothing.
            let url = format!("{}/hostile/{name}", p.base_url());
            let mut misses: Vec<String> = Vec::new();
            let mut wrote = false;
            for load in 1..=5 {
                let unsettled =
                    name == "service-worker" && misses.iter().all(|m| m.contains("data-sw=null"));
                if load > 3 && !unsettled {
                    break;
                }
                let own = if load > 1 {
                    Some(Chrome::launch(WAIT).await)
                } else {
                    None
                };
                let outcome = load_and_watch(own.as_ref().unwrap_or(&chrome), &p, &url, sink).await;
                if let Some(b) = own {
                    b.close().await;
                }
                match outcome {
                    Ok(()) => {
                        wrote = true;
                        break;
                    }
                    Err(why) => {
                        eprintln!("{name}: load {load}: {why}");
                        misses.push(why);
                    }
                }
            }
            assert!(
                wrote,
                "{name} never wrote as it should in {} loads: {misses:?}",
                misses.len()
            );
            eprintln!(
                "{name}: {} write(s) to {sink} in all",
                p.stats().writes_to(sink)
            );
        }
        assert_eq!(
            p.stats().create_arrivals,
            0,
            "no hostile page touched the create route"
        );
        chrome.close().await;
        p.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn write_on_focus_and_autosave_write_only_once_the_user_focuses_or_types() {
        let dir = tempfile::tempdir().unwrap();
        let p = start(dir.path()).await;
        let chrome = Chrome::launch(WAIT).await;

        let page = chrome
            .open(&format!("{}/hostile/write-on-focus", p.base_url()))
            .await;
        until_js(&page, "document.readyState === 'complete'").await;
        assert_eq!(
            p.stats().writes_to("POST /api/sink/write-on-focus"),
            0,
            "no write before focus"
        );
        page.find_element("#post-text")
            .await
            .unwrap()
            .focus()
            .await
            .unwrap();
        eventually("focus writes", || {
            p.stats().writes_to("POST /api/sink/write-on-focus") >= 1
        })
        .await;
        let _ = page.close().await;

        let page = chrome
            .open(&format!("{}/hostile/autosave", p.base_url()))
            .await;
        until_js(&page, "document.readyState === 'complete'").await;
        page.find_element("#post-text")
            .await
            .unwrap()
            .focus()
            .await
            .unwrap();
        assert_eq!(
            p.stats().writes_to("POST /api/drafts"),
            0,
            "no draft before typing"
        );
        page.execute(InsertTextParams::new("draft text"))
            .await
            .unwrap();
        eventually("typing saves a draft", || {
            p.stats().writes_to("POST /api/drafts") >= 1
        })
        .await;
        let _ = page.close().await;

        assert_eq!(p.stats().create_arrivals, 0);
        chrome.close().await;
        p.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn click_hazard_pages_misbehave_as_described_without_writing() {
        let dir = tempfile::tempdir().unwrap();
        let p = start(dir.path()).await;
        let chrome = Chrome::launch(WAIT).await;
        let base = p.base_url();

        let page = chrome
            .open(&format!("{base}/hostile/duplicate-match"))
            .await;
        assert_eq!(
            eval::<u32>(&page, "document.querySelectorAll('#publish').length").await,
            2
        );

        let page = chrome.open(&format!("{base}/hostile/covered-button")).await;
        let top: String = eval(
            &page,
            "(() => { const r = document.getElementById('publish').getBoundingClientRect();
               return document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2).id; })()",
        )
        .await;
        assert_eq!(top, "promo-overlay");

        let page = chrome.open(&format!("{base}/hostile/moving-button")).await;
        let moved: bool = eval(
            &page,
            "new Promise(res => { const b = document.getElementById('publish');
               const x0 = b.getBoundingClientRect().left;
               requestAnimationFrame(() => requestAnimationFrame(() => requestAnimationFrame(() =>
                 res(b.getBoundingClientRect().left !== x0)))); })",
        )
        .await;
        assert!(moved, "the publish button moves between animation frames");

        let page = chrome.open(&format!("{base}/hostile/slow")).await;
        assert!(
            !eval::<bool>(&page, "!!document.getElementById('post-text')").await,
            "no form at load"
        );
        until_js(&page, "!!document.getElementById('post-text')").await;
        // The late form is wired up: typing enables publish.
        type_text(&page, "#post-text", "late").await;
        until_js(&page, "!document.getElementById('publish').disabled").await;

        assert_eq!(p.stats().other_writes_total, 0);
        assert_eq!(p.stats().create_arrivals, 0);
        chrome.close().await;
        p.shutdown().await;
    }

    /// The compose page end to end: typing enables publish, a click creates exactly one post as the
    /// logged-in account and lands on its permalink; a rejected post shows the error and re-enables.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn compose_page_publishes_once_and_shows_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = start(dir.path()).await;
        let chrome = Chrome::launch(WAIT).await;
        let page = chrome
            .open(&format!("{}/login?account=carol", p.base_url()))
            .await;
        until_js(
            &page,
            "location.pathname === '/compose' && document.readyState === 'complete'",
        )
        .await;
        assert!(eval::<bool>(&page, "document.getElementById('publish').disabled").await);
        type_text(&page, "#post-text", "Hello, Fixturebook ✓").await;
        until_js(&page, "!document.getElementById('publish').disabled").await;
        click(&page, "#publish").await;
        until_js(&page, "/^\\/p\\/[a-z0-9]+$/.test(location.pathname)").await;
        let path: String = eval(&page, "location.pathname").await;
        let posts = p.posts();
        assert_eq!(posts.len(), 1);
        assert_eq!(path, format!("/p/{}", posts[0].id));
        assert_eq!(posts[0].text, "Hello, Fixturebook ✓");
        assert_eq!(posts[0].account, "carol");
        assert_eq!(p.stats().create_arrivals, 1);

        p.set_fault(Fault::new(FaultMode::Reject4xx));
        let page = chrome.open(&format!("{}/compose", p.base_url())).await;
        until_js(&page, "document.readyState === 'complete'").await;
        type_text(&page, "#post-text", "will be rejected").await;
        until_js(&page, "!document.getElementById('publish').disabled").await;
        click(&page, "#publish").await;
        until_js(&page, "document.getElementById('compose-status').textContent.includes('422') || document.getElementById('compose-status').textContent.includes('rejected')").await;
        until_js(&page, "!document.getElementById('publish').disabled").await;
        assert_eq!(p.posts().len(), 1);
        assert_eq!(p.stats().create_arrivals, 2);
        chrome.close().await;
        p.shutdown().await;
    }

    /// The fact the whole project rests on: with `commit-then-drop`, ONE fetch() in plain Chromium on a
    /// reused keep-alive connection makes the create request arrive (and be stored) more than once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn chromium_resends_one_dropped_fetch_post_on_a_reused_connection() {
        let dir = tempfile::tempdir().unwrap();
        let p = start(dir.path()).await;
        let chrome = Chrome::launch(WAIT).await;
        let mut arrivals = Vec::new();
        for _trial in 0..3 {
            let before = p.stats().create_arrivals;
            p.set_fault(Fault::new(FaultMode::CommitThenDrop));
            let page = chrome.open(&format!("{}/__lab/resend", p.base_url())).await;
            until_js(
                &page,
                "document.getElementById('result').textContent !== 'running'",
            )
            .await;
            let seen: String = eval(&page, "document.getElementById('result').textContent").await;
            let n = p.stats().create_arrivals - before;
            eprintln!("re-send lab: one fetch, page saw {seen:?}, {n} create arrivals");
            assert!(
                seen.starts_with("error"),
                "every answer was dropped, so the page cannot see a status"
            );
            arrivals.push(n);
            let _ = page.close().await;
        }
        let stored = p.stats().create_stored;
        eprintln!("re-send lab: arrivals per fetch {arrivals:?}, stored {stored}");
        assert!(
            arrivals.iter().all(|&n| n >= 2),
            "arrivals per single fetch: {arrivals:?}"
        );
        assert_eq!(
            stored,
            arrivals.iter().sum::<u64>(),
            "each arrival was committed"
        );
        chrome.close().await;
        p.shutdown().await;
    }
}
