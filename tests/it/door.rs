//! The page's one door, through the real binary and real Chromium against Fixturebook: a page that writes
//! by a channel CDP `Fetch` never sees (WebSocket from the page, a worker, a shared worker, iframes;
//! WebRTC over UDP) gets nothing out, is never pressed, and is never settled `failed` without proof; and
//! no DevTools port is open while oncepost drives Chromium.
//!
//! The platform counts every WebSocket handshake, frame and UDP datagram (src/fixture_platform/live.rs):
//! every assertion of "nothing left" is the server's count, not oncepost's word.
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use oncepost::fixture_platform::{Fault, FaultMode, Stats};
use serde_json::Value;

use crate::kit::{self, unique};

fn repo(rel: &str) -> PathBuf {
    kit::repo_path(rel)
}

/// The kit's platform and data dir with alice (handle alice) added.
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
    async fn start(fault: Fault) -> Env {
        let kit = kit::Env::start(fault).await;
        kit.add_account("alice", &["--handle", "alice"]).await;
        Env { kit }
    }

    /// The bundled contract with its compose page moved to `/hostile/{variant}` (`None`: the normal compose
    /// page) and, optionally, another create-request URL.
    fn contract(&self, variant: Option<&str>, create_path: Option<&str>) -> PathBuf {
        let mut c = std::fs::read_to_string(repo("selectors/fixture.toml")).unwrap();
        if let Some(variant) = variant {
            c = c.replace(
                "url = \"{base_url}/compose\"",
                &format!("url = \"{{base_url}}/hostile/{variant}\""),
            );
            assert!(c.contains(&format!("/hostile/{variant}")));
        }
        if let Some(p) = create_path {
            c = c.replace(
                "url = \"{base_url}/api/posts\"",
                &format!("url = \"{{base_url}}{p}\""),
            );
            assert!(c.contains(p));
        }
        let path = self
            .home()
            .join(format!("contract-{}.toml", uuid::Uuid::new_v4().simple()));
        std::fs::write(&path, c).unwrap();
        path
    }

    fn publish_args(&self, contract: &Path, text: &str) -> Vec<String> {
        self.kit.publish_args("alice", contract, text)
    }

    async fn publish(&self, contract: &Path, text: &str) -> (i32, Value, String) {
        self.kit.publish("alice", contract, text, &[]).await
    }

    /// `probe --json --fill` (observing 1.5 s after the checks) of `contract`; it must exit 3 (a write was
    /// attempted). The report.
    async fn probe_fill(&self, contract: &Path) -> Value {
        let (code, report, err) = self.kit.probe_fill(contract, 1500).await;
        assert_eq!(code, 3, "{report} {err}");
        report
    }
}

fn assert_no_live_traffic(s: &Stats, what: &str) {
    assert_eq!(
        s.websocket_handshakes, 0,
        "{what}: WebSocket handshakes arrived: {s:?}"
    );
    assert_eq!(
        s.websocket_frames, 0,
        "{what}: WebSocket frames arrived: {s:?}"
    );
    assert_eq!(
        s.websocket_posts, 0,
        "{what}: posts made over a WebSocket: {s:?}"
    );
    assert_eq!(s.udp_datagrams, 0, "{what}: UDP datagrams arrived: {s:?}");
}

