//! The real-app lab, Redmine: Debian's unmodified package (5.0, Rails, SQLite), a private instance for the
//! test binary (kit::lab), driven only through the `oncepost` binary with the shipped contract
//! `selectors/redmine.toml`. A post is an issue of project `lab`, its text the issue's subject. What was
//! written is counted on Redmine's side (its REST API, read as an anonymous reader of the public project)
//! and by `oncepost fixtures proxy`'s forwarded-write count.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::kit::lab::{Proxy, Redmine, log_in, redmine};
use crate::kit::{Oncepost, repo_path};

fn contract() -> PathBuf {
    repo_path("selectors/redmine.toml")
}

/// A test's own data dir and subject prefix, with account `rm` registered with `user`'s name as Redmine
/// shows it (its handle) and logged in: the probe that imports the login cookies must pass.
struct Lab {
    /// The test's temp dir, holding its data dir: kept while the test runs.
    _dir: tempfile::TempDir,
    oncepost: Oncepost,
    rm: &'static Redmine,
    prefix: String,
}

impl Lab {
    async fn new(user: &str) -> Lab {
        let rm = redmine();
        let dir = tempfile::tempdir().unwrap();
        let oncepost = Oncepost::new(dir.path().join("home"));
        let lab = Lab {
            prefix: rm.prefix(),
            _dir: dir,
            oncepost,
            rm,
        };
        let shown = format!("{}{} Lab", user[..1].to_uppercase(), &user[1..]);
        log_in(
            &lab.oncepost,
            "rm",
            "redmine",
            &shown,
            &rm.login_cookies(user).await,
            &contract(),
            &rm.base_url,
            &["project=lab".to_string()],
        )
        .await;
        lab
    }

    /// The subject of this test's post `name`.
    fn subject(&self, name: &str) -> String {
        format!("{} {name}", self.prefix)
    }

    async fn run(&self, args: &[&str]) -> (i32, String, String) {
        self.oncepost.run(args).await
    }

    /// `publish --json` of the issue `name` (its subject the text) at `base` as account `rm`.
    async fn publish_at(&self, base: &str, name: &str) -> (i32, Value, String) {
        let c = contract();
        let subject = self.subject(name);
        self.oncepost
            .run_json(&[
                "publish",
                "--json",
                "--contract",
                c.to_str().unwrap(),
                "--account",
                "rm",
                "--base-url",
                base,
                "--field",
                "project=lab",
                "--field",
                "details=Filed by oncepost in the *lab*.",
                "--text",
                &subject,
                "--request-timeout",
                "3s",
            ])
            .await
    }

    /// The issues whose subject is this test's `name`: (id, author's name).
    async fn issues_of(&self, name: &str) -> Vec<(u64, String)> {
        let subject = self.subject(name);
        self.rm
            .issues_with(&subject)
            .await
            .into_iter()
            .filter(|(_, s, _)| *s == subject)
            .map(|(id, _, author)| (id, author))
            .collect()
    }
}

/// Two issues, each in a browser of its own after the probe's, both made once as the account and read back
/// at the issue Redmine answered with; the same command again sends nothing. Redmine keeps its login in its
/// session cookie, which it sends again (without an expiry) on the first page after the import: the account's
/// profile keeps it when the browser closes (red without that: the second browser found the login page, and
/// nothing was pressed).
#[tokio::test]
async fn redmine_issues_are_made_once_each_and_the_login_outlives_the_browser() {
    let lab = Lab::new("oncepost").await;
    for name in ["first", "second"] {
        let (code, report, err) = lab.publish_at(&lab.rm.base_url, name).await;
        assert_eq!(code, 0, "{name}: {report} {err}");
        assert_eq!(report["state"], "published", "{name}: {report}");
        let issues = lab.issues_of(name).await;
        assert_eq!(issues.len(), 1, "{name}: {issues:?}");
        assert_eq!(issues[0].1, "Oncepost Lab");
        assert_eq!(report["platform_id"], issues[0].0.to_string(), "{report}");
        assert_eq!(
            report["permalink"],
            format!("{}/issues/{}", lab.rm.base_url, issues[0].0)
        );
    }
    let (code, again, err) = lab.publish_at(&lab.rm.base_url, "first").await;
    assert_eq!(code, 0, "{again} {err}");
    assert_eq!(again["state"], "published");
    assert_eq!(
        lab.issues_of("first").await.len(),
        1,
        "the rerun made nothing"
    );
}

