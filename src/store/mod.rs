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
mod contracts;
mod error;
mod model;
mod one_call;
mod ops;
mod read;
mod rows;
mod sources;
pub mod state;
mod tx;
mod writer;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::AnyPool;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::Migrator;
use sqlx::postgres::PgConnectOptions;

pub use binding::MAX_HANDLE_CHARS;
pub use contracts::ContractVersion;
pub use error::{AuthorizeRefusal, StoreError};
pub use model::{
    Account, AccountLease, AttemptRecord, Begun, Claim, Created, DispatchAuthorization,
    EventRecord, Fence, Intent, NewAccount, NewIntent, NextStep, NotFoundPolicy, Pacing, Policy,
    ReconcileOutcome, ReconcileTicket, Settlement, SweepReport, Switch, SwitchScope, Timeline,
    Timestamp,
};
pub use sources::{
    CaptureOutcome, Captured, Freshness, IntentClaim, IntentSource, RestingIntent, SourceChain,
    SourceSummary, SourceVersionRow,
};
pub use state::{EventKind, IllegalTransition, Status};
pub(crate) use tx::{AdminEvent, NewEvent, Tx};

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
    /// The row-lock clause of a queue pick: PostgreSQL skips rows another worker's pick holds; SQLite has one
    /// writer at a time (`BEGIN IMMEDIATE`), so a pick never meets another.
    fn skip_locked_of(self, table: &str) -> String {
        match self {
            Dialect::Sqlite => String::new(),
            Dialect::Postgres => format!(" FOR UPDATE OF {table} SKIP LOCKED"),
        }
    }

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

/// The intent store. Cheap to clone (a pool handle).
#[derive(Clone)]
pub struct Store {
    /// One pool over `sqlx::Any`: the same statement text runs on both backends (docs/store.md says why Any
    /// and not an enum of the two pool types).
    pool: AnyPool,
    /// SQLite: the one connection this handle writes through (writer.rs says why); None on PostgreSQL.
    sqlite_writer: Option<writer::SqliteWriter>,
    dialect: Dialect,
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

/// How PostgreSQL plans a write transaction's prepared statements.
#[derive(Clone, Copy)]
enum Plans {
    /// Its default: custom plans first, a generic one when that looks no worse.
    AsThePlannerLikes,
    /// Always the generic plan.
    Generic,
}

impl Store {
    /// Run `body` in one write transaction: commit when it returns `Ok`, roll back otherwise, and count the
    /// commit. SQLite transactions start with `BEGIN IMMEDIATE`: a read-then-write transaction must hold the
    /// write lock from its first statement, or a concurrent writer makes it fail instead of wait.
    pub(crate) async fn write<T>(
        &self,
        body: impl AsyncFnOnce(&mut Tx) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.write_planned(Plans::AsThePlannerLikes, body).await
    }

    /// [`Store::write`] for the transactions whose statements PostgreSQL would otherwise plan again on every
    /// run as the store grows (the authorization, the queue's pick). Their caps count a window of
    /// `dispatches` by a parameter; with a big history the generic plan's estimate for that window (a third
    /// of the account's rows) looks worse than each custom plan, so the server replans every time: measured
    /// at 10^6 intents, 0.2 ms of planning per run of the pick (the execution, an index range scan of the
    /// window, 0.03 ms either way), which made the pick 2.7x and the authorization 1.3x of an empty store.
    /// Within this transaction alone, prepared statements keep their generic plan (the same index range
    /// scans), set in the same round trip as `BEGIN`. Never session-wide: the intents listing, planned
    /// generically, scans the whole table (905 ms at 10^6 for a state with no rows).
    pub(crate) async fn write_generic_plans<T>(
        &self,
        body: impl AsyncFnOnce(&mut Tx) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.write_planned(Plans::Generic, body).await
    }

