#!/usr/bin/env bash
# Benchmark: a worker's per-post wall time with the account's browser kept warm between sends, against the same
# worker launching Chromium for every send (`--warm-browsers 0`) and against a whole-process plain Playwright
# publish (scripts/bench/publish-playwright.js), side by side in one run against one Fixturebook
# (`oncepost fixtures serve`), SQLite store. Rounds alternate the three so they see the same machine load.
#
# A worker batch: POSTS intents of one account are submitted, then one `oncepost worker --concurrency 1` runs
# them. Per post: the median gap between consecutive posts' `published` times in the store (the steady state:
# take, look before writing, compose, authorize, send, read back, settle), and the whole batch (worker start to
# the last `published`) / POSTS. Goal (issue 12): warm per post <= 0.3x Playwright's whole process. A reference
# line times plain Playwright warm too (scripts/bench/publish-playwright-warm.js: browser and login kept).
# Usage: scripts/bench-warm.sh [ROUNDS] [POSTS]   (needs node + npm, python3). BENCH_PROFILE=debug for debug;
# BENCH_BIN=PATH times that oncepost binary and builds nothing (two builds side by side: alternate runs).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-3}"
POSTS="${2:-8}"
BENCH=scripts/bench
if [ ! -d "$BENCH/node_modules/playwright-core" ]; then
  (cd "$BENCH" && npm install --no-save --no-audit --no-fund playwright-core@1 >/dev/null)
fi
PROFILE="${BENCH_PROFILE:-release}"
if [ -n "${BENCH_BIN:-}" ]; then
  BIN="$BENCH_BIN"
else
  if [ "$PROFILE" = release ]; then cargo build --release --locked --quiet; else cargo build --locked --quiet; fi
  BIN="target/$PROFILE/oncepost"
fi
exec python3 - "$BIN" "$ROUNDS" "$POSTS" "$BENCH" <<'PY'
import json, os, signal, statistics, subprocess, sys, tempfile, time, uuid
binary, rounds, posts, bench = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
data = tempfile.mkdtemp(prefix="oncepost-bench-warm-")
env = dict(os.environ, ONCEPOST_HOME=data)
def load():
    return open("/proc/loadavg").read().split()[0]
def run(args, **kw):
    return subprocess.run([binary] + args, env=env, check=True, capture_output=True, text=True, **kw).stdout
