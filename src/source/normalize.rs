//! The normalizer: a source body reduced to its visible text, volatile tokens removed. The rules are in the
//! docs of [`crate::source`]; this module is their one implementation.
use std::borrow::Cow;
use std::cell::{Cell, Ref};
use std::ops::Deref;
use std::rc::Rc;
use std::sync::LazyLock;

use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName};
use regex::{Captures, Regex};
use scraper::node::Element;
use scraper::{ElementRef, Html, HtmlTreeSink, Node};
use unicode_normalization::UnicodeNormalization;

use super::BodyKind;

/// The deepest element nesting read in an HTML body (the `<html>` element is 1). Chromium and WebKit stop
/// nesting at 512 too (`kMaximumHTMLParserDOMTreeDepth`); html5ever does not, and its tree builder does work
/// proportional to the depth for every tag, so a page of nothing but `<div>`s would take hours. Parsing stops
/// at the first element deeper than this: [`normalize`] returns what came before it, and
/// [`normalize_complete`] (what a capture uses) refuses the page.
pub const MAX_HTML_DEPTH: usize = 512;

/// Input is handed to the parser in pieces of this many bytes, so that parsing stops within one piece of
/// the element that went too deep.
const PARSE_PIECE_BYTES: usize = 4096;

/// scraper's tree handle (`ego_tree::NodeRef<Node>`), named through [`ElementRef`]'s `Deref` so that this
/// crate does not pin an `ego-tree` of its own that would have to match the one scraper uses.
type NodeRef<'a> = <ElementRef<'a> as Deref>::Target;

/// The visible text of `body` read as `kind`: blocks joined by `\n`, no trailing newline (see the rules in
/// [`crate::source`]). Pure, no I/O, linear in `body`.
///
/// An HTML body that nests elements deeper than [`MAX_HTML_DEPTH`] is read up to the element that goes too
/// deep; [`normalize_complete`] says when that happened.
pub fn normalize(body: &str, kind: BodyKind) -> String {
    normalize_inner(body, kind).0
}

/// [`normalize`], or `None` when an HTML body nests elements deeper than [`MAX_HTML_DEPTH`]: the text after
/// that point was not read, and a version of part of a page would miss any change there.
pub fn normalize_complete(body: &str, kind: BodyKind) -> Option<String> {
    let (text, cut) = normalize_inner(body, kind);
    (!cut).then_some(text)
}

/// The normalized body, and whether reading stopped early (too deep).
fn normalize_inner(body: &str, kind: BodyKind) -> (String, bool) {
    let mut blocks = Blocks::default();
    let cut = match kind {
        BodyKind::Html => html_blocks(body, &mut blocks),
        BodyKind::Text => {
            text_blocks(body, &mut blocks);
            false
        }
    };
    (blocks.finish(), cut)
}

/// Collects raw text into the current block and appends each finished, cleaned block to the output.
#[derive(Default)]
struct Blocks {
    current: String,
    out: String,
}

impl Blocks {
    fn push(&mut self, s: &str) {
        self.current.push_str(s);
    }

    /// End the current block: clean it and keep it unless nothing is left.
    fn flush(&mut self) {
        if self.current.is_empty() {
            return;
        }
        let block = clean_block(&self.current);
        self.current.clear();
        if block.is_empty() {
            return;
        }
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        self.out.push_str(&block);
    }

    fn finish(mut self) -> String {
        self.flush();
        self.out
    }
}

/// Characters that occupy no space and change nothing a reader sees: removed, not turned into a space.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{feff}' | '\u{200b}' | '\u{ad}')
}

/// Whitespace runs (any Unicode White_Space, NBSP included) to one space, invisible characters removed,
/// trimmed.
fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            space = true;
        } else if !is_invisible(c) {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(c);
        }
    }
    out
}

/// One block as it is kept: collapsed, NFC, volatile tokens removed, collapsed again.
fn clean_block(raw: &str) -> String {
    let collapsed = collapse(raw);
    if collapsed.is_empty() {
        return collapsed;
    }
    let nfc: String = collapsed.nfc().collect();
    collapse(&strip_volatile(nfc))
}

