//! `oncepost mcp`: the Model Context Protocol server on stdio, for agents.
//!
//! Agents re-run tools on their own (a client retries a timed-out call, a new turn has a new tool-call id, a
//! reconnect replays a request, a resumed plan calls again). Every such call of `publish` with the same request
//! lands on the same intent by its delivery key, and is answered from the store: the publish path itself
//! refuses to press twice (the key, the claim and the before-byte authorization are the store's). The server
//! adds no memory of its own, so a new server, after a crash, answers exactly as the old one would.
//!
//! A publish runs in a task of its own: a call cancelled or a client gone mid-publish does not cut the run
//! short between the authorization and its outcome; the run settles the intent as it would for the CLI, and
//! the next call reports that state. The process ending (stdin closed, a kill) is a crash like any other: the
//! store's leases and the sweep make it a declared state (docs/states.md).
//!
//! No tool approves, redelivers, marks a post found, retries or parks: those are a person's decisions, made on
//! the review page or by the CLI and recorded with that person's name. The server's instructions tell the
//! agent so, and why.
//!
//! stdout carries the protocol and nothing else: the publish and probe paths print only to stderr here.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, ProgressNotificationParam, RequestMetaObject, ServerCapabilities,
    ServerConfig,
};
use rmcp::{Peer, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::publish::{exit_of_outcome, parse_fields, publish_reporting};
use super::{Cli, CliError, Context, Exit};
use crate::contract::Contract;
use crate::identity::{DeliveryKey, check_text_size};
use crate::publish::{PublishOptions, PublishOutcome, PublishRequest};
use crate::store::{Intent, Status};

/// Arguments of `oncepost mcp`.
#[derive(Debug, Clone, clap::Args)]
pub struct McpArgs {
    /// A directory of platform contracts (`*.toml`) that `list_platforms` shows (repeatable)
    /// [default: ./selectors when it exists].
    #[arg(long = "contracts", value_name = "DIR")]
    pub contracts: Vec<PathBuf>,
    /// The address of a running review page (`oncepost review --port P`), given to agents with every parked or
    /// indeterminate send so that they can hand it to a person.
    #[arg(long, value_name = "URL")]
    pub review_url: Option<String>,
    /// Serve streamable HTTP on 127.0.0.1:PORT (0: any free port) instead of stdio, for long-lived agents.
    /// Every request must carry `Authorization: Bearer TOKEN`, the token in `ONCEPOST_MCP_TOKEN` (at least
    /// 32 characters) or else a new one written to DATA_DIR/mcp-token (0600). Prints one JSON line:
    /// `{"url", "token_file"}`.
    #[arg(long, value_name = "PORT")]
    pub http: Option<u16>,
}

/// The shortest token `ONCEPOST_MCP_TOKEN` may hold.
const MIN_TOKEN_CHARS: usize = 32;

/// What the server tells every client at initialization (the agent's system context).
const INSTRUCTIONS: &str = "oncepost publishes to web platforms that have no API, at most once. \
`publish` is idempotent: calling it again with the same account, target, text and fields (a retry, a new \
turn, a reconnect, a new server) returns the stored outcome of the same intent and never sends again; its \
`key` identifies the intent for `intent_status`. States: `published` (done, with a permalink), `failed` \
(provably nothing was sent; a person may retry it), `indeterminate` (it may or may not be live: it is \
settled by looking at the platform, never by sending again), `parked` (a person decides, on the review \
page). For `indeterminate` and `parked` do not publish a variant of the same post to force it out: that \
may make a duplicate. Tell the person, with the review address the result gives. No tool approves, \
redelivers, retries or marks a post found: those are a person's decisions, recorded with their name. \
`probe` checks a compose page against its contract and never posts.";

/// How many screenshots a result carries as images (the rest are resource links).
const MAX_IMAGES: usize = 3;

/// The MCP server: the CLI's context and the contract directories.
#[derive(Clone)]
pub struct OncepostMcp {
    cli: Arc<Cli>,
    ctx: Arc<Context>,
    contract_dirs: Arc<Vec<PathBuf>>,
    review_url: Option<String>,
    tool_router: ToolRouter<Self>,
}

/// `publish` arguments: the CLI's.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PublishParams {
    /// Path of the platform contract (see `list_platforms`).
    pub contract: String,
    /// The platform's base URL, e.g. `https://app.example`.
    pub base_url: String,
    /// The publishing account (registered with `oncepost accounts add`).
    pub account: String,
    /// The post's text (the contract's body field).
    pub text: String,
    /// Other compose fields by the contract's field name, e.g. `{"title": "..."}`.
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
    /// Where the post goes, when not the account's own feed.
    #[serde(default)]
    pub target: String,
    /// A login URL opened before the compose page.
    #[serde(default)]
    pub login_url: Option<String>,
    /// Look for the post on the platform before pressing publish (default true).
    #[serde(default)]
    pub look_before_write: Option<bool>,
    /// The source the post rests on: its stable id (a canonical URL or an object id). With `source_body`, or
    /// with `source_url` to name a fetched source by another id.
    #[serde(default)]
    pub source_id: Option<String>,
    /// The source's body (HTML or text, at most 4 MiB); needs `source_id`.
    #[serde(default)]
    pub source_body: Option<String>,
    /// Fetch the source's body once from this URL (a plain GET, never the publishing browser profile).
    #[serde(default)]
    pub source_url: Option<String>,
    /// The claim the post makes about its source (default: the post text).
    #[serde(default)]
    pub claim: Option<String>,
}

