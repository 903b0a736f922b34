//! The shared test kit: the store on both backends ([`store`]), the `oncepost` binary run against one data
//! dir ([`cli`]), a Fixturebook platform with a data dir and an account ([`platform`]), and Chromium launched
//! from one place ([`chromium`]). The modules of the tests build on these instead of re-declaring them.
#![allow(dead_code)]

pub mod chromium;
pub mod cli;
pub mod lab;
pub mod platform;
#[macro_use]
pub mod store;

use std::path::PathBuf;

pub use cli::Oncepost;
pub use platform::Env;
pub use store::{Backend, TestDb, fresh_pg_url, test_db};

/// The binary under test (cargo builds it for integration tests and bakes its path in).
pub const BIN: &str = env!("CARGO_BIN_EXE_oncepost");

/// A file of this repository (contracts, fixtures, scripts).
pub fn repo_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The bundled Fixturebook contract.
pub fn fixture_contract() -> PathBuf {
    repo_path("selectors/fixture.toml")
}

/// The bundled Fixturebook contract's text with its compose page moved to `/hostile/{variant}` and, with
/// `frame`, every compose locator (the fields and the publish control) declared inside that iframe.
pub fn hostile_contract_text(variant: &str, frame: Option<&str>) -> String {
    let src = std::fs::read_to_string(fixture_contract()).expect("the fixture contract");
    let moved = src.replace(
        r#"url = "{base_url}/compose""#,
        &format!(r#"url = "{{base_url}}/hostile/{variant}""#),
    );
    assert_ne!(moved, src, "the fixture contract's compose url moved");
    let Some(frame) = frame else { return moved };
    let mut framed = 0;
    let lines: Vec<String> = moved
        .lines()
        .map(|l| match l.strip_suffix("] }") {
            Some(head) if l.starts_with("locator = { strategies = [") => {
                framed += 1;
                format!("{head}], frames = [{frame:?}] }}")
            }
            _ => l.to_string(),
        })
        .collect();
    assert_eq!(framed, 3, "two fields and the publish control");
    lines.join("\n") + "\n"
}

/// The bundled Fixturebook contract's text with its compose page asking for `query` (`maxlength=40`,
/// `rewrite=1`: docs/fixture-platform.md).
pub fn compose_asking(query: &str) -> String {
    let src = std::fs::read_to_string(fixture_contract()).expect("the fixture contract");
    let asked = src.replace(
        r#"url = "{base_url}/compose""#,
        &format!(r#"url = "{{base_url}}/compose?{query}""#),
    );
    assert_ne!(asked, src, "the fixture contract's compose url moved");
    asked
}

/// The bundled Fixturebook contract's text with its post and search pages asking for `query` (`shadow=1`,
/// `paragraphs=1`, `spa=1`: docs/fixture-platform.md).
pub fn read_pages_asking(query: &str) -> String {
    let src = std::fs::read_to_string(fixture_contract()).expect("the fixture contract");
    let asked = src
        .replace(
            r#"permalink = "{base_url}/p/{id}""#,
            &format!(r#"permalink = "{{base_url}}/p/{{id}}?{query}""#),
        )
        .replace(
            r#"search = "{base_url}/search?q={text}""#,
            &format!(r#"search = "{{base_url}}/search?{query}&q={{text}}""#),
        );
    assert_eq!(
        asked.matches(query).count(),
        2,
        "{query}: permalink and search"
    );
    asked
}

/// `contract` (the bundled contract's format 1 text, comparing `exact-nfc`) in format 2, comparing the
/// visible words (the rule of platforms that render markup).
pub fn comparing_visible_words(contract: &str) -> String {
    let words = contract
        .replace(r#"compare = "exact-nfc""#, r#"compare = "visible-words""#)
        .replace("format = 1", "format = 2");
    assert!(words.contains("visible-words") && words.contains("format = 2"));
    words
}

/// The `kind` of every event in `events` (a timeline or `intents show`'s events), in order.
pub fn event_kinds(events: &serde_json::Value) -> Vec<String> {
    events
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|e| e["kind"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// `label` and a fresh uuid: a text no other test (or earlier run) posts, so duplicate-text windows and
/// server-side counts see only this test's posts.
pub fn unique(label: &str) -> String {
    format!("{label} {}", uuid::Uuid::new_v4().simple())
}
