//! What the pages show, gathered from the store and the evidence folder: the filtered list of parked and
//! indeterminate intents, and one intent in full. Shared by the live server and the static export, so both
//! show the same content.
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use super::error::ReviewError;
use super::evidence::{self, EvidenceItem, EvidenceKind, EvidenceLinks, EvidenceProblem};
use crate::store::{EventKind, Intent, Status, Store, Timeline, Timestamp};

/// How many intents per state the page reads (the page says so when there are more).
pub const LIST_LIMIT: i64 = 500;
/// Text evidence longer than this is cut on the page (the file stays whole on disk).
pub const MAX_TEXT_SHOWN: usize = 64 * 1024;

/// Which states to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StateFilter {
    /// Parked and indeterminate.
    #[default]
    Both,
    /// Parked only.
    Parked,
    /// Indeterminate only.
    Indeterminate,
}

impl StateFilter {
    /// The query-string spelling.
    pub fn label(self) -> &'static str {
        match self {
            StateFilter::Both => "",
            StateFilter::Parked => "parked",
            StateFilter::Indeterminate => "indeterminate",
        }
    }

    fn states(self) -> &'static [Status] {
        match self {
            StateFilter::Both => &[Status::Parked, Status::Indeterminate],
            StateFilter::Parked => &[Status::Parked],
            StateFilter::Indeterminate => &[Status::Indeterminate],
        }
    }
}

/// The list filters (all optional), from the query string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only this account.
    pub account: Option<String>,
    /// Only this platform.
    pub platform: Option<String>,
    /// Which states.
    pub state: StateFilter,
    /// Only intents created at least this long ago (as typed, e.g. `2h`).
    pub min_age: Option<(String, i64)>,
    /// Only intents created at most this long ago.
    pub max_age: Option<(String, i64)>,
}

impl Filter {
    /// Parse the query string; a bad value is a clear error shown on the page.
    pub fn from_query(q: &HashMap<String, String>) -> Result<Filter, ReviewError> {
        let get = |k: &str| q.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let state = match get("state") {
            None => StateFilter::Both,
            Some("parked") => StateFilter::Parked,
            Some("indeterminate") => StateFilter::Indeterminate,
            Some(other) => {
                return Err(ReviewError::BadInput(format!(
                    "state {other:?} is not listed here: use parked or indeterminate"
                )));
            }
        };
        let age = |k: &str, what: &str| -> Result<Option<(String, i64)>, ReviewError> {
            get(k)
                .map(|v| {
                    parse_age(v).map(|ms| (v.to_string(), ms)).ok_or_else(|| {
                        ReviewError::BadInput(format!(
                            "{what} {v:?} is not an age like 30m, 6h or 7d"
                        ))
                    })
                })
                .transpose()
        };
        Ok(Filter {
            account: get("account").map(str::to_string),
            platform: get("platform").map(str::to_string),
            state,
            min_age: age("min_age", "older than")?,
            max_age: age("max_age", "newer than")?,
        })
    }

    fn matches(&self, i: &Intent, now: Timestamp) -> bool {
        let age = now.0 - i.created_at;
        self.account.as_ref().is_none_or(|a| *a == i.account)
            && self.platform.as_ref().is_none_or(|p| *p == i.platform)
            && self.min_age.as_ref().is_none_or(|(_, ms)| age >= *ms)
            && self.max_age.as_ref().is_none_or(|(_, ms)| age <= *ms)
    }
}

/// One intent on the list.
#[derive(Debug, Clone)]
pub struct Card {
    /// The intent.
    pub intent: Intent,
    /// Attempts made.
    pub attempts: usize,
    /// Why it is parked or indeterminate: the reason of the event that put it there.
    pub why: Option<(String, String)>,
    /// Screenshots linked from its history, each checked on disk.
    pub screenshots: Vec<Shot>,
    /// Set when the intent's history could not be read (the card is still listed, with this line).
    pub problem: Option<String>,
}

/// The list page's content.
#[derive(Debug, Clone)]
pub struct ListView {
    /// Matching intents, newest first.
    pub cards: Vec<Card>,
    /// How many parked/indeterminate intents there are before filtering.
    pub unfiltered: usize,
    /// Whether a state had more than [`LIST_LIMIT`] intents (the oldest are not shown).
    pub truncated: bool,
    /// Accounts and platforms seen (for the filter menus).
    pub accounts: Vec<String>,
    /// Platforms seen.
    pub platforms: Vec<String>,
    /// The filter applied.
    pub filter: Filter,
    /// When it was read.
    pub now: Timestamp,
}

