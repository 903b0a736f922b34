//! Posts drawn as many apps draw them, through the real binary and real Chromium: Fixturebook's read pages
//! with `?decorated=1`, where each post's first link is its author's profile (the permalink comes after it)
//! and the app's own controls ("Copy", " (edited)") sit inside the post's text. The contract names the
//! post's own link (`readback.link`, read by `id_from_link`) and the controls to leave out of its text
//! (`readback.text_skip`); both are format 2 keys. And `?emoji=img`, where each emoji is an image whose alt
//! is the emoji (read as its alt, with no key).
use oncepost::fixture_platform::Fault;

use crate::kit::{self, unique};

/// The fixture contract on decorated read pages, reading each post's id from its permalink's link and its
/// text without the app's controls; `link` and `skip` say whether those two keys are kept.
fn decorated_contract(link: bool, skip: bool) -> String {
    let mut c = kit::read_pages_asking("decorated=1").replace("format = 1", "format = 2");
    let mut keys = String::from("id_from_link = '/p/(?P<id>[a-z0-9]+)$'\n");
    if link {
        keys.push_str("link = \"a.permalink\"\n");
    }
    if skip {
        keys.push_str("text_skip = [\".copy-text\", \".edited\"]\n");
    }
    let with = c.replace("id_attribute = \"data-post-id\"\n", &keys);
    assert_ne!(with, c, "the fixture contract's id_attribute moved");
    c = with;
    c
}

async fn start() -> kit::Env {
    let env = kit::Env::start(Fault::default()).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    env
}

/// A new post is read back at its permalink without the controls (published once); Alice's earlier post
/// with another text is found before writing among decorated items, by the id its permalink's link names:
/// published on it, nothing pressed. Red without `text_skip` (the page shows "... Copy (edited)": the new
/// post parked as a mismatch, and the earlier one not recognised, so pressed again: a second copy) and
/// without `link` (the first link is the author's profile: the earlier post found with no id, a lead, parked;
/// before, it was settled with the author's profile as its permalink).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_drawn_with_controls_and_an_author_link_first_are_read_as_themselves() {
    let env = start().await;
    let path = env.write_file("decorated.toml", &decorated_contract(true, true));
    let text = unique("Decorated by the app");
    let (code, v, err) = env.publish("alice", &path, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1);
    let made = env.post_id_of("alice", &text);
    assert_eq!(v["platform_id"], made.as_str(), "{v}");

    let earlier = unique("Posted before by Alice herself");
    let hers = env.post_as("alice", &earlier).await;
    let (code, v, err) = env.publish("alice", &path, &earlier, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(v["platform_id"], hers.as_str(), "{v}");
    assert!(
        v["permalink"]
            .as_str()
            .is_some_and(|p| p.contains(&format!("/p/{hers}"))),
        "{v}"
    );
    assert_eq!(env.copies(&earlier), 1);
    assert_eq!(env.arrivals(), 2, "the new post and Alice's own");
}

/// The same contract checks as format 2 only: `link` and `text_skip` in a format 1 contract are refused
/// with their key's path.
#[tokio::test]
async fn link_and_text_skip_are_format_2_keys() {
    let env = start().await;
    let c = decorated_contract(true, true).replace("format = 2", "format = 1");
    let path = env.write_file("decorated-1.toml", &c);
    let (code, out, err) = env
        .run(&["contract", "check", path.to_str().unwrap()])
        .await;
    assert_eq!(code, 2, "{out} {err}");
    for key in ["readback.link", "readback.text_skip"] {
        assert!(err.contains(key) || out.contains(key), "{key}: {out} {err}");
    }
}

/// Without `link`, each post's first link is its author's profile, which `id_from_link` does not match: the
/// contract says what a post's own link looks like and this is not it, so it is never recorded as the post's
/// permalink. Alice's earlier post found before writing has no id then: a lead for a person (parked, nothing
/// pressed), never `published` on her profile's URL (as it was before: red without the check).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_link_that_is_not_the_posts_own_is_never_its_permalink() {
    let env = start().await;
    let path = env.write_file("decorated-no-link.toml", &decorated_contract(false, true));
    let earlier = unique("Posted before, profile link first");
    env.post_as("alice", &earlier).await;
    let (code, v, err) = env.publish("alice", &path, &earlier, &[]).await;
    assert_eq!(code, 12, "{v} {err}");
    assert_eq!(v["state"], "parked", "{v}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(v["permalink"], serde_json::Value::Null, "{v}");
    assert_eq!(env.copies(&earlier), 1);
}

/// Emoji drawn as images (`?emoji=img`: WordPress's wp-emoji in a browser without a colour emoji font,
/// Twemoji, chat apps; a custom emoji's `:shortcode:`, as Mastodon's) are read as their alt text: a new post
/// with emoji is published at its permalink, and Alice's earlier post with one is found before writing,
/// nothing pressed. Red without (the text element then holds no emoji: the new post parked as a mismatch,
/// the earlier one not recognised and pressed again, a second copy).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emoji_drawn_as_images_are_read_as_the_emoji_typed() {
    let env = start().await;
    let path = env.write_file("emoji.toml", &kit::read_pages_asking("emoji=img"));
    let text = format!(
        "{} \u{1f389} shipped \u{1f44d}\u{1f3fd}, \u{1f1eb}\u{1f1f7} and :blobcat:",
        unique("Release")
    );
    let (code, v, err) = env.publish("alice", &path, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1);

    let earlier = format!("{} \u{1f680}", unique("Posted before with an emoji"));
    let hers = env.post_as("alice", &earlier).await;
    let (code, v, err) = env.publish("alice", &path, &earlier, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(v["platform_id"], hers.as_str(), "{v}");
    assert_eq!(env.copies(&earlier), 1);
}

