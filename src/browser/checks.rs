//! Locator checks: every locator of the page (and of its same-origin iframes) in ONE `Runtime.evaluate`;
//! a locator behind an iframe of another origin, whose document this script may not read, is checked again
//! inside that frame ([`super::other_origin`]).
//!
//! The script resolves each locator's strategies in order, counts matches per strategy, and measures the
//! chosen element: attached, visible, enabled, editable, focusable, in viewport, receives events (hit test
//! at its centre, in its own document and, inside iframes, on the iframe in every ancestor document), text;
//! then, when a locator requires `stable`, waits two animation frames (or 100 ms in a page that gets none)
//! and measures again. It reads only: no focus, no click, no key. The one thing it may do to the page is
//! scroll, and only when asked ([`Scroll::IntoView`], for
//! publishing use: the probe and the compose flow): each element is scrolled into view (`block: 'center'`)
//! just before it is measured, so a control below the fold is judged where it can be clicked. A scroll is
//! not a click and sends nothing. Role and accessible-name matching follow the WAI-ARIA implicit
//! roles and the usual name sources (aria-labelledby, aria-label, label, content, title, placeholder);
//! it is an approximation of the browser's accessibility tree, documented in docs/contracts.md.
use chromiumoxide::Page;
use chromiumoxide::cdp::js_protocol::runtime::{EvaluateParams, ExecutionContextId};
use serde::{Deserialize, Serialize};

use super::locator::{ElementState, NamedLocator, Strategy};
use super::{BrowserError, Liveness};

