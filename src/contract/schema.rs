//! The contract's JSON Schema, derived from the format types.
//!
//! `docs/contract.schema.json` is this schema as [`schema_text`] prints it; a golden test holds the file to
//! the types, so the schema an editor completes with cannot drift from what `contract check` parses. The
//! parser also reads it back (see `shape.rs`) to say what a key holds when a value has the wrong shape.
use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use serde_json::Value;

use super::format::Contract;
use super::spans::{KeyPath, PathPart};

/// The schema of a contract file, as JSON.
pub fn json_schema() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with_transform(NoNull)
        .with_transform(Unwrap)
        .into_generator();
    generator.into_root_schema_for::<Contract>().to_value()
}

/// The schema as `docs/contract.schema.json` holds it: pretty-printed, with a final newline.
pub fn schema_text() -> String {
    // A `Value` always serializes.
    let mut text = serde_json::to_string_pretty(&json_schema()).unwrap_or_default();
    text.push('\n');
    text
}

/// The subschema describing the value at `path` (`$ref`s followed), if the schema knows the path.
pub(super) fn at<'a>(root: &'a Value, path: &KeyPath) -> Option<&'a Value> {
    let mut cur = resolve(root, root)?;
    for part in &path.0 {
        let next = match part {
            PathPart::Key(k) => cur.get("properties")?.get(k)?,
            PathPart::Index(_) => cur.get("items")?,
        };
        cur = resolve(root, next)?;
    }
    Some(cur)
}

fn resolve<'a>(root: &'a Value, schema: &'a Value) -> Option<&'a Value> {
    match schema.get("$ref").and_then(Value::as_str) {
        // The generator names every definition under `$defs` and never refers further.
        Some(r) => root.get("$defs")?.get(r.strip_prefix("#/$defs/")?),
        None => Some(schema),
    }
}

/// The strings a value may be, for an enumeration (`enum`, or `oneOf` a list of `const`s).
pub(super) fn choices(schema: &Value) -> Option<Vec<&str>> {
    if let Some(all) = schema.get("enum").and_then(Value::as_array) {
        return all.iter().map(Value::as_str).collect();
    }
    let one_of = schema.get("oneOf")?.as_array()?;
    one_of
        .iter()
        .map(|s| s.get("const").and_then(Value::as_str))
        .collect()
}

/// The bounds an integer schema allows: its `minimum`/`maximum`, else those of its Rust type's `format`.
pub(super) fn integer_range(schema: &Value) -> (i128, i128) {
    let (lo, hi) = match schema.get("format").and_then(Value::as_str) {
        Some("uint8") => (0, i128::from(u8::MAX)),
        Some("uint16") => (0, i128::from(u16::MAX)),
        Some("uint32") => (0, i128::from(u32::MAX)),
        Some("uint64") => (0, i128::from(u64::MAX)),
        Some("int32") => (i128::from(i32::MIN), i128::from(i32::MAX)),
        _ => (i128::from(i64::MIN), i128::from(i64::MAX)),
    };
    let bound = |k: &str| schema.get(k).and_then(Value::as_i64).map(i128::from);
    (
        bound("minimum").unwrap_or(lo),
        bound("maximum").unwrap_or(hi),
    )
}

/// TOML has no null: an absent key is what `None` means, so the schema never offers `null`.
#[derive(Clone)]
struct NoNull;

impl Transform for NoNull {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        if let Some(obj) = schema.as_object_mut() {
            if let Some(Value::Array(types)) = obj.get_mut("type") {
                types.retain(|t| t != "null");
                if let [one] = types.as_slice() {
                    let one = one.clone();
                    obj.insert("type".into(), one);
                }
            }
            if let Some(Value::Array(any)) = obj.get("anyOf")
                && let [only] = any
                    .iter()
                    .filter(|s| s.get("type").is_none_or(|t| t != "null"))
                    .collect::<Vec<_>>()
                    .as_slice()
                && let Some(inner) = only.as_object()
            {
                let inner = inner.clone();
                obj.remove("anyOf");
                for (k, v) in inner {
                    obj.entry(k).or_insert(v);
                }
            }
        }
        transform_subschemas(self, schema);
    }
}

/// Doc comments wrap at the source's line width; an editor shows a description as one paragraph.
#[derive(Clone)]
struct Unwrap;

impl Transform for Unwrap {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        if let Some(Value::String(d)) = schema
            .as_object_mut()
            .and_then(|o| o.get_mut("description"))
        {
            *d = d
                .split("\n\n")
                .map(|para| {
                    para.split('\n')
                        .map(str::trim)
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect::<Vec<_>>()
                .join("\n\n");
        }
        transform_subschemas(self, schema);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/contract.schema.json` is the derived schema, byte for byte. After changing the format types,
    /// regenerate it with `ONCEPOST_BLESS=1 cargo test --lib contract::schema` and review the diff.
    #[test]
    fn docs_schema_is_the_derived_schema() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/contract.schema.json");
        let derived = schema_text();
        if std::env::var_os("ONCEPOST_BLESS").is_some() {
            std::fs::write(&path, &derived).expect("write docs/contract.schema.json");
        }
        let on_disk = std::fs::read_to_string(&path).expect("read docs/contract.schema.json");
        assert!(
            on_disk == derived,
            "docs/contract.schema.json differs from the schema derived from src/contract/format.rs; \
             regenerate it with ONCEPOST_BLESS=1 cargo test --lib contract::schema"
        );
    }
}
