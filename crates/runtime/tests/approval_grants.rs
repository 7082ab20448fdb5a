//! "Allow for this session": an approval answered with `ApproveForSession` lets later calls of
//! the same tool in the same session run without asking; another tool, or the same tool in
//! another session, still asks.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::sync::Arc;

use common::{Behaviour, Log, TestTool, ctx, log_lines, provider, registry, run_watching, runtime};
use runtime::{ApprovalDecision, PendingApprovals, TurnEvent};
use serde_json::json;
use test_support::{ScriptedLlm, ScriptedReply, ScriptedToolCall};
use types::{ApprovalPolicy, ProviderKind, RuntimeConfig, SafetyTier, SessionId, TurnId};

/// One turn that makes one call of `tool`; approval requests are answered with `answer`.
/// Returns how many approvals were asked for.
async fn turn(
    rt: &runtime::AgentRuntime,
    server: &ScriptedLlm,
    pending: &PendingApprovals,
    (session, turn_id): (&str, &str),
    tool: &str,
    answer: ApprovalDecision,
) -> usize {
    let dir = tempfile::tempdir().unwrap();
    server.push_all([
        ScriptedReply::tool_calls(vec![
            ScriptedToolCall::new(tool, json!({"text": turn_id})).with_id(turn_id),
        ]),
        ScriptedReply::text("ok"),
    ]);
    let c = ctx(dir.path(), "alice", session, turn_id);
    let turn = TurnId::parse(turn_id).unwrap();
    let (outcome, events) = run_watching(rt, &c, "go", |event| {
        if let TurnEvent::ApprovalRequested { call_id, .. } = event {
            assert!(pending.answer(&turn, call_id, answer));
        }
    })
    .await;
    outcome.unwrap();
    events
        .iter()
        .filter(|e| matches!(e, TurnEvent::ApprovalRequested { .. }))
        .count()
}

#[tokio::test]
async fn allow_for_this_session_skips_the_next_prompt_for_that_tool_and_session_only() {
    let log = Log::default();
    let tools = registry(vec![
        TestTool::new("danger", SafetyTier::Privileged, &log, Behaviour::Echo),
        TestTool::new("other", SafetyTier::Privileged, &log, Behaviour::Echo),
    ]);
    let server = ScriptedLlm::start().await;
    let config = RuntimeConfig {
        approval: ApprovalPolicy::Ask,
        ..RuntimeConfig::default()
    };
    let pending = PendingApprovals::default();
    let rt = runtime(provider(&server, ProviderKind::Openai), tools, config)
        .with_approver(Arc::new(pending.clone()));
    let session = ApprovalDecision::ApproveForSession;
    let once = ApprovalDecision::Approve;

    let asked = [
        turn(&rt, &server, &pending, ("s1", "t-1"), "danger", session).await,
        turn(&rt, &server, &pending, ("s1", "t-2"), "danger", once).await,
        turn(&rt, &server, &pending, ("s1", "t-3"), "other", once).await,
        turn(&rt, &server, &pending, ("s2", "t-4"), "danger", once).await,
        turn(&rt, &server, &pending, ("s1", "t-5"), "other", once).await,
    ];
    assert_eq!(asked, [1, 0, 1, 1, 1]);
    assert!(
        rt.grants()
            .allows(&SessionId::parse("s1").unwrap(), "danger")
    );
    assert!(
        !rt.grants()
            .allows(&SessionId::parse("s2").unwrap(), "danger")
    );
    // Every call ran.
    let starts = log_lines(&log)
        .iter()
        .filter(|l| l.starts_with("start"))
        .count();
    assert_eq!(starts, 5, "{:?}", log_lines(&log));
}
