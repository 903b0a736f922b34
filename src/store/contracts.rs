//! Contracts by version (`contract_versions`): the contract file an attempt ran with, kept once per version hash
//! so that later commands on an intent need no contract file and cannot be handed another one.
use serde::Serialize;

use super::error::StoreError;
use super::model::Timestamp;
use super::{Store, map_db};

/// One stored contract version and how many intents last ran with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContractVersion {
    /// The version hash (`Contract::hash`).
    pub hash: String,
    /// Its platform.
    pub platform: String,
    /// When it was first recorded (ms since the epoch).
    pub first_seen_at: i64,
    /// Intents whose last attempt ran with it.
    pub intents: i64,
}

impl Store {
    /// Keep `source` (a contract file that parses to version `hash` of `platform`) unless this version is
    /// already kept. Idempotent: the first text of a version stays (texts of one version differ at most in
    /// comments and layout).
    pub async fn record_contract_version(
        &self,
        hash: &str,
        platform: &str,
        source: &str,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        if hash.len() != 64 || platform.is_empty() {
            return Err(StoreError::Invalid(
                "a contract version needs its 64-digit hash and its platform".into(),
            ));
        }
        self.write(async |tx| {
            sqlx::query(
                "INSERT INTO contract_versions (hash, platform, source, first_seen_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (hash) DO NOTHING",
            )
            .bind(hash)
            .bind(platform)
            .bind(source)
            .bind(now.0)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            Ok(())
        })
        .await
    }

    /// The kept contract file of version `hash`, if any.
    pub async fn contract_source(&self, hash: &str) -> Result<Option<String>, StoreError> {
        sqlx::query_scalar::<_, String>("SELECT source FROM contract_versions WHERE hash = $1")
            .bind(hash)
            .fetch_optional(self.pool())
            .await
            .map_err(map_db)
    }

    /// Every kept version, newest first, with the number of intents whose last attempt ran with it.
    pub async fn contract_versions(&self) -> Result<Vec<ContractVersion>, StoreError> {
        let rows: Vec<(String, String, i64, i64)> = sqlx::query_as(
            "SELECT v.hash, v.platform, v.first_seen_at, \
             (SELECT COUNT(*) FROM intents i WHERE i.contract_hash = v.hash) \
             FROM contract_versions v ORDER BY v.first_seen_at DESC, v.hash",
        )
        .fetch_all(self.pool())
        .await
        .map_err(map_db)?;
        Ok(rows
            .into_iter()
            .map(|(hash, platform, first_seen_at, intents)| ContractVersion {
                hash,
                platform,
                first_seen_at,
                intents,
            })
            .collect())
    }
}
