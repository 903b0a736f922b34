//! A block editor, through the real binary and real Chromium: Fixturebook's compose page with `?blocks=1`
//! (`fixtures/contracts/blocks.toml`). The text is a column of paragraph blocks, each its own contenteditable
//! element, as the WordPress block editor builds it: Enter makes the next block, Shift+Enter breaks a line,
//! and a line break that comes in typed text is dropped, the words on either side glued together.
//!
//! A post in paragraphs is typed as a person types it (`newlines = "keys"`: each line, and Enter or
//! Shift+Enter between them) and checked where all its blocks show (`shown_in`); typed as text, the field
//! shows the glued words and nothing is pressed. Every count is the platform's.
use std::path::{Path, PathBuf};

use oncepost::fixture_platform::{Fault, FaultMode};

use crate::kit::{self, unique};

async fn start() -> kit::Env {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    env
}

fn contract() -> PathBuf {
    kit::repo_path("fixtures/contracts/blocks.toml")
}

/// Two paragraphs, the second with a line broken in two.
fn in_paragraphs(label: &str) -> String {
    format!(
        "{}\n\nSecond paragraph, and a line\nbroken in two",
        unique(label)
    )
}

/// Typed by keys, the post is made once with its paragraphs and its line break as typed (the platform
/// stores the blocks joined by a blank line: the exact text), and read back. Also when the editor makes the
/// new block 150 ms after the Enter (`&late_blocks=1`): typing waits for the caret to be in it (red with a
/// fixed one-frame wait: the second paragraph went into the first block, glued, refused before the press).
/// And when the editor renders typed text in its next frame and puts a key typed before that render in a
/// block of its own (`&render_next_frame=1`, as Trix did under load): the last key waits for that frame (red
/// without it: "...broken in tw" and "o" apart, refused before the press).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_in_paragraphs_is_typed_as_a_person_types_it_and_made_once() {
    let env = start().await;
    let variant = |name: &str, query: &str| {
        let c = std::fs::read_to_string(contract())
            .unwrap()
            .replace("/compose?blocks=1", &format!("/compose?blocks=1&{query}"));
        env.write_file(name, &c)
    };
    let late = variant("blocks-late.toml", "late_blocks=1");
    let next_frame = variant("blocks-next-frame.toml", "render_next_frame=1");
    for (path, label) in [
        (contract(), "in blocks"),
        (late, "in late blocks"),
        (next_frame, "rendered a frame later"),
    ] {
        let text = in_paragraphs(&format!("First paragraph {label}"));
        let (code, v, err) = env.publish("alice", &path, &text, &[]).await;
        assert_eq!(code, 0, "{label}: {v} {err}");
        assert_eq!(v["state"], "published", "{label}: {v}");
        assert_eq!(env.copies(&text), 1, "{label}: {v}");
    }
    assert_eq!(env.arrivals(), 3);
}

/// The same post with the line breaks typed as text (the contract without `newlines`): the editor glues
/// the words ("a linebroken"), the fill check reads that where the blocks show, and nothing is pressed or
/// made. Without `shown_in` the check reads only the first block, which does not hold the post: also refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_as_text_the_glued_post_is_never_pressed() {
    let env = start().await;
    let good = std::fs::read_to_string(contract()).unwrap();
    let as_text = good.replace("newlines = \"keys\"\n", "");
    let first_block_only = good.replace(
        "shown_in = { strategies = [{ css = \"#post-blocks\" }] }\n",
        "",
    );
    for (name, c) in [
        ("as-text", &as_text),
        ("first-block-only", &first_block_only),
    ] {
        assert_ne!(c, &good, "{name}");
        let path = env.write_file(&format!("blocks-{name}.toml"), c);
        let text = in_paragraphs(&format!("Refused {name}"));
        let (code, v, err) = env.publish("alice", &path, &text, &[]).await;
        assert_eq!(code, 11, "{name}: {v} {err}");
        assert_eq!(v["state"], "failed", "{name}: {v}");
        assert_eq!(v["pressed"], false, "{name}: {v}");
        let show = env.show(v["key"].as_str().unwrap()).await;
        assert!(
            show.to_string()
                .contains("the field shows other text than was typed"),
            "{name}: {show}"
        );
    }
    assert_eq!(env.arrivals(), 0, "nothing pressed, nothing made");
}

