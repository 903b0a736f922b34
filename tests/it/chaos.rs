//! Chaos, measured: several worker processes (each with its own data dir, as separate hosts would) publish
//! submitted intents from one PostgreSQL store, reached through a TCP proxy the harness can cut and slow,
//! while the harness SIGKILLs workers and starts new ones, crash-restarts PostgreSQL and turns Fixturebook's
//! faults on and off. Bounded in time and count, loopback only; the seed is printed and `ONCEPOST_CHAOS_SEED`
//! replays the same schedule.
//!
//! It asserts: never more than one copy of an intent on the platform (and exactly one of each published
//! intent); every intent ends in a resting state whose stored history replays; no account's dispatches closer
//! than its minimum interval (the authorization times in the store, and the posts' arrival on the platform);
//! no account's lease held by two holders at once (the lease history).
//!
//! `chaos_short` runs in the suite. On demand (`cargo test --release --test it chaos::chaos_long --
//! --ignored --nocapture`): `ONCEPOST_CHAOS_INTENTS` (default 1000), `ONCEPOST_CHAOS_WORKERS` (default 6),
//! `ONCEPOST_CHAOS_SEED`, `ONCEPOST_CHAOS_WARM` (the workers' `--warm-browsers`, default 4);
//! `fleet_throughput` (no chaos, `ONCEPOST_CHAOS_WORKERS=1|2|4`) prints posts per minute
//! (scripts/bench-fleet.sh runs it for 1, 2 and 4 workers).
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::dbproxy::{DbProxy, Snip, Target};
use crate::kit::{self, Oncepost, repo_path};
use oncepost::fixture_platform::{
    Fault, FaultMode, FixtureConfig, FixturePlatform, RunningPlatform,
};
use oncepost::store::{Policy, Status, Store, StoreLocation};

/// Minimum interval between two dispatches of one account, set on every account.
const MIN_INTERVAL_MS: i64 = 1_000;

/// What one run does.
#[derive(Debug, Clone)]
struct Plan {
    seed: u64,
    intents: usize,
    accounts: usize,
    workers: usize,
    /// Chaos events (kills, restarts, cuts, delays, faults) while intents are still in flight.
    chaos: bool,
    /// Bound on the whole run after submitting.
    deadline: Duration,
}

/// A seeded xorshift: the schedule of a run is its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A PostgreSQL cluster of this run alone (it is crash-restarted), removed at the end.
pub(crate) struct Cluster {
    dir: PathBuf,
    pub(crate) port: u16,
}

