//! `oncepost publish`: one post, at most once, verified by reading it back.
//!
//! Exit codes: 0 published, 10 indeterminate, 11 failed, 12 parked, 13 in progress elsewhere, 2 bad input,
//! 1 internal error. Running the same command again answers with the same intent's outcome and never
//! presses publish again. Concurrent identical commands on one host meet at a per-intent lock file
//! (`<data-dir>/locks/<key>.lock`, flock) before any browser starts: one proceeds, the others answer 13
//! (or wait with `--wait`). Across hosts the store's claim lease decides the same way.
//!
//! `--key K` publishes an intent that already exists (a redelivery, a retried failed one) with what it
//! recorded: its account, text and fields, and, once it was submitted or an attempt ran, the contract
//! version (kept in the store) and base URL; `--contract` and `--base-url` are needed only when it records
//! neither.
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::contract::Contract;
use crate::identity::{DeliveryKey, DeliverySpec, MAX_TEXT_BYTES, check_text_size};
use crate::lock::{FileLock, file_name_for};
use crate::publish::{
    self, PublishError, PublishOptions, PublishOutcome, PublishRequest, StepTime,
};
use crate::store::{Status, Store, StoreError};
use crate::wait::Wait;

use super::context::{account_arg, parse_duration_ms};
use super::output::{clean, errln, outln};
use super::{CliError, Context, Exit, LogFormat};

/// Arguments of `oncepost publish`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("body").required(true).args(["text", "text_file", "key"])))]
pub struct PublishArgs {
    /// The platform contract (selectors/NAME.toml). With --key it may be left out once the intent ran an
    /// attempt: the contract version that attempt ran with is kept in the store.
    #[arg(long, required_unless_present = "key")]
    pub contract: Option<PathBuf>,
    /// Publish this existing pending intent (a redelivery, or a failed one re-opened by `retry`) with the
    /// account, target, text and fields it recorded; the contract and base URL of its last attempt unless
    /// --contract and --base-url are given.
    #[arg(long, conflicts_with_all = ["account", "target", "text", "text_file", "fields"])]
    pub key: Option<String>,
    /// The publishing account (registered with `oncepost accounts add`).
    #[arg(long, required_unless_present = "key")]
    pub account: Option<String>,
    /// The target's identity (empty: a post on the account's own feed).
    #[arg(long, default_value = "")]
    pub target: String,
    /// The post text.
    #[arg(long)]
    pub text: Option<String>,
    /// Read the post text from this file (UTF-8).
    #[arg(long)]
    pub text_file: Option<PathBuf>,
    /// Another compose field, by the contract's field name (repeatable).
    #[arg(long = "field", value_name = "K=V")]
    pub fields: Vec<String>,
    /// Base URL of the platform (`{base_url}` in the contract); with --key, default: the one the intent is
    /// bound to.
    #[arg(long, env = "ONCEPOST_BASE_URL", required_unless_present = "key")]
    pub base_url: Option<String>,
    /// Open this URL (e.g. a login link) in the account's profile before the compose page.
    #[arg(long)]
    pub login_url: Option<String>,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// When another worker is on this intent, wait for its outcome instead of answering 13.
    #[arg(long)]
    pub wait: bool,
    /// Bound on --wait.
    #[arg(long, default_value = "120s", value_parser = parse_duration_ms)]
    pub wait_timeout: i64,
    /// Bound on waiting for the success signal after the create response.
    #[arg(long, default_value = "10s", value_parser = parse_duration_ms)]
    pub success_timeout: i64,
    /// Bound on the create request (whole exchange).
    #[arg(long, default_value = "20s", value_parser = parse_duration_ms)]
    pub request_timeout: i64,
    /// Skip looking for the exact text on the platform before writing.
    #[arg(long)]
    pub no_look_before_write: bool,
    /// The source the post rests on: its stable id (a canonical URL or an object id). With --source-file; or
    /// with --source-url to name the fetched source by another id.
    #[arg(long, value_name = "ID", conflicts_with = "key")]
    pub source_id: Option<String>,
    /// The source's body (HTML or text, UTF-8, at most 4 MiB), read now; needs --source-id.
    #[arg(long, value_name = "FILE", requires = "source_id", conflicts_with_all = ["key", "source_url"])]
    pub source_file: Option<PathBuf>,
    /// Fetch the source's body once from this URL with a plain GET (never through the publishing browser
    /// profile); its stable id is the URL unless --source-id names it.
    #[arg(long, value_name = "URL", conflicts_with = "key")]
    pub source_url: Option<String>,
    /// The claim the post makes about its source (default: the post text); needs a source.
    #[arg(long, value_name = "TEXT", conflicts_with = "key")]
    pub claim: Option<String>,
}

