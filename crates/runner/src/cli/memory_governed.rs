//! The CLI's memory operations, governed like every other surface's (DESIGN §7). `save`,
//! `update` and `delete` call the notes tools through a [`ToolRegistry`] built as the agent's is;
//! `restore`, `confirm`, `import` and `import-tree`, which no tool offers, and the reads
//! `search`, `get`, `history`, `deleted`, `list`, `export` and `export-tree` run through
//! [`Governance::govern`], the stages the
//! registry runs a memory tool through. Either way the surface is `cli` (client `runner`): the
//! `[governance]` permissions and the surface's read-only mode, its PII and secret policy (on
//! the way in and out), rate limits, and an audit row — in each write's own transaction (an
//! import: one row per imported note), and one per read.
//!
//! Rate limits count calls in this process's buckets, which start full: each command is one
//! call, an import or import-tree included whatever its size, so a limit with a burst of at
//! least one never refuses a lone command (see the memory chapter of the guidebook).

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use chrono::{DateTime, Utc};
use memory::{
    Category, DeletedNote, ExportedNote, MemoryRetrieval, MemoryStore, Note, NoteHistory,
    SearchHit, Similar,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tools::governance::Answer;
use tools::{Governance, MemoryAccess, ToolError, ToolRegistry};
use types::{
    AgentConfig, CallSurface, NoteId, SessionId, Surface, TimeReadView, ToolExecutionContext,
    TurnId, UserId, WorkspacePaths, memory_ops,
};

use crate::memory_tree;

/// The client name the CLI's calls carry in their audit rows.
const CLIENT: &str = "runner";

/// The user's store behind the `cli` surface's governance.
pub(crate) struct CliMemory {
    store: MemoryStore,
    registry: ToolRegistry,
    ctx: ToolExecutionContext,
}

impl CliMemory {
    pub(crate) fn new(
        store: &MemoryStore,
        config: &AgentConfig,
        user: &UserId,
        user_root: &Path,
    ) -> Result<Self> {
        let governance = Governance::new(config.governance.clone()).with_store(store);
        let memory = Some(Arc::new(store.clone()) as Arc<dyn MemoryRetrieval>);
        let registry = tools::ToolSet::new(memory)
            .retrieval(&config.retrieval)
            .memory_tools(types::MemoryDialect::Notes)
            .registry()?
            .with_output_limit(usize::MAX)
            .with_governance(Arc::new(governance));
        let ctx = ToolExecutionContext {
            surface: CallSurface::new(Surface::Cli).with_client(CLIENT),
            ..ToolExecutionContext::new(
                user.clone(),
                SessionId::parse("cli")?,
                TurnId::parse("cli")?,
                WorkspacePaths::new(user_root),
            )
        };
        Ok(Self {
            store: store.clone(),
            registry,
            ctx,
        })
    }

    /// Calls the notes tool `name` through the registry's pipeline; its JSON answer, or its
    /// error (a governance refusal is the ADR's error object) as the command's one-line error.
    pub(crate) async fn call(&self, name: &str, args: Value) -> Result<Value> {
        let outcome = self
            .registry
            .execute(name, &args.to_string(), &self.ctx)
            .await;
        if !outcome.ok {
            bail!("{}", outcome.output);
        }
        serde_json::from_str(&outcome.output).context("the tool's answer is not JSON")
    }

    /// `update`: the note's whole new text, replacing its current version (the operator's edit
    /// wins over one made since they last looked).
    pub(crate) async fn update(&self, id: &NoteId, text: &str) -> Result<Value> {
        let current = self.store.get_note(&self.ctx.user_id, id).await?;
        let token = memory::edit_token(&current.content);
        let args = json!({"note_id": id, "content": text, "version": token});
        self.call(tools::MEMORY_UPDATE_TOOL_NAME, args).await
    }

    pub(crate) async fn restore(&self, id: &NoteId, version: Option<u32>) -> Result<Note> {
        let args = json!({"note_id": id, "version": version});
        self.govern(
            memory_ops::RESTORE,
            &MemoryAccess::note_change(id),
            args,
            |_, ctx| async move {
                self.store
                    .restore(&ctx.user_id, audit_call(&ctx).as_ref(), id, version)
                    .await
                    .map_err(store_error)
            },
        )
        .await
    }

    /// `confirm`: the note, and whether it changed (a note confirmed already, or trusted from
    /// the start, is left as it is: no write, no audit row).
    pub(crate) async fn confirm(&self, id: &NoteId) -> Result<(Note, Changed)> {
        let args = json!({"note_id": id});
        let flag = std::sync::atomic::AtomicBool::new(false);
        let changed = &flag;
        let note = self
            .govern(
                memory_ops::CONFIRM,
                &MemoryAccess::note_change(id),
                args,
                |_, ctx| async move {
                    let before = self
                        .store
                        .get_note(&ctx.user_id, id)
                        .await
                        .map_err(store_error)?;
                    let unconfirmed = before
                        .metadata
                        .provenance
                        .as_ref()
                        .is_some_and(|p| !p.confirmed);
                    changed.store(unconfirmed, std::sync::atomic::Ordering::Relaxed);
                    self.store
                        .confirm(&ctx.user_id, audit_call(&ctx).as_ref(), id)
                        .await
                        .map_err(store_error)
                },
            )
            .await?;
        let changed = match flag.into_inner() {
            true => Changed::Yes,
            false => Changed::No,
        };
        Ok((note, changed))
    }

    /// `import`: one governed call for the whole file (one rate-limit token); the free text of
    /// every note (content, tags, context, extra fields) is screened as a save's is, and each
    /// imported note records its own audit row.
    pub(crate) async fn import(
        &self,
        notes: Vec<ExportedNote>,
        similar: Similar,
        from: Option<&str>,
    ) -> Result<Value> {
        let texts: Vec<Value> = notes
            .iter()
            .map(|n| {
                json!({
                    "content": n.content, "tags": n.metadata.tags,
                    "context": n.metadata.context, "extra": n.metadata.extra,
                })
            })
            .collect();
        let access = MemoryAccess::notes_write(&["notes"]);
        let args = json!({ "notes": texts });
        self.govern(memory_ops::IMPORT, &access, args, |args, ctx| async move {
            let notes = screened_notes(notes, &args)?;
            let report = self
                .store
                .import(
                    &ctx.user_id,
                    audit_call(&ctx).as_ref(),
                    notes,
                    similar,
                    from,
                )
                .await
                .map_err(store_error)?;
            let mut answer = json!(report);
            answer["message"] = json!(import_summary(&report));
            Ok(answer)
        })
        .await
    }

    /// `import-tree`: one governed call for the whole directory; each file written records its
    /// own audit row.
    pub(crate) async fn import_tree(&self, dir: &runner::SafeDir) -> Result<Value> {
        let files = memory_tree::read_tree(dir)?;
        let (paths, contents): (Vec<String>, Vec<String>) = files.into_iter().unzip();
        let access = MemoryAccess::notes_write(&["contents"]);
        let args = json!({"paths": paths, "contents": contents});
        self.govern(
            memory_ops::IMPORT_TREE,
            &access,
            args,
            |args, ctx| async move {
                let contents: Vec<String> = serde_json::from_value(args["contents"].clone())
                    .map_err(|e| ToolError::execution_with("the screened files", e))?;
                let files: Vec<(String, String)> = paths.into_iter().zip(contents).collect();
                let n =
                    memory_tree::write_tree(&self.store, &ctx.user_id, &files, ctx.audit.as_ref())
                        .await
                        .map_err(|e| ToolError::execution(format!("{e:#}")))?;
                Ok(json!({"imported_files": n}))
            },
        )
        .await
    }

    /// `search`: the hybrid query as the CLI asks it, governed as `memory_search` (a read), and
    /// how its words about time were read.
    pub(crate) async fn search(
        &self,
        query: memory::HybridQuery,
    ) -> Result<(Vec<SearchRow>, Option<TimeReadView>)> {
        let args = json!({"query": query.text});
        let access = MemoryAccess::notes_read();
        self.govern(memory_ops::SEARCH, &access, args, |_, ctx| async move {
            // The read rules of `[governance]` hold for each hit's namespace too; the store
            // is asked for more when they name namespaces, so the answer is not left short.
            let top_k = query.top_k;
            let mut query = query;
            query.top_k = tools::search_fetch_k(&ctx, top_k);
            let time = self
                .store
                .read_and_settle_time(&mut query)
                .await
                .map_err(store_error)?;
            let hits = self.store.search(&query).await.map_err(store_error)?;
            let rows = tools::readable_hits(&ctx, hits, top_k)
                .into_iter()
                .map(SearchRow::from)
                .collect();
            Ok((rows, time))
        })
        .await
    }

    /// `get`: one note, governed as a read of that note.
    pub(crate) async fn get(&self, id: &NoteId) -> Result<Note> {
        self.govern(
            memory_ops::GET,
            &MemoryAccess::note_read(id),
            json!({"note_id": id}),
            |_, ctx| async move {
                self.store
                    .get_note(&ctx.user_id, id)
                    .await
                    .map_err(store_error)
            },
        )
        .await
    }

    /// `history`: every version of a note, governed as a read of that note.
    pub(crate) async fn history(&self, id: &NoteId) -> Result<NoteHistory> {
        self.govern(
            memory_ops::HISTORY,
            &MemoryAccess::note_read(id),
            json!({"note_id": id}),
            |_, ctx| async move {
                self.store
                    .history(&ctx.user_id, id)
                    .await
                    .map_err(store_error)
            },
        )
        .await
    }

    /// `deleted`: the notes that can still be restored, governed as a read.
    pub(crate) async fn deleted(&self) -> Result<Vec<DeletedNote>> {
        let access = MemoryAccess::notes_read();
        self.govern(
            memory_ops::DELETED,
            &access,
            json!({}),
            |_, ctx| async move {
                self.store
                    .list_deleted(&ctx.user_id)
                    .await
                    .map_err(store_error)
            },
        )
        .await
    }

    /// `list`, `export` and `export-tree`: a read the command carries out itself (it prints or
    /// writes as it goes), governed as `name`: refused before anything is read, and audited with
    /// its outcome, like every other read of the store.
    pub(crate) async fn read<T: Answer>(
        &self,
        name: &str,
        op: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        self.govern(name, &MemoryAccess::notes_read(), json!({}), |_, _| async {
            op.await.map_err(|e| ToolError::execution(format!("{e:#}")))
        })
        .await
    }

    /// `op` through the one pipeline as the `cli` surface; its typed answer, or the pipeline's
    /// refusal or the operation's failure as the command's one-line error.
    async fn govern<T, F, Fut>(
        &self,
        name: &str,
        access: &MemoryAccess,
        args: Value,
        op: F,
    ) -> Result<T>
    where
        T: Answer,
        F: FnOnce(Value, ToolExecutionContext) -> Fut,
        Fut: Future<Output = Result<T, ToolError>>,
    {
        self.registry
            .governance()
            .govern(name, access, args, &self.ctx, op)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))
    }
}

