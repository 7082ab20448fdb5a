//! A fetched page's element nesting bounded before and after it is parsed.
//!
//! The HTML parser checks scopes by walking its stack of open elements, so each start tag costs
//! the depth so far (a page of 200,000 nested `<div>`s is quadratic: minutes of a thread), and the
//! converter walks the tree it builds recursively (such a page overflowed the stack and ended the
//! agent). [`cap_nesting`] leaves out, before parsing, the start and end tags of elements that would
//! open deeper than [`MAX_NESTING`] (their text is kept), following the parser's rules closely
//! enough for real pages: void and self-closing-by-sibling elements (`br`, `p`, `li`, …) do not
//! nest, raw text (`script`, `style`, …) holds no tags, `/>` closes only in SVG and MathML. Where
//! the two disagree, [`prune_deeper_than`] cuts the parsed tree at [`MAX_NESTING`] before it is walked.

use std::borrow::Cow;
use std::collections::HashMap;
use std::rc::Rc;

/// Deepest element nesting kept (real pages stay well under 100).
pub const MAX_NESTING: usize = 256;

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

/// `html` without the tags of elements that would open deeper than `max` (borrowed when none).
pub fn cap_nesting(html: &str, max: usize) -> Cow<'_, str> {
    let bytes = html.as_bytes();
    // Open elements: name, and whether their content is SVG/MathML.
    let mut open: Vec<(String, bool)> = Vec::new();
    let mut dropped: HashMap<String, usize> = HashMap::new();
    let mut out: Option<String> = None;
    let mut copied = 0;
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
        let end = tag_end(bytes, start + len);
        let foreign = open.last().is_some_and(|(_, f)| *f);
        let keep = if closing {
            match dropped.get_mut(&name).filter(|n| **n > 0) {
                Some(n) => {
                    *n -= 1;
                    false
                }
                None => {
                    if let Some(pos) = open.iter().rposition(|(n, _)| *n == name) {
                        open.truncate(pos);
                    }
                    true
                }
            }
        } else if !foreign && name == "plaintext" {
            break;
        } else if !foreign && RAW.contains(&name.as_str()) {
            let close = find_ascii_ci(html, end, &format!("</{name}"));
            i = close.unwrap_or(html.len());
            continue;
        } else if (!foreign && FLAT.contains(&name.as_str()))
            || (foreign && bytes[..end].ends_with(b"/>"))
        {
            true
        } else if open.len() >= max {
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
        if !keep {
            let text = out.get_or_insert_with(|| String::with_capacity(html.len()));
            text.push_str(&html[copied..at]);
            copied = end;
        }
        i = end;
    }
    match out {
        None => Cow::Borrowed(html),
        Some(mut text) => {
            text.push_str(&html[copied..]);
            Cow::Owned(text)
        }
    }
}

/// The index after the `>` that ends the tag whose attributes start at `from` (quotes count only
/// in an attribute's value, as the tokenizer reads them), or the end of `bytes`.
fn tag_end(bytes: &[u8], from: usize) -> usize {
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'>' => return i + 1,
            b'=' => {
                i += 1;
                while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
                    i += 1;
                }
                if let Some(&quote @ (b'"' | b'\'')) = bytes.get(i) {
                    match bytes[i + 1..].iter().position(|b| *b == quote) {
                        Some(close) => i += close + 2,
                        None => return bytes.len(),
                    }
                }
            }
            _ => i += 1,
        }
    }
    bytes.len()
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
    fn a_deep_tree_is_cut_without_recursion() {
        let html = format!("{}x", "<div>".repeat(5_000));
        let tree = htmd::HtmlToMarkdown::new().html_to_tree(&html).unwrap();
        assert!(prune_deeper_than(&tree, 10));
        assert!(!prune_deeper_than(&tree, 10));
    }
}
