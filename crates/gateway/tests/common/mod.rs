//! Fixtures for the gateway's tests: real gateways over real libSQL files and the scripted model,
//! a real WebSocket client, a headless browser signed in to the web client, and the lines the
//! gateway logs.

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the fixtures"
)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use gateway::{Gateway, GatewayConfig, GatewayToken, RunningGateway, UserAgent};
use memory::{HashEmbedder, MemoryStore};
use provider::{Provider, ProviderOptions};
use runtime::{AgentRuntime, ModelLimits};
use test_support::ScriptedLlm;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use types::{
    ClientFrame, PROTOCOL_VERSION, RetrievalConfig, RuntimeConfig, ServerFrame, SessionId,
    TurnEvent, UserId, WorkspacePaths,
};

use crate::browser::Browser;

pub const WAIT: Duration = Duration::from_secs(20);

pub fn provider(server: &ScriptedLlm) -> Arc<dyn Provider> {
    provider::from_config_with(
        &server.openai_config(),
        ProviderOptions {
            retry_base_delay: Duration::from_millis(5),
            retry_max_delay: Duration::from_millis(20),
            ..ProviderOptions::default()
        },
    )
    .expect("provider builds")
}

pub fn limits() -> ModelLimits {
    ModelLimits {
        context_window: 128_000,
        max_output_tokens: 1024,
    }
}

/// The standard agent over `store`, composed as `oxydra-vm` does (`runner::compose`): every
/// built-in tool over this one store, history and recall in it.
pub fn runtime(store: &MemoryStore, provider: Arc<dyn Provider>) -> AgentRuntime {
    runtime_with(store, provider, None)
}

/// [`runtime`], also offering the tools of `dynamic` (e.g. MCP servers' clients).
pub fn runtime_with(
    store: &MemoryStore,
    provider: Arc<dyn Provider>,
    dynamic: Option<Arc<dyn tools::DynamicTools>>,
) -> AgentRuntime {
    let mut registry = tools::ToolSet::new(Some(Arc::new(store.clone())))
        .builtin(types::MemoryDialect::Notes)
        .registry()
        .expect("unique tool names");
    if let Some(dynamic) = dynamic {
        registry = registry.with_dynamic_tools(dynamic);
    }
    AgentRuntime::new(
        provider,
        Arc::new(registry),
        RuntimeConfig::default(),
        limits(),
    )
    .with_retrieval(RetrievalConfig::default())
    .with_memory(store.clone())
}

pub async fn open_store(root: &Path, user: &str) -> MemoryStore {
    let ws = WorkspacePaths::new(root.join(user));
    MemoryStore::open(
        memory::Target::File(&ws.default_memory_db()),
        memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(256))),
    )
    .await
    .expect("store opens")
}

/// A user's agent under `root`, with its token created in `<root>/<user>/.oxydra/`.
pub async fn user_agent(root: &Path, user: &str, provider: Arc<dyn Provider>) -> UserAgent {
    user_agent_with(root, user, provider, None).await
}

/// [`user_agent`], also offering the tools of `dynamic`.
pub async fn user_agent_with(
    root: &Path,
    user: &str,
    provider: Arc<dyn Provider>,
    dynamic: Option<Arc<dyn tools::DynamicTools>>,
) -> UserAgent {
    let ws = WorkspacePaths::new(root.join(user));
    for dir in types::WorkspaceDir::ALL {
        std::fs::create_dir_all(ws.dir(dir)).expect("workspace dir");
    }
    let token = GatewayToken::load_or_create(&ws.internal()).expect("token");
    let store = open_store(root, user).await;
    UserAgent::new(
        UserId::parse(user).unwrap(),
        token,
        ws,
        runtime_with(&store, provider, dynamic),
    )
}

/// A user's agent with memory disabled (as `oxydra-vm` composes it for `[memory] enabled = false`):
/// no store, no memory tools; history lives in the runtime's process memory.
pub fn user_agent_without_memory(
    root: &Path,
    user: &str,
    provider: Arc<dyn Provider>,
) -> UserAgent {
    let ws = WorkspacePaths::new(root.join(user));
    for dir in types::WorkspaceDir::ALL {
        std::fs::create_dir_all(ws.dir(dir)).expect("workspace dir");
    }
    let token = GatewayToken::load_or_create(&ws.internal()).expect("token");
    let registry = tools::ToolSet::new(None)
        .files()
        .registry()
        .expect("file tools");
    let runtime = AgentRuntime::new(
        provider,
        Arc::new(registry),
        RuntimeConfig::default(),
        limits(),
    );
    UserAgent::new(UserId::parse(user).unwrap(), token, ws, runtime)
}

pub fn token_of(root: &Path, user: &str) -> String {
    let ws = WorkspacePaths::new(root.join(user));
    GatewayToken::load_or_create(&ws.internal())
        .expect("token")
        .secret()
        .to_owned()
}

/// A gateway for `users` under `root`, all talking to `server`.
pub async fn start(
    root: &Path,
    users: &[&str],
    server: &ScriptedLlm,
    config: GatewayConfig,
) -> RunningGateway {
    let mut gw = Gateway::new(config);
    for user in users {
        gw.add_user(user_agent(root, user, provider(server)).await)
            .expect("user added");
    }
    gw.start().await.expect("gateway starts")
}

pub fn sid(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}

