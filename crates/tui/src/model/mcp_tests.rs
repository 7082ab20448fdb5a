//! The user's MCP servers and a call's progress, as the reducer applies them.

use types::{McpServerState, McpServerView, ServerFrame, TurnEvent};

use super::tests::{online, sid, started, tid};
use super::tool_calls::progress_text;
use super::{Entry, TurnState};

fn status(state: McpServerState, reason: Option<&str>) -> ServerFrame {
    ServerFrame::McpStatus {
        servers: vec![
            McpServerView {
                name: "files".into(),
                state,
                reason: reason.map(str::to_owned),
                tools: 4,
            },
            McpServerView {
                name: "web\u{1b}[2J".into(),
                state: McpServerState::Up,
                reason: None,
                tools: 1,
            },
        ],
    }
}

fn notices(app: &super::App) -> Vec<String> {
    app.entries
        .iter()
        .filter_map(|e| match e {
            Entry::Notice { text, .. } if text.starts_with("MCP") => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_server_going_down_and_back_is_said_once_each_and_named_while_down() {
    let mut app = online();
    app.on_frame(status(McpServerState::Up, None));
    assert!(notices(&app).is_empty());
    assert!(app.mcp_down().is_empty());
    app.on_frame(status(McpServerState::Down, Some("it stopped")));
    app.on_frame(status(McpServerState::Down, Some("it stopped")));
    assert_eq!(app.mcp_down(), vec!["files".to_owned()]);
    assert_eq!(
        notices(&app),
        vec![
            "MCP server files is down (it stopped); its tools answer that it is down until it is \
             back (it is restarted)."
        ]
    );
    app.on_frame(status(McpServerState::Up, None));
    assert!(app.mcp_down().is_empty());
    assert_eq!(
        notices(&app).last().unwrap(),
        "MCP server files is back up."
    );
    assert_eq!(notices(&app).len(), 2);
}

#[test]
fn a_server_down_at_connect_is_said_and_names_are_escaped() {
    let mut app = online();
    app.on_frame(ServerFrame::McpStatus {
        servers: vec![McpServerView {
            name: "evil\u{1b}[2J".into(),
            state: McpServerState::Down,
            reason: Some("bad\u{7}".into()),
            tools: 0,
        }],
    });
    let down = app.mcp_down();
    assert_eq!(down.len(), 1);
    assert!(!down[0].contains('\u{1b}'), "{down:?}");
    assert!(
        notices(&app)
            .iter()
            .all(|n| !n.contains('\u{1b}') && !n.contains('\u{7}'))
    );
}

fn event(seq: u64, event: TurnEvent) -> ServerFrame {
    ServerFrame::Turn {
        seq,
        session_id: sid("s-1"),
        turn_id: tid("t-1"),
        event,
    }
}

#[test]
fn progress_of_a_running_call_shows_in_the_turn_state() {
    let mut app = online();
    app.on_frame(started(1));
    app.on_frame(event(
        2,
        TurnEvent::ToolStarted {
            call_id: "c1".into(),
            name: "files__index".into(),
            arguments: "{}".into(),
        },
    ));
    app.on_frame(event(
        3,
        TurnEvent::ToolProgress {
            call_id: "c1".into(),
            name: "files__index".into(),
            progress: 3.0,
            total: Some(10.0),
            message: Some("indexing notes/".into()),
        },
    ));
    assert_eq!(
        app.turn,
        TurnState::Tool("files__index (3/10: indexing notes/)".into())
    );
}

#[test]
fn progress_text_says_a_fraction_a_percentage_or_a_step() {
    assert_eq!(progress_text(3.0, Some(10.0), None), "3/10");
    assert_eq!(progress_text(0.4, Some(1.0), Some("half")), "40%: half");
    assert_eq!(progress_text(2.5, None, Some("  ")), "step 2.5");
    assert_eq!(progress_text(7.0, None, Some("a\nb")), "step 7: a");
}
