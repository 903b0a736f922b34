#!/usr/bin/env bash
# Benchmark: time of the locator checks of a 10-locator contract, oncepost probe vs a plain Playwright script
# (npm playwright-core, same system Chromium), same page, same run. Prints both medians and the ratio.
# Goal: oncepost <= 0.25x Playwright. Usage: scripts/bench-probe.sh [ROUNDS]   (needs node + npm, python3)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-20}"
BENCH=scripts/bench
if [ ! -d "$BENCH/node_modules/playwright-core" ]; then
  (cd "$BENCH" && npm install --no-save --no-audit --no-fund playwright-core@1 >/dev/null)
fi
# BENCH_PROFILE=release for release figures (a clean release build takes minutes); debug by default.
PROFILE="${BENCH_PROFILE:-debug}"
if [ "$PROFILE" = release ]; then cargo build --release --quiet; else cargo build --quiet; fi
BIN="target/$PROFILE/oncepost"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server "$PORT" --bind 127.0.0.1 --directory "$BENCH/site" >/dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$DATA"' EXIT
DATA=$(mktemp -d)
sleep 0.5
BASE="http://127.0.0.1:$PORT"
ONCE=$("$BIN" --data-dir "$DATA" probe --contract "$BENCH/bench-contract.toml" --base-url "$BASE" --json \
  --observe-ms 0 --check-rounds "$ROUNDS" | python3 -c 'import json,sys; t=sorted(json.load(sys.stdin)["timings"]["checks_us"]); print(t[len(t)//2])')
read -r PW PWQ < <(node "$BENCH/probe-playwright.js" "$BASE/compose/" "$ROUNDS" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(int(j["median_us"]), int(j["median_no_stability_us"]))')
echo "binary: $BIN   rounds: $ROUNDS   locators: 10"
echo "oncepost checks (one evaluation):      median ${ONCE} us"
echo "playwright checks (calls per state):   median ${PW} us"
echo "playwright without stability waits:    median ${PWQ} us"
python3 -c "print(f'ratio oncepost/playwright: {$ONCE/$PW:.3f}  (goal <= 0.25); vs playwright without stability waits: {$ONCE/$PWQ:.3f}')"
