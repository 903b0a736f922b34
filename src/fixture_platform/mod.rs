//! Fixturebook: the bundled fixture platform every test, probe and demo publishes to.
//!
//! A tiny social site on 127.0.0.1 with the agreed compose/permalink/feed/search DOM, hostile page
//! variants that write behind the user's back, and create-request fault modes that leave a publisher
//! unsure whether its post went out. The pages come from the repo's `fixtures/` folder, embedded at
//! compile time, so the installed binary serves them from anywhere.
//!
//! ```text
//!  TcpListener (127.0.0.1:port) --accept--> one task per connection
//!                                            | hyper http1 (keep-alive on, header timeout)
//!                                            v
//!                                   routes::handle(req) --counts arrival first-->  Stats
//!                                            |                 \--posts--> PlatformState --> fixturebook.json
//!                                            | ConnAction::{Drop, Reset}    (temp file + rename)
//!                                            v
//!                           connection task drops the socket (FIN) or sets SO_LINGER 0 first (RST)
//! ```
//!
//! Shutdown: [`RunningPlatform::shutdown`] stops accepting, asks every connection to finish gracefully,
//! and drops whatever is still open after [`SHUTDOWN_GRACE`].
mod conn;
mod editors;
mod fault;
mod form_post;
mod hostile;
mod live;
mod pages;
mod posts;
pub mod proxy;
mod routes;
mod secrets;
mod stats;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use fault::{DEFAULT_DELAY_MS, Fault, FaultMode, MAX_DELAY_MS, UnknownFaultMode};
pub use hostile::{DRAFT_SAVE, HOSTILE_VARIANTS, HostileVariant, Misbehaviour, Trigger};
pub use posts::{Post, STATE_FILE};
pub use secrets::{PAGE_SECRETS, PlantedSecret, RESPONSE_SECRETS};
pub use stats::Stats;

/// How long shutdown waits for open connections to finish before dropping them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Errors at the platform's boundary (start-up and persistence).
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// Could not bind the listening socket.
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        /// Port asked for (0 = any free one).
        port: u16,
        /// The OS error.
        source: std::io::Error,
    },
    /// The TLS port's certificate could not be made.
    #[error("cannot make the TLS port's certificate: {0}")]
    Tls(String),
    /// Reading or writing the data dir failed.
    #[error("fixture platform data at {path}: {source}")]
    Io {
        /// File or directory involved.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The state file exists but is not valid JSON of the expected shape.
    #[error("fixture platform state file {path} is corrupt (refusing to overwrite it): {source}")]
    Corrupt {
        /// The state file.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// The state file was written by an incompatible version.
    #[error("fixture platform state file {path} has format {found}, expected 1")]
    UnsupportedFormat {
        /// The state file.
        path: PathBuf,
        /// Format number found.
        found: u32,
    },
}

/// What to start.
#[derive(Debug, Clone)]
pub struct FixtureConfig {
    /// Directory holding the platform's state file (created if missing).
    pub dir: PathBuf,
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Initial create-request fault.
    pub fault: Fault,
    /// How CSRF tokens are issued (a hostile mode: one fresh token per page).
    pub tokens: TokenPolicy,
    /// Show posts rendered from markdown (what a reader sees), as most platforms do.
    pub renders_markdown: bool,
}

impl FixtureConfig {
    /// A config on a free port with no fault.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        FixtureConfig {
            dir: dir.into(),
            port: 0,
            fault: Fault::default(),
            tokens: TokenPolicy::default(),
            renders_markdown: false,
        }
    }
}

/// How the platform issues the CSRF token a create request must carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TokenPolicy {
    /// One token per session, derived from it: every page of a session carries the same one.
    #[default]
    PerSession,
    /// Hostile (as some frameworks do): every page rendered mints a new token and only the newest one
    /// of the session is accepted, so a page loaded after the compose page makes the compose page's
    /// token stale. `/search?slow_ms=N` mints its token N ms late (at most 5 s), as a slow search does.
    PerPage,
}

