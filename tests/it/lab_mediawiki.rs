//! The real-app lab, MediaWiki: Debian's unmodified package (1.39 LTS, SQLite), a private instance for the
//! test binary (kit::lab), driven only through the `oncepost` binary with the shipped contract
//! `selectors/mediawiki.toml`. What was written is counted on the wiki's side twice: by the revisions the
//! wiki keeps of each page (its API, read as any reader would) and by `oncepost fixtures proxy`'s
//! forwarded-write count.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::kit::lab::{MediaWiki, Proxy, log_in, mediawiki, review_shows_screenshots};
use crate::kit::{Oncepost, repo_path};

fn contract() -> PathBuf {
    repo_path("selectors/mediawiki.toml")
}

/// The same wiki through VisualEditor.
fn visual_contract() -> PathBuf {
    repo_path("selectors/mediawiki-visualeditor.toml")
}

/// A test's own data dir and page titles, with account `wiki` registered as MediaWiki user `user` (its
/// handle) and logged in: the probe that imports the login cookies into the account's profile must pass.
struct Lab {
    /// The test's temp dir, holding its data dir: kept while the test runs.
    _dir: tempfile::TempDir,
    oncepost: Oncepost,
    wiki: &'static MediaWiki,
    prefix: String,
    /// The contract its sends and its login probe use.
    contract: PathBuf,
}

impl Lab {
    /// A test's own data dir and titles, nobody registered yet.
    fn bare() -> Lab {
        let wiki = mediawiki();
        let dir = tempfile::tempdir().unwrap();
        let oncepost = Oncepost::new(dir.path().join("home"));
        Lab {
            prefix: wiki.prefix(),
            _dir: dir,
            oncepost,
            wiki,
            contract: contract(),
        }
    }

    async fn new(user: &str) -> Lab {
        Lab::logged_in(user, contract()).await
    }

    /// [`Lab::new`] with `contract` for the login probe and the sends.
    async fn logged_in(user: &str, contract: PathBuf) -> Lab {
        let lab = Lab {
            contract,
            ..Lab::bare()
        };
        let wiki = lab.wiki;
        log_in(
            &lab.oncepost,
            "wiki",
            "mediawiki",
            user,
            &wiki.login_cookies(user).await,
            &lab.contract,
            &wiki.base_url,
            &[format!("page={}", lab.title("login"))],
        )
        .await;
        lab
    }

    /// The title of this test's page `name`, as given to `--field page=` (with spaces).
    fn title(&self, name: &str) -> String {
        format!("{} {name}", self.prefix)
    }

    /// The same title as MediaWiki spells it in URLs and ids (spaces as `_`).
    fn id(&self, name: &str) -> String {
        self.title(name).replace(' ', "_")
    }

    async fn run(&self, args: &[&str]) -> (i32, String, String) {
        self.oncepost.run(args).await
    }

    /// `publish --json` of `text` on page `name` at `base` as account `wiki`.
    async fn publish_at(&self, base: &str, name: &str, text: &str) -> (i32, Value, String) {
        let c = &self.contract;
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
                &format!("page={}", self.title(name)),
                "--text",
                text,
                "--request-timeout",
                "3s",
            ])
            .await
    }

    /// The saves of page `name`: (user, wikitext) per revision.
    async fn saves_of(&self, name: &str) -> Vec<(String, String)> {
        self.wiki.revisions(&self.title(name)).await
    }
}

/// A probe, with and without `--fill`, writes nothing: no page with the test's prefix and no write
/// forwarded by the proxy. The edit form's stash (a declared non-publish write, which a fill's typing can
/// set off) is stopped during a probe.
#[tokio::test]
async fn a_probe_with_or_without_fill_writes_nothing_to_mediawiki() {
    let lab = Lab::new("Oncepost").await;
    let proxy = Proxy::start(&lab.wiki.base_url).await;
    let c = contract();
    for fill in [None, Some("a probe fills this and presses nothing")] {
        let page = lab.title(if fill.is_some() { "filled" } else { "plain" });
        let field = format!("page={page}");
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
            &field,
        ];
        if let Some(f) = fill {
            args.extend(["--fill", f, "--observe-ms", "3500"]);
        }
        let (code, out, err) = lab.run(&args).await;
        assert_eq!(code, 0, "{out} {err}");
        let report: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(report["verdict"], "pass", "{out}");
    }
    let stats = proxy.stats().await;
    assert_eq!(stats["forwarded_writes_total"], 0, "{stats}");
    assert!(
        lab.wiki.pages_with(&lab.prefix).await.is_empty(),
        "{:?}",
        lab.wiki.pages_with(&lab.prefix).await
    );
}

