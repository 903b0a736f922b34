//! Administration: accounts (credential version, revocation, limits), kill switches and the restore epoch.
//! Every change appends an `admin_events` row in the same transaction.
use serde_json::json;

use super::error::StoreError;
use super::model::*;
use super::{Store, col, map_db, read_pool, write_tx};

/// Append one administrative history row.
macro_rules! admin_event {
    ($ex:expr, $now:expr, $actor:expr, $action:expr, $details:expr) => {{
        let details: serde_json::Value = $details;
        sqlx::query(
            "INSERT INTO admin_events (at, actor, action, details) VALUES ($1, $2, $3, $4)",
        )
        .bind($now)
        .bind($actor)
        .bind($action)
        .bind($crate::redact::json(&details).to_string())
        .execute($ex)
        .await
        .map_err(map_db)?;
    }};
}

fn check_name(what: &str, name: &str) -> Result<(), StoreError> {
    if name.trim().is_empty() || name.trim() != name || name.chars().any(|c| c.is_control()) {
        return Err(StoreError::Invalid(format!(
            "{what} name {name:?} must be non-empty, without surrounding blanks or control characters"
        )));
    }
    Ok(())
}

impl Store {
    /// Register an account.
    pub async fn add_account(
        &self,
        new: &NewAccount,
        actor: &str,
        now: Timestamp,
    ) -> Result<Account, StoreError> {
        // The name becomes a browser profile path: only names that are plain file names are stored.
        crate::identity::check_account_name(&new.name)
            .map_err(|e| StoreError::Invalid(e.to_string()))?;
        check_name("platform", &new.platform)?;
        if new.min_interval_ms < 0 || new.dup_window_ms < 0 {
            return Err(StoreError::Invalid("intervals cannot be negative".into()));
        }
        write_tx!(self, |tx, dialect| {
            let r = sqlx::query(
                "INSERT INTO accounts (name, platform, min_interval_ms, dup_window_ms, created_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING",
            )
            .bind(&new.name)
            .bind(&new.platform)
            .bind(new.min_interval_ms)
            .bind(new.dup_window_ms)
            .bind(now.0)
            .execute(&mut *tx)
            .await
            .map_err(map_db)?;
            if r.rows_affected() != 1 {
                return Err(StoreError::AccountExists(new.name.clone()));
            }
            admin_event!(
                &mut *tx,
                now.0,
                actor,
                "account_added",
                json!({ "account": new.name, "platform": new.platform, "min_interval_ms": new.min_interval_ms,
                        "dup_window_ms": new.dup_window_ms })
            );
            Ok(())
        })?;
        self.account(&new.name).await
    }

    /// Rotate an account's credentials: bump its credential version, so attempts begun before refuse to
    /// authorize.
    pub async fn rotate_account(
        &self,
        name: &str,
        actor: &str,
        now: Timestamp,
    ) -> Result<Account, StoreError> {
        self.account_change(
            name,
            actor,
            now,
            "account_rotated",
            "UPDATE accounts SET credential_version = credential_version + 1 WHERE name = $1",
        )
        .await
    }

    /// Revoke an account: nothing authorizes for it any more.
    pub async fn revoke_account(
        &self,
        name: &str,
        actor: &str,
        now: Timestamp,
    ) -> Result<Account, StoreError> {
        self.account_change(
            name,
            actor,
            now,
            "account_revoked",
            "UPDATE accounts SET revoked = 1 WHERE name = $1",
        )
        .await
    }

    async fn account_change(
        &self,
        name: &str,
        actor: &str,
        now: Timestamp,
        action: &str,
        sql: &'static str,
    ) -> Result<Account, StoreError> {
        write_tx!(self, |tx, dialect| {
            let r = sqlx::query(sql)
                .bind(name)
                .execute(&mut *tx)
                .await
                .map_err(map_db)?;
            if r.rows_affected() != 1 {
                return Err(StoreError::UnknownAccount(name.to_string()));
            }
            admin_event!(&mut *tx, now.0, actor, action, json!({ "account": name }));
            Ok(())
        })?;
        self.account(name).await
    }

    /// Change an account's limits.
    pub async fn set_account_limits(
        &self,
        name: &str,
        min_interval_ms: Option<i64>,
        dup_window_ms: Option<i64>,
        actor: &str,
        now: Timestamp,
    ) -> Result<Account, StoreError> {
        if min_interval_ms.is_some_and(|v| v < 0) || dup_window_ms.is_some_and(|v| v < 0) {
            return Err(StoreError::Invalid("intervals cannot be negative".into()));
        }
        write_tx!(self, |tx, dialect| {
            let r = sqlx::query(
                "UPDATE accounts SET min_interval_ms = COALESCE($2, min_interval_ms), \
                 dup_window_ms = COALESCE($3, dup_window_ms) WHERE name = $1",
            )
            .bind(name)
            .bind(min_interval_ms)
            .bind(dup_window_ms)
            .execute(&mut *tx)
            .await
            .map_err(map_db)?;
            if r.rows_affected() != 1 {
                return Err(StoreError::UnknownAccount(name.to_string()));
            }
            admin_event!(
                &mut *tx,
                now.0,
                actor,
                "account_limits",
                json!({ "account": name, "min_interval_ms": min_interval_ms, "dup_window_ms": dup_window_ms })
            );
            Ok(())
        })?;
        self.account(name).await
    }