/// Bound on fetching `--source-url` (the whole exchange).
const SOURCE_FETCH_TIMEOUT: Duration = Duration::from_secs(20);

/// What `publish` asks for: from the flags, or from the intent `--key` names.
pub(super) struct Asked {
    pub account: String,
    pub target: String,
    pub text: String,
    pub fields: BTreeMap<String, String>,
    pub existing: Option<DeliveryKey>,
    pub source: Option<publish::RequestSource>,
}

/// `--key K`: the account, target, text and fields the intent recorded.
pub(super) async fn asked_by_key(ctx: &Context, key: &str) -> Result<Asked, CliError> {
    let key = super::intents::parse_key(key)?;
    let store = ctx.open_store().await?;
    let intent = store.intent(&key).await?;
    let source = store.intent_source(&key).await?;
    Asked::from_intent(intent, source)
}

impl Asked {
    /// What an existing intent asks for (a post, with its text).
    pub(super) fn from_intent(
        intent: crate::store::Intent,
        source: Option<crate::store::IntentSource>,
    ) -> Result<Asked, CliError> {
        let key = intent.key;
        if intent.action != crate::identity::ActionKind::Post {
            return Err(CliError::bad_input(format!(
                "intent {key} is a {}; publish sends posts only",
                intent.action
            )));
        }
        let Some(text) = intent.request.text else {
            return Err(CliError::bad_input(format!("intent {key} records no text")));
        };
        Ok(Asked {
            account: intent.account,
            target: intent.target,
            text,
            fields: intent.request.fields,
            existing: Some(key),
            source: source.map(|s| publish::RequestSource {
                claim: crate::store::IntentClaim {
                    claim: s.claim,
                    version: s.version,
                    content: s.claim_content,
                },
                capture: None,
            }),
        })
    }

    /// The publish request for what is asked, through this contract at this base URL.
    pub(super) fn request(
        &self,
        ctx: &Context,
        contract_path: PathBuf,
        base_url: String,
        login_url: Option<String>,
        options: PublishOptions,
    ) -> PublishRequest {
        PublishRequest {
            contract_path,
            account: self.account.clone(),
            target: self.target.clone(),
            text: self.text.clone(),
            fields: self.fields.clone(),
            base_url,
            data_dir: ctx.data_dir.clone(),
            owner: publish::owner_id(),
            login_url,
            options,
            source: self.source.clone(),
        }
    }
}

/// `--field K=V` values (repeatable), each bounded like the text.
pub(super) fn parse_fields(list: &[String]) -> Result<BTreeMap<String, String>, CliError> {
    let mut fields = BTreeMap::new();
    for kv in list {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(CliError::bad_input(format!("--field {kv:?}: expected K=V")));
        };
        check_text_size(&format!("--field {}", clean(k.trim())), v).map_err(CliError::bad_input)?;
        fields.insert(k.trim().to_string(), v.to_string());
    }
    Ok(fields)
}

/// Where a publish's source comes from: its stable id and exactly one body (a file, inline text, or a URL
/// fetched once), and the claim the post makes about it. The CLI and the MCP tool fill it the same way.
#[derive(Debug, Default)]
pub(super) struct SourceAsk<'a> {
    pub id: Option<&'a str>,
    pub file: Option<&'a std::path::Path>,
    pub body: Option<&'a str>,
    pub url: Option<&'a str>,
    pub claim: Option<&'a str>,
}

