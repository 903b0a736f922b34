//! `oncepost fixtures ...`: run the bundled Fixturebook platform from the command line.
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

use super::output::outln;
use crate::fixture_platform::{
    Fault, FaultMode, FixtureConfig, FixturePlatform, MAX_DELAY_MS, TokenPolicy,
};

/// Subdirectory of the data dir holding the platform's posts.
pub const FIXTURE_SUBDIR: &str = "fixture-platform";

/// `oncepost fixtures <command>`.
#[derive(Debug, Args)]
pub struct FixturesArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: FixturesCommand,
}

/// The fixture subcommands.
#[derive(Debug, Subcommand)]
pub enum FixturesCommand {
    /// Serve Fixturebook on 127.0.0.1 until SIGINT/SIGTERM; prints the base URL first.
    Serve(ServeArgs),
}

/// Options of `oncepost fixtures serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Create-request fault mode at start (change later with POST /__admin/fault).
    #[arg(long, value_enum, default_value_t = FaultMode::Normal)]
    pub fault: FaultMode,
    /// Milliseconds `commit-then-delay` holds its answer.
    #[arg(long, default_value_t = crate::fixture_platform::DEFAULT_DELAY_MS,
          value_parser = clap::value_parser!(u64).range(0..=MAX_DELAY_MS))]
    pub delay_ms: u64,
    /// How CSRF tokens are issued: one per session, or (hostile) a new one on every page, only the newest
    /// accepted.
    #[arg(long, value_enum, default_value_t = TokenPolicy::PerSession)]
    pub tokens: TokenPolicy,
    /// Show posts rendered from markdown (`**b**`, `[label](url)`, `# heading`), as most platforms do.
    #[arg(long)]
    pub render_markdown: bool,
    /// Print one JSON line `{"base_url": ..., "data_dir": ..., "fault": ...}` instead of the bare URL.
    #[arg(long)]
    pub json: bool,
}

/// Run a fixtures subcommand. `data_dir` is the resolved oncepost data dir.
pub async fn run(args: FixturesArgs, data_dir: PathBuf) -> anyhow::Result<()> {
    match args.command {
        FixturesCommand::Serve(serve_args) => serve(serve_args, data_dir).await,
    }
}

async fn serve(args: ServeArgs, data_dir: PathBuf) -> anyhow::Result<()> {
    let dir = data_dir.join(FIXTURE_SUBDIR);
    let fault = Fault::new(args.fault).with_delay_ms(args.delay_ms);
    let platform = FixturePlatform::start(FixtureConfig {
        dir: dir.clone(),
        port: args.port,
        fault,
        tokens: args.tokens,
        renders_markdown: args.render_markdown,
    })
    .await
    .context("starting the fixture platform")?;
    let base_url = platform.base_url();
    if args.json {
        outln!(
            "{}",
            serde_json::json!({"base_url": base_url, "data_dir": dir, "fault": fault})
        );
    } else {
        outln!("{base_url}");
    }
    use std::io::Write;
    std::io::stdout().flush().context("writing to stdout")?;
    wait_for_stop_signal().await?;
    platform.shutdown().await;
    Ok(())
}

/// Resolve when SIGINT or SIGTERM arrives.
async fn wait_for_stop_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}
