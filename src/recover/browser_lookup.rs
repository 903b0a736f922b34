//! The production lookup: the contract's read-back search in headless Chromium, one browser profile per
//! account (logged-in sessions survive), evidence stored content-addressed. It only reads: the write guard
//! of every session stays armed, so a page that tries to write during a lookup is blocked; only the requests
//! the contract declares reads sent with a write method (`read_requests`: a GraphQL query) are sent.
//!
//! Each lookup takes the account's profile lock (as a publish does), launches Chromium, reads, and closes
//! it: a long-running worker never holds a profile that a publish on this host needs.
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use super::{LookupResult, PlatformLookup};
use crate::browser::{self, BrowserSession, LaunchOptions, ReadVerdict, ReadbackPlan};
use crate::contract::Binding;
use crate::evidence::EvidenceStore;
use crate::failpoint::{self, FailPoint};
use crate::store::{EventKind, Intent, Store};

/// Looks posts up through the platform's search page, as the contract describes it.
pub struct BrowserLookup {
    plan: ReadbackPlan,
    /// The contract's create request: when its `url_regex` names the post (`(?P<id>...)`), the request
    /// an attempt sent says which post to read first.
    create: browser::CreatePattern,
    /// The contract's declared read requests (a GraphQL query): a lookup sends them, as a page that reads
    /// its posts that way shows nothing without them. Every other write stays blocked.
    reads: Vec<browser::CreatePattern>,
    /// The contract's live sockets: the relayed ones (`relay = true`) are relayed for the lookup's read page,
    /// only its read messages let through (a page that shows its posts once its socket is up).
    live: Vec<browser::door::LiveSocket>,
    binding: Binding,
    store: Store,
    profiles: PathBuf,
    evidence: EvidenceStore,
    navigation_timeout: Duration,
}

impl BrowserLookup {
    /// A lookup with the contract's read-back plan and binding; browser profiles under
    /// `data_dir/profiles/<account>`; each account's handle read from `store` at each lookup.
    pub fn new(
        plan: ReadbackPlan,
        create: browser::CreatePattern,
        reads: Vec<browser::CreatePattern>,
        binding: Binding,
        store: Store,
        data_dir: &std::path::Path,
        navigation_timeout: Duration,
    ) -> Self {
        BrowserLookup {
            plan,
            create,
            reads,
            live: Vec::new(),
            binding,
            store,
            profiles: data_dir.join("profiles"),
            evidence: EvidenceStore::new(data_dir),
            navigation_timeout,
        }
    }

    /// The contract's live sockets (see the field).
    pub fn with_live_sockets(mut self, live: Vec<browser::door::LiveSocket>) -> Self {
        self.live = live;
        self
    }

    /// The contract's propagation window (ms): before it, "not found" means nothing.
    pub fn propagation_ms(&self) -> i64 {
        self.plan.propagation_ms as i64
    }
}

impl PlatformLookup for BrowserLookup {
    type Hold = crate::lock::FileLock;

    fn binding(&self) -> &Binding {
        &self.binding
    }

    /// One Chromium per profile: wait (at most half the lookup bound) for a publish of this account on
    /// this host to finish with the profile.
    async fn hold(&self, intent: &Intent) -> Result<Option<Self::Hold>, String> {
        let lock_path = crate::lock::profile_lock_path(&self.profiles, &intent.account)
            .map_err(|e| e.to_string())?;
        let cannot = |e: std::io::Error| format!("cannot lock {}: {e}", lock_path.display());
        if let Some(held) = crate::lock::FileLock::try_take(&lock_path).map_err(cannot)? {
            return Ok(Some(held));
        }
        // Said once, before the wait: a person reading the log (and a test timing a signal) sees that the
        // lookup is queued behind the profile, not running.
        tracing::info!(account = %intent.account, "browser profile busy: the lookup waits for it");
        crate::lock::FileLock::take_within(&lock_path, self.navigation_timeout / 2)
            .await
            .map_err(cannot)
    }

