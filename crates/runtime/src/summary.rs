//! The rolling summary: when the context grows past `runtime.summary_trigger` of the window, the
//! older part of the conversation is summarised and later requests carry the summary plus the
//! events after it.
//!
//! - The cut always lands just before a user message, and never after the newest one: the summary
//!   never swallows the message being answered, and the kept history starts cleanly.
//! - The summary is written by the model (a non-streaming call with a summarisation prompt, given
//!   the previous summary and the messages to fold in). If that call fails, an extractive summary
//!   (the previous summary plus the first words of each message) is stored instead: the turn goes
//!   on either way.
//! - It is stored with compare-and-swap on the summary epoch, covering events up to a sequence
//!   number; a summariser that lost the race adopts the winner's summary.

use std::fmt::Write;

use provider::{ChatRequest, Provider};
use types::{CancellationToken, Message, Role, RuntimeConfig, Usage};

use crate::budget::{ModelLimits, clip, estimate_message, estimate_text};
use crate::journal::Entry;

const SUMMARY_PROMPT: &str = "You maintain the running summary of a conversation between a user \
and their AI assistant. Merge the previous summary (if any) with the new messages into one concise \
summary: facts about the user, what was asked and answered, decisions, open tasks and promises. \
Write short plain sentences or bullet points. Do not invent anything. Reply with the summary only.";

/// Longest single message in a transcript, in tokens.
const LINE_TOKENS: u32 = 500;
/// Longest single message in an extractive summary, in tokens.
const EXTRACT_LINE_TOKENS: u32 = 50;

/// Where to cut `entries` so that `entries[..k]` is summarised and `entries[k..]` kept: the
/// earliest user message (at or before `newest_user`) whose tail fits `keep_budget`, or
/// `newest_user` itself when even that tail is larger. `None` when nothing precedes the cut.
pub(crate) fn plan_cut(entries: &[Entry], keep_budget: u32, newest_user: usize) -> Option<usize> {
    let mut tail = 0u32;
    let mut cut = None;
    for k in (1..entries.len()).rev() {
        tail = tail.saturating_add(estimate_message(&entries[k].message));
        if tail > keep_budget && cut.is_some() {
            break;
        }
        if entries[k].message.role == Role::User && k <= newest_user {
            cut = Some(k);
            if tail > keep_budget {
                break;
            }
        }
    }
    cut
}

/// How a summary was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SummaryKind {
    Model,
    Extractive,
}

/// A new summary folding `entries` into `previous`, and what the model call used (recorded
/// with the turn's usage); `None` if the turn was cancelled meanwhile.
pub(crate) async fn summarize(
    provider: &dyn Provider,
    previous: Option<&str>,
    entries: &[Entry],
    config: &RuntimeConfig,
    limits: ModelLimits,
    cancel: &CancellationToken,
) -> Option<(String, SummaryKind, Option<Usage>)> {
    let max_tokens = config
        .summary_max_tokens
        .min(limits.max_output_tokens)
        .max(1);
    let previous_tokens = previous.map_or(0, estimate_text);
    let transcript_budget = limits
        .prompt_budget()
        .saturating_sub(max_tokens)
        .saturating_sub(previous_tokens)
        .saturating_sub(estimate_text(SUMMARY_PROMPT) + 64);
    let mut input = String::new();
    if let Some(previous) = previous {
        let _ = write!(input, "Previous summary:\n{previous}\n\n");
    }
    input.push_str("New messages:\n");
    input.push_str(&transcript(entries, transcript_budget));
    let request = ChatRequest {
        system: Some(SUMMARY_PROMPT.to_owned()),
        messages: vec![Message::user(input)],
        tools: Vec::new(),
        max_output_tokens: max_tokens,
        force_tool: None,
    };
    let result = tokio::select! {
        biased;
        () = cancel.cancelled() => return None,
        result = provider.complete(&request) => result,
    };
    let mut used = None;
    match result {
        Ok(response) => {
            used = response.usage;
            let text = response.message.content.unwrap_or_default();
            if text.trim().is_empty() {
                tracing::warn!("the model returned an empty summary; using an extractive one");
            } else {
                return Some((
                    clip(text.trim(), config.summary_max_tokens),
                    SummaryKind::Model,
                    used,
                ));
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "summary call failed; using an extractive summary");
        }
    }
    Some((
        extractive(previous, entries, config.summary_max_tokens),
        SummaryKind::Extractive,
        used,
    ))
}

