//! Shared helpers for the provider tests: fast retry options and one-line calls.

#![allow(dead_code, reason = "each test file uses a different subset")]
#![allow(
    clippy::expect_used,
    reason = "test helpers: a failure here is a broken test environment"
)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use provider::{ChatRequest, Provider, ProviderError, ProviderOptions, StreamEvent};
use types::{Message, ProviderConfig};

/// Both wire formats, for tests that must hold for each.
pub const KINDS: [types::ProviderKind; 2] =
    [types::ProviderKind::Openai, types::ProviderKind::Anthropic];

/// Options with millisecond backoff so retry tests stay quick.
pub fn fast() -> ProviderOptions {
    ProviderOptions {
        retry_base_delay: Duration::from_millis(5),
        retry_max_delay: Duration::from_millis(20),
        ..ProviderOptions::default()
    }
}

pub fn provider(config: &ProviderConfig) -> Arc<dyn Provider> {
    provider::from_config_with(config, fast()).expect("provider builds")
}

pub fn ask(text: &str) -> ChatRequest {
    ChatRequest {
        system: None,
        messages: vec![Message::user(text)],
        tools: Vec::new(),
        max_output_tokens: 256,
        force_tool: None,
    }
}

/// All events of a streamed reply, or the first error.
pub async fn stream_events(
    p: &dyn Provider,
    req: &ChatRequest,
) -> Result<Vec<StreamEvent>, ProviderError> {
    let mut stream = p.stream(req).await?;
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event?);
    }
    Ok(events)
}

/// A localhost port with nothing listening.
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}
