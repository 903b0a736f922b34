//! The create request's transport: the harness sends it exactly once.
//!
//! Chromium re-sends a POST by itself when a reused or preconnected connection closes before response
//! headers, below DevTools (measured: one `fetch()` became two or three POSTs). So the one create request
//! a press causes is taken over: the browser-wide write guard, armed by the press, pauses the request
//! matching the contract's method and URL; [`build_wire_request`] rebuilds it from the paused copy
//! (headers as Chromium would send them, Cookie included; body from `post_data_entries`, refused when
//! incomplete); a `before_send` hook runs (the publish flow records the wire hash there); [`OneShotSender`]
//! sends it ONCE (HTTP/1.1, a fresh connection, no pool, no retries, redirects not followed, no
//! Accept-Encoding, bounded); and the page gets the response through `Fetch.fulfillRequest` (hop-by-hop and
//! encoding headers stripped, every Set-Cookie kept), so it continues as it would have. Every further
//! request matching the pattern is failed by the guard before it leaves and recorded.
//!
//! Behind the door (`door/`) Chromium has no route out, so nothing but this harness can send the create
//! request: the old `transport = "browser"` (Chromium sends it, and may re-send it: measured 2-3 arrivals
//! for one click) is refused when a contract is planned.
//!
//! "Not sent" needs proof, never the mere absence of a paused request: see [`dispatch`] and docs/states.md.
use std::future::Future;
use std::time::{Duration, Instant};

use base64::Engine;
use chromiumoxide::cdp::browser_protocol::fetch::{
    EventRequestPaused, FailRequestParams, FulfillRequestParams, HeaderEntry, RequestId,
};
use chromiumoxide::cdp::browser_protocol::network::ErrorReason;
use serde::Serialize;

use super::session::BrowserHandle;
use super::{BrowserError, Liveness};
use crate::failpoint::{self, FailPoint};
use crate::identity::WireRequestHash;
use crate::template::value_from_url;

/// Request headers never forwarded: hop-by-hop, or owned by the HTTP client.
const HOP_BY_HOP: &[&str] = &[
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "proxy-authorization",
    "proxy-connection",
    "proxy-authenticate",
    "accept-encoding",
];

/// Response headers never handed to the page (`fulfillRequest` sets its own framing and does not decode).
const RESPONSE_STRIP: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "content-encoding",
    "trailer",
    "upgrade",
];

/// How the create request's URL is recognised.
#[derive(Debug, Clone)]
pub enum UrlMatch {
    /// The URL without query and fragment equals this.
    Exact(String),
    /// The full URL matches this regex.
    Regex(regex::Regex),
}

/// What a request matcher sees of one request.
#[derive(Debug, Clone, Copy)]
pub struct RequestFacts<'a> {
    /// HTTP method as sent.
    pub method: &'a str,
    /// Full URL.
    pub url: &'a str,
    /// Request headers as Chromium would send them (names in any case).
    pub headers: &'a [(String, String)],
    /// The body, `None` when it is not known (Chromium gave no bytes for part of it): a body rule then
    /// never matches, so such a request is neither the create request nor a declared write (failed).
    pub body: Option<&'a [u8]>,
}

impl<'a> RequestFacts<'a> {
    /// A request known by its request line only: no headers, an empty body.
    pub fn line(method: &'a str, url: &'a str) -> RequestFacts<'a> {
        RequestFacts {
            method,
            url,
            headers: &[],
            body: Some(&[]),
        }
    }
}

