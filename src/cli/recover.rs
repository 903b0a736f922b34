//! `oncepost reconcile` and `oncepost worker`: unknown outcomes are settled by LOOKING at the platform, once,
//! never by sending again.
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::context::{actor, parse_duration_ms};
use super::intents::parse_key;
use super::metrics::WorkerMetrics;
use super::output::{clean, clean_or_dash, errln, errpart, outln};
use super::{CliError, Context, Exit};
use crate::contract::Contract;
use crate::recover::{
    self, BrowserLookup, LookupResult, PassReport, PlatformLookup, ReconcilePolicy, Reconciled,
    RecoverError,
};
use crate::store::{Intent, NotFoundPolicy, Status, Store, Timestamp};

/// `oncepost reconcile`.
#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// The platform contract (its read-back section says how to search for a post). Left out (with
    /// --base-url): each intent is looked up through the contract version its last attempt ran with (kept in
    /// the store) at the origin it is bound to, so `--due` covers every platform.
    #[arg(long, requires = "base_url")]
    pub contract: Option<PathBuf>,
    /// The platform's base URL (fills {base_url} in the contract); left out with --contract.
    #[arg(long, requires = "contract")]
    pub base_url: Option<String>,
    /// Reconcile this intent.
    #[arg(long, conflicts_with = "due", required_unless_present = "due")]
    pub key: Option<String>,
    /// Reconcile every indeterminate intent whose propagation window has passed and that had no lookup yet.
    #[arg(long)]
    pub due: bool,
    /// A person asks for one more lookup (recorded as their action; also on parked intents).
    #[arg(long, requires = "key")]
    pub again: bool,
    /// A person who has checked the contract accepts that it is another version (or the base URL another
    /// origin) than the one the intent's last attempt ran with; recorded in the intent's history with --by.
    /// Never accepts another platform.
    #[arg(long, requires = "key")]
    pub accept_contract_change: bool,
    /// Leave a not-found intent indeterminate instead of parking it (a lead is always parked).
    #[arg(long)]
    pub stay: bool,
    /// Who (recorded in history) [default: $USER, or "reconciler" for --due].
    #[arg(long)]
    pub by: Option<String>,
    /// Bound on one lookup.
    #[arg(long, default_value = "60s", value_parser = parse_duration_ms)]
    pub lookup_timeout: i64,
    /// JSON output (one object; with --due, one JSON line per intent).
    #[arg(long)]
    pub json: bool,
}

/// `oncepost worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The platform contract; left out (with --base-url), every platform's intents are reconciled, each
    /// through the contract version its last attempt ran with (kept in the store).
    #[arg(long, requires = "base_url")]
    pub contract: Option<PathBuf>,
    /// The platform's base URL; left out with --contract.
    #[arg(long, requires = "contract")]
    pub base_url: Option<String>,
    /// Time between passes.
    #[arg(long, default_value = "30s", value_parser = parse_duration_ms)]
    pub interval: i64,
    /// Stop after this many passes (default: until SIGINT/SIGTERM).
    #[arg(long)]
    pub passes: Option<u64>,
    /// Bound on one lookup.
    #[arg(long, default_value = "60s", value_parser = parse_duration_ms)]
    pub lookup_timeout: i64,
    /// Queued publishes (browsers) at once on this host; 0 runs no queued intent (sweep and reconcile only).
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Time between looks for due queued intents.
    #[arg(long, default_value = "1s", value_parser = parse_duration_ms)]
    pub poll: i64,
    /// Accounts whose browser this host keeps open between sends (each holds the account's lease while idle;
    /// 0: a fresh Chromium for every send). Least recently used closed first.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub warm_browsers: usize,
    /// How long a warm browser waits for its account's next send before it is closed (shorter than a
    /// synchronous publish's wait for the account's profile, 60 s, so such a publish on this host gets it).
    #[arg(long, default_value = "30s", value_parser = parse_duration_ms)]
    pub warm_idle: i64,
    /// Serve `GET /metrics` (Prometheus text) and `GET /healthz` on 127.0.0.1:PORT (0: any free port; the
    /// address is printed on stderr).
    #[arg(long, value_name = "PORT")]
    pub metrics: Option<u16>,
}

