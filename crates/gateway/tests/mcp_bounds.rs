//! `/mcp` attacked with the user's own token, over raw HTTP against a real gateway, real libSQL
//! store and the user's real tool registry: sessions beyond the cap, idle sessions, a body that
//! never finishes, a browser's `Origin`, a session's `DELETE`, an error quoting a path with an
//! e-mail, and namespaces chosen to grow `/metrics`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use gateway::{Gateway, GatewayConfig, RunningGateway};
use serde_json::{Value, json};
use test_support::ScriptedLlm;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use types::{UserId, WorkspacePaths};

use crate::common::{open_store, provider, token_of, user_agent};

/// Alice's gateway with `/mcp` (the notes dialect, keyed values and the files dialect, governed
/// with metrics as `oxydra-vm` composes it: [`mcp_agent`]) under `limits`.
async fn gateway(
    dir: &std::path::Path,
    limits: mcp::McpLimits,
    config: GatewayConfig,
) -> (RunningGateway, String) {
    let server = ScriptedLlm::start().await;
    let agent = mcp_agent(dir, "alice", &server, limits).await;
    let mut gw = Gateway::new(config);
    gw.add_user(agent).unwrap();
    let gw = gw.start().await.unwrap();
    let token = token_of(dir, "alice");
    (gw, token)
}

/// `user`'s agent with `/mcp` as `oxydra-vm` composes it, under `limits`.
pub(crate) async fn mcp_agent(
    dir: &std::path::Path,
    user: &str,
    server: &ScriptedLlm,
    limits: mcp::McpLimits,
) -> gateway::UserAgent {
    let agent = user_agent(dir, user, provider(server)).await;
    let store = open_store(dir, user).await;
    let memory: Arc<dyn memory::MemoryRetrieval> = Arc::new(store.clone());
    let dialects = [types::MemoryDialect::Notes, types::MemoryDialect::Files];
    let mut agent_config = types::AgentConfig::default();
    agent_config.tools.memory = types::MemoryDialects::of(&dialects).unwrap();
    let registry = tools::ToolSet::for_mcp(&agent_config, Some(memory))
        .registry()
        .unwrap();
    let metrics = tools::MemoryMetrics::new().unwrap();
    let governance = tools::Governance::new(types::GovernanceConfig::default())
        .with_audit(Arc::new(store))
        .with_metrics(Arc::new(metrics.clone()));
    let registry = Arc::new(registry.with_governance(Arc::new(governance)));
    let workspace = WorkspacePaths::new(dir.join(user));
    let user = UserId::parse(user).unwrap();
    let mcp_server = mcp::McpServer::new(registry, user, workspace).unwrap();
    agent
        .with_metrics(move || metrics.render())
        .with_mcp(mcp_server, limits)
}

/// Alice's gateway with the default limits, and a session of hers.
async fn default_gateway(dir: &std::path::Path) -> (RunningGateway, String, String) {
    let (gw, token) = gateway(dir, mcp::McpLimits::default(), GatewayConfig::default()).await;
    let session = initialize(&gw, &token).await;
    (gw, token, session)
}

fn limits(max_sessions: usize, idle: Duration) -> mcp::McpLimits {
    mcp::McpLimits {
        max_sessions,
        idle,
        ..mcp::McpLimits::default()
    }
}

/// A raw HTTP/1.1 exchange on a fresh connection: status, headers (lowercase names) and body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC message in the body (JSON, or the `data:` of an SSE event with an id).
    pub(crate) fn json(&self) -> Value {
        if let Ok(v) = serde_json::from_str(&self.body) {
            return v;
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("id").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in {:?}", self.body))
    }
}

pub(crate) async fn exchange(
    gw: &RunningGateway,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut stream = TcpStream::connect(gw.local_addr()).await.unwrap();
    let mut request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut raw))
        .await
        .expect("an answer")
        .unwrap();
    parse(&String::from_utf8_lossy(&raw))
}

fn parse(raw: &str) -> Answer {
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {raw:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        unchunk(body)
    } else {
        body.to_owned()
    };
    Answer {
        status,
        headers,
        body,
    }
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// A new MCP session of alice's (initialize + initialized): its id.
pub(crate) async fn initialize(gw: &RunningGateway, token: &str) -> String {
    let bearer = format!("Bearer {token}");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "attacker", "version": "1"}}});
    let answer = exchange(gw, "POST", &[("Authorization", &bearer)], &init.to_string()).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let session = answer
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = post(gw, token, &session, &done).await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    session
}

