//! One streamed model reply: deltas forwarded as they arrive, the provider's retries reported as
//! [`TurnEvent::ModelRetry`] while the request is being made, cancellation honoured at every await.

use futures::StreamExt;
use provider::{
    ChatRequest, ChatResponse, Provider, ProviderError, ResponseBuilder, RetryNotice, StreamEvent,
};
use types::CancellationToken;

use crate::events::Emitter;
use types::TurnEvent;

/// How a model call ended.
#[derive(Debug)]
pub(crate) enum Reply {
    Complete(ChatResponse),
    /// Cancelled; `partial` is the text streamed before.
    Cancelled {
        partial: String,
    },
    /// The call failed; `partial` is the text streamed before the failure, `attempts` the
    /// requests made.
    Failed {
        error: ProviderError,
        partial: String,
        attempts: u32,
    },
}

pub(crate) async fn stream_reply(
    provider: &dyn Provider,
    request: &ChatRequest,
    emitter: &mut Emitter<'_>,
    cancel: &CancellationToken,
) -> Reply {
    let (retry_tx, mut retries) = tokio::sync::mpsc::unbounded_channel::<RetryNotice>();
    let on_retry = move |notice: RetryNotice| {
        // The receiver lives as long as the request: a send cannot fail while it matters.
        let _ = retry_tx.send(notice);
    };
    let start = provider.stream_reporting(request, &on_retry);
    tokio::pin!(start);
    let mut attempts = 1;
    let started = loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Reply::Cancelled { partial: String::new() },
            Some(notice) = retries.recv() => {
                attempts = notice.attempt;
                emitter
                    .send(TurnEvent::ModelRetry {
                        attempt: notice.attempt,
                        max_attempts: notice.max_attempts,
                        wait_ms: u64::try_from(notice.wait.as_millis()).unwrap_or(u64::MAX),
                        reason: notice.reason,
                    })
                    .await;
            }
            started = &mut start => break started,
        }
    };
    let mut stream = match started {
        Ok(stream) => stream,
        Err(error) => {
            return Reply::Failed {
                error,
                partial: String::new(),
                attempts,
            };
        }
    };
    let mut builder = ResponseBuilder::default();
    let mut text = String::new();
    loop {
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => return Reply::Cancelled { partial: text },
            next = stream.next() => next,
        };
        match next {
            None => break,
            Some(Ok(event)) => {
                if let StreamEvent::TextDelta(delta) = &event {
                    text.push_str(delta);
                    emitter.text(delta);
                }
                builder.push(event);
            }
            Some(Err(error)) => {
                return Reply::Failed {
                    error,
                    partial: text,
                    attempts,
                };
            }
        }
    }
    match builder.finish() {
        Ok(response) => Reply::Complete(response),
        Err(error) => Reply::Failed {
            error,
            partial: text,
            attempts,
        },
    }
}
