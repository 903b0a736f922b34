//! Request routing: pages, the create API (with fault modes), hostile sinks and the admin API.
//!
//! The first thing [`handle`] does with a write is count it; everything else (fault handling, body
//! reading, validation) comes after, so the counters show every arrival.
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::conn::{ConnAction, ConnControl};
use super::editors;
use super::fault::{Fault, FaultMode};
use super::pages::{self, Viewer};
use super::{Shared, Stats, TokenPolicy};

/// Largest request body accepted (the create route and the sinks).
const MAX_BODY_BYTES: usize = 1024 * 1024;
/// A client must deliver the whole body within this long.
const BODY_READ_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest post text accepted, in characters.
const MAX_TEXT_CHARS: usize = 10_000;
/// Longest account name accepted by `/login`.
const MAX_ACCOUNT_CHARS: usize = 64;
/// Account shown when there is no (known) session cookie.
pub(crate) const ANONYMOUS: &str = "anonymous";
/// Session cookie name (agreed).
const SESSION_COOKIE: &str = "fb_session";
/// What `readback-mismatch` appends to the stored text.
pub(crate) const MISMATCH_SUFFIX: &str = " (edited)";

type Resp = Response<Full<Bytes>>;

/// Serve one request. `control` lets the create route end the connection instead of answering.
pub(crate) async fn handle(
    req: Request<Incoming>,
    shared: Arc<Shared>,
    control: Arc<ConnControl>,
) -> Resp {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let is_read = matches!(method, Method::GET | Method::HEAD | Method::OPTIONS);
    let is_admin = path.starts_with("/__admin/");
    // `POST /graphql` is counted by what its body asks (see `graphql`): a query and the create share it.
    if !is_read && !is_admin && path != "/graphql" {
        let mut stats = shared.lock_stats();
        if (method == Method::POST
            && (path == "/api/posts" || path == "/forum/posts" || path == "/api/drafts/publish"))
            || (method == Method::PUT && path.starts_with("/api/items/"))
        {
            stats.create_arrivals += 1;
        } else {
            stats.record_other_write(format!("{method} {path}"));
        }
    }
    let session = session_cookie(&req);
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    // The HTML pages (each embeds a CSRF token); not the login link, assets or APIs.
    let renders_page = method == Method::GET
        && matches!(
            segments.as_slice(),
            [""] | ["compose"]
                | ["p", _]
                | ["p", _, _]
                | ["items", _]
                | ["search"]
                | ["hostile", _]
        )
        && !matches!(segments.last(), Some(&"sw.js") | Some(&"sw-outbox.js"));
    if renders_page
        && shared.tokens == TokenPolicy::PerPage
        && segments.first() == Some(&"search")
        && let Some(ms) = query_param(&req, "slow_ms").and_then(|v| v.parse::<u64>().ok())
    {
        tokio::time::sleep(Duration::from_millis(ms.min(5_000))).await;
    }
    // The data request of a page asked for with `?spa=1` (see `spa_if_asked`): answered after a while, as
    // an app's API is.
    if renders_page && query_param(&req, "spa_data").as_deref() == Some("1") {
        tokio::time::sleep(SPA_DATA_DELAY).await;
    }
    // Under per-page tokens a page rendered for a visitor without a (known) session opens one, as such
    // frameworks do: two pages loaded at once by a new visitor get two sessions, and the cookie jar keeps
    // whichever answer came last.
    let mut minted = None;
    let mut session = session;
    if shared.tokens == TokenPolicy::PerPage
        && renders_page
        && !session
            .as_deref()
            .is_some_and(|s| shared.lock_state().sessions.contains_key(s))
        && let Ok(fresh) = crate::secret::random_hex::<16>()
    {
        shared
            .lock_state()
            .sessions
            .insert(fresh.clone(), ANONYMOUS.to_owned());
        session = Some(fresh.clone());
        minted = Some(fresh);
    }
    let mut viewer = viewer_for(&shared, session.as_deref());
    if shared.tokens == TokenPolicy::PerPage {
        viewer.csrf = per_page_token(&shared, session.as_deref(), renders_page);
    }
    let mut resp = match (&method, segments.as_slice()) {
        (&Method::GET, [""]) => {
            let posts = shared.lock_state().newest_first();
            html(StatusCode::OK, pages::feed(&viewer, &posts))
        }
        (&Method::GET, ["compose"]) => {
            // The variants the query asks for, each script added before `</body>` in this order.
            let variants: [fn(&Request<Incoming>, String) -> String; 8] = [
                ignore_clicks_while_hidden_if_asked,
                maxlength_if_asked,
                rewrite_if_asked,
                blocks_if_asked,
                model_editor_if_asked,
                steal_focus_if_asked,
                listen_on_focus_if_asked,
                hydrate_late_if_asked,
            ];
            let page = variants
                .iter()
                .fold(pages::compose(&viewer), |page, add| add(&req, page));
            html(StatusCode::OK, page)
        }
        (&Method::GET, ["login"]) => login(&req, &shared).await,
        // `/p/{id}/{anything}`: the same permalink, as apps whose post URLs end in a slug of the title serve it.
        (&Method::GET, ["p", id] | ["p", id, _]) => {
            // `?lag_ms=N`: the post's page is not there until the post is N ms old (a platform's replica
            // behind its primary), as the search's index lags.
            let lag = lag_ms(&req).lag_ms;
            let post = shared
                .lock_state()
                .post(id)
                .filter(|p| super::posts::now_ms() - p.created_ms >= lag)
                .cloned();
            match post {
                Some(p) => html(
                    StatusCode::OK,
                    as_asked(&req, alert_if_asked(&req, pages::permalink(&viewer, &p))),
                ),
                None => html(StatusCode::NOT_FOUND, pages::not_found(&viewer, &path)),
            }
        }
        // An item page by its title (the newest post with it): the title-keyed variant's permalink.
        (&Method::GET, ["items", title]) => {
            let title = decode_segment(title);
            let post = shared
                .lock_state()
                .newest_first()
                .into_iter()
                .find(|p| p.title.as_deref() == Some(title.as_str()));
            match post {
                Some(p) => html(StatusCode::OK, pages::permalink(&viewer, &p)),
                None => html(StatusCode::NOT_FOUND, pages::not_found(&viewer, &path)),
            }
        }
        (&Method::GET, ["search"]) => {
            let q = query_param(&req, "q").unwrap_or_default();
            let results = search(&shared, &q, lag_ms(&req));
            html(
                StatusCode::OK,
                as_asked(
                    &req,
                    reload_if_asked(
                        &req,
                        alert_if_asked(&req, pages::search(&viewer, &q, &results)),
                    ),
                ),
            )
        }
        // A hostile search: the real results, each without an id and linked to `?link=` (a `javascript:`
        // URL, another site's page); the read-back must refuse the link, never record it.
        (&Method::GET, ["hostile", "search"]) => {
            let q = query_param(&req, "q").unwrap_or_default();
            let link = query_param(&req, "link").unwrap_or_default();
            let results = search(&shared, &q, lag_ms(&req));
            match pages::HostileLink::from_param(&link) {
                Some(link) => html(
                    StatusCode::OK,
                    pages::hostile_search(&viewer, &q, &results, link),
                ),
                None => html(StatusCode::NOT_FOUND, pages::not_found(&viewer, &path)),
            }
        }
        (&Method::GET, ["static", "style.css"]) => {
            asset("text/css; charset=utf-8", pages::STYLE_CSS)
        }
        (&Method::GET, ["static", "compose.js"]) => {
            asset("text/javascript; charset=utf-8", pages::COMPOSE_JS)
        }
        (&Method::GET, ["editors", "static", file]) => match editors::asset(file).await {
            Ok((content_type, body)) => respond(StatusCode::OK, content_type, body),
            Err(why) => json(StatusCode::NOT_FOUND, &serde_json::json!({ "error": why })),
        },
        (&Method::GET, ["editors", name]) => match editors::page(name, pages::compose(&viewer)) {
            Some(page) => html(StatusCode::OK, page),
            None => html(StatusCode::NOT_FOUND, pages::not_found(&viewer, &path)),
        },
        (&Method::GET, ["hostile", "sw.js"]) => {
            asset("text/javascript; charset=utf-8", pages::HOSTILE_SW_JS)
        }
        (&Method::GET, ["hostile", "sw-outbox.js"]) => asset(
            "text/javascript; charset=utf-8",
            pages::HOSTILE_SW_OUTBOX_JS,
        ),
        (&Method::GET, ["hostile", name]) => match pages::hostile(&viewer, name) {
            Some(page) => html(StatusCode::OK, page),
            None => html(StatusCode::NOT_FOUND, pages::not_found(&viewer, &path)),
        },
        (&Method::GET, ["__lab", "resend"]) => html(StatusCode::OK, pages::lab_resend(&viewer)),
        // A source article: the same text on every fetch, its chrome different every time.
        (&Method::GET, ["articles", id]) => match shared.article(&decode_segment(id)) {
            Some(a) => html(StatusCode::OK, pages::article(&viewer, &a)),
            None => html(StatusCode::NOT_FOUND, pages::not_found(&viewer, &path)),
        },
        (&Method::PUT, ["__admin", "articles", id]) => {
            let id = decode_segment(id);
            match read_body(req)
                .await
                .ok()
                .and_then(|b| serde_json::from_slice::<pages::SourceArticle>(&b).ok())
            {
                Some(a) => {
                    shared.set_article(&id, a);
                    json(StatusCode::OK, &serde_json::json!({"ok": true}))
                }
                None => json(
                    StatusCode::BAD_REQUEST,
                    &serde_json::json!({"error": "expected {\"title\": \"...\", \"paragraphs\": [\"...\"]}"}),
                ),
            }
        }
        (&Method::GET, ["api", "pixel"]) => {
            // A "read" that sends data: counted as a write when it carries any `d`.
            if query_param(&req, "d").is_some_and(|d| !d.is_empty()) {
                shared
                    .lock_stats()
                    .record_other_write("GET /api/pixel".into());
            }
            respond(StatusCode::NO_CONTENT, "image/gif", Bytes::new())
        }
        // An old API this platform still honours: a post made by a GET (`/hostile/resend-get` sends one on the
        // press). Counted under other writes as `GET /api/create` and stored as the session's account.
        (&Method::GET, ["api", "create"]) => {
            let text = query_param(&req, "text").unwrap_or_default();
            shared
                .lock_stats()
                .record_other_write("GET /api/create".into());
            if text.trim().is_empty() {
                json(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    &serde_json::json!({"error": "text is empty"}),
                )
            } else {
                let account = match &session {
                    Some(_) if viewer.account != ANONYMOUS => viewer.account.clone(),
                    _ => ANONYMOUS.to_owned(),
                };
                let post = shared.lock_state().add_post(text, None, account);
                if let Err(e) = shared.persist().await {
                    tracing::error!(error = %e, "fixture platform could not persist a post");
                }
                json(
                    StatusCode::CREATED,
                    &serde_json::json!({"id": post.id, "url": format!("/p/{}", post.id)}),
                )
            }
        }
        (&Method::GET, ["api", "live"]) => {
            let account = match session {
                Some(_) if viewer.account != ANONYMOUS => viewer.account.clone(),
                _ => ANONYMOUS.to_owned(),
            };
            super::live::upgrade(req, shared.clone(), account)
        }
        (&Method::GET, ["api", "posts"]) => {
            let posts = shared.lock_state().newest_first();
            json(StatusCode::OK, &serde_json::json!(posts_json(&posts)))
        }
        (&Method::POST, ["api", "posts"]) => {
            // The `secrets` variant's create request gets credentials planted in its answer.
            let plant = super::secrets::wants(req.headers());
            let redirect = query_param(&req, "redirect").as_deref() == Some("created");
            let r = create(req, shared.clone(), control, session, viewer, None).await;
            let r = if redirect {
                redirect_to_created(r, &shared).await
            } else {
                r
            };
            if plant {
                super::secrets::plant_into(r).await
            } else {
                r
            }
        }
        (&Method::POST, ["forum", "posts"]) => {
            form_post(req, shared, control, session, viewer).await
        }
        // The title-keyed create of `/hostile/title-put`: `PUT /api/items/{title}` with `{"text"}`.
        (&Method::POST, ["graphql"]) => graphql(req, shared, control, session, viewer).await,
        (&Method::PUT, ["api", "items", title]) => {
            let title = decode_segment(title);
            create(req, shared, control, session, viewer, Some(title)).await
        }
        // The create of `/compose?by_reference=1`: the session's last saved draft made a post, the request
        // itself carrying nothing of it.
        (&Method::POST, ["api", "drafts", "publish"]) => {
            let csrf_ok = csrf_ok(&req, &viewer);
            if shared.fault().mode == FaultMode::ResetBeforeRead {
                control.end(ConnAction::Reset);
                return std::future::pending().await;
            }
            let _ = read_body(req).await;
            let draft = shared
                .drafts
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(session.as_deref().unwrap_or_default())
                .cloned()
                .unwrap_or_default();
            create_from(&draft, csrf_ok, shared, control, session, viewer, None).await
        }
        // A draft synced from another device, once (`/compose?synced_draft=...` polls for it).
        (&Method::GET, ["api", "drafts", "synced"]) => json(
            StatusCode::OK,
            &serde_json::json!({ "text": shared.take_synced_draft() }),
        ),
        (&Method::PUT, ["__admin", "synced-draft"]) => {
            let text = read_body(req).await.ok().and_then(|b| {
                serde_json::from_slice::<serde_json::Value>(&b)
                    .ok()?
                    .get("text")?
                    .as_str()
                    .map(str::to_owned)
            });
            match text {
                Some(t) => {
                    shared.set_synced_draft(&t);
                    json(StatusCode::OK, &serde_json::json!({"ok": true}))
                }
                None => json(
                    StatusCode::BAD_REQUEST,
                    &serde_json::json!({"error": "expected {\"text\": \"...\"}"}),
                ),
            }
        }
        (&Method::PUT, ["api", "drafts"]) => {
            if let Ok(body) = read_body(req).await {
                shared
                    .drafts
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(session.clone().unwrap_or_default(), body);
            }
            json(StatusCode::OK, &serde_json::json!({"ok": true}))
        }
        (&Method::POST, ["api", "drafts"])
        | (&Method::PUT, ["api", "ui-state"])
        | (&Method::POST, ["api", "sink", _]) => {
            // Drain (bounded) so keep-alive connections stay usable; the content does not matter.
            let _ = read_body(req).await;
            json(StatusCode::OK, &serde_json::json!({"ok": true}))
        }
        (&Method::GET, ["__admin", "stats"]) => {
            let stats: Stats = shared.lock_stats().clone();
            json(StatusCode::OK, &serde_json::json!(stats))
        }
        (&Method::GET, ["__admin", "fault"]) => {
            json(StatusCode::OK, &serde_json::json!(shared.fault()))
        }
        (&Method::POST, ["__admin", "fault"]) => set_fault(req, &shared).await,
        (&Method::POST, ["__admin", "reset"]) => reset(&shared).await,
        (_, ["" | "compose" | "login" | "p" | "search" | "__lab" | "hostile" | "static"])
        | (_, ["p" | "hostile" | "static" | "__lab", _])
        | (_, ["api", "posts"])
        | (_, ["__admin", _]) => {
            let mut r = json(
                StatusCode::METHOD_NOT_ALLOWED,
                &serde_json::json!({"error": format!("{method} is not allowed on {path}")}),
            );
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST"));
            r
        }
        _ => {
            if is_read {
                html(StatusCode::NOT_FOUND, pages::not_found(&viewer, &path))
            } else {
                json(
                    StatusCode::NOT_FOUND,
                    &serde_json::json!({"error": "no such route"}),
                )
            }
        }
    };
    if let Some(cookie) = minted
        && let Ok(v) = HeaderValue::from_str(&format!(
            "{SESSION_COOKIE}={cookie}; HttpOnly; Path=/; SameSite=Lax"
        ))
    {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    resp
}

/// The create request body.
#[derive(Debug, Deserialize)]
struct CreateBody {
    text: String,
    #[serde(default)]
    title: Option<String>,
    /// `"draft"` saves a draft instead (`/hostile/one-endpoint`); absent or anything else publishes.
    #[serde(default)]
    status: Option<String>,
    /// The category a compose page with one sends (`/compose?category=1|list`).
    #[serde(default)]
    category: Option<String>,
    /// Who may see it (`/compose?visibility=1`).
    #[serde(default)]
    visibility: Option<String>,
    /// Earlier posts an outbox sends inside this create (`/compose?outbox=batch`): each is made too, first,
    /// as a platform taking a queue in one call does.
    #[serde(default)]
    outbox: Vec<OutboxPost>,
}

/// One earlier post inside a create request's `outbox`.
#[derive(Debug, Deserialize)]
struct OutboxPost {
    text: String,
    #[serde(default)]
    title: Option<String>,
}

/// `POST /api/posts`: the one write that publishes. Fault modes apply here only.
async fn create(
    req: Request<Incoming>,
    shared: Arc<Shared>,
    control: Arc<ConnControl>,
    session: Option<String>,
    viewer: Viewer,
    title_from_path: Option<String>,
) -> Resp {
    let fault: Fault = shared.fault();
    if fault.mode == FaultMode::ResetBeforeRead {
        control.end(ConnAction::Reset);
        return std::future::pending().await;
    }
    let csrf_ok = csrf_ok(&req, &viewer);
    let body = match read_body(req).await {
        Ok(b) => b,
        Err(e) => return json(StatusCode::BAD_REQUEST, &serde_json::json!({"error": e})),
    };
    create_from(
        &body,
        csrf_ok,
        shared,
        control,
        session,
        viewer,
        title_from_path,
    )
    .await
}

/// `POST /forum/posts`, the create of `/hostile/multipart-form`: a classic server-rendered form's POST (a
/// navigation), its body as the browser encodes the form (`multipart/form-data`, or urlencoded), the CSRF
/// token in its `_csrf` field. Made as `POST /api/posts` makes a post (a create arrival, fault modes applied);
/// a made post is answered `303` to its page, as such forms are; anything else as it is.
async fn form_post(
    req: Request<Incoming>,
    shared: Arc<Shared>,
    control: Arc<ConnControl>,
    session: Option<String>,
    viewer: Viewer,
) -> Resp {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = match read_body(req).await {
        Ok(b) => b,
        Err(e) => return json(StatusCode::BAD_REQUEST, &serde_json::json!({"error": e})),
    };
    let fields = match super::form_post::fields(content_type.as_deref(), &body) {
        Ok(f) => f,
        Err(e) => return json(StatusCode::BAD_REQUEST, &serde_json::json!({"error": e})),
    };
    let csrf_ok = fields
        .get("_csrf")
        .is_some_and(|t| crate::secret::same(t.as_bytes(), viewer.csrf.as_bytes()));
    // A textarea's line breaks arrive as CRLF in a form body (HTML's form encoding); stored as typed.
    let text = fields
        .get("text")
        .map(|t| t.replace("\r\n", "\n"))
        .unwrap_or_default();
    let as_json = serde_json::json!({ "text": text, "title": fields.get("title") });
    let r = create_from(
        as_json.to_string().as_bytes(),
        csrf_ok,
        shared,
        control,
        session,
        viewer,
        None,
    )
    .await;
    match created_id(r).await {
        Ok(id) => see_other(&format!("/p/{id}")),
        Err(r) => r,
    }
}

/// The id of the post a create answer (`201 {"id", ...}`) made, or that answer itself when it made none.
async fn created_id(r: Resp) -> Result<String, Resp> {
    if r.status() != StatusCode::CREATED {
        return Err(r);
    }
    let Ok(body) = r.into_body().collect().await.map(|b| b.to_bytes());
    Ok(serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["id"].as_str().map(str::to_owned))
        .unwrap_or_default())
}

