#!/usr/bin/env python3
"""Remove each guard of the intent store, one at a time, and check that the store's tests go red.

cargo-mutants mutates Rust expressions, not SQL text, and the store's guards are mostly WHERE clauses, triggers
and constraints. This script weakens each one in turn (a guard is one or more text edits, each of which must
match exactly once in its scope), builds, runs the tests chosen for that guard, records which tests went red,
and restores the files. docs/guard-mutants.md lists every guard, what it protects, and the recorded results.

The script cannot report success it did not see. It exits non-zero when:
  - a mutant survives (every selected test passed with the guard removed);
  - a mutant is killed, but by none of the tests expected to notice it (a collateral kill: the mutant broke
    something else, so the guard itself is still unproven);
  - a pattern matches zero times or more than once in its scope (checked for every guard before any build);
  - a mutant does not compile (that is an error in the pattern, never a kill);
  - a test selection matches no test, or the unmutated baseline is red.

  scripts/guard-mutants.py                   every guard (about 1-2 minutes each on 2 cores)
  scripts/guard-mutants.py --only SUBSTRING  the guards whose name contains SUBSTRING (repeatable)
  scripts/guard-mutants.py --dry-run         check every pattern and print the catalogue; builds nothing
  scripts/guard-mutants.py --markdown FILE   also write the results as a Markdown table
It edits src/store and migrations in place (restoring each file after its mutant, also on Ctrl-C or SIGTERM),
so it refuses to start when those paths have uncommitted changes. Patterns are found by content anywhere under
src/store/ (or in the migrations of one backend), never by a fixed file, so moving code between files keeps
them valid. Tests run from tests/it/main.rs (one binary, modules selected by path) when it exists, otherwise
from one binary per tests/*.rs file. Builds take the cargo lock ($ONCEPOST_CARGO_LOCK, default
/tmp/oncepost-cargo.lock, when `flock` exists; --no-lock to skip); tests run outside it. PostgreSQL tests use
$ONCEPOST_TEST_PG when set, else one ephemeral cluster started for the whole run.
"""
import argparse
import fcntl
import hashlib
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Scopes: where a pattern is searched. It must match exactly once across all files of the scope.
STORE = "src/store/**/*.rs"
SQLITE = "migrations/sqlite/*.sql"
POSTGRES = "migrations/postgres/*.sql"

# Test selections: "module" runs every test of tests/module.rs (or of the module `module` of tests/it);
# "module:fn_a,fn_b" runs the tests whose last path segment is fn_a or fn_b (both backends); "lib" runs the
# library's unit tests (all of them: about 10 s, and the state table's live there).
LIB = "lib"
STORE_T = "store"
# store_triggers without its `binary` module (a publish through Chromium and the fixture platform, slow): the
# state-table guards add that one back as TRIG_BIN.
TRIG_T = ("store_triggers:every_state_pair_is_accepted_exactly_when_the_state_table_allows_it,"
          "intents_are_never_deleted,identity_request_and_counters_cannot_be_edited,"
          "a_text_claim_is_released_only_by_a_failed_send,an_intent_is_created_pending,"
          "a_consumed_intent_has_one_redelivery_whoever_asks")
TRIG_BIN = ("store_triggers:sqlite_a_published_intent_edited_back_to_pending_by_hand_is_refused_and_never_sent_again,"
            "postgres_a_published_intent_edited_back_to_pending_by_hand_is_refused_and_never_sent_again")
DEFAULT_TESTS = (LIB, STORE_T, TRIG_T)
BINDING_T = "binding:a_recorded_binding_never_changes,the_contract_platforms_kill_switch_refuses_authorization"


class Guard:
    def __init__(self, name, edits, why, tests=DEFAULT_TESTS, expect=()):
        self.name = name
        self.edits = edits  # [(scope, old, new)]
        self.why = why
        self.tests = tuple(tests)
        self.expect = tuple(expect)  # test function names of which at least one must go red


def g(name, scope, old, new, why, tests=DEFAULT_TESTS, expect=()):
    return Guard(name, [(scope, old, new)], why, tests, expect)


