//! Content-addressed evidence: files under `<data-dir>/evidence/sha256/<hh>/<sha256>.<ext>` (files 0600,
//! dirs 0700), written atomically and durably ([`crate::durable::write_atomic`]). Everything is redacted on
//! the way in ([`crate::redact`]): JSON as JSON, DOM excerpts as HTML (and then stored as plain text, `.txt`,
//! so no browser ever renders a page's markup from here), other text as text. Screenshots are stored as they
//! are.
//!
//! An attempt links its evidence from its history with one `evidence` event per capture point whose
//! details list [`Item`]s (paths relative to the data dir), as docs/states.md and the store API describe.
use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use crate::redact::REDACTED;

/// Errors storing evidence.
#[derive(Debug, thiserror::Error)]
#[error("evidence {what}: {source}")]
pub struct EvidenceError {
    /// What was being done.
    pub what: String,
    /// The cause.
    pub source: std::io::Error,
}

/// One stored file, as linked from history.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Item {
    /// `screenshot_before_dispatch`, `write_log`, `dom_excerpt`, ...
    pub kind: String,
    /// sha256 hex of the content.
    pub sha256: String,
    /// Path relative to the data dir.
    pub path: String,
    /// MIME type.
    pub media_type: String,
    /// Size.
    pub bytes: u64,
}

/// The evidence store of one data dir.
#[derive(Debug, Clone)]
pub struct EvidenceStore {
    data_dir: PathBuf,
}

impl EvidenceStore {
    /// Evidence under `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        EvidenceStore {
            data_dir: data_dir.into(),
        }
    }

    /// Store `bytes` (kind `kind`, extension `ext`), redacted by what they are ([`inert`]), and describe what
    /// was stored.
    pub fn put(
        &self,
        kind: &str,
        bytes: &[u8],
        ext: &str,
        media_type: &str,
    ) -> Result<Item, EvidenceError> {
        let (bytes, ext, media_type) = inert(kind, bytes, ext, media_type);
        self.put_exact(kind, &bytes, ext, media_type)
    }

    fn put_exact(
        &self,
        kind: &str,
        bytes: &[u8],
        ext: &str,
        media_type: &str,
    ) -> Result<Item, EvidenceError> {
        let (hash, path) = store_bytes(&self.data_dir.join("evidence").join("sha256"), bytes, ext)?;
        let rel = path
            .strip_prefix(&self.data_dir)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        Ok(Item {
            kind: kind.into(),
            sha256: hash,
            path: rel,
            media_type: media_type.into(),
            bytes: bytes.len() as u64,
        })
    }

    /// Store a JSON value, redacted and pretty-printed.
    pub fn put_json(&self, kind: &str, v: &serde_json::Value) -> Result<Item, EvidenceError> {
        let v = crate::redact::json(v);
        let text = serde_json::to_string_pretty(&v).unwrap_or_else(|_| v.to_string());
        self.put_exact(kind, text.as_bytes(), "json", "application/json")
    }
}

/// The media type DOM excerpts are stored and served with: text, never markup.
pub const EXCERPT_MEDIA_TYPE: &str = "text/plain; charset=utf-8";

/// What is stored for a capture: images as they are; JSON redacted as JSON; HTML (a DOM excerpt) redacted
/// and turned into plain text (`.txt`, [`EXCERPT_MEDIA_TYPE`]); any other text redacted as text; other bytes
/// as they are.
pub fn inert<'a>(
    kind: &str,
    bytes: &'a [u8],
    ext: &'a str,
    media_type: &'a str,
) -> (Cow<'a, [u8]>, &'a str, &'a str) {
    let media = media_type.to_ascii_lowercase();
    if media.starts_with("image/") {
        return (Cow::Borrowed(bytes), ext, media_type);
    }
    if media.contains("json") || ext == "json" {
        return (
            Cow::Owned(crate::redact::json_bytes(bytes)),
            "json",
            "application/json",
        );
    }
    if kind == "dom_excerpt" || media.contains("html") || matches!(ext, "html" | "htm" | "xhtml") {
        let text = crate::redact::html(&String::from_utf8_lossy(bytes));
        return (Cow::Owned(text.into_bytes()), "txt", EXCERPT_MEDIA_TYPE);
    }
    if media.starts_with("text/") {
        let text = crate::redact::text(&String::from_utf8_lossy(bytes));
        return (Cow::Owned(text.into_bytes()), ext, media_type);
    }
    (Cow::Borrowed(bytes), ext, media_type)
}

