//! Commits and time per full intent lifecycle (create, begin, authorize, settle published), per backend, next to
//! the single-commit floor measured in the same run on the same database, interleaved with the lifecycles (one
//! floor commit before each lifecycle), so both see the same machine: on a shared machine the floor measured
//! in a block of its own moved 1.4x between two blocks a few seconds apart. Prints figures; asserts nothing.
//!
//!   cargo bench --bench store_lifecycle -- [--lifecycles N] [--history N[,N...]] [--text-bytes N]
//!                                          [--backends sqlite|postgresql|both]
//!
//! `--text-bytes N` pads each post's text to N bytes (default: a short line, ~20 bytes): a long post makes the
//! intent's row larger than a page, and every transition rewrites the row.
//!
//! `--history 0,1000000` measures each backend on a fresh database per size, after bulk-filling it with that
//! many settled intents (published, two events each, one old dispatch each, a platform limit and caps set so
//! their checks run): the median of each step (create, begin, authorize, settle; the worker's `take_due` with
//! nothing due; a source capture and the freshness fence; one call that writes nothing, `SELECT 1`) next to
//! the same on the empty store, as a ratio.
//!
//! PostgreSQL: `ONCEPOST_BENCH_PG` (a URL), else an ephemeral cluster with fsync=on from scripts/pg-ephemeral.sh.
//! `ONCEPOST_BENCH_DIR` keeps the SQLite files in that directory (a PostgreSQL URL given keeps its databases).
// `Begun::Claimed(c) => c, other => panic!(..)`: any other variant ends the run.
#![allow(clippy::match_wildcard_for_single_variants)]
use std::collections::BTreeMap;
use std::time::Instant;

use oncepost::identity::{ActionKind, CanonicalRequest};
use oncepost::store::*;

struct Row {
    backend: &'static str,
    history: u64,
    floor_ms: f64,
    floor_median_ms: f64,
    commits_per_lifecycle: f64,
    lifecycle_ms: f64,
    lifecycle_median_ms: f64,
    /// Median ms of each step, in [`STEPS`] order.
    steps: Vec<f64>,
}

const STEPS: [&str; 8] = [
    "create",
    "begin",
    "authorize",
    "settle",
    "take_due",
    "capture",
    "fence",
    "call",
];

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Fill the store with `n` settled intents of the account `bench`, as a store that has run for a while holds
/// them: published, two events each, one dispatch each (a month old, outside every cap's window). One
/// statement per table; the triggers of the state table hold (inserted pending, then moved to published).
async fn fill(store: &Store, postgres: bool, n: u64) {
    if n == 0 {
        return;
    }
    let t = Instant::now();
    let old = Timestamp::now().0 - 30 * 86_400_000;
    let series = if postgres {
        format!("SELECT g AS i FROM generate_series(1, {n}) g")
    } else {
        format!(
            "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {n}) SELECT i FROM s"
        )
    };
    let key = if postgres {
        "lpad(to_hex(i), 64, '0')"
    } else {
        "printf('%064x', i)"
    };
    let sql = [
        format!(
            "INSERT INTO intents (delivery_key, account, platform, action_kind, target, request_json, content_hash, \
             state, max_attempts, created_at, updated_at) \
             SELECT {key}, 'bench', 'fixture', 'post', '', '{{\"text\":\"filled\",\"fields\":{{}}}}', {key}, \
             'pending', 5, {old} + i, {old} + i FROM ({series}) AS s"
        ),
        "UPDATE intents SET state = 'published', platform_id = 'p' || id WHERE state = 'pending'".to_string(),
        "INSERT INTO events (intent_id, at, kind, from_state, to_state, actor, details) \
         SELECT id, created_at, 'created', NULL, 'pending', 'fill', '{}' FROM intents"
            .to_string(),
        "INSERT INTO events (intent_id, at, kind, from_state, to_state, actor, details) \
         SELECT id, created_at, 'found_before_write', 'pending', 'published', 'fill', '{}' FROM intents"
            .to_string(),
        "INSERT INTO dispatches (account, intent_id, at) SELECT 'bench', id, created_at FROM intents".to_string(),
        "UPDATE accounts SET hourly_cap = 1000000000, daily_cap = 1000000000 WHERE name = 'bench'".to_string(),
        "INSERT INTO platform_limits (platform, max_in_flight, changed_at) VALUES ('fixture', 1000000, 0)"
            .to_string(),
        if postgres { "VACUUM ANALYZE" } else { "ANALYZE" }.to_string(),
        // The fill leaves SQLite's WAL at gigabytes until a checkpoint, and every page read then searches its
        // index: a store that has run for a while has been checkpointed many times over.
        if postgres { "SELECT 1" } else { "PRAGMA wal_checkpoint(TRUNCATE)" }.to_string(),
    ];
    for q in sql {
        store
            .execute_raw_for_tests(&q)
            .await
            .unwrap_or_else(|e| panic!("{e}: {q}"));
    }
    eprintln!("filled {n} intents in {:.1} s", t.elapsed().as_secs_f64());
}

