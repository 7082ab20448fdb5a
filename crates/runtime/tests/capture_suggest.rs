//! Capture in `mode = "suggest"`: proposals wait for the user, who accepts (applied through the
//! pipeline, confirmed) or rejects them; a proposal is kept once however often it is repeated,
//! shows the text of the note it would change, is refused when that note changed since, and is
//! applied even when the store reuses its number, and never holds a secret — in both wire formats
//! of the scripted model.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use memory::Origin;
use runtime::RuntimeError;
use serde_json::{Value, json};
use test_support::ScriptedReply;
use types::{
    CaptureMode, GovernanceConfig, NoteId, PendingMemory, ProviderKind, SurfaceConfig,
    SurfacesConfig, ToolExecutionContext,
};

use crate::capture::{
    Fixture, KINDS, alice, audit_of, fixture, fixture_governed, on_demand, record, saved, texts,
    turn,
};
use crate::common::ctx;

/// A turn of alice's saying `said`, then a capture whose answer is `memories`: the context of
/// the turn and the proposals the capture left pending.
async fn proposed(
    f: &Fixture,
    (session, turn_id, said): (&str, &str, &str),
    memories: Value,
) -> (ToolExecutionContext, Vec<PendingMemory>) {
    f.server.push(ScriptedReply::text("OK."));
    let c = turn(f, session, turn_id, said).await;
    f.server.push(record(memories));
    let report = f.rt.capture_now(&c).await.unwrap().expect("a capture");
    (c, report.pending)
}

/// [`proposed`] of the one fact "I play the cello" yields, in session chat-a.
async fn cello_proposed(f: &Fixture) -> (ToolExecutionContext, Vec<PendingMemory>) {
    let cello = json!([{"action": "add", "content": "The user plays the cello"}]);
    proposed(f, ("chat-a", "t1", "I play the cello"), cello).await
}

async fn suggest_keeps_proposals(kind: ProviderKind) {
    let f = fixture(kind, on_demand(CaptureMode::Suggest)).await;
    f.server.push(ScriptedReply::text("OK."));
    let c = turn(
        &f,
        "chat-a",
        "t1",
        "I play the cello, and my son Leo is six",
    )
    .await;
    f.server.push(record(json!([
        {"action": "add", "content": "The user plays the cello"},
        {"action": "add", "content": "The user's son Leo is six"},
    ])));
    let report = f.rt.capture_now(&c).await.unwrap().expect("a capture");
    assert!(report.changes.is_empty());
    assert_eq!(report.pending.len(), 2);
    assert!(texts(&f.store).await.is_empty(), "nothing written yet");
    let pending = f.rt.pending_memories(&c).await.unwrap();
    assert_eq!(pending, report.pending);
    // Dated in the user's zone (the fixture's is Kolkata, +05:30).
    assert!(
        pending.iter().all(|p| p.created_at.ends_with("+05:30")),
        "{pending:?}"
    );
    // Another user of the store can neither take nor drop them by number.
    let bob = ctx(&f.root, "bob", "chat-b", "t1");
    assert!(f.rt.accept_memory(&bob, pending[0].id).await.is_err());
    assert!(f.rt.reject_memory(&bob, pending[1].id).await.is_err());
    assert_eq!(f.rt.pending_memories(&c).await.unwrap(), pending);
    assert!(texts(&f.store).await.is_empty());

    // Accepted later, from another conversation: the note still comes from chat-a's turn t1.
    let elsewhere = ctx(&f.root, "alice", "chat-z", "t9");
    let change =
        f.rt.accept_memory(&elsewhere, pending[0].id)
            .await
            .unwrap()
            .unwrap();
    assert_eq!(change.action, "added");
    let note = f
        .store
        .get(&alice(), &NoteId::parse(&change.note_id).unwrap())
        .await
        .unwrap();
    let provenance = note.metadata.provenance.unwrap();
    assert_eq!(
        (
            provenance.origin,
            provenance.session_id.as_deref(),
            provenance.turn_id.as_deref(),
            provenance.confirmed
        ),
        (Origin::Captured, Some("chat-a"), Some("t1"), true)
    );
    f.rt.reject_memory(&c, pending[1].id).await.unwrap();
    assert_eq!(texts(&f.store).await, ["The user plays the cello"]);
    assert!(f.rt.pending_memories(&c).await.unwrap().is_empty());
    assert!(f.rt.accept_memory(&c, pending[1].id).await.is_err());
    // Another user has no proposals here.
    assert!(f.rt.pending_memories(&bob).await.unwrap().is_empty());
}

