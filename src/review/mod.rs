//! `oncepost review`: a local web page for the people who own parked sends.
//!
//! ```text
//!  browser ──GET /<token>/...──► gate (token, constant time; security headers; time bound)
//!                                  ├─ list      view::list   ──► pages::list_page
//!                                  ├─ intent    view::detail ──► pages::intent_page
//!                                  ├─ evidence  by sha256, only if linked from the intent (evidence.rs)
//!                                  ├─ thumb     thumbs.rs (image crate, cached next to the evidence)
//!  browser ──POST (form)────────►  └─ actions   Origin/Referer + CSRF (constant time), then one store call
//!                                               each an append-only event with the person's name
//! ```
//!
//! Served on loopback unless `--bind` names another address; every request must carry the 256-bit session
//! token printed to the terminal as the first path segment, and gets the same bare 404 otherwise. Pages are
//! rendered on the server, escaped, load nothing external and run no script. `export.rs` writes the same
//! content as a static report.
pub mod error;
pub mod evidence;
pub mod export;
pub mod pages;
pub mod security;
pub mod thumbs;
pub mod view;

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Form, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine;
use serde::Deserialize;
use sha2::{Digest, Sha256};

pub use error::ReviewError;
pub use security::BindChoice;

use crate::identity::DeliveryKey;
use crate::store::{
    EventKind, NotFoundPolicy, ReconcileOutcome, Status, Store, StoreError, Timestamp,
};
use pages::{Flash, Mode};

/// Every request is answered within this bound (store calls included); a stuck one gets a 503.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest name, permalink, platform id and note accepted from a form.
const MAX_NAME: usize = 100;
const MAX_PERMALINK: usize = 2048;
const MAX_PLATFORM_ID: usize = 200;
const MAX_NOTE: usize = 4000;

/// How to run the review page.
#[derive(Debug, Clone)]
pub struct ReviewOptions {
    /// Where to listen (loopback unless chosen explicitly).
    pub bind: BindChoice,
    /// The name prefilled in the action forms.
    pub by: String,
    /// The data dir holding `evidence/`.
    pub data_dir: PathBuf,
}

/// What every handler shares (one `Clone` context, read-only after start).
struct Shared {
    /// The store every action writes to.
    store: Store,
    /// Where `evidence/` lives.
    data_dir: PathBuf,
    /// The session token: first path segment of every URL.
    token: String,
    /// `/<token>`: the prefix of every link.
    base: String,
    /// The CSRF token in every form.
    csrf: String,
    /// The name prefilled in forms.
    by: String,
    /// Which origins may POST.
    origins: security::OriginPolicy,
    /// The Content-Security-Policy header value.
    csp: HeaderValue,
}

/// Written by hand so the tokens never reach a log line.
impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("data_dir", &self.data_dir)
            .field("by", &self.by)
            .field("origins", &self.origins)
            .finish_non_exhaustive()
    }
}

type Ctx = Arc<Shared>;

/// A bound, not yet serving review page.
pub struct ReviewServer {
    listener: tokio::net::TcpListener,
    shared: Ctx,
    url: String,
}

/// Written by hand: the URL carries the session token and must not reach a log line.
impl std::fmt::Debug for ReviewServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReviewServer")
            .field("local_addr", &self.local_addr())
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

impl ReviewServer {
    /// Check the bind policy, bind, and mint the session and CSRF tokens.
    pub async fn bind(store: Store, opts: ReviewOptions) -> Result<ReviewServer, ReviewError> {
        let addr = opts.bind.resolve()?;
        let listener =
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| ReviewError::Bind {
                    addr: addr.to_string(),
                    message: e.to_string(),
                })?;
        let local = listener.local_addr().map_err(|e| ReviewError::Bind {
            addr: addr.to_string(),
            message: e.to_string(),
        })?;
        let origins = security::OriginPolicy::for_local(local);
        let token = security::random_token()?;
        let style_hash =
            base64::engine::general_purpose::STANDARD.encode(Sha256::digest(pages::STYLE));
        let csp = HeaderValue::from_str(&security::content_security_policy(&style_hash))
            .map_err(|e| ReviewError::Internal(format!("bad CSP header: {e}")))?;
        let url = format!("{}/{token}/", origins.primary());
        let shared = Arc::new(Shared {
            store,
            data_dir: opts.data_dir,
            base: format!("/{token}"),
            token,
            csrf: security::random_token()?,
            by: opts.by,
            origins,
            csp,
        });
        Ok(ReviewServer {
            listener,
            shared,
            url,
        })
    }

    /// The URL to open (with the session token): print it to the person's terminal only.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Serve until `shutdown` resolves.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ReviewError> {
        let app = router(self.shared);
        axum::serve(self.listener, app)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(|e| ReviewError::Internal(format!("server stopped: {e}")))
    }
}