/// `fixtures/contracts/blocks.toml` on one of Fixturebook's real editors (`/editors/NAME`), the field the
/// editor's own root (which shows every paragraph: no `shown_in`).
fn on_real_editor(env: &kit::Env, name: &str, root: &str) -> PathBuf {
    let c = std::fs::read_to_string(contract()).unwrap();
    let shown_in = "shown_in = { strategies = [{ css = \"#post-blocks\" }] }\n";
    assert!(c.contains(shown_in));
    let c = c
        .replace("/compose?blocks=1", &format!("/editors/{name}"))
        .replace("#post-blocks > p.block:first-child", root)
        .replace(shown_in, "");
    env.write_file(&format!("editor-{name}.toml"), &c)
}

/// Three real rich-text editors, as published on npm (ProseMirror with its example keymap, Lexical's rich
/// text, Quill 2; installed and bundled by scripts/setup.sh), each page publishing the editor's own model.
/// Typed by keys, each makes exactly the paragraphs typed: the platform stores the very text (ProseMirror
/// and Lexical keep the line break inside the second paragraph; Quill has no line break inside a paragraph,
/// so its post is paragraphs only). Measured typed as text (without `newlines`): ProseMirror made the line
/// break a paragraph of its own, another text than typed (the read-back refused it and the post was
/// parked); Lexical kept it; Quill, like keys, made it a paragraph.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_editors_make_the_paragraphs_typed_by_keys() {
    let env = start().await;
    for (name, root, text) in [
        (
            "prosemirror",
            ".ProseMirror",
            in_paragraphs("First paragraph in ProseMirror"),
        ),
        (
            "lexical",
            "#editor",
            in_paragraphs("First paragraph in Lexical"),
        ),
        (
            "quill",
            ".ql-editor",
            format!("{}\n\nSecond paragraph", unique("First paragraph in Quill")),
        ),
    ] {
        let path = on_real_editor(&env, name, root);
        let (code, v, err) = env.publish("alice", &path, &text, &[]).await;
        assert_eq!(code, 0, "{name}: {v} {err}");
        assert_eq!(v["state"], "published", "{name}: {v}");
        assert_eq!(env.copies(&text), 1, "{name}: the very text: {v}");
    }
    assert_eq!(env.arrivals(), 3);
}

/// [`on_real_editor`] for an editor whose text is inside the iframe `frame` (when given) and whose line
/// breaks are typed as text (`keys` false: a plain-text editor, where a line is a line).
fn on_editor(env: &kit::Env, name: &str, root: &str, frame: Option<&str>, keys: bool) -> PathBuf {
    let path = on_real_editor(env, name, root);
    let mut c = std::fs::read_to_string(&path).unwrap();
    if let Some(frame) = frame {
        let field = format!("locator = {{ strategies = [{{ css = {root:?} }}] }}");
        assert!(c.contains(&field), "{c}");
        c = c.replace(
            &field,
            &format!("locator = {{ strategies = [{{ css = {root:?} }}], frames = [{frame:?}] }}"),
        );
    }
    if !keys {
        assert!(c.contains("newlines = \"keys\"\n"));
        c = c.replace("newlines = \"keys\"\n", "");
    }
    env.write_file(&format!("editor-{name}.toml"), &c)
}

/// One publish on a real editor: made once, the platform storing exactly `text` as the editor's model.
async fn made_once_on(env: &kit::Env, name: &str, contract: &Path, text: &str) {
    let (code, v, err) = env.publish("alice", contract, text, &[]).await;
    assert_eq!(code, 0, "{name}: {v} {err}");
    assert_eq!(v["state"], "published", "{name}: {v}");
    assert_eq!(env.copies(text), 1, "{name}: the very text: {v}");
    assert_eq!(env.arrivals(), 1, "{name}");
}

