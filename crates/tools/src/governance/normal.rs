//! The screener's view of a text: what the patterns match, with a map back to the original.
//!
//! An obfuscated value must not slip past a pattern written for plain ASCII, so before matching
//! the text is normalised, character by character: compatibility forms are folded (NFKC:
//! fullwidth `＠` and digits, ligatures, mathematical digits), format characters are dropped
//! (zero-width space and joiners, soft hyphen, bidi controls, the byte-order mark), every
//! Unicode space becomes a plain space and every dash or minus a `-`, and a decimal digit of any
//! script becomes its ASCII digit (so the Luhn and mod-97 checksums see what the pattern saw).
//! Each byte of the normalised text remembers where its character started in the original, so
//! a finding redacts the original span (the map is a list of pieces: runs copied whole, and each
//! folded character). ASCII text is its own view (no copy, no map): the common case costs one
//! `is_ascii` pass. Elsewhere the runs copied whole are those of ASCII and of characters that are
//! their own view (most letters: `é`, `ß`, `ж`), told by one bit per character of the Basic
//! Multilingual Plane, so only the characters that change cost a fold.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};

/// The first code point of each run of ten decimal digits outside ASCII that NFKC leaves as it
/// is (Arabic-Indic, Devanagari, Thai, …), sorted: a digit's value is its distance from the
/// run's start.
const DIGIT_ZEROS: [u32; 58] = [
    0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
    0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50,
    0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0x104A0,
    0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650, 0x116C0,
    0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50, 0x1E140,
    0x1E2F0, 0x1E950,
];

/// The ASCII digit a decimal digit of another script stands for.
fn ascii_digit(c: char) -> Option<char> {
    let cp = u32::from(c);
    let at = DIGIT_ZEROS.partition_point(|z| *z <= cp).checked_sub(1)?;
    let value = cp - DIGIT_ZEROS.get(at)?;
    (value < 10).then(|| char::from(b'0' + u8::try_from(value).unwrap_or(0)))
}

/// A character that changes no meaning when dropped: zero-width, soft hyphen, bidi controls.
fn is_format(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF9}'..='\u{FFFB}' | '\u{E0000}'..='\u{E007F}')
}

fn is_dash(c: char) -> bool {
    matches!(
        c,
        '\u{2010}'
            ..='\u{2015}'
                | '\u{2212}'
                | '\u{2E3A}'
                | '\u{2E3B}'
                | '\u{FE58}'
                | '\u{FE63}'
                | '\u{FF0D}'
    )
}

/// A stretch of the view and where it came from: a run copied byte for byte (ASCII), or the
/// output of one character that was folded (its bytes all map to that character).
#[derive(Debug, Clone, Copy)]
struct Piece {
    /// Where the piece starts in the view.
    view: usize,
    /// Where its source starts in the original.
    original: usize,
    copied: bool,
}

/// A text as the screener sees it.
#[derive(Debug)]
pub struct Normalized<'a> {
    text: Cow<'a, str>,
    /// The pieces of `text`, in order; empty when `text` is the original.
    pieces: Vec<Piece>,
    original_len: usize,
}

/// Appends what `c` becomes in the view to `text`.
fn fold(c: char, text: &mut String) {
    if is_format(c) {
    } else if c.is_whitespace() {
        text.push(' ');
    } else if is_dash(c) {
        text.push('-');
    } else if let Some(d) = ascii_digit(c) {
        text.push(d);
    } else if is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes {
        // Most letters (`é`, `ß`, `ж`) are their own NFKC form: a table lookup, not a
        // decomposition.
        text.push(c);
    } else {
        for n in std::iter::once(c).nfkc() {
            match ascii_digit(n) {
                Some(d) => text.push(d),
                None if is_dash(n) => text.push('-'),
                None => text.push(n),
            }
        }
    }
}

/// Whether `c` is its own view: no format character, space, dash or digit to fold, and its
/// own NFKC form.
fn is_kept(c: char) -> bool {
    !(is_format(c) || c.is_whitespace() || is_dash(c) || ascii_digit(c).is_some())
        && is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes
}

/// [`is_kept`] for each code point of the Basic Multilingual Plane, one bit each (8 KiB, worked
/// out once): a character outside ASCII costs a table lookup, not four checks.
static KEPT_BMP: LazyLock<Vec<u64>> = LazyLock::new(|| {
    let mut bits = vec![0u64; 0x10000 / 64];
    for cp in 0..0x10000u32 {
        if char::from_u32(cp).is_some_and(is_kept)
            && let Some(word) = bits.get_mut((cp / 64) as usize)
        {
            *word |= 1 << (cp % 64);
        }
    }
    bits
});

fn kept(c: char) -> bool {
    let cp = u32::from(c);
    match KEPT_BMP.get((cp / 64) as usize) {
        Some(word) => word & (1 << (cp % 64)) != 0,
        None => is_kept(c),
    }
}

