//! How turns end: cancellation mid-stream and mid-tool (leaving a history the next turn sends
//! without errors), provider retries and failures surfacing as `TurnFailed`, and event delivery to
//! slow or stuck consumers.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{
    Behaviour, Log, TestTool, assert_well_formed_openai, ctx, provider, registry, run,
    run_watching, runtime, streamed_text,
};
use runtime::{RuntimeError, TurnEvent, TurnStatus};
use serde_json::{Value, json};
use test_support::{RecordedRequest, ScriptedLlm, ScriptedReply, ScriptedToolCall};
use tokio::sync::mpsc;
use types::{Message, ProviderKind, Role, RuntimeConfig, SafetyTier, SessionId};

fn last_is(events: &[TurnEvent], pred: impl Fn(&TurnEvent) -> bool) -> bool {
    events.last().is_some_and(pred)
}

#[tokio::test]
async fn cancel_mid_stream_keeps_the_partial_text_marked() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    server.push(
        ScriptedReply::text("Once upon a time, in a land far away, lived a crab.")
            .slow(Duration::from_millis(100)),
    );
    let rt = runtime(
        provider(&server, ProviderKind::Openai),
        registry(vec![]),
        RuntimeConfig::default(),
    );
    let c = ctx(dir.path(), "alice", "s", "t1");
    let token = c.cancellation.clone();
    let (outcome, events) = run_watching(&rt, &c, "tell me a story", |event| {
        if matches!(event, TurnEvent::AssistantDelta { .. }) {
            token.cancel();
        }
    })
    .await;
    let outcome = outcome.unwrap();
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    let partial = streamed_text(&events);
    assert!(!partial.is_empty());
    assert_eq!(
        outcome.message,
        format!("{partial}\n\n[reply cut short: the user cancelled the turn]")
    );
    assert!(last_is(&events, |e| matches!(
        e,
        TurnEvent::TurnCancelled { .. }
    )));
    let session = SessionId::parse("s").unwrap();
    assert_eq!(
        rt.history(&session, 10).await.unwrap(),
        vec![
            Message::user("tell me a story"),
            Message::assistant(outcome.message.clone())
        ]
    );

    // The next turn sends the consistent history and completes.
    server.push(ScriptedReply::text("Sorry, here is a shorter one."));
    let (next, _) = run(&rt, &ctx(dir.path(), "alice", "s", "t2"), "shorter please").await;
    assert_eq!(next.unwrap().status, TurnStatus::Completed);
    let sent = server.last_request().unwrap();
    assert_well_formed_openai(&sent);
    let roles: Vec<&str> = sent
        .messages()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
}

/// Tool-use ids and tool-result ids of an Anthropic request, checking each result sits in the
/// message right after its call.
fn anthropic_pairs(request: &RecordedRequest) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut uses, mut results) = (BTreeSet::new(), BTreeSet::new());
    let messages = request.messages();
    for (i, m) in messages.iter().enumerate() {
        for block in m["content"].as_array().map_or(&[][..], Vec::as_slice) {
            if block["type"] == "tool_use" {
                let id = block["id"].as_str().unwrap().to_owned();
                let next: &Value = &messages[i + 1];
                let answered = next["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|b| b["type"] == "tool_result" && b["tool_use_id"] == id.as_str());
                assert!(answered, "tool_use {id} is answered in the next message");
                uses.insert(id);
            }
            if block["type"] == "tool_result" {
                results.insert(block["tool_use_id"].as_str().unwrap().to_owned());
            }
        }
    }
    (uses, results)
}

