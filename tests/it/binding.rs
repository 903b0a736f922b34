//! Platform binding through the real binary: an account registered on another platform is refused; an intent
//! is bound to its contract's platform and its base URL's origin; reconcile, `--due` and the worker never touch
//! an intent of another platform, and look through another contract version or origin only when a person
//! accepts it (recorded). Links a page supplies outside the platform (`javascript:`, another site) are alarms,
//! never findings. Plus the store's halves, on both backends: the kill switch by the contract's platform, the
//! binding that never changes, and the recovery layer's own refusal of an outside permalink.
use std::collections::BTreeMap;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::kit::{self, Backend, test_db, unique};
use oncepost::contract::Binding;
use oncepost::fixture_platform::{Fault, FaultMode, FixtureConfig, FixturePlatform};
use oncepost::identity::{ActionKind, CanonicalRequest, DeliveryKey};
use oncepost::recover::{self, LookupResult, PlatformLookup, ReconcilePolicy};
use oncepost::store::*;
use serde_json::{Value, json};

fn fixture_contract() -> String {
    std::fs::read_to_string(kit::fixture_contract()).unwrap()
}

/// The kit's platform and data dir, alice (handle alice) added, the fixture contract copied next to them.
struct Env {
    kit: kit::Env,
    contract: PathBuf,
}

impl Deref for Env {
    type Target = kit::Env;
    fn deref(&self) -> &kit::Env {
        &self.kit
    }
}

impl Env {
    async fn start() -> Env {
        let kit = kit::Env::start(Fault::default()).await;
        let contract = kit.write_file("fixture.toml", &fixture_contract());
        let env = Env { kit, contract };
        env.account("alice", "fixture").await;
        env
    }

    async fn account(&self, name: &str, platform: &str) {
        let (code, out, err) = self
            .run(&[
                "accounts",
                "add",
                name,
                "--platform",
                platform,
                "--handle",
                name,
            ])
            .await;
        assert_eq!(code, 0, "accounts add: {out} {err}");
    }

    fn contract_with(&self, name: &str, edit: impl Fn(String) -> String) -> PathBuf {
        let text = edit(fixture_contract());
        assert_ne!(text, fixture_contract(), "the edit changed nothing");
        self.write_file(name, &text)
    }

    /// The fixture contract under another platform name (same pages).
    fn other_platform_contract(&self) -> PathBuf {
        self.contract_with("other.toml", |t| {
            t.replace("platform = \"fixture\"", "platform = \"other\"")
        })
    }

    async fn publish_at(
        &self,
        base: &str,
        account: &str,
        contract: &Path,
        text: &str,
    ) -> (i32, Value, String) {
        let args = self.publish_args_at(base, account, contract, text);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.oncepost.run_json(&args).await
    }

    async fn publish(&self, account: &str, contract: &Path, text: &str) -> (i32, Value, String) {
        let base = self.base_url();
        self.publish_at(&base, account, contract, text).await
    }

    async fn reconcile(&self, contract: &Path, extra: &[&str]) -> (i32, String, String) {
        let base = self.base_url();
        self.reconcile_at(&base, contract, extra).await
    }

    async fn reconcile_at(
        &self,
        base: &str,
        contract: &Path,
        extra: &[&str],
    ) -> (i32, String, String) {
        let c = contract.display().to_string();
        let mut args = vec!["reconcile", "--contract", &c, "--base-url", base];
        args.extend_from_slice(extra);
        self.run(&args).await
    }

    /// An indeterminate intent of `account` through `contract`: the create was committed, then a 500.
    async fn indeterminate(&self, account: &str, contract: &Path, text: &str) -> String {
        self.platform
            .set_fault(Fault::new(FaultMode::CommitThen500));
        let (code, v, err) = self.publish(account, contract, text).await;
        self.platform.set_fault(Fault::default());
        assert_eq!(code, 10, "{v} {err}");
        v["key"].as_str().unwrap().to_string()
    }
}

fn events<'a>(t: &'a Value, kind: &str) -> Vec<&'a Value> {
    t["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == kind)
        .collect()
}