/// One line per message (tool calls named, long texts clipped), the newest lines that fit `budget`.
fn transcript(entries: &[Entry], budget: u32) -> String {
    let lines: Vec<String> = entries
        .iter()
        .filter_map(|e| line(&e.message, LINE_TOKENS))
        .collect();
    newest_that_fit(&lines, budget).join("\n")
}

/// The previous summary plus the start of each user and assistant message, within `max_tokens`
/// (the newest lines win when it is too long).
pub(crate) fn extractive(previous: Option<&str>, entries: &[Entry], max_tokens: u32) -> String {
    let mut out = String::new();
    let mut budget = max_tokens;
    if let Some(previous) = previous.filter(|p| !p.trim().is_empty()) {
        let kept = clip(previous.trim(), max_tokens / 2);
        budget = budget.saturating_sub(estimate_text(&kept));
        out.push_str(&kept);
        out.push('\n');
    }
    let lines: Vec<String> = entries
        .iter()
        .filter(|e| matches!(e.message.role, Role::User | Role::Assistant))
        .filter_map(|e| line(&e.message, EXTRACT_LINE_TOKENS))
        .collect();
    out.push_str("Earlier messages, abridged:\n");
    out.push_str(&newest_that_fit(&lines, budget.saturating_sub(8)).join("\n"));
    out
}

fn line(message: &Message, tokens: u32) -> Option<String> {
    let text = message
        .content
        .as_deref()
        .map(|t| clip(t.trim(), tokens))
        .filter(|t| !t.is_empty());
    match message.role {
        Role::User => text.map(|t| format!("User: {t}")),
        Role::Assistant => {
            let calls: Vec<&str> = message.tool_calls.iter().map(|c| c.name.as_str()).collect();
            match (text, calls.is_empty()) {
                (Some(t), true) => Some(format!("Assistant: {t}")),
                (Some(t), false) => Some(format!("Assistant: {t} (used {})", calls.join(", "))),
                (None, false) => Some(format!("Assistant used {}", calls.join(", "))),
                (None, true) => None,
            }
        }
        Role::Tool => text.map(|t| format!("Tool result: {t}")),
        Role::System => None,
    }
}

fn newest_that_fit(lines: &[String], budget: u32) -> &[String] {
    let mut used = 0u32;
    let mut start = lines.len();
    while start > 0 {
        let cost = estimate_text(&lines[start - 1]) + 1;
        if used.saturating_add(cost) > budget {
            break;
        }
        used += cost;
        start -= 1;
    }
    &lines[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(messages: Vec<Message>) -> Vec<Entry> {
        messages
            .into_iter()
            .zip(1..)
            .map(|(message, seq)| Entry { seq, message })
            .collect()
    }

    #[test]
    fn cut_lands_before_a_user_message_and_keeps_the_newest() {
        let long = "x".repeat(400);
        let e = entries(vec![
            Message::user(&long),
            Message::assistant(&long),
            Message::user(&long),
            Message::assistant(&long),
            Message::user("newest"),
        ]);
        // Room for the last message only.
        assert_eq!(plan_cut(&e, 10, 4), Some(4));
        // Room for the last three.
        assert_eq!(plan_cut(&e, 250, 4), Some(2));
        // Everything fits but entries[0] is still summarisable: earliest user boundary after 0.
        assert_eq!(plan_cut(&e, 10_000, 4), Some(2));
        // Nothing before the newest message.
        assert_eq!(plan_cut(&e[4..], 0, 0), None);
    }

    #[test]
    fn extractive_keeps_the_newest_lines() {
        let e = entries(vec![
            Message::user("My name is Shantanu"),
            Message::assistant("Nice to meet you"),
        ]);
        assert_eq!(
            extractive(Some("Earlier: hello."), &e, 100),
            "Earlier: hello.\nEarlier messages, abridged:\nUser: My name is Shantanu\nAssistant: Nice to meet you"
        );
        let tight = extractive(None, &e, 16);
        assert!(tight.ends_with("Assistant: Nice to meet you"), "{tight}");
        assert!(!tight.contains("Shantanu"), "{tight}");
    }
}
