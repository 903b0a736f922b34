//! Launching Chromium and bounding every call to it.
//!
//! chromiumoxide splits a browser into a `Browser` handle and a `Handler` stream that must be polled.
//! [`BrowserSession`] runs the handler in its own task and stops it on the first connection error (a
//! killed Chromium), flipping a [`Liveness`] signal. [`Liveness::bounded`] wraps every CDP call and every
//! wait: it ends with [`BrowserError::Timeout`] after the limit, or [`BrowserError::Died`] as soon as the
//! handler stopped, so a dead browser ends calls within milliseconds instead of chromiumoxide's 40 s.
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chromiumoxide::error::CdpError;
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::{Browser, BrowserConfig};
use futures::StreamExt;
use tokio::sync::watch;

use super::BrowserError;
use super::door::Door;
use super::write_guard::WriteGuard;
use crate::wait::Wait;

/// Names tried, in order, when `ONCEPOST_CHROMIUM` is not set.
///
/// Chromium's headless shell first (Debian: package `chromium-headless-shell`, the same Chromium build
/// without the browser's UI layers; what Playwright launches for headless by default): measured on
/// Fixturebook, a warm worker's send took ~650 ms of Chromium CPU against ~1,700 ms with `/usr/bin/chromium`
/// in its headless mode, and a fresh page 121 ms of CPU against 230 (docs/benchmarks.md). Its binary, not
/// Debian's `/usr/bin/chromium-headless-shell` script: that script runs the shell as its child, so the pid
/// oncepost holds would not be the browser's. The shell ignores `--webrtc-ip-handling-policy`; the guard's
/// seccomp filter shuts UDP for both (door/no_udp.rs), and the unguarded launch refuses the shell.
const CANDIDATES: &[&str] = &[
    "/usr/lib/chromium/chromium-headless-shell",
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
    "/usr/bin/google-chrome-stable",
    "/snap/bin/chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
];

/// How to install Chromium, shown when none is found.
pub const INSTALL_HINT: &str = "install Chromium (Debian: `sudo apt-get install chromium-headless-shell` or \
`sudo apt-get install chromium`; Ubuntu: `sudo apt-get install chromium`; Fedora: \
`sudo dnf install chromium`; macOS: `brew install --cask chromium`) or point ONCEPOST_CHROMIUM at a \
Chromium/Chrome binary";

