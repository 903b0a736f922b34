//! The write transaction every store operation runs in ([`super::Store::write`]), and the two appends every
//! transition makes: an intent's event row and an administrative history row. Both go through the redaction
//! layer here, so no caller can append an unredacted row.
use sqlx::{Any, AnyConnection, Transaction};

use super::error::StoreError;
use super::model::Timestamp;
use super::rows::{IntentRow, find_intent};
use super::state::{EventKind, Status};
use super::writer::Held;
use super::{Dialect, map_db};
use crate::identity::DeliveryKey;

/// One open write transaction, and the dialect of its backend.
pub(crate) struct Tx {
    conn: TxConn,
    dialect: Dialect,
}

/// Where a transaction runs.
pub(super) enum TxConn {
    /// PostgreSQL: a pooled connection, in sqlx's transaction (rolled back if dropped).
    Pooled(Transaction<'static, Any>),
    /// SQLite: the store's write connection, after `BEGIN IMMEDIATE` (closed, so rolled back, if dropped
    /// before its `COMMIT` or `ROLLBACK` ran: writer.rs).
    Writer(Held),
}

impl TxConn {
    /// End the transaction with `COMMIT`.
    pub(super) async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            TxConn::Pooled(t) => t.commit().await,
            TxConn::Writer(held) => end(held, "COMMIT").await,
        }
    }

    /// End the transaction with `ROLLBACK`.
    pub(super) async fn rollback(self) -> Result<(), sqlx::Error> {
        match self {
            TxConn::Pooled(t) => t.rollback().await,
            TxConn::Writer(held) => end(held, "ROLLBACK").await,
        }
    }
}

/// Run `COMMIT` or `ROLLBACK` on the write connection; only once it ran is the connection kept.
async fn end(mut held: Held, statement: &'static str) -> Result<(), sqlx::Error> {
    sqlx::query(statement).execute(held.conn()).await?;
    held.done();
    Ok(())
}

/// One `events` row to append. `details` and `reason` are redacted on the way in.
pub(crate) struct NewEvent<'a> {
    /// The intent's row id.
    pub intent_id: i64,
    pub at: Timestamp,
    pub kind: EventKind,
    pub from: Option<Status>,
    pub to: Status,
    pub actor: &'a str,
    pub reason: Option<&'a str>,
    pub details: &'a serde_json::Value,
    /// The attempt token involved, if any.
    pub attempt: Option<&'a str>,
    /// The fencing generation involved, if any.
    pub generation: Option<i64>,
}

/// One `admin_events` row to append. `details` are redacted on the way in.
pub(crate) struct AdminEvent<'a> {
    pub at: Timestamp,
    pub actor: &'a str,
    pub action: &'a str,
    pub details: serde_json::Value,
}

impl Tx {
    pub(super) fn new(conn: TxConn, dialect: Dialect) -> Self {
        Tx { conn, dialect }
    }

    pub(super) fn into_inner(self) -> TxConn {
        self.conn
    }

    /// Which backend this transaction runs on, for the statements that differ.
    pub(crate) fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The connection, an executor for this transaction's statements.
    pub(crate) fn conn(&mut self) -> &mut AnyConnection {
        match &mut self.conn {
            TxConn::Pooled(t) => t,
            TxConn::Writer(held) => held.conn(),
        }
    }

    /// The intent with this key, as this transaction sees it; [`StoreError::UnknownKey`] if there is none.
    pub(crate) async fn intent(&mut self, key: &DeliveryKey) -> Result<IntentRow, StoreError> {
        find_intent(self.conn(), key.as_str())
            .await?
            .ok_or_else(|| StoreError::UnknownKey(key.to_string()))
    }

    /// Append one event row.
    pub(crate) async fn append(&mut self, e: NewEvent<'_>) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO events (intent_id, at, kind, from_state, to_state, actor, reason, details, \
             attempt_token, generation) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(e.intent_id)
        .bind(e.at.0)
        .bind(e.kind.label())
        .bind(e.from.map(|s| s.label()))
        .bind(e.to.label())
        .bind(e.actor)
        // Every event goes through the redaction layer: a page's cookies, tokens and keys never reach a row.
        .bind(e.reason.map(crate::redact::text))
        .bind(crate::redact::json(e.details).to_string())
        .bind(e.attempt)
        .bind(e.generation)
        .execute(self.conn())
        .await
        .map_err(map_db)?;
        Ok(())
    }

    /// Append one administrative history row.
    pub(crate) async fn admin_event(&mut self, e: AdminEvent<'_>) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO admin_events (at, actor, action, details) VALUES ($1, $2, $3, $4)",
        )
        .bind(e.at.0)
        .bind(e.actor)
        .bind(e.action)
        .bind(crate::redact::json(&e.details).to_string())
        .execute(self.conn())
        .await
        .map_err(map_db)?;
        Ok(())
    }
}
