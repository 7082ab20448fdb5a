//! The system prompt: the configured (or built-in) instructions, the memory-tool guide when those
//! tools are offered, the recalled notes, and the rolling summary.

use std::fmt::Write;

use crate::recall::RecalledNote;

/// The built-in instructions, used unless `runtime.system_prompt` is set.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are Oxydra, a personal AI assistant running on your user's own machine. \
Be helpful, accurate and concise. Use the tools you are given when they help; when a tool reports \
an error, read it, fix the call and try again, or explain the problem.";

/// How to use the memory tools; appended to the built-in prompt when `memory_search` is offered.
pub const MEMORY_GUIDE: &str = "You have a persistent memory of this user that lasts across \
conversations:
- Save proactively with memory_save whenever the user tells you something worth remembering \
(name, preferences, projects, decisions, important dates). One fact per note, written so it \
makes sense on its own later.
- Before answering anything about the user or earlier conversations, search with memory_search.
- When a saved fact changes or is wrong, find it with memory_search and fix it with \
memory_update using its note_id and version, sending the whole corrected text (a result marked \
partial is only an excerpt: search more narrowly to see it whole first); remove it with \
memory_delete when the user asks you to forget it.
- Never save secrets such as passwords or API keys.";

/// The guide for the categorized memory dialect (`[tools] memory = "categorized"`).
pub const CATEGORIZED_MEMORY_GUIDE: &str = "You have a long-term memory that lasts across \
conversations:
- Store what is worth remembering with store_memory, choosing its category: fact, pattern, \
preference or capability; add context when it helps.
- Before answering anything about the user or earlier conversations, use search_memories; use \
list_memories to browse one category.
- Never store secrets such as passwords or API keys.";

/// The guide for the files memory dialect (`[tools] memory = "files"`): the `memory` tool.
pub const FILES_MEMORY_GUIDE: &str = "You have a persistent memory directory, /memories, that \
lasts across conversations; use the memory tool to reach it.
- IMPORTANT: before starting any task, view /memories first to recall what you learned earlier, \
and read the files that matter for the task.
- As you work, record progress, decisions and what you learn about the user in files there \
(create, str_replace, insert, update); keep them short, organised and up to date, and delete \
what is obsolete.
- Never store secrets such as passwords or API keys.";

/// The system text of a request.
pub(crate) fn system_text(base: &str, notes: &[RecalledNote], summary: Option<&str>) -> String {
    let mut text = base.to_owned();
    if !notes.is_empty() {
        text.push_str("\n\n## Saved notes that may be relevant\n");
        for note in notes {
            let _ = writeln!(text, "- [{}] {}", note.note_id, note.text);
        }
        text.push_str(
            "(From your memory of this user; use memory_search for more, memory_update or \
             memory_delete with a note_id to change one.)",
        );
    }
    if let Some(summary) = summary.filter(|s| !s.trim().is_empty()) {
        text.push_str("\n\n## Summary of the earlier conversation\n");
        text.push_str(summary.trim());
    }
    text
}
