//! The worker's operator endpoint (`oncepost worker --metrics PORT`): `GET /metrics` in Prometheus's text
//! format and `GET /healthz`, on 127.0.0.1 only. What the store holds (intents by state, the oldest pending
//! intent) is read from the store at each scrape; what this worker did (passes, sweeps, lookups by outcome) is
//! counted in this process since it started, as Prometheus counters are.
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::recover::PassReport;
use crate::store::Timestamp;
use crate::store::{ReconcileOutcome, Status, Store};

/// What one worker process did, for `/metrics`, and when its last pass ended, for `/healthz`.
pub struct WorkerMetrics {
    started: Instant,
    interval: Duration,
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    passes: u64,
    made_indeterminate: u64,
    claims_released: u64,
    lookups_interrupted: u64,
    /// Lookups run, by what they saw (`found`, `not_found`, `unavailable`).
    lookups: BTreeMap<&'static str, u64>,
    /// Intents whose reconcile the store refused (another process got there first, ...).
    skipped: u64,
    /// Queued publishes this worker ran, by how they ended (a state, `not_yet`, or `skipped`).
    queue_runs: BTreeMap<String, u64>,
    last_pass: Option<Instant>,
}

impl WorkerMetrics {
    /// Counters at zero for a worker passing every `interval`.
    pub fn new(interval: Duration) -> Arc<WorkerMetrics> {
        Arc::new(WorkerMetrics {
            started: Instant::now(),
            interval,
            counts: Mutex::new(Counts::default()),
        })
    }

    /// Count one finished pass.
    pub fn record(&self, pass: &PassReport) {
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        c.passes += 1;
        c.made_indeterminate += pass.sweep.made_indeterminate.len() as u64;
        c.claims_released += pass.sweep.claims_released.len() as u64;
        c.lookups_interrupted += pass.sweep.lookups_interrupted.len() as u64;
        for r in &pass.reconciled {
            let outcome = match r.outcome {
                ReconcileOutcome::Found { .. } => "found",
                ReconcileOutcome::NotFound { .. } => "not_found",
                ReconcileOutcome::Unavailable { .. } => "unavailable",
            };
            *c.lookups.entry(outcome).or_default() += 1;
        }
        c.skipped += pass.skipped.len() as u64;
        c.last_pass = Some(Instant::now());
    }

    /// Count one queued publish by how it ended: `not_yet` (the authorization said wait: pacing, a busy
    /// platform, the account leased elsewhere), `skipped` (not run: another process had it), or its state.
    pub fn record_queue_run(&self, how: &str) {
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        *c.queue_runs.entry(how.to_string()).or_default() += 1;
    }

    /// Healthy while passes keep coming: the last one ended (or the worker started) within three intervals
    /// (at least a minute: one pass may run a lookup of up to its own bound).
    fn stalled(&self) -> Option<String> {
        let c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let since = c.last_pass.unwrap_or(self.started).elapsed();
        let limit = (self.interval * 3).max(Duration::from_secs(60));
        (since > limit).then(|| {
            format!(
                "no pass ended for {} s (limit {} s)",
                since.as_secs(),
                limit.as_secs()
            )
        })
    }
}

#[derive(Clone)]
struct Served {
    store: Store,
    metrics: Arc<WorkerMetrics>,
    /// This host's account profiles (for the accounts set aside here).
    profiles: std::path::PathBuf,
}

/// Serve `/metrics` and `/healthz` on 127.0.0.1:`port` (0: any free port) until the process ends; the
/// address it listens on.
pub async fn serve(
    port: u16,
    store: Store,
    metrics: Arc<WorkerMetrics>,
    profiles: std::path::PathBuf,
) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new()
        .route("/metrics", get(scrape))
        .route("/healthz", get(healthz))
        .with_state(Served {
            store,
            metrics,
            profiles,
        });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(addr)
}

async fn healthz(State(s): State<Served>) -> impl IntoResponse {
    if let Err(e) = s.store.epoch().await {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("store unavailable: {e}\n"),
        );
    }
    match s.metrics.stalled() {
        Some(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")),
        None => (StatusCode::OK, "ok\n".to_string()),
    }
}

async fn scrape(State(s): State<Served>) -> impl IntoResponse {
    match render(&s).await {
        Ok(text) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            text,
        ),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("store unavailable: {e}\n"),
        ),
    }
}

/// One family: its HELP and TYPE lines, then its samples.
fn family(out: &mut String, name: &str, kind: &str, help: &str, samples: &[(String, f64)]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for (labels, v) in samples {
        let _ = writeln!(out, "{name}{labels} {v}");
    }
}