/// `probe` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ProbeParams {
    /// Path of the platform contract.
    pub contract: String,
    /// The platform's base URL.
    pub base_url: String,
    /// Probe in this account's browser profile (its session); none: a throwaway profile.
    #[serde(default)]
    pub account: Option<String>,
    /// Type this text into every field (never pressed); none: fields are only checked.
    #[serde(default)]
    pub fill: Option<String>,
    /// Values for the compose URL's `{field:NAME}` (a url field such as a wiki page's name).
    #[serde(default)]
    pub fields: std::collections::BTreeMap<String, String>,
}

/// `intent_status` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StatusParams {
    /// The delivery key `publish` returned (64 hex digits).
    pub key: String,
}

/// `list_intents` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListParams {
    /// Only intents in this state: pending, authorized, published, failed, indeterminate, parked.
    #[serde(default)]
    pub state: Option<String>,
    /// Only this account's intents.
    #[serde(default)]
    pub account: Option<String>,
    /// At most this many, newest first (default 50, at most 500).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// A tool error with the CLI's stable exit code (docs/cli.md) and message.
fn tool_error(e: &CliError) -> CallToolResult {
    let message = crate::redact::text(&e.message);
    let mut r = CallToolResult::structured_error(json!({
        "code": e.exit as u8,
        "error": exit_name(e.exit),
        "message": message,
    }));
    r.content = vec![ContentBlock::text(format!(
        "error {} ({}): {message}",
        e.exit as u8,
        exit_name(e.exit)
    ))];
    r
}

/// The stable name of an exit code.
fn exit_name(e: Exit) -> &'static str {
    match e {
        Exit::Ok => "ok",
        Exit::Internal => "internal",
        Exit::BadInput => "bad_input",
        Exit::ProbeFailed => "probe_failed",
        Exit::Refused => "refused",
        Exit::StoreUnavailable => "store_unavailable",
        Exit::Indeterminate => "indeterminate",
        Exit::Failed => "failed",
        Exit::Parked => "parked",
        Exit::InProgressElsewhere => "in_progress_elsewhere",
        Exit::Interrupted => "interrupted",
    }
}

#[tool_router]
impl OncepostMcp {
    /// The server for `cli`'s store and data dir.
    pub fn new(cli: Arc<Cli>, ctx: Context, args: &McpArgs) -> Self {
        let mut dirs = args.contracts.clone();
        if dirs.is_empty() && Path::new("selectors").is_dir() {
            dirs.push(PathBuf::from("selectors"));
        }
        OncepostMcp {
            cli,
            ctx: Arc::new(ctx),
            contract_dirs: Arc::new(dirs),
            review_url: args
                .review_url
                .as_ref()
                .map(|u| u.trim_end_matches('/').to_string()),
            tool_router: Self::tool_router(),
        }
    }

