//! The integration tests: one test binary, one module per area (they were 18 binaries, each linking the
//! whole crate: ~270 MB and a link apiece on a 2-core machine), and the shared kit they build on.
//!
//! Filter by module path: `cargo test --test it store::` or `target/debug/deps/it-HASH publish::some_test`.
//!
//! Every test now shares one process with the others (the default `--test-threads` is the core count):
//! nothing here may set process-wide state (environment variables, the current directory, signal
//! dispositions) or assume it runs alone; the PostgreSQL cluster of [`kit`] is started once for the binary.
// libc calls with no safe form: atexit (the kit's PostgreSQL cluster), pre_exec (a child with its stdout
// and stderr closed), and signals to our own children.
#![allow(unsafe_code)]
// `Begun::Claimed(c) => c, other => panic!("{other:?}")`: a test wants any other variant to fail it.
#![allow(clippy::match_wildcard_for_single_variants)]

#[macro_use]
mod kit;

mod authorship;
mod binding;
mod blocks;
mod carry;
mod chaos;
mod choices;
mod cli_store;
mod conform;
mod contract;
mod crash_matrix;
mod dbproxy;
mod declared_writes;
mod decorated;
mod door;
mod fixture_platform;
mod format2;
mod framed_success;
mod graphql;
mod guard;
mod lab_dokuwiki;
mod lab_mediawiki;
mod lab_redmine;
mod lab_wordpress;
mod late_fields;
mod live_sockets;
mod local_outbox;
mod marker;
mod mcp;
mod model;
mod one_endpoint;
mod optional_steps;
mod other_origin;
mod partition;
mod probe;
mod process_edges;
mod publish;
mod queue;
mod race;
mod reconcile_cli;
mod recover;
mod redeliver;
mod review;
mod secrets;
mod sessions;
mod shadow;
mod socket_create;
mod sources;
mod store;
mod store_triggers;
mod warm;
mod wizard;
