//! Whether a create request carries the post oncepost typed: the one authorized write must be this post,
//! not whatever the page sends first once Publish is pressed.
//!
//! Why: a page may keep an outbox of its own (in `localStorage` or IndexedDB, which stay in the account's
//! profile between sends) and send what is in it at the next press, before the new post: an offline-first
//! app retrying a post whose answer never came. Matched by method and URL alone, that request (the LAST
//! post, already made once and left `indeterminate`) would be handed over as the create request and sent by
//! oncepost: a second copy of an earlier post, and the new one refused as a further create. Fixturebook's
//! `/hostile/local-outbox` does exactly this (tests/it/local_outbox.rs).
//!
//! What "carries" means, tolerant of how editors and pages send text: each line of the post's text (a
//! paragraph; the title and other fields are not looked for: a slug or another request may carry them) must show as a run of the same words, in the same order, in something
//! the request holds: its body as UTF-8, form-decoded, each JSON string in it (in the order written: a
//! block editor's paragraphs are strings of their own), HTML in any of those with its tags dropped and its
//! entities read, or its URL's path and query, percent-decoded. Words are runs of letters and digits (NFC,
//! any case), so quotes curled, `--` made a dash, markup added around words or spaces made `&nbsp;` change nothing;
//! a different word (another post's) does; the line's first word may end a longer word and its last begin
//! one (a page that glues what it adds to what was typed). A line without a word (`---`, an emoji) is not looked for alone; a
//! text with no word at all must show whole, as typed, as a JSON string or a form value holds it.
//!
//! Nor may it carry more: an outbox may also send what it holds inside the new post's own request (a batch:
//! `{"posts": [earlier, new]}`), and handed over, that request makes the earlier post again. So the account's
//! other posts (the newest intents' texts, any state: given by the publish from the store) are looked for
//! too, each line as a run of the same words exactly (no glued ends: two posts share many words; a post of
//! fewer than four words only as a value of its own, a JSON string or a form value: a request's own keys
//! hold such words), and a request carrying every line of one is not this post's. An earlier post that
//! this post or another typed field holds in its own words (a post quoted, a title used again) is not
//! looked for: it cannot be told apart; nor is one of no word.
//!
//! Not recognised: a post the page compresses, encrypts or sends in pieces no line survives whole, and a
//! create that names an earlier saved draft instead of carrying the text: such a contract says so
//! (`publish.create_carries_post = false`, format 2) and is matched by method, URL and body rules alone.
use unicode_normalization::UnicodeNormalization;

use super::typed::Watched;

/// One line of a typed value, as a create request must carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Line {
    /// As typed (trimmed), for the reason given when it is missing.
    shown: String,
    /// Its words; empty for a line of no word.
    words: Vec<String>,
    /// A line of no word, looked for as typed.
    raw: Option<Watched>,
}

/// Another post of the account, which a create request must not carry besides this one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Earlier {
    /// Its first line as typed, for the reason given.
    shown: String,
    /// Each line's words.
    lines: Vec<Vec<String>>,
}

/// An earlier post of fewer words than this is looked for only as a value of its own (a JSON string, a form
/// or query value), never as a run of words inside one: a create request holds words of its own
/// (`"test_mode"`, `"status": "public"`), and a one-word post such as "Test" would otherwise be found in it
/// and refuse every later post of the account.
const SHORT_POST_WORDS: usize = 4;

/// What of the post a create request must carry (every line of its text, the body field's value) and must
/// not (the account's other posts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostLines {
    lines: Vec<Line>,
    /// The words of everything typed for this post (its text and other fields), in order, one run each.
    typed: Vec<Vec<String>>,
    earlier: Vec<Earlier>,
}

/// Why a request matching the create request is not this post's create.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotThePost {
    /// It does not carry this line of the post.
    Missing(String),
    /// It carries another post of the account too (the first line of which is given).
    Earlier(String),
}