/// The check script. Takes `[{strategies, strict, frames}]`, an action (or `null`) and `{scroll}`; returns
/// one result per locator and what the action did.
pub const CHECK_JS: &str = concat!(
    r#"
async (locs, act, opts) => {"#,
    shadow_js!(),
    emoji_js!(),
    r#"
  // One evaluation's shadow scopes per document (each locator and strategy walks the same ones).
  const scopeCache = new Map();
  const scopesOf = doc => { if (!scopeCache.has(doc)) scopeCache.set(doc, shadowScopes(doc)); return scopeCache.get(doc); };
  const norm = s => (s || '').replace(/\s+/g, ' ').trim();
  const HEAD = { button: 'button', textarea: 'textbox', article: 'article', nav: 'navigation', main: 'main',
    form: 'form', img: 'img', ul: 'list', ol: 'list', li: 'listitem', h1: 'heading', h2: 'heading',
    h3: 'heading', h4: 'heading', h5: 'heading', h6: 'heading', dialog: 'dialog', option: 'option',
    table: 'table', tr: 'row', td: 'cell', th: 'columnheader', header: 'banner', footer: 'contentinfo',
    aside: 'complementary', section: 'region', output: 'status', progress: 'progressbar' };
  const role = el => {
    const r = el.getAttribute('role');
    if (r && r.trim()) return r.trim().split(/\s+/)[0];
    const t = el.localName;
    if (t === 'a' || t === 'area') return el.hasAttribute('href') ? 'link' : null;
    if (t === 'input') {
      const ty = (el.getAttribute('type') || 'text').toLowerCase();
      if (['button', 'submit', 'reset', 'image'].includes(ty)) return 'button';
      return { checkbox: 'checkbox', radio: 'radio', range: 'slider', number: 'spinbutton', search: 'searchbox',
               hidden: null, file: null }[ty] ?? 'textbox';
    }
    if (t === 'select') return (el.multiple || el.size > 1) ? 'listbox' : 'combobox';
    if (HEAD[t]) return HEAD[t];
    if (el.isContentEditable && el.hasAttribute('contenteditable')) return 'textbox';
    return null;
  };
  const NAME_FROM_CONTENT = ['button', 'link', 'heading', 'option', 'tab', 'menuitem', 'checkbox', 'radio',
    'switch', 'cell', 'columnheader', 'rowheader', 'treeitem', 'tooltip', 'menuitemcheckbox', 'menuitemradio'];
  const accName = el => {
    // Ids name elements of the element's own tree (its shadow root, or the document).
    const doc = el.getRootNode();
    const lb = el.getAttribute('aria-labelledby');
    if (lb) {
      const s = norm(lb.split(/\s+/).map(id => doc.getElementById(id)).filter(Boolean).map(e => e.textContent).join(' '));
      if (s) return s;
    }
    const al = norm(el.getAttribute('aria-label'));
    if (al) return al;
    if (el.labels && el.labels.length) return norm(Array.from(el.labels).map(l => l.textContent).join(' '));
    if (el.localName === 'input' && ['button', 'submit', 'reset'].includes(el.type)) return norm(el.value);
    if (el.localName === 'img') return norm(el.getAttribute('alt'));
    if (NAME_FROM_CONTENT.includes(role(el))) return norm(flatText(el));
    return norm(el.getAttribute('title') || el.getAttribute('placeholder'));
  };
  const SKIP = new Set(['script', 'style', 'head', 'title', 'meta', 'link', 'template', 'noscript']);
  const find = (doc, s) => {
    // The document and every open shadow root in it (web components): see `shadow_js!`.
    const scopes = scopesOf(doc);
    if (s.css !== undefined) return scopes.flatMap(r => Array.from(r.querySelectorAll(s.css)));
    const every = scopes.flatMap(r => Array.from(r.querySelectorAll(r === doc ? 'body *' : '*')))
      .filter(e => !SKIP.has(e.localName));
    if (s.role !== undefined) {
      const want = s.role.name == null ? null : norm(s.role.name);
      return every.filter(e => role(e) === s.role.role && (want === null || accName(e) === want));
    }
    const want = norm(s.text.text);
    const hit = e => { const t = norm(e.innerText); return s.text.exact ? t === want : t.includes(want); };
    // Innermost matching elements only: a wrapper whose only content is the match is not a second match.
    return every.filter(e => hit(e) && !Array.from(e.children).some(c => !SKIP.has(c.localName) && hit(c)));
  };
  // The iframes on the way to the element, outermost first: each with the document that holds it.
  const frameOf = frames => {
    let doc = document;
    const chain = [];
    for (const sel of frames) {
      const fr = scopesOf(doc).flatMap(r => Array.from(r.querySelectorAll(sel)));
      if (fr.length !== 1) throw new Error(`iframe selector ${JSON.stringify(sel)} matched ${fr.length} elements`);
      const f = fr[0];
      let d = null;
      try { d = f.contentDocument; } catch (e) { d = null; }
      if (!d) {
        // Another origin's document: out of this script's reach. `crossAt` says where, and the check goes on
        // inside that frame (other_origin.rs); this message stands only when that cannot be done.
        const e = new Error(`iframe ${JSON.stringify(sel)} is cross-origin or not loaded: its document is out of the page's reach`);
        e.crossAt = chain.length;
        throw e;
      }
      chain.push({ doc, frame: f });
      doc = d;
    }
    return { doc, chain };
  };
  // Each document's viewport in top-level CSS pixels, [top, frame 1, .., innermost]: a frame's content box.
  // Read afresh at every measurement, since a scroll moves the frames.
  const viewports = ctx => {
    const v = [{ x: 0, y: 0, w: window.innerWidth, h: window.innerHeight }];
    for (const { frame } of ctx.chain) {
      const r = frame.getBoundingClientRect(), p = v[v.length - 1];
      const cs = frame.ownerDocument.defaultView.getComputedStyle(frame);
      const pl = parseFloat(cs.paddingLeft) || 0, pt = parseFloat(cs.paddingTop) || 0;
      v.push({ x: p.x + r.left + frame.clientLeft + pl, y: p.y + r.top + frame.clientTop + pt,
               w: frame.clientWidth - pl - (parseFloat(cs.paddingRight) || 0),
               h: frame.clientHeight - pt - (parseFloat(cs.paddingBottom) || 0) });
    }
    return v;
  };
  const measure = (el, ctx) => {
    const v = viewports(ctx), at = v[v.length - 1];
    const r = el.getBoundingClientRect();
    return { x: r.left + at.x, y: r.top + at.y, w: r.width, h: r.height, lx: r.left, ly: r.top, v };
  };
  // An iframe's content box (where its document's viewport is), as offsets from its border box.
  const contentOf = el => {
    const cs = el.ownerDocument.defaultView.getComputedStyle(el);
    const pl = parseFloat(cs.paddingLeft) || 0, pt = parseFloat(cs.paddingTop) || 0;
    return { dx: el.clientLeft + pl, dy: el.clientTop + pt,
             w: el.clientWidth - pl - (parseFloat(cs.paddingRight) || 0),
             h: el.clientHeight - pt - (parseFloat(cs.paddingBottom) || 0) };
  };
  const describe = h => h.localName + (h.id ? '#' + h.id : '') + (h.className && typeof h.className === 'string' && h.className.trim() ? '.' + h.className.trim().split(/\s+/).join('.') : '');
  const out = locs.map(l => {
    const res = { counts: [], used: null, count: 0, error: null, states: null, box: null, text: null, cross_at: null };
    let ctx;
    try { ctx = frameOf(l.frames); } catch (e) {
      res.error = String(e.message || e);
      if (typeof e.crossAt === 'number') res.cross_at = e.crossAt;
      return res;
    }
    for (const s of l.strategies) {
      let found;
      try { found = find(ctx.doc, s); } catch (e) { res.counts.push(0); res.error = res.error || `strategy ${res.counts.length - 1}: ${e.message || e}`; continue; }
      res.counts.push(found.length);
      if (res.used === null && found.length > 0) { res.used = res.counts.length - 1; res.count = found.length; res._el = found[0]; }
    }
    const el = res._el;
    if (!el) return res;
    // Publishing use: bring it into view first (a scroll, not a click: nothing is sent), so a control below
    // the fold is measured where a person would see it. Frames and the top document scroll with it.
    if (opts.scroll) el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    const win = ctx.doc.defaultView;
    const st = win.getComputedStyle(el);
    const b = measure(el, ctx);
    const visible = el.isConnected && b.w > 0 && b.h > 0 && el.checkVisibility({ visibilityProperty: true, opacityProperty: false });
    // A custom element (a design-system button, `<md-filled-button>`, `<sl-button>`) reflects `disabled` as
    // an attribute of its host, where `:disabled` never matches (it is no form control).
    // And an element inside a control (a label <span> in a <button>, found by its text; the text a
    // design-system button shows through its slot) is as disabled as that control: a click on it sends
    // nothing while the control is disabled.
    const offControl = n => n.nodeType === 1 && ((n.matches('button, input, select, textarea') && n.matches(':disabled')) ||
      (n.localName.includes('-') && n.hasAttribute('disabled')));
    let inOff = false;
    for (let n = el; n && !inOff; n = upShown(n)) inOff = offControl(n);
    const disabled = el.matches(':disabled') || inOff || closestDeep(el, '[aria-disabled="true"]') !== null || closestDeep(el, '[inert]') !== null;
    const editableKind = el.localName === 'textarea' ||
      (el.localName === 'input' && !['button', 'submit', 'reset', 'image', 'checkbox', 'radio', 'file', 'hidden', 'range', 'color'].includes(el.type)) ||
      el.isContentEditable;
    const readonly = el.readOnly === true || el.getAttribute('aria-readonly') === 'true';
    // Where a press lands: the element's centre, or (an iframe measured for the frame of another origin it
    // holds: `content`, `at`) the point `at` of its content, in the frame's own CSS pixels.
    res._content = !!l.content;
    const cb = l.content ? contentOf(el) : null;
    const cx = cb && l.at ? b.lx + cb.dx + l.at.x : b.lx + b.w / 2;
    const cy = cb && l.at ? b.ly + cb.dy + l.at.y : b.ly + b.h / 2;
    // In view: intersects the top-level viewport clipped by every frame it is in.
    const clip = b.v.reduce((c, p) => ({ l: Math.max(c.l, p.x), t: Math.max(c.t, p.y),
      r: Math.min(c.r, p.x + p.w), b: Math.min(c.b, p.y + p.h) }), { l: -Infinity, t: -Infinity, r: Infinity, b: Infinity });
    const inView = b.w > 0 && b.h > 0 && b.x < clip.r && b.y < clip.b && b.x + b.w > clip.l && b.y + b.h > clip.t;
    // Receives events: the hit test at its centre lands on it in its own document and, inside frames, on
    // the iframe holding it in every ancestor document (an overlay of the top document over the iframe
    // takes the click while the frame's own document sees nothing in the way). The first miss, innermost
    // first, names what covers it. Each hit test goes down through open shadow roots, and "on it" includes
    // its own shadow tree (a component's inner button).
    let hitEl = null;
    if (visible && cx >= 0 && cy >= 0 && cx < win.innerWidth && cy < win.innerHeight) hitEl = deepHit(ctx.doc, cx, cy);
    let hits = hitEl !== null && within(hitEl, el) && st.pointerEvents !== 'none';
    let cover = hitEl && !within(hitEl, el) ? hitEl : null;
    for (let i = ctx.chain.length - 1; hits && i >= 0; i--) {
      const { doc, frame } = ctx.chain[i], p = b.v[i], w = doc.defaultView;
      const px = b.x - b.lx + cx - p.x, py = b.y - b.ly + cy - p.y;
      const h = px >= 0 && py >= 0 && px < w.innerWidth && py < w.innerHeight ? deepHit(doc, px, py) : null;
      if (h !== frame) { hits = false; cover = h; }
    }
    res.states = {
      attached: el.isConnected,
      visible,
      enabled: !disabled,
      editable: editableKind && !disabled && !readonly,
      focusable: visible && !disabled && (el.tabIndex >= 0 || el.isContentEditable) && st.pointerEvents !== 'none',
      in_viewport: inView,
      receives_events: hits,
      stable: false,
    };
    res.covered_by = cover ? describe(cover) : null;
    // A code editor's own input (CodeMirror 5's textarea: 1 px wide, in a box 0 px high, under the editor's
    // first line) takes a person's typing once the editor is clicked, so it is covered by the editor's own
    // text on purpose: the report says so, and what to declare.
    if (cover && editableKind) {
      const box = el.parentElement;
      const tiny = b.w <= 3 || b.h <= 3 || (box !== null && (box.clientWidth <= 3 || box.clientHeight <= 3));
      let shared = false;
      for (let n = box, i = 0; n && i < 4 && !shared; n = n.parentElement, i++) shared = n.contains(cover);
      res.editor_input = tiny && shared;
    }
    res.box = { x: b.x, y: b.y, w: b.w, h: b.h };
    // Cut to 200 characters for reports; whole when asked (`full_text`: what a filled field shows).
    // A form control's value; any other element's text, even one with a `value` of its own (Trix's
    // `<trix-editor>` answers its HTML there).
    const control = el.localName === 'input' || el.localName === 'textarea';
    // An editor that draws typed emoji as images shows them by their alt (emoji_js!).
    res.text = (control && editableKind && typeof el.value === 'string' ? el.value : norm(shownText(el))).slice(0, opts.full_text ? undefined : 200);
    res._ctx = ctx;
    return res;
  });
  // The frame a locator of another origin's frame runs in (other_origin.rs): the one element itself.
  if (opts.element) return out.length === 1 && out[0]._el ? out[0]._el : null;
  // A non-publishing step acts on its target here, in the same evaluation that resolved it, never on the
  // publish control (also passed in) and never on a control that would submit a form.
  let acted = null;
  // A person's click: the pointer and mouse events of a press and a release at the element's centre, then
  // the click. `el.click()` alone sends only the last: design systems' selects open their list on
  // mousedown (MUI's Select, react-select), so a bare click leaves it shut (Fixturebook's
  // `/compose?category=list`).
  // The range a person's selection would be in a contenteditable field: all of its text (`all`) or the caret
  // after it, from a position inside its first showing leaf to one inside its last (a text node that shows
  // something, a line break, an image, an empty paragraph), never on the field's root between its blocks.
  // A selection anchored on the root itself (what `selectNodeContents` gives) maps to no text position in an
  // editor that keeps its own model: measured on MediaWiki's VisualEditor, the typed text was lost (only the
  // last key stayed) or the last key went before it, in 3 publishes of 8 (Fixturebook `/compose?model_editor=1`
  // drops such input). A field with no such leaf (empty, or only what is not editable) keeps the root's range.
  const textRange = (root, all) => {
    const d = root.ownerDocument, r = d.createRange();
    r.selectNodeContents(root);
    const VOID = ['br', 'img', 'hr', 'wbr', 'input'];
    const leaves = [];
    const walk = n => {
      for (const c of n.childNodes) {
        if (c.nodeType === 3) { if (/[^ \t\n\r\f]/.test(c.data)) leaves.push(c); }
        else if (c.nodeType !== 1) continue;
        else if (!c.isContentEditable) continue;
        else if (VOID.includes(c.localName) || !c.firstChild) leaves.push(c);
        else walk(c);
      }
    };
    walk(root);
    if (!leaves.length) { if (!all) r.collapse(false); return r; }
    const index = n => Array.prototype.indexOf.call(n.parentNode.childNodes, n);
    const first = leaves[0], last = leaves[leaves.length - 1];
    if (last.nodeType === 3) r.setEnd(last, last.data.length);
    else if (last.localName === 'br') r.setEnd(last.parentNode, index(last));
    else if (VOID.includes(last.localName)) r.setEnd(last.parentNode, index(last) + 1);
    else r.setEnd(last, 0);
    if (!all) { r.collapse(false); return r; }
    if (first.nodeType === 3) r.setStart(first, 0);
    else if (VOID.includes(first.localName)) r.setStart(first.parentNode, index(first));
    else r.setStart(first, 0);
    return r;
  };
  const personClick = el => {
    const w = el.ownerDocument.defaultView, r = el.getBoundingClientRect();
    const at = { bubbles: true, cancelable: true, composed: true, view: w, button: 0,
      clientX: r.x + r.width / 2, clientY: r.y + r.height / 2 };
    const pointer = { pointerId: 1, pointerType: 'mouse', isPrimary: true };
    const P = w.PointerEvent || w.MouseEvent;
    el.dispatchEvent(new P('pointerdown', { ...at, ...pointer, buttons: 1 }));
    if (el.dispatchEvent(new w.MouseEvent('mousedown', { ...at, buttons: 1 })) && typeof el.focus === 'function') {
      el.focus({ preventScroll: true });
    }
    el.dispatchEvent(new P('pointerup', { ...at, ...pointer, buttons: 0 }));
    el.dispatchEvent(new w.MouseEvent('mouseup', { ...at, buttons: 0 }));
    el.click();
  };
  if (act) {
    const t = out[act.target], p = act.publish === null ? null : out[act.publish];
    const el = t._el;
    const ctl = el ? closestDeep(el, 'button, input') : null;
    if (!el) acted = 'refused: target not found';
    else if (locs[act.target].strict && t.count > 1) acted = 'refused: target matched ' + t.count + ' elements';
    else if (p && p._el && within(el, p._el) && !(act.focus_publish && act.action.startsWith('focus'))) acted = 'refused: target is the publish control';
    else if (act.action === 'click' && ctl && ctl.form && ['submit', 'image'].includes(ctl.type)) acted = 'refused: target would submit a form';
    else {
      if (act.action === 'focus') el.focus({ preventScroll: true });
      else if (act.action === 'focus_replace' || act.action === 'focus_append') {
        // Before typing: select what the field holds (the text typed next replaces it) or put the caret
        // after it. Selection only: no key event, no input event.
        el.focus({ preventScroll: true });
        const all = act.action === 'focus_replace';
        if (typeof el.setSelectionRange === 'function' && typeof el.value === 'string') {
          el.setSelectionRange(all ? 0 : el.value.length, el.value.length);
        } else {
          const sel = el.ownerDocument.getSelection();
          sel.removeAllRanges(); sel.addRange(textRange(el, all));
        }
      }
      else if (act.action === 'scroll_into_view') el.scrollIntoView({ block: 'center', inline: 'center' });
      else if (act.action === 'click') personClick(el);
      else if (act.action === 'select') {
        // As a person's pick: the option by value, else by its label; the value set through the element's
        // own setter (a framework that tracks it sees the change), then the events a pick sends.
        const opts = el.localName === 'select' ? Array.from(el.options) : null;
        const want = act.option == null ? null : String(act.option);
        const opt = !opts || want === null ? null
          : (opts.find(o => o.value === want) || opts.find(o => norm(o.label || o.text) === norm(want)));
        if (!opts) acted = 'refused: target is not a <select>';
        else if (!opt) acted = 'refused: no option ' + JSON.stringify(want);
        else if (opt.disabled) acted = 'refused: option ' + JSON.stringify(want) + ' is disabled';
        else {
          el.focus({ preventScroll: true });
          Object.getOwnPropertyDescriptor(HTMLSelectElement.prototype, 'value').set.call(el, opt.value);
          el.dispatchEvent(new Event('input', { bubbles: true }));
          el.dispatchEvent(new Event('change', { bubbles: true }));
        }
      }
      else if (act.action === 'check') {
        // Ticked once, never toggled back: a click only when it is not ticked, then it must read ticked.
        const r = el.getAttribute('role');
        const input = el.localName === 'input' && ['checkbox', 'radio'].includes(el.type);
        const ticked = () => input ? el.checked : el.getAttribute('aria-checked') === 'true';
        if (!input && !['checkbox', 'radio', 'switch'].includes(r)) acted = 'refused: target is not a checkbox, radio button or switch';
        else {
          if (!ticked()) personClick(el);
          if (!ticked()) acted = 'refused: still not ticked after a click';
        }
      }
      else { acted = 'refused: unknown action ' + act.action; }
      if (acted === null) acted = 'done';
    }
  }
  // Stability: same box after two animation frames (one frame can coincide with a layout in progress),
  // both measured where the page now rests (after every scroll and the action). The reported box is the
  // first of the two: where the element is for a click that follows. Measured only when asked (`frames`):
  // a check no required state of which is `stable` leaves it false (never measured, never passed).
  // An element's box in top-level CSS pixels; an iframe measured for its frame (`content`): its content box.
  const boxOf = res => {
    const b = measure(res._el, res._ctx);
    if (!res._content) return { x: b.x, y: b.y, w: b.w, h: b.h };
    const c = contentOf(res._el);
    return { x: b.x + c.dx, y: b.y + c.dy, w: c.w, h: c.h };
  };
  for (const res of out) {
    if (!res._el) continue;
    res.box = boxOf(res);
  }
  // A page behind another window (a popup the policy leaves open is put in front of its opener) gets no
  // animation frames at all: measured, the evaluation then waited out the call's bound (10 s). So two
  // frames, or 100 ms of timer when they do not come: the box unchanged over that time is as stable.
  if (opts.frames) await new Promise(r => {
    let done = false;
    const end = () => { if (!done) { done = true; r(); } };
    requestAnimationFrame(() => requestAnimationFrame(end));
    setTimeout(end, 100);
  });
  for (const res of out) {
    if (!res._el) continue;
    if (!opts.frames) { delete res._el; delete res._ctx; delete res._content; continue; }
    const b = boxOf(res);
    res.states.stable = res._el.isConnected && Math.abs(b.x - res.box.x) < 0.5 && Math.abs(b.y - res.box.y) < 0.5 && Math.abs(b.w - res.box.w) < 0.5 && Math.abs(b.h - res.box.h) < 0.5;
    delete res._el; delete res._ctx; delete res._content;
  }
  return { checks: out, acted };
}
"#
);

