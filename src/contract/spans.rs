//! Positions for semantic errors: a span tree of the TOML document, looked up by key path.
//!
//! Type errors come from the TOML deserializer with a span already. Semantic checks (a regex that does not
//! compile, a step pointing at an unknown field) run on the typed contract and name the offending value
//! by its key path; this module turns the path into `line:column` by walking a spanned copy of the
//! document, so the typed structs stay free of span wrappers (and the hash free of positions).
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use toml::Spanned;

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

/// A TOML value with the span of every nested value.
#[derive(Debug)]
pub enum Node {
    /// A table.
    Table(BTreeMap<String, Spanned<Node>>),
    /// An array.
    Array(Vec<Spanned<Node>>),
    /// Any scalar.
    Leaf,
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Node;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any TOML value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Node, A::Error> {
                let mut t = BTreeMap::new();
                while let Some(k) = m.next_key::<String>()? {
                    let v = m.next_value::<Spanned<Node>>()?;
                    t.insert(k, v);
                }
                Ok(Node::Table(t))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Node, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = s.next_element::<Spanned<Node>>()? {
                    v.push(e);
                }
                Ok(Node::Array(v))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_str<E>(self, _: &str) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_string<E>(self, _: String) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
        }
        d.deserialize_any(V)
    }
}

/// Byte range of the deepest value on `path` that exists in the document.
pub fn span_of(root: &Spanned<Node>, path: &KeyPath) -> std::ops::Range<usize> {
    let mut cur = root;
    for part in &path.0 {
        let next = match (cur.get_ref(), part) {
            (Node::Table(t), PathPart::Key(k)) => t.get(k),
            (Node::Array(a), PathPart::Index(i)) => a.get(*i),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => break,
        }
    }
    cur.span()
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}
