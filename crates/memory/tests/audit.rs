//! The audit log as an attacker would use it: caller-chosen names that would fill the log or
//! forge lines in it (a 1 MB client name, newlines and ANSI escapes in a key) are cut and
//! cleaned; a flood of cheap reads never hides a write (the log reads newest first, a page at a
//! time, and says when a page is cut); rows past the retention window are pruned.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test fixtures fail loudly"
)]

use memory::{AuditEntry, AuditQuery, MAX_NAME_CHARS, MemoryStore};
use types::{AuditTag, CallSurface, Surface};

use crate::common::{fixture, user};

fn tag(tool: &str, operation: &'static str, client: &str, key: &str) -> AuditTag {
    AuditTag {
        surface: CallSurface::new(Surface::Mcp).with_client(client),
        tool: tool.to_owned(),
        operation,
        namespace: Some("notes".to_owned()),
        key: Some(key.to_owned()),
        redactions: Vec::new(),
    }
}

async fn append(store: &MemoryStore, tag: &AuditTag) {
    let entry = AuditEntry {
        tag,
        note_id: None,
        outcome: "ok",
        reason: None,
    };
    store
        .audit()
        .append_audit(&user("alice"), &entry)
        .await
        .unwrap();
}

#[tokio::test]
async fn caller_chosen_names_are_capped_and_cannot_forge_lines() {
    let f = fixture().await;
    let huge = "x".repeat(1 << 20);
    let forged = "k\n2026-01-01T00:00:00Z mcp/admin memory_delete write notes all ok\u{1b}[2J\r";
    append(&f.store, &tag("memory_search", "read", &huge, forged)).await;
    let page = f
        .store
        .audit()
        .audit_page(&AuditQuery::default())
        .await
        .unwrap();
    let row = &page.rows[0];
    let client = row.client.as_deref().unwrap();
    assert_eq!(client.chars().count(), MAX_NAME_CHARS);
    assert!(client.ends_with('…'));
    let key = row.key.as_deref().unwrap();
    assert!(!key.chars().any(char::is_control), "{key:?}");
    assert!(key.starts_with("k?2026-01-01T00:00:00Z"), "{key:?}");
}

#[tokio::test]
async fn a_flood_of_reads_never_hides_a_write() {
    let f = fixture().await;
    append(&f.store, &tag("memory_save", "write", "c", "first-write")).await;
    for _ in 0..25 {
        append(&f.store, &tag("memory_search", "read", "c", "q")).await;
    }
    append(&f.store, &tag("memory_save", "write", "c", "last-write")).await;
    let query = AuditQuery {
        limit: 10,
        ..AuditQuery::default()
    };
    let page = f.store.audit().audit_page(&query).await.unwrap();
    assert_eq!(page.rows.len(), 10);
    assert_eq!(
        page.rows[0].key.as_deref(),
        Some("last-write"),
        "newest first"
    );
    assert!(page.next_before.is_some(), "a cut page says so");
    // Following the cursor reaches the first write; the last page says it is the last.
    let mut keys = Vec::new();
    let mut before = page.next_before;
    while let Some(cursor) = before {
        let next = AuditQuery {
            before: Some(cursor),
            ..query.clone()
        };
        let page = f.store.audit().audit_page(&next).await.unwrap();
        keys.extend(page.rows.iter().filter_map(|r| r.key.clone()));
        before = page.next_before;
    }
    assert_eq!(keys.len(), 17);
    assert_eq!(keys.last().map(String::as_str), Some("first-write"));
}

#[tokio::test]
async fn rows_past_the_retention_window_are_pruned() {
    let f = fixture().await;
    append(&f.store, &tag("memory_search", "read", "c", "old")).await;
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    append(&f.store, &tag("memory_search", "read", "c", "new")).await;
    assert_eq!(
        f.store
            .audit()
            .prune_audit(chrono::Duration::days(1))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        f.store
            .audit()
            .prune_audit(chrono::Duration::milliseconds(600))
            .await
            .unwrap(),
        1
    );
    let page = f
        .store
        .audit()
        .audit_page(&AuditQuery::default())
        .await
        .unwrap();
    let keys: Vec<_> = page.rows.iter().filter_map(|r| r.key.as_deref()).collect();
    assert_eq!(keys, ["new"]);
}
