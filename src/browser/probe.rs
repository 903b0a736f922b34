//! Non-submitting probes: open the compose page under the write guard, run only the steps the plan marks
//! non-publishing, optionally fill fields (`Input.insertText`, the last character as a key press; Enter or
//! Shift+Enter only for a line break in a field whose contract says `newlines = "keys"`), check every locator in
//! one evaluation, keep watching for writes for a short window, and report.
//!
//! What a probe can do to a page is limited by types: [`ProbePage`] checks [`NamedLocator`]s, acts only on
//! [`NonPublishingStep`]s and fills only compose fields. It has no method taking a [`PublishControl`] other
//! than checking a read-only copy, no key event but a field's typed characters and line breaks, and no form
//! submission (a request a key causes is a write like any, failed at the door before the press).
use std::time::{Duration, Instant};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::input::InsertTextParams;
use serde::Serialize;

use super::checks::{Act, LocatorCheck, Scroll, check_and_act};
use super::dialogs::{self, DialogEvent, DialogPolicy};
use super::door::Knock;
use super::locator::{
    FillMode, NamedLocator, Newlines, NonPublishingStep, PublishControl, Purpose, StepAction,
};
use super::screenshot::{self, Mark, MarkVerdict};
use super::write_guard::{WriteAttempt, WriteGuard};
use super::{BrowserError, BrowserSession, Liveness};
use crate::wait::Wait;

/// Everything a probe needs, in browser terms.
#[derive(Debug, Clone)]
pub struct ProbePlan {
    /// Platform name (for the report).
    pub platform: String,
    /// Contract version the plan came from (for the report).
    pub contract_hash: String,
    /// Compose page URL.
    pub url: String,
    /// Origins (`scheme://host:port`) the page may end up on.
    pub allowed_origins: Vec<String>,
    /// Non-publishing steps, in order.
    pub steps: Vec<NonPublishingStep>,
    /// Compose fields (purpose `Field`).
    pub fields: Vec<NamedLocator>,
    /// The publish control: checked, never pressed.
    pub publish: PublishControl,
    /// CSS selectors blacked out in the screenshot.
    pub masks: Vec<String>,
    /// Writes the contract declares non-publishing. A probe still blocks them (it sends nothing) and
    /// reports them apart from the alarms; a publish lets them through.
    pub non_publish_writes: Vec<super::CreatePattern>,
    /// Requests the contract declares as reads sent with a write method (a GraphQL query): sent by oncepost
    /// in a probe too, since they read (`read_requests`).
    pub read_requests: Vec<super::CreatePattern>,
    /// The create request (with no post's values): never counted among the declared writes, whatever
    /// they say.
    pub create_request: super::CreatePattern,
    /// Where the page's live sockets connect (`live_sockets`): refused like every socket, but not taken
    /// for the page's way to publish; a probe lists them apart from the refused channels.
    pub live_sockets: Vec<super::door::LiveSocket>,
    /// How the read-back compares a post's text (`readback.compare`): a filled field is checked by the same
    /// rule before the press, so an editor may rewrite what the rule lets the read-back accept, and nothing
    /// more.
    pub text_compare: super::TextRule,
    /// Text the page adds to every post by itself (`publish.added_text`): not the page changing the post.
    pub added_text: Vec<String>,
}

/// When a step runs, in the order a compose page runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepTime<'a> {
    /// Before any field is filled.
    BeforeFill,
    /// Right after the field of this name (`field:NAME`) is filled: a wizard's Next.
    AfterField(&'a str),
    /// After every field is filled: a two-step publish's first button.
    AfterFill,
}

impl ProbePlan {
    /// The steps that run at `time`, in the contract's order.
    pub fn steps_at(&self, time: StepTime<'_>) -> Vec<&NonPublishingStep> {
        self.steps
            .iter()
            .filter(|s| match time {
                StepTime::BeforeFill => s.runs_before_fill(),
                StepTime::AfterField(name) => s.follows_field() == Some(name),
                StepTime::AfterFill => s.runs_after_fill(),
            })
            .collect()
    }
}

/// Probe settings.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// Type this text into every field (opt-in). `None`: fields are only checked.
    pub fill: Option<String>,
    /// Keep watching for writes this long after the checks (timers, beacons).
    pub observe: Duration,
    /// Bound on the navigation.
    pub navigation_timeout: Duration,
    /// Bound on each step's wait for its target.
    pub step_timeout: Duration,
    /// Take the annotated screenshot.
    pub screenshot: bool,
    /// Dialog and popup policy.
    pub dialogs: DialogPolicy,
    /// Run the locator checks this many times (benchmarks); the last round is reported.
    pub check_rounds: usize,
    /// How long the checks are repeated while a required one fails: a page still laying itself out (an
    /// editor's script adds its toolbar after load, images arrive) moves its controls, and a control that
    /// moves is not `stable` yet. Measured on DokuWiki under load: the textarea moved within the first
    /// second after load.
    pub settle: Duration,
}

/// How long checks are repeated while a required one fails ([`ProbeOptions::settle`]).
pub const SETTLE: Duration = Duration::from_secs(3);

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            fill: None,
            observe: Duration::from_millis(1000),
            navigation_timeout: Duration::from_secs(20),
            step_timeout: Duration::from_secs(10),
            screenshot: true,
            dialogs: DialogPolicy::default(),
            check_rounds: 1,
            settle: SETTLE,
        }
    }
}

/// Overall outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeVerdict {
    /// Every required locator passed and the page attempted no write.
    Pass,
    /// A required locator (or step, or the origin check) failed; no write attempted.
    LocatorFailed,
    /// The page attempted a write (each was blocked); locators passed.
    WriteAttempted,
    /// Both.
    LocatorFailedAndWriteAttempted,
}

/// What happened to one step.
#[derive(Debug, Clone, Serialize)]
pub struct StepOutcome {
    /// Step action.
    pub action: StepAction,
    /// Target name.
    pub target: String,
    /// `done`, or why not.
    pub outcome: String,
    /// Whether it worked.
    pub ok: bool,
}

/// Where the time went, in milliseconds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timings {
    /// Page open and guard/dialog setup.
    pub setup_ms: u64,
    /// Navigation to the compose URL.
    pub navigate_ms: u64,
    /// Steps and fill.
    pub steps_ms: u64,
    /// The locator checks (one evaluation per round), all rounds.
    pub checks_ms: u64,
    /// Each round of locator checks, in microseconds.
    pub checks_us: Vec<u64>,
    /// Screenshot and annotation.
    pub screenshot_ms: u64,
    /// Whole probe.
    pub total_ms: u64,
}

