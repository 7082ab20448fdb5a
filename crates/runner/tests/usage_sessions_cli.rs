//! `runner usage` (tokens per model and their cost at `[pricing]`) and `runner sessions
//! list|export`, as a real child process on a real store into which a conversation and its
//! model calls were written the way the runtime writes them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::path::Path;

use serde_json::{Value, json};
use types::{Message, SessionId, ToolCall, TurnId, Usage, UserId};

use crate::common::Setup;

async fn open(setup: &Setup, user: &str) -> memory::MemoryStore {
    let agent = runner::load_agent_config(Some(&setup.dir.path().join("agent.toml"))).unwrap();
    let options = memory::OpenOptions {
        legacy_dir: memory::LegacyDir::Skip,
        ..memory::OpenOptions::default()
    };
    memory::MemoryStore::open(
        memory::Target::Config {
            config: &agent.memory,
            user_root: &setup.ws(user).root,
        },
        options,
    )
    .await
    .unwrap()
}

/// One conversation of `user` (`session`, titled) with a tool call, and its model calls.
async fn converse(setup: &Setup, user: &str, session: &str, calls: &[(&str, u64, u64)]) {
    let store = open(setup, user).await;
    let (id, sid) = (
        UserId::parse(user).unwrap(),
        SessionId::parse(session).unwrap(),
    );
    let turn = TurnId::parse("turn-1").unwrap();
    let sessions = store.sessions();
    sessions
        .create_session(&sid, &id, Some(&format!("{user}'s trip")))
        .await
        .unwrap();
    let call = ToolCall {
        id: "call_1".into(),
        name: "file_read".into(),
        arguments: r#"{"path":"plan.md"}"#.into(),
    };
    for message in [
        Message::system("You are Oxydra."),
        Message::user(format!("{user}: where do we go?")),
        Message::assistant_tool_calls(None, vec![call]),
        Message::tool_result("call_1", "Lisbon, then Porto"),
        Message::assistant("Lisbon first, then Porto."),
    ] {
        sessions.append_message(&sid, &id, &message).await.unwrap();
    }
    for (model, prompt, completion) in calls {
        let place = memory::CallPlace {
            user: &id,
            session: &sid,
            turn: &turn,
        };
        let usage = Usage {
            prompt_tokens: *prompt,
            completion_tokens: *completion,
        };
        store
            .usage()
            .record_usage(place, model, usage)
            .await
            .unwrap();
    }
    store.close().await;
}

fn stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stderr.clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_totals_tokens_and_cost_per_model_for_one_user() {
    let server = test_support::ScriptedLlm::start().await;
    let setup = Setup::new(&server, &["alice", "bob"]);
    let agent = setup.dir.path().join("agent.toml");
    let mut text = std::fs::read_to_string(&agent).unwrap();
    text.push_str("[pricing.\"scripted-model\"]\ninput_per_mtok = 3.0\noutput_per_mtok = 15.0\n");
    std::fs::write(&agent, text).unwrap();
    converse(
        &setup,
        "alice",
        "chat-a",
        &[
            ("scripted-model", 600, 150),
            ("scripted-model", 400, 50),
            ("local-llm", 500, 0),
        ],
    )
    .await;
    converse(&setup, "bob", "chat-b", &[("scripted-model", 9_000, 9_000)]).await;

    let json: Value = serde_json::from_str(&stdout(
        &setup.runner(&["--user", "alice", "usage", "--json"]).await,
    ))
    .unwrap();
    assert_eq!(
        json["models"],
        json!([
            {"model": "local-llm", "prompt_tokens": 500, "completion_tokens": 0, "cost_usd": null},
            {"model": "scripted-model", "prompt_tokens": 1000, "completion_tokens": 200,
             "cost_usd": 0.006},
        ])
    );
    assert_eq!(json["total_cost_usd"], 0.006);
    assert_eq!(json["unpriced_models"], json!(["local-llm"]));

    let text = stdout(
        &setup
            .runner(&["--user", "alice", "usage", "--since", "7d"])
            .await,
    );
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("alice's usage, since "), "{text}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("scripted-model") && l.contains("1000") && l.ends_with("$0.0060")),
        "{text}"
    );
    assert_eq!(
        lines.last().copied(),
        Some("  total $0.0060 (not counted, no [pricing] entry: local-llm)")
    );
    // Nothing since a day to come; a --since it cannot read is one line and opens nothing.
    let later = stdout(
        &setup
            .runner(&["--user", "alice", "usage", "--since", "2099-01-01"])
            .await,
    );
    assert_eq!(
        later,
        "alice: no model calls recorded (since 2099-01-01 00:00 UTC)\n"
    );
    let err = stderr(
        &setup
            .runner(&["--user", "carol", "usage", "--since", "yesterday"])
            .await,
    );
    assert!(err.contains("--since takes a day"), "{err}");
    assert!(!setup.ws("carol").root.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_lists_and_exports_only_the_users_own_conversations() {
    let server = test_support::ScriptedLlm::start().await;
    let setup = Setup::new(&server, &["alice", "bob"]);
    converse(&setup, "alice", "chat-a", &[]).await;
    converse(&setup, "bob", "chat-b", &[]).await;

    let list = stdout(&setup.runner(&["--user", "alice", "sessions", "list"]).await);
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(
        list.starts_with("chat-a  ") && list.contains("5 messages  alice's trip"),
        "{list}"
    );

    // `runner --user alice sessions export ARGS...`.
    let export = |args: &[&str]| {
        let mut all = vec!["--user", "alice", "sessions", "export"];
        all.extend_from_slice(args);
        let all: Vec<String> = all.into_iter().map(str::to_owned).collect();
        let setup = &setup;
        async move {
            let all: Vec<&str> = all.iter().map(String::as_str).collect();
            setup.runner(&all).await
        }
    };
    let md = stdout(&export(&["--session", "chat-a"]).await);
    assert!(
        md.starts_with("# alice's trip\n\nSession `chat-a` · 4 messages\n"),
        "{md}"
    );
    assert!(
        md.contains("alice: where do we go?") && md.contains("Calls `file_read`"),
        "{md}"
    );
    assert!(!md.contains("You are Oxydra"), "{md}");

    let jsonl = stdout(&export(&["--session", "chat-a", "--format", "jsonl"]).await);
    let roles: Vec<String> = jsonl
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["role"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);

    // bob's conversation is not alice's to export.
    let err = stderr(&export(&["--session", "chat-b"]).await);
    assert!(err.contains("alice has no conversation chat-b"), "{err}");

    // --out makes a new file, never replaces one, and refuses the user's shell's directory.
    let file = setup.dir.path().join("trip.md");
    let run = |out: &Path| {
        let out = out.display().to_string();
        let export = &export;
        async move { export(&["--session", "chat-a", "--out", &out]).await }
    };
    stdout(&run(&file).await);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), md);
    let err = stderr(&run(&file).await);
    assert!(err.contains("must be a new file"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), md);
    runner::provision(&setup.root, &UserId::parse("alice").unwrap()).unwrap();
    let shared = setup.ws("alice").shared().join("trip.md");
    let err = stderr(&run(&shared).await);
    assert!(err.contains("can be written by the user's shell"), "{err}");
    assert!(!shared.exists());
}

