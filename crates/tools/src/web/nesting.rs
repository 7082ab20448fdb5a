//! A fetched page's element nesting, attribute lists and re-opened formatting bounded before it
//! is parsed, and its nesting again after.
//!
//! The HTML parser checks scopes by walking its stack of open elements, so each start tag costs
//! the depth so far (a page of 200,000 nested `<div>`s is quadratic: minutes of a thread), and the
//! converter walks the tree it builds recursively (such a page overflowed the stack and ended the
//! agent). [`cap_nesting`] leaves out, before parsing, the start and end tags of elements that would
//! open deeper than [`MAX_NESTING`] (their text is kept), following the parser's rules closely
//! enough for real pages: void and self-closing-by-sibling elements (`br`, `p`, `li`, …) do not
//! nest, raw text (`script`, `style`, …) holds no tags, `/>` closes only in SVG and MathML. Where
//! the two disagree, [`prune_deeper_than`] cuts the parsed tree at [`MAX_TREE_DEPTH`] before it is
//! walked.
//!
//! Two more costs are bounded in the same pass. The tokenizer compares each attribute's name with
//! every one before it on the tag, so one tag of 600,000 attributes (a 5 MB page) is quadratic:
//! a tag keeps its first [`MAX_ATTRIBUTES`]. And a formatting element (`b`, `font`, `a`, …) that an
//! end tag of its parent closed stays on the parser's list of active formatting elements, which
//! it re-opens, one new element each, before every later text or inline element: 255 `<font>`s
//! closed by a `</div>`, then `<div><br></div>` repeated, built 255 elements per 15 bytes (a 5 MB
//! page, 90 million). At most [`MAX_OPEN_FORMATTING`] formatting elements are left open (not
//! closed by their own end tag) at once; the tags of further ones are left out, their text kept.

use std::borrow::Cow;
use std::collections::HashMap;
use std::rc::Rc;

/// Deepest element nesting kept (real pages stay well under 100).
pub const MAX_NESTING: usize = 256;

/// Deepest the parsed tree may be when it is walked.
pub const MAX_TREE_DEPTH: usize = MAX_NESTING + 8;

/// Most attributes kept on one tag (real tags carry a handful, rarely more than twenty).
pub const MAX_ATTRIBUTES: usize = 64;

/// Most formatting elements left open at once (the parser's own "Noah's Ark" keeps three of each
/// kind with the same attributes; sloppy real pages leave a few open).
pub const MAX_OPEN_FORMATTING: usize = 4;

/// The elements the parser keeps on its list of active formatting elements.
const FORMATTING: [&str; 14] = [
    "a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u",
];

/// Elements that never hold others, or that a sibling closes: they add no depth.
const FLAT: [&str; 35] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "keygen", "basefont", "bgsound", "frame", "p", "li", "dt", "dd", "tr", "td",
    "th", "option", "optgroup", "rb", "rt", "rp", "rtc", "tbody", "thead", "tfoot", "html",
];

/// Elements whose content the tokenizer reads as text up to their end tag.
const RAW: [&str; 9] = [
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript",
];

/// Elements inside SVG or MathML whose content is HTML again.
const INTEGRATION: [&str; 8] = [
    "foreignobject",
    "desc",
    "title",
    "annotation-xml",
    "mi",
    "mo",
    "mn",
    "mtext",
];

