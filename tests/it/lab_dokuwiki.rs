//! The real-app lab, DokuWiki: Debian's unmodified package, a private instance for the test binary (kit::lab),
//! driven only through the `oncepost` binary with the shipped contract `selectors/dokuwiki.toml`. What was
//! written is counted on the wiki's side twice: by the files DokuWiki keeps (a page file, one change-log line
//! per save, old revisions, drafts) and by `oncepost fixtures proxy`'s forwarded-write count.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::kit::lab::{DokuWiki, Proxy, dokuwiki, log_in, review_shows_screenshots};
use crate::kit::{Oncepost, repo_path};

fn contract() -> PathBuf {
    repo_path("selectors/dokuwiki.toml")
}

/// A test's own data dir and wiki namespace, with account `wiki` registered as DokuWiki user `user` (its
/// handle) and logged in: the probe that imports the login cookies into the account's profile must pass, so
/// the editor (shown to logged-in users only) was there.
struct Lab {
    /// The test's temp dir, holding its data dir: kept while the test runs.
    _dir: tempfile::TempDir,
    oncepost: Oncepost,
    wiki: &'static DokuWiki,
    ns: String,
}

impl Lab {
    async fn new(user: &str) -> Lab {
        let wiki = dokuwiki();
        let dir = tempfile::tempdir().unwrap();
        let oncepost = Oncepost::new(dir.path().join("home"));
        let lab = Lab {
            ns: wiki.namespace(),
            _dir: dir,
            oncepost,
            wiki,
        };
        log_in(
            &lab.oncepost,
            "wiki",
            "dokuwiki",
            user,
            &wiki.login_cookies(user).await,
            &contract(),
            &wiki.base_url,
            &[format!("page={}", lab.id("login"))],
        )
        .await;
        lab
    }

    fn id(&self, name: &str) -> String {
        format!("{}:{name}", self.ns)
    }

    async fn run(&self, args: &[&str]) -> (i32, String, String) {
        self.oncepost.run(args).await
    }

    /// `publish --json` of `text` on page `name` at `base` as account `wiki`.
    async fn publish_at(&self, base: &str, name: &str, text: &str) -> (i32, Value, String) {
        let c = contract();
        self.oncepost
            .run_json(&[
                "publish",
                "--json",
                "--contract",
                c.to_str().unwrap(),
                "--account",
                "wiki",
                "--base-url",
                base,
                "--field",
                &format!("page={}", self.id(name)),
                "--text",
                text,
                "--request-timeout",
                "3s",
            ])
            .await
    }
}

/// A probe, with and without `--fill`, writes nothing: no file in the namespace (page, revision, change
/// log, draft) and no write forwarded by the proxy. The editor's unload (its `call=draftdel`) is one the
/// probe stops before it leaves.
#[tokio::test]
async fn a_probe_with_or_without_fill_writes_nothing_to_the_wiki() {
    let lab = Lab::new("oncepost").await;
    let proxy = Proxy::start(&lab.wiki.base_url).await;
    let c = contract();
    for fill in [None, Some("a probe fills this and presses nothing")] {
        let page = lab.id(if fill.is_some() { "filled" } else { "plain" });
        let mut args = vec![
            "probe",
            "--json",
            "--contract",
            c.to_str().unwrap(),
            "--base-url",
            &proxy.base,
            "--account",
            "wiki",
            "--field",
        ];
        let field = format!("page={page}");
        args.push(&field);
        if let Some(f) = fill {
            args.extend(["--fill", f]);
        }
        let (code, out, err) = lab.run(&args).await;
        assert_eq!(code, 0, "{out} {err}");
        let report: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(report["verdict"], "pass", "{out}");
    }
    let stats = proxy.stats().await;
    assert_eq!(stats["forwarded_writes_total"], 0, "{stats}");
    assert!(
        lab.wiki.written_in(&lab.ns).is_empty(),
        "{:?}",
        lab.wiki.written_in(&lab.ns)
    );
}

/// A publish makes the page, reads it back on a fresh page and settles `published` with the wiki's
/// permalink; the same command again sends nothing and answers the same.
#[tokio::test]
async fn a_publish_makes_one_page_and_a_rerun_makes_nothing() {
    let lab = Lab::new("oncepost").await;
    let text = format!("Lab note **{}** from oncepost", lab.ns);
    let (code, report, err) = lab.publish_at(&lab.wiki.base_url, "note", &text).await;
    assert_eq!(code, 0, "{report} {err}");
    assert_eq!(report["state"], "published", "{report}");
    let id = lab.id("note");
    assert_eq!(
        report["permalink"],
        format!(
            "{}/doku.php?id={}",
            lab.wiki.base_url,
            id.replace(':', "%3A")
        ),
        "{report}"
    );
    assert_eq!(lab.wiki.saves_of(&lab.ns, "note"), 1);
    assert_eq!(
        lab.wiki.page_text(&lab.ns, "note").as_deref(),
        Some(text.as_str())
    );

    let (code, again, err) = lab.publish_at(&lab.wiki.base_url, "note", &text).await;
    assert_eq!(code, 0, "{again} {err}");
    assert_eq!(again["state"], "published");
    assert_eq!(again["key"], report["key"]);
    assert_eq!(
        lab.wiki.saves_of(&lab.ns, "note"),
        1,
        "the rerun saved nothing"
    );
}

