//! [`McpServer`]: one user's tools as MCP `tools/list` and `tools/call`.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, Implementation, JsonObject, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool as McpTool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tools::ToolRegistry;
use tracing::Instrument;
use types::{
    CallSurface, CancellationToken, IdError, SessionId, Surface, ToolExecutionContext, TurnId,
    UserId, WorkspacePaths,
};

/// The surface name MCP calls carry (in their context, logs and spans).
pub const SURFACE: &str = "mcp";

/// One MCP session's server: the user's registry, bound to the user it was built for.
#[derive(Debug, Clone)]
pub struct McpServer {
    registry: Arc<ToolRegistry>,
    user: UserId,
    workspace: WorkspacePaths,
    /// The session MCP calls run in: one per MCP session (see [`McpServer::for_new_session`]).
    session: SessionId,
}

impl McpServer {
    /// A server for `user` over `registry` (built for that user's store).
    pub fn new(
        registry: Arc<ToolRegistry>,
        user: UserId,
        workspace: WorkspacePaths,
    ) -> Result<Self, IdError> {
        Ok(Self {
            registry,
            user,
            workspace,
            session: SessionId::parse(&fresh_id())?,
        })
    }

    /// The same server for a new MCP session (a fresh session id).
    pub fn for_new_session(&self) -> Result<Self, IdError> {
        Ok(Self {
            session: SessionId::parse(&fresh_id())?,
            ..self.clone()
        })
    }

    pub fn user(&self) -> &UserId {
        &self.user
    }

    fn tools(&self) -> Vec<McpTool> {
        self.registry
            .names()
            .into_iter()
            .filter_map(|name| self.registry.get(&name))
            .map(|tool| {
                let mut listed = McpTool::new(
                    tool.name().to_owned(),
                    tool.description().to_owned(),
                    Arc::new(object(tool.parameters())),
                );
                if let Some(schema) = tool.output_schema() {
                    listed = listed.with_raw_output_schema(Arc::new(object(schema)));
                }
                listed
            })
            .collect()
    }

    fn context(
        &self,
        client: &str,
        cancellation: CancellationToken,
    ) -> Result<ToolExecutionContext, IdError> {
        Ok(ToolExecutionContext {
            surface: CallSurface::new(Surface::Mcp).with_client(client),
            cancellation,
            ..ToolExecutionContext::new(
                self.user.clone(),
                self.session.clone(),
                TurnId::parse(&fresh_id())?,
                self.workspace.clone(),
            )
        })
    }

    /// Runs one call through the registry's pipeline; a failure is a tool result with
    /// `isError`, which the client shows to its model.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
        client: &str,
        cancellation: CancellationToken,
    ) -> CallToolResult {
        let args = arguments.map_or_else(String::new, |a| Value::Object(a.clone()).to_string());
        let ctx = match self.context(client, cancellation) {
            Ok(ctx) => ctx,
            Err(e) => {
                tracing::error!(error = %e, "no context for an MCP call");
                return CallToolResult::error(vec![ContentBlock::text(
                    "the call could not be started; try again",
                )]);
            }
        };
        // What the client chose (its name, a tool name) is not logged: only a registered tool.
        let tool = if self.registry.get(name).is_some() {
            name
        } else {
            "unknown"
        };
        let span = tracing::info_span!("mcp_call", surface = SURFACE, tool);
        let outcome = self
            .registry
            .execute(name, &args, &ctx)
            .instrument(span)
            .await;
        if !outcome.ok {
            // An error may quote what the client sent (a `/memories` path, a key): it gets the
            // screener's redaction, as a stored value would.
            let (message, _) = tools::governance::pii::redact(&outcome.output, |_| true);
            return CallToolResult::error(vec![ContentBlock::text(message)]);
        }
        let structured = self
            .registry
            .get(name)
            .and_then(|t| t.output_schema())
            .and_then(|_| serde_json::from_str::<Value>(&outcome.output).ok())
            .filter(Value::is_object);
        let mut result = CallToolResult::success(vec![ContentBlock::text(outcome.output)]);
        result.structured_content = structured;
        result
    }
}

fn object(schema: Value) -> JsonObject {
    match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// `mcp-<uuid>`: a session or turn id of an MCP call.
fn fresh_id() -> String {
    format!("mcp-{}", uuid::Uuid::new_v4())
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("oxydra", env!("CARGO_PKG_VERSION"));
        info.with_instructions(
            "The user's Oxydra memory: search, save and organise notes, and keep keyed values in \
             namespaces (listMemory, putMemory); getContext describes this session.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult {
            tools: self.tools(),
            ..Default::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let client = context
            .client_info()
            .map_or_else(|| "unknown".to_owned(), |c| c.name);
        let cancellation = CancellationToken::default();
        let stop = cancellation.clone();
        let ct = context.ct.clone();
        let watch = tokio::spawn(async move {
            ct.cancelled().await;
            stop.cancel();
        });
        let result = self
            .call(
                &request.name,
                request.arguments.as_ref(),
                &client,
                cancellation,
            )
            .await;
        watch.abort();
        Ok(result.into())
    }

    /// rmcp reads a request of a method it knows whose params do not fit that method's type (a
    /// `tools/call` whose `arguments` is an array) as a custom request, which it would answer
    /// "method not found: tools/call". Such a request is answered "invalid params" saying what
    /// to fix; a method nobody knows stays "method not found".
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method: String = request.method.chars().take(64).collect();
        Err(match method.as_str() {
            "tools/call" => {
                ErrorData::invalid_params(malformed_call(request.params.as_ref()), None)
            }
            "tools/list" => ErrorData::invalid_params(
                "tools/list takes no params or {\"cursor\": a string from the previous page}",
                None,
            ),
            _ => ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
                None,
            ),
        })
    }
}

/// What is wrong with the params of a `tools/call` that rmcp could not read.
fn malformed_call(params: Option<&Value>) -> String {
    const SHAPE: &str = "tools/call params are {\"name\": a tool's name (see tools/list), \
                         \"arguments\": an object fitting that tool's inputSchema}";
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    let Some(Value::Object(params)) = params else {
        let got = params.map_or("nothing", kind);
        return format!("params must be an object, got {got}: {SHAPE}");
    };
    match (params.get("name"), params.get("arguments")) {
        (None, _) => format!("`name` is missing: {SHAPE}"),
        (Some(name), _) if !name.is_string() => {
            format!("`name` must be a string, got {}: {SHAPE}", kind(name))
        }
        (_, Some(args)) if !args.is_object() && !args.is_null() => {
            format!("`arguments` must be an object, got {}: {SHAPE}", kind(args))
        }
        _ => format!("the params do not fit the MCP schema: {SHAPE}"),
    }
}
