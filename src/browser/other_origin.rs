//! Frames of another origin: a composer framed from another origin (an editor served from `compose.` of
//! the same site, another port, or a comment widget of another site), whose document a page script may not
//! read (`contentDocument` is null), so the checks' one evaluation in the top document stops at its iframe
//! (`CHECK_JS` marks where: `cross_at`).
//!
//! Such a locator is checked in two evaluations, the frame's first:
//! - inside the frame, in a world oncepost makes there (`Page.createIsolatedWorld` on the iframe's frame id:
//!   the page's scripts cannot see or change it), the same `CHECK_JS` with the frames that follow: what it
//!   finds, its states in the frame's own viewport, its text, and the action (a focus before typing, a
//!   step's click) when it is the target;
//! - in the document holding the iframe, the iframe itself: its content box in top-level pixels (where the
//!   frame's viewport sits), and whether a press at the element's centre lands on the iframe there and in
//!   every document above (`at`): an overlay over the frame takes that press, whatever the frame shows.
//!
//! The element's states are those of both: a box moved into top-level pixels, in view only where it meets
//! the frame, receiving events only where both hit tests land. A press and typing need nothing more: a
//! trusted mouse event at top-level pixels goes to the frame the hit test finds, and typing goes to the
//! focused element, in whatever frame it is (measured on the headless shell, stop 34).
//!
//! The read-back lists posts inside such frames the same way ([`frames_inside`]: a world in each frame of
//! another origin the page's documents hold, and where the frame sits for the screenshot's masks); the
//! read-back keeps them only when the frame's origin is the platform's (`origins.allowed`).
//!
//! This reaches a frame Chromium runs in the page's own process: every frame of the same site (another port
//! or subdomain), and on `chromium-headless-shell` a frame of any site. The full browser runs a frame of
//! another site in a process of its own (site isolation), which the page's session cannot make a world in:
//! that check fails, naming why, and nothing is pressed. Only one iframe of another origin is crossed; one
//! nested inside it is named and refused the same way.
use std::collections::BTreeMap;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::dom::DescribeNodeParams;
use chromiumoxide::cdp::browser_protocol::page::CreateIsolatedWorldParams;
use chromiumoxide::cdp::js_protocol::runtime::{
    EvaluateParams, ExecutionContextId, RemoteObjectId,
};

use super::checks::{Act, BoxRect, CHECK_JS, RawCheck, RawResult, evaluate_json, evaluate_json_in};
use super::locator::NamedLocator;
use super::{BrowserError, Liveness};

/// The name of the world oncepost makes in a frame of another origin (shown in CDP's context list).
const WORLD: &str = "oncepost-checks";

