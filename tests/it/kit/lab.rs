//! The real-app lab: a private DokuWiki, a private MediaWiki and a private WordPress with its MariaDB
//! (Debian's packages, unmodified), each started once for the test binary on first use by
//! scripts/lab-dokuwiki.sh, scripts/lab-mediawiki.sh and scripts/lab-wordpress.sh (own conf and data dirs,
//! free loopback ports) and stopped when the binary exits. Every DokuWiki test works in a namespace of its
//! own (`t<uuid>:`), every MediaWiki test in pages whose titles start with a prefix of its own; every
//! WordPress test posts as a user of its own with texts no other test uses. The users of DokuWiki and
//! WordPress are `oncepost`, `other` and `lab1`..`lab8`, MediaWiki's `Oncepost`, `Other` and `Lab1`..`Lab4`
//! (password `lab-password`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

const WAIT: Duration = Duration::from_secs(60);

use super::repo_path;

/// The password of every lab user.
pub const PASSWORD: &str = "lab-password";

/// A running private DokuWiki.
pub struct DokuWiki {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    /// Its directory (conf, data, server log).
    pub dir: PathBuf,
}

static WIKI: OnceLock<DokuWiki> = OnceLock::new();

/// The apps this binary started (their script and dir), stopped by one `atexit` hook.
static STARTED: std::sync::Mutex<Vec<(&str, PathBuf)>> = std::sync::Mutex::new(Vec::new());

extern "C" fn stop_started() {
    let started = STARTED.lock().map(|s| s.clone()).unwrap_or_default();
    for (script, dir) in started {
        let _ = std::process::Command::new(repo_path(script))
            .arg("stop")
            .arg(dir)
            .status();
    }
}

/// `script start dir` (a `scripts/lab-*.sh`), stopped when the binary exits; the base URL it printed.
fn start_app(script: &'static str, dir: &Path) -> String {
    let out = std::process::Command::new(repo_path(script))
        .arg("start")
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    assert!(
        out.status.success(),
        "could not start the lab app ({script}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut started = STARTED.lock().unwrap();
    if started.is_empty() {
        // SAFETY: registering a plain extern "C" function with no captured state.
        unsafe {
            libc::atexit(stop_started);
        }
    }
    started.push((script, dir.to_path_buf()));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The lab's DokuWiki, started on first use.
pub fn dokuwiki() -> &'static DokuWiki {
    WIKI.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("oncepost-dokuwiki-{}", uuid::Uuid::new_v4()));
        DokuWiki {
            base_url: start_app("scripts/lab-dokuwiki.sh", &dir),
            dir,
        }
    })
}