pub(super) fn lookup_for(
    ctx: &Context,
    store: &Store,
    contract: &std::path::Path,
    base_url: &str,
    timeout_ms: i64,
) -> Result<(BrowserLookup, ReconcilePolicy), CliError> {
    let c = Contract::load(contract).map_err(|e| CliError::bad_input(e.to_string()))?;
    let plan = c
        .publish_plan(base_url)
        .map_err(|e| CliError::bad_input(e.to_string()))?;
    let binding = c
        .binding(base_url)
        .map_err(|e| CliError::bad_input(e.to_string()))?;
    ctx.ensure_data_dir()?;
    let lookup = BrowserLookup::new(
        plan.readback,
        plan.create,
        plan.probe.read_requests,
        binding,
        store.clone(),
        &ctx.data_dir,
        Duration::from_millis(timeout_ms.max(1) as u64),
    )
    .with_live_sockets(plan.probe.live_sockets);
    let policy = ReconcilePolicy {
        propagation_ms: lookup.propagation_ms(),
        not_found: NotFoundPolicy::Park,
        lookup_timeout: Duration::from_millis(timeout_ms.max(1) as u64),
    };
    Ok((lookup, policy))
}

/// One progress line on a terminal (rewritten in place), nothing otherwise.
fn progress(done: usize, total: usize, what: &str) {
    if std::io::stderr().is_terminal() {
        let width = 30;
        let filled = (done * width).checked_div(total).unwrap_or(width);
        errpart!(
            "\r[{}{}] {done}/{total} {what:<40.40}",
            "#".repeat(filled),
            " ".repeat(width - filled)
        );
        if done == total {
            errln!();
        }
    }
}

fn line(r: &Reconciled) -> String {
    let what = match &r.outcome {
        crate::store::ReconcileOutcome::Found { permalink, .. } => {
            format!("found {}", clean_or_dash(permalink.as_deref()))
        }
        crate::store::ReconcileOutcome::NotFound { evidence } if evidence.get("lead").is_some() => {
            "not found; a post with this text is there but not shown to be this account's (a lead, parked)"
                .to_string()
        }
        crate::store::ReconcileOutcome::NotFound { .. } => "not found".to_string(),
        crate::store::ReconcileOutcome::Unavailable { error } => {
            format!("lookup unavailable: {}", clean(error))
        }
    };
    format!("{}  lookup #{}  {}  -> {}", r.key, r.lookup, what, r.state)
}

/// What a lookup's lease covers beyond its own bound: recording what it saw (one transaction).
const LOOKUP_RECORD_GRACE_MS: i64 = 2_000;

/// SIGINT and SIGTERM for `reconcile` and `worker`, handled from the first line of the command: a handler
/// installed later leaves the default action in place, which killed a worker mid-lookup (its ticket
/// recorded, its result not, the intent's one automatic lookup spent on nothing). The first signal asks to
/// stop: no new lookup starts (nothing recorded or spent), a lookup already recorded runs to its bound and
/// its result is recorded. A second signal exits at once (130); a lookup cut that way is parked by the next
/// sweep once its lookup lease runs out (docs/cli.md).
struct StopOnSignal {
    rx: tokio::sync::watch::Receiver<bool>,
    tx: std::sync::Arc<tokio::sync::watch::Sender<bool>>,
}

/// Why a lookup did not start after a stop signal.
const STOPPING: &str = "stopping on a signal: the lookup was not started";

impl StopOnSignal {
    fn install() -> Result<Self, CliError> {
        use tokio::signal::unix::{SignalKind, signal};
        let handler = |k| {
            signal(k).map_err(|e| CliError::internal(format!("cannot handle SIGINT/SIGTERM: {e}")))
        };
        let mut int = handler(SignalKind::interrupt())?;
        let mut term = handler(SignalKind::terminate())?;
        let (tx, rx) = tokio::sync::watch::channel(false);
        let tx = std::sync::Arc::new(tx);
        let first = tx.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            let _ = first.send(true);
            errln!(
                "oncepost: stopping: no new lookup starts; one in progress is finished and recorded (signal again to exit now)"
            );
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            errln!(
                "oncepost: exiting now; a lookup cut short is parked by the next sweep once its lookup lease runs out"
            );
            std::process::exit(130);
        });
        Ok(StopOnSignal { rx, tx })
    }

    fn stopped(&self) -> bool {
        *self.rx.borrow()
    }

    /// Resolves once a stop was asked for (by a signal, or by [`StopOnSignal::ask`]).
    fn wait(&self) -> impl std::future::Future<Output = ()> + 'static {
        let mut rx = self.rx.clone();
        async move {
            let _ = rx.wait_for(|v| *v).await;
        }
    }

    /// Ask to stop (the worker's --passes count ran out).
    fn ask(&self) {
        let _ = self.tx.send(true);
    }
}

/// A lookup that does not start once a stop was asked for. `hold` runs before the lookup is recorded, so
/// refusing there spends nothing; a stop while the hold is being taken (the profile may be busy) wins too.
struct Stoppable<'a, L> {
    inner: &'a L,
    stop: &'a StopOnSignal,
}

