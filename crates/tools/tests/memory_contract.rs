//! Memory's contract with the model (issue 14 items 1, 2 and 4), through the registry over real
//! libSQL files: search shows what update replaces, results stay valid JSON under the output cap,
//! a retried call never writes twice, and a stopped write reports what really happened.

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
use tokio::sync::Notify;
use tools::{DEFAULT_OUTPUT_LIMIT, ToolOutcome, ToolRegistry, ToolSet};
use types::{
    MemoryDialect, NoteId, SessionId, ToolExecutionContext, TurnId, UserId, WorkspacePaths,
};

use crate::common::memory_env::alice_store;

struct Env {
    _dir: tempfile::TempDir,
    store: MemoryStore,
    root: std::path::PathBuf,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store = alice_store(dir.path()).await;
    let root = dir.path().join("ws");
    Env {
        _dir: dir,
        store,
        root,
    }
}

fn registry(memory: Arc<dyn MemoryRetrieval>) -> ToolRegistry {
    let mut registry = ToolRegistry::default();
    for tool in ToolSet::new(Some(memory))
        .memory_tools(MemoryDialect::Notes)
        .tools()
        .unwrap()
    {
        registry.register(tool).unwrap();
    }
    registry
}

fn ctx(root: &std::path::Path, call_id: Option<&str>) -> ToolExecutionContext {
    let user = UserId::parse("alice").unwrap();
    ToolExecutionContext {
        call_id: call_id.map(str::to_owned),
        ..ToolExecutionContext::new(
            user.clone(),
            SessionId::parse("chat-1").unwrap(),
            TurnId::parse("turn-1").unwrap(),
            WorkspacePaths::for_user(root, &user),
        )
    }
}

fn alice() -> UserId {
    UserId::parse("alice").unwrap()
}

async fn call(
    registry: &ToolRegistry,
    ctx: &ToolExecutionContext,
    tool: &str,
    args: Value,
) -> ToolOutcome {
    registry.execute(tool, &args.to_string(), ctx).await
}

fn parsed(out: &ToolOutcome) -> Value {
    assert!(out.ok, "failed: {}", out.output);
    serde_json::from_str(&out.output).unwrap_or_else(|e| panic!("not JSON ({e}): {}", out.output))
}

/// A long note of numbered sentences about `topic` (several chunks).
fn long_note(topic: &str, sentences: usize) -> String {
    (0..sentences)
        .map(|i| format!("Fact {i} about {topic}: detail number {i} is worth keeping. "))
        .collect::<String>()
        .trim()
        .to_owned()
}

