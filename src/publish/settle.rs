//! The settle table of docs/states.md ("The publish flow"), as one `match` the compiler checks: every way a
//! publish attempt can end is a [`Verdict`] variant, and [`land`] says where each one lands.
use serde_json::{Value, json};

use crate::store::EventKind;

/// How one attempt ended, before it is written to the store.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// `authorize_dispatch` refused (zero bytes out by construction).
    AuthorizationRefused {
        /// The refusal.
        refusal: String,
    },
    /// The compose page could not be prepared or the publish control failed its strict checks; nothing was
    /// pressed and nothing was authorized.
    NotActionable {
        /// The check report or step outcome.
        report: Value,
    },
    /// Before the press, the page tried a channel the door refuses (a WebSocket, WebTransport or TURN
    /// tunnel): it may publish that way, so nothing is pressed; the sinkhole forwarded nothing.
    ChannelRefused {
        /// The refused attempts.
        report: Value,
    },
    /// The create request provably never left (connect refused, never paused, incomplete body, the
    /// before-send record failed, the last look found the page changed the post after its check).
    NotSent {
        /// Why that is known.
        proof: String,
    },
    /// Response received, success signal seen, read-back text matches.
    Published {
        /// Platform id.
        platform_id: Option<String>,
        /// Permalink.
        permalink: Option<String>,
        /// The read-back.
        readback: Value,
    },
    /// The post exists with a different text.
    ReadbackMismatch {
        /// Both texts and the read-back.
        readback: Value,
    },
    /// Posts with the text were read back, but none shows this account as its author (another author, no
    /// author shown, no handle recorded, a link outside the platform): a lead for a person.
    ReadbackLead {
        /// The candidates and the read-back.
        readback: Value,
    },
    /// A 4xx the contract declares a definitive rejection.
    Rejected {
        /// Status.
        status: u16,
        /// Body (cut).
        body: String,
    },
    /// A 4xx the contract declares "not created now; try later" (a rate limit).
    RetryLater {
        /// Status.
        status: u16,
        /// Body (cut).
        body: String,
        /// When the answer says to try again (ms since the epoch).
        retry_at: i64,
    },
    /// Any other 4xx.
    UndeclaredClientError {
        /// Status.
        status: u16,
        /// Body (cut).
        body: String,
    },
    /// 5xx.
    ServerError {
        /// Status.
        status: u16,
        /// Body (cut).
        body: String,
    },
    /// Timeout, reset or close after bytes, incomplete response.
    TransportUnknown {
        /// What happened.
        reason: String,
    },
    /// The page or the browser failed after dispatch.
    BrowserFailed {
        /// The error.
        error: String,
    },
    /// A response came back but no success signal appeared.
    NoSuccessSignal {
        /// The response status (`None`: a create message delivered on a socket, which has none).
        status: Option<u16>,
    },
    /// Success signalled but the read-back did not find the post (after the propagation window).
    ReadbackNotFound {
        /// The read-back.
        readback: Value,
    },
}

/// Where a verdict lands.
#[derive(Debug, Clone)]
pub enum Landing {
    /// failed, with the proof that nothing left.
    Failed(Value),
    /// published.
    Published {
        /// Platform id.
        platform_id: Option<String>,
        /// Permalink.
        permalink: Option<String>,
        /// Verdict details.
        verdict: Value,
    },
    /// indeterminate.
    Indeterminate {
        /// Reason.
        reason: String,
        /// Details.
        details: Value,
    },
    /// parked (settled indeterminate first, then parked: the store parks from indeterminate).
    Parked {
        /// Reason.
        reason: String,
        /// Details.
        details: Value,
    },
}

/// Why a compose page was left unpressed, from what its report holds: a field that does not show what was
/// typed, a step or field that could not be done, the page not prepared at all, or the publish control.
fn not_actionable_why(report: &Value) -> &'static str {
    if report.get("changed_after_check").is_some() {
        return "the page changed a field after it was filled and checked, and typing it again did not \
                hold (it changed again, or the typed text follows what the field holds); nothing pressed";
    }
    if report.get("signed_in_as").is_some() {
        return "the compose page does not show the account logged in; nothing pressed";
    }
    match (report.get("step"), report.get("publish_control")) {
        (Some(step), _) if step["action"] == "verify" => {
            "a field does not show what was typed; nothing pressed"
        }
        (Some(_), _) => "a compose step or field could not be done; nothing pressed",
        (None, Some(_)) => "publish control not actionable; nothing pressed",
        (None, None) => "the compose page could not be prepared; nothing pressed",
    }
}

