//! No secret is persisted or printed, and evidence stays inert, through the real binary and real Chromium.
//!
//! The `secrets` hostile Fixturebook variant plants credentials everywhere a publisher could pick them up: the
//! DOM (script state, a hidden input, an `onerror` handler, a `javascript:` link, a `data-session` attribute,
//! a Bearer value in text), the create request (`X-Auth-Key`, `X-Api-Key`, `X-Client-Secret`,
//! `?access_token=`), and its answer (`Set-Cookie`, `X-Session-Token`, secret JSON members at several depths,
//! a Bearer value, a permalink with `?access_token=`); the account's own session cookie and CSRF token are
//! secrets too. A probe and three publishes (published, parked, indeterminate) run with `ONCEPOST_LOG=trace`;
//! then everything oncepost wrote or printed is searched for every value: every file of the data dir
//! (SQLite bytes and WAL included), a `sqlite3 .dump`, `intents list/show` (JSON and text), every command's
//! stdout and stderr, the review page with every evidence file it links, and the export. Zero hits.
//!
//! The export tests: a new folder only (non-empty and symlinked folders refused, nothing outside touched),
//! 0700/0600 whatever the umask, DOM excerpts written as `.txt` and no page script or handler in any file.
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use oncepost::fixture_platform::{
    Fault, FaultMode, FixtureConfig, FixturePlatform, PAGE_SECRETS, RESPONSE_SECRETS,
    RunningPlatform, STATE_FILE,
};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_oncepost");
const WAIT: Duration = Duration::from_secs(30);

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Every file under `dir` (not following symbolic links), with its bytes.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                stack.push(p);
            } else if t.is_file()
                && let Ok(b) = std::fs::read(&p)
            {
                out.push((p, b));
            }
        }
    }
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Everything that was written or printed, by where it came from.
#[derive(Default)]
struct Seen(Vec<(String, Vec<u8>)>);

impl Seen {
    fn add(&mut self, place: impl Into<String>, bytes: impl Into<Vec<u8>>) {
        self.0.push((place.into(), bytes.into()));
    }

    /// (secret's place, where it was found) for every hit.
    fn hits(&self, secrets: &[(String, String)]) -> Vec<String> {
        let mut hits = Vec::new();
        for (what, value) in secrets {
            for (place, bytes) in &self.0 {
                if contains(bytes, value) {
                    hits.push(format!("{what} ({value}) in {place}"));
                }
            }
        }
        hits
    }

    /// Case-insensitive (header names keep whatever case the page gave them).
    fn any_contains(&self, needle: &str) -> bool {
        let needle = needle.to_ascii_lowercase();
        self.0
            .iter()
            .any(|(_, b)| contains(&b.to_ascii_lowercase(), &needle))
    }
}

struct Env {
    home: tempfile::TempDir,
    /// The platform's state and the contract live apart from the data dir, so nothing there is oncepost's.
    outside: tempfile::TempDir,
    platform: RunningPlatform,
    contract: PathBuf,
    seen: Seen,
}

impl Env {
    async fn start() -> Env {
        let home = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let platform = FixturePlatform::start(FixtureConfig::new(outside.path().join("platform")))
            .await
            .expect("platform starts");
        let src = std::fs::read_to_string(repo("selectors/fixture.toml")).unwrap();
        let hostile = src.replace(
            r#"url = "{base_url}/compose""#,
            r#"url = "{base_url}/hostile/secrets""#,
        );
        assert_ne!(hostile, src, "the fixture contract's compose url moved");
        let contract = outside.path().join("secrets.toml");
        std::fs::write(&contract, hostile).unwrap();
        let mut env = Env {
            home,
            outside,
            platform,
            contract,
            seen: Seen::default(),
        };
        let (code, _, _) = env
            .run(&["accounts", "add", "alice", "--platform", "fixture"])
            .await;
        assert_eq!(code, 0);
        env
    }

