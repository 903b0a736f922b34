//! Platform selector contracts (`selectors/NAME.toml`): parsing, validation with positions, hashing.
//!
//! A contract declares, for one platform, everything the harness needs to find and judge a page: allowed
//! origins, the compose URL, explicitly non-publishing steps, compose fields, the publish control and the
//! create request it causes, other writes the page makes, success signals, read-back and evidence masks.
//!
//! [`Contract::hash`] is the contract version attempts carry: sha256 over a canonical JSON serialization
//! of the parsed contract (defaults filled in, keys sorted), so comments and formatting do not change it.
//! The browser module never sees these types: [`Contract::probe_plan`] converts into browser-level types.
mod binding;
mod format;
mod migrate;
mod plan;
mod schema;
mod shape;
mod spans;
mod validate;

use std::fmt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

pub use binding::{Binding, BindingCheck, origin_of};
pub use format::*;
pub use migrate::{MigrateError, Migrated, migrate};
pub use plan::{PlanError, PostValues, PublishPlan};
pub use schema::{json_schema, schema_text};
pub use spans::{KeyPath, PathPart};

/// One problem found in a contract file, with its position.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// Key path of the offending value (`compose.fields[0].locator`), empty for syntax errors.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub help: String,
}

/// Why a contract could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// The file could not be read.
    #[error("cannot read contract {file}: {source}")]
    Io {
        /// The file.
        file: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a valid contract; every problem found is listed.
    #[error("{}", render_problems(file, problems))]
    Invalid {
        /// The file (as given).
        file: PathBuf,
        /// The problems, in file order.
        problems: Vec<Problem>,
    },
}

fn render_problems(file: &Path, problems: &[Problem]) -> String {
    let mut out = String::new();
    for (i, p) in problems.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!(
            "{}:{}:{}: error: {}",
            file.display(),
            p.line,
            p.column,
            p.message
        ));
        if !p.path.is_empty() {
            out.push_str(&format!("\n  at: {}", p.path));
        }
        if !p.help.is_empty() {
            out.push_str(&format!("\n  help: {}", p.help));
        }
    }
    out
}

impl Contract {
    /// Read and validate a contract file.
    pub fn load(path: &Path) -> Result<Contract, ContractError> {
        Contract::load_with_source(path).map(|(c, _)| c)
    }

    /// [`Contract::load`], with the file's text as read (the store keeps it per version).
    pub fn load_with_source(path: &Path) -> Result<(Contract, String), ContractError> {
        let text = std::fs::read_to_string(path).map_err(|source| ContractError::Io {
            file: path.to_path_buf(),
            source,
        })?;
        Contract::parse(&text, path).map(|c| (c, text))
    }

    /// Parse and validate contract text; `file` is only used in error messages.
    pub fn parse(text: &str, file: &Path) -> Result<Contract, ContractError> {
        let invalid = |problems| ContractError::Invalid {
            file: file.to_path_buf(),
            problems,
        };
        // toml's deserializer runs on toml_edit's parse, so an error's span is a span of this document.
        // It is parsed again only when there is an error to place.
        let doc = || toml_edit::ImDocument::parse(text);
        let contract: Contract = match toml::from_str(text) {
            Ok(c) => c,
            Err(e) => {
                let (line, column) = spans::line_col(text, e.span().map_or(0, |s| s.start));
                let help = match &doc() {
                    Err(_) => shape::SYNTAX.to_string(),
                    Ok(doc) => shape::help(doc.as_item(), e.span().as_ref()),
                };
                return Err(invalid(vec![Problem {
                    line,
                    column,
                    path: String::new(),
                    message: e.message().trim().to_string(),
                    help,
                }]));
            }
        };
        let found = validate::validate(&contract);
        if found.is_empty() {
            return Ok(contract);
        }
        // The typed parse succeeded, so the document parsed too.
        let doc = doc().map_err(|e| {
            invalid(vec![Problem {
                line: 1,
                column: 1,
                path: String::new(),
                message: e.message().to_string(),
                help: String::new(),
            }])
        })?;
        let mut problems: Vec<Problem> = found
            .into_iter()
            .map(|f| {
                let span = spans::span_of(doc.as_item(), &f.path);
                let (line, column) = spans::line_col(text, span.start);
                Problem {
                    line,
                    column,
                    path: f.path.to_string(),
                    message: f.message,
                    help: f.help,
                }
            })
            .collect();
        problems.sort_by_key(|p| (p.line, p.column));
        Err(invalid(problems))
    }

    /// The contract version: sha256 hex over the canonical JSON of the parsed contract.
    pub fn hash(&self) -> String {
        hex::encode(Sha256::digest(self.canonical_json().as_bytes()))
    }

    /// Canonical JSON: serde_json's map is ordered by key, defaults are filled in, no whitespace.
    pub fn canonical_json(&self) -> String {
        // Serializing plain data structs into a Value cannot fail (no maps with non-string keys).
        serde_json::to_value(self)
            .map(|v| v.to_string())
            .unwrap_or_default()
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

/// Expand `{name}` placeholders; an unknown placeholder is an error naming it.
pub fn expand_template(template: &str, vars: &[(&str, &str)]) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed '{{' in template {template:?}"));
        };
        let name = &after[..end];
        match vars.iter().find(|(k, _)| *k == name) {
            Some((_, v)) => out.push_str(v),
            None => return Err(format!("unknown placeholder {{{name}}}")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