pub(crate) async fn post(gw: &RunningGateway, token: &str, session: &str, body: &Value) -> Answer {
    let bearer = format!("Bearer {token}");
    exchange(
        gw,
        "POST",
        &[
            ("Authorization", &bearer),
            ("Mcp-Session-Id", session),
            ("Mcp-Protocol-Version", "2025-06-18"),
        ],
        &body.to_string(),
    )
    .await
}

pub(crate) async fn ping(gw: &RunningGateway, token: &str, session: &str) -> u16 {
    post(
        gw,
        token,
        session,
        &json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}),
    )
    .await
    .status
}

pub(crate) async fn call(
    gw: &RunningGateway,
    token: &str,
    session: &str,
    tool: &str,
    args: Value,
) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": tool, "arguments": args}});
    let answer = post(gw, token, session, &body).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.json()["result"].clone()
}

#[tokio::test]
async fn sessions_past_the_cap_close_the_least_recently_used() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, token) = gateway(
        dir.path(),
        limits(4, Duration::from_secs(60)),
        GatewayConfig::default(),
    )
    .await;
    let first = initialize(&gw, &token).await;
    let mut sessions = vec![first.clone()];
    for _ in 0..3 {
        sessions.push(initialize(&gw, &token).await);
    }
    // The first is used again: the second is now the least recently used.
    assert_eq!(ping(&gw, &token, &first).await, 200);
    // Many more: only the four most recently used are held at any time.
    let mut newest = Vec::new();
    for _ in 0..40 {
        newest.push(initialize(&gw, &token).await);
    }
    for old in &sessions {
        assert_eq!(ping(&gw, &token, old).await, 404, "an old session was kept");
    }
    for kept in newest.iter().rev().take(4) {
        assert_eq!(
            ping(&gw, &token, kept).await,
            200,
            "a recent session was closed"
        );
    }
    for closed in newest.iter().rev().skip(4) {
        assert_eq!(ping(&gw, &token, closed).await, 404);
    }
    // They were pinged newest first: one more closes the newest, the least recently used.
    let last = initialize(&gw, &token).await;
    assert_eq!(ping(&gw, &token, &last).await, 200);
    assert_eq!(ping(&gw, &token, &newest[39]).await, 404);
    assert_eq!(ping(&gw, &token, &newest[36]).await, 200);
    gw.shutdown().await;
}

#[tokio::test]
async fn an_idle_session_is_closed_after_the_idle_time() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, token) = gateway(
        dir.path(),
        limits(8, Duration::from_secs(1)),
        GatewayConfig::default(),
    )
    .await;
    let idle = initialize(&gw, &token).await;
    let busy = initialize(&gw, &token).await;
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            ping(&gw, &token, &busy).await,
            200,
            "a used session expired"
        );
    }
    assert_eq!(
        ping(&gw, &token, &idle).await,
        404,
        "an idle session was kept"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn a_body_that_never_finishes_is_dropped_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let config = GatewayConfig {
        body_timeout: Duration::from_secs(1),
        ..GatewayConfig::default()
    };
    let (gw, token) = gateway(dir.path(), mcp::McpLimits::default(), config).await;
    let mut stream = TcpStream::connect(gw.local_addr()).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: 100000\r\n\r\n{{\"jsonrpc\": \"2.0\", "
    );
    let started = Instant::now();
    stream.write_all(head.as_bytes()).await.unwrap();
    // One byte every 300 ms: never done, never silent for long.
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let finished = tokio::time::timeout(Duration::from_secs(8), async {
        loop {
            tokio::select! {
                read = stream.read(&mut buf) => match read {
                    Ok(0) | Err(_) => break,
                    Ok(n) => raw.extend_from_slice(&buf[..n]),
                },
                () = tokio::time::sleep(Duration::from_millis(300)) => {
                    if stream.write_all(b" ").await.is_err() {
                        break;
                    }
                }
            }
        }
    })
    .await;
    assert!(finished.is_ok(), "the slow body was held for 8 s");
    let answer = parse(&String::from_utf8_lossy(&raw));
    assert_eq!(answer.status, 408, "{}", answer.body);
    assert!(
        answer.body.contains("did not arrive within 1 s"),
        "{}",
        answer.body
    );
    assert!(started.elapsed() < Duration::from_secs(4));
    gw.shutdown().await;
}

#[tokio::test]
async fn a_browser_origin_is_refused_and_delete_answers_no_content() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, token) = gateway(
        dir.path(),
        mcp::McpLimits::default(),
        GatewayConfig::default(),
    )
    .await;
    let bearer = format!("Bearer {token}");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "page", "version": "1"}}});
    // Params that are not an object are refused as any browser request is, not answered.
    let unnamed = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": [1]});
    for origin in ["https://evil.example", "http://localhost:8080", "null"] {
        for body in [&init, &unnamed] {
            let answer = exchange(
                &gw,
                "POST",
                &[("Authorization", &bearer), ("Origin", origin)],
                &body.to_string(),
            )
            .await;
            assert_eq!(answer.status, 403, "Origin {origin}: {}", answer.body);
            assert!(answer.header("mcp-session-id").is_none());
        }
    }
    let session = initialize(&gw, &token).await;
    let answer = exchange(
        &gw,
        "DELETE",
        &[
            ("Authorization", &bearer),
            ("Mcp-Session-Id", &session),
            ("Mcp-Protocol-Version", "2025-06-18"),
        ],
        "",
    )
    .await;
    assert!(
        [200, 204].contains(&answer.status),
        "DELETE answered {}",
        answer.status
    );
    assert_eq!(
        ping(&gw, &token, &session).await,
        404,
        "a deleted session lives"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn errors_do_not_echo_personal_data() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, token, session) = default_gateway(dir.path()).await;
    let email = "jane.roe@example.com";
    let attempts = [
        (
            "memory",
            json!({"command": "view", "path": format!("/memories/{email}.md")}),
        ),
        (email, json!({})),
    ];
    for (tool, args) in attempts {
        let result = call(&gw, &token, &session, tool, args).await;
        assert_eq!(result["isError"], json!(true), "{result}");
        let text = result.to_string();
        assert!(!text.contains(email), "the error echoes the e-mail: {text}");
        assert!(text.contains("[REDACTED:email]"), "{text}");
    }
    gw.shutdown().await;
}

