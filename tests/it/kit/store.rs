//! The store on both backends: a real SQLite file or a real PostgreSQL database per test, migrated from 1.
//!
//! PostgreSQL: `ONCEPOST_TEST_PG` (a URL of a cluster's `postgres` database, set by scripts/test.sh, which
//! starts one ephemeral cluster for the whole run) or, when it is absent, one ephemeral cluster per test binary
//! started through scripts/pg-ephemeral.sh and stopped when the binary exits. Every test gets its own database.

use std::path::PathBuf;
use std::sync::OnceLock;

use super::repo_path;

use oncepost::store::{Policy, Store, StoreLocation};

/// Which backend a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A test's own database; the SQLite file lives in `dir`, removed with it.
pub struct TestDb {
    pub store: Store,
    pub location: StoreLocation,
    pub dir: tempfile::TempDir,
}

static PG_BASE: OnceLock<String> = OnceLock::new();
static PG_OWNED_DIR: OnceLock<PathBuf> = OnceLock::new();

extern "C" fn stop_owned_cluster() {
    if let Some(dir) = PG_OWNED_DIR.get() {
        let _ = std::process::Command::new(repo_path("scripts/pg-ephemeral.sh"))
            .arg("stop")
            .arg(dir)
            .status();
    }
}

/// The base URL of a running cluster (starting one for this test binary if the environment has none).
pub fn pg_base_url() -> String {
    PG_BASE
        .get_or_init(|| {
            if let Ok(url) = std::env::var("ONCEPOST_TEST_PG")
                && !url.trim().is_empty()
            {
                return url;
            }
            let dir = std::env::temp_dir().join(format!("oncepost-pg-{}", uuid::Uuid::new_v4()));
            let out = std::process::Command::new(repo_path("scripts/pg-ephemeral.sh"))
                .arg("start")
                .arg(&dir)
                .output()
                .expect("run scripts/pg-ephemeral.sh");
            assert!(
                out.status.success(),
                "could not start an ephemeral PostgreSQL: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let _ = PG_OWNED_DIR.set(dir);
            // SAFETY: registering a plain extern "C" function with no captured state.
            unsafe {
                libc::atexit(stop_owned_cluster);
            }
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        })
        .clone()
}

/// A fresh database URL on the cluster (CREATE DATABASE through psql, so no async runtime is involved).
pub fn fresh_pg_url() -> String {
    let base = pg_base_url();
    let name = format!("t_{}", uuid::Uuid::new_v4().simple());
    let status = std::process::Command::new("psql")
        .arg(&base)
        .arg("-qtAc")
        .arg(format!("CREATE DATABASE {name}"))
        .status()
        .expect("psql");
    assert!(status.success(), "CREATE DATABASE failed");
    match base.rfind('/') {
        Some(i) => format!("{}/{}", &base[..i], name),
        None => panic!("odd base url {base}"),
    }
}

/// A store on its own fresh database, migrated from 1.
pub async fn test_db(backend: Backend, policy: Policy) -> TestDb {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = match backend {
        Backend::Sqlite => StoreLocation::Sqlite(dir.path().join("oncepost.db")),
        Backend::Postgres => StoreLocation::Postgres(fresh_pg_url()),
    };
    let store = Store::open(&location, policy).await.expect("open store");
    TestDb {
        store,
        location,
        dir,
    }
}

/// Generate one `#[tokio::test]` per backend for each named `async fn NAME(backend: Backend)`.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name($crate::kit::Backend::Sqlite).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name($crate::kit::Backend::Postgres).await
                }
            )*
        }
    };
}
