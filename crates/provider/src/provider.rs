//! The [`Provider`] trait: what the runtime calls, whatever the wire format.

use async_trait::async_trait;

use crate::{ChatRequest, ChatResponse, EventStream, ProviderError, RetryNotice};

/// Told about each retry before its wait (see [`Provider::stream_reporting`]).
pub type OnRetry<'a> = &'a (dyn Fn(RetryNotice) + Send + Sync);

/// An LLM endpoint. Object safe: the runtime holds an `Arc<dyn Provider>`.
///
/// Transient failures (429, 5xx, connection errors) are retried inside both calls, but only before
/// any reply data has been handed out: once a stream has yielded an event, an error ends it.
#[async_trait]
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// The model name sent with each request.
    fn model(&self) -> &str;

    /// Starts a streamed reply. The stream yields deltas and ends with exactly one
    /// [`StreamEvent::Done`](crate::StreamEvent::Done), or with an error — never a silent truncation.
    async fn stream(&self, req: &ChatRequest) -> Result<EventStream, ProviderError>;

    /// Like [`Provider::stream`], calling `on_retry` before waiting for each retry, so that a
    /// caller can show that the model is being retried. The default reports nothing.
    async fn stream_reporting(
        &self,
        req: &ChatRequest,
        on_retry: OnRetry<'_>,
    ) -> Result<EventStream, ProviderError> {
        let _ = on_retry;
        self.stream(req).await
    }

    /// A whole reply in one non-streaming request.
    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, ProviderError>;
}