#[tokio::test]
async fn a_long_note_round_trip_keeps_every_part_and_a_partial_view_cannot_replace_it() {
    let env = env().await;
    let registry = registry(Arc::new(env.store.clone()));
    let ctx = ctx(&env.root, None);
    let original = long_note("the Lisbon offsite", 110);
    assert!(original.len() > 6000 && original.len() < 8192);
    let saved = env
        .store
        .save(
            &alice(),
            None,
            &original,
            NoteMetadata::default(),
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap();
    for i in 0..19 {
        let other = long_note(&format!("the Lisbon offsite, budget line {i}"), 110);
        env.store
            .save(
                &alice(),
                None,
                &other,
                NoteMetadata::default(),
                memory::Similar::Unchecked,
            )
            .await
            .and_then(memory::Saved::into_note)
            .unwrap();
    }

    // Twenty long hits: valid JSON under the cap; what is not whole says so, with no version.
    let out = call(
        &registry,
        &ctx,
        "memory_search",
        json!({ "query": "Lisbon offsite detail", "top_k": 20 }),
    )
    .await;
    assert!(
        out.output.len() <= DEFAULT_OUTPUT_LIMIT,
        "{}",
        out.output.len()
    );
    let page = parsed(&out);
    let results = page["results"].as_array().unwrap();
    let omitted = page["omitted"].as_u64().unwrap_or(0) as usize;
    assert_eq!(results.len() + omitted, 20, "{page}");
    let partial: Vec<&Value> = results
        .iter()
        .filter(|r| r["partial"] == json!(true))
        .collect();
    assert!(!partial.is_empty(), "20 notes of 7 KB cannot all be whole");
    for r in &partial {
        assert!(
            r["version"].is_null(),
            "a partial result has no version: {r}"
        );
        let id = NoteId::parse(r["note_id"].as_str().unwrap()).unwrap();
        let whole = env.store.get_note(&alice(), &id).await.unwrap().content;
        assert_eq!(r["length"], json!(whole.chars().count()));
        assert!(
            whole.contains(r["text"].as_str().unwrap()),
            "an excerpt of the note"
        );
    }
    for r in results.iter().filter(|r| r["partial"].is_null()) {
        let id = NoteId::parse(r["note_id"].as_str().unwrap()).unwrap();
        let whole = env.store.get_note(&alice(), &id).await.unwrap().content;
        assert_eq!(
            r["text"],
            json!(whole),
            "a result without `partial` is whole"
        );
    }
    assert!(page["note"].as_str().unwrap().contains("partial"));

    // The model writes a "new" note from an excerpt: refused, whatever version it makes up.
    let excerpt = partial[0]["text"].as_str().unwrap();
    let target = partial[0]["note_id"].as_str().unwrap();
    let before = env
        .store
        .get_note(&alice(), &NoteId::parse(target).unwrap())
        .await
        .unwrap()
        .content;
    for version in ["0", results[0]["version"].as_str().unwrap_or("1")] {
        let refused = call(
            &registry,
            &ctx,
            "memory_update",
            json!({ "note_id": target, "content": format!("{excerpt} (edited)"), "version": version }),
        )
        .await;
        assert!(!refused.ok, "{}", refused.output);
        assert!(
            refused.output.contains("memory_search"),
            "{}",
            refused.output
        );
    }
    let after = env
        .store
        .get_note(&alice(), &NoteId::parse(target).unwrap())
        .await
        .unwrap()
        .content;
    assert_eq!(after, before, "nothing unseen was destroyed");

    // Narrowed to one result, the note comes whole with its version; the edit keeps every part.
    let page = parsed(
        &call(
            &registry,
            &ctx,
            "memory_search",
            json!({ "query": "Fact 42 about the Lisbon offsite", "top_k": 1 }),
        )
        .await,
    );
    let hit = &page["results"][0];
    assert!(hit["partial"].is_null(), "{hit}");
    let shown = hit["text"].as_str().unwrap();
    let id = hit["note_id"].as_str().unwrap();
    let version = hit["version"].as_str().unwrap();
    let edited = shown.replace("detail number 7 is", "detail number 7 was changed and is");
    let updated = parsed(
        &call(
            &registry,
            &ctx,
            "memory_update",
            json!({ "note_id": id, "content": edited, "version": version }),
        )
        .await,
    );
    let stored = env
        .store
        .get_note(&alice(), &NoteId::parse(id).unwrap())
        .await
        .unwrap()
        .content;
    assert_eq!(stored, edited);
    assert_eq!(
        stored.matches("is worth keeping").count(),
        110,
        "every sentence kept"
    );
    assert_ne!(updated["version"], json!(version));
    if id == saved.note_id.as_str() {
        assert_eq!(shown, original);
    }
    // The old version no longer replaces anything.
    let stale = call(
        &registry,
        &ctx,
        "memory_update",
        json!({ "note_id": id, "content": "short", "version": version }),
    )
    .await;
    assert!(
        !stale.ok && stale.output.contains("not its current one"),
        "{}",
        stale.output
    );
}

#[tokio::test]
async fn a_smaller_output_cap_drops_whole_results_and_counts_them() {
    let env = env().await;
    for i in 0..20 {
        env.store
            .save(
                &alice(),
                None,
                &long_note(&format!("tram line {i}"), 20),
                NoteMetadata::default(),
                memory::Similar::Unchecked,
            )
            .await
            .and_then(memory::Saved::into_note)
            .unwrap();
    }
    let registry = registry(Arc::new(env.store.clone())).with_output_limit(4096);
    let out = call(
        &registry,
        &ctx(&env.root, None),
        "memory_search",
        json!({ "query": "tram line detail", "top_k": 20 }),
    )
    .await;
    assert!(out.output.len() <= 4096);
    let page = parsed(&out);
    let kept = page["results"].as_array().unwrap().len();
    assert!(kept > 0 && kept < 20, "{page}");
    assert_eq!(kept + page["omitted"].as_u64().unwrap() as usize, 20);
}

#[tokio::test]
async fn a_retried_call_never_writes_twice() {
    let env = env().await;
    let registry = registry(Arc::new(env.store.clone()));
    let first = ctx(&env.root, Some("call_0"));
    let save = json!({ "content": "Prefers aisle seats" });
    let a = parsed(&call(&registry, &first, "memory_save", save.clone()).await);
    let b = parsed(&call(&registry, &first, "memory_save", save).await);
    assert_eq!(a["note_id"], b["note_id"]);
    assert!(b["message"].as_str().unwrap().contains("earlier attempt"));
    assert_eq!(env.store.list_notes(&alice()).await.unwrap().len(), 1);

    // A provider that reuses call ids: a different call under the same id is a new write.
    let c = parsed(
        &call(
            &registry,
            &first,
            "memory_save",
            json!({ "content": "Allergic to cats" }),
        )
        .await,
    );
    assert_ne!(c["note_id"], a["note_id"]);
    assert_eq!(env.store.list_notes(&alice()).await.unwrap().len(), 2);

    let update = json!({ "note_id": a["note_id"], "content": "Prefers window seats", "version": a["version"] });
    let retry = ctx(&env.root, Some("call_1"));
    let u1 = parsed(&call(&registry, &retry, "memory_update", update.clone()).await);
    let u2 = parsed(&call(&registry, &retry, "memory_update", update).await);
    assert_eq!(
        u1["version"], u2["version"],
        "the retry returns the first result"
    );

    let delete = json!({ "note_id": a["note_id"] });
    let gone = ctx(&env.root, Some("call_2"));
    parsed(&call(&registry, &gone, "memory_delete", delete.clone()).await);
    let again = parsed(&call(&registry, &gone, "memory_delete", delete).await);
    assert!(
        again["message"].as_str().unwrap().starts_with("Deleted."),
        "{again}"
    );
    assert_eq!(env.store.list_notes(&alice()).await.unwrap().len(), 1);
}

/// A store whose writes wait for `gate` (after saying so on `entered`), or forever.
#[derive(Debug)]
struct Gated {
    store: MemoryStore,
    entered: Notify,
    gate: Option<Notify>,
}

impl Gated {
    async fn wait(&self) {
        self.entered.notify_one();
        match &self.gate {
            Some(gate) => gate.notified().await,
            None => std::future::pending().await,
        }
    }
}

#[async_trait]
impl MemoryRetrieval for Gated {
    async fn store_note_once(
        &self,
        u: &UserId,
        k: Option<&CallKey>,
        c: &str,
        m: NoteMetadata,
    ) -> Result<WriteReceipt, MemoryError> {
        self.wait().await;
        self.store.store_note_once(u, k, c, m).await
    }
    async fn delete_note_once(
        &self,
        u: &UserId,
        k: Option<&CallKey>,
        n: &NoteId,
    ) -> Result<WriteReceipt, MemoryError> {
        self.wait().await;
        self.store.delete_note_once(u, k, n).await
    }
    async fn get_note(&self, u: &UserId, n: &NoteId) -> Result<Note, MemoryError> {
        self.store.get_note(u, n).await
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
        self.wait().await;
        self.store.update_note_patched(u, k, n, c, v, p).await
    }
    async fn list_notes_page(
        &self,
        u: &UserId,
        q: &memory::ListQuery,
    ) -> Result<memory::NotePage, MemoryError> {
        self.store.list_notes_page(u, q).await
    }
    async fn hybrid_query(&self, q: &HybridQuery) -> Result<Vec<SearchHit>, MemoryError> {
        self.store.hybrid_query(q).await
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
        self.store.put_keyed(u, k, ns, key, c, m).await
    }
    async fn list_keys(
        &self,
        u: &UserId,
        q: &memory::KeyQuery,
    ) -> Result<memory::KeyPage, MemoryError> {
        self.store.list_keys(u, q).await
    }
    async fn session_info(&self, s: &types::SessionId) -> Result<memory::SessionInfo, MemoryError> {
        self.store.session_info(s).await
    }
    async fn recent_events(
        &self,
        s: &types::SessionId,
        limit: usize,
    ) -> Result<Vec<memory::StoredEvent>, MemoryError> {
        self.store.sessions().history(s, None, limit).await
    }
}

#[tokio::test]
async fn a_write_that_commits_after_the_turn_is_stopped_reports_success() {
    let env = env().await;
    let gated = Arc::new(Gated {
        store: env.store.clone(),
        entered: Notify::new(),
        gate: Some(Notify::new()),
    });
    let registry = Arc::new(registry(gated.clone()));
    let ctx = ctx(&env.root, Some("call_9"));
    let running = tokio::spawn({
        let (registry, ctx) = (registry.clone(), ctx.clone());
        async move {
            call(
                &registry,
                &ctx,
                "memory_save",
                json!({ "content": "Likes jazz" }),
            )
            .await
        }
    });
    gated.entered.notified().await;
    ctx.cancellation.cancel();
    if let Some(gate) = &gated.gate {
        gate.notify_one();
    }
    let out = running.await.unwrap();
    let saved = parsed(&out);
    assert!(
        saved["message"].as_str().unwrap().starts_with("Saved."),
        "{saved}"
    );
    let notes = env.store.list_notes(&alice()).await.unwrap();
    assert_eq!(notes.len(), 1);
    assert_eq!(json!(notes[0].note_id), saved["note_id"]);
}

#[tokio::test]
async fn a_write_still_unfinished_says_its_outcome_is_unknown_and_how_to_check() {
    let env = env().await;
    let gated = Arc::new(Gated {
        store: env.store.clone(),
        entered: Notify::new(),
        gate: None,
    });
    let registry = Arc::new(registry(gated.clone()));
    let ctx = ctx(&env.root, Some("call_7"));
    let running = tokio::spawn({
        let (registry, ctx) = (registry.clone(), ctx.clone());
        async move {
            call(
                &registry,
                &ctx,
                "memory_delete",
                json!({ "note_id": "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f" }),
            )
            .await
        }
    });
    gated.entered.notified().await;
    ctx.cancellation.cancel();
    let out = running.await.unwrap();
    assert!(!out.ok);
    assert_eq!(out.error_kind, Some("outcome_unknown"));
    assert!(
        out.output.contains("may or may not have happened") && out.output.contains("memory_search"),
        "{}",
        out.output
    );
}

/// A side-effecting tool that finishes only once it is told to stop (its token is cancelled), as
/// a write that commits just after its deadline does; `grace` is what it asks the registry for.
struct LateWriter {
    interruption: tools::Interruption,
    answers: bool,
}

#[async_trait]
impl tools::Tool for LateWriter {
    fn name(&self) -> &str {
        "late_writer"
    }
    fn description(&self) -> &str {
        "test tool"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }
    fn safety_tier(&self) -> types::SafetyTier {
        types::SafetyTier::SideEffecting
    }
    fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(1)
    }
    fn interruption(&self) -> tools::Interruption {
        self.interruption
    }
    async fn execute(
        &self,
        _args: &Value,
        ctx: &ToolExecutionContext,
    ) -> Result<String, tools::ToolError> {
        ctx.cancellation.cancelled().await;
        if self.answers {
            Ok("committed".to_owned())
        } else {
            std::future::pending().await
        }
    }
}

#[tokio::test]
async fn after_a_timeout_a_settling_tool_reports_its_own_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let run = async |interruption, answers| {
        let mut registry = ToolRegistry::default();
        registry
            .register(Arc::new(LateWriter {
                interruption,
                answers,
            }))
            .unwrap();
        registry
            .execute("late_writer", "{}", &ctx(dir.path(), Some("c1")))
            .await
    };
    let settle = tools::Interruption::Settle {
        grace: std::time::Duration::from_secs(30),
        check: "look",
    };
    let out = run(settle, true).await;
    assert_eq!((out.ok, out.output.as_str()), (true, "committed"));
    let out = run(tools::Interruption::Abandon, true).await;
    assert_eq!(out.error_kind, Some("timeout"));
    let unknown = tools::Interruption::Settle {
        grace: std::time::Duration::from_millis(1),
        check: "call memory_search to check",
    };
    let out = run(unknown, false).await;
    assert_eq!(out.error_kind, Some("outcome_unknown"));
    assert!(
        out.output.ends_with("call memory_search to check"),
        "{}",
        out.output
    );
}
