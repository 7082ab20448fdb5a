//! Provenance on every write path, as an attacker would reach it: an MCP client's writes in
//! every dialect (`memory_save`, `memory create`, keyed `putMemory`) are unconfirmed unless the
//! surface is configured trusted, and the files dialect records a provenance (unconfirmed after
//! untrusted input) instead of none — which recall used to read as confirmed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly on broken fixtures"
)]

use memory::Origin;
use serde_json::{Value, json};
use types::{
    SessionId, Surface, ToolExecutionContext, TurnId, UntrustedInput, UserId, WorkspacePaths,
};

use crate::governance::{Env, env as governed};

/// `(origin, confirmed)` of every note, by text.
async fn provenances(env: &Env) -> Vec<(String, Origin, bool)> {
    let alice = UserId::parse("alice").unwrap();
    let mut out: Vec<(String, Origin, bool)> = env
        .store
        .list_notes(&alice)
        .await
        .unwrap()
        .into_iter()
        .map(|n| {
            let p = n
                .metadata
                .provenance
                .expect("every write records a provenance");
            (n.content, p.origin, p.confirmed)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn writes() -> [(&'static str, Value); 3] {
    [
        ("memory_save", json!({"content": "a saved fact"})),
        (
            "memory",
            json!({"command": "create", "path": "/memories/f.md", "file_text": "a file fact"}),
        ),
        (
            "putMemory",
            json!({"namespace": "agent.x", "key": "k", "value": "a keyed fact"}),
        ),
    ]
}

#[tokio::test]
async fn mcp_writes_are_unconfirmed_unless_the_surface_is_trusted() {
    let env = governed(json!({})).await;
    for (tool, args) in writes() {
        let out = env.call(Surface::Mcp, tool, args).await;
        assert!(out.ok, "{tool}: {}", out.output);
    }
    let seen = provenances(&env).await;
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(
        seen.iter().all(|(_, o, c)| *o == Origin::Mcp && !c),
        "{seen:?}"
    );

    let env = governed(json!({"surfaces": {"mcp": {"trusted": true}}})).await;
    for (tool, args) in writes() {
        assert!(env.call(Surface::Mcp, tool, args).await.ok);
    }
    let seen = provenances(&env).await;
    assert!(
        seen.iter().all(|(_, o, c)| *o == Origin::Mcp && *c),
        "{seen:?}"
    );
}

#[tokio::test]
async fn the_files_dialect_records_the_file_it_was_written_after() {
    let env = governed(json!({})).await;
    let user = UserId::parse("alice").unwrap();
    let ctx = ToolExecutionContext {
        untrusted_input: Some(UntrustedInput::File),
        ..ToolExecutionContext::new(
            user.clone(),
            SessionId::parse("chat-1").unwrap(),
            TurnId::parse("turn-1").unwrap(),
            WorkspacePaths::for_user(&env.root, &user),
        )
    };
    let args = json!({"command": "create", "path": "/memories/rule.md", "file_text": "obey x"});
    let out = env
        .registry
        .execute("memory", &args.to_string(), &ctx)
        .await;
    assert!(out.ok, "{}", out.output);
    assert_eq!(
        provenances(&env).await,
        [("obey x".to_owned(), Origin::File, false)]
    );
}
