//! The platform's durable state: posts and login sessions, kept as one JSON file in the data dir.
//!
//! Every change is written with temp file + fsync + rename, so a crash leaves either the old or the new
//! file, never half of one. The file is loaded once at start.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::FixtureError;

/// File name of the state inside the data dir.
pub const STATE_FILE: &str = "fixturebook.json";

/// Format version written into the file; a different one is refused rather than misread.
const FORMAT: u32 = 1;

/// One published post, as `GET /api/posts` returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Post {
    /// Opaque id, `[a-z0-9]+`; the permalink is `/p/{id}`.
    pub id: String,
    /// The text as stored (mutated under `readback-mismatch`).
    pub text: String,
    /// Optional title (empty input is stored as `None`).
    pub title: Option<String>,
    /// Account of the session that posted, or `anonymous`.
    pub account: String,
    /// Creation time, RFC 3339 UTC with milliseconds.
    pub created_at: String,
    /// Insertion order; the feed is newest (highest) first.
    pub seq: u64,
    /// Creation time in milliseconds since the epoch (0 in state files written before it was kept), for
    /// the search's simulated index lag (`/search?lag_ms=N`).
    #[serde(default)]
    pub created_ms: i64,
    /// The category the compose page sent (`/compose?category=...`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Who may see it, as the compose page sent it (`/compose?visibility=1`), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
}

/// Everything persisted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlatformState {
    /// [`FORMAT`] of the file.
    pub format: u32,
    /// Secret the CSRF tokens are derived from; kept so open pages stay valid across restarts.
    pub csrf_secret: String,
    /// Session cookie value -> account name.
    pub sessions: BTreeMap<String, String>,
    /// Posts in insertion order.
    pub posts: Vec<Post>,
    /// Next `seq` to hand out.
    pub next_seq: u64,
}

impl PlatformState {
    /// An empty state; `path` is the state file it will be written to (named if the kernel has no
    /// randomness for the secret).
    fn fresh(path: PathBuf) -> Result<Self, FixtureError> {
        let csrf_secret = crate::secret::random_hex::<16>().map_err(|e| FixtureError::Io {
            path,
            source: std::io::Error::other(format!("no random CSRF secret: {e}")),
        })?;
        Ok(PlatformState {
            format: FORMAT,
            csrf_secret,
            sessions: BTreeMap::new(),
            posts: Vec::new(),
            next_seq: 1,
        })
    }

    /// Load the state from `dir`, or start empty when the file does not exist yet.
    pub fn load_or_new(dir: &Path) -> Result<Self, FixtureError> {
        let path = dir.join(STATE_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Self::fresh(path),
            Err(source) => return Err(FixtureError::Io { path, source }),
        };
        let state: PlatformState =
            serde_json::from_slice(&bytes).map_err(|source| FixtureError::Corrupt {
                path: path.clone(),
                source,
            })?;
        if state.format != FORMAT {
            return Err(FixtureError::UnsupportedFormat {
                path,
                found: state.format,
            });
        }
        Ok(state)
    }

    /// Append a post and return it.
    pub fn add_post(&mut self, text: String, title: Option<String>, account: String) -> Post {
        let seq = self.next_seq;
        self.next_seq += 1;
        let created_ms = now_ms();
        let post = Post {
            id: new_post_id(),
            text,
            title,
            account,
            created_at: format_rfc3339(created_ms as u64 / 1000, (created_ms % 1000) as u32),
            seq,
            created_ms,
            category: None,
            visibility: None,
        };
        self.posts.push(post.clone());
        post
    }

    /// The post with `id`, if any.
    pub fn post(&self, id: &str) -> Option<&Post> {
        self.posts.iter().find(|p| p.id == id)
    }

    /// Posts newest first.
    pub fn newest_first(&self) -> Vec<Post> {
        let mut v = self.posts.clone();
        v.sort_by_key(|p| std::cmp::Reverse(p.seq));
        v
    }
}

/// Write `state` to `dir` atomically and durably ([`crate::durable::write_atomic`]).
pub fn persist(dir: &Path, state: &PlatformState) -> Result<(), FixtureError> {
    let path = dir.join(STATE_FILE);
    let bytes = serde_json::to_vec_pretty(state).map_err(|source| FixtureError::Corrupt {
        path: path.clone(),
        source,
    })?;
    crate::durable::write_atomic(&path, &bytes).map_err(|source| FixtureError::Io { path, source })
}

/// A fresh post id: 12 characters of `[a-z0-9]` from a v4 UUID (lowercase hex is a subset).
fn new_post_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_owned()
}

/// The data dir the platform keeps its file in, created if missing.
pub fn ensure_dir(dir: &Path) -> Result<PathBuf, FixtureError> {
    std::fs::create_dir_all(dir).map_err(|source| FixtureError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    Ok(dir.to_path_buf())
}

/// Milliseconds since the epoch now.
pub fn now_ms() -> i64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() as i64).saturating_mul(1000) + i64::from(d.subsec_millis())
}

/// Format seconds since the epoch (UTC) as RFC 3339 with milliseconds.
fn format_rfc3339(secs: u64, millis: u32) -> String {
    crate::utc::rfc3339((secs as i64).saturating_mul(1000) + i64::from(millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        // 2026-11-30T15:20:11Z
        assert_eq!(format_rfc3339(1_796_052_011, 7), "2026-11-30T15:20:11.007Z");
        // Leap day 2024-02-29T23:59:59Z
        assert_eq!(
            format_rfc3339(1_709_251_199, 999),
            "2024-02-29T23:59:59.999Z"
        );
    }

    #[test]
    fn persist_then_load_round_trips_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = PlatformState::load_or_new(dir.path()).unwrap();
        let p = s.add_post("hello".into(), None, "alice".into());
        persist(dir.path(), &s).unwrap();
        let again = PlatformState::load_or_new(dir.path()).unwrap();
        assert_eq!(again.post(&p.id), Some(&p));
        assert_eq!(again.csrf_secret, s.csrf_secret);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(STATE_FILE)]);
    }

    #[test]
    fn corrupt_file_is_refused_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(STATE_FILE), b"{not json").unwrap();
        assert!(matches!(
            PlatformState::load_or_new(dir.path()),
            Err(FixtureError::Corrupt { .. })
        ));
    }
}
