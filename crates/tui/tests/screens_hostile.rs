//! Text the model, a web page or a command chose — in a session title, a shell command and its
//! output, a tool's details, the reply, a listed note and the running tool's name in the status
//! bar — carrying OSC 52 (clipboard), clear screen, a window title, a one-character C1 CSI and a
//! bidi override: every cell the TUI draws shows them as escapes, none is sent to the terminal
//! as itself.

#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use crossterm::event::{KeyCode, KeyModifiers};
use types::{ServerFrame, TurnEvent};

use crate::screens::{NOTE_A, check, key, note, online, screen, sid, tid};

const OSC52: &str = "\u{1b}]52;c;cm0gLXJmIH4=\u{7}";
const CLEAR: &str = "\u{1b}[2J\u{1b}[H";

#[test]
fn control_sequences_from_outside_are_shown_not_sent() {
    let mut app = online(Some(&format!("Plan{CLEAR}\u{1b}]0;owned\u{7}")));
    let frames = [
        ServerFrame::TurnStarted {
            seq: 1,
            session_id: sid(),
            turn_id: tid(),
            client_turn_id: "other".into(),
        },
        ServerFrame::Turn {
            seq: 2,
            session_id: sid(),
            turn_id: tid(),
            event: TurnEvent::ToolStarted {
                call_id: "call_1".into(),
                name: "shell_exec".into(),
                arguments: format!(r#"{{"command":"printf '{OSC52}'"}}"#),
            },
        },
        ServerFrame::Turn {
            seq: 3,
            session_id: sid(),
            turn_id: tid(),
            event: TurnEvent::ToolFinished {
                call_id: "call_1".into(),
                name: "shell_exec".into(),
                ok: true,
                summary: format!("exit 0\n{OSC52}{CLEAR}\u{9b}31mred\rover \u{202e}txt.exe"),
                duration_ms: 3,
                changes: Vec::new(),
            },
        },
        ServerFrame::Turn {
            seq: 4,
            session_id: sid(),
            turn_id: tid(),
            event: TurnEvent::AssistantDelta {
                text: format!("Done{CLEAR}."),
            },
        },
        ServerFrame::Turn {
            seq: 5,
            session_id: sid(),
            turn_id: tid(),
            event: TurnEvent::ApprovalRequested {
                call_id: "call_2".into(),
                name: "shell_exec".into(),
                arguments: format!(r#"{{"command":"echo {OSC52}"}}"#),
                reason: None,
            },
        },
    ];
    for frame in frames {
        app.on_frame(frame);
    }
    app.on_frame(ServerFrame::NoteList {
        notes: vec![note(
            NOTE_A,
            &format!("From a page{OSC52} \u{202e}kool"),
            None,
        )],
        total: 1,
        next_cursor: None,
    });
    key(&mut app, KeyCode::Char('t'), KeyModifiers::CONTROL);
    let drawn = screen(&mut app, 80, 30);
    let raw: Vec<char> = drawn
        .chars()
        .filter(|c| *c != '\n' && types::terminal::is_unsafe(*c))
        .collect();
    assert!(raw.is_empty(), "sent to the terminal raw: {raw:?}\n{drawn}");
    assert!(drawn.contains("\\x1b]52;c;"), "{drawn}");
    assert!(drawn.contains("\\u{202e}"), "{drawn}");
    check("hostile", &drawn);
}

/// The status bar names the running tool as the model called it — a name the model chose,
/// which need not be a tool at all — and how far it got: both are shown as escapes.
#[test]
fn a_tool_name_the_model_chose_is_shown_not_sent_in_the_status_bar() {
    let mut app = online(None);
    let name = format!("x{OSC52}{CLEAR}\u{9b}2J\u{202e}");
    let events = [
        TurnEvent::ToolStarted {
            call_id: "call_1".into(),
            name: name.clone(),
            arguments: "{}".into(),
        },
        TurnEvent::ToolProgress {
            call_id: "call_1".into(),
            name,
            progress: 1.0,
            total: Some(2.0),
            message: None,
        },
    ];
    app.on_frame(ServerFrame::TurnStarted {
        seq: 1,
        session_id: sid(),
        turn_id: tid(),
        client_turn_id: "other".into(),
    });
    for (seq, event) in (2..).zip(events) {
        app.on_frame(ServerFrame::Turn {
            seq,
            session_id: sid(),
            turn_id: tid(),
            event,
        });
        let drawn = screen(&mut app, 160, 8);
        let raw: Vec<char> = drawn
            .chars()
            .filter(|c| *c != '\n' && types::terminal::is_unsafe(*c))
            .collect();
        assert!(raw.is_empty(), "sent to the terminal raw: {raw:?}\n{drawn}");
        assert!(drawn.contains("running x\\x1b]52;c;"), "{drawn}");
    }
}
