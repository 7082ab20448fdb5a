//! The two transports: streamable HTTP (a tower service the gateway mounts at `/mcp`) and stdio.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use types::UserId;

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::sessions::CappedSessions;
use crate::{McpError, McpLimits, McpServer};

/// Largest request body the streamable-HTTP service reads, in bytes (rmcp's own limit). The
/// service enforces it itself, whoever mounts it; the gateway's `/mcp` route uses the same bound.
pub const MAX_REQUEST_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The streamable-HTTP service of one user's [`McpServer`].
#[derive(Clone)]
pub struct McpHttpService {
    inner: StreamableHttpService<McpServer, CappedSessions>,
    sessions: Arc<CappedSessions>,
    user: UserId,
}

impl std::fmt::Debug for McpHttpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHttpService")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

impl McpHttpService {
    /// Answers one HTTP request (already authenticated as this service's user).
    ///
    /// A request carrying an `Origin` header (what a browser adds to a page's requests) is
    /// refused with `403`: MCP clients are programs, and a web page must not reach the user's
    /// memory through a browser that can reach loopback. A session ended with `DELETE` answers
    /// `204 No Content` (rmcp answers `202`, which clients such as the Python SDK report as a
    /// failed termination).
    ///
    /// A body past [`MAX_REQUEST_BODY_BYTES`] (or announced so by its `Content-Length`) is
    /// answered `413 Payload Too Large` after reading at most that much of it, whoever mounts
    /// the service.
    ///
    /// A request whose `params` are not an object (JSON-RPC allows an array; MCP names its
    /// params), which rmcp refuses as an unreadable body with `415`, is answered with the
    /// JSON-RPC error `-32602` saying so.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<BoxBody<Bytes, Infallible>>
    where
        B: http_body::Body + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let delete = request.method() == http::Method::DELETE;
        let (parts, body) = request.into_parts();
        if announced_length(&parts.headers).is_some_and(|n| n > MAX_REQUEST_BODY_BYTES) {
            return too_large();
        }
        let bytes = match Limited::new(body, MAX_REQUEST_BODY_BYTES).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<LengthLimitError>() => return too_large(),
            Err(e) => {
                tracing::info!(error = %e, "MCP request body unreadable");
                return plain(
                    http::StatusCode::BAD_REQUEST,
                    "the request body is unreadable",
                );
            }
        };
        // A browser's request goes on to rmcp, which refuses it (`403`) whatever its body.
        if parts.method == http::Method::POST
            && !parts.headers.contains_key(http::header::ORIGIN)
            && let Some(answer) = unnamed_params(&bytes)
        {
            return answer;
        }
        let request = Request::from_parts(parts, Full::new(bytes));
        let mut response = self.inner.handle(request).await;
        if delete && response.status() == http::StatusCode::ACCEPTED {
            *response.status_mut() = http::StatusCode::NO_CONTENT;
        }
        response
    }

    /// The user's live MCP sessions now.
    pub fn live_sessions(&self) -> usize {
        self.sessions.live()
    }
}

/// The JSON-RPC error for a request in `body` whose `params` are there but not an object, if it
/// is one.
fn unnamed_params(body: &[u8]) -> Option<Response<BoxBody<Bytes, Infallible>>> {
    let message: serde_json::Value = serde_json::from_slice(body).ok()?;
    let id = message.get("id")?;
    message.get("method")?.as_str()?;
    let got = match message.get("params")? {
        serde_json::Value::Object(_) | serde_json::Value::Null => return None,
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::Bool(_) => "a boolean",
    };
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32602,
            "message": format!(
                "`params` must be an object of named params, got {got}: for tools/call, \
                 {{\"name\": a tool's name (see tools/list), \"arguments\": {{...}}}}"
            ),
        },
    });
    let mut response = Response::new(Full::new(Bytes::from(error.to_string())).boxed());
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Some(response)
}

/// The body length a request's `Content-Length` announces, if it has a readable one.
fn announced_length(headers: &http::HeaderMap) -> Option<usize> {
    headers
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `413` for a body past [`MAX_REQUEST_BODY_BYTES`] (read no further than that).
fn too_large() -> Response<BoxBody<Bytes, Infallible>> {
    let text = format!(
        "the request body is larger than {MAX_REQUEST_BODY_BYTES} bytes: send a smaller request"
    );
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = http::StatusCode::PAYLOAD_TOO_LARGE;
    response.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    response
}

fn plain(status: http::StatusCode, text: &'static str) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
}

/// Streamable HTTP for `server`'s user with the default [`McpLimits`].
pub fn http_service(server: McpServer) -> McpHttpService {
    http_service_with(server, McpLimits::default())
}

/// Streamable HTTP for `server`'s user: each MCP session gets its own session id, at most
/// `limits.max_sessions` live at once, each closed after `limits.idle` without a request. The
/// caller authenticates requests before they reach it (the gateway checks the bearer token).
pub fn http_service_with(server: McpServer, limits: McpLimits) -> McpHttpService {
    let user = server.user().clone();
    let sessions = Arc::new(CappedSessions::new(limits));
    let inner = StreamableHttpService::new(
        move || server.for_new_session().map_err(std::io::Error::other),
        Arc::clone(&sessions),
        StreamableHttpServerConfig::default().enforce_origin_validation(),
    );
    McpHttpService {
        inner,
        sessions,
        user,
    }
}

/// Serves `server` on stdin/stdout until the client closes them.
pub async fn serve_stdio(server: McpServer) -> Result<(), McpError> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| McpError::Handshake(Box::new(e)))?;
    running
        .waiting()
        .await
        .map_err(|e| McpError::Session(Box::new(e)))?;
    Ok(())
}
