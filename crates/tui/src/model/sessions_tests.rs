//! Finding sessions again, fed frames and keys as the gateway and the user would: an unknown
//! `--session` says so, `/switch` errors name `/sessions`, `--continue`, `/new` on an empty one.

use std::time::Duration;

use types::{ClientFrame, ErrorCode, ServerFrame, SessionSummary, TurnEvent, Usage, UserId};

use super::tests::{online, sid, started, summary, tid, typed};
use super::*;

fn hello_on(app: &mut App, session: SessionSummary) -> Vec<ClientFrame> {
    app.on_conn(ConnEvent::Frame(ServerFrame::HelloOk {
        user_id: UserId::parse("alice").expect("user"),
        session,
        protocol_version: 1,
        model: None,
    }))
}

fn errors(app: &App) -> Vec<String> {
    app.entries
        .iter()
        .filter_map(|e| match e {
            Entry::Notice {
                level: Level::Error,
                text,
            } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn an_unknown_session_flag_says_so_and_starts_a_new_one() {
    let mut app = App::new(
        UserId::parse("alice").expect("user"),
        Some(sid("s-nope")),
        None,
    );
    assert_eq!(app.resume().session, Some(sid("s-nope")));
    app.on_conn(ConnEvent::Connecting { attempt: 1 });
    app.on_frame(ServerFrame::error(
        ErrorCode::SessionNotFound,
        "no session s-nope for this user: list_sessions shows yours",
        Some("hello".into()),
    ));
    assert_eq!(app.resume().session, None, "the next attempt starts afresh");
    app.on_conn(ConnEvent::Offline {
        reason: "closed".into(),
        retry_in: Duration::from_millis(250),
    });
    hello_on(&mut app, summary("s-new", 0, 0));
    assert_eq!(
        errors(&app),
        vec![
            "There is no session s-nope for alice: a new one was started instead. /sessions lists yours."
        ]
    );
}

#[test]
fn switch_errors_name_the_sessions_command_not_a_frame() {
    let mut app = online();
    typed(&mut app, "/switch 7");
    let sent = typed(&mut app, "/switch s-gone");
    assert_eq!(
        sent,
        vec![ClientFrame::SwitchSession {
            session_id: sid("s-gone"),
            last_seq: None
        }]
    );
    app.on_frame(ServerFrame::error(
        ErrorCode::SessionNotFound,
        "no session s-gone for this user: list_sessions shows yours",
        Some("switch_session".into()),
    ));
    let errors = errors(&app);
    assert_eq!(errors.len(), 2, "{errors:?}");
    for error in errors {
        assert!(error.contains("/sessions"), "{error}");
        assert!(!error.contains("list_sessions"), "{error}");
    }
}

#[test]
fn continue_switches_to_the_most_recent_conversation() {
    let mut app = App::new(UserId::parse("alice").expect("user"), None, None);
    app.continue_last = true;
    let sent = hello_on(&mut app, summary("s-new", 0, 0));
    // The latest conversation is looked for; the new session's model and spend asked quietly.
    assert_eq!(
        sent,
        vec![
            ClientFrame::ListSessions,
            ClientFrame::GetUsage {
                session_id: sid("s-new")
            }
        ]
    );
    let sent = app.on_frame(ServerFrame::SessionList {
        sessions: vec![
            summary("s-new", 0, 0),
            summary("s-empty", 0, 0),
            summary("s-recent", 4, 0),
            summary("s-old", 9, 0),
        ],
    });
    assert_eq!(
        sent,
        vec![ClientFrame::SwitchSession {
            session_id: sid("s-recent"),
            last_seq: None
        }]
    );
    // Only once: a reconnect later does not switch again.
    assert!(!app.continue_last);

    // Nothing to continue: said so, and the new session stays.
    let mut app = App::new(UserId::parse("alice").expect("user"), None, None);
    app.continue_last = true;
    hello_on(&mut app, summary("s-new", 0, 0));
    let sent = app.on_frame(ServerFrame::SessionList {
        sessions: vec![summary("s-new", 0, 0)],
    });
    assert!(sent.is_empty());
    assert!(app.entries.contains(&Entry::info(
        "No earlier conversation to continue: this is a new session."
    )));
}

#[test]
fn new_on_an_empty_session_does_not_pile_up_another() {
    let mut app = online();
    assert!(typed(&mut app, "/new").is_empty());
    assert_eq!(
        typed(&mut app, "/new Taxes"),
        vec![ClientFrame::NewSession {
            title: Some("Taxes".into())
        }]
    );
    typed(&mut app, "hello");
    app.on_frame(started(1));
    app.on_frame(ServerFrame::Turn {
        seq: 2,
        session_id: sid("s-1"),
        turn_id: tid("t-1"),
        event: TurnEvent::TurnCompleted {
            message: "hi".into(),
            usage: Usage::default(),
        },
    });
    assert_eq!(
        typed(&mut app, "/new"),
        vec![ClientFrame::NewSession { title: None }]
    );
}

#[test]
fn the_continue_command_opens_the_most_recent_other_conversation() {
    let mut app = online();
    typed(&mut app, "hello");
    assert_eq!(
        typed(&mut app, "/continue"),
        vec![ClientFrame::ListSessions]
    );
    let sent = app.on_frame(ServerFrame::SessionList {
        sessions: vec![summary("s-1", 2, 0), summary("s-old", 9, 0)],
    });
    assert_eq!(
        sent,
        vec![ClientFrame::SwitchSession {
            session_id: sid("s-old"),
            last_seq: None
        }]
    );
    assert_eq!(typed(&mut app, "/last"), vec![ClientFrame::ListSessions]);
    assert!(
        app.on_frame(ServerFrame::SessionList {
            sessions: vec![summary("s-1", 2, 0)],
        })
        .is_empty()
    );
    assert!(app.entries.contains(&Entry::info(
        "No other conversation to continue: /sessions lists yours."
    )));
}
