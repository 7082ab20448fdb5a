//! Turning stored entries into the history a provider accepts.
//!
//! Two rules every request keeps, whatever was stored (a crash can leave a tool call without its
//! result) and wherever the budget cuts:
//! - every assistant tool call is followed by exactly one result for it, before the next
//!   non-tool message (missing results are filled in with a note, stray results dropped);
//! - the history starts with a user message, so it never opens with orphan tool results (or with an
//!   assistant reply that answers nothing).

use std::collections::HashSet;

use types::{Message, Role};

use crate::budget::estimate_message;
use crate::journal::Entry;

/// Result text for a call whose result was never stored.
pub(crate) const MISSING_RESULT: &str = "no result was recorded for this call (the agent stopped before it finished); run it again if it is still needed";

/// `messages` with every tool call answered and no stray tool results.
pub(crate) fn repair(entries: &[Entry]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(entries.len());
    // Call ids of the latest assistant message still waiting for a result, in call order.
    let mut waiting: Vec<String> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    for entry in entries {
        let message = &entry.message;
        if message.role == Role::Tool {
            let id = message.tool_call_id.as_deref().unwrap_or("");
            if waiting.iter().any(|w| w == id) && answered.insert(id.to_owned()) {
                out.push(message.clone());
            }
            continue;
        }
        close_calls(&mut out, &mut waiting, &mut answered);
        if message.role == Role::Assistant && !message.tool_calls.is_empty() {
            waiting = message.tool_calls.iter().map(|c| c.id.clone()).collect();
        }
        out.push(message.clone());
    }
    close_calls(&mut out, &mut waiting, &mut answered);
    out
}

fn close_calls(out: &mut Vec<Message>, waiting: &mut Vec<String>, answered: &mut HashSet<String>) {
    for id in waiting.drain(..) {
        if !answered.contains(&id) {
            out.push(Message::tool_result(id, MISSING_RESULT));
        }
    }
    answered.clear();
}

/// The newest suffix of `messages` that fits `budget` tokens, starting at a user message. Messages
/// from `must_keep` on are always included, even over budget (the current turn cannot be cut).
pub(crate) fn fit(messages: &[Message], budget: u32, must_keep: usize) -> &[Message] {
    let must_keep = must_keep.min(messages.len());
    let mut used: u32 = 0;
    let mut start = messages.len();
    while start > 0 {
        let cost = estimate_message(&messages[start - 1]);
        if start <= must_keep && used.saturating_add(cost) > budget {
            break;
        }
        used = used.saturating_add(cost);
        start -= 1;
    }
    // Move forward to a user message, but never past the part that must be kept.
    while start < must_keep && messages[start].role != Role::User {
        start += 1;
    }
    &messages[start..]
}

#[cfg(test)]
mod tests {
    use types::ToolCall;

    use super::*;

    fn entries(messages: Vec<Message>) -> Vec<Entry> {
        messages
            .into_iter()
            .zip(1..)
            .map(|(message, seq)| Entry { seq, message })
            .collect()
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn repair_fills_missing_and_drops_stray_results() {
        let stored = entries(vec![
            Message::tool_result("ghost", "stray"),
            Message::user("hi"),
            Message::assistant_tool_calls(None, vec![call("a"), call("b")]),
            Message::tool_result("a", "A"),
            Message::tool_result("a", "duplicate"),
            Message::user("next"),
        ]);
        assert_eq!(
            repair(&stored),
            vec![
                Message::user("hi"),
                Message::assistant_tool_calls(None, vec![call("a"), call("b")]),
                Message::tool_result("a", "A"),
                Message::tool_result("b", MISSING_RESULT),
                Message::user("next"),
            ]
        );
    }

    #[test]
    fn fit_starts_at_a_user_message() {
        let messages = vec![
            Message::user("old question"),
            Message::assistant_tool_calls(None, vec![call("a")]),
            Message::tool_result("a", "x".repeat(400)),
            Message::assistant("answer"),
            Message::user("new"),
        ];
        // Room for the last two or three messages only: the cut lands inside the old exchange and
        // moves forward to the next user message.
        assert_eq!(fit(&messages, 60, 4), &messages[4..]);
        // Everything fits.
        assert_eq!(fit(&messages, 10_000, 4), &messages[..]);
        // Nothing fits: the current turn is kept anyway.
        assert_eq!(fit(&messages, 0, 4), &messages[4..]);
    }
}
