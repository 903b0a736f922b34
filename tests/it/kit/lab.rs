//! The real-app lab: a private DokuWiki (Debian's package, unmodified) started once for the test binary by
//! scripts/lab-dokuwiki.sh (its own conf and data dir, a free loopback port) and stopped when the binary
//! exits. Every test works in a namespace of its own (`t<uuid>:`), so tests share the wiki and its users
//! without seeing each other's pages; the users are `oncepost`, `other` and `lab1`..`lab8` (password
//! `lab-password`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{Value, json};

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
static WIKI_DIR: OnceLock<PathBuf> = OnceLock::new();

extern "C" fn stop_wiki() {
    if let Some(dir) = WIKI_DIR.get() {
        let _ = std::process::Command::new(repo_path("scripts/lab-dokuwiki.sh"))
            .arg("stop")
            .arg(dir)
            .status();
    }
}

/// The lab's DokuWiki, started on first use.
pub fn dokuwiki() -> &'static DokuWiki {
    WIKI.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("oncepost-dokuwiki-{}", uuid::Uuid::new_v4()));
        let out = std::process::Command::new(repo_path("scripts/lab-dokuwiki.sh"))
            .arg("start")
            .arg(&dir)
            .output()
            .expect("run scripts/lab-dokuwiki.sh");
        assert!(
            out.status.success(),
            "could not start the lab DokuWiki: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let _ = WIKI_DIR.set(dir.clone());
        // SAFETY: registering a plain extern "C" function with no captured state.
        unsafe {
            libc::atexit(stop_wiki);
        }
        DokuWiki {
            base_url: String::from_utf8_lossy(&out.stdout).trim().to_string(),
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
