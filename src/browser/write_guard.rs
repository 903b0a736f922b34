//! The write guard: every HTTP request of the browser is answered here. GET/HEAD are fetched by oncepost
//! (the door's read client) and fulfilled; every other request is failed before it leaves, except the one
//! create request an authorized press hands to the harness. Together with the door (`door/`: the browser's
//! proxy is a sinkhole) this is the only way anything leaves a session.
//!
//! `Fetch.enable` with a catch-all pattern is sent on the BROWSER session, before any page exists. Measured
//! on Chromium 156: browser-level interception pauses requests of every target in the browser: the page, its
//! iframes, `sendBeacon` pings, dedicated workers and popups (each arrives as one `Fetch.requestPaused` with
//! the frame that caused it). Service workers are additionally bypassed per page
//! (`Network.setBypassServiceWorker`) and their auto-preload disabled at launch. Each paused request is
//! answered in its own task with a bound: GET/HEAD are fetched and fulfilled, anything else fails with
//! `BlockedByClient` and is recorded as a [`WriteAttempt`].
//!
//! Not covered by an alarm (measured): a service worker registered by the page has its script fetched, but
//! its own install-time request is neither paused nor sent during the probe (chromiumoxide auto-attaches
//! workers with `waitForDebuggerOnStart` and detaches service workers); the server sees zero writes, but
//! the probe does not report that attempt. Iframes of another origin are guarded too (browser-wide;
//! Fixturebook's `/hostile/cross-origin`, tests/it/door.rs); their locators are checked inside them
//! (`other_origin.rs`). A request nobody answers would hang forever, so an answer that
//! cannot be sent is recorded as a guard fault instead of being dropped silently.
//!
//! The log is behind a mutex. A poisoned mutex (a task panicked holding it) fails closed: every request
//! paused afterwards is failed before it leaves (no read is fetched: whether it carries the typed text is
//! unknown), and every reader of the log gets [`BrowserError::GuardPoisoned`] (or, for the faults, a fault
//! line) instead of an empty list, so a probe reports it and a publish can neither call a press "not sent"
//! nor miss an alarm.
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use chromiumoxide::cdp::browser_protocol::fetch::{
    ContinueRequestParams, EnableParams, EventRequestPaused, FailRequestParams, RequestPattern,
};
use chromiumoxide::cdp::browser_protocol::network::{ErrorReason, ResourceType};
use futures::StreamExt;
use serde::Serialize;

use tokio::sync::oneshot;

use super::door::Door;
use super::door::carried::{NotThePost, PostLines};
use super::door::reads::ReadAnswer;
use super::door::socket::{self, Handover, SocketRecord};
use super::door::typed::Watched;
use super::session::BrowserHandle;
use super::transport::{
    CreatePattern, RequestFacts, fulfill_params, request_body, request_headers,
};
use super::{BrowserError, Liveness};

/// A write the page attempted and the guard failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WriteAttempt {
    /// HTTP method.
    pub method: String,
    /// Full URL.
    pub url: String,
    /// Resource type as Chromium reports it (`XHR` for fetch, `Ping` for beacons, `Document` for forms).
    pub resource_type: String,
    /// Frame that issued it (page, iframe, popup or the worker's owner).
    pub frame_id: String,
    /// Whether the guard managed to fail it (false = the answer could not be delivered).
    pub blocked: bool,
    /// A GET/HEAD failed because its URL carried text oncepost typed into the page before the press (a
    /// "read" that sends the draft: an analytics pixel, a draft-sync GET).
    pub carried_typed_text: bool,
    /// It matches a write the contract declares non-publishing (`non_publish_writes`) and is not the
    /// create request: during a probe it is blocked like any write but reported apart, not as an alarm.
    pub declared: bool,
    /// A request matching the create request after the press that was not this post's (a line of it is
    /// missing, or it carries another post of the account too: `door/carried.rs`): never sent, and the press
    /// still waits for the one that is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_the_post: Option<NotThePost>,
}

/// A write the contract declares non-publishing (`non_publish_writes`), let through during a publish: sent
/// by oncepost (Chromium has no route out) and its answer handed to the page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForwardedWrite {
    /// HTTP method.
    pub method: String,
    /// Full URL.
    pub url: String,
    /// The platform's answer, when one came.
    pub status: Option<u16>,
    /// Why no answer came (the page sees a network error).
    pub error: Option<String>,
    /// It left after the press and carried every line of the post (`door/carried.rs`): a draft saved on the
    /// press does, and so does a publish a declaration covers by mistake (a rule wider than the drafts, a
    /// create rule that misses the page's real create), which would have made the post outside the one
    /// authorized write. With one such, a press whose create never came is not proof of "not sent", unless
    /// a write carrying the post was stopped after the press too (the page's publish, failed).
    pub carried_post: bool,
}

/// The writes the contract declares non-publishing, the create request that is never one of them, and
/// whether they are let through (a publish) or only recognised (a probe: blocked, reported apart).
#[derive(Debug, Clone)]
struct Declared {
    rules: Vec<CreatePattern>,
    create: CreatePattern,
    pass: bool,
}

impl Declared {
    /// A declared write: matched by a rule and not the create request. A request whose body is unknown is
    /// never one: whether it is the create request cannot be told, and it could not be sent faithfully.
    fn covers(&self, r: &RequestFacts<'_>) -> bool {
        r.body.is_some() && !self.create.matches(r) && self.rules.iter().any(|d| d.matches(r))
    }
}

#[derive(Debug, Default)]
struct Log {
    writes: Vec<WriteAttempt>,
    faults: Vec<String>,
    paused: usize,
    takeover: Option<Takeover>,
    /// The create request when the platform creates by a read method (a guestbook's `method=get` form):
    /// every request matching it is the create, failed unless it is the armed press's one handover.
    read_create: Option<CreatePattern>,
    /// What oncepost typed into the page, watched from the fill on (see `watch_typed`).
    typed: Vec<Watched>,
    /// The post's text, which the create request must carry to be handed over (see `expect_in_create`).
    post: PostLines,
    /// The press armed the takeover: from now on oncepost's own read pages may carry the typed text (a
    /// search by it), and only they.
    pressed: bool,
    /// The main frames of oncepost's read pages (the look's and the read-back's), by frame id.
    readers: std::collections::HashSet<String>,
    /// The main frames of oncepost's compose pages: after the press their navigations may carry the text.
    navigators: std::collections::HashSet<String>,
    /// Where the create request's own answer redirected (its `Location`, resolved, without a fragment): the
    /// browser's GET there is the platform's order, not the page sending the post again, and may carry the
    /// typed text (a form post answered by `303` to `/posts?created=<title>`). Each is let through once.
    ordered: Vec<String>,
    /// Declared non-publish writes let through (set by a publish; a probe never sets it).
    declared: Option<Declared>,
    /// Declared read requests (a write method that only reads: a GraphQL query), sent wherever the page may
    /// read (set by a publish, a probe and a lookup).
    reads: Option<Declared>,
    /// How many declared read requests were sent.
    reads_sent: usize,
    forwarded: Vec<ForwardedWrite>,
    /// Writes failed after the press that carried every line of the post (an undeclared save, a page's
    /// publish by a request the create rule does not match): the page's publish, stopped.
    stopped_with_post: usize,
    /// The data reads (fetch and XHR GETs) of each frame, by frame id: what a page that renders its posts
    /// after loading waits on (see [`WriteGuard::data_reads`]).
    data_reads: HashMap<String, DataReads>,
}

/// A frame's data reads (fetch and XHR, fetched by the door): how many are out now and when one last
/// started or ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DataReads {
    /// Started and not yet handed to the page.
    pub in_flight: u32,
    /// When one last started or ended (`None`: never).
    pub last: Option<Instant>,
}

