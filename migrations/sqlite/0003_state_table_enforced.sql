-- The database enforces the state table of src/store/state.rs (`Status::next`, docs/states.md), so a hand edit
-- (sqlite3, a script) cannot move an intent where the code never would, and cannot hide a history.
-- Applied migrations are checksummed: never edit this file, add a new one.
--
-- The allowed changes of intents.state are the (from, to) pairs of different states that some event of
-- `Status::next` allows. tests/store_triggers.rs enumerates all 36 pairs against `Status::allowed_changes()` on
-- both backends, and a unit test in src/store/state.rs compares this list with the code, so they cannot drift.
-- An UPDATE that leaves the state as it is (begin, reconcile bookkeeping, sweep releasing a claim) is allowed.
CREATE TRIGGER intents_state_table BEFORE UPDATE ON intents
WHEN NEW.state IS NOT OLD.state AND (OLD.state || '>' || NEW.state) NOT IN (
    'pending>authorized', 'pending>published', 'pending>failed', 'pending>parked',
    'authorized>published', 'authorized>failed', 'authorized>indeterminate',
    'failed>pending', 'failed>parked',
    'indeterminate>published', 'indeterminate>parked',
    'parked>published')
BEGIN SELECT RAISE(ABORT, 'oncepost: this change of intents.state is not in the state table'); END;

-- What an intent asks for, and which intent it is, never change: editing the key, the account or the request
-- of a settled intent would let the same request be created again as a new, pending intent.
CREATE TRIGGER intents_identity_fixed BEFORE UPDATE ON intents
WHEN NEW.id IS NOT OLD.id OR NEW.delivery_key IS NOT OLD.delivery_key OR NEW.account IS NOT OLD.account
    OR NEW.platform IS NOT OLD.platform OR NEW.action_kind IS NOT OLD.action_kind OR NEW.target IS NOT OLD.target
    OR NEW.request_json IS NOT OLD.request_json OR NEW.content_hash IS NOT OLD.content_hash
    OR NEW.source_ref IS NOT OLD.source_ref OR NEW.redelivery_of IS NOT OLD.redelivery_of
    OR NEW.redelivery_json IS NOT OLD.redelivery_json OR NEW.created_at IS NOT OLD.created_at
BEGIN SELECT RAISE(ABORT, 'oncepost: an intent''s identity and request never change'); END;

-- The counters the code only ever increments: resetting them would hand out attempts past the cap, a second
-- automatic lookup, or an old fencing generation.
CREATE TRIGGER intents_counters_forward BEFORE UPDATE ON intents
WHEN NEW.attempt_count < OLD.attempt_count OR NEW.reconcile_count < OLD.reconcile_count
    OR NEW.generation < OLD.generation
BEGIN SELECT RAISE(ABORT, 'oncepost: intent counters only move forward'); END;

-- History is append-only: an intent is never deleted (attempts and events already refuse UPDATE and DELETE, in
-- 0001). Note that the sqlite3 shell runs with foreign keys off, so without this a DELETE would succeed.
CREATE TRIGGER intents_no_delete BEFORE DELETE ON intents
BEGIN SELECT RAISE(ABORT, 'oncepost: intents are never deleted (history is append-only)'); END;

-- A duplicate-text claim is released only when its intent is proven not sent (`settle` moves it to failed, then
-- deletes the claim in the same transaction). Deleting it by hand would let the same text be authorized again.
CREATE TRIGGER text_claims_released_only_when_failed BEFORE DELETE ON text_claims
WHEN (SELECT i.state FROM intents i WHERE i.id = OLD.intent_id) IS NOT 'failed'
BEGIN SELECT RAISE(ABORT, 'oncepost: a text claim is released only when its send failed (proven not sent)'); END;

-- Every intent starts pending (the state table's only entry).
CREATE TRIGGER intents_start_pending BEFORE INSERT ON intents
WHEN NEW.state IS NOT 'pending'
BEGIN SELECT RAISE(ABORT, 'oncepost: an intent is created pending'); END;

-- One redelivery per consumed intent: a second request (another reviewer, another reason) gets the existing
-- one back from `Store::redeliver`; this trigger is the database's half, so a race or a script cannot make two.
-- A trigger rather than a UNIQUE index because stores written before this migration may already hold two
-- redeliveries of one intent (the bug this closes); they stay readable, and no third can be added.
CREATE INDEX intents_redelivery_of ON intents (redelivery_of);
CREATE TRIGGER intents_one_redelivery BEFORE INSERT ON intents
WHEN NEW.redelivery_of IS NOT NULL
    AND EXISTS (SELECT 1 FROM intents i WHERE i.redelivery_of = NEW.redelivery_of)
BEGIN SELECT RAISE(ABORT, 'oncepost_one_redelivery'); END;
