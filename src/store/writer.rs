//! SQLite: the one connection this process writes through.
//!
//! SQLite writes one transaction at a time (`BEGIN IMMEDIATE`), but a connection throws its whole page cache
//! away when it finds the database changed by another connection. Writes taken from a pool land on its idle
//! connections in turn (sqlx pings a connection on its way back, so the next caller finds another one), and
//! each transition then read back every b-tree page it touched: measured, three connections sharing the four
//! transitions of a lifecycle made about 110 `pread`s of the WAL a lifecycle. All writes of a store handle go
//! through one connection held here, so each finds the pages it wrote last still cached. Not a pool of one:
//! sqlx's pool pings a connection before it is free again, one more hop to its thread per transaction.
//!
//! A transaction opened on it is this module's to end: [`Held`] closes the connection on drop unless the
//! statements that ran on it were seen to their end ([`Held::done`]); closing a SQLite connection rolls back
//! its open transaction and gives the write lock back at once, whatever stopped the caller (an error, or its
//! future dropped part way). The next write opens a new connection.
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::any::AnyConnectOptions;
use sqlx::{AnyConnection, ConnectOptions};
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::error::StoreError;
use super::{map_db, waited};

/// The write connection of one SQLite store handle (and its clones).
#[derive(Clone)]
pub(crate) struct SqliteWriter {
    slot: Arc<Mutex<Slot>>,
    opts: AnyConnectOptions,
    /// The per-connection settings, run on every connection it opens.
    pragmas: String,
    /// How long a write waits for the connection (another write of this process holding it).
    wait: Duration,
}

#[derive(Default)]
struct Slot {
    /// None until the first write, and after a write that was not seen to its end.
    conn: Option<AnyConnection>,
    /// The store was closed: no write opens a connection again.
    closed: bool,
}

/// The write connection, held by one caller. Closed on drop unless [`Held::done`] was called after the last
/// statement that could leave a transaction open.
pub(crate) struct Held {
    guard: OwnedMutexGuard<Slot>,
    clean: bool,
}

impl SqliteWriter {
    pub(crate) fn new(opts: AnyConnectOptions, pragmas: String, wait: Duration) -> Self {
        SqliteWriter {
            slot: Arc::new(Mutex::new(Slot::default())),
            opts,
            pragmas,
            wait,
        }
    }

    /// Wait for the connection (up to the store's lock wait), opening it first if there is none.
    pub(crate) async fn hold(&self) -> Result<Held, StoreError> {
        let started = Instant::now();
        let mut guard = tokio::time::timeout(self.wait, self.slot.clone().lock_owned())
            .await
            .map_err(|_| waited(StoreError::Locked(0), started))?;
        if guard.closed {
            return Err(StoreError::Db(sqlx::Error::PoolClosed));
        }
        if guard.conn.is_none() {
            let mut conn = self.opts.connect().await.map_err(map_db)?;
            sqlx::Executor::execute(&mut conn, self.pragmas.as_str())
                .await
                .map_err(map_db)?;
            guard.conn = Some(conn);
        }
        Ok(Held {
            guard,
            clean: false,
        })
    }

    /// Close the connection, if one is open (waiting for a write under way to end); no write opens one again.
    pub(crate) async fn close(&self) {
        let taken = {
            let mut slot = self.slot.lock().await;
            slot.closed = true;
            slot.conn.take()
        };
        if let Some(conn) = taken {
            let _ = sqlx::Connection::close(conn).await;
        }
    }
}

impl Held {
    /// The connection.
    pub(crate) fn conn(&mut self) -> &mut AnyConnection {
        self.guard
            .conn
            .as_mut()
            .expect("hold() leaves a connection in the slot and only drop takes it out")
    }

    /// The statements run so far left no transaction open: the connection goes back as it is.
    pub(crate) fn done(&mut self) {
        self.clean = true;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.clean {
            // Dropped without `done`: a transaction may be open on it. Closing the connection rolls it back.
            self.guard.conn.take();
        }
    }
}