/// Store `bytes` at `<dir>/<hh>/<sha256>.<ext>` (0700 dirs including `dir`'s parent, 0600 file);
/// returns the hash and the absolute path.
pub fn store_bytes(
    dir: &Path,
    bytes: &[u8],
    ext: &str,
) -> Result<(String, PathBuf), EvidenceError> {
    let err = |what: String| move |source| EvidenceError { what, source };
    let hash = hex::encode(Sha256::digest(bytes));
    let sub = dir.join(&hash[..2]);
    for d in [dir.parent().unwrap_or(dir), dir, &sub] {
        crate::browser::private_dir(d).map_err(err(format!("create {}", d.display())))?;
    }
    let path = sub.join(format!("{hash}.{ext}"));
    if !path.exists() {
        crate::durable::write_atomic(&path, bytes)
            .map_err(err(format!("write {}", path.display())))?;
    }
    Ok((hash, path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn everything_is_redacted_on_the_way_in_and_excerpts_become_text() {
        let d = tempfile::tempdir().unwrap();
        let s = EvidenceStore::new(d.path());
        let log = json!({"headers": [["Cookie", "fb_session=abc"], ["x-csrf-token", "t0k"]],
                         "body": "{\"text\":\"hi\",\"authenticity_token\":\"zzz\"}"});
        let a = s.put_json("write_log", &log).unwrap();
        let raw = s
            .put(
                "write_log",
                log.to_string().as_bytes(),
                "json",
                "application/json",
            )
            .unwrap();
        for item in [&a, &raw] {
            let text = std::fs::read_to_string(d.path().join(&item.path)).unwrap();
            for secret in ["fb_session=abc", "t0k", "zzz"] {
                assert!(!text.contains(secret), "{secret} leaked: {text}");
            }
            assert!(text.contains("hi"));
        }
        let dom = s
            .put(
                "dom_excerpt",
                b"<main><script>var s='S1'</script><b onclick=\"x()\">hi</b></main>",
                "html",
                "text/html",
            )
            .unwrap();
        assert!(dom.path.ends_with(".txt"), "{}", dom.path);
        assert_eq!(dom.media_type, EXCERPT_MEDIA_TYPE);
        let text = std::fs::read_to_string(d.path().join(&dom.path)).unwrap();
        assert!(
            !text.contains("S1") && !text.contains("onclick") && text.contains("hi"),
            "{text}"
        );
        assert_eq!(dom.bytes, text.len() as u64);
        let png = s
            .put(
                "screenshot_readback",
                b"\x89PNG password=x",
                "png",
                "image/png",
            )
            .unwrap();
        assert_eq!(
            std::fs::read(d.path().join(&png.path)).unwrap(),
            b"\x89PNG password=x"
        );
    }

    #[test]
    fn files_are_content_addressed_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let s = EvidenceStore::new(d.path());
        let a = s
            .put("write_log", b"hello", "json", "application/json")
            .unwrap();
        let b = s
            .put("write_log", b"hello", "json", "application/json")
            .unwrap();
        assert_eq!(a, b);
        assert!(a.path.starts_with("evidence/sha256/"));
        let meta = std::fs::metadata(d.path().join(&a.path)).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(a.sha256, hex::encode(Sha256::digest(b"hello")));
    }
}
