//! The `oncepost` command line: global options, subcommands, exit codes.
//!
//! Each subcommand family lives in its own file; this file only declares them and dispatches.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod contract;
pub mod fixtures;
pub mod probe;

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
    /// Platform contracts (selectors/NAME.toml).
    #[command(subcommand)]
    Contract(contract::ContractCommand),
    /// Check a platform page against its contract without any risk of posting (exit 3: a required locator
    /// failed or the page attempted a write).
    Probe(probe::ProbeArgs),
    /// Run the bundled Fixturebook fixture platform (for tests and demos).
    Fixtures(fixtures::FixturesArgs),
}

/// Parse arguments, run, and map the outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format);
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
    runtime.block_on(dispatch(cli))
}

/// Run the chosen subcommand.
async fn dispatch(cli: Cli) -> ExitCode {
    match &cli.command {
        Command::Contract(c) => return contract::run(c),
        Command::Probe(a) => return probe::run(&cli, a).await,
        Command::Fixtures(_) => {}
    }
    let dir = data_dir(&cli);
    let Command::Fixtures(args) = cli.command else {
        return ExitCode::from(1);
    };
    let result = match dir {
        Ok(dir) => fixtures::run(args, dir).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ONCEPOST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,chromiumoxide=off"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// The data directory: `--data-dir` / `ONCEPOST_HOME`, else the platform data dir + `oncepost`.
pub fn data_dir(cli: &Cli) -> anyhow::Result<PathBuf> {
    match &cli.data_dir {
        Some(d) => Ok(d.clone()),
        None => dirs::data_dir().map(|d| d.join("oncepost")).ok_or_else(|| {
            anyhow::anyhow!("no user data dir on this system; pass --data-dir or set ONCEPOST_HOME")
        }),
    }
}
