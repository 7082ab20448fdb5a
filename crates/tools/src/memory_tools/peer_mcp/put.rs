//! `putMemory`: store a JSON value under a key of a namespace, optionally for a while.

use memory::NoteMetadata;
use serde_json::{Value, json};
use types::Operation;

use super::{PUT_MEMORY_TOOL_NAME, closed, keyed_access};
use crate::memory_tools::MAX_CONTENT_BYTES;
use crate::memory_tools::MemoryState;
use crate::memory_tools::common::{audited_call_key, map_error, provenance};
use crate::spec::{Call, OpFuture, ToolSpec, boxed};
use crate::{MemoryAccess, ToolError};

/// Longest time-to-live: ten years.
const MAX_TTL_SECONDS: u64 = 10 * 366 * 24 * 3600;

/// The note text of a keyed value: `key: value`, a string as it is and anything else as compact
/// JSON, so a keyword or meaning search for the key or the value finds it.
pub(crate) fn note_text(key: &str, value: &Value) -> String {
    match value {
        Value::String(s) => format!("{key}: {s}"),
        other => format!("{key}: {other}"),
    }
}

pub(crate) static SPEC: ToolSpec<MemoryState> = ToolSpec::new(
    PUT_MEMORY_TOOL_NAME,
    DESCRIPTION,
    put_parameters,
    put_access,
    put,
)
.validated_by(closed)
.writes("call listMemory for the namespace to see whether the key was stored");

const DESCRIPTION: &str = "Stores data in memory under a key of a namespace (any JSON value, at most 8 KiB), \
     replacing what the key held. With ttl_seconds the value is forgotten after that long. \
     Stored values are notes: memory_search finds them; listMemory lists the keys.";

fn put_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "namespace": {"type": "string", "description": "Memory namespace"},
            "key": {"type": "string", "description": "Memory key"},
            "value": {"description": "Value to store (any JSON-serializable data)"},
            "ttl_seconds": {
                "type": "integer",
                "minimum": 0,
                "description": "Time-to-live in seconds (optional)"
            }
        },
        "required": ["namespace", "key", "value"]
    })
}

fn put_access(args: &Value) -> MemoryAccess {
    MemoryAccess {
        // 0, like none, keeps the value forever.
        ttl_seconds: args
            .get("ttl_seconds")
            .and_then(Value::as_u64)
            .filter(|t| *t > 0),
        text_fields: &["value"],
        ..keyed_access(Operation::Write, args, "key")
    }
}

fn put(call: Call<'_, MemoryState>) -> OpFuture<'_> {
    let (state, args, ctx, op) = (call.state, call.args, call.ctx, call.span);
    boxed(async move {
        let memory = state.store()?;
        let namespace = args.get("namespace").and_then(Value::as_str).unwrap_or("");
        let key = args.get("key").and_then(Value::as_str).unwrap_or("");
        let value = args.get("value").unwrap_or(&Value::Null);
        let text = note_text(key, value);
        if let Err(too_long) = memory::TooLong::check(&text, MAX_CONTENT_BYTES) {
            return Err(ToolError::InvalidArguments {
                field: "value".into(),
                expected: format!(
                    "at most {MAX_CONTENT_BYTES} bytes with its key (8 KiB), got {} bytes: \
                     store a smaller value or split it over several keys",
                    too_long.bytes
                ),
            });
        }
        let mut metadata = NoteMetadata {
            provenance: Some(provenance(ctx, memory::Origin::Model)),
            ..NoteMetadata::default()
        };
        // 0 (like no ttl_seconds) keeps the value until it is replaced.
        if let Some(ttl) = args
            .get("ttl_seconds")
            .and_then(Value::as_u64)
            .filter(|t| *t > 0)
        {
            if ttl > MAX_TTL_SECONDS {
                return Err(ToolError::InvalidArguments {
                    field: "ttl_seconds".into(),
                    expected: format!(
                        "a number of seconds up to {MAX_TTL_SECONDS} (0 or none keeps the \
                         value until it is replaced)"
                    ),
                });
            }
            let ttl = chrono::Duration::seconds(i64::try_from(ttl).unwrap_or(i64::MAX));
            metadata.expires_at = Some(chrono::Utc::now() + ttl);
        }
        metadata
            .extra
            .insert("namespace".into(), Value::String(namespace.to_owned()));
        metadata
            .extra
            .insert("key".into(), Value::String(key.to_owned()));
        let call = audited_call_key(ctx, PUT_MEMORY_TOOL_NAME, args);
        let written = memory
            .put_keyed(&ctx.user_id, call.as_ref(), namespace, key, &text, metadata)
            .await
            .map_err(|e| map_error(e, None))?;
        op.note(&written.note_id);
        let mut out = json!({"success": true, "note_id": written.note_id});
        // Whether the key held a value is a read: a caller that may not read the namespace
        // is not told.
        if ctx.reads.permits(namespace) {
            out["created"] = json!(written.created);
        }
        Ok(out.to_string())
    })
}
