//! Crash failpoints: the process kills itself with SIGKILL at a named point, for the crash matrix.
//!
//! `ONCEPOST_FAILPOINT=after_authorize` (or a comma-separated list) arms points; an unset or empty variable
//! arms none, and then [`hit`] costs one relaxed atomic load. SIGKILL is the point: no destructor, no
//! `finally`, no flush runs, exactly as when the kernel's OOM killer or a power cut ends a worker. What the
//! store and the platform hold afterwards is what recovery has to work with.
//!
//! The points are compiled into every build (a production process never has the variable set) so that the
//! binary under test is the binary that ships.
use std::io::Write;
use std::sync::OnceLock;

/// A named crash point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailPoint {
    /// `begin` claimed the intent and minted the attempt.
    AfterBegin,
    /// The compose page is filled and the publish control checked; not yet authorized.
    AfterCompose,
    /// The store authorized the dispatch; the control is not pressed yet.
    AfterAuthorize,
    /// The create request's last byte went to the connection; its response has not been read.
    RequestSent,
    /// The transport has the response (or its failure); nothing settled yet.
    AfterResponse,
    /// The read-back page is open and loaded; its verdict is not taken yet.
    DuringReadback,
    /// Inside the settle transaction, after its UPDATE and events, before the commit.
    DuringSettle,
    /// The reconcile lookup is recorded and its page is loaded; what it saw is not recorded yet.
    DuringReconcile,
}

impl FailPoint {
    /// Every point, in flow order.
    pub const ALL: [FailPoint; 8] = [
        FailPoint::AfterBegin,
        FailPoint::AfterCompose,
        FailPoint::AfterAuthorize,
        FailPoint::RequestSent,
        FailPoint::AfterResponse,
        FailPoint::DuringReadback,
        FailPoint::DuringSettle,
        FailPoint::DuringReconcile,
    ];

    /// The name used in `ONCEPOST_FAILPOINT`.
    pub fn name(self) -> &'static str {
        match self {
            FailPoint::AfterBegin => "after_begin",
            FailPoint::AfterCompose => "after_compose",
            FailPoint::AfterAuthorize => "after_authorize",
            FailPoint::RequestSent => "request_sent",
            FailPoint::AfterResponse => "after_response",
            FailPoint::DuringReadback => "during_readback",
            FailPoint::DuringSettle => "during_settle",
            FailPoint::DuringReconcile => "during_reconcile",
        }
    }

    /// The point with this name.
    pub fn parse(s: &str) -> Option<FailPoint> {
        FailPoint::ALL.into_iter().find(|p| p.name() == s.trim())
    }
}

/// The environment variable that arms points.
pub const ENV: &str = "ONCEPOST_FAILPOINT";

fn armed() -> &'static [FailPoint] {
    static ARMED: OnceLock<Vec<FailPoint>> = OnceLock::new();
    ARMED.get_or_init(|| {
        let Ok(v) = std::env::var(ENV) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for name in v.split(',').filter(|s| !s.trim().is_empty()) {
            match FailPoint::parse(name) {
                Some(p) => out.push(p),
                // A typo must not silently turn a crash test into a pass: refuse loudly.
                None => {
                    let _ = writeln!(
                        std::io::stderr(),
                        "{ENV}: unknown failpoint {name:?} (known: {})",
                        FailPoint::ALL.map(|p| p.name()).join(", ")
                    );
                    std::process::exit(2);
                }
            }
        }
        out
    })
}

/// Check the variable now (so that a typo is reported at start-up, not at the point).
pub fn init() {
    let _ = armed();
}

/// Whether `p` is armed in this process.
pub fn is_armed(p: FailPoint) -> bool {
    armed().contains(&p)
}

/// Kill this process with SIGKILL if `p` is armed.
pub fn hit(p: FailPoint) {
    if is_armed(p) {
        // Not eprintln!: on a closed stderr it would panic instead of reaching the SIGKILL under test.
        let _ = writeln!(std::io::stderr(), "failpoint {}: SIGKILL", p.name());
        // kill(2) on our own pid; SIGKILL cannot be caught, so this does not return.
        use rustix::process::{Signal, getpid, kill_process};
        let _ = kill_process(getpid(), Signal::KILL);
        // SIGKILL to self is delivered before kill(2) returns; never continue past an armed point.
        std::process::abort();
    }
}

/// The environment variable that makes one point wait instead: `POINT:FILE`. At the point the process
/// creates `FILE.reached` and waits (at most [`PAUSE_BOUND`]) until `FILE` exists, then goes on. For tests that
/// must change the world at an exact moment (a source superseded between compose and authorization), with the
/// binary that ships.
pub const PAUSE_ENV: &str = "ONCEPOST_PAUSE_AT";

/// The longest a paused point waits before going on by itself.
pub const PAUSE_BOUND: std::time::Duration = std::time::Duration::from_secs(60);

/// Wait at `p` if `ONCEPOST_PAUSE_AT` names it (see [`PAUSE_ENV`]); return at once otherwise.
pub async fn pause(p: FailPoint) {
    let Ok(v) = std::env::var(PAUSE_ENV) else {
        return;
    };
    let Some((name, file)) = v.split_once(':') else {
        return;
    };
    if FailPoint::parse(name) != Some(p) {
        return;
    }
    let go = std::path::PathBuf::from(file);
    let _ = std::fs::write(format!("{file}.reached"), b"");
    let _ = writeln!(std::io::stderr(), "pause {}: waiting for {file}", p.name());
    let deadline = std::time::Instant::now() + PAUSE_BOUND;
    while !go.exists() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_point_parses_back_from_its_name() {
        for p in FailPoint::ALL {
            assert_eq!(FailPoint::parse(p.name()), Some(p));
        }
        assert_eq!(FailPoint::parse("after_nothing"), None);
    }
}