/// The probe report.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeReport {
    /// Platform name.
    pub platform: String,
    /// Contract version.
    pub contract_hash: String,
    /// URL probed.
    pub url: String,
    /// URL the page ended on.
    pub final_url: Option<String>,
    /// Overall outcome.
    pub verdict: ProbeVerdict,
    /// Human-readable reasons when not `pass`.
    pub problems: Vec<String>,
    /// One entry per locator, in the order of the screenshot tags.
    pub locators: Vec<LocatorCheck>,
    /// Steps performed.
    pub steps: Vec<StepOutcome>,
    /// Whether fields were filled (`--fill`).
    pub filled: bool,
    /// Writes the page attempted (all failed before leaving): live side-effect alarms.
    pub writes: Vec<WriteAttempt>,
    /// Writes the contract declares non-publishing (draft autosave, UI-state sync): blocked too, since a
    /// probe sends nothing, but expected: they are no alarm and do not make the verdict. How the page took
    /// the refusal shows in the screenshot.
    pub declared_writes: Vec<WriteAttempt>,
    /// How many requests the contract declares reads (`read_requests`: a GraphQL query) were sent: a probe
    /// sends those, since they only read.
    pub read_requests_sent: usize,
    /// Channels the page tried that oncepost's door refuses (WebSocket, WebTransport, TURN: through the
    /// sinkhole; nothing left): live side-effect alarms too.
    pub refused_channels: Vec<Knock>,
    /// Sockets to where the contract declares the page's live sockets (`live_sockets`): refused too, but not
    /// a write attempt.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub live_sockets_refused: Vec<Knock>,
    /// Requests the guard could not answer.
    pub guard_faults: Vec<String>,
    /// Requests paused by the guard in total.
    pub requests_seen: usize,
    /// Dialogs and popups and what the policy did.
    pub dialogs: Vec<DialogEvent>,
    /// Timings.
    pub timings: Timings,
    /// sha256 of the annotated screenshot, once stored.
    pub screenshot_sha256: Option<String>,
}

/// A page under probe: check-able, step-able, fill-able; never publishable.
pub struct ProbePage<'a> {
    page: Page,
    live: &'a Liveness,
    publish: NamedLocator,
    /// The publish is a key pressed in the control, a field the fill types into: the fill may focus it.
    publish_typed_into: bool,
}

impl<'a> ProbePage<'a> {
    /// A probe view of an open page (the publish control is only ever checked through it).
    pub(crate) fn new(page: Page, live: &'a Liveness, publish: &PublishControl) -> Self {
        ProbePage {
            page,
            live,
            publish: publish.checkable(false),
            publish_typed_into: publish.key().is_some(),
        }
    }

    /// Check `locators` (plus nothing else) in one evaluation, each scrolled into view just before it is
    /// measured ([`Scroll::IntoView`]: a control below the fold is judged where it can be clicked).
    pub async fn check(
        &self,
        locators: &[NamedLocator],
    ) -> Result<Vec<LocatorCheck>, BrowserError> {
        Ok(
            check_and_act(&self.page, self.live, locators, None, Scroll::IntoView)
                .await?
                .0,
        )
    }

    /// Wait (bounded) until `target` passes its checks; returns the last check.
    pub async fn wait_for(
        &self,
        target: &NamedLocator,
        limit: Duration,
    ) -> Result<LocatorCheck, BrowserError> {
        let wait = Wait::new(
            format!("{} to pass its checks", target.name),
            limit,
            Duration::from_millis(100),
        );
        loop {
            let mut checks = self.check(std::slice::from_ref(target)).await?;
            let c = checks
                .pop()
                .ok_or_else(|| BrowserError::Script("no check result".into()))?;
            // Out of time: the last check is the answer (the caller reads what failed in it).
            if c.ok || wait.pause().await.is_err() {
                return Ok(c);
            }
        }
    }

    /// Wait (bounded by `step_timeout`) for a step's target, then perform the step. An optional step waits
    /// its own time instead and, when its target does not come ready in it, is skipped: reported done,
    /// saying so (the page did not show it this time; a banner that comes later still covers what the
    /// checks after it look at, and they fail then).
    pub async fn run_step(
        &self,
        step: &NonPublishingStep,
        step_timeout: Duration,
    ) -> Result<StepOutcome, BrowserError> {
        let optional = step.optional_wait();
        let c = self
            .wait_for(step.target(), optional.unwrap_or(step_timeout))
            .await?;
        if c.ok {
            return self.click_step(step).await;
        }
        Ok(StepOutcome {
            action: step.action(),
            target: step.target().name.clone(),
            ok: optional.is_some(),
            outcome: match optional {
                Some(wait) => format!(
                    "skipped: optional, not ready in {} ms ({})",
                    wait.as_millis(),
                    c.problems.join("; ")
                ),
                None => outcome_of(&c),
            },
        })
    }

    /// Perform a non-publishing step. The target is resolved again, together with the publish control, in
    /// the same evaluation that acts; the script refuses when they are the same element or when a click
    /// would submit a form.
    pub async fn click_step(&self, step: &NonPublishingStep) -> Result<StepOutcome, BrowserError> {
        if step.action() == StepAction::Select {
            return self
                .act_with(step.target(), StepAction::Select, "select", step.option())
                .await;
        }
        if step.action() == StepAction::Type {
            // Focused (never the publish control: the page script refuses it) with its content selected,
            // then typed as a person types; no Enter, which could submit a form.
            let mut out = self
                .act_named(step.target(), StepAction::Type, "focus_replace")
                .await?;
            if out.ok {
                self.let_the_page_take_the_focus().await?;
                self.type_text(step.typed().unwrap_or_default()).await?;
                out.outcome = "typed".into();
            }
            return Ok(out);
        }
        self.act(step.target(), step.action()).await
    }

    /// Read back every filled field (`(field, typed)`) in one evaluation: each must show what was typed. A
    /// field that cut it (a `maxlength`) or an editor that rewrote it (smart quotes, a dropped line) would
    /// publish another text, which a read-back could only find different once the post is out. Returns a
    /// failed `verify` outcome per field that does not; none when all do.
    pub async fn verify_filled(
        &self,
        filled: &[(NamedLocator, &str)],
        rule: super::TextRule,
    ) -> Result<Vec<StepOutcome>, BrowserError> {
        let fields: Vec<&NamedLocator> = filled.iter().map(|(f, _)| f).collect();
        let shown = self.shown_in_fields(&fields).await?;
        let mut failed = Vec::new();
        for ((f, typed), shown) in filled.iter().zip(shown) {
            if let (Some(why), _) = self.judge_filled(f, typed, shown.as_deref(), rule).await? {
                failed.push(why);
            }
        }
        Ok(failed)
    }

    /// The fill check of one field from its plain read `shown`: the failed `verify` outcome when it does not
    /// show what was typed ([`not_typed`]), and whether it was read whole by scrolling it (a plain read that
    /// showed only a part, [`ProbePage::shows_whole_when_scrolled`]).
    pub async fn judge_filled(
        &self,
        f: &NamedLocator,
        typed: &str,
        shown: Option<&str>,
        rule: super::TextRule,
    ) -> Result<(Option<StepOutcome>, bool), BrowserError> {
        let failed = not_typed(f, typed, shown, rule);
        if failed.is_some()
            && shown.is_some_and(|s| may_show_a_part(typed, s, rule))
            && self.shows_whole_when_scrolled(f, typed, rule).await?
        {
            return Ok((None, true));
        }
        Ok((failed, false))
    }

    /// What each field shows now, in one evaluation (`None`: not in the page). A field whose value shows
    /// elsewhere (`shown_in`: a block editor's container) is read there.
    pub async fn shown_in_fields(
        &self,
        fields: &[&NamedLocator],
    ) -> Result<Vec<Option<String>>, BrowserError> {
        if fields.is_empty() {
            return Ok(Vec::new());
        }
        let at: Vec<NamedLocator> = fields.iter().map(|f| read_at(f)).collect();
        super::checks::shown_texts(&self.page, self.live, &at).await
    }