/// An account registered on another platform cannot publish through the fixture contract: exit 2 with a
/// message naming both platforms, no intent, no request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_refuses_an_account_of_another_platform() {
    let env = Env::start().await;
    env.account("zed", "other").await;
    // A kill switch on the contract's platform must not be bypassed by an account of another one.
    let (code, _, err) = env
        .run(&["switch", "on", "--platform", "fixture", "--by", "ops"])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, v, err) = env
        .publish("zed", &env.contract, &unique("wrong door"))
        .await;
    assert_eq!(code, 2, "{v} {err}");
    assert!(
        err.contains("registered on platform \"other\"")
            && err.contains("the contract of platform \"fixture\""),
        "{err}"
    );
    let (_, list, _) = env.run(&["intents", "list", "--json"]).await;
    assert_eq!(serde_json::from_str::<Value>(&list).unwrap(), json!([]));
    assert_eq!(env.platform.stats().create_arrivals, 0);
}

/// The intent records its contract's platform and its base URL's origin; publishing it through another
/// deployment of the platform (another origin) is refused, exit 2, and touches nothing there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_intent_is_bound_to_its_platform_and_origin() {
    let env = Env::start().await;
    let text = unique("bound");
    // Rejected first (failed, proven not sent), then retried: pending again, bound to this origin.
    env.platform.set_fault(Fault::new(FaultMode::Reject4xx));
    let (code, v, err) = env.publish("alice", &env.contract, &text).await;
    env.platform.set_fault(Fault::default());
    assert_eq!(code, 11, "{v} {err}");
    let key = v["key"].as_str().unwrap().to_string();
    let (code, _, err) = env.run(&["retry", &key, "--by", "ops"]).await;
    assert_eq!(code, 0, "{err}");
    let t = env.show(&key).await;
    assert_eq!(t["intent"]["contract_platform"], "fixture");
    assert_eq!(t["intent"]["base_origin"], env.platform.base_url().as_str());
    let (_, check, _) = env
        .run(&[
            "contract",
            "check",
            "--json",
            &env.contract.display().to_string(),
        ])
        .await;
    let hash = serde_json::from_str::<Value>(&check).unwrap()["contract_hash"].clone();
    assert_eq!(t["intent"]["contract_version"], hash);
    let staging_dir = tempfile::tempdir().unwrap();
    let staging = FixturePlatform::start(FixtureConfig::new(staging_dir.path()))
        .await
        .unwrap();
    let (code, v, err) = env
        .publish_at(&staging.base_url(), "alice", &env.contract, &text)
        .await;
    assert_eq!(code, 2, "{v} {err}");
    assert!(
        err.contains("bound elsewhere") && err.contains("published at"),
        "{err}"
    );
    assert_eq!(staging.stats().create_arrivals, 0);
    assert_eq!(env.show(&key).await["intent"]["state"], "pending");
    // At its own origin it goes out.
    let (code, v, err) = env.publish("alice", &env.contract, &text).await;
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(
        env.platform.stats().create_arrivals,
        2,
        "the rejection and the post"
    );
}