/// A real WebSocket client.
pub struct Client {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

impl Client {
    pub async fn connect(gw: &RunningGateway) -> Self {
        let (ws, _) = tokio_tungstenite::connect_async(gw.url())
            .await
            .expect("connects");
        Self { ws }
    }

    /// Connects and authenticates as `user`, returning `hello_ok`'s session.
    pub async fn hello(
        gw: &RunningGateway,
        root: &Path,
        user: &str,
        session: Option<&SessionId>,
        last_seq: Option<u64>,
    ) -> (Self, types::SessionSummary) {
        let mut client = Self::connect(gw).await;
        client
            .send(&ClientFrame::Hello {
                protocol_version: PROTOCOL_VERSION,
                token: token_of(root, user),
                user_id: UserId::parse(user).unwrap(),
                session_id: session.cloned(),
                last_seq,
            })
            .await;
        match client.recv().await {
            ServerFrame::HelloOk { session, .. } => (client, session),
            other => panic!("expected hello_ok, got {other:?}"),
        }
    }

    pub async fn send(&mut self, frame: &ClientFrame) {
        let text = serde_json::to_string(frame).unwrap();
        self.send_raw(&text).await;
    }

    pub async fn send_raw(&mut self, text: &str) {
        self.ws
            .send(Message::Text(text.to_owned().into()))
            .await
            .expect("sends");
    }

    pub async fn send_binary(&mut self, bytes: Vec<u8>) {
        self.ws
            .send(Message::Binary(bytes.into()))
            .await
            .expect("sends");
    }

    /// The next frame, or `None` once the server closed the connection.
    pub async fn try_recv(&mut self) -> Option<ServerFrame> {
        loop {
            let msg = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .expect("a frame in time");
            match msg {
                Some(Ok(Message::Text(text))) => {
                    return Some(serde_json::from_str(text.as_str()).expect("a server frame"));
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return None,
                Some(Ok(_)) => {}
            }
        }
    }

    pub async fn recv(&mut self) -> ServerFrame {
        self.try_recv().await.expect("connection open")
    }

    /// Frames up to and including the first that `stop` accepts.
    pub async fn recv_until(&mut self, stop: impl Fn(&ServerFrame) -> bool) -> Vec<ServerFrame> {
        let mut frames = Vec::new();
        loop {
            let frame = self.recv().await;
            let done = stop(&frame);
            frames.push(frame);
            if done {
                return frames;
            }
        }
    }

    /// Frames up to and including the end of a turn.
    pub async fn recv_turn(&mut self) -> Vec<ServerFrame> {
        self.recv_until(ServerFrame::ends_turn).await
    }

    pub async fn expect_closed(&mut self) {
        assert_eq!(self.try_recv().await, None, "connection closed");
    }

    pub async fn send_turn(&mut self, session: &SessionId, text: &str, client_turn_id: &str) {
        self.send(&ClientFrame::SendTurn {
            session_id: session.clone(),
            text: text.into(),
            client_turn_id: client_turn_id.into(),
        })
        .await;
    }
}

/// The concatenated `assistant_delta` texts.
pub fn text_of(frames: &[ServerFrame]) -> String {
    frames
        .iter()
        .filter_map(|f| match f {
            ServerFrame::Turn {
                event: TurnEvent::AssistantDelta { text, .. },
                ..
            } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The `seq`s of turn events.
pub fn seqs(frames: &[ServerFrame]) -> Vec<u64> {
    frames.iter().filter_map(ServerFrame::seq).collect()
}

/// The error code of an `error` frame.
pub fn code(frame: &ServerFrame) -> types::ErrorCode {
    match frame {
        ServerFrame::Error { code, .. } => *code,
        other => panic!("expected an error frame, got {other:?}"),
    }
}

/// Every line the gateway logs while `run` runs on this thread.
pub async fn logged<F: std::future::Future<Output = ()>>(run: F) -> String {
    #[derive(Clone, Default)]
    struct Lines(Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let guard = tracing::subscriber::set_default(subscriber);
    run.await;
    drop(guard);
    let bytes = lines.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

/// A short auth timeout, for tests.
pub fn test_config() -> GatewayConfig {
    GatewayConfig {
        auth_timeout: Duration::from_millis(300),
        ..GatewayConfig::default()
    }
}

/// What the web client's connection indicator says once the page is signed in and connected.
pub const ONLINE: &str = "document.getElementById('conn').textContent === 'online'";

/// Signs the browser in with a one-time link from `POST /auth/link` and waits until online.
pub async fn sign_in_by_link(browser: &mut Browser, gw: &RunningGateway, token: &str) {
    let issued = crate::web::http(
        gw.local_addr(),
        "POST",
        "/auth/link",
        &[format!("Authorization: Bearer {token}")],
        "",
    )
    .await;
    let path: serde_json::Value = serde_json::from_str(&issued.body).unwrap();
    let url = format!(
        "http://{}{}",
        gw.local_addr(),
        path["path"].as_str().unwrap()
    );
    browser.navigate(&url).await;
    browser.wait_for("the page online", ONLINE).await;
}

/// A headless Chromium signed in to `gw` as `user` (whose workspace is under `root`) by
/// [`sign_in_by_link`], its page online.
pub async fn signed_in(gw: &RunningGateway, root: &Path, user: &str) -> Browser {
    let mut browser = Browser::launch().await;
    sign_in_by_link(&mut browser, gw, &token_of(root, user)).await;
    browser
}
