//! Oxydra's shared vocabulary.
//!
//! Every other crate speaks in these types: ids (user, session, turn, note), chat messages and tool
//! calls, tool schemas and safety tiers, the per-call [`ToolExecutionContext`], the per-user
//! [`WorkspacePaths`] layout, the gateway protocol frames ([`ClientFrame`], [`ServerFrame`]) with
//! the runtime's [`TurnEvent`]s they carry, the shell protocol between `shell_exec` and the shell
//! daemon ([`ShellRequest`], [`ShellResponse`], [`ShellBootstrap`], [`ShellChallenge`]), and
//! the configuration structs with their defaults and validation, [`terminal`]: outside text
//! made safe to print on a terminal, and [`export`]: a conversation written as Markdown or JSON
//! Lines.
//!
//! This crate is pure data: it depends on serde, serde_json and thiserror only (the architecture
//! test checks the list), performs no I/O, spawns nothing and owns no async runtime.
//! [`CancellationToken`] is a small std-only primitive so that the context can carry cancellation
//! without pulling an executor into the vocabulary.

mod cancel;
mod capture_views;
mod config;
mod context;
pub mod export;
mod ids;
mod mcp_views;
mod message;
mod model_views;
mod note_changes;
mod note_requests;
mod note_views;
mod protocol;
mod schedule_views;
mod shell;
mod shell_proof;
pub mod terminal;
mod tool;
mod turn_event;
mod workspace;

pub use cancel::{CancellationToken, Cancelled};
pub use capture_views::{
    CaptureReport, CapturedChange, ConversationHitView, NearbyTurnView, PendingMemory,
};
/// The one table of governed memory operation names.
pub use config::memory_ops;
pub use config::{
    AgentConfig, ApprovalPolicy, ConfigError, DbPath, EmbeddingBackend, EmbeddingConfig,
    GatewayLimitsConfig, GovernanceConfig, MEMORY_TOOL_BETA, MemoryConfig, MemoryDialect,
    MemoryDialects, ModelPrice, Operation, OperationRule, OperationRules, PiiAction, PricingConfig,
    ProviderConfig, ProviderKind, RateLimit, RateLimitsConfig, RetrievalConfig, RuntimeConfig,
    SchedulesConfig, SecretAction, SurfaceConfig, SurfacePolicy, SurfacesConfig, ToolPermission,
    ToolsConfig, UserConfig, tool_classes,
};
pub use config::{CaptureConfig, CaptureMode, MAX_CAPTURE_CALLS_PER_HOUR, MAX_CAPTURE_IDLE_SECS};
pub use config::{
    DEFAULT_MODEL_NAME, MAX_MODEL_NAME, ModelEntry, ModelsConfig, model_choices, valid_model_name,
};
pub use config::{Host, HostError};
pub use config::{MAX_MCP_SERVER_NAME, McpConfig, McpServerConfig};
pub use config::{MAX_WEB_CHARS, SearchBackend, WebConfig, WebSearchConfig};
pub use context::{
    AuditTag, CallSurface, ReadGrant, Surface, ToolExecutionContext, UntrustedInput,
    namespace_matches,
};
pub use export::{ExportFormat, export_conversation};
pub use ids::{IdError, NoteId, SessionId, TurnId, UserId};
pub use mcp_views::{McpServerState, McpServerView, ProgressSink, ToolProgress};
pub use message::{Message, Role, ToolCall, Usage};
pub use model_views::{ModelView, UsageView};
pub use note_changes::{NoteChange, NoteChanges};
pub use note_requests::NoteRequest;
pub use note_views::{DeletedNoteView, NoteVersionView, NoteView, ProvenanceView, TimeReadView};
pub use protocol::MAX_FRAME_BYTES;
pub use protocol::{
    ApprovalScope, ClientFrame, ErrorCode, HistoryEvent, PROTOCOL_VERSION, ServerFrame,
    SessionSummary,
};
pub use schedule_views::{NotificationView, ScheduleAction, ScheduleView};
pub use shell::{
    DEFAULT_MAX_CONCURRENT, DEFAULT_MAX_MCP_SERVERS, DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_SHELL_TIMEOUT_MS, MAX_REQUEST_BYTES, MAX_SHELL_TIMEOUT_MS, McpSpawn, McpSpawnRequest,
    SHELL_SECRET_FILE, SHELL_SOCKET_NAME, ShellAuth, ShellBootstrap, ShellBootstrapError,
    ShellRequest, ShellResponse, encode_line, mcp_server_socket, shell_secret_path,
    shell_socket_path,
};
pub use shell_proof::{PROOF_DOMAIN, PROOF_KEY_DOMAIN, ProofKey, ShellChallenge};
pub use tool::{SafetyTier, ToolSchema};
pub use turn_event::TurnEvent;
pub use workspace::{ENDPOINT_FILE, WorkspaceDir, WorkspacePaths};