/// `reconcile --key K` through another platform's contract: exit 2, nothing recorded, the intent as it was.
/// `--due` and the worker through it do not even list it. Through its own contract it is found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_and_the_worker_never_touch_another_platforms_intent() {
    let env = Env::start().await;
    let other = env.other_platform_contract();
    env.account("zed", "other").await;
    let alices = env
        .indeterminate("alice", &env.contract, &unique("fixture side"))
        .await;
    let zeds = env
        .indeterminate("zed", &other, &unique("other side"))
        .await;
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let (code, out, err) = env.reconcile(&other, &["--key", &alices]).await;
    assert_eq!(code, 2, "{out} {err}");
    assert!(err.contains("belongs to platform \"fixture\""), "{err}");
    let t = env.show(&alices).await;
    assert_eq!(t["intent"]["state"], "indeterminate");
    assert_eq!(t["intent"]["reconcile_count"], 0);
    assert!(events(&t, "reconcile_started").is_empty());
    // The batch and the worker through the other contract: only zed's intent, never alice's.
    let (code, out, err) = env.reconcile(&other, &["--due", "--json"]).await;
    assert_eq!(code, 0, "{out} {err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert_eq!(lines[0]["key"], zeds.as_str());
    assert_eq!(lines[0]["state"], "published");
    let base = env.platform.base_url();
    let (code, out, err) = env
        .run(&[
            "worker",
            "--contract",
            &other.display().to_string(),
            "--base-url",
            &base,
            "--passes",
            "1",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let pass: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(pass["reconciled"], json!([]), "{pass}");
    assert_eq!(
        pass["skipped"],
        json!([]),
        "listed another platform's intent: {pass}"
    );
    assert_eq!(env.show(&alices).await["intent"]["reconcile_count"], 0);
    // Through its own contract the lookup runs and finds alice's post.
    let (code, out, err) = env.reconcile(&env.contract, &["--due", "--json"]).await;
    assert_eq!(code, 0, "{out} {err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert_eq!(lines[0]["key"], alices.as_str());
    assert_eq!(lines[0]["state"], "published");
    assert_eq!(env.platform.stats().create_arrivals, 2, "a lookup wrote");
}

/// Another version of the contract (or another origin) is refused, exit 4, nothing recorded; `--due` lists
/// it as skipped. A person accepting the change runs the lookup, and the acceptance is in the history with
/// their name and both versions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_contract_is_refused_until_a_person_accepts_it() {
    let env = Env::start().await;
    let key = env
        .indeterminate("alice", &env.contract, &unique("changed"))
        .await;
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let changed = env.contract_with("changed.toml", |t| {
        t.replace("propagation_ms = 2000", "propagation_ms = 1999")
    });
    let (code, out, err) = env.reconcile(&changed, &["--key", &key]).await;
    assert_eq!(code, 4, "{out} {err}");
    assert!(err.contains("--accept-contract-change"), "{err}");
    let (code, out, err) = env.reconcile(&changed, &["--due", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let line: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(line["key"], key.as_str());
    assert!(
        line["skipped"]
            .as_str()
            .unwrap()
            .contains("contract version"),
        "{line}"
    );
    // Another deployment of the same platform: refused the same way.
    let elsewhere_dir = tempfile::tempdir().unwrap();
    let elsewhere = FixturePlatform::start(FixtureConfig::new(elsewhere_dir.path()))
        .await
        .unwrap();
    let (code, _, err) = env
        .reconcile_at(&elsewhere.base_url(), &env.contract, &["--key", &key])
        .await;
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("published at"), "{err}");
    let t = env.show(&key).await;
    assert_eq!(
        t["intent"]["reconcile_count"], 0,
        "a refused lookup was spent"
    );
    let (code, out, err) = env
        .reconcile(
            &changed,
            &[
                "--key",
                &key,
                "--accept-contract-change",
                "--by",
                "carol",
                "--json",
            ],
        )
        .await;
    assert_eq!(code, 0, "{out} {err}");
    let t = env.show(&key).await;
    assert_eq!(t["intent"]["state"], "published");
    let notes = events(&t, "note");
    let accepted = notes
        .iter()
        .find(|e| e["details"]["accept_contract_change"] == true)
        .unwrap_or_else(|| panic!("no acceptance recorded: {t}"));
    assert_eq!(accepted["actor"], "carol");
    assert_ne!(
        accepted["details"]["version"]["recorded"],
        accepted["details"]["version"]["given"]
    );
}

/// A hostile search links the account's own post to `javascript:alert(document.domain)`. Look-before-write
/// records an alarm and parks the intent as a lead: no permalink is ever recorded from it, nothing pressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_javascript_permalink_is_an_alarm_never_a_finding() {
    let env = Env::start().await;
    let hostile = env.contract_with("hostile.toml", |t| {
        t.replace(
            "search = \"{base_url}/search?q={text}\"",
            "search = \"{base_url}/hostile/search?link=js&q={text}\"",
        )
    });
    let text = unique("hostile search");
    env.post_as("alice", &text).await;
    let (code, v, err) = env.publish("alice", &hostile, &text).await;
    assert_eq!(code, 12, "{v} {err}");
    assert_eq!(v["pressed"], false);
    assert_eq!(v["permalink"], Value::Null);
    let t = env.show(v["key"].as_str().unwrap()).await;
    let alarms: Vec<&Value> = events(&t, "evidence")
        .into_iter()
        .filter(|e| e["reason"].as_str().unwrap_or("").starts_with("alarm:"))
        .collect();
    assert_eq!(alarms.len(), 1, "{t}");
    assert_eq!(
        alarms[0]["details"]["alarm"]["value"],
        "javascript:alert(document.domain)"
    );
    assert!(
        !t.to_string().contains("\"permalink\":\"javascript:"),
        "{t}"
    );
    assert_eq!(env.platform.stats().create_arrivals, 1);
}

/// The same hostile search, linking to another site, during reconcile: an alarm and a lead (parked), never
/// published on the outside link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_refuses_a_permalink_on_another_site() {
    let env = Env::start().await;
    let hostile = env.contract_with("hostile.toml", |t| {
        t.replace(
            "search = \"{base_url}/search?q={text}\"",
            "search = \"{base_url}/hostile/search?link=offsite&q={text}\"",
        )
    });
    let key = env
        .indeterminate("alice", &hostile, &unique("offsite"))
        .await;
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let (code, out, err) = env.reconcile(&hostile, &["--key", &key, "--json"]).await;
    assert_eq!(code, 12, "{out} {err}");
    let t = env.show(&key).await;
    assert_eq!(t["intent"]["state"], "parked");
    assert_eq!(t["intent"]["permalink"], Value::Null);
    let alarm = events(&t, "evidence")
        .into_iter()
        .find(|e| e["reason"].as_str().unwrap_or("").starts_with("alarm:"))
        .unwrap_or_else(|| panic!("no alarm: {t}"));
    assert!(
        alarm["details"]["alarm"]["value"]
            .as_str()
            .unwrap()
            .starts_with("https://evil.example/p/"),
        "{alarm}"
    );
}

/// Make the store refuse the read-back alarms (`evidence` rows whose reason starts with `alarm:`; a SQLite
/// trigger): the store failing at the moment an alarm is recorded, while everything else goes through.
async fn refuse_alarm_evidence(home: &Path) {
    let store = Store::open(&StoreLocation::default_in(home), Policy::default())
        .await
        .unwrap();
    store
        .execute_raw_for_tests(
            "CREATE TRIGGER test_refuse_alarms BEFORE INSERT ON events \
             WHEN NEW.kind = 'evidence' AND NEW.reason LIKE 'alarm:%' \
             BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END",
        )
        .await
        .unwrap();
    store.close().await;
}

/// The javascript: link again, with the store refusing the alarm: still parked before anything is pressed,
/// and the parking says the alarm could not be recorded (its evidence names the store's refusal).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alarm_the_store_refuses_before_writing_is_named_in_the_parking() {
    let env = Env::start().await;
    refuse_alarm_evidence(env.dir.path()).await;
    let hostile = env.contract_with("hostile.toml", |t| {
        t.replace(
            "search = \"{base_url}/search?q={text}\"",
            "search = \"{base_url}/hostile/search?link=js&q={text}\"",
        )
    });
    let text = unique("hostile search, alarm refused");
    env.post_as("alice", &text).await;
    let (code, v, err) = env.publish("alice", &hostile, &text).await;
    assert_eq!(code, 12, "{v} {err}");
    assert_eq!(v["pressed"], false);
    assert_eq!(v["permalink"], Value::Null);
    let t = env.show(v["key"].as_str().unwrap()).await;
    assert!(
        !events(&t, "evidence")
            .iter()
            .any(|e| e["reason"].as_str().unwrap_or("").starts_with("alarm:")),
        "{t}"
    );
    let parked = events(&t, "parked");
    assert_eq!(parked.len(), 1, "{t}");
    let reason = parked[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("lead: ") && reason.contains("an alarm could not be recorded"),
        "{reason}"
    );
    assert!(
        parked[0]["details"]["alarms_not_recorded"]
            .as_str()
            .unwrap_or("")
            .contains("refused by the test trigger"),
        "{t}"
    );
    assert_eq!(
        parked[0]["details"]["alarms"][0]["value"], "javascript:alert(document.domain)",
        "the refused value is kept in the parking: {t}"
    );
    assert_eq!(env.platform.stats().create_arrivals, 1);
}

