//! A memory delete the model asks for while untrusted text is in its context needs the user's
//! answer, as a privileged call does.
//!
//! Untrusted text (a file, a command's output, a web page, an MCP server's answer, a note the user
//! has not confirmed: see [`crate::untrusted`]) can carry instructions. What the model writes
//! after it is only unconfirmed — kept, marked, and left out of recall until the user confirms
//! it — but a delete would make a confirmed memory vanish from recall unseen: a planted "forget
//! where the user lives" would work. So a call that removes notes (governance's `Delete`
//! operation: `memory_delete`, the files tool's `delete`, an update that empties a note — and an
//! update that gives a note an expiry, which forgets it later) goes
//! through the approval policy while such text is in the context, with a reason naming what it
//! would forget and what was read; capture's deletes wait for the user the same way (see
//! [`crate::capture`]). A turn begun by untrusted text — the run of a schedule made after such
//! text was read — is gated so from its start: its instruction is not the user's. Under
//! `runtime.approval = "allow"` it runs, as every privileged call does; under `"deny"`, and where
//! no one can answer, it is refused.

use serde_json::Value;
use tools::ToolRegistry;
use types::{NoteId, Operation, ToolCall, ToolExecutionContext, UntrustedInput};

use crate::journal::Entry;
use crate::runtime::AgentRuntime;

/// The most of a note's text an approval request quotes.
const QUOTED_CHARS: usize = 200;

/// What the model is told when `runtime.approval = "deny"` refuses such a delete.
pub(crate) const DENIED_AFTER_UNTRUSTED: &str = "not run: deleting a memory after reading \
untrusted content needs the user's approval, and this agent refuses calls that need it \
(runtime.approval = \"deny\"). Tell the user which memory you would delete; they can delete it \
themselves";

/// The untrusted input that makes `call` a delete needing the user's answer: `None` when the call
/// removes no note, no untrusted text is in `entries` and the turn itself was not started by
/// untrusted text (`ctx`'s mark: the run of a schedule made after untrusted input, whose
/// instruction is text the user never wrote).
pub(crate) fn needs_answer(
    tools: &ToolRegistry,
    entries: &[Entry],
    call: &ToolCall,
    ctx: &ToolExecutionContext,
) -> Option<UntrustedInput> {
    let args: Value = serde_json::from_str(&call.arguments).ok()?;
    let access = tools.get(&call.name)?.memory_access(&args)?;
    if !forgets(&access) {
        return None;
    }
    crate::untrusted::in_context(tools, entries).or(ctx.untrusted_input)
}

/// Whether a call with `access` removes notes: a delete, or a write that gives a note it names an
/// expiry (`memory_update`'s `expires_in` / `expires_at`: the note leaves recall when it comes,
/// as a delete would make it, only later).
fn forgets(access: &tools::MemoryAccess) -> bool {
    access.operation == Operation::Delete
        || (access.key.is_some() && access.ttl_seconds.is_some_and(|ttl| ttl > 0))
}

impl AgentRuntime {
    /// The reason an approval request gives for a delete after `read`: what was read, and what
    /// would be forgotten (the note's text, quoted, when the call names a note the store holds;
    /// else the file it names).
    pub(crate) async fn forget_reason(
        &self,
        ctx: &ToolExecutionContext,
        call: &ToolCall,
        read: UntrustedInput,
    ) -> String {
        let args: Value = serde_json::from_str(&call.arguments).unwrap_or_default();
        let text = |key: &str| args.get(key).and_then(Value::as_str);
        let note = match text("note_id").map(NoteId::parse) {
            Some(Ok(id)) => match self.notes_store() {
                Ok(store) => store.get(&ctx.user_id, &id).await.ok(),
                Err(_) => None,
            },
            _ => None,
        };
        let what = match (note, text("path")) {
            (Some(note), _) => format!("the memory \u{ab}{}\u{bb}", quoted(&note.content)),
            (None, Some(path)) => format!("the memory file {}", quoted(path)),
            (None, None) => "a memory".to_owned(),
        };
        // An expiry forgets later: said so.
        let when = match ["expires_in", "expires_at"].iter().find_map(|k| text(k)) {
            Some(at) => format!(" when it expires ({})", quoted(at)),
            None => String::new(),
        };
        format!(
            "It would forget {what}{when}, asked after the conversation read {} — text that \
             can carry instructions the user never gave.",
            source(read)
        )
    }
}

/// What was read, in words.
fn source(read: UntrustedInput) -> &'static str {
    match read {
        UntrustedInput::File => "a file",
        UntrustedInput::Shell => "a command's output",
        UntrustedInput::Web => "a web page",
        UntrustedInput::Note => "a note the user has not confirmed",
        UntrustedInput::Client => "a message from an untrusted client",
        UntrustedInput::Mcp => "an MCP server's answer",
    }
}

/// `text` on one line, cut at [`QUOTED_CHARS`] characters.
fn quoted(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(QUOTED_CHARS) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn a_quote_is_one_line_and_bounded() {
        assert_eq!(quoted("lives in\n  Lisbon"), "lives in Lisbon");
        let long = "é".repeat(300);
        let cut = quoted(&long);
        assert_eq!(cut.chars().count(), 201);
        assert!(cut.ends_with('…'));
    }
}