/// The create-request takeover, armed by one press (see `transport.rs`): the first paused request matching
/// `pattern` is handed over through `slot`; every later match is failed before it leaves and kept in
/// `extras`.
#[derive(Debug)]
struct Takeover {
    pattern: CreatePattern,
    slot: Option<oneshot::Sender<EventRequestPaused>>,
    extras: Vec<WriteAttempt>,
    /// The door's and the log's marks when the press armed the takeover: what happened since is the
    /// evidence for or against "not sent".
    knocks_mark: usize,
    faults_mark: usize,
    writes_mark: usize,
    forwarded_mark: usize,
    stopped_with_post_mark: usize,
}

/// A running guard; read its findings with [`WriteGuard::writes`].
#[derive(Debug, Clone)]
pub struct WriteGuard {
    log: Arc<Mutex<Log>>,
    door: Door,
}

impl WriteGuard {
    /// Install the guard on the whole browser, before any page is opened. [`BrowserSession::launch`] does
    /// this for every session, so no page of a session ever runs unguarded.
    pub(crate) async fn install(
        browser: &BrowserHandle,
        live: &Liveness,
        door: Door,
    ) -> Result<WriteGuard, BrowserError> {
        let live = live.clone();
        // Listener first, then enable: a request paused before anyone listens would hang.
        let mut paused = live
            .call(
                "listen for paused requests",
                browser.event_listener::<EventRequestPaused>(),
            )
            .await?;
        let log = Arc::new(Mutex::new(Log::default()));
        let guard = WriteGuard {
            log: log.clone(),
            door: door.clone(),
        };
        // The relayed create socket's messages are judged in the door (`door/socket.rs`) and logged here
        // like every write: a blocked one is a write the page attempted, a further create message an extra,
        // a declared one let through.
        let socket_log = log.clone();
        door.sockets()
            .set_recorder(Arc::new(move |r| record_socket(&socket_log, r)));
        let answerer = Answerer {
            live: live.clone(),
            browser: browser.clone(),
            door,
        };
        tokio::spawn(async move {
            while let Some(ev) = paused.next().await {
                let log = log.clone();
                let answerer = answerer.clone();
                tokio::spawn(async move { answerer.answer(&ev, &log).await });
            }
        });
        let enable = EnableParams::builder()
            .pattern(RequestPattern::builder().url_pattern("*").build())
            .build();
        live.call(
            "enable the write guard (Fetch.enable)",
            browser.execute(enable),
        )
        .await?;
        Ok(guard)
    }

    /// Every write attempted so far (`Err` when the log is poisoned: see the module docs).
    pub fn writes(&self) -> Result<Vec<WriteAttempt>, BrowserError> {
        self.writes_since(0)
    }

    /// How many writes were recorded so far (a mark for [`WriteGuard::writes_since`]). A poisoned log gives
    /// 0: only a position, and every read from it fails anyway.
    pub fn mark(&self) -> usize {
        self.log.lock().map(|l| l.writes.len()).unwrap_or_default()
    }

    /// The data reads (fetch and XHR) of frame `frame_id` so far: a read-back waits for them to end before
    /// it trusts a page that shows no post (a single-page app renders its posts from them). A poisoned log
    /// answers "one out, just now", so a reader waits out its bound rather than trust a page too early.
    ///
    /// The sockets oncepost relays count too, whatever page holds them (a proxied socket names no frame): a
    /// handshake under way or a read message not yet answered is one out, and their last traffic is the
    /// latest read (a page that shows its posts once its socket answered its subscription).
    pub fn data_reads(&self, frame_id: &str) -> DataReads {
        let own = match self.log.lock() {
            Ok(l) => l.data_reads.get(frame_id).copied().unwrap_or_default(),
            Err(_) => DataReads {
                in_flight: 1,
                last: Some(Instant::now()),
            },
        };
        let sockets = self.door.sockets().activity();
        DataReads {
            in_flight: own.in_flight + sockets.in_flight,
            last: own.last.max(sockets.last),
        }
    }

    /// Writes recorded after `mark` (`Err` when the log is poisoned: what the page attempted is unknown).
    pub fn writes_since(&self, mark: usize) -> Result<Vec<WriteAttempt>, BrowserError> {
        let l = read_log(&self.log, "read the writes the page attempted")?;
        Ok(l.writes.get(mark..).unwrap_or_default().to_vec())
    }

    /// Requests the guard could not answer (each is also a reason to distrust the probe). A poisoned log
    /// is one such reason: it is reported as a fault, never as an empty list.
    pub fn faults(&self) -> Vec<String> {
        match read_log(&self.log, "read the guard's faults") {
            Ok(l) => l.faults.clone(),
            Err(e) => vec![e.to_string()],
        }
    }

    /// Arm the create-request takeover: the next paused request matching `pattern` is handed to the
    /// returned receiver instead of being failed. Only the press (one authorization) calls this.
    ///
    /// On a poisoned log nothing is armed and the sender is dropped: the press sees no handover at once, the
    /// answerer fails the create request before it leaves, and [`WriteGuard::not_sent_proof`] refuses, so
    /// the outcome is indeterminate, never "not sent".
    pub(crate) fn arm(&self, pattern: CreatePattern) -> oneshot::Receiver<EventRequestPaused> {
        let (tx, rx) = oneshot::channel();
        self.take_over(pattern, Some(tx));
        rx
    }

