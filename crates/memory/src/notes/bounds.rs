//! How long a note's text may be, said once. A caller (a memory tool, the gateway's `edit_note`,
//! the CLI, a peer through MCP) writes at most [`MAX_CONTENT_BYTES`] in one call: a text a model
//! can be shown whole in a search. The store keeps texts up to [`MAX_NOTE_BYTES`] (memory files,
//! imports, summaries). Every surface checks with [`TooLong::check`] and words the refusal for its
//! own caller.

use std::fmt;

/// The longest text a caller may write as one note in one call, in bytes of UTF-8 (8 KiB).
pub const MAX_CONTENT_BYTES: usize = 8 * 1024;

/// The longest text the store keeps as one note, in bytes of UTF-8 (64 KiB).
pub const MAX_NOTE_BYTES: usize = 64 * 1024;

/// A text over its bound: how long it is and the bound it passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong {
    pub bytes: usize,
    pub max: usize,
}

impl TooLong {
    /// `Err` when `text` is longer than `max` bytes ([`MAX_CONTENT_BYTES`] for what a caller
    /// writes, [`MAX_NOTE_BYTES`] for what the store keeps).
    pub fn check(text: &str, max: usize) -> Result<(), TooLong> {
        match text.len() {
            bytes if bytes > max => Err(TooLong { bytes, max }),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for TooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes, at most {}", self.bytes, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_at_the_bound_passes_and_one_byte_more_is_refused() {
        assert_eq!(
            TooLong::check(&"x".repeat(MAX_CONTENT_BYTES), MAX_CONTENT_BYTES),
            Ok(())
        );
        let over = TooLong::check(&"é".repeat(MAX_CONTENT_BYTES / 2 + 1), MAX_CONTENT_BYTES);
        assert_eq!(
            over,
            Err(TooLong {
                bytes: MAX_CONTENT_BYTES + 2,
                max: MAX_CONTENT_BYTES
            })
        );
        assert_eq!(
            over.unwrap_err().to_string(),
            format!(
                "{} bytes, at most {MAX_CONTENT_BYTES}",
                MAX_CONTENT_BYTES + 2
            )
        );
    }
}