async fn measure(
    backend: &'static str,
    location: StoreLocation,
    n: usize,
    history: u64,
    text_bytes: usize,
) -> Row {
    let store = Store::open(&location, Policy::default())
        .await
        .expect("open");
    store
        .execute_raw_for_tests(
            "CREATE TABLE bench_floor (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)",
        )
        .await
        .expect("floor table");
    store
        .execute_raw_for_tests("INSERT INTO bench_floor (id, v) VALUES (1, 0)")
        .await
        .expect("floor row");
    store
        .add_account(
            &NewAccount {
                name: "bench".into(),
                platform: "fixture".into(),
                min_interval_ms: 0,
                dup_window_ms: 86_400_000,
            },
            "bench",
            Timestamp::now(),
        )
        .await
        .expect("account");
    fill(
        &store,
        matches!(location, StoreLocation::Postgres(_)),
        history,
    )
    .await;
    // warm up both paths
    for i in 0..20 {
        let sql = format!("UPDATE bench_floor SET v = v + 1 WHERE id = 1 AND v = {i}");
        store.execute_raw_for_tests(&sql).await.expect("warm");
    }
    let commits_before = store.commits();
    // The floor: one single-row guarded UPDATE, one commit each (autocommit), one before each lifecycle.
    let mut floors = Vec::with_capacity(n);
    let mut lifecycles = Vec::with_capacity(n);
    let mut steps: Vec<Vec<f64>> = vec![Vec::new(); STEPS.len()];
    let lap = |t: &mut Instant| {
        let ms = t.elapsed().as_secs_f64() * 1e3;
        *t = Instant::now();
        ms
    };
    for i in 0..n {
        let f = Instant::now();
        let sql = format!(
            "UPDATE bench_floor SET v = v + 1 WHERE id = 1 AND v = {}",
            20 + i
        );
        assert_eq!(store.execute_raw_for_tests(&sql).await.expect("floor"), 1);
        floors.push(f.elapsed().as_secs_f64() * 1e3);
        let whole = Instant::now();
        let now = Timestamp::now();
        let mut s = Instant::now();
        let created = store
            .create_intent(
                &NewIntent {
                    account: "bench".into(),
                    action: ActionKind::Post,
                    target: String::new(),
                    request: CanonicalRequest::new(
                        Some(&padded(format!("benchmark post {i}"), text_bytes)),
                        &BTreeMap::new(),
                    ),
                    source: None,
                },
                now,
            )
            .await
            .expect("create");
        steps[0].push(lap(&mut s));
        let claim = match store
            .begin(&created.intent.key, "bench-worker", "contract", now)
            .await
            .expect("begin")
        {
            Begun::Claimed(c) => c,
            other => panic!("{other:?}"),
        };
        steps[1].push(lap(&mut s));
        let auth = store
            .authorize_dispatch(&claim, "contract", now)
            .await
            .expect("authorize");
        steps[2].push(lap(&mut s));
        store
            .settle(
                &auth.consume(),
                &Settlement::Published {
                    platform_id: Some(format!("p{i}")),
                    permalink: None,
                    verdict: serde_json::json!({"read_back": "match"}),
                },
                now,
            )
            .await
            .expect("settle");
        steps[3].push(lap(&mut s));
        lifecycles.push(whole.elapsed().as_secs_f64() * 1e3);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (floor_ms, lifecycle_ms) = (mean(&floors), mean(&lifecycles));
    // The floor's raw statements are not the store's commits (it counts its own transitions only).
    let commits_per_lifecycle = (store.commits() - commits_before) as f64 / n as f64;
    // The worker's pick with nothing due, and a source capture + fence, outside the lifecycle's figures.
    for i in 0..n {
        let mut s = Instant::now();
        let due = store
            .take_due(4, 60_000, &[], "bench", Timestamp::now())
            .await
            .expect("take_due");
        assert!(due.is_empty());
        steps[4].push(lap(&mut s));
        let body = oncepost::source::SourceBody::from_raw(
            "https://bench.example/article",
            format!("Paragraph {}.", i % 3).as_bytes(),
            None,
            "bench",
        )
        .expect("a body");
        store
            .capture_source(&body, Timestamp::now())
            .await
            .expect("capture");
        steps[5].push(lap(&mut s));
        let key = oncepost::identity::DeliveryKey::parse(&format!(
            "{:064x}",
            1 + i as u64 % history.max(1)
        ))
        .expect("a key");
        // An intent of the history (on the empty store, a key that is not there): the same join either way.
        store
            .source_fence(&key, "bench", Timestamp::now())
            .await
            .expect("fence");
        steps[6].push(lap(&mut s));
        // One call that writes nothing (`SELECT 1`, a cached statement): what each statement of a
        // transaction costs before any work, the price of a transition's extra statements.
        store.execute_raw_for_tests("SELECT 1").await.expect("call");
        steps[7].push(lap(&mut s));
    }
    store.close().await;
    Row {
        backend,
        history,
        floor_ms,
        floor_median_ms: median(floors),
        commits_per_lifecycle,
        lifecycle_ms,
        lifecycle_median_ms: median(lifecycles),
        steps: steps.into_iter().map(median).collect(),
    }
}

/// `text` followed by words until it is `bytes` long (unchanged when it is already longer).
fn padded(mut text: String, bytes: usize) -> String {
    const WORDS: [&str; 8] = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
    ];
    let mut i = 0;
    while text.len() < bytes {
        text.push(' ');
        text.push_str(WORDS[i % WORDS.len()]);
        i += 1;
    }
    if i > 0 {
        // ASCII only, so any byte is a character boundary.
        text.truncate(bytes);
    }
    text
}

