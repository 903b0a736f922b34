//! A post written in steps (format 2, `after_field`): Fixturebook's `/hostile/wizard` shows the title and a
//! Next button first, and the text field and Publish only after Next, which takes the title out of the
//! document (`fixtures/contracts/wizard.toml`).
use oncepost::fixture_platform::{Fault, FaultMode};

use crate::kit::{self, unique};

/// The step that clicks Next, as the shipped contract has it.
const NEXT_AFTER_TITLE: &str = "after_field = \"title\"\n";

fn wizard_contract() -> String {
    let c = std::fs::read_to_string(kit::repo_path("fixtures/contracts/wizard.toml"))
        .expect("the wizard contract");
    assert!(c.contains(NEXT_AFTER_TITLE));
    c
}

async fn env() -> kit::Env {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    env
}

/// The title is filled and read back, Next is clicked, then the text is filled and the post is made once
/// with both; a rerun presses nothing. Filled all at once (Next after the fill), the text field is not on
/// the page and nothing is pressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_written_in_steps_is_published_once() {
    let env = env().await;
    let c = env.write_file("wizard.toml", &wizard_contract());
    let text = unique("written in steps");
    let title = unique("a wizard's title");
    let field = format!("title={title}");
    for run in 0..2 {
        let (code, v, err) = env.publish("alice", &c, &text, &["--field", &field]).await;
        assert_eq!(code, 0, "run {run}: {v} {err}");
        assert_eq!(v["state"], "published", "run {run}: {v}");
    }
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1));
    let post = env
        .platform
        .posts()
        .into_iter()
        .find(|p| p.text == text)
        .expect("the post");
    assert_eq!(post.title.as_deref(), Some(title.as_str()));

    let at_once = env.write_file(
        "wizard-at-once.toml",
        &wizard_contract().replace(NEXT_AFTER_TITLE, "after_fill = true\n"),
    );
    let text = unique("written all at once");
    let (code, v, err) = env
        .publish("alice", &at_once, &text, &["--field", &field])
        .await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(
        (v["state"].as_str(), v["pressed"].as_bool()),
        (Some("failed"), Some(false)),
        "{v}"
    );
    let intent = env.show(v["key"].as_str().unwrap_or_default()).await;
    assert!(
        intent.to_string().contains("not fillable"),
        "the text field was not there: {intent}"
    );
    assert_eq!(env.arrivals(), 1);
}

/// A probe follows the wizard with `--fill` (the title out of the document afterwards is no problem), and
/// without it does not hold the steps it cannot reach against the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_walks_the_wizard() {
    let env = env().await;
    let c = env.write_file("wizard.toml", &wizard_contract());
    let (code, v, err) = env.probe_fill(&c, 0).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["verdict"], "pass", "{v}");
    let (c2, base) = (c.to_string_lossy().into_owned(), env.base_url());
    let (code, v, err) = env
        .oncepost
        .run_json(&[
            "probe",
            "--json",
            "--contract",
            &c2,
            "--base-url",
            &base,
            "--account",
            "alice",
        ])
        .await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["verdict"], "pass", "{v}");
    assert_eq!(env.arrivals(), 0);
}

/// `contract check` refuses an `after_field` that names no field, one with `after_fill` too, and one in
/// format 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_after_a_field_is_checked() {
    let env = env().await;
    let good = wizard_contract();
    for (name, c, says) in [
        (
            "unknown-field",
            good.replace(NEXT_AFTER_TITLE, "after_field = \"subject\"\n"),
            "no compose field named \"subject\"",
        ),
        (
            "and-after-fill",
            good.replace(
                NEXT_AFTER_TITLE,
                &format!("{NEXT_AFTER_TITLE}after_fill = true\n"),
            ),
            "a step runs after one field or after the whole fill, not both",
        ),
        (
            "format-1",
            good.replace("format = 2", "format = 1"),
            "after_field needs format = 2",
        ),
    ] {
        assert_ne!(c, good, "{name}");
        env.assert_check_refuses(&format!("wizard-{name}"), &c, says)
            .await;
    }
}

/// A Publish that stays disabled on the wizard's last step (`?rules=1`: a box the contract never ticks): the
/// fields are not typed again when the control stays disabled, since the title is out of the document (the
/// wizard took it, keeping its value), and the report names the publish control; nothing is pressed. (Red
/// when the fields are typed again anyway: the title, not found, ends the send as a field that could not be
/// typed.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_disabled_on_the_last_step_types_nothing_again() {
    let env = env().await;
    let c = wizard_contract();
    let asked = c.replace("/hostile/wizard\"", "/hostile/wizard?rules=1\"");
    assert_ne!(asked, c);
    let c = env.write_file("wizard-rules.toml", &asked);
    let title = unique("a wizard's title");
    let (code, v, err) = env
        .publish(
            "alice",
            &c,
            &unique("never ticked"),
            &["--field", &format!("title={title}")],
        )
        .await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    let steps = v["steps"].to_string();
    assert!(!steps.contains("typed again"), "{steps}");
    assert!(v["summary"].to_string().contains("publish control"), "{v}");
    assert_eq!(env.arrivals(), 0);
}
