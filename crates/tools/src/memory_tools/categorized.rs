//! The categorized memory dialect: `store_memory`, `search_memories` and `list_memories`, with
//! exactly the peer system's JSON schemas, descriptions and plain-text answers (see
//! `spec/peer-categorized-memory-tools.md`), over the same per-user notes as the four notes
//! tools: a note stored through one dialect is found through the other.
//!
//! The offered schemas keep the peer's `enum` for `category`; the registry validates against a
//! copy without it (see [`Tool::argument_schema`]), so that a bad category gets the peer's own
//! answer, `Failed to store memory: Invalid category '<value>'`.
//!
//! `search_memories` returns only memories with some evidence of being about the query: a
//! memory that shares a word with it or one of its related words (the keyword leg found it), or
//! one whose fused score is above [`MEANING_FLOOR`]. Without that, a one-word query such as
//! "seat" lists every memory the store holds, unrelated ones included, because the vector leg
//! ranks every note (see `docs/benchmarks.md`, "Score floors", for why a floor on the score alone
//! cannot tell them apart).

use std::collections::HashSet;

use memory::{Category, HybridQuery, ListQuery, MemoryError, NoteMetadata, SearchHit, Weights};
use serde_json::{Value, json};
use types::SessionId;

use super::common::{
    audited_call_key, checked_save, content_arg, fetch_k, map_error, provenance, readable,
    string_arg,
};
use crate::MemoryAccess;
use crate::ToolError;
use crate::memory_tools::MemoryState;
use crate::spec::{Call, OpFuture, ToolSpec, boxed};

pub const STORE_MEMORY_TOOL_NAME: &str = types::memory_ops::STORE_MEMORY;
pub const SEARCH_MEMORIES_TOOL_NAME: &str = types::memory_ops::SEARCH_MEMORIES;
pub const LIST_MEMORIES_TOOL_NAME: &str = types::memory_ops::LIST_MEMORIES;

const CATEGORIES: [&str; 4] = ["fact", "pattern", "preference", "capability"];

/// The peer's `category` property, described as `description`.
fn category_property(description: &str) -> Value {
    json!({"type": "string", "enum": CATEGORIES, "description": description})
}

/// The peer's schema with the `category` enum removed, for the registry's validation.
fn without_category_enum(mut schema: Value) -> Value {
    if let Some(category) = schema
        .pointer_mut("/properties/category")
        .and_then(Value::as_object_mut)
    {
        category.remove("enum");
    }
    schema
}

/// `category` parsed, or the peer's error text after `failed` ("Failed to store memory").
fn category_of(args: &Value, failed: &str) -> Result<Category, ToolError> {
    let raw = string_arg(args, "category")?;
    raw.parse::<Category>()
        .map_err(|_| ToolError::execution(format!("{failed}: Invalid category '{raw}'")))
}

/// A store error after the peer's prefix, still short and without internals.
fn failed(prefix: &str, error: MemoryError) -> ToolError {
    ToolError::execution(format!("{prefix}: {}", map_error(error, None)))
}

/// One memory as a list item: `- [category] text` (the category only in search results) and an
/// indented `Context:` line when there is one; continuation lines are indented too.
fn item(out: &mut String, category: Option<Option<Category>>, text: &str, context: Option<&str>) {
    out.push_str("\n- ");
    if let Some(category) = category {
        out.push_str(&format!("[{}] ", category.map_or("note", Category::as_str)));
    }
    out.push_str(&text.trim().replace('\n', "\n  "));
    if let Some(context) = context {
        out.push_str("\n  Context: ");
        out.push_str(&context.trim().replace('\n', "\n  "));
    }
}

fn limit_arg(args: &Value, default: u64, max: u64) -> usize {
    let n = args
        .get("limit")
        .and_then(Value::as_u64)
        .unwrap_or(default)
        .clamp(1, max);
    usize::try_from(n).unwrap_or(1)
}

pub(crate) static STORE: ToolSpec<MemoryState> = ToolSpec::new(
    STORE_MEMORY_TOOL_NAME,
    STORE_DESCRIPTION,
    store_memory_parameters,
    store_memory_access,
    store_memory,
)
.validated_by(without_category_enum)
.writes("call search_memories for the memory's text to see whether it was stored before storing it again")
.text();

const STORE_DESCRIPTION: &str = "Store important information in my long-term memory for future use.\nUse this tool to remember:\n- Facts: Concrete information about APIs, data formats, configurations, etc.\n- Patterns: Recurring behaviors or trends I've observed\n- Preferences: User preferences or system settings I've learned\n- Capabilities: My own abilities or limitations I've discovered\n\nThis memory persists across conversations and helps me improve over time.";

