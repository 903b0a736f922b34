//! Advisory file locks (flock) that serialise work on one host before any browser starts: one per intent
//! (identical commands: one proceeds) and one per account profile (Chromium allows one process per profile
//! directory). The store's claim lease stays the authority across hosts; these only make the local case
//! cheap and orderly. A lock is released when its value is dropped (or the process dies).
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::identity::{AccountNameError, check_account_name};
use crate::wait::Wait;

/// A held lock.
#[derive(Debug)]
pub struct FileLock {
    _file: std::fs::File,
    path: PathBuf,
}

impl FileLock {
    /// Take the lock at `path` now, or `Ok(None)` when another process holds it.
    pub fn try_take(path: &Path) -> std::io::Result<Option<FileLock>> {
        use std::os::unix::fs::OpenOptionsExt;
        if let Some(dir) = path.parent() {
            crate::browser::private_dir(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(path)?;
        // On Linux std's try_lock is flock(2) with LOCK_EX | LOCK_NB: the lock belongs to this open file
        // description, so it goes with the value (or the process) and a second open contends like a stranger.
        match file.try_lock() {
            Ok(()) => Ok(Some(FileLock {
                _file: file,
                path: path.to_path_buf(),
            })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// Take the lock, polling for at most `bound`; `Ok(None)` when it stayed held.
    pub async fn take_within(path: &Path, bound: Duration) -> std::io::Result<Option<FileLock>> {
        let wait = Wait::new(
            format!("the lock {}", path.display()),
            bound,
            Duration::from_millis(100),
        );
        loop {
            if let Some(l) = FileLock::try_take(path)? {
                return Ok(Some(l));
            }
            if wait.pause().await.is_err() {
                return Ok(None);
            }
        }
    }

    /// Where the lock file is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A file name for `s` (anything but ASCII letters and digits becomes `_`).
pub fn file_name_for(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The browser profile of `account` (`<profiles>/<account>`), for a name that passes
/// [`check_account_name`]; any other name is refused, so a profile path never leaves `profiles` nor aliases
/// another account's profile.
pub fn profile_dir(profiles: &Path, account: &str) -> Result<PathBuf, AccountNameError> {
    check_account_name(account)?;
    Ok(profiles.join(account))
}

/// The lock file that serialises Chromium on one account's profile (`<profiles>/.locks/<account>.lock`):
/// publish and reconcile lookups take it before launching on that profile. Locks live in a folder of their
/// own, which no account name can name (names never start with a dot), so a lock never sits where a
/// profile could (an account named `alice.lock`).
pub fn profile_lock_path(profiles: &Path, account: &str) -> Result<PathBuf, AccountNameError> {
    check_account_name(account)?;
    Ok(profiles.join(".locks").join(format!("{account}.lock")))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn a_held_lock_is_refused_until_it_is_dropped() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("locks/x.lock");
        let held = super::FileLock::try_take(&p).unwrap().expect("a free lock");
        // The lock belongs to the open file description: a second open contends, even in this process.
        assert!(super::FileLock::try_take(&p).unwrap().is_none());
        drop(held);
        assert!(super::FileLock::try_take(&p).unwrap().is_some());
    }

    #[test]
    fn profile_paths_come_only_from_valid_names() {
        let p = Path::new("/d/profiles");
        assert_eq!(super::profile_dir(p, "alice").unwrap(), p.join("alice"));
        assert_eq!(
            super::profile_lock_path(p, "alice").unwrap(),
            p.join(".locks/alice.lock")
        );
        for bad in ["../x", "./alice", "..", ".locks", "a/b", ""] {
            assert!(super::profile_dir(p, bad).is_err(), "{bad}");
            assert!(super::profile_lock_path(p, bad).is_err(), "{bad}");
        }
    }
}
