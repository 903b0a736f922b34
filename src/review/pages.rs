//! HTML rendering, server-side: askama templates in `templates/review/`, one small component per part of
//! a page (summary, screenshots, evidence, timeline, actions, ...). Every value from the store or the
//! evidence folder is escaped by the template engine (`crate::html`); the page loads nothing external and
//! runs no script (the CSP forbids both). One stylesheet, inline, allowed by its hash.
use askama::Template;
use axum::http::StatusCode;

use super::evidence::{EvidenceItem, EvidenceKind};
use super::view::{self, Card, Detail, ListView, StateFilter, event_title};
use crate::html::{self, Constant, filters};
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
pre.diff{font-size:13px;white-space:pre-wrap;margin:6px 0}pre.diff .del{background:#fde8e8}pre.diff .add{background:#e6f6e6}\
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

/// The shell's header line, after the title.
enum Header {
    /// Nothing (error pages).
    Plain,
    /// The list page: a link home and what kind of page this is.
    List { home: String, sub: &'static str },
    /// An intent page: the way back to the list.
    Intent { home: String },
}

/// A finished page.
#[derive(Template)]
#[template(path = "review/page.html")]
struct Page<'a, B: Template> {
    title: &'a str,
    style: Constant,
    header: Header,
    body: B,
}

fn page(title: &str, header: Header, body: impl Template) -> String {
    html::render(&Page {
        title,
        style: Constant(STYLE),
        header,
        body,
    })
}

#[derive(Template)]
#[template(path = "review/message.html")]
struct Message<'a> {
    status: u16,
    message: &'a str,
}

/// A short page for errors (404, 403, ...): the status and one line, nothing else.
pub fn message_page(status: StatusCode, message: &str) -> String {
    page(
        status.canonical_reason().unwrap_or("Error"),
        Header::Plain,
        Message {
            status: status.as_u16(),
            message,
        },
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

fn short(key: &str) -> &str {
    &key[..key.len().min(12)]
}

/// What the list's cards and the intent page both show about an intent: the headline ("Post by alice"),
/// the meta line, why it is where it is, its fields and text.
#[derive(Template)]
#[template(path = "review/summary.html")]
struct Summary<'a> {
    i: &'a Intent,
    headline: String,
    state: &'static str,
    created_utc: String,
    created_ago: String,
    attempts: usize,
    short_key: &'a str,
    redelivery_of: Option<&'a str>,
    /// (how it got here, who, the reason redacted).
    why: Option<(&'static str, &'a str, String)>,
}

impl<'a> Summary<'a> {
    fn of(
        i: &'a Intent,
        now: Timestamp,
        attempts: usize,
        why: &'a Option<(String, String)>,
    ) -> Self {
        let label = i.action.label();
        let mut chars = label.chars();
        let cap: String = chars
            .next()
            .map(|c| c.to_uppercase().chain(chars).collect())
            .unwrap_or_default();
        Summary {
            i,
            headline: format!("{cap} by {}", i.account),
            state: i.state.label(),
            created_utc: fmt_utc(i.created_at),
            created_ago: ago(now, i.created_at),
            attempts,
            short_key: short(i.key.as_str()),
            redelivery_of: i.redelivery_of.as_ref().map(|k| short(k.as_str())),
            why: why.as_ref().map(|(actor, reason)| {
                let how = match i.state {
                    Status::Parked => "Parked",
                    Status::Indeterminate => "Outcome unknown",
                    _ => "Moved here",
                };
                (how, actor.as_str(), crate::redact::text(reason))
            }),
        }
    }
}

/// A thumbnail linking to the full screenshot, or the reason it cannot be shown.
#[derive(Template)]
#[template(path = "review/shot.html")]
struct ShotView<'a> {
    title: &'static str,
    capture_point: &'a str,
    full: String,
    thumb: String,
    short_sha: &'a str,
    problem: Option<String>,
}

impl<'a> ShotView<'a> {
    fn of(mode: &Mode, key: &str, s: &'a view::Shot) -> Self {
        ShotView {
            title: s.item.kind.title(),
            capture_point: &s.item.capture_point,
            full: mode.evidence(key, &s.item),
            thumb: mode.thumb(key, &s.item),
            short_sha: short(&s.item.sha256),
            problem: s.status.as_ref().err().map(ToString::to_string),
        }
    }

    fn all(mode: &Mode, key: &str, shots: &'a [view::Shot]) -> Vec<Self> {
        shots.iter().map(|s| ShotView::of(mode, key, s)).collect()
    }
}

