//! The one way to assemble tools: a [`ToolSet`] names the groups a surface offers (file tools,
//! the memory tools of some dialects, the MCP peer's tools, `shell_exec`, the web tools, the
//! schedule tools, and tools built elsewhere) over one store, and builds them or a registry.
//! [`ToolSet::for_agent`] is the agent's own set and [`ToolSet::for_mcp`] what MCP clients get;
//! the operator catalogue (`runner tools`), benches and tests use the same builder.

use std::sync::Arc;

use memory::MemoryRetrieval;
use types::{
    AgentConfig, MemoryDialect, MemoryDialects, PricingConfig, RetrievalConfig, WebConfig,
};

use crate::files::{FileDelete, FileEdit, FileList, FileRead, FileSearch, FileWrite};
use crate::memory_files::MemoryFiles;
use crate::memory_tools::{MemoryState, PEER_MCP, dialect_specs};
use crate::schedule_tools::{SCHEDULE_TOOLS, Schedules};
use crate::shell::ShellExec;
use crate::spec::SpecTool;
use crate::web::guard::{Lookup, SystemLookup};
use crate::web::web_tools;
use crate::{Tool, ToolError, ToolRegistry};

/// The tools one surface offers, assembled in one place (see the module's documentation).
pub struct ToolSet {
    memory: MemoryState,
    files: bool,
    dialects: Option<MemoryDialects>,
    peer_mcp: bool,
    shell: bool,
    web: Option<(WebConfig, Arc<dyn Lookup>)>,
    schedules: Option<Schedules>,
    extra: Vec<Arc<dyn Tool>>,
}

impl ToolSet {
    /// No tools yet; memory tools added later run over `memory` (with `None` they answer that
    /// memory is not configured when called).
    pub fn new(memory: Option<Arc<dyn MemoryRetrieval>>) -> Self {
        Self {
            memory: MemoryState {
                memory,
                ..MemoryState::default()
            },
            files: false,
            dialects: None,
            peer_mcp: false,
            shell: false,
            web: None,
            schedules: None,
            extra: Vec::new(),
        }
    }

    /// The agent's tools: the file tools, `shell_exec`, the web tools `[tools.web]` turns on and,
    /// over `memory`, the memory tools of `[tools] memory` (none without a store, rather than
    /// tools that only answer that memory is off). Add the schedule tools with
    /// [`ToolSet::schedules`] and tools from elsewhere with [`ToolSet::with_extra`].
    pub fn for_agent(config: &AgentConfig, memory: Option<Arc<dyn MemoryRetrieval>>) -> Self {
        let stored = memory.is_some();
        let set = Self::new(memory)
            .configured(config)
            .files()
            .shell()
            .web(&config.tools.web);
        match stored {
            true => set.memory_tools(config.tools.memory),
            false => set,
        }
    }

    /// What MCP clients get: the memory tools of `[tools] memory` and the peer's `listMemory`,
    /// `getContext`, `putMemory`, over `memory`; nothing without a store (MCP serves memory only).
    pub fn for_mcp(config: &AgentConfig, memory: Option<Arc<dyn MemoryRetrieval>>) -> Self {
        let stored = memory.is_some();
        let set = Self::new(memory).configured(config);
        match stored {
            true => set.memory_tools(config.tools.memory).peer_mcp(),
            false => set,
        }
    }

    /// The retrieval settings and prices of `config`.
    fn configured(mut self, config: &AgentConfig) -> Self {
        // An unknown name is refused when the configuration is checked; here it reads as unset.
        self.memory.timezone =
            crate::schedule_tools::resolve_timezone(config.user.timezone.as_deref()).ok();
        self.retrieval(&config.retrieval).pricing(&config.pricing)
    }

    /// The retrieval settings searches rank with (default: [`RetrievalConfig::default`]).
    #[must_use]
    pub fn retrieval(mut self, retrieval: &RetrievalConfig) -> Self {
        self.memory.retrieval = retrieval.clone();
        self
    }

    /// The prices `getContext` counts usage in.
    #[must_use]
    pub fn pricing(mut self, pricing: &PricingConfig) -> Self {
        self.memory.pricing = pricing.clone();
        self
    }

    /// The six file tools.
    #[must_use]
    pub fn files(mut self) -> Self {
        self.files = true;
        self
    }

    /// The memory tools of `dialects`: the four notes tools, the categorized dialect's three,
    /// the files dialect's `memory` tool (their names never overlap).
    #[must_use]
    pub fn memory_tools(mut self, dialects: impl Into<MemoryDialects>) -> Self {
        self.dialects = Some(dialects.into());
        self
    }