/// The offsite link during reconcile, with the store refusing the alarm: the lead is parked anyway and
/// its evidence carries the alarm and the store's refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_alarm_the_store_refuses_is_in_the_parkings_evidence() {
    let env = Env::start().await;
    let hostile = env.contract_with("hostile.toml", |t| {
        t.replace(
            "search = \"{base_url}/search?q={text}\"",
            "search = \"{base_url}/hostile/search?link=offsite&q={text}\"",
        )
    });
    let key = env
        .indeterminate("alice", &hostile, &unique("offsite, alarm refused"))
        .await;
    refuse_alarm_evidence(env.dir.path()).await;
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let (code, out, err) = env.reconcile(&hostile, &["--key", &key, "--json"]).await;
    assert_eq!(code, 12, "{out} {err}");
    let t = env.show(&key).await;
    assert_eq!(t["intent"]["state"], "parked");
    assert_eq!(t["intent"]["permalink"], Value::Null);
    assert!(
        !events(&t, "evidence")
            .iter()
            .any(|e| e["reason"].as_str().unwrap_or("").starts_with("alarm:")),
        "{t}"
    );
    let parked = events(&t, "parked");
    let evidence = &parked.last().unwrap()["details"]["evidence"];
    assert!(
        evidence["alarms_not_recorded"]
            .as_str()
            .unwrap_or("")
            .contains("refused by the test trigger"),
        "{t}"
    );
    assert!(
        evidence["alarms"][0]["value"]
            .as_str()
            .unwrap_or("")
            .starts_with("https://evil.example/p/"),
        "{t}"
    );
}