/// The settle table.
pub fn land(v: Verdict) -> Landing {
    match v {
        // The refusal in the why too: it is what a summary line shows (a worker's log, a test's cell).
        Verdict::AuthorizationRefused { refusal } => Landing::Failed(json!({
            "why": format!("authorization refused: {refusal}"), "refusal": refusal, "bytes_out": 0,
        })),
        Verdict::NotActionable { report } => Landing::Failed(json!({
            "why": not_actionable_why(&report), "report": report, "bytes_out": 0,
        })),
        Verdict::ChannelRefused { report } => Landing::Failed(json!({
            "why": "the page tried a channel oncepost refuses before publish was pressed; nothing pressed, \
                    nothing left",
            "report": report, "bytes_out": 0,
        })),
        Verdict::NotSent { proof } => Landing::Failed(json!({
            "why": "the create request never left", "proof": proof, "bytes_out": 0,
        })),
        Verdict::Published {
            platform_id,
            permalink,
            readback,
        } => Landing::Published {
            platform_id,
            permalink,
            verdict: json!({ "readback": readback }),
        },
        Verdict::ReadbackMismatch { readback } => Landing::Parked {
            reason: "readback_mismatch".into(),
            details: json!({ "readback": readback }),
        },
        Verdict::ReadbackLead { readback } => Landing::Parked {
            reason: "readback_lead".into(),
            details: json!({ "readback": readback }),
        },
        Verdict::Rejected { status, body } => Landing::Failed(json!({
            "why": match signed_out_hint(status) {
                Some(hint) => format!("the contract declares this status a definitive rejection; {hint}"),
                None => "the contract declares this status a definitive rejection".into(),
            },
            "status": status, "body": body,
        })),
        Verdict::RetryLater {
            status,
            body,
            retry_at,
        } => Landing::Failed(json!({
            "why": format!(
                "the platform answered HTTP {status}, which the contract declares \"not created now; try later\"; \
                 nothing was made"
            ),
            "status": status, "body": body, "retry_at": retry_at,
        })),
        Verdict::UndeclaredClientError { status, body } => Landing::Indeterminate {
            reason: match signed_out_hint(status) {
                Some(hint) => {
                    format!("HTTP {status} not declared a rejection by the contract; {hint}")
                }
                None => format!("HTTP {status} not declared a rejection by the contract"),
            },
            details: json!({ "status": status, "body": body }),
        },
        Verdict::ServerError { status, body } => Landing::Indeterminate {
            reason: format!("HTTP {status} from the create request"),
            details: json!({ "status": status, "body": body }),
        },
        Verdict::TransportUnknown { reason } => Landing::Indeterminate {
            details: json!({ "transport": reason }),
            reason: "no complete response to the create request".into(),
        },
        Verdict::BrowserFailed { error } => Landing::Indeterminate {
            reason: "the page or the browser failed after dispatch".into(),
            details: json!({ "error": error }),
        },
        Verdict::NoSuccessSignal { status } => Landing::Indeterminate {
            reason: match status {
                Some(_) => "no success signal after the response".into(),
                None => "no success signal after the create message was delivered".into(),
            },
            details: json!({ "status": status }),
        },
        Verdict::ReadbackNotFound { readback } => Landing::Indeterminate {
            reason: "success signalled but the read-back did not find the post".into(),
            details: json!({ "readback": readback }),
        },
    }
}

/// What a create answered 401, 403 or 419 most often means, for the person who reads why: the account's
/// login (its session, or the session's CSRF token: 419 is Laravel's "page expired") ended between the
/// compose page's load and the press. Every later send of the account meets the same answer until it is
/// logged in again. Only words: the verdict is the contract's (a rejection only when declared).
fn signed_out_hint(status: u16) -> Option<&'static str> {
    SIGNED_OUT_STATUSES.contains(&status).then_some(
        "the platform may no longer take the account's login (an expired session or CSRF token): log the \
         account's browser profile in again (or give --login-url) before anything else is sent for it; a \
         platform that answers so for an expired login may be told so with publish.rejection_statuses",
    )
}

/// The statuses [`signed_out_hint`] reads as a login that ended.
const SIGNED_OUT_STATUSES: [u16; 3] = [401, 403, 419];

/// What, in a settled send's event (its kind and details, as [`land`] made them), shows that the account's
/// login has ended: a create answered 401, 403 or 419, declared a rejection or not, or a compose page that
/// does not show the account logged in (`compose.signed_in_as`). A worker sets such an account aside on its
/// host (`set_aside.rs`).
pub fn signed_out_sign(kind: EventKind, details: &Value) -> Option<String> {
    let status = details
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok());
    match kind {
        EventKind::Failed | EventKind::Indeterminate => {}
        _ => return None,
    }
    if let Some(s) = status.filter(|s| SIGNED_OUT_STATUSES.contains(s)) {
        return Some(format!("the create request was answered HTTP {s}"));
    }
    (kind == EventKind::Failed && details.pointer("/report/signed_in_as").is_some())
        .then(|| "the compose page does not show the account logged in".to_string())
}

