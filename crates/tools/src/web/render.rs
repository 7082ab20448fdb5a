//! The fetched page as the model reads it: final URL, status and type, then the content cut to
//! `max_chars` — made on a blocking thread within what is left of the call's time limit
//! ([`render_within`]).
//!
//! The HTML parser cannot be interrupted, and a page built against it takes seconds to convert
//! (`docs/benchmarks.md`, "Pages built to be slow"). So the thread converts in rounds (a prefix of
//! the page, four times longer each round: [`html_to_markdown_within`]) and leaves the answer each
//! round that fell short would give where the caller finds it. At the deadline the caller answers
//! with the latest — the beginning of the page, marked as cut, which is what a reader in a hurry
//! wants rather than nothing — or, when not even the first round finished, with a short error;
//! and tells the thread to stop before its next step, so its work past the deadline is at most
//! the step it is in.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use reqwest::{StatusCode, Url};
use tokio::time::Instant;
use types::CancellationToken;

use super::convert::{Kind, Round, Watch, cut, decode, html_to_markdown_within, kind_of, title};
use crate::ToolError;

/// What one fetch brought back before it is rendered.
pub(super) struct Page {
    pub(super) url: Url,
    pub(super) status: StatusCode,
    pub(super) content_type: Option<String>,
    pub(super) body: Vec<u8>,
    /// Why the body is incomplete, if it is.
    pub(super) short: Option<String>,
    pub(super) length: Option<u64>,
}

/// `page` rendered (see the module), waited for until `deadline` or the call's cancellation;
/// `limit` is the call's time limit, for the messages.
pub(super) async fn render_within(
    page: Page,
    max_chars: usize,
    deadline: Instant,
    limit: Duration,
    cancel: &CancellationToken,
) -> Result<String, ToolError> {
    let shared = Arc::new(Shared::default());
    let worker = Arc::clone(&shared);
    let bytes = page.body.len();
    let mut task = tokio::task::spawn_blocking(move || render(&page, max_chars, limit, &worker));
    let finished = tokio::select! {
        done = &mut task => Some(done),
        () = tokio::time::sleep_until(deadline) => None,
        () = cancel.cancelled() => {
            shared.stop();
            return Err(ToolError::Cancelled);
        }
    };
    let not_converted = || {
        ToolError::execution(format!(
            "the page arrived ({bytes} bytes of HTML) but converting it to text takes longer than \
             the {} s time limit, so nothing of it is shown; try another source",
            limit.as_secs()
        ))
    };
    match finished {
        Some(Ok(Some(answer))) => Ok(answer),
        Some(Ok(None)) => Err(not_converted()),
        Some(Err(e)) => Err(ToolError::execution_with(
            "the page could not be converted",
            e,
        )),
        None => {
            shared.stop();
            shared.take().ok_or_else(not_converted)
        }
    }
}

/// Between the caller and the converting thread: whether to stop, and the answer so far.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    so_far: Mutex<Option<String>>,
}

impl Shared {
    fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    fn keep(&self, answer: String) {
        *self.so_far.lock().unwrap_or_else(PoisonError::into_inner) = Some(answer);
    }

    fn take(&self) -> Option<String> {
        self.so_far
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// The converting thread's side of [`Shared`]: each round that fell short is kept as the answer
/// it would give, marked as cut by the time limit.
struct Rounds<'a> {
    shared: &'a Shared,
    head: &'a str,
    page: &'a Page,
    max_chars: usize,
    limit: Duration,
}

impl Watch for Rounds<'_> {
    fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    fn partial(&self, round: &Round) {
        let extent = Extent::Stopped {
            bytes: round.bytes,
            of: round.of,
            limit: self.limit,
        };
        let answer = answer(
            self.head,
            self.page,
            &round.markdown,
            self.max_chars,
            extent,
        );
        self.shared.keep(answer);
    }
}

/// How much of the page the content shown stands for.
enum Extent {
    /// All of it.
    Whole,
    /// A prefix that already holds more than is shown.
    Prefix,
    /// The first `bytes` of `of` bytes of HTML: converting more did not fit in `limit`.
    Stopped {
        bytes: usize,
        of: usize,
        limit: Duration,
    },
}

