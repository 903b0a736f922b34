//! Process edges, through the real binary: closed stdout/stderr, signals at any moment, crafted account
//! names, file modes wherever `--store` points, control characters in human output, and exit codes.
//!
//! `ONCEPOST_TEST_BIN=/path/to/oncepost` runs these tests against another build (to watch them go red on
//! a binary from before a fix).
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use oncepost::fixture_platform::{
    Fault, FaultMode, FixtureConfig, FixturePlatform, RunningPlatform,
};
use oncepost::identity::{ActionKind, CanonicalRequest};
use oncepost::store::{
    Begun, NewAccount, NewIntent, Policy, Settlement, Store, StoreError, StoreLocation, Timestamp,
};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

fn bin() -> PathBuf {
    std::env::var_os("ONCEPOST_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_oncepost")))
}

fn contract() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("selectors/fixture.toml")
        .display()
        .to_string()
}

fn unique(label: &str) -> String {
    format!("{label} {}", uuid::Uuid::new_v4().simple())
}

struct Env {
    dir: tempfile::TempDir,
    platform: RunningPlatform,
    /// `--store`, when the store is not the data dir's default.
    store: Option<PathBuf>,
}

impl Env {
    async fn start(fault: FaultMode) -> Env {
        Env::start_with(fault, None).await
    }

    /// The data dir is `<tmp>/home` (created by oncepost); `store`, when given, is relative to `<tmp>`.
    async fn start_with(fault: FaultMode, store: Option<&str>) -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut cfg = FixtureConfig::new(dir.path().join("platform"));
        cfg.fault = Fault::new(fault);
        let platform = FixturePlatform::start(cfg).await.expect("platform starts");
        let store = store.map(|s| dir.path().join(s));
        let env = Env {
            dir,
            platform,
            store,
        };
        let (code, out, err) = env
            .run(&[
                "accounts",
                "add",
                "alice",
                "--platform",
                "fixture",
                "--handle",
                "alice",
            ])
            .await;
        assert_eq!(code, 0, "accounts add: {out} {err}");
        env
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn store_path(&self) -> PathBuf {
        self.store
            .clone()
            .unwrap_or_else(|| self.home().join("oncepost.db"))
    }