/// Find the Chromium binary: `ONCEPOST_CHROMIUM` when set (and then only it), else the usual paths, else
/// `chromium`/`chromium-browser`/`google-chrome` on `PATH`.
pub fn find_chromium() -> Result<PathBuf, BrowserError> {
    if let Some(p) = std::env::var_os("ONCEPOST_CHROMIUM") {
        let p = PathBuf::from(p);
        return if is_executable(&p) {
            Ok(p)
        } else {
            Err(BrowserError::ChromiumMissing {
                looked: format!("ONCEPOST_CHROMIUM={} (not an executable file)", p.display()),
            })
        };
    }
    for c in CANDIDATES {
        if is_executable(Path::new(c)) {
            return Ok(PathBuf::from(c));
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in [
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ] {
            let p = dir.join(name);
            if is_executable(&p) {
                return Ok(p);
            }
        }
    }
    Err(BrowserError::ChromiumMissing {
        looked: format!(
            "{} and chromium/google-chrome on PATH",
            CANDIDATES.join(", ")
        ),
    })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// How to launch a browser.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// Chromium binary; `None` runs [`find_chromium`].
    pub executable: Option<PathBuf>,
    /// Profile directory (created 0700). One per account, persistent, so logins survive.
    pub profile_dir: PathBuf,
    /// Bound on every single CDP call.
    pub call_timeout: Duration,
    /// Window (and layout viewport) size in CSS pixels.
    pub window: (u32, u32),
    /// The Chromium guard binary (see [`super::guard`]): Chromium is killed before it can notice that this
    /// process died, so a paused create request dies with it. `None` launches Chromium directly, without
    /// that guarantee (the publish flow refuses to run so).
    pub guard: Option<PathBuf>,
}

impl LaunchOptions {
    /// Defaults: auto-detected Chromium, 10 s per call, 1280x900 window.
    pub fn new(profile_dir: PathBuf) -> Self {
        LaunchOptions {
            executable: None,
            profile_dir,
            call_timeout: Duration::from_secs(10),
            window: (1280, 900),
            guard: super::guard::guard_binary(),
        }
    }
}

/// Tells whether the browser connection is still alive, and bounds futures by it.
#[derive(Debug, Clone)]
pub struct Liveness {
    rx: watch::Receiver<bool>,
    call_timeout: Duration,
}

impl Liveness {
    /// True once the handler saw the connection die.
    pub fn is_dead(&self) -> bool {
        *self.rx.borrow()
    }

    /// The per-call bound.
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// Run a CDP call with the default per-call bound.
    pub async fn call<T, F>(&self, what: &str, fut: F) -> Result<T, BrowserError>
    where
        F: Future<Output = Result<T, CdpError>>,
    {
        self.bounded(what, self.call_timeout, fut).await
    }

    /// Run `fut` for at most `limit`, ending early with [`BrowserError::Died`] when the browser dies.
    pub async fn bounded<T, F>(
        &self,
        what: &str,
        limit: Duration,
        fut: F,
    ) -> Result<T, BrowserError>
    where
        F: Future<Output = Result<T, CdpError>>,
    {
        if self.is_dead() {
            return Err(BrowserError::Died {
                during: what.to_string(),
            });
        }
        let mut rx = self.rx.clone();
        let died = async move {
            // Resolves when the flag turns true or the sender is gone (session dropped).
            let _ = rx.wait_for(|dead| *dead).await;
        };
        let started = std::time::Instant::now();
        let r = tokio::select! {
            r = tokio::time::timeout(limit, fut) => match r {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(if self.is_dead() {
                    BrowserError::Died { during: what.to_string() }
                } else {
                    BrowserError::Cdp {
                        during: what.to_string(),
                        message: e.to_string(),
                        failure: super::CdpFailure::of(&e),
                    }
                }),
                Err(_) => Err(BrowserError::Timeout { during: what.to_string(), after: limit }),
            },
            _ = died => Err(BrowserError::Died { during: what.to_string() }),
        };
        // Where a send's time goes, call by call (`ONCEPOST_LOG=oncepost::cdp=debug`).
        tracing::debug!(target: "oncepost::cdp", call = what, ms = started.elapsed().as_secs_f64() * 1e3, ok = r.is_ok());
        r
    }
}

/// A shareable handle on the browser connection (guard tasks answer paused requests through it).
pub type BrowserHandle = std::sync::Arc<Browser>;

/// A running Chromium with its handler task.
pub struct BrowserSession {
    browser: BrowserHandle,
    liveness: Liveness,
    handler: tokio::task::JoinHandle<()>,
    pid: Option<u32>,
    executable: PathBuf,
    guard: WriteGuard,
    /// The Chromium guard process (None: launched directly, without the crash guarantee).
    guard_process: Option<tokio::process::Child>,
    /// The profile, scrubbed of browsing history when the session closes.
    profile_dir: Option<PathBuf>,
    /// Popup watchers running for this session's pages (see [`super::dialogs::DialogLog`]).
    popup_watchers: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// The send's read page between two reads, parked at `about:blank` (see [`BrowserSession::take_read_page`]).
    read_page: std::sync::Mutex<Option<chromiumoxide::Page>>,
}

impl std::fmt::Debug for BrowserSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserSession")
            .field("pid", &self.pid)
            .finish()
    }
}

/// Chromium launches this process started (each try counts, a refused one too), for `/metrics` and for the
/// tests that prove a step launched nothing.
static LAUNCHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many Chromium launches this process started.
pub fn launches() -> u64 {
    LAUNCHES.load(std::sync::atomic::Ordering::Relaxed)
}

/// How long a launch waits for the Chromium of an earlier session on the same profile to let go of it.
const PROFILE_RELEASE_WAIT: Duration = Duration::from_secs(10);

impl BrowserSession {
    /// Launch headless Chromium on `opts.profile_dir` (created with 0700 permissions).
    ///
    /// The profile lock oncepost holds is gone the moment an earlier process on this profile dies, but its
    /// Chromium may take a moment longer to exit, and until it has, a new Chromium on the profile refuses to
    /// start ("Failed to create a ProcessSingleton": seen when a publish is run again right after one stopped
    /// by SIGINT). Such a launch is tried again every 250 ms for up to [`PROFILE_RELEASE_WAIT`].
    pub async fn launch(opts: &LaunchOptions) -> Result<BrowserSession, BrowserError> {
        let wait = Wait::new(
            "the profile's earlier Chromium to exit",
            PROFILE_RELEASE_WAIT,
            Duration::from_millis(250),
        );
        loop {
            match BrowserSession::launch_once(opts).await {
                Err(BrowserError::Launch { message })
                    if message.contains("ProcessSingleton")
                        || message.contains("SingletonLock") =>
                {
                    if wait.pause().await.is_err() {
                        return Err(BrowserError::Launch { message });
                    }
                }
                other => return other,
            }
        }
    }