    /// Set the press's takeover with the marks "not sent" is proven from; `None` on a poisoned log.
    fn take_over(
        &self,
        pattern: CreatePattern,
        slot: Option<oneshot::Sender<EventRequestPaused>>,
    ) -> Option<MutexGuard<'_, Log>> {
        let knocks_mark = self.door.sinkhole().mark();
        let mut l = self.log.lock().ok()?;
        // From the press on the text may be read back legitimately (a search by it), by oncepost's own read
        // page; any other page's request carrying it (a resend by a GET, a "backup" beacon of the draft)
        // stays a write (see `route`).
        l.pressed = true;
        let (faults_mark, writes_mark, forwarded_mark, stopped_with_post_mark) = (
            l.faults.len(),
            l.writes.len(),
            l.forwarded.len(),
            l.stopped_with_post,
        );
        l.takeover = Some(Takeover {
            pattern,
            slot,
            extras: Vec::new(),
            knocks_mark,
            faults_mark,
            writes_mark,
            forwarded_mark,
            stopped_with_post_mark,
        });
        Some(l)
    }

    /// Arm the press of a contract that publishes over a WebSocket: the first create message on the relayed
    /// socket from now on is handed to the returned receiver (`door/socket.rs`); every later one is a
    /// further create, never sent. The marks for "not sent" are taken as for a create request.
    pub(crate) fn arm_socket(&self, pattern: CreatePattern) -> oneshot::Receiver<Handover> {
        match self.take_over(pattern, None) {
            // Armed while the log is held: a message judged now is logged after the takeover is there.
            Some(log) => self.door.sockets().arm(if log_carries(&log) {
                log.post.clone()
            } else {
                PostLines::default()
            }),
            // A poisoned log: nothing armed (the receiver's sender is dropped at once), and `not_sent_proof`
            // refuses, so the press ends in doubt, never "not sent".
            None => oneshot::channel().1,
        }
    }

    /// Take the socket press's slot back if nothing was handed over (see [`WriteGuard::disarm`]).
    pub(crate) fn disarm_socket(&self) -> bool {
        self.door.sockets().disarm()
    }

    /// After a press whose create request never reached the harness: the proof that nothing left, or the
    /// doubt that forbids calling it "not sent" (docs/states.md, "What proves not sent").
    ///
    /// The proof is the door's, not the missing pause: the browser's only route out is the sinkhole (which
    /// forwards nothing) and every HTTP request since the press was answered here (reads fetched by
    /// oncepost, writes failed). A page that tried another channel after the press (refused, but it may be
    /// how this page publishes), a request the guard could not answer, or a write it could not stop, each
    /// leaves the question to the platform: indeterminate.
    pub(crate) fn not_sent_proof(&self) -> Result<String, String> {
        let l = read_log(&self.log, "prove that nothing left").map_err(|e| e.to_string())?;
        let Some(t) = l.takeover.as_ref() else {
            return Err("no press was armed".into());
        };
        let knocks = self.door.sinkhole().page_knocks_since(t.knocks_mark);
        if let Some(k) = knocks.first() {
            return Err(format!(
                "after the press the page tried {} channel(s) oncepost refuses ({}; {}); it may publish that way: only the platform can tell",
                knocks.len(),
                k.request_line,
                k.describe()
            ));
        }
        let faults = l.faults.get(t.faults_mark..).unwrap_or_default();
        if let Some(f) = faults.first() {
            return Err(format!(
                "{} request(s) since the press could not be answered by the guard ({f})",
                faults.len()
            ));
        }
        let unstopped = l
            .writes
            .get(t.writes_mark..)
            .unwrap_or_default()
            .iter()
            .filter(|w| !w.blocked)
            .count();
        if unstopped > 0 {
            return Err(format!(
                "{unstopped} write(s) since the press could not be stopped"
            ));
        }
        // A declared write that carried the post left after the press: it may have been the publish (a
        // declaration wider than the page's drafts, a create rule that misses the page's real create),
        // unless the page's publish was seen stopped: a request matching the create rule failed (one that
        // names the draft saved on the press instead of carrying the post), or a write that carried the
        // post failed (a wiki's save of a page that exists, not matched as a create, while its edit stash
        // on the press went out as declared).
        let forwarded = l.forwarded.get(t.forwarded_mark..).unwrap_or_default();
        let publish_stopped =
            !t.extras.is_empty() || l.stopped_with_post > t.stopped_with_post_mark;
        if let Some(f) = forwarded
            .iter()
            .find(|f| f.carried_post && !publish_stopped)
        {
            return Err(format!(
                "a write the contract declares non-publishing carried the post and left after the press ({} \
                 {}): it may be how this page publishes (a declaration that covers the create); only the \
                 platform can tell",
                f.method, f.url
            ));
        }
        let proof = "the door saw nothing leave: every HTTP request since the press was answered by \
            oncepost (reads fetched, writes failed before they left) and no other channel was tried";
        // Sockets to where the contract declares live ones were refused too (nothing went further); named,
        // since a page that publishes on one makes a contract's declaration wrong.
        let live = self.door.sinkhole().live_knocks_since(t.knocks_mark);
        let proof = match live.first() {
            None => proof.into(),
            Some(k) => format!(
                "{proof} but {} declared live socket(s) ({}), refused too: a page that publishes on one \
                 needs its contract's live_sockets changed",
                live.len(),
                k.request_line
            ),
        };
        // A create request that was not this post's was failed, and none that was came: say why (the line
        // missing, and what a platform that publishes a saved draft by reference needs; or the other post it
        // carried too, which a person clears from the page's outbox).
        Ok(
            match t.extras.iter().find_map(|x| x.not_the_post.as_ref()) {
                None => proof,
                Some(why @ NotThePost::Missing(_)) => format!(
                    "{proof}; the page's create request did not carry the post ({why}): an earlier \
                 post of the page's own, or a platform whose create names a saved draft instead \
                 (publish.create_carries_post = false)"
                ),
                Some(why @ NotThePost::Earlier(_)) => format!(
                    "{proof}; the page's create request was not this post alone ({why}): the page keeps \
                 posts of its own to send with the next (an outbox); until a person clears it there, \
                 nothing this page sends can be made once"
                ),
            },
        )
    }

    /// `value` is the post's text: a request matching the create request after the press is handed over
    /// only when it carries every line of it and no post of `earlier` (the account's others) beside it
    /// (`door/carried.rs`); one that does not (a page's outbox sending an earlier post first, or with the
    /// new one) is failed before it leaves, a further create, and the press waits on for its own.
    /// `also_typed`: the post's other typed fields (an earlier post they hold is not looked for).
    pub(crate) fn expect_in_create(&self, value: &str, also_typed: &[&str], earlier: &[String]) {
        if let Ok(mut l) = self.log.lock() {
            l.post.add(value);
            for v in also_typed {
                l.post.also_typed(v);
            }
            for e in earlier {
                l.post.add_earlier(e);
            }
        }
    }

    /// Watch `value`, just typed into the page: a GET/HEAD whose URL carries it (as typed, JSON-escaped or in
    /// base64; a short value as a whole path segment or query value: `door/typed.rs`) is a write (the page
    /// sending the draft by a "read", or sending the post again by one after the press) and is failed before
    /// it leaves. After the press, only oncepost's read pages ([`WriteGuard::trust_reader`]) may carry it
    /// (the read-back's search), and a page's own navigations (a post's page named by its title).
    pub(crate) fn watch_typed(&self, value: &str) {
        let Some(w) = Watched::of(value) else {
            return;
        };
        // A poisoned log keeps nothing: then the answerer fails every read, watched or not.
        if let Ok(mut l) = self.log.lock() {
            l.typed.push(w);
        }
    }

    /// Let the contract's declared non-publish writes through from now on (a publish calls this before the
    /// compose page opens; a probe never does, so a probe sends nothing). A request matching `create` is
    /// never let through this way, whatever a rule says: the create request leaves only by a press.
    pub(crate) fn let_declared_through(&self, rules: Vec<CreatePattern>, create: CreatePattern) {
        self.declare(rules, create, true);
    }

    /// Recognise the contract's declared non-publish writes without letting them through (a probe): they
    /// are failed like every write and recorded with [`WriteAttempt::declared`] set.
    pub(crate) fn recognise_declared(&self, rules: Vec<CreatePattern>, create: CreatePattern) {
        self.declare(rules, create, false);
    }

    /// `frame_id` is the main frame of one of oncepost's own read pages: after the press its requests may
    /// carry the typed text (the read-back searches by it).
    pub(crate) fn trust_reader(&self, frame_id: &str) {
        if let Ok(mut l) = self.log.lock() {
            l.readers.insert(frame_id.to_string());
        }
    }

    /// `frame_id` is the main frame of oncepost's compose page: after the press its navigations (not its
    /// fetches, images or beacons, nor any frame inside it or window it opens) may carry the typed text, as
    /// an app that shows the new post at a URL made of its title does.
    pub(crate) fn trust_navigations_of(&self, frame_id: &str) {
        if let Ok(mut l) = self.log.lock() {
            l.navigators.insert(frame_id.to_string());
        }
    }

    /// The create request's answer redirects to `location` (relative to `request_url`): the browser's GET
    /// there follows the platform's order and may carry the typed text, once (see [`Log`]'s `ordered`).
    pub(crate) fn expect_ordered_redirect(&self, request_url: &str, location: &str) {
        let Some(to) = url::Url::parse(request_url)
            .ok()
            .and_then(|base| base.join(location).ok())
        else {
            return;
        };
        let mut to = to;
        to.set_fragment(None);
        if let Ok(mut l) = self.log.lock() {
            l.ordered.push(to.to_string());
        }
    }

    /// Send the contract's declared read requests from now on (a publish, a probe and a lookup call this):
    /// requests with a write method that only read (a GraphQL query), which a page may need to show its
    /// compose form or its posts. Never one matching `create`, never one whose body carries the typed text
    /// (from the fill on, but on oncepost's read page after the press), never while it could be the armed
    /// create request.
    /// The create request of the contract a publish, probe or lookup now runs (replacing the last one's).
    /// It matters only when it is a GET (a platform that creates by a read): then a read matching it is
    /// never fetched, on any page, before the press or after it; only the armed press hands it over, once.
    pub(crate) fn know_create(&self, create: &CreatePattern) {
        if let Ok(mut l) = self.log.lock() {
            l.read_create = is_read(&create.method).then(|| create.clone());
        }
    }

    pub(crate) fn let_reads_through(&self, rules: Vec<CreatePattern>, create: CreatePattern) {
        // Read messages on a socket oncepost relays (a subscription): sent there, judged in the door.
        self.door.sockets().set_reads(rules.clone());
        if let Ok(mut l) = self.log.lock() {
            l.reads = (!rules.is_empty()).then_some(Declared {
                rules,
                create,
                pass: true,
            });
        }
    }

    /// How many declared read requests were sent so far.
    pub fn reads_sent(&self) -> usize {
        self.log.lock().map(|l| l.reads_sent).unwrap_or(0)
    }

    fn declare(&self, rules: Vec<CreatePattern>, create: CreatePattern, pass: bool) {
        // A contract that publishes over a WebSocket: its socket is relayed during a publish (refused in a
        // probe), its declared messages judged there. Any other contract: every socket refused.
        let socket_create = (create.method == socket::WEBSOCKET).then(|| create.clone());
        self.door
            .sockets()
            .declare(socket_create, rules.clone(), pass);
        if let Ok(mut l) = self.log.lock() {
            l.declared = (!rules.is_empty()).then_some(Declared {
                rules,
                create,
                pass,
            });
        }
    }

    /// How many declared writes were let through so far (a mark for [`WriteGuard::forwarded_since`]).
    pub fn forwarded_mark(&self) -> usize {
        self.log
            .lock()
            .map(|l| l.forwarded.len())
            .unwrap_or_default()
    }

    /// Declared non-publish writes let through after `mark` (`Err` when the log is poisoned).
    pub fn forwarded_since(&self, mark: usize) -> Result<Vec<ForwardedWrite>, BrowserError> {
        let l = read_log(&self.log, "read the declared writes let through")?;
        Ok(l.forwarded.get(mark..).unwrap_or_default().to_vec())
    }

    /// The session's door (the sinkhole's ledger of refused channels).
    pub fn door(&self) -> &Door {
        &self.door
    }

    /// Take the slot back if nothing was handed over yet. True: no matching request was paused (and from
    /// now on every match is failed). False: one was handed over and is on its way to the receiver, or the
    /// log is poisoned (then the wait for it ends in doubt: `not_sent_proof` refuses).
    pub(crate) fn disarm(&self) -> bool {
        self.log
            .lock()
            .ok()
            .and_then(|mut l| l.takeover.as_mut().and_then(|t| t.slot.take()))
            .is_some()
    }

    /// Further create requests (matching the armed pattern) that were failed before they left (`Err` when
    /// the log is poisoned).
    pub fn extra_creates(&self) -> Result<Vec<WriteAttempt>, BrowserError> {
        let l = read_log(&self.log, "read the further create requests")?;
        Ok(l.takeover
            .as_ref()
            .map(|t| t.extras.clone())
            .unwrap_or_default())
    }

    /// Forget one send before the next on the same browser (a warm worker, `BrowserSession::clean_between_sends`):
    /// the watched text, the armed takeover (a create request paused from now on is a write like any other
    /// and is failed until the next press arms again), the declared writes let through (none until the next
    /// publish lets its own through) and the logs (marks are taken per send). A guard that could not answer
    /// a request during the send, or whose log is poisoned, is not trusted with another send: `Err`, and the
    /// caller closes the browser.
    pub(crate) fn reset_between_sends(&self) -> Result<(), String> {
        let mut l = self
            .log
            .lock()
            .map_err(|_| "the write guard's log is poisoned".to_string())?;
        if let Some(f) = l.faults.first() {
            return Err(format!(
                "the write guard could not answer {} request(s) ({f})",
                l.faults.len()
            ));
        }
        l.takeover = None;
        self.door.sockets().reset();
        l.typed.clear();
        l.post = PostLines::default();
        l.pressed = false;
        l.readers.clear();
        l.navigators.clear();
        l.ordered.clear();
        l.declared = None;
        l.reads = None;
        l.reads_sent = 0;
        l.writes.clear();
        l.forwarded.clear();
        // A warm browser opens a page (a frame id) per send: what the last send's pages read is not kept.
        l.data_reads.clear();
        Ok(())
    }

    /// How many requests were paused in total (GET/HEAD included).
    pub fn paused_count(&self) -> usize {
        self.log.lock().map(|l| l.paused).unwrap_or_default()
    }
}

