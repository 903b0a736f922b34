//! Pages that publish over a WebSocket (chat UIs, Phoenix LiveView, Meteor/DDP), through the real binary and
//! real Chromium: Fixturebook's `/hostile/websocket` saves a draft frame on every keystroke and publishes with
//! a frame on the click; its platform answers with the new post's id (`fixtures/contracts/websocket.toml`).
//!
//! The door relays that one socket during a publish (`src/browser/door/socket.rs`): declared drafts go
//! through, the publish frame only after the press, once, sent by oncepost; any other frame the page sends
//! there never leaves, and in a probe none of the page's frames leaves.
use std::path::PathBuf;

use oncepost::fixture_platform::{Fault, FaultMode};
use serde_json::Value;

use crate::kit::{self, unique};

async fn start() -> kit::Env {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    env
}

fn contract() -> PathBuf {
    kit::repo_path("fixtures/contracts/websocket.toml")
}

/// The shipped contract with `from` replaced by `to` (which must change it).
fn contract_with(env: &kit::Env, name: &str, from: &str, to: &str) -> PathBuf {
    let c = std::fs::read_to_string(contract()).unwrap();
    let changed = c.replace(from, to);
    assert_ne!(changed, c, "{name}: {from:?} is in the contract");
    env.write_file(&format!("{name}.toml"), &changed)
}

fn alarms(show: &Value) -> Vec<String> {
    show["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["kind"] == "side_effect_alarm")
        .map(|e| e.to_string())
        .collect()
}

/// A probe sends no frame (the drafts are writes, the publish frame the create); the publish sends the drafts it declares and the publish
/// frame once, takes the post's id from the platform's answer and reads it back; run again, nothing is
/// pressed and nothing more reaches the socket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_publishes_over_its_websocket_is_published_once() {
    let env = start().await;
    let (code, report, err) = env.probe_fill(&contract(), 500).await;
    assert_eq!(code, 0, "{report} {err}");
    assert_eq!(report["verdict"], "pass", "{report}");
    let s = env.stats();
    assert_eq!(
        (s.websocket_frames, s.websocket_posts),
        (0, 0),
        "a probe sends no message of the page's on its socket (the drafts are writes): {s:?}"
    );

    let text = unique("made over a websocket, once");
    let (code, v, err) = env.publish("alice", &contract(), &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(v["pressed"], true, "{v}");
    let id = env.post_id_of("alice", &text);
    assert_eq!(v["platform_id"], id.as_str(), "the id is the answer's: {v}");
    assert_eq!(env.copies(&text), 1);
    let s = env.stats();
    assert_eq!(s.websocket_posts, 1, "{s:?}");
    assert!(
        s.websocket_frames > 1,
        "the declared drafts went through before the publish frame: {s:?}"
    );
    assert_eq!(s.create_arrivals, 0, "no HTTP create: {s:?}");
    let show = env.show(v["key"].as_str().unwrap()).await;
    assert!(alarms(&show).is_empty(), "{show}");
    let log = show.to_string();
    assert!(
        log.contains("non_publish_writes") && log.contains("WEBSOCKET"),
        "the drafts let through are evidence: {show}"
    );

    let frames = s.websocket_frames;
    let (code, v, err) = env.publish("alice", &contract(), &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(env.copies(&text), 1);
    let s = env.stats();
    assert_eq!(
        (s.websocket_posts, s.websocket_frames),
        (1, frames),
        "{s:?}"
    );
}

/// An outbox that does not trust its socket: right after the publish frame the page closes the socket and
/// sends the same frame on a new one. The second never leaves (a further create, an alarm): one post.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_frame_sent_again_on_a_new_socket_never_leaves() {
    let env = start().await;
    let twice = contract_with(
        &env,
        "websocket-twice",
        "/hostile/websocket\"",
        "/hostile/websocket?twice=1\"",
    );
    let text = unique("sent twice by the page, made once");
    let (code, v, err) = env.publish("alice", &twice, &text, &[]).await;
    let show = env.show(v["key"].as_str().unwrap_or_default()).await;
    assert_eq!(env.copies(&text), 1, "{v} {err} {show}");
    let s = env.stats();
    assert_eq!(s.websocket_posts, 1, "{s:?}");
    assert_eq!(v["pressed"], true, "{v}");
    // Published and read back, or parked by the alarm: never a second copy.
    assert!(matches!(code, 0 | 12), "{v} {err}");
    let a = alarms(&show);
    assert!(
        a.iter()
            .any(|a| a.contains("further create") && a.contains("WEBSOCKET")),
        "the second publish frame is an alarm: {show}"
    );
}

/// The same page with its drafts not declared: the first draft frame never leaves and its socket is cut, so
/// the page's publish frame has no socket to go on; the post fails on the door's proof and no frame ever
/// reached the platform. A message the contract does not name never leaves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_the_contract_does_not_name_never_leaves() {
    let env = start().await;
    let c = std::fs::read_to_string(contract()).unwrap();
    let at = c.find("\n[[non_publish_writes]]").expect("the declaration");
    let end = c[at..].find("\n[readback]").expect("readback") + at;
    let undeclared = env.write_file(
        "websocket-undeclared.toml",
        &format!("{}{}", &c[..at], &c[end..]),
    );
    let text = unique("drafts not declared");
    let (code, v, err) = env.publish("alice", &undeclared, &text, &[]).await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(v["state"], "failed", "{v}");
    assert_eq!(env.copies(&text), 0);
    let s = env.stats();
    assert_eq!((s.websocket_frames, s.websocket_posts), (0, 0), "{s:?}");
    let show = env.show(v["key"].as_str().unwrap()).await;
    assert!(
        alarms(&show).iter().any(|a| a.contains("WEBSOCKET")),
        "the draft frame the guard stopped is an alarm: {show}"
    );
}

