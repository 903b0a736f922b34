//! The one redaction layer: everything oncepost persists or prints goes through here first (store event
//! details and reasons, evidence files, the review page and its export, log lines at every level).
//!
//! What counts as a secret, wherever it appears:
//! - a header, query parameter, cookie, form field or JSON member (at any depth) whose **name** says token,
//!   key, secret, auth, session, password, csrf or cookie ([`is_secret_name`]), plus `Cookie`, `Set-Cookie`
//!   and `Authorization` themselves;
//! - `Bearer` / `Basic` / `token` credentials and `user:password@` in URLs, wherever they appear in text;
//! - in DOM excerpts ([`html`]): script contents, inline event handlers (`on*=`), `javascript:` URLs,
//!   hidden and password input values, and attributes named like a secret (`data-csrf`, `data-session`).
//!
//! Redaction keeps names and shapes (`"api_key": "[redacted]"`, `Cookie: [redacted]`) so a person can still
//! see what was sent, and is idempotent: redacting twice gives the same text.
use std::borrow::Cow;
use std::io::Write;
use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde_json::Value;

/// What is written in place of a secret.
pub const REDACTED: &str = "[redacted]";

/// Names of oncepost's own records that contain a secret-sounding word but hold no secret (delivery keys
/// are content hashes anyone with the text can compute; credential versions are counters).
const OWN_NAMES: &[&str] = &[
    "delivery_key",
    "new_key",
    "consumed_key",
    "redelivery_key",
    "credential_version",
];

/// Substrings of a lower-cased name that make it a secret.
const SECRET_PARTS: &[&str] = &[
    "token",
    "secret",
    "passw",
    "csrf",
    "xsrf",
    "session",
    "sessid",
    "cookie",
    "apikey",
    "api_key",
    "api-key",
    "authenticity",
    "credential",
    "bearer",
];

/// The words of a name: split at anything not alphanumeric and at lower-to-upper case changes
/// (`X-Auth-Key` → x, auth, key; `clientSecret` → client, secret), lower-cased.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Whether a header, parameter, cookie, form field or JSON member named `name` carries a secret.
///
/// `auth` counts as a word (`X-Auth-Key`, `oauth_state`, `authToken`, `Authorization`) but `author` does not
/// (an item's author is what authorship checks read); `key` counts as a word or word ending (`api_key`,
/// `X-Api-Key`, `accessKey`, `key`), except oncepost's own delivery-key fields.
pub fn is_secret_name(name: &str) -> bool {
    let n = name.trim().to_ascii_lowercase();
    if n.is_empty() || OWN_NAMES.contains(&n.as_str()) {
        return false;
    }
    if SECRET_PARTS.iter().any(|p| n.contains(p)) {
        return true;
    }
    words(name).iter().any(|w| {
        let w = w.as_str();
        w == "auth"
            || w == "authorization"
            || (w.starts_with("auth") && !w.starts_with("author"))
            || w.ends_with("auth")
            || w == "key"
            || (w.ends_with("key") && w.len() > 3)
            || matches!(w, "sid" | "jwt" | "pwd" | "pass" | "otp" | "nonce")
    })
}

/// Whether a credential value after `Bearer`/`Basic`/`token` looks like a credential rather than a word of
/// prose ("bearer tokens are…"): long, or with a digit or token punctuation in it.
fn looks_like_credential(v: &str) -> bool {
    let v = v.trim_end_matches('=');
    v.len() >= 20
        || (v.len() >= 6
            && v.chars()
                .any(|c| c.is_ascii_digit() || "-._~+/".contains(c)))
}

