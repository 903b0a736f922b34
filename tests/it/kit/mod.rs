//! The shared test kit: the store on both backends ([`store`]), the `oncepost` binary run against one data
//! dir ([`cli`]), a Fixturebook platform with a data dir and an account ([`platform`]), and Chromium launched
//! from one place ([`chromium`]). The modules of the tests build on these instead of re-declaring them.
#![allow(dead_code)]

pub mod chromium;
pub mod cli;
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

/// `label` and a fresh uuid: a text no other test (or earlier run) posts, so duplicate-text windows and
/// server-side counts see only this test's posts.
pub fn unique(label: &str) -> String {
    format!("{label} {}", uuid::Uuid::new_v4().simple())
}
