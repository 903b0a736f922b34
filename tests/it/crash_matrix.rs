//! The crash matrix: every failpoint (src/failpoint.rs) against every create-request fault that leaves a
//! publisher unsure, through the real binary and real Chromium against the in-process Fixturebook platform.
//!
//! One cell = one fresh data dir, one fresh platform with the fault, one unique text, two rounds:
//! - round 1 with `ONCEPOST_FAILPOINT=<point>` on every command: `publish`, wait for any lease to run out,
//!   `sweep`, wait out the contract's propagation window, `reconcile --due`;
//! - round 2 without it: the same `publish` command again, the same sweep and reconcile.
//!
//! After every command the cell records how it ended (exit code, or SIGKILL = the point fired), the intent's
//! state, and what the platform's server saw (create requests that arrived, copies of the text). Then it
//! checks: at most one copy and at most one create request; no create request after the intent was ever
//! indeterminate or parked; the final state and copy count the state table (docs/states.md) predicts
//! ([`expected`]); nothing lost (one intent, in a declared resting state, its timeline replays, every
//! attempt has its `begun` event); a rerun of an intent that is no longer pending presses nothing.
//!
//! `matrix_every_failpoint_against_every_fault` runs all 40 cells and prints the matrix;
//! `random_trials` runs `ONCEPOST_CRASH_TRIALS` (default 3) random cells from a printed seed
//! (`ONCEPOST_CRASH_SEED` replays one). At most `ONCEPOST_CRASH_JOBS` (default 2) cells run at once
//! across both tests. See docs/crash-matrix.md.
use std::collections::BTreeSet;
use std::fmt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use oncepost::failpoint::FailPoint;
use oncepost::fixture_platform::{
    Fault, FaultMode, FixtureConfig, FixturePlatform, RunningPlatform,
};
use serde_json::Value;

use crate::kit;

const BIN: &str = env!("CARGO_BIN_EXE_oncepost");

/// The fault modes of the matrix: normal, and every fault after which nobody knows whether the post went out.
const FAULTS: [FaultMode; 5] = [
    FaultMode::Normal,
    FaultMode::CommitThen500,
    FaultMode::CommitThenDrop,
    FaultMode::CommitThenDelay,
    FaultMode::ResetBeforeRead,
];

/// commit-then-delay holds its answer this long; the publish bounds the create request below it.
const DELAY_MS: u64 = 4_000;
/// `publish --request-timeout` for commit-then-delay cells (shorter than the delay: the answer never comes).
const REQUEST_TIMEOUT: &str = "1s";
/// Pre-authorization claim: must cover filling the compose page and checking the control (begin ->
/// authorize) on a loaded 2-core machine. A cell that crashed before authorization waits for it once.
const CLAIM_LEASE: &str = "4s";
/// Dispatch lease. The test never sweeps while a publish runs (commands run one after another), so it
/// only decides how long a cell waits after a crash past authorization before the sweep may act.
const DISPATCH_LEASE: &str = "3s";
/// `reconcile --lookup-timeout`; the store gives an interrupted lookup this plus 2 s before sweep parks it.
/// The bound covers launching Chromium for the lookup (one per lookup) and the search: measured 2.8-3.9 s
/// per lookup with two cells at once on the 2-core machine, so 4 s made lookups "unavailable" (parked
/// with the post on the platform). A lookup that does not run is a failed cell, never a silent pass.
const LOOKUP_TIMEOUT: &str = "15s";
/// Waits past a store deadline by this much (the binary reads the clock a moment after we do).
const MARGIN_MS: i64 = 250;
/// Bound on any one command (a hung command is a finding, not a reason to hang the suite).
const COMMAND_BOUND: Duration = Duration::from_secs(180);

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The fixture contract's propagation window: reconcile --due skips an intent until it has passed.
fn propagation_ms() -> i64 {
    let text = std::fs::read_to_string(repo("selectors/fixture.toml")).expect("fixture contract");
    let v: toml::Value = toml::from_str(&text).expect("fixture contract parses");
    v["readback"]["propagation_ms"]
        .as_integer()
        .expect("readback.propagation_ms")
}

// ---------------------------------------------------------------------------------------------------
// The expected table (docs/states.md, docs/crash-matrix.md)
// ---------------------------------------------------------------------------------------------------

/// What the state table predicts for a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Expected {
    /// Whether the point fires in round 1 (false: "not reached", the round ends normally).
    fired: bool,
    /// Which round-1 command it kills when it fires.
    fired_in: &'static str,
    /// The intent's state at the end.
    final_state: &'static str,
    /// Copies of the text on the platform at the end.
    copies: usize,
}

/// The expected table. `stored`: the fault commits the post when the create request arrives (every mode
/// but reset-before-read, which resets the connection before reading the body).
///
/// - Before authorization (after_begin, after_compose): nothing can have left. Sweep releases the expired
///   claim; round 2 publishes under the same fault: normal -> published; commit-then-* -> indeterminate ->
///   reconcile finds it -> published; reset-before-read -> indeterminate -> not found -> parked, 0 copies.
/// - after_authorize: authorized, nothing pressed. Sweep -> indeterminate; reconcile does not find it ->
///   parked, 0 copies. Round 2 touches nothing.
/// - request_sent, after_response, during_settle: the request left (during_settle: the verdict was being
///   written, not committed). Sweep -> indeterminate; reconcile: found -> published, not found -> parked.
/// - during_readback: reached only when a success signal was seen (normal); then as above. Under the other
///   faults the publish ends indeterminate by itself and reconcile settles it.
/// - during_reconcile: reached only when a reconcile runs (every fault but normal, whose publish is
///   published). The lookup is spent and recorded; sweep parks it once its lookup lease runs out. Parked,
///   with the copy the fault stored (if any).
fn expected(point: FailPoint, fault: FaultMode) -> Expected {
    let stored = fault != FaultMode::ResetBeforeRead;
    let settled_by_lookup = if stored {
        ("published", 1)
    } else {
        ("parked", 0)
    };
    let (fired, fired_in, (final_state, copies)) = match point {
        FailPoint::AfterBegin | FailPoint::AfterCompose => (true, "publish", settled_by_lookup),
        FailPoint::AfterAuthorize => (true, "publish", ("parked", 0)),
        FailPoint::RequestSent | FailPoint::AfterResponse | FailPoint::DuringSettle => {
            (true, "publish", settled_by_lookup)
        }
        FailPoint::DuringReadback => (fault == FaultMode::Normal, "publish", settled_by_lookup),
        FailPoint::DuringReconcile => {
            if fault == FaultMode::Normal {
                (false, "reconcile", ("published", 1))
            } else {
                (true, "reconcile", ("parked", usize::from(stored)))
            }
        }
    };
    Expected {
        fired,
        fired_in,
        final_state,
        copies,
    }
}

