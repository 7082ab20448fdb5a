//! Command-line surface of `runner` (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "runner",
    version,
    about = "Oxydra runner: provisions users' workspaces, starts and supervises their agents, \
             manages their memory"
)]
pub struct Cli {
    /// Log progress (also settable with OXYDRA_LOG=info|debug).
    #[arg(long, short, global = true)]
    pub verbose: bool,
    /// runner.toml to use (default: ./runner.toml, then ~/.oxydra/runner.toml).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Act on this user only (default: every user in runner.toml).
    #[arg(long, global = true)]
    pub user: Option<String>,
    /// Accept the process tier: agents run as host processes confined only by Landlock.
    #[arg(long, global = true)]
    pub insecure: bool,
    /// Open the terminal chat client (oxydra-tui) on the --user's running agent.
    #[arg(long)]
    pub tui: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write runner.toml and agent.toml with one user, or add the --user to runner.toml.
    ///
    /// A new runner.toml comes from the example. An agent.toml already next to it is kept (its
    /// [provider] is yours); a new one takes the model from --provider/--model/--base-url/
    /// --api-key-env, or, on a terminal, from questions (provider, model, the variable holding
    /// the key), and the key is checked with one request (GET /v1/models) before anything is
    /// written. Without either it is the example (OpenAI). On an existing runner.toml the user's
    /// table is appended (the rest of the file is kept as it is). The user's workspace is
    /// provisioned either way.
    Init {
        /// Where users' workspaces go (default ./workspaces, next to runner.toml).
        #[arg(long = "workspace-root")]
        workspace_root: Option<PathBuf>,
        /// Where the agents will run (default: container). On an existing runner.toml: where
        /// the added user's agent runs (`tier` in their table; the others keep theirs).
        #[arg(long, value_enum)]
        tier: Option<TierArg>,
        /// The LLM provider of a new agent.toml (no questions asked).
        #[arg(long, value_enum)]
        provider: Option<crate::init_provider::ProviderArg>,
        /// The model (default: the provider's usual small model).
        #[arg(long)]
        model: Option<String>,
        /// The provider's base URL (default: the provider's; required for `compatible`).
        #[arg(long = "base-url")]
        base_url: Option<String>,
        /// The environment variable holding the API key ("" for none).
        #[arg(long = "api-key-env")]
        api_key_env: Option<String>,
        /// Write the files without checking the key with the provider.
        #[arg(long = "no-check")]
        no_check: bool,
    },
    /// Start the users' agents (foreground; Ctrl-C stops them).
    ///
    /// Users already running are skipped (refused when named with --user); an agent started with
    /// other settings (an edited agent.toml) is restarted on the new ones.
    Start {
        /// Run in the background and return once every agent is ready.
        #[arg(long)]
        detach: bool,
        /// Internal: this process is the background supervisor started by --detach.
        #[arg(long, hide = true)]
        supervisor: bool,
    },
    /// Stop the users' agents (the runner and both guests) and remove their markers.
    Stop,
    /// Per user and role: pid, uptime, restarts, endpoint, health.
    Status {
        /// Print JSON for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Print the users' logs (logs/<role>.log).
    Logs {
        /// Only this role's log.
        #[arg(long, value_enum)]
        role: Option<LogRole>,
        /// Keep printing what is appended.
        #[arg(long, short)]
        follow: bool,
        /// Lines from the end of each log to print first.
        #[arg(long, short = 'n', default_value_t = 100)]
        lines: usize,
    },
    /// Stop, then start (in the background with --detach, or when it ran there).
    Restart {
        #[arg(long)]
        detach: bool,
    },
    /// Read and change a user's memory directly (the same store the memory tools use).
    Memory(MemoryArgs),
    /// List, cancel, pause or resume a user's schedules (`--user` required).
    Schedule(ScheduleArgs),
    /// Tokens the --user's agent used per model, and their cost at `[pricing]`'s prices.
    Usage(crate::usage_cmd::UsageArgs),
    /// List the --user's conversations, or export one as Markdown or JSON Lines.
    Sessions(crate::sessions_cmd::SessionsArgs),
    /// Serve the --user's memory tools over MCP on stdin/stdout (for Claude Desktop / Claude
    /// Code and other MCP clients that start a command).
    Mcp {
        /// The workspace root holding one directory per user (default: runner.toml's
        /// workspace_root).
        #[arg(long)]
        root: Option<PathBuf>,
        /// agent.toml to read [memory], [retrieval] and [tools] from (default: the user's from
        /// runner.toml when --root is not given; defaults otherwise).
        #[arg(long = "agent-config")]
        agent_config: Option<PathBuf>,
    },
    /// Check the --user's MCP servers (`[mcp.servers]`): start each, list its tools, say what
    /// is wrong.
    McpServers {
        /// The workspace root holding one directory per user (default: runner.toml's
        /// workspace_root).
        #[arg(long)]
        root: Option<PathBuf>,
        /// agent.toml to read [mcp.servers] from (default: the user's).
        #[arg(long = "agent-config")]
        agent_config: Option<PathBuf>,
    },
    /// The container tier's guest images (`oxydra-vm`, `shell-vm`).
    #[command(subcommand)]
    Images(ImagesCommand),
    /// Forget a user (`--user` required): destroys their memory key and memory database (rows
    /// on a remote server), after a confirmation; says what remains. Refused while their agent
    /// runs.
    Forget {
        /// Do not ask (scripts).
        #[arg(long)]
        yes: bool,
    },
    /// List every built-in tool the model can be offered (and, with --agent-config, its MCP
    /// servers' tools and their state: the servers are started to list them).
    Tools {
        /// Print JSON (name, description, parameters schema, safety tier, timeout) for scripts.
        #[arg(long)]
        json: bool,
        /// The memory tools' dialect to show (default: `[tools] memory` of --agent-config, else
        /// notes).
        #[arg(long, value_parser = ["notes", "categorized"])]
        memory: Option<String>,
        /// agent.toml to read `[tools] memory` (and `[tools.web]`: the web tools it turns on) from.
        #[arg(long = "agent-config")]
        agent_config: Option<PathBuf>,
    },
    /// Open the web client on the --user's running agent: prints a one-time sign-in link (dead
    /// after its first use or 60 s) and opens it in the desktop's browser when there is one.
    Open {
        /// Only print the link; do not start a browser.
        #[arg(long = "no-browser")]
        no_browser: bool,
    },
}

/// `runner memory search --scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SearchScope {
    /// The user's saved notes.
    Notes,
    /// Every conversation session of the user.
    Conversations,
    /// Both, ranked together.
    All,
}

