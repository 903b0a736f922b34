//! A step whose target the page shows only sometimes (format 2, `optional = true`): a cookie banner on a
//! first visit. Fixturebook's `/compose?consent=1` draws one over the whole page as it loads (Publish under
//! it; `&consent_ms=N` N ms later) until the account's profile holds the `fb_consent` cookie its buttons set.
use oncepost::fixture_platform::{Fault, FaultMode};
use serde_json::Value;

use crate::kit::{self, unique};

/// The bundled contract on `/compose?consent=1` in format 2, with `steps` before its own (a focus on the
/// text field, which the banner covers).
fn contract_with(steps: &str) -> String {
    let own = "[[compose.steps]]";
    let c = kit::compose_asking("consent=1").replace("format = 1", "format = 2");
    assert!(c.contains(own));
    c.replacen(own, &format!("{steps}{own}"), 1)
}

/// The banner's "Reject all", clicked when it is there.
fn reject_step(optional: &str) -> String {
    format!(
        "[[compose.steps]]\naction = \"click\"\nlocator = {{ strategies = [{{ role = \"button\", name = \"Reject all\" }}] }}\n{optional}non_publishing = true\nwhy = \"dismisses the cookie banner; it only sets a cookie\"\n\n"
    )
}

/// The intent of `v` as `intents show` has it (a failed one keeps the step that failed it), as text.
async fn steps_of(env: &kit::Env, v: &Value) -> String {
    env.show(v["key"].as_str().unwrap_or_default())
        .await
        .to_string()
}

/// Without a step the banner covers Publish and nothing is pressed; an optional step dismisses it on the
/// first visit and is skipped on the next, where the page shows none; the same step required fails there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_banner_shown_only_on_a_first_visit_is_dismissed_when_it_is_there() {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;

    let none = env.write_file("consent-none.toml", &contract_with(""));
    let text = unique("under a cookie banner, no step");
    let (code, v, err) = env.publish("alice", &none, &text, &[]).await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(
        (v["state"].as_str(), v["pressed"].as_bool()),
        (Some("failed"), Some(false)),
        "{v}"
    );
    assert_eq!(env.arrivals(), 0);

    let optional = env.write_file(
        "consent-optional.toml",
        &contract_with(&reject_step("optional = true\nwait_ms = 2000\n")),
    );
    let text = unique("under a cookie banner, dismissed");
    let (code, v, err) = env.publish("alice", &optional, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err} {}", steps_of(&env, &v).await);
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1));

    // The profile now holds the consent: no banner, the step is skipped, the post is made (a publish that
    // succeeds keeps no step outcomes; the required step below shows the banner is not there).
    let text = unique("no banner the second time");
    let (code, v, err) = env.publish("alice", &optional, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!((env.arrivals(), env.copies(&text)), (2, 1));
    // A probe says so.
    let (code, probe, err) = env.probe_fill(&optional, 0).await;
    assert_eq!(code, 0, "{probe} {err}");
    assert!(
        probe["steps"]
            .to_string()
            .contains("skipped: optional, not ready in 2000 ms"),
        "{probe}"
    );

    // Required, the same step fails the post where the banner is not shown: nothing pressed.
    let required = env.write_file("consent-required.toml", &contract_with(&reject_step("")));
    let text = unique("no banner, the step required");
    let (code, v, err) = env.publish("alice", &required, &text, &[]).await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(
        (v["state"].as_str(), v["pressed"].as_bool()),
        (Some("failed"), Some(false)),
        "{v}"
    );
    let why = steps_of(&env, &v).await;
    assert!(why.contains("timed out") && why.contains("step0"), "{why}");
    assert_eq!(env.arrivals(), 2);
}

/// `contract check` refuses `wait_ms` without `optional`, a wait above its bound, and `optional` in format 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_optional_step_is_checked() {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    let good = contract_with(&reject_step("optional = true\nwait_ms = 2000\n"));
    let path = env.write_file("optional-good.toml", &good);
    let (code, out, err) = env
        .run(&["contract", "check", path.to_str().unwrap()])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    for (name, c, says) in [
        (
            "wait-without-optional",
            good.replace("optional = true\n", ""),
            "wait_ms is how long an optional step waits",
        ),
        (
            "wait-too-long",
            good.replace("wait_ms = 2000", "wait_ms = 60000"),
            "wait_ms = 60000 is more than 10000",
        ),
        (
            "format-1",
            good.replace("format = 2", "format = 1"),
            "optional needs format = 2",
        ),
    ] {
        assert_ne!(c, good, "{name}");
        env.assert_check_refuses(&format!("optional-{name}"), &c, says)
            .await;
    }
}
