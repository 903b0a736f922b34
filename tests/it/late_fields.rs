//! A page that changes a field after it was filled and checked (Fixturebook `/compose?synced_draft=...`: a
//! draft synced from another device, which comes whenever it comes, after the post was typed too). The
//! fill check had passed; the press would have sent the page's text: the synced draft instead of the post
//! (refused at the door, the authorization spent, the post never made) or the draft in front of the post
//! (made, another post than asked for). The fields are read again right before the authorization and typed
//! again when the page changed them (src/publish/mod.rs, `changed_since_checked`).
//!
//! The pause point `after_compose` (after the fill check, before the evidence and the authorization) holds
//! the publish while the platform hands the page its draft, so the draft lands at that moment every run;
//! `after_authorize` holds it after the fields' second read, in the window before the press, where only the
//! last look with the create request held at the door sees the change (src/browser/compose.rs,
//! `added_to_the_create`).
use std::time::{Duration, Instant};

use oncepost::fixture_platform::{Fault, FaultMode};
use oncepost::publish::{FIELD_CHANGED_REASON, TYPED_AGAIN_REASON};
use serde_json::Value;

use crate::kit::{self, unique};

/// Publish `text` with `contract`, held at `after_compose` until the platform has handed the compose page
/// `draft` (synced from another device) and the page has had time to put it in: (exit code, JSON, stderr).
async fn publish_with_draft_synced_after_the_fill(
    env: &kit::Env,
    contract: &std::path::Path,
    text: &str,
    draft: &str,
) -> (i32, Value, String) {
    publish_with_draft_synced_at(env, "after_compose", contract, text, draft).await
}

/// [`publish_with_draft_synced_after_the_fill`], held at the pause point `point`.
async fn publish_with_draft_synced_at(
    env: &kit::Env,
    point: &str,
    contract: &std::path::Path,
    text: &str,
    draft: &str,
) -> (i32, Value, String) {
    let args = env.publish_args("alice", contract, text);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (child, go) = env.spawn_paused_at(&args, point).await;
    let served_before = env.platform.stats().synced_drafts_served;
    env.platform.sync_draft(draft);
    let deadline = Instant::now() + Duration::from_secs(20);
    while env.platform.stats().synced_drafts_served == served_before {
        assert!(
            Instant::now() < deadline,
            "the compose page never asked for its synced draft"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The page puts the draft in as its answer is read: a few milliseconds; a second is ample.
    tokio::time::sleep(Duration::from_secs(1)).await;
    std::fs::write(&go, b"").unwrap();
    let out = child.wait_with_output().await.unwrap();
    let (code, stdout, stderr) = kit::cli::output_of(&out);
    let v: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (code, v, format!("{stdout} {stderr}"))
}

/// The notes a publish left for fields the page changed after their check.
async fn field_change_notes(env: &kit::Env, v: &Value) -> Vec<Value> {
    let shown = env.show(v["key"].as_str().unwrap_or_default()).await;
    shown["events"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e["reason"].as_str() == Some(FIELD_CHANGED_REASON))
        .collect()
}

/// The synced draft replaces the typed post; the post is typed again and made once, the draft never. Red
/// without the second read: the create carried the draft, refused at the door (failed, nothing made).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_synced_over_the_post_after_the_fill_check_is_typed_over_again() {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let c = env.write_file("synced.toml", &kit::compose_asking("synced_draft=replace"));
    let text = unique("the post as it was asked for");
    let draft = unique("an old draft from another device");
    let (code, v, err) = publish_with_draft_synced_after_the_fill(&env, &c, &text, &draft).await;
    assert_eq!(
        (code, v["state"].as_str()),
        (0, Some("published")),
        "{v} {err}"
    );
    assert_eq!(
        (env.copies(&text), env.copies(&draft), env.arrivals()),
        (1, 0, 1),
        "{v}"
    );
    let notes = field_change_notes(&env, &v).await;
    assert_eq!(notes.len(), 1, "the change is in the history: {notes:?}");
    assert_eq!(notes[0]["details"]["changed"][0]["field"], "field:text");
    assert_eq!(notes[0]["details"]["typed_again"], true);
}

/// The synced draft goes in front of the typed post (the fill check's rule still finds the post in the
/// field): the words changed, so it is typed again, and the platform holds exactly the post. Red without
/// the second read: the draft and the post were made as one post (read back as another text, parked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_synced_in_front_of_the_post_after_the_fill_check_never_goes_out_with_it() {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let c = env.write_file("synced.toml", &kit::compose_asking("synced_draft=prepend"));
    let text = unique("the post alone");
    let draft = unique("notes kept on the phone");
    let (code, v, err) = publish_with_draft_synced_after_the_fill(&env, &c, &text, &draft).await;
    assert_eq!(
        (code, v["state"].as_str()),
        (0, Some("published")),
        "{v} {err}"
    );
    let made: Vec<String> = env.platform.posts().into_iter().map(|p| p.text).collect();
    assert_eq!(made, vec![text.clone()], "{v}");
    assert_eq!(field_change_notes(&env, &v).await.len(), 1);
}

