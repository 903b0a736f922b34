//! Where the compose page shows a success signal after the press: its own document, the frames of its
//! origin (an app shell, a composer framed from the same site), and frames of another origin when that
//! origin is the platform's (`origins.allowed`: a comment widget served from `comments.example.com`), read
//! from inside as the read-back reads posts there (other_origin.rs). A composer in a frame shows its
//! "Published" and navigates to the permalink in that frame, not in the top page: before, a contract whose
//! signal was an element or the URL left every such post in doubt (no success signal, `indeterminate`).
//!
//! A frame of any other origin is someone else's content (an ad, an embed): what it shows and where it
//! navigates is never the platform's word that a post was made, and is not looked at.

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::{FrameTree, GetFrameTreeParams};
use serde::Deserialize;

use super::checks::{evaluate_json, evaluate_json_in};
use super::other_origin::{FrameInside, frames_inside};
use super::{BrowserError, Liveness};
use crate::template::value_from_url;

/// An element (the first of `p.css` that matches, in any of the page's documents of its origin) showing
/// `p.text` when given: its `p.attr` is the id. `p.hosts`: the iframes of another origin instead.
const ELEMENT_JS: &str = concat!(
    "(p) => {",
    shadow_js!(),
    frames_js!(),
    r#"
  const answer = hit => ({ hit, hosts: hosts.length, origin: location.origin });
  // With p.text: only an element that shows that text (whitespace collapsed) counts.
  const norm = t => (t || '').replace(/\s+/g, ' ').trim();
  const want = p.text == null ? null : norm(p.text);
  for (const s of p.css) {
    for (const d of docs) {
      for (const e of deepAll(d.doc, s)) {
        if (want !== null && !norm(e.innerText || e.textContent).includes(want)) continue;
        return answer({ id: p.attr ? e.getAttribute(p.attr) : null });
      }
    }
  }
  return answer(null);
}
"#
);

/// Whether the element (each document's first match of `p.css`), or its attribute or class, is there in
/// any of the page's documents of its origin. A bad selector is an answer of neither kind (null), so it
/// never reads as "gone". `p.hosts`: the iframes of another origin instead.
const SYNCED_JS: &str = concat!(
    "(p) => {",
    shadow_js!(),
    frames_js!(),
    r#"
  const answer = hit => ({ hit, hosts: hosts.length, origin: location.origin });
  try {
    for (const d of docs) {
      const e = deepOne(d.doc, p.css);
      if (e === null) continue;
      if (p.attr != null ? e.hasAttribute(p.attr) : p.class != null ? e.classList.contains(p.class) : true) {
        return answer(true);
      }
    }
  } catch (err) { return answer(null); }
  return answer(false);
}
"#
);

/// One document set's answer: the documents of one origin (the page's, or a frame's of another origin).
#[derive(Deserialize)]
struct Answer {
    hit: serde_json::Value,
    /// How many iframes of another origin those documents hold.
    #[serde(default)]
    hosts: usize,
    /// Whose documents they are (`location.origin`).
    #[serde(default)]
    origin: String,
}

/// The compose page's documents, looked at for the success signals through one wait: the worlds made in
/// frames of another origin are made once, and again only when the page's frames change (an iframe more or
/// less, or a frame that navigated and took its world with it).
pub(super) struct SignalLook<'a> {
    page: &'a Page,
    live: &'a Liveness,
    allowed: &'a [String],
    /// The worlds in the page's frames of another origin, and how many such iframes it held then.
    worlds: Option<(usize, Vec<FrameInside>)>,
}

impl<'a> SignalLook<'a> {
    pub(super) fn new(page: &'a Page, live: &'a Liveness, allowed: &'a [String]) -> Self {
        SignalLook {
            page,
            live,
            allowed,
            worlds: None,
        }
    }

