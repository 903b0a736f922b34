//! The Fixturebook pages: templates embedded from the repo's `fixtures/` folder at compile time, and
//! the functions that render them. Every value that came from a user is HTML-escaped here, in one place.
use super::posts::Post;

/// Page shell (top bar, sidebar, footer) with `{{main}}` for the content.
const LAYOUT: &str = include_str!("../../fixtures/layout.html");
/// The agreed compose DOM (textarea, title, publish button, status).
const COMPOSE_FORM: &str = include_str!("../../fixtures/compose-form.html");
/// Stylesheet served at `/static/style.css`.
pub const STYLE_CSS: &str = include_str!("../../fixtures/style.css");
/// Compose behaviour served at `/static/compose.js`.
pub const COMPOSE_JS: &str = include_str!("../../fixtures/compose.js");
/// The hostile service worker served at `/hostile/sw.js`.
pub const HOSTILE_SW_JS: &str = include_str!("../../fixtures/hostile/sw.js");
/// The re-send lab page (`/__lab/resend`): one warm-up GET, then one fetch POST to the create route.
const LAB_RESEND: &str = include_str!("../../fixtures/lab/resend.html");

/// Script tag that loads the compose behaviour.
const COMPOSE_SCRIPT: &str = r#"<script src="/static/compose.js"></script>"#;

/// Hostile page templates `(name, template)`; what each does is catalogued in `super::hostile`.
/// `iframe-inner` is the framed page of the `iframe` variant.
const HOSTILE: &[(&str, &str)] = &[
    (
        "write-on-load",
        include_str!("../../fixtures/hostile/write-on-load.html"),
    ),
    (
        "write-on-focus",
        include_str!("../../fixtures/hostile/write-on-focus.html"),
    ),
    (
        "autosave",
        include_str!("../../fixtures/hostile/autosave.html"),
    ),
    ("beacon", include_str!("../../fixtures/hostile/beacon.html")),
    ("pixel", include_str!("../../fixtures/hostile/pixel.html")),
    (
        "websocket",
        include_str!("../../fixtures/hostile/websocket.html"),
    ),
    // The same page; it opens its WebSocket only on the click when served under this name.
    (
        "websocket-on-publish",
        include_str!("../../fixtures/hostile/websocket.html"),
    ),
    (
        "channels",
        include_str!("../../fixtures/hostile/channels.html"),
    ),
    (
        "form-submit-timer",
        include_str!("../../fixtures/hostile/form-submit-timer.html"),
    ),
    (
        "service-worker",
        include_str!("../../fixtures/hostile/service-worker.html"),
    ),
    ("iframe", include_str!("../../fixtures/hostile/iframe.html")),
    (
        "iframe-inner",
        include_str!("../../fixtures/hostile/iframe-inner.html"),
    ),
    (
        "moving-button",
        include_str!("../../fixtures/hostile/moving-button.html"),
    ),
    (
        "covered-button",
        include_str!("../../fixtures/hostile/covered-button.html"),
    ),
    (
        "duplicate-match",
        include_str!("../../fixtures/hostile/duplicate-match.html"),
    ),
    ("slow", include_str!("../../fixtures/hostile/slow.html")),
    (
        "secrets",
        include_str!("../../fixtures/hostile/secrets.html"),
    ),
];

/// Who is looking at a page: the account name and the CSRF token for their session.
#[derive(Debug, Clone)]
pub struct Viewer {
    /// Account name (`anonymous` without login).
    pub account: String,
    /// CSRF token the page embeds in `<meta name="csrf-token">`.
    pub csrf: String,
}

