//! A real gateway for the client's tests (real libSQL files, the scripted model, a token file),
//! a second connection to its store (what the user's notes are now), the real `oxydra-tui` in
//! tmux on it, and `until`: drive an [`App`] with its connection events until a condition holds.

#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test fixtures fail loudly; each test binary uses a subset"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gateway::{Gateway, GatewayConfig, GatewayToken, RunningGateway, UserAgent};
use memory::{HashEmbedder, MemoryStore};
use provider::ProviderOptions;
use runtime::{AgentRuntime, ModelLimits};
use test_support::ScriptedLlm;
use tokio::sync::{mpsc, watch};
use tui::{App, ConnEvent};
use types::{RetrievalConfig, RuntimeConfig, UserId, WorkspacePaths};

/// A running gateway serving `user` under `root`, and the path of that user's token file.
pub async fn gateway(root: &Path, user: &str, llm: &ScriptedLlm) -> (RunningGateway, PathBuf) {
    gateway_for(root, user, llm, types::MemoryDialect::Notes.into()).await
}

/// [`gateway`] with the memory tools of `dialects` (`[tools] memory` in `agent.toml`).
pub async fn gateway_for(
    root: &Path,
    user: &str,
    llm: &ScriptedLlm,
    dialects: types::MemoryDialects,
) -> (RunningGateway, PathBuf) {
    gateway_with(root, user, llm, dialects, None).await
}

/// [`gateway_for`] whose user's agent has these MCP servers (their state in the clients' status).
pub async fn gateway_with(
    root: &Path,
    user: &str,
    llm: &ScriptedLlm,
    dialects: types::MemoryDialects,
    mcp: Option<Arc<mcp::client::McpClients>>,
) -> (RunningGateway, PathBuf) {
    let ws = WorkspacePaths::new(root.join(user));
    for dir in types::WorkspaceDir::ALL {
        std::fs::create_dir_all(ws.dir(dir)).unwrap();
    }
    let token = GatewayToken::load_or_create(&ws.internal()).unwrap();
    let store = open_store(root, user).await;
    let provider = provider::from_config_with(
        &llm.openai_config(),
        ProviderOptions {
            retry_base_delay: Duration::from_millis(5),
            retry_max_delay: Duration::from_millis(20),
            ..ProviderOptions::default()
        },
    )
    .unwrap();
    // Composed as `oxydra-vm` does (`runner::compose`): every built-in tool over this one store.
    let registry = tools::ToolSet::new(Some(Arc::new(store.clone())))
        .builtin(dialects)
        .registry()
        .unwrap();
    let limits = ModelLimits {
        context_window: 128_000,
        max_output_tokens: 1024,
    };
    let runtime = AgentRuntime::new(
        provider,
        Arc::new(registry),
        RuntimeConfig::default(),
        limits,
    )
    .with_retrieval(RetrievalConfig::default())
    .with_memory(store);
    let mut agent = UserAgent::new(UserId::parse(user).unwrap(), token, ws.clone(), runtime);
    if let Some(clients) = mcp {
        agent = agent.with_mcp_clients(clients);
    }
    let mut gw = Gateway::new(GatewayConfig::default());
    gw.add_user(agent).unwrap();
    let running = gw.start().await.unwrap();
    (running, ws.internal().join("gateway.token"))
}

/// A connection to `user`'s database file under `root` (the gateway's own, or a second one
/// beside it to check what the client's commands changed).
pub async fn open_store(root: &Path, user: &str) -> MemoryStore {
    let ws = WorkspacePaths::new(root.join(user));
    MemoryStore::open(
        memory::Target::File(&ws.default_memory_db()),
        memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(256))),
    )
    .await
    .unwrap()
}

/// The texts of `user`'s notes as stored, sorted, read through a second connection to the
/// database file.
pub async fn stored_notes(root: &Path, user: &str) -> Vec<String> {
    let store = open_store(root, user).await;
    let mut notes: Vec<String> = store
        .list_notes(&UserId::parse(user).unwrap())
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.content)
        .collect();
    notes.sort();
    notes
}

/// Applies events until `done` holds for the app; sends what the app answers.
pub async fn until(
    app: &mut App,
    events: &mut mpsc::Receiver<ConnEvent>,
    out: &mpsc::Sender<types::ClientFrame>,
    resume: &watch::Sender<tui::Resume>,
    what: &str,
    done: impl Fn(&App) -> bool,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !done(app) {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {what}: {:?}", app.conn))
            .expect("the client runs");
        for frame in app.on_conn(event) {
            out.send(frame).await.unwrap();
        }
        resume.send_replace(app.resume());
    }
}

/// The real `oxydra-tui` in tmux (100×30) on `gw` as alice; once it exits, the shell prints
/// "oxydra-tui exited with STATUS" on the normal screen.
pub fn client_in_tmux(name: &str, gw: &RunningGateway, token_file: &Path) -> test_support::Tmux {
    in_tmux(name, 30, gw, token_file)
}

/// [`client_in_tmux`] 40 lines tall, for the memory screens' longer lists.
pub fn tall_client_in_tmux(
    name: &str,
    gw: &RunningGateway,
    token_file: &Path,
) -> test_support::Tmux {
    in_tmux(name, 40, gw, token_file)
}

fn in_tmux(name: &str, rows: u16, gw: &RunningGateway, token_file: &Path) -> test_support::Tmux {
    let command = format!(
        "{} --url {} --user alice --token-file {}; echo \"oxydra-tui exited with $?\"; sleep 60",
        env!("CARGO_BIN_EXE_oxydra-tui"),
        gw.url(),
        token_file.display()
    );
    test_support::Tmux::start(name, 100, rows, &command)
}
