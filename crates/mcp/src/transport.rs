//! The two transports: streamable HTTP (a tower service the gateway mounts at `/mcp`) and stdio.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::combinators::BoxBody;
use types::UserId;

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::{McpError, McpServer};

/// The streamable-HTTP service of one user's [`McpServer`].
#[derive(Clone)]
pub struct McpHttpService {
    inner: StreamableHttpService<McpServer, LocalSessionManager>,
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
    pub async fn handle<B>(&self, request: Request<B>) -> Response<BoxBody<Bytes, Infallible>>
    where
        B: http_body::Body + Send + 'static,
        B::Error: std::fmt::Display,
    {
        self.inner.handle(request).await
    }
}

/// Streamable HTTP for `server`'s user: each MCP session gets its own session id. The caller
/// authenticates requests before they reach it (the gateway checks the bearer token).
pub fn http_service(server: McpServer) -> McpHttpService {
    let user = server.user().clone();
    let inner = StreamableHttpService::new(
        move || server.for_new_session().map_err(std::io::Error::other),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    McpHttpService { inner, user }
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