fn store_memory_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "category": category_property(
                "Type of memory: fact (concrete info), pattern (observed behavior), preference (learned preference), capability (my ability/limitation)"
            ),
            "content": {
                "type": "string",
                "description": "The information to remember. Be specific and concise."
            },
            "context": {
                "type": "string",
                "description": "Optional context about when/why this is important"
            },
            "confidence": {
                "type": "number",
                "minimum": 0.0,
                "maximum": 1.0,
                "default": 1.0,
                "description": "Confidence level in this memory (0.0 to 1.0)"
            }
        },
        "required": ["category", "content"]
    })
}

fn store_memory_access(_args: &Value) -> MemoryAccess {
    crate::MemoryAccess::notes_write(&["content", "context"])
}

fn store_memory(call: Call<'_, MemoryState>) -> OpFuture<'_> {
    let (state, args, ctx, op) = (call.state, call.args, call.ctx, call.span);
    boxed(async move {
        const FAILED: &str = "Failed to store memory";
        let category = category_of(args, FAILED)?;
        let memory = state.store()?;
        let content = content_arg(args)?;
        let metadata = NoteMetadata {
            category: Some(category),
            context: args
                .get("context")
                .and_then(Value::as_str)
                .map(str::to_owned),
            confidence: Some(
                args.get("confidence")
                    .and_then(Value::as_f64)
                    .unwrap_or(1.0),
            ),
            provenance: Some(provenance(ctx, memory::Origin::Model)),
            ..NoteMetadata::default()
        };
        let key = audited_call_key(ctx, STORE_MEMORY_TOOL_NAME, args);
        // The peer dialect has no way to insist, so only exact duplicates are refused here.
        let outcome = checked_save(
            memory,
            ctx,
            key.as_ref(),
            content,
            metadata,
            memory::Similar::Allow,
        )
        .await
        .map_err(|e| failed(FAILED, e))?;
        match outcome {
            memory::SaveOutcome::Duplicate { note_id, .. } => {
                op.note(&note_id);
                Ok(format!(
                    "Already stored as {note_id}: {} (not stored again)",
                    content.trim()
                ))
            }
            memory::SaveOutcome::Saved(receipt) => {
                op.note(&receipt.note_id);
                super::common::record_change(ctx, &receipt, |note_id| types::NoteChange::Saved {
                    note_id,
                    text: content.trim().to_owned(),
                    path: None,
                });
                Ok(format!("Stored {category} memory: {}", content.trim()))
            }
            memory::SaveOutcome::Similar(_) => {
                Ok(format!("Stored {category} memory: {}", content.trim()))
            }
        }
    })
}

/// How `search_memories` marks a note the user has not confirmed.
const UNCONFIRMED: &str = "[unconfirmed] ";

pub(crate) static SEARCH: ToolSpec<MemoryState> = ToolSpec::new(
    SEARCH_MEMORIES_TOOL_NAME,
    SEARCH_DESCRIPTION,
    search_memories_parameters,
    search_memories_access,
    search_memories,
)
.timeout_secs(15)
.text()
.marks_untrusted(search_memories_untrusted);

const SEARCH_DESCRIPTION: &str = "Search my long-term memory for information relevant to the current conversation.\nUse this tool when you need to recall:\n- Previous facts you've learned\n- Patterns you've observed\n- User preferences you've discovered\n- Your own capabilities or limitations\n\nThe search looks through all your stored memories to find relevant information.";

fn search_memories_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "Search query to find relevant memories. Use keywords related to what you're looking for."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 20,
                "default": 10,
                "description": "Maximum number of memories to retrieve"
            }
        },
        "required": ["query"]
    })
}

fn search_memories_untrusted(output: &str) -> Option<types::UntrustedInput> {
    output
        .contains(UNCONFIRMED)
        .then_some(types::UntrustedInput::Note)
}

fn search_memories_access(_args: &Value) -> MemoryAccess {
    crate::MemoryAccess::notes_read()
}