/// A publish makes the page as the account, reads it back and settles `published` with the wiki's
/// permalink and the page's name as MediaWiki spells it; the same command again sends nothing. The page
/// has four headings, so MediaWiki shows an "[edit]" link beside each and a table of contents: left out of
/// the text read back (`text_skip`; red without it: parked as a mismatch).
#[tokio::test]
async fn a_publish_makes_one_mediawiki_page_and_a_rerun_makes_nothing() {
    let lab = Lab::new("Oncepost").await;
    let text = format!(
        "Lab note '''{}''' from oncepost.\n\n== One ==\nFirst.\n\n== Two ==\nSecond, with a \
         [[Main Page]] link.\n\n== Three ==\nThird.\n\n== Four ==\nFourth.",
        lab.prefix
    );
    let (code, report, err) = lab.publish_at(&lab.wiki.base_url, "note", &text).await;
    assert_eq!(code, 0, "{report} {err}");
    assert_eq!(report["state"], "published", "{report}");
    assert_eq!(report["platform_id"], lab.id("note"), "{report}");
    assert_eq!(
        report["permalink"],
        format!("{}/index.php?title={}", lab.wiki.base_url, lab.id("note")),
        "{report}"
    );
    saved_once_and_the_rerun_saves_nothing(&lab, "note", &text, "Oncepost", &report).await;
}

/// `report`, a publish of `text` on page `name`, made one save of `text` by `user`; a rerun of the same send
/// is answered as it stands and saves nothing.
async fn saved_once_and_the_rerun_saves_nothing(
    lab: &Lab,
    name: &str,
    text: &str,
    user: &str,
    report: &Value,
) {
    assert_eq!(
        lab.saves_of(name).await,
        vec![(user.to_string(), text.to_string())]
    );
    let (code, again, err) = lab.publish_at(&lab.wiki.base_url, name, text).await;
    assert_eq!(code, 0, "{again} {err}");
    assert_eq!(again["state"], "published");
    assert_eq!(again["key"], report["key"]);
    assert_eq!(lab.saves_of(name).await.len(), 1, "the rerun saved nothing");
}

/// The create request is dropped after the wiki saved the page: indeterminate, then sweep and one
/// reconcile lookup find the page as the account's (the last editor the page's foot names) and settle it
/// `published`; a rerun sends nothing. Exactly one save, counted by the wiki and by the proxy.
#[tokio::test]
async fn a_dropped_mediawiki_save_is_reconciled_published_by_reading_the_wiki() {
    let lab = Lab::new("Oncepost").await;
    let proxy = Proxy::start(&lab.wiki.base_url).await;
    proxy.fault("commit-then-drop").await;
    let text = format!("Dropped answer {}", lab.prefix);
    let (code, report, err) = lab.publish_at(&proxy.base, "dropped", &text).await;
    assert_eq!(code, 10, "{report} {err}");
    assert_eq!(report["state"], "indeterminate");
    proxy.fault("normal").await;
    let key = report["key"].as_str().unwrap().to_string();
    assert_eq!(lab.saves_of("dropped").await.len(), 1);

    let (code, out, err) = lab
        .oncepost
        .sweep_then_reconcile(&key, Duration::from_millis(1700))
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let shown = lab.oncepost.show(&key).await;
    assert_eq!(shown["intent"]["state"], "published", "{shown}");
    assert_eq!(shown["intent"]["platform_id"], lab.id("dropped"), "{shown}");

    let (code, again, err) = lab.publish_at(&proxy.base, "dropped", &text).await;
    assert_eq!(code, 0, "{again} {err}");
    assert_eq!(again["state"], "published");
    assert_eq!(lab.saves_of("dropped").await.len(), 1);
    let stats = proxy.stats().await;
    assert_eq!(stats["forwarded_writes"]["POST /index.php"], 1, "{stats}");
}

