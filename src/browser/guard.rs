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
//!   oncepost ──ws (one client, secret path)──▶ guard ──fd 3/4 pipe──▶ Chromium (own process group)
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
//!
//! No DevTools port: Chromium runs with `--remote-debugging-pipe`, so it has no TCP listener at all (a
//! `--remote-debugging-port` listener on 127.0.0.1 let any local process read the account's HttpOnly
//! cookies). The guard's own WebSocket listener accepts exactly one client, on a path with 256 random bits,
//! and is closed the moment that client is in.
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
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

/// Id of the guard's own readiness call on the pipe. Chromium refuses an id outside 32 bits (a larger one
/// got no answer); chromiumoxide numbers its calls from 0 and connects only after this one is answered.
const READY_CALL_ID: u64 = 2_000_000_000;

async fn guard(argv: Vec<OsString>, out: &mut tokio::io::Stdout) -> Result<(), String> {
    use command_fds::{CommandFdExt, FdMapping};
    use std::os::fd::OwnedFd;

    let (exe, args) = argv.split_first().ok_or("no Chromium command given")?;
    // --remote-debugging-pipe: Chromium reads commands on fd 3 and writes replies on fd 4, each message
    // ended by a NUL. No TCP listener exists in any Chromium process and no DevToolsActivePort is written.
    let (cmd_rx, cmd_tx) = std::io::pipe().map_err(|e| format!("cannot make a pipe: {e}"))?;
    let (reply_rx, reply_tx) = std::io::pipe().map_err(|e| format!("cannot make a pipe: {e}"))?;
    // No UDP socket in any Chromium process (door/no_udp.rs says why): the filter goes on this guard process
    // first, every thread, and Chromium inherits it with everything it forks. A filter that cannot be built
    // or installed fails the launch.
    super::door::no_udp::shut_this_process()?;
    let mut command = Command::new(exe);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    command
        .fd_mappings(vec![
            FdMapping {
                parent_fd: OwnedFd::from(cmd_rx),
                child_fd: 3,
            },
            FdMapping {
                parent_fd: OwnedFd::from(reply_tx),
                child_fd: 4,
            },
        ])
        .map_err(|e| format!("cannot hand Chromium its pipe: {e}"))?;
    let mut chromium = command.spawn().map_err(|e| {
        format!(
            "cannot start {} (with its no-UDP seccomp filter): {e}",
            Path::new(exe).display()
        )
    })?;
    // The child's ends live in the command: drop it, or Chromium's exit would never read as EOF here.
    drop(command);
    let pid = chromium.id().ok_or("Chromium exited at once")?;
    let stderr = chromium.stderr.take().ok_or("no stderr from Chromium")?;
    let tail = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let t2 = tail.clone();
    // Keep draining Chromium's stderr (a full pipe would block it), keeping the last lines for errors.
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            let mut t = t2.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            t.push(l);
            if t.len() > 20 {
                t.remove(0);
            }
        }
    });
    let tail_text = || {
        tail.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .join(" | ")
    };
    let mut to_pipe = tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(cmd_tx))
        .map_err(|e| format!("cannot use the DevTools pipe: {e}"))?;
    let mut from_pipe = PipeReader::new(
        tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reply_rx))
            .map_err(|e| format!("cannot use the DevTools pipe: {e}"))?,
    );
    // Ready when Chromium answers a call on the pipe (measured: 0.28-0.30 s).
    let ready = async {
        let call = format!(r#"{{"id":{READY_CALL_ID},"method":"Browser.getVersion"}}"#);
        to_pipe.write_all(call.as_bytes()).await.ok()?;
        to_pipe.write_all(b"\0").await.ok()?;
        loop {
            let msg = from_pipe.next_message().await?;
            if msg.contains(&format!("\"id\":{READY_CALL_ID}")) {
                return Some(());
            }
        }
    };
    let ready = tokio::select! {
        r = tokio::time::timeout(Duration::from_secs(30), ready) => r,
        _ = chromium.wait() => Ok(None),
    };
    match ready {
        Ok(Some(())) => {}
        other => {
            kill_group(pid, &mut chromium).await;
            return Err(if other.is_err() {
                "Chromium did not answer on its DevTools pipe within 30 s".into()
            } else {
                format!("Chromium exited: {}", tail_text())
            });
        }
    }
    // oncepost reaches the pipe through one WebSocket: a free port, a path no other process can guess (256
    // random bits), exactly one client, and the listener closed as soon as it is in.
    let token = crate::secret::random_hex::<32>()
        .map_err(|e| format!("no randomness from the kernel: {e}"))?;
    let path = format!("/devtools/browser/{token}");
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
    let accept_ours = async {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            };
            let _ = stream.set_nodelay(true);
            let want = path.clone();
            // The error type is the handshake library's (an HTTP response), not ours to shrink.
            #[allow(clippy::result_large_err)]
            let check = move |req: &async_tungstenite::tungstenite::handshake::server::Request,
                              resp| {
                if crate::secret::same(req.uri().path().as_bytes(), want.as_bytes()) {
                    Ok(resp)
                } else {
                    let mut no =
                        async_tungstenite::tungstenite::handshake::server::ErrorResponse::new(
                            Some("not found".into()),
                        );
                    *no.status_mut() = async_tungstenite::tungstenite::http::StatusCode::NOT_FOUND;
                    Err(no)
                }
            };
            let config = async_tungstenite::tungstenite::protocol::WebSocketConfig::default()
                .max_message_size(Some(MAX_MESSAGE))
                .max_frame_size(Some(MAX_MESSAGE));
            let hs =
                async_tungstenite::tokio::accept_hdr_async_with_config(stream, check, Some(config));
            if let Ok(Ok(ws)) = tokio::time::timeout(Duration::from_secs(5), hs).await {
                return ws;
            }
        }
    };
    let accepted = tokio::select! {
        a = tokio::time::timeout(Duration::from_secs(30), accept_ours) => a,
        _ = &mut parent_gone => { kill_group(pid, &mut chromium).await; return Ok(()); }
        _ = sigs.any() => { kill_group(pid, &mut chromium).await; return Ok(()); }
        _ = chromium.wait() => return Err("Chromium exited before oncepost connected".into()),
    };
    let Ok(ws) = accepted else {
        kill_group(pid, &mut chromium).await;
        return Err("oncepost did not connect within 30 s".into());
    };
    drop(listener);
    let (mut ws_tx, mut ws_rx) = futures::StreamExt::split(ws);
    // oncepost -> Chromium. Ends when oncepost closes or dies.
    let to_chromium = async {
        use futures::StreamExt;
        while let Some(Ok(msg)) = ws_rx.next().await {
            use async_tungstenite::tungstenite::Message;
            let bytes: Vec<u8> = match msg {
                Message::Text(t) => t.as_bytes().to_vec(),
                Message::Binary(b) => b.to_vec(),
                Message::Close(_) => return,
                _ => continue,
            };
            if to_pipe.write_all(&bytes).await.is_err() || to_pipe.write_all(b"\0").await.is_err() {
                return;
            }
        }
    };
    // Chromium -> oncepost. Ends when Chromium closes its end (exited, or closed by Browser.close).
    let to_oncepost = async {
        use futures::SinkExt;
        while let Some(msg) = from_pipe.next_message().await {
            let m = async_tungstenite::tungstenite::Message::text(msg);
            if ws_tx.send(m).await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        // oncepost went away: Chromium must die before it can see the pipe close.
        _ = to_chromium => kill_group(pid, &mut chromium).await,
        _ = &mut parent_gone => kill_group(pid, &mut chromium).await,
        _ = sigs.any() => kill_group(pid, &mut chromium).await,
        // Chromium ended it itself (normal close or crash): make sure it is gone too.
        _ = to_oncepost => {
            let gone = tokio::time::timeout(Duration::from_secs(3), chromium.wait()).await;
            if gone.is_err() {
                kill_group(pid, &mut chromium).await;
            }
        }
    }
    Ok(())
}

