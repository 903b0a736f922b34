//! Account leases: an account's login (its browser profile) is used by one host at a time. A publish takes the
//! account's lease before its browser starts and gives it back when the browser is closed; the authorization
//! transaction refuses a claim whose publish does not hold the live lease while another holder does, so a host
//! that lost the lease (stalled past it, partitioned from the database) stops before authorizing.
use serde_json::json;

use crate::store::error::StoreError;
use crate::store::model::*;
use crate::store::{AdminEvent, Store, map_db, map_row};

impl Store {
    /// Take (or renew) the account's lease for `holder` until `now + ttl_ms`. A new holder gets a new fence
    /// from the fencing counter; renewing keeps the fence. While another holder's lease is live: `LeaseHeld`.
    pub async fn acquire_account_lease(
        &self,
        account: &str,
        holder: &str,
        ttl_ms: i64,
        now: Timestamp,
    ) -> Result<AccountLease, StoreError> {
        if holder.trim().is_empty() || ttl_ms <= 0 {
            return Err(StoreError::Invalid(
                "an account lease needs a holder and a positive duration".into(),
            ));
        }
        let expires = now.plus_ms(ttl_ms).0;
        let got: Option<i64> = self
            .write(async |tx| {
                let known: i64 =
                    sqlx::query_scalar("SELECT COUNT(*) FROM accounts WHERE name = $1")
                        .bind(account)
                        .fetch_one(tx.conn())
                        .await
                        .map_err(map_db)?;
                if known == 0 {
                    return Err(StoreError::UnknownAccount(account.to_string()));
                }
                let fence: i64 = sqlx::query_scalar(tx.dialect().next_generation_sql())
                    .fetch_one(tx.conn())
                    .await
                    .map_err(map_db)?;
                // The guard: the row is free, expired, or already this holder's.
                let got: Option<i64> = sqlx::query_scalar(
                    "INSERT INTO account_leases (account, holder, fence, expires_at, acquired_at) \
                     VALUES ($1, $2, $3, $4, $5) \
                     ON CONFLICT (account) DO UPDATE SET holder = excluded.holder, \
                     fence = CASE WHEN account_leases.holder = excluded.holder THEN account_leases.fence \
                             ELSE excluded.fence END, \
                     expires_at = excluded.expires_at, \
                     acquired_at = CASE WHEN account_leases.holder = excluded.holder \
                             THEN account_leases.acquired_at ELSE excluded.acquired_at END \
                     WHERE account_leases.holder = excluded.holder OR account_leases.expires_at <= $5 \
                     RETURNING fence",
                )
                .bind(account)
                .bind(holder)
                .bind(fence)
                .bind(expires)
                .bind(now.0)
                .fetch_optional(tx.conn())
                .await
                .map_err(map_row)?;
                // A new holder (the drawn fence was kept) is history: who had the account from when.
                if got == Some(fence) {
                    tx.admin_event(AdminEvent {
                        at: now,
                        actor: holder,
                        action: "account_lease_taken",
                        details: json!({ "account": account, "holder": holder, "fence": fence,
                                         "expires_at": expires }),
                    })
                    .await?;
                }
                Ok(got)
            })
            .await?;
        match got {
            Some(fence) => Ok(AccountLease {
                account: account.to_string(),
                holder: holder.to_string(),
                fence,
                expires_at: expires,
            }),
            None => {
                let (other, until): (String, i64) = sqlx::query_as(
                    "SELECT holder, expires_at FROM account_leases WHERE account = $1",
                )
                .bind(account)
                .fetch_optional(self.pool())
                .await
                .map_err(map_row)?
                .unwrap_or_else(|| ("(a concurrent publish)".into(), now.0));
                Err(StoreError::LeaseHeld {
                    owner: format!("{other}, on account {account}'s lease"),
                    expires_at: until,
                })
            }
        }
    }

    /// Take the account's lease from a holder whose process is known to be gone (the caller checked: same
    /// machine, no such process), before its lease runs out: only that holder's lease with that fence is
    /// replaced, by a new fence. A gone process can neither authorize nor drive a browser (its Chromium dies
    /// with it), so nothing of it can meet the new holder's work. `LeaseHeld` when the lease moved on.
    pub async fn take_over_account_lease(
        &self,
        gone: &AccountLease,
        holder: &str,
        ttl_ms: i64,
        now: Timestamp,
    ) -> Result<AccountLease, StoreError> {
        let expires = now.plus_ms(ttl_ms).0;
        let got: Option<i64> = self
            .write(async |tx| {
                let fence: i64 = sqlx::query_scalar(tx.dialect().next_generation_sql())
                    .fetch_one(tx.conn())
                    .await
                    .map_err(map_db)?;
                let got: Option<i64> = sqlx::query_scalar(
                    "UPDATE account_leases SET holder = $4, fence = $5, expires_at = $6, acquired_at = $7 \
                     WHERE account = $1 AND holder = $2 AND fence = $3 RETURNING fence",
                )
                .bind(&gone.account)
                .bind(&gone.holder)
                .bind(gone.fence)
                .bind(holder)
                .bind(fence)
                .bind(expires)
                .bind(now.0)
                .fetch_optional(tx.conn())
                .await
                .map_err(map_row)?;
                if got.is_some() {
                    tx.admin_event(AdminEvent {
                        at: now,
                        actor: holder,
                        action: "account_lease_taken",
                        details: json!({ "account": gone.account, "holder": holder, "fence": fence,
                                         "expires_at": expires, "from_gone_holder": gone.holder }),
                    })
                    .await?;
                }
                Ok(got)
            })
            .await?;
        match got {
            Some(fence) => Ok(AccountLease {
                account: gone.account.clone(),
                holder: holder.to_string(),
                fence,
                expires_at: expires,
            }),
            None => Err(StoreError::LeaseHeld {
                owner: format!("another holder, on account {}'s lease", gone.account),
                expires_at: now.0,
            }),
        }
    }

    /// Give the lease back (only this holder's, with this fence; a lease already taken over is left alone).
    pub async fn release_account_lease(
        &self,
        lease: &AccountLease,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.write(async |tx| {
            let gone = sqlx::query(
                "DELETE FROM account_leases WHERE account = $1 AND holder = $2 AND fence = $3",
            )
            .bind(&lease.account)
            .bind(&lease.holder)
            .bind(lease.fence)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            if gone.rows_affected() == 1 {
                tx.admin_event(AdminEvent {
                    at: now,
                    actor: &lease.holder,
                    action: "account_lease_released",
                    details: json!({ "account": lease.account, "holder": lease.holder,
                                     "fence": lease.fence }),
                })
                .await?;
            }
            Ok(())
        })
        .await
    }

    /// The account's live lease, if any.
    pub async fn account_lease(
        &self,
        account: &str,
        now: Timestamp,
    ) -> Result<Option<AccountLease>, StoreError> {
        let row: Option<(String, String, i64, i64)> = sqlx::query_as(
            "SELECT account, holder, fence, expires_at FROM account_leases \
             WHERE account = $1 AND expires_at > $2",
        )
        .bind(account)
        .bind(now.0)
        .fetch_optional(self.pool())
        .await
        .map_err(map_row)?;
        Ok(
            row.map(|(account, holder, fence, expires_at)| AccountLease {
                account,
                holder,
                fence,
                expires_at,
            }),
        )
    }
}
