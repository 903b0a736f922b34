//! The Fixturebook pages: askama templates from the repo's `fixtures/` folder, compiled in, and the
//! functions that render them. Every value that came from a user is HTML-escaped by the template engine
//! (`crate::html`, the same escaper as the review page); only rendered templates and the program's own
//! constants are written as they are.
use askama::Template;

use super::posts::Post;
use crate::html::{self, Constant, filters};

/// Stylesheet served at `/static/style.css`.
pub const STYLE_CSS: &str = include_str!("../../fixtures/style.css");
/// Compose behaviour served at `/static/compose.js`.
pub const COMPOSE_JS: &str = include_str!("../../fixtures/compose.js");
/// The hostile service worker served at `/hostile/sw.js`.
pub const HOSTILE_SW_JS: &str = include_str!("../../fixtures/hostile/sw.js");
/// The outbox service worker of `/hostile/sw-outbox`, served at `/hostile/sw-outbox.js`.
pub const HOSTILE_SW_OUTBOX_JS: &str = include_str!("../../fixtures/hostile/sw-outbox.js");

/// Script tag that loads the compose behaviour.
const COMPOSE_SCRIPT: Constant = Constant(r#"<script src="/static/compose.js"></script>"#);

/// The hostile pages served at `/hostile/{name}`; what each does is catalogued in `super::hostile`.
/// `iframe-inner`, `covered-iframe-inner` and `cross-origin-inner` are the framed pages of the `iframe`,
/// `covered-iframe` and `cross-origin` variants; `outbox-relay` is the window `outbox` opens. Each name has its arm in [`HostileMain`].
const HOSTILE: &[&str] = &[
    "write-on-load",
    "write-on-focus",
    "autosave",
    "beacon",
    "pixel",
    "resend-get",
    "websocket",
    "websocket-on-publish",
    "channels",
    "live-updates",
    "form-submit-timer",
    "service-worker",
    "iframe",
    "iframe-inner",
    "covered-iframe",
    "covered-iframe-inner",
    "below-fold",
    "moving-button",
    "covered-button",
    "duplicate-match",
    "slow",
    "secrets",
    "draft-sync",
    "title-put",
    "prefilled",
    "renamed-controls",
    "two-step",
    "one-endpoint",
    "outbox",
    "outbox-relay",
    "shadow",
    "declarative-shadow",
    "cross-origin",
    "cross-origin-inner",
    "key-events",
    "multipart-form",
    "enter-to-send",
    "wizard",
    "sw-outbox",
    "other-origin",
];

/// The content of a hostile page, by name (`fixtures/hostile/NAME.html`).
#[derive(Template)]
#[template(
    ext = "html",
    source = r#"
{%- match name -%}
{%- when "write-on-load" %}{% include "hostile/write-on-load.html" %}
{%- when "write-on-focus" %}{% include "hostile/write-on-focus.html" %}
{%- when "autosave" %}{% include "hostile/autosave.html" %}
{%- when "beacon" %}{% include "hostile/beacon.html" %}
{%- when "pixel" %}{% include "hostile/pixel.html" %}
{%- when "resend-get" %}{% include "hostile/resend-get.html" %}
{#- The same page; it opens its WebSocket only on the click when served under the second name. #}
{%- when "websocket" | "websocket-on-publish" %}{% include "hostile/websocket.html" %}
{%- when "channels" %}{% include "hostile/channels.html" %}
{%- when "live-updates" %}{% include "hostile/live-updates.html" %}
{%- when "form-submit-timer" %}{% include "hostile/form-submit-timer.html" %}
{%- when "service-worker" %}{% include "hostile/service-worker.html" %}
{%- when "iframe" %}{% include "hostile/iframe.html" %}
{%- when "iframe-inner" %}{% include "hostile/iframe-inner.html" %}
{%- when "covered-iframe" %}{% include "hostile/covered-iframe.html" %}
{%- when "covered-iframe-inner" %}{% include "hostile/covered-iframe-inner.html" %}
{%- when "below-fold" %}{% include "hostile/below-fold.html" %}
{%- when "moving-button" %}{% include "hostile/moving-button.html" %}
{%- when "covered-button" %}{% include "hostile/covered-button.html" %}
{%- when "duplicate-match" %}{% include "hostile/duplicate-match.html" %}
{%- when "slow" %}{% include "hostile/slow.html" %}
{%- when "secrets" %}{% include "hostile/secrets.html" %}
{%- when "draft-sync" %}{% include "hostile/draft-sync.html" %}
{%- when "title-put" %}{% include "hostile/title-put.html" %}
{%- when "prefilled" %}{% include "hostile/prefilled.html" %}
{%- when "renamed-controls" %}{% include "hostile/renamed-controls.html" %}
{%- when "two-step" %}{% include "hostile/two-step.html" %}
{%- when "one-endpoint" %}{% include "hostile/one-endpoint.html" %}
{%- when "outbox" %}{% include "hostile/outbox.html" %}
{%- when "outbox-relay" %}{% include "hostile/outbox-relay.html" %}
{%- when "shadow" %}{% include "hostile/shadow.html" %}
{%- when "declarative-shadow" %}{% include "hostile/declarative-shadow.html" %}
{%- when "cross-origin" %}{% include "hostile/cross-origin.html" %}
{%- when "cross-origin-inner" %}{% include "hostile/cross-origin-inner.html" %}
{%- when "key-events" %}{% include "hostile/key-events.html" %}
{%- when "multipart-form" %}{% include "hostile/multipart-form.html" %}
{%- when "enter-to-send" %}{% include "hostile/enter-to-send.html" %}
{%- when "wizard" %}{% include "hostile/wizard.html" %}
{%- when "sw-outbox" %}{% include "hostile/sw-outbox.html" %}
{%- when "other-origin" %}{% include "hostile/other-origin.html" %}
{%- when _ %}
{%- endmatch -%}
"#
)]
struct HostileMain<'a> {
    name: &'a str,
    compose_form: ComposeForm<'a>,
    compose_script: Constant,
    /// The viewer's CSRF token, for a page that renders it into its form (`multipart-form`).
    csrf: &'a str,
}

