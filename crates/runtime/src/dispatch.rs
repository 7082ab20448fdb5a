//! Running the tool calls of one model reply.
//!
//! - Consecutive `ReadOnly` calls run in parallel; every other call (and an unknown tool) runs on its
//!   own, in order. Results are stored in call order, each as soon as its group has finished.
//! - Every call goes through the registry (argument parsing and schema validation, the tool's
//!   timeout, cancellation, scrubbing, truncation) with the turn's context, unchanged. Failures come
//!   back to the model as the result text, prefixed `error:`, so it can correct itself.
//! - `Privileged` calls pass `runtime.approval` first: `allow` runs them, `deny` refuses them, `ask`
//!   asks the user (see [`crate::approval`]), unless the user allowed that tool for the session.
//!   A memory delete made while untrusted text is in the context passes it too, with a reason
//!   (see [`crate::forget_gate`]).
//! - After cancellation, calls that had not started get a "cancelled before it ran" result and calls
//!   that were running a "cancelled while it ran" one: every call always has exactly one result.
//!   Tools that settle (memory writes: see `tools::Interruption`) report what really happened
//!   instead: a write that committed is a success, one still unfinished says its outcome is
//!   unknown and how to check.
//! - Each call runs with the turn's context plus its own call id, which memory writes record so
//!   that a retried call never writes twice.
//!
//! Each call ends with one `ToolFinished` event; `ToolStarted` is sent only for calls that run,
//! and `ToolProgress` while it runs when the tool reports how far it got.

use std::time::{Duration, Instant};

use tools::ToolOutcome;
use types::{
    ApprovalPolicy, Message, NoteChange, NoteChanges, ProgressSink, SafetyTier, ToolCall,
    ToolExecutionContext, UntrustedInput,
};

use crate::RuntimeError;
use crate::approval::{ApprovalDecision, ApprovalRequest};
use crate::turn::Turn;
use types::TurnEvent;

pub(crate) const CANCELLED_BEFORE: &str = "cancelled before it ran: the user stopped the turn";
pub(crate) const CANCELLED_WHILE: &str =
    "cancelled while it ran: the user stopped the turn; it may have partly happened";
const DECLINED: &str = "not run: the user declined this call. Do not retry it; ask the user what they would like instead.";
const DENIED: &str =
    "not run: privileged tools are disabled on this agent (runtime.approval = \"deny\")";
const NO_APPROVER: &str =
    "not run: this call needs the user's approval, but no one can answer approval requests here";
const APPROVAL_TIMEOUT: &str = "not run: the user did not answer the approval request in time";

/// How the calls of one reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dispatch {
    Done,
    Cancelled,
}

enum Gate {
    Run,
    Refuse(&'static str),
    Cancelled,
}

impl Turn<'_> {
    pub(crate) async fn run_tools(&mut self, calls: &[ToolCall]) -> Result<Dispatch, RuntimeError> {
        let mut i = 0;
        while i < calls.len() {
            if self.ctx.cancellation.is_cancelled() {
                for call in &calls[i..] {
                    self.finish_call(
                        call,
                        (false, CANCELLED_BEFORE.to_owned()),
                        Duration::ZERO,
                        Vec::new(),
                    )
                    .await?;
                }
                return Ok(Dispatch::Cancelled);
            }
            let tier = self.tier(&calls[i]);
            if tier == Some(SafetyTier::ReadOnly) {
                let end = calls[i..]
                    .iter()
                    .position(|c| self.tier(c) != Some(SafetyTier::ReadOnly))
                    .map_or(calls.len(), |n| i + n);
                self.run_parallel(&calls[i..end]).await?;
                i = end;
            } else {
                self.run_one(&calls[i], tier).await?;
                i += 1;
            }
        }
        Ok(if self.ctx.cancellation.is_cancelled() {
            Dispatch::Cancelled
        } else {
            Dispatch::Done
        })
    }

    fn tier(&self, call: &ToolCall) -> Option<SafetyTier> {
        self.rt.tools.get(&call.name).map(|t| t.safety_tier())
    }

    fn forgets_after_untrusted(&self, call: &ToolCall) -> Option<UntrustedInput> {
        crate::forget_gate::needs_answer(&self.rt.tools, self.entries(), call, self.ctx)
    }

