//! The contract file format: the serde types a `selectors/NAME.toml` file deserializes into.
//!
//! Every table denies unknown keys, so a typo is an error with a position instead of a silently ignored
//! setting. Defaults are filled in at parse time and are part of the hash: two files that mean the same
//! thing hash the same, whatever their comments, key order or formatting.
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The newest contract format version, the one `oncepost contract migrate` writes.
pub const FORMAT_VERSION: u32 = 2;
/// Every format version this build reads: 1 (the first) and 2 (`{field:NAME}` placeholders everywhere, the
/// body field named, success by status alone or pinned to a field, `create_wait_ms`, `not_url_regex`,
/// request body and header matchers).
pub const FORMAT_VERSIONS: &[u32] = &[1, 2];

/// A whole platform contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "oncepost platform contract (selectors/NAME.toml), formats 1 and 2",
    description = "Validated for real by `oncepost contract check FILE`; this schema is for editor completion. See docs/contracts.md.",
    extend("$id" = "https://oncepost.invalid/contract.schema.json")
)]
pub struct Contract {
    /// Contract format version (`1` or `2`).
    #[schemars(extend("enum" = FORMAT_VERSIONS))]
    pub format: u32,
    /// Platform name (`[a-z0-9-]+`), e.g. `fixture`.
    #[schemars(pattern(r"^[a-z0-9-]+$"))]
    pub platform: String,
    /// Free-form description for humans.
    #[serde(default)]
    pub description: String,
    /// Where the harness may navigate and which origins may receive requests.
    pub origins: Origins,
    /// The compose page: URL, non-publishing steps and fields.
    pub compose: Compose,
    /// The publish control and the create request it causes.
    pub publish: Publish,
    /// Writes the page makes that are not the publish (draft autosave and the like).
    #[serde(default)]
    pub non_publish_writes: Vec<RequestMatcher>,
    /// Requests that use a write method only to read (a GraphQL query, a search sent by POST), told apart
    /// from the create request; sent by oncepost wherever the page may read: publish, probe, lookup
    /// (format 2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_requests: Vec<RequestMatcher>,
    /// Where the page's live sockets connect (a timeline's updates, a chat's presence), which are not how
    /// it publishes (format 2). The door still refuses them; declared, one tried before the press does not
    /// stop the publish, nor one after it count as the page publishing another way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub live_sockets: Vec<LiveSocketDecl>,
    /// How a successful create is recognised and where the post id comes from.
    #[schemars(length(min = 1))]
    pub success: Vec<SuccessSignal>,
    /// How to find a post again, by id or by text.
    pub readback: Readback,
    /// Screenshot evidence settings.
    #[serde(default)]
    pub evidence: Evidence,
}

/// Allowed origins, as templates (`{base_url}` is replaced by the base URL's origin).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Origins {
    /// Origins (`scheme://host[:port]`) the harness may load and send to.
    #[schemars(with = "Vec<Template>", length(min = 1))]
    pub allowed: Vec<String>,
}

/// The compose page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Compose {
    /// Compose URL template, e.g. `{base_url}/compose`. Placeholders: `{base_url}`, `{field:NAME}` (format 2)
    /// or a bare field name (format 1).
    #[schemars(with = "Template")]
    pub url: String,
    /// The field that carries the post's body (`--text`); default `text` (format 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^[A-Za-z0-9_]+$"))]
    pub body_field: Option<String>,
    /// Steps performed before the publish control that are explicitly non-publishing.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// The compose fields.
    #[schemars(length(min = 1))]
    pub fields: Vec<Field>,
    /// (format 2) Where the compose page shows who is logged in (a header's user menu): before anything is
    /// typed, it must show the account's handle, or nothing is pressed. A login that expired (or was never
    /// there) on a platform that lets visitors post would otherwise make the post under no one's name, or
    /// another's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_in_as: Option<SignedInAs>,
}

