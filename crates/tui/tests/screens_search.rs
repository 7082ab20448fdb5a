//! Snapshot tests of the TUI's searches saying how they read a query's words about time:
//! `/memory search` (`note_results`) and `/search` (`conversation_results`) show the reading the
//! gateway sends (`time`), and nothing of the kind when it sends none.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use types::{ClientFrame, ConversationHitView, NoteRequest, ServerFrame, TimeReadView};

use crate::screens::{NOTE_A, NOTE_B, check, command, note, online, screen};

fn reading(phrase: &str, read: &str) -> TimeReadView {
    TimeReadView {
        phrase: phrase.into(),
        from: None,
        until: Some("2026-05-03T00:00:00+02:00".into()),
        timezone: "Europe/Paris".into(),
        read: read.into(),
    }
}

const BEFORE_THE_TRIP: &str =
    "read \"before the trip\" as before 3 May 2026 (when \"Trip to Lisbon with Ana\" was saved)";

#[test]
fn note_and_conversation_searches_say_how_they_read_the_time() {
    let mut app = online(Some("Trip planning"));
    assert_eq!(
        command(&mut app, "/memory search sunscreen before the trip"),
        [ClientFrame::Note(NoteRequest::SearchNotes {
            query: "sunscreen before the trip".into(),
            limit: 20,
        })]
    );
    app.on_frame(ServerFrame::NoteResults {
        query: "sunscreen before the trip".into(),
        notes: vec![
            note(NOTE_A, "Packed sunscreen and a beach hat", None),
            note(NOTE_B, "Packed sunscreen and ski goggles", None),
        ],
        time: Some(reading("before the trip", BEFORE_THE_TRIP)),
    });
    assert_eq!(
        command(&mut app, "/search boxes since we moved"),
        [ClientFrame::SearchConversations {
            query: "boxes since we moved".into(),
            limit: 10,
        }]
    );
    app.on_frame(ServerFrame::ConversationResults {
        query: "boxes since we moved".into(),
        hits: vec![ConversationHitView {
            session_id: "chat-b".into(),
            title: Some("Moving".into()),
            seq: 4,
            speaker: "user".into(),
            text: "Unpacked the last boxes".into(),
            date: "2025-10-01T10:00:00.000Z".into(),
            context: Vec::new(),
        }],
        time: Some(reading(
            "since we moved",
            "read \"since we moved\" as from 15 September 2025 on",
        )),
    });
    let shown = screen(&mut app, 80, 24);
    check("memory_search_time", &shown);
    // The readings, as the screen wraps them.
    assert!(
        shown.contains("(read \"before the trip\" as before 3"),
        "{shown}"
    );
    assert!(shown.contains("from 15 September 2025 on):"), "{shown}");

    // No time in the words: no reading.
    let mut app = online(None);
    app.on_frame(ServerFrame::NoteResults {
        query: "sunscreen".into(),
        notes: vec![note(NOTE_A, "Packed sunscreen and a beach hat", None)],
        time: None,
    });
    app.on_frame(ServerFrame::ConversationResults {
        query: "boxes".into(),
        hits: Vec::new(),
        time: None,
    });
    let plain = screen(&mut app, 80, 24);
    assert!(plain.contains("Notes matching \"sunscreen\":"), "{plain}");
    assert!(
        plain.contains("Nothing in your past conversations matches \"boxes\"."),
        "{plain}"
    );
    assert!(!plain.contains("read \""), "{plain}");
}