fn alarms(intent: &Value) -> Vec<Value> {
    intent["events"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter(|e| e["kind"] == "side_effect_alarm")
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The hole that made a duplicate: a LiveView-style page that publishes over a WebSocket. Nothing leaves
/// (0 handshakes at the server), the publish control is never pressed, the intent settles `failed` with
/// the refused channel as its proof and an alarm; `retry` + the same publish again still makes no copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_publishes_over_a_websocket_gets_nothing_out_and_is_never_pressed() {
    let env = Env::start(Fault::new(FaultMode::Normal)).await;
    let contract = env.contract(Some("websocket"), None);
    let text = unique("over a websocket");
    let (code, v, err) = env.publish(&contract, &text).await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(v["state"], "failed", "{v}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_no_live_traffic(&env.stats(), "first publish");
    assert_eq!(env.copies(&text), 0);
    let key = v["key"].as_str().unwrap().to_string();
    let intent = env.show(&key).await;
    let a = alarms(&intent);
    assert!(!a.is_empty(), "the refused WebSocket is an alarm: {intent}");
    assert!(
        intent.to_string().contains("CONNECT 127.0.0.1"),
        "the alarm names the refused tunnel: {intent}"
    );
    // The old failure: failed -> retry -> the same publish sent the post a second time.
    let (code, out, err) = env.run(&["retry", &key]).await;
    assert_eq!(code, 0, "retry: {out} {err}");
    let (code, v, err) = env.publish(&contract, &text).await;
    assert_eq!(code, 11, "{v} {err}");
    assert_no_live_traffic(&env.stats(), "after retry");
    assert_eq!(env.copies(&text), 0);
    assert_eq!(env.stats().create_arrivals, 0);
}

/// Make the store refuse every row of `kind` in the history (a SQLite trigger): the store failing at the
/// moment an alarm is recorded, while the intent's own transitions still go through.
async fn refuse_events(home: &Path, kind: &str) {
    use oncepost::store::{Policy, Store, StoreLocation};
    let store = Store::open(&StoreLocation::default_in(home), Policy::default())
        .await
        .expect("open the store");
    store
        .execute_raw_for_tests(&format!(
            "CREATE TRIGGER test_refuse_{kind} BEFORE INSERT ON events WHEN NEW.kind = '{kind}' \
             BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END"
        ))
        .await
        .expect("create the trigger");
    store.close().await;
}

/// The same page with the store refusing side-effect alarms: the refused channel's alarm cannot be
/// recorded, and that is not silent. The intent is parked for it (exit 12), never left `failed` with no
/// alarm in its history (which `retry` would have re-opened as if nothing had happened).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alarm_the_store_refuses_parks_the_intent_instead_of_vanishing() {
    let env = Env::start(Fault::new(FaultMode::Normal)).await;
    refuse_events(env.home(), "side_effect_alarm").await;
    let contract = env.contract(Some("websocket"), None);
    let text = unique("alarm refused");
    let (code, v, err) = env.publish(&contract, &text).await;
    assert_eq!(code, 12, "{v} {err}");
    assert_eq!(v["state"], "parked", "{v}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_no_live_traffic(&env.stats(), "publish");
    assert_eq!(env.copies(&text), 0);
    let intent = env.show(v["key"].as_str().unwrap()).await;
    assert!(
        alarms(&intent).is_empty(),
        "the store took no alarm: {intent}"
    );
    let events = intent["events"].as_array().unwrap();
    let parked = events.last().unwrap();
    assert_eq!(parked["kind"], "parked", "{intent}");
    let reason = parked["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("side_effect_alarm: an alarm could not be recorded")
            && reason.contains("refused by the test trigger"),
        "{reason}"
    );
    assert!(
        events.iter().any(|e| e["to"] == "failed"),
        "settled failed first (nothing left), then parked: {intent}"
    );
    let (code, out, err) = env.run(&["retry", v["key"].as_str().unwrap()]).await;
    assert_eq!(code, 4, "a parked send is not retryable: {out} {err}");
}

/// A page that opens its WebSocket only when publish is pressed: the create request never reaches
/// oncepost, and the absence of a paused request is NOT proof of "not sent" when the page tried another
/// channel after the press. It settles indeterminate (then parked by the alarm), never `failed`, so nothing
/// can retry it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_opened_by_the_press_is_refused_and_the_send_is_never_called_failed() {
    let env = Env::start(Fault::new(FaultMode::Normal)).await;
    let contract = env.contract(Some("websocket-on-publish"), None);
    let text = unique("websocket on press");
    let (code, v, err) = env.publish(&contract, &text).await;
    assert_eq!(code, 12, "{v} {err}");
    assert_eq!(v["state"], "parked", "{v}");
    assert_eq!(v["pressed"], true, "{v}");
    assert_no_live_traffic(&env.stats(), "publish");
    assert_eq!(env.copies(&text), 0);
    let key = v["key"].as_str().unwrap().to_string();
    let intent = env.show(&key).await;
    let s = intent.to_string();
    assert!(
        s.contains("indeterminate"),
        "settled indeterminate first: {s}"
    );
    assert!(!alarms(&intent).is_empty(), "{s}");
    let (code, out, err) = env.run(&["retry", &key]).await;
    assert_eq!(code, 4, "a parked send is not retryable: {out} {err}");
}

/// `failed` still happens when it is proven: a press whose create request never comes (the contract names
/// a URL the page never calls), with nothing else tried, is failed with the door's ledger as the proof.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_press_that_sends_nothing_is_failed_with_the_doors_ledger_as_proof() {
    let env = Env::start(Fault::new(FaultMode::Normal)).await;
    let contract = env.contract(None, Some("/api/elsewhere"));
    let text = unique("nothing sent");
    let (code, v, err) = env.publish(&contract, &text).await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(v["state"], "failed", "{v}");
    assert_eq!(v["pressed"], true, "{v}");
    let key = v["key"].as_str().unwrap().to_string();
    let intent = env.show(&key).await.to_string();
    assert!(
        intent.contains("the door saw nothing leave"),
        "the proof is the door's, not the missing pause: {intent}"
    );
    assert_eq!(
        env.stats().create_arrivals,
        0,
        "the page's own POST was failed before it left"
    );
    assert_eq!(env.copies(&text), 0);
}

