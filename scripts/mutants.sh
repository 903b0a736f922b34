#!/usr/bin/env bash
# Mutation testing of the intent store.
#  1. cargo-mutants over src/store and src/identity.rs (Rust expressions: operators, returns, conditions),
#     judged by the store's tests (both backends) and the unit tests.
#  2. scripts/guard-mutants.py: each SQL guard, trigger and constraint removed in turn (cargo-mutants does not
#     mutate SQL text, and most of the store's guards are SQL).
# Both edit files in place: run this in a scratch checkout (git worktree add ../scratch HEAD), never in a tree
# with work you care about. On 2 cores a full cargo-mutants run takes hours (about 1-2 min per mutant); pass
# --file to narrow it, e.g.  scripts/mutants.sh --file src/store/state.rs
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null 2>&1 || cargo install --locked cargo-mutants

pgdir=$(mktemp -d "${TMPDIR:-/tmp}/oncepost-mutants-pg.XXXXXX")
trap 'scripts/pg-ephemeral.sh stop "$pgdir"' EXIT
ONCEPOST_TEST_PG=$(scripts/pg-ephemeral.sh start "$pgdir")
export ONCEPOST_TEST_PG

files=("$@")
if [ ${#files[@]} -eq 0 ]; then files=(--file 'src/store/*.rs' --file src/identity.rs); fi
cargo mutants --in-place --no-shuffle --timeout 600 "${files[@]}" -- --lib --test store || true
python3 scripts/guard-mutants.py