/// The measured states of one element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElementStates {
    /// Connected to the document.
    pub attached: bool,
    /// Non-empty box, not hidden.
    pub visible: bool,
    /// Not disabled.
    pub enabled: bool,
    /// Accepts text.
    pub editable: bool,
    /// Can take focus.
    pub focusable: bool,
    /// Intersects the viewport, clipped by every iframe it is in.
    pub in_viewport: bool,
    /// Box unchanged across two animation frames (100 ms in a page behind another window, which gets none).
    pub stable: bool,
    /// Hit test at the centre lands on it, and (inside iframes) on its iframe in every ancestor document.
    pub receives_events: bool,
}

impl ElementStates {
    /// Whether `s` holds.
    pub fn has(&self, s: ElementState) -> bool {
        match s {
            ElementState::Attached => self.attached,
            ElementState::Visible => self.visible,
            ElementState::Enabled => self.enabled,
            ElementState::Editable => self.editable,
            ElementState::Focusable => self.focusable,
            ElementState::InViewport => self.in_viewport,
            ElementState::Stable => self.stable,
            ElementState::ReceivesEvents => self.receives_events,
        }
    }
}

/// A box in top-level CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BoxRect {
    /// Left.
    pub x: f64,
    /// Top.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

/// Raw per-locator output of the script.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct RawCheck {
    pub(super) counts: Vec<u32>,
    pub(super) used: Option<usize>,
    pub(super) count: u32,
    pub(super) error: Option<String>,
    pub(super) states: Option<ElementStates>,
    #[serde(rename = "box")]
    pub(super) rect: Option<BoxRect>,
    pub(super) text: Option<String>,
    pub(super) covered_by: Option<String>,
    /// Where the locator's frames reach an iframe of another origin (its index in `frames`): the script
    /// could not look further, [`super::other_origin`] does.
    #[serde(default)]
    pub(super) cross_at: Option<usize>,
    /// A field covered by its own editor's text, being that editor's tiny input (CodeMirror 5's textarea).
    #[serde(default)]
    pub(super) editor_input: bool,
}