/// `303 See Other` to `location`, as a server-rendered form's create is answered.
fn see_other(location: &str) -> Resp {
    let mut r = respond(
        StatusCode::SEE_OTHER,
        "text/plain; charset=utf-8",
        Bytes::new(),
    );
    if let Ok(v) = HeaderValue::from_str(location) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// Whether the request carries the viewer's CSRF token in `x-csrf-token`.
fn csrf_ok(req: &Request<Incoming>, viewer: &Viewer) -> bool {
    req.headers()
        .get("x-csrf-token")
        .is_some_and(|t| crate::secret::same(t.as_bytes(), viewer.csrf.as_bytes()))
}

/// The operation a `POST /graphql` body names, and its variables.
#[derive(Debug, Deserialize)]
struct GraphqlOp {
    #[serde(rename = "operationName")]
    operation_name: String,
    #[serde(default)]
    variables: serde_json::Value,
}

/// `POST /graphql`: one endpoint and one method for the reads and the create, told apart only by the
/// `operationName` of the JSON body, as GraphQL apps do (`/compose?graphql=1`, pages with `?spa=graphql`).
/// `Viewer` (the compose page's account) and `Posts` (a page's posts, answered after [`SPA_DATA_DELAY`]) read;
/// the platform cannot tell them from writes by their method, so they are counted under other writes as
/// `POST /graphql NAME`. `CreatePost` creates from its `variables` as `POST /api/posts` does (a create
/// arrival, fault modes applied).
async fn graphql(
    req: Request<Incoming>,
    shared: Arc<Shared>,
    control: Arc<ConnControl>,
    session: Option<String>,
    viewer: Viewer,
) -> Resp {
    let csrf_ok = csrf_ok(&req, &viewer);
    let body = match read_body(req).await {
        Ok(b) => b,
        Err(e) => return json(StatusCode::BAD_REQUEST, &serde_json::json!({"error": e})),
    };
    let op: GraphqlOp = match serde_json::from_slice(&body) {
        Ok(op) => op,
        Err(e) => {
            shared
                .lock_stats()
                .record_other_write("POST /graphql (not an operation)".into());
            return json(
                StatusCode::BAD_REQUEST,
                &serde_json::json!({"errors": [{"message": format!("body must be {{\"operationName\", \"variables\"}}: {e}")}]}),
            );
        }
    };
    match op.operation_name.as_str() {
        "CreatePost" => {
            shared.lock_stats().create_arrivals += 1;
            if shared.fault().mode == FaultMode::ResetBeforeRead {
                control.end(ConnAction::Reset);
                return std::future::pending().await;
            }
            let vars = serde_json::to_vec(&op.variables).unwrap_or_default();
            create_from(&vars, csrf_ok, shared, control, session, viewer, None).await
        }
        "Viewer" | "Posts" => {
            shared
                .lock_stats()
                .record_other_write(format!("POST /graphql {}", op.operation_name));
            if op.operation_name == "Posts" {
                tokio::time::sleep(SPA_DATA_DELAY).await;
            }
            json(
                StatusCode::OK,
                &serde_json::json!({"data": {"viewer": {"account": viewer.account}}}),
            )
        }
        other => {
            shared
                .lock_stats()
                .record_other_write(format!("POST /graphql {other}"));
            json(
                StatusCode::BAD_REQUEST,
                &serde_json::json!({"errors": [{"message": format!("unknown operation {other:?}")}]}),
            )
        }
    }
}

/// The create from its body (JSON `{text, title?, status?}`), once the request is read.
async fn create_from(
    body: &[u8],
    csrf_ok: bool,
    shared: Arc<Shared>,
    control: Arc<ConnControl>,
    session: Option<String>,
    viewer: Viewer,
    title_from_path: Option<String>,
) -> Resp {
    let fault: Fault = shared.fault();
    if !csrf_ok {
        return json(
            StatusCode::FORBIDDEN,
            &serde_json::json!({"error": "missing or wrong x-csrf-token (take it from <meta name=\"csrf-token\">)"}),
        );
    }
    let parsed: CreateBody = match serde_json::from_slice(body) {
        Ok(b) => b,
        Err(e) => {
            return json(
                StatusCode::BAD_REQUEST,
                &serde_json::json!({"error": format!("body must be JSON {{\"text\", \"title\"?}}: {e}")}),
            );
        }
    };
    if parsed.status.as_deref() == Some("draft") && title_from_path.is_none() {
        // A draft save through the create endpoint: no post, no fault. Its head was counted as a create
        // arrival (nothing before the body can tell); it is moved to its own counter now.
        let mut stats = shared.lock_stats();
        stats.create_arrivals = stats.create_arrivals.saturating_sub(1);
        stats.record_other_write(super::hostile::DRAFT_SAVE.to_owned());
        return json(
            StatusCode::OK,
            &serde_json::json!({"ok": true, "draft": true}),
        );
    }
    if parsed.text.trim().is_empty() {
        return json(
            StatusCode::UNPROCESSABLE_ENTITY,
            &serde_json::json!({"error": "text is empty"}),
        );
    }
    if parsed.text.chars().count() > MAX_TEXT_CHARS {
        return json(
            StatusCode::UNPROCESSABLE_ENTITY,
            &serde_json::json!({"error": format!("text is longer than {MAX_TEXT_CHARS} characters")}),
        );
    }
    if fault.mode == FaultMode::Reject4xx {
        return json(
            StatusCode::UNPROCESSABLE_ENTITY,
            &serde_json::json!({"error": "post rejected: this content cannot be published right now"}),
        );
    }
    if fault.mode == FaultMode::SessionExpired {
        return json(
            StatusCode::UNAUTHORIZED,
            &serde_json::json!({"error": "your session has expired; please log in again"}),
        );
    }
    if fault.mode == FaultMode::RateLimited {
        let mut r = json(
            StatusCode::TOO_MANY_REQUESTS,
            &serde_json::json!({"error": "you are posting too fast; try again later"}),
        );
        let secs = fault.delay_ms.div_ceil(1000).max(1);
        if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return r;
    }
    let text = if fault.mode == FaultMode::ReadbackMismatch {
        format!("{}{MISMATCH_SUFFIX}", parsed.text)
    } else {
        parsed.text
    };
    // A title-keyed create names the post by its title: the title is its id everywhere (item page, search,
    // feed), as on a wiki.
    let keyed_by = title_from_path.clone();
    let title = title_from_path
        .or(parsed.title)
        .filter(|t| !t.trim().is_empty());
    let account = match session {
        Some(_) if viewer.account != ANONYMOUS => viewer.account.clone(),
        _ => ANONYMOUS.to_owned(),
    };
    let post = {
        let mut state = shared.lock_state();
        for earlier in parsed.outbox {
            if !earlier.text.trim().is_empty() {
                state.add_post(
                    earlier.text,
                    earlier.title.filter(|t| !t.trim().is_empty()),
                    account.clone(),
                );
            }
        }
        let mut post = state.add_post(text, title, account);
        post.category = parsed.category.filter(|c| !c.trim().is_empty());
        post.visibility = parsed.visibility.filter(|v| !v.trim().is_empty());
        if let Some(stored) = state.posts.iter_mut().find(|p| p.id == post.id) {
            stored.category = post.category.clone();
            stored.visibility = post.visibility.clone();
        }
        if let Some(key) = keyed_by.filter(|k| state.post(k).is_none()) {
            if let Some(stored) = state.posts.iter_mut().find(|p| p.id == post.id) {
                stored.id = key.clone();
            }
            post.id = key;
        }
        post
    };
    if let Err(e) = shared.persist().await {
        tracing::error!(error = %e, "fixture platform could not persist a post");
        // Not stored durably: take it back out so memory matches disk.
        shared.lock_state().posts.retain(|p| p.id != post.id);
        return json(
            StatusCode::INTERNAL_SERVER_ERROR,
            &serde_json::json!({"error": "storage failed"}),
        );
    }
    shared.lock_stats().create_stored += 1;
    let created = serde_json::json!({"id": post.id, "url": format!("/p/{}", post.id)});
    match fault.mode {
        FaultMode::CommitThen500 => json(
            StatusCode::INTERNAL_SERVER_ERROR,
            &serde_json::json!({"error": "internal server error"}),
        ),
        FaultMode::CommitThenDrop => {
            control.end(ConnAction::Drop);
            std::future::pending().await
        }
        FaultMode::CommitThenDelay => {
            tokio::time::sleep(fault.delay()).await;
            json(StatusCode::CREATED, &created)
        }
        FaultMode::NoSuccessSignal => json(
            StatusCode::CREATED,
            &serde_json::json!({"status": "accepted"}),
        ),
        FaultMode::Normal | FaultMode::ReadbackMismatch => json(StatusCode::CREATED, &created),
        // Handled before storing; kept explicit so a new mode is a compile error here.
        FaultMode::ResetBeforeRead
        | FaultMode::Reject4xx
        | FaultMode::RateLimited
        | FaultMode::SessionExpired => json(
            StatusCode::INTERNAL_SERVER_ERROR,
            &serde_json::json!({"error": "unreachable fault path"}),
        ),
    }
}

/// `GET /login?account=NAME`: new session cookie, 303 to /compose.
async fn login(req: &Request<Incoming>, shared: &Arc<Shared>) -> Resp {
    let Some(account) = query_param(req, "account") else {
        return json(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({"error": "missing ?account=NAME"}),
        );
    };
    let valid = !account.is_empty()
        && account.chars().count() <= MAX_ACCOUNT_CHARS
        && account != ANONYMOUS
        && account
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !valid {
        return json(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({"error": format!("account must be 1-{MAX_ACCOUNT_CHARS} characters of A-Z a-z 0-9 . _ - (and not \"anonymous\")")}),
        );
    }
    let Ok(token) = crate::secret::random_hex::<16>() else {
        return json(
            StatusCode::INTERNAL_SERVER_ERROR,
            &serde_json::json!({"error": "no randomness for a session"}),
        );
    };
    shared.lock_state().sessions.insert(token.clone(), account);
    if let Err(e) = shared.persist().await {
        tracing::error!(error = %e, "fixture platform could not persist a session");
        return json(
            StatusCode::INTERNAL_SERVER_ERROR,
            &serde_json::json!({"error": "storage failed"}),
        );
    }
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = StatusCode::SEE_OTHER;
    r.headers_mut()
        .insert(header::LOCATION, HeaderValue::from_static("/compose"));
    // A lasting login, as real apps give with "remember me": the account's browser profile stays logged in
    // between publishes, so a queued publish (which carries no login link) finds its session there.
    // `&session_only=1`: a login that lives in a session cookie (no expiry), as an app without "remember
    // me" gives (Rails' and PHP's session cookies): a browser drops it when it closes.
    let lasting = if query_param(req, "session_only").as_deref() == Some("1") {
        ""
    } else {
        "; Max-Age=86400"
    };
    if let Ok(v) = HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={token}; HttpOnly; Path=/; SameSite=Lax{lasting}"
    )) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

