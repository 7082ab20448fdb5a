//! Reading client frames: size limit, text only, JSON, known `type`, well-formed fields. Each
//! failure becomes the `error` frame to send; only an oversize frame ends the connection.

use axum::extract::ws::{Message, WebSocket};
use futures::StreamExt;
use futures::stream::SplitStream;
use types::{ClientFrame, ErrorCode, NoteRequest, ServerFrame};

use crate::GatewayConfig;

/// The `type`s of the client frames before the note requests, in the order the protocol
/// documents them.
const BEFORE_NOTES: [&str; 10] = [
    "hello",
    "send_turn",
    "cancel_turn",
    "new_session",
    "list_sessions",
    "switch_session",
    "get_history",
    "approve",
    "resync",
    "ping",
];

/// The `type`s of the client frames after the note requests.
const AFTER_NOTES: [&str; 9] = [
    "list_schedules",
    "change_schedule",
    "list_models",
    "set_model",
    "get_usage",
    "list_pending_memories",
    "accept_memory",
    "reject_memory",
    "search_conversations",
];

/// The `type`s of [`ClientFrame`] (checked against the examples by a test): the note requests
/// are [`NoteRequest::TYPES`] itself, so a new one cannot be left out here.
pub const CLIENT_FRAME_TYPES: [&str;
    BEFORE_NOTES.len() + NoteRequest::TYPES.len() + AFTER_NOTES.len()] =
    joined(BEFORE_NOTES, NoteRequest::TYPES, AFTER_NOTES);

