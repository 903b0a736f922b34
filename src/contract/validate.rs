//! Semantic checks on a contract that parsed: everything serde cannot express.
//!
//! Each finding names its key path; [`super::Contract::parse`] turns paths into positions. All checks run,
//! so one `contract check` lists every problem at once.
use std::collections::HashSet;

use regex::Regex;

use super::expand_template;
use super::format::*;
use super::plan::live_socket_endpoint;
use super::spans::KeyPath;
use crate::browser::door::socket::WEBSOCKET;

/// A problem found by a semantic check.
pub struct Finding {
    /// Where.
    pub path: KeyPath,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub help: String,
}

/// ARIA roles a `role` strategy may name (WAI-ARIA 1.2 widget, structure and landmark roles).
pub const KNOWN_ROLES: &[&str] = &[
    "alert",
    "alertdialog",
    "application",
    "article",
    "banner",
    "button",
    "cell",
    "checkbox",
    "columnheader",
    "combobox",
    "complementary",
    "contentinfo",
    "definition",
    "dialog",
    "document",
    "feed",
    "figure",
    "form",
    "grid",
    "gridcell",
    "group",
    "heading",
    "img",
    "link",
    "list",
    "listbox",
    "listitem",
    "log",
    "main",
    "marquee",
    "math",
    "menu",
    "menubar",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "navigation",
    "none",
    "note",
    "option",
    "presentation",
    "progressbar",
    "radio",
    "radiogroup",
    "region",
    "row",
    "rowgroup",
    "rowheader",
    "scrollbar",
    "search",
    "searchbox",
    "separator",
    "slider",
    "spinbutton",
    "status",
    "switch",
    "tab",
    "table",
    "tablist",
    "tabpanel",
    "term",
    "textbox",
    "timer",
    "toolbar",
    "tooltip",
    "tree",
    "treegrid",
    "treeitem",
];

const SAMPLE_BASE: &str = "http://127.0.0.1:9";

/// `template` with the sample base URL and `x` for every other placeholder.
fn sample_url(template: &str) -> String {
    static PLACEHOLDER: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r"\{[^{}]*\}").expect("a valid regex"));
    PLACEHOLDER
        .replace_all(&template.replace("{base_url}", SAMPLE_BASE), "x")
        .into_owned()
}

/// Whether a GET create request's URL rule matches `url`, as far as a check can tell from templates: a
/// `url_regex` over the whole URL, a `url` template over the URL without its query.
fn get_create_matches(create: &RequestMatcher, url: &str) -> bool {
    if let Some(re) = create.url_regex.as_deref().and_then(|r| Regex::new(r).ok()) {
        let excluded = create
            .not_url_regex
            .as_deref()
            .and_then(|r| Regex::new(r).ok())
            .is_some_and(|x| x.is_match(url));
        return re.is_match(url) && !excluded;
    }
    create
        .url
        .as_deref()
        .is_some_and(|t| sample_url(t) == url.split(['?', '#']).next().unwrap_or(url))
}

struct Checker {
    found: Vec<Finding>,
}

impl Checker {
    fn err(&mut self, path: KeyPath, message: impl Into<String>, help: impl Into<String>) {
        self.found.push(Finding {
            path,
            message: message.into(),
            help: help.into(),
        });
    }

    fn template(&mut self, path: KeyPath, t: &str, vars: &[&str], must: &[&str]) {
        let pairs: Vec<(&str, &str)> = vars.iter().map(|v| (*v, "x")).collect();
        let pairs: Vec<(&str, &str)> = pairs
            .into_iter()
            .map(|(k, v)| {
                if k == "base_url" {
                    (k, SAMPLE_BASE)
                } else {
                    (k, v)
                }
            })
            .collect();
        match expand_template(t, &pairs) {
            Err(e) => self.err(
                path,
                e,
                format!("placeholders allowed here: {}", braces(vars)),
            ),
            Ok(expanded) => {
                for m in must {
                    if !t.contains(&format!("{{{m}}}")) {
                        self.err(
                            path.clone(),
                            format!("template lacks {{{m}}}"),
                            format!("include {{{m}}}"),
                        );
                    }
                }
                if url::Url::parse(&expanded).is_err() {
                    self.err(
                        path,
                        format!("{t:?} does not expand to an absolute URL"),
                        "start with {base_url} or a full https:// URL",
                    );
                }
            }
        }
    }

    fn regex(&mut self, path: KeyPath, r: &str, need_id: bool) -> Option<Regex> {
        match Regex::new(r) {
            Err(e) => {
                self.err(
                    path,
                    format!("regex does not compile: {e}"),
                    "Rust regex syntax; use a TOML literal string '...' to avoid double escaping",
                );
                None
            }
            Ok(re) => {
                if need_id && !re.capture_names().any(|n| n == Some("id")) {
                    self.err(
                        path,
                        "regex has no named group `id`",
                        "capture the post id with (?P<id>...)",
                    );
                }
                Some(re)
            }
        }
    }

    /// A regex that must compile and capture the handle in a group `handle`.
    fn handle_regex(&mut self, path: KeyPath, r: &str) {
        if let Some(re) = self.regex(path.clone(), r, false)
            && !re.capture_names().any(|n| n == Some("handle"))
        {
            self.err(
                path,
                "regex has no named group `handle`",
                "capture the handle with (?P<handle>...), e.g. '^/u/(?P<handle>[^/]+)$'",
            );
        }
    }