/// `POST /__admin/fault` with `{"mode": ..., "delay_ms": ...}`.
async fn set_fault(req: Request<Incoming>, shared: &Arc<Shared>) -> Resp {
    let body = match read_body(req).await {
        Ok(b) => b,
        Err(e) => return json(StatusCode::BAD_REQUEST, &serde_json::json!({"error": e})),
    };
    match serde_json::from_slice::<Fault>(&body) {
        Ok(f) => {
            let f = f.with_delay_ms(f.delay_ms);
            shared.set_fault(f);
            json(StatusCode::OK, &serde_json::json!(f))
        }
        Err(e) => json(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({"error": format!("expected {{\"mode\": \"normal|commit-then-500|commit-then-drop|commit-then-delay|reset-before-read|reject-4xx|no-success-signal|readback-mismatch\", \"delay_ms\": N}}: {e}")}),
        ),
    }
}

/// `POST /__admin/reset`: delete every post, zero the counters, fault back to normal. Sessions stay.
async fn reset(shared: &Arc<Shared>) -> Resp {
    shared.lock_state().posts.clear();
    *shared.lock_stats() = Stats::default();
    shared.set_fault(Fault::default());
    match shared.persist().await {
        Ok(()) => json(StatusCode::OK, &serde_json::json!({"ok": true})),
        Err(e) => {
            tracing::error!(error = %e, "fixture platform could not persist a reset");
            json(
                StatusCode::INTERNAL_SERVER_ERROR,
                &serde_json::json!({"error": "storage failed"}),
            )
        }
    }
}