/// One intent on the list.
#[derive(Template)]
#[template(path = "review/card.html")]
struct CardView<'a> {
    key: &'a str,
    href: String,
    summary: Summary<'a>,
    problem: Option<&'a str>,
    shots: Vec<ShotView<'a>>,
}

impl<'a> CardView<'a> {
    fn of(mode: &Mode, c: &'a Card, now: Timestamp) -> Self {
        let key = c.intent.key.as_str();
        CardView {
            key,
            href: mode.intent(key),
            summary: Summary::of(&c.intent, now, c.attempts, &c.why),
            problem: c.problem.as_deref(),
            shots: ShotView::all(mode, key, &c.screenshots),
        }
    }
}

/// `<option>`s of a filter menu: "all" first, then each value, the chosen one selected.
#[derive(Template)]
#[template(path = "review/options.html")]
struct Options<'a> {
    all: &'static str,
    values: Vec<(&'a str, bool)>,
}

impl<'a> Options<'a> {
    fn of(values: &'a [String], selected: &Option<String>, all: &'static str) -> Self {
        let values = values
            .iter()
            .map(|v| (v.as_str(), selected.as_deref() == Some(v)))
            .collect();
        Options { all, values }
    }
}

/// The list's filter form (live only).
#[derive(Template)]
#[template(path = "review/filters.html")]
struct Filters<'a> {
    home: String,
    accounts: Options<'a>,
    platforms: Options<'a>,
    /// (query value, label, selected).
    states: [(&'static str, &'static str, bool); 3],
    min_age: &'a str,
    max_age: &'a str,
}

impl<'a> Filters<'a> {
    fn of(mode: &Mode, v: &'a ListView) -> Self {
        let f = &v.filter;
        let st = |s: StateFilter, label| (s.label(), label, f.state == s);
        Filters {
            home: mode.home(),
            accounts: Options::of(&v.accounts, &f.account, "all accounts"),
            platforms: Options::of(&v.platforms, &f.platform, "all platforms"),
            states: [
                st(StateFilter::Both, "parked and indeterminate"),
                st(StateFilter::Parked, "parked"),
                st(StateFilter::Indeterminate, "indeterminate"),
            ],
            min_age: f.min_age.as_ref().map(|a| a.0.as_str()).unwrap_or(""),
            max_age: f.max_age.as_ref().map(|a| a.0.as_str()).unwrap_or(""),
        }
    }
}

#[derive(Template)]
#[template(path = "review/list.html")]
struct List<'a> {
    error: Option<&'a str>,
    filters: Option<Filters<'a>>,
    cards: Vec<CardView<'a>>,
    unfiltered: usize,
    as_of: String,
    truncated: bool,
}

/// The list of parked and indeterminate intents.
pub fn list_page(mode: &Mode, v: &ListView, error: Option<&str>) -> String {
    let body = List {
        error,
        filters: matches!(mode, Mode::Live { .. }).then(|| Filters::of(mode, v)),
        cards: v
            .cards
            .iter()
            .map(|c| CardView::of(mode, c, v.now))
            .collect(),
        unfiltered: v.unfiltered,
        as_of: fmt_utc(v.now.0),
        truncated: v.truncated,
    };
    let sub = match mode {
        Mode::Live { .. } => "live: actions are recorded in the store with your name",
        Mode::Export => "static report: read only",
    };
    let header = Header::List {
        home: mode.home(),
        sub,
    };
    page("Parked sends · oncepost review", header, body)
}

/// A message shown at the top of an intent page.
#[derive(Debug, Clone)]
pub enum Flash {
    /// The action was recorded.
    Done(String),
    /// The action was refused; nothing changed.
    Error(String),
}

#[derive(Template)]
#[template(path = "review/flash.html")]
struct FlashView<'a> {
    class: &'static str,
    message: &'a str,
}

impl<'a> FlashView<'a> {
    fn of(f: &'a Flash) -> Self {
        match f {
            Flash::Done(m) => FlashView {
                class: "ok",
                message: m,
            },
            Flash::Error(m) => FlashView {
                class: "err",
                message: m,
            },
        }
    }
}

/// A permalink as a link only when it is http(s); anything else is shown as text.
#[derive(Template)]
#[template(path = "review/permalink.html")]
struct Permalink {
    url: String,
    link: bool,
}

impl Permalink {
    fn of(p: &str) -> Self {
        let link = matches!(url::Url::parse(p), Ok(u) if matches!(u.scheme(), "http" | "https"));
        Permalink {
            url: p.to_owned(),
            link,
        }
    }
}

