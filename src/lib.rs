//! oncepost: publish to web platforms that have no API, **at most once**.
//!
//! A durable intent store gates a headless-browser driver. The driver may probe a page freely but never
//! submits during a probe; it presses a publish control only by consuming the authorization value the store
//! returns at the final before-byte checkpoint, then reads the post back to settle the intent.
//!
//! # Layout
//! - [`identity`]: delivery keys, attempt tokens, content and wire-request hashes (one rule for every backend).
//! - [`store`]: the at-most-once state machine on SQLite and PostgreSQL; the only module with SQL in it.
//! - [`contract`]: platform selector contracts (`selectors/*.toml`): parsing, validation, hashing.
//! - [`browser`]: the Chromium driver, strict locator checks, probes and the write guard.
//! - [`recover`]: sweep, one-lookup reconcile, and the unattended worker loop.
//! - [`review`]: the local review page for people who own parked sends, and its static export.
//! - [`fixture_platform`]: the bundled fixture platform (pages, hostile variants, fault modes) on loopback.
//! - [`html`]: the one HTML escaper and the template filters both web surfaces render with (askama).
//! - [`evidence`]: content-addressed evidence files (redacted as they are written).
//! - [`redact`]: the one redaction layer for everything persisted or printed (store, evidence, review, logs).
//! - [`failpoint`]: named SIGKILL crash points for the crash matrix (armed by `ONCEPOST_FAILPOINT`).
//! - [`lock`]: advisory file locks (one per intent, one per account profile) on one host.
//! - [`durable`]: atomic, durable file replacement and owner-only folders.
//! - [`secret`]: random tokens from the kernel and constant-time comparison.
//! - [`publish`]: the publish flow (intent, look-before-write, authorization, one write, read-back, settle).
//! - [`utc`]: UTC calendar arithmetic for display (one implementation).
//! - [`wait`]: the one bounded poll (a named condition, a deadline, a period) every poll loop uses.
//! - [`cli`]: the `oncepost` command line; the binary in `src/main.rs` only calls [`cli::main`].
//!
//! Data flows one way: cli -> publish/recover -> store + browser. The browser never writes to the store
//! and the store never touches the browser.
#![forbid(unsafe_code)]

pub mod browser;
pub mod cli;
pub mod contract;
pub mod durable;
pub mod evidence;
pub mod failpoint;
pub mod fixture_platform;
pub mod html;
pub mod identity;
pub mod lock;
pub mod publish;
pub mod recover;
pub mod redact;
pub mod review;
pub mod secret;
pub mod source;
pub mod store;
pub mod template;
pub mod utc;
pub mod wait;