/// Who is looking at a page: the account name and the CSRF token for their session.
#[derive(Debug, Clone)]
pub struct Viewer {
    /// Account name (`anonymous` without login).
    pub account: String,
    /// CSRF token the page embeds in `<meta name="csrf-token">`.
    pub csrf: String,
    /// Posts are shown rendered from markdown (`--render markdown`): what a reader sees, not the source.
    pub markdown: bool,
}

/// A post's text as a markdown renderer shows it, as plain text (what the page's `textContent` holds):
/// `[label](url)` shows `label`, emphasis and code marks and heading hashes are not shown.
fn rendered_markdown(text: &str) -> String {
    static LINK: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\[([^\]]*)\]\([^)]*\)").expect("static regex")
    });
    static MARKS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?m)\*\*|__|\*|`|^#+[ \t]*").expect("static regex")
    });
    MARKS
        .replace_all(&LINK.replace_all(text, "$1"), "")
        .into_owned()
}

fn initial(account: &str) -> String {
    account
        .chars()
        .next()
        .map(|c| c.to_string())
        .unwrap_or_else(|| "?".to_owned())
}

/// Page shell (top bar, sidebar, footer) around `main`.
#[derive(Template)]
#[template(path = "layout.html")]
struct Layout<'a, M: Template> {
    csrf: &'a str,
    title: &'a str,
    page: &'a str,
    query: &'a str,
    account: &'a str,
    initial: String,
    main: M,
}

fn layout<M: Template>(viewer: &Viewer, page: &str, title: &str, query: &str, main: M) -> String {
    html::render(&Layout {
        csrf: &viewer.csrf,
        title,
        page,
        query,
        account: &viewer.account,
        initial: initial(&viewer.account),
        main,
    })
}

/// The agreed compose DOM (textarea, title, publish button, status).
#[derive(Template)]
#[template(path = "compose-form.html")]
struct ComposeForm<'a> {
    account: &'a str,
    initial: String,
}

impl<'a> ComposeForm<'a> {
    fn of(viewer: &'a Viewer) -> Self {
        ComposeForm {
            account: &viewer.account,
            initial: initial(&viewer.account),
        }
    }
}

#[derive(Template)]
#[template(
    ext = "html",
    source = "{{ compose_form|component }}\n{{ compose_script|constant }}"
)]
struct ComposeMain<'a> {
    compose_form: ComposeForm<'a>,
    compose_script: Constant,
}

/// `GET /compose`.
pub fn compose(viewer: &Viewer) -> String {
    let main = ComposeMain {
        compose_form: ComposeForm::of(viewer),
        compose_script: COMPOSE_SCRIPT,
    };
    layout(viewer, "compose", "Compose", "", main)
}

/// `GET /hostile/{name}`, or `None` for an unknown name.
pub fn hostile(viewer: &Viewer, name: &str) -> Option<String> {
    let name = *HOSTILE.iter().find(|n| **n == name)?;
    let main = HostileMain {
        name,
        compose_form: ComposeForm::of(viewer),
        compose_script: COMPOSE_SCRIPT,
        csrf: &viewer.csrf,
    };
    Some(layout(
        viewer,
        &format!("hostile-{name}"),
        &format!("Compose ({name})"),
        "",
        main,
    ))
}

/// The re-send lab page (`/__lab/resend`): one warm-up GET, then one fetch POST to the create route.
#[derive(Template)]
#[template(path = "lab/resend.html")]
struct LabResend<'a> {
    csrf: &'a str,
}

/// `GET /__lab/resend`.
pub fn lab_resend(viewer: &Viewer) -> String {
    html::render(&LabResend { csrf: &viewer.csrf })
}

/// A post as the pages show it.
struct PostView<'a> {
    id: &'a str,
    initial: String,
    author: &'a str,
    at: &'a str,
    shown: String,
    title: Option<&'a str>,
    text: std::borrow::Cow<'a, str>,
}

impl<'a> PostView<'a> {
    fn of(post: &'a Post, viewer: &Viewer) -> Self {
        PostView {
            id: &post.id,
            initial: initial(&post.account),
            author: &post.account,
            at: &post.created_at,
            shown: human_time(&post.created_at),
            title: post.title.as_deref(),
            text: if viewer.markdown {
                rendered_markdown(&post.text).into()
            } else {
                post.text.as_str().into()
            },
        }
    }
}

/// One `<article class="post">`; `match_kind` adds `data-match` on search results.
#[derive(Template)]
#[template(path = "post.html")]
struct Article<'a> {
    post: PostView<'a>,
    match_kind: Option<&'static str>,
}

/// `2026-11-30T15:20:11.123Z` -> `30 Nov 2026 · 15:20 UTC` (the raw value stays in `datetime=`).
fn human_time(rfc3339: &str) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let parts = (
        rfc3339.get(0..4),
        rfc3339.get(5..7).and_then(|m| m.parse::<usize>().ok()),
        rfc3339.get(8..10),
        rfc3339.get(11..16),
    );
    match parts {
        (Some(y), Some(m @ 1..=12), Some(d), Some(hm)) => {
            format!(
                "{} {} {y} · {hm} UTC",
                d.trim_start_matches('0'),
                MONTHS[m - 1]
            )
        }
        _ => rfc3339.to_owned(),
    }
}

/// `GET /p/{id}`.
pub fn permalink(viewer: &Viewer, post: &Post) -> String {
    let main = Article {
        post: PostView::of(post, viewer),
        match_kind: None,
    };
    layout(viewer, "permalink", "Post", "", main)
}

#[derive(Template)]
#[template(path = "feed.html")]
struct Feed<'a> {
    posts: Vec<Article<'a>>,
}

/// `GET /` (posts already newest first).
pub fn feed(viewer: &Viewer, posts: &[Post]) -> String {
    let posts = posts
        .iter()
        .map(|p| Article {
            post: PostView::of(p, viewer),
            match_kind: None,
        })
        .collect();
    layout(viewer, "feed", "Feed", "", Feed { posts })
}

#[derive(Template)]
#[template(path = "search.html")]
struct Search<'a> {
    query: &'a str,
    results: Vec<Article<'a>>,
}

/// `GET /search?q=` with `(post, exact)` results, newest first.
pub fn search(viewer: &Viewer, query: &str, results: &[(Post, bool)]) -> String {
    let results = results
        .iter()
        .map(|(p, exact)| Article {
            post: PostView::of(p, viewer),
            match_kind: Some(if *exact { "exact" } else { "substring" }),
        })
        .collect();
    layout(viewer, "search", "Search", query, Search { query, results })
}

/// Where `/hostile/search` links each result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostileLink {
    /// `javascript:alert(document.domain)`.
    Javascript,
    /// The same path on another site, `https://evil.example/p/ID`.
    Offsite,
}

