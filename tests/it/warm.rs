//! Warm browsers, through the real binary and real Chromium: a worker keeps an account's browser open between
//! its sends (one launch for several posts), holds the account's lease while the browser waits, gives both up
//! when the browser has waited long enough, and leaves nothing of one send alive into the next:
//! `/hostile/outbox` opens a `noopener` window that resends the LAST post whenever a later page
//! announces a publish, and each post still goes out exactly once. Every count is the platform's or the
//! Chromium wrapper's.
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use oncepost::fixture_platform::Fault;
use oncepost::store::Timestamp;

use crate::kit::{self, Backend, Env, test_db, unique};

/// The queue's pick and the accounts a worker holds: an account leased by ANOTHER holder is passed by, one
/// leased by the picking worker itself (a browser it keeps warm for it) is taken.
async fn the_queue_takes_its_own_warm_accounts_and_passes_others(b: Backend) {
    use oncepost::identity::{ActionKind, CanonicalRequest};
    use oncepost::store::{NewAccount, NewIntent, Policy};
    let db = test_db(b, Policy::default()).await;
    let s = &db.store;
    let now = Timestamp::now();
    s.add_account(
        &NewAccount {
            name: "alice".into(),
            platform: "fixture".into(),
            min_interval_ms: 0,
            dup_window_ms: 0,
        },
        "test",
        now,
    )
    .await
    .unwrap();
    let hash = "a".repeat(64);
    s.record_contract_version(&hash, "fixture", "format = 1", now)
        .await
        .unwrap();
    let key = s
        .create_intent(
            &NewIntent {
                account: "alice".into(),
                action: ActionKind::Post,
                target: String::new(),
                request: CanonicalRequest::new(Some("warm pick"), &Default::default()),
                source: None,
            },
            now,
        )
        .await
        .unwrap()
        .intent
        .key;
    s.queue_intent(&key, "http://127.0.0.1:9", &hash, now, "test", now)
        .await
        .unwrap();
    s.acquire_account_lease("alice", "host-b@x", 60_000, now)
        .await
        .unwrap();
    let taken = s.take_due(1, 1_000, &[], "host-a@x", now).await.unwrap();
    assert!(taken.is_empty(), "another holder's account: {taken:?}");
    let taken = s.take_due(1, 1_000, &[], "host-b@x", now).await.unwrap();
    assert_eq!(taken, [key], "the holder's own account");
}

mod store_level {
    use super::*;
    on_both_backends!(the_queue_takes_its_own_warm_accounts_and_passes_others);
}

/// A script that counts its runs in `<dir>/launches` and then is Chromium (`ONCEPOST_CHROMIUM`).
fn counting_chromium(dir: &Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let real = oncepost::browser::find_chromium().expect("Chromium for the tests");
    let count = dir.join("launches");
    let script = dir.join("counting-chromium");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho launch >> '{}'\nexec '{}' \"$@\"\n",
            count.display(),
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, count)
}

fn launches(count: &Path) -> usize {
    std::fs::read_to_string(count).map_or(0, |s| s.lines().count())
}

/// A Fixturebook env with alice registered and logged in (one synchronous publish: the login link leaves a
/// lasting session in her profile, which the worker's publishes use).
async fn env(b: Backend) -> Env {
    let env = Env::start_on(Fault::default(), b).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    let (code, v, err) = env
        .publish(
            "alice",
            &kit::fixture_contract(),
            &unique("alice logs in"),
            &[],
        )
        .await;
    assert_eq!(code, 0, "{v} {err}");
    env
}

/// Submit `texts` for alice through `contract`, in order (the queue takes the oldest first); their keys.
async fn submit_all(env: &Env, contract: &Path, texts: &[String]) -> Vec<String> {
    let base = env.base_url();
    let mut keys = Vec::new();
    for t in texts {
        let (code, v, err) = env
            .oncepost
            .run_json(&[
                "submit",
                "--json",
                "--contract",
                contract.to_str().unwrap(),
                "--account",
                "alice",
                "--base-url",
                &base,
                "--text",
                t,
            ])
            .await;
        assert_eq!(code, 0, "{v} {err}");
        keys.push(v["key"].as_str().unwrap().to_string());
    }
    keys
}

