//! Apps that hear on a WebSocket and publish by HTTP, through the real binary and real Chromium:
//! Fixturebook's `/hostile/live-updates` opens a WebSocket on load only to hear about new posts (a streaming
//! timeline, a chat's presence) and opens it again after every close; it publishes by the normal create
//! request (`fixtures/contracts/live-sockets.toml`).
//!
//! The door refuses every socket (nothing reaches the platform: its handshake count stays 0). Undeclared, a
//! socket tried before the press stops the publish, since the page may publish that way; a contract that
//! declares where its live sockets connect (`[[live_sockets]]`, by host and port, all a proxied socket
//! shows) gets its post made once. A socket to any other host still stops it, and a declared socket that
//! is really the page's way to publish makes nothing: the press finds no create request and the post fails
//! with the door's proof.
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
    kit::repo_path("fixtures/contracts/live-sockets.toml")
}

/// The shipped contract with `from` replaced by `to` (which must change it).
fn contract_with(env: &kit::Env, name: &str, from: &str, to: &str) -> PathBuf {
    let c = std::fs::read_to_string(contract()).unwrap();
    let changed = c.replace(from, to);
    assert_ne!(changed, c, "{name}: {from:?} is in the contract");
    env.write_file(&format!("{name}.toml"), &changed)
}

/// The shipped contract without its `[[live_sockets]]` declaration.
fn undeclared(env: &kit::Env) -> PathBuf {
    let c = std::fs::read_to_string(contract()).unwrap();
    let at = c
        .find("\n# The page's live updates")
        .expect("the declaration");
    env.write_file("live-undeclared.toml", &c[..at])
}

fn has_evidence(show: &Value, point: &str) -> bool {
    show["events"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|e| e["kind"] == "evidence" && e.to_string().contains(point))
}

/// Undeclared, the live socket stops the publish before its press (the control); declared, the probe lists
/// it apart from the write attempts (verdict pass) and the post is made once and read back, with the refused
/// sockets kept as evidence and no alarm. No handshake ever reached the platform.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_hears_on_a_declared_live_socket_publishes_once() {
    let env = start().await;
    let text = unique("heard live, made by the create request");
    let run = env.publish("alice", &undeclared(&env), &text, &[]).await;
    env.assert_failed_before_the_press(run, "[[live_sockets]]")
        .await;

    let (code, report, err) = env.probe_fill(&contract(), 500).await;
    assert_eq!(code, 0, "{report} {err}");
    assert_eq!(report["verdict"], "pass", "{report}");
    assert_eq!(
        report["refused_channels"],
        serde_json::json!([]),
        "{report}"
    );
    assert!(
        report["live_sockets_refused"]
            .as_array()
            .is_some_and(|v| !v.is_empty()),
        "{report}"
    );

    let text = unique("heard live, made once");
    let (code, v, err) = env.publish("alice", &contract(), &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(v["pressed"], true, "{v}");
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1));
    let show = env.show(v["key"].as_str().unwrap()).await;
    assert!(
        !kit::event_kinds(&show["events"]).contains(&"side_effect_alarm".to_string()),
        "a declared live socket is no alarm: {show}"
    );
    assert!(
        has_evidence(&show, "live_sockets_refused"),
        "the refused sockets are evidence: {show}"
    );
    let s = env.stats();
    assert_eq!(
        (s.websocket_handshakes, s.websocket_frames),
        (0, 0),
        "{s:?}"
    );
}

/// The page also opens a socket to another host (`?other=1`: the other loopback name), which the contract
/// does not declare: the publish stops before its press, naming that host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_to_a_host_the_contract_does_not_declare_still_stops_the_publish() {
    let env = start().await;
    let other = contract_with(
        &env,
        "live-other-host",
        "/hostile/live-updates\"",
        "/hostile/live-updates?other=1\"",
    );
    let text = unique("heard on two hosts");
    let run = env.publish("alice", &other, &text, &[]).await;
    let key = run.1["key"].as_str().unwrap_or_default().to_string();
    env.assert_failed_before_the_press(run, "channel").await;
    let show = env.show(&key).await;
    let named = if env.base_url().contains("127.0.0.1") {
        "CONNECT localhost:"
    } else {
        "CONNECT 127.0.0.1:"
    };
    assert!(show.to_string().contains(named), "{named} in {show}");
    assert_eq!(env.copies(&text), 0);
    assert_eq!(env.stats().websocket_handshakes, 0);
}

