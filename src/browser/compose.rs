//! The compose page of a publish: navigate, run the declared non-publishing steps, fill fields with
//! `Input.insertText` (any Unicode; the last character as a key press), check the publish control strictly,
//! and press it ONCE
//! with a trusted click, which requires consuming the store's dispatch authorization.
//!
//! [`PublishControl::press`] is the only method in the crate that presses a publish control. It takes a
//! [`DispatchAuthorization`] by value (not `Clone`), so one authorization presses at most once:
//!
//! ```compile_fail,E0382
//! use oncepost::browser::{compose::{Actionable, ComposePage}, CreatePattern, PublishControl, TransportOptions};
//! use oncepost::store::DispatchAuthorization;
//! async fn twice(c: &PublishControl, p: &ComposePage<'_>, at: &Actionable, pat: &CreatePattern,
//!                o: &TransportOptions, auth: DispatchAuthorization) {
//!     let hook = |_f, _w| async { Ok::<(), String>(()) };
//!     c.press(p, at, auth, pat, o, hook).await;
//!     c.press(p, at, auth, pat, o, hook).await; // the authorization was moved by the first press
//! }
//! ```
use std::future::Future;
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchMouseEventParams, DispatchMouseEventType, MouseButton,
};
use serde::Serialize;

use super::checks::{Act, LocatorCheck, Scroll, check_and_act, evaluate_json};
use super::dialogs::{self, DialogLog, DialogPolicy};
use super::locator::{NamedLocator, PressKey, PublishControl};
use super::probe::{ProbePage, ProbePlan, StepOutcome, StepTime};
use super::signals::SignalLook;
use super::transport::{
    self, CreatePattern, DispatchOutcome, TransportOptions, WireRequest, WriteLogEntry,
};
use super::{BrowserError, BrowserSession, Liveness};
use crate::store::{DispatchAuthorization, Fence};
use crate::template::value_from_url;
use crate::wait::Wait;

/// How success shows after the create response (from the contract's `[[success]]`).
#[derive(Debug, Clone)]
pub enum SuccessRule {
    /// The page URL matches; the named group `id` is the post id.
    UrlRegex(regex::Regex),
    /// The create response (with this status, if given) carries the id at this dotted JSON path.
    ResponseJson {
        /// Required status.
        status: Option<u16>,
        /// Dotted path.
        field: String,
    },
    /// The create response has this status (its body need carry nothing).
    ResponseStatus {
        /// Required status.
        status: u16,
    },
    /// An element (CSS) appears, carrying the id in an attribute.
    Element {
        /// CSS selectors, tried in order.
        css: Vec<String>,
        /// Attribute with the id.
        id_attribute: Option<String>,
        /// The element must show this text (a posted field's value): another post's banner is not ours.
        text: Option<String>,
    },
    /// The app shows it has synced: the element (first match of `css`), or its attribute or class, is
    /// there (`present`) or gone. Carries no id.
    Synced {
        /// CSS selector.
        css: String,
        /// Look at this attribute.
        attribute: Option<String>,
        /// Look at this class.
        class: Option<String>,
        /// Wait for it to be there (true) or gone (false).
        present: bool,
    },
    /// (A contract that publishes over a WebSocket.) One of the platform's messages on the create socket,
    /// after the create message was written, matches; its named group `id` is the post id.
    SocketAnswer(regex::Regex),
}

/// One success signal of a publish plan.
#[derive(Debug, Clone)]
pub struct Success {
    /// How it shows.
    pub rule: SuccessRule,
    /// The post id when the contract takes it from a posted field (`id_from_field`): used when the signal
    /// itself carries none.
    pub id: Option<String>,
}

/// A success signal that was seen.
#[derive(Debug, Clone, Serialize)]
pub struct SuccessSeen {
    /// Which rule (`url_regex`, `response_json`, `element`).
    pub via: String,
    /// The post id, when the signal carries one.
    pub id: Option<String>,
    /// The page URL at that moment.
    pub page_url: Option<String>,
}

/// The publish control passed its strict checks; this is where it will be clicked.
#[derive(Debug, Clone, Serialize)]
pub struct Actionable {
    /// Centre, CSS pixels of the top-level page.
    pub x: f64,
    /// Centre.
    pub y: f64,
    /// The check it passed.
    pub check: LocatorCheck,
}

/// The result of the one press.
#[derive(Debug)]
pub struct Pressed {
    /// The consumed authorization's fence (settle with it).
    pub fence: Fence,
    /// What happened to the create request.
    pub outcome: DispatchOutcome,
    /// The write log (unredacted).
    pub log: Vec<WriteLogEntry>,
}

/// A page on its way to the compose page (see [`ComposePage::begin`]).
pub struct Opening<'a> {
    page: ComposePage<'a>,
    at_compose: bool,
}

impl<'a> Opening<'a> {
    /// Navigate to the compose URL (again, when `reload`: a page loaded since the login may have changed
    /// the session's tokens, and the compose page must carry the newest) and check the origin.
    pub async fn compose(
        self,
        reload: bool,
        navigation_timeout: Duration,
    ) -> Result<ComposePage<'a>, BrowserError> {
        let cp = self.page;
        let live = cp.session.liveness();
        // In front of the send's other pages: the full browser gives animation frames (and a prompt frame
        // for a capture or a trusted click) only to the tab in front, and the look's page, opened beside
        // this one, may have come in front of it. Measured with /usr/bin/chromium, the compose page behind
        // it: each stability check waited out its 100 ms timer, the screenshot took 424 ms and the press's
        // mouse event 5 s (tests/it/sessions.rs has a page that ignores clicks while hidden). Chromium's
        // headless shell draws every page; there this changes nothing.
        live.call(
            "bring the compose page to the front",
            cp.page.bring_to_front(),
        )
        .await?;
        if reload || !self.at_compose {
            live.bounded(
                "navigate to the compose page",
                navigation_timeout,
                cp.page.goto(cp.plan.url.as_str()),
            )
            .await?;
        }
        if let Some(u) = cp.url().await? {
            let origin = url::Url::parse(&u)
                .map(|u| u.origin().ascii_serialization())
                .unwrap_or_default();
            if !cp.plan.allowed_origins.contains(&origin) {
                return Err(BrowserError::Plan(format!(
                    "compose page ended on {u}, outside the allowed origins {:?}",
                    cp.plan.allowed_origins
                )));
            }
        }
        Ok(cp)
    }

    /// Close the page without composing.
    pub async fn close(self) {
        self.page.close().await;
    }
}

