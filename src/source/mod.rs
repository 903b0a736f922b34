//! Sources: the article or release page a post rests on, captured as a NORMALIZED visible body.
//!
//! A source version is [`SourceVersionId::of`]`(stable id, normalized body)`. The raw bytes are never part of
//! it: a page's chrome (scripts, CSRF tokens, "updated 5 minutes ago", the footer's clock) changes on every
//! fetch, and a version that changed with them would make every fetch a "new version" of an unchanged
//! source. So the body is reduced to the text a reader sees, with the volatile tokens taken out, and that is
//! hashed. The raw bytes' sha256 is kept beside the version as capture metadata ([`SourceBody::raw_hash`]).
//!
//! # The normalizer ([`normalize::normalize`])
//!
//! The result is a list of visible text blocks joined by `\n` (no trailing newline). Every block is put in
//! Unicode NFC, its whitespace runs (any Unicode white space, NBSP included) become one space, it is trimmed,
//! and a block left empty is dropped. The invisible format characters U+FEFF (a byte order mark), U+200B
//! (zero-width space) and U+00AD (soft hyphen) are removed: they change nothing a reader sees.
//!
//! ## HTML
//!
//! The page is parsed by html5ever (through `scraper`), the HTML parser of Servo, which builds the tree a
//! browser would (entities decoded, misnested tags repaired); what scripts would do to the page is not run.
//!
//! 1. **Root.** The first `<article>`, else the first `<main>`, else the first element with `role="main"`,
//!    else `<body>`, else the whole document. A candidate inside something dropped below (a `<template>`, a
//!    hidden element, a `<nav>`, `<aside>`, `<header>` or `<footer>` of the page) does not count: an article
//!    teaser in a sidebar is not the article.
//! 2. **Dropped whole** (the element and everything in it), anywhere under the root: `script`, `style`,
//!    `noscript`, `template`, `svg`, `canvas`, `iframe`, `object`, `embed`, `head`, `link`, `meta`, the form
//!    controls `input`, `select`, `textarea`, `button`, `option`, a `dialog` without `open`, and any element
//!    with the `hidden` attribute, with `aria-hidden="true"`, or with an inline `style` that says
//!    `display:none` or `visibility:hidden` (spaces and case ignored). None of these is text a reader sees;
//!    they are where tokens, nonces and tracking values live.
//! 3. **Site chrome.** `nav` and `aside` are always dropped. When the root is `<body>` (the page marks no
//!    article or main content), `header` and `footer` are dropped too: they are the site's banner and footer.
//!    Inside an article or main root they are kept, because an article's own title and byline live there.
//! 4. **Text.** Text nodes are the text; comments, `<img alt>` and attribute values are not. Block-level
//!    elements (`p`, `div`, `section`, `article`, `main`, `li`, `ul`, `ol`, `h1`-`h6`, `blockquote`, `pre`,
//!    `table`, `caption`, `thead`, `tbody`, `tfoot`, `tr`, `td`, `th`, `dl`, `dt`, `dd`, `figure`,
//!    `figcaption`, `header`, `footer`, `nav`, `aside`, `address`, `details`, `summary`, `fieldset`, `legend`,
//!    `form`, `hgroup`, `menu`, `dialog`, `center`, `search`, `body`, `html`, and `hr`, `br`) end a block
//!    where they open and where they close; every other element (`a`, `span`, `em`, `code`, `time`, custom
//!    elements) is inline and does not, so `<p>a <em>b</em></p>` is the one block `a b`.
//!
//! ## Plain text
//!
//! CRLF and CR become LF. Paragraphs are separated by one or more blank lines (a line of only white space
//! is blank); the lines of one paragraph are joined with a space, so re-wrapping a paragraph is not a change.
//! Each paragraph is a block, as above. `a\n\nb` and `<p>a</p><p>b</p>` normalize to the same body.
//!
//! ## Volatile tokens
//!
//! Then, in every block, these are removed (in this order, each a regex in `normalize.rs`; ASCII word
//! boundaries), whitespace is collapsed again and blocks left empty are dropped:
//!
//! 1. ISO 8601 / RFC 3339 date-times that carry a time: `2026-12-03T16:14:00Z`, `2026-12-03T16:14Z`,
//!    `2026-12-03 16:14:00.123+01:00`. With a `T` the seconds are optional (that form is machine-written);
//!    with a space they are required, so `2026-12-04 10:30` (an event's date and time) stays. Fractions and a
//!    zone (`Z`, `+01:00`, `+0100`, `+01`) are taken with it.
//! 2. Clock times with seconds: `16:14:03`, `4:14:03 PM`, `16:14:03.250` (hour 0-23, so a duration such as
//!    `25:13:07` stays; a race time such as `2:01:09` does not, and a change of it alone is not seen).
//! 3. Relative times, English, case-insensitive: `5 minutes ago`, `an hour ago`, `a few seconds ago`,
//!    `two days ago`, `3h ago`, `moments ago`, `just now`. Words before them (`Updated`) stay.
//! 4. UUIDs: `0f8fad5b-d9cb-469f-a165-70867728950e`.
//! 5. Token-like runs: 24 or more characters from `A-Z a-z 0-9 _ - + / =` that contain both a letter and a
//!    digit (CSRF tokens, nonces, base64 and base64url values, session ids). A long hyphenated phrase or URL
//!    path with a digit in it is such a run too, and goes.
//! 6. Runs of 16 or more hex digits (hashes, request ids, long numbers).
//! 7. Unix timestamps: 10 or 13 digits starting with `1`, standing alone as a word (`1733241600`).
//!
//! What stays, on purpose: a date without a time (`2026-12-04`, `Dec 4, 2026`, `4 December`) and a time
//! without seconds (`10:30`). Those are what an article says (an event's date, a deadline), and a corrected
//! date is a real change of the source: it must give a new version. `yesterday` and `today` stay too.
//!
//! The normalizer is a pure function with no I/O, and bodies are at most [`MAX_SOURCE_BYTES`]. Its work is
//! linear in the body: the tree is walked without recursion and the regexes are finite automata. html5ever's
//! tree builder does work proportional to the nesting depth for every tag, so parsing stops at an element
//! nested deeper than [`normalize::MAX_HTML_DEPTH`] (512, where Chromium and WebKit stop nesting too), and a
//! capture of such a page is refused rather than versioned from part of it. One cost is not bounded here:
//! html5ever's tokenizer checks every attribute of a tag against the ones before it, so a crafted tag with
//! hundreds of thousands of distinct attributes takes time quadratic in their number (no page that is not
//! built for it comes close).
//!
//! # Fetching
//!
//! [`fetch::fetch`] is a plain GET as nobody (no cookies, no browser); see its module for why.
use sha2::{Digest, Sha256};