/// `runner memory search --scope`: the user's past conversations are searched with
/// `conversations` (each hit named by its session and place, dated), both with `all`, and only
/// the notes by default; another user's conversation never hits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_search_reaches_past_conversations_with_scope() {
    let server = test_support::ScriptedLlm::start().await;
    let setup = Setup::new(&server, &["alice", "bob"]);
    converse(&setup, "alice", "chat-a", &[]).await;
    converse(&setup, "bob", "chat-b", &[]).await;
    stdout(
        &setup
            .runner(&[
                "--user",
                "alice",
                "memory",
                "save",
                "Alice's Porto hotel is by the river",
            ])
            .await,
    );
    let search = |scope: &'static str| {
        let setup = &setup;
        async move {
            let out = setup
                .runner(&[
                    "--user", "alice", "memory", "search", "Porto", "--scope", scope, "--json",
                ])
                .await;
            serde_json::from_str::<Value>(&stdout(&out)).unwrap()
        }
    };
    let sessions = |hits: &Value| -> Vec<String> {
        hits.as_array()
            .unwrap()
            .iter()
            .map(|h| h["session_id"].as_str().unwrap_or("notes").to_owned())
            .collect()
    };

    let notes = search("notes").await;
    assert_eq!(sessions(&notes), ["notes"], "{notes}");
    let talk = search("conversations").await;
    assert!(
        !sessions(&talk).is_empty() && sessions(&talk).iter().all(|s| s == "chat-a"),
        "{talk}"
    );
    assert!(
        talk.as_array()
            .unwrap()
            .iter()
            .any(|h| h["text"] == "Lisbon first, then Porto." && h["event_seq"].is_u64()),
        "{talk}"
    );
    let all = search("all").await;
    let both = sessions(&all);
    assert!(
        both.contains(&"notes".to_owned()) && both.contains(&"chat-a".to_owned()),
        "{all}"
    );
    assert!(!both.contains(&"chat-b".to_owned()), "{all}");

    // Lines: a message is named by its session, place and date.
    let out = stdout(
        &setup
            .runner(&[
                "--user",
                "alice",
                "memory",
                "search",
                "Porto",
                "--scope",
                "conversations",
            ])
            .await,
    );
    assert!(
        out.lines()
            .any(|l| l.contains("  chat-a#") && l.ends_with("Lisbon first, then Porto.")),
        "{out}"
    );
    let bad = stderr(
        &setup
            .runner(&[
                "--user",
                "alice",
                "memory",
                "search",
                "Porto",
                "--scope",
                "everything",
            ])
            .await,
    );
    assert!(bad.contains("notes, conversations, all"), "{bad}");
}