/// The bound on the last look at the fields with the create request held ([`ComposePage::added_to_the_create`]):
/// one evaluation, a few milliseconds on a page that answers; a page that does not is not judged by it.
pub(crate) const LAST_LOOK: Duration = Duration::from_millis(500);

/// An open compose page.
pub struct ComposePage<'a> {
    session: &'a BrowserSession,
    page: Page,
    plan: &'a ProbePlan,
    dialogs: DialogLog,
    /// The fields of the last read-back of the fill, what was typed into each and what it showed then:
    /// what [`ComposePage::changed_since_checked`] reads again right before the authorization.
    checked: std::sync::Mutex<Vec<CheckedField>>,
    /// The fields typed once more because their read-back did not show what was typed, each with why.
    typed_again: std::sync::Mutex<Vec<StepOutcome>>,
}

/// A filled field as its read-back found it.
#[derive(Debug, Clone)]
struct CheckedField {
    field: NamedLocator,
    typed: String,
    shown: String,
    /// Shown whole only when scrolled through (an editor that draws only the lines near the viewport): read
    /// so again whenever it is read whole.
    scrolled: bool,
}

impl CheckedField {
    /// A field whose read-back showed `shown` (`scrolled`: read whole only by scrolling it, so what it shows is
    /// the typed text, in parts).
    fn new(field: NamedLocator, typed: &str, shown: Option<String>, scrolled: bool) -> Self {
        CheckedField {
            field,
            typed: typed.to_string(),
            shown: if scrolled {
                typed.to_string()
            } else {
                shown.unwrap_or_default()
            },
            scrolled,
        }
    }
}

/// A field the page changed after it was filled and read back: it no longer shows what was typed, or its
/// words are not the ones it showed then (a draft synced from another device put in front of the post).
#[derive(Debug, Clone, Serialize)]
pub struct FieldChanged {
    /// The field (`field:text`).
    pub field: String,
    /// How (redacted and cut, as a step outcome says it).
    pub why: String,
    /// Whether typing it again is possible: a field the typed text follows (`fill = "append"`) would then
    /// hold the text twice.
    pub can_fill_again: bool,
    #[serde(skip)]
    locator: NamedLocator,
    #[serde(skip)]
    typed: String,
}