/// The create request is dropped after Redmine made the issue: indeterminate, then sweep and one reconcile
/// lookup (the project's issues by subject, with their authors) find it as the account's and settle it
/// `published`; a rerun sends nothing. One issue, counted by Redmine and by the proxy.
#[tokio::test]
async fn a_dropped_redmine_create_is_reconciled_published_by_reading_the_issues() {
    let lab = Lab::new("oncepost").await;
    let proxy = Proxy::start(&lab.rm.base_url).await;
    proxy.fault("commit-then-drop").await;
    let (code, report, err) = lab.publish_at(&proxy.base, "dropped").await;
    assert_eq!(code, 10, "{report} {err}");
    proxy.fault("normal").await;
    let key = report["key"].as_str().unwrap().to_string();
    let issues = lab.issues_of("dropped").await;
    assert_eq!(issues.len(), 1, "{issues:?}");

    let (code, out, err) = lab
        .oncepost
        .sweep_then_reconcile(&key, Duration::from_millis(1700))
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let shown = lab.oncepost.show(&key).await;
    assert_eq!(shown["intent"]["state"], "published", "{shown}");
    assert_eq!(
        shown["intent"]["platform_id"],
        issues[0].0.to_string(),
        "{shown}"
    );

    let (code, again, err) = lab.publish_at(&proxy.base, "dropped").await;
    assert_eq!(code, 0, "{again} {err}");
    assert_eq!(lab.issues_of("dropped").await.len(), 1);
    let stats = proxy.stats().await;
    assert_eq!(
        stats["forwarded_writes"]["POST /projects/lab/issues"], 1,
        "{stats}"
    );
}

/// Another user's issue with the same subject is never taken for ours: the look before writing finds it
/// under another author and parks the intent for a person, nothing pressed.
#[tokio::test]
async fn another_users_redmine_issue_with_our_subject_is_never_ours() {
    let lab = Lab::new("oncepost").await;
    let theirs = lab.rm.create_issue_as("other", &lab.subject("same")).await;
    let (code, report, err) = lab.publish_at(&lab.rm.base_url, "same").await;
    assert_eq!(code, 12, "{report} {err}");
    assert_eq!(report["state"], "parked", "{report}");
    assert_eq!(report["pressed"], false, "{report}");
    assert_eq!(
        lab.issues_of("same").await,
        vec![(theirs, "Other Lab".to_string())]
    );
}

/// `oncepost conform` on the real Redmine, the project given as it is (`--fixed-field`): the probe forwards
/// nothing; each fault leaves at most one issue, which reconcile finds; the reruns send nothing. Redmine
/// agrees: one issue per publish that reached it, by the account, and the reset one never came to be.
#[tokio::test]
async fn conform_is_all_pass_on_redmine() {
    let lab = Lab::new("oncepost").await;
    let c = contract();
    let (code, out, err) = lab
        .run(&[
            "conform",
            "--contract",
            c.to_str().unwrap(),
            "--base-url",
            &lab.rm.base_url,
            "--account",
            "rm",
            "--fixed-field",
            "project=lab",
            "--field",
            &format!("details={}", lab.prefix),
            "--delay-ms",
            "4000",
            "--request-timeout",
            "2s",
            "--let-resends-through",
        ])
        .await;
    eprintln!("{out}");
    assert_eq!(code, 0, "{out}\n{err}");
    // Only this test runs conform on this binary's Redmine: its four issues are all there is.
    let made = lab.rm.issues_with("oncepost conform").await;
    assert_eq!(
        made.len(),
        4,
        "normal and the three commit-then-* faults: {made:?}"
    );
    for (_, subject, author) in &made {
        assert_eq!(author, "Oncepost Lab", "{subject}");
        assert!(!subject.contains("reset-before-read"), "{subject}");
    }
}