/// How long to wait when a "try later" answer names no time.
pub const RETRY_LATER_DEFAULT_MS: i64 = 60_000;

/// The longest wait a "try later" answer is taken at its word for.
pub const RETRY_LATER_MAX_MS: i64 = 24 * 3600 * 1000;

/// A "try later" verdict for a status the contract declares so (`publish.retry_later_statuses`, 4xx only):
/// when to try again from `Retry-After` (seconds, or an HTTP date), else [`RETRY_LATER_DEFAULT_MS`] from
/// `now_ms`; never earlier than a second from now nor later than [`RETRY_LATER_MAX_MS`].
pub fn retry_later(
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    retry_later_statuses: &[u16],
    now_ms: i64,
) -> Option<Verdict> {
    if !(retry_later_statuses.contains(&status) && (400..500).contains(&status)) {
        return None;
    }
    let after_ms = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("retry-after"))
        .and_then(|(_, v)| retry_after_ms(v.trim(), now_ms))
        .unwrap_or(RETRY_LATER_DEFAULT_MS)
        .clamp(1000, RETRY_LATER_MAX_MS);
    Some(Verdict::RetryLater {
        status,
        body: String::from_utf8_lossy(&body[..body.len().min(2048)]).into_owned(),
        retry_at: now_ms + after_ms,
    })
}

/// `Retry-After`'s wait in ms: delay-seconds, or an HTTP date (its distance from `now_ms`).
fn retry_after_ms(v: &str, now_ms: i64) -> Option<i64> {
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        return Some(v.parse::<i64>().ok()?.saturating_mul(1000));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    let at_ms = at.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as i64;
    Some(at_ms - now_ms)
}

