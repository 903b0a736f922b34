//! `oncepost probe`: check a platform page against its contract under the write guard.
//!
//! Exit codes: 0 every required locator passed and the page attempted no write; 3 a required locator
//! failed or a write was attempted (and blocked); 2 bad input; 1 internal error (browser died, timeout).
//! The report and the annotated screenshot are stored content-addressed under
//! `<data-dir>/evidence/sha256/<hh>/<hash>.{json,png}`.
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

use crate::browser::{
    self, BrowserError, BrowserSession, LaunchOptions, ProbeOptions, ProbeReport, ProbeVerdict,
};
use crate::contract::Contract;

use super::Cli;
use super::output::{clean, errln, outln};

/// Arguments of `oncepost probe`.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// The platform contract.
    #[arg(long)]
    pub contract: PathBuf,
    /// Base URL of the platform (`{base_url}` in the contract), e.g. http://127.0.0.1:8080.
    #[arg(long)]
    pub base_url: String,
    /// Account whose persistent browser profile (<data-dir>/profiles/ACCOUNT, 0700) is used. Without it a
    /// throwaway profile is used.
    #[arg(long)]
    pub account: Option<String>,
    /// Import cookies (a JSON array of CDP cookie objects: name, value, domain, path, ...) into the profile
    /// before probing, for accounts whose login cannot be scripted.
    #[arg(long)]
    pub cookies: Option<PathBuf>,
    /// A value for a `{field:NAME}` of the compose URL (repeatable): a url field (a wiki page's name) the
    /// compose page needs. Nothing is typed with it.
    #[arg(long = "field", value_name = "K=V")]
    pub fields: Vec<String>,
    /// Print the JSON report on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also write the annotated screenshot here.
    #[arg(long)]
    pub screenshot: Option<PathBuf>,
    /// Type TEXT into every field (Input.insertText; a field with `newlines = "keys"` gets each line break
    /// as Enter or Shift+Enter). Off by default.
    #[arg(long, num_args = 0..=1, default_missing_value = "oncepost probe ✓")]
    pub fill: Option<String>,
    /// Keep watching for writes this many milliseconds after the checks.
    #[arg(long, default_value_t = 1000)]
    pub observe_ms: u64,
    /// Run the locator checks N times and report each round's time (for benchmarks).
    #[arg(long, default_value_t = 1, hide = true)]
    pub check_rounds: usize,
    /// Bound on each CDP call, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub call_timeout_ms: u64,
}

