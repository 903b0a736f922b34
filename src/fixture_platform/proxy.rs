//! The conformance proxy (`oncepost fixtures proxy`): a fault-injecting reverse proxy on 127.0.0.1 in front
//! of any site, so an author can give their own platform Fixturebook's create faults and count, on the
//! server side of the browser, every write that reached the site (docs/conform.md).
//!
//! ```text
//!  browser / client ──▶ 127.0.0.1:P ──▶ control (/__oncepost_proxy/...)   answered here, never forwarded
//!                                  └──▶ read (GET/HEAD/OPTIONS)             forwarded as is
//!                                  └──▶ write not matching --match          forwarded as is, counted
//!                                  └──▶ write matching --match              the fault: forwarded (counted)
//!                                                                           then 500 / dropped / delayed, or
//!                                                                           RST after the head (not forwarded);
//!                                                                           an identical re-send on another
//!                                                                           connection soon after: 409
//! ```
//!
//! Only the upstream's origin is used (scheme, host, port): a request for `/a/b?c` goes to
//! `UPSTREAM_ORIGIN/a/b?c`. `Host` is the upstream's (`X-Forwarded-Host`/`-Proto` say the proxy's); `Origin` and `Referer` naming the proxy are rewritten to
//! the upstream; in answers, a `Location` naming the upstream's origin is rewritten to the proxy's, and
//! `Set-Cookie` loses its `Domain` attribute (so the cookie belongs to the proxy's host). Bodies are not
//! rewritten, nor WebSocket upgrades proxied.
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use super::conn::{ConnAction, ConnControl, HEADER_READ_TIMEOUT, Socket};
use super::fault::{DEFAULT_DELAY_MS, MAX_DELAY_MS};
use super::{FixtureError, SHUTDOWN_GRACE};

/// The control endpoint's path prefix: nothing under it is forwarded.
pub const CONTROL_PREFIX: &str = "/__oncepost_proxy/";

/// Within this long after an identical write ended (or while it is still in flight), the same write on
/// another connection is taken for the browser's own re-send and refused with 409 (unless re-sends are let
/// through).
pub const RESEND_WINDOW: Duration = Duration::from_secs(3);

/// Largest request or upstream answer body the proxy holds.
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// Bound on one upstream exchange.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(60);

/// What the proxy does with a matching write. The spellings are Fixturebook's [`super::FaultMode`]'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ProxyFaultMode {
    /// Forward and relay the upstream's answer.
    #[default]
    Normal,
    /// Forward (the upstream commits), then answer 500 instead of the upstream's answer.
    #[serde(rename = "commit-then-500")]
    #[value(name = "commit-then-500")]
    CommitThen500,
    /// Forward, then close the connection without a single response byte.
    CommitThenDrop,
    /// Forward, then hold the upstream's answer `delay_ms`.
    CommitThenDelay,
    /// Reset the connection (RST) right after the request head; never forwarded.
    ResetBeforeRead,
}

impl ProxyFaultMode {
    /// Every mode, in documentation order.
    pub const ALL: [ProxyFaultMode; 5] = [
        ProxyFaultMode::Normal,
        ProxyFaultMode::CommitThen500,
        ProxyFaultMode::CommitThenDrop,
        ProxyFaultMode::CommitThenDelay,
        ProxyFaultMode::ResetBeforeRead,
    ];

    /// The one spelling (CLI, JSON, docs).
    pub fn label(self) -> &'static str {
        match self {
            ProxyFaultMode::Normal => "normal",
            ProxyFaultMode::CommitThen500 => "commit-then-500",
            ProxyFaultMode::CommitThenDrop => "commit-then-drop",
            ProxyFaultMode::CommitThenDelay => "commit-then-delay",
            ProxyFaultMode::ResetBeforeRead => "reset-before-read",
        }
    }
}

impl std::fmt::Display for ProxyFaultMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// The active fault of the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyFault {
    /// What a matching write gets.
    pub mode: ProxyFaultMode,
    /// How long `commit-then-delay` holds the answer (capped at [`MAX_DELAY_MS`]).
    #[serde(default = "default_delay")]
    pub delay_ms: u64,
}

