//! A fetched body made readable: HTML to Markdown (the page's content, links kept; scripts,
//! styles, navigation, headers, footers and forms left out), text and JSON passed through, any
//! other type described rather than dumped. Bytes are decoded by the charset the response or the
//! page names (a byte-order mark first), UTF-8 otherwise.

use encoding_rs::{Encoding, UTF_8};

use super::nesting::{MAX_NESTING, MAX_TREE_DEPTH, cap_nesting, prune_deeper_than};

/// What a body is, by its `Content-Type` (or, lacking one, by a look at its first bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Html,
    Text,
    Other,
}

/// The kind of a body of media type `content_type` (the header's value, parameters included).
pub fn kind_of(content_type: Option<&str>, head: &[u8]) -> Kind {
    let Some(ct) = content_type else {
        return sniff(head);
    };
    let mime = ct
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        "" => sniff(head),
        m if m.starts_with("text/")
            || m.ends_with("+json")
            || m.ends_with("+xml")
            || matches!(
                m,
                "application/json"
                    | "application/xml"
                    | "application/javascript"
                    | "application/x-ndjson"
                    | "application/yaml"
                    | "application/toml"
            ) =>
        {
            Kind::Text
        }
        _ => Kind::Other,
    }
}

fn sniff(head: &[u8]) -> Kind {
    let start = String::from_utf8_lossy(&head[..head.len().min(512)]).to_ascii_lowercase();
    let start = start.trim_start();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Kind::Html
    } else if head.contains(&0) {
        Kind::Other
    } else {
        Kind::Text
    }
}

/// `bytes` decoded: a byte-order mark wins, then the `charset` of `content_type`, then (for HTML)
/// a `<meta charset>` in the first kilobytes, then UTF-8. Undecodable bytes become U+FFFD.
pub fn decode(bytes: &[u8], content_type: Option<&str>, kind: Kind) -> String {
    let encoding = Encoding::for_bom(bytes)
        .map(|(e, _)| e)
        .or_else(|| content_type.and_then(charset_param))
        .or_else(|| (kind == Kind::Html).then(|| meta_charset(bytes)).flatten())
        .unwrap_or(UTF_8);
    let (text, _, _) = encoding.decode(bytes);
    text.into_owned()
}

fn charset_param(content_type: &str) -> Option<&'static Encoding> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        (k.trim().eq_ignore_ascii_case("charset"))
            .then(|| Encoding::for_label(v.trim().trim_matches(['"', '\'']).as_bytes()))
            .flatten()
    })
}

/// The charset a page declares in a `<meta>` tag (`charset=…` or `content="…; charset=…"`).
fn meta_charset(bytes: &[u8]) -> Option<&'static Encoding> {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).to_ascii_lowercase();
    let mut rest = head.as_str();
    while let Some(at) = rest.find("<meta") {
        rest = &rest[at + 5..];
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        if let Some(pos) = tag.find("charset=") {
            let value = tag[pos + 8..].trim_start_matches(['"', '\'']);
            let end = value
                .find(|c: char| c == '"' || c == '\'' || c == ';' || c.is_whitespace() || c == '/')
                .unwrap_or(value.len());
            if let Some(encoding) = Encoding::for_label(&value.as_bytes()[..end]) {
                return Some(encoding);
            }
        }
    }
    None
}

/// Elements that are not a page's content.
const DROPPED_TAGS: [&str; 14] = [
    "head", "script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form",
    "svg", "iframe", "button", "select",
];

/// The page's `<title>`, if it has one.
pub fn title(html: &str) -> Option<String> {
    // The first 64 KiB, cut on a character boundary (a byte index inside a letter panicked).
    let lower = html[..html.floor_char_boundary(64 * 1024)].to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open_end = start + lower[start..].find('>')? + 1;
    let close = open_end + lower[open_end..].find("</title")?;
    let title = html
        .get(open_end..close)?
        .split_whitespace()
        .collect::<Vec<_>>();
    (!title.is_empty()).then(|| title.join(" "))
}

/// HTML bytes converted at first per character to be shown (a page's text is a small part of its
/// markup); at least [`FIRST_PREFIX`].
const PREFIX_BYTES_PER_CHAR: usize = 16;
const FIRST_PREFIX: usize = 64 * 1024;

/// `html` as Markdown: the content of `<main>` (or `<article>`) when the page has one, else of the
/// whole body, without its navigation, scripts, styles and forms.
pub fn html_to_markdown(html: &str) -> String {
    convert(main_part(html).unwrap_or(html), &Unwatched).unwrap_or_default()
}

/// What a conversion in rounds ([`html_to_markdown_within`]) answers to while it runs: the
/// parser cannot be interrupted, so the caller's time limit is checked between its steps.
pub trait Watch {
    /// Whether to stop before the next step (the caller's time is up).
    fn stopped(&self) -> bool;
    /// A round finished that is not the last: the Markdown of a prefix of the content, shorter
    /// than what is shown. Kept, it is what can be shown if no later round finishes in time.
    fn partial(&self, round: &Round);
}