/// A field the typed text follows (`fill = "append"`, format 2) is not typed again (it would hold the post
/// twice): nothing is pressed, nothing leaves, and the intent fails saying why. Red without the second
/// read: pressed, the create carried the draft, refused at the door after the authorization.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_field_that_cannot_be_typed_again_presses_nothing() {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let contract = kit::compose_asking("synced_draft=replace")
        .replace("format = 1", "format = 2")
        .replace(
            "name = \"text\"\nkind = \"textarea\"",
            "name = \"text\"\nkind = \"textarea\"\nfill = \"append\"",
        );
    assert!(contract.contains("fill = \"append\""), "{contract}");
    let c = env.write_file("append.toml", &contract);
    let text = unique("a post that follows what the field holds");
    let draft = unique("a draft that replaced it");
    let (code, v, err) = publish_with_draft_synced_after_the_fill(&env, &c, &text, &draft).await;
    assert_eq!(v["state"], "failed", "{v} {err}");
    assert_ne!(code, 0);
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(env.arrivals(), 0);
    assert!(
        v.to_string()
            .contains("changed a field after it was filled and checked"),
        "{v}"
    );
}

/// The intent's history (`intents show`) when it says the last look refused the create (the page changed
/// the post after its check); `Err` with the history otherwise.
async fn refused_by_the_last_look(env: &kit::Env, v: &Value) -> Result<String, String> {
    let shown = env
        .show(v["key"].as_str().unwrap_or_default())
        .await
        .to_string();
    if shown.contains("did not show when it was checked, and the create request carries them") {
        Ok(shown)
    } else {
        Err(shown)
    }
}

/// The draft lands in front of the post after the fields' second read, in the window of the authorization:
/// the press sends the draft and the post as one. The last look, with the create held at the door, sees the
/// field show words it did not show at its check and the request carry them: failed unsent, nothing made.
/// Red without the last look: the draft and the post were made as one post (read back as another text).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_synced_in_front_of_the_post_after_its_second_read_is_never_sent() {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let c = env.write_file("synced.toml", &kit::compose_asking("synced_draft=prepend"));
    let text = unique("the post as checked");
    let draft = unique("a draft that came too late");
    let (code, v, err) =
        publish_with_draft_synced_at(&env, "after_authorize", &c, &text, &draft).await;
    assert_eq!(v["state"], "failed", "{v} {err}");
    assert_ne!(code, 0);
    assert_eq!(env.arrivals(), 0, "nothing of the create left: {v}");
    assert!(env.platform.posts().is_empty(), "{v}");
    refused_by_the_last_look(&env, &v).await.unwrap();
}