/// CKEditor 5's classic editor (Drupal's, many CMSs'), typed by keys: paragraphs and a soft break as typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ckeditor_makes_the_paragraphs_typed_by_keys() {
    let env = start().await;
    let c = on_editor(&env, "ckeditor", ".ck-editor__editable", None, true);
    made_once_on(
        &env,
        "ckeditor",
        &c,
        &in_paragraphs("First paragraph in CKEditor"),
    )
    .await;
}

/// TinyMCE in its classic mode (Moodle's, many CMSs'): the text is the body of the editor's own iframe,
/// typed by keys there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tinymce_in_its_iframe_makes_the_paragraphs_typed_by_keys() {
    let env = start().await;
    let c = on_editor(
        &env,
        "tinymce",
        "body#tinymce",
        Some("iframe#editor_ifr"),
        true,
    );
    made_once_on(
        &env,
        "tinymce",
        &c,
        &in_paragraphs("First paragraph in TinyMCE"),
    )
    .await;
}

/// CodeMirror 6, a plain-text (Markdown) editor: its lines are the text's lines, typed as text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codemirror_keeps_every_line_typed_as_text() {
    let env = start().await;
    let c = on_editor(&env, "codemirror", ".cm-content", None, false);
    made_once_on(
        &env,
        "codemirror",
        &c,
        &in_paragraphs("# A heading in CodeMirror"),
    )
    .await;
}

/// Trix (Rails' Action Text), whose document holds a line break as a character: typed as text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trix_keeps_every_line_typed_as_text() {
    let env = start().await;
    let c = on_editor(&env, "trix", "trix-editor", None, false);
    made_once_on(&env, "trix", &c, &in_paragraphs("First paragraph in Trix")).await;
}

/// Two editors React renders (slate-react, as Discord's composer; Draft.js, as Twitter's was), each taking
/// typed text from `beforeinput` and rendering it itself, Enter a new paragraph and Shift+Enter a line break
/// as such composers make them. Typed by keys, each makes exactly the paragraphs typed; typed as text too
/// (measured: both keep the line breaks of inserted text inside the paragraph's own text, which they render
/// as lines, and the page publishes that).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn react_editors_make_the_paragraphs_typed_by_keys_or_as_text() {
    let env = start().await;
    for (name, root) in [
        ("slate", "[data-slate-editor]"),
        ("draftjs", ".public-DraftEditor-content"),
    ] {
        for keys in [true, false] {
            let c = on_editor(&env, name, root, None, keys);
            let how = if keys { "by keys" } else { "as text" };
            let text = in_paragraphs(&format!("First paragraph in {name} {how}"));
            let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
            assert_eq!(code, 0, "{name} {how}: {v} {err}");
            assert_eq!(v["state"], "published", "{name} {how}: {v}");
            assert_eq!(env.copies(&text), 1, "{name} {how}: the very text: {v}");
        }
    }
    assert_eq!(env.arrivals(), 4);
}

/// A draft pixel on the block editor (`/compose?blocks=1&pixel=1`: every change sends the draft in a GET's
/// URL). Typed by keys, the page sees the post grow line by line: after its short first line the pixel holds
/// only that line, which the beginning of the whole post (what the door looks for) does not match. Each line
/// is watched on its own too: no pixel with a draft leaves, and the post goes out once. Before, the first
/// line's pixel left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_pixel_after_the_first_line_never_leaves() {
    let env = start().await;
    let c = std::fs::read_to_string(contract())
        .unwrap()
        .replace("/compose?blocks=1", "/compose?blocks=1&pixel=1");
    let path = env.write_file("blocks-pixel.toml", &c);
    let text = format!("Hello there\n\n{}", unique("and the rest of the post"));
    let (code, v, err) = env.publish("alice", &path, &text, &[]).await;
    assert_eq!(env.stats().writes_to("GET /api/pixel"), 0, "{v} {err}");
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1), "{v}");
}

