//! `oncepost fixtures ...`: run the bundled Fixturebook platform from the command line.
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

use super::output::outln;
use crate::fixture_platform::proxy::{self, ProxyConfig, ProxyFault, ProxyFaultMode};
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
    /// A fault-injecting reverse proxy on 127.0.0.1 in front of any site, counting every write it forwards
    /// (docs/conform.md); prints its base URL first, serves until SIGINT/SIGTERM.
    Proxy(ProxyArgs),
}

/// Options of `oncepost fixtures proxy`.
#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// The site to stand in front of (only its origin is used), e.g. https://app.example.
    #[arg(long)]
    pub upstream: String,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// What a matching write gets (change later with POST /__oncepost_proxy/fault).
    #[arg(long, value_enum, default_value_t = ProxyFaultMode::Normal)]
    pub fault: ProxyFaultMode,
    /// Milliseconds `commit-then-delay` holds the upstream's answer.
    #[arg(long, default_value_t = crate::fixture_platform::DEFAULT_DELAY_MS,
          value_parser = clap::value_parser!(u64).range(0..=MAX_DELAY_MS))]
    pub delay_ms: u64,
    /// Only writes whose "METHOD UPSTREAM_URL" matches this regex get the fault [default: every write].
    #[arg(long = "match", value_name = "REGEX")]
    pub matcher: Option<String>,
    /// Forward the browser's own re-sends (an identical matching write on another connection within 3 s)
    /// instead of refusing them with 409.
    #[arg(long)]
    pub let_resends_through: bool,
    /// Print one JSON line `{"base_url", "upstream", "fault", "match", "let_resends_through"}` instead of the
    /// bare URL.
    #[arg(long)]
    pub json: bool,
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
    /// Print one JSON line `{"base_url": ..., "other_origin_url": ..., "tls_url": ..., "tls_root_pem": ..., "data_dir": ..., "fault": ...}`
    /// instead of the bare URL.
    #[arg(long)]
    pub json: bool,
}

/// Run a fixtures subcommand. `data_dir` is the resolved oncepost data dir.
pub async fn run(args: FixturesArgs, data_dir: PathBuf) -> anyhow::Result<()> {
    match args.command {
        FixturesCommand::Serve(serve_args) => serve(serve_args, data_dir).await,
        FixturesCommand::Proxy(proxy_args) => proxy(proxy_args).await,
    }
}

/// Check `oncepost fixtures proxy`'s options (bad input: exit 2).
pub fn proxy_config(args: &ProxyArgs) -> Result<ProxyConfig, String> {
    let upstream = url::Url::parse(&args.upstream)
        .map_err(|e| format!("--upstream {:?}: {e}", args.upstream))?;
    if !matches!(upstream.scheme(), "http" | "https") || upstream.host().is_none() {
        return Err(format!(
            "--upstream {:?}: an http(s) URL with a host is needed",
            args.upstream
        ));
    }
    let matcher = match &args.matcher {
        Some(m) => Some(regex::Regex::new(m).map_err(|e| format!("--match: {e}"))?),
        None => None,
    };
    Ok(ProxyConfig {
        upstream,
        port: args.port,
        fault: ProxyFault::new(args.fault).with_delay_ms(args.delay_ms),
        matcher,
        let_resends_through: args.let_resends_through,
        fault_only: None,
    })
}

async fn proxy(args: ProxyArgs) -> anyhow::Result<()> {
    let config = proxy_config(&args).map_err(|m| anyhow::Error::new(BadProxyInput(m)))?;
    let fault = config.fault;
    let running = proxy::start(config).await.context("starting the proxy")?;
    let base_url = running.base_url();
    if args.json {
        outln!(
            "{}",
            serde_json::json!({
                "base_url": base_url, "upstream": running.upstream_origin(), "fault": fault,
                "match": args.matcher, "let_resends_through": args.let_resends_through,
                "control": format!("{base_url}{}", proxy::CONTROL_PREFIX),
            })
        );
    } else {
        outln!("{base_url}");
    }
    use std::io::Write;
    std::io::stdout().flush().context("writing to stdout")?;
    wait_for_stop_signal().await?;
    running.shutdown().await;
    Ok(())
}

/// A bad `fixtures proxy` option (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadProxyInput(pub String);

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
            serde_json::json!({
                "base_url": base_url,
                "other_origin_url": platform.other_origin_url(),
                "tls_url": platform.tls_url(),
                "tls_root_pem": platform.tls_root_pem(),
                "data_dir": dir,
                "fault": fault,
            })
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