/// The result of checking one locator.
#[derive(Debug, Clone, Serialize)]
pub struct LocatorCheck {
    /// The locator's name.
    pub name: String,
    /// Whether a failure fails the probe.
    pub required: bool,
    /// Matches per strategy, in order.
    pub counts: Vec<u32>,
    /// Index of the strategy that decided (the first with any match).
    pub used_strategy: Option<usize>,
    /// Matches of the deciding strategy.
    pub count: u32,
    /// Measured states of the (first) match.
    pub states: Option<ElementStates>,
    /// Required states, in order.
    pub required_states: Vec<ElementState>,
    /// Box in CSS pixels of the top-level page.
    #[serde(rename = "box")]
    pub rect: Option<BoxRect>,
    /// Text (value for fields), truncated to 200 characters.
    pub text: Option<String>,
    /// What covers the centre when `receives_events` is false.
    pub covered_by: Option<String>,
    /// Whether the locator passed: found, strict-ok, and every required state holds.
    pub ok: bool,
    /// Why not, in words.
    pub problems: Vec<String>,
}

impl LocatorCheck {
    /// Whether the element was found and fails only `enabled` of its required states: shown, where a press
    /// would land, and disabled (a publish control a page enables once its own state holds the post).
    pub fn only_disabled(&self) -> bool {
        self.used_strategy.is_some()
            && self.states.as_ref().is_some_and(|st| {
                !st.has(ElementState::Enabled)
                    && self
                        .required_states
                        .iter()
                        .all(|s| *s == ElementState::Enabled || st.has(*s))
            })
    }
}