/// A composer that draws each emoji typed as an image whose alt is the emoji (`&emoji=img`, as chat
/// composers do): the fill check reads each such image as its alt, so the post with emoji (in two
/// paragraphs, one with a skin tone and a flag) is pressed and made once, emoji kept. Red without: the
/// field showed no emoji, "another text", and nothing was pressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_composer_drawing_emoji_as_images_shows_the_post_typed() {
    let env = start().await;
    let c = std::fs::read_to_string(contract())
        .unwrap()
        .replace("/compose?blocks=1", "/compose?blocks=1&emoji=img");
    let path = env.write_file("blocks-emoji.toml", &c);
    let text = format!(
        "{} \u{1f389}\n\nThanks \u{1f44d}\u{1f3fd} from \u{1f1eb}\u{1f1f7} all",
        unique("Launched today")
    );
    let (code, v, err) = env.publish("alice", &path, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1), "{v}");
}

/// A composer that sends on Enter, as a chat box does (`/compose?blocks=1&enter_sends=1`: Enter clicks
/// Publish, Shift+Enter breaks the line). The Enter oncepost types between the two paragraphs makes the page
/// send the post long before any authorization: the door fails that request before it leaves; the
/// paragraphs stay glued in one block, the fill check refuses, nothing is pressed and nothing is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_sends_on_enter_gets_nothing_out_before_the_press() {
    let env = start().await;
    let c = std::fs::read_to_string(contract())
        .unwrap()
        .replace("/compose?blocks=1", "/compose?blocks=1&enter_sends=1");
    let path = env.write_file("blocks-enter-sends.toml", &c);
    let text = in_paragraphs("Sent on enter");
    let (code, v, err) = env.publish("alice", &path, &text, &[]).await;
    assert_eq!((env.arrivals(), env.copies(&text)), (0, 0), "{v} {err}");
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(v["state"], "failed", "{v}");
    assert_eq!(v["pressed"], false, "{v}");
    assert!(
        v["summary"]
            .as_str()
            .is_some_and(|s| s.contains("a field does not show what was typed")),
        "{v}"
    );
}

/// A probe filling a text in paragraphs types it by keys too (the text field shows it: the probe passes)
/// and sends nothing: Enter in a field is a key press like any other, and the door fails whatever a page
/// sends for it before the press.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_types_paragraphs_by_keys_and_sends_nothing() {
    let env = start().await;
    let text = in_paragraphs("Probed in blocks");
    let (code, report, err) = env.probe_fill_with(&contract(), Some(&text), 300).await;
    assert_eq!(code, 0, "{report} {err}");
    assert!(
        !report["problems"].to_string().contains("field:text"),
        "{report}"
    );
    assert_eq!(env.arrivals(), 0, "{report}");
    assert_eq!(env.stats().other_writes_total, 0, "{report}");
}

/// `contract check` refuses `newlines = "keys"` on a textarea (it takes line breaks as typed text) and on an
/// input (Enter submits its form), `shown_in` on a url field, and both in a format 1 contract.
#[tokio::test]
async fn a_contract_that_types_keys_where_they_do_not_belong_is_refused() {
    let env = start().await;
    let good = std::fs::read_to_string(contract()).unwrap();
    let textarea = good.replacen("kind = \"contenteditable\"", "kind = \"textarea\"", 1);
    let input = good.replace(
        "locator = { strategies = [{ css = \"#post-title\" }, { role = \"textbox\", name = \"Title\" }] }\n",
        "locator = { strategies = [{ css = \"#post-title\" }, { role = \"textbox\", name = \"Title\" }] }\nnewlines = \"keys\"\n",
    );
    let url_field = good.replace(
        "[[compose.fields]]\nname = \"title\"",
        "[[compose.fields]]\nname = \"where\"\nkind = \"url\"\nshown_in = { strategies = [{ css = \"#x\" }] }\n\n[[compose.fields]]\nname = \"title\"",
    ).replace("/compose?blocks=1", "/compose?blocks=1&where={field:where}");
    let format1 = good.replace("format = 2", "format = 1");
    for (name, c, says) in [
        (
            "textarea",
            &textarea,
            "newlines = \"keys\" is for contenteditable editors, not a textarea field",
        ),
        (
            "input",
            &input,
            "newlines = \"keys\" is for contenteditable editors, not a text_input field",
        ),
        (
            "url",
            &url_field,
            "a url field is never typed, so it shows nowhere",
        ),
        ("format1", &format1, "newlines needs format = 2"),
        ("format1", &format1, "shown_in needs format = 2"),
    ] {
        assert_ne!(c, &good, "{name}");
        env.assert_check_refuses(&format!("blocks-{name}"), c, says)
            .await;
    }
}

