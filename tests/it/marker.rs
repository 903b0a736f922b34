//! The per-intent marker (`readback.marker_field`), through the real binary and real Chromium on
//! Fixturebook, whose items show a post's title (`.post-title`): oncepost fills the title with the intent's
//! marker, and read-back, look-before-write and reconcile take only the item showing it for the intent's
//! post. The account's own earlier post with the same text (no marker) is never taken for it: without a
//! marker look-before-write takes it (and presses nothing); with one the post is made and that one is found.
use std::path::PathBuf;
use std::time::Duration;

use oncepost::fixture_platform::{Fault, FaultMode};
use serde_json::Value;

use crate::kit::{self, unique};

fn marked_contract(env: &kit::Env) -> PathBuf {
    let c = std::fs::read_to_string(kit::repo_path("selectors/fixture.toml"))
        .unwrap()
        .replace("format = 1", "format = 2")
        .replace(
            "compare = \"exact-nfc\"",
            "compare = \"exact-nfc\"\nmarker_field = \"title\"\nmarker = \".post-title\"",
        );
    assert!(c.contains("marker_field"));
    env.write_file("marked.toml", &c)
}

async fn start() -> kit::Env {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    env
}

/// The stored post of alice with `text` whose title is the marker of intent `key`.
fn marked_post(env: &kit::Env, text: &str, key: &str) -> Option<String> {
    let marker = format!("op{}", &key[..12]);
    env.platform
        .posts()
        .into_iter()
        .find(|p| p.account == "alice" && p.text == text && p.title.as_deref() == Some(&marker))
        .map(|p| p.id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_earlier_identical_post_is_not_the_intents_own_when_a_marker_is_kept() {
    let env = start().await;
    let text = unique("marked post");
    let earlier = env.post_as("alice", &text).await;
    // Without a marker, look-before-write takes alice's earlier identical post for this intent.
    let (code, v, err) = env
        .publish("alice", &kit::fixture_contract(), &text, &[])
        .await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(env.copies(&text), 1);
    // With the marker the post is made, titled with the marker, and read back as that post.
    let text = unique("marked post");
    let earlier2 = env.post_as("alice", &text).await;
    let c = marked_contract(&env);
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(v["pressed"], true, "{v}");
    assert_eq!(env.copies(&text), 2, "the earlier post and this one");
    let key = v["key"].as_str().unwrap();
    let mine = marked_post(&env, &text, key).expect("the post carries the marker as its title");
    assert_ne!(mine, earlier2);
    assert_ne!(mine, earlier);
    let show = env.show(key).await;
    assert!(
        show.to_string().contains(&format!("/p/{mine}")),
        "the permalink recorded is the marked post's: {show}"
    );
    // A value for the marker field is refused before anything happens.
    let (code, v, err) = env
        .publish("alice", &c, &unique("x"), &["--field", "title=mine"])
        .await;
    assert_eq!(code, 2, "{v} {err}");
    assert!(err.contains("marker"), "{err}");
    // A rerun presses nothing.
    let (_, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(v["pressed"], false, "{v} {err}");
    assert_eq!(env.copies(&text), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_finds_the_dropped_post_by_its_marker_not_the_earlier_identical_one() {
    let env = start().await;
    let c = marked_contract(&env);
    let text = unique("marked reconcile");
    env.post_as("alice", &text).await;
    env.platform
        .set_fault(Fault::new(FaultMode::CommitThenDrop));
    let (code, v, err) = env
        .publish("alice", &c, &text, &["--no-look-before-write"])
        .await;
    env.platform.set_fault(Fault::default());
    assert_eq!(v["state"], "indeterminate", "{code} {v} {err}");
    let key = v["key"].as_str().unwrap().to_string();
    // The earlier identical post is newer in nothing: post another one after, so it comes first in search.
    env.post_as("alice", &text).await;
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let (code, r, err) = env.reconcile_key(&c, &key).await;
    assert_eq!(code, 0, "{r} {err}");
    let mine = marked_post(&env, &text, &key).expect("the dropped post was committed");
    assert_eq!(r["outcome"]["platform_id"], Value::from(mine), "{r}");
    assert_eq!(env.copies(&text), 3, "reconcile sent nothing");
}