/// State shared by every connection: one `Arc` of it per task.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Data dir; written by `routes` through [`posts::persist`].
    dir: PathBuf,
    /// Posts and sessions. A std mutex: nothing awaits while holding it.
    state: Mutex<posts::PlatformState>,
    /// Serialises file writes so the file always ends at the latest snapshot.
    persist_lock: tokio::sync::Mutex<()>,
    /// Arrival counters; bumped by `routes` before anything else happens to a request.
    stats: Mutex<Stats>,
    /// Current create-request fault; set by `/__admin/fault` or [`RunningPlatform::set_fault`].
    fault: Mutex<Fault>,
    /// How CSRF tokens are issued.
    tokens: TokenPolicy,
    /// Posts shown rendered from markdown.
    renders_markdown: bool,
    /// Under [`TokenPolicy::PerPage`]: the newest token of each session (by cookie, `""` without one).
    newest_tokens: Mutex<std::collections::HashMap<String, String>>,
    /// Source articles (`/articles/{id}`), set by `PUT /__admin/articles/{id}` or
    /// [`RunningPlatform::set_article`]: pages whose chrome changes on every fetch, for source captures.
    articles: Mutex<std::collections::HashMap<String, pages::SourceArticle>>,
    /// The last draft each session saved (`PUT /api/drafts`, by cookie, `""` without one), which
    /// `POST /api/drafts/publish` makes a post of (a create that names the draft instead of carrying it).
    drafts: Mutex<std::collections::HashMap<String, hyper::body::Bytes>>,
    /// A draft "synced from another device", handed once to the next `GET /api/drafts/synced`
    /// (`/compose?synced_draft=replace|prepend` polls it); set by `PUT /__admin/synced-draft` or
    /// [`RunningPlatform::sync_draft`].
    synced_draft: Mutex<Option<String>>,
}

impl Shared {
    fn lock_state(&self) -> std::sync::MutexGuard<'_, posts::PlatformState> {
        // A panic while holding the lock cannot leave the state half-changed in a way we care about
        // for a fixture; keep serving rather than poisoning every later request.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_stats(&self) -> std::sync::MutexGuard<'_, Stats> {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fault(&self) -> Fault {
        *self.fault.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_fault(&self, fault: Fault) {
        *self.fault.lock().unwrap_or_else(PoisonError::into_inner) = fault;
    }

    fn set_article(&self, id: &str, article: pages::SourceArticle) {
        self.articles
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_owned(), article);
    }

    fn set_synced_draft(&self, text: &str) {
        *self
            .synced_draft
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(text.to_owned());
    }

    /// The synced draft, taken (a page gets it once), counted in the stats when there was one.
    fn take_synced_draft(&self) -> Option<String> {
        let d = self
            .synced_draft
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if d.is_some() {
            self.lock_stats().synced_drafts_served += 1;
        }
        d
    }

    fn article(&self, id: &str) -> Option<pages::SourceArticle> {
        self.articles
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// Write the current state to disk (serialised with other writers).
    async fn persist(self: &Arc<Self>) -> Result<(), FixtureError> {
        let _guard = self.persist_lock.lock().await;
        let snapshot = self.lock_state().clone();
        let dir = self.dir.clone();
        tokio::task::spawn_blocking(move || posts::persist(&dir, &snapshot))
            .await
            .map_err(|e| FixtureError::Io {
                path: self.dir.clone(),
                source: std::io::Error::other(e),
            })?
    }
}

/// Entry point: see [`FixturePlatform::start`].
#[derive(Debug)]
pub struct FixturePlatform;

impl FixturePlatform {
    /// Load the state from `config.dir`, bind 127.0.0.1:`config.port` and serve in the background on the
    /// current tokio runtime until [`RunningPlatform::shutdown`] (or drop, which stops it abruptly).
    pub async fn start(config: FixtureConfig) -> Result<RunningPlatform, FixtureError> {
        let dir = posts::ensure_dir(&config.dir)?;
        let state = posts::PlatformState::load_or_new(&dir)?;
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
        // The same platform at another origin of the same site (another port): what `/hostile/other-origin`
        // frames its compose page from. Cookies know no port, so a viewer logged in at one is at both.
        let other = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|source| FixtureError::Bind { port: 0, source })?;
        let other_addr = other
            .local_addr()
            .map_err(|source| FixtureError::Bind { port: 0, source })?;
        // The same platform over https on a third port, with a certificate for 127.0.0.1 and localhost
        // issued by a root made at start (`tls_root_pem`, printed by `fixtures serve --json`: what a client
        // trusts it by, `SSL_CERT_FILE`). A page served from there opens `wss://` sockets.
        let tls = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|source| FixtureError::Bind { port: 0, source })?;
        let tls_addr = tls
            .local_addr()
            .map_err(|source| FixtureError::Bind { port: 0, source })?;
        let (acceptor, tls_root_pem) = tls_acceptor().map_err(FixtureError::Tls)?;
        let shared = Arc::new(Shared {
            dir,
            state: Mutex::new(state),
            persist_lock: tokio::sync::Mutex::new(()),
            stats: Mutex::new(Stats::default()),
            fault: Mutex::new(config.fault),
            tokens: config.tokens,
            renders_markdown: config.renders_markdown,
            newest_tokens: Mutex::new(Default::default()),
            articles: Mutex::new(Default::default()),
            drafts: Mutex::new(Default::default()),
            synced_draft: Mutex::new(None),
        });
        // Persist once so a fresh dir holds the CSRF secret before any page is served.
        shared.persist().await?;
        // The same port number on UDP counts datagrams (a WebRTC page's STUN traffic aims there). Best
        // effort: a port taken on UDP only loses that counter.
        let udp = match tokio::net::UdpSocket::bind(("127.0.0.1", addr.port())).await {
            Ok(sock) => Some(tokio::spawn(live::count_datagrams(sock, shared.clone()))),
            Err(e) => {
                tracing::warn!(error = %e, "fixture platform: no UDP counter");
                None
            }
        };
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let all = futures::future::join3(
            conn::accept_loop(listener, shared.clone(), shutdown_rx.clone(), None),
            conn::accept_loop(other, shared.clone(), shutdown_rx.clone(), None),
            conn::accept_loop(tls, shared.clone(), shutdown_rx, Some(acceptor)),
        );
        let accept = tokio::spawn(async move {
            all.await;
        });
        Ok(RunningPlatform {
            addr,
            other_addr,
            tls_addr,
            tls_root_pem,
            shared,
            shutdown_tx,
            accept: Some(accept),
            udp,
        })
    }
}