/// A request by method, URL and optionally headers and body: the create request a press causes, or a write
/// the contract declares non-publishing (`non_publish_writes`).
#[derive(Debug, Clone)]
pub struct CreatePattern {
    /// Upper-case HTTP method.
    pub method: String,
    /// URL rule.
    pub url: UrlMatch,
    /// URLs (full) this pattern does not match even when `url` does (`not_url_regex`).
    pub exclude: Option<regex::Regex>,
    /// Headers that must be present, each with a value matching its regex (names compared ignoring case).
    pub headers: Vec<(String, regex::Regex)>,
    /// The body (read as UTF-8, invalid bytes replaced) must match this.
    pub body: Option<regex::Regex>,
    /// A body matching this is not matched even when everything else is (`not_body_regex`).
    pub not_body: Option<regex::Regex>,
    /// (The create request) It must carry the post typed into the page to be handed over: a request that
    /// matches and does not is never sent (`door/carried.rs`). Contracts say `create_carries_post = false`
    /// for a create that names a saved draft instead.
    pub carries_post: bool,
}

impl CreatePattern {
    /// A pattern by method and URL only.
    pub fn new(method: &str, url: UrlMatch) -> CreatePattern {
        CreatePattern {
            method: method.to_ascii_uppercase(),
            url,
            exclude: None,
            headers: Vec::new(),
            body: None,
            not_body: None,
            carries_post: true,
        }
    }

    /// The post id the URL of a request this pattern matched names: the `id` group of a `url_regex` (an
    /// app that allocates the post before it publishes it, such as WordPress's `posts/ID`). `None` when
    /// the pattern has no such group or the URL does not match.
    pub fn id_in(&self, url: &str) -> Option<String> {
        let UrlMatch::Regex(r) = &self.url else {
            return None;
        };
        r.captures(url)?
            .name("id")
            .map(|m| value_from_url(m.as_str()))
            .filter(|id| !id.is_empty())
    }

    /// Whether the pattern says anything about headers or the body (beyond method and URL).
    pub fn looks_inside(&self) -> bool {
        !self.headers.is_empty() || self.body.is_some() || self.not_body.is_some()
    }

    /// Whether a request matches (for the create pattern: is the create request).
    pub fn matches(&self, r: &RequestFacts<'_>) -> bool {
        if !r.method.eq_ignore_ascii_case(&self.method) || !self.matches_url(r.url) {
            return false;
        }
        let headers_ok = self.headers.iter().all(|(name, re)| {
            r.headers
                .iter()
                .any(|(k, v)| k.eq_ignore_ascii_case(name) && re.is_match(v))
        });
        if !headers_ok {
            return false;
        }
        if self.body.is_none() && self.not_body.is_none() {
            return true;
        }
        // An unknown body matches no body rule, positive or negative: fail closed either way.
        let Some(body) = r.body else {
            return false;
        };
        let text = String::from_utf8_lossy(body);
        self.body.as_ref().is_none_or(|re| re.is_match(&text))
            && !self.not_body.as_ref().is_some_and(|re| re.is_match(&text))
    }

    /// Whether a URL is this pattern's (`url` or `url_regex`, and not `not_url_regex`), whatever the
    /// method, headers and body: the socket door relays a WebSocket whose URL a rule names, and judges each
    /// of its messages by the whole rule.
    pub fn matches_url(&self, url: &str) -> bool {
        if self.exclude.as_ref().is_some_and(|re| re.is_match(url)) {
            return false;
        }
        match &self.url {
            UrlMatch::Exact(want) => {
                // Compared percent-decoded: a template encodes a field value one way (`'` as `%27`), a
                // page's encodeURIComponent another; both mean the same URL.
                let bare = url.split(['?', '#']).next().unwrap_or(url);
                let decode = |u: &str| {
                    percent_encoding::percent_decode_str(u)
                        .decode_utf8_lossy()
                        .into_owned()
                };
                bare == want.as_str() || decode(bare) == decode(want)
            }
            UrlMatch::Regex(re) => re.is_match(url),
        }
    }
}

/// The paused request's headers, as name/value pairs.
pub fn request_headers(ev: &EventRequestPaused) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    if let Some(obj) = ev.request.headers.inner().as_object() {
        for (k, v) in obj {
            let v = v
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| v.to_string());
            headers.push((k.clone(), v));
        }
    }
    headers
}