/// Another user's page with the same name and the same text is never taken for ours: our save never
/// reached the wiki (reset before it was read), the other user then made that page; the lookup sees the
/// text under another last editor and parks the intent for a person instead of settling it published.
/// The review page shows the parked send with its screenshots, in Chromium.
#[tokio::test]
async fn another_users_mediawiki_page_with_our_text_is_never_ours_and_parks_for_review() {
    let lab = Lab::new("Oncepost").await;
    let proxy = Proxy::start(&lab.wiki.base_url).await;
    proxy.fault("reset-before-read").await;
    let text = format!("Same words {}", lab.prefix);
    let (code, report, err) = lab.publish_at(&proxy.base, "same", &text).await;
    assert_eq!(code, 10, "{report} {err}");
    proxy.fault("normal").await;
    let key = report["key"].as_str().unwrap().to_string();
    assert!(
        lab.saves_of("same").await.is_empty(),
        "reset before the wiki read it"
    );

    lab.wiki
        .create_page_as("Other", &lab.title("same"), &text)
        .await;
    let (code, out, err) = lab
        .oncepost
        .sweep_then_reconcile(&key, Duration::from_millis(1700))
        .await;
    assert_eq!(code, 12, "{out} {err}");
    let shown = lab.oncepost.show(&key).await;
    assert_eq!(shown["intent"]["state"], "parked", "{shown}");
    assert_eq!(
        lab.saves_of("same").await,
        vec![("Other".to_string(), text.clone())],
        "only the other user's save"
    );

    review_shows_screenshots(lab.oncepost.home(), &key).await;
}

/// A page that already exists is never saved over: its edit form names the revision it was opened on
/// (`parentRevId` not 0), so the save is not the contract's create request; the door stops it and the
/// intent fails, the other user's page untouched. The same text already there under another user is a
/// lead before anything is pressed: parked, nothing saved.
#[tokio::test]
async fn an_existing_mediawiki_page_is_never_saved_over() {
    let lab = Lab::new("Oncepost").await;
    let theirs = a_save_over_their_page_is_stopped(&lab).await;

    let (code, report, err) = lab.publish_at(&lab.wiki.base_url, "taken", &theirs).await;
    assert_eq!(report["state"], "parked", "{code} {report} {err}");
    assert_eq!(code, 12);
    assert_eq!(report["pressed"], false, "{report}");
    assert_eq!(lab.saves_of("taken").await.len(), 1);
}

/// `oncepost conform` on the real wiki: the probe forwards nothing; each fault leaves at most one save that
/// reconcile finds; the reruns send nothing. The wiki agrees: every page with the test's prefix was saved
/// exactly once, by the account, and the page whose save was reset never came to be.
#[tokio::test]
async fn conform_is_all_pass_on_mediawiki() {
    conform_is_all_pass(Lab::new("Oncepost").await, "Oncepost").await;
}

/// `oncepost conform` through VisualEditor: the same, the fault given to the editor's save alone (the stash
/// shares its `POST /api.php`; conform tells them apart by the contract's create request); each save that
/// reached the wiki is found by reconcile at the revision its page's "Permanent link" names.
#[tokio::test]
async fn conform_is_all_pass_through_visualeditor() {
    conform_is_all_pass(visual_lab().await, "Visual").await;
}

