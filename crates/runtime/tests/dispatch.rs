//! Tool dispatch through the turn loop: read-only parallelism, one-at-a-time for the rest, results
//! in call order, malformed calls recovered within the turn, the tool-round limit, approvals.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::sync::Arc;

use common::{
    Behaviour, Log, TestTool, ctx, log_lines, provider, registry, run, run_watching, runtime,
    tool_result,
};
use runtime::{ApprovalDecision, PendingApprovals, TurnEvent, TurnStatus};
use serde_json::json;
use test_support::{ScriptedLlm, ScriptedReply, ScriptedToolCall};
use types::{
    ApprovalPolicy, Message, ProviderKind, Role, RuntimeConfig, SafetyTier, SessionId, TurnId,
};

fn call(id: &str, name: &str, text: &str) -> ScriptedToolCall {
    ScriptedToolCall::new(name, json!({"text": text})).with_id(id)
}

#[tokio::test]
async fn consecutive_read_only_calls_overlap_and_the_rest_run_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    // Each reader waits at a barrier of two: it can only finish if its peer runs at the same time.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let tools = registry(vec![
        TestTool::new(
            "read_a",
            SafetyTier::ReadOnly,
            &log,
            Behaviour::Barrier(barrier.clone()),
        ),
        TestTool::new(
            "read_b",
            SafetyTier::ReadOnly,
            &log,
            Behaviour::Barrier(barrier),
        ),
        TestTool::new("write_c", SafetyTier::SideEffecting, &log, Behaviour::Steps),
        TestTool::new("write_d", SafetyTier::SideEffecting, &log, Behaviour::Steps),
    ]);
    let server = ScriptedLlm::start().await;
    server.push_all([
        ScriptedReply::tool_calls(vec![
            call("1", "read_a", "A"),
            call("2", "read_b", "B"),
            call("3", "write_c", "C"),
            call("4", "write_d", "D"),
        ]),
        ScriptedReply::text("all done"),
    ]);
    let rt = runtime(
        provider(&server, ProviderKind::Openai),
        tools,
        RuntimeConfig::default(),
    );
    let c = ctx(dir.path(), "alice", "s", "t");
    let (outcome, events) = run(&rt, &c, "go").await;
    assert_eq!(outcome.unwrap().tool_rounds, 1);

    let lines = log_lines(&log);
    assert_eq!(
        &lines[..2].iter().filter(|l| l.starts_with("start")).count(),
        &2,
        "{lines:?}"
    );
    assert_eq!(
        &lines[4..],
        [
            "start write_c",
            "end write_c",
            "start write_d",
            "end write_d"
        ]
    );

    // Results reach the model in call order, each with its own output.
    let sent = server.last_request().unwrap();
    for (id, text) in [("1", "A"), ("2", "B"), ("3", "C"), ("4", "D")] {
        assert_eq!(tool_result(&sent, id).as_deref(), Some(text));
    }
    let stored = rt
        .history(&SessionId::parse("s").unwrap(), 50)
        .await
        .unwrap();
    let ids: Vec<&str> = stored
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(ids, ["1", "2", "3", "4"]);
    let finished: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::ToolFinished {
                call_id, ok: true, ..
            } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, ["1", "2", "3", "4"]);
}

