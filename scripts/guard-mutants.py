#!/usr/bin/env python3
"""Remove each guard of the intent store, one at a time, and check that the store's tests go red.

cargo-mutants mutates Rust expressions, not SQL text, and the store's guards are mostly WHERE clauses and
database constraints. This script deletes or weakens each one, runs the store tests (both backends, and the
state table's unit tests), records red or green, and restores the file. A guard whose removal leaves the tests
green is a surviving mutant and is printed as such.

  scripts/guard-mutants.py [--only SUBSTRING]     (run from a scratch checkout: it edits files in place)
"""
import pathlib, re, subprocess, sys, time

ROOT = pathlib.Path(__file__).resolve().parent.parent
OPS = "src/store/ops.rs"
ADM = "src/store/admin.rs"
SQ = "migrations/sqlite/0001_intent_store.sql"
PG = "migrations/postgres/0001_intent_store.sql"

# (name, file, text to find (exactly once), replacement)
GUARDS = [
    ("begin: only pending", OPS, "WHERE id = $1 AND state = 'pending' AND attempt_count < max_attempts \\\n                 AND (lease_expires_at IS NULL OR lease_expires_at <= $9) AND generation = $10",
     "WHERE id = $1 AND attempt_count < max_attempts \\\n                 AND (lease_expires_at IS NULL OR lease_expires_at <= $9) AND generation = $10"),
    ("begin: no live claim", OPS, "AND (lease_expires_at IS NULL OR lease_expires_at <= $9) AND generation = $10", "AND generation = $10"),
    ("begin: generation compare-and-swap", OPS, "AND generation = $10 \\\n                 AND EXISTS", "AND EXISTS"),
    ("begin: account not revoked", OPS, "AND EXISTS (SELECT 1 FROM accounts a WHERE a.name = intents.account AND a.revoked = 0)", ""),
    ("begin: under the cap", OPS, "WHERE id = $1 AND state = 'pending' AND attempt_count < max_attempts", "WHERE id = $1 AND state = 'pending'"),
    ("begin: parks only at the cap", OPS, "AND state = 'pending' AND attempt_count >= max_attempts", "AND state = 'pending'"),
    ("authorize: state = pending", OPS, "WHERE delivery_key = $1 AND state = 'pending' AND generation = $2 AND epoch = $3",
     "WHERE delivery_key = $1 AND generation = $2 AND epoch = $3"),
    ("authorize: generation", OPS, "AND state = 'pending' AND generation = $2 AND epoch = $3", "AND state = 'pending' AND epoch = $3"),
    ("authorize: lease live", OPS, "AND lease_expires_at > $4", ""),
    ("authorize: contract hash", OPS, "AND contract_hash = $6", ""),
    ("authorize: store epoch", OPS, "                     AND epoch = (SELECT m.epoch FROM store_meta m WHERE m.id = 1) \\\n                     AND NOT EXISTS",
     "                     AND NOT EXISTS"),
    ("authorize: kill switches", OPS, "AND NOT EXISTS (SELECT 1 FROM switches s WHERE s.engaged = 1 AND",
     "AND NOT EXISTS (SELECT 1 FROM switches s WHERE s.engaged = 2 AND"),
    ("authorize: account not revoked", OPS, "WHERE name = $1 AND revoked = 0 \\\n", "WHERE name = $1 \\\n"),
    ("authorize: credential version", OPS, "                 AND credential_version = $2 \\\n", "                 AND $2 = $2 \\\n"),
    ("authorize: rate interval", OPS, "AND (last_dispatch_at IS NULL OR last_dispatch_at + min_interval_ms <= $3)", "AND $3 = $3"),
    ("authorize: refusal rolls back", OPS, "            if acct.rows_affected() != 1 {\n                return Err(refused());", "            if acct.rows_affected() == 99 {\n                return Err(refused());"),
    ("settle: generation + attempt fence", OPS, "WHERE id = $1 AND state = $9 AND generation = $2 AND epoch = $3 AND current_attempt = $4",
     "WHERE id = $1 AND state = $9 AND epoch = $3"),
    ("settle: store epoch", OPS, "                 AND epoch = (SELECT m.epoch FROM store_meta m WHERE m.id = 1) \\\n                 AND (state <> 'pending' OR lease_owner = $10)",
     "                 AND (state <> 'pending' OR lease_owner = $10)"),
    ("settle: pre-auth needs the claim", OPS, "AND (state <> 'pending' OR lease_owner = $10)", "AND ($10 = $10)"),
    ("settle: state table check", OPS, "if from.next(event).is_err() {\n                return Err(stale);", "if false {\n                return Err(stale);"),
    ("settle failed releases text claim", OPS, "sqlx::query(\"DELETE FROM text_claims WHERE intent_id = $1\")", "sqlx::query(\"DELETE FROM text_claims WHERE intent_id = -$1\")"),
    ("request_sent: fence", OPS, "WHERE delivery_key = $1 AND state = 'authorized' AND generation = $2 AND epoch = $3 \\\n                 AND current_attempt = $4",
     "WHERE delivery_key = $1 AND epoch = $3"),
    ("sweep: authorized only after expiry", OPS, "WHERE delivery_key = $1 AND state = 'authorized' AND generation = $2 \\\n                     AND lease_expires_at <= $3 RETURNING id",
     "WHERE delivery_key = $1 AND state = 'authorized' AND generation = $2 \\\n                     RETURNING id"),
    ("sweep: candidates expired", OPS, "AND lease_expires_at <= $1 ORDER BY id", "ORDER BY id"),
    ("sweep: to indeterminate, never pending", OPS, "\"UPDATE intents SET state = 'indeterminate', lease_owner = NULL", "\"UPDATE intents SET state = 'pending', lease_owner = NULL"),
    ("simple transitions: state guard", OPS, "                 WHERE id = $1 AND state = $2\",\n            )\n            .bind(row.id)\n            .bind(from.label())",
     "                 WHERE id = $1 AND $2 = $2\",\n            )\n            .bind(row.id)\n            .bind(from.label())"),
    ("state table: retry only from failed", "src/store/state.rs", "(S::Failed, E::Retried) => S::Pending,", "(_, E::Retried) => S::Pending,"),
    ("state table: authorized cannot be parked", "src/store/state.rs", "(S::Pending | S::Failed | S::Indeterminate, E::Parked) => S::Parked,", "(_, E::Parked) => S::Parked,"),
    ("reconcile: at most once", OPS, "WHERE id = $1 AND ((state = 'indeterminate' AND reconcile_count = 0)", "WHERE id = $1 AND ((state = 'indeterminate')"),
    ("reconcile: ticket fence", OPS, "if row.intent.reconcile_count != ticket.number {", "if false {"),
    ("create: idempotent on key", OPS, "ON CONFLICT (delivery_key) DO NOTHING RETURNING id", "RETURNING id"),
    ("sqlite: duplicate-text trigger", SQ, "BEGIN SELECT RAISE(ABORT, 'oncepost_duplicate_text'); END;", "BEGIN SELECT 1; END;"),
    ("postgres: duplicate-text exclusion", PG, "int8range(claimed_at, claimed_at + window_ms) WITH &&", "int8range(claimed_at, claimed_at + window_ms) WITH ="),
    ("sqlite: events append-only", SQ, "CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events\nBEGIN SELECT RAISE(ABORT, 'oncepost: events are append-only'); END;", ""),
    ("postgres: attempts append-only", PG, "CREATE TRIGGER attempts_no_update BEFORE UPDATE OR DELETE ON attempts", "CREATE TRIGGER attempts_no_update BEFORE INSERT ON attempts"),
    ("sqlite: fencing counter cannot reset", SQ, "WHEN NEW.value <> OLD.value + 1 OR NEW.id <> OLD.id", "WHEN 0"),
    ("sqlite: epoch only forward", SQ, "WHEN NEW.epoch <= OLD.epoch OR NEW.instance_id <> OLD.instance_id OR NEW.id <> OLD.id", "WHEN 0"),
]


