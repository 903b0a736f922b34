//! `oncepost reconcile` through the real binary and real Chromium: an indeterminate publish is settled by
//! LOOKING at the platform once (found -> published, not found -> parked), and no create request ever follows
//! an indeterminate state.
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::time::Duration;

use oncepost::fixture_platform::{Fault, FaultMode};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

use crate::kit;

/// The kit's platform and data dir with alice (handle alice) added; the bundled contract.
struct Env {
    kit: kit::Env,
    contract: String,
}

impl Deref for Env {
    type Target = kit::Env;
    fn deref(&self) -> &kit::Env {
        &self.kit
    }
}

impl Env {
    async fn start(fault: FaultMode) -> Env {
        let kit = kit::Env::start(Fault::new(fault)).await;
        kit.add_account("alice", &["--handle", "alice"]).await;
        Env {
            kit,
            contract: kit::fixture_contract().display().to_string(),
        }
    }

    async fn publish(&self, text: &str) -> (i32, Value) {
        // Logged in, so the post shows alice as its author (the lookup settles only on her own posts).
        let args = self
            .kit
            .publish_args("alice", Path::new(&self.contract), text);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = self.run(&args).await;
        (
            code,
            serde_json::from_str(&out)
                .unwrap_or_else(|_| panic!("publish printed no JSON: {out} {err}")),
        )
    }

    async fn reconcile(&self, extra: &[&str]) -> (i32, String, String) {
        let base = self.base_url();
        let mut args = vec![
            "reconcile",
            "--contract",
            &self.contract,
            "--base-url",
            &base,
        ];
        args.extend_from_slice(extra);
        self.run(&args).await
    }
}