/// The WebSocket row: the click opens a WebSocket the door refuses, so no create request ever comes and
/// nothing reaches the platform. A crash before authorization leaves a claim that round 2 takes over; from
/// the press on, the refused channel is doubt (indeterminate, parked by the alarm), and a crash after
/// authorization is swept to indeterminate, which reconcile does not find: parked. Always parked, 0 copies.
/// `request_sent` and `during_readback` are never reached (no create request, no success); a publish that
/// parks leaves nothing due, so `during_reconcile` is never reached either.
fn expected_websocket(point: FailPoint) -> Expected {
    let fired = matches!(
        point,
        FailPoint::AfterBegin
            | FailPoint::AfterCompose
            | FailPoint::AfterAuthorize
            | FailPoint::AfterResponse
            | FailPoint::DuringSettle
    );
    Expected {
        fired,
        fired_in: "publish",
        final_state: "parked",
        copies: 0,
    }
}

/// The publish exit code of a state (docs/cli.md).
fn exit_of(state: &str) -> Option<i32> {
    match state {
        "published" => Some(0),
        "indeterminate" => Some(10),
        "failed" => Some(11),
        "parked" => Some(12),
        "pending" | "authorized" => Some(13),
        _ => None,
    }
}

const STATES: [&str; 6] = [
    "pending",
    "authorized",
    "published",
    "failed",
    "indeterminate",
    "parked",
];

// ---------------------------------------------------------------------------------------------------
// Running commands
// ---------------------------------------------------------------------------------------------------

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Code(i32),
    Signal(i32),
    /// It outlived [`COMMAND_BOUND`] and was killed by the test.
    TimedOut,
}

impl End {
    fn killed_by_failpoint(self) -> bool {
        self == End::Signal(libc::SIGKILL)
    }
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            End::Code(c) => write!(f, "exit {c}"),
            End::Signal(9) => write!(f, "SIGKILL"),
            End::Signal(s) => write!(f, "signal {s}"),
            End::TimedOut => write!(f, "TIMED OUT"),
        }
    }
}

struct Ran {
    end: End,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// One recorded command: how it ended and what the store and the platform held right after.
#[derive(Debug, Clone)]
struct Obs {
    round: u8,
    step: &'static str,
    end: End,
    took_ms: u128,
    state: Option<String>,
    arrivals: u64,
    copies: usize,
    /// Chromium processes of this cell still alive after the command.
    chromium_left: usize,
    /// The failpoint named by the command's stderr line `failpoint NAME: SIGKILL` (printed by
    /// src/failpoint.rs right before the kill), if any.
    failpoint_line: Option<String>,
    note: String,
}

impl fmt::Display for Obs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "r{} {:<9} {:<8} {:>6} ms  state={:<13} arrivals={} copies={} chromium_left={}{}",
            self.round,
            self.step,
            self.end.to_string(),
            self.took_ms,
            self.state.as_deref().unwrap_or("-"),
            self.arrivals,
            self.copies,
            self.chromium_left,
            if self.note.is_empty() {
                String::new()
            } else {
                format!("  {}", self.note)
            }
        )
    }
}

/// One cell's world: its data dir, its platform, its text, and everything it recorded.
/// Which store a cell's commands use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoreKind {
    /// The embedded default: `<data dir>/oncepost.db`.
    Sqlite,
    /// A fresh database on the test cluster (`ONCEPOST_TEST_PG`, or one started for this binary).
    Postgres,
}

/// The compose page a cell publishes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Page {
    /// Fixturebook's compose page (`POST /api/posts`).
    Compose,
    /// `/hostile/websocket-on-publish`: the click opens a WebSocket and publishes over it. Behind the door
    /// nothing reaches the platform; the press is followed by doubt, never by `failed`.
    WebSocketOnPublish,
}

struct Cell {
    point: FailPoint,
    fault: FaultMode,
    page: Page,
    /// The contract every command of the cell uses.
    contract: PathBuf,
    /// `ONCEPOST_STORE` for every command (None: the SQLite default in the data dir).
    store_url: Option<String>,
    dir: tempfile::TempDir,
    platform: RunningPlatform,
    text: String,
    propagation_ms: i64,
    log: Vec<Obs>,
    /// Problems met while running (a command that could not be run or read); reported as failures.
    trouble: Vec<String>,
    /// The last round-2 publish JSON.
    round2_publish: Option<Value>,
    /// The intent's state right before round 2.
    state_before_round2: Option<String>,
    arrivals_before_round2: u64,
}

impl Cell {
    async fn start(point: FailPoint, fault: FaultMode, kind: StoreKind, page: Page) -> Cell {
        let dir = tempfile::tempdir().expect("temp dir");
        let contract = match page {
            Page::Compose => repo("selectors/fixture.toml"),
            Page::WebSocketOnPublish => {
                let c = std::fs::read_to_string(repo("selectors/fixture.toml")).expect("contract");
                let c = c.replace(
                    "url = \"{base_url}/compose\"",
                    "url = \"{base_url}/hostile/websocket-on-publish\"",
                );
                let path = dir.path().join("websocket-on-publish.toml");
                std::fs::write(&path, c).expect("write contract");
                path
            }
        };
        let mut cfg = FixtureConfig::new(dir.path().join("platform"));
        cfg.fault = Fault::new(fault).with_delay_ms(DELAY_MS);
        let platform = FixturePlatform::start(cfg).await.expect("platform starts");
        let text = format!(
            "crash matrix {} {} {}",
            point.name(),
            fault.label(),
            uuid::Uuid::new_v4().simple()
        );
        let store_url = match kind {
            StoreKind::Sqlite => None,
            StoreKind::Postgres => Some(kit::fresh_pg_url()),
        };
        let mut cell = Cell {
            point,
            fault,
            page,
            contract,
            store_url,
            dir,
            platform,
            text,
            propagation_ms: propagation_ms(),
            log: Vec::new(),
            trouble: Vec::new(),
            round2_publish: None,
            state_before_round2: None,
            arrivals_before_round2: 0,
        };
        let r = cell
            .run(
                &[
                    "accounts",
                    "add",
                    "alice",
                    "--platform",
                    "fixture",
                    "--handle",
                    "alice",
                ],
                None,
            )
            .await;
        if r.end != End::Code(0) {
            cell.trouble.push(format!(
                "accounts add: {}: {} {}",
                r.end, r.stdout, r.stderr
            ));
        }
        cell
    }

    fn home(&self) -> &Path {
        self.dir.path()
    }

