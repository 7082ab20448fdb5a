//! The MCP client against a real server written with the official Python SDK
//! (`tests/servers/demo.py`), over stdio (started by [`DirectLauncher`]) and streamable HTTP:
//! calls end to end through a [`ToolRegistry`], and a server that crashes, hangs, floods, lies
//! in its schema, changes its tool list, or names a tool like a built-in one.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp::client::{DirectLauncher, McpClients, ServerState, ServerStatus};
use serde_json::{Value, json};
use test_support::Need;
use tools::{DynamicTools, ToolOutcome, ToolRegistry};
use types::{
    McpConfig, McpServerConfig, SafetyTier, SessionId, ToolExecutionContext, TurnId,
    UntrustedInput, UserId, WorkspacePaths,
};

const SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/demo.py");

/// A user's workspace with its `shared/` (where stdio servers run).
pub(crate) struct Workspace {
    pub dir: tempfile::TempDir,
}

impl Workspace {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(WorkspacePaths::new(dir.path()).shared()).unwrap();
        Self { dir }
    }

    pub(crate) fn shared(&self) -> std::path::PathBuf {
        WorkspacePaths::new(self.dir.path()).shared()
    }

    fn ctx(&self) -> ToolExecutionContext {
        ToolExecutionContext::new(
            UserId::parse("alice").unwrap(),
            SessionId::parse("s1").unwrap(),
            TurnId::parse("t1").unwrap(),
            WorkspacePaths::new(self.dir.path()),
        )
    }
}

/// The demo server over stdio.
pub(crate) fn stdio_server() -> McpServerConfig {
    McpServerConfig {
        command: Some(test_support::mcp_python().unwrap().display().to_string()),
        args: vec![SERVER.to_owned(), "stdio".to_owned()],
        ..McpServerConfig::default()
    }
}

/// The demo server over streamable HTTP, killed when dropped.
pub(crate) struct HttpServer {
    _child: tokio::process::Child,
    pub url: String,
}

