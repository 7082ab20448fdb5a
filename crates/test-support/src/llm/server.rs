//! [`ScriptedLlm`]: a real HTTP server on `127.0.0.1:0` answering from a script.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};
use types::Usage;

use super::recorded::{RecordedRequest, WireFormat};
use super::script::{ScriptedMessage, ScriptedReply};
use super::wire::{self, Served};

/// Answers a request from its content (used once the queued replies are exhausted).
pub type Responder = Arc<dyn Fn(&RecordedRequest) -> ScriptedReply + Send + Sync>;

/// A scripted LLM endpoint speaking OpenAI Chat Completions (`POST /v1/chat/completions`) and
/// Anthropic Messages (`POST /v1/messages`), JSON or SSE by the request's `stream` flag.
///
/// Each request takes the next queued [`ScriptedReply`]; when the queue is empty the responder
/// (if set) answers; otherwise a 500 whose message says "script exhausted". Every request is
/// recorded. The server stops when this value is dropped.
pub struct ScriptedLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for ScriptedLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedLlm")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Shared {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    queue: VecDeque<ScriptedReply>,
    requests: Vec<RecordedRequest>,
    responder: Option<Responder>,
    ids_assigned: u64,
    /// When set, a request without this key (`Authorization: Bearer KEY` or `x-api-key: KEY`)
    /// is answered 401, as a provider answers a wrong key.
    api_key: Option<String>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ScriptedLlm {
    /// Binds `127.0.0.1:0` and starts serving on the current tokio runtime.
    #[allow(
        clippy::expect_used,
        reason = "a test fixture that cannot bind loopback is a broken test environment"
    )]
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("scripted LLM: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("scripted LLM: local address");
        let shared = Arc::new(Shared::default());
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "scripted LLM server stopped");
            }
        });
        tracing::debug!(%addr, "scripted LLM listening");
        Self { addr, shared, task }
    }

    /// Starts a server that answers every request with `responder`.
    pub async fn with_responder(
        responder: impl Fn(&RecordedRequest) -> ScriptedReply + Send + Sync + 'static,
    ) -> Self {
        let server = Self::start().await;
        server.set_responder(responder);
        server
    }

    /// Answers with `responder` whenever no queued reply is left.
    pub fn set_responder(
        &self,
        responder: impl Fn(&RecordedRequest) -> ScriptedReply + Send + Sync + 'static,
    ) {
        self.shared.lock().responder = Some(Arc::new(responder));
    }

    /// Answers 401 (in the request's wire format) to every request that does not carry `key`,
    /// as `Authorization: Bearer KEY` (OpenAI) or `x-api-key: KEY` (Anthropic).
    pub fn require_api_key(&self, key: &str) {
        self.shared.lock().api_key = Some(key.to_owned());
    }

    /// The OpenAI-style base URL, `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The Anthropic-style base URL, `http://127.0.0.1:PORT` (clients append `/v1/messages`).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues a reply.
    pub fn push(&self, reply: ScriptedReply) {
        self.shared.lock().queue.push_back(reply);
    }

    /// Queues several replies, in order.
    pub fn push_all(&self, replies: impl IntoIterator<Item = ScriptedReply>) {
        self.shared.lock().queue.extend(replies);
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// The most recent request, if any.
    pub fn last_request(&self) -> Option<RecordedRequest> {
        self.shared.lock().requests.last().cloned()
    }

    /// How many queued replies have not been served yet.
    pub fn remaining(&self) -> usize {
        self.shared.lock().queue.len()
    }
}

