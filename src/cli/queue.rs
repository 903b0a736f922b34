//! `oncepost submit` and `oncepost wait`: the queue's front end. `submit` creates (or finds) the intent exactly
//! as `publish` would and queues it for a worker, returning its key at once; `wait` waits for it to rest. The
//! worker's side (taking due intents and publishing them) is [`run_queue`], run by `oncepost worker`.
//!
//! Exit codes: submit 0 (queued, or already resting: the JSON says which), 2 bad input; wait: the intent's
//! state as for `publish` (0 published, 10 indeterminate, 11 failed, 12 parked), 13 when it still has not
//! rested at the timeout.
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};

use super::context::parse_duration_ms;
use super::intents::parse_key;
use super::output::{clean, errln, outln};
use super::publish::{Asked, PublishArgs, asked_by_flags, asked_by_key, exit_of, map_err};
use super::{CliError, Context, Exit};
use crate::identity::DeliveryKey;
use crate::publish::{self, PublishOptions};
use crate::store::{Status, Store, StoreError, Timestamp};

/// `oncepost submit`: the arguments of `publish`, plus when a worker may run it.
#[derive(Debug, clap::Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub publish: PublishArgs,
    /// The earliest time a worker may run it: a UTC time (`2026-12-03T14:00:00Z`) or a delay from now (`90s`,
    /// `10m`, `2h`) [default: now].
    #[arg(long, value_name = "TIME")]
    pub not_before: Option<String>,
}

/// `oncepost wait`.
#[derive(Debug, clap::Args)]
pub struct WaitArgs {
    /// The intent's delivery key (as `submit` printed it).
    pub key: String,
    /// Give up after this long (exit 13; the intent is not touched).
    #[arg(long, default_value = "5m", value_parser = parse_duration_ms)]
    pub timeout: i64,
    /// Print the intent as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `--not-before`: a UTC time or a delay from `now`.
fn parse_not_before(s: &str, now: Timestamp) -> Result<Timestamp, CliError> {
    if let Some(ms) = crate::utc::parse_rfc3339(s) {
        return Ok(Timestamp(ms));
    }
    parse_duration_ms(s).map(|d| now.plus_ms(d)).map_err(|_| {
        CliError::bad_input(format!(
            "--not-before {:?}: give a UTC time like 2026-12-03T14:00:00Z or a delay like 90s, 10m, 2h",
            clean(s)
        ))
    })
}

/// Run `oncepost submit`.
pub async fn run_submit(ctx: &Context, args: SubmitArgs) -> Result<Exit, CliError> {
    let p = &args.publish;
    if p.login_url.is_some() {
        return Err(CliError::bad_input(
            "submit records no login link (it is a credential, and the store keeps no credential): log the \
             account's browser profile in once with `publish --login-url`, then submit",
        ));
    }
    if p.wait {
        return Err(CliError::bad_input(
            "submit returns at once: wait for the outcome with `oncepost wait KEY`",
        ));
    }
    let now = Timestamp::now();
    let run_after = match &args.not_before {
        Some(s) => parse_not_before(s, now)?,
        None => now,
    };
    let asked: Asked = match &p.key {
        Some(k) => asked_by_key(ctx, k).await?,
        None => asked_by_flags(p).await?,
    };
    let store = ctx.open_store().await?;
    let (contract_path, base_url) = match (&p.contract, &p.base_url, &asked.existing) {
        (Some(c), Some(b), _) => (c.clone(), b.clone()),
        (c, b, Some(key)) => {
            let (kept, base) = super::recorded::recorded_contract(ctx, &store, key).await?;
            (c.clone().unwrap_or(kept), b.clone().unwrap_or(base))
        }
        _ => return Err(CliError::bad_input("give --contract and --base-url")),
    };
    ctx.ensure_data_dir()?;
    let req = asked.request(
        ctx,
        contract_path,
        base_url,
        None,
        PublishOptions::default(),
    );
    let s = publish::submit(&req, asked.existing.as_ref(), run_after, &store)
        .await
        .map_err(map_err)?;
    if p.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&s).map_err(|e| CliError::internal(e.to_string()))?
        );
    } else if s.queued {
        outln!(
            "{}: queued ({}, a worker may run it from {})",
            s.key,
            s.state,
            crate::utc::display(s.run_after.unwrap_or(run_after.0))
        );
    } else {
        outln!("{}: {} (not queued: it is not pending)", s.key, s.state);
    }
    Ok(Exit::Ok)
}

