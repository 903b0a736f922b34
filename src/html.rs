//! HTML for both web surfaces, the review page (`review::pages`) and the fixture platform
//! (`fixture_platform::pages`): askama templates, checked at compile time, where every `{{ value }}` is
//! escaped by [`Html`] (wired in `askama.toml`). Escaping is therefore a property of the type a value has,
//! not of remembering a call: a `String` is always escaped; the only things written as they are go through
//! the two filters below, one taking a rendered template, the other a constant of the program.
use std::fmt;

use askama::Template;

/// The one HTML escaper, for element content and quoted attribute values. askama's own writes numeric
/// entities (`&#60;`); this one keeps the named ones the pages have always written (`&lt;`, `&quot;`,
/// `&#39;`), which the tests and the saved static reports compare byte for byte.
#[derive(Debug, Clone, Copy, Default)]
pub struct Html;

impl askama::filters::Escaper for Html {
    fn write_escaped_str<W: fmt::Write>(&self, mut dest: W, s: &str) -> fmt::Result {
        let mut done = 0;
        for (i, b) in s.bytes().enumerate() {
            let entity = match b {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                b'\'' => "&#39;",
                _ => continue,
            };
            dest.write_str(&s[done..i])?;
            dest.write_str(entity)?;
            done = i + 1;
        }
        dest.write_str(&s[done..])
    }
}

/// Markup that is part of the program (a stylesheet, a script tag): only a `&'static str` can be one, so no
/// value read at run time becomes markup through it. Written with `{{ x|constant }}`.
#[derive(Debug, Clone, Copy)]
pub struct Constant(pub &'static str);

/// The template filters the pages use (askama finds them as `filters::NAME` where the template is
/// derived, so the page modules `use crate::html::filters;`).
pub mod filters {
    use askama::filters::Safe;

    /// `{{ child|component }}`: a nested template, written as it rendered. It escaped its own values, and
    /// only a `Template` is accepted, never a string.
    pub fn component<T: askama::Template + ?Sized>(
        t: &T,
        _: &dyn askama::Values,
    ) -> askama::Result<Safe<String>> {
        Ok(Safe(t.render()?))
    }

    /// `{{ c|constant }}`: markup that is part of the program (see [`super::Constant`]).
    pub fn constant(
        c: &super::Constant,
        _: &dyn askama::Values,
    ) -> askama::Result<Safe<&'static str>> {
        Ok(Safe(c.0))
    }
}

/// Render a page. Rendering into a `String` fails only when a value's `Display` fails, and none on our pages
/// can (strings and integers): an error is a bug, logged, and answered with a plain line instead of a panic
/// in a request handler.
pub fn render(page: &impl Template) -> String {
    page.render().unwrap_or_else(|e| {
        tracing::error!(error = %e, "a page failed to render");
        "<!doctype html><title>Error</title><p>This page could not be rendered.</p>".to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Template)]
    #[template(source = "<p title=\"{{ v }}\">{{ v }}</p>", ext = "html")]
    struct Probe<'a> {
        v: &'a str,
    }

    #[derive(Template)]
    #[template(source = "{{ v }}", ext = "html")]
    struct Text<'a> {
        v: &'a str,
    }

    /// The two escapers' tests (review `esc`, fixture `escape`), now of the one escaper.
    #[test]
    fn escapes_everything_that_matters() {
        let esc = |v: &str| render(&Text { v });
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(
            esc(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn escapes_the_five_characters_with_named_entities() {
        assert_eq!(
            render(&Probe {
                v: r#"<script>alert('x')</script> & "q""#
            }),
            "<p title=\"&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;\">\
             &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;</p>"
        );
        assert_eq!(
            render(&Probe { v: "plain é" }),
            "<p title=\"plain é\">plain é</p>"
        );
    }

    /// The escape hatches stay where they are named: no template writes a value with `|safe` (or turns
    /// escaping off), and no Rust code outside this file makes askama's `Safe` by hand.
    #[test]
    fn nothing_bypasses_the_escaper() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        fn walk(dir: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, files);
                } else {
                    files.push(p);
                }
            }
        }
        for d in ["templates", "fixtures", "src"] {
            walk(&root.join(d), &mut files);
        }
        let mut checked = 0;
        for f in files {
            let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            match ext {
                "html" => {
                    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
                    for bad in ["|safe", "|escape(", "|e(", "{%autoescape", "{%filterescape"] {
                        assert!(!squeezed.contains(bad), "{} uses {bad}", f.display());
                    }
                    checked += 1;
                }
                "rs" if !f.ends_with("src/html.rs") => {
                    for bad in ["Safe(", "MaybeSafe", "HtmlSafe", "|safe"] {
                        assert!(!text.contains(bad), "{} uses {bad}", f.display());
                    }
                }
                _ => {}
            }
        }
        assert!(checked >= 20, "the templates were not found ({checked})");
    }
}
