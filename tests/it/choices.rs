//! A per-post choice (format 2, `kind = "choice"`): a forum's category, which each post picks for itself.
//! The post gives it with `--field NAME=VALUE`; a step picks it with `{field:NAME}` in its `option` (a
//! `<select>`) or in its locator's `name` or `text` (a list a script draws). Fixturebook's
//! `/compose?category=1` (a `<select>`) and `?category=list` (a design system's list: it opens on a press,
//! draws its options later in a portal, and has a disabled option) both keep Publish disabled until a
//! category is picked, and send the pick with the create request.
use std::path::Path;

use oncepost::fixture_platform::{Fault, FaultMode};
use serde_json::Value;

use crate::kit::{self, unique};

/// The fields block of the bundled contract, which the choice and its steps go in front of.
const FIELDS: &str = "[[compose.fields]]";

/// The bundled contract on `/compose?{query}` in format 2, with a required choice `category` and `steps`.
fn contract_with(query: &str, steps: &str) -> String {
    let c = kit::compose_asking(query).replace("format = 1", "format = 2");
    assert!(c.contains(FIELDS));
    let choice = "[[compose.fields]]\nname = \"category\"\nkind = \"choice\"\n\n";
    c.replacen(FIELDS, &format!("{steps}{choice}{FIELDS}"), 1)
}

/// A `<select>` picked by the post's value or label.
fn select_contract() -> String {
    contract_with(
        "category=1",
        "[[compose.steps]]\naction = \"select\"\nlocator = { strategies = [{ css = \"#post-category\" }] }\noption = \"{field:category}\"\nnon_publishing = true\nwhy = \"picks the post's category; the page sends nothing for it\"\n\n",
    )
}

/// A list a script draws: open it, click the post's option by its accessible name, and see the pick shown.
fn list_contract() -> String {
    contract_with(
        "category=list",
        "[[compose.steps]]\naction = \"click\"\nlocator = { strategies = [{ role = \"combobox\", name = \"Category\" }] }\nnon_publishing = true\nwhy = \"opens the category list; a button of type button sends nothing\"\n\n\
         [[compose.steps]]\naction = \"click\"\nlocator = { strategies = [{ role = \"option\", name = \"{field:category}\" }] }\nnon_publishing = true\nwhy = \"picks the post's category in the list\"\n\n\
         [[compose.steps]]\naction = \"wait_for\"\nlocator = { strategies = [{ text = \"{field:category}\" }] }\nnon_publishing = true\nwhy = \"the pick shows in the button\"\n\n",
    )
}

/// A searchable list: type the post's category into its search box, then click the option it brings.
fn search_contract() -> String {
    contract_with("category=search", &format!("{TYPE_STEP}{PICK_STEP}"))
}

/// Types the post's category into the list's search box.
const TYPE_STEP: &str = "[[compose.steps]]\naction = \"type\"\nlocator = { strategies = [{ role = \"combobox\", name = \"Category\" }] }\ntext = \"{field:category}\"\nnon_publishing = true\nwhy = \"searches the category list; the page sends nothing\"\n\n";
/// Clicks the option named as the post's category.
const PICK_STEP: &str = "[[compose.steps]]\naction = \"click\"\nlocator = { strategies = [{ role = \"option\", name = \"{field:category}\" }] }\nnon_publishing = true\nwhy = \"picks the post's category in the list\"\n\n";

async fn env() -> kit::Env {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    env
}

/// Publish a post labelled `label` in `category` through `c`: the post's text, the exit code and the
/// report.
async fn publish_in(env: &kit::Env, c: &Path, label: &str, category: &str) -> (String, i32, Value) {
    let text = unique(label);
    let field = format!("category={category}");
    let (code, v, err) = env.publish("alice", c, &text, &["--field", &field]).await;
    assert!(code == 0 || code == 11, "{label}: {v} {err}");
    (text, code, v)
}

