//! Replies over real HTTP from the scripted server, in both wire formats, streamed and not.

use crate::common;

use common::{KINDS, ask, provider, stream_events};
use provider::{FinishReason, ProviderError, StreamEvent, collect_response};
use serde_json::json;
use test_support::{ScriptedLlm, ScriptedReply, ScriptedToolCall};
use types::{Message, ToolCall, Usage};

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

#[tokio::test]
async fn text_streams_in_deltas_and_assembles_with_usage() {
    for kind in KINDS {
        let server = ScriptedLlm::start().await;
        server.push(ScriptedReply::text("Hello there, how can I help?").with_usage(42, 7));
        let p = provider(&server.config(kind));

        let events = stream_events(p.as_ref(), &ask("hi")).await.unwrap();
        let deltas = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::TextDelta(_)))
            .count();
        assert!(
            deltas > 1,
            "{kind:?}: text should arrive in several deltas: {events:?}"
        );
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Done {
                finish_reason: FinishReason::Stop
            }),
            "{kind:?}"
        );

        server.push(ScriptedReply::text("Hello there, how can I help?").with_usage(42, 7));
        let reply = collect_response(p.stream(&ask("hi")).await.unwrap())
            .await
            .unwrap();
        assert_eq!(
            reply.message,
            Message::assistant("Hello there, how can I help?"),
            "{kind:?}"
        );
        assert_eq!(
            reply.usage,
            Some(Usage {
                prompt_tokens: 42,
                completion_tokens: 7
            }),
            "{kind:?}"
        );
        assert_eq!(reply.finish_reason, FinishReason::Stop, "{kind:?}");
        assert!(server.requests().iter().all(|r| r.is_stream()), "{kind:?}");
    }
}

#[tokio::test]
async fn fragmented_tool_call_arguments_assemble() {
    for kind in KINDS {
        let server = ScriptedLlm::start().await;
        let args = json!({"path": "notes/today.md", "content": "line one\nline two"});
        server.push(ScriptedReply::tool_call("file_write", args.clone()));
        let p = provider(&server.config(kind));

        let events = stream_events(p.as_ref(), &ask("write it")).await.unwrap();
        let fragments = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolCallArgsDelta { .. }))
            .count();
        assert!(
            fragments > 1,
            "{kind:?}: arguments should arrive in fragments: {events:?}"
        );

        let reply = provider::ResponseBuilder::default();
        let reply = events.into_iter().fold(reply, |mut b, e| {
            b.push(e);
            b
        });
        let reply = reply.finish().unwrap();
        assert_eq!(
            reply.message,
            Message::assistant_tool_calls(
                None,
                vec![call("call_1", "file_write", &args.to_string())]
            ),
            "{kind:?}"
        );
        assert_eq!(reply.finish_reason, FinishReason::ToolCalls, "{kind:?}");
    }
}

