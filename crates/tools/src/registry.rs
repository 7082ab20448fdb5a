//! The registry: the tools offered to the model, and the one pipeline every call goes through:
//! look up → parse → validate against the schema → (memory tools) permission, rate limit, PII and
//! secrets on write ([`crate::governance`]) → run under timeout and cancellation (a tool whose
//! work may already have committed settles: see [`Interruption`]; a write records its audit row
//! in its own transaction) → (memory tools) PII on the way out, audit, metrics → scrub secrets
//! and host paths → bound the output by its format (JSON stays valid: see [`crate::fit_json`]).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;

use serde_json::Value;
use tracing::Instrument;
use types::{ToolExecutionContext, ToolSchema, UntrustedInput};

use crate::governance::{Governance, ToolText};
use crate::scrub::Scrubber;
use crate::tool::{Interruption, OutputFormat};
use crate::truncate::{DEFAULT_OUTPUT_LIMIT, fit_output, truncate_output};
use crate::validate::validate_args;
use crate::{Tool, ToolError};

/// Error messages are capped shorter than outputs.
const ERROR_LIMIT: usize = 2 * 1024;

/// What the model is told about a call: `ok` and the text (a result, or an error saying what to
/// fix). The text is always scrubbed and bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    pub ok: bool,
    pub output: String,
    /// [`ToolError::kind`] when `ok` is false, for logs and events.
    pub error_kind: Option<&'static str>,
}

/// Tools that come and go while a registry serves them (the user's MCP servers' tools, listed
/// again when a server says its list changed). The registry asks for them at each lookup; its own
/// registered tools win a name they share.
pub trait DynamicTools: Send + Sync {
    /// The tools offered now.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;

    /// The tool offered now under `name`.
    fn get(&self, name: &str) -> Option<Arc<dyn Tool>>;

    /// What `name`'s answers read when the set no longer offers it but it names one of the set's
    /// tools (a server that has changed its list since it answered): they stay as untrusted as
    /// when it was offered. Default: the set never offers untrusted tools.
    fn untrusted_unlisted(&self, name: &str) -> Option<UntrustedInput> {
        let _ = name;
        None
    }

    /// Resolves once the set's first tools are known (or it has given up waiting for them): a
    /// turn waits for it before it offers tools, so an agent can be ready before its MCP
    /// servers are. Default: at once.
    fn settled(&self) -> Settling<'_> {
        Box::pin(std::future::ready(()))
    }
}

/// What [`DynamicTools::settled`] returns.
pub type Settling<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>;

/// Named tools, in name order.
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    /// Tools offered besides `tools`, whose lists change while the registry serves.
    sets: Vec<Arc<dyn DynamicTools>>,
    output_limit: usize,
    /// One scrubber per workspace root: building one canonicalises the root and compiles a regex,
    /// which would otherwise dominate the cost of a call.
    scrubbers: Mutex<HashMap<PathBuf, Arc<Scrubber>>>,
    /// The governance stages of memory calls (default policy until a composition sets its own).
    governance: Arc<Governance>,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self {
            tools: BTreeMap::new(),
            sets: Vec::new(),
            output_limit: DEFAULT_OUTPUT_LIMIT,
            scrubbers: Mutex::default(),
            governance: Arc::new(Governance::default()),
        }
    }
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("output_limit", &self.output_limit)
            .finish()
    }
}

impl ToolRegistry {
    /// Caps every output at `bytes` (default 16 KiB).
    pub fn with_output_limit(mut self, bytes: usize) -> Self {
        self.output_limit = bytes;
        self
    }

    /// Governs memory calls with `governance` (config, audit sink, metrics, clock).
    pub fn with_governance(mut self, governance: Arc<Governance>) -> Self {
        self.governance = governance;
        self
    }

    pub fn governance(&self) -> &Arc<Governance> {
        &self.governance
    }