    /// The MCP peer's `listMemory`, `getContext` and `putMemory`.
    #[must_use]
    pub fn peer_mcp(mut self) -> Self {
        self.peer_mcp = true;
        self
    }

    /// `shell_exec`, the client of the user's sandboxed shell daemon.
    #[must_use]
    pub fn shell(mut self) -> Self {
        self.shell = true;
        self
    }

    /// Every built-in tool: the file tools, the memory tools of `dialects` and `shell_exec`.
    #[must_use]
    pub fn builtin(self, dialects: impl Into<MemoryDialects>) -> Self {
        self.files().memory_tools(dialects).shell()
    }

    /// The web tools `config` turns on: none when it is disabled, `web_fetch` when enabled, and
    /// `web_search` too when a search backend is configured.
    #[must_use]
    pub fn web(self, config: &WebConfig) -> Self {
        self.web_resolving(config, Arc::new(SystemLookup))
    }

    /// [`ToolSet::web`] resolving host names with `lookup` (tests script the answers).
    #[must_use]
    pub fn web_resolving(mut self, config: &WebConfig, lookup: Arc<dyn Lookup>) -> Self {
        self.web = Some((config.clone(), lookup));
        self
    }

    /// The four schedule tools over `schedules`.
    #[must_use]
    pub fn schedules(mut self, schedules: &Schedules) -> Self {
        self.schedules = Some(schedules.clone());
        self
    }

    /// Tools built elsewhere (an MCP server's tools, a test's own), offered beside these.
    #[must_use]
    pub fn with_extra(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.extra.extend(tools);
        self
    }

    /// The tools, in groups: files, memory, peer, shell, web, schedules, extra. Fails when the web
    /// tools' settings are invalid.
    pub fn tools(self) -> Result<Vec<Arc<dyn Tool>>, ToolError> {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        if self.files {
            tools.extend(file_tools());
        }
        for dialect in self.dialects.iter().flat_map(|d| d.iter()) {
            tools.extend(dialect_tools(dialect, &self.memory));
        }
        if self.peer_mcp {
            tools.extend(spec_tools(&PEER_MCP, &self.memory));
        }
        if self.shell {
            tools.push(Arc::new(ShellExec));
        }
        if let Some((config, lookup)) = &self.web {
            tools.extend(web_tools(config, Arc::clone(lookup))?);
        }
        if let Some(schedules) = &self.schedules {
            tools.extend(spec_tools(&SCHEDULE_TOOLS, schedules));
        }
        tools.extend(self.extra);
        Ok(tools)
    }

    /// A registry (default output limit and governance) holding [`ToolSet::tools`]; fails on
    /// invalid web settings or two tools of one name.
    pub fn registry(self) -> Result<ToolRegistry, ToolError> {
        let mut registry = ToolRegistry::default();
        for tool in self.tools()? {
            registry.register(tool)?;
        }
        Ok(registry)
    }
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSet")
            .field("store", &self.memory.memory.is_some())
            .field("files", &self.files)
            .field("dialects", &self.dialects)
            .field("peer_mcp", &self.peer_mcp)
            .field("shell", &self.shell)
            .field("web", &self.web.as_ref().map(|(config, _)| config.enabled))
            .field("schedules", &self.schedules.is_some())
            .field("extra", &self.extra.len())
            .finish()
    }
}

fn file_tools() -> [Arc<dyn Tool>; 6] {
    [
        Arc::new(FileRead),
        Arc::new(FileWrite),
        Arc::new(FileEdit),
        Arc::new(FileDelete),
        Arc::new(FileList),
        Arc::new(FileSearch),
    ]
}

fn dialect_tools(dialect: MemoryDialect, memory: &MemoryState) -> Vec<Arc<dyn Tool>> {
    match dialect {
        MemoryDialect::Files => vec![Arc::new(MemoryFiles::new(memory.memory.clone()))],
        _ => spec_tools(dialect_specs(dialect), memory),
    }
}

/// The tools of a table, each over its own copy of `state`.
fn spec_tools<S: Clone + Send + Sync + 'static>(
    table: &'static [&'static crate::spec::ToolSpec<S>],
    state: &S,
) -> Vec<Arc<dyn Tool>> {
    table
        .iter()
        .map(|spec| Arc::new(SpecTool::new(spec, state.clone())) as Arc<dyn Tool>)
        .collect()
}
