//! The `oncepost` command line: global options, subcommands, exit codes.
//!
//! Each subcommand family lives in its own file; this file declares them, resolves the data dir and the
//! store, and maps every outcome to a documented exit code (docs/cli.md). Everything printed goes through
//! [`output`] (never panics on a closed pipe; control characters escaped), which the lints below enforce.
#![deny(clippy::print_stdout, clippy::print_stderr)]
mod admin;
pub mod conform;
mod context;
pub mod contract;
pub mod demo;
mod exit;
pub mod fixtures;
mod intents;
pub mod mcp;
mod metrics;
pub mod output;
pub mod probe;
pub mod publish;
mod queue;
mod recorded;
mod recover;
pub mod review;
mod sources;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use context::Context;
pub use exit::{CliError, Exit};
use output::{errln, outln};

/// Publish to web platforms that have no API, at most once.
#[derive(Debug, Parser)]
#[command(name = "oncepost", version, about, propagate_version = true)]
pub struct Cli {
    /// Directory holding the SQLite store, evidence and browser profiles
    /// [default: the platform's user data dir, e.g. ~/.local/share/oncepost].
    #[arg(long, global = true, env = "ONCEPOST_HOME")]
    pub data_dir: Option<PathBuf>,
    /// Where the store lives: a SQLite file path (or sqlite://PATH), or postgres://... for shared use across
    /// hosts [default: oncepost.db in the data dir].
    #[arg(long, global = true, env = "ONCEPOST_STORE")]
    pub store: Option<String>,
    /// How long to wait for another process's lock on a SQLite store (e.g. 15s, 500ms).
    #[arg(long, global = true, default_value = "15s", value_parser = context::parse_duration_ms)]
    pub lock_wait: i64,
    /// How long a publish's pre-authorization claim lasts; after it, `sweep` releases the claim of a worker
    /// that stopped (nothing was sent). Must cover opening and filling the compose page.
    #[arg(long, global = true, env = "ONCEPOST_CLAIM_LEASE", default_value = "120s", value_parser = context::parse_lease_ms)]
    pub claim_lease: i64,
    /// How long an authorized dispatch may go without an outcome; after it, `sweep` makes the intent
    /// indeterminate (the worker may have sent). Must cover the send, the success signal and the read-back.
    #[arg(long, global = true, env = "ONCEPOST_DISPATCH_LEASE", default_value = "120s", value_parser = context::parse_lease_ms)]
    pub dispatch_lease: i64,
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// How diagnostics are written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The subcommands, in the order of a user's journey (`--help` lists them so): try it, publish, check a
/// page, write a contract, look at what needs a person, settle the unknown, run unattended; then
/// administration.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the bundled fixture platform, publish one post through the full flow, print the timeline.
    Demo(demo::DemoArgs),
    /// Publish one post at most once, verified by reading it back (exit 0 published, 10 indeterminate,
    /// 11 failed, 12 parked, 13 in progress elsewhere).
    Publish(publish::PublishArgs),
    /// Queue a post for a worker (same arguments as publish, plus --not-before); prints its key at once.
    Submit(queue::SubmitArgs),
    /// Wait until a submitted intent rests; exits with its state's code, 13 at the timeout.
    Wait(queue::WaitArgs),
    /// Check a platform page against its contract without any risk of posting (exit 3: a required locator
    /// failed or the page attempted a write).
    Probe(probe::ProbeArgs),
    /// Platform contracts (selectors/NAME.toml).
    #[command(subcommand)]
    Contract(contract::ContractCommand),
    /// Check the at-most-once claim against your own platform through a fault-injecting proxy: a probe, one
    /// publish per fault, sweep + reconcile, a rerun; prints a table (exit 3 when a cell fails).
    Conform(conform::ConformArgs),
    /// Serve the Model Context Protocol on stdio for agents: list_platforms, probe, publish (idempotent by
    /// delivery key), intent_status, list_intents. No tool approves, redelivers or retries.
    Mcp(mcp::McpArgs),
    /// Serve the review page for parked and indeterminate sends on loopback (or --export it as static HTML).
    Review(review::ReviewArgs),
    /// Settle indeterminate intents by LOOKING at the platform: one recorded lookup each, never a resend.
    Reconcile(recover::ReconcileArgs),
    /// Run sweep and reconcile on a schedule until SIGINT/SIGTERM (unattended use).
    Worker(recover::WorkerArgs),
    /// Inspect intents: list them, or show one with its timeline of events and attempts.
    #[command(subcommand)]
    Intents(intents::IntentsCmd),
    /// Re-open a FAILED intent (the only retryable state); creates no attempt.
    Retry(intents::RetryArgs),
    /// Park an intent for a person (from pending, failed or indeterminate).
    Park(intents::ParkArgs),
    /// Authorize one more copy of a consumed intent, as a NEW intent carrying the authorization record.
    Redeliver(intents::RedeliverArgs),
    /// Move authorized intents whose lease expired to indeterminate; release expired claims.
    Sweep(intents::SweepArgs),
    /// Engage ("on": publishing stops) or release ("off") a kill switch.
    Switch(admin::SwitchArgs),
    /// Manage accounts: add, rotate credentials, revoke, list.
    #[command(subcommand)]
    Accounts(admin::AccountsCmd),
    /// Per-platform limits: dispatches in flight across every host.
    #[command(subcommand)]
    Platforms(admin::PlatformsCmd),
    /// The sources posts rest on: capture a body, list them, show one's chain and what rests on it.
    #[command(subcommand)]
    Sources(sources::SourcesCmd),
    /// Store administration: migrate, bump the restore epoch.
    #[command(subcommand)]
    Store(admin::StoreCmd),
    /// Run the bundled Fixturebook fixture platform (for tests and demos).
    Fixtures(fixtures::FixturesArgs),
}

