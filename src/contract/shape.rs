//! Help for the errors the typed parse reports (a misspelt key, a missing key, a value of the wrong kind).
//!
//! The help is chosen from structured data, never from the wording of the deserializer's message: where
//! the error's span lands in the `toml_edit` document (on a key or on a value, at which key path), what the
//! document holds there, and what the contract's schema (derived from the format types) says belongs there.
use std::ops::Range;

use serde_json::Value;
use toml_edit::Item;

use super::schema;
use super::spans::{self, KeyPath, PathPart, Spot};

/// Help for text that is not TOML at all.
pub const SYNTAX: &str = "this is not valid TOML here; check quotes, brackets and commas";
const UNKNOWN_KEY: &str = "remove the key or fix its spelling; docs/contracts.md lists every key";
const MISSING_KEY: &str = "add the key; docs/contracts.md says what it holds";
const NOT_A_CHOICE: &str = "use one of the listed values";
const WRONG_KIND: &str = "this key takes a different kind of value; see docs/contracts.md";
const OTHER: &str = "see docs/contracts.md for what this key holds";

/// Help for a typed-parse error at `span` in a document that parsed as TOML.
pub fn help(doc: &Item, span: Option<&Range<usize>>) -> String {
    let schema = schema::json_schema();
    let Some((path, spot)) = spans::locate(doc, span) else {
        return OTHER.into();
    };
    if spot == Spot::Key {
        let parent = KeyPath(path.0[..path.0.len().saturating_sub(1)].to_vec());
        let known = match (path.0.last(), schema::at(&schema, &parent)) {
            (Some(PathPart::Key(k)), Some(table)) => {
                table.get("properties").and_then(|p| p.get(k)).is_some()
            }
            _ => true,
        };
        if !known {
            return UNKNOWN_KEY.into();
        }
        // A known key: the error is about its value, reported at the key because the value has no span
        // of its own (a table only implied by a dotted header such as `[readback.item]`).
    }
    let Some(item) = item_at(doc, &path) else {
        return OTHER.into();
    };
    let Some(wanted) = schema::at(&schema, &path) else {
        // The schema has no such place: a container above it has the wrong shape (`[[evidence]]` for
        // `[evidence]`, a table where a step action is a string).
        return WRONG_KIND.into();
    };
    let wanted_type = wanted.get("type").and_then(Value::as_str);
    if item.is_table_like() && wanted_type == Some("object") {
        return MISSING_KEY.into();
    }
    if item.is_str() && schema::choices(wanted).is_some() {
        return NOT_A_CHOICE.into();
    }
    if let Some(only) = wanted.get("const") {
        return format!("the only value this key takes is {only}");
    }
    if item.is_integer() && wanted_type == Some("integer") {
        // The value has the right kind, so it is out of the type's range (a negative count, a status
        // over 65535).
        let (min, max) = schema::integer_range(wanted);
        return format!("this key takes a whole number from {min} to {max}");
    }
    WRONG_KIND.into()
}

fn item_at<'a>(root: &'a Item, path: &KeyPath) -> Option<&'a Item> {
    path.0.iter().try_fold(root, |cur, part| match part {
        PathPart::Key(k) => cur.as_table_like().and_then(|t| t.get(k)),
        PathPart::Index(i) => cur.get(*i),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::contract::{Contract, ContractError, Problem};

    fn fixture() -> String {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("selectors/fixture.toml"),
        )
        .expect("fixture contract")
    }

    fn first_problem(text: &str) -> Problem {
        match Contract::parse(text, Path::new("t.toml")) {
            Err(ContractError::Invalid { mut problems, .. }) => problems.remove(0),
            other => panic!("expected problems, got {other:?}"),
        }
    }

    fn line_of(text: &str, needle: &str) -> usize {
        text.lines()
            .position(|l| l.contains(needle))
            .expect("needle")
            + 1
    }

    /// A value of the right kind but out of its type's range used to get the TOML-syntax help (the
    /// message says "invalid value", which no string match caught); the schema's bounds say what fits.
    #[test]
    fn an_out_of_range_number_is_told_its_range() {
        let text = fixture().replace("rejection_statuses = [422]", "rejection_statuses = [70000]");
        let p = first_problem(&text);
        assert_eq!(p.line, line_of(&text, "rejection_statuses"));
        assert!(p.message.contains("70000"), "{p:?}");
        assert_eq!(p.help, "this key takes a whole number from 400 to 499");
        let text = fixture().replace("propagation_ms = 2000", "propagation_ms = -5");
        assert_eq!(
            first_problem(&text).help,
            "this key takes a whole number from 0 to 600000"
        );
    }

    /// Help follows where the error is, not its wording: a key the table does not have, a table missing
    /// a key, a string that is not one of the choices, a value of another kind.
    #[test]
    fn help_follows_the_spot_and_the_schema() {
        let cases = [
            (
                "platform = \"fixture\"",
                "platform = \"fixture\"\nplatfrom = 1",
                super::UNKNOWN_KEY,
            ),
            (
                "{ css = \"#post-text\" }",
                "{ css = \"#post-text\", xpath = \"//a\" }",
                super::UNKNOWN_KEY,
            ),
            ("name = \"title\"\n", "", super::MISSING_KEY),
            ("platform = \"fixture\"\n", "", super::MISSING_KEY),
            (
                "compare = \"exact-nfc\"",
                "compare = \"exact\"",
                super::NOT_A_CHOICE,
            ),
            ("action = \"focus\"", "action = 3", super::WRONG_KIND),
            (
                "action = \"focus\"",
                "action = { focus = 1 }",
                super::WRONG_KIND,
            ),
            ("[evidence]", "[[evidence]]", super::WRONG_KIND),
            ("required = false", "required = \"no\"", super::WRONG_KIND),
            (
                "platform = \"fixture\"",
                "platform = \"fixture",
                super::SYNTAX,
            ),
            (
                "platform = \"fixture\"",
                "platform \"fixture\"",
                super::SYNTAX,
            ),
        ];
        for (from, to, help) in cases {
            let text = fixture().replace(from, to);
            assert_ne!(text, fixture(), "{from:?} not in the fixture");
            let p = first_problem(&text);
            assert_eq!(p.help, help, "{to:?}: {p:?}");
        }
    }

    /// A value written with dotted keys (`create_request.method = ...`) is found by its key path: the
    /// old span tree could not be built from such a document and reported one problem at 1:1 instead.
    #[test]
    fn semantic_errors_in_dotted_keys_point_at_the_value() {
        let text = fixture().replace(
            "create_request = { method = \"POST\", url = \"{base_url}/api/posts\" }",
            "create_request.method = \"GETT\"\ncreate_request.url = \"{base_url}/api/posts\"",
        );
        let p = first_problem(&text);
        assert_eq!(p.message, "unknown HTTP method \"GETT\"");
        assert_eq!(p.path, "publish.create_request.method");
        assert_eq!(
            (p.line, p.column),
            (line_of(&text, "create_request.method"), 25)
        );
    }
}
