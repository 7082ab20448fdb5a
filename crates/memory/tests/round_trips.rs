//! What a write carries survives the trip exactly, on every backend: export then import keeps
//! ids and metadata and is idempotent (a governed import audits each note it adds); a save retried
//! for the same tool call is written once, and any text — SQL-looking, quoted, any script — reads
//! back as it was saved (a remote save is one batch with its values written into the SQL).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;
use crate::store::{KEYWORDS_ONLY, note_ids_found};

use common::{Backend, fixture_on, on_both_backends, user};
use memory::{HybridQuery, NoteMetadata, Weights};
use types::{NoteId, SessionId};

on_both_backends!(
    a_retried_save_writes_once_and_any_text_reads_back_exactly,
    export_and_import_keep_ids_and_are_idempotent,
);

async fn export_and_import_keep_ids_and_are_idempotent(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    let tagged = NoteMetadata {
        tags: vec!["food".into()],
        ..NoteMetadata::default()
    };
    f.store
        .save(
            &alice,
            None,
            "Alice is vegetarian.",
            tagged,
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap();
    common::save_note(&f.store, &alice, "Alice's birthday is in May.").await;
    let exported = f.store.export_notes(&alice).await.unwrap();
    assert_eq!(exported.len(), 2);
    let line = serde_json::to_string(&exported[0]).unwrap();
    assert!(line.contains("\"tags\":[\"food\"]"), "{line}");

    // Into another store: one note first, then both (the stored one is skipped by id).
    let other = fixture_on(backend).await;
    assert_eq!(
        other
            .store
            .import(
                &alice,
                None,
                exported[..1].to_vec(),
                memory::Similar::Unchecked,
                None
            )
            .await
            .map(|report| report.imported)
            .unwrap(),
        1
    );
    assert_eq!(
        other
            .store
            .import(
                &alice,
                None,
                exported.clone(),
                memory::Similar::Unchecked,
                None
            )
            .await
            .map(|report| report.imported)
            .unwrap(),
        1
    );
    assert_eq!(
        other
            .store
            .import(
                &alice,
                None,
                exported.clone(),
                memory::Similar::Unchecked,
                None
            )
            .await
            .map(|report| report.imported)
            .unwrap(),
        0
    );
    assert_eq!(other.store.export_notes(&alice).await.unwrap(), exported);
    let found = note_ids_found(&other.store, "alice", "birthday").await;
    assert_eq!(found, [exported[1].note_id.to_string()]);
    let id: NoteId = exported[0].note_id.clone();
    other
        .store
        .update(
            &alice,
            None,
            &id,
            "Alice is vegan now.",
            None,
            memory::MetadataPatch::default(),
        )
        .await
        .and_then(memory::Written::into_note)
        .unwrap();

    // A governed import (the CLI's) records one audit row per note it adds, in the write that
    // adds it — on a remote server, in the same one-request batch.
    let governed = fixture_on(backend).await;
    let tag = types::AuditTag {
        tool: "memory_import".to_owned(),
        operation: "write",
        ..types::AuditTag::default()
    };
    let report = governed
        .store
        .import(
            &alice,
            Some(&tag)
                .cloned()
                .map(memory::CallKey::audit_only)
                .as_ref(),
            exported.clone(),
            memory::Similar::Allow,
            None,
        )
        .await
        .unwrap();
    assert_eq!(report.imported, 2, "{report:?}");
    let mut audited: Vec<String> = governed
        .store
        .audit()
        .audit_log(None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| {
            assert_eq!(
                (r.tool.as_str(), r.outcome.as_str()),
                ("memory_import", "ok")
            );
            r.note_id.unwrap()
        })
        .collect();
    audited.sort();
    let mut ids: Vec<String> = exported.iter().map(|n| n.note_id.to_string()).collect();
    ids.sort();
    assert_eq!(audited, ids);
}

/// A save made for a tool call is written once however often the call is retried, with its audit
/// row and receipt; text that looks like SQL, quotes, placeholders and any script reads
/// back exactly, with its metadata, and is found by both search legs; a NUL is refused. (A remote store sends the
/// save as one batch with its values written into the SQL: this is what keeps that honest.)
async fn a_retried_save_writes_once_and_any_text_reads_back_exactly(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    let text = "Bob's 'nickname' is ?1 -- x'00'; DROP TABLE notes; \\ 日本 🦀\nline two";
    // A NUL is refused on every backend (SQLite's local API would cut the text there).
    let err = f
        .store
        .save(
            &alice,
            None,
            "before \0 after",
            NoteMetadata::default(),
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap_err();
    assert!(err.is_invalid_input(), "{err:?}");
    let metadata = NoteMetadata {
        category: Some(memory::Category::Preference),
        tags: vec!["o'hara".to_owned(), "?2".to_owned()],
        context: Some("said on 'Monday'".to_owned()),
        confidence: Some(0.125),
        expires_at: Some(chrono::Utc::now() + chrono::Duration::days(3)),
        ..NoteMetadata::default()
    };
    let tag = types::AuditTag {
        tool: "memory_save".to_owned(),
        operation: "write",
        key: Some("k'1".to_owned()),
        ..types::AuditTag::default()
    };
    let call = memory::CallKey::new("chat-1", "call_0", "memory_save", "{}").with_audit(tag);
    let first = f
        .store
        .save(
            &alice,
            Some(&call),
            text,
            metadata.clone(),
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_receipt)
        .unwrap();
    assert!(!first.replayed);
    let again = f
        .store
        .save(
            &alice,
            Some(&call),
            "something else",
            NoteMetadata::default(),
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_receipt)
        .unwrap();
    assert_eq!(
        again,
        memory::WriteReceipt {
            replayed: true,
            ..first.clone()
        }
    );
    let notes = f.store.list_notes(&alice).await.unwrap();
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].note_id, first.note_id);
    assert_eq!(notes[0].content, text);
    let stored = &notes[0].metadata;
    assert_eq!(
        (
            &stored.category,
            &stored.tags,
            &stored.context,
            stored.confidence
        ),
        (
            &metadata.category,
            &metadata.tags,
            &metadata.context,
            metadata.confidence
        )
    );
    assert_eq!(
        stored.expires_at.map(|t| t.timestamp_millis()),
        metadata.expires_at.map(|t| t.timestamp_millis())
    );
    assert_eq!(first.edit_token, Some(memory::edit_token(text)));
    let audit = f.store.audit().audit_log(None, 10).await.unwrap();
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(
        (audit[0].note_id.as_deref(), audit[0].key.as_deref()),
        (Some(first.note_id.as_str()), Some("k'1"))
    );
    let vector_only = Weights {
        vector: 1.0,
        fts: 0.0,
    };
    for (query, weights) in [("nickname", KEYWORDS_ONLY), (text, vector_only)] {
        let q = HybridQuery {
            weights,
            ..HybridQuery::new(vec![SessionId::user_memory(&alice)], query, 5)
        };
        let hits = f.store.search(&q).await.unwrap();
        assert_eq!(hits.len(), 1, "{weights:?}");
        assert_eq!(
            hits[0].note_id.as_ref(),
            Some(&first.note_id),
            "{weights:?}"
        );
    }
    let stats = f.store.upkeep().stats().await.unwrap();
    assert_eq!((stats.notes, stats.indexed_vectors), (1, stats.vectors));
}
