//! Warm browsers: a worker keeps each account's browser open between sends instead of launching Chromium
//! for every post (the launch and the close were ~0.5-1 s of a 2.7 s queued publish, measured in
//! docs/benchmarks.md).
//!
//! What a warm browser holds, between two sends of its account: the Chromium (no page open: see
//! `browser/reuse.rs` for what is closed and checked after every send), the account's browser-profile lock on
//! this host and the account's lease in the store (renewed while idle, so another host does not take an
//! account whose login is open here; given back when the browser closes). Nothing about the protocol changes:
//! each send is a whole publish (begin, its own fresh pages, the authorization that renews and checks the
//! lease, the one create request, the read-back), and the store decides everything as for a cold one.
//!
//! A warm browser is closed when it has been idle for [`WarmLimits::idle_for`], has carried
//! [`MAX_SENDS`] sends or lived [`MAX_AGE`] (bounds on what a long-lived Chromium and its per-send listeners
//! accumulate), when its lease cannot be renewed (another host has the account now), when the worker keeps
//! more idle browsers than [`WarmLimits::max_idle`] (least recently used first), when a send leaves anything
//! behind, and when the worker stops.
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::browser::BrowserSession;
use crate::lock::FileLock;
use crate::store::{AccountLease, Store, Timestamp};

use super::ACCOUNT_LEASE_MS;

/// Sends one browser carries before it is closed and a fresh one launched.
pub const MAX_SENDS: u32 = 100;
/// How long one browser lives at most.
pub const MAX_AGE: Duration = Duration::from_secs(30 * 60);

/// How many browsers a worker keeps warm, and for how long.
#[derive(Debug, Clone, Copy)]
pub struct WarmLimits {
    /// Idle browsers kept at most (0: every send launches its own browser and closes it).
    pub max_idle: usize,
    /// How long a browser may wait for its account's next send.
    pub idle_for: Duration,
}

/// One account's open browser with what makes it that account's: the profile lock and the lease.
pub(crate) struct WarmBrowser {
    pub(crate) session: BrowserSession,
    pub(crate) lease: AccountLease,
    pub(crate) profile_lock: FileLock,
    pub(crate) sends: u32,
    pub(crate) launched: Instant,
    idle_since: Instant,
    renewed: Instant,
}

impl WarmBrowser {
    pub(crate) fn new(
        session: BrowserSession,
        lease: AccountLease,
        profile_lock: FileLock,
    ) -> Self {
        let now = Instant::now();
        WarmBrowser {
            session,
            lease,
            profile_lock,
            sends: 0,
            launched: now,
            idle_since: now,
            renewed: now,
        }
    }

    /// Close the browser, then give the lease back (a lease left behind only delays the account elsewhere
    /// until it expires) and the profile lock.
    pub(crate) async fn close(self, store: &Store) {
        self.session.close().await;
        if let Err(e) = store
            .release_account_lease(&self.lease, Timestamp::now())
            .await
        {
            tracing::warn!(error = %e, "the account lease could not be given back; it expires by itself");
        }
        drop(self.profile_lock);
    }
}

/// The idle warm browsers of one worker, by account.
pub struct WarmBrowsers {
    holder: String,
    limits: WarmLimits,
    idle: Mutex<HashMap<String, WarmBrowser>>,
}

impl std::fmt::Debug for WarmBrowsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmBrowsers")
            .field("holder", &self.holder)
            .field("limits", &self.limits)
            .finish()
    }
}

impl WarmBrowsers {
    /// A pool for one worker process: its account-lease holder id is minted here and used by every publish it
    /// runs (so the queue knows the accounts it holds are its own).
    pub fn new(limits: WarmLimits) -> Self {
        WarmBrowsers {
            holder: super::lease_holder(&super::owner_id()),
            limits,
            idle: Mutex::new(HashMap::new()),
        }
    }