/// Longest simulated search-index lag accepted.
const MAX_LAG_MS: i64 = 60_000;

/// How far a search index lags behind the posts: `?lag_ms=N` leaves out posts younger than N ms, and
/// `?as_of_ms=T` (ms since the epoch) leaves out posts created after T (an index last built at T). What a
/// read-back's propagation window is for.
#[derive(Debug, Clone, Copy, Default)]
struct Lag {
    lag_ms: i64,
    as_of_ms: Option<i64>,
}

fn lag_ms(req: &Request<Incoming>) -> Lag {
    Lag {
        lag_ms: query_param(req, "lag_ms")
            .and_then(|v| v.parse::<i64>().ok())
            .map_or(0, |v| v.clamp(0, MAX_LAG_MS)),
        as_of_ms: query_param(req, "as_of_ms").and_then(|v| v.parse::<i64>().ok()),
    }
}

/// Posts whose text contains `q` (exact matches flagged), newest first, leaving out those the index has not
/// caught up with (`lag`). Empty `q` finds nothing.
fn search(shared: &Arc<Shared>, q: &str, lag: Lag) -> Vec<(super::Post, bool)> {
    if q.is_empty() {
        return Vec::new();
    }
    let now = super::posts::now_ms();
    shared
        .lock_state()
        .newest_first()
        .into_iter()
        .filter(|p| {
            p.text.contains(q)
                && now - p.created_ms >= lag.lag_ms
                && lag.as_of_ms.is_none_or(|t| p.created_ms <= t)
        })
        .map(|p| {
            let exact = p.text == q;
            (p, exact)
        })
        .collect()
}