// The volatile-token rules, in the order they run (see the module docs of `crate::source`). Word boundaries
// are ASCII (`(?-u:\b)`): the tokens are ASCII, and ASCII boundaries keep the regexes on the fast automata
// for any haystack. Digits are `[0-9]`, not Unicode `\d`.

/// Rule 1: an ISO 8601 / RFC 3339 date-time. With `T` the seconds are optional, with a space they are not.
const ISO_DATE_TIME: &str = r"(?-u:\b)[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[Tt][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]+)?)?| [0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?)(?: ?(?:[Zz](?-u:\b)|[+-][0-9]{2}(?::?[0-9]{2})?(?-u:\b)))?";
/// Rule 2: a clock time with seconds, 24-hour or with AM/PM.
const CLOCK_TIME: &str = r"(?-u:\b)(?:[01]?[0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:[.,][0-9]+)?(?: ?[AaPp]\.?[Mm](?-u:\b)\.?)?";
/// Rule 3: an English relative time.
const RELATIVE_TIME: &str = r"(?i)(?-u:\b)(?:just now|moments? ago|(?:a few|a couple of|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|[0-9]+) (?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|wks?|months?|mos?|years?|yrs?) ago|[0-9]+ ?[smhdwy] ago)(?-u:\b)";
/// Rule 4: a UUID.
const UUID: &str =
    r"(?-u:\b)[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}(?-u:\b)";
/// Rule 5: a token-like run (removed only when it holds a letter and a digit, see [`strip_volatile`]).
const TOKEN_RUN: &str = r"[A-Za-z0-9_+/=-]{24,}";
/// Rule 6: a run of 16 or more hex digits.
const HEX_RUN: &str = r"[0-9A-Fa-f]{16,}";
/// Rule 7: a 10- or 13-digit Unix timestamp (seconds or milliseconds) starting with 1, as a word.
const UNIX_TIME: &str = r"(?-u:\b)1(?:[0-9]{9}|[0-9]{12})(?-u:\b)";

/// The rules' patterns are constants, checked by a unit test; a failure here is a bug in this file.
fn compile(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid regex")
}

static ISO_DATE_TIME_RE: LazyLock<Regex> = LazyLock::new(|| compile(ISO_DATE_TIME));
static CLOCK_TIME_RE: LazyLock<Regex> = LazyLock::new(|| compile(CLOCK_TIME));
static RELATIVE_TIME_RE: LazyLock<Regex> = LazyLock::new(|| compile(RELATIVE_TIME));
static UUID_RE: LazyLock<Regex> = LazyLock::new(|| compile(UUID));
static TOKEN_RUN_RE: LazyLock<Regex> = LazyLock::new(|| compile(TOKEN_RUN));
static HEX_RUN_RE: LazyLock<Regex> = LazyLock::new(|| compile(HEX_RUN));
static UNIX_TIME_RE: LazyLock<Regex> = LazyLock::new(|| compile(UNIX_TIME));

/// Remove the volatile tokens of one (collapsed) block. Each match becomes a space, not nothing, so the
/// words on either side never run together into a new word; the caller collapses again.
fn strip_volatile(block: String) -> String {
    let mut s = block;
    for re in [
        &*ISO_DATE_TIME_RE,
        &*CLOCK_TIME_RE,
        &*RELATIVE_TIME_RE,
        &*UUID_RE,
    ] {
        s = re.replace_all(&s, " ").into_owned();
    }
    s = TOKEN_RUN_RE
        .replace_all(&s, |c: &Captures<'_>| {
            let run = &c[0];
            let letter = run.bytes().any(|b| b.is_ascii_alphabetic());
            let digit = run.bytes().any(|b| b.is_ascii_digit());
            if letter && digit {
                " ".to_string()
            } else {
                run.to_string()
            }
        })
        .into_owned();
    for re in [&*HEX_RUN_RE, &*UNIX_TIME_RE] {
        s = re.replace_all(&s, " ").into_owned();
    }
    s
}

/// Plain text: paragraphs separated by blank lines, the lines of one paragraph joined.
fn text_blocks(body: &str, blocks: &mut Blocks) {
    let body = body.replace("\r\n", "\n");
    for line in body.split(['\n', '\r']) {
        if line.chars().all(|c| c.is_whitespace() || is_invisible(c)) {
            blocks.flush();
        } else {
            blocks.push(line);
            // The line break inside a paragraph is a space: re-wrapping is not a change.
            blocks.push(" ");
        }
    }
}

