//! Authentication and protocol errors over real WebSocket connections.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::{Client, code, start, test_config, token_of};
use test_support::ScriptedLlm;
use types::{ClientFrame, ErrorCode, PROTOCOL_VERSION, ServerFrame, UserId};

fn hello(token: &str, user: &str, version: u32) -> ClientFrame {
    ClientFrame::Hello {
        protocol_version: version,
        token: token.into(),
        user_id: UserId::parse(user).unwrap(),
        session_id: None,
        last_seq: None,
    }
}

/// Sends `first` as the first frame; expects `error {code}` then a close.
async fn check_refused(first: &str, expected: ErrorCode) {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice", "bob"], &server, test_config()).await;
    let mut client = Client::connect(&gw).await;
    client.send_raw(first).await;
    let frame = client.recv().await;
    assert_eq!(code(&frame), expected, "{first}: {frame:?}");
    if let ServerFrame::Error { message, .. } = &frame {
        assert!(
            !message.contains(dir.path().to_str().unwrap()),
            "no host paths"
        );
    }
    client.expect_closed().await;
    gw.shutdown().await;
}

#[tokio::test]
async fn refusals() {
    let dir = tempfile::tempdir().unwrap();
    // Tokens are created on start; make them known up front for the table.
    let good = || token_of(dir.path(), "alice");
    let json = |f: &ClientFrame| serde_json::to_string(f).unwrap();
    let cases = [
        (
            json(&hello("wrong", "alice", PROTOCOL_VERSION)),
            ErrorCode::Unauthorized,
        ),
        (
            json(&hello(&"0".repeat(64), "alice", PROTOCOL_VERSION)),
            ErrorCode::Unauthorized,
        ),
        (
            json(&hello(&good(), "mallory", PROTOCOL_VERSION)),
            ErrorCode::Unauthorized,
        ),
        (
            json(&hello(&good(), "alice", 99)),
            ErrorCode::VersionMismatch,
        ),
        (json(&ClientFrame::Ping), ErrorCode::HelloExpected),
        ("{not json".to_owned(), ErrorCode::MalformedFrame),
        (r#"{"type":"hello"}"#.to_owned(), ErrorCode::MalformedFrame),
        // A user id that would read as a command-line option is not a user id.
        (
            json(&hello(&good(), "alice", PROTOCOL_VERSION)).replace("\"alice\"", "\"-alice\""),
            ErrorCode::MalformedFrame,
        ),
        (r#"{"type":"hola"}"#.to_owned(), ErrorCode::UnknownFrame),
    ];
    for (first, expected) in cases {
        check_refused(&first, expected).await;
    }
}

#[tokio::test]
async fn another_users_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice", "bob"], &server, test_config()).await;
    let mut client = Client::connect(&gw).await;
    let bobs = token_of(dir.path(), "bob");
    client.send(&hello(&bobs, "alice", PROTOCOL_VERSION)).await;
    assert_eq!(code(&client.recv().await), ErrorCode::Unauthorized);
    client.expect_closed().await;
    // Bob's own token works for bob.
    let (_bob, _) = Client::hello(&gw, dir.path(), "bob", None, None).await;
    gw.shutdown().await;
}

#[tokio::test]
async fn silent_client_is_closed_after_the_auth_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, test_config()).await;
    let mut client = Client::connect(&gw).await;
    assert_eq!(code(&client.recv().await), ErrorCode::AuthTimeout);
    client.expect_closed().await;
    gw.shutdown().await;
}

#[tokio::test]
async fn protocol_errors_keep_the_connection_up() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let gw = start(dir.path(), &["alice"], &server, test_config()).await;
    let (mut client, session) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    let cases = [
        ("{oops", ErrorCode::MalformedFrame),
        ("42", ErrorCode::MalformedFrame),
        (r#"{"type":"teleport"}"#, ErrorCode::UnknownFrame),
        (
            r#"{"type":"send_turn","text":"hi"}"#,
            ErrorCode::MalformedFrame,
        ),
        (
            r#"{"type":"get_history","session_id":"x","limit":0}"#,
            ErrorCode::InvalidRequest,
        ),
        (
            r#"{"type":"cancel_turn","session_id":"other"}"#,
            ErrorCode::WrongSession,
        ),
        (
            r#"{"type":"switch_session","session_id":"nope"}"#,
            ErrorCode::SessionNotFound,
        ),
        (
            r#"{"type":"approve","call_id":"c9","approved":true}"#,
            ErrorCode::ApprovalNotFound,
        ),
    ];
    for (raw, expected) in cases {
        client.send_raw(raw).await;
        assert_eq!(code(&client.recv().await), expected, "{raw}");
    }
    let again = hello(&token_of(dir.path(), "alice"), "alice", PROTOCOL_VERSION);
    client.send(&again).await;
    assert_eq!(code(&client.recv().await), ErrorCode::HelloExpected);
    client
        .send(&ClientFrame::CancelTurn {
            session_id: session.session_id.clone(),
        })
        .await;
    assert_eq!(code(&client.recv().await), ErrorCode::NoActiveTurn);
    client.send_turn(&session.session_id, "   ", "c1").await;
    assert_eq!(code(&client.recv().await), ErrorCode::InvalidRequest);
    client.send_binary(vec![1, 2, 3]).await;
    assert_eq!(code(&client.recv().await), ErrorCode::BinaryFrame);
    client.send(&ClientFrame::Ping).await;
    assert_eq!(client.recv().await, ServerFrame::Pong);

    // Over the frame limit: an error, then the connection closes.
    let huge = format!(
        r#"{{"type":"send_turn","session_id":"{}","text":"{}","client_turn_id":"c2"}}"#,
        session.session_id,
        "x".repeat(300 * 1024)
    );
    client.send_raw(&huge).await;
    assert_eq!(code(&client.recv().await), ErrorCode::FrameTooLarge);
    client.expect_closed().await;
    gw.shutdown().await;
}