/// A fact the user repeats in another conversation before deciding is proposed once: a proposal
/// making the same change as one waiting (or as another of the same answer) is not kept again.
async fn a_waiting_proposal_is_not_repeated(kind: ProviderKind) {
    let f = fixture(kind, on_demand(CaptureMode::Suggest)).await;
    let cello = json!([{"action": "add", "content": "The user plays the cello"}]);
    let (_, first) = proposed(&f, ("chat-a", "t1", "I play the cello"), cello).await;
    assert_eq!(first.len(), 1);

    let (c, second) = proposed(
        &f,
        ("chat-b", "t2", "Cello practice again today; I also sing"),
        json!([
            {"action": "add", "content": "The user  plays the Cello"},
            {"action": "add", "content": "The user sings"},
            {"action": "add", "content": "The user sings"},
        ]),
    )
    .await;
    let new: Vec<Option<&str>> = second.iter().map(|p| p.content.as_deref()).collect();
    assert_eq!(new, [Some("The user sings")]);
    let all: Vec<Option<String>> =
        f.rt.pending_memories(&c)
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.content)
            .collect();
    assert_eq!(
        all,
        [
            Some("The user plays the cello".to_owned()),
            Some("The user sings".to_owned())
        ]
    );
}

#[tokio::test]
async fn a_fact_repeated_before_the_user_decides_is_proposed_once() {
    for kind in KINDS {
        a_waiting_proposal_is_not_repeated(kind).await;
    }
}

/// A pending delete of a note the user has edited since it was proposed is refused and stays
/// listed: what capture judged no longer true is the text it was shown, not the user's new one.
async fn a_stale_delete_is_refused(kind: ProviderKind) {
    let f = fixture(kind, on_demand(CaptureMode::Suggest)).await;
    let porto = saved(&f, "The user lives in Porto").await;
    let (c, pending) = proposed(
        &f,
        ("chat-a", "t1", "I moved away from Porto"),
        json!([{"action": "delete", "note_id": porto.as_str()}]),
    )
    .await;
    assert_eq!(pending[0].action, "delete");
    // The user sees what would be forgotten, not only its id.
    assert_eq!(
        pending[0].note_text.as_deref(),
        Some("The user lives in Porto")
    );
    // The user corrects the note before deciding.
    let out = f
        .registry
        .execute(
            "memory_update",
            &json!({
                "note_id": porto.as_str(),
                "content": "The user lives in Porto in summer and Lisbon in winter",
                "version": memory::edit_token("The user lives in Porto"),
            })
            .to_string(),
            &ctx(&f.root, "alice", "chat-a", "t2"),
        )
        .await;
    assert!(out.ok, "{}", out.output);
    let refused = f.rt.accept_memory(&c, pending[0].id).await.unwrap_err();
    assert!(
        refused.to_string().contains("the note changed since"),
        "{refused}"
    );
    assert_eq!(
        texts(&f.store).await,
        ["The user lives in Porto in summer and Lisbon in winter"]
    );
    assert_eq!(f.rt.pending_memories(&c).await.unwrap(), pending);
    // Unchanged, the same kind of proposal is applied.
    let (c, fresh) = proposed(
        &f,
        ("chat-a", "t3", "Actually I left Lisbon and Porto both"),
        json!([{"action": "delete", "note_id": porto.as_str()}]),
    )
    .await;
    let deleted = f.rt.accept_memory(&c, fresh[0].id).await.unwrap().unwrap();
    assert_eq!(deleted.action, "deleted");
    assert!(texts(&f.store).await.is_empty());
}

