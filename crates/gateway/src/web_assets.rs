//! The web client's files, compiled into the binary from `crates/gateway/web/` (plain ES modules
//! and CSS: nothing is fetched from elsewhere), served at `/` (the page) and `/assets/{name}`,
//! and the security headers every response of the gateway carries: a Content-Security-Policy
//! without inline script or style or eval that loads only from the gateway itself and cannot be
//! framed, `X-Frame-Options: DENY`, `nosniff`, `Referrer-Policy: no-referrer`.

use axum::extract::{Path, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The page's policy: scripts, styles and connections from the gateway's own origin only; no
/// images, frames, plugins or forms elsewhere; no inline code, no eval; never framed.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; manifest-src 'self'; \
     form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

const INDEX: &str = include_str!("../web/index.html");

/// Every file under `/assets/`: name, content type, bytes.
pub const ASSETS: &[(&str, &str, &str)] = &[
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../web/style.css"),
    ),
    ("app.js", JS, include_str!("../web/app.js")),
    ("client.js", JS, include_str!("../web/client.js")),
    ("markdown.js", JS, include_str!("../web/markdown.js")),
    ("highlight.js", JS, include_str!("../web/highlight.js")),
    ("chat.js", JS, include_str!("../web/chat.js")),
    ("memory.js", JS, include_str!("../web/memory.js")),
    ("dom.js", JS, include_str!("../web/dom.js")),
];
const JS: &str = "text/javascript; charset=utf-8";

/// The size of the page and all its assets, in bytes (uncompressed).
pub fn web_client_bytes() -> usize {
    INDEX.len() + ASSETS.iter().map(|(_, _, body)| body.len()).sum::<usize>()
}

/// The web client's page.
pub(crate) fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        INDEX,
    )
        .into_response()
}

/// `GET /assets/{name}`.
pub(crate) async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, kind, body)) => (
            [
                (header::CONTENT_TYPE, *kind),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            *body,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such file\n").into_response(),
    }
}

/// `GET /favicon.ico`: no icon (and no 404 in the console).
pub(crate) async fn no_icon() -> StatusCode {
    StatusCode::NO_CONTENT
}

/// With TLS: browsers keep to HTTPS for this host for a year (`Strict-Transport-Security`).
pub(crate) async fn hsts(mut response: Response) -> Response {
    response.headers_mut().insert(
        header::STRICT_TRANSPORT_SECURITY,
        HeaderValue::from_static("max-age=31536000"),
    );
    response
}

/// Adds the security headers to every response.
pub(crate) async fn secure_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let set = [
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        (
            header::HeaderName::from_static("cross-origin-opener-policy"),
            HeaderValue::from_static("same-origin"),
        ),
        (
            header::HeaderName::from_static("cross-origin-resource-policy"),
            HeaderValue::from_static("same-origin"),
        ),
    ];
    for (name, value) in set {
        headers.insert(name, value);
    }
    response
}
