//! The catalogue of hostile page variants (`/hostile/{name}`): what each one does and, for the ones that
//! write, which server-side counter ([`super::Stats::writes_to`]) its write lands on and what sets it off.
//! Probe tests iterate this list instead of repeating names and sink routes.

/// What makes a writing variant write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// Loading the page is enough (including timers and workers started by the load).
    Load,
    /// Focusing `#post-text`.
    FocusText,
    /// Typing into `#post-text` (each `input` event).
    InputText,
    /// Clicking `#publish` (nothing before).
    Press,
}

/// How a variant misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehaviour {
    /// Writes to a non-create route, counted under `sink` (a `"METHOD /path"` key).
    Writes {
        /// Counter key in [`super::Stats::other_writes`].
        sink: &'static str,
        /// What sets the write off.
        trigger: Trigger,
    },
    /// Uses channels CDP `Fetch` never sees: a WebSocket to `GET /api/live` (and, for `channels`, WebRTC
    /// over UDP), counted in [`super::Stats`]'s `websocket_*` and `udp_datagrams`. Publishes by a frame when
    /// `publishes` is true.
    LiveChannel {
        /// When its first handshake happens.
        trigger: Trigger,
        /// Whether clicking `#publish` publishes over the WebSocket (instead of `POST /api/posts`).
        publishes: bool,
    },
    /// `#publish` moves on every animation frame.
    MovingButton,
    /// An overlay (`#promo-overlay`) covers `#publish`.
    CoveredButton,
    /// The compose form is in a same-origin iframe (`#compose-frame`, `/hostile/covered-iframe-inner`, which
    /// writes nothing) and an overlay of the top document (`#frame-cover`) covers the whole iframe.
    CoveredIframe,
    /// `#publish` sits 3000 px below the fields, far below the browser's window: only a scroll brings it
    /// into view.
    BelowFold,
    /// Two elements match `#publish`.
    DuplicateMatch,
    /// The compose form appears only ~3 s after load.
    SlowForm,
    /// Credentials in the DOM, the create request and its answer (see `super::secrets`).
    PlantsSecrets,
    /// A single-page app that syncs in the background: `PUT /api/ui-state` on load and `PUT /api/drafts` on
    /// input (counted under those keys), retries a failed sync by itself every second, and publishes only
    /// once every sync went through. A contract declares the two as non-publish writes.
    SyncsInBackground,
    /// Publishes with `PUT /api/items/{title}` (the title in the URL, percent-encoded; `{"text"}` in the body)
    /// and stays on the page; the item's page is `/items/{title}`. Counted as a create arrival.
    TitleKeyedPut,
    /// The page fills the title field with "New item" on load, as editors do (the normal compose script
    /// publishes).
    PrefillsFields,
    /// The publish control is `#send-post` (no id `publish`, no submit button), after the header's search form.
    RenamedControls,
    /// A two-step publish: `#publish` only opens a pre-publish panel; its `#publish-now` sends the create.
    TwoStepPublish,
    /// One endpoint for drafts and posts: `POST /api/posts` with `"status":"draft"` (counted under
    /// [`DRAFT_SAVE`]) on input and again on the press, then with `"status":"publish"` once that save went
    /// through. Stays on the page and adds the class `synced` to `#compose-status` when published.
    OneEndpoint,
    /// The press opens a `noopener` window (`/hostile/outbox-relay`) that outlives the page and sends
    /// the post again (`POST /api/posts`) whenever a later page of the site announces a publish: the next
    /// post's press. One copy per post only if nothing of a send survives into the next (a warm browser).
    OutboxOutlivesPage,
    /// The compose form lives two open shadow roots deep (`<fb-page>` holds `<fb-composer>`, whose shadow
    /// root holds the form), where `document.querySelector` finds nothing and `document.elementFromPoint`
    /// answers the outer host. Publishes as the compose page does. `?cover=1`: an element of the inner
    /// shadow root (`#shadow-cover`) lies over `#publish`.
    ShadowDom,
    /// The compose form arrives in the HTML inside `<template shadowrootmode="closed">` of `<fb-composer>`:
    /// a closed shadow root the parser makes, which no script attaches (the component reaches it through its
    /// `ElementInternals`). Publishes as the compose page does.
    DeclarativeClosedShadowDom,
    /// Publish follows the keys, as forms of the jQuery era do: a `keyup` in `#post-text` enables it when the
    /// field holds text, and the field's `input` events never reach the page's handler. Text that arrives
    /// without a key press leaves Publish disabled. Publishes as the compose page does.
    KeyEventsOnly,
    /// A classic server-rendered form and no script: `enctype="multipart/form-data"` (it has a file input),
    /// the CSRF token in a hidden `_csrf` field, a submit button whose press is a navigation POST to
    /// `/forum/posts` (a create arrival), answered `303` to the post's page. `?enctype=urlencoded`: the same
    /// form urlencoded.
    ClassicMultipartForm,
    /// A chat box: no Publish to click; the text field sends on Enter (Shift+Enter makes a line break).
    /// `?key=ctrl`: on Control+Enter or Meta+Enter, and plain Enter makes a line break. The send is the
    /// compose page's own create request.
    SendsOnEnter,
    /// A wizard: the title and a Next button first; the text field and Publish only after Next, which
    /// takes the title out of view. Filling every field at once finds no text field.
    Wizard,
    /// An outbox in a service worker (`/hostile/sw-outbox.js`): the press hands the post to the worker,
    /// which sends every post it holds again (`POST /api/posts`, from the worker) whenever a later page
    /// announces a publish. In a warm browser the LAST post would meet the next press's armed takeover.
    ServiceWorkerOutbox,
    /// The compose page framed from another origin of the same site (`?port=`: Fixturebook's other origin,
    /// [`super::RunningPlatform::other_origin_url`]), which publishes to its own `/api/posts`: out of the
    /// page's scripts' reach, in the page's process, the viewer's session with it.
    OtherOriginFrame,
}

