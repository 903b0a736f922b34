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
    first_seen_at BIGINT  NOT NULL
);
CREATE FUNCTION oncepost_contract_version_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'oncepost: a stored contract version never changes and is never deleted'
        USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER contract_versions_fixed BEFORE UPDATE OR DELETE ON contract_versions
    FOR EACH ROW EXECUTE FUNCTION oncepost_contract_version_fixed();
