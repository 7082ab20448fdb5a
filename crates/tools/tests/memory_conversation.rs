//! `include_conversation` on `memory_search`: notes and the conversation merged, labelled and
//! deduplicated (review finding F2), and a failing conversation leg that still returns the notes
//! and says so (F5). Real libSQL files through the registry.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::sync::Arc;

use async_trait::async_trait;
use memory::{
    CallKey, HybridQuery, MemoryError, MemoryRetrieval, MemoryStore, Note, NoteMetadata, SearchHit,
    WriteReceipt,
};
use serde_json::{Value, json};
use types::{Message, NoteId, SessionId, UserId};

use crate::common::memory_env::{ctx, env, registry_over, texts};

#[tokio::test]
async fn include_conversation_merges_labels_and_dedups() {
    let env = env().await;
    let alice = UserId::parse("alice").unwrap();
    let id = env.save("alice", "The user's cat is called Miso").await;
    let chat = SessionId::parse("chat-1").unwrap();
    env.store
        .sessions()
        .append_message(
            &chat,
            &alice,
            &Message::user("my cat Miso loves tuna treats"),
        )
        .await
        .unwrap();
    // Said in chat and saved as a note: returned once, as the note.
    env.store
        .sessions()
        .append_message(
            &chat,
            &alice,
            &Message::user("The user's cat is called Miso"),
        )
        .await
        .unwrap();
    // Another session's message is not part of this turn's conversation.
    let other = SessionId::parse("chat-2").unwrap();
    env.store
        .sessions()
        .append_message(
            &other,
            &alice,
            &Message::user("Miso the cat visited the vet"),
        )
        .await
        .unwrap();

    let only_notes = env.search("alice", "Miso cat").await;
    assert_eq!(only_notes.len(), 1);
    assert_eq!(only_notes[0]["source"], "user_memory");

    let merged = env
        .ok(
            "alice",
            "memory_search",
            json!({ "query": "Miso cat tuna", "include_conversation": true }),
        )
        .await;
    let merged = merged["results"].as_array().unwrap();
    let sources: Vec<(&str, &Value)> = merged
        .iter()
        .map(|h| (h["source"].as_str().unwrap(), &h["note_id"]))
        .collect();
    assert_eq!(merged.len(), 2, "{merged:?}");
    assert!(sources.contains(&("user_memory", &json!(id))));
    assert!(sources.contains(&("conversation", &Value::Null)));
    assert!(!texts(merged).contains(&"Miso the cat visited the vet"));
    let scores: Vec<f64> = merged
        .iter()
        .map(|h| h["score"].as_f64().unwrap())
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "ranked by one score: {scores:?}"
    );
}

/// A store whose multi-session queries fail (the conversation leg), to prove notes still return;
/// or, given hits, whose searches answer those hits (in that order) — the rest is the store's.
#[derive(Debug)]
struct FailingConversation(MemoryStore, Option<Vec<SearchHit>>);

#[async_trait]
impl MemoryRetrieval for FailingConversation {
    async fn store_note_once(
        &self,
        u: &UserId,
        k: Option<&CallKey>,
        c: &str,
        m: NoteMetadata,
    ) -> Result<WriteReceipt, MemoryError> {
        self.0.store_note_once(u, k, c, m).await
    }
    async fn delete_note_once(
        &self,
        u: &UserId,
        k: Option<&CallKey>,
        n: &NoteId,
    ) -> Result<WriteReceipt, MemoryError> {
        self.0.delete_note_once(u, k, n).await
    }
    async fn get_note(&self, u: &UserId, n: &NoteId) -> Result<Note, MemoryError> {
        self.0.get_note(u, n).await
    }
    async fn update_note_patched(
        &self,
        u: &UserId,
        k: Option<&CallKey>,
        n: &NoteId,
        c: &str,
        v: &str,
        p: memory::MetadataPatch,
    ) -> Result<WriteReceipt, MemoryError> {
        self.0.update_note_patched(u, k, n, c, v, p).await
    }
    async fn list_notes_page(
        &self,
        u: &UserId,
        q: &memory::ListQuery,
    ) -> Result<memory::NotePage, MemoryError> {
        self.0.list_notes_page(u, q).await
    }
    async fn hybrid_query(&self, q: &HybridQuery) -> Result<Vec<SearchHit>, MemoryError> {
        if let Some(hits) = &self.1 {
            return Ok(hits.clone());
        }
        if q.sessions.iter().any(|s| !s.is_user_memory()) {
            return Err(MemoryError::WorkerStopped);
        }
        self.0.hybrid_query(q).await
    }
    async fn put_keyed(
        &self,
        u: &UserId,
        k: Option<&CallKey>,
        ns: &str,
        key: &str,
        c: &str,
        m: NoteMetadata,
    ) -> Result<memory::KeyedWrite, MemoryError> {
        self.0.put_keyed(u, k, ns, key, c, m).await
    }
    async fn list_keys(
        &self,
        u: &UserId,
        q: &memory::KeyQuery,
    ) -> Result<memory::KeyPage, MemoryError> {
        self.0.list_keys(u, q).await
    }
    async fn session_info(&self, s: &types::SessionId) -> Result<memory::SessionInfo, MemoryError> {
        self.0.session_info(s).await
    }
    async fn recent_events(
        &self,
        s: &types::SessionId,
        limit: usize,
    ) -> Result<Vec<memory::StoredEvent>, MemoryError> {
        self.0.sessions().history(s, None, limit).await
    }
    async fn conversation_sessions(&self, u: &UserId) -> Result<Vec<SessionId>, MemoryError> {
        self.0.conversation_sessions(u).await
    }
    async fn conversation_contexts(
        &self,
        u: &UserId,
        hits: &[(SessionId, u64)],
        radius: usize,
    ) -> Result<Vec<Option<memory::ConversationContext>>, MemoryError> {
        self.0.conversation_contexts(u, hits, radius).await
    }
}

