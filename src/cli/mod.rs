//! The `oncepost` command line: global options, subcommands, exit codes.
//!
//! Each subcommand family lives in its own file; this file only declares them and dispatches.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod fixtures;

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
pub enum Command {
    /// Run the bundled Fixturebook fixture platform (for tests and demos).
    Fixtures(fixtures::FixturesArgs),
}

/// Parse arguments, run, and map the outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Run the chosen subcommand.
async fn dispatch(cli: Cli) -> anyhow::Result<()> {
    let data_dir = resolve_data_dir(cli.data_dir.clone())?;
    match cli.command {
        Command::Fixtures(args) => fixtures::run(args, data_dir).await,
    }
}

/// `--data-dir` / `ONCEPOST_HOME`, else the platform's user data dir + `oncepost`.
fn resolve_data_dir(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match given {
        Some(d) => Ok(d),
        None => dirs::data_dir().map(|d| d.join("oncepost")).ok_or_else(|| {
            anyhow::anyhow!("no user data dir on this system; pass --data-dir or set ONCEPOST_HOME")
        }),
    }
}
