//! Content-addressed evidence: files under `<data-dir>/evidence/sha256/<hh>/<sha256>.<ext>` (files 0600,
//! dirs 0700), written atomically (temp file + rename), plus the redaction of secrets from write logs.
//!
//! An attempt links its evidence from its history with one `evidence` event per capture point whose
//! details list [`Item`]s (paths relative to the data dir), as docs/states.md and the store API describe.
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What is written in place of a secret.
pub const REDACTED: &str = "[redacted]";

/// Header names whose values are secrets (compared lower-case).
const SECRET_HEADERS: &[&str] = &[
    "cookie",
    "set-cookie",
    "authorization",
    "proxy-authorization",
];

/// Whether a header or form field name carries a credential or anti-forgery token.
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    SECRET_HEADERS.contains(&n.as_str())
        || n.contains("csrf")
        || n.contains("xsrf")
        || n.contains("token")
        || n.contains("authenticity")
        || n.contains("session")
        || n.contains("api-key")
        || n.contains("apikey")
}

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

    /// Store `bytes` (kind `kind`, extension `ext`) and describe it.
    pub fn put(
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

    /// Store a JSON value (pretty-printed).
    pub fn put_json(&self, kind: &str, v: &serde_json::Value) -> Result<Item, EvidenceError> {
        let text = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
        self.put(kind, text.as_bytes(), "json", "application/json")
    }
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
        let tmp = sub.join(format!(
            ".{hash}.{ext}.{}.{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(err(format!("create {}", tmp.display())))?;
        f.write_all(bytes)
            .and_then(|_| f.sync_all())
            .map_err(err(format!("write {}", tmp.display())))?;
        std::fs::rename(&tmp, &path).map_err(err(format!("rename to {}", path.display())))?;
    }
    Ok((hash, path))
}

/// Redact secrets anywhere in a JSON value: header lists (`[[name, value], ...]`), header maps
/// (`{name: value}`), and any object key that names a secret. Bodies given as strings are redacted as
/// JSON or urlencoded forms when they parse as such.
pub fn redact(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, val)| {
                    let val = if is_secret_name(k) && !val.is_object() && !val.is_array() {
                        Value::String(REDACTED.into())
                    } else if k == "body" {
                        match val {
                            Value::String(s) => Value::String(redact_body(s)),
                            other => redact(other),
                        }
                    } else {
                        redact(val)
                    };
                    (k.clone(), val)
                })
                .collect(),
        ),
        Value::Array(a) => {
            // A header pair: ["Name", "value"].
            if a.len() == 2
                && let (Some(n), Some(_)) = (a[0].as_str(), a[1].as_str())
                && is_secret_name(n)
            {
                return Value::Array(vec![a[0].clone(), Value::String(REDACTED.into())]);
            }
            Value::Array(a.iter().map(redact).collect())
        }
        other => other.clone(),
    }
}

/// Redact token-like fields of a request or response body (JSON or urlencoded); other text is kept.
pub fn redact_body(s: &str) -> String {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(s)
        && (v.is_object() || v.is_array())
    {
        return redact(&v).to_string();
    }
    if s.contains('=') && !s.contains(char::is_whitespace) {
        let pairs: Vec<(String, String)> = url::form_urlencoded::parse(s.as_bytes())
            .map(|(k, v)| {
                let v = if is_secret_name(&k) {
                    REDACTED.to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        return url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish();
    }
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_redacted_in_header_lists_maps_and_bodies() {
        let v = json!({
            "headers": [["Cookie", "fb_session=abc"], ["Content-Type", "application/json"],
                        ["x-csrf-token", "t0k"], ["Set-Cookie", "a=b"]],
            "map": {"Authorization": "Bearer x", "Accept": "*/*"},
            "body": "{\"text\":\"hi\",\"authenticity_token\":\"zzz\"}",
            "form": {"body": "text=hi&csrf_token=abc"},
        });
        let r = redact(&v).to_string();
        for secret in [
            "fb_session=abc",
            "t0k",
            "a=b",
            "Bearer x",
            "zzz",
            "csrf_token=abc",
        ] {
            assert!(!r.contains(secret), "{secret} leaked: {r}");
        }
        for kept in ["application/json", "*/*", "hi"] {
            assert!(r.contains(kept), "{kept} lost: {r}");
        }
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
