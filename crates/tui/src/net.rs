//! The network client: one task that keeps a WebSocket to the gateway, signs in with `hello`
//! (resuming the session and `seq` the model last saw), forwards frames both ways, and
//! reconnects with exponential backoff when the connection drops.
//!
//! Before each reconnect the endpoint and token are read again from [`NetConfig::source`]: a
//! restarted agent (`gateway_port = 0`) listens on a new port and rewrites its marker. While
//! that marker is gone (the agent stopped, or crashed and is not back yet) the client waits
//! instead of knocking on the old port with the token: whatever listens there now may be a
//! command of the agent's shell, which can listen on loopback and reads the port from
//! `ipc/gateway.json`.
//!
//! Sign-in failures that retrying cannot fix (`unauthorized`, `version_mismatch`) end the task
//! with [`ConnEvent::Failed`]. The task ends quietly when the outgoing channel closes.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use types::{ClientFrame, ErrorCode, PROTOCOL_VERSION, ServerFrame, UserId};

use crate::args::Source;
use crate::model::{ConnEvent, Resume};

/// Where and as whom to connect.
#[derive(Debug, Clone)]
pub struct NetConfig {
    pub url: String,
    pub user: UserId,
    pub token: String,
    /// The first retry delay; it doubles up to `max_backoff`.
    pub backoff: Duration,
    pub max_backoff: Duration,
    /// How long connecting plus `hello` may take.
    pub connect_timeout: Duration,
    /// A `ping` goes out when nothing was sent for this long.
    pub keepalive: Duration,
    /// The files `url` and `token` came from, read again before each reconnect.
    pub source: Source,
}

impl NetConfig {
    pub fn new(url: String, user: UserId, token: String) -> Self {
        Self {
            url,
            user,
            token,
            backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(8),
            connect_timeout: Duration::from_secs(10),
            keepalive: Duration::from_secs(20),
            source: Source::default(),
        }
    }
}

/// Why a connection ended.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("cannot reach the gateway: {0}")]
    Connect(#[source] Box<tokio_tungstenite::tungstenite::Error>),
    #[error("the gateway did not answer in time")]
    Timeout,
    #[error("the gateway closed the connection")]
    Closed,
    #[error("{message}")]
    Rejected { code: ErrorCode, message: String },
    #[error("unexpected answer to hello")]
    Protocol,
    /// The agent's `.oxydra/gateway.json` is gone: it is not running (yet).
    #[error("the agent is not running (no .oxydra/gateway.json); waiting for it to start")]
    NotRunning,
}

impl NetError {
    /// Whether trying again cannot help.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            NetError::Rejected {
                code: ErrorCode::Unauthorized | ErrorCode::VersionMismatch,
                ..
            }
        )
    }
}

/// How a connection that signed in ended.
enum End {
    /// The app is done: stop.
    Quit,
    Lost(NetError),
}

/// Starts the client task. `resume` is read at each sign-in; frames from `outgoing` are sent
/// while connected (and dropped while not: the model does not send then).
pub fn spawn(
    mut config: NetConfig,
    resume: watch::Receiver<Resume>,
    mut outgoing: mpsc::Receiver<ClientFrame>,
    events: mpsc::Sender<ConnEvent>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut attempt: u32 = 0;
        let mut first = true;
        loop {
            attempt += 1;
            let known = std::mem::take(&mut first) || refresh(&mut config);
            if known
                && events
                    .send(ConnEvent::Connecting { attempt })
                    .await
                    .is_err()
            {
                return;
            }
            let outcome = if known {
                connection(&config, &resume, &mut outgoing, &events).await
            } else {
                Err(NetError::NotRunning)
            };
            let reason = match outcome {
                Ok(End::Quit) => return,
                Ok(End::Lost(e)) => {
                    attempt = 1;
                    e
                }
                Err(e) if e.is_fatal() => {
                    let reason = format!("The gateway refused to sign you in: {e}");
                    let _ = events.send(ConnEvent::Failed { reason }).await;
                    return;
                }
                Err(e) => e,
            };
            let retry_in = backoff(&config, attempt);
            let offline = ConnEvent::Offline {
                reason: reason.to_string(),
                retry_in,
            };
            if events.send(offline).await.is_err() {
                return;
            }
            let sleep = tokio::time::sleep(retry_in);
            tokio::pin!(sleep);
            loop {
                tokio::select! {
                    () = &mut sleep => break,
                    frame = outgoing.recv() => if frame.is_none() { return },
                }
            }
        }
    })
}

/// Takes the endpoint and token the files name now (keeping the old token while unreadable).
/// `false` when the endpoint comes from a marker that is unreadable now: there is no gateway to
/// connect to, and the old address is not one (see the module docs).
fn refresh(config: &mut NetConfig) -> bool {
    let (url, token) = config.source.read();
    if let Some(token) = token {
        config.token = token;
    }
    match url {
        Some(url) => {
            config.url = url;
            true
        }
        None => config.source.endpoint.is_none(),
    }
}