fn profile_dir(home: &Path) -> PathBuf {
    home.join("profiles")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_committed_but_unanswered_post_is_found_and_published_without_a_resend() {
    let env = Env::start(FaultMode::CommitThen500).await;
    let text = format!("committed then 500 {}", uuid::Uuid::new_v4().simple());
    let (code, v) = env.publish(&text).await;
    assert_eq!(code, 10, "{v}");
    let key = v["key"].as_str().unwrap().to_string();
    assert_eq!(env.platform.stats().create_arrivals, 1);
    // right away, a lookup would mean nothing: refused, nothing recorded
    let (code, _, err) = env.reconcile(&["--key", &key]).await;
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("too early"), "{err}");
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let (code, out, err) = env.reconcile(&["--key", &key, "--json"]).await;
    assert_eq!(code, 0, "{out} {err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["state"], "published");
    assert_eq!(r["outcome"]["result"], "found");
    let post = env
        .platform
        .posts()
        .into_iter()
        .find(|p| p.text == text)
        .expect("the post is there");
    assert_eq!(r["outcome"]["platform_id"], post.id.as_str());
    // the automatic lookup is spent; and nothing was ever sent again
    let (code, _, _) = env.reconcile(&["--key", &key]).await;
    assert_eq!(code, 4);
    assert_eq!(
        env.platform.stats().create_arrivals,
        1,
        "a create request followed an indeterminate state"
    );
    assert!(profile_dir(env.dir.path()).join("alice").is_dir());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_that_never_arrived_is_parked_for_a_person_not_resent() {
    let env = Env::start(FaultMode::ResetBeforeRead).await;
    let text = format!("reset before read {}", uuid::Uuid::new_v4().simple());
    let (code, v) = env.publish(&text).await;
    assert_eq!(code, 10, "{v}");
    let key = v["key"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    // the batch form: JSON lines, one per due intent
    let (code, out, err) = env.reconcile(&["--due"]).await;
    assert_eq!(code, 0, "{out} {err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert_eq!(lines[0]["key"], key.as_str());
    assert_eq!(lines[0]["state"], "parked");
    let (_, shown, _) = env.run(&["intents", "show", &key, "--json"]).await;
    let t: Value = serde_json::from_str(&shown).unwrap();
    let kinds: Vec<&str> = t["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    let started = kinds
        .iter()
        .position(|k| *k == "reconcile_started")
        .unwrap();
    let nf = kinds
        .iter()
        .position(|k| *k == "reconcile_not_found")
        .unwrap();
    assert!(started < nf, "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"parked"));
    assert!(kinds.contains(&"evidence"), "{kinds:?}");
    assert_eq!(
        env.platform.stats().create_arrivals,
        1,
        "a create request followed an indeterminate state"
    );
    assert_eq!(env.platform.posts().len(), 0);
    // a person asks for another lookup; it is recorded as theirs and changes nothing on the platform
    let (code, _, err) = env
        .reconcile(&["--key", &key, "--again", "--by", "dana"])
        .await;
    assert_eq!(code, 12, "{err}");
    assert_eq!(env.platform.stats().create_arrivals, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_runs_passes_and_stops_cleanly_on_sigterm() {
    let env = Env::start(FaultMode::Normal).await;
    let base = env.platform.base_url();
    let (code, out, err) = env
        .run(&[
            "worker",
            "--contract",
            &env.contract,
            "--base-url",
            &base,
            "--interval",
            "100ms",
            "--passes",
            "2",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let passes: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(passes.len(), 2, "{out}");
    assert!(
        passes[0]["sweep"]["made_indeterminate"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // unattended: runs until SIGTERM, then finishes its pass and exits 0
    let mut child = tokio::process::Command::new(kit::BIN)
        .args([
            "worker",
            "--contract",
            &env.contract,
            "--base-url",
            &base,
            "--interval",
            "200ms",
        ])
        .env("ONCEPOST_HOME", env.dir.path())
        .env_remove("ONCEPOST_STORE")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Signal once the worker has printed its first pass (it handles SIGTERM from its first line on): a fixed
    // second after spawning may still be before that line on a loaded 2-core machine, and a process killed
    // by the signal's default action is not the stop under test.
    let mut passes = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(60), passes.next_line())
        .await
        .expect("the worker printed a pass within 60 s")
        .unwrap()
        .expect("a pass line");
    serde_json::from_str::<Value>(&first).expect("a pass is one JSON line");
    // Keep reading its stdout so that no pass waits on a full pipe.
    let drain = tokio::spawn(async move { while let Ok(Some(_)) = passes.next_line().await {} });
    let pid = child.id().unwrap() as i32;
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("worker stopped in time")
        .unwrap();
    drain.abort();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("worker stopped after"));
}

/// `worker --metrics 0`: `/metrics` is Prometheus text (every sample line `name{label="v"} number`, every
/// family with HELP and TYPE) counting the store's intents by state and this worker's passes; `/healthz`
/// answers ok while passes come; 127.0.0.1 only; a port already taken is bad input (exit 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_serves_metrics_and_health_on_loopback() {
    let env = Env::start(FaultMode::Normal).await;
    let (code, v) = env.publish(&kit::unique("metrics")).await;
    assert_eq!(code, 0, "{v}");
    // An account a worker of this host set aside (its login here ended): a gauge of this host's.
    let aside = env.dir.path().join("profiles/.set-aside");
    std::fs::create_dir_all(&aside).unwrap();
    std::fs::write(
        aside.join("carol.json"),
        r#"{"account": "carol", "why": "the create request was answered HTTP 401", "key": "k", "at": 1}"#,
    )
    .unwrap();
    let mut child = tokio::process::Command::new(kit::BIN)
        .args(["worker", "--interval", "200ms", "--metrics", "0"])
        .env("ONCEPOST_HOME", env.dir.path())
        .env_remove("ONCEPOST_STORE")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(l)) = lines.next_line().await {
            if let Some(rest) = l.strip_prefix("metrics: ") {
                return rest.split_whitespace().next().unwrap().to_string();
            }
        }
        panic!("the worker printed no metrics address");
    })
    .await
    .expect("metrics address in time");
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let http = reqwest::Client::new();
    // Until the worker has finished a pass.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let text = loop {
        let t = http.get(&url).send().await.unwrap().text().await.unwrap();
        if !t.contains("oncepost_worker_passes_total 0\n") {
            break t;
        }
        assert!(tokio::time::Instant::now() < deadline, "no pass: {t}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let sample =
        regex::Regex::new(r#"^[a-z_]+(\{[a-z_]+="[a-z_]+"\})? [0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?$"#)
            .unwrap();
    let mut families = std::collections::BTreeMap::new();
    for l in text.lines() {
        if let Some(rest) = l
            .strip_prefix("# HELP ")
            .or_else(|| l.strip_prefix("# TYPE "))
        {
            *families
                .entry(rest.split(' ').next().unwrap().to_string())
                .or_insert(0) += 1;
        } else {
            assert!(sample.is_match(l), "not a sample line: {l:?}\n{text}");
            let name = l.split(['{', ' ']).next().unwrap();
            assert_eq!(
                families.get(name),
                Some(&2),
                "{name} has HELP and TYPE before it:\n{text}"
            );
        }
    }
    assert!(
        text.contains("oncepost_intents{state=\"published\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("oncepost_intents{state=\"pending\"} 0\n"),
        "{text}"
    );
    assert!(
        text.contains("oncepost_queue_oldest_pending_age_seconds 0\n"),
        "{text}"
    );
    assert!(text.contains("oncepost_accounts_set_aside 1\n"), "{text}");
    // This worker published nothing: no attempt, no browser; the refusals family is there, empty.
    for line in [
        "oncepost_browser_launches_total 0\n",
        "oncepost_publish_attempts_total 0\n",
        "# TYPE oncepost_authorizations_refused_total counter\n",
    ] {
        assert!(text.contains(line), "{line} {text}");
    }
    let health = http
        .get(url.replace("/metrics", "/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().await.unwrap(), "ok\n");
    // SAFETY: kill(2) to our own child process.
    unsafe {
        libc::kill(child.id().unwrap() as i32, libc::SIGTERM);
    }
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("the worker stops")
        .unwrap();
    assert_eq!(status.code(), Some(0));

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let (code, _, err) = env
        .run(&["worker", "--passes", "1", "--metrics", &port])
        .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot listen"), "{err}");
}