/// The source a publish names (None: none), captured now: a file read, a body given, or a URL fetched once
/// with a plain GET. `text` is the post text, the claim by default.
pub(super) async fn source_of(
    ask: SourceAsk<'_>,
    text: &str,
) -> Result<Option<publish::RequestSource>, CliError> {
    use crate::source::{SourceBody, fetch};
    let bodies = [ask.file.is_some(), ask.body.is_some(), ask.url.is_some()]
        .iter()
        .filter(|b| **b)
        .count();
    if bodies > 1 {
        return Err(CliError::bad_input(
            "give the source's body once: a file, a body, or a URL to fetch",
        ));
    }
    let body = match (ask.id, ask.file, ask.body, ask.url) {
        (None, None, None, None) => {
            if ask.claim.is_some() {
                return Err(CliError::bad_input(
                    "a claim is what the post says about a source: give the source too \
                     (--source-id ID --source-file FILE, or --source-url URL)",
                ));
            }
            return Ok(None);
        }
        (Some(id), Some(f), _, _) => {
            let raw = read_source_file(f)?;
            SourceBody::from_raw(id, &raw, None, "file")
                .map_err(|e| CliError::bad_input(format!("source file {}: {e}", f.display())))?
        }
        (Some(id), None, Some(b), _) => SourceBody::from_raw(id, b.as_bytes(), None, "text")
            .map_err(|e| CliError::bad_input(format!("source body: {e}")))?,
        (id, None, None, Some(url)) => {
            let got = fetch::fetch(url, SOURCE_FETCH_TIMEOUT).await.map_err(|e| {
                CliError::bad_input(format!("source URL: {e}; nothing was captured or created"))
            })?;
            SourceBody::from_raw(
                id.unwrap_or(url),
                &got.body,
                got.content_type.as_deref(),
                "url",
            )
            .map_err(|e| CliError::bad_input(format!("source URL {url}: {e}")))?
        }
        (Some(_), None, None, None) => {
            return Err(CliError::bad_input(
                "a source id needs the source's body: --source-file FILE, or --source-url URL to fetch it",
            ));
        }
        (None, _, _, _) => {
            return Err(CliError::bad_input(
                "a source's body needs its stable id (--source-id: a canonical URL or an object id)",
            ));
        }
    };
    let claim = ask.claim.unwrap_or(text);
    if claim.trim().is_empty() {
        return Err(CliError::bad_input("the claim is empty"));
    }
    check_text_size("the claim", claim).map_err(CliError::bad_input)?;
    Ok(Some(publish::RequestSource::captured(body, claim)))
}

/// Read a source file, refusing more than the source limit without reading it all.
fn read_source_file(f: &std::path::Path) -> Result<Vec<u8>, CliError> {
    read_bounded(f, crate::source::MAX_SOURCE_BYTES, "4 MiB", "a source")
}

/// Read `f`, at most one byte past `limit`: a larger file is refused (naming the limit, `shown`, and what it
/// is for), never loaded whole.
fn read_bounded(
    f: &std::path::Path,
    limit: usize,
    shown: &str,
    what: &str,
) -> Result<Vec<u8>, CliError> {
    use std::io::Read;
    let cannot =
        |e: std::io::Error| CliError::bad_input(format!("cannot read {}: {e}", f.display()));
    let mut bytes = Vec::new();
    std::fs::File::open(f)
        .map_err(cannot)?
        .take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() > limit {
        return Err(CliError::bad_input(format!(
            "{} is larger than the limit of {limit} bytes ({shown}) for {what}",
            f.display()
        )));
    }
    Ok(bytes)
}

