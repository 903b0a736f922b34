-- Sources (issue 14): the versions a post rests on, the stored-head chain, captures and claims. Applied
-- migrations are checksummed: never edit this file, add a new one. The SQLite twin explains each table.
CREATE TABLE source_versions (
    version_id    TEXT    PRIMARY KEY CHECK (length(version_id) = 64),
    stable_id     TEXT    NOT NULL CHECK (length(stable_id) > 0),
    kind          TEXT    NOT NULL CHECK (kind IN ('html', 'text')),
    normalized    TEXT    NOT NULL,
    supersedes    TEXT    REFERENCES source_versions (version_id),
    first_seen_at BIGINT  NOT NULL
);
CREATE INDEX source_versions_stable_id ON source_versions (stable_id, first_seen_at);
CREATE UNIQUE INDEX source_versions_one_successor ON source_versions (supersedes) WHERE supersedes IS NOT NULL;
CREATE TRIGGER source_versions_append_only BEFORE UPDATE OR DELETE ON source_versions
    FOR EACH ROW EXECUTE FUNCTION oncepost_refuse('source versions never change');

CREATE TABLE sources (
    stable_id     TEXT    PRIMARY KEY CHECK (length(stable_id) > 0),
    head_version  TEXT    REFERENCES source_versions (version_id),
    head_since    BIGINT  NOT NULL,
    first_seen_at BIGINT  NOT NULL
);
CREATE FUNCTION oncepost_source_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.stable_id, NEW.first_seen_at) IS DISTINCT FROM (OLD.stable_id, OLD.first_seen_at) THEN
        RAISE EXCEPTION 'oncepost: a source''s stable id never changes' USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.head_version IS DISTINCT FROM OLD.head_version AND NOT EXISTS (
        SELECT 1 FROM source_versions v WHERE v.version_id = NEW.head_version AND v.stable_id = OLD.stable_id
        AND v.supersedes IS NOT DISTINCT FROM OLD.head_version) THEN
        RAISE EXCEPTION 'oncepost: a source''s head moves only to the version that supersedes it'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER sources_guard BEFORE UPDATE ON sources
    FOR EACH ROW EXECUTE FUNCTION oncepost_source_update();
CREATE TRIGGER sources_no_delete BEFORE DELETE ON sources
    FOR EACH ROW EXECUTE FUNCTION oncepost_refuse('sources are never deleted');
CREATE TRIGGER sources_no_truncate BEFORE TRUNCATE ON sources
    FOR EACH STATEMENT EXECUTE FUNCTION oncepost_refuse('sources are never deleted');

CREATE TABLE source_captures (
    id          BIGSERIAL PRIMARY KEY,
    version_id  TEXT    NOT NULL REFERENCES source_versions (version_id),
    raw_hash    TEXT    NOT NULL,
    raw_len     BIGINT  NOT NULL,
    via         TEXT    NOT NULL,
    outcome     TEXT    NOT NULL,
    captured_at BIGINT  NOT NULL
);
CREATE INDEX source_captures_version ON source_captures (version_id, captured_at);
CREATE TRIGGER source_captures_append_only BEFORE UPDATE OR DELETE ON source_captures
    FOR EACH ROW EXECUTE FUNCTION oncepost_refuse('source captures are append-only');

CREATE TABLE claims (
    claim_id      TEXT    PRIMARY KEY CHECK (length(claim_id) = 64),
    version_id    TEXT    NOT NULL REFERENCES source_versions (version_id),
    content       TEXT    NOT NULL,
    first_seen_at BIGINT  NOT NULL
);
CREATE INDEX claims_version ON claims (version_id);
CREATE TRIGGER claims_append_only BEFORE UPDATE OR DELETE ON claims
    FOR EACH ROW EXECUTE FUNCTION oncepost_refuse('claims never change');
CREATE TRIGGER claims_no_truncate BEFORE TRUNCATE ON claims
    FOR EACH STATEMENT EXECUTE FUNCTION oncepost_refuse('claims never change');

CREATE FUNCTION oncepost_intent_source_is_a_claim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.source_ref IS NOT NULL AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.claim_id = NEW.source_ref) THEN
        RAISE EXCEPTION 'oncepost: an intent''s source_ref names a stored claim' USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER intents_source_ref_is_a_claim BEFORE INSERT ON intents
    FOR EACH ROW EXECUTE FUNCTION oncepost_intent_source_is_a_claim();
CREATE INDEX intents_source_ref ON intents (source_ref) WHERE source_ref IS NOT NULL;