/// The paused request's body from `post_data_entries`. An entry without bytes (a multipart file part)
/// makes the body incomplete: an error, never a partial body.
pub fn request_body(ev: &EventRequestPaused) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    if let Some(entries) = &ev.request.post_data_entries {
        for (i, e) in entries.iter().enumerate() {
            let Some(b) = &e.bytes else {
                return Err(format!(
                    "body entry {i} has no bytes (a file part?): the body is incomplete"
                ));
            };
            let s: &str = b.as_ref();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| format!("body entry {i} is not base64: {e}"))?;
            body.extend_from_slice(&bytes);
        }
    } else if ev.request.has_post_data == Some(true) {
        return Err("the request has a body but Chromium gave none of it".into());
    }
    Ok(body)
}

/// Who sends the create request. Behind the door only the harness can: Chromium has no route out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportMode {
    /// Paused and sent once by the harness (the at-most-once guarantee).
    Harness,
}

/// The request as it goes on the wire (headers unredacted: redact before storing).
#[derive(Debug, Clone, Serialize)]
pub struct WireRequest {
    /// Method.
    pub method: String,
    /// URL.
    pub url: String,
    /// Headers, in order, hop-by-hop ones removed.
    pub headers: Vec<(String, String)>,
    /// The body, byte-exact.
    #[serde(skip)]
    pub body: Vec<u8>,
}

impl WireRequest {
    /// The wire hash recorded in history before the request is sent.
    pub fn hash(&self) -> WireRequestHash {
        WireRequestHash::of(&self.method, &self.url, &self.body)
    }
}

/// What pressing publish led to, as far as the create request is concerned.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum DispatchOutcome {
    /// A complete response came back.
    Response {
        /// Status code.
        status: u16,
        /// Response headers (unredacted).
        headers: Vec<(String, String)>,
        /// Body.
        #[serde(skip)]
        body: Vec<u8>,
    },
    /// Provably no byte of the create request left.
    NotSent {
        /// Why that is known.
        proof: String,
    },
    /// The create message of a contract that publishes over a WebSocket was written whole to the
    /// platform's socket (a socket has no response: its answer, if any, is one of the platform's messages,
    /// read by the success signal `socket_answer`).
    Delivered,
    /// Bytes may have left and no complete response came back.
    Unknown {
        /// What happened.
        reason: String,
    },
}

/// Bounds of one dispatch.
#[derive(Debug, Clone)]
pub struct TransportOptions {
    /// Who sends.
    pub mode: TransportMode,
    /// Whole request/response bound.
    pub timeout: Duration,
    /// TCP (and TLS) setup bound.
    pub connect_timeout: Duration,
    /// How long after the click the create request must be paused (else: hard error, nothing sent).
    pub pause_wait: Duration,
    /// Bound on the `before_send` hook.
    pub hook_timeout: Duration,
}

impl Default for TransportOptions {
    fn default() -> Self {
        TransportOptions {
            mode: TransportMode::Harness,
            timeout: Duration::from_secs(20),
            connect_timeout: Duration::from_secs(5),
            pause_wait: Duration::from_secs(5),
            hook_timeout: Duration::from_secs(2),
        }
    }
}

/// An HTTP client that sends one request once: HTTP/1.1, no idle pool (every request opens a fresh
/// connection, so the client's retry-on-reused-connection never applies), no retry policy, redirects not
/// followed, no proxy, no compression negotiated, TLS verified.
#[derive(Debug, Clone)]
pub struct OneShotSender {
    client: reqwest::Client,
}

impl OneShotSender {
    /// A sender with these bounds.
    pub fn new(timeout: Duration, connect_timeout: Duration) -> Result<Self, BrowserError> {
        let client = reqwest::Client::builder()
            .http1_only()
            // reqwest 0.13 wraps every client in a retry policy whose default resends a request the
            // server NACKed at the protocol level (HTTP/2 GOAWAY or REFUSED_STREAM, HTTP/3 timeouts),
            // up to 2 extra copies. None of those can happen over HTTP/1.1 today, but the create request
            // goes out once or not at all: a second copy is the duplicate post this whole tool exists to
            // prevent, so no future feature, version or default may add one. `never()` retries nothing.
            .retry(reqwest::retry::never())
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(timeout)
            .connect_timeout(connect_timeout)
            .build()
            .map_err(|e| BrowserError::Plan(format!("cannot build the HTTP client: {e}")))?;
        Ok(OneShotSender { client })
    }