/// The page as the model reads it; `None` when the conversion was told to stop.
fn render(page: &Page, max_chars: usize, limit: Duration, shared: &Shared) -> Option<String> {
    let kind = kind_of(page.content_type.as_deref(), &page.body);
    let mut head = format!("URL: {}\nStatus: {}\n", page.url, page.status);
    if let Some(ct) = &page.content_type {
        head.push_str(&format!("Content-Type: {ct}\n"));
    }
    match kind {
        Kind::Other => {
            let size = page
                .length
                .map_or_else(|| "unknown size".to_owned(), |n| format!("{n} bytes"));
            head.push_str(&format!(
                "\nA {} document ({size}), not shown: web_fetch reads HTML, text and JSON.\n",
                page.content_type.as_deref().unwrap_or("binary")
            ));
            Some(head)
        }
        Kind::Text => {
            let text = decode(&page.body, page.content_type.as_deref(), kind);
            Some(answer(&head, page, &text, max_chars, Extent::Whole))
        }
        Kind::Html => {
            let html = decode(&page.body, page.content_type.as_deref(), kind);
            if let Some(title) = title(&html) {
                head.push_str(&format!("Title: {title}\n"));
            }
            let rounds = Rounds {
                shared,
                head: &head,
                page,
                max_chars,
                limit,
            };
            let round = html_to_markdown_within(&html, max_chars, &rounds)?;
            let extent = if round.is_whole() {
                Extent::Whole
            } else {
                Extent::Prefix
            };
            Some(answer(&head, page, &round.markdown, max_chars, extent))
        }
    }
}

/// `head`, a note when the body is incomplete, then `content` cut to `max_chars` with what says
/// how it was cut.
fn answer(head: &str, page: &Page, content: &str, max_chars: usize, extent: Extent) -> String {
    let mut out = head.to_owned();
    if let Some(short) = &page.short {
        out.push_str(&format!("Note: {short}.\n"));
    }
    let (shown, was_cut) = cut(content, max_chars);
    out.push('\n');
    out.push_str(shown);
    match extent {
        Extent::Stopped { bytes, of, limit } => out.push_str(&format!(
            "\n\n[cut: converting the page takes longer than the {} s time limit; shown is the \
             text of its first {bytes} of {of} bytes of HTML]",
            limit.as_secs()
        )),
        Extent::Whole if was_cut => {
            let total = content.chars().count();
            out.push_str(&format!(
                "\n\n[cut at {max_chars} of {total} characters; ask with a larger max_chars for \
                 more]"
            ));
        }
        Extent::Prefix if was_cut => out.push_str(&format!(
            "\n\n[cut at {max_chars} characters of a longer page ({} bytes); ask with a larger \
             max_chars for more]",
            page.body.len()
        )),
        Extent::Whole | Extent::Prefix => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html_page(body: &str) -> Page {
        Page {
            url: Url::parse("https://example.org/tea").unwrap(),
            status: StatusCode::OK,
            content_type: Some("text/html".to_owned()),
            body: body.as_bytes().to_vec(),
            short: None,
            length: None,
        }
    }

    /// Not even the first part of the page converted by the deadline: a short error saying so,
    /// with nothing of the page.
    #[tokio::test]
    async fn nothing_converted_in_time_is_a_short_error() {
        let html = format!(
            "<body>{}</body>",
            "<p>Steeped rooibos keeps well.</p>".repeat(12_000)
        );
        let limit = Duration::from_secs(1);
        let cancel = CancellationToken::default();
        let err = render_within(html_page(&html), 200_000, Instant::now(), limit, &cancel)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "the page arrived ({} bytes of HTML) but converting it to text takes longer than \
                 the 1 s time limit, so nothing of it is shown; try another source",
                html.len()
            )
        );
    }

    /// In time, the answer is the page's, whole.
    #[tokio::test]
    async fn a_page_converted_in_time_is_answered_whole() {
        let cancel = CancellationToken::default();
        let deadline = Instant::now() + Duration::from_secs(30);
        let page = html_page("<title>Tea</title><main><h1>Rooibos</h1></main>");
        let answer = render_within(page, 1000, deadline, Duration::from_secs(30), &cancel)
            .await
            .unwrap();
        assert_eq!(
            answer,
            "URL: https://example.org/tea\nStatus: 200 OK\nContent-Type: text/html\nTitle: Tea\n\n# Rooibos"
        );
    }
}