/// Every channel from every kind of context, during a probe with `--fill`: each refused attempt is in the
/// report (verdict `write_attempted`, exit 3) and none reached the platform: no handshake, frame or UDP
/// datagram.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_channel_from_every_context_is_refused_and_reported_by_a_probe() {
    let env = Env::start(Fault::new(FaultMode::Normal)).await;
    let contract = env.contract(Some("channels"), None);
    let v = env.probe_fill(&contract).await;
    let report = &v;
    assert_eq!(report["verdict"], "write_attempted", "{v}");
    let refused = report["refused_channels"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let froms: Vec<String> = refused
        .iter()
        .filter_map(|k| k["request_line"].as_str().map(String::from))
        .collect();
    eprintln!("refused: {froms:?}");
    // Without the door the same page made 4 WebSocket handshakes and 5 UDP datagrams (the control below).
    assert!(
        refused.len() >= 4,
        "every context's WebSocket is refused and reported: {v}"
    );
    assert_no_live_traffic(&env.stats(), "probe");
}

/// Listening TCP sockets (IPv4 and IPv6) owned by any of `pids`.
fn listeners_of(pids: &[u32]) -> Vec<String> {
    let mut inodes = std::collections::HashSet::new();
    for pid in pids {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(link) = std::fs::read_link(fd.path()) {
                let l = link.to_string_lossy().into_owned();
                if let Some(inode) = l.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                    inodes.insert(inode.to_string());
                }
            }
        }
    }
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(t) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in t.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local_address st ... inode (field 9); 0A = LISTEN.
            if f.len() > 9 && f[3] == "0A" && inodes.contains(f[9]) {
                found.push(format!("{table} {}", f[1]));
            }
        }
    }
    found
}

/// Processes whose command line mentions `needle`.
fn pids_with(needle: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline"))
            && String::from_utf8_lossy(&cmd).contains(needle)
        {
            v.push(pid);
        }
    }
    v
}

