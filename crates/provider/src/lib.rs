//! LLM provider clients.
//!
//! One trait, [`Provider`], with a streaming call ([`Provider::stream`] → [`StreamEvent`]s) and a
//! non-streaming one ([`Provider::complete`] → [`ChatResponse`]), and two wire formats behind it:
//! OpenAI-compatible Chat Completions (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp) and Anthropic
//! Messages. [`from_config`] builds the right one from `[provider]`. Retries with jittered backoff,
//! timeouts and actionable errors ([`ProviderError`]) live here too.
//!
//! This crate does not run tools, keep history or count budgets: that is the runtime's job.
//!
//! Modules:
//! - `chat` — the provider-neutral request, events and response
//! - `provider` — the [`Provider`] trait
//! - `fold` — events → [`ChatResponse`] ([`ResponseBuilder`], [`collect_response`])
//! - `factory` — [`from_config`], [`ProviderOptions`], [`ApiKey`]
//! - `error` — [`ProviderError`]
//! - `openai`, `anthropic` — the two wire formats (request body, stream decoder)
//! - `transport`, `stream`, `sse`, `retry` — HTTP, SSE parsing, backoff

mod anthropic;
mod chat;
mod error;
mod factory;
mod fold;
mod openai;
mod provider;
mod retry;
mod sse;
mod stream;
mod transport;

pub use anthropic::{ANTHROPIC_VERSION, AnthropicProvider};
pub use chat::{ChatRequest, ChatResponse, EventStream, FinishReason, StreamEvent};
pub use error::{ProviderError, TimeoutPhase};
pub use factory::{ApiKey, ProviderOptions, from_config, from_config_with};
pub use fold::{ResponseBuilder, collect_response};
pub use openai::OpenAiProvider;
pub use provider::{OnRetry, Provider};
pub use retry::RetryNotice;