    /// The untrusted input `call` is made with: what is in the model's context now (see
    /// [`crate::untrusted`]), unless the text it writes restates the user's own words.
    fn mark_for(&self, call: &ToolCall) -> Option<UntrustedInput> {
        let mark = crate::untrusted::in_context(&self.rt.tools, self.entries())?;
        if crate::untrusted::restates_user(&call.arguments, self.entries()) {
            return None;
        }
        Some(mark)
    }

    async fn run_parallel(&mut self, calls: &[ToolCall]) -> Result<(), RuntimeError> {
        for call in calls {
            self.started(call).await;
        }
        let marks: Vec<_> = calls
            .iter()
            .map(|call| (self.mark_for(call), self.emitter.progress_sink(call)))
            .collect();
        let (tools, ctx) = (&self.rt.tools, self.ctx);
        let runs = calls.iter().zip(marks).map(|(call, mark)| async move {
            let start = Instant::now();
            let call_ctx = for_call(ctx, call, mark);
            let outcome = tools.execute(&call.name, &call.arguments, &call_ctx).await;
            (outcome, start.elapsed(), call_ctx.changes.take())
        });
        let results = futures::future::join_all(runs).await;
        for (call, (outcome, took, changes)) in calls.iter().zip(results) {
            let (ok, text) = result_text(&outcome);
            self.finish_call(call, (ok, text), took, changes).await?;
        }
        Ok(())
    }

    async fn run_one(
        &mut self,
        call: &ToolCall,
        tier: Option<SafetyTier>,
    ) -> Result<(), RuntimeError> {
        // A memory delete made while untrusted text is in the context is gated as a privileged
        // call is (see `crate::forget_gate`); deletes are never read-only, so they get here.
        let forgets = self.forgets_after_untrusted(call);
        if tier == Some(SafetyTier::Privileged) || forgets.is_some() {
            match self.gate(call, forgets).await {
                Gate::Run => {}
                Gate::Refuse(why) => {
                    return self
                        .finish_call(call, (false, why.to_owned()), Duration::ZERO, Vec::new())
                        .await;
                }
                Gate::Cancelled => {
                    return self
                        .finish_call(
                            call,
                            (false, CANCELLED_BEFORE.to_owned()),
                            Duration::ZERO,
                            Vec::new(),
                        )
                        .await;
                }
            }
        }
        self.started(call).await;
        let start = Instant::now();
        let mark = (self.mark_for(call), self.emitter.progress_sink(call));
        let call_ctx = for_call(self.ctx, call, mark);
        let outcome = self
            .rt
            .tools
            .execute(&call.name, &call.arguments, &call_ctx)
            .await;
        let (ok, text) = result_text(&outcome);
        let changes = call_ctx.changes.take();
        self.finish_call(call, (ok, text), start.elapsed(), changes)
            .await
    }

    /// The approval policy for a privileged call, or a delete after the untrusted input
    /// `forgets`.
    async fn gate(&mut self, call: &ToolCall, forgets: Option<UntrustedInput>) -> Gate {
        match self.rt.config.approval {
            ApprovalPolicy::Allow => return Gate::Run,
            ApprovalPolicy::Deny if forgets.is_some() => {
                return Gate::Refuse(crate::forget_gate::DENIED_AFTER_UNTRUSTED);
            }
            ApprovalPolicy::Deny => return Gate::Refuse(DENIED),
            ApprovalPolicy::Ask => {}
        }
        if self.rt.grants.allows(&self.ctx.session_id, &call.name) {
            return Gate::Run;
        }
        let Some(approver) = self.rt.approver.clone() else {
            return Gate::Refuse(NO_APPROVER);
        };
        let reason = match forgets {
            Some(read) => Some(self.rt.forget_reason(self.ctx, call, read).await),
            None => None,
        };
        // Register first, then tell the client: an answer can never arrive before its listener.
        let answer = approver.request(ApprovalRequest {
            user_id: self.ctx.user_id.clone(),
            session_id: self.ctx.session_id.clone(),
            turn_id: self.ctx.turn_id.clone(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            reason: reason.clone(),
        });
        self.emitter
            .send(TurnEvent::ApprovalRequested {
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                reason,
            })
            .await;
        let wait = Duration::from_secs(self.rt.config.approval_timeout_secs);
        let cancel = &self.ctx.cancellation;
        tokio::select! {
            biased;
            () = cancel.cancelled() => Gate::Cancelled,
            answer = tokio::time::timeout(wait, answer) => match answer {
                Ok(ApprovalDecision::Approve) => Gate::Run,
                Ok(ApprovalDecision::ApproveForSession) => {
                    self.rt.grants.grant(&self.ctx.session_id, &call.name);
                    Gate::Run
                }
                Ok(ApprovalDecision::Decline) => Gate::Refuse(DECLINED),
                Err(_) => Gate::Refuse(APPROVAL_TIMEOUT),
            },
        }
    }

    async fn started(&mut self, call: &ToolCall) {
        self.emitter
            .send(TurnEvent::ToolStarted {
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            })
            .await;
    }

    /// Stores the call's result and reports it, with what it changed in memory.
    async fn finish_call(
        &mut self,
        call: &ToolCall,
        (ok, text): (bool, String),
        took: Duration,
        changes: Vec<NoteChange>,
    ) -> Result<(), RuntimeError> {
        let summary = summary_line(&text);
        self.record(Message::tool_result(call.id.clone(), text))
            .await?;
        self.emitter
            .send(TurnEvent::ToolFinished {
                call_id: call.id.clone(),
                name: call.name.clone(),
                ok,
                summary,
                duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
                changes,
            })
            .await;
        Ok(())
    }
}

/// The turn's context for one call: the same user, session, turn, workspace and cancellation, plus
/// the call's id (memory writes record it, so that a retried call never writes twice) and the
/// untrusted content in the model's context (memory writes record it as their provenance), and
/// where it reports its progress.
fn for_call(
    ctx: &ToolExecutionContext,
    call: &ToolCall,
    (untrusted_input, progress): (Option<UntrustedInput>, ProgressSink),
) -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: Some(call.id.clone()),
        untrusted_input: untrusted_input.or(ctx.untrusted_input),
        changes: NoteChanges::default(),
        progress,
        ..ctx.clone()
    }
}