/// Where a page shows the logged-in user's handle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignedInAs {
    /// CSS selector of the element (the first match, in the page or its open shadow roots).
    #[schemars(length(min = 1))]
    pub css: String,
    /// Read this attribute of it instead of its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub attribute: Option<String>,
    /// A regex with a group `handle` over what the element shows (its text or attribute): the handle is
    /// that group ("Signed in as alice", a profile link `/u/alice`); no match shows no one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub pattern: Option<String>,
}

/// What a non-publishing step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepAction {
    /// Wait until the locator matches with all its required states.
    WaitFor,
    /// Move focus to the element (no key is pressed).
    Focus,
    /// Scroll the element into view.
    ScrollIntoView,
    /// Click the element (e.g. "open composer"). Must never be the publish control.
    Click,
    /// Choose the `<select>` element's option named by `option` (its value or its label), as a person
    /// picks a category (format 2).
    Select,
    /// Tick the checkbox (or choose the radio button, or an element with the `checkbox`, `radio` or
    /// `switch` role) unless it is ticked already: one click when it is not, nothing when it is (format 2).
    /// A consent a form requires ("I accept the rules"); a `click` would untick a box the page remembered.
    Check,
    /// Type `text` into the element (format 2), its content replaced, as a person types (no Enter): the
    /// search box of a list that shows only what matches (a searchable select, an autocomplete), usually
    /// with a choice (`text = "{field:category}"`), before a click on the option it brings.
    Type,
}

/// A step before publishing that the contract author declares non-publishing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [{ "required": ["field"] }, { "required": ["locator"] }]))]
pub struct Step {
    /// What to do.
    pub action: StepAction,
    /// Name of a compose field whose locator is the target; exclusive with `locator`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The target element; exclusive with `field`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locator: Option<Locator>,
    /// Run after the fields are filled (format 2): a click that opens a pre-publish panel once the post is
    /// written (a two-step publish; the panel's own control is the publish control).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_fill: Option<bool>,
    /// Run right after this field is filled (format 2): a wizard's "Next", which shows the next fields once
    /// these are written. The fields filled until then are checked before it runs (it may take them out of
    /// view). Exclusive with `after_fill`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_field: Option<String>,
    /// What a `type` step types (format 2); `{field:NAME}` of a `choice` field types the post's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The option a `select` step chooses: its value or its label (format 2). `{field:NAME}` of a `choice`
    /// field chooses the post's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option: Option<String>,
    /// (format 2) The page shows the target only sometimes (a cookie banner on a first visit, a "what's
    /// new" dialog): the step waits `wait_ms` for it and, when it does not come ready, is skipped instead
    /// of failing the post.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
    /// With `optional`: how long the target may take to come ready, in milliseconds (default 1000, at most
    /// 10000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 10000))]
    pub wait_ms: Option<u64>,
    /// Must be `true`: the author asserts this step cannot publish.
    #[schemars(extend("const" = true))]
    pub non_publishing: bool,
    /// Why the step is safe, for reviewers.
    #[serde(default)]
    pub why: String,
}

/// What kind of control a field is; decides how text goes in and the default required states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    /// `<input>`.
    TextInput,
    /// `<textarea>`.
    Textarea,
    /// An element with `contenteditable`.
    Contenteditable,
    /// (format 2) No control: a value that lives only in URL templates (`{field:NAME}`), such as a wiki
    /// page's name in its edit URL. It has no locator and nothing is typed.
    Url,
    /// (format 2) No control of its own: a per-post value a step picks, such as a forum's category. A
    /// step's `option` and its locator's `text` and `name` may say `{field:NAME}`: a `select` step with
    /// `option = "{field:category}"` picks the post's own option, a `click` on `{ role = "option", name =
    /// "{field:category}" }` picks it in a list a script draws. It has no locator and nothing is typed.
    Choice,
}

impl FieldKind {
    /// Whether the field is a control text is typed into (`url` and `choice` fields have none).
    pub fn is_typed(self) -> bool {
        !matches!(self, FieldKind::Url | FieldKind::Choice)
    }
}

