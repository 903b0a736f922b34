//! `oncepost conform`: check the at-most-once claim against the author's own platform, through the
//! fault-injecting proxy of `oncepost fixtures proxy` started in-process (docs/conform.md).
//!
//! The run: a probe with `--fill` (it must forward no write), one publish per proxy fault, each with its own
//! text; `sweep`, then one reconcile lookup for every intent left indeterminate (after the contract's
//! propagation window); then every publish again. Every write the site received went through the proxy and
//! is attributed to the step that was running. Exit 0 when every cell passes, 3 otherwise, 2 bad input.
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;

use super::output::{clean, errln, outln};
use super::{Cli, CliError, Context, LogFormat};
use crate::contract::Contract;
use crate::fixture_platform::proxy::{
    self, FaultFilter, ProxyConfig, ProxyFault, ProxyFaultMode, ProxyWrite, RunningProxy,
};
use crate::publish::{PublishOptions, PublishRequest};
use crate::recover::{self, RecoverError};
use crate::store::{Status, Timestamp};

/// Arguments of `oncepost conform`.
#[derive(Debug, clap::Args)]
pub struct ConformArgs {
    /// The platform contract.
    #[arg(long)]
    pub contract: PathBuf,
    /// The platform's real base URL; the contract's `{base_url}` becomes the proxy's in front of it.
    #[arg(long)]
    pub base_url: String,
    /// The publishing account (registered with `oncepost accounts add`, ideally with `--handle`).
    #[arg(long)]
    pub account: String,
    /// A login URL opened before each compose page; a URL on the platform's origin is rewritten to the
    /// proxy's.
    #[arg(long)]
    pub login_url: Option<String>,
    /// How long `commit-then-delay` holds the site's answer (longer than --request-timeout: a timeout).
    #[arg(long, default_value_t = 8_000)]
    pub delay_ms: u64,
    /// Bound on the create request of each publish.
    #[arg(long, default_value = "5s", value_parser = super::context::parse_duration_ms)]
    pub request_timeout: i64,
    /// Let the browser's own re-sends through the proxy (see `fixtures proxy --let-resends-through`).
    #[arg(long)]
    pub let_resends_through: bool,
    /// Bound on one reconcile lookup.
    #[arg(long, default_value = "60s", value_parser = super::context::parse_duration_ms)]
    pub lookup_timeout: i64,
    /// Another compose field for every publish, by the contract's field name (repeatable). Like the text,
    /// each value gets the publish's own tag appended (` FAULT NONCE`), so that every publish is a
    /// different post (a title-keyed platform needs a new title each time).
    #[arg(long = "field", value_name = "K=V")]
    pub fields: Vec<String>,
    /// A compose field given as it is to every publish and to the probe (repeatable): what the posts go
    /// into rather than the post's own name, such as a tracker's project or a forum's board, which must
    /// exist as named. A field is given by `--field` or `--fixed-field`, not both.
    #[arg(long = "fixed-field", value_name = "K=V")]
    pub fixed_fields: Vec<String>,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// The faults, in the order they are tried.
const FAULTS: [ProxyFaultMode; 5] = ProxyFaultMode::ALL;

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// `probe`, or the fault's spelling.
    pub fault: String,
    /// The intent (none for the probe).
    pub key: Option<String>,
    /// The state `publish` answered (probe: its verdict).
    pub after_publish: String,
    /// The state after sweep and reconcile.
    pub after_reconcile: String,
    /// The state the rerun answered.
    pub after_rerun: String,
    /// Forwarded writes matching the contract's create request, over the whole run.
    pub copies: u64,
    /// Every write forwarded to the site: during the publish, the reconcile, the rerun (a declared read
    /// request is a read, not counted).
    pub writes_forwarded: [u64; 3],
    /// Whether every rule held.
    pub pass: bool,
    /// The rules that did not hold.
    pub broken: Vec<String>,
}

/// Run `oncepost conform`.
pub async fn run(cli: &Cli, args: &ConformArgs, log: LogFormat) -> ExitCode {
    match conform(cli, args, log).await {
        Ok(cells) => {
            let pass = cells.iter().all(|c| c.pass);
            print(&cells, pass, args.json);
            if pass {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(3)
            }
        }
        Err(e) => {
            errln!("oncepost: {}", clean(&crate::redact::text(&e.message)));
            ExitCode::from(e.exit as u8)
        }
    }
}

