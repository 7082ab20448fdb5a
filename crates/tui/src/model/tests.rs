//! The reducer, fed frames and keys as the gateway and the user would.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use types::{
    ClientFrame, ErrorCode, HistoryEvent, Message, ServerFrame, SessionId, SessionSummary,
    TurnEvent, TurnId, Usage, UserId,
};

use super::*;

pub(super) fn sid(s: &str) -> SessionId {
    SessionId::parse(s).expect("session id")
}

pub(super) fn tid(s: &str) -> TurnId {
    TurnId::parse(s).expect("turn id")
}

pub(super) fn summary(id: &str, messages: u64, last_seq: u64) -> SessionSummary {
    SessionSummary {
        session_id: sid(id),
        title: None,
        created_at: "2025-01-01T09:00:00.000Z".into(),
        last_active_at: "2025-01-01T09:05:00.000Z".into(),
        messages,
        active_turn: None,
        last_seq,
    }
}

fn hello_ok(id: &str, last_seq: u64) -> ConnEvent {
    ConnEvent::Frame(ServerFrame::HelloOk {
        user_id: UserId::parse("alice").expect("user"),
        session: summary(id, 0, last_seq),
        protocol_version: 1,
        model: None,
    })
}

fn delta(seq: u64, text: &str) -> ServerFrame {
    ServerFrame::Turn {
        seq,
        session_id: sid("s-1"),
        turn_id: tid("t-1"),
        event: TurnEvent::AssistantDelta { text: text.into() },
    }
}

pub(super) fn started(seq: u64) -> ServerFrame {
    ServerFrame::TurnStarted {
        seq,
        session_id: sid("s-1"),
        turn_id: tid("t-1"),
        client_turn_id: "c-1".into(),
    }
}

fn completed(seq: u64, message: &str) -> ServerFrame {
    ServerFrame::Turn {
        seq,
        session_id: sid("s-1"),
        turn_id: tid("t-1"),
        event: TurnEvent::TurnCompleted {
            message: message.into(),
            usage: Usage {
                prompt_tokens: 10,
                completion_tokens: 5,
            },
        },
    }
}

pub(super) fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

pub(super) fn online() -> App {
    let mut app = App::new(UserId::parse("alice").expect("user"), None, None);
    app.arm_delay = Duration::ZERO;
    app.on_conn(hello_ok("s-1", 0));
    app
}

pub(super) fn typed(app: &mut App, text: &str) -> Vec<ClientFrame> {
    for c in text.chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
    app.on_key(key(KeyCode::Enter))
}

