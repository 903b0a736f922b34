//! Web components: pages whose compose form, or whose posts, live in open shadow roots
//! (`/hostile/shadow`, `?shadow=1` on Fixturebook's post and search pages). A script that looks only in the
//! document finds no field, no publish control and no post; a hit test that stops at the outer host cannot
//! tell the control from an overlay inside the component. Each test here went red with the page scripts
//! looking only in the document.

use oncepost::fixture_platform::Fault;
use serde_json::Value;

use crate::kit::{self, Env, unique};

/// Which strategies the compose locators keep: each kind must reach into the shadow roots by itself.
#[derive(Clone, Copy)]
enum Kept {
    Both,
    CssOnly,
    RoleOnly,
}

/// The bundled contract with its search and permalink pages asking for `?shadow=1` (posts rendered inside
/// shadow roots) and, with `compose`, its compose page moved and its compose locators cut to `kept`.
fn shadow_contract(env: &Env, name: &str, compose: Option<&str>, kept: Kept) -> std::path::PathBuf {
    let mut text = kit::read_pages_asking("shadow=1");
    if let Some(url) = compose {
        let moved = text.replace(
            r#"url = "{base_url}/compose""#,
            &format!(r#"url = "{{base_url}}{url}""#),
        );
        assert_ne!(moved, text);
        text = moved;
    }
    let locators = [
        (
            r##"{ css = "#post-text" }"##,
            r#"{ role = "textbox", name = "Post text" }"#,
        ),
        (
            r##"{ css = "#post-title" }"##,
            r#"{ role = "textbox", name = "Title" }"#,
        ),
        (
            r##"{ css = "#publish" }"##,
            r#"{ role = "button", name = "Publish" }"#,
        ),
    ];
    for (css, role) in locators {
        let both = format!("[{css}, {role}]");
        assert!(text.contains(&both), "{both}");
        match kept {
            Kept::Both => {}
            Kept::CssOnly => text = text.replace(&both, &format!("[{css}]")),
            Kept::RoleOnly => text = text.replace(&both, &format!("[{role}]")),
        }
    }
    env.write_file(&format!("{name}.toml"), &text)
}

/// Fixturebook with alice's account (her handle shown on her posts).
async fn start() -> Env {
    let env = Env::start(Fault::default()).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    env
}

/// Publish `text` as alice with `contract`: published, pressed, one copy, `arrivals` create requests so far.
async fn published_once(env: &Env, contract: &std::path::Path, text: &str, arrivals: u64) {
    let (code, v, err) = env.publish("alice", contract, text, &[]).await;
    assert_eq!(code, 0, "{text}: {v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(v["pressed"], true, "{v}");
    assert_eq!(env.arrivals(), arrivals);
    assert_eq!(env.copies(text), 1);
}

/// The compose form at `compose`, found by CSS alone and then by role alone: each published once, and a
/// rerun presses nothing.
async fn pressed_once_by_css_and_by_role(env: &Env, label: &str, compose: &str) {
    for (name, kept) in [("css", Kept::CssOnly), ("role", Kept::RoleOnly)] {
        let contract = shadow_contract(env, &format!("{label}-{name}"), Some(compose), kept);
        let text = unique(&format!("{label} web components by {name}"));
        let arrivals = env.arrivals() + 1;
        published_once(env, &contract, &text, arrivals).await;
        let (code, v, _) = env.publish("alice", &contract, &text, &[]).await;
        assert_eq!((code, v["pressed"].as_bool()), (0, Some(false)), "{v}");
        assert_eq!(env.arrivals(), arrivals, "the rerun sent nothing");
    }
}

/// `text` posted directly as alice (an earlier lost run of hers: the platform's `arrivals`-th post), then
/// published: the look before writing finds it, nothing is pressed or sent again.
async fn found_before_writing_never_sent_again(
    env: &Env,
    contract: &std::path::Path,
    text: &str,
    arrivals: u64,
) {
    let r = kit::platform::post_directly(&env.base_url(), "alice", text).await;
    assert_eq!(r.status().as_u16(), 201);
    assert_eq!(env.arrivals(), arrivals);
    let (code, v, err) = env.publish("alice", contract, text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");
    assert!(kinds(&v).contains(&"found_before_write".to_string()), "{v}");
    assert_eq!(env.arrivals(), arrivals, "nothing was sent again");
    assert_eq!(env.copies(text), 1);
}

fn kinds(v: &Value) -> Vec<String> {
    kit::event_kinds(&v["timeline"])
}

/// The compose form two open shadow roots deep, found by CSS alone: its fields are found and filled, its
/// publish control is checked (the hit test goes down to it through both roots) and pressed once; the post is read back from
/// its page, itself rendered inside a shadow root. A rerun presses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compose_form_two_shadow_roots_deep_is_pressed_once_and_read_back() {
    let env = start().await;
    let contract = shadow_contract(&env, "shadow", Some("/hostile/shadow"), Kept::CssOnly);
    let text = unique("web components");
    published_once(&env, &contract, &text, 1).await;
    let (code2, v2, _) = env.publish("alice", &contract, &text, &[]).await;
    assert_eq!(code2, 0);
    assert_eq!(v2["pressed"], false);
    assert_eq!(env.arrivals(), 1, "the rerun sent nothing");
}

/// `?closed=1`: both roots closed (`host.shadowRoot` is null to every script but the components'), the
/// form found by CSS and by role: oncepost keeps each closed root the page attaches where its locators
/// look, so the form is found, filled, checked and pressed once, and a rerun presses nothing. Before, no
/// locator found anything and nothing could be published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compose_form_in_closed_shadow_roots_is_pressed_once() {
    pressed_once_by_css_and_by_role(&start().await, "closed", "/hostile/shadow?closed=1").await;
}

/// `/hostile/declarative-shadow`: the compose form arrives in the HTML inside
/// `<template shadowrootmode="closed">`, a closed root the parser makes without any script calling
/// `attachShadow`, so the keeper never sees it made. When a locator finds nothing, oncepost asks Chromium's
/// DOM agent for the page's closed roots and keeps them too: the form is found (by CSS and by role), filled,
/// checked and pressed once, and a rerun presses nothing. Before, nothing was found and nothing published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compose_form_in_a_closed_root_the_parser_made_is_pressed_once() {
    pressed_once_by_css_and_by_role(&start().await, "declarative", "/hostile/declarative-shadow")
        .await;
}

