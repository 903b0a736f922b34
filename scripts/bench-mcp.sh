#!/usr/bin/env bash
# Benchmark: the per-call overhead of MCP over the CLI, side by side in one run against one Fixturebook.
# For each round, alternating: one whole `oncepost publish --json` process, and one `publish` tool call to a
# running `oncepost mcp` (the official Python SDK, one session for the whole run, as an agent keeps it);
# then the same for a read: `oncepost intents show KEY --json` against an `intent_status` call. Prints medians
# and the difference MCP - CLI, with the load average. Needs .venv-test (scripts/setup.sh).
# Usage: scripts/bench-mcp.sh [RUNS]   (BENCH_PROFILE=release for a release build; default debug)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-7}"
PROFILE="${BENCH_PROFILE:-debug}"
FLAG=""; [ "$PROFILE" = release ] && FLAG="--release"
scripts/setup.sh
cargo build $FLAG --locked --quiet --bin oncepost
TARGET="${CARGO_TARGET_DIR:-target}"; case "$TARGET" in /*) ;; *) TARGET="$PWD/$TARGET" ;; esac
BIN="$TARGET/$PROFILE/oncepost"
.venv-test/bin/python - "$BIN" "$RUNS" <<'PY'
import asyncio, json, os, statistics, subprocess, sys, tempfile, time, uuid
from mcp import ClientSession, StdioServerParameters, stdio_client

binary, runs = sys.argv[1], int(sys.argv[2])
home = tempfile.mkdtemp(prefix="oncepost-bench-mcp-")
fb_home = tempfile.mkdtemp(prefix="oncepost-bench-fb-")
env = dict(os.environ, ONCEPOST_HOME=home)
server = subprocess.Popen([binary, "fixtures", "serve", "--json"], env=dict(os.environ, ONCEPOST_HOME=fb_home),
                          stdout=subprocess.PIPE, text=True)

def cli(args):
    t0 = time.monotonic()
    p = subprocess.run([binary] + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return time.monotonic() - t0, p

async def main():
    base = json.loads(server.stdout.readline())["base_url"]
    subprocess.run([binary, "accounts", "add", "bench", "--platform", "fixture", "--handle", "bench"], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    common = ["--contract", "selectors/fixture.toml", "--account", "bench", "--base-url", base,
              "--login-url", f"{base}/login?account=bench"]
    params = StdioServerParameters(command=binary, args=["mcp"], env={"ONCEPOST_HOME": home,
                                                                      "PATH": os.environ["PATH"]})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            async def tool(name, arguments):
                t0 = time.monotonic()
                r = await session.call_tool(name, arguments)
                return time.monotonic() - t0, r
            t = {k: [] for k in ("cli publish", "mcp publish", "cli status", "mcp status")}
            # Warm-up, not counted.
            cli(["publish", "--json", "--text", f"warm {uuid.uuid4()}"] + common)
            await tool("publish", {"contract": "selectors/fixture.toml", "account": "bench", "base_url": base,
                                   "login_url": f"{base}/login?account=bench", "text": f"warm {uuid.uuid4()}"})
            load = [os.getloadavg()[0]]
            for i in range(runs):
                w, p = cli(["publish", "--json", "--text", f"cli {i} {uuid.uuid4()}"] + common)
                assert json.loads(p.stdout)["state"] == "published", p.stdout[:300]
                t["cli publish"].append(w)
                key = json.loads(p.stdout)["key"]
                w, r = await tool("publish", {"contract": "selectors/fixture.toml", "account": "bench",
                                              "base_url": base, "login_url": f"{base}/login?account=bench",
                                              "text": f"mcp {i} {uuid.uuid4()}"})
                assert r.structured_content["state"] == "published", r.structured_content
                t["mcp publish"].append(w)
                w, p = cli(["intents", "show", key, "--json"])
                assert p.returncode == 0
                t["cli status"].append(w)
                w, r = await tool("intent_status", {"key": key})
                assert not r.is_error
                t["mcp status"].append(w)
                load.append(os.getloadavg()[0])
    print(f"binary: {binary}\nruns: {runs} each, alternating, after one warm-up; MCP: one session for the run")
    print(f"load average (1 min) during the run: {min(load):.1f}-{max(load):.1f} on {os.cpu_count()} cores")
    for k, v in t.items():
        print(f"{k:12} median {statistics.median(v)*1000:7.0f} ms  [{', '.join(f'{x*1000:.0f}' for x in v)}]")
    for what in ("publish", "status"):
        c, m = statistics.median(t[f"cli {what}"]), statistics.median(t[f"mcp {what}"])
        print(f"{what:8} MCP - CLI: {(m-c)*1000:+.0f} ms per call (ratio {m/c:.3f})")

try:
    asyncio.run(main())
finally:
    server.terminate(); server.wait(timeout=10)
    subprocess.run(["rm", "-rf", home, fb_home])
PY
