//! `GET /metrics`: the user's Prometheus metrics (the memory tools' counters and latency, see
//! `docs/guidebook/gateway.md`), for a caller presenting the user's gateway token as
//! `Authorization: Bearer <token>`. No token, or a token of no user served here, is 401; the
//! numbers served are those of the user whose token it is.
//!
//! The gateway does not know where the numbers come from: the composition hands each
//! [`crate::UserAgent`] a renderer ([`crate::UserAgent::with_metrics`]).

use std::fmt;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::shared::Shared;

/// Renders a user's metrics in the Prometheus text format.
#[derive(Clone)]
pub(crate) struct MetricsRender(pub(crate) Arc<dyn Fn() -> String + Send + Sync>);

impl fmt::Debug for MetricsRender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MetricsRender")
    }
}

/// The Prometheus text exposition format's content type.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

pub(crate) async fn serve(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    let user = presented.and_then(|token| shared.users.values().find(|u| u.token.verify(token)));
    let Some(user) = user else {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "send the user's gateway token as `Authorization: Bearer <token>`\n",
        )
            .into_response();
    };
    let body = user.metrics.as_ref().map(|m| (m.0)()).unwrap_or_default();
    ([(header::CONTENT_TYPE, TEXT_FORMAT)], body).into_response()
}