    /// Adds a tool; a second tool with the same name is refused.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), ToolError> {
        let name = tool.name().to_owned();
        if self.tools.contains_key(&name) {
            return Err(ToolError::DuplicateTool { name });
        }
        self.tools.insert(name, tool);
        Ok(())
    }

    /// Also offers the tools of `set` (after the registered ones, which win a shared name).
    pub fn with_dynamic_tools(mut self, set: Arc<dyn DynamicTools>) -> Self {
        self.sets.push(set);
        self
    }

    /// Resolves once every tool set is [settled](DynamicTools::settled).
    pub async fn settled(&self) {
        for set in &self.sets {
            set.settled().await;
        }
    }

    /// The tool offered under `name`: a registered one, else one of a tool set's.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        match self.tools.get(name) {
            Some(tool) => Some(Arc::clone(tool)),
            None => self.sets.iter().find_map(|set| set.get(name)),
        }
    }

    /// The untrusted input the answer `output` of the tool `name` carries (see
    /// [`Tool::untrusted_in`]), asked of every answer still in a model's context: the tool
    /// offered now under `name`, else the tool set that offered it (an MCP server's tool stays
    /// untrusted after its server changed its list).
    pub fn untrusted_in(&self, name: &str, output: &str) -> Option<UntrustedInput> {
        match self.get(name) {
            Some(tool) => tool.untrusted_in(output),
            None => self
                .sets
                .iter()
                .find_map(|set| set.untrusted_unlisted(name)),
        }
    }

    /// Every tool offered now, in name order (a registered tool wins a shared name).
    fn offered(&self) -> BTreeMap<String, Arc<dyn Tool>> {
        let mut all = self.tools.clone();
        for tool in self.sets.iter().flat_map(|set| set.tools()) {
            all.entry(tool.name().to_owned()).or_insert(tool);
        }
        all
    }

    /// The names offered now, in order.
    pub fn names(&self) -> Vec<String> {
        self.offered().into_keys().collect()
    }

    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.offered().values().map(|t| t.schema()).collect()
    }

    /// The `tools` array of an OpenAI Chat Completions request.
    pub fn openai_tools(&self) -> Vec<Value> {
        self.schemas().iter().map(ToolSchema::to_openai).collect()
    }

    /// The `tools` array of an Anthropic Messages request.
    pub fn anthropic_tools(&self) -> Vec<Value> {
        self.schemas()
            .iter()
            .map(ToolSchema::to_anthropic)
            .collect()
    }

    fn scrubber(&self, root: &Path) -> Arc<Scrubber> {
        // The lock is held only for a lookup or insert, never across an await.
        let mut cache = self.scrubbers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = cache.get(root) {
            return Arc::clone(s);
        }
        // Bounded: a registry serves a handful of workspaces; start over if it ever grows.
        if cache.len() >= 1024 {
            cache.clear();
        }
        let scrubber = Arc::new(Scrubber::new(root));
        cache.insert(root.to_owned(), Arc::clone(&scrubber));
        scrubber
    }

    /// Runs one call from the model. Never fails: problems become an outcome with `ok: false` and a
    /// message for the model.
    pub async fn execute(
        &self,
        name: &str,
        raw_args: &str,
        ctx: &ToolExecutionContext,
    ) -> ToolOutcome {
        // A name the caller chose is not logged: only a registered one.
        let tool = self.get(name);
        let known = if tool.is_some() { name } else { "unknown" };
        let span = tracing::info_span!(
            "tool",
            tool = known,
            user = %ctx.user_id,
            session = %ctx.session_id,
            turn = %ctx.turn_id,
        );
        async {
            let result = self.run(tool.as_ref(), name, raw_args, ctx).await;
            let scrubber = self.scrubber(&ctx.workspace.root);
            match result {
                Ok(output) => {
                    tracing::debug!(bytes = output.len(), "tool succeeded");
                    let format = tool
                        .as_ref()
                        .map_or(OutputFormat::Text, |t| t.output_format());
                    let output = fit_output(&scrubber.scrub(&output), self.output_limit, format);
                    ToolOutcome {
                        ok: true,
                        output,
                        error_kind: None,
                    }
                }
                Err(error) => {
                    // The message may quote the arguments (a `/memories` path, a key): only its
                    // kind at info, the rest at debug.
                    tracing::info!(kind = error.kind(), "tool failed");
                    tracing::debug!(error = ?error, "tool failure");
                    let output = truncate_output(&scrubber.scrub(&error.to_string()), ERROR_LIMIT);
                    ToolOutcome {
                        ok: false,
                        output,
                        error_kind: Some(error.kind()),
                    }
                }
            }
        }
        .instrument(span)
        .await
    }

    async fn run(
        &self,
        tool: Option<&Arc<dyn Tool>>,
        name: &str,
        raw_args: &str,
        ctx: &ToolExecutionContext,
    ) -> Result<String, ToolError> {
        let Some(tool) = tool else {
            return Err(ToolError::UnknownTool {
                name: name.chars().take(64).collect(),
                available: self.names().join(", "),
            });
        };
        // Models send "" for tools without arguments.
        let parsed: Result<Value, ToolError> = if raw_args.trim().is_empty() {
            Ok(Value::Object(serde_json::Map::new()))
        } else {
            serde_json::from_str(raw_args).map_err(|e| ToolError::InvalidJson {
                reason: format!("line {} column {}", e.line(), e.column()),
            })
        };
        let checked = parsed.and_then(|args| {
            validate_args(&tool.argument_schema(), &args)?;
            Ok(args)
        });
        let args = match checked {
            Ok(args) => args,
            // A memory call refused by its schema is still a memory call: audited and counted.
            Err(error) => {
                let args = serde_json::from_str(raw_args).unwrap_or(Value::Null);
                return Err(match tool.memory_access(&args) {
                    Some(access) => {
                        self.governance
                            .refused_early(name, &access, ctx, error)
                            .await
                    }
                    None => error,
                });
            }
        };
        if ctx.cancellation.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let Some(access) = tool.memory_access(&args) else {
            return self.call(tool, name, &args, ctx).await;
        };
        let format = tool.output_format();
        let governed = self
            .governance
            .govern(name, &access, args, ctx, |args, governed| async move {
                let text = self.call(tool, name, &args, &governed).await?;
                Ok::<_, ToolError>(ToolText { text, format })
            })
            .await?;
        Ok(governed.text)
    }

    /// Runs the tool under its timeout and the turn's cancellation.
    async fn call(
        &self,
        tool: &Arc<dyn Tool>,
        name: &str,
        args: &Value,
        ctx: &ToolExecutionContext,
    ) -> Result<String, ToolError> {
        // The tool sees a child token, cancelled on timeout too, so blocking work can stop early.
        let call_ctx = ToolExecutionContext {
            cancellation: ctx.cancellation.child(),
            ..ctx.clone()
        };
        let after = tool.timeout();
        let call = tool.execute(args, &call_ctx);
        tokio::pin!(call);
        let finished = tokio::select! {
            biased;
            () = ctx.cancellation.cancelled() => Err(ToolError::Cancelled),
            timed = tokio::time::timeout(after, &mut call) => match timed {
                Ok(result) => Ok(result),
                Err(_) => Err(ToolError::Timeout { tool: name.to_owned(), after }),
            },
        };
        call_ctx.cancellation.cancel();
        match finished {
            Ok(result) => result,
            Err(stopped) => match tool.interruption() {
                Interruption::Abandon => Err(stopped),
                // The tool was told (its token is cancelled); its own result is the honest one.
                Interruption::Settle { grace, check } => {
                    match tokio::time::timeout(grace, &mut call).await {
                        Ok(result) => {
                            tracing::info!(
                                stopped = stopped.kind(),
                                "tool settled after being stopped"
                            );
                            result
                        }
                        Err(_) => Err(ToolError::OutcomeUnknown {
                            tool: name.to_owned(),
                            check: check.to_owned(),
                        }),
                    }
                }
            },
        }
    }
}