/// A contract that declares as live the socket a page really publishes on (`/hostile/websocket`: drafts and
/// the post go over `/api/live`): the door refuses it, the press finds no create request, and the post is
/// failed with the door's proof (nothing left: no handshake, no post), never retried by oncepost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_live_socket_that_is_really_the_way_to_publish_makes_nothing() {
    let env = start().await;
    let wrong = contract_with(
        &env,
        "live-but-publishes",
        "/hostile/live-updates\"",
        "/hostile/websocket\"",
    );
    let text = unique("published over the socket it declared live");
    let (code, v, err) = env.publish("alice", &wrong, &text, &[]).await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(v["state"], "failed", "{v}");
    assert_eq!(v["pressed"], true, "{v}");
    let show = env.show(v["key"].as_str().unwrap()).await;
    assert!(
        show.to_string().contains("the door saw nothing leave"),
        "failed on the door's proof: {show}"
    );
    assert!(has_evidence(&show, "live_sockets_refused"), "{show}");
    let s = env.stats();
    assert_eq!(
        (s.websocket_handshakes, s.websocket_posts, s.create_arrivals),
        (0, 0, 0),
        "{s:?}"
    );
    assert_eq!(env.copies(&text), 0);
}

/// `contract check` refuses a live socket with a path (the door sees a socket's host and port only), one
/// of another scheme, one with a blank why, and `live_sockets` in a format 1 contract.
#[tokio::test]
async fn a_live_socket_the_door_cannot_tell_apart_is_refused() {
    let env = start().await;
    let good = std::fs::read_to_string(contract()).unwrap();
    let decl = "url = \"{base_url}\"\nwhy = ";
    assert!(good.contains(decl));
    for (name, from, to, says) in [
        (
            "path",
            "url = \"{base_url}\"\nwhy",
            "url = \"{base_url}/api/live\"\nwhy",
            "the door sees a socket's host and port, never its path",
        ),
        (
            "scheme",
            "url = \"{base_url}\"\nwhy",
            "url = \"ftp://127.0.0.1:9\"\nwhy",
            "a socket's scheme is ws, wss, http or https",
        ),
        (
            "format1",
            "format = 2",
            "format = 1",
            "live_sockets needs format = 2",
        ),
    ] {
        let changed = good.replace(from, to);
        assert_ne!(changed, good, "{name}");
        env.assert_check_refuses(&format!("live-{name}"), &changed, says)
            .await;
    }
    let blank_why = env.write_file(
        "live-blank-why.toml",
        &good.replace(
            "why = \"the compose page hears about new posts on a WebSocket to /api/live; posts are made by POST /api/posts\"",
            "why = \" \"",
        ),
    );
    let (code, out, err) = env
        .run(&["contract", "check", blank_why.to_str().unwrap()])
        .await;
    assert_eq!(code, 2, "{out} {err}");
    assert!(
        format!("{out}{err}").contains("a live socket needs its why"),
        "{out} {err}"
    );
}

