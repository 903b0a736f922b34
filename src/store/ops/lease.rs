//! Account leases: an account's login (its browser profile) is used by one host at a time. A publish takes the
//! account's lease before its browser starts and gives it back when the browser is closed; the authorization
//! transaction refuses a claim whose publish does not hold the live lease while another holder does, so a host
//! that lost the lease (stalled past it, partitioned from the database) stops before authorizing.
use crate::store::error::StoreError;
use crate::store::model::*;
use crate::store::{Store, map_db, map_row};

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
                sqlx::query_scalar(
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
                .map_err(map_row)
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

    /// Give the lease back (only this holder's, with this fence; a lease already taken over is left alone).
    pub async fn release_account_lease(&self, lease: &AccountLease) -> Result<(), StoreError> {
        self.write(async |tx| {
            sqlx::query(
                "DELETE FROM account_leases WHERE account = $1 AND holder = $2 AND fence = $3",
            )
            .bind(&lease.account)
            .bind(&lease.holder)
            .bind(lease.fence)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
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