/// The verdict of a complete response, before the success signal and read-back (None: go on).
pub fn by_status(status: u16, body: &[u8], rejection_statuses: &[u16]) -> Option<Verdict> {
    let body = String::from_utf8_lossy(&body[..body.len().min(2048)]).into_owned();
    // Only a 4xx can prove a rejection: a 5xx may come after the commit (the post may be live), so a 5xx
    // listed by a contract is still a server error (contract check refuses such a list too).
    if rejection_statuses.contains(&status) && (400..500).contains(&status) {
        Some(Verdict::Rejected { status, body })
    } else if (400..500).contains(&status) {
        Some(Verdict::UndeclaredClientError { status, body })
    } else if !(200..500).contains(&status) {
        Some(Verdict::ServerError { status, body })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_answered_as_signed_out_says_to_log_in_again() {
        let reason = |status| match land(Verdict::UndeclaredClientError {
            status,
            body: String::new(),
        }) {
            Landing::Indeterminate { reason, .. } => reason,
            _ => String::from("not indeterminate"),
        };
        for status in [401, 403, 419] {
            assert!(
                reason(status).contains("log the account's browser profile in again"),
                "{status}"
            );
        }
        assert!(!reason(409).contains("log"), "{}", reason(409));
        let why = match land(Verdict::Rejected {
            status: 401,
            body: String::new(),
        }) {
            Landing::Failed(v) => v["why"].as_str().unwrap_or_default().to_string(),
            _ => String::new(),
        };
        assert!(why.starts_with("the contract declares this status a definitive rejection; the platform may no longer"), "{why}");
    }

    /// The sign a worker sets an account aside by, read from what [`land`] makes of each verdict.
    #[test]
    fn only_a_login_that_ended_is_a_sign_to_set_the_account_aside() {
        let sign = |v: Verdict| match land(v) {
            Landing::Failed(d) => signed_out_sign(EventKind::Failed, &d),
            Landing::Indeterminate { details, .. } => {
                signed_out_sign(EventKind::Indeterminate, &details)
            }
            _ => None,
        };
        let body = String::new;
        for status in [401, 403, 419] {
            let undeclared = Verdict::UndeclaredClientError {
                status,
                body: body(),
            };
            let declared = Verdict::Rejected {
                status,
                body: body(),
            };
            for v in [undeclared, declared] {
                assert_eq!(
                    sign(v),
                    Some(format!("the create request was answered HTTP {status}"))
                );
            }
        }
        let not_shown = json!({ "signed_in_as": { "handle": "alice", "shown": null } });
        assert_eq!(
            sign(Verdict::NotActionable { report: not_shown }),
            Some("the compose page does not show the account logged in".into())
        );
        for v in [
            Verdict::UndeclaredClientError {
                status: 409,
                body: body(),
            },
            Verdict::Rejected {
                status: 422,
                body: body(),
            },
            Verdict::ServerError {
                status: 503,
                body: body(),
            },
            Verdict::NotActionable {
                report: json!({ "publish_control": {} }),
            },
        ] {
            assert_eq!(sign(v), None);
        }
        // Only a settle: a later event that carries a status (none does today) is no sign.
        assert_eq!(
            signed_out_sign(EventKind::Note, &json!({ "status": 401 })),
            None
        );
    }

    #[test]
    fn an_unpressed_page_says_why_from_its_report() {
        let why = |report: Value| match land(Verdict::NotActionable { report }) {
            Landing::Failed(v) => v["why"].as_str().unwrap_or_default().to_string(),
            _ => String::from("not failed"),
        };
        assert_eq!(
            why(json!({ "step": { "action": "verify", "ok": false } })),
            "a field does not show what was typed; nothing pressed"
        );
        assert_eq!(
            why(json!({ "step": { "action": "click", "ok": false } })),
            "a compose step or field could not be done; nothing pressed"
        );
        assert_eq!(
            why(json!({ "publish_control": { "ok": false } })),
            "publish control not actionable; nothing pressed"
        );
        assert_eq!(
            why(json!({ "error": "the compose page did not load" })),
            "the compose page could not be prepared; nothing pressed"
        );
        assert_eq!(
            why(json!({ "signed_in_as": { "handle": "alice", "shown": "anonymous" } })),
            "the compose page does not show the account logged in; nothing pressed"
        );
    }

    #[test]
    fn a_try_later_status_waits_what_retry_after_says_within_bounds() {
        let h = |v: &str| vec![("Retry-After".to_string(), v.to_string())];
        let at = |headers: &[(String, String)], statuses: &[u16], status: u16| match retry_later(
            status,
            headers,
            b"slow down",
            statuses,
            1_000_000,
        ) {
            Some(Verdict::RetryLater { retry_at, .. }) => Some(retry_at - 1_000_000),
            _ => None,
        };
        assert_eq!(at(&h("30"), &[429], 429), Some(30_000));
        assert_eq!(at(&[], &[429], 429), Some(RETRY_LATER_DEFAULT_MS));
        assert_eq!(at(&h("soon"), &[429], 429), Some(RETRY_LATER_DEFAULT_MS));
        assert_eq!(at(&h("0"), &[429], 429), Some(1000), "never at once");
        assert_eq!(at(&h("99999999"), &[429], 429), Some(RETRY_LATER_MAX_MS));
        // An HTTP date, 2 minutes after now.
        let date = httpdate::fmt_http_date(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_000_000 + 120_000),
        );
        assert_eq!(at(&h(&date), &[429], 429), Some(120_000));
        assert_eq!(at(&h("30"), &[], 429), None, "undeclared: not a try-later");
        assert_eq!(
            at(&h("30"), &[503], 503),
            None,
            "a 5xx never says nothing was made"
        );
        assert!(matches!(
            land(Verdict::RetryLater {
                status: 429,
                body: String::new(),
                retry_at: 5
            }),
            Landing::Failed(v) if v["retry_at"] == 5
        ));
    }

    #[test]
    fn statuses_land_per_the_table() {
        assert!(matches!(
            by_status(422, b"", &[422]),
            Some(Verdict::Rejected { .. })
        ));
        assert!(matches!(
            by_status(409, b"", &[422]),
            Some(Verdict::UndeclaredClientError { .. })
        ));
        assert!(matches!(
            by_status(500, b"", &[422]),
            Some(Verdict::ServerError { .. })
        ));
        assert!(by_status(201, b"", &[422]).is_none());
        assert!(
            matches!(
                by_status(500, b"", &[500]),
                Some(Verdict::ServerError { .. })
            ),
            "a 5xx is never a rejection, whatever the contract lists"
        );
        assert!(matches!(
            land(Verdict::Rejected {
                status: 422,
                body: String::new()
            }),
            Landing::Failed(_)
        ));
        assert!(matches!(
            land(Verdict::UndeclaredClientError {
                status: 409,
                body: String::new()
            }),
            Landing::Indeterminate { .. }
        ));
        assert!(matches!(
            land(Verdict::ReadbackMismatch {
                readback: Value::Null
            }),
            Landing::Parked { .. }
        ));
    }
}
