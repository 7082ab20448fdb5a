//! Snapshot tests of whole screens, drawn with ratatui's `TestBackend`.
//!
//! Each screen is compared with `tests/snapshots/<name>.txt` (the text of every cell, one line
//! per row, trailing spaces kept visible by a `|` at the end). Run with `UPDATE_SNAPSHOTS=1` to
//! rewrite them after an intended change, and review the diff.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::path::PathBuf;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tui::{App, ConnEvent};
use types::{
    ClientFrame, NoteChange, NoteRequest, NoteView, ServerFrame, SessionId, SessionSummary,
    TurnEvent, TurnId, Usage, UserId,
};

pub(crate) fn screen(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let mut drawn = None;
    terminal.draw(|f| drawn = Some(tui::draw(f, app))).unwrap();
    let drawn = drawn.unwrap();
    app.set_layout(drawn.page, drawn.max_scroll, drawn.scroll);
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            out.push_str(buffer[(x, y)].symbol());
        }
        out.push_str("|\n");
    }
    out
}

pub(crate) fn check(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.txt"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} missing: run with UPDATE_SNAPSHOTS=1", path.display()));
    assert!(
        expected == actual,
        "screen {name} differs from {}\n--- expected\n{expected}\n--- actual\n{actual}",
        path.display()
    );
}

pub(crate) fn sid() -> SessionId {
    SessionId::parse("s-0b1c2d3e").unwrap()
}

pub(crate) fn tid() -> TurnId {
    TurnId::parse("t-7f3a").unwrap()
}

pub(crate) fn online(title: Option<&str>) -> App {
    let mut app = App::new(
        UserId::parse("alice").unwrap(),
        None,
        Some("gpt-4o-mini".into()),
    );
    app.on_conn(ConnEvent::Frame(ServerFrame::HelloOk {
        user_id: UserId::parse("alice").unwrap(),
        session: SessionSummary {
            session_id: sid(),
            title: title.map(str::to_owned),
            created_at: "2025-01-01T09:00:00.000Z".into(),
            last_active_at: "2025-01-01T09:05:00.000Z".into(),
            messages: 0,
            active_turn: None,
            last_seq: 0,
        },
        protocol_version: 1,
        model: None,
    }));
    app.arm_delay = Duration::ZERO;
    app
}

pub(crate) fn key(app: &mut App, code: KeyCode, modifiers: KeyModifiers) {
    app.on_key(KeyEvent::new(code, modifiers));
}

pub(crate) fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        key(app, KeyCode::Char(c), KeyModifiers::NONE);
    }
}

