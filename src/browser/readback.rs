//! Reading a post back in a fresh page: by permalink (id) or by search (text), never from the page that
//! posted (its optimistic rendering proves nothing). Used by publish (verification and look-before-write)
//! and, later, by `oncepost reconcile`.
//!
//! A read-back page only reads: it is opened under the session's write guard like every page, navigated,
//! and one evaluation lists the post items (CSS) with their id and text (`textContent`, so line breaks and
//! long texts come back whole). Text is compared by the contract's rule after trim + NFC + LF.
use std::time::{Duration, Instant};

use base64::Engine;
use chromiumoxide::cdp::browser_protocol::network::SetBypassServiceWorkerParams;
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams,
};
use serde::{Deserialize, Serialize};

use super::checks::{BoxRect, evaluate_json};
use super::{BrowserError, BrowserSession};
use crate::identity::normalize_text;

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
        }
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
    /// Regex (group `id`) over an item's first link.
    pub id_from_link: Option<regex::Regex>,
    /// Text rule.
    pub compare: TextRule,
    /// How long after a create "not found" may still mean "not there yet".
    pub propagation_ms: u64,
    /// CSS selectors blacked out in the screenshot.
    pub masks: Vec<String>,
}

impl ReadbackPlan {
    /// The permalink of post `id`.
    pub fn permalink_of(&self, id: &str) -> String {
        let enc: String = url::form_urlencoded::byte_serialize(id.as_bytes()).collect();
        self.permalink.replace("{id}", &enc)
    }

    /// The search URL for `text`.
    pub fn search_for(&self, text: &str) -> String {
        let enc: String = url::form_urlencoded::byte_serialize(text.as_bytes()).collect();
        self.search.replace("{text}", &enc)
    }
}

/// One post item as a page shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShownItem {
    /// Its id, when the page carries one.
    pub id: Option<String>,
    /// Its text (`textContent` of the text element), if any.
    pub text: Option<String>,
    /// Its first link (absolute), if any.
    pub href: Option<String>,
}

/// What a read-back concluded.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum ReadVerdict {
    /// The post is there with the sent text.
    Match {
        /// Its id.
        id: Option<String>,
        /// Its permalink.
        permalink: Option<String>,
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
    /// Screenshot of the final read (masked), when one was taken.
    #[serde(skip)]
    pub png: Option<Vec<u8>>,
}