/// The create request is dropped after the wiki saved the page: indeterminate, then sweep and one
/// reconcile lookup find the page as the account's and settle it `published` with its permalink; a rerun
/// sends nothing. Exactly one save, counted by the wiki and by the proxy.
#[tokio::test]
async fn a_dropped_save_is_reconciled_published_by_reading_the_wiki() {
    let lab = Lab::new("oncepost").await;
    let proxy = Proxy::start(&lab.wiki.base_url).await;
    proxy.fault("commit-then-drop").await;
    let text = format!("Dropped answer {}", lab.ns);
    let (code, report, err) = lab.publish_at(&proxy.base, "dropped", &text).await;
    assert_eq!(code, 10, "{report} {err}");
    assert_eq!(report["state"], "indeterminate");
    proxy.fault("normal").await;
    let key = report["key"].as_str().unwrap().to_string();
    assert_eq!(lab.wiki.saves_of(&lab.ns, "dropped"), 1);

    let (code, out, err) = lab
        .oncepost
        .sweep_then_reconcile(&key, Duration::from_millis(1700))
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let shown = lab.oncepost.show(&key).await;
    assert_eq!(shown["intent"]["state"], "published", "{shown}");
    let permalink = shown.to_string();
    assert!(
        permalink.contains(&format!(
            "doku.php?id={}",
            lab.id("dropped").replace(':', "%3A")
        )),
        "{shown}"
    );

    let (code, again, err) = lab.publish_at(&proxy.base, "dropped", &text).await;
    assert_eq!(code, 0, "{again} {err}");
    assert_eq!(again["state"], "published");
    assert_eq!(lab.wiki.saves_of(&lab.ns, "dropped"), 1);
    let stats = proxy.stats().await;
    assert_eq!(stats["forwarded_writes"]["POST /doku.php"], 1, "{stats}");
}

/// Another account's page with the same name and the same text is never taken for ours: our intent's save
/// never reached the wiki (reset before it was read), the other user then made that page; the lookup sees
/// the text under another author and parks the intent for a person instead of settling it published.
/// The review page shows the parked send with its screenshots, in Chromium.
#[tokio::test]
async fn another_accounts_page_with_our_text_is_never_ours_and_parks_for_review() {
    let lab = Lab::new("oncepost").await;
    let proxy = Proxy::start(&lab.wiki.base_url).await;
    proxy.fault("reset-before-read").await;
    let text = format!("Same words {}", lab.ns);
    let (code, report, err) = lab.publish_at(&proxy.base, "same", &text).await;
    assert_eq!(code, 10, "{report} {err}");
    proxy.fault("normal").await;
    let key = report["key"].as_str().unwrap().to_string();
    assert_eq!(
        lab.wiki.saves_of(&lab.ns, "same"),
        0,
        "reset before the wiki read it"
    );

    lab.wiki
        .create_page_as("other", &lab.ns, "same", &text)
        .await;
    let (code, out, err) = lab
        .oncepost
        .sweep_then_reconcile(&key, Duration::from_millis(1700))
        .await;
    assert_eq!(code, 12, "{out} {err}");
    let shown = lab.oncepost.show(&key).await;
    assert_eq!(shown["intent"]["state"], "parked", "{shown}");
    assert_eq!(
        lab.wiki.saves_of(&lab.ns, "same"),
        1,
        "only the other user's save"
    );

    review_shows_screenshots(lab.oncepost.home(), &key).await;
}

/// A page that already exists is never saved over: the editor opens on its text, so the save carries
/// another `changecheck` than a new page's and is not the contract's create request; the door stops it and
/// the intent fails, the other user's page untouched.
#[tokio::test]
async fn an_existing_page_is_never_saved_over() {
    let lab = Lab::new("oncepost").await;
    let theirs = format!("Their page {}", lab.ns);
    lab.wiki
        .create_page_as("other", &lab.ns, "taken", &theirs)
        .await;
    let (code, report, err) = lab
        .publish_at(
            &lab.wiki.base_url,
            "taken",
            &format!("Our words {}", lab.ns),
        )
        .await;
    assert_eq!(report["state"], "failed", "{code} {report} {err}");
    assert_eq!(code, 11);
    assert_eq!(lab.wiki.saves_of(&lab.ns, "taken"), 1);
    assert_eq!(
        lab.wiki.page_text(&lab.ns, "taken").as_deref(),
        Some(theirs.as_str())
    );
}