fn posts_json(posts: &[super::Post]) -> Vec<serde_json::Value> {
    posts
        .iter()
        .map(|p| {
            serde_json::json!({
                "id": p.id, "text": p.text, "title": p.title, "account": p.account, "created_at": p.created_at,
                "category": p.category, "visibility": p.visibility,
            })
        })
        .collect()
}

/// Account and CSRF token for the request's session (anonymous when unknown).
fn viewer_for(shared: &Arc<Shared>, session: Option<&str>) -> Viewer {
    let state = shared.lock_state();
    let account = session
        .and_then(|s| state.sessions.get(s).cloned())
        .unwrap_or_else(|| ANONYMOUS.to_owned());
    // Token = H(secret, session): stable per session, useless for another one.
    let mut h = Sha256::new();
    h.update(state.csrf_secret.as_bytes());
    h.update(b"\0");
    h.update(
        session
            .filter(|s| state.sessions.contains_key(*s))
            .unwrap_or(ANONYMOUS)
            .as_bytes(),
    );
    let csrf = hex::encode(&h.finalize()[..16]);
    Viewer {
        account,
        csrf,
        markdown: shared.renders_markdown,
    }
}

/// Under [`TokenPolicy::PerPage`]: a page render mints the session's new token; anything else (the create
/// request) is checked against the newest one.
fn per_page_token(shared: &Shared, session: Option<&str>, mint: bool) -> String {
    let mut newest = shared
        .newest_tokens
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let key = session.unwrap_or_default().to_string();
    if mint && let Ok(t) = crate::secret::random_hex::<16>() {
        newest.insert(key.clone(), t);
    }
    newest
        .get(&key)
        .cloned()
        .unwrap_or_else(|| "no token issued to this session".into())
}

/// A path segment, percent-decoded (`%20` is a space; `+` stays a plus, as in any path).
fn decode_segment(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

fn session_cookie(req: &Request<Incoming>) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == SESSION_COOKIE)
        .map(|(_, v)| v.to_owned())
}

fn query_param(req: &Request<Incoming>, name: &str) -> Option<String> {
    let q = req.uri().query()?;
    url::form_urlencoded::parse(q.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Read the whole body, bounded in size and time.
async fn read_body(req: Request<Incoming>) -> Result<Bytes, String> {
    let limited = Limited::new(req.into_body(), MAX_BODY_BYTES);
    match tokio::time::timeout(BODY_READ_TIMEOUT, limited.collect()).await {
        Ok(Ok(c)) => Ok(c.to_bytes()),
        Ok(Err(e)) => Err(format!("could not read the request body: {e}")),
        Err(_) => Err(format!(
            "request body not received within {}s",
            BODY_READ_TIMEOUT.as_secs()
        )),
    }
}

fn html(status: StatusCode, body: String) -> Resp {
    respond(status, "text/html; charset=utf-8", Bytes::from(body))
}

fn asset(content_type: &'static str, body: &'static str) -> Resp {
    respond(
        StatusCode::OK,
        content_type,
        Bytes::from_static(body.as_bytes()),
    )
}

fn json(status: StatusCode, value: &serde_json::Value) -> Resp {
    respond(status, "application/json", Bytes::from(value.to_string()))
}

fn respond(status: StatusCode, content_type: &'static str, body: Bytes) -> Resp {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// The compose page with `?maxlength=N` (1 to 100,000): the text field takes at most N characters, as posts
/// with a length limit do. The browser cuts what is typed beyond it without a word; the page publishes what
/// the field holds.
fn maxlength_if_asked(req: &Request<Incoming>, page: String) -> String {
    let Some(n) = query_param(req, "maxlength")
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|n| (1..=100_000).contains(n))
    else {
        return page;
    };
    page.replacen(
        r#"<textarea id="post-text""#,
        &format!(r#"<textarea id="post-text" maxlength="{n}""#),
        1,
    )
}

/// The compose page with `?visible_only=1`: a click while the page is hidden (a tab behind another, in a
/// browser that draws only the tab in front) does nothing, as in apps that pause themselves when hidden.
/// The compose page with `?rewrite=1`: the text field is an editor that rewrites what it is given, as rich
/// editors do while one types: `**bold**` loses its asterisks (rendered bold), straight quotes turn curly and
/// `--` an em dash. The page publishes what the field then holds: the same words, other characters.
fn rewrite_if_asked(req: &Request<Incoming>, page: String) -> String {
    if query_param(req, "rewrite").as_deref() != Some("1") {
        return page;
    }
    before_body_end(
        page,
        "<script>(function () { var t = document.getElementById('post-text'); if (!t) { return; } \
         t.addEventListener('input', function () { var v = t.value.replace(/\\*\\*([^*]+)\\*\\*/g, '$1') \
         .replace(/\"([^\"]*)\"/g, '\\u201c$1\\u201d').replace(/--/g, '\\u2014'); \
         if (v !== t.value) { t.value = v; } }); })();</script>",
    )
}

/// The compose page with `?blocks=1`: the text field is a block editor, as the WordPress block editor and
/// other rich editors build one: a column of paragraph blocks (`#post-blocks`, each block its own
/// contenteditable `<p class="block">`). Enter makes a new block and moves the caret into it, Shift+Enter
/// breaks the line inside a block, and a line break that comes in typed text is dropped, the words on either
/// side glued together (what the WordPress editor does in some runs). The page publishes its blocks joined
/// by a blank line, each block's line breaks kept (the hidden textarea holds that text). With
/// `&enter_sends=1` Enter sends the post instead (it clicks Publish), as a chat box does; with `&pixel=1`
/// every change also sends the draft to an analytics pixel (`GET /api/pixel?d=`); with `&late_blocks=1` the
/// block an Enter makes (and the caret with it) comes 150 ms later, as an editor that renders it later;
/// with `&render_next_frame=1` text typed before the editor's next frame (its render) after other typed text
/// goes into a block of its own; with `&emoji=img` each emoji typed is drawn as an image whose alt is it (as
/// chat composers do), the caret put at the block's end.
fn blocks_if_asked(req: &Request<Incoming>, page: String) -> String {
    script_if_asked(req, "blocks", page, BLOCK_EDITOR)
}

const BLOCK_EDITOR: &str = r#"<script>(function () {
  var t = document.getElementById('post-text'); if (!t) { return; }
  var editor = document.createElement('div');
  editor.id = 'post-blocks'; editor.className = 'blocks'; editor.setAttribute('aria-label', 'Post text');
  t.style.display = 'none'; t.parentNode.insertBefore(editor, t.nextSibling);
  function block() {
    var p = document.createElement('p'); p.className = 'block'; p.contentEditable = 'true';
    p.style.minHeight = '1.2em'; p.style.margin = '0 0 .5em'; return p;
  }
  function textOf(p) {
    var s = ''; p.childNodes.forEach(function (n) {
      s += n.nodeName === 'BR' ? '\n' : n.nodeName === 'IMG' ? (n.alt || '') : n.textContent;
    });
    return s.replace(/\n$/, '');
  }
  // `&emoji=img`: after every input the editor draws each emoji typed as an image whose alt is the emoji
  // (as chat composers do) and puts the caret at the block's end; the post it publishes keeps the emoji.
  if (/[?&]emoji=img\b/.test(window.location.search)) {
    var EMOJI = /(\p{Regional_Indicator}{2}|\p{Extended_Pictographic}(?:\uFE0F|\p{Emoji_Modifier})*(?:\u200D\p{Extended_Pictographic}(?:\uFE0F|\p{Emoji_Modifier})*)*)/u;
    editor.addEventListener('input', function (e) {
      var p = e.target && e.target.closest ? e.target.closest('p.block') : null;
      if (!p) { return; }
      var nodes = []; var w = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
      while (w.nextNode()) { nodes.push(w.currentNode); }
      var drew = false;
      nodes.forEach(function (n) {
        var parts = n.data.split(EMOJI); if (parts.length < 2) { return; }
        drew = true; var frag = document.createDocumentFragment();
        parts.forEach(function (part, i) {
          if (i % 2 === 0) { if (part) { frag.append(part); } return; }
          var img = document.createElement('img'); img.className = 'emoji'; img.alt = part;
          img.width = 16; img.height = 16;
          img.src = 'data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22 viewBox=%220 0 2 2%22%3E%3Ccircle cx=%221%22 cy=%221%22 r=%221%22 fill=%22%23fc0%22/%3E%3C/svg%3E';
          frag.append(img);
        });
        n.replaceWith(frag);
      });
      if (drew) {
        var r = document.createRange(); r.selectNodeContents(p); r.collapse(false);
        var sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(r);
      }
    });
  }
  function mirror() {
    t.value = Array.prototype.map.call(editor.querySelectorAll('p.block'), textOf)
      .filter(function (x) { return x.trim() !== ''; }).join('\n\n');
    t.dispatchEvent(new Event('input'));
  }
  editor.appendChild(block());
  editor.addEventListener('beforeinput', function (e) {
    var p = e.target && e.target.closest ? e.target.closest('p.block') : null;
    if (!p) { return; }
    if (e.inputType === 'insertParagraph') {
      e.preventDefault();
      var make = function () { var n = block(); p.after(n); n.focus(); mirror(); };
      // `&late_blocks=1`: the new block comes 150 ms later, as an editor that renders it asynchronously.
      if (/[?&]late_blocks=1\b/.test(window.location.search)) { setTimeout(make, 150); } else { make(); }
      return;
    }
    if (typeof e.data === 'string' && /[\r\n]/.test(e.data)) {
      e.preventDefault(); document.execCommand('insertText', false, e.data.replace(/[\r\n]+/g, ''));
    }
  });
  editor.addEventListener('input', mirror);
  // `&render_next_frame=1`: as Trix does, the editor takes typed text in and renders it in its next animation
  // frame; a character typed before that render lands where its model's caret still is, which this editor
  // makes a block of its own (Trix, under load: "broken in tw o").
  if (/[?&]render_next_frame=1\b/.test(window.location.search)) {
    var pending = false;
    editor.addEventListener('beforeinput', function (e) {
      if (e.inputType !== 'insertText' || e.defaultPrevented) { return; }
      var p = e.target && e.target.closest ? e.target.closest('p.block') : null;
      if (!p) { return; }
      if (pending) {
        e.preventDefault();
        var n = block(); n.textContent = e.data; p.after(n); mirror();
        return;
      }
      pending = true;
      requestAnimationFrame(function () { pending = false; });
    }, true);
  }
  // `&pixel=1`: every change also goes to an analytics pixel, the draft in its URL (`/api/pixel?d=`).
  if (/[?&]pixel=1\b/.test(window.location.search)) {
    editor.addEventListener('input', function () { new Image().src = '/api/pixel?d=' + encodeURIComponent(t.value); });
  }
  // `&enter_sends=1`: Enter sends the post, as a chat box does (Shift+Enter still breaks the line).
  if (/[?&]enter_sends=1\b/.test(window.location.search)) {
    editor.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); document.getElementById('publish').click(); }
    });
  }
})();</script>"#;