#[tokio::test]
async fn client_chosen_namespaces_do_not_grow_the_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, token, session) = default_gateway(dir.path()).await;
    let series = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("memory_tool_requests_total{"))
            .map(|l| l.split_once(' ').map_or(l, |(s, _)| s).to_owned())
            .collect()
    };
    for i in 0..100u32 {
        // A short, valid first segment of the attacker's choosing, new each time.
        let namespace = format!("ns{:08x}.items", rand_u32(i));
        let result = call(
            &gw,
            &token,
            &session,
            "putMemory",
            json!({"namespace": namespace, "key": "k", "value": i}),
        )
        .await;
        assert_eq!(result["isError"], json!(false), "{result}");
    }
    let (status, body) =
        crate::metrics::get(gw.local_addr(), Some(&format!("Bearer {token}"))).await;
    assert_eq!(status, 200);
    let all = series(&body);
    assert!(!all.is_empty(), "{body}");
    assert!(
        all.len() <= 2,
        "100 namespaces made {} series, e.g. {:?}",
        all.len(),
        all.first()
    );
    assert!(all.iter().all(|s| !s.contains("namespace=\"ns")), "{all:?}");
    gw.shutdown().await;
}

/// A different 32-bit number for each `i` and each run.
fn rand_u32(i: u32) -> u32 {
    let seed = uuid::Uuid::new_v4().as_u128() as u32;
    seed ^ i.wrapping_mul(0x9e37_79b9)
}

#[tokio::test]
async fn a_connection_that_authenticated_once_cannot_then_trickle_headers() {
    let dir = tempfile::tempdir().unwrap();
    let config = GatewayConfig {
        auth_timeout: Duration::from_secs(1),
        ..GatewayConfig::default()
    };
    let (gw, token) = gateway(dir.path(), mcp::McpLimits::default(), config).await;
    let mut stream = TcpStream::connect(gw.local_addr()).await.unwrap();
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    // A good request on a keep-alive connection (it needs no session to be answered)…
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{ping}",
        ping.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    // …then the next request's headers, a byte every 300 ms, forever.
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    let closed = tokio::time::timeout(Duration::from_secs(8), async {
        let next = b"POST /mcp HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        let mut sent = 0;
        loop {
            tokio::select! {
                read = stream.read(&mut buf) => match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                },
                () = tokio::time::sleep(Duration::from_millis(300)) => {
                    let byte = next.get(sent % next.len()).copied().unwrap_or(b'a');
                    sent += 1;
                    if stream.write_all(&[byte]).await.is_err() {
                        break;
                    }
                }
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "trickled headers held the connection for 8 s"
    );
    assert!(started.elapsed() < Duration::from_secs(4));
    gw.shutdown().await;
}