/// Log what the relayed create socket did with one of the page's messages (see `door/socket.rs`).
fn record_socket(log: &Mutex<Log>, r: SocketRecord) {
    let Ok(mut l) = log.lock() else {
        return;
    };
    let attempt = |url: String, declared: bool| WriteAttempt {
        method: socket::WEBSOCKET.into(),
        url,
        resource_type: "WebSocket".into(),
        frame_id: String::new(),
        blocked: true,
        carried_typed_text: false,
        declared,
        not_the_post: None,
    };
    match r {
        SocketRecord::Blocked { url, declared } => l.writes.push(attempt(url, declared)),
        SocketRecord::Extra { url, not_the_post } => {
            let a = WriteAttempt {
                not_the_post,
                ..attempt(url, false)
            };
            if let Some(t) = l.takeover.as_mut() {
                t.extras.push(a.clone());
            }
            l.writes.push(a);
        }
        SocketRecord::Read => l.reads_sent += 1,
        SocketRecord::Forwarded { url, carried_post } => l.forwarded.push(ForwardedWrite {
            method: socket::WEBSOCKET.into(),
            url,
            status: None,
            error: None,
            carried_post,
        }),
    }
}

/// Whether the armed press's create must carry the post (its pattern says so).
fn log_carries(l: &Log) -> bool {
    l.takeover.as_ref().is_some_and(|t| t.pattern.carries_post)
}

/// The log, or [`BrowserError::GuardPoisoned`] naming what needed it.
fn read_log<'a>(log: &'a Mutex<Log>, during: &str) -> Result<MutexGuard<'a, Log>, BrowserError> {
    log.lock().map_err(|_| BrowserError::GuardPoisoned {
        during: during.to_string(),
    })
}

/// Whether `url` carries one of `typed`.
/// `url` without its fragment.
fn without_fragment(url: &str) -> &str {
    url.split_once('#').map_or(url, |(u, _)| u)
}

/// The query of `url` (what follows its first `?`, without a fragment); empty when it has none.
fn query_of(url: &str) -> &str {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    query.split_once('#').map_or(query, |(q, _)| q)
}

fn carries_typed(url: &str, typed: &[Watched]) -> bool {
    typed.iter().any(|w| w.carried_by(url))
}

/// Whether a request body carries one of `typed` (read as UTF-8, lossy).
fn body_carries_typed(body: &[u8], typed: &[Watched]) -> bool {
    if typed.is_empty() {
        return false;
    }
    let body = String::from_utf8_lossy(body);
    typed.iter().any(|w| w.carried_by_body(&body))
}

/// Whether a method is a read the guard lets through.
pub fn is_read(method: &str) -> bool {
    method.eq_ignore_ascii_case("GET") || method.eq_ignore_ascii_case("HEAD")
}

#[derive(Clone)]
struct Answerer {
    live: Liveness,
    browser: super::session::BrowserHandle,
    door: Door,
}