#[derive(Template)]
#[template(path = "review/screenshots.html")]
struct Screenshots<'a> {
    shots: Vec<ShotView<'a>>,
}

/// One text evidence file with its heading.
struct TextView<'a> {
    class: String,
    title: &'static str,
    capture_point: &'a str,
    at: String,
    href: String,
    content: Result<&'a str, String>,
}

/// Text evidence: read-back first (what the platform shows), then the write log, then the rest.
#[derive(Template)]
#[template(path = "review/evidence.html")]
struct Evidence<'a> {
    texts: Vec<TextView<'a>>,
    bad_links: &'a [super::evidence::BadLink],
}

impl<'a> Evidence<'a> {
    fn of(mode: &Mode, key: &str, d: &'a Detail) -> Self {
        let order = |k: EvidenceKind| {
            use EvidenceKind as K;
            match k {
                K::Readback => 0,
                K::WriteLog => 1,
                K::DomExcerpt => 2,
                _ => 3,
            }
        };
        let mut texts: Vec<_> = d.texts.iter().collect();
        texts.sort_by_key(|t| order(t.item.kind));
        let texts = texts
            .into_iter()
            .map(|t| TextView {
                class: format!("{:?}", t.item.kind).to_lowercase(),
                title: t.item.kind.title(),
                capture_point: &t.item.capture_point,
                at: fmt_utc(t.item.at),
                href: mode.evidence(key, &t.item),
                content: t.content.as_deref().map_err(ToString::to_string),
            })
            .collect();
        Evidence {
            texts,
            bad_links: &d.bad_links,
        }
    }
}

struct AttemptRow<'a> {
    at: String,
    ordinal: i64,
    token: &'a str,
    owner: &'a str,
    generation: i64,
    epoch: i64,
    credential_version: i64,
    contract: &'a str,
}

struct EventRow<'a> {
    kind: &'static str,
    at: String,
    title: &'static str,
    /// Redacted.
    reason: Option<String>,
    actor: &'a str,
    /// Set only when the event changed the state.
    from: Option<&'static str>,
    to: &'static str,
    attempt: Option<&'a str>,
    /// Redacted, pretty JSON; `None` when there is nothing to show.
    details: Option<String>,
}

enum Row<'a> {
    Attempt(AttemptRow<'a>),
    Event(EventRow<'a>),
}

/// Events and attempts in time order.
#[derive(Template)]
#[template(path = "review/timeline.html")]
struct TimelineView<'a> {
    rows: Vec<Row<'a>>,
}

impl<'a> TimelineView<'a> {
    fn of(t: &'a crate::store::Timeline) -> Self {
        // (when, event id or -1 for an attempt, row): an attempt sorts before the events of its millisecond.
        let mut rows: Vec<(i64, i64, Row<'a>)> = Vec::new();
        for a in &t.attempts {
            rows.push((
                a.created_at,
                -1,
                Row::Attempt(AttemptRow {
                    at: fmt_utc(a.created_at),
                    ordinal: a.ordinal,
                    token: short(&a.token),
                    owner: &a.owner,
                    generation: a.generation,
                    epoch: a.epoch,
                    credential_version: a.credential_version,
                    contract: short(&a.contract_hash),
                }),
            ));
        }
        for e in &t.events {
            let mut details = e.details.clone();
            crate::redact::json_in_place(&mut details);
            let details = if details.as_object().is_some_and(|m| m.is_empty()) || details.is_null()
            {
                None
            } else {
                Some(serde_json::to_string_pretty(&details).unwrap_or_default())
            };
            rows.push((
                e.at,
                e.id,
                Row::Event(EventRow {
                    kind: e.kind.label(),
                    at: fmt_utc(e.at),
                    title: event_title(e.kind),
                    reason: e.reason.as_deref().map(crate::redact::text),
                    actor: &e.actor,
                    from: e.from.filter(|f| *f != e.to).map(Status::label),
                    to: e.to.label(),
                    attempt: e.attempt.as_deref().map(short),
                    details,
                }),
            ));
        }
        rows.sort_by_key(|r| (r.0, r.1));
        TimelineView {
            rows: rows.into_iter().map(|(_, _, r)| r).collect(),
        }
    }
}

/// The three things a person can record on a parked or indeterminate send, each a form with the CSRF token.
#[derive(Template)]
#[template(path = "review/actions.html")]
struct Actions<'a> {
    base: &'a str,
    csrf: &'a str,
    by: &'a str,
    key: &'a str,
    found_help: &'static str,
    keep_title: &'static str,
    keep_help: &'static str,
    keep_button: &'static str,
}

