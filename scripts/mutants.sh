#!/usr/bin/env bash
# Mutation testing of the intent store. On demand, never in CI (see docs/guard-mutants.md for the budget).
#  1. cargo-mutants over src/store and src/identity.rs (Rust expressions: operators, returns, conditions),
#     judged by the store's tests (both backends) and the unit tests.
#  2. scripts/guard-mutants.py: each SQL guard, trigger and constraint removed in turn (cargo-mutants does not
#     mutate SQL text, and most of the store's guards are SQL).
# Both edit files in place: run this in a checkout with nothing uncommitted under src/ and migrations/ (the guard
# script refuses otherwise), never in a tree with work you care about. On 2 cores a full cargo-mutants run takes
# hours (about 1-2 min per mutant); pass --file to narrow it, e.g.  scripts/mutants.sh --file src/store/state.rs
#
# Exits non-zero when either part finds a surviving mutant (cargo-mutants: missed or timed out; the guard
# script: a survivor, a collateral kill, a stale pattern or a mutant that does not build). Both parts always run,
# so one run reports everything.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null 2>&1 || cargo install --locked cargo-mutants

pgdir=$(mktemp -d "${TMPDIR:-/tmp}/oncepost-mutants-pg.XXXXXX")
trap 'scripts/pg-ephemeral.sh stop "$pgdir"' EXIT
ONCEPOST_TEST_PG=$(scripts/pg-ephemeral.sh start "$pgdir")
export ONCEPOST_TEST_PG

files=("$@")
if [ ${#files[@]} -eq 0 ]; then files=(--file 'src/store/**/*.rs' --file src/identity.rs); fi
# The store-level tests: one binary with modules once tests/it exists, else one binary per file.
if [ -f tests/it/main.rs ]; then
    tests=(--lib --test it)
else
    tests=(--lib --test store --test store_triggers)
fi

# cargo-mutants exit codes: 0 every mutant caught, 2 some missed, 3 some timed out, 4 the unmutated tree fails.
status=0
cargo mutants --in-place --no-shuffle --timeout 600 "${files[@]}" -- "${tests[@]}" || {
    rc=$?
    echo "mutants.sh: cargo-mutants exited $rc (2: missed mutants, 3: timeouts, 4: baseline red); see mutants.out/" >&2
    status=1
}
python3 scripts/guard-mutants.py || {
    echo "mutants.sh: guard-mutants.py exited $? (a survivor, a collateral kill, a stale pattern or a build error)" >&2
    status=1
}
exit "$status"