GUARDS = [
    # ---- create / redeliver (src/store: insert_intent)
    g("create: idempotent on key", STORE, "\\\n                 ON CONFLICT (delivery_key) DO NOTHING\"", "\"",
      "the same request never makes a second row (create returns the existing intent)"),
    g("create: only for a registered account", STORE, "FROM accounts a WHERE a.name = $2 \\\n                 ON CONFLICT",
      "FROM accounts a WHERE a.name = a.name \\\n                 ON CONFLICT",
      "an intent exists only for a registered account, and with that account's platform",
      expect=("create_for_unknown_account_is_refused",)),
    # ---- begin (executor election)
    g("begin: only pending", STORE, "WHERE id = $1 AND state = 'pending' AND attempt_count < max_attempts \\\n                 AND (lease_expires_at IS NULL OR lease_expires_at <= $9) AND generation = $10",
      "WHERE id = $1 AND attempt_count < max_attempts \\\n                 AND (lease_expires_at IS NULL OR lease_expires_at <= $9) AND generation = $10",
      "no attempt is minted for an authorized or settled intent"),
    g("begin: no live claim", STORE, "AND (lease_expires_at IS NULL OR lease_expires_at <= $9) AND generation = $10", "AND generation = $10",
      "one executor: a live claim or dispatch lease is never taken over"),
    g("begin: generation compare-and-swap", STORE, "AND generation = $10 \\\n                 AND EXISTS", "AND EXISTS",
      "two workers that read the same row cannot both claim it (the second sees a new generation)"),
    g("begin: account not revoked", STORE, "AND EXISTS (SELECT 1 FROM accounts a WHERE a.name = intents.account AND a.revoked = 0)", "",
      "no attempt is minted for a revoked account"),
    g("begin: under the cap", STORE, "WHERE id = $1 AND state = 'pending' AND attempt_count < max_attempts", "WHERE id = $1 AND state = 'pending'",
      "at most max_attempts attempts per intent"),
    g("begin: parks only at the cap", STORE, "AND state = 'pending' AND attempt_count >= max_attempts", "AND state = 'pending'",
      "an intent under its cap is claimed, never parked"),
    g("begin: parks only without a live claim", STORE,
      "AND attempt_count >= max_attempts \\\n                     AND (lease_expires_at IS NULL OR lease_expires_at <= $2)",
      "AND attempt_count >= max_attempts",
      "the cap's park never pulls an intent from under a worker that holds its last attempt's claim"),
    # ---- begin in one statement (PostgreSQL; the transaction above decides everything else)
    g("begin (one statement): nobody holds or held a claim", STORE,
      "AND lease_owner IS NULL AND attempt_count < max_attempts \\\n                 AND (lease_expires_at IS NULL OR lease_expires_at <= $4) FOR UPDATE",
      "AND attempt_count < max_attempts FOR UPDATE",
      "on PostgreSQL too, a live claim is never taken over and an expired one is released by the transaction",
      expect=("begin_mints_exactly_one_attempt_and_elects_one_executor",)),
    # ---- authorize_dispatch (the last checkpoint before any byte)
    g("authorize: state = pending", STORE, "WHERE delivery_key = $1 AND state = 'pending' AND generation = $2 AND epoch = $3",
      "WHERE delivery_key = $1 AND generation = $2 AND epoch = $3",
      "an intent is authorized once: never again once authorized or settled"),
    g("authorize: generation", STORE, "AND state = 'pending' AND generation = $2 AND epoch = $3", "AND state = 'pending' AND epoch = $3",
      "a stale claim (taken over, or from before a sweep) cannot authorize"),
    g("authorize: claim's epoch", STORE, "AND state = 'pending' AND generation = $2 AND epoch = $3 \\\n                 AND lease_expires_at > $4",
      "AND state = 'pending' AND generation = $2 \\\n                 AND lease_expires_at > $4",
      "a claim is bound to the epoch it was begun under"),
    g("authorize: lease live", STORE, "AND lease_expires_at > $4", "",
      "an expired claim cannot authorize"),
    g("authorize: contract hash", STORE, "AND contract_hash = $6", "",
      "a contract changed since begin refuses the authorization"),
    g("authorize: store epoch", STORE, "                 AND epoch = (SELECT m.epoch FROM store_meta m WHERE m.id = 1) \\\n                 AND NOT EXISTS",
      "                 AND NOT EXISTS",
      "a worker from before a restore (epoch bump) cannot authorize"),
    g("authorize: kill switches", STORE, "AND NOT EXISTS (SELECT 1 FROM switches s WHERE s.engaged = 1 AND",
      "AND NOT EXISTS (SELECT 1 FROM switches s WHERE s.engaged = 2 AND",
      "an engaged kill switch stops every authorization it covers"),
    g("authorize: global switch", STORE, "(s.scope = 'global' \\\n", "(s.scope = 'nowhere' \\\n",
      "the global kill switch stops everything"),
    g("authorize: account's platform switch", STORE, "OR (s.scope = 'platform' AND s.name = intents.platform)",
      "OR (s.scope = 'nowhere' AND s.name = intents.platform)",
      "a platform's switch stops its accounts' intents"),
    g("authorize: contract platform's switch (binding)", STORE, "OR (s.scope = 'platform' AND s.name = intents.contract_platform)",
      "OR (s.scope = 'nowhere' AND s.name = intents.contract_platform)",
      "the switch of the platform an intent is bound to (migration 0004) stops it, whatever the account's platform",
      tests=DEFAULT_TESTS + (BINDING_T,), expect=("the_contract_platforms_kill_switch_refuses_authorization",)),
    g("authorize: account switch", STORE, "OR (s.scope = 'account' AND s.name = intents.account)",
      "OR (s.scope = 'nowhere' AND s.name = intents.account)",
      "an account's switch stops that account"),
    g("authorize: account not revoked", STORE, "AND revoked = 0 AND credential_version = $10", "AND credential_version = $10",
      "a revoked account never dispatches"),
    g("authorize: credential version", STORE, "AND revoked = 0 AND credential_version = $10 \\\n", "AND revoked = 0 \\\n",
      "credentials rotated since begin refuse the authorization"),
    g("authorize: rate interval", STORE, "AND (last_dispatch_at IS NULL OR last_dispatch_at + min_interval_ms <= $4)", "AND $4 = $4",
      "an account dispatches at most once per min_interval_ms"),
    g("authorize: refusal rolls back", STORE,
      "AND (next_dispatch_at IS NULL OR next_dispatch_at <= $4); \\\n             INSERT INTO guard_checks (matched) VALUES (changes()); \\\n",
      "AND (next_dispatch_at IS NULL OR next_dispatch_at <= $4); \\\n",
      "a refused account guard stops the text and rolls the intent's authorization back (no half-authorized intent)"),
    # ---- the rest of the SQLite authorization in one call (src/store/ops/authorize.rs, migration 0009)
    g("authorize (SQLite): the intent's refusal stops the text", STORE,
      "l.fence = $8)); \\\n             INSERT INTO guard_checks (matched) VALUES (changes()); \\\n", "l.fence = $8)); \\\n",
      "a refused intent guard writes nothing else (no dispatch, text claim or event for an intent not authorized)"),
    g("authorize (SQLite): the source gate", STORE,
      "SELECT i.source_ref IS NULL OR EXISTS (SELECT 1 FROM claims c", "SELECT 1 OR EXISTS (SELECT 1 FROM claims c",
      "a post whose source was superseded is never authorized",
      tests=("sources",), expect=("the_gate_refuses_a_superseded_source",)),
    g("authorize (SQLite): the hourly cap", STORE,
      "                 AND (a.hourly_cap IS NULL OR (SELECT COUNT(*) FROM dispatches d \\\n                      WHERE d.account = a.name AND d.at > $4 - 3600000) < a.hourly_cap) \\\n", "",
      "an account's hourly cap holds",
      tests=("queue",), expect=("concurrent_authorizations_never_exceed_a_cap", "caps_refuse_until_the_window_moves")),
    g("authorize (SQLite): the daily cap", STORE,
      "AND d.at > $4 - 86400000) < a.daily_cap); \\\n", "AND d.at > $4 - 86400000) < a.daily_cap + 1000); \\\n",
      "an account's daily cap holds",
      tests=("queue",), expect=("caps_refuse_until_the_window_moves",)),
    g("authorize (SQLite): the caps' refusal stops the text", STORE,
      "< a.daily_cap); \\\n             INSERT INTO guard_checks (matched) VALUES (changes()); \\\n", "< a.daily_cap); \\\n",
      "a cap's refusal is a refusal (not an authorization without its dispatch row)",
      tests=("queue",), expect=("concurrent_authorizations_never_exceed_a_cap", "caps_refuse_until_the_window_moves")),
    g("authorize (SQLite): the platform's limit", STORE,
      "= p.platform) > p.max_in_flight)", "= p.platform) > p.max_in_flight + 1000)",
      "a platform's limit on dispatches in flight holds",
      tests=("queue",), expect=("a_platform_limit_counts_dispatches_in_flight",)),
    g("authorize: redelivery exempt from the duplicate window", STORE, "CASE WHEN i.redelivery_of IS NULL THEN 0 ELSE 1 END", "0",
      "a person-authorized redelivery is not refused as a duplicate of the copy it redelivers",
      expect=("failed_send_releases_its_text_and_redelivery_is_exempt", "redelivery_is_a_new_authorized_intent_and_the_old_one_stays")),
    # ---- record_request_sent, settle
    g("request_sent: fence", STORE, "WHERE delivery_key = $1 AND state = 'authorized' AND generation = $2 AND epoch = $3 \\\n                 AND current_attempt = $4",
      "WHERE delivery_key = $1 AND epoch = $3",
      "the wire hash is recorded only on the authorized attempt that sent it"),
    g("settle: generation + attempt fence", STORE, "WHERE id = $1 AND state = $9 AND generation = $2 AND epoch = $3 AND current_attempt = $4",
      "WHERE id = $1 AND state = $9 AND epoch = $3",
      "a stale worker cannot settle over a newer attempt"),
    g("settle: store epoch", STORE, "                 AND epoch = (SELECT m.epoch FROM store_meta m WHERE m.id = 1) \\\n                 AND (state <> 'pending' OR lease_owner = $10)",
      "                 AND (state <> 'pending' OR lease_owner = $10)",
      "a worker from before a restore cannot settle"),
    g("settle: pre-auth needs the claim", STORE, "AND (state <> 'pending' OR lease_owner = $10)", "AND ($10 = $10)",
      "before authorization only the claim holder may record failed"),
    g("settle: state table check", STORE, "if from.next(event).is_err() {\n                return Err(stale);", "if false {\n                return Err(stale);",
      "settle follows the state table (no published from pending, no second settlement)"),
    g("settle failed releases text claim", STORE, "sqlx::query(\"DELETE FROM text_claims WHERE intent_id = $1\")",
      "sqlx::query(\"DELETE FROM text_claims WHERE intent_id = -$1\")",
      "a send proven not to have happened frees its text for a retry"),
    g("settle (one statement): generation + attempt fence", STORE,
      "AND i.generation = $2 AND i.epoch = $3 AND i.current_attempt = $4", "AND i.epoch = $3",
      "on PostgreSQL too, a stale worker cannot settle over a newer attempt",
      expect=("a_stale_worker_cannot_settle_over_a_newer_authorized_dispatch",)),
    # ---- create, begin and settle in one call on SQLite (src/store/one_call.rs)
    g("settle (SQLite one call): generation + attempt fence", STORE,
      "AND current_attempt = $4 AND generation = $2 AND epoch = $3", "AND epoch = $3",
      "on SQLite's one call too, a stale worker cannot settle over a newer attempt",
      expect=("a_stale_worker_cannot_settle_over_a_newer_authorized_dispatch",)),
    g("settle (SQLite one call): store epoch", STORE,
      "AND epoch = (SELECT m.epoch FROM store_meta m WHERE m.id = 1) AND (lease_owner = $10", "AND (lease_owner = $10",
      "on SQLite's one call too, a worker from before a restore cannot settle"),
    g("settle (SQLite one call): pre-auth needs the claim", STORE,
      "AND (lease_owner = $10 OR state <> 'pending')", "AND ($10 = $10)",
      "on SQLite's one call too, before authorization only the claim holder may record failed"),
    g("begin (SQLite one call): nobody holds or held a claim", STORE,
      "AND i.lease_owner IS NULL \\\n", "\\\n",
      "on SQLite's one call too, an expired claim is taken over only by the transaction, which records its release",
      expect=("expired_claim_is_taken_over_and_its_worker_cannot_authorize",)),
    g("create (SQLite one call): an event and a new row only for an insert", STORE,
      "WHERE delivery_key = $1 AND changes() = 1; \\\n             SELECT", "WHERE delivery_key = $1; \\\n             SELECT",
      "the same request again finds its intent (created: false) and adds no second created event",
      expect=("create_intent_is_idempotent",)),
    # ---- authorize_dispatch on PostgreSQL: oncepost_authorize (migrations/postgres/0009), one call; the same
    # guards as the SQLite transaction above, each removed on its own (only the PostgreSQL tests can notice).
    g("authorize (PostgreSQL): state = pending", POSTGRES,
      "WHERE delivery_key = p_key AND state = 'pending' AND generation = p_generation",
      "WHERE delivery_key = p_key AND generation = p_generation",
      "on PostgreSQL, an intent is authorized once: never again once authorized or settled"),
    g("authorize (PostgreSQL): generation", POSTGRES, "AND state = 'pending' AND generation = p_generation AND epoch = p_epoch",
      "AND state = 'pending' AND epoch = p_epoch",
      "on PostgreSQL, a stale claim (taken over, or from before a sweep) cannot authorize"),
    g("authorize (PostgreSQL): claim's epoch", POSTGRES, "AND generation = p_generation AND epoch = p_epoch\n",
      "AND generation = p_generation\n",
      "on PostgreSQL, a claim is bound to the epoch it was begun under"),
    g("authorize (PostgreSQL): lease live", POSTGRES, "       AND lease_expires_at > p_now\n", "",
      "on PostgreSQL, an expired claim cannot authorize"),
    g("authorize (PostgreSQL): contract hash", POSTGRES, "       AND contract_hash = p_contract_hash\n", "",
      "on PostgreSQL, a contract changed since begin refuses the authorization"),
    g("authorize (PostgreSQL): store epoch", POSTGRES,
      "       AND epoch = (SELECT m.epoch FROM store_meta m WHERE m.id = 1)\n       AND NOT EXISTS",
      "       AND NOT EXISTS",
      "on PostgreSQL, a worker from before a restore (epoch bump) cannot authorize"),
    g("authorize (PostgreSQL): kill switches", POSTGRES,
      "AND NOT EXISTS (SELECT 1 FROM switches s WHERE s.engaged = 1 AND (s.scope = 'global'\n",
      "AND NOT EXISTS (SELECT 1 FROM switches s WHERE s.engaged = 2 AND (s.scope = 'global'\n",
      "on PostgreSQL, an engaged kill switch stops every authorization it covers"),
    g("authorize (PostgreSQL): global switch", POSTGRES, "s.engaged = 1 AND (s.scope = 'global'\n",
      "s.engaged = 1 AND (s.scope = 'nowhere'\n",
      "on PostgreSQL, the global kill switch stops everything"),
    g("authorize (PostgreSQL): account's platform switch", POSTGRES,
      "           OR (s.scope = 'platform' AND s.name = intents.platform)\n",
      "           OR (s.scope = 'nowhere' AND s.name = intents.platform)\n",
      "on PostgreSQL, a platform's switch stops its accounts' intents"),
    g("authorize (PostgreSQL): contract platform's switch (binding)", POSTGRES,
      "           OR (s.scope = 'platform' AND s.name = intents.contract_platform)\n",
      "           OR (s.scope = 'nowhere' AND s.name = intents.contract_platform)\n",
      "on PostgreSQL, the switch of the platform an intent is bound to stops it",
      tests=DEFAULT_TESTS + (BINDING_T,), expect=("the_contract_platforms_kill_switch_refuses_authorization",)),
    g("authorize (PostgreSQL): account switch", POSTGRES,
      "           OR (s.scope = 'account' AND s.name = intents.account)))\n",
      "           OR (s.scope = 'nowhere' AND s.name = intents.account)))\n",
      "on PostgreSQL, an account's switch stops that account"),
    g("authorize (PostgreSQL): account not revoked", POSTGRES, "WHERE name = v_account AND revoked = 0 AND",
      "WHERE name = v_account AND",
      "on PostgreSQL, a revoked account never dispatches"),
    g("authorize (PostgreSQL): credential version", POSTGRES, "AND credential_version = p_credential_version",
      "AND p_credential_version = p_credential_version",
      "on PostgreSQL, credentials rotated since begin refuse the authorization"),
    g("authorize (PostgreSQL): rate interval", POSTGRES,
      "AND (last_dispatch_at IS NULL OR last_dispatch_at + min_interval_ms <= p_now)", "AND p_now = p_now",
      "on PostgreSQL, an account dispatches at most once per min_interval_ms"),
    g("authorize (PostgreSQL): the account's refusal raises", POSTGRES,
      "RAISE EXCEPTION 'oncepost: not authorized (the account)' USING ERRCODE = 'OP001';", "NULL;",
      "on PostgreSQL, a refused account guard refuses the whole call (nothing of it commits)"),
    g("authorize (PostgreSQL): redelivery exempt from the duplicate window", POSTGRES,
      "CASE WHEN i.redelivery_of IS NULL THEN 0 ELSE 1 END", "0",
      "on PostgreSQL, a person-authorized redelivery is not refused as a duplicate of the copy it redelivers",
      expect=("failed_send_releases_its_text_and_redelivery_is_exempt", "redelivery_is_a_new_authorized_intent_and_the_old_one_stays")),
    g("authorize (PostgreSQL): the source gate", POSTGRES,
      "WHERE c.claim_id = v_source AND s.head_version = c.version_id FOR SHARE OF s;",
      "WHERE c.claim_id = v_source FOR SHARE OF s;",
      "on PostgreSQL, a post whose source was superseded is never authorized",
      tests=("sources",), expect=("the_gate_refuses_a_superseded_source",)),
    g("authorize (PostgreSQL): the hourly cap", POSTGRES,
      "       AND (a.hourly_cap IS NULL OR (SELECT COUNT(*) FROM dispatches d\n            WHERE d.account = v_account AND d.at > p_now - 3600000) < a.hourly_cap)\n", "",
      "on PostgreSQL, an account's hourly cap holds across hosts",
      tests=("queue",), expect=("concurrent_authorizations_never_exceed_a_cap", "caps_refuse_until_the_window_moves")),
    g("authorize (PostgreSQL): the daily cap", POSTGRES,
      "       AND (a.daily_cap IS NULL OR (SELECT COUNT(*) FROM dispatches d\n            WHERE d.account = v_account AND d.at > p_now - 86400000) < a.daily_cap);\n", ";\n",
      "on PostgreSQL, an account's daily cap holds",
      tests=("queue",), expect=("caps_refuse_until_the_window_moves",)),
    g("authorize (PostgreSQL): the platform's limit", POSTGRES,
      "AND COALESCE(x.contract_platform, x.platform) = v_platform) <= p.max_in_flight;",
      "AND COALESCE(x.contract_platform, x.platform) = v_platform) <= p.max_in_flight + 1000;",
      "on PostgreSQL, a platform's limit on dispatches in flight holds",
      tests=("queue",), expect=("a_platform_limit_counts_dispatches_in_flight",)),
    # ---- sweep
    # The candidate query and the guarded UPDATE both test expiry; the UPDATE decides, the query only avoids
    # useless writes. Removing either one alone changes nothing observable (the other still holds), so the
    # guard is the pair.
    Guard("sweep: dispatch lease expired (query and update)", [
        (STORE, "WHERE (state IN ('authorized', 'pending') AND lease_expires_at IS NOT NULL \\\n                 AND lease_expires_at <= $1) OR",
         "WHERE (state IN ('authorized', 'pending') AND lease_expires_at IS NOT NULL) OR"),
        (STORE, "WHERE delivery_key = $1 AND state = 'authorized' AND generation = $2 \\\n                         AND lease_expires_at <= $3 RETURNING id",
         "WHERE delivery_key = $1 AND state = 'authorized' AND generation = $2 \\\n                         RETURNING id")],
        "a live dispatch lease is never swept to indeterminate (its worker may be mid-send and will settle)"),
    Guard("sweep: claim expired (query and update)", [
        (STORE, "WHERE (state IN ('authorized', 'pending') AND lease_expires_at IS NOT NULL \\\n                 AND lease_expires_at <= $1) OR",
         "WHERE (state IN ('authorized', 'pending') AND lease_expires_at IS NOT NULL) OR"),
        (STORE, "WHERE delivery_key = $1 AND state = 'pending' AND generation = $2 \\\n                         AND lease_expires_at <= $3 RETURNING id",
         "WHERE delivery_key = $1 AND state = 'pending' AND generation = $2 \\\n                         RETURNING id")],
        "a live pre-authorization claim is never released under its worker"),
    g("sweep: generation fence", STORE, "AND state = 'authorized' AND generation = $2 \\\n                         AND lease_expires_at <= $3",
      "AND state = 'authorized' AND $2 = $2 \\\n                         AND lease_expires_at <= $3",
      "a sweeper that read an old row never moves a newer attempt (concurrent sweepers move each intent once)"),
    g("sweep: to indeterminate, never pending", STORE, "\"UPDATE intents SET state = 'indeterminate', lease_owner = NULL",
      "\"UPDATE intents SET state = 'pending', lease_owner = NULL",
      "an expired dispatch may have sent: it is never offered for another attempt"),
    # ---- the lookup lease (migration 0002): start_reconcile sets it, record_reconcile clears it, sweep parks
    g("lookup lease: set when a lookup starts", STORE, "lookup_expires_at = CASE WHEN state = 'indeterminate' THEN $4 ELSE NULL END",
      "lookup_expires_at = NULL",
      "a lookup whose worker dies mid-run leaves a lease the sweeper can see",
      expect=("an_interrupted_lookup_is_parked_by_the_sweeper_once_its_lease_runs_out",)),
    g("lookup lease: its length is lookup_lease_ms", STORE, ".bind(now.0.saturating_add(self.policy().lookup_lease_ms))",
      ".bind(now.0)",
      "a running lookup is not parked before its lease (lookup_lease_ms) runs out",
      expect=("an_interrupted_lookup_is_parked_by_the_sweeper_once_its_lease_runs_out",)),
    g("lookup lease: cleared when the lookup records", STORE,
      "permalink = COALESCE($5, permalink), updated_at = $6, lookup_expires_at = NULL",
      "permalink = COALESCE($5, permalink), updated_at = $6",
      "a lookup that recorded in time is never parked by the sweeper afterwards",
      expect=("an_interrupted_lookup_is_parked_by_the_sweeper_once_its_lease_runs_out",)),
    Guard("lookup lease: swept only once expired (query and update)", [
        (STORE, "AND lookup_expires_at IS NOT NULL AND lookup_expires_at <= $1) ORDER BY id",
         "AND lookup_expires_at IS NOT NULL) ORDER BY id"),
        (STORE, "AND reconcile_count = $2 \\\n                         AND lookup_expires_at <= $3 RETURNING id",
         "AND reconcile_count = $2 \\\n                         RETURNING id")],
        "a lookup still inside its lease is left alone by the sweeper",
        expect=("an_interrupted_lookup_is_parked_by_the_sweeper_once_its_lease_runs_out",)),
    g("lookup lease: an interrupted lookup is parked", STORE,
      "\"UPDATE intents SET state = 'parked', lookup_expires_at = NULL, updated_at = $3",
      "\"UPDATE intents SET state = 'indeterminate', lookup_expires_at = NULL, updated_at = $3",
      "the automatic lookup is spent when its worker died: a person decides (never a second automatic lookup)",
      expect=("an_interrupted_lookup_is_parked_by_the_sweeper_once_its_lease_runs_out",)),
    # ---- simple transitions, the state table, reconcile, resolve, found-before-write, leads, binding
    g("simple transitions: state guard", STORE, "                 WHERE id = $1 AND state = $2\",\n            )\n            .bind(row.id)\n            .bind(from.label())",
      "                 WHERE id = $1 AND $2 = $2\",\n            )\n            .bind(row.id)\n            .bind(from.label())",
      "retry and park move the intent only from the state they read (racing operators move it once)"),
    g("state table: retry only from failed", STORE, "(S::Failed, E::Retried) => S::Pending,", "(_, E::Retried) => S::Pending,",
      "nothing but a proven-unsent (failed) intent goes back to pending"),
    g("state table: authorized cannot be parked", STORE, "(S::Pending | S::Failed | S::Indeterminate, E::Parked) => S::Parked,", "(_, E::Parked) => S::Parked,",
      "an authorized intent (worker maybe mid-send) is never parked from under it"),
    g("reconcile: at most once", STORE, "WHERE id = $1 AND ((state = 'indeterminate' AND reconcile_count = 0)", "WHERE id = $1 AND ((state = 'indeterminate')",
      "one automatic lookup per indeterminate intent"),
    # The Rust check and the UPDATE's clause both fence the ticket; removing the check alone survived (the
    # clause refuses the write), so the guard is the pair.
    Guard("reconcile: ticket fence (check and update)", [
        (STORE, "if row.intent.reconcile_count != ticket.number {", "if false {"),
        (STORE, "WHERE id = $1 AND state = $2 AND reconcile_count = $7", "WHERE id = $1 AND state = $2 AND $7 = $7")],
        "only the latest lookup records what it saw (a ticket from an earlier lookup is refused)"),
    g("resolve: only from parked", STORE, "updated_at = $5 WHERE id = $1 AND state = 'parked'\",", "updated_at = $5 WHERE id = $1\",",
      "a person's resolve applies to the parked intent they looked at"),
    g("found-before-write: no live claim", STORE,
      "WHERE id = $1 AND state = 'pending' AND (lease_expires_at IS NULL OR lease_expires_at <= $5)\",",
      "WHERE id = $1 AND state = 'pending'\",",
      "look-before-write never settles an intent whose claim holder is the executor"),
    g("park on a lead: no live claim", STORE,
      "WHERE id = $1 AND state = 'pending' AND (lease_expires_at IS NULL OR lease_expires_at <= $3)\",",
      "WHERE id = $1 AND state = 'pending'\",",
      "a lead never parks an intent whose claim holder is the executor"),
    g("bind: only what is not recorded", STORE, "SET contract_platform = COALESCE(contract_platform, $2)", "SET contract_platform = $2",
      "the first publish's platform binding is kept (the trigger refuses a change; bind never tries one)",
      tests=DEFAULT_TESTS + (BINDING_T,), expect=("a_recorded_binding_never_changes",)),
    # ---- migration 0001: constraints and triggers
    g("sqlite: duplicate-text trigger", SQLITE, "BEGIN SELECT RAISE(ABORT, 'oncepost_duplicate_text'); END;", "BEGIN SELECT 1; END;",
      "two non-exempt claims of one text on one account never overlap in time"),
    g("postgres: duplicate-text exclusion", POSTGRES, "int8range(claimed_at, claimed_at + window_ms) WITH &&", "int8range(claimed_at, claimed_at + window_ms) WITH =",
      "two non-exempt claims of one text on one account never overlap in time"),
    g("sqlite: duplicate window is half-open", SQLITE, "AND c.claimed_at < NEW.claimed_at + NEW.window_ms", "AND c.claimed_at <= NEW.claimed_at + NEW.window_ms",
      "the window is [claimed_at, claimed_at + window_ms): the same text is allowed again at its edge",
      expect=("duplicate_text_window_at_its_edge",)),
    g("postgres: duplicate window is half-open", POSTGRES, "int8range(claimed_at, claimed_at + window_ms) WITH &&",
      "int8range(claimed_at, claimed_at + window_ms, '[]') WITH &&",
      "the window is [claimed_at, claimed_at + window_ms): the same text is allowed again at its edge",
      expect=("duplicate_text_window_at_its_edge",)),
    g("sqlite: text claims never change", SQLITE, "CREATE TRIGGER text_claims_no_update BEFORE UPDATE ON text_claims", "CREATE TRIGGER text_claims_no_update BEFORE UPDATE OF intent_id ON text_claims",
      "a claim's window cannot be shortened or moved by an UPDATE"),
    g("postgres: text claims never change", POSTGRES, "CREATE TRIGGER text_claims_no_update BEFORE UPDATE ON text_claims", "CREATE TRIGGER text_claims_no_update BEFORE UPDATE OF intent_id ON text_claims",
      "a claim's window cannot be shortened or moved by an UPDATE"),
    # Migration 0010 rebuilt `events` and made its triggers again: those are the ones a store runs with.
    g("sqlite: events append-only", "migrations/sqlite/0010_*.sql", "CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events\nBEGIN SELECT RAISE(ABORT, 'oncepost: events are append-only'); END;", "",
      "history is never rewritten", expect=("attempts_and_events_refuse_update_and_delete",)),
    g("sqlite: attempts append-only", SQLITE, "CREATE TRIGGER attempts_append_only_delete BEFORE DELETE ON attempts\nBEGIN SELECT RAISE(ABORT, 'oncepost: attempts are append-only'); END;", "",
      "an attempt, once minted, is never erased", expect=("attempts_and_events_refuse_update_and_delete",)),
    # Was "BEFORE INSERT": that broke every begin, so it was killed by everything and proved nothing about the
    # trigger. Now the trigger keeps refusing DELETE and stops refusing UPDATE.
    g("postgres: attempts append-only", POSTGRES, "CREATE TRIGGER attempts_no_update BEFORE UPDATE OR DELETE ON attempts", "CREATE TRIGGER attempts_no_update BEFORE DELETE ON attempts",
      "an attempt, once minted, is never rewritten", expect=("attempts_and_events_refuse_update_and_delete",)),
    g("postgres: events append-only", POSTGRES, "CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON events", "CREATE TRIGGER events_no_update BEFORE UPDATE ON events",
      "history is never erased", expect=("attempts_and_events_refuse_update_and_delete",)),
    g("sqlite: fencing counter cannot reset", SQLITE, "WHEN NEW.value <> OLD.value + 1 OR NEW.id <> OLD.id", "WHEN 0",
      "a generation is never issued twice, even after claim data is wiped"),
    g("sqlite: epoch only forward", SQLITE, "WHEN NEW.epoch <= OLD.epoch OR NEW.instance_id <> OLD.instance_id OR NEW.id <> OLD.id", "WHEN 0",
      "a restore epoch is never reused"),
    g("postgres: epoch only forward", POSTGRES, "IF NEW.epoch <= OLD.epoch OR NEW.instance_id <> OLD.instance_id OR NEW.id <> OLD.id THEN", "IF false THEN",
      "a restore epoch is never reused"),
    g("intents: attempt count under the cap (sqlite)", SQLITE, "    CHECK (attempt_count <= max_attempts)\n", "    CHECK (attempt_count >= 0)\n",
      "the database refuses an attempt past the cap, whatever the code does"),
    g("intents: attempt count under the cap (postgres)", POSTGRES, "    CHECK (attempt_count <= max_attempts)\n", "    CHECK (attempt_count >= 0)\n",
      "the database refuses an attempt past the cap, whatever the code does"),
    g("attempts: one per generation (sqlite)", SQLITE, "    UNIQUE (intent_id, ordinal),\n    UNIQUE (epoch, generation)\n", "    UNIQUE (intent_id, ordinal)\n",
      "one generation in one epoch names one attempt"),
    g("attempts: one per generation (postgres)", POSTGRES, "    UNIQUE (intent_id, ordinal),\n    UNIQUE (epoch, generation)\n", "    UNIQUE (intent_id, ordinal)\n",
      "one generation in one epoch names one attempt"),
    # ---- migration 0003: the state table and history, enforced by the database
    g("sqlite: state table enforced", SQLITE, "'pending>authorized', 'pending>published', 'pending>failed', 'pending>parked',",
      "'pending>authorized', 'pending>published', 'pending>failed', 'pending>parked', 'published>pending',",
      "a hand edit cannot move an intent where the code never would (here: published back to pending)",
      tests=DEFAULT_TESTS + (TRIG_BIN,), expect=("every_state_pair_is_accepted_exactly_when_the_state_table_allows_it", "the_migrations_spell_the_code_s_state_table")),
    g("postgres: state table enforced", POSTGRES, "'pending>authorized', 'pending>published', 'pending>failed', 'pending>parked',",
      "'pending>authorized', 'pending>published', 'pending>failed', 'pending>parked', 'published>pending',",
      "a hand edit cannot move an intent where the code never would (here: published back to pending)",
      tests=DEFAULT_TESTS + (TRIG_BIN,), expect=("every_state_pair_is_accepted_exactly_when_the_state_table_allows_it", "the_migrations_spell_the_code_s_state_table")),
    g("sqlite: state trigger fires", SQLITE, "WHEN NEW.state IS NOT OLD.state AND (OLD.state || '>' || NEW.state) NOT IN (",
      "WHEN 0 AND (OLD.state || '>' || NEW.state) NOT IN (",
      "the state table trigger is live (the list itself is spelled like the code's)",
      tests=DEFAULT_TESTS + (TRIG_BIN,), expect=("every_state_pair_is_accepted_exactly_when_the_state_table_allows_it",)),
    g("postgres: state trigger fires", POSTGRES, "IF NEW.state IS DISTINCT FROM OLD.state AND (OLD.state || '>' || NEW.state) NOT IN (",
      "IF false AND (OLD.state || '>' || NEW.state) NOT IN (",
      "the state table trigger is live (the list itself is spelled like the code's)",
      tests=DEFAULT_TESTS + (TRIG_BIN,), expect=("every_state_pair_is_accepted_exactly_when_the_state_table_allows_it",)),
    g("sqlite: identity fixed", SQLITE, "WHEN NEW.id IS NOT OLD.id OR NEW.delivery_key IS NOT OLD.delivery_key OR NEW.account IS NOT OLD.account",
      "WHEN NEW.id IS NOT OLD.id OR NEW.account IS NOT OLD.account",
      "an intent's key never changes (a settled request cannot be re-created as a new pending one)",
      expect=("identity_request_and_counters_cannot_be_edited",)),
    g("postgres: identity fixed", POSTGRES, "    IF (NEW.id, NEW.delivery_key, NEW.account,", "    IF (NEW.id, OLD.delivery_key, NEW.account,",
      "an intent's key never changes (a settled request cannot be re-created as a new pending one)",
      expect=("identity_request_and_counters_cannot_be_edited",)),
    g("sqlite: counters forward", SQLITE, "WHEN NEW.attempt_count < OLD.attempt_count OR NEW.reconcile_count < OLD.reconcile_count",
      "WHEN NEW.reconcile_count < OLD.reconcile_count",
      "the attempt count is never reset (no attempts past the cap)",
      expect=("identity_request_and_counters_cannot_be_edited",)),
    g("postgres: counters forward", POSTGRES, "    IF NEW.attempt_count < OLD.attempt_count OR NEW.reconcile_count < OLD.reconcile_count",
      "    IF NEW.reconcile_count < OLD.reconcile_count",
      "the attempt count is never reset (no attempts past the cap)",
      expect=("identity_request_and_counters_cannot_be_edited",)),
    g("sqlite: generation forward", SQLITE, "    OR NEW.generation < OLD.generation\nBEGIN", "\nBEGIN",
      "an intent's generation is never moved back (an old claim cannot become current again)",
      expect=("identity_request_and_counters_cannot_be_edited",)),
    g("postgres: generation forward", POSTGRES, "       OR NEW.generation < OLD.generation THEN", "       THEN",
      "an intent's generation is never moved back (an old claim cannot become current again)",
      expect=("identity_request_and_counters_cannot_be_edited",)),
    g("sqlite: intents never deleted", SQLITE, "CREATE TRIGGER intents_no_delete BEFORE DELETE ON intents\nBEGIN", "CREATE TRIGGER intents_no_delete BEFORE DELETE ON intents WHEN 0\nBEGIN",
      "history is append-only: an intent row is never deleted", expect=("intents_are_never_deleted",)),
    g("postgres: intents never deleted", POSTGRES, "CREATE TRIGGER intents_no_delete BEFORE DELETE ON intents", "CREATE TRIGGER intents_no_delete BEFORE INSERT ON admin_events",
      "history is append-only: an intent row is never deleted", expect=("intents_are_never_deleted",)),
    g("sqlite: text claim released only when failed", SQLITE, "WHEN (SELECT i.state FROM intents i WHERE i.id = OLD.intent_id) IS NOT 'failed'",
      "WHEN 0", "a duplicate-text claim cannot be deleted by hand to let the same text through again",
      expect=("a_text_claim_is_released_only_by_a_failed_send",)),
    g("postgres: text claim released only when failed", POSTGRES, "IF (SELECT i.state FROM intents i WHERE i.id = OLD.intent_id) IS DISTINCT FROM 'failed' THEN",
      "IF false THEN", "a duplicate-text claim cannot be deleted by hand to let the same text through again",
      expect=("a_text_claim_is_released_only_by_a_failed_send",)),
    g("sqlite: created pending", SQLITE, "WHEN NEW.state IS NOT 'pending'\nBEGIN", "WHEN 0\nBEGIN",
      "every intent starts pending (the state table's only entry)", expect=("an_intent_is_created_pending",)),
    g("postgres: created pending", POSTGRES, "    IF NEW.state IS DISTINCT FROM 'pending' THEN", "    IF false THEN",
      "every intent starts pending (the state table's only entry)", expect=("an_intent_is_created_pending",)),
    g("sqlite: one redelivery per consumed intent", SQLITE, "    AND EXISTS (SELECT 1 FROM intents i WHERE i.redelivery_of = NEW.redelivery_of)",
      "    AND 0", "two redeliveries of one consumed intent cannot be made, by a race or a script",
      expect=("a_consumed_intent_has_one_redelivery_whoever_asks",)),
    g("postgres: one redelivery per consumed intent", POSTGRES, "        IF EXISTS (SELECT 1 FROM intents WHERE redelivery_of = NEW.redelivery_of) THEN",
      "        IF false THEN", "two redeliveries of one consumed intent cannot be made, by a race or a script",
      expect=("a_consumed_intent_has_one_redelivery_whoever_asks",)),
    # ---- migration 0004: the platform binding
    g("sqlite: contract platform fixed", SQLITE, "WHEN (OLD.contract_platform IS NOT NULL AND NEW.contract_platform IS NOT OLD.contract_platform)",
      "WHEN (0)", "an intent's recorded platform never changes (no reading another platform's pages as evidence)",
      tests=DEFAULT_TESTS + (BINDING_T,), expect=("a_recorded_binding_never_changes",)),
    g("sqlite: base origin fixed", SQLITE, "    OR (OLD.base_origin IS NOT NULL AND NEW.base_origin IS NOT OLD.base_origin)\nBEGIN",
      "\nBEGIN", "an intent's recorded deployment (origin) never changes",
      tests=DEFAULT_TESTS + (BINDING_T,), expect=("a_recorded_binding_never_changes",)),
    g("postgres: contract platform fixed", POSTGRES, "IF (OLD.contract_platform IS NOT NULL AND NEW.contract_platform IS DISTINCT FROM OLD.contract_platform)",
      "IF (false)", "an intent's recorded platform never changes (no reading another platform's pages as evidence)",
      tests=DEFAULT_TESTS + (BINDING_T,), expect=("a_recorded_binding_never_changes",)),
    g("postgres: base origin fixed", POSTGRES, "        OR (OLD.base_origin IS NOT NULL AND NEW.base_origin IS DISTINCT FROM OLD.base_origin) THEN",
      "        THEN", "an intent's recorded deployment (origin) never changes",
      tests=DEFAULT_TESTS + (BINDING_T,), expect=("a_recorded_binding_never_changes",)),
]


