//! `oncepost demo`: the README's run command. Starts the bundled Fixturebook platform in-process on
//! 127.0.0.1 (posts kept under `<data-dir>/fixture-platform/`, so they survive the process), registers the
//! account `demo` if missing, publishes one fixed text through the full flow with the SQLite store, and
//! prints the timeline, the evidence paths and how many copies the platform holds. Run again, the same
//! intent is already published: nothing is pressed, and the platform still holds exactly one copy.
use std::time::Duration;

use crate::fixture_platform::{FixtureConfig, FixturePlatform};
use crate::publish::{self, PublishOptions, PublishRequest};
use crate::store::{NewAccount, StoreError, Timestamp};

use super::output::{errln, outln};
use super::publish::{exit_of, print_outcome, publish_once};
use super::{CliError, Context, Exit, LogFormat};

/// The contract the demo publishes with (the repository's `selectors/fixture.toml`, embedded).
const FIXTURE_CONTRACT: &str = include_str!("../../selectors/fixture.toml");

/// The one text the demo publishes.
pub const DEMO_TEXT: &str =
    "Hello from oncepost: this post goes out at most once ✓ (démo, 一度だけ)";

/// Arguments of `oncepost demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Print the publish outcome as one JSON object (plus `platform_copies`).
    #[arg(long)]
    pub json: bool,
}

/// Run the demo.
pub async fn run(ctx: &Context, args: DemoArgs, log: LogFormat) -> Result<Exit, CliError> {
    ctx.ensure_data_dir()?;
    let store = ctx.open_store().await?;
    match store
        .add_account(
            &NewAccount {
                name: "demo".into(),
                platform: "fixture".into(),
                min_interval_ms: 0,
                dup_window_ms: 24 * 3_600_000,
            },
            "demo",
            Timestamp::now(),
        )
        .await
    {
        Ok(_) | Err(StoreError::AccountExists(_)) => {}
        Err(e) => return Err(e.into()),
    }
    // Fixturebook shows the login name as a post's author: the demo logs in as `demo`.
    if store.account("demo").await?.handle.is_none() {
        store
            .set_account_handle("demo", Some("demo"), "demo", Timestamp::now())
            .await?;
    }
    let demo_dir = ctx.data_dir.join("demo");
    super::context::create_private_dir(&demo_dir)?;
    let contract_path = demo_dir.join("fixture.toml");
    if std::fs::read_to_string(&contract_path).ok().as_deref() != Some(FIXTURE_CONTRACT) {
        std::fs::write(&contract_path, FIXTURE_CONTRACT).map_err(|e| {
            CliError::internal(format!("cannot write {}: {e}", contract_path.display()))
        })?;
    }
    // The same port as the last run when it is free: an intent is bound to the origin it was published at,
    // and a rerun of an unsettled demo intent must find the same one.
    let port_file = demo_dir.join("port");
    let last_port = std::fs::read_to_string(&port_file)
        .ok()
        .and_then(|p| p.trim().parse::<u16>().ok());
    let mut config = FixtureConfig::new(ctx.data_dir.join(super::fixtures::FIXTURE_SUBDIR));
    config.port = last_port.unwrap_or(0);
    let platform = match FixturePlatform::start(config.clone()).await {
        Ok(p) => p,
        Err(_) if config.port != 0 => {
            config.port = 0;
            FixturePlatform::start(config).await.map_err(|e| {
                CliError::internal(format!("cannot start the fixture platform: {e}"))
            })?
        }
        Err(e) => {
            return Err(CliError::internal(format!(
                "cannot start the fixture platform: {e}"
            )));
        }
    };
    let _ = std::fs::write(&port_file, platform.addr().port().to_string());
    let base = platform.base_url();
    errln!("oncepost demo: Fixturebook serving at {base}");
    let req = PublishRequest {
        contract_path,
        account: "demo".into(),
        target: String::new(),
        text: DEMO_TEXT.into(),
        fields: Default::default(),
        base_url: base.clone(),
        data_dir: ctx.data_dir.clone(),
        owner: publish::owner_id(),
        login_url: Some(format!("{base}/login?account=demo")),
        options: PublishOptions::default(),
        source: None,
    };
    let outcome = publish_once(ctx, &req, true, Duration::from_secs(120), log).await;
    let copies = platform
        .posts()
        .iter()
        .filter(|p| {
            crate::identity::normalize_text(&p.text) == crate::identity::normalize_text(DEMO_TEXT)
        })
        .count();
    let arrivals = platform.stats().create_arrivals;
    platform.shutdown().await;
    let outcome = outcome?;
    if args.json {
        let mut v = serde_json::to_value(&outcome).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert("platform_copies".into(), copies.into());
            o.insert("create_requests_this_run".into(), arrivals.into());
        }
        outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        print_outcome(&outcome, false);
        outln!(
            "  platform: {copies} cop{} of this text on Fixturebook; {arrivals} create request(s) arrived during this run; publish pressed this run: {}",
            if copies == 1 { "y" } else { "ies" },
            if outcome.pressed { "yes" } else { "no" }
        );
    }
    Ok(exit_of(outcome.state))
}
