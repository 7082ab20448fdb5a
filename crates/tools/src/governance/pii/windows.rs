//! Where in a text the personal-data patterns can match at all, found in one hand-written pass
//! over its bytes, so that each pattern runs on a few short windows instead of the whole text.
//!
//! Every match of the number patterns (card, phone, US SSN, UK NINO) holds a *long number*: six
//! digits or more, single joiners (` -/_.()+`) between them. Its digits and joiners lie inside
//! one *stretch* (a maximal run of digits and joiners); a NINO adds the two letters just before
//! the stretch and the one just after. The pass finds each stretch holding a long number, reads
//! off which patterns its digit groups could hold (a card needs 13 digits joined by single
//! ` -/_`, an SSN whole groups of 3, 2 and 4 digits, a phone two groups of 3–4 digits joined by
//! one ` .-` or `+` and 8 digits, a NINO letters on both sides), and gives each such pattern the
//! window from two bytes before the stretch to the end of the word after it. An IBAN starts at a
//! word of two letters and two digits and is at most 64 bytes long; an e-mail address lies in the
//! run of address characters around its `@` (`%40`, `[at]`, `(at)`). The conditions are
//! necessary ones, so a pattern run on its windows finds exactly what it finds on the whole text
//! (`pii`'s tests compare the two on generated texts); a window ends before a byte that is not a
//! word byte, so an ASCII `\b` at its end reads as it does in the whole text.

use std::ops::Range;

/// The windows each pattern is run on, sorted, never overlapping.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Windows {
    pub card: Vec<Range<usize>>,
    pub ssn: Vec<Range<usize>>,
    pub nino: Vec<Range<usize>>,
    pub phone: Vec<Range<usize>>,
    pub iban: Vec<Range<usize>>,
    /// Whether the text holds a long number at all (none of the above run without one).
    pub long_number: bool,
}

/// Longest IBAN match: two letters, two digits, thirty characters with a joiner before each.
const IBAN_MAX: usize = 4 + 2 * 30;

fn is_digit(b: u8) -> bool {
    b.is_ascii_digit()
}