/// A compose field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Field {
    /// Field name (`text`, `title`, ...); posts supply values by this name.
    #[schemars(pattern(r"^[A-Za-z0-9_]+$"))]
    pub name: String,
    /// Control kind.
    pub kind: FieldKind,
    /// Whether a probe fails when the field is not usable.
    #[serde(default = "yes")]
    pub required: bool,
    /// Where the field is (every kind but `url`, which has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locator: Option<Locator>,
    /// What typing does with a value the page put there first: `replace` it (the default) or `append` to
    /// it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill: Option<FieldFill>,
    /// (format 2, `contenteditable` only) How the value's line breaks go in: `text` (the default: typed
    /// with the rest) or `keys`: each line is typed on its own, a blank line between two lines is the Enter
    /// key and a single line break Shift+Enter, as a person types them. For rich editors that make a
    /// paragraph only on Enter and drop a line break that comes in typed text (the WordPress block editor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newlines: Option<Newlines>,
    /// (format 2) Where the whole value shows once typed, when that is not the field itself: the editor's
    /// container, when Enter makes each paragraph an element (a block) of its own and the field is only the
    /// first. The fill check reads this element's text instead of the field's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown_in: Option<Locator>,
}

/// How a field's line breaks go in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Newlines {
    /// Typed with the rest of the text.
    #[default]
    Text,
    /// As key presses: Enter between paragraphs (a blank line), Shift+Enter for a line break.
    Keys,
}

/// What filling a field does with what the page put in it first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FieldFill {
    /// Select what the field holds, then type over it (a title prefilled with "New item").
    Replace,
    /// Type after what the field holds (a body that starts with a greeting the platform keeps).
    Append,
}

/// Element states a locator can require.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Connected to the document.
    Attached,
    /// Has a non-empty box and is not hidden by CSS.
    Visible,
    /// Not disabled (nor `aria-disabled="true"`).
    Enabled,
    /// Enabled and accepts text (not read-only).
    Editable,
    /// Can take focus.
    Focusable,
    /// Intersects the viewport.
    InViewport,
    /// Box unchanged across two animation frames.
    Stable,
    /// A hit test at its centre lands on it (not covered).
    ReceivesEvents,
}

/// One way to find an element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [{ "required": ["css"] }, { "required": ["text"] }, { "required": ["role"] }]))]
pub struct Strategy {
    /// A CSS selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub css: Option<String>,
    /// Visible text of the element (whitespace-collapsed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub text: Option<String>,
    /// With `text`: whole-text match (default) or substring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub exact: Option<bool>,
    /// ARIA role (explicit or implicit), e.g. `button`, `textbox`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// With `role`: accessible name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// An element locator: ordered fallback strategies, strict by default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Locator {
    /// Strategies tried in order; the first one that matches anything decides.
    #[schemars(length(min = 1))]
    pub strategies: Vec<Strategy>,
    /// Exactly one match required (default). `false` takes the first match.
    #[serde(default = "yes")]
    pub strict: bool,
    /// Required states; defaults depend on what the locator is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub states: Option<Vec<State>>,
    /// CSS selectors of the iframes, outermost first, that contain the element.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1)))]
    pub frames: Vec<String>,
}

