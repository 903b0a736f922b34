//! The Chromium driver: sessions with bounded calls, typed locators, one-evaluation locator checks,
//! non-submitting probes, the write guard, dialog/popup policy and annotated screenshots; for publishing,
//! the compose page ([`compose`]: fill, strict checks, the one press), the create-request takeover
//! ([`transport`]: the harness sends it once) and read-back in fresh pages ([`readback`]).
//!
//! This module knows nothing about contract files: callers hand it a [`ProbePlan`] built from browser-level
//! types, so it stays reusable. It never touches the store: the press takes the store's authorization value
//! (a type, consumed) and calls a `before_send` hook the publish flow supplies.
//!
//! ```text
//!  ProbePlan ──► probe::run ──► BrowserSession (Chromium + handler task, Liveness bounds every call)
//!                   │  ├─ WriteGuard: browser-wide Fetch interception, fails every non-GET/HEAD
//!                   │  ├─ DialogPolicy: answers alert/confirm/prompt/beforeunload, closes popups
//!                   │  └─ checks: all locators in one Runtime.evaluate
//!                   └──► ProbeReport (+ annotated PNG)
//! ```
/// The page scripts' reach into **open shadow roots** (web components), spliced into each script with
/// `concat!`: `shadowScopes(root)` is `root` and every open shadow root under it at any depth (the root
/// element's own included), `deepAll(root, css)` / `deepOne(root, css)` query all of them (the light tree
/// first, then each shadow root in the order found; a selector does not cross a boundary, as in the
/// browser's own), `deepHit(root, x, y)` is the element at a point down through every shadow root
/// (`elementFromPoint` answers the outermost host; a point on a host's own text that a `<slot>` shows
/// inside its shadow tree answers that slot), `within(node, el)` walks up as the page is shown (a slotted
/// node through its slot, a shadow root through its host), `closestDeep(el, css)` up the DOM through hosts
/// (form association follows the DOM, not the slots), and `flatText(node)` is a node's text as shown (its
/// shadow tree's, each slot's assigned nodes': a design-system button labelled through a slot has an empty
/// `textContent` inside). Closed shadow roots are out of any page script's reach. Measured as the class of page it
/// serves: a compose form two shadow roots deep was not found at all, and a feed rendered by web components
/// showed no post to the look before writing, which would have pressed again (`/hostile/shadow`,
/// `?shadow=1` on Fixturebook's post and search pages).
macro_rules! shadow_js {
    () => {
        r#"
  // An element's shadow root: an open one, or a closed one the keeper holds (closed_roots.rs).
  const sr = e => {
    if (e.shadowRoot) return e.shadowRoot;
    const w = e.ownerDocument && e.ownerDocument.defaultView;
    const kept = w && w.__oncepostClosedRoots;
    return (kept && kept.get(e)) || null;
  };
  const shadowScopes = root => {
    const out = [root];
    for (let i = 0; i < out.length; i++) {
      const r = out[i];
      if (r.nodeType === 1 && sr(r)) out.push(sr(r));
      for (const e of r.querySelectorAll('*')) if (sr(e)) out.push(sr(e));
    }
    return out;
  };
  const deepAll = (root, sel) => shadowScopes(root).flatMap(r => Array.from(r.querySelectorAll(sel)));
  const deepOne = (root, sel) => { for (const r of shadowScopes(root)) { const e = r.querySelector(sel); if (e) return e; } return null; };
  const upOne = n => n.parentNode || (n instanceof ShadowRoot ? n.host : null);
  const upShown = n => n.assignedSlot || upOne(n);
  const within = (node, el) => { for (let n = node; n; n = upShown(n)) if (n === el) return true; return false; };
  const closestDeep = (el, sel) => { for (let n = el; n; n = upOne(n)) if (n.nodeType === 1 && n.matches(sel)) return n; return null; };
  const onPoint = (rects, x, y) => Array.from(rects).some(b => x >= b.left && x <= b.right && y >= b.top && y <= b.bottom);
  const slotAt = (h, x, y) => {
    for (const c of h.childNodes) {
      if (!c.assignedSlot) continue;
      let rects = null;
      if (c.nodeType === 3) { const r = h.ownerDocument.createRange(); r.selectNodeContents(c); rects = r.getClientRects(); }
      else if (c.nodeType === 1) rects = c.getClientRects();
      if (rects && onPoint(rects, x, y)) return c.assignedSlot;
    }
    return null;
  };
  const deepHit = (root, x, y) => {
    let h = root.elementFromPoint(x, y);
    while (h && sr(h)) {
      const inner = sr(h).elementFromPoint(x, y);
      if (!inner) break;
      if (inner === h) { h = slotAt(h, x, y) || h; break; }
      h = inner;
    }
    return h;
  };
  const flatText = n => {
    if (n.nodeType === 3) return n.data;
    if (n.nodeType !== 1 && n.nodeType !== 11) return '';
    if (['script', 'style', 'template'].includes(n.localName)) return '';
    let kids = n.nodeType === 1 && sr(n) ? sr(n).childNodes : n.childNodes;
    if (n.localName === 'slot') { const a = n.assignedNodes({ flatten: true }); if (a.length) kids = a; }
    return Array.from(kids).map(flatText).join('');
  };
"#
    };
}

