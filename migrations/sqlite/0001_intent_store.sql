-- oncepost intent store, SQLite. Applied migrations are checksummed: never edit this file, add a new one.
-- Times are milliseconds since the Unix epoch (INTEGER). Flags are INTEGER 0/1.

-- One row: the store instance and its restore epoch. The epoch only moves forward (`oncepost store bump-epoch`).
CREATE TABLE store_meta (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    instance_id TEXT    NOT NULL,
    epoch       INTEGER NOT NULL CHECK (epoch >= 1)
);
INSERT INTO store_meta (id, instance_id, epoch) VALUES (1, lower(hex(randomblob(16))), 1);
CREATE TRIGGER store_meta_epoch_forward BEFORE UPDATE ON store_meta
WHEN NEW.epoch <= OLD.epoch OR NEW.instance_id <> OLD.instance_id OR NEW.id <> OLD.id
BEGIN SELECT RAISE(ABORT, 'oncepost: store_meta.epoch only moves forward'); END;
CREATE TRIGGER store_meta_no_delete BEFORE DELETE ON store_meta
BEGIN SELECT RAISE(ABORT, 'oncepost: store_meta cannot be deleted'); END;

-- The fencing generation counter (SQLite has no SEQUENCE). It lives apart from every lease and claim column, it
-- can only be incremented by one, and it cannot be deleted, so wiping claim data never makes a generation reissue.
CREATE TABLE fencing_counter (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    value INTEGER NOT NULL CHECK (value >= 0)
);
INSERT INTO fencing_counter (id, value) VALUES (1, 0);
CREATE TRIGGER fencing_counter_forward BEFORE UPDATE ON fencing_counter
WHEN NEW.value <> OLD.value + 1 OR NEW.id <> OLD.id
BEGIN SELECT RAISE(ABORT, 'oncepost: the fencing counter only moves forward by one'); END;
CREATE TRIGGER fencing_counter_no_delete BEFORE DELETE ON fencing_counter
BEGIN SELECT RAISE(ABORT, 'oncepost: the fencing counter cannot be deleted'); END;

CREATE TABLE accounts (
    name               TEXT    PRIMARY KEY CHECK (length(name) > 0),
    platform           TEXT    NOT NULL CHECK (length(platform) > 0),
    credential_version INTEGER NOT NULL DEFAULT 1 CHECK (credential_version >= 1),
    revoked            INTEGER NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1)),
    min_interval_ms    INTEGER NOT NULL DEFAULT 0 CHECK (min_interval_ms >= 0),
    dup_window_ms      INTEGER NOT NULL DEFAULT 86400000 CHECK (dup_window_ms >= 0),
    last_dispatch_at   INTEGER,
    created_at         INTEGER NOT NULL
);

-- Kill switches. scope 'global' has the empty name.
CREATE TABLE switches (
    scope      TEXT    NOT NULL CHECK (scope IN ('global', 'platform', 'account')),
    name       TEXT    NOT NULL,
    engaged    INTEGER NOT NULL CHECK (engaged IN (0, 1)),
    changed_at INTEGER NOT NULL,
    changed_by TEXT    NOT NULL,
    PRIMARY KEY (scope, name),
    CHECK ((scope = 'global') = (name = ''))
);

CREATE TABLE intents (
    id                 INTEGER PRIMARY KEY,
    delivery_key       TEXT    NOT NULL UNIQUE CHECK (length(delivery_key) = 64),
    account            TEXT    NOT NULL REFERENCES accounts (name),
    platform           TEXT    NOT NULL,
    action_kind        TEXT    NOT NULL CHECK (action_kind IN ('post', 'reply', 'quote', 'like', 'reshare', 'follow')),
    target             TEXT    NOT NULL,
    request_json       TEXT    NOT NULL,
    content_hash       TEXT    NOT NULL,
    source_ref         TEXT,
    redelivery_of      TEXT    REFERENCES intents (delivery_key),
    redelivery_json    TEXT,
    state              TEXT    NOT NULL CHECK (state IN ('pending', 'authorized', 'published', 'failed', 'indeterminate', 'parked')),
    -- fence of the current claim: generation from fencing_counter, epoch from store_meta
    generation         INTEGER NOT NULL DEFAULT 0,
    epoch              INTEGER NOT NULL DEFAULT 0,
    -- the live claim (pre-authorization) or dispatch lease (authorized); both NULL when nobody holds it
    lease_owner        TEXT,
    lease_expires_at   INTEGER,
    current_attempt    TEXT,
    attempt_count      INTEGER NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
    max_attempts       INTEGER NOT NULL CHECK (max_attempts >= 1),
    contract_hash      TEXT,
    credential_version INTEGER,
    authorized_at      INTEGER,
    reconcile_count    INTEGER NOT NULL DEFAULT 0,
    platform_id        TEXT,
    permalink          TEXT,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL)),
    CHECK (state <> 'authorized' OR (lease_owner IS NOT NULL AND authorized_at IS NOT NULL AND current_attempt IS NOT NULL)),
    CHECK (state NOT IN ('published', 'failed', 'indeterminate', 'parked') OR lease_owner IS NULL),
    CHECK (state <> 'published' OR platform_id IS NOT NULL OR permalink IS NOT NULL),
    CHECK (attempt_count <= max_attempts)
);
CREATE INDEX intents_state ON intents (state, lease_expires_at);
CREATE INDEX intents_account ON intents (account);