/// The JSON argument the script receives for one locator.
pub fn script_arg(l: &NamedLocator) -> serde_json::Value {
    let strategies: Vec<serde_json::Value> = l
        .locator
        .strategies
        .iter()
        .map(|s| match s {
            Strategy::Css(c) => serde_json::json!({ "css": c }),
            Strategy::Text { text, exact } => {
                serde_json::json!({ "text": { "text": text, "exact": exact } })
            }
            Strategy::Role { role, name } => {
                serde_json::json!({ "role": { "role": role, "name": name } })
            }
        })
        .collect();
    serde_json::json!({ "strategies": strategies, "strict": l.locator.strict, "frames": l.locator.frames })
}

/// Evaluate `CHECK_JS`-style script `js` with `arg` in the page's main frame; returns its JSON value.
pub async fn evaluate_json(
    page: &Page,
    live: &Liveness,
    what: &str,
    js: &str,
    arg: &serde_json::Value,
) -> Result<serde_json::Value, BrowserError> {
    evaluate_json_in(page, live, what, js, arg, None).await
}

/// [`evaluate_json`] in the execution context `context` (a world oncepost made in a frame), or the main
/// frame's when `None`.
pub(super) async fn evaluate_json_in(
    page: &Page,
    live: &Liveness,
    what: &str,
    js: &str,
    arg: &serde_json::Value,
    context: Option<ExecutionContextId>,
) -> Result<serde_json::Value, BrowserError> {
    let expression = format!("({js})({arg})");
    let mut params = EvaluateParams::builder()
        .expression(expression)
        .await_promise(true)
        .return_by_value(true)
        .build()
        .map_err(BrowserError::Script)?;
    params.context_id = context;
    let resp = live.call(what, page.execute(params)).await?;
    if let Some(ex) = &resp.result.exception_details {
        let msg = ex
            .exception
            .as_ref()
            .and_then(|e| e.description.clone())
            .unwrap_or_else(|| ex.text.clone());
        return Err(BrowserError::Script(msg));
    }
    Ok(resp
        .result
        .result
        .value
        .clone()
        .unwrap_or(serde_json::Value::Null))
}