    async fn run(&self, args: &[&str], failpoint: Option<FailPoint>) -> Ran {
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.args(args)
            .env("ONCEPOST_HOME", self.home())
            .env("ONCEPOST_CLAIM_LEASE", CLAIM_LEASE)
            .env("ONCEPOST_DISPATCH_LEASE", DISPATCH_LEASE)
            .env_remove("ONCEPOST_STORE")
            .env_remove("ONCEPOST_BASE_URL")
            .kill_on_drop(true);
        if let Some(url) = &self.store_url {
            cmd.env("ONCEPOST_STORE", url);
        }
        match failpoint {
            Some(p) => cmd.env("ONCEPOST_FAILPOINT", p.name()),
            None => cmd.env_remove("ONCEPOST_FAILPOINT"),
        };
        let t0 = Instant::now();
        let out = match kit::cli::output_within(cmd, COMMAND_BOUND).await {
            Ok(out) => out,
            Err(why) => {
                return Ran {
                    end: End::TimedOut,
                    stdout: String::new(),
                    stderr: format!("{args:?} outlived {COMMAND_BOUND:?}: {why}"),
                    took: t0.elapsed(),
                };
            }
        };
        let end = match (out.status.code(), out.status.signal()) {
            (Some(c), _) => End::Code(c),
            (None, Some(s)) => End::Signal(s),
            (None, None) => End::Code(-1),
        };
        Ran {
            end,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            took: t0.elapsed(),
        }
    }

    /// The publish command of this cell (the same in both rounds).
    async fn publish(&self, failpoint: Option<FailPoint>) -> Ran {
        let base = self.platform.base_url();
        let login = format!("{base}/login?account=alice");
        let contract = self.contract.to_string_lossy().into_owned();
        let mut args = vec![
            "publish",
            "--json",
            "--contract",
            &contract,
            "--account",
            "alice",
            "--base-url",
            &base,
            "--login-url",
            &login,
            "--text",
            &self.text,
        ];
        if self.fault == FaultMode::CommitThenDelay {
            args.extend_from_slice(&["--request-timeout", REQUEST_TIMEOUT]);
        }
        self.run(&args, failpoint).await
    }

    async fn reconcile(&self, failpoint: Option<FailPoint>) -> Ran {
        let base = self.platform.base_url();
        let contract = self.contract.to_string_lossy().into_owned();
        self.run(
            &[
                "reconcile",
                "--due",
                "--json",
                "--contract",
                &contract,
                "--base-url",
                &base,
                "--lookup-timeout",
                LOOKUP_TIMEOUT,
            ],
            failpoint,
        )
        .await
    }

    /// `intents list --json` (every intent of this cell's store).
    async fn intents(&self) -> Result<Vec<Value>, String> {
        let r = self.run(&["intents", "list", "--json"], None).await;
        if r.end != End::Code(0) {
            return Err(format!("intents list: {}: {}", r.end, r.stderr.trim()));
        }
        match serde_json::from_str::<Value>(&r.stdout) {
            Ok(Value::Array(a)) => Ok(a),
            _ => Err(format!("intents list printed no JSON array: {}", r.stdout)),
        }
    }

    /// The one intent's key, once it exists.
    async fn key(&self) -> Option<String> {
        self.intents()
            .await
            .ok()?
            .first()
            .and_then(|i| i["key"].as_str().map(String::from))
    }

    /// `intents show KEY --json`: the intent, its attempts and its timeline (replayed by the store on read).
    async fn show(&self, key: &str) -> Result<Value, String> {
        let r = self.run(&["intents", "show", key, "--json"], None).await;
        if r.end != End::Code(0) {
            return Err(format!(
                "intents show: {}: {}{}",
                r.end,
                r.stdout.trim(),
                r.stderr.trim()
            ));
        }
        serde_json::from_str(&r.stdout).map_err(|e| format!("intents show: bad JSON ({e})"))
    }

    fn copies(&self) -> usize {
        self.platform
            .posts()
            .iter()
            .filter(|p| p.text == self.text)
            .count()
    }

    fn arrivals(&self) -> u64 {
        self.platform.stats().create_arrivals
    }

    /// Record one command with the state and the platform right after it.
    async fn observe(&mut self, round: u8, step: &'static str, r: &Ran) {
        // The state as the row says (intents list); intents show replays the timeline against the state
        // table on every read, and a history that does not replay is a failure of its own.
        let (state, key) = match self.intents().await {
            Ok(list) => (
                list.first()
                    .and_then(|i| i["state"].as_str().map(String::from)),
                list.first()
                    .and_then(|i| i["key"].as_str().map(String::from)),
            ),
            Err(e) => {
                self.trouble.push(format!("after r{round} {step}: {e}"));
                (None, None)
            }
        };
        if let Some(k) = key
            && let Err(e) = self.show(&k).await
        {
            self.trouble.push(format!("after r{round} {step}: {e}"));
        }
        let mut note = what_it_said(step, &r.stdout);
        if !matches!(r.end, End::Code(0)) {
            // Keep the last line of stderr of anything that did not end plainly: it says why.
            if let Some(l) = r.stderr.lines().rev().find(|l| !l.trim().is_empty()) {
                note.push_str(&l.trim().chars().take(160).collect::<String>());
            }
        }
        if r.end == End::TimedOut {
            self.trouble
                .push(format!("r{round} {step} outlived {COMMAND_BOUND:?}"));
        }
        self.log.push(Obs {
            round,
            step,
            end: r.end,
            took_ms: r.took.as_millis(),
            state,
            arrivals: self.arrivals(),
            copies: self.copies(),
            chromium_left: chromium_of(self.home()).len(),
            failpoint_line: failpoint_line(&r.stderr),
            note,
        });
    }

    /// Sleep until every lease the store holds on the intent (claim, dispatch, lookup) has run out.
    async fn wait_for_leases(&mut self) {
        let Some(key) = self.key().await else { return };
        let Ok(v) = self.show(&key).await else { return };
        let it = &v["intent"];
        let until = [&it["lease_expires_at"], &it["lookup_expires_at"]]
            .iter()
            .filter_map(|t| t.as_i64())
            .max();
        if let Some(until) = until {
            sleep_until_ms(until + MARGIN_MS).await;
        }
    }

    /// Sleep until an indeterminate intent is past the contract's propagation window (reconcile --due
    /// skips it before that).
    async fn wait_for_propagation(&mut self) {
        let Some(key) = self.key().await else { return };
        let Ok(v) = self.show(&key).await else { return };
        let it = &v["intent"];
        if it["state"] == "indeterminate"
            && let Some(updated) = it["updated_at"].as_i64()
        {
            sleep_until_ms(updated + self.propagation_ms + MARGIN_MS).await;
        }
    }

    /// One round: publish, (leases run out) sweep, (propagation passes) reconcile --due.
    async fn round(&mut self, round: u8, failpoint: Option<FailPoint>) {
        let r = self.publish(failpoint).await;
        if round == 2 {
            self.round2_publish = serde_json::from_str(&r.stdout).ok();
        }
        self.observe(round, "publish", &r).await;
        self.wait_for_leases().await;
        let r = self.run(&["sweep", "--json"], failpoint).await;
        self.observe(round, "sweep", &r).await;
        self.wait_for_propagation().await;
        let r = self.reconcile(failpoint).await;
        self.observe(round, "reconcile", &r).await;
    }

