//! The durable intent store: the at-most-once state machine, on SQLite (embedded default) and PostgreSQL
//! (shared use across hosts). The only module with SQL in it.
//!
//! ```text
//!   caller ──create_intent──▶ intents(pending) + event
//!          ──begin──────────▶ claim (owner, lease, generation from the sequence) + ONE attempt + event
//!          ──authorize_dispatch▶ every pre-flight condition re-checked in one transaction ──▶ DispatchAuthorization
//!          ──settle─────────▶ published | failed | indeterminate, fenced on (epoch, generation, attempt)
//!   sweeper ─sweep──────────▶ authorized + expired lease ──▶ indeterminate;  pending + expired claim ──▶ released
//! ```
//!
//! Every state change is ONE guarded `UPDATE ... WHERE state = ... AND generation = ...` whose affected-row
//! count decides success; the event row is appended in the same transaction. Attempts and events are
//! append-only, enforced by triggers on both backends. SQL text is shared by both backends (`$n` placeholders
//! work on both); where they differ (the generation source, the duplicate-text constraint) the difference is in
//! [`Dialect`] and in the per-backend migrations.
mod admin;
mod binding;
mod error;
mod model;
mod ops;
mod read;
pub mod state;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

pub use binding::MAX_HANDLE_CHARS;
pub use error::{AuthorizeRefusal, StoreError};
pub use model::{
    Account, AttemptRecord, Begun, Claim, Created, DispatchAuthorization, EventRecord, Fence,
    Intent, NewAccount, NewIntent, NextStep, NotFoundPolicy, Policy, ReconcileOutcome,
    ReconcileTicket, Settlement, SweepReport, Switch, SwitchScope, Timeline, Timestamp,
};
pub use state::{EventKind, IllegalTransition, Status};

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("./migrations/postgres");

/// Where the store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A SQLite database file.
    Sqlite(PathBuf),
    /// A PostgreSQL URL.
    Postgres(String),
}

impl StoreLocation {
    /// Parse `postgres://...`, `postgresql://...`, `sqlite://PATH`, `sqlite:PATH` or a plain file path.
    pub fn parse(s: &str) -> Result<Self, StoreError> {
        let t = s.trim();
        if t.is_empty() {
            return Err(StoreError::BadLocation(s.into(), "empty".into()));
        }
        if t.starts_with("postgres://") || t.starts_with("postgresql://") {
            PgConnectOptions::from_str(t)
                .map_err(|e| StoreError::BadLocation(redact_url(t), e.to_string()))?;
            return Ok(StoreLocation::Postgres(t.to_string()));
        }
        if let Some(rest) = t
            .strip_prefix("sqlite://")
            .or_else(|| t.strip_prefix("sqlite:"))
        {
            if rest.is_empty() || rest.contains(":memory:") {
                return Err(StoreError::BadLocation(
                    s.into(),
                    "give a file path: an in-memory store would forget every intent".into(),
                ));
            }
            return Ok(StoreLocation::Sqlite(PathBuf::from(rest)));
        }
        if let Some((scheme, _)) = t.split_once("://") {
            return Err(StoreError::BadLocation(
                s.into(),
                format!(
                    "unsupported scheme {scheme:?}: use postgres://..., sqlite://PATH or a file path"
                ),
            ));
        }
        Ok(StoreLocation::Sqlite(PathBuf::from(t)))
    }

    /// The default store: `oncepost.db` in the data dir.
    pub fn default_in(data_dir: &Path) -> Self {
        StoreLocation::Sqlite(data_dir.join("oncepost.db"))
    }

    /// A printable form with any password removed.
    pub fn display(&self) -> String {
        match self {
            StoreLocation::Sqlite(p) => p.display().to_string(),
            StoreLocation::Postgres(u) => redact_url(u),
        }
    }
}

fn redact_url(u: &str) -> String {
    match url::Url::parse(u) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => u.to_string(),
    }
}

/// Which SQL dialect a statement is for, where the two backends differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// The statement that issues the next fencing generation (one BIGINT column).
    fn next_generation_sql(self) -> &'static str {
        match self {
            Dialect::Sqlite => {
                "UPDATE fencing_counter SET value = value + 1 WHERE id = 1 RETURNING value"
            }
            Dialect::Postgres => "SELECT nextval('fencing_generation')",
        }
    }
}

pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// The intent store. Cheap to clone (a pool handle).
#[derive(Clone)]
pub struct Store {
    pool: std::sync::Arc<Pool>,
    /// Write transactions this handle committed (a metric: the benchmark reports commits per lifecycle).
    commits: std::sync::Arc<std::sync::atomic::AtomicU64>,
    policy: Policy,
    location: StoreLocation,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("location", &self.location.display())
            .finish()
    }
}