/// Parse arguments, run, and map the outcome to an exit code.
pub fn main() -> ExitCode {
    // Everything this process and its children (the guard, Chromium) create is private to its owner: the
    // store, its -wal/-shm, evidence, locks and profiles, wherever --store and --data-dir point. Files that
    // matter are also created with explicit modes; this is the belt.
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    // The Chromium guard (see browser::guard) is this binary too; it takes no oncepost options.
    let mut raw = std::env::args_os();
    if raw.nth(1).as_deref() == Some(std::ffi::OsStr::new(crate::browser::guard::SUBCOMMAND)) {
        let argv: Vec<std::ffi::OsString> = raw.skip_while(|a| a != "--").skip(1).collect();
        return match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => ExitCode::from(rt.block_on(crate::browser::guard::run(argv)) as u8),
            Err(e) => {
                outln!("error: cannot start the async runtime: {e}");
                ExitCode::from(1)
            }
        };
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    init_tracing(cli.log_format);
    crate::failpoint::init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            errln!("oncepost: cannot start the async runtime: {e}");
            return ExitCode::from(Exit::Internal as u8);
        }
    };
    // The MCP server keeps the CLI's global options for the probes it runs.
    let mcp_args = match &cli.command {
        Command::Mcp(a) => Some(a.clone()),
        _ => None,
    };
    if let Some(args) = mcp_args {
        return exit_with(runtime.block_on(mcp::run(std::sync::Arc::new(cli), args)));
    }
    // Contract, probe and fixtures report their own exit codes.
    match &cli.command {
        Command::Contract(c) if !c.uses_store() => return contract::run(c),
        Command::Probe(a) => return runtime.block_on(probe::run(&cli, a)),
        Command::Conform(a) => return runtime.block_on(conform::run(&cli, a, cli.log_format)),
        _ => {}
    }
    exit_with(runtime.block_on(run(cli)))
}

/// The process's exit code for a command's result; an error is printed on stderr first.
fn exit_with(result: Result<Exit, CliError>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            // Error messages may quote a page's URL or answer: printed through the redaction layer too.
            errln!(
                "oncepost: {}",
                output::clean(&crate::redact::text(&e.message))
            );
            ExitCode::from(e.exit as u8)
        }
    }
}

/// Print a clap error or the help text. clap echoes the offending argument as typed, so an error is
/// printed through [`output::clean`] (line by line), and neither path panics on a closed pipe.
fn usage_error(e: clap::Error) -> ExitCode {
    let text = e.render().to_string();
    let text = text.trim_end();
    if e.use_stderr() {
        for line in text.lines() {
            errln!("{}", output::clean(line));
        }
    } else {
        outln!("{text}");
    }
    ExitCode::from(e.exit_code().clamp(0, 255) as u8)
}

/// Targets that log raw DevTools protocol traffic: CDP messages carry the Cookie header, the page's request
/// and response bodies (base64, which no text redaction can read) and the DOM.
const WIRE_TARGETS: &[&str] = &["chromiumoxide", "tungstenite", "async_tungstenite"];
/// Of those, the modules whose every line quotes a message (`Sending {cmd:?}`, `Command {cmd:?} exceeded...`).
const WIRE_MESSAGE_TARGETS: &[&str] = &["chromiumoxide::conn", "chromiumoxide::cmd"];