/// Read the list.
pub async fn list(
    store: &Store,
    data_dir: &Path,
    filter: Filter,
    now: Timestamp,
) -> Result<ListView, ReviewError> {
    let mut all = Vec::new();
    let mut truncated = false;
    for state in StateFilter::Both.states() {
        let batch = store.intents(Some(*state), LIST_LIMIT).await?;
        truncated |= batch.len() as i64 >= LIST_LIMIT;
        all.extend(batch);
    }
    let accounts: BTreeSet<String> = all.iter().map(|i| i.account.clone()).collect();
    let platforms: BTreeSet<String> = all.iter().map(|i| i.platform.clone()).collect();
    let unfiltered = all.len();
    all.retain(|i| filter.state.states().contains(&i.state) && filter.matches(i, now));
    all.sort_by(|a, b| {
        b.updated_at
            .cmp(&a.updated_at)
            .then(b.created_at.cmp(&a.created_at))
    });
    let mut cards = Vec::with_capacity(all.len());
    for intent in all {
        // One unreadable history must not hide every other parked send: list it with the problem.
        let t = match store.timeline(&intent.key).await {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(intent = %intent.key.as_str(), error = %e, "unreadable history");
                cards.push(Card {
                    intent,
                    attempts: 0,
                    why: None,
                    screenshots: Vec::new(),
                    problem: Some(format!("its history cannot be read: {e}")),
                });
                continue;
            }
        };
        cards.push(Card {
            attempts: t.attempts.len(),
            why: why(&t),
            screenshots: shots(data_dir, &EvidenceLinks::of(&t)),
            intent: t.intent,
            problem: None,
        });
    }
    Ok(ListView {
        cards,
        unfiltered,
        truncated,
        accounts: accounts.into_iter().collect(),
        platforms: platforms.into_iter().collect(),
        filter,
        now,
    })
}

/// The last event that moved the intent into its current state: (actor, reason).
fn why(t: &Timeline) -> Option<(String, String)> {
    t.events
        .iter()
        .rev()
        .find(|e| e.from != Some(e.to) && e.to == t.intent.state)
        .map(|e| {
            let reason = e
                .reason
                .clone()
                .unwrap_or_else(|| e.kind.label().replace('_', " "));
            (e.actor.clone(), reason)
        })
}

/// A text evidence file as shown: pretty, redacted JSON or the excerpt as text, or why it cannot be shown.
#[derive(Debug, Clone)]
pub struct TextEvidence {
    /// The item.
    pub item: EvidenceItem,
    /// The text (cut at [`MAX_TEXT_SHOWN`]) or the problem.
    pub content: Result<String, EvidenceProblem>,
}

/// One screenshot and whether its file is intact.
#[derive(Debug, Clone)]
pub struct Shot {
    /// The item.
    pub item: EvidenceItem,
    /// `Ok` when the file exists and still hashes to its name.
    pub status: Result<(), EvidenceProblem>,
}

/// One intent in full.
#[derive(Debug, Clone)]
pub struct Detail {
    /// The intent, attempts and events.
    pub timeline: Timeline,
    /// Why it is where it is.
    pub why: Option<(String, String)>,
    /// Screenshots.
    pub shots: Vec<Shot>,
    /// Write logs, read-back results, excerpts, probe reports.
    pub texts: Vec<TextEvidence>,
    /// Links that break the convention.
    pub bad_links: Vec<evidence::BadLink>,
    /// What the platform answered to each create request sent (from the write logs, redacted), oldest
    /// first.
    pub answers: Vec<CreateAnswer>,
    /// What the post rests on, with the change since, if its source moved on.
    pub source: Option<SourceDetail>,
    /// When it was read.
    pub now: Timestamp,
}

/// The source a post rests on, for the review page.
#[derive(Debug, Clone)]
pub struct SourceDetail {
    /// The claim, its version and the head now.
    pub source: crate::store::IntentSource,
    /// For a superseded version: the line diff from its normalized body to the head's, each line tagged
    /// `'-'` (only in the post's version), `'+'` (only in the head) or `' '` (both). Empty when fresh.
    pub diff: Vec<(char, String)>,
}

/// The line diff between two normalized bodies (blocks are lines), for a person to see what changed.
pub fn body_diff(old: &str, new: &str) -> Vec<(char, String)> {
    similar::TextDiff::from_lines(old, new)
        .iter_all_changes()
        .map(|c| {
            let tag = match c.tag() {
                similar::ChangeTag::Delete => '-',
                similar::ChangeTag::Insert => '+',
                similar::ChangeTag::Equal => ' ',
            };
            (tag, c.value().trim_end_matches('\n').to_string())
        })
        .collect()
}