static SCHEME_CREDENTIAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(bearer|basic|token)([ \t]+)([A-Za-z0-9\-._~+/]+=*)").expect("valid regex")
});
static URL_USERINFO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@"'<>]*):([^/\s@"'<>]+)@"#)
        .expect("valid regex")
});
/// `"name": "value"` (JSON, and Rust's Debug of a JSON value: `"name": String("value")`).
static JSON_PAIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""([^"\\]{1,128})"\s*:\s*(?:String\()?"((?:[^"\\]|\\.)*)""#).expect("valid regex")
});
/// `\"name\":\"value\"`: JSON inside a JSON string (a logged CDP message, a stored body).
static ESCAPED_JSON_PAIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\\"([^"\\]{1,128})\\"\s*:\s*\\"((?:[^"\\]|\\[^"])*)\\""#).expect("valid regex")
});
/// `{"name": "Cookie", "value": "..."}` and `HeaderEntry { name: "Cookie", value: "..." }`.
static NAME_VALUE_PAIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"\bname\\?"?\s*:\s*\\?"([^"\\]{1,128})\\?"\s*,\s*\\?"?value\\?"?\s*:\s*(?:String\()?\\?"((?:[^"\\]|\\[^"])*)\\?""#,
    )
    .expect("valid regex")
});
/// `name="value"` (a tracing field, a cookie attribute).
static QUOTED_ASSIGN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"([A-Za-z0-9_.\-\[\]]{1,128})=(?:Some\()?"((?:[^"\\]|\\.)*)""#)
        .expect("valid regex")
});
/// `name=value` (query strings, fragments, form bodies, cookies, tracing fields).
static ASSIGN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"([A-Za-z0-9_.\-\[\]]{1,128})=([^&\s;,#"'<>\\()]*)"#).expect("valid regex")
});
/// `Name: value` on its own line (an HTTP header dump).
static HEADER_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^([ \t]*)([A-Za-z0-9][A-Za-z0-9_\-]{0,127})[ \t]*:[ \t]*([^\r\n]*\S)")
        .expect("valid regex")
});
/// `Cookie: ...` / `Set-Cookie: ...` anywhere (the whole value: every cookie in it is a credential).
static COOKIE_INLINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(set-cookie|cookie)([ \t]*:[ \t]*)([^\r\n"\\]+)"#).expect("valid regex")
});

/// Replace group `value` of every match whose group `name` is a secret name (or every match when `name` is
/// `None`) by [`REDACTED`].
fn redact_groups<'a>(
    re: &Regex,
    s: &'a str,
    name: Option<usize>,
    value: usize,
    keep: impl Fn(&Captures) -> bool,
) -> Cow<'a, str> {
    re.replace_all(s, |c: &Captures| {
        let Some(whole) = c.get(0) else {
            return String::new();
        };
        let secret = match name {
            Some(g) => c.get(g).is_some_and(|n| is_secret_name(n.as_str())),
            None => true,
        };
        match c.get(value) {
            Some(v) if secret && !v.as_str().is_empty() && v.as_str() != REDACTED && !keep(c) => {
                let w = whole.as_str();
                let (a, b) = (v.start() - whole.start(), v.end() - whole.start());
                format!("{}{REDACTED}{}", &w[..a], &w[b..])
            }
            _ => whole.as_str().to_string(),
        }
    })
}

/// Redact secrets in free text: a log line, an error message, a URL, a form body, a header dump.
pub fn text(s: &str) -> String {
    let no = |_: &Captures| false;
    let s = redact_groups(&SCHEME_CREDENTIAL, s, None, 3, |c| {
        !c.get(3).is_some_and(|v| looks_like_credential(v.as_str()))
    });
    let s = redact_groups(&URL_USERINFO, &s, None, 2, no).into_owned();
    let s = redact_groups(&NAME_VALUE_PAIR, &s, Some(1), 2, no).into_owned();
    let s = redact_groups(&JSON_PAIR, &s, Some(1), 2, no).into_owned();
    let s = redact_groups(&ESCAPED_JSON_PAIR, &s, Some(1), 2, no).into_owned();
    let s = redact_groups(&COOKIE_INLINE, &s, None, 3, no).into_owned();
    let s = redact_groups(&HEADER_LINE, &s, Some(2), 3, no).into_owned();
    let s = redact_groups(&QUOTED_ASSIGN, &s, Some(1), 2, no).into_owned();
    // `token=Some("…")` (a Debug-printed field) was handled as quoted above.
    redact_groups(&ASSIGN, &s, Some(1), 2, |c| {
        c.get(2).is_some_and(|v| v.as_str() == "Some")
    })
    .into_owned()
}

/// A string value: embedded JSON is redacted as JSON (names and all), anything else as text.
fn string(s: &str) -> String {
    let t = s.trim_start();
    if (t.starts_with('{') || t.starts_with('['))
        && let Ok(mut v) = serde_json::from_str::<Value>(s)
    {
        json_in_place(&mut v);
        return v.to_string();
    }
    text(s)
}

/// Redact a JSON document (a copy).
pub fn json(v: &Value) -> Value {
    let mut v = v.clone();
    json_in_place(&mut v);
    v
}

