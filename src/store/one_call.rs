//! SQLite: a whole transaction in one call to the connection.
//!
//! sqlx runs each SQLite connection on a thread of its own, and every call is a hop there and back: measured
//! 0.04-0.06 ms a call (store_lifecycle's `call` step) next to a 0.22 ms commit, and a transition written as
//! a transaction is `BEGIN`, a read, the guarded update, the event and `COMMIT`: five such hops and a commit.
//! sqlx's SQLite driver runs every statement of one query text in one call on that thread, binding each
//! `$N` by its number in every statement, so the hot transitions (create, begin, settle) send one text,
//! `BEGIN IMMEDIATE; ...; COMMIT`, whose statements are each guarded as the transaction's are and whose
//! guarded update's `RETURNING` says whether it happened. A text whose guard matched nothing commits an empty
//! transaction (nothing is written) and the caller's transaction path decides and says why, as the
//! one-statement paths on PostgreSQL do.
//!
//! Such a text opens its transaction itself, outside sqlx's bookkeeping, so this module owns what could go
//! wrong: a text that stops part way (an error, or the caller's future dropped: the driver stops at the first
//! result nobody receives) leaves its transaction open on the connection, and a pooled connection inside an
//! open transaction would hold the write lock and take the next caller's statements into it. So unless the
//! text ran to its end, the write connection is closed (closing a SQLite connection rolls its open
//! transaction back) and the next write opens another (writer.rs).
use sqlx::Any;
use sqlx::any::{AnyArguments, AnyRow};
use sqlx::query::Query;

use super::error::StoreError;
use super::{Store, waited};

impl Store {
    /// Run `text` (a whole `BEGIN IMMEDIATE; ...; COMMIT` transaction, SQLite only) in one call; the rows
    /// every statement returned, in order. Every statement runs (`fetch_all`: `fetch_optional` would stop the
    /// driver at the first row, before the `COMMIT`). A statement's error stops the text: its transaction is
    /// rolled back and `on_error` says what the error means (a guard's refusal, for one).
    pub(crate) async fn sqlite_one_call<'q>(
        &self,
        text: Query<'q, Any, AnyArguments<'q>>,
        on_error: impl FnOnce(sqlx::Error) -> StoreError,
    ) -> Result<Vec<AnyRow>, StoreError> {
        debug_assert!(self.dialect == super::Dialect::Sqlite);
        let started = std::time::Instant::now();
        let mut held = self
            .hold_sqlite_writer()
            .await
            .map_err(|e| waited(e, started))?;
        match text.fetch_all(held.conn()).await {
            Ok(rows) => {
                held.done();
                Ok(rows)
            }
            Err(e) => {
                // The text stopped part way, inside its transaction (or before it: then there is none and
                // the rollback fails). Rolled back, the connection is as good as new; otherwise `held` is
                // dropped not done, and the connection is closed (writer.rs).
                if sqlx::query("ROLLBACK").execute(held.conn()).await.is_ok() {
                    held.done();
                }
                Err(waited(on_error(e), started))
            }
        }
    }
}
