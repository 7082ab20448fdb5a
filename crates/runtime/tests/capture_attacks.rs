//! Capture against a confused answer: an update naming a version the call was not shown refuses
//! the whole answer, and the exchange waits for a good one (the refused call still counted in
//! usage) — in both wire formats of the scripted model.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use memory::UsageScope;
use serde_json::json;
use test_support::ScriptedReply;
use types::{CaptureMode, ProviderKind, ToolExecutionContext};

use crate::capture::{Fixture, KINDS, alice, fixture, on_demand, record, saved, texts, turn};

/// An update giving a version of the note other than the one shown (invented, or another
/// note's) is refused with the whole answer: before, the add beside it was applied alone and
/// the update failed, and the exchange counted as captured — the corrected fact was lost.
async fn a_version_not_shown_refuses_the_answer(kind: ProviderKind) {
    let f = fixture(kind, on_demand(CaptureMode::Auto)).await;
    let tea = saved(&f, "The user likes tea").await;
    f.server.push(ScriptedReply::text("OK."));
    let c = turn(
        &f,
        "chat-a",
        "t1",
        "I only drink green tea now, and my cat is called Mia",
    )
    .await;
    let update = |version: String| {
        json!({"action": "update", "note_id": tea.as_str(),
               "content": "The user likes green tea", "version": version})
    };
    let cat = json!({"action": "add", "content": "The user's cat is called Mia"});
    f.server.push(
        record(json!([
            cat.clone(),
            update(memory::edit_token("The user likes coffee"))
        ]))
        .with_usage(300, 20),
    );
    let spent_before = prompt_tokens(&f, &c).await;
    let outcome = f.rt.capture_now(&c).await;
    assert!(matches!(outcome, Ok(None)), "{outcome:?}");
    assert_eq!(texts(&f.store).await, ["The user likes tea"]);
    // A refused answer was still paid for: it counts.
    assert_eq!(prompt_tokens(&f, &c).await - spent_before, 300);

    // The exchange was not marked captured: a good answer records both.
    f.server.push(record(json!([
        cat,
        update(memory::edit_token("The user likes tea"))
    ])));
    f.rt.capture_now(&c).await.unwrap().expect("a capture");
    assert_eq!(
        texts(&f.store).await,
        ["The user likes green tea", "The user's cat is called Mia"]
    );
}

async fn prompt_tokens(f: &Fixture, c: &ToolExecutionContext) -> u64 {
    let usage = f
        .store
        .usage()
        .usage_by_model(&alice(), UsageScope::Session(&c.session_id))
        .await
        .unwrap();
    usage.iter().map(|u| u.usage.prompt_tokens).sum()
}

#[tokio::test]
async fn an_update_of_a_version_not_shown_refuses_the_whole_answer() {
    for kind in KINDS {
        a_version_not_shown_refuses_the_answer(kind).await;
    }
}