    /// Run oncepost with trace logging; stdout and stderr are kept for the search.
    async fn run(&mut self, args: &[&str]) -> (i32, String, String) {
        let out = tokio::process::Command::new(BIN)
            .args(args)
            .env("ONCEPOST_HOME", self.home.path())
            .env("ONCEPOST_LOG", "trace")
            .env_remove("ONCEPOST_STORE")
            .kill_on_drop(true)
            .output()
            .await
            .expect("run oncepost");
        let what = args[..args.len().min(2)].join(" ");
        self.seen
            .add(format!("stdout of `{what}`"), out.stdout.clone());
        self.seen
            .add(format!("stderr of `{what}`"), out.stderr.clone());
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    async fn publish(&mut self, text: &str) -> (i32, Value, String) {
        let base = self.platform.base_url();
        let login = format!("{base}/login?account=alice");
        let c = self.contract.to_string_lossy().into_owned();
        let (code, out, err) = self
            .run(&[
                "publish",
                "--json",
                "--contract",
                &c,
                "--account",
                "alice",
                "--base-url",
                &base,
                "--login-url",
                &login,
                "--text",
                text,
            ])
            .await;
        (code, serde_json::from_str(&out).unwrap_or(Value::Null), err)
    }

    /// The account's session cookies and the CSRF token of each, from the platform's own state.
    async fn session_secrets(&self) -> Vec<(String, String)> {
        let state = files_under(self.outside.path())
            .into_iter()
            .find(|(p, _)| p.file_name().is_some_and(|n| n == STATE_FILE))
            .expect("the platform's state file");
        let v: Value = serde_json::from_slice(&state.1).unwrap();
        let mut out = Vec::new();
        let http = reqwest::Client::new();
        for token in v["sessions"].as_object().unwrap().keys() {
            out.push(("fb_session cookie".to_string(), token.clone()));
            let page = http
                .get(format!("{}/compose", self.platform.base_url()))
                .header("cookie", format!("fb_session={token}"))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            let marker = "name=\"csrf-token\" content=\"";
            let i = page.find(marker).unwrap() + marker.len();
            let csrf = &page[i..i + page[i..].find('"').unwrap()];
            out.push(("CSRF token".to_string(), csrf.to_string()));
        }
        assert!(!out.is_empty(), "alice logged in");
        out
    }
}

/// `oncepost review` on the data dir: the list, each intent page, and every evidence file each one links.
/// Returns how many DOM excerpts were served (as text, with their handlers redacted).
async fn review_pages(home: &Path, keys: &[String], seen: &mut Seen) -> usize {
    let mut child = Command::new(BIN)
        .env("ONCEPOST_HOME", home)
        .env("ONCEPOST_LOG", "trace")
        .env_remove("ONCEPOST_STORE")
        .args(["review", "--port", "0", "--open-for", "5m"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(u) = line.strip_prefix("review page: ") {
                let _ = tx.send(u.to_string());
            }
        }
    });
    let url = rx.recv_timeout(WAIT).expect("review URL");
    let base = url.trim_end_matches('/').to_string();
    let origin = url::Url::parse(&url)
        .unwrap()
        .origin()
        .ascii_serialization();
    let http = reqwest::Client::builder().timeout(WAIT).build().unwrap();
    let list = http.get(&url).send().await.unwrap().text().await.unwrap();
    seen.add("review list page", list);
    let mut excerpts = 0;
    for key in keys {
        let page = http
            .get(format!("{base}/intent/{key}"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        for part in page.split("href=\"").skip(1) {
            let link = &part[..part.find('"').unwrap()];
            if !link.contains("/evidence/") {
                continue;
            }
            let r = http.get(format!("{origin}{link}")).send().await.unwrap();
            let ct = r.headers()["content-type"].to_str().unwrap().to_string();
            let nosniff = r.headers()["x-content-type-options"]
                .to_str()
                .unwrap()
                .to_string();
            let body = r.bytes().await.unwrap().to_vec();
            assert_eq!(nosniff, "nosniff");
            assert!(!ct.contains("html"), "evidence served as {ct}");
            if ct.starts_with("text/plain") && contains(&body, "data-redacted-handler") {
                excerpts += 1;
                assert!(!contains(&body, "onerror="), "a handler is served");
            }
            seen.add(format!("review evidence {link} ({ct})"), body);
        }
        seen.add(format!("review page of {key}"), page);
    }
    let _ = child.kill();
    let _ = child.wait();
    excerpts
}

/// A probe and three publishes (published, parked, indeterminate) on the variant; then every output searched
/// for every planted secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_planted_secret_reaches_the_store_evidence_outputs_logs_review_or_export() {
    let mut env = Env::start().await;
    let stamp = uuid::Uuid::new_v4().simple().to_string();
    let (code, v, err) = env.publish(&format!("secrets published {stamp}")).await;
    assert_eq!(code, 0, "{v} {err}");
    let published = v["key"].as_str().unwrap().to_string();

    let base = env.platform.base_url();
    let c = env.contract.to_string_lossy().into_owned();
    let (code, out, err) = env
        .run(&[
            "probe",
            "--contract",
            &c,
            "--base-url",
            &base,
            "--account",
            "alice",
            "--fill",
            "probe text",
            "--json",
        ])
        .await;
    assert!(code == 0 || code == 3, "probe: {out} {err}");

    env.platform
        .set_fault(Fault::new(FaultMode::ReadbackMismatch));
    let (code, v, err) = env.publish(&format!("secrets parked {stamp}")).await;
    assert_eq!(code, 12, "{v} {err}");
    let parked = v["key"].as_str().unwrap().to_string();

    env.platform.set_fault(Fault::new(FaultMode::CommitThen500));
    let (code, v, err) = env.publish(&format!("secrets indeterminate {stamp}")).await;
    assert_eq!(code, 10, "{v} {err}");
    let indeterminate = v["key"].as_str().unwrap().to_string();
    assert_eq!(env.platform.stats().create_arrivals, 3);

    for key in [&published, &parked, &indeterminate] {
        env.run(&["intents", "show", key, "--json"]).await;
        env.run(&["intents", "show", key]).await;
    }
    env.run(&["intents", "list", "--json"]).await;

    let home = env.home.path().to_path_buf();
    let dump = Command::new("sqlite3")
        .arg(home.join("oncepost.db"))
        .arg(".dump")
        .output()
        .expect("sqlite3");
    assert!(dump.status.success());
    env.seen.add("sqlite3 .dump", dump.stdout);

    let excerpts = review_pages(
        &home,
        &[parked.clone(), indeterminate.clone()],
        &mut env.seen,
    )
    .await;

    let report = env.outside.path().join("report");
    let r = report.to_string_lossy().into_owned();
    let (code, _, err) = env.run(&["review", "--export", &r]).await;
    assert_eq!(code, 0, "{err}");
    for (p, b) in files_under(&report) {
        env.seen.add(format!("export {}", p.display()), b);
    }
    // The data dir, whole: SQLite file, WAL, evidence, thumbnails. Chromium's profile is searched too, apart
    // (below): it is the browser's own store.
    let profiles = home.join("profiles");
    for (p, b) in files_under(&home) {
        if !p.starts_with(&profiles) {
            env.seen.add(format!("data dir {}", p.display()), b);
        }
    }

    let mut secrets: Vec<(String, String)> = PAGE_SECRETS
        .iter()
        .chain(RESPONSE_SECRETS)
        .map(|s| (s.place.to_string(), s.value.to_string()))
        .collect();
    secrets.extend(env.session_secrets().await);
    let hits = env.seen.hits(&secrets);
    assert!(
        hits.is_empty(),
        "{} secret(s) leaked:\n{}",
        hits.len(),
        hits.join("\n")
    );

    // The pipeline really carried the plants (else zero hits would prove nothing): the redaction markers
    // stand where each kind of secret was.
    for marker in [
        "\"X-Auth-Key\": \"[redacted]\"",
        "\"X-Client-Secret\": \"[redacted]\"",
        "access_token=[redacted]",
        "\"client_secret\\\":\\\"[redacted]\\\"",
        "<script>[redacted]</script>",
        "data-redacted-handler",
        "data-session=\"[redacted]\"",
    ] {
        assert!(
            env.seen.any_contains(marker),
            "no {marker} anywhere: the plant did not travel"
        );
    }

    assert!(excerpts >= 1, "a DOM excerpt was served as text");

    // Chromium's profile holds the login (its cookie store, encrypted) and its own URL history; report what
    // it holds, the store of a browser is not oncepost's output.
    let mut in_profile = Seen::default();
    for (p, b) in files_under(&profiles) {
        in_profile.add(p.display().to_string(), b);
    }
    for h in in_profile.hits(&secrets) {
        eprintln!("note (browser profile): {h}");
    }
}

// ---------------------------------------------------------------------------------------------------------
// The export: a new folder, nothing followed, private, inert.

const PAGE_SCRIPT: &str = "SEEDSCRIPT-7731";
const PAGE_HANDLER: &str = "SEEDHANDLER-0412";

/// A data dir with one parked intent whose DOM excerpt was stored raw, as `.html` (as an older oncepost did).
async fn seeded_home() -> tempfile::TempDir {
    use oncepost::identity::{ActionKind, CanonicalRequest};
    use oncepost::store::*;
    use sha2::{Digest, Sha256};
    let home = tempfile::tempdir().unwrap();
    let store = Store::open(&StoreLocation::default_in(home.path()), Policy::default())
        .await
        .unwrap();
    store
        .add_account(
            &NewAccount {
                name: "alice".into(),
                platform: "fixture".into(),
                min_interval_ms: 0,
                dup_window_ms: 0,
            },
            "tester",
            Timestamp::now(),
        )
        .await
        .unwrap();
    let key = store
        .create_intent(
            &NewIntent {
                account: "alice".into(),
                action: ActionKind::Post,
                target: String::new(),
                request: CanonicalRequest::new(Some("export me"), &BTreeMap::new()),
                source: None,
            },
            Timestamp::now(),
        )
        .await
        .unwrap()
        .intent
        .key;
    let dom = format!(
        "<main><script>fetch('/x?{PAGE_SCRIPT}')</script><img src=x onerror=\"alert('{PAGE_HANDLER}')\">\
<a href=\"javascript:alert(1)\">x</a><div onclick='go()'>Failed to fetch</div></main>"
    );
    let mut items = Vec::new();
    for (kind, bytes, ext, media) in [
        ("dom_excerpt", dom.into_bytes(), "html", "text/html"),
        (
            "write_log",
            br#"{"headers": {"Cookie": "fb_session=SEEDCOOKIE-5"}}"#.to_vec(),
            "json",
            "application/json",
        ),
    ] {
        let sha = hex::encode(Sha256::digest(&bytes));
        let rel = format!("evidence/sha256/{}/{sha}.{ext}", &sha[..2]);
        let path = home.path().join(&rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        items.push(json!({"kind": kind, "sha256": sha, "path": rel, "media_type": media, "bytes": bytes.len()}));
    }
    store
        .note(
            &key,
            EventKind::Evidence,
            "worker",
            "before_dispatch",
            json!({"attempt": null, "items": items}),
            Timestamp::now(),
        )
        .await
        .unwrap();
    store
        .park(&key, "worker", "look at it", Timestamp::now())
        .await
        .unwrap();
    home
}

fn export_cmd(home: &Path, dir: &Path) -> std::process::Output {
    Command::new(BIN)
        .env("ONCEPOST_HOME", home)
        .env_remove("ONCEPOST_STORE")
        .arg("review")
        .arg("--export")
        .arg(dir)
        .output()
        .unwrap()
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn export_is_private_whatever_the_umask_and_holds_no_live_page_markup() {
    use std::os::unix::process::CommandExt;
    let home = seeded_home().await;
    let out = home.path().join("report");
    let mut cmd = Command::new(BIN);
    cmd.env("ONCEPOST_HOME", home.path())
        .env_remove("ONCEPOST_STORE")
        .arg("review")
        .arg("--export")
        .arg(&out);
    // SAFETY: umask is async-signal-safe; the child sets it before exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(mode(&out), 0o700);
    let handler = regex::Regex::new(r"(?i)\son[a-z]+\s*=").unwrap();
    let files = files_under(&out);
    assert!(files.len() >= 4, "index, intent page, two evidence files");
    let mut excerpt = None;
    for (p, b) in &files {
        assert_eq!(mode(p), 0o600, "{}", p.display());
        assert_eq!(mode(p.parent().unwrap()), 0o700, "{}", p.display());
        let text = String::from_utf8_lossy(b);
        for secret in [PAGE_SCRIPT, PAGE_HANDLER, "SEEDCOOKIE-5"] {
            assert!(!text.contains(secret), "{secret} in {}", p.display());
        }
        assert!(!text.contains("javascript:"), "{}", p.display());
        assert!(
            !handler.is_match(&text),
            "a live handler in {}: {text}",
            p.display()
        );
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".html") {
            assert!(
                p.parent() == Some(out.as_path()),
                "only the report's own pages are HTML: {}",
                p.display()
            );
            assert!(
                !text.to_ascii_lowercase().contains("<script"),
                "{}",
                p.display()
            );
        }
        if text.contains("Failed to fetch") && p.parent() != Some(out.as_path()) {
            excerpt = Some(name);
        }
    }
    let excerpt = excerpt.expect("the DOM excerpt was exported");
    assert!(excerpt.ends_with(".txt"), "excerpt exported as {excerpt}");
    let intent = files
        .iter()
        .find(|(p, _)| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("intent-")
        })
        .unwrap();
    assert!(
        String::from_utf8_lossy(&intent.1).contains(&format!("evidence/{excerpt}")),
        "the report links the .txt"
    );
}

#[tokio::test]
async fn export_refuses_a_non_empty_folder_and_changes_nothing_in_it() {
    let home = seeded_home().await;
    let out = home.path().join("existing");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(out.join("index.html"), b"mine").unwrap();
    let o = export_cmd(home.path(), &out);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("not empty"));
    assert_eq!(std::fs::read(out.join("index.html")).unwrap(), b"mine");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
    assert_eq!(mode(&out), 0o755, "a refused folder is left as it was");
    // An existing EMPTY folder is accepted and made private.
    let empty = home.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = export_cmd(home.path(), &empty);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(mode(&empty), 0o700);
    assert!(empty.join("index.html").is_file());
}

#[tokio::test]
async fn export_never_follows_a_symlink_in_place_of_the_folder_or_inside_it() {
    let home = seeded_home().await;
    let outside = tempfile::tempdir().unwrap();
    // The folder named is a link to an empty folder elsewhere.
    let target = outside.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let link = home.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let o = export_cmd(home.path(), &link);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("symbolic link"));
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "nothing written through the link"
    );
    // A dangling link: nothing is created at its target.
    let dangling = home.path().join("dangling");
    std::os::unix::fs::symlink(outside.path().join("nowhere"), &dangling).unwrap();
    let o = export_cmd(home.path(), &dangling);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("it is a symbolic link"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!outside.path().join("nowhere").exists());
    // A folder holding a planted link where the report's index goes: refused (not empty), the file the link
    // points at keeps its content.
    let victim = outside.path().join("victim.txt");
    std::fs::write(&victim, b"keep me").unwrap();
    let planted = home.path().join("planted");
    std::fs::create_dir(&planted).unwrap();
    std::os::unix::fs::symlink(&victim, planted.join("index.html")).unwrap();
    let o = export_cmd(home.path(), &planted);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("the folder is not empty"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
}
