//! Typed locators: ordered fallback strategies, strict by default, with required element states.
//!
//! The publish control is its own type, [`PublishControl`]. It can be *checked* (its locator copied into a
//! [`NamedLocator`]) but this module gives it no method that clicks or presses it; the only thing a probe
//! may click is a [`NonPublishingStep`], which cannot be built from the publish control's locator.
//!
//! ```compile_fail,E0308
//! use oncepost::browser::{Locator, PublishControl, Strategy, probe};
//! async fn try_to_publish(page: &probe::ProbePage<'_>, publish: &PublishControl) {
//!     // A probe can only click non-publishing steps; the publish control is not one.
//!     page.click_step(publish).await;
//! }
//! ```
use std::time::Duration;

use serde::Serialize;

/// One way to find an element.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// CSS selector.
    Css(String),
    /// Visible text, whitespace-collapsed; `exact` = whole text, else substring.
    Text {
        /// The text.
        text: String,
        /// Whole-text match.
        exact: bool,
    },
    /// ARIA role (explicit or implicit) and optional accessible name.
    Role {
        /// The role.
        role: String,
        /// The accessible name.
        name: Option<String>,
    },
}

/// Element states a check can require.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ElementState {
    /// Connected to the document.
    Attached,
    /// Non-empty box, not hidden by CSS.
    Visible,
    /// Not disabled.
    Enabled,
    /// Accepts text.
    Editable,
    /// Can take focus.
    Focusable,
    /// Intersects the viewport, clipped by every iframe it is in.
    InViewport,
    /// Box unchanged across two animation frames (100 ms in a page behind another window, which gets none).
    Stable,
    /// Hit test at the centre lands on it, and (inside iframes) on its iframe in every ancestor document.
    ReceivesEvents,
}

/// A locator: strategies tried in order (the first that matches anything decides), strictness, iframes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Locator {
    /// Fallback strategies, in order.
    pub strategies: Vec<Strategy>,
    /// Exactly one match required.
    pub strict: bool,
    /// CSS selectors of the iframes containing the element, outermost first.
    pub frames: Vec<String>,
}

/// How a field takes text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EditKind {
    /// `<input>`.
    TextInput,
    /// `<textarea>`.
    Textarea,
    /// `contenteditable`.
    Contenteditable,
}

/// What a checked locator is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Purpose {
    /// A compose field.
    Field {
        /// How it takes text.
        edit: EditKind,
        /// What typing does with a value the page put there first.
        fill: FillMode,
        /// How the value's line breaks go in.
        newlines: Newlines,
        /// Where the whole value shows once typed (`None`: in the field itself).
        shown_in: Option<Locator>,
    },
    /// The target of a non-publishing step.
    Step,
    /// The publish control (checked, never pressed).
    PublishControl,
}

/// How a field's line breaks go in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Newlines {
    /// Typed with the rest of the text (`Input.insertText`; a text's last character as a key press).
    #[default]
    Text,
    /// Each line typed on its own; between two lines the Enter key (a blank line: a new paragraph) or
    /// Shift+Enter (a line break).
    Keys,
}

/// What filling a field does with what the page put in it first (a title prefilled with "New item").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FillMode {
    /// Select everything the field holds, then type: the typed text replaces it.
    #[default]
    Replace,
    /// Put the caret after what the field holds, then type.
    Append,
}

/// A locator with a name, a purpose and the states it must have.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedLocator {
    /// Name shown in reports (`field:text`, `publish`).
    pub name: String,
    /// What it is for.
    pub purpose: Purpose,
    /// Whether its failure fails the probe.
    pub required: bool,
    /// Where it is.
    pub locator: Locator,
    /// States it must have.
    pub states: Vec<ElementState>,
}

/// The publish control. Checkable, never pressable from this module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishControl {
    locator: Locator,
    states: Vec<ElementState>,
    states_after_fill: Vec<ElementState>,
    accept_confirm: bool,
    key: Option<PressKey>,
}

/// A publish pressed as a key in the control (a chat box that sends on Enter), not clicked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PressKey {
    /// Enter alone.
    Enter,
    /// Control+Enter.
    CtrlEnter,
    /// Meta (Command)+Enter.
    MetaEnter,
}

impl PressKey {
    /// The key event's modifier bits (CDP `Input.dispatchKeyEvent`: Ctrl 2, Meta 4).
    pub(crate) fn modifiers(self) -> i64 {
        match self {
            PressKey::Enter => 0,
            PressKey::CtrlEnter => 2,
            PressKey::MetaEnter => 4,
        }
    }
}

impl PublishControl {
    /// A publish control found by `locator`, required to be in `states` (plus `states_after_fill` once
    /// the fields were filled).
    pub fn new(
        locator: Locator,
        states: Vec<ElementState>,
        states_after_fill: Vec<ElementState>,
    ) -> Self {
        PublishControl {
            locator,
            states,
            states_after_fill,
            accept_confirm: false,
            key: None,
        }
    }

    /// Whether the publish is `key` pressed in the control instead of a click (the contract's
    /// `publish.key`). The fill may then focus the control, which is a field it types into; nothing else
    /// may act on it.
    pub fn pressed_with(mut self, key: Option<PressKey>) -> Self {
        self.key = key;
        self
    }