fn default_delay() -> u64 {
    DEFAULT_DELAY_MS
}

impl ProxyFault {
    /// `mode` with the default delay.
    pub fn new(mode: ProxyFaultMode) -> Self {
        ProxyFault {
            mode,
            delay_ms: DEFAULT_DELAY_MS,
        }
    }

    /// The same fault with `delay_ms` (capped).
    #[must_use]
    pub fn with_delay_ms(self, delay_ms: u64) -> Self {
        ProxyFault {
            delay_ms: delay_ms.min(MAX_DELAY_MS),
            ..self
        }
    }
}

/// How to start a proxy.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// The site: only its origin is used.
    pub upstream: url::Url,
    /// Port on 127.0.0.1 (0: any free one).
    pub port: u16,
    /// The initial fault.
    pub fault: ProxyFault,
    /// Writes whose `"METHOD UPSTREAM_URL"` matches get the fault (`None`: every write).
    pub matcher: Option<regex::Regex>,
    /// Forward the browser's own re-sends (identical writes on a new connection soon after) instead of
    /// refusing them with 409.
    pub let_resends_through: bool,
    /// In-process only (`oncepost conform`): of the writes `matcher` lets through, only those this says
    /// yes to get the fault, judged on the whole write (headers and body: the body is then read before
    /// the fault acts, also for `reset-before-read`).
    pub fault_only: Option<FaultFilter>,
}

/// A predicate over a whole write (see [`ProxyConfig::fault_only`]).
#[derive(Clone)]
pub struct FaultFilter(pub Arc<dyn Fn(&ProxyWrite) -> bool + Send + Sync>);

impl std::fmt::Debug for FaultFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FaultFilter(..)")
    }
}

impl ProxyConfig {
    /// A proxy in front of `upstream`, any port, fault `normal`, every write matching, re-sends refused.
    pub fn new(upstream: url::Url) -> Self {
        ProxyConfig {
            upstream,
            port: 0,
            fault: ProxyFault::new(ProxyFaultMode::Normal),
            matcher: None,
            let_resends_through: false,
            fault_only: None,
        }
    }
}

/// One write the proxy saw (not a control call).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProxyWrite {
    /// HTTP method.
    pub method: String,
    /// The upstream URL it was (or would have been) sent to.
    pub url: String,
    /// Whether it matched `--match` (and so got the fault).
    pub matched: bool,
    /// What happened: `forwarded`, `reset` (never forwarded) or `refused-resend` (409, never forwarded).
    pub outcome: String,
    /// Its headers (not in the stats: they may carry cookies).
    #[serde(skip)]
    pub headers: Vec<(String, String)>,
    /// Its body, `None` when it was reset before the body was read (not in the stats).
    #[serde(skip)]
    pub body: Option<Bytes>,
}

impl ProxyWrite {
    /// The write as a request matcher sees it, at `url` (the proxy's own address for it).
    pub fn facts<'a>(&'a self, url: &'a str) -> crate::browser::RequestFacts<'a> {
        crate::browser::RequestFacts {
            method: &self.method,
            url,
            headers: &self.headers,
            body: self.body.as_deref(),
        }
    }
}

/// The proxy's counters, as `GET /__oncepost_proxy/stats` answers them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProxyStats {
    /// Writes handed to the upstream, by `"METHOD /path"`.
    pub forwarded_writes: BTreeMap<String, u64>,
    /// Sum of [`ProxyStats::forwarded_writes`].
    pub forwarded_writes_total: u64,
    /// Writes that matched `--match` (each got the fault active when it arrived, `normal` included).
    pub matched_faults: u64,
    /// Identical writes on a new connection within [`RESEND_WINDOW`], refused with 409 (never forwarded).
    pub refused_resends: u64,
    /// Writes reset after the head (`reset-before-read`, never forwarded).
    pub resets: u64,
    /// Reads forwarded.
    pub reads: u64,
    /// Every write, in arrival order.
    pub writes: Vec<ProxyWrite>,
}