/// Redact a JSON document in place: members named like a secret (whatever their value: a secret object is
/// replaced whole), `{name, value}` pairs and `[name, value]` header tuples whose name is one, and every
/// string as text (URLs with tokens, Bearer values, embedded JSON bodies).
pub fn json_in_place(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let pair_named_secret = map
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(is_secret_name);
            for (k, val) in map.iter_mut() {
                if pair_named_secret && k == "value" && !val.is_null() {
                    *val = Value::String(REDACTED.into());
                } else if is_secret_name(k) {
                    // oncepost's redelivery record is stored under "authorization": an object of who/why/which.
                    if k == "authorization" && val.is_object() {
                        json_in_place(val);
                    } else if !val.is_null() {
                        *val = Value::String(REDACTED.into());
                    }
                } else {
                    json_in_place(val);
                }
            }
        }
        Value::Array(items) => {
            if items.len() == 2
                && items[0].as_str().is_some_and(is_secret_name)
                && items[1].is_string()
            {
                items[1] = Value::String(REDACTED.into());
                return;
            }
            items.iter_mut().for_each(json_in_place);
        }
        Value::String(s) => {
            let r = string(s);
            if r != *s {
                *s = r;
            }
        }
        _ => {}
    }
}

/// Redact bytes of a JSON document; bytes that are not JSON are redacted as text.
pub fn json_bytes(bytes: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(mut v) => {
            json_in_place(&mut v);
            serde_json::to_vec_pretty(&v).unwrap_or_else(|_| v.to_string().into_bytes())
        }
        Err(_) => text(&String::from_utf8_lossy(bytes)).into_bytes(),
    }
}

/// One attribute of a tag as written in the excerpt.
struct Attr<'a> {
    name: &'a str,
    value: Option<Cow<'a, str>>,
}

/// The value with numeric character references decoded and whitespace/control characters dropped, lower-cased:
/// what a browser would see as the URL scheme (`java&#x73;cript:` and `java\tscript:` are `javascript:`).
fn scheme_view(v: &str) -> String {
    let mut out = String::new();
    let mut rest = v;
    while let Some(c) = rest.chars().next() {
        if c == '&'
            && let Some(end) = rest.find(';').filter(|e| *e <= 10)
        {
            let ent = &rest[1..end];
            let code = if let Some(h) = ent.strip_prefix("#x").or(ent.strip_prefix("#X")) {
                u32::from_str_radix(h, 16).ok()
            } else if let Some(d) = ent.strip_prefix('#') {
                d.parse().ok()
            } else if ent.eq_ignore_ascii_case("colon") {
                Some(':' as u32)
            } else if ent.eq_ignore_ascii_case("tab") || ent.eq_ignore_ascii_case("newline") {
                Some(' ' as u32)
            } else {
                None
            };
            if let Some(ch) = code.and_then(char::from_u32) {
                if !ch.is_whitespace() && !ch.is_control() {
                    out.extend(ch.to_lowercase());
                }
                rest = &rest[end + 1..];
                continue;
            }
        }
        if !c.is_whitespace() && !c.is_control() {
            out.extend(c.to_lowercase());
        }
        rest = &rest[c.len_utf8()..];
        if out.len() > 16 {
            break;
        }
    }
    out
}

fn is_script_url(v: &str) -> bool {
    let s = scheme_view(v);
    s.starts_with("javascript:") || s.starts_with("vbscript:") || s.starts_with("data:text/html")
}

/// Parse the attributes of a tag starting at `i` (just after its name); returns them, whether the tag was
/// self-closing, and the index just past `>` (or the end of the text).
fn parse_attrs(s: &str, mut i: usize) -> (Vec<Attr<'_>>, bool, usize) {
    let b = s.as_bytes();
    let mut attrs = Vec::new();
    let mut self_closing = false;
    while i < b.len() {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b'/') {
            self_closing = b[i] == b'/';
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        if b[i] == b'>' {
            return (attrs, self_closing, i + 1);
        }
        self_closing = false;
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && !matches!(b[i], b'=' | b'>' | b'/') {
            i += 1;
        }
        if i == start {
            // A stray '=': skip it.
            i += 1;
            continue;
        }
        let name = &s[start..i];
        let mut j = i;
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if j < b.len() && b[j] == b'=' {
            j += 1;
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            let (value, next) = if j < b.len() && (b[j] == b'"' || b[j] == b'\'') {
                let q = b[j] as char;
                let vstart = j + 1;
                match s[vstart..].find(q) {
                    Some(e) => (&s[vstart..vstart + e], vstart + e + 1),
                    None => (&s[vstart..], s.len()),
                }
            } else {
                let vstart = j;
                while j < b.len() && !b[j].is_ascii_whitespace() && b[j] != b'>' {
                    j += 1;
                }
                (&s[vstart..j], j)
            };
            attrs.push(Attr {
                name,
                value: Some(Cow::Borrowed(value)),
            });
            i = next;
        } else {
            attrs.push(Attr { name, value: None });
            i = j;
        }
    }
    (attrs, self_closing, s.len())
}