/// A page that sends its publish frame by itself, before anything is pressed: the frame never leaves (the
/// create leaves only by an authorized press), its socket is cut, and the press that follows finds no socket
/// to publish on: failed on the door's proof, no post, an alarm.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_frame_before_the_press_never_leaves() {
    let env = start().await;
    let early = contract_with(
        &env,
        "websocket-early",
        "/hostile/websocket\"",
        "/hostile/websocket?early=1\"",
    );
    let text = unique("published by the page before the press");
    let (code, v, err) = env.publish("alice", &early, &text, &[]).await;
    let show = env.show(v["key"].as_str().unwrap_or_default()).await;
    assert_eq!(env.copies(&text), 0, "{v} {err} {show}");
    let s = env.stats();
    assert_eq!(s.websocket_posts, 0, "{s:?}");
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(v["state"], "failed", "{v}");
    assert!(
        alarms(&show).iter().any(|a| a.contains("WEBSOCKET")),
        "the early publish frame is an alarm: {show}"
    );
}

/// `contract check` passes the shipped contract and refuses what the relay could not honour: a URL that is no
/// socket's, a `url_regex`, headers, a declared message with no body_regex (every message would pass), a declared
/// message where nothing publishes over a socket, an HTTP answer rule, `socket_answer` without a socket
/// create, and all of it in format 1.
#[tokio::test]
async fn a_socket_create_the_relay_cannot_honour_is_refused() {
    let env = start().await;
    let good = std::fs::read_to_string(contract()).unwrap();
    let (code, out, err) = env
        .run(&["contract", "check", contract().to_str().unwrap()])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let create = r#"create_request = { method = "WEBSOCKET", url = "{base_url}/api/live", "#;
    for (name, from, to, says) in [
        (
            "scheme",
            create,
            r#"create_request = { method = "WEBSOCKET", url = "ftp://chat.example/api/live", "#,
            "is not a WebSocket URL",
        ),
        (
            "regex",
            create,
            r#"create_request = { method = "WEBSOCKET", url_regex = "/api/live", "#,
            "is named by its socket's url",
        ),
        (
            "headers",
            create,
            r#"create_request = { method = "WEBSOCKET", url = "{base_url}/api/live", headers = { origin = "x" }, "#,
            "a WebSocket message has no headers",
        ),
        (
            "all-messages",
            "body_regex = '^\\{\"type\":\"draft\"'\n",
            "",
            "a non-publish message needs its body_regex",
        ),
        (
            "http-create",
            create,
            r#"create_request = { method = "POST", url = "{base_url}/api/posts", "#,
            "WebSocket messages are declared only for a socket oncepost relays",
        ),
        (
            "http-answer",
            "socket_answer = '\"id\":\"(?P<id>[a-z0-9]+)\"'",
            "response_status = 201\njson_field = \"id\"",
            "a create over a WebSocket has no HTTP response",
        ),
        (
            "format1",
            "format = 2",
            "format = 1",
            "on a WebSocket needs format = 2",
        ),
    ] {
        let changed = good.replace(from, to);
        assert_ne!(changed, good, "{name}");
        env.assert_check_refuses(&format!("socket-{name}"), &changed, says)
            .await;
    }
}