    async fn write_planned<T>(
        &self,
        plans: Plans,
        body: impl AsyncFnOnce(&mut Tx) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        // How long this operation waited, for a lock error's message.
        let started = std::time::Instant::now();
        let locked = |e| waited(map_db(e), started);
        let conn = match (self.dialect, plans) {
            (Dialect::Sqlite, _) => {
                let mut held = self
                    .hold_sqlite_writer()
                    .await
                    .map_err(|e| waited(e, started))?;
                // Not `done`: from here on a transaction may be open on it (writer.rs).
                if let Err(e) = sqlx::query("BEGIN IMMEDIATE").execute(held.conn()).await {
                    // SQLite answered: a `BEGIN` that failed (the lock busy past the wait) opened nothing.
                    if matches!(e, sqlx::Error::Database(_)) {
                        held.done();
                    }
                    return Err(locked(e));
                }
                tx::TxConn::Writer(held)
            }
            (Dialect::Postgres, Plans::AsThePlannerLikes) => {
                tx::TxConn::Pooled(self.pool.begin().await.map_err(locked)?)
            }
            (Dialect::Postgres, Plans::Generic) => tx::TxConn::Pooled(
                self.pool
                    .begin_with("BEGIN; SET LOCAL plan_cache_mode = force_generic_plan")
                    .await
                    .map_err(locked)?,
            ),
        };
        let mut tx = Tx::new(conn, self.dialect);
        match body(&mut tx).await {
            Ok(v) => {
                tx.into_inner().commit().await.map_err(locked)?;
                self.commits
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(v)
            }
            Err(e) => {
                // The error that made us roll back is the one to report; a failed rollback also ends the
                // transaction (the connection is closed), so nothing of it can commit.
                let _ = tx.into_inner().rollback().await;
                Err(waited(e, started))
            }
        }
    }