    fn locator(&mut self, path: KeyPath, l: &Locator) {
        if l.strategies.is_empty() {
            self.err(
                path.key("strategies"),
                "a locator needs at least one strategy",
                "add e.g. { css = \"#id\" } or { role = \"button\", name = \"Publish\" }",
            );
        }
        for (i, s) in l.strategies.iter().enumerate() {
            let p = path.key("strategies").index(i);
            let kinds = [s.css.is_some(), s.text.is_some(), s.role.is_some()]
                .iter()
                .filter(|b| **b)
                .count();
            if kinds != 1 {
                self.err(
                    p.clone(),
                    "a strategy needs exactly one of css, text, role",
                    "split it into separate strategies; they are tried in order",
                );
            }
            if s.exact.is_some() && s.text.is_none() {
                self.err(
                    p.key("exact"),
                    "`exact` only applies to `text`",
                    "remove it or add text = \"...\"",
                );
            }
            if s.name.is_some() && s.role.is_none() {
                self.err(
                    p.key("name"),
                    "`name` (accessible name) only applies to `role`",
                    "add role = \"...\"",
                );
            }
            if let Some(css) = &s.css
                && css.trim().is_empty()
            {
                self.err(
                    p.key("css"),
                    "empty CSS selector",
                    "write a selector such as #publish",
                );
            }
            if let Some(t) = &s.text
                && t.trim().is_empty()
            {
                self.err(
                    p.key("text"),
                    "empty text",
                    "give the visible text to match",
                );
            }
            if let Some(r) = &s.role
                && !KNOWN_ROLES.contains(&r.as_str())
            {
                self.err(
                    p.key("role"),
                    format!("unknown ARIA role {r:?}"),
                    "use a WAI-ARIA role such as button, textbox, link",
                );
            }
        }
        for (i, f) in l.frames.iter().enumerate() {
            if f.trim().is_empty() {
                self.err(
                    path.key("frames").index(i),
                    "empty iframe selector",
                    "give a CSS selector of the <iframe>",
                );
            }
        }
    }

    fn request(&mut self, path: KeyPath, r: &RequestMatcher, vars: &[&str]) {
        if !METHODS.contains(&r.method.as_str()) {
            self.err(
                path.key("method"),
                format!("unknown HTTP method {:?}", r.method),
                format!("one of {}", METHODS.join(", ")),
            );
        }
        match (&r.url, &r.url_regex) {
            (Some(u), None) => self.template(path.key("url"), u, vars, &[]),
            (None, Some(re)) => {
                self.regex(path.key("url_regex"), re, false);
            }
            _ => self.err(
                path.clone(),
                "give exactly one of url, url_regex",
                "url is a template matched without the query; url_regex matches the full URL",
            ),
        }
        if let Some(re) = &r.not_url_regex {
            self.regex(path.key("not_url_regex"), re, false);
        }
        if let Some(re) = &r.body_regex {
            self.regex(path.key("body_regex"), re, false);
        }
        if let Some(re) = &r.not_body_regex {
            self.regex(path.key("not_body_regex"), re, false);
        }
        for (name, re) in &r.headers {
            let p = path.key("headers").key(name);
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                self.err(
                    p.clone(),
                    format!("{name:?} is not a header name"),
                    "letters, digits and '-', e.g. \"x-requested-with\"",
                );
            }
            self.regex(p, re, false);
        }
    }
}

/// A declared request (a non-publish write, a read request) must never be the create request: not the same
/// method and URL unless both tell themselves apart by what is inside, and, when the create request is told
/// apart by its headers or body, never a rule that is not (a publish whose body the create rule misses would
/// be let through as this).
/// A WebSocket message rule (`method = "WEBSOCKET"`, format 2): named by its socket's `url` (the relay sees
/// the path inside the tunnel), `ws://` or `wss://` (or `{base_url}`), no headers (a message has none).
fn socket_rule(k: &mut Checker, c: &Contract, p: KeyPath, r: &RequestMatcher, what: &str) {
    if c.format < 2 {
        k.err(
            p.key("method"),
            format!("a {what} on a WebSocket needs format = 2"),
            "set format = 2",
        );
    }
    if !r.headers.is_empty() {
        k.err(
            p.key("headers"),
            "a WebSocket message has no headers",
            "tell messages apart by body_regex (the message as the page wrote it)",
        );
    }
    let Some(u) = &r.url else {
        k.err(
            p.key("url_regex"),
            format!("a {what} on a WebSocket is named by its socket's url"),
            "url = \"{base_url}/socket/path\" or \"ws://host:port/path\" (matched without the query)",
        );
        return;
    };
    let sample = sample_url(u);
    if !url::Url::parse(&sample)
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https" | "ws" | "wss"))
    {
        k.err(
            p.key("url"),
            format!("{sample} is not a WebSocket URL"),
            "wss://host:port/path, ws://host:port/path, or {base_url}/path",
        );
    }
}

/// A declared WebSocket message (a non-publish or a read message): a socket rule, on a socket oncepost
/// relays, told apart by its body (every other message on the socket is never sent).
fn declared_message(
    k: &mut Checker,
    c: &Contract,
    p: KeyPath,
    r: &RequestMatcher,
    what: &str,
    relayed_sockets: bool,
) {
    socket_rule(k, c, p.clone(), r, what);
    if !relayed_sockets {
        k.err(
            p.key("method"),
            "WebSocket messages are declared only for a socket oncepost relays",
            "the create's socket (create_request.method = \"WEBSOCKET\") or a [[live_sockets]] entry with \
             relay = true; any other socket is refused whole",
        );
    }
    if r.body_regex.is_none() {
        k.err(
            p,
            format!("a {what} needs its body_regex"),
            "say which messages these are (e.g. body_regex = '^\\{\"type\":\"subscribe\"'): every other \
             message on the socket is never sent",
        );
    }
}

fn apart_from_create(
    k: &mut Checker,
    p: KeyPath,
    w: &RequestMatcher,
    create: &RequestMatcher,
    what: &str,
) {
    let told_apart_inside = looks_inside(create) && names_inside(w);
    if w.method == create.method
        && !told_apart_inside
        && ((w.url.is_some() && w.url == create.url)
            || (w.url_regex.is_some() && w.url_regex == create.url_regex))
    {
        k.err(
            p,
            format!("this {what} is the create request"),
            format!(
                "the create request is never let through as a {what}; narrow the URL, add not_url_regex, or \
                 tell the two apart by body_regex/headers on both"
            ),
        );
    } else if w.method == create.method && looks_inside(create) && !names_inside(w) {
        k.err(
            p,
            format!("the create request is told apart by its headers or body, but this {what} is not"),
            format!(
                "give this {what} its own body_regex or headers: otherwise a publish whose body the create \
                 request's rule misses would be let through as a {what}"
            ),
        );
    }
}