/// While a publish drives Chromium (the create request held 3 s by the platform), no process of that
/// Chromium and no guard listens on any TCP port, and no DevToolsActivePort file exists: another local
/// process has nothing to connect to (a `--remote-debugging-port` listener let one read HttpOnly cookies).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_devtools_port_is_open_while_a_publish_drives_chromium() {
    let env = Env::start(Fault::new(FaultMode::CommitThenDelay).with_delay_ms(3000)).await;
    let contract = repo("selectors/fixture.toml");
    let text = unique("no port");
    let args = env.publish_args(&contract, &text);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut child = env.command(&args).spawn().expect("publish starts");
    let profiles = env.home().join("profiles");
    let needle = profiles.to_string_lossy().into_owned();
    let until = Instant::now() + Duration::from_secs(20);
    let mut seen_chromium = 0usize;
    let mut looks = 0usize;
    while Instant::now() < until {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        // Chromium (and the guard, whose argv carries Chromium's) has the profile dir on its command line.
        let pids = pids_with(&needle);
        if !pids.is_empty() && env.stats().create_arrivals > 0 {
            seen_chromium = seen_chromium.max(pids.len());
            looks += 1;
            let l = listeners_of(&pids);
            assert!(
                l.is_empty(),
                "a DevTools listener is open during the publish: {l:?}"
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let out = child.wait_with_output().await.expect("publish ends");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        seen_chromium >= 2 && looks >= 3,
        "the check looked at a live Chromium ({seen_chromium} processes, {looks} looks)"
    );
    let active_port = walk(&profiles)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "DevToolsActivePort"))
        .collect::<Vec<_>>();
    assert!(active_port.is_empty(), "{active_port:?}");
    assert_eq!(env.copies(&text), 1);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}

/// The control: the same `channels` page in a plain headless Chromium (no door) really does reach the
/// platform by WebSocket and UDP, so the zero counts above are the door's doing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_without_the_door_the_channels_page_reaches_the_platform() {
    let env = Env::start(Fault::new(FaultMode::Normal)).await;
    let chromium = oncepost::browser::find_chromium().expect("chromium");
    let url = format!("{}/hostile/channels", env.platform.base_url());
    let profile = env.home().join("control-profile");
    let mut child = tokio::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(&url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("chromium starts");
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        let s = env.stats();
        if s.websocket_frames >= 1 && s.udp_datagrams >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = child.kill().await;
    let s = env.stats();
    eprintln!("control (no door): {s:?}");
    assert!(
        s.websocket_handshakes >= 1 && s.websocket_frames >= 1,
        "{s:?}"
    );
    assert!(s.udp_datagrams >= 1, "{s:?}");
}

/// A "read" that carries the draft (an analytics pixel: `GET /api/pixel?d=<what was typed>` on every
/// keystroke) is a write: from the fill until the press it is failed before it leaves, in a probe and in a
/// publish, and the publish still goes out once. The platform saw no pixel with the text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_that_carries_the_typed_text_is_a_write_and_never_leaves() {
    let env = Env::start(Fault::new(FaultMode::Normal)).await;
    let contract = env.contract(Some("pixel"), None);
    let v = env.probe_fill(&contract).await;
    let carried = v["writes"]
        .as_array()
        .map(|w| w.iter().filter(|w| w["carried_typed_text"] == true).count())
        .unwrap_or(0);
    assert!(carried >= 1, "the pixel is reported as a write: {v}");
    assert_eq!(env.stats().writes_to("GET /api/pixel"), 0, "probe");

    published_without_the_pixel(&env, &contract, &unique("the pixel must not see this")).await;
    // A text shorter than what is looked for of a long one (32 characters): between the text and its last
    // character, typed as a key, the page holds it one character short, and its pixel carries that.
    published_without_the_pixel(&env, &contract, "A short post of 29 characters").await;
}

/// Publish `text` with a pixel page's `contract`: published once, the platform saw no pixel carrying the
/// draft, and the refused pixel is an alarm of the intent.
async fn published_without_the_pixel(env: &Env, contract: &Path, text: &str) {
    let (code, v, err) = env.publish(contract, text).await;
    assert_eq!(code, 0, "{text}: {v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(text), 1);
    assert_eq!(env.stats().writes_to("GET /api/pixel"), 0, "{text}");
    let intent = env.show(v["key"].as_str().unwrap()).await;
    assert!(
        alarms(&intent)
            .iter()
            .any(|a| a.to_string().contains("/api/pixel")),
        "{intent}"
    );
}

/// The account's browser profile keeps its login but not the URLs it visited: a token in a visited URL's
/// query (here the login URL's `access_token`) is in no file of the profile after the publish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_profile_keeps_no_visited_url_with_its_token() {
    let env = Env::start(Fault::new(FaultMode::Normal)).await;
    let token = format!("tok{}", uuid::Uuid::new_v4().simple());
    let contract = repo("selectors/fixture.toml");
    let base = env.platform.base_url();
    let text = unique("history");
    let mut args = env.publish_args(&contract, &text);
    let i = args.iter().position(|a| a == "--login-url").unwrap();
    args[i + 1] = format!("{base}/login?account=alice&access_token={token}");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = env.run(&args).await;
    assert_eq!(code, 0, "{out} {err}");
    let profiles = env.home().join("profiles");
    let files = walk(&profiles);
    assert!(
        files.len() > 10,
        "the profile exists: {} files",
        files.len()
    );
    let hits: Vec<_> = files
        .iter()
        .filter(|p| p.is_file())
        .filter(|p| {
            std::fs::read(p).is_ok_and(|b| b.windows(token.len()).any(|w| w == token.as_bytes()))
        })
        .collect();
    assert!(
        hits.is_empty(),
        "the visited URL's token is kept in {hits:?}"
    );
}

