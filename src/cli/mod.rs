//! The `oncepost` command line: global options, subcommands, exit codes.
//!
//! Each subcommand family lives in its own file; this file only declares them and dispatches.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Publish to web platforms that have no API, at most once.
#[derive(Debug, Parser)]
#[command(name = "oncepost", version, about)]
pub struct Cli {
    /// Directory holding the SQLite store, evidence and browser profiles.
    #[arg(long, global = true, env = "ONCEPOST_HOME")]
    pub data_dir: Option<PathBuf>,
    /// Where the store lives: a SQLite path or URL, or postgres://... for shared use across hosts.
    /// Default: the SQLite file in the data dir.
    #[arg(long, global = true, env = "ONCEPOST_STORE")]
    pub store: Option<String>,
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// How diagnostics are written to stderr.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {}

/// Parse arguments, run, and map the outcome to an exit code.
pub fn main() -> ExitCode {
    let _cli = Cli::parse();
    ExitCode::SUCCESS
}