/// A conversion nothing stops.
#[derive(Debug)]
pub struct Unwatched;

impl Watch for Unwatched {
    fn stopped(&self) -> bool {
        false
    }

    fn partial(&self, _: &Round) {}
}

/// The Markdown of the first `bytes` of the content converted (the `<main>` part or the whole
/// page), which is `of` bytes long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Round {
    pub markdown: String,
    pub bytes: usize,
    pub of: usize,
}

impl Round {
    /// Whether this is the whole content's Markdown.
    pub fn is_whole(&self) -> bool {
        self.bytes >= self.of
    }
}

/// [`html_to_markdown`] converting no more of the page than showing `max_chars` characters needs:
/// a prefix of the content first, four times longer each round, the whole only when the
/// prefixes fall short. A huge page then costs the time of what is shown, not of its size (its
/// 5 MB took seconds to convert, racing the tool's time limit). Each round that falls short goes
/// to `watch`, which is asked before each step whether to stop: `None` when it said so.
pub fn html_to_markdown_within(html: &str, max_chars: usize, watch: &dyn Watch) -> Option<Round> {
    let content = main_part(html).unwrap_or(html);
    let of = content.len();
    let mut len = max_chars
        .saturating_mul(PREFIX_BYTES_PER_CHAR)
        .max(FIRST_PREFIX);
    loop {
        if len >= of {
            let markdown = convert(content, watch)?;
            return Some(Round {
                markdown,
                bytes: of,
                of,
            });
        }
        let end = (0..=len)
            .rev()
            .find(|&i| content.is_char_boundary(i))
            .unwrap_or(0);
        let round = Round {
            markdown: convert(&content[..end], watch)?,
            bytes: end,
            of,
        };
        if round.markdown.chars().nth(max_chars).is_some() {
            return Some(round);
        }
        watch.partial(&round);
        len = len.saturating_mul(4);
    }
}

/// `content` as Markdown, its nesting bounded first (see [`super::nesting`]); `None` when `watch`
/// said to stop before the parse or between the parse and the walk of its tree.
fn convert(content: &str, watch: &dyn Watch) -> Option<String> {
    if watch.stopped() {
        return None;
    }
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(DROPPED_TAGS.to_vec())
        .build();
    let content = cap_nesting(content, MAX_NESTING);
    let Ok(tree) = converter.html_to_tree(&content) else {
        return Some(String::new());
    };
    if watch.stopped() {
        return None;
    }
    if prune_deeper_than(&tree, MAX_TREE_DEPTH) {
        tracing::debug!("web_fetch left out what a page nests deeper than {MAX_TREE_DEPTH}");
    }
    Some(tidy(&converter.tree_to_markdown(&tree)))
}

/// The `<main>…</main>` or `<article>…</article>` part of `html` (the first and outermost).
fn main_part(html: &str) -> Option<&str> {
    let lower = html.to_ascii_lowercase();
    ["main", "article"].iter().find_map(|tag| {
        let start = find_open(&lower, tag)?;
        let end = lower.rfind(&format!("</{tag}>"))? + tag.len() + 3;
        (end > start).then(|| html.get(start..end)).flatten()
    })
}

fn find_open(lower: &str, tag: &str) -> Option<usize> {
    let needle = format!("<{tag}");
    let mut from = 0;
    while let Some(at) = lower[from..].find(&needle) {
        let at = from + at;
        match lower.as_bytes().get(at + needle.len()) {
            Some(b'>' | b' ' | b'\t' | b'\n' | b'\r' | b'/') => return Some(at),
            _ => from = at + needle.len(),
        }
    }
    None
}

