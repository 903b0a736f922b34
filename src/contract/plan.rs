//! Converting a contract into the browser's [`ProbePlan`](crate::browser::ProbePlan).
use crate::browser::{
    self, ElementState, NamedLocator, NonPublishingStep, ProbePlan, PublishControl, Purpose,
};

use std::time::Duration;

use super::format::{self, Contract, FieldKind, State};

/// Why a plan could not be built from a valid contract and a base URL.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The base URL is not an absolute http(s) URL.
    #[error("bad base URL {url:?}: {why}")]
    BaseUrl {
        /// As given.
        url: String,
        /// Why.
        why: String,
    },
    /// A template did not expand.
    #[error("{what}: {why}")]
    Template {
        /// Which template.
        what: String,
        /// Why.
        why: String,
    },
    /// A step the browser refuses.
    #[error("{0}")]
    Step(String),
}

fn state(s: State) -> ElementState {
    match s {
        State::Attached => ElementState::Attached,
        State::Visible => ElementState::Visible,
        State::Enabled => ElementState::Enabled,
        State::Editable => ElementState::Editable,
        State::Focusable => ElementState::Focusable,
        State::InViewport => ElementState::InViewport,
        State::Stable => ElementState::Stable,
        State::ReceivesEvents => ElementState::ReceivesEvents,
    }
}

/// The browser locator of a contract locator.
pub fn locator(l: &format::Locator) -> browser::Locator {
    browser::Locator {
        strategies: l
            .strategies
            .iter()
            .filter_map(|s| {
                if let Some(c) = &s.css {
                    Some(browser::Strategy::Css(c.clone()))
                } else if let Some(t) = &s.text {
                    Some(browser::Strategy::Text {
                        text: t.clone(),
                        exact: s.exact.unwrap_or(true),
                    })
                } else {
                    s.role.as_ref().map(|r| browser::Strategy::Role {
                        role: r.clone(),
                        name: s.name.clone(),
                    })
                }
            })
            .collect(),
        strict: l.strict,
        frames: l.frames.clone(),
    }
}

fn states(l: &format::Locator, default: &[State]) -> Vec<ElementState> {
    l.states
        .as_deref()
        .unwrap_or(default)
        .iter()
        .map(|s| state(*s))
        .collect()
}

/// Default required states of a compose field.
pub const FIELD_STATES: &[State] = &[
    State::Attached,
    State::Visible,
    State::Enabled,
    State::Editable,
    State::Stable,
    State::ReceivesEvents,
];
/// Default required states of the publish control (enabled only after filling, via `states_after_fill`).
pub const PUBLISH_STATES: &[State] = &[
    State::Attached,
    State::Visible,
    State::Stable,
    State::ReceivesEvents,
];
/// Default required states of a step target that is only looked at, focused or scrolled to.
pub const STEP_STATES: &[State] = &[State::Attached, State::Visible];
/// Default required states of a step target that is clicked, picked from, ticked or typed into: a press on
/// a disabled control does nothing, so the step waits (bounded by the step timeout) until it is enabled.
/// Measured on MediaWiki's VisualEditor: "Save page..." stays `aria-disabled` until the editor's model has
/// taken the typing; a click while it was opened nothing, and the send failed only later, for a publish
/// control never found (nothing pressed).
pub const ACTING_STEP_STATES: &[State] = &[State::Attached, State::Visible, State::Enabled];

/// The default required states of a step's target, by what the step does with it.
fn step_states(action: format::StepAction) -> &'static [State] {
    match action {
        format::StepAction::WaitFor
        | format::StepAction::Focus
        | format::StepAction::ScrollIntoView => STEP_STATES,
        format::StepAction::Click
        | format::StepAction::Select
        | format::StepAction::Check
        | format::StepAction::Type => ACTING_STEP_STATES,
    }
}