/// JS: `emojiAlt(img)`, whether an image stands for an emoji (its alt is emoji and no letter or digit, or
/// one `:shortcode:`), `emojiIn(root)` those inside `root`, and `shownText(el)`, an element's laid-out text
/// (`innerText`) with each such image read as its alt, read without touching the page (a walk of the nodes
/// and their computed display: a composer's editor watches its own DOM). WordPress's wp-emoji, Twemoji and
/// chat composers draw emoji as `<img alt="🎉">`, and Mastodon a custom one as `<img alt=":blobcat:">`: the
/// text shows no emoji where the post has them. Any other image (a photo's description) is not text.
macro_rules! emoji_js {
    () => {
        r#"
  const emojiAlt = (e) => {
    const a = (e.getAttribute && e.getAttribute('alt')) || '';
    return a.length > 0 && a.length <= 64 && (/^:[\w+-]+:$/u.test(a)
      || (/[\p{Extended_Pictographic}\p{Regional_Indicator}]/u.test(a) && !/[\p{L}\p{N}]/u.test(a.replace(/[0-9#*]\uFE0F?\u20E3/gu, ''))));
  };
  const emojiIn = (root) => (root.querySelectorAll ? Array.from(root.querySelectorAll('img[alt]')).filter(emojiAlt) : []);
  const shownText = (el) => {
    const laid = typeof el.innerText === 'string' ? el.innerText : null;
    if (laid === null || !emojiIn(el).length) { return laid; }
    let out = '';
    const walk = (n) => {
      if (n.nodeType === 3) { out += n.data; return; }
      if (n.nodeType !== 1) { return; }
      const cs = getComputedStyle(n);
      if (cs.display === 'none' || cs.visibility === 'hidden') { return; }
      if (n.localName === 'img') { if (emojiAlt(n)) { out += n.getAttribute('alt'); } return; }
      if (n.localName === 'br') { out += '\n'; return; }
      const block = !cs.display.startsWith('inline') && cs.display !== 'contents';
      if (block) { out += '\n'; }
      n.childNodes.forEach(walk);
      if (block) { out += '\n'; }
    };
    el.childNodes.forEach(walk);
    return out;
  };
"#
    };
}

/// JS, at the top of a function of `p`: `docs`, the document and its frames of the same origin (at most 64
/// documents), each placed in the top viewport, and `hosts`, the iframes of another origin they hold (at
/// most 64), which only a world made inside each reaches (other_origin.rs); with `p.hosts` the function
/// returns `hosts` at once (`other_origin::frames_inside` lists them so). Needs `shadow_js!`'s `deepAll`
/// (an iframe inside a shadow root counts).
macro_rules! frames_js {
    () => {
        r#"
  const framesOf = () => {
    const docs = [{ doc: document, x: 0, y: 0 }];
    const hosts = [];
    for (let i = 0; i < docs.length && docs.length < 64; i++) {
      const { doc, x, y } = docs[i];
      for (const f of deepAll(doc, 'iframe, frame')) {
        let d = null;
        try { d = f.contentDocument; } catch (e) { d = null; }
        if (!d && hosts.length < 64) hosts.push(f);
        if (!d || docs.length >= 64) continue;
        const r = f.getBoundingClientRect(), cs = f.ownerDocument.defaultView.getComputedStyle(f);
        docs.push({ doc: d, x: x + r.left + f.clientLeft + (parseFloat(cs.paddingLeft) || 0),
                    y: y + r.top + f.clientTop + (parseFloat(cs.paddingTop) || 0) });
      }
    }
    return { docs, hosts };
  };
  const { docs, hosts } = framesOf();
  if (p.hosts) return hosts;
"#
    };
}

pub mod checks;
mod closed_roots;
pub mod compose;
pub mod dialogs;
pub mod door;
pub mod guard;
pub mod locator;
mod other_origin;
pub mod probe;
pub mod readback;
mod reuse;
pub mod screenshot;
pub mod session;
mod signals;
pub mod transport;
pub mod write_guard;

use std::path::PathBuf;
use std::time::Duration;

pub use checks::{ElementStates, LocatorCheck};
pub use compose::{Actionable, ComposePage, Opening, Pressed, Success, SuccessRule, SuccessSeen};
pub use dialogs::{DialogEvent, DialogPolicy};
pub use locator::{
    EditKind, ElementState, FillMode, Locator, NamedLocator, Newlines, NonPublishingStep, PressKey,
    PublishControl, Purpose, StepAction, Strategy,
};
pub use probe::{ProbeOptions, ProbePlan, ProbeReport, ProbeVerdict};
pub use readback::{
    Alarm, Authorship, Candidate, LeadReason, ReadVerdict, Readback, ReadbackPlan, TextRule,
};
pub use session::{BrowserSession, LaunchOptions, Liveness, find_chromium, launches};
pub use transport::{
    CreatePattern, DispatchOutcome, OneShotSender, RequestFacts, TransportMode, TransportOptions,
    UrlMatch, WireRequest, WriteLogEntry,
};
pub use write_guard::{WriteAttempt, WriteGuard};

/// Errors of the browser boundary. Callers ask the `is_*` predicates (or match the variants), never the text:
/// what an error means is classified once, where it is created ([`CdpFailure::of`] for Chromium's answers).
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// No Chromium binary was found.
    #[error("Chromium not found (looked at {looked}); {hint}", hint = session::INSTALL_HINT)]
    ChromiumMissing {
        /// Where we looked.
        looked: String,
    },
    /// Chromium could not be started.
    #[error("cannot launch Chromium: {message}")]
    Launch {
        /// Why.
        message: String,
    },
    /// Chromium refused the profile because another Chromium holds it (its ProcessSingleton lock).
    #[error(
        "cannot launch Chromium: profile {} is in use by another Chromium (one browser per account at a \
         time): {message}",
        dir.display()
    )]
    ProfileInUse {
        /// The profile directory.
        dir: PathBuf,
        /// Chromium's own words.
        message: String,
    },
    /// The profile directory could not be prepared.
    #[error("cannot prepare browser profile {dir}: {message}")]
    Profile {
        /// The directory.
        dir: PathBuf,
        /// Why.
        message: String,
    },
    /// The browser process died or its connection broke.
    #[error("the browser died (connection lost) during {during}")]
    Died {
        /// What was being done.
        during: String,
    },
    /// A call or wait ran past its bound.
    #[error("{during} did not finish within {after:?}")]
    Timeout {
        /// What was being done.
        during: String,
        /// The bound.
        after: Duration,
    },
    /// Chromium answered a call with an error.
    #[error("{during} failed: {message}")]
    Cdp {
        /// What was being done.
        during: String,
        /// Chromium's message.
        message: String,
        /// What the answer means, classified when it arrived.
        failure: CdpFailure,
    },
    /// The page's JavaScript for the checks failed or returned something unexpected.
    #[error("locator check script failed: {0}")]
    Script(String),
    /// A plan that cannot be run (e.g. a step aimed at the publish control).
    #[error("invalid probe plan: {0}")]
    Plan(String),
    /// The write guard's log is poisoned (a task panicked holding it): what the page attempted is unknown,
    /// so every request is failed and nothing read from the log can be trusted (fail closed).
    #[error("the write guard's log is unreadable (poisoned by a panic): {during}")]
    GuardPoisoned {
        /// What was being done.
        during: String,
    },
    /// Reading or writing a local file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// What an error answer from Chromium means, decided once from the chromiumoxide error that carried it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CdpFailure {
    /// A paused request's target (page, popup, frame) is gone: Chromium cancelled the request and no
    /// longer knows its interception id ("Invalid InterceptionId"). The request did not leave.
    TargetGone,
    /// A navigation reached no server at all (the Chromium network error code, e.g.
    /// `net::ERR_CONNECTION_REFUSED`): nothing was exchanged with the platform.
    Unreachable(&'static str),
    /// Any other error answer.
    Other,
}

/// Chromium's network errors that mean a navigation reached no server at all: nothing was exchanged with the
/// platform, and the URL (or the platform's address) is wrong or down.
const UNREACHABLE_NET_ERRORS: [&str; 6] = [
    "net::ERR_CONNECTION_REFUSED",
    "net::ERR_NAME_NOT_RESOLVED",
    "net::ERR_ADDRESS_UNREACHABLE",
    "net::ERR_ADDRESS_INVALID",
    "net::ERR_UNSAFE_PORT",
    "net::ERR_INVALID_URL",
];

/// Chromium's answer (`Fetch.*` with an id it no longer knows) when the paused request's target is gone.
const TARGET_GONE: &str = "Invalid InterceptionId";

impl CdpFailure {
    /// Classify a chromiumoxide error. Chromium's answers carry no machine-readable reason beyond a JSON-RPC
    /// code shared by every bad parameter (-32602), so its message is read here, once: a navigation's
    /// `errorText` arrives as `ChromeMessage`, a protocol error as `Chrome`.
    pub fn of(e: &chromiumoxide::error::CdpError) -> CdpFailure {
        use chromiumoxide::error::CdpError;
        let message = match e {
            CdpError::Chrome(c) => c.message.as_str(),
            CdpError::ChromeMessage(m) => m.as_str(),
            _ => return CdpFailure::Other,
        };
        CdpFailure::of_message(message)
    }

    fn of_message(message: &str) -> CdpFailure {
        if message.contains(TARGET_GONE) {
            return CdpFailure::TargetGone;
        }
        match UNREACHABLE_NET_ERRORS
            .into_iter()
            .find(|code| message.contains(code))
        {
            Some(code) => CdpFailure::Unreachable(code),
            None => CdpFailure::Other,
        }
    }
}

impl BrowserError {
    /// The Chromium network error, when this is a navigation that reached no server (connection refused,
    /// name not resolved, ...).
    pub fn unreachable(&self) -> Option<&'static str> {
        match self {
            BrowserError::Cdp {
                failure: CdpFailure::Unreachable(code),
                ..
            } => Some(code),
            _ => None,
        }
    }

    /// Whether this is a navigation that reached no server (see [`BrowserError::unreachable`]).
    pub fn is_unreachable(&self) -> bool {
        self.unreachable().is_some()
    }

    /// Whether answering a paused request failed only because its target (page, popup, frame) is gone,
    /// which cancels the request inside Chromium.
    pub fn is_target_gone(&self) -> bool {
        matches!(
            self,
            BrowserError::Cdp {
                failure: CdpFailure::TargetGone,
                ..
            }
        )
    }

    /// Whether Chromium refused the profile because another Chromium holds it.
    pub fn is_profile_in_use(&self) -> bool {
        matches!(self, BrowserError::ProfileInUse { .. })
    }

    /// Whether the browser died (or its connection broke).
    pub fn is_died(&self) -> bool {
        matches!(self, BrowserError::Died { .. })
    }

    /// Whether a call or a wait ran past its bound.
    pub fn is_timeout(&self) -> bool {
        matches!(self, BrowserError::Timeout { .. })
    }

    /// Whether the write guard's log was found poisoned (see [`BrowserError::GuardPoisoned`]).
    pub fn is_guard_poisoned(&self) -> bool {
        matches!(self, BrowserError::GuardPoisoned { .. })
    }
}

/// A wait that ran out is a bound that was passed: `Timeout`, naming what was awaited.
impl From<crate::wait::Expired> for BrowserError {
    fn from(e: crate::wait::Expired) -> Self {
        BrowserError::Timeout {
            during: e.what,
            after: e.bound,
        }
    }
}

pub use crate::durable::private_dir;

#[cfg(test)]
mod tests {
    use super::*;
    use chromiumoxide::error::CdpError;
    use std::path::Path;

    fn cdp(e: CdpError) -> BrowserError {
        BrowserError::Cdp {
            during: "a call".into(),
            message: e.to_string(),
            failure: CdpFailure::of(&e),
        }
    }

    #[test]
    fn chromiums_answers_are_classified_once_and_asked_by_predicate() {
        // What Chromium 156 answers Fetch.failRequest for a request whose page closed.
        let gone = cdp(CdpError::Chrome(chromiumoxide::types::Error {
            code: -32602,
            message: "Invalid InterceptionId.".into(),
        }));
        assert!(gone.is_target_gone());
        assert!(!gone.is_unreachable());
        // A navigation's errorText.
        let refused = cdp(CdpError::ChromeMessage(
            "net::ERR_CONNECTION_REFUSED".into(),
        ));
        assert_eq!(refused.unreachable(), Some("net::ERR_CONNECTION_REFUSED"));
        assert!(refused.is_unreachable() && !refused.is_target_gone());
        let other = cdp(CdpError::Chrome(chromiumoxide::types::Error {
            code: -32000,
            message: "Cannot find context with specified id".into(),
        }));
        assert!(!other.is_target_gone() && !other.is_unreachable());
        // Only Chromium's own answers are read: a local error quoting the words is not one.
        assert_eq!(
            CdpFailure::of(&CdpError::NotFound),
            CdpFailure::Other,
            "a chromiumoxide-side error is never a Chromium answer"
        );
        let io = std::io::Error::other("Invalid InterceptionId");
        assert_eq!(CdpFailure::of(&CdpError::Io(io)), CdpFailure::Other);
        // The text is unchanged by the classification.
        assert_eq!(
            refused.to_string(),
            "a call failed: net::ERR_CONNECTION_REFUSED"
        );
    }

    #[test]
    fn the_other_predicates_name_their_variant() {
        let died = BrowserError::Died { during: "x".into() };
        assert!(died.is_died() && !died.is_timeout() && !died.is_target_gone());
        let late: BrowserError = crate::wait::Expired {
            what: "the success signal".into(),
            bound: Duration::from_secs(2),
        }
        .into();
        assert!(late.is_timeout());
        assert_eq!(
            late.to_string(),
            "the success signal did not finish within 2s"
        );
        let in_use = BrowserError::ProfileInUse {
            dir: "/p/alice".into(),
            message: "ProcessSingleton".into(),
        };
        assert!(in_use.is_profile_in_use());
        assert_eq!(
            in_use.to_string(),
            "cannot launch Chromium: profile /p/alice is in use by another Chromium (one browser per \
             account at a time): ProcessSingleton"
        );
        let held = session::launch_error(
            Path::new("/p/alice"),
            "Browser process exited ... Failed to create /p/alice/SingletonLock: File exists"
                .into(),
        );
        assert!(held.is_profile_in_use(), "{held}");
        let other = session::launch_error(Path::new("/p/alice"), "no such file".into());
        assert!(!other.is_profile_in_use());
        assert_eq!(other.to_string(), "cannot launch Chromium: no such file");
        let poisoned = BrowserError::GuardPoisoned { during: "y".into() };
        assert!(poisoned.is_guard_poisoned() && !poisoned.is_died());
    }
}