/// An action to perform on one of the checked locators, in the same evaluation.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Act {
    /// Index of the target among the checked locators.
    pub target: usize,
    /// Index of the publish control among them (refused as a target).
    pub publish: Option<usize>,
    /// `focus`, `scroll_into_view`, `click` or `select`.
    pub action: &'static str,
    /// The option `select` chooses (value or label).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub option: Option<String>,
    /// A focus may target the publish control: the publish is a key pressed in it, a field the fill types
    /// into (`publish.key`). A click or a pick in it is still refused.
    pub focus_publish: bool,
}

#[derive(Deserialize)]
pub(super) struct RawResult {
    pub(super) checks: Vec<RawCheck>,
    pub(super) acted: Option<String>,
}

/// Whether the checks scroll each element into view before measuring it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scroll {
    /// Measure the page as it stands (nothing scrolls).
    Never,
    /// `scrollIntoView({block: 'center', inline: 'center'})` each element, in order, just before it is
    /// measured: its states are those of the element brought into view. Boxes are measured once every
    /// element was handled, where the page then rests (the last one in view).
    IntoView,
}

/// Check every locator in one evaluation and judge each against its required states.
pub async fn check_all(
    page: &Page,
    live: &Liveness,
    locators: &[NamedLocator],
    scroll: Scroll,
) -> Result<Vec<LocatorCheck>, BrowserError> {
    Ok(check_and_act(page, live, locators, None, scroll).await?.0)
}

