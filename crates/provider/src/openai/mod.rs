//! OpenAI-compatible Chat Completions: `POST {base_url}/chat/completions`.

mod decode;
mod request;

use async_trait::async_trait;

use crate::fold::fold_events;
use crate::provider::OnRetry;
use crate::transport::Transport;
use crate::{ChatRequest, ChatResponse, EventStream, Provider, ProviderError};

pub(crate) use request::TokenField;

/// A client for OpenAI, OpenRouter, Ollama, vLLM, llama.cpp and any other server speaking the
/// Chat Completions wire format.
#[derive(Debug)]
pub struct OpenAiProvider {
    transport: Transport,
    token_field: TokenField,
}

impl OpenAiProvider {
    pub(crate) fn new(transport: Transport, token_field: TokenField) -> Self {
        Self {
            transport,
            token_field,
        }
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
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
        let body = request::body(req, &self.transport.model, self.token_field, true);
        let response = self.transport.post_stream(&body, on_retry).await?;
        Ok(crate::stream::events(
            &self.transport,
            response,
            decode::OpenAiDecoder::default(),
        ))
    }

    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let body = request::body(req, &self.transport.model, self.token_field, false);
        let reply = self.transport.post_json(&body).await?;
        fold_events(decode::events_from_json(&reply)?)
    }
}