    async fn launch_once(opts: &LaunchOptions) -> Result<BrowserSession, BrowserError> {
        LAUNCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let executable = match &opts.executable {
            Some(p) => p.clone(),
            None => find_chromium()?,
        };
        super::private_dir(&opts.profile_dir).map_err(|e| BrowserError::Profile {
            dir: opts.profile_dir.clone(),
            message: e.to_string(),
        })?;
        // Left over by a session that was killed before it could scrub.
        scrub_history(&opts.profile_dir);
        // The door opens before Chromium starts: its command line points the browser's only route out at it.
        let door = Door::open().await?;
        let (browser, handler, pid, guard_child) = match &opts.guard {
            Some(bin) => {
                let argv = chromium_argv(&executable, opts, &door);
                let g = super::guard::spawn(bin, &argv, Duration::from_secs(25)).await?;
                let config = HandlerConfig {
                    viewport: None,
                    request_timeout: opts.call_timeout,
                    ..HandlerConfig::default()
                };
                let connected = tokio::time::timeout(
                    Duration::from_secs(20),
                    Browser::connect_with_config(g.ws_url.clone(), config),
                )
                .await;
                let (browser, handler) = match connected {
                    Ok(Ok(bh)) => bh,
                    other => {
                        let mut child = g.child;
                        super::guard::stop(&mut child).await;
                        return Err(BrowserError::Launch {
                            message: match other {
                                Ok(Err(e)) => format!("cannot connect to Chromium: {e}"),
                                _ => "cannot connect to Chromium within 20 s".into(),
                            },
                        });
                    }
                };
                (browser, handler, Some(g.chromium_pid), Some(g.child))
            }
            None => {
                let (browser, handler) = launch_unguarded(&executable, opts, &door).await?;
                let mut browser = browser;
                let pid = browser.get_mut_child().and_then(|c| c.inner.id());
                (browser, handler, pid, None)
            }
        };
        let mut handler = handler;
        let (tx, rx) = watch::channel(false);
        let handler = tokio::spawn(async move {
            while let Some(ev) = handler.next().await {
                // A websocket or I/O error means the browser is gone: stop polling, or pending calls would
                // hang for chromiumoxide's own 40 s+ instead of failing now.
                if let Err(CdpError::Ws(_) | CdpError::Io(_) | CdpError::ChannelSendError(_)) = ev {
                    break;
                }
            }
            let _ = tx.send(true);
        });
        let browser = std::sync::Arc::new(browser);
        let liveness = Liveness {
            rx,
            call_timeout: opts.call_timeout,
        };
        // The guard goes on before any page exists: nothing this session opens is ever unguarded.
        let guard = match WriteGuard::install(&browser, &liveness, door).await {
            Ok(g) => g,
            Err(e) => {
                if let Some(pid) = pid {
                    sigkill(pid);
                }
                handler.abort();
                return Err(e);
            }
        };
        Ok(BrowserSession {
            browser,
            liveness,
            handler,
            pid,
            executable,
            guard,
            guard_process: guard_child,
            profile_dir: Some(opts.profile_dir.clone()),
            popup_watchers: Default::default(),
            read_page: Default::default(),
        })
    }

    /// The chromiumoxide browser handle (only for calls wrapped in [`Liveness::call`]).
    pub fn browser(&self) -> &BrowserHandle {
        &self.browser
    }

    /// The session's write guard (installed at launch).
    pub fn write_guard(&self) -> &WriteGuard {
        &self.guard
    }