impl std::fmt::Display for NotThePost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotThePost::Missing(line) => write!(f, "missing: {line:?}"),
            NotThePost::Earlier(line) => write!(
                f,
                "it also carries another post of the account's, which would be made again: {line:?}"
            ),
        }
    }
}

impl PostLines {
    /// Add the post's text: each line with a word. A line without one (`---`, an emoji) is not looked for
    /// alone (the page sends it inside the whole text, never as a value of its own); a text with no word
    /// at all is looked for whole, as typed.
    pub fn add(&mut self, value: &str) {
        self.also_typed(value);
        let mut worded = false;
        for l in value.lines() {
            let shown = l.trim();
            let words = words(shown);
            if words.is_empty() {
                continue;
            }
            worded = true;
            if !self.lines.iter().any(|x| x.shown == shown) {
                self.lines.push(Line {
                    shown: shown.to_string(),
                    words,
                    raw: None,
                });
            }
        }
        let whole = value.trim();
        if !worded && !whole.is_empty() && !self.lines.iter().any(|x| x.shown == whole) {
            self.lines.push(Line {
                shown: whole.to_string(),
                words: Vec::new(),
                raw: Watched::of(whole),
            });
        }
    }

    /// Another value typed for this post (a title, a field): an earlier post it holds is not looked for.
    pub fn also_typed(&mut self, value: &str) {
        let words = words(value);
        if !words.is_empty() && !self.typed.contains(&words) {
            self.typed.push(words);
        }
    }

    /// Another post of the account (`text`), which a request carrying this post must not carry too. Not
    /// looked for when it has no word, or when what was typed for this post holds every line of it.
    pub fn add_earlier(&mut self, text: &str) {
        let lines: Vec<Vec<String>> = text.lines().map(words).filter(|w| !w.is_empty()).collect();
        let Some(first) = text.lines().map(str::trim).find(|l| !words(l).is_empty()) else {
            return;
        };
        let held = lines
            .iter()
            .all(|l| self.typed.iter().any(|t| has_exact_run(t, l)));
        if held || self.earlier.iter().any(|e| e.lines == lines) {
            return;
        }
        self.earlier.push(Earlier {
            shown: first.to_string(),
            lines,
        });
    }

    /// Nothing to look for (nothing was typed).
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Why a request to `url` with `body` is not this post's create: a line of the post it does not carry,
    /// else another post of the account it carries too; `None` when it is this post's.
    pub fn refusal(&self, url: &str, body: Option<&[u8]>) -> Option<NotThePost> {
        if self.lines.is_empty() {
            return None;
        }
        // The request's texts are read for words once, for both questions.
        let streams = streams_of(url, body);
        if let Some(line) = self.missing_in(url, body, &streams) {
            return Some(NotThePost::Missing(line.to_string()));
        }
        if self.earlier.is_empty() {
            return None;
        }
        let values: Vec<Vec<String>> = values_of(url, body).iter().map(|t| words(t)).collect();
        self.earlier
            .iter()
            .find(|e| {
                if e.lines.iter().map(Vec::len).sum::<usize>() < SHORT_POST_WORDS {
                    let all: Vec<String> = e.lines.concat();
                    values.contains(&all)
                } else {
                    e.lines
                        .iter()
                        .all(|l| streams.iter().any(|s| has_exact_run(s, l)))
                }
            })
            .map(|e| NotThePost::Earlier(e.shown.clone()))
    }

    /// The first line a request to `url` with `body` does not carry, or `None` when it carries them all.
    pub fn first_missing(&self, url: &str, body: Option<&[u8]>) -> Option<&str> {
        if self.lines.is_empty() {
            return None;
        }
        self.missing_in(url, body, &streams_of(url, body))
    }

