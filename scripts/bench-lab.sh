#!/usr/bin/env bash
# Benchmark on the real-app lab: one whole `oncepost publish` process (browser launch included) against a plain
# Playwright script (scripts/bench/lab-playwright.js: npm playwright-core, the same system Chromium, the same
# logged-in cookies) doing the same compose, fill, click, wait and read-back with no durability, alternated in
# one run against the same private DokuWiki and WordPress (scripts/lab-*.sh). Prints medians with min/max, the
# ratio (goal <= 0.7) and oncepost's own peak RSS (VmHWM; Chromium excluded; goal < 40 MB).
# Usage: scripts/bench-lab.sh [RUNS] [dokuwiki|wordpress ...]   (release build; BENCH_PROFILE=debug for debug;
#        BENCH_PUBLISH_ARGS="--no-look-before-write" adds arguments to every oncepost publish)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-7}"
shift || true
APPS="${*:-dokuwiki wordpress}"
BENCH=scripts/bench
if [ ! -d "$BENCH/node_modules/playwright-core" ]; then
  (cd "$BENCH" && npm install --no-save --no-audit --no-fund playwright-core@1 >/dev/null)
fi
PROFILE="${BENCH_PROFILE:-release}"
if [ "$PROFILE" = release ]; then cargo build --release --locked --quiet; else cargo build --locked --quiet; fi
BIN="target/$PROFILE/oncepost"
exec python3 - "$BIN" "$RUNS" "$BENCH" $APPS <<'PY'
import http.cookiejar, json, os, statistics, subprocess, sys, tempfile, time, urllib.parse, urllib.request, uuid
binary, runs, bench, apps = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
print(f"binary: {binary}   runs: {runs} per side, alternated, after one warm-up each   load: {os.getloadavg()[0]:.2f}"
      f"   publish args: {os.environ.get('BENCH_PUBLISH_ARGS', '') or '-'}")

class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k): return None

def login(app, base, user):
    """The app's login form, as a person would post it once; the cookies as CDP cookie objects."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)
    def post(url, fields, cookie=None):
        req = urllib.request.Request(url, data=urllib.parse.urlencode(fields).encode())
        if cookie: req.add_header("Cookie", cookie)
        try: opener.open(req)
        except urllib.error.HTTPError as e:
            if e.code != 302: raise
    if app == "dokuwiki":
        opener.open(f"{base}/doku.php?id=start&do=login").read()
        post(f"{base}/doku.php?id=start", {"u": user, "p": "lab-password", "r": "1", "do": "login", "id": "start", "sectok": ""})
    else:
        post(f"{base}/wp-login.php", {"log": user, "pwd": "lab-password", "rememberme": "forever", "wp-submit": "Log In",
             "testcookie": "1"}, cookie="wordpress_test_cookie=WP%20Cookie%20check")
    exp = int(time.time()) + 86400
    cookies = [{"name": c.name, "value": c.value, "domain": "127.0.0.1", "path": c.path, "expires": exp, "httpOnly": True} for c in jar]
    if app == "wordpress":
        cookies.append({"name": "wordpress_test_cookie", "value": "WP%20Cookie%20check", "domain": "127.0.0.1", "path": "/", "expires": exp})
    return cookies

def stats(xs): return f"median {statistics.median(xs)*1000:.0f} ms (min {min(xs)*1000:.0f}, max {max(xs)*1000:.0f})"

for app in apps:
    labdir = f"/tmp/oncepost-bench-{app}-{uuid.uuid4().hex[:8]}"
    base = subprocess.run([f"scripts/lab-{app}.sh", "start", labdir], check=True, capture_output=True, text=True).stdout.strip()
    data = tempfile.mkdtemp(prefix="oncepost-bench-")
    env = dict(os.environ, ONCEPOST_HOME=data)
    contract = f"selectors/{app}.toml"
    try:
        cookies = login(app, base, "oncepost")
        cfile = os.path.join(data, "cookies.json")
        with open(cfile, "w") as f: json.dump(cookies, f)
        subprocess.run([binary, "accounts", "add", "bench", "--platform", app, "--handle", "oncepost", "--dup-window", "0s"],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        field = "page" if app == "dokuwiki" else "title"
        def name(i): return f"bench:p{i}{uuid.uuid4().hex[:8]}" if app == "dokuwiki" else f"Bench {i} {uuid.uuid4().hex[:8]}"
        subprocess.run([binary, "probe", "--contract", contract, "--base-url", base, "--account", "bench", "--cookies", cfile,
                        "--field", f"{field}={name('login')}", "--observe-ms", "0"] if app == "dokuwiki" else
                       [binary, "probe", "--contract", contract, "--base-url", base, "--account", "bench", "--cookies", cfile,
                        "--observe-ms", "0"], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        def run_oncepost(i):
            text = f"bench oncepost {i} {uuid.uuid4().hex}"
            t0 = time.monotonic()
            p = subprocess.Popen([binary, "publish", "--contract", contract, "--account", "bench", "--base-url", base,
                                  "--field", f"{field}={name(i)}", "--text", text, "--json"]
                                 + os.environ.get("BENCH_PUBLISH_ARGS", "").split(),
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            hwm = 0
            while p.poll() is None:
                try:
                    with open(f"/proc/{p.pid}/status") as f:
                        for line in f:
                            if line.startswith("VmHWM:"): hwm = max(hwm, int(line.split()[1]))
                except (FileNotFoundError, ProcessLookupError): pass
                time.sleep(0.01)
            out, err = p.communicate()
            wall = time.monotonic() - t0
            rep = json.loads(out) if out.strip() else {}
            if p.returncode != 0 or rep.get("state") != "published":
                sys.exit(f"oncepost publish failed on {app}: exit {p.returncode}, {out[:300]} {err[-500:]}")
            steps = {s["step"]: s["took_ms"] for s in rep.get("steps", [])}
            return wall, hwm / 1024, steps
        def run_playwright(i):
            t0 = time.monotonic()
            subprocess.run(["node", f"{bench}/lab-playwright.js", app, base, cfile, name(i), f"bench playwright {i} {uuid.uuid4().hex}"],
                           check=True, stdout=subprocess.DEVNULL)
            return time.monotonic() - t0
        run_oncepost("w"); run_playwright("w")
        once, pw, rss, steps = [], [], [], []
        for i in range(runs):
            w, r, s = run_oncepost(i); once.append(w); rss.append(r); steps.append(s)
            pw.append(run_playwright(i))
        mo, mp = statistics.median(once), statistics.median(pw)
        print(f"\n{app} at {base}   load now {os.getloadavg()[0]:.2f}")
        print(f"  oncepost publish (whole process): {stats(once)}")
        print(f"  playwright same flow, no durability: {stats(pw)}")
        print(f"  ratio oncepost/playwright (medians): {mo/mp:.3f}   (goal <= 0.7)")
        print(f"  oncepost peak RSS (VmHWM, Chromium excluded): max {max(rss):.1f} MB   (goal < 40 MB)")
        print("  where oncepost's time goes (median ms per step):")
        for k in steps[0]:
            print(f"    {k:45s} {statistics.median(s.get(k, 0) for s in steps):7.0f}")
    finally:
        subprocess.run([f"scripts/lab-{app}.sh", "stop", labdir])
        subprocess.run(["rm", "-rf", data])
PY
