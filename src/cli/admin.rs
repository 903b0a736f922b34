//! `oncepost switch`, `oncepost accounts ...`, `oncepost store ...`.
use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use super::context::{account_arg, actor, parse_duration_ms};
use super::output::{clean, errln, outln};
use super::{CliError, Context, Exit};
use crate::publish::set_aside;
use crate::store::{Account, NewAccount, Pacing, SwitchScope, Timestamp};

/// Kill switch position.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OnOff {
    /// Engage: publishing stops (re-checked at every final authorization).
    On,
    /// Release.
    Off,
}

/// `oncepost switch on|off [--account A | --platform P]`.
#[derive(Debug, Args)]
pub struct SwitchArgs {
    /// on = stop publishing, off = allow again.
    pub position: OnOff,
    /// Only this account.
    #[arg(long, conflicts_with = "platform")]
    pub account: Option<String>,
    /// Only this platform.
    #[arg(long)]
    pub platform: Option<String>,
    /// Who [default: $USER].
    #[arg(long)]
    pub by: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Account management.
#[derive(Debug, Subcommand)]
pub enum AccountsCmd {
    /// Register an account.
    Add {
        /// Account name (as used by --account).
        name: String,
        /// The platform (the contract's platform name, e.g. `fixture`).
        #[arg(long)]
        platform: String,
        /// Minimum interval between two publishes of this account (e.g. 30s, 5m).
        #[arg(long, default_value = "0s", value_parser = parse_duration_ms)]
        min_interval: i64,
        /// Exact duplicate-text window (e.g. 24h); 0s turns it off.
        #[arg(long, default_value = "24h", value_parser = parse_duration_ms)]
        dup_window: i64,
        /// The account's own handle on the platform, as its posts show their author (a leading @ is
        /// dropped). A post found by search settles an intent only when it shows this handle; without
        /// one, every post found by search is a lead for a person (parked).
        #[arg(long)]
        handle: Option<String>,
        /// Who [default: $USER].
        #[arg(long)]
        by: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Record (or with --clear, remove) the handle an account posts as on its platform.
    SetHandle {
        /// Account name.
        name: String,
        /// The handle, as the platform shows a post's author (a leading @ is dropped).
        #[arg(required_unless_present = "clear", conflicts_with = "clear")]
        handle: Option<String>,
        /// Remove the recorded handle (search matches become leads only).
        #[arg(long)]
        clear: bool,
        /// Who [default: $USER].
        #[arg(long)]
        by: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Rotate credentials: bumps the credential version; attempts begun before refuse to authorize.
    Rotate {
        /// Account name.
        name: String,
        /// Who [default: $USER].
        #[arg(long)]
        by: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke: nothing authorizes for this account any more.
    Revoke {
        /// Account name.
        name: String,
        /// Who [default: $USER].
        #[arg(long)]
        by: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Pace an account: the minimum interval, a random extra wait after each publish, and caps per rolling
    /// hour and day. Decided inside the authorization transaction, so no two hosts can both pass them; a
    /// publish told "not yet" sends nothing and stays pending (a queued one runs again when allowed).
    Pace {
        /// Account name.
        name: String,
        /// Minimum interval between two publishes (e.g. 30s, 5m).
        #[arg(long, value_parser = parse_duration_ms)]
        min_interval: Option<i64>,
        /// Up to this much extra wait after each publish, drawn at random (e.g. 20s); 0s turns it off.
        #[arg(long, value_parser = parse_duration_ms)]
        jitter: Option<i64>,
        /// At most N publishes in any rolling hour (`none`: no cap).
        #[arg(long, value_name = "N|none", value_parser = parse_cap)]
        hourly_cap: Option<Cap>,
        /// At most N publishes in any rolling day (`none`: no cap).
        #[arg(long, value_name = "N|none", value_parser = parse_cap)]
        daily_cap: Option<Cap>,
        /// Who [default: $USER].
        #[arg(long)]
        by: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List accounts (and those a worker set aside on this host).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Take back an account a worker set aside on this host because its login here ended (a create answered
    /// 401, 403 or 419, or a compose page that did not show it logged in): log its browser profile in again
    /// first. This host's workers take its queued posts again.
    Resume {
        /// Account name.
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// A cap: a number, or none.
#[derive(Debug, Clone, Copy)]
pub struct Cap(Option<i64>);

fn parse_cap(s: &str) -> Result<Cap, String> {
    if s.trim().eq_ignore_ascii_case("none") {
        return Ok(Cap(None));
    }
    match s.trim().parse::<i64>() {
        Ok(n) if n >= 0 => Ok(Cap(Some(n))),
        _ => Err(format!(
            "{s:?}: give a number of publishes (0 or more) or `none`"
        )),
    }
}

/// Per-platform limits.
#[derive(Debug, Subcommand)]
pub enum PlatformsCmd {
    /// Limit the dispatches in flight (authorized, not yet settled) on a platform across every host;
    /// decided inside the authorization transaction. A publish over the limit is told "not yet".
    Limit {
        /// The platform (a contract's platform name).
        platform: String,
        /// At most this many at once (`none`: no limit).
        #[arg(long, value_name = "N|none", value_parser = parse_cap)]
        max_in_flight: Cap,
        /// Who [default: $USER].
        #[arg(long)]
        by: Option<String>,
    },
    /// List the platform limits and the dispatches in flight now.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run_platforms(ctx: &Context, cmd: PlatformsCmd) -> Result<Exit, CliError> {
    let store = ctx.open_store().await?;
    match cmd {
        PlatformsCmd::Limit {
            platform,
            max_in_flight,
            by,
        } => {
            if max_in_flight.0 == Some(0) {
                return Err(CliError::bad_input(
                    "--max-in-flight 0 would stop the platform: use `oncepost switch on --platform P`",
                ));
            }
            store
                .set_platform_limit(&platform, max_in_flight.0, &actor(&by), Timestamp::now())
                .await?;
            match max_in_flight.0 {
                Some(n) => outln!("{}: at most {n} dispatch(es) in flight", clean(&platform)),
                None => outln!("{}: no limit", clean(&platform)),
            }
        }
        PlatformsCmd::List { json } => {
            let mut rows = Vec::new();
            for (platform, max) in store.platform_limits().await? {
                let in_flight = store
                    .platform_in_flight(&platform)
                    .await?
                    .map_or(0, |(n, _)| n);
                rows.push(serde_json::json!({ "platform": platform, "max_in_flight": max, "in_flight": in_flight }));
            }
            if json {
                outln!("{}", serde_json::Value::Array(rows));
            } else if rows.is_empty() {
                outln!("no platform limits");
            } else {
                for r in &rows {
                    outln!(
                        "{}  max_in_flight={} in_flight={}",
                        clean(r["platform"].as_str().unwrap_or("")),
                        r["max_in_flight"],
                        r["in_flight"]
                    );
                }
            }
        }
    }
    Ok(Exit::Ok)
}

/// Store administration.
#[derive(Debug, Subcommand)]
pub enum StoreCmd {
    /// Apply pending migrations (every command also does this on open).
    Migrate {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Bump the restore epoch (docs/restore.md): every worker that predates it is fenced out.
    BumpEpoch {
        /// Why (e.g. "restored from the 02:00 backup").
        #[arg(long)]
        reason: String,
        /// Who [default: $USER].
        #[arg(long)]
        by: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// A handle as given on the command line: trimmed, one leading `@` dropped (platforms show `@name` or
/// `name`; the comparison ignores it too).
fn handle_arg(h: &str) -> Result<String, CliError> {
    let n = crate::browser::readback::normalize_handle(h);
    if n.is_empty() {
        return Err(CliError::bad_input(
            "--handle: give the handle the platform shows as a post's author",
        ));
    }
    Ok(n)
}

fn print_account(a: &Account, json_out: bool) -> Result<(), CliError> {
    if json_out {
        outln!(
            "{}",
            serde_json::to_string_pretty(a).map_err(|e| CliError::internal(e.to_string()))?
        );
    } else {
        let cap = |c: Option<i64>| c.map_or("none".to_string(), |n| n.to_string());
        outln!(
            "{}  platform={} handle={} credential_version={} revoked={} min_interval={}ms jitter={}ms \
             hourly_cap={} daily_cap={} dup_window={}ms",
            clean(&a.name),
            clean(&a.platform),
            clean(a.handle.as_deref().unwrap_or("-")),
            a.credential_version,
            a.revoked,
            a.min_interval_ms,
            a.jitter_ms,
            cap(a.hourly_cap),
            cap(a.daily_cap),
            a.dup_window_ms
        );
    }
    Ok(())
}

pub(crate) async fn run_switch(ctx: &Context, args: SwitchArgs) -> Result<Exit, CliError> {
    let scope = match (&args.account, &args.platform) {
        (Some(a), None) => SwitchScope::Account(account_arg(a)?.to_string()),
        (None, Some(p)) => SwitchScope::Platform(p.clone()),
        (None, None) => SwitchScope::Global,
        (Some(_), Some(_)) => {
            return Err(CliError::bad_input(
                "give --account or --platform, not both",
            ));
        }
    };
    let store = ctx.open_store().await?;
    let engaged = matches!(args.position, OnOff::On);
    let sw = store
        .set_switch(&scope, engaged, &actor(&args.by), Timestamp::now())
        .await?;
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&sw).map_err(|e| CliError::internal(e.to_string()))?
        );
    } else {
        let what = if sw.name.is_empty() {
            sw.scope.clone()
        } else {
            format!("{} {}", sw.scope, sw.name)
        };
        outln!(
            "kill switch {}: {}",
            clean(&what),
            if sw.engaged {
                "ENGAGED (publishing stopped)"
            } else {
                "released"
            }
        );
    }
    Ok(Exit::Ok)
}

pub(crate) async fn run_accounts(ctx: &Context, cmd: AccountsCmd) -> Result<Exit, CliError> {
    let store = ctx.open_store().await?;
    let now = Timestamp::now();
    match cmd {
        AccountsCmd::Add {
            name,
            platform,
            min_interval,
            dup_window,
            handle,
            by,
            json,
        } => {
            account_arg(&name)?;
            let handle = handle.as_deref().map(handle_arg).transpose()?;
            let mut a = store
                .add_account(
                    &NewAccount {
                        name: name.clone(),
                        platform,
                        min_interval_ms: min_interval,
                        dup_window_ms: dup_window,
                    },
                    &actor(&by),
                    now,
                )
                .await?;
            if let Some(h) = &handle {
                a = store
                    .set_account_handle(&name, Some(h), &actor(&by), now)
                    .await?;
            } else if !json {
                errln!(
                    "note: no --handle recorded for {}: a post found by search can only be a lead for a \
                     person (parked); record one with `oncepost accounts set-handle NAME HANDLE`",
                    clean(&name)
                );
            }
            print_account(&a, json)?;
        }
        AccountsCmd::SetHandle {
            name,
            handle,
            clear,
            by,
            json,
        } => {
            let handle = if clear {
                None
            } else {
                handle.as_deref().map(handle_arg).transpose()?
            };
            print_account(
                &store
                    .set_account_handle(account_arg(&name)?, handle.as_deref(), &actor(&by), now)
                    .await?,
                json,
            )?
        }
        AccountsCmd::Rotate { name, by, json } => print_account(
            &store
                .rotate_account(account_arg(&name)?, &actor(&by), now)
                .await?,
            json,
        )?,
        AccountsCmd::Revoke { name, by, json } => print_account(
            &store
                .revoke_account(account_arg(&name)?, &actor(&by), now)
                .await?,
            json,
        )?,
        AccountsCmd::Pace {
            name,
            min_interval,
            jitter,
            hourly_cap,
            daily_cap,
            by,
            json,
        } => {
            let who = actor(&by);
            let mut a = store.account(&name).await?;
            if min_interval.is_some() {
                a = store
                    .set_account_limits(&name, min_interval, None, &who, now)
                    .await?;
            }
            if jitter.is_some() || hourly_cap.is_some() || daily_cap.is_some() {
                let pacing = Pacing {
                    hourly_cap: hourly_cap.map(|c| c.0),
                    daily_cap: daily_cap.map(|c| c.0),
                    jitter_ms: jitter,
                };
                a = store.set_account_pacing(&name, pacing, &who, now).await?;
            }
            print_account(&a, json)?;
        }
        AccountsCmd::List { json } => {
            let all = store.accounts().await?;
            let aside = set_aside::list(&ctx.data_dir.join("profiles"));
            let aside_of = |name: &str| aside.iter().find(|s| s.account == name);
            if json {
                let listed: Vec<serde_json::Value> = all
                    .iter()
                    .map(|a| {
                        let mut v = serde_json::to_value(a).unwrap_or_default();
                        if let (Some(s), Some(o)) = (aside_of(&a.name), v.as_object_mut()) {
                            o.insert("set_aside_here".into(), json!(s));
                        }
                        v
                    })
                    .collect();
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&listed)
                        .map_err(|e| CliError::internal(e.to_string()))?
                );
            } else if all.is_empty() {
                outln!("no accounts (add one with `oncepost accounts add NAME --platform P`)");
            } else {
                for a in &all {
                    print_account(a, false)?;
                    if let Some(s) = aside_of(&a.name) {
                        outln!(
                            "  set aside on this host: {} (`oncepost accounts resume {}` once its profile \
                             is logged in again)",
                            clean(&s.why),
                            clean(&a.name)
                        );
                    }
                }
            }
        }
        AccountsCmd::Resume { name, json } => {
            let name = account_arg(&name)?;
            // An account the store does not know is bad input, as for every `accounts` command.
            store.account(name).await?;
            let was = set_aside::resume(&ctx.data_dir.join("profiles"), name)
                .map_err(|e| CliError::internal(e.to_string()))?;
            if json {
                outln!(
                    "{}",
                    json!({ "account": name, "resumed": was.is_some(), "set_aside": was })
                );
            } else {
                match &was {
                    Some(s) => outln!(
                        "{}: resumed on this host (it was set aside: {}); its queued posts are taken again",
                        clean(name),
                        clean(&s.why)
                    ),
                    None => outln!("{} was not set aside on this host", clean(name)),
                }
            }
        }
    }
    Ok(Exit::Ok)
}

pub(crate) async fn run_store(ctx: &Context, cmd: StoreCmd) -> Result<Exit, CliError> {
    let store = ctx.open_store().await?;
    match cmd {
        StoreCmd::Migrate { json } => {
            let v = store.applied_schema_version().await?;
            if json {
                outln!(
                    "{}",
                    json!({ "store": store.location().display(), "schema_version": v })
                );
            } else {
                outln!("{} is at schema version {v}", store.location().display());
            }
        }
        StoreCmd::BumpEpoch { reason, by, json } => {
            if reason.trim().is_empty() {
                return Err(CliError::bad_input("--reason must say why (which restore)"));
            }
            let e = store
                .bump_epoch(&actor(&by), &reason, Timestamp::now())
                .await?;
            if json {
                outln!("{}", json!({ "epoch": e }));
            } else {
                outln!(
                    "store epoch is now {e}: workers from before it can no longer authorize or settle"
                );
            }
        }
    }
    Ok(Exit::Ok)
}