impl HttpServer {
    pub(crate) async fn start(cwd: &Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = tokio::process::Command::new(test_support::mcp_python().unwrap())
            .args([SERVER, "http", &port.to_string()])
            .current_dir(cwd)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let began = Instant::now();
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(began.elapsed() < Duration::from_secs(20), "no HTTP server");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Self {
            _child: child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }

    pub(crate) fn config(&self) -> McpServerConfig {
        McpServerConfig {
            url: Some(self.url.clone()),
            ..McpServerConfig::default()
        }
    }
}

/// Clients of `servers` started and settled, and a registry offering their tools.
pub(crate) async fn connect(
    ws: &Workspace,
    servers: &[(&str, McpServerConfig)],
    reserved: &[&str],
) -> (Arc<McpClients>, ToolRegistry) {
    let config = McpConfig {
        servers: servers
            .iter()
            .map(|(n, s)| ((*n).to_owned(), s.clone()))
            .collect::<BTreeMap<_, _>>(),
    };
    config.validate().unwrap();
    let reserved: Vec<String> = reserved.iter().map(|s| (*s).to_owned()).collect();
    let clients = Arc::new(McpClients::start(
        &config,
        Arc::new(DirectLauncher::new(ws.shared())),
        &reserved,
    ));
    assert!(
        clients.ready(Duration::from_secs(60)).await,
        "servers settle"
    );
    let registry =
        ToolRegistry::default().with_dynamic_tools(Arc::clone(&clients) as Arc<dyn DynamicTools>);
    (clients, registry)
}

pub(crate) async fn call(
    registry: &ToolRegistry,
    ws: &Workspace,
    tool: &str,
    args: Value,
) -> ToolOutcome {
    registry.execute(tool, &args.to_string(), &ws.ctx()).await
}

fn status(clients: &McpClients, name: &str) -> ServerStatus {
    clients
        .status()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap()
}

/// Waits until `check` holds of the server's status.
async fn until(clients: &McpClients, name: &str, check: impl Fn(&ServerStatus) -> bool) {
    let began = Instant::now();
    loop {
        let now = status(clients, name);
        if check(&now) {
            return;
        }
        assert!(began.elapsed() < Duration::from_secs(30), "still {now}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn ok(outcome: &ToolOutcome) -> &str {
    assert!(outcome.ok, "call failed: {}", outcome.output);
    &outcome.output
}

#[tokio::test]
#[ignore = "needs python mcp"]
async fn stdio_and_http_servers_offer_their_tools_and_answer_calls() {
    test_support::need(Need::McpPython);
    let ws = Workspace::new();
    let http = HttpServer::start(&ws.shared()).await;
    let (clients, registry) = connect(
        &ws,
        &[
            (
                "local",
                McpServerConfig {
                    env: BTreeMap::from([("DEMO_FLAG".to_owned(), "1".to_owned())]),
                    ..stdio_server()
                },
            ),
            ("remote", http.config()),
        ],
        &[],
    )
    .await;
    for server in ["local", "remote"] {
        let now = status(&clients, server);
        assert_eq!(now.state, ServerState::Up, "{now}");
        assert!(now.to_string().contains(": up, 8 tools"), "{now}");
        let echo = format!("{server}__echo");
        let out = call(&registry, &ws, &echo, json!({"text": "hi"})).await;
        assert_eq!(ok(&out), "echo: hi");
        // Structured content is said once (the SDK repeats it as text).
        let out = call(
            &registry,
            &ws,
            &format!("{server}__add"),
            json!({"a": 2, "b": 3}),
        )
        .await;
        let sum: Value = serde_json::from_str(ok(&out)).unwrap();
        assert_eq!(sum, json!({"sum": 5}));
        // Images are a short note, not base64.
        let out = call(&registry, &ws, &format!("{server}__picture"), json!({})).await;
        let text = ok(&out);
        assert!(text.starts_with("[image: image/png, "), "{text}");
        assert!(!text.contains("iVBOR"), "{text}");
        assert!(text.contains("https://example.org/pic"), "{text}");
        // Every result is untrusted; by default every call needs approval.
        let tool = registry.get(&echo).unwrap();
        assert_eq!(tool.reads_untrusted(), Some(UntrustedInput::Mcp));
        assert_eq!(tool.safety_tier(), SafetyTier::Privileged);
    }
    // The stdio server runs in `shared/` (the path is scrubbed for the model) with nothing of
    // the agent's environment: PATH and its config's `env` (Python itself adds LC_CTYPE when
    // no locale is set).
    let out = call(&registry, &ws, "local__whereami", json!({})).await;
    assert_eq!(ok(&out), "cwd=shared env=DEMO_FLAG,LC_CTYPE,PATH");
}

#[tokio::test]
#[ignore = "needs python mcp"]
async fn a_crashed_server_is_restarted_and_its_tools_say_it_is_down_meanwhile() {
    test_support::need(Need::McpPython);
    let ws = Workspace::new();
    let (clients, registry) = connect(&ws, &[("demo", stdio_server())], &[]).await;
    let out = call(&registry, &ws, "demo__crash", json!({})).await;
    assert!(!out.ok, "{}", out.output);
    assert!(out.output.contains("MCP server `demo`"), "{}", out.output);
    // Until it is back, its tools answer that it is down, and why.
    until(&clients, "demo", |s| {
        matches!(s.state, ServerState::Down { .. })
    })
    .await;
    let now = status(&clients, "demo");
    assert!(now.to_string().contains("down (restarting)"), "{now}");
    assert!(now.to_string().contains("crashing on purpose"), "{now}");
    let out = call(&registry, &ws, "demo__echo", json!({"text": "hi"})).await;
    assert!(!out.ok);
    assert!(
        out.output
            .starts_with("MCP server `demo` is down (restarting): "),
        "{}",
        out.output
    );
    // It comes back by itself, with its tools.
    until(&clients, "demo", |s| s.state == ServerState::Up).await;
    let out = call(&registry, &ws, "demo__echo", json!({"text": "again"})).await;
    assert_eq!(ok(&out), "echo: again");
    let starts = std::fs::read_to_string(ws.shared().join("starts.log")).unwrap();
    assert_eq!(starts.lines().count(), 2, "{starts}");
}

#[tokio::test]
#[ignore = "needs python mcp"]
async fn a_hung_call_times_out_and_the_server_still_answers() {
    test_support::need(Need::McpPython);
    let ws = Workspace::new();
    // Long enough for a loaded machine to start Python, far shorter than the hang.
    let server = McpServerConfig {
        timeout_secs: 15,
        ..stdio_server()
    };
    let (clients, registry) = connect(&ws, &[("demo", server)], &[]).await;
    assert_eq!(status(&clients, "demo").state, ServerState::Up);
    let began = Instant::now();
    let out = call(&registry, &ws, "demo__hang", json!({"seconds": 300})).await;
    assert!(began.elapsed() < Duration::from_secs(60));
    assert_eq!(out.error_kind, Some("timeout"), "{}", out.output);
    let out = call(&registry, &ws, "demo__echo", json!({"text": "still here"})).await;
    assert_eq!(ok(&out), "echo: still here");
}

#[tokio::test]
#[ignore = "needs python mcp"]
async fn a_flood_is_bounded_by_the_output_budget() {
    test_support::need(Need::McpPython);
    let ws = Workspace::new();
    let (_clients, registry) = connect(&ws, &[("demo", stdio_server())], &[]).await;
    // ~7 MB from the server.
    let out = call(&registry, &ws, "demo__flood", json!({"lines": 100_000})).await;
    let text = ok(&out);
    assert!(
        text.len() <= tools::DEFAULT_OUTPUT_LIMIT + 200,
        "{} bytes",
        text.len()
    );
    assert!(text.starts_with("line 0 "), "{}", &text[..40]);
}

#[tokio::test]
#[ignore = "needs python mcp"]
async fn a_lying_schema_is_refused_and_bad_arguments_never_reach_the_server() {
    test_support::need(Need::McpPython);
    let ws = Workspace::new();
    let (clients, registry) = connect(&ws, &[("demo", stdio_server())], &[]).await;
    let now = status(&clients, "demo");
    assert!(!now.tools.contains(&"demo__liar".to_owned()), "{now:?}");
    assert_eq!(now.refused.len(), 1, "{now:?}");
    assert_eq!(now.refused[0].tool, "liar");
    assert!(
        now.refused[0].reason.contains("unknown `type` \"banana\""),
        "{:?}",
        now.refused[0]
    );
    let out = call(&registry, &ws, "demo__liar", json!({"x": 1})).await;
    assert_eq!(out.error_kind, Some("unknown_tool"), "{}", out.output);
    // Arguments that do not match the schema are refused before the server sees them.
    let out = call(&registry, &ws, "demo__add", json!({"a": "two", "b": 3})).await;
    assert_eq!(out.error_kind, Some("invalid_arguments"), "{}", out.output);
    assert!(
        out.output.contains("`a` must be an integer"),
        "{}",
        out.output
    );
}

#[tokio::test]
#[ignore = "needs python mcp"]
async fn a_changed_tool_list_is_picked_up_over_both_transports() {
    test_support::need(Need::McpPython);
    let ws = Workspace::new();
    let http = HttpServer::start(&ws.shared()).await;
    let (clients, registry) = connect(
        &ws,
        &[("local", stdio_server()), ("remote", http.config())],
        &[],
    )
    .await;
    for server in ["local", "remote"] {
        let late = format!("{server}__late");
        assert!(registry.get(&late).is_none());
        let out = call(&registry, &ws, &format!("{server}__grow"), json!({})).await;
        assert_eq!(ok(&out), "grown");
        until(&clients, server, |s| s.tools.contains(&late)).await;
        assert!(registry.names().contains(&late));
        let out = call(&registry, &ws, &late, json!({"word": "hello"})).await;
        assert_eq!(ok(&out), "late: hello");
    }
}

#[tokio::test]
#[ignore = "needs python mcp"]
async fn a_name_colliding_with_a_builtin_is_refused_and_allow_lists_apply() {
    test_support::need(Need::McpPython);
    let ws = Workspace::new();
    let server = McpServerConfig {
        tools: vec!["echo".into(), "add".into(), "whereami".into()],
        exclude: vec!["whereami".into()],
        tier: Some(SafetyTier::SideEffecting),
        tool_tiers: BTreeMap::from([("add".to_owned(), SafetyTier::ReadOnly)]),
        ..stdio_server()
    };
    let (clients, registry) = connect(&ws, &[("demo", server)], &["demo__echo"]).await;
    let now = status(&clients, "demo");
    assert_eq!(now.tools, ["demo__add"]);
    assert_eq!(now.refused.len(), 1, "{now:?}");
    assert_eq!(
        now.refused[0].reason,
        "`demo__echo` collides with a built-in tool"
    );
    let add = registry.get("demo__add").unwrap();
    assert_eq!(add.safety_tier(), SafetyTier::ReadOnly);
}

#[tokio::test]
#[ignore = "needs python mcp"]
async fn trusted_read_only_annotations_make_a_tool_read_only() {
    test_support::need(Need::McpPython);
    let ws = Workspace::new();
    let server = McpServerConfig {
        trust_annotations: true,
        ..stdio_server()
    };
    let (_clients, registry) = connect(&ws, &[("demo", server)], &[]).await;
    let tier = |name: &str| registry.get(name).unwrap().safety_tier();
    assert_eq!(tier("demo__echo"), SafetyTier::ReadOnly);
    assert_eq!(tier("demo__add"), SafetyTier::Privileged);
}

#[tokio::test]
async fn a_server_that_cannot_start_is_down_with_the_reason() {
    let ws = Workspace::new();
    let server = McpServerConfig {
        command: Some("/nonexistent/mcp-server".into()),
        ..McpServerConfig::default()
    };
    let unreachable = McpServerConfig {
        url: Some("http://127.0.0.1:9/mcp".into()),
        timeout_secs: 5,
        ..McpServerConfig::default()
    };
    let (clients, registry) = connect(&ws, &[("gone", server), ("far", unreachable)], &[]).await;
    let now = status(&clients, "gone");
    assert!(
        now.to_string()
            .starts_with("gone (stdio): down (restarting): cannot start `/nonexistent/mcp-server`"),
        "{now}"
    );
    let now = status(&clients, "far");
    assert!(
        now.to_string()
            .starts_with("far (http): down (restarting): "),
        "{now}"
    );
    assert!(registry.names().is_empty());
}