async fn render(s: &Served) -> Result<String, crate::store::StoreError> {
    let by_state: std::collections::HashMap<Status, i64> =
        s.store.state_counts().await?.into_iter().collect();
    let oldest = s.store.oldest_pending_created_at().await?;
    let mut out = String::new();
    let states: Vec<(String, f64)> = Status::ALL
        .iter()
        .map(|st| {
            (
                format!("{{state=\"{}\"}}", st.label()),
                *by_state.get(st).unwrap_or(&0) as f64,
            )
        })
        .collect();
    family(
        &mut out,
        "oncepost_intents",
        "gauge",
        "Intents in the store, by state.",
        &states,
    );
    let age = oldest.map_or(0.0, |t| ((Timestamp::now().0 - t).max(0) as f64) / 1000.0);
    family(
        &mut out,
        "oncepost_queue_oldest_pending_age_seconds",
        "gauge",
        "Age of the oldest pending intent (0 when none is pending).",
        &[(String::new(), age)],
    );
    let aside = crate::publish::set_aside::list(&s.profiles).len();
    family(
        &mut out,
        "oncepost_accounts_set_aside",
        "gauge",
        "Accounts set aside on this host because their login here ended (their queued posts wait for \
         `oncepost accounts resume`).",
        &[(String::new(), aside as f64)],
    );
    let c = s.metrics.counts.lock().unwrap_or_else(|p| p.into_inner());
    let counters: [(&str, &str, u64); 5] = [
        (
            "oncepost_worker_passes_total",
            "Passes (sweep, then reconcile what is due) this worker finished.",
            c.passes,
        ),
        (
            "oncepost_sweep_made_indeterminate_total",
            "Authorized intents whose dispatch lease ran out, made indeterminate by this worker's sweeps.",
            c.made_indeterminate,
        ),
        (
            "oncepost_sweep_claims_released_total",
            "Expired pre-authorization claims this worker's sweeps released.",
            c.claims_released,
        ),
        (
            "oncepost_sweep_lookups_interrupted_total",
            "Interrupted reconcile lookups this worker's sweeps parked.",
            c.lookups_interrupted,
        ),
        (
            "oncepost_reconcile_skipped_total",
            "Due intents whose reconcile the store refused (another process got there first, ...).",
            c.skipped,
        ),
    ];
    for (name, help, v) in counters {
        family(
            &mut out,
            name,
            "counter",
            help,
            &[(String::new(), v as f64)],
        );
    }
    let lookups: Vec<(String, f64)> = ["found", "not_found", "unavailable"]
        .iter()
        .map(|o| {
            (
                format!("{{outcome=\"{o}\"}}"),
                *c.lookups.get(o).unwrap_or(&0) as f64,
            )
        })
        .collect();
    family(
        &mut out,
        "oncepost_reconcile_lookups_total",
        "counter",
        "Reconcile lookups this worker ran, by what they saw (each launches one Chromium).",
        &lookups,
    );
    let mut runs: Vec<String> = [
        "published",
        "failed",
        "indeterminate",
        "parked",
        "not_yet",
        "skipped",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    runs.extend(
        c.queue_runs
            .keys()
            .filter(|k| !runs.contains(k))
            .cloned()
            .collect::<Vec<_>>(),
    );
    let runs: Vec<(String, f64)> = runs
        .iter()
        .map(|o| {
            (
                format!("{{outcome=\"{o}\"}}"),
                *c.queue_runs.get(o).unwrap_or(&0) as f64,
            )
        })
        .collect();
    family(
        &mut out,
        "oncepost_browser_launches_total",
        "counter",
        "Chromium launches this worker started (publishes and reconcile lookups; a refused launch counts).",
        &[(String::new(), crate::browser::launches() as f64)],
    );
    family(
        &mut out,
        "oncepost_publish_attempts_total",
        "counter",
        "Publish attempts this worker began (each claim that minted an attempt).",
        &[(String::new(), crate::publish::attempts_begun() as f64)],
    );
    let refused: Vec<(String, f64)> = crate::publish::refusals_by_reason()
        .into_iter()
        .map(|(reason, n)| (format!("{{reason=\"{reason}\"}}"), n as f64))
        .collect();
    family(
        &mut out,
        "oncepost_authorizations_refused_total",
        "counter",
        "Authorizations this worker's publishes were refused, by reason (not yet: paced, platform_busy, \
         account_leased, rate_interval; no: the others).",
        &refused,
    );
    family(
        &mut out,
        "oncepost_queue_runs_total",
        "counter",
        "Queued publishes this worker ran, by how they ended (not_yet: the authorization said wait; skipped: \
         another process had the intent).",
        &runs,
    );
    Ok(out)
}
