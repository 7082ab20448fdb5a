//! The gateway's searches say how they read a query's words about time: `note_results` and
//! `conversation_results` carry `time` (the span in the user's zone and the words that say it,
//! an event as anchor dated by the user's own memory), and carry none when the query names no
//! time. Real libSQL files, real WebSocket connections, the user in Paris.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly"
)]

use chrono::{DateTime, Utc};
use gateway::{Gateway, GatewayToken, UserAgent};
use memory::{ExportedNote, NoteMetadata};
use test_support::ScriptedLlm;
use types::{
    ClientFrame, Message, NoteId, NoteRequest, ServerFrame, SessionId, TimeReadView, UserId,
    WorkspacePaths,
};

use crate::common::{self, Client, provider, test_config};
use crate::notes::ask;

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

/// Alice's agent in Paris, with notes saved and things said on the days given.
async fn alice_in_paris(root: &std::path::Path, server: &ScriptedLlm) -> UserAgent {
    let ws = WorkspacePaths::new(root.join("alice"));
    for dir in types::WorkspaceDir::ALL {
        std::fs::create_dir_all(ws.dir(dir)).unwrap();
    }
    let token = GatewayToken::load_or_create(&ws.internal()).unwrap();
    let store = common::open_store(root, "alice").await;
    let alice = UserId::parse("alice").unwrap();
    let saved = [
        ("Trip to Lisbon with Ana", "2026-05-03T10:00:00Z"),
        ("Packed sunscreen and a beach hat", "2026-05-01T10:00:00Z"),
        ("Packed sunscreen and ski goggles", "2026-05-20T10:00:00Z"),
    ];
    let notes = saved
        .iter()
        .enumerate()
        .map(|(n, (content, when))| ExportedNote {
            note_id: NoteId::from_uuid_str(&format!("00000000-0000-4000-8000-00000000000{n}"))
                .unwrap(),
            content: (*content).into(),
            metadata: NoteMetadata::default(),
            created_at: at(when),
            updated_at: at(when),
        })
        .collect();
    store
        .import(&alice, None, notes, memory::Similar::Unchecked, None)
        .await
        .unwrap();
    let said = [
        (
            "chat-a",
            "We moved to Berlin, boxes everywhere",
            "2025-09-15T10:00:00Z",
        ),
        (
            "chat-b",
            "Unpacked the last boxes at last",
            "2025-10-01T10:00:00Z",
        ),
    ];
    for (chat, text, when) in said {
        store
            .sessions()
            .append_message_at(
                &SessionId::parse(chat).unwrap(),
                &alice,
                &Message::user(text),
                Some(at(when)),
            )
            .await
            .unwrap();
    }
    let paris = tools::resolve_timezone(Some("Europe/Paris")).unwrap();
    let runtime = common::runtime(&store, provider(server)).with_timezone(Some(paris));
    UserAgent::new(alice, token, ws, runtime)
}

fn search_notes(query: &str) -> ClientFrame {
    ClientFrame::Note(NoteRequest::SearchNotes {
        query: query.into(),
        limit: 5,
    })
}

#[tokio::test]
async fn note_and_conversation_results_say_how_the_time_was_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let server = ScriptedLlm::start().await;
    let mut gw = Gateway::new(test_config());
    gw.add_user(alice_in_paris(root, &server).await).unwrap();
    let gw = gw.start().await.unwrap();
    let (mut a, _) = Client::hello(&gw, root, "alice", None, None).await;

    match ask(&mut a, search_notes("packed sunscreen before the trip")).await {
        ServerFrame::NoteResults { notes, time, .. } => {
            assert_eq!(
                notes[0].text, "Packed sunscreen and a beach hat",
                "{notes:?}"
            );
            assert_eq!(
                time,
                Some(TimeReadView {
                    phrase: "before the trip".into(),
                    from: None,
                    until: Some("2026-05-03T00:00:00+02:00".into()),
                    timezone: "Europe/Paris".into(),
                    read: "read \"before the trip\" as before 3 May 2026 \
                           (when \"Trip to Lisbon with Ana\" was saved)"
                        .into(),
                })
            );
        }
        other => panic!("{other:?}"),
    }
    // After the trip: the other note first, read the other way.
    match ask(&mut a, search_notes("packed sunscreen after the trip")).await {
        ServerFrame::NoteResults { notes, time, .. } => {
            assert_eq!(
                notes[0].text, "Packed sunscreen and ski goggles",
                "{notes:?}"
            );
            let time = time.expect("a reading");
            assert_eq!(time.from.as_deref(), Some("2026-05-04T00:00:00+02:00"));
            assert_eq!(time.until, None);
        }
        other => panic!("{other:?}"),
    }
    // No time in the words, or an event no memory dates: no reading.
    for words in ["packed sunscreen", "packed sunscreen before the wedding"] {
        match ask(&mut a, search_notes(words)).await {
            ServerFrame::NoteResults { notes, time, .. } => {
                assert_eq!(time, None, "{words}");
                assert!(
                    notes[0].text.starts_with("Packed sunscreen"),
                    "{words}: {notes:?}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    // Past conversations: an event dated by what was said.
    a.send(&ClientFrame::SearchConversations {
        query: "boxes since we moved to Berlin".into(),
        limit: 5,
    })
    .await;
    match a.recv().await {
        ServerFrame::ConversationResults { hits, time, .. } => {
            assert!(!hits.is_empty());
            let time = time.expect("a reading");
            assert_eq!(
                (time.phrase.as_str(), time.from.as_deref()),
                (
                    "since we moved to Berlin",
                    Some("2025-09-15T00:00:00+02:00")
                )
            );
            assert_eq!(
                time.read,
                "read \"since we moved to Berlin\" as from 15 September 2025 on \
                 (when \"We moved to Berlin, boxes everywhere\" was said)"
            );
        }
        other => panic!("{other:?}"),
    }
    a.send(&ClientFrame::SearchConversations {
        query: "boxes".into(),
        limit: 5,
    })
    .await;
    match a.recv().await {
        ServerFrame::ConversationResults { hits, time, .. } => {
            assert_eq!(hits.len(), 2, "{hits:?}");
            assert_eq!(time, None);
        }
        other => panic!("{other:?}"),
    }
    gw.shutdown().await;
}
