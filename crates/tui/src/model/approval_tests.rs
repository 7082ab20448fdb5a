//! The approval prompt, fed keys as a user would: an explicit choice confirmed with Enter,
//! words typed into it answer nothing, keys pressed as it appears do not count.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use types::{ClientFrame, ServerFrame, TurnEvent, UserId};

use super::tests::{key, online, sid, started, summary, tid};
use super::*;

fn asking() -> App {
    let mut app = online();
    app.on_frame(started(1));
    app.on_frame(ServerFrame::Turn {
        seq: 2,
        session_id: sid("s-1"),
        turn_id: tid("t-1"),
        event: TurnEvent::ApprovalRequested {
            call_id: "call_2".into(),
            name: "shell_exec".into(),
            arguments: r#"{"command":"ls"}"#.into(),
            reason: None,
        },
    });
    assert_eq!(app.turn, TurnState::Approval);
    app
}

fn approve(approved: bool, scope: Option<types::ApprovalScope>) -> Vec<ClientFrame> {
    vec![ClientFrame::Approve {
        call_id: "call_2".into(),
        approved,
        scope,
    }]
}

#[test]
fn an_approval_is_an_explicit_choice_confirmed_with_enter() {
    use types::ApprovalScope::Session;
    let check = |keys: &[KeyCode], expected: Vec<ClientFrame>| {
        let mut app = asking();
        let mut sent = Vec::new();
        for code in keys {
            sent.extend(app.on_key(key(*code)));
        }
        assert_eq!(sent, expected, "keys {keys:?}");
        assert!(
            app.editor.is_empty(),
            "keys {keys:?} went to the prompt, not the input"
        );
        assert_eq!(app.approval.is_none(), !sent.is_empty(), "keys {keys:?}");
    };
    let c = KeyCode::Char;
    // Typing words answers nothing: letters only pick, Enter confirms.
    check(&[c('w'), c('h'), c('y')], vec![]);
    check(&[c('w'), c('h'), c('y'), KeyCode::Enter], vec![]);
    check(&[c('y'), c('e'), c('s'), KeyCode::Enter], vec![]);
    check(&[c('n'), c('o'), c('p'), c('e'), KeyCode::Enter], vec![]);
    check(&[c('y')], vec![]);
    // After the hint, a choice counts again.
    check(
        &[
            c('w'),
            c('h'),
            c('y'),
            KeyCode::Enter,
            c('n'),
            KeyCode::Enter,
        ],
        approve(false, None),
    );
    check(&[c('y'), KeyCode::Enter], approve(true, None));
    check(&[c('1'), KeyCode::Enter], approve(true, None));
    check(&[c('a'), KeyCode::Enter], approve(true, Some(Session)));
    check(&[c('2'), KeyCode::Enter], approve(true, Some(Session)));
    check(&[c('n'), KeyCode::Enter], approve(false, None));
    check(&[c('3'), KeyCode::Enter], approve(false, None));
    check(&[c('y'), c('n'), KeyCode::Enter], approve(false, None));
    // Enter without a choice only hints.
    check(&[KeyCode::Enter], vec![]);
    check(&[KeyCode::Enter, KeyCode::Enter], vec![]);
    // Up/Down cycle.
    check(&[KeyCode::Down, KeyCode::Enter], approve(true, None));
    check(
        &[KeyCode::Down, KeyCode::Down, KeyCode::Enter],
        approve(true, Some(Session)),
    );
    check(&[KeyCode::Up, KeyCode::Enter], approve(false, None));
    check(
        &[KeyCode::Down, KeyCode::Up, KeyCode::Enter],
        approve(false, None),
    );
    // Esc declines at once.
    check(&[KeyCode::Esc], approve(false, None));
}

#[test]
fn enter_without_a_choice_shows_how_to_choose() {
    let mut app = asking();
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
    assert!(app.approval.as_ref().is_some_and(|a| a.hint));
    app.on_key(key(KeyCode::Char('a')));
    assert_eq!(
        app.approval.as_ref().map(|a| (a.hint, a.choice)),
        Some((false, Some(ApprovalChoice::Session)))
    );
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.turn, TurnState::Thinking);
    assert!(app.entries.iter().any(|e| matches!(
        e,
        Entry::Approval {
            answer: Some(ApprovalChoice::Session),
            ..
        }
    )));
}

#[test]
fn keys_pressed_as_the_prompt_appears_do_not_count() {
    let mut app = asking();
    // As if the prompt had only just appeared: nothing counts, not even Enter after a choice.
    app.arm_delay = Duration::from_secs(3600);
    for code in [KeyCode::Char('y'), KeyCode::Enter, KeyCode::Esc] {
        assert!(app.on_key(key(code)).is_empty());
    }
    assert_eq!(app.approval.as_ref().and_then(|a| a.choice), None);
    assert!(app.editor.is_empty());
    // Once armed, the same keys answer.
    app.arm_delay = Duration::ZERO;
    app.on_key(key(KeyCode::Char('y')));
    assert_eq!(app.on_key(key(KeyCode::Enter)), approve(true, None));
}

#[test]
fn the_status_bar_model_comes_from_the_gateway() {
    let mut app = App::new(
        UserId::parse("alice").expect("user"),
        None,
        Some("flag-model".into()),
    );
    app.on_conn(ConnEvent::Frame(ServerFrame::HelloOk {
        user_id: UserId::parse("alice").expect("user"),
        session: summary("s-1", 0, 0),
        protocol_version: 1,
        model: Some("gpt-4o-mini".into()),
    }));
    assert_eq!(app.model.as_deref(), Some("gpt-4o-mini"));
}

#[test]
fn control_keys_at_the_prompt_do_not_edit_the_hidden_input() {
    let ctrl = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
    let mut app = asking();
    app.editor.insert_str("draft");
    for c in ['u', 'w', 'k', 'j'] {
        assert!(app.on_key(ctrl(c)).is_empty());
    }
    assert_eq!(app.editor.text(), "draft");
    assert!(app.approval.is_some());
    // Ctrl+C still stops the turn.
    assert_eq!(
        app.on_key(ctrl('c')),
        vec![ClientFrame::CancelTurn {
            session_id: sid("s-1")
        }]
    );
}