/// The index of the first byte at or after `from` that is not ASCII (or the text's length): 32
/// bytes at a time are tested without an early exit (which the compiler turns into vector
/// instructions), and the block that holds one is searched eight bytes at a time.
fn next_non_ascii(bytes: &[u8], from: usize) -> usize {
    const BLOCK: usize = 32;
    let mut at = from;
    while let Some(block) = bytes.get(at..at + BLOCK) {
        if block.iter().fold(0, |any, b| any | b) >= 0x80 {
            break;
        }
        at += BLOCK;
    }
    while let Some(chunk) = bytes.get(at..at + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let mask = u64::from_le_bytes(word) & 0x8080_8080_8080_8080;
        if mask != 0 {
            return at + (mask.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while bytes.get(at).is_some_and(u8::is_ascii) {
        at += 1;
    }
    at.min(bytes.len())
}

impl<'a> Normalized<'a> {
    pub fn new(original: &'a str) -> Self {
        if original.is_ascii() {
            return Self {
                text: Cow::Borrowed(original),
                pieces: Vec::new(),
                original_len: original.len(),
            };
        }
        let bytes = original.as_bytes();
        let mut text = String::with_capacity(original.len());
        let mut pieces = Vec::new();
        // Where the run being copied whole (ASCII, and characters that are their own view)
        // started in the original.
        let mut copy_from = 0;
        let mut at = next_non_ascii(bytes, 0);
        while let Some(c) = original.get(at..).and_then(|rest| rest.chars().next()) {
            let next = at + c.len_utf8();
            if kept(c) {
                at = next_non_ascii(bytes, next);
                continue;
            }
            if at > copy_from {
                pieces.push(Piece {
                    view: text.len(),
                    original: copy_from,
                    copied: true,
                });
                text.push_str(original.get(copy_from..at).unwrap_or_default());
            }
            let view = text.len();
            fold(c, &mut text);
            if text.len() > view {
                pieces.push(Piece {
                    view,
                    original: at,
                    copied: false,
                });
            }
            copy_from = next;
            at = next_non_ascii(bytes, next);
        }
        if original.len() > copy_from {
            pieces.push(Piece {
                view: text.len(),
                original: copy_from,
                copied: true,
            });
            text.push_str(original.get(copy_from..).unwrap_or_default());
        }
        Self {
            text: Cow::Owned(text),
            pieces,
            original_len: original.len(),
        }
    }

    /// The normalised text, which the patterns match.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Where view offset `i` falls in the original: inside a folded character, its start
    /// (`Floor`) or its end (`Ceil`).
    fn locate(&self, i: usize, round: Round) -> usize {
        if self.pieces.is_empty() || i >= self.text.len() {
            return if i >= self.text.len() {
                self.original_len
            } else {
                i
            };
        }
        let k = self
            .pieces
            .partition_point(|p| p.view <= i)
            .saturating_sub(1);
        let Some(piece) = self.pieces.get(k) else {
            return i;
        };
        if piece.copied {
            return piece.original + (i - piece.view);
        }
        match (round, i == piece.view) {
            (_, true) | (Round::Floor, false) => piece.original,
            (Round::Ceil, false) => self
                .pieces
                .get(k + 1)
                .map_or(self.original_len, |next| next.original),
        }
    }

    /// The span of the original that `span` of the normalised text came from.
    pub fn original(&self, span: Range<usize>) -> Range<usize> {
        self.locate(span.start, Round::Floor)..self.locate(span.end, Round::Ceil)
    }
}

#[derive(Debug, Clone, Copy)]
enum Round {
    Floor,
    Ceil,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: &str) {
        assert_eq!(Normalized::new(input).as_str(), expected, "input {input:?}");
    }

    #[test]
    fn views() {
        check("plain ascii", "plain ascii");
        check("jo＠example．com", "jo@example.com");
        check("４１１１", "4111");
        check("٤١١١ ۱۲۳", "4111 123");
        check("41\u{200B}11\u{00AD}11", "411111");
        check("4111\u{00A0}1111\u{2013}1111", "4111 1111-1111");
        check("\u{202E}abc\u{202C}", "abc");
    }

    #[test]
    fn spans_map_back() {
        let original = "x ４１\u{200B}１ y";
        let view = Normalized::new(original);
        let at = view.as_str().find("411").unwrap_or_default();
        let span = view.original(at..at + 3);
        assert_eq!(&original[span], "４１\u{200B}１");
    }

    /// Each span of the view between the outputs of two characters maps back to the original
    /// characters that fold to it, whether they are copied in a run or folded one by one.
    #[test]
    fn every_span_maps_back_to_what_folds_to_it() {
        for original in [
            "café\u{A0}4111\u{200B}–x ＠é",
            "\u{200B}ab\u{AD}",
            "ж٤１\u{FEFF}ßé\u{2013}\u{2013}",
            "é",
            "a\u{0301}ﬁ",
        ] {
            let view = Normalized::new(original);
            let mut bounds = vec![0];
            let mut expected = String::new();
            for c in original.chars() {
                fold(c, &mut expected);
                bounds.push(expected.len());
            }
            assert_eq!(view.as_str(), expected, "{original:?}");
            for &i in &bounds {
                for &j in bounds.iter().filter(|j| **j >= i) {
                    let span = view.original(i..j);
                    let mut folded = String::new();
                    original[span.clone()]
                        .chars()
                        .for_each(|c| fold(c, &mut folded));
                    assert_eq!(folded, &expected[i..j], "{original:?} {i}..{j} -> {span:?}");
                }
            }
        }
    }

    #[test]
    fn kept_characters_are_told_by_the_table() {
        for c in [
            'é',
            'ß',
            'ж',
            '\u{A0}',
            '–',
            '٤',
            '１',
            '\u{200B}',
            'ﬁ',
            '😀',
            '\u{E0041}',
        ] {
            assert_eq!(kept(c), is_kept(c), "{c:?}");
        }
        assert_eq!(next_non_ascii(b"abcdefghijkl\xc3\xa9", 0), 12);
        assert_eq!(next_non_ascii(b"abc", 1), 3);
    }
}
