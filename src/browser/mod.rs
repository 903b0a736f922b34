//! The Chromium driver: sessions with bounded calls, typed locators, one-evaluation locator checks,
//! non-submitting probes, the write guard, dialog/popup policy and annotated screenshots; for publishing,
//! the compose page ([`compose`]: fill, strict checks, the one press), the create-request takeover
//! ([`transport`]: the harness sends it once) and read-back in fresh pages ([`readback`]).
//!
//! This module knows nothing about contract files: callers hand it a [`ProbePlan`] built from browser-level
//! types, so it stays reusable. It never touches the store: the press takes the store's authorization value
//! (a type, consumed) and calls a `before_send` hook the publish flow supplies.
//!
//! ```text
//!  ProbePlan ──► probe::run ──► BrowserSession (Chromium + handler task, Liveness bounds every call)
//!                   │  ├─ WriteGuard: browser-wide Fetch interception, fails every non-GET/HEAD
//!                   │  ├─ DialogPolicy: answers alert/confirm/prompt/beforeunload, closes popups
//!                   │  └─ checks: all locators in one Runtime.evaluate
//!                   └──► ProbeReport (+ annotated PNG)
//! ```
pub mod checks;
pub mod compose;
pub mod dialogs;
pub mod door;
pub mod guard;
pub mod locator;
pub mod probe;
pub mod readback;
pub mod screenshot;
pub mod session;
pub mod transport;
pub mod write_guard;

use std::path::PathBuf;
use std::time::Duration;

pub use checks::{ElementStates, LocatorCheck};
pub use compose::{Actionable, ComposePage, Pressed, SuccessRule, SuccessSeen};
pub use dialogs::{DialogEvent, DialogPolicy};
pub use locator::{
    EditKind, ElementState, Locator, NamedLocator, NonPublishingStep, PublishControl, Purpose,
    StepAction, Strategy,
};
pub use probe::{ProbeOptions, ProbePlan, ProbeReport, ProbeVerdict};
pub use readback::{
    Alarm, Authorship, Candidate, LeadReason, ReadVerdict, Readback, ReadbackPlan, TextRule,
};
pub use session::{BrowserSession, LaunchOptions, Liveness, find_chromium};
pub use transport::{
    CreatePattern, DispatchOutcome, OneShotSender, TransportMode, TransportOptions, UrlMatch,
    WireRequest, WriteLogEntry,
};
pub use write_guard::{WriteAttempt, WriteGuard};

/// Errors of the browser boundary.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// No Chromium binary was found.
    #[error("Chromium not found (looked at {looked}); {hint}", hint = session::INSTALL_HINT)]
    ChromiumMissing {
        /// Where we looked.
        looked: String,
    },
    /// Chromium could not be started.
    #[error("cannot launch Chromium: {message}")]
    Launch {
        /// Why.
        message: String,
    },
    /// The profile directory could not be prepared.
    #[error("cannot prepare browser profile {dir}: {message}")]
    Profile {
        /// The directory.
        dir: PathBuf,
        /// Why.
        message: String,
    },
    /// The browser process died or its connection broke.
    #[error("the browser died (connection lost) during {during}")]
    Died {
        /// What was being done.
        during: String,
    },
    /// A call or wait ran past its bound.
    #[error("{during} did not finish within {after:?}")]
    Timeout {
        /// What was being done.
        during: String,
        /// The bound.
        after: Duration,
    },
    /// Chromium answered a call with an error.
    #[error("{during} failed: {message}")]
    Cdp {
        /// What was being done.
        during: String,
        /// Chromium's message.
        message: String,
    },
    /// The page's JavaScript for the checks failed or returned something unexpected.
    #[error("locator check script failed: {0}")]
    Script(String),
    /// A plan that cannot be run (e.g. a step aimed at the publish control).
    #[error("invalid probe plan: {0}")]
    Plan(String),
    /// Reading or writing a local file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// Chromium's network errors that mean a navigation reached no server at all: nothing was exchanged with the
/// platform, and the URL (or the platform's address) is wrong or down.
const UNREACHABLE_NET_ERRORS: [&str; 6] = [
    "net::ERR_CONNECTION_REFUSED",
    "net::ERR_NAME_NOT_RESOLVED",
    "net::ERR_ADDRESS_UNREACHABLE",
    "net::ERR_ADDRESS_INVALID",
    "net::ERR_UNSAFE_PORT",
    "net::ERR_INVALID_URL",
];

impl BrowserError {
    /// The Chromium network error, when this is a navigation that reached no server (connection refused,
    /// name not resolved, ...).
    pub fn unreachable(&self) -> Option<&'static str> {
        match self {
            BrowserError::Cdp { message, .. } => UNREACHABLE_NET_ERRORS
                .into_iter()
                .find(|code| message.contains(code)),
            _ => None,
        }
    }
}

/// A wait that ran out is a bound that was passed: `Timeout`, naming what was awaited.
impl From<crate::wait::Expired> for BrowserError {
    fn from(e: crate::wait::Expired) -> Self {
        BrowserError::Timeout {
            during: e.what,
            after: e.bound,
        }
    }
}

pub use crate::durable::private_dir;
