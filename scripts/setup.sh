#!/usr/bin/env bash
# Install what oncepost needs on a fresh Debian machine, and only what is missing:
# Debian's Chromium (nothing downloads a browser of its own) and the PostgreSQL binaries used by the tests'
# ephemeral clusters. Safe to run again.
set -euo pipefail

need=()
if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ] && [ -z "${ONCEPOST_CHROMIUM:-}" ]; then
    need+=(chromium)
fi
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    need+=(postgresql)
fi
if ! command -v psql >/dev/null 2>&1; then
    need+=(postgresql-client)
fi
if ! command -v python3 >/dev/null 2>&1; then
    need+=(python3)
fi

if [ ${#need[@]} -gt 0 ]; then
    echo "setup: installing ${need[*]}" >&2
    sudo_cmd=""
    if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo is missing; install a Rust toolchain (rustup) first" >&2
    exit 1
fi
