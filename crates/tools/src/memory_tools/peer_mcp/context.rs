//! `getContext`: who and where the caller is — session, agent, task — with the session's start,
//! usage and, on request, the tools called in it.
//!
//! Everything comes from the per-call context and the caller's own store: the session's stored
//! events give its start and its tool calls (a call failed when its answer starts `error:`, as the
//! runtime writes it). `memory_usage` is the session's token usage, which the runtime records
//! after each model call; `usd_spent` prices it with `[pricing."<model>"]`, and `usage_note` says
//! which models have no price (their tokens count in `tokens_used`, not in `usd_spent`). With
//! `agent` (or `all`), `agent_memory_usage` is the same over every session of the user.

use std::collections::HashMap;

use chrono::{DateTime, SecondsFormat, Utc};
use memory::{MemoryError, ModelUsage, StoredEvent, UsageScope};
use serde_json::{Map, Value, json};
use types::Role;

use super::{GET_CONTEXT_TOOL_NAME, closed};
use crate::MemoryAccess;
use crate::ToolError;
use crate::memory_tools::MemoryState;
use crate::memory_tools::common::map_error;
use crate::spec::{Call, OpFuture, ToolSpec, boxed};

/// The namespace `getContext` reads, for permissions, rate limits, audit and metrics.
const CONTEXT_NAMESPACE: &str = "context";

/// How many of the session's latest events the tool history is read from.
const HISTORY_EVENTS: usize = 500;

fn time_text(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The tool calls among `events`, oldest first: name, when, and whether it succeeded.
pub(crate) fn tool_history(events: &[StoredEvent]) -> Vec<Value> {
    let answers: HashMap<&str, bool> = events
        .iter()
        .filter(|e| e.message.role == Role::Tool)
        .filter_map(|e| {
            let id = e.message.tool_call_id.as_deref()?;
            let failed = e
                .message
                .content
                .as_deref()
                .is_some_and(|c| c.starts_with("error:"));
            Some((id, !failed))
        })
        .collect();
    events
        .iter()
        .filter(|e| e.message.role == Role::Assistant)
        .flat_map(|e| e.message.tool_calls.iter().map(move |c| (e, c)))
        .map(|(e, call)| {
            json!({
                "tool_name": call.name,
                "timestamp": time_text(e.created_at),
                "success": answers.get(call.id.as_str()).copied().unwrap_or(false),
            })
        })
        .collect()
}

pub(crate) static SPEC: ToolSpec<MemoryState> = ToolSpec::new(
    GET_CONTEXT_TOOL_NAME,
    DESCRIPTION,
    context_parameters,
    context_access,
    context,
)
.validated_by(closed)
.answers(context_output);

const DESCRIPTION: &str = "Retrieves contextual information for the current session/agent: session id and start \
     time, agent id, task id, usage, and with include_history the tools called in this \
     session.";

fn context_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "context_type": {
                "type": "string",
                "enum": ["session", "agent", "task", "all"],
                "default": "all",
                "description": "Type of context to retrieve"
            },
            "include_history": {
                "type": "boolean",
                "default": false,
                "description": "Include historical context"
            }
        }
    })
}

fn context_output() -> Value {
    json!({
        "type": "object",
        "properties": {
            "session_id": {"type": "string"},
            "agent_id": {"type": "string"},
            "task_id": {"type": "string"},
            "start_time": {"type": "string", "format": "date-time"},
            "memory_usage": {
                "type": "object",
                "properties": {
                    "tokens_used": {"type": "integer"},
                    "usd_spent": {"type": "number"}
                }
            },
            "tool_history": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "tool_name": {"type": "string"},
                        "timestamp": {"type": "string", "format": "date-time"},
                        "success": {"type": "boolean"}
                    }
                }
            }
        }
    })
}

fn context_access(args: &Value) -> MemoryAccess {
    MemoryAccess {
        namespace: CONTEXT_NAMESPACE.to_owned(),
        context_type: Some(
            args.get("context_type")
                .and_then(Value::as_str)
                .unwrap_or("all")
                .to_owned(),
        ),
        ..MemoryAccess::notes_read()
    }
}

fn context(call: Call<'_, MemoryState>) -> OpFuture<'_> {
    let (state, args, ctx, op) = (call.state, call.args, call.ctx, call.span);
    boxed(async move {
        let memory = state.store()?;
        let kind = args
            .get("context_type")
            .and_then(Value::as_str)
            .unwrap_or("all");
        let include_history = args
            .get("include_history")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let wants = |k: &str| kind == "all" || kind == k;
        let mut out = Map::new();
        if wants("session") {
            out.insert("session_id".into(), json!(ctx.session_id.as_str()));
            // A session not stored yet (a new conversation, an MCP client) starts now.
            let start = match memory.session_info(&ctx.session_id).await {
                Ok(info) if info.user_id == ctx.user_id => info.created_at,
                Ok(_) | Err(MemoryError::SessionNotFound(_)) => Utc::now(),
                Err(e) => return Err(map_error(e, None)),
            };
            out.insert("start_time".into(), json!(time_text(start)));
            let scope = UsageScope::Session(&ctx.session_id);
            let (usage, note) = state.usage(memory, &ctx.user_id, scope).await?;
            out.insert("memory_usage".into(), usage);
            if let Some(note) = note {
                out.insert("usage_note".into(), json!(note));
            }
        }
        if wants("agent") {
            out.insert("agent_id".into(), json!(ctx.user_id.as_str()));
            let scope = UsageScope::AllSessions;
            let (usage, note) = state.usage(memory, &ctx.user_id, scope).await?;
            out.insert("agent_memory_usage".into(), usage);
            if let Some(note) = note {
                out.insert("agent_usage_note".into(), json!(note));
            }
        }
        if wants("task") {
            out.insert("task_id".into(), json!(ctx.turn_id.as_str()));
        }
        if include_history {
            let events = match memory.session_info(&ctx.session_id).await {
                Ok(info) if info.user_id == ctx.user_id => memory
                    .recent_events(&ctx.session_id, HISTORY_EVENTS)
                    .await
                    .map_err(|e| map_error(e, None))?,
                _ => Vec::new(),
            };
            let history = tool_history(&events);
            op.results(history.len());
            out.insert("tool_history".into(), Value::Array(history));
        }
        Ok(Value::Object(out).to_string())
    })
}

impl MemoryState {
    /// `{tokens_used, usd_spent}` of `user` in `scope`, and a note naming the models used without
    /// a configured price.
    async fn usage(
        &self,
        memory: &dyn memory::MemoryRetrieval,
        user: &types::UserId,
        scope: UsageScope<'_>,
    ) -> Result<(Value, Option<String>), ToolError> {
        let per_model = memory
            .usage_by_model(user, scope)
            .await
            .map_err(|e| map_error(e, None))?;
        let mut tokens = 0;
        let mut usd = 0.0;
        let mut unpriced = Vec::new();
        for ModelUsage { model, usage } in &per_model {
            tokens += usage.total();
            match self.pricing.get(model) {
                Some(price) => usd += price.cost(*usage),
                None => unpriced.push(model.chars().take(64).collect::<String>()),
            }
        }
        let note = (!unpriced.is_empty()).then(|| {
            format!(
                "no price is configured for {} ([pricing] in agent.toml), so usd_spent leaves \
                 out its tokens",
                unpriced.join(", ")
            )
        });
        Ok((json!({"tokens_used": tokens, "usd_spent": usd}), note))
    }
}
