//! A composer framed from another origin (Fixturebook's `/hostile/other-origin`: its compose page served by
//! the same platform on its other port, as `compose.example.com` framed in `example.com`), whose document
//! the page's scripts may not read. Its fields and Publish are checked, filled and pressed inside the frame
//! (src/browser/other_origin.rs): the post is made once and read back; an overlay over the frame stops the
//! press; a second publish of the same post presses nothing.
use std::path::PathBuf;

use oncepost::fixture_platform::{Fault, FaultMode};

use crate::kit::{self, unique};

async fn start() -> kit::Env {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    env
}

/// The Fixturebook contract on `/hostile/other-origin` (with `query` added to its URL), its two fields
/// and Publish inside `iframe#compose-frame`, creating at the other origin's `/api/posts`.
fn contract(env: &kit::Env, name: &str, query: &str) -> PathBuf {
    let other = env.platform.other_origin_url();
    env.write_file(name, &framed_contract_text(env, Some(&other), query))
}

/// The text of the Fixturebook contract on `/hostile/other-origin?port=PORT` (with `query` added to its
/// URL), its two fields and Publish inside `iframe#compose-frame` served from `origin` (the platform's
/// other origin, allowed and created at; `None`: its own), as tests/it/framed_success.rs frames it too.
pub(crate) fn framed_contract_text(env: &kit::Env, origin: Option<&str>, query: &str) -> String {
    let base = env.platform.base_url();
    let port = origin
        .unwrap_or(&base)
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_string();
    let mut text = kit::hostile_contract_text("other-origin", Some("iframe#compose-frame"))
        .replace(
            "/hostile/other-origin\"",
            &format!("/hostile/other-origin?port={port}{query}\""),
        );
    assert!(text.contains(&format!("?port={port}")), "{text}");
    if let Some(other) = origin {
        text = text
            .replace(
                r#"create_request = { method = "POST", url = "{base_url}/api/posts" }"#,
                &format!(r#"create_request = {{ method = "POST", url = "{other}/api/posts" }}"#),
            )
            .replace(
                r#"allowed = ["{base_url}"]"#,
                &format!(r#"allowed = ["{{base_url}}", "{other}"]"#),
            );
        assert!(text.contains(&format!("{other}/api/posts")), "{text}");
    }
    text
}

/// Published once through the frame, read back by its permalink; a rerun presses nothing. Red without the
/// checks inside the frame: "iframe ... is cross-origin", failed before the press.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_composer_framed_from_another_origin_is_published_once() {
    let env = start().await;
    let c = contract(&env, "other-origin.toml", "");
    let text = unique("written in a frame of another origin");
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1), "{v}");
    let id = env.post_id_of("alice", &text);
    assert!(
        v["permalink"].as_str().is_some_and(|p| p.ends_with(&id)),
        "{v}"
    );
    // The same post again: the intent is settled, nothing is opened or pressed.
    let (code, again, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 0, "{again} {err}");
    assert_eq!(again["pressed"], false, "{again}");
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1));
}

/// A probe with `--fill` reaches the fields and Publish inside the frame and sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_checks_and_fills_inside_the_frame_and_sends_nothing() {
    let env = start().await;
    let c = contract(&env, "other-origin.toml", "");
    let (code, report, err) = env.probe_fill(&c, 300).await;
    assert_eq!(code, 0, "{report} {err}");
    assert_eq!(report["verdict"], "pass", "{report}");
    assert_eq!(env.arrivals(), 0);
    assert_eq!(env.stats().other_writes_total, 0, "{:?}", env.stats());
}

/// An overlay of the top page over the frame (`&cover=1`): what the frame shows cannot be pressed, and the
/// publish fails before its press, naming the overlay. Red without the hit test in the document holding the
/// iframe (the frame alone sees nothing in the way).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overlay_over_the_frame_stops_the_press() {
    let env = start().await;
    let c = contract(&env, "other-origin-covered.toml", "&cover=1");
    let text = unique("under a cover over the frame");
    let run = env.publish("alice", &c, &text, &[]).await;
    env.assert_failed_before_the_press(run, "frame-cover").await;
    assert_eq!(env.copies(&text), 0);
}

