//! HTML rendering, server-side. Every value from the store or the evidence folder goes through [`esc`];
//! the page loads nothing external and runs no script (the CSP forbids both). One stylesheet, inline,
//! allowed by its hash.
use std::fmt::Write;

use axum::http::StatusCode;

use super::evidence::EvidenceItem;
use super::view::{Card, Detail, ListView, StateFilter, event_title};
use crate::store::{Intent, Status, Timestamp};

/// The one stylesheet (its sha256 goes into the Content-Security-Policy).
pub const STYLE: &str = "\
*{box-sizing:border-box}\
body{margin:0;font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1d2433;background:#f4f5f7}\
header{background:#1d2433;color:#fff;padding:12px 24px;display:flex;gap:16px;align-items:baseline;flex-wrap:wrap}\
header h1{font-size:18px;margin:0}header a{color:#fff}header .sub{color:#b8c0d0;font-size:13px}\
main{max-width:1100px;margin:0 auto;padding:16px 24px 48px}\
a{color:#1f5fbf}\
.card{background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:14px 16px;margin:12px 0}\
.card h2{font-size:16px;margin:0 0 6px}\
.meta{color:#5a6478;font-size:13px;display:flex;gap:12px;flex-wrap:wrap;margin-bottom:6px}\
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;text-transform:uppercase;letter-spacing:.03em}\
.st-parked{background:#fde9c8;color:#7a4a00}.st-indeterminate{background:#f9d6d5;color:#8a1c17}\
.st-published{background:#d3f0dc;color:#175c2c}.st-pending,.st-authorized,.st-failed{background:#e3e7ee;color:#333c4e}\
.text{white-space:pre-wrap;word-break:break-word;background:#f8f9fb;border-left:3px solid #c5ccd8;padding:8px 12px;margin:8px 0;font-size:15px}\
.why{font-size:14px;color:#333c4e}\
.shots{display:flex;gap:10px;flex-wrap:wrap;margin-top:8px}\
.shot{margin:0;font-size:12px;color:#5a6478}.shot img{display:block;border:1px solid #c5ccd8;border-radius:4px;max-width:360px;height:auto;background:#fff}\
.problem{color:#8a1c17;font-weight:600}\
form.filters{display:flex;gap:10px;flex-wrap:wrap;align-items:end;background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:10px 14px}\
label{display:flex;flex-direction:column;font-size:12px;color:#5a6478;gap:2px}\
input,select,textarea{font:inherit;padding:5px 7px;border:1px solid #b9c1cf;border-radius:5px;background:#fff}\
textarea{min-height:60px;width:100%}\
button{font:inherit;padding:6px 14px;border-radius:5px;border:1px solid #1f5fbf;background:#1f5fbf;color:#fff;cursor:pointer}\
button.secondary{background:#fff;color:#1f5fbf}\
table{border-collapse:collapse;width:100%;font-size:13px}td,th{padding:6px 8px;border-bottom:1px solid #e3e7ee;text-align:left;vertical-align:top}\
th{color:#5a6478;font-weight:600}td.when{white-space:nowrap;color:#5a6478}\
pre.json{white-space:pre-wrap;word-break:break-all;background:#f8f9fb;border:1px solid #e3e7ee;padding:8px;font-size:12px;max-height:420px;overflow:auto}\
details summary{cursor:pointer;color:#1f5fbf}\
.actions{display:grid;grid-template-columns:repeat(auto-fit,minmax(280px,1fr));gap:12px}\
.actions form{background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:12px;display:flex;flex-direction:column;gap:8px}\
.actions h3{margin:0;font-size:15px}.actions p{margin:0;font-size:13px;color:#5a6478}\
.flash{padding:10px 14px;border-radius:8px;margin:12px 0;font-weight:600}\
.flash.ok{background:#d3f0dc;color:#175c2c}.flash.err{background:#f9d6d5;color:#8a1c17}\
.empty{color:#5a6478;padding:24px;text-align:center}\
code{font-size:12px;background:#eef0f4;padding:1px 4px;border-radius:3px}";

/// Escape text for HTML element content and quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
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