/// A byte that may join the digits of a number: ` -/_.()+`.
fn is_joiner(b: u8) -> bool {
    matches!(b, b' ' | b'-' | b'/' | b'_' | b'.' | b'(' | b')' | b'+')
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The first index at or after `from` where a window may end: the end of the text, or a byte
/// that starts a character and is no ASCII word byte (so `\b` reads there as in the whole text).
fn end_at(bytes: &[u8], from: usize) -> usize {
    let mut at = from.min(bytes.len());
    while let Some(&b) = bytes.get(at) {
        if (b < 0x80 && !is_word(b)) || b >= 0xC0 {
            break;
        }
        at += 1;
    }
    at
}

/// The index of the first ASCII digit at or after `from` (or the text's length): 32 bytes at
/// a time are tested without an early exit (which the compiler turns into vector
/// instructions), and the block that holds one is searched eight bytes at a time.
fn next_digit(bytes: &[u8], from: usize) -> usize {
    const BLOCK: usize = 32;
    let mut at = from;
    while let Some(block) = bytes.get(at..at + BLOCK) {
        if block.iter().fold(false, |any, b| any | is_digit(*b)) {
            break;
        }
        at += BLOCK;
    }
    while let Some(chunk) = bytes.get(at..at + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let mask = digit_mask(u64::from_le_bytes(word));
        if mask != 0 {
            return at + (mask.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while let Some(&b) = bytes.get(at) {
        if is_digit(b) {
            return at;
        }
        at += 1;
    }
    bytes.len()
}

/// The high bit of each byte of `x` that is an ASCII digit, and no other bit: its low seven
/// bits lie between 0x2F and 0x3A exclusive and its high bit is clear (no carry crosses a
/// byte, so each byte's answer is exact).
fn digit_mask(x: u64) -> u64 {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    let low = x & (ONES * 0x7F);
    let above = low + ONES * (0x7F - 0x2F);
    let below = ONES * (0x7F + 0x3A) - low;
    below & above & !x & (ONES * 0x80)
}

/// What one stretch of digits and joiners could hold.
#[derive(Debug, Default)]
struct Stretch {
    long: bool,
    card: bool,
    ssn: bool,
    phone: bool,
    /// Six digits joined by single ` -/_` (a NINO's, if letters surround the stretch).
    six: bool,
}

/// Reads a stretch (`bytes`: digits and joiners only) group by group.
fn read_stretch(bytes: &[u8]) -> Stretch {
    let mut out = Stretch::default();
    // The long-number count (single joiners of any kind) and the card count (single ` -/_`).
    let (mut long, mut chain) = (0usize, 0usize);
    // The length of the previous digit group if exactly one ` .-` followed it, for phones.
    let mut phone_prev: Option<usize> = None;
    // The last two groups: (length, joined to the group before by one ` -/_`), for SSNs.
    let mut last = [(0, false); 2];
    let mut at = 0;
    let mut prev_group_end: Option<usize> = None;
    while at < bytes.len() {
        let start = at;
        while bytes.get(at).is_some_and(|b| is_digit(*b)) {
            at += 1;
        }
        if at == start {
            at += 1;
            continue;
        }
        let len = at - start;
        let gap = prev_group_end.map(|end| bytes.get(end..start).unwrap_or_default());
        match gap {
            Some([_]) => long += len,
            _ => long = len,
        }
        match gap {
            Some([b' ' | b'-' | b'/' | b'_']) => chain += len,
            _ => chain = len,
        }
        out.long |= long >= 6;
        out.six |= chain >= 6;
        // An SSN is three whole groups of 3, 2 and 4 digits, each joined by one ` -/_`.
        let us_joined = matches!(gap, Some([b' ' | b'-' | b'/' | b'_']));
        out.ssn |= len == 4 && us_joined && last[1] == (2, true) && last[0].0 == 3;
        last = [last[1], (len, us_joined)];
        out.card |= chain >= 13;
        let joined = matches!(gap, Some([b' ' | b'.' | b'-']));
        if joined && phone_prev.is_some() && (3..=4).contains(&len) {
            out.phone = true;
        }
        phone_prev = (3..=4).contains(&len).then_some(len);
        if len >= 8 && start > 0 && bytes.get(start - 1) == Some(&b'+') {
            out.phone = true;
        }
        prev_group_end = Some(at);
    }
    out
}

/// Adds `window` to a sorted list, merging it with the last one when they overlap.
fn push(list: &mut Vec<Range<usize>>, window: Range<usize>) {
    match list.last_mut() {
        Some(last) if window.start <= last.end => last.end = last.end.max(window.end),
        _ => list.push(window),
    }
}

/// The windows of the number patterns and the IBAN's in `text`, in one pass over its digits.
pub(super) fn numbers(text: &str) -> Windows {
    let bytes = text.as_bytes();
    let mut out = Windows::default();
    let mut at = 0;
    let mut stretch_end = 0;
    loop {
        let digit = next_digit(bytes, at);
        if digit >= bytes.len() {
            break;
        }
        // The digit group starting here may begin an IBAN: a word of two letters, two digits.
        let letters = digit >= 2
            && bytes[digit - 2..digit].iter().all(u8::is_ascii_alphabetic)
            && (digit == 2 || !is_word(bytes[digit - 3]))
            && bytes.get(digit + 1).is_some_and(|b| is_digit(*b));
        if letters {
            let start = digit - 2;
            push(&mut out.iban, start..end_at(bytes, start + IBAN_MAX));
        }
        let mut start = digit;
        while start > stretch_end && is_joiner(bytes[start - 1]) {
            start -= 1;
        }
        let (mut end, mut count) = (digit, 0);
        while let Some(&b) = bytes.get(end) {
            if is_digit(b) {
                count += 1;
            } else if !is_joiner(b) {
                break;
            }
            end += 1;
        }
        stretch_end = end;
        // Fewer than six digits make no long number: most numbers in prose end here.
        let stretch = if count >= 6 {
            read_stretch(&bytes[start..end])
        } else {
            Stretch::default()
        };
        out.long_number |= stretch.long;
        if stretch.long {
            let mut from = start;
            for _ in 0..2 {
                if from > 0 && bytes[from - 1].is_ascii() {
                    from -= 1;
                }
            }
            let window = from..end_at(bytes, end);
            let nino = stretch.six
                && start >= 2
                && bytes[start - 2..start].iter().all(u8::is_ascii_alphabetic)
                && bytes
                    .get(end)
                    .is_some_and(|b| matches!(b.to_ascii_uppercase(), b'A'..=b'D'));
            for (wanted, list) in [
                (stretch.card, &mut out.card),
                (stretch.ssn, &mut out.ssn),
                (stretch.phone, &mut out.phone),
                (nino, &mut out.nino),
            ] {
                if wanted {
                    push(list, window.clone());
                }
            }
        }
        // Only a stretch's first digit group can follow letters (an IBAN start): the others
        // follow a joiner.
        at = end;
    }
    out
}

/// A byte an e-mail address's local part may hold.
fn is_local(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'+' | b'-')
}

/// A byte an e-mail address's domain may hold.
fn is_domain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-')
}

/// Whether `text` holds `@`, `%40`, `[at]` or `(at)`: the e-mail pattern runs only then. One
/// pass, 32 bytes at a time, for the bytes that start them.
pub(super) fn has_mail_separator(text: &str) -> bool {
    const BLOCK: usize = 32;
    let bytes = text.as_bytes();
    let starts = |b: u8| matches!(b, b'@' | b'%' | b'[' | b'(');
    let at_separator = |i: usize| {
        let rest = bytes.get(i..).unwrap_or_default();
        [&b"@"[..], b"%40", b"[at]", b"(at)"]
            .iter()
            .any(|n| rest.starts_with(n))
    };
    let mut at = 0;
    while at < bytes.len() {
        let end = (at + BLOCK).min(bytes.len());
        let block = bytes.get(at..end).unwrap_or_default();
        if block.iter().fold(false, |any, b| any | starts(*b))
            && (at..end).any(|i| bytes.get(i).is_some_and(|b| starts(*b)) && at_separator(i))
        {
            return true;
        }
        at = end;
    }
    false
}

/// The windows of the e-mail pattern: around each `@`, `%40` and `[at]`-like separator (`[` or
/// `(`, `at`, `]` or `)`, a space allowed on either side), the address characters on both sides.
pub(super) fn emails(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut seps: Vec<Range<usize>> = Vec::new();
    seps.extend(text.match_indices('@').map(|(i, s)| i..i + s.len()));
    seps.extend(text.match_indices("%40").map(|(i, s)| i..i + s.len()));
    for open in ["[at", "(at"] {
        for (i, s) in text.match_indices(open) {
            let end = i + s.len();
            if matches!(bytes.get(end), Some(b']' | b')')) {
                let mut start = i;
                let mut stop = end + 1;
                if start > 0 && bytes[start - 1] == b' ' {
                    start -= 1;
                }
                if bytes.get(stop) == Some(&b' ') {
                    stop += 1;
                }
                seps.push(start..stop);
            }
        }
    }
    seps.sort_by_key(|s| s.start);
    let mut out = Vec::new();
    for sep in seps {
        let mut start = sep.start;
        while start > 0 && is_local(bytes[start - 1]) {
            start -= 1;
        }
        let mut end = sep.end;
        while bytes.get(end).is_some_and(|b| is_domain(*b)) {
            end += 1;
        }
        push(&mut out, start..end_at(bytes, end));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_found_a_block_at_a_time() {
        for text in ["", "abc", "abcdefghijklmnop", "abcdefgh1", "ab/:9", "é€0"] {
            let expected = text.bytes().position(is_digit).unwrap_or(text.len());
            assert_eq!(next_digit(text.as_bytes(), 0), expected, "{text:?}");
        }
        // Every byte value next to a digit and alone.
        for b in 0..=255u8 {
            let bytes = [b; 40];
            let expected = if is_digit(b) { 0 } else { 40 };
            assert_eq!(next_digit(&bytes, 0), expected, "byte {b:#x}");
        }
    }

    #[test]
    fn stretches_say_what_they_could_hold() {
        let read = |s: &str| {
            let r = read_stretch(s.as_bytes());
            (r.long, r.card, r.ssn, r.phone, r.six)
        };
        assert_eq!(read(" 2024-01-15. "), (true, false, false, false, true));
        assert_eq!(read(" 3.14.159 "), (true, false, false, false, false));
        assert_eq!(read("4111 1111 1111 1111"), (true, true, false, true, true));
        assert_eq!(read("123-45-6789"), (true, false, true, false, true));
        assert_eq!(read("+4420794609"), (true, false, false, true, true));
        assert_eq!(read("20240115-7781"), (true, false, false, false, true));
        assert_eq!(read("1234-123-45-6789"), (true, true, true, true, true));
        assert_eq!(read("(555) 123-4567"), (true, false, false, true, true));
        assert_eq!(read("1234"), (false, false, false, false, false));
    }

    #[test]
    fn mail_separators_are_found_across_blocks() {
        let pad = "(x[y%4".repeat(10);
        for sep in ["@", "%40", "[at]", "(at)"] {
            for cut in [0, 29, 30, 31, 32, 33] {
                let text = format!("{}{sep}", &pad[..cut]);
                assert!(has_mail_separator(&text), "{text:?}");
            }
        }
        assert!(!has_mail_separator(&pad));
        assert!(!has_mail_separator("[at) (at] %4 "));
    }

    #[test]
    fn windows_reach_the_word_after_and_two_bytes_before() {
        let w = numbers("ab 12 34 56 c and more");
        assert_eq!(w.nino, vec![0..13]);
        let w = numbers("x 4111111111111111");
        assert_eq!(w.card, vec![0..18]);
        let w = numbers("éé4111111111111111é");
        assert_eq!(w.card, vec![4..20]);
        let w = emails("write to jo [at] example.com, now");
        assert_eq!(w, vec![9..28]);
    }
}
