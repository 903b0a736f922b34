//! Reading a post back in a fresh page: by permalink (id) or by search (text), never from the page that
//! posted (its optimistic rendering proves nothing). Used by publish (verification and look-before-write)
//! and, later, by `oncepost reconcile`.
//!
//! A read-back page only reads: it is opened under the session's write guard like every page, navigated,
//! and one evaluation lists the post items (CSS) with their id, text (`textContent`, so line breaks and long
//! texts come back whole; and `innerText` when it differs, for a page that renders lines as `<br>` and `<p>`
//! with nothing between them; an image standing for an emoji read as its alt), author and first link. Text
//! is compared by the contract's rule after trim + NFC + LF: the item shows the post when either of its
//! texts does.
//!
//! A text match is not enough: another account may have posted the same text. A search match settles only
//! when the item shows the account's own handle (the contract says where an item shows its author, the
//! account records its handle); any other text match is a [`ReadVerdict::Lead`] for a person, never a
//! finding. By permalink, the id came from this attempt's own create answer, so an item that does not show
//! its author is taken as ours, but one showing another author is a lead. Ids and links taken from a page
//! must be http(s) inside the contract's `origins.allowed`; anything else is an [`Alarm`], never a finding.
use std::time::{Duration, Instant};

use base64::Engine;
use serde::{Deserialize, Serialize};

use super::checks::{BoxRect, evaluate_json};
use super::{BrowserError, BrowserSession};
use crate::identity::normalize_text;
use crate::template::value_from_url;
use crate::wait::Wait;

/// How shown text is compared with what was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TextRule {
    /// Trim, NFC, LF, then exact.
    ExactNfc,
    /// As `ExactNfc`, with runs of whitespace collapsed to one space.
    CollapseWhitespace,
    /// The shown text (without a trailing ellipsis) is a non-empty prefix of the sent text.
    Prefix,
    /// For platforms that render markup: the words of both texts, in order, are equal (see
    /// [`visible_words`]; markup characters, link targets and tags are not words).
    VisibleWords,
}

/// The visible words of a post's text: after NFC, with URLs (`scheme://...`), HTML tags (`<...>`) and
/// character references (`&amp;`) removed, the maximal runs of letters and digits, in order, case kept.
///
/// Markup a platform renders (`**bold**`, `_it_`, `# heading`, `==== H ====`, `[label](https://...)`,
/// `<b>x</b>`, `@mention`) leaves the same words on both sides; a changed, added, dropped or reordered word
/// does not. What this cannot see through: markup whose *words* vanish when rendered (a wiki link
/// `[[target|label]]` shows only `label`; `[b]` BBCode tags): those posts mismatch and are parked for a person,
/// never taken for another post.
pub fn visible_words(text: &str) -> Vec<String> {
    use unicode_normalization::UnicodeNormalization;
    let t: String = text.nfc().collect();
    let mut cleaned = String::with_capacity(t.len());
    let mut rest = t.as_str();
    while !rest.is_empty() {
        if let Some(n) = url_len(rest) {
            cleaned.push(' ');
            rest = &rest[n..];
        } else if let Some(n) = tag_len(rest) {
            cleaned.push(' ');
            rest = &rest[n..];
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            cleaned.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    cleaned
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Length of a `scheme://...` URL at the start of `s` (up to whitespace or a closing bracket/quote).
fn url_len(s: &str) -> Option<usize> {
    let scheme = s
        .char_indices()
        .take_while(|(_, c)| c.is_ascii_alphanumeric() || "+.-".contains(*c))
        .last()
        .map(|(i, c)| i + c.len_utf8())?;
    if !s[..1].chars().all(|c| c.is_ascii_alphabetic()) || !s[scheme..].starts_with("://") {
        return None;
    }
    let tail = &s[scheme + 3..];
    let end = tail
        .find(|c: char| c.is_whitespace() || ")]>\"'".contains(c))
        .unwrap_or(tail.len());
    Some(scheme + 3 + end)
}

/// Length of an HTML tag (`<b>`, `</a>`, `<br/>`) or a character reference (`&amp;`, `&#39;`) at the start.
fn tag_len(s: &str) -> Option<usize> {
    if let Some(r) = s.strip_prefix('<') {
        let first = r.chars().next()?;
        if !(first.is_ascii_alphabetic() || first == '/') {
            return None;
        }
        return r
            .find('>')
            .filter(|i| !r[..*i].contains('<'))
            .map(|i| i + 2);
    }
    if let Some(r) = s.strip_prefix('&') {
        let end = r.find(';')?;
        let name = &r[..end];
        let ok = (!name.is_empty()
            && name.len() <= 10
            && name.chars().all(|c| c.is_ascii_alphanumeric()))
            || (name.starts_with('#')
                && name.len() > 1
                && name[1..].chars().all(|c| c.is_ascii_alphanumeric()));
        return ok.then_some(end + 2);
    }
    None
}

impl TextRule {
    /// Whether `shown` is `sent` under this rule.
    pub fn matches(self, sent: &str, shown: &str) -> bool {
        let (a, b) = (normalize_text(sent), normalize_text(shown));
        match self {
            TextRule::ExactNfc => a == b,
            TextRule::CollapseWhitespace => {
                let c = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
                c(&a) == c(&b)
            }
            TextRule::Prefix => {
                let b = b.trim_end_matches('…').trim_end_matches("...").trim_end();
                !b.is_empty() && a.starts_with(b)
            }
            TextRule::VisibleWords => {
                let words = visible_words(&a);
                !words.is_empty() && words == visible_words(&b)
            }
        }
    }
}

impl TextRule {
    /// [`TextRule::matches`], or `shown` is `sent` with one of `added` (text the page or platform adds to
    /// every post: a signature) whole before or after it, each normalized as the texts are.
    pub fn matches_with(self, sent: &str, shown: &str, added: &[String]) -> bool {
        if self.matches(sent, shown) {
            return true;
        }
        let shown = normalize_text(shown);
        let shown = shown.trim();
        added.iter().any(|a| {
            let a = normalize_text(a);
            let a = a.trim();
            !a.is_empty()
                && [shown.strip_suffix(a), shown.strip_prefix(a)]
                    .into_iter()
                    .flatten()
                    .any(|rest| !rest.trim().is_empty() && self.matches(sent, rest.trim()))
        })
    }
}

/// Where and how to read posts back (templates already carry the base URL).
#[derive(Debug, Clone)]
pub struct ReadbackPlan {
    /// Permalink template with `{id}`.
    pub permalink: String,
    /// Search template with `{text}` (URL-encoded on expansion).
    pub search: String,
    /// CSS selectors of a post item, tried in order.
    pub item_css: Vec<String>,
    /// CSS, inside an item, of its text.
    pub text_css: String,
    /// Attribute of an item carrying its id.
    pub id_attribute: Option<String>,
    /// Regex (group `id`) over an item's link (`link_css`, else its first link).
    pub id_from_link: Option<regex::Regex>,
    /// CSS, inside an item, of the element whose trimmed text is its id.
    pub id_text_css: Option<String>,
    /// CSS, inside an item, of its own link (None: its first `a[href]`).
    pub link_css: Option<String>,
    /// CSS selectors, inside the text element, of elements whose text is not the post's.
    pub text_skip: Vec<String>,
    /// Text rule.
    pub compare: TextRule,
    /// Text the page or platform adds to every post by itself (`publish.added_text`): a post shown with it
    /// before or after the text is the post.
    pub added_text: Vec<String>,
    /// How long after a create "not found" may still mean "not there yet".
    pub propagation_ms: u64,
    /// CSS selectors blacked out in the screenshot.
    pub masks: Vec<String>,
    /// CSS, inside an item, of the element showing its author (None: the contract declares none).
    pub author_css: Option<String>,
    /// Read the author from this attribute of that element instead of its text.
    pub author_attribute: Option<String>,
    /// The handle is this regex's group `handle` over what the author element shows (`author_pattern`).
    pub author_pattern: Option<regex::Regex>,
    /// What the author element shows on the viewer's own posts ("You"), normalized as handles are: the
    /// account's, since the read pages are viewed in its profile (`readback.viewer_labels`).
    pub viewer_labels: Vec<String>,
    /// The publishing account's handle (None: not recorded; search matches are then leads only).
    pub handle: Option<String>,
    /// Origins (`scheme://host[:port]`) a permalink may point into (`origins.allowed`, expanded).
    pub allowed_origins: Vec<String>,
    /// The post's field values by field name, for `{field:NAME}` in the templates (per post: the publish
    /// flow and the lookup fill them in).
    pub fields: std::collections::BTreeMap<String, String>,
    /// The field that carries the body (whose value is also `{text}`).
    pub body_field: String,
    /// The compose field that carries the intent's marker (`readback.marker_field`).
    pub marker_field: Option<String>,
    /// CSS, inside an item, of where the marker shows (None: the whole item).
    pub marker_css: Option<String>,
    /// The marker this post must show (set per intent by [`ReadbackPlan::mark`]).
    pub marker: Option<String>,
}

/// The reason of an evidence event recording an id or link a page supplied that was refused (an alarm).
pub const ALARM_REASON: &str = "the page supplied an id or link outside the platform (not http(s) inside origins.allowed); refused";

/// Longest id taken from a page (ids are short tokens; anything longer is not one).
pub const MAX_ID_CHARS: usize = 256;

/// Whether an id taken from a page can be one: non-empty, bounded, no control characters and no whitespace
/// but the plain space (a platform that names posts by their title, as a wiki does, has ids with spaces;
/// they are percent-encoded wherever they enter a URL).
pub fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.chars().count() > MAX_ID_CHARS {
        return Err(format!("an id must be 1-{MAX_ID_CHARS} characters"));
    }
    if id.trim() != id
        || id
            .chars()
            .any(|c| c.is_control() || (c.is_whitespace() && c != ' '))
    {
        return Err(
            "an id cannot hold control characters, whitespace other than a space, or start or end with one"
                .into(),
        );
    }
    Ok(())
}

/// Whether a link taken from a page may be recorded as a permalink: an absolute http(s) URL without
/// credentials whose origin is one of `allowed`.
pub fn check_link(link: &str, allowed: &[String]) -> Result<(), String> {
    let u = url::Url::parse(link).map_err(|e| format!("not an absolute URL: {e}"))?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err(format!("scheme {:?} is not http(s)", u.scheme()));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err("a permalink cannot carry credentials".into());
    }
    let origin = u.origin().ascii_serialization();
    if !allowed.contains(&origin) {
        return Err(format!(
            "origin {origin} is not in the contract's origins.allowed ({})",
            allowed.join(", ")
        ));
    }
    Ok(())
}

/// A handle as compared: trimmed, NFC, without one leading `@` (platforms show `@name` or `name`).
pub fn normalize_handle(h: &str) -> String {
    let n = normalize_text(h);
    n.strip_prefix('@').unwrap_or(&n).trim().to_string()
}

/// The handle an author element (or a logged-in user's menu) shows: what it shows, or, with `pattern`, its
/// group `handle` (`None` when the pattern does not match: it shows no handle). Read from a link's `href`,
/// percent-decoded, as the URL carries it (`/u/J%C3%BCrgen` is Jürgen's).
pub fn handle_shown(
    shown: &str,
    pattern: Option<&regex::Regex>,
    attribute: Option<&str>,
) -> Option<String> {
    let taken = match pattern {
        None => shown.to_string(),
        Some(re) => re.captures(shown)?.name("handle")?.as_str().to_string(),
    };
    Some(
        if attribute.is_some_and(|a| a.eq_ignore_ascii_case("href")) {
            crate::template::value_from_url(&taken)
        } else {
            taken
        },
    )
}

/// Whether an item's shown author is the account's handle (exactly, after [`normalize_handle`]).
pub fn same_author(handle: &str, shown: &str) -> bool {
    let (a, b) = (normalize_handle(handle), normalize_handle(shown));
    !a.is_empty() && a == b
}

/// How an item's authorship was judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "authorship", rename_all = "snake_case")]
pub enum Authorship {
    /// The item shows the account's handle.
    Ours {
        /// As shown.
        author: String,
    },
    /// The item shows another author.
    OtherAuthor {
        /// As shown.
        author: String,
    },
    /// The contract declares no author element, so no item can show one.
    NotDeclared,
    /// The item has no (non-empty) author element.
    NotShown,
    /// The account records no handle to compare with.
    NoHandle {
        /// As shown.
        author: String,
    },
}

impl Authorship {
    fn author(&self) -> Option<String> {
        match self {
            Authorship::Ours { author }
            | Authorship::OtherAuthor { author }
            | Authorship::NoHandle { author } => Some(author.clone()),
            Authorship::NotDeclared | Authorship::NotShown => None,
        }
    }
}

/// Why a text match is a lead and not a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LeadReason {
    /// The item shows another author.
    OtherAuthor,
    /// The contract declares no author element.
    AuthorNotDeclared,
    /// The item shows no author.
    AuthorNotShown,
    /// The account records no handle.
    NoHandle,
    /// Its id or link was refused (not http(s) inside `origins.allowed`): an alarm.
    LinkRefused,
    /// It carries neither an id nor a link to record.
    NoIdOrLink,
}