def flexible(pattern):
    """A regex matching `pattern` with any run of white space or line-continuation backslashes flexible, so
    that formatting (rustfmt, wrapped SQL strings) does not hide a guard."""
    parts = re.split(r"[\s\\]+", pattern.strip())
    return re.compile(r"[\s\\]+".join(re.escape(p) for p in parts if p))


def scope_files(scope):
    return sorted(p for p in ROOT.glob(scope) if p.is_file())


def locate(scope, old):
    """[(path, match)] of `old` across the scope's files."""
    rx = flexible(old)
    return [(p, m) for p in scope_files(scope) for m in rx.finditer(p.read_text())]


def plan(guard):
    """The files a guard's mutant writes, {path: (original, mutated)}, or an error string."""
    out = {}
    for scope, old, new in guard.edits:
        hits = locate(scope, old)
        if len(hits) != 1:
            where = ", ".join(sorted({str(p.relative_to(ROOT)) for p, _ in hits}))
            return f"pattern found {len(hits)} times in {scope}" + (f" ({where})" if where else "") + f": {old[:70]!r}"
        path, _ = hits[0]
        original, text = out.get(path, (path.read_text(), None))
        text = text if text is not None else original
        m = list(flexible(old).finditer(text))
        if len(m) != 1:
            return f"pattern overlaps another edit of this guard: {old[:70]!r}"
        text = text[:m[0].start()] + new + text[m[0].end():]
        out[path] = (original, text)
    if all(o == t for o, t in out.values()):
        return "the mutant is identical to the original"
    return out