    /// Whether field `f`, whose plain read showed a part of `typed` ([`may_show_a_part`]), shows all of it
    /// when the box that scrolls it is moved from top to bottom (`checks::scrolled_texts`): an editor that
    /// draws only the lines near the viewport. Read where a plain read reads it (`shown_in`). False when
    /// nothing scrolls it, the page did not let it be read to its bottom within [`SCROLLED_READ_BUDGET`],
    /// or the parts do not make the typed text ([`windows_show_typed`]).
    pub async fn shows_whole_when_scrolled(
        &self,
        f: &NamedLocator,
        typed: &str,
        rule: super::TextRule,
    ) -> Result<bool, BrowserError> {
        let at = read_at(f);
        let read =
            super::checks::scrolled_texts(&self.page, self.live, &at, SCROLLED_READ_BUDGET).await?;
        Ok(read.is_some_and(|r| r.whole && windows_show_typed(typed, &r.windows, rule)))
    }

    /// Empty a compose field as a person does: its content selected (as a replacing fill selects it), then
    /// the Delete key. An editor that keeps its own model takes a key's deletion across its paragraphs where
    /// text inserted over them was mangled (VisualEditor, measured: the typed paragraphs glued to the old).
    pub async fn clear(&self, field: &NamedLocator) -> Result<StepOutcome, BrowserError> {
        use chromiumoxide::cdp::browser_protocol::input::{
            DispatchKeyEventParams, DispatchKeyEventType,
        };
        let out = self
            .act_named(field, StepAction::Focus, "focus_replace")
            .await?;
        if !out.ok {
            return Ok(out);
        }
        self.let_the_page_take_the_focus().await?;
        for kind in [DispatchKeyEventType::KeyDown, DispatchKeyEventType::KeyUp] {
            let mut p = DispatchKeyEventParams::new(kind);
            p.key = Some("Delete".into());
            p.code = Some("Delete".into());
            p.windows_virtual_key_code = Some(46);
            p.native_virtual_key_code = Some(46);
            self.live.call("press Delete", self.page.execute(p)).await?;
        }
        Ok(out)
    }

    /// Focus a compose field and insert `text`: as text, or (`newlines = "keys"`) line by line with Enter or
    /// Shift+Enter between, the only keys oncepost ever presses.
    pub async fn fill(
        &self,
        field: &NamedLocator,
        text: &str,
    ) -> Result<StepOutcome, BrowserError> {
        let Purpose::Field { fill, newlines, .. } = field.purpose else {
            return Err(BrowserError::Plan(format!(
                "{} is not a compose field",
                field.name
            )));
        };
        let mut out = self
            .act_named(
                field,
                StepAction::Focus,
                match fill {
                    FillMode::Replace => "focus_replace",
                    FillMode::Append => "focus_append",
                },
            )
            .await?;
        if out.ok {
            self.let_the_page_take_the_focus().await?;
            match newlines {
                Newlines::Text => self.type_text(text).await?,
                Newlines::Keys => {
                    for piece in typed_lines(text) {
                        match piece {
                            Typed::Line(line) => self.type_text(line).await?,
                            Typed::Break(key) => self.press_break(key).await?,
                        }
                    }
                }
            }
            out.outcome = "filled".into();
        }
        Ok(out)
    }

    /// Type `text` into the focused field: all of it at once (`Input.insertText`) but its last character
    /// that is no control character, which goes in as the key press a person's typing ends with (key down
    /// with its text, key up), and the control characters after it (a trailing line break) at once again. A
    /// page that follows the keys rather than the `input` events (a Publish enabled by a `keyup` handler, as
    /// forms of the jQuery era do: Fixturebook's `/hostile/key-events`) sees the typing end; text of any
    /// length and any script still goes in with at most two calls.
    ///
    /// Between the two, one animation frame: an editor that renders what was inserted in its next frame
    /// (Trix) took the key pressed before that render into a node of its own, and showed "broken in tw o"
    /// for good (the fill check refused it, nothing pressed): 5 publishes in 30 under two busy cores, 0 in 30
    /// with the frame. And a page may move the caret meanwhile: DokuWiki's ready handler puts it at the start
    /// of its text field, and run late (a probe under load) the last key went there ("ga probe fills this and
    /// presses nothin"). A text field's caret is put back at its end before the key: what was typed ends
    /// there, whether it replaced the field's text or was added after it.
    async fn type_text(&self, text: &str) -> Result<(), BrowserError> {
        match last_key(text) {
            Some((head, last, tail)) => {
                if !head.is_empty() {
                    self.insert_text(head).await?;
                    self.live
                        .call(
                            "let the editor render the text",
                            self.page.evaluate(FRAME_THEN_CARET_AT_END_JS),
                        )
                        .await?;
                }
                self.press_character(last).await?;
                if !tail.is_empty() {
                    self.insert_text(tail).await?;
                }
                Ok(())
            }
            None => self.insert_text(text).await,
        }
    }

    /// Press the key that types `c`: key down carrying its text (Chromium inserts it as a real key press
    /// does, with `keypress`, `beforeinput` and `input` on the way), then key up. A letter, a digit or a
    /// space also carries its key code and physical key, as a US keyboard sends them.
    async fn press_character(&self, c: char) -> Result<(), BrowserError> {
        use chromiumoxide::cdp::browser_protocol::input::{
            DispatchKeyEventParams, DispatchKeyEventType,
        };
        let text = c.to_string();
        let (code, vk) = match c {
            'a'..='z' | 'A'..='Z' => (
                Some(format!("Key{}", c.to_ascii_uppercase())),
                Some(i64::from(u32::from(c.to_ascii_uppercase()))),
            ),
            '0'..='9' => (Some(format!("Digit{c}")), Some(i64::from(u32::from(c)))),
            ' ' => (Some("Space".to_string()), Some(32)),
            _ => (None, None),
        };
        for kind in [DispatchKeyEventType::KeyDown, DispatchKeyEventType::KeyUp] {
            let mut p = DispatchKeyEventParams::new(kind.clone());
            p.key = Some(text.clone());
            p.code = code.clone();
            p.windows_virtual_key_code = vk;
            p.native_virtual_key_code = vk;
            if kind == DispatchKeyEventType::KeyDown {
                p.text = Some(text.clone());
                p.unmodified_text = Some(text.clone());
            }
            self.live.call("type a key", self.page.execute(p)).await?;
        }
        Ok(())
    }

    /// After a field took the focus and before its first key: one animation frame and the page's next task,
    /// and at least 30 ms ([`FOCUS_SETTLE_JS`]). A page may act on the focus from a timer, as a person's first
    /// key always comes later: MediaWiki's VisualEditor attaches its input handling from a `focusin` handler
    /// debounced to a timer, which may run after input already waiting. Recorded in the page (a send
    /// whose focus the editor's notices popup had taken, the fill focusing the document again): the first
    /// `beforeinput` came 30 ms after the `focusin`, the editor already focused; typed at once, the text
    /// showed in the document while the editor's model took none of it ("Save page..." disabled; the send
    /// failed with nothing pressed: on CI, and in 5 of 7 runs of the lab tests side by side; 0 of 8 with
    /// this wait). Fixturebook's `/compose?listen_on_focus=1` does the same with a 10 ms timer.
    async fn let_the_page_take_the_focus(&self) -> Result<(), BrowserError> {
        self.live
            .call(
                "let the page act on the focus",
                self.page.evaluate(FOCUS_SETTLE_JS),
            )
            .await?;
        Ok(())
    }

    async fn insert_text(&self, text: &str) -> Result<(), BrowserError> {
        self.live
            .call(
                "insert text",
                self.page.execute(InsertTextParams::new(text.to_string())),
            )
            .await?;
        Ok(())
    }

