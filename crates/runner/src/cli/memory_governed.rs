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
use memory::{ExportedNote, MemoryRetrieval, MemoryStore, Similar};
use serde_json::{Value, json};
use tools::governance::AuditSink;
use tools::{Governance, MemoryAccess, OutputFormat, ToolError, ToolRegistry};
use types::{
    AgentConfig, CallSurface, NoteId, SessionId, Surface, ToolExecutionContext, TurnId, UserId,
    WorkspacePaths,
};

use crate::memory_tree;

/// The client name the CLI's calls carry in their audit rows.
const CLIENT: &str = "runner";

/// Names of the governed operations no tool offers (for permissions, limits and audit rows).
pub(crate) const RESTORE: &str = "memory_restore";
pub(crate) const CONFIRM: &str = "memory_confirm";
pub(crate) const IMPORT: &str = "memory_import";
pub(crate) const IMPORT_TREE: &str = "memory_import_tree";
pub(crate) const GET: &str = "memory_get";
pub(crate) const HISTORY: &str = "memory_history";
pub(crate) const DELETED: &str = "memory_deleted";
pub(crate) const LIST: &str = "memory_list";
pub(crate) const EXPORT: &str = "memory_export";
pub(crate) const EXPORT_TREE: &str = "memory_export_tree";

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
        let audit: Arc<dyn AuditSink> = Arc::new(store.clone());
        let governance = Governance::new(config.governance.clone()).with_audit(audit);
        let memory = Some(Arc::new(store.clone()) as Arc<dyn MemoryRetrieval>);
        let mut registry = ToolRegistry::default()
            .with_output_limit(usize::MAX)
            .with_governance(Arc::new(governance));
        for tool in tools::memory_tools(memory, &config.retrieval) {
            registry.register(tool)?;
        }
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
        let version = memory::note_version(&current.content);
        let args = json!({"note_id": id, "content": text, "version": version});
        self.call(tools::MEMORY_UPDATE_TOOL_NAME, args).await
    }

    pub(crate) async fn restore(&self, id: &NoteId, version: Option<u32>) -> Result<Value> {
        let access = MemoryAccess::notes_write(&[])
            .keeping_lifetime()
            .with_key(Some(id.as_str()));
        let args = json!({"note_id": id, "version": version});
        self.govern(RESTORE, &access, args, |_, ctx| async move {
            let note = self
                .store
                .restore(
                    &ctx.user_id,
                    ctx.audit
                        .as_ref()
                        .cloned()
                        .map(memory::CallKey::audit_only)
                        .as_ref(),
                    id,
                    version,
                )
                .await
                .map_err(store_error)?;
            Ok(json!(note).to_string())
        })
        .await
    }

    pub(crate) async fn confirm(&self, id: &NoteId) -> Result<Value> {
        let access = MemoryAccess::notes_write(&[])
            .keeping_lifetime()
            .with_key(Some(id.as_str()));
        self.govern(
            CONFIRM,
            &access,
            json!({"note_id": id}),
            |_, ctx| async move {
                let note = self
                    .store
                    .confirm(
                        &ctx.user_id,
                        ctx.audit
                            .as_ref()
                            .cloned()
                            .map(memory::CallKey::audit_only)
                            .as_ref(),
                        id,
                    )
                    .await
                    .map_err(store_error)?;
                Ok(json!(note).to_string())
            },
        )
        .await
    }

    /// `import`: one governed call for the whole file (one rate-limit token); the free text of
    /// every note (content, tags, context, extra fields) is screened as a save's is, and each
    /// imported note records its own audit row.
    pub(crate) async fn import(&self, notes: Vec<ExportedNote>, similar: Similar) -> Result<Value> {
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
        self.govern(IMPORT, &access, args, |args, ctx| async move {
            let notes = screened_notes(notes, &args)?;
            let report = self
                .store
                .import(
                    &ctx.user_id,
                    ctx.audit
                        .as_ref()
                        .cloned()
                        .map(memory::CallKey::audit_only)
                        .as_ref(),
                    notes,
                    similar,
                )
                .await
                .map_err(store_error)?;
            Ok(json!(report).to_string())
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
        self.govern(IMPORT_TREE, &access, args, |args, ctx| async move {
            let contents: Vec<String> = serde_json::from_value(args["contents"].clone())
                .map_err(|e| ToolError::execution_with("the screened files", e))?;
            let files: Vec<(String, String)> = paths.into_iter().zip(contents).collect();
            let n = memory_tree::write_tree(&self.store, &ctx.user_id, &files, ctx.audit.as_ref())
                .await
                .map_err(|e| ToolError::execution(format!("{e:#}")))?;
            Ok(json!({"imported_files": n}).to_string())
        })
        .await
    }

    /// `search`: the hybrid query as the CLI asks it, governed as `memory_search` (a read).
    pub(crate) async fn search(&self, query: memory::HybridQuery) -> Result<Value> {
        let args = json!({"query": query.text});
        let access = MemoryAccess::notes_read();
        self.govern(
            tools::MEMORY_SEARCH_TOOL_NAME,
            &access,
            args,
            |_, ctx| async move {
                // The read rules of `[governance]` hold for each hit's namespace too; the store
                // is asked for more when they name namespaces, so the answer is not left short.
                let top_k = query.top_k;
                let mut query = query;
                query.top_k = tools::search_fetch_k(&ctx, top_k);
                let hits = self.store.hybrid_query(&query).await.map_err(store_error)?;
                let rows: Vec<Value> = tools::readable_hits(&ctx, hits, top_k)
                    .iter()
                    .map(|h| {
                        json!({
                            "note_id": h.note_id, "text": h.text, "score": h.score,
                            "created_at": h.created_at, "updated_at": h.updated_at,
                            "category": h.category, "tags": h.tags,
                        })
                    })
                    .collect();
                Ok(Value::Array(rows).to_string())
            },
        )
        .await
    }

    /// `get` and `history`: one note, or every version of it, governed as a read of that note.
    pub(crate) async fn get(&self, id: &NoteId, history: bool) -> Result<Value> {
        let access = MemoryAccess::notes_read().with_key(Some(id.as_str()));
        let name = if history { HISTORY } else { GET };
        self.govern(name, &access, json!({"note_id": id}), |_, ctx| async move {
            let value = if history {
                json!(
                    self.store
                        .history(&ctx.user_id, id)
                        .await
                        .map_err(store_error)?
                )
            } else {
                json!(
                    self.store
                        .get_note(&ctx.user_id, id)
                        .await
                        .map_err(store_error)?
                )
            };
            Ok(value.to_string())
        })
        .await
    }

    /// `deleted`: the notes that can still be restored, governed as a read.
    pub(crate) async fn deleted(&self) -> Result<Value> {
        let access = MemoryAccess::notes_read();
        self.govern(DELETED, &access, json!({}), |_, ctx| async move {
            let deleted = self
                .store
                .list_deleted(&ctx.user_id)
                .await
                .map_err(store_error)?;
            Ok(json!(deleted).to_string())
        })
        .await
    }

    /// `list`, `export` and `export-tree`: a read the command carries out itself (it prints or
    /// writes as it goes), governed as `name`: refused before anything is read, and audited with
    /// its outcome, like every other read of the store.
    pub(crate) async fn read<T>(
        &self,
        name: &str,
        op: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let access = MemoryAccess::notes_read();
        let mut ran = None;
        let slot = &mut ran;
        let governed = self
            .registry
            .governance()
            .govern(
                name,
                &access,
                json!({}),
                &self.ctx,
                OutputFormat::Text,
                |_, _| async move {
                    let result = op.await;
                    // The outcome is what the closing stages record; the value goes back
                    // through `slot`.
                    let outcome = match &result {
                        Ok(_) => Ok(String::new()),
                        Err(e) => Err(ToolError::execution(format!("{e:#}"))),
                    };
                    *slot = Some(result);
                    outcome
                },
            )
            .await;
        match (ran, governed) {
            (Some(result), _) => result,
            (None, Err(e)) => bail!("{e}"),
            (None, Ok(_)) => bail!("the command did not run; try again"),
        }
    }

    async fn govern<F, Fut>(
        &self,
        name: &str,
        access: &MemoryAccess,
        args: Value,
        op: F,
    ) -> Result<Value>
    where
        F: FnOnce(Value, ToolExecutionContext) -> Fut,
        Fut: Future<Output = Result<String, ToolError>>,
    {
        let governance = self.registry.governance();
        let output = governance
            .govern(name, access, args, &self.ctx, OutputFormat::Json, op)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        serde_json::from_str(&output).context("the answer is not JSON")
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