    /// The pool, an executor for reads outside a transaction.
    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// SQLite: the write connection, held (waiting for another write of this handle to end).
    pub(crate) async fn hold_sqlite_writer(&self) -> Result<writer::Held, StoreError> {
        match &self.sqlite_writer {
            Some(w) => w.hold().await,
            None => Err(StoreError::Db(sqlx::Error::Configuration(
                "a SQLite write connection on a PostgreSQL store".into(),
            ))),
        }
    }
}

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

/// Map an error of a query that decodes rows ([`sqlx::FromRow`]): a column that does not decode is a stored
/// value that cannot be read back, named by its column (as before rows were derived); anything else is
/// [`map_db`].
pub(crate) fn map_row(e: sqlx::Error) -> StoreError {
    match &e {
        sqlx::Error::ColumnDecode { index, .. } => {
            StoreError::Decode(format!("{}: {e}", index.trim_matches('"')))
        }
        _ => map_db(e),
    }
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

/// The `sqlite://` URL `sqlx::Any` opens for `path`, creating the file if missing. Every byte that is not
/// plainly safe is percent-encoded (`%` too, which sqlx's own URL builder leaves as it is) and the driver
/// decodes it back, so any UTF-8 path round-trips.
fn sqlite_url(path: &Path) -> Result<String, String> {
    let abs = std::path::absolute(path).map_err(|e| e.to_string())?;
    let file = url::Url::from_file_path(&abs).map_err(|()| "not an absolute path".to_string())?;
    Ok(format!("sqlite://{}?mode=rwc", file.path()))
}

/// The per-connection settings of a SQLite store, run on every new connection of the pool (`sqlx::Any` opens a
/// URL, which cannot carry them). The busy timeout comes first: the journal-mode change may wait for a lock.
fn sqlite_pragmas(lock_wait_ms: u64) -> String {
    // FULL: a commit is on disk before the call returns; this store's whole job is durability.
    format!(
        "PRAGMA busy_timeout = {lock_wait_ms}; PRAGMA journal_mode = WAL; \
         PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON"
    )
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
        sqlx::any::install_default_drivers();
        let (pool, sqlite_writer, dialect) = match location {
            StoreLocation::Sqlite(path) => {
                let bad = |e: String| StoreError::BadLocation(path.display().to_string(), e);
                create_private(path).map_err(|e| bad(e.to_string()))?;
                let opts = AnyConnectOptions::from_str(&sqlite_url(path).map_err(bad)?)
                    .map_err(|e| bad(e.to_string()))?;
                let pragmas = sqlite_pragmas(policy.lock_wait_ms);
                // The pool is for reads (and the migrations); writes go through `writer`.
                let pool = AnyPoolOptions::new()
                    .max_connections(4)
                    // A SQLite connection is a file handle on this machine; nothing can hang up on it. sqlx
                    // would ping it before every use: one more hop to its thread per transaction (one_call.rs).
                    .test_before_acquire(false)
                    .acquire_timeout(Duration::from_millis(policy.lock_wait_ms + 5_000))
                    .after_connect(move |conn, _| {
                        let pragmas = pragmas.clone();
                        Box::pin(async move {
                            sqlx::Executor::execute(conn, pragmas.as_str())
                                .await
                                .map(|_| ())
                        })
                    })
                    .connect_with(opts.clone())
                    .await
                    .map_err(|e| match map_db(e) {
                        e @ StoreError::Locked(_) => waited(e, started),
                        StoreError::Db(inner) => bad(inner.to_string()),
                        other => other,
                    })?;
                let writer = writer::SqliteWriter::new(
                    opts,
                    sqlite_pragmas(policy.lock_wait_ms),
                    Duration::from_millis(policy.lock_wait_ms + 5_000),
                );
                (pool, Some(writer), Dialect::Sqlite)
            }
            StoreLocation::Postgres(url) => {
                // Parsed as PostgreSQL first, so a bad URL is reported as before (and never reaches the driver).
                PgConnectOptions::from_str(url)
                    .map_err(|e| StoreError::BadLocation(redact_url(url), e.to_string()))?;
                let opts = AnyConnectOptions::from_str(url)
                    .map_err(|e| StoreError::BadLocation(redact_url(url), e.to_string()))?;
                let pool = AnyPoolOptions::new()
                    .max_connections(8)
                    .acquire_timeout(Duration::from_secs(10))
                    .connect_with(opts)
                    .await
                    .map_err(|e| StoreError::BadLocation(redact_url(url), e.to_string()))?;
                (pool, None, Dialect::Postgres)
            }
        };
        let store = Store {
            pool,
            sqlite_writer,
            dialect,
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
        match self.dialect {
            Dialect::Sqlite => SQLITE_MIGRATIONS
                .run(&self.pool)
                .await
                .map_err(|e| match e {
                    sqlx::migrate::MigrateError::Execute(inner) => map_db(inner),
                    other => StoreError::Migrate(other),
                })?,
            Dialect::Postgres => POSTGRES_MIGRATIONS.run(&self.pool).await?,
        }
        Ok(known)
    }

    fn migrator(&self) -> &'static Migrator {
        match self.dialect {
            Dialect::Sqlite => &SQLITE_MIGRATIONS,
            Dialect::Postgres => &POSTGRES_MIGRATIONS,
        }
    }

    /// The highest migration version recorded in the database (0 for a new database).
    pub async fn applied_schema_version(&self) -> Result<i64, StoreError> {
        // The migrations table does not exist in a new database: check for it first, portably.
        let exists: i64 = sqlx::query_scalar(match self.dialect {
            Dialect::Sqlite => {
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'"
            }
            Dialect::Postgres => {
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = '_sqlx_migrations' \
                 AND table_schema = current_schema()"
            }
        })
        .fetch_one(&self.pool)
        .await
        .map_err(map_db)?;
        if exists == 0 {
            return Ok(0);
        }
        let v: Option<i64> =
            sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
                .fetch_one(&self.pool)
                .await
                .map_err(map_db)?;
        Ok(v.unwrap_or(0))
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
        if let Some(w) = &self.sqlite_writer {
            w.close().await;
        }
        self.pool.close().await;
    }

    /// Run raw SQL: for tests that play an operator doing something they should not (truncating claim data,
    /// updating history). Not used by oncepost itself. Runs where the store's writes run.
    #[doc(hidden)]
    pub async fn execute_raw_for_tests(&self, sql: &str) -> Result<u64, StoreError> {
        let r = match self.dialect {
            Dialect::Sqlite => {
                let mut held = self.hold_sqlite_writer().await?;
                let r = sqlx::query(sql).execute(held.conn()).await;
                if r.is_ok() {
                    held.done();
                }
                r
            }
            Dialect::Postgres => sqlx::query(sql).execute(&self.pool).await,
        }
        .map_err(map_db)?;
        Ok(r.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bundled SQLite is built with the query-planner stability guarantee (`.cargo/config.toml`): no plan
    /// depends on a bound value, so no statement is re-prepared on each run once ANALYZE has left
    /// sqlite_stat4 samples (measured: the worker's pick at 10^6 intents, 3.2x without it).
    #[tokio::test]
    async fn the_store_s_sqlite_plans_never_depend_on_bound_values() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            &StoreLocation::Sqlite(dir.path().join("s.db")),
            Policy::default(),
        )
        .await
        .unwrap();
        let options: Vec<String> = sqlx::query_scalar("PRAGMA compile_options")
            .fetch_all(store.pool())
            .await
            .unwrap();
        assert!(
            options.iter().any(|o| o == "ENABLE_QPSG"),
            "SQLite built without SQLITE_ENABLE_QPSG (LIBSQLITE3_FLAGS in .cargo/config.toml): {options:?}"
        );
        store.close().await;
    }

    /// `sqlx::Any` opens SQLite from a URL, so the store's settings are applied per connection by
    /// `after_connect`: read them back from every connection the pool holds.
    #[tokio::test]
    async fn every_sqlite_connection_has_the_store_s_settings() {
        let dir = tempfile::tempdir().unwrap();
        let policy = Policy {
            lock_wait_ms: 4321,
            ..Policy::default()
        };
        let store = Store::open(&StoreLocation::Sqlite(dir.path().join("s.db")), policy)
            .await
            .unwrap();
        // Hold four connections at once, so each is a different one.
        let mut held = Vec::new();
        for _ in 0..4 {
            held.push(store.pool().acquire().await.unwrap());
        }
        for conn in &mut held {
            let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
                .fetch_one(&mut **conn)
                .await
                .unwrap();
            let synchronous: i64 = sqlx::query_scalar("PRAGMA synchronous")
                .fetch_one(&mut **conn)
                .await
                .unwrap();
            let busy: i64 = sqlx::query_scalar("PRAGMA busy_timeout")
                .fetch_one(&mut **conn)
                .await
                .unwrap();
            let fk: i64 = sqlx::query_scalar("PRAGMA foreign_keys")
                .fetch_one(&mut **conn)
                .await
                .unwrap();
            // synchronous 2 is FULL (also SQLite's compiled default, so that part alone cannot tell whether the
            // pragma ran; without after_connect this reads ("delete", 2, 5000, 1)).
            assert_eq!(
                (journal.as_str(), synchronous, busy, fk),
                ("wal", 2, 4321, 1)
            );
        }
        drop(held);
        // And the connection writes go through.
        let mut held = store.hold_sqlite_writer().await.unwrap();
        let settings: (String, i64, i64, i64) = sqlx::query_as(
            "SELECT (SELECT journal_mode FROM pragma_journal_mode), \
             (SELECT synchronous FROM pragma_synchronous), (SELECT timeout FROM pragma_busy_timeout), \
             (SELECT foreign_keys FROM pragma_foreign_keys)",
        )
        .fetch_one(held.conn())
        .await
        .unwrap();
        held.done();
        assert_eq!(settings, ("wal".to_string(), 2, 4321, 1));
    }

    /// A write whose caller stops part way (its future dropped inside the transaction) gives SQLite's write
    /// lock back at once and leaves nothing written; the next write of the same handle goes through.
    #[tokio::test]
    async fn a_write_dropped_part_way_gives_the_lock_back_and_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let store = Store::open(&StoreLocation::Sqlite(path.clone()), Policy::default())
            .await
            .unwrap();
        let admin_rows = async |s: &Store| -> i64 {
            sqlx::query_scalar("SELECT COUNT(*) FROM admin_events")
                .fetch_one(s.pool())
                .await
                .unwrap()
        };
        let before = admin_rows(&store).await;
        let stopped = tokio::time::timeout(
            Duration::from_millis(300),
            store.write(async |tx| {
                tx.admin_event(tx::AdminEvent {
                    at: Timestamp(1),
                    actor: "test",
                    action: "never committed",
                    details: serde_json::json!({}),
                })
                .await?;
                std::future::pending::<()>().await;
                Ok(())
            }),
        )
        .await;
        assert!(
            stopped.is_err(),
            "the write was meant to be stopped part way"
        );
        // Another process's store (a second handle, its own connections) writes at once: the lock is free.
        let other = Store::open(
            &StoreLocation::Sqlite(path),
            Policy {
                lock_wait_ms: 500,
                ..Policy::default()
            },
        )
        .await
        .unwrap();
        other
            .execute_raw_for_tests("INSERT INTO guard_checks (matched) VALUES (1)")
            .await
            .expect("the write lock was still held by the stopped write");
        assert_eq!(admin_rows(&other).await, before);
        // The first handle writes again (on a new connection).
        assert_eq!(
            store
                .execute_raw_for_tests("INSERT INTO guard_checks (matched) VALUES (1)")
                .await
                .unwrap(),
            0
        );
        assert_eq!(admin_rows(&store).await, before);
    }

