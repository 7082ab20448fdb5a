//! Turning a streaming HTTP response into [`StreamEvent`]s: bytes → SSE events → a wire-format
//! [`Decoder`] → events, with an idle timeout between chunks and no silent truncation.

use std::collections::VecDeque;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};

use crate::error::TimeoutPhase;
use crate::sse::{SseEvent, SseParser};
use crate::transport::{Transport, root_cause};
use crate::{EventStream, ProviderError, StreamEvent};

/// A wire format's streaming grammar.
pub(crate) trait Decoder: Send + 'static {
    /// Handles one SSE event, appending what it means.
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError>;
    /// Whether the terminal event has been seen (nothing more to read).
    fn is_finished(&self) -> bool;
    /// The body ended. Returns an error unless the reply was complete; may append a final `Done`.
    fn on_end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), String>;
}

struct Pump<D> {
    bytes: BoxStream<'static, reqwest::Result<Bytes>>,
    sse: SseParser,
    decoder: D,
    pending: VecDeque<Result<StreamEvent, ProviderError>>,
    ended: bool,
    idle: std::time::Duration,
    base_url: String,
}

pub(crate) fn events<D: Decoder>(
    transport: &Transport,
    response: reqwest::Response,
    decoder: D,
) -> EventStream {
    let pump = Pump {
        bytes: response.bytes_stream().boxed(),
        sse: SseParser::default(),
        decoder,
        pending: VecDeque::new(),
        ended: false,
        idle: transport.idle_timeout,
        base_url: transport.base_url.clone(),
    };
    futures::stream::unfold(pump, |mut pump| async move {
        let item = pump.next().await?;
        Some((item, pump))
    })
    .boxed()
}

impl<D: Decoder> Pump<D> {
    async fn next(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(item);
            }
            if self.ended {
                return None;
            }
            if self.decoder.is_finished() {
                self.ended = true;
                continue;
            }
            match tokio::time::timeout(self.idle, self.bytes.next()).await {
                Err(_) => {
                    self.ended = true;
                    return Some(Err(ProviderError::Timeout {
                        phase: TimeoutPhase::StreamIdle,
                        base_url: self.base_url.clone(),
                        after: self.idle,
                    }));
                }
                Ok(Some(Err(e))) => {
                    self.ended = true;
                    return Some(Err(self.interrupted(root_cause(&e), Some(e))));
                }
                Ok(Some(Ok(chunk))) => {
                    let sse = self.sse.push(&chunk);
                    self.decode(sse);
                }
                Ok(None) => {
                    let sse = self.sse.finish();
                    self.decode(sse);
                    self.ended = true;
                    let mut out = Vec::new();
                    let end = if self.decoder.is_finished() {
                        Ok(())
                    } else {
                        self.decoder.on_end(&mut out)
                    };
                    self.pending.extend(out.into_iter().map(Ok));
                    if let Err(reason) = end {
                        let err = self.interrupted(reason, None);
                        self.pending.push_back(Err(err));
                    }
                }
            }
        }
    }

    fn decode(&mut self, sse: Vec<SseEvent>) {
        for event in sse {
            if self.decoder.is_finished() {
                break;
            }
            let mut out = Vec::new();
            let result = self.decoder.on_event(&event, &mut out);
            self.pending.extend(out.into_iter().map(Ok));
            if let Err(err) = result {
                self.pending.push_back(Err(err));
                self.ended = true;
                break;
            }
        }
    }

    fn interrupted(&self, reason: String, source: Option<reqwest::Error>) -> ProviderError {
        ProviderError::Interrupted {
            base_url: self.base_url.clone(),
            reason,
            source,
        }
    }
}