/// Run `$body` in a write transaction on whichever backend the store uses, with `$tx` bound to the
/// transaction and `$dialect` to its [`Dialect`]. Commits when the body returns `Ok`, rolls back otherwise.
/// SQLite transactions start with `BEGIN IMMEDIATE`: a read-then-write transaction must hold the write lock
/// from its first statement, or a concurrent writer makes it fail instead of wait.
macro_rules! write_tx {
    ($store:expr, |$tx:ident, $dialect:ident| $body:block) => {{
        // How long this operation waited, for a lock error's message.
        let started = std::time::Instant::now();
        let locked = |e| $crate::store::waited($crate::store::map_db(e), started);
        match &*$store.pool {
            $crate::store::Pool::Sqlite(pool) => {
                let mut $tx = pool.begin_with("BEGIN IMMEDIATE").await.map_err(locked)?;
                #[allow(unused_variables)]
                let $dialect = $crate::store::Dialect::Sqlite;
                let out: Result<_, $crate::store::StoreError> = async { $body }.await;
                match out {
                    Ok(v) => {
                        $tx.commit().await.map_err(locked)?;
                        $store
                            .commits
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        Ok(v)
                    }
                    Err(e) => {
                        let _ = $tx.rollback().await;
                        Err($crate::store::waited(e, started))
                    }
                }
            }
            $crate::store::Pool::Postgres(pool) => {
                let mut $tx = pool.begin().await.map_err(locked)?;
                #[allow(unused_variables)]
                let $dialect = $crate::store::Dialect::Postgres;
                let out: Result<_, $crate::store::StoreError> = async { $body }.await;
                match out {
                    Ok(v) => {
                        $tx.commit().await.map_err(locked)?;
                        $store
                            .commits
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        Ok(v)
                    }
                    Err(e) => {
                        let _ = $tx.rollback().await;
                        Err($crate::store::waited(e, started))
                    }
                }
            }
        }
    }};
}
pub(crate) use write_tx;

/// A lock error carries how long this operation really waited (SQLite's busy handler, or the pool), which
/// is what its message reports; other errors pass through.
pub(crate) fn waited(e: StoreError, started: std::time::Instant) -> StoreError {
    match e {
        StoreError::Locked(0) => {
            StoreError::Locked(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX))
        }
        other => other,
    }
}

/// Run `$body` with `$ex` bound to the pool (an executor), for reads outside a transaction.
macro_rules! read_pool {
    ($store:expr, |$ex:ident| $body:block) => {{
        match &*$store.pool {
            $crate::store::Pool::Sqlite($ex) => {
                let out: Result<_, $crate::store::StoreError> = async { $body }.await;
                out
            }
            $crate::store::Pool::Postgres($ex) => {
                let out: Result<_, $crate::store::StoreError> = async { $body }.await;
                out
            }
        }
    }};
}
pub(crate) use read_pool;

/// Map a database error to a store error, naming the ones a caller acts on.
pub(crate) fn map_db(e: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(db) = &e {
        let msg = db.message();
        if msg.contains("database is locked") || db.code().as_deref() == Some("5") {
            return StoreError::Locked(0);
        }
    }
    if let sqlx::Error::PoolTimedOut = e {
        return StoreError::Locked(0);
    }
    StoreError::Db(e)
}

/// Whether a database error is the duplicate-text exclusion (PostgreSQL constraint or SQLite trigger).
pub(crate) fn is_duplicate_text(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => {
            db.constraint() == Some("oncepost_duplicate_text")
                || db.message().contains("oncepost_duplicate_text")
        }
        _ => false,
    }
}

/// Read a column, naming it in the error.
pub(crate) fn col<'r, R, T>(row: &'r R, name: &'r str) -> Result<T, StoreError>
where
    R: sqlx::Row,
    T: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    &'r str: sqlx::ColumnIndex<R>,
{
    row.try_get(name)
        .map_err(|e| StoreError::Decode(format!("{name}: {e}")))
}

/// Create a SQLite store's missing folders (0700) and its file (0600) before SQLite opens it: SQLite gives its
/// -wal and -shm files the database file's mode, so the whole store is private to its owner wherever
/// `--store` points. Folders and a file that already exist keep their modes (they are the operator's).
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| {
                std::io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display()))
            })?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(std::io::Error::new(
            e.kind(),
            format!("cannot create {}: {e}", path.display()),
        )),
    }
}