impl HostileLink {
    /// `?link=js` or `?link=offsite`.
    pub fn from_param(p: &str) -> Option<HostileLink> {
        match p {
            "js" => Some(HostileLink::Javascript),
            "offsite" => Some(HostileLink::Offsite),
            _ => None,
        }
    }

    fn href(self, post: &Post) -> String {
        match self {
            HostileLink::Javascript => "javascript:alert(document.domain)".into(),
            HostileLink::Offsite => format!("https://evil.example/p/{}", post.id),
        }
    }
}

#[derive(Template)]
#[template(path = "hostile-search.html")]
struct HostileSearch<'a> {
    query: &'a str,
    results: Vec<(PostView<'a>, String)>,
}

/// `GET /hostile/search?link=js|offsite&q=`: the real results, author and text included, but without
/// `data-post-id` and with the permalink pointing at `link`.
pub fn hostile_search(
    viewer: &Viewer,
    query: &str,
    results: &[(Post, bool)],
    link: HostileLink,
) -> String {
    let results = results
        .iter()
        .map(|(p, _)| (PostView::of(p, viewer), link.href(p)))
        .collect();
    let main = HostileSearch { query, results };
    layout(viewer, "search", "Search", query, main)
}

#[derive(Template)]
#[template(path = "not-found.html")]
struct NotFound<'a> {
    path: &'a str,
}