impl<L: PlatformLookup> PlatformLookup for Stoppable<'_, L> {
    type Hold = L::Hold;

    fn binding(&self) -> &crate::contract::Binding {
        self.inner.binding()
    }

    async fn hold(&self, intent: &Intent) -> Result<Option<Self::Hold>, String> {
        if self.stop.stopped() {
            return Err(STOPPING.into());
        }
        let held = tokio::select! {
            h = self.inner.hold(intent) => h?,
            _ = self.stop.wait() => return Err(STOPPING.into()),
        };
        if self.stop.stopped() {
            return Err(STOPPING.into());
        }
        Ok(held)
    }

    async fn find(&self, intent: &Intent, hold: &Self::Hold) -> Result<LookupResult, String> {
        self.inner.find(intent, hold).await
    }
}

/// Open the store with a lookup lease that covers one bounded lookup and its recording: a reconcile whose
/// process dies mid-lookup is parked by the next sweep once this runs out.
async fn open_for_lookups(ctx: &Context, lookup_timeout_ms: i64) -> Result<Store, CliError> {
    let mut ctx = ctx.clone();
    ctx.policy.lookup_lease_ms = lookup_timeout_ms.saturating_add(LOOKUP_RECORD_GRACE_MS);
    ctx.open_store().await
}

/// Every due intent of every platform, each looked up through the contract version its last attempt ran
/// with (kept in the store) at the origin it is bound to, one lookup per intent as `--due` does for one
/// platform. `each` gets what happened to every intent looked at (an intent without a kept contract, or not
/// due yet under its own contract's propagation window, is reported skipped or left alone).
async fn reconcile_due_everywhere(
    ctx: &Context,
    store: &Store,
    stop: &StopOnSignal,
    who: &str,
    lookup_timeout: i64,
    stay: bool,
    mut each: impl FnMut(&Intent, Result<Reconciled, String>),
) -> Result<usize, CliError> {
    let now = Timestamp::now();
    let mut lookups: std::collections::HashMap<
        (PathBuf, String),
        (BrowserLookup, ReconcilePolicy),
    > = std::collections::HashMap::new();
    let mut looked = 0;
    for intent in recover::due_for_reconcile(store, 0, now).await? {
        if stop.stopped() {
            break;
        }
        let (path, base) = match super::recorded::recorded_contract(ctx, store, &intent.key).await {
            Ok(found) => found,
            Err(e) => {
                each(&intent, Err(e.message));
                continue;
            }
        };
        let (lookup, policy) = match lookups.entry((path, base)) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let (path, base) = e.key();
                let made = lookup_for(ctx, store, path, base, lookup_timeout)?;
                e.insert(made)
            }
        };
        let mut policy = *policy;
        if stay {
            policy.not_found = NotFoundPolicy::Stay;
        }
        // Its own contract's window: not due yet is not looked at.
        if intent.updated_at + policy.propagation_ms > now.0 {
            continue;
        }
        let lookup = Stoppable {
            inner: lookup,
            stop,
        };
        let r = recover::reconcile_one(
            store,
            &lookup,
            &intent.key,
            who,
            false,
            policy,
            Timestamp::now(),
        )
        .await
        .map_err(|e| e.to_string());
        looked += 1;
        each(&intent, r);
    }
    Ok(looked)
}

