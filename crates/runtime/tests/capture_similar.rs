//! What capture does when a fact it adds is close to a note the user has, on the builtin model
//! (real libSQL file, scripted model in both wire formats). A restatement of a note replaces it
//! (an update, not a second note), but a static model puts different facts about one topic close
//! too — "User is allergic to shellfish" and "The user has a cat allergy" — and an update there
//! would take the user's shellfish allergy out of memory. So only a near-certain restatement is
//! an update; another add the model asked for, having been shown the notes, is added.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use memory::MemoryStore;
use serde_json::json;
use test_support::ScriptedReply;
use types::{CaptureMode, GovernanceConfig, ProviderKind};

use crate::capture::{KINDS, fixture_on, on_demand, record, saved, texts, turn};

/// A store on the builtin model (the one a user's store has), in a fresh directory.
async fn builtin_store() -> (tempfile::TempDir, MemoryStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::open(
        memory::Target::File(&dir.path().join("alice/.oxydra/memory.db")),
        memory::OpenOptions::default(),
    )
    .await
    .unwrap();
    (dir, store)
}

async fn a_close_different_fact_is_added(kind: ProviderKind) {
    let store = builtin_store().await;
    let rules = GovernanceConfig::default();
    let f = fixture_on(kind, on_demand(CaptureMode::Auto), rules, store).await;
    let shellfish = "User is allergic to shellfish.";
    let colour = "The user's favourite colour is blue";
    saved(&f, shellfish).await;
    saved(&f, colour).await;
    f.server.push(ScriptedReply::text("Noted."));
    let c = turn(
        &f,
        "chat-a",
        "t1",
        "Cats make me sneeze, and my favourite colour is blue",
    )
    .await;
    f.server.push(record(json!([
        {"action": "add", "content": "The user has a cat allergy."},
        {"action": "add", "content": "User's favourite colour is blue."},
    ])));
    let report = f.rt.capture_now(&c).await.unwrap().expect("a capture");
    let actions: Vec<&str> = report.changes.iter().map(|c| c.action.as_str()).collect();
    assert_eq!(actions, ["added", "updated"], "{report:?}");
    assert_eq!(
        texts(&f.store).await,
        [
            "The user has a cat allergy.",
            "User is allergic to shellfish.",
            "User's favourite colour is blue.",
        ],
        "the shellfish allergy is kept; the restated colour replaced its note"
    );
}

#[tokio::test]
async fn a_close_but_different_fact_is_added_and_a_restatement_replaces_its_note() {
    for kind in KINDS {
        a_close_different_fact_is_added(kind).await;
    }
}