/// The pixel in other clothes: the draft as base64 of a JSON object (`/hostile/pixel?encode=base64`), and a
/// text too short to look for inside a URL (7 characters) sent as the whole query value. Each is a write:
/// failed before it leaves, the post still goes out once, the platform saw no pixel with a draft.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_that_carries_the_typed_text_packed_or_short_never_leaves() {
    let env = Env::start(Fault::new(FaultMode::Normal)).await;
    let packed = env.contract(Some("pixel?encode=base64"), None);
    let plain = env.contract(Some("pixel"), None);
    for (contract, text) in [
        (&packed, unique("packed for the tracker")),
        (&plain, "hey you".to_string()),
    ] {
        published_without_the_pixel(&env, contract, &text).await;
    }
}

/// A page that sends the post again by a GET on the press (`/hostile/resend-get`: `fetch('/api/create?text=')`,
/// kept alive past the navigation, which this platform honours). The typed text is watched after the press
/// too: only oncepost's own read page may carry it (the read-back's search), so the resend is failed before
/// it leaves, the post goes out once and is read back. Before, the watch ended at the press: the GET went out
/// as a read and the platform made a second copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_that_resends_the_post_after_the_press_never_leaves() {
    resent_by_a_get_never_leaves("resend-get", "sent once, never again by a get").await;
}

/// A publish on `/hostile/{variant}`, whose press also sends the post again by `GET /api/create`: the GET is
/// failed before it leaves (the platform never got it, one copy) and is in the intent's write log.
async fn resent_by_a_get_never_leaves(variant: &str, label: &str) {
    let env = Env::start(Fault::new(FaultMode::Normal)).await;
    let contract = env.contract(Some(variant), None);
    let text = unique(label);
    let (code, v, err) = env.publish(&contract, &text).await;
    assert_eq!(env.stats().writes_to("GET /api/create"), 0, "{v} {err}");
    assert_eq!(env.copies(&text), 1, "one copy: {v} {err}");
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    let intent = env.show(v["key"].as_str().unwrap()).await;
    assert!(
        intent.to_string().contains("/api/create"),
        "the resend is in the write log: {intent}"
    );
}

/// The same resend by the compose page navigating itself to it (`/hostile/resend-get?by=navigation`, as a
/// form without `method` sends its fields by GET when its script publishes and does not stop the form's own
/// submission): the text is in the navigation's query, so it is failed before it leaves, the post goes out
/// once. Before, the compose page's own navigation could carry the text anywhere after the press: the
/// platform got the GET and made a second copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compose_page_navigating_itself_to_resend_the_post_never_leaves() {
    resent_by_a_get_never_leaves(
        "resend-get?by=navigation",
        "sent once, never again by a form",
    )
    .await;
}