// ---- the store's and the recovery layer's halves, on both backends ----

async fn store_with_accounts(b: Backend) -> kit::TestDb {
    let db = test_db(b, Policy::default()).await;
    for (name, platform) in [("alice", "fixture"), ("zed", "other")] {
        db.store
            .add_account(
                &NewAccount {
                    name: name.into(),
                    platform: platform.into(),
                    min_interval_ms: 0,
                    dup_window_ms: 0,
                },
                "t",
                Timestamp::now(),
            )
            .await
            .unwrap();
    }
    db
}

async fn new_intent(store: &Store, account: &str, text: &str) -> DeliveryKey {
    store
        .create_intent(
            &NewIntent {
                account: account.into(),
                action: ActionKind::Post,
                target: String::new(),
                request: CanonicalRequest::new(Some(text), &BTreeMap::new()),
                source: None,
            },
            Timestamp::now(),
        )
        .await
        .unwrap()
        .intent
        .key
}

/// The kill switch of the contract's platform stops an authorization even for an intent whose account is
/// registered on another platform (the store's half; publish refuses that account before anything).
async fn the_contract_platforms_kill_switch_refuses_authorization(b: Backend) {
    let db = store_with_accounts(b).await;
    let key = new_intent(&db.store, "zed", "through the fixture door").await;
    db.store
        .bind_intent(&key, "fixture", "http://127.0.0.1:9")
        .await
        .unwrap();
    db.store
        .set_switch(
            &SwitchScope::Platform("fixture".into()),
            true,
            "ops",
            Timestamp::now(),
        )
        .await
        .unwrap();
    let claim = match db
        .store
        .begin(&key, "w", "c", Timestamp::now())
        .await
        .unwrap()
    {
        Begun::Claimed(c) => c,
        other => panic!("{other:?}"),
    };
    let refused = db
        .store
        .authorize_dispatch(&claim, "c", Timestamp::now())
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, StoreError::Refused(AuthorizeRefusal::KillSwitch { scope, name })
            if scope == "platform" && name == "fixture"),
        "{refused}"
    );
    assert_eq!(db.store.intent(&key).await.unwrap().state, Status::Pending);
}