/// Redact a tag's attributes by the rules of [`html`].
fn redact_attrs(tag: &str, attrs: &mut Vec<Attr<'_>>) {
    let get = |attrs: &Vec<Attr>, n: &str| {
        attrs
            .iter()
            .find(|a| a.name.eq_ignore_ascii_case(n))
            .and_then(|a| a.value.as_deref())
            .map(str::to_ascii_lowercase)
    };
    let input_type = get(attrs, "type").unwrap_or_default();
    let named_secret = [
        "name",
        "id",
        "property",
        "itemprop",
        "http-equiv",
        "autocomplete",
    ]
    .iter()
    .any(|n| get(attrs, n).is_some_and(|v| is_secret_name(&v)));
    let value_is_secret = match tag {
        "input" => matches!(input_type.as_str(), "hidden" | "password") || named_secret,
        "meta" | "param" | "data" | "option" => named_secret,
        _ => false,
    };
    let mut handler_seen = false;
    attrs.retain_mut(|a| {
        let lname = a.name.to_ascii_lowercase();
        if lname.len() > 2
            && lname.starts_with("on")
            && lname[2..].bytes().all(|c| c.is_ascii_alphabetic())
        {
            // Inline handler: its code is neither kept nor runnable; one marker says there was one.
            let first = !handler_seen;
            handler_seen = true;
            a.name = "data-redacted-handler";
            a.value = None;
            return first;
        }
        let Some(v) = &a.value else {
            return true;
        };
        let secret = is_secret_name(&lname)
            || lname == "srcdoc"
            || (value_is_secret && matches!(lname.as_str(), "value" | "content"))
            || is_script_url(v);
        a.value = Some(if secret {
            Cow::Borrowed(REDACTED)
        } else {
            Cow::Owned(text(v))
        });
        true
    });
}

fn render_tag(out: &mut String, name: &str, attrs: &[Attr<'_>], self_closing: bool) {
    out.push('<');
    out.push_str(name);
    for a in attrs {
        out.push(' ');
        out.push_str(a.name);
        if let Some(v) = &a.value {
            out.push_str("=\"");
            out.push_str(&v.replace('"', "&quot;"));
            out.push('"');
        }
    }
    if self_closing {
        out.push_str(" /");
    }
    out.push('>');
}

/// Find `</name` (case-insensitive) at or after `from`.
fn find_close(s: &str, from: usize, name: &str) -> Option<usize> {
    let lower = s[from..].to_ascii_lowercase();
    lower.find(&format!("</{name}")).map(|i| from + i)
}

/// Redact a DOM excerpt (HTML text, kept as text, never rendered): script contents become [`REDACTED`],
/// inline handlers become one `data-redacted-handler` marker, `javascript:` (and `vbscript:`,
/// `data:text/html`) URLs, `srcdoc`, hidden and password input values, `<meta>` contents and attributes
/// named like a secret are redacted, and all remaining text and attribute values go through [`text`].
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let Some(off) = s[i..].find('<') else {
            out.push_str(&text(&s[i..]));
            break;
        };
        out.push_str(&text(&s[i..i + off]));
        i += off;
        let rest = &s[i..];
        if let Some(comment) = rest.strip_prefix("<!--") {
            let end = comment.find("-->").map_or(s.len(), |e| i + 4 + e + 3);
            out.push_str(&text(&s[i..end]));
            i = end;
            continue;
        }
        let closing = rest[1..].starts_with('/');
        let name_at = i + 1 + usize::from(closing);
        let name_len = s[name_at..]
            .bytes()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b':')
            .count();
        if name_len == 0 || !s.as_bytes()[name_at].is_ascii_alphabetic() {
            out.push('<');
            i += 1;
            continue;
        }
        let name = &s[name_at..name_at + name_len];
        let (mut attrs, self_closing, end) = parse_attrs(s, name_at + name_len);
        if closing {
            out.push_str("</");
            out.push_str(name);
            out.push('>');
            i = end;
            continue;
        }
        let lname = name.to_ascii_lowercase();
        redact_attrs(&lname, &mut attrs);
        render_tag(&mut out, name, &attrs, self_closing);
        i = end;
        if !self_closing && lname == "script" {
            // Script state (`window.__STATE__ = {session: ...}`) and code: never kept.
            let close = find_close(s, i, "script").unwrap_or(s.len());
            if !s[i..close].trim().is_empty() {
                out.push_str(REDACTED);
            }
            i = close;
        }
    }
    out
}