    /// Send `req` exactly once. A connect error (TCP/TLS setup) is [`DispatchOutcome::NotSent`]; anything
    /// after the first byte that is not a complete response is [`DispatchOutcome::Unknown`].
    pub async fn send_once(&self, req: &WireRequest) -> DispatchOutcome {
        let method = match reqwest::Method::from_bytes(req.method.as_bytes()) {
            Ok(m) => m,
            Err(e) => {
                return DispatchOutcome::NotSent {
                    proof: format!("bad method {:?}: {e}", req.method),
                };
            }
        };
        let crash_after_send = failpoint::is_armed(FailPoint::RequestSent);
        let body = if crash_after_send {
            crash_once_body_is_taken(req.body.clone())
        } else {
            reqwest::Body::from(req.body.clone())
        };
        let mut b = self.client.request(method, &req.url).body(body);
        for (k, v) in &req.headers {
            b = b.header(k, v);
        }
        if crash_after_send {
            // A stream body would otherwise go out chunked: keep the wire bytes what they always are.
            b = b.header("content-length", req.body.len().to_string());
        }
        let resp = match b.send().await {
            Ok(r) => r,
            Err(e) => {
                if crash_after_send {
                    failpoint::hit(FailPoint::RequestSent);
                }
                return classify(&e);
            }
        };
        if crash_after_send {
            // The response head arrived before the timer fired: still crash before reading it.
            failpoint::hit(FailPoint::RequestSent);
        }
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        match resp.bytes().await {
            Ok(body) => DispatchOutcome::Response {
                status,
                headers,
                body: body.to_vec(),
            },
            Err(e) => DispatchOutcome::Unknown {
                reason: format!("status {status} arrived but the body did not complete: {e}"),
            },
        }
    }
}

/// The request body as a one-chunk stream that, once the connection has taken the chunk, lets the bytes
/// reach the socket (50 ms) and then fires [`FailPoint::RequestSent`]: a crash with the request out and
/// its response unread.
fn crash_once_body_is_taken(body: Vec<u8>) -> reqwest::Body {
    let chunk = futures::stream::once(async move {
        tokio::spawn(async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            failpoint::hit(FailPoint::RequestSent);
        });
        Ok::<_, std::io::Error>(body)
    });
    reqwest::Body::wrap_stream(chunk)
}

fn classify(e: &reqwest::Error) -> DispatchOutcome {
    // reqwest's Display hides the cause chain; keep it, it names the socket error.
    let mut reason = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        reason.push_str(": ");
        reason.push_str(&s.to_string());
        src = s.source();
    }
    if e.is_connect() {
        DispatchOutcome::NotSent {
            proof: format!("connection setup failed before any request byte: {reason}"),
        }
    } else if e.is_builder() {
        DispatchOutcome::NotSent {
            proof: format!("request could not be built: {reason}"),
        }
    } else {
        DispatchOutcome::Unknown { reason }
    }
}

/// Rebuild the wire request from the paused one: Chromium's headers minus hop-by-hop ones (the Cookie
/// header is exactly what Chromium would send, HttpOnly included), the body from `post_data_entries`.
/// An entry without bytes (a multipart file part) makes the body incomplete: refused.
pub fn build_wire_request(ev: &EventRequestPaused) -> Result<WireRequest, String> {
    let headers = request_headers(ev)
        .into_iter()
        .filter(|(k, _)| !HOP_BY_HOP.contains(&k.to_ascii_lowercase().as_str()))
        .collect();
    let body = request_body(ev)?;
    Ok(WireRequest {
        method: ev.request.method.clone(),
        url: ev.request.url.clone(),
        headers,
        body,
    })
}