    /// The platform contracts this server can use, each with its platform, version hash and fields.
    #[tool(annotations(
        title = "List platforms",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn list_platforms(&self) -> CallToolResult {
        let mut platforms = Vec::new();
        for dir in self.contract_dirs.iter() {
            let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
                Ok(rd) => rd
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                    .collect(),
                Err(e) => {
                    platforms.push(json!({ "path": dir, "error": e.to_string() }));
                    continue;
                }
            };
            files.sort();
            for path in files {
                platforms.push(match Contract::load(&path) {
                    Ok(c) => json!({
                        "path": path,
                        "platform": c.platform,
                        "format": c.format,
                        "version": c.hash(),
                        "description": c.description,
                        "body_field": c.body_field(),
                        "fields": c.compose.fields.iter().map(|f| json!({
                            "name": f.name, "kind": f.kind, "required": f.required,
                        })).collect::<Vec<_>>(),
                    }),
                    Err(e) => json!({ "path": path, "error": e.to_string() }),
                });
            }
        }
        CallToolResult::structured(json!({ "platforms": platforms }))
    }

    /// Check a compose page against its contract without any risk of posting: the page is opened behind
    /// oncepost's network door, fields are checked (and filled with `fill`), the publish control is checked
    /// and never pressed. Returns the report and the annotated screenshot.
    #[tool(annotations(
        title = "Probe a compose page",
        read_only_hint = true,
        open_world_hint = true
    ))]
    async fn probe(&self, Parameters(p): Parameters<ProbeParams>) -> CallToolResult {
        match self.run_probe(p).await {
            Ok(r) => r,
            Err(e) => tool_error(&e),
        }
    }

    /// Publish one post at most once and read it back. Idempotent: the same account, target, text and
    /// fields always map to the same intent, and a repeated call returns its stored outcome without sending
    /// again. Returns the key, the state, the permalink, screenshots and, for parked or indeterminate sends,
    /// what happens next and where a person reviews it.
    #[tool(annotations(
        title = "Publish once",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = true
    ))]
    async fn publish(
        &self,
        Parameters(p): Parameters<PublishParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> CallToolResult {
        match self.run_publish(p, meta, peer).await {
            Ok(r) => r,
            Err(e) => tool_error(&e),
        }
    }

    /// One intent by its key: its state, permalink, what happens next and where a person reviews it.
    #[tool(annotations(
        title = "Intent status",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn intent_status(&self, Parameters(p): Parameters<StatusParams>) -> CallToolResult {
        match self.status(&p.key).await {
            Ok(r) => r,
            Err(e) => tool_error(&e),
        }
    }

    /// Intents, newest first, by state and account.
    #[tool(annotations(title = "List intents", read_only_hint = true, open_world_hint = false))]
    async fn list_intents(&self, Parameters(p): Parameters<ListParams>) -> CallToolResult {
        match self.list(p).await {
            Ok(r) => r,
            Err(e) => tool_error(&e),
        }
    }
}