/// What each of `fields` shows now, whole (a field's value; an editable element's text), in one evaluation
/// that neither scrolls nor waits; `None` for a field not found.
pub(crate) async fn shown_texts(
    page: &Page,
    live: &Liveness,
    fields: &[NamedLocator],
) -> Result<Vec<Option<String>>, BrowserError> {
    let locs = serde_json::Value::Array(fields.iter().map(script_arg).collect());
    let opts = serde_json::json!({ "scroll": false, "frames": false, "full_text": true });
    let js = format!("(locs) => ({CHECK_JS})(locs, null, {opts})");
    let value = evaluate_json(page, live, "read what the fields show", &js, &locs).await?;
    let mut raw: RawResult = serde_json::from_value(value)
        .map_err(|e| BrowserError::Script(format!("unexpected check result: {e}")))?;
    if raw.checks.len() != fields.len() {
        return Err(BrowserError::Script(format!(
            "{} results for {} fields",
            raw.checks.len(),
            fields.len()
        )));
    }
    if raw.checks.iter().any(|c| c.cross_at.is_some()) {
        super::other_origin::check_across(page, live, fields, &mut raw.checks, None, &opts).await?;
    }
    Ok(raw.checks.into_iter().map(|r| r.text).collect())
}

/// What a field shows as the box that scrolls it is moved from its top to its bottom: the text it shows at
/// each position (read as [`shown_texts`] reads it), top to bottom, and whether the bottom was reached
/// within the time given. `None` when the field is not in the page's own documents or nothing scrolls it.
///
/// For editors that draw only the lines near the viewport (CodeMirror 6 draws what is in view and about
/// 1000 px around it, Monaco what is in view): a post of 200 paragraphs in CodeMirror 6 showed 2,039 of its
/// 11,950 characters, the rest being empty space the editor fills when it is scrolled to, so the fill check
/// refused a post that could be made. Each step moves the box by 0.8 of its height and waits two animation
/// frames and a task (the editor measures the scroll in a frame and draws in it); the position the page had
/// is restored at the end. A scroll presses nothing.
pub(crate) async fn scrolled_texts(
    page: &Page,
    live: &Liveness,
    field: &NamedLocator,
    budget: std::time::Duration,
) -> Result<Option<ScrolledTexts>, BrowserError> {
    let arg =
        serde_json::json!({ "loc": script_arg(field), "budget_ms": budget.as_millis() as u64 });
    let js = format!("(arg) => ({SCROLL_READ_JS})(arg, {CHECK_JS})");
    let value = evaluate_json(page, live, "read a field by scrolling it", &js, &arg).await?;
    serde_json::from_value(value)
        .map_err(|e| BrowserError::Script(format!("unexpected scrolled read: {e}")))
}

/// What [`scrolled_texts`] read.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ScrolledTexts {
    /// The text shown at each position, top to bottom.
    pub windows: Vec<String>,
    /// The bottom was reached (false: the time given ran out first).
    pub whole: bool,
}

/// The scrolled read (see [`scrolled_texts`]); takes the check script as `check` to find the field and read
/// it exactly as a plain read does.
const SCROLL_READ_JS: &str = r#"async ({ loc, budget_ms }, check) => {
  const el = await check([loc], null, { scroll: false, frames: false, full_text: false, element: true });
  if (!el) return null;
  const doc = el.ownerDocument, win = doc.defaultView;
  const root = doc.scrollingElement || doc.documentElement;
  const up = n => n.parentElement || (n.getRootNode && n.getRootNode() instanceof win.ShadowRoot ? n.getRootNode().host : null);
  const scrolls = n => {
    const s = win.getComputedStyle(n).overflowY;
    return (s === 'auto' || s === 'scroll' || s === 'overlay') && n.scrollHeight > n.clientHeight + 1;
  };
  let box = null;
  for (let n = el; n && n.nodeType === 1 && n !== root; n = up(n)) if (scrolls(n)) { box = n; break; }
  if (!box) { if (root.scrollHeight > root.clientHeight + 1) box = root; else return null; }
  const frames = () => new Promise(r => {
    win.requestAnimationFrame(() => win.requestAnimationFrame(() => setTimeout(r, 0)));
    setTimeout(r, 200);
  });
  const read = async () => {
    const r = await check([loc], null, { scroll: false, frames: false, full_text: true });
    return (r.checks[0] && r.checks[0].text) || '';
  };
  const was = { box: box.scrollTop, root: root.scrollTop };
  const deadline = performance.now() + budget_ms;
  const windows = [];
  let whole = false;
  // At once, whatever the page's `scroll-behavior`: a page that scrolls smoothly (Bootstrap 5 sets it on
  // `:root`) reaches a position set through `scrollTop` over several frames, and the read found it unmoved.
  const to = (n, top) => n.scrollTo({ top, behavior: 'instant' });
  try {
    // A box of its own from its top to its bottom; the page from the field's top to the field's bottom only
    // (a page that loads more below, a feed, is not read to its end). An editor's box may hold only the
    // lines it draws (CodeMirror 5's `.CodeMirror-code`): its own bottom says nothing of the text's.
    if (box !== root) { box.scrollIntoView({ block: 'start', behavior: 'instant' }); to(box, 0); }
    else to(box, Math.max(0, box.scrollTop + el.getBoundingClientRect().top));
    await frames();
    for (let i = 0; i < 1000; i++) {
      windows.push(await read());
      if (box.scrollTop + box.clientHeight >= box.scrollHeight - 1) { whole = true; break; }
      if (box === root && el.getBoundingClientRect().bottom <= win.innerHeight + 1) { whole = true; break; }
      if (performance.now() > deadline) break;
      const before = box.scrollTop;
      to(box, before + Math.max(16, Math.floor(box.clientHeight * 0.8)));
      await frames();
      if (box.scrollTop <= before) { whole = true; break; }
    }
  } finally {
    to(box, was.box);
    to(root, was.root);
    await frames();
  }
  return { windows, whole };
}"#;

