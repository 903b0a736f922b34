//! `oncepost sources`: the source chain (issue 14). `capture` records a body now (a new body supersedes the
//! stored head, and every post resting on an older version is then parked by the fence or the gate), `list`
//! shows every source with its head, `show ID` the chain, oldest first, with the intents resting on each
//! version and their states.
use std::path::PathBuf;

use clap::Subcommand;

use super::output::{clean, outln};
use super::publish::{SourceAsk, source_of};
use super::{CliError, Context, Exit};
use crate::store::{SourceVersionRow, Timestamp};
use crate::utc;

/// `oncepost sources ...`
#[derive(Debug, Subcommand)]
pub enum SourcesCmd {
    /// Capture a source's body now, without posting: a body the store does not hold becomes the head.
    Capture {
        /// The source's stable id (a canonical URL or an object id); default with --source-url: the URL.
        #[arg(long, value_name = "ID")]
        source_id: Option<String>,
        /// The body (HTML or text, UTF-8, at most 4 MiB).
        #[arg(long, value_name = "FILE", conflicts_with = "source_url")]
        source_file: Option<PathBuf>,
        /// Fetch the body once from this URL (a plain GET).
        #[arg(long, value_name = "URL")]
        source_url: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Every source with its head, versions and the intents resting on them.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// One source's chain: every version (oldest first), which is the head, the captures of each, and the
    /// intents resting on each with their states.
    Show {
        /// The source's stable id.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Also print each version's normalized body.
        #[arg(long)]
        bodies: bool,
    },
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

pub(crate) async fn run(ctx: &Context, cmd: SourcesCmd) -> Result<Exit, CliError> {
    match cmd {
        SourcesCmd::Capture {
            source_id,
            source_file,
            source_url,
            json,
        } => {
            if source_file.is_none() && source_url.is_none() {
                return Err(CliError::bad_input(
                    "give the body: --source-id ID --source-file FILE, or --source-url URL",
                ));
            }
            let ask = SourceAsk {
                id: source_id.as_deref(),
                file: source_file.as_deref(),
                body: None,
                url: source_url.as_deref(),
                claim: None,
            };
            // The claim is not used here (nothing is posted); the capture is the source's alone.
            let Some(src) = source_of(ask, "-").await? else {
                return Err(CliError::bad_input("no source given"));
            };
            let Some(body) = src.capture else {
                return Err(CliError::internal(
                    "a source given by flags was not captured",
                ));
            };
            let store = ctx.open_store().await?;
            let c = store.capture_source(&body, Timestamp::now()).await?;
            if json {
                outln!(
                    "{}",
                    serde_json::to_string(&c).map_err(|e| CliError::internal(e.to_string()))?
                );
            } else {
                outln!(
                    "{}: version {} ({}), head {}",
                    clean(&c.stable_id),
                    short(c.version.as_str()),
                    c.outcome.label(),
                    short(c.head.as_str())
                );
            }
            Ok(Exit::Ok)
        }
        SourcesCmd::List { json } => {
            let store = ctx.open_store().await?;
            let all = store.sources().await?;
            if json {
                outln!(
                    "{}",
                    serde_json::to_string(&all).map_err(|e| CliError::internal(e.to_string()))?
                );
            } else if all.is_empty() {
                outln!("no sources");
            } else {
                for s in &all {
                    outln!(
                        "{}  head={} versions={} intents={} head_since={}",
                        clean(&s.stable_id),
                        s.head.as_ref().map_or("-", |h| short(h.as_str())),
                        s.versions,
                        s.intents,
                        utc::rfc3339(s.head_since)
                    );
                }
            }
            Ok(Exit::Ok)
        }
        SourcesCmd::Show { id, json, bodies } => {
            let store = ctx.open_store().await?;
            let Some(chain) = store.source_chain(&id).await? else {
                return Err(CliError::bad_input(format!(
                    "no source {} (see `oncepost sources list`)",
                    clean(&id)
                )));
            };
            if json {
                outln!(
                    "{}",
                    serde_json::to_string(&chain).map_err(|e| CliError::internal(e.to_string()))?
                );
                return Ok(Exit::Ok);
            }
            outln!(
                "{}  head={} versions={}",
                clean(&chain.source.stable_id),
                chain
                    .source
                    .head
                    .as_ref()
                    .map_or("-", |h| short(h.as_str())),
                chain.versions.len()
            );
            for v in &chain.versions {
                print_version(v, bodies);
            }
            Ok(Exit::Ok)
        }
    }
}

fn print_version(v: &SourceVersionRow, bodies: bool) {
    outln!(
        "  {} {}  first seen {}  {} capture(s), {} raw bod{}{}",
        if v.is_head { "*" } else { " " },
        v.version,
        utc::rfc3339(v.first_seen_at),
        v.captures,
        v.raw_bodies,
        if v.raw_bodies == 1 { "y" } else { "ies" },
        match (&v.supersedes, &v.superseded_by) {
            (_, Some(by)) => format!("; superseded by {}", short(by.as_str())),
            (Some(s), None) => format!("; head, supersedes {}", short(s.as_str())),
            (None, None) => "; head".to_string(),
        }
    );
    for i in &v.intents {
        outln!(
            "      {} {}  claim: {}",
            i.key,
            i.state,
            clean(&i.claim_content)
        );
    }
    if bodies {
        for line in v.normalized.lines() {
            outln!("      | {}", clean(line));
        }
    }
}
