//! The Chromium guard (src/browser/guard.rs) on real Chromium: Chromium never outlives the process that
//! drives it, however that process lets go of it, and a dead Chromium still ends calls at once.
//!
//! The crash matrix (tests/it/crash_matrix.rs) covers the SIGKILL case through the binary; these cover the
//! in-process ways a session can end without `close()`.
use std::path::PathBuf;
use std::time::{Duration, Instant};

use oncepost::browser::session::process_alive;
use oncepost::browser::{BrowserError, BrowserSession, LaunchOptions};

fn guarded(dir: &tempfile::TempDir) -> LaunchOptions {
    let mut opts = LaunchOptions::new(dir.path().join("profile"));
    // This test harness is not oncepost: name the guard binary explicitly.
    opts.guard = Some(PathBuf::from(env!("CARGO_BIN_EXE_oncepost")));
    opts
}

/// Whether Chromium `pid` is gone within `bound`. If not, its process group is killed (so a red test
/// leaks nothing) and the answer is false.
async fn gone_within(pid: u32, bound: Duration) -> bool {
    let until = Instant::now() + bound;
    while Instant::now() < until {
        if !process_alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if process_alive(pid) {
        // SAFETY: kill(2) on the process group of the Chromium this test launched (its pid is the group).
        unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
        return false;
    }
    true
}

/// A session dropped without `close()` (a panic, a cancelled future, a lookup that timed out): the guard's
/// stdin closes, and it kills Chromium.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_dropped_without_close_leaves_no_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let session = BrowserSession::launch(&guarded(&dir))
        .await
        .expect("launch");
    let pid = session.pid().expect("chromium pid");
    assert!(process_alive(pid));
    drop(session);
    assert!(
        gone_within(pid, Duration::from_secs(10)).await,
        "Chromium {pid} outlived its dropped session"
    );
}

/// A cancelled launch-and-use (the future is dropped mid-flight, as a timeout does): no Chromium stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_session_future_leaves_no_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let opts = guarded(&dir);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let work = async move {
        let session = BrowserSession::launch(&opts).await.expect("launch");
        let _ = tx.send(session.pid().expect("chromium pid"));
        // Hold the session "forever": the timeout below cancels this future with the session alive.
        tokio::time::sleep(Duration::from_secs(600)).await;
        drop(session);
    };
    let pid_wait = async { rx.await.expect("pid") };
    let (pid, _) = tokio::join!(pid_wait, async {
        let _ = tokio::time::timeout(Duration::from_secs(8), work).await;
    });
    assert!(
        gone_within(pid, Duration::from_secs(10)).await,
        "Chromium {pid} outlived its cancelled session"
    );
}

/// Closing normally ends Chromium and the guard; killing Chromium under a live session ends the next call
/// at once with `Died` (through the guard's relay, not after a timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_ends_chromium_and_a_killed_chromium_ends_calls_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let session = BrowserSession::launch(&guarded(&dir))
        .await
        .expect("launch");
    let pid = session.pid().expect("chromium pid");
    session.close().await;
    assert!(gone_within(pid, Duration::from_secs(5)).await);

    let dir2 = tempfile::tempdir().unwrap();
    let session = BrowserSession::launch(&guarded(&dir2))
        .await
        .expect("launch");
    let pid = session.pid().expect("chromium pid");
    // SAFETY: kill(2) on the Chromium this test launched.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    let t = Instant::now();
    let mut last = None;
    while t.elapsed() < Duration::from_secs(5) {
        let r = session
            .liveness()
            .call("read the version", session.browser().version())
            .await;
        match r {
            Err(e @ BrowserError::Died { .. }) => {
                last = Some(e);
                break;
            }
            other => last = Some(other.err().unwrap_or(BrowserError::Script("alive".into()))),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        matches!(last, Some(BrowserError::Died { .. })),
        "after SIGKILL of Chromium: {last:?} after {:?}",
        t.elapsed()
    );
    session.close().await;
}