    /// Press Enter (Shift+Enter for a line break) in the focused field, then wait for the editor to act on
    /// it: a block editor makes the new paragraph and moves the caret into it from its handler or from its
    /// next render, and text typed before that lands in the old one (glued: refused by the fill check). After
    /// Enter the wait ends once the caret is in an empty block (the new paragraph), at most 1 s (an editor
    /// that makes no new block, such as a chat box that sends on Enter, costs that second, bounded); after
    /// Shift+Enter, one frame (at most 50 ms: a page whose animation frames are throttled).
    async fn press_break(&self, key: Break) -> Result<(), BrowserError> {
        // Shift is modifier bit 8 (CDP `Input.dispatchKeyEvent`). The key's text makes Chromium run its
        // editing command (a new paragraph, or a line break with Shift), as a real key press does.
        let modifiers = if key == Break::Line { 8 } else { 0 };
        for p in enter_key(modifiers, true) {
            self.live.call("press Enter", self.page.execute(p)).await?;
        }
        let wait = match key {
            Break::Paragraph => CARET_IN_A_NEW_BLOCK_JS,
            Break::Line => ONE_FRAME_JS,
        };
        self.live
            .call("let the editor act on Enter", self.page.evaluate(wait))
            .await?;
        Ok(())
    }

    async fn act(
        &self,
        target: &NamedLocator,
        action: StepAction,
    ) -> Result<StepOutcome, BrowserError> {
        let name = match action {
            StepAction::WaitFor => "wait_for",
            StepAction::Focus => "focus",
            StepAction::ScrollIntoView => "scroll_into_view",
            StepAction::Click => "click",
            StepAction::Select => "select",
            StepAction::Check => "check",
            // Focus with the content selected: what is typed next replaces it (`click_step` types).
            StepAction::Type => "focus_replace",
            // Read-only, like a wait: nothing for the page script to do.
            StepAction::Verify => "wait_for",
        };
        self.act_named(target, action, name).await
    }

    /// `act` with the page script's own action name (the fill's focus variants have no contract step).
    async fn act_named(
        &self,
        target: &NamedLocator,
        action: StepAction,
        name: &'static str,
    ) -> Result<StepOutcome, BrowserError> {
        self.act_with(target, action, name, None).await
    }

    /// `act_named` with the option a `select` chooses.
    async fn act_with(
        &self,
        target: &NamedLocator,
        action: StepAction,
        name: &'static str,
        option: Option<&str>,
    ) -> Result<StepOutcome, BrowserError> {
        match action {
            StepAction::WaitFor | StepAction::Verify => {
                let c = self.wait_for(target, Duration::ZERO).await?;
                return Ok(StepOutcome {
                    action,
                    target: target.name.clone(),
                    ok: c.ok,
                    outcome: outcome_of(&c),
                });
            }
            StepAction::Focus
            | StepAction::ScrollIntoView
            | StepAction::Click
            | StepAction::Select
            | StepAction::Check
            | StepAction::Type => {}
        }
        let locs = [target.clone(), self.publish.clone()];
        let act = Act {
            target: 0,
            publish: Some(1),
            action: name,
            option: option.map(String::from),
            // Contract steps never target the publish control (refused when the plan is made); this lets
            // the fill focus a field that is also where the publish key goes, never click or pick in it.
            focus_publish: self.publish_typed_into,
        };
        // The action re-resolves its target; it needs no states, so nothing scrolls but the action itself.
        let (_, acted) =
            check_and_act(&self.page, self.live, &locs, Some(&act), Scroll::Never).await?;
        let outcome = acted.unwrap_or_else(|| "refused: no answer".into());
        Ok(StepOutcome {
            action,
            target: target.name.clone(),
            ok: outcome == "done",
            outcome,
        })
    }
}

/// Enter as a key press: key down, then key up, with `modifiers` (CDP bits: Ctrl 2, Meta 4, Shift 8). With
/// `text` the key down carries the key's text (`\r`), so Chromium runs its editing command as a real key
/// press does; a real one held with Control or Meta carries none.
pub(crate) fn enter_key(
    modifiers: i64,
    text: bool,
) -> [chromiumoxide::cdp::browser_protocol::input::DispatchKeyEventParams; 2] {
    use chromiumoxide::cdp::browser_protocol::input::{
        DispatchKeyEventParams, DispatchKeyEventType,
    };
    [DispatchKeyEventType::KeyDown, DispatchKeyEventType::KeyUp].map(|kind| {
        let down = kind == DispatchKeyEventType::KeyDown;
        let mut p = DispatchKeyEventParams::new(kind);
        p.key = Some("Enter".into());
        p.code = Some("Enter".into());
        p.windows_virtual_key_code = Some(13);
        p.native_virtual_key_code = Some(13);
        p.modifiers = Some(modifiers);
        if down && text {
            p.text = Some("\r".into());
            p.unmodified_text = Some("\r".into());
        }
        p
    })
}

fn outcome_of(c: &LocatorCheck) -> String {
    if c.ok {
        "done".into()
    } else {
        format!("timed out: {}", c.problems.join("; "))
    }
}