/// The author shown as a profile link (decorated pages: `a.author-link` to `/u/NAME`), read through
/// `readback.author_pattern` (format 2) from its `href`: Alice's earlier post is found before writing as
/// hers (nothing pressed), and Bob's post with the words Alice means to post is his (a lead, parked,
/// nothing pressed). Red without the pattern: `/u/alice` is not Alice's handle, her own post a lead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_author_shown_as_a_profile_link_is_read_by_author_pattern() {
    let env = start().await;
    let c = decorated_contract(true, true);
    let with = c.replace(
        "author = \".post-author\"\n",
        "author = \"a.author-link\"\nauthor_attribute = \"href\"\nauthor_pattern = '^/u/(?P<handle>[^/?#]+)$'\n",
    );
    assert_ne!(with, c, "the fixture contract's author moved");
    let path = env.write_file("author-link.toml", &with);

    hers_is_found_and_bobs_is_a_lead(&env, &path).await;
}

/// Alice's earlier post, made on the platform, is found before writing as hers (published on it, nothing
/// pressed, still one copy); Bob's post with the words Alice means to post is his: a lead, parked, nothing
/// pressed.
async fn hers_is_found_and_bobs_is_a_lead(env: &kit::Env, path: &std::path::Path) {
    let earlier = unique("Alice posted this before");
    let hers = env.post_as("alice", &earlier).await;
    let (code, v, err) = env.publish("alice", path, &earlier, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(v["platform_id"], hers.as_str(), "{v}");
    assert_eq!(env.copies(&earlier), 1);

    let bobs = unique("Bob posted these words first");
    env.post_as("bob", &bobs).await;
    let (_, v, err) = env.publish("alice", path, &bobs, &[]).await;
    assert_eq!(v["state"], "parked", "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(env.copies(&bobs), 1);
}

/// `author_pattern` is a format 2 key, needs `author`, and must capture a group `handle`; so must
/// `compose.signed_in_as`'s `pattern`; `viewer_labels` is format 2, needs `author` and holds no empty label:
/// `contract check` names each (exit 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn author_patterns_are_checked() {
    let env = start().await;
    let base = decorated_contract(true, true);
    let cases = [
        (
            base.replace("format = 2", "format = 1").replace(
                "author = \".post-author\"\n",
                "author = \".post-author\"\nauthor_pattern = '(?P<handle>.+)'\n",
            ),
            "readback.author_pattern",
        ),
        (
            base.replace(
                "author = \".post-author\"\n",
                "author = \".post-author\"\nauthor_pattern = 'by (\\w+)'\n",
            ),
            "group `handle`",
        ),
        (
            base.replace(
                "author = \".post-author\"\n",
                "author_pattern = '(?P<handle>.+)'\n",
            ),
            "author_pattern needs author",
        ),
        (
            base.replace(
                "url = \"{base_url}/compose\"\n",
                "url = \"{base_url}/compose\"\nsigned_in_as = { css = \"#whoami\", pattern = 'as (.+)' }\n",
            ),
            "compose.signed_in_as.pattern",
        ),
        (
            base.replace("format = 2", "format = 1").replace(
                "author = \".post-author\"\n",
                "author = \".post-author\"\nviewer_labels = [\"You\"]\n",
            ),
            "readback.viewer_labels",
        ),
        (
            base.replace(
                "author = \".post-author\"\n",
                "viewer_labels = [\"You\"]\n",
            ),
            "viewer_labels needs author",
        ),
        (
            base.replace(
                "author = \".post-author\"\n",
                "author = \".post-author\"\nviewer_labels = [\" \"]\n",
            ),
            "empty viewer label",
        ),
    ];
    for (i, (c, said)) in cases.iter().enumerate() {
        assert_ne!(c, &base, "case {i}: the contract did not change");
        let path = env.write_file(&format!("pattern-{i}.toml"), c);
        let (code, out, err) = env
            .run(&["contract", "check", path.to_str().unwrap()])
            .await;
        assert_eq!(code, 2, "case {i}: {out} {err}");
        assert!(
            err.contains(said) || out.contains(said),
            "case {i} {said}: {out} {err}"
        );
    }
}

/// `?author=you`: the read pages label the viewer's own posts "You", as chat apps do. With `viewer_labels =
/// ["You"]` a new post is read back as the account's (published once), and Alice's earlier post is found
/// before writing (nothing pressed); Bob's post with the same words still shows "bob": a lead, parked,
/// nothing pressed. Red without the key: "You" is then another author's name, so the new post, made, is
/// parked as a lead, and so is the earlier one (never settled as found).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_labelled_you_are_the_accounts_by_viewer_labels() {
    let env = start().await;
    let c = kit::read_pages_asking("author=you").replace("format = 1", "format = 2");
    let with = c.replace(
        "author = \".post-author\"\n",
        "author = \".post-author\"\nviewer_labels = [\"You\"]\n",
    );
    assert_ne!(with, c, "the fixture contract's author moved");
    let path = env.write_file("you.toml", &with);

    let text = unique("a post the page labels You");
    let (code, v, err) = env.publish("alice", &path, &text, &[]).await;
    assert_eq!(
        (code, v["state"].as_str()),
        (0, Some("published")),
        "{v} {err}"
    );
    assert_eq!(v["pressed"], true, "{v}");
    assert_eq!(env.copies(&text), 1);

    hers_is_found_and_bobs_is_a_lead(&env, &path).await;
}