    /// [`PostLines::first_missing`] with the request's word streams already read.
    fn missing_in(&self, url: &str, body: Option<&[u8]>, streams: &[Vec<String>]) -> Option<&str> {
        let raw_body = body.map(String::from_utf8_lossy);
        self.lines
            .iter()
            .find(|l| {
                let carried = if l.words.is_empty() {
                    l.raw.as_ref().is_some_and(|w| {
                        w.carried_by(url) || raw_body.as_ref().is_some_and(|b| w.carried_by_body(b))
                    })
                } else {
                    streams.iter().any(|s| has_run(s, &l.words))
                };
                !carried
            })
            .map(|l| l.shown.as_str())
    }
}

/// The words of `text` as this module reads them (runs of letters and digits, NFC, lower case).
pub fn words_of(text: &str) -> Vec<String> {
    words(text)
}

/// Whether a request to `url` with `body` holds every one of `wanted` (words as [`words_of`] makes them) as
/// a whole word somewhere among its texts (its URL, its body as sent, form-decoded, its JSON strings, HTML
/// read). `false` when `wanted` is empty.
pub fn carries_every_word(url: &str, body: Option<&[u8]>, wanted: &[String]) -> bool {
    if wanted.is_empty() {
        return false;
    }
    let held: std::collections::HashSet<String> =
        streams_of(url, body).into_iter().flatten().collect();
    wanted.iter().all(|w| held.contains(w))
}

/// The words of each text a request holds ([`texts_of`]).
fn streams_of(url: &str, body: Option<&[u8]>) -> Vec<Vec<String>> {
    texts_of(url, body).iter().map(|t| words(t)).collect()
}

/// Runs of letters and digits, NFC, in lower case (a page that capitalises, or a slug made of a title).
fn words(text: &str) -> Vec<String> {
    let nfc: String = text.nfc().collect();
    nfc.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether `run` shows in `stream`, in order, each word whole except at the two ends: the first may end a
/// longer word and the last begin one, since a page may glue what it adds to what was typed (a field filled
/// by appending to its own "New item" sends "New itemQuarterly report").
fn has_run(stream: &[String], run: &[String]) -> bool {
    let Some((first, rest)) = run.split_first() else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return stream
            .iter()
            .any(|w| w.ends_with(first.as_str()) || w.starts_with(first.as_str()));
    };
    stream.windows(run.len()).any(|w| {
        w[0].ends_with(first.as_str())
            && w[run.len() - 1].starts_with(last.as_str())
            && w[1..run.len() - 1] == *middle
    })
}

/// Whether `run` shows in `stream` word for word, in order.
fn has_exact_run(stream: &[String], run: &[String]) -> bool {
    !run.is_empty() && stream.windows(run.len()).any(|w| w == run)
}

/// The texts a request holds, each to be read for words on its own: the URL decoded, the body as it is,
/// form-decoded, its JSON strings one by one and all of them in order, and each of those with HTML read.
fn texts_of(url: &str, body: Option<&[u8]>) -> Vec<String> {
    let mut out = vec![
        percent_decoded(url),
        percent_decoded(&url.replace('+', " ")),
    ];
    if let Some(body) = body {
        let raw = String::from_utf8_lossy(body).into_owned();
        out.push(percent_decoded(&raw.replace('+', " ")));
        let strings = json_strings(&raw);
        if !strings.is_empty() {
            out.push(strings.join("\n"));
            out.extend(strings);
        }
        out.push(raw);
    }
    with_html_read(out)
}

/// The values a request holds, each on its own: its JSON strings, its form values and its URL's query values
/// (percent-decoded), and each of those with HTML read.
fn values_of(url: &str, body: Option<&[u8]>) -> Vec<String> {
    let form = |s: &str| -> Vec<String> {
        s.split('&')
            .filter_map(|pair| pair.split_once('=').map(|(_, v)| v))
            .map(|v| percent_decoded(&v.replace('+', " ")))
            .collect()
    };
    let mut out = url
        .split_once('?')
        .map(|(_, q)| form(q))
        .unwrap_or_default();
    if let Some(body) = body {
        let raw = String::from_utf8_lossy(body);
        out.extend(json_strings(&raw));
        if !raw.trim_start().starts_with(['{', '[']) {
            out.extend(form(&raw));
        }
    }
    with_html_read(out)
}