/// A recorded binding never changes: bind_intent keeps the first, and the database refuses an UPDATE.
async fn a_recorded_binding_never_changes(b: Backend) {
    let db = store_with_accounts(b).await;
    let key = new_intent(&db.store, "alice", "bound once").await;
    let first = db
        .store
        .bind_intent(&key, "fixture", "http://127.0.0.1:9")
        .await
        .unwrap();
    assert_eq!(first.base_origin.as_deref(), Some("http://127.0.0.1:9"));
    let again = db
        .store
        .bind_intent(&key, "other", "http://elsewhere:1")
        .await
        .unwrap();
    assert_eq!(again.contract_platform.as_deref(), Some("fixture"));
    assert_eq!(again.base_origin.as_deref(), Some("http://127.0.0.1:9"));
    for sql in [
        "UPDATE intents SET contract_platform = 'other'",
        "UPDATE intents SET base_origin = 'http://elsewhere:1'",
        "UPDATE intents SET base_origin = NULL",
    ] {
        let r = db.store.execute_raw_for_tests(sql).await;
        assert!(r.is_err(), "{sql} went through");
    }
    let it = db.store.intent(&key).await.unwrap();
    assert_eq!(it.contract_platform.as_deref(), Some("fixture"));
}

/// Whatever lookup is plugged in, a found post whose permalink leaves the platform is not a finding: the
/// recovery layer turns it into a lead with an alarm (parked, no permalink recorded).
struct LyingLookup {
    binding: Binding,
}

impl PlatformLookup for LyingLookup {
    type Hold = ();

    fn binding(&self) -> &Binding {
        &self.binding
    }

    async fn hold(&self, _intent: &Intent) -> Result<Option<()>, String> {
        Ok(Some(()))
    }

    async fn find(&self, _intent: &Intent, _hold: &()) -> Result<LookupResult, String> {
        Ok(LookupResult::Found {
            platform_id: Some("abc".into()),
            permalink: Some("javascript:alert(document.domain)".into()),
            evidence: json!({}),
        })
    }
}

async fn the_recovery_layer_refuses_an_outside_permalink(b: Backend) {
    let db = store_with_accounts(b).await;
    let key = new_intent(&db.store, "alice", "lied about").await;
    let claim = match db
        .store
        .begin(&key, "w", "c", Timestamp::now())
        .await
        .unwrap()
    {
        Begun::Claimed(c) => c,
        other => panic!("{other:?}"),
    };
    let auth = db
        .store
        .authorize_dispatch(&claim, "c", Timestamp::now())
        .await
        .unwrap();
    db.store
        .settle(
            &auth.consume(),
            &Settlement::Indeterminate {
                reason: "reset".into(),
                details: json!({}),
            },
            Timestamp::now(),
        )
        .await
        .unwrap();
    let lookup = LyingLookup {
        binding: Binding {
            platform: "fixture".into(),
            version: "c".into(),
            origin: "http://127.0.0.1:9".into(),
            allowed_origins: vec!["http://127.0.0.1:9".into()],
        },
    };
    let policy = ReconcilePolicy {
        propagation_ms: 0,
        not_found: NotFoundPolicy::Stay,
        lookup_timeout: Duration::from_secs(5),
    };
    let r = recover::reconcile_one(
        &db.store,
        &lookup,
        &key,
        "r",
        false,
        policy,
        Timestamp::now(),
    )
    .await
    .unwrap();
    assert_eq!(r.state, Status::Parked, "a lead is parked even with Stay");
    let it = db.store.intent(&key).await.unwrap();
    assert_eq!(it.permalink, None);
    let tl = db.store.timeline(&key).await.unwrap();
    assert!(
        tl.events.iter().any(|e| e.kind == EventKind::Evidence
            && e.reason.as_deref().unwrap_or("").starts_with("alarm:")
            && e.details["alarm"]["value"] == "javascript:alert(document.domain)"),
        "{:?}",
        tl.events
    );
}

on_both_backends!(
    the_contract_platforms_kill_switch_refuses_authorization,
    a_recorded_binding_never_changes,
    the_recovery_layer_refuses_an_outside_permalink,
);