/// Runs of blank lines squeezed to one.
fn tidy(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank = 0;
    for line in markdown.lines() {
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.trim().to_owned()
}

/// `text` cut to at most `max_chars` characters, and whether it was cut.
pub fn cut(text: &str, max_chars: usize) -> (&str, bool) {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => (&text[..at], true),
        None => (text, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_markdown_with_links_and_without_chrome() {
        let page = "<html><head><title> Tea  notes </title><style>p{}</style></head><body>\
            <nav><a href=\"/\">Home</a></nav><main><h1>Rooibos</h1><p>A <a href=\"https://ex.org/r\">red \
            bush</a> tea.</p><script>alert(1)</script></main><footer>(c)</footer></body></html>";
        let md = html_to_markdown(page);
        assert!(md.contains("# Rooibos"), "{md}");
        assert!(md.contains("[red bush](https://ex.org/r)"), "{md}");
        for gone in ["Home", "alert", "(c)", "p{}"] {
            assert!(!md.contains(gone), "{gone} kept: {md}");
        }
        assert_eq!(title(page).as_deref(), Some("Tea notes"));
    }

    #[test]
    fn a_huge_page_is_converted_only_as_far_as_is_shown() {
        let html = format!(
            "<body>{}</body>",
            "<p>Steeped rooibos keeps well.</p>".repeat(100_000)
        );
        let partial = html_to_markdown_within(&html, 1000, &Unwatched).unwrap();
        assert!(!partial.is_whole());
        let partial = partial.markdown;
        assert!(partial.chars().count() > 1000);
        assert!(partial.len() < html.len() / 10, "{}", partial.len());
        assert!(partial.starts_with("Steeped rooibos keeps well.\n\nSteeped"));
        let small = "<body><main><h1>Rooibos</h1><p>A red bush.</p></main></body>";
        let round = html_to_markdown_within(small, 1000, &Unwatched).unwrap();
        assert_eq!(
            (round.is_whole(), round.markdown),
            (true, html_to_markdown(small))
        );
    }

    /// Stops when it is told to, before its next step, keeping the rounds that fell short.
    struct StopAfter {
        rounds: usize,
        kept: std::cell::RefCell<Vec<Round>>,
    }

    impl Watch for StopAfter {
        fn stopped(&self) -> bool {
            self.kept.borrow().len() >= self.rounds
        }

        fn partial(&self, round: &Round) {
            self.kept.borrow_mut().push(round.clone());
        }
    }

    #[test]
    fn a_conversion_in_rounds_stops_when_told_and_keeps_what_it_finished() {
        // Little text in much markup: every round falls short of what is shown.
        let html = format!(
            "<body><p>Rooibos.</p>{}</body>",
            "<div></div>".repeat(50_000)
        );
        let watch = StopAfter {
            rounds: 2,
            kept: Default::default(),
        };
        assert_eq!(html_to_markdown_within(&html, 1000, &watch), None);
        let kept = watch.kept.into_inner();
        let sizes: Vec<(usize, usize)> = kept.iter().map(|r| (r.bytes, r.of)).collect();
        assert_eq!(
            sizes,
            [(FIRST_PREFIX, html.len()), (4 * FIRST_PREFIX, html.len())]
        );
        assert!(kept.iter().all(|r| r.markdown == "Rooibos."), "{kept:?}");
        let unstopped = StopAfter {
            rounds: usize::MAX,
            kept: Default::default(),
        };
        let whole = html_to_markdown_within(&html, 1000, &unstopped).unwrap();
        assert!(
            whole.is_whole() && whole.markdown == "Rooibos.",
            "{whole:?}"
        );
    }

    /// A tag of 100,000 attributes (quadratic in the tokenizer) and formatting elements the parser
    /// would re-open before each of 20,000 `<br>`s come out as their text and links.
    #[test]
    fn pages_built_to_be_slow_convert_to_their_text() {
        let attrs: String = (0..100_000).map(|i| format!(" a{i}=x")).collect();
        let page = format!(
            "<body><p>See <a href=\"https://ex.org/x\"{attrs}>the link</a> now.</p></body>"
        );
        assert_eq!(
            html_to_markdown(&page),
            "See [the link](https://ex.org/x) now."
        );
        let fonts: String = (0..255).map(|i| format!("<font id=f{i}>")).collect();
        let page = format!(
            "<body><div>{fonts}</div>{}<p>end</p></body>",
            "<div><br></div>".repeat(20_000)
        );
        assert_eq!(html_to_markdown(&page), "end");
    }

    #[test]
    fn charsets_are_honoured() {
        let latin1 = b"caf\xe9";
        assert_eq!(
            decode(latin1, Some("text/plain; charset=ISO-8859-1"), Kind::Text),
            "café"
        );
        let page = b"<html><head><meta charset=\"windows-1251\"></head><body>\xcf\xf0\xe8\xe2\xe5\xf2</body></html>";
        assert!(decode(page, Some("text/html"), Kind::Html).contains("Привет"));
        let sjis = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\">\x93\xfa\x96\x7b";
        assert!(decode(sjis, None, Kind::Html).contains("日本"));
    }

    #[test]
    fn kinds_by_type() {
        assert_eq!(kind_of(Some("text/html; charset=utf-8"), b""), Kind::Html);
        assert_eq!(kind_of(Some("application/ld+json"), b""), Kind::Text);
        assert_eq!(kind_of(Some("application/pdf"), b"%PDF"), Kind::Other);
        assert_eq!(kind_of(None, b"<!DOCTYPE html><html>"), Kind::Html);
        assert_eq!(kind_of(None, b"\x89PNG\x00\x00"), Kind::Other);
        assert_eq!(cut("héllo", 2), ("hé", true));
        assert_eq!(cut("hé", 2), ("hé", false));
    }
}