/// `html` without the tags of elements that would open deeper than `max` or would leave more than
/// [`MAX_OPEN_FORMATTING`] formatting elements open, and with no tag holding more than
/// [`MAX_ATTRIBUTES`] attributes (borrowed when nothing changed).
pub fn cap_nesting(html: &str, max: usize) -> Cow<'_, str> {
    let bytes = html.as_bytes();
    // Open elements: name, and whether their content is SVG/MathML.
    let mut open: Vec<(String, bool)> = Vec::new();
    let mut dropped: HashMap<String, usize> = HashMap::new();
    // Formatting elements whose start tag was kept and whose end tag has not come, by name.
    let mut formatting = Formatting::default();
    let mut out = Edited::default();
    let mut i = 0;
    while let Some(found) = html[i..].find('<') {
        let at = i + found;
        let rest = &html[at..];
        if rest.starts_with("<!--") {
            i = at + rest.find("-->").map_or(rest.len(), |e| e + 3);
            continue;
        }
        let closing = rest.starts_with("</");
        let start = at + if closing { 2 } else { 1 };
        let len = bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-' || **b == b':')
            .count();
        if len == 0 || !bytes[start].is_ascii_alphabetic() {
            i = at + 1;
            continue;
        }
        let name = html[start..start + len].to_ascii_lowercase();
        let (end, cut) = scan_tag(bytes, start + len, MAX_ATTRIBUTES);
        let foreign = open.last().is_some_and(|(_, f)| *f);
        let keep = if closing {
            match dropped.get_mut(&name).filter(|n| **n > 0) {
                Some(n) => {
                    *n -= 1;
                    false
                }
                None => {
                    if !foreign {
                        formatting.closed(&name);
                    }
                    if let Some(pos) = open.iter().rposition(|(n, _)| *n == name) {
                        open.truncate(pos);
                    }
                    true
                }
            }
        } else if !foreign && name == "plaintext" {
            break;
        } else if !foreign && RAW.contains(&name.as_str()) {
            out.keep(html, (at, end), cut);
            let close = find_ascii_ci(html, end, &format!("</{name}"));
            i = close.unwrap_or(html.len());
            continue;
        } else if (!foreign && FLAT.contains(&name.as_str()))
            || (foreign && bytes[..end].ends_with(b"/>"))
        {
            true
        } else if open.len() >= max || (!foreign && !formatting.opens(&name)) {
            *dropped.entry(name).or_default() += 1;
            false
        } else {
            let inner = match name.as_str() {
                "svg" | "math" => true,
                n if foreign && INTEGRATION.contains(&n) => false,
                _ => foreign,
            };
            open.push((name, inner));
            true
        };
        if keep {
            out.keep(html, (at, end), cut);
        } else {
            out.leave_out(html, (at, end));
        }
        i = end;
    }
    out.finish(html)
}

/// The formatting elements left open, by name.
#[derive(Default)]
struct Formatting {
    open: HashMap<String, usize>,
    total: usize,
}

impl Formatting {
    /// Whether a start tag `name` may open (counting it when it is a formatting element).
    fn opens(&mut self, name: &str) -> bool {
        if !FORMATTING.contains(&name) {
            return true;
        }
        // A new `<a>` closes the one left open (the parser's adoption agency).
        if name == "a" {
            self.closed_all("a");
        }
        if self.total >= MAX_OPEN_FORMATTING {
            return false;
        }
        *self.open.entry(name.to_owned()).or_default() += 1;
        self.total += 1;
        true
    }

    /// An end tag `name` came (it closes the latest of that name).
    fn closed(&mut self, name: &str) {
        if let Some(n) = self.open.get_mut(name).filter(|n| **n > 0) {
            *n -= 1;
            self.total -= 1;
        }
    }

    fn closed_all(&mut self, name: &str) {
        if let Some(n) = self.open.get_mut(name) {
            self.total -= *n;
            *n = 0;
        }
    }
}

/// The page as it is being rewritten: the text up to `copied` is settled in `text` (none while
/// nothing has changed).
#[derive(Default)]
struct Edited {
    text: Option<String>,
    copied: usize,
}

impl Edited {
    /// Keeps the tag at `tag` of `html`, without its attributes from `cut` on when it has too many.
    fn keep(&mut self, html: &str, tag: (usize, usize), cut: Option<usize>) {
        let Some(cut) = cut else {
            return;
        };
        let (_, end) = tag;
        let closing = if html[..end].ends_with("/>") {
            "/>"
        } else {
            ">"
        };
        let text = self.settled(html, cut);
        text.push_str(closing);
        self.copied = end;
    }

