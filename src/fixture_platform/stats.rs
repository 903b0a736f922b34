//! Server-side arrival counters, the ground truth a test compares a browser's behaviour against.
//!
//! A request is counted the moment its head has been parsed, before any fault handling, so a request the
//! fault mode drops or resets still shows up here.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Counters, as `GET /__admin/stats` returns them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// `POST /api/posts` requests whose head arrived (whatever happened to them afterwards).
    pub create_arrivals: u64,
    /// Create requests that were stored as a post.
    pub create_stored: u64,
    /// Every other write (any method but GET/HEAD/OPTIONS, outside `/__admin/`), keyed `"METHOD /path"`.
    pub other_writes: BTreeMap<String, u64>,
    /// Sum of `other_writes`.
    pub other_writes_total: u64,
    /// WebSocket handshakes that reached `GET /api/live` (any context: page, frame, worker).
    #[serde(default)]
    pub websocket_handshakes: u64,
    /// WebSocket frames received there.
    #[serde(default)]
    pub websocket_frames: u64,
    /// Posts stored from a WebSocket `publish` frame (also counted in `create_stored`).
    #[serde(default)]
    pub websocket_posts: u64,
    /// UDP datagrams that reached the platform's port number (WebRTC STUN/ICE aimed there).
    #[serde(default)]
    pub udp_datagrams: u64,
    /// Synced drafts handed to a compose page (`GET /api/drafts/synced` answering one).
    #[serde(default)]
    pub synced_drafts_served: u64,
}

impl Stats {
    /// Arrivals recorded for `"METHOD /path"` (0 when none).
    pub fn writes_to(&self, key: &str) -> u64 {
        self.other_writes.get(key).copied().unwrap_or(0)
    }

    /// Count one non-create write.
    pub(crate) fn record_other_write(&mut self, key: String) {
        *self.other_writes.entry(key).or_insert(0) += 1;
        self.other_writes_total += 1;
    }
}