/// One entry of the write log (stored as evidence after redaction).
#[derive(Debug, Clone, Serialize)]
pub struct WriteLogEntry {
    /// Milliseconds since the press.
    pub at_ms: u64,
    /// What happened.
    pub what: String,
    /// Structured details (headers unredacted here).
    pub details: serde_json::Value,
}

/// The answer to the paused request that the page will see.
enum PageAnswer {
    Fulfill(u16, Vec<(String, String)>, Vec<u8>),
    Fail(ErrorReason),
}

/// Carry one dispatch through: wait for the paused create request, then send it (harness) or let the
/// browser send it (browser), answering the page in every case. `paused` comes from the armed guard.
pub(crate) async fn dispatch<H, Fut>(
    guard: &super::WriteGuard,
    browser: &BrowserHandle,
    live: &Liveness,
    paused: tokio::sync::oneshot::Receiver<EventRequestPaused>,
    opts: &TransportOptions,
    hook: H,
    log: &mut Vec<WriteLogEntry>,
) -> DispatchOutcome
where
    H: FnOnce(WireRequest) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let mut note = noter(log);
    let ev = match handed_over(
        paused,
        opts,
        || guard.disarm(),
        guard,
        "create request",
        &mut note,
    )
    .await
    {
        Ok(ev) => ev,
        Err(outcome) => return outcome,
    };
    note(
        "paused",
        serde_json::json!({
            "method": ev.request.method, "url": ev.request.url,
            "resource_type": format!("{:?}", ev.resource_type),
            "headers": ev.request.headers.inner(),
        }),
    );
    let wire = match build_wire_request(&ev) {
        Ok(w) => w,
        Err(why) => {
            fail_page(browser, live, &ev, ErrorReason::Aborted).await;
            note("refused_incomplete", serde_json::json!({ "why": why }));
            return DispatchOutcome::NotSent {
                proof: format!("not sent: {why}"),
            };
        }
    };
    let hash = wire.hash();
    let hook_result = tokio::time::timeout(opts.hook_timeout, hook(wire.clone())).await;
    if let Err(why) = hook_result
        .map_err(|_| format!("before_send hook took over {:?}", opts.hook_timeout))
        .and_then(|r| r)
    {
        fail_page(browser, live, &ev, ErrorReason::Aborted).await;
        note("hook_refused", serde_json::json!({ "why": why }));
        return DispatchOutcome::NotSent {
            proof: format!("the request was failed unsent: {why}"),
        };
    }
    note(
        "sending",
        serde_json::json!({
            "mode": opts.mode, "method": wire.method, "url": wire.url, "headers": wire.headers,
            "body_bytes": wire.body.len(), "wire_request_hash": hash.as_str(),
        }),
    );
    let outcome = match opts.mode {
        TransportMode::Harness => {
            let sender = match OneShotSender::new(opts.timeout, opts.connect_timeout) {
                Ok(s) => s,
                Err(e) => {
                    fail_page(browser, live, &ev, ErrorReason::Aborted).await;
                    return DispatchOutcome::NotSent {
                        proof: e.to_string(),
                    };
                }
            };
            let outcome = sender.send_once(&wire).await;
            // A redirect in the answer: the browser follows it with a GET of the platform's choosing.
            if let DispatchOutcome::Response {
                status, headers, ..
            } = &outcome
                && (300..400).contains(status)
                && let Some((_, location)) = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("location"))
            {
                guard.expect_ordered_redirect(&wire.url, location);
            }
            let answer = match &outcome {
                DispatchOutcome::Response {
                    status,
                    headers,
                    body,
                } => PageAnswer::Fulfill(*status, headers.clone(), body.clone()),
                DispatchOutcome::NotSent { .. } => PageAnswer::Fail(ErrorReason::ConnectionRefused),
                // (`send_once` never gives it: only a socket's message is delivered.)
                DispatchOutcome::Unknown { .. } | DispatchOutcome::Delivered => {
                    PageAnswer::Fail(ErrorReason::ConnectionClosed)
                }
            };
            answer_page(browser, live, &ev, answer).await;
            outcome
        }
    };
    let summary = match &outcome {
        DispatchOutcome::Response {
            status,
            headers,
            body,
        } => serde_json::json!({
            "outcome": "response", "status": status, "headers": headers, "body_bytes": body.len(),
            "body": String::from_utf8_lossy(&body[..body.len().min(4096)]),
        }),
        other => serde_json::to_value(other).unwrap_or_default(),
    };
    note("outcome", summary);
    outcome
}