#[tokio::test]
async fn a_pending_delete_of_a_note_edited_since_is_refused() {
    for kind in KINDS {
        a_stale_delete_is_refused(kind).await;
    }
}

/// A proposal accepted after an earlier one of the same number and text was accepted and its
/// note deleted (numbers are reused once the list is empty) is applied again, not taken for a
/// retry of the first acceptance.
async fn a_reused_number_is_a_new_proposal(kind: ProviderKind) {
    let f = fixture(kind, on_demand(CaptureMode::Suggest)).await;
    let cello = json!([{"action": "add", "content": "The user plays the cello"}]);
    let (c, first) = proposed(&f, ("chat-a", "t1", "I play the cello"), cello.clone()).await;
    let added = f.rt.accept_memory(&c, first[0].id).await.unwrap().unwrap();
    let out = f
        .registry
        .execute(
            "memory_delete",
            &json!({ "note_id": added.note_id }).to_string(),
            &ctx(&f.root, "alice", "chat-a", "t2"),
        )
        .await;
    assert!(out.ok, "{}", out.output);
    assert!(texts(&f.store).await.is_empty());

    let (c, again) = proposed(
        &f,
        ("chat-a", "t3", "I still play the cello, every day"),
        cello,
    )
    .await;
    assert_eq!(again[0].id, first[0].id, "the number is reused");
    let change = f.rt.accept_memory(&c, again[0].id).await.unwrap().unwrap();
    assert_eq!(texts(&f.store).await, ["The user plays the cello"]);
    assert_ne!(change.note_id, added.note_id);
    assert!(f.rt.pending_memories(&c).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_proposal_accepted_again_under_a_reused_number_is_applied() {
    for kind in KINDS {
        a_reused_number_is_a_new_proposal(kind).await;
    }
}

#[tokio::test]
async fn suggest_mode_keeps_proposals_until_the_user_accepts_them() {
    for kind in KINDS {
        suggest_keeps_proposals(kind).await;
    }
}

/// A secret the user mentions is never kept with a proposal: it would wait in the store, go to
/// every client and stay listed, where the pipeline never lets one into a note.
async fn a_secret_is_not_kept_pending(kind: ProviderKind) {
    let f = fixture(kind, on_demand(CaptureMode::Suggest)).await;
    let key = "sk-proj-abcdEFGH1234ijklMNOP5678";
    let (c, pending) = proposed(
        &f,
        (
            "chat-a",
            "t1",
            &format!("My OpenAI key is {key}, for my side project"),
        ),
        json!([{"action": "add", "content": format!("The user's OpenAI key is {key}"),
                "tags": ["openai", key]}]),
    )
    .await;
    let listed = f.rt.pending_memories(&c).await.unwrap();
    assert_eq!(listed, pending);
    let kept = serde_json::to_string(&listed).unwrap();
    assert!(!kept.contains(key), "{kept}");
    let rows = f
        .store
        .captures()
        .pending_proposals(&alice())
        .await
        .unwrap();
    assert!(
        rows.iter().all(|r| !r.proposal_json.contains(key)),
        "{rows:?}"
    );
    assert_eq!(
        listed[0].content.as_deref(),
        Some("The user's OpenAI key is [REDACTED:secret]")
    );
    // Accepted, it passes the pipeline as any note does.
    f.rt.accept_memory(&c, listed[0].id).await.unwrap();
    assert_eq!(
        texts(&f.store).await,
        ["The user's OpenAI key is [REDACTED:secret]"]
    );
}

#[tokio::test]
async fn a_secret_in_a_proposal_is_redacted_before_it_is_kept() {
    for kind in KINDS {
        a_secret_is_not_kept_pending(kind).await;
    }
}

/// Accepting one proposal twice at once (a double click, two clients) writes one note: the
/// second acceptance is the same call, and the proposal is gone after it.
async fn accepted_twice_at_once(kind: ProviderKind) {
    let f = fixture(kind, on_demand(CaptureMode::Suggest)).await;
    let (c, pending) = cello_proposed(&f).await;
    let (one, two) = tokio::join!(
        f.rt.accept_memory(&c, pending[0].id),
        f.rt.accept_memory(&c, pending[0].id)
    );
    assert!(one.is_ok() || two.is_ok(), "{one:?} {two:?}");
    assert_eq!(texts(&f.store).await, ["The user plays the cello"]);
    assert!(f.rt.pending_memories(&c).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_proposal_accepted_twice_at_once_is_written_once() {
    for kind in KINDS {
        accepted_twice_at_once(kind).await;
    }
}

/// A pending update accepted after the user edited its note is refused and stays listed: it
/// would replace a text capture never saw.
async fn a_stale_update_is_refused(kind: ProviderKind) {
    let f = fixture(kind, on_demand(CaptureMode::Suggest)).await;
    let tea = saved(&f, "The user likes tea").await;
    let (c, pending) = proposed(
        &f,
        ("chat-a", "t1", "I like green tea best"),
        json!([{"action": "update", "note_id": tea.as_str(), "content": "The user likes green tea"}]),
    )
    .await;
    let edited = "The user likes tea, black in the morning";
    let out = f
        .registry
        .execute(
            "memory_update",
            &json!({"note_id": tea.as_str(), "content": edited,
                    "version": memory::edit_token("The user likes tea")})
            .to_string(),
            &ctx(&f.root, "alice", "chat-a", "t2"),
        )
        .await;
    assert!(out.ok, "{}", out.output);
    assert!(f.rt.accept_memory(&c, pending[0].id).await.is_err());
    assert_eq!(texts(&f.store).await, [edited]);
    assert_eq!(f.rt.pending_memories(&c).await.unwrap(), pending);
}

#[tokio::test]
async fn a_pending_update_of_a_note_edited_since_is_refused() {
    for kind in KINDS {
        a_stale_update_is_refused(kind).await;
    }
}

/// A proposal the user's rules refuse when accepted (`[governance.surfaces.capture] read_only`)
/// is refused in the pipeline's words, as a refusal (the gateway's `not_allowed`): it said "the
/// note may have changed since; reject it and edit the note instead", which was not what
/// happened. Nothing is written and the proposal stays listed.
async fn a_refused_acceptance_says_the_rule(kind: ProviderKind) {
    let rules = GovernanceConfig {
        surfaces: SurfacesConfig {
            capture: SurfaceConfig {
                read_only: Some(true),
                ..SurfaceConfig::default()
            },
            ..SurfacesConfig::default()
        },
        ..GovernanceConfig::default()
    };
    let f = fixture_governed(kind, on_demand(CaptureMode::Suggest), rules).await;
    let (c, pending) = cello_proposed(&f).await;
    let refused = f.rt.accept_memory(&c, pending[0].id).await.unwrap_err();
    let RuntimeError::NoteRefused { kind: why, message } = &refused else {
        panic!("{refused:?}");
    };
    assert_eq!(*why, "permission_denied", "{message}");
    assert!(message.contains("read-only"), "{message}");
    assert!(!message.contains("changed since"), "{message}");
    assert!(texts(&f.store).await.is_empty());
    assert_eq!(f.rt.pending_memories(&c).await.unwrap(), pending);
}

#[tokio::test]
async fn an_acceptance_the_users_rules_refuse_says_which_rule() {
    for kind in KINDS {
        a_refused_acceptance_says_the_rule(kind).await;
    }
}

/// `/memory pending` shows each proposal's text and the text of the note it would change; it
/// read them straight from the store: no audit row, no permission check, no rate limit. It is a
/// governed read now, `memory_pending`, like every other read of the user's memory.
#[tokio::test]
async fn listing_pending_proposals_is_a_governed_audited_read() {
    let rules: GovernanceConfig = serde_json::from_value(json!({
        "rate_limits": {"tools": {"memory_pending": {"per_minute": 0.001, "burst": 1}}}
    }))
    .unwrap();
    let f = fixture_governed(ProviderKind::Openai, on_demand(CaptureMode::Suggest), rules).await;
    let (c, pending) = cello_proposed(&f).await;
    assert_eq!(f.rt.pending_memories(&c).await.unwrap(), pending);
    let rows = audit_of(&f.store, "memory_pending").await;
    assert_eq!(rows, [("read".into(), "ok".into())]);
    // The read is rate limited like any other: the second one within the minute is refused.
    let again = f.rt.pending_memories(&c).await.unwrap_err().to_string();
    assert!(
        again.contains("too many calls for tool 'memory_pending'"),
        "{again}"
    );
}

/// Rejecting a proposal decides what the user's memory will not hold: a governed write,
/// `memory_reject` — audited, and refused (the proposal kept) where the user's rules say so.
#[tokio::test]
async fn rejecting_a_proposal_is_a_governed_audited_write() {
    let rules: GovernanceConfig = serde_json::from_value(json!({
        "tool_permissions": {"memory_reject": {"operations": ["read"]}}
    }))
    .unwrap();
    let f = fixture_governed(ProviderKind::Openai, on_demand(CaptureMode::Suggest), rules).await;
    let (c, pending) = cello_proposed(&f).await;
    let refused = f.rt.reject_memory(&c, pending[0].id).await.unwrap_err();
    assert!(refused.to_string().contains("memory_reject"), "{refused}");
    assert_eq!(f.rt.pending_memories(&c).await.unwrap(), pending, "kept");

    let f = fixture(ProviderKind::Openai, on_demand(CaptureMode::Suggest)).await;
    let (c, pending) = cello_proposed(&f).await;
    f.rt.reject_memory(&c, pending[0].id).await.unwrap();
    assert!(f.rt.pending_memories(&c).await.unwrap().is_empty());
    assert!(f.rt.reject_memory(&c, pending[0].id).await.is_err(), "gone");
    // Newest first: the second, of a proposal gone, is recorded as refused.
    let rows = audit_of(&f.store, "memory_reject").await;
    let want = |outcome: &str| ("write".to_owned(), outcome.to_owned());
    assert_eq!(rows, [want("error"), want("ok")]);
    assert!(texts(&f.store).await.is_empty(), "nothing written");
}

/// A kept proposal is stored and shown to every client of the user until they decide, so it is
/// screened as the capture surface's write of it will be: personal data redacted where
/// `[governance.surfaces.capture] pii = "redact"`, the proposal not kept where it is "reject"
/// (it could never be accepted).
#[tokio::test]
async fn a_kept_proposal_is_screened_by_the_capture_surfaces_pii_rule() {
    let email = json!([
        {"action": "add", "content": "The user's email is alice@example.com", "tags": ["alice@example.com", "contact"]},
        {"action": "add", "content": "The user plays the cello"},
    ]);
    let rules = |pii: &str| -> GovernanceConfig {
        serde_json::from_value(json!({"surfaces": {"capture": {"pii": pii}}})).unwrap()
    };
    let said = (
        "chat-a",
        "t1",
        "Write to me at alice@example.com; I play the cello",
    );

    let f = fixture_governed(
        ProviderKind::Openai,
        on_demand(CaptureMode::Suggest),
        rules("redact"),
    )
    .await;
    let (c, pending) = proposed(&f, said, email.clone()).await;
    let shown = serde_json::to_string(&f.rt.pending_memories(&c).await.unwrap()).unwrap();
    assert!(!shown.contains("alice@example.com"), "{shown}");
    assert_eq!(
        pending[0].content.as_deref(),
        Some("The user's email is [REDACTED:email]")
    );
    let f = fixture_governed(
        ProviderKind::Openai,
        on_demand(CaptureMode::Suggest),
        rules("reject"),
    )
    .await;
    let (c, pending) = proposed(&f, said, email.clone()).await;
    let contents: Vec<_> = pending.iter().map(|p| p.content.clone().unwrap()).collect();
    assert_eq!(contents, ["The user plays the cello"]);
    assert_eq!(f.rt.pending_memories(&c).await.unwrap(), pending);

    // Allowed (the capture surface's default): kept as proposed.
    let f = fixture(ProviderKind::Openai, on_demand(CaptureMode::Suggest)).await;
    let (_, pending) = proposed(&f, said, email).await;
    assert_eq!(
        pending[0].content.as_deref(),
        Some("The user's email is alice@example.com")
    );
}