impl Contract {
    /// The base URL's origin as the `{base_url}` value (no trailing slash).
    pub fn base_origin(base_url: &str) -> Result<String, PlanError> {
        let u = url::Url::parse(base_url).map_err(|e| PlanError::BaseUrl {
            url: base_url.into(),
            why: e.to_string(),
        })?;
        if !matches!(u.scheme(), "http" | "https") || u.host().is_none() {
            return Err(PlanError::BaseUrl {
                url: base_url.into(),
                why: "need http(s)://host[:port]".into(),
            });
        }
        Ok(base_url.trim_end_matches('/').to_string())
    }

    /// The field that carries the post's body (`compose.body_field`, default `text`).
    pub fn body_field(&self) -> &str {
        self.compose.body_field.as_deref().unwrap_or("text")
    }

    /// Build the browser-level probe plan for the platform at `base_url` (field placeholders empty).
    pub fn probe_plan(&self, base_url: &str) -> Result<ProbePlan, PlanError> {
        self.probe_plan_for(base_url, &PostValues::new())
    }

    /// The required fields without a control (`kind = "url"` or `"choice"`) `values` gives no non-empty
    /// value: a compose URL without them names no page, a step without its choice would pick nothing (or
    /// leave the page's own), so a probe or a publish refuses to start.
    pub fn missing_value_fields(&self, values: &PostValues) -> Vec<&str> {
        self.compose
            .fields
            .iter()
            .filter(|f| !f.kind.is_typed() && f.required)
            .filter(|f| values.get(&f.name).is_none_or(|v| v.trim().is_empty()))
            .map(|f| f.name.as_str())
            .collect()
    }