/// Elements dropped with everything in them, wherever they are.
const DROPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed",
    "head", "link", "meta", "input", "select", "textarea", "button", "option",
];

/// Elements that end a block where they open and where they close.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "li",
    "ul",
    "ol",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "pre",
    "table",
    "caption",
    "thead",
    "tbody",
    "tfoot",
    "tr",
    "td",
    "th",
    "dl",
    "dt",
    "dd",
    "figure",
    "figcaption",
    "header",
    "footer",
    "nav",
    "aside",
    "address",
    "details",
    "summary",
    "fieldset",
    "legend",
    "form",
    "hgroup",
    "menu",
    "dialog",
    "center",
    "search",
    "body",
    "html",
    "hr",
    "br",
];

/// Whether an element is never visible text: a dropped kind, or hidden by attribute or inline style.
fn is_dropped(el: &Element) -> bool {
    let name = el.name();
    if DROPPED.contains(&name) {
        return true;
    }
    if name == "dialog" && el.attr("open").is_none() {
        return true;
    }
    if el.attr("hidden").is_some() {
        return true;
    }
    if el
        .attr("aria-hidden")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    {
        return true;
    }
    el.attr("style").is_some_and(|style| {
        let compact: String = style
            .chars()
            .filter(|c| !c.is_whitespace())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        compact.contains("display:none") || compact.contains("visibility:hidden")
    })
}

/// Whether an element is site chrome: `nav` and `aside` always, `header` and `footer` when the root is the
/// page's body (`page_root`).
fn is_chrome(el: &Element, page_root: bool) -> bool {
    match el.name() {
        "nav" | "aside" => true,
        "header" | "footer" => page_root,
        _ => false,
    }
}

fn is_block(el: &Element) -> bool {
    BLOCKS.contains(&el.name())
}

/// Where a walk is at a node: reaching it, or done with its children.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    Enter,
    Leave,
}

/// Walk the subtree of `root` in document order without recursion (a page may nest deeper than a stack).
/// `visit(node, Step::Enter)` is called on every node reached and says whether to descend into it;
/// `visit(node, Step::Leave)` on every node descended into, after its children (its answer is ignored).
fn walk<'a>(root: NodeRef<'a>, mut visit: impl FnMut(NodeRef<'a>, Step) -> bool) {
    let root_id = root.id();
    let mut node = root;
    'outer: loop {
        if visit(node, Step::Enter) {
            if let Some(child) = node.first_child() {
                node = child;
                continue;
            }
            visit(node, Step::Leave);
        }
        // Done with `node` and its subtree: the next sibling, else climb, leaving each parent.
        loop {
            if node.id() == root_id {
                break 'outer;
            }
            if let Some(next) = node.next_sibling() {
                node = next;
                continue 'outer;
            }
            match node.parent() {
                Some(parent) => {
                    node = parent;
                    visit(node, Step::Leave);
                }
                None => break 'outer,
            }
        }
    }
}

/// The root to read and whether it is the page itself (body or document), where header and footer are
/// chrome. Candidates inside dropped or chrome subtrees do not count.
fn choose_root(top: NodeRef<'_>) -> (NodeRef<'_>, bool) {
    let top_id = top.id();
    let mut article = None;
    let mut main = None;
    let mut role_main = None;
    let mut body = None;
    walk(top, |node, step| {
        let Some(el) = node.value().as_element() else {
            // Text and comments hold no candidates.
            return false;
        };
        if step == Step::Leave {
            return false;
        }
        if node.id() != top_id && (is_dropped(el) || is_chrome(el, true)) {
            return false;
        }
        let slot = match el.name() {
            "article" => &mut article,
            "main" => &mut main,
            "body" => &mut body,
            _ if el.attr("role").is_some_and(|r| {
                r.split_ascii_whitespace()
                    .any(|t| t.eq_ignore_ascii_case("main"))
            }) =>
            {
                &mut role_main
            }
            _ => return true,
        };
        if slot.is_none() {
            *slot = Some(node);
        }
        true
    });
    match article.or(main).or(role_main) {
        Some(root) => (root, false),
        None => (body.unwrap_or(top), true),
    }
}

