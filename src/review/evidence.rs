//! Evidence linked from an intent's history (the shared convention in docs, written by publish and probe):
//! one `evidence` event per capture point whose details list items `{kind, sha256, path, media_type, bytes}`.
//!
//! The review page serves a file only when an evidence event of the intent names it, looks it up by its
//! sha256 alone (the stored `path` must be exactly the content-addressed path of that hash, so no path from
//! the database ever reaches the file system), and re-hashes the bytes before serving them.
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::store::{EventKind, Timeline};

/// Files larger than this are not served or embedded (screenshots are a few hundred KiB).
pub const MAX_EVIDENCE_BYTES: u64 = 32 * 1024 * 1024;

/// What an evidence item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    /// The page just before the create request was dispatched.
    ScreenshotBeforeDispatch,
    /// The page after the create response.
    ScreenshotAfterResponse,
    /// The read-back page.
    ScreenshotReadback,
    /// The write-request log (JSON, secrets redacted by the writer).
    WriteLog,
    /// An HTML excerpt of the page (stored, shown, served and exported as text, never rendered).
    DomExcerpt,
    /// The read-back result (JSON).
    Readback,
    /// A probe report (JSON).
    ProbeReport,
    /// A kind this oncepost does not know (listed, not served).
    #[serde(other)]
    Unknown,
}

impl EvidenceKind {
    /// Whether this is a PNG screenshot.
    pub fn is_screenshot(self) -> bool {
        matches!(
            self,
            EvidenceKind::ScreenshotBeforeDispatch
                | EvidenceKind::ScreenshotAfterResponse
                | EvidenceKind::ScreenshotReadback
        )
    }

    /// A label for people.
    pub fn title(self) -> &'static str {
        match self {
            EvidenceKind::ScreenshotBeforeDispatch => "Before dispatch",
            EvidenceKind::ScreenshotAfterResponse => "After the response",
            EvidenceKind::ScreenshotReadback => "Read-back page",
            EvidenceKind::WriteLog => "Write-request log",
            EvidenceKind::DomExcerpt => "Page excerpt (HTML, shown as text)",
            EvidenceKind::Readback => "Read-back result",
            EvidenceKind::ProbeReport => "Probe report",
            EvidenceKind::Unknown => "Other evidence",
        }
    }

    /// The media type the file is served with. Chosen by kind, never taken from the database, so a stored
    /// `text/html` cannot turn an excerpt into a page on this origin.
    pub fn served_media_type(self) -> &'static str {
        match self {
            k if k.is_screenshot() => "image/png",
            EvidenceKind::WriteLog | EvidenceKind::Readback | EvidenceKind::ProbeReport => {
                "application/json"
            }
            _ => "text/plain; charset=utf-8",
        }
    }

    /// The extension of the file in an export: chosen by kind like the media type, never the stored one, so a
    /// DOM excerpt stored as `.html` by an older oncepost is still written as text (`.txt`) that no browser
    /// renders as a page.
    pub fn export_ext(self) -> &'static str {
        match self {
            k if k.is_screenshot() => "png",
            EvidenceKind::WriteLog | EvidenceKind::Readback | EvidenceKind::ProbeReport => "json",
            _ => "txt",
        }
    }
}

#[derive(Debug, Deserialize)]
struct RawDetails {
    #[serde(default)]
    attempt: Option<String>,
    #[serde(default)]
    items: Vec<RawItem>,
}

#[derive(Debug, Deserialize)]
struct RawItem {
    kind: EvidenceKind,
    sha256: String,
    path: String,
    #[serde(default)]
    bytes: Option<u64>,
}

/// One evidence item, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceItem {
    /// What it is.
    pub kind: EvidenceKind,
    /// Its content hash (64 lowercase hex digits).
    pub sha256: String,
    /// The file extension from its content-addressed path (`png`, `json`, `html`).
    pub ext: String,
    /// Size as recorded.
    pub bytes: Option<u64>,
    /// The capture point (the evidence event's reason).
    pub capture_point: String,
    /// The attempt token it belongs to.
    pub attempt: Option<String>,
    /// When it was linked (ms).
    pub at: i64,
}

