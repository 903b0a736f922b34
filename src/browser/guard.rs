//! The Chromium guard: a small process between oncepost and Chromium that kills Chromium BEFORE Chromium can
//! notice that oncepost is gone.
//!
//! Why: the publish flow holds the create request paused (CDP Fetch) while its own client sends it. When
//! the DevTools connection closes, Chromium detaches and RESUMES every paused request: a worker killed at
//! that moment (SIGKILL, OOM, power) made the platform receive the create request twice (measured: 2
//! arrivals, 2 posts). Killing Chromium afterwards is too late, and a parent-death signal races the socket
//! close. So the DevTools connection runs through this guard:
//!
//! ```text
//!   oncepost ──ws──▶ guard (127.0.0.1:G) ──tcp──▶ Chromium (127.0.0.1:C, own process group)
//!      │  stdin pipe ──▶ guard
//! ```
//!
//! When the oncepost side of the connection ends, or the guard's stdin reaches EOF (oncepost died), or the
//! guard gets SIGINT/SIGTERM/SIGHUP, the guard SIGKILLs Chromium's whole process group, waits until it is
//! gone, and only then closes its connection to Chromium. Chromium never sees a detach while alive, so a
//! paused request dies with it. A normal close (`Browser.close`) ends Chromium first; the guard then exits.
//!
//! The guard is the `oncepost` binary itself (hidden subcommand `__chromium-guard`), so nothing extra is
//! installed. It prints one line on stdout: `<ws url> <chromium pid>`, or `error: <why>`.
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};

use super::BrowserError;

/// The hidden subcommand that runs the guard.
pub const SUBCOMMAND: &str = "__chromium-guard";

/// The guard binary: `ONCEPOST_GUARD_BIN` when set, else this process's executable when it is oncepost.
/// (A test harness linking the library is not oncepost; such callers pass the binary explicitly.)
pub fn guard_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ONCEPOST_GUARD_BIN") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let name = exe.file_name()?.to_string_lossy().into_owned();
    (name == "oncepost").then_some(exe)
}

/// A running guard and the Chromium behind it.
#[derive(Debug)]
pub struct Guarded {
    /// The guard process (killing it kills Chromium first).
    pub child: Child,
    /// The DevTools websocket URL, through the guard.
    pub ws_url: String,
    /// Chromium's pid.
    pub chromium_pid: u32,
}

/// Start the guard, which starts Chromium with `argv` (executable first), and wait (bounded) for its line.
pub async fn spawn(
    guard_bin: &Path,
    argv: &[OsString],
    limit: Duration,
) -> Result<Guarded, BrowserError> {
    let mut cmd = Command::new(guard_bin);
    cmd.arg(SUBCOMMAND)
        .arg("--")
        .args(argv)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        // Its own process group: a terminal's Ctrl-C reaches oncepost, whose exit the guard then sees.
        .process_group(0)
        // Never SIGKILL the guard on drop: it would die before killing Chromium, and Chromium would see
        // the detach. Dropping the handle closes the guard's stdin instead, and the guard kills Chromium.
        .kill_on_drop(false);
    let mut child = cmd.spawn().map_err(|e| BrowserError::Launch {
        message: format!(
            "cannot start the Chromium guard {}: {e}",
            guard_bin.display()
        ),
    })?;
    let stdout = child.stdout.take().ok_or_else(|| BrowserError::Launch {
        message: "the Chromium guard has no stdout".into(),
    })?;
    let mut lines = BufReader::new(stdout).lines();
    let line = match tokio::time::timeout(limit, lines.next_line()).await {
        Ok(Ok(Some(l))) => l,
        Ok(Ok(None)) | Ok(Err(_)) => {
            stop(&mut child).await;
            return Err(BrowserError::Launch {
                message: "the Chromium guard exited before Chromium was up".into(),
            });
        }
        Err(_) => {
            stop(&mut child).await;
            return Err(BrowserError::Launch {
                message: format!("Chromium did not start within {limit:?}"),
            });
        }
    };
    if let Some(why) = line.strip_prefix("error: ") {
        let _ = child.wait().await;
        return Err(BrowserError::Launch {
            message: why.to_string(),
        });
    }
    let mut parts = line.split_whitespace();
    let (Some(ws_url), Some(pid)) = (parts.next(), parts.next().and_then(|p| p.parse().ok()))
    else {
        stop(&mut child).await;
        return Err(BrowserError::Launch {
            message: format!("the Chromium guard said {line:?}"),
        });
    };
    Ok(Guarded {
        child,
        ws_url: ws_url.to_string(),
        chromium_pid: pid,
    })
}

/// Stop a guard: close its stdin (it kills Chromium, then exits) and reap it; SIGKILL it only if it has
/// not gone within 5 s (Chromium is dead by then, or the guard is wedged).
pub async fn stop(child: &mut Child) {
    drop(child.stdin.take());
    if tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
}