/// The 404 page.
pub fn not_found(viewer: &Viewer, path: &str) -> String {
    layout(viewer, "not-found", "Not found", "", NotFound { path })
}

/// A source article (`/articles/{id}`): what a person reads there.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct SourceArticle {
    /// Its headline.
    pub title: String,
    /// Its paragraphs.
    pub paragraphs: Vec<String>,
    /// When it was last set (shown as "updated N seconds ago", which changes on every fetch).
    #[serde(skip, default = "std::time::SystemTime::now")]
    pub edited_at: std::time::SystemTime,
}

/// An article page as real news sites serve it: the same article, but chrome that differs on every fetch
/// (a nonce in a script, a CSRF token in a hidden input and a meta tag, a render timestamp, "updated N
/// seconds ago", a random trending sidebar and notification count outside the article).
#[derive(Template)]
#[template(path = "article.html")]
struct ArticlePage<'a> {
    article: &'a SourceArticle,
    nonce: String,
    rendered_at: String,
    ago: u64,
    trending: Vec<String>,
    notifications: u32,
}

/// The article page, with fresh chrome.
pub fn article(viewer: &Viewer, a: &SourceArticle) -> String {
    let nonce = crate::secret::random_hex::<16>().unwrap_or_default();
    let n = u32::from_str_radix(nonce.get(..4).unwrap_or("0"), 16).unwrap_or(0);
    let now = std::time::SystemTime::now();
    let ms = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let page = ArticlePage {
        article: a,
        rendered_at: crate::utc::rfc3339(ms),
        ago: now.duration_since(a.edited_at).map_or(0, |d| d.as_secs()),
        trending: (0..3)
            .map(|i| format!("Trending story #{}", (n as usize + i * 7) % 97))
            .collect(),
        notifications: n % 50,
        nonce,
    };
    layout(viewer, "article", &a.title, "", page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogued_variant_has_a_template() {
        for v in super::super::HOSTILE_VARIANTS {
            assert!(HOSTILE.contains(&v.name), "{}", v.name);
        }
        assert_eq!(
            HOSTILE.len(),
            super::super::HOSTILE_VARIANTS.len() + 4,
            "iframe-inner, covered-iframe-inner, cross-origin-inner and outbox-relay"
        );
    }

    #[test]
    fn human_time_is_readable_and_falls_back_to_the_raw_value() {
        assert_eq!(
            human_time("2026-11-30T15:20:11.123Z"),
            "30 Nov 2026 · 15:20 UTC"
        );
        assert_eq!(human_time("garbage"), "garbage");
    }

    fn post(text: &str, title: Option<&str>, account: &str) -> Post {
        Post {
            id: "abc123".into(),
            text: text.into(),
            title: title.map(Into::into),
            account: account.into(),
            created_at: "2026-11-30T15:20:11.123Z".into(),
            seq: 1,
            created_ms: 0,
            category: None,
            visibility: None,
        }
    }

    /// (Was `fill_is_single_pass`.) A value is never scanned for template syntax: a post text holding
    /// `{{csrf}}` or `{{ main }}` is shown literally and does not pull in the token or a page.
    #[test]
    fn template_syntax_in_a_value_stays_literal() {
        let v = Viewer {
            account: "{{csrf}}".into(),
            csrf: "TOKEN".into(),
            markdown: false,
        };
        let p = post(
            "a {{csrf}} b {{ main }} {% if true %}x{% endif %}",
            None,
            "t",
        );
        let html = permalink(&v, &p);
        assert!(html.contains(
            r#"<p class="post-text">a {{csrf}} b {{ main }} {% if true %}x{% endif %}</p>"#
        ));
        assert!(html.contains(r#"<span class="avatar">{</span>{{csrf}}</span>"#));
        assert_eq!(
            html.matches("TOKEN").count(),
            1,
            "only the meta tag carries it"
        );
    }

    /// Text, title, author and query, each with `<`, `&`, `"` and `'`, are escaped on every page that shows
    /// a post (permalink, feed, search, hostile search), in content and in attributes.
    #[test]
    fn user_values_are_escaped_on_every_post_page() {
        let evil = r#"<script>alert("x")</script> & 'q'"#;
        let escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;";
        let v = Viewer {
            account: evil.into(),
            csrf: "tok\"><x>".into(),
            markdown: false,
        };
        let p = post(evil, Some(evil), evil);
        let results = [(p.clone(), true)];
        let pages = [
            ("permalink", permalink(&v, &p)),
            ("feed", feed(&v, std::slice::from_ref(&p))),
            ("search", search(&v, evil, &results)),
            (
                "hostile search",
                hostile_search(&v, evil, &results, HostileLink::Offsite),
            ),
        ];
        for (name, html) in pages {
            assert!(!html.contains("<script>"), "{name} renders raw markup");
            assert!(!html.contains("'q'"), "{name}: an apostrophe is left raw");
            assert!(
                !html.contains(r#"tok"><x>"#),
                "{name}: the token breaks out"
            );
            assert!(
                html.contains(r#"content="tok&quot;&gt;&lt;x&gt;""#),
                "{name}"
            );
            assert!(
                html.contains(&format!(r#"<p class="post-text">{escaped}</p>"#)),
                "{name}: the text"
            );
            assert!(
                html.contains(&format!(r#"<span class="post-author">{escaped}</span>"#)),
                "{name}: the author"
            );
            assert!(
                html.contains(&format!(r#"<div class="profile-name">{escaped}</div>"#)),
                "{name}: the viewer"
            );
            if name != "hostile search" {
                assert!(
                    html.contains(&format!(r#"<h3 class="post-title">{escaped}</h3>"#)),
                    "{name}: the title"
                );
            }
            if name.contains("search") {
                assert!(
                    html.contains(&format!(r#"value="{escaped}""#)),
                    "{name}: query"
                );
                assert!(html.contains(&format!("for “{escaped}”")), "{name}: query");
            }
        }
        assert!(not_found(&v, evil).contains(&format!("<code>{escaped}</code>")));
    }

    #[test]
    fn every_hostile_page_keeps_the_compose_dom_or_frames_it() {
        let v = Viewer {
            account: "t".into(),
            csrf: "tok".into(),
            markdown: false,
        };
        for name in HOSTILE {
            let html = hostile(&v, name).unwrap();
            assert!(!html.contains("{{"), "{name} left a placeholder");
            if *name == "outbox-relay" {
                // Not a compose page: the window `outbox` opens.
                assert!(html.contains(r#"id="outbox-state""#), "{name}");
            } else if !["iframe", "covered-iframe", "cross-origin", "other-origin"].contains(name) {
                assert!(html.contains(r#"id="post-text""#), "{name}");
                assert!(html.contains(r#"id="publish""#), "{name}");
            } else {
                assert!(html.contains(r#"id="compose-frame""#), "{name}");
            }
        }
        assert!(hostile(&v, "not-a-variant").is_none());
    }
}
