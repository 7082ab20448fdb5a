//! Applying capture's proposals: each runs a notes tool (`memory_save`, `memory_update`,
//! `memory_delete`) through the registry's one pipeline with the `capture` surface — validation,
//! permission, rate limit, PII and secret screening, the write with its audit row, provenance
//! `captured` with the session and turn — exactly as the model's own calls would. A save the
//! store's duplicate check answers with a near-certain restatement ([`RESTATED`]) becomes an
//! update of that note, one merely similar is added; an exact duplicate changes nothing. A
//! refused or failed proposal is logged and skipped. A change is reported with the note's text
//! as stored (screening may have redacted it).

use memory::MemoryStore;
use serde_json::{Value, json};
use tools::{
    MEMORY_DELETE_TOOL_NAME, MEMORY_SAVE_TOOL_NAME, MEMORY_UPDATE_TOOL_NAME, ToolRegistry,
};
use types::{CapturedChange, NoteId, ToolExecutionContext};

use super::proposal::Proposal;
use crate::RuntimeError;

/// Cosine (as the duplicate check reports it, two decimals) from which an added fact close to a
/// note is taken for a restatement of it and replaces it. Measured on the builtin model over the
/// labelled pairs' notes compared across sets (`docs/benchmarks.md`): of the pairs the check
/// flags, about six in ten between 0.85 and 0.95 are different facts, none of a sample of 31 at
/// 0.95 or above.
const RESTATED: f64 = 0.95;

/// One proposal; `Ok(None)` when it changed nothing (already recorded).
pub(crate) async fn apply(
    tools: &ToolRegistry,
    store: &MemoryStore,
    ctx: &ToolExecutionContext,
    proposal: &Proposal,
) -> Result<Option<CapturedChange>, NotApplied> {
    let confirmed = ctx.untrusted_input.is_none();
    match proposal {
        Proposal::Add {
            content,
            category,
            tags,
        } => {
            let mut args = json!({ "content": content });
            organise(&mut args, category.as_ref(), tags);
            let added = |answer: Value| async move {
                let note_id = text_of(&answer, "note_id")?;
                let text = stored(store, ctx, &note_id, content).await;
                Ok(Some(change("added", note_id, &text, confirmed)))
            };
            let answer = run(tools, MEMORY_SAVE_TOOL_NAME, &args, ctx).await?;
            if answer.get("saved") != Some(&Value::Bool(false)) {
                return added(answer).await;
            }
            // The store's duplicate check: the same text is already a note (nothing to do), or a
            // similar note exists. A near-certain restatement replaces it, as an update; below
            // that, a static model's neighbours are as often another fact of the same topic
            // (an allergy to shellfish, one to cats), which an update would take out of memory:
            // the model, shown the user's notes, asked for an add, and gets one.
            let best = &answer["similar"][0];
            let Some(similar) = best["note_id"].as_str() else {
                return Ok(None);
            };
            if best["similarity"].as_f64().unwrap_or(0.0) < RESTATED {
                args["allow_similar"] = json!(true);
                let call = ToolExecutionContext {
                    call_id: ctx.call_id.as_ref().map(|c| format!("{c}-add")),
                    ..ctx.clone()
                };
                return added(run(tools, MEMORY_SAVE_TOOL_NAME, &args, &call).await?).await;
            }
            let note_id = NoteId::parse(similar).map_err(|e| e.to_string())?;
            let note = store
                .get(&ctx.user_id, &note_id)
                .await
                .map_err(|e| e.to_string())?;
            let mut args = json!({
                "note_id": similar,
                "content": content,
                "version": memory::edit_token(&note.content),
            });
            organise(&mut args, category.as_ref(), tags);
            let call = ToolExecutionContext {
                call_id: ctx.call_id.as_ref().map(|c| format!("{c}-update")),
                ..ctx.clone()
            };
            run(tools, MEMORY_UPDATE_TOOL_NAME, &args, &call).await?;
            let text = stored(store, ctx, similar, content).await;
            Ok(Some(change(
                "updated",
                similar.to_owned(),
                &text,
                confirmed,
            )))
        }
        Proposal::Update {
            note_id,
            edit_token,
            content,
            category,
            tags,
            ..
        } => {
            let mut args = json!({ "note_id": note_id, "content": content, "version": edit_token });
            organise(&mut args, category.as_ref(), tags);
            run(tools, MEMORY_UPDATE_TOOL_NAME, &args, ctx).await?;
            let text = stored(store, ctx, note_id, content).await;
            Ok(Some(change("updated", note_id.clone(), &text, confirmed)))
        }
        Proposal::Delete {
            note_id,
            edit_token,
            ..
        } => {
            let id = NoteId::parse(note_id).map_err(|e| e.to_string())?;
            let text = store
                .get(&ctx.user_id, &id)
                .await
                .map(|n| n.content)
                .map_err(|e| e.to_string())?;
            // What was judged no longer true is the text shown; a note changed since stays.
            if edit_token
                .as_ref()
                .is_some_and(|shown| *shown != memory::edit_token(&text))
            {
                return Err("the note changed since it was shown".to_owned().into());
            }
            run(
                tools,
                MEMORY_DELETE_TOOL_NAME,
                &json!({ "note_id": note_id }),
                ctx,
            )
            .await?;
            Ok(Some(change("deleted", note_id.clone(), &text, true)))
        }
    }
}

