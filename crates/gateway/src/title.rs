//! A session's title from its first message: the first line with text, whitespace collapsed,
//! cut to [`MAX_TITLE_CHARS`] characters at a word boundary where one is near.

/// The longest title made from a message, in characters (an ellipsis included).
pub(crate) const MAX_TITLE_CHARS: usize = 60;

/// The title for a session whose first message is `text`; `None` when it has no text.
pub(crate) fn title_from(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let line = words.join(" ");
    if line.chars().count() <= MAX_TITLE_CHARS {
        return Some(line);
    }
    let cut: String = line.chars().take(MAX_TITLE_CHARS - 1).collect();
    // Prefer ending at a word unless that loses more than a third of the title.
    let cut = match cut.rfind(' ') {
        Some(space) if space > cut.len() * 2 / 3 => cut[..space].to_owned(),
        _ => cut,
    };
    Some(format!("{}…", cut.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles() {
        let check = |text: &str, expected: Option<&str>| {
            assert_eq!(title_from(text).as_deref(), expected, "{text:?}");
        };
        check("Plan my trip to Lisbon", Some("Plan my trip to Lisbon"));
        check("\n\n  hello   there \nsecond line", Some("hello there"));
        check("   \n\t", None);
        check(
            "Please help me write a long letter to my landlord about the broken heating in the flat",
            Some("Please help me write a long letter to my landlord about…"),
        );
        let long_word = "x".repeat(100);
        let title = title_from(&long_word).unwrap_or_default();
        assert_eq!(title.chars().count(), MAX_TITLE_CHARS);
        let accents = "é".repeat(100);
        assert_eq!(
            title_from(&accents).unwrap_or_default().chars().count(),
            MAX_TITLE_CHARS
        );
    }
}