/// `?deep=300`: beside the parser-made closed root, 300 nested `<div>`s. A listing of the whole DOM nests
/// deeper than a JSON reader follows (serde_json stops at 128 levels: the DOM agent's answer was dropped
/// and the check waited out its call bound, then failed): the listing goes only as deep as it can be read,
/// and the form (near the top) is found and pressed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_root_the_parser_made_is_found_on_a_page_nested_deeper_than_json_is_read() {
    let env = start().await;
    let contract = shadow_contract(
        &env,
        "declarative-deep",
        Some("/hostile/declarative-shadow?deep=300"),
        Kept::CssOnly,
    );
    let text = unique("declarative shadow beside a deep tree");
    published_once(&env, &contract, &text, 1).await;
}

/// `?cover=1`: an element of the component's own shadow root lies over the publish control (found by role
/// and name alone). The hit test
/// lands on it (not on the outer host, which would name the page's shell), so the control is not
/// actionable: nothing is pressed and the intent settles failed, naming the cover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_control_covered_inside_its_shadow_root_is_never_pressed() {
    let env = start().await;
    let contract = shadow_contract(
        &env,
        "shadow-cover",
        Some("/hostile/shadow?cover=1"),
        Kept::RoleOnly,
    );
    let text = unique("covered in the shadow");
    let run = env.publish("alice", &contract, &text, &[]).await;
    env.assert_failed_before_the_press(run, "not receives_events (covered by div#shadow-cover)")
        .await;
    assert_eq!(env.copies(&text), 0);
}

/// The post is already there (an earlier lost run of alice's), shown by the search inside web components.
/// The look before writing finds it there, with alice as its author, and settles the intent without a
/// press: a look that saw only the document would have found nothing and sent it a second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_shown_inside_web_components_is_found_before_writing_and_never_sent_again() {
    let env = start().await;
    let contract = shadow_contract(&env, "shadow-feed", None, Kept::Both);
    found_before_writing_never_sent_again(
        &env,
        &contract,
        &unique("already there, in the shadow"),
        1,
    )
    .await;
}

/// `?shadow=closed`: the post page and the search show each post inside a closed shadow root the HTML parser
/// makes (`<template shadowrootmode="closed">`), out of every script's reach. A post published is read back
/// there, and a post already there (an earlier lost run of alice's) is found by the look before writing and
/// never sent again: a look that saw only what scripts can see found nothing and pressed a second copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_inside_closed_roots_the_parser_made_are_read_back_and_found_before_writing() {
    let env = start().await;
    let contract = env.write_file("closed-feed.toml", &kit::read_pages_asking("shadow=closed"));
    let text = unique("read back from a closed root");
    published_once(&env, &contract, &text, 1).await;

    let there = unique("already there, in a closed root");
    found_before_writing_never_sent_again(&env, &contract, &there, 2).await;
}

/// `?host_button=1`: the publish control is a design-system button (`<fb-button id="publish">`, a custom
/// element whose own shadow root holds the real button) that reflects `disabled` on its host and enables
/// itself 400 ms after the text is typed. The check waits until the host is no longer disabled (a check that
/// read only `:disabled` pressed a disabled button: nothing was sent) and its hit test, landing on the inner
/// button, counts as landing on the host: published once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_design_system_button_that_enables_itself_late_is_pressed_once_when_enabled() {
    let env = start().await;
    let contract = shadow_contract(
        &env,
        "shadow-host-button",
        Some("/hostile/shadow?host_button=1"),
        Kept::CssOnly,
    );
    let text = unique("design-system button");
    published_once(&env, &contract, &text, 1).await;
}