/// How links are written: to the live server (with the session token, and forms carrying the CSRF token),
/// or to files of the static export (no actions).
#[derive(Debug, Clone, Copy)]
pub enum Mode<'a> {
    /// Served by `oncepost review`.
    Live {
        /// `/<session token>`.
        base: &'a str,
        /// The CSRF token put into every form.
        csrf: &'a str,
        /// The name prefilled in the forms (`--by`).
        by: &'a str,
    },
    /// Written by `oncepost review --export DIR`.
    Export,
}

impl Mode<'_> {
    fn home(&self) -> String {
        match self {
            Mode::Live { base, .. } => format!("{base}/"),
            Mode::Export => "index.html".into(),
        }
    }
    fn intent(&self, key: &str) -> String {
        match self {
            Mode::Live { base, .. } => format!("{base}/intent/{key}"),
            Mode::Export => format!("intent-{key}.html"),
        }
    }
    fn evidence(&self, key: &str, item: &EvidenceItem) -> String {
        match self {
            Mode::Live { base, .. } => format!("{base}/intent/{key}/evidence/{}", item.sha256),
            Mode::Export => format!("evidence/{}.{}", item.sha256, item.kind.export_ext()),
        }
    }
    fn thumb(&self, key: &str, item: &EvidenceItem) -> String {
        match self {
            Mode::Live { base, .. } => format!("{base}/intent/{key}/thumb/{}", item.sha256),
            Mode::Export => format!("thumbs/{}.png", item.sha256),
        }
    }
}

/// A finished page.
fn page(title: &str, header_extra: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"referrer\" content=\"same-origin\"><title>{}</title><style>{STYLE}</style></head>\
<body><header><h1>oncepost review</h1>{header_extra}</header><main>{body}</main></body></html>",
        esc(title)
    )
}

/// A short page for errors (404, 403, ...): the status and one line, nothing else.
pub fn message_page(status: StatusCode, message: &str) -> String {
    page(
        status.canonical_reason().unwrap_or("Error"),
        "",
        &format!(
            "<div class=\"flash err\" id=\"message\">{} {}</div>",
            status.as_u16(),
            esc(message)
        ),
    )
}

/// `2026-11-30 16:00 UTC`, from ms since the epoch (no time-zone data needed: UTC for everyone).
pub fn fmt_utc(ms: i64) -> String {
    let p = crate::utc::parts(ms);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        p.year, p.month, p.day, p.hour, p.minute, p.second
    )
}

/// `3 h ago`, `2 d ago`.
pub fn ago(now: Timestamp, ms: i64) -> String {
    let s = ((now.0 - ms) / 1000).max(0);
    match s {
        0..60 => "just now".into(),
        60..3600 => format!("{} min ago", s / 60),
        3600..86_400 => format!("{} h ago", s / 3600),
        _ => format!("{} d ago", s / 86_400),
    }
}

fn badge(state: Status) -> String {
    format!(
        "<span class=\"badge st-{0}\">{0}</span>",
        esc(state.label())
    )
}

/// "Post by alice", "Reply by bob": the headline of an intent.
fn headline(i: &Intent) -> String {
    let label = i.action.label();
    let mut chars = label.chars();
    let cap: String = chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default();
    format!("{} by {}", esc(&cap), esc(&i.account))
}

fn short(key: &str) -> &str {
    &key[..key.len().min(12)]
}

/// A permalink as a link only when it is http(s); anything else is shown as text.
fn permalink_html(p: &str) -> String {
    match url::Url::parse(p) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => {
            format!("<a href=\"{0}\" rel=\"noreferrer\">{0}</a>", esc(p))
        }
        _ => format!("<code>{}</code>", esc(p)),
    }
}

fn intent_meta(i: &Intent, now: Timestamp, attempts: usize) -> String {
    let mut m = format!(
        "<div class=\"meta\">{} <span>account <b>{}</b></span><span>platform <b>{}</b></span>\
<span title=\"{}\">created {}</span><span>{} attempt{}</span><span>key <code title=\"{}\">{}</code></span>",
        badge(i.state),
        esc(&i.account),
        esc(&i.platform),
        esc(&fmt_utc(i.created_at)),
        esc(&ago(now, i.created_at)),
        attempts,
        if attempts == 1 { "" } else { "s" },
        esc(i.key.as_str()),
        esc(short(i.key.as_str())),
    );
    if let Some(src) = &i.source_ref {
        let _ = write!(m, "<span>source <code>{}</code></span>", esc(src));
    }
    if let Some(of) = &i.redelivery_of {
        let _ = write!(
            m,
            "<span>redelivery of <code>{}</code></span>",
            esc(short(of.as_str()))
        );
    }
    m.push_str("</div>");
    m
}

