//! `oncepost review`: serve the review page for parked and indeterminate sends, or `--export DIR` it as a
//! static report. Exit codes: 0 done (the page was closed, its time ran out, or the report was written),
//! 2 bad input (non-loopback address without --bind, address in use, unwritable export folder), 1 internal.
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::context::{actor, parse_duration_ms};
use super::output::{errln, outln};
use super::{CliError, Context, Exit};
use crate::review::{self, BindChoice, ReviewError, ReviewOptions, ReviewServer};

/// `oncepost review [--bind ADDR] [--port P] [--by NAME] [--export DIR] [--open-for D]`.
#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// Listen on this address instead of 127.0.0.1. Anything but loopback exposes unpublished text and
    /// evidence to the network: only with this flag, never by default.
    #[arg(long)]
    pub bind: Option<IpAddr>,
    /// Port to listen on (0 = any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Your name, prefilled in the action forms and recorded with every action [default: $USER].
    #[arg(long)]
    pub by: Option<String>,
    /// Write the page as a static HTML report into DIR (no actions) and exit instead of serving.
    #[arg(long, value_name = "DIR")]
    pub export: Option<PathBuf>,
    /// Stop serving after this long (e.g. 30m, 2h) [default: until Ctrl-C].
    #[arg(long, value_name = "D", value_parser = parse_duration_ms)]
    pub open_for: Option<i64>,
}

/// Map page errors to exit codes: the person's setup mistakes are bad input.
fn cli_err(e: ReviewError) -> CliError {
    match e {
        ReviewError::Store(s) => s.into(),
        ReviewError::NonLoopbackBind(_) | ReviewError::Bind { .. } | ReviewError::Export { .. } => {
            CliError::bad_input(e.to_string())
        }
        other => CliError::internal(other.to_string()),
    }
}

/// Run `oncepost review`.
pub async fn run(ctx: &Context, args: ReviewArgs) -> Result<Exit, CliError> {
    let store = ctx.open_store().await?;
    if let Some(dir) = &args.export {
        let s = review::export::export(&store, &ctx.data_dir, dir)
            .await
            .map_err(cli_err)?;
        outln!(
            "wrote {} ({} sends, {} evidence files{})",
            s.index.display(),
            s.intents,
            s.files,
            if s.problems > 0 {
                format!(
                    ", {} linked files missing or changed: see their pages",
                    s.problems
                )
            } else {
                String::new()
            }
        );
        return Ok(Exit::Ok);
    }
    let bind = match args.bind {
        Some(ip) => BindChoice::Explicit(SocketAddr::new(ip, args.port)),
        None => BindChoice::Default(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), args.port)),
    };
    let server = ReviewServer::bind(
        store,
        ReviewOptions {
            bind,
            by: actor(&args.by),
            data_dir: ctx.data_dir.clone(),
        },
    )
    .await
    .map_err(cli_err)?;
    if let Some(ip) = args.bind
        && !ip.is_loopback()
    {
        errln!(
            "warning: listening on {ip}: anyone who can reach this address and has the URL can read and act"
        );
    }
    // The URL carries the session token: it goes to this terminal only.
    outln!("review page: {}", server.url());
    outln!("(anyone with this URL can act on parked sends; press Ctrl-C to stop)");
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let open_for = args
        .open_for
        .map(|ms| Duration::from_millis(ms.max(0) as u64));
    let shutdown = async move {
        match open_for {
            Some(d) => {
                tokio::select! {
                    _ = tokio::time::sleep(d) => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    };
    server.run(shutdown).await.map_err(cli_err)?;
    Ok(Exit::Ok)
}
