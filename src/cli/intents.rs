//! `oncepost intents list|show`, `retry`, `park`, `redeliver`, `sweep`.
use clap::{Args, Subcommand};
use serde_json::json;

use super::context::actor;
use super::output::{clean, outln};
use super::{CliError, Context, Exit};
use crate::identity::DeliveryKey;
use crate::store::{Intent, Status, Timeline, Timestamp};

/// Inspect intents.
#[derive(Debug, Subcommand)]
pub enum IntentsCmd {
    /// List intents, newest first.
    List {
        /// Only intents in this state.
        #[arg(long, value_enum)]
        state: Option<Status>,
        /// At most this many.
        #[arg(long, default_value_t = 100)]
        limit: i64,
        /// One JSON array on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Show one intent with its timeline of events and attempts.
    Show {
        /// The delivery key (64 hex digits).
        key: String,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
}

/// `oncepost retry KEY`.
#[derive(Debug, Args)]
pub struct RetryArgs {
    /// The delivery key of a failed intent.
    pub key: String,
    /// Who is retrying (recorded in history) [default: $USER].
    #[arg(long)]
    pub by: Option<String>,
    /// Print the intent as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oncepost park KEY --reason R`.
#[derive(Debug, Args)]
pub struct ParkArgs {
    /// The delivery key.
    pub key: String,
    /// Why (recorded in history).
    #[arg(long)]
    pub reason: String,
    /// Who is parking it [default: $USER].
    #[arg(long)]
    pub by: Option<String>,
    /// Print the intent as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oncepost redeliver KEY --by NAME --reason R`.
#[derive(Debug, Args)]
pub struct RedeliverArgs {
    /// The delivery key of a consumed intent (published, indeterminate or parked).
    pub key: String,
    /// The person authorizing one more copy.
    #[arg(long)]
    pub by: String,
    /// Why another copy is wanted.
    #[arg(long)]
    pub reason: String,
    /// Print the new intent as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `oncepost sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn parse_key(s: &str) -> Result<DeliveryKey, CliError> {
    DeliveryKey::parse(s).ok_or_else(|| {
        CliError::bad_input(format!(
            "{s:?} is not a delivery key (64 lowercase hex digits; see `oncepost intents list`)"
        ))
    })
}

fn print_json(v: &impl serde::Serialize) -> Result<(), CliError> {
    let s = serde_json::to_string_pretty(v).map_err(|e| CliError::internal(e.to_string()))?;
    outln!("{s}");
    Ok(())
}

fn fmt_time(ms: i64) -> String {
    crate::utc::display(ms)
}

fn intent_line(i: &Intent) -> String {
    let text = clean(i.request.text.as_deref().unwrap_or_default()).into_owned();
    let text: String = if text.chars().count() > 40 {
        text.chars().take(39).chain(['…']).collect()
    } else {
        text
    };
    format!(
        "{}  {:<13} {:<12} {:<7} {}  {}",
        i.key,
        i.state.label(),
        clean(&i.account),
        i.action.label(),
        fmt_time(i.updated_at),
        text
    )
}

pub(crate) fn print_timeline(t: &Timeline) {
    let i = &t.intent;
    outln!("key        {}", i.key);
    outln!("state      {}", i.state);
    outln!("account    {} on {}", clean(&i.account), clean(&i.platform));
    outln!("action     {} target={:?}", i.action, i.target);
    if let Some(text) = &i.request.text {
        outln!("text       {text:?}");
    }
    for (k, v) in &i.request.fields {
        outln!("field      {}={v:?}", clean(k));
    }
    if let Some(p) = &i.permalink {
        outln!("permalink  {}", clean(p));
    }
    if let Some(p) = &i.platform_id {
        outln!("platform id {}", clean(p));
    }
    if let Some(r) = &i.redelivery_of {
        outln!("redelivers {r}");
    }
    outln!("attempts   {}/{}", i.attempt_count, i.max_attempts);
    for a in &t.attempts {
        outln!(
            "  #{} {} by {} gen {} epoch {} at {}",
            a.ordinal,
            clean(&a.token),
            clean(&a.owner),
            a.generation,
            a.epoch,
            fmt_time(a.created_at)
        );
    }
    outln!("timeline");
    for e in &t.events {
        let from = e.from.map(|s| s.label()).unwrap_or("-");
        let reason = e
            .reason
            .as_deref()
            .map(|r| format!(" ({})", clean(r)))
            .unwrap_or_default();
        outln!(
            "  {}  {:<21} {:>13} -> {:<13} by {}{}",
            fmt_time(e.at),
            e.kind.label(),
            from,
            e.to.label(),
            clean(&e.actor),
            reason
        );
    }
}

pub(crate) async fn run_intents(ctx: &Context, cmd: IntentsCmd) -> Result<Exit, CliError> {
    let store = ctx.open_store().await?;
    match cmd {
        IntentsCmd::List { state, limit, json } => {
            if limit < 1 {
                return Err(CliError::bad_input("--limit must be at least 1"));
            }
            let list = store.intents(state, limit).await?;
            if json {
                print_json(&list)?;
            } else if list.is_empty() {
                outln!(
                    "no intents{}",
                    state.map(|s| format!(" in state {s}")).unwrap_or_default()
                );
            } else {
                for i in &list {
                    outln!("{}", intent_line(i));
                }
            }
        }
        IntentsCmd::Show { key, json } => {
            let key = parse_key(&key)?;
            let t = store.timeline(&key).await?;
            let source = store.intent_source(&key).await?;
            if json {
                let mut v =
                    serde_json::to_value(&t).map_err(|e| CliError::internal(e.to_string()))?;
                if let Some(o) = v.as_object_mut() {
                    o.insert("source".into(), json!(source));
                }
                print_json(&v)?;
            } else {
                print_timeline(&t);
                if let Some(s) = source {
                    outln!(
                        "source {}: claim {} on version {}{}",
                        clean(&s.stable_id),
                        &s.claim.as_str()[..12],
                        &s.version.as_str()[..12],
                        match &s.head {
                            Some(h) if h == &s.version => " (the head)".to_string(),
                            Some(h) => format!(", superseded: the head is {}", &h.as_str()[..12]),
                            None => String::new(),
                        }
                    );
                }
            }
        }
    }
    Ok(Exit::Ok)
}

pub(crate) async fn run_retry(ctx: &Context, args: RetryArgs) -> Result<Exit, CliError> {
    let key = parse_key(&args.key)?;
    let store = ctx.open_store().await?;
    let it = store
        .retry(&key, &actor(&args.by), Timestamp::now())
        .await?;
    report(
        &it,
        args.json,
        "re-opened: pending (the next publish begins a new attempt)",
    )
}

pub(crate) async fn run_park(ctx: &Context, args: ParkArgs) -> Result<Exit, CliError> {
    let key = parse_key(&args.key)?;
    if args.reason.trim().is_empty() {
        return Err(CliError::bad_input("--reason must say why"));
    }
    let store = ctx.open_store().await?;
    let it = store
        .park(&key, &actor(&args.by), &args.reason, Timestamp::now())
        .await?;
    report(&it, args.json, "parked")
}

pub(crate) async fn run_redeliver(ctx: &Context, args: RedeliverArgs) -> Result<Exit, CliError> {
    let key = parse_key(&args.key)?;
    let store = ctx.open_store().await?;
    let created = store
        .redeliver(&key, &args.by, &args.reason, Timestamp::now())
        .await?;
    let it = &created.intent;
    let next = it.next_step();
    if args.json {
        print_json(&json!({ "created": created.created, "intent": it, "next": next }))?;
        return Ok(Exit::Ok);
    }
    let by = it
        .redelivery
        .as_ref()
        .and_then(|r| r["by"].as_str())
        .unwrap_or("?")
        .to_string();
    if created.created {
        outln!(
            "new intent {} (pending) redelivers {key}, authorized by {}",
            it.key,
            clean(&by)
        );
    } else if by == args.by.trim() {
        outln!(
            "{key} already has its redelivery {} ({}), authorized by you; nothing new was created",
            it.key,
            it.state
        );
    } else {
        outln!(
            "{key} already has its redelivery {} ({}), authorized by {}; nothing new was created \
             (one redelivery per consumed intent)",
            it.key,
            it.state,
            clean(&by)
        );
    }
    outln!("next: {}", clean(&next.says));
    if let Some(c) = &next.command {
        outln!("  {}", clean(c));
    }
    Ok(Exit::Ok)
}

pub(crate) async fn run_sweep(ctx: &Context, args: SweepArgs) -> Result<Exit, CliError> {
    let store = ctx.open_store().await?;
    let who = format!("sweeper:{}", std::process::id());
    let r = store.sweep(&who, Timestamp::now()).await?;
    if args.json {
        print_json(&r)?;
    } else {
        outln!(
            "{} made indeterminate, {} claims released, {} interrupted lookups parked",
            r.made_indeterminate.len(),
            r.claims_released.len(),
            r.lookups_interrupted.len()
        );
        for k in &r.made_indeterminate {
            outln!("  indeterminate  {k}");
        }
        for k in &r.claims_released {
            outln!("  released       {k}");
        }
        for k in &r.lookups_interrupted {
            outln!("  parked         {k}  (lookup interrupted)");
        }
    }
    Ok(Exit::Ok)
}

fn report(it: &Intent, json: bool, words: &str) -> Result<Exit, CliError> {
    if json {
        print_json(it)?;
    } else {
        outln!("{}: {words}", it.key);
    }
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    #[test]
    fn time_format() {
        assert_eq!(super::fmt_time(0), "1970-01-01 00:00:00.000Z");
        assert_eq!(
            super::fmt_time(1_800_000_000_123),
            "2027-01-15 08:00:00.123Z"
        );
    }
}