impl LeadReason {
    fn of(a: &Authorship) -> Option<LeadReason> {
        match a {
            Authorship::Ours { .. } => None,
            Authorship::OtherAuthor { .. } => Some(LeadReason::OtherAuthor),
            Authorship::NotDeclared => Some(LeadReason::AuthorNotDeclared),
            Authorship::NotShown => Some(LeadReason::AuthorNotShown),
            Authorship::NoHandle { .. } => Some(LeadReason::NoHandle),
        }
    }

    /// One line for a person.
    pub fn describe(self) -> &'static str {
        match self {
            LeadReason::OtherAuthor => "it shows another author",
            LeadReason::AuthorNotDeclared => {
                "the contract declares no author element (readback.author)"
            }
            LeadReason::AuthorNotShown => "it shows no author",
            LeadReason::NoHandle => {
                "the account records no handle (oncepost accounts set-handle NAME HANDLE)"
            }
            LeadReason::LinkRefused => "its id or link points outside the platform (an alarm)",
            LeadReason::NoIdOrLink => "it carries neither an id nor a link",
        }
    }
}

/// A post with the sent text that cannot be settled on: evidence for a person.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    /// Its id as the page gave it (unchecked when the reason is `link_refused`).
    pub id: Option<String>,
    /// Its permalink when it passed the checks, else None (the refused value is in the alarm).
    pub permalink: Option<String>,
    /// The author it shows, if any.
    pub author: Option<String>,
    /// Why it is only a lead.
    pub why: LeadReason,
}

/// Something a page supplied that oncepost refused to record: a link or id outside the platform.
#[derive(Debug, Clone, Serialize)]
pub struct Alarm {
    /// `id` or `permalink`.
    pub what: String,
    /// The refused value, as text (it is never opened or rendered as a link).
    pub value: String,
    /// Why it was refused.
    pub why: String,
}

impl ReadbackPlan {
    /// The permalink of post `id` (encoded for where `{id}` stands: see [`fill_template`]), with the post's
    /// `{field:NAME}` values.
    pub fn permalink_of(&self, id: &str) -> String {
        fill_template(&self.with_fields(&self.permalink), "{id}", id)
    }

    /// The search URL for `text` (encoded for where `{text}` stands: see [`fill_template`]), with the
    /// post's `{field:NAME}` values.
    pub fn search_for(&self, text: &str) -> String {
        fill_template(&self.with_fields(&self.search), "{text}", text)
    }

    /// `template` with the post's `{field:NAME}` values filled in.
    fn with_fields(&self, template: &str) -> String {
        let names: Vec<String> = self.fields.keys().map(|k| format!("field:{k}")).collect();
        let vars: Vec<(&str, &str)> = names
            .iter()
            .map(String::as_str)
            .zip(self.fields.values().map(String::as_str))
            .collect();
        crate::template::fill(template, &vars).unwrap_or_else(|_| template.to_string())
    }