/// `&slotted=text` and `&slotted=element`: the design-system button's label is the host's own text, or a
/// `<span>` of the host, shown through a `<slot>` (as Shoelace's, Material's and Ionic's buttons are
/// labelled), so the inner button's DOM text is empty and a click on the label hits the host's own content.
/// Found by role and name alone: the name is read through the slot (what the button shows), the hit test
/// follows the label into the slot and the button, and it is pressed once, when enabled. Before, no button
/// was named "Publish": nothing could be pressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_design_system_button_labelled_through_a_slot_is_found_by_its_name_and_pressed_once() {
    let env = start().await;
    for (n, label) in ["text", "element"].into_iter().enumerate() {
        let contract = shadow_contract(
            &env,
            &format!("shadow-slotted-{label}"),
            Some(&format!("/hostile/shadow?host_button=1&slotted={label}")),
            Kept::RoleOnly,
        );
        let text = unique(&format!("slotted {label} label"));
        published_once(&env, &contract, &text, n as u64 + 1).await;
    }
}

/// The design-system button found by its label's text (`{ text = "Publish" }`): the match is the label, a
/// `<span>` inside the inner button, which is disabled until 400 ms after typing (the host reflects it). A
/// label is as disabled as the control it is in: the check waits for the control, then presses once. Before,
/// the label counted as enabled at once, the press hit a disabled button, nothing was sent, and the post that
/// could be made failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_found_by_its_label_text_is_pressed_only_once_the_control_is_enabled() {
    let env = start().await;
    let contract = publish_by_its_text(&env, "shadow-by-text", "/hostile/shadow?host_button=1");
    let text = unique("found by its label");
    published_once(&env, &contract, &text, 1).await;
}

/// The same design-system button labelled through a slot (`&slotted=text`: the host's own text node;
/// `&slotted=element`: a `<span>` of the host), found by its label's text: the text shows once on the page,
/// so it is one match (the element that holds it), never the host and the inner button as well, and the
/// press lands once, when the button is enabled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_label_shown_through_a_slot_found_by_its_text_is_one_match_pressed_once() {
    let env = start().await;
    for (n, label) in ["text", "element"].into_iter().enumerate() {
        let contract = publish_by_its_text(
            &env,
            &format!("shadow-slotted-by-text-{label}"),
            &format!("/hostile/shadow?host_button=1&slotted={label}"),
        );
        let text = unique(&format!("slotted {label} label found by its text"));
        published_once(&env, &contract, &text, n as u64 + 1).await;
    }
}

/// The shadow contract on `page` (css locators only) with the publish control found by its label's text
/// (`{ text = "Publish" }`), written as `NAME.toml`.
fn publish_by_its_text(env: &Env, name: &str, page: &str) -> std::path::PathBuf {
    let css = shadow_contract(env, &format!("{name}-css"), Some(page), Kept::CssOnly);
    let by_css = std::fs::read_to_string(&css).unwrap();
    let by_text = by_css.replace(
        r##"locator = { strategies = [{ css = "#publish" }] }"##,
        r#"locator = { strategies = [{ text = "Publish" }] }"#,
    );
    assert_ne!(by_text, by_css);
    env.write_file(&format!("{name}.toml"), &by_text)
}

/// The longest run of pure black pixels in any row of the PNG at `path`: the contract's masks are filled
/// pure black on evidence screenshots, which Fixturebook's pages otherwise never show.
fn longest_black_run(path: &std::path::Path) -> u32 {
    let img = image::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .to_rgba8();
    let mut longest = 0;
    for y in 0..img.height() {
        let mut run = 0;
        for x in 0..img.width() {
            let p = img.get_pixel(x, y).0;
            run = if p[..3] == [0, 0, 0] { run + 1 } else { 0 };
            longest = longest.max(run);
        }
    }
    longest
}

/// The read-back's screenshot of a post page that shows its posts inside web components still has the
/// contract's mask (`.post-author`, inside each post's shadow root) blacked out: the masks reach into open
/// shadow roots like the items do. Looking for the mask only in the document left the author's name on the
/// evidence (no black box at all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_read_back_evidence_masks_what_is_inside_web_components() {
    let env = start().await;
    let contract = shadow_contract(&env, "shadow-mask", None, Kept::Both);
    let text = unique("masked in the shadow");
    let (code, v, err) = env.publish("alice", &contract, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    let shot = v["evidence"]
        .as_array()
        .and_then(|e| e.iter().find(|i| i["kind"] == "screenshot_readback"))
        .and_then(|i| i["path"].as_str())
        .unwrap_or_else(|| panic!("no read-back screenshot in {v}"));
    let run = longest_black_run(&env.home().join(shot));
    assert!(run >= 24, "the author's mask: a black run of {run} px");
}