/// Check again, inside their frame, the locators of `raws` the top document's evaluation could not follow
/// (`cross_at`), with the same `opts`; replaces their results. Returns what `act` did when its target is
/// one of them.
pub(super) async fn check_across(
    page: &Page,
    live: &Liveness,
    locators: &[NamedLocator],
    raws: &mut [RawCheck],
    act: Option<&Act>,
    opts: &serde_json::Value,
) -> Result<Option<String>, BrowserError> {
    // One frame world and one evaluation per iframe of another origin (its frames up to it).
    let mut groups: BTreeMap<Vec<String>, Vec<usize>> = BTreeMap::new();
    for (i, r) in raws.iter().enumerate() {
        let frames = &locators[i].locator.frames;
        if let Some(k) = r.cross_at.filter(|k| *k < frames.len()) {
            groups.entry(frames[..=k].to_vec()).or_default().push(i);
        }
    }
    let mut acted = None;
    for (host, members) in groups {
        let context = match frame_world(page, live, &host).await? {
            Ok(c) => c,
            Err(why) => {
                for &i in &members {
                    raws[i].error = Some(why.clone());
                }
                continue;
            }
        };
        let inner_locs: Vec<serde_json::Value> = members
            .iter()
            .map(|&i| {
                let mut arg = super::checks::script_arg(&locators[i]);
                arg["frames"] = serde_json::json!(locators[i].locator.frames[host.len()..]);
                arg
            })
            .collect();
        let inner_act = act
            .and_then(|a| {
                let target = members.iter().position(|&i| i == a.target)?;
                let publish = a.publish.and_then(|p| members.iter().position(|&i| i == p));
                Some(Act {
                    target,
                    publish,
                    ..a.clone()
                })
            })
            .map(|a| serde_json::to_value(a).unwrap_or(serde_json::Value::Null));
        let js = format!(
            "(locs) => ({CHECK_JS})(locs, {}, {opts})",
            inner_act.clone().unwrap_or(serde_json::Value::Null)
        );
        let value = evaluate_json_in(
            page,
            live,
            "locator checks in a frame of another origin",
            &js,
            &serde_json::Value::Array(inner_locs),
            Some(context),
        )
        .await?;
        let inner: RawResult = serde_json::from_value(value)
            .map_err(|e| BrowserError::Script(format!("unexpected check result: {e}")))?;
        if inner.checks.len() != members.len() {
            return Err(BrowserError::Script(format!(
                "{} results for {} locators in a frame of another origin",
                inner.checks.len(),
                members.len()
            )));
        }
        if inner_act.is_some() {
            acted = inner.acted;
        }
        // The iframe, measured where it is, once per element: a press at that element's centre.
        let Some((last, above)) = host.split_last() else {
            continue;
        };
        let outer_locs: Vec<serde_json::Value> = inner
            .checks
            .iter()
            .map(|c| {
                serde_json::json!({
                    "strategies": [{ "css": last }],
                    "strict": true,
                    "frames": above,
                    "content": true,
                    "at": c.rect.map(|r| serde_json::json!({ "x": r.x + r.w / 2.0, "y": r.y + r.h / 2.0 })),
                })
            })
            .collect();
        let mut outer_opts = opts.clone();
        outer_opts["scroll"] = serde_json::Value::Bool(false);
        let value = evaluate_json(
            page,
            live,
            "measure a frame of another origin",
            &format!("(locs) => ({CHECK_JS})(locs, null, {outer_opts})"),
            &serde_json::Value::Array(outer_locs),
        )
        .await?;
        let outer: RawResult = serde_json::from_value(value)
            .map_err(|e| BrowserError::Script(format!("unexpected check result: {e}")))?;
        let stability = opts["frames"].as_bool() == Some(true);
        for ((&i, inner), outer) in members.iter().zip(inner.checks).zip(outer.checks) {
            raws[i] = joined(inner, outer, stability);
        }
    }
    Ok(acted)
}

/// The element's result inside the frame (`inner`) joined with its iframe's where that iframe is (`outer`).
fn joined(mut inner: RawCheck, outer: RawCheck, stability: bool) -> RawCheck {
    if inner.cross_at.is_some() {
        inner.error = Some(format!(
            "{}: a frame of another origin inside a frame of another origin is not reached",
            inner.error.unwrap_or_default()
        ));
        inner.cross_at = None;
        return inner;
    }
    let (Some(frame_states), Some(frame)) = (outer.states, outer.rect) else {
        if inner.states.is_some() {
            // The iframe could not be measured (gone, or no longer alone): nothing in it can be used.
            inner.states = None;
            inner.rect = None;
            inner.error = Some(
                outer
                    .error
                    .unwrap_or_else(|| "the frame holding it could not be measured".into()),
            );
        }
        return inner;
    };
    let Some(states) = inner.states.as_mut() else {
        return inner;
    };
    states.attached &= frame_states.attached;
    states.visible &= frame_states.visible;
    states.enabled &= frame_states.enabled;
    states.editable &= frame_states.enabled;
    states.focusable &= frame_states.visible && frame_states.enabled;
    states.receives_events &= frame_states.receives_events;
    if stability {
        states.stable &= frame_states.stable;
    }
    if let Some(r) = inner.rect.as_mut() {
        r.x += frame.x;
        r.y += frame.y;
        states.in_viewport &= frame_states.in_viewport && meets(r, &frame);
    }
    if !frame_states.receives_events && inner.covered_by.is_none() {
        inner.covered_by = outer.covered_by;
    }
    inner
}