fn assistant_texts(app: &App) -> Vec<String> {
    app.entries
        .iter()
        .filter_map(|e| match e {
            Entry::Assistant { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn sending_a_message_and_streaming_the_reply() {
    let mut app = online();
    let sent = typed(&mut app, "hi there");
    assert_eq!(
        sent,
        vec![ClientFrame::SendTurn {
            session_id: sid("s-1"),
            text: "hi there".into(),
            client_turn_id: "c-1".into()
        }]
    );
    assert_eq!(app.turn, TurnState::Sending);
    for frame in [started(1), delta(2, "Hel"), delta(3, "lo **you**")] {
        app.on_frame(frame);
    }
    assert_eq!(app.turn, TurnState::Writing);
    app.on_frame(completed(4, "Hello **you**"));
    assert_eq!(assistant_texts(&app), vec!["Hello **you**".to_owned()]);
    assert_eq!(app.turn, TurnState::Idle);
    assert_eq!(app.last_seq(), 4);
    assert_eq!(app.entries[1], Entry::User("hi there".into()));
}

#[test]
fn replayed_events_are_applied_once() {
    let mut app = online();
    typed(&mut app, "q");
    for frame in [started(1), delta(2, "one "), delta(3, "two ")] {
        app.on_frame(frame);
    }
    app.on_conn(ConnEvent::Offline {
        reason: "closed".into(),
        retry_in: Duration::from_millis(250),
    });
    assert_eq!(
        app.resume(),
        Resume {
            session: Some(sid("s-1")),
            last_seq: Some(3)
        }
    );
    app.on_conn(hello_ok("s-1", 5));
    // The gateway replays after last_seq, but a duplicate must not show twice either.
    for frame in [delta(3, "two "), delta(4, "three"), completed(5, "")] {
        app.on_frame(frame);
    }
    assert_eq!(assistant_texts(&app), vec!["one two three".to_owned()]);
    assert!(app.entries.contains(&Entry::info("Reconnected.")));
}

#[test]
fn a_restarted_gateway_resets_the_numbering() {
    let mut app = online();
    typed(&mut app, "q");
    for frame in [started(1), delta(2, "cut")] {
        app.on_frame(frame);
    }
    app.on_conn(ConnEvent::Offline {
        reason: "closed".into(),
        retry_in: Duration::from_secs(1),
    });
    app.on_conn(hello_ok("s-1", 0));
    assert_eq!(app.turn, TurnState::Idle);
    assert_eq!(app.last_seq(), 0);
    // New numbering from 1 is accepted.
    typed(&mut app, "again");
    app.on_frame(ServerFrame::TurnStarted {
        seq: 1,
        session_id: sid("s-1"),
        turn_id: tid("t-2"),
        client_turn_id: "c-2".into(),
    });
    assert_eq!(app.turn, TurnState::Thinking);
}

#[test]
fn tool_activity_becomes_lines() {
    let mut app = online();
    app.on_frame(started(1));
    app.on_frame(ServerFrame::Turn {
        seq: 2,
        session_id: sid("s-1"),
        turn_id: tid("t-1"),
        event: TurnEvent::ToolStarted {
            call_id: "call_1".into(),
            name: "memory_search".into(),
            arguments: r#"{"query":"Lisbon"}"#.into(),
        },
    });
    assert_eq!(app.turn, TurnState::Tool("memory_search".into()));
    app.on_frame(ServerFrame::Turn {
        seq: 3,
        session_id: sid("s-1"),
        turn_id: tid("t-1"),
        event: TurnEvent::ToolFinished {
            call_id: "call_1".into(),
            name: "memory_search".into(),
            ok: true,
            summary: r#"[{"text":"trams"}]"#.into(),
            duration_ms: 4,
            changes: Vec::new(),
        },
    });
    let lines: Vec<String> = app
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::Tool {
                name,
                arguments,
                state,
                ..
            } => Some(tool_line::describe(name, arguments, state)),
            _ => None,
        })
        .collect();
    assert_eq!(lines, vec!["searched memory for \"Lisbon\": 1 result"]);
}

#[test]
fn events_of_other_sessions_are_ignored() {
    let mut app = online();
    app.on_frame(ServerFrame::Turn {
        seq: 1,
        session_id: sid("s-other"),
        turn_id: tid("t-9"),
        event: TurnEvent::AssistantDelta {
            text: "not mine".into(),
        },
    });
    assert_eq!(assistant_texts(&app), Vec::<String>::new());
    assert_eq!(app.last_seq(), 0);
}

#[test]
fn lagged_asks_for_a_resync_from_the_last_seen_seq() {
    let mut app = online();
    app.on_frame(started(1));
    app.on_frame(delta(2, "a"));
    let sent = app.on_frame(ServerFrame::Lagged {
        session_id: sid("s-1"),
        last_seq: 9,
    });
    assert_eq!(
        sent,
        vec![ClientFrame::Resync {
            session_id: sid("s-1"),
            after_seq: 2
        }]
    );
}

#[test]
fn commands_become_frames() {
    let mut app = online();
    assert_eq!(
        typed(&mut app, "/new Trip"),
        vec![ClientFrame::NewSession {
            title: Some("Trip".into())
        }]
    );
    assert_eq!(
        typed(&mut app, "/sessions"),
        vec![ClientFrame::ListSessions]
    );
    app.on_frame(ServerFrame::SessionList {
        sessions: vec![summary("s-1", 2, 0), summary("s-2", 4, 0)],
    });
    assert_eq!(
        typed(&mut app, "/switch 2"),
        vec![ClientFrame::SwitchSession {
            session_id: sid("s-2"),
            last_seq: None
        }]
    );
    assert_eq!(typed(&mut app, "/cancel"), Vec::<ClientFrame>::new());
    assert_eq!(
        app.entries.last(),
        Some(&Entry::info("Nothing is running."))
    );
    typed(&mut app, "/quit");
    assert!(app.quit);
}

#[test]
fn switching_loads_the_stored_history() {
    let mut app = online();
    let sent = app.on_frame(ServerFrame::SessionSwitched {
        session: summary("s-2", 3, 7),
    });
    assert_eq!(
        sent,
        vec![ClientFrame::GetHistory {
            session_id: sid("s-2"),
            before: None,
            limit: 50
        }]
    );
    let event = |number, message: Message| HistoryEvent {
        number,
        message,
        created_at: "2025-01-01T09:00:00.000Z".into(),
    };
    app.on_frame(ServerFrame::History {
        session_id: sid("s-2"),
        events: vec![
            event(1, Message::user("what do I like?")),
            event(2, Message::assistant("Trams.")),
        ],
        next_before: None,
    });
    assert_eq!(
        app.entries,
        vec![
            Entry::User("what do I like?".into()),
            Entry::Assistant {
                turn: None,
                text: "Trams.".into(),
                streaming: false
            },
            Entry::info("Switched to untitled session."),
        ]
    );
}

#[test]
fn a_refused_turn_frees_the_input_and_says_why() {
    let mut app = online();
    typed(&mut app, "hello");
    app.on_frame(ServerFrame::Error {
        code: ErrorCode::TurnInProgress,
        message: "this session is already running a turn".into(),
        reference: Some("c-1".into()),
    });
    assert_eq!(app.turn, TurnState::Idle);
    assert_eq!(
        app.entries.last(),
        Some(&Entry::error("this session is already running a turn"))
    );
}

#[test]
fn messages_wait_while_offline() {
    let mut app = App::new(UserId::parse("alice").expect("user"), None, None);
    assert_eq!(typed(&mut app, "hello"), Vec::<ClientFrame>::new());
    assert_eq!(app.editor.text(), "hello", "kept for later");
}

#[test]
fn no_key_panics() {
    let mut app = online();
    let codes = [
        KeyCode::Backspace,
        KeyCode::Delete,
        KeyCode::Left,
        KeyCode::Right,
        KeyCode::Up,
        KeyCode::Down,
        KeyCode::Home,
        KeyCode::End,
        KeyCode::PageUp,
        KeyCode::PageDown,
        KeyCode::Tab,
        KeyCode::Esc,
        KeyCode::F(5),
        KeyCode::Char('é'),
        KeyCode::Enter,
    ];
    for modifiers in [
        KeyModifiers::NONE,
        KeyModifiers::ALT,
        KeyModifiers::SHIFT,
        KeyModifiers::CONTROL,
    ] {
        for code in codes {
            app.on_key(KeyEvent::new(code, modifiers));
        }
    }
    app.on_paste("x\r\ny\u{1b}[31m");
}

#[test]
fn a_model_retry_shows_in_the_turn_state() {
    let mut app = online();
    typed(&mut app, "hi");
    app.on_frame(started(1));
    app.on_frame(ServerFrame::Turn {
        seq: 2,
        session_id: sid("s-1"),
        turn_id: tid("t-1"),
        event: TurnEvent::ModelRetry {
            attempt: 2,
            max_attempts: 4,
            wait_ms: 500,
            reason: "timed out".into(),
        },
    });
    assert_eq!(
        app.turn,
        TurnState::Retrying {
            attempt: 2,
            max_attempts: 4,
            reason: "timed out".into()
        }
    );
    app.on_frame(delta(3, "ok"));
    assert_eq!(app.turn, TurnState::Writing);
}