# ------------------------------------------------------------------------------------------------- tests

def one_binary():
    return (ROOT / "tests/it/main.rs").exists()


def parse_selection(spec):
    module, _, names = spec.partition(":")
    return module, tuple(n for n in names.split(",") if n)


def binary_of(module):
    """(cargo target, path prefix of the module's tests inside it)."""
    if module == LIB:
        return LIB, ""
    if one_binary():
        return "it", module + "::"
    return module, ""


def cargo_args(targets):
    args = []
    for t in sorted(targets):
        args += ["--lib"] if t == LIB else ["--test", t]
    return args


class BuildError(Exception):
    pass


class CargoLock:
    """The shared cargo lock (flock(2), the same lock `flock FILE cargo ...` takes), held while building."""

    def __init__(self, path):
        self.path, self.fd = path, None

    def __enter__(self):
        if self.path:
            self.fd = open(self.path, "a")
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *_):
        if self.fd:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            self.fd.close()
            self.fd = None


def build(targets):
    """Build the test binaries; {target: executable}. The caller holds the cargo lock."""
    cmd = ["cargo", "test", "--locked", "--no-run", *cargo_args(targets), "--message-format=json-render-diagnostics"]
    # Its own process group, so an interrupted run stops cargo's rustc children too (they would go on
    # compiling a mutant that is already restored, outside the lock).
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate()
    except BaseException:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise
    r = subprocess.CompletedProcess(cmd, p.returncode, out, err)
    exes = {}
    for line in r.stdout.splitlines():
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if m.get("reason") != "compiler-artifact" or not m.get("executable") or not m.get("profile", {}).get("test"):
            continue
        kinds = m["target"]["kind"]
        exes[LIB if "lib" in kinds else m["target"]["name"]] = m["executable"]
    if r.returncode != 0:
        errors = [l for l in r.stderr.splitlines() if l.startswith("error")]
        raise BuildError("the mutant does not build: " + ("; ".join(errors[:3]) or r.stderr[-500:]))
    missing = set(targets) - set(exes)
    if missing:
        raise BuildError(f"no test executable for {sorted(missing)}")
    return exes