/// A page that signs what it sends: a listener on the press adds a signature to the text field before the
/// page builds the create from it (`/compose?signature=field`). The post as checked is not the post the
/// press would send: failed unsent, nothing made. Red without the last look: made with the signature, read
/// back as another text, parked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_the_page_adds_to_the_post_on_the_press_is_never_sent() {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let c = env.write_file("signed.toml", &kit::compose_asking("signature=field"));
    let text = unique("a post that the page signs");
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(v["state"], "failed", "{v} {err}");
    assert_ne!(code, 0);
    assert_eq!(env.arrivals(), 0, "nothing of the create left: {v}");
    assert!(env.platform.posts().is_empty(), "{v}");
    let history = refused_by_the_last_look(&env, &v).await.unwrap();
    assert!(history.contains("sent from fixturebook web"), "{history}");
}

/// The same signing page, on a contract that says so (`publish.added_text`, format 2): the signature the
/// page puts in the field on the press is not the page changing the post, so the create goes out, once, and
/// the post read back with the signature after the text is the post: published, one copy. Red without the
/// declaration's two uses: failed by the last look (above), or, past it, parked as another text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_the_contract_declares_is_published_once_and_read_back() {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let declared = kit::compose_asking("signature=field")
        .replace("format = 1", "format = 2")
        .replace(
            "rejection_statuses = [422]\n",
            "rejection_statuses = [422]\nadded_text = [\"\u{2014} sent from Fixturebook web\"]\n",
        );
    assert!(declared.contains("added_text"), "{declared}");
    let c = env.write_file("signed-declared.toml", &declared);
    let text = unique("a post the page signs, as its contract says");
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(
        (code, v["state"].as_str()),
        (0, Some("published")),
        "{v} {err}"
    );
    let posts = env.platform.posts();
    let made: Vec<&str> = posts
        .iter()
        .filter(|p| p.text.starts_with(&text))
        .map(|p| p.text.as_str())
        .collect();
    assert_eq!(
        made,
        [format!("{text}\n\n\u{2014} sent from Fixturebook web").as_str()],
        "{v}"
    );
    assert_eq!(env.arrivals(), 1);
    // Run again: found where it is, nothing pressed.
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(
        (code, v["pressed"].as_bool()),
        (0, Some(false)),
        "{v} {err}"
    );
    assert_eq!(env.arrivals(), 1);
    // `contract check` refuses the key in format 1, and a blank text.
    for (name, from, to, says) in [
        ("format1", "format = 2", "format = 1", "added_text"),
        (
            "blank",
            "added_text = [\"\u{2014} sent from Fixturebook web\"]",
            "added_text = [\"  \"]",
            "blank text",
        ),
    ] {
        let changed = declared.replace(from, to);
        assert_ne!(changed, declared, "{name}");
        env.assert_check_refuses(&format!("added-{name}"), &changed, says)
            .await;
    }
}

/// A page that takes the focus away as the user starts typing (`/compose?steal_focus=1`: a "what's new"
/// popover focused on the text field's first input, once, as MediaWiki's VisualEditor focuses its notices
/// popup once its welcome has closed): the last key went to the popover's button, the field missed it, and
/// the fill check refused the post before anything was pressed. The field is clicked into, emptied and typed
/// once more, and read again: the post is made once, as typed, and the report says it was typed again. Red
/// without the second try: failed, nothing pressed. A page that keeps cutting what it is given (`?maxlength=`) still fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_that_lost_its_typing_to_a_popover_is_typed_once_more() {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let c = env.write_file("steal-focus.toml", &kit::compose_asking("steal_focus=1"));
    let text = unique("a post typed while a popover took the focus");
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1, "the very text: {v}");
    assert!(
        v["steps"].to_string().contains("field:text typed again: "),
        "{}",
        v["steps"]
    );
    let show = env.show(v["key"].as_str().unwrap()).await;
    let noted = show["events"].as_array().unwrap().iter().any(|e| {
        e["reason"].as_str() == Some(TYPED_AGAIN_REASON)
            && e["details"]["fields"][0]["target"] == "field:text"
    });
    assert!(noted, "the history says so: {show}");

    // While the popover is open the field takes nothing (`?steal_focus=hold`), and a press outside closes it:
    // the second try clicks into the field first, as a person does (red without the click: failed).
    let c = env.write_file("hold.toml", &kit::compose_asking("steal_focus=hold"));
    let text = unique("a post typed while a popover held the field");
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(env.copies(&text), 1, "the very text: {v}");

    let c = env.write_file("maxlength.toml", &kit::compose_asking("maxlength=10"));
    let text = unique("a post longer than ten characters");
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(env.arrivals(), 2, "only the first two posts");
}