    /// Leaves the tag at `tag` of `html` out.
    fn leave_out(&mut self, html: &str, tag: (usize, usize)) {
        let (at, end) = tag;
        self.settled(html, at);
        self.copied = end;
    }

    /// The rewritten text with `html` copied up to `to`.
    fn settled(&mut self, html: &str, to: usize) -> &mut String {
        let copied = self.copied;
        let text = self
            .text
            .get_or_insert_with(|| String::with_capacity(html.len()));
        text.push_str(&html[copied..to]);
        text
    }

    fn finish(self, html: &str) -> Cow<'_, str> {
        match self.text {
            None => Cow::Borrowed(html),
            Some(mut text) => {
                text.push_str(&html[self.copied..]);
                Cow::Owned(text)
            }
        }
    }
}

/// The index after the `>` that ends the tag whose attributes start at `from` (or the end of
/// `bytes`), and where its attribute number `max + 1` starts when it has more than `max`. Read
/// as the tokenizer reads a tag: a name runs to a space, `/`, `>` or `=`; quotes count only
/// around a value.
fn scan_tag(bytes: &[u8], from: usize, max: usize) -> (usize, Option<usize>) {
    let space = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_whitespace);
    let (mut i, mut count, mut cut) = (from, 0, None);
    loop {
        while space(i) || bytes.get(i) == Some(&b'/') {
            i += 1;
        }
        match bytes.get(i) {
            None => return (bytes.len(), cut),
            Some(b'>') => return (i + 1, cut),
            Some(_) => {}
        }
        count += 1;
        if count == max + 1 {
            cut = Some(i);
        }
        // The name: its first character may be `=` (a parse error the tokenizer keeps).
        i += 1;
        while bytes
            .get(i)
            .is_some_and(|b| !b.is_ascii_whitespace() && !matches!(b, b'/' | b'>' | b'='))
        {
            i += 1;
        }
        let mut j = i;
        while space(j) {
            j += 1;
        }
        if bytes.get(j) != Some(&b'=') {
            continue;
        }
        i = j + 1;
        while space(i) {
            i += 1;
        }
        match bytes.get(i) {
            Some(&quote @ (b'"' | b'\'')) => {
                match bytes[i + 1..].iter().position(|b| *b == quote) {
                    Some(close) => i += close + 2,
                    None => return (bytes.len(), cut),
                }
            }
            _ => {
                while bytes
                    .get(i)
                    .is_some_and(|b| !b.is_ascii_whitespace() && *b != b'>')
                {
                    i += 1;
                }
            }
        }
    }
}

/// Where `needle` (lower-case ASCII) starts in `html` at or after `from`, ignoring ASCII case.
fn find_ascii_ci(html: &str, from: usize, needle: &str) -> Option<usize> {
    let hay = &html.as_bytes()[from..];
    let needle = needle.as_bytes();
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
        .map(|p| from + p)
}