/// What the guard knows of one paused request when it routes it.
#[derive(Debug, Clone)]
struct Paused<'a> {
    method: &'a str,
    url: &'a str,
    /// Headers as Chromium would send them.
    headers: Vec<(String, String)>,
    /// The body (`None`: not known; reads are not decoded and count as empty).
    body: Option<Vec<u8>>,
    /// The response stage of a request that already went its way.
    response_stage: bool,
    /// A CORS preflight: `OPTIONS` carrying `Access-Control-Request-Method`. Chromium sends it by itself
    /// before a cross-origin write; it asks a question and changes nothing, so it is fetched like a read
    /// and the actual request that follows is judged on its own.
    preflight: bool,
    /// The frame that made it.
    frame_id: &'a str,
    /// A navigation (a document), not a page's own fetch, image, script or beacon.
    document: bool,
}

impl Paused<'_> {
    fn of(ev: &EventRequestPaused) -> Paused<'_> {
        let method = ev.request.method.as_str();
        let preflight = method.eq_ignore_ascii_case("OPTIONS")
            && ev.request.headers.inner().as_object().is_some_and(|h| {
                h.keys()
                    .any(|k| k.eq_ignore_ascii_case("access-control-request-method"))
            });
        // Only a write's body can decide anything (a create or declared-write rule); reads stay cheap.
        let body = if is_read(method) {
            Some(Vec::new())
        } else {
            request_body(ev).ok()
        };
        Paused {
            method,
            url: &ev.request.url,
            headers: request_headers(ev),
            body,
            response_stage: ev.response_status_code.is_some() || ev.response_error_reason.is_some(),
            preflight,
            frame_id: ev.frame_id.inner(),
            document: matches!(ev.resource_type, ResourceType::Document),
        }
    }

    fn facts(&self) -> RequestFacts<'_> {
        RequestFacts {
            method: self.method,
            url: self.url,
            headers: &self.headers,
            body: self.body.as_deref(),
        }
    }
}

/// What the guard does with one paused request.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    /// Handed to the armed takeover: the press's receiver answers it (sends it once itself, or fails it).
    HandedOver,
    /// The response stage of a request that already went its way: continued (nothing more leaves).
    ContinueResponse,
    /// A read (or a CORS preflight) oncepost fetches itself and fulfils (Chromium has no route out: door/).
    Fetch,
    /// A write the contract declares non-publishing, during a publish: sent by oncepost, answer fulfilled.
    Declared,
    /// A request the contract declares a read although its method writes (a GraphQL query): sent by
    /// oncepost, answer fulfilled, counted as the page's data.
    DeclaredRead,
    /// A request matching the armed create request that does not carry the post (this line is missing):
    /// failed before it leaves, recorded as a further create, and the press's slot stays armed.
    NotThePost { why: NotThePost },
    /// Failed before it leaves and recorded as a write attempt.
    Fail {
        /// A GET/HEAD whose URL carries the typed text.
        carries: bool,
        /// A further request matching the armed create request.
        extra: bool,
        /// A declared non-publish write, recognised but not let through (a probe).
        declared: bool,
    },
}

/// One data read out, counted in its frame's [`DataReads`] until it is dropped (also when the answer task
/// ends early).
struct DataRead<'a> {
    log: &'a Mutex<Log>,
    frame_id: String,
}

impl<'a> DataRead<'a> {
    /// Counted while it is out when `ev` is the page's data (a fetch, an XHR, an event stream's piece; not
    /// a document, script or image): see [`WriteGuard::data_reads`].
    fn of_page_data(log: &'a Mutex<Log>, ev: &EventRequestPaused) -> Option<DataRead<'a>> {
        matches!(
            ev.resource_type,
            ResourceType::Fetch | ResourceType::Xhr | ResourceType::EventSource
        )
        .then(|| DataRead::start(log, ev.frame_id.inner()))
    }

    fn start(log: &'a Mutex<Log>, frame_id: &str) -> DataRead<'a> {
        if let Ok(mut l) = log.lock() {
            let r = l.data_reads.entry(frame_id.to_string()).or_default();
            r.in_flight += 1;
            r.last = Some(Instant::now());
        }
        DataRead {
            log,
            frame_id: frame_id.to_string(),
        }
    }
}

impl Drop for DataRead<'_> {
    fn drop(&mut self) {
        if let Ok(mut l) = self.log.lock()
            && let Some(r) = l.data_reads.get_mut(&self.frame_id)
        {
            r.in_flight = r.in_flight.saturating_sub(1);
            r.last = Some(Instant::now());
        }
    }
}

/// Decide what happens to a paused request, counting it, and hand it over (through `hand_over`, which says
/// whether the receiver took it) when it is the armed create request.
fn route(
    log: &Mutex<Log>,
    p: Paused<'_>,
    hand_over: impl FnOnce(oneshot::Sender<EventRequestPaused>) -> bool,
) -> Route {
    let facts = p.facts();
    let Paused {
        method,
        url,
        response_stage,
        preflight,
        frame_id,
        document,
        ..
    } = p;
    let Ok(mut l) = log.lock() else {
        // Fail closed: with the log poisoned neither the takeover nor the typed text a read must not carry
        // can be trusted, so nothing is handed over and nothing is fetched. Every request is failed before
        // it leaves; a response stage is continued (its request is already out: continuing sends nothing).
        return if response_stage {
            Route::ContinueResponse
        } else {
            Route::Fail {
                carries: false,
                extra: false,
                declared: false,
            }
        };
    };
    l.paused += 1;
    let mut extra = false;
    let log = &mut *l;
    if let Some(t) = log.takeover.as_mut()
        && !response_stage
        && t.pattern.matches(&facts)
    {
        // Only a request carrying the post is this press's create (door/carried.rs): one that does not (an
        // outbox sending an earlier post first) is failed, and the slot waits for the post's own.
        if t.slot.is_some()
            && t.pattern.carries_post
            && let Some(why) = log.post.refusal(url, facts.body)
        {
            return Route::NotThePost { why };
        }
        if let Some(tx) = t.slot.take()
            && hand_over(tx)
        {
            return Route::HandedOver;
        }
        extra = true;
    }
    if response_stage {
        return Route::ContinueResponse;
    }
    // Until the press every request is watched for the typed text; after it, oncepost's own read pages may
    // carry it (the read-back searches by it), and so may the path of the compose page's own navigation (an
    // app that shows the new post at a URL made of its title), never its query: a query carrying the post is
    // how a form sends it by GET (`/create?text=...`, a form without `method` whose script did not stop its
    // default submission, or a page that navigates itself there), and a platform that honours it makes a
    // second copy. A page's fetch, image or beacon carrying it after the press, or a frame or window
    // navigated to such a URL, is the post sent again by a "read": failed.
    let reader = l.pressed && l.readers.contains(frame_id);
    let navigator = l.pressed && document && l.navigators.contains(frame_id);
    let watched = if navigator { query_of(url) } else { url };
    // A GET the create's own answer ordered (its redirect) is the platform's, once.
    let ordered = is_read(method)
        && l.pressed
        && match l.ordered.iter().position(|o| o == without_fragment(url)) {
            Some(i) => {
                l.ordered.remove(i);
                true
            }
            None => false,
        };
    // A platform that creates by GET: a read matching the create request is a create. The armed press
    // took its one above; any other (a page's own, before the press or after it; a look's, a read-back's or
    // a lookup's) is failed, never fetched as a read.
    if is_read(method) && !ordered && l.read_create.as_ref().is_some_and(|c| c.matches(&facts)) {
        return Route::Fail {
            carries: false,
            extra,
            declared: false,
        };
    }
    let carries = is_read(method) && !reader && !ordered && carries_typed(watched, &l.typed);
    let may_carry = reader || navigator;
    if (is_read(method) && !carries) || preflight {
        return Route::Fetch;
    }
    if !is_read(method) && !extra && l.reads.as_ref().is_some_and(|r| r.covers(&facts)) {
        // A declared read whose body carries the draft (a "query" sending it between the fill and the
        // press) is a write like a GET whose URL carries it: failed, never let through as a declared write.
        if !may_carry && facts.body.is_some_and(|b| body_carries_typed(b, &l.typed)) {
            return Route::Fail {
                carries: true,
                extra,
                declared: false,
            };
        }
        l.reads_sent += 1;
        return Route::DeclaredRead;
    }
    let declared = if !is_read(method) && !extra {
        l.declared
            .as_ref()
            .filter(|d| d.covers(&facts))
            .map(|d| d.pass)
    } else {
        None
    };
    match declared {
        Some(true) => Route::Declared,
        Some(false) => Route::Fail {
            carries,
            extra,
            declared: true,
        },
        None => Route::Fail {
            carries,
            extra,
            declared: false,
        },
    }
}

impl Answerer {
    async fn answer(&self, ev: &EventRequestPaused, log: &Mutex<Log>) {
        let method = ev.request.method.clone();
        let (carries, extra, declared, not_the_post) =
            match route(log, Paused::of(ev), |tx| tx.send(ev.clone()).is_ok()) {
                Route::HandedOver => return,
                Route::ContinueResponse => {
                    let _ = self
                        .live
                        .call(
                            "continue a response",
                            self.browser
                                .execute(ContinueRequestParams::new(ev.request_id.clone())),
                        )
                        .await;
                    return;
                }
                Route::Fetch => {
                    let data = DataRead::of_page_data(log, ev);
                    self.fetch_read(ev, &method, log).await;
                    drop(data);
                    return;
                }
                Route::Declared => {
                    self.let_through(ev, log).await;
                    return;
                }
                Route::DeclaredRead => {
                    // Counted like a GET the page fetches for its data: a page that renders its posts from
                    // a GraphQL query is read only once that query came back.
                    let data = DataRead::of_page_data(log, ev);
                    let answer = self.door.reads().send_declared(ev).await;
                    self.hand_to_page(ev, &ev.request.method, answer, log).await;
                    drop(data);
                    return;
                }
                Route::NotThePost { why } => (false, true, false, Some(why)),
                Route::Fail {
                    carries,
                    extra,
                    declared,
                } => (carries, extra, declared, None),
            };
        let r = self
            .live
            .call(
                "fail a write",
                self.browser.execute(FailRequestParams::new(
                    ev.request_id.clone(),
                    ErrorReason::BlockedByClient,
                )),
            )
            .await;
        // A paused request that is never continued cannot leave. When its page or popup closes before the
        // answer arrives, Chromium cancels it and reports the id as invalid: still blocked, not a fault.
        let blocked = match &r {
            Ok(_) => true,
            Err(e) => e.is_target_gone(),
        };
        // A poisoned log records nothing more; every reader of it fails (see the module docs).
        if let Ok(mut l) = log.lock() {
            if let Err(e) = &r
                && !blocked
            {
                l.faults
                    .push(format!("could not fail {method} {}: {e}", ev.request.url));
            }
            let attempt = WriteAttempt {
                method,
                url: ev.request.url.clone(),
                resource_type: format!("{:?}", ev.resource_type),
                frame_id: ev.frame_id.inner().clone(),
                blocked,
                carried_typed_text: carries,
                declared,
                not_the_post,
            };
            if extra && let Some(t) = l.takeover.as_mut() {
                t.extras.push(attempt.clone());
            }
            l.writes.push(attempt);
            if blocked
                && l.pressed
                && !l.post.is_empty()
                && request_body(ev)
                    .ok()
                    .is_some_and(|b| l.post.first_missing(&ev.request.url, Some(&b)).is_none())
            {
                l.stopped_with_post += 1;
            }
        }
    }