/// Whether a waiter may stop: the intent rests (published, failed, parked) or waits for a lookup
/// (indeterminate). Pending and authorized are still in a worker's hands.
fn rests(state: Status) -> bool {
    !matches!(state, Status::Pending | Status::Authorized)
}

/// Run `oncepost wait`.
pub async fn run_wait(ctx: &Context, args: WaitArgs) -> Result<Exit, CliError> {
    let key = parse_key(&args.key)?;
    let store = ctx.open_store().await?;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(args.timeout.max(0) as u64);
    loop {
        let intent = store.intent(&key).await?;
        if rests(intent.state) || tokio::time::Instant::now() >= deadline {
            if args.json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&intent)
                        .map_err(|e| CliError::internal(e.to_string()))?
                );
            } else {
                outln!("{}: {}", key, intent.state);
                if let Some(p) = &intent.permalink {
                    outln!("  permalink {}", clean(p));
                }
            }
            if !rests(intent.state) {
                return Err(CliError {
                    exit: Exit::InProgressElsewhere,
                    message: format!(
                        "intent {key} is still {} after {} ms; nothing was touched (wait again)",
                        intent.state, args.timeout
                    ),
                });
            }
            return Ok(exit_of(intent.state));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The worker's queue: how many publishes at once, and how often to look for due intents.
#[derive(Debug, Clone, Copy)]
pub(super) struct QueueOptions {
    /// Publishes (browsers) at once on this host.
    pub concurrency: usize,
    /// Time between looks for due intents while a slot is free.
    pub poll: Duration,
    /// Browsers kept open between an account's sends.
    pub warm: publish::WarmLimits,
}

/// One queued publish as the worker reports it (one JSON line).
fn report(key: &DeliveryKey, r: &Result<publish::PublishOutcome, CliError>) -> serde_json::Value {
    match r {
        Ok(o) => serde_json::json!({
            "queue": "ran", "key": key.as_str(), "state": o.state, "pressed": o.pressed,
            "not_before": o.not_before, "summary": o.summary,
        }),
        Err(e) => serde_json::json!({
            "queue": "skipped", "key": key.as_str(), "exit": e.exit as u8, "error": e.message,
        }),
    }
}

/// Set `account` aside on this host after its send `key` showed that its login here ended (`why`): none of
/// its queued posts is taken here until a person resumes it, and its warm browser is closed (its account
/// lease given back, so another host may take the account). The JSON line saying so.
async fn set_aside(
    store: &Store,
    warm: &publish::WarmBrowsers,
    profiles: &std::path::Path,
    account: &str,
    key: &DeliveryKey,
    why: &str,
) -> serde_json::Value {
    let written = publish::set_aside::mark_now(profiles, account, key.as_str(), why);
    warm.close_account(store, account).await;
    let resume = format!(
        "log the account's browser profile in again on this host, then `oncepost accounts resume {account}`"
    );
    match written {
        Ok(()) => {
            errln!(
                "oncepost worker: account {} set aside on this host: {}; its queued posts wait: {}",
                clean(account),
                clean(why),
                clean(&resume)
            );
            serde_json::json!({
                "queue": "set_aside", "account": account, "key": key.as_str(), "why": why, "resume": resume,
            })
        }
        // Not kept: the next of its posts is taken as before and meets the same answer (each one settled
        // as its own answer says: nothing is sent twice).
        Err(e) => {
            errln!(
                "oncepost worker: account {} not set aside ({e}): its login here may have ended ({})",
                clean(account),
                clean(why)
            );
            serde_json::json!({
                "queue": "set_aside", "account": account, "key": key.as_str(), "why": why,
                "error": e.to_string(),
            })
        }
    }
}

