//! A keyed value (an MCP client's `putMemory` under a namespace and key) is its namespace's
//! whatever tool names it: the notes tools reach it by its note id, and the namespace rules for
//! writes and deletes hold for it there as they do for `putMemory`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly on broken fixtures"
)]

use serde_json::{Value, json};
use types::Surface;

use crate::governance::{Env, env};
use crate::governance_classes::denied;

/// Alice's keyed value `projects/bank`, as an MCP client's `putMemory` stores it.
async fn bank(env: &Env, user: &types::UserId) -> types::NoteId {
    env.store
        .keys()
        .put_keyed(
            user,
            None,
            "projects",
            "bank",
            "The bank is Nordbank",
            memory::NoteMetadata::default(),
        )
        .await
        .unwrap()
        .note_id
}

/// A keyed value is its namespace's whatever tool names it: the notes tools reach it by its note
/// id (it shows in `memory_search` where reads are open), and a rule keeping writes and deletes
/// to `notes` must hold for it as it does for `putMemory`.
#[tokio::test]
async fn a_keyed_value_named_by_its_note_id_is_governed_by_its_own_namespace() {
    let env = env(json!({"operations": {
        "write": {"allowed_namespaces": ["notes"]},
        "delete": {"allowed_namespaces": ["notes"]},
    }}))
    .await;
    let user = types::UserId::parse("alice").unwrap();
    let keyed = bank(&env, &user).await;
    let note = env.store.get(&user, &keyed).await.unwrap();
    let version = memory::edit_token(&note.content);
    let update = env
        .call(
            Surface::Agent,
            "memory_update",
            json!({"note_id": keyed, "version": version, "content": "The bank is Evilbank"}),
        )
        .await;
    assert!(denied(&update).contains("projects"), "{}", update.output);
    let delete = env
        .call(Surface::Agent, "memory_delete", json!({"note_id": keyed}))
        .await;
    denied(&delete);
    assert_eq!(env.notes().await, ["The bank is Nordbank"]);
    // The user's own notes are still the notes tools' to change.
    let saved = env
        .call(
            Surface::Agent,
            "memory_save",
            json!({"content": "likes tea"}),
        )
        .await;
    let saved: Value = serde_json::from_str(&saved.output).unwrap();
    let out = env
        .call(
            Surface::Agent,
            "memory_update",
            json!({"note_id": saved["note_id"], "version": saved["version"], "content": "likes green tea"}),
        )
        .await;
    assert!(out.ok, "{}", out.output);
    let out = env
        .call(
            Surface::Agent,
            "memory_delete",
            json!({"note_id": saved["note_id"]}),
        )
        .await;
    assert!(out.ok, "{}", out.output);
    assert_eq!(env.notes().await, ["The bank is Nordbank"]);
}

/// The same for a keyed value deleted and waiting to be restored: restoring it writes its
/// namespace again.
#[tokio::test]
async fn restoring_a_deleted_keyed_value_is_governed_by_its_own_namespace() {
    let env = env(json!({})).await;
    let config: types::GovernanceConfig =
        serde_json::from_value(json!({"operations": {"write": {"allowed_namespaces": ["notes"]}}}))
            .unwrap();
    let governance = tools::Governance::new(config).with_store(&env.store);
    let user = types::UserId::parse("alice").unwrap();
    let keyed = bank(&env, &user).await;
    env.store.delete(&user, None, &keyed).await.unwrap();
    let ctx = types::ToolExecutionContext::new(
        user.clone(),
        types::SessionId::parse("chat-1").unwrap(),
        types::TurnId::parse("turn-1").unwrap(),
        types::WorkspacePaths::for_user(&env.root, &user),
    );
    let access = tools::MemoryAccess::note_change(&keyed);
    let store = env.store.clone();
    let restored: Result<String, tools::ToolError> = governance
        .govern(
            "memory_restore",
            &access,
            json!({}),
            &ctx,
            |_, _| async move {
                store
                    .restore(&user, None, &keyed, None)
                    .await
                    .map(|_| "restored".to_owned())
                    .map_err(|e| tools::ToolError::execution(e.to_string()))
            },
        )
        .await;
    let error = restored.expect_err("refused");
    assert!(error.to_string().contains("projects"), "{error}");
    assert!(env.notes().await.is_empty(), "nothing restored");
}