#[tokio::test]
async fn several_tool_calls_with_text() {
    for kind in KINDS {
        let server = ScriptedLlm::start().await;
        server.push(ScriptedReply::text_and_tool_calls(
            "Let me check both.",
            vec![
                ScriptedToolCall::new("memory_search", json!({"query": "birthday"})),
                ScriptedToolCall::new("file_read", json!({"path": "a.txt"})).with_id("mine"),
                ScriptedToolCall::new("clock", json!({})),
            ],
        ));
        let p = provider(&server.config(kind));
        let reply = collect_response(p.stream(&ask("go")).await.unwrap())
            .await
            .unwrap();
        assert_eq!(
            reply.message,
            Message::assistant_tool_calls(
                Some("Let me check both.".into()),
                vec![
                    call("call_1", "memory_search", r#"{"query":"birthday"}"#),
                    call("mine", "file_read", r#"{"path":"a.txt"}"#),
                    call("call_2", "clock", "{}"),
                ]
            ),
            "{kind:?}"
        );
        assert!(reply.usage.is_some(), "{kind:?}: usage is reported");
    }
}

#[tokio::test]
async fn complete_uses_a_non_streaming_request() {
    for kind in KINDS {
        let server = ScriptedLlm::start().await;
        server.push(
            ScriptedReply::text_and_tool_calls(
                "On it.",
                vec![ScriptedToolCall::new(
                    "memory_save",
                    json!({"text": "likes tea"}),
                )],
            )
            .with_usage(10, 3),
        );
        server.push(ScriptedReply::text("Plain answer."));
        let p = provider(&server.config(kind));

        let reply = p.complete(&ask("remember")).await.unwrap();
        assert_eq!(
            reply.message,
            Message::assistant_tool_calls(
                Some("On it.".into()),
                vec![call("call_1", "memory_save", r#"{"text":"likes tea"}"#)]
            ),
            "{kind:?}"
        );
        assert_eq!(
            reply.usage,
            Some(Usage {
                prompt_tokens: 10,
                completion_tokens: 3
            }),
            "{kind:?}"
        );
        assert_eq!(reply.finish_reason, FinishReason::ToolCalls, "{kind:?}");

        let reply = p.complete(&ask("again")).await.unwrap();
        assert_eq!(
            reply.message,
            Message::assistant("Plain answer."),
            "{kind:?}"
        );
        assert_eq!(reply.finish_reason, FinishReason::Stop, "{kind:?}");
        assert!(server.requests().iter().all(|r| !r.is_stream()), "{kind:?}");
    }
}

#[tokio::test]
async fn malformed_tool_call_json_passes_through_raw() {
    let raw = r#"{"path": "a.txt", "content": "unterminated"#;
    for kind in KINDS {
        let server = ScriptedLlm::start().await;
        server.push(ScriptedReply::malformed_tool_call("file_write", raw));
        server.push(ScriptedReply::malformed_tool_call("file_write", raw));
        let p = provider(&server.config(kind));
        let expected = Message::assistant_tool_calls(None, vec![call("call_1", "file_write", raw)]);

        let streamed = collect_response(p.stream(&ask("go")).await.unwrap())
            .await
            .unwrap();
        assert_eq!(streamed.message, expected, "{kind:?} streamed");
        let completed = p.complete(&ask("go")).await.unwrap();
        assert_eq!(
            completed.message,
            Message::assistant_tool_calls(None, vec![call("call_2", "file_write", raw)]),
            "{kind:?} complete"
        );
    }
}

#[tokio::test]
async fn cut_stream_is_an_error_and_is_not_retried() {
    for kind in KINDS {
        let server = ScriptedLlm::start().await;
        server.push(ScriptedReply::text("This reply will never finish properly.").cut_after(4));
        server.push(ScriptedReply::text("A retry must not see this."));
        let p = provider(&server.config(kind));

        let result = collect_response(p.stream(&ask("hi")).await.unwrap()).await;
        let err = result.unwrap_err();
        assert!(
            matches!(err, ProviderError::Interrupted { .. }),
            "{kind:?}: {err:?}"
        );
        assert!(err.is_retryable(), "{kind:?}");
        assert_eq!(
            server.requests().len(),
            1,
            "{kind:?}: no retry once stream data was delivered"
        );
        assert_eq!(server.remaining(), 1, "{kind:?}");
    }
}

#[tokio::test]
async fn cut_json_body_is_retried_before_anything_was_delivered() {
    for kind in KINDS {
        let server = ScriptedLlm::start().await;
        server.push(ScriptedReply::text("partial").cut_after(1));
        server.push(ScriptedReply::text("whole"));
        let p = provider(&server.config(kind));
        let reply = p.complete(&ask("hi")).await.unwrap();
        assert_eq!(reply.message, Message::assistant("whole"), "{kind:?}");
        assert_eq!(server.requests().len(), 2, "{kind:?}");
    }
}

#[tokio::test]
async fn slow_stream_completes_within_the_idle_timeout() {
    for kind in KINDS {
        let server = ScriptedLlm::start().await;
        server.push(
            ScriptedReply::text("slow but steady").slow(std::time::Duration::from_millis(20)),
        );
        let p = provider(&server.config(kind));
        let reply = collect_response(p.stream(&ask("hi")).await.unwrap())
            .await
            .unwrap();
        assert_eq!(
            reply.message,
            Message::assistant("slow but steady"),
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn silent_stream_hits_the_idle_timeout() {
    for kind in KINDS {
        let server = ScriptedLlm::start().await;
        server.push(ScriptedReply::text("too slow").slow(std::time::Duration::from_secs(3)));
        let options = provider::ProviderOptions {
            stream_idle_timeout: Some(std::time::Duration::from_millis(100)),
            ..common::fast()
        };
        let p = provider::from_config_with(&server.config(kind), options).unwrap();
        // Headers arrive at once; the first chunk is 3 s away.
        let err = collect_response(p.stream(&ask("hi")).await.unwrap())
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                ProviderError::Timeout {
                    phase: provider::TimeoutPhase::StreamIdle,
                    ..
                }
            ),
            "{kind:?}: {err:?}"
        );
        assert_eq!(server.requests().len(), 1, "{kind:?}");
    }
}