struct Recent {
    conn: u64,
    /// `None` while in flight.
    ended: Option<Instant>,
}

struct ProxyShared {
    upstream_origin: String,
    proxy_origin: String,
    fault: Mutex<ProxyFault>,
    matcher: Option<regex::Regex>,
    fault_only: Option<FaultFilter>,
    let_resends_through: bool,
    stats: Mutex<ProxyStats>,
    recent: Mutex<HashMap<[u8; 32], Recent>>,
    client: reqwest::Client,
}

impl ProxyShared {
    fn stats(&self) -> std::sync::MutexGuard<'_, ProxyStats> {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }
    fn fault(&self) -> ProxyFault {
        *self.fault.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running proxy. Dropping it without [`RunningProxy::shutdown`] aborts its tasks.
pub struct RunningProxy {
    addr: SocketAddr,
    shared: Arc<ProxyShared>,
    shutdown: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

/// Start a proxy on 127.0.0.1.
pub async fn start(config: ProxyConfig) -> Result<RunningProxy, FixtureError> {
    let upstream_origin = match config.upstream.scheme() {
        "http" | "https" if config.upstream.host().is_some() => {
            config.upstream.origin().ascii_serialization()
        }
        other => {
            return Err(FixtureError::Io {
                path: config.upstream.as_str().into(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("the upstream must be an http(s) URL with a host, not {other:?}"),
                ),
            });
        }
    };
    let listener = TcpListener::bind(("127.0.0.1", config.port))
        .await
        .map_err(|source| FixtureError::Bind {
            port: config.port,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| FixtureError::Bind {
        port: config.port,
        source,
    })?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_gzip()
        .no_deflate()
        .timeout(UPSTREAM_TIMEOUT)
        .build()
        .map_err(|e| FixtureError::Io {
            path: "reqwest client".into(),
            source: std::io::Error::other(e.to_string()),
        })?;
    let shared = Arc::new(ProxyShared {
        upstream_origin,
        proxy_origin: format!("http://{addr}"),
        fault: Mutex::new(config.fault),
        matcher: config.matcher,
        fault_only: config.fault_only,
        let_resends_through: config.let_resends_through,
        stats: Mutex::new(ProxyStats::default()),
        recent: Mutex::new(HashMap::new()),
        client,
    });
    let (tx, rx) = watch::channel(false);
    let task = tokio::spawn(accept_loop(listener, shared.clone(), rx));
    Ok(RunningProxy {
        addr,
        shared,
        shutdown: tx,
        task: Some(task),
    })
}

impl RunningProxy {
    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        self.shared.proxy_origin.clone()
    }
    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// The upstream's origin.
    pub fn upstream_origin(&self) -> &str {
        &self.shared.upstream_origin
    }
    /// A snapshot of the counters.
    pub fn stats(&self) -> ProxyStats {
        self.shared.stats().clone()
    }
    /// The active fault.
    pub fn fault(&self) -> ProxyFault {
        self.shared.fault()
    }
    /// Change the fault for writes arriving from now on.
    pub fn set_fault(&self, fault: ProxyFault) {
        *self
            .shared
            .fault
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = fault;
    }
    /// Stop accepting, let open connections finish (bounded by [`SHUTDOWN_GRACE`]).
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

impl Drop for RunningProxy {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<ProxyShared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut tasks = JoinSet::new();
    let next_conn = AtomicU64::new(1);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let id = next_conn.fetch_add(1, Ordering::Relaxed);
                    tasks.spawn(serve_connection(stream, id, shared.clone(), shutdown.clone()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "proxy accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.changed() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    drop(listener);
    let all = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE + Duration::from_secs(1), all)
        .await
        .is_err()
    {
        tasks.abort_all();
    }
}

async fn serve_connection(
    stream: TcpStream,
    conn_id: u64,
    shared: Arc<ProxyShared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let reset = Arc::new(AtomicBool::new(false));
    let socket = Socket::new(stream, reset.clone());
    let control = Arc::new(ConnControl::default());
    let svc_control = control.clone();
    let service = service_fn(move |req| {
        let shared = shared.clone();
        let control = svc_control.clone();
        async move { Ok::<_, std::convert::Infallible>(handle(req, conn_id, shared, control).await) }
    });
    let conn = http1::Builder::new()
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(socket), service);
    tokio::pin!(conn);
    if *shutdown.borrow() {
        return;
    }
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                tracing::debug!(error = %e, "proxy connection ended with an error");
            }
        }
        action = control.ended() => {
            if action == ConnAction::Reset {
                reset.store(true, Ordering::Relaxed);
            }
        }
        _ = shutdown.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn.as_mut()).await;
        }
    }
}