    /// See [`PublishControl::pressed_with`].
    pub fn key(&self) -> Option<PressKey> {
        self.key
    }

    /// Whether its press answers OK to a `confirm()` the page asks once it is pressed (the contract's
    /// `publish.confirm = "accept"`); before the press every confirm is dismissed.
    pub fn accepting_confirm(mut self, yes: bool) -> Self {
        self.accept_confirm = yes;
        self
    }

    /// See [`PublishControl::accepting_confirm`].
    pub fn accepts_confirm(&self) -> bool {
        self.accept_confirm
    }

    /// A read-only copy for checking its states; `filled` adds the after-fill states.
    pub fn checkable(&self, filled: bool) -> NamedLocator {
        let mut states = self.states.clone();
        if filled {
            for s in &self.states_after_fill {
                if !states.contains(s) {
                    states.push(*s);
                }
            }
        }
        NamedLocator {
            name: "publish".into(),
            purpose: Purpose::PublishControl,
            required: true,
            locator: self.locator.clone(),
            states,
        }
    }

    fn targets(&self, l: &Locator) -> bool {
        l.frames == self.locator.frames
            && l.strategies
                .iter()
                .any(|s| self.locator.strategies.contains(s))
    }
}

/// What a non-publishing step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepAction {
    /// Wait until the target has its required states.
    WaitFor,
    /// Focus the target (no key pressed).
    Focus,
    /// Scroll the target into view.
    ScrollIntoView,
    /// Click the target (never the publish control, never a submit control: checked again at run time).
    Click,
    /// Choose an option of the target `<select>` (by value or label), as a person picks one: the page gets
    /// the `input` and `change` events a pick sends.
    Select,
    /// Tick the target checkbox (radio button, `checkbox`/`radio`/`switch` role) unless it is ticked: a
    /// click only when it is not, then it must read ticked.
    Check,
    /// Type the step's text into the target, its content replaced (the search box of a list that shows
    /// only what matches); no Enter.
    Type,
    /// Read back what a filled field shows (no contract declares it: the fill's own check, reported like a
    /// step).
    Verify,
}

/// A step the contract declares non-publishing. Cannot target the publish control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonPublishingStep {
    action: StepAction,
    target: NamedLocator,
    after_fill: bool,
    after_field: Option<String>,
    option: Option<String>,
    typed: Option<String>,
    optional: Option<Duration>,
}

impl NonPublishingStep {
    /// A step on `target`; refused when any of its strategies is one of the publish control's.
    pub fn new(
        action: StepAction,
        target: NamedLocator,
        publish: &PublishControl,
    ) -> Result<Self, String> {
        if publish.targets(&target.locator) {
            return Err(format!(
                "step {:?} targets the publish control; probes never touch it",
                target.name
            ));
        }
        Ok(NonPublishingStep {
            action,
            target,
            after_fill: false,
            after_field: None,
            option: None,
            typed: None,
            optional: None,
        })
    }

    /// The text a [`StepAction::Type`] step types.
    pub fn typing(mut self, text: Option<String>) -> Self {
        self.typed = text;
        self
    }

    /// See [`NonPublishingStep::typing`].
    pub fn typed(&self) -> Option<&str> {
        self.typed.as_deref()
    }

    /// This step runs right after the field named `field` (a field locator's name, `field:NAME`) is filled:
    /// a wizard's "Next", which shows the next fields once these are written.
    pub fn following_field(mut self, field: Option<String>) -> Self {
        self.after_field = field;
        self
    }

    /// The field (`field:NAME`) this step runs right after, if any.
    pub fn follows_field(&self) -> Option<&str> {
        self.after_field.as_deref()
    }

    /// Whether it runs before any field is filled (neither after the fill nor after a field).
    pub fn runs_before_fill(&self) -> bool {
        !self.after_fill && self.after_field.is_none()
    }

    /// The page shows this step's target only sometimes (a cookie banner on a first visit): it waits `wait`
    /// for it and is skipped when it does not come ready. `None`: it is required, as by default.
    pub fn optional_for(mut self, wait: Option<Duration>) -> Self {
        self.optional = wait;
        self
    }

    /// How long an optional step waits for its target; `None` for a required step.
    pub fn optional_wait(&self) -> Option<Duration> {
        self.optional
    }

    /// This step runs after the fields are filled (a click that opens a pre-publish panel once the post
    /// is written), not before.
    pub fn after_fill(mut self, yes: bool) -> Self {
        self.after_fill = yes;
        self
    }

    /// The option a [`StepAction::Select`] step chooses (its value or label).
    pub fn choosing(mut self, option: Option<String>) -> Self {
        self.option = option;
        self
    }

    /// See [`NonPublishingStep::choosing`].
    pub fn option(&self) -> Option<&str> {
        self.option.as_deref()
    }

    /// Whether it runs after the fill.
    pub fn runs_after_fill(&self) -> bool {
        self.after_fill
    }

    /// What it does.
    pub fn action(&self) -> StepAction {
        self.action
    }

    /// Its target.
    pub fn target(&self) -> &NamedLocator {
        &self.target
    }
}