fn router(shared: Ctx) -> Router {
    Router::new()
        .route("/{token}", get(list))
        .route("/{token}/", get(list))
        .route("/{token}/intent/{key}", get(intent))
        .route("/{token}/intent/{key}/evidence/{sha}", get(evidence_file))
        .route("/{token}/intent/{key}/thumb/{sha}", get(thumb))
        .route("/{token}/intent/{key}/found", post(found))
        .route("/{token}/intent/{key}/redeliver", post(redeliver))
        .route("/{token}/intent/{key}/keep", post(keep))
        .fallback(|| async { ReviewError::NotFound })
        .method_not_allowed_fallback(|| async {
            (
                StatusCode::METHOD_NOT_ALLOWED,
                Html(pages::message_page(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "Actions are POST forms on the review page.",
                )),
            )
        })
        .layer(middleware::from_fn_with_state(shared.clone(), gate))
        .with_state(shared)
}

/// Runs before routing, for every request: the session token must be the first path segment (else the same
/// bare 404 as an unknown route), the whole request is time-bounded, and every response, errors included,
/// carries the security headers.
async fn gate(State(s): State<Ctx>, req: Request, next: Next) -> Response {
    let first = req
        .uri()
        .path()
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("");
    let mut resp = if security::constant_time_eq(first.as_bytes(), s.token.as_bytes()) {
        match tokio::time::timeout(REQUEST_TIMEOUT, next.run(req)).await {
            Ok(r) => r,
            Err(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                Html(pages::message_page(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "This took too long. Reload the send's page to see whether your action was recorded before trying again.",
                )),
            )
                .into_response(),
        }
    } else {
        ReviewError::NotFound.into_response()
    };
    security::add_security_headers(resp.headers_mut(), &s.csp);
    resp
}

fn live_mode(s: &Shared) -> Mode<'_> {
    Mode::Live {
        base: &s.base,
        csrf: &s.csrf,
        by: &s.by,
    }
}

