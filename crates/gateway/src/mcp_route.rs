//! `/mcp`: the user's tools over MCP (streamable HTTP), behind the gateway token.
//!
//! The `Authorization: Bearer <token>` header chooses the user (the one whose gateway token it
//! is, compared in constant time); a missing or wrong token is `401` and reaches no MCP code. The
//! user comes only from the token, never from a header or an argument. A connection that
//! presented a good token no longer counts as unauthenticated (its handshake deadline ends), so
//! long-lived MCP streams are not cut; its request body must then arrive within
//! [`crate::GatewayConfig::body_timeout`] (`408` otherwise), so a body that never finishes
//! cannot hold the connection and its buffers, and the connection closes after its response
//! (`Connection: close`), so it cannot trickle the headers of a next request with no deadline.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::limits::Admission;
use crate::shared::Shared;

pub(crate) async fn handle(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(admission): ConnectInfo<Admission>,
    request: Request,
) -> Response {
    let Some(presented) = bearer(request.headers()) else {
        return unauthorized("missing bearer token: send Authorization: Bearer <gateway token>");
    };
    let Some(user) = shared.users.values().find(|u| u.token.verify(presented)) else {
        tracing::info!("MCP request with a wrong token refused");
        return unauthorized("wrong token: use the user's gateway token");
    };
    admission.authenticated();
    let Some(service) = user.mcp.as_ref() else {
        return (StatusCode::NOT_FOUND, "MCP is not enabled for this agent").into_response();
    };
    let request = match whole_body(request, shared.config.body_timeout).await {
        Ok(request) => request,
        Err(refusal) => return refusal,
    };
    let mut response = service.handle(request).await.map(Body::new);
    // One request per connection: a connection that authenticated once would otherwise keep
    // no deadline for the headers of its next request. MCP clients open another (loopback).
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// `request` with its body read in full within `deadline` (and at most
/// [`crate::GatewayConfig::MAX_BODY_BYTES`]).
async fn whole_body(request: Request, deadline: Duration) -> Result<Request, Response> {
    let (parts, body) = request.into_parts();
    let max = crate::GatewayConfig::MAX_BODY_BYTES;
    match tokio::time::timeout(deadline, axum::body::to_bytes(body, max)).await {
        Ok(Ok(bytes)) => Ok(Request::from_parts(parts, Body::from(bytes))),
        Ok(Err(_)) => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            [(header::CONNECTION, "close")],
            format!("the request body is unreadable or larger than {max} bytes"),
        )
            .into_response()),
        Err(_) => {
            tracing::info!("MCP request body not complete before the deadline");
            Err((
                StatusCode::REQUEST_TIMEOUT,
                [(header::CONNECTION, "close")],
                format!(
                    "the request body did not arrive within {} s",
                    deadline.as_secs()
                ),
            )
                .into_response())
        }
    }
}

pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

fn unauthorized(message: &'static str) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        message,
    )
        .into_response()
}