/// `oncepost conform` on the real wiki: the probe forwards nothing; each fault leaves at most one save that
/// reconcile finds; the reruns send nothing. The wiki agrees: every page it holds in the namespace was saved
/// exactly once, and the page whose save was reset never came to be.
#[tokio::test]
async fn conform_is_all_pass_on_dokuwiki() {
    let lab = Lab::new("oncepost").await;
    let c = contract();
    let field = format!("page={}", lab.id("conform"));
    let (code, out, err) = lab
        .run(&[
            "conform",
            "--contract",
            c.to_str().unwrap(),
            "--base-url",
            &lab.wiki.base_url,
            "--account",
            "wiki",
            "--field",
            &field,
            "--delay-ms",
            "4000",
            "--request-timeout",
            "2s",
            // The harsher mode: a re-send by the browser itself would reach the app (with harness
            // transport oncepost sends the create request once, so there is none to let through).
            "--let-resends-through",
        ])
        .await;
    eprintln!("{out}");
    assert_eq!(code, 0, "{out}\n{err}");
    let pages = lab.wiki.pages_in(&lab.ns);
    // login (the setup probe made none: it pressed nothing) + normal + the three commit-then-* faults.
    assert_eq!(pages.len(), 4, "{pages:?}");
    for p in &pages {
        let name = p.trim_end_matches(".txt");
        assert_eq!(lab.wiki.saves_of(&lab.ns, name), 1, "{name}");
    }
    assert!(!pages.iter().any(|p| p.contains("reset")), "{pages:?}");
}

/// A url field and `id_text` are checked like every key: each misuse is refused with the key's path, and a
/// post or probe without the page's name exits 2 before a browser starts.
#[tokio::test]
async fn url_fields_and_id_text_are_checked_and_a_missing_page_name_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let o = Oncepost::new(dir.path().join("home"));
    let shipped = std::fs::read_to_string(contract()).unwrap();
    let url_field = "name = \"page\"\nkind = \"url\"\n";
    assert!(shipped.contains(url_field));
    let cases = [
        (
            shipped.replace(
                url_field,
                &format!("{url_field}locator = {{ strategies = [{{ css = \"#x\" }}] }}\n"),
            ),
            "a url field has no locator",
        ),
        (
            shipped.replace("?id={field:page}&do=edit", "?do=edit"),
            "url field \"page\" is not in compose.url",
        ),
        (
            shipped.replace("format = 2", "format = 1"),
            "kind = \"url\" needs format = 2",
        ),
        (
            shipped.replace(
                "locator = { strategies = [{ css = \"#wiki__text\" }] }\n",
                "",
            ),
            "missing locator",
        ),
        (
            shipped.replace(
                "id_text = \".pageId span\"",
                "id_text = \".pageId span\"\nid_attribute = \"data-id\"",
            ),
            "give exactly one of id_attribute, id_from_link, id_text",
        ),
    ];
    for (i, (text, says)) in cases.iter().enumerate() {
        let f = dir.path().join(format!("case{i}.toml"));
        std::fs::write(&f, text).unwrap();
        let (code, out, err) = o.run(&["contract", "check", f.to_str().unwrap()]).await;
        assert_eq!(code, 2, "case {i}: {out} {err}");
        assert!(err.contains(says), "case {i}: {err}");
    }

    let (code, out, err) = o
        .run(&["accounts", "add", "wiki", "--platform", "dokuwiki"])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let c = contract();
    let base = "http://127.0.0.1:9";
    let (code, out, err) = o
        .run(&[
            "publish",
            "--contract",
            c.to_str().unwrap(),
            "--account",
            "wiki",
            "--base-url",
            base,
            "--text",
            "no page named",
        ])
        .await;
    assert_eq!(code, 2, "{out} {err}");
    assert!(err.contains("--field page=..."), "{err}");
    let (code, out, err) = o
        .run(&[
            "probe",
            "--contract",
            c.to_str().unwrap(),
            "--base-url",
            base,
        ])
        .await;
    assert_eq!(code, 2, "{out} {err}");
    assert!(err.contains("--field page=..."), "{err}");
    let (code, out, err) = o
        .run(&[
            "probe",
            "--contract",
            c.to_str().unwrap(),
            "--base-url",
            base,
            "--field",
            "title=x",
        ])
        .await;
    assert_eq!(code, 2, "{out} {err}");
    assert!(err.contains("no field \"title\""), "{err}");
    let (_, listed, _) = o.run(&["intents", "list", "--json"]).await;
    assert!(
        !listed.contains("no page named"),
        "nothing was recorded: {listed}"
    );
}

/// A page of two paragraphs, the second with a line broken in two (which the wiki joins): saved once, as
/// typed, and the read-back finds its words on the page (`visible-words`).
#[tokio::test]
async fn a_page_in_paragraphs_is_saved_once_and_read_back() {
    let lab = Lab::new("oncepost").await;
    let text = format!(
        "First paragraph from oncepost {}\n\nSecond paragraph, and a line\nbroken in two",
        lab.ns
    );
    let (code, report, err) = lab
        .publish_at(&lab.wiki.base_url, "paragraphs", &text)
        .await;
    assert_eq!(code, 0, "{report} {err}");
    assert_eq!(report["state"], "published", "{report}");
    assert_eq!(lab.wiki.saves_of(&lab.ns, "paragraphs"), 1);
    assert_eq!(
        lab.wiki.page_text(&lab.ns, "paragraphs").as_deref(),
        Some(text.as_str())
    );
}
