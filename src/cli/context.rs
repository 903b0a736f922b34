//! What every subcommand needs: the data dir, where the store lives, who is acting.
use std::path::{Path, PathBuf};

use super::{Cli, CliError};
use crate::store::{Policy, Store, StoreLocation};

/// Resolved global options.
#[derive(Debug, Clone)]
pub struct Context {
    /// The data dir (created on first use, mode 0700).
    pub data_dir: PathBuf,
    /// Where the store lives.
    pub store_location: StoreLocation,
    /// Store limits (lock wait from --lock-wait).
    pub policy: Policy,
}

impl Context {
    /// Resolve `--data-dir` / `ONCEPOST_HOME` / the platform's user data dir, and `--store` / `ONCEPOST_STORE`.
    pub fn from_cli(cli: &Cli) -> Result<Self, CliError> {
        let data_dir = match &cli.data_dir {
            Some(d) => d.clone(),
            None => default_data_dir()?,
        };
        let store_location = match &cli.store {
            Some(s) => StoreLocation::parse(s)?,
            None => StoreLocation::default_in(&data_dir),
        };
        let policy = Policy {
            lock_wait_ms: cli.lock_wait.max(0) as u64,
            claim_lease_ms: cli.claim_lease,
            dispatch_lease_ms: cli.dispatch_lease,
            ..Policy::default()
        };
        Ok(Context {
            data_dir,
            store_location,
            policy,
        })
    }

    /// Create the data dir (0700) if needed.
    pub fn ensure_data_dir(&self) -> Result<&Path, CliError> {
        create_private_dir(&self.data_dir)?;
        Ok(&self.data_dir)
    }

    /// Open the store (creating the data dir for the default SQLite store).
    pub async fn open_store(&self) -> Result<Store, CliError> {
        if let StoreLocation::Sqlite(path) = &self.store_location
            && path.starts_with(&self.data_dir)
        {
            self.ensure_data_dir()?;
        }
        Ok(Store::open(&self.store_location, self.policy).await?)
    }
}

/// The platform's user data dir plus `oncepost` (for example ~/.local/share/oncepost).
pub fn default_data_dir() -> Result<PathBuf, CliError> {
    dirs::data_dir().map(|d| d.join("oncepost")).ok_or_else(|| {
        CliError::bad_input("no user data dir on this system: pass --data-dir or set ONCEPOST_HOME")
    })
}

/// Create a directory readable only by its owner.
pub fn create_private_dir(dir: &Path) -> Result<(), CliError> {
    crate::durable::private_dir(dir)
        .map_err(|e| CliError::bad_input(format!("cannot create data dir {}: {e}", dir.display())))
}

/// An account name from the command line, checked against the account-name rule (exit 2 naming the rule).
pub fn account_arg(name: &str) -> Result<&str, CliError> {
    crate::identity::check_account_name(name).map_err(|e| CliError::bad_input(e.to_string()))?;
    Ok(name)
}

/// Who is acting, for the history: `--by`, else $USER, else "operator".
pub fn actor(by: &Option<String>) -> String {
    by.clone()
        .filter(|s| !s.trim().is_empty())
        .or_else(|| std::env::var("USER").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "operator".to_string())
}

/// Parse a duration like `1500ms`, `30s`, `5m`, `24h`, `7d` (a bare number is seconds) into milliseconds.
pub fn parse_duration_ms(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: i64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration like 30s, 5m, 24h"))?;
    let mult = match unit.trim() {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {s:?}: use ms, s, m, h or d"
            ));
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too long"))
}

/// A lease length: a duration of at least 100 ms and at most 7 days.
pub fn parse_lease_ms(s: &str) -> Result<i64, String> {
    let ms = parse_duration_ms(s)?;
    if ms < 100 {
        return Err(format!("{s:?} is too short for a lease (at least 100ms)"));
    }
    if ms > 7 * 86_400_000 {
        return Err(format!("{s:?} is too long for a lease (at most 7d)"));
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::parse_duration_ms;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("1500ms"), Ok(1500));
        assert_eq!(parse_duration_ms("30s"), Ok(30_000));
        assert_eq!(parse_duration_ms("30"), Ok(30_000));
        assert_eq!(parse_duration_ms("24h"), Ok(86_400_000));
        assert!(parse_duration_ms("abc").is_err());
        assert!(parse_duration_ms("5 weeks").is_err());
        assert!(parse_duration_ms("").is_err());
    }
}