-- Attempts: append-only, N per intent. Only begin() inserts here.
CREATE TABLE attempts (
    token              TEXT    PRIMARY KEY,
    intent_id          INTEGER NOT NULL REFERENCES intents (id),
    ordinal            INTEGER NOT NULL CHECK (ordinal >= 1),
    account            TEXT    NOT NULL,
    action_kind        TEXT    NOT NULL,
    credential_version INTEGER NOT NULL,
    contract_hash      TEXT    NOT NULL,
    generation         INTEGER NOT NULL,
    epoch              INTEGER NOT NULL,
    owner              TEXT    NOT NULL,
    created_at         INTEGER NOT NULL,
    UNIQUE (intent_id, ordinal),
    UNIQUE (epoch, generation)
);
CREATE TRIGGER attempts_append_only_update BEFORE UPDATE ON attempts
BEGIN SELECT RAISE(ABORT, 'oncepost: attempts are append-only'); END;
CREATE TRIGGER attempts_append_only_delete BEFORE DELETE ON attempts
BEGIN SELECT RAISE(ABORT, 'oncepost: attempts are append-only'); END;

-- History: every state change and every fact learned about an intent. Append-only.
CREATE TABLE events (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    intent_id     INTEGER NOT NULL REFERENCES intents (id),
    at            INTEGER NOT NULL,
    kind          TEXT    NOT NULL,
    from_state    TEXT,
    to_state      TEXT    NOT NULL,
    actor         TEXT    NOT NULL,
    reason        TEXT,
    details       TEXT    NOT NULL DEFAULT '{}',
    attempt_token TEXT    REFERENCES attempts (token),
    generation    INTEGER
);
CREATE INDEX events_intent ON events (intent_id, id);
CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'oncepost: events are append-only'); END;
CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'oncepost: events are append-only'); END;

-- Administrative history (switches, accounts, epoch). Append-only.
CREATE TABLE admin_events (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      INTEGER NOT NULL,
    actor   TEXT    NOT NULL,
    action  TEXT    NOT NULL,
    details TEXT    NOT NULL DEFAULT '{}'
);
CREATE TRIGGER admin_events_append_only_update BEFORE UPDATE ON admin_events
BEGIN SELECT RAISE(ABORT, 'oncepost: admin events are append-only'); END;
CREATE TRIGGER admin_events_append_only_delete BEFORE DELETE ON admin_events
BEGIN SELECT RAISE(ABORT, 'oncepost: admin events are append-only'); END;

-- Duplicate-text exclusion: one claim per authorized dispatch, [claimed_at, claimed_at + window_ms) per account
-- and content hash; two non-exempt claims whose windows overlap are refused. Released when the send is proven
-- not to have happened (failed). Redeliveries a person authorized are exempt.
CREATE TABLE text_claims (
    intent_id    INTEGER PRIMARY KEY REFERENCES intents (id),
    account      TEXT    NOT NULL,
    content_hash TEXT    NOT NULL,
    claimed_at   INTEGER NOT NULL,
    window_ms    INTEGER NOT NULL CHECK (window_ms >= 0),
    exempt       INTEGER NOT NULL DEFAULT 0 CHECK (exempt IN (0, 1))
);
CREATE INDEX text_claims_lookup ON text_claims (account, content_hash);
CREATE TRIGGER text_claims_window BEFORE INSERT ON text_claims
WHEN NEW.exempt = 0 AND EXISTS (
    SELECT 1 FROM text_claims c
    WHERE c.account = NEW.account AND c.content_hash = NEW.content_hash AND c.exempt = 0
      AND c.claimed_at < NEW.claimed_at + NEW.window_ms AND NEW.claimed_at < c.claimed_at + c.window_ms)
BEGIN SELECT RAISE(ABORT, 'oncepost_duplicate_text'); END;
CREATE TRIGGER text_claims_no_update BEFORE UPDATE ON text_claims
BEGIN SELECT RAISE(ABORT, 'oncepost: text claims are inserted or released, never changed'); END;