#[tokio::test]
async fn cancel_mid_tool_gives_every_call_a_result() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let tools = registry(vec![
        TestTool::new("hang", SafetyTier::SideEffecting, &log, Behaviour::Hang),
        TestTool::new("echo", SafetyTier::ReadOnly, &log, Behaviour::Echo),
    ]);
    let server = ScriptedLlm::start().await;
    server.push(ScriptedReply::tool_calls(vec![
        ScriptedToolCall::new("hang", json!({})).with_id("h1"),
        ScriptedToolCall::new("echo", json!({"text": "never"})).with_id("e1"),
    ]));
    let rt = runtime(
        provider(&server, ProviderKind::Anthropic),
        tools,
        RuntimeConfig::default(),
    );
    let c = ctx(dir.path(), "alice", "s", "t1");
    let token = c.cancellation.clone();
    let (outcome, events) = run_watching(&rt, &c, "do things", |event| {
        if matches!(event, TurnEvent::ToolStarted { name, .. } if name == "hang") {
            token.cancel();
        }
    })
    .await;
    let outcome = outcome.unwrap();
    assert_eq!(
        (outcome.status, outcome.tool_rounds),
        (TurnStatus::Cancelled, 1)
    );
    assert_eq!(outcome.message, "[The user cancelled this turn.]");
    assert!(last_is(&events, |e| matches!(
        e,
        TurnEvent::TurnCancelled { .. }
    )));
    let finished: Vec<(&str, bool)> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::ToolFinished { call_id, ok, .. } => Some((call_id.as_str(), *ok)),
            _ => None,
        })
        .collect();
    assert_eq!(finished, [("h1", false), ("e1", false)]);
    assert_eq!(common::log_lines(&log), ["start hang"], "echo never ran");

    let stored = rt
        .history(&SessionId::parse("s").unwrap(), 10)
        .await
        .unwrap();
    let shape: Vec<(Role, Option<&str>)> = stored
        .iter()
        .map(|m| (m.role, m.tool_call_id.as_deref()))
        .collect();
    assert_eq!(
        shape,
        [
            (Role::User, None),
            (Role::Assistant, None),
            (Role::Tool, Some("h1")),
            (Role::Tool, Some("e1")),
            (Role::Assistant, None),
        ]
    );
    assert!(
        stored[2]
            .content
            .as_deref()
            .unwrap()
            .starts_with("cancelled while it ran")
    );
    assert!(
        stored[3]
            .content
            .as_deref()
            .unwrap()
            .starts_with("cancelled before it ran")
    );

    // The next turn (Anthropic format) pairs every tool_use with its tool_result.
    server.push(ScriptedReply::text("Stopped. What next?"));
    let (next, _) = run(&rt, &ctx(dir.path(), "alice", "s", "t2"), "ok, stop").await;
    assert_eq!(next.unwrap().status, TurnStatus::Completed);
    let (uses, results) = anthropic_pairs(&server.last_request().unwrap());
    assert_eq!(uses, BTreeSet::from(["e1".to_owned(), "h1".to_owned()]));
    assert_eq!(uses, results);
}

#[tokio::test]
async fn a_turn_cancelled_before_it_starts_stores_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let rt = runtime(
        provider(&server, ProviderKind::Openai),
        registry(vec![]),
        RuntimeConfig::default(),
    );
    let c = ctx(dir.path(), "alice", "s", "t1");
    c.cancellation.cancel();
    let (outcome, events) = run(&rt, &c, "hello?").await;
    assert_eq!(outcome.unwrap().status, TurnStatus::Cancelled);
    assert_eq!(
        events,
        vec![TurnEvent::TurnCancelled {
            usage: Default::default()
        }]
    );
    assert!(server.requests().is_empty());
    let stored = rt
        .history(&SessionId::parse("s").unwrap(), 10)
        .await
        .unwrap();
    assert_eq!(
        stored,
        vec![
            Message::user("hello?"),
            Message::assistant("[The user cancelled this turn.]")
        ]
    );
}

#[tokio::test]
async fn retries_on_429_and_5xx_then_completes() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    server.push_all([
        ScriptedReply::http_error(503, "overloaded"),
        ScriptedReply::rate_limited(0),
        ScriptedReply::text("third time lucky"),
    ]);
    let rt = runtime(
        provider(&server, ProviderKind::Openai),
        registry(vec![]),
        RuntimeConfig::default(),
    );
    let (outcome, events) = run(&rt, &ctx(dir.path(), "alice", "s", "t"), "hi").await;
    assert_eq!(outcome.unwrap().message, "third time lucky");
    assert_eq!(server.requests().len(), 3);
    assert_eq!(streamed_text(&events), "third time lucky");
    // Each retry is reported before its wait, for the status line ("retrying 2/4").
    let retries: Vec<(u32, u32, &str)> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::ModelRetry {
                attempt,
                max_attempts,
                reason,
                ..
            } => Some((*attempt, *max_attempts, reason.as_str())),
            _ => None,
        })
        .collect();
    // The test provider allows max_retries = 2: three attempts.
    assert_eq!(retries, [(2, 3, "HTTP 503"), (3, 3, "rate limited")]);
}

/// Runs a turn whose model calls fail as scripted; returns the error and the `TurnFailed` reason.
async fn failing(kind: ProviderKind, replies: Vec<ScriptedReply>) -> (RuntimeError, String) {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    server.push_all(replies);
    let rt = runtime(
        provider(&server, kind),
        registry(vec![]),
        RuntimeConfig::default(),
    );
    let c = ctx(dir.path(), "alice", "s", "t");
    let (outcome, events) = run(&rt, &c, "hi").await;
    let reason = match events.last() {
        Some(TurnEvent::TurnFailed { reason }) => reason.clone(),
        other => panic!("expected TurnFailed, got {other:?}"),
    };
    (outcome.unwrap_err(), reason)
}

#[tokio::test]
async fn a_401_fails_the_turn_at_once_with_the_providers_message() {
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let (error, reason) = failing(
            kind,
            vec![ScriptedReply::http_error(401, "invalid api key")],
        )
        .await;
        assert!(!error.is_retryable());
        assert!(
            reason.contains("authentication failed (HTTP 401)"),
            "{reason}"
        );
        assert!(reason.contains("invalid api key"), "{reason}");
        assert!(reason.contains("after 1 attempt:"), "{reason}");
    }
}