    /// One account.
    pub async fn account(&self, name: &str) -> Result<Account, StoreError> {
        self.accounts()
            .await?
            .into_iter()
            .find(|a| a.name == name)
            .ok_or_else(|| StoreError::UnknownAccount(name.to_string()))
    }

    /// All accounts, by name.
    pub async fn accounts(&self) -> Result<Vec<Account>, StoreError> {
        read_pool!(self, |ex| {
            let rows = sqlx::query(
                "SELECT name, platform, credential_version, revoked, min_interval_ms, dup_window_ms, \
                 last_dispatch_at, handle FROM accounts ORDER BY name",
            )
            .fetch_all(ex)
            .await
            .map_err(map_db)?;
            rows.iter()
                .map(|r| {
                    Ok(Account {
                        name: col(r, "name")?,
                        platform: col(r, "platform")?,
                        credential_version: col(r, "credential_version")?,
                        revoked: col::<_, i64>(r, "revoked")? != 0,
                        min_interval_ms: col(r, "min_interval_ms")?,
                        dup_window_ms: col(r, "dup_window_ms")?,
                        last_dispatch_at: col(r, "last_dispatch_at")?,
                        handle: col(r, "handle")?,
                    })
                })
                .collect()
        })
    }

    /// Engage (publishing stopped) or release a kill switch.
    pub async fn set_switch(
        &self,
        scope: &SwitchScope,
        engaged: bool,
        actor: &str,
        now: Timestamp,
    ) -> Result<Switch, StoreError> {
        let (scope_label, name) = scope.parts();
        if scope_label != "global" {
            check_name(scope_label, name)?;
        }
        write_tx!(self, |tx, dialect| {
            sqlx::query(
                "INSERT INTO switches (scope, name, engaged, changed_at, changed_by) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (scope, name) DO UPDATE SET engaged = excluded.engaged, \
                 changed_at = excluded.changed_at, changed_by = excluded.changed_by",
            )
            .bind(scope_label)
            .bind(name)
            .bind(if engaged { 1_i64 } else { 0 })
            .bind(now.0)
            .bind(actor)
            .execute(&mut *tx)
            .await
            .map_err(map_db)?;
            admin_event!(
                &mut *tx,
                now.0,
                actor,
                if engaged {
                    "switch_engaged"
                } else {
                    "switch_released"
                },
                json!({ "scope": scope_label, "name": name })
            );
            Ok(())
        })?;
        self.switches()
            .await?
            .into_iter()
            .find(|s| s.scope == scope_label && s.name == name)
            .ok_or_else(|| StoreError::Decode("switch vanished after write".into()))
    }

    /// Every kill switch ever set, engaged or not.
    pub async fn switches(&self) -> Result<Vec<Switch>, StoreError> {
        read_pool!(self, |ex| {
            let rows = sqlx::query(
                "SELECT scope, name, engaged, changed_at, changed_by FROM switches ORDER BY scope, name",
            )
            .fetch_all(ex)
            .await
            .map_err(map_db)?;
            rows.iter()
                .map(|r| {
                    Ok(Switch {
                        scope: col(r, "scope")?,
                        name: col(r, "name")?,
                        engaged: col::<_, i64>(r, "engaged")? != 0,
                        changed_at: col(r, "changed_at")?,
                        changed_by: col(r, "changed_by")?,
                    })
                })
                .collect()
        })
    }

    /// The store's restore epoch now.
    pub async fn epoch(&self) -> Result<i64, StoreError> {
        read_pool!(self, |ex| {
            sqlx::query_scalar("SELECT epoch FROM store_meta WHERE id = 1")
                .fetch_one(ex)
                .await
                .map_err(map_db)
        })
    }

    /// Bump the restore epoch: every worker that holds an older epoch is fenced out of every write. Part of
    /// the restore protocol in docs/restore.md: run it right after restoring a backup, before any worker.
    pub async fn bump_epoch(
        &self,
        actor: &str,
        reason: &str,
        now: Timestamp,
    ) -> Result<i64, StoreError> {
        write_tx!(self, |tx, dialect| {
            let epoch: i64 = sqlx::query_scalar(
                "UPDATE store_meta SET epoch = epoch + 1 WHERE id = 1 RETURNING epoch",
            )
            .fetch_one(&mut *tx)
            .await
            .map_err(map_db)?;
            admin_event!(
                &mut *tx,
                now.0,
                actor,
                "epoch_bumped",
                json!({ "epoch": epoch, "reason": reason })
            );
            Ok(epoch)
        })
    }
}