pub(crate) async fn run_reconcile(ctx: &Context, args: ReconcileArgs) -> Result<Exit, CliError> {
    let stop = StopOnSignal::install()?;
    let key = args.key.as_deref().map(parse_key).transpose()?;
    let store = open_for_lookups(ctx, args.lookup_timeout).await?;
    let (contract, base_url) = match (&args.contract, &args.base_url, &key) {
        (Some(c), Some(b), _) => (c.clone(), b.clone()),
        (_, _, Some(k)) => super::recorded::recorded_contract(ctx, &store, k).await?,
        (_, _, None) => {
            // --due over every platform.
            let who = args.by.clone().unwrap_or_else(|| "reconciler".into());
            let json_lines = args.json || !std::io::stdout().is_terminal();
            let looked = reconcile_due_everywhere(
                ctx,
                &store,
                &stop,
                &who,
                args.lookup_timeout,
                args.stay,
                |intent, r| {
                    let out = match &r {
                        Ok(r) if json_lines => serde_json::to_string(r).unwrap_or_default(),
                        Ok(r) => line(r),
                        Err(e) if json_lines => {
                            serde_json::json!({ "key": intent.key, "skipped": e }).to_string()
                        }
                        Err(e) => format!("{}  skipped: {}", intent.key, clean(e)),
                    };
                    outln!("{out}");
                },
            )
            .await?;
            if stop.stopped() {
                return Err(CliError {
                    exit: Exit::Interrupted,
                    message: "stopped by a signal: the due intents not yet looked up were left as they were (nothing recorded for them)".into(),
                });
            }
            if looked == 0 && !json_lines {
                outln!("nothing due");
            }
            return Ok(Exit::Ok);
        }
    };
    let (lookup, mut policy) = lookup_for(ctx, &store, &contract, &base_url, args.lookup_timeout)?;
    let lookup = Stoppable {
        inner: &lookup,
        stop: &stop,
    };
    if args.stay {
        policy.not_found = NotFoundPolicy::Stay;
    }
    async {
        if let Some(key) = key {
            let who = actor(&args.by);
            let asked = recover::Asked { again: args.again, accept_contract_change: args.accept_contract_change };
            let r = recover::reconcile_asked(&store, &lookup, &key, &who, asked, policy, Timestamp::now()).await;
            let r = match r {
                Ok(r) => r,
                Err(RecoverError::TooEarly(ms)) => {
                    return Err(CliError {
                        exit: Exit::Refused,
                        message: format!("too early: a lookup means something in {ms} ms (the contract's propagation window)"),
                    });
                }
                Err(RecoverError::Busy(_)) if stop.stopped() => {
                    return Err(CliError {
                        exit: Exit::Interrupted,
                        message: "stopped by a signal before the lookup started: nothing recorded or spent".into(),
                    });
                }
                Err(RecoverError::Busy(why)) => {
                    return Err(CliError {
                        exit: Exit::InProgressElsewhere,
                        message: format!("lookup not started, nothing recorded: {why}"),
                    });
                }
                Err(e @ RecoverError::OtherPlatform(_)) => return Err(CliError::bad_input(e.to_string())),
                Err(e @ RecoverError::ContractChanged(_)) => {
                    return Err(CliError { exit: Exit::Refused, message: e.to_string() });
                }
                Err(RecoverError::Store(e)) => return Err(e.into()),
            };
            if args.json {
                outln!("{}", serde_json::to_string_pretty(&r).map_err(|e| CliError::internal(e.to_string()))?);
            } else {
                outln!("{}", line(&r));
            }
            return Ok(match r.state {
                Status::Published => Exit::Ok,
                Status::Parked => Exit::Parked,
                _ => Exit::Indeterminate,
            });
        }
        let who = args.by.clone().unwrap_or_else(|| "reconciler".into());
        // Only this contract's platform: another platform's intents are neither looked up nor listed.
        let due = recover::due_through(&store, lookup.binding(), policy.propagation_ms, Timestamp::now()).await?;
        let json_lines = args.json || !std::io::stdout().is_terminal();
        let total = due.len();
        progress(0, total, "");
        for (i, intent) in due.iter().enumerate() {
            if stop.stopped() {
                return Err(CliError {
                    exit: Exit::Interrupted,
                    message: format!("stopped by a signal: {} of {total} due intents were not looked up (nothing recorded for them)", total - i),
                });
            }
            let r = recover::reconcile_one(&store, &lookup, &intent.key, &who, false, policy, Timestamp::now()).await;
            let out = match &r {
                Ok(r) if json_lines => serde_json::to_string(r).unwrap_or_default(),
                Ok(r) => line(r),
                Err(e) if json_lines => serde_json::json!({ "key": intent.key, "skipped": e.to_string() }).to_string(),
                Err(e) => format!("{}  skipped: {}", intent.key, clean(&e.to_string())),
            };
            outln!("{out}");
            progress(i + 1, total, intent.key.as_str());
        }
        if total == 0 && !json_lines {
            outln!("nothing due");
        }
        Ok(Exit::Ok)
    }
    .await
}