/// A create answered by a redirect whose URL carries the text in its query (`/compose?redirect=1`: `303` to
/// `/p/ID?created=<the post>`, as a server-rendered form's create is answered): the browser's GET there is
/// the platform's order, not the page sending the post again, so it is let through, once, and nothing is
/// recorded as a write. Before, it was failed as a read carrying the typed text after the press (an alarm on
/// the intent; the page never got its answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redirect_the_creates_answer_orders_may_carry_the_text() {
    let env = Env::start(Fault::new(FaultMode::Normal)).await;
    let contract = kit::compose_asking("redirect=1")
        .replace(
            "url = \"{base_url}/api/posts\"",
            "url_regex = '/api/posts\\?redirect=created$'",
        )
        .replacen(
            "[[success]]",
            "[[success]]\nresponse_status = 303\n\n[[success]]",
            1,
        );
    assert!(contract.contains("redirect=created"));
    let contract = env.write_file("redirect.toml", &contract);
    let text = unique("answered by a redirect that names it");
    let (code, v, err) = env.publish(&contract, &text).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1);
    let intent = env.show(v["key"].as_str().unwrap()).await;
    assert!(
        !kit::event_kinds(&intent["events"]).contains(&"side_effect_alarm".to_string()),
        "the ordered GET is no write: {intent}"
    );
}

/// After the press the path of the compose page's own navigation may carry the text: an app that shows the
/// new post at a URL made of it (`/compose?nav_text=1`: `/p/ID/<the post>`) gets there, nothing is recorded
/// as a write, and the post is read back once. (Its query carrying the text, a frame or window navigated
/// there, or a fetch, is failed: the test above and the write guard's unit tests.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compose_pages_own_navigation_may_carry_the_text_after_the_press() {
    let env = Env::start(Fault::new(FaultMode::Normal)).await;
    let contract = env.write_file("nav-text.toml", &kit::compose_asking("nav_text=1"));
    let text = unique("shown at a url that carries it");
    let (code, v, err) = env.publish(&contract, &text).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1);
    let intent = env.show(v["key"].as_str().unwrap()).await;
    assert!(
        !kit::event_kinds(&intent["events"]).contains(&"side_effect_alarm".to_string()),
        "the navigation is no write: {intent}"
    );
    // Nothing recorded names the URL as a write or a read. The one place it may stand is where the page was
    // when the create's answer was recognised (`page_url`): under load the navigation has already happened
    // then (it failed CI once on exactly that).
    let path = format!("/{}", text.replace(' ', "%20"));
    let mut named = Vec::new();
    strings_outside(&intent, "page_url", &mut named);
    assert!(
        !named.iter().any(|s| s.contains(&path)),
        "the navigation is no write: {intent}"
    );
}

/// Every string in `v`, except those under a key named `skip`.
fn strings_outside<'a>(v: &'a Value, skip: &str, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| strings_outside(x, skip, out)),
        Value::Object(o) => o
            .iter()
            .filter(|(k, _)| k.as_str() != skip)
            .for_each(|(_, x)| strings_outside(x, skip, out)),
        _ => {}
    }
}

/// Posts shown only inside a frame (`?framed=1` on Fixturebook's post and search pages: a page that frames its
/// posts, as an app shell or an embedded widget of the same site does). The listing looks into the frames too
/// (readback.rs, `ITEMS_JS`): a post is read back there by its permalink, and one already there is found by
/// the look before writing and never sent again. Without the frames in the listing, the permalink showed
/// nothing and the send ended indeterminate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_shown_inside_a_frame_is_read_back_there_and_found_before_writing() {
    let env = Env::start(Fault::new(FaultMode::Normal)).await;
    let contract = env.write_file("framed-reads.toml", &kit::read_pages_asking("framed=1"));
    let text = unique("read inside a frame");
    let (code, v, err) = env.publish(&contract, &text).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1);
    let t = env.show(v["key"].as_str().unwrap()).await;
    let read = t["events"]
        .as_array()
        .and_then(|es| es.iter().find(|e| e["kind"] == "published"))
        .map(|e| e["details"]["readback"]["readback"].clone())
        .unwrap_or_default();
    assert_eq!(read["by"], "permalink", "{t}");
    assert!(
        read["url"]
            .as_str()
            .is_some_and(|u| u.ends_with("?framed=1")),
        "{read}"
    );
    // A post already there, shown inside the search page's frame: the look before writing finds it and
    // nothing is sent again.
    let there = unique("already inside a frame");
    let r = kit::platform::post_directly(&env.base_url(), "alice", &there).await;
    assert_eq!(r.status().as_u16(), 201);
    let arrivals = env.arrivals();
    let (code, v, err) = env.publish(&contract, &there).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert!(
        kit::event_kinds(&v["timeline"]).contains(&"found_before_write".to_string()),
        "{v}"
    );
    assert_eq!(env.arrivals(), arrivals, "nothing was sent again");
    assert_eq!(env.copies(&there), 1);
}