/// CKEditor typed as text (the contract without `newlines = "keys"`): the editor makes the typed line break
/// a paragraph, the platform stores other line breaks, and the read-back parks the post, saying the words
/// are the same and the field needs keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rich_editor_typed_as_text_is_parked_with_a_why_naming_the_line_breaks() {
    let env = start().await;
    let c = on_editor(&env, "ckeditor", ".ck-editor__editable", None, false);
    let text = in_paragraphs("First paragraph in CKEditor, typed as text");
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 12, "{v} {err}");
    assert_eq!(v["state"], "parked", "{v}");
    assert_eq!(
        (env.arrivals(), env.copies(&text)),
        (1, 0),
        "made once, other breaks"
    );
    let show = env.show(v["key"].as_str().unwrap()).await.to_string();
    assert!(
        show.contains("other line breaks") && show.contains("newlines"),
        "{show}"
    );
}

/// A page that puts the caret at the start of its text field while the typing goes on
/// (`/compose?caret_reset=1`, as DokuWiki's ready handler did when it ran late): the caret goes back to the
/// end of what was typed before the last key, and the post goes in whole. Red without that: the last key at
/// the start, refused before the press.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_moves_the_caret_while_typing_still_gets_the_text_whole() {
    let env = start().await;
    let c = env.write_file("caret-reset.toml", &kit::compose_asking("caret_reset=1"));
    let text = unique("typed while the page moved its caret");
    let (code, v, err) = env.publish("alice", &c, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1), "{v}");
}

/// `fixtures/contracts/blocks.toml` on Fixturebook's model-driven editor (`/compose?model_editor=1`: one
/// contenteditable document of paragraphs that drops input whose selection is anchored on the document itself,
/// between its paragraphs, as MediaWiki's VisualEditor lost it), the text field filled as given (`fill`).
fn on_model_editor(env: &kit::Env, fill: Option<&str>) -> PathBuf {
    let c = std::fs::read_to_string(contract()).unwrap();
    let shown_in = "shown_in = { strategies = [{ css = \"#post-blocks\" }] }\n";
    assert!(c.contains(shown_in));
    let mut c = c
        .replace("/compose?blocks=1", "/compose?model_editor=1")
        .replace("#post-blocks > p.block:first-child", "#post-doc")
        .replace(shown_in, "");
    if let Some(fill) = fill {
        c = c.replacen(
            "kind = \"contenteditable\"\n",
            &format!("kind = \"contenteditable\"\nfill = \"{fill}\"\n"),
            1,
        );
    }
    env.write_file(
        &format!("model-editor-{}.toml", fill.unwrap_or("default")),
        &c,
    )
}

/// An editor that keeps its own model takes what is typed only where its model has a position: inside a
/// paragraph. The fill puts the selection there (from the first leaf of the field's text to the last), in
/// both fill modes, and the post is made once, its paragraphs as typed. Red with the selection on the
/// editor's root (`selectNodeContents`, as before): the typed text dropped, the fill check refused it,
/// nothing pressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_driven_editor_takes_the_text_typed_inside_its_paragraphs() {
    let env = start().await;
    for fill in [None, Some("replace"), Some("append")] {
        let path = on_model_editor(&env, fill);
        let text = in_paragraphs(&format!("In a model editor ({fill:?})"));
        let (code, v, err) = env.publish("alice", &path, &text, &[]).await;
        assert_eq!(code, 0, "{fill:?}: {v} {err}");
        assert_eq!(v["state"], "published", "{fill:?}: {v}");
        assert_eq!(env.copies(&text), 1, "{fill:?}: the very text: {v}");
    }
    assert_eq!(env.arrivals(), 3);
}

