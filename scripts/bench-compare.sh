#!/usr/bin/env bash
# Benchmark: this tree's oncepost against an earlier revision's, side by side in one run: a whole
# `oncepost probe --fill` process and a whole `oncepost publish` process (bundled contract, one Fixturebook
# served by this tree), alternating old and new so both see the same machine load. Prints medians and the
# ratio new/old for each (the goal of a change that is not about speed: within 1.10), with the load average.
# Usage: scripts/bench-compare.sh OLD_REV [RUNS]   (BENCH_PROFILE=release for release builds; default debug)
set -euo pipefail
cd "$(dirname "$0")/.."
OLD_REV="${1:?usage: scripts/bench-compare.sh OLD_REV [RUNS]}"
RUNS="${2:-5}"
PROFILE="${BENCH_PROFILE:-debug}"
FLAG=""; [ "$PROFILE" = release ] && FLAG="--release"
WORK="$(mktemp -d /tmp/oncepost-bench-old.XXXXXX)"
trap 'git worktree remove --force "$WORK/tree" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
git worktree add --detach "$WORK/tree" "$OLD_REV" >/dev/null
OLD_TARGET="${BENCH_OLD_TARGET:-target/bench-old}"
(cd "$WORK/tree" && CARGO_TARGET_DIR="$OLDPWD/$OLD_TARGET" cargo build $FLAG --locked --quiet --bin oncepost)
cargo build $FLAG --locked --quiet --bin oncepost
TARGET="${CARGO_TARGET_DIR:-target}"; case "$TARGET" in /*) ;; *) TARGET="$PWD/$TARGET" ;; esac
NEW="$TARGET/$PROFILE/oncepost"
OLD="$PWD/$OLD_TARGET/$PROFILE/oncepost"
python3 - "$OLD" "$NEW" "$RUNS" "$OLD_REV" <<'PY'
import json, os, statistics, subprocess, sys, tempfile, time, uuid
old, new, runs, old_rev = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
homes = {b: tempfile.mkdtemp(prefix="oncepost-bench-") for b in (old, new)}
fb_home = tempfile.mkdtemp(prefix="oncepost-bench-fb-")
server = subprocess.Popen([new, "fixtures", "serve", "--json"], env=dict(os.environ, ONCEPOST_HOME=fb_home),
                          stdout=subprocess.PIPE, text=True)
def env(b):
    return dict(os.environ, ONCEPOST_HOME=homes[b], ONCEPOST_GUARD_BIN=b)
try:
    base = json.loads(server.stdout.readline())["base_url"]
    for b in (old, new):
        subprocess.run([b, "accounts", "add", "bench", "--platform", "fixture", "--dup-window", "0s"],
                       env=env(b), check=True, stdout=subprocess.DEVNULL)
    def timed(b, args):
        t0 = time.monotonic()
        p = subprocess.run([b] + args, env=env(b), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return time.monotonic() - t0, p
    def probe(b):
        w, p = timed(b, ["probe", "--contract", "selectors/fixture.toml", "--base-url", base, "--account", "bench",
                         "--fill", "bench probe text", "--json"])
        if p.returncode != 0:
            sys.exit(f"{b} probe failed: exit {p.returncode}: {p.stdout[:300]} {p.stderr[-300:]}")
        return w
    def publish(b, text):
        w, p = timed(b, ["publish", "--contract", "selectors/fixture.toml", "--account", "bench", "--base-url", base,
                         "--login-url", f"{base}/login?account=bench", "--text", text, "--json"])
        state = json.loads(p.stdout)["state"] if p.stdout.strip() else "?"
        if p.returncode != 0 or state != "published":
            sys.exit(f"{b} publish failed: exit {p.returncode}, {p.stdout[:300]} {p.stderr[-300:]}")
        return w
    for b in (old, new):  # warm-up, not counted
        probe(b); publish(b, f"warm-up {uuid.uuid4()}")
    t = {(k, b): [] for k in ("probe", "publish") for b in (old, new)}
    load = [os.getloadavg()[0]]
    for i in range(runs):
        for b in ((old, new) if i % 2 == 0 else (new, old)):
            t[("probe", b)].append(probe(b))
            t[("publish", b)].append(publish(b, f"bench {i} {uuid.uuid4()}"))
        load.append(os.getloadavg()[0])
    print(f"old: {old_rev} ({old})\nnew: this tree ({new})\nruns: {runs} each, alternating, after one warm-up")
    print(f"load average (1 min) during the run: {min(load):.1f}-{max(load):.1f} on {os.cpu_count()} cores")
    for k in ("probe", "publish"):
        mo, mn = statistics.median(t[(k, old)]), statistics.median(t[(k, new)])
        fmt = lambda xs: ", ".join(f"{x:.2f}" for x in xs)
        print(f"{k:8} old median {mo:.2f} s [{fmt(t[(k, old)])}]")
        print(f"{k:8} new median {mn:.2f} s [{fmt(t[(k, new)])}]")
        print(f"{k:8} ratio new/old {mn/mo:.3f}  (goal <= 1.10)")
finally:
    server.terminate(); server.wait(timeout=10)
    for d in list(homes.values()) + [fb_home]:
        subprocess.run(["rm", "-rf", d])
PY