/// The post was made once, in the category stored as `stored`.
fn assert_made_in(env: &kit::Env, (text, code, v): &(String, i32, Value), stored: &str) {
    assert_eq!((*code, v["state"].as_str()), (0, Some("published")), "{v}");
    assert_eq!(stored_category(env, text).as_deref(), Some(stored), "{v}");
}

/// The post failed before anything was pressed.
fn assert_unpressed((_, code, v): &(String, i32, Value)) {
    assert_eq!(
        (*code, v["state"].as_str(), v["pressed"].as_bool()),
        (11, Some("failed"), Some(false)),
        "{v}"
    );
}

/// The category the platform stored with `text`'s one copy.
fn stored_category(env: &kit::Env, text: &str) -> Option<String> {
    let posts: Vec<_> = env
        .platform
        .posts()
        .into_iter()
        .filter(|p| p.text == text)
        .collect();
    assert_eq!(posts.len(), 1, "one copy of {text:?}");
    posts[0].category.clone()
}

/// Each post picks its own category in a `<select>`, by label or by value, and is made once with it; a
/// category the page does not offer picks nothing and presses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_post_picks_its_own_category_in_a_select() {
    let env = env().await;
    let c = env.write_file("category-select.toml", &select_contract());
    for (given, stored) in [("News", "news"), ("notes", "notes")] {
        let run = publish_in(&env, &c, &format!("filed under {given}"), given).await;
        assert_made_in(&env, &run, stored);
    }
    let made = env.arrivals();
    assert_eq!(made, 2);

    let run = publish_in(&env, &c, "filed under a category not offered", "Sport").await;
    assert_unpressed(&run);
    let v = &run.2;
    let intent = env.show(v["key"].as_str().unwrap_or_default()).await;
    assert!(
        intent.to_string().contains(r#"no option \"Sport\""#),
        "{intent}"
    );
    assert_eq!(env.arrivals(), made, "nothing was sent");

    // A post without its required choice is refused before anything is stored or opened.
    let text = unique("filed under nothing");
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 2, "{v} {err}");
    assert!(err.contains("--field category=..."), "{err}");
    let (_, list, _) = env.oncepost.run_json(&["intents", "list", "--json"]).await;
    assert!(!list.to_string().contains(&text), "{list}");
    assert_eq!(env.arrivals(), made);
}

/// A list a script draws (no `<select>`: it opens on a press, its options come later in a portal): the
/// post's option is clicked by its name and the post is made once in that category. A disabled option
/// picks nothing, so Publish stays disabled and nothing is pressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_picks_its_category_in_a_list_a_script_draws() {
    let env = env().await;
    let c = env.write_file("category-list.toml", &list_contract());
    let run = publish_in(&env, &c, "filed under Notes from a list", "Notes").await;
    assert_made_in(&env, &run, "notes");
    assert_eq!(env.arrivals(), 1);

    for given in ["Archive", "Sport"] {
        let run = publish_in(&env, &c, &format!("filed under {given} from a list"), given).await;
        assert_unpressed(&run);
        assert_eq!(env.arrivals(), 1, "{given}: nothing was sent");
    }
}

