//! A GraphQL app, through the real binary and real Chromium: Fixturebook's compose page with `?graphql=1`
//! and its post and search pages with `?spa=graphql` (`fixtures/contracts/graphql.toml`). Its reads and its
//! create are one request line, `POST /graphql`, told apart only by the body's `operationName`: the compose
//! page asks who is logged in (`Viewer`) before it enables Publish, and the post and search pages show their
//! posts only once their `Posts` query is answered, 300 ms after loading.
//!
//! A browser sends those queries with a write method, so without a declaration the door fails them like any
//! write: the compose page can never publish, and a reconcile's lookup sees empty pages. The contract
//! declares them `read_requests`: oncepost sends them wherever the page reads (the probe, the look before
//! writing, the compose page, the read-back, a lookup), counts them as the page's data (a page is read once
//! they came back), and never sends one that is the create request. Every count is the platform's.
use std::path::PathBuf;
use std::time::Duration;

use oncepost::fixture_platform::{Fault, FaultMode};

use crate::kit::{self, unique};

const VIEWER: &str = "POST /graphql Viewer";
const POSTS: &str = "POST /graphql Posts";

async fn start() -> kit::Env {
    let env = kit::Env::start(Fault::new(FaultMode::Normal)).await;
    env.add_account("alice", &["--handle", "alice"]).await;
    env
}

fn contract() -> PathBuf {
    kit::repo_path("fixtures/contracts/graphql.toml")
}

/// The bundled contract with its queries declared as non-publish writes instead (all a contract could say
/// before `read_requests`): let through during a publish, never in a lookup.
fn queries_as_writes(env: &kit::Env) -> PathBuf {
    let c = std::fs::read_to_string(contract()).unwrap();
    assert!(c.contains("[[read_requests]]"));
    env.write_file(
        "graphql-as-writes.toml",
        &c.replace("[[read_requests]]", "[[non_publish_writes]]"),
    )
}

/// Published once and read back through the app's own queries; then alice's own earlier post (made on the
/// platform as by a lost run) is found by the look before writing, whose search page shows it only once its
/// query came back: nothing pressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graphql_app_publishes_once_reads_back_and_finds_an_earlier_post_before_writing() {
    let env = start().await;
    let text = unique("made through one GraphQL endpoint");
    let (code, v, err) = env.publish("alice", &contract(), &text, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["state"], "published", "{v}");
    assert_eq!(v["pressed"], true, "{v}");
    assert_eq!((env.arrivals(), env.copies(&text)), (1, 1));
    let stats = env.stats();
    assert!(stats.writes_to(VIEWER) >= 1, "{stats:?}");
    assert!(
        stats.writes_to(POSTS) >= 2,
        "the look and the read-back: {stats:?}"
    );
    let show = env.show(v["key"].as_str().unwrap()).await;
    assert!(
        !kit::event_kinds(&show["events"]).contains(&"side_effect_alarm".to_string()),
        "a declared query is no alarm: {show}"
    );

    let earlier = unique("an earlier post the app shows after its query");
    let id = env.post_as("alice", &earlier).await;
    let (code, v, err) = env.publish("alice", &contract(), &earlier, &[]).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["pressed"], false, "found before writing: {v}");
    assert_eq!(v["platform_id"], id.as_str(), "{v}");
    assert_eq!((env.arrivals(), env.copies(&earlier)), (2, 1));
}

