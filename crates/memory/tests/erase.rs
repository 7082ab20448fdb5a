//! `erase_database` (what `runner forget` does on a server): every table is dropped, all or
//! nothing, and a database holding another user's sessions is refused untouched.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common::{Backend, fixture_on, on_both_backends, user};

on_both_backends!(erasing_drops_every_table_and_the_store_starts_again_empty);

async fn erasing_drops_every_table_and_the_store_starts_again_empty(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    for i in 0..5 {
        crate::common::save_note(&f.store, &alice, &format!("alice note {i}")).await;
    }
    let raw = f.raw().await;
    // A table added by someone else's migration is covered too.
    raw.conn
        .execute("CREATE TABLE added_later (x TEXT)", ())
        .await
        .unwrap();
    raw.conn
        .execute("INSERT INTO added_later VALUES ('private')", ())
        .await
        .unwrap();
    let tables = "SELECT count(*) FROM sqlite_master WHERE type = 'table' \
                  AND name NOT LIKE 'sqlite_%'";

    // Another user's session in the same database: refused, nothing erased.
    raw.conn
        .execute(
            "INSERT INTO sessions (session_id, user_id, kind, title, created_at, \
             last_active_at, next_seq) VALUES ('memory:bob', 'bob', 'memory', '', '', '', 1)",
            (),
        )
        .await
        .unwrap();
    f.store.sync().await.unwrap();
    let before = raw.count(tables, ()).await;
    let err = f.store.upkeep().erase_database(&alice).await.unwrap_err();
    assert!(err.is_invalid_input(), "{err}");
    assert!(err.to_string().contains("bob"), "{err}");
    assert_eq!(raw.count(tables, ()).await, before);
    assert_eq!(f.store.list_notes(&alice).await.unwrap().len(), 5);

    // With only alice's data it goes, every table of it.
    raw.conn
        .execute("DELETE FROM sessions WHERE user_id = 'bob'", ())
        .await
        .unwrap();
    f.store.sync().await.unwrap();
    let erased = f.store.upkeep().erase_database(&alice).await.unwrap();
    assert!(erased.tables >= 5, "{erased:?}");
    assert!(erased.rows >= 6, "{erased:?}");
    let raw = f.raw().await;
    assert_eq!(raw.count(tables, ()).await, 0, "no table left");
    let again = f.reopen().await;
    assert!(again.list_notes(&alice).await.unwrap().is_empty());
}