/// `imported 2; left out 3: 1 already in memory (imported before), ...`: what the report's
/// lists hold, in words.
fn import_summary(report: &memory::ImportReport) -> String {
    let mut left_out = Vec::new();
    let mut add = |n: usize, why: &str| {
        if n > 0 {
            left_out.push(format!("{n} {why}"));
        }
    };
    add(
        report.already_present.len(),
        "already in memory (same id: imported before)",
    );
    add(
        report.duplicates.len(),
        "with the same text as a note in memory or earlier in the file",
    );
    add(
        report.similar.len(),
        "too similar to notes in memory (--allow-similar imports them)",
    );
    let skipped = report.already_present.len() + report.duplicates.len() + report.similar.len();
    match skipped {
        0 => format!("imported {}", report.imported),
        _ => format!(
            "imported {}; left out {skipped}: {} (their ids in already_present, duplicates, similar)",
            report.imported,
            left_out.join(", ")
        ),
    }
}

/// Whether a command changed what it was asked to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Changed {
    Yes,
    No,
}

/// One hit of `search`, as the command prints it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SearchRow {
    pub note_id: Option<NoteId>,
    /// A message found in a past conversation: its session and place in it (`None` for notes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_seq: Option<u64>,
    pub text: String,
    pub score: f64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub category: Option<Category>,
    pub tags: Vec<String>,
}