/// A page that keeps Publish disabled ("Connecting…") until its live socket is up and subscribed
/// (`?needs_socket=1`). Refused, as every socket is, it cannot publish: nothing is pressed. Relayed
/// (`relay = true`) with its subscription declared as a read message (`[[read_requests]]`, method
/// `WEBSOCKET`), its probe passes sending only the subscription, and its post is made once by the create
/// request, with no alarm; nothing but subscriptions ever went on the socket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_needs_its_live_socket_has_it_relayed_and_publishes_once() {
    let env = start().await;
    let needs = contract_with(
        &env,
        "live-needs",
        "/hostile/live-updates\"",
        "/hostile/live-updates?needs_socket=1\"",
    );
    let text = unique("needs its socket, refused");
    let run = env.publish("alice", &needs, &text, &[]).await;
    env.assert_failed_before_the_press(run, "not actionable")
        .await;
    assert_eq!(env.stats().websocket_handshakes, 0);

    let c = std::fs::read_to_string(&needs).unwrap();
    let relayed = env.write_file(
        "live-relayed.toml",
        &format!(
            "{c}relay = true\n\n[[read_requests]]\nmethod = \"WEBSOCKET\"\nurl = \"{{base_url}}/api/live\"\n\
             body_regex = '^\\{{\"type\":\"subscribe\"'\nwhy = \"the page subscribes to the public timeline\"\n"
        ),
    );
    let (code, out, err) = env
        .run(&["contract", "check", relayed.to_str().unwrap()])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let (code, report, err) = env.probe_fill(&relayed, 500).await;
    assert_eq!(code, 0, "{report} {err}");
    assert_eq!(report["verdict"], "pass", "{report}");
    let s = env.stats();
    assert!(
        s.websocket_handshakes > 0 && s.websocket_frames > 0,
        "the probe's socket was relayed and subscribed: {s:?}"
    );
    assert_eq!((s.websocket_posts, s.create_arrivals), (0, 0), "{s:?}");

    let text = unique("needs its socket, relayed, made once");
    let (code, v, err) = env.publish("alice", &relayed, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1));
    let show = env.show(v["key"].as_str().unwrap()).await;
    assert!(
        !kit::event_kinds(&show["events"]).contains(&"side_effect_alarm".to_string()),
        "a relayed live socket's subscription is no alarm: {show}"
    );
    assert_eq!(env.stats().websocket_posts, 0);
}

/// Read pages that show their posts only once their socket is up (`?spa=socket`). A send whose create was
/// made but never answered (`commit-then-drop`) is left to reconcile: its lookup relays the live socket as a
/// probe does (only the subscription leaves) and finds the post; with the socket refused (no `relay`), the
/// page shows nothing and the lookup finds nothing, so it is parked, never sent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_reads_a_page_that_shows_its_posts_over_its_relayed_socket() {
    let env = kit::Env::start(Fault::new(FaultMode::CommitThenDrop)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let c = std::fs::read_to_string(contract())
        .unwrap()
        .replace(
            "permalink = \"{base_url}/p/{id}\"",
            "permalink = \"{base_url}/p/{id}?spa=socket\"",
        )
        .replace(
            "search = \"{base_url}/search?q={text}\"",
            "search = \"{base_url}/search?q={text}&spa=socket\"",
        );
    assert_eq!(c.matches("spa=socket").count(), 2, "{c}");
    let refused = env.write_file("live-read-refused.toml", &c);
    let relayed = env.write_file(
        "live-read-relayed.toml",
        &format!(
            "{c}relay = true\n\n[[read_requests]]\nmethod = \"WEBSOCKET\"\nurl = \"{{base_url}}/api/live\"\n\
             body_regex = '^\\{{\"type\":\"subscribe\"'\nwhy = \"the page subscribes to its posts\"\n"
        ),
    );
    let mut keys = Vec::new();
    for (name, contract) in [("relayed", &relayed), ("refused", &refused)] {
        let text = unique(&format!("made, unanswered, read over a socket ({name})"));
        let (code, v, err) = env
            .publish("alice", contract, &text, &["--no-look-before-write"])
            .await;
        assert_eq!(code, 10, "{name}: {v} {err}");
        assert_eq!(env.copies(&text), 1);
        keys.push((
            contract.clone(),
            text,
            v["key"].as_str().unwrap().to_string(),
        ));
    }
    env.platform.set_fault(Fault::default());
    // Past the contract's propagation window: a lookup means something only then.
    tokio::time::sleep(std::time::Duration::from_millis(2_100)).await;
    let (contract, text, key) = &keys[0];
    let (code, r, err) = env.reconcile_key(contract, key).await;
    assert_eq!(code, 0, "{r} {err}");
    assert_eq!(r["state"], "published", "{r}");
    assert_eq!(
        r["outcome"]["platform_id"],
        env.post_id_of("alice", text).as_str(),
        "{r}"
    );
    let (contract, text, key) = &keys[1];
    let (_, r, err) = env.reconcile_key(contract, key).await;
    assert_eq!(r["state"], "parked", "{r} {err}");
    assert_eq!(env.copies(text), 1, "reconcile never sends");
    assert_eq!(env.stats().websocket_posts, 0);
}