impl Store {
    /// Open (and create, for SQLite) the store, and migrate it to this binary's schema. Refuses a database
    /// written by a newer oncepost.
    pub async fn open(location: &StoreLocation, policy: Policy) -> Result<Store, StoreError> {
        let started = std::time::Instant::now();
        let pool = match location {
            StoreLocation::Sqlite(path) => {
                create_private(path).map_err(|e| {
                    StoreError::BadLocation(path.display().to_string(), e.to_string())
                })?;
                let opts = SqliteConnectOptions::new()
                    .filename(path)
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    // FULL: a commit is on disk before the call returns; this store's whole job is durability.
                    .synchronous(SqliteSynchronous::Full)
                    .busy_timeout(Duration::from_millis(policy.lock_wait_ms))
                    .foreign_keys(true);
                let pool = SqlitePoolOptions::new()
                    .max_connections(4)
                    .acquire_timeout(Duration::from_millis(policy.lock_wait_ms + 5_000))
                    .connect_with(opts)
                    .await
                    .map_err(|e| match map_db(e) {
                        e @ StoreError::Locked(_) => waited(e, started),
                        StoreError::Db(inner) => {
                            StoreError::BadLocation(path.display().to_string(), inner.to_string())
                        }
                        other => other,
                    })?;
                Pool::Sqlite(pool)
            }
            StoreLocation::Postgres(url) => {
                let opts = PgConnectOptions::from_str(url)
                    .map_err(|e| StoreError::BadLocation(redact_url(url), e.to_string()))?;
                let pool = PgPoolOptions::new()
                    .max_connections(8)
                    .acquire_timeout(Duration::from_secs(10))
                    .connect_with(opts)
                    .await
                    .map_err(|e| StoreError::BadLocation(redact_url(url), e.to_string()))?;
                Pool::Postgres(pool)
            }
        };
        let store = Store {
            pool: std::sync::Arc::new(pool),
            commits: Default::default(),
            policy,
            location: location.clone(),
        };
        store.migrate().await.map_err(|e| waited(e, started))?;
        Ok(store)
    }

    /// Apply every embedded migration not yet applied. Refuses a database whose schema is newer.
    pub async fn migrate(&self) -> Result<i64, StoreError> {
        let known = self.migrator().iter().map(|m| m.version).max().unwrap_or(0);
        let found = self.applied_schema_version().await?;
        if found > known {
            return Err(StoreError::SchemaTooNew { found, known });
        }
        match &*self.pool {
            Pool::Sqlite(p) => SQLITE_MIGRATIONS.run(p).await.map_err(|e| match e {
                sqlx::migrate::MigrateError::Execute(inner) => map_db(inner),
                other => StoreError::Migrate(other),
            })?,
            Pool::Postgres(p) => POSTGRES_MIGRATIONS.run(p).await?,
        }
        Ok(known)
    }

    fn migrator(&self) -> &'static Migrator {
        match &*self.pool {
            Pool::Sqlite(_) => &SQLITE_MIGRATIONS,
            Pool::Postgres(_) => &POSTGRES_MIGRATIONS,
        }
    }

    /// The highest migration version recorded in the database (0 for a new database).
    pub async fn applied_schema_version(&self) -> Result<i64, StoreError> {
        read_pool!(self, |ex| {
            // The migrations table does not exist in a new database: check for it first, portably.
            let exists: i64 = match self.dialect() {
                Dialect::Sqlite => sqlx::query_scalar(
                    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
                )
                .fetch_one(ex)
                .await
                .map_err(map_db)?,
                Dialect::Postgres => sqlx::query_scalar(
                    "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = '_sqlx_migrations' \
                     AND table_schema = current_schema()",
                )
                .fetch_one(ex)
                .await
                .map_err(map_db)?,
            };
            if exists == 0 {
                return Ok(0);
            }
            let v: Option<i64> =
                sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
                    .fetch_one(ex)
                    .await
                    .map_err(map_db)?;
            Ok(v.unwrap_or(0))
        })
    }

    pub(crate) fn dialect(&self) -> Dialect {
        match &*self.pool {
            Pool::Sqlite(_) => Dialect::Sqlite,
            Pool::Postgres(_) => Dialect::Postgres,
        }
    }

    /// How many write transactions this handle (and its clones) committed so far.
    pub fn commits(&self) -> u64 {
        self.commits.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Where this store lives.
    pub fn location(&self) -> &StoreLocation {
        &self.location
    }

    /// The policy this handle applies.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Close the pool, waiting for connections to finish.
    pub async fn close(&self) {
        match &*self.pool {
            Pool::Sqlite(p) => p.close().await,
            Pool::Postgres(p) => p.close().await,
        }
    }

    /// Run raw SQL: for tests that play an operator doing something they should not (truncating claim data,
    /// updating history). Not used by oncepost itself.
    #[doc(hidden)]
    pub async fn execute_raw_for_tests(&self, sql: &str) -> Result<u64, StoreError> {
        read_pool!(self, |ex| {
            let r = sqlx::query(sql).execute(ex).await.map_err(map_db)?;
            Ok(r.rows_affected())
        })
    }
}