    /// The success element: `Some(id)` (the id may be absent) when one shows in a document of the
    /// platform's origins.
    pub(super) async fn element(
        &mut self,
        css: &[String],
        id_attribute: Option<&str>,
        text: Option<&str>,
    ) -> Result<Option<Option<String>>, BrowserError> {
        let arg = serde_json::json!({ "css": css, "attr": id_attribute, "text": text });
        let hits = self
            .ask("look for the success element", ELEMENT_JS, arg)
            .await?;
        Ok(hits
            .into_iter()
            .find(|h| h.is_object())
            .map(|h| h.get("id").and_then(|i| i.as_str()).map(String::from)))
    }

    /// Whether the synced signal is there (`Some(true)`), gone from every document of the platform's origins
    /// (`Some(false)`), or unknown (a document answered neither: a bad selector, the page navigating).
    pub(super) async fn synced(
        &mut self,
        css: &str,
        attribute: Option<&str>,
        class: Option<&str>,
    ) -> Result<Option<bool>, BrowserError> {
        let arg = serde_json::json!({ "css": css, "attr": attribute, "class": class });
        let hits = self
            .ask("look for the synced signal", SYNCED_JS, arg)
            .await?;
        if hits.iter().any(|h| h.as_bool() == Some(true)) {
            return Ok(Some(true));
        }
        Ok((!hits.is_empty() && hits.iter().all(|h| h.as_bool() == Some(false))).then_some(false))
    }

    /// The first URL of a frame of the platform's origins (the top page's excluded: the caller reads it)
    /// that `re` matches, with its `id` group.
    pub(super) async fn frame_url(
        &self,
        re: &regex::Regex,
    ) -> Result<Option<(String, Option<String>)>, BrowserError> {
        let tree = self
            .live
            .call(
                "read the page's frames",
                self.page.execute(GetFrameTreeParams::default()),
            )
            .await?;
        let mut stack: Vec<&FrameTree> = tree
            .result
            .frame_tree
            .child_frames
            .iter()
            .flatten()
            .collect();
        while let Some(t) = stack.pop() {
            stack.extend(t.child_frames.iter().flatten());
            let url = format!(
                "{}{}",
                t.frame.url,
                t.frame.url_fragment.as_deref().unwrap_or("")
            );
            let origin = url::Url::parse(&url)
                .map(|u| u.origin().ascii_serialization())
                .unwrap_or_default();
            if !self.allowed.contains(&origin) {
                continue;
            }
            if let Some(c) = re.captures(&url) {
                let id = c.name("id").map(|m| value_from_url(m.as_str()));
                return Ok(Some((url, id)));
            }
        }
        Ok(None)
    }

    /// `js`'s `hit` in the page's documents (its own and its frames of the same origin, one answer) and in
    /// each frame of another origin, kept only where the documents are of the platform's origins.
    async fn ask(
        &mut self,
        what: &str,
        js: &str,
        arg: serde_json::Value,
    ) -> Result<Vec<serde_json::Value>, BrowserError> {
        let top = parse(evaluate_json(self.page, self.live, what, js, &arg).await?)?;
        let mut hits = Vec::new();
        let hosts = top.hosts;
        if self.allowed.contains(&top.origin) {
            hits.push(top.hit);
        }
        if hosts == 0 {
            self.worlds = None;
            return Ok(hits);
        }
        if self.worlds.as_ref().is_none_or(|(n, _)| *n != hosts) {
            let mut listing = arg.clone();
            listing["hosts"] = serde_json::Value::Bool(true);
            let frames = frames_inside(self.page, self.live, js, &listing).await?;
            self.worlds = Some((hosts, frames));
        }
        let mut stale = false;
        if let Some((_, frames)) = &self.worlds {
            for frame in frames {
                match evaluate_json_in(self.page, self.live, what, js, &arg, Some(frame.context))
                    .await
                    .and_then(parse)
                {
                    Ok(inside) if self.allowed.contains(&inside.origin) => hits.push(inside.hit),
                    Ok(_) => {}
                    // The frame navigated (its world went with its document): made again next time.
                    Err(_) => stale = true,
                }
            }
        }
        if stale {
            self.worlds = None;
        }
        Ok(hits)
    }
}

fn parse(v: serde_json::Value) -> Result<Answer, BrowserError> {
    serde_json::from_value(v).map_err(|e| BrowserError::Script(format!("success signal: {e}")))
}
