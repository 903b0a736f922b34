//! `oncepost mcp`, driven by clients nobody here wrote: the official Python SDK (PyPI `mcp`, installed by
//! scripts/setup.sh into `.venv-test`) through `tests/mcp/client.py`, and the official inspector CLI (npm
//! `@modelcontextprotocol/inspector`, in `.npm-test`). Every call starts a new server process, so a repeated
//! call is a new session with new request ids, as an agent's retry, new turn or restart would be. Every count
//! is Fixturebook's.
use std::time::Duration;

use oncepost::fixture_platform::{Fault, FaultMode};
use serde_json::{Value, json};

use crate::kit::{self, BIN, unique};

fn python() -> std::path::PathBuf {
    let p = kit::repo_path(".venv-test/bin/python");
    assert!(
        p.exists(),
        "{} is missing: scripts/setup.sh installs the MCP Python SDK there",
        p.display()
    );
    p
}

/// Run `tests/mcp/client.py ARGS` against a new `oncepost mcp` on `env`'s data dir, with `server_env`
/// (ONCEPOST_* variables for the server) and `mcp_args`; one JSON value per line it printed.
async fn client(
    env: &kit::Env,
    args: &[&str],
    server_env: &[(&str, &str)],
    mcp_args: &[&str],
) -> Vec<Value> {
    let mut cmd = tokio::process::Command::new(python());
    cmd.arg(kit::repo_path("tests/mcp/client.py"))
        .args(args)
        .env("ONCEPOST_BIN", BIN)
        .env("ONCEPOST_HOME", env.home())
        .env(
            "ONCEPOST_MCP_ARGS",
            serde_json::to_string(mcp_args).unwrap(),
        )
        .current_dir(kit::repo_path(""))
        .kill_on_drop(true);
    for (k, v) in server_env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(180), cmd.output())
        .await
        .expect("the client finishes")
        .expect("run the client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client.py {args:?}: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

async fn call(env: &kit::Env, tool: &str, args: &Value) -> Value {
    client(env, &["call", tool, &args.to_string()], &[], &[])
        .await
        .remove(0)
}

fn publish_args(env: &kit::Env, text: &str) -> Value {
    let base = env.base_url();
    json!({
        "contract": kit::fixture_contract(), "base_url": base, "account": "alice", "text": text,
        "login_url": format!("{base}/login?account=alice"),
    })
}

async fn start(fault: FaultMode) -> kit::Env {
    let env = kit::Env::start(Fault::new(fault)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    env
}

#[tokio::test]
async fn the_tools_carry_their_annotations_and_none_decides_for_a_person() {
    let env = start(FaultMode::Normal).await;
    let out = client(&env, &["tools"], &[], &[]).await.remove(0);
    let tools = out["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        [
            "intent_status",
            "list_intents",
            "list_platforms",
            "probe",
            "publish"
        ],
        "{out}"
    );
    let tool = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap();
    let publish = &tool("publish")["annotations"];
    assert_eq!(publish["idempotentHint"], true, "{publish}");
    assert_eq!(publish["destructiveHint"], false, "{publish}");
    assert_eq!(publish["readOnlyHint"], false, "{publish}");
    assert_eq!(publish["openWorldHint"], true, "{publish}");
    for n in ["probe", "intent_status", "list_intents", "list_platforms"] {
        assert_eq!(tool(n)["annotations"]["readOnlyHint"], true, "{n}");
    }
    let required = tool("publish")["input_schema"]["required"].clone();
    for k in ["contract", "base_url", "account", "text"] {
        assert!(
            required.as_array().unwrap().iter().any(|r| r == k),
            "{required}"
        );
    }
    let instructions = out["instructions"].as_str().unwrap();
    assert!(instructions.contains("No tool approves"), "{instructions}");
    // list_platforms shows the bundled contract with its version hash.
    let r = call(&env, "list_platforms", &json!({})).await;
    let platforms = r["structured_content"]["platforms"]
        .as_array()
        .unwrap()
        .clone();
    let fixture = platforms
        .iter()
        .find(|p| p["platform"] == "fixture")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(
        fixture["version"].as_str().map(str::len),
        Some(64),
        "{fixture}"
    );
    assert_eq!(fixture["body_field"], "text");
}

/// One intent whatever the client does: a publish, the same call again from a new server (a new session,
/// new request ids), a retry inside one session; a probe in between; the status tools agree. One post.
#[tokio::test]
async fn publish_maps_every_repeat_to_one_intent_and_one_post() {
    let env = start(FaultMode::Normal).await;
    let text = unique("mcp publish");
    let args = publish_args(&env, &text);
    let first = call(&env, "publish", &args).await;
    let s = &first["structured_content"];
    assert_eq!(first["is_error"], false, "{first}");
    assert_eq!(s["state"], "published", "{first}");
    assert_eq!(
        (s["code"].clone(), s["pressed"].clone()),
        (json!(0), json!(true))
    );
    assert!(
        s["permalink"].as_str().is_some_and(|p| p.contains("/p/")),
        "{s}"
    );
    let images = first["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| *c == "image")
        .count();
    assert!(images >= 1, "screenshots come as images: {first}");
    assert!(
        first["progress"].as_u64().is_some_and(|n| n >= 1),
        "a publish reports its steps as progress: {first}"
    );
    let key = s["key"].as_str().unwrap().to_string();
    // A new server, and a retry in one session: answered from the store.
    let again = client(&env, &["twice", "publish", &args.to_string()], &[], &[]).await;
    assert_eq!(again.len(), 2);
    for r in &again {
        let s = &r["structured_content"];
        assert_eq!(
            (s["key"].as_str(), s["state"].as_str()),
            (Some(key.as_str()), Some("published")),
            "{r}"
        );
        assert_eq!(
            (s["pressed"].clone(), s["created"].clone()),
            (json!(false), json!(false)),
            "{r}"
        );
    }
    let status = call(&env, "intent_status", &json!({ "key": key })).await;
    assert_eq!(
        status["structured_content"]["state"], "published",
        "{status}"
    );
    let list = call(&env, "list_intents", &json!({ "account": "alice" })).await;
    assert_eq!(
        list["structured_content"]["intents"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "{list}"
    );
    // A probe annotates the page and posts nothing.
    let base = env.base_url();
    let probe = call(
        &env,
        "probe",
        &json!({ "contract": kit::fixture_contract(), "base_url": base, "account": "alice", "fill": "never sent" }),
    )
    .await;
    assert_eq!(probe["is_error"], false, "{probe}");
    assert_eq!(probe["structured_content"]["verdict"], "pass", "{probe}");
    assert!(
        probe["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "image"),
        "{probe}"
    );
    assert_eq!(env.copies(&text), 1);
    assert_eq!(env.arrivals(), 1);
    // Bad input is a tool error with the CLI's code.
    let bad = call(&env, "intent_status", &json!({ "key": "nope" })).await;
    assert_eq!(bad["is_error"], true, "{bad}");
    assert_eq!(bad["structured_content"]["code"], 2, "{bad}");
    assert_eq!(bad["structured_content"]["error"], "bad_input", "{bad}");
}

/// commit-then-drop through MCP: one arrival, `indeterminate` with what happens next and the review address;
/// the agent's repeated calls are answered from the store; a person's reconcile (CLI) settles it `published`,
/// which the next call reports. A second such send, parked by a person, gives its review address too.
#[tokio::test]
async fn an_unknown_outcome_is_answered_from_the_store_until_a_lookup_settles_it() {
    let env = start(FaultMode::CommitThenDrop).await;
    let review = ["--review-url", "http://127.0.0.1:9/review/"];
    let text = unique("mcp dropped");
    let args = publish_args(&env, &text);
    let r = client(&env, &["twice", "publish", &args.to_string()], &[], &review).await;
    let (first, second) = (&r[0]["structured_content"], &r[1]["structured_content"]);
    assert_eq!(first["state"], "indeterminate", "{r:?}");
    assert_eq!(first["code"], 10, "{first}");
    assert_eq!(second["state"], "indeterminate", "{second}");
    assert_eq!(second["pressed"], false, "{second}");
    let key = first["key"].as_str().unwrap().to_string();
    assert_eq!(
        first["review"]["url"],
        format!("http://127.0.0.1:9/review/intent/{key}"),
        "{first}"
    );
    assert!(
        first["next"]["says"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{first}"
    );
    assert_eq!(env.arrivals(), 1);
    env.platform.set_fault(Fault::default());
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let (code, r, err) = env.reconcile_key(&kit::fixture_contract(), &key).await;
    assert_eq!(code, 0, "{r} {err}");
    let after = call(&env, "publish", &args).await;
    assert_eq!(after["structured_content"]["state"], "published", "{after}");
    assert_eq!(after["structured_content"]["pressed"], false, "{after}");
    assert_eq!(env.copies(&text), 1);
    assert_eq!(env.arrivals(), 1);
    // Parked by a person: the agent is given the review address.
    env.platform
        .set_fault(Fault::new(FaultMode::CommitThenDrop));
    let text = unique("mcp parked");
    let r = client(
        &env,
        &["call", "publish", &publish_args(&env, &text).to_string()],
        &[],
        &review,
    )
    .await;
    let key = r[0]["structured_content"]["key"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, out, err) = env
        .run(&["park", &key, "--reason", "a person looks", "--by", "tester"])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let status = client(
        &env,
        &["call", "intent_status", &json!({ "key": key }).to_string()],
        &[],
        &review,
    )
    .await
    .remove(0);
    let s = &status["structured_content"];
    assert_eq!(s["state"], "parked", "{status}");
    assert_eq!(
        s["review"]["url"],
        format!("http://127.0.0.1:9/review/intent/{key}"),
        "{status}"
    );
}

/// A send whose create is answered 401 (the account's login ended): the answer says `signed_out`, and the
/// account's next send from this host without a login link is a tool error 4 (nothing sent or recorded) that
/// says what to do, instead of a second send into the same answer.
#[tokio::test]
async fn a_send_into_an_ended_login_says_so_and_the_next_is_refused() {
    let env = start(FaultMode::SessionExpired).await;
    let first = call(&env, "publish", &publish_args(&env, &unique("mcp 401"))).await;
    let s = &first["structured_content"];
    assert_eq!(
        (s["state"].as_str(), s["signed_out"].as_str()),
        (
            Some("indeterminate"),
            Some("the create request was answered HTTP 401")
        ),
        "{first}"
    );
    let mut args = publish_args(&env, &unique("mcp after the 401"));
    args.as_object_mut().unwrap().remove("login_url");
    let refused = call(&env, "publish", &args).await;
    assert_eq!(refused["is_error"], true, "{refused}");
    assert_eq!(refused["structured_content"]["code"], 4, "{refused}");
    assert!(
        refused["structured_content"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("is set aside on this host")),
        "{refused}"
    );
    assert_eq!(env.arrivals(), 1, "the refused send sent nothing");
}

/// The server dies mid-publish (SIGKILL after the platform answered): the client sees the server gone; a new
/// server's call reports the declared state (the send is in flight: nothing re-sends it); once the sweep and a
/// lookup ran, the call answers `published`. One post throughout.
#[tokio::test]
async fn a_server_killed_mid_publish_leaves_a_state_the_next_call_reports() {
    let env = start(FaultMode::Normal).await;
    let text = unique("mcp killed");
    let args = publish_args(&env, &text).to_string();
    let lease = [("ONCEPOST_DISPATCH_LEASE", "2s")];
    let crash = [("ONCEPOST_FAILPOINT", "after_response"), lease[0]];
    let r = client(&env, &["call", "publish", &args], &crash, &[]).await;
    assert!(
        r[0].get("exception").is_some(),
        "the server died mid-call: {r:?}"
    );
    assert_eq!(env.arrivals(), 1);
    let r = client(&env, &["call", "publish", &args], &lease, &[])
        .await
        .remove(0);
    let s = &r["structured_content"];
    let state = s["state"].as_str().unwrap_or_default();
    assert!(
        state == "authorized" || s["error"] == "in_progress_elsewhere",
        "the send in flight is reported, never re-sent: {r}"
    );
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let (code, out, err) = env.run(&["sweep"]).await;
    assert_eq!(code, 0, "{out} {err}");
    let list = call(&env, "list_intents", &json!({ "state": "indeterminate" })).await;
    let intents = list["structured_content"]["intents"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(
        intents.len(),
        1,
        "the sweep made the send in flight indeterminate: {list}"
    );
    let key = intents[0]["key"].as_str().unwrap().to_string();
    // A lookup means something only after the contract's propagation window, counted from the sweep.
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let (code, r, err) = env.reconcile_key(&kit::fixture_contract(), &key).await;
    assert_eq!(code, 0, "{r} {err}");
    let r = client(&env, &["call", "publish", &args], &lease, &[])
        .await
        .remove(0);
    assert_eq!(r["structured_content"]["state"], "published", "{r}");
    assert_eq!(env.copies(&text), 1);
    assert_eq!(env.arrivals(), 1);
}

/// The official inspector CLI, a second client nobody here wrote: it lists the tools and calls `probe`.
#[tokio::test]
async fn the_inspector_cli_lists_the_tools_and_probes() {
    let env = start(FaultMode::Normal).await;
    let inspector = kit::repo_path(".npm-test/node_modules/.bin/mcp-inspector");
    assert!(
        inspector.exists(),
        "{} is missing: scripts/setup.sh installs the MCP inspector there",
        inspector.display()
    );
    let catalog_home = tempfile::tempdir().unwrap();
    let run = |args: Vec<String>| {
        let mut cmd = tokio::process::Command::new(&inspector);
        cmd.arg("--cli")
            .arg("-e")
            .arg(format!("ONCEPOST_HOME={}", env.home().display()))
            .arg(BIN)
            .arg("mcp")
            .args(args)
            .env("HOME", catalog_home.path())
            .current_dir(kit::repo_path(""))
            .kill_on_drop(true);
        async move {
            let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
                .await
                .expect("the inspector finishes")
                .expect("run the inspector");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let start = stdout
                .find('{')
                .unwrap_or_else(|| panic!("no JSON: {stdout}"));
            serde_json::from_str::<Value>(&stdout[start..])
                .unwrap_or_else(|e| panic!("{e}: {stdout}"))
        }
    };
    let list = run(vec!["--method".into(), "tools/list".into()]).await;
    assert_eq!(list["tools"].as_array().map(Vec::len), Some(5), "{list}");
    let probe = run(vec![
        "--method".into(),
        "tools/call".into(),
        "--tool-name".into(),
        "probe".into(),
        "--tool-arg".into(),
        format!("contract={}", kit::fixture_contract().display()),
        format!("base_url={}", env.base_url()),
    ])
    .await;
    let report: Value =
        serde_json::from_str(probe["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(report["verdict"], "pass", "{probe}");
    assert_eq!(env.arrivals(), 0);
    assert_eq!(env.stats().other_writes_total, 0, "a probe sends nothing");
}

/// `oncepost mcp --http 0`: streamable HTTP on loopback for long-lived agents. With the token from its
/// token file the Python SDK publishes (and a second session's call is answered from the store); without
/// the token every request is refused, and nothing is sent.
#[tokio::test]
async fn over_http_the_token_is_required_and_publish_is_the_same_intent() {
    use tokio::io::AsyncBufReadExt;

    let env = start(FaultMode::Normal).await;
    let mut server = env
        .oncepost
        .command(&["mcp", "--http", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn oncepost mcp --http");
    let stdout = server.stdout.take().unwrap();
    let line = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::io::BufReader::new(stdout).lines().next_line(),
    )
    .await
    .expect("prints its address in time")
    .unwrap()
    .expect("one line");
    let info: Value = serde_json::from_str(&line).unwrap();
    let url = info["url"].as_str().unwrap().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{info}");
    let token_file = std::path::PathBuf::from(info["token_file"].as_str().unwrap());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the token file is private");
    let token = std::fs::read_to_string(&token_file).unwrap();
    let text = unique("mcp over http");
    let args = publish_args(&env, &text).to_string();
    let over_http = |bearer: String| {
        let (url, args) = (url.clone(), args.clone());
        let env = &env;
        async move {
            client(
                env,
                &["twice", "publish", &args],
                &[("ONCEPOST_MCP_URL", &url), ("ONCEPOST_MCP_BEARER", &bearer)],
                &[],
            )
            .await
        }
    };
    let refused = over_http("not-the-token".into()).await;
    assert!(refused[0].get("exception").is_some(), "{refused:?}");
    assert_eq!(env.arrivals(), 0, "nothing without the token");
    let r = over_http(token.trim().to_string()).await;
    assert_eq!(r[0]["structured_content"]["state"], "published", "{r:?}");
    assert_eq!(r[1]["structured_content"]["pressed"], false, "{r:?}");
    assert_eq!(
        r[0]["structured_content"]["key"],
        r[1]["structured_content"]["key"]
    );
    assert_eq!(env.copies(&text), 1);
    assert_eq!(env.arrivals(), 1);
    let _ = server.start_kill();
}

/// The publish tool takes a source (`source_id` + `source_body`, or `source_url`): the same work sent again
/// with other chrome around the same article is the same intent; after the article changes, the old post is
/// parked by the fence (nothing launched for it) and the new text against the new body goes out.
#[tokio::test]
async fn publish_rests_on_a_source_and_a_superseded_one_is_parked() {
    let env = start(FaultMode::Normal).await;
    let text = unique("mcp source");
    let page = |para: &str, token: &str| {
        format!(
            "<html><body><article><p>{para}</p><input type=hidden value=\"{token}\"></article></body></html>"
        )
    };
    let with_source = |body: String| {
        let mut a = publish_args(&env, &text);
        a["source_id"] = json!("ticket-42");
        a["source_body"] = json!(body);
        a
    };
    let first = call(
        &env,
        "publish",
        &with_source(page("Fixed in 2.1.", "a1b2c3d4e5f6a7b8c9d0e1f2")),
    )
    .await;
    let s = &first["structured_content"];
    assert_eq!(
        (s["state"].as_str(), s["pressed"].as_bool()),
        (Some("published"), Some(true)),
        "{first}"
    );
    let again = call(
        &env,
        "publish",
        &with_source(page("Fixed in 2.1.", "ffffeeee0000111122223333")),
    )
    .await;
    let a = &again["structured_content"];
    assert_eq!(
        (a["key"].clone(), a["pressed"].as_bool()),
        (s["key"].clone(), Some(false)),
        "{again}"
    );
    assert_eq!(env.copies(&text), 1);
    let (code, _, err) = env
        .run(&[
            "sources",
            "capture",
            "--source-id",
            "ticket-42",
            "--source-file",
            env.write_file("new.html", &page("Fixed in 2.2.", "x"))
                .to_str()
                .unwrap(),
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    // The old body once more: the same (published) intent, answered as it stands.
    let old = call(&env, "publish", &with_source(page("Fixed in 2.1.", "z"))).await;
    assert_eq!(old["structured_content"]["key"], s["key"], "{old}");
    // Another post written from the old body: parked by the fence before any browser, nothing sent.
    let before = env.arrivals();
    let mut stale = with_source(page("Fixed in 2.1.", "q"));
    stale["text"] = json!(unique("mcp stale"));
    let r = call(&env, "publish", &stale).await;
    let st = &r["structured_content"];
    assert_eq!(
        (
            st["state"].as_str(),
            st["code"].as_i64(),
            st["pressed"].as_bool()
        ),
        (Some("parked"), Some(12), Some(false)),
        "{r}"
    );
    assert!(!st["steps"].to_string().contains("browser launched"), "{r}");
    assert_eq!(env.arrivals(), before);
    // A bad source is bad input, nothing created.
    let mut bad = publish_args(&env, &unique("no body"));
    bad["source_id"] = json!("ticket-43");
    let r = call(&env, "publish", &bad).await;
    assert_eq!(r["is_error"], true, "{r}");
}