/// A log writer that redacts every line with [`text`] before it reaches the inner writer (stderr).
///
/// `tracing_subscriber::fmt` formats each event completely and writes it with one `write_all`, so each
/// `write` call here sees whole events.
#[derive(Debug)]
pub struct RedactingWriter<W: Write>(W);

impl<W: Write> RedactingWriter<W> {
    /// Redact what is written, then write it to `inner`.
    pub fn new(inner: W) -> Self {
        RedactingWriter(inner)
    }
}

/// Colour codes of the terminal log format sit between a field's name and its `=`: redaction reads the text
/// without them.
static ANSI: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\x1b\[[0-9;]*[A-Za-z]").expect("valid regex"));

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let line = String::from_utf8_lossy(buf);
        let plain = ANSI.replace_all(&line, "");
        let red = text(&plain);
        // Colours stay when nothing needed redacting; a redacted line is written plain.
        let out = if red == plain {
            line.as_ref()
        } else {
            red.as_str()
        };
        self.0.write_all(out.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_names() {
        for n in [
            "Cookie",
            "set-cookie",
            "Authorization",
            "proxy-authorization",
            "X-Auth-Key",
            "X-Api-Key",
            "x-api-key",
            "X-Client-Secret",
            "api_key",
            "apiKey",
            "client_secret",
            "clientSecret",
            "csrf_token",
            "x-csrf-token",
            "X-XSRF-TOKEN",
            "sessionid",
            "JSESSIONID",
            "PHPSESSID",
            "session",
            "password",
            "passwd",
            "access_token",
            "refresh_token",
            "authenticity_token",
            "oauth_verifier",
            "authToken",
            "auth",
            "key",
            "accessKey",
            "private_key",
            "sid",
            "fb_session",
        ] {
            assert!(is_secret_name(n), "{n} should be secret");
        }
        for n in [
            "author",
            "author_handle",
            "authored_by",
            "authorized_at",
            "delivery_key",
            "consumed_key",
            "new_key",
            "credential_version",
            "text",
            "title",
            "url",
            "method",
            "content-type",
            "wire_request_hash",
            "attempt",
            "keyboard",
            "id",
            "",
        ] {
            assert!(!is_secret_name(n), "{n} should not be secret");
        }
    }

    #[test]
    fn json_members_pairs_tuples_and_embedded_bodies() {
        let v = json!({
            "headers": {"Cookie": "fb_session=s3ss", "content-type": "application/json",
                        "X-Auth-Key": "ak-1", "X-Client-Secret": "cs-2"},
            "list": [{"name": "Authorization", "value": "Bearer abc.def.ghi"}, {"name": "accept", "value": "*/*"}],
            "tuples": [["Set-Cookie", "sid=zz9; HttpOnly"], ["accept", "*/*"]],
            "body": "{\"id\":\"p1\",\"session\":\"sess-3\",\"nested\":{\"deeper\":{\"client_secret\":\"cs-4\"}}}",
            "form": "text=hi&csrf_token=ct-5",
            "url": "http://h/p/1?access_token=at-6&x=1#id_token=it-7",
            "note": "call with Authorization: Bearer bt-8xyz",
            "session": {"id": "obj-9"},
            "authorization": {"by": "rita", "reason": "lost", "consumed_key": "ab12"},
            "new_key": "cd34",
            "text": "hello",
        });
        let r = json(&v).to_string();
        for secret in [
            "s3ss",
            "ak-1",
            "cs-2",
            "abc.def.ghi",
            "zz9",
            "sess-3",
            "cs-4",
            "ct-5",
            "at-6",
            "it-7",
            "bt-8xyz",
            "obj-9",
        ] {
            assert!(!r.contains(secret), "{secret} leaked: {r}");
        }
        for kept in [
            "application/json",
            "*/*",
            "hi",
            "hello",
            "rita",
            "lost",
            "ab12",
            "cd34",
            "x=1",
        ] {
            assert!(r.contains(kept), "{kept} lost: {r}");
        }
        assert_eq!(json(&json(&v)), json(&v), "idempotent");
    }

    #[test]
    fn text_covers_logs_urls_headers_and_cdp_messages() {
        let cases = [
            ("GET /p/1?access_token=AT1 HTTP/1.1", "AT1"),
            (
                "Authorization: Basic dXNlcjpwYXNzd29yZA==",
                "dXNlcjpwYXNzd29yZA",
            ),
            ("Cookie: uid=U1; theme=dark", "U1"),
            ("x-csrf-token: CT2\nother: fine", "CT2"),
            (
                r#"{"method":"Fetch.requestPaused","params":{"request":{"headers":{"Cookie":"fb_session=S3"}}}}"#,
                "S3",
            ),
            (r#"msg="{\"headers\":{\"X-Api-Key\":\"K4\"}}""#, "K4"),
            (r#"Object {"Cookie": String("fb_session=S5")}"#, "S5"),
            (
                r#"HeaderEntry { name: "Set-Cookie", value: "sid=S6" }"#,
                "S6",
            ),
            ("postgres://user:PW7@db/x", "PW7"),
            ("token=Some(\"T8\") other=1", "T8"),
            ("see https://x.test/cb#access_token=T9&state=1", "T9"),
        ];
        for (input, secret) in cases {
            let out = text(input);
            assert!(
                !out.contains(secret),
                "{secret} leaked from {input:?}: {out}"
            );
            assert!(out.contains(REDACTED), "{out}");
            assert_eq!(text(&out), out, "idempotent on {input:?}");
        }
        for prose in [
            "bearer tokens are described in RFC 6750",
            "the basic idea",
            "intent{delivery=3f2a} publish step step=\"browser launched\" took_ms=12",
            "published: http://127.0.0.1:9/p/abc",
        ] {
            assert_eq!(text(prose), prose);
        }
    }

    #[test]
    fn html_excerpts_lose_scripts_handlers_hidden_values_and_js_urls() {
        let page = r#"<main id="main"><script>window.__STATE__={"session":"SS1","apiKey":"AK2"};</script>
<script src="/static/compose.js"></script>
<input type="hidden" name="state" value="HV3"><input type=password value=PW4>
<img src="/x.png" onerror="leak('OE5')" onload='x("OL6")'>
<a href="javascript:alert('JS7')">a</a><a href=" java&#x73;cript:alert('JS8')">b</a>
<a href="/p/1?access_token=AT9">c</a><div data-session="DS10" data-csrf='DC11' class="x">
Authorization: Bearer BT12abc</div><meta name="csrf-token" content="MC13">
<iframe srcdoc="<script>SD14</script>"></iframe><SCRIPT type="application/json">{"token":"ST15"}</SCRIPT>
<textarea id="post-text">hello world</textarea></main>"#;
        let out = html(page);
        for secret in [
            "SS1", "AK2", "HV3", "PW4", "OE5", "OL6", "JS7", "JS8", "AT9", "DS10", "DC11",
            "BT12abc", "MC13", "SD14", "ST15",
        ] {
            assert!(!out.contains(secret), "{secret} leaked: {out}");
        }
        let handler = Regex::new(r"(?i)\son[a-z]+\s*=").unwrap();
        assert!(!handler.is_match(&out), "{out}");
        for kept in [
            "<main id=\"main\">",
            "src=\"/static/compose.js\"",
            "hello world",
            "data-redacted-handler",
            "class=\"x\"",
            "</main>",
        ] {
            assert!(out.contains(kept), "{kept} lost: {out}");
        }
        assert_eq!(html(&out), out, "idempotent");
    }

    #[test]
    fn the_log_writer_redacts_through_terminal_colours() {
        let mut out = Vec::new();
        let mut w = RedactingWriter(&mut out);
        w.write_all(
            b"\x1b[3mcookie\x1b[0m\x1b[2m=\x1b[0m\"fb_session=S1\" \x1b[3mstep\x1b[0m=ok\n",
        )
        .unwrap();
        w.write_all(b"\x1b[2mplain\x1b[0m line\n").unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(!out.contains("S1"), "{out}");
        assert!(
            out.contains("\x1b[2mplain\x1b[0m line"),
            "colours kept: {out}"
        );
    }

    #[test]
    fn html_survives_truncated_and_odd_markup() {
        for s in [
            "<",
            "<a",
            "<a href=",
            "<a href=\"x",
            "<script>unterminated",
            "a < b > c",
            "<!-- x",
            "<1>",
            "</",
            "<a/ >",
            "<p =x>",
            "é<b>ü</b>",
        ] {
            let _ = html(s);
        }
        assert_eq!(html("<script>secret"), "<script>[redacted]");
    }
}