    /// How many popup watchers run for this session's pages now: one per page whose dialog log is still
    /// held (a send in progress). A warm browser between sends has none.
    pub fn popup_watchers(&self) -> usize {
        self.popup_watchers
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(super) fn popup_watcher_count(&self) -> &std::sync::Arc<std::sync::atomic::AtomicUsize> {
        &self.popup_watchers
    }

    /// The page the last read of this send left parked at `about:blank`, if any: the look before writing and
    /// the read-back of one send read in the same page (never the compose page), since a fresh page costs
    /// more than the read itself (measured on Fixturebook: 60 ms to open against 28 ms to load the page
    /// read). Never across sends: [`BrowserSession::clean_between_sends`] forgets it with every other page.
    pub(super) fn take_read_page(&self) -> Option<chromiumoxide::Page> {
        self.read_page.lock().ok().and_then(|mut slot| slot.take())
    }

    /// Keep `page` (parked at `about:blank`) for the send's next read; a page already kept (two reads side by
    /// side) is given back, for the caller to close.
    pub(super) fn keep_read_page(&self, page: chromiumoxide::Page) -> Option<chromiumoxide::Page> {
        match self.read_page.lock() {
            Ok(mut slot) if slot.is_none() => {
                *slot = Some(page);
                None
            }
            _ => Some(page),
        }
    }

    /// A fresh blank page, service workers bypassed (every page oncepost opens bypasses them, so what it
    /// reads or composes is what the platform serves now, never a worker's cache); `what` names the
    /// page in errors. A page whose bypass fails is closed again.
    pub async fn open_page(&self, what: &str) -> Result<chromiumoxide::Page, BrowserError> {
        use chromiumoxide::cdp::browser_protocol::network::SetBypassServiceWorkerParams;
        use chromiumoxide::cdp::browser_protocol::page::AddScriptToEvaluateOnNewDocumentParams;
        let live = self.liveness();
        let page = live
            .call(what, self.browser().new_page("about:blank"))
            .await?;
        let mut keep_roots =
            AddScriptToEvaluateOnNewDocumentParams::new(super::closed_roots::KEEPER_JS);
        keep_roots.run_immediately = Some(true);
        let prepared = async {
            live.call(
                "bypass service workers",
                page.execute(SetBypassServiceWorkerParams::new(true)),
            )
            .await?;
            live.call("keep closed shadow roots", page.execute(keep_roots))
                .await
        };
        if let Err(e) = prepared.await {
            let _ = live.call("close a page", page.close()).await;
            return Err(e);
        }
        Ok(page)
    }

    /// The liveness signal and call bound.
    pub fn liveness(&self) -> &Liveness {
        &self.liveness
    }

    /// Process id of Chromium, when known.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The binary that was launched.
    pub fn executable(&self) -> &Path {
        &self.executable
    }

    /// Close the browser (bounded), then make sure the process is gone.
    pub async fn close(self) {
        use chromiumoxide::cdp::browser_protocol::browser::CloseParams;
        if !self.liveness.is_dead() {
            self.keep_session_cookies().await;
            let _ = self
                .liveness
                .bounded(
                    "close the browser",
                    Duration::from_secs(3),
                    self.browser.execute(CloseParams::default()),
                )
                .await;
        }
        if let Some(pid) = self.pid {
            // Give Chromium a moment to exit by itself (it flushes the profile), then make sure.
            let exit = crate::wait::Wait::new(
                "Chromium to exit",
                Duration::from_millis(1_500),
                Duration::from_millis(50),
            );
            while process_alive(pid) {
                if exit.pause().await.is_err() {
                    break;
                }
            }
            if process_alive(pid) {
                sigkill(pid);
            }
        }
        self.handler.abort();
        if let Some(mut g) = self.guard_process {
            // Chromium is gone; the guard follows (it ends with its connections, or on its stdin closing).
            super::guard::stop(&mut g).await;
        }
        if let Some(dir) = &self.profile_dir {
            scrub_history(dir);
        }
        // Dropping the last handle reaps a directly launched child (chromiumoxide sets kill_on_drop).
    }
}

/// How long a session cookie stays in the account's profile once its browser closes.
const KEEP_SESSION_COOKIES: Duration = Duration::from_secs(30 * 86_400);

impl BrowserSession {
    /// Keep the session's session cookies (no expiry: the browser drops them when it closes) in the
    /// profile, as a browser set to continue where it left off does. An app whose login lives in its session
    /// cookie (Rails' cookie store, PHP's `PHPSESSID`, any app without "remember me") answers the first page
    /// after a login is imported with a new session cookie, which replaces the imported one: measured on
    /// Redmine, the next send found itself logged out and could press nothing. The platform still ends
    /// the session when it decides to; only the browser's closing no longer does. Best effort, bounded: a
    /// failure here leaves the cookies as the browser had them.
    async fn keep_session_cookies(&self) {
        use chromiumoxide::cdp::browser_protocol::network::{CookieParam, TimeSinceEpoch};
        let Ok(cookies) = self
            .liveness
            .bounded(
                "read the session cookies",
                Duration::from_secs(1),
                self.browser.get_cookies(),
            )
            .await
        else {
            return;
        };
        let until = std::time::SystemTime::now()
            .checked_add(KEEP_SESSION_COOKIES)
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0.0, |d| d.as_secs_f64());
        let kept: Vec<CookieParam> = cookies
            .into_iter()
            .filter(|c| c.session)
            .map(|c| {
                // A host-only cookie (no leading dot) is set again by its URL, which keeps it host-only.
                let host_only = !c.domain.starts_with('.');
                let scheme = if c.secure { "https" } else { "http" };
                CookieParam {
                    url: host_only.then(|| format!("{scheme}://{}{}", c.domain, c.path)),
                    domain: (!host_only).then(|| c.domain.clone()),
                    path: Some(c.path.clone()),
                    secure: Some(c.secure),
                    http_only: Some(c.http_only),
                    same_site: c.same_site.clone(),
                    expires: Some(TimeSinceEpoch::new(until)),
                    priority: Some(c.priority.clone()),
                    same_party: None,
                    source_scheme: None,
                    source_port: None,
                    partition_key: c.partition_key.clone(),
                    name: c.name,
                    value: c.value,
                }
            })
            .collect();
        if kept.is_empty() {
            return;
        }
        let _ = self
            .liveness
            .bounded(
                "keep the session cookies",
                Duration::from_secs(1),
                self.browser.set_cookies(kept),
            )
            .await;
    }
}