/// `a`, then `b`, then `c`, in one array (a constant's lists joined at compile time).
const fn joined<const A: usize, const B: usize, const C: usize, const N: usize>(
    a: [&'static str; A],
    b: [&'static str; B],
    c: [&'static str; C],
) -> [&'static str; N] {
    assert!(A + B + C == N, "the joined length is the sum of the parts");
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = if i < A {
            a[i]
        } else if i < A + B {
            b[i - A]
        } else {
            c[i - A - B]
        };
        i += 1;
    }
    out
}

/// One read from the client.
#[derive(Debug)]
pub(crate) enum Incoming {
    Frame(ClientFrame),
    /// A frame that cannot be served; the `error` frame to answer with. `frame_too_large` also
    /// ends the connection.
    Bad(ServerFrame),
    /// The client closed or the connection broke.
    Gone,
}

/// Reads the next data frame (control frames are handled by the WebSocket layer).
pub(crate) async fn read_frame(
    stream: &mut SplitStream<WebSocket>,
    config: &GatewayConfig,
) -> Incoming {
    loop {
        let message = match stream.next().await {
            Some(Ok(message)) => message,
            Some(Err(e)) => {
                // Larger than the WebSocket layer reads at all: refused from the frame header,
                // before its payload is read.
                if is_too_large(e) {
                    return too_large(config);
                }
                tracing::debug!("client connection failed");
                return Incoming::Gone;
            }
            None => return Incoming::Gone,
        };
        return match message {
            Message::Text(text) => parse(text.as_str(), config.max_frame_bytes),
            Message::Binary(bytes) if bytes.len() > config.max_frame_bytes => too_large(config),
            Message::Binary(_) => Incoming::Bad(ServerFrame::error(
                ErrorCode::BinaryFrame,
                "binary frames are not part of the protocol: send JSON text frames",
                None,
            )),
            Message::Close(_) => Incoming::Gone,
            Message::Ping(_) | Message::Pong(_) => continue,
        };
    }
}

/// Whether `e` is the WebSocket layer refusing a frame or message over its size limit.
fn is_too_large(e: axum::Error) -> bool {
    let inner = e.into_inner();
    tracing::debug!(error = %inner, "client connection failed");
    matches!(
        inner.downcast_ref::<tungstenite::Error>(),
        Some(tungstenite::Error::Capacity(
            tungstenite::error::CapacityError::MessageTooLong { .. }
        ))
    )
}

fn too_large(config: &GatewayConfig) -> Incoming {
    Incoming::Bad(ServerFrame::error(
        ErrorCode::FrameTooLarge,
        format!(
            "frames are limited to {} KiB: send shorter messages",
            config.max_frame_bytes / 1024
        ),
        None,
    ))
}

/// Parses one text frame.
pub(crate) fn parse(text: &str, max_bytes: usize) -> Incoming {
    if text.len() > max_bytes {
        return too_large(&GatewayConfig {
            max_frame_bytes: max_bytes,
            ..GatewayConfig::default()
        });
    }
    let bad = |code, message: String, reference: Option<String>| {
        Incoming::Bad(ServerFrame::error(code, message, reference))
    };
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => {
            return bad(
                ErrorCode::MalformedFrame,
                format!("not valid JSON ({e}): send one JSON object per frame"),
                None,
            );
        }
    };
    let Some(kind) = value.get("type").and_then(serde_json::Value::as_str) else {
        return bad(
            ErrorCode::MalformedFrame,
            "a frame is a JSON object with a string \"type\"".into(),
            None,
        );
    };
    if kind.is_empty() || !CLIENT_FRAME_TYPES.contains(&kind) {
        let shown: String = kind.chars().take(40).collect();
        return bad(
            ErrorCode::UnknownFrame,
            format!(
                "unknown frame type \"{shown}\": see docs/protocol.md for the frames of version 1"
            ),
            None,
        );
    }
    let kind = kind.to_owned();
    // A note request is read as one, so a bad field is named as for any other frame (an untagged
    // variant would only say that nothing matched).
    let frame = if NoteRequest::TYPES.contains(&kind.as_str()) {
        serde_json::from_value::<NoteRequest>(value).map(ClientFrame::Note)
    } else {
        serde_json::from_value::<ClientFrame>(value)
    };
    match frame {
        Ok(frame) => Incoming::Frame(frame),
        Err(e) => {
            // A note request's own error names its field; any other frame's is serde's word
            // that no variant matched, so the schema says what is wrong instead.
            let fault = match NoteRequest::TYPES.contains(&kind.as_str()) {
                true => None,
                false => {
                    // Read again on this path only: the frame was consumed reading it.
                    let value = serde_json::from_str(text).unwrap_or_default();
                    crate::frame_fault::describe(&kind, &value)
                }
            };
            let said = fault.unwrap_or_else(|| e.to_string());
            bad(
                ErrorCode::MalformedFrame,
                format!("{kind}: {said}"),
                Some(kind),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: Result<ClientFrame, ErrorCode>) {
        let got = match parse(input, 64) {
            Incoming::Frame(f) => Ok(f),
            Incoming::Bad(ServerFrame::Error { code, .. }) => Err(code),
            other => panic!("{other:?}"),
        };
        assert_eq!(got, expected, "{input}");
    }

    #[test]
    fn parsing() {
        check(r#"{"type":"ping"}"#, Ok(ClientFrame::Ping));
        check("{", Err(ErrorCode::MalformedFrame));
        check("[1]", Err(ErrorCode::MalformedFrame));
        check(r#"{"type":7}"#, Err(ErrorCode::MalformedFrame));
        check(r#"{"type":"dance"}"#, Err(ErrorCode::UnknownFrame));
        check(r#"{"type":""}"#, Err(ErrorCode::UnknownFrame));
        check(r#"{"type":"send_turn"}"#, Err(ErrorCode::MalformedFrame));
        check(
            r#"{"type":"get_note","note_id":"n"}"#,
            Ok(ClientFrame::Note(NoteRequest::GetNote {
                note_id: "n".into(),
            })),
        );
        check(r#"{"type":"get_note"}"#, Err(ErrorCode::MalformedFrame));
        check(
            r#"{"type":"cancel_turn","session_id":""}"#,
            Err(ErrorCode::MalformedFrame),
        );
        check(
            &format!(r#"{{"type":"ping","x":"{}"}}"#, "a".repeat(64)),
            Err(ErrorCode::FrameTooLarge),
        );
    }
}