fn search_memories(call: Call<'_, MemoryState>) -> OpFuture<'_> {
    let (state, args, ctx, op) = (call.state, call.args, call.ctx, call.span);
    boxed(async move {
        let memory = state.store()?;
        let text = string_arg(args, "query")?;
        let limit = limit_arg(args, 10, 20);
        let mut query = HybridQuery::new(
            vec![SessionId::user_memory(&ctx.user_id)],
            text,
            fetch_k(ctx, limit),
        );
        query.weights = Weights::from(&state.retrieval);
        // Words about time ("last week", "in May") rank memories of that time first, as in
        // memory_search.
        query.time = Some(state.query_time());
        let hits = memory
            .hybrid_query(&query)
            .await
            .map_err(|e| failed("Failed to search memories", e))?;
        // The keyword leg alone: the memories sharing a word with the query.
        let worded = HybridQuery {
            weights: Weights {
                vector: 0.0,
                fts: 1.0,
            },
            time: None,
            ..query
        };
        let worded = memory
            .hybrid_query(&worded)
            .await
            .map_err(|e| failed("Failed to search memories", e))?;
        let hits = readable(ctx, about_the_query(hits, &worded), limit);
        let hits = super::scope::read_back(memory, &ctx.user_id, hits).await;
        op.results(hits.len());
        let text = text.trim();
        if hits.is_empty() {
            return Ok(format!("No memories found for '{text}'."));
        }
        let noun = if hits.len() == 1 {
            "memory"
        } else {
            "memories"
        };
        let mut out = format!("Found {} {noun} for '{text}':", hits.len());
        for hit in &hits {
            let body = hit.note_text.as_deref().unwrap_or(&hit.text);
            let body = match (hit.unconfirmed, &hit.confirmed_text) {
                (true, Some(confirmed)) => {
                    format!("{UNCONFIRMED}{body} (as the user last confirmed it: {confirmed})")
                }
                (true, None) => format!("{UNCONFIRMED}{body}"),
                (false, _) => body.to_owned(),
            };
            item(&mut out, Some(hit.category), &body, hit.context.as_deref());
        }
        Ok(out)
    })
}

/// A memory no query word matched is returned only above this fused score. With the default
/// fusion (`RawCosine`, vector weight 0.8) a memory without a shared word scores 0.8 × its cosine,
/// so this keeps those whose cosine is above 0.75. On LoCoMo's development half the rule drops 14
/// of 7,600 results, none relevant (`docs/benchmarks.md`, "Score floors"); the builtin model's
/// cosines between unrelated short texts reach 0.55–0.85, so a lower floor lets unrelated
/// memories through.
const MEANING_FLOOR: f64 = 0.6;

/// `hits` (best first) without those that neither share a word with the query (`worded`, the
/// keyword leg's hits) nor score above [`MEANING_FLOOR`].
fn about_the_query(hits: Vec<SearchHit>, worded: &[SearchHit]) -> Vec<SearchHit> {
    let key = |h: &SearchHit| (h.note_id.clone(), h.session_id.clone(), h.event_seq);
    let worded: HashSet<_> = worded.iter().map(key).collect();
    hits.into_iter()
        .filter(|h| h.score > MEANING_FLOOR || worded.contains(&key(h)))
        .collect()
}

pub(crate) static LIST: ToolSpec<MemoryState> = ToolSpec::new(
    LIST_MEMORIES_TOOL_NAME,
    LIST_DESCRIPTION,
    list_memories_parameters,
    list_memories_access,
    list_memories,
)
.validated_by(without_category_enum)
.timeout_secs(15)
.text();

const LIST_DESCRIPTION: &str = "List my memories organized by category.\nUse this tool to browse what you've learned in different areas:\n- Facts: Concrete information you've stored\n- Patterns: Behavioral patterns you've observed\n- Preferences: User or system preferences you've learned\n- Capabilities: Your own abilities or limitations you've discovered\n\nThis helps you understand what knowledge you have available.";

fn list_memories_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "category": category_property("Category of memories to list (all categories when absent)"),
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 50,
                "default": 20,
                "description": "Maximum number of memories to retrieve"
            }
        },
        "required": []
    })
}

fn list_memories_access(_args: &Value) -> MemoryAccess {
    crate::MemoryAccess::notes_read()
}

fn list_memories(call: Call<'_, MemoryState>) -> OpFuture<'_> {
    let (state, args, ctx, op) = (call.state, call.args, call.ctx, call.span);
    boxed(async move {
        const FAILED: &str = "Failed to list memories";
        // No category: every category, each memory marked with its own.
        let category = match args.get("category") {
            None | Some(Value::Null) => None,
            Some(_) => Some(category_of(args, FAILED)?),
        };
        let memory = state.store()?;
        let query = ListQuery {
            category,
            limit: limit_arg(args, 20, 50),
            ..ListQuery::default()
        };
        let page = memory
            .list_notes_page(&ctx.user_id, &query)
            .await
            .map_err(|e| failed(FAILED, e))?;
        op.results(page.notes.len());
        let mut out = match category {
            Some(category) => format!("My {category} memories ({} total):", page.total),
            None => format!("My memories ({} total):", page.total),
        };
        for note in &page.notes {
            item(
                &mut out,
                category.is_none().then_some(note.metadata.category),
                &note.content,
                note.metadata.context.as_deref(),
            );
        }
        Ok(out)
    })
}