pub(super) async fn asked_by_flags(args: &PublishArgs) -> Result<Asked, CliError> {
    let text = match (&args.text, &args.text_file) {
        (Some(t), _) => t.clone(),
        (None, Some(f)) => read_text_file(f)?,
        (None, None) => return Err(CliError::bad_input("give --text, --text-file or --key")),
    };
    check_text_size("the post text", &text).map_err(CliError::bad_input)?;
    let fields = parse_fields(&args.fields)?;
    let Some(account) = args.account.clone() else {
        return Err(CliError::bad_input("give --account (or --key)"));
    };
    account_arg(&account)?;
    let source = source_of(
        SourceAsk {
            id: args.source_id.as_deref(),
            file: args.source_file.as_deref(),
            body: None,
            url: args.source_url.as_deref(),
            claim: args.claim.as_deref(),
        },
        &text,
    )
    .await?;
    Ok(Asked {
        account,
        target: args.target.clone(),
        text,
        fields,
        existing: None,
        source,
    })
}

/// Run `oncepost publish`.
pub async fn run(ctx: &Context, args: PublishArgs, log: LogFormat) -> Result<Exit, CliError> {
    let asked = match &args.key {
        Some(k) => asked_by_key(ctx, k).await?,
        None => asked_by_flags(&args).await?,
    };
    let mut options = PublishOptions {
        look_before_write: !args.no_look_before_write,
        success_timeout: ms(args.success_timeout),
        ..PublishOptions::default()
    };
    options.transport.timeout = ms(args.request_timeout);
    let (contract_path, base_url) = match (&args.contract, &args.base_url, &asked.existing) {
        (Some(c), Some(b), _) => (c.clone(), b.clone()),
        (c, b, Some(key)) => {
            let store = ctx.open_store().await?;
            let (kept, origin) = super::recorded::recorded_contract(ctx, &store, key).await?;
            (c.clone().unwrap_or(kept), b.clone().unwrap_or(origin))
        }
        _ => return Err(CliError::bad_input("give --contract and --base-url")),
    };
    let req = asked.request(
        ctx,
        contract_path,
        base_url,
        args.login_url.clone(),
        options,
    );
    let existing = asked.existing.as_ref();
    let r = publish_locked(
        ctx,
        &req,
        existing,
        args.wait,
        ms(args.wait_timeout),
        Report::Lines(log),
    )
    .await;
    let outcome = match r {
        Ok(o) => o,
        Err(e) if e.exit == Exit::InProgressElsewhere && args.json => {
            // Still one JSON object on stdout: the intent as it stands.
            let key = match existing {
                Some(k) => Some(k.clone()),
                None => intent_key(&req).ok(),
            };
            let state = match &key {
                Some(k) => match ctx.open_store().await {
                    Ok(store) => store.intent(k).await.ok().map(|i| i.state),
                    Err(_) => None,
                },
                None => None,
            };
            // Whether this run pressed is known only while the intent has not been authorized: a fence or
            // lock met after the press (a settle refused by an epoch bump, a store locked past the wait)
            // must not read as "nothing went out", or a caller might publish the text again under a new key.
            let pressed = match state {
                None | Some(Status::Pending) | Some(Status::Failed) => serde_json::json!(false),
                Some(_) => serde_json::Value::Null,
            };
            outln!(
                "{}",
                serde_json::json!({
                    "key": key.map(|k| k.as_str().to_string()), "state": state,
                    "in_progress_elsewhere": true, "pressed": pressed, "message": e.message,
                })
            );
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    print_outcome(&outcome, args.json);
    if existing.is_some() && !outcome.pressed && !args.json {
        // `--key` on an intent that was not pending: nothing was pressed; say what would move it on.
        if outcome.state != Status::Published {
            let step = ctx
                .open_store()
                .await?
                .intent(
                    &DeliveryKey::parse(&outcome.key)
                        .ok_or_else(|| CliError::internal(format!("odd key {}", outcome.key)))?,
                )
                .await?
                .next_step();
            outln!("  next: {}", clean(&step.says));
            if let Some(c) = step.command {
                outln!("    {}", clean(&c));
            }
        }
    }
    Ok(exit_of_outcome(&outcome))
}

/// Read `--text-file` (UTF-8), at most one byte past the size limit: a huge file is refused, not loaded.
fn read_text_file(f: &std::path::Path) -> Result<String, CliError> {
    let bytes = read_bounded(f, MAX_TEXT_BYTES, "64 KiB", "a post text")?;
    String::from_utf8(bytes)
        .map_err(|_| CliError::bad_input(format!("{} is not UTF-8 text", f.display())))
}

/// The delivery key `req` maps to (no store needed).
fn intent_key(req: &PublishRequest) -> Result<DeliveryKey, CliError> {
    let contract =
        Contract::load(&req.contract_path).map_err(|e| CliError::bad_input(e.to_string()))?;
    let new = publish::new_intent(req, &contract).map_err(map_err)?;
    Ok(DeliveryKey::derive(&DeliverySpec {
        account: new.account.clone(),
        action: new.action,
        target: new.target.clone(),
        request: new.request.clone(),
        claim: new.source.as_ref().map(|c| c.claim.clone()),
    }))
}

pub(super) fn ms(v: i64) -> Duration {
    Duration::from_millis(v.max(0) as u64)
}

/// Publish `req` under the per-intent lock (see the module docs), waiting if asked.
pub async fn publish_once(
    ctx: &Context,
    req: &PublishRequest,
    wait: bool,
    wait_timeout: Duration,
    log: LogFormat,
) -> Result<PublishOutcome, CliError> {
    publish_locked(ctx, req, None, wait, wait_timeout, Report::Lines(log)).await
}

/// [`publish_once`] without waiting, each finished step sent to `steps` instead of printed (the MCP
/// server turns them into progress notifications).
pub async fn publish_reporting(
    ctx: &Context,
    req: &PublishRequest,
    steps: tokio::sync::mpsc::UnboundedSender<StepTime>,
) -> Result<PublishOutcome, CliError> {
    publish_locked(ctx, req, None, false, Duration::ZERO, Report::Steps(steps)).await
}

/// Where a publish's finished steps go.
enum Report {
    /// Progress lines on stderr.
    Lines(LogFormat),
    /// To a listener.
    Steps(tokio::sync::mpsc::UnboundedSender<StepTime>),
}

/// The worker's publish of a queued intent: under the per-intent lock, without waiting and without progress
/// lines, through the worker's own store (no second pool per publish) and its warm browsers.
pub(super) async fn publish_queued(
    ctx: &Context,
    store: &Store,
    warm: &publish::WarmBrowsers,
    req: &PublishRequest,
    key: &DeliveryKey,
) -> Result<PublishOutcome, CliError> {
    ctx.ensure_data_dir()?;
    let Some(_lock) = IntentLock::try_take(&ctx.data_dir, key)? else {
        return Err(CliError {
            exit: Exit::InProgressElsewhere,
            message: format!(
                "intent {} is in progress elsewhere (another oncepost process on this host)",
                key.as_str()
            ),
        });
    };
    publish::run_queued(req, key, store, &|_| {}, warm)
        .await
        .map_err(map_err)
}

/// An account set aside on this host (its login here ended, `publish::set_aside`): a send without a login
/// link would meet the same answer (another doubt for a person, or another failure), so one that would
/// press is refused before anything is recorded, saying what to do. A send that logs in first (`--login-url`)
/// goes ahead, and an intent that already rests is answered as it stands.
async fn refuse_if_set_aside(
    ctx: &Context,
    store: &Store,
    req: &PublishRequest,
    key: &DeliveryKey,
) -> Result<(), CliError> {
    if req.login_url.is_some() {
        return Ok(());
    }
    let Some(s) = publish::set_aside::get(&ctx.data_dir.join("profiles"), &req.account) else {
        return Ok(());
    };
    if matches!(store.intent(key).await, Ok(i) if i.state != Status::Pending) {
        return Ok(());
    }
    Err(CliError {
        exit: Exit::Refused,
        message: format!(
            "account {} is set aside on this host: its login here ended ({}, send {}); nothing was sent or \
             recorded: log its browser profile in again, then `oncepost accounts resume {}`, or publish with \
             --login-url",
            clean(&req.account),
            clean(&s.why),
            clean(&s.key),
            clean(&req.account)
        ),
    })
}

/// A send of this host showed that the account's login here ended: the account is set aside on this host,
/// as a worker sets it aside (`publish::set_aside`), said on stderr.
fn set_aside_signed_out(ctx: &Context, account: &str, key: &DeliveryKey, why: &str) {
    let profiles = ctx.data_dir.join("profiles");
    match publish::set_aside::mark_now(&profiles, account, key.as_str(), why) {
        Ok(()) => errln!(
            "oncepost: account {} set aside on this host ({}): its next sends here are refused until its \
             profile is logged in again (`--login-url`, or `oncepost accounts resume {}`)",
            clean(account),
            clean(why),
            clean(account)
        ),
        Err(e) => errln!("oncepost: account {} not set aside ({e})", clean(account)),
    }
}

/// A send of `account` published from this host: its login here works, so a worker's mark of it (set aside
/// because its login had ended, `publish::set_aside`) is taken away, said on stderr.
fn resume_published_account(ctx: &Context, account: &str) {
    match publish::set_aside::resume(&ctx.data_dir.join("profiles"), account) {
        Ok(Some(s)) => errln!(
            "oncepost: account {} resumed on this host (a worker had set it aside: {})",
            clean(account),
            clean(&s.why)
        ),
        Ok(None) => {}
        Err(e) => errln!(
            "oncepost: account {} published, but its set-aside mark stays: {e}",
            clean(account)
        ),
    }
}

/// [`publish_once`], or with `existing`, the publish of that existing intent (`--key`).
async fn publish_locked(
    ctx: &Context,
    req: &PublishRequest,
    existing: Option<&DeliveryKey>,
    wait: bool,
    wait_timeout: Duration,
    report: Report,
) -> Result<PublishOutcome, CliError> {
    let key = match existing {
        Some(k) => k.clone(),
        None => intent_key(req)?,
    };
    ctx.ensure_data_dir()?;
    let store = ctx.open_store().await?;
    refuse_if_set_aside(ctx, &store, req, &key).await?;
    // --wait: queue behind another process's publish of this intent, for at most --wait-timeout.
    let queue = Wait::new(
        format!("intent {} to be free", key.as_str()),
        wait_timeout,
        Duration::from_millis(250),
    );
    let progress = move |s: &StepTime| match &report {
        Report::Steps(to) => {
            let _ = to.send(s.clone());
        }
        Report::Lines(LogFormat::Text) => errln!(
            "oncepost: [{:>6} ms] {} ({} ms)",
            s.at_ms,
            s.step,
            s.took_ms
        ),
        Report::Lines(LogFormat::Json) => errln!(
            "{}",
            serde_json::json!({ "progress": s.step, "at_ms": s.at_ms, "took_ms": s.took_ms })
        ),
    };
    loop {
        let lock = IntentLock::try_take(&ctx.data_dir, &key)?;
        let r = match &lock {
            Some(_) => match existing {
                Some(k) => publish::run_existing(req, k, &store, &progress).await,
                None => publish::run(req, &store, &progress).await,
            },
            None => Err(PublishError::Store(StoreError::LeaseHeld {
                owner: "another oncepost process on this host".into(),
                expires_at: 0,
            })),
        };
        drop(lock);
        match r {
            Ok(o) => {
                if o.pressed && o.state == Status::Published {
                    resume_published_account(ctx, &req.account);
                }
                if let Some(why) = &o.signed_out {
                    set_aside_signed_out(ctx, &req.account, &key, why);
                }
                return Ok(o);
            }
            Err(PublishError::Store(StoreError::LeaseHeld { owner, .. })) => {
                if !wait || queue.pause().await.is_err() {
                    return Err(CliError {
                        exit: Exit::InProgressElsewhere,
                        message: format!(
                            "intent {} is in progress elsewhere ({owner}); run again later or use --wait",
                            key.as_str()
                        ),
                    });
                }
            }
            Err(e) => return Err(map_err(e)),
        }
    }
}

pub(super) fn map_err(e: PublishError) -> CliError {
    match e {
        PublishError::Contract(e) => CliError::bad_input(e.to_string()),
        PublishError::Plan(e) => CliError::bad_input(e.to_string()),
        PublishError::BadInput(m) => CliError::bad_input(m),
        PublishError::Store(e) => e.into(),
        PublishError::Browser(e @ crate::browser::BrowserError::ChromiumMissing { .. }) => {
            CliError::bad_input(e.to_string())
        }
        PublishError::Browser(e) => CliError::internal(e.to_string()),
        PublishError::Evidence(e) => CliError::internal(e.to_string()),
        // The exit says what the store did to the alarm (unavailable, internal, ...); the message says all.
        PublishError::AlarmNotRecorded { ref source, .. } => CliError {
            exit: Exit::of_store(source),
            message: e.to_string(),
        },
    }
}

/// The exit code of a publish's outcome: its state's, except that a publish the authorization told "not yet"
/// (pacing, a busy platform, the account leased elsewhere) is refused (4) with nothing sent: run it again then.
pub fn exit_of_outcome(o: &PublishOutcome) -> Exit {
    match (o.state, o.not_before) {
        (Status::Pending, Some(_)) => Exit::Refused,
        (state, _) => exit_of(state),
    }
}

/// The exit code of a settled (or not) intent.
pub fn exit_of(state: Status) -> Exit {
    match state {
        Status::Published => Exit::Ok,
        Status::Indeterminate => Exit::Indeterminate,
        Status::Failed => Exit::Failed,
        Status::Parked => Exit::Parked,
        Status::Pending | Status::Authorized => Exit::InProgressElsewhere,
    }
}

/// Print the outcome: one JSON object, or a few lines for a person.
pub fn print_outcome(o: &PublishOutcome, json: bool) {
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(o).unwrap_or_else(|_| "{}".into())
        );
        return;
    }
    outln!("{}: {} ({})", o.key, o.state, clean(&o.summary));
    if let Some(t) = o.not_before {
        outln!("  not before {}", crate::utc::display(t));
    }
    if let Some(p) = &o.permalink {
        outln!("  permalink {}", clean(p));
    }
    if let Some(a) = &o.attempt {
        outln!("  attempt {}", clean(a));
    }
    outln!("  timeline:");
    for e in &o.timeline {
        // The JSON keeps epoch milliseconds; a person reads UTC.
        let at = e["at"]
            .as_i64()
            .map(crate::utc::display)
            .unwrap_or_else(|| e["at"].to_string());
        outln!(
            "    {} {:<20} {} -> {}  {}",
            at,
            e["kind"].as_str().unwrap_or(""),
            e["from"].as_str().unwrap_or("-"),
            e["to"].as_str().unwrap_or(""),
            clean(e["reason"].as_str().unwrap_or(""))
        );
    }
    if !o.evidence.is_empty() {
        outln!("  evidence:");
        for i in &o.evidence {
            outln!("    {:<28} {}", clean(&i.kind), clean(&i.path));
        }
    }
}

/// An exclusive, non-blocking flock on `<data-dir>/locks/<key>.lock`, released on drop.
struct IntentLock;

impl IntentLock {
    fn try_take(
        data_dir: &std::path::Path,
        key: &DeliveryKey,
    ) -> Result<Option<FileLock>, CliError> {
        let path = data_dir
            .join("locks")
            .join(format!("{}.lock", file_name_for(key.as_str())));
        FileLock::try_take(&path)
            .map_err(|e| CliError::internal(format!("cannot lock {}: {e}", path.display())))
    }
}