/// The compose page with `?steal_focus=1`: a "what's new" popover that the page opens as the user starts
/// typing (on the text field's first `input`, once) and moves the focus to its Close button, as apps and
/// editors do once they have settled (MediaWiki's VisualEditor opens its notices popup after its welcome
/// dialog and focuses it): what is typed meanwhile goes to the button, and the field misses the last key.
/// The popover lies in a corner, over nothing of the form.
///
/// `?steal_focus=hold`: the same popover, and while it is open the text field takes no input (its
/// `beforeinput` cancelled, as VisualEditor deactivates its document under its notices popup); it closes on a
/// press anywhere outside it (as OOUI popups do), or on its Close button.
fn steal_focus_if_asked(req: &Request<Incoming>, page: String) -> String {
    match query_param(req, "steal_focus").as_deref() {
        Some("1") => before_body_end(page, STEAL_FOCUS),
        Some("hold") => before_body_end(before_body_end(page, STEAL_FOCUS), STEAL_FOCUS_AND_HOLD),
        _ => page,
    }
}

const STEAL_FOCUS: &str = r#"<script>(function () {
  var t = document.getElementById('post-text'); if (!t) { return; }
  var pop = document.createElement('div');
  pop.id = 'whats-new'; pop.setAttribute('role', 'dialog'); pop.hidden = true;
  pop.style.cssText = 'position:fixed;left:8px;bottom:8px;width:220px;padding:8px;background:#fff;border:1px solid #888';
  pop.innerHTML = '<p>What\u2019s new: drafts now sync.</p><button type="button" id="whats-new-close">Close</button>';
  document.body.appendChild(pop);
  var close = document.getElementById('whats-new-close');
  close.addEventListener('click', function () { pop.hidden = true; });
  var opened = false;
  t.addEventListener('input', function () {
    if (opened) { return; }
    opened = true; pop.hidden = false; close.focus();
  });
})();</script>"#;

const STEAL_FOCUS_AND_HOLD: &str = r#"<script>(function () {
  var t = document.getElementById('post-text'), pop = document.getElementById('whats-new');
  if (!t || !pop) { return; }
  t.addEventListener('beforeinput', function (e) { if (!pop.hidden) { e.preventDefault(); } });
  document.addEventListener('mousedown', function (e) {
    if (!pop.hidden && !pop.contains(e.target)) { pop.hidden = true; }
  }, true);
})();</script>"#;

/// The compose page with `?model_editor=1`: the text field is one contenteditable document of paragraphs
/// (`#post-doc`, role `textbox`), as MediaWiki's VisualEditor, Google Docs-like and other model-driven
/// editors build one, which keeps its own model of the text and maps the browser's selection into it on every
/// input. A selection anchored on the document itself (between its paragraphs, as `Range.selectNodeContents`
/// leaves it) maps to no position in a paragraph: the input is dropped (its `beforeinput` cancelled), as
/// VisualEditor lost it (measured: the typed text gone, only a last key kept, in 3 publishes of 8). The
/// page publishes its paragraphs joined by a blank line; `#post-doc[data-dropped]` counts what it dropped.
fn model_editor_if_asked(req: &Request<Incoming>, page: String) -> String {
    script_if_asked(req, "model_editor", page, MODEL_EDITOR)
}

const MODEL_EDITOR: &str = r#"<script>(function () {
  var t = document.getElementById('post-text'); if (!t) { return; }
  var doc = document.createElement('div');
  doc.id = 'post-doc'; doc.contentEditable = 'true'; doc.setAttribute('role', 'textbox');
  doc.setAttribute('aria-label', 'Post text'); doc.style.minHeight = '4em';
  doc.innerHTML = '<p><br></p>';
  t.style.display = 'none'; t.parentNode.insertBefore(doc, t.nextSibling);
  var dropped = 0;
  doc.addEventListener('beforeinput', function (e) {
    var s = window.getSelection();
    if (s.anchorNode === doc || s.focusNode === doc) {
      e.preventDefault(); dropped += 1; doc.dataset.dropped = String(dropped);
    }
  });
  doc.addEventListener('input', function () {
    t.value = Array.prototype.map.call(doc.querySelectorAll('p'), function (p) { return p.innerText.replace(/\n$/, ''); })
      .filter(function (x) { return x.trim() !== ''; }).join('\n\n');
    t.dispatchEvent(new Event('input'));
  });
})();</script>"#;

/// The compose page with `?listen_on_focus=1`: the text is typed into `#post-editor` (label "Post text"), an
/// editor that keeps its own copy of the text (the hidden `#post-text` the page publishes) and starts
/// following the field only from a timer its `focus` handler sets (10 ms), taking what the field shows then
/// as its start, as MediaWiki's VisualEditor attaches its input handling from a `focusin` handler it
/// debounces to a timer (which may run after input already waiting). Text typed before that shows in
/// the field and never reaches the copy: measured on VisualEditor, the document showing the post, its model
/// empty, "Save page..." disabled.
fn listen_on_focus_if_asked(req: &Request<Incoming>, page: String) -> String {
    script_if_asked(req, "listen_on_focus", page, LISTEN_ON_FOCUS)
}

const LISTEN_ON_FOCUS: &str = r#"<script>(function () {
  var t = document.getElementById('post-text'); if (!t) { return; }
  var ed = document.createElement('textarea');
  ed.id = 'post-editor'; ed.setAttribute('aria-label', 'Post text'); ed.rows = 4;
  t.style.display = 'none'; t.parentNode.insertBefore(ed, t.nextSibling);
  var listening = false, seen = '', attach = null;
  ed.addEventListener('focus', function () {
    clearTimeout(attach);
    attach = setTimeout(function () { listening = true; seen = ed.value; }, 10);
  });
  ed.addEventListener('blur', function () { listening = false; });
  ed.addEventListener('input', function () {
    if (!listening) { return; }
    var now = ed.value;
    t.value = now.indexOf(seen) === 0 ? t.value + now.slice(seen.length) : now;
    seen = now;
    t.dispatchEvent(new Event('input'));
  });
})();</script>"#;