/// Whether two boxes overlap.
fn meets(a: &BoxRect, b: &BoxRect) -> bool {
    a.w > 0.0
        && a.h > 0.0
        && a.x < b.x + b.w
        && b.x < a.x + a.w
        && a.y < b.y + b.h
        && b.y < a.y + a.h
}

/// A world oncepost makes inside the frame of the iframe reached by `host` (the frames up to it, the last
/// one of another origin); `Ok(Err(why))` when there is none to make (the iframe is gone, or its frame runs
/// in another process).
async fn frame_world(
    page: &Page,
    live: &Liveness,
    host: &[String],
) -> Result<Result<ExecutionContextId, String>, BrowserError> {
    let Some((last, above)) = host.split_last() else {
        return Ok(Err("no iframe given".into()));
    };
    let arg =
        serde_json::json!([{ "strategies": [{ "css": last }], "strict": true, "frames": above }]);
    let opts = serde_json::json!({ "scroll": false, "frames": false, "full_text": false, "element": true });
    let params = EvaluateParams::builder()
        .expression(format!("({CHECK_JS})({arg}, null, {opts})"))
        .await_promise(true)
        .return_by_value(false)
        .build()
        .map_err(BrowserError::Script)?;
    let found = live
        .call("find an iframe of another origin", page.execute(params))
        .await?;
    let Some(object) = found.result.result.object_id.clone() else {
        return Ok(Err(format!(
            "iframe {last:?} of another origin is not there (or not alone)"
        )));
    };
    Ok(world_in(page, live, object).await?.map_err(|no| match no {
        NoWorld::NoFrame => format!("iframe {last:?} holds no frame"),
        NoWorld::OtherProcess(message) => format!(
            "iframe {last:?} is of another origin and runs in a process of its own (Chromium's site \
             isolation: a frame of another site in the full browser), out of the page's reach: {message}; \
             chromium-headless-shell runs it in the page's process"
        ),
    }))
}

/// Why no world could be made in an iframe's frame.
enum NoWorld {
    /// The element holds no frame (not an iframe, or not loaded).
    NoFrame,
    /// Chromium runs the frame in another process (its answer): out of the page's session's reach.
    OtherProcess(String),
}

/// A world oncepost makes inside the frame the iframe `element` (a main-world object) holds.
async fn world_in(
    page: &Page,
    live: &Liveness,
    element: RemoteObjectId,
) -> Result<Result<ExecutionContextId, NoWorld>, BrowserError> {
    let node = live
        .call(
            "describe an iframe of another origin",
            page.execute(DescribeNodeParams::builder().object_id(element).build()),
        )
        .await?;
    let Some(frame_id) = node.result.node.frame_id.clone() else {
        return Ok(Err(NoWorld::NoFrame));
    };
    let world = CreateIsolatedWorldParams::builder()
        .frame_id(frame_id)
        .world_name(WORLD)
        .build()
        .map_err(BrowserError::Script)?;
    match live
        .call(
            "make a world in a frame of another origin",
            page.execute(world),
        )
        .await
    {
        Ok(w) => Ok(Ok(w.result.execution_context_id)),
        Err(BrowserError::Cdp { message, .. }) => Ok(Err(NoWorld::OtherProcess(message))),
        Err(e) => Err(e),
    }
}