/// The guard's main: start Chromium with `argv`, relay one DevTools connection, and kill Chromium first
/// whenever the oncepost side goes away. Returns the process exit code.
pub async fn run(argv: Vec<OsString>) -> i32 {
    let mut out = tokio::io::stdout();
    match guard(argv, &mut out).await {
        Ok(()) => 0,
        Err(why) => {
            let _ = out
                .write_all(format!("error: {}\n", why.replace('\n', " ")).as_bytes())
                .await;
            let _ = out.flush().await;
            1
        }
    }
}

async fn guard(argv: Vec<OsString>, out: &mut tokio::io::Stdout) -> Result<(), String> {
    let (exe, args) = argv.split_first().ok_or("no Chromium command given")?;
    let mut chromium = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", Path::new(exe).display()))?;
    let pid = chromium.id().ok_or("Chromium exited at once")?;
    let stderr = chromium.stderr.take().ok_or("no stderr from Chromium")?;
    let mut err_lines = BufReader::new(stderr).lines();
    // Chromium prints "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID" once it is up.
    let mut tail: Vec<String> = Vec::new();
    let find = async {
        while let Ok(Some(l)) = err_lines.next_line().await {
            if let Some(i) = l.find("ws://") {
                return Some(l[i..].trim().to_string());
            }
            tail.push(l);
            if tail.len() > 20 {
                tail.remove(0);
            }
        }
        None
    };
    let ws = match tokio::time::timeout(Duration::from_secs(30), find).await {
        Ok(Some(ws)) => ws,
        other => {
            kill_group(pid, &mut chromium).await;
            return Err(if other.is_err() {
                "Chromium printed no DevTools address within 30 s".into()
            } else {
                format!("Chromium exited: {}", tail.join(" | "))
            });
        }
    };
    // Keep draining Chromium's stderr: a full pipe would block it.
    tokio::spawn(async move { while let Ok(Some(_)) = err_lines.next_line().await {} });
    let rest = ws.trim_start_matches("ws://");
    let (upstream_addr, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    out.write_all(format!("ws://127.0.0.1:{port}{path} {pid}\n").as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    out.flush().await.map_err(|e| e.to_string())?;

    let mut stdin = tokio::io::stdin();
    let mut sigs = Signals::new()?;
    let parent_gone = async {
        let mut buf = [0u8; 64];
        loop {
            match stdin.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::pin!(parent_gone);
    // One connection: oncepost's.
    let accepted = tokio::select! {
        a = tokio::time::timeout(Duration::from_secs(30), listener.accept()) => a,
        _ = &mut parent_gone => { kill_group(pid, &mut chromium).await; return Ok(()); }
        _ = sigs.any() => { kill_group(pid, &mut chromium).await; return Ok(()); }
        _ = chromium.wait() => return Err("Chromium exited before oncepost connected".into()),
    };
    let Ok(Ok((mut down, _))) = accepted else {
        kill_group(pid, &mut chromium).await;
        return Err("oncepost did not connect within 30 s".into());
    };
    drop(listener);
    let mut up = TcpStream::connect(upstream_addr)
        .await
        .map_err(|e| format!("cannot reach Chromium at {upstream_addr}: {e}"))?;
    let _ = down.set_nodelay(true);
    let _ = up.set_nodelay(true);
    let (mut down_r, mut down_w) = down.split();
    let (mut up_r, mut up_w) = up.split();
    // oncepost -> Chromium. Ends when oncepost closes or dies.
    let to_chromium = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match down_r.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if up_w.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }
        }
    };
    // Chromium -> oncepost. Ends when Chromium closes (exited, or closed by Browser.close).
    let to_oncepost = tokio::io::copy(&mut up_r, &mut down_w);
    tokio::select! {
        // oncepost went away: Chromium must die before it can see the connection end.
        _ = to_chromium => kill_group(pid, &mut chromium).await,
        _ = &mut parent_gone => kill_group(pid, &mut chromium).await,
        _ = sigs.any() => kill_group(pid, &mut chromium).await,
        // Chromium ended the connection itself (normal close or crash): make sure it is gone too.
        _ = to_oncepost => {
            let gone = tokio::time::timeout(Duration::from_secs(3), chromium.wait()).await;
            if gone.is_err() {
                kill_group(pid, &mut chromium).await;
            }
        }
    }
    Ok(())
}

/// SIGKILL Chromium's process group (browser, renderers, helpers), then reap the browser process.
async fn kill_group(pid: u32, chromium: &mut Child) {
    // SAFETY: kill(2) on the process group we created for Chromium (its pid is the group id).
    unsafe {
        libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), chromium.wait()).await;
}

/// SIGINT, SIGTERM and SIGHUP: each means "stop now", handled like oncepost going away.
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> Result<Self, String> {
        use tokio::signal::unix::{SignalKind, signal};
        let s = |k| signal(k).map_err(|e| format!("cannot handle signals: {e}"));
        Ok(Signals {
            int: s(SignalKind::interrupt())?,
            term: s(SignalKind::terminate())?,
            hup: s(SignalKind::hangup())?,
        })
    }

    async fn any(&mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
            _ = self.hup.recv() => {}
        }
    }
}
