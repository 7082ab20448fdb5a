//! The detector's own tests: each kind found, checksums, redaction, and windows against the
//! whole text (the patterns run on windows find what they find on the whole text, on generated
//! texts and at the edges of windows and texts).

use super::*;

/// Where the patterns ran before windows: the whole text, when it has an e-mail separator
/// or a long number anywhere.
fn everywhere(text: &str) -> Reach {
    let all = || std::iter::once(0..text.len()).collect::<Vec<_>>();
    let mail = ["@", "%40", "[at]", "(at)"]
        .iter()
        .any(|n| text.contains(n));
    let numbers = if has_long_number(text) {
        Windows {
            card: all(),
            ssn: all(),
            nino: all(),
            phone: all(),
            iban: all(),
            long_number: true,
        }
    } else {
        Windows::default()
    };
    Reach {
        email: if mail { all() } else { Vec::new() },
        numbers,
    }
}

/// The gate as it was: a number of at least six digits, single separators between them.
fn has_long_number(text: &str) -> bool {
    let (mut digits, mut gap) = (0u32, false);
    for b in text.bytes() {
        if b.is_ascii_digit() {
            digits += 1;
            gap = false;
            if digits >= 6 {
                return true;
            }
        } else if !gap && digits > 0 && b" -/_.()+".contains(&b) {
            gap = true;
        } else {
            digits = 0;
            gap = false;
        }
    }
    false
}

fn kinds(text: &str) -> Vec<&'static str> {
    find(text).iter().map(|f| f.kind.as_str()).collect()
}

#[test]
fn checksums() {
    assert!(luhn("4111 1111 1111 1111"));
    assert!(!luhn("4111 1111 1111 1112"));
    assert!(iban("DE89 3704 0044 0532 0130 00"));
    assert!(!iban("DE88 3704 0044 0532 0130 00"));
    assert!(ssn("123-45-6789"));
    assert!(!ssn("666-45-6789"));
}

#[test]
fn each_kind_is_found() {
    let table = [
        ("mail me at jo.doe+x@example.co.uk", vec!["email"]),
        ("call +44 20 7946 0958 today", vec!["phone"]),
        ("or (555) 123-4567", vec!["phone"]),
        ("card 4111-1111-1111-1111 exp", vec!["card"]),
        ("IBAN GB82 WEST 1234 5698 7654 32", vec!["iban"]),
        ("ssn 123-45-6789", vec!["national_id"]),
        ("NI number AB 12 34 56 C", vec!["national_id"]),
        ("key sk-abcdefghijklmnop1234", vec!["secret"]),
        ("password=hunter22 ok", vec!["secret"]),
    ];
    for (text, expected) in table {
        assert_eq!(kinds(text), expected, "{text}");
    }
}

#[test]
fn redaction_keeps_the_rest() {
    let (out, counts) = redact("write to a@b.io or c@d.io; pin 1234", |_| true);
    assert_eq!(
        out,
        "write to [REDACTED:email] or [REDACTED:email]; pin 1234"
    );
    assert_eq!(counts.get(&PiiKind::Email), Some(&2));
}

/// Pieces that make values, near-values and their edges when strung together at random.
const PIECES: [&str; 52] = [
    "0",
    "1",
    "4",
    "9",
    "12",
    "123",
    "1234",
    "4111",
    "1111",
    "45",
    "6789",
    "2024",
    "00",
    " ",
    "-",
    "/",
    "_",
    ".",
    "(",
    ")",
    "+",
    "+44",
    "a",
    "AB",
    "c",
    "C",
    "GB82",
    "WEST",
    "DE89",
    "x",
    "@",
    "%40",
    "[at]",
    "(at)",
    " [at] ",
    "[at)",
    "jo",
    "example",
    ".com",
    ".",
    "é",
    "\u{200B}",
    "\u{AD}",
    "\u{A0}",
    "\u{2013}",
    "４",
    "٤",
    "\n",
    "ſ",
    "\u{212A}",
    "DE89 3704 0044 0532 0130 00",
    "gb82west12345698765432",
];

#[test]
fn windows_find_what_the_whole_text_finds() {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        usize::try_from(state % n as u64).unwrap_or(0)
    };
    let mut seen = PiiCounts::new();
    for case in 0..40_000 {
        let len = 1 + next(40);
        let text: String = (0..len).map(|_| PIECES[next(PIECES.len())]).collect();
        let found = find_with(&text, Reach::windows);
        assert_eq!(found, find_with(&text, everywhere), "case {case}: {text:?}");
        for f in found {
            *seen.entry(f.kind).or_default() += 1;
        }
    }
    // The texts hold values of every kind the windows serve, not only near-misses.
    for kind in [
        PiiKind::Email,
        PiiKind::Phone,
        PiiKind::Card,
        PiiKind::Iban,
        PiiKind::NationalId,
    ] {
        assert!(seen.get(&kind).is_some_and(|n| *n >= 20), "{seen:?}");
    }
}

#[test]
fn values_at_the_edges_of_windows_and_texts() {
    let table: &[(&str, &[&str])] = &[
        // At the very start and the very end of the text.
        ("4111111111111111", &["card"]),
        ("x 4111 1111 1111 1111", &["card"]),
        ("ab123456c", &["national_id"]),
        ("AB 12 34 56 C", &["national_id"]),
        ("GB82WEST12345698765432", &["iban"]),
        ("jo@example.com", &["email"]),
        ("+4420794609", &["phone"]),
        // A NINO's letters lie outside the stretch of digits, on both sides.
        ("nino:AB-12-34-56-C.", &["national_id"]),
        // An IBAN's letters between digit runs; its window reaches past its last digit.
        ("pay to GB82 WEST 1234 5698 7654 32.", &["iban"]),
        // Two values whose windows touch or overlap, and a value right after a word.
        ("4111111111111111, 123-45-6789", &["card", "national_id"]),
        ("4111111111111111\u{A0}+4420794609", &["card", "phone"]),
        ("call(555) 123-4567", &["phone"]),
        // Split by format characters the normaliser removes, at a window's edge.
        (
            "\u{200B}4111\u{200B}1111\u{AD}1111\u{200B}1111\u{200B}",
            &["card"],
        ),
        ("A\u{200B}B\u{AD}123456\u{200B}C", &["national_id"]),
        ("jo\u{200B}@\u{200B}example.com", &["email"]),
        (
            "jo [at] example.com and 4111111111111111",
            &["email", "card"],
        ),
        // Not values: the word goes on past the window's edge.
        ("4111111111111111x", &[]),
        ("ab123456cd", &[]),
    ];
    for (text, expected) in table {
        assert_eq!(kinds(text), *expected, "{text:?}");
        assert_eq!(find(text), find_with(text, everywhere), "{text:?}");
    }
}