fn text_block(i: &Intent) -> String {
    let mut out = String::new();
    for (k, v) in &i.request.fields {
        let _ = write!(
            out,
            "<div class=\"meta\">{}: <b>{}</b></div>",
            esc(k),
            esc(v)
        );
    }
    match &i.request.text {
        Some(t) => {
            let _ = write!(out, "<div class=\"text\">{}</div>", esc(t));
        }
        None => out.push_str("<div class=\"meta\">(no text)</div>"),
    }
    out
}

fn why_line(why: &Option<(String, String)>, state: Status) -> String {
    match why {
        Some((actor, reason)) => format!(
            "<div class=\"why\">{} by <b>{}</b>: {}</div>",
            match state {
                Status::Parked => "Parked",
                Status::Indeterminate => "Outcome unknown",
                _ => "Moved here",
            },
            esc(actor),
            esc(&crate::redact::text(reason))
        ),
        None => String::new(),
    }
}

fn thumb_html(mode: &Mode, key: &str, item: &EvidenceItem) -> String {
    format!(
        "<figure class=\"shot\"><a href=\"{}\"><img src=\"{}\" alt=\"{}\" loading=\"lazy\"></a>\
<figcaption>{} · {}</figcaption></figure>",
        esc(&mode.evidence(key, item)),
        esc(&mode.thumb(key, item)),
        esc(item.kind.title()),
        esc(item.kind.title()),
        esc(&item.capture_point)
    )
}

/// A thumbnail linking to the full screenshot, or the reason it cannot be shown.
fn shot_html(mode: &Mode, key: &str, s: &super::view::Shot) -> String {
    match &s.status {
        Ok(()) => thumb_html(mode, key, &s.item),
        Err(p) => format!(
            "<figure class=\"shot\"><span class=\"problem\">{}: {}</span><figcaption>{} · <code>{}</code></figcaption></figure>",
            esc(s.item.kind.title()),
            esc(&p.to_string()),
            esc(&s.item.capture_point),
            esc(short(&s.item.sha256))
        ),
    }
}

fn card_html(mode: &Mode, c: &Card, now: Timestamp) -> String {
    let key = c.intent.key.as_str();
    let mut out = format!(
        "<article class=\"card\" data-key=\"{}\"><h2><a href=\"{}\">{}</a></h2>{}{}{}",
        esc(key),
        esc(&mode.intent(key)),
        headline(&c.intent),
        intent_meta(&c.intent, now, c.attempts),
        why_line(&c.why, c.intent.state),
        text_block(&c.intent),
    );
    if let Some(p) = &c.problem {
        let _ = write!(out, "<p class=\"problem\">{}</p>", esc(p));
    }
    if !c.screenshots.is_empty() {
        out.push_str("<div class=\"shots\">");
        for s in &c.screenshots {
            out.push_str(&shot_html(mode, key, s));
        }
        out.push_str("</div>");
    }
    let _ = write!(
        out,
        "<p><a href=\"{}\">Review this send →</a></p></article>",
        esc(&mode.intent(key))
    );
    out
}

fn options(values: &[String], selected: &Option<String>, all: &str) -> String {
    let mut o = format!("<option value=\"\">{}</option>", esc(all));
    for v in values {
        let sel = if selected.as_deref() == Some(v) {
            " selected"
        } else {
            ""
        };
        let _ = write!(o, "<option value=\"{0}\"{sel}>{0}</option>", esc(v));
    }
    o
}