use crate::identity::{SourceVersionId, canonical_source_id};

pub mod fetch;
pub mod normalize;

/// The largest source body accepted, raw bytes (4 MiB).
pub const MAX_SOURCE_BYTES: usize = 4 * 1024 * 1024;
/// Longest stable id, characters.
pub const MAX_SOURCE_ID_CHARS: usize = 2048;

/// How a body is read: as an HTML page or as plain text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyKind {
    /// An HTML (or XHTML) page: its visible text is extracted.
    Html,
    /// Plain text: paragraphs separated by blank lines.
    Text,
}

/// Tag names whose opening, at the very start of a body, says "this is HTML" when no Content-Type does.
const SNIFF_TAGS: &[&str] = &[
    "html",
    "head",
    "body",
    "article",
    "main",
    "section",
    "div",
    "p",
    "span",
    "a",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "ul",
    "ol",
    "li",
    "table",
    "pre",
    "blockquote",
    "header",
    "footer",
    "nav",
    "meta",
    "title",
    "link",
    "script",
    "style",
    "br",
    "hr",
    "img",
    "form",
    "b",
    "i",
    "em",
    "strong",
];

impl BodyKind {
    /// From a Content-Type (if any; `text/html`, `application/xhtml+xml` → Html, other `text/*` → Text) and
    /// else by sniffing the body: it is Html when its first non-whitespace bytes open a doctype
    /// (`<!doctype html`), a comment (`<!--`) or a common HTML tag (`<html`, `<head`, `<body`, `<article`,
    /// `<div`, `<p`, ...; case-insensitive, the tag name followed by `>`, `/` or white space).
    pub fn sniff(content_type: Option<&str>, body: &str) -> BodyKind {
        if let Some(ct) = content_type {
            let mime = ct
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            if mime == "text/html" || mime == "application/xhtml+xml" {
                return BodyKind::Html;
            }
            if mime.starts_with("text/") {
                return BodyKind::Text;
            }
            // Anything else (application/octet-stream, a missing or wrong type) says nothing: sniff.
        }
        let start = body.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
        // A short prefix is enough to decide, and lowercasing only it keeps sniffing O(1).
        let head: String = start
            .chars()
            .take(16)
            .collect::<String>()
            .to_ascii_lowercase();
        if head.starts_with("<!doctype html") || head.starts_with("<!--") {
            return BodyKind::Html;
        }
        let Some(rest) = head.strip_prefix('<') else {
            return BodyKind::Text;
        };
        let name_len = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        let (name, after) = rest.split_at(name_len);
        let closes = after
            .chars()
            .next()
            .is_some_and(|c| c == '>' || c == '/' || c.is_whitespace());
        if closes && SNIFF_TAGS.contains(&name) {
            BodyKind::Html
        } else {
            BodyKind::Text
        }
    }