/// What the model is told: the output, or the registry's error prefixed `error:`. A call that was
/// stopped but settled (a committed write) reports its real result; one whose outcome is unknown
/// says so and how to check.
fn result_text(outcome: &ToolOutcome) -> (bool, String) {
    if outcome.ok {
        (true, outcome.output.clone())
    } else if outcome.error_kind == Some("cancelled") {
        (false, CANCELLED_WHILE.to_owned())
    } else {
        (false, format!("error: {}", outcome.output))
    }
}

/// A short summary of a result: "N results" for search results (a JSON array, or an object with a
/// `results` array), "<note_id>: <message>" for a note write, otherwise the first line; at most
/// about 120 characters.
fn summary_line(text: &str) -> String {
    let mut first = text.lines().next().unwrap_or("").trim().to_owned();
    let items = match serde_json::from_str(&first) {
        Ok(serde_json::Value::Array(items)) => Some(items.len()),
        Ok(serde_json::Value::Object(map)) => {
            // A note write: its id first, so that a short summary always names the note.
            if let (Some(id), Some(message)) = (
                map.get("note_id").and_then(serde_json::Value::as_str),
                map.get("message").and_then(serde_json::Value::as_str),
            ) {
                first = format!("{id}: {message}");
            }
            map.get("results")
                .and_then(serde_json::Value::as_array)
                .map(Vec::len)
        }
        _ => None,
    };
    let first = first.as_str();
    if let Some(items) = items {
        return match items {
            0 => "no results".to_owned(),
            1 => "1 result".to_owned(),
            n => format!("{n} results"),
        };
    }
    let mut end = first.len().min(120);
    while !first.is_char_boundary(end) {
        end -= 1;
    }
    if end < first.len() {
        format!("{}…", &first[..end])
    } else {
        first.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::summary_line;

    #[test]
    fn summaries() {
        let check = |text: &str, expected: &str| assert_eq!(summary_line(text), expected, "{text}");
        check("[]", "no results");
        check(r#"[{"note_id":"note-1","text":"a"}]"#, "1 result");
        check(r#"[{"text":"a"},{"text":"b"},{"text":"c"}]"#, "3 results");
        check(
            "[1, 2]\nnote: the conversation part was skipped",
            "2 results",
        );
        check("[not json", "[not json");
        check(
            r#"{"results":[{"text":"a"},{"text":"b"}],"omitted":3}"#,
            "2 results",
        );
        check(r#"{"results":[]}"#, "no results");
        check(
            r#"{"message":"Saved. A long explanation that would push the id out of a short summary line.","note_id":"note-1","version":"ab"}"#,
            "note-1: Saved. A long explanation that would push the id out of a short summary line.",
        );
        check("exit code 0\nhello", "exit code 0");
        check(&"x".repeat(200), &format!("{}…", "x".repeat(120)));
    }
}