/// The text of a note just written, as stored: the pipeline may have redacted what was proposed
/// (`[governance.surfaces.capture]`), and the report is what clients show and undo from — an
/// undo checks that the note still says what the change wrote. Unreadable: the proposed text.
async fn stored(
    store: &MemoryStore,
    ctx: &ToolExecutionContext,
    note_id: &str,
    proposed: &str,
) -> String {
    let Ok(id) = NoteId::parse(note_id) else {
        return proposed.to_owned();
    };
    match store.get(&ctx.user_id, &id).await {
        Ok(note) => note.content,
        Err(e) => {
            tracing::warn!(error = %e, "capture: a note written could not be read back");
            proposed.to_owned()
        }
    }
}

fn change(action: &str, note_id: String, text: &str, confirmed: bool) -> CapturedChange {
    CapturedChange {
        action: action.to_owned(),
        note_id,
        text: text.to_owned(),
        confirmed,
    }
}

fn organise(args: &mut Value, category: Option<&String>, tags: &[String]) {
    if let Some(category) = category {
        args["category"] = json!(category);
    }
    if !tags.is_empty() {
        args["tags"] = json!(tags);
    }
}

/// Runs one notes tool through the registry's pipeline; its JSON answer, or why it failed.
async fn run(
    tools: &ToolRegistry,
    tool: &str,
    args: &Value,
    ctx: &ToolExecutionContext,
) -> Result<Value, NotApplied> {
    let outcome = tools.execute(tool, &args.to_string(), ctx).await;
    if !outcome.ok {
        return Err(NotApplied {
            reason: format!("{tool}: {}", outcome.error_kind.unwrap_or("refused")),
            refused: Some(crate::notes::refused(&outcome)),
        });
    }
    Ok(serde_json::from_str(&outcome.output).unwrap_or(Value::Null))
}

fn text_of(answer: &Value, key: &str) -> Result<String, NotApplied> {
    answer[key]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("the answer has no {key}").into())
}

/// Why a proposal was not applied; `refused` is the pipeline's refusal
/// ([`RuntimeError::NoteRefused`], its kind and words) when a notes tool failed, so the user who
/// accepts a proposal is told the rule that refused it rather than that the note changed.
#[derive(Debug)]
pub(crate) struct NotApplied {
    pub(crate) refused: Option<RuntimeError>,
    reason: String,
}

impl From<String> for NotApplied {
    fn from(reason: String) -> Self {
        Self {
            refused: None,
            reason,
        }
    }
}

impl std::fmt::Display for NotApplied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}
