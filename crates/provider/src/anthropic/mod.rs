//! Anthropic Messages: `POST {base_url}/v1/messages`.

mod decode;
mod request;

use async_trait::async_trait;

use crate::fold::fold_events;
use crate::provider::OnRetry;
use crate::transport::Transport;
use crate::{ChatRequest, ChatResponse, EventStream, Provider, ProviderError};

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A client for the Anthropic Messages API.
#[derive(Debug)]
pub struct AnthropicProvider {
    transport: Transport,
    /// Declare the `memory` tool as Anthropic's native `memory_20250818`.
    native_memory: bool,
}

impl AnthropicProvider {
    pub(crate) fn new(transport: Transport, native_memory: bool) -> Self {
        Self {
            transport,
            native_memory,
        }
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn model(&self) -> &str {
        &self.transport.model
    }

    async fn stream(&self, req: &ChatRequest) -> Result<EventStream, ProviderError> {
        self.stream_reporting(req, &|_| {}).await
    }

    async fn stream_reporting(
        &self,
        req: &ChatRequest,
        on_retry: OnRetry<'_>,
    ) -> Result<EventStream, ProviderError> {
        let body = request::body(
            req,
            &self.transport.model,
            /*stream*/ true,
            self.native_memory,
        );
        let response = self.transport.post_stream(&body, on_retry).await?;
        Ok(crate::stream::events(
            &self.transport,
            response,
            decode::AnthropicDecoder::default(),
        ))
    }

    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let body = request::body(
            req,
            &self.transport.model,
            /*stream*/ false,
            self.native_memory,
        );
        let reply = self.transport.post_json(&body).await?;
        fold_events(decode::events_from_json(&reply)?)
    }
}
