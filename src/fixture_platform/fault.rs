//! Create-request fault modes: how `POST /api/posts` misbehaves, set at start or via `/__admin/fault`.
//!
//! Each mode models one way a real platform (or the network in front of it) leaves a publisher unsure
//! whether its post went out. The modes only change what happens AFTER the request head arrived; the
//! arrival itself is always counted first.
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Upper bound on `delay_ms`, so a typo cannot park a connection for hours.
pub const MAX_DELAY_MS: u64 = 120_000;

/// Delay used by `commit-then-delay` when none is given: long enough to trip a short client timeout.
pub const DEFAULT_DELAY_MS: u64 = 5_000;

/// What the create route does with a request. Spelled in kebab-case everywhere (CLI, JSON, docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum FaultMode {
    /// Store the post and answer 201 `{"id", "url"}`.
    #[default]
    Normal,
    /// Store the post, then answer 500: the write happened although the answer says it failed.
    #[serde(rename = "commit-then-500")]
    #[value(name = "commit-then-500")]
    CommitThen500,
    /// Store the post, then close the connection without sending a single response byte.
    CommitThenDrop,
    /// Store the post, then hold the answer `delay_ms` before sending the normal 201.
    CommitThenDelay,
    /// Reset the connection (RST) right after the request head, without reading the body or storing.
    ResetBeforeRead,
    /// Answer 422 with a JSON error; nothing is stored.
    #[serde(rename = "reject-4xx")]
    #[value(name = "reject-4xx")]
    Reject4xx,
    /// Store the post and answer 201 with a body lacking `id`/`url`, so the page never navigates.
    NoSuccessSignal,
    /// Store the post with a mutated text (` (edited)` appended), answer 201 normally.
    ReadbackMismatch,
    /// Answer 429 Too Many Requests with `Retry-After` (whole seconds of `delay_ms`, at least 1); nothing is
    /// stored: a platform's rate limit.
    RateLimited,
    /// Answer 401 Unauthorized; nothing is stored: the account's session ended between the compose page's
    /// load and the press.
    SessionExpired,
}

impl FaultMode {
    /// Every mode, in documentation order.
    pub const ALL: [FaultMode; 10] = [
        FaultMode::Normal,
        FaultMode::CommitThen500,
        FaultMode::CommitThenDrop,
        FaultMode::CommitThenDelay,
        FaultMode::ResetBeforeRead,
        FaultMode::Reject4xx,
        FaultMode::NoSuccessSignal,
        FaultMode::ReadbackMismatch,
        FaultMode::RateLimited,
        FaultMode::SessionExpired,
    ];

    /// The one spelling of this mode (same as serde and the CLI).
    pub fn label(self) -> &'static str {
        match self {
            FaultMode::Normal => "normal",
            FaultMode::CommitThen500 => "commit-then-500",
            FaultMode::CommitThenDrop => "commit-then-drop",
            FaultMode::CommitThenDelay => "commit-then-delay",
            FaultMode::ResetBeforeRead => "reset-before-read",
            FaultMode::Reject4xx => "reject-4xx",
            FaultMode::NoSuccessSignal => "no-success-signal",
            FaultMode::ReadbackMismatch => "readback-mismatch",
            FaultMode::RateLimited => "rate-limited",
            FaultMode::SessionExpired => "session-expired",
        }
    }
}

impl fmt::Display for FaultMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A fault-mode spelling that is not one of [`FaultMode::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown fault mode {given:?}; expected one of: normal, commit-then-500, commit-then-drop, commit-then-delay, reset-before-read, reject-4xx, no-success-signal, readback-mismatch, rate-limited, session-expired"
)]
pub struct UnknownFaultMode {
    /// What was given.
    pub given: String,
}

impl FromStr for FaultMode {
    type Err = UnknownFaultMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultMode::ALL
            .into_iter()
            .find(|m| m.label() == s)
            .ok_or_else(|| UnknownFaultMode {
                given: s.to_owned(),
            })
    }
}

/// The active fault: a mode plus the delay `commit-then-delay` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    /// What the create route does.
    pub mode: FaultMode,
    /// Milliseconds `commit-then-delay` holds its answer (capped at [`MAX_DELAY_MS`]); `rate-limited` says
    /// as much in its `Retry-After`.
    #[serde(default = "default_delay_ms")]
    pub delay_ms: u64,
}

fn default_delay_ms() -> u64 {
    DEFAULT_DELAY_MS
}

impl Default for Fault {
    fn default() -> Self {
        Fault::new(FaultMode::Normal)
    }
}

impl Fault {
    /// A fault with the default delay.
    pub fn new(mode: FaultMode) -> Self {
        Fault {
            mode,
            delay_ms: DEFAULT_DELAY_MS,
        }
    }

    /// The same fault with `delay_ms` set (capped at [`MAX_DELAY_MS`]).
    #[must_use]
    pub fn with_delay_ms(self, delay_ms: u64) -> Self {
        Fault {
            delay_ms: delay_ms.min(MAX_DELAY_MS),
            ..self
        }
    }

    /// The delay as a duration, capped.
    pub fn delay(&self) -> Duration {
        Duration::from_millis(self.delay_ms.min(MAX_DELAY_MS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_label_round_trips_through_from_str_and_serde() {
        for mode in FaultMode::ALL {
            assert_eq!(mode.label().parse::<FaultMode>(), Ok(mode));
            let json = serde_json::to_string(&mode).unwrap();
            assert_eq!(json, format!("\"{}\"", mode.label()));
        }
        assert!("commit_then_drop".parse::<FaultMode>().is_err());
    }

    #[test]
    fn delay_is_capped() {
        let f = Fault::new(FaultMode::CommitThenDelay).with_delay_ms(u64::MAX);
        assert_eq!(f.delay_ms, MAX_DELAY_MS);
    }
}