    async fn run_both_rounds(&mut self) {
        if !self.trouble.is_empty() {
            return;
        }
        self.round(1, Some(self.point)).await;
        self.state_before_round2 = self.log.last().and_then(|o| o.state.clone());
        self.arrivals_before_round2 = self.arrivals();
        self.round(2, None).await;
    }
}

/// The point a failpoint's last words name: src/failpoint.rs writes `failpoint NAME: SIGKILL` on stderr just
/// before it kills the process, so a SIGKILL without that line (or naming another point) came from elsewhere.
fn failpoint_line(stderr: &str) -> Option<String> {
    stderr.lines().rev().find_map(|l| {
        l.trim()
            .strip_prefix("failpoint ")?
            .strip_suffix(": SIGKILL")
            .map(String::from)
    })
}

/// One line of what a command printed on stdout: publish's summary and whether it pressed, sweep's moves,
/// each reconcile lookup's result.
fn what_it_said(step: &str, stdout: &str) -> String {
    match step {
        "publish" => match serde_json::from_str::<Value>(stdout) {
            Ok(v) => format!(
                "pressed={}{} {}; ",
                v["pressed"],
                claim_held(&v)
                    .map(|ms| format!(" (begun -> ready to authorize: {ms} ms)"))
                    .unwrap_or_default(),
                v["summary"]
                    .as_str()
                    .unwrap_or("")
                    .chars()
                    .take(160)
                    .collect::<String>()
            ),
            Err(_) => String::new(),
        },
        "sweep" => match serde_json::from_str::<Value>(stdout) {
            Ok(v) => {
                let n = |k: &str| v[k].as_array().map_or(0, |a| a.len());
                let (a, b, c) = (
                    n("made_indeterminate"),
                    n("claims_released"),
                    n("lookups_interrupted"),
                );
                if a + b + c == 0 {
                    String::new()
                } else {
                    format!("made indeterminate {a}, claims released {b}, lookups parked {c}; ")
                }
            }
            Err(_) => String::new(),
        },
        "reconcile" => stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|v| {
                if let Some(skip) = v["skipped"].as_str() {
                    return format!("skipped: {skip}; ");
                }
                let o = &v["outcome"];
                let what = o["result"].as_str().unwrap_or("?").to_string();
                let why = o["error"]
                    .as_str()
                    .map(|e| format!(" ({})", e.chars().take(80).collect::<String>()))
                    .unwrap_or_default();
                format!(
                    "lookup {what}{why} -> {}; ",
                    v["state"].as_str().unwrap_or("?")
                )
            })
            .collect(),
        _ => String::new(),
    }
}

/// How long this publish held its pre-authorization claim before it was ready to authorize (from its step
/// times): what `CLAIM_LEASE` must cover.
fn claim_held(v: &Value) -> Option<u64> {
    let at =
        |name: &str| v["steps"].as_array()?.iter().find(|s| s["step"] == name)?["at_ms"].as_u64();
    Some(at("evidence before dispatch")?.saturating_sub(at("begun (claim + attempt)")?))
}

async fn sleep_until_ms(at: i64) {
    let now = now_ms();
    if at > now {
        tokio::time::sleep(Duration::from_millis((at - now) as u64)).await;
    }
}

// ---------------------------------------------------------------------------------------------------
// Leftover Chromium (a SIGKILLed oncepost cannot close its browser)
// ---------------------------------------------------------------------------------------------------

fn cmdline(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(String::from_utf8_lossy(&raw).replace('\0', " "))
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses; split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Chromium processes started for this cell: their command line names the cell's data dir (the profile
/// lives under it), plus every process they started.
fn chromium_of(home: &Path) -> Vec<u32> {
    let home = home.to_string_lossy().into_owned();
    let pids = all_pids();
    let mut ours: BTreeSet<u32> = pids
        .iter()
        .copied()
        .filter(|p| {
            cmdline(*p).is_some_and(|c| {
                let argv0 = c.split(' ').next().unwrap_or("");
                argv0.contains("chrom") && c.contains(&home)
            })
        })
        .collect();
    // Their descendants (renderers, zygotes, utility processes) do not always repeat the profile path.
    loop {
        let more: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|p| !ours.contains(p) && parent_of(*p).is_some_and(|pp| ours.contains(&pp)))
            .collect();
        if more.is_empty() {
            break;
        }
        ours.extend(more);
    }
    ours.into_iter().collect()
}

/// SIGKILL this cell's leftover Chromium processes, by pid. Returns how many there were.
fn kill_leftover_chromium(home: &Path) -> usize {
    let pids = chromium_of(home);
    for pid in &pids {
        // SAFETY: kill(2) on a pid we just found running a Chromium of this cell's own data dir.
        unsafe {
            libc::kill(*pid as libc::pid_t, libc::SIGKILL);
        }
    }
    pids.len()
}

// ---------------------------------------------------------------------------------------------------
// One cell: run, then check
// ---------------------------------------------------------------------------------------------------

/// A finished cell.
struct Outcome {
    point: FailPoint,
    fault: FaultMode,
    fired: bool,
    final_state: String,
    copies: usize,
    arrivals: u64,
    failures: Vec<String>,
    log: Vec<Obs>,
    took: Duration,
    chromium_killed: usize,
}

impl Outcome {
    fn short(&self) -> String {
        format!(
            "{}{} {} {}",
            if self.failures.is_empty() { "" } else { "!" },
            if self.fired { "K" } else { "-" },
            self.final_state,
            self.copies
        )
    }

    fn detail(&self) -> String {
        let mut s = format!(
            "{} x {} ({:.1} s, expected {:?}, leftover chromium killed at the end: {}):\n",
            self.point.name(),
            self.fault.label(),
            self.took.as_secs_f64(),
            expected(self.point, self.fault),
            self.chromium_killed
        );
        for f in &self.failures {
            s.push_str(&format!("    FAIL {f}\n"));
        }
        for o in &self.log {
            s.push_str(&format!("      {o}\n"));
        }
        s
    }
}

async fn run_cell(point: FailPoint, fault: FaultMode, kind: StoreKind, page: Page) -> Outcome {
    let t0 = Instant::now();
    let mut cell = Cell::start(point, fault, kind, page).await;
    cell.run_both_rounds().await;
    let mut failures = check(&mut cell).await;
    // Every command has ended: a Chromium still running on this cell's profile outlived the process that
    // drove it (the guard must kill it first, or it may resume a paused create request).
    let chromium_killed = kill_leftover_chromium(cell.home());
    if chromium_killed > 0 {
        failures.push(format!(
            "{chromium_killed} Chromium process(es) outlived every command of the cell"
        ));
    }
    let final_state = cell
        .log
        .last()
        .and_then(|o| o.state.clone())
        .unwrap_or_else(|| "?".into());
    let out = Outcome {
        point,
        fault,
        fired: cell
            .log
            .iter()
            .any(|o| o.round == 1 && o.end.killed_by_failpoint()),
        final_state,
        copies: cell.copies(),
        arrivals: cell.arrivals(),
        failures,
        log: cell.log.clone(),
        took: t0.elapsed(),
        chromium_killed,
    };
    cell.platform.shutdown().await;
    out
}