impl Drop for ScriptedLlm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = RecordedRequest {
        method: method.to_string(),
        path: uri.path().to_owned(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect::<BTreeMap<_, _>>(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    let format = request.format();
    let (number, reply, responder) = {
        let mut inner = shared.lock();
        inner.requests.push(request.clone());
        if let Some(key) = inner.api_key.as_deref()
            && !carries_key(&request, key)
        {
            let message = "invalid x-api-key / Authorization: incorrect API key provided";
            let body = match format {
                WireFormat::Anthropic => wire::anthropic::error(401, message),
                _ => wire::openai::error(401, message),
            };
            return json_response(401, &body, &[]);
        }
        if method == Method::GET && request.path == "/v1/models" {
            // Both providers list models at GET /v1/models: the cheap request a key check makes.
            let body = json!({"object": "list", "data": [{"id": super::SCRIPTED_MODEL, "object": "model"}]});
            return json_response(200, &body, &[]);
        }
        let reply = if format == WireFormat::Unknown {
            None
        } else {
            inner.queue.pop_front()
        };
        (inner.requests.len(), reply, inner.responder.clone())
    };
    if format == WireFormat::Unknown {
        let message = format!(
            "scripted LLM: no route for {method} {}: OpenAI clients POST {{base_url}}/chat/completions \
             with base_url http://HOST/v1; Anthropic clients POST {{base_url}}/v1/messages",
            request.path
        );
        return json_response(404, &wire::openai::error(404, &message), &[]);
    }
    let reply = match (reply, responder) {
        (Some(reply), _) => reply,
        (None, Some(responder)) => responder(&request),
        (None, None) => ScriptedReply::http_error(
            500,
            &format!(
                "scripted LLM: script exhausted: request #{number} to {} has no reply queued; \
                 push() more replies or set a responder",
                request.path
            ),
        ),
    };
    respond(&shared, &request, format, reply)
}

fn respond(
    shared: &Shared,
    request: &RecordedRequest,
    format: WireFormat,
    reply: ScriptedReply,
) -> Response {
    let mut delay = Duration::ZERO;
    let mut cut = None;
    let mut reply = reply;
    let message = loop {
        match reply {
            ScriptedReply::Slow {
                reply: inner,
                chunk_delay,
            } => {
                delay += chunk_delay;
                reply = *inner;
            }
            ScriptedReply::Cut {
                reply: inner,
                after_chunks,
            } => {
                cut = Some(after_chunks);
                reply = *inner;
            }
            ScriptedReply::HttpError {
                status,
                message,
                retry_after,
            } => {
                let body = match format {
                    WireFormat::Anthropic => wire::anthropic::error(status, &message),
                    _ => wire::openai::error(status, &message),
                };
                let retry = retry_after.map(|s| ("retry-after", s.to_string()));
                return json_response(status, &body, retry.as_slice());
            }
            ScriptedReply::Message(message) => break message,
        }
    };
    let served = serve(shared, request, message);
    let model = request.model().unwrap_or("scripted-model");
    if request.is_stream() {
        let chunks = match format {
            WireFormat::Anthropic => wire::anthropic::stream(&served, model),
            _ => {
                let include_usage = request.body["stream_options"]["include_usage"]
                    .as_bool()
                    .unwrap_or(false);
                wire::openai::stream(&served, model, include_usage)
            }
        };
        body_response("text/event-stream", chunks, delay, cut)
    } else {
        let json = match format {
            WireFormat::Anthropic => wire::anthropic::json(&served, model),
            _ => wire::openai::json(&served, model),
        };
        let text = json.to_string();
        let chunks = match cut {
            // Half the body, then the connection drops.
            Some(_) => wire::pieces(&text, 2),
            None => vec![text],
        };
        body_response("application/json", chunks, delay, cut.map(|_| 1))
    }
}

/// Assigns call ids and settles usage.
fn serve(shared: &Shared, request: &RecordedRequest, message: ScriptedMessage) -> Served {
    let calls = {
        let mut inner = shared.lock();
        message
            .tool_calls
            .into_iter()
            .map(|c| {
                let id = c.id.unwrap_or_else(|| {
                    inner.ids_assigned += 1;
                    format!("call_{}", inner.ids_assigned)
                });
                (id, c.name, c.arguments)
            })
            .collect::<Vec<_>>()
    };
    let usage = message.usage.unwrap_or_else(|| {
        let produced = message.text.as_deref().map_or(0, str::len)
            + calls
                .iter()
                .map(|(_, n, a)| n.len() + a.len())
                .sum::<usize>();
        Usage {
            prompt_tokens: (request.body.to_string().len() / 4).max(1) as u64,
            completion_tokens: (produced / 4 + 1) as u64,
        }
    });
    Served {
        text: message.text,
        calls,
        usage,
    }
}

/// True when the request carries `key` the way either provider expects it.
fn carries_key(request: &RecordedRequest, key: &str) -> bool {
    request.header("x-api-key") == Some(key)
        || request.header("authorization") == Some(&format!("Bearer {key}"))
}

fn json_response(status: u16, body: &Value, headers: &[(&str, String)]) -> Response {
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", "application/json");
    for (name, value) in headers {
        builder = builder.header(*name, value.as_str());
    }
    builder
        .body(Body::from(body.to_string()))
        .unwrap_or_else(|e| fallback(&e.to_string()))
}

/// A streamed body: `delay` before each chunk; with `cut`, the connection drops after that many.
fn body_response(
    content_type: &str,
    chunks: Vec<String>,
    delay: Duration,
    cut: Option<usize>,
) -> Response {
    let keep = cut.unwrap_or(chunks.len()).min(chunks.len());
    let cut_short = cut.is_some();
    let items: Vec<String> = chunks.into_iter().take(keep).collect();
    let stream = futures::stream::unfold(
        (items.into_iter(), false),
        move |(mut it, failed)| async move {
            if failed {
                return None;
            }
            if let Some(chunk) = it.next() {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                return Some((Ok(Bytes::from(chunk)), (it, false)));
            }
            if cut_short {
                // Give the written chunks a moment to reach the client, then abort the connection.
                tokio::time::sleep(Duration::from_millis(20)).await;
                let err =
                    std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "scripted cut");
                return Some((Err(err), (it, true)));
            }
            None
        },
    );
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", content_type)
        .header("cache-control", "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|e| fallback(&e.to_string()))
}

fn fallback(problem: &str) -> Response {
    let mut response = Response::new(Body::from(
        json!({"error": {"message": problem}}).to_string(),
    ));
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response
}