/// The list of parked and indeterminate intents.
pub fn list_page(mode: &Mode, v: &ListView, error: Option<&str>) -> String {
    let mut body = String::new();
    if let Some(e) = error {
        let _ = write!(
            body,
            "<div class=\"flash err\" id=\"message\">{}</div>",
            esc(e)
        );
    }
    if let Mode::Live { .. } = mode {
        let f = &v.filter;
        let st = |s: StateFilter, label: &str| {
            format!(
                "<option value=\"{}\"{}>{}</option>",
                s.label(),
                if f.state == s { " selected" } else { "" },
                label
            )
        };
        let _ = write!(
            body,
            "<form class=\"filters\" method=\"get\" action=\"{}\">\
<label>Account<select name=\"account\">{}</select></label>\
<label>Platform<select name=\"platform\">{}</select></label>\
<label>State<select name=\"state\">{}{}{}</select></label>\
<label>Older than<input name=\"min_age\" size=\"6\" placeholder=\"e.g. 2h\" value=\"{}\"></label>\
<label>Newer than<input name=\"max_age\" size=\"6\" placeholder=\"e.g. 7d\" value=\"{}\"></label>\
<button type=\"submit\">Filter</button></form>",
            esc(&mode.home()),
            options(&v.accounts, &f.account, "all accounts"),
            options(&v.platforms, &f.platform, "all platforms"),
            st(StateFilter::Both, "parked and indeterminate"),
            st(StateFilter::Parked, "parked"),
            st(StateFilter::Indeterminate, "indeterminate"),
            esc(f.min_age.as_ref().map(|a| a.0.as_str()).unwrap_or("")),
            esc(f.max_age.as_ref().map(|a| a.0.as_str()).unwrap_or("")),
        );
    }
    let _ = write!(
        body,
        "<p class=\"meta\" id=\"count\">Showing {} of {} sends waiting for a person (as of {}).{}</p>",
        v.cards.len(),
        v.unfiltered,
        esc(&fmt_utc(v.now.0)),
        if v.truncated {
            " More than the newest 500 per state exist: use `oncepost intents list` for the rest."
        } else {
            ""
        }
    );
    if v.cards.is_empty() {
        body.push_str("<div class=\"card empty\">Nothing waiting: no parked or indeterminate sends match.</div>");
    }
    for c in &v.cards {
        body.push_str(&card_html(mode, c, v.now));
    }
    page(
        "Parked sends · oncepost review",
        &format!(
            "<a href=\"{}\">Parked and indeterminate sends</a><span class=\"sub\">{}</span>",
            esc(&mode.home()),
            match mode {
                Mode::Live { .. } => "live: actions are recorded in the store with your name",
                Mode::Export => "static report: read only",
            }
        ),
        &body,
    )
}

/// A message shown at the top of an intent page.
#[derive(Debug, Clone)]
pub enum Flash {
    /// The action was recorded.
    Done(String),
    /// The action was refused; nothing changed.
    Error(String),
}