const ITEMS_JS: &str = r#"
(p) => {
  let found = [];
  for (const sel of p.item) { found = Array.from(document.querySelectorAll(sel)); if (found.length) break; }
  const masks = p.masks.flatMap(s => { try { return Array.from(document.querySelectorAll(s)); } catch (e) { return []; } })
    .map(e => { const r = e.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
  return { dpr: window.devicePixelRatio || 1, masks, items: found.map(el => {
    const t = el.querySelector(p.text);
    const a = el.querySelector('a[href]');
    return { id: p.id_attribute ? el.getAttribute(p.id_attribute) : null,
             text: t ? t.textContent : null, href: a ? a.href : null };
  }) };
}
"#;

#[derive(Deserialize)]
struct Listed {
    dpr: f64,
    masks: Vec<BoxRect>,
    items: Vec<ShownItem>,
}

/// Open `url` in a fresh page of `session`, list its post items, judge them, and (when `shoot` says so
/// for that verdict) take a masked screenshot before closing the page.
async fn read_once(
    session: &BrowserSession,
    plan: &ReadbackPlan,
    url: &str,
    navigation_timeout: Duration,
    judge: &dyn Fn(&[ShownItem]) -> ReadVerdict,
    shoot: &dyn Fn(&ReadVerdict) -> bool,
) -> Result<(Vec<ShownItem>, ReadVerdict, Option<Vec<u8>>), BrowserError> {
    let live = session.liveness();
    let page = live
        .call(
            "open a read-back page",
            session.browser().new_page("about:blank"),
        )
        .await?;
    let result = async {
        live.call(
            "bypass service workers",
            page.execute(SetBypassServiceWorkerParams::new(true)),
        )
        .await?;
        live.bounded(
            "navigate to the read-back page",
            navigation_timeout,
            page.goto(url),
        )
        .await?;
        let v = evaluate_json(
            &page,
            live,
            "list post items",
            ITEMS_JS,
            &serde_json::json!({
                "item": plan.item_css, "text": plan.text_css,
                "id_attribute": plan.id_attribute, "masks": plan.masks,
            }),
        )
        .await?;
        let mut listed: Listed = serde_json::from_value(v)
            .map_err(|e| BrowserError::Script(format!("read-back result: {e}")))?;
        if let Some(re) = &plan.id_from_link {
            for it in &mut listed.items {
                if it.id.is_none()
                    && let Some(h) = &it.href
                    && let Some(c) = re.captures(h)
                {
                    it.id = c.name("id").map(|m| m.as_str().to_string());
                }
            }
        }
        let verdict = judge(&listed.items);
        if !shoot(&verdict) {
            return Ok((listed.items, verdict, None));
        }
        let params = CaptureScreenshotParams::builder()
            .format(CaptureScreenshotFormat::Png)
            .build();
        let shot = live
            .call("screenshot the read-back", page.execute(params))
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
    let _ = live.call("close the read-back page", page.close()).await;
    result
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
        |items| {
            let item = items
                .iter()
                .find(|i| i.id.as_deref() == Some(id))
                .or_else(|| items.first().filter(|i| i.id.is_none()));
            match item {
                None => ReadVerdict::NotFound,
                Some(i) => {
                    let shown = i.text.clone().unwrap_or_default();
                    if plan.compare.matches(sent, &shown) {
                        ReadVerdict::Match {
                            id: Some(id.to_string()),
                            permalink: Some(url.clone()),
                        }
                    } else {
                        ReadVerdict::Mismatch {
                            id: Some(id.to_string()),
                            shown,
                        }
                    }
                }
            }
        },
    )
    .await
}

/// Look for `sent` through the search page (exact under the contract's rule). `wait_for_propagation`:
/// re-read "not found" until `propagation_ms` passed (after a create); false for look-before-write.
pub async fn by_search(
    session: &BrowserSession,
    plan: &ReadbackPlan,
    sent: &str,
    wait_for_propagation: bool,
    navigation_timeout: Duration,
) -> Result<Readback, BrowserError> {
    let url = plan.search_for(sent);
    let mut p = plan.clone();
    if !wait_for_propagation {
        p.propagation_ms = 0;
    }
    read_until(
        session,
        &p,
        "search",
        &url,
        navigation_timeout,
        |items| match items.iter().find(|i| {
            i.text
                .as_deref()
                .is_some_and(|t| plan.compare.matches(sent, t))
        }) {
            Some(i) => ReadVerdict::Match {
                id: i.id.clone(),
                permalink: i
                    .id
                    .as_deref()
                    .map(|id| plan.permalink_of(id))
                    .or_else(|| i.href.clone()),
            },
            None => ReadVerdict::NotFound,
        },
    )
    .await
}

async fn read_until(
    session: &BrowserSession,
    plan: &ReadbackPlan,
    by: &str,
    url: &str,
    navigation_timeout: Duration,
    judge: impl Fn(&[ShownItem]) -> ReadVerdict,
) -> Result<Readback, BrowserError> {
    let until = Instant::now() + Duration::from_millis(plan.propagation_ms);
    let mut reads = 0;
    loop {
        reads += 1;
        // The screenshot is evidence of a final answer: skip it for reads that will be repeated, and for
        // a look-before-write that found nothing (propagation 0).
        let last = Instant::now() >= until;
        let keep_not_found = plan.propagation_ms > 0;
        let shoot =
            |v: &ReadVerdict| !matches!(v, ReadVerdict::NotFound) || (last && keep_not_found);
        let (items, verdict, png) =
            read_once(session, plan, url, navigation_timeout, &judge, &shoot).await?;
        if !matches!(verdict, ReadVerdict::NotFound) || Instant::now() >= until {
            let items = items
                .into_iter()
                .map(|mut i| {
                    i.text = i.text.map(|t| t.chars().take(500).collect());
                    i
                })
                .collect();
            return Ok(Readback {
                by: by.into(),
                url: url.into(),
                verdict,
                items,
                reads,
                png,
            });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