/// A tier named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TierArg {
    Container,
    Process,
}

impl From<TierArg> for runner::Tier {
    fn from(tier: TierArg) -> Self {
        match tier {
            TierArg::Container => Self::Container,
            TierArg::Process => Self::Process,
        }
    }
}

/// `runner images ...`.
#[derive(Debug, Subcommand)]
pub enum ImagesCommand {
    /// Build both images from local binaries (no base image is pulled); only what changed is
    /// rebuilt. Names and tags come from runner.toml's [container] table.
    Build {
        /// Directory holding the `oxydra-vm` and `shell-vm` binaries (default: next to `runner`).
        #[arg(long = "bin-dir")]
        bin_dir: Option<PathBuf>,
        /// The statically linked busybox giving `shell-vm` its shell and core utilities.
        #[arg(long, default_value = "/bin/busybox")]
        busybox: PathBuf,
        /// Rebuild even when the images are up to date.
        #[arg(long)]
        force: bool,
    },
    /// Show whether each image exists, its size and whether it matches the local binaries.
    Status,
}

/// A log file of a user's workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogRole {
    /// The background supervisor (`start --detach`).
    Runner,
    #[value(name = "oxydra-vm")]
    OxydraVm,
    #[value(name = "shell-vm")]
    ShellVm,
}