type Resp = Response<Full<Bytes>>;

fn json(status: StatusCode, v: &serde_json::Value) -> Resp {
    let mut r = Response::new(Full::new(Bytes::from(v.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

async fn handle(
    req: Request<Incoming>,
    conn_id: u64,
    shared: Arc<ProxyShared>,
    control: Arc<ConnControl>,
) -> Resp {
    let path = req.uri().path().to_owned();
    if let Some(rest) = path.strip_prefix(CONTROL_PREFIX) {
        return control_call(req, rest.to_owned(), &shared).await;
    }
    let method = req.method().clone();
    let path_and_query = req
        .uri()
        .path_and_query()
        .map_or_else(|| path.clone(), |p| p.as_str().to_owned());
    let url = format!("{}{}", shared.upstream_origin, path_and_query);
    let is_write = !matches!(method, Method::GET | Method::HEAD | Method::OPTIONS);
    if !is_write {
        shared.stats().reads += 1;
        let (parts, body) = req.into_parts();
        let body = Limited::new(body, MAX_BODY_BYTES)
            .collect()
            .await
            .map(http_body_util::Collected::to_bytes)
            .unwrap_or_default();
        return forward(&shared, &parts, body).await;
    }
    let fault = shared.fault();
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let (parts, body_stream) = req.into_parts();
    let mut unread = Some(body_stream);
    let mut matched = shared
        .matcher
        .as_ref()
        .is_none_or(|re| re.is_match(&format!("{method} {url}")));
    // A filter judges the whole write: its body is read first.
    let mut read_first = None;
    if let Some(filter) = &shared.fault_only
        && let Some(stream) = unread.take()
    {
        let body = match Limited::new(stream, MAX_BODY_BYTES).collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => {
                return json(
                    StatusCode::BAD_REQUEST,
                    &serde_json::json!({"error": format!("proxy could not read the request body: {e}")}),
                );
            }
        };
        let seen = ProxyWrite {
            method: method.to_string(),
            url: url.clone(),
            matched,
            outcome: String::new(),
            headers: headers.clone(),
            body: Some(body.clone()),
        };
        matched = matched && (filter.0)(&seen);
        read_first = Some(body);
    }
    let record = |outcome: &str, body: Option<&Bytes>| ProxyWrite {
        method: method.to_string(),
        url: url.clone(),
        matched,
        outcome: outcome.to_owned(),
        headers: headers.clone(),
        body: body.cloned(),
    };
    if matched {
        shared.stats().matched_faults += 1;
        if fault.mode == ProxyFaultMode::ResetBeforeRead {
            {
                let mut s = shared.stats();
                s.resets += 1;
                s.writes.push(record("reset", read_first.as_ref()));
            }
            control.end(ConnAction::Reset);
            return std::future::pending().await;
        }
    }
    let body = match (read_first, unread) {
        (Some(b), _) => b,
        (None, Some(stream)) => match Limited::new(stream, MAX_BODY_BYTES).collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => {
                return json(
                    StatusCode::BAD_REQUEST,
                    &serde_json::json!({"error": format!("proxy could not read the request body: {e}")}),
                );
            }
        },
        (None, None) => Bytes::new(),
    };
    // The browser's own re-send: the same write (method, URL, body) on another connection, while the first
    // is in flight or soon after it ended.
    let identity: [u8; 32] = {
        let mut h = Sha256::new();
        h.update(method.as_str().as_bytes());
        h.update([0]);
        h.update(path_and_query.as_bytes());
        h.update([0]);
        h.update(&body);
        h.finalize().into()
    };
    if matched {
        let mut recent = shared.recent.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        recent.retain(|_, r| {
            r.ended
                .is_none_or(|t| now.duration_since(t) < RESEND_WINDOW)
        });
        let resend = recent.get(&identity).is_some_and(|r| r.conn != conn_id);
        if resend && !shared.let_resends_through {
            drop(recent);
            let mut s = shared.stats();
            s.refused_resends += 1;
            s.writes.push(record("refused-resend", Some(&body)));
            return json(
                StatusCode::CONFLICT,
                &serde_json::json!({"error": "oncepost proxy: an identical write arrived on another connection moments ago; refused as a re-send (--let-resends-through forwards it)"}),
            );
        }
        recent.insert(
            identity,
            Recent {
                conn: conn_id,
                ended: None,
            },
        );
    }
    {
        let mut s = shared.stats();
        *s.forwarded_writes
            .entry(format!("{method} {}", parts.uri.path()))
            .or_default() += 1;
        s.forwarded_writes_total += 1;
        s.writes.push(record("forwarded", Some(&body)));
    }
    let upstream = forward(&shared, &parts, body).await;
    let end = |shared: &ProxyShared| {
        if matched
            && let Some(r) = shared
                .recent
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_mut(&identity)
        {
            r.ended = Some(Instant::now());
        }
    };
    if !matched {
        return upstream;
    }
    match fault.mode {
        ProxyFaultMode::Normal | ProxyFaultMode::ResetBeforeRead => {
            end(&shared);
            upstream
        }
        ProxyFaultMode::CommitThen500 => {
            end(&shared);
            json(
                StatusCode::INTERNAL_SERVER_ERROR,
                &serde_json::json!({"error": "internal server error"}),
            )
        }
        ProxyFaultMode::CommitThenDrop => {
            end(&shared);
            control.end(ConnAction::Drop);
            std::future::pending().await
        }
        ProxyFaultMode::CommitThenDelay => {
            tokio::time::sleep(Duration::from_millis(fault.delay_ms.min(MAX_DELAY_MS))).await;
            end(&shared);
            upstream
        }
    }
}

/// `GET stats`, `GET fault`, `POST fault` `{"mode", "delay_ms"?}`, `POST reset` (counters to zero).
async fn control_call(req: Request<Incoming>, rest: String, shared: &ProxyShared) -> Resp {
    match (req.method().clone(), rest.as_str()) {
        (Method::GET, "stats") => json(
            StatusCode::OK,
            &serde_json::to_value(&*shared.stats()).unwrap_or_default(),
        ),
        (Method::GET, "fault") => json(
            StatusCode::OK,
            &serde_json::to_value(shared.fault()).unwrap_or_default(),
        ),
        (Method::POST, "fault") => {
            let body = match Limited::new(req.into_body(), 64 * 1024).collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => {
                    return json(
                        StatusCode::BAD_REQUEST,
                        &serde_json::json!({"error": e.to_string()}),
                    );
                }
            };
            match serde_json::from_slice::<ProxyFault>(&body) {
                Ok(f) => {
                    let f = f.with_delay_ms(f.delay_ms);
                    *shared.fault.lock().unwrap_or_else(PoisonError::into_inner) = f;
                    json(StatusCode::OK, &serde_json::to_value(f).unwrap_or_default())
                }
                Err(e) => json(
                    StatusCode::BAD_REQUEST,
                    &serde_json::json!({
                        "error": format!("body must be {{\"mode\", \"delay_ms\"?}}: {e}"),
                        "modes": ProxyFaultMode::ALL.map(ProxyFaultMode::label),
                    }),
                ),
            }
        }
        (Method::POST, "reset") => {
            *shared.stats() = ProxyStats::default();
            shared
                .recent
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
            json(StatusCode::OK, &serde_json::json!({"ok": true}))
        }
        _ => json(
            StatusCode::NOT_FOUND,
            &serde_json::json!({"error": "unknown proxy control call; try GET stats, GET|POST fault, POST reset"}),
        ),
    }
}

/// Hop-by-hop headers, and those the proxy sets itself.
fn skipped(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "content-length"
            | "accept-encoding"
            | "x-forwarded-host"
            | "x-forwarded-proto"
            | "forwarded"
    )
}