/// Who sees the post, a radio group (`/compose?visibility=1`, Public checked as the page's default): a
/// `check` step on the radio named as the post's choice picks it, each post its own; the choice is optional,
/// and a post that does not give it leaves the step out: the page keeps its default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_post_picks_who_sees_it_in_a_radio_group() {
    let env = env().await;
    let c = kit::compose_asking("visibility=1").replace("format = 1", "format = 2");
    let step = "[[compose.steps]]\naction = \"check\"\nlocator = { strategies = [{ role = \"radio\", name = \"{field:visibility}\" }] }\nnon_publishing = true\nwhy = \"picks who sees the post; the page sends nothing for it\"\n\n";
    let choice =
        "[[compose.fields]]\nname = \"visibility\"\nkind = \"choice\"\nrequired = false\n\n";
    let c = env.write_file(
        "visibility.toml",
        &c.replacen(FIELDS, &format!("{step}{choice}{FIELDS}"), 1),
    );
    let stored = |text: &str| {
        let posts: Vec<_> = env
            .platform
            .posts()
            .into_iter()
            .filter(|p| p.text == text)
            .collect();
        assert_eq!(posts.len(), 1, "one copy of {text:?}");
        posts[0].visibility.clone()
    };
    for (given, want) in [
        (Some("Private"), "private"),
        (Some("Followers only"), "followers"),
        (None, "public"),
    ] {
        let text = unique(&format!("seen by {given:?}"));
        let field = given.map(|g| format!("visibility={g}"));
        let extra: Vec<&str> = match &field {
            Some(f) => vec!["--field", f],
            None => vec![],
        };
        let (code, v, err) = env.publish("alice", &c, &text, &extra).await;
        assert_eq!(
            (code, v["state"].as_str()),
            (0, Some("published")),
            "{v} {err}"
        );
        assert_eq!(stored(&text).as_deref(), Some(want), "{given:?}: {v}");
    }
    assert_eq!(env.arrivals(), 3);
}

/// `contract check` refuses a choice where it cannot mean anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_choice_is_checked_where_it_is_declared_and_where_it_is_picked() {
    let env = env().await;
    let good = select_contract();
    let path = env.write_file("choice-good.toml", &good);
    let (code, out, err) = env
        .run(&["contract", "check", path.to_str().unwrap()])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let choice = "name = \"category\"\nkind = \"choice\"\n";
    for (name, c, says) in [
        (
            "a-typed-field",
            good.replace("{field:category}", "{field:title}"),
            "{field:title} names a text_input field",
        ),
        (
            "an-unknown-field",
            good.replace(
                "option = \"{field:category}\"",
                "option = \"{field:topic}\"",
            ),
            "no compose field named \"topic\"",
        ),
        (
            "picked-by-nothing",
            good.replace("option = \"{field:category}\"", "option = \"News\""),
            "choice field \"category\" is picked by no step",
        ),
        (
            "with-a-locator",
            good.replace(
                choice,
                &format!("{choice}locator = {{ strategies = [{{ css = \"#post-category\" }}] }}\n"),
            ),
            "a choice field has no locator",
        ),
        (
            "format-1",
            good.replace("format = 2", "format = 1"),
            "kind = \"choice\" needs format = 2",
        ),
    ] {
        assert_ne!(c, good, "{name}");
        env.assert_check_refuses(&format!("choice-{name}"), &c, says)
            .await;
    }
}

/// A searchable list that shows 5 of its 40 categories at a time: the post's category is typed into its
/// search box, then its option is clicked; the post is made once in it. Without the typing the option is
/// never shown and nothing is pressed. `contract check` refuses a type step without a text and a text on
/// another step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_picks_its_category_by_typing_it_into_a_searchable_list() {
    let env = env().await;
    let c = env.write_file("category-search.toml", &search_contract());
    let run = publish_in(&env, &c, "filed under Topic 27 by a search", "Topic 27").await;
    assert_made_in(&env, &run, "topic-27");
    assert_eq!(env.arrivals(), 1);

    let click_only = env.write_file(
        "category-click-only.toml",
        &contract_with("category=search", PICK_STEP),
    );
    let run = publish_in(&env, &click_only, "Topic 27 without a search", "Topic 27").await;
    assert_unpressed(&run);
    assert_eq!(env.arrivals(), 1, "nothing was sent");

    let good = search_contract();
    for (name, c, says) in [
        (
            "no-text",
            good.replace("text = \"{field:category}\"\n", ""),
            "a type step names no text",
        ),
        (
            "text-on-a-click",
            good.replace(
                PICK_STEP,
                &PICK_STEP.replace("non_publishing", "text = \"x\"\nnon_publishing"),
            ),
            "only a type step types a text",
        ),
    ] {
        assert_ne!(c, good, "{name}");
        env.assert_check_refuses(&format!("search-{name}"), &c, says)
            .await;
    }
}