/// The full browser (`/usr/bin/chromium`) keeps a frame of the same site in the page's process: the framed
/// composer is published once there too. A frame of another site (`/hostile/cross-origin`: `localhost` for
/// `127.0.0.1`) it runs in a process of its own, where no world can be made from the page: the publish fails
/// before its press, naming why, and nothing is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_full_browser_reaches_a_frame_of_the_same_site_and_names_one_of_another() {
    let full = std::path::Path::new("/usr/bin/chromium");
    assert!(
        full.exists(),
        "scripts/setup.sh installs Debian's full Chromium for this test"
    );
    let env = start().await;
    let same_site = contract(&env, "other-origin.toml", "");
    let text = unique("same site, full browser");
    let (code, v, err) = env.publish_in(full, "alice", &same_site, &text).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1), "{v}");

    let other_site = env.write_file(
        "cross-site.toml",
        &kit::hostile_contract_text("cross-origin", Some("iframe#compose-frame")),
    );
    let text = unique("another site, full browser");
    let (code, v, err) = env.publish_in(full, "alice", &other_site, &text).await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(
        (v["state"].as_str(), v["pressed"].as_bool()),
        (Some("failed"), Some(false)),
        "{v}"
    );
    let intent = env.show(v["key"].as_str().unwrap_or_default()).await;
    assert!(
        intent.to_string().contains("process of its own"),
        "the reason is named: {intent}"
    );
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 0));
}

/// Posts shown only inside a frame of another origin (`?framed=1&port=OTHER` on the post and search pages,
/// as a comment widget served from `comments.example.com` shows them): with that origin in `origins.allowed`
/// (the platform's own) the post is read back there by its permalink, and one already there is found by the
/// look before writing and never sent again. Without the origin in `origins.allowed` the frame is someone
/// else's content: nothing in it is read, and the send ends indeterminate. Red without the listing from
/// inside the frame (the first publish: indeterminate).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_inside_a_frame_of_the_platforms_other_origin_are_read_there() {
    let env = start().await;
    let other = env.platform.other_origin_url();
    let port = other.rsplit(':').next().unwrap_or_default().to_string();
    let framed = kit::read_pages_asking(&format!("framed=1&port={port}"));
    let allowed = framed.replace(
        r#"allowed = ["{base_url}"]"#,
        &format!(r#"allowed = ["{{base_url}}", "{other}"]"#),
    );
    assert_ne!(allowed, framed);
    let c = env.write_file("framed-other-origin.toml", &allowed);
    let text = unique("read inside a frame of another origin");
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    let t = env.show(v["key"].as_str().unwrap_or_default()).await;
    let read = t["events"]
        .as_array()
        .and_then(|es| es.iter().find(|e| e["kind"] == "published"))
        .map(|e| e["details"]["readback"]["readback"].clone())
        .unwrap_or_default();
    assert_eq!(read["by"], "permalink", "{t}");
    assert!(
        read["url"]
            .as_str()
            .is_some_and(|u| u.ends_with(&format!("?framed=1&port={port}"))),
        "{read}"
    );

    // A post already there: found inside the search page's frame, nothing sent again.
    let there = unique("already inside a frame of another origin");
    let r = kit::platform::post_directly(&env.base_url(), "alice", &there).await;
    assert_eq!(r.status().as_u16(), 201);
    let arrivals = env.arrivals();
    let (code, v, err) = env.publish("alice", &c, &there, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert!(
        kit::event_kinds(&v["timeline"]).contains(&"found_before_write".to_string()),
        "{v}"
    );
    assert_eq!((env.arrivals(), env.copies(&there)), (arrivals, 1));

    // The same pages, the frame's origin not the platform's: what it shows is not read.
    let c = env.write_file("framed-not-allowed.toml", &framed);
    let text = unique("shown by someone else's frame");
    let (_, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(v["state"], "indeterminate", "{v} {err}");
    assert_eq!(env.copies(&text), 1, "made once, never again");
}