    /// This plan for one post: its body `text` and other `fields` (as an intent records them).
    pub fn for_post(&mut self, text: &str, fields: &std::collections::BTreeMap<String, String>) {
        self.fields = fields.clone();
        self.fields
            .insert(self.body_field.clone(), text.to_string());
    }

    /// Expect the marker of intent `key` (when the contract has a marker field): items must show it, and
    /// `{field:NAME}` of the marker field is it.
    pub fn mark(&mut self, key: &crate::identity::DeliveryKey) {
        if let Some(f) = &self.marker_field {
            let m = key.marker();
            self.fields.insert(f.clone(), m.clone());
            self.marker = Some(m);
        }
    }

    /// Whether an item can be this intent's post as far as the marker tells: always without a marker; with
    /// one, only an item the page showed it on.
    fn marked(&self, item: &ShownItem) -> bool {
        self.marker.is_none() || item.marked == Some(true)
    }
}

/// `template` with every `placeholder` (`{id}`, `{text}`, `{field:NAME}`) replaced by `value`, encoded for
/// where it stands (see [`crate::template`]). A malformed template is returned as it is: contract checks
/// refuse those before any plan exists.
pub fn fill_template(template: &str, placeholder: &str, value: &str) -> String {
    let name = placeholder.trim_start_matches('{').trim_end_matches('}');
    crate::template::fill(template, &[(name, value)]).unwrap_or_else(|_| template.to_string())
}

/// One post item as a page shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShownItem {
    /// Its id, when the page carries one.
    pub id: Option<String>,
    /// Its text (`textContent` of the text element), if any.
    pub text: Option<String>,
    /// The same element's text as laid out (`innerText`), when it differs: the line breaks of `<br>` and
    /// of paragraphs, which `textContent` drops when the page puts nothing between them
    /// (`<p>one<br>two</p><p>three</p>` is "onetwothree" there), as single-page apps render posts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub laid_out: Option<String>,
    /// Its first link (absolute), if any.
    pub href: Option<String>,
    /// The author it shows (text or attribute of the contract's author element), if any.
    #[serde(default)]
    pub author: Option<String>,
    /// Whether it shows the intent's marker (None: no marker was looked for).
    #[serde(default)]
    pub marked: Option<bool>,
}

impl ShownItem {
    /// Whether this item shows `sent` under `rule`: its text as in the document, or as laid out (a page
    /// that renders line breaks as elements with nothing between them). Both are the one element's text,
    /// so either is what the post shows; the authorship and id checks come on top, as ever. With `added`
    /// (`publish.added_text`), also that text with one of them before or after it.
    pub fn shows(&self, rule: TextRule, sent: &str, added: &[String]) -> bool {
        [&self.text, &self.laid_out]
            .into_iter()
            .flatten()
            .any(|t| rule.matches_with(sent, t, added))
    }
}

/// What a read-back concluded.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum ReadVerdict {
    /// The post is there with the sent text, and it is this account's.
    Match {
        /// Its id.
        id: Option<String>,
        /// Its permalink (checked: http(s) inside `origins.allowed`).
        permalink: Option<String>,
        /// How it is known to be this account's.
        authorship: Authorship,
    },
    /// Posts with the sent text are there, but none can be shown to be this account's: a lead for a person.
    Lead {
        /// What was seen, in page order.
        candidates: Vec<Candidate>,
    },
    /// The post is there (by id) with a different text.
    Mismatch {
        /// Its id.
        id: Option<String>,
        /// What the page shows.
        shown: String,
    },
    /// Nothing matching was found.
    NotFound,
}

/// A read-back: the verdict and what it was based on.
#[derive(Debug, Clone, Serialize)]
pub struct Readback {
    /// `permalink` or `search`.
    pub by: String,
    /// The URL read.
    pub url: String,
    /// The verdict.
    pub verdict: ReadVerdict,
    /// The items the page showed (texts cut to 500 characters).
    pub items: Vec<ShownItem>,
    /// How many reads it took (propagation retries).
    pub reads: u32,
    /// Ids and links the page supplied that were refused (outside the platform): each is an alarm.
    pub alarms: Vec<Alarm>,
    /// Screenshot of the final read (masked), when one was taken.
    #[serde(skip)]
    pub png: Option<Vec<u8>>,
}

// Items, and what is inside each, are found in the document and in its open shadow roots (a feed rendered by
// web components): see `shadow_js!`; and in its same-origin frames, where an app shell or a widget of the same
// site shows its posts. Each frame's content box is placed in the top viewport for the masks. At most 64
// documents. A frame of another origin is out of this script's reach: `p.hosts` asks for those iframes
// instead (other_origin.rs lists each from inside, in a world of its own, where `origin` says whose it is).
const ITEMS_JS: &str = concat!(
    "(p) => {",
    shadow_js!(),
    frames_js!(),
    emoji_js!(),
    r#"
  let found = [];
  for (const sel of p.item) { found = docs.flatMap(d => deepAll(d.doc, sel)); if (found.length) break; }
  const masks = docs.flatMap(d => p.masks.flatMap(s => { try { return deepAll(d.doc, s); } catch (e) { return []; } })
    .map(e => { const r = e.getBoundingClientRect(); return { x: d.x + r.left, y: d.y + r.top, w: r.width, h: r.height }; }));
  // The text element's text and its laid-out text, without the elements of `skip` (what the platform adds
  // to a rendered post: section edit links, a table of contents) and with emoji images as their alt text.
  // The laid-out text is read with those hidden and each emoji image followed by its alt for the one
  // synchronous read (nothing renders in between), then all is put back as it was.
  function textOf(t, skip) {
    const laidOut = () => (typeof t.innerText === 'string' ? t.innerText : null);
    const emoji = emojiIn(t);
    if (!skip.length && !emoji.length) { return [t.textContent, laidOut()]; }
    const copy = t.cloneNode(true);
    skip.forEach(css => copy.querySelectorAll(css).forEach(e => e.remove()));
    emojiIn(copy).forEach(e => e.replaceWith(document.createTextNode(e.getAttribute('alt'))));
    const hidden = skip.flatMap(css => Array.from(t.querySelectorAll(css)))
      .map(e => [e, e.style.getPropertyValue('display'), e.style.getPropertyPriority('display')]);
    hidden.forEach(([e]) => e.style.setProperty('display', 'none', 'important'));
    const said = emoji.map(e => { const n = document.createTextNode(e.getAttribute('alt')); e.after(n); return n; });
    const laid = laidOut();
    said.forEach(n => n.remove());
    hidden.forEach(([e, v, pri]) => { if (v) { e.style.setProperty('display', v, pri); } else { e.style.removeProperty('display'); } });
    return [copy.textContent, laid];
  }
  return { dpr: window.devicePixelRatio || 1, origin: location.origin, hosts: hosts.length, masks, items: found.map(el => {
    const t = deepOne(el, p.text);
    const a = deepOne(el, p.link || 'a[href]');
    const au = p.author ? deepOne(el, p.author) : null;
    const author = au ? (p.author_attribute ? au.getAttribute(p.author_attribute) : au.textContent) : null;
    let marked = null;
    if (p.marker) {
      let m = null;
      try { m = p.marker_css ? deepOne(el, p.marker_css) : el; } catch (e) { m = null; }
      marked = m !== null && (m.textContent || '').includes(p.marker);
    }
    let id = p.id_attribute ? el.getAttribute(p.id_attribute) : null;
    if (p.id_text) { const e = deepOne(el, p.id_text); id = e ? (e.textContent || '').trim() || null : null; }
    const [text, laid] = t ? textOf(t, p.text_skip || []) : [null, null];
    return { id, text, laid_out: laid !== null && laid !== text ? laid : null,
             href: a && typeof a.href === 'string' && a.href ? a.href : null, author, marked };
  }) };
}
"#
);

#[derive(Deserialize)]
struct Listed {
    dpr: f64,
    /// The origin of the document listed (`location.origin`).
    #[serde(default)]
    origin: String,
    /// How many iframes of another origin its documents hold (listed from inside when there are any).
    #[serde(default)]
    hosts: usize,
    masks: Vec<BoxRect>,
    items: Vec<ShownItem>,
}