fn arg<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n = arg(&args, "--lifecycles")
        .and_then(|v| v.parse().ok())
        .unwrap_or(300usize);
    let sizes: Vec<u64> = arg(&args, "--history")
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![0]);
    let text_bytes = arg(&args, "--text-bytes")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0usize);
    let backends = arg(&args, "--backends").unwrap_or("both");
    let (run_sqlite, run_postgres) = match backends {
        "sqlite" => (true, false),
        "postgresql" => (false, true),
        "both" => (true, true),
        other => panic!("--backends {other}: sqlite, postgresql or both"),
    };
    // `ONCEPOST_BENCH_DIR` keeps the SQLite files there (for EXPLAIN QUERY PLAN afterwards).
    let dir = tempfile::tempdir().expect("tempdir");
    let keep = std::env::var_os("ONCEPOST_BENCH_DIR").map(std::path::PathBuf::from);
    let sqlite_dir = keep.as_deref().unwrap_or(dir.path());
    let mut rows = Vec::new();
    for &h in sizes.iter().filter(|_| run_sqlite) {
        rows.push(
            measure(
                "sqlite (WAL, synchronous=FULL)",
                StoreLocation::Sqlite(sqlite_dir.join(format!("bench-{h}.db"))),
                n,
                h,
                text_bytes,
            )
            .await,
        );
    }

    let repo = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut owned = None;
    let base = match std::env::var("ONCEPOST_BENCH_PG") {
        _ if !run_postgres => None,
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            let pgdir =
                std::env::temp_dir().join(format!("oncepost-bench-pg-{}", std::process::id()));
            let out = std::process::Command::new(repo.join("scripts/pg-ephemeral.sh"))
                .args(["start", &pgdir.display().to_string(), "on"])
                .output();
            match out {
                Ok(o) if o.status.success() => {
                    owned = Some(pgdir);
                    Some(String::from_utf8_lossy(&o.stdout).trim().to_string())
                }
                _ => {
                    eprintln!("no PostgreSQL available: skipping that backend");
                    None
                }
            }
        }
    };
    if let Some(base) = base {
        for &h in &sizes {
            let db = format!("bench_{}_{h}", std::process::id());
            let _ = std::process::Command::new("psql")
                .args([&base, "-qtAc", &format!("CREATE DATABASE {db}")])
                .status();
            let url = format!("{}/{}", &base[..base.rfind('/').unwrap_or(base.len())], db);
            rows.push(
                measure(
                    "postgresql 15 (fsync=on, synchronous_commit=on)",
                    StoreLocation::Postgres(url),
                    n,
                    h,
                    text_bytes,
                )
                .await,
            );
        }
    }
    if let Some(pgdir) = owned {
        let _ = std::process::Command::new(repo.join("scripts/pg-ephemeral.sh"))
            .args(["stop", &pgdir.display().to_string()])
            .status();
    }

    println!(
        "\nstore lifecycle benchmark: {n} lifecycles per backend (create, begin, authorize, settle published)\n"
    );
    println!(
        "| backend | history | commit floor (ms) | commits / lifecycle | lifecycle (ms) | commits x floor (ms) | ratio | ratio of medians |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let budget = r.commits_per_lifecycle * r.floor_ms;
        println!(
            "| {} | {} | {:.3} | {:.2} | {:.3} | {:.3} | {:.2}x | {:.2}x |",
            r.backend,
            r.history,
            r.floor_ms,
            r.commits_per_lifecycle,
            r.lifecycle_ms,
            budget,
            r.lifecycle_ms / budget,
            r.lifecycle_median_ms / (r.commits_per_lifecycle * r.floor_median_ms)
        );
    }
    println!("\nmedian ms per step, and the ratio to the same backend's empty store (history 0)\n");
    println!("| backend | history | {} |", STEPS.join(" | "));
    println!("|---|---|{}", "---|".repeat(STEPS.len()));
    for r in &rows {
        let base = rows
            .iter()
            .find(|b| b.backend == r.backend && b.history == 0);
        let cells: Vec<String> = r
            .steps
            .iter()
            .enumerate()
            .map(|(i, ms)| match base.map(|b| b.steps[i]) {
                Some(b) if b > 0.0 && r.history > 0 => format!("{ms:.3} ({:.2}x)", ms / b),
                _ => format!("{ms:.3}"),
            })
            .collect();
        println!("| {} | {} | {} |", r.backend, r.history, cells.join(" | "));
    }
}
