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

/// `/search open <n>`: the hit's session is opened, its history paged back until the hit's
/// message is in, and the transcript scrolled so that the message, marked, starts at the top.
#[test]
fn search_open_pages_back_to_the_hit_and_scrolls_to_it() {
    use types::{HistoryEvent, Message, SessionId, SessionSummary};
    let mut app = online(None);
    let chat = SessionId::parse("chat-b").unwrap();
    let hit = ConversationHitView {
        session_id: "chat-b".into(),
        title: Some("Moving".into()),
        seq: 30,
        speaker: "user".into(),
        text: "Unpacked the last boxes".into(),
        date: "2025-10-01T10:00:00.000Z".into(),
        context: Vec::new(),
    };
    app.on_frame(ServerFrame::ConversationResults {
        query: "boxes".into(),
        hits: vec![hit],
        time: None,
    });
    assert_eq!(
        command(&mut app, "/search open 1"),
        [ClientFrame::SwitchSession {
            session_id: chat.clone(),
            last_seq: None,
        }]
    );
    let asked = app.on_frame(ServerFrame::SessionSwitched {
        session: SessionSummary {
            session_id: chat.clone(),
            title: Some("Moving".into()),
            created_at: "2025-10-01T09:00:00.000Z".into(),
            last_active_at: "2025-10-02T09:00:00.000Z".into(),
            messages: 120,
            active_turn: None,
            last_seq: 120,
        },
    });
    let page = |numbers: std::ops::RangeInclusive<u64>| -> Vec<HistoryEvent> {
        numbers
            .map(|n| HistoryEvent {
                number: n,
                message: match (n, n % 2) {
                    (30, _) => Message::user("Unpacked the last boxes"),
                    (_, 0) => Message::user(format!("message {n}")),
                    _ => Message::assistant(format!("reply {n}")),
                },
                created_at: "2025-10-01T10:00:00.000Z".into(),
            })
            .collect()
    };
    let get = |before: Option<u64>| ClientFrame::GetHistory {
        session_id: chat.clone(),
        before,
        limit: 50,
    };
    assert_eq!(asked, [get(None)]);
    // The newest page starts after the hit: the page before it is asked for, and so on.
    let asked = app.on_frame(ServerFrame::History {
        session_id: chat.clone(),
        events: page(71..=120),
        next_before: Some(71),
    });
    assert_eq!(asked, [get(Some(71))]);
    let asked = app.on_frame(ServerFrame::History {
        session_id: chat.clone(),
        events: page(21..=70),
        next_before: Some(21),
    });
    assert!(asked.is_empty(), "{asked:?}");
    let shown = screen(&mut app, 80, 16);
    check("search_open", &shown);
    let rows: Vec<&str> = shown.lines().collect();
    assert!(rows[0].starts_with("▶ found by /search"), "{shown}");
    assert!(rows[1].contains("Unpacked the last boxes"), "{shown}");
    assert!(shown.contains("↑ scrolled"), "{shown}");
    // An earlier page keeps the mark on the hit's message.
    assert_eq!(command(&mut app, "/history"), [get(Some(21))]);
    app.on_frame(ServerFrame::History {
        session_id: chat.clone(),
        events: page(1..=20),
        next_before: None,
    });
    assert_eq!(
        app.found_entry.and_then(|i| app.entries.get(i)),
        Some(&tui::Entry::User("Unpacked the last boxes".into()))
    );
    // Scrolling on from there works as usual; Ctrl+L goes back to the newest.
    crate::screens::key(
        &mut app,
        crossterm::event::KeyCode::Char('l'),
        crossterm::event::KeyModifiers::CONTROL,
    );
    let newest = screen(&mut app, 80, 16);
    assert!(newest.contains("reply 119"), "{newest}");
    assert!(!newest.contains("found by /search"), "{newest}");
}

/// A hit whose message is gone from its session (the history starts after it) is said so.
#[test]
fn search_open_says_when_the_hit_is_no_longer_there() {
    use types::{HistoryEvent, Message, SessionId, SessionSummary};
    let mut app = online(None);
    let chat = SessionId::parse("chat-b").unwrap();
    app.on_frame(ServerFrame::ConversationResults {
        query: "boxes".into(),
        hits: vec![ConversationHitView {
            session_id: "chat-b".into(),
            title: None,
            seq: 3,
            speaker: "user".into(),
            text: "Unpacked the last boxes".into(),
            date: "2025-10-01T10:00:00.000Z".into(),
            context: Vec::new(),
        }],
        time: None,
    });
    command(&mut app, "/search open 1");
    app.on_frame(ServerFrame::SessionSwitched {
        session: SessionSummary {
            session_id: chat.clone(),
            title: None,
            created_at: "2025-10-01T09:00:00.000Z".into(),
            last_active_at: "2025-10-02T09:00:00.000Z".into(),
            messages: 2,
            active_turn: None,
            last_seq: 6,
        },
    });
    let asked = app.on_frame(ServerFrame::History {
        session_id: chat,
        events: vec![HistoryEvent {
            number: 5,
            message: Message::user("hello"),
            created_at: "2025-10-01T10:00:00.000Z".into(),
        }],
        next_before: None,
    });
    assert!(asked.is_empty(), "{asked:?}");
    let shown = screen(&mut app, 80, 16);
    assert!(
        shown.contains("Message 3 is no longer in this conversation."),
        "{shown}"
    );
    assert!(!shown.contains("found by /search"), "{shown}");
}
