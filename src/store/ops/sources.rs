//! Sources (issue 14): capturing a version (the chain follows the STORED head), the freshness fence that parks
//! an intent whose source moved on before anything expensive runs, and the reads behind `oncepost sources`
//! and the review page. The publish-time gate is in `authorize.rs` (one more clause of the authorization).
use serde_json::json;

use crate::identity::{ClaimId, DeliveryKey, SourceVersionId};
use crate::source::SourceBody;
use crate::store::state::{EventKind, Status};
use crate::store::{
    CaptureOutcome, Captured, Freshness, IntentSource, NewEvent, RestingIntent, SourceChain,
    SourceSummary, SourceVersionRow, Store, StoreError, Timestamp, map_db, map_row,
};

use super::transition;

/// The park reason of an intent whose source moved on.
pub const SOURCE_SUPERSEDED: &str = "source_superseded";

fn version_of(s: String) -> Result<SourceVersionId, StoreError> {
    SourceVersionId::parse(&s).ok_or_else(|| {
        StoreError::Decode(format!("a stored source version id is malformed: {s:?}"))
    })
}

fn claim_of(s: String) -> Result<ClaimId, StoreError> {
    ClaimId::parse(&s)
        .ok_or_else(|| StoreError::Decode(format!("a stored claim id is malformed: {s:?}")))
}