/// `texts` and, after them, each that holds markup or a character reference with its HTML read.
fn with_html_read(mut texts: Vec<String>) -> Vec<String> {
    let html: Vec<String> = texts
        .iter()
        .filter(|t| t.contains('<') || t.contains('&'))
        .map(|t| html_text(t))
        .collect();
    texts.extend(html);
    texts
}

/// Every JSON string literal in `raw`, decoded, in the order written (a JSON body, or JSON inside one:
/// a GraphQL request's variables, a WebSocket message). Scanned, not parsed into a map: a map would put
/// an object's keys in its own order and a post's paragraphs out of theirs.
fn json_strings(raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = raw.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'"' {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < bytes.len() && bytes[i] != b'"' {
            i += if bytes[i] == b'\\' { 2 } else { 1 };
        }
        let Some(literal) = raw.get(start..=i.min(bytes.len() - 1)) else {
            break;
        };
        if let Ok(s) = serde_json::from_str::<String>(literal) {
            // A string that is JSON itself (variables sent as a string): its strings too.
            if s.starts_with('{') || s.starts_with('[') {
                out.extend(json_strings(&s));
            }
            out.push(s);
        }
        i += 1;
    }
    out
}

/// HTML's text: tags (and comments) dropped, as a space, and character references read.
fn html_text(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match (in_tag, c) {
            (false, '<') => in_tag = true,
            (true, '>') => {
                in_tag = false;
                text.push(' ');
            }
            (false, c) => text.push(c),
            (true, _) => {}
        }
    }
    references_read(&text)
}

