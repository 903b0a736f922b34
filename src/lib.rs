//! oncepost: publish to web platforms that have no API, at most once.
pub mod cli;