/// A frame of another origin the page shows, reached from inside: a world oncepost made in it, and where
/// its content box's corner sits in the top viewport.
pub(crate) struct FrameInside {
    /// The world made in the frame.
    pub context: ExecutionContextId,
    /// Its content box's left, in top-level CSS pixels.
    pub x: f64,
    /// Its content box's top, in top-level CSS pixels.
    pub y: f64,
}

/// Where an iframe's content box sits in the top viewport, through the frames above it (each of an origin
/// its parent reads); `null` past a frame of another origin (a frame of another origin inside one).
const PLACE_JS: &str = r#"function () {
  let el = this, x = 0, y = 0;
  for (let i = 0; i < 64; i++) {
    const w = el.ownerDocument.defaultView, r = el.getBoundingClientRect(), cs = w.getComputedStyle(el);
    x += r.left + el.clientLeft + (parseFloat(cs.paddingLeft) || 0);
    y += r.top + el.clientTop + (parseFloat(cs.paddingTop) || 0);
    if (w === w.top) return { x, y };
    let up = null;
    try { up = w.frameElement; } catch (e) { up = null; }
    if (!up) return null;
    el = up;
  }
  return null;
}"#;

/// The frames of another origin among the page's (its documents and the frames of theirs it reads), each
/// with a world inside it and its place: the iframes `hosts_js` (called with `arg`) returns as an array.
/// An iframe that holds no frame, cannot be placed, or runs in another process is left out.
pub(crate) async fn frames_inside(
    page: &Page,
    live: &Liveness,
    hosts_js: &str,
    arg: &serde_json::Value,
) -> Result<Vec<FrameInside>, BrowserError> {
    use chromiumoxide::cdp::js_protocol::runtime::{CallFunctionOnParams, GetPropertiesParams};
    let params = EvaluateParams::builder()
        .expression(format!("({hosts_js})({arg})"))
        .await_promise(true)
        .return_by_value(false)
        .build()
        .map_err(BrowserError::Script)?;
    let listed = live
        .call("list the frames of another origin", page.execute(params))
        .await?;
    let Some(array) = listed.result.result.object_id.clone() else {
        return Ok(Vec::new());
    };
    let props = GetPropertiesParams::builder()
        .object_id(array)
        .own_properties(true)
        .build()
        .map_err(BrowserError::Script)?;
    let props = live
        .call("read the frames of another origin", page.execute(props))
        .await?;
    let mut out = Vec::new();
    for p in &props.result.result {
        if p.name.parse::<usize>().is_err() {
            continue;
        }
        let Some(element) = p.value.as_ref().and_then(|v| v.object_id.clone()) else {
            continue;
        };
        let place = CallFunctionOnParams::builder()
            .object_id(element.clone())
            .function_declaration(PLACE_JS)
            .return_by_value(true)
            .build()
            .map_err(BrowserError::Script)?;
        let placed = live
            .call("place a frame of another origin", page.execute(place))
            .await?;
        let at = placed.result.result.value.clone().unwrap_or_default();
        let (Some(x), Some(y)) = (at["x"].as_f64(), at["y"].as_f64()) else {
            continue;
        };
        // No frame, or one in a process of its own (the full browser's site isolation): not read, as before.
        if let Ok(context) = world_in(page, live, element).await? {
            out.push(FrameInside { context, x, y });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(x: f64, y: f64, w: f64, h: f64) -> BoxRect {
        BoxRect { x, y, w, h }
    }

    #[test]
    fn boxes_meet_only_where_they_overlap() {
        let frame = b(100.0, 100.0, 300.0, 200.0);
        assert!(meets(&b(150.0, 150.0, 10.0, 10.0), &frame));
        assert!(meets(&b(390.0, 290.0, 20.0, 20.0), &frame));
        assert!(!meets(&b(400.0, 150.0, 10.0, 10.0), &frame));
        assert!(!meets(&b(150.0, 300.0, 10.0, 10.0), &frame));
        assert!(!meets(&b(150.0, 150.0, 0.0, 10.0), &frame));
    }
}