/// The publish control.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Publish {
    /// Where the control is.
    pub locator: Locator,
    /// States required only after the fields were filled (e.g. `enabled` for a button the page enables
    /// once text is entered). Checked by probes run with `--fill`.
    #[serde(default)]
    pub states_after_fill: Vec<State>,
    /// The create request pressing the control causes.
    pub create_request: RequestMatcher,
    /// How the create request is sent: `harness` (paused and sent once by oncepost) or `browser`.
    #[serde(default)]
    pub transport: Transport,
    /// HTTP statuses of the create request that definitively mean "not created". 4xx only: a 5xx may come
    /// after the commit, so it never proves not-sent.
    #[serde(default)]
    #[schemars(inner(range(min = 400, max = 499)))]
    pub rejection_statuses: Vec<u16>,
    /// (format 2) HTTP statuses of the create request that mean "not created now; try later" (a rate
    /// limit's 429): the intent fails (nothing was made) with the time the answer's `Retry-After` names (60 s
    /// without one, at most a day), and a queued intent is queued again for then. 4xx only, none of them a
    /// rejection status too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(range(min = 400, max = 499)))]
    pub retry_later_statuses: Vec<u16>,
    /// How long after the press the create request must arrive, in milliseconds (default 5000). A page that
    /// first flushes its own background syncs (drafts, UI state) may need longer. When it expires nothing was
    /// sent if the door saw nothing leave (`failed`), else `indeterminate` (docs/states.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 100, max = 120_000))]
    pub create_wait_ms: Option<u64>,
    /// How the press answers a `confirm()` the page asks once publish is pressed ("Publish this post?",
    /// Rails' `data-confirm`): `dismiss` (the default: the page publishes nothing) or `accept` (format 2).
    /// Before the press every confirm is dismissed (a probe agrees to nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<ConfirmAnswer>,
    /// (format 2) The publish is a key pressed in the control, not a click: a chat box or comment field
    /// that sends on `enter` (Shift+Enter makes a line break) or on `ctrl_enter` / `meta_enter`. The
    /// locator then names the field the key goes to (usually the body field itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<PublishKey>,
    /// (format 2) Whether the create request carries the post (the default: every line of the post's text
    /// shows in its body or URL, as words in order; a request after the press that does not is never
    /// sent: a page's outbox sending an earlier post first). `false` for a platform whose create names a
    /// draft saved before instead of carrying the text, or sends it in a form oncepost cannot read
    /// (compressed, encrypted): its create is then told apart by method, URL and body rules alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_carries_post: Option<bool>,
    /// (format 2) Text the page or the platform adds to every post by itself (a signature, a "sent from"
    /// line): the page putting it in the body field on the press is not the page changing the post (the
    /// last look before the create is sent lets those words through), and a post read back with it before
    /// or after the text is the post. Each is matched whole, as the read-back compares text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = 500)))]
    pub added_text: Vec<String>,
}

/// The key a publish is pressed with, when it is a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PublishKey {
    /// Enter alone.
    Enter,
    /// Control+Enter.
    CtrlEnter,
    /// Meta (Command)+Enter.
    MetaEnter,
}

/// An answer to a page's `confirm()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmAnswer {
    /// Cancel.
    Dismiss,
    /// OK.
    Accept,
}

/// Who sends the create request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// The harness pauses the request and sends it exactly once itself.
    #[default]
    Harness,
    /// The browser sends it (connection errors then mean "possibly duplicated").
    Browser,
}

/// A request, by method and URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [{ "required": ["url"] }, { "required": ["url_regex"] }]))]
pub struct RequestMatcher {
    /// HTTP method, upper case.
    #[schemars(extend("enum" = METHODS))]
    pub method: String,
    /// URL template (`{base_url}`, and `{field:NAME}` in format 2); matches the URL without query, compared
    /// percent-decoded. Exclusive with `url_regex`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Template>")]
    pub url: Option<String>,
    /// A regex over the full URL. Exclusive with `url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_regex: Option<String>,
    /// A regex over the full URL that excludes a request this matcher would otherwise match (e.g. every
    /// `PUT` under `/api/items/` except `/api/items/drafts/`): a declaration instead of a regex trick, since
    /// the regex dialect has no look-ahead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_url_regex: Option<String>,
    /// Headers the request must carry, by name (any case), each with a value matching the regex, e.g.
    /// `{ "x-http-method-override" = "^PUT$" }` (format 2).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// A regex the request body must match, read as UTF-8 as it is sent (a form body stays
    /// percent-encoded: `status=publish`; a JSON body as the page wrote it) (format 2). A request whose
    /// body Chromium does not give in full (a file upload) never matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_regex: Option<String>,
    /// A regex that excludes a request whose body matches it (the same endpoint saving a draft, format 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_body_regex: Option<String>,
    /// Why this request exists (for declared non-publish writes and read requests).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

/// A WebSocket endpoint the page opens to hear, not to publish (`[[live_sockets]]`, format 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LiveSocketDecl {
    /// Where its sockets connect: `scheme://host[:port]` (`ws`, `wss`, `http`, `https`; `{base_url}` for the
    /// platform's own origin). No path: a socket through the door shows its host and port only.
    #[schemars(with = "Template")]
    pub url: String,
    /// Why these sockets cannot publish (required): what the page hears on them.
    pub why: String,
    /// Relay these sockets instead of refusing them (a page that shows "connecting" and keeps Publish
    /// disabled until its socket is up): the platform's frames reach the page, and of the page's messages
    /// only those declared leave (`[[read_requests]]` with method `WEBSOCKET`, and during a publish
    /// `[[non_publish_writes]]` too); anything else never leaves and the socket is cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub relay: bool,
}