/// Run a probe and map the outcome to an exit code.
pub async fn run(cli: &Cli, args: &ProbeArgs) -> ExitCode {
    let contract = match Contract::load(&args.contract) {
        Ok(c) => c,
        Err(e) => {
            errln!("{e}");
            return ExitCode::from(2);
        }
    };
    let values = match super::publish::parse_fields(&args.fields) {
        Ok(v) => v,
        Err(e) => {
            errln!("error: {}", e.message);
            return ExitCode::from(2);
        }
    };
    if let Some(k) = values
        .keys()
        .find(|k| !contract.compose.fields.iter().any(|f| &f.name == *k))
    {
        errln!("error: --field {k}: the contract has no field {k:?}");
        return ExitCode::from(2);
    }
    let missing = contract.missing_value_fields(&values);
    if !missing.is_empty() {
        errln!(
            "error: the contract needs {}: give them with --field (they name the page, or the choice a step picks)",
            missing
                .iter()
                .map(|f| format!("--field {f}=..."))
                .collect::<Vec<_>>()
                .join(" ")
        );
        return ExitCode::from(2);
    }
    let plan = match contract.probe_plan_for(&args.base_url, &values) {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(a) = &args.account
        && let Err(e) = crate::identity::check_account_name(a)
    {
        errln!("error: {e}");
        return ExitCode::from(2);
    }
    match probe(cli, args, &plan, true).await {
        Ok(report) => {
            if report.verdict == ProbeVerdict::Pass {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(3)
            }
        }
        Err(e) => {
            errln!("error: {e:#}");
            let bad_input = e
                .downcast_ref::<BrowserError>()
                .is_some_and(|b| matches!(b, BrowserError::ChromiumMissing { .. }))
                || e.downcast_ref::<BadInput>().is_some();
            ExitCode::from(if bad_input { 2 } else { 1 })
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BadInput(String);

/// Run the probe, store its report (and screenshot) as evidence, and print it when `print`.
pub(crate) async fn probe(
    cli: &Cli,
    args: &ProbeArgs,
    plan: &browser::ProbePlan,
    print: bool,
) -> anyhow::Result<ProbeReport> {
    let data = super::data_dir(cli)?;
    let profiles = data.join("profiles");
    browser::private_dir(&profiles)
        .with_context(|| format!("cannot create {}", profiles.display()))?;
    let _throwaway;
    let profile = match &args.account {
        Some(a) => crate::lock::profile_dir(&profiles, a).map_err(|e| BadInput(e.to_string()))?,
        None => {
            let t = tempfile::Builder::new()
                .prefix(".probe-")
                .tempdir_in(&profiles)?;
            let p = t.path().to_path_buf();
            _throwaway = t;
            p
        }
    };
    let cookies = match &args.cookies {
        Some(f) => Some(read_cookies(f)?),
        None => None,
    };
    let mut launch = LaunchOptions::new(profile);
    launch.call_timeout = Duration::from_millis(args.call_timeout_ms.max(100));
    let session = BrowserSession::launch(&launch).await?;
    let result = async {
        if let Some(c) = cookies {
            session
                .liveness()
                .call("import cookies", session.browser().set_cookies(c))
                .await?;
        }
        let opts = ProbeOptions {
            fill: args.fill.clone(),
            observe: Duration::from_millis(args.observe_ms),
            check_rounds: args.check_rounds,
            ..ProbeOptions::default()
        };
        browser::probe::run(&session, plan, &opts).await
    }
    .await;
    session.close().await;
    let (mut report, png) = result?;
    let evidence = data.join("evidence").join("sha256");
    if let Some(png) = &png {
        let (hash, path) = store(&evidence, png, "png")?;
        report.screenshot_sha256 = Some(hash);
        if let Some(to) = &args.screenshot {
            std::fs::copy(&path, to).with_context(|| format!("cannot write {}", to.display()))?;
        }
    }
    // What is stored and printed went through the redaction layer: the page's URLs (tokens in queries) and
    // messages are the page's, not ours.
    redact_report(&mut report);
    let json = serde_json::to_string_pretty(&crate::redact::json(&serde_json::to_value(&report)?))?;
    let (report_hash, report_path) = store(&evidence, json.as_bytes(), "json")?;
    if print {
        if args.json {
            outln!("{json}");
        } else {
            print_human(&report, &report_path);
        }
    }
    errln!("report {report_hash} stored at {}", report_path.display());
    Ok(report)
}

fn read_cookies(
    f: &Path,
) -> anyhow::Result<Vec<chromiumoxide::cdp::browser_protocol::network::CookieParam>> {
    let text = std::fs::read_to_string(f)
        .map_err(|e| BadInput(format!("cannot read cookies {}: {e}", f.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        BadInput(format!(
            "{}: not a JSON array of cookies (name, value, domain, path...): {e}",
            f.display()
        ))
        .into()
    })
}

/// Store `bytes` at `<dir>/<hh>/<sha256>.<ext>` (0700 dirs, 0600 file); returns the hash and the path.
pub fn store(dir: &Path, bytes: &[u8], ext: &str) -> anyhow::Result<(String, PathBuf)> {
    Ok(crate::evidence::store_bytes(dir, bytes, ext)?)
}

/// Redact the report's page-derived text in place (URLs, problems, step outcomes, guard faults).
fn redact_report(r: &mut ProbeReport) {
    use crate::redact::text;
    r.url = text(&r.url);
    r.final_url = r.final_url.as_deref().map(text);
    for p in r.problems.iter_mut().chain(r.guard_faults.iter_mut()) {
        *p = text(p);
    }
    for c in &mut r.locators {
        for p in &mut c.problems {
            *p = text(p);
        }
    }
    for s in &mut r.steps {
        s.outcome = text(&s.outcome);
    }
    for w in &mut r.writes {
        w.url = text(&w.url);
    }
}

fn print_human(r: &ProbeReport, report_path: &Path) {
    let verdict = serde_json::to_value(r.verdict)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    outln!(
        "probe {} ({}) contract {}: {}",
        clean(&r.platform),
        clean(&r.url),
        &r.contract_hash[..12.min(r.contract_hash.len())],
        verdict.to_uppercase()
    );
    for (i, c) in r.locators.iter().enumerate() {
        let mark = if c.ok {
            "ok  "
        } else if c.required {
            "FAIL"
        } else {
            "warn"
        };
        let used = c
            .used_strategy
            .map_or("none".to_string(), |u| format!("strategy {u}"));
        outln!(
            "  [{i}] {mark} {:<14} {used}, {} match(es){}",
            c.name,
            c.count,
            if c.problems.is_empty() {
                String::new()
            } else {
                format!(": {}", clean(&c.problems.join("; ")))
            }
        );
    }
    for s in &r.steps {
        outln!(
            "  step {:?} {}: {}",
            s.action,
            clean(&s.target),
            clean(&s.outcome)
        );
    }
    for w in &r.writes {
        outln!(
            "  ALARM write attempted (blocked={}): {} {} [{}] frame {}",
            w.blocked,
            clean(&w.method),
            clean(&w.url),
            clean(&w.resource_type),
            clean(&w.frame_id)
        );
    }
    for d in &r.dialogs {
        outln!(
            "  dialog/popup: {}",
            crate::redact::text(&serde_json::to_string(d).unwrap_or_default())
        );
    }
    outln!(
        "  timings: navigate {} ms, steps {} ms, checks {} ms, total {} ms",
        r.timings.navigate_ms,
        r.timings.steps_ms,
        r.timings.checks_ms,
        r.timings.total_ms
    );
    if let Some(h) = &r.screenshot_sha256 {
        outln!("  screenshot sha256 {h}");
    }
    outln!("  report {}", report_path.display());
}
