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

/// The hostile variants: `(name, template, writes-to)`; `writes-to` is the counter key their write hits.
pub const HOSTILE: &[(&str, &str, Option<&str>)] = &[
    (
        "write-on-load",
        include_str!("../../fixtures/hostile/write-on-load.html"),
        Some("POST /api/sink/write-on-load"),
    ),
    (
        "write-on-focus",
        include_str!("../../fixtures/hostile/write-on-focus.html"),
        Some("POST /api/sink/write-on-focus"),
    ),
    (
        "autosave",
        include_str!("../../fixtures/hostile/autosave.html"),
        Some("POST /api/drafts"),
    ),
    (
        "beacon",
        include_str!("../../fixtures/hostile/beacon.html"),
        Some("POST /api/sink/beacon"),
    ),
    (
        "form-submit-timer",
        include_str!("../../fixtures/hostile/form-submit-timer.html"),
        Some("POST /api/sink/form-submit-timer"),
    ),
    (
        "service-worker",
        include_str!("../../fixtures/hostile/service-worker.html"),
        Some("POST /api/sink/service-worker"),
    ),
    (
        "iframe",
        include_str!("../../fixtures/hostile/iframe.html"),
        Some("POST /api/sink/iframe"),
    ),
    (
        "iframe-inner",
        include_str!("../../fixtures/hostile/iframe-inner.html"),
        Some("POST /api/sink/iframe"),
    ),
    (
        "moving-button",
        include_str!("../../fixtures/hostile/moving-button.html"),
        None,
    ),
    (
        "covered-button",
        include_str!("../../fixtures/hostile/covered-button.html"),
        None,
    ),
    (
        "duplicate-match",
        include_str!("../../fixtures/hostile/duplicate-match.html"),
        None,
    ),
    (
        "slow",
        include_str!("../../fixtures/hostile/slow.html"),
        None,
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
    let (_, template, _) = HOSTILE.iter().find(|(n, _, _)| *n == name)?;
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
  <div class="post-head"><span class="avatar">{init}</span><div><span class="post-author">{author}</span><br><a class="permalink" href="/p/{id}"><time class="post-time" datetime="{at}">{at}</time></a></div></div>
  {title}<p class="post-text">{text}</p>
  <div class="post-foot"><span>Like</span><span>Comment</span><span>Share</span></div>
</article>"#,
        init = escape(&initial(&post.account)),
        author = escape(&post.account),
        at = escape(&post.created_at),
        text = escape(&post.text),
    )
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
        for (name, _, _) in HOSTILE {
            let html = hostile(&v, name).unwrap();
            assert!(!html.contains("{{"), "{name} left a placeholder");
            if *name != "iframe" {
                assert!(html.contains(r#"id="post-text""#), "{name}");
                assert!(html.contains(r#"id="publish""#), "{name}");
            }
        }
    }
}