/// One intent in full, with actions when live.
pub fn intent_page(mode: &Mode, d: &Detail, flash: Option<&Flash>) -> String {
    let i = &d.timeline.intent;
    let key = i.key.as_str();
    let mut b = String::new();
    match flash {
        Some(Flash::Done(m)) => {
            let _ = write!(b, "<div class=\"flash ok\" id=\"message\">{}</div>", esc(m));
        }
        Some(Flash::Error(m)) => {
            let _ = write!(
                b,
                "<div class=\"flash err\" id=\"message\">{}</div>",
                esc(m)
            );
        }
        None => {}
    }
    let _ = write!(
        b,
        "<section class=\"card\" id=\"intent\" data-key=\"{}\"><h2>{}</h2>{}{}{}",
        esc(key),
        headline(i),
        intent_meta(i, d.now, d.timeline.attempts.len()),
        why_line(&d.why, i.state),
        text_block(i),
    );
    if let Some(p) = &i.permalink {
        let _ = write!(
            b,
            "<div class=\"meta\">permalink {}</div>",
            permalink_html(&crate::redact::text(p))
        );
    }
    if let Some(r) = &i.redelivery {
        let _ = write!(
            b,
            "<div class=\"meta\">redelivery authorization: <code>{}</code></div>",
            esc(&crate::redact::json(r).to_string())
        );
    }
    b.push_str("</section>");

    // Screenshots.
    b.push_str("<section class=\"card\" id=\"screenshots\"><h2>Screenshots</h2>");
    if d.shots.is_empty() {
        b.push_str("<p class=\"meta\">No screenshots were linked to this send.</p>");
    } else {
        b.push_str("<div class=\"shots\">");
        for s in &d.shots {
            b.push_str(&shot_html(mode, key, s));
        }
        b.push_str("</div><p class=\"meta\">Click a thumbnail for the full-size screenshot.</p>");
    }
    b.push_str("</section>");

    // Text evidence: read-back first (what the platform shows), then the write log, then the rest.
    let order = |k: super::evidence::EvidenceKind| {
        use super::evidence::EvidenceKind as K;
        match k {
            K::Readback => 0,
            K::WriteLog => 1,
            K::DomExcerpt => 2,
            _ => 3,
        }
    };
    let mut texts: Vec<_> = d.texts.iter().collect();
    texts.sort_by_key(|t| order(t.item.kind));
    b.push_str("<section class=\"card\" id=\"evidence\"><h2>Read-back and write log</h2>");
    if texts.is_empty() {
        b.push_str("<p class=\"meta\">No read-back result or write-request log was linked to this send.</p>");
    }
    for t in texts {
        let _ = write!(
            b,
            "<h3 class=\"ev-{}\">{} <span class=\"meta\">{} · {} · <a href=\"{}\">file</a></span></h3>",
            esc(&format!("{:?}", t.item.kind).to_lowercase()),
            esc(t.item.kind.title()),
            esc(&t.item.capture_point),
            esc(&fmt_utc(t.item.at)),
            esc(&mode.evidence(key, &t.item)),
        );
        match &t.content {
            Ok(text) => {
                let _ = write!(b, "<pre class=\"json\">{}</pre>", esc(text));
            }
            Err(p) => {
                let _ = write!(b, "<p class=\"problem\">{}</p>", esc(&p.to_string()));
            }
        }
    }
    for bad in &d.bad_links {
        let _ = write!(
            b,
            "<p class=\"problem\">An evidence link at {} does not follow the convention and is not shown: {}</p>",
            esc(&bad.capture_point),
            esc(&bad.problem)
        );
    }
    b.push_str("</section>");

    // Timeline: events and attempts in time order.
    b.push_str("<section class=\"card\" id=\"timeline\"><h2>Timeline</h2><table><thead><tr><th>When</th><th>What</th><th>Who</th><th>State</th><th>Details</th></tr></thead><tbody>");
    let mut rows: Vec<(i64, i64, String)> = Vec::new();
    for a in &d.timeline.attempts {
        rows.push((
            a.created_at,
            -1,
            format!(
                "<tr class=\"attempt\"><td class=\"when\">{}</td><td><b>Attempt {}</b> <code>{}</code></td><td>{}</td><td></td>\
<td>generation {} · epoch {} · credentials v{} · contract <code>{}</code></td></tr>",
                esc(&fmt_utc(a.created_at)),
                a.ordinal,
                esc(short(&a.token)),
                esc(&a.owner),
                a.generation,
                a.epoch,
                a.credential_version,
                esc(short(&a.contract_hash)),
            ),
        ));
    }
    for e in &d.timeline.events {
        let mut details = e.details.clone();
        crate::redact::json_in_place(&mut details);
        let details = if details.as_object().is_some_and(|m| m.is_empty()) || details.is_null() {
            String::new()
        } else {
            let pretty = serde_json::to_string_pretty(&details).unwrap_or_default();
            format!(
                "<details><summary>details</summary><pre class=\"json\">{}</pre></details>",
                esc(&pretty)
            )
        };
        let state = match e.from {
            Some(f) if f != e.to => format!("{} → {}", esc(f.label()), esc(e.to.label())),
            _ => esc(e.to.label()),
        };
        rows.push((
            e.at,
            e.id,
            format!(
                "<tr class=\"event ev-{}\"><td class=\"when\">{}</td><td><b>{}</b>{}</td><td>{}</td><td>{}</td><td>{}{}</td></tr>",
                esc(e.kind.label()),
                esc(&fmt_utc(e.at)),
                esc(event_title(e.kind)),
                e.reason
                    .as_ref()
                    .map(|r| format!("<br>{}", esc(&crate::redact::text(r))))
                    .unwrap_or_default(),
                esc(&e.actor),
                state,
                e.attempt
                    .as_ref()
                    .map(|a| format!("attempt <code>{}</code> ", esc(short(a))))
                    .unwrap_or_default(),
                details
            ),
        ));
    }
    rows.sort_by_key(|r| (r.0, r.1));
    for (_, _, row) in rows {
        b.push_str(&row);
    }
    b.push_str("</tbody></table></section>");

    if let Mode::Live { base, csrf, by } = mode {
        if matches!(i.state, Status::Parked | Status::Indeterminate) {
            b.push_str(&actions_html(base, csrf, by, i));
        } else {
            // Only parked and indeterminate sends wait for a person; the others belong to the machines, and
            // the page says which command moves them on (nothing publishes a pending send by itself).
            let next = i.next_step();
            let _ = write!(
                b,
                "<section id=\"actions\"><p class=\"meta\">This send is {}: nothing here waits for a \
person.</p><p id=\"next-step\">What happens next: {}</p>{}</section>",
                esc(i.state.label()),
                esc(&next.says),
                next.command
                    .map(|c| format!("<pre><code>{}</code></pre>", esc(&c)))
                    .unwrap_or_default()
            );
        }
    }
    page(
        &format!("{} · {} · oncepost review", i.state, i.account),
        &format!(
            "<a href=\"{}\">← All parked and indeterminate sends</a>",
            esc(&mode.home())
        ),
        &b,
    )
}