impl Store {
    /// Record one capture of a source. A body whose version the store does not hold supersedes whatever the
    /// store holds as the source's head (never a predecessor computed elsewhere, so a capture that failed
    /// earlier cannot jam the chain) and becomes the head; the head's own body moves nothing; an older,
    /// superseded body moves nothing either (the head never goes back). Every capture is appended with its
    /// raw hash, which is forensics, never identity. One transaction, with the source's row locked.
    pub async fn capture_source(
        &self,
        body: &SourceBody,
        now: Timestamp,
    ) -> Result<Captured, StoreError> {
        let version = body.version();
        self.write(async |tx| {
            // Creates the row or locks it (PostgreSQL: the upsert takes the row lock; SQLite: the write
            // transaction is the lock): two captures of one source are serialized from here on.
            let head: Option<String> = sqlx::query_scalar(
                "INSERT INTO sources (stable_id, head_version, head_since, first_seen_at) \
                 VALUES ($1, NULL, $2, $2) \
                 ON CONFLICT (stable_id) DO UPDATE SET head_since = sources.head_since \
                 RETURNING head_version",
            )
            .bind(&body.stable_id)
            .bind(now.0)
            .fetch_one(tx.conn())
            .await
            .map_err(map_db)?;
            let head = head.map(version_of).transpose()?;
            let known: Option<String> =
                sqlx::query_scalar("SELECT stable_id FROM source_versions WHERE version_id = $1")
                    .bind(version.as_str())
                    .fetch_optional(tx.conn())
                    .await
                    .map_err(map_db)?;
            let outcome = match (&known, &head) {
                (Some(id), _) if id != &body.stable_id => {
                    return Err(StoreError::Decode(format!(
                        "source version {version} is stored for {id:?}, not {:?}",
                        body.stable_id
                    )));
                }
                (Some(_), Some(h)) if h == &version => CaptureOutcome::SameAsHead,
                (Some(_), _) => CaptureOutcome::Superseded,
                (None, h) => {
                    sqlx::query(
                        "INSERT INTO source_versions (version_id, stable_id, kind, normalized, supersedes, \
                         first_seen_at) VALUES ($1, $2, $3, $4, $5, $6)",
                    )
                    .bind(version.as_str())
                    .bind(&body.stable_id)
                    .bind(body.kind.label())
                    .bind(&body.normalized)
                    .bind(h.as_ref().map(SourceVersionId::as_str))
                    .bind(now.0)
                    .execute(tx.conn())
                    .await
                    .map_err(map_db)?;
                    // Guarded on the head read under the lock: the affected-row count decides.
                    let moved = match h {
                        Some(h) => sqlx::query(
                            "UPDATE sources SET head_version = $1, head_since = $2 \
                             WHERE stable_id = $3 AND head_version = $4",
                        )
                        .bind(version.as_str())
                        .bind(now.0)
                        .bind(&body.stable_id)
                        .bind(h.as_str()),
                        None => sqlx::query(
                            "UPDATE sources SET head_version = $1, head_since = $2 \
                             WHERE stable_id = $3 AND head_version IS NULL",
                        )
                        .bind(version.as_str())
                        .bind(now.0)
                        .bind(&body.stable_id),
                    }
                    .execute(tx.conn())
                    .await
                    .map_err(map_db)?;
                    if moved.rows_affected() != 1 {
                        return Err(StoreError::Decode(format!(
                            "the head of source {:?} moved during a capture that held its row",
                            body.stable_id
                        )));
                    }
                    if h.is_some() {
                        CaptureOutcome::NewHead
                    } else {
                        CaptureOutcome::First
                    }
                }
            };
            sqlx::query(
                "INSERT INTO source_captures (version_id, raw_hash, raw_len, via, outcome, captured_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(version.as_str())
            .bind(&body.raw_hash)
            .bind(body.raw_len as i64)
            .bind(&body.via)
            .bind(outcome.label())
            .bind(now.0)
            .execute(tx.conn())
            .await
            .map_err(map_db)?;
            let (new_head, superseded) = match outcome {
                CaptureOutcome::First | CaptureOutcome::NewHead => (version.clone(), head),
                CaptureOutcome::SameAsHead | CaptureOutcome::Superseded => (
                    head.ok_or_else(|| {
                        StoreError::Decode(format!(
                            "source {:?} holds versions but no head",
                            body.stable_id
                        ))
                    })?,
                    None,
                ),
            };
            Ok(Captured {
                stable_id: body.stable_id.clone(),
                version,
                head: new_head,
                superseded,
                outcome,
            })
        })
        .await
    }

    /// What the intent `key` rests on (None: no source).
    pub async fn intent_source(
        &self,
        key: &DeliveryKey,
    ) -> Result<Option<IntentSource>, StoreError> {
        let row: Option<(String, String, String, String, Option<String>)> = sqlx::query_as(
            // The intent by its key first (a unique index), then primary keys: a plan that cannot start from
            // the partial index of every intent with a source, which grows with them (seen on PostgreSQL).
            "SELECT c.claim_id, c.content, v.stable_id, v.version_id, s.head_version \
             FROM claims c JOIN source_versions v ON v.version_id = c.version_id \
             JOIN sources s ON s.stable_id = v.stable_id \
             WHERE c.claim_id = (SELECT i.source_ref FROM intents i WHERE i.delivery_key = $1)",
        )
        .bind(key.as_str())
        .fetch_optional(self.pool())
        .await
        .map_err(map_row)?;
        row.map(|(claim, content, stable_id, version, head)| {
            Ok(IntentSource {
                claim: claim_of(claim)?,
                claim_content: content,
                stable_id,
                version: version_of(version)?,
                head: head.map(version_of).transpose()?,
            })
        })
        .transpose()
    }

    /// The freshness fence, run before anything expensive (a browser) and again by the publish-time gate's
    /// caller: an intent whose source version is no longer the head is parked (reason `source_superseded`,
    /// with both versions) if it is pending; a person decides (submit the new text against the new version,
    /// or drop it). One transaction; the park is the guarded update of every park.
    pub async fn source_fence(
        &self,
        key: &DeliveryKey,
        actor: &str,
        now: Timestamp,
    ) -> Result<Freshness, StoreError> {
        let Some(source) = self.intent_source(key).await? else {
            return Ok(Freshness::NoSource);
        };
        if source.is_fresh() {
            return Ok(Freshness::Fresh { source });
        }
        let parked = self
            .write(async |tx| {
                let row = tx.intent(key).await?;
                if row.intent.state != Status::Pending {
                    return Ok(false);
                }
                let to = transition(Status::Pending, EventKind::Parked, "park")?;
                let r = sqlx::query(
                    "UPDATE intents SET state = $2, lease_owner = NULL, lease_expires_at = NULL, \
                     run_after = NULL, updated_at = $3 WHERE id = $1 AND state = 'pending'",
                )
                .bind(row.id)
                .bind(to.label())
                .bind(now.0)
                .execute(tx.conn())
                .await
                .map_err(map_db)?;
                if r.rows_affected() != 1 {
                    return Ok(false);
                }
                tx.append(NewEvent {
                    intent_id: row.id,
                    at: now,
                    kind: EventKind::Parked,
                    from: Some(Status::Pending),
                    to,
                    actor,
                    reason: Some(SOURCE_SUPERSEDED),
                    details: &json!({
                        "source": source.stable_id,
                        "version": source.version,
                        "head": source.head,
                        "claim": source.claim,
                    }),
                    attempt: None,
                    generation: None,
                })
                .await?;
                Ok(true)
            })
            .await?;
        Ok(Freshness::Superseded { source, parked })
    }

    /// Every source, by stable id.
    pub async fn sources(&self) -> Result<Vec<SourceSummary>, StoreError> {
        self.source_summaries(None).await
    }

    /// The summaries of every source, or of the one with this (canonical) stable id.
    async fn source_summaries(&self, only: Option<&str>) -> Result<Vec<SourceSummary>, StoreError> {
        let rows: Vec<(String, Option<String>, i64, i64, i64, i64)> = sqlx::query_as(
            "SELECT s.stable_id, s.head_version, s.head_since, s.first_seen_at, \
             (SELECT COUNT(*) FROM source_versions v WHERE v.stable_id = s.stable_id), \
             (SELECT COUNT(*) FROM intents i JOIN claims c ON c.claim_id = i.source_ref \
              JOIN source_versions v ON v.version_id = c.version_id WHERE v.stable_id = s.stable_id) \
             FROM sources s WHERE ($1 = '' OR s.stable_id = $1) ORDER BY s.stable_id",
        )
        // A stable id is never empty (CHECK), so '' stands for "every source" (a NULL parameter has no type
        // PostgreSQL can infer through the Any driver).
        .bind(only.unwrap_or(""))
        .fetch_all(self.pool())
        .await
        .map_err(map_row)?;
        rows.into_iter()
            .map(
                |(stable_id, head, head_since, first_seen_at, versions, intents)| {
                    Ok(SourceSummary {
                        stable_id,
                        head: head.map(version_of).transpose()?,
                        head_since,
                        first_seen_at,
                        versions,
                        intents,
                    })
                },
            )
            .collect()
    }

    /// One source's chain (None: no such source). `stable_id` is compared canonically.
    pub async fn source_chain(&self, stable_id: &str) -> Result<Option<SourceChain>, StoreError> {
        let id = crate::identity::canonical_source_id(stable_id);
        let Some(source) = self.sources_where(&id).await? else {
            return Ok(None);
        };
        let rows: Vec<(String, String, String, Option<String>, i64)> = sqlx::query_as(
            "SELECT version_id, kind, normalized, supersedes, first_seen_at FROM source_versions \
             WHERE stable_id = $1 ORDER BY first_seen_at, version_id",
        )
        .bind(&id)
        .fetch_all(self.pool())
        .await
        .map_err(map_row)?;
        let mut versions = Vec::new();
        for (version, kind, normalized, supersedes, first_seen_at) in rows {
            versions.push(
                self.version_row(
                    version,
                    &id,
                    kind,
                    normalized,
                    supersedes,
                    first_seen_at,
                    &source,
                )
                .await?,
            );
        }
        Ok(Some(SourceChain { source, versions }))
    }

    /// One stored version (None: unknown).
    pub async fn source_version(
        &self,
        version: &SourceVersionId,
    ) -> Result<Option<SourceVersionRow>, StoreError> {
        let row: Option<(String, String, String, Option<String>, i64)> = sqlx::query_as(
            "SELECT stable_id, kind, normalized, supersedes, first_seen_at FROM source_versions \
             WHERE version_id = $1",
        )
        .bind(version.as_str())
        .fetch_optional(self.pool())
        .await
        .map_err(map_row)?;
        let Some((stable_id, kind, normalized, supersedes, first_seen_at)) = row else {
            return Ok(None);
        };
        let Some(source) = self.sources_where(&stable_id).await? else {
            return Err(StoreError::Decode(format!(
                "source version {version} names source {stable_id:?}, which is not stored"
            )));
        };
        Ok(Some(
            self.version_row(
                version.as_str().to_string(),
                &stable_id,
                kind,
                normalized,
                supersedes,
                first_seen_at,
                &source,
            )
            .await?,
        ))
    }

    async fn sources_where(&self, stable_id: &str) -> Result<Option<SourceSummary>, StoreError> {
        Ok(self
            .source_summaries(Some(stable_id))
            .await?
            .into_iter()
            .next())
    }

    #[allow(clippy::too_many_arguments)]
    async fn version_row(
        &self,
        version: String,
        stable_id: &str,
        kind: String,
        normalized: String,
        supersedes: Option<String>,
        first_seen_at: i64,
        source: &SourceSummary,
    ) -> Result<SourceVersionRow, StoreError> {
        let version = version_of(version)?;
        let successor: Option<String> =
            sqlx::query_scalar("SELECT version_id FROM source_versions WHERE supersedes = $1")
                .bind(version.as_str())
                .fetch_optional(self.pool())
                .await
                .map_err(map_row)?;
        let (captures, raw_bodies): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(*), COUNT(DISTINCT raw_hash) FROM source_captures WHERE version_id = $1",
        )
        .bind(version.as_str())
        .fetch_one(self.pool())
        .await
        .map_err(map_row)?;
        let resting: Vec<(String, String, String, String)> = sqlx::query_as(
            "SELECT i.delivery_key, i.state, c.claim_id, c.content FROM claims c \
             JOIN intents i ON i.source_ref = c.claim_id WHERE c.version_id = $1 ORDER BY i.id",
        )
        .bind(version.as_str())
        .fetch_all(self.pool())
        .await
        .map_err(map_row)?;
        let mut intents = Vec::new();
        for (key, state, claim, claim_content) in resting {
            intents.push(RestingIntent {
                key,
                state: Status::from_label(&state)
                    .ok_or_else(|| StoreError::Decode(format!("unknown intent state {state:?}")))?,
                claim: claim_of(claim)?,
                claim_content,
            });
        }
        Ok(SourceVersionRow {
            is_head: source.head.as_ref() == Some(&version),
            version,
            stable_id: stable_id.to_string(),
            kind,
            normalized,
            supersedes: supersedes.map(version_of).transpose()?,
            superseded_by: successor.map(version_of).transpose()?,
            first_seen_at,
            captures,
            raw_bodies,
            intents,
        })
    }
}