impl<'a> ComposePage<'a> {
    /// Open a fresh page (service workers bypassed, dialogs answered), optionally visit `login_url` first,
    /// then navigate to the compose URL and check the origin.
    pub async fn open(
        session: &'a BrowserSession,
        plan: &'a ProbePlan,
        login_url: Option<&str>,
        navigation_timeout: Duration,
    ) -> Result<ComposePage<'a>, BrowserError> {
        ComposePage::begin(session, plan, login_url, navigation_timeout)
            .await?
            .compose(false, navigation_timeout)
            .await
    }

    /// The first half of [`ComposePage::open`]: a fresh page, logged in through `login_url` if given, not
    /// yet (knowingly) on the compose page. What runs before [`Opening::compose`] (look-before-write)
    /// runs with the login's cookies, and cannot touch the compose page's session tokens: the compose
    /// page is the last page loaded.
    pub async fn begin(
        session: &'a BrowserSession,
        plan: &'a ProbePlan,
        login_url: Option<&str>,
        navigation_timeout: Duration,
    ) -> Result<Opening<'a>, BrowserError> {
        let live = session.liveness();
        let page = session.open_page("open the compose page").await?;
        // After the press this page may navigate to the new post at a URL made of its text (its title).
        session
            .write_guard()
            .trust_navigations_of(page.target_id().inner());
        let dialogs = dialogs::install(session, &page, DialogPolicy::default()).await?;
        let mut at_compose = false;
        if let Some(u) = login_url {
            live.bounded("open the login URL", navigation_timeout, page.goto(u))
                .await?;
            // A login link that redirects to the compose page leaves it loaded: no second navigation
            // (unless something loaded since, see `Opening::compose`).
            at_compose = live
                .call("read the page URL", page.url())
                .await?
                .is_some_and(|now| now == plan.url);
        }
        Ok(Opening {
            page: ComposePage {
                session,
                page,
                plan,
                dialogs,
                checked: std::sync::Mutex::new(Vec::new()),
                typed_again: std::sync::Mutex::new(Vec::new()),
            },
            at_compose,
        })
    }

    fn probe_page(&self) -> ProbePage<'_> {
        ProbePage::new(
            self.page.clone(),
            self.session.liveness(),
            &self.plan.publish,
        )
    }

    /// The page's URL now.
    pub async fn url(&self) -> Result<Option<String>, BrowserError> {
        self.session
            .liveness()
            .call("read the page URL", self.page.url())
            .await
    }

    /// The post's text (the body field's value): after the press, a request matching the create request is
    /// sent only when it carries it and none of `earlier` (the account's other posts) beside it
    /// (`door/carried.rs`). `also_typed`: the post's other fields, whose words an earlier post may share.
    pub fn expect_in_create(&self, text: &str, also_typed: &[&str], earlier: &[String]) {
        self.session
            .write_guard()
            .expect_in_create(text, also_typed, earlier);
    }

    /// Run the declared non-publishing steps (each waits, bounded, for its target), then fill each field
    /// named in `values` (`field:NAME` → text) in the contract's order, each followed by the steps that
    /// follow it (a wizard's "Next"), then the steps after the fill. Stops at the first thing that could
    /// not be done. Returns what happened; `Err` only for browser failures.
    pub async fn prepare(
        &self,
        values: &[(String, String)],
        step_timeout: Duration,
    ) -> Result<Vec<StepOutcome>, BrowserError> {
        let pp = self.probe_page();
        let mut out = Vec::new();
        let before = self.plan.steps_at(StepTime::BeforeFill);
        if !self.run_steps(&pp, &before, step_timeout, &mut out).await? {
            return Ok(out);
        }
        // Filled and not yet read back: each must show what was typed before anything is pressed (see
        // `verify_filled`), and before a step that follows it, which may take it out of view.
        let mut unchecked: Vec<(NamedLocator, &str)> = Vec::new();
        for f in &self.plan.fields {
            if let Some((_, text)) = values.iter().find(|(n, _)| *n == f.name)
                && let Some(filled) = self
                    .fill_field(&pp, f, text, step_timeout, &mut out)
                    .await?
            {
                unchecked.push(filled);
            }
            let next = self.plan.steps_at(StepTime::AfterField(&f.name));
            if next.is_empty() {
                continue;
            }
            if !self.verify(&pp, &mut unchecked, &mut out).await?
                || out.iter().any(|o| !o.ok)
                || !self.run_steps(&pp, &next, step_timeout, &mut out).await?
            {
                return Ok(out);
            }
        }
        self.verify(&pp, &mut unchecked, &mut out).await?;
        // Steps after the fill: a click that opens a pre-publish panel once the post is written (a two-step
        // publish); like every step, never the publish control itself.
        let after = self.plan.steps_at(StepTime::AfterFill);
        self.run_steps(&pp, &after, step_timeout, &mut out).await?;
        Ok(out)
    }

    /// Run `steps` in order; false (and the outcome recorded) when one could not be done.
    async fn run_steps(
        &self,
        pp: &ProbePage<'_>,
        steps: &[&super::NonPublishingStep],
        step_timeout: Duration,
        out: &mut Vec<StepOutcome>,
    ) -> Result<bool, BrowserError> {
        for step in steps {
            let o = pp.run_step(step, step_timeout).await?;
            let ok = o.ok;
            out.push(o);
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Fill field `f` with `text` once it is ready (waiting like a step would, for slow pages); the field
    /// and its text when it was filled.
    async fn fill_field<'t>(
        &self,
        pp: &ProbePage<'_>,
        f: &NamedLocator,
        text: &'t str,
        step_timeout: Duration,
        out: &mut Vec<StepOutcome>,
    ) -> Result<Option<(NamedLocator, &'t str)>, BrowserError> {
        let c = pp.wait_for(f, step_timeout).await?;
        if !c.ok {
            out.push(StepOutcome {
                action: super::StepAction::Focus,
                target: f.name.clone(),
                ok: false,
                outcome: format!("not fillable: {}", c.problems.join("; ")),
            });
            return Ok(None);
        }
        for value in super::probe::typed_values(f, text) {
            self.session.write_guard().watch_typed(value);
        }
        let o = pp.fill(f, text).await?;
        let filled = o.ok.then(|| (f.clone(), text));
        out.push(o);
        Ok(filled)
    }

    /// Read back the fields filled since the last read (as `verify_filled` judges them); false when one does
    /// not show what was typed. What they show is kept for [`ComposePage::changed_since_checked`].
    ///
    /// A field that replaces what it holds (`fill = "replace"`) and does not show what was typed is, after
    /// [`RETYPE_AFTER`], clicked into, emptied by the Delete key (`ProbePage::clear`), typed once more and
    /// read again: a page that was still settling may have taken the typing away (MediaWiki's VisualEditor,
    /// on an account's first use, opens a popup once its welcome dialog has closed and moves the focus into
    /// it: the first paragraph went nowhere in 2 first sends of 8 under load; with this, 10 of 10 made, 3 on
    /// the second try). A page that changes what it is given (a length cut, rewritten markup) shows the same
    /// again and still fails. Nothing has been pressed either way.
    async fn verify(
        &self,
        pp: &ProbePage<'_>,
        unchecked: &mut Vec<(NamedLocator, &str)>,
        out: &mut Vec<StepOutcome>,
    ) -> Result<bool, BrowserError> {
        if unchecked.is_empty() {
            return Ok(true);
        }
        let fields: Vec<&NamedLocator> = unchecked.iter().map(|(f, _)| f).collect();
        let shown = pp.shown_in_fields(&fields).await?;
        let mut ok = true;
        let mut kept = Vec::new();
        for ((f, typed), shown) in unchecked.drain(..).zip(shown) {
            let rule = self.plan.text_compare;
            let judged = pp.judge_filled(&f, typed, shown.as_deref(), rule).await?;
            let (failed, shown, scrolled) = match judged {
                (Some(failed), _) if can_type_again(&f) => {
                    match self.type_once_more(pp, &f, typed, failed, out).await? {
                        Some(again) => again,
                        None => {
                            ok = false;
                            continue;
                        }
                    }
                }
                (failed, scrolled) => (failed, shown, scrolled),
            };
            match failed {
                Some(failed) => {
                    ok = false;
                    out.push(failed);
                }
                None => kept.push(CheckedField::new(f, typed, shown, scrolled)),
            }
        }
        let mut checked = self.checked.lock().unwrap_or_else(|p| p.into_inner());
        for c in kept {
            checked.retain(|k| k.field.name != c.field.name);
            checked.push(c);
        }
        Ok(ok)
    }

    /// The second try of `verify` for field `f`, whose read-back `failed`: after [`RETYPE_AFTER`], clicked
    /// into, emptied and typed once more, then read again. What the read finds (`None`: it could not be
    /// typed again, the outcome recorded in `out`).
    async fn type_once_more(
        &self,
        pp: &ProbePage<'_>,
        f: &NamedLocator,
        typed: &str,
        failed: StepOutcome,
        out: &mut Vec<StepOutcome>,
    ) -> Result<Option<(Option<StepOutcome>, Option<String>, bool)>, BrowserError> {
        let again = StepOutcome {
            outcome: format!("typed again: {}", failed.outcome),
            ok: true,
            ..failed
        };
        self.typed_again
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(again.clone());
        out.push(again);
        tokio::time::sleep(RETYPE_AFTER).await;
        // Clicked into first, as a person whose typing went elsewhere does: a popup that took the focus
        // closes on a press outside it, and an editor takes its document back.
        let c = pp.wait_for(f, RETYPE_WAIT).await?;
        if let (true, Some(r)) = (c.ok, c.rect) {
            let at = (r.x + r.w / 2.0, r.y + r.h / 2.0);
            let live = self.session.liveness();
            if let Err(e) = click(self, at, live, "click into the field").await {
                tracing::debug!(field = %f.name, error = %e, "click into the field");
            }
        }
        let cleared = pp.clear(f).await?;
        let o = if cleared.ok {
            pp.fill(f, typed).await?
        } else {
            cleared
        };
        let typed_again = o.ok;
        out.push(o);
        if !typed_again {
            return Ok(None);
        }
        let shown = pp.shown_in_fields(&[f]).await?.pop().flatten();
        let rule = self.plan.text_compare;
        let (failed, scrolled) = pp.judge_filled(f, typed, shown.as_deref(), rule).await?;
        Ok(Some((failed, shown, scrolled)))
    }

    /// Type every checked field that replaces what it holds once more, as `verify` types a field again
    /// (after [`RETYPE_AFTER`], clicked into, emptied by the Delete key, typed, read back), because of `why`:
    /// the publish control stayed disabled though every field showed what was typed. A page whose own state
    /// of the text missed the typing shows the text and keeps its control disabled: an app rendered on the
    /// server that takes its fields over only once its scripts have run (its state starts empty, what was
    /// typed before stays in the field: Fixturebook's `/compose?hydrate_late=MS`), or an editor that follows
    /// its field only from a timer set on the focus. A person types again there; nothing has been pressed.
    /// Returns each field's outcomes, the first that is not ok ending it; `None`, nothing typed, when a
    /// checked field is no longer in the page.
    pub async fn type_checked_again(
        &self,
        why: &str,
    ) -> Result<Option<Vec<StepOutcome>>, BrowserError> {
        let checked = self
            .checked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let pp = self.probe_page();
        let mut out = Vec::new();
        // A field a wizard's step took out of the page keeps its value there and is not typed again; and
        // then neither is any other (the control is judged on the step it is on).
        let fields: Vec<&NamedLocator> = checked.iter().map(|c| &c.field).collect();
        if pp
            .shown_in_fields(&fields)
            .await?
            .iter()
            .any(Option::is_none)
        {
            return Ok(None);
        }
        for c in checked.into_iter().filter(|c| can_type_again(&c.field)) {
            let failed = StepOutcome {
                action: super::StepAction::Verify,
                target: c.field.name.clone(),
                ok: false,
                outcome: why.to_string(),
            };
            match self
                .type_once_more(&pp, &c.field, &c.typed, failed, &mut out)
                .await?
            {
                Some((None, shown, scrolled)) => {
                    let mut kept = self.checked.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(k) = kept.iter_mut().find(|k| k.field.name == c.field.name) {
                        *k = CheckedField::new(c.field.clone(), &c.typed, shown, scrolled);
                    }
                }
                Some((Some(failed), _, _)) => {
                    out.push(failed);
                    break;
                }
                None => break,
            }
        }
        Ok(Some(out))
    }

    /// Whether a checked field was read whole only by scrolling it (each of its reads scrolls the page and
    /// puts it back).
    pub fn read_by_scrolling(&self) -> bool {
        self.checked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|c| c.scrolled)
    }

    /// Whether a checked field replaces what it holds (so [`ComposePage::type_checked_again`] can type it).
    pub fn has_fields_to_type_again(&self) -> bool {
        self.checked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|c| can_type_again(&c.field))
    }

    /// The fields typed once more so far because their read-back did not show what was typed (see
    /// `verify`), each with why: for the send's history.
    pub fn typed_again(&self) -> Vec<StepOutcome> {
        self.typed_again
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The checked fields the page changed since their read-back, read again in one evaluation (meant for
    /// right before the authorization: a page may put a draft it synced or restored late into a field
    /// after it was filled and checked, and the press would send that). A field no longer in the page is
    /// not judged (a wizard's step took it away; the page keeps its value).
    ///
    /// Changed means it no longer shows what was typed (the fill check's rule), or its words are not the
    /// words it showed at the check: words added around the post are another post too. What only redraws
    /// the same words (emoji drawn as images, markup rendered) is not a change.
    pub async fn changed_since_checked(&self) -> Result<Vec<FieldChanged>, BrowserError> {
        let checked = self
            .checked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let fields: Vec<&NamedLocator> = checked.iter().map(|c| &c.field).collect();
        let pp = self.probe_page();
        let now = pp.shown_in_fields(&fields).await?;
        let rule = self.plan.text_compare;
        let mut changed = Vec::new();
        for (c, now) in checked.into_iter().zip(now) {
            let Some(now) = now else { continue };
            let why = if c.scrolled {
                // A part of it in view, the rest drawn when scrolled to: read whole again the same way.
                let (failed, _) = pp
                    .judge_filled(&c.field, &c.typed, Some(&now), rule)
                    .await?;
                let whole = failed.is_none();
                (!whole).then(|| {
                    format!(
                        "scrolled through, the field no longer shows what was typed (in view: {:?})",
                        super::probe::shown_in_why(&now)
                    )
                })
            } else {
                super::probe::shows_other_text(&c.typed, Some(&now), rule).or_else(|| {
                    let words = super::readback::visible_words;
                    (words(&now) != words(&c.shown))
                        .then(|| super::probe::words_added(&c.shown, &now))
                })
            };
            let Some(why) = why else { continue };
            let can_fill_again = can_type_again(&c.field);
            changed.push(FieldChanged {
                field: c.field.name.clone(),
                why,
                can_fill_again,
                locator: c.field,
                typed: c.typed,
            });
        }
        Ok(changed)
    }

    /// Fill the fields the page changed again (each replacing what it holds) and read them back. Returns what
    /// happened; a field that cannot be filled again is an outcome that is not ok.
    pub async fn fill_again(
        &self,
        changed: &[FieldChanged],
        step_timeout: Duration,
    ) -> Result<Vec<StepOutcome>, BrowserError> {
        let pp = self.probe_page();
        let mut out = Vec::new();
        let mut unchecked = Vec::new();
        for c in changed {
            if !c.can_fill_again {
                out.push(StepOutcome {
                    action: super::StepAction::Verify,
                    target: c.field.clone(),
                    ok: false,
                    outcome: format!(
                        "the page changed the field after it was filled ({}); the typed text follows what \
                         the field holds (fill = \"append\"), so it is not typed again",
                        c.why
                    ),
                });
                return Ok(out);
            }
            if let Some(filled) = self
                .fill_field(&pp, &c.locator, &c.typed, step_timeout, &mut out)
                .await?
            {
                unchecked.push(filled);
            }
        }
        if out.iter().all(|o| o.ok) {
            self.verify(&pp, &mut unchecked, &mut out).await?;
        }
        Ok(out)
    }

    /// The last look, with the create request held at the door and not yet sent: the words each checked
    /// field shows now and did not show at its check, when the request carries every one of them. Then the
    /// page changed the field after the fields' second read (a draft it synced landing in the milliseconds
    /// of the authorization, a handler on the press adding a signature or a hashtag) and built the create
    /// from it: another post than the one checked, which must not leave.
    ///
    /// `None` when nothing is to be refused: no field shows a word it did not show at its check (a page
    /// that empties its field on send adds none), the words it added are not all in the request (the page
    /// put them in after it built the request: a template for the next post), a field is gone (a form's
    /// page unloading), or the page did not answer within [`LAST_LOOK`] (the look is a guard on top of the
    /// door's, which still checks the request carries the post).
    pub(crate) async fn added_to_the_create(&self, wire: &WireRequest) -> Option<String> {
        let checked = self
            .checked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if checked.is_empty() {
            return None;
        }
        let fields: Vec<&NamedLocator> = checked.iter().map(|c| &c.field).collect();
        let pp = self.probe_page();
        let now = tokio::time::timeout(LAST_LOOK, pp.shown_in_fields(&fields))
            .await
            .ok()?
            .ok()?;
        let carried = super::door::carried::words_of;
        // What the contract says the page adds by itself (a signature) is not the page changing the post.
        let declared: std::collections::HashSet<String> = self
            .plan
            .added_text
            .iter()
            .flat_map(|a| carried(a))
            .collect();
        checked.iter().zip(now).find_map(|(c, now)| {
            let mut before: std::collections::HashSet<String> =
                carried(&c.shown).into_iter().collect();
            before.extend(declared.iter().cloned());
            let mut added: Vec<String> = Vec::new();
            for w in carried(&now?) {
                if !before.contains(&w) && !added.contains(&w) {
                    added.push(w);
                }
            }
            super::door::carried::carries_every_word(&wire.url, Some(&wire.body), &added).then(
                || {
                    format!(
                        "{} shows words it did not show when it was checked, and the create request carries \
                         them ({:?}): the page changed the post after its check; refused before it was sent",
                        c.field.name,
                        super::probe::shown_in_why(&added.join(" "))
                    )
                },
            )
        })
    }

    /// Strict actionability of the publish control after filling (all its states, `states_after_fill`
    /// included, in one evaluation), scrolled into view first (a control below the fold is checked, and
    /// then clicked, where it can be seen; the scroll presses nothing). `Ok(Err(check))` when it is not
    /// actionable.
    ///
    /// A control that is not actionable yet is checked again every 100 ms for up to `settle`: a page that
    /// still lays itself out moves it (not `stable`), a button enabled by the page's own input handler may
    /// lag the fill. Checks only read: repeating them presses nothing.
    pub async fn check_publish(
        &self,
        publish: &PublishControl,
        settle: Duration,
    ) -> Result<Result<Actionable, LocatorCheck>, BrowserError> {
        let named: NamedLocator = publish.checkable(true);
        let wait = Wait::new(
            "the publish control to be actionable",
            settle,
            Duration::from_millis(100),
        );
        loop {
            let (mut checks, _) = check_and_act(
                &self.page,
                self.session.liveness(),
                std::slice::from_ref(&named),
                None,
                Scroll::IntoView,
            )
            .await?;
            let c = checks
                .pop()
                .ok_or_else(|| BrowserError::Script("no check result".into()))?;
            match (c.ok, c.rect) {
                (true, Some(r)) if r.w > 0.0 && r.h > 0.0 => {
                    return Ok(Ok(Actionable {
                        x: r.x + r.w / 2.0,
                        y: r.y + r.h / 2.0,
                        check: c,
                    }));
                }
                _ if wait.pause().await.is_ok() => {}
                _ => return Ok(Err(c)),
            }
        }
    }

    /// A screenshot of the page with the contract's masks blacked out.
    pub async fn screenshot(&self) -> Result<Vec<u8>, BrowserError> {
        masked_screenshot(&self.page, self.session, &self.plan.masks).await
    }

    /// A screenshot of wherever the page has landed, within `limit`.
    ///
    /// After a response the page often navigates (Fixturebook goes to the permalink); a capture that is
    /// under way when the main frame navigates never answers (measured: it waited out its whole slice). So
    /// each try first waits for `document.readyState == "complete"`, and a try is given up the moment the
    /// main frame starts loading or commits a navigation (CDP `Page.frameStartedLoading`,
    /// `Page.frameNavigated`), then made again on the new document. Measured on a warm worker before this:
    /// most posts' first try started on the old, complete document just before the navigation and hung for
    /// its 400 ms slice (the post's after-response step: ~600 ms against ~150). Every try is still bounded
    /// (a slice of `limit`, the first 400 ms, each next twice as long up to 2 s, for a page slow to paint or
    /// a hang no event announces), and a failed try is repeated until `limit` runs out. The last error
    /// comes back if none succeeded.
    pub async fn screenshot_settled(&self, limit: Duration) -> Result<Vec<u8>, BrowserError> {
        use chromiumoxide::cdp::browser_protocol::page::{
            EventFrameNavigated, EventFrameStartedLoading,
        };
        use futures::StreamExt;
        let live = self.session.liveness();
        let wait = Wait::new(
            "screenshot after the page settled",
            limit,
            Duration::from_millis(50),
        );
        let main = live
            .call("find the main frame", self.page.mainframe())
            .await?;
        let mut started = live
            .call(
                "listen for navigations",
                self.page.event_listener::<EventFrameStartedLoading>(),
            )
            .await?;
        let mut committed = live
            .call(
                "listen for navigations",
                self.page.event_listener::<EventFrameNavigated>(),
            )
            .await?;
        // Resolves when the main frame starts loading a document or commits one. Events from before a try
        // are dropped first (a navigation already committed is seen by the try's `readyState`; one only
        // started will still announce its commit).
        let mut navigating = async || {
            use futures::FutureExt;
            while let Some(Some(_)) = started.next().now_or_never() {}
            while let Some(Some(_)) = committed.next().now_or_never() {}
            loop {
                tokio::select! {
                    Some(e) = started.next() => if main.as_ref() == Some(&e.frame_id) { return; },
                    Some(e) = committed.next() => if e.frame.parent_id.is_none() { return; },
                    else => std::future::pending::<()>().await,
                }
            }
        };
        let mut slice = Duration::from_millis(400);
        let mut last = BrowserError::from(wait.expiry());
        while !wait.expired() {
            let left = wait.remaining().min(slice);
            slice = (slice * 2).min(Duration::from_millis(2_000));
            let attempt = async {
                let ready = evaluate_json(
                    &self.page,
                    live,
                    "read the document state",
                    "() => document.readyState",
                    &serde_json::json!(null),
                )
                .await?;
                if ready.as_str() != Some("complete") {
                    return Err(BrowserError::Script(format!(
                        "document not loaded yet ({ready})"
                    )));
                }
                self.screenshot().await
            };
            let r = tokio::select! {
                r = tokio::time::timeout(left, attempt) => r,
                () = navigating() => Ok(Err(BrowserError::Script(
                    "the page navigated during the capture".into(),
                ))),
            };
            match r {
                Ok(Ok(png)) => return Ok(png),
                Ok(Err(e @ BrowserError::Died { .. })) => return Err(e),
                Ok(Err(e)) => last = e,
                Err(_) => {
                    last = BrowserError::Timeout {
                        during: wait.what().into(),
                        after: left,
                    }
                }
            }
            if wait.pause().await.is_err() {
                break;
            }
        }
        Err(last)
    }

    /// Who the page shows as logged in at `css` (its trimmed text, or its attribute `attribute`), looked for
    /// in the page and its open shadow roots until it shows or `wait` passes (a header may render after the
    /// form); `None` when nothing there shows anyone.
    pub async fn signed_in_as(
        &self,
        css: &str,
        attribute: Option<&str>,
        wait: Duration,
    ) -> Result<Option<String>, BrowserError> {
        let arg = serde_json::json!({ "css": css, "attribute": attribute });
        let bound = crate::wait::Wait::new(
            "the logged-in user to show",
            wait,
            Duration::from_millis(100),
        );
        loop {
            let v = evaluate_json(
                &self.page,
                self.session.liveness(),
                "read who is logged in",
                SIGNED_IN_JS,
                &arg,
            )
            .await?;
            if let Some(shown) = v.as_str().filter(|s| !s.is_empty()) {
                return Ok(Some(shown.to_string()));
            }
            if bound.pause().await.is_err() {
                return Ok(None);
            }
        }
    }

    /// The compose region's HTML (the publish control's form, else `main`, else `body`), with hidden input
    /// values and CSRF-like attributes blanked, at most 64 KiB.
    pub async fn dom_excerpt(&self) -> Result<String, BrowserError> {
        let v = evaluate_json(
            &self.page,
            self.session.liveness(),
            "excerpt the compose region",
            DOM_EXCERPT_JS,
            &serde_json::json!({
                "publish": css_of(&self.plan.publish.checkable(false)),
                "fields": self.plan.fields.iter().map(css_of).collect::<Vec<_>>(),
            }),
        )
        .await?;
        Ok(v.as_str().unwrap_or_default().to_string())
    }

    /// Wait (bounded) for a success signal, given the create response when there is one.
    pub async fn wait_success(
        &self,
        rules: &[Success],
        response: Option<(u16, &[u8])>,
        limit: Duration,
    ) -> Result<Option<SuccessSeen>, BrowserError> {
        Ok(self
            .wait_signal(rules, response, limit)
            .await?
            .map(|(mut seen, by_field)| {
                if seen.id.is_none() {
                    seen.id = by_field;
                }
                seen
            }))
    }

    async fn wait_signal(
        &self,
        rules: &[Success],
        response: Option<(u16, &[u8])>,
        limit: Duration,
    ) -> Result<Option<(SuccessSeen, Option<String>)>, BrowserError> {
        for s in rules {
            let hit = match (&s.rule, response) {
                (SuccessRule::ResponseJson { status, field }, Some((got, body)))
                    if status.is_none_or(|s| s == got) =>
                {
                    serde_json::from_slice::<serde_json::Value>(body)
                        .ok()
                        .and_then(|v| dotted(&v, field))
                        .map(|id| ("response_json", Some(id)))
                }
                (SuccessRule::ResponseStatus { status }, Some((got, _))) if *status == got => {
                    Some(("response_status", None))
                }
                _ => None,
            };
            if let Some((via, id)) = hit {
                let seen = SuccessSeen {
                    via: via.into(),
                    id,
                    page_url: self.url().await.ok().flatten(),
                };
                return Ok(Some((seen, s.id.clone())));
            }
        }
        let watch: Vec<&Success> = rules
            .iter()
            .filter(|s| {
                !matches!(
                    s.rule,
                    SuccessRule::ResponseJson { .. } | SuccessRule::ResponseStatus { .. }
                )
            })
            .collect();
        if watch.is_empty() {
            return Ok(None);
        }
        let wait = Wait::new("the success signal", limit, Duration::from_millis(100));
        // The page's frames too (a composer framed from the platform shows its signal in its frame), and
        // only documents of the platform's origins (signals.rs).
        let mut look = SignalLook::new(
            &self.page,
            self.session.liveness(),
            &self.plan.allowed_origins,
        );
        loop {
            let url = self.url().await?;
            for s in &watch {
                match &s.rule {
                    SuccessRule::UrlRegex(re) => {
                        let hit = match url.as_deref().and_then(|u| re.captures(u)) {
                            Some(c) => Some((
                                url.clone(),
                                c.name("id").map(|m| value_from_url(m.as_str())),
                            )),
                            None => look
                                .frame_url(re)
                                .await
                                .unwrap_or(None)
                                .map(|(u, id)| (Some(u), id)),
                        };
                        if let Some((page_url, id)) = hit {
                            let seen = SuccessSeen {
                                via: "url_regex".into(),
                                id,
                                page_url,
                            };
                            return Ok(Some((seen, s.id.clone())));
                        }
                    }
                    SuccessRule::Element {
                        css,
                        id_attribute,
                        text,
                    } => {
                        // An answer that cannot be had (the page navigating) is no signal yet.
                        if let Ok(Some(id)) = look
                            .element(css, id_attribute.as_deref(), text.as_deref())
                            .await
                        {
                            let seen = SuccessSeen {
                                via: "element".into(),
                                id,
                                page_url: url.clone(),
                            };
                            return Ok(Some((seen, s.id.clone())));
                        }
                    }
                    SuccessRule::Synced {
                        css,
                        attribute,
                        class,
                        present,
                    } => {
                        // An answer that is neither state (the page navigating) is no signal.
                        if let Ok(Some(state)) = look
                            .synced(css, attribute.as_deref(), class.as_deref())
                            .await
                            && state == *present
                        {
                            let seen = SuccessSeen {
                                via: "synced".into(),
                                id: None,
                                page_url: url.clone(),
                            };
                            return Ok(Some((seen, s.id.clone())));
                        }
                    }
                    SuccessRule::SocketAnswer(re) => {
                        let answers = self.session.write_guard().door().sockets().answers();
                        if let Some(c) = answers
                            .iter()
                            .find_map(|m| re.captures(std::str::from_utf8(m).ok()?))
                        {
                            let seen = SuccessSeen {
                                via: "socket_answer".into(),
                                id: c
                                    .name("id")
                                    .map(|m| m.as_str().to_string())
                                    .filter(|id| !id.is_empty()),
                                page_url: url.clone(),
                            };
                            return Ok(Some((seen, s.id.clone())));
                        }
                    }
                    SuccessRule::ResponseJson { .. } | SuccessRule::ResponseStatus { .. } => {}
                }
            }
            // Not seen within the bound: no signal (the caller decides what that means).
            if wait.pause().await.is_err() {
                return Ok(None);
            }
        }
    }

    /// Dialogs and popups seen so far.
    pub fn dialogs(&self) -> Vec<dialogs::DialogEvent> {
        self.dialogs.events()
    }

    /// Close the page (bounded, best effort).
    pub async fn close(self) {
        let _ = self
            .session
            .liveness()
            .call("close the compose page", self.page.close())
            .await;
    }
}

impl PublishControl {
    /// Press the publish control ONCE: arm the write guard's takeover for the create request, consume the
    /// authorization, click at the checked centre with trusted mouse events (or, for a publish that is a key,
    /// focus the control and press the key in it), then carry the create request
    /// through the transport (`before_send` runs after the request is rebuilt and before any byte leaves;
    /// an `Err` from it fails the request unsent).
    pub async fn press<H, Fut>(
        &self,
        page: &ComposePage<'_>,
        at: &Actionable,
        auth: DispatchAuthorization,
        create: &CreatePattern,
        opts: &TransportOptions,
        before_send: H,
    ) -> Pressed
    where
        H: FnOnce(Fence, WireRequest) -> Fut,
        Fut: Future<Output = Result<(), String>>,
    {
        let session = page.session;
        let live = session.liveness();
        let guard = session.write_guard();
        // Over a WebSocket the create is a message on the relayed socket (`door/socket.rs`), else a request.
        let armed = if create.method == super::door::socket::WEBSOCKET {
            Armed::Socket(guard.arm_socket(create.clone()))
        } else {
            Armed::Request(guard.arm(create.clone()))
        };
        let fence = auth.consume();
        // Pressed: a `confirm()` the page asks now ("Publish this post?") is part of the press, answered as
        // the contract says (dismissed by default, as before the press).
        if self.accepts_confirm() {
            page.dialogs.accept_confirms();
        }
        let mut log = Vec::new();
        // What the press could not do is logged under its own name: a click, or the publish key.
        let (press_error, what) = match self.key() {
            None => (
                click(page, (at.x, at.y), live, "click the publish control")
                    .await
                    .err(),
                "click_error",
            ),
            Some(key) => (
                press_key(page, &self.checkable(true), key, live)
                    .await
                    .err(),
                "key_error",
            ),
        };
        if let Some(e) = &press_error {
            log.push(WriteLogEntry {
                at_ms: 0,
                what: what.into(),
                details: serde_json::json!({ "error": e }),
            });
        }
        let f2 = fence.clone();
        // The last look, with the create held at the door: a page that changed the post after its check
        // (in the milliseconds since the second read, or by a handler on the press) built the create from
        // the changed field, and that must not leave. Refused here, before the before-send record.
        let before_send = move |w: WireRequest| async move {
            if let Some(why) = page.added_to_the_create(&w).await {
                return Err(why);
            }
            before_send(f2, w).await
        };
        let outcome = match armed {
            Armed::Request(paused) => {
                transport::dispatch(
                    guard,
                    session.browser(),
                    live,
                    paused,
                    opts,
                    before_send,
                    &mut log,
                )
                .await
            }
            Armed::Socket(handover) => {
                transport::dispatch_socket(guard, handover, opts, before_send, &mut log).await
            }
        };
        Pressed {
            fence,
            outcome,
            log,
        }
    }
}

/// What a press armed: the takeover of a create request, or of a create message on the relayed socket.
enum Armed {
    Request(
        tokio::sync::oneshot::Receiver<
            chromiumoxide::cdp::browser_protocol::fetch::EventRequestPaused,
        >,
    ),
    Socket(tokio::sync::oneshot::Receiver<super::door::socket::Handover>),
}

/// A click as a person's: trusted mouse events at `at` (CSS pixels of the top-level page: move, press,
/// release). The press of a clicked publish control; a field clicked into before it is typed once more.
async fn click(
    page: &ComposePage<'_>,
    at: (f64, f64),
    live: &Liveness,
    what: &'static str,
) -> Result<(), String> {
    for (kind, buttons) in [
        (DispatchMouseEventType::MouseMoved, 0),
        (DispatchMouseEventType::MousePressed, 1),
        (DispatchMouseEventType::MouseReleased, 0),
    ] {
        let mut p = DispatchMouseEventParams::new(kind.clone(), at.0, at.1);
        if kind != DispatchMouseEventType::MouseMoved {
            p.button = Some(MouseButton::Left);
            p.click_count = Some(1);
        }
        p.buttons = Some(buttons);
        live.call(what, page.page.execute(p))
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The press as a key (`publish.key`: a chat box that sends on Enter): focus the control (the fill left the
/// caret in it when it is the body field; focusing it again keeps it there), then key down and key up. Plain
/// Enter carries its text, as a real key press does; with Control or Meta held it carries none, as a real
/// one does not.
async fn press_key(
    page: &ComposePage<'_>,
    control: &NamedLocator,
    key: PressKey,
    live: &Liveness,
) -> Result<(), String> {
    let focus = Act {
        target: 0,
        publish: None,
        action: "focus",
        option: None,
        focus_publish: false,
    };
    let (_, acted) = check_and_act(
        &page.page,
        live,
        std::slice::from_ref(control),
        Some(&focus),
        Scroll::Never,
    )
    .await
    .map_err(|e| e.to_string())?;
    if acted.as_deref() != Some("done") {
        return Err(format!(
            "could not focus the publish control: {}",
            acted.unwrap_or_else(|| "no answer".into())
        ));
    }
    for p in super::probe::enter_key(key.modifiers(), key == PressKey::Enter) {
        live.call("press the publish key", page.page.execute(p))
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn dotted(v: &serde_json::Value, path: &str) -> Option<String> {
    let mut cur = v;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    match cur {
        serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The CSS strategies of a locator in the top document (none for one inside iframes).
fn css_of(l: &NamedLocator) -> Vec<String> {
    if !l.locator.frames.is_empty() {
        return Vec::new();
    }
    l.locator
        .strategies
        .iter()
        .filter_map(|s| match s {
            super::Strategy::Css(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

const DOM_EXCERPT_JS: &str = concat!(
    "(p) => {",
    shadow_js!(),
    r#"
  // The compose form: the smallest element holding the publish control and every field the contract's CSS
  // finds (measured: a selector list picked the header's search form on two real apps). Found in the
  // document or an open shadow root; the excerpt is that element's own tree (a shadow root's content shows
  // when the form is inside it).
  const first = sels => { for (const s of sels) { try { const e = deepOne(document, s); if (e) return e; } catch (e) {} } return null; };
  const pub = first(p.publish) || document.querySelector('button[type=submit]') || document.querySelector('form');
  const fields = p.fields.map(first).filter(e => e !== null);
  let root = null;
  if (pub && fields.length > 0) {
    root = pub;
    while (root.parentElement && !fields.every(f => root.contains(f))) root = root.parentElement;
  }
  root = root || (pub && (pub.closest('form') || pub.closest('main'))) || document.querySelector('main') || document.body;
  const c = root.cloneNode(true);
  c.querySelectorAll('input[type=hidden]').forEach(e => e.setAttribute('value', '[redacted]'));
  c.querySelectorAll('*').forEach(e => { for (const a of Array.from(e.attributes)) {
    if (/csrf|xsrf|token|authenticity/i.test(a.name)) e.setAttribute(a.name, '[redacted]'); } });
  const textarea = c.querySelectorAll('textarea');
  const live = root.querySelectorAll('textarea');
  textarea.forEach((t, i) => { t.textContent = live[i] ? live[i].value : ''; });
  return c.outerHTML.slice(0, 65536);
}
"#
);

/// Screenshot `page` with `masks` blacked out.
pub(crate) async fn masked_screenshot(
    page: &Page,
    session: &BrowserSession,
    masks: &[String],
) -> Result<Vec<u8>, BrowserError> {
    let c = super::screenshot::capture(page, session.liveness(), masks).await?;
    if c.boxes.is_empty() {
        // Nothing to black out: keep Chromium's PNG as it is (re-encoding costs ~100 ms).
        return Ok(c.png);
    }
    super::screenshot::annotate(&c.png, c.dpr, &c.boxes, &[])
}

/// The trimmed text (or attribute) of the first element at `p.css`, in the document or its open shadow
/// roots; `null` when none matches.
const SIGNED_IN_JS: &str = concat!(
    "(p) => {",
    shadow_js!(),
    r#"
  let e = null;
  try { e = deepOne(document, p.css); } catch (err) { e = null; }
  if (!e) { return null; }
  const v = p.attribute ? e.getAttribute(p.attribute) : e.textContent;
  return v === null ? null : v.trim();
}
"#
);

/// How long a field that did not show what was typed is left before it is typed once more: a page settling
/// after its load (a dialog closing, a popup taking the focus) is given that long to finish.
const RETYPE_AFTER: Duration = Duration::from_millis(300);

/// How long the field is waited for (its fill states) before it is clicked into and typed once more.
const RETYPE_WAIT: Duration = Duration::from_secs(2);

/// Whether typing `f` again replaces what it holds (an appending field would hold the text twice).
fn can_type_again(f: &NamedLocator) -> bool {
    matches!(
        f.purpose,
        super::locator::Purpose::Field {
            fill: super::locator::FillMode::Replace,
            ..
        }
    )
}
