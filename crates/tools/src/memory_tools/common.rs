//! What the four memory tools share: the store handle, argument checks, error mapping, spans.

use std::sync::Arc;

use memory::{
    CallKey, MemoryError, MemoryRetrieval, NoteMetadata, Origin, Provenance, SaveOutcome,
    SearchHit, Similar, WriteReceipt,
};
use types::{
    NoteId, PricingConfig, RetrievalConfig, Surface, ToolExecutionContext, UntrustedInput,
};

use crate::ToolError;
use crate::governance::NOTES_NAMESPACE;

/// Largest note the tools accept, in bytes of UTF-8 (8 KiB): memory's one bound.
pub use memory::MAX_CONTENT_BYTES;
/// Most results `memory_search` returns.
pub const MAX_SEARCH_TOP_K: usize = 20;

/// The store behind the tools, or `None` when memory is not configured.
pub(crate) type MemoryHandle = Option<Arc<dyn MemoryRetrieval>>;

/// What the memory tools run over: the user's store (or none), the retrieval settings searches
/// rank with, the user's time zone, and the prices `getContext` counts usage in.
#[derive(Clone, Default)]
pub(crate) struct MemoryState {
    pub memory: MemoryHandle,
    pub retrieval: RetrievalConfig,
    pub pricing: PricingConfig,
    /// The user's time zone (`[user] timezone`), in which times in a search are read; `None`:
    /// the host's.
    pub timezone: Option<chrono_tz::Tz>,
}

impl MemoryState {
    /// The store, or the error saying memory is not configured.
    pub(crate) fn store(&self) -> Result<&dyn MemoryRetrieval, ToolError> {
        self.memory.as_deref().ok_or_else(|| ToolError::Execution {
            message: "memory is not configured for this agent ([memory] is disabled or failed \
                      to open), so nothing can be searched or saved"
                .into(),
            source: None,
        })
    }
}

/// The `content` argument: present, not blank, within [`MAX_CONTENT_BYTES`].
pub(crate) fn content_arg(args: &serde_json::Value) -> Result<&str, ToolError> {
    let content = string_arg(args, "content")?;
    if content.trim().is_empty() {
        return Err(ToolError::InvalidArguments {
            field: "content".into(),
            expected: "non-empty text: the fact, preference or decision to remember".into(),
        });
    }
    if let Err(too_long) = memory::TooLong::check(content, MAX_CONTENT_BYTES) {
        return Err(ToolError::InvalidArguments {
            field: "content".into(),
            expected: format!(
                "at most {MAX_CONTENT_BYTES} bytes (8 KiB), got {} bytes: save a shorter note or \
                 split it into several notes",
                too_long.bytes
            ),
        });
    }
    Ok(content)
}

/// The `note_id` argument, parsed.
pub(crate) fn note_id_arg(args: &serde_json::Value) -> Result<NoteId, ToolError> {
    let raw = string_arg(args, "note_id")?;
    NoteId::parse(raw.trim()).map_err(|_| ToolError::InvalidArguments {
        field: "note_id".into(),
        expected: "a note id like note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f, as returned by \
                   memory_search or memory_save (conversation results have no note id)"
            .into(),
    })
}

pub(crate) fn string_arg<'a>(
    args: &'a serde_json::Value,
    field: &str,
) -> Result<&'a str, ToolError> {
    args.get(field)
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| ToolError::InvalidArguments {
            field: field.into(),
            expected: "a string".into(),
        })
}

/// A store error as the model should see it: short, actionable, no SQL or paths.
pub(crate) fn map_error(error: MemoryError, note_id: Option<&NoteId>) -> ToolError {
    match error {
        MemoryError::NoteNotFound(id) => ToolError::NotFound {
            what: format!("note {id}"),
            hint: "; use memory_search to find the right note_id".into(),
        },
        MemoryError::VersionMismatch(id) => ToolError::Execution {
            message: format!(
                "note {id} was not replaced: the version given is not its current one (the note \
                 changed, or you have not been shown its whole text). Call memory_search to get \
                 its whole current text and version, then send the complete new text with that \
                 version; nothing was changed"
            ),
            source: None,
        },
        MemoryError::InvalidInput(message) => ToolError::Execution {
            message,
            source: None,
        },
        other => {
            let message = if other.is_retryable() {
                "memory is busy right now; try again in a moment".to_owned()
            } else {
                match note_id {
                    Some(id) => format!(
                        "memory could not complete the operation on {id}; nothing was changed"
                    ),
                    None => {
                        "memory could not complete the operation; nothing was changed".to_owned()
                    }
                }
            };
            tracing::error!(error = %other, source = ?std::error::Error::source(&other), "memory tool failed");
            ToolError::Execution {
                message,
                source: Some(Box::new(other)),
            }
        }
    }
}