    fn cmd(&self, args: &[&str]) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(bin());
        c.args(args)
            .env("ONCEPOST_HOME", self.home())
            .env_remove("ONCEPOST_STORE")
            .env_remove("ONCEPOST_LOG")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        if let Some(s) = &self.store {
            c.env("ONCEPOST_STORE", s);
        }
        c
    }

    async fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.cmd(args).output().await.expect("run oncepost");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn publish_args(&self, text: &str, extra: &[&str]) -> Vec<String> {
        let base = self.platform.base_url();
        let mut v: Vec<String> = [
            "publish",
            "--contract",
            &contract(),
            "--account",
            "alice",
            "--base-url",
            &base,
            "--login-url",
            &format!("{base}/login?account=alice"),
            "--text",
            text,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    }

    async fn publish(&self, text: &str, extra: &[&str]) -> (i32, String, String) {
        let args = self.publish_args(text, extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run(&args).await
    }

    async fn intents(&self) -> Vec<Value> {
        let (code, out, err) = self.run(&["intents", "list", "--json"]).await;
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<Value>(&out)
            .expect("intents list --json")
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    async fn key_of(&self, text: &str) -> String {
        self.intents()
            .await
            .iter()
            .find(|i| i["request"]["text"] == text)
            .and_then(|i| i["key"].as_str().map(String::from))
            .unwrap_or_else(|| panic!("no intent for {text:?}"))
    }

    async fn show(&self, key: &str) -> Value {
        let (code, out, err) = self.run(&["intents", "show", key, "--json"]).await;
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).expect("intents show --json")
    }

    fn copies(&self, text: &str) -> usize {
        self.platform
            .posts()
            .iter()
            .filter(|p| p.text == text)
            .count()
    }

    /// The store through the library (the binary has created and migrated it).
    async fn library_store(&self) -> Store {
        Store::open(&StoreLocation::Sqlite(self.store_path()), Policy::default())
            .await
            .expect("open the store")
    }
}

fn kinds(show: &Value) -> Vec<String> {
    crate::kit::event_kinds(&show["events"])
}

fn count(kinds: &[String], kind: &str) -> usize {
    kinds.iter().filter(|k| *k == kind).count()
}

/// A pipe whose read end is closed: every write to it fails with EPIPE (as `oncepost ... 2>&1 | head` once
/// head has exited). Returns two handles on the write end, for stdout and stderr.
///
/// `std::io::pipe` opens both ends close-on-exec: every test shares this process, and a read end inherited by
/// another test's child spawned in between would keep the pipe open (writes would block, not fail).
fn closed_pipe() -> (Stdio, Stdio) {
    let (read, write) = std::io::pipe().expect("pipe");
    drop(read);
    let write2 = write.try_clone().expect("dup");
    (Stdio::from(write), Stdio::from(write2))
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) to our own child process.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

// ---------- closed stdout and stderr ----------

/// With stdout and stderr on a pipe nobody reads (EPIPE on every write), publish neither panics nor changes
/// its outcome: exit 0, the intent settled published, one copy. Progress lines, tracing at info (text and
/// JSON formats) and the final report are all written into the dead pipe. Also with both streams closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_with_stdout_and_stderr_on_a_closed_pipe_settles_as_normal() {
    let env = Env::start(FaultMode::Normal).await;
    for (label, extra) in [
        ("text", vec![]),
        ("json", vec!["--json", "--log-format", "json"]),
        ("closed", vec![]),
    ] {
        let text = unique(&format!("closed pipe {label}"));
        let args = env.publish_args(&text, &extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut cmd = env.cmd(&args);
        cmd.env("ONCEPOST_LOG", "info");
        if label == "closed" {
            // SAFETY: only async-signal-safe close(2) between fork and exec.
            unsafe {
                cmd.pre_exec(|| {
                    libc::close(1);
                    libc::close(2);
                    Ok(())
                });
            }
        } else {
            let (out, err) = closed_pipe();
            cmd.stdout(out).stderr(err);
        }
        let status = cmd.status().await.expect("run publish");
        assert_eq!(status.code(), Some(0), "{label}: publish exit {status:?}");
        let key = env.key_of(&text).await;
        let show = env.show(&key).await;
        assert_eq!(show["intent"]["state"], "published", "{label}: {show}");
        assert_eq!(env.copies(&text), 1, "{label}");
    }
    // A store command into the dead pipe, too.
    let mut cmd = env.cmd(&["intents", "list"]);
    let (out, err) = closed_pipe();
    let status = cmd.stdout(out).stderr(err).status().await.expect("run");
    assert_eq!(status.code(), Some(0));
}

// ---------- signals ----------

/// An indeterminate intent whose post IS on the platform (commit-then-500), past its propagation window.
async fn indeterminate_intent(env: &Env) -> (String, String) {
    let text = unique("signal lookup");
    let (code, out, err) = env.publish(&text, &["--json"]).await;
    assert_eq!(code, 10, "{out} {err}");
    let key = env.key_of(&text).await;
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    (key, text)
}

/// Wait until the store shows the intent's lookup recorded (the ticket), then return.
async fn wait_for_ticket(store: &Store, key: &str, within: Duration) {
    let key = oncepost::identity::DeliveryKey::parse(key).expect("key");
    let until = Instant::now() + within;
    loop {
        if store.intent(&key).await.expect("intent").reconcile_count >= 1 {
            return;
        }
        assert!(Instant::now() < until, "no lookup was recorded in time");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The line `BrowserLookup` logs (at info, `ONCEPOST_LOG=oncepost=info`) when it starts waiting for a busy
/// browser profile.
const PROFILE_WAIT_LINE: &str = "browser profile busy: the lookup waits for it";

/// Read `child`'s stderr until the lookup says it waits for the busy profile (a signal from the process, not
/// a guess of how long it takes to get there on a loaded machine); the rest of stderr is returned when the
/// child exits.
async fn wait_for_profile_wait(
    child: &mut tokio::process::Child,
) -> tokio::task::JoinHandle<String> {
    let mut lines = tokio::io::BufReader::new(child.stderr.take().expect("stderr piped")).lines();
    let mut seen = Vec::new();
    let waiting = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(l)) = lines.next_line().await {
            let hit = l.contains(PROFILE_WAIT_LINE);
            seen.push(l);
            if hit {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    assert!(waiting, "the lookup never waited for the profile: {seen:?}");
    tokio::spawn(async move {
        let mut rest = seen.join("\n");
        while let Ok(Some(l)) = lines.next_line().await {
            rest.push('\n');
            rest.push_str(&l);
        }
        rest
    })
}

/// Every lookup that was recorded as started has its result recorded.
fn every_started_lookup_has_a_result(show: &Value) -> (usize, usize) {
    let k = kinds(show);
    let started = count(&k, "reconcile_started");
    let results = count(&k, "reconcile_found") + count(&k, "reconcile_not_found");
    assert_eq!(
        started, results,
        "a lookup started without a recorded result: {k:?}"
    );
    assert!(show["intent"]["lookup_expires_at"].is_null(), "{show}");
    (started, results)
}

/// SIGTERM to the worker while its first pass is in the lookup (the ticket is recorded): the lookup runs to
/// its end and its result is recorded (found: published); the worker exits 0. Before the fix the worker
/// died at once, leaving the automatic lookup spent with no result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_to_the_worker_during_its_first_lookup_records_that_lookup() {
    let env = Env::start(FaultMode::CommitThen500).await;
    let (key, text) = indeterminate_intent(&env).await;
    let store = env.library_store().await;
    let base = env.platform.base_url();
    let c = contract();
    let child = env
        .cmd(&[
            "worker",
            "--contract",
            &c,
            "--base-url",
            &base,
            "--interval",
            "30s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("worker");
    wait_for_ticket(&store, &key, Duration::from_secs(30)).await;
    signal(child.id().expect("pid"), libc::SIGTERM);
    let out = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
        .await
        .expect("worker stopped in time")
        .expect("worker output");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "worker: {:?} {err}", out.status);
    let show = env.show(&key).await;
    assert_eq!(every_started_lookup_has_a_result(&show), (1, 1));
    assert_eq!(show["intent"]["state"], "published", "{show}");
    assert_eq!(env.copies(&text), 1);
}

/// SIGTERM to the worker while its first pass waits for the account's browser profile (a publish holds it):
/// the lookup never starts, nothing is recorded, the automatic lookup stays unspent, and the worker exits 0
/// promptly (it does not wait out the profile).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_to_the_worker_before_its_lookup_starts_spends_nothing() {
    let env = Env::start(FaultMode::CommitThen500).await;
    let (key, _) = indeterminate_intent(&env).await;
    let lock_path = oncepost::lock::profile_lock_path(&env.home().join("profiles"), "alice")
        .expect("a valid name");
    let _busy = oncepost::lock::FileLock::try_take(&lock_path)
        .expect("lock")
        .expect("free");
    let base = env.platform.base_url();
    let c = contract();
    let mut child = env
        .cmd(&[
            "worker",
            "--contract",
            &c,
            "--base-url",
            &base,
            "--interval",
            "30s",
        ])
        .env("ONCEPOST_LOG", "oncepost=info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("worker");
    let stderr = wait_for_profile_wait(&mut child).await;
    let sent = Instant::now();
    signal(child.id().expect("pid"), libc::SIGTERM);
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("worker stopped in time")
        .expect("worker output");
    assert!(
        sent.elapsed() < Duration::from_secs(10),
        "{:?}",
        sent.elapsed()
    );
    let err = stderr.await.expect("stderr");
    assert_eq!(out.status.code(), Some(0), "worker: {:?} {err}", out.status);
    let show = env.show(&key).await;
    assert_eq!(every_started_lookup_has_a_result(&show), (0, 0));
    assert_eq!(show["intent"]["state"], "indeterminate");
    assert_eq!(show["intent"]["reconcile_count"], 0, "{show}");
}

/// SIGINT to `reconcile --key` during its lookup: the lookup finishes and is recorded (exit 0, published).
/// SIGINT before the lookup starts (the profile is busy): exit 130, nothing recorded or spent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_to_reconcile_never_spends_a_lookup_that_did_not_run() {
    let env = Env::start(FaultMode::CommitThen500).await;
    let base = env.platform.base_url();
    let c = contract();
    // before the lookup starts
    let (key, _) = indeterminate_intent(&env).await;
    let lock_path = oncepost::lock::profile_lock_path(&env.home().join("profiles"), "alice")
        .expect("a valid name");
    let busy = oncepost::lock::FileLock::try_take(&lock_path)
        .expect("lock")
        .expect("free");
    let mut child = env
        .cmd(&[
            "reconcile",
            "--contract",
            &c,
            "--base-url",
            &base,
            "--key",
            &key,
        ])
        .env("ONCEPOST_LOG", "oncepost=info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("reconcile");
    let stderr = wait_for_profile_wait(&mut child).await;
    signal(child.id().expect("pid"), libc::SIGINT);
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("reconcile stopped in time")
        .expect("output");
    let err = stderr.await.expect("stderr");
    assert_eq!(out.status.code(), Some(130), "{:?} {err}", out.status);
    assert!(err.contains("nothing recorded"), "{err}");
    let show = env.show(&key).await;
    assert_eq!(every_started_lookup_has_a_result(&show), (0, 0));
    assert_eq!(show["intent"]["reconcile_count"], 0);
    drop(busy);
    // during the lookup
    let store = env.library_store().await;
    let child = env
        .cmd(&[
            "reconcile",
            "--contract",
            &c,
            "--base-url",
            &base,
            "--key",
            &key,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("reconcile");
    wait_for_ticket(&store, &key, Duration::from_secs(30)).await;
    signal(child.id().expect("pid"), libc::SIGINT);
    let out = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
        .await
        .expect("reconcile stopped in time")
        .expect("output");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{:?} {err}", out.status);
    let show = env.show(&key).await;
    assert_eq!(every_started_lookup_has_a_result(&show), (1, 1));
    assert_eq!(show["intent"]["state"], "published");
}

/// SIGINT to publish at several moments (on its progress lines): the intent is left in a declared state,
/// which `sweep` resolves once its lease runs out (a claim released: pending; an authorized dispatch:
/// indeterminate), and the platform's copies agree with it. Rerunning the same command then publishes a
/// pending intent once, and never sends again for an indeterminate one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_to_publish_at_any_moment_leaves_a_declared_state() {
    let env = Env::start(FaultMode::Normal).await;
    for moment in [
        "intent created",
        "browser launched",
        "compose page open",
        "begun (claim + attempt)",
        "evidence before dispatch",
        "pressed; create request carried",
    ] {
        let text = unique("sigint publish");
        let leases = ["--claim-lease", "8s", "--dispatch-lease", "8s"];
        let args = env.publish_args(&text, &leases);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = env
            .cmd(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("publish");
        let mut lines = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
        let mut seen = Vec::new();
        let hit = tokio::time::timeout(Duration::from_secs(60), async {
            while let Ok(Some(l)) = lines.next_line().await {
                let found = l.contains(moment);
                seen.push(l);
                if found {
                    return true;
                }
            }
            false
        })
        .await
        .unwrap_or(false);
        assert!(hit, "{moment}: never reached: {seen:?}");
        signal(child.id().expect("pid"), libc::SIGINT);
        let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .expect("publish stopped")
            .expect("status");
        let key = env.key_of(&text).await;
        let show = env.show(&key).await;
        let state = show["intent"]["state"].as_str().unwrap_or("").to_string();
        // Whatever the moment, the intent is in the state table, and after its lease a sweep resolves it.
        if let Some(until) = show["intent"]["lease_expires_at"].as_i64() {
            let wait = until - Timestamp::now().0 + 200;
            if wait > 0 {
                tokio::time::sleep(Duration::from_millis(wait as u64)).await;
            }
        }
        let (code, _, err) = env.run(&["sweep"]).await;
        assert_eq!(code, 0, "{err}");
        let show = env.show(&key).await;
        let after = show["intent"]["state"].as_str().unwrap_or("").to_string();
        let copies = env.copies(&text);
        assert!(
            show["intent"]["lease_owner"].is_null(),
            "{moment}: a lease left after the sweep: {show}"
        );
        match after.as_str() {
            "pending" | "failed" => assert_eq!(copies, 0, "{moment}: {after} with a copy"),
            "published" => assert_eq!(copies, 1, "{moment}"),
            "indeterminate" | "parked" => assert!(copies <= 1, "{moment}"),
            other => panic!(
                "{moment}: undeclared state {other:?} (exit {status:?}, before sweep {state})"
            ),
        }
        // Rerun: a pending intent publishes once; anything else is answered, never sent again.
        let (code, _, err) = env.publish(&text, &[]).await;
        match after.as_str() {
            "pending" => {
                assert_eq!(code, 0, "{moment}: rerun {err}");
                assert_eq!(env.copies(&text), 1, "{moment}");
            }
            _ => assert_eq!(env.copies(&text), copies, "{moment}: rerun sent again"),
        }
    }
}

// ---------- account names ----------

/// Crafted account names are refused wherever they enter: every command that takes one (exit 2, the
/// message naming the rule, escaped) and the store itself; nothing is created outside the data dir.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crafted_account_names_are_refused_everywhere_they_enter() {
    let env = Env::start(FaultMode::Normal).await;
    let long = "a".repeat(65);
    let bad = [
        "../../../escaped",
        "./alice",
        "alice/../alice",
        "a\\b",
        ".",
        "..",
        "...",
        ".alice",
        "",
        "al ice",
        "alice\n",
        "a\u{1b}[2J",
        "caf\u{e9}",
        long.as_str(),
    ];
    let base = env.platform.base_url();
    let c = contract();
    for name in bad {
        for args in [
            vec!["accounts", "add", name, "--platform", "fixture"],
            vec!["accounts", "rotate", name],
            vec!["accounts", "revoke", name],
            vec!["switch", "on", "--account", name],
            vec![
                "publish",
                "--contract",
                &c,
                "--account",
                name,
                "--base-url",
                &base,
                "--text",
                "x",
            ],
            vec![
                "probe",
                "--contract",
                &c,
                "--account",
                name,
                "--base-url",
                &base,
            ],
        ] {
            let (code, out, err) = env.run(&args).await;
            assert_eq!(code, 2, "{args:?}: {out} {err}");
            assert!(err.contains("account name"), "{args:?}: {err}");
            assert!(
                err.contains("A-Z a-z 0-9 . _ @ -"),
                "{args:?}: the rule is not named: {err}"
            );
            assert!(
                !err.chars().any(|c| c.is_control() && c != '\n'),
                "{args:?}: raw control characters: {err:?}"
            );
        }
    }
    // Nothing escaped the data dir, and no profile other than alice's could have been made.
    let mut outside: Vec<String> = std::fs::read_dir(env.dir.path())
        .expect("read tmp")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    outside.sort();
    assert_eq!(outside, ["home", "platform"]);
    assert!(!env.home().parent().unwrap().join("escaped").exists());
    assert_eq!(env.copies("x"), 0);
    // Names inside the rule work.
    for good in ["alice.work@example-1_x", &"b".repeat(64)] {
        let (code, _, err) = env
            .run(&["accounts", "add", good, "--platform", "fixture"])
            .await;
        assert_eq!(code, 0, "{good}: {err}");
    }
    // The store refuses them too (a library caller, or a name stored before the rule).
    let store = env.library_store().await;
    for name in ["../x", "./alice", ".."] {
        let r = store
            .add_account(
                &NewAccount {
                    name: name.into(),
                    platform: "fixture".into(),
                    min_interval_ms: 0,
                    dup_window_ms: 0,
                },
                "test",
                Timestamp::now(),
            )
            .await;
        assert!(matches!(r, Err(StoreError::Invalid(_))), "{name}: {r:?}");
        let r = store
            .create_intent(&post(name, "x"), Timestamp::now())
            .await;
        assert!(matches!(r, Err(StoreError::Invalid(_))), "{name}: {r:?}");
    }
}

fn post(account: &str, text: &str) -> NewIntent {
    NewIntent {
        account: account.into(),
        action: ActionKind::Post,
        target: String::new(),
        request: CanonicalRequest::new(Some(text), &BTreeMap::new()),
        source: None,
    }
}

// ---------- file modes ----------

/// Walk `root`: every folder 0700 and every regular file 0600 (symbolic links and sockets have no mode of
/// their own). Returns the offenders and how many entries were checked.
fn loose_modes(root: &Path) -> (Vec<String>, usize) {
    let mut bad = Vec::new();
    let mut seen = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let Ok(md) = std::fs::symlink_metadata(&p) else {
            continue; // gone while we walked (Chromium's temporary files)
        };
        let mode = md.permissions().mode() & 0o7777;
        let ft = md.file_type();
        if ft.is_dir() {
            seen += 1;
            if mode != 0o700 {
                bad.push(format!("{:o} dir  {}", mode, p.display()));
            }
            if let Ok(rd) = std::fs::read_dir(&p) {
                stack.extend(rd.flatten().map(|e| e.path()));
            }
        } else if ft.is_file() {
            seen += 1;
            if mode != 0o600 {
                bad.push(format!("{:o} file {}", mode, p.display()));
            }
        }
    }
    (bad, seen)
}

/// With `--store` in a fresh folder outside the data dir, everything a publish creates (the SQLite file and
/// its -wal/-shm, evidence, lock files, the browser profile) is 0600 and every folder 0700: in the data dir
/// and in the store's folders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_created_is_private_wherever_the_store_points() {
    let env = Env::start_with(FaultMode::Normal, Some("elsewhere/deeper/oncepost.db")).await;
    let text = unique("private modes");
    let (code, out, err) = env.publish(&text, &["--json"]).await;
    assert_eq!(code, 0, "{out} {err}");
    let store_dir = env.dir.path().join("elsewhere");
    assert!(env.store_path().exists());
    // SQLite removes -wal and -shm when its last connection closes: walk while an oncepost process (a
    // worker, idle between passes) holds the store open, so they are there to be checked.
    let base = env.platform.base_url();
    let c = contract();
    let mut worker = env
        .cmd(&[
            "worker",
            "--contract",
            &c,
            "--base-url",
            &base,
            "--interval",
            "60s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("worker");
    let side = |ext: &str| PathBuf::from(format!("{}-{ext}", env.store_path().display()));
    let until = Instant::now() + Duration::from_secs(20);
    while !(side("wal").exists() && side("shm").exists()) {
        assert!(
            Instant::now() < until,
            "the store's -wal/-shm never appeared"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (bad_store, n_store) = loose_modes(&store_dir);
    let (bad_home, n_home) = loose_modes(&env.home());
    signal(worker.id().expect("pid"), libc::SIGTERM);
    let _ = tokio::time::timeout(Duration::from_secs(30), worker.wait()).await;
    assert!(n_store >= 4 && n_home >= 10, "{n_store} {n_home}");
    assert!(
        bad_store.is_empty() && bad_home.is_empty(),
        "not private:\n{}\n{}",
        bad_store.join("\n"),
        bad_home.join("\n")
    );
    for sub in [
        "evidence",
        "locks",
        "profiles",
        "profiles/alice",
        "profiles/.locks",
    ] {
        assert!(env.home().join(sub).is_dir(), "{sub} was not created");
    }
}

// ---------- control characters ----------

const HOSTILE_ID: &str = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[31mid\u{9b}1m\u{202e}di";
const HOSTILE_NOTE: &str = "look\u{1b}[1A\u{1b}[2K forged line\r\u{7}\u{8} end";

/// A platform id and permalink full of terminal escapes, and a note with control characters, reach a
/// terminal only escaped: `intents show`, `intents list`, and errors that echo input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_are_escaped_in_human_output() {
    let env = Env::start(FaultMode::Normal).await;
    let store = env.library_store().await;
    let now = Timestamp::now();
    let published = store
        .create_intent(&post("alice", "hostile \u{1b}[5m id"), now)
        .await
        .expect("create")
        .intent
        .key;
    let claim = match store
        .begin(&published, "w", "contract", now)
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
                platform_id: Some(HOSTILE_ID.into()),
                permalink: Some(format!("http://x/p/{HOSTILE_ID}")),
                verdict: serde_json::json!({}),
            },
            now,
        )
        .await
        .expect("settle");
    let parked = store
        .create_intent(&post("alice", "to be parked"), now)
        .await
        .expect("create")
        .intent
        .key;
    let (code, _, err) = env
        .run(&[
            "park",
            parked.as_str(),
            "--reason",
            HOSTILE_NOTE,
            "--by",
            "rev\u{1b}[8m",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let mut outputs = Vec::new();
    for args in [
        vec!["intents", "show", published.as_str()],
        vec!["intents", "show", parked.as_str()],
        vec!["intents", "list"],
        vec!["intents", "show", "\u{1b}[2Jnot-a-key"],
        vec!["intents", "\u{1b}[2Jbogus"],
        vec![
            "accounts",
            "add",
            "x\u{1b}]0;t\u{7}",
            "--platform",
            "fixture",
        ],
    ] {
        let (_, out, err) = env.run(&args).await;
        for (stream, s) in [("stdout", &out), ("stderr", &err)] {
            assert!(
                !s.chars()
                    .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
                "{args:?} {stream}: raw control characters: {s:?}"
            );
        }
        outputs.push(out + &err);
    }
    assert!(
        outputs[0].contains("platform id \\u{1b}]0;owned\\u{7}"),
        "{}",
        outputs[0]
    );
    assert!(outputs[0].contains("\\u{202e}"), "{}", outputs[0]);
    assert!(
        outputs[1].contains("forged line\\r\\u{7}\\u{8} end"),
        "{}",
        outputs[1]
    );
    assert!(outputs[1].contains("rev\\u{1b}[8m"), "{}", outputs[1]);
    // JSON output keeps the stored values exactly (JSON escapes them by itself).
    let show = env.show(published.as_str()).await;
    assert_eq!(show["intent"]["platform_id"], HOSTILE_ID);
}

// ---------- exit codes ----------

/// An unreachable platform (connection refused at the first page load) is bad input: exit 2 naming the
/// problem, with and without look-before-write, and no attempt is begun. Oversize text is bad input too,
/// naming the limit, and no intent is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_platform_and_oversize_text_are_bad_input() {
    let env = Env::start(FaultMode::Normal).await;
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let dead = format!("http://127.0.0.1:{port}");
    let c = contract();
    for extra in [vec![], vec!["--no-look-before-write"]] {
        let text = unique("unreachable");
        let mut args = vec![
            "publish",
            "--contract",
            &c,
            "--account",
            "alice",
            "--base-url",
            &dead,
            "--text",
            &text,
        ];
        args.extend_from_slice(&extra);
        let (code, out, err) = env.run(&args).await;
        assert_eq!(code, 2, "{extra:?}: {out} {err}");
        assert!(
            err.contains("cannot reach the platform") && err.contains("ERR_CONNECTION_REFUSED"),
            "{extra:?}: {err}"
        );
        let show = env.show(&env.key_of(&text).await).await;
        assert_eq!(show["intent"]["state"], "pending", "{show}");
        assert_eq!(show["attempts"].as_array().map(Vec::len), Some(0), "{show}");
    }
    let before = env.intents().await.len();
    let base = env.platform.base_url();
    let big = "x".repeat(1_000_000);
    let file = env.dir.path().join("big.txt");
    std::fs::write(&file, &big).expect("write");
    let f = file.display().to_string();
    let just_over = "y".repeat(64 * 1024 + 1);
    for body in [
        vec!["--text-file", f.as_str()],
        vec!["--text", just_over.as_str()],
        vec!["--text", "ok", "--field", &format!("title={just_over}")],
    ] {
        let mut args = vec![
            "publish",
            "--contract",
            &c,
            "--account",
            "alice",
            "--base-url",
            &base,
        ];
        args.extend_from_slice(&body);
        let (code, _, err) = env.run(&args).await;
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("65536 bytes"), "the limit is not named: {err}");
    }
    assert_eq!(
        env.intents().await.len(),
        before,
        "an oversize intent was created"
    );
    assert_eq!(env.platform.stats().create_arrivals, 0);
}

/// A SQLite store held by another writer: exit 5, and the message reports the real wait (about
/// `--lock-wait`), not "0 ms".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_message_reports_the_real_wait() {
    use sqlx::Connection;
    let env = Env::start(FaultMode::Normal).await;
    let store = env.library_store().await;
    let key = store
        .create_intent(&post("alice", "locked out"), Timestamp::now())
        .await
        .expect("create")
        .intent
        .key;
    let url = format!("sqlite://{}", env.store_path().display());
    let mut holder = sqlx::SqliteConnection::connect(&url)
        .await
        .expect("connect");
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut holder)
        .await
        .expect("take the write lock");
    let started = Instant::now();
    let (code, _, err) = env
        .run(&["--lock-wait", "1s", "park", key.as_str(), "--reason", "x"])
        .await;
    let took = started.elapsed();
    sqlx::query("ROLLBACK")
        .execute(&mut holder)
        .await
        .expect("rollback");
    assert_eq!(code, 5, "{err}");
    let waited: u64 = err
        .split("waited ")
        .nth(1)
        .and_then(|r| r.split(" ms").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no wait in {err}"));
    assert!(
        (900..=took.as_millis() as u64).contains(&waited),
        "waited {waited} ms reported, {took:?} taken: {err}"
    );
}