/// Check every locator in one evaluation, then perform `act` (if any) in the same evaluation.
pub(crate) async fn check_and_act(
    page: &Page,
    live: &Liveness,
    locators: &[NamedLocator],
    act: Option<&Act>,
    scroll: Scroll,
) -> Result<(Vec<LocatorCheck>, Option<String>), BrowserError> {
    let locs = serde_json::Value::Array(locators.iter().map(script_arg).collect());
    // The stability wait (two animation frames, ~33 ms at 60 Hz) only where a state depends on it: a check
    // that requires `stable` and acts on nothing. An action's own check is not judged (the action re-resolves
    // its target in the same evaluation), and a step target requires no `stable` by default: on Fixturebook
    // a send made five such checks, 31 ms each, of which three waited for nothing.
    let frames = act.is_none()
        && locators
            .iter()
            .any(|l| l.states.contains(&ElementState::Stable));
    let act_arg = serde_json::to_value(act).unwrap_or(serde_json::Value::Null);
    let opts = serde_json::json!({ "scroll": scroll == Scroll::IntoView, "frames": frames, "full_text": false });
    let js = format!("(locs) => ({CHECK_JS})(locs, {act_arg}, {opts})");
    let evaluate = async || -> Result<RawResult, BrowserError> {
        let value = evaluate_json(page, live, "locator checks", &js, &locs).await?;
        serde_json::from_value(value)
            .map_err(|e| BrowserError::Script(format!("unexpected check result: {e}")))
    };
    let mut raw = evaluate().await?;
    // A locator that found nothing may look into a closed root the HTML parser made, which no script saw
    // being made: the DOM agent lists those, and once the keeper holds a new one the check runs again.
    // Asked only on a miss (a found element costs nothing more), and never again after an action was done
    // (the check runs its action again).
    // (A locator behind a frame of another origin is no miss here: it is looked for inside that frame.)
    if raw
        .checks
        .iter()
        .any(|c| c.used.is_none() && c.cross_at.is_none())
        && raw.acted.as_deref() != Some("done")
        && super::closed_roots::keep_parser_made(page, live).await? > 0
    {
        raw = evaluate().await?;
    }
    let (mut raws, mut acted) = (raw.checks, raw.acted);
    if raws.len() != locators.len() {
        return Err(BrowserError::Script(format!(
            "{} results for {} locators",
            raws.len(),
            locators.len()
        )));
    }
    // Locators behind an iframe of another origin: checked (and acted on) inside that frame. The action
    // above found no target there ("not found"), so it did nothing; the frame's own answer replaces it.
    if raws.iter().any(|c| c.cross_at.is_some())
        && let Some(done) =
            super::other_origin::check_across(page, live, locators, &mut raws, act, &opts).await?
    {
        acted = Some(done);
    }
    Ok((
        locators
            .iter()
            .zip(raws)
            .map(|(l, r)| judge(l, r))
            .collect(),
        acted,
    ))
}

fn judge(l: &NamedLocator, r: RawCheck) -> LocatorCheck {
    let mut problems = Vec::new();
    if let Some(e) = &r.error {
        problems.push(e.clone());
    }
    match r.used {
        None => problems.push(format!(
            "no element matched any of {} strategies",
            l.locator.strategies.len()
        )),
        Some(i) if l.locator.strict && r.count > 1 => problems.push(format!(
            "strict locator: strategy {i} matched {} elements, expected exactly one",
            r.count
        )),
        _ => {}
    }
    if let Some(st) = &r.states {
        for s in &l.states {
            if !st.has(*s) {
                let mut p = format!(
                    "not {}",
                    serde_json::to_value(s)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default()
                );
                if *s == ElementState::ReceivesEvents
                    && let Some(c) = &r.covered_by
                {
                    p.push_str(&format!(" (covered by {c})"));
                    if r.editor_input {
                        p.push_str(
                            ": it is a code editor's own input, a few pixels under the editor's text (as \
                             CodeMirror 5's), which a person reaches by clicking the editor; declare the \
                             field's states without receives_events and shown_in where the editor shows the \
                             text (docs/contracts.md)",
                        );
                    }
                }
                problems.push(p);
            }
        }
    }
    LocatorCheck {
        name: l.name.clone(),
        required: l.required,
        counts: r.counts,
        used_strategy: r.used,
        count: r.count,
        states: r.states,
        required_states: l.states.clone(),
        rect: r.rect,
        text: r.text,
        covered_by: r.covered_by,
        ok: problems.is_empty(),
        problems,
    }
}
