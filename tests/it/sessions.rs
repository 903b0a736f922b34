//! Look-before-write never races the page's session, through the real binary and real Chromium.
//!
//! Fixturebook with `TokenPolicy::PerPage` mints a new CSRF token on every page it renders and accepts only
//! a session's newest (as some frameworks do), and its search page mints late (`slow_ms`, a slow search). A
//! publish that loads the search page beside the compose page posts the compose page's token after the
//! search made it stale: 403, and the post is lost. In sequence (login, search, compose) the compose page is
//! the last page loaded and its token the newest.
use std::path::PathBuf;

use oncepost::fixture_platform::TokenPolicy;

use crate::kit::{self, unique};

async fn env() -> kit::Env {
    let env = kit::Env::start_configured(None, None, |cfg| cfg.tokens = TokenPolicy::PerPage).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    env
}

/// The bundled contract with `from` replaced by `to`, written as `name`.
fn bundled_with(env: &kit::Env, name: &str, from: &str, to: &str) -> PathBuf {
    let c = std::fs::read_to_string(kit::repo_path("selectors/fixture.toml")).unwrap();
    assert!(c.contains(from), "{from} is in the bundled contract");
    env.write_file(name, &c.replace(from, to))
}

const SEARCH: &str = "search = \"{base_url}/search?q={text}\"";

/// The bundled contract whose search page takes `slow_ms` to render.
fn slow_search_contract(env: &kit::Env, slow_ms: u64) -> PathBuf {
    let slow = format!("search = \"{{base_url}}/search?slow_ms={slow_ms}&q={{text}}\"");
    bundled_with(env, "slow-search.toml", SEARCH, &slow)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_search_page_never_makes_the_compose_pages_token_stale() {
    let env = env().await;
    let contract = slow_search_contract(&env, 800);
    for i in 0..2 {
        let text = unique(&format!("token race {i}"));
        let (code, v, err) = env.publish("alice", &contract, &text, &[]).await;
        assert_eq!(code, 0, "publish {i}: {v} {err}");
        assert_eq!(v["state"], "published", "{v}");
        assert_eq!(env.copies(&text), 1);
    }
    assert_eq!(
        env.arrivals(),
        2,
        "every create request carried a valid token"
    );
    assert_eq!(env.stats().create_stored, 2);
}

/// The look's page is kept for the read-back, so it must run nothing of the platform meanwhile: a search
/// page that reloads itself every 100 ms (a live feed; each reload mints the session's newest token) left
/// open while the compose page loads and is filled makes the compose page's token stale, and the post is
/// lost. Parked at `about:blank` after the look, it reloads nothing; the read-back still reads (by
/// permalink) in that same page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_looks_page_runs_nothing_while_the_compose_page_is_used() {
    let env = env().await;
    let contract = bundled_with(
        &env,
        "reloading-search.toml",
        SEARCH,
        "search = \"{base_url}/search?reload_ms=100&q={text}\"",
    );
    for i in 0..2 {
        let text = unique(&format!("live feed {i}"));
        let (code, v, err) = env.publish("alice", &contract, &text, &[]).await;
        assert_eq!(code, 0, "publish {i}: {v} {err}");
        assert_eq!(v["state"], "published", "{v}");
        assert_eq!(env.copies(&text), 1);
    }
    assert_eq!(
        env.stats().create_stored,
        2,
        "every create request carried the newest token"
    );
}

/// The full browser (`/usr/bin/chromium`; the headless shell draws every page, so there this cannot go
/// wrong) draws only the tab in front. The look's page is opened beside the compose page and may come in
/// front of it; a compose page left behind is hidden, and one that ignores clicks while hidden
/// (`?visible_only=1`) publishes nothing. The compose page is brought to the front before it is used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compose_page_is_in_front_when_it_is_used_in_the_full_browser() {
    let full = std::path::Path::new("/usr/bin/chromium");
    assert!(
        full.exists(),
        "scripts/setup.sh installs Debian's full Chromium for this test"
    );
    let env = env().await;
    let contract = bundled_with(
        &env,
        "visible-only.toml",
        "url = \"{base_url}/compose\"",
        "url = \"{base_url}/compose?visible_only=1\"",
    );
    let text = unique("in front");
    let (code, v, err) = env.publish_in(full, "alice", &contract, &text).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn look_before_write_in_sequence_still_finds_the_post_and_presses_nothing() {
    let env = env().await;
    let contract = slow_search_contract(&env, 300);
    let text = unique("already there");
    let (code, v, err) = env.publish("alice", &contract, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    // The outcome of that run is lost (a crash, another host): the intent is gone from this store, the post
    // is not. A fresh data dir publishes the same text: the look finds it, nothing is pressed.
    let again = kit::Oncepost::new(env.dir.path().join("other-home"));
    let (code, out, err) = again
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
    assert_eq!(code, 0, "{out} {err}");
    let args = env.publish_args("alice", &contract, &text);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, v, err) = again.run_json(&args).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(v["pressed"], false, "{v}");
    assert_eq!(env.copies(&text), 1);
    assert_eq!(env.arrivals(), 1);
}

