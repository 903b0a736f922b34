//! Administration: accounts (credential version, revocation, limits), kill switches and the restore epoch.
//! Every change appends an `admin_events` row in the same transaction.
use serde_json::json;

use super::error::StoreError;
use super::model::*;
use super::rows::{AccountRow, SwitchRow};
use super::{AdminEvent, Store, map_db, map_row};

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
        self.write(async |tx| {
            let r = sqlx::query(
                "INSERT INTO accounts (name, platform, min_interval_ms, dup_window_ms, created_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING",
            )
            .bind(&new.name)
            .bind(&new.platform)
            .bind(new.min_interval_ms)
            .bind(new.dup_window_ms)
            .bind(now.0)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if r.rows_affected() != 1 {
                return Err(StoreError::AccountExists(new.name.clone()));
            }
            tx.admin_event(AdminEvent {
                at: now,
                actor,
                action: "account_added",
                details: json!({ "account": new.name, "platform": new.platform, "min_interval_ms": new.min_interval_ms,
                        "dup_window_ms": new.dup_window_ms }),
            })
            .await?;
            Ok(())
        }).await?;
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
        self.write(async |tx| {
            let r = sqlx::query(sql)
                .bind(name)
                .execute(tx.conn())
                .await
                .map_err(map_db)?;
            if r.rows_affected() != 1 {
                return Err(StoreError::UnknownAccount(name.to_string()));
            }
            tx.admin_event(AdminEvent {
                at: now,
                actor,
                action,
                details: json!({ "account": name }),
            })
            .await?;
            Ok(())
        })
        .await?;
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
        self.write(async |tx| {
            let r = sqlx::query(
                "UPDATE accounts SET min_interval_ms = COALESCE($2, min_interval_ms), \
                 dup_window_ms = COALESCE($3, dup_window_ms) WHERE name = $1",
            )
            .bind(name)
            .bind(min_interval_ms)
            .bind(dup_window_ms)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if r.rows_affected() != 1 {
                return Err(StoreError::UnknownAccount(name.to_string()));
            }
            tx.admin_event(AdminEvent {
                at: now,
                actor,
                action: "account_limits",
                details: json!({ "account": name, "min_interval_ms": min_interval_ms, "dup_window_ms": dup_window_ms }),
            })
            .await?;
            Ok(())
        }).await?;
        self.account(name).await
    }

    /// Change an account's pacing beyond the minimum interval (caps per rolling hour and day, jitter).
    pub async fn set_account_pacing(
        &self,
        name: &str,
        pacing: Pacing,
        actor: &str,
        now: Timestamp,
    ) -> Result<Account, StoreError> {
        let negative = |v: Option<Option<i64>>| v.flatten().is_some_and(|n| n < 0);
        if negative(pacing.hourly_cap)
            || negative(pacing.daily_cap)
            || pacing.jitter_ms.is_some_and(|v| v < 0)
        {
            return Err(StoreError::Invalid(
                "caps and jitter cannot be negative".into(),
            ));
        }
        self.write(async |tx| {
            let r = sqlx::query(
                "UPDATE accounts SET \
                 hourly_cap = CASE WHEN $2 = 1 THEN $3 ELSE hourly_cap END, \
                 daily_cap = CASE WHEN $4 = 1 THEN $5 ELSE daily_cap END, \
                 jitter_ms = COALESCE($6, jitter_ms) WHERE name = $1",
            )
            .bind(name)
            .bind(i64::from(pacing.hourly_cap.is_some()))
            .bind(pacing.hourly_cap.flatten())
            .bind(i64::from(pacing.daily_cap.is_some()))
            .bind(pacing.daily_cap.flatten())
            .bind(pacing.jitter_ms)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if r.rows_affected() != 1 {
                return Err(StoreError::UnknownAccount(name.to_string()));
            }
            tx.admin_event(AdminEvent {
                at: now,
                actor,
                action: "account_pacing",
                details: json!({ "account": name, "hourly_cap": pacing.hourly_cap,
                                 "daily_cap": pacing.daily_cap, "jitter_ms": pacing.jitter_ms }),
            })
            .await?;
            Ok(())
        })
        .await?;
        self.account(name).await
    }

    /// Set (or, with `None`, remove) a platform's limit on dispatches in flight.
    pub async fn set_platform_limit(
        &self,
        platform: &str,
        max_in_flight: Option<i64>,
        actor: &str,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        if platform.is_empty() || max_in_flight.is_some_and(|m| m < 1) {
            return Err(StoreError::Invalid(
                "a platform limit needs a platform name and at least 1 dispatch in flight".into(),
            ));
        }
        self.write(async |tx| {
            match max_in_flight {
                Some(m) => sqlx::query(
                    "INSERT INTO platform_limits (platform, max_in_flight, changed_at) VALUES ($1, $2, $3) \
                     ON CONFLICT (platform) DO UPDATE SET max_in_flight = excluded.max_in_flight, \
                     changed_at = excluded.changed_at",
                )
                .bind(platform)
                .bind(m)
                .bind(now.0),
                None => sqlx::query("DELETE FROM platform_limits WHERE platform = $1").bind(platform),
            }
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            tx.admin_event(AdminEvent {
                at: now,
                actor,
                action: "platform_limit",
                details: json!({ "platform": platform, "max_in_flight": max_in_flight }),
            })
            .await?;
            Ok(())
        })
        .await
    }

    /// Every platform limit: (platform, max in flight).
    pub async fn platform_limits(&self) -> Result<Vec<(String, i64)>, StoreError> {
        sqlx::query_as("SELECT platform, max_in_flight FROM platform_limits ORDER BY platform")
            .fetch_all(self.pool())
            .await
            .map_err(map_row)
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
        let rows: Vec<AccountRow> = sqlx::query_as(
            "SELECT name, platform, credential_version, revoked, min_interval_ms, dup_window_ms, \
             last_dispatch_at, handle, hourly_cap, daily_cap, jitter_ms, next_dispatch_at FROM accounts ORDER BY name",
        )
        .fetch_all(self.pool())
        .await
        .map_err(map_row)?;
        Ok(rows.into_iter().map(Account::from).collect())
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
        self.write(async |tx| {
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
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            tx.admin_event(AdminEvent {
                at: now,
                actor,
                action: if engaged {
                    "switch_engaged"
                } else {
                    "switch_released"
                },
                details: json!({ "scope": scope_label, "name": name }),
            })
            .await?;
            Ok(())
        }).await?;
        self.switches()
            .await?
            .into_iter()
            .find(|s| s.scope == scope_label && s.name == name)
            .ok_or_else(|| StoreError::Decode("switch vanished after write".into()))
    }

    /// Every kill switch ever set, engaged or not.
    pub async fn switches(&self) -> Result<Vec<Switch>, StoreError> {
        let rows: Vec<SwitchRow> = sqlx::query_as(
            "SELECT scope, name, engaged, changed_at, changed_by FROM switches ORDER BY scope, name",
        )
        .fetch_all(self.pool())
        .await
        .map_err(map_row)?;
        Ok(rows.into_iter().map(Switch::from).collect())
    }

    /// The store's restore epoch now.
    pub async fn epoch(&self) -> Result<i64, StoreError> {
        sqlx::query_scalar("SELECT epoch FROM store_meta WHERE id = 1")
            .fetch_one(self.pool())
            .await
            .map_err(map_db)
    }

    /// Bump the restore epoch: every worker that holds an older epoch is fenced out of every write. Part of
    /// the restore protocol in docs/restore.md: run it right after restoring a backup, before any worker.
    pub async fn bump_epoch(
        &self,
        actor: &str,
        reason: &str,
        now: Timestamp,
    ) -> Result<i64, StoreError> {
        self.write(async |tx| {
            let epoch: i64 = sqlx::query_scalar(
                "UPDATE store_meta SET epoch = epoch + 1 WHERE id = 1 RETURNING epoch",
            )
            .fetch_one(tx.conn())
            .await
            .map_err(map_db)?;
            tx.admin_event(AdminEvent {
                at: now,
                actor,
                action: "epoch_bumped",
                details: json!({ "epoch": epoch, "reason": reason }),
            })
            .await?;
            Ok(epoch)
        })
        .await
    }
}