/// What a profile keeps of the URLs it visited (with their query strings: an `access_token=` permalink was
/// found in `Default/History`, `Sessions/` and `segmentation_platform/`). Logins live in `Cookies` and
/// `Local Storage`, which stay.
const HISTORY: &[&str] = &[
    "Default/History",
    "Default/History-journal",
    "Default/Visited Links",
    "Default/Top Sites",
    "Default/Top Sites-journal",
    "Default/Shortcuts",
    "Default/Shortcuts-journal",
    "Default/Network Action Predictor",
    "Default/Network Action Predictor-journal",
    "Default/Favicons",
    "Default/Favicons-journal",
    "Default/Sessions",
    "Default/Session Storage",
    "Default/Current Session",
    "Default/Current Tabs",
    "Default/Last Session",
    "Default/Last Tabs",
    "segmentation_platform",
    "Default/segmentation_platform",
];

/// Remove what the profile remembers of visited URLs (never the login: cookies and local storage stay).
fn scrub_history(profile: &Path) {
    for rel in HISTORY {
        let p = profile.join(rel);
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => {
                let _ = std::fs::remove_dir_all(&p);
            }
            Ok(_) => {
                let _ = std::fs::remove_file(&p);
            }
            Err(_) => {}
        }
    }
}

/// The switches oncepost adds to every Chromium (the machine notes say why: no sandbox as root in a
/// container, no GPU, no QUIC so every request is visible HTTP/1-2, nothing in the background, service
/// workers never preloaded so CDP Fetch sees every request).
///
/// Not `disable-web-security`, though it lets the checks into a frame of another site (tried in stop 34:
/// with site isolation off too, Fixturebook's `cross-origin` composer was published once): it lifts the
/// same-origin rule for the page as well, and the door fetches every GET a page makes, so a hostile page could
/// read any origin's answer through it (a cloud metadata endpoint, a loopback service) and send it out in a
/// GET's URL. Such a frame is checked from inside instead (other_origin.rs; docs/contracts.md, "Frames of
/// another origin").
const OUR_FLAGS: &[&str] = &[
    "no-sandbox",
    "disable-gpu",
    "disable-quic",
    "no-first-run",
    "disable-background-networking",
    "disable-component-update",
    "disable-sync",
    "disable-features=TranslateUI,ServiceWorkerAutoPreload",
    "hide-scrollbars",
    "mute-audio",
];

