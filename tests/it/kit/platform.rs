//! A Fixturebook platform started in-process, with a data dir for `oncepost` next to it: the `Env` the
//! binary-driven tests share (each module wraps it with its own contract and account).

use std::path::{Path, PathBuf};

use oncepost::fixture_platform::{Fault, FixtureConfig, FixturePlatform, RunningPlatform, Stats};
use serde_json::Value;

use super::{Backend, Oncepost, fresh_pg_url};

/// A temp dir holding the platform's files (`<dir>/platform`) and the data dir, a running platform, and
/// the binary pointed at that data dir.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub platform: RunningPlatform,
    pub oncepost: Oncepost,
}

impl Env {
    /// A platform with `fault`, the data dir the temp dir itself, its store the default SQLite file.
    pub async fn start(fault: Fault) -> Env {
        Env::start_with(fault, None, None).await
    }

    /// [`Env::start`] with the store on `backend` (PostgreSQL: a fresh database of the test cluster).
    pub async fn start_on(fault: Fault, backend: Backend) -> Env {
        let store = (backend == Backend::Postgres).then(fresh_pg_url);
        Env::start_with(fault, None, store).await
    }

    /// A platform with `fault`; the data dir `<dir>/<home>` (`None`: the temp dir itself) and the store at
    /// `store` (`None`: the data dir's SQLite file).
    pub async fn start_with(fault: Fault, home: Option<&str>, store: Option<String>) -> Env {
        Env::start_configured(home, store, |cfg| cfg.fault = fault).await
    }

