//! Positions for semantic errors: key paths looked up in the `toml_edit` document.
//!
//! Type errors come from the TOML deserializer with a span already. Semantic checks (a regex that does not
//! compile, a step pointing at an unknown field) run on the typed contract and name the offending value
//! by its key path; this module turns the path into `line:column` by walking the document as `toml_edit`
//! parsed it (the parser toml's deserializer runs on, so the spans are the ones it reports), and the
//! typed structs stay free of span wrappers (and the hash free of positions). [`locate`] goes the other
//! way, from an error's span to the key path it is about.
use std::fmt;
use std::ops::Range;

use toml_edit::Item;

/// One step of a key path: a table key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathPart {
    /// A table key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// A key path such as `compose.fields[1].locator`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPath(pub Vec<PathPart>);

impl KeyPath {
    /// The path with a key appended.
    pub fn key(&self, k: &str) -> KeyPath {
        let mut p = self.0.clone();
        p.push(PathPart::Key(k.to_string()));
        KeyPath(p)
    }
    /// The path with an index appended.
    pub fn index(&self, i: usize) -> KeyPath {
        let mut p = self.0.clone();
        p.push(PathPart::Index(i));
        KeyPath(p)
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for part in &self.0 {
            match part {
                PathPart::Key(k) if first => write!(f, "{k}")?,
                PathPart::Key(k) => write!(f, ".{k}")?,
                PathPart::Index(i) => write!(f, "[{i}]")?,
            }
            first = false;
        }
        Ok(())
    }
}

/// Where an error's span lands in the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spot {
    /// On a key (the deserializer reports unknown keys there).
    Key,
    /// On a value (a table, an array, a scalar).
    Value,
}

/// Byte range of the deepest value on `path` that exists in the document.
///
/// A value without a span of its own (a table only implied by a dotted header such as `[readback.item]`)
/// takes its key's, or else its parent's.
pub fn span_of(root: &Item, path: &KeyPath) -> Range<usize> {
    let mut best = root.span().unwrap_or(0..0);
    let mut cur = root;
    for part in &path.0 {
        let next = match part {
            PathPart::Key(k) => cur
                .as_table_like()
                .and_then(|t| t.get_key_value(k))
                .map(|(key, item)| (key.span(), item)),
            PathPart::Index(i) => cur.get(*i).map(|item| (None, item)),
        };
        let Some((key_span, item)) = next else { break };
        if let Some(span) = item.span().or(key_span) {
            best = span;
        }
        cur = item;
    }
    best
}

/// The key path of the key or value whose span is exactly `span`, and which of the two it is. An error
/// without a span is about the whole document (a missing top-level key).
pub fn locate(root: &Item, span: Option<&Range<usize>>) -> Option<(KeyPath, Spot)> {
    match span {
        None => Some((KeyPath::default(), Spot::Value)),
        Some(span) => find(root, &KeyPath::default(), span),
    }
}

fn find(item: &Item, path: &KeyPath, span: &Range<usize>) -> Option<(KeyPath, Spot)> {
    if let Some(table) = item.as_table_like() {
        for (k, child) in table.iter() {
            let here = path.key(k);
            if table.key(k).and_then(|key| key.span()).as_ref() == Some(span) {
                return Some((here, Spot::Key));
            }
            if let Some(found) = find(child, &here, span) {
                return Some(found);
            }
        }
    } else {
        for (i, child) in (0..).map_while(|i| item.get(i).map(|c| (i, c))) {
            if let Some(found) = find(child, &path.index(i), span) {
                return Some(found);
            }
        }
    }
    (item.span().as_ref() == Some(span)).then(|| (path.clone(), Spot::Value))
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}