    /// A declared non-publish write: oncepost sends it (once) and hands the answer to the page, and the
    /// log keeps it (never as a write attempt: it is what the contract says the page does).
    async fn let_through(&self, ev: &EventRequestPaused, log: &Mutex<Log>) {
        let answer = self.door.reads().send_declared(ev).await;
        let (status, error) = match &answer {
            ReadAnswer::Fulfill { status, .. } => (Some(*status), None),
            ReadAnswer::Fail { why, .. } => (None, Some(why.clone())),
        };
        if let Ok(mut l) = log.lock() {
            let carried_post = l.pressed
                && !l.post.is_empty()
                && request_body(ev)
                    .ok()
                    .is_some_and(|b| l.post.first_missing(&ev.request.url, Some(&b)).is_none());
            l.forwarded.push(ForwardedWrite {
                method: ev.request.method.clone(),
                url: ev.request.url.clone(),
                status,
                error,
                carried_post,
            });
        }
        self.hand_to_page(ev, &ev.request.method, answer, log).await;
    }

    /// oncepost fetches the read itself and hands the answer to the page.
    async fn fetch_read(&self, ev: &EventRequestPaused, method: &str, log: &Mutex<Log>) {
        let answer = self.door.reads().fetch(ev).await;
        self.hand_to_page(ev, method, answer, log).await;
    }

