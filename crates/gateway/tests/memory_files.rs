//! A Claude-style session with the files dialect's `memory` tool, end to end through a real
//! gateway, a real store and the scripted model in both wire formats: view /memories → create →
//! str_replace → view. With the Anthropic provider the tool is declared natively
//! (`memory_20250818`, with the beta header); with an OpenAI-compatible one it is a function tool.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::sync::Arc;
use std::time::Duration;

use gateway::{Gateway, GatewayToken, UserAgent};
use provider::ProviderOptions;
use runtime::AgentRuntime;
use serde_json::json;
use test_support::{ScriptedLlm, ScriptedReply};
use types::{
    MemoryDialect, ProviderKind, RuntimeConfig, ServerFrame, TurnEvent, UserId, WorkspacePaths,
};

use crate::common::{self, Client, test_config, text_of};

/// A gateway whose one user, alice, is offered the files dialect over her own store.
async fn start(
    root: &std::path::Path,
    server: &ScriptedLlm,
    kind: ProviderKind,
) -> gateway::RunningGateway {
    let provider = provider::from_config_with(
        &server.config(kind),
        ProviderOptions {
            retry_base_delay: Duration::from_millis(5),
            retry_max_delay: Duration::from_millis(20),
            ..ProviderOptions::default()
        },
    )
    .unwrap();
    let store = common::open_store(root, "alice").await;
    let registry = tools::ToolSet::new(Some(Arc::new(store.clone())))
        .builtin(MemoryDialect::Files)
        .registry()
        .unwrap();
    let runtime = AgentRuntime::new(
        provider,
        Arc::new(registry),
        RuntimeConfig::default(),
        common::limits(),
    )
    .with_memory(store);
    let ws = WorkspacePaths::new(root.join("alice"));
    for dir in types::WorkspaceDir::ALL {
        std::fs::create_dir_all(ws.dir(dir)).unwrap();
    }
    let token = GatewayToken::load_or_create(&ws.internal()).unwrap();
    let mut gw = Gateway::new(test_config());
    gw.add_user(UserAgent::new(
        UserId::parse("alice").unwrap(),
        token,
        ws,
        runtime,
    ))
    .unwrap();
    gw.start().await.unwrap()
}

async fn claude_style_session(kind: ProviderKind) {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let call = |args: serde_json::Value| ScriptedReply::tool_call("memory", args);
    server.push_all([
        call(json!({"command": "view", "path": "/memories"})),
        call(json!({"command": "create", "path": "/memories/progress.md",
            "file_text": "# Progress\n- task: write the report\n- status: started\n"})),
        call(
            json!({"command": "str_replace", "path": "/memories/progress.md",
            "old_str": "status: started", "new_str": "status: done"}),
        ),
        call(json!({"command": "view", "path": "/memories/progress.md"})),
        ScriptedReply::text("Recorded: the report is done."),
    ]);
    let gw = start(dir.path(), &server, kind).await;
    let (mut client, session) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    client
        .send_turn(
            &session.session_id,
            "finish the report and remember it",
            "c-1",
        )
        .await;
    let frames = client.recv_turn().await;
    assert!(
        matches!(
            frames.last(),
            Some(ServerFrame::Turn {
                event: TurnEvent::TurnCompleted { .. },
                ..
            })
        ),
        "{frames:?}"
    );
    assert_eq!(text_of(&frames), "Recorded: the report is done.");

    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    // What each command returned, as the model received it in its own wire format.
    let results: Vec<String> = requests[1..]
        .iter()
        .map(|r| r.last_tool_result().unwrap())
        .collect();
    assert_eq!(
        results,
        [
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n0B\t/memories",
            "File created successfully at: /memories/progress.md",
            "The memory file has been edited.\n     1\t# Progress\n     2\t- task: write the report\n     3\t- status: done",
            "Here's the content of /memories/progress.md with line numbers:\n     1\t# Progress\n     2\t- task: write the report\n     3\t- status: done",
        ]
    );
    let first = &requests[0];
    assert!(
        first
            .system_prompt()
            .unwrap()
            .contains("before starting any task, view /memories first"),
        "{:?}",
        first.system_prompt()
    );
    let declared: Vec<&serde_json::Value> = first.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "memory" || t["function"]["name"] == "memory")
        .collect();
    match kind {
        ProviderKind::Anthropic => {
            assert_eq!(
                declared,
                [&json!({"type": "memory_20250818", "name": "memory"})]
            );
            assert_eq!(
                first.header("anthropic-beta"),
                Some("context-management-2025-06-27")
            );
        }
        ProviderKind::Openai => {
            assert_eq!(declared.len(), 1);
            assert_eq!(declared[0]["type"], "function");
            assert_eq!(
                declared[0]["function"]["parameters"]["properties"]["command"]["enum"],
                json!([
                    "view",
                    "create",
                    "str_replace",
                    "insert",
                    "delete",
                    "rename",
                    "update"
                ])
            );
            assert_eq!(first.header("anthropic-beta"), None);
        }
    }
    gw.shutdown().await;

    // The file outlives the session: it is a note of alice's own store.
    let store = common::open_store(dir.path(), "alice").await;
    let file = store
        .files()
        .read_file(&UserId::parse("alice").unwrap(), "/memories/progress.md")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        file.content,
        "# Progress\n- task: write the report\n- status: done\n"
    );
}

#[tokio::test]
async fn a_claude_style_session_works_with_the_anthropic_native_tool() {
    claude_style_session(ProviderKind::Anthropic).await;
}

#[tokio::test]
async fn a_claude_style_session_works_with_an_openai_function_tool() {
    claude_style_session(ProviderKind::Openai).await;
}