/// The delay before attempt `attempt + 1`.
pub fn backoff(config: &NetConfig, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(16));
    config
        .backoff
        .saturating_mul(factor)
        .min(config.max_backoff)
}

/// One connection: sign in, then pump frames. `Err` when it never signed in.
async fn connection(
    config: &NetConfig,
    resume: &watch::Receiver<Resume>,
    outgoing: &mut mpsc::Receiver<ClientFrame>,
    events: &mpsc::Sender<ConnEvent>,
) -> Result<End, NetError> {
    let signed_in = tokio::time::timeout(config.connect_timeout, sign_in(config, resume)).await;
    let (mut ws, hello_ok) = match signed_in {
        Err(_) => return Err(NetError::Timeout),
        Ok(Ok(signed_in)) => signed_in,
        Ok(Err((error, refusal))) => {
            if let SignIn::Refused(frame) = refusal {
                // Informative only: the model learns why (e.g. its session is gone).
                let _ = events.send(ConnEvent::Frame(frame)).await;
            }
            return Err(error);
        }
    };
    if events.send(ConnEvent::Frame(hello_ok)).await.is_err() {
        return Ok(End::Quit);
    }
    let mut keepalive = tokio::time::interval(config.keepalive);
    keepalive.tick().await;
    loop {
        tokio::select! {
            message = ws.next() => {
                let text = match message {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_))) | None => return Ok(End::Lost(NetError::Closed)),
                    Some(Err(e)) => return Ok(End::Lost(NetError::Connect(Box::new(e)))),
                    Some(Ok(_)) => continue,
                };
                // Frames this version does not know are skipped (the protocol is additive).
                if let Ok(frame) = serde_json::from_str::<ServerFrame>(text.as_str())
                    && events.send(ConnEvent::Frame(frame)).await.is_err()
                {
                    return Ok(End::Quit);
                }
            }
            frame = outgoing.recv() => {
                let Some(frame) = frame else {
                    let _ = ws.close(None).await;
                    return Ok(End::Quit);
                };
                keepalive.reset();
                if let Err(e) = send(&mut ws, &frame).await {
                    return Ok(End::Lost(e));
                }
            }
            _ = keepalive.tick() => {
                if let Err(e) = send(&mut ws, &ClientFrame::Ping).await {
                    return Ok(End::Lost(e));
                }
            }
        }
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// What a failed sign-in leaves: the gateway's error frame, when it sent one.
enum SignIn {
    Refused(ServerFrame),
    Failed,
}

async fn sign_in(
    config: &NetConfig,
    resume: &watch::Receiver<Resume>,
) -> Result<(Socket, ServerFrame), (NetError, SignIn)> {
    let fail = |e: NetError| (e, SignIn::Failed);
    let (mut ws, _) = tokio_tungstenite::connect_async(config.url.as_str())
        .await
        .map_err(|e| fail(NetError::Connect(Box::new(e))))?;
    let Resume { session, last_seq } = resume.borrow().clone();
    let hello = ClientFrame::Hello {
        protocol_version: PROTOCOL_VERSION,
        token: config.token.clone(),
        user_id: config.user.clone(),
        session_id: session,
        last_seq,
    };
    send(&mut ws, &hello).await.map_err(fail)?;
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(text))) => {
                return match serde_json::from_str::<ServerFrame>(text.as_str()) {
                    Ok(frame @ ServerFrame::HelloOk { .. }) => Ok((ws, frame)),
                    Ok(frame @ ServerFrame::Error { .. }) => {
                        let ServerFrame::Error { code, message, .. } = &frame else {
                            return Err(fail(NetError::Protocol));
                        };
                        let error = NetError::Rejected {
                            code: *code,
                            message: message.clone(),
                        };
                        Err((error, SignIn::Refused(frame)))
                    }
                    _ => Err(fail(NetError::Protocol)),
                };
            }
            Some(Ok(Message::Close(_))) | None => return Err(fail(NetError::Closed)),
            Some(Err(e)) => return Err(fail(NetError::Connect(Box::new(e)))),
            Some(Ok(_)) => {}
        }
    }
}

async fn send(ws: &mut Socket, frame: &ClientFrame) -> Result<(), NetError> {
    let text = serde_json::to_string(frame).map_err(|_| NetError::Protocol)?;
    ws.send(Message::Text(text.into()))
        .await
        .map_err(|e| NetError::Connect(Box::new(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_the_cap() {
        let config = NetConfig::new("ws://x".into(), UserId::parse("u").expect("id"), "t".into());
        let delays: Vec<u64> = (1..=8)
            .map(|a| u64::try_from(backoff(&config, a).as_millis()).expect("fits"))
            .collect();
        assert_eq!(delays, vec![250, 500, 1000, 2000, 4000, 8000, 8000, 8000]);
    }
}
