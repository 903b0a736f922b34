//! Fixturebook's compose pages on real editors from npm, `/editors/NAME` (ProseMirror, Lexical, Quill,
//! CKEditor 5, TinyMCE, CodeMirror 6, EasyMDE on CodeMirror 5, Trix, and two on React 18: Slate and Draft.js): the compose page with its text field replaced by the editor
//! (bundled from `fixtures/editors/*.js` by scripts/setup.sh, served from `.npm-editors/site/` or
//! `ONCEPOST_FIXTURE_EDITORS`). Each page publishes the editor's own
//! model, paragraphs joined by a blank line and line breaks kept, through the hidden textarea the compose
//! script sends: what the platform stores is what the editor made of what was typed.
use std::path::PathBuf;

use hyper::body::Bytes;

/// A real editor's compose page.
struct Editor {
    name: &'static str,
    /// The element the editor mounts on.
    mount: &'static str,
    /// Its stylesheet, if it needs one.
    css: Option<&'static str>,
}

const EDITORS: &[Editor] = &[
    Editor {
        name: "prosemirror",
        mount: r#"<div id="editor" class="rich-editor" aria-label="Post text"></div>"#,
        css: None,
    },
    Editor {
        name: "lexical",
        mount: r#"<div id="editor" class="rich-editor" contenteditable="true" aria-label="Post text"></div>"#,
        css: None,
    },
    Editor {
        name: "quill",
        mount: r#"<div id="editor" class="rich-editor" aria-label="Post text"></div>"#,
        css: Some("quill.core.css"),
    },
    Editor {
        name: "ckeditor",
        mount: r#"<div id="editor" class="rich-editor"></div>"#,
        css: Some("ckeditor.css"),
    },
    // Classic mode: the editor hides this and types in the body of an iframe of its own.
    Editor {
        name: "tinymce",
        mount: r#"<textarea id="editor" aria-label="Post text"></textarea>"#,
        css: None,
    },
    Editor {
        name: "codemirror",
        mount: r#"<div id="editor" class="rich-editor" aria-label="Post text"></div>"#,
        css: None,
    },
    // EasyMDE hides this and puts CodeMirror 5 after it.
    Editor {
        name: "easymde",
        mount: r#"<textarea id="editor" aria-label="Post text"></textarea>"#,
        css: Some("easymde.css"),
    },
    Editor {
        name: "trix",
        mount: r#"<trix-editor id="editor" class="rich-editor" aria-label="Post text"></trix-editor>"#,
        css: Some("trix.css"),
    },
    // React renders the editor into this; its contenteditable is the editor's own element inside.
    Editor {
        name: "slate",
        mount: r#"<div id="editor" class="react-root"></div>"#,
        css: None,
    },
    Editor {
        name: "draftjs",
        mount: r#"<div id="editor" class="react-root"></div>"#,
        css: Some("draftjs.css"),
    },
];

/// The files served under `/editors/static/`.
const ASSETS: &[(&str, &str)] = &[
    ("prosemirror.js", "text/javascript; charset=utf-8"),
    ("lexical.js", "text/javascript; charset=utf-8"),
    ("quill.js", "text/javascript; charset=utf-8"),
    ("quill.core.css", "text/css; charset=utf-8"),
    ("ckeditor.js", "text/javascript; charset=utf-8"),
    ("ckeditor.css", "text/css; charset=utf-8"),
    ("tinymce.js", "text/javascript; charset=utf-8"),
    ("codemirror.js", "text/javascript; charset=utf-8"),
    ("easymde.js", "text/javascript; charset=utf-8"),
    ("easymde.css", "text/css; charset=utf-8"),
    ("trix.js", "text/javascript; charset=utf-8"),
    ("trix.css", "text/css; charset=utf-8"),
    ("slate.js", "text/javascript; charset=utf-8"),
    ("draftjs.js", "text/javascript; charset=utf-8"),
    ("draftjs.css", "text/css; charset=utf-8"),
];

/// `compose` (the compose page) with its text field replaced by the editor `name`; `None` for an unknown one.
pub fn page(name: &str, compose: String) -> Option<String> {
    let editor = EDITORS.iter().find(|e| e.name == name)?;
    // The textarea stays, hidden: the compose script sends its value, which the editor's model fills.
    let page = compose.replacen(
        r#"<textarea id="post-text""#,
        &format!(r#"{}<textarea hidden id="post-text""#, editor.mount),
        1,
    );
    let css = editor
        .css
        .map(|c| format!(r#"<link rel="stylesheet" href="/editors/static/{c}">"#))
        .unwrap_or_default();
    let style = "<style>.rich-editor,.react-root [contenteditable]{min-height:4em;border:1px solid #ccc;padding:4px;white-space:pre-wrap}</style>";
    let script = format!(
        r#"{css}{style}<script src="/editors/static/{}.js"></script>"#,
        editor.name
    );
    Some(super::routes::before_body_end(page, &script))
}

/// Where the bundles are: `ONCEPOST_FIXTURE_EDITORS`, else the build tree's `.npm-editors/site`.
fn site() -> PathBuf {
    std::env::var_os("ONCEPOST_FIXTURE_EDITORS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.npm-editors/site")))
}

/// An editor's file: its content type and bytes, or why not (unknown, or not installed).
pub async fn asset(file: &str) -> Result<(&'static str, Bytes), String> {
    let Some((_, content_type)) = ASSETS.iter().find(|(f, _)| *f == file) else {
        return Err(format!("no editor file {file:?}"));
    };
    let path = site().join(file);
    tokio::fs::read(&path)
        .await
        .map(|b| (*content_type, Bytes::from(b)))
        .map_err(|e| {
            format!(
                "{}: {e} (scripts/setup.sh installs the editors; ONCEPOST_FIXTURE_EDITORS names another directory)",
                path.display()
            )
        })
}