/// Send the request (`parts`, `body`) to the upstream and relay the answer, rewritten for the proxy's
/// origin. An upstream that cannot be reached is a 502.
async fn forward(shared: &ProxyShared, parts: &hyper::http::request::Parts, body: Bytes) -> Resp {
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or("/", hyper::http::uri::PathAndQuery::as_str);
    let url = format!("{}{}", shared.upstream_origin, path_and_query);
    let Ok(method) = reqwest::Method::from_bytes(parts.method.as_str().as_bytes()) else {
        return json(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({"error": "bad method"}),
        );
    };
    let mut out = shared.client.request(method, &url);
    for (name, value) in &parts.headers {
        if skipped(name) {
            continue;
        }
        let value = if matches!(name.as_str(), "origin" | "referer") {
            let v = value.to_str().unwrap_or_default();
            match v.strip_prefix(&shared.proxy_origin) {
                Some(rest) => HeaderValue::from_str(&format!("{}{rest}", shared.upstream_origin))
                    .unwrap_or_else(|_| value.clone()),
                None => value.clone(),
            }
        } else {
            value.clone()
        };
        out = out.header(name.clone(), value);
    }
    // As a reverse proxy says where the browser was: an app configured for one (a CMS that names itself by
    // the host it is asked for) then links to the proxy, not past it.
    if let Some((scheme, host)) = shared.proxy_origin.split_once("://") {
        out = out
            .header("x-forwarded-host", host)
            .header("x-forwarded-proto", scheme);
    }
    if !body.is_empty() || !matches!(parts.method, Method::GET | Method::HEAD) {
        out = out.body(body);
    }
    let answer = match out.send().await {
        Ok(a) => a,
        Err(e) => {
            return json(
                StatusCode::BAD_GATEWAY,
                &serde_json::json!({"error": format!("oncepost proxy: upstream {}: {e}", shared.upstream_origin)}),
            );
        }
    };
    let status = answer.status().as_u16();
    let headers = answer.headers().clone();
    let bytes = match answer.bytes().await {
        Ok(b) => b,
        Err(e) => {
            return json(
                StatusCode::BAD_GATEWAY,
                &serde_json::json!({"error": format!("oncepost proxy: upstream answer: {e}")}),
            );
        }
    };
    let mut resp = Response::new(Full::new(bytes));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    for (name, value) in &headers {
        let Ok(name) = HeaderName::from_bytes(name.as_str().as_bytes()) else {
            continue;
        };
        if skipped(&name) {
            continue;
        }
        let raw = value.as_bytes();
        let rewritten = match name.as_str() {
            "location" => {
                let v = String::from_utf8_lossy(raw);
                v.strip_prefix(&shared.upstream_origin)
                    .map(|rest| format!("{}{rest}", shared.proxy_origin))
            }
            "set-cookie" => Some(
                String::from_utf8_lossy(raw)
                    .split(';')
                    .filter(|a| !a.trim_start().to_ascii_lowercase().starts_with("domain="))
                    .collect::<Vec<_>>()
                    .join(";"),
            ),
            _ => None,
        };
        let value = match rewritten {
            Some(v) => HeaderValue::from_str(&v).ok(),
            None => HeaderValue::from_bytes(raw).ok(),
        };
        if let Some(v) = value {
            resp.headers_mut().append(name, v);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_are_fixturebooks() {
        for m in ProxyFaultMode::ALL {
            let fb: super::super::FaultMode = m.label().parse().expect("a Fixturebook mode");
            assert_eq!(fb.label(), m.label());
            assert_eq!(
                serde_json::to_string(&m).unwrap(),
                format!("\"{}\"", m.label())
            );
        }
    }
}
