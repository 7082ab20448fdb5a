//! One connection to one server: started through a [`Launcher`] (stdio) or over streamable HTTP,
//! initialized, and watched for `notifications/tools/list_changed`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use rmcp::handler::client::ClientHandler;
use rmcp::model::ProgressNotificationParam;
use rmcp::service::{NotificationContext, RoleClient, RunningService, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::mpsc;
use types::McpServerConfig;

use super::launch::Launcher;
use super::progress::Progress;

/// What a connection tells its supervisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// The server's tool list changed: list it again.
    ListChanged,
    /// A call found the connection broken: reconnect.
    Broken(String),
}

/// The client side of one connection.
#[derive(Debug, Clone)]
pub(crate) struct Handler {
    server: String,
    events: mpsc::UnboundedSender<Event>,
    progress: Progress,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(server = %self.server, "MCP server changed its tool list");
        let _ = self.events.send(Event::ListChanged);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::debug!(server = %self.server, progress = params.progress, "MCP tool progress");
        self.progress.report(&params);
    }
}

/// A live connection: the MCP service and what keeps the server running.
pub(crate) struct Session {
    pub service: RunningService<RoleClient, Handler>,
    /// The stdio server's guard (ends it when dropped); `None` over HTTP.
    pub _guard: Option<Box<dyn Send + Sync>>,
}

/// The last lines a stdio server wrote to stderr (why it stopped, usually).
#[derive(Debug, Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<String>>);

/// Most of a server's stderr kept.
const STDERR_TAIL: usize = 400;

impl StderrTail {
    fn push(&self, line: &str) {
        let mut tail = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !tail.is_empty() {
            tail.push(' ');
        }
        tail.push_str(line.trim());
        if tail.len() > STDERR_TAIL {
            let mut cut = tail.len() - STDERR_TAIL;
            while !tail.is_char_boundary(cut) {
                cut += 1;
            }
            tail.drain(..cut);
        }
    }

    /// Forgets what an earlier run of the server wrote.
    pub fn clear(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// The kept text, if any.
    pub fn text(&self) -> Option<String> {
        let tail = self.0.lock().unwrap_or_else(|p| p.into_inner());
        (!tail.is_empty()).then(|| tail.clone())
    }

    fn drain(&self, stderr: Box<dyn AsyncRead + Send + Unpin>) {
        let tail = self.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(line = %line, "MCP server stderr");
                tail.push(&line);
            }
        });
    }
}

/// Connects to the server `name`, within `timeout`.
pub(crate) async fn connect(
    name: &str,
    config: &McpServerConfig,
    launcher: &dyn Launcher,
    events: mpsc::UnboundedSender<Event>,
    stderr: &StderrTail,
    progress: Progress,
) -> Result<Session, String> {
    let handler = Handler {
        server: name.to_owned(),
        events,
        progress,
    };
    let timeout = Duration::from_secs(config.timeout_secs);
    let started = async {
        match &config.url {
            Some(url) => {
                let transport = StreamableHttpClientTransport::with_client(
                    http_client()?,
                    http_config(url, config)?,
                );
                let service = handler.serve(transport).await.map_err(|e| e.to_string())?;
                Ok(Session {
                    service,
                    _guard: None,
                })
            }
            None => {
                let launched = launcher
                    .launch(name, config)
                    .await
                    .map_err(|e| e.to_string())?;
                if let Some(err) = launched.stderr {
                    stderr.drain(err);
                }
                let service = handler
                    .serve((launched.reader, launched.writer))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(Session {
                    service,
                    _guard: Some(launched.guard),
                })
            }
        }
    };
    match tokio::time::timeout(timeout, started).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "it did not answer `initialize` within {}s",
            config.timeout_secs
        )),
    }
}

fn http_config(
    url: &str,
    config: &McpServerConfig,
) -> Result<StreamableHttpClientTransportConfig, String> {
    install_tls_provider();
    let mut headers = HashMap::new();
    for (key, value) in &config.headers {
        let key = http::HeaderName::try_from(key.as_str())
            .map_err(|_| format!("header name {key:?} is not valid"))?;
        let value = http::HeaderValue::try_from(value.as_str())
            .map_err(|_| format!("the value of header `{key}` is not valid"))?;
        headers.insert(key, value);
    }
    let mut transport = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    if let Some(var) = &config.bearer_token_env {
        let token = std::env::var(var).map_err(|_| {
            format!("the environment variable `{var}` (bearer_token_env) is not set")
        })?;
        transport = transport.auth_header(token);
    }
    Ok(transport)
}

/// The HTTP client of one connection: its connections are kept and reused between calls
/// (rmcp's default client opens a new one for every request, a few milliseconds each). Like
/// rmcp's, it follows only same-origin 307 and 308 redirects (which keep the method and body),
/// at most 10.
fn http_client() -> Result<rmcp_reqwest::Client, String> {
    install_tls_provider();
    let policy = rmcp_reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
        if attempt.previous().len() > 10 || !same_origin || !keeps_body {
            attempt.stop()
        } else {
            attempt.follow()
        }
    });
    rmcp_reqwest::Client::builder()
        .redirect(policy)
        .build()
        .map_err(|e| format!("cannot set up an HTTP client: {e}"))
}

/// rmcp's HTTP client (reqwest without a built-in provider) needs a process-wide rustls crypto
/// provider: ring, as our other HTTP clients use.
fn install_tls_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may install one first; either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