/// One way to recognise success and extract the post id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuccessSignal {
    /// The page URL after publishing matches this regex; the named group `id` is the post id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_regex: Option<String>,
    /// The create response has this status...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 200, max = 399))]
    pub response_status: Option<u16>,
    /// ...and its JSON body carries the id at this dotted path (e.g. `id`, `data.post.id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_field: Option<String>,
    /// An element that appears on success...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element: Option<Locator>,
    /// ...carrying the id in this attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_attribute: Option<String>,
    /// With `element`: it must show this field's posted value (format 2), so another post's success banner
    /// is never taken for this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element_text_field: Option<String>,
    /// The post id is this field's posted value (a wiki page named by its title; format 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_from_field: Option<String>,
    /// (format 2, a create over a WebSocket) A regex over the platform's messages on the create socket after
    /// the create message was sent: the first that matches is the answer; its named group `id`, when it has
    /// one, is the post id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_answer: Option<String>,
    /// The app shows it has synced (format 2): an element, or an attribute or class on it, appears or
    /// disappears after the create answer. It carries no id (`id_from_field` may give one; else the post is
    /// found by search). Like every signal it only starts the read-back: it never settles a post alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synced: Option<Synced>,
}

/// A page change that shows the app has synced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Synced {
    /// CSS selector of the element (the first match is looked at).
    #[schemars(length(min = 1))]
    pub css: String,
    /// Look at this attribute of the element (exclusive with `class`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub attribute: Option<String>,
    /// Look at this class of the element (exclusive with `attribute`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub class: Option<String>,
    /// `appears` (the default: the element, attribute or class is there) or `disappears` (it is gone; a
    /// missing element has neither attribute nor class).
    #[serde(default)]
    pub when: SyncedWhen,
}

/// Whether a synced signal waits for something to appear or to disappear.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SyncedWhen {
    /// It is there.
    #[default]
    Appears,
    /// It is gone.
    Disappears,
}