impl DokuWiki {
    /// A namespace no other test (or run) uses.
    pub fn namespace(&self) -> String {
        format!("t{}", &uuid::Uuid::new_v4().simple().to_string()[..16])
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The page files of namespace `ns` (`data/pages/NS/*.txt`): one per page that exists.
    pub fn pages_in(&self, ns: &str) -> Vec<String> {
        files_in(&self.data().join("pages").join(ns), ".txt")
    }

    /// Every file the wiki keeps for what was written in `ns`: pages, old revisions (the attic holds one
    /// per save), change logs and drafts. A probe must leave this empty.
    pub fn written_in(&self, ns: &str) -> Vec<String> {
        let mut all = Vec::new();
        for sub in ["pages", "attic", "meta"] {
            for f in files_in(&self.data().join(sub).join(ns), "") {
                all.push(format!("{sub}/{ns}/{f}"));
            }
        }
        // Drafts live in the cache dir under a hash of the page id; they carry the id in their content.
        for f in walk(&self.data().join("cache")) {
            if f.extension().is_some_and(|e| e == "draft")
                && std::fs::read(&f).is_ok_and(|b| String::from_utf8_lossy(&b).contains(ns))
            {
                all.push(f.display().to_string());
            }
        }
        all
    }

    /// How many times page `ns:name` was saved: the lines of its change log (one per revision).
    pub fn saves_of(&self, ns: &str, name: &str) -> usize {
        std::fs::read_to_string(
            self.data()
                .join("meta")
                .join(ns)
                .join(format!("{name}.changes")),
        )
        .map(|s| s.lines().filter(|l| !l.trim().is_empty()).count())
        .unwrap_or(0)
    }

    /// The stored wiki text of page `ns:name`, if it exists.
    pub fn page_text(&self, ns: &str, name: &str) -> Option<String> {
        std::fs::read_to_string(
            self.data()
                .join("pages")
                .join(ns)
                .join(format!("{name}.txt")),
        )
        .ok()
    }

    /// Log `user` in (with "Remember me") and return the session's cookies as the JSON array of CDP cookie
    /// objects `oncepost probe --cookies` imports, each made persistent so the profile keeps it.
    pub async fn login_cookies(&self, user: &str) -> Value {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        // The login form's page starts the PHP session.
        let first = client
            .get(format!("{}/doku.php?id=start&do=login", self.base_url))
            .send()
            .await
            .expect("login page");
        let mut jar: Vec<(String, String)> = cookies_of(&first);
        let cookie_header = |jar: &[(String, String)]| {
            jar.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let answer = client
            .post(format!("{}/doku.php?id=start", self.base_url))
            .header("cookie", cookie_header(&jar))
            .form(&[
                ("u", user),
                ("p", PASSWORD),
                ("r", "1"),
                ("do", "login"),
                ("id", "start"),
                ("sectok", ""),
            ])
            .send()
            .await
            .expect("log in");
        assert_eq!(answer.status().as_u16(), 302, "login of {user} redirects");
        for (k, v) in cookies_of(&answer) {
            jar.retain(|(n, _)| n != &k);
            jar.push((k, v));
        }
        assert!(
            jar.iter().any(|(k, _)| k.starts_with("DW")),
            "the login set DokuWiki's auth cookie: {jar:?}"
        );
        persistent_cookies(jar)
    }

    /// Create page `ns:name` with `text` as `user` straight through the wiki's edit form (no oncepost, no
    /// browser), as another person would.
    pub async fn create_page_as(&self, user: &str, ns: &str, name: &str, text: &str) {
        let cookies = self.login_cookies(user).await;
        let header = cookies
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                format!(
                    "{}={}",
                    c["name"].as_str().unwrap(),
                    c["value"].as_str().unwrap()
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let id = format!("{ns}:{name}");
        let edit = client
            .get(format!("{}/doku.php?id={id}&do=edit", self.base_url))
            .header("cookie", &header)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let sectok = edit
            .split("name=\"sectok\" value=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .expect("the edit form's security token")
            .to_string();
        let saved = client
            .post(format!("{}/doku.php?id={id}&do=edit", self.base_url))
            .header("cookie", &header)
            .form(&[
                ("sectok", sectok.as_str()),
                ("id", id.as_str()),
                ("rev", "0"),
                ("date", ""),
                ("prefix", "."),
                ("suffix", ""),
                ("changecheck", "d41d8cd98f00b204e9800998ecf8427e"),
                ("target", "section"),
                ("wikitext", text),
                ("do[save]", "1"),
                ("summary", "created"),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(saved.status().as_u16(), 302, "the save of {id} as {user}");
        // Opening the editor locked the page for this session; saving released it.
    }
}

/// A login's cookies (name, value) as the JSON array of CDP cookie objects `oncepost probe --cookies`
/// imports, each made persistent (a day) on the lab's host so the profile keeps it.
fn persistent_cookies(jar: Vec<(String, String)>) -> Value {
    let expires = (std::time::SystemTime::now() + std::time::Duration::from_secs(86_400))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    Value::Array(
        jar.into_iter()
            .map(|(name, value)| {
                json!({ "name": name, "value": value, "domain": "127.0.0.1", "path": "/",
                        "expires": expires, "httpOnly": true })
            })
            .collect(),
    )
}

/// Register `account` on `platform` with `handle` in `oncepost`'s data dir and log it in: a probe of
/// `contract` at `base_url` (with `fields`, each `K=V`) that imports `cookies` into the account's profile
/// must pass, so the page a logged-in user sees was there.
#[allow(clippy::too_many_arguments)]
pub async fn log_in(
    oncepost: &super::Oncepost,
    account: &str,
    platform: &str,
    handle: &str,
    cookies: &Value,
    contract: &Path,
    base_url: &str,
    fields: &[String],
) {
    let (code, out, err) = oncepost
        .run(&[
            "accounts",
            "add",
            account,
            "--platform",
            platform,
            "--handle",
            handle,
        ])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let file = cookies_file(oncepost.home(), cookies);
    let contract = contract.to_string_lossy();
    let file = file.to_string_lossy();
    let mut args = vec![
        "probe",
        "--contract",
        &contract,
        "--base-url",
        base_url,
        "--account",
        account,
        "--cookies",
        &file,
        "--observe-ms",
        "0",
    ];
    for f in fields {
        args.extend(["--field", f.as_str()]);
    }
    let (code, out, err) = oncepost.run(&args).await;
    assert_eq!(code, 0, "the logged-in probe passes: {out} {err}");
}

/// Write `cookies` to a file in `dir` for `--cookies`; its path.
pub fn cookies_file(dir: &Path, cookies: &Value) -> PathBuf {
    let p = dir.join(format!("cookies-{}.json", uuid::Uuid::new_v4().simple()));
    std::fs::write(&p, serde_json::to_vec(cookies).unwrap()).unwrap();
    p
}

fn cookies_of(r: &reqwest::Response) -> Vec<(String, String)> {
    r.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.split(';').next())
        .filter_map(|kv| kv.split_once('='))
        .filter(|(_, v)| *v != "deleted")
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// Names of the files directly in `dir` ending with `suffix`, sorted (none when `dir` does not exist).
fn files_in(dir: &Path, suffix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(suffix))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Every file under `dir`, recursively.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// A running private WordPress with its MariaDB.
pub struct WordPress {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    /// Its directory (site copy, database, logs).
    pub dir: PathBuf,
}

static WP: OnceLock<WordPress> = OnceLock::new();

/// The lab's WordPress, started on first use.
pub fn wordpress() -> &'static WordPress {
    WP.get_or_init(|| {
        // A short path: MariaDB's socket path must stay under 107 characters.
        let dir = PathBuf::from("/tmp").join(format!(
            "oncepost-wp-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        ));
        WordPress {
            base_url: start_app("scripts/lab-wordpress.sh", &dir),
            dir,
        }
    })
}

/// The WordPress users no two tests share (each test takes one with [`WordPress::user`]).
static WP_USERS: std::sync::Mutex<Vec<&str>> = std::sync::Mutex::new(Vec::new());

impl WordPress {
    /// A lab user no other test of this binary posts as (`oncepost`, `lab1`..`lab8`).
    pub fn user(&self) -> &'static str {
        let mut taken = WP_USERS.lock().unwrap();
        let user = [
            "oncepost", "lab1", "lab2", "lab3", "lab4", "lab5", "lab6", "lab7", "lab8",
        ]
        .into_iter()
        .find(|u| !taken.contains(u))
        .expect("more WordPress tests than lab users: add users in scripts/lab-wordpress.sh");
        taken.push(user);
        user
    }

    /// One SQL statement on the site's database: its rows, tab-separated.
    pub fn sql(&self, query: &str) -> String {
        let out = std::process::Command::new(repo_path("scripts/lab-wordpress.sh"))
            .arg("sql")
            .arg(&self.dir)
            .arg(query)
            .output()
            .expect("run lab-wordpress.sh sql");
        assert!(
            out.status.success(),
            "{query}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Rows of every post of `user` that is not WordPress's own empty auto-draft (made by opening the
    /// editor): `ID<TAB>status<TAB>type<TAB>title`, one per line. Revisions count: each save makes one.
    pub fn rows_of(&self, user: &str) -> Vec<String> {
        let q = format!(
            "SELECT p.ID, p.post_status, p.post_type, p.post_title FROM wp_posts p JOIN wp_users u \
             ON u.ID = p.post_author WHERE u.user_login = '{user}' AND p.post_status <> 'auto-draft' ORDER BY p.ID"
        );
        self.sql(&q)
            .lines()
            .map(str::to_string)
            .filter(|l| !l.is_empty())
            .collect()
    }

    /// Published posts titled `title`.
    pub fn published_titled(&self, title: &str) -> Vec<String> {
        let q = format!(
            "SELECT ID FROM wp_posts WHERE post_type = 'post' AND post_status = 'publish' AND post_title = '{}'",
            title.replace('\'', "''")
        );
        self.sql(&q)
            .lines()
            .map(str::to_string)
            .filter(|l| !l.is_empty())
            .collect()
    }

    /// The user's saved settings (a probe must not change them: the editor saves preferences).
    pub fn user_meta(&self, user: &str) -> String {
        self.sql(&format!(
            "SELECT m.meta_key, m.meta_value FROM wp_usermeta m JOIN wp_users u ON u.ID = m.user_id \
             WHERE u.user_login = '{user}' ORDER BY m.umeta_id"
        ))
    }

    /// Publish a post as `user` through WordPress's own API (another person, not oncepost): its ID.
    pub fn post_as(&self, user: &str, title: &str, text: &str) -> String {
        let out = std::process::Command::new(repo_path("scripts/lab-wordpress.sh"))
            .arg("post")
            .arg(&self.dir)
            .args([user, title, text])
            .output()
            .expect("run lab-wordpress.sh post");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Log `user` in (with "Remember Me") and return its cookies as CDP cookie objects for `--cookies`.
    pub async fn login_cookies(&self, user: &str) -> Value {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let answer = client
            .post(format!("{}/wp-login.php", self.base_url))
            .header("cookie", "wordpress_test_cookie=WP%20Cookie%20check")
            .form(&[
                ("log", user),
                ("pwd", PASSWORD),
                ("rememberme", "forever"),
                ("wp-submit", "Log In"),
                ("testcookie", "1"),
                ("redirect_to", &format!("{}/wp-admin/", self.base_url)),
            ])
            .send()
            .await
            .expect("log in");
        assert_eq!(answer.status().as_u16(), 302, "login of {user} redirects");
        let expires = (std::time::SystemTime::now() + std::time::Duration::from_secs(86_400))
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut cookies: Vec<Value> = answer
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| {
                let mut parts = v.split(';');
                let (name, value) = parts.next()?.split_once('=')?;
                let path = parts
                    .filter_map(|a| a.trim().strip_prefix("path="))
                    .next()
                    .unwrap_or("/");
                Some(
                    json!({ "name": name.trim(), "value": value.trim(), "domain": "127.0.0.1",
                             "path": path, "expires": expires, "httpOnly": true }),
                )
            })
            .collect();
        cookies.push(
            json!({ "name": "wordpress_test_cookie", "value": "WP%20Cookie%20check",
                             "domain": "127.0.0.1", "path": "/", "expires": expires }),
        );
        assert!(
            cookies.iter().any(|c| c["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("wordpress_logged_in"))),
            "the login set WordPress's cookie: {cookies:?}"
        );
        Value::Array(cookies)
    }
}

/// A running private MediaWiki (SQLite).
pub struct MediaWiki {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    /// Its directory (LocalSettings.php, database, logs).
    pub dir: PathBuf,
}

static MW: OnceLock<MediaWiki> = OnceLock::new();

/// The lab's MediaWiki, started on first use.
pub fn mediawiki() -> &'static MediaWiki {
    MW.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("oncepost-mediawiki-{}", uuid::Uuid::new_v4()));
        MediaWiki {
            base_url: start_app("scripts/lab-mediawiki.sh", &dir),
            dir,
        }
    })
}

/// The password of the MediaWiki lab users (`Oncepost`, `Other`, `Lab1`..`Lab4`, `Visual`, `Newcomer`).
pub const MW_PASSWORD: &str = "lab-password";

impl MediaWiki {
    /// A title prefix no other test (or run) uses: `Lab <12 hex digits>`.
    pub fn prefix(&self) -> String {
        format!("Lab {}", &uuid::Uuid::new_v4().simple().to_string()[..12])
    }

    /// `api.php` with `query` (URL-encoded).
    fn api_url(&self, query: &[(&str, &str)]) -> String {
        let mut url = url::Url::parse(&format!("{}/api.php", self.base_url)).unwrap();
        url.query_pairs_mut().extend_pairs(query);
        url.into()
    }

    /// One GET of the wiki's API (JSON, format version 2) with `query`.
    async fn api_get(&self, query: &[(&str, &str)]) -> Value {
        let mut q: Vec<(&str, &str)> = vec![("format", "json"), ("formatversion", "2")];
        q.extend_from_slice(query);
        json_of(
            reqwest::get(self.api_url(&q))
                .await
                .expect("the wiki's API"),
        )
        .await
    }

    /// Every saved revision of page `title` (oldest first) as (user, wikitext): one per save; none when the
    /// page does not exist.
    pub async fn revisions(&self, title: &str) -> Vec<(String, String)> {
        let v = self
            .api_get(&[
                ("action", "query"),
                ("prop", "revisions"),
                ("titles", title),
                ("rvprop", "user|content"),
                ("rvslots", "main"),
                ("rvlimit", "max"),
                ("rvdir", "newer"),
            ])
            .await;
        let page = &v["query"]["pages"][0];
        page["revisions"]
            .as_array()
            .map(|revs| {
                revs.iter()
                    .map(|r| {
                        (
                            r["user"].as_str().unwrap_or_default().to_string(),
                            r["slots"]["main"]["content"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Titles of the pages whose title starts with `prefix` (main namespace).
    pub async fn pages_with(&self, prefix: &str) -> Vec<String> {
        let v = self
            .api_get(&[
                ("action", "query"),
                ("list", "allpages"),
                ("apprefix", prefix),
                ("aplimit", "max"),
            ])
            .await;
        v["query"]["allpages"]
            .as_array()
            .map(|ps| {
                ps.iter()
                    .filter_map(|p| p["title"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Log `user` in through the API (a login token, then `action=login`) and return the session's cookies
    /// as CDP cookie objects for `--cookies`, each made persistent so the profile keeps it.
    pub async fn login_cookies(&self, user: &str) -> Value {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let first = client
            .get(self.api_url(&[
                ("action", "query"),
                ("meta", "tokens"),
                ("type", "login"),
                ("format", "json"),
            ]))
            .send()
            .await
            .expect("a login token");
        let mut jar = cookies_of(&first);
        let token = json_of(first).await;
        let token = token["query"]["tokens"]["logintoken"]
            .as_str()
            .expect("a login token")
            .to_string();
        let header = |jar: &[(String, String)]| {
            jar.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let answer = client
            .post(format!("{}/api.php", self.base_url))
            .header("cookie", header(&jar))
            .form(&[
                ("action", "login"),
                ("lgname", user),
                ("lgpassword", MW_PASSWORD),
                ("lgtoken", &token),
                ("format", "json"),
            ])
            .send()
            .await
            .expect("log in");
        for (k, v) in cookies_of(&answer) {
            jar.retain(|(n, _)| n != &k);
            jar.push((k, v));
        }
        let result = json_of(answer).await;
        assert_eq!(
            result["login"]["result"], "Success",
            "login of {user}: {result}"
        );
        persistent_cookies(jar)
    }

    /// Create page `title` with `text` as `user` through the wiki's API (no oncepost, no browser), as
    /// another person would; `createonly`, so it never saves over a page.
    pub async fn create_page_as(&self, user: &str, title: &str, text: &str) {
        let saved = self
            .api_post_as(
                user,
                &[
                    ("action", "edit"),
                    ("title", title),
                    ("text", text),
                    ("summary", "created"),
                    ("createonly", "1"),
                ],
            )
            .await;
        assert_eq!(
            saved["edit"]["result"], "Success",
            "the save of {title} as {user}: {saved}"
        );
    }

    /// Store in `user`'s preferences that VisualEditor's first-use welcome was seen, as the editor does when
    /// it shows it: an account that has used the editor before.
    pub async fn has_seen_visualeditors_welcome(&self, user: &str) {
        let done = self
            .api_post_as(
                user,
                &[
                    ("action", "options"),
                    ("change", "visualeditor-hidebetawelcome=1"),
                ],
            )
            .await;
        assert_eq!(done["options"], "success", "{user}: {done}");
    }

    /// One POST of the wiki's API with `form` (and a CSRF token) as `user`, logged in for it; its JSON answer.
    async fn api_post_as(&self, user: &str, form: &[(&str, &str)]) -> Value {
        let cookies = self.login_cookies(user).await;
        let header = cookies
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                format!(
                    "{}={}",
                    c["name"].as_str().unwrap(),
                    c["value"].as_str().unwrap()
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        let client = reqwest::Client::new();
        let token = json_of(
            client
                .get(self.api_url(&[("action", "query"), ("meta", "tokens"), ("format", "json")]))
                .header("cookie", &header)
                .send()
                .await
                .unwrap(),
        )
        .await;
        let csrf = token["query"]["tokens"]["csrftoken"]
            .as_str()
            .expect("a csrf token")
            .to_string();
        let mut form = form.to_vec();
        form.extend([("token", csrf.as_str()), ("format", "json")]);
        json_of(
            client
                .post(format!("{}/api.php", self.base_url))
                .header("cookie", &header)
                .form(&form)
                .send()
                .await
                .unwrap(),
        )
        .await
    }
}

/// A running private Redmine (SQLite, WEBrick).
pub struct Redmine {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    /// Its directory (the app's copy, its instance, database, logs).
    pub dir: PathBuf,
}

static RM: OnceLock<Redmine> = OnceLock::new();

/// The lab's Redmine, started on first use.
pub fn redmine() -> &'static Redmine {
    RM.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("oncepost-redmine-{}", uuid::Uuid::new_v4()));
        Redmine {
            base_url: start_app("scripts/lab-redmine.sh", &dir),
            dir,
        }
    })
}

impl Redmine {
    /// A subject prefix no other test (or run) uses.
    pub fn prefix(&self) -> String {
        format!("Lab {}", &uuid::Uuid::new_v4().simple().to_string()[..12])
    }

    /// The issues of project `lab` whose subject holds `words` (any status), through the REST API as an
    /// anonymous reader of the public project: (id, subject, author's name), oldest first.
    pub async fn issues_with(&self, words: &str) -> Vec<(u64, String, String)> {
        let mut url =
            url::Url::parse(&format!("{}/projects/lab/issues.json", self.base_url)).unwrap();
        url.query_pairs_mut()
            .append_pair("status_id", "*")
            .append_pair("subject", &format!("~{words}"))
            .append_pair("sort", "id")
            .append_pair("limit", "100");
        let v = json_of(reqwest::get(url.as_str()).await.expect("Redmine's API")).await;
        v["issues"]
            .as_array()
            .map(|is| {
                is.iter()
                    .map(|i| {
                        (
                            i["id"].as_u64().unwrap_or_default(),
                            i["subject"].as_str().unwrap_or_default().to_string(),
                            i["author"]["name"].as_str().unwrap_or_default().to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Log `user` in through the login form and return the session's cookies as CDP cookie objects for
    /// `--cookies`, each made persistent so the profile keeps it.
    pub async fn login_cookies(&self, user: &str) -> Value {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let form = client
            .get(format!("{}/login", self.base_url))
            .send()
            .await
            .expect("the login page");
        let mut jar = cookies_of(&form);
        let page = form.text().await.expect("the login page's body");
        let token = page
            .split("name=\"authenticity_token\" value=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .expect("the login form's token")
            .to_string();
        let header = jar
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ");
        let answer = client
            .post(format!("{}/login", self.base_url))
            .header("cookie", header)
            .form(&[
                ("authenticity_token", token.as_str()),
                ("username", user),
                ("password", PASSWORD),
                ("login", "Login"),
            ])
            .send()
            .await
            .expect("log in");
        assert_eq!(answer.status().as_u16(), 302, "login of {user} redirects");
        for (k, v) in cookies_of(&answer) {
            jar.retain(|(n, _)| n != &k);
            jar.push((k, v));
        }
        persistent_cookies(jar)
    }

    /// Create an issue with `subject` in project `lab` as `user` through the REST API (no oncepost, no
    /// browser), as another person would; its id.
    pub async fn create_issue_as(&self, user: &str, subject: &str) -> u64 {
        let body = json!({ "issue": { "project_id": "lab", "subject": subject } }).to_string();
        let answer = reqwest::Client::new()
            .post(format!("{}/issues.json", self.base_url))
            .basic_auth(user, Some(PASSWORD))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("create an issue");
        assert_eq!(answer.status().as_u16(), 201, "the issue of {user}");
        json_of(answer).await["issue"]["id"]
            .as_u64()
            .expect("the new issue's id")
    }
}

/// A response's body as JSON.
async fn json_of(r: reqwest::Response) -> Value {
    let body = r.text().await.expect("a body");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// `oncepost fixtures proxy` (the binary) in front of a lab app.
pub struct Proxy {
    _child: tokio::process::Child,
    _home: tempfile::TempDir,
    pub base: String,
}

impl Proxy {
    pub async fn start(upstream: &str) -> Proxy {
        let home = tempfile::tempdir().unwrap();
        let mut child = tokio::process::Command::new(super::BIN)
            .args(["fixtures", "proxy", "--json", "--upstream", upstream])
            .env("ONCEPOST_HOME", home.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn oncepost fixtures proxy");
        let stdout = child.stdout.take().unwrap();
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let line = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .expect("the proxy prints in time")
            .unwrap()
            .expect("one line");
        let info: Value = serde_json::from_str(&line).expect("one JSON line");
        Proxy {
            _child: child,
            _home: home,
            base: info["base_url"].as_str().unwrap().to_owned(),
        }
    }

    fn http() -> reqwest::Client {
        reqwest::Client::builder().timeout(WAIT).build().unwrap()
    }

    pub async fn stats(&self) -> Value {
        let t = Proxy::http()
            .get(format!("{}/__oncepost_proxy/stats", self.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        serde_json::from_str(&t).unwrap()
    }

    pub async fn fault(&self, mode: &str) {
        let r = Proxy::http()
            .post(format!("{}/__oncepost_proxy/fault", self.base))
            .body(serde_json::json!({ "mode": mode }).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
}

/// The review page for the parked intent `key` lists it and shows its screenshots, loaded in Chromium.
pub async fn review_shows_screenshots(home: &Path, key: &str) {
    use super::chromium::Chrome;
    use std::io::BufRead;
    let mut child = std::process::Command::new(super::BIN)
        .env("ONCEPOST_HOME", home)
        .env_remove("ONCEPOST_STORE")
        .args([
            "review",
            "--port",
            "0",
            "--open-for",
            "5m",
            "--by",
            "Lab Reviewer",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start oncepost review");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(u) = line.strip_prefix("review page: ") {
                let _ = tx.send(u.to_string());
            }
        }
    });
    let url = rx.recv_timeout(WAIT).expect("the review page's URL");
    let base = url.trim_end_matches('/').to_string();
    let chrome = Chrome::launch(WAIT).await;
    let page = chrome.open(&format!("{base}/intent/{key}")).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    let widths: Vec<i64> = loop {
        let js = "Array.from(document.images).every(i => i.complete) ? Array.from(document.images).map(i => i.naturalWidth) : null";
        if let Ok(Ok(v)) = tokio::time::timeout(Duration::from_secs(5), page.evaluate(js)).await
            && let Ok(Some(w)) = v.into_value::<Option<Vec<i64>>>()
        {
            break w;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the screenshots never loaded"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let text: String = page
        .evaluate("document.body.innerText")
        .await
        .unwrap()
        .into_value()
        .unwrap();
    chrome.close().await;
    let _ = child.kill();
    let _ = child.wait();
    assert!(text.contains("parked"), "{text}");
    assert!(!widths.is_empty(), "the parked send has screenshots");
    assert!(
        widths.iter().all(|w| *w > 0),
        "every screenshot loads: {widths:?}"
    );
}
