-- Contracts by version. Applied migrations are checksummed: never edit this file, add a new one.
--
-- The contract an attempt ran with is recorded as its version hash (intents.contract_hash, set by begin). The
-- contract itself is kept here once per version, the file as it was read (it parses to exactly this hash), so
-- that a later command on the intent (publish --key, reconcile --key) needs no contract file and can never be
-- handed another one by mistake. A version is written once and never changed.
CREATE TABLE contract_versions (
    hash          TEXT    PRIMARY KEY CHECK (length(hash) = 64),
    platform      TEXT    NOT NULL CHECK (length(platform) > 0),
    source        TEXT    NOT NULL,
    first_seen_at INTEGER NOT NULL
);
CREATE TRIGGER contract_versions_fixed BEFORE UPDATE ON contract_versions
BEGIN SELECT RAISE(ABORT, 'oncepost: a stored contract version never changes'); END;
CREATE TRIGGER contract_versions_kept BEFORE DELETE ON contract_versions
BEGIN SELECT RAISE(ABORT, 'oncepost: a stored contract version is never deleted'); END;
