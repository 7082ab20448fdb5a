//! `mcp-test-server`: a stdio MCP server written with `rmcp`'s server side, for the container
//! tier's tests (it runs in an image built from scratch, where no Python is). Its tools report
//! what the sandbox lets it do: `read {path}` (`OK <text>` or `DENIED <reason>`), `write {path,
//! text}`, `whoami` (uid when `/proc` is readable, working directory, environment names) and `connect {addr}` (a TCP
//! connection to `host:port` within 3 s: `OK` or `DENIED <reason>`).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy)]
struct Probe;

fn schema(properties: Value) -> Arc<JsonObject> {
    let required: Vec<&String> = properties
        .as_object()
        .map_or(Vec::new(), |p| p.keys().collect());
    let schema = json!({"type": "object", "properties": properties, "required": required});
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

fn tools() -> Vec<Tool> {
    let string = json!({"type": "string"});
    vec![
        Tool::new("read", "Read a file", schema(json!({"path": string}))),
        Tool::new(
            "write",
            "Write a file",
            schema(json!({"path": string, "text": string})),
        ),
        Tool::new("whoami", "Who the server runs as", schema(json!({}))),
        Tool::new(
            "connect",
            "Open a TCP connection",
            schema(json!({"addr": string})),
        ),
    ]
}

fn arg<'a>(args: Option<&'a JsonObject>, name: &str) -> &'a str {
    args.and_then(|a| a.get(name))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn verdict(result: std::io::Result<String>) -> String {
    match result {
        Ok(text) => format!("OK {text}"),
        Err(e) => format!("DENIED {e}"),
    }
}

async fn run(name: &str, args: Option<&JsonObject>) -> String {
    match name {
        "read" => verdict(std::fs::read_to_string(arg(args, "path"))),
        "write" => {
            verdict(std::fs::write(arg(args, "path"), arg(args, "text")).map(|()| String::new()))
        }
        "whoami" => json!({
            "uid": real_uid(),
            "cwd": std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default(),
            "env": std::env::vars().map(|(k, _)| k).collect::<Vec<_>>(),
        })
        .to_string(),
        "connect" => {
            let addr = arg(args, "addr").to_owned();
            let attempt =
                tokio::time::timeout(Duration::from_secs(3), tokio::net::TcpStream::connect(addr))
                    .await;
            match attempt {
                Ok(Ok(_)) => "OK".to_owned(),
                Ok(Err(e)) => format!("DENIED {e}"),
                Err(_) => "DENIED timed out".to_owned(),
            }
        }
        other => format!("no tool {other}"),
    }
}

/// The real uid, from `/proc/self/status` (no libc binding needed).
fn real_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    line.split_whitespace().next()?.parse().ok()
}

impl ServerHandler for Probe {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("rmcp-probe", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult {
            tools: tools(),
            ..Default::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = run(&request.name, request.arguments.as_ref()).await;
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let running = Probe.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