#[tokio::test]
async fn persistent_server_errors_fail_the_turn_after_the_retries() {
    let (error, reason) = failing(
        ProviderKind::Openai,
        vec![ScriptedReply::http_error(500, "down"); 3],
    )
    .await;
    assert!(error.is_retryable());
    assert!(
        reason.contains("the provider failed (HTTP 500)"),
        "{reason}"
    );
    // The test provider allows max_retries = 2: three requests in all, and the error says so.
    assert!(
        reason.starts_with("the model call failed after 3 attempts:"),
        "{reason}"
    );
}

#[tokio::test]
async fn a_stream_cut_mid_reply_fails_the_turn_and_keeps_the_partial_text_marked() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    server.push(ScriptedReply::text("The answer is forty-two, because").cut_after(4));
    let rt = runtime(
        provider(&server, ProviderKind::Openai),
        registry(vec![]),
        RuntimeConfig::default(),
    );
    let (outcome, events) = run(&rt, &ctx(dir.path(), "alice", "s", "t"), "why?").await;
    assert!(matches!(
        outcome,
        Err(RuntimeError::Provider { attempts: 1, .. })
    ));
    assert!(last_is(
        &events,
        |e| matches!(e, TurnEvent::TurnFailed { reason } if reason.contains("cut off"))
    ));
    let partial = streamed_text(&events);
    assert!(!partial.is_empty());
    let stored = rt
        .history(&SessionId::parse("s").unwrap(), 10)
        .await
        .unwrap();
    assert_eq!(
        stored.last().unwrap().content.as_deref(),
        Some(format!("{partial}\n\n[reply cut off: the connection to the model failed]").as_str())
    );
}

#[tokio::test]
async fn a_slow_consumer_gets_every_event_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let server = ScriptedLlm::start().await;
    server.push_all([
        ScriptedReply::text_and_tool_calls(
            "Let me check. ",
            vec![ScriptedToolCall::new("echo", json!({"text": "x"}))],
        ),
        ScriptedReply::text("All checked, and here is a long enough answer to stream in pieces."),
    ]);
    let rt = runtime(
        provider(&server, ProviderKind::Openai),
        registry(vec![TestTool::new(
            "echo",
            SafetyTier::ReadOnly,
            &log,
            Behaviour::Echo,
        )]),
        RuntimeConfig::default(),
    );
    let c = ctx(dir.path(), "alice", "s", "t");
    let (tx, mut rx) = mpsc::channel(1);
    let turn = async {
        let outcome = rt.run_turn(&c, "check", &tx).await;
        drop(tx);
        outcome
    };
    let slow = async {
        let mut events = Vec::new();
        while let Some(event) = rx.recv().await {
            events.push(event);
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
        }
        events
    };
    let (outcome, events) = tokio::join!(turn, slow);
    let outcome = outcome.unwrap();
    assert_eq!(
        streamed_text(&events),
        format!("Let me check. {}", outcome.message)
    );
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::AssistantDelta { .. } => None,
            TurnEvent::ToolStarted { .. } => Some("started"),
            TurnEvent::ToolFinished { .. } => Some("finished"),
            TurnEvent::TurnCompleted { .. } => Some("completed"),
            _ => Some("other"),
        })
        .collect();
    assert_eq!(kinds, ["started", "finished", "completed"]);
}

#[tokio::test]
async fn a_consumer_that_stops_reading_cannot_hold_a_cancelled_turn() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    server.push(ScriptedReply::text("one two three four five six"));
    let rt = runtime(
        provider(&server, ProviderKind::Openai),
        registry(vec![]),
        RuntimeConfig::default(),
    );
    let c = ctx(dir.path(), "alice", "s", "t");
    let (tx, mut rx) = mpsc::channel(1);
    let token = c.cancellation.clone();
    let turn = rt.run_turn(&c, "count", &tx);
    // Nobody reads; once the model has been asked, the user cancels.
    let cancel = async {
        while server.requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        token.cancel();
    };
    let (outcome, ()) = tokio::join!(turn, cancel);
    let outcome = outcome.unwrap();
    drop(tx);
    let mut events = Vec::new();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    // Whether the reply finished before the cancel or not, the last event matches the outcome and
    // nothing was lost on the way.
    match outcome.status {
        TurnStatus::Completed => {
            assert!(last_is(&events, |e| matches!(
                e,
                TurnEvent::TurnCompleted { .. }
            )));
            assert_eq!(streamed_text(&events), outcome.message);
        }
        TurnStatus::Cancelled => {
            assert!(last_is(&events, |e| matches!(
                e,
                TurnEvent::TurnCancelled { .. }
            )));
        }
        TurnStatus::ToolRoundLimit => panic!("no tools here"),
    }
}