impl<'a> Actions<'a> {
    fn of(base: &'a str, csrf: &'a str, by: &'a str, i: &'a Intent) -> Self {
        let found_help = match i.state {
            Status::Indeterminate => {
                "You found the post on the platform: the send is recorded as published (a lookup done by you)."
            }
            _ => "You found the post on the platform: the send is confirmed as published.",
        };
        let (keep_title, keep_help, keep_button) = match i.state {
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
        Actions {
            base,
            csrf,
            by,
            key: i.key.as_str(),
            found_help,
            keep_title,
            keep_help,
            keep_button,
        }
    }
}

/// Only parked and indeterminate sends wait for a person; the others belong to the machines, and the page
/// says which command moves them on (nothing publishes a pending send by itself).
#[derive(Template)]
#[template(path = "review/next-step.html")]
struct NextStep {
    state: &'static str,
    says: String,
    command: Option<String>,
}

#[derive(Template)]
#[template(path = "review/intent.html")]
struct IntentView<'a> {
    flash: Option<FlashView<'a>>,
    key: &'a str,
    summary: Summary<'a>,
    permalink: Option<Permalink>,
    /// The redelivery authorization record, redacted, as JSON text.
    redelivery: Option<String>,
    /// What the platform answered to each create request: (when, status, body excerpt).
    answers: Vec<(String, Option<u16>, &'a str)>,
    /// What the post rests on.
    source: Option<SourceView<'a>>,
    screenshots: Screenshots<'a>,
    evidence: Evidence<'a>,
    timeline: TimelineView<'a>,
    actions: Option<Actions<'a>>,
    next_step: Option<NextStep>,
}

/// The source a post rests on: its id, version, claim, and for a superseded version what changed.
struct SourceView<'a> {
    stable_id: &'a str,
    version: &'a str,
    head: &'a str,
    fresh: bool,
    claim: &'a str,
    /// (css class, sign, line)
    diff: Vec<(&'static str, char, &'a str)>,
}

impl<'a> SourceView<'a> {
    fn of(d: &'a view::SourceDetail) -> Self {
        SourceView {
            stable_id: &d.source.stable_id,
            version: d.source.version.as_str(),
            head: d.source.head.as_ref().map_or("(none)", |h| h.as_str()),
            fresh: d.source.is_fresh(),
            claim: &d.source.claim_content,
            diff: d
                .diff
                .iter()
                .map(|(tag, line)| {
                    let class = match tag {
                        '-' => "del",
                        '+' => "add",
                        _ => "same",
                    };
                    (class, *tag, line.as_str())
                })
                .collect(),
        }
    }
}