/// Open `url` in the send's read page of `session` (a fresh one when none is kept), list its post items,
/// judge them, and (when `shoot` says so for that verdict) take a masked screenshot; then park the page at
/// `about:blank` for the send's next read, or close it (`after`).
async fn read_once(
    session: &BrowserSession,
    plan: &ReadbackPlan,
    url: &str,
    navigation_timeout: Duration,
    judge: &(dyn Fn(&[ShownItem]) -> Judged + Sync),
    shoot: &(dyn Fn(&ReadVerdict) -> bool + Sync),
    after: AfterRead,
) -> Result<(Vec<ShownItem>, Judged, Option<Vec<u8>>), BrowserError> {
    let live = session.liveness();
    let page = match session.take_read_page() {
        Some(page) => page,
        None => session.open_page("open a read-back page").await?,
    };
    // After the press this page (and no other) may search by the typed text: its main frame's id is its
    // target's.
    session.write_guard().trust_reader(page.target_id().inner());
    // A page that opens a dialog while it loads ("Thanks for posting!") holds its load event and every
    // evaluation until the dialog is answered: without an answer the read waited out the navigation
    // bound and the post that was made could not be read back. Answered as the compose page's are
    // (alerts acknowledged, confirm and prompt dismissed, beforeunload accepted, popups closed), for as
    // long as the read and the parking last.
    let dialogs =
        match super::dialogs::install(session, &page, super::DialogPolicy::default()).await {
            Ok(d) => d,
            Err(e) => {
                let _ = live.call("close the read-back page", page.close()).await;
                return Err(e);
            }
        };
    let result = async {
        // In front while it is read (the full browser draws only the tab in front: a capture of a page
        // behind another waits for a frame that is slow to come; see `Opening::compose`).
        live.call("bring the read page to the front", page.bring_to_front())
            .await?;
        live.bounded(
            "navigate to the read-back page",
            navigation_timeout,
            page.goto(url),
        )
        .await?;
        let navigated = Instant::now();
        let mut listed_at = navigated;
        let (mut listed, mut verdict) = list_items(&page, live, plan, judge).await?;
        // A page that fetches its posts after it loaded (a single-page app: its load event does not wait for
        // them) shows none yet. Unless the post is already there, wait for the page's own data reads (fetch
        // and XHR, every one of which the door answers) to end and stay quiet, then list again, until a
        // listing came after they had settled. A page that starts them only once it has booted (after its
        // load event, on a timer) may not have started one yet when it is first listed: a page that has made
        // none since it loaded is given [`DATA_BOOT`] from its load to start one before its listing is
        // trusted (a server-rendered page without the post: that long, once).
        let frame = page.target_id().inner().clone();
        let until = Instant::now() + navigation_timeout.min(DATA_SETTLE_MAX);
        while !matches!(verdict.0, ReadVerdict::Match { .. }) {
            let reads = session.write_guard().data_reads(&frame);
            let settled_before = |t: Instant| t + DATA_QUIET <= listed_at;
            if reads.in_flight == 0 && reads.last.is_none_or(settled_before) {
                let booted = navigated + DATA_BOOT;
                let read_since_load = reads.last.is_some_and(|t| t >= navigated);
                let now = Instant::now();
                if read_since_load || now >= booted {
                    break;
                }
                tokio::time::sleep(DATA_POLL.min(booted - now)).await;
                continue;
            }
            let quiet_now =
                reads.in_flight == 0 && reads.last.is_some_and(|t| t.elapsed() >= DATA_QUIET);
            let out_of_time = Instant::now() >= until;
            if quiet_now || out_of_time {
                listed_at = Instant::now();
                (listed, verdict) = list_items(&page, live, plan, judge).await?;
                if out_of_time {
                    break;
                }
            } else {
                tokio::time::sleep(DATA_POLL).await;
            }
        }
        if !shoot(&verdict.0) {
            return Ok((listed.items, verdict, None));
        }
        let shot = live
            .call(
                "screenshot the read-back",
                page.execute(super::screenshot::png_params()),
            )
            .await?;
        let data: &str = shot.result.data.as_ref();
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| BrowserError::Script(format!("screenshot is not base64: {e}")))?;
        let png = if listed.masks.is_empty() {
            png
        } else {
            super::screenshot::annotate(&png, listed.dpr, &listed.masks, &[])?
        };
        Ok((listed.items, verdict, Some(png)))
    }
    .await;
    // Parked, the page runs nothing of the platform while the compose page loads (a search page left open
    // could poll, open a second session or mint a newer token: the reason the look never runs beside the
    // compose page). A read that failed, or a page that did not reach `about:blank`, is closed instead.
    let parked = result.is_ok() && after == AfterRead::Park && park(live, &page).await;
    drop(dialogs);
    let closing = if parked {
        session.keep_read_page(page)
    } else {
        Some(page)
    };
    if let Some(page) = closing {
        let _ = live.call("close the read-back page", page.close()).await;
    }
    result
}

/// How long a page's data reads must have been quiet before a listing is trusted to show what they brought.
const DATA_QUIET: Duration = Duration::from_millis(100);
/// How long after its load a page that has made no data read yet may still start one (an app that boots on
/// its load event and then fetches) before its listing is trusted.
const DATA_BOOT: Duration = Duration::from_millis(100);
/// How long a read waits at most for a page's data reads to settle (within the navigation bound).
const DATA_SETTLE_MAX: Duration = Duration::from_secs(5);
/// How often the data reads are looked at while they are out.
const DATA_POLL: Duration = Duration::from_millis(20);

/// List the post items of `page` in one evaluation (ids from links filled in) and judge them.
async fn list_items(
    page: &chromiumoxide::Page,
    live: &super::Liveness,
    plan: &ReadbackPlan,
    judge: &(dyn Fn(&[ShownItem]) -> Judged + Sync),
) -> Result<(Listed, Judged), BrowserError> {
    let listed = list_once(page, live, plan, judge).await?;
    // Not there: it may be inside closed shadow roots the HTML parser made (server-rendered components),
    // which no script saw being made. Once the keeper holds a new one, the page is listed again: a look
    // before writing that saw only what scripts made would press again for a post that is there.
    if !matches!(listed.1.0, ReadVerdict::Match { .. })
        && super::closed_roots::keep_parser_made(page, live).await? > 0
    {
        return list_once(page, live, plan, judge).await;
    }
    Ok(listed)
}

async fn list_once(
    page: &chromiumoxide::Page,
    live: &super::Liveness,
    plan: &ReadbackPlan,
    judge: &(dyn Fn(&[ShownItem]) -> Judged + Sync),
) -> Result<(Listed, Judged), BrowserError> {
    let params = serde_json::json!({
        "item": plan.item_css, "text": plan.text_css,
        "id_attribute": plan.id_attribute, "id_text": plan.id_text_css, "link": plan.link_css,
        "text_skip": plan.text_skip, "masks": plan.masks,
        "author": plan.author_css, "author_attribute": plan.author_attribute,
        "marker": plan.marker, "marker_css": plan.marker_css,
    });
    let v = evaluate_json(page, live, "list post items", ITEMS_JS, &params).await?;
    let mut listed: Listed = serde_json::from_value(v)
        .map_err(|e| BrowserError::Script(format!("read-back result: {e}")))?;
    // Posts shown inside a frame of another origin (a comment widget served from `comments.example.com`):
    // listed from inside that frame, after the page's own, and only when its origin is the platform's
    // (`origins.allowed`): a frame of any other origin is someone else's content, never the platform's
    // word that a post is there.
    let frames = if listed.hosts == 0 {
        Vec::new()
    } else {
        let mut hosts = params.clone();
        hosts["hosts"] = serde_json::Value::Bool(true);
        super::other_origin::frames_inside(page, live, ITEMS_JS, &hosts).await?
    };
    for frame in frames {
        let v = super::checks::evaluate_json_in(
            page,
            live,
            "list post items in a frame of another origin",
            ITEMS_JS,
            &params,
            Some(frame.context),
        )
        .await?;
        let inside: Listed = serde_json::from_value(v)
            .map_err(|e| BrowserError::Script(format!("read-back result: {e}")))?;
        if !plan.allowed_origins.contains(&inside.origin) {
            continue;
        }
        listed.items.extend(inside.items);
        listed
            .masks
            .extend(inside.masks.into_iter().map(|m| BoxRect {
                x: m.x + frame.x,
                y: m.y + frame.y,
                ..m
            }));
    }
    if let Some(re) = &plan.id_from_link {
        for it in &mut listed.items {
            match it.href.as_deref().and_then(|h| re.captures(h)) {
                Some(c) => {
                    if it.id.is_none() {
                        it.id = c.name("id").map(|m| value_from_url(m.as_str()));
                    }
                }
                // The contract says what the post's own link looks like, and this is not it (the author's
                // profile, a skip link): never recorded as the post's permalink. Measured before: a post
                // found before writing was settled with the author's profile as its permalink.
                None => it.href = None,
            }
        }
    }
    let verdict = judge(&listed.items);
    Ok((listed, verdict))
}