/// A post of 150 paragraphs (about 9,000 characters), more than CodeMirror 6 draws at once.
fn a_long_post(label: &str) -> String {
    let mut text = unique(label);
    for i in 0..150 {
        text.push_str(&format!(
            "\n\nParagraph {i} of a long post, a few words more to make a line."
        ));
    }
    text
}

/// CodeMirror 6 draws only the lines near the viewport (about 1000 px around it) and the caret's line: a
/// long post is never all in the page, so the fill check reads the field while scrolling the box that holds
/// it, from top to bottom, and each part shown must be the typed text's, together all of it. Made once,
/// exactly, with the page growing with the editor (the document scrolls) and with the editor boxed at 300 px
/// (`?height=300`: it scrolls inside itself). Red without the scrolled read: "the field shows other text
/// than was typed (2039 of 11950 characters ...)", nothing pressed, never made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codemirror_makes_a_long_post_it_never_draws_whole() {
    let env = start().await;
    let grows = on_editor(&env, "codemirror", ".cm-content", None, false);
    let boxed = env.write_file(
        "editor-codemirror-boxed.toml",
        &std::fs::read_to_string(&grows)
            .unwrap()
            .replace("/editors/codemirror", "/editors/codemirror?height=300"),
    );
    // And on a page that scrolls smoothly (`scroll-behavior: smooth`, as Bootstrap 5 sets on `:root`), where
    // a position set by a script is reached over several frames: the read scrolls at once (red when it sets
    // `scrollTop`: the page had not moved by the read, every part the same, refused).
    let smooth = |c: &PathBuf, name: &str, from: &str, to: &str| {
        let text = std::fs::read_to_string(c).unwrap();
        assert!(text.contains(from));
        env.write_file(name, &text.replace(from, to))
    };
    let grows_smooth = smooth(
        &grows,
        "editor-codemirror-smooth.toml",
        "/editors/codemirror\"",
        "/editors/codemirror?smooth_scroll=1\"",
    );
    let boxed_smooth = smooth(
        &boxed,
        "editor-codemirror-boxed-smooth.toml",
        "/editors/codemirror?height=300",
        "/editors/codemirror?height=300&smooth_scroll=1",
    );
    for (label, contract) in [
        ("growing", grows),
        ("boxed", boxed),
        ("growing, scrolled smoothly", grows_smooth),
        ("boxed, scrolled smoothly", boxed_smooth),
    ] {
        let text = a_long_post(&format!("# A long post in CodeMirror, {label}"));
        let (code, v, err) = env.publish("alice", &contract, &text, &[]).await;
        assert_eq!(code, 0, "{label}: {v} {err}");
        assert_eq!(v["state"], "published", "{label}: {v}");
        assert_eq!(env.copies(&text), 1, "{label}: the very text: {v}");
    }
    assert_eq!(env.arrivals(), 4);
}

/// The scrolled read still refuses what a plain read refuses: CodeMirror 6 keeping only the first 201 lines
/// of the long post's 301 (`?max_lines=201`, a limit no `maxlength` shows, cut where a line ends: every word
/// in view is a typed one): scrolled through, the field never shows the post's end, so nothing is pressed
/// and nothing made. (A post shorter than the limit is made on the same page.) Red if the parts shown need
/// not reach the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codemirror_that_cuts_a_long_post_is_never_pressed() {
    let env = start().await;
    let c = on_editor(&env, "codemirror", ".cm-content", None, false);
    let cut = env.write_file(
        "editor-codemirror-cut.toml",
        &std::fs::read_to_string(&c).unwrap().replace(
            "/editors/codemirror",
            "/editors/codemirror?height=300&max_lines=201",
        ),
    );
    let text = a_long_post("# A long post CodeMirror cuts");
    let (code, v, err) = env.publish("alice", &cut, &text, &[]).await;
    assert_ne!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "failed", "{v}");
    assert_eq!(v["pressed"], false, "{v}");
    let steps = v["steps"].to_string();
    assert!(steps.contains("field:text"), "the field is named: {v}");
    assert_eq!(env.arrivals(), 0, "nothing pressed, nothing made");
    let short = in_paragraphs("A short post under the limit");
    made_once_on(&env, "codemirror", &cut, &short).await;
}