server = subprocess.Popen([binary, "fixtures", "serve", "--json"], env=env, stdout=subprocess.PIPE, text=True)
try:
    base = json.loads(server.stdout.readline())["base_url"]
    run(["accounts", "add", "bench", "--platform", "fixture", "--dup-window", "0s", "--handle", "bench"])
    # Log the profile in once (the queued publishes use the session it keeps).
    run(["publish", "--contract", "selectors/fixture.toml", "--account", "bench", "--base-url", base,
         "--login-url", f"{base}/login?account=bench", "--text", f"login {uuid.uuid4()}", "--json"])
    def batch(warm):
        keys = []
        for i in range(posts):
            out = run(["submit", "--json", "--contract", "selectors/fixture.toml", "--account", "bench",
                       "--base-url", base, "--text", f"bench worker {warm} {i} {uuid.uuid4()}"])
            keys.append(json.loads(out)["key"])
        t0 = time.time()
        w = subprocess.Popen([binary, "worker", "--interval", "30s", "--poll", "50ms", "--concurrency", "1",
                              "--warm-browsers", "4" if warm else "0"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for k in keys:
                subprocess.run([binary, "wait", k, "--timeout", "300s"], env=env, check=True,
                               stdout=subprocess.DEVNULL)
        finally:
            w.send_signal(signal.SIGTERM); w.wait(timeout=60)
        at = []
        for k in keys:
            shown = json.loads(run(["intents", "show", "--json", k]))
            if shown["intent"]["state"] != "published":
                sys.exit(f"{k} ended {shown['intent']['state']}")
            at.append(max(e["at"] for e in shown["events"] if e["kind"] == "published") / 1000)
        at.sort()
        gaps = [b - a for a, b in zip(at, at[1:])]
        return statistics.median(gaps), (at[-1] - t0) / posts
    def playwright(chromium=None):
        e = dict(os.environ, BENCH_PLAYWRIGHT_CHROMIUM=chromium) if chromium else os.environ
        t0 = time.monotonic()
        subprocess.run(["node", f"{bench}/publish-playwright.js", base, f"bench playwright {uuid.uuid4()}"],
                       check=True, stdout=subprocess.DEVNULL, env=e)
        return time.monotonic() - t0
    # Playwright runs the Chromium oncepost picks (scripts/bench/browser.js); when that is the headless shell,
    # a reference line also times Playwright on the full /usr/bin/chromium (if installed).
    same = subprocess.run(["node", "-e", "console.log(require('./browser').executablePath())"], cwd=bench,
                          check=True, capture_output=True, text=True).stdout.strip()
    full = "/usr/bin/chromium" if same != "/usr/bin/chromium" and os.access("/usr/bin/chromium", os.X_OK) else None
    def playwright_warm():
        out = subprocess.run(["node", f"{bench}/publish-playwright-warm.js", base, str(posts)], check=True,
                             capture_output=True, text=True).stdout
        return json.loads(out)["median_ms"] / 1000
    playwright()  # warm-up (page cache, npm module load), not counted
    pw, pw_full, pw_warm, warm, cold = [], [], [], [], []
    for r in range(rounds):
        l0 = load()
        pw += [playwright() for _ in range(3)]
        if full:
            pw_full += [playwright(full) for _ in range(3)]
        pw_warm.append(playwright_warm())
        warm.append(batch(True))
        cold.append(batch(False))
        print(f"round {r+1}: load {l0} -> {load()}  warm gap {warm[-1][0]*1000:.0f} ms, batch/post "
              f"{warm[-1][1]*1000:.0f} ms; cold gap {cold[-1][0]*1000:.0f} ms, batch/post {cold[-1][1]*1000:.0f} ms; "
              f"playwright {', '.join(f'{x*1000:.0f}' for x in pw[-3:])} ms, warm loop {pw_warm[-1]*1000:.0f} ms", flush=True)
    mp = statistics.median(pw)
    wg, wb = statistics.median(x[0] for x in warm), statistics.median(x[1] for x in warm)
    cg, cb = statistics.median(x[0] for x in cold), statistics.median(x[1] for x in cold)
    print(f"binary: {binary}   rounds: {rounds}, {posts} posts per worker batch, 3 Playwright runs per round")
    print(f"playwright whole process:        median {mp*1000:.0f} ms  ({same}, as oncepost)")
    if pw_full:
        mf = statistics.median(pw_full)
        print(f"playwright on {full}: median {mf*1000:.0f} ms (reference: warm gap / it = {statistics.median(x[0] for x in warm)/mf:.2f})")
    mw = statistics.median(pw_warm)
    print(f"playwright warm loop, per post:  median {mw*1000:.0f} ms  (browser and login kept, fresh pages; "
          f"reference: {mw/mp:.2f} of its whole process)")
    print(f"warm worker, per post (gap):     median {wg*1000:.0f} ms   ratio to playwright {wg/mp:.2f}  (goal <= 0.3); "
          f"to the warm loop {wg/mw:.2f}")
    print(f"warm worker, batch / posts:      median {wb*1000:.0f} ms   ratio {wb/mp:.2f}")
    print(f"cold worker, per post (gap):     median {cg*1000:.0f} ms   ratio {cg/mp:.2f}")
    print(f"cold worker, batch / posts:      median {cb*1000:.0f} ms   ratio {cb/mp:.2f}")
    print(f"warm / cold per post: {wg/cg:.2f}")
finally:
    server.terminate(); server.wait(timeout=10)
    subprocess.run(["rm", "-rf", data])
PY
