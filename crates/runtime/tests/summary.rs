//! The rolling summary with a small context window: it triggers, is stored with its epoch and
//! sequence number, is used by the following requests, never swallows the newest message, and
//! falls back to an extractive summary when the model cannot summarise.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::{ctx, open_store, provider, registry, run};
use memory::{SummaryState, UsageScope};
use runtime::{AgentRuntime, ModelLimits, TurnStatus};
use test_support::{RecordedRequest, ScriptedLlm, ScriptedReply};
use types::{ProviderKind, RuntimeConfig, SessionId};

const WORDS: [&str; 6] = ["one", "two", "three", "four", "five", "six"];

/// A user message of about 300 tokens that starts with "Topic <word>:".
fn topic(word: &str) -> String {
    let mut text = format!("Topic {word}: ");
    while text.len() < 1200 {
        text.push_str(&format!("{word} is an interesting subject. "));
    }
    text
}

fn small_window() -> ModelLimits {
    ModelLimits {
        context_window: 2000,
        max_output_tokens: 200,
    }
}

fn streamed(requests: &[RecordedRequest]) -> Vec<&RecordedRequest> {
    requests.iter().filter(|r| r.is_stream()).collect()
}

fn summary_calls(requests: &[RecordedRequest]) -> Vec<&RecordedRequest> {
    requests.iter().filter(|r| !r.is_stream()).collect()
}

#[tokio::test]
async fn the_summary_triggers_is_stored_and_is_used_by_later_requests() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir.path().join("m.db")).await;
    // Summary calls are non-streaming; chat calls stream.
    let server = ScriptedLlm::with_responder(|req| {
        if req.is_stream() {
            ScriptedReply::text("ok").with_usage(10, 1)
        } else {
            ScriptedReply::text("SUMMARY-1: the user talked about topics one to four.")
                .with_usage(700, 30)
        }
    })
    .await;
    let rt = AgentRuntime::new(
        provider(&server, ProviderKind::Openai),
        registry(vec![]),
        RuntimeConfig::default(),
        small_window(),
    )
    .with_memory(store.clone());
    let session = SessionId::parse("s").unwrap();
    for (i, word) in WORDS.iter().take(4).enumerate() {
        let (outcome, _) = run(
            &rt,
            &ctx(dir.path(), "alice", "s", &format!("t{i}")),
            &topic(word),
        )
        .await;
        assert_eq!(outcome.unwrap().status, TurnStatus::Completed);
    }
    assert!(
        summary_calls(&server.requests()).is_empty(),
        "no summary while the context fits"
    );
    assert_eq!(store.sessions().summary(&session).await.unwrap(), None);

    // The fifth message pushes the context past 75 % of the window.
    run(&rt, &ctx(dir.path(), "alice", "s", "t4"), &topic("five"))
        .await
        .0
        .unwrap();
    let requests = server.requests();
    let calls = summary_calls(&requests);
    assert_eq!(calls.len(), 1);
    let input = calls[0].last_user_text().unwrap();
    for word in ["one", "two", "three", "four"] {
        assert!(
            input.contains(&format!("User: Topic {word}:")),
            "{word} summarised"
        );
    }
    assert!(
        !input.contains("Topic five"),
        "the newest message is not summarised"
    );
    assert_eq!(
        store.sessions().summary(&session).await.unwrap(),
        Some(SummaryState {
            epoch: 1,
            summary: "SUMMARY-1: the user talked about topics one to four.".into(),
            upto_seq: 8,
        })
    );
    let chat = streamed(&requests);
    // The summary call's tokens count in the session's usage with the chat calls'.
    let used = store
        .usage()
        .usage_by_model(
            &types::UserId::parse("alice").unwrap(),
            UsageScope::Session(&session),
        )
        .await
        .unwrap();
    let chat_calls = u64::try_from(chat.len()).unwrap();
    assert_eq!(used.len(), 1, "{used:?}");
    assert_eq!(
        (used[0].usage.prompt_tokens, used[0].usage.completion_tokens),
        (10 * chat_calls + 700, chat_calls + 30),
        "{used:?}"
    );
    let fifth = chat.last().unwrap();
    assert!(fifth.system_prompt().unwrap().contains("SUMMARY-1"));
    assert_eq!(fifth.last_user_text(), Some(topic("five")));
    assert!(
        fifth
            .messages()
            .iter()
            .all(|m| !m.to_string().contains("Topic one"))
    );

    // The next turn uses the stored summary plus the events after it.
    run(&rt, &ctx(dir.path(), "alice", "s", "t5"), &topic("six"))
        .await
        .0
        .unwrap();
    let requests = server.requests();
    assert_eq!(summary_calls(&requests).len(), 1, "no second summary yet");
    let sixth = *streamed(&requests).last().unwrap();
    assert!(sixth.system_prompt().unwrap().contains("SUMMARY-1"));
    let users: Vec<String> = sixth
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(users, [topic("five"), topic("six")]);
    common::assert_well_formed_openai(sixth);
}

#[tokio::test]
async fn a_failed_summary_call_falls_back_to_an_extractive_summary() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::with_responder(|req| {
        if req.is_stream() {
            ScriptedReply::text("ok")
        } else {
            ScriptedReply::http_error(400, "this model cannot summarise")
        }
    })
    .await;
    // No memory store: the ephemeral history summarises the same way.
    let rt = AgentRuntime::new(
        provider(&server, ProviderKind::Anthropic),
        registry(vec![]),
        RuntimeConfig::default(),
        small_window(),
    );
    for (i, word) in WORDS.iter().take(5).enumerate() {
        let (outcome, _) = run(
            &rt,
            &ctx(dir.path(), "alice", "s", &format!("t{i}")),
            &topic(word),
        )
        .await;
        assert_eq!(outcome.unwrap().status, TurnStatus::Completed);
    }
    let requests = server.requests();
    assert_eq!(
        summary_calls(&requests).len(),
        1,
        "the summary was attempted once"
    );
    let fifth = *streamed(&requests).last().unwrap();
    let system = fifth.system_prompt().unwrap();
    assert!(system.contains("Earlier messages, abridged:"), "{system}");
    for word in ["one", "two", "three", "four"] {
        assert!(
            system.contains(&format!("User: Topic {word}:")),
            "{word} in {system}"
        );
    }
    assert!(!system.contains("Topic five"));
    assert_eq!(fifth.last_user_text(), Some(topic("five")));
}
