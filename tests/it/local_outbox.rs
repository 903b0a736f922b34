//! An offline-first page's outbox (Fixturebook `/compose?outbox=1`): a post stays in `localStorage`, in the
//! account's profile, until its create is answered, and the page sends what is left there again at the next
//! publish, first. A send whose answer never came leaves its post there; at the next press, matched by
//! method and URL alone, that request would be the press's create request and oncepost would send the
//! earlier post a second time. Only a request carrying the post just typed is handed over
//! (src/browser/door/carried.rs); a platform whose create names a saved draft says so in its contract.
use oncepost::fixture_platform::{Fault, FaultMode};

use crate::kit::{self, unique};

/// The first post's answer is lost (`commit-then-drop`: made, left `indeterminate`, kept in the page's
/// outbox); the next publish's press sends it again first: failed before it leaves, named, and the new post
/// is made once. Red without the check: the earlier post made twice and the new one never.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outbox_sending_an_earlier_post_at_the_next_press_never_makes_a_second_copy() {
    let env = kit::Env::start(Fault::new(FaultMode::CommitThenDrop)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let c = env.write_file("outbox.toml", &kit::compose_asking("outbox=1"));
    let first = unique("kept in the page's outbox");
    let (_, v, err) = env.publish("alice", &c, &first, &[]).await;
    assert_eq!(v["state"], "indeterminate", "{v} {err}");
    assert_eq!(env.copies(&first), 1);

    env.platform.set_fault(Fault::new(FaultMode::Normal));
    let second = unique("the next post");
    let (code, v, err) = env.publish("alice", &c, &second, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(
        (env.copies(&first), env.copies(&second), env.arrivals()),
        (1, 1, 2),
        "{v}"
    );
    let shown = env.show(v["key"].as_str().unwrap_or_default()).await;
    assert!(
        shown.to_string().contains("did not carry the post"),
        "the earlier post's request is named: {shown}"
    );
}

/// `/compose?outbox=batch`: what is left in the outbox rides inside the next post's own create request
/// (`{"text": new, "outbox": [earlier]}`), so that request carries the new post too. Handed over, it made the
/// earlier post a second time. It is failed before it leaves (it carries another post of the account's,
/// named); the new post is not made either, and is parked saying why (a person clears the page's outbox).
/// Red without
/// the account's other posts looked for: 2 copies of the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outbox_sending_an_earlier_post_inside_the_next_posts_request_never_makes_a_second_copy()
{
    let env = kit::Env::start(Fault::new(FaultMode::CommitThenDrop)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let c = env.write_file("outbox-batch.toml", &kit::compose_asking("outbox=batch"));
    let first = unique("kept in the page's outbox, sent again in a batch");
    let (_, v, err) = env.publish("alice", &c, &first, &[]).await;
    assert_eq!(v["state"], "indeterminate", "{v} {err}");
    assert_eq!(env.copies(&first), 1);

    env.platform.set_fault(Fault::new(FaultMode::Normal));
    let second = unique("the next post, with the outbox inside its request");
    let (code, v, err) = env.publish("alice", &c, &second, &[]).await;
    assert_ne!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], true, "{v}");
    // Failed (nothing of it left), then parked: the page tried a further create, a person looks.
    assert_eq!(v["state"], "parked", "{v}");
    assert_eq!(
        (env.copies(&first), env.copies(&second), env.arrivals()),
        (1, 0, 1),
        "{v}"
    );
    let shown = env.show(v["key"].as_str().unwrap_or_default()).await;
    assert!(
        shown.to_string().contains("another post of the account's"),
        "the earlier post is named: {shown}"
    );
}

/// A platform whose create names a saved draft instead of carrying the post (`/compose?by_reference=1`:
/// `PUT /api/drafts`, then `POST /api/drafts/publish` with `{}`). By default its create never leaves: the
/// publish fails, nothing made, saying which line was missing and naming `create_carries_post`; with
/// `create_carries_post = false` it is published once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_that_names_a_saved_draft_needs_the_contract_to_say_so() {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let contract = |carries: &str| {
        kit::compose_asking("by_reference=1")
            .replace("format = 1", "format = 2")
            .replace(
                r#"create_request = { method = "POST", url = "{base_url}/api/posts" }"#,
                &format!(
                    "create_request = {{ method = \"POST\", url = \"{{base_url}}/api/drafts/publish\" }}\ncreate_wait_ms = 1500{carries}"
                ),
            )
            .replace(
                "[[success]]",
                "[[non_publish_writes]]\nmethod = \"PUT\"\nurl = \"{base_url}/api/drafts\"\nwhy = \"the post saved as the session's draft\"\n\n[[success]]",
            )
    };
    let strict = env.write_file("by-reference.toml", &contract(""));
    let text = unique("published from a saved draft");
    let (code, v, err) = env.publish("alice", &strict, &text, &[]).await;
    assert_ne!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], true, "{v}");
    assert!(
        matches!(v["state"].as_str(), Some("failed" | "parked")),
        "{v}"
    );
    assert_eq!((env.arrivals(), env.copies(&text)), (0, 0), "{v}");
    let shown = env.show(v["key"].as_str().unwrap_or_default()).await;
    assert!(
        shown.to_string().contains("create_carries_post"),
        "the why names the key: {shown}"
    );

    let by_reference = env.write_file(
        "by-reference-declared.toml",
        &contract("\ncreate_carries_post = false"),
    );
    let text = unique("published from a saved draft, declared");
    let (code, v, err) = env.publish("alice", &by_reference, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1), "{v}");
}

/// A post with lines of no word (a Markdown rule, an emoji line) is carried by its create like any other:
/// those lines are not looked for alone (the page sends them inside the whole text). Red when every line
/// must show by itself: the check refused the create and nothing was made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_with_a_line_of_no_word_is_published_once() {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let text = format!("{}\n---\n\u{1f389}\nAll good", unique("Release notes"));
    let (code, v, err) = env
        .publish("alice", &kit::fixture_contract(), &text, &[])
        .await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1), "{v}");
}
