-- A guard inside a transaction sent in one call (src/store/one_call.rs). One statement cannot stop the ones
-- after it, but an error can: `INSERT INTO guard_checks (matched) VALUES (changes())` right after a guarded
-- statement writes nothing when that statement matched its one row, and otherwise fails with
-- 'oncepost_guard_refused', which stops the text before anything after it runs (the caller rolls back and
-- reads why). The authorization's guards use it, as PostgreSQL's function raises SQLSTATE OP001.
--
-- Applied migrations are checksummed: never edit this file; scripts/guard-mutants.py names it.
CREATE TABLE guard_checks (matched INTEGER NOT NULL);
CREATE TRIGGER guard_checks_decide BEFORE INSERT ON guard_checks
BEGIN
    SELECT CASE WHEN NEW.matched = 1 THEN RAISE(IGNORE)
                ELSE RAISE(ABORT, 'oncepost_guard_refused') END;
END;