/// The largest DevTools message relayed (screenshots and fulfilled bodies travel as base64; a body of about
/// 113 MB as base64 dropped the whole connection when measured, so the door caps bodies well below this).
const MAX_MESSAGE: usize = 256 * 1024 * 1024;

/// NUL-separated messages from Chromium's end of the pipe.
struct PipeReader {
    rx: tokio::net::unix::pipe::Receiver,
    buf: Vec<u8>,
}

impl PipeReader {
    fn new(rx: tokio::net::unix::pipe::Receiver) -> Self {
        PipeReader {
            rx,
            buf: Vec::with_capacity(64 * 1024),
        }
    }

    /// The next whole message, or `None` once the pipe ends (or a message outgrows [`MAX_MESSAGE`]).
    async fn next_message(&mut self) -> Option<String> {
        let mut scanned = 0;
        loop {
            if let Some(i) = self.buf[scanned..].iter().position(|b| *b == 0) {
                let end = scanned + i;
                let msg = String::from_utf8_lossy(&self.buf[..end]).into_owned();
                self.buf.drain(..=end);
                return Some(msg);
            }
            scanned = self.buf.len();
            if scanned > MAX_MESSAGE {
                return None;
            }
            let mut chunk = [0u8; 64 * 1024];
            match self.rx.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

/// SIGKILL Chromium's process group (browser, renderers, helpers), then reap the browser process.
async fn kill_group(pid: u32, chromium: &mut Child) {
    // kill(2) on the process group we created for Chromium (its pid is the group id).
    if let Some(group) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::browser::session::process_alive;

    /// The whole group goes, not only its leader: a grandchild (as Chromium's renderers are) is killed too.
    #[tokio::test]
    async fn kill_group_ends_the_leader_and_its_descendants() {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 60 & echo $!; wait"])
            .stdout(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let pid = child.id().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let grandchild: u32 = lines.next_line().await.unwrap().unwrap().parse().unwrap();
        assert!(process_alive(grandchild));
        kill_group(pid, &mut child).await;
        assert!(!process_alive(pid), "the leader {pid} survived");
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while process_alive(grandchild) && std::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            !process_alive(grandchild),
            "the grandchild {grandchild} survived"
        );
    }
}
