//! The streamable-HTTP service bounds the request bodies it reads itself, whoever mounts it: a
//! body past [`mcp::MAX_REQUEST_BODY_BYTES`] is answered `413` after reading at most that much,
//! and one announced larger by its `Content-Length` is refused before any of it is read.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};

/// Alice's service over an empty registry.
fn service(dir: &std::path::Path) -> mcp::McpHttpService {
    let registry = tools::ToolSet::for_mcp(&types::AgentConfig::default(), None)
        .registry()
        .unwrap();
    let user = types::UserId::parse("alice").unwrap();
    let workspace = types::WorkspacePaths::new(dir.join("alice"));
    let server = mcp::McpServer::new(Arc::new(registry), user, workspace).unwrap();
    mcp::http_service(server)
}

const CHUNK: usize = 64 * 1024;

/// A body of `chunks` chunks of [`CHUNK`] bytes, counting how many were read.
fn counted_body(
    chunks: usize,
    read: Arc<AtomicUsize>,
) -> StreamBody<impl futures::Stream<Item = Result<http_body::Frame<Bytes>, Infallible>>> {
    let stream = futures::stream::iter(0..chunks).map(move |_| {
        read.fetch_add(1, Ordering::SeqCst);
        Ok(http_body::Frame::data(Bytes::from(vec![b' '; CHUNK])))
    });
    StreamBody::new(stream)
}

fn post<B>(body: B, length: Option<usize>) -> Request<B> {
    let mut request = Request::post("/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if let Some(length) = length {
        request = request.header("content-length", length.to_string());
    }
    request.body(body).unwrap()
}

async fn text_of(response: Response<BoxBody<Bytes, Infallible>>) -> (StatusCode, String) {
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn an_overlong_body_is_refused_without_reading_it_all() {
    let dir = tempfile::tempdir().unwrap();
    let service = service(dir.path());
    let read = Arc::new(AtomicUsize::new(0));
    let total = 2 * mcp::MAX_REQUEST_BODY_BYTES / CHUNK;
    let request = post(counted_body(total, Arc::clone(&read)), None);
    let answer = tokio::time::timeout(Duration::from_secs(20), service.handle(request))
        .await
        .expect("an answer");
    let most = mcp::MAX_REQUEST_BODY_BYTES / CHUNK + 1;
    let pulled = read.load(Ordering::SeqCst);
    assert!(
        pulled <= most,
        "read {pulled} chunks of {total}, at most {most} expected"
    );
    let (status, text) = text_of(answer).await;
    assert_eq!(
        (status, text.as_str()),
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request body is larger than 4194304 bytes: send a smaller request"
        )
    );
}

#[tokio::test]
async fn a_body_announced_too_long_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let service = service(dir.path());
    let read = Arc::new(AtomicUsize::new(0));
    let length = mcp::MAX_REQUEST_BODY_BYTES + 1;
    let request = post(counted_body(1, Arc::clone(&read)), Some(length));
    let (status, text) = text_of(service.handle(request).await).await;
    assert_eq!(
        (status, text.as_str()),
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request body is larger than 4194304 bytes: send a smaller request"
        )
    );
    assert_eq!(read.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_body_within_the_bound_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let service = service(dir.path());
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}})
    .to_string();
    let request = post(Full::new(Bytes::from(init)), None);
    let (status, text) = text_of(service.handle(request).await).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(text.contains("\"protocolVersion\""), "{text}");
}