# Integration tests run the `oncepost` binary by the path cargo baked in (target/debug/oncepost).
BIN = ROOT / "target/debug/oncepost"


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


UNMUTATED = {}  # target -> digest of the executable built from the unmutated tree


def snapshot(exes, dest):
    """Copy a mutant's test executables and its oncepost binary aside, so several mutants can be built under
    one hold of the cargo lock and each is then tested with its own binaries. When every executable is
    identical to the unmutated one, no test can see the mutant (not compiled in, or dead code): an error, never
    a verdict. (One may be identical: the linker drops store code no unit test calls from the lib's.)"""
    if all(UNMUTATED.get(target) == digest(exe) for target, exe in exes.items()):
        raise BuildError("every test executable is identical to the unmutated one (the mutant is not compiled in)")
    dest.mkdir(parents=True, exist_ok=True)
    out = {}
    for target, exe in exes.items():
        copy = dest / pathlib.Path(exe).name
        shutil.copy2(exe, copy)
        out[target] = str(copy)
    if BIN.exists():
        shutil.copy2(BIN, dest / "oncepost")
    return out


def install_bin(dest):
    """Put a snapshot's oncepost binary where the tests look for it (a rename: cargo's own copy is untouched)."""
    src = dest / "oncepost"
    if src.exists():
        tmp = BIN.with_name(".oncepost.guard-mutants")
        shutil.copy2(src, tmp)
        os.replace(tmp, BIN)


