//! URL templates of contracts: `{base_url}`, `{field:NAME}`, `{text}`, `{id}`, each value encoded for
//! where it stands.
//!
//! A value in the query is form-encoded (a space is `+`, as a form sends it); in the path or the fragment it
//! is percent-encoded (a space is `%20`): a platform that looks a post up by `/search/{text}` or
//! `#/item/{field:title}` reads `%20`, and a `+` there is a literal plus (measured: a post with spaces was
//! not found and was parked while `{text}` was form-encoded everywhere). Both encodings encode `?`, `#` and
//! `/`, so a value never moves a later placeholder into another part of the URL. `{base_url}` is inserted as
//! given: it is the URL the rest is built on.
//!
//! Expansion is by name and may be partial: placeholders without a value are left as they are (the compose
//! flow fills `{base_url}` and the fields at plan time, the read-back `{id}` once it knows it).
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// What a path segment or a fragment keeps as is: RFC 3986's unreserved characters. Everything else is
/// percent-encoded, `/` too (a value is one segment) and a space as `%20` (a path reads `+` as a plus sign).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The placeholder names in `template`, in order (`field:title`, `base_url`, ...), or why it is malformed.
pub fn placeholders(template: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed '{{' in template {template:?}"));
        };
        let name = &after[..end];
        if name.is_empty() || name.contains('{') {
            return Err(format!(
                "empty or nested placeholder in template {template:?}"
            ));
        }
        out.push(name);
        rest = &after[end + 1..];
    }
    if rest.contains('}') {
        return Err(format!("unopened '}}' in template {template:?}"));
    }
    Ok(out)
}

/// Where in a URL a placeholder stands (decided by what precedes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Path,
    Query,
    Fragment,
}

fn part_after(prefix: &str) -> Part {
    if prefix.contains('#') {
        Part::Fragment
    } else if prefix.contains('?') {
        Part::Query
    } else {
        Part::Path
    }
}

/// `value` encoded for `part`.
fn encode(value: &str, part: Part) -> String {
    match part {
        Part::Query => url::form_urlencoded::byte_serialize(value.as_bytes()).collect(),
        Part::Path | Part::Fragment => utf8_percent_encode(value, SEGMENT).to_string(),
    }
}

/// `template` with each placeholder named in `vars` replaced by its value, encoded for where it stands
/// (`base_url` as given); other placeholders are kept. Malformed templates are refused.
pub fn fill(template: &str, vars: &[(&str, &str)]) -> Result<String, String> {
    placeholders(template)?;
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let end = after.find('}').unwrap_or(after.len());
        let name = &after[..end];
        match vars.iter().find(|(k, _)| *k == name) {
            Some((_, v)) if name == "base_url" => out.push_str(v),
            Some((_, v)) => {
                let part = part_after(&out);
                out.push_str(&encode(v, part));
            }
            None => {
                out.push('{');
                out.push_str(name);
                out.push('}');
            }
        }
        rest = after.get(end + 1..).unwrap_or_default();
    }
    out.push_str(rest);
    Ok(out)
}

/// The name of a `{field:NAME}` placeholder's field.
pub fn field_name(placeholder: &str) -> Option<&str> {
    placeholder.strip_prefix("field:")
}