/// The key of this call's write: its session, the model's call id, the tool and its arguments,
/// carrying the call's audit tag when the registry governed it (the store then records the audit
/// row inside the write's transaction). `None` when the caller has neither a call id nor an audit
/// tag (then a retry is a new write).
///
/// Every governed memory tool that writes passes this key to the store: it is how "the audit row
/// is in the same transaction as the change" holds for every dialect and surface.
pub fn audited_call_key(
    ctx: &ToolExecutionContext,
    tool: &str,
    args: &serde_json::Value,
) -> Option<CallKey> {
    let key = ctx.call_id.as_deref().map(|call_id| {
        // serde_json's maps are sorted: the same arguments always serialize the same way.
        CallKey::new(ctx.session_id.as_str(), call_id, tool, &args.to_string())
    });
    match (key, ctx.audit.clone()) {
        (Some(key), Some(tag)) => Some(key.with_audit(tag)),
        (Some(key), None) => Some(key),
        (None, Some(tag)) => Some(CallKey::audit_only(tag)),
        (None, None) => None,
    }
}

/// Where a note written by this call comes from, from the call's context: the untrusted input in
/// the model's context (or an untrusted client), if any — the note is then unconfirmed, and
/// recall leaves it out — else `origin` (the user's words or the model's inference). Never from
/// the model's arguments alone.
pub(crate) fn provenance(ctx: &ToolExecutionContext, origin: Origin) -> Provenance {
    let origin = match (ctx.untrusted_input, ctx.surface.kind) {
        // Capture records its own origin; untrusted input still leaves the note unconfirmed.
        (_, Surface::Capture) => Origin::Captured,
        (Some(UntrustedInput::File), _) => Origin::File,
        (Some(UntrustedInput::Shell), _) => Origin::Shell,
        (Some(UntrustedInput::Web), _) => Origin::Web,
        (Some(UntrustedInput::Mcp), _) => Origin::Mcp,
        (_, Surface::Mcp) => Origin::Mcp,
        // The operator's command runs outside any conversation.
        (None, Surface::Cli) => return Provenance::outside_turn(Origin::Cli),
        // The user's own edit from a chat client.
        (_, Surface::Gateway) => Origin::User,
        (_, Surface::Cli) => Origin::Cli,
        (_, Surface::Agent) => origin,
    };
    let mut provenance = Provenance::in_turn(origin, ctx.session_id.as_str(), ctx.turn_id.as_str());
    if ctx.untrusted_input.is_some() {
        provenance.confirmed = false;
    }
    provenance
}

/// What a write returns to the model: the note id, the note's version after it (for a later
/// update), and what happened, saying so when an earlier attempt of this call already did it.
/// Records what a write for this call changed (see [`types::NoteChanges`]): a replayed receipt
/// changed nothing now. `change` builds the entry from the note's id.
pub(crate) fn record_change(
    ctx: &ToolExecutionContext,
    receipt: &WriteReceipt,
    change: impl FnOnce(String) -> types::NoteChange,
) {
    if !receipt.replayed {
        ctx.changes.record(change(receipt.note_id.to_string()));
    }
}

pub(crate) fn receipt_message(receipt: &WriteReceipt, message: &str) -> String {
    let message = if receipt.replayed {
        format!(
            "{message} (This call had already been carried out by an earlier attempt; nothing was done twice.)"
        )
    } else {
        message.to_owned()
    };
    let mut out = serde_json::json!({ "note_id": receipt.note_id, "message": message });
    if let Some(token) = &receipt.edit_token {
        out["version"] = serde_json::json!(token);
    }
    out.to_string()
}

/// Whether `text` leaves a note with nothing in it (no letter or digit): an update or edit to such
/// text empties the note, and is governed as a delete.
pub(crate) fn is_blank(text: &str) -> bool {
    !text.chars().any(char::is_alphanumeric)
}

/// A save, checked for duplicates only when the caller may read the user's notes: a caller that
/// may not (a write-only client) gets no similar note's text and no duplicate's id — its save is
/// stored as a new note and answered as one, so the answer says nothing about what is stored.
/// For a caller that may read, the duplicate check is a read, audited by the store with the call.
pub(crate) async fn checked_save(
    memory: &dyn MemoryRetrieval,
    ctx: &ToolExecutionContext,
    key: Option<&CallKey>,
    content: &str,
    metadata: NoteMetadata,
    similar: Similar,
) -> Result<SaveOutcome, MemoryError> {
    if ctx.reads.permits(NOTES_NAMESPACE) {
        memory
            .store_note_checked(&ctx.user_id, key, content, metadata, similar)
            .await
    } else {
        memory
            .store_note_once(&ctx.user_id, key, content, metadata)
            .await
            .map(SaveOutcome::Saved)
    }
}

/// How many hits to ask the store for, for a search that shows `top_k`: more when the caller's
/// read rules name namespaces, so the hits [`readable`] leaves out do not leave the answer short
/// (four times as many, within the store's cap).
pub fn fetch_k(ctx: &ToolExecutionContext, top_k: usize) -> usize {
    if ctx.reads.namespaces.is_empty() {
        top_k
    } else {
        top_k.saturating_mul(4).min(memory::HybridQuery::MAX_TOP_K)
    }
}

/// The hits of a search the caller may read, at most `top_k`: a keyed note whose namespace the
/// caller's read rules do not allow is left out (plain notes are in the namespace `notes`).
pub fn readable(
    ctx: &ToolExecutionContext,
    mut hits: Vec<SearchHit>,
    top_k: usize,
) -> Vec<SearchHit> {
    hits.retain(|h| {
        ctx.reads
            .permits(h.namespace.as_deref().unwrap_or(NOTES_NAMESPACE))
    });
    hits.truncate(top_k);
    hits
}