    /// Fulfil (or fail) a paused request with what oncepost got for it.
    async fn hand_to_page(
        &self,
        ev: &EventRequestPaused,
        method: &str,
        answer: ReadAnswer,
        log: &Mutex<Log>,
    ) {
        let r = match answer {
            ReadAnswer::Fulfill {
                status,
                headers,
                body,
            } => {
                let params = fulfill_params(ev.request_id.clone(), status, &headers, &body);
                self.live
                    .call("hand a read to the page", self.browser.execute(params))
                    .await
                    .map(|_| ())
            }
            ReadAnswer::Fail { reason, why } => {
                tracing::debug!(%why, "a read failed at the door");
                self.live
                    .call(
                        "fail a read",
                        self.browser
                            .execute(FailRequestParams::new(ev.request_id.clone(), reason)),
                    )
                    .await
                    .map(|_| ())
            }
        };
        if let Err(e) = r
            && !e.is_target_gone()
            && let Ok(mut l) = log.lock()
        {
            l.faults
                .push(format!("could not answer {method} {}: {e}", ev.request.url));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn poisoned(log: &Mutex<Log>) {
        // Another thread panics holding the lock, as a guard task would.
        std::thread::scope(|s| {
            let panicked = s
                .spawn(|| {
                    let _held = log.lock();
                    panic!("a task panicked holding the guard's log (on purpose)");
                })
                .join();
            assert!(panicked.is_err());
        });
        assert!(log.is_poisoned());
    }

    fn create() -> CreatePattern {
        CreatePattern::new(
            "POST",
            crate::browser::UrlMatch::Exact("http://x/api/posts".into()),
        )
    }

    fn armed(log: &Mutex<Log>) -> oneshot::Receiver<EventRequestPaused> {
        let (tx, rx) = oneshot::channel();
        log.lock().unwrap().takeover = Some(Takeover {
            pattern: create(),
            slot: Some(tx),
            extras: Vec::new(),
            knocks_mark: 0,
            faults_mark: 0,
            writes_mark: 0,
            forwarded_mark: 0,
            stopped_with_post_mark: 0,
        });
        log.lock().unwrap().pressed = true;
        rx
    }

    fn req(method: &'static str, url: &'static str, response_stage: bool) -> Paused<'static> {
        Paused {
            method,
            url,
            headers: Vec::new(),
            body: Some(Vec::new()),
            response_stage,
            preflight: false,
            frame_id: "frame-1",
            document: false,
        }
    }

    const FAILED: Route = Route::Fail {
        carries: false,
        extra: false,
        declared: false,
    };

    #[test]
    fn requests_are_routed_by_method_takeover_and_typed_text() {
        let log = Mutex::new(Log::default());
        let take = |_tx: oneshot::Sender<EventRequestPaused>| true;
        assert_eq!(
            route(&log, req("GET", "http://x/feed", false), take),
            Route::Fetch
        );
        assert_eq!(
            route(&log, req("POST", "http://x/api/posts", false), take),
            FAILED
        );
        assert_eq!(
            route(&log, req("POST", "http://x/api/posts", true), take),
            Route::ContinueResponse
        );
        log.lock()
            .unwrap()
            .typed
            .extend(Watched::of("Quarterly results"));
        assert_eq!(
            route(
                &log,
                req("GET", "http://x/px?d=Quarterly+results", false),
                take
            ),
            Route::Fail {
                carries: true,
                extra: false,
                declared: false
            }
        );
        log.lock().unwrap().post.add("Quarterly results");
        let _rx = armed(&log);
        // A create request carrying another post (an outbox's earlier one) is not the press's: failed, and
        // the slot waits for the one carrying the post.
        let with = |body: &str| Paused {
            body: Some(body.as_bytes().to_vec()),
            ..req("POST", "http://x/api/posts", false)
        };
        assert_eq!(
            route(&log, with(r#"{"text":"Monthly results"}"#), take),
            Route::NotThePost {
                why: NotThePost::Missing("Quarterly results".into())
            }
        );
        assert_eq!(
            route(&log, with(r#"{"text":"Quarterly results"}"#), take),
            Route::HandedOver
        );
        // The slot is spent: a second create request is failed and kept as an extra.
        assert_eq!(
            route(&log, req("POST", "http://x/api/posts", false), take),
            Route::Fail {
                carries: false,
                extra: true,
                declared: false
            }
        );
        // After the press the page's own GET carrying the text is the post sent again: failed. oncepost's
        // read page may search by it, and a navigation may name the new post by it.
        let resend = req("GET", "http://x/api/create?text=Quarterly+results", false);
        assert_eq!(
            route(&log, resend.clone(), take),
            Route::Fail {
                carries: true,
                extra: false,
                declared: false
            }
        );
        log.lock().unwrap().readers.insert("reader".into());
        let search = Paused {
            frame_id: "reader",
            ..req("GET", "http://x/search?q=Quarterly+results", false)
        };
        assert_eq!(route(&log, search, take), Route::Fetch);
        let shown = Paused {
            document: true,
            ..req("GET", "http://x/items/Quarterly+results", false)
        };
        assert_eq!(
            route(&log, shown.clone(), take),
            Route::Fail {
                carries: true,
                extra: false,
                declared: false
            },
            "a frame navigated to the post's URL: not the compose page"
        );
        log.lock().unwrap().navigators.insert("frame-1".into());
        assert_eq!(route(&log, shown, take), Route::Fetch);
        let shown_with_query = Paused {
            document: true,
            ..req(
                "GET",
                "http://x/items/Quarterly+results?from=feed#Quarterly+results",
                false,
            )
        };
        assert_eq!(
            route(&log, shown_with_query, take),
            Route::Fetch,
            "the text in the path; a query (and a fragment) without it"
        );
        let submitted = Paused {
            document: true,
            ..req("GET", "http://x/create?text=Quarterly%20results", false)
        };
        assert_eq!(
            route(&log, submitted, take),
            Route::Fail {
                carries: true,
                extra: false,
                declared: false
            },
            "the compose page's own navigation carrying the text in its query: a form sending it by GET"
        );
        assert_eq!(
            route(&log, resend, take),
            Route::Fail {
                carries: true,
                extra: false,
                declared: false
            },
            "the compose page's own fetch is no navigation"
        );
        // The create's own answer redirected to a URL carrying the text: the browser's GET there passes,
        // once (a fragment is not sent); a second one, or any other request carrying it, is failed.
        log.lock()
            .unwrap()
            .ordered
            .push("http://x/p/1?created=Quarterly+results".into());
        let ordered = req("GET", "http://x/p/1?created=Quarterly+results#top", false);
        assert_eq!(route(&log, ordered.clone(), take), Route::Fetch);
        assert_eq!(
            route(&log, ordered, take),
            Route::Fail {
                carries: true,
                extra: false,
                declared: false
            },
            "once"
        );
        assert_eq!(log.lock().unwrap().paused, 16);
    }

    fn rule(method: &str, re: &str, exclude: Option<&str>) -> CreatePattern {
        let mut p = CreatePattern::new(
            method,
            crate::browser::UrlMatch::Regex(regex::Regex::new(re).unwrap()),
        );
        p.exclude = exclude.map(|e| regex::Regex::new(e).unwrap());
        p
    }

    #[test]
    fn declared_writes_pass_but_never_the_create_request_and_preflights_are_reads() {
        let log = Mutex::new(Log::default());
        let take = |_tx: oneshot::Sender<EventRequestPaused>| true;
        // Before any declaration (a probe): a declared-looking write is failed like any other.
        assert_eq!(
            route(&log, req("PUT", "http://x/api/drafts", false), take),
            FAILED
        );
        let guard_rules = vec![
            rule("PUT", "^http://x/api/", Some("/api/items/drafts/")),
            // A rule as wide as it gets still never lets the create request through.
            rule("POST", ".*", None),
        ];
        log.lock().unwrap().declared = Some(Declared {
            rules: guard_rules,
            create: create(),
            pass: true,
        });
        assert_eq!(
            route(&log, req("PUT", "http://x/api/drafts", false), take),
            Route::Declared
        );
        assert_eq!(
            route(&log, req("POST", "http://x/api/ui-state", false), take),
            Route::Declared
        );
        assert_eq!(
            route(&log, req("PUT", "http://x/api/items/drafts/7", false), take),
            FAILED,
            "not_url_regex excludes it"
        );
        assert_eq!(
            route(&log, req("DELETE", "http://x/api/drafts", false), take),
            FAILED
        );
        assert_eq!(
            route(&log, req("POST", "http://x/api/posts?x=1", false), take),
            FAILED,
            "the create request before the press"
        );
        let _rx = armed(&log);
        assert_eq!(
            route(&log, req("POST", "http://x/api/posts", false), take),
            Route::HandedOver
        );
        assert_eq!(
            route(&log, req("POST", "http://x/api/posts", false), take),
            Route::Fail {
                carries: false,
                extra: true,
                declared: false
            },
            "a second create request after the press"
        );
        let preflight = Paused {
            preflight: true,
            ..req("OPTIONS", "http://y/api/posts", false)
        };
        assert_eq!(route(&log, preflight, take), Route::Fetch);
        assert_eq!(
            route(&log, req("OPTIONS", "http://y/api/posts", false), take),
            FAILED,
            "an OPTIONS the page sends itself is not a preflight"
        );
    }

    fn with_body(method: &'static str, url: &'static str, body: Option<&str>) -> Paused<'static> {
        Paused {
            body: body.map(|b| b.as_bytes().to_vec()),
            ..req(method, url, false)
        }
    }

    #[test]
    fn declared_reads_are_sent_in_a_probe_too_but_never_the_create_request_nor_the_typed_text() {
        // A GraphQL app: its queries and its create are the same request line, told apart by the body.
        let mut create = create();
        create.body = Some(regex::Regex::new(r#""operationName":\s*"CreatePost""#).unwrap());
        let mut queries = rule("POST", "^http://x/api/posts$", None);
        queries.body = Some(regex::Regex::new(r#""operationName":\s*"(Viewer|Posts)""#).unwrap());
        let log = Mutex::new(Log::default());
        let take = |_tx: oneshot::Sender<EventRequestPaused>| true;
        let url = "http://x/api/posts";
        let query = r#"{"operationName":"Posts","variables":{"q":"first words"}}"#;
        assert_eq!(
            route(&log, with_body("POST", url, Some(query)), take),
            FAILED,
            "undeclared, a query is a write like any other"
        );
        let guard_reads = |l: &Mutex<Log>| {
            l.lock().unwrap().reads = Some(Declared {
                rules: vec![queries.clone()],
                create: create.clone(),
                pass: true,
            });
        };
        guard_reads(&log);
        assert_eq!(
            route(&log, with_body("POST", url, Some(query)), take),
            Route::DeclaredRead,
            "declared, it is sent (no declared writes are let through: a probe)"
        );
        // A body naming both operations is the create request: never a read.
        let both =
            r#"{"operationName":"CreatePost","query":"query Posts","x":{"operationName":"Posts"}}"#;
        assert_eq!(
            route(&log, with_body("POST", url, Some(both)), take),
            FAILED,
            "the create request is never sent as a read"
        );
        assert_eq!(
            route(&log, with_body("POST", url, None), take),
            FAILED,
            "an unknown body is never a read"
        );
        // From the fill until the press, a query carrying the draft is a write (failed, carrying it).
        log.lock()
            .unwrap()
            .typed
            .push(Watched::of("first words of the draft").unwrap());
        let draft =
            r#"{"operationName":"Posts","variables":{"q":"first words of the draft, typed"}}"#;
        assert_eq!(
            route(&log, with_body("POST", url, Some(draft)), take),
            Route::Fail {
                carries: true,
                extra: false,
                declared: false
            }
        );
        assert_eq!(
            route(&log, with_body("POST", url, Some(query)), take),
            Route::DeclaredRead,
            "a query without the draft still reads"
        );
        // Once the press armed the takeover, a create request goes to it, and a query still reads.
        let _rx = armed(&log);
        log.lock().unwrap().takeover.as_mut().unwrap().pattern = create.clone();
        let publish = r#"{"operationName":"CreatePost","variables":{"text":"x"}}"#;
        assert_eq!(
            route(&log, with_body("POST", url, Some(publish)), take),
            Route::HandedOver
        );
        assert_eq!(
            route(&log, with_body("POST", url, Some(query)), take),
            Route::DeclaredRead
        );
        assert_eq!(log.lock().unwrap().reads_sent, 3);
    }

    #[test]
    fn body_and_header_rules_split_one_endpoint_and_an_unknown_body_is_never_let_through() {
        // One endpoint, two meanings (a CMS saving a draft or publishing it): the create request is the
        // body that says publish; the draft save on the same URL is declared.
        let mut create = create();
        create.body = Some(regex::Regex::new(r#""status":\s*"publish""#).unwrap());
        let mut draft = rule("POST", "^http://x/api/posts$", None);
        draft.body = Some(regex::Regex::new(r#""status":\s*"draft""#).unwrap());
        let mut ui = rule("POST", "^http://x/api/posts$", None);
        ui.headers = vec![("X-Purpose".into(), regex::Regex::new("^ui-state$").unwrap())];
        let log = Mutex::new(Log::default());
        let take = |_tx: oneshot::Sender<EventRequestPaused>| true;
        log.lock().unwrap().declared = Some(Declared {
            rules: vec![draft.clone(), ui.clone()],
            create: create.clone(),
            pass: true,
        });
        let url = "http://x/api/posts";
        assert_eq!(
            route(
                &log,
                with_body("POST", url, Some(r#"{"status":"draft"}"#)),
                take
            ),
            Route::Declared
        );
        assert_eq!(
            route(
                &log,
                with_body("POST", url, Some(r#"{"status":"publish"}"#)),
                take
            ),
            FAILED,
            "the create request before the press, though its URL is declared"
        );
        assert_eq!(
            route(&log, with_body("POST", url, None), take),
            FAILED,
            "a body Chromium did not give: neither create nor declared"
        );
        let ui_state = Paused {
            headers: vec![("x-purpose".into(), "ui-state".into())],
            ..with_body("POST", url, Some("{}"))
        };
        assert_eq!(route(&log, ui_state, take), Route::Declared);
        assert_eq!(
            route(&log, with_body("POST", url, Some("{}")), take),
            FAILED,
            "no header, no draft body"
        );
        // A probe recognises the same writes but sends none of them.
        log.lock().unwrap().declared = Some(Declared {
            rules: vec![draft, ui],
            create,
            pass: false,
        });
        assert_eq!(
            route(
                &log,
                with_body("POST", url, Some(r#"{"status":"draft"}"#)),
                take
            ),
            Route::Fail {
                carries: false,
                extra: false,
                declared: true
            }
        );
        assert_eq!(
            route(
                &log,
                with_body("POST", url, Some(r#"{"status":"publish"}"#)),
                take
            ),
            FAILED,
            "the create request is never a declared write, even in a probe's report"
        );
        let _rx = armed(&log);
        let mut armed_create = log.lock().unwrap().takeover.take().unwrap();
        armed_create.pattern.body = Some(regex::Regex::new("publish").unwrap());
        log.lock().unwrap().takeover = Some(armed_create);
        assert_eq!(
            route(&log, with_body("POST", url, None), take),
            FAILED,
            "an unknown body is never handed over as the create request"
        );
        assert_eq!(
            route(
                &log,
                with_body("POST", url, Some(r#"{"status":"publish"}"#)),
                take
            ),
            Route::HandedOver
        );
    }

    #[test]
    fn a_poisoned_log_fails_every_request_and_hands_nothing_over() {
        let log = Mutex::new(Log::default());
        let _rx = armed(&log);
        log.lock()
            .unwrap()
            .typed
            .extend(Watched::of("Quarterly results"));
        poisoned(&log);
        let mut handed = 0;
        // A plain read is not fetched (whether it carries the draft is unknown), the armed create request
        // is not handed over, a write is failed.
        for (method, url) in [
            ("GET", "http://x/feed"),
            ("GET", "http://x/px?d=Quarterly+results"),
            ("POST", "http://x/api/posts"),
            ("PUT", "http://x/api/drafts"),
        ] {
            let r = route(&log, req(method, url, false), |_tx| {
                handed += 1;
                true
            });
            assert_eq!(r, FAILED, "{method} {url}");
        }
        assert_eq!(handed, 0);
        assert_eq!(
            route(&log, req("POST", "http://x/api/posts", true), |_tx| true),
            Route::ContinueResponse
        );
    }

    #[tokio::test]
    async fn every_reader_of_a_poisoned_log_fails_closed() {
        let guard = WriteGuard {
            log: Arc::new(Mutex::new(Log::default())),
            door: Door::open().await.unwrap(),
        };
        let _rx = guard.arm(create());
        assert!(guard.writes().unwrap().is_empty());
        poisoned(&guard.log);
        assert!(guard.writes().unwrap_err().is_guard_poisoned());
        assert!(guard.writes_since(0).unwrap_err().is_guard_poisoned());
        assert!(guard.extra_creates().unwrap_err().is_guard_poisoned());
        let faults = guard.faults();
        assert_eq!(faults.len(), 1);
        assert!(faults[0].contains("poisoned"), "{faults:?}");
        let doubt = guard.not_sent_proof().unwrap_err();
        assert!(doubt.contains("poisoned"), "{doubt}");
        // "Not taken back" sends the press to wait for a handover that never comes, then to doubt.
        assert!(!guard.disarm());
        // A press armed after the poison gets a receiver whose sender is gone (no handover, ever).
        let mut late = guard.arm(create());
        assert!(late.try_recv().is_err());
    }
}