/// A turn: the user's message, a memory search, a save, and a Markdown reply in pieces.
fn conversation(app: &mut App, finish: bool) {
    type_text(app, "What do you know about my Lisbon trip?");
    key(app, KeyCode::Enter, KeyModifiers::NONE);
    let s = sid;
    let t = tid;
    let mut frames = vec![
        ServerFrame::TurnStarted {
            seq: 1,
            session_id: s(),
            turn_id: t(),
            client_turn_id: "c-1".into(),
        },
        ServerFrame::Turn { seq: 2, session_id: s(), turn_id: t(), event: TurnEvent::ToolStarted { call_id: "call_1".into(), name: "memory_search".into(), arguments: r#"{"query":"Lisbon trip"}"#.into() } },
        ServerFrame::Turn { seq: 3, session_id: s(), turn_id: t(), event: TurnEvent::ToolFinished { call_id: "call_1".into(), name: "memory_search".into(), ok: true, summary: r#"[{"note_id":"note-1","text":"loves the trams"},{"note_id":"note-2","text":"May"}]"#.into(), duration_ms: 4, changes: Vec::new() } },
        ServerFrame::Turn { seq: 4, session_id: s(), turn_id: t(), event: TurnEvent::ToolStarted { call_id: "call_2".into(), name: "memory_save".into(), arguments: r#"{"content":"Asked about the Lisbon trip"}"#.into() } },
        ServerFrame::Turn { seq: 5, session_id: s(), turn_id: t(), event: TurnEvent::ToolFinished { call_id: "call_2".into(), name: "memory_save".into(), ok: true, summary: r#"{"message":"Saved. Use this note_id with memory_update or memory_delete to change or remove it.","note_id":"note-9a8b7c6d-…"#.into(), duration_ms: 7, changes: Vec::new() } },
    ];
    let reply = [
        "## Your Lisbon trip\n\nYou told me you **love** the ",
        "*trams*. Notes:\n\n- going in May\n- staying near ",
        "`Alfama`\n\n```sh\nopen https://carris.pt\n```\nEnjoy!",
    ];
    for (i, text) in reply.iter().enumerate() {
        frames.push(ServerFrame::Turn {
            seq: 6 + i as u64,
            session_id: s(),
            turn_id: t(),
            event: TurnEvent::AssistantDelta {
                text: (*text).into(),
            },
        });
    }
    if finish {
        frames.push(ServerFrame::Turn {
            seq: 9,
            session_id: s(),
            turn_id: t(),
            event: TurnEvent::TurnCompleted {
                message: reply.concat(),
                usage: Usage {
                    prompt_tokens: 812,
                    completion_tokens: 23,
                },
            },
        });
    }
    for frame in frames {
        app.on_frame(frame);
    }
}

#[test]
fn streaming_reply_with_tools_and_markdown() {
    let mut app = online(Some("Trip planning"));
    conversation(&mut app, false);
    check("streaming", &screen(&mut app, 80, 26));
}

#[test]
fn finished_turn_with_a_draft_in_the_input() {
    let mut app = online(Some("Trip planning"));
    conversation(&mut app, true);
    type_text(&mut app, "And the hotel?");
    key(&mut app, KeyCode::Enter, KeyModifiers::ALT);
    type_text(&mut app, "Which street was it?");
    check("finished", &screen(&mut app, 80, 26));
}

#[test]
fn tool_details_toggle() {
    let mut app = online(None);
    conversation(&mut app, true);
    key(&mut app, KeyCode::Char('t'), KeyModifiers::CONTROL);
    check("details", &screen(&mut app, 80, 40));
}

#[test]
fn narrow_terminal_wraps_everything() {
    let mut app = online(Some("Trip planning"));
    conversation(&mut app, true);
    check("narrow", &screen(&mut app, 36, 20));
    // And back to wide: the same model draws at any size.
    let wide = screen(&mut app, 80, 26);
    assert!(wide.contains("Your Lisbon trip"));
}

/// An app in a turn (another client's) whose `event` asks for approval.
fn asking(event: TurnEvent) -> App {
    let mut app = online(None);
    app.on_frame(ServerFrame::TurnStarted {
        seq: 1,
        session_id: sid(),
        turn_id: tid(),
        client_turn_id: "other".into(),
    });
    app.on_frame(ServerFrame::Turn {
        seq: 2,
        session_id: sid(),
        turn_id: tid(),
        event,
    });
    app
}

#[test]
fn approval_prompt() {
    let mut app = asking(TurnEvent::ApprovalRequested {
        call_id: "call_2".into(),
        name: "shell_exec".into(),
        arguments: r#"{"command":"rm -r tmp/build"}"#.into(),
        reason: None,
    });
    check("approval", &screen(&mut app, 80, 14));
    // Down picks the first answer; Enter without a choice would only have hinted.
    key(&mut app, KeyCode::Down, KeyModifiers::NONE);
    key(&mut app, KeyCode::Down, KeyModifiers::NONE);
    check("approval_session", &screen(&mut app, 80, 14));
}

/// A memory delete asked about after untrusted input shows why, with the note it would forget.
#[test]
fn approval_prompt_with_a_reason() {
    let mut app = asking(TurnEvent::ApprovalRequested {
        call_id: "call_3".into(),
        name: "memory_delete".into(),
        arguments: r#"{"note_id":"note-1"}"#.into(),
        reason: Some(
            "It would forget the memory «Alice lives in Lisbon», asked after the conversation \
             read a web page — text that can carry instructions the user never gave."
                .into(),
        ),
    });
    let shown = screen(&mut app, 80, 16);
    assert!(shown.contains("«Alice lives in Lisbon»"), "{shown}");
    check("approval_reason", &shown);
}

#[test]
fn offline_with_an_error() {
    let mut app = online(None);
    app.on_frame(ServerFrame::TurnStarted {
        seq: 1,
        session_id: sid(),
        turn_id: tid(),
        client_turn_id: "c-9".into(),
    });
    app.on_frame(ServerFrame::Turn {
        seq: 2,
        session_id: sid(),
        turn_id: tid(),
        event: TurnEvent::TurnFailed {
            reason: "the model call failed: check the provider settings".into(),
        },
    });
    app.on_conn(ConnEvent::Offline {
        reason: "the gateway closed the connection".into(),
        retry_in: Duration::from_secs(2),
    });
    check("offline", &screen(&mut app, 80, 12));
}

#[test]
fn retrying_model() {
    let mut app = online(Some("Trip planning"));
    app.on_frame(ServerFrame::TurnStarted {
        seq: 1,
        session_id: sid(),
        turn_id: tid(),
        client_turn_id: "c-9".into(),
    });
    app.on_frame(ServerFrame::Turn {
        seq: 2,
        session_id: sid(),
        turn_id: tid(),
        event: TurnEvent::ModelRetry {
            attempt: 2,
            max_attempts: 4,
            wait_ms: 800,
            reason: "timed out".into(),
        },
    });
    check("retrying", &screen(&mut app, 90, 6));
}

#[test]
fn help() {
    let mut app = online(None);
    type_text(&mut app, "/help");
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    check("help", &screen(&mut app, 100, 30));
}

#[test]
fn scrolling_back() {
    let mut app = online(None);
    conversation(&mut app, true);
    screen(&mut app, 80, 12);
    key(&mut app, KeyCode::PageUp, KeyModifiers::NONE);
    check("scrolled", &screen(&mut app, 80, 12));
}

#[test]
fn tiny_terminals_do_not_panic() {
    let mut app = online(None);
    conversation(&mut app, false);
    type_text(&mut app, "some draft text that is long");
    for (w, h) in [(1, 1), (2, 3), (5, 2), (10, 4), (0, 0), (3, 40)] {
        screen(&mut app, w, h);
    }
}

pub(crate) const NOTE_A: &str = "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f";
pub(crate) const NOTE_B: &str = "note-0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";

pub(crate) fn note(id: &str, text: &str, category: Option<&str>) -> NoteView {
    NoteView {
        note_id: id.into(),
        text: text.into(),
        edit_token: format!("v-{}", text.len()),
        category: category.map(str::to_owned),
        tags: Vec::new(),
        created_at: "2025-01-01T09:00:00.000Z".into(),
        updated_at: "2025-01-02T10:00:00.000Z".into(),
        provenance: None,
        confirmed_text: None,
    }
}

/// Types a line and presses Enter; returns the frames the app sends.
pub(crate) fn command(app: &mut App, line: &str) -> Vec<ClientFrame> {
    type_text(app, line);
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE))
}

#[test]
fn memory_list_browse_and_edit_with_undo() {
    let mut app = online(Some("Trip planning"));
    assert_eq!(
        command(&mut app, "/memory preference"),
        [ClientFrame::Note(NoteRequest::ListNotes {
            category: Some("preference".into()),
            cursor: None,
            limit: 20,
        })]
    );
    let tea = note(NOTE_B, "Drinks tea, never coffee", Some("preference"));
    app.on_frame(ServerFrame::NoteList {
        notes: vec![
            tea.clone(),
            note(
                NOTE_A,
                "Loves the trams in Lisbon, especially the old yellow number 28 through Alfama",
                Some("preference"),
            ),
        ],
        total: 3,
        next_cursor: Some("c1".into()),
    });
    check("memory_list", &screen(&mut app, 80, 20));
    assert_eq!(
        command(&mut app, "/memory more"),
        [ClientFrame::Note(NoteRequest::ListNotes {
            category: Some("preference".into()),
            cursor: Some("c1".into()),
            limit: 20,
        })]
    );

    // Edit note 1 at the version shown; the change gets a line, and undo puts the text back at
    // the version the edit produced.
    assert_eq!(
        command(&mut app, "/memory edit 1 Drinks green tea"),
        [ClientFrame::Note(NoteRequest::EditNote {
            note_id: NOTE_B.into(),
            content: "Drinks green tea".into(),
            edit_token: tea.edit_token.clone(),
        })]
    );
    let edited = note(NOTE_B, "Drinks green tea", Some("preference"));
    app.on_frame(ServerFrame::NoteEdited {
        note: edited.clone(),
    });
    assert_eq!(
        app.on_key(KeyEvent::new(KeyCode::Char('z'), KeyModifiers::CONTROL)),
        [ClientFrame::Note(NoteRequest::EditNote {
            note_id: NOTE_B.into(),
            content: tea.text.clone(),
            edit_token: edited.edit_token.clone(),
        })]
    );
    app.on_frame(ServerFrame::NoteEdited { note: tea });
    assert_eq!(app.memory_changes()[0].undo, tui::Undo::Done);
    check("memory_edit_undone", &screen(&mut app, 80, 20));
    // A number not in the list sends nothing.
    assert_eq!(command(&mut app, "/memory delete 7"), []);
}

#[test]
fn memory_changes_are_listed_after_the_turn_with_undo() {
    let mut app = online(Some("Trip planning"));
    type_text(&mut app, "I moved to Porto");
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    let (s, t) = (sid, tid);
    let call = |seq: u64, (id, name, args): (&str, &str, &str), summary: &str, changes| {
        [
            ServerFrame::Turn {
                seq,
                session_id: s(),
                turn_id: t(),
                event: TurnEvent::ToolStarted {
                    call_id: id.into(),
                    name: name.into(),
                    arguments: args.into(),
                },
            },
            ServerFrame::Turn {
                seq: seq + 1,
                session_id: s(),
                turn_id: t(),
                event: TurnEvent::ToolFinished {
                    call_id: id.into(),
                    name: name.into(),
                    ok: true,
                    summary: summary.into(),
                    duration_ms: 5,
                    changes,
                },
            },
        ]
    };
    let mut frames = vec![ServerFrame::TurnStarted {
        seq: 1,
        session_id: s(),
        turn_id: t(),
        client_turn_id: "c-1".into(),
    }];
    frames.extend(call(
        2,
        ("call_1", "memory_save", r#"{"content":"Lives in Porto"}"#),
        &format!("{NOTE_A}: Saved. Use this note_id with memory_update or memory_delete."),
        vec![NoteChange::Saved {
            note_id: NOTE_A.into(),
            text: "Lives in Porto".into(),
            path: None,
        }],
    ));
    frames.extend(call(
        4,
        (
            "call_2",
            "memory_delete",
            &format!(r#"{{"note_id":"{NOTE_B}"}}"#),
        ),
        &format!("{NOTE_B}: Deleted."),
        vec![NoteChange::Deleted {
            note_id: NOTE_B.into(),
            path: None,
        }],
    ));
    frames.push(ServerFrame::Turn {
        seq: 6,
        session_id: s(),
        turn_id: t(),
        event: TurnEvent::TurnCompleted {
            message: "Noted: you live in Porto now.".into(),
            usage: Usage {
                prompt_tokens: 90,
                completion_tokens: 9,
            },
        },
    });
    for frame in frames {
        app.on_frame(frame);
    }
    check("memory_changes", &screen(&mut app, 80, 20));
    // The save is taken back by deleting the note, once its history shows it unchanged.
    assert_eq!(
        command(&mut app, "/undo 1"),
        [ClientFrame::Note(NoteRequest::NoteHistory {
            note_id: NOTE_A.into()
        })]
    );
    assert_eq!(
        app.on_frame(ServerFrame::NoteVersions {
            note_id: NOTE_A.into(),
            versions: vec![types::NoteVersionView {
                version: 1,
                text: "Lives in Porto".into(),
                edit_token: "v-1".into(),
                category: None,
                tags: Vec::new(),
                saved_at: "2025-01-01T09:00:00.000Z".into(),
                replaced_at: None,
                provenance: None,
            }],
            deleted_at: None,
            purge_after: None,
        }),
        [ClientFrame::Note(NoteRequest::DeleteNote {
            note_id: NOTE_A.into()
        })]
    );
    app.on_frame(ServerFrame::NoteDeleted {
        note_id: NOTE_A.into(),
    });
    assert_eq!(app.memory_changes()[0].undo, tui::Undo::Done);
    // The agent's delete is taken back by restoring the note.
    assert_eq!(
        command(&mut app, "/undo 2"),
        [ClientFrame::Note(NoteRequest::RestoreNote {
            note_id: NOTE_B.into(),
            version: None
        })]
    );
    app.on_frame(ServerFrame::NoteRestored {
        note: note(NOTE_B, "Works at the harbour", None),
    });
    assert_eq!(app.memory_changes()[1].undo, tui::Undo::Done);
    assert_eq!(command(&mut app, "/undo 2"), []);
    check("memory_change_undone", &screen(&mut app, 80, 20));
}