/// Run a probe on a fresh page of `session` (whose write guard was installed at launch).
pub async fn run(
    session: &BrowserSession,
    plan: &ProbePlan,
    opts: &ProbeOptions,
) -> Result<(ProbeReport, Option<Vec<u8>>), BrowserError> {
    let t0 = Instant::now();
    let live = session.liveness();
    let guard = session.write_guard();
    // Declared writes are recognised, never let through: a probe sends nothing.
    guard.recognise_declared(plan.non_publish_writes.clone(), plan.create_request.clone());
    // Declared reads are sent: a page may need its GraphQL query answered to show its form at all.
    guard.let_reads_through(plan.read_requests.clone(), plan.create_request.clone());
    // A platform that creates by GET: a probe's reads never include its create.
    guard.know_create(&plan.create_request);
    // Declared live sockets are refused (as every socket is) and listed apart: not a write attempt.
    guard
        .door()
        .sinkhole()
        .declare_live_sockets(plan.live_sockets.clone());
    let reads_mark = guard.reads_sent();
    let mark = guard.mark();
    let knock_mark = guard.door().sinkhole().mark();
    let page = session.open_page("open a page").await?;
    let dialog_log = dialogs::install(session, &page, opts.dialogs).await?;
    let mut timings = Timings {
        setup_ms: ms(t0),
        ..Timings::default()
    };
    let mut problems = Vec::new();

    let t = Instant::now();
    live.bounded(
        "navigate to the compose page",
        opts.navigation_timeout,
        page.goto(plan.url.as_str()),
    )
    .await?;
    timings.navigate_ms = ms(t);
    let final_url = live.call("read the page URL", page.url()).await?;
    if let Some(u) = &final_url {
        let origin = url::Url::parse(u)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default();
        if !plan.allowed_origins.contains(&origin) {
            problems.push(format!(
                "page ended on {u}, outside the allowed origins {:?}",
                plan.allowed_origins
            ));
        }
    }

    let probe_page = ProbePage::new(page.clone(), live, &plan.publish);
    let t = Instant::now();
    let mut steps = Vec::new();
    // Steps marked `after_fill` run after the fill (only with `--fill`: they open what a written post opens);
    // steps that follow a field run right after it, inside the fill (`fill_all`).
    let mut ordered = plan.steps_at(StepTime::BeforeFill);
    if opts.fill.is_some() {
        ordered.extend(plan.steps_at(StepTime::AfterFill));
    }
    let mut filled = false;
    for step in ordered {
        if step.runs_after_fill() && !filled {
            fill_all(&probe_page, plan, opts, guard, &mut problems, &mut steps).await?;
            filled = true;
        }
        // Every step first waits (bounded) for its target, so slow pages get their time.
        let out = probe_page.run_step(step, opts.step_timeout).await?;
        if !out.ok {
            problems.push(format!(
                "step {:?} on {}: {}",
                out.action, out.target, out.outcome
            ));
        }
        steps.push(out);
    }
    if !filled {
        fill_all(&probe_page, plan, opts, guard, &mut problems, &mut steps).await?;
    }
    timings.steps_ms = ms(t);

    let mut all: Vec<NamedLocator> = plan.fields.clone();
    // A wizard: steps that follow a field move the page on. With `--fill` they ran, and the fields up to
    // the last one such a step follows may be out of view now; without it they did not run, and the fields
    // after the first one are not on the page yet. Those are looked for and shown, but cannot fail the probe.
    let followed: Vec<usize> = plan
        .fields
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            plan.steps
                .iter()
                .any(|s| s.follows_field() == Some(f.name.as_str()))
        })
        .map(|(i, _)| i)
        .collect();
    if let (Some(&first), Some(&last)) = (followed.first(), followed.last()) {
        for (i, f) in all.iter_mut().enumerate() {
            if (opts.fill.is_some() && i <= last) || (opts.fill.is_none() && i > first) {
                f.required = false;
            }
        }
    }
    let mut publish = plan.publish.checkable(opts.fill.is_some());
    // A two-step publish: the control appears only once an after-fill step opened its panel, which needs
    // `--fill` (so does a wizard's last page). Without it the control is still looked for and shown, but
    // cannot fail the probe.
    if opts.fill.is_none() && plan.steps.iter().any(|s| !s.runs_before_fill()) {
        publish.required = false;
    }
    all.push(publish);
    let mut checks = Vec::new();
    let settle = Wait::new(
        "the required locators to pass their checks",
        opts.settle,
        Duration::from_millis(100),
    );
    for round in 0..opts.check_rounds.max(1) {
        let t = Instant::now();
        checks = probe_page.check(&all).await?;
        // The first round repeats (bounded) while a required check fails: the page may still be moving.
        while round == 0
            && checks.iter().any(|c| c.required && !c.ok)
            && settle.pause().await.is_ok()
        {
            checks = probe_page.check(&all).await?;
        }
        timings.checks_us.push(t.elapsed().as_micros() as u64);
    }
    timings.checks_ms = timings.checks_us.iter().sum::<u64>() / 1000;
    for c in checks.iter().filter(|c| c.required && !c.ok) {
        problems.push(format!("{}: {}", c.name, c.problems.join("; ")));
    }

    let t = Instant::now();
    let png = if opts.screenshot {
        Some(annotated_screenshot(&page, live, plan, &checks).await?)
    } else {
        None
    };
    timings.screenshot_ms = ms(t);

    // Timers, beacons and workers may write after the checks: keep the guard watching for a while.
    // Not a wait for a condition: the guard records while the window lasts; only the browser's liveness is
    // looked at, every 50 ms.
    let window = Wait::new(
        "the observation window",
        opts.observe,
        Duration::from_millis(50),
    );
    while !window.expired() {
        if live.is_dead() {
            return Err(BrowserError::Died {
                during: window.what().into(),
            });
        }
        if window.pause().await.is_err() {
            break;
        }
    }
    // A poisoned guard log fails the probe: what the page attempted is unknown.
    let (declared_writes, writes): (Vec<WriteAttempt>, Vec<WriteAttempt>) = guard
        .writes_since(mark)?
        .into_iter()
        .partition(|w| w.declared && !w.carried_typed_text);
    for w in &writes {
        problems.push(format!(
            "write attempted and blocked: {} {} ({}){}",
            w.method,
            w.url,
            w.resource_type,
            if w.carried_typed_text {
                ", a read carrying the typed text"
            } else {
                ""
            }
        ));
    }
    let refused_channels = guard.door().sinkhole().page_knocks_since(knock_mark);
    let live_sockets_refused = guard.door().sinkhole().live_knocks_since(knock_mark);
    for k in &refused_channels {
        problems.push(format!("write attempted and blocked: {}", k.describe()));
    }
    let guard_faults = guard.faults();
    problems.extend(guard_faults.iter().cloned());
    let locator_failed = problems.iter().any(|p| !p.starts_with("write attempted"));
    let attempted = !writes.is_empty() || !refused_channels.is_empty();
    let verdict = match (locator_failed, attempted) {
        (false, false) => ProbeVerdict::Pass,
        (true, false) => ProbeVerdict::LocatorFailed,
        (false, true) => ProbeVerdict::WriteAttempted,
        (true, true) => ProbeVerdict::LocatorFailedAndWriteAttempted,
    };
    timings.total_ms = ms(t0);
    let report = ProbeReport {
        platform: plan.platform.clone(),
        contract_hash: plan.contract_hash.clone(),
        url: plan.url.clone(),
        final_url,
        verdict,
        problems,
        locators: checks,
        steps,
        filled: opts.fill.is_some(),
        writes,
        declared_writes,
        read_requests_sent: guard.reads_sent().saturating_sub(reads_mark),
        refused_channels,
        live_sockets_refused,
        guard_faults,
        requests_seen: guard.paused_count(),
        dialogs: dialog_log.events(),
        timings,
        screenshot_sha256: None,
    };
    let _ = live.call("close the page", page.close()).await;
    Ok((report, png))
}

/// With `--fill`: type the text into every field.
async fn fill_all(
    probe_page: &ProbePage<'_>,
    plan: &ProbePlan,
    opts: &ProbeOptions,
    guard: &WriteGuard,
    problems: &mut Vec<String>,
    steps: &mut Vec<StepOutcome>,
) -> Result<(), BrowserError> {
    let Some(text) = &opts.fill else {
        return Ok(());
    };
    let mut filled = Vec::new();
    // Once a wizard's "Next" ran, the next fields may come a moment later: each is waited for (bounded).
    let mut moved_on = false;
    for f in &plan.fields {
        for value in typed_values(f, text) {
            guard.watch_typed(value);
        }
        if moved_on {
            probe_page.wait_for(f, opts.step_timeout).await?;
        }
        let out = probe_page.fill(f, text).await?;
        if !out.ok && f.required {
            problems.push(format!("fill {}: {}", f.name, out.outcome));
        }
        if out.ok {
            filled.push((f.clone(), text.as_str()));
        }
        steps.push(out);
        // A wizard's "Next" after this field: what was filled is read back first (it may leave the view).
        let next = plan.steps_at(StepTime::AfterField(&f.name));
        if next.is_empty() {
            continue;
        }
        verify_probe_fill(probe_page, plan, &mut filled, problems, steps).await?;
        moved_on = true;
        for step in next {
            let out = probe_page.run_step(step, opts.step_timeout).await?;
            if !out.ok {
                problems.push(format!(
                    "step {:?} on {}: {}",
                    out.action, out.target, out.outcome
                ));
            }
            steps.push(out);
        }
    }
    verify_probe_fill(probe_page, plan, &mut filled, problems, steps).await
}