impl From<SearchHit> for SearchRow {
    fn from(h: SearchHit) -> Self {
        let message = h.source == memory::HitSource::Conversation;
        Self {
            note_id: h.note_id,
            session_id: message.then(|| h.session_id.to_string()),
            event_seq: message.then_some(h.event_seq),
            text: h.text,
            score: h.score,
            created_at: h.created_at,
            updated_at: h.updated_at,
            category: h.category,
            tags: h.tags,
        }
    }
}

/// The notes with the free text the governance stage screened (redacted in place, if the
/// surface redacts) put back.
fn screened_notes(
    mut notes: Vec<ExportedNote>,
    args: &Value,
) -> Result<Vec<ExportedNote>, ToolError> {
    let screened = args["notes"].as_array().map_or(&[][..], Vec::as_slice);
    for (note, texts) in notes.iter_mut().zip(screened) {
        let field = |name: &str| texts.get(name).cloned().unwrap_or(Value::Null);
        let bad = |e| ToolError::execution_with("the screened notes", e);
        note.content = serde_json::from_value(field("content")).map_err(bad)?;
        note.metadata.tags = serde_json::from_value(field("tags")).map_err(bad)?;
        note.metadata.context = serde_json::from_value(field("context")).map_err(bad)?;
        note.metadata.extra = serde_json::from_value(field("extra")).map_err(bad)?;
    }
    Ok(notes)
}

/// A store error as the operator reads it: the error and its causes, on one line.
fn store_error(error: memory::MemoryError) -> ToolError {
    let mut message = error.to_string();
    let mut cause = std::error::Error::source(&error);
    while let Some(c) = cause {
        message.push_str(&format!(": {c}"));
        cause = c.source();
    }
    ToolError::execution(message)
}

/// The store's call for a CLI operation: no idempotency key (each command is one attempt), the
/// pipeline's audit tag recorded in the write's own transaction.
fn audit_call(ctx: &ToolExecutionContext) -> Option<memory::CallKey> {
    ctx.audit.clone().map(memory::CallKey::audit_only)
}