#[tokio::test]
async fn malformed_calls_come_back_as_errors_and_the_model_recovers_in_the_same_turn() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let tools = registry(vec![TestTool::new(
        "echo",
        SafetyTier::ReadOnly,
        &log,
        Behaviour::Echo,
    )]);
    let server = ScriptedLlm::start().await;
    server.push_all([
        ScriptedReply::tool_calls(vec![
            ScriptedToolCall::raw("echo", "{\"text\": ").with_id("bad_json"),
        ]),
        ScriptedReply::tool_calls(vec![
            ScriptedToolCall::new("nope", json!({})).with_id("unknown"),
        ]),
        ScriptedReply::tool_calls(vec![
            ScriptedToolCall::new("echo", json!({"txt": 1})).with_id("schema"),
        ]),
        ScriptedReply::tool_calls(vec![call("good", "echo", "fixed")]),
        ScriptedReply::text("recovered"),
    ]);
    let rt = runtime(
        provider(&server, ProviderKind::Openai),
        tools,
        RuntimeConfig::default(),
    );
    let (outcome, events) = run(&rt, &ctx(dir.path(), "alice", "s", "t"), "try").await;
    let outcome = outcome.unwrap();
    assert_eq!(
        (outcome.status, outcome.tool_rounds),
        (TurnStatus::Completed, 4)
    );
    assert_eq!(outcome.message, "recovered");

    let requests = server.requests();
    let check = |i: usize, id: &str, expected_start: &str| {
        let result = tool_result(&requests[i], id).unwrap();
        assert!(result.starts_with(expected_start), "{id}: {result}");
    };
    check(1, "bad_json", "error: arguments are not valid JSON");
    check(
        2,
        "unknown",
        "error: unknown tool `nope`; available tools: echo",
    );
    check(3, "schema", "error: ");
    check(4, "good", "fixed");
    for request in &requests {
        common::assert_well_formed_openai(request);
    }
    let oks: Vec<bool> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::ToolFinished { ok, .. } => Some(*ok),
            _ => None,
        })
        .collect();
    assert_eq!(oks, [false, false, false, true]);
    // Only the valid call reached the tool.
    assert_eq!(log_lines(&log), ["start echo", "end echo"]);
}

#[tokio::test]
async fn the_tool_round_limit_ends_the_turn_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let tools = registry(vec![TestTool::new(
        "echo",
        SafetyTier::ReadOnly,
        &log,
        Behaviour::Echo,
    )]);
    let server =
        ScriptedLlm::with_responder(|_| ScriptedReply::tool_call("echo", json!({"text": "again"})))
            .await;
    let config = RuntimeConfig {
        max_tool_rounds: 3,
        ..RuntimeConfig::default()
    };
    let rt = runtime(provider(&server, ProviderKind::Anthropic), tools, config);
    let (outcome, events) = run(&rt, &ctx(dir.path(), "alice", "s", "t"), "loop").await;
    let outcome = outcome.unwrap();
    assert_eq!(
        (outcome.status, outcome.tool_rounds),
        (TurnStatus::ToolRoundLimit, 3)
    );
    assert!(
        outcome.message.contains("runtime.max_tool_rounds"),
        "{}",
        outcome.message
    );
    assert_eq!(server.requests().len(), 3);
    assert_eq!(log_lines(&log).len(), 6);
    assert_eq!(
        events.last(),
        Some(&TurnEvent::TurnCompleted {
            message: outcome.message.clone(),
            usage: outcome.usage
        })
    );
    let stored = rt
        .history(&SessionId::parse("s").unwrap(), 50)
        .await
        .unwrap();
    assert_eq!(stored.last(), Some(&Message::assistant(outcome.message)));
}

/// Runs one privileged call under `policy`, answering approval requests with `answer`; returns the
/// result text the model saw, whether the tool ran, and the events.
async fn privileged(
    policy: ApprovalPolicy,
    answer: Option<ApprovalDecision>,
) -> (String, bool, Vec<TurnEvent>) {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let tools = registry(vec![TestTool::new(
        "danger",
        SafetyTier::Privileged,
        &log,
        Behaviour::Echo,
    )]);
    let server = ScriptedLlm::start().await;
    server.push_all([
        ScriptedReply::tool_calls(vec![call("p1", "danger", "boom")]),
        ScriptedReply::text("ok"),
    ]);
    let config = RuntimeConfig {
        approval: policy,
        ..RuntimeConfig::default()
    };
    let pending = PendingApprovals::default();
    let mut rt = runtime(provider(&server, ProviderKind::Openai), tools, config);
    if answer.is_some() {
        rt = rt.with_approver(Arc::new(pending.clone()));
    }
    let c = ctx(dir.path(), "alice", "s", "t-approve");
    let (outcome, events) = run_watching(&rt, &c, "do it", |event| {
        if let (TurnEvent::ApprovalRequested { call_id, name, .. }, Some(decision)) =
            (event, answer)
        {
            assert_eq!(name, "danger");
            assert!(pending.answer(&TurnId::parse("t-approve").unwrap(), call_id, decision));
        }
    })
    .await;
    outcome.unwrap();
    assert_eq!(pending.waiting(), 0);
    let result = tool_result(&server.last_request().unwrap(), "p1").unwrap();
    let ran = !log_lines(&log).is_empty();
    (result, ran, events)
}