/// HTML: the visible text of the chosen root, in blocks. Returns whether parsing stopped early (too deep).
fn html_blocks(body: &str, blocks: &mut Blocks) -> bool {
    let (doc, cut) = parse_html(body);
    // html5ever always makes an `<html>` element; without one there is nothing to read.
    let Some(top) = doc.tree.root().children().find(|n| n.value().is_element()) else {
        return cut;
    };
    let (root, page_root) = choose_root(top);
    let root_id = root.id();
    walk(root, |node, step| match node.value() {
        Node::Text(t) => {
            blocks.push(t);
            false
        }
        Node::Element(el) => {
            if step == Step::Enter
                && node.id() != root_id
                && (is_dropped(el) || is_chrome(el, page_root))
            {
                return false;
            }
            if is_block(el) {
                blocks.flush();
            }
            true
        }
        Node::Document | Node::Fragment => true,
        // Not text: comments, doctypes, processing instructions.
        Node::Comment(_) | Node::Doctype(_) | Node::ProcessingInstruction(_) => false,
    });
    cut
}

/// Parse a document as `Html::parse_document` does, in pieces, stopping after the piece in which an element
/// went deeper than [`MAX_HTML_DEPTH`]. Returns the tree and whether it stopped early.
fn parse_html(body: &str) -> (Html, bool) {
    let too_deep = Rc::new(Cell::new(false));
    let sink = DepthSink {
        inner: HtmlTreeSink::new(Html::new_document()),
        too_deep: Rc::clone(&too_deep),
    };
    let mut parser = html5ever::parse_document(sink, html5ever::ParseOpts::default());
    let mut rest = body;
    while !rest.is_empty() && !too_deep.get() {
        let mut cut = rest.len().min(PARSE_PIECE_BYTES);
        // A piece ends on a character boundary (at most 3 bytes back; 0 always is one).
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (piece, tail) = rest.split_at(cut);
        parser.process(StrTendril::from_slice(piece));
        rest = tail;
    }
    (parser.finish(), too_deep.get())
}

type Handle = <HtmlTreeSink as TreeSink>::Handle;

/// scraper's tree sink, plus a watch on nesting depth: after every element is put in the tree, its
/// ancestors are counted (at most one past the limit, so the watch is O(limit) per element). The parser's
/// stack of open elements lies along the current node's ancestors, so it cannot grow past the limit
/// unnoticed. Every other call is scraper's, unchanged.
struct DepthSink {
    inner: HtmlTreeSink,
    too_deep: Rc<Cell<bool>>,
}

impl DepthSink {
    fn watch(&self, child: Option<Handle>) {
        let Some(id) = child else { return };
        let html = self.inner.0.borrow();
        if let Some(node) = html.tree.get(id)
            && node.value().is_element()
            && node.ancestors().take(MAX_HTML_DEPTH + 1).count() > MAX_HTML_DEPTH
        {
            self.too_deep.set(true);
        }
    }
}

/// The node a call appends, if it is a node (text is no deeper than its parent).
fn appended(child: &NodeOrText<Handle>) -> Option<Handle> {
    match child {
        NodeOrText::AppendNode(h) => Some(*h),
        NodeOrText::AppendText(_) => None,
    }
}

impl TreeSink for DepthSink {
    type Handle = Handle;
    type Output = Html;
    type ElemName<'a> = Ref<'a, QualName>;

