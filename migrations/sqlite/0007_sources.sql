-- Sources (issue 14): the versions a post rests on, the stored-head chain, captures and claims. Applied
-- migrations are checksummed: never edit this file, add a new one.

-- One version of a source: its id is sha256 over the source's stable id and its NORMALIZED visible body
-- (src/identity.rs, SourceVersionId; the normalizer is src/source/normalize.rs). `supersedes` is whatever the
-- store held as the source's head when this version was first captured (NULL for the first one), never a
-- predecessor computed elsewhere, so a capture that failed can never jam the chain. At most one version
-- supersedes a given one. A version never changes and is never deleted.
CREATE TABLE source_versions (
    version_id    TEXT    PRIMARY KEY CHECK (length(version_id) = 64),
    stable_id     TEXT    NOT NULL CHECK (length(stable_id) > 0),
    kind          TEXT    NOT NULL CHECK (kind IN ('html', 'text')),
    normalized    TEXT    NOT NULL,
    supersedes    TEXT    REFERENCES source_versions (version_id),
    first_seen_at INTEGER NOT NULL
);
CREATE INDEX source_versions_stable_id ON source_versions (stable_id, first_seen_at);
CREATE UNIQUE INDEX source_versions_one_successor ON source_versions (supersedes) WHERE supersedes IS NOT NULL;
CREATE TRIGGER source_versions_append_only_update BEFORE UPDATE ON source_versions
BEGIN SELECT RAISE(ABORT, 'oncepost: source versions never change'); END;
CREATE TRIGGER source_versions_append_only_delete BEFORE DELETE ON source_versions
BEGIN SELECT RAISE(ABORT, 'oncepost: source versions never change'); END;

-- One row per source: its head is the version the store holds as current. The head moves only forward along
-- the chain (to the version that supersedes it), so a late capture of an old body can never make it head again.
CREATE TABLE sources (
    stable_id     TEXT    PRIMARY KEY CHECK (length(stable_id) > 0),
    head_version  TEXT    REFERENCES source_versions (version_id),
    head_since    INTEGER NOT NULL,
    first_seen_at INTEGER NOT NULL
);
CREATE TRIGGER sources_head_moves_forward BEFORE UPDATE OF head_version ON sources
WHEN NEW.head_version IS NOT OLD.head_version AND NOT EXISTS (
    SELECT 1 FROM source_versions v WHERE v.version_id = NEW.head_version AND v.stable_id = OLD.stable_id
    AND v.supersedes IS OLD.head_version)
BEGIN SELECT RAISE(ABORT, 'oncepost: a source''s head moves only to the version that supersedes it'); END;
CREATE TRIGGER sources_identity_fixed BEFORE UPDATE OF stable_id, first_seen_at ON sources
BEGIN SELECT RAISE(ABORT, 'oncepost: a source''s stable id never changes'); END;
CREATE TRIGGER sources_no_delete BEFORE DELETE ON sources
BEGIN SELECT RAISE(ABORT, 'oncepost: sources are never deleted'); END;

-- Every capture of a source, whatever version it minted or found: the raw body's hash is forensics (a page
-- whose chrome changes on every fetch shows many raw hashes under one version), never identity. Append-only.
CREATE TABLE source_captures (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    version_id  TEXT    NOT NULL REFERENCES source_versions (version_id),
    raw_hash    TEXT    NOT NULL,
    raw_len     INTEGER NOT NULL,
    via         TEXT    NOT NULL,
    outcome     TEXT    NOT NULL,
    captured_at INTEGER NOT NULL
);
CREATE INDEX source_captures_version ON source_captures (version_id, captured_at);
CREATE TRIGGER source_captures_append_only_update BEFORE UPDATE ON source_captures
BEGIN SELECT RAISE(ABORT, 'oncepost: source captures are append-only'); END;
CREATE TRIGGER source_captures_append_only_delete BEFORE DELETE ON source_captures
BEGIN SELECT RAISE(ABORT, 'oncepost: source captures are append-only'); END;

-- A claim: the source version it rests on plus its own content (ClaimId). An intent that rests on a source
-- names its claim in intents.source_ref (immutable since 0003).
CREATE TABLE claims (
    claim_id      TEXT    PRIMARY KEY CHECK (length(claim_id) = 64),
    version_id    TEXT    NOT NULL REFERENCES source_versions (version_id),
    content       TEXT    NOT NULL,
    first_seen_at INTEGER NOT NULL
);
CREATE INDEX claims_version ON claims (version_id);
CREATE TRIGGER claims_append_only_update BEFORE UPDATE ON claims
BEGIN SELECT RAISE(ABORT, 'oncepost: claims never change'); END;
CREATE TRIGGER claims_append_only_delete BEFORE DELETE ON claims
BEGIN SELECT RAISE(ABORT, 'oncepost: claims never change'); END;
CREATE TRIGGER intents_source_ref_is_a_claim BEFORE INSERT ON intents
WHEN NEW.source_ref IS NOT NULL AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.claim_id = NEW.source_ref)
BEGIN SELECT RAISE(ABORT, 'oncepost: an intent''s source_ref names a stored claim'); END;
CREATE INDEX intents_source_ref ON intents (source_ref) WHERE source_ref IS NOT NULL;