/// The same page served over https: its socket is a `wss://` one. The browser's side of the tunnel ends at
/// oncepost (the door's own certificate, pinned in the browser by its key), the platform's side is verified
/// like every other connection of oncepost (here by Fixturebook's test root, `SSL_CERT_FILE`): published once,
/// the id from the answer; run again, nothing more reaches the socket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_on_https_publishes_over_its_wss_socket_once() {
    let env = start().await;
    let root = env.write_file("tls-root.pem", env.platform.tls_root_pem());
    let base = env.platform.tls_url();
    let text = unique("made over a wss socket, once");
    let args = env.publish_args_at(&base, "alice", &contract(), &text);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = || {
        let out = env
            .oncepost
            .command(&args)
            .env("SSL_CERT_FILE", &root)
            .output();
        async move {
            let out = out.await.expect("run oncepost");
            let (code, stdout, err) = kit::cli::output_of(&out);
            (
                code,
                serde_json::from_str::<Value>(&stdout).unwrap_or_default(),
                err,
            )
        }
    };
    let (code, v, err) = run().await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(
        v["platform_id"],
        env.post_id_of("alice", &text).as_str(),
        "{v}"
    );
    assert_eq!(env.copies(&text), 1);
    let s = env.stats();
    assert_eq!(s.websocket_posts, 1, "{s:?}");
    let frames = s.websocket_frames;
    let (code, v, err) = run().await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    let s = env.stats();
    assert_eq!(
        (s.websocket_posts, s.websocket_frames),
        (1, frames),
        "{s:?}"
    );
}

/// The platform makes the post and closes the socket without answering (Fixturebook's `commit-then-drop`
/// hits its publish frames too): the create message was delivered, no answer came, so the send is
/// `indeterminate`, never `failed`; reconcile finds the post by reading, and no command sends it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_closed_after_the_post_was_made_is_settled_by_reading_never_by_sending_again() {
    let env = kit::Env::start(Fault::new(FaultMode::CommitThenDrop)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let text = unique("made, then the socket closed");
    let (code, v, err) = env
        .publish("alice", &contract(), &text, &["--success-timeout", "2s"])
        .await;
    assert_eq!(code, 10, "{v} {err}");
    assert_eq!(v["state"], "indeterminate", "{v}");
    assert_eq!(v["pressed"], true, "{v}");
    assert_eq!(env.copies(&text), 1);
    env.platform.set_fault(Fault::default());
    let key = v["key"].as_str().unwrap().to_string();
    // Past the contract's propagation window: a lookup means something only then.
    tokio::time::sleep(std::time::Duration::from_millis(2_100)).await;
    let (code, r, err) = env.reconcile_key(&contract(), &key).await;
    assert_eq!(code, 0, "{r} {err}");
    assert_eq!(r["state"], "published", "{r}");
    assert_eq!(
        r["outcome"]["platform_id"],
        env.post_id_of("alice", &text).as_str(),
        "{r}"
    );
    let (code, v, err) = env.publish("alice", &contract(), &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(env.copies(&text), 1);
    assert_eq!(env.stats().websocket_posts, 1);
}