/// What publishing would refuse before its press: a filled field that does not show what was typed. Reads
/// back `filled` and empties it.
async fn verify_probe_fill(
    probe_page: &ProbePage<'_>,
    plan: &ProbePlan,
    filled: &mut Vec<(NamedLocator, &str)>,
    problems: &mut Vec<String>,
    steps: &mut Vec<StepOutcome>,
) -> Result<(), BrowserError> {
    for v in probe_page.verify_filled(filled, plan.text_compare).await? {
        let required = plan.fields.iter().any(|f| f.name == v.target && f.required);
        if required {
            problems.push(format!("fill {}: {}", v.target, v.outcome));
        }
        steps.push(v);
    }
    filled.clear();
    Ok(())
}

/// What filling `field` with `text` types, each value the write guard must watch from the fill on: the
/// text, and with `newlines = "keys"` each of its lines too (the page sees the text grow line by line, and a
/// draft it sends after the first line holds only that line, which the whole text's beginning may not be).
/// And each of those without its last character, which is typed as a key after the rest
/// ([`ProbePage::type_text`]): in between, the page holds the text one character short, and a draft it sends
/// then (a pixel on every change) holds that, which a short text's whole beginning is not in.
pub(crate) fn typed_values<'a>(field: &NamedLocator, text: &'a str) -> Vec<&'a str> {
    let pieces: Vec<&str> = match field.purpose {
        Purpose::Field {
            newlines: Newlines::Keys,
            ..
        } => typed_lines(text)
            .into_iter()
            .filter_map(|t| match t {
                Typed::Line(line) => Some(line),
                Typed::Break(_) => None,
            })
            .collect(),
        _ => vec![text],
    };
    let mut values = vec![text];
    for piece in pieces {
        if piece != text {
            values.push(piece);
        }
        if let Some((short, _, _)) = last_key(piece).filter(|(short, _, _)| !short.is_empty()) {
            values.push(short);
        }
    }
    values
}

/// One animation frame (at most 50 ms), then, when the focused element (through same-origin frames) is a
/// `textarea` or `input` whose caret is not at the end of its value, the caret put back there.
const FRAME_THEN_CARET_AT_END_JS: &str = r#"new Promise(r => { requestAnimationFrame(() => setTimeout(r, 0)); setTimeout(r, 50); }).then(() => {
  let d = document, a = d.activeElement;
  try { while (a && a.contentDocument) { d = a.contentDocument; a = d.activeElement; } } catch (e) { return; }
  if (!a || !['textarea', 'input'].includes(a.localName) || typeof a.value !== 'string') return;
  const n = a.value.length;
  try { if (a.selectionStart !== n || a.selectionEnd !== n) a.setSelectionRange(n, n); } catch (e) { }
})"#;

/// One animation frame (at most 50 ms) and a task after it, and at least 30 ms from the start: a timer a page
/// set on the focus for less than that runs first (timers run in the order they are due).
const FOCUS_SETTLE_JS: &str = r#"new Promise(r => {
  const t0 = performance.now();
  new Promise(f => { requestAnimationFrame(() => setTimeout(f, 0)); setTimeout(f, 50); })
    .then(() => setTimeout(r, Math.max(0, 30 - (performance.now() - t0))));
})"#;

/// One animation frame, at most 50 ms.
const ONE_FRAME_JS: &str =
    "new Promise(r => { requestAnimationFrame(() => setTimeout(r, 0)); setTimeout(r, 50); })";

/// Resolves once the caret (in the focused frame, through same-origin iframes) is in an empty block, the
/// paragraph an Enter just made, checked every 10 ms from the next frame; at most 1000 ms.
const CARET_IN_A_NEW_BLOCK_JS: &str = r#"new Promise(done => {
  const started = performance.now();
  const inEmptyBlock = () => {
    let doc = document;
    try {
      while (doc.activeElement && doc.activeElement.contentDocument) doc = doc.activeElement.contentDocument;
    } catch (e) { return false; }
    const sel = doc.getSelection();
    if (!sel || !sel.anchorNode) return false;
    const at = sel.anchorNode.nodeType === 1 ? sel.anchorNode : sel.anchorNode.parentElement;
    if (!at) return false;
    const block = at.closest('p, div, li, h1, h2, h3, h4, h5, h6, blockquote, pre') || at;
    return block.textContent.trim() === '';
  };
  const tick = () => (inEmptyBlock() || performance.now() - started > 1000) ? done(true) : setTimeout(tick, 10);
  requestAnimationFrame(() => setTimeout(tick, 0));
  setTimeout(() => done(true), 1000);
})"#;

/// A key that breaks a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Break {
    /// Enter: a new paragraph.
    Paragraph,
    /// Shift+Enter: a line break inside the paragraph.
    Line,
}

/// One piece of a value typed line by line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Typed<'a> {
    Line(&'a str),
    Break(Break),
}

/// `text` split around the character typed as a key press ([`ProbePage::type_text`]), its last one that is no
/// control character: what comes before it, it, and the control characters after it. `None` for a text of
/// control characters only (typed at once).
fn last_key(text: &str) -> Option<(&str, char, &str)> {
    let (at, last) = text.char_indices().rev().find(|(_, c)| !c.is_control())?;
    Some((&text[..at], last, &text[at + last.len_utf8()..]))
}

/// `text` as lines and the keys between them (`newlines = "keys"`): a blank line (or more) between two lines
/// is one Enter (an editor keeps no empty paragraph), a single line break Shift+Enter; line breaks before
/// the first line and after the last press nothing. `\r\n` is a line break.
fn typed_lines(text: &str) -> Vec<Typed<'_>> {
    let mut out = Vec::new();
    let mut breaks = 0usize;
    for line in text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)) {
        if line.is_empty() {
            breaks += 1;
            continue;
        }
        if !out.is_empty() {
            out.push(Typed::Break(if breaks >= 2 {
                Break::Paragraph
            } else {
                Break::Line
            }));
        }
        out.push(Typed::Line(line));
        breaks = 1;
    }
    out
}

/// Invisible characters rich editors put in their own DOM to hold the caret, never in their model: measured,
/// CKEditor 5 shows a soft break followed by seven U+2060 (its inline filler), TinyMCE a caret container
/// of U+FEFF, other editors U+200B. The fill check leaves them out on both sides (the read-back compares
/// what the platform stored, by the contract's rule).
const EDITOR_FILLERS: &[char] = &['\u{200B}', '\u{2060}', '\u{FEFF}'];

/// Where field `f`'s value is read: where it shows (`shown_in`: a block editor's container), else the field.
fn read_at(f: &NamedLocator) -> NamedLocator {
    match &f.purpose {
        Purpose::Field {
            shown_in: Some(at), ..
        } => NamedLocator {
            locator: at.clone(),
            ..f.clone()
        },
        _ => f.clone(),
    }
}

/// How long a field may take to be read by scrolling it from top to bottom
/// ([`ProbePage::shows_whole_when_scrolled`]): a post of 200 paragraphs in CodeMirror 6 took about a second.
const SCROLLED_READ_BUDGET: Duration = Duration::from_secs(5);