fn bad(e: impl std::fmt::Display) -> CliError {
    CliError::bad_input(e.to_string())
}

/// Writes from `from` on that the site received.
fn forwarded(p: &RunningProxy, from: usize) -> Vec<ProxyWrite> {
    p.stats()
        .writes
        .into_iter()
        .skip(from)
        .filter(|w| w.outcome == "forwarded")
        .collect()
}

async fn conform(cli: &Cli, args: &ConformArgs, log: LogFormat) -> Result<Vec<Cell>, CliError> {
    let ctx = Context::from_cli(cli)?;
    super::context::account_arg(&args.account)?;
    let contract = Contract::load(&args.contract).map_err(bad)?;
    let upstream = url::Url::parse(&args.base_url).map_err(|e| bad(format!("--base-url: {e}")))?;
    let given = super::publish::parse_fields(&args.fields)?;
    let fixed = super::publish::parse_fields(&args.fixed_fields)?;
    if let Some(k) = fixed.keys().find(|k| given.contains_key(*k)) {
        return Err(bad(format!(
            "field {k:?} is given by both --field and --fixed-field: give it once"
        )));
    }
    // Each publish's own text and fields; its create request is matched with them (a URL may hold a field).
    let nonce = crate::secret::random_hex::<6>().map_err(|e| CliError::internal(e.to_string()))?;
    let text_of = |fault: ProxyFaultMode| format!("oncepost conform {fault} {nonce}");
    let fields_of = |fault: ProxyFaultMode| -> std::collections::BTreeMap<String, String> {
        given
            .iter()
            .map(|(k, v)| (k.clone(), format!("{v} {fault} {nonce}")))
            .chain(fixed.iter().map(|(k, v)| (k.clone(), v.clone())))
            .collect()
    };
    let plan_at = |base: &str, fault: ProxyFaultMode| {
        let mut values = fields_of(fault);
        values.insert(contract.body_field().to_string(), text_of(fault));
        contract.publish_plan_for(base, &values).map_err(bad)
    };
    // The fault is the create request's alone: the page's declared writes (drafts, UI state) pass as they
    // would, so each cell tests what happens to the one write that publishes. Judged on the site's own URLs.
    let mut creates = Vec::new();
    for fault in FAULTS {
        creates.push(plan_at(&args.base_url, fault)?.create);
    }
    let mut config = ProxyConfig::new(upstream);
    config.let_resends_through = args.let_resends_through;
    config.fault_only = Some(FaultFilter(std::sync::Arc::new(move |w: &ProxyWrite| {
        creates.iter().any(|c| c.matches(&w.facts(&w.url)))
    })));
    let running = proxy::start(config).await.map_err(bad)?;
    let base = running.base_url();
    let upstream_origin = running.upstream_origin().to_owned();
    let plan_of = |fault: ProxyFaultMode| plan_at(&base, fault);
    let at_proxy = |w: &ProxyWrite| match w.url.strip_prefix(&upstream_origin) {
        Some(rest) => format!("{base}{rest}"),
        None => w.url.clone(),
    };
    let is_create = |plan: &crate::contract::PublishPlan, w: &ProxyWrite| {
        plan.create.matches(&w.facts(&at_proxy(w)))
    };
    // A request the contract declares a read (`read_requests`: a GraphQL query) reaches the site wherever
    // the page reads, the probe and the lookup included: it is not a write forwarded. Never one that is the
    // create request, as in the browser's door.
    let reads_plan = plan_of(ProxyFaultMode::Normal)?;
    let declared_read = |w: &ProxyWrite| {
        let at = at_proxy(w);
        let f = w.facts(&at);
        f.body.is_some()
            && !reads_plan.create.matches(&f)
            && reads_plan.probe.read_requests.iter().any(|r| r.matches(&f))
    };
    let sent_writes = |from: usize| -> Vec<ProxyWrite> {
        forwarded(&running, from)
            .into_iter()
            .filter(|w| !declared_read(w))
            .collect()
    };
    errln!("oncepost conform: proxy {base} in front of {upstream_origin}");
    let mut cells = Vec::new();

    // 1. The probe: fills every field, presses nothing; the site must receive no write.
    let seen = running.stats().writes.len();
    let probe_args = super::probe::ProbeArgs {
        contract: args.contract.clone(),
        base_url: base.clone(),
        account: Some(args.account.clone()),
        cookies: None,
        fields: Vec::new(),
        json: false,
        screenshot: None,
        fill: Some("oncepost conform probe".into()),
        observe_ms: 1000,
        check_rounds: 1,
        call_timeout_ms: 10_000,
    };
    // The probe's own values for the compose URL's fields (a url field names a page of its own).
    let probe_values: std::collections::BTreeMap<String, String> = given
        .iter()
        .map(|(k, v)| (k.clone(), format!("{v} probe {nonce}")))
        .chain(fixed.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect();
    let probe_plan = contract.probe_plan_for(&base, &probe_values).map_err(bad)?;
    let verdict = match super::probe::probe(cli, &probe_args, &probe_plan, false).await {
        Ok(r) => format!("{:?}", r.verdict).to_lowercase(),
        Err(e) => format!("error: {e:#}"),
    };
    let w = sent_writes(seen).len() as u64;
    let mut broken = Vec::new();
    if w != 0 {
        broken.push(format!(
            "the probe forwarded {w} write(s); it must forward none"
        ));
    }
    cells.push(Cell {
        fault: "probe".into(),
        key: None,
        after_publish: verdict,
        after_reconcile: "-".into(),
        after_rerun: "-".into(),
        copies: 0,
        writes_forwarded: [w, 0, 0],
        pass: broken.is_empty(),
        broken,
    });

    // 2. One publish per fault.
    let login_url = args
        .login_url
        .as_ref()
        .map(|u| match u.strip_prefix(&upstream_origin) {
            Some(rest) => format!("{base}{rest}"),
            None => u.clone(),
        });
    let request = |fault: ProxyFaultMode| {
        let mut options = PublishOptions::default();
        options.transport.timeout = Duration::from_millis(args.request_timeout.max(1) as u64);
        PublishRequest {
            contract_path: args.contract.clone(),
            account: args.account.clone(),
            target: String::new(),
            text: text_of(fault),
            fields: fields_of(fault),
            base_url: base.clone(),
            data_dir: ctx.data_dir.clone(),
            owner: crate::publish::owner_id(),
            login_url: login_url.clone(),
            options,
            source: None,
        }
    };
    let wait = Duration::from_secs(120);
    let mut runs = Vec::new();
    for fault in FAULTS {
        running.set_fault(ProxyFault::new(fault).with_delay_ms(args.delay_ms));
        let seen = running.stats().writes.len();
        errln!("oncepost conform: publish under {fault}");
        let r = super::publish::publish_once(&ctx, &request(fault), false, wait, log).await;
        running.set_fault(ProxyFault::new(ProxyFaultMode::Normal));
        let writes = sent_writes(seen);
        runs.push((fault, r, writes));
    }

    // 3. Sweep, then one lookup for each intent left indeterminate.
    let store = ctx.open_store().await?;
    store
        .sweep(&format!("conform:{}", std::process::id()), Timestamp::now())
        .await?;
    let (lookup, policy) =
        super::recover::lookup_for(&ctx, &store, &args.contract, &base, args.lookup_timeout)?;
    let mut after = Vec::new();
    for (_, r, _) in &runs {
        let seen = running.stats().writes.len();
        let state = match r {
            Ok(o) => {
                let key = crate::identity::DeliveryKey::parse(&o.key)
                    .ok_or_else(|| CliError::internal(format!("odd key {}", o.key)))?;
                let mut state = store.intent(&key).await?.state;
                if state == Status::Indeterminate {
                    state = reconcile(&store, &lookup, &key, policy).await?;
                }
                state.to_string()
            }
            Err(e) => format!("error: {}", e.message),
        };
        after.push((state, sent_writes(seen)));
    }

    // 4. Every publish again: answered from the store, nothing may be forwarded.
    for ((fault, first, writes), (state, reconcile_writes)) in runs.into_iter().zip(after) {
        let seen = running.stats().writes.len();
        let rerun = super::publish::publish_once(&ctx, &request(fault), false, wait, log).await;
        let rerun_writes = sent_writes(seen);
        let after_rerun = match &rerun {
            Ok(o) => o.state.to_string(),
            Err(e) => format!("error: {}", e.message),
        };
        let all = writes.iter().chain(&reconcile_writes).chain(&rerun_writes);
        let plan = plan_of(fault)?;
        let copies = all.filter(|w| is_create(&plan, w)).count() as u64;
        let mut broken = Vec::new();
        let resting = ["published", "failed", "parked"];
        if copies > 1 {
            broken.push(format!(
                "{copies} create requests reached the site for one intent"
            ));
        }
        if !resting.contains(&state.as_str()) {
            broken.push(format!("after reconcile the intent is {state}, not a resting state (published, failed, parked)"));
        }
        if state == "failed" && copies > 0 {
            broken.push("failed (provably not sent), yet a create request reached the site".into());
        }
        if state == "published" && copies != 1 {
            broken.push(format!(
                "published, yet {copies} create requests matching the contract reached the site through the proxy"
            ));
        }
        if fault == ProxyFaultMode::Normal && state != "published" {
            broken.push(format!(
                "with no fault the post must be published, but it is {state}"
            ));
        }
        if !reconcile_writes.is_empty() {
            broken.push(format!(
                "reconcile forwarded {} write(s)",
                reconcile_writes.len()
            ));
        }
        if !rerun_writes.is_empty() {
            broken.push(format!(
                "the rerun forwarded {} write(s)",
                rerun_writes.len()
            ));
        }
        if after_rerun != state {
            broken.push(format!("the rerun answered {after_rerun}, not {state}"));
        }
        cells.push(Cell {
            fault: fault.to_string(),
            key: first.as_ref().ok().map(|o| o.key.clone()),
            after_publish: match &first {
                Ok(o) => o.state.to_string(),
                Err(e) => format!("error: {}", e.message),
            },
            after_reconcile: state,
            after_rerun,
            copies,
            writes_forwarded: [
                writes.len() as u64,
                reconcile_writes.len() as u64,
                rerun_writes.len() as u64,
            ],
            pass: broken.is_empty(),
            broken,
        });
    }
    running.shutdown().await;
    Ok(cells)
}

/// One lookup, after the propagation window; returns the state afterwards.
async fn reconcile(
    store: &crate::store::Store,
    lookup: &recover::BrowserLookup,
    key: &crate::identity::DeliveryKey,
    policy: recover::ReconcilePolicy,
) -> Result<Status, CliError> {
    for _ in 0..3 {
        match recover::reconcile_one(
            store,
            lookup,
            key,
            "conform",
            false,
            policy,
            Timestamp::now(),
        )
        .await
        {
            Ok(r) => return Ok(r.state),
            Err(RecoverError::TooEarly(ms)) => {
                tokio::time::sleep(Duration::from_millis(ms.max(0) as u64 + 100)).await;
            }
            Err(RecoverError::Busy(why)) => {
                errln!("oncepost conform: lookup of {key} not started ({why}); trying again");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            Err(RecoverError::Store(e)) => return Err(e.into()),
            Err(e) => return Err(CliError::bad_input(e.to_string())),
        }
    }
    Ok(store.intent(key).await?.state)
}

fn print(cells: &[Cell], pass: bool, json: bool) {
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "pass": pass, "cells": cells }))
                .unwrap_or_default()
        );
        return;
    }
    outln!(
        "{:<18} {:<14} {:<16} {:<14} {:>6} {:>16}  result",
        "fault",
        "after publish",
        "after reconcile",
        "after rerun",
        "copies",
        "writes p/r/rerun"
    );
    for c in cells {
        let w = format!(
            "{}/{}/{}",
            c.writes_forwarded[0], c.writes_forwarded[1], c.writes_forwarded[2]
        );
        outln!(
            "{:<18} {:<14} {:<16} {:<14} {:>6} {:>16}  {}",
            c.fault,
            clean(&c.after_publish),
            clean(&c.after_reconcile),
            clean(&c.after_rerun),
            c.copies,
            w,
            if c.pass { "pass" } else { "FAIL" }
        );
        for b in &c.broken {
            outln!("    {}", clean(b));
        }
    }
    outln!(
        "{}",
        if pass {
            "every cell passes: at most one create per intent, every intent at rest, reruns forward nothing"
        } else {
            "some cells FAIL (see above)"
        }
    );
}