/// An editor that starts following its field only in the task after the field got the focus
/// (`/compose?listen_on_focus=1`, as VisualEditor does): the fill lets the page act on the focus before the
/// first key, and the post is made once, exactly as typed (red when the text is typed at once: it shows in
/// the field, the page's copy holds only the last key, and the create request, not carrying the post, is
/// refused before it leaves).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_follows_its_field_from_the_task_after_the_focus_gets_all_the_text() {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let asking = kit::compose_asking("listen_on_focus=1");
    let field = "{ css = \"#post-text\" }";
    assert!(asking.contains(field), "{asking}");
    // The contract's focus step goes to the title, so the fill is what focuses the text field.
    let focus = "action = \"focus\"\nfield = \"text\"";
    assert!(asking.contains(focus), "{asking}");
    let c = env.write_file(
        "listening.toml",
        &asking
            .replace(field, "{ css = \"#post-editor\" }")
            .replace(focus, "action = \"focus\"\nfield = \"title\""),
    );
    for i in 0..3 {
        let text = unique(&format!("followed from the next task {i}"));
        let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
        assert_eq!(code, 0, "{v} {err}");
        assert_eq!(v["state"], "published", "{v}");
        assert_eq!(env.copies(&text), 1, "the very text: {v}");
    }
    assert_eq!(env.arrivals(), 3);
}

/// A page rendered on the server whose app takes its fields over only after they were filled
/// (`/compose?hydrate_late=1500`, as a React or Vue app does once its scripts have run: its state of the post
/// starts empty then, what was typed stays in the field, and Publish, enabled by that state, stays
/// disabled). Every field showed what was typed, so when the control stays disabled the fields are typed
/// once more, and the post is made once, exactly as typed; the report and the history say why. Red without
/// the second typing: failed, nothing pressed (the publish control not actionable). A control that stays
/// disabled whatever is typed (`&rules=1`: a box the contract never ticks) is typed again once and still
/// nothing is pressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_takes_its_fields_over_after_the_fill_gets_them_typed_again() {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let late = |query: &str| {
        let asking = kit::compose_asking(query);
        let field = "{ css = \"#post-text\" }";
        assert!(asking.contains(field), "{asking}");
        asking.replace(field, "{ css = \"#post-editor\" }")
    };
    let c = env.write_file("hydrate-late.toml", &late("hydrate_late=1500"));
    let text = unique("typed before the app took the field over");
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1, "the very text: {v}");
    let steps = v["steps"].to_string();
    assert!(
        steps.contains("field:text typed again: the publish control stayed disabled"),
        "{steps}"
    );
    let show = env.show(v["key"].as_str().unwrap()).await;
    let noted = show["events"].as_array().unwrap().iter().any(|e| {
        e["reason"].as_str() == Some(TYPED_AGAIN_REASON)
            && e["details"]["fields"][0]["target"] == "field:text"
    });
    assert!(noted, "the history says so: {show}");

    let c = env.write_file("never-enabled.toml", &late("hydrate_late=1500&rules=1"));
    let text = unique("typed where a box stays unticked");
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    let steps = v["steps"].to_string();
    assert_eq!(
        steps.matches("typed again: the publish control").count(),
        1,
        "once: {steps}"
    );
    assert_eq!(env.arrivals(), 1, "only the first post");
}