/// The compose page with `?hydrate_late=MS`: a page rendered on the server whose app takes its fields over
/// only MS ms after the page loaded, as a React or Vue app does once its scripts have run (hydration). The
/// text is typed into `#post-editor` (label "Post text"); the app's state of the post is the hidden
/// `#post-text` the page publishes and enables Publish by. From the takeover on, the state follows the field;
/// at the takeover it starts empty, and what was typed before stays in the field (the server's markup kept,
/// the app's state never told): the field shows the post, Publish stays disabled.
fn hydrate_late_if_asked(req: &Request<Incoming>, page: String) -> String {
    let Some(ms) = query_param(req, "hydrate_late").and_then(|v| v.parse::<u32>().ok()) else {
        return page;
    };
    before_body_end(
        page,
        &HYDRATE_LATE.replace("HYDRATE_MS", &ms.min(60_000).to_string()),
    )
}

const HYDRATE_LATE: &str = r#"<script>(function () {
  var t = document.getElementById('post-text'); if (!t) { return; }
  var ed = document.createElement('textarea');
  ed.id = 'post-editor'; ed.setAttribute('aria-label', 'Post text'); ed.rows = 4;
  t.style.display = 'none'; t.parentNode.insertBefore(ed, t.nextSibling);
  var hydrated = false;
  setTimeout(function () {
    hydrated = true; document.documentElement.dataset.hydrated = '1';
    t.value = ''; t.dispatchEvent(new Event('input'));
  }, HYDRATE_MS);
  ed.addEventListener('input', function () {
    if (!hydrated) { return; }
    t.value = ed.value; t.dispatchEvent(new Event('input'));
  });
})();</script>"#;

/// `POST /api/posts?redirect=created`: a made post is answered as a server-rendered form's create is, `303`
/// to its page with its text in the query (`/p/ID?created=<the post>`), which the browser then loads by a
/// GET; any other answer as it is.
async fn redirect_to_created(r: Resp, shared: &Shared) -> Resp {
    let id = match created_id(r).await {
        Ok(id) => id,
        Err(r) => return r,
    };
    let text = shared
        .lock_state()
        .post(&id)
        .map(|p| p.text.clone())
        .unwrap_or_default();
    see_other(&format!(
        "/p/{id}?created={}",
        percent_encoding::utf8_percent_encode(&text, percent_encoding::NON_ALPHANUMERIC)
    ))
}

/// `page` with `script` before its `</body>` when the query asks for it (`?NAME=1`), else as it is.
fn script_if_asked(req: &Request<Incoming>, name: &str, page: String, script: &str) -> String {
    if query_param(req, name).as_deref() != Some("1") {
        return page;
    }
    before_body_end(page, script)
}

/// `page` with `script` inserted before its `</body>` (as it was without one).
pub(super) fn before_body_end(page: String, script: &str) -> String {
    match page.find("</body>") {
        Some(at) => {
            let mut page = page;
            page.insert_str(at, script);
            page
        }
        None => page,
    }
}

fn ignore_clicks_while_hidden_if_asked(req: &Request<Incoming>, page: String) -> String {
    if query_param(req, "visible_only").as_deref() != Some("1") {
        return page;
    }
    before_body_end(
        page,
        "<script>document.addEventListener('click', e => { if (document.visibilityState !== \
         'visible') { e.preventDefault(); e.stopImmediatePropagation(); } }, true)</script>",
    )
}

/// The search with `?reload_ms=N` (50 to 10,000): the page reloads itself every N ms while it is open, as a
/// live feed does. Under per-page tokens each reload mints the session's newest token, so a reader that
/// leaves this page open while the compose page loads and is filled makes the compose page's token stale.
fn reload_if_asked(req: &Request<Incoming>, page: String) -> String {
    let Some(ms) = query_param(req, "reload_ms").and_then(|v| v.parse::<u64>().ok()) else {
        return page;
    };
    match page.find("</body>") {
        Some(at) => {
            let mut page = page;
            let ms = ms.clamp(50, 10_000);
            page.insert_str(
                at,
                &format!("<script>setTimeout(() => location.reload(), {ms})</script>"),
            );
            page
        }
        None => page,
    }
}

/// A post's page or the search rendered as the request asks: `?framed=1` (a page that frames it),
/// `?paragraphs=1`, `?shadow=1` (or `=closed`), `?spa=1` (each script runs in that order as the page
/// loads).
fn as_asked(req: &Request<Incoming>, page: String) -> String {
    if query_param(req, "framed").as_deref() == Some("1") {
        return FRAMED.to_string();
    }
    spa_if_asked(
        req,
        shadow_if_asked(
            req,
            paragraphs_if_asked(
                req,
                decorated_if_asked(
                    req,
                    emoji_images_if_asked(req, viewer_as_you_if_asked(req, page)),
                ),
            ),
        ),
    )
}

/// A post's page or the search with `?author=you`: the viewer's own posts show "You" as their author instead
/// of the account's name, as chat apps label them (the viewer from the header's `#whoami`; a visitor's
/// page labels nothing so).
fn viewer_as_you_if_asked(req: &Request<Incoming>, page: String) -> String {
    const YOU: &str = "<script>(function () {\n\
        var me = document.getElementById('whoami'); me = me ? me.getAttribute('data-account') : '';\n\
        if (!me || me === 'anonymous') { return; }\n\
        document.querySelectorAll('article.post .post-author').forEach(function (a) {\n\
          if (a.textContent === me) { a.textContent = 'You'; } }); })();</script>";
    if query_param(req, "author").as_deref() != Some("you") {
        return page;
    }
    before_body_end(page, YOU)
}

/// A post's page or the search with `?emoji=img`: every emoji in a post's text is drawn as an image whose
/// alt is the emoji (`<img class="emoji" alt="🎉">`), as WordPress's wp-emoji script does in a browser it
/// finds without a colour emoji font, and Twemoji and chat apps do everywhere; `:name:` (a custom emoji's
/// shortcode, as Mastodon's) is drawn so too. The text element's `textContent` then holds no emoji.
fn emoji_images_if_asked(req: &Request<Incoming>, page: String) -> String {
    const EMOJI: &str = "<script>(function () {\n\
        var emoji = /(\\p{Regional_Indicator}{2}|\\p{Extended_Pictographic}(?:\\uFE0F|\\p{Emoji_Modifier})*(?:\\u200D\\p{Extended_Pictographic}(?:\\uFE0F|\\p{Emoji_Modifier})*)*|:[a-z_]+:)/u;\n\
        document.querySelectorAll('article.post .post-text').forEach(function (t) {\n\
          var walker = document.createTreeWalker(t, NodeFilter.SHOW_TEXT); var nodes = [];\n\
          while (walker.nextNode()) { nodes.push(walker.currentNode); }\n\
          nodes.forEach(function (n) { var parts = n.data.split(emoji); if (parts.length < 2) { return; }\n\
            var frag = document.createDocumentFragment();\n\
            parts.forEach(function (part, i) { if (i % 2 === 0) { if (part) { frag.append(part); } return; }\n\
              var img = document.createElement('img'); img.className = 'emoji'; img.alt = part;\n\
              img.width = 16; img.height = 16; img.src = 'data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22 viewBox=%220 0 2 2%22%3E%3Ccircle cx=%221%22 cy=%221%22 r=%221%22 fill=%22%23fc0%22/%3E%3C/svg%3E';\n\
              frag.append(img); });\n\
            n.replaceWith(frag); }); }); })();</script>";
    if query_param(req, "emoji").as_deref() != Some("img") {
        return page;
    }
    before_body_end(page, EMOJI)
}

/// A post's page or the search with `?decorated=1`, as many apps draw a post: its first link is its author's
/// profile (`a.author-link`, to `/u/NAME`), before the permalink (`a.permalink`), and the app's own controls
/// sit inside the post's text: a "Copy" button (`.copy-text`) and an " (edited)" mark (`.edited`), so the
/// text element shows the post followed by "Copy (edited)".
fn decorated_if_asked(req: &Request<Incoming>, page: String) -> String {
    const DECORATE: &str = "<script>document.querySelectorAll('article.post').forEach(function (a) {\n\
        var who = a.querySelector('.post-author'); var link = document.createElement('a');\n\
        link.className = 'author-link'; link.textContent = 'Profile';\n\
        link.href = '/u/' + encodeURIComponent(who ? who.textContent : ''); a.prepend(link);\n\
        var t = a.querySelector('.post-text'); if (!t) { return; }\n\
        var copy = document.createElement('button'); copy.type = 'button'; copy.className = 'copy-text';\n\
        copy.textContent = 'Copy'; var mark = document.createElement('span'); mark.className = 'edited';\n\
        mark.textContent = ' (edited)'; t.append(copy, mark); });</script>";
    if query_param(req, "decorated").as_deref() != Some("1") {
        return page;
    }
    before_body_end(page, DECORATE)
}