    /// Migration 10 rebuilds `events` and `dispatches` without AUTOINCREMENT: a store written before it keeps
    /// every row with its id, the next row's id follows the largest, and both stay append-only.
    #[tokio::test]
    async fn migration_10_keeps_every_event_and_dispatch_with_its_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        create_private(&path).unwrap();
        sqlx::any::install_default_drivers();
        let pool = AnyPoolOptions::new()
            .max_connections(1)
            .connect_with(AnyConnectOptions::from_str(&sqlite_url(&path).unwrap()).unwrap())
            .await
            .unwrap();
        let before_10 = Migrator {
            migrations: std::borrow::Cow::Owned(
                SQLITE_MIGRATIONS
                    .iter()
                    .filter(|m| m.version < 10)
                    .cloned()
                    .collect(),
            ),
            ignore_missing: false,
            locking: true,
            no_tx: false,
        };
        before_10.run(&pool).await.unwrap();
        sqlx::raw_sql(
            "INSERT INTO accounts (name, platform, created_at) VALUES ('a', 'p', 1); \
             INSERT INTO intents (delivery_key, account, platform, action_kind, target, request_json, \
                 content_hash, state, max_attempts, created_at, updated_at) \
             VALUES (printf('%064d', 1), 'a', 'p', 'post', '', '{}', 'h', 'pending', 3, 1, 1); \
             INSERT INTO events (id, intent_id, at, kind, to_state, actor) \
             VALUES (5, 1, 1, 'created', 'pending', 't'), (9, 1, 2, 'noted', 'pending', 't'); \
             INSERT INTO dispatches (id, account, intent_id, at) VALUES (3, 'a', 1, 7);",
        )
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;

