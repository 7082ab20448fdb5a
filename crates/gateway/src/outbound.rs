//! One client's outgoing side: a bounded queue ([`Outbox`]) and the writer task that drains it
//! into the WebSocket.
//!
//! Turn events are *offered* to the queue and never wait: when a client's queue is full, the
//! session drops it from its subscribers and records a lag notice here. The writer sends the
//! notice (`lagged {session_id, last_seq}`) once everything queued before it has gone out, so the
//! client knows exactly where to `resync` from. Replies to the client's own requests wait for
//! room instead (only that client's reader waits). A client that does not take a frame within
//! `send_timeout` is disconnected.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::extract::ws::Message;
use futures::{Sink, SinkExt};
use tokio::sync::{Notify, mpsc};
use types::{ServerFrame, SessionId};

/// Identifies a connection within the gateway.
pub(crate) type ConnId = u64;

pub(crate) enum Outbound {
    Frame(ServerFrame),
    /// Replayed events, queued as one item so a replay never overflows the queue by itself.
    Batch(Vec<ServerFrame>),
    /// Send a close frame and stop.
    Close,
}

/// The sending half of a client's queue. Cheap to clone; sessions keep one per subscriber.
#[derive(Clone)]
pub(crate) struct Outbox {
    id: ConnId,
    tx: mpsc::Sender<Outbound>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox").field("id", &self.id).finish()
    }
}

#[derive(Default)]
struct Shared {
    lags: Mutex<Vec<ServerFrame>>,
    notify: Notify,
}

impl Shared {
    fn lags(&self) -> MutexGuard<'_, Vec<ServerFrame>> {
        self.lags.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Why a frame could not be queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OfferError {
    Full,
    Closed,
}

impl Outbox {
    pub(crate) fn id(&self) -> ConnId {
        self.id
    }

    /// Queues `item` without waiting.
    pub(crate) fn offer(&self, item: Outbound) -> Result<(), OfferError> {
        self.tx.try_send(item).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => OfferError::Full,
            mpsc::error::TrySendError::Closed(_) => OfferError::Closed,
        })
    }

    /// Queues `frame`, waiting for room. False when the connection is gone.
    pub(crate) async fn send(&self, frame: ServerFrame) -> bool {
        self.tx.send(Outbound::Frame(frame)).await.is_ok()
    }

    /// Asks the writer to close the connection after what is queued.
    pub(crate) async fn close(&self) {
        let _ = self.tx.send(Outbound::Close).await;
    }

    /// Records that this client missed events of `session` after `last_seq`.
    pub(crate) fn report_lag(&self, session: &SessionId, last_seq: u64) {
        self.shared.lags().push(ServerFrame::Lagged {
            session_id: session.clone(),
            last_seq,
        });
        self.shared.notify.notify_one();
    }
}

/// Creates a client's queue of `capacity` items and starts its writer on `sink`.
pub(crate) fn start_writer<S>(
    id: ConnId,
    sink: S,
    capacity: usize,
    send_timeout: Duration,
) -> Outbox
where
    S: Sink<Message> + Unpin + Send + 'static,
    S::Error: std::fmt::Display,
{
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let shared = Arc::new(Shared::default());
    tokio::spawn(write_loop(sink, rx, Arc::clone(&shared), send_timeout));
    Outbox { id, tx, shared }
}

async fn write_loop<S>(
    mut sink: S,
    mut rx: mpsc::Receiver<Outbound>,
    shared: Arc<Shared>,
    send_timeout: Duration,
) where
    S: Sink<Message> + Unpin,
    S::Error: std::fmt::Display,
{
    loop {
        let item = match rx.try_recv() {
            Ok(item) => item,
            Err(mpsc::error::TryRecvError::Disconnected) => break,
            Err(mpsc::error::TryRecvError::Empty) => {
                // Everything queued so far is out: now lag notices keep their place in order.
                let lags = std::mem::take(&mut *shared.lags());
                if !lags.is_empty() {
                    Outbound::Batch(lags)
                } else {
                    tokio::select! {
                        item = rx.recv() => match item {
                            Some(item) => item,
                            None => break,
                        },
                        () = shared.notify.notified() => continue,
                    }
                }
            }
        };
        let frames = match item {
            Outbound::Frame(frame) => vec![frame],
            Outbound::Batch(frames) => frames,
            Outbound::Close => break,
        };
        for frame in frames {
            if !write(&mut sink, &frame, send_timeout).await {
                return;
            }
        }
    }
    let _ = tokio::time::timeout(send_timeout, sink.send(Message::Close(None))).await;
    let _ = tokio::time::timeout(send_timeout, sink.close()).await;
}

/// Sends one frame; false when the client is gone or too slow.
async fn write<S>(sink: &mut S, frame: &ServerFrame, send_timeout: Duration) -> bool
where
    S: Sink<Message> + Unpin,
    S::Error: std::fmt::Display,
{
    let text = match serde_json::to_string(frame) {
        Ok(text) => text,
        Err(e) => {
            tracing::error!(error = %e, "could not encode a frame");
            return true;
        }
    };
    match tokio::time::timeout(send_timeout, sink.send(Message::Text(text.into()))).await {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "client connection closed");
            false
        }
        Err(_) => {
            tracing::warn!("client did not take a frame in time; disconnecting it");
            false
        }
    }
}
