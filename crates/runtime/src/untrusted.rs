//! Which untrusted text is in the model's context when it writes to memory, and when a write is
//! nevertheless the user's own words.
//!
//! The mark is read from the context itself, not kept per turn: the session's entries after the
//! summary (this turn's included) are what the model is sent, so a tool result that carries
//! untrusted text (a file, a shell command's output, a note the user has not confirmed: see
//! `tools::Tool::untrusted_in`) marks every memory write the model makes while it is there — in
//! the turn that read it and the turns after — and stops marking once the summary has replaced
//! it. An untrusted text can thus not be laundered by saving it a turn later, nor by an MCP
//! server that takes the tool which answered off its list
//! ([`tools::ToolRegistry::untrusted_in`]).
//!
//! What the user said stays theirs: a write whose every text restates a user message still in
//! the context (each word of the note, apart from framing words like "the user", appears in one
//! user message; a number or a name must appear exactly) is recorded as the user's, confirmed,
//! even in a marked context. A poisoned text that adds a word or changes a digit is not.

use std::collections::HashMap;

use serde_json::Value;
use tools::ToolRegistry;
use types::{Role, UntrustedInput};

use crate::journal::Entry;

/// The untrusted input among the tool results of `entries`, if any (the first found).
pub(crate) fn in_context(tools: &ToolRegistry, entries: &[Entry]) -> Option<UntrustedInput> {
    let mut names: HashMap<&str, &str> = HashMap::new();
    for entry in entries {
        let message = &entry.message;
        for call in &message.tool_calls {
            names.insert(call.id.as_str(), call.name.as_str());
        }
        if message.role != Role::Tool {
            continue;
        }
        let Some(name) = message.tool_call_id.as_deref().and_then(|id| names.get(id)) else {
            continue;
        };
        let output = message.content.as_deref().unwrap_or_default();
        if let Some(mark) = tools.untrusted_in(name, output) {
            return Some(mark);
        }
    }
    None
}

/// The arguments of a memory write that hold the text it stores.
const TEXT_FIELDS: [&str; 5] = ["content", "file_text", "new_str", "insert_text", "value"];

/// Words a restatement adds around the user's own ("the user's", "is", "they").
const FRAMING: &[&str] = &[
    "the", "a", "an", "user", "users", "user's", "is", "are", "was", "were", "am", "be", "has",
    "have", "had", "their", "they", "them", "his", "her", "he", "she", "i", "my", "me", "mine",
    "said", "says", "that", "to", "of", "and", "named", "called",
];

/// Whether every text the call `arguments` would store restates one user message of `entries`.
pub(crate) fn restates_user(arguments: &str, entries: &[Entry]) -> bool {
    let Ok(args) = serde_json::from_str::<Value>(arguments) else {
        return false;
    };
    let texts: Vec<String> = TEXT_FIELDS
        .iter()
        .filter_map(|f| args.get(*f))
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    if texts.is_empty() {
        return false;
    }
    let said: Vec<Vec<String>> = entries
        .iter()
        .filter(|e| e.message.role == Role::User)
        .filter_map(|e| e.message.content.as_deref())
        .map(words)
        .collect();
    texts.iter().all(|text| {
        let note: Vec<String> = words(text)
            .into_iter()
            .filter(|w| !FRAMING.contains(&w.as_str()))
            .collect();
        !note.is_empty()
            && said
                .iter()
                .any(|message| note.iter().all(|w| message.iter().any(|m| same_word(w, m))))
    })
}

/// Lower-cased words, a possessive `'s` dropped (digits kept as words of their own).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'))
        .map(|w| {
            let w = w.trim_matches(|c| c == '\'' || c == '’').to_lowercase();
            w.strip_suffix("'s")
                .or_else(|| w.strip_suffix("’s"))
                .map_or_else(|| w.clone(), str::to_owned)
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// The same word, or one inflection of the other (`lives` / `live`, `named` / `name`): a prefix
/// of at least four letters, or the word with an `s`. Anything with a digit must be equal.
fn same_word(note: &str, said: &str) -> bool {
    if note == said {
        return true;
    }
    if note.chars().any(|c| c.is_numeric()) || said.chars().any(|c| c.is_numeric()) {
        return false;
    }
    let (short, long) = match note.len() <= said.len() {
        true => (note, said),
        false => (said, note),
    };
    // A plural or third person of a short word (`use` / `uses`).
    if long.strip_suffix('s') == Some(short) {
        return true;
    }
    short.chars().count() >= 4 && long.starts_with(short) && long.len() - short.len() <= 3
}

#[cfg(test)]
#[path = "untrusted_tests.rs"]
mod tests;
