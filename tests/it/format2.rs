//! Contract format 2 through the real binary and real Chromium: `{field:NAME}` in every template, each value
//! encoded for where it stands, success by the create answer's status alone with the id taken from a field,
//! and `oncepost contract migrate`.
//!
//! `/hostile/title-put` publishes with `PUT /api/items/{title}` (the title percent-encoded by the page) and
//! stays on the page; `/items/{title}` is the item's page. Format 1 cannot say any of this.
use std::ops::Deref;
use std::path::PathBuf;

use oncepost::fixture_platform::{Fault, FaultMode};
use serde_json::Value;

use crate::kit::{self, unique};

struct Env {
    kit: kit::Env,
}

impl Deref for Env {
    type Target = kit::Env;
    fn deref(&self) -> &kit::Env {
        &self.kit
    }
}

/// The bundled contract, moved to format 2 and to `/hostile/title-put`.
fn title_put_contract() -> String {
    let c = std::fs::read_to_string(kit::repo_path("selectors/fixture.toml")).unwrap();
    let head = c.split("[[success]]").next().unwrap().to_string();
    let tail = c[c.find("[readback]").unwrap()..].to_string();
    let head = head
        .replace("format = 1", "format = 2")
        .replace(
            "url = \"{base_url}/compose\"",
            "url = \"{base_url}/hostile/title-put\"",
        )
        .replace(
            "create_request = { method = \"POST\", url = \"{base_url}/api/posts\" }",
            "create_request = { method = \"PUT\", url = \"{base_url}/api/items/{field:title}\" }",
        );
    let tail = tail.replace(
        "permalink = \"{base_url}/p/{id}\"",
        "permalink = \"{base_url}/items/{id}\"",
    );
    let c =
        format!("{head}[[success]]\nresponse_status = 201\nid_from_field = \"title\"\n\n{tail}");
    assert!(c.contains("{field:title}") && c.contains("/items/{id}") && c.contains("format = 2"));
    c
}

impl Env {
    async fn start() -> Env {
        let kit = kit::Env::start(Fault::new(FaultMode::Normal)).await;
        kit.add_account("alice", &["--handle", "alice"]).await;
        Env { kit }
    }