_listing = {}


def list_tests(exe):
    """Every test name of an executable (cached per path)."""
    if exe not in _listing:
        r = subprocess.run([exe, "--list", "--format", "terse"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise BuildError(f"{exe} --list failed: {r.stderr[-300:]}")
        _listing[exe] = [l[: -len(": test")] for l in r.stdout.splitlines() if l.endswith(": test")]
    return _listing[exe]


def select(exes, specs):
    """{target: [test names]} for the selections; raises when a selection matches no test."""
    chosen = {}
    for spec in specs:
        module, names = parse_selection(spec)
        target, prefix = binary_of(module)
        found = [t for t in list_tests(exes[target]) if t.startswith(prefix)
                 and (not names or t.split("::")[-1] in names)]
        if not found:
            raise BuildError(f"test selection {spec!r} matches no test in {target}")
        missing = set(names) - {t.split("::")[-1] for t in found}
        if missing:
            raise BuildError(f"test selection {spec!r}: no test named {sorted(missing)}")
        chosen.setdefault(target, [])
        chosen[target] += [t for t in found if t not in chosen[target]]
    return chosen


def run_selected(exes, chosen, timeout, log):
    """Run the chosen tests; (failed test names, timed out?, number run)."""
    failed, timed_out, n = [], False, 0
    for target, names in sorted(chosen.items()):
        n += len(names)
        cmd = [exes[target], "--exact", "--test-threads=2", *names]
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            timed_out = True
        log.write(f"$ {' '.join(cmd[:4])} ... ({len(names)} tests) exit {p.returncode}\n{out}\n")
        bad = re.findall(r"^test (\S+) \.\.\. FAILED$", out, re.M)
        failed += [f"{target}:{t}" for t in bad]
        if p.returncode != 0 and not bad and not timed_out:
            failed.append(f"{target}:(exit {p.returncode}, no test reported FAILED)")
    return failed, timed_out, n


def short(failed):
    """Failed tests by function name, with the backends/modules they failed on."""
    by = {}
    for f in failed:
        target, _, name = f.partition(":")
        parts = name.split("::")
        by.setdefault(parts[-1], set()).add("::".join(parts[:-1]) or target)
    return [f"{fn} ({', '.join(sorted(w))})" for fn, w in sorted(by.items())]


def targets_of(specs):
    return {binary_of(parse_selection(s)[0])[0] for s in specs}


def verdict(x, failed, timed_out, n):
    if not failed and not timed_out:
        return "ALIVE", f"all {n} tests passed"
    fns = {f.split("::")[-1] for f in failed}
    status = "COLLATERAL" if x.expect and not fns & set(x.expect) else "killed"
    names = short(failed)
    detail = ("timeout; " if timed_out else "") + ", ".join(names[:4]) + \
        (f" (+{len(names) - 4} more)" if len(names) > 4 else "") + f" [{len(failed)} of {n} red]"
    if status == "COLLATERAL":
        detail += f"; expected one of {', '.join(x.expect)}"
    return status, detail


# ------------------------------------------------------------------------------------------------- main

def dirty():
    r = subprocess.run(["git", "status", "--porcelain", "--", "src", "migrations"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    return r.stdout.strip()


def start_pg():
    if os.environ.get("ONCEPOST_TEST_PG", "").strip():
        return None
    d = tempfile.mkdtemp(prefix="oncepost-guard-mutants-pg.")
    url = subprocess.run([str(ROOT / "scripts/pg-ephemeral.sh"), "start", d], check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    os.environ["ONCEPOST_TEST_PG"] = url
    return d


def legacy_guards(path):
    """The GUARDS of another version of this script (for example main's, to record a baseline with the
    patterns as they were): (name, file, old, new) tuples, each file searched alone, judged by the tests the
    old script ran (every unit test and tests/store.rs)."""
    src = pathlib.Path(path).read_text()
    env = {"__name__": "legacy", "__file__": str(ROOT / "scripts/guard-mutants.py")}
    exec(compile(src, path, "exec"), env)
    out = []
    for item in env["GUARDS"]:
        if isinstance(item, Guard):
            out.append(item)
            continue
        name, rel, old, new = item
        out.append(Guard(name, [(rel, old, new)], "(legacy list)", tests=(LIB, STORE_T)))
    return out


def markdown(results, path, header):
    rows = [header, "", "| guard | result | red tests | s |", "|---|---|---|---|"]
    for name, status, detail, secs in results:
        rows.append(f"| {name} | {status} | {detail.replace('|', '/')} | {secs:.0f} |")
    pathlib.Path(path).write_text("\n".join(rows) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", help="run the guards whose name contains this (repeatable)")
    ap.add_argument("--names", metavar="FILE", help="run the guards named in FILE (exact names, one a line)")
    ap.add_argument("--skip-names", metavar="FILE", help="skip the guards named in FILE (exact names, one a line)")
    ap.add_argument("--in", dest="within", action="append",
                    help="run the guards whose edits are in files under this path, e.g. migrations/ (repeatable)")
    ap.add_argument("--dry-run", action="store_true", help="check the patterns, build nothing")
    ap.add_argument("--catalogue", action="store_true", help="print the guards as a Markdown table and exit")
    ap.add_argument("--markdown", help="write the results as a Markdown table to this file")
    ap.add_argument("--no-lock", action="store_true", help="build without taking the cargo lock")
    ap.add_argument("--batch", type=int, default=6,
                    help="mutants built per hold of the cargo lock, then tested outside it (default 6)")
    ap.add_argument("--allow-dirty", action="store_true", help="run with uncommitted changes under src/ or migrations/")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per test binary run (default 900)")
    ap.add_argument("--log-dir", default=str(ROOT / "target/guard-mutants"), help="full test output per mutant")
    ap.add_argument("--legacy", metavar="SCRIPT", help="take GUARDS from another version of this script")
    a = ap.parse_args()

    catalogue = legacy_guards(a.legacy) if a.legacy else GUARDS
    guards = [x for x in catalogue if not a.only or any(o in x.name for o in a.only)]
    def names_in(path):
        return {l.strip() for l in pathlib.Path(path).read_text().splitlines() if l.strip()}
    if a.names:
        wanted = names_in(a.names)
        unknown = wanted - {x.name for x in catalogue}
        if unknown:
            print(f"no guard named {sorted(unknown)}")
            return 2
        guards = [x for x in guards if x.name in wanted]
    if a.skip_names:
        guards = [x for x in guards if x.name not in names_in(a.skip_names)]
    if a.within:
        guards = [x for x in guards if all(any(scope.startswith(w) for w in a.within) for scope, _, _ in x.edits)]
    if not guards:
        print(f"no guard matches {a.only}")
        return 2
    names = [x.name for x in catalogue]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        print(f"duplicate guard names: {sorted(dup)}")
        return 2

    # Every pattern first: a stale one is an error, reported before anything is built.
    plans, bad = {}, []
    for x in guards:
        p = plan(x)
        if isinstance(p, str):
            bad.append((x.name, p))
        else:
            plans[x.name] = p
    for name, why in bad:
        print(f"PATTERN {name}: {why}", flush=True)
    if a.catalogue:
        print("| guard | where (now) | what it protects | must be caught by |\n|---|---|---|---|")
        for x in guards:
            files = ", ".join(str(p.relative_to(ROOT)) for p in plans.get(x.name, {})) or "(pattern not found)"
            print(f"| {x.name} | {files} | {x.why} | {', '.join(x.expect) or 'any selected test'} |")
        return 0 if not bad else 2
    if a.dry_run:
        for x in guards:
            if x.name in plans:
                files = ", ".join(str(p.relative_to(ROOT)) for p in plans[x.name])
                print(f"ok      {x.name}  [{files}]  tests: {' '.join(x.tests)}")
        print(f"\n{len(plans)} of {len(guards)} patterns match exactly once")
        return 0 if not bad else 2
    if bad and not a.legacy:
        print(f"\n{len(bad)} pattern(s) do not match exactly once; fix them first")
        return 2
    if dirty() and not a.allow_dirty:
        print("src/ or migrations/ has uncommitted changes; commit them first (this script rewrites those files)\n" + dirty())
        return 2

    lock = None
    if not a.no_lock and shutil.which("flock"):
        lock = os.environ.get("ONCEPOST_CARGO_LOCK", "/tmp/oncepost-cargo.lock") or None
    pgdir = start_pg()
    log_dir = pathlib.Path(a.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    snaps = pathlib.Path(tempfile.mkdtemp(prefix="oncepost-guard-mutants."))

    # SIGTERM and SIGHUP unwind like Ctrl-C, so the `finally` blocks restore the file being mutated.
    def interrupted(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGHUP, interrupted)

    # A legacy list may hold a stale pattern: it is reported as such (and fails the run), never skipped quietly.
    results = [(name, "PATTERN", why, 0.0) for name, why in bad]
    # A mutant that breaks a proptest makes it write a regression file into the tree (proptest-regressions/);
    # those cases are the mutant's, not the code's: remove what the run added.
    regressions = ROOT / "proptest-regressions"
    kept = {p for p in regressions.rglob("*")} if regressions.exists() else set()
    started = time.time()
    try:
        layout = "tests/it (one binary)" if one_binary() else "tests/*.rs (one binary each)"
        runnable = [x for x in guards if x.name in plans]
        every_target = targets_of(s for x in runnable for s in x.tests)
        batch = max(1, a.batch)
        for start in range(0, len(runnable), batch):
            group = runnable[start:start + batch]
            built, t0 = {}, time.time()
            with CargoLock(lock):
                waited = time.time() - t0
                if start == 0:
                    # The unmutated tree first, in the same hold of the lock: its tests run before any verdict.
                    try:
                        unmutated = build(every_target)
                        base = snapshot(unmutated, snaps / "unmutated")
                        UNMUTATED.update({target: digest(exe) for target, exe in unmutated.items()})
                    except BuildError as e:
                        print(f"the unmutated tree does not build: {e}")
                        return 1
                for x in group:
                    t = time.time()
                    writes = plans[x.name]
                    try:
                        for path, (_, mutated) in writes.items():
                            path.write_text(mutated)
                        try:
                            built[x.name] = (snapshot(build(targets_of(x.tests)), snaps / str(start) / x.name), time.time() - t)
                        except BuildError as e:
                            built[x.name] = (e, time.time() - t)
                    finally:
                        for path, (original, _) in writes.items():
                            path.write_text(original)
                            if path.read_text() != original:
                                raise SystemExit(f"could not restore {path}")
            if start == 0:
                t = time.time()
                try:
                    install_bin(snaps / "unmutated")
                    union = select(base, sorted({s for x in runnable for s in x.tests}))
                except BuildError as e:
                    print(f"unmutated tree: {e}")
                    return 1
                with open(log_dir / "baseline.log", "w") as log:
                    failed, timed_out, n = run_selected(base, union, a.timeout, log)
                if failed or timed_out:
                    print(f"the unmutated tree is red ({'timeout; ' if timed_out else ''}{', '.join(short(failed)[:6])}); "
                          f"fix it first (log: {log_dir / 'baseline.log'})")
                    return 1
                print(f"unmutated tree green: {n} tests in {time.time() - t:.0f}s (lock wait {waited:.0f}s); "
                      f"{len(runnable)} guards; layout {layout}; load {open('/proc/loadavg').read().split()[0]}", flush=True)
            for x in group:
                t = time.time()
                exes, build_secs = built[x.name]
                slug = re.sub(r"[^a-z0-9]+", "-", x.name.lower()).strip("-")
                if isinstance(exes, BuildError):
                    status, detail = "ERROR", str(exes)
                else:
                    try:
                        install_bin(snaps / str(start) / x.name)
                        chosen = select(exes, x.tests)
                    except BuildError as e:
                        status, detail = "ERROR", str(e)
                    else:
                        with open(log_dir / f"{slug}.log", "w") as log:
                            status, detail = verdict(x, *run_selected(exes, chosen, a.timeout, log))
                    shutil.rmtree(snaps / str(start) / x.name, ignore_errors=True)
                secs = build_secs + time.time() - t
                load = open("/proc/loadavg").read().split()[0]
                print(f"{status:<10} {x.name} (build {build_secs:.0f}s + tests {time.time() - t:.0f}s, lock wait "
                      f"{waited:.0f}s, load {load}): {detail}", flush=True)
                results.append((x.name, status, detail, secs))
    except KeyboardInterrupt as e:
        print(f"\ninterrupted ({e}); every mutated file was restored")
        return 130
    finally:
        shutil.rmtree(snaps, ignore_errors=True)
        if regressions.exists():
            for p in sorted(regressions.rglob("*"), reverse=True):
                if p not in kept:
                    p.unlink() if p.is_file() else p.rmdir()
            if not kept:
                regressions.rmdir()
        if pgdir:
            subprocess.run([str(ROOT / "scripts/pg-ephemeral.sh"), "stop", pgdir])
        if a.markdown and results:
            markdown(results, a.markdown, f"{len(results)} guards, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                     f"{(time.time() - started) / 60:.0f} min, layout {'tests/it' if one_binary() else 'tests/*.rs'}")

    failures = [(name, status) for name, status, _, _ in results if status != "killed"]
    killed = len(results) - len(failures)
    print(f"\n{killed} of {len(results)} guard mutants killed in {(time.time() - started) / 60:.0f} min")
    for name, status in failures:
        print(f"  {status}: {name}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
