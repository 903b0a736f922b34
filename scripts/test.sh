#!/usr/bin/env bash
# Run every test: installs what is missing, starts one ephemeral PostgreSQL cluster (temp dir, free port,
# unprivileged user; each test makes its own database in it), runs the suite, and removes the cluster.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

pgdir=$(mktemp -d "${TMPDIR:-/tmp}/oncepost-test-pg.XXXXXX")
trap 'scripts/pg-ephemeral.sh stop "$pgdir"' EXIT
ONCEPOST_TEST_PG=$(scripts/pg-ephemeral.sh start "$pgdir")
export ONCEPOST_TEST_PG

# A failing test's own message must stay in the tail of the output CI keeps: a backtrace is dozens of lines of
# tokio frames above it (stop 37's CI failure lost its message that way). Set RUST_BACKTRACE_TESTS=1 to have one.
export RUST_BACKTRACE="${RUST_BACKTRACE_TESTS:-0}"

# compile_fail doctests must fail with their pinned error code (stable rustdoc skips that check).
RUSTDOC="$PWD/scripts/rustdoc-error-codes.sh" cargo test --locked "$@"