pub(crate) async fn run_worker(ctx: &Context, args: WorkerArgs) -> Result<Exit, CliError> {
    let stop = StopOnSignal::install()?;
    let store = open_for_lookups(ctx, args.lookup_timeout).await?;
    let who = format!("worker:{}", std::process::id());
    let metrics = WorkerMetrics::new(Duration::from_millis(args.interval.max(1) as u64));
    if let Some(port) = args.metrics {
        let addr = super::metrics::serve(
            port,
            store.clone(),
            metrics.clone(),
            ctx.data_dir.join("profiles"),
        )
        .await
        .map_err(|e| CliError::bad_input(format!("--metrics {port}: cannot listen: {e}")))?;
        errln!("metrics: http://{addr}/metrics  health: http://{addr}/healthz");
    }
    // Queued publishes run beside the passes (sweep, reconcile), until the same signal or pass count.
    let queue = async {
        if args.concurrency == 0 {
            return Ok(());
        }
        let opts = super::queue::QueueOptions {
            concurrency: args.concurrency,
            poll: Duration::from_millis(args.poll.max(10) as u64),
            warm: crate::publish::WarmLimits {
                max_idle: args.warm_browsers,
                idle_for: Duration::from_millis(args.warm_idle.max(0) as u64),
            },
        };
        super::queue::run_queue(ctx, &store, opts, stop.wait(), |line| {
            // An account set aside on this host follows its run's own line: not a run of its own.
            if line["queue"] == "set_aside" {
                outln!("{line}");
                return;
            }
            let how = match (line["queue"].as_str(), line["state"].as_str()) {
                (Some("skipped"), _) => "skipped",
                (_, Some("pending")) if !line["not_before"].is_null() => "not_yet",
                (_, Some(state)) => state,
                _ => "skipped",
            };
            metrics.record_queue_run(how);
            outln!("{line}");
        })
        .await
    };
    let passes = async {
        let r = run_passes(ctx, &store, &stop, &who, &args, &metrics).await;
        // Passes over (their count, a signal, or an error): the queue takes nothing new either.
        stop.ask();
        r
    };
    let (passes, queued) = tokio::join!(passes, queue);
    queued?;
    passes
}

async fn run_passes(
    ctx: &Context,
    store: &Store,
    stop: &StopOnSignal,
    who: &str,
    args: &WorkerArgs,
    metrics: &WorkerMetrics,
) -> Result<Exit, CliError> {
    let (Some(contract), Some(base_url)) = (&args.contract, &args.base_url) else {
        return run_worker_everywhere(ctx, store, stop, who, args, metrics).await;
    };
    let (lookup, policy) = lookup_for(ctx, store, contract, base_url, args.lookup_timeout)?;
    let lookup = Stoppable {
        inner: &lookup,
        stop,
    };
    let max = args.passes;
    let shutdown = stop.wait();
    let mut count = 0u64;
    let r = recover::run_worker(
        store,
        &lookup,
        who,
        policy,
        Duration::from_millis(args.interval.max(1) as u64),
        shutdown,
        |report: &PassReport| {
            metrics.record(report);
            count += 1;
            outln!("{}", serde_json::to_string(report).unwrap_or_default());
            if max.is_some_and(|m| count >= m) {
                stop.ask();
            }
        },
    )
    .await;
    let passes = r?;
    errln!(
        "worker stopped after {passes} pass(es); every intent it touched is in a declared state"
    );
    Ok(Exit::Ok)
}

/// The worker over every platform: each pass sweeps the store, then reconciles every due intent through its
/// own kept contract version ([`reconcile_due_everywhere`]); one JSON line per pass.
async fn run_worker_everywhere(
    ctx: &Context,
    store: &Store,
    stop: &StopOnSignal,
    who: &str,
    args: &WorkerArgs,
    metrics: &WorkerMetrics,
) -> Result<Exit, CliError> {
    let mut passes = 0u64;
    loop {
        let pass = async {
            let sweep = store.sweep(who, Timestamp::now()).await?;
            let mut reconciled = Vec::new();
            let mut skipped = Vec::new();
            reconcile_due_everywhere(
                ctx,
                store,
                stop,
                who,
                args.lookup_timeout,
                false,
                |intent, r| match r {
                    Ok(r) => reconciled.push(r),
                    Err(e) => skipped.push((intent.key.clone(), e)),
                },
            )
            .await?;
            Ok::<_, CliError>(PassReport {
                sweep,
                reconciled,
                skipped,
            })
        }
        .await;
        passes += 1;
        match pass {
            Ok(report) => {
                metrics.record(&report);
                outln!("{}", serde_json::to_string(&report).unwrap_or_default());
            }
            // The database restarting or out of reach: the worker stays, the next pass tries again (what a
            // pass did not do is left as it was: every intent is in a declared state). /healthz shows it.
            Err(e) => errln!(
                "oncepost worker: pass {passes} not finished, the next pass tries again: {}",
                e.message
            ),
        }
        if args.passes.is_some_and(|m| passes >= m) {
            stop.ask();
        }
        tokio::select! {
            _ = stop.wait() => break,
            _ = tokio::time::sleep(Duration::from_millis(args.interval.max(1) as u64)) => {}
        }
    }
    errln!(
        "worker stopped after {passes} pass(es); every intent it touched is in a declared state"
    );
    Ok(Exit::Ok)
}