    /// A platform configured by `edit` (fault, token policy); data dir and store as in [`Env::start_with`].
    pub async fn start_configured(
        home: Option<&str>,
        store: Option<String>,
        edit: impl FnOnce(&mut FixtureConfig),
    ) -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut cfg = FixtureConfig::new(dir.path().join("platform"));
        edit(&mut cfg);
        let platform = FixturePlatform::start(cfg).await.expect("platform starts");
        let home = match home {
            Some(h) => dir.path().join(h),
            None => dir.path().to_path_buf(),
        };
        let oncepost = Oncepost::new(home).with_store(store);
        Env {
            dir,
            platform,
            oncepost,
        }
    }

    pub fn home(&self) -> &Path {
        self.oncepost.home()
    }

    /// The store the binary uses (SQLite in the data dir, or the PostgreSQL database it was given), opened
    /// by the test itself.
    pub async fn open_store(&self) -> oncepost::store::Store {
        use oncepost::store::{Policy, Store, StoreLocation};
        let location = match self.oncepost.store() {
            Some(url) => StoreLocation::Postgres(url.to_string()),
            None => StoreLocation::default_in(self.home()),
        };
        Store::open(&location, Policy::default())
            .await
            .expect("open the env's store")
    }

    pub fn base_url(&self) -> String {
        self.platform.base_url()
    }

    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        self.oncepost.command(args)
    }

    pub async fn run(&self, args: &[&str]) -> (i32, String, String) {
        self.oncepost.run(args).await
    }

    /// Start `oncepost ARGS` held at the failpoint `point` (`ONCEPOST_PAUSE_AT`, src/failpoint.rs) and wait
    /// (bounded) until it is there: the child, piped, and the file whose creation lets it go on.
    pub async fn spawn_paused_at(
        &self,
        args: &[&str],
        point: &str,
    ) -> (tokio::process::Child, PathBuf) {
        let go = self.dir.path().join(format!("go-{point}"));
        let mut cmd = self.command(args);
        cmd.env("ONCEPOST_PAUSE_AT", format!("{point}:{}", go.display()));
        let child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn oncepost");
        let reached = go.with_extension("reached");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !reached.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "oncepost never reached the pause at {point}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        (child, go)
    }

    /// The fixture contract in format 2 with `compose.signed_in_as` on Fixturebook's header (`#whoami`'s
    /// `data-account`: the logged-in account, or `anonymous`), written in the data dir.
    pub fn signed_in_contract(&self) -> PathBuf {
        let c = std::fs::read_to_string(super::repo_path("selectors/fixture.toml"))
            .unwrap()
            .replace("format = 1", "format = 2")
            .replace(
                "url = \"{base_url}/compose\"\n",
                "url = \"{base_url}/compose\"\nsigned_in_as = { css = \"#whoami\", attribute = \"data-account\" }\n",
            );
        assert!(c.contains("signed_in_as"));
        self.write_file("signed-in.toml", &c)
    }

    /// `accounts add NAME --platform fixture` and `extra` (`--handle`, `--dup-window`, ...); must succeed.
    pub async fn add_account(&self, name: &str, extra: &[&str]) {
        let mut args = vec!["accounts", "add", name, "--platform", "fixture"];
        args.extend_from_slice(extra);
        let (code, out, err) = self.run(&args).await;
        assert_eq!(code, 0, "accounts add: {out} {err}");
    }

    /// `publish --json --contract C --account A --base-url B --login-url B/login?account=A --text T`, logged in
    /// as the account so its posts carry its handle.
    pub fn publish_args(&self, account: &str, contract: &Path, text: &str) -> Vec<String> {
        self.publish_args_at(&self.base_url(), account, contract, text)
    }

    /// [`Env::publish_args`] against another base URL.
    pub fn publish_args_at(
        &self,
        base: &str,
        account: &str,
        contract: &Path,
        text: &str,
    ) -> Vec<String> {
        vec![
            "publish".into(),
            "--json".into(),
            "--contract".into(),
            contract.to_string_lossy().into_owned(),
            "--account".into(),
            account.into(),
            "--base-url".into(),
            base.into(),
            "--login-url".into(),
            format!("{base}/login?account={account}"),
            "--text".into(),
            text.into(),
        ]
    }

    /// Run [`Env::publish_args`] plus `extra`: (exit code, the JSON report or `Value::Null`, stderr).
    pub async fn publish(
        &self,
        account: &str,
        contract: &Path,
        text: &str,
        extra: &[&str],
    ) -> (i32, Value, String) {
        let mut args = self.publish_args(account, contract, text);
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.oncepost.run_json(&args).await
    }

    /// [`Env::publish`] with no extra arguments, in the Chromium at `chromium` (`ONCEPOST_CHROMIUM`): (exit
    /// code, the JSON report or `Value::Null`, stderr).
    pub async fn publish_in(
        &self,
        chromium: &Path,
        account: &str,
        contract: &Path,
        text: &str,
    ) -> (i32, Value, String) {
        let args = self.publish_args(account, contract, text);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self
            .oncepost
            .command(&args)
            .env("ONCEPOST_CHROMIUM", chromium)
            .output()
            .await
            .expect("run oncepost");
        let (code, stdout, err) = super::cli::output_of(&out);
        (code, serde_json::from_str(&stdout).unwrap_or_default(), err)
    }

    /// `reconcile --json --key KEY` through `contract` at this platform: (exit code, the JSON, stderr).
    pub async fn reconcile_key(&self, contract: &Path, key: &str) -> (i32, Value, String) {
        let (c, base) = (contract.to_string_lossy().into_owned(), self.base_url());
        self.oncepost
            .run_json(&[
                "reconcile",
                "--json",
                "--contract",
                &c,
                "--base-url",
                &base,
                "--key",
                key,
            ])
            .await
    }

    /// `intents show --json KEY`, which must succeed.
    pub async fn show(&self, key: &str) -> Value {
        self.oncepost.show(key).await
    }

    /// `probe --json --contract C --base-url B --account alice --fill --observe-ms MS` at this platform:
    /// (exit code, the report or `Value::Null`, stderr).
    pub async fn probe_fill(&self, contract: &Path, observe_ms: u64) -> (i32, Value, String) {
        self.probe_fill_with(contract, None, observe_ms).await
    }

    /// [`Self::probe_fill`] typing `text` (`None`: the probe's own text).
    pub async fn probe_fill_with(
        &self,
        contract: &Path,
        text: Option<&str>,
        observe_ms: u64,
    ) -> (i32, Value, String) {
        let (c, base, ms) = (
            contract.to_string_lossy().into_owned(),
            self.base_url(),
            observe_ms.to_string(),
        );
        let mut args = vec![
            "probe",
            "--json",
            "--contract",
            &c,
            "--base-url",
            &base,
            "--account",
            "alice",
            "--fill",
        ];
        args.extend(text);
        args.extend(["--observe-ms", &ms]);
        self.oncepost.run_json(&args).await
    }

    /// A publish (`run`: its exit code, JSON report and stderr) that was refused before its press: exit 11,
    /// `failed`, nothing pressed, the intent's history saying `why`, and no create request at the platform.
    pub async fn assert_failed_before_the_press(&self, run: (i32, Value, String), why: &str) {
        let (code, v, err) = run;
        assert_eq!(code, 11, "{v} {err}");
        assert_eq!(v["state"], "failed", "{v}");
        assert_eq!(v["pressed"], false, "{v}");
        let intent = self.show(v["key"].as_str().unwrap_or_default()).await;
        assert!(intent.to_string().contains(why), "{why:?} not in {intent}");
        assert_eq!(self.arrivals(), 0, "nothing reached the platform");
    }

    pub fn stats(&self) -> Stats {
        self.platform.stats()
    }

    /// Create requests that reached the platform (stored or not).
    pub fn arrivals(&self) -> u64 {
        self.platform.stats().create_arrivals
    }

    /// Stored posts with exactly `text`.
    pub fn copies(&self, text: &str) -> usize {
        copies(&self.platform, text)
    }

    /// The id of `account`'s stored post with `text`.
    pub fn post_id_of(&self, account: &str, text: &str) -> String {
        self.platform
            .posts()
            .into_iter()
            .find(|p| p.account == account && p.text == text)
            .unwrap_or_else(|| panic!("no post of {account} with {text:?}"))
            .id
    }

    /// Post `text` as `account` straight to the platform (no oncepost, no browser); see [`post_as`].
    pub async fn post_as(&self, account: &str, text: &str) -> String {
        post_as(&self.base_url(), account, text).await
    }

    /// A file in the data dir's parent temp dir holding `contents` (a contract variant); its path.
    pub fn write_file(&self, name: &str, contents: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, contents).expect("write test file");
        p
    }

    /// `contract check` on `contents` (written as `name.toml`) refuses it with exit 2, saying `says`.
    pub async fn assert_check_refuses(&self, name: &str, contents: &str, says: &str) {
        let path = self.write_file(&format!("{name}.toml"), contents);
        let (code, out, err) = self
            .run(&["contract", "check", path.to_str().unwrap()])
            .await;
        assert_eq!(code, 2, "{name}: {out} {err}");
        assert!(format!("{out}{err}").contains(says), "{name}: {out} {err}");
    }
}