/// The write log's pen: each entry stamped with the milliseconds since the press.
fn noter(log: &mut Vec<WriteLogEntry>) -> impl FnMut(&str, serde_json::Value) + '_ {
    let t0 = Instant::now();
    move |what: &str, details: serde_json::Value| {
        log.push(WriteLogEntry {
            at_ms: t0.elapsed().as_millis() as u64,
            what: what.into(),
            details,
        })
    }
}

/// Wait (bounded by `pause_wait`) for what the armed press hands over. Nothing within the bound: the slot is
/// taken back (`disarm`; from then on every match is refused before it leaves) and the outcome is "not
/// sent" on the door's proof, or in doubt without it.
async fn handed_over<T>(
    mut slot: tokio::sync::oneshot::Receiver<T>,
    opts: &TransportOptions,
    disarm: impl FnOnce() -> bool,
    guard: &super::WriteGuard,
    what: &str,
    note: &mut impl FnMut(&str, serde_json::Value),
) -> Result<T, DispatchOutcome> {
    // `what`: "create request" or "create message".
    if let Ok(Ok(v)) = tokio::time::timeout(opts.pause_wait, &mut slot).await {
        return Ok(v);
    }
    // Nothing handed over within the bound: take the slot back so a late one is refused.
    let (lead, nothing) = if disarm() {
        // The absence of a handover is not proof by itself: a page can write by a channel Fetch never
        // sees. The proof is the door's ledger since the press (see `not_sent_proof`).
        (
            format!(
                "no {} matching the {what} reached oncepost within {} ms of pressing, and from now on \
                 any is failed before it leaves",
                if what.ends_with("message") {
                    "message"
                } else {
                    "request"
                },
                opts.pause_wait.as_millis()
            ),
            format!(
                "the {what} never reached oncepost within {} ms of pressing",
                opts.pause_wait.as_millis()
            ),
        )
    } else {
        // Lost the race: one was handed over just now and is on its way.
        if let Ok(Ok(v)) = tokio::time::timeout(Duration::from_secs(1), &mut slot).await {
            return Ok(v);
        }
        // The guard could not hand it over, so it refused it before it left.
        (
            format!("the {what} was never handed over (the guard failed it)"),
            format!("the {what} was never handed over"),
        )
    };
    Err(match guard.not_sent_proof() {
        Ok(door) => {
            let proof = format!("{lead}; {door}");
            note("not_paused", serde_json::json!({ "proof": proof }));
            DispatchOutcome::NotSent { proof }
        }
        Err(doubt) => {
            let reason = format!("{nothing}, but {doubt}");
            note(
                "not_paused_in_doubt",
                serde_json::json!({ "reason": reason }),
            );
            DispatchOutcome::Unknown { reason }
        }
    })
}

