//! Regression test for review finding F1 (a shared mutable user/session holder let one user's
//! memory tool write into another user's namespace under concurrency).
//!
//! One gateway process serves two users, each with their own database. Many sessions of both
//! users run turns at the same time; in every turn the scripted model saves a note naming the turn
//! and then searches with `include_conversation`. Every note must land in its own user's database
//! and namespace, and every conversation hit must come from the turn's own session.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::{Client, start, test_config};
use serde_json::{Value, json};
use test_support::{RecordedRequest, ScriptedReply, ScriptedToolCall};
use types::{ClientFrame, ServerFrame, TurnEvent, UserId};

const USERS: [&str; 2] = ["alice", "bob"];
const SESSIONS: usize = 4;
const TURNS: usize = 3;

/// `zq<user>s<session>t<turn>`: one word, unique per turn; its prefix up to `t` names the session.
fn tag(user: &str, session: usize, turn: usize) -> String {
    format!("zq{user}s{session}t{turn}")
}

fn session_prefix(tag: &str) -> &str {
    &tag[..tag.rfind('t').unwrap()]
}

fn user_prefix(tag: &str) -> &str {
    &tag[..tag.rfind('s').unwrap()]
}

/// The tool results sent since the turn's user message.
fn results_since_user(req: &RecordedRequest) -> usize {
    req.messages()
        .iter()
        .rev()
        .take_while(|m| m["role"] != "user")
        .filter(|m| m["role"] == "tool")
        .count()
}

/// The model: save a note, search with the conversation included, answer. Keyed only on the
/// request's messages, so concurrent turns cannot confuse it.
fn respond(req: &RecordedRequest) -> ScriptedReply {
    let Some(tag) = req.last_user_text() else {
        return ScriptedReply::text("no user text");
    };
    match results_since_user(req) {
        0 => ScriptedReply::tool_calls(vec![ScriptedToolCall::new(
            "memory_save",
            json!({ "content": format!("note {tag}") }),
        )]),
        1 => ScriptedReply::tool_calls(vec![ScriptedToolCall::new(
            "memory_search",
            json!({ "query": tag, "include_conversation": true, "top_k": 20 }),
        )]),
        _ => ScriptedReply::text(&format!("done {tag}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_turns_of_two_users_keep_notes_and_searches_apart() {
    let dir = tempfile::tempdir().unwrap();
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let gw = start(dir.path(), &USERS, &server, test_config()).await;

    let mut tasks = Vec::new();
    for user in USERS {
        for s in 0..SESSIONS {
            let root = dir.path().to_owned();
            let url_gw = &gw;
            let (mut client, session) = Client::hello(url_gw, &root, user, None, None).await;
            tasks.push(tokio::spawn(async move {
                for t in 0..TURNS {
                    let tag = tag(user, s, t);
                    client.send_turn(&session.session_id, &tag, &tag).await;
                    let frames = client.recv_turn().await;
                    match frames.last().unwrap() {
                        ServerFrame::Turn {
                            event: TurnEvent::TurnCompleted { message, .. },
                            ..
                        } => {
                            assert_eq!(message, &format!("done {tag}"));
                        }
                        other => panic!("{tag}: {other:?}"),
                    }
                    let tools: Vec<(String, bool)> = frames
                        .iter()
                        .filter_map(|f| match f {
                            ServerFrame::Turn {
                                event: TurnEvent::ToolFinished { name, ok, .. },
                                ..
                            } => Some((name.clone(), *ok)),
                            _ => None,
                        })
                        .collect();
                    assert_eq!(
                        tools,
                        vec![("memory_save".into(), true), ("memory_search".into(), true)],
                        "{tag}"
                    );
                }
                client.send(&ClientFrame::Ping).await;
            }));
        }
    }
    for task in tasks {
        task.await.unwrap();
    }

    // Every search: conversation hits from the turn's own session only (and the turn's own
    // message among them); note hits from the same user only.
    let mut searches = 0;
    for req in server.requests() {
        if results_since_user(&req) != 2 {
            continue;
        }
        searches += 1;
        let tag = req.last_user_text().unwrap();
        let page: Value = serde_json::from_str(&req.last_tool_result().unwrap()).unwrap();
        let hits = page["results"].as_array().unwrap();
        let mut own_message = false;
        for hit in hits {
            let text = hit["text"].as_str().unwrap();
            match hit["source"].as_str().unwrap() {
                "conversation" => {
                    assert!(
                        text.contains(session_prefix(&tag)),
                        "{tag}: conversation hit from another session: {text}"
                    );
                    own_message |= text == tag;
                }
                "user_memory" => assert!(
                    text.contains(user_prefix(&tag)),
                    "{tag}: note of another user: {text}"
                ),
                other => panic!("unknown source {other}"),
            }
        }
        assert!(
            own_message,
            "{tag}: the turn's own session was searched: {hits:?}"
        );
    }
    assert_eq!(searches, USERS.len() * SESSIONS * TURNS);

    // Every note is in its own user's database, in that user's namespace.
    for user in USERS {
        let id = UserId::parse(user).unwrap();
        // A second connection to the user's database file: what the agent wrote is on disk.
        let store = common::open_store(dir.path(), user).await;
        let mut notes: Vec<String> = store
            .list_notes(&id)
            .await
            .unwrap()
            .into_iter()
            .map(|n| n.content)
            .collect();
        notes.sort();
        let mut expected: Vec<String> = (0..SESSIONS)
            .flat_map(|s| (0..TURNS).map(move |t| format!("note {}", tag(user, s, t))))
            .collect();
        expected.sort();
        assert_eq!(notes, expected, "{user}'s notes");
        for other in USERS.iter().filter(|o| **o != user) {
            let other = UserId::parse(other).unwrap();
            assert!(store.list_notes(&other).await.unwrap().is_empty());
        }
    }
    gw.shutdown().await;
}