/// Stored posts of `platform` with exactly `text`.
pub fn copies(platform: &RunningPlatform, text: &str) -> usize {
    platform.posts().iter().filter(|p| p.text == text).count()
}

/// Post `text` on the platform at `base` directly as `account` (its session cookie and CSRF token), as its
/// own earlier run or another person would have. Returns the post id.
pub async fn post_as(base: &str, account: &str, text: &str) -> String {
    let r: Value = post_directly(base, account, text)
        .await
        .text()
        .await
        .map(|b| serde_json::from_str(&b).unwrap())
        .unwrap();
    r["id"].as_str().unwrap().to_string()
}

/// The create request of [`post_as`], its answer unread: log in as `account` (no redirect followed, so the
/// session cookie is at hand), read the compose page's CSRF token, POST the JSON body the page would send.
pub async fn post_directly(base: &str, account: &str, text: &str) -> reqwest::Response {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let login = client
        .get(format!("{base}/login?account={account}"))
        .send()
        .await
        .unwrap();
    let cookie = login.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let page = client
        .get(format!("{base}/compose"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let token = page
        .split("name=\"csrf-token\" content=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    client
        .post(format!("{base}/api/posts"))
        .header("cookie", &cookie)
        .header("x-csrf-token", token)
        .header("content-type", "application/json")
        .body(serde_json::json!({ "text": text, "title": "" }).to_string())
        .send()
        .await
        .unwrap()
}