#[tokio::test]
async fn a_failed_conversation_leg_still_returns_notes_and_says_so() {
    let env = env().await;
    env.save("alice", "prefers window seats on flights").await;
    let registry = registry_over(Some(Arc::new(FailingConversation(env.store.clone(), None))));
    let out = registry
        .execute(
            "memory_search",
            &json!({ "query": "window seats", "include_conversation": true }).to_string(),
            &ctx(&env.root, "alice", "chat-1"),
        )
        .await;
    assert!(out.ok, "{}", out.output);
    let out: Value = serde_json::from_str(&out.output).unwrap();
    let hits = out["results"].as_array().unwrap();
    let note = out["note"].as_str().unwrap();
    assert_eq!(texts(hits), vec!["prefers window seats on flights"]);
    assert!(
        note.contains("conversation") && note.contains("skipped"),
        "{note}"
    );
}

#[tokio::test]
async fn a_time_in_the_query_ranks_past_conversations_of_that_time_first_and_says_so() {
    let env = env().await;
    let alice = UserId::parse("alice").unwrap();
    let now = chrono::Utc::now();
    let said = [
        ("chat-old", "Cat vet visit: the cat had its vet visit", 60),
        ("chat-new", "Took Miso the cat to the vet", 2),
    ];
    for (chat, text, days_ago) in said {
        env.store
            .sessions()
            .append_message_at(
                &SessionId::parse(chat).unwrap(),
                &alice,
                &Message::user(text),
                Some(now - chrono::Duration::days(days_ago)),
            )
            .await
            .unwrap();
    }
    let search = |query: &str| json!({ "query": query, "scope": "conversations" });
    let plain = env
        .ok("alice", "memory_search", search("cat vet visit"))
        .await;
    let hits = plain["results"].as_array().unwrap();
    assert_eq!(
        texts(hits),
        vec![
            "Cat vet visit: the cat had its vet visit",
            "Took Miso the cat to the vet"
        ]
    );
    assert!(plain.get("time").is_none(), "{plain}");

    let recent = env
        .ok(
            "alice",
            "memory_search",
            search("cat vet visit in the past week"),
        )
        .await;
    let hits = recent["results"].as_array().unwrap();
    assert_eq!(texts(hits)[0], "Took Miso the cat to the vet", "{recent}");
    // Each hit says when it was said; the output says how the time was read.
    let date = hits[0]["date"].as_str().unwrap();
    let said_at = chrono::DateTime::parse_from_rfc3339(date).unwrap();
    assert!((now - said_at.with_timezone(&chrono::Utc)).num_hours() >= 47);
    assert_eq!(recent["time"]["phrase"], "past week", "{recent}");
    assert!(recent["time"]["from"].is_string() && recent["time"]["until"].is_string());
}

/// In the user's first conversation there is no other to search: `scope` conversations answers
/// with no results (not an error), `all` with the notes, and the current one is searched when
/// `include_conversation` asks for it.
#[tokio::test]
async fn the_first_conversation_has_no_past_to_search_and_that_is_no_error() {
    let env = env().await;
    let alice = UserId::parse("alice").unwrap();
    env.save("alice", "The user's cat is called Miso").await;
    env.store
        .sessions()
        .append_message_at(
            &SessionId::parse("chat-1").unwrap(),
            &alice,
            &Message::user("What is my cat called?"),
            None,
        )
        .await
        .unwrap();
    let search = |scope: &str, current: bool| json!({"query": "cat called", "scope": scope, "include_conversation": current});
    let none = env
        .ok("alice", "memory_search", search("conversations", false))
        .await;
    assert_eq!(none["results"], json!([]), "{none}");
    let all = env.ok("alice", "memory_search", search("all", false)).await;
    assert_eq!(
        texts(all["results"].as_array().unwrap()),
        ["The user's cat is called Miso"]
    );
    let current = env
        .ok("alice", "memory_search", search("conversations", true))
        .await;
    assert_eq!(
        texts(current["results"].as_array().unwrap()),
        ["What is my cat called?"]
    );
}

