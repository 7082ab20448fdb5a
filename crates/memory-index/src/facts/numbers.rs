//! The numbers of a note, each written one way whatever way the note writes it: digits without
//! leading zeros or thousands separators (`£1,200` = `1200`), number words as digits (`two` = `2`,
//! `thirty-four` = `34`, `third` = `3`), clock times on 24 hours (`3pm` = `3 p.m.` = `15:00`,
//! `10am` = `10:00`), and thousands written `k` in a note that names a currency (`$85k` =
//! `$85,000`). `one` is no number here: it is as often a pronoun (`one way`, `the one`) and `a`
//! says the same. Dates are read apart ([`super::dates`]).

/// The number starting at token `i` of `tokens` (lowercased), and how many tokens it takes. In a
/// note about `money` (it names a currency), `85k` is `85000`.
pub(super) fn number_at(tokens: &[String], i: usize, money: bool) -> Option<(String, usize)> {
    let token = tokens.get(i)?;
    if money
        && let Some(digits) = token.strip_suffix('k')
        && !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
    {
        return Some((format!("{}000", digits.trim_start_matches('0')), 1));
    }
    if token.chars().any(|c| c.is_ascii_digit()) {
        return Some(written(tokens, i));
    }
    let n = number_word(token)?;
    // A tens word and a unit after it (`thirty-four`, `twenty one`) are one number.
    if n % 10 == 0
        && (20..100).contains(&n)
        && let Some(unit) = tokens
            .get(i + 1)
            .and_then(|t| if t == "one" { Some(1) } else { number_word(t) })
        && (1..10).contains(&unit)
    {
        return Some(((n + unit).to_string(), 2));
    }
    Some((n.to_string(), 1))
}

/// A number written with digits at token `i`: a clock time when `am` / `pm` ends it or follows
/// it (`7:30pm`, `10 am`, `3 p.m.`) or when it holds a `:`; else its digits.
fn written(tokens: &[String], i: usize) -> (String, usize) {
    let token = &tokens[i];
    let digits: String = token
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == ':')
        .collect();
    let (meridiem, taken) = match meridiem_in(token) {
        Some(pm) => (Some(pm), 1),
        None => match meridiem_after(tokens, i + 1) {
            Some((pm, n)) => (Some(pm), 1 + n),
            None => (None, 1),
        },
    };
    if let Some(time) = clock(&digits, meridiem) {
        return (time, taken);
    }
    (digits.trim_start_matches('0').to_owned(), 1)
}

/// `am` / `pm` at the end of a token holding digits (`10am`): whether it is `pm`.
fn meridiem_in(token: &str) -> Option<bool> {
    let letters: String = token.chars().filter(|c| c.is_alphabetic()).collect();
    let last_digit = token.rfind(|c: char| c.is_ascii_digit())?;
    if token[last_digit + 1..] != letters {
        return None;
    }
    match letters.as_str() {
        "am" => Some(false),
        "pm" => Some(true),
        _ => None,
    }
}

/// `am` / `pm` as the tokens at `i` (`am`, or `a` then `m` for `a.m.`): whether it is `pm`, and
/// how many tokens it takes.
fn meridiem_after(tokens: &[String], i: usize) -> Option<(bool, usize)> {
    let pm = |t: &str| match t {
        "a" | "am" => Some(false),
        "p" | "pm" => Some(true),
        _ => None,
    };
    let first = tokens.get(i)?;
    match first.as_str() {
        "am" | "pm" => Some((first == "pm", 1)),
        "a" | "p" if tokens.get(i + 1).is_some_and(|t| t == "m") => Some((pm(first)?, 2)),
        _ => None,
    }
}

/// `digits` as a time of day `H:MM` on 24 hours, when it is one: with a meridiem, an hour of
/// 1–12 (minutes optional); without, `H:MM`.
fn clock(digits: &str, meridiem: Option<bool>) -> Option<String> {
    let (hour, minutes) = match digits.split_once(':') {
        Some((h, m)) => (h.parse::<u32>().ok()?, m.parse::<u32>().ok()?),
        None if meridiem.is_some() => (digits.parse::<u32>().ok()?, 0),
        None => return None,
    };
    if minutes >= 60 {
        return None;
    }
    let hour = match meridiem {
        Some(pm) if (1..=12).contains(&hour) => hour % 12 + if pm { 12 } else { 0 },
        Some(_) => return None,
        None if hour < 24 => hour,
        None => return None,
    };
    Some(format!("{hour}:{minutes:02}"))
}

fn number_word(lower: &str) -> Option<u32> {
    const WORDS: &[(&str, u32)] = &[
        ("zero", 0),
        ("once", 1),
        ("first", 1),
        ("two", 2),
        ("twice", 2),
        ("second", 2),
        ("three", 3),
        ("third", 3),
        ("four", 4),
        ("fourth", 4),
        ("five", 5),
        ("fifth", 5),
        ("six", 6),
        ("sixth", 6),
        ("seven", 7),
        ("seventh", 7),
        ("eight", 8),
        ("eighth", 8),
        ("nine", 9),
        ("ninth", 9),
        ("ten", 10),
        ("tenth", 10),
        ("eleven", 11),
        ("twelve", 12),
        ("twenty", 20),
        ("thirty", 30),
        ("forty", 40),
        ("fifty", 50),
        ("sixty", 60),
        ("seventy", 70),
        ("eighty", 80),
        ("ninety", 90),
        ("hundred", 100),
        ("thousand", 1000),
        ("dozen", 12),
    ];
    WORDS.iter().find(|(w, _)| *w == lower).map(|(_, n)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers of `text` as the fact check reads them: its tokens, lowercased.
    fn numbers(text: &str) -> Vec<String> {
        let tokens: Vec<String> = crate::facts::tokens(text)
            .into_iter()
            .map(str::to_lowercase)
            .collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            match number_at(&tokens, i, false) {
                Some((n, taken)) => {
                    out.push(n);
                    i += taken;
                }
                None => i += 1,
            }
        }
        out
    }

    #[test]
    fn one_number_whatever_its_writing() {
        for (a, b) in [
            ("rent 1,200", "rent 1200"),
            ("at 3pm", "at 15:00"),
            ("at 3 p.m.", "at 15:00"),
            ("at 10am", "at 10:00"),
            ("at 7:30 PM", "at 19:30"),
            ("at 12 am", "at 0:00"),
            ("is thirty-four", "is 34"),
            ("is twenty one", "is 21"),
            ("the 3rd floor", "the third floor"),
            ("007", "7"),
        ] {
            assert_eq!(numbers(a), numbers(b), "{a} / {b}");
        }
        for (a, b) in [
            ("at 3pm", "at 3am"),
            ("at 10", "at 10:00"),
            ("thirty four", "thirty"),
            ("1,200", "1,300"),
        ] {
            assert_ne!(numbers(a), numbers(b), "{a} / {b}");
        }
        assert!(numbers("one way").is_empty(), "`one` is no number");
        assert_eq!(numbers("13pm"), ["13"], "no such time: digits");
    }
}
