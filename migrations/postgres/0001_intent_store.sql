-- oncepost intent store, PostgreSQL 15. Applied migrations are checksummed: never edit this file, add a new one.
-- Times are milliseconds since the Unix epoch (BIGINT). Flags are BIGINT 0/1 so both backends read them alike.

CREATE EXTENSION IF NOT EXISTS btree_gist;

CREATE TABLE store_meta (
    id          BIGINT PRIMARY KEY CHECK (id = 1),
    instance_id TEXT   NOT NULL,
    epoch       BIGINT NOT NULL CHECK (epoch >= 1)
);
INSERT INTO store_meta (id, instance_id, epoch) VALUES (1, md5(random()::text || clock_timestamp()::text), 1);

CREATE FUNCTION oncepost_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'oncepost: % on % is refused (%)', TG_OP, TG_TABLE_NAME, TG_ARGV[0]
        USING ERRCODE = 'restrict_violation';
END $$;

CREATE FUNCTION oncepost_epoch_forward() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.epoch <= OLD.epoch OR NEW.instance_id <> OLD.instance_id OR NEW.id <> OLD.id THEN
        RAISE EXCEPTION 'oncepost: store_meta.epoch only moves forward' USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER store_meta_epoch_forward BEFORE UPDATE ON store_meta
    FOR EACH ROW EXECUTE FUNCTION oncepost_epoch_forward();
CREATE TRIGGER store_meta_no_delete BEFORE DELETE ON store_meta
    FOR EACH ROW EXECUTE FUNCTION oncepost_refuse('store_meta is one row forever');
CREATE TRIGGER store_meta_no_truncate BEFORE TRUNCATE ON store_meta
    FOR EACH STATEMENT EXECUTE FUNCTION oncepost_refuse('store_meta is one row forever');

-- The fencing generation: a SEQUENCE, which survives TRUNCATE and DELETE of any table.
CREATE SEQUENCE fencing_generation AS BIGINT START 1 NO CYCLE;

CREATE TABLE accounts (
    name               TEXT   PRIMARY KEY CHECK (length(name) > 0),
    platform           TEXT   NOT NULL CHECK (length(platform) > 0),
    credential_version BIGINT NOT NULL DEFAULT 1 CHECK (credential_version >= 1),
    revoked            BIGINT NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1)),
    min_interval_ms    BIGINT NOT NULL DEFAULT 0 CHECK (min_interval_ms >= 0),
    dup_window_ms      BIGINT NOT NULL DEFAULT 86400000 CHECK (dup_window_ms >= 0),
    last_dispatch_at   BIGINT,
    created_at         BIGINT NOT NULL
);

CREATE TABLE switches (
    scope      TEXT   NOT NULL CHECK (scope IN ('global', 'platform', 'account')),
    name       TEXT   NOT NULL,
    engaged    BIGINT NOT NULL CHECK (engaged IN (0, 1)),
    changed_at BIGINT NOT NULL,
    changed_by TEXT   NOT NULL,
    PRIMARY KEY (scope, name),
    CHECK ((scope = 'global') = (name = ''))
);

CREATE TABLE intents (
    id                 BIGSERIAL PRIMARY KEY,
    delivery_key       TEXT   NOT NULL UNIQUE CHECK (length(delivery_key) = 64),
    account            TEXT   NOT NULL REFERENCES accounts (name),
    platform           TEXT   NOT NULL,
    action_kind        TEXT   NOT NULL CHECK (action_kind IN ('post', 'reply', 'quote', 'like', 'reshare', 'follow')),
    target             TEXT   NOT NULL,
    request_json       TEXT   NOT NULL,
    content_hash       TEXT   NOT NULL,
    source_ref         TEXT,
    redelivery_of      TEXT   REFERENCES intents (delivery_key),
    redelivery_json    TEXT,
    state              TEXT   NOT NULL CHECK (state IN ('pending', 'authorized', 'published', 'failed', 'indeterminate', 'parked')),
    generation         BIGINT NOT NULL DEFAULT 0,
    epoch              BIGINT NOT NULL DEFAULT 0,
    lease_owner        TEXT,
    lease_expires_at   BIGINT,
    current_attempt    TEXT,
    attempt_count      BIGINT NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
    max_attempts       BIGINT NOT NULL CHECK (max_attempts >= 1),
    contract_hash      TEXT,
    credential_version BIGINT,
    authorized_at      BIGINT,
    reconcile_count    BIGINT NOT NULL DEFAULT 0,
    platform_id        TEXT,
    permalink          TEXT,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL)),
    CHECK (state <> 'authorized' OR (lease_owner IS NOT NULL AND authorized_at IS NOT NULL AND current_attempt IS NOT NULL)),
    CHECK (state NOT IN ('published', 'failed', 'indeterminate', 'parked') OR lease_owner IS NULL),
    CHECK (state <> 'published' OR platform_id IS NOT NULL OR permalink IS NOT NULL),
    CHECK (attempt_count <= max_attempts)
);
CREATE INDEX intents_state ON intents (state, lease_expires_at);
CREATE INDEX intents_account ON intents (account);