impl OncepostMcp {
    async fn run_probe(&self, p: ProbeParams) -> Result<CallToolResult, CliError> {
        let contract = Contract::load(Path::new(&p.contract))
            .map_err(|e| CliError::bad_input(e.to_string()))?;
        if let Some(k) = p
            .fields
            .keys()
            .find(|k| !contract.compose.fields.iter().any(|f| &f.name == *k))
        {
            return Err(CliError::bad_input(format!(
                "fields: the contract has no field {k:?}"
            )));
        }
        let missing = contract.missing_value_fields(&p.fields);
        if !missing.is_empty() {
            return Err(CliError::bad_input(format!(
                "the contract needs fields {missing:?} (they name the page to post on, or the choice a step picks)"
            )));
        }
        let plan = contract
            .probe_plan_for(&p.base_url, &p.fields)
            .map_err(|e| CliError::bad_input(e.to_string()))?;
        if let Some(a) = &p.account {
            crate::identity::check_account_name(a)
                .map_err(|e| CliError::bad_input(e.to_string()))?;
        }
        let shot_dir = tempfile::tempdir().map_err(|e| CliError::internal(e.to_string()))?;
        let shot = shot_dir.path().join("probe.png");
        let args = super::probe::ProbeArgs {
            contract: PathBuf::from(&p.contract),
            base_url: p.base_url.clone(),
            account: p.account.clone(),
            cookies: None,
            fields: Vec::new(),
            json: false,
            screenshot: Some(shot.clone()),
            fill: p.fill.clone(),
            observe_ms: 1000,
            check_rounds: 1,
            call_timeout_ms: 10_000,
        };
        let report = super::probe::probe(&self.cli, &args, &plan, false)
            .await
            .map_err(|e| {
                let message = format!("{e:#}");
                if e.downcast_ref::<crate::browser::BrowserError>()
                    .is_some_and(|b| {
                        matches!(b, crate::browser::BrowserError::ChromiumMissing { .. })
                    })
                {
                    CliError::bad_input(message)
                } else {
                    CliError::internal(message)
                }
            })?;
        let passed = report.verdict == crate::browser::ProbeVerdict::Pass;
        let mut v = serde_json::to_value(&report).map_err(|e| CliError::internal(e.to_string()))?;
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "code".into(),
                json!(if passed { 0 } else { Exit::ProbeFailed as u8 }),
            );
        }
        let mut r = CallToolResult::structured(v);
        if let Ok(png) = std::fs::read(&shot) {
            r.content.push(image(&png));
        }
        Ok(r)
    }

    async fn run_publish(
        &self,
        p: PublishParams,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, CliError> {
        super::context::account_arg(&p.account)?;
        check_text_size("the post text", &p.text).map_err(CliError::bad_input)?;
        // The same checks as `--field K=V`, on the same form.
        let flat: Vec<String> = p.fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let fields = parse_fields(&flat)?;
        let options = PublishOptions {
            look_before_write: p.look_before_write.unwrap_or(true),
            ..PublishOptions::default()
        };
        let source = super::publish::source_of(
            super::publish::SourceAsk {
                id: p.source_id.as_deref(),
                file: None,
                body: p.source_body.as_deref(),
                url: p.source_url.as_deref(),
                claim: p.claim.as_deref(),
            },
            &p.text,
        )
        .await?;
        let req = PublishRequest {
            contract_path: PathBuf::from(&p.contract),
            account: p.account,
            target: p.target,
            text: p.text,
            fields,
            base_url: p.base_url,
            data_dir: self.ctx.data_dir.clone(),
            owner: crate::publish::owner_id(),
            login_url: p.login_url,
            options,
            source,
        };
        // Its own task: a cancelled call or a vanished client does not cut the run short mid-publish.
        let ctx = self.ctx.clone();
        let (steps_tx, mut steps) = tokio::sync::mpsc::unbounded_channel();
        let mut run = tokio::spawn(async move { publish_reporting(&ctx, &req, steps_tx).await });
        // Progress: one notification per finished step of the publish ("looked before writing", "pressed",
        // ...), and one a second while a step runs long (a slow page, the success wait), numbered in order.
        let token = meta.get_progress_token();
        let t0 = Instant::now();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.tick().await;
        let mut sent = 0u32;
        let outcome = loop {
            let message = tokio::select! {
                done = &mut run => break done,
                Some(s) = steps.recv() => {
                    tick.reset();
                    format!("publishing: {} ({} ms)", s.step, s.took_ms)
                }
                _ = tick.tick() => format!("publishing: {} s", t0.elapsed().as_secs()),
            };
            if let Some(t) = &token {
                sent += 1;
                let _ = peer
                    .notify_progress(
                        ProgressNotificationParam::new(t.clone(), f64::from(sent))
                            .with_message(message),
                    )
                    .await;
            }
        };
        let outcome = outcome
            .map_err(|e| CliError::internal(format!("the publish task ended abnormally: {e}")))??;
        self.outcome_result(&outcome).await
    }

    /// The result of a publish: the outcome as the CLI's `--json` gives it (without the timeline), the code
    /// the CLI would exit with, the next step, screenshots as images and the rest as resource links.
    async fn outcome_result(&self, o: &PublishOutcome) -> Result<CallToolResult, CliError> {
        let key = DeliveryKey::parse(&o.key)
            .ok_or_else(|| CliError::internal(format!("odd key {}", o.key)))?;
        let intent = self.ctx.open_store().await?.intent(&key).await?;
        let mut v = json!({
            "key": o.key,
            "state": o.state,
            "code": exit_of_outcome(o) as u8,
            "pressed": o.pressed,
            "created": o.created,
            "platform_id": o.platform_id,
            "permalink": o.permalink,
            "summary": o.summary,
            "steps": o.steps,
            "evidence": o.evidence,
        });
        // The send showed the account's login here ended: the account is now set aside on this host.
        if let (Some(why), Some(m)) = (&o.signed_out, v.as_object_mut()) {
            m.insert("signed_out".into(), json!(why));
        }
        self.add_next(&mut v, &intent);
        let mut r = CallToolResult::structured(v);
        let mut images = 0;
        for item in &o.evidence {
            let path = self.ctx.data_dir.join(&item.path);
            if item.media_type == "image/png"
                && images < MAX_IMAGES
                && let Ok(png) = std::fs::read(&path)
            {
                r.content.push(image(&png));
                images += 1;
                continue;
            }
            let link = rmcp::model::Resource::new(format!("file://{}", path.display()), &item.kind)
                .with_mime_type(&item.media_type)
                .with_size(item.bytes);
            r.content.push(ContentBlock::resource_link(link));
        }
        Ok(r)
    }

    /// What happens next, and for a send a person must look at, the review address.
    fn add_next(&self, v: &mut Value, intent: &Intent) {
        let Some(o) = v.as_object_mut() else {
            return;
        };
        if intent.state != Status::Published {
            let next = intent.next_step();
            o.insert(
                "next".into(),
                json!({ "says": next.says, "command": next.command }),
            );
        }
        if matches!(intent.state, Status::Parked | Status::Indeterminate) {
            let k = intent.key.as_str();
            o.insert(
                "review".into(),
                match &self.review_url {
                    Some(u) => json!({ "url": format!("{u}/intent/{k}") }),
                    None => json!({
                        "url": null,
                        "how": format!("a person runs `oncepost review` and opens /intent/{k} on the address it prints"),
                    }),
                },
            );
        }
    }

    async fn status(&self, key: &str) -> Result<CallToolResult, CliError> {
        let key = DeliveryKey::parse(key)
            .ok_or_else(|| CliError::bad_input("a key is 64 lowercase hex digits"))?;
        let intent = self.ctx.open_store().await?.intent(&key).await?;
        let mut v = serde_json::to_value(&intent).map_err(|e| CliError::internal(e.to_string()))?;
        self.add_next(&mut v, &intent);
        Ok(CallToolResult::structured(v))
    }

    async fn list(&self, p: ListParams) -> Result<CallToolResult, CliError> {
        let state = match &p.state {
            Some(s) => Some(Status::from_label(s).ok_or_else(|| {
                CliError::bad_input(format!(
                    "state {s:?}: one of pending, authorized, published, failed, indeterminate, parked"
                ))
            })?),
            None => None,
        };
        let limit = p.limit.unwrap_or(50).clamp(1, 500) as usize;
        let store = self.ctx.open_store().await?;
        // The account filter is applied to a bounded window of the newest intents.
        let all = store.intents(state, 10_000).await?;
        let intents: Vec<Value> = all
            .iter()
            .filter(|i| p.account.as_ref().is_none_or(|a| &i.account == a))
            .take(limit)
            .map(|i| {
                json!({
                    "key": i.key.as_str(), "state": i.state, "account": i.account,
                    "platform": i.platform, "target": i.target, "permalink": i.permalink,
                    "created_at": i.created_at,
                })
            })
            .collect();
        Ok(CallToolResult::structured(json!({ "intents": intents })))
    }
}

