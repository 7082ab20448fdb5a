//! The two transports: streamable HTTP (a tower service the gateway mounts at `/mcp`) and stdio.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::combinators::BoxBody;
use types::UserId;

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::sessions::CappedSessions;
use crate::{McpError, McpLimits, McpServer};

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
    pub async fn handle<B>(&self, request: Request<B>) -> Response<BoxBody<Bytes, Infallible>>
    where
        B: http_body::Body + Send + 'static,
        B::Error: std::fmt::Display,
    {
        let delete = request.method() == http::Method::DELETE;
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
