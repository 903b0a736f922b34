//! `oncepost contract migrate FILE`: a format 1 contract rewritten as format 2, its comments and layout kept.
//!
//! What changes: `format = 2`, and a field named bare in the compose URL (`{title}`, format 1) is spelled
//! `{field:title}`. Nothing else in format 1 means something else in format 2, so the result plans the same
//! pages and requests; it is checked like any contract before it is written. Its version hash changes (the
//! format is part of it): intents recorded under the old file then need `--accept-contract-change`.
use std::path::Path;

use toml_edit::{DocumentMut, Item, Value};

use super::{Contract, ContractError, FORMAT_VERSION};

/// What a migration did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Migrated {
    /// The file is format 2 already: nothing to do.
    Current,
    /// The rewritten file and a line per change.
    Rewritten {
        /// The new file text.
        text: String,
        /// What changed, for people.
        changes: Vec<String>,
    },
}

/// Why a file cannot be migrated.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// The file is not a valid contract to begin with (fix it first: `contract check`).
    #[error(transparent)]
    Invalid(#[from] ContractError),
    /// The rewritten file is not valid (a bug: nothing is written).
    #[error("the migrated contract does not check: {0}")]
    Result(ContractError),
    /// Not TOML.
    #[error("{0}")]
    Toml(String),
}

/// Migrate the contract text of `file` (read by the caller) to the newest format.
pub fn migrate(text: &str, file: &Path) -> Result<Migrated, MigrateError> {
    let old = Contract::parse(text, file)?;
    if old.format == FORMAT_VERSION {
        return Ok(Migrated::Current);
    }
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        MigrateError::Toml(format!("{}: {e}", file.display()))
    })?;
    let mut changes = vec![format!("format = {} -> {FORMAT_VERSION}", old.format)];
    set_keeping_decor(&mut doc["format"], Value::from(i64::from(FORMAT_VERSION)));
    let url = &old.compose.url;
    let mut new_url = url.clone();
    for f in &old.compose.fields {
        new_url = new_url.replace(&format!("{{{}}}", f.name), &format!("{{field:{}}}", f.name));
    }
    if &new_url != url {
        changes.push(format!("compose.url: {url:?} -> {new_url:?}"));
        set_keeping_decor(&mut doc["compose"]["url"], Value::from(new_url));
    }
    let text = doc.to_string();
    Contract::parse(&text, file).map_err(MigrateError::Result)?;
    Ok(Migrated::Rewritten { text, changes })
}

/// Replace a value, keeping the comments and spacing around it.
fn set_keeping_decor(item: &mut Item, mut new: Value) {
    if let Some(v) = item.as_value() {
        *new.decor_mut() = v.decor().clone();
    }
    *item = Item::Value(new);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> String {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("selectors/fixture.toml"),
        )
        .unwrap()
    }

    #[test]
    fn a_format_1_file_becomes_format_2_with_its_comments() {
        let text = fixture().replace("{base_url}/compose\"", "{base_url}/compose?t={title}\"");
        let Migrated::Rewritten { text: out, changes } =
            migrate(&text, Path::new("f.toml")).unwrap()
        else {
            panic!("nothing migrated");
        };
        assert!(out.contains("format = 2"), "{out}");
        assert!(out.contains("{base_url}/compose?t={field:title}"), "{out}");
        assert!(out.contains("# Contract for Fixturebook"));
        assert_eq!(changes.len(), 2, "{changes:?}");
        let old = Contract::parse(&text, Path::new("f.toml")).unwrap();
        let new = Contract::parse(&out, Path::new("f.toml")).unwrap();
        let base = "http://127.0.0.1:9";
        let values = [("title".to_string(), "a b".to_string())].into();
        assert_eq!(
            old.publish_plan_for(base, &values).unwrap().probe.url,
            new.publish_plan_for(base, &values).unwrap().probe.url,
            "the same compose page"
        );
        assert_eq!(
            migrate(&out, Path::new("f.toml")).unwrap(),
            Migrated::Current
        );
    }

    #[test]
    fn an_invalid_file_is_refused_before_anything_is_rewritten() {
        let text = fixture().replace("platform = \"fixture\"", "platform = \"Bad Name\"");
        assert!(matches!(
            migrate(&text, Path::new("f.toml")),
            Err(MigrateError::Invalid(_))
        ));
    }
}