fn asked(events: &[TurnEvent]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, TurnEvent::ApprovalRequested { .. }))
}

#[tokio::test]
async fn approval_allow_runs_privileged_tools() {
    let (result, ran, events) = privileged(ApprovalPolicy::Allow, None).await;
    assert_eq!(
        (result.as_str(), ran, asked(&events)),
        ("boom", true, false)
    );
}

#[tokio::test]
async fn approval_deny_refuses_without_asking() {
    let (result, ran, events) = privileged(ApprovalPolicy::Deny, None).await;
    assert!(result.contains("runtime.approval = \"deny\""), "{result}");
    assert_eq!((ran, asked(&events)), (false, false));
}

#[tokio::test]
async fn approval_ask_runs_when_the_user_approves() {
    let (result, ran, events) =
        privileged(ApprovalPolicy::Ask, Some(ApprovalDecision::Approve)).await;
    assert_eq!((result.as_str(), ran, asked(&events)), ("boom", true, true));
    // The request comes before the call starts.
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::ApprovalRequested { .. } => Some("asked"),
            TurnEvent::ToolStarted { .. } => Some("started"),
            TurnEvent::ToolFinished { .. } => Some("finished"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["asked", "started", "finished"]);
}

#[tokio::test]
async fn approval_ask_declined_tells_the_model_the_user_declined() {
    let (result, ran, events) =
        privileged(ApprovalPolicy::Ask, Some(ApprovalDecision::Decline)).await;
    assert!(result.contains("the user declined"), "{result}");
    assert_eq!((ran, asked(&events)), (false, true));
}

#[tokio::test]
async fn approval_ask_without_an_approver_refuses() {
    let (result, ran, _) = privileged(ApprovalPolicy::Ask, None).await;
    assert!(
        result.contains("no one can answer approval requests"),
        "{result}"
    );
    assert!(!ran);
}

#[tokio::test]
async fn each_call_gets_the_turn_context_unchanged() {
    // Two concurrent turns of different users through one runtime: every tool call sees its own
    // turn's user and session (no shared mutable identity, review finding F1).
    #[derive(Debug)]
    struct WhoAmI;
    #[async_trait::async_trait]
    impl tools::Tool for WhoAmI {
        fn name(&self) -> &str {
            "whoami"
        }
        fn description(&self) -> &str {
            "Says who is calling."
        }
        fn parameters(&self) -> serde_json::Value {
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        }
        fn safety_tier(&self) -> SafetyTier {
            SafetyTier::ReadOnly
        }
        fn timeout(&self) -> std::time::Duration {
            std::time::Duration::from_secs(5)
        }
        async fn execute(
            &self,
            _: &serde_json::Value,
            ctx: &types::ToolExecutionContext,
        ) -> Result<String, tools::ToolError> {
            tokio::task::yield_now().await;
            Ok(format!(
                "{} {} {}",
                ctx.user_id, ctx.session_id, ctx.turn_id
            ))
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::with_responder(|req| {
        if req.messages().iter().any(|m| m["role"] == "tool") {
            ScriptedReply::text("done")
        } else {
            ScriptedReply::tool_call("whoami", json!({}))
        }
    })
    .await;
    let rt = runtime(
        provider(&server, ProviderKind::Openai),
        registry(vec![Arc::new(WhoAmI)]),
        RuntimeConfig::default(),
    );
    let alice = ctx(dir.path(), "alice", "sa", "ta");
    let bob = ctx(dir.path(), "bob", "sb", "tb");
    let (a, b) = tokio::join!(run(&rt, &alice, "who?"), run(&rt, &bob, "who?"));
    a.0.unwrap();
    b.0.unwrap();
    for (session, expected) in [("sa", "alice sa ta"), ("sb", "bob sb tb")] {
        let stored = rt
            .history(&SessionId::parse(session).unwrap(), 10)
            .await
            .unwrap();
        let result = stored.iter().find(|m| m.role == Role::Tool).unwrap();
        assert_eq!(result.content.as_deref(), Some(expected));
    }
}