impl EvidenceItem {
    /// The file under the data dir: `evidence/sha256/<hh>/<sha256>.<ext>`.
    pub fn file(&self, data_dir: &Path) -> PathBuf {
        data_dir
            .join("evidence")
            .join("sha256")
            .join(&self.sha256[..2])
            .join(format!("{}.{}", self.sha256, self.ext))
    }
}

/// A link that does not follow the convention (listed on the page as such, never served).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLink {
    /// The capture point.
    pub capture_point: String,
    /// What is wrong.
    pub problem: String,
}

/// Every evidence link of an intent, in history order.
#[derive(Debug, Clone, Default)]
pub struct EvidenceLinks {
    /// Valid items.
    pub items: Vec<EvidenceItem>,
    /// Links that do not follow the convention.
    pub bad: Vec<BadLink>,
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Check a stored item against the convention; the path must be exactly the content-addressed path.
fn validate(raw: RawItem) -> Result<(EvidenceKind, String, String, Option<u64>), String> {
    if !is_sha256(&raw.sha256) {
        return Err(format!("{:?} is not a sha256", raw.sha256));
    }
    let prefix = format!("evidence/sha256/{}/{}.", &raw.sha256[..2], raw.sha256);
    let ext = raw
        .path
        .strip_prefix(&prefix)
        .filter(|e| {
            !e.is_empty()
                && e.len() <= 8
                && e.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
        .ok_or_else(|| {
            format!(
                "path {:?} is not the content-addressed path of its hash",
                raw.path
            )
        })?;
    Ok((raw.kind, raw.sha256.clone(), ext.to_string(), raw.bytes))
}

impl EvidenceLinks {
    /// Collect the links from an intent's `evidence` events.
    pub fn of(timeline: &Timeline) -> Self {
        let mut links = EvidenceLinks::default();
        for ev in timeline
            .events
            .iter()
            .filter(|e| e.kind == EventKind::Evidence)
        {
            let capture_point = ev.reason.clone().unwrap_or_default();
            let details: RawDetails = match serde_json::from_value(ev.details.clone()) {
                Ok(d) => d,
                Err(e) => {
                    links.bad.push(BadLink {
                        capture_point,
                        problem: format!("details are not an evidence list: {e}"),
                    });
                    continue;
                }
            };
            for raw in details.items {
                match validate(raw) {
                    Ok((kind, sha256, ext, bytes)) => links.items.push(EvidenceItem {
                        kind,
                        sha256,
                        ext,
                        bytes,
                        capture_point: capture_point.clone(),
                        attempt: details.attempt.clone().or_else(|| ev.attempt.clone()),
                        at: ev.at,
                    }),
                    Err(problem) => links.bad.push(BadLink {
                        capture_point: capture_point.clone(),
                        problem,
                    }),
                }
            }
        }
        links
    }

    /// The linked item with this hash (the only way a file is found).
    pub fn find(&self, sha256: &str) -> Option<&EvidenceItem> {
        self.items.iter().find(|i| i.sha256 == sha256)
    }

    /// Screenshots, in history order.
    pub fn screenshots(&self) -> impl Iterator<Item = &EvidenceItem> {
        self.items.iter().filter(|i| i.kind.is_screenshot())
    }
}

/// Why a linked file cannot be shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceProblem {
    /// The file is not there.
    #[error("the file is missing from the evidence folder")]
    Missing,
    /// The file is too big to show.
    #[error("the file is larger than {MAX_EVIDENCE_BYTES} bytes")]
    TooLarge,
    /// The bytes do not hash to the name: the file was changed after it was recorded.
    #[error(
        "the file's content does not match its recorded sha256 (changed after it was recorded)"
    )]
    HashMismatch,
    /// Any other read error.
    #[error("cannot read the file: {0}")]
    Unreadable(String),
}