    fn finish(self) -> Html {
        self.inner.finish()
    }
    fn parse_error(&self, msg: Cow<'static, str>) {
        self.inner.parse_error(msg)
    }
    fn get_document(&self) -> Handle {
        self.inner.get_document()
    }
    fn elem_name<'a>(&'a self, target: &'a Handle) -> Ref<'a, QualName> {
        self.inner.elem_name(target)
    }
    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> Handle {
        self.inner.create_element(name, attrs, flags)
    }
    fn create_comment(&self, text: StrTendril) -> Handle {
        self.inner.create_comment(text)
    }
    fn create_pi(&self, target: StrTendril, data: StrTendril) -> Handle {
        self.inner.create_pi(target, data)
    }
    fn append(&self, parent: &Handle, child: NodeOrText<Handle>) {
        let id = appended(&child);
        self.inner.append(parent, child);
        self.watch(id);
    }
    fn append_based_on_parent_node(
        &self,
        element: &Handle,
        prev_element: &Handle,
        child: NodeOrText<Handle>,
    ) {
        let id = appended(&child);
        self.inner
            .append_based_on_parent_node(element, prev_element, child);
        self.watch(id);
    }
    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.inner
            .append_doctype_to_document(name, public_id, system_id)
    }
    fn mark_script_already_started(&self, node: &Handle) {
        self.inner.mark_script_already_started(node)
    }
    fn pop(&self, node: &Handle) {
        self.inner.pop(node)
    }
    fn get_template_contents(&self, target: &Handle) -> Handle {
        self.inner.get_template_contents(target)
    }
    fn same_node(&self, x: &Handle, y: &Handle) -> bool {
        self.inner.same_node(x, y)
    }
    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode)
    }
    fn append_before_sibling(&self, sibling: &Handle, new_node: NodeOrText<Handle>) {
        let id = appended(&new_node);
        self.inner.append_before_sibling(sibling, new_node);
        self.watch(id);
    }
    fn add_attrs_if_missing(&self, target: &Handle, attrs: Vec<Attribute>) {
        self.inner.add_attrs_if_missing(target, attrs)
    }
    fn associate_with_form(
        &self,
        target: &Handle,
        form: &Handle,
        nodes: (&Handle, Option<&Handle>),
    ) {
        self.inner.associate_with_form(target, form, nodes)
    }
    fn remove_from_parent(&self, target: &Handle) {
        self.inner.remove_from_parent(target)
    }
    fn reparent_children(&self, node: &Handle, new_parent: &Handle) {
        self.inner.reparent_children(node, new_parent)
    }
    fn is_mathml_annotation_xml_integration_point(&self, handle: &Handle) -> bool {
        self.inner
            .is_mathml_annotation_xml_integration_point(handle)
    }
    fn set_current_line(&self, line_number: u64) {
        self.inner.set_current_line(line_number)
    }
    fn allow_declarative_shadow_roots(&self, intended_parent: &Handle) -> bool {
        self.inner.allow_declarative_shadow_roots(intended_parent)
    }
    fn attach_declarative_shadow(
        &self,
        location: &Handle,
        template: &Handle,
        attrs: &[Attribute],
    ) -> bool {
        self.inner
            .attach_declarative_shadow(location, template, attrs)
    }
    fn maybe_clone_an_option_into_selectedcontent(&self, option: &Handle) {
        self.inner
            .maybe_clone_an_option_into_selectedcontent(option)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html(s: &str) -> String {
        normalize(s, BodyKind::Html)
    }

    fn text(s: &str) -> String {
        normalize(s, BodyKind::Text)
    }

    #[test]
    fn the_patterns_compile() {
        for p in [
            ISO_DATE_TIME,
            CLOCK_TIME,
            RELATIVE_TIME,
            UUID,
            TOKEN_RUN,
            HEX_RUN,
            UNIX_TIME,
        ] {
            assert!(Regex::new(p).is_ok(), "{p}");
        }
    }

    #[test]
    fn blocks_are_nfc_collapsed_and_trimmed() {
        assert_eq!(
            text("  cafe\u{301}\u{a0}\u{2003} au\tlait  \n\n\n\n  x "),
            "caf\u{e9} au lait\nx"
        );
        assert_eq!(text("a\u{200b}b \u{feff}c"), "ab c");
        assert_eq!(text(""), "");
        assert_eq!(text(" \n\u{a0}\n"), "");
    }

    #[test]
    fn text_paragraphs_and_line_endings() {
        assert_eq!(
            text("one\r\ntwo\r\n\r\nthree\rfour\r\rfive"),
            "one two\nthree four\nfive"
        );
        assert_eq!(text("a\nb\n \t \nc"), "a b\nc");
    }

    #[test]
    fn html_blocks_and_inlines() {
        assert_eq!(
            html(
                "<p>a <em>b</em><strong>c</strong> <a href=x>d</a></p><div>e<br>f</div><ul><li>g<li>h</ul>"
            ),
            "a bc d\ne\nf\ng\nh"
        );
        assert_eq!(
            html("<p>&amp; &lt;x&gt; &eacute;&nbsp;&#233;</p>"),
            "& <x> \u{e9} \u{e9}"
        );
        assert_eq!(html("<p>a<!-- note -->b</p><img alt='a picture'>"), "ab");
        assert_eq!(
            html("<table><tr><th>k</th><td>v</td></tr></table><h2>T</h2>tail"),
            "k\nv\nT\ntail"
        );
    }

    #[test]
    fn invisible_subtrees_are_dropped() {
        let page = r#"<body>
            <p>seen</p>
            <script>var t = "secret";</script><style>p{}</style><noscript>enable js</noscript>
            <template><p>tpl</p></template><svg><text>svg</text></svg><iframe>frame</iframe>
            <form><input type=hidden name=csrf value=abc><select><option>opt</option></select>
              <textarea>ta</textarea><button>Send</button><label>Label</label></form>
            <div hidden>hidden attr</div>
            <div aria-hidden="true">aria</div><div aria-hidden="false">aria shown</div>
            <div style="color:red; DISPLAY : none">display none</div>
            <span style="visibility:hidden">vis hidden</span>
            <dialog>closed dialog</dialog><dialog open>open dialog</dialog>
            <canvas>cv</canvas><object>obj</object>
        </body>"#;
        assert_eq!(html(page), "seen\nLabel\naria shown\nopen dialog");
    }

    #[test]
    fn article_root_is_preferred() {
        let page = r#"<html><head><title>Site</title></head><body>
            <nav>Home | About</nav><header>Site banner</header>
            <aside><article>teaser in a sidebar</article></aside>
            <main><p>main intro</p>
              <article><header><h1>Title</h1><p>by A</p></header>
                <nav>in-article nav</nav><p>Body text.</p><aside>related</aside>
                <footer>Filed under x</footer></article>
            </main>
            <footer>Copyright</footer></body></html>"#;
        assert_eq!(html(page), "Title\nby A\nBody text.\nFiled under x");
    }

    #[test]
    fn main_then_role_main_then_body() {
        assert_eq!(html("<body><p>out</p><main><p>in</p></main></body>"), "in");
        assert_eq!(
            html(r#"<body><p>out</p><div role="main"><p>in</p></div></body>"#),
            "in"
        );
        assert_eq!(
            html(r#"<body><div role="main" hidden><p>no</p></div><p>yes</p></body>"#),
            "yes"
        );
        // No body element in the text: html5ever makes one.
        assert_eq!(html("just words"), "just words");
    }

    #[test]
    fn chrome_is_dropped_under_body() {
        let page = "<body><header>Site</header><nav>Menu</nav><p>Content</p>\
                    <aside>Ads</aside><footer>Updated 5 minutes ago. Contact</footer></body>";
        assert_eq!(html(page), "Content");
    }

    #[test]
    fn volatile_date_times_are_removed() {
        for s in [
            "2026-12-03T16:14:00Z",
            "2026-12-03T16:14:00.123456+01:00",
            "2026-12-03t16:14z",
            "2026-12-03 16:14:00+01:00",
            "2026-12-03 16:14:00 -0500",
            "2026-12-03T16:14:00",
        ] {
            assert_eq!(text(&format!("at {s} ok")), "at ok", "{s}");
        }
    }

    #[test]
    fn clock_times_with_seconds_are_removed() {
        for s in [
            "16:14:03",
            "4:14:03 PM",
            "04:14:03pm",
            "23:59:60",
            "16:14:03.250",
            "4:14:03 p.m.",
        ] {
            assert_eq!(text(&format!("at {s} ok")), "at ok", "{s}");
        }
    }

    #[test]
    fn relative_times_are_removed() {
        for s in [
            "5 minutes ago",
            "an hour ago",
            "1 day ago",
            "Just now",
            "A FEW SECONDS AGO",
            "two weeks ago",
            "3h ago",
            "12 mins ago",
            "moments ago",
        ] {
            assert_eq!(text(&format!("Updated {s}.")), "Updated .", "{s}");
        }
    }

    #[test]
    fn ids_and_tokens_are_removed() {
        for s in [
            "0f8fad5b-d9cb-469f-a165-70867728950e",
            "0F8FAD5B-D9CB-469F-A165-70867728950E",
            "deadbeefcafebabe",
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "1234567890123456789",
            "dGhpcyBpcyBhIGNzcmYgdG9rZW4x",
            "ab_CD-12+/=xyzXYZ0987654321",
            "1733241600",
            "1733241600123",
        ] {
            assert_eq!(text(&format!("x {s} y")), "x y", "{s}");
            assert_eq!(text(&format!("({s})")), "( )", "{s}");
        }
        // A token glued to a name by `=` (in the token alphabet) takes the name with it.
        assert_eq!(text("csrf: Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5"), "csrf:");
        assert_eq!(text("csrf=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5 x"), "x");
    }

    #[test]
    fn content_dates_and_times_stay() {
        for s in [
            "2026-12-04",
            "Dec 4, 2026",
            "4 December 2026",
            "10:30",
            "10:30 AM",
            "2026-12-04 10:30",
            "25:13:07",
            "yesterday",
            "version 1.2.3",
            "12345",
            "123456789",
            "2733241600",
            "17332416001",
            "abcdefghijklmnopqrstuvwxyzabcdefgh",
            "a-very-long-hyphenated-phrase-without-digits",
            "Donaudampfschifffahrtsgesellschaftskapitän",
            "ago",
            "now",
        ] {
            assert_eq!(text(&format!("on {s} ok")), format!("on {s} ok"), "{s}");
        }
    }

    #[test]
    fn blocks_emptied_by_removal_are_dropped() {
        assert_eq!(
            text("a\n\n5 minutes ago\n\n2026-12-03T16:14:00Z\n\nb"),
            "a\nb"
        );
        assert_eq!(
            html("<p>a</p><p> <time>16:14:03</time> </p><p>b</p>"),
            "a\nb"
        );
    }

    #[test]
    fn nesting_up_to_the_limit_is_read_without_recursion() {
        // <html> and <body> are two levels.
        let depth = MAX_HTML_DEPTH - 2;
        let page = format!(
            "{}deep{}<p>after</p>",
            "<div>".repeat(depth),
            "</div>".repeat(depth)
        );
        assert_eq!(
            normalize_complete(&page, BodyKind::Html).as_deref(),
            Some("deep\nafter")
        );
    }

    #[test]
    fn nesting_past_the_limit_stops_the_parse() {
        // Pages of nothing but open tags: 4 MiB of them would be hours of html5ever's time unbounded.
        for open in ["<div>", "<ul><li>", "<b>", "<span>", "<table><tr><td>"] {
            let n = super::super::MAX_SOURCE_BYTES / open.len();
            let page = format!("<p>before</p>{}deep", open.repeat(n));
            let started = std::time::Instant::now();
            assert_eq!(normalize_complete(&page, BodyKind::Html), None, "{open}");
            assert_eq!(html(&page), "before", "{open}");
            assert!(
                started.elapsed() < std::time::Duration::from_secs(30),
                "{open}"
            );
        }
        let depth = MAX_HTML_DEPTH - 1;
        let page = format!("{}deep{}", "<div>".repeat(depth), "</div>".repeat(depth));
        assert_eq!(normalize_complete(&page, BodyKind::Html), None);
    }

    #[test]
    fn parsing_in_pieces_changes_nothing() {
        // Text, a CRLF, an entity and multi-byte characters across the piece boundaries.
        let filler = "x".repeat(PARSE_PIECE_BYTES - 3);
        let page = format!("<p>{filler}\r\n&amp;\u{e9}\u{1f600}<b>bold</b></p><p>tail</p>");
        assert_eq!(html(&page), format!("{filler} &\u{e9}\u{1f600}bold\ntail"));
        let y = "y".repeat(PARSE_PIECE_BYTES - 2);
        assert_eq!(
            html(&format!("<p>{y}\u{1f600}</p>")),
            format!("{y}\u{1f600}")
        );
        let z = "z".repeat(PARSE_PIECE_BYTES - 4);
        assert_eq!(html(&format!("<p>{z}&eacute;</p>")), format!("{z}\u{e9}"));
    }
}