fn actions_html(base: &str, csrf: &str, by: &str, i: &Intent) -> String {
    let key = i.key.as_str();
    let hidden = format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        esc(csrf)
    );
    let who = format!(
        "<label>Your name<input name=\"by\" required value=\"{}\"></label>",
        esc(by)
    );
    let action = |name: &str| esc(&format!("{base}/intent/{key}/{name}"));
    let mut out = String::from(
        "<section id=\"actions\"><h2>What happened?</h2><p class=\"meta\">Each action is recorded in the \
store's history with your name; nothing is ever deleted.</p><div class=\"actions\">",
    );
    let found_help = match i.state {
        Status::Indeterminate => {
            "You found the post on the platform: the send is recorded as published (a lookup done by you)."
        }
        _ => "You found the post on the platform: the send is confirmed as published.",
    };
    let _ = write!(
        out,
        "<form id=\"found-form\" method=\"post\" action=\"{}\"><h3>Found it</h3><p>{}</p>{hidden}{who}\
<label>Permalink<input name=\"permalink\" required placeholder=\"https://…/p/123\"></label>\
<label>Platform id (optional)<input name=\"platform_id\"></label>\
<button type=\"submit\">It is published</button></form>",
        action("found"),
        found_help
    );
    let _ = write!(
        out,
        "<form id=\"redeliver-form\" method=\"post\" action=\"{}\"><h3>Authorize redelivery</h3>\
<p>You checked: it is NOT on the platform. A new send is created, pending, carrying your authorization; this one \
stays as it is. Nothing is sent until someone runs <code>oncepost publish --key</code> with the new send's key \
(shown on its page). One redelivery per send: if one exists, you get that one.</p>{hidden}{who}<label>Why<textarea name=\"reason\" required></textarea></label>\
<button type=\"submit\" class=\"secondary\">Authorize one more copy</button></form>",
        action("redeliver")
    );
    let (title, help, button) = match i.state {
        Status::Parked => (
            "Keep parked",
            "Leave it parked, with a note for whoever looks next.",
            "Keep parked",
        ),
        _ => (
            "Park it",
            "Take it off the machines: it becomes parked, with your note.",
            "Park with this note",
        ),
    };
    let _ = write!(
        out,
        "<form id=\"keep-form\" method=\"post\" action=\"{}\"><h3>{title}</h3><p>{help}</p>{hidden}{who}\
<label>Note<textarea name=\"note\" required></textarea></label>\
<button type=\"submit\" class=\"secondary\">{button}</button></form>",
        action("keep")
    );
    out.push_str("</div></section>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_everything_that_matters() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }

    #[test]
    fn utc_dates() {
        assert_eq!(fmt_utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(fmt_utc(1_796_054_406_000), "2026-11-30 16:00:06 UTC");
        assert_eq!(fmt_utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
    }

    #[test]
    fn only_http_permalinks_are_links() {
        assert!(permalink_html("https://x.test/p/1").starts_with("<a "));
        assert!(permalink_html("javascript:alert(1)").starts_with("<code>"));
        assert!(permalink_html("/p/1").starts_with("<code>"));
    }
}
