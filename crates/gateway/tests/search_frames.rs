//! `search_conversations` over a real WebSocket, as a user or a careless client would use it:
//! two users on one gateway each find only what they said, every bad frame gets an error frame
//! naming what to fix and the connection stays up, and a hit's session opens for its user and
//! for no one else. Real libSQL files, the scripted model.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly"
)]

use gateway::{Gateway, GatewayToken, UserAgent};
use test_support::ScriptedLlm;
use types::{ClientFrame, ErrorCode, Message, ServerFrame, SessionId, UserId, WorkspacePaths};

use crate::common::{self, Client, provider, test_config};

/// `user`'s agent, who said `said` in conversation `chat`.
async fn who_said(
    root: &std::path::Path,
    server: &ScriptedLlm,
    user: &str,
    chat: &str,
    said: &str,
) -> UserAgent {
    let ws = WorkspacePaths::new(root.join(user));
    for dir in types::WorkspaceDir::ALL {
        std::fs::create_dir_all(ws.dir(dir)).unwrap();
    }
    let token = GatewayToken::load_or_create(&ws.internal()).unwrap();
    let store = common::open_store(root, user).await;
    let id = UserId::parse(user).unwrap();
    store
        .sessions()
        .append_message_at(
            &SessionId::parse(chat).unwrap(),
            &id,
            &Message::user(said),
            None,
        )
        .await
        .unwrap();
    UserAgent::new(id, token, ws, common::runtime(&store, provider(server)))
}

fn error_code(frame: &ServerFrame) -> (ErrorCode, String) {
    match frame {
        ServerFrame::Error { code, message, .. } => (*code, message.clone()),
        other => panic!("not an error: {other:?}"),
    }
}

#[tokio::test]
async fn searches_of_past_conversations_keep_to_their_user_and_refuse_bad_frames() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let server = ScriptedLlm::start().await;
    let mut gw = Gateway::new(test_config());
    gw.add_user(
        who_said(
            root,
            &server,
            "alice",
            "chat-alice",
            "Our dog Biscuit loves the beach",
        )
        .await,
    )
    .unwrap();
    gw.add_user(
        who_said(
            root,
            &server,
            "bob",
            "chat-bob",
            "Our dog Rex loves the beach",
        )
        .await,
    )
    .unwrap();
    let gw = gw.start().await.unwrap();
    let (mut a, _) = Client::hello(&gw, root, "alice", None, None).await;

    a.send(&ClientFrame::SearchConversations {
        query: "dog beach".into(),
        limit: 5,
    })
    .await;
    let hit = match a.recv().await {
        ServerFrame::ConversationResults { hits, .. } => {
            let texts: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
            assert_eq!(texts, ["Our dog Biscuit loves the beach"]);
            hits[0].clone()
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(
        (hit.session_id.as_str(), hit.speaker.as_str()),
        ("chat-alice", "user")
    );

    let long = format!(
        r#"{{"type":"search_conversations","query":"{}","limit":5}}"#,
        "dog ".repeat(1000)
    );
    let cases = [
        (
            r#"{"type":"search_conversations","query":"dog","limit":0}"#.to_owned(),
            ErrorCode::InvalidRequest,
            "limit",
        ),
        (
            r#"{"type":"search_conversations","query":"dog","limit":51}"#.to_owned(),
            ErrorCode::InvalidRequest,
            "limit",
        ),
        (
            r#"{"type":"search_conversations","query":"dog","limit":99999999999}"#.to_owned(),
            ErrorCode::InvalidRequest,
            "limit must be between 1 and 50",
        ),
        (
            r#"{"type":"search_conversations","query":"dog","limit":-1}"#.to_owned(),
            ErrorCode::MalformedFrame,
            "limit",
        ),
        (
            r#"{"type":"search_conversations","query":"dog","limit":"5"}"#.to_owned(),
            ErrorCode::MalformedFrame,
            "limit",
        ),
        (
            r#"{"type":"search_conversations","limit":5}"#.to_owned(),
            ErrorCode::MalformedFrame,
            "query",
        ),
        (
            r#"{"type":"search_conversations","query":null,"limit":5}"#.to_owned(),
            ErrorCode::MalformedFrame,
            "search_conversations",
        ),
        (
            r#"{"type":"search_conversations","query":"   ","limit":5}"#.to_owned(),
            ErrorCode::InvalidRequest,
            "words",
        ),
        (long, ErrorCode::InvalidRequest, "bytes"),
    ];
    for (raw, code, says) in cases {
        a.send_raw(&raw).await;
        let (got, message) = error_code(&a.recv().await);
        assert_eq!(got, code, "{raw}: {message}");
        assert!(message.contains(says), "{raw}: {message}");
    }

    // The hit's session opens for alice; bob's conversation does not exist for her.
    a.send(&ClientFrame::SwitchSession {
        session_id: SessionId::parse(&hit.session_id).unwrap(),
        last_seq: None,
    })
    .await;
    match a.recv().await {
        ServerFrame::SessionSwitched { session } => {
            assert_eq!(session.session_id.as_str(), "chat-alice");
        }
        other => panic!("{other:?}"),
    }
    a.send(&ClientFrame::SwitchSession {
        session_id: SessionId::parse("chat-bob").unwrap(),
        last_seq: None,
    })
    .await;
    assert_eq!(error_code(&a.recv().await).0, ErrorCode::SessionNotFound);
    a.send(&ClientFrame::Ping).await;
    assert_eq!(a.recv().await, ServerFrame::Pong);

    // Bob finds his own words only.
    let (mut b, _) = Client::hello(&gw, root, "bob", None, None).await;
    b.send(&ClientFrame::SearchConversations {
        query: "dog beach".into(),
        limit: 5,
    })
    .await;
    match b.recv().await {
        ServerFrame::ConversationResults { hits, .. } => {
            let texts: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
            assert_eq!(texts, ["Our dog Rex loves the beach"]);
        }
        other => panic!("{other:?}"),
    }
    gw.shutdown().await;
}