/// Whether a log event may be written at all, whatever `ONCEPOST_LOG` asks for: wire-level crates only at
/// WARN and above (their debug and trace lines are raw protocol messages), and never the modules that quote
/// messages.
fn loggable(meta: &tracing::Metadata<'_>) -> bool {
    let t = meta.target();
    let under = |prefix: &&str| t == *prefix || t.starts_with(&format!("{prefix}::"));
    if WIRE_MESSAGE_TARGETS.iter().any(under) {
        return false;
    }
    !(WIRE_TARGETS.iter().any(under) && *meta.level() > tracing::Level::WARN)
}

/// Logs go to stderr through the redaction layer ([`crate::redact::RedactingWriter`]), with protocol-level
/// traffic capped by [`loggable`], so `ONCEPOST_LOG=trace` prints no cookie, CSRF token or page secret.
fn init_tracing(format: LogFormat) {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_from_env("ONCEPOST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,chromiumoxide=off"));
    let cap = tracing_subscriber::filter::filter_fn(loggable);
    // Redacted, and write errors dropped (a closed stderr never panics: output::QuietStderr).
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(|| crate::redact::RedactingWriter::new(output::QuietStderr));
    let registry = tracing_subscriber::registry().with(filter);
    let _ = match format {
        LogFormat::Text => registry.with(layer.with_filter(cap)).try_init(),
        LogFormat::Json => registry.with(layer.json().with_filter(cap)).try_init(),
    };
}

async fn run(cli: Cli) -> Result<Exit, CliError> {
    let ctx = Context::from_cli(&cli)?;
    let log = cli.log_format;
    match cli.command {
        Command::Publish(args) => publish::run(&ctx, args, log).await,
        Command::Submit(args) => queue::run_submit(&ctx, args).await,
        Command::Wait(args) => queue::run_wait(&ctx, args).await,
        Command::Demo(args) => demo::run(&ctx, args, log).await,
        Command::Intents(cmd) => intents::run_intents(&ctx, cmd).await,
        Command::Retry(args) => intents::run_retry(&ctx, args).await,
        Command::Park(args) => intents::run_park(&ctx, args).await,
        Command::Redeliver(args) => intents::run_redeliver(&ctx, args).await,
        Command::Sweep(args) => intents::run_sweep(&ctx, args).await,
        Command::Switch(args) => admin::run_switch(&ctx, args).await,
        Command::Accounts(cmd) => admin::run_accounts(&ctx, cmd).await,
        Command::Platforms(cmd) => admin::run_platforms(&ctx, cmd).await,
        Command::Sources(cmd) => sources::run(&ctx, cmd).await,
        Command::Store(cmd) => admin::run_store(&ctx, cmd).await,
        Command::Fixtures(args) => {
            fixtures::run(args, ctx.data_dir.clone())
                .await
                .map_err(|e| match e.downcast_ref::<fixtures::BadProxyInput>() {
                    Some(b) => CliError::bad_input(b.0.clone()),
                    None => CliError::internal(format!("{e:#}")),
                })?;
            Ok(Exit::Ok)
        }
        Command::Review(args) => review::run(&ctx, args).await,
        Command::Reconcile(args) => recover::run_reconcile(&ctx, args).await,
        Command::Worker(args) => recover::run_worker(&ctx, args).await,
        Command::Contract(contract::ContractCommand::List { json }) => {
            contract::list(&ctx, json).await
        }
        Command::Contract(_) | Command::Probe(_) | Command::Conform(_) | Command::Mcp(_) => {
            Err(CliError::internal("dispatched earlier"))
        }
    }
}

/// The data directory: `--data-dir` / `ONCEPOST_HOME`, else the platform data dir + `oncepost`.
pub fn data_dir(cli: &Cli) -> anyhow::Result<PathBuf> {
    match &cli.data_dir {
        Some(d) => Ok(d.clone()),
        None => context::default_data_dir().map_err(|e| anyhow::anyhow!(e.message)),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn help_lists_the_commands_in_the_order_of_a_users_journey() {
        let names: Vec<String> = super::Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "demo",
                "publish",
                "submit",
                "wait",
                "probe",
                "contract",
                "conform",
                "mcp",
                "review",
                "reconcile",
                "worker",
                "intents",
                "retry",
                "park",
                "redeliver",
                "sweep",
                "switch",
                "accounts",
                "platforms",
                "sources",
                "store",
                "fixtures",
            ]
        );
        let help = super::Cli::command().render_help().to_string();
        let at = |name: &str| help.find(&format!("\n  {name} ")).unwrap_or(usize::MAX);
        assert!(
            at("demo") < at("publish") && at("worker") < at("intents"),
            "{help}"
        );
    }
}
