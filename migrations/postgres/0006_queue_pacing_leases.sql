-- The queue, pacing caps and account leases (issue 12). Applied migrations are checksummed: never edit this
-- file, add a new one.

-- A submitted intent records what a worker needs to run it: the whole base URL (base_origin keeps only the
-- origin, for the binding) and the contract version it was submitted with (kept in contract_versions).
-- run_after: NULL, nobody queued it (a synchronous publish owns it); otherwise the earliest time a worker may
-- try it. A worker that takes a due intent moves run_after forward by the claim lease so that other workers
-- pass it by; that is scheduling only: begin's claim, the dispatch lease and the fence still decide who may
-- press, as for every publish.
ALTER TABLE intents ADD COLUMN base_url TEXT CHECK (base_url IS NULL OR length(base_url) > 0);
ALTER TABLE intents ADD COLUMN queued_contract TEXT REFERENCES contract_versions (hash);
ALTER TABLE intents ADD COLUMN run_after BIGINT;
CREATE INDEX intents_queue ON intents (run_after) WHERE state = 'pending' AND run_after IS NOT NULL;

-- Pacing beyond the minimum interval: caps per rolling hour and day (NULL: none) and a random extra wait
-- after each dispatch (0..jitter_ms, drawn at authorization into next_dispatch_at).
ALTER TABLE accounts ADD COLUMN hourly_cap BIGINT  CHECK (hourly_cap IS NULL OR hourly_cap >= 0);
ALTER TABLE accounts ADD COLUMN daily_cap BIGINT  CHECK (daily_cap IS NULL OR daily_cap >= 0);
ALTER TABLE accounts ADD COLUMN jitter_ms BIGINT  NOT NULL DEFAULT 0 CHECK (jitter_ms >= 0);
ALTER TABLE accounts ADD COLUMN next_dispatch_at BIGINT;

-- One row per authorized dispatch, written by the authorization transaction that passed the caps (which count
-- these rows). Append-only.
CREATE TABLE dispatches (
    id        BIGSERIAL PRIMARY KEY,
    account   TEXT    NOT NULL REFERENCES accounts (name),
    intent_id BIGINT  NOT NULL REFERENCES intents (id),
    at        BIGINT  NOT NULL
);
CREATE INDEX dispatches_account_at ON dispatches (account, at);
CREATE FUNCTION oncepost_dispatches_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'oncepost: dispatches are append-only' USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER dispatches_append_only BEFORE UPDATE OR DELETE ON dispatches
    FOR EACH ROW EXECUTE FUNCTION oncepost_dispatches_append_only();

-- Per-platform limit on dispatches in flight (intents authorized and not yet settled), checked by the
-- authorization transaction with this row locked. No row: no limit.
CREATE TABLE platform_limits (
    platform      TEXT    PRIMARY KEY CHECK (length(platform) > 0),
    max_in_flight BIGINT  NOT NULL CHECK (max_in_flight >= 1),
    changed_at    BIGINT  NOT NULL
);

-- An account's login (its browser profile) is used by one host at a time: the holder of a live lease. The
-- fence comes from the fencing counter, so a lease taken over is never confused with the one it replaced; the
-- authorization transaction refuses a claim whose publish does not hold the account's live lease when someone
-- else does.
CREATE TABLE account_leases (
    account     TEXT    PRIMARY KEY REFERENCES accounts (name),
    holder      TEXT    NOT NULL CHECK (length(holder) > 0),
    fence       BIGINT  NOT NULL,
    expires_at  BIGINT  NOT NULL,
    acquired_at BIGINT  NOT NULL
);