    /// The one spelling of this kind: `html` or `text`.
    pub fn label(self) -> &'static str {
        match self {
            BodyKind::Html => "html",
            BodyKind::Text => "text",
        }
    }
}

impl std::fmt::Display for BodyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// One captured body of a source, ready for the store.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SourceBody {
    /// The canonical stable id ([`canonical_source_id`] of what was given).
    pub stable_id: String,
    /// How the body was read.
    pub kind: BodyKind,
    /// The normalized visible body ([`normalize::normalize`]): what the version is computed from.
    pub normalized: String,
    /// sha256 (hex) of the raw bytes: capture metadata, never identity.
    pub raw_hash: String,
    /// Length of the raw bytes.
    pub raw_len: usize,
    /// Who captured it, as the caller says: `file`, `url` or `text`.
    pub via: String,
}

impl SourceBody {
    /// Check, decode and normalize one captured body. `content_type` is the server's (or none for a file or
    /// text); `via` is recorded as given.
    pub fn from_raw(
        stable_id: &str,
        raw: &[u8],
        content_type: Option<&str>,
        via: &str,
    ) -> Result<SourceBody, SourceError> {
        let stable_id = check_stable_id(stable_id)?;
        if raw.len() > MAX_SOURCE_BYTES {
            return Err(SourceError::TooLarge { bytes: raw.len() });
        }
        let text = std::str::from_utf8(raw).map_err(|e| SourceError::NotUtf8 {
            offset: e.valid_up_to(),
        })?;
        let kind = BodyKind::sniff(content_type, text);
        let normalized = normalize::normalize_complete(text, kind).ok_or(SourceError::TooDeep)?;
        if normalized.is_empty() {
            return Err(SourceError::NothingVisible { kind });
        }
        Ok(SourceBody {
            stable_id,
            kind,
            normalized,
            raw_hash: hex::encode(Sha256::digest(raw)),
            raw_len: raw.len(),
            via: via.to_string(),
        })
    }

    /// This body's version: [`SourceVersionId::of`] its stable id and normalized body.
    pub fn version(&self) -> SourceVersionId {
        SourceVersionId::of(&self.stable_id, &self.normalized)
    }
}

/// Check a stable id (a URL or an object id) and return its canonical form ([`canonical_source_id`]).
pub fn check_stable_id(stable_id: &str) -> Result<String, SourceError> {
    let t = stable_id.trim();
    if t.is_empty() {
        return Err(SourceError::EmptyId);
    }
    let chars = t.chars().count();
    if chars > MAX_SOURCE_ID_CHARS {
        return Err(SourceError::IdTooLong { chars });
    }
    // Checked before canonicalizing: the URL parser silently drops tabs and newlines, and an id that
    // carried one was most likely pasted wrong.
    if let Some((at, c)) = t.chars().enumerate().find(|(_, c)| c.is_control()) {
        return Err(SourceError::IdControl {
            found: c.escape_unicode().to_string(),
            at: at + 1,
        });
    }
    let canonical = canonical_source_id(t);
    // Canonicalizing can lengthen a URL (percent-encoding); the limit holds for what is stored.
    let chars = canonical.chars().count();
    if chars > MAX_SOURCE_ID_CHARS {
        return Err(SourceError::IdTooLong { chars });
    }
    Ok(canonical)
}