/// Chromium's command line: chromiumoxide's defaults plus ours (the machine notes list why each is there).
fn chromium_argv(executable: &Path, opts: &LaunchOptions, door: &Door) -> Vec<std::ffi::OsString> {
    let (w, h) = opts.window;
    let mut argv: Vec<std::ffi::OsString> = vec![executable.as_os_str().to_owned()];
    // chromiumoxide's own defaults (what `Browser::launch` would add), then ours.
    let defaults = [
        "--headless",
        "--disable-setuid-sandbox",
        "--disable-extensions",
        // Asks for the network stack in the browser process. Chromium 156 ignores it and still runs a
        // network service process; it is in Chromium's process group, which the guard kills whole.
        "--enable-features=NetworkService,NetworkServiceInProcess",
        "--disable-background-timer-throttling",
        "--disable-backgrounding-occluded-windows",
        "--disable-breakpad",
        "--disable-client-side-phishing-detection",
        "--disable-component-extensions-with-background-pages",
        "--disable-default-apps",
        "--disable-dev-shm-usage",
        "--disable-hang-monitor",
        "--disable-ipc-flooding-protection",
        "--disable-popup-blocking",
        "--disable-prompt-on-repost",
        "--disable-renderer-backgrounding",
        "--force-color-profile=srgb",
        "--metrics-recording-only",
        "--enable-automation",
        "--password-store=basic",
        "--use-mock-keychain",
        "--lang=en_US",
        // DevTools over fds 3/4 (the guard holds them), never a TCP port another local process could open.
        "--remote-debugging-pipe",
    ];
    let flags = defaults
        .iter()
        .map(|f| f.to_string())
        .chain(OUR_FLAGS.iter().map(|f| format!("--{f}")))
        .chain(door.chromium_switches());
    argv.extend(flags.map(std::ffi::OsString::from));
    argv.push(format!("--window-size={w},{h}").into());
    let mut dir = std::ffi::OsString::from("--user-data-dir=");
    dir.push(opts.profile_dir.as_os_str());
    argv.push(dir);
    argv
}

/// The old way, without the guard: chromiumoxide starts Chromium as our direct child. Used only when no
/// guard binary is available (a library caller that is not the oncepost binary and passed none). The door
/// is the same; but chromiumoxide always adds `--remote-debugging-port`, so such a browser has an open
/// DevTools port on 127.0.0.1 (the oncepost binary never launches one). Nor has it the guard's no-UDP
/// filter: it rests on `--webrtc-ip-handling-policy`, which Chromium's headless shell ignores, so the shell
/// is refused here rather than launched with a way out.
async fn launch_unguarded(
    executable: &Path,
    opts: &LaunchOptions,
    door: &Door,
) -> Result<(Browser, chromiumoxide::Handler), BrowserError> {
    if is_headless_shell(executable) {
        return Err(BrowserError::Launch {
            message: format!(
                "{} is Chromium's headless shell, which ignores the WebRTC switch; without the guard \
                 (its seccomp filter shuts UDP) it would have a way out: set ONCEPOST_GUARD_BIN to the oncepost \
                 binary, or ONCEPOST_CHROMIUM to a full Chromium",
                executable.display()
            ),
        });
    }
    let (w, h) = opts.window;
    let config = BrowserConfig::builder()
        .chrome_executable(executable)
        .user_data_dir(&opts.profile_dir)
        // Keep Chromium's own window size as the layout viewport (chromiumoxide would force 800x600).
        .viewport(None)
        .window_size(w, h)
        .request_timeout(opts.call_timeout)
        .launch_timeout(Duration::from_secs(20))
        .args(OUR_FLAGS.iter().copied())
        .args(
            door.chromium_switches()
                .into_iter()
                .map(|f| f.trim_start_matches("--").to_string()),
        )
        .build()
        .map_err(|message| BrowserError::Launch { message })?;
    Browser::launch(config)
        .await
        .map_err(|e| launch_error(&opts.profile_dir, e.to_string()))
}

/// Whether `executable` is Chromium's headless shell (Debian's `chromium-headless-shell`, Chrome for
/// Testing's `chrome-headless-shell`, a build's `headless_shell`), by its file name.
pub fn is_headless_shell(executable: &Path) -> bool {
    executable
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .is_some_and(|n| n.contains("headless-shell") || n.contains("headless_shell"))
}

/// Chromium's words when it refuses a profile another Chromium holds (its ProcessSingleton lock): the one
/// place they are read, so the caller gets [`BrowserError::ProfileInUse`] instead of a text to search.
pub(super) fn launch_error(profile: &Path, message: String) -> BrowserError {
    if message.contains("ProcessSingleton")
        || message.contains("SingletonLock")
        || message.contains("profile appears to be in use")
    {
        BrowserError::ProfileInUse {
            dir: profile.to_path_buf(),
            message,
        }
    } else {
        BrowserError::Launch { message }
    }
}

/// SIGKILL the child we launched (kill(2) on its pid); one that is already gone is not an error worth a word.
fn sigkill(pid: u32) {
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// Whether a process exists and is not a zombie.
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // Field 3 is the state; `Z` = zombie (exited, not yet reaped).
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sigkill_kills_the_child() {
        use std::os::unix::process::ExitStatusExt;
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        super::sigkill(child.id());
        assert_eq!(child.wait().unwrap().signal(), Some(9));
    }
}