/// A post whose create answer was lost (committed, then a 500) is indeterminate; reconcile reads the
/// platform through the app's queries and settles it published with alice's post. With the queries declared
/// only as non-publish writes, the lookup (which lets no write through) saw empty pages: the post that was
/// made was parked for a person.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_reads_a_graphql_app_through_its_declared_queries() {
    let env = start().await;
    let as_writes = queries_as_writes(&env);
    let mut keys = Vec::new();
    for (label, c) in [("reads", contract()), ("writes", as_writes.clone())] {
        let text = unique(&format!("answer lost, queries declared as {label}"));
        env.platform.set_fault(Fault::new(FaultMode::CommitThen500));
        let (code, v, err) = env
            .publish("alice", &c, &text, &["--no-look-before-write"])
            .await;
        assert_eq!(code, 10, "{v} {err}");
        assert_eq!(v["state"], "indeterminate", "{v}");
        env.platform.set_fault(Fault::default());
        keys.push((c, text, v["key"].as_str().unwrap().to_string()));
    }
    // Past the contract's propagation window: "not found" then means not there.
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let posts_before = env.stats().writes_to(POSTS);
    let (c, text, key) = &keys[0];
    let (code, r, err) = env.reconcile_key(c, key).await;
    assert_eq!(code, 0, "{r} {err}");
    assert_eq!(r["state"], "published", "{r}");
    assert_eq!(
        r["outcome"]["platform_id"],
        env.post_id_of("alice", text).as_str(),
        "{r}"
    );
    assert!(
        env.stats().writes_to(POSTS) > posts_before,
        "the lookup's query"
    );

    let (c, _, key) = &keys[1];
    let (_, r, err) = env.reconcile_key(c, key).await;
    assert_eq!(r["state"], "parked", "{r} {err}");
    assert_eq!(env.arrivals(), 2, "reconcile never sends");
}

/// A probe sends the declared queries (they read: the compose page enables Publish once it knows who is
/// logged in) and no create request; they are no alarm. Undeclared, the page cannot load its account and
/// the queries are write alarms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_sends_the_declared_queries_and_nothing_else() {
    let env = start().await;
    let base = env.base_url();
    let full = std::fs::read_to_string(contract()).unwrap();
    let without_reads = full.split("[[read_requests]]").next().unwrap();
    let undeclared = env.write_file("graphql-undeclared.toml", without_reads);
    for (declared, c) in [(true, contract()), (false, undeclared)] {
        let (code, r, err) = env.probe_fill(&c, 800).await;
        let writes = r["writes"].as_array().cloned().unwrap_or_default();
        if declared {
            assert_eq!(code, 0, "{r} {err}");
            assert_eq!(r["verdict"], "pass", "{r}");
            assert!(r["read_requests_sent"].as_u64() >= Some(1), "{r}");
            assert!(writes.is_empty(), "{r}");
        } else {
            assert_ne!(code, 0, "{r} {err}");
            assert!(
                writes
                    .iter()
                    .any(|w| w["method"] == "POST" && w["url"] == format!("{base}/graphql")),
                "{r}"
            );
        }
    }
    assert_eq!(
        env.stats().writes_to(VIEWER),
        1,
        "only the declared probe's"
    );
    assert_eq!(env.arrivals(), 0, "a probe sends no create request");
}

/// `contract check` refuses a read request that could be the create request (the same request line and no
/// body of its own; a wider URL with no body when the create is told apart by its body), a GET (read without
/// being declared), and `read_requests` in a format 1 contract.
#[tokio::test]
async fn a_contract_whose_read_request_could_be_the_create_request_is_refused() {
    let env = start().await;
    let good = std::fs::read_to_string(contract()).unwrap();
    let rule = "body_regex = '\"operationName\":\\s*\"(Viewer|Posts)\"'\n";
    assert!(good.contains(rule));
    let no_body = good.replace(rule, "");
    let wider = no_body.replace(
        "url = \"{base_url}/graphql\"\nwhy",
        "url_regex = '/graph'\nwhy",
    );
    let get = good.replace(
        "[[read_requests]]\nmethod = \"POST\"",
        "[[read_requests]]\nmethod = \"GET\"",
    );
    let format1 = good.replace("format = 2", "format = 1");
    for (name, c, says) in [
        (
            "same-line",
            &no_body,
            "this read request is the create request",
        ),
        (
            "wider",
            &wider,
            "told apart by its headers or body, but this read request is not",
        ),
        ("get", &get, "a GET is read without being declared"),
        ("format1", &format1, "read_requests needs format = 2"),
    ] {
        assert_ne!(c, &good, "{name}");
        let path = env.write_file(&format!("graphql-{name}.toml"), c);
        let (code, out, err) = env
            .run(&["contract", "check", path.to_str().unwrap()])
            .await;
        assert_eq!(code, 2, "{name}: {out} {err}");
        assert!(format!("{out}{err}").contains(says), "{name}: {out} {err}");
    }
}
