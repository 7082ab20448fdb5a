//! The first frame: `hello` within `auth_timeout` of the TCP accept, the right protocol version, a user this
//! gateway serves, and that user's token — or an empty token on a connection whose upgrade
//! request carried that user's web session cookie from the gateway's own origin. Anything else
//! gets an `error` frame and a close.

use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket};
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use types::{ClientFrame, ErrorCode, PROTOCOL_VERSION, ServerFrame, SessionId};

use crate::frames::{Incoming, read_frame};
use crate::shared::Shared;
use crate::user::UserAgent;
use crate::web_auth::WebSession;

/// An authenticated connection's identity and what it asked to resume.
#[derive(Debug)]
pub(crate) struct Hello {
    pub(crate) user: Arc<UserAgent>,
    pub(crate) session_id: Option<SessionId>,
    pub(crate) last_seq: Option<u64>,
}

/// Reads and checks the `hello`, which must arrive by `deadline`. On failure the error has been
/// sent and the socket closed.
pub(crate) async fn handshake(
    shared: &Shared,
    sink: &mut SplitSink<WebSocket, Message>,
    stream: &mut SplitStream<WebSocket>,
    deadline: tokio::time::Instant,
    web: Option<&WebSession>,
) -> Option<Hello> {
    let config = &shared.config;
    let first = tokio::time::timeout_at(deadline, read_frame(stream, config)).await;
    let refusal = match first {
        Err(_) => (
            ErrorCode::AuthTimeout,
            "no hello received in time: send hello with your token first".to_owned(),
        ),
        Ok(Incoming::Gone) => return None,
        Ok(Incoming::Frame(ClientFrame::Hello {
            protocol_version,
            token,
            user_id,
            session_id,
            last_seq,
        })) => {
            if protocol_version != PROTOCOL_VERSION {
                (
                    ErrorCode::VersionMismatch,
                    format!(
                        "this gateway speaks protocol version {PROTOCOL_VERSION}, not \
                         {protocol_version}: update the client"
                    ),
                )
            } else {
                // A browser whose upgrade carried its session cookie leaves the token empty.
                let by_cookie = token.is_empty() && web.is_some_and(|w| w.user == user_id);
                match shared.users.get(&user_id) {
                    Some(user) if by_cookie || user.token.verify(&token) => {
                        tracing::info!(user = %user_id, by_cookie, "client authenticated");
                        return Some(Hello {
                            user: Arc::clone(user),
                            session_id,
                            last_seq,
                        });
                    }
                    _ => {
                        tracing::info!(user = %user_id, "client refused: unknown user or wrong token");
                        (
                            ErrorCode::Unauthorized,
                            "unknown user or wrong token: use the token in the user's \
                             .oxydra/gateway.token"
                                .to_owned(),
                        )
                    }
                }
            }
        }
        Ok(Incoming::Frame(_)) => (
            ErrorCode::HelloExpected,
            "the first frame must be hello".to_owned(),
        ),
        Ok(Incoming::Bad(ServerFrame::Error { code, message, .. })) => (code, message),
        Ok(Incoming::Bad(_)) => (ErrorCode::HelloExpected, "send hello first".to_owned()),
    };
    refuse(sink, refusal.0, &refusal.1, config.send_timeout).await;
    None
}

/// Sends one `error` frame and closes.
async fn refuse(
    sink: &mut SplitSink<WebSocket, Message>,
    code: ErrorCode,
    message: &str,
    timeout: std::time::Duration,
) {
    let frame = ServerFrame::error(code, message, Some("hello".into()));
    if let Ok(text) = serde_json::to_string(&frame) {
        let _ = tokio::time::timeout(timeout, sink.send(Message::Text(text.into()))).await;
    }
    let _ = tokio::time::timeout(timeout, sink.send(Message::Close(None))).await;
    let _ = tokio::time::timeout(timeout, sink.close()).await;
}

/// Reads what is left so the close handshake completes.
pub(crate) async fn drain(stream: &mut SplitStream<WebSocket>) {
    while let Ok(Some(Ok(_))) =
        tokio::time::timeout(std::time::Duration::from_secs(1), stream.next()).await
    {}
}
