-- The authorization in one call (one round trip, its own commit): the same guarded statements as the
-- transaction path in src/store/ops/authorize.rs, in the same order. Why a function: a statement reads the
-- snapshot it started with, so counts made in the statement that waited for a row lock would miss what the
-- lock's previous holder committed; inside a VOLATILE function every statement takes a new snapshot, so the
-- caps and the in-flight count below are counted after the account's and the platform's row locks are held,
-- without a round trip per statement.
--
-- It answers the intent's id, or raises SQLSTATE 'OP001' when a guard matched nothing: the call is one
-- statement, so the raise rolls back everything it wrote, and the caller reads why (why_refused). A duplicate
-- text raises the exclusion constraint's own error, as in the transaction.
--
-- Applied migrations are checksummed: never edit this file; a changed guard is a new migration that replaces
-- the function (CREATE OR REPLACE), and scripts/guard-mutants.py names the file.
CREATE FUNCTION oncepost_authorize(
    p_key text, p_generation bigint, p_epoch bigint, p_now bigint, p_lease_until bigint,
    p_contract_hash text, p_lease_holder text, p_lease_fence bigint, p_jitter_ppm bigint,
    p_credential_version bigint, p_actor text, p_details text, p_attempt text
) RETURNS bigint LANGUAGE plpgsql VOLATILE
-- The caps count a window of dispatches by a parameter: generic plans, as the transaction path's
-- `SET LOCAL plan_cache_mode` (docs/benchmarks.md, the store at 10^6 intents).
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_id bigint;
    v_account text;
    v_platform text;
    v_source text;
BEGIN
    -- The intent's guarded move: this claim (generation, epoch, live lease), the contract it was checked
    -- against, the store's epoch, no kill switch, no other host's account lease.
    UPDATE intents SET state = 'authorized', lease_expires_at = p_lease_until, authorized_at = p_now,
           updated_at = p_now
     WHERE delivery_key = p_key AND state = 'pending' AND generation = p_generation AND epoch = p_epoch
       AND lease_expires_at > p_now
       AND contract_hash = p_contract_hash
       AND epoch = (SELECT m.epoch FROM store_meta m WHERE m.id = 1)
       AND NOT EXISTS (SELECT 1 FROM switches s WHERE s.engaged = 1 AND (s.scope = 'global'
           OR (s.scope = 'platform' AND s.name = intents.platform)
           OR (s.scope = 'platform' AND s.name = intents.contract_platform)
           OR (s.scope = 'account' AND s.name = intents.account)))
       AND NOT EXISTS (SELECT 1 FROM account_leases l WHERE l.account = intents.account
           AND l.expires_at > p_now AND NOT (l.holder = p_lease_holder AND l.fence = p_lease_fence))
    RETURNING id, account, COALESCE(contract_platform, platform), source_ref
         INTO v_id, v_account, v_platform, v_source;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'oncepost: not authorized (the intent''s guard)' USING ERRCODE = 'OP001';
    END IF;

    -- The publish-time source gate: the version the post rests on is still its source's head. The share lock
    -- holds until commit, so a capture that would move the head waits for this authorization.
    IF v_source IS NOT NULL THEN
        PERFORM 1 FROM claims c JOIN source_versions v ON v.version_id = c.version_id
            JOIN sources s ON s.stable_id = v.stable_id
         WHERE c.claim_id = v_source AND s.head_version = c.version_id FOR SHARE OF s;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'oncepost: not authorized (the source moved)' USING ERRCODE = 'OP001';
        END IF;
    END IF;

    -- The account: not revoked, the credential version the attempt began with, the minimum interval and the
    -- jitter drawn by the caller. Its row lock serializes authorizations per account until commit.
    UPDATE accounts SET last_dispatch_at = p_now,
           next_dispatch_at = p_now + min_interval_ms + (jitter_ms * p_jitter_ppm) / 1000000
     WHERE name = v_account AND revoked = 0 AND credential_version = p_credential_version
       AND (last_dispatch_at IS NULL OR last_dispatch_at + min_interval_ms <= p_now)
       AND (next_dispatch_at IS NULL OR next_dispatch_at <= p_now);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'oncepost: not authorized (the account)' USING ERRCODE = 'OP001';
    END IF;

    -- The caps, counted in a snapshot taken after the account's row lock was granted (a new statement), with
    -- this dispatch's row written only when both allow it.
    INSERT INTO dispatches (account, intent_id, at) SELECT a.name, v_id, p_now FROM accounts a
     WHERE a.name = v_account
       AND (a.hourly_cap IS NULL OR (SELECT COUNT(*) FROM dispatches d
            WHERE d.account = v_account AND d.at > p_now - 3600000) < a.hourly_cap)
       AND (a.daily_cap IS NULL OR (SELECT COUNT(*) FROM dispatches d
            WHERE d.account = v_account AND d.at > p_now - 86400000) < a.daily_cap);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'oncepost: not authorized (a cap)' USING ERRCODE = 'OP001';
    END IF;

    -- The platform's limit on dispatches in flight: lock its row, then count in a new statement (this intent
    -- is already authorized here, so it is in the count).
    UPDATE platform_limits SET changed_at = changed_at WHERE platform = v_platform;
    IF FOUND THEN
        PERFORM 1 FROM platform_limits p WHERE p.platform = v_platform
           AND (SELECT COUNT(*) FROM intents x WHERE x.state = 'authorized'
                AND COALESCE(x.contract_platform, x.platform) = v_platform) <= p.max_in_flight;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'oncepost: not authorized (the platform''s limit)' USING ERRCODE = 'OP001';
        END IF;
    END IF;

    -- The text claim: the exclusion constraint refuses a duplicate inside the account's window (its own
    -- error); a person's redelivery is exempt.
    INSERT INTO text_claims (intent_id, account, content_hash, claimed_at, window_ms, exempt)
    SELECT i.id, i.account, i.content_hash, p_now, a.dup_window_ms,
           CASE WHEN i.redelivery_of IS NULL THEN 0 ELSE 1 END
      FROM intents i JOIN accounts a ON a.name = i.account
     WHERE i.id = v_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'oncepost: not authorized (the text claim)' USING ERRCODE = 'OP001';
    END IF;

    INSERT INTO events (intent_id, at, kind, from_state, to_state, actor, reason, details, attempt_token,
                        generation)
    VALUES (v_id, p_now, 'authorized', 'pending', 'authorized', p_actor, NULL, p_details, p_attempt,
            p_generation);
    RETURN v_id;
END
$$;