/// Whether a request matcher looks at headers or the body at all.
fn looks_inside(r: &RequestMatcher) -> bool {
    !r.headers.is_empty() || r.body_regex.is_some() || r.not_body_regex.is_some()
}

/// Whether a request matcher positively names what its headers or body must say.
fn names_inside(r: &RequestMatcher) -> bool {
    !r.headers.is_empty() || r.body_regex.is_some()
}

fn braces(vars: &[&str]) -> String {
    vars.iter()
        .map(|v| format!("{{{v}}}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Run every check; an empty result means the contract is valid.
pub fn validate(c: &Contract) -> Vec<Finding> {
    let mut k = Checker { found: Vec::new() };
    let root = KeyPath::default();
    if !FORMAT_VERSIONS.contains(&c.format) {
        k.err(
            root.key("format"),
            format!("unsupported format {}", c.format),
            format!(
                "this oncepost reads format = 1 or 2 (`oncepost contract migrate FILE` writes {FORMAT_VERSION})"
            ),
        );
    }
    let v2 = c.format >= 2;
    // `{field:NAME}` placeholders exist from format 2 on, in every URL template.
    let field_vars: Vec<String> = if v2 {
        c.compose
            .fields
            .iter()
            .map(|f| format!("field:{}", f.name))
            .collect()
    } else {
        Vec::new()
    };
    let with_fields = |base: &[&'static str]| -> Vec<String> {
        base.iter()
            .map(|s| s.to_string())
            .chain(field_vars.iter().cloned())
            .collect()
    };
    let url_vars = with_fields(&["base_url"]);
    let url_vars: Vec<&str> = url_vars.iter().map(String::as_str).collect();
    let field_names: HashSet<&str> = c.compose.fields.iter().map(|f| f.name.as_str()).collect();
    let format2 = |k: &mut Checker, path: KeyPath, key: &str| {
        if !v2 {
            k.err(
                path,
                format!("{key} needs format = 2"),
                "set format = 2 (`oncepost contract migrate FILE` rewrites a format 1 file)",
            );
        }
    };
    let known_field = |k: &mut Checker, path: KeyPath, name: &str| {
        if !field_names.contains(name) {
            k.err(
                path,
                format!("no compose field named {name:?}"),
                "name one of the [[compose.fields]]",
            );
        }
    };
    if let Some(s) = &c.compose.signed_in_as {
        let p = root.key("compose").key("signed_in_as");
        format2(&mut k, p.clone(), "signed_in_as");
        if s.css.trim().is_empty() {
            k.err(
                p.key("css"),
                "empty signed_in_as selector",
                "CSS selector of the element showing the logged-in user (e.g. \"#user-menu .name\")",
            );
        }
        if s.attribute.as_ref().is_some_and(|a| a.trim().is_empty()) {
            k.err(
                p.key("attribute"),
                "empty attribute name",
                "an attribute of that element holding the user's handle, or none to read its text",
            );
        }
        if let Some(r) = &s.pattern {
            k.handle_regex(p.key("pattern"), r);
        }
    }
    if let Some(b) = &c.compose.body_field {
        format2(&mut k, root.key("compose").key("body_field"), "body_field");
        known_field(&mut k, root.key("compose").key("body_field"), b);
    } else if v2 && !field_names.contains("text") {
        k.err(
            root.key("compose").key("body_field"),
            "no field carries the post's body",
            "name the body field (body_field = \"NAME\") or declare a field named \"text\"",
        );
    }
    for (i, s) in c.compose.steps.iter().enumerate() {
        let p = root.key("compose").key("steps").index(i);
        if s.after_fill.is_some() {
            format2(&mut k, p.key("after_fill"), "after_fill");
        }
        if let Some(name) = &s.after_field {
            format2(&mut k, p.key("after_field"), "after_field");
            match c.compose.fields.iter().find(|f| &f.name == name) {
                None => k.err(
                    p.key("after_field"),
                    format!("no compose field named {name:?}"),
                    "name the field the step follows (a wizard's \"Next\" after its page's last field)",
                ),
                Some(f) if !f.kind.is_typed() => k.err(
                    p.key("after_field"),
                    format!(
                        "field {name:?} is a {} field, which is never filled",
                        kind_name(f.kind)
                    ),
                    "name a field with a control",
                ),
                Some(_) => {}
            }
            if s.after_fill == Some(true) {
                k.err(
                    p.key("after_field"),
                    "a step runs after one field or after the whole fill, not both",
                    "keep after_field (right after that field) or after_fill (after every field)",
                );
            }
        }
        if s.option.is_some() {
            format2(&mut k, p.key("option"), "option");
        }
        if s.optional.is_some() {
            format2(&mut k, p.key("optional"), "optional");
        }
        match (s.optional.unwrap_or(false), s.wait_ms) {
            (false, Some(_)) => k.err(
                p.key("wait_ms"),
                "wait_ms is how long an optional step waits for its target",
                "add optional = true (the page shows the target only sometimes), or remove wait_ms",
            ),
            (true, Some(ms)) if ms > super::plan::MAX_OPTIONAL_WAIT_MS => k.err(
                p.key("wait_ms"),
                format!(
                    "wait_ms = {ms} is more than {} (every post whose page does not show the target waits it)",
                    super::plan::MAX_OPTIONAL_WAIT_MS
                ),
                "wait_ms = 1000 covers a banner a script draws after the page loads",
            ),
            _ => {}
        }
        // `{field:NAME}` in the option or a locator's text or name picks the post's own choice.
        let refs: Vec<(KeyPath, &str)> = step_texts(s)
            .into_iter()
            .flat_map(|(at, t)| {
                let path = match at {
                    StepText::Own(key) => p.key(key),
                    StepText::Strategy(j, key) => {
                        p.key("locator").key("strategies").index(j).key(key)
                    }
                };
                crate::template::text_field_refs(t)
                    .into_iter()
                    .map(move |n| (path.clone(), n))
            })
            .collect();
        if s.action == StepAction::Type {
            format2(&mut k, p.key("action"), "action = \"type\"");
        }
        match (s.action == StepAction::Type, &s.text) {
            (true, None) => k.err(
                p.key("text"),
                "a type step names no text",
                "text = \"{field:category}\" types the post's choice into a list's search box",
            ),
            (true, Some(t)) if t.trim().is_empty() => k.err(
                p.key("text"),
                "a type step's text is empty",
                "text = \"what to type\"",
            ),
            (false, Some(_)) => k.err(
                p.key("text"),
                "only a type step types a text",
                "remove text, or make the step action = \"type\"",
            ),
            _ => {}
        }
        for (path, name) in refs {
            format2(&mut k, path.clone(), "{field:NAME} in a step");
            match c.compose.fields.iter().find(|f| f.name == name) {
                None => k.err(
                    path,
                    format!("{{field:{name}}}: no compose field named {name:?}"),
                    "declare it: [[compose.fields]] name = \"...\" kind = \"choice\"",
                ),
                Some(f) if f.kind != FieldKind::Choice => k.err(
                    path,
                    format!(
                        "{{field:{name}}} names a {} field: a step picks only a choice field's value",
                        kind_name(f.kind)
                    ),
                    format!("declare {name:?} with kind = \"choice\" (no locator: a step picks it)"),
                ),
                Some(_) => {}
            }
        }
        match (s.action == StepAction::Select, &s.option) {
            (true, None) => k.err(
                p.key("option"),
                "a select step names no option",
                "option = \"the value or label to choose\"",
            ),
            (true, Some(o)) if o.trim().is_empty() => k.err(
                p.key("option"),
                "a select step's option is empty",
                "option = \"the value or label to choose\"",
            ),
            (false, Some(_)) => k.err(
                p.key("option"),
                "only a select step chooses an option",
                "remove option, or make the step action = \"select\"",
            ),
            _ => {}
        }
    }
    for (i, f) in c.compose.fields.iter().enumerate() {
        let p = root.key("compose").key("fields").index(i);
        if f.fill.is_some() {
            format2(&mut k, p.key("fill"), "fill");
        }
        if let Some(n) = f.newlines {
            format2(&mut k, p.key("newlines"), "newlines");
            if n == Newlines::Keys && f.kind != FieldKind::Contenteditable {
                k.err(
                    p.key("newlines"),
                    format!(
                        "newlines = \"keys\" is for contenteditable editors, not a {} field",
                        kind_name(f.kind)
                    ),
                    "remove newlines: a textarea takes line breaks as typed text, and Enter in an input submits its form",
                );
            }
        }
        if let Some(l) = &f.shown_in {
            format2(&mut k, p.key("shown_in"), "shown_in");
            if !f.kind.is_typed() {
                k.err(
                    p.key("shown_in"),
                    format!(
                        "a {} field is never typed, so it shows nowhere",
                        kind_name(f.kind)
                    ),
                    "remove shown_in",
                );
            } else {
                k.locator(p.key("shown_in"), l);
            }
        }
    }
    if c.readback.compare == TextCompare::VisibleWords {
        format2(
            &mut k,
            root.key("readback").key("compare"),
            "compare = \"visible-words\"",
        );
    }
    if c.publish.create_carries_post.is_some() {
        format2(
            &mut k,
            root.key("publish").key("create_carries_post"),
            "create_carries_post",
        );
    }
    if c.publish.create_wait_ms.is_some() {
        format2(
            &mut k,
            root.key("publish").key("create_wait_ms"),
            "create_wait_ms",
        );
    }
    if c.platform.is_empty()
        || !c
            .platform
            .chars()
            .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-')
    {
        k.err(
            root.key("platform"),
            format!("bad platform name {:?}", c.platform),
            "use lower-case letters, digits and '-'",
        );
    }
    if c.origins.allowed.is_empty() {
        k.err(
            root.key("origins").key("allowed"),
            "no allowed origins",
            "add \"{base_url}\" or the site's https origin",
        );
    }
    for (i, o) in c.origins.allowed.iter().enumerate() {
        k.template(
            root.key("origins").key("allowed").index(i),
            o,
            &["base_url"],
            &[],
        );
    }

    let compose = root.key("compose");
    let mut names = HashSet::new();
    if c.compose.fields.is_empty() {
        k.err(
            compose.key("fields"),
            "no compose fields",
            "declare at least the text field",
        );
    }
    for (i, f) in c.compose.fields.iter().enumerate() {
        let p = compose.key("fields").index(i);
        if f.name.is_empty()
            || !f
                .name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
        {
            k.err(
                p.key("name"),
                format!("bad field name {:?}", f.name),
                "use letters, digits and '_'",
            );
        }
        if !names.insert(f.name.as_str()) {
            k.err(
                p.key("name"),
                format!("field {:?} declared twice", f.name),
                "field names must be unique",
            );
        }
        match (f.kind, &f.locator) {
            (FieldKind::Url, None) => {
                if !v2 {
                    k.err(
                        p.key("kind"),
                        "kind = \"url\" needs format = 2",
                        "set format = 2 (`oncepost contract migrate FILE` rewrites a format 1 file)",
                    );
                }
                if f.fill.is_some() {
                    k.err(
                        p.key("fill"),
                        "a url field is never typed, so it has no fill",
                        "remove fill",
                    );
                }
                if !c.compose.url.contains(&format!("{{field:{}}}", f.name)) {
                    k.err(
                        p.key("kind"),
                        format!("url field {:?} is not in compose.url", f.name),
                        format!(
                            "a url field only places its value in URLs: put {{field:{}}} in compose.url",
                            f.name
                        ),
                    );
                }
            }
            (FieldKind::Url, Some(_)) => k.err(
                p.key("locator"),
                "a url field has no locator",
                "remove the locator (the value only goes into URL templates), or give the field a control kind",
            ),
            (FieldKind::Choice, None) => {
                format2(&mut k, p.key("kind"), "kind = \"choice\"");
                if f.fill.is_some() {
                    k.err(
                        p.key("fill"),
                        "a choice field is never typed, so it has no fill",
                        "remove fill",
                    );
                }
                let placeholder = format!("{{field:{}}}", f.name);
                let picked = c.compose.url.contains(&placeholder)
                    || c.compose.steps.iter().any(|s| {
                        step_texts(s).into_iter().any(|(_, t)| {
                            crate::template::text_field_refs(t).contains(&f.name.as_str())
                        })
                    });
                if !picked {
                    k.err(
                        p.key("kind"),
                        format!("choice field {:?} is picked by no step", f.name),
                        format!(
                            "a step picks it: option = \"{placeholder}\" on a select step, or name = \"{placeholder}\" in a click step's locator"
                        ),
                    );
                }
            }
            (FieldKind::Choice, Some(_)) => k.err(
                p.key("locator"),
                "a choice field has no locator",
                "remove the locator: a step picks the value (option = \"{field:NAME}\", or a locator's text or name)",
            ),
            (_, Some(l)) => k.locator(p.key("locator"), l),
            (_, None) => k.err(
                p.key("locator"),
                "missing locator",
                "locator = { strategies = [{ css = \"...\" }] }; only kind = \"url\" and \"choice\" have none",
            ),
        }
    }
    // Fields with no control: nothing is typed into them and no step acts on them.
    let url_fields: HashSet<&str> = c
        .compose
        .fields
        .iter()
        .filter(|f| !f.kind.is_typed())
        .map(|f| f.name.as_str())
        .collect();
    for (what, name) in [
        ("compose.body_field", Some(c.body_field())),
        ("readback.marker_field", c.readback.marker_field.as_deref()),
    ] {
        if let Some(name) = name
            && url_fields.contains(name)
        {
            let path = match what {
                "compose.body_field" => compose.key("body_field"),
                _ => root.key("readback").key("marker_field"),
            };
            k.err(
                path,
                format!("{what} {name:?} is a field without a control, which is never typed"),
                "name a field with a control (textarea, text_input, contenteditable)",
            );
        }
    }
    let mut vars: Vec<&str> = url_vars.clone();
    if !v2 {
        // Format 1 named fields bare (`{title}`); format 2 says `{field:title}`.
        vars.extend(c.compose.fields.iter().map(|f| f.name.as_str()));
    }
    k.template(compose.key("url"), &c.compose.url, &vars, &[]);

    for (i, s) in c.compose.steps.iter().enumerate() {
        let p = compose.key("steps").index(i);
        if !s.non_publishing {
            k.err(
                p.key("non_publishing"),
                "steps must be declared non_publishing = true",
                "a step that can publish does not belong here; the publish control is [publish]",
            );
        }
        match (&s.field, &s.locator) {
            (Some(name), None) => {
                if !names.contains(name.as_str()) {
                    k.err(
                        p.key("field"),
                        format!("no compose field named {name:?}"),
                        "name one of [[compose.fields]]",
                    );
                } else if url_fields.contains(name.as_str()) {
                    k.err(
                        p.key("field"),
                        format!("field {name:?} has no control to act on (a url or choice field)"),
                        "target a field with a locator, or give the step its own locator",
                    );
                }
            }
            (None, Some(l)) => {
                k.locator(p.key("locator"), l);
                if l.strategies == c.publish.locator.strategies {
                    k.err(
                        p.key("locator"),
                        "this step targets the publish control",
                        "steps must never touch the publish control",
                    );
                }
            }
            _ => k.err(
                p.clone(),
                "give exactly one of field, locator",
                "field = \"text\" targets a compose field",
            ),
        }
        if s.action == StepAction::Click && s.why.trim().is_empty() {
            k.err(
                p.key("action"),
                "a click step needs `why` it cannot publish",
                "say what the click opens and why it sends nothing",
            );
        }
        if s.action == StepAction::Check {
            format2(&mut k, p.key("action"), "action = \"check\"");
            // A check is a click when the box is not ticked yet.
            if s.why.trim().is_empty() {
                k.err(
                    p.key("action"),
                    "a check step needs `why` it cannot publish",
                    "say what the box consents to and why ticking it sends nothing",
                );
            }
        }
    }

    let publish = root.key("publish");
    k.locator(publish.key("locator"), &c.publish.locator);
    k.request(
        publish.key("create_request"),
        &c.publish.create_request,
        &url_vars,
    );
    // A platform may create by GET (a guestbook's `method=get` form): format 2 says so, and the door then
    // never fetches a read matching it. A HEAD creates nothing anyone should publish with.
    let create = &c.publish.create_request;
    match create.method.as_str() {
        "HEAD" => k.err(
            publish.key("create_request").key("method"),
            "the create request cannot be a HEAD",
            "a create is a write, or a GET on a platform that creates by GET (format 2)",
        ),
        "GET" if c.format < 2 => k.err(
            publish.key("create_request").key("method"),
            "a create request by GET needs format = 2",
            "set format = 2: the door then fails every read that matches it but the press's one",
        ),
        "GET" if create.body_regex.is_some() || create.not_body_regex.is_some() => k.err(
            publish.key("create_request"),
            "a GET has no body to match",
            "tell the create apart by its URL (url_regex over the whole URL, its query included)",
        ),
        "GET" => {
            // Every read matching a GET create is failed: a pattern that also matches a page oncepost must
            // read leaves that page unreadable.
            for (what, page) in [
                ("compose.url", &c.compose.url),
                ("readback.search", &c.readback.search),
                ("readback.permalink", &c.readback.permalink),
            ] {
                let sample = sample_url(page);
                if get_create_matches(create, &sample) {
                    k.err(
                        publish.key("create_request"),
                        format!(
                            "the GET create also matches {what} ({sample}): that page could never be read"
                        ),
                        "make the pattern match the create only (its query, e.g. url_regex = '/post\\?(.*&)?action=create')",
                    );
                }
            }
        }
        _ => {}
    }
    for (i, s) in c.publish.rejection_statuses.iter().enumerate() {
        // Only a 4xx can prove "not created": a 5xx may be sent after the platform committed the post
        // (a crash or timeout behind the commit), so settling it `failed` could hide a live post.
        if !(400..=499).contains(s) {
            let message = if (500..=599).contains(s) {
                format!("{s} is a server error, not a rejection")
            } else {
                format!("{s} is not a 4xx rejection status")
            };
            k.err(
                publish.key("rejection_statuses").index(i),
                message,
                "only 4xx statuses can prove nothing was created: a 5xx may come after the commit, so the post \
                 may be live and it can never prove \"not sent\" (oncepost settles it indeterminate)",
            );
        }
    }
    if !c.publish.retry_later_statuses.is_empty() {
        format2(
            &mut k,
            publish.key("retry_later_statuses"),
            "retry_later_statuses",
        );
    }
    for (i, s) in c.publish.retry_later_statuses.iter().enumerate() {
        let path = publish.key("retry_later_statuses").index(i);
        if !(400..=499).contains(s) {
            k.err(
                path,
                format!("{s} is not a 4xx status"),
                "only a 4xx can say nothing was made (a 5xx may come after the commit); a rate limit answers 429",
            );
        } else if c.publish.rejection_statuses.contains(s) {
            k.err(
                path,
                format!("{s} is also a rejection status"),
                "a status is either a rejection (failed for good) or a \"try later\" (failed, tried again): keep it in one list",
            );
        }
    }
    if !c.publish.added_text.is_empty() {
        format2(&mut k, publish.key("added_text"), "added_text");
    }
    for (i, a) in c.publish.added_text.iter().enumerate() {
        if a.trim().is_empty() {
            k.err(
                publish.key("added_text").index(i),
                "blank text",
                "give the text the page or platform adds to every post, as it shows (a signature: \"— sent from my app\")",
            );
        } else if a.chars().count() > 500 {
            k.err(
                publish.key("added_text").index(i),
                "longer than 500 characters",
                "give only what the page or platform adds to every post (a signature, a \"via\" line)",
            );
        }
    }
    let socket_create = create.method == WEBSOCKET;
    // Where WebSocket messages can be declared: the create's socket, or a live socket oncepost relays.
    let relayed_sockets = socket_create || c.live_sockets.iter().any(|l| l.relay);
    if socket_create {
        socket_rule(&mut k, c, publish.key("create_request"), create, "create");
        if c.publish.transport == Transport::Browser {
            k.err(
                publish.key("transport"),
                "a create over a WebSocket is sent by the harness",
                "remove transport: the door relays the socket and sends the create message once",
            );
        }
        if !c.publish.rejection_statuses.is_empty() {
            k.err(
                publish.key("rejection_statuses"),
                "a message on a socket has no status",
                "remove rejection_statuses: an answer that is not the success is doubt, settled by reading",
            );
        }
        if !c.publish.retry_later_statuses.is_empty() {
            k.err(
                publish.key("retry_later_statuses"),
                "a message on a socket has no status",
                "remove retry_later_statuses: an answer that is not the success is doubt, settled by reading",
            );
        }
    }
    let inside_format2 = |k: &mut Checker, path: KeyPath, r: &RequestMatcher| {
        for (key, set) in [
            ("headers", !r.headers.is_empty()),
            ("body_regex", r.body_regex.is_some()),
            ("not_body_regex", r.not_body_regex.is_some()),
        ] {
            if set {
                format2(k, path.key(key), key);
            }
        }
    };
    inside_format2(
        &mut k,
        publish.key("create_request"),
        &c.publish.create_request,
    );
    for (i, w) in c.non_publish_writes.iter().enumerate() {
        let p = root.key("non_publish_writes").index(i);
        k.request(p.clone(), w, &["base_url"]);
        inside_format2(&mut k, p.clone(), w);
        // OPTIONS stays declarable: a CORS preflight always passes, but an OPTIONS the page sends itself is
        // judged a write (a server may act on any method), and some apps send one to read what they may do
        // (WordPress's block editor asks `OPTIONS /wp/v2/posts/ID` for its Allow header).
        if matches!(w.method.as_str(), "GET" | "HEAD") {
            k.err(
                p.key("method"),
                format!("{} is not a write", w.method),
                "reads (and CORS preflights) always pass; declare only the writes the page makes",
            );
        }
        if w.method == WEBSOCKET {
            declared_message(
                &mut k,
                c,
                p.clone(),
                w,
                "non-publish message",
                relayed_sockets,
            );
        }
        apart_from_create(&mut k, p, w, &c.publish.create_request, "non-publish write");
    }
    for (i, r) in c.read_requests.iter().enumerate() {
        let p = root.key("read_requests").index(i);
        format2(&mut k, p.clone(), "read_requests");
        k.request(p.clone(), r, &["base_url"]);
        if r.method == WEBSOCKET {
            // A message that only reads (a subscription, a ping in JSON): sent wherever the page reads.
            declared_message(&mut k, c, p.clone(), r, "read message", relayed_sockets);
        }
        if matches!(r.method.as_str(), "GET" | "HEAD") {
            k.err(
                p.key("method"),
                format!("a {} is read without being declared", r.method),
                "declare only the requests that read with a write method (POST for a GraphQL query)",
            );
        }
        apart_from_create(&mut k, p, r, &c.publish.create_request, "read request");
    }
    for (i, l) in c.live_sockets.iter().enumerate() {
        let p = root.key("live_sockets").index(i);
        format2(&mut k, p.clone(), "live_sockets");
        k.template(p.key("url"), &l.url, &["base_url"], &[]);
        let sample = l.url.replace("{base_url}", SAMPLE_BASE);
        // A bad placeholder is the template's finding above; the endpoint is judged once it expands.
        if let (false, Err(why)) = (sample.contains('{'), live_socket_endpoint(&sample)) {
            k.err(
                p.key("url"),
                why,
                "scheme://host[:port] only (ws, wss, http, https), e.g. \"{base_url}\" or \"wss://stream.example.social\"",
            );
        }
        if l.why.trim().is_empty() {
            k.err(
                p.key("why"),
                "a live socket needs its why",
                "say what the page hears on it and why it cannot publish (\"the timeline's new posts\")",
            );
        }
    }
    if c.publish.confirm.is_some() {
        format2(&mut k, publish.key("confirm"), "confirm");
    }
    if let Some(key) = c.publish.key {
        format2(&mut k, publish.key("key"), "key");
        // Enter is the publish: a line break typed as Enter would press it in the middle of the text.
        if key == PublishKey::Enter {
            for (i, f) in c.compose.fields.iter().enumerate() {
                if f.newlines == Some(Newlines::Keys) {
                    k.err(
                        root.key("compose").key("fields").index(i).key("newlines"),
                        "newlines = \"keys\" presses Enter, and Enter publishes here (publish.key = \"enter\")",
                        "remove newlines: line breaks then go in as typed text, which sends no key",
                    );
                }
            }
        }
    }
    if let Some(ms) = c.publish.create_wait_ms
        && !(100..=120_000).contains(&ms)
    {
        k.err(
            publish.key("create_wait_ms"),
            format!("create_wait_ms = {ms} is out of range"),
            "between 100 and 120000 milliseconds",
        );
    }

    if c.success.is_empty() {
        k.err(
            root.key("success"),
            "no success signals",
            "add e.g. { url_regex = '/p/(?P<id>[a-z0-9]+)' }",
        );
    }
    for (i, s) in c.success.iter().enumerate() {
        let p = root.key("success").index(i);
        let kinds = [
            s.url_regex.is_some(),
            s.json_field.is_some() || s.response_status.is_some(),
            s.element.is_some(),
            s.synced.is_some(),
            s.socket_answer.is_some(),
        ];
        if kinds.iter().filter(|b| **b).count() != 1 {
            k.err(p.clone(), "a success signal is exactly one of: url_regex; response_status/json_field; element; synced; socket_answer", "split it into several [[success]] entries");
        }
        if let Some(r) = &s.socket_answer {
            format2(&mut k, p.key("socket_answer"), "socket_answer");
            k.regex(p.key("socket_answer"), r, false);
            if !socket_create {
                k.err(
                    p.key("socket_answer"),
                    "socket_answer needs a create over a WebSocket",
                    "publish.create_request.method = \"WEBSOCKET\"; an HTTP create's answer is read by response_status/json_field",
                );
            }
        }
        if socket_create && (s.json_field.is_some() || s.response_status.is_some()) {
            k.err(
                p.clone(),
                "a create over a WebSocket has no HTTP response",
                "read its answer with socket_answer = '\"id\":(?P<id>\\d+)', or watch the page (url_regex, element, synced)",
            );
        }
        if let Some(sy) = &s.synced {
            format2(&mut k, p.key("synced"), "synced");
            if sy.css.trim().is_empty() {
                k.err(
                    p.key("synced").key("css"),
                    "empty selector",
                    "the element to look at, e.g. \"#editor\"",
                );
            }
            if sy.attribute.is_some() && sy.class.is_some() {
                k.err(
                    p.key("synced"),
                    "give at most one of attribute, class",
                    "split it into two [[success]] entries",
                );
            }
        }
        if let Some(r) = &s.url_regex {
            k.regex(p.key("url_regex"), r, true);
        }
        if let Some(st) = s.response_status
            && !(200..=399).contains(&st)
        {
            k.err(
                p.key("response_status"),
                format!("{st} is not a success status"),
                "use 2xx/3xx",
            );
        }
        if let Some(j) = &s.json_field
            && (j.is_empty() || j.split('.').any(str::is_empty))
        {
            k.err(
                p.key("json_field"),
                format!("bad JSON path {j:?}"),
                "dotted keys, e.g. id or data.post.id",
            );
        }
        if let Some(l) = &s.element {
            k.locator(p.key("element"), l);
        }
        if let Some(f) = &s.element_text_field {
            format2(&mut k, p.key("element_text_field"), "element_text_field");
            known_field(&mut k, p.key("element_text_field"), f);
            if s.element.is_none() {
                k.err(
                    p.key("element_text_field"),
                    "element_text_field needs element",
                    "add element = { strategies = [...] }",
                );
            }
        }
        if let Some(f) = &s.id_from_field {
            format2(&mut k, p.key("id_from_field"), "id_from_field");
            known_field(&mut k, p.key("id_from_field"), f);
        }
        if s.id_attribute.is_some() && s.element.is_none() {
            k.err(
                p.key("id_attribute"),
                "id_attribute needs element",
                "add element = { strategies = [...] }",
            );
        }
    }

    let rb = root.key("readback");
    let permalink_vars = with_fields(&["base_url", "id"]);
    let permalink_vars: Vec<&str> = permalink_vars.iter().map(String::as_str).collect();
    k.template(
        rb.key("permalink"),
        &c.readback.permalink,
        &permalink_vars,
        &["id"],
    );
    let search_vars = with_fields(&["base_url", "text"]);
    let search_vars: Vec<&str> = search_vars.iter().map(String::as_str).collect();
    k.template(rb.key("search"), &c.readback.search, &search_vars, &[]);
    k.locator(rb.key("item"), &c.readback.item);
    if c.readback.text.trim().is_empty() {
        k.err(
            rb.key("text"),
            "empty text selector",
            "CSS selector of the text inside an item",
        );
    }
    match (
        &c.readback.id_attribute,
        &c.readback.id_from_link,
        &c.readback.id_text,
    ) {
        (Some(_), None, None) => {}
        (None, Some(r), None) => {
            k.regex(rb.key("id_from_link"), r, true);
        }
        (None, None, Some(css)) => {
            format2(&mut k, rb.key("id_text"), "id_text");
            if css.trim().is_empty() {
                k.err(
                    rb.key("id_text"),
                    "empty id_text selector",
                    "CSS selector, inside an item, of the element whose text is the id",
                );
            }
        }
        _ => k.err(
            rb.clone(),
            "give exactly one of id_attribute, id_from_link, id_text",
            "id_attribute = \"data-post-id\", id_from_link = '/p/(?P<id>\\w+)' or id_text = \".page-id\"",
        ),
    }
    if !c.readback.text_skip.is_empty() {
        format2(&mut k, rb.key("text_skip"), "text_skip");
        for (i, css) in c.readback.text_skip.iter().enumerate() {
            if css.trim().is_empty() {
                k.err(
                    rb.key("text_skip").index(i),
                    "empty text_skip selector",
                    "CSS selector, inside the text element, of what the platform adds to a post (e.g. \".mw-editsection\")",
                );
            }
        }
    }
    if let Some(css) = &c.readback.link {
        format2(&mut k, rb.key("link"), "link");
        if css.trim().is_empty() {
            k.err(
                rb.key("link"),
                "empty link selector",
                "CSS selector, inside an item, of the item's own link (e.g. \"a.permalink\")",
            );
        }
    }
    if let Some(a) = &c.readback.author
        && a.trim().is_empty()
    {
        k.err(
            rb.key("author"),
            "empty author selector",
            "CSS selector, inside an item, of the element showing its author's handle (e.g. \".post-author\")",
        );
    }
    if let Some(a) = &c.readback.author_attribute {
        if c.readback.author.is_none() {
            k.err(
                rb.key("author_attribute"),
                "author_attribute needs author",
                "add author = \"CSS of the element\" that carries the attribute",
            );
        }
        if a.trim().is_empty() {
            k.err(
                rb.key("author_attribute"),
                "empty attribute name",
                "the attribute of the author element holding the handle, e.g. data-handle",
            );
        }
    }
    if let Some(r) = &c.readback.author_pattern {
        format2(&mut k, rb.key("author_pattern"), "author_pattern");
        if c.readback.author.is_none() {
            k.err(
                rb.key("author_pattern"),
                "author_pattern needs author",
                "add author = \"CSS of the element\" whose text (or author_attribute) the pattern reads",
            );
        }
        k.handle_regex(rb.key("author_pattern"), r);
    }
    if !c.readback.viewer_labels.is_empty() {
        format2(&mut k, rb.key("viewer_labels"), "viewer_labels");
        if c.readback.author.is_none() {
            k.err(
                rb.key("viewer_labels"),
                "viewer_labels needs author",
                "add author = \"CSS of the element\" that shows \"You\" on the viewer's own posts",
            );
        }
        for (i, label) in c.readback.viewer_labels.iter().enumerate() {
            if crate::browser::readback::normalize_handle(label).is_empty() {
                k.err(
                    rb.key("viewer_labels").index(i),
                    "empty viewer label",
                    "what the author element shows on the viewer's own posts, e.g. \"You\"",
                );
            }
        }
    }
    if let Some(f) = &c.readback.marker_field {
        format2(&mut k, rb.key("marker_field"), "marker_field");
        known_field(&mut k, rb.key("marker_field"), f);
        if f == c.body_field() {
            k.err(
                rb.key("marker_field"),
                "the marker cannot go into the body field",
                "name a field the platform keeps and shows apart from the text (a tag, a slug, a title)",
            );
        }
    }
    if let Some(m) = &c.readback.marker {
        if c.readback.marker_field.is_none() {
            k.err(
                rb.key("marker"),
                "marker needs marker_field",
                "name the compose field oncepost fills with the intent's marker",
            );
        }
        if m.trim().is_empty() {
            k.err(
                rb.key("marker"),
                "empty selector",
                "CSS, inside an item, of the element showing the marker (e.g. \".post-tags\")",
            );
        }
    }
    if c.readback.propagation_ms > 600_000 {
        k.err(
            rb.key("propagation_ms"),
            "propagation window over 10 minutes",
            "a lookup this late is no longer evidence; lower it",
        );
    }
    for (i, m) in c.evidence.mask.iter().enumerate() {
        if m.trim().is_empty() {
            k.err(
                root.key("evidence").key("mask").index(i),
                "empty mask selector",
                "CSS selector of a region to black out",
            );
        }
    }
    k.found
}

/// Where in a step a text may name a choice (`{field:NAME}`).
enum StepText {
    /// The step's own key (`option`, `text`).
    Own(&'static str),
    /// A locator strategy's key (`text`, `name`), by the strategy's index.
    Strategy(usize, &'static str),
}

/// Every text of a step that may name a choice: its option, a type step's text, and each locator strategy's
/// text and name.
fn step_texts(s: &Step) -> Vec<(StepText, &str)> {
    let mut out: Vec<(StepText, &str)> = [("option", &s.option), ("text", &s.text)]
        .into_iter()
        .filter_map(|(key, v)| Some((StepText::Own(key), v.as_deref()?)))
        .collect();
    for (j, st) in s
        .locator
        .iter()
        .flat_map(|l| l.strategies.iter())
        .enumerate()
    {
        for (key, t) in [("text", &st.text), ("name", &st.name)] {
            if let Some(t) = t {
                out.push((StepText::Strategy(j, key), t));
            }
        }
    }
    out
}

/// A field kind as a contract spells it.
fn kind_name(kind: FieldKind) -> &'static str {
    match kind {
        FieldKind::TextInput => "text_input",
        FieldKind::Textarea => "textarea",
        FieldKind::Contenteditable => "contenteditable",
        FieldKind::Url => "url",
        FieldKind::Choice => "choice",
    }
}
