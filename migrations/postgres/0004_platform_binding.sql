-- Platform binding and authorship. Applied migrations are checksummed: never edit this file, add a new one.
--
-- An intent is bound to the platform of the contract it was published through and to the origin of the base
-- URL it was published at, so a reconcile, the worker or a later publish through another platform's contract (or
-- another deployment of the same platform) never reads that platform's pages as evidence about this intent. The
-- contract version is the existing contract_hash (set by begin for each attempt, re-checked at authorization).
-- Set once by the first publish (Store::bind_intent), never changed afterwards. NULL: not recorded (intents
-- created before this migration; the platform falls back to the account's, which is what they were published
-- under, see the UPDATE below).
ALTER TABLE intents ADD COLUMN contract_platform TEXT CHECK (contract_platform IS NULL OR length(contract_platform) > 0);
ALTER TABLE intents ADD COLUMN base_origin TEXT CHECK (base_origin IS NULL OR length(base_origin) > 0);
UPDATE intents SET contract_platform = platform WHERE contract_platform IS NULL;
CREATE FUNCTION oncepost_binding_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (OLD.contract_platform IS NOT NULL AND NEW.contract_platform IS DISTINCT FROM OLD.contract_platform)
        OR (OLD.base_origin IS NOT NULL AND NEW.base_origin IS DISTINCT FROM OLD.base_origin) THEN
        RAISE EXCEPTION 'oncepost: an intent''s platform binding never changes once recorded'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER intents_binding_fixed BEFORE UPDATE ON intents
    FOR EACH ROW EXECUTE FUNCTION oncepost_binding_fixed();

-- The account's own handle on its platform, as the platform shows an item's author. Look-before-write, read-back
-- by search and reconcile settle an intent only on an item that shows this handle; without one every text match
-- is a lead for a person (parked), never a settlement. NULL: none recorded.
ALTER TABLE accounts ADD COLUMN handle TEXT CHECK (handle IS NULL OR length(handle) > 0);