def flexible(pattern):
    """A regex matching `pattern` with any run of white space or line-continuation backslashes flexible, so
    that formatting (rustfmt, wrapped SQL strings) does not hide a guard."""
    parts = re.split(r"[\s\\]+", pattern.strip())
    return re.compile(r"[\s\\]+".join(re.escape(p) for p in parts if p))


def run_tests():
    t = time.time()
    r = subprocess.run(["cargo", "test", "--quiet", "--lib", "--test", "store"], cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return r.returncode, time.time() - t, r.stdout


def main():
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    rc, secs, out = (0, 0, "") if "--dry-run" in sys.argv else run_tests()
    if rc != 0:
        print("baseline is red; fix it first\n" + out[-3000:])
        sys.exit(1)
    print(f"baseline green in {secs:.0f}s; {len(GUARDS)} guards", flush=True)
    survivors = []
    for name, rel, old, new in GUARDS:
        if only and only not in name:
            continue
        path = ROOT / rel
        text = path.read_text()
        rx = flexible(old)
        n = len(rx.findall(text))
        if n != 1:
            print(f"SKIP  {name}: pattern found {n} times", flush=True)
            survivors.append((name, "pattern not found"))
            continue
        if "--dry-run" in sys.argv:
            print(f"ok    {name}", flush=True)
            continue
        path.write_text(rx.sub(lambda _m: new, text, count=1))
        try:
            rc, secs, out = run_tests()
        finally:
            path.write_text(text)
        if rc == 0:
            print(f"ALIVE {name} ({secs:.0f}s): no test noticed", flush=True)
            survivors.append((name, "survived"))
        else:
            # quiet mode lists the failed tests, indented, under "failures:"
            failed = sorted({l.strip() for l in out.splitlines() if l.startswith("    ") and "::" in l and " " not in l.strip()})
            if not failed:
                failed = ["(build failed)"] if "error[" in out else ["?"]
            print(f"red   {name} ({secs:.0f}s): {', '.join(failed[:4])}{' ...' if len(failed) > 4 else ''}", flush=True)
    print(f"\n{len(GUARDS) - len(survivors)} of {len(GUARDS)} guard mutants killed; survivors: {survivors}")


if __name__ == "__main__":
    main()