async fn list(
    State(s): State<Ctx>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Response, ReviewError> {
    let now = Timestamp::now();
    match view::Filter::from_query(&q) {
        Ok(filter) => {
            let v = view::list(&s.store, &s.data_dir, filter, now).await?;
            Ok(Html(pages::list_page(&live_mode(&s), &v, None)).into_response())
        }
        Err(e) => {
            let v = view::list(&s.store, &s.data_dir, view::Filter::default(), now).await?;
            let body = pages::list_page(&live_mode(&s), &v, Some(&e.public_message()));
            Ok((e.status(), Html(body)).into_response())
        }
    }
}

fn parse_key(key: &str) -> Result<DeliveryKey, ReviewError> {
    DeliveryKey::parse(key).ok_or(ReviewError::NotFound)
}

async fn intent(
    State(s): State<Ctx>,
    Path((_token, key)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Response, ReviewError> {
    let key = parse_key(&key)?;
    let d = view::detail(&s.store, &s.data_dir, &key, Timestamp::now()).await?;
    let flash = q.get("done").and_then(|d| done_message(d)).map(Flash::Done);
    Ok(Html(pages::intent_page(&live_mode(&s), &d, flash.as_ref())).into_response())
}

/// The fixed messages shown after a successful action (never text from the query string).
fn done_message(code: &str) -> Option<String> {
    Some(
        match code {
            "found" => "Recorded: published, confirmed by you.",
            "redelivered" => {
                "Redelivery authorized: this is the new send, pending. Nothing has been sent: it goes out \
                 when someone runs the publish command shown below."
            }
            "redelivered-again" => {
                "That send already had its redelivery (one per send): this is it, and nothing new was \
                 created."
            }
            "kept" => "Note recorded; the send stays parked.",
            "parked" => "Parked with your note.",
            _ => return None,
        }
        .to_string(),
    )
}

/// The linked evidence item with this hash, or 404 (unknown intent, not linked, not a hash).
async fn linked_item(
    s: &Shared,
    key: &str,
    sha: &str,
) -> Result<evidence::EvidenceItem, ReviewError> {
    let key = parse_key(key)?;
    let t = match s.store.timeline(&key).await {
        Err(StoreError::UnknownKey(_)) => return Err(ReviewError::NotFound),
        r => r?,
    };
    evidence::EvidenceLinks::of(&t)
        .find(sha)
        .cloned()
        .ok_or(ReviewError::NotFound)
}

async fn evidence_file(
    State(s): State<Ctx>,
    Path((_token, key, sha)): Path<(String, String, String)>,
) -> Result<Response, ReviewError> {
    let item = linked_item(&s, &key, &sha).await?;
    let bytes = evidence::read_verified(&s.data_dir, &item).map_err(|e| {
        tracing::warn!(sha256 = %item.sha256, problem = %e, "evidence not served");
        ReviewError::NotFound
    })?;
    // Redacted again and typed by kind: an excerpt is text/plain (with nosniff on every response), never HTML.
    Ok((
        [(header::CONTENT_TYPE, item.kind.served_media_type())],
        evidence::shown_bytes(item.kind, &bytes),
    )
        .into_response())
}

async fn thumb(
    State(s): State<Ctx>,
    Path((_token, key, sha)): Path<(String, String, String)>,
) -> Result<Response, ReviewError> {
    let item = linked_item(&s, &key, &sha).await?;
    if !item.kind.is_screenshot() {
        return Err(ReviewError::NotFound);
    }
    let png = evidence::read_verified(&s.data_dir, &item).map_err(|_| ReviewError::NotFound)?;
    let data_dir = s.data_dir.clone();
    // Decoding and scaling is CPU work: keep it off the async workers.
    let bytes = tokio::task::spawn_blocking(move || thumbs::thumbnail(&data_dir, &item, &png))
        .await
        .map_err(|e| ReviewError::Internal(format!("thumbnail task: {e}")))??;
    Ok(([(header::CONTENT_TYPE, "image/png")], bytes).into_response())
}

/// Fields of the action forms (all optional here, checked per action so the message can be clear).
#[derive(Debug, Default, Deserialize)]
struct ActionForm {
    csrf: Option<String>,
    by: Option<String>,
    permalink: Option<String>,
    platform_id: Option<String>,
    reason: Option<String>,
    note: Option<String>,
}

/// Origin/Referer, then the CSRF token in constant time. Both before anything else is looked at.
fn check_post(s: &Shared, headers: &HeaderMap, form: &ActionForm) -> Result<(), ReviewError> {
    s.origins.check(headers)?;
    let sent = form.csrf.as_deref().unwrap_or("");
    if !security::constant_time_eq(sent.as_bytes(), s.csrf.as_bytes()) {
        return Err(ReviewError::Forbidden);
    }
    Ok(())
}

/// A required single-line field: trimmed, not empty, not too long, no control characters.
fn line(value: &Option<String>, what: &str, max: usize) -> Result<String, ReviewError> {
    let v = value.as_deref().unwrap_or("").trim();
    if v.is_empty() {
        return Err(ReviewError::BadInput(format!("{what} is required.")));
    }
    if v.chars().count() > max {
        return Err(ReviewError::BadInput(format!(
            "{what} is longer than {max} characters."
        )));
    }
    if v.chars().any(char::is_control) {
        return Err(ReviewError::BadInput(format!(
            "{what} must be a single line of text."
        )));
    }
    Ok(v.to_string())
}

/// A required multi-line note.
fn note_text(value: &Option<String>, what: &str) -> Result<String, ReviewError> {
    let v = value.as_deref().unwrap_or("").trim();
    if v.is_empty() {
        return Err(ReviewError::BadInput(format!("{what} is required.")));
    }
    if v.chars().count() > MAX_NOTE {
        return Err(ReviewError::BadInput(format!(
            "{what} is longer than {MAX_NOTE} characters."
        )));
    }
    Ok(v.to_string())
}

/// The permalink a person pasted: an absolute http(s) URL.
fn permalink(value: &Option<String>) -> Result<String, ReviewError> {
    let p = line(value, "The permalink", MAX_PERMALINK)?;
    match url::Url::parse(&p) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(p),
        _ => Err(ReviewError::BadInput(format!(
            "{p:?} is not a permalink: paste the post's full address, starting with https:// or http://."
        ))),
    }
}

/// Render the intent page again with the refusal on top: nothing changed.
async fn refused(s: &Shared, key: &DeliveryKey, e: ReviewError) -> Response {
    let status = e.status();
    if status.is_server_error() || status == StatusCode::NOT_FOUND {
        return e.into_response();
    }
    match view::detail(&s.store, &s.data_dir, key, Timestamp::now()).await {
        Ok(d) => {
            let flash = Flash::Error(e.public_message());
            (
                status,
                Html(pages::intent_page(&live_mode(s), &d, Some(&flash))),
            )
                .into_response()
        }
        Err(read) => read.into_response(),
    }
}

fn after(s: &Shared, key: &DeliveryKey, done: &str) -> Response {
    Redirect::to(&format!("{}/intent/{}?done={done}", s.base, key.as_str())).into_response()
}

/// The checks every action POST passes before anything else: session token (already routed), CSRF token and
/// Origin/Referer, then a well-formed key.
fn accept_action(
    s: &Ctx,
    headers: &HeaderMap,
    form: &ActionForm,
    key: &str,
) -> Result<DeliveryKey, ReviewError> {
    check_post(s, headers, form)?;
    parse_key(key)
}

async fn found(
    State(s): State<Ctx>,
    Path((_token, key)): Path<(String, String)>,
    headers: HeaderMap,
    Form(form): Form<ActionForm>,
) -> Response {
    let key = match accept_action(&s, &headers, &form, &key) {
        Ok(k) => k,
        Err(e) => return e.into_response(),
    };
    let r = async {
        let by = line(&form.by, "Your name", MAX_NAME)?;
        let link = permalink(&form.permalink)?;
        let pid = match form.platform_id.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(_) => Some(line(&form.platform_id, "The platform id", MAX_PLATFORM_ID)?),
        };
        let now = Timestamp::now();
        match s.store.intent(&key).await?.state {
            // Indeterminate: the person's finding is a reconcile lookup they ran, recorded as theirs.
            Status::Indeterminate => {
                let ticket = s.store.start_reconcile(&key, &by, true, now).await?;
                let outcome = ReconcileOutcome::Found {
                    platform_id: pid.clone(),
                    permalink: Some(link.clone()),
                    evidence: serde_json::json!({ "found_by": by, "via": "review page" }),
                };
                s.store
                    .record_reconcile(&ticket, &outcome, NotFoundPolicy::Stay, now)
                    .await?;
            }
            _ => {
                s.store
                    .resolve(&key, &by, &link, pid.as_deref(), now)
                    .await?;
            }
        }
        Ok::<_, ReviewError>(())
    }
    .await;
    match r {
        Ok(()) => after(&s, &key, "found"),
        Err(e) => refused(&s, &key, e).await,
    }
}

async fn redeliver(
    State(s): State<Ctx>,
    Path((_token, key)): Path<(String, String)>,
    headers: HeaderMap,
    Form(form): Form<ActionForm>,
) -> Response {
    let key = match accept_action(&s, &headers, &form, &key) {
        Ok(k) => k,
        Err(e) => return e.into_response(),
    };
    let r = async {
        let by = line(&form.by, "Your name", MAX_NAME)?;
        let reason = note_text(&form.reason, "Why")?;
        Ok::<_, ReviewError>(
            s.store
                .redeliver(&key, &by, &reason, Timestamp::now())
                .await?,
        )
    }
    .await;
    match r {
        Ok(created) => after(
            &s,
            &created.intent.key,
            if created.created {
                "redelivered"
            } else {
                "redelivered-again"
            },
        ),
        Err(e) => refused(&s, &key, e).await,
    }
}

async fn keep(
    State(s): State<Ctx>,
    Path((_token, key)): Path<(String, String)>,
    headers: HeaderMap,
    Form(form): Form<ActionForm>,
) -> Response {
    let key = match accept_action(&s, &headers, &form, &key) {
        Ok(k) => k,
        Err(e) => return e.into_response(),
    };
    let r = async {
        let by = line(&form.by, "Your name", MAX_NAME)?;
        let note = note_text(&form.note, "The note")?;
        let now = Timestamp::now();
        match s.store.intent(&key).await?.state {
            Status::Parked => {
                s.store
                    .note(
                        &key,
                        EventKind::Note,
                        &by,
                        &note,
                        serde_json::json!({ "decision": "keep parked", "via": "review page" }),
                        now,
                    )
                    .await?;
                Ok::<_, ReviewError>("kept")
            }
            _ => {
                s.store.park(&key, &by, &note, now).await?;
                Ok("parked")
            }
        }
    }
    .await;
    match r {
        Ok(done) => after(&s, &key, done),
        Err(e) => refused(&s, &key, e).await,
    }
}