fn image(png: &[u8]) -> ContentBlock {
    ContentBlock::image(
        base64::engine::general_purpose::STANDARD.encode(png),
        "image/png",
    )
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for OncepostMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions(INSTRUCTIONS)
    }
}

/// Serve MCP on stdin/stdout until the client closes it, or over HTTP (`--http`) until SIGINT/SIGTERM.
pub async fn run(cli: Arc<Cli>, args: McpArgs) -> Result<Exit, CliError> {
    let ctx = Context::from_cli(&cli)?;
    ctx.ensure_data_dir()?;
    if let Some(port) = args.http {
        return serve_http(cli, ctx, &args, port).await;
    }
    let server = OncepostMcp::new(cli, ctx, &args);
    let service = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| CliError::internal(format!("MCP initialization failed: {e}")))?;
    service
        .waiting()
        .await
        .map_err(|e| CliError::internal(format!("MCP server: {e}")))?;
    Ok(Exit::Ok)
}

/// The bearer token of the HTTP mode: `ONCEPOST_MCP_TOKEN`, or a new one in DATA_DIR/mcp-token (0600).
fn http_token(ctx: &Context) -> Result<(String, Option<PathBuf>), CliError> {
    if let Ok(t) = std::env::var("ONCEPOST_MCP_TOKEN") {
        if t.chars().count() < MIN_TOKEN_CHARS || t.chars().any(char::is_whitespace) {
            return Err(CliError::bad_input(format!(
                "ONCEPOST_MCP_TOKEN must be at least {MIN_TOKEN_CHARS} characters without spaces"
            )));
        }
        return Ok((t, None));
    }
    let token = crate::secret::random_hex::<32>().map_err(|e| CliError::internal(e.to_string()))?;
    let path = ctx.data_dir.join("mcp-token");
    crate::durable::write_atomic(&path, token.as_bytes())
        .map_err(|e| CliError::internal(format!("cannot write {}: {e}", path.display())))?;
    Ok((token, Some(path)))
}