/// Why a field that shows `shown` does not hold `typed`, or `None` when it does: its text, whitespace
/// collapsed and in NFC, contains the typed text so treated (a field filled after what it held keeps that too).
///
/// Under [`TextRule::VisibleWords`](super::TextRule::VisibleWords) (a platform that renders markup) the field
/// must show the typed text's visible words, in order and side by side: an editor that turns `**bold**` into
/// bold or straight quotes into curly ones shows the same words, and the read-back will accept what it
/// publishes; a cut or changed word is still refused. Every other rule compares characters, so such an
/// editor is refused there (the read-back could not find its post either).
pub(crate) fn shows_other_text(
    typed: &str,
    shown: Option<&str>,
    rule: super::TextRule,
) -> Option<String> {
    let Some(shown) = shown else {
        return Some("the field is gone after filling".into());
    };
    let (want, got) = (normalized(typed), normalized(shown));
    if got.contains(&want) {
        return None;
    }
    if rule == super::TextRule::VisibleWords {
        use super::readback::visible_words;
        let (typed_words, shown_words) = (visible_words(typed), visible_words(shown));
        let side_by_side = !typed_words.is_empty()
            && shown_words
                .windows(typed_words.len())
                .any(|w| w == typed_words.as_slice());
        if side_by_side {
            return None;
        }
    }
    let chars = |t: &str| t.chars().count();
    let cut = |t: &str| -> String {
        let head: String = t.chars().take(80).collect();
        if chars(t) > 80 {
            format!("{head}...")
        } else {
            head
        }
    };
    Some(format!(
        "the field shows other text than was typed ({} of {} characters: {:?})",
        chars(&got),
        chars(&want),
        crate::redact::text(&cut(&got))
    ))
}