    /// This worker's account-lease holder id.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// How many browsers are idle now.
    pub fn idle_count(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, WarmBrowser>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The account's idle browser, taken out of the pool (the caller runs a send on it, then gives it back
    /// with [`WarmBrowsers::give_back`] or closes it). One that no longer answers (it died while it waited)
    /// is closed here (its lease given back) and `None` is the answer: the caller launches a fresh one.
    pub(crate) async fn take(&self, store: &Store, account: &str) -> Option<WarmBrowser> {
        let w = self.lock().remove(account)?;
        if !w.session.answers().await {
            tracing::info!(account = %account, "the warm browser died while it waited; launching anew");
            w.close(store).await;
            return None;
        }
        Some(w)
    }

    /// After a send: clean the browser for the next send and keep it, or close it (the send left something
    /// behind, a bound is reached, or the pool keeps no browsers). Returns why it was closed, if it was.
    pub(crate) async fn give_back(&self, store: &Store, mut w: WarmBrowser) -> Option<String> {
        w.sends += 1;
        let why = if self.limits.max_idle == 0 {
            Some("the worker keeps no warm browsers".to_string())
        } else if w.sends >= MAX_SENDS {
            Some(format!("it carried {MAX_SENDS} sends"))
        } else if w.launched.elapsed() >= MAX_AGE {
            Some("it reached its maximum age".into())
        } else {
            w.session.clean_between_sends().await.err()
        };
        if let Some(why) = why {
            tracing::info!(account = %w.lease.account, why = %why, "browser closed, not kept warm");
            w.close(store).await;
            return Some(why);
        }
        w.idle_since = Instant::now();
        let evicted = {
            let mut idle = self.lock();
            let old = idle.insert(w.lease.account.clone(), w);
            let mut evicted: Vec<WarmBrowser> = old.into_iter().collect();
            while idle.len() > self.limits.max_idle {
                let Some(lru) = idle
                    .iter()
                    .min_by_key(|(_, b)| b.idle_since)
                    .map(|(a, _)| a.clone())
                else {
                    break;
                };
                evicted.extend(idle.remove(&lru));
            }
            evicted
        };
        for e in evicted {
            e.close(store).await;
        }
        None
    }

    /// Keep the idle browsers' leases alive and close the ones that waited too long, died, or lost their
    /// lease. Called by the worker's queue loop on every turn; does store work only every third of a lease.
    pub async fn maintain(&self, store: &Store) {
        let due: Vec<WarmBrowser> = {
            let mut idle = self.lock();
            let accounts: Vec<String> = idle
                .iter()
                .filter(|(_, b)| {
                    b.idle_since.elapsed() >= self.limits.idle_for
                        || b.session.liveness().is_dead()
                        || b.renewed.elapsed() >= Duration::from_millis(ACCOUNT_LEASE_MS as u64 / 3)
                })
                .map(|(a, _)| a.clone())
                .collect();
            accounts.iter().filter_map(|a| idle.remove(a)).collect()
        };
        for mut b in due {
            if b.idle_since.elapsed() >= self.limits.idle_for || b.session.liveness().is_dead() {
                b.close(store).await;
                continue;
            }
            match store
                .acquire_account_lease(
                    &b.lease.account,
                    &b.lease.holder,
                    ACCOUNT_LEASE_MS,
                    Timestamp::now(),
                )
                .await
            {
                Ok(lease) => {
                    let kept = lease.fence == b.lease.fence;
                    b.lease = lease;
                    b.renewed = Instant::now();
                    if kept {
                        self.lock().insert(b.lease.account.clone(), b);
                    } else {
                        // It ran out and was taken anew (a new fence): another host may have had the
                        // account in between. Closed, the new lease given back; a clean launch next time.
                        b.close(store).await;
                    }
                }
                // Lost to another holder, or the store is away: not this worker's account any more, or not
                // known to be. Closed (the lease is given back if it still is ours).
                Err(_) => b.close(store).await,
            }
        }
    }

    /// Close the account's idle browser, if one is kept (its account lease given back): the account was set
    /// aside on this host (`set_aside.rs`), and a person logs its profile in again.
    pub async fn close_account(&self, store: &Store, account: &str) {
        let kept = self.lock().remove(account);
        if let Some(b) = kept {
            b.close(store).await;
        }
    }

    /// Close every idle browser (the worker stops).
    pub async fn close_all(&self, store: &Store) {
        let all: Vec<WarmBrowser> = self.lock().drain().map(|(_, b)| b).collect();
        for b in all {
            b.close(store).await;
        }
    }
}
