//! An offline-first page's outbox (Fixturebook `/compose?outbox=1`): a post stays in `localStorage`, in the
//! account's profile, until its create is answered, and the page sends what is left there again at the next
//! publish, first. A send whose answer never came leaves its post there; at the next press, matched by
//! method and URL alone, that request would be the press's create request and oncepost would send the
//! earlier post a second time. Only a request carrying the post just typed is handed over
//! (src/browser/door/carried.rs).
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