/// Why a source could not be captured. Every message names the limit or the fix.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The stable id is empty (after trimming).
    #[error("the source id is empty: give the source's URL or an id that names it")]
    EmptyId,
    /// The stable id is too long.
    #[error(
        "the source id is {chars} characters; the limit is {MAX_SOURCE_ID_CHARS} characters: use the \
         page's canonical URL (without tracking parameters) or a shorter id"
    )]
    IdTooLong {
        /// Its length, characters.
        chars: usize,
    },
    /// The stable id contains a control character.
    #[error(
        "the source id contains a control character ({found} at character {at}): give it on one line, \
         without tabs or escape codes"
    )]
    IdControl {
        /// The character, escaped (`\u{9}`).
        found: String,
        /// Its position, counting from 1.
        at: usize,
    },
    /// The raw body is larger than [`MAX_SOURCE_BYTES`].
    #[error(
        "the source body is {bytes} bytes; the limit is {MAX_SOURCE_BYTES} bytes (4 MiB): give the part \
         of the page the post rests on"
    )]
    TooLarge {
        /// Its size, bytes.
        bytes: usize,
    },
    /// The raw body is not UTF-8; encodings are not guessed.
    #[error(
        "the source body is not UTF-8 (the first bad byte is at offset {offset}); oncepost does not guess \
         encodings: convert it to UTF-8 (for example with iconv) and give it again"
    )]
    NotUtf8 {
        /// Offset of the first byte that is not valid UTF-8.
        offset: usize,
    },
    /// The HTML nests elements deeper than [`normalize::MAX_HTML_DEPTH`]; the rest was not read.
    #[error(
        "the source page nests elements more than {max} deep (browsers stop nesting there too) and was not \
         read past that point; a version of part of a page would miss changes after it: save the text you \
         read and give it as a text file",
        max = normalize::MAX_HTML_DEPTH
    )]
    TooDeep,
    /// Normalization left nothing.
    #[error(
        "nothing visible is left after normalization: the {kind} body has no text outside scripts, styles, \
         hidden elements, site chrome (nav, header, footer, aside) and volatile tokens (timestamps, \
         tokens, ids); if the page builds its text with JavaScript, save the text you read and give that"
    )]
    NothingVisible {
        /// How the body was read.
        kind: BodyKind,
    },
    /// The URL does not parse.
    #[error("{url} is not a URL that can be fetched: {why}")]
    BadUrl {
        /// The URL as given (redacted, cut).
        url: String,
        /// The parser's reason.
        why: String,
    },
    /// Not an http or https URL; refused before any connection.
    #[error(
        "only http and https source URLs are fetched; {url} is {scheme}: (nothing was fetched): give an \
         http(s) URL, or save the source and give it as a file"
    )]
    Scheme {
        /// The URL as given (redacted, cut).
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// The server answered with a status outside 2xx.
    #[error("the source URL answered {status} {reason} ({url}); nothing was captured")]
    Status {
        /// The URL that answered (after redirects; redacted, cut).
        url: String,
        /// The HTTP status code.
        status: u16,
        /// The status's reason phrase.
        reason: String,
    },
    /// The server sent more than [`MAX_SOURCE_BYTES`].
    #[error(
        "the source URL sent more than {MAX_SOURCE_BYTES} bytes (4 MiB) ({url}); reading stopped there and \
         nothing was captured: save the part of the page the post rests on and give it as a file"
    )]
    FetchTooLarge {
        /// The URL (redacted, cut).
        url: String,
    },
    /// The whole exchange did not finish in time.
    #[error(
        "the source URL did not answer in full within {timeout:?} ({url}); nothing was captured: try again \
         later or with a longer timeout"
    )]
    Timeout {
        /// The URL (redacted, cut).
        url: String,
        /// The bound.
        timeout: std::time::Duration,
    },
    /// More redirects than [`fetch::MAX_REDIRECTS`].
    #[error(
        "the source URL redirected more than {max} times ({url}); nothing was captured: give the URL it \
         finally lands on",
        max = fetch::MAX_REDIRECTS
    )]
    TooManyRedirects {
        /// The URL (redacted, cut).
        url: String,
    },
    /// Any other transport failure (DNS, connection, TLS, a broken body).
    #[error("fetching the source URL failed ({url}): {why}; nothing was captured")]
    Http {
        /// The URL (redacted, cut).
        url: String,
        /// The error and its causes (redacted).
        why: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ID: &str = "https://example.org/a";

    fn body(id: &str, raw: &str, ct: Option<&str>) -> SourceBody {
        SourceBody::from_raw(id, raw.as_bytes(), ct, "text").expect("a body")
    }

    #[test]
    fn sniffing() {
        use BodyKind::{Html, Text};
        assert_eq!(
            BodyKind::sniff(Some("text/html; charset=utf-8"), "plain"),
            Html
        );
        assert_eq!(
            BodyKind::sniff(Some("Application/XHTML+XML"), "plain"),
            Html
        );
        assert_eq!(BodyKind::sniff(Some("text/plain"), "<p>x</p>"), Text);
        assert_eq!(BodyKind::sniff(Some("text/markdown"), "<p>x</p>"), Text);
        assert_eq!(
            BodyKind::sniff(Some("application/octet-stream"), "<p>x</p>"),
            Html
        );
        for h in [
            "<!DOCTYPE html><p>x",
            "\u{feff}\n  <html lang=en>",
            "<HEAD>",
            "<body>",
            "<article class=a>",
            "<div>",
            "<p>x",
            "<br/>",
            "<!-- c -->",
        ] {
            assert_eq!(BodyKind::sniff(None, h), Html, "{h}");
        }
        for t in [
            "plain",
            "<pizza> is not a tag",
            "< p>",
            "<paragraph>",
            "",
            "a <p>",
        ] {
            assert_eq!(BodyKind::sniff(None, t), Text, "{t}");
        }
        assert_eq!(BodyKind::Html.label(), "html");
        assert_eq!(BodyKind::Text.label(), "text");
        assert_eq!(
            serde_json::to_string(&BodyKind::Html).ok().as_deref(),
            Some("\"html\"")
        );
    }

    #[test]
    fn from_raw_fills_the_body() {
        let b = SourceBody::from_raw(
            " https://Example.org:443/a#x ",
            b"<p>Hello</p><script>x</script>",
            Some("text/html"),
            "url",
        )
        .expect("a body");
        assert_eq!(b.stable_id, "https://example.org/a");
        assert_eq!(b.kind, BodyKind::Html);
        assert_eq!(b.normalized, "Hello");
        assert_eq!(b.raw_len, 30);
        assert_eq!(
            b.raw_hash,
            hex::encode(Sha256::digest(b"<p>Hello</p><script>x</script>"))
        );
        assert_eq!(b.via, "url");
        assert_eq!(
            b.version(),
            SourceVersionId::of("https://example.org/a", "Hello")
        );
    }

    #[test]
    fn from_raw_refusals_name_the_limit_or_fix() {
        let e = |id: &str, raw: &[u8]| {
            SourceBody::from_raw(id, raw, None, "file")
                .expect_err("refused")
                .to_string()
        };
        assert!(e("  ", b"x").contains("empty"));
        let long = format!("https://example.org/{}", "a".repeat(MAX_SOURCE_ID_CHARS));
        assert!(e(&long, b"x").contains("the limit is 2048 characters"));
        // Percent-encoding that lengthens past the limit counts too.
        let spaces = format!("https://example.org/{}", " ".repeat(1000));
        assert!(check_stable_id(&format!("{spaces}x")).is_err());
        let m = e("https://example.org/a\nb", b"x");
        assert!(
            m.contains("control character") && m.contains("character 22"),
            "{m}"
        );
        let m = e(ID, &vec![b'a'; MAX_SOURCE_BYTES + 1]);
        assert!(m.contains("4194305 bytes") && m.contains("4194304"), "{m}");
        // Exactly the limit is fine (`x`: no volatile rule takes a run of it).
        assert!(SourceBody::from_raw(ID, &vec![b'x'; MAX_SOURCE_BYTES], None, "file").is_ok());
        let m = e(ID, b"caf\xe9 latin-1");
        assert!(
            m.contains("not UTF-8") && m.contains("offset 3") && m.contains("does not guess"),
            "{m}"
        );
        let m = e(ID, b"<html><script>only()</script><p hidden>x</p></html>");
        assert!(
            m.starts_with("nothing visible is left after normalization: the html body"),
            "{m}"
        );
        let deep = format!("<p>x</p>{}", "<div>".repeat(600));
        let m = e(ID, deep.as_bytes());
        assert!(m.contains("more than 512 deep"), "{m}");
        let m = e(ID, b"5 minutes ago\n\n2026-12-03T16:14:00Z");
        assert!(m.contains("the text body"), "{m}");
        assert_eq!(
            check_stable_id(" object:42 ").ok().as_deref(),
            Some("object:42")
        );
    }

    #[test]
    fn url_ids_are_canonical() {
        let a = body("https://Example.org:443/a#x", "a", None);
        let b = body("https://example.org/a", "a", None);
        assert_eq!(a.stable_id, b.stable_id);
        assert_eq!(a.version(), b.version());
        assert_eq!(
            check_stable_id("HTTPS://EXAMPLE.ORG:443/a#top")
                .ok()
                .as_deref(),
            Some("https://example.org/a")
        );
    }

    /// Words that hit no volatile rule (letters only, and not the "ago"/"now" of a relative time).
    fn word() -> impl Strategy<Value = String> {
        "[a-z]{1,9}".prop_filter("not a relative-time word", |w| w != "ago" && w != "now")
    }

    fn paragraphs() -> impl Strategy<Value = Vec<Vec<String>>> {
        prop::collection::vec(prop::collection::vec(word(), 1..8), 1..5)
    }

    fn plain(paras: &[Vec<String>]) -> String {
        paras
            .iter()
            .map(|p| p.join(" "))
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// The changing parts of one fetch of a page: what differs between two fetches of the same content.
    #[derive(Debug, Clone)]
    struct Chrome {
        tokens: Vec<String>,
        minutes: u32,
        stamp: String,
        spaces: Vec<String>,
        wrapper: usize,
        inline: Vec<usize>,
    }

    fn chrome() -> impl Strategy<Value = Chrome> {
        (
            prop::collection::vec("[A-Za-z0-9+/=_-]{0,40}", 6),
            0u32..100_000,
            (
                2000u32..2100,
                1u32..13,
                1u32..29,
                0u32..24,
                0u32..60,
                0u32..60,
                0u32..1000,
            ),
            prop::collection::vec(
                prop::sample::select(vec![
                    " ", "  ", "\n", "\n   \t", "&nbsp;", "&#160; ", "\u{a0}",
                ]),
                64,
            ),
            0usize..4,
            prop::collection::vec(0usize..6, 8),
        )
            .prop_map(
                |(tokens, minutes, (y, mo, d, h, mi, s, ms), spaces, wrapper, inline)| Chrome {
                    tokens,
                    minutes,
                    stamp: format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z"),
                    spaces: spaces.into_iter().map(str::to_string).collect(),
                    wrapper,
                    inline,
                },
            )
    }

    /// The paragraphs as a page with this fetch's chrome around and inside them.
    fn page(paras: &[Vec<String>], c: &Chrome) -> String {
        let sp = |i: usize| c.spaces[i % c.spaces.len()].as_str();
        let tok = |i: usize| c.tokens[i % c.tokens.len()].as_str();
        let mut out = format!(
            "<!doctype html>\n<html><head><meta name=\"csrf-token\" content=\"{}\"><title>{}</title>\
             <script>var nonce = \"{}\";</script><style>.x{{}}</style></head>\n<body>{}<nav>Home {}</nav>\
             <header>Updated {} minutes ago</header><!-- {} -->\
             <form><input type=hidden name=csrf value=\"{}\"></form>",
            tok(0),
            tok(1),
            tok(2),
            sp(0),
            tok(3),
            c.minutes,
            tok(4),
            tok(5),
        );
        let (open, close) = match c.wrapper {
            0 => ("", ""),
            1 => ("<main>", "</main>"),
            2 => ("<article>", "</article>"),
            _ => ("<div class=\"content\">", "</div>"),
        };
        out.push_str(open);
        for (pi, p) in paras.iter().enumerate() {
            out.push_str(&format!("{}<p>{}", sp(pi), sp(pi + 1)));
            for (wi, w) in p.iter().enumerate() {
                let n = pi * 7 + wi;
                if wi > 0 {
                    out.push_str(sp(n + 2));
                }
                match c.inline[n % c.inline.len()] {
                    0 => out.push_str(&format!("<em>{w}</em>")),
                    1 => out.push_str(&format!("<a href=\"/x?t={}\">{w}</a>", tok(n))),
                    _ => out.push_str(w),
                }
            }
            match c.inline[pi % c.inline.len()] {
                0 => out.push_str(&format!(" <time datetime=\"x\">{}</time>", c.stamp)),
                1 => out.push_str(&format!(" <span>{} minutes ago</span>", c.minutes)),
                2 => out.push_str(&format!("<span hidden>{}</span>", tok(pi))),
                _ => {}
            }
            out.push_str(&format!(
                "{}</p>{}<!-- {} -->",
                sp(pi + 3),
                sp(pi + 4),
                c.minutes
            ));
        }
        out.push_str(close);
        out.push_str(&format!(
            "<footer>Updated {} minutes ago &middot; {}</footer><script>track(\"{}\")</script>\
             </body></html>{}",
            c.minutes,
            c.stamp,
            tok(1),
            sp(5)
        ));
        out
    }

    proptest! {
        /// (1) Chrome that changes on every fetch changes neither the body nor the version; and (4) the
        /// plain-text form of the paragraphs is the same body.
        #[test]
        fn chrome_does_not_change_the_version(paras in paragraphs(), a in chrome(), b in chrome()) {
            let expected = paras.iter().map(|p| p.join(" ")).collect::<Vec<_>>().join("\n");
            let pa = body(ID, &page(&paras, &a), Some("text/html"));
            let pb = body(ID, &page(&paras, &b), None);
            prop_assert_eq!(&pa.normalized, &expected);
            prop_assert_eq!(&pb.normalized, &expected);
            prop_assert_eq!(pa.version(), pb.version());
            let t = body(ID, &plain(&paras), Some("text/plain"));
            prop_assert_eq!(t.version(), pa.version());
            let simple: String = paras.iter().map(|p| format!("<p>{}</p>", p.join(" "))).collect();
            prop_assert_eq!(normalize::normalize(&simple, BodyKind::Html), normalize::normalize(&plain(&paras), BodyKind::Text));
        }

        /// (2) One changed visible word is a new version, whatever the chrome.
        #[test]
        fn a_changed_word_changes_the_version(
            paras in paragraphs(), a in chrome(), b in chrome(), which in any::<(usize, usize)>(), new in word()
        ) {
            let mut changed = paras.clone();
            let pi = which.0 % changed.len();
            let wi = which.1 % changed[pi].len();
            prop_assume!(changed[pi][wi] != new);
            changed[pi][wi] = new;
            let before = body(ID, &page(&paras, &a), None);
            let after = body(ID, &page(&changed, &b), None);
            prop_assert_ne!(&before.normalized, &after.normalized);
            prop_assert_ne!(before.version(), after.version());
        }

        /// (3) The same body under another stable id is another version.
        #[test]
        fn another_id_is_another_version(paras in paragraphs(), x in "[a-z0-9]{1,12}", y in "[a-z0-9]{1,12}") {
            prop_assume!(x != y);
            let raw = plain(&paras);
            let a = body(&format!("https://example.org/{x}"), &raw, None);
            let b = body(&format!("https://example.org/{y}"), &raw, None);
            prop_assert_eq!(&a.normalized, &b.normalized);
            prop_assert_ne!(a.version(), b.version());
        }

        /// (5) Re-wrapping a text paragraph (other line breaks, CRLF, trailing blanks) keeps the version.
        #[test]
        fn rewrapping_text_keeps_the_version(
            paras in paragraphs(), breaks in prop::collection::vec(prop::sample::select(vec![" ", "\n", "\r\n", " \n  ", "\t"]), 64)
        ) {
            let mut wrapped = String::new();
            let mut n = 0;
            for (pi, p) in paras.iter().enumerate() {
                if pi > 0 {
                    wrapped.push_str(if pi % 2 == 0 { "\n\n" } else { "\r\n \r\n\r\n" });
                }
                for (wi, w) in p.iter().enumerate() {
                    if wi > 0 {
                        wrapped.push_str(breaks[n % breaks.len()]);
                        n += 1;
                    }
                    wrapped.push_str(w);
                }
            }
            let a = body(ID, &plain(&paras), None);
            let b = body(ID, &wrapped, None);
            prop_assert_eq!(&a.normalized, &b.normalized);
            prop_assert_eq!(a.version(), b.version());
        }
    }
}