async fn source_detail(
    store: &Store,
    key: &crate::identity::DeliveryKey,
) -> Result<Option<SourceDetail>, ReviewError> {
    let Some(source) = store.intent_source(key).await? else {
        return Ok(None);
    };
    let mut diff = Vec::new();
    if !source.is_fresh()
        && let Some(head) = &source.head
        && let (Some(old), Some(new)) = (
            store.source_version(&source.version).await?,
            store.source_version(head).await?,
        )
    {
        diff = body_diff(&old.normalized, &new.normalized);
    }
    Ok(Some(SourceDetail { source, diff }))
}

/// The platform's answer to one create request, as one line: the status and the start of the body, or why
/// no answer came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateAnswer {
    /// When the write log was recorded.
    pub at: i64,
    /// The HTTP status, when an answer came.
    pub status: Option<u16>,
    /// The answer's body (redacted, whitespace collapsed, cut at [`ANSWER_EXCERPT_CHARS`]), or what
    /// happened instead of an answer.
    pub excerpt: String,
}

/// How much of an answer's body the review page shows in its line (the write log has up to 4 KiB).
pub const ANSWER_EXCERPT_CHARS: usize = 300;

/// The create answers in one write log (already redacted JSON): its `outcome` entries.
pub fn answers_in(at: i64, redacted_log: &[u8]) -> Vec<CreateAnswer> {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(redacted_log) else {
        return Vec::new();
    };
    let collapse = |s: &str| {
        let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
        if one.chars().count() > ANSWER_EXCERPT_CHARS {
            let cut: String = one.chars().take(ANSWER_EXCERPT_CHARS).collect();
            format!("{cut}…")
        } else {
            one
        }
    };
    let entries = v["entries"].as_array().cloned().unwrap_or_default();
    entries
        .iter()
        .filter(|e| e["what"] == "outcome" || e["what"] == "not_paused")
        .map(|e| {
            let d = &e["details"];
            let fallback = if e["what"] == "not_paused" {
                "not sent"
            } else {
                "no answer"
            };
            let status = d["status"].as_u64().and_then(|s| u16::try_from(s).ok());
            let excerpt = match (status, d["body"].as_str()) {
                (Some(_), Some(body)) if body.trim().is_empty() => "(empty body)".to_string(),
                (Some(_), Some(body)) => collapse(body),
                _ => {
                    // No answer: the outcome says what happened instead (not sent and its proof, or unknown
                    // and why).
                    let what = d["outcome"].as_str().unwrap_or(fallback).replace('_', " ");
                    let why = ["reason", "proof"]
                        .iter()
                        .find_map(|k| d[*k].as_str())
                        .unwrap_or("");
                    collapse(&format!("no answer ({what}): {why}"))
                }
            };
            CreateAnswer {
                at,
                status,
                excerpt,
            }
        })
        .collect()
}

/// Read one intent with its evidence.
pub async fn detail(
    store: &Store,
    data_dir: &Path,
    key: &crate::identity::DeliveryKey,
    now: Timestamp,
) -> Result<Detail, ReviewError> {
    let timeline = store.timeline(key).await?;
    let links = EvidenceLinks::of(&timeline);
    let shots = shots(data_dir, &links);
    let texts = links
        .items
        .iter()
        .filter(|i| !i.kind.is_screenshot() && i.kind != EvidenceKind::Unknown)
        .map(|item| TextEvidence {
            item: item.clone(),
            content: evidence::read_verified(data_dir, item).map(|b| text_of(item.kind, &b)),
        })
        .collect();
    let answers = links
        .items
        .iter()
        .filter(|i| i.kind == EvidenceKind::WriteLog)
        .filter_map(|i| {
            evidence::read_verified(data_dir, i)
                .ok()
                .map(|b| answers_in(i.at, &evidence::shown_bytes(i.kind, &b)))
        })
        .flatten()
        .collect();
    let source = source_detail(store, key).await?;
    Ok(Detail {
        why: why(&timeline),
        source,
        timeline,
        shots,
        texts,
        bad_links: links.bad,
        answers,
        now,
    })
}

/// The screenshots, each checked: present and still hashing to its name.
fn shots(data_dir: &Path, links: &EvidenceLinks) -> Vec<Shot> {
    links
        .screenshots()
        .map(|item| Shot {
            item: item.clone(),
            status: evidence::read_verified(data_dir, item).map(|_| ()),
        })
        .collect()
}