/// Drops what lies deeper than `max` in the parsed tree `root`, without recursion; whether
/// anything was dropped.
pub fn prune_deeper_than(root: &Rc<htmd::Node>, max: usize) -> bool {
    let mut pruned = false;
    let mut stack = vec![(Rc::clone(root), 0usize)];
    while let Some((node, depth)) = stack.pop() {
        if depth >= max {
            let mut children = node.children.borrow_mut();
            pruned |= !children.is_empty();
            children.clear();
            continue;
        }
        for child in node.children.borrow().iter() {
            stack.push((Rc::clone(child), depth + 1));
        }
    }
    pruned
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tags_deeper_than_the_cap_are_left_out() {
        let check = |html: &str, max: usize, expected: &str| {
            assert_eq!(cap_nesting(html, max), expected, "{html}");
        };
        check("<div><div>a</div></div>", 2, "<div><div>a</div></div>");
        check(
            "<div><div><b>a</b></div></div>",
            2,
            "<div><div>a</div></div>",
        );
        check("<div><span><i>x</i></span>y</div>", 1, "<div>xy</div>");
        check("<p>a<p>b<p>c", 1, "<p>a<p>b<p>c");
        check(
            "<ul><li>a<li>b</ul><ul><li>c</ul>",
            1,
            "<ul><li>a<li>b</ul><ul><li>c</ul>",
        );
        check("<div><br><img src=x><div>a", 1, "<div><br><img src=x>a");
        check("<div></span></span><div>a", 1, "<div></span></span>a");
        check("<div/><div/>a", 1, "<div/>a");
        check(
            "<svg><path d='M0'/><path/></svg><div>a",
            1,
            "<svg><path d='M0'/><path/></svg><div>a",
        );
        check(
            "<svg><foreignObject><div/><div/>",
            3,
            "<svg><foreignObject><div/>",
        );
        check(
            "<script>'<div><div>'</script><div>a",
            1,
            "<script>'<div><div>'</script><div>a",
        );
        check("<div title='a>b'><div>c", 1, "<div title='a>b'>c");
        check("<!-- <div><div> --><div>a", 1, "<!-- <div><div> --><div>a");
        check("Привет <div><div>мир", 1, "Привет <div>мир");
    }

    #[test]
    fn a_tag_keeps_its_first_attributes() {
        let attrs = |n: usize| {
            (0..n)
                .map(|i| format!(" a{i}=\"v>{i}\""))
                .collect::<String>()
        };
        let check = |html: String, expected: String| {
            assert_eq!(cap_nesting(&html, 8), expected, "{html}");
        };
        let kept = attrs(MAX_ATTRIBUTES);
        check(format!("<p{kept}>t</p>"), format!("<p{kept}>t</p>"));
        let more = attrs(MAX_ATTRIBUTES + 500);
        check(format!("<p{more}>t</p>"), format!("<p{kept} >t</p>"));
        check(format!("<br{more}/>t"), format!("<br{kept} />t"));
        check(format!("<p>t</p{more}>"), format!("<p>t</p{kept} >"));
        check(
            format!("<script{more}>var a = '<div>';</script>t"),
            format!("<script{kept} >var a = '<div>';</script>t"),
        );
    }

    #[test]
    fn at_most_four_formatting_elements_are_left_open() {
        let fonts = |from: usize, to: usize| {
            (from..to)
                .map(|i| format!("<font id={i}>"))
                .collect::<String>()
        };
        let page = format!("<div>{}</div><div><br></div>", fonts(0, 40));
        let expected = format!(
            "<div>{}</div><div><br></div>",
            fonts(0, MAX_OPEN_FORMATTING)
        );
        assert_eq!(cap_nesting(&page, MAX_NESTING), expected);
        // Closed ones do not count; each new `<a>` closes the one left open.
        let closed = "<b>x</b>".repeat(100);
        assert_eq!(cap_nesting(&closed, MAX_NESTING), closed);
        let links = "<a href=1>x".repeat(100);
        assert_eq!(cap_nesting(&links, MAX_NESTING), links);
        // A left-out start tag takes its end tag with it.
        let (open, close) = (
            "<i>".repeat(MAX_OPEN_FORMATTING),
            "</i>".repeat(MAX_OPEN_FORMATTING),
        );
        let page = format!("{open}<b>bold</b>{close}");
        let expected = format!("{open}bold{close}");
        assert_eq!(cap_nesting(&page, MAX_NESTING), expected);
    }

    #[test]
    fn a_deep_tree_is_cut_without_recursion() {
        let html = format!("{}x", "<div>".repeat(5_000));
        let tree = htmd::HtmlToMarkdown::new().html_to_tree(&html).unwrap();
        assert!(prune_deeper_than(&tree, 10));
        assert!(!prune_deeper_than(&tree, 10));
    }
}
