#!/usr/bin/env bash
# Fleet throughput: N worker processes (each its own data dir, as separate hosts), one ephemeral PostgreSQL,
# Fixturebook, no chaos; posts per minute for each N (release build). Usage: scripts/bench-fleet.sh [INTENTS]
# [WORKER COUNTS...]   e.g. scripts/bench-fleet.sh 40 1 2 4. ONCEPOST_CHAOS_WARM=N sets the workers'
# --warm-browsers (default 4; 0 launches Chromium for every send).
set -euo pipefail
cd "$(dirname "$0")/.."
intents=${1:-40}
shift || true
counts=("${@:-1 2 4}")
[ $# -eq 0 ] && counts=(1 2 4)
for n in "${counts[@]}"; do
    echo "== $n worker(s), $intents intents, warm browsers ${ONCEPOST_CHAOS_WARM:-4}, load $(cut -d' ' -f1-3 /proc/loadavg)"
    ONCEPOST_CHAOS_WORKERS=$n ONCEPOST_CHAOS_INTENTS=$intents \
        cargo test --release --locked --test it chaos::fleet_throughput -- --ignored --nocapture 2>&1 \
        | grep -E '^chaos:|test result'
done