/// JSON kinds are redacted again and pretty-printed, a DOM excerpt is redacted again as HTML; all of it is
/// shown as text (escaped by the page).
fn text_of(kind: EvidenceKind, bytes: &[u8]) -> String {
    let mut text = String::from_utf8_lossy(&evidence::shown_bytes(kind, bytes)).into_owned();
    if text.len() > MAX_TEXT_SHOWN {
        let mut cut = MAX_TEXT_SHOWN;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n… (cut here; the whole file is in the evidence folder)");
    }
    text
}

/// An age typed into the filter: a whole number with `m`, `h` or `d` (minutes, hours, days).
pub fn parse_age(s: &str) -> Option<i64> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
    let n: i64 = num.parse().ok()?;
    let mult = match unit.trim() {
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// Event kinds a person reads as the headline of a row.
pub fn event_title(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Created => "Created",
        EventKind::Begun => "Attempt begun",
        EventKind::ClaimReleased => "Claim released",
        EventKind::Queued => "Queued for a worker",
        EventKind::Authorized => "Dispatch authorized",
        EventKind::RequestSent => "Create request sent",
        EventKind::Published => "Published (read back)",
        EventKind::Failed => "Failed (not sent)",
        EventKind::Indeterminate => "Outcome unknown",
        EventKind::LeaseExpired => "Lease expired, outcome unknown",
        EventKind::Retried => "Retried",
        EventKind::ReconcileStarted => "Lookup started",
        EventKind::ReconcileFound => "Lookup found the post",
        EventKind::ReconcileNotFound => "Lookup found nothing",
        EventKind::Parked => "Parked",
        EventKind::Resolved => "Confirmed published by a person",
        EventKind::FoundBeforeWrite => "Found before writing",
        EventKind::RedeliveryAuthorized => "Redelivery authorized",
        EventKind::Note => "Note",
        EventKind::Evidence => "Evidence linked",
        EventKind::SideEffectAlarm => "Side-effect alarm",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_filters_parse_or_explain() {
        assert_eq!(parse_age("30m"), Some(1_800_000));
        assert_eq!(parse_age("2d"), Some(172_800_000));
        assert_eq!(parse_age("2"), None);
        assert_eq!(parse_age("h"), None);
        assert_eq!(parse_age("99999999999999999d"), None);
        let q = |k: &str, v: &str| HashMap::from([(k.to_string(), v.to_string())]);
        assert!(matches!(
            Filter::from_query(&q("min_age", "soon")),
            Err(ReviewError::BadInput(_))
        ));
        assert!(matches!(
            Filter::from_query(&q("state", "published")),
            Err(ReviewError::BadInput(_))
        ));
        assert_eq!(
            Filter::from_query(&q("state", "parked")).unwrap().state,
            StateFilter::Parked
        );
    }

    #[test]
    fn each_create_answer_is_one_line_status_and_excerpt_or_what_happened_instead() {
        let long = "x ".repeat(400);
        let log = serde_json::json!({ "entries": [
            { "what": "sending", "details": { "method": "POST" } },
            { "what": "outcome", "details": { "outcome": "response", "status": 422,
              "body": "{\"error\":\n  \"text is empty\"}" } },
            { "what": "outcome", "details": { "outcome": "response", "status": 201, "body": long } },
            { "what": "outcome", "details": { "outcome": "response", "status": 204, "body": "" } },
            { "what": "outcome", "details": { "outcome": "unknown", "reason": "connection closed" } },
            { "what": "not_paused", "details": { "proof": "the door saw nothing leave" } },
        ]});
        let a = answers_in(7, log.to_string().as_bytes());
        assert_eq!(a.len(), 5);
        assert_eq!(
            (a[0].status, a[0].excerpt.as_str()),
            (Some(422), r#"{"error": "text is empty"}"#)
        );
        assert_eq!(a[1].excerpt.chars().count(), ANSWER_EXCERPT_CHARS + 1);
        assert!(a[1].excerpt.ends_with('…'));
        assert_eq!(a[2].excerpt, "(empty body)");
        assert_eq!(
            (a[3].status, a[3].excerpt.as_str()),
            (None, "no answer (unknown): connection closed")
        );
        assert_eq!(
            a[4].excerpt,
            "no answer (not sent): the door saw nothing leave"
        );
        assert!(a.iter().all(|x| x.at == 7));
        assert!(answers_in(0, b"not json").is_empty());
    }
}
