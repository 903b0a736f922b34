//! A partition between a worker and PostgreSQL in the middle of an authorization and of a settle, placed
//! exactly: the proxy cuts the connection at the tagged transaction's `COMMIT`, before it reaches the server
//! (rolled back) or after (committed, its answer lost). Through the real binary, real Chromium and a real
//! PostgreSQL, each case must end with the post on the platform exactly once and the intent `published`:
//! the store reads an unknown outcome back instead of assuming it (a claim or an authorization that committed
//! is used, one that rolled back is tried again; a settle is tried again and finds its own commit), so a lost
//! answer neither sends twice nor loses a post that could be made. (A create, a claim's begin, an
//! authorization and a settle are one statement each on PostgreSQL: the proxy cuts each at the `Sync` that
//! commits it.) A create whose answer is lost is tried again and finds its own row (idempotent on its key);
//! so is the record of the create request (a transaction, cut at its `COMMIT`), which holds the request
//! until it is known.
use crate::chaos::Cluster;
use crate::dbproxy::{DbProxy, Snip, Target};
use crate::kit::{self, Oncepost};
use oncepost::fixture_platform::{FixtureConfig, FixturePlatform};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_at_commit_of_an_authorization_or_a_settle_neither_duplicates_nor_loses_the_post()
 {
    let cluster = Cluster::start();
    let proxy = DbProxy::start(cluster.port).await;
    let dir = tempfile::tempdir().unwrap();
    let platform = FixturePlatform::start(FixtureConfig::new(dir.path().join("platform")))
        .await
        .expect("platform");
    let base = platform.base_url();
    let contract = kit::fixture_contract();
    let contract = contract.to_str().unwrap();
    let o = Oncepost::new(dir.path().join("host")).with_store(Some(cluster.url(proxy.port)));
    let (code, out, err) = o
        .run(&[
            "accounts",
            "add",
            "p0",
            "--platform",
            "fixture",
            "--handle",
            "p0",
        ])
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let publish = |text: String, login: Option<String>| {
        let (o, base) = (o.clone(), base.clone());
        async move {
            let mut args = vec![
                "publish",
                "--json",
                "--contract",
                contract,
                "--account",
                "p0",
                "--base-url",
                &base,
                "--text",
                &text,
            ];
            if let Some(l) = &login {
                args.extend(["--login-url", l.as_str()]);
            }
            o.run_json(&args).await
        }
    };
    let (code, v, err) = publish(
        "partition: logged in".into(),
        Some(format!("{base}/login?account=p0")),
    )
    .await;
    assert_eq!(code, 0, "login publish: {v} {err}");
    let cases = [
        ("oncepost: create", Snip::BeforeCommit),
        ("oncepost: create", Snip::AfterCommit),
        ("oncepost: begin", Snip::BeforeCommit),
        ("oncepost: begin", Snip::AfterCommit),
        ("oncepost: authorize", Snip::BeforeCommit),
        ("oncepost: authorize", Snip::AfterCommit),
        ("oncepost: request_sent", Snip::BeforeCommit),
        ("oncepost: request_sent", Snip::AfterCommit),
        ("oncepost: settle", Snip::BeforeCommit),
        ("oncepost: settle", Snip::AfterCommit),
    ];
    for (tag, snip) in cases {
        let case = format!("{tag} {snip:?}");
        let text = format!("partition at COMMIT: {case}");
        let fired = proxy.snipped();
        proxy.arm(Target { tag, snip });
        let (code, v, err) = publish(text.clone(), None).await;
        assert_eq!(
            proxy.snipped(),
            fired + 1,
            "{case}: the partition did not happen: {v} {err}"
        );
        let copies = platform.posts().iter().filter(|p| p.text == text).count();
        assert_eq!(
            copies, 1,
            "{case}: {copies} copies on the platform; {v} {err}"
        );
        assert_eq!(code, 0, "{case}: {v} {err}");
        assert_eq!(v["state"], "published", "{case}: {v} {err}");
        // The stored history replays through the state table, with one authorization and one settle.
        let key = v["key"].as_str().unwrap();
        let (code, shown, err) = o.run_json(&["intents", "show", key, "--json"]).await;
        assert_eq!(code, 0, "{case}: {shown} {err}");
        assert_eq!(shown["intent"]["state"], "published", "{case}: {shown}");
        let events = shown["events"].as_array().cloned().unwrap_or_default();
        let count = |kind: &str| events.iter().filter(|e| e["kind"] == kind).count();
        assert_eq!(count("created"), 1, "{case}: {shown}");
        assert_eq!(count("begun"), 1, "{case}: {shown}");
        assert_eq!(count("authorized"), 1, "{case}: {shown}");
        assert_eq!(count("request_sent"), 1, "{case}: {shown}");
        assert_eq!(count("published"), 1, "{case}: {shown}");
    }
}
