//! Closed shadow roots, kept where the locators look (`shadow_js!`'s `sr`).
//!
//! A compose form inside a closed shadow root (`host.shadowRoot` is null) is out of every page script's
//! reach, the locators' included. Two kinds, two ways in:
//!
//! - a root a script attaches (`attachShadow({ mode: 'closed' })`, some design systems' and third-party
//!   widgets' components): [`KEEPER_JS`], run in every document before the page's own scripts, keeps each
//!   one as it is made;
//! - a root the HTML parser makes (declarative shadow DOM, `<template shadowrootmode="closed">`: server-
//!   rendered components) calls no script at all. Chromium's DOM agent still lists it, so when a locator
//!   finds nothing, [`keep_parser_made`] asks it for every closed root of the page and hands each to the
//!   keeper (checks.rs, then the check runs once more).
//!
//! Either way the root stays closed to the page (`host.shadowRoot` is still null), and the page cannot
//! replace the keeper (a frozen, non-writable property whose lookups were taken before any page script
//! ran). It keeps only a real closed root, for its own host: a page can hand it nothing the page could not
//! already show.
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::dom::{
    DisableParams, GetDocumentParams, Node, ResolveNodeParams, ShadowRootType,
};
use chromiumoxide::cdp::js_protocol::runtime::CallFunctionOnParams;

use super::BrowserError;
use super::session::Liveness;

/// Installed on every new document (session.rs, `open_page`): `window.__oncepostClosedRoots`, with `get`
/// (a host's kept closed root) and `keep` (a closed root found by the DOM agent; true when it was new).
pub(crate) const KEEPER_JS: &str = r#"(() => {
  const attach = Element.prototype.attachShadow;
  if (typeof attach !== 'function' || window.__oncepostClosedRoots) return;
  const roots = new WeakMap();
  const get = WeakMap.prototype.get, set = WeakMap.prototype.set, has = WeakMap.prototype.has;
  const isRoot = r => r instanceof ShadowRoot && r.mode === 'closed' && r.host instanceof Element;
  Object.defineProperty(window, '__oncepostClosedRoots', {
    value: Object.freeze({
      get: e => get.call(roots, e),
      keep: r => {
        if (!isRoot(r) || has.call(roots, r.host)) return false;
        set.call(roots, r.host, r);
        return true;
      },
    }),
  });
  Element.prototype.attachShadow = function attachShadow(init) {
    const root = attach.call(this, init);
    if (init && init.mode === 'closed') set.call(roots, this, root);
    return root;
  };
})();"#;

/// How many levels of the DOM the agent lists (through shadow trees and frames). Each level is two levels
/// of its JSON answer (a node, its list of children), and serde_json reads 128 at most: a whole page nested
/// deeper (measured: 300 nested `<div>`s) was an answer that could not be read, and the check failed
/// ("the compose page could not be prepared"). A closed root deeper than this is not found.
const LISTED_DEPTH: i64 = 48;

/// Hand the keeper of its own document every closed shadow root the DOM agent lists in the page (the main
/// document, its shadow trees and its frames' documents, [`LISTED_DEPTH`] levels deep). Returns how many it had not kept yet.
///
/// `DOM.getDocument` turns the DOM agent on, which then reports every change of the page; it is turned off
/// again before returning (whatever happened), so nothing keeps streaming.
pub(crate) async fn keep_parser_made(page: &Page, live: &Liveness) -> Result<usize, BrowserError> {
    let kept = keep_listed(page, live).await;
    let off = live
        .call(
            "turn the DOM agent off",
            page.execute(DisableParams::default()),
        )
        .await;
    let kept = kept?;
    off?;
    Ok(kept)
}

async fn keep_listed(page: &Page, live: &Liveness) -> Result<usize, BrowserError> {
    let params = GetDocumentParams::builder()
        .depth(LISTED_DEPTH)
        .pierce(true)
        .build();
    let document = live
        .call("list the page's shadow roots", page.execute(params))
        .await?;
    let mut closed = Vec::new();
    closed_roots(&document.result.root, &mut closed);
    let mut kept = 0;
    for backend in closed {
        let resolve = ResolveNodeParams::builder()
            .backend_node_id(backend)
            .build();
        let Some(root) = live
            .call("resolve a closed shadow root", page.execute(resolve))
            .await?
            .result
            .object
            .object_id
        else {
            continue;
        };
        // Runs in the root's own document (its frame's main world), where that document's keeper lives.
        let call = CallFunctionOnParams::builder()
            .object_id(root)
            .function_declaration(
                "function () { const w = this.host && this.host.ownerDocument.defaultView; \
                 const k = w && w.__oncepostClosedRoots; return !!(k && k.keep && k.keep(this)); }",
            )
            .return_by_value(true)
            .build()
            .map_err(BrowserError::Script)?;
        let answer = live
            .call("keep a closed shadow root", page.execute(call))
            .await?;
        if answer.result.result.value == Some(serde_json::Value::Bool(true)) {
            kept += 1;
        }
    }
    Ok(kept)
}

/// The backend ids of every closed shadow root under `node` (through shadow trees and frames' documents).
fn closed_roots(
    node: &Node,
    out: &mut Vec<chromiumoxide::cdp::browser_protocol::dom::BackendNodeId>,
) {
    if node.shadow_root_type == Some(ShadowRootType::Closed) {
        out.push(node.backend_node_id);
    }
    for child in node
        .children
        .iter()
        .flatten()
        .chain(node.shadow_roots.iter().flatten())
        .chain(node.content_document.as_deref())
    {
        closed_roots(child, out);
    }
}