/// A first-time visitor (no login link, no cookie yet): the platform opens a session on the first page it
/// renders; loaded side by side, the search and the compose page would open two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_visitors_first_pages_open_one_session_not_two() {
    let env = env().await;
    env.add_account("anon", &["--handle", "anonymous"]).await;
    let contract = slow_search_contract(&env, 800);
    let text = unique("first visit");
    let args = env.publish_args("anon", &contract, &text);
    // Without `--login-url URL`.
    let at = args.iter().position(|a| a == "--login-url").unwrap();
    let args: Vec<&str> = args
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != at && *i != at + 1)
        .map(|(_, a)| a.as_str())
        .collect();
    let (code, v, err) = env.oncepost.run_json(&args).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1);
    assert_eq!(env.arrivals(), 1);
}

/// A platform whose login lives in a session cookie (Fixturebook's login with `&session_only=1` gives its
/// session cookie no expiry, as Rails' and PHP's have none): logged in by the login link on the first send, the account is still
/// logged in on the next send, in a new browser, without it. Its profile keeps the session's cookies when the
/// browser closes (red without: the second send's browser had no session, Fixturebook took the post as
/// anonymous's, and the read-back parked it as another author's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_kept_in_a_session_cookie_outlives_the_browser() {
    let env = env().await;
    let contract = kit::fixture_contract();
    let first = unique("logged in by the link");
    let mut args = env.publish_args("alice", &contract, &first);
    let at = args.iter().position(|a| a == "--login-url").unwrap();
    args[at + 1].push_str("&session_only=1");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, v, err) = env.oncepost.run_json(&args).await;
    assert_eq!(code, 0, "{v} {err}");
    let second = unique("still logged in");
    let mut args = env.publish_args("alice", &contract, &second);
    let at = args.iter().position(|a| a == "--login-url").unwrap();
    args.drain(at..at + 2);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, v, err) = env.oncepost.run_json(&args).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    let by: Vec<String> = env
        .platform
        .posts()
        .into_iter()
        .filter(|p| p.text == second)
        .map(|p| p.account)
        .collect();
    assert_eq!(by, ["alice"], "{v}");
}

/// Fixturebook lets a visitor post (as `anonymous`). A send whose account is not logged in (no login link,
/// nothing in its profile) would make the post under no one's name; with `compose.signed_in_as` the compose
/// page must show the account first: nothing typed or pressed, failed, no post (red without the check: the
/// post made as anonymous's, parked as another author's). Logged in by its link, the same account publishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_the_page_does_not_show_logged_in_as_the_account_presses_nothing() {
    let env = env().await;
    let contract = env.signed_in_contract();
    let text = unique("never as a visitor");
    let mut args = env.publish_args("alice", &contract, &text);
    let at = args.iter().position(|a| a == "--login-url").unwrap();
    args.drain(at..at + 2);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, v, err) = env.oncepost.run_json(&args).await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(v["state"], "failed", "{v}");
    assert_eq!(v["pressed"], false, "{v}");
    assert!(
        v["summary"]
            .as_str()
            .is_some_and(|s| s.contains("does not show the account logged in")),
        "{v}"
    );
    assert_eq!((env.arrivals(), env.copies(&text)), (0, 0));

    let text = unique("as alice herself");
    let (code, v, err) = env.publish("alice", &contract, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
}

/// `compose.signed_in_as` read from the header's text, where the avatar's initial is glued to the name
/// (`#whoami`'s text is "aalice"), through its `pattern`: the handle after the initial. The logged-in account
/// publishes; without the pattern the header shows "aalice", no one, and nothing is pressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_in_as_reads_the_handle_inside_what_the_header_shows() {
    let env = env().await;
    let c = std::fs::read_to_string(kit::repo_path("selectors/fixture.toml"))
        .unwrap()
        .replace("format = 1", "format = 2");
    let with = |extra: &str| {
        c.replace(
            "url = \"{base_url}/compose\"\n",
            &format!(
                "url = \"{{base_url}}/compose\"\nsigned_in_as = {{ css = \"#whoami\"{extra} }}\n"
            ),
        )
    };
    let plain = env.write_file("signed-in-text.toml", &with(""));
    let text = unique("the header shows the initial too");
    let (code, v, err) = env.publish("alice", &plain, &text, &[]).await;
    assert_eq!(code, 11, "{v} {err}");
    assert_eq!(v["pressed"], false, "{v}");

    let patterned = env.write_file(
        "signed-in-pattern.toml",
        &with(", pattern = '^\\s*\\S(?P<handle>\\S+)\\s*$'"),
    );
    let text = unique("read after the initial");
    let (code, v, err) = env.publish("alice", &patterned, &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(env.copies(&text), 1);
}