/// `oncepost conform` of `lab`'s contract, then the wiki's own count: one page per fault that saved, each
/// saved once by `user`.
async fn conform_is_all_pass(lab: Lab, user: &str) {
    let c = &lab.contract;
    let field = format!("page={}", lab.title("conform"));
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
            "--let-resends-through",
        ])
        .await;
    eprintln!("{out}");
    assert_eq!(code, 0, "{out}\n{err}");
    let pages = lab.wiki.pages_with(&lab.prefix).await;
    // normal + the three commit-then-* faults (the setup probe pressed nothing).
    assert_eq!(pages.len(), 4, "{pages:?}");
    for p in &pages {
        let saves = lab.wiki.revisions(p).await;
        assert_eq!(saves.len(), 1, "{p}: {saves:?}");
        assert_eq!(saves[0].0, user, "{p}");
    }
    assert!(!pages.iter().any(|p| p.contains("reset")), "{pages:?}");
}

/// A page named in letters outside ASCII ("Café", "Überblick"): the save's answer and the "Read" tab spell
/// its name percent-encoded in their URLs, and the id taken from them is the name itself, so the permalink
/// template encodes it once (red when the id was kept encoded: the read-back asked for `Caf%25C3%25A9`,
/// MediaWiki's "Bad title" page, read it as the post showing other words, and parked it as a mismatch).
#[tokio::test]
async fn a_mediawiki_page_named_outside_ascii_is_read_back_at_its_own_name() {
    let lab = Lab::new("Oncepost").await;
    let text = format!("Un café pour {}", lab.prefix);
    let (code, report, err) = lab
        .publish_at(&lab.wiki.base_url, "Café Überblick", &text)
        .await;
    assert_eq!(code, 0, "{report} {err}");
    assert_eq!(report["state"], "published", "{report}");
    assert_eq!(report["platform_id"], lab.id("Café Überblick"), "{report}");
    assert_eq!(
        report["permalink"],
        format!(
            "{}/index.php?title={}",
            lab.wiki.base_url,
            url::form_urlencoded::byte_serialize(lab.id("Café Überblick").as_bytes())
                .collect::<String>()
        ),
        "{report}"
    );
    assert_eq!(lab.saves_of("Café Überblick").await.len(), 1);
}

/// An account whose login is not there (never imported here; as after it expired): MediaWiki lets visitors
/// edit, so its edit form works for anyone and a save would make the page under the visitor's address. The
/// contract says where the page shows who is logged in (`compose.signed_in_as`, the user menu's own link):
/// it does not show the account, so nothing is typed or pressed and the intent fails, no page made. Red
/// without that check: the page was made, by an anonymous visitor, and parked as another author's.
#[tokio::test]
async fn a_mediawiki_send_without_the_accounts_login_is_never_made_as_a_visitor() {
    let lab = Lab::bare();
    let (code, out, err) = lab
        .run(&[
            "accounts",
            "add",
            "wiki",
            "--platform",
            "mediawiki",
            "--handle",
            "Oncepost",
        ])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let text = format!("Not as a visitor {}", lab.prefix);
    let (code, report, err) = lab.publish_at(&lab.wiki.base_url, "visitor", &text).await;
    assert_eq!(report["state"], "failed", "{code} {report} {err}");
    assert_eq!(code, 11);
    assert_eq!(report["pressed"], false, "{report}");
    assert!(
        report["summary"]
            .as_str()
            .is_some_and(|s| s.contains("does not show the account logged in")),
        "{report}"
    );
    assert!(lab.saves_of("visitor").await.is_empty());
}

/// A test's lab through VisualEditor as `Visual`, an account that has used the editor before (its first-use
/// welcome seen: `visualeditors_first_use_...` is about that).
async fn visual_lab() -> Lab {
    let lab = Lab::logged_in("Visual", visual_contract()).await;
    lab.wiki.has_seen_visualeditors_welcome("Visual").await;
    lab
}