/// Publish one queued intent with what it recorded (its kept contract version and whole base URL), under the
/// per-intent lock like `publish --key`, on the account's warm browser when the worker keeps one.
async fn run_one(
    ctx: &Context,
    store: &Store,
    warm: &publish::WarmBrowsers,
    key: &DeliveryKey,
) -> Result<publish::PublishOutcome, CliError> {
    let asked = Asked::from_intent(store.intent(key).await?, store.intent_source(key).await?)?;
    let (contract_path, base_url) = super::recorded::recorded_contract(ctx, store, key).await?;
    // Waiting for the profile or the account lease is the queue's job: take another intent instead.
    let options = PublishOptions {
        profile_wait: Duration::from_millis(0),
        ..PublishOptions::default()
    };
    let req = asked.request(ctx, contract_path, base_url, None, options);
    super::publish::publish_queued(ctx, store, warm, &req, key).await
}

/// Run due queued intents until `stopped` resolves, at most `opts.concurrency` at once; each outcome is one
/// JSON line on stdout (through `emit`). Once stopped, no new intent is taken and the running ones finish
/// (each publish is bounded by its own timeouts).
pub(super) async fn run_queue(
    ctx: &Context,
    store: &Store,
    opts: QueueOptions,
    stopped: impl std::future::Future<Output = ()>,
    mut emit: impl FnMut(serde_json::Value),
) -> Result<(), CliError> {
    let claim_lease = store.policy().claim_lease_ms;
    let warm = publish::WarmBrowsers::new(opts.warm);
    let warm = &warm;
    let mut running = FuturesUnordered::new();
    // The accounts of the publishes running here: one browser per account profile at a time.
    let mut busy: Vec<String> = Vec::new();
    let profiles = ctx.data_dir.join("profiles");
    let mut stopped = std::pin::pin!(stopped);
    let mut stopping = false;
    loop {
        // One intent per take, so that each take excludes the accounts already running here, and those set
        // aside on this host (read again each turn: `accounts resume` in another process takes one back).
        while !stopping && running.len() < opts.concurrency {
            let mut excluded = busy.clone();
            excluded.extend(
                publish::set_aside::list(&profiles)
                    .into_iter()
                    .map(|s| s.account),
            );
            let key = match store
                .take_due(1, claim_lease, &excluded, warm.holder(), Timestamp::now())
                .await
            {
                Ok(keys) => match keys.into_iter().next() {
                    Some(k) => k,
                    None => break,
                },
                Err(e) if e.is_contended() => break,
                Err(e @ StoreError::Db(_)) => {
                    // The database may be restarting or cut off: keep the worker, try again next poll.
                    errln!("oncepost worker: queue: {e}");
                    break;
                }
                Err(e) => return Err(e.into()),
            };
            let account = store
                .intent(&key)
                .await
                .map(|i| i.account)
                .unwrap_or_default();
            busy.push(account.clone());
            running.push(async move {
                let r = run_one(ctx, store, warm, &key).await;
                (key, account, r)
            });
        }
        if stopping && running.is_empty() {
            warm.close_all(store).await;
            return Ok(());
        }
        warm.maintain(store).await;
        tokio::select! {
            _ = &mut stopped, if !stopping => stopping = true,
            Some((key, account, r)) = running.next(), if !running.is_empty() => {
                if let Some(i) = busy.iter().position(|a| *a == account) {
                    busy.remove(i);
                }
                if matches!(&r, Err(e) if e.exit == Exit::InProgressElsewhere) {
                    // Not run (another process had the intent, its profile or its account): try again soon
                    // rather than after the whole hold.
                    let _ = store.defer(&key, Timestamp::now().plus_ms(opts.poll.as_millis() as i64)).await;
                }
                emit(report(&key, &r));
                if let Ok(o) = &r
                    && let Some(why) = &o.signed_out
                {
                    emit(set_aside(store, warm, &profiles, &account, &key, why).await);
                }
            }
            _ = tokio::time::sleep(opts.poll) => {}
        }
    }
}