/// What becomes of the read page after a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterRead {
    /// Parked at `about:blank` and kept for the send's next read: after a look (before writing, or a
    /// reconcile's), which is followed by more of the send.
    Park,
    /// Closed: after a read-back, the send's last read (a re-read in the propagation window opens a fresh
    /// page; parking costs more than closing, 21 against 1 ms measured).
    Close,
}

/// Open the send's read page ahead, blank, for the look before writing to take: side by side with the
/// compose page's own opening (a blank page loads nothing of the platform, so it cannot race the compose
/// page's session; the look still navigates it only after the login). A page that cannot be opened here is
/// opened by the read itself.
pub async fn open_read_page_ahead(session: &BrowserSession) {
    if let Ok(page) = session.open_page("open a read-back page").await
        && let Some(extra) = session.keep_read_page(page)
    {
        let _ = session
            .liveness()
            .call("close the read-back page", extra.close())
            .await;
    }
}

/// Navigate a read page to `about:blank` (bounded, 2 s) and say whether it got there.
async fn park(live: &super::Liveness, page: &chromiumoxide::Page) -> bool {
    let blank = live
        .bounded(
            "park the read page",
            Duration::from_secs(2),
            page.goto("about:blank"),
        )
        .await
        .is_ok();
    blank
        && live
            .call("read the page URL", page.url())
            .await
            .is_ok_and(|u| u.as_deref() == Some("about:blank"))
}

/// A verdict and the alarms raised while reaching it.
type Judged = (ReadVerdict, Vec<Alarm>);

impl ReadbackPlan {
    /// How `item`'s authorship compares with the account's handle.
    pub fn authorship(&self, item: &ShownItem) -> Authorship {
        if self.author_css.is_none() {
            return Authorship::NotDeclared;
        }
        let Some(shown) = item
            .author
            .as_deref()
            .map(normalize_handle)
            .filter(|a| !a.is_empty())
        else {
            return Authorship::NotShown;
        };
        // With `author_pattern`, the handle inside what is shown; shown but not matching, it is not the
        // account's (another author's name in another shape, a "Deleted user"): a lead, never a finding.
        let shown = match handle_shown(
            &shown,
            self.author_pattern.as_ref(),
            self.author_attribute.as_deref(),
        ) {
            Some(h) => normalize_handle(&h),
            None => return Authorship::OtherAuthor { author: shown },
        };
        // "You": the page names the viewer, and the read pages are viewed in the account's own profile. A
        // page viewed logged out names no one so.
        if self.viewer_labels.contains(&shown) {
            return Authorship::Ours { author: shown };
        }
        match &self.handle {
            None => Authorship::NoHandle { author: shown },
            Some(h) if same_author(h, &shown) => Authorship::Ours { author: shown },
            Some(_) => Authorship::OtherAuthor { author: shown },
        }
    }

    /// The id and permalink to record for a search item, both checked; a refused one is an alarm.
    fn link_of(&self, item: &ShownItem) -> Result<(Option<String>, Option<String>), Alarm> {
        match (&item.id, &item.href) {
            (Some(id), _) => {
                check_id(id).map_err(|why| Alarm {
                    what: "id".into(),
                    value: id.clone(),
                    why,
                })?;
                let link = self.permalink_of(id);
                check_link(&link, &self.allowed_origins).map_err(|why| Alarm {
                    what: "permalink".into(),
                    value: link.clone(),
                    why,
                })?;
                Ok((Some(id.clone()), Some(link)))
            }
            (None, Some(href)) => {
                check_link(href, &self.allowed_origins).map_err(|why| Alarm {
                    what: "permalink".into(),
                    value: href.clone(),
                    why,
                })?;
                Ok((None, Some(href.clone())))
            }
            (None, None) => Ok((None, None)),
        }
    }

    /// The search judge: the first text match that shows this account's handle, with a recordable link,
    /// is a match; any other text match is a lead; no text match is not found.
    pub fn judge_search(&self, sent: &str, items: &[ShownItem]) -> (ReadVerdict, Vec<Alarm>) {
        let mut candidates = Vec::new();
        let mut alarms = Vec::new();
        // With a marker, an item without it is another post (someone's identical text, or an earlier post
        // of the same account): not even a lead.
        for i in items
            .iter()
            .filter(|i| self.marked(i) && i.shows(self.compare, sent, &self.added_text))
        {
            let authorship = self.authorship(i);
            let author = authorship.author();
            let why = match self.link_of(i) {
                Err(alarm) => {
                    alarms.push(alarm);
                    candidates.push(Candidate {
                        id: i.id.clone(),
                        permalink: None,
                        author,
                        why: LeadReason::LinkRefused,
                    });
                    continue;
                }
                Ok((None, None)) => LeadReason::of(&authorship).unwrap_or(LeadReason::NoIdOrLink),
                Ok((id, permalink)) => match LeadReason::of(&authorship) {
                    None => {
                        return (
                            ReadVerdict::Match {
                                id,
                                permalink,
                                authorship,
                            },
                            alarms,
                        );
                    }
                    Some(why) => {
                        candidates.push(Candidate {
                            id,
                            permalink,
                            author,
                            why,
                        });
                        continue;
                    }
                },
            };
            candidates.push(Candidate {
                id: i.id.clone(),
                permalink: None,
                author,
                why,
            });
        }
        if candidates.is_empty() {
            (ReadVerdict::NotFound, alarms)
        } else {
            (ReadVerdict::Lead { candidates }, alarms)
        }
    }

    /// The permalink judge for post `id` (from this attempt's own create answer): the item with that id
    /// (or the page's only item without one). The text must match; an item showing another author is a lead;
    /// one that shows no author (or no handle is recorded) is taken as ours, the create answer being the
    /// proof of authorship. A refused id or permalink is an alarm and a lead.
    pub fn judge_permalink(&self, id: &str, sent: &str, items: &[ShownItem]) -> Judged {
        self.judge_at_id(id, sent, items, IdProof::CreateAnswer)
    }

    /// The judge of post `id` taken from the create request oncepost sent (its URL named the post: an app
    /// that allocates the post before publishing it). Nothing answered, so only an item showing the
    /// account's own handle is ours; any other text match there is a lead.
    pub fn judge_sent_id(&self, id: &str, sent: &str, items: &[ShownItem]) -> Judged {
        self.judge_at_id(id, sent, items, IdProof::SentRequest)
    }