/// A compose page framed from another site (`/hostile/cross-origin`: `localhost` for `127.0.0.1`) writes as
/// soon as it loads (a fetch and a beacon). The door is browser-wide: a probe reports both writes from the
/// frame, and neither reached the platform. Its locators are checked inside the frame (the headless shell
/// runs it in the page's process: other_origin.rs), so the probe finds them; a publish presses its Publish,
/// whose create goes to the other site's `/api/posts`, not the contract's create request: failed before it
/// left, and nothing is created anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_origin_frame_is_behind_the_door_and_its_other_create_never_leaves() {
    let env = Env::start(Fault::new(FaultMode::Normal)).await;
    let framed = env.write_file(
        "cross-origin-framed.toml",
        &kit::hostile_contract_text("cross-origin", Some("iframe#compose-frame")),
    );
    let report = env.probe_fill(&framed).await;
    let from_frame: Vec<&Value> = report["writes"]
        .as_array()
        .map(|w| {
            w.iter()
                .filter(|a| {
                    a["url"].as_str().is_some_and(|u| {
                        u.starts_with("http://localhost:") && u.ends_with("/api/sink/cross-origin")
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let kinds: Vec<&str> = from_frame
        .iter()
        .filter_map(|a| a["resource_type"].as_str())
        .collect();
    assert!(
        kinds.contains(&"Xhr") && kinds.contains(&"Ping"),
        "the frame's fetch and beacon are reported: {report}"
    );
    assert!(from_frame.iter().all(|a| a["blocked"] == true), "{report}");
    assert!(
        !report["problems"]
            .to_string()
            .contains("out of the page's reach"),
        "the fields are found inside the frame: {report}"
    );
    assert_eq!(env.stats().other_writes_total, 0, "{:?}", env.stats());

    let text = unique("framed from another site");
    let (code, v, err) = env.publish(&framed, &text).await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(v["state"], "failed", "{v}");
    assert_eq!(v["summary"], "failed: the create request never left", "{v}");
    assert_eq!((env.arrivals(), env.copies(&text)), (0, 0), "{v}");
    assert_eq!(env.stats().other_writes_total, 0, "{:?}", env.stats());
    assert_no_live_traffic(&env.stats(), "publish");
}

/// A fresh platform and alice, the compose page asking `query` (its contract written under `name`), and
/// `text` published once through it: (the env, the contract, the publish's JSON). Published, one copy and one
/// create arrival, or it panics saying what happened.
async fn published_once_asking(query: &str, name: &str, text: &str) -> (Env, PathBuf, Value) {
    let env = Env::start(Fault::new(FaultMode::Normal)).await;
    let c = env.write_file(name, &kit::compose_asking(query));
    let (code, v, err) = env.publish(&c, text).await;
    assert_eq!(
        (code, v["state"].as_str()),
        (0, Some("published")),
        "{query}: {v} {err}"
    );
    assert_eq!((env.copies(text), env.arrivals()), (1, 1), "{query}: {v}");
    (env, c, v)
}

/// Speculation rules (`<script type="speculationrules">`, shipped by WordPress 6.8 and many shops): the
/// browser loads the listed URLs by itself as the compose page loads, prefetched or prerendered, before
/// anyone follows them (`/compose?speculate=prefetch|prerender`: the feed, and a "read" with a side effect,
/// `GET /api/pixel?d=speculated`). Chromium makes them from the browser process, around CDP `Fetch`, so
/// they reach the sinkhole, which refuses them; read as the page's own channel, nothing was pressed (failed,
/// the post never made). They carry `Sec-Purpose: prefetch`, which no page can send: the browser's own.
/// Published once; the speculated "read" never reached the platform. Red without `is_speculative`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn speculative_loads_of_the_compose_page_never_stop_the_publish() {
    for how in ["prefetch", "prerender"] {
        let text = unique(&format!("a page that speculates ({how})"));
        let (env, _, _) = published_once_asking(
            &format!("speculate={how}"),
            &format!("speculate-{how}.toml"),
            &text,
        )
        .await;
        // Refused at the sinkhole like every load that goes round the door: the "read" with a side
        // effect never reached the platform.
        assert_eq!(env.stats().writes_to("GET /api/pixel"), 0, "{how}");
    }
}

/// The same speculation rules on a compose page served over https, as every real platform is: the browser's
/// speculative loads reach the sinkhole as `CONNECT host:port` alone, the `Sec-Purpose` header inside the
/// tunnel's TLS. The sinkhole looks inside (the door's own certificate, pinned in the browser): the
/// browser's own, published once; the speculated "read" never reached the platform. Red without the look
/// inside (failed: "the page tried 2 channel(s) oncepost refuses", nothing pressed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn speculative_loads_of_an_https_compose_page_never_stop_the_publish() {
    for how in ["prefetch", "prerender"] {
        let env = Env::start(Fault::new(FaultMode::Normal)).await;
        let root = env.write_file("tls-root.pem", env.platform.tls_root_pem());
        let c = env.write_file(
            &format!("speculate-{how}.toml"),
            &kit::compose_asking(&format!("speculate={how}")),
        );
        let text = unique(&format!("an https page that speculates ({how})"));
        let args = env.publish_args_at(&env.platform.tls_url(), "alice", &c, &text);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = env
            .oncepost
            .command(&args)
            .env("SSL_CERT_FILE", &root)
            .output()
            .await
            .expect("run oncepost");
        let (code, stdout, err) = kit::cli::output_of(&out);
        let v: Value = serde_json::from_str(&stdout).unwrap_or_default();
        let key = v["key"].as_str().unwrap_or_default().to_string();
        assert_eq!(
            (code, v["state"].as_str()),
            (0, Some("published")),
            "{how}: {v} {err}\n{}",
            env.show(&key).await
        );
        assert_eq!((env.copies(&text), env.arrivals()), (1, 1), "{how}: {v}");
        assert_eq!(env.stats().writes_to("GET /api/pixel"), 0, "{how}");
    }
}

/// A page that hands its create request to a worker of its own (`/compose?via=worker|shared_worker`: a
/// dedicated worker, as apps that keep network calls off the main thread do; a shared worker, as web chat
/// clients that share one connection between tabs do). The worker's request is paused by the browser-wide
/// interception like the page's own: handed over, sent once, made once; a rerun sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_a_worker_sends_for_the_page_is_the_one_create() {
    for how in ["worker", "shared_worker"] {
        let text = unique(&format!("a post sent by a {how}"));
        let (env, c, _) =
            published_once_asking(&format!("via={how}"), &format!("via-{how}.toml"), &text).await;
        let (code, v, err) = env.publish(&c, &text).await;
        assert_eq!(
            (code, v["pressed"].as_bool()),
            (0, Some(false)),
            "{how}: {v} {err}"
        );
        assert_eq!(env.arrivals(), 1, "{how}: the rerun sent nothing");
    }
}

/// A deferred beacon (`fetchLater`, shipped by Chromium 135, which analytics libraries now register on
/// every page; `/compose?fetch_later=now|unload`): the browser sends it by itself, at once or when the page
/// goes away. Measured on the headless shell 156: it is paused by the door like any request of the page,
/// failed as a write (an alarm, never an arrival), and the publish goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_beacon_is_failed_at_the_door_and_the_post_made_once() {
    for how in ["now", "unload"] {
        let text = unique(&format!("a page with a deferred beacon ({how})"));
        let (env, _, v) = published_once_asking(
            &format!("fetch_later={how}"),
            &format!("later-{how}.toml"),
            &text,
        )
        .await;
        assert_eq!(
            env.stats().writes_to("POST /api/sink/fetch-later"),
            0,
            "{how}"
        );
        let history = env.show(v["key"].as_str().unwrap()).await.to_string();
        assert!(
            history.contains("/api/sink/fetch-later"),
            "{how}: the beacon is an alarm: {history}"
        );
    }
}
