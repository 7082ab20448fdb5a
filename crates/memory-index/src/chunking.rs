//! Splitting text into overlapping chunks for indexing.
//!
//! Texts up to [`CHUNK_CHARS`] characters are one chunk (most notes and chat messages). Longer texts
//! are cut at sentence ends and paragraph breaks into chunks of at most `CHUNK_CHARS` characters;
//! each chunk after the first starts with the last sentence of the one before (when that sentence is
//! at most [`MAX_OVERLAP_CHARS`]), so a fact that straddles a boundary is still found whole. A
//! sentence longer than a chunk is cut at whitespace (or, failing that, anywhere on a character
//! boundary).

/// Upper bound of a chunk, in characters: about 200 tokens, a paragraph or two.
pub const CHUNK_CHARS: usize = 800;
/// Longest sentence carried over into the next chunk as overlap.
pub const MAX_OVERLAP_CHARS: usize = 240;

/// The chunks of `text`, trimmed, none empty. An empty or whitespace-only text has no chunks.
pub fn chunk_text(text: &str) -> Vec<String> {
    let text = text.trim();
    if text.is_empty() {
        return Vec::new();
    }
    if text.chars().count() <= CHUNK_CHARS {
        return vec![text.to_owned()];
    }
    let mut pieces = Vec::new();
    for sentence in sentences(text) {
        if char_len(sentence) <= CHUNK_CHARS {
            pieces.push(sentence);
        } else {
            pieces.extend(hard_split(sentence, CHUNK_CHARS));
        }
    }
    pack(&pieces)
}

fn char_len(s: &str) -> usize {
    s.chars().count()
}

/// Sentences and paragraphs of `text`, trimmed. A sentence ends after `.`, `!`, `?` (and closing
/// quotes or brackets) followed by whitespace, or at a blank line.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    let mut prev_end_mark = false;
    let mut prev_newline = false;
    while let Some((i, c)) = chars.next() {
        let boundary = if c.is_whitespace() {
            let paragraph = c == '\n' && prev_newline;
            let after_sentence = prev_end_mark;
            // Spaces between two newlines still make a blank line.
            prev_newline = c == '\n' || prev_newline;
            after_sentence || paragraph
        } else {
            prev_newline = false;
            false
        };
        prev_end_mark = matches!(c, '.' | '!' | '?' | '。' | '！' | '？')
            || (prev_end_mark && matches!(c, '"' | '\'' | ')' | ']' | '”' | '’'));
        if boundary {
            let piece = text[start..i].trim();
            if !piece.is_empty() {
                out.push(piece);
            }
            start = i;
            prev_end_mark = false;
        }
        if chars.peek().is_none() {
            let piece = text[start..].trim();
            if !piece.is_empty() {
                out.push(piece);
            }
        }
    }
    out
}

/// Cuts a too-long piece into parts of at most `max` characters, preferring whitespace.
fn hard_split(piece: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = piece;
    while char_len(rest) > max {
        // Byte offset just after `max` characters.
        let limit = rest.char_indices().nth(max).map_or(rest.len(), |(i, _)| i);
        let window = &rest[..limit];
        let cut = match window.rfind(char::is_whitespace) {
            Some(ws) if ws > limit / 2 => ws,
            _ => limit,
        };
        let part = rest[..cut].trim();
        if !part.is_empty() {
            out.push(part);
        }
        rest = rest[cut..].trim_start();
    }
    if !rest.trim().is_empty() {
        out.push(rest.trim());
    }
    out
}

/// Packs pieces into chunks of at most `CHUNK_CHARS`, with one piece of overlap.
fn pack(pieces: &[&str]) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut current_len = 0;
    // Whether `current` holds anything besides the carried-over overlap.
    let mut has_new = false;
    for &piece in pieces {
        let len = char_len(piece);
        let joined = if current.is_empty() {
            len
        } else {
            current_len + 1 + len
        };
        if joined > CHUNK_CHARS && has_new {
            chunks.push(current.join(" "));
            let last = current.last().copied().unwrap_or_default();
            current.clear();
            current_len = 0;
            if char_len(last) <= MAX_OVERLAP_CHARS && char_len(last) + 1 + len <= CHUNK_CHARS {
                current.push(last);
                current_len = char_len(last);
            }
        } else if joined > CHUNK_CHARS {
            // Only overlap so far and it does not fit with this piece: drop the overlap.
            current.clear();
            current_len = 0;
        }
        current_len = if current.is_empty() {
            len
        } else {
            current_len + 1 + len
        };
        current.push(piece);
        has_new = true;
    }
    if has_new {
        chunks.push(current.join(" "));
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: &[&str]) {
        assert_eq!(chunk_text(input), expected, "input {input:?}");
    }

    #[test]
    fn short_texts_are_one_chunk() {
        check("", &[]);
        check("   \n ", &[]);
        check("I like tea.", &["I like tea."]);
        check("  padded  ", &["padded"]);
        let exactly = "a".repeat(CHUNK_CHARS);
        check(&exactly, &[exactly.as_str()]);
    }

    #[test]
    fn sentence_splitting() {
        let s = sentences;
        assert_eq!(
            s("One. Two! Three? Four"),
            ["One.", "Two!", "Three?", "Four"]
        );
        assert_eq!(
            s("Version 1.2 is out. Yes."),
            ["Version 1.2 is out.", "Yes."]
        );
        assert_eq!(
            s("He said \"hi.\" Then left."),
            ["He said \"hi.\"", "Then left."]
        );
        assert_eq!(s("para one\n\npara two"), ["para one", "para two"]);
        assert_eq!(s("line one\nline two"), ["line one\nline two"]);
    }

    #[test]
    fn long_texts_split_at_sentences_with_overlap() {
        let sentence = |i: usize| format!("Sentence number {i} says something about topic {i}.");
        let text: Vec<String> = (0..60).map(sentence).collect();
        let chunks = chunk_text(&text.join(" "));
        assert!(chunks.len() > 1);
        for c in &chunks {
            assert!(char_len(c) <= CHUNK_CHARS, "{} chars", char_len(c));
            assert!(c.ends_with('.'), "{c:?} does not end at a sentence");
        }
        for pair in chunks.windows(2) {
            let last_sentence = pair[0].rsplit(". ").next().unwrap_or_default();
            assert!(
                pair[1].starts_with(last_sentence),
                "no overlap between {pair:?}"
            );
        }
        for s in &text {
            assert!(chunks.iter().any(|c| c.contains(s.as_str())), "lost {s:?}");
        }
    }

    #[test]
    fn overlong_sentences_are_cut_on_char_boundaries() {
        let word = "ünïcödé ";
        let text = word.repeat(400);
        let chunks = chunk_text(&text);
        assert!(chunks.len() >= 4);
        for c in &chunks {
            assert!(char_len(c) <= CHUNK_CHARS);
            assert!(
                c.starts_with('ü') && c.ends_with('é'),
                "cut inside a word: {c:?}"
            );
        }
        let no_spaces = "x".repeat(2000);
        let chunks = chunk_text(&no_spaces);
        assert_eq!(
            chunks.iter().map(|c| char_len(c)).collect::<Vec<_>>(),
            [800, 800, 400]
        );
    }
}