    async fn find(&self, intent: &Intent, _profile: &Self::Hold) -> Result<LookupResult, String> {
        let Some(text) = intent.request.text.clone().filter(|t| !t.is_empty()) else {
            return Err(format!(
                "a {} has no text to search for; a person must look",
                intent.action
            ));
        };
        // The handle as recorded now: a search match settles only on an item showing it.
        let account = self
            .store
            .account(&intent.account)
            .await
            .map_err(|e| format!("cannot read account {:?}: {e}", intent.account))?;
        let mut plan = self.plan.clone();
        plan.handle = account.handle;
        plan.for_post(&text, &intent.request.fields);
        plan.mark(&intent.key);
        let opts = LaunchOptions::new(
            crate::lock::profile_dir(&self.profiles, &intent.account).map_err(|e| e.to_string())?,
        );
        let session = BrowserSession::launch(&opts)
            .await
            .map_err(|e| e.to_string())?;
        // A lookup reads as a probe does: the sockets oncepost relays (the create's, the live ones with
        // `relay = true`) are connected, and only the page's read messages leave on them.
        session
            .write_guard()
            .recognise_declared(Vec::new(), self.create.clone());
        session
            .write_guard()
            .let_reads_through(self.reads.clone(), self.create.clone());
        // A lookup only reads: on a platform that creates by GET, a read matching the create never leaves.
        session.write_guard().know_create(&self.create);
        session
            .write_guard()
            .door()
            .sinkhole()
            .declare_live_sockets(self.live.clone());
        let sent_id = self.sent_id(intent).await?;
        let r = self.look(&session, &plan, &text, sent_id.as_deref()).await;
        session.close().await;
        r
    }
}

impl BrowserLookup {
    /// The post id the create request this intent sent named (the last `request_sent` URL, through the
    /// contract's `url_regex` group `id`), if the contract names one there.
    async fn sent_id(&self, intent: &Intent) -> Result<Option<String>, String> {
        if !self.create_names_id() {
            return Ok(None);
        }
        let timeline = self
            .store
            .timeline(&intent.key)
            .await
            .map_err(|e| format!("cannot read the intent's history: {e}"))?;
        Ok(timeline
            .events
            .iter()
            .rev()
            .find(|e| e.kind == EventKind::RequestSent)
            .and_then(|e| e.details.get("url").and_then(|u| u.as_str()))
            .and_then(|url| self.create.id_in(url)))
    }

    fn create_names_id(&self) -> bool {
        matches!(&self.create.url, browser::UrlMatch::Regex(r)
            if r.capture_names().flatten().any(|n| n == "id"))
    }

    /// Read the post the sent request named first (a match there needs the account's handle shown); when
    /// it is not there, or shows other text, search as for every intent.
    async fn look(
        &self,
        session: &BrowserSession,
        plan: &ReadbackPlan,
        text: &str,
        sent_id: Option<&str>,
    ) -> Result<LookupResult, String> {
        let by_id = match sent_id {
            Some(id) => Some(
                browser::readback::by_sent_id(session, plan, id, text, self.navigation_timeout)
                    .await
                    .map_err(|e| e.to_string())?,
            ),
            None => None,
        };
        let rb = match by_id {
            Some(rb)
                if matches!(
                    rb.verdict,
                    ReadVerdict::Match { .. } | ReadVerdict::Lead { .. }
                ) =>
            {
                rb
            }
            _ => browser::readback::by_search(session, plan, text, false, self.navigation_timeout)
                .await
                .map_err(|e| e.to_string())?,
        };
        // The lookup (recorded as started) has read the platform; what it saw is not recorded yet.
        failpoint::hit(FailPoint::DuringReconcile);
        let mut items = Vec::new();
        if let Some(png) = &rb.png
            && let Ok(item) = self
                .evidence
                .put("screenshot_readback", png, "png", "image/png")
        {
            items.push(item);
        }
        if let Ok(v) = serde_json::to_value(&rb)
            && let Ok(item) = self.evidence.put_json("readback", &v)
        {
            items.push(item);
        }
        let evidence = json!({ "url": rb.url, "by": rb.by, "reads": rb.reads, "items": items });
        let alarms: Vec<serde_json::Value> = rb
            .alarms
            .iter()
            .filter_map(|a| serde_json::to_value(a).ok())
            .collect();
        Ok(match rb.verdict {
            ReadVerdict::Match {
                id,
                permalink,
                authorship,
            } => {
                let mut evidence = evidence;
                evidence["authorship"] = serde_json::to_value(&authorship).unwrap_or_default();
                LookupResult::Found {
                    platform_id: id,
                    permalink,
                    evidence,
                }
            }
            ReadVerdict::Lead { candidates } => LookupResult::Lead {
                candidates: serde_json::to_value(&candidates).unwrap_or_default(),
                alarms,
                evidence,
            },
            ReadVerdict::Mismatch { .. } | ReadVerdict::NotFound => {
                LookupResult::NotFound { evidence }
            }
        })
    }
}