/// A field's text as the fill check compares it: in NFC, without an editor's caret fillers, whitespace
/// collapsed to single spaces.
fn normalized(t: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let nfc: String = t.nfc().filter(|c| !EDITOR_FILLERS.contains(c)).collect();
    nfc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether a field that shows `shown` may be showing part of `typed` as an editor that draws only the lines
/// near the viewport shows it: fewer words than were typed, each in a run of the typed words, in order, and
/// nothing else ([`shown_runs`]). A field that shows another word, or nothing, is not read by scrolling.
pub(crate) fn may_show_a_part(typed: &str, shown: &str, rule: super::TextRule) -> bool {
    let (want, part) = (tokens(typed, rule), tokens(shown, rule));
    !part.is_empty() && part.len() < want.len() && shown_runs(&want, &part).is_some()
}

/// Whether the parts a scrolled field showed, top to bottom (see `checks::scrolled_texts`), show the typed
/// text together: each part runs of the typed words in order and nothing else ([`shown_runs`]), and every
/// typed word in one of them. A field that cut the text (a length limit) never shows its end, and one that
/// changed a word shows a word that is in no run: both are refused as a plain read refuses them.
pub(crate) fn windows_show_typed(typed: &str, windows: &[String], rule: super::TextRule) -> bool {
    let want = tokens(typed, rule);
    if want.is_empty() {
        return false;
    }
    let mut runs = Vec::new();
    for w in windows {
        match shown_runs(&want, &tokens(w, rule)) {
            Some(r) => runs.extend(r),
            None => return false,
        }
    }
    runs.sort_unstable();
    let mut covered = 0;
    for (start, end) in runs {
        if start > covered {
            return false;
        }
        covered = covered.max(end);
    }
    covered == want.len()
}

/// A text as words for [`windows_show_typed`]: under `visible-words` the visible words, else the words of
/// the normalized text (what a plain read compares, as words: a part shown is whole lines).
fn tokens(text: &str, rule: super::TextRule) -> Vec<String> {
    if rule == super::TextRule::VisibleWords {
        super::readback::visible_words(text)
    } else {
        normalized(text)
            .split(' ')
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect()
    }
}

/// The runs of `want` (word ranges, in order) that `part` is made of, or `None` when a word of it is in no
/// run after the one before it. An editor that draws only what is near the viewport also keeps the caret's
/// line drawn (CodeMirror 6, measured: every part read while scrolling ended with the post's last paragraph,
/// where the caret was), so a part is a few runs, not one. Each run is the longest that continues from
/// where the one before ended or later (the earliest of equals).
fn shown_runs(want: &[String], part: &[String]) -> Option<Vec<(usize, usize)>> {
    let mut at: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
    for (i, w) in want.iter().enumerate() {
        at.entry(w.as_str()).or_default().push(i);
    }
    let (mut runs, mut i, mut from) = (Vec::new(), 0, 0);
    while i < part.len() {
        let starts = at.get(part[i].as_str())?;
        let first = starts.partition_point(|&p| p < from);
        let (mut best, mut best_len) = (None, 0);
        for &p in &starts[first..] {
            let len = want[p..]
                .iter()
                .zip(&part[i..])
                .take_while(|(a, b)| a == b)
                .count();
            if len > best_len {
                (best, best_len) = (Some(p), len);
            }
        }
        let p = best?;
        runs.push((p, p + best_len));
        (i, from) = (i + best_len, p + best_len);
    }
    Some(runs)
}

/// The failed `verify` outcome of field `f` when what it shows is not what was typed (see
/// [`shows_other_text`]); `None` when it is.
pub(crate) fn not_typed(
    f: &NamedLocator,
    typed: &str,
    shown: Option<&str>,
    rule: super::TextRule,
) -> Option<StepOutcome> {
    shows_other_text(typed, shown, rule).map(|why| StepOutcome {
        action: StepAction::Verify,
        target: f.name.clone(),
        ok: false,
        outcome: why,
    })
}

/// How a field's words changed since its fill check (`then` -> `now`), for a report: both counts and what it
/// shows now, redacted and cut as [`shows_other_text`] cuts it.
pub(crate) fn words_added(then: &str, now: &str) -> String {
    let count = |t: &str| super::readback::visible_words(t).len();
    format!(
        "the page changed the field's words after it was checked ({} words then, {} now: {:?})",
        count(then),
        count(now),
        shown_in_why(now)
    )
}

/// What a field shows, as a reason quotes it: its first 80 characters (`...` when cut), redacted.
pub(crate) fn shown_in_why(text: &str) -> String {
    let head: String = text.chars().take(80).collect();
    let more = if text.chars().count() > 80 { "..." } else { "" };
    crate::redact::text(&format!("{head}{more}"))
}

fn ms(t: Instant) -> u64 {
    t.elapsed().as_millis() as u64
}

async fn annotated_screenshot(
    page: &Page,
    live: &Liveness,
    plan: &ProbePlan,
    checks: &[LocatorCheck],
) -> Result<Vec<u8>, BrowserError> {
    let c = screenshot::capture(page, live, &plan.masks).await?;
    let marks: Vec<Mark> = checks
        .iter()
        .enumerate()
        .filter_map(|(index, c)| {
            c.rect.map(|rect| Mark {
                rect,
                index,
                verdict: if c.ok {
                    MarkVerdict::Ok
                } else if c.required {
                    MarkVerdict::Failed
                } else {
                    MarkVerdict::Warning
                },
            })
        })
        .collect();
    screenshot::annotate(&c.png, c.dpr, &c.boxes, &marks)
}

#[cfg(test)]
mod tests {
    use super::super::TextRule;
    use super::{may_show_a_part, windows_show_typed};

    /// Under every rule but visible words, as filled.
    fn shows_other_text(typed: &str, shown: Option<&str>) -> Option<String> {
        super::shows_other_text(typed, shown, TextRule::ExactNfc)
    }

    fn shows_other_words(typed: &str, shown: &str) -> Option<String> {
        super::shows_other_text(typed, Some(shown), TextRule::VisibleWords)
    }

    #[test]
    fn an_editors_caret_fillers_are_not_text() {
        // CKEditor 5 after a soft break: seven word joiners before the next word.
        let ck =
            "Hello Second, a line \u{2060}\u{2060}\u{2060}\u{2060}\u{2060}\u{2060}\u{2060}broken";
        assert_eq!(
            shows_other_text("Hello\n\nSecond, a line\nbroken", Some(ck)),
            None
        );
        assert_eq!(shows_other_text("ab", Some("a\u{FEFF}b\u{200B}")), None);
        // A joiner that carries meaning (an emoji sequence's ZWJ) is text.
        assert!(
            shows_other_text("\u{1F469}\u{200D}\u{1F4BB}", Some("\u{1F469}\u{1F4BB}")).is_some()
        );
    }

    #[test]
    fn typing_ends_with_its_last_character_that_is_no_control_character_as_a_key() {
        use super::last_key;
        assert_eq!(last_key("Hello"), Some(("Hell", 'o', "")));
        assert_eq!(last_key("x"), Some(("", 'x', "")));
        // One scalar value, whatever its length in UTF-8 or UTF-16: an emoji sequence keeps its joiner.
        assert_eq!(
            last_key("\u{1F469}\u{200D}\u{1F4BB}"),
            Some(("\u{1F469}\u{200D}", '\u{1F4BB}', ""))
        );
        assert_eq!(last_key("cafe\u{301}"), Some(("cafe", '\u{301}', "")));
        // A trailing line break (or tab) goes in after the key, with whatever control characters follow it.
        assert_eq!(last_key("two lines\r\n"), Some(("two line", 's', "\r\n")));
        assert_eq!(last_key("a\t"), Some(("", 'a', "\t")));
        assert_eq!(last_key(""), None);
        assert_eq!(last_key("\n\n"), None);
    }

    #[test]
    fn a_value_typed_by_keys_is_its_lines_with_enter_between_paragraphs() {
        use super::{Break, Typed, typed_lines};
        let (p, l) = (Typed::Break(Break::Paragraph), Typed::Break(Break::Line));
        assert_eq!(
            typed_lines("First\n\nSecond, a line\nbroken"),
            vec![
                Typed::Line("First"),
                p,
                Typed::Line("Second, a line"),
                l,
                Typed::Line("broken")
            ]
        );
        // Two blank lines are one paragraph; breaks at either end press nothing; CRLF is a line break.
        assert_eq!(
            typed_lines("\n\none\n\n\n\ntwo\r\nthree\n"),
            vec![
                Typed::Line("one"),
                p,
                Typed::Line("two"),
                l,
                Typed::Line("three")
            ]
        );
        assert_eq!(typed_lines("no break"), vec![Typed::Line("no break")]);
        assert_eq!(typed_lines("\n\n"), Vec::<Typed>::new());
    }

    #[test]
    fn a_field_holds_the_typed_text_up_to_whitespace_and_normal_form() {
        // A textarea keeps line breaks; an editor's text may show them as spaces; é typed composed or not.
        assert_eq!(
            shows_other_text("one\ntwo  three", Some("one two three")),
            None
        );
        assert_eq!(shows_other_text("caf\u{e9}", Some("cafe\u{301}")), None);
        // Filled after what the field held (`fill = "append"`, a prefilled title).
        assert_eq!(shows_other_text("more", Some("New item more")), None);
    }

    /// Parts of a long field read while scrolling, as CodeMirror 6 draws them: the lines near the viewport,
    /// then the caret's line (the last), whitespace as a plain read gives it.
    fn lines(from: usize, to: usize, caret: bool) -> String {
        let mut out: Vec<String> = (from..to)
            .map(|i| format!("Line {i} of the post."))
            .collect();
        if caret {
            out.push("Line 29 of the post.".into());
        }
        out.join(" ")
    }

    #[test]
    fn a_long_field_read_in_parts_shows_the_typed_text_when_they_cover_all_of_it() {
        let typed = (0..30)
            .map(|i| format!("Line {i} of the post."))
            .collect::<Vec<_>>()
            .join("\n\n");
        for rule in [TextRule::ExactNfc, TextRule::VisibleWords] {
            let parts = [lines(0, 12, true), lines(9, 21, true), lines(18, 30, false)];
            assert!(windows_show_typed(&typed, &parts, rule), "{rule:?}");
            assert!(
                may_show_a_part(&typed, &lines(9, 21, true), rule),
                "{rule:?}"
            );
            // A part missing between two others: lines 12 to 14 never shown.
            let gap = [lines(0, 12, true), lines(15, 30, false)];
            assert!(!windows_show_typed(&typed, &gap, rule), "{rule:?}");
            // Cut: the end never shown.
            let cut = [lines(0, 12, false), lines(9, 20, false)];
            assert!(!windows_show_typed(&typed, &cut, rule), "{rule:?}");
            // A word changed in one part, or a word that is not the post's, refuses the whole.
            let changed = [
                lines(0, 12, true),
                lines(9, 21, true).replace("Line 15", "Line fifteen"),
                lines(18, 30, false),
            ];
            assert!(!windows_show_typed(&typed, &changed, rule), "{rule:?}");
            let added = [
                format!("Draft {}", lines(0, 16, false)),
                lines(12, 30, false),
            ];
            assert!(!windows_show_typed(&typed, &added, rule), "{rule:?}");
            assert!(!may_show_a_part(
                &typed,
                &format!("Draft {}", lines(0, 5, false)),
                rule
            ));
            // The whole text is no part of it, and nothing is not either.
            assert!(!may_show_a_part(&typed, &lines(0, 30, false), rule));
            assert!(!may_show_a_part(&typed, "", rule));
            assert!(!windows_show_typed(&typed, &[], rule));
        }
    }

    #[test]
    fn a_cut_or_rewritten_or_missing_text_is_named() {
        let cut = shows_other_text("a text of some length", Some("a text of")).unwrap();
        assert!(cut.contains("(9 of 21 characters"), "{cut}");
        assert!(shows_other_text("\"quoted\"", Some("\u{201c}quoted\u{201d}")).is_some());
        assert!(shows_other_text("text", None).unwrap().contains("gone"));
        for rule in [TextRule::CollapseWhitespace, TextRule::Prefix] {
            assert!(super::shows_other_text("**bold** x", Some("bold x"), rule).is_some());
        }
    }

    #[test]
    fn under_visible_words_an_editor_may_rewrite_markup_but_not_words() {
        // What a rich editor does to what it is given: markup rendered, quotes and dashes made typographic.
        assert_eq!(
            shows_other_words(
                "say \"hi\" -- **now**",
                "say \u{201c}hi\u{201d} \u{2014} now"
            ),
            None
        );
        // After what the field held, as with characters.
        assert_eq!(shows_other_words("*one* two", "Draft: one two"), None);
        // A cut, a changed, a dropped or a reordered word is refused; so is a field showing no word at all.
        for shown in [
            "say hi",
            "say hello now",
            "say now",
            "hi say now",
            "",
            "** --",
        ] {
            assert!(
                shows_other_words("say \"hi\" -- **now**", shown).is_some(),
                "{shown:?}"
            );
        }
        // The typed words must stand side by side, not scattered through the field.
        assert!(shows_other_words("one two", "one and two").is_some());
        // A text with no word at all is compared by its characters.
        assert_eq!(shows_other_words("--", "--"), None);
        assert!(shows_other_words("--", "\u{2014}").is_some());
    }
}