CREATE TABLE attempts (
    token              TEXT   PRIMARY KEY,
    intent_id          BIGINT NOT NULL REFERENCES intents (id),
    ordinal            BIGINT NOT NULL CHECK (ordinal >= 1),
    account            TEXT   NOT NULL,
    action_kind        TEXT   NOT NULL,
    credential_version BIGINT NOT NULL,
    contract_hash      TEXT   NOT NULL,
    generation         BIGINT NOT NULL,
    epoch              BIGINT NOT NULL,
    owner              TEXT   NOT NULL,
    created_at         BIGINT NOT NULL,
    UNIQUE (intent_id, ordinal),
    UNIQUE (epoch, generation)
);
CREATE TRIGGER attempts_no_update BEFORE UPDATE OR DELETE ON attempts
    FOR EACH ROW EXECUTE FUNCTION oncepost_refuse('attempts are append-only');
CREATE TRIGGER attempts_no_truncate BEFORE TRUNCATE ON attempts
    FOR EACH STATEMENT EXECUTE FUNCTION oncepost_refuse('attempts are append-only');

CREATE TABLE events (
    id            BIGSERIAL PRIMARY KEY,
    intent_id     BIGINT NOT NULL REFERENCES intents (id),
    at            BIGINT NOT NULL,
    kind          TEXT   NOT NULL,
    from_state    TEXT,
    to_state      TEXT   NOT NULL,
    actor         TEXT   NOT NULL,
    reason        TEXT,
    details       TEXT   NOT NULL DEFAULT '{}',
    attempt_token TEXT   REFERENCES attempts (token),
    generation    BIGINT
);
CREATE INDEX events_intent ON events (intent_id, id);
CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION oncepost_refuse('events are append-only');
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION oncepost_refuse('events are append-only');

CREATE TABLE admin_events (
    id      BIGSERIAL PRIMARY KEY,
    at      BIGINT NOT NULL,
    actor   TEXT   NOT NULL,
    action  TEXT   NOT NULL,
    details TEXT   NOT NULL DEFAULT '{}'
);
CREATE TRIGGER admin_events_no_update BEFORE UPDATE OR DELETE ON admin_events
    FOR EACH ROW EXECUTE FUNCTION oncepost_refuse('admin events are append-only');
CREATE TRIGGER admin_events_no_truncate BEFORE TRUNCATE ON admin_events
    FOR EACH STATEMENT EXECUTE FUNCTION oncepost_refuse('admin events are append-only');

-- Duplicate-text exclusion: an exclusion constraint over [claimed_at, claimed_at + window_ms) per account and
-- content hash, ignoring exempt (person-authorized redelivery) claims.
CREATE TABLE text_claims (
    intent_id    BIGINT PRIMARY KEY REFERENCES intents (id),
    account      TEXT   NOT NULL,
    content_hash TEXT   NOT NULL,
    claimed_at   BIGINT NOT NULL,
    window_ms    BIGINT NOT NULL CHECK (window_ms >= 0),
    exempt       BIGINT NOT NULL DEFAULT 0 CHECK (exempt IN (0, 1)),
    CONSTRAINT oncepost_duplicate_text EXCLUDE USING gist (
        account WITH =,
        content_hash WITH =,
        int8range(claimed_at, claimed_at + window_ms) WITH &&
    ) WHERE (exempt = 0)
);
CREATE TRIGGER text_claims_no_update BEFORE UPDATE ON text_claims
    FOR EACH ROW EXECUTE FUNCTION oncepost_refuse('text claims are inserted or released, never changed');