/// `?framed=1` on a post's page or the search: a page of its own that shows the posts only inside an iframe
/// (the same path and query without `framed`, from the same site), as an app shell or an embedded widget of the
/// same site does; `&port=OTHER`: the frame from that port of the same host (Fixturebook's other origin), as a
/// comment widget served from `comments.example.com` is.
const FRAMED: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Discussion · Fixturebook</title>
<link rel="stylesheet" href="/static/style.css"></head>
<body><main class="page">
<h1>Discussion</h1>
<iframe id="posts-frame" title="Posts" style="width: 100%; height: 1600px; border: 0"></iframe>
<script>
(function () {
  var q = new URLSearchParams(location.search);
  var port = q.get('port');
  q.delete('framed');
  q.delete('port');
  var s = q.toString();
  var origin = /^[0-9]{1,5}$/.test(port || '') ? location.protocol + '//' + location.hostname + ':' + port : '';
  document.getElementById('posts-frame').src = origin + location.pathname + (s ? '?' + s : '');
})();
</script>
</main></body></html>
"#;

/// A post's page or the search with `?shadow=1`: each post is shown by a web component, moved while the page
/// loads into the open shadow root of its own `<fb-post>` host (as design-system apps render their feeds),
/// where `document.querySelectorAll('article.post')` finds nothing. A reader that looks only in the document
/// sees no post: the look before writing would press again for a post that is there.
fn shadow_if_asked(req: &Request<Incoming>, page: String) -> String {
    const SHADOW: &str = "<script>document.querySelectorAll('article.post').forEach(function (a) {\n\
        var host = document.createElement('fb-post'); a.replaceWith(host);\n\
        var root = host.attachShadow({ mode: 'open' }); var css = document.createElement('link');\n\
        css.rel = 'stylesheet'; css.href = '/static/style.css'; root.append(css, a); });</script>";
    match (page.rfind("</body>"), query_param(req, "shadow").as_deref()) {
        (Some(at), Some("1")) => {
            let mut page = page;
            page.insert_str(at, SHADOW);
            page
        }
        (_, Some("closed")) => closed_by_the_parser(&page),
        _ => page,
    }
}

/// `?shadow=closed`: each post arrives in the HTML inside a closed shadow root of its own `<fb-post>` host,
/// `<template shadowrootmode="closed">` (a server-rendered component): the parser attaches it without any
/// script, and `host.shadowRoot` is null to every script.
fn closed_by_the_parser(page: &str) -> String {
    const OPEN: &str = "<article class=\"post\"";
    const CLOSE: &str = "</article>";
    let mut out = String::with_capacity(page.len() + 256);
    let mut rest = page;
    while let Some(start) = rest.find(OPEN) {
        let Some(len) = rest[start..].find(CLOSE) else {
            break;
        };
        let end = start + len + CLOSE.len();
        out.push_str(&rest[..start]);
        out.push_str(
            "<fb-post><template shadowrootmode=\"closed\">\
             <link rel=\"stylesheet\" href=\"/static/style.css\">",
        );
        out.push_str(&rest[start..end]);
        out.push_str("</template></fb-post>");
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `GET /api/stream`: a live feed's server-sent event stream (`?spa=sse` pages). One `posts` event after
/// [`SPA_DATA_DELAY`], then the stream stays open (25 s) as a live feed's does, sending nothing more.
pub(crate) fn event_stream()
-> Response<http_body_util::combinators::UnsyncBoxBody<Bytes, std::convert::Infallible>> {
    let events = futures::stream::unfold(true, |first| async move {
        if first {
            tokio::time::sleep(SPA_DATA_DELAY).await;
            let event = Bytes::from_static(b"event: posts\ndata: {\"ok\":true}\n\n");
            Some((
                Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(event)),
                false,
            ))
        } else {
            tokio::time::sleep(Duration::from_secs(25)).await;
            None
        }
    });
    let mut r = Response::new(http_body_util::StreamBody::new(events).boxed_unsync());
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// How long the data request of a `?spa=1` page takes.
const SPA_DATA_DELAY: Duration = Duration::from_millis(300);

/// A post's page or the search with `?spa=1`: the page shows its posts as a single-page app does, only
/// after its own data request (a `fetch` of the same page with `spa_data=1`, answered after
/// [`SPA_DATA_DELAY`]) has come back, well after the page's load event. Until then it shows no post.
/// With `?spa=graphql` the data request is a GraphQL query, `POST /graphql` `{"operationName":"Posts"}`
/// (answered after the same delay): a read the browser sends with a write method. With `?spa=sse` the posts
/// come on a live feed's server-sent event stream (`GET /api/stream`, see [`event_stream`]), which stays open
/// and which the page opens 25 ms after it has loaded, as an app does once it has booted. With
/// `?spa=socket` they come once the page's WebSocket to `/api/live` is up and its subscription answered (a
/// page that shows nothing while its socket is refused).
fn spa_if_asked(req: &Request<Incoming>, page: String) -> String {
    let data_request = match query_param(req, "spa").as_deref() {
        Some("1") => {
            "fetch(location.pathname + location.search + '&spa_data=1', { credentials: 'same-origin' })"
        }
        Some("graphql") => {
            "fetch('/graphql', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': \
             'application/json' }, body: JSON.stringify({ operationName: 'Posts', query: 'query Posts($page: \
             String!) { posts(page: $page) { id text author } }', variables: { page: location.pathname + location.search } }) })"
        }
        Some("socket") => {
            "new Promise(function (done) { var ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : \
             'ws://') + location.host + '/api/live'); ws.onopen = function () { ws.send(JSON.stringify({ type: \
             'subscribe', stream: 'posts' })); }; ws.onmessage = function () { done({ text: function () { \
             return ''; } }); }; })"
        }
        Some("sse") => {
            "new Promise(function (done) { window.addEventListener('load', function () { setTimeout(function () { \
             var es = new EventSource('/api/stream'); es.addEventListener('posts', function () { \
             done({ text: function () { return ''; } }); }); }, 25); }); })"
        }
        _ => return page,
    };
    before_body_end(
        page,
        &format!(
            "<script>(function () {{ var posts = Array.prototype.slice.call(document.querySelectorAll('article.post'));\n\
         var spots = posts.map(function (a) {{ var m = document.createComment('post'); a.replaceWith(m); return m; }});\n\
         {data_request}\n\
         .then(function (r) {{ return r.text(); }}).then(function () {{ requestAnimationFrame(function () {{\n\
         spots.forEach(function (m, i) {{ m.replaceWith(posts[i]); }}); }}); }}); }})();</script>"
        ),
    )
}

/// A post's page or the search with `?paragraphs=1`: each post's text is rendered as a single-page app
/// renders it, a `<p>` per paragraph (blank-line separated) and a `<br>` per line break inside one, with
/// nothing between the elements and no preserved white space. A person sees the lines; the element's
/// `textContent` glues them together ("onetwo").
fn paragraphs_if_asked(req: &Request<Incoming>, page: String) -> String {
    if query_param(req, "paragraphs").as_deref() != Some("1") {
        return page;
    }
    before_body_end(
        page,
        "<script>document.querySelectorAll('.post-text').forEach(function (t) {\n\
         var div = document.createElement('div'); div.className = 'post-text'; div.style.whiteSpace = 'normal';\n\
         t.textContent.split(/\\n\\s*\\n/).forEach(function (para) { var p = document.createElement('p');\n\
         para.split('\\n').forEach(function (line, i) { if (i > 0) { p.appendChild(document.createElement('br')); }\n\
         p.appendChild(document.createTextNode(line)); }); div.appendChild(p); });\n\
         t.replaceWith(div); });</script>",
    )
}

/// A post's page or the search with `?alert=1`: the page opens an `alert()` while it loads, as sites do
/// ("Thanks for posting!"). Until it is answered the page's parsing, its load event and every script
/// evaluation wait: a reader that answers no dialog never reads the page.
fn alert_if_asked(req: &Request<Incoming>, page: String) -> String {
    let at = page
        .find("<body")
        .and_then(|b| page[b..].find('>').map(|e| b + e + 1));
    match at {
        Some(at) if query_param(req, "alert").as_deref() == Some("1") => {
            let mut page = page;
            page.insert_str(at, "<script>alert('Thanks for reading!')</script>");
            page
        }
        _ => page,
    }
}
