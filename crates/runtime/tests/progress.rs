//! A running call's progress becomes `tool_progress` events between its `tool_started` and
//! `tool_finished`, at most one per call every 100 ms (a tool that reports in a tight loop does
//! not flood the turn's events), and a call made outside a turn reports to nobody.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::time::Duration;

use common::{ctx, provider, registry, run, runtime};
use runtime::TurnEvent;
use serde_json::json;
use test_support::{ScriptedLlm, ScriptedReply};
use types::{ProviderKind, RuntimeConfig, SafetyTier, ToolProgress};

/// Reports 1..=5 of 5 a fifth of a second apart, and right after the fifth 1000 more at once.
#[derive(Debug)]
struct Slow;

#[async_trait::async_trait]
impl tools::Tool for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    fn description(&self) -> &str {
        "Takes a while and says how far it got."
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    fn timeout(&self) -> Duration {
        Duration::from_secs(10)
    }
    async fn execute(
        &self,
        _: &serde_json::Value,
        ctx: &types::ToolExecutionContext,
    ) -> Result<String, tools::ToolError> {
        for step in 1..=5 {
            ctx.progress.report(ToolProgress {
                progress: f64::from(step),
                total: Some(5.0),
                message: Some(format!("step {step}")),
            });
            if step < 5 {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        for n in 0..1000 {
            ctx.progress.report(ToolProgress {
                progress: 5.0 + f64::from(n),
                ..ToolProgress::default()
            });
        }
        Ok("done".into())
    }
}

#[tokio::test]
async fn progress_of_a_running_call_is_reported_between_its_start_and_end() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::with_responder(|req| {
        if req.messages().iter().any(|m| m["role"] == "tool") {
            ScriptedReply::text("finished")
        } else {
            ScriptedReply::tool_call("slow", json!({}))
        }
    })
    .await;
    let rt = runtime(
        provider(&server, ProviderKind::Openai),
        registry(vec![std::sync::Arc::new(Slow)]),
        RuntimeConfig::default(),
    );
    let (outcome, events) = run(&rt, &ctx(dir.path(), "alice", "s1", "t1"), "go").await;
    outcome.unwrap();
    let started = events
        .iter()
        .position(|e| matches!(e, TurnEvent::ToolStarted { .. }))
        .unwrap();
    let finished = events
        .iter()
        .position(|e| matches!(e, TurnEvent::ToolFinished { .. }))
        .unwrap();
    let progress: Vec<(usize, f64, Option<String>)> = events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            TurnEvent::ToolProgress {
                name,
                progress,
                message,
                ..
            } => {
                assert_eq!(name, "slow");
                Some((i, *progress, message.clone()))
            }
            _ => None,
        })
        .collect();
    assert!(
        progress.iter().all(|(i, ..)| *i > started && *i < finished),
        "{events:?}"
    );
    let steps: Vec<f64> = progress.iter().map(|(_, p, _)| *p).collect();
    // Each of the five spaced reports; of the burst, nothing within 100 ms of the last one.
    assert_eq!(steps, vec![1.0, 2.0, 3.0, 4.0, 5.0], "{events:?}");
    assert_eq!(progress[0].2.as_deref(), Some("step 1"));
}