/// Streamable HTTP on loopback behind the bearer token.
async fn serve_http(
    cli: Arc<Cli>,
    ctx: Context,
    args: &McpArgs,
    port: u16,
) -> Result<Exit, CliError> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let (token, token_file) = http_token(&ctx)?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| CliError::bad_input(format!("cannot listen on 127.0.0.1:{port}: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| CliError::internal(e.to_string()))?;
    let server = OncepostMcp::new(cli, ctx, args);
    let config = StreamableHttpServerConfig::default().with_allowed_hosts([
        "127.0.0.1".to_string(),
        format!("127.0.0.1:{}", addr.port()),
    ]);
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let token = Arc::new(token);
    let guard = move |req: axum::extract::Request, next: axum::middleware::Next| {
        let token = token.clone();
        async move {
            let given = req
                .headers()
                .get(axum::http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or("");
            if crate::secret::same(given.as_bytes(), token.as_bytes()) {
                next.run(req).await
            } else {
                axum::response::IntoResponse::into_response((
                    axum::http::StatusCode::UNAUTHORIZED,
                    "a bearer token is required (Authorization: Bearer TOKEN)",
                ))
            }
        }
    };
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(guard));
    super::output::outln!(
        "{}",
        json!({ "url": format!("http://{addr}/mcp"), "token_file": token_file })
    );
    axum::serve(listener, app)
        .with_graceful_shutdown(until_signal())
        .await
        .map_err(|e| CliError::internal(format!("MCP HTTP server: {e}")))?;
    Ok(Exit::Ok)
}

/// Resolves on SIGINT or SIGTERM.
async fn until_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