    fn judge_at_id(&self, id: &str, sent: &str, items: &[ShownItem], proof: IdProof) -> Judged {
        let url = self.permalink_of(id);
        let item = items
            .iter()
            .find(|i| i.id.as_deref() == Some(id))
            .or_else(|| items.first().filter(|i| i.id.is_none()));
        let Some(i) = item else {
            return (ReadVerdict::NotFound, Vec::new());
        };
        // An item that shows no text at all is no post shown (the platform's "not found" or "being processed"
        // page, read whole when the item is the whole page): not there yet, read again within the window,
        // never a post with other words (measured: such a page, read right after the create, parked the post
        // as a mismatch).
        let Some(shown) = i.text.clone() else {
            return (ReadVerdict::NotFound, Vec::new());
        };
        if !self.marked(i) {
            // The id came from this attempt's own answer, yet the post lacks the marker the contract says the
            // platform keeps: not provably ours; a person looks.
            return (
                ReadVerdict::Mismatch {
                    id: Some(id.to_string()),
                    shown: format!(
                        "{shown} [without the intent's marker {}]",
                        self.marker.as_deref().unwrap_or_default()
                    ),
                },
                Vec::new(),
            );
        }
        if !i.shows(self.compare, sent, &self.added_text) {
            return (
                ReadVerdict::Mismatch {
                    id: Some(id.to_string()),
                    shown,
                },
                Vec::new(),
            );
        }
        let authorship = self.authorship(i);
        let refused = check_id(id)
            .map_err(|why| Alarm {
                what: "id".into(),
                value: id.to_string(),
                why,
            })
            .and_then(|()| {
                check_link(&url, &self.allowed_origins).map_err(|why| Alarm {
                    what: "permalink".into(),
                    value: url.clone(),
                    why,
                })
            });
        if let Err(alarm) = refused {
            let lead = Candidate {
                id: Some(id.to_string()),
                permalink: None,
                author: authorship.author(),
                why: LeadReason::LinkRefused,
            };
            return (
                ReadVerdict::Lead {
                    candidates: vec![lead],
                },
                vec![alarm],
            );
        }
        let lead_reason = match (&authorship, proof) {
            (Authorship::OtherAuthor { .. }, _) => Some(LeadReason::OtherAuthor),
            (_, IdProof::CreateAnswer) => None,
            (a, IdProof::SentRequest) => LeadReason::of(a),
        };
        if let Some(why) = lead_reason {
            let lead = Candidate {
                id: Some(id.to_string()),
                permalink: Some(url),
                author: authorship.author(),
                why,
            };
            return (
                ReadVerdict::Lead {
                    candidates: vec![lead],
                },
                Vec::new(),
            );
        }
        (
            ReadVerdict::Match {
                id: Some(id.to_string()),
                permalink: Some(url),
                authorship,
            },
            Vec::new(),
        )
    }
}

/// Where the id a permalink judge is given comes from, which decides what proves authorship.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IdProof {
    /// This attempt's own create answer named it: an item showing no author is ours.
    CreateAnswer,
    /// The create request oncepost sent named it, and no answer is known: only the account's own handle
    /// shown on the item makes it ours.
    SentRequest,
}

/// Read post `id`, named by the create request oncepost sent, from its permalink once (reconcile runs after
/// the propagation window): a match needs the account's handle shown on it ([`ReadbackPlan::judge_sent_id`]).
pub async fn by_sent_id(
    session: &BrowserSession,
    plan: &ReadbackPlan,
    id: &str,
    sent: &str,
    navigation_timeout: Duration,
) -> Result<Readback, BrowserError> {
    let url = plan.permalink_of(id);
    let mut once = plan.clone();
    once.propagation_ms = 0;
    read_until(
        session,
        &once,
        "sent id",
        &url,
        navigation_timeout,
        AfterRead::Park,
        |items| plan.judge_sent_id(id, sent, items),
    )
    .await
}

/// Read post `id` back from its permalink, re-reading "not found" until `propagation_ms` passed.
pub async fn by_id(
    session: &BrowserSession,
    plan: &ReadbackPlan,
    id: &str,
    sent: &str,
    navigation_timeout: Duration,
) -> Result<Readback, BrowserError> {
    let url = plan.permalink_of(id);
    read_until(
        session,
        plan,
        "permalink",
        &url,
        navigation_timeout,
        AfterRead::Close,
        |items| plan.judge_permalink(id, sent, items),
    )
    .await
}

/// Look for `sent` through the search page (exact under the contract's rule, authored by the account's
/// handle). `wait_for_propagation`: re-read "not found" and leads until `propagation_ms` passed (after a
/// create: the account's own post may not be listed yet); false for look-before-write and reconcile.
pub async fn by_search(
    session: &BrowserSession,
    plan: &ReadbackPlan,
    sent: &str,
    wait_for_propagation: bool,
    navigation_timeout: Duration,
) -> Result<Readback, BrowserError> {
    let url = plan.search_for(sent);
    let mut p = plan.clone();
    let after = if wait_for_propagation {
        AfterRead::Close
    } else {
        p.propagation_ms = 0;
        AfterRead::Park
    };
    read_until(
        session,
        &p,
        "search",
        &url,
        navigation_timeout,
        after,
        |items| plan.judge_search(sent, items),
    )
    .await
}

