//! The production lookup: the contract's read-back search in headless Chromium, one browser profile per
//! account (logged-in sessions survive), evidence stored content-addressed. It only reads: the write guard
//! of every session stays armed, so a page that tries to write during a lookup is blocked.
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use tokio::sync::Mutex;

use super::{LookupResult, PlatformLookup};
use crate::browser::{self, BrowserSession, LaunchOptions, ReadVerdict, ReadbackPlan};
use crate::evidence::EvidenceStore;
use crate::failpoint::{self, FailPoint};
use crate::store::Intent;

/// Looks posts up through the platform's search page, as the contract describes it.
pub struct BrowserLookup {
    plan: ReadbackPlan,
    profiles: PathBuf,
    evidence: EvidenceStore,
    navigation_timeout: Duration,
    sessions: Mutex<HashMap<String, BrowserSession>>,
}

impl BrowserLookup {
    /// A lookup with the contract's read-back plan; browser profiles under `data_dir/profiles/<account>`.
    pub fn new(
        plan: ReadbackPlan,
        data_dir: &std::path::Path,
        navigation_timeout: Duration,
    ) -> Self {
        BrowserLookup {
            plan,
            profiles: data_dir.join("profiles"),
            evidence: EvidenceStore::new(data_dir),
            navigation_timeout,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// The contract's propagation window (ms): before it, "not found" means nothing.
    pub fn propagation_ms(&self) -> i64 {
        self.plan.propagation_ms as i64
    }

    /// Close every browser this lookup started.
    pub async fn close(self) {
        for (_, s) in self.sessions.into_inner() {
            s.close().await;
        }
    }
}

impl PlatformLookup for BrowserLookup {
    async fn find(&self, intent: &Intent) -> Result<LookupResult, String> {
        let Some(text) = intent.request.text.clone().filter(|t| !t.is_empty()) else {
            return Err(format!(
                "a {} has no text to search for; a person must look",
                intent.action
            ));
        };
        let mut sessions = self.sessions.lock().await;
        if !sessions.contains_key(&intent.account) {
            let opts = LaunchOptions::new(self.profiles.join(&intent.account));
            let s = BrowserSession::launch(&opts)
                .await
                .map_err(|e| e.to_string())?;
            sessions.insert(intent.account.clone(), s);
        }
        let session = sessions
            .get(&intent.account)
            .ok_or("browser session vanished")?;
        let rb = browser::readback::by_search(
            session,
            &self.plan,
            &text,
            false,
            self.navigation_timeout,
        )
        .await
        .map_err(|e| e.to_string())?;
        // The lookup (recorded as started) has read the platform; what it saw is not recorded yet.
        failpoint::hit(FailPoint::DuringReconcile);
        let mut items = Vec::new();
        if let Some(png) = &rb.png {
            if let Ok(item) = self
                .evidence
                .put("screenshot_readback", png, "png", "image/png")
            {
                items.push(item);
            }
        }
        if let Ok(v) = serde_json::to_value(&rb)
            && let Ok(item) = self.evidence.put_json("readback", &v)
        {
            items.push(item);
        }
        let evidence = json!({ "url": rb.url, "by": rb.by, "reads": rb.reads, "items": items });
        Ok(match rb.verdict {
            ReadVerdict::Match { id, permalink } => LookupResult::Found {
                platform_id: id,
                permalink,
                evidence,
            },
            ReadVerdict::Mismatch { .. } | ReadVerdict::NotFound => {
                LookupResult::NotFound { evidence }
            }
        })
    }
}