/// The fields a plain text names with `{field:NAME}` (a step's option, a locator's text or name), in order.
/// Only that form is a placeholder there: any other brace is the text's own.
pub fn text_field_refs(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{field:") {
        let after = &rest[start + "{field:".len()..];
        match after.find('}') {
            Some(end) => {
                out.push(&after[..end]);
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    out
}

/// A plain text with each `{field:NAME}` replaced by `value(NAME)` as it is (no encoding: it is matched
/// against what the page shows), or `None` when a named field has no value.
pub fn fill_text<'a>(text: &str, value: impl Fn(&str) -> Option<&'a str>) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{field:") {
        let after = &rest[start + "{field:".len()..];
        let Some(end) = after.find('}') else { break };
        out.push_str(&rest[..start]);
        out.push_str(value(&after[..end])?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// A value a contract's regex took out of a URL (a post's id in `/index.php/Caf%C3%A9`, a success page's
/// address, an item's link) as the value it stands for: percent-decoded, so that a template, which encodes
/// every value it is given, puts it back as it was rather than encoded twice (`Caf%25C3%25A9`, a page the
/// platform does not have). A `+` stays a plus (in a path it is one). Kept as taken when it does not decode
/// to text (not UTF-8) or decodes to a control character.
pub fn value_from_url(taken: &str) -> String {
    if !taken.contains('%') {
        return taken.to_string();
    }
    match percent_decode_str(taken).decode_utf8() {
        Ok(v) if !v.chars().any(char::is_control) => v.into_owned(),
        _ => taken.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_text_fills_only_its_field_placeholders_and_as_they_are() {
        let v = |n: &str| match n {
            "category" => Some("News & views / {x}"),
            _ => None,
        };
        assert_eq!(
            fill_text("Pick {field:category} {not a field}", v).as_deref(),
            Some("Pick News & views / {x} {not a field}")
        );
        assert_eq!(fill_text("{field:other}", v), None);
        assert_eq!(
            fill_text("no placeholder", v).as_deref(),
            Some("no placeholder")
        );
        assert_eq!(
            text_field_refs("{field:a} and {b} and {field:c}"),
            vec!["a", "c"]
        );
    }

    #[test]
    fn each_value_is_encoded_for_where_it_stands() {
        let t = "{base_url}/items/{field:title}?q={text}#/p/{id}";
        let got = fill(
            t,
            &[
                ("base_url", "http://h:8/app"),
                ("field:title", "New item / v2?"),
                ("text", "a b&c=1"),
                ("id", "x y"),
            ],
        )
        .unwrap();
        assert_eq!(
            got,
            "http://h:8/app/items/New%20item%20%2F%20v2%3F?q=a+b%26c%3D1#/p/x%20y"
        );
    }

    #[test]
    fn unnamed_placeholders_stay_for_later() {
        let t = "{base_url}/p/{id}?by={field:author}";
        let once = fill(t, &[("base_url", "http://h")]).unwrap();
        assert_eq!(once, "http://h/p/{id}?by={field:author}");
        assert_eq!(
            fill(&once, &[("id", "7"), ("field:author", "al ice")]).unwrap(),
            "http://h/p/7?by=al+ice"
        );
    }

    #[test]
    fn a_value_never_moves_a_later_placeholder_into_the_query() {
        let got = fill("/a/{text}/b/{id}", &[("text", "x?y#z"), ("id", "1 2")]).unwrap();
        assert_eq!(got, "/a/x%3Fy%23z/b/1%202");
    }

    #[test]
    fn malformed_templates_are_refused() {
        assert!(fill("{base_url", &[]).is_err());
        assert!(fill("a}b", &[]).is_err());
        assert!(fill("{}", &[]).is_err());
        assert_eq!(
            placeholders("{base_url}/{field:t}?q={text}").unwrap(),
            vec!["base_url", "field:t", "text"]
        );
    }

    /// An id taken from a URL goes back into the permalink template as it came, once encoded: in a path, in
    /// a query; a plus, an undecodable or a control-character escape stay as taken.
    #[test]
    fn a_value_taken_from_a_url_is_put_back_encoded_once() {
        let id = value_from_url("Lab_Caf%C3%A9");
        assert_eq!(id, "Lab_Café");
        assert_eq!(
            fill("https://w/index.php?title={id}", &[("id", &id)]).unwrap(),
            "https://w/index.php?title=Lab_Caf%C3%A9"
        );
        assert_eq!(
            fill("https://w/wiki/{id}", &[("id", &id)]).unwrap(),
            "https://w/wiki/Lab_Caf%C3%A9"
        );
        assert_eq!(value_from_url("a+b"), "a+b");
        assert_eq!(value_from_url("plain-id_1"), "plain-id_1");
        assert_eq!(value_from_url("bad%FFbyte"), "bad%FFbyte");
        assert_eq!(value_from_url("nl%0Ain"), "nl%0Ain");
        assert_eq!(value_from_url("T1%3Anote"), "T1:note");
    }
}
