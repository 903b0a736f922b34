//! One browser, many sends (a warm worker): what must be true of a session before it carries another send.
//!
//! A cold publish gets a browser nothing ran in, and everything a page left running dies with it. A warm one
//! does not: a window a page opened, a page oncepost opened and did not get closed (a close that timed out),
//! a frame or a worker of the last send would still be there when the next send presses, and whatever it
//! sent then, with the LAST post's text, would meet the next press's armed takeover: handed over as the
//! create request, sent once by oncepost, a second copy of the last post. `/hostile/outbox` in Fixturebook
//! does exactly this (its press opens a `noopener` window that resends the post whenever a later page
//! announces a publish). Measured on it: the popup policy (`dialogs.rs`) already closes that window (CDP
//! reports an opener even for `noopener`), and this cleaning closes it too; with BOTH taken out, three warm
//! posts went out as 2, 1 and 0 copies; with either one, 1, 1, 1. So between two sends:
//!
//! - every page target is closed, and the browser must then list no page, frame or worker; anything still
//!   there after a bounded wait (a target that will not close) means the session is not reused: the caller
//!   closes it and the next send launches a clean browser. Service workers are the exception (see
//!   [`must_be_gone`]);
//! - the write guard forgets the send ([`WriteGuard::reset_between_sends`](super::WriteGuard)): no armed
//!   takeover, no watched text, no declared writes let through; a guard that failed to answer a request is
//!   not trusted again.
//!
//! The next send opens fresh pages (a fresh compose page, never a reused one), as a cold send does.
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::target::{
    CloseTargetParams, GetTargetsParams, TargetInfo,
};

use super::BrowserSession;
use crate::wait::Wait;

/// How long the targets may take to go once closed.
const TARGETS_GONE_WAIT: Duration = Duration::from_secs(3);

/// Targets of the last send that must be gone: every kind that runs a page's code, except the containers
/// (`browser`, `tab`) and service workers. A service worker outlives its pages in a cold browser's profile too
/// (its registration is kept and it starts again with the next page of its scope), and every page oncepost
/// opens bypasses it (`Network.setBypassServiceWorker`), so keeping the browser changes nothing there. And,
/// measured, a page's service worker never starts in oncepost's browser (its registration never becomes
/// ready: new workers are attached waiting for the debugger and a service worker is never resumed), so an
/// outbox a page keeps in one never sends the last post again: Fixturebook's `/hostile/sw-outbox`, which in
/// a plain browser does (tests/it/fixture_platform.rs), sends each of three warm posts once (tests/it/warm.rs).
fn must_be_gone(t: &TargetInfo) -> bool {
    !matches!(t.r#type.as_str(), "browser" | "tab" | "service_worker")
}

impl BrowserSession {
    /// Make the session blank for another send, or say why it must not carry one (then close it).
    pub async fn clean_between_sends(&self) -> Result<(), String> {
        let live = self.liveness();
        if live.is_dead() {
            return Err("the browser is gone".into());
        }
        // The last send's read page is closed below with every other page; it is never handed to the next.
        drop(self.take_read_page());
        let targets = self.targets().await?;
        for t in targets.iter().filter(|t| t.r#type == "page") {
            // A page that is already gone by the time we close it is what we want.
            let _ = live
                .call(
                    "close a page between sends",
                    self.browser()
                        .execute(CloseTargetParams::new(t.target_id.clone())),
                )
                .await;
        }
        let wait = Wait::new(
            "the last send's pages and workers to go",
            TARGETS_GONE_WAIT,
            Duration::from_millis(20),
        );
        loop {
            let left: Vec<TargetInfo> = self
                .targets()
                .await?
                .into_iter()
                .filter(must_be_gone)
                .collect();
            if left.is_empty() {
                break;
            }
            if wait.pause().await.is_err() {
                let what: Vec<String> = left
                    .iter()
                    .map(|t| format!("{} {}", t.r#type, crate::redact::text(&t.url)))
                    .collect();
                return Err(format!(
                    "the last send left {} target(s) running after its pages were closed: {}",
                    left.len(),
                    what.join(", ")
                ));
            }
        }
        self.write_guard().reset_between_sends()
    }

    /// Whether the browser still answers (one `Browser.getVersion`, bounded by 2 s): a warm browser is asked
    /// right before a send, since its Chromium may have died while it waited (killed, out of memory) a moment
    /// before the connection's end is noticed. A send started on a dead browser would fail its attempt.
    pub async fn answers(&self) -> bool {
        use chromiumoxide::cdp::browser_protocol::browser::GetVersionParams;
        self.liveness()
            .bounded(
                "ask the warm browser its version",
                Duration::from_secs(2),
                self.browser().execute(GetVersionParams::default()),
            )
            .await
            .is_ok()
    }

    async fn targets(&self) -> Result<Vec<TargetInfo>, String> {
        self.liveness()
            .call(
                "list the browser's targets",
                self.browser().execute(GetTargetsParams::default()),
            )
            .await
            .map(|r| r.result.target_infos.clone())
            .map_err(|e| e.to_string())
    }
}