/// A serving platform. Dropping it without [`RunningPlatform::shutdown`] aborts the accept loop.
#[derive(Debug)]
pub struct RunningPlatform {
    addr: SocketAddr,
    other_addr: SocketAddr,
    tls_addr: SocketAddr,
    tls_root_pem: String,
    shared: Arc<Shared>,
    shutdown_tx: watch::Sender<bool>,
    accept: Option<JoinHandle<()>>,
    udp: Option<JoinHandle<()>>,
}

impl RunningPlatform {
    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:OTHER`: the same platform at another origin of the same site (another port), from
    /// which `/hostile/other-origin?port=OTHER` frames its compose page.
    pub fn other_origin_url(&self) -> String {
        format!("http://{}", self.other_addr)
    }

    /// `https://127.0.0.1:TLS`: the same platform over https, its certificate issued by
    /// [`RunningPlatform::tls_root_pem`].
    pub fn tls_url(&self) -> String {
        format!("https://{}", self.tls_addr)
    }

    /// The root that issued the TLS port's certificate, PEM.
    pub fn tls_root_pem(&self) -> &str {
        &self.tls_root_pem
    }

    /// A snapshot of the arrival counters.
    pub fn stats(&self) -> Stats {
        self.shared.lock_stats().clone()
    }

    /// The current create-request fault.
    pub fn fault(&self) -> Fault {
        self.shared.fault()
    }

    /// Change the create-request fault for requests arriving from now on.
    pub fn set_fault(&self, fault: Fault) {
        self.shared.set_fault(fault);
    }

    /// Publish (or replace) the article `/articles/{id}`: a title and its paragraphs.
    pub fn set_article(&self, id: &str, title: &str, paragraphs: &[&str]) {
        self.shared.set_article(
            id,
            pages::SourceArticle {
                title: title.to_owned(),
                paragraphs: paragraphs.iter().map(|p| p.to_string()).collect(),
                edited_at: std::time::SystemTime::now(),
            },
        );
    }

    /// Hand `text` to the next compose page that asks for a synced draft (`/compose?synced_draft=...`), once.
    pub fn sync_draft(&self, text: &str) {
        self.shared.set_synced_draft(text);
    }

    /// All stored posts, newest first.
    pub fn posts(&self) -> Vec<Post> {
        self.shared.lock_state().newest_first()
    }

    /// Stop accepting, let open connections finish for up to [`SHUTDOWN_GRACE`], then close them.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown_tx.send(true);
        if let Some(u) = self.udp.take() {
            u.abort();
        }
        if let Some(handle) = self.accept.take() {
            let _ = handle.await;
        }
    }
}

impl Drop for RunningPlatform {
    fn drop(&mut self) {
        let _ = self.shutdown_tx.send(true);
        if let Some(u) = self.udp.take() {
            u.abort();
        }
        if let Some(handle) = self.accept.take() {
            handle.abort();
        }
    }
}

/// A TLS acceptor with a certificate for 127.0.0.1 and localhost, issued by a root made here; the root's PEM.
fn tls_acceptor() -> Result<(tokio_rustls::TlsAcceptor, String), String> {
    use tokio_rustls::rustls;
    let e = |e: rcgen::Error| e.to_string();
    let root_key = rcgen::KeyPair::generate().map_err(e)?;
    let mut root_params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(e)?;
    root_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    root_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "Fixturebook test root");
    let root = rcgen::CertifiedIssuer::self_signed(root_params, root_key).map_err(e)?;
    let leaf_key = rcgen::KeyPair::generate().map_err(e)?;
    let leaf =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .and_then(|p| p.signed_by(&leaf_key, &root))
            .map_err(e)?;
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let private = rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone(), root.der().clone()], private)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((
        tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config)),
        root.pem(),
    ))
}