/// One intent in full, with actions when live.
pub fn intent_page(mode: &Mode, d: &Detail, flash: Option<&Flash>) -> String {
    let i = &d.timeline.intent;
    let key = i.key.as_str();
    let (mut actions, mut next_step) = (None, None);
    if let Mode::Live { base, csrf, by } = mode {
        if matches!(i.state, Status::Parked | Status::Indeterminate) {
            actions = Some(Actions::of(base, csrf, by, i));
        } else {
            let next = i.next_step();
            next_step = Some(NextStep {
                state: i.state.label(),
                says: next.says,
                command: next.command,
            });
        }
    }
    let body = IntentView {
        flash: flash.map(FlashView::of),
        key,
        summary: Summary::of(i, d.now, d.timeline.attempts.len(), &d.why),
        permalink: i
            .permalink
            .as_deref()
            .map(|p| Permalink::of(&crate::redact::text(p))),
        redelivery: i
            .redelivery
            .as_ref()
            .map(|r| crate::redact::json(r).to_string()),
        answers: d
            .answers
            .iter()
            .map(|a| (fmt_utc(a.at), a.status, a.excerpt.as_str()))
            .collect(),
        source: d.source.as_ref().map(SourceView::of),
        screenshots: Screenshots {
            shots: ShotView::all(mode, key, &d.shots),
        },
        evidence: Evidence::of(mode, key, d),
        timeline: TimelineView::of(&d.timeline),
        actions,
        next_step,
    };
    page(
        &format!("{} · {} · oncepost review", i.state, i.account),
        Header::Intent { home: mode.home() },
        body,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(fmt_utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(fmt_utc(1_796_054_406_000), "2026-11-30 16:00:06 UTC");
        assert_eq!(fmt_utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
    }

    /// Every value a person or an agent typed (text, fields, source, the reason and actor of a park, the
    /// reviewer's name, a flash message), each with `<`, `&`, `"` and `'`, is escaped on the intent page and
    /// on the list, in content and in attribute values.
    #[tokio::test]
    async fn typed_values_are_escaped_on_the_intent_page_and_the_list() {
        use std::collections::BTreeMap;

        use crate::identity::{ActionKind, CanonicalRequest};
        use crate::store::{NewAccount, NewIntent, Policy, Store, StoreLocation};

        const EVIL: &str = r#"<b>bold</b> & "quoted" 'single'"#;
        const ESCAPED: &str = "&lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot; &#39;single&#39;";
        let home = tempfile::tempdir().unwrap();
        let store = Store::open(&StoreLocation::default_in(home.path()), Policy::default())
            .await
            .unwrap();
        let now = Timestamp::now();
        let account = NewAccount {
            name: "alice".into(),
            platform: "fixturebook".into(),
            min_interval_ms: 0,
            dup_window_ms: 0,
        };
        store.add_account(&account, "tester", now).await.unwrap();
        let fields = BTreeMap::from([("title".to_string(), EVIL.to_string())]);
        // The post rests on a source whose id, body and claim are all typed values too.
        let body = |text: String| {
            crate::source::SourceBody::from_raw(EVIL, text.as_bytes(), None, "test").unwrap()
        };
        let v1 = body(format!("Intro.\n\nFirst {EVIL}"));
        store.capture_source(&v1, now).await.unwrap();
        let version = v1.version();
        let new = NewIntent {
            account: "alice".into(),
            action: ActionKind::Post,
            target: String::new(),
            request: CanonicalRequest::new(Some(EVIL), &fields),
            source: Some(crate::store::IntentClaim {
                claim: crate::identity::ClaimId::of(&version, EVIL),
                version,
                content: EVIL.into(),
            }),
        };
        let key = store.create_intent(&new, now).await.unwrap().intent.key;
        store
            .capture_source(&body(format!("Intro.\n\nSecond {EVIL}")), now)
            .await
            .unwrap();
        store.park(&key, EVIL, EVIL, now).await.unwrap();

        let d = view::detail(&store, home.path(), &key, now).await.unwrap();
        let live = Mode::Live {
            base: "/t",
            csrf: "c",
            by: EVIL,
        };
        let page = intent_page(&live, &d, Some(&Flash::Done(EVIL.into())));
        let l = view::list(&store, home.path(), view::Filter::default(), now)
            .await
            .unwrap();
        let list = list_page(&live, &l, Some(EVIL));
        for (name, html) in [("intent page", &page), ("list", &list)] {
            assert!(!html.contains("<b>bold"), "{name} renders raw markup");
            assert!(
                !html.contains("'single'"),
                "{name}: an apostrophe is left raw"
            );
            assert!(!html.contains(r#""quoted""#), "{name}: a quote is left raw");
            for needle in [
                format!(r#"<div class="text">{ESCAPED}</div>"#),
                format!(r#"<div class="meta">title: <b>{ESCAPED}</b></div>"#),
                format!(r#"<div class="why">Parked by <b>{ESCAPED}</b>: {ESCAPED}</div>"#),
                format!(r#"id="message">{ESCAPED}</div>"#),
            ] {
                assert!(html.contains(&needle), "{name} misses {needle}");
            }
        }
        assert!(page.contains(&format!(r#"<input name="by" required value="{ESCAPED}">"#)));
        for needle in [
            format!("source <code>{ESCAPED}</code>, version"),
            format!("claim: {ESCAPED}</div>"),
            "<b>superseded</b>".to_string(),
            format!(r#"<span class="del">- First {ESCAPED}</span>"#),
            format!(r#"<span class="add">+ Second {ESCAPED}</span>"#),
            r#"<span class="same">  Intro.</span>"#.to_string(),
        ] {
            assert!(page.contains(&needle), "the source card misses {needle}");
        }
        assert_eq!(
            page.matches(r#"name="csrf" value="c""#).count(),
            3,
            "every form"
        );
        assert!(
            page.contains(&format!("<td>{ESCAPED}</td>")),
            "the timeline's actor"
        );
    }

    #[test]
    fn only_http_permalinks_are_links() {
        let p = |s: &str| html::render(&Permalink::of(s));
        assert!(p("https://x.test/p/1").starts_with("<a "));
        assert!(p("javascript:alert(1)").starts_with("<code>"));
        assert!(p("/p/1").starts_with("<code>"));
    }
}