/// The counter key of a draft saved through `POST /api/posts` (`/hostile/one-endpoint`).
pub const DRAFT_SAVE: &str = "POST /api/posts status=draft";

/// One hostile variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostileVariant {
    /// Name in the URL: `/hostile/{name}`.
    pub name: &'static str,
    /// What it does.
    pub misbehaviour: Misbehaviour,
}

impl HostileVariant {
    /// Path of the page, e.g. `/hostile/beacon`.
    pub fn path(&self) -> String {
        format!("/hostile/{}", self.name)
    }
}

const fn writes(name: &'static str, sink: &'static str, trigger: Trigger) -> HostileVariant {
    HostileVariant {
        name,
        misbehaviour: Misbehaviour::Writes { sink, trigger },
    }
}

/// Every hostile variant, in documentation order.
pub const HOSTILE_VARIANTS: &[HostileVariant] = &[
    writes(
        "write-on-load",
        "POST /api/sink/write-on-load",
        Trigger::Load,
    ),
    writes(
        "write-on-focus",
        "POST /api/sink/write-on-focus",
        Trigger::FocusText,
    ),
    writes("autosave", "POST /api/drafts", Trigger::InputText),
    // Beacons fire on load and again on every visibilitychange.
    writes("beacon", "POST /api/sink/beacon", Trigger::Load),
    writes(
        "form-submit-timer",
        "POST /api/sink/form-submit-timer",
        Trigger::Load,
    ),
    // The worker (/hostile/sw.js, scope /hostile/) writes on install and activate, then proxies every
    // fetch of the pages it controls, the create request included.
    writes(
        "service-worker",
        "POST /api/sink/service-worker",
        Trigger::Load,
    ),
    // The compose DOM lives in the frame (/hostile/iframe-inner), which writes on load.
    writes("iframe", "POST /api/sink/iframe", Trigger::Load),
    // The compose page is framed from another site (`localhost` for `127.0.0.1`): an out-of-process iframe,
    // with a target of its own, that writes on load by fetch and by beacon (/hostile/cross-origin-inner).
    writes("cross-origin", "POST /api/sink/cross-origin", Trigger::Load),
    // An analytics "pixel": every keystroke sends the draft in a GET's query (`/api/pixel?d=...`).
    writes("pixel", "GET /api/pixel", Trigger::InputText),
    // The press also sends the post again by a GET (`/api/create?text=...`), which this platform honours: a
    // second copy, unless the door fails it (the typed text is watched after the press too).
    writes("resend-get", "GET /api/create", Trigger::Press),
    // Publishes over a WebSocket opened on load (drafts on every keystroke), as LiveView-style apps do.
    HostileVariant {
        name: "websocket",
        misbehaviour: Misbehaviour::LiveChannel {
            trigger: Trigger::Load,
            publishes: true,
        },
    },
    // The same, but the WebSocket is opened only by the click: nothing before the press.
    HostileVariant {
        name: "websocket-on-publish",
        misbehaviour: Misbehaviour::LiveChannel {
            trigger: Trigger::Press,
            publishes: true,
        },
    },
    // On load: WebSockets from the page, a worker, a shared worker, a srcdoc and a sandboxed iframe, and
    // WebRTC STUN over UDP; publishes through the normal create request.
    HostileVariant {
        name: "channels",
        misbehaviour: Misbehaviour::LiveChannel {
            trigger: Trigger::Load,
            publishes: false,
        },
    },
    // On load: a WebSocket only to hear (new posts, as a streaming timeline), opened again after every
    // close; publishes through the normal create request (`?other=1`: one to another host too).
    HostileVariant {
        name: "live-updates",
        misbehaviour: Misbehaviour::LiveChannel {
            trigger: Trigger::Load,
            publishes: false,
        },
    },
    HostileVariant {
        name: "moving-button",
        misbehaviour: Misbehaviour::MovingButton,
    },
    HostileVariant {
        name: "covered-button",
        misbehaviour: Misbehaviour::CoveredButton,
    },
    HostileVariant {
        name: "covered-iframe",
        misbehaviour: Misbehaviour::CoveredIframe,
    },
    HostileVariant {
        name: "below-fold",
        misbehaviour: Misbehaviour::BelowFold,
    },
    HostileVariant {
        name: "duplicate-match",
        misbehaviour: Misbehaviour::DuplicateMatch,
    },
    HostileVariant {
        name: "slow",
        misbehaviour: Misbehaviour::SlowForm,
    },
    HostileVariant {
        name: "secrets",
        misbehaviour: Misbehaviour::PlantsSecrets,
    },
    HostileVariant {
        name: "draft-sync",
        misbehaviour: Misbehaviour::SyncsInBackground,
    },
    HostileVariant {
        name: "title-put",
        misbehaviour: Misbehaviour::TitleKeyedPut,
    },
    HostileVariant {
        name: "prefilled",
        misbehaviour: Misbehaviour::PrefillsFields,
    },
    HostileVariant {
        name: "renamed-controls",
        misbehaviour: Misbehaviour::RenamedControls,
    },
    HostileVariant {
        name: "two-step",
        misbehaviour: Misbehaviour::TwoStepPublish,
    },
    HostileVariant {
        name: "one-endpoint",
        misbehaviour: Misbehaviour::OneEndpoint,
    },
    HostileVariant {
        name: "outbox",
        misbehaviour: Misbehaviour::OutboxOutlivesPage,
    },
    HostileVariant {
        name: "shadow",
        misbehaviour: Misbehaviour::ShadowDom,
    },
    HostileVariant {
        name: "declarative-shadow",
        misbehaviour: Misbehaviour::DeclarativeClosedShadowDom,
    },
    HostileVariant {
        name: "key-events",
        misbehaviour: Misbehaviour::KeyEventsOnly,
    },
    HostileVariant {
        name: "multipart-form",
        misbehaviour: Misbehaviour::ClassicMultipartForm,
    },
    HostileVariant {
        name: "enter-to-send",
        misbehaviour: Misbehaviour::SendsOnEnter,
    },
    HostileVariant {
        name: "wizard",
        misbehaviour: Misbehaviour::Wizard,
    },
    HostileVariant {
        name: "sw-outbox",
        misbehaviour: Misbehaviour::ServiceWorkerOutbox,
    },
    HostileVariant {
        name: "other-origin",
        misbehaviour: Misbehaviour::OtherOriginFrame,
    },
];
