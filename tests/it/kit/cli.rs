//! The `oncepost` binary against one data dir: the environment every test gives it, and its output.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::BIN;

/// `oncepost` with `ONCEPOST_HOME` set to one data dir and, when the store is not that dir's SQLite file,
/// `ONCEPOST_STORE` set to a store URL. The caller's `ONCEPOST_STORE` and `ONCEPOST_BASE_URL` never leak in.
#[derive(Debug, Clone)]
pub struct Oncepost {
    home: PathBuf,
    store: Option<String>,
}

impl Oncepost {
    pub fn new(home: impl Into<PathBuf>) -> Oncepost {
        Oncepost {
            home: home.into(),
            store: None,
        }
    }

    /// The same data dir with its store at `store` (a PostgreSQL URL or a file path); `None`: the default.
    pub fn with_store(mut self, store: Option<String>) -> Oncepost {
        self.store = store;
        self
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    pub fn store(&self) -> Option<&str> {
        self.store.as_deref()
    }

    /// The command, not started (killed if the test drops it).
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.args(args)
            .env("ONCEPOST_HOME", &self.home)
            .env_remove("ONCEPOST_STORE")
            .env_remove("ONCEPOST_BASE_URL")
            .kill_on_drop(true);
        if let Some(s) = &self.store {
            cmd.env("ONCEPOST_STORE", s);
        }
        cmd
    }

    /// Run to the end: (exit code, -1 for a signal; stdout; stderr).
    pub async fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.command(args).output().await.expect("run oncepost");
        output_of(&out)
    }

    /// [`Oncepost::run`] with stdout parsed as JSON (`Value::Null` when it is not JSON).
    pub async fn run_json(&self, args: &[&str]) -> (i32, Value, String) {
        let (code, out, err) = self.run(args).await;
        (code, json_or_null(&out), err)
    }

    /// `intents show --json KEY`, which must succeed.
    pub async fn show(&self, key: &str) -> Value {
        let (code, out, err) = self.run(&["intents", "show", "--json", key]).await;
        assert_eq!(code, 0, "intents show: {out} {err}");
        serde_json::from_str(&out).expect("intents show --json")
    }
}

/// (exit code, -1 for a signal; stdout; stderr) of a finished process.
pub fn output_of(out: &std::process::Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `text` as JSON, or `Value::Null` (a command that printed no JSON; the test's assertion says why).
pub fn json_or_null(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}