        let store = Store::open(&StoreLocation::Sqlite(path), Policy::default())
            .await
            .unwrap();
        assert!(store.applied_schema_version().await.unwrap() >= 10);
        let events: Vec<(i64, String)> = sqlx::query_as("SELECT id, kind FROM events ORDER BY id")
            .fetch_all(store.pool())
            .await
            .unwrap();
        assert_eq!(events, [(5, "created".into()), (9, "noted".into())]);
        let dispatches: Vec<(i64, String, i64)> =
            sqlx::query_as("SELECT id, account, at FROM dispatches")
                .fetch_all(store.pool())
                .await
                .unwrap();
        assert_eq!(dispatches, [(3, "a".into(), 7)]);
        store
            .execute_raw_for_tests(
                "INSERT INTO events (intent_id, at, kind, to_state, actor) \
                 VALUES (1, 3, 'later', 'pending', 't')",
            )
            .await
            .unwrap();
        let last: i64 = sqlx::query_scalar("SELECT MAX(id) FROM events")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(last, 10);
        for refused in [
            "UPDATE events SET kind = 'x' WHERE id = 5",
            "DELETE FROM events WHERE id = 10",
            "UPDATE dispatches SET at = 8",
            "DELETE FROM dispatches",
        ] {
            let e = store.execute_raw_for_tests(refused).await.unwrap_err();
            assert!(e.to_string().contains("append-only"), "{refused}: {e}");
        }
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT sql FROM sqlite_master WHERE name IN ('events', 'dispatches', 'intents_redelivery_of')",
        )
        .fetch_all(store.pool())
        .await
        .unwrap();
        assert_eq!(tables.len(), 3);
        assert!(
            tables.iter().all(|t| !t.contains("AUTOINCREMENT")),
            "{tables:?}"
        );
        assert!(
            tables
                .iter()
                .any(|t| t.contains("WHERE redelivery_of IS NOT NULL")),
            "{tables:?}"
        );
    }

    /// The file path goes through a `sqlite://` URL: characters a URL gives a meaning to (and `%` itself) must
    /// name the same file.
    #[tokio::test]
    async fn a_sqlite_path_with_url_characters_is_the_file_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a %41 b?c#d").join("x%2Fy.db");
        let store = Store::open(&StoreLocation::Sqlite(path.clone()), Policy::default())
            .await
            .unwrap();
        store.close().await;
        assert!(path.is_file(), "{} was not created", path.display());
        // Nothing was created under a decoded or truncated name: only the database and its -wal/-shm files.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        for entry in std::fs::read_dir(path.parent().unwrap()).unwrap() {
            let name = entry.unwrap().file_name();
            assert!(name.to_string_lossy().starts_with("x%2Fy.db"), "{name:?}");
        }
    }
}
