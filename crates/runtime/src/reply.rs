//! One streamed model reply: deltas forwarded as they arrive, cancellation honoured at every await.

use futures::StreamExt;
use provider::{ChatRequest, ChatResponse, Provider, ProviderError, ResponseBuilder, StreamEvent};
use types::CancellationToken;

use crate::events::Emitter;

/// How a model call ended.
#[derive(Debug)]
pub(crate) enum Reply {
    Complete(ChatResponse),
    /// Cancelled; `partial` is the text streamed before.
    Cancelled {
        partial: String,
    },
    /// The call failed; `partial` is the text streamed before the failure.
    Failed {
        error: ProviderError,
        partial: String,
    },
}

pub(crate) async fn stream_reply(
    provider: &dyn Provider,
    request: &ChatRequest,
    emitter: &mut Emitter<'_>,
    cancel: &CancellationToken,
) -> Reply {
    let started = tokio::select! {
        biased;
        () = cancel.cancelled() => return Reply::Cancelled { partial: String::new() },
        started = provider.stream(request) => started,
    };
    let mut stream = match started {
        Ok(stream) => stream,
        Err(error) => {
            return Reply::Failed {
                error,
                partial: String::new(),
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
                };
            }
        }
    }
    match builder.finish() {
        Ok(response) => Reply::Complete(response),
        Err(error) => Reply::Failed {
            error,
            partial: text,
        },
    }
}