    fn contract(&self) -> PathBuf {
        self.write_file("title-put.toml", &title_put_contract())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_title_keyed_put_publishes_once_and_reads_back_by_the_title() {
    let env = Env::start().await;
    let contract = env.contract();
    let (code, out, err) = env
        .run(&["contract", "check", contract.to_str().unwrap()])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    // Spaces, a slash, a question mark and a non-ASCII letter must stay inside one path segment; the page's
    // encodeURIComponent leaves `(`, `)` and `!` as they are where oncepost encodes them.
    let title = "Release notes: v2 / (beta)! é?";
    let text = unique("notes with spaces");
    let (code, v, err) = env
        .publish(
            "alice",
            &contract,
            &text,
            &["--field", &format!("title={title}")],
        )
        .await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(v["platform_id"], title, "the id is the title: {v}");
    assert!(
        v["permalink"].as_str().is_some_and(
            |p| p.ends_with("/items/Release%20notes%3A%20v2%20%2F%20%28beta%29%21%20%C3%A9%3F")
        ),
        "{v}"
    );
    assert_eq!(env.copies(&text), 1);
    assert_eq!(env.arrivals(), 1);
    let post = env
        .platform
        .posts()
        .into_iter()
        .find(|p| p.text == text)
        .unwrap();
    assert_eq!(post.title.as_deref(), Some(title));
    // A rerun presses nothing.
    let (code, v, err) = env
        .publish(
            "alice",
            &contract,
            &text,
            &["--field", &format!("title={title}")],
        )
        .await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(env.arrivals(), 1);
}

/// A create matcher keyed by another title than the one posted never matches: the page's PUT is failed
/// before it leaves and nothing is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_url_for_another_title_never_lets_the_put_out() {
    let env = Env::start().await;
    let c =
        title_put_contract().replace("/api/items/{field:title}", "/api/items/{field:title}-draft");
    let contract = env.write_file("other-title.toml", &c);
    let text = unique("wrong key");
    let (code, v, err) = env
        .publish(
            "alice",
            &contract,
            &text,
            &["--field", "title=Weekly digest"],
        )
        .await;
    assert_ne!(v["state"], "published", "{code} {v} {err}");
    assert_eq!(env.arrivals(), 0);
    assert_eq!(env.copies(&text), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn field_placeholders_need_format_2_and_name_a_field() {
    let env = Env::start().await;
    let v1 = title_put_contract().replace("format = 2", "format = 1");
    let f = env.write_file("v1-with-field.toml", &v1);
    let (code, out, err) = env.run(&["contract", "check", f.to_str().unwrap()]).await;
    assert_eq!(code, 2, "{out} {err}");
    assert!(err.contains("{field:title}"), "{err}");
    let typo = title_put_contract().replace("{field:title}", "{field:titel}");
    let f = env.write_file("typo.toml", &typo);
    let (code, out, err) = env.run(&["contract", "check", f.to_str().unwrap()]).await;
    assert_eq!(code, 2, "{out} {err}");
    assert!(err.contains("{field:titel}"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_rewrites_a_format_1_file_that_then_publishes_the_same() {
    let env = Env::start().await;
    let original = std::fs::read_to_string(kit::repo_path("selectors/fixture.toml")).unwrap();
    // A format 1 compose URL naming a field bare: format 2 spells it `{field:title}`.
    let v1 = original.replace(
        "url = \"{base_url}/compose\"",
        "url = \"{base_url}/compose?prefill={title}\"",
    );
    let f = env.write_file("old.toml", &v1);
    let (code, out, err) = env.run(&["contract", "migrate", f.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{out} {err}");
    let migrated = std::fs::read_to_string(&f).unwrap();
    assert!(migrated.contains("format = 2"), "{migrated}");
    assert!(migrated.contains("prefill={field:title}"), "{migrated}");
    // Comments survive.
    assert!(
        migrated.contains("# Contract for Fixturebook"),
        "{migrated}"
    );
    let (code, out, err) = env.run(&["contract", "check", f.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{out} {err}");
    // Again: nothing to do, nothing changed.
    let (code, out, err) = env.run(&["contract", "migrate", f.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), migrated);
    let text = unique("after migrate");
    let (code, v, err) = env.publish("alice", &f, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1);
    let _: Value = v;
}

/// A field the page prefilled ("New item"): the typed title replaces it by default, and follows it with
/// `fill = "append"`. The body goes into the field `compose.body_field` names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefilled_field_is_replaced_or_appended_to_as_declared_and_the_body_field_is_named() {
    let env = Env::start().await;
    let base = std::fs::read_to_string(kit::repo_path("selectors/fixture.toml"))
        .unwrap()
        .replace("format = 1", "format = 2")
        .replace(
            "url = \"{base_url}/compose\"",
            "url = \"{base_url}/hostile/prefilled\"",
        )
        // The body field is called `body` here, and named as the body.
        .replace("name = \"text\"", "name = \"body\"")
        .replace("field = \"text\"", "field = \"body\"")
        .replace("[compose]\n", "[compose]\nbody_field = \"body\"\n");
    assert!(base.contains("body_field = \"body\""), "{base}");
    let append = base.replace("name = \"title\"", "name = \"title\"\nfill = \"append\"");
    for (name, contract, want) in [
        ("replace.toml", base.clone(), "Quarterly report"),
        ("append.toml", append, "New itemQuarterly report"),
    ] {
        let c = env.write_file(name, &contract);
        let text = unique(name);
        let (code, v, err) = env
            .publish("alice", &c, &text, &["--field", "title=Quarterly report"])
            .await;
        assert_eq!(code, 0, "{name}: {v} {err}");
        assert_eq!(v["state"], "published", "{v}");
        let post = env
            .platform
            .posts()
            .into_iter()
            .find(|p| p.text == text)
            .unwrap();
        assert_eq!(post.title.as_deref(), Some(want), "{name}");
    }
}

/// The page excerpt kept as evidence is the compose form (the smallest element holding the publish control
/// and the fields, found by the contract's own CSS), not the first form in the document (the header's
/// search form, as measured on two real apps).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_excerpt_is_the_compose_form_found_by_the_contract() {
    let env = Env::start().await;
    let c = std::fs::read_to_string(kit::repo_path("selectors/fixture.toml"))
        .unwrap()
        .replace(
            "url = \"{base_url}/compose\"",
            "url = \"{base_url}/hostile/renamed-controls\"",
        )
        .replace(
            "strategies = [{ css = \"#publish\" }, { role = \"button\", name = \"Publish\" }]",
            "strategies = [{ css = \"#send-post\" }]",
        );
    assert!(c.contains("#send-post"), "{c}");
    let contract = env.write_file("renamed.toml", &c);
    let text = unique("excerpt of the compose form");
    let (code, v, err) = env.publish("alice", &contract, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(env.copies(&text), 1);
    let excerpt = v["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "dom_excerpt")
        .and_then(|e| e["path"].as_str())
        .map(|p| std::fs::read_to_string(env.home().join(p)).unwrap())
        .unwrap_or_else(|| panic!("no dom_excerpt: {v}"));
    assert!(
        excerpt.contains("post-text") && excerpt.contains("send-post"),
        "{excerpt}"
    );
    assert!(!excerpt.contains("search-q"), "{excerpt}");
}

/// A platform that renders markup: the read-back sees the rendered words, not the source. With
/// `compare = "visible-words"` the post is verified; with the exact rule the same post is a mismatch (created
/// once, but parked for a person).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_markdown_rendering_platform_is_read_back_by_its_visible_words() {
    let env = kit::Env::start_configured(None, None, |cfg| cfg.renders_markdown = true).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let fixture = std::fs::read_to_string(kit::repo_path("selectors/fixture.toml")).unwrap();
    let words = fixture
        .replace("format = 1", "format = 2")
        .replace("compare = \"exact-nfc\"", "compare = \"visible-words\"");
    assert!(words.contains("visible-words"));
    let words = env.write_file("words.toml", &words);
    let exact = env.write_file("exact.toml", &fixture);
    let text = |n: &str| {
        unique(&format!(
            "# Release {n}\n\n**Bold** notes: see [the docs](https://example.com/docs?x=1) now"
        ))
    };
    let sent = text("a");
    let (code, v, err) = env.publish("alice", &words, &sent, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&sent), 1);
    let sent = text("b");
    let (_, v, err) = env.publish("alice", &exact, &sent, &[]).await;
    assert_ne!(v["state"], "published", "{v} {err}");
    assert_eq!(env.copies(&sent), 1, "created once, never again");
}

/// A two-step publish: the first "Publish" opens a pre-publish panel (a declared non-publishing click after
/// the fill), the panel's button is the publish control, pressed once. Without the step the panel's button
/// is never there: nothing is pressed and nothing sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_step_publish_opens_its_panel_by_a_declared_step_and_presses_once() {
    let env = Env::start().await;
    let two = two_step_contract();
    let c = env.write_file("two-step.toml", &two);
    let (code, out, err) = env.run(&["contract", "check", c.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{out} {err}");
    let text = unique("two steps");
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1);
    assert_eq!(env.arrivals(), 1);
    let without = env.write_file("one-step.toml", &two_step_without_its_step());
    let text = unique("panel never opened");
    let (_, v, err) = env.publish("alice", &without, &text, &[]).await;
    assert_eq!(v["state"], "failed", "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(env.arrivals(), 1);
}

/// Fixturebook's contract at `/hostile/two-step` with the panel's button as the publish control, and no step
/// that opens the panel.
fn two_step_without_its_step() -> String {
    let base = std::fs::read_to_string(kit::repo_path("selectors/fixture.toml"))
        .unwrap()
        .replace("format = 1", "format = 2")
        .replace(
            "url = \"{base_url}/compose\"",
            "url = \"{base_url}/hostile/two-step\"",
        )
        .replace(
            "locator = { strategies = [{ css = \"#publish\" }, { role = \"button\", name = \"Publish\" }] }",
            "locator = { strategies = [{ css = \"#publish-now\" }] }",
        );
    assert!(base.contains("#publish-now"), "{base}");
    base
}

/// [`two_step_without_its_step`] with the first "Publish" clicked by a step after the fill.
fn two_step_contract() -> String {
    let step = "\n[[compose.steps]]\naction = \"click\"\nlocator = { strategies = [{ css = \"#publish\" }] }\nafter_fill = true\nnon_publishing = true\nwhy = \"opens the pre-publish panel; the panel's button publishes\"\n";
    let two = two_step_without_its_step().replacen(
        "\n[[compose.fields]]",
        &format!("{step}\n[[compose.fields]]"),
        1,
    );
    assert!(two.contains("after_fill = true"));
    two
}

/// The two-step page with its first "Publish" enabled only 1.5 s after the typing (`?late_enable=1500`, as
/// VisualEditor's "Save page..." follows the editor's model), `aria-disabled` until then, a click meanwhile
/// opening nothing: the step that clicks it waits until it is enabled, and the post is made once (red when a
/// clicking step's target need not be enabled: the click lands early, no panel, nothing pressed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_clicks_its_button_only_once_the_page_has_enabled_it() {
    let env = Env::start().await;
    let two = two_step_contract().replace(
        "url = \"{base_url}/hostile/two-step\"",
        "url = \"{base_url}/hostile/two-step?late_enable=1500\"",
    );
    assert!(two.contains("late_enable"), "{two}");
    let c = env.write_file("two-step-late.toml", &two);
    let text = unique("enabled late");
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1);
    assert_eq!(env.arrivals(), 1);
}

/// A page that asks "Publish this post?" by `confirm()` when publish is pressed (`/compose?confirm=1`, as
/// Rails' `data-confirm` does). By default the press dismisses it, as every dialog before it: the page sends
/// nothing, and the post fails on the door's proof. A contract saying `publish.confirm = "accept"` answers OK
/// once pressed, and the post is made once; its probe, which never presses, still agrees to nothing. Format
/// 1 cannot say it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirm_the_press_asks_is_answered_as_the_contract_says() {
    let env = Env::start().await;
    let asking = kit::compose_asking("confirm=1").replace("format = 1", "format = 2");
    let dismissing = env.write_file("confirm-dismissed.toml", &asking);
    let text = unique("asked before publishing, dismissed");
    let (code, v, err) = env.publish("alice", &dismissing, &text, &[]).await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(
        (v["state"].as_str(), v["pressed"].as_bool()),
        (Some("failed"), Some(true)),
        "{v}"
    );
    assert_eq!(env.arrivals(), 0, "{v}");
    let show = env.show(v["key"].as_str().unwrap()).await.to_string();
    assert!(
        show.contains("Publish this post?") && show.contains("needs publish.confirm"),
        "the proof says what was asked and what to declare: {show}"
    );

    let rule = "transport = \"harness\"\n";
    assert!(asking.contains(rule));
    let accept = asking.replace(rule, &format!("{rule}confirm = \"accept\"\n"));
    let accepting = env.write_file("confirm-accepted.toml", &accept);
    let (code, report, err) = env.probe_fill(&accepting, 300).await;
    assert_eq!(code, 0, "{report} {err}");
    assert_eq!(env.arrivals(), 0, "{report}");
    let text = unique("asked before publishing, accepted");
    let (code, v, err) = env.publish("alice", &accepting, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1), "{v}");

    let format1 = env.write_file(
        "confirm-format1.toml",
        &accept.replace("format = 2", "format = 1"),
    );
    let (code, out, err) = env
        .run(&["contract", "check", format1.to_str().unwrap()])
        .await;
    assert_eq!(code, 2, "{out} {err}");
    assert!(
        format!("{out}{err}").contains("confirm needs format = 2"),
        "{out} {err}"
    );
}

/// The bundled contract in format 2 on a compose page that creates by GET (`/compose?get_create=1`:
/// `GET /api/create?text=<the post>`, as an old guestbook's `method=get` form does), with `extra` added to
/// the compose URL's query.
fn get_create_contract(extra: &str) -> String {
    let c =
        kit::compose_asking(&format!("get_create=1{extra}")).replace("format = 1", "format = 2");
    let post = "create_request = { method = \"POST\", url = \"{base_url}/api/posts\" }";
    assert!(c.contains(post));
    c.replace(
        post,
        "create_request = { method = \"GET\", url_regex = '/api/create\\?text=' }",
    )
}

/// A platform that creates by GET. The press's one GET is sent once by oncepost and the post is made and
/// read back; a rerun sends nothing. The page that also calls the create URL by itself as it loads
/// (`&create_on_load=1`) gets nothing out: a read matching the create request is never fetched but as the
/// press's one (before, the door fetched it as a read and the platform made a post nobody authorized).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_platform_that_creates_by_get_gets_the_press_one_and_nothing_else() {
    let env = Env::start().await;
    const GET_CREATE: &str = "GET /api/create";
    let plain = env.write_file("get-create.toml", &get_create_contract(""));
    let text = unique("made by a GET");
    let (code, v, err) = env.publish("alice", &plain, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(
        (env.stats().writes_to(GET_CREATE), env.copies(&text)),
        (1, 1),
        "{v}"
    );
    let (code, v, err) = env.publish("alice", &plain, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "a rerun sends nothing: {v}");
    assert_eq!(env.stats().writes_to(GET_CREATE), 1);

    let hostile = env.write_file(
        "get-create-on-load.toml",
        &get_create_contract("&create_on_load=1"),
    );
    let text = unique("made by a GET, the page creating on load");
    let (code, v, err) = env.publish("alice", &hostile, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies("Hello from the page itself"), 0, "{v}");
    assert_eq!(
        (env.stats().writes_to(GET_CREATE), env.copies(&text)),
        (2, 1),
        "{v}"
    );
    let show = env.show(v["key"].as_str().unwrap()).await;
    assert!(
        show.to_string()
            .contains("Hello%20from%20the%20page%20itself"),
        "the page's own create is recorded as a write attempt: {show}"
    );
}

/// `contract check` takes a create by GET in format 2 only, without a body to match, never one matching a
/// page oncepost must read (its reads would all be failed), and never a HEAD.
#[tokio::test]
async fn a_create_by_get_is_checked_for_what_a_get_can_be() {
    let env = Env::start().await;
    let good = get_create_contract("");
    let path = env.write_file("get-create-good.toml", &good);
    let (code, out, err) = env
        .run(&["contract", "check", path.to_str().unwrap()])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let get = "method = \"GET\", url_regex = '/api/create\\?text=' }";
    for (name, c, says) in [
        (
            "format1",
            good.replace("format = 2", "format = 1"),
            "a create request by GET needs format = 2",
        ),
        (
            "head",
            good.replace("method = \"GET\"", "method = \"HEAD\""),
            "the create request cannot be a HEAD",
        ),
        (
            "body",
            good.replace(
                get,
                "method = \"GET\", url_regex = '/api/create', body_regex = 'x' }",
            ),
            "a GET has no body to match",
        ),
        (
            "search",
            good.replace(get, "method = \"GET\", url_regex = '[?&]q=' }"),
            "the GET create also matches readback.search",
        ),
    ] {
        assert_ne!(c, good, "{name}");
        env.assert_check_refuses(&format!("get-create-{name}"), &c, says)
            .await;
    }
}

/// A required consent (`/compose?rules=1`: an "I accept the rules" checkbox; Publish stays disabled until it
/// is ticked). Without a step nothing is pressed; a `check` step ticks it and the post is made once. Where the
/// page remembered the consent (`?rules=checked`), a `click` step unticks the box and nothing is pressed,
/// while `check` leaves it ticked and the post is made. `contract check` refuses `check` in format 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_consent_is_ticked_by_a_check_step_and_never_unticked() {
    let env = Env::start().await;
    let fields = "[[compose.fields]]";
    let contract = |query: &str, action: Option<&str>| {
        let asking = kit::compose_asking(query).replace("format = 1", "format = 2");
        assert!(asking.contains(fields));
        match action {
            None => asking,
            Some(action) => {
                let step = format!(
                    "[[compose.steps]]\naction = \"{action}\"\nlocator = {{ strategies = [{{ css = \"#accept-rules\" }}] }}\nafter_fill = true\nnon_publishing = true\nwhy = \"ticks the rules box; the page sends nothing for it\"\n\n"
                );
                asking.replacen(fields, &format!("{step}{fields}"), 1)
            }
        }
    };
    let mut made = 0;
    for (query, action, published) in [
        ("rules=1", None, false),
        ("rules=1", Some("check"), true),
        ("rules=checked", Some("click"), false),
        ("rules=checked", Some("check"), true),
    ] {
        let what = format!("{query} {action:?}");
        let c = env.write_file(
            &format!(
                "rules-{}-{}.toml",
                query.replace('=', "-"),
                action.unwrap_or("none")
            ),
            &contract(query, action),
        );
        let text = unique(&format!("consent {query} {}", action.unwrap_or("none")));
        let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
        if published {
            made += 1;
            assert_eq!(code, 0, "{what}: {v} {err}");
            assert_eq!(v["state"], "published", "{what}: {v}");
            assert_eq!(env.copies(&text), 1, "{what}");
        } else {
            assert_eq!(
                (v["state"].as_str(), v["pressed"].as_bool()),
                (Some("failed"), Some(false)),
                "{what}: {v} {err}"
            );
            assert_eq!(env.copies(&text), 0, "{what}");
        }
        assert_eq!(env.arrivals(), made, "{what}");
    }
    // Without after_fill (itself format 2), only the check action asks for format 2.
    let v1 = contract("rules=1", Some("check"))
        .replace("format = 2", "format = 1")
        .replace("after_fill = true\n", "");
    env.assert_check_refuses("rules-format-1", &v1, "action = \"check\" needs format = 2")
        .await;
}

/// A required category (`/compose?category=1`: a `<select>` whose first option chooses nothing; Publish
/// stays disabled until one is picked). Without a step the publish control is never enabled and nothing is
/// pressed; a `select` step choosing "News" (by its label) picks it as a person does and the post is made
/// once. `contract check` refuses a select step without an option and an option on another step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_category_is_chosen_by_a_select_step() {
    let env = Env::start().await;
    let asking = kit::compose_asking("category=1").replace("format = 1", "format = 2");
    let without = env.write_file("category-without.toml", &asking);
    let text = unique("in a category, none chosen");
    let (code, v, err) = env.publish("alice", &without, &text, &[]).await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(
        (v["state"].as_str(), v["pressed"].as_bool()),
        (Some("failed"), Some(false)),
        "{v}"
    );

    let fields = "[[compose.fields]]";
    assert!(asking.contains(fields));
    let step = "[[compose.steps]]\naction = \"select\"\nlocator = { strategies = [{ css = \"#post-category\" }] }\noption = \"News\"\nafter_fill = true\nnon_publishing = true\nwhy = \"picks the post's category; the page sends nothing for it\"\n\n";
    let with = asking.replacen(fields, &format!("{step}{fields}"), 1);
    let chosen = env.write_file("category-chosen.toml", &with);
    let text = unique("in a category, News chosen");
    let (code, v, err) = env.publish("alice", &chosen, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1), "{v}");

    for (name, c, says) in [
        (
            "no-option",
            with.replace("option = \"News\"\n", ""),
            "a select step names no option",
        ),
        (
            "option-on-click",
            with.replace("action = \"select\"", "action = \"click\""),
            "only a select step chooses an option",
        ),
    ] {
        assert_ne!(c, with, "{name}");
        env.assert_check_refuses(&format!("category-{name}"), &c, says)
            .await;
    }
}