/// Through VisualEditor (`selectors/mediawiki-visualeditor.toml`): the editor's document is a contenteditable
/// root of paragraphs that keeps its own model, the save a multipart API call carrying only the key of a
/// stash the editor posted before (a declared non-publish write), behind a toolbar button and a dialog. A
/// post in two paragraphs is typed as a person types it and saved once, the wiki holding exactly those
/// paragraphs under the account; the post's id is the revision the save answered, which the page's
/// "Permanent link" names too; a rerun saves nothing. Measured before the fill put its selection inside the
/// text (`textRange`): 3 publishes of 8 failed, the typed text lost.
#[tokio::test]
async fn a_visualeditor_post_in_paragraphs_is_saved_once_and_a_rerun_saves_nothing() {
    let lab = visual_lab().await;
    let text = format!(
        "Visual note {} from oncepost.\n\nA second paragraph, typed after Enter.",
        lab.prefix
    );
    let (code, report, err) = lab.publish_at(&lab.wiki.base_url, "visual", &text).await;
    assert_eq!(code, 0, "{report} {err}");
    assert_eq!(report["state"], "published", "{report}");
    let rev = report["platform_id"].as_str().expect("a revision id");
    assert!(rev.parse::<u64>().is_ok(), "{report}");
    assert_eq!(
        report["permalink"],
        format!("{}/index.php?oldid={rev}", lab.wiki.base_url),
        "{report}"
    );
    saved_once_and_the_rerun_saves_nothing(&lab, "visual", &text, "Visual", &report).await;
}

/// An account's first visit to the editor shows a welcome dialog over the page (the document inert under
/// it): the contract's optional step closes it and waits for the document to take input again. Once it has
/// closed, the editor may open its notices popup by itself and take the focus (up to a second later under
/// load): the typing goes nowhere, and the fill's second try (clicked into, emptied, typed again) makes the
/// post. Should that fail too, nothing is pressed, and the next send, which meets no welcome, is made.
/// `Newcomer` is used by no other test, so its first send meets the welcome (its login probe met it too, and
/// sent nothing: the editor's "seen" preference, a write, was stopped there). Measured by hand under two
/// busy cores: 10 first sends of 10 made, 3 on the second try (6 of 8 before it).
#[tokio::test]
async fn visualeditors_first_use_welcome_is_closed_and_nothing_is_made_twice() {
    let lab = Lab::logged_in("Newcomer", visual_contract()).await;
    let text = format!("A newcomer's first page {}", lab.prefix);
    let (code, report, err) = lab.publish_at(&lab.wiki.base_url, "first", &text).await;
    let made = if report["state"] == "published" {
        assert_eq!(code, 0, "{report} {err}");
        "first"
    } else {
        assert_eq!(report["state"], "failed", "{code} {report} {err}");
        assert_eq!(report["pressed"], false, "{report}");
        assert!(lab.saves_of("first").await.is_empty());
        let text = format!("A newcomer's second try {}", lab.prefix);
        let (code, again, err) = lab.publish_at(&lab.wiki.base_url, "second", &text).await;
        assert_eq!(code, 0, "{again} {err}");
        assert_eq!(again["state"], "published", "{again}");
        "second"
    };
    let saves = lab.saves_of(made).await;
    assert_eq!(saves.len(), 1, "{saves:?}");
    assert_eq!(saves[0].0, "Newcomer");
}

/// A page that exists already is never saved over through VisualEditor either: the editor opens it with its
/// text (replaced by the fill), and its save carries the revision it was opened on (`oldid`), which the
/// contract's create request excludes: the door stops it, the intent fails, the other user's page untouched.
#[tokio::test]
async fn an_existing_page_is_never_saved_over_through_visualeditor() {
    a_save_over_their_page_is_stopped(&visual_lab().await).await;
}

/// `Other` made page `taken`; `lab`'s send of other words there is pressed, its save (not the create: it names
/// the revision it was opened on) stopped at the door, and the intent fails, their page untouched. Their text.
async fn a_save_over_their_page_is_stopped(lab: &Lab) -> String {
    let theirs = format!("Their page {}", lab.prefix);
    lab.wiki
        .create_page_as("Other", &lab.title("taken"), &theirs)
        .await;
    let (code, report, err) = lab
        .publish_at(
            &lab.wiki.base_url,
            "taken",
            &format!("Our words {}", lab.prefix),
        )
        .await;
    assert_eq!(report["state"], "failed", "{code} {report} {err}");
    assert_eq!(code, 11);
    assert_eq!(report["pressed"], true, "{report}");
    assert_eq!(
        lab.saves_of("taken").await,
        vec![("Other".to_string(), theirs.clone())]
    );
    theirs
}