/// Each conversation result is told where *it* was said. A short message that is the start of a
/// longer one ranked above it and left out to fit ("I like tea" / "I like tea with …") was
/// given the longer one's session, date and neighbours: results were matched to hits by text.
#[tokio::test]
async fn a_conversation_result_is_placed_where_it_was_said_not_where_a_longer_one_was() {
    let env = env().await;
    let alice = UserId::parse("alice").unwrap();
    let long = format!("I like tea with {}", "lemon and honey, ".repeat(60));
    let said = [
        ("chat-filler", "filler".to_owned()),
        ("chat-long", long.clone()),
        ("chat-short", "I like tea".to_owned()),
    ];
    for (chat, text) in &said {
        env.store
            .sessions()
            .append_message_at(
                &SessionId::parse(chat).unwrap(),
                &alice,
                &Message::user(text.as_str()),
                None,
            )
            .await
            .unwrap();
    }
    let hit = |chat: &str, seq: u64, text: &str, score: f64| -> SearchHit {
        serde_json::from_value(json!({
            "session_id": chat, "source": "conversation", "note_id": null, "text": text,
            "event_seq": seq, "score": score,
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
        }))
        .unwrap()
    };
    // Ten long results fill most of the room; the long tea message no longer fits, the short
    // one still does.
    let filler = "x".repeat(560);
    let mut hits: Vec<SearchHit> = (0..10)
        .map(|n| hit("chat-filler", n + 1, &format!("{n}{filler}"), 0.9))
        .collect();
    hits.push(hit("chat-long", 1, &long, 0.5));
    hits.push(hit("chat-short", 1, "I like tea", 0.4));
    let registry = registry_over(Some(Arc::new(FailingConversation(
        env.store.clone(),
        Some(hits),
    ))));
    let out = registry
        .execute(
            "memory_search",
            &json!({ "query": "tea", "scope": "conversations", "top_k": 12 }).to_string(),
            &ctx(&env.root, "alice", "chat-now"),
        )
        .await;
    assert!(out.ok, "{}", out.output);
    let out: Value = serde_json::from_str(&out.output).unwrap();
    assert_eq!(out["omitted"], 1, "the long one is left out: {out}");
    let short = out["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["text"] == "I like tea")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(short["session_id"], "chat-short", "{out}");
}

/// Bad input to `memory_search`'s search of past conversations: a `scope` of the wrong kind or
/// unknown, a blank query. Each is a short error naming the field (the allowed scopes listed),
/// with no path or SQL in it, and nothing changes. A blank query was searched and answered
/// with no results, which reads as "nothing remembered" rather than as a mistake to fix.
#[tokio::test]
async fn bad_search_input_is_refused_with_what_to_send() {
    let env = env().await;
    env.save("alice", "Our cat is called Miso").await;
    let before = env.note_count("alice").await;
    let scopes = "one of \"notes\", \"conversations\", \"all\"";
    let cases = [
        (json!({"query": "cat", "scope": "everything"}), scopes),
        (json!({"query": "cat", "scope": "Notes"}), scopes),
        (json!({"query": "cat", "scope": ""}), scopes),
        (json!({"query": "cat", "scope": 5}), scopes),
        (json!({"query": "cat", "scope": null}), scopes),
        (json!({"query": "cat", "scope": ["notes"]}), scopes),
        (json!({"query": "   ", "scope": "all"}), "not only spaces"),
        (json!({"query": "\n\t"}), "not only spaces"),
    ];
    for (args, names) in cases {
        let out = env
            .call("alice", "chat-1", "memory_search", args.clone())
            .await;
        assert!(!out.ok, "{args}: {}", out.output);
        assert_eq!(out.error_kind, Some("invalid_arguments"), "{args}");
        assert!(out.output.contains(names), "{args}: {}", out.output);
        let field = if args["query"].as_str().unwrap().trim().is_empty() {
            "query"
        } else {
            "scope"
        };
        assert!(out.output.contains(field), "{args}: {}", out.output);
        for leak in [env.root.to_string_lossy().as_ref(), "SELECT", "memory.db"] {
            assert!(!out.output.contains(leak), "{args}: {}", out.output);
        }
    }
    assert_eq!(env.note_count("alice").await, before);
}
