//! Values of the source chain (issue 14) that cross the store boundary. The operations are in
//! `ops/sources.rs`.
use serde::Serialize;

use super::state::Status;
use crate::identity::{ClaimId, SourceVersionId};

/// The claim a new intent rests on: the version (already captured) and the claim's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IntentClaim {
    /// The claim's identity (source version + content).
    pub claim: ClaimId,
    /// The source version it rests on.
    pub version: SourceVersionId,
    /// The claim's content (by default the post text).
    pub content: String,
}

/// What one capture did to the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CaptureOutcome {
    /// The source's first version: it is the head.
    First,
    /// A version the store did not hold: it supersedes the stored head and is the head now.
    NewHead,
    /// The body is the head's (same normalized body, whatever its chrome or fetch time): nothing moved.
    SameAsHead,
    /// The body is an older version's, already superseded: the head stays where it is (a late or reverted
    /// body never moves the head back).
    Superseded,
}

impl CaptureOutcome {
    /// The label stored in `source_captures.outcome`.
    pub fn label(self) -> &'static str {
        match self {
            CaptureOutcome::First => "first",
            CaptureOutcome::NewHead => "new_head",
            CaptureOutcome::SameAsHead => "same_as_head",
            CaptureOutcome::Superseded => "superseded",
        }
    }
}

/// The answer of one capture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Captured {
    /// The source's stable id (canonical).
    pub stable_id: String,
    /// The version this body is.
    pub version: SourceVersionId,
    /// The head after the capture.
    pub head: SourceVersionId,
    /// The head it replaced, for a new head (None for the first version).
    pub superseded: Option<SourceVersionId>,
    /// What happened.
    pub outcome: CaptureOutcome,
}

/// One source, as listed.
#[derive(Debug, Clone, Serialize)]
pub struct SourceSummary {
    /// The stable id.
    pub stable_id: String,
    /// The head version.
    pub head: Option<SourceVersionId>,
    /// Since when it is the head (ms).
    pub head_since: i64,
    /// When the source was first captured (ms): an attribute, never identity.
    pub first_seen_at: i64,
    /// How many versions are stored.
    pub versions: i64,
    /// How many intents rest on any of its versions.
    pub intents: i64,
}

/// One stored version with what rests on it.
#[derive(Debug, Clone, Serialize)]
pub struct SourceVersionRow {
    /// The version id.
    pub version: SourceVersionId,
    /// The source's stable id.
    pub stable_id: String,
    /// html or text.
    pub kind: String,
    /// The normalized visible body the id was computed from.
    pub normalized: String,
    /// The head it superseded when first captured (None: the first version).
    pub supersedes: Option<SourceVersionId>,
    /// The version that superseded it (None: it is the head).
    pub superseded_by: Option<SourceVersionId>,
    /// Whether it is the head now.
    pub is_head: bool,
    /// First captured (ms).
    pub first_seen_at: i64,
    /// Captures that found this version.
    pub captures: i64,
    /// Distinct raw bodies among them (chrome that changed between fetches).
    pub raw_bodies: i64,
    /// Intents resting on it.
    pub intents: Vec<RestingIntent>,
}

/// An intent that rests on a source version.
#[derive(Debug, Clone, Serialize)]
pub struct RestingIntent {
    /// Its delivery key.
    pub key: String,
    /// Its state.
    pub state: Status,
    /// Its claim id.
    pub claim: ClaimId,
    /// The claim's content.
    pub claim_content: String,
}

/// A source's chain: the head and every version, oldest first.
#[derive(Debug, Clone, Serialize)]
pub struct SourceChain {
    /// The source.
    pub source: SourceSummary,
    /// Every stored version, oldest first.
    pub versions: Vec<SourceVersionRow>,
}

/// What an intent rests on, as the fence and the review page need it.
#[derive(Debug, Clone, Serialize)]
pub struct IntentSource {
    /// The claim.
    pub claim: ClaimId,
    /// The claim's content.
    pub claim_content: String,
    /// The source's stable id.
    pub stable_id: String,
    /// The version the claim rests on.
    pub version: SourceVersionId,
    /// The source's head now.
    pub head: Option<SourceVersionId>,
}

impl IntentSource {
    /// Whether the version the claim rests on is still the head.
    pub fn is_fresh(&self) -> bool {
        self.head.as_ref() == Some(&self.version)
    }
}

/// The freshness fence's answer for one intent.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "freshness", rename_all = "snake_case")]
pub enum Freshness {
    /// The intent rests on no source: nothing to check.
    NoSource,
    /// Its source version is the head.
    Fresh {
        /// What it rests on.
        source: IntentSource,
    },
    /// Its source version is no longer the head.
    Superseded {
        /// What it rests on (with the head now).
        source: IntentSource,
        /// Whether this call parked it (false: it was not pending, left as it is).
        parked: bool,
    },
}