#[allow(clippy::too_many_arguments)]
async fn read_until(
    session: &BrowserSession,
    plan: &ReadbackPlan,
    by: &str,
    url: &str,
    navigation_timeout: Duration,
    after: AfterRead,
    judge: impl Fn(&[ShownItem]) -> Judged + Sync,
) -> Result<Readback, BrowserError> {
    // The propagation window: the post may take that long to be listed.
    let window = Wait::new(
        "the post to be shown",
        Duration::from_millis(plan.propagation_ms),
        Duration::from_millis(250),
    );
    let mut reads = 0;
    loop {
        reads += 1;
        // The screenshot is evidence of a final answer: skip it for reads that will be repeated, and for
        // a look-before-write that found nothing (propagation 0).
        let last = window.expired();
        let keep_not_found = plan.propagation_ms > 0;
        let shoot = |v: &ReadVerdict| match v {
            ReadVerdict::Match { .. } | ReadVerdict::Mismatch { .. } => true,
            ReadVerdict::Lead { .. } => last,
            ReadVerdict::NotFound => last && keep_not_found,
        };
        let (items, (verdict, alarms), png) = read_once(
            session,
            plan,
            url,
            navigation_timeout,
            &judge,
            &shoot,
            after,
        )
        .await?;
        // A lead is re-read like "not found" while the window lasts: the account's own post may not be
        // listed yet, and another account's post with the same text proves nothing about it.
        let settled = matches!(
            verdict,
            ReadVerdict::Match { .. } | ReadVerdict::Mismatch { .. }
        );
        if settled || window.pause().await.is_err() {
            let items = items
                .into_iter()
                .map(|mut i| {
                    i.text = i.text.map(|t| t.chars().take(500).collect());
                    i.laid_out = i.laid_out.map(|t| t.chars().take(500).collect());
                    i.author = i.author.map(|t| t.chars().take(200).collect());
                    i
                })
                .collect();
            return Ok(Readback {
                by: by.into(),
                url: url.into(),
                verdict,
                items,
                reads,
                alarms,
                png,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_is_taken_from_inside_what_is_shown() {
        let link = regex::Regex::new("^/u/(?P<handle>[^/?#]+)$").unwrap();
        let by = regex::Regex::new(r"^Posted by (?P<handle>\S+)").unwrap();
        assert_eq!(handle_shown("alice", None, None).as_deref(), Some("alice"));
        assert_eq!(
            handle_shown("/u/J%C3%BCrgen", Some(&link), Some("href")).as_deref(),
            Some("J\u{fc}rgen"),
            "a link's handle is percent-decoded"
        );
        assert_eq!(
            handle_shown("50%25 off", None, None).as_deref(),
            Some("50%25 off"),
            "text is taken as shown"
        );
        assert_eq!(
            handle_shown("Posted by alice · 3h", Some(&by), None).as_deref(),
            Some("alice")
        );
        assert_eq!(handle_shown("Deleted user", Some(&by), None), None);
        let mut p = plan(Some("alice"));
        p.author_css = Some("a.author".into());
        p.author_attribute = Some("href".into());
        p.author_pattern = Some(link);
        let item = |author: &str| ShownItem {
            id: None,
            text: None,
            laid_out: None,
            href: None,
            author: Some(author.into()),
            marked: None,
        };
        assert!(matches!(
            p.authorship(&item("/u/alice")),
            Authorship::Ours { .. }
        ));
        assert!(matches!(
            p.authorship(&item("/u/bob")),
            Authorship::OtherAuthor { .. }
        ));
        assert!(
            matches!(
                p.authorship(&item("/settings")),
                Authorship::OtherAuthor { .. }
            ),
            "shown but not matching: never the account's"
        );
        assert!(matches!(p.authorship(&item("")), Authorship::NotShown));
    }

    #[test]
    fn a_viewer_label_is_the_account_and_nothing_else_is() {
        let by = |author: &str| item(Some("x1"), "hello", Some(author), None);
        let mut p = plan(Some("alice"));
        assert!(matches!(
            p.authorship(&by("You")),
            Authorship::OtherAuthor { .. }
        ));
        p.viewer_labels = vec!["You".into()];
        assert!(matches!(
            p.authorship(&by(" You ")),
            Authorship::Ours { .. }
        ));
        assert!(matches!(
            p.authorship(&by("alice")),
            Authorship::Ours { .. }
        ));
        assert!(matches!(
            p.authorship(&by("you")),
            Authorship::OtherAuthor { .. }
        ));
        assert!(matches!(
            p.authorship(&by("Youssef")),
            Authorship::OtherAuthor { .. }
        ));
        // Even with no handle recorded: the page names the viewer.
        p.handle = None;
        assert!(matches!(p.authorship(&by("You")), Authorship::Ours { .. }));
        assert!(matches!(
            p.authorship(&by("bob")),
            Authorship::NoHandle { .. }
        ));
    }

    fn plan(handle: Option<&str>) -> ReadbackPlan {
        ReadbackPlan {
            permalink: "http://127.0.0.1:9/p/{id}".into(),
            search: "http://127.0.0.1:9/search?q={text}".into(),
            item_css: vec!["article.post".into()],
            text_css: ".post-text".into(),
            id_attribute: Some("data-post-id".into()),
            id_from_link: None,
            id_text_css: None,
            link_css: None,
            text_skip: Vec::new(),
            compare: TextRule::ExactNfc,
            added_text: Vec::new(),
            propagation_ms: 0,
            masks: Vec::new(),
            author_css: Some(".post-author".into()),
            author_attribute: None,
            author_pattern: None,
            viewer_labels: Vec::new(),
            handle: handle.map(String::from),
            allowed_origins: vec!["http://127.0.0.1:9".into()],
            fields: Default::default(),
            body_field: "text".into(),
            marker_field: None,
            marker_css: None,
            marker: None,
        }
    }

    #[test]
    fn with_a_marker_only_the_marked_item_is_the_intents_post() {
        let mut p = plan(Some("alice"));
        p.marker_field = Some("title".into());
        p.marker_css = Some(".post-title".into());
        let key = crate::identity::DeliveryKey::parse(&"ab".repeat(32)).unwrap();
        p.mark(&key);
        assert_eq!(p.marker.as_deref(), Some("opabababababab"));
        assert_eq!(
            p.fields.get("title").map(String::as_str),
            Some("opabababababab")
        );
        let marked = |id: &str, m: Option<bool>| ShownItem {
            marked: m,
            ..item(Some(id), "same", Some("alice"), None)
        };
        // Alice's own earlier post with the same text, unmarked, comes first: it is not even a lead.
        let items = [marked("old", Some(false)), marked("new", Some(true))];
        match p.judge_search("same", &items).0 {
            ReadVerdict::Match { id, .. } => assert_eq!(id.as_deref(), Some("new")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            p.judge_search("same", &items[..1]).0,
            ReadVerdict::NotFound
        ));
        // An item the page gave no marker answer for (None) is not marked either.
        assert!(matches!(
            p.judge_search("same", &[marked("x", None)]).0,
            ReadVerdict::NotFound
        ));
        // By permalink (the id from the attempt's own answer), a post without the marker is a mismatch.
        assert!(matches!(
            p.judge_permalink("old", "same", &items[..1]).0,
            ReadVerdict::Mismatch { .. }
        ));
        assert!(matches!(
            p.judge_permalink("new", "same", &items[1..]).0,
            ReadVerdict::Match { .. }
        ));
        // Without a marker field, marking changes nothing.
        let mut q = plan(Some("alice"));
        q.mark(&key);
        assert!(q.marker.is_none() && q.fields.is_empty());
    }

    #[test]
    fn visible_words_see_through_rendered_markup_but_not_a_different_post() {
        let r = TextRule::VisibleWords;
        for (sent, shown) in [
            ("**Release** _notes_ for v2", "Release notes for v2"),
            (
                "# Heading\n\nSee [the docs](https://ex.example/a?b=c) now",
                "Heading See the docs now",
            ),
            ("==== Title ====\n//it// **b**", "Title it b"),
            ("<b>bold</b> &amp; plain", "bold & plain"),
            ("ping @alice, please", "ping @alice please"),
            ("Café", "Cafe\u{301}"),
        ] {
            assert!(r.matches(sent, shown), "{sent:?} vs {shown:?}");
        }
        for (sent, shown) in [
            ("**Release** notes for v2", "Release notes for v3"),
            ("one two three", "one three"),
            ("one two", "two one"),
            ("one two", "one two three"),
            ("Release", "release"),
            ("[[target|label]]", "label"),
            ("** __ **", ""),
        ] {
            assert!(!r.matches(sent, shown), "{sent:?} vs {shown:?}");
        }
    }

    #[test]
    fn an_id_may_hold_a_space_but_no_other_whitespace_or_control() {
        assert!(check_id("Release notes v2").is_ok());
        for bad in [
            "",
            " lead",
            "trail ",
            "a\tb",
            "a\nb",
            "a\u{2028}b",
            "a\u{0}b",
        ] {
            assert!(check_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_id_in_a_path_is_percent_encoded_and_a_query_value_form_encoded() {
        let p = plan(None);
        // A path segment: a space is %20 (a path reads `+` as a plus), `/`, `?` and `#` stay inside it.
        assert_eq!(p.permalink_of("a b"), "http://127.0.0.1:9/p/a%20b");
        assert_eq!(
            p.permalink_of("a+b/c?d#e"),
            "http://127.0.0.1:9/p/a%2Bb%2Fc%3Fd%23e"
        );
        assert_eq!(
            p.permalink_of("fb-12_3.x~"),
            "http://127.0.0.1:9/p/fb-12_3.x~"
        );
        assert_eq!(p.permalink_of("é"), "http://127.0.0.1:9/p/%C3%A9");
        // A query value: form encoding, as a form would send it.
        assert_eq!(
            p.search_for("Quarterly results & more"),
            "http://127.0.0.1:9/search?q=Quarterly+results+%26+more"
        );
        assert_eq!(
            fill_template("http://h/post?id={id}", "{id}", "a b"),
            "http://h/post?id=a+b"
        );
        // The same template may hold both, and a fragment is not a query.
        assert_eq!(
            fill_template("http://h/u/{x}/view?x={x}#{x}", "{x}", "a b"),
            "http://h/u/a%20b/view?x=a+b#a%20b"
        );
        // A search by text in the path.
        assert_eq!(
            fill_template("http://h/search/{text}", "{text}", "1+1 = 2"),
            "http://h/search/1%2B1%20%3D%202"
        );
        assert_eq!(fill_template("http://h/p", "{id}", "x"), "http://h/p");
    }

    fn item(id: Option<&str>, text: &str, author: Option<&str>, href: Option<&str>) -> ShownItem {
        ShownItem {
            id: id.map(String::from),
            text: Some(text.into()),
            laid_out: None,
            href: href.map(String::from),
            author: author.map(String::from),
            marked: None,
        }
    }

    #[test]
    fn an_item_shows_the_text_as_in_the_document_or_as_laid_out() {
        let sent = "first line\nsecond line\n\nnew paragraph";
        // `<p>first line<br>second line</p><p>new paragraph</p>`: nothing between the elements.
        let glued = item(None, "first linesecond linenew paragraph", None, None);
        let laid_out = ShownItem {
            laid_out: Some("first line\nsecond line\n\nnew paragraph".into()),
            ..glued.clone()
        };
        for rule in [
            TextRule::ExactNfc,
            TextRule::CollapseWhitespace,
            TextRule::VisibleWords,
        ] {
            assert!(!glued.shows(rule, sent, &[]), "{rule:?}");
            assert!(laid_out.shows(rule, sent, &[]), "{rule:?}");
        }
        // Either text of the element, never another's: a different text laid out is still different.
        let other = ShownItem {
            laid_out: Some("first line\nsecond line\n\nanother paragraph".into()),
            ..glued
        };
        assert!(!other.shows(TextRule::VisibleWords, sent, &[]));
        // As in the document still counts (a page that styles its text `text-transform: uppercase`
        // lays it out in capitals).
        let upper = ShownItem {
            laid_out: Some("FIRST LINE".into()),
            ..item(None, "first line", None, None)
        };
        assert!(upper.shows(TextRule::ExactNfc, "first line", &[]));
    }

    /// Text the contract says the page or platform adds (`publish.added_text`) may stand whole before or
    /// after the post, and nothing else may: not part of it, not in the middle, not instead of the post.
    #[test]
    fn a_declared_addition_before_or_after_the_post_is_the_post() {
        let sig = vec!["\u{2014} sent from my app".to_string()];
        let sent = "hello world";
        for rule in [
            TextRule::ExactNfc,
            TextRule::CollapseWhitespace,
            TextRule::VisibleWords,
        ] {
            for shown in [
                "hello world\n\n\u{2014} sent from my app",
                "hello world \u{2014} sent from my app",
                "\u{2014} sent from my app\nhello world",
            ] {
                assert!(rule.matches_with(sent, shown, &sig), "{rule:?} {shown:?}");
                assert!(!rule.matches_with(sent, shown, &[]), "{rule:?} {shown:?}");
            }
            for shown in [
                "hello world sent from my app",
                "hello \u{2014} sent from my app world",
                "\u{2014} sent from my app",
                "goodbye world \u{2014} sent from my app",
            ] {
                assert!(!rule.matches_with(sent, shown, &sig), "{rule:?} {shown:?}");
            }
        }
    }

    #[test]
    fn a_search_match_settles_only_on_the_accounts_own_item() {
        let items = [
            item(Some("bob1"), "same", Some("bob"), None),
            item(Some("al1"), "same", Some(" @alice "), None),
        ];
        match plan(Some("alice")).judge_search("same", &items).0 {
            ReadVerdict::Match { id, permalink, .. } => {
                assert_eq!(id.as_deref(), Some("al1"));
                assert_eq!(permalink.as_deref(), Some("http://127.0.0.1:9/p/al1"));
            }
            other => panic!("{other:?}"),
        }
        // Only Bob's: a lead naming him.
        match plan(Some("alice")).judge_search("same", &items[..1]).0 {
            ReadVerdict::Lead { candidates } => {
                assert_eq!(candidates[0].why, LeadReason::OtherAuthor);
                assert_eq!(candidates[0].author.as_deref(), Some("bob"));
            }
            other => panic!("{other:?}"),
        }
        // No handle, no author element, no author shown: leads.
        let why = |p: ReadbackPlan, items: &[ShownItem]| match p.judge_search("same", items).0 {
            ReadVerdict::Lead { candidates } => candidates[0].why,
            other => panic!("{other:?}"),
        };
        assert_eq!(why(plan(None), &items[1..]), LeadReason::NoHandle);
        let mut undeclared = plan(Some("alice"));
        undeclared.author_css = None;
        assert_eq!(why(undeclared, &items[1..]), LeadReason::AuthorNotDeclared);
        let unsigned = [item(Some("x"), "same", Some("  "), None)];
        assert_eq!(
            why(plan(Some("alice")), &unsigned),
            LeadReason::AuthorNotShown
        );
        assert!(matches!(
            plan(Some("alice")).judge_search("other", &items).0,
            ReadVerdict::NotFound
        ));
    }

    #[test]
    fn links_outside_the_platform_are_alarms_and_never_findings() {
        let p = plan(Some("alice"));
        for bad in [
            "javascript:alert(document.domain)",
            "https://evil.example/p/1",
            "http://user:pw@127.0.0.1:9/p/1",
            "data:text/html,hi",
        ] {
            let items = [item(None, "same", Some("alice"), Some(bad))];
            let (v, alarms) = p.judge_search("same", &items);
            assert!(
                matches!(&v, ReadVerdict::Lead { candidates } if candidates[0].why == LeadReason::LinkRefused),
                "{bad}: {v:?}"
            );
            assert_eq!(alarms.len(), 1, "{bad}");
            assert_eq!(alarms[0].value, bad);
        }
        let items = [item(Some("a\tb"), "same", Some("alice"), None)];
        let (v, alarms) = p.judge_search("same", &items);
        assert!(matches!(v, ReadVerdict::Lead { .. }), "{v:?}");
        assert_eq!(alarms[0].what, "id");
        let good = [item(
            None,
            "same",
            Some("alice"),
            Some("http://127.0.0.1:9/p/z"),
        )];
        assert!(matches!(
            p.judge_search("same", &good).0,
            ReadVerdict::Match { .. }
        ));
        // By permalink: an id that cannot be one, or a template leaving the platform.
        let (v, alarms) = p.judge_permalink("x\ny", "same", &[item(None, "same", None, None)]);
        assert!(
            matches!(v, ReadVerdict::Lead { .. }) && alarms.len() == 1,
            "{v:?}"
        );
        let mut off = plan(Some("alice"));
        off.permalink = "https://evil.example/p/{id}".into();
        let (v, alarms) =
            off.judge_permalink("ok", "same", &[item(Some("ok"), "same", None, None)]);
        assert!(
            matches!(v, ReadVerdict::Lead { .. }) && alarms.len() == 1,
            "{v:?}"
        );
    }

    #[test]
    fn by_permalink_another_author_is_a_lead_and_an_unsigned_item_is_ours() {
        let p = plan(Some("alice"));
        let bobs = [item(Some("id1"), "same", Some("bob"), None)];
        assert!(matches!(
            p.judge_permalink("id1", "same", &bobs).0,
            ReadVerdict::Lead { candidates } if candidates[0].why == LeadReason::OtherAuthor
        ));
        let hers = [item(Some("id1"), "same", Some("alice"), None)];
        assert!(matches!(
            p.judge_permalink("id1", "same", &hers).0,
            ReadVerdict::Match {
                authorship: Authorship::Ours { .. },
                ..
            }
        ));
        // The id came from this attempt's create answer: without an author shown (or a handle), it is ours.
        let unsigned = [item(Some("id1"), "same", None, None)];
        assert!(matches!(
            p.judge_permalink("id1", "same", &unsigned).0,
            ReadVerdict::Match {
                authorship: Authorship::NotShown,
                ..
            }
        ));
        assert!(matches!(
            plan(None).judge_permalink("id1", "same", &bobs).0,
            ReadVerdict::Match {
                authorship: Authorship::NoHandle { .. },
                ..
            }
        ));
        assert!(matches!(
            p.judge_permalink("id1", "changed", &hers).0,
            ReadVerdict::Mismatch { .. }
        ));
    }

    #[test]
    fn by_the_sent_id_only_the_accounts_own_handle_makes_it_ours() {
        // No create answer vouches for the post: what the permalink judge takes as ours on the answer's word
        // (no author shown, no handle recorded) is a lead here.
        let p = plan(Some("alice"));
        let hers = [item(Some("id1"), "same", Some("alice"), None)];
        assert!(matches!(
            p.judge_sent_id("id1", "same", &hers).0,
            ReadVerdict::Match {
                authorship: Authorship::Ours { .. },
                ..
            }
        ));
        let unsigned = [item(Some("id1"), "same", None, None)];
        assert!(matches!(
            p.judge_sent_id("id1", "same", &unsigned).0,
            ReadVerdict::Lead { candidates } if candidates[0].why == LeadReason::AuthorNotShown
        ));
        assert!(matches!(
            plan(None).judge_sent_id("id1", "same", &hers).0,
            ReadVerdict::Lead { candidates } if candidates[0].why == LeadReason::NoHandle
        ));
        let bobs = [item(Some("id1"), "same", Some("bob"), None)];
        assert!(matches!(
            p.judge_sent_id("id1", "same", &bobs).0,
            ReadVerdict::Lead { candidates } if candidates[0].why == LeadReason::OtherAuthor
        ));
        assert!(matches!(
            p.judge_sent_id("id1", "changed", &hers).0,
            ReadVerdict::Mismatch { .. }
        ));
        assert!(matches!(
            p.judge_sent_id("id1", "same", &[]).0,
            ReadVerdict::NotFound
        ));
    }
}
