//! A composer in a frame shows its success in that frame: Fixturebook's compose page framed by
//! `/hostile/other-origin?port=PORT` (from the platform's other origin, or from its own) navigates the frame
//! to the permalink, and shows "Saved." in the frame's `#compose-status` when the answer names no post.
//! The success signals (`url_regex`, `element`, `synced`) are looked for in the page's frames of the
//! platform's origins (src/browser/signals.rs); a frame of any other origin (`/compose?decoy=PORT:ID`: an
//! older post's permalink framed beside the composer) is never the platform's word.
use std::path::PathBuf;

use oncepost::fixture_platform::{Fault, FaultMode};

use crate::kit::{self, unique};

async fn start(mode: FaultMode) -> kit::Env {
    let env = kit::Env::start(Fault::new(mode)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    env
}

const BY_URL: &str = "[[success]]\nurl_regex = '/p/(?P<id>[a-z0-9]+)$'\n";
const BY_SYNCED: &str =
    "[[success]]\nsynced = { css = \"#compose-status\", class = \"ok\", when = \"appears\" }\n";

/// The bundled contract's text with `success` as its only success signals (format 2).
fn with_success(text: &str, success: &str) -> String {
    let (head, rest) = text.split_once("[[success]]").expect("a success signal");
    let (_, tail) = rest.split_once("[readback]").expect("a readback section");
    format!("{head}{success}\n[readback]{tail}").replace("format = 1", "format = 2")
}

/// The framed composer's contract (`other_origin::framed_contract_text`: from `origin`, or the platform's
/// own when `None`) with `success` as its only signals.
fn framed(env: &kit::Env, name: &str, origin: Option<&str>, success: &str) -> PathBuf {
    let text = crate::other_origin::framed_contract_text(env, origin, "");
    env.write_file(name, &with_success(&text, success))
}

/// Published once, the post's id taken from the permalink its frame navigated to (the top page stays on
/// the framing page), for a frame of the platform's other origin and of its own. Red without the frames'
/// URLs looked at: no success signal, `indeterminate`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_framed_composers_permalink_in_its_frame_is_the_success() {
    let env = start(FaultMode::Normal).await;
    let other = env.platform.other_origin_url();
    for (name, origin) in [("other", Some(other.as_str())), ("same", None)] {
        let c = framed(&env, &format!("{name}.toml"), origin, BY_URL);
        let text = unique(&format!("framed from the {name} origin, success by url"));
        let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
        assert_eq!(code, 0, "{name}: {v} {err}");
        assert_eq!(v["state"], "published", "{name}: {v}");
        assert_eq!(env.copies(&text), 1, "{name}: {v}");
        let id = env.post_id_of("alice", &text);
        assert_eq!(v["platform_id"], id.as_str(), "{name}: {v}");
    }
    assert_eq!(env.arrivals(), 2);
}

/// An answer that names no post (`no-success-signal`: 201 `{"ok": true}`): the framed page shows "Saved." in
/// its frame's status, which the contract's `synced` signal names; the post is found by search and
/// published. Red with the frames left out (no success signal, `indeterminate`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synced_signal_inside_the_frame_is_seen() {
    let env = start(FaultMode::NoSuccessSignal).await;
    let other = env.platform.other_origin_url();
    for (name, origin) in [("other", Some(other.as_str())), ("same", None)] {
        let c = framed(&env, &format!("{name}-synced.toml"), origin, BY_SYNCED);
        let text = unique(&format!("framed from the {name} origin, synced"));
        let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
        assert_eq!(code, 0, "{name}: {v} {err}");
        assert_eq!(v["state"], "published", "{name}: {v}");
        assert_eq!(env.copies(&text), 1, "{name}: {v}");
        assert_eq!(
            v["platform_id"],
            env.post_id_of("alice", &text).as_str(),
            "{name}: {v}"
        );
    }
}

/// Beside the composer, a frame of another origin, not the platform's, shows an older post's permalink
/// (`/compose?decoy=PORT:ID`): its URL matches the contract's `url_regex` and its `article.post` the
/// `element` signal. The answer names no post, so only those could have said "success": the send is left
/// `indeterminate` (no signal), one copy, and nothing of the older post is taken for it. Red with the
/// frame's origin not checked: the older post's id taken, read back, and the send parked as a mismatch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_of_another_origin_is_never_the_success() {
    let env = start(FaultMode::Normal).await;
    let older = unique("an older post");
    let (code, v, err) = env
        .publish("alice", &kit::fixture_contract(), &older, &[])
        .await;
    assert_eq!(
        (code, &v["state"]),
        (0, &serde_json::json!("published")),
        "{v} {err}"
    );
    let older_id = env.post_id_of("alice", &older);
    env.platform
        .set_fault(Fault::new(FaultMode::NoSuccessSignal));

    let other = env.platform.other_origin_url();
    let port = other.rsplit(':').next().unwrap_or_default();
    let signals = format!(
        "{BY_URL}\n[[success]]\nelement = {{ strategies = [{{ css = \"article.post\" }}] }}\nid_attribute = \"data-post-id\"\n"
    );
    let text = kit::compose_asking(&format!("decoy={port}:{older_id}"));
    let c = env.write_file("decoy.toml", &with_success(&text, &signals));
    let post = unique("beside a framed older post");
    let (code, v, err) = env.publish("alice", &c, &post, &[]).await;
    assert_eq!(v["state"], "indeterminate", "{v} {err}");
    assert_ne!(code, 0, "{v}");
    assert!(
        v.to_string().contains("no success signal"),
        "the send says why: {v}"
    );
    assert!(!v.to_string().contains(&older_id), "{v}");
    assert_eq!((env.copies(&post), env.copies(&older)), (1, 1), "{v}");
}