/// How to find a post again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [{ "required": ["id_attribute"] }, { "required": ["id_from_link"] }, { "required": ["id_text"] }]))]
pub struct Readback {
    /// Permalink template with `{base_url}` and `{id}` (required), and `{field:NAME}` (format 2).
    #[schemars(with = "Template")]
    pub permalink: String,
    /// Listing or search URL template with `{base_url}` and optionally `{text}` (URL-encoded).
    #[schemars(with = "Template")]
    pub search: String,
    /// Locator of one post item on permalink and listing pages (not strict: lists have many).
    pub item: Locator,
    /// CSS selector, inside an item, of the post text.
    #[schemars(length(min = 1))]
    pub text: String,
    /// (format 2) CSS selectors, inside the `text` element, of elements whose text is not the post's: what
    /// the platform adds to a rendered post (a wiki's section edit links and table of contents, a code
    /// block's "Copy" button). Their text is left out of what is compared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1)))]
    pub text_skip: Vec<String>,
    /// Attribute of the item carrying the id; exclusive with `id_from_link` and `id_text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_attribute: Option<String>,
    /// Regex over an item's link `href` whose group `id` is the id; exclusive with `id_attribute`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_from_link: Option<String>,
    /// (format 2) CSS selector, inside an item, of the element whose text (trimmed) is the id (a wiki
    /// shows its page name); exclusive with `id_attribute` and `id_from_link`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_text: Option<String>,
    /// (format 2) CSS selector, inside an item, of the item's own link: its `href` is the item's permalink
    /// and what `id_from_link` reads. Default: the item's first link (`a[href]`), which on many pages is
    /// the author's profile or a skip link rather than the post's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub link: Option<String>,
    /// CSS selector, inside an item, of the element showing the item's author (its handle). Without it no
    /// search match can be shown to be the account's own: every one is a lead for a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub author: Option<String>,
    /// Read the author from this attribute of the `author` element instead of its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub author_attribute: Option<String>,
    /// (format 2) A regex with a group `handle` over what the `author` element shows (its text or
    /// attribute): the author is that group ("Posted by alice", a profile link `/u/alice`, "alice (you)").
    /// An item whose author shows and does not match shows another author (a lead), never the account's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub author_pattern: Option<String>,
    /// (format 2) What the author element shows (after `author_pattern`) for the viewer's own posts instead
    /// of a handle ("You", "Me"), as chat apps label them: such an item is the account's, since every page
    /// oncepost reads is viewed in the account's own profile. Compared as handles are (trim, NFC, exact).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1)))]
    pub viewer_labels: Vec<String>,
    /// How published text is compared with what was sent.
    #[serde(default)]
    pub compare: TextCompare,
    /// A compose field oncepost fills with the intent's own marker (`op` + 12 hex digits of its delivery
    /// key; the same on every attempt, reconcile and rerun of one intent), for a platform that keeps and
    /// shows it (a tag, a slug, a title) (format 2). Posts supply no value for it. With a marker an item is
    /// this intent's post only when it shows the marker: an identical text posted by anyone else, or by the
    /// same account before, is never taken for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^[A-Za-z0-9_]+$"))]
    pub marker_field: Option<String>,
    /// CSS selector, inside an item, of the element that shows the marker (default: the whole item).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub marker: Option<String>,
    /// Milliseconds after the create before a failed lookup means anything (at most 10 minutes).
    #[schemars(range(max = 600_000))]
    pub propagation_ms: u64,
}

/// Text comparison rule for read-back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TextCompare {
    /// Trim, NFC-normalize, then compare exactly.
    #[default]
    ExactNfc,
    /// Trim, NFC-normalize, collapse runs of whitespace to one space, then compare.
    CollapseWhitespace,
    /// The platform may shorten the text: the shown text (without a trailing ellipsis) must be a prefix.
    Prefix,
    /// The platform renders markup (markdown, wiki, HTML, mentions): the visible words of both, in order,
    /// must be equal; URLs, tags and markup characters are not words (format 2; docs/contracts.md).
    VisibleWords,
}

/// Screenshot evidence settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// CSS selectors of regions blacked out in every screenshot (names, avatars, tokens).
    #[serde(default)]
    #[schemars(inner(length(min = 1)))]
    pub mask: Vec<String>,
}

/// HTTP methods a request matcher may name (the check and the schema both read this list).
pub(super) const METHODS: &[&str] = &[
    "GET",
    "HEAD",
    "POST",
    "PUT",
    "PATCH",
    "DELETE",
    "OPTIONS",
    // A message on a WebSocket (format 2): the create of a page that publishes over one, and the messages
    // it sends there besides (`non_publish_writes`). Not an HTTP method: no request ever has it.
    "WEBSOCKET",
];

/// URL template; `{base_url}` is the `--base-url` value.
// Only the schema uses this type: template keys stay `String` in the structs and name it with
// `#[schemars(with = "Template")]`, so the schema says once what a template is.
#[derive(JsonSchema)]
#[schemars(rename = "template")]
#[allow(dead_code)] // never built: it exists for its schema
struct Template(String);

fn yes() -> bool {
    true
}
