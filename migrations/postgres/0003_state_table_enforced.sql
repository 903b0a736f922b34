-- The database enforces the state table of src/store/state.rs (`Status::next`, docs/states.md), so a hand edit
-- (psql, a script) cannot move an intent where the code never would, and cannot hide a history.
-- Applied migrations are checksummed: never edit this file, add a new one.
--
-- The allowed changes of intents.state are the (from, to) pairs of different states that some event of
-- `Status::next` allows. tests/store_triggers.rs enumerates all 36 pairs against `Status::allowed_changes()` on
-- both backends, and a unit test in src/store/state.rs compares this list with the code, so they cannot drift.
-- An UPDATE that leaves the state as it is (begin, reconcile bookkeeping, sweep releasing a claim) is allowed.
CREATE FUNCTION oncepost_intent_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state IS DISTINCT FROM OLD.state AND (OLD.state || '>' || NEW.state) NOT IN (
        'pending>authorized', 'pending>published', 'pending>failed', 'pending>parked',
        'authorized>published', 'authorized>failed', 'authorized>indeterminate',
        'failed>pending', 'failed>parked',
        'indeterminate>published', 'indeterminate>parked',
        'parked>published') THEN
        RAISE EXCEPTION 'oncepost: intents.state % -> % is not in the state table', OLD.state, NEW.state
            USING ERRCODE = 'restrict_violation';
    END IF;
    -- What an intent asks for, and which intent it is, never change: editing the key, the account or the
    -- request of a settled intent would let the same request be created again as a new, pending intent.
    IF (NEW.id, NEW.delivery_key, NEW.account, NEW.platform, NEW.action_kind, NEW.target, NEW.request_json,
        NEW.content_hash, NEW.source_ref, NEW.redelivery_of, NEW.redelivery_json, NEW.created_at)
       IS DISTINCT FROM
       (OLD.id, OLD.delivery_key, OLD.account, OLD.platform, OLD.action_kind, OLD.target, OLD.request_json,
        OLD.content_hash, OLD.source_ref, OLD.redelivery_of, OLD.redelivery_json, OLD.created_at) THEN
        RAISE EXCEPTION 'oncepost: an intent''s identity and request never change'
            USING ERRCODE = 'restrict_violation';
    END IF;
    -- The counters the code only ever increments: resetting them would hand out attempts past the cap, a
    -- second automatic lookup, or an old fencing generation.
    IF NEW.attempt_count < OLD.attempt_count OR NEW.reconcile_count < OLD.reconcile_count
       OR NEW.generation < OLD.generation THEN
        RAISE EXCEPTION 'oncepost: intent counters only move forward' USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER intents_guard BEFORE UPDATE ON intents
    FOR EACH ROW EXECUTE FUNCTION oncepost_intent_update();

-- History is append-only: an intent is never deleted or truncated (attempts and events already refuse UPDATE,
-- DELETE and TRUNCATE, in 0001).
CREATE TRIGGER intents_no_delete BEFORE DELETE ON intents
    FOR EACH ROW EXECUTE FUNCTION oncepost_refuse('intents are never deleted (history is append-only)');
CREATE TRIGGER intents_no_truncate BEFORE TRUNCATE ON intents
    FOR EACH STATEMENT EXECUTE FUNCTION oncepost_refuse('intents are never deleted (history is append-only)');

-- A duplicate-text claim is released only when its intent is proven not sent (`settle` moves it to failed, then
-- deletes the claim in the same transaction). Deleting it by hand would let the same text be authorized again.
CREATE FUNCTION oncepost_text_claim_release() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT i.state FROM intents i WHERE i.id = OLD.intent_id) IS DISTINCT FROM 'failed' THEN
        RAISE EXCEPTION 'oncepost: a text claim is released only when its send failed (proven not sent)'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN OLD;
END $$;
CREATE TRIGGER text_claims_released_only_when_failed BEFORE DELETE ON text_claims
    FOR EACH ROW EXECUTE FUNCTION oncepost_text_claim_release();
CREATE TRIGGER text_claims_no_truncate BEFORE TRUNCATE ON text_claims
    FOR EACH STATEMENT EXECUTE FUNCTION oncepost_refuse('a text claim is released only when its send failed');

-- Every intent starts pending (the state table's only entry), and a consumed intent has at most one
-- redelivery: a second request (another reviewer, another reason) gets the existing one back from
-- `Store::redeliver`; this is the database's half, so a race or a script cannot make two. The consumed row is
-- locked first, so two concurrent redeliveries of one intent queue here and the second sees the first (each
-- statement of a volatile function takes a new snapshot). A trigger rather than a UNIQUE index because stores
-- written before this migration may already hold two redeliveries of one intent (the bug this closes); they
-- stay readable, and no third can be added.
CREATE FUNCTION oncepost_intent_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state IS DISTINCT FROM 'pending' THEN
        RAISE EXCEPTION 'oncepost: an intent is created pending' USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.redelivery_of IS NOT NULL THEN
        PERFORM 1 FROM intents WHERE delivery_key = NEW.redelivery_of FOR UPDATE;
        IF EXISTS (SELECT 1 FROM intents WHERE redelivery_of = NEW.redelivery_of) THEN
            RAISE EXCEPTION 'oncepost_one_redelivery' USING ERRCODE = 'restrict_violation';
        END IF;
    END IF;
    RETURN NEW;
END $$;
CREATE INDEX intents_redelivery_of ON intents (redelivery_of);
CREATE TRIGGER intents_insert_guard BEFORE INSERT ON intents
    FOR EACH ROW EXECUTE FUNCTION oncepost_intent_insert();