/// [`on_real_editor`] for EasyMDE (CodeMirror 5): typed into CodeMirror's own input textarea, where a
/// person's typing goes once the editor is clicked, and read where the editor draws the text. That textarea
/// sits under the first line (a hit test lands on the line), so the field does not require
/// `receives_events`.
fn on_easymde(env: &kit::Env, query: &str) -> PathBuf {
    let c = easymde_contract(query).replace(
        "{ css = \".EasyMDEContainer .CodeMirror textarea\" }]",
        "{ css = \".EasyMDEContainer .CodeMirror textarea\" }], \
         states = [\"attached\", \"visible\", \"enabled\", \"editable\"]",
    );
    env.write_file(&format!("editor-easymde{}.toml", query.len()), &c)
}

/// The block editor's contract on EasyMDE, the field CodeMirror's input with the default field states.
fn easymde_contract(query: &str) -> String {
    std::fs::read_to_string(contract())
        .unwrap()
        .replace("/compose?blocks=1", &format!("/editors/easymde{query}"))
        .replace("kind = \"contenteditable\"", "kind = \"textarea\"")
        .replace(
            "#post-blocks > p.block:first-child",
            ".EasyMDEContainer .CodeMirror textarea",
        )
        .replace("newlines = \"keys\"\n", "")
        .replace(
            "css = \"#post-blocks\"",
            "css = \".EasyMDEContainer .CodeMirror-code\"",
        )
}

/// EasyMDE, the Markdown editor of many self-hosted forges, wikis and forums, on CodeMirror 5: typed as text
/// into CodeMirror's input textarea, checked where it draws the lines: a short post and a long one in the
/// editor growing with its text, and a long one in the editor boxed at 300 px (`?height=300`: CodeMirror 5
/// then draws only the lines near what is in view).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn easymde_on_codemirror_5_makes_short_and_long_posts() {
    let env = start().await;
    let grows = on_easymde(&env, "");
    let boxed = on_easymde(&env, "?height=300");
    let posts = [
        (&grows, in_paragraphs("# A heading in EasyMDE")),
        (&grows, a_long_post("# A long post in EasyMDE, growing")),
        (&boxed, a_long_post("# A long post in EasyMDE")),
    ];
    for (i, (contract, text)) in posts.iter().enumerate() {
        let (code, v, err) = env.publish("alice", contract, text, &[]).await;
        assert_eq!(code, 0, "post {i}: {v} {err}");
        assert_eq!(v["state"], "published", "post {i}: {v}");
        assert_eq!(env.copies(text), 1, "post {i}: the very text: {v}");
    }
    assert_eq!(env.arrivals(), 3);
}

/// A contract typing into CodeMirror 5's own input with the default field states: the probe fails the field
/// (a hit test at its centre lands on the editor's first line) and says what it is and what to declare, so a
/// contract's author is not left with "covered by pre.CodeMirror-line" alone. Nothing is pressed by a probe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_names_a_code_editors_own_input_and_what_to_declare() {
    let env = start().await;
    let c = env.write_file("editor-easymde-default.toml", &easymde_contract(""));
    let (code, v, err) = env.probe_fill(&c, 0).await;
    assert_eq!(code, 3, "{v} {err}");
    let report = v.to_string();
    assert!(
        report.contains("not receives_events (covered by pre.CodeMirror-line"),
        "{report}"
    );
    assert!(
        report.contains("a code editor's own input") && report.contains("without receives_events"),
        "{report}"
    );
    assert_eq!(env.arrivals(), 0);
}