impl Cluster {
    pub(crate) fn start() -> Cluster {
        let dir = std::env::temp_dir().join(format!("oncepost-chaos-pg-{}", uuid::Uuid::new_v4()));
        let out = std::process::Command::new(repo_path("scripts/pg-ephemeral.sh"))
            .arg("start")
            .arg(&dir)
            .output()
            .expect("pg-ephemeral start");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = std::fs::read_to_string(dir.join("port"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        Cluster { dir, port }
    }

    pub(crate) fn url(&self, port: u16) -> String {
        format!("postgres://postgres@127.0.0.1:{port}/postgres")
    }

    fn crash_restart(&self) {
        let out = std::process::Command::new(repo_path("scripts/pg-ephemeral.sh"))
            .arg("crash-restart")
            .arg(&self.dir)
            .output()
            .expect("pg-ephemeral crash-restart");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::process::Command::new(repo_path("scripts/pg-ephemeral.sh"))
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}

/// `--warm-browsers` of every worker: `ONCEPOST_CHAOS_WARM` (default 4, the worker's own default; 0 launches
/// Chromium for every send).
fn warm_browsers() -> String {
    env_or("ONCEPOST_CHAOS_WARM", 4usize).to_string()
}

/// One host slot: a data dir whose account profiles are logged in, and the worker process running there now.
struct Host {
    name: String,
    oncepost: Oncepost,
    worker: Option<tokio::process::Child>,
    started: usize,
}

impl Host {
    fn start_worker(&mut self) {
        let mut cmd = self.oncepost.command(&[
            "worker",
            "--concurrency",
            "1",
            "--interval",
            "2s",
            "--poll",
            "300ms",
            "--lookup-timeout",
            "20s",
            "--warm-browsers",
            &warm_browsers(),
        ]);
        // `ONCEPOST_CHAOS_LOGS=DIR` keeps each worker's stderr (its steps and their times) there.
        let stderr = match std::env::var_os("ONCEPOST_CHAOS_LOGS") {
            Some(dir) => std::fs::File::create(
                PathBuf::from(dir).join(format!("{}-{}.log", self.name, self.started)),
            )
            .map_or_else(|_| std::process::Stdio::null(), std::process::Stdio::from),
            None => std::process::Stdio::null(),
        };
        cmd.env("ONCEPOST_CLAIM_LEASE", "20s")
            .env("ONCEPOST_DISPATCH_LEASE", "20s")
            .stdout(std::process::Stdio::null())
            .stderr(stderr);
        self.worker = Some(cmd.spawn().expect("spawn worker"));
        self.started += 1;
    }

    /// SIGKILL the worker and reap it: its pid and when the signal was sent (ms since the epoch; it was gone
    /// only after that, once reaped).
    async fn kill(&mut self) -> Option<(u32, i64)> {
        let mut w = self.worker.take()?;
        let pid = w.id()?;
        let at = oncepost::store::Timestamp::now().0;
        let _ = w.start_kill();
        let _ = w.wait().await;
        Some((pid, at))
    }

    async fn stop(&mut self) {
        if let Some(mut w) = self.worker.take() {
            if let Some(pid) = w.id() {
                unsafe {
                    libc::kill(pid as i32, libc::SIGTERM);
                }
            }
            if tokio::time::timeout(Duration::from_secs(60), w.wait())
                .await
                .is_err()
            {
                let _ = w.start_kill();
                let _ = w.wait().await;
            }
        }
    }
}

/// What a run measured.
#[derive(Debug, Default)]
struct Report {
    states: BTreeMap<String, usize>,
    events: BTreeMap<&'static str, usize>,
    settle_secs: f64,
    posts_per_minute: f64,
    min_dispatch_gap_ms: Option<i64>,
    min_arrival_gap_ms: Option<i64>,
    lease_takeovers: usize,
    /// Transactions cut at their COMMIT (authorizations and settles).
    snipped: u64,
    /// Workers killed: pid and when the SIGKILL was sent.
    killed: Vec<(u32, i64)>,
}

fn account(i: usize) -> String {
    format!("c{i}")
}

async fn run(plan: Plan) -> Report {
    eprintln!(
        "chaos: {plan:?} (replay with ONCEPOST_CHAOS_SEED={})",
        plan.seed
    );
    let mut rng = Rng(plan.seed | 1);
    let cluster = Cluster::start();
    let proxy = DbProxy::start(cluster.port).await;
    let direct = cluster.url(cluster.port);
    let through_proxy = cluster.url(proxy.port);
    let dir = tempfile::tempdir().unwrap();
    let platform: RunningPlatform =
        FixturePlatform::start(FixtureConfig::new(dir.path().join("platform")))
            .await
            .expect("platform");
    let base = platform.base_url();
    let contract = kit::fixture_contract();
    let contract = contract.to_str().unwrap();
    let admin = Oncepost::new(dir.path().join("admin")).with_store(Some(direct.clone()));
    for a in 0..plan.accounts {
        let name = account(a);
        let (code, out, err) = admin
            .run(&[
                "accounts",
                "add",
                &name,
                "--platform",
                "fixture",
                "--handle",
                &name,
            ])
            .await;
        assert_eq!(code, 0, "{out} {err}");
    }
    // Host slots, each logged in once per account (a synchronous publish with the login link leaves a
    // lasting session in the slot's profile); the slots log in side by side.
    let mut hosts: Vec<Host> = (0..plan.workers)
        .map(|h| Host {
            name: format!("host{h}"),
            oncepost: Oncepost::new(dir.path().join(format!("host{h}")))
                .with_store(Some(through_proxy.clone())),
            worker: None,
            started: 0,
        })
        .collect();
    let logins = hosts.iter().enumerate().map(|(h, host)| {
        let o = host.oncepost.clone().with_store(Some(direct.clone()));
        let base = base.clone();
        async move {
            for a in 0..plan.accounts {
                let name = account(a);
                let login = format!("{base}/login?account={name}");
                let text = format!("chaos {} login h{h} {name}", plan.seed);
                let (code, out, err) = o
                    .run(&[
                        "publish",
                        "--json",
                        "--contract",
                        contract,
                        "--account",
                        &name,
                        "--base-url",
                        &base,
                        "--login-url",
                        &login,
                        "--text",
                        &text,
                    ])
                    .await;
                assert_eq!(code, 0, "login publish: {out} {err}");
            }
        }
    });
    futures::future::join_all(logins).await;
    // The logins above were unpaced (two hosts may log one account in well under the interval apart): the
    // pacing checks below look at what was dispatched and arrived from here on.
    let paced_at = oncepost::store::Timestamp::now().0;
    for a in 0..plan.accounts {
        let (code, out, err) = admin
            .run(&["accounts", "pace", &account(a), "--min-interval", "1s"])
            .await;
        assert_eq!(code, 0, "{out} {err}");
    }
    // Submitted intents, round-robin over the accounts.
    let texts: Vec<(String, String)> = (0..plan.intents)
        .map(|i| {
            (
                account(i % plan.accounts),
                format!("chaos {} post {i}", plan.seed),
            )
        })
        .collect();
    let mut keys = Vec::new();
    for batch in texts.chunks(8) {
        let subs = batch.iter().map(|(a, t)| {
            let admin = admin.clone();
            let base = base.clone();
            async move {
                let (code, v, err) = admin
                    .run_json(&[
                        "submit",
                        "--json",
                        "--contract",
                        contract,
                        "--account",
                        a,
                        "--base-url",
                        &base,
                        "--text",
                        t,
                    ])
                    .await;
                assert_eq!(code, 0, "submit: {v} {err}");
                v["key"].as_str().unwrap().to_string()
            }
        });
        keys.extend(futures::future::join_all(subs).await);
    }
    let store = Store::open(&StoreLocation::Postgres(direct.clone()), Policy::default())
        .await
        .unwrap();
    let started = Instant::now();
    for h in hosts.iter_mut() {
        h.start_worker();
    }
    let mut report = Report::default();
    let unsettled = |store: Store, keys: Vec<String>| async move {
        let mut n = 0;
        for k in &keys {
            let key = oncepost::identity::DeliveryKey::parse(k).unwrap();
            match store.intent(&key).await {
                Ok(i) if matches!(i.state, Status::Published | Status::Failed | Status::Parked) => {
                }
                _ => n += 1,
            }
        }
        n
    };
    // Chaos while intents are in flight; then calm until every intent rests (or the deadline).
    let mut fault_on = false;
    loop {
        let left = unsettled(store.clone(), keys.clone()).await;
        if left == 0 || started.elapsed() > plan.deadline {
            break;
        }
        let calm = !plan.chaos || started.elapsed() > plan.deadline / 2 || left * 4 < plan.intents;
        if calm {
            if fault_on {
                platform.set_fault(Fault::default());
                fault_on = false;
            }
            proxy.set_delay(0);
            proxy.disarm();
            for h in hosts.iter_mut() {
                if h.worker.is_none() {
                    h.start_worker();
                }
            }
            tokio::time::sleep(Duration::from_millis(1_000)).await;
            continue;
        }
        tokio::time::sleep(Duration::from_millis(1_500 + rng.below(2_500))).await;
        match rng.below(8) {
            0 | 1 => {
                let h = rng.below(hosts.len() as u64) as usize;
                if let Some(k) = hosts[h].kill().await {
                    report.killed.push(k);
                }
                *report.events.entry("worker SIGKILLed").or_default() += 1;
                tokio::time::sleep(Duration::from_millis(500)).await;
                hosts[h].start_worker();
            }
            2 => {
                cluster.crash_restart();
                *report
                    .events
                    .entry("PostgreSQL crash-restarted")
                    .or_default() += 1;
            }
            3 => {
                let n = proxy.cut();
                *report.events.entry("connections cut").or_default() += 1;
                eprintln!("chaos: cut {n} connection(s)");
            }
            4 => {
                proxy.set_delay(150 + rng.below(300));
                *report.events.entry("connections delayed").or_default() += 1;
                tokio::time::sleep(Duration::from_millis(2_000)).await;
                proxy.set_delay(0);
            }
            6 | 7 => {
                // A partition in the middle of an authorization or a settle: the next such transaction is cut
                // at its COMMIT, before it reaches the server or after (committed, the answer lost).
                let tag = if rng.below(2) == 0 {
                    "oncepost: authorize"
                } else {
                    "oncepost: settle"
                };
                let snip = if rng.below(2) == 0 {
                    Snip::BeforeCommit
                } else {
                    Snip::AfterCommit
                };
                proxy.arm(Target { tag, snip });
                *report
                    .events
                    .entry(if tag.ends_with("authorize") {
                        "authorization partitions armed"
                    } else {
                        "settle partitions armed"
                    })
                    .or_default() += 1;
            }
            _ => {
                fault_on = !fault_on;
                platform.set_fault(if fault_on {
                    Fault::new(if rng.below(2) == 0 {
                        FaultMode::CommitThenDrop
                    } else {
                        FaultMode::CommitThen500
                    })
                } else {
                    Fault::default()
                });
                *report.events.entry("create faults toggled").or_default() += 1;
            }
        }
    }
    report.settle_secs = started.elapsed().as_secs_f64();
    report.snipped = proxy.snipped();
    for h in hosts.iter_mut() {
        h.stop().await;
    }
    check(
        &plan,
        &store,
        &direct,
        &platform,
        &keys,
        &texts,
        paced_at,
        &mut report,
    )
    .await;
    report
}

/// The promises, read from the store and the platform.
#[allow(clippy::too_many_arguments)]
async fn check(
    plan: &Plan,
    store: &Store,
    direct: &str,
    platform: &RunningPlatform,
    keys: &[String],
    texts: &[(String, String)],
    paced_at: i64,
    report: &mut Report,
) {
    let posts = platform.posts();
    let mut published = 0;
    for (k, (_, text)) in keys.iter().zip(texts) {
        let key = oncepost::identity::DeliveryKey::parse(k).unwrap();
        // `timeline` replays the stored history through the state table and checks it against the row.
        let tl = store
            .timeline(&key)
            .await
            .unwrap_or_else(|e| panic!("{k}: {e}"));
        let copies = posts.iter().filter(|p| &p.text == text).count();
        assert!(
            copies <= 1,
            "{k}: {copies} copies of {text:?} (state {})",
            tl.intent.state
        );
        if tl.intent.state == Status::Published {
            assert_eq!(
                copies, 1,
                "{k} is published but the platform holds {copies} copies"
            );
            published += 1;
        }
        *report
            .states
            .entry(tl.intent.state.to_string())
            .or_default() += 1;
        if tl.intent.state != Status::Published {
            // Not a failure of the promise (a person decides), but a run should say why.
            let why = tl
                .events
                .iter()
                .rev()
                .find_map(|e| e.reason.clone())
                .unwrap_or_default();
            eprintln!(
                "chaos: {k} ended {} after {} attempt(s), {copies} copies on the platform: {why}",
                tl.intent.state, tl.intent.attempt_count
            );
        }
    }
    assert!(
        report
            .states
            .keys()
            .all(|s| ["published", "failed", "parked"].contains(&s.as_str())),
        "every intent rests by the deadline: {:?}",
        report.states
    );
    report.posts_per_minute = published as f64 * 60.0 / report.settle_secs.max(0.001);
    // Pacing, as the store decided it: authorization times per account.
    let sql =
        format!("SELECT account, at FROM dispatches WHERE at >= {paced_at} ORDER BY account, at");
    let rows = psql(direct, &sql);
    let mut gaps = Vec::new();
    for pair in rows.windows(2) {
        if pair[0][0] == pair[1][0] {
            let gap: i64 = pair[1][1].parse::<i64>().unwrap() - pair[0][1].parse::<i64>().unwrap();
            assert!(
                gap >= MIN_INTERVAL_MS,
                "account {} dispatched {gap} ms apart",
                pair[0][0]
            );
            gaps.push(gap);
        }
    }
    report.min_dispatch_gap_ms = gaps.iter().copied().min();
    // Pacing, as the platform saw it: arrival times of each account's stored posts. The send follows its
    // authorization by a few milliseconds, so the gap may be shorter by that much, never by a whole interval.
    let mut by_account: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for p in posts.iter().filter(|p| p.created_ms >= paced_at) {
        by_account
            .entry(p.account.as_str())
            .or_default()
            .push(p.created_ms);
    }
    let mut arrival_gaps = Vec::new();
    for (a, mut times) in by_account {
        times.sort();
        for w in times.windows(2) {
            let gap = w[1] - w[0];
            assert!(
                gap >= MIN_INTERVAL_MS / 2,
                "account {a}: two posts arrived {gap} ms apart"
            );
            arrival_gaps.push(gap);
        }
    }
    report.min_arrival_gap_ms = arrival_gaps.iter().copied().min();
    // One holder per account at a time: each new holder took the lease only after the previous one gave it
    // back or its lease ran out.
    let sql = "SELECT at, details FROM admin_events \
               WHERE action IN ('account_lease_taken', 'account_lease_released') ORDER BY id";
    let mut held: BTreeMap<String, (String, i64, i64)> = BTreeMap::new();
    for row in psql(direct, sql) {
        let at: i64 = row[0].parse().unwrap();
        let d: serde_json::Value = serde_json::from_str(&row[1]).unwrap();
        let acct = d["account"].as_str().unwrap().to_string();
        let holder = d["holder"].as_str().unwrap().to_string();
        let fence = d["fence"].as_i64().unwrap();
        match d.get("expires_at").and_then(|e| e.as_i64()) {
            Some(expires) => {
                if let Some((prev, _, prev_expires)) = held.get(&acct) {
                    // Taken from a holder that never gave it back: either after that holder's lease ran out
                    // (its first expiry; renewals only move it later), or, before that, from a holder whose
                    // process this harness had killed by then (the taker saw the process gone).
                    let gone = d["from_gone_holder"].as_str() == Some(prev.as_str());
                    let killed_before = prev
                        .split(':')
                        .nth(1)
                        .and_then(|p| p.parse::<u32>().ok())
                        .and_then(|pid| report.killed.iter().find(|(k, _)| *k == pid))
                        .is_some_and(|(_, dead_at)| *dead_at <= at);
                    assert!(
                        at >= *prev_expires || (gone && killed_before),
                        "account {acct}: {holder} took the lease at {at} while {prev} held it until {prev_expires} \
                         (its process killed before: {killed_before})"
                    );
                    report.lease_takeovers += 1;
                }
                held.insert(acct, (holder, fence, expires));
            }
            None => {
                if held
                    .get(&acct)
                    .is_some_and(|(h, f, _)| *h == holder && *f == fence)
                {
                    held.remove(&acct);
                }
            }
        }
    }
    eprintln!(
        "chaos: {} intents, {} workers: {:?}; events {:?}; settled in {:.1} s, {:.1} posts/min; min gap between \
         dispatches {:?} ms, between arrivals {:?} ms; lease takeovers {}; transactions cut at COMMIT {}; load {}",
        plan.intents,
        plan.workers,
        report.states,
        report.events,
        report.settle_secs,
        report.posts_per_minute,
        report.min_dispatch_gap_ms,
        report.min_arrival_gap_ms,
        report.lease_takeovers,
        report.snipped,
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
}

/// Rows of a query through psql, `|`-separated.
fn psql(url: &str, sql: &str) -> Vec<Vec<String>> {
    let out = std::process::Command::new("psql")
        .args([url, "-qtAX", "-F", "\t", "-c", sql])
        .output()
        .expect("psql");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn seed() -> u64 {
    env_or(
        "ONCEPOST_CHAOS_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    )
}

/// The short version, in the suite: 3 hosts, 15 intents over 3 accounts, chaos while they are in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chaos_short() {
    let r = run(Plan {
        seed: seed(),
        intents: 15,
        accounts: 3,
        workers: 3,
        chaos: true,
        deadline: Duration::from_secs(240),
    })
    .await;
    assert!(r.states.get("published").copied().unwrap_or(0) > 0, "{r:?}");
}

/// The long version, on demand.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "long: run on demand (docs/fleet.md)"]
async fn chaos_long() {
    let intents = env_or("ONCEPOST_CHAOS_INTENTS", 1000usize);
    run(Plan {
        seed: seed(),
        intents,
        accounts: env_or("ONCEPOST_CHAOS_ACCOUNTS", 8usize),
        workers: env_or("ONCEPOST_CHAOS_WORKERS", 6usize),
        chaos: true,
        deadline: Duration::from_secs(env_or("ONCEPOST_CHAOS_DEADLINE_S", 7_200u64)),
    })
    .await;
}

/// Throughput without chaos, for `ONCEPOST_CHAOS_WORKERS` workers (scripts/bench-fleet.sh).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "benchmark: run on demand (scripts/bench-fleet.sh)"]
async fn fleet_throughput() {
    let workers = env_or("ONCEPOST_CHAOS_WORKERS", 1usize);
    run(Plan {
        seed: seed(),
        intents: env_or("ONCEPOST_CHAOS_INTENTS", 40usize),
        accounts: env_or("ONCEPOST_CHAOS_ACCOUNTS", 8usize),
        workers,
        chaos: false,
        deadline: Duration::from_secs(env_or("ONCEPOST_CHAOS_DEADLINE_S", 1_800u64)),
    })
    .await;
}