/// Carry one dispatch of a contract that publishes over a WebSocket: wait for the create message the armed
/// press's page sends on the relayed socket (`door/socket.rs`), record it (`hook`, before any byte of it
/// leaves), then have the relay write it ONCE to the platform's connection. What the write did decides:
/// whole, [`DispatchOutcome::Delivered`]; no byte taken, not sent; part of it, unknown.
pub(crate) async fn dispatch_socket<H, Fut>(
    guard: &super::WriteGuard,
    handover: tokio::sync::oneshot::Receiver<crate::browser::door::socket::Handover>,
    opts: &TransportOptions,
    hook: H,
    log: &mut Vec<WriteLogEntry>,
) -> DispatchOutcome
where
    H: FnOnce(WireRequest) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    use crate::browser::door::socket::Sent;
    let mut note = noter(log);
    let h = match handed_over(
        handover,
        opts,
        || guard.disarm_socket(),
        guard,
        "create message",
        &mut note,
    )
    .await
    {
        Ok(h) => h,
        Err(outcome) => return outcome,
    };
    let wire = h.wire.clone();
    let hash = wire.hash();
    note(
        "paused",
        serde_json::json!({
            "method": wire.method, "url": wire.url, "resource_type": "WebSocket",
            "headers": wire.headers,
        }),
    );
    let hook_result = tokio::time::timeout(opts.hook_timeout, hook(wire.clone())).await;
    if let Err(why) = hook_result
        .map_err(|_| format!("before_send hook took over {:?}", opts.hook_timeout))
        .and_then(|r| r)
    {
        let _ = h.decide(false).await;
        note("hook_refused", serde_json::json!({ "why": why }));
        return DispatchOutcome::NotSent {
            proof: format!("the message was never sent: {why}"),
        };
    }
    note(
        "sending",
        serde_json::json!({
            "mode": opts.mode, "method": wire.method, "url": wire.url,
            "body_bytes": wire.body.len(), "wire_request_hash": hash.as_str(),
        }),
    );
    let outcome = match h.decide(true).await {
        Sent::Whole => DispatchOutcome::Delivered,
        Sent::Nothing(why) => DispatchOutcome::NotSent {
            proof: format!("the platform's socket took no byte of the create message: {why}"),
        },
        Sent::Partly(why) => DispatchOutcome::Unknown {
            reason: format!("the create message may have reached the platform in part: {why}"),
        },
    };
    let summary = match &outcome {
        DispatchOutcome::Delivered => serde_json::json!({
            "outcome": "delivered",
            "body": String::from_utf8_lossy(&wire.body[..wire.body.len().min(4096)]),
        }),
        other => serde_json::to_value(other).unwrap_or_default(),
    };
    note("outcome", summary);
    outcome
}

async fn fail_page(
    browser: &BrowserHandle,
    live: &Liveness,
    ev: &EventRequestPaused,
    reason: ErrorReason,
) {
    answer_page(browser, live, ev, PageAnswer::Fail(reason)).await;
}

async fn answer_page(
    browser: &BrowserHandle,
    live: &Liveness,
    ev: &EventRequestPaused,
    answer: PageAnswer,
) {
    match answer {
        PageAnswer::Fail(reason) => {
            let _ = live
                .call(
                    "fail the paused create request",
                    browser.execute(FailRequestParams::new(ev.request_id.clone(), reason)),
                )
                .await;
        }
        PageAnswer::Fulfill(status, headers, body) => {
            let params = fulfill_params(ev.request_id.clone(), status, &headers, &body);
            let _ = live
                .call("hand the response to the page", browser.execute(params))
                .await;
        }
    }
}

/// `Fetch.fulfillRequest` for a response oncepost fetched itself: hop-by-hop and encoding headers stripped
/// (the body is decoded and Chromium frames it), every other header one entry per value.
pub(crate) fn fulfill_params(
    id: RequestId,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> FulfillRequestParams {
    let entries: Vec<HeaderEntry> = headers
        .iter()
        .filter(|(k, _)| !RESPONSE_STRIP.contains(&k.to_ascii_lowercase().as_str()))
        .map(|(k, v)| HeaderEntry::new(k.clone(), v.clone()))
        .collect();
    let mut params = FulfillRequestParams::new(id, status as i64);
    params.response_headers = Some(entries);
    params.body = Some(
        base64::engine::general_purpose::STANDARD
            .encode(body)
            .into(),
    );
    params
}
