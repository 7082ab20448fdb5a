//! Names used to address someone ("Hey Caroline!", "Thanks, Mel!", "That's great, Caroline.")
//! rather than to speak of them.
//!
//! A stored message names whom it talks *to* as often as whom it talks *about*: every reply of an
//! assistant may greet its user by name, every turn of a chat between two friends thanks the
//! other. Such a name says nothing of what the text is about, yet as an index term it matches
//! every question naming that person, and the name lift of the search takes it for a mention
//! (`memory::search::priors`). Stored text leaves these names out of its terms
//! ([`crate::terms::text_terms`]); they still count towards its length, and the text itself, its
//! vector and what a search shows are unchanged. On LoCoMo (development half) the time-aware
//! hybrid gains +0.007 ± 0.002 NDCG@10 with turns stored as notes (`docs/benchmarks.md`).
//!
//! A capitalised word (not a speaker's label, `Caroline:`) is taken as addressed when it follows
//! a greeting or thanks (`hey`, `hi`, `hello`, `dear`, `thanks`, `thank you`, `bye`), or an
//! interjection (`wow`, `yeah`, `oh`, `congrats`…) with punctuation right after the name; or when
//! a comma sets it off before and an exclamation or a question mark follows (`That's awesome,
//! Caroline!`, `How are you, Mel?`). A name that opens a sentence is kept (`Caroline, my sister,
//! lives in Malmö`), as are lists and appositions (`Team: Alice, Bob, Carol.`, `John met
//! Caroline, Bob and Sue`, `I went with my sister, Caroline.`).

/// Words after which a name is addressed whatever follows it.
const GREETINGS: [&str; 6] = ["hey", "hi", "hello", "dear", "thanks", "bye"];

/// Words after which a name is addressed when punctuation follows it ("Wow, Caroline!" but not
/// "Oh Paris was lovely").
const INTERJECTIONS: [&str; 17] = [
    "wow",
    "yeah",
    "yes",
    "yep",
    "oh",
    "aw",
    "aww",
    "ok",
    "okay",
    "sure",
    "sorry",
    "congrats",
    "congratulations",
    "cheers",
    "welcome",
    "omg",
    "haha",
];

/// Whether `word`, a slice of `text` (as [`str::split`] yields them), is a name used to address
/// someone.
pub(crate) fn addressed(text: &str, word: &str) -> bool {
    let Some(start) = (word.as_ptr() as usize).checked_sub(text.as_ptr() as usize) else {
        return false;
    };
    let Some(end) = start.checked_add(word.len()).filter(|&e| e <= text.len()) else {
        return false;
    };
    let mut chars = word.chars();
    let capital = chars.next().is_some_and(char::is_uppercase);
    if !capital || chars.next().is_none() {
        return false;
    }
    let (Some(before), Some(after)) = (text.get(..start), text.get(end..)) else {
        return false;
    };
    let next = after.chars().next();
    if next == Some(':') {
        return false;
    }
    let punctuated = next.is_none_or(|c| matches!(c, '!' | '?' | '.' | ',' | ';'));
    let trimmed = before.trim_end_matches([' ', ',']);
    let comma_before = before[trimmed.len()..].contains(',');
    let last = last_word(trimmed);
    // Set off by a comma and exclaimed or asked ("That's awesome, Caroline!", "How are you,
    // Mel?"); a full stop or a comma after it is as often a list or an apposition ("Alice, Bob,
    // Carol.", "with my sister, Caroline."), and a capitalised word before the comma is a list.
    let called = comma_before
        && !opens(trimmed)
        && next.is_some_and(|c| matches!(c, '!' | '?'))
        && !last.starts_with(char::is_uppercase);
    let previous = last.to_lowercase();
    let rest = trimmed[..trimmed.len() - last.len()].trim_end();
    let greeted = GREETINGS.contains(&previous.as_str())
        || (previous == "you" && last_word(rest).eq_ignore_ascii_case("thank"));
    greeted || (punctuated && INTERJECTIONS.contains(&previous.as_str())) || called
}

/// The run of letters and digits that ends `text` (empty when it ends with anything else).
fn last_word(text: &str) -> &str {
    let start = text
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphanumeric())
        .last()
        .map_or(text.len(), |(i, _)| i);
    &text[start..]
}

/// Whether what comes after `text` opens a sentence.
fn opens(text: &str) -> bool {
    text.trim_end()
        .chars()
        .next_back()
        .is_none_or(|c| matches!(c, '.' | '!' | '?' | ':' | '\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of `text` that [`addressed`] takes as addressed.
    fn names(text: &str) -> Vec<&str> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty() && addressed(text, w))
            .collect()
    }

    #[test]
    fn a_name_greeted_thanked_or_set_off_by_commas_is_addressed() {
        for (text, expected) in [
            (
                "Melanie: Hey Caroline! Great to hear from you.",
                vec!["Caroline"],
            ),
            ("Melanie: That's awesome, Caroline! Glad", vec!["Caroline"]),
            ("Caroline: Thanks, Melanie! This necklace", vec!["Melanie"]),
            ("Yeah, Caroline, my family's been great", vec!["Caroline"]),
            ("How are you, Mel?", vec!["Mel"]),
            ("Wow, Caroline, that's awesome.", vec!["Caroline"]),
            ("Hey Mel! A lot's happened", vec!["Mel"]),
            ("Thank you Alice, that helps.", vec!["Alice"]),
            ("Sure, Alice.", vec!["Alice"]),
            ("Hi Sam", vec!["Sam"]),
            ("Dear Émile, ça va?", vec!["Émile"]),
            // Mentions, not addresses.
            ("Caroline: I told Melanie about it, and Bob.", vec![]),
            ("John met Caroline, Bob and Sue.", vec![]),
            ("Caroline, my sister, lives in Malmö.", vec![]),
            ("Oh Paris was lovely in May", vec![]),
            ("The user's sister Caroline moved from Sweden.", vec![]),
            ("Did you Google it?", vec![]),
            ("Melanie: Caroline, so glad you got the support!", vec![]),
            ("Hey I", vec![]),
            ("Team: Alice, Bob, Carol.", vec![]),
            ("I met Dana, Priya!", vec![]),
            ("I went with my sister, Caroline.", vec![]),
            ("That's great, Caroline.", vec![]),
        ] {
            assert_eq!(names(text), expected, "{text}");
        }
    }

    #[test]
    fn a_word_not_of_the_text_is_not_addressed() {
        let other = String::from("Hey Caroline!");
        assert!(!addressed("Hey Caroline!", &other[4..12]));
        assert!(addressed(&other, &other[4..12]));
    }
}