/// Every check of one cell; each broken one is a line.
async fn check(cell: &mut Cell) -> Vec<String> {
    let mut fail: Vec<String> = cell.trouble.clone();
    let exp = match cell.page {
        Page::Compose => expected(cell.point, cell.fault),
        Page::WebSocketOnPublish => expected_websocket(cell.point),
    };
    // Nothing ever reaches the platform by the page's own channel.
    let live = cell.platform.stats();
    if live.websocket_handshakes + live.websocket_frames + live.websocket_posts + live.udp_datagrams
        > 0
    {
        fail.push(format!(
            "the page's live channel reached the platform: {} handshake(s), {} frame(s), {} post(s), {} datagram(s)",
            live.websocket_handshakes, live.websocket_frames, live.websocket_posts, live.udp_datagrams
        ));
    }
    let log = cell.log.clone();

    // At most one copy, at most one create request, at every observation (the first breach is reported).
    let (copies, arrivals) = (cell.copies(), cell.arrivals());
    match log.iter().find(|o| o.copies > 1) {
        Some(o) => fail.push(format!(
            "{} copies of the text on the platform by r{} {} ({copies} at the end)",
            o.copies, o.round, o.step
        )),
        None if copies > 1 => fail.push(format!("{copies} copies of the text at the end")),
        None => {}
    }
    match log.iter().find(|o| o.arrivals > 1) {
        Some(o) => fail.push(format!(
            "{} create requests arrived by r{} {} ({arrivals} at the end)",
            o.arrivals, o.round, o.step
        )),
        None if arrivals > 1 => fail.push(format!("{arrivals} create requests at the end")),
        None => {}
    }

    // The create request is the only write that may reach the platform (login is a GET): no other write
    // reached it, at any point of the cell.
    let others = cell.platform.stats();
    if others.other_writes_total != 0 {
        fail.push(format!(
            "{} other write(s) reached the platform: {:?}",
            others.other_writes_total, others.other_writes
        ));
    }

    // No create request after an indeterminate or parked state was recorded.
    if let Some(i) = log
        .iter()
        .position(|o| matches!(o.state.as_deref(), Some("indeterminate") | Some("parked")))
    {
        let base = log[i].arrivals;
        for o in &log[i + 1..] {
            if o.arrivals > base {
                fail.push(format!(
                    "a create request arrived after the intent was {} (r{} {}): {} -> {} by r{} {}",
                    log[i].state.as_deref().unwrap_or("?"),
                    log[i].round,
                    log[i].step,
                    base,
                    o.arrivals,
                    o.round,
                    o.step
                ));
                break;
            }
        }
        if arrivals > base && !fail.iter().any(|f| f.contains("arrived after the intent")) {
            fail.push(format!(
                "a create request arrived after the intent was {}: {base} -> {arrivals} at the end",
                log[i].state.as_deref().unwrap_or("?")
            ));
        }
    }

    // Every lookup ran: "unavailable" parks an intent whatever is on the platform, so it would test nothing
    // of found -> published / not found -> parked.
    for o in &log {
        if o.step == "reconcile" && o.note.contains("lookup unavailable") {
            fail.push(format!(
                "r{} reconcile: the lookup could not run, so found/not found was not tested: {}",
                o.round, o.note
            ));
        }
    }

    // The failpoint fired where the table says (and only there), and nothing else died.
    let killed: Vec<&Obs> = log.iter().filter(|o| o.end.killed_by_failpoint()).collect();
    let fired = killed.iter().any(|o| o.round == 1);
    if fired != exp.fired {
        fail.push(format!(
            "failpoint {}: expected {}, but it {}",
            cell.point.name(),
            if exp.fired {
                "to fire"
            } else {
                "not to be reached"
            },
            if fired { "fired" } else { "was not reached" }
        ));
    }
    for o in &killed {
        if o.round != 1 || o.step != exp.fired_in {
            fail.push(format!(
                "SIGKILL in r{} {} (the point belongs to round 1's {})",
                o.round, o.step, exp.fired_in
            ));
        }
    }
    // Each SIGKILL is the cell's own failpoint firing (its stderr line names the point), and a failpoint
    // line always ends in that SIGKILL.
    for o in &log {
        let killed = o.end.killed_by_failpoint();
        match o.failpoint_line.as_deref() {
            Some(p) if killed && p == cell.point.name() => {}
            Some(p) if killed => fail.push(format!(
                "r{} {} died at failpoint {p}, not at the cell's {}",
                o.round,
                o.step,
                cell.point.name()
            )),
            None if killed => fail.push(format!(
                "r{} {} died of SIGKILL without its failpoint's stderr line (not the failpoint's kill)",
                o.round, o.step
            )),
            Some(p) => fail.push(format!(
                "r{} {} printed failpoint {p} but ended {}",
                o.round, o.step, o.end
            )),
            None => {}
        }
    }
    for o in &log {
        match (o.step, o.end) {
            (_, End::Signal(9)) => {}
            (_, End::Signal(s)) => fail.push(format!("r{} {} died of signal {s}", o.round, o.step)),
            (_, End::TimedOut) => {}
            ("publish", End::Code(c)) => {
                // The publish answers with the state it left the intent in.
                let want = o.state.as_deref().and_then(exit_of);
                if Some(c) != want {
                    fail.push(format!(
                        "r{} publish exited {c} with the intent {} (want {want:?}): {}",
                        o.round,
                        o.state.as_deref().unwrap_or("missing"),
                        o.note
                    ));
                }
            }
            (step, End::Code(c)) => {
                if c != 0 {
                    fail.push(format!("r{} {step} exited {c}: {}", o.round, o.note));
                }
            }
        }
    }

    // A rerun of an intent that is no longer pending touches nothing.
    if let Some(before) = &cell.state_before_round2
        && before != "pending"
    {
        let pressed = cell
            .round2_publish
            .as_ref()
            .map(|v| v["pressed"].clone())
            .unwrap_or(Value::Null);
        if pressed != Value::Bool(false) {
            fail.push(format!(
                "round 2's publish of a {before} intent answered pressed={pressed}"
            ));
        }
        if arrivals != cell.arrivals_before_round2 {
            fail.push(format!(
                "round 2 (intent {before}) made create requests arrive: {} -> {arrivals}",
                cell.arrivals_before_round2
            ));
        }
    }

    // The final state and copies of the table.
    let final_state = log.last().and_then(|o| o.state.clone());
    if final_state.as_deref() != Some(exp.final_state) {
        fail.push(format!(
            "final state {} (the table says {})",
            final_state.as_deref().unwrap_or("missing"),
            exp.final_state
        ));
    }
    if copies != exp.copies {
        fail.push(format!(
            "{copies} copies at the end (the table says {})",
            exp.copies
        ));
    }

    // Nothing lost: one intent, in a declared resting state, its timeline replays, every attempt begun.
    match cell.intents().await {
        Err(e) => fail.push(e),
        Ok(list) => {
            if list.len() != 1 {
                fail.push(format!(
                    "{} intents in the store (want exactly 1)",
                    list.len()
                ));
            }
            for it in &list {
                let st = it["state"].as_str().unwrap_or("");
                if !STATES.contains(&st) {
                    fail.push(format!("intent in undeclared state {st:?}"));
                }
                if st == "pending" || st == "authorized" {
                    fail.push(format!("intent left {st} at the end"));
                }
                let Some(key) = it["key"].as_str() else {
                    fail.push("intent without a key".into());
                    continue;
                };
                match cell.show(key).await {
                    Err(e) => fail.push(format!("timeline unreadable: {e}")),
                    Ok(t) => {
                        let events = t["events"].as_array().cloned().unwrap_or_default();
                        let attempts = t["attempts"].as_array().cloned().unwrap_or_default();
                        if events.is_empty() {
                            fail.push("timeline has no events".into());
                        }
                        for a in &attempts {
                            let token = a["token"].as_str().unwrap_or("");
                            let begun = events
                                .iter()
                                .any(|e| e["kind"] == "begun" && e["attempt"] == token);
                            if token.is_empty() || !begun {
                                fail.push(format!("attempt {token:?} has no begun event"));
                            }
                        }
                        if t["intent"]["state"].as_str() != Some(st) {
                            fail.push("intents show and intents list disagree".into());
                        }
                    }
                }
            }
            fail.extend(store_used(cell, &list));
        }
    }
    fail
}