    /// The probe plan with the compose URL's field placeholders filled from `values`.
    pub fn probe_plan_for(
        &self,
        base_url: &str,
        values: &PostValues,
    ) -> Result<ProbePlan, PlanError> {
        let base = Contract::base_origin(base_url)?;
        let url_vars = self.url_vars(&base, values);
        let url = fill_url("compose.url", &self.compose.url, &url_vars)?;
        let mut allowed_origins = Vec::new();
        for o in &self.origins.allowed {
            let e = fill_url(
                "origins.allowed",
                o,
                &[("base_url".to_string(), base.clone())],
            )?;
            let origin = url::Url::parse(&e)
                .map(|u| u.origin().ascii_serialization())
                .map_err(|err| PlanError::Template {
                    what: "origins.allowed".into(),
                    why: err.to_string(),
                })?;
            allowed_origins.push(origin);
        }
        // A url field has no control: its value is only in the URLs above.
        let fields: Vec<NamedLocator> = self
            .compose
            .fields
            .iter()
            .filter_map(|f| Some((f, f.locator.as_ref()?, edit_kind(f.kind)?)))
            .map(|(f, at, edit)| NamedLocator {
                name: format!("field:{}", f.name),
                purpose: Purpose::Field {
                    fill: match f.fill.unwrap_or(format::FieldFill::Replace) {
                        format::FieldFill::Replace => browser::FillMode::Replace,
                        format::FieldFill::Append => browser::FillMode::Append,
                    },
                    edit,
                    newlines: match f.newlines.unwrap_or_default() {
                        format::Newlines::Text => browser::Newlines::Text,
                        format::Newlines::Keys => browser::Newlines::Keys,
                    },
                    shown_in: f.shown_in.as_ref().map(locator),
                },
                required: f.required,
                locator: locator(at),
                states: states(at, FIELD_STATES),
            })
            .collect();
        let publish = PublishControl::new(
            locator(&self.publish.locator),
            states(&self.publish.locator, PUBLISH_STATES),
            self.publish
                .states_after_fill
                .iter()
                .map(|s| state(*s))
                .collect(),
        )
        .accepting_confirm(self.publish.confirm == Some(format::ConfirmAnswer::Accept))
        .pressed_with(self.publish.key.map(|k| match k {
            format::PublishKey::Enter => browser::PressKey::Enter,
            format::PublishKey::CtrlEnter => browser::PressKey::CtrlEnter,
            format::PublishKey::MetaEnter => browser::PressKey::MetaEnter,
        }));
        let mut steps = Vec::new();
        // A choice's value, as posted (trimmed); none for an empty one.
        let choice = |name: &str| values.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        for (i, s) in self.compose.steps.iter().enumerate() {
            // A step that picks a choice the post does not give is left out: an optional choice stays the
            // page's own (a required one was refused before anything started).
            let Some((option, typed, at)) = step_with_choices(s, &choice) else {
                continue;
            };
            let target = match (&s.field, &at) {
                (Some(name), _) => {
                    let f = fields
                        .iter()
                        .find(|f| f.name == format!("field:{name}"))
                        .ok_or_else(|| PlanError::Step(format!("step {i}: no field {name:?}")))?;
                    NamedLocator {
                        name: format!("step{i}:{name}"),
                        purpose: Purpose::Step,
                        required: true,
                        locator: f.locator.clone(),
                        states: f.states.clone(),
                    }
                }
                (None, Some(l)) => NamedLocator {
                    name: format!("step{i}"),
                    purpose: Purpose::Step,
                    required: true,
                    locator: locator(l),
                    states: states(l, step_states(s.action)),
                },
                (None, None) => return Err(PlanError::Step(format!("step {i} has no target"))),
            };
            let action = match s.action {
                format::StepAction::WaitFor => browser::StepAction::WaitFor,
                format::StepAction::Focus => browser::StepAction::Focus,
                format::StepAction::ScrollIntoView => browser::StepAction::ScrollIntoView,
                format::StepAction::Click => browser::StepAction::Click,
                format::StepAction::Select => browser::StepAction::Select,
                format::StepAction::Check => browser::StepAction::Check,
                format::StepAction::Type => browser::StepAction::Type,
            };
            steps.push(
                NonPublishingStep::new(action, target, &publish)
                    .map_err(PlanError::Step)?
                    .after_fill(s.after_fill.unwrap_or(false))
                    .following_field(s.after_field.as_ref().map(|n| format!("field:{n}")))
                    .choosing(option)
                    .typing(typed)
                    .optional_for(s.optional.unwrap_or(false).then(|| {
                        Duration::from_millis(s.wait_ms.unwrap_or(DEFAULT_OPTIONAL_WAIT_MS))
                    })),
            );
        }
        let non_publish_writes = self
            .non_publish_writes
            .iter()
            .enumerate()
            .map(|(i, w)| request_pattern(&url_vars, &format!("non_publish_writes[{i}]"), w))
            .collect::<Result<Vec<_>, _>>()?;
        let read_requests = self
            .read_requests
            .iter()
            .enumerate()
            .map(|(i, r)| request_pattern(&url_vars, &format!("read_requests[{i}]"), r))
            .collect::<Result<Vec<_>, _>>()?;
        let live_sockets = self
            .live_sockets
            .iter()
            .map(|l| {
                let e = fill_url("live_sockets", &l.url, &url_vars)?;
                live_socket_endpoint(&e)
                    .map(|mut s| {
                        s.relay = l.relay;
                        s
                    })
                    .map_err(|why| PlanError::Template {
                        what: "live_sockets".into(),
                        why,
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let create_request = request_pattern(
            &url_vars,
            "publish.create_request",
            &self.publish.create_request,
        )?;
        Ok(ProbePlan {
            live_sockets,
            create_request,
            platform: self.platform.clone(),
            contract_hash: self.hash(),
            url,
            allowed_origins,
            steps,
            fields,
            publish,
            masks: self.evidence.mask.clone(),
            non_publish_writes,
            read_requests,
            text_compare: text_rule(self.readback.compare),
            added_text: self.publish.added_text.clone(),
        })
    }
}

/// The host and port a declared live socket's URL names (`scheme://host[:port]`, no path, query or
/// credentials): all the door sees of a socket is `CONNECT host:port`, so that is all a declaration may say.
pub(crate) fn live_socket_endpoint(url: &str) -> Result<browser::door::LiveSocket, String> {
    let u = url::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    if !matches!(u.scheme(), "ws" | "wss" | "http" | "https") {
        return Err(format!(
            "{url:?}: a socket's scheme is ws, wss, http or https"
        ));
    }
    let host = match u.host() {
        Some(url::Host::Domain(d)) => d.to_ascii_lowercase(),
        Some(url::Host::Ipv4(a)) => a.to_string(),
        Some(url::Host::Ipv6(a)) => a.to_string(),
        None => return Err(format!("{url:?} names no host")),
    };
    if !matches!(u.path(), "" | "/") || u.query().is_some() || u.fragment().is_some() {
        return Err(format!(
            "{url:?} has a path or query: the door sees a socket's host and port, never its path"
        ));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(format!("{url:?} carries credentials"));
    }
    let port = u
        .port_or_known_default()
        .ok_or_else(|| format!("{url:?} names no port"))?;
    Ok(browser::door::LiveSocket {
        host,
        port,
        tls: matches!(u.scheme(), "wss" | "https"),
        relay: false,
    })
}

/// The browser's rule for the contract's `readback.compare`.
fn text_rule(c: format::TextCompare) -> browser::TextRule {
    match c {
        format::TextCompare::ExactNfc => browser::TextRule::ExactNfc,
        format::TextCompare::CollapseWhitespace => browser::TextRule::CollapseWhitespace,
        format::TextCompare::Prefix => browser::TextRule::Prefix,
        format::TextCompare::VisibleWords => browser::TextRule::VisibleWords,
    }
}

/// How text goes into a field of `kind`; `None` for a url or choice field, which has no control.
fn edit_kind(kind: FieldKind) -> Option<browser::EditKind> {
    match kind {
        FieldKind::TextInput => Some(browser::EditKind::TextInput),
        FieldKind::Textarea => Some(browser::EditKind::Textarea),
        FieldKind::Contenteditable => Some(browser::EditKind::Contenteditable),
        FieldKind::Url | FieldKind::Choice => None,
    }
}

/// A step's option, text and locator with each `{field:NAME}` (a choice) replaced by the post's value, as
/// it is: the page shows an option's label or holds its value as typed, not URL-encoded. `None` when the
/// step names a choice the post does not give.
#[allow(clippy::type_complexity)]
fn step_with_choices<'a>(
    s: &format::Step,
    choice: &impl Fn(&str) -> Option<&'a str>,
) -> Option<(Option<String>, Option<String>, Option<format::Locator>)> {
    let option = match &s.option {
        Some(o) => Some(crate::template::fill_text(o, choice)?),
        None => None,
    };
    let typed = match &s.text {
        Some(t) => Some(crate::template::fill_text(t, choice)?),
        None => None,
    };
    let at = match &s.locator {
        Some(l) => {
            let mut l = l.clone();
            for st in &mut l.strategies {
                for t in [&mut st.text, &mut st.name].into_iter().flatten() {
                    *t = crate::template::fill_text(t, choice)?;
                }
            }
            Some(l)
        }
        None => None,
    };
    Some((option, typed, at))
}

/// How long an optional step waits for its target when the contract does not say (`wait_ms`): a cookie
/// banner a consent manager draws once its script has loaded.
pub const DEFAULT_OPTIONAL_WAIT_MS: u64 = 1_000;
/// The longest an optional step may wait: every post pays it whenever the target is not shown.
pub const MAX_OPTIONAL_WAIT_MS: u64 = 10_000;

/// How long after the press the create request must arrive when the contract does not say
/// (`publish.create_wait_ms`).
pub const DEFAULT_CREATE_WAIT_MS: u64 = 5_000;

/// Everything the publish flow needs from a contract, in browser terms.
#[derive(Debug, Clone)]
pub struct PublishPlan {
    /// Compose page, steps, fields, publish control, masks (same as a probe's).
    pub probe: ProbePlan,
    /// The create request pressing publish causes.
    pub create: browser::CreatePattern,
    /// How long after the press the create request must arrive.
    pub create_wait: Duration,
    /// Who sends it.
    pub transport: browser::TransportMode,
    /// Statuses that prove nothing was created.
    pub rejection_statuses: Vec<u16>,
    /// Statuses that say nothing was created now, and to try later (a rate limit).
    pub retry_later_statuses: Vec<u16>,
    /// How success shows and where the id comes from.
    pub success: Vec<browser::Success>,
    /// How to find the post again.
    pub readback: browser::ReadbackPlan,
    /// Where the compose page shows who is logged in (`compose.signed_in_as`).
    pub signed_in_as: Option<super::SignedInAs>,
}

impl Contract {
    /// `{base_url}` and every field's `{field:NAME}` (format 1: bare `{NAME}` too) with its posted value,
    /// empty when the post has none.
    fn url_vars(&self, base: &str, values: &PostValues) -> Vec<(String, String)> {
        let mut vars = vec![("base_url".to_string(), base.to_string())];
        for f in &self.compose.fields {
            let v = values.get(&f.name).cloned().unwrap_or_default();
            vars.push((format!("field:{}", f.name), v.clone()));
            if self.format < 2 {
                vars.push((f.name.clone(), v));
            }
        }
        vars
    }

    /// Build the publish plan for the platform at `base_url`, with no post's values (what reconcile and the
    /// checks need; the read-back fills a post's fields per intent).
    pub fn publish_plan(&self, base_url: &str) -> Result<PublishPlan, PlanError> {
        self.publish_plan_for(base_url, &PostValues::new())
    }

    /// The publish plan for one post: `values` are its field values by field name, the body under
    /// [`Contract::body_field`]. Field placeholders of the compose URL and the create request's URL are filled
    /// (each encoded for where it stands), success signals pinned to a field get its value, and the read-back
    /// keeps the values for its own templates.
    pub fn publish_plan_for(
        &self,
        base_url: &str,
        values: &PostValues,
    ) -> Result<PublishPlan, PlanError> {
        let probe = self.probe_plan_for(base_url, values)?;
        let base = Contract::base_origin(base_url)?;
        let url_vars = self.url_vars(&base, values);
        let regex = |what: &str, r: &str| {
            regex::Regex::new(r).map_err(|e| PlanError::Template {
                what: what.into(),
                why: e.to_string(),
            })
        };
        let mut create = request_pattern(
            &url_vars,
            "publish.create_request",
            &self.publish.create_request,
        )?;
        create.carries_post = self.publish.create_carries_post.unwrap_or(true);
        let mut success = Vec::new();
        for (i, s) in self.success.iter().enumerate() {
            let what = format!("success[{i}]");
            let field_value = |name: &Option<String>| {
                name.as_ref()
                    .map(|n| values.get(n).cloned().unwrap_or_default())
            };
            let rule = if let Some(r) = &s.url_regex {
                browser::SuccessRule::UrlRegex(regex(&what, r)?)
            } else if let Some(field) = &s.json_field {
                browser::SuccessRule::ResponseJson {
                    status: s.response_status,
                    field: field.clone(),
                }
            } else if let Some(status) = s.response_status {
                // The status alone (a platform whose create answer carries no id).
                browser::SuccessRule::ResponseStatus { status }
            } else if let Some(l) = &s.element {
                browser::SuccessRule::Element {
                    css: css_only(l, &what)?,
                    id_attribute: s.id_attribute.clone(),
                    text: field_value(&s.element_text_field),
                }
            } else if let Some(r) = &s.socket_answer {
                browser::SuccessRule::SocketAnswer(regex(&what, r)?)
            } else if let Some(sy) = &s.synced {
                browser::SuccessRule::Synced {
                    css: sy.css.clone(),
                    attribute: sy.attribute.clone(),
                    class: sy.class.clone(),
                    present: sy.when == format::SyncedWhen::Appears,
                }
            } else {
                continue;
            };
            success.push(browser::Success {
                rule,
                id: field_value(&s.id_from_field),
            });
        }
        let rb = &self.readback;
        // `{base_url}` now; `{id}`, `{text}` and `{field:NAME}` when a post is looked for.
        let base_only =
            |what: &str, t: &str| fill_url(what, t, &[("base_url".to_string(), base.clone())]);
        let readback = browser::ReadbackPlan {
            permalink: base_only("readback.permalink", &rb.permalink)?,
            search: base_only("readback.search", &rb.search)?,
            item_css: css_only(&rb.item, "readback.item")?,
            text_css: rb.text.clone(),
            id_attribute: rb.id_attribute.clone(),
            id_from_link: match &rb.id_from_link {
                Some(r) => Some(regex("readback.id_from_link", r)?),
                None => None,
            },
            id_text_css: rb.id_text.clone(),
            link_css: rb.link.clone(),
            text_skip: rb.text_skip.clone(),
            compare: text_rule(rb.compare),
            added_text: self.publish.added_text.clone(),
            propagation_ms: rb.propagation_ms,
            masks: self.evidence.mask.clone(),
            author_css: rb.author.clone(),
            author_attribute: rb.author_attribute.clone(),
            author_pattern: match &rb.author_pattern {
                Some(r) => Some(regex("readback.author_pattern", r)?),
                None => None,
            },
            viewer_labels: rb
                .viewer_labels
                .iter()
                .map(|l| crate::browser::readback::normalize_handle(l))
                .collect(),
            // Per account: the publish flow and the lookup fill it in from the account's record.
            handle: None,
            fields: values.clone(),
            body_field: self.body_field().to_string(),
            allowed_origins: probe.allowed_origins.clone(),
            marker_field: rb.marker_field.clone(),
            marker_css: rb.marker.clone(),
            // Per intent: the publish flow and the lookup set it from the delivery key.
            marker: None,
        };
        Ok(PublishPlan {
            probe,
            create,
            create_wait: Duration::from_millis(
                self.publish
                    .create_wait_ms
                    .unwrap_or(DEFAULT_CREATE_WAIT_MS),
            ),
            transport: match self.publish.transport {
                format::Transport::Harness => browser::TransportMode::Harness,
                // Behind oncepost's door Chromium has no route out: only the harness can send.
                format::Transport::Browser => {
                    return Err(PlanError::Template {
                        what: "publish.transport".into(),
                        why: "\"browser\" is not supported: Chromium has no route out of oncepost's network \
                              door, so only oncepost sends the create request (and Chromium re-sends a POST \
                              on a closed connection by itself: 2-3 copies measured); use \"harness\""
                            .into(),
                    });
                }
            },
            // Validation already refuses anything but 4xx; filtering again keeps a 5xx (which may follow a
            // commit) from ever settling `failed`, even for a contract built without `Contract::load`.
            rejection_statuses: self
                .publish
                .rejection_statuses
                .iter()
                .copied()
                .filter(|s| (400..=499).contains(s))
                .collect(),
            retry_later_statuses: self
                .publish
                .retry_later_statuses
                .iter()
                .copied()
                .filter(|s| (400..=499).contains(s))
                .collect(),
            success,
            readback,
            signed_in_as: self.compose.signed_in_as.clone(),
        })
    }
}

/// A post's field values by contract field name (the body under the body field).
pub type PostValues = std::collections::BTreeMap<String, String>;

/// `template` with `vars` filled in, each value encoded for where it stands ([`crate::template`]).
fn fill_url(what: &str, template: &str, vars: &[(String, String)]) -> Result<String, PlanError> {
    let refs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    crate::template::fill(template, &refs).map_err(|why| PlanError::Template {
        what: what.into(),
        why,
    })
}

/// A request matcher of the contract (the create request, a declared write) as the guard matches it.
fn request_pattern(
    vars: &[(String, String)],
    what: &str,
    m: &format::RequestMatcher,
) -> Result<browser::CreatePattern, PlanError> {
    let regex = |key: &str, r: &str| {
        regex::Regex::new(r).map_err(|e| PlanError::Template {
            what: format!("{what}.{key}"),
            why: e.to_string(),
        })
    };
    let url = match (&m.url, &m.url_regex) {
        (Some(u), _) if m.method == browser::door::socket::WEBSOCKET => {
            browser::UrlMatch::Exact(socket_url(&fill_url(&format!("{what}.url"), u, vars)?))
        }
        (Some(u), _) => browser::UrlMatch::Exact(fill_url(&format!("{what}.url"), u, vars)?),
        (None, Some(r)) => browser::UrlMatch::Regex(regex("url_regex", r)?),
        (None, None) => {
            return Err(PlanError::Template {
                what: what.into(),
                why: "needs url or url_regex".into(),
            });
        }
    };
    let optional = |key: &str, r: &Option<String>| r.as_deref().map(|r| regex(key, r)).transpose();
    let mut pattern = browser::CreatePattern::new(&m.method, url);
    pattern.exclude = optional("not_url_regex", &m.not_url_regex)?;
    pattern.body = optional("body_regex", &m.body_regex)?;
    pattern.not_body = optional("not_body_regex", &m.not_body_regex)?;
    for (name, r) in &m.headers {
        pattern
            .headers
            .push((name.clone(), regex(&format!("headers.{name}"), r)?));
    }
    Ok(pattern)
}

/// A WebSocket's URL as the door's relay writes the socket it judges: `ws://` as `http://` and `wss://` as
/// `https://` (what `{base_url}` gives), through `url` (a default port left out).
fn socket_url(u: &str) -> String {
    match url::Url::parse(u) {
        Ok(mut parsed) if matches!(parsed.scheme(), "ws" | "wss") => {
            let scheme = if parsed.scheme() == "ws" {
                "http"
            } else {
                "https"
            };
            let _ = parsed.set_scheme(scheme);
            parsed.to_string()
        }
        Ok(parsed) => parsed.to_string(),
        Err(_) => u.to_string(),
    }
}

/// Read-back and success elements are found by CSS (the pages are read, never acted on).
fn css_only(l: &format::Locator, what: &str) -> Result<Vec<String>, PlanError> {
    let css: Vec<String> = l.strategies.iter().filter_map(|s| s.css.clone()).collect();
    if css.is_empty() {
        return Err(PlanError::Template {
            what: what.into(),
            why: "read-back and success element locators need at least one css strategy".into(),
        });
    }
    Ok(css)
}

#[cfg(test)]
mod tests {
    use super::live_socket_endpoint;

    #[test]
    fn a_live_socket_is_the_host_and_port_a_proxied_socket_shows() {
        let at = |u: &str| live_socket_endpoint(u).map(|s| (s.host, s.port));
        assert_eq!(
            at("wss://Stream.Example.social"),
            Ok(("stream.example.social".into(), 443))
        );
        assert_eq!(
            at("ws://stream.example.social"),
            Ok(("stream.example.social".into(), 80))
        );
        assert_eq!(at("http://127.0.0.1:8080/"), Ok(("127.0.0.1".into(), 8080)));
        assert_eq!(at("ws://[::1]:9"), Ok(("::1".into(), 9)));
        for bad in [
            "wss://a.example/stream",
            "wss://a.example/?x=1",
            "wss://u:p@a.example",
            "ftp://a.example",
            "not a url",
        ] {
            assert!(at(bad).is_err(), "{bad}");
        }
    }
}