/// Escape text for HTML element content and double-quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Substitute `{{name}}` placeholders in ONE pass: substituted values are never scanned again, so a post
/// text containing `{{csrf}}` stays literal. Unknown placeholders are left as they are.
fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() * 2);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let name = &after[..end];
                match vars.iter().find(|(k, _)| *k == name) {
                    Some((_, v)) => out.push_str(v),
                    None => out.push_str(&rest[start..start + 2 + end + 2]),
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

fn initial(account: &str) -> String {
    account
        .chars()
        .next()
        .map(|c| c.to_string())
        .unwrap_or_else(|| "?".to_owned())
}

/// Wrap `main` (already-safe HTML) in the page shell.
fn layout(viewer: &Viewer, page: &str, title: &str, query: &str, main: &str) -> String {
    let account = escape(&viewer.account);
    let initial = escape(&initial(&viewer.account));
    fill(
        LAYOUT,
        &[
            ("csrf", &escape(&viewer.csrf)),
            ("title", &escape(title)),
            ("page", page),
            ("query", &escape(query)),
            ("account", &account),
            ("initial", &initial),
            ("main", main),
        ],
    )
}

fn compose_form(viewer: &Viewer) -> String {
    fill(
        COMPOSE_FORM,
        &[
            ("account", &escape(&viewer.account)),
            ("initial", &escape(&initial(&viewer.account))),
        ],
    )
}

/// `GET /compose`.
pub fn compose(viewer: &Viewer) -> String {
    let main = format!("{}\n{COMPOSE_SCRIPT}", compose_form(viewer));
    layout(viewer, "compose", "Compose", "", &main)
}

/// `GET /hostile/{name}`, or `None` for an unknown name.
pub fn hostile(viewer: &Viewer, name: &str) -> Option<String> {
    let (_, template) = HOSTILE.iter().find(|(n, _)| *n == name)?;
    let form = compose_form(viewer);
    let main = fill(
        template,
        &[("compose_form", &form), ("compose_script", COMPOSE_SCRIPT)],
    );
    Some(layout(
        viewer,
        &format!("hostile-{name}"),
        &format!("Compose ({name})"),
        "",
        &main,
    ))
}

/// `GET /__lab/resend`.
pub fn lab_resend(viewer: &Viewer) -> String {
    fill(LAB_RESEND, &[("csrf", &escape(&viewer.csrf))])
}

/// One `<article class="post">`; `match_kind` adds `data-match` on search results.
fn article(post: &Post, match_kind: Option<&str>) -> String {
    let id = escape(&post.id);
    let title = post
        .title
        .as_deref()
        .map(|t| format!("<h3 class=\"post-title\">{}</h3>", escape(t)))
        .unwrap_or_default();
    let data_match = match_kind
        .map(|m| format!(" data-match=\"{m}\""))
        .unwrap_or_default();
    format!(
        r#"<article class="post" data-post-id="{id}"{data_match}>
  <div class="post-head"><span class="avatar">{init}</span><div><span class="post-author">{author}</span><br><a class="permalink" href="/p/{id}"><time class="post-time" datetime="{at}">{shown}</time></a></div></div>
  {title}<p class="post-text">{text}</p>
  <div class="post-foot"><span>Like</span><span>Comment</span><span>Share</span></div>
</article>"#,
        init = escape(&initial(&post.account)),
        author = escape(&post.account),
        at = escape(&post.created_at),
        shown = escape(&human_time(&post.created_at)),
        text = escape(&post.text),
    )
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
    let main = article(post, None);
    layout(viewer, "permalink", "Post", "", &main)
}

/// `GET /` (posts already newest first).
pub fn feed(viewer: &Viewer, posts: &[Post]) -> String {
    let mut main =
        String::from("<h2 class=\"section-title\">Latest posts</h2>\n<div id=\"feed\">\n");
    if posts.is_empty() {
        main.push_str("<div class=\"card empty\">No posts yet. <a href=\"/compose\">Write the first one.</a></div>\n");
    }
    for p in posts {
        main.push_str(&article(p, None));
        main.push('\n');
    }
    main.push_str("</div>");
    layout(viewer, "feed", "Feed", "", &main)
}

/// `GET /search?q=` with `(post, exact)` results, newest first.
pub fn search(viewer: &Viewer, query: &str, results: &[(Post, bool)]) -> String {
    let mut main = format!(
        "<h2 class=\"section-title\">{} result{} for “{}”</h2>\n<div id=\"search-results\">\n",
        results.len(),
        if results.len() == 1 { "" } else { "s" },
        escape(query)
    );
    if query.is_empty() {
        main = String::from(
            "<h2 class=\"section-title\">Type something to search</h2>\n<div id=\"search-results\">\n",
        );
    }
    for (p, exact) in results {
        main.push_str(&article(
            p,
            Some(if *exact { "exact" } else { "substring" }),
        ));
        main.push('\n');
    }
    main.push_str("</div>");
    layout(viewer, "search", "Search", query, &main)
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
            HostileLink::Offsite => format!("https://evil.example/p/{}", escape(&post.id)),
        }
    }
}

/// `GET /hostile/search?link=js|offsite&q=`: the real results, author and text included, but without
/// `data-post-id` and with the permalink pointing at `link`.
pub fn hostile_search(
    viewer: &Viewer,
    query: &str,
    results: &[(Post, bool)],
    link: HostileLink,
) -> String {
    let mut main = format!(
        "<h2 class=\"section-title\">{} results for “{}”</h2>\n<div id=\"search-results\">\n",
        results.len(),
        escape(query)
    );
    for (p, _) in results {
        main.push_str(&format!(
            r#"<article class="post">
  <div class="post-head"><span class="avatar">{init}</span><div><span class="post-author">{author}</span><br><a class="permalink" href="{href}"><time class="post-time" datetime="{at}">{shown}</time></a></div></div>
  <p class="post-text">{text}</p>
</article>
"#,
            init = escape(&initial(&p.account)),
            author = escape(&p.account),
            href = link.href(p),
            at = escape(&p.created_at),
            shown = escape(&human_time(&p.created_at)),
            text = escape(&p.text),
        ));
    }
    main.push_str("</div>");
    layout(viewer, "search", "Search", query, &main)
}

/// The 404 page.
pub fn not_found(viewer: &Viewer, path: &str) -> String {
    let main = format!(
        "<section class=\"card notfound\" id=\"not-found\"><h1>Page not found</h1><p>Nothing lives at <code>{}</code>. It may have been removed, or it never existed.</p><p><a href=\"/\">Back to the feed</a></p></section>",
        escape(path)
    );
    layout(viewer, "not-found", "Not found", "", &main)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogued_variant_has_a_template() {
        for v in super::super::HOSTILE_VARIANTS {
            assert!(HOSTILE.iter().any(|(n, _)| *n == v.name), "{}", v.name);
        }
        assert_eq!(
            HOSTILE.len(),
            super::super::HOSTILE_VARIANTS.len() + 1,
            "iframe-inner"
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

    #[test]
    fn fill_is_single_pass() {
        let out = fill("a {{x}} b {{y}} {{unknown}}", &[("x", "{{y}}"), ("y", "Y")]);
        assert_eq!(out, "a {{y}} b Y {{unknown}}");
    }

    #[test]
    fn escape_covers_the_five_characters() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn every_hostile_page_keeps_the_compose_dom_or_frames_it() {
        let v = Viewer {
            account: "t".into(),
            csrf: "tok".into(),
        };
        for (name, _) in HOSTILE {
            let html = hostile(&v, name).unwrap();
            assert!(!html.contains("{{"), "{name} left a placeholder");
            if *name != "iframe" {
                assert!(html.contains(r#"id="post-text""#), "{name}");
                assert!(html.contains(r#"id="publish""#), "{name}");
            }
        }
    }
}