/// A running `oncepost worker` (SIGTERM on [`Worker::stop`]).
struct Worker(tokio::process::Child);

impl Worker {
    fn start(env: &Env, chromium: &Path, extra: &[&str]) -> Worker {
        let mut args = vec!["worker", "--interval", "1s", "--poll", "100ms"];
        args.extend_from_slice(extra);
        let mut cmd = env.command(&args);
        cmd.env("ONCEPOST_CHROMIUM", chromium)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        Worker(cmd.spawn().expect("start the worker"))
    }

    /// SIGTERM, then its exit code and output.
    async fn stop(self) -> (i32, String, String) {
        let pid = self.0.id().expect("the worker runs") as i32;
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let out = tokio::time::timeout(Duration::from_secs(60), self.0.wait_with_output())
            .await
            .expect("the worker stops within 60 s of SIGTERM")
            .unwrap();
        kit::cli::output_of(&out)
    }
}

/// Wait (bounded) for every key to rest; their states.
async fn rested(env: &Env, keys: &[String]) -> Vec<String> {
    let mut states = Vec::new();
    for k in keys {
        let (code, out, err) = env.run(&["wait", k, "--timeout", "90s"]).await;
        assert_ne!(code, 13, "{k} did not rest within 90 s: {out} {err}");
        states.push(
            env.show(k).await["intent"]["state"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    states
}

/// The pids of Chromium processes running on a profile of this env.
fn chromium_pids(env: &Env) -> Vec<i32> {
    let profile = env.home().join("profiles");
    let needle = format!("--user-data-dir={}", profile.display());
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_string_lossy().parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            String::from_utf8_lossy(&cmdline)
                .contains(&needle)
                .then_some(pid)
        })
        .collect()
}

/// Chromium processes still running on alice's profile of this env.
fn chromium_on_profile(env: &Env) -> usize {
    chromium_pids(env).len()
}

/// Three queued posts of one account go out once each on ONE browser launch; while the browser waits the
/// worker holds the account's lease; after `--warm-idle` it closes the browser and gives the lease back,
/// and a worker that stops leaves no Chromium behind.
async fn one_launch_carries_an_accounts_sends(b: Backend) {
    let env = env(b).await;
    let dir = tempfile::tempdir().unwrap();
    let (chromium, count) = counting_chromium(dir.path());
    let texts: Vec<String> = (1..=3).map(|i| unique(&format!("warm post {i}"))).collect();
    let before = env.arrivals();
    let keys = submit_all(&env, &kit::fixture_contract(), &texts).await;
    let worker = Worker::start(&env, &chromium, &["--warm-idle", "3s"]);
    let states = rested(&env, &keys).await;
    assert_eq!(states, ["published"; 3]);
    for t in &texts {
        assert_eq!(env.copies(t), 1, "{t}");
    }
    assert_eq!(env.arrivals(), before + 3);
    assert_eq!(launches(&count), 1, "one Chromium for the three sends");
    // Idle: the account is this worker's until the browser has waited --warm-idle, then free again.
    let store = env.open_store().await;
    let held = store
        .account_lease("alice", Timestamp::now())
        .await
        .unwrap()
        .expect("the warm browser's lease");
    assert!(held.holder.contains('@'), "{held:?}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while store
        .account_lease("alice", Timestamp::now())
        .await
        .unwrap()
        .is_some()
    {
        assert!(
            Instant::now() < deadline,
            "the idle browser's lease was not given back"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(chromium_on_profile(&env), 0, "the idle browser is closed");
    // The next post launches anew; a stopped worker leaves no Chromium and no lease.
    let t4 = unique("warm post after idle");
    let k4 = submit_all(&env, &kit::fixture_contract(), std::slice::from_ref(&t4)).await;
    assert_eq!(rested(&env, &k4).await, ["published"]);
    assert_eq!(launches(&count), 2);
    let (code, out, err) = worker.stop().await;
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!(env.copies(&t4), 1);
    assert_eq!(chromium_on_profile(&env), 0, "{err}");
    assert!(
        store
            .account_lease("alice", Timestamp::now())
            .await
            .unwrap()
            .is_none()
    );
}

mod through_the_binary {
    use super::*;
    on_both_backends!(one_launch_carries_an_accounts_sends);
}

/// `/hostile/outbox`: each press opens a `noopener` window that resends its post whenever a later
/// page announces a publish. On one warm browser, three posts: each exactly once (the window of one send is
/// closed before the next, so the next press's takeover gets the next post's own create request). Two guards
/// close it, each enough alone: the popup policy and the cleaning between sends (`browser/reuse.rs`); with
/// both taken out this test saw 2, 1 and 0 copies.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nothing_of_one_send_lives_into_the_next() {
    let env = env(Backend::Sqlite).await;
    let contract = env.write_file("outbox.toml", &kit::hostile_contract_text("outbox", None));
    let before = env.arrivals();
    let run = three_warm_sends(&env, &contract, "outbox post").await;
    assert_eq!(run.copies, [1, 1, 1], "{:?}\n{}", run.states, run.out);
    assert_eq!(run.states, ["published"; 3], "{}", run.out);
    assert_eq!(env.arrivals(), before + 3);
    assert_eq!(run.launches, 1, "the sends shared one browser");
}

/// `/hostile/sw-outbox`: each press hands its post to the page's service worker, which sends every post it
/// holds again whenever a later page announces a publish, from the worker itself (in a plain browser: three
/// create requests for two posts, `fixture_platform::chromium::the_service_worker_outbox_sends_...`). A
/// service worker outlives the cleaning between sends, so on one warm browser the last post's copy would
/// come first to the next press's takeover. What holds it, measured: in oncepost's browser a page's
/// service worker never starts (its registration never becomes ready: workers are attached waiting for the
/// debugger, and a service worker is never resumed), so nothing the page hands it runs. Three posts: each
/// exactly once, and nothing but their three create requests reached the platform.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_outbox_in_a_service_worker_never_sends_the_last_post_again() {
    let env = env(Backend::Sqlite).await;
    let contract = env.write_file(
        "sw-outbox.toml",
        &kit::hostile_contract_text("sw-outbox", None),
    );
    let before = env.arrivals();
    let run = three_warm_sends(&env, &contract, "sw outbox post").await;
    assert_eq!(run.copies, [1, 1, 1], "{:?}\n{}", run.states, run.out);
    assert_eq!(run.states, ["published"; 3], "{}", run.out);
    assert_eq!(env.arrivals(), before + 3);
    assert_eq!(run.launches, 1, "the sends shared one browser");
}

/// What one worker did with three queued posts (see [`three_warm_sends`]).
struct WarmRun {
    /// The states the posts rested in, in order.
    states: Vec<String>,
    /// Each post's copies on the platform.
    copies: Vec<usize>,
    /// Chromium launches.
    launches: usize,
    /// The worker's output.
    out: String,
}

/// Three posts (`LABEL 1..3`) of alice queued through `contract` and run by one worker on a counting
/// Chromium, which is stopped afterwards (exit 0).
async fn three_warm_sends(env: &Env, contract: &Path, label: &str) -> WarmRun {
    let dir = tempfile::tempdir().unwrap();
    let (chromium, count) = counting_chromium(dir.path());
    let texts: Vec<String> = (1..=3).map(|i| unique(&format!("{label} {i}"))).collect();
    let keys = submit_all(env, contract, &texts).await;
    let worker = Worker::start(env, &chromium, &[]);
    let states = rested(env, &keys).await;
    let (code, out, err) = worker.stop().await;
    assert_eq!(code, 0, "{out} {err}");
    WarmRun {
        states,
        copies: texts.iter().map(|t| env.copies(t)).collect(),
        launches: launches(&count),
        out: format!("{out}\n{err}"),
    }
}

/// A warm browser that dies while it waits (its Chromium SIGKILLed between two sends) is not used: the next
/// send launches a fresh one and the post goes out once. Two guards, each enough alone: the worker's idle
/// upkeep closes a browser whose connection ended, and `take` asks the browser to answer before a send. With
/// both taken out the second post ended `failed` (its attempt began on a dead browser).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_warm_browser_that_died_while_idle_is_replaced() {
    let env = env(Backend::Sqlite).await;
    let dir = tempfile::tempdir().unwrap();
    let (chromium, count) = counting_chromium(dir.path());
    let worker = Worker::start(&env, &chromium, &[]);
    let t1 = unique("before the browser died");
    let k1 = submit_all(&env, &kit::fixture_contract(), std::slice::from_ref(&t1)).await;
    assert_eq!(rested(&env, &k1).await, ["published"]);
    let pids = chromium_pids(&env);
    assert!(!pids.is_empty(), "the browser is kept warm");
    for pid in pids {
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    // Killed while idle: whether or not the worker has noticed by its next send, the send must not use it.
    let t2 = unique("after the browser died");
    let k2 = submit_all(&env, &kit::fixture_contract(), std::slice::from_ref(&t2)).await;
    let states = rested(&env, &k2).await;
    let (code, out, err) = worker.stop().await;
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!(states, ["published"], "{out}\n{err}");
    assert_eq!((env.copies(&t1), env.copies(&t2)), (1, 1));
    assert_eq!(launches(&count), 2, "a fresh browser for the second send");
}

/// A page's dialog log keeps its watchers: the popup watcher listens to the whole browser, so one left
/// running per send would pile up in a warm browser (each closing every later popup again and recording it
/// into a send long over). While a log is held its popup watcher closes and records a popup; once the log is
/// dropped, none is left. Without the stop on drop, four sends leave four watchers.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_send_over_leaves_no_popup_watcher_in_the_browser() {
    use oncepost::browser::dialogs::{self, DialogEvent, DialogPolicy};
    let profile = tempfile::tempdir().unwrap();
    let session = kit::chromium::session(profile.path()).await;
    let none_left = async |session: &oncepost::browser::BrowserSession| {
        let t = Instant::now();
        while session.popup_watchers() != 0 && t.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        session.popup_watchers()
    };
    for send in 0..4 {
        let page = session
            .browser()
            .new_page("about:blank")
            .await
            .expect("a page");
        let log = dialogs::install(&session, &page, DialogPolicy::default())
            .await
            .expect("watchers installed");
        assert_eq!(session.popup_watchers(), 1, "send {send}");
        if send == 0 {
            // The watcher works while its log is held: the page's popup is closed and recorded.
            page.evaluate("window.open('about:blank#popup'); 1")
                .await
                .expect("the page opens a popup");
            let t = Instant::now();
            while log.events().is_empty() && t.elapsed() < Duration::from_secs(10) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(
                matches!(
                    log.events().as_slice(),
                    [DialogEvent::Popup { closed: true, .. }]
                ),
                "{:?}",
                log.events()
            );
        }
        drop(log);
        let _ = page.close().await;
        assert_eq!(none_left(&session).await, 0, "after send {send}");
    }
    session.close().await;
}

/// A GraphQL app on one warm browser (`fixtures/contracts/graphql.toml`): the contract's read requests are
/// the send's, forgotten between sends with the rest of its guard, and let through again by the next one:
/// each of three queued posts is made once, each send's compose page learns who is logged in (its
/// `Viewer` query) and reads back through `Posts`, all in one launch.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_warm_send_of_a_graphql_app_sends_its_own_declared_queries() {
    let env = env(Backend::Sqlite).await;
    let contract = kit::repo_path("fixtures/contracts/graphql.toml");
    let before = env.arrivals();
    let run = three_warm_sends(&env, &contract, "warm graphql post").await;
    assert_eq!(run.states, ["published"; 3], "{}", run.out);
    assert_eq!(run.copies, [1, 1, 1]);
    assert_eq!(env.arrivals(), before + 3);
    let stats = env.stats();
    assert_eq!(stats.writes_to("POST /graphql Viewer"), 3, "{stats:?}");
    assert!(stats.writes_to("POST /graphql Posts") >= 6, "{stats:?}");
    assert_eq!(run.launches, 1, "the sends shared one browser");
}