impl LogRole {
    pub const ALL: [LogRole; 3] = [LogRole::Runner, LogRole::OxydraVm, LogRole::ShellVm];

    pub fn name(self) -> &'static str {
        match self {
            LogRole::Runner => "runner",
            LogRole::OxydraVm => "oxydra-vm",
            LogRole::ShellVm => "shell-vm",
        }
    }
}

#[derive(Debug, Args)]
pub struct ScheduleArgs {
    /// The workspace root holding one directory per user (default: runner.toml's workspace_root).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// agent.toml to read [memory], [user] timezone and [governance] from (default: the user's).
    #[arg(long = "agent-config")]
    pub agent_config: Option<PathBuf>,
    #[command(subcommand)]
    pub action: ScheduleAction,
}

#[derive(Debug, Subcommand)]
pub enum ScheduleAction {
    /// The user's active and paused schedules: id, state, next run (the user's time zone),
    /// recurrence, title.
    List {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Cancel one of the user's schedules (it never runs again).
    Cancel { id: String },
    /// Pause one of the user's schedules (kept, not run until resumed).
    Pause { id: String },
    /// Resume a paused schedule of the user's.
    Resume { id: String },
}

#[derive(Debug, Args)]
pub struct MemoryArgs {
    /// The workspace root holding one directory per user (default: runner.toml's workspace_root).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// agent.toml to read [memory] and [retrieval] from (default: the user's from runner.toml
    /// when --root is not given; defaults otherwise).
    #[arg(long = "agent-config")]
    pub agent_config: Option<PathBuf>,
    /// After `runner forget`: start the user's memory afresh (empty) instead of refusing.
    #[arg(long)]
    pub fresh: bool,
    #[command(subcommand)]
    pub action: MemoryAction,
}

#[derive(Debug, Subcommand)]
pub enum MemoryAction {
    /// Save a note; prints {"note_id": ...}. A note the user already has is not saved again
    /// (prints the existing id); a near-duplicate only with --allow-similar.
    Save {
        text: String,
        #[command(flatten)]
        organise: Organise,
        /// Save even when similar notes exist.
        #[arg(long = "allow-similar")]
        allow_similar: bool,
    },
    /// Search the user's notes.
    Search {
        query: String,
        #[arg(long = "top-k")]
        top_k: Option<usize>,
        /// Where to search: the saved notes, every past conversation, or both ranked together.
        #[arg(long, value_enum, default_value_t = SearchScope::Notes)]
        scope: SearchScope,
        /// Only notes of this category, or carrying any of these tags.
        #[command(flatten)]
        organise: Organise,
        /// Print a JSON array instead of lines.
        #[arg(long)]
        json: bool,
        /// Print notes' text as stored, control characters and all (by default they are shown
        /// as escapes such as \x1b, so a note cannot drive the terminal).
        #[arg(long)]
        raw: bool,
    },
    /// List notes newest first, a page at a time, with the total.
    List {
        #[command(flatten)]
        organise: Organise,
        /// Notes per page (1 to 200).
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// The cursor printed after the previous page.
        #[arg(long)]
        cursor: Option<String>,
        /// List notes that have expired and are not swept yet instead.
        #[arg(long)]
        expired: bool,
        /// Print the page as JSON ({"notes", "total", "next_cursor"}).
        #[arg(long)]
        json: bool,
        /// Print notes' text as stored, control characters and all (by default they are shown
        /// as escapes such as \x1b, so a note cannot drive the terminal).
        #[arg(long)]
        raw: bool,
    },
    /// Print one note as JSON.
    Get { note_id: String },
    /// Replace a note's text, keeping its id.
    Update { note_id: String, text: String },
    /// Delete a note (restorable with `restore` for [memory] tombstone_retention_days).
    Delete { note_id: String },
    /// Every version of a note, oldest first, and whether it is deleted (JSON).
    History { note_id: String },
    /// Bring back a deleted note (its last text, or --version N), or put a live note back to an
    /// earlier version (--version N; the text it replaces is kept as a version).
    Restore {
        note_id: String,
        #[arg(long)]
        version: Option<u32>,
    },
    /// Mark an unconfirmed note (saved after the agent read a file, shell output or a web page)
    /// as confirmed, so that recall may use it.
    Confirm { note_id: String },
    /// Deleted notes that can still be restored, most recent first (JSON).
    Deleted,
    /// Counts and sizes, as JSON.
    Stats,
    /// Re-embed every stored chunk with the configured model.
    Reindex,
    /// Write the notes (all, or those matching the filters) to stdout: JSON Lines, or Markdown.
    Export {
        #[command(flatten)]
        organise: Organise,
        /// Only notes created at or after this instant (RFC 3339) or day (YYYY-MM-DD).
        #[arg(long)]
        since: Option<String>,
        /// Markdown (grouped by category) instead of JSON Lines.
        #[arg(long)]
        markdown: bool,
        /// Print notes' text as stored, control characters and all (by default they are shown
        /// as escapes such as \x1b, so a note cannot drive the terminal).
        #[arg(long)]
        raw: bool,
    },
    /// Read notes as JSON Lines (from a file, or stdin when none is given); keeps their ids and
    /// metadata (category, tags, context, confidence, expiry). Notes the user already has are
    /// left out and reported; near-duplicates too, unless --allow-similar.
    Import {
        file: Option<PathBuf>,
        /// Import near-duplicates of stored notes too.
        #[arg(long = "allow-similar")]
        allow_similar: bool,
        #[command(flatten)]
        target: TargetArgs,
    },
    /// Re-keys the user's local memory file: a new key (`[memory_encryption] enabled = true`;
    /// an unencrypted file is encrypted), or back to plaintext when encryption is off. The
    /// user's agent must be stopped.
    Rekey,
    /// The audit log of memory operations from every surface (agent, MCP, CLI, gateway), newest
    /// first, a page at a time: time, surface/client, tool, operation, namespace, key or note,
    /// outcome, redaction counts. Never any note text. A cut page ends with the `--before` that
    /// shows the older rows. Fields a caller chose (client name, namespace, key, path) are shown
    /// with control characters as escapes, one row per line.
    Audit {
        /// Only rows at or after this instant (RFC 3339) or day (YYYY-MM-DD).
        #[arg(long)]
        since: Option<String>,
        /// Rows per page (1 to 10000).
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Only rows older than this row id (the cursor a cut page ends with).
        #[arg(long)]
        before: Option<i64>,
        /// Print a JSON array instead of lines.
        #[arg(long)]
        json: bool,
        /// Print the fields as stored, control characters and all.
        #[arg(long)]
        raw: bool,
    },
    /// Write the `/memories` tree (the files dialect's files) into DIR (new or empty). DIR is
    /// opened without following any link another account could have planted; one the user's
    /// shell (or any account but root and you) can write is refused unless
    /// --allow-shell-writable.
    ExportTree {
        dir: PathBuf,
        #[command(flatten)]
        target: TargetArgs,
    },
    /// Read the regular files below DIR into the `/memories` tree (existing files are replaced).
    /// Links, FIFOs, devices and hard-linked files are skipped unread; DIR is opened as for
    /// export-tree.
    ImportTree {
        dir: PathBuf,
        #[command(flatten)]
        target: TargetArgs,
    },
}

/// Where the operator lets a root command read or write files.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct TargetArgs {
    /// Go ahead even if the user's shell or another account can write the directory (inside a
    /// user's shared/, tmp/, logs/ or ipc/, say). Links there are still never followed.
    #[arg(long = "allow-shell-writable")]
    pub allow_shell_writable: bool,
}

/// `--category` and `--tag` of the memory commands.
#[derive(Debug, Clone, Default, Args)]
pub struct Organise {
    /// fact, pattern, preference or capability.
    #[arg(long, value_parser = ["fact", "pattern", "preference", "capability"])]
    pub category: Option<String>,
    /// A tag (repeat for several: a note carrying any of them matches; on save, all are set).
    #[arg(long = "tag")]
    pub tags: Vec<String>,
}
