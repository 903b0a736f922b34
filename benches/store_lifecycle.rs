//! Commits and time per full intent lifecycle (create, begin, authorize, settle published), per backend, next to
//! the single-commit floor measured in the same run on the same database. Prints figures; asserts nothing.
//!
//!   cargo bench --bench store_lifecycle -- [--lifecycles N]
//!
//! PostgreSQL: `ONCEPOST_BENCH_PG` (a URL), else an ephemeral cluster with fsync=on from scripts/pg-ephemeral.sh.
// `Begun::Claimed(c) => c, other => panic!(..)`: any other variant ends the run.
#![allow(clippy::match_wildcard_for_single_variants)]
use std::collections::BTreeMap;
use std::time::Instant;

use oncepost::identity::{ActionKind, CanonicalRequest};
use oncepost::store::*;

struct Row {
    backend: &'static str,
    floor_ms: f64,
    commits_per_lifecycle: f64,
    lifecycle_ms: f64,
}

async fn measure(backend: &'static str, location: StoreLocation, n: usize) -> Row {
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
    // warm up both paths
    for i in 0..20 {
        let sql = format!("UPDATE bench_floor SET v = v + 1 WHERE id = 1 AND v = {i}");
        store.execute_raw_for_tests(&sql).await.expect("warm");
    }
    // The floor: one single-row guarded UPDATE, one commit each (autocommit).
    let t = Instant::now();
    for i in 20..20 + n {
        let sql = format!("UPDATE bench_floor SET v = v + 1 WHERE id = 1 AND v = {i}");
        assert_eq!(store.execute_raw_for_tests(&sql).await.expect("floor"), 1);
    }
    let floor_ms = t.elapsed().as_secs_f64() * 1e3 / n as f64;

    let commits_before = store.commits();
    let t = Instant::now();
    for i in 0..n {
        let now = Timestamp::now();
        let created = store
            .create_intent(
                &NewIntent {
                    account: "bench".into(),
                    action: ActionKind::Post,
                    target: String::new(),
                    request: CanonicalRequest::new(
                        Some(&format!("benchmark post {i}")),
                        &BTreeMap::new(),
                    ),
                    source: None,
                },
                now,
            )
            .await
            .expect("create");
        let claim = match store
            .begin(&created.intent.key, "bench-worker", "contract", now)
            .await
            .expect("begin")
        {
            Begun::Claimed(c) => c,
            other => panic!("{other:?}"),
        };
        let auth = store
            .authorize_dispatch(&claim, "contract", now)
            .await
            .expect("authorize");
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
    }
    let lifecycle_ms = t.elapsed().as_secs_f64() * 1e3 / n as f64;
    let commits_per_lifecycle = (store.commits() - commits_before) as f64 / n as f64;
    store.close().await;
    Row {
        backend,
        floor_ms,
        commits_per_lifecycle,
        lifecycle_ms,
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n = args
        .iter()
        .position(|a| a == "--lifecycles")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(300usize);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rows = vec![
        measure(
            "sqlite (WAL, synchronous=FULL)",
            StoreLocation::Sqlite(dir.path().join("bench.db")),
            n,
        )
        .await,
    ];

    let repo = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut owned = None;
    let base = match std::env::var("ONCEPOST_BENCH_PG") {
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
        let db = format!("bench_{}", std::process::id());
        let _ = std::process::Command::new("psql")
            .args([&base, "-qtAc", &format!("CREATE DATABASE {db}")])
            .status();
        let url = format!("{}/{}", &base[..base.rfind('/').unwrap_or(base.len())], db);
        rows.push(
            measure(
                "postgresql 15 (fsync=on, synchronous_commit=on)",
                StoreLocation::Postgres(url),
                n,
            )
            .await,
        );
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
        "| backend | commit floor (ms) | commits / lifecycle | lifecycle (ms) | commits x floor (ms) | ratio |"
    );
    println!("|---|---|---|---|---|---|");
    for r in rows {
        let budget = r.commits_per_lifecycle * r.floor_ms;
        println!(
            "| {} | {:.3} | {:.2} | {:.3} | {:.3} | {:.2}x |",
            r.backend,
            r.floor_ms,
            r.commits_per_lifecycle,
            r.lifecycle_ms,
            budget,
            r.lifecycle_ms / budget
        );
    }
}