/// The commands used the store the cell asked for: on PostgreSQL, the database holds the intent with the
/// state the CLI reported and no SQLite file was created in the data dir; on SQLite, the data dir's file
/// exists (a PostgreSQL cell whose `ONCEPOST_STORE` was lost would otherwise pass on SQLite unnoticed).
fn store_used(cell: &Cell, list: &[Value]) -> Vec<String> {
    let sqlite_file = cell.home().join("oncepost.db");
    let Some(url) = &cell.store_url else {
        if sqlite_file.is_file() {
            return Vec::new();
        }
        return vec![format!("no SQLite store at {}", sqlite_file.display())];
    };
    let mut fail = Vec::new();
    if sqlite_file.exists() {
        fail.push(format!(
            "a PostgreSQL cell created a SQLite store at {}",
            sqlite_file.display()
        ));
    }
    let out = std::process::Command::new("psql")
        .arg(url)
        .arg("-qtAc")
        .arg("SELECT delivery_key || ' ' || state FROM intents ORDER BY id")
        .output();
    let rows = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        Ok(o) => {
            fail.push(format!(
                "psql on the cell's database: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
            return fail;
        }
        Err(e) => {
            fail.push(format!("cannot run psql: {e}"));
            return fail;
        }
    };
    let want = list
        .iter()
        .map(|i| {
            format!(
                "{} {}",
                i["key"].as_str().unwrap_or("?"),
                i["state"].as_str().unwrap_or("?")
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    if rows.is_empty() || rows != want {
        fail.push(format!(
            "the PostgreSQL database holds {rows:?}, the CLI reported {want:?}"
        ));
    }
    fail
}

// ---------------------------------------------------------------------------------------------------
// Running many cells, at most ONCEPOST_CRASH_JOBS at once across the whole test binary
// ---------------------------------------------------------------------------------------------------

fn jobs() -> usize {
    std::env::var("ONCEPOST_CRASH_JOBS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|n| *n >= 1)
        .unwrap_or(2)
}

/// A counting semaphore shared by both tests (cargo runs them on parallel threads).
static SLOTS: Mutex<usize> = Mutex::new(0);
static SLOT_FREED: Condvar = Condvar::new();

struct Slot;

impl Slot {
    fn take() -> Slot {
        let cap = jobs();
        let mut used = SLOTS.lock().unwrap_or_else(|e| e.into_inner());
        while *used >= cap {
            used = SLOT_FREED.wait(used).unwrap_or_else(|e| e.into_inner());
        }
        *used += 1;
        Slot
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut used = SLOTS.lock().unwrap_or_else(|e| e.into_inner());
        *used -= 1;
        SLOT_FREED.notify_one();
    }
}

/// Run `cells` on up to [`jobs`] threads, each cell in its own runtime, in the given order.
fn run_cells(cells: Vec<(FailPoint, FaultMode)>, kind: StoreKind) -> Vec<Outcome> {
    run_cells_on(cells, kind, Page::Compose)
}

/// [`run_cells`] from another compose page.
fn run_cells_on(cells: Vec<(FailPoint, FaultMode)>, kind: StoreKind, page: Page) -> Vec<Outcome> {
    let total = cells.len();
    // Workers pop from the back: reversed, the cells start in the given order.
    let mut queue: Vec<_> = cells.into_iter().enumerate().collect();
    queue.reverse();
    let queue = Mutex::new(queue);
    let results: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs().min(total.max(1)) {
            s.spawn(|| {
                loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop();
                    let Some((i, (point, fault))) = next else {
                        break;
                    };
                    let _slot = Slot::take();
                    let rt = tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(2)
                        .enable_all()
                        .build()
                        .expect("runtime");
                    let out = rt.block_on(run_cell(point, fault, kind, page));
                    eprintln!(
                        "cell {:>2}/{total} {:<16} x {:<17} {:<20} {:.1} s{}",
                        i + 1,
                        point.name(),
                        fault.label(),
                        out.short(),
                        out.took.as_secs_f64(),
                        if out.failures.is_empty() {
                            String::new()
                        } else {
                            format!("  ({} failed checks)", out.failures.len())
                        }
                    );
                    results
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((i, out));
                }
            });
        }
    });
    let mut r = results.into_inner().unwrap_or_else(|e| e.into_inner());
    r.sort_by_key(|(i, _)| *i);
    r.into_iter().map(|(_, o)| o).collect()
}

/// The matrix as a table: rows failpoints, columns fault modes; `K`/`-` fired/not reached, the final state,
/// the copies; `!` marks a cell with a failed check.
fn table(outcomes: &[Outcome]) -> String {
    let w = 20;
    let mut s = format!("{:<17}", "failpoint");
    for f in FAULTS {
        s.push_str(&format!("| {:<w$}", f.label()));
    }
    s.truncate(s.trim_end().len());
    s.push('\n');
    s.push_str(&"-".repeat(17 + FAULTS.len() * (w + 2)));
    s.push('\n');
    for p in FailPoint::ALL {
        if !outcomes.iter().any(|o| o.point == p) {
            continue;
        }
        s.push_str(&format!("{:<17}", p.name()));
        for f in FAULTS {
            let c = outcomes
                .iter()
                .find(|o| o.point == p && o.fault == f)
                .map(|o| o.short())
                .unwrap_or_default();
            s.push_str(&format!("| {c:<w$}"));
        }
        // No trailing spaces: the doc's copy is compared byte for byte.
        s.truncate(s.trim_end().len());
        s.push('\n');
    }
    s
}

/// Print the table and every failed cell in full, then fail if any cell failed.
fn report(title: &str, outcomes: &[Outcome], took: Duration, with_table: bool) {
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| !o.failures.is_empty()).collect();
    eprintln!(
        "\n{title}: {} cells in {:.0} s ({} at once), {} failed",
        outcomes.len(),
        took.as_secs_f64(),
        jobs(),
        failed.len(),
    );
    if with_table {
        eprintln!(
            "(K = the failpoint fired in round 1, - = not reached; final state; copies on the platform; \
             ! = a check failed)\n\n{}",
            table(outcomes)
        );
    }
    for o in &failed {
        eprintln!("{}", o.detail());
    }
    if std::env::var_os("ONCEPOST_CRASH_VERBOSE").is_some() {
        for o in outcomes.iter().filter(|o| o.failures.is_empty()) {
            eprintln!("{}", o.detail());
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} cells failed: {}",
        failed.len(),
        outcomes.len(),
        failed
            .iter()
            .map(|o| format!("{} x {}", o.point.name(), o.fault.label()))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

// ---------------------------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------------------------

/// `ONCEPOST_CRASH_ONLY=after_begin,request_sent/commit-then-drop`, parsed: points (every fault) and
/// point/fault cells; `None` when unset or empty. A name that is no failpoint or fault fails the test: a typo
/// must not narrow the matrix to nothing and pass.
fn crash_only() -> Option<Vec<(FailPoint, Option<FaultMode>)>> {
    let only = std::env::var("ONCEPOST_CRASH_ONLY").ok()?;
    let sels: Vec<_> = only
        .split(',')
        .map(str::trim)
        .filter(|sel| !sel.is_empty())
        .map(|sel| {
            let (pn, fl) = match sel.split_once('/') {
                Some((pn, fl)) => (pn, Some(fl)),
                None => (sel, None),
            };
            let p = FailPoint::parse(pn).unwrap_or_else(|| {
                panic!(
                    "ONCEPOST_CRASH_ONLY: {pn:?} is no failpoint (known: {})",
                    FailPoint::ALL.map(|p| p.name()).join(", ")
                )
            });
            let f = fl.map(|fl| {
                FAULTS
                    .into_iter()
                    .find(|f| f.label() == fl)
                    .unwrap_or_else(|| {
                        panic!(
                            "ONCEPOST_CRASH_ONLY: {fl:?} is no fault of the matrix (known: {})",
                            FAULTS.map(|f| f.label()).join(", ")
                        )
                    })
            });
            (p, f)
        })
        .collect();
    (!sels.is_empty()).then_some(sels)
}

/// Whether `ONCEPOST_CRASH_ONLY` (unset: every cell) selects this cell.
fn selected(p: FailPoint, f: FaultMode) -> bool {
    crash_only().is_none_or(|sels| {
        sels.iter()
            .any(|(sp, sf)| *sp == p && sf.is_none_or(|sf| sf == f))
    })
}

/// The cells of one test that `ONCEPOST_CRASH_ONLY` selects. Unset, that is every cell, and there must be
/// `all` of them (the count the docs state); set, at least one (a filter that selects none of this test's
/// cells fails it: name the test to run, e.g. `cargo test --test crash_matrix matrix`).
fn cells_of(
    test: &str,
    every: Vec<(FailPoint, FaultMode)>,
    all: usize,
) -> Vec<(FailPoint, FaultMode)> {
    assert_eq!(every.len(), all, "{test}: the matrix lost cells");
    let cells: Vec<_> = every
        .into_iter()
        .filter(|(p, f)| selected(*p, *f))
        .collect();
    assert!(
        !cells.is_empty(),
        "{test}: ONCEPOST_CRASH_ONLY={:?} selects none of its {all} cells",
        std::env::var("ONCEPOST_CRASH_ONLY").unwrap_or_default()
    );
    cells
}

/// Every cell asked for ran and was checked (a cell that never ran must not look like a pass).
fn assert_all_ran(test: &str, cells: &[(FailPoint, FaultMode)], outcomes: &[Outcome]) {
    let ran: Vec<_> = outcomes.iter().map(|o| (o.point, o.fault)).collect();
    assert_eq!(
        ran.len(),
        cells.len(),
        "{test}: {} of {} cells ran",
        ran.len(),
        cells.len()
    );
    assert!(
        ran.iter().zip(cells).all(|(r, c)| r == c),
        "{test}: the cells that ran are not the cells asked for"
    );
    eprintln!("{test}: {} cells ran and were checked", ran.len());
}

// ---------------------------------------------------------------------------------------------------
// The table in docs/crash-matrix.md
// ---------------------------------------------------------------------------------------------------

/// The doc that records the matrix as the test prints it.
const DOC: &str = "docs/crash-matrix.md";
/// Set (to anything) to rewrite the doc's table from a full, green matrix run instead of failing on a difference.
const BLESS: &str = "ONCEPOST_CRASH_BLESS";

/// The doc's text and the byte range of its table: the first fenced block whose first line starts with
/// `failpoint ` (the table's header).
fn doc_table() -> (String, std::ops::Range<usize>) {
    let doc = std::fs::read_to_string(repo(DOC)).expect("docs/crash-matrix.md");
    let start = doc
        .find("```\nfailpoint ")
        .map(|i| i + "```\n".len())
        .expect("docs/crash-matrix.md has the matrix table in a fenced block");
    let end = doc[start..]
        .find("```")
        .map(|i| start + i)
        .expect("the table's block is closed");
    (doc, start..end)
}

/// The doc table's cells: (failpoint, fault label) -> what the test prints for the cell.
fn doc_cells(table: &str) -> std::collections::BTreeMap<(String, String), String> {
    let mut lines = table.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap_or("")
        .split('|')
        .skip(1)
        .map(|c| c.trim().to_string())
        .collect();
    let mut cells = std::collections::BTreeMap::new();
    for line in lines.filter(|l| l.contains('|')) {
        let mut cols = line.split('|').map(str::trim);
        let point = cols.next().unwrap_or("").to_string();
        for (fault, c) in header.iter().zip(cols) {
            if !c.is_empty() {
                cells.insert((point.clone(), fault.clone()), c.to_string());
            }
        }
    }
    cells
}

/// Compare what ran with the doc's table. `whole`: the full matrix ran, so the printed table must equal the
/// doc's block line for line (with `ONCEPOST_CRASH_BLESS` set, the block is rewritten instead); otherwise
/// every cell that ran must show what the doc's cell shows. Returns the differences.
fn against_doc(outcomes: &[Outcome], whole: bool) -> Vec<String> {
    let (doc, range) = doc_table();
    let recorded = &doc[range.clone()];
    if whole {
        let printed = table(outcomes);
        if printed == recorded {
            return Vec::new();
        }
        if std::env::var_os(BLESS).is_some() && outcomes.iter().all(|o| o.failures.is_empty()) {
            let mut new = doc.clone();
            new.replace_range(range, &printed);
            std::fs::write(repo(DOC), new).expect("rewrite docs/crash-matrix.md");
            eprintln!("{BLESS}: wrote the printed table into {DOC}");
            return Vec::new();
        }
        return vec![format!(
            "the printed table differs from {DOC} (run the full matrix with {BLESS}=1 to rewrite it):\n\
             printed:\n{printed}\nin {DOC}:\n{recorded}"
        )];
    }
    let cells = doc_cells(recorded);
    outcomes
        .iter()
        .filter_map(|o| {
            let key = (o.point.name().to_string(), o.fault.label().to_string());
            let want = cells.get(&key).map(String::as_str);
            (want != Some(o.short().as_str())).then(|| {
                format!(
                    "{} x {}: {:?}, but {DOC} records {want:?}",
                    key.0,
                    key.1,
                    o.short()
                )
            })
        })
        .collect()
}

fn assert_as_the_doc_says(outcomes: &[Outcome], whole: bool) {
    let diff = against_doc(outcomes, whole);
    assert!(diff.is_empty(), "{}", diff.join("\n"));
}

/// All 40 cells: every failpoint against every fault mode. The table it prints is the one in
/// docs/crash-matrix.md.
#[test]
fn matrix_every_failpoint_against_every_fault() {
    let t0 = Instant::now();
    let every = FailPoint::ALL
        .into_iter()
        .flat_map(|p| FAULTS.map(|f| (p, f)))
        .collect();
    let cells = cells_of("crash matrix", every, 40);
    let outcomes = run_cells(cells.clone(), StoreKind::Sqlite);
    assert_all_ran("crash matrix", &cells, &outcomes);
    report("crash matrix", &outcomes, t0.elapsed(), true);
    assert_as_the_doc_says(&outcomes, crash_only().is_none());
}

/// The WebSocket row: every failpoint, publishing from a page whose click publishes over a WebSocket (the
/// class that once made a duplicate). The door refuses it; see [`expected_websocket`].
#[test]
fn websocket_row_every_failpoint() {
    let t0 = Instant::now();
    let every = FailPoint::ALL.map(|p| (p, FaultMode::Normal)).to_vec();
    let cells = cells_of("WebSocket row", every, 8);
    let outcomes = run_cells_on(cells.clone(), StoreKind::Sqlite, Page::WebSocketOnPublish);
    assert_all_ran("WebSocket row", &cells, &outcomes);
    report(
        "crash matrix, WebSocket row",
        &outcomes,
        t0.elapsed(),
        false,
    );
}

/// The same cells on PostgreSQL for the points where the store's behaviour decides the outcome: a crash
/// after authorization (the dispatch lease), with the request out, inside the settle transaction (the
/// server rolls back the dead connection's transaction), and mid-lookup (the lookup lease).
#[test]
fn postgres_cells_where_the_store_decides() {
    let t0 = Instant::now();
    let every = [
        FailPoint::AfterAuthorize,
        FailPoint::RequestSent,
        FailPoint::DuringSettle,
        FailPoint::DuringReconcile,
    ]
    .into_iter()
    .flat_map(|p| [FaultMode::Normal, FaultMode::CommitThenDrop].map(|f| (p, f)))
    .collect();
    let cells = cells_of("crash cells on PostgreSQL", every, 8);
    let outcomes = run_cells(cells.clone(), StoreKind::Postgres);
    assert_all_ran("crash cells on PostgreSQL", &cells, &outcomes);
    report("crash cells on PostgreSQL", &outcomes, t0.elapsed(), true);
    // The same outcome as the SQLite cell in the doc's table.
    assert_as_the_doc_says(&outcomes, false);
}

/// splitmix64: a tiny seeded generator, so a printed seed replays the same trials.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Random cells: `ONCEPOST_CRASH_TRIALS` (default 3) trials, failpoint and fault drawn from a seeded
/// generator (`ONCEPOST_CRASH_SEED`, else the clock; printed either way). Same checks as the matrix.
#[test]
fn random_trials() {
    // A value that is not a number fails (a typo must not replay another seed or run the default count).
    let number = |name: &str| -> Option<u64> {
        let v = std::env::var(name).ok()?;
        Some(
            v.trim()
                .parse()
                .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        )
    };
    let seed = number("ONCEPOST_CRASH_SEED").unwrap_or_else(|| now_ms() as u64);
    let trials = number("ONCEPOST_CRASH_TRIALS").unwrap_or(3) as usize;
    assert!(trials >= 1, "ONCEPOST_CRASH_TRIALS=0 runs nothing");
    eprintln!("random crash trials: ONCEPOST_CRASH_SEED={seed} ONCEPOST_CRASH_TRIALS={trials}");
    let mut rng = SplitMix(seed);
    let cells: Vec<(FailPoint, FaultMode)> = (0..trials)
        .map(|_| {
            (
                FailPoint::ALL[rng.below(FailPoint::ALL.len())],
                FAULTS[rng.below(FAULTS.len())],
            )
        })
        .collect();
    for (i, (p, f)) in cells.iter().enumerate() {
        eprintln!("  trial {:>3}: {} x {}", i + 1, p.name(), f.label());
    }
    let t0 = Instant::now();
    let outcomes = run_cells(cells.clone(), StoreKind::Sqlite);
    assert_all_ran("random crash trials", &cells, &outcomes);
    // Per (point, fault): trials and failures, for a large run's figures.
    let mut tally: std::collections::BTreeMap<(usize, usize), (usize, usize)> = Default::default();
    for o in &outcomes {
        let pi = FailPoint::ALL
            .iter()
            .position(|p| *p == o.point)
            .unwrap_or(0);
        let fi = FAULTS.iter().position(|f| *f == o.fault).unwrap_or(0);
        let e = tally.entry((pi, fi)).or_default();
        e.0 += 1;
        e.1 += usize::from(!o.failures.is_empty());
    }
    eprintln!("\nrandom crash trials, seed {seed}: (point x fault: trials / failed)");
    for ((pi, fi), (n, bad)) in &tally {
        eprintln!(
            "  {:<16} x {:<17} {n:>4} / {bad}",
            FailPoint::ALL[*pi].name(),
            FAULTS[*fi].label()
        );
    }
    let total_arrivals: u64 = outcomes.iter().map(|o| o.arrivals).sum();
    let total_copies: usize = outcomes.iter().map(|o| o.copies).sum();
    eprintln!(
        "  {} trials, {} create requests arrived, {} copies on platforms, seed {seed}",
        outcomes.len(),
        total_arrivals,
        total_copies
    );
    report(
        &format!("random crash trials (seed {seed})"),
        &outcomes,
        t0.elapsed(),
        false,
    );
    assert_as_the_doc_says(&outcomes, false);
}
