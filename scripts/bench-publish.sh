#!/usr/bin/env bash
# Benchmark: one whole `oncepost publish` process (browser launch included) against a plain Playwright script
# (npm playwright-core, same system Chromium) doing the same login, fill, click and read-back without any
# durability, side by side in one run against the same Fixturebook (`oncepost fixtures serve`). Prints the
# median wall times, the ratio (goal <= 0.8) and the peak RSS of the oncepost process itself (VmHWM from
# /proc/PID/status; Chromium is a separate process and not counted; goal < 40 MB).
# Usage: scripts/bench-publish.sh [RUNS]   (needs node + npm, python3). BENCH_PROFILE=debug for a debug build.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-7}"
BENCH=scripts/bench
if [ ! -d "$BENCH/node_modules/playwright-core" ]; then
  (cd "$BENCH" && npm install --no-save --no-audit --no-fund playwright-core@1 >/dev/null)
fi
PROFILE="${BENCH_PROFILE:-release}"
if [ "$PROFILE" = release ]; then cargo build --release --locked --quiet; else cargo build --locked --quiet; fi
BIN="target/$PROFILE/oncepost"
exec python3 - "$BIN" "$RUNS" "$BENCH" <<'PY'
import json, os, statistics, subprocess, sys, tempfile, time, uuid
binary, runs, bench = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data = tempfile.mkdtemp(prefix="oncepost-bench-")
env = dict(os.environ, ONCEPOST_HOME=data)
server = subprocess.Popen([binary, "fixtures", "serve", "--json"], env=env, stdout=subprocess.PIPE, text=True)
try:
    base = json.loads(server.stdout.readline())["base_url"]
    subprocess.run([binary, "accounts", "add", "bench", "--platform", "fixture", "--dup-window", "0s"],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    def run_oncepost(text):
        t0 = time.monotonic()
        p = subprocess.Popen([binary, "publish", "--contract", "selectors/fixture.toml", "--account", "bench",
                              "--base-url", base, "--login-url", f"{base}/login?account=bench", "--text", text,
                              "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        hwm = 0
        while p.poll() is None:
            try:
                with open(f"/proc/{p.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            hwm = max(hwm, int(line.split()[1]))
            except (FileNotFoundError, ProcessLookupError):
                pass
            time.sleep(0.01)
        out = p.stdout.read()
        wall = time.monotonic() - t0
        state = json.loads(out)["state"] if out.strip() else "?"
        if p.returncode != 0 or state != "published":
            sys.exit(f"oncepost publish failed: exit {p.returncode}, {out[:300]}")
        return wall, hwm / 1024
    def run_playwright(text):
        t0 = time.monotonic()
        subprocess.run(["node", f"{bench}/publish-playwright.js", base, text], check=True,
                       stdout=subprocess.DEVNULL)
        return time.monotonic() - t0
    # One warm-up of each (page cache, npm module load), not counted.
    run_oncepost(f"warm-up {uuid.uuid4()}"); run_playwright(f"warm-up {uuid.uuid4()}")
    once, pw, rss = [], [], []
    for i in range(runs):  # alternate, so both see the same machine load
        w, r = run_oncepost(f"bench oncepost {i} {uuid.uuid4()}"); once.append(w); rss.append(r)
        pw.append(run_playwright(f"bench playwright {i} {uuid.uuid4()}"))
    mo, mp = statistics.median(once), statistics.median(pw)
    print(f"binary: {binary}   runs: {runs} (after one warm-up each)")
    print(f"oncepost publish (whole process):   median {mo*1000:.0f} ms   [{', '.join(f'{x*1000:.0f}' for x in once)}]")
    print(f"playwright fill/click/read-back:    median {mp*1000:.0f} ms   [{', '.join(f'{x*1000:.0f}' for x in pw)}]")
    print(f"ratio oncepost/playwright: {mo/mp:.3f}  (goal <= 0.8)")
    print(f"oncepost peak RSS (VmHWM, Chromium excluded): max {max(rss):.1f} MB, median {statistics.median(rss):.1f} MB  (goal < 40 MB)")
finally:
    server.terminate(); server.wait(timeout=10)
    subprocess.run(["rm", "-rf", data])
PY