/// `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`, `&nbsp;`, `&#N;` and `&#xH;` as the characters they are.
fn references_read(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let decoded = after.find(';').filter(|end| *end <= 10).and_then(|end| {
            let name = &after[..end];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "nbsp" => Some('\u{a0}'),
                _ => name
                    .strip_prefix("#x")
                    .or_else(|| name.strip_prefix("#X"))
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            }?;
            Some((c, end))
        });
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn percent_decoded(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(values: &[&str]) -> PostLines {
        let mut p = PostLines::default();
        for v in values {
            p.add(v);
        }
        p
    }

    fn carried(p: &PostLines, url: &str, body: &str) -> bool {
        p.first_missing(url, Some(body.as_bytes())).is_none()
    }

    #[test]
    fn the_post_is_carried_however_the_page_encodes_it() {
        let p = post(&["He said \"ship it\"\nand left & came back", "A title"]);
        let url = "http://x/api/posts";
        let json = serde_json::json!({ "text": "He said \"ship it\"\nand left & came back", "title": "A title" });
        assert!(carried(&p, url, &json.to_string()));
        assert!(carried(
            &p,
            url,
            "title=A+title&text=He+said+%22ship+it%22%0D%0Aand+left+%26+came+back"
        ));
        // A block editor's HTML in a JSON string, quotes curled and an ampersand escaped.
        let blocks = serde_json::json!({
            "title": "A title",
            "content": "<!-- wp:paragraph --><p>He said \u{201c}ship it\u{201d}</p><!-- /wp:paragraph --><p>and left &amp; came&nbsp;back</p>"
        });
        assert!(carried(&p, url, &blocks.to_string()));
        // An editor's document model: each paragraph a string of its own, keys between them.
        let model = r#"{"root":{"children":[{"children":[{"text":"He said \"ship it\"","type":"text"}],"type":"paragraph"},{"children":[{"text":"and left & came back","type":"text"}],"type":"paragraph"}]},"title":"A title"}"#;
        assert!(carried(&p, url, model));
        // GraphQL variables sent as a string of JSON.
        let gql = serde_json::json!({ "query": "mutation", "variables": json.to_string() });
        assert!(carried(&p, url, &gql.to_string()));
        // The title in the URL (a PUT keyed by it), the text in the body.
        let p2 = post(&["Page name", "body words here"]);
        assert!(carried(&p2, "http://x/wiki/Page%20name", "body words here"));
    }

    #[test]
    fn every_word_wanted_must_be_held_whole() {
        let url = "http://x/api/posts";
        let added = words_of("— sent from Fixturebook web");
        assert_eq!(added, ["sent", "from", "fixturebook", "web"]);
        let body = r#"{"text":"The post\n\n\u2014 Sent from <b>Fixturebook</b> web"}"#;
        assert!(carries_every_word(url, Some(body.as_bytes()), &added));
        // Form-encoded, and in the URL's query.
        assert!(carries_every_word(
            url,
            Some(b"text=The+post+sent+from+Fixturebook+web"),
            &added
        ));
        assert!(carries_every_word(
            "http://x/create?t=sent%20from%20fixturebook%20web",
            None,
            &added
        ));
        // One word missing, or only part of a word: not carried.
        assert!(!carries_every_word(
            url,
            Some(br#"{"text":"The post sent from Fixturebook"}"#),
            &added
        ));
        assert!(!carries_every_word(
            url,
            Some(br#"{"text":"The post sent from Fixturebooks webs"}"#),
            &added
        ));
        assert!(!carries_every_word(url, Some(b"anything"), &[]));
    }

    #[test]
    fn another_post_is_not_carried() {
        let p = post(&["Build 43 passed on main"]);
        let url = "http://x/api/posts";
        assert!(!carried(&p, url, r#"{"text":"Build 42 passed on main"}"#));
        assert!(
            !carried(&p, url, r#"{"text":"Build 43 passed"}"#),
            "a line cut short"
        );
        assert!(!carried(&p, url, r#"{"draft_id":"d81"}"#));
        assert!(p.first_missing(url, None).is_some(), "no body known");
        assert_eq!(
            p.first_missing(url, Some(b"{}")),
            Some("Build 43 passed on main")
        );
        // Glued to what the page adds before or after, the typed words still show; a word changed does not.
        assert!(carried(
            &p,
            url,
            r#"{"text":"New itemBuild 43 passed on mainline"}"#
        ));
        assert!(!carried(&p, url, r#"{"text":"Build 43 failed on main"}"#));
        let one = post(&["Quarterly"]);
        assert!(carried(&one, url, r#"{"title":"New itemQuarterly"}"#));
        assert!(!carried(&one, url, r#"{"title":"Monthly"}"#));
        // Every line is needed, not just one.
        let two = post(&["first line\nsecond line"]);
        assert!(!carried(&two, url, r#"{"text":"first line"}"#));
        assert!(carried(&two, url, r#"{"text":"first line\nsecond line"}"#));
    }

    #[test]
    fn a_request_carrying_another_post_of_the_account_too_is_not_this_posts() {
        let url = "http://x/api/posts";
        let mut p = post(&["Build 43 passed on main"]);
        p.add_earlier("Build 42 failed on main\nRollback started");
        p.add_earlier("Deploy");
        p.add_earlier("\u{1f389}");
        let refusal = |p: &PostLines, body: &str| p.refusal(url, Some(body.as_bytes()));
        // Alone, it is this post's.
        assert_eq!(refusal(&p, r#"{"text":"Build 43 passed on main"}"#), None);
        // An outbox's batch: the earlier post inside the new one's request.
        let batch = r#"{"text":"Build 43 passed on main","outbox":[{"text":"Build 42 failed on main\nRollback started"}]}"#;
        assert_eq!(
            refusal(&p, batch),
            Some(NotThePost::Earlier("Build 42 failed on main".into()))
        );
        // As HTML in a form field, too.
        let form = "text=Build+43+passed+on+main&queued=%3Cp%3EBuild+42+failed+on+main%3C%2Fp%3E%3Cp%3ERollback+started%3C%2Fp%3E";
        assert!(matches!(refusal(&p, form), Some(NotThePost::Earlier(_))));
        // One line of it is not it; a one-word post only as that word, never glued ("Deployment").
        assert_eq!(
            refusal(
                &p,
                r#"{"text":"Build 43 passed on main","note":"Rollback started","kind":"Deployment"}"#
            ),
            None
        );
        assert!(matches!(
            refusal(&p, r#"{"text":"Build 43 passed on main","kind":"deploy"}"#),
            Some(NotThePost::Earlier(l)) if l == "Deploy"
        ));
        // A line missing is said first: the request is not this post at all.
        assert!(matches!(
            refusal(
                &p,
                r#"{"text":"Build 42 failed on main\nRollback started"}"#
            ),
            Some(NotThePost::Missing(_))
        ));
        // An earlier post this post quotes, or another typed field holds (a title used again), cannot be
        // told apart from it: not looked for.
        let mut q = post(&["As I said: Build 42 failed on main, fixed since"]);
        q.also_typed("Weekly report");
        q.add_earlier("Build 42 failed on main");
        q.add_earlier("Weekly report");
        assert_eq!(
            refusal(
                &q,
                r#"{"title":"Weekly report","text":"As I said: Build 42 failed on main, fixed since"}"#
            ),
            None
        );
        // A short earlier post only as a value of its own: the words of a request's own keys and values
        // are not it.
        let mut s = post(&["Build 43 passed on main"]);
        s.add_earlier("Test");
        s.add_earlier("Public post");
        assert_eq!(
            s.refusal(
                url,
                Some(br#"{"text":"Build 43 passed on main","test_mode":false,"visibility":"public","note":"a public post"}"#)
            ),
            None
        );
        assert_eq!(
            s.refusal(
                url,
                Some(br#"{"text":"Build 43 passed on main","outbox":[{"text":"Test"}]}"#)
            ),
            Some(NotThePost::Earlier("Test".into()))
        );
        assert_eq!(
            s.refusal(
                url,
                Some(b"text=Build+43+passed+on+main&queued=%3Cp%3EPublic+post%3C%2Fp%3E")
            ),
            Some(NotThePost::Earlier("Public post".into()))
        );
        // Nothing typed, nothing looked for.
        let mut none = PostLines::default();
        none.add_earlier("Build 42 failed on main");
        assert_eq!(none.refusal(url, Some(b"Build 42 failed on main")), None);
    }

    #[test]
    fn a_line_without_words_is_looked_for_as_typed() {
        let p = post(&["\u{1f44d}"]);
        let url = "http://x/api/posts";
        assert!(carried(&p, url, r#"{"text":"👍"}"#));
        assert!(!carried(&p, url, r#"{"text":"🎉"}"#));
        // A text of no word at all, on several lines: looked for whole.
        let p = post(&["\u{1f389}\n\u{1f389}"]);
        assert!(carried(&p, url, r#"{"text":"🎉\n🎉"}"#));
        assert!(!carried(&p, url, r#"{"text":"🎉"}"#));
        // A line of no word inside a text with words (a Markdown rule, an emoji line) is not looked for
        // alone: the page sends it inside the whole text.
        let p = post(&["Release notes\n---\n\u{1f389}\nAll good"]);
        assert!(carried(
            &p,
            url,
            r#"{"text":"Release notes\n---\n🎉\nAll good"}"#
        ));
        assert!(carried(
            &p,
            url,
            "<p>Release notes</p><hr><p>🎉</p><p>All good</p>"
        ));
        assert!(!carried(
            &p,
            url,
            r#"{"text":"Release notes\n---\nAll bad"}"#
        ));
        assert!(PostLines::default().first_missing(url, None).is_none());
    }

    #[test]
    fn html_is_read_for_its_text() {
        assert_eq!(
            html_text("<p>a&amp;b&#x41;&#66;&lt;</p><!-- c -->d &unknown; e"),
            " a&bAB<  d &unknown; e"
        );
        assert_eq!(
            json_strings(r#"{"a":"x\"y","b":["z"]}"#),
            vec!["a", "x\"y", "b", "z"]
        );
    }
}