/// Read a linked file and check that its bytes still hash to its name.
pub fn read_verified(data_dir: &Path, item: &EvidenceItem) -> Result<Vec<u8>, EvidenceProblem> {
    let path = item.file(data_dir);
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(EvidenceProblem::Missing),
        Err(e) => return Err(EvidenceProblem::Unreadable(e.to_string())),
    };
    if meta.len() > MAX_EVIDENCE_BYTES {
        return Err(EvidenceProblem::TooLarge);
    }
    let bytes = std::fs::read(&path).map_err(|e| EvidenceProblem::Unreadable(e.to_string()))?;
    if hex::encode(Sha256::digest(&bytes)) != item.sha256 {
        return Err(EvidenceProblem::HashMismatch);
    }
    Ok(bytes)
}

/// The bytes of a verified file as the page shows, serves and exports them: screenshots as they are; JSON
/// redacted again as JSON; a DOM excerpt redacted again as HTML and handed out as text; anything else
/// redacted as text. The writer redacts already ([`crate::evidence::inert`]); redacting again here means a
/// file written before the redaction layer existed, or by another tool, does not put a session on a screen.
pub fn shown_bytes(kind: EvidenceKind, bytes: &[u8]) -> Vec<u8> {
    match kind {
        k if k.is_screenshot() => bytes.to_vec(),
        EvidenceKind::WriteLog | EvidenceKind::Readback | EvidenceKind::ProbeReport => {
            crate::redact::json_bytes(bytes)
        }
        EvidenceKind::DomExcerpt => {
            crate::redact::html(&String::from_utf8_lossy(bytes)).into_bytes()
        }
        _ => crate::redact::text(&String::from_utf8_lossy(bytes)).into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_bytes_are_redacted_by_kind() {
        let log =
            br#"{"headers": {"Cookie": "fb_session=abc", "content-type": "application/json"}}"#;
        let shown = String::from_utf8(shown_bytes(EvidenceKind::WriteLog, log)).unwrap();
        assert!(
            !shown.contains("fb_session=abc") && shown.contains("application/json"),
            "{shown}"
        );
        let dom = b"<div><script>alert(1)</script><img src=x onerror=alert(2)>Failed</div>";
        let shown = String::from_utf8(shown_bytes(EvidenceKind::DomExcerpt, dom)).unwrap();
        assert!(
            !shown.contains("alert") && shown.contains("Failed"),
            "{shown}"
        );
        let png = b"\x89PNG token=x";
        assert_eq!(shown_bytes(EvidenceKind::ScreenshotReadback, png), png);
    }

    #[test]
    fn excerpts_are_served_and_exported_as_text() {
        assert_eq!(
            EvidenceKind::DomExcerpt.served_media_type(),
            "text/plain; charset=utf-8"
        );
        assert_eq!(EvidenceKind::DomExcerpt.export_ext(), "txt");
        assert_eq!(EvidenceKind::Unknown.export_ext(), "txt");
        assert_eq!(EvidenceKind::WriteLog.export_ext(), "json");
        assert_eq!(EvidenceKind::ScreenshotReadback.export_ext(), "png");
    }

    #[test]
    fn paths_must_be_content_addressed() {
        let h = "ab".repeat(32);
        let ok = RawItem {
            kind: EvidenceKind::WriteLog,
            sha256: h.clone(),
            path: format!("evidence/sha256/ab/{h}.json"),
            bytes: None,
        };
        assert!(validate(ok).is_ok());
        for path in [
            format!("evidence/sha256/ab/{h}.json/../../../../etc/passwd"),
            "../../etc/passwd".to_string(),
            format!("/evidence/sha256/ab/{h}.json"),
            format!("evidence/sha256/cd/{h}.json"),
            format!("evidence/sha256/ab/{h}."),
        ] {
            let bad = RawItem {
                kind: EvidenceKind::WriteLog,
                sha256: h.clone(),
                path: path.clone(),
                bytes: None,
            };
            assert!(validate(bad).is_err(), "{path}");
        }
    }
}
