//! Accounts a worker has set aside on this host because their login here has ended.
//!
//! Why: an account's login is its browser profile on one host. When it ends (an expired session, a CSRF
//! token the platform no longer takes), every queued post of the account meets the same answer: a create
//! answered 401, 403 or 419 is doubt (indeterminate, then parked for a person, one by one), and a compose
//! page that does not show the account logged in fails the post (each to be retried by hand). So the first
//! send that shows it sets the account aside on this host: the worker takes none of its posts here (they
//! stay pending, untouched) and lets its account lease go, so another host whose profile is logged in may
//! take them. A person logs the profile in again, then `oncepost accounts resume NAME`; a synchronous send of
//! the account published on this host (a `publish --login-url`, say) resumes it too: the login works.
//!
//! The mark is a file beside the profiles (`<data-dir>/profiles/.set-aside/<account>.json`), a folder no
//! account name can name (names never start with a dot), seen by every worker process of the host.
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::identity::{AccountNameError, check_account_name};

/// One account set aside on this host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetAside {
    /// The account.
    pub account: String,
    /// What showed that its login ended (the settled send's words).
    pub why: String,
    /// The delivery key of that send.
    pub key: String,
    /// When (ms since the epoch).
    pub at: i64,
}

/// Setting an account aside, or resuming it, could not be done.
#[derive(Debug, thiserror::Error)]
pub enum SetAsideError {
    /// The account name cannot name a file.
    #[error(transparent)]
    Name(#[from] AccountNameError),
    /// The mark could not be written or removed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The mark's file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

fn folder(profiles: &Path) -> PathBuf {
    profiles.join(".set-aside")
}

fn mark_path(profiles: &Path, account: &str) -> Result<PathBuf, AccountNameError> {
    check_account_name(account)?;
    Ok(folder(profiles).join(format!("{account}.json")))
}

/// Set `s.account` aside on this host (replacing an earlier mark of it).
pub fn mark(profiles: &Path, s: &SetAside) -> Result<(), SetAsideError> {
    let path = mark_path(profiles, &s.account)?;
    let io = |what| {
        let path = path.clone();
        move |source| SetAsideError::Io { what, path, source }
    };
    crate::durable::private_dir(&folder(profiles)).map_err(io("cannot create the folder of"))?;
    let bytes = serde_json::to_vec_pretty(s).map_err(|e| io("cannot encode")(e.into()))?;
    crate::durable::write_atomic(&path, &bytes).map_err(io("cannot write"))
}

/// Set `account` aside now, after its send `key` showed that its login here ended (`why`).
pub fn mark_now(profiles: &Path, account: &str, key: &str, why: &str) -> Result<(), SetAsideError> {
    let s = SetAside {
        account: account.to_string(),
        why: why.to_string(),
        key: key.to_string(),
        at: crate::store::Timestamp::now().0,
    };
    mark(profiles, &s)
}

/// Resume `account` on this host: its mark, if it had one, is removed and returned.
pub fn resume(profiles: &Path, account: &str) -> Result<Option<SetAside>, SetAsideError> {
    let path = mark_path(profiles, account)?;
    let was = read(&path);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(Some(was.unwrap_or_else(|| unreadable(account)))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SetAsideError::Io {
            what: "cannot remove",
            path,
            source,
        }),
    }
}

/// The account's mark on this host, if it is set aside.
pub fn get(profiles: &Path, account: &str) -> Option<SetAside> {
    mark_path(profiles, account).ok().and_then(|p| read(&p))
}

/// Every account set aside on this host, by name. A mark that cannot be read still sets its account aside
/// (the file's name says which): a mark is never lost to a bad write.
pub fn list(profiles: &Path) -> Vec<SetAside> {
    let Ok(entries) = std::fs::read_dir(folder(profiles)) else {
        return Vec::new();
    };
    let mut all: Vec<SetAside> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let account = name.strip_suffix(".json")?;
            check_account_name(account).ok()?;
            Some(read(&e.path()).unwrap_or_else(|| unreadable(account)))
        })
        .collect();
    all.sort_by(|a, b| a.account.cmp(&b.account));
    all
}

/// What is known of an account whose mark cannot be read: its name (the file's).
fn unreadable(account: &str) -> SetAside {
    SetAside {
        account: account.to_string(),
        why: "(its mark could not be read)".into(),
        key: String::new(),
        at: 0,
    }
}

fn read(path: &Path) -> Option<SetAside> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_is_kept_listed_and_taken_away_by_resume() {
        let d = tempfile::tempdir().unwrap();
        let profiles = d.path().join("profiles");
        assert!(list(&profiles).is_empty());
        let s = SetAside {
            account: "alice".into(),
            why: "HTTP 401".into(),
            key: "k1".into(),
            at: 7,
        };
        mark(&profiles, &s).unwrap();
        assert_eq!(get(&profiles, "alice"), Some(s.clone()));
        assert_eq!(get(&profiles, "bob"), None);
        // An unreadable mark still sets its account aside.
        std::fs::write(folder(&profiles).join("bob.json"), b"{").unwrap();
        let names: Vec<String> = list(&profiles).into_iter().map(|s| s.account).collect();
        assert_eq!(names, ["alice", "bob"]);
        assert_eq!(resume(&profiles, "alice").unwrap(), Some(s));
        assert_eq!(resume(&profiles, "alice").unwrap(), None);
        assert!(resume(&profiles, "bob").unwrap().is_some());
        assert!(list(&profiles).is_empty());
        assert!(matches!(
            mark(
                &profiles,
                &SetAside {
                    account: "../x".into(),
                    why: String::new(),
                    key: String::new(),
                    at: 0
                }
            ),
            Err(SetAsideError::Name(_))
        ));
    }
}
