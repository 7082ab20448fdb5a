//! A call's progress: a call made with a listening [`ProgressSink`] registers the progress
//! token rmcp gave its request, and the server's `notifications/progress` for that token go to
//! the sink (the runtime turns them into `tool_progress` events). Such a call is sent through
//! rmcp's request handle, so it is cancelled here when dropped (timed out, turn cancelled), as
//! rmcp's own `call_tool` does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, ProgressNotificationParam, ProgressToken, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use types::{ProgressSink, ToolProgress};

/// Longest progress message passed on.
const MAX_MESSAGE: usize = 200;

/// The sinks of a server's running calls, by progress token (shared by its connections).
#[derive(Debug, Clone, Default)]
pub(crate) struct Progress(Arc<Mutex<HashMap<ProgressToken, ProgressSink>>>);

impl Progress {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, ProgressSink>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands a server's progress notification to the call it names (if it still runs).
    pub(crate) fn report(&self, params: &ProgressNotificationParam) {
        let sink = self.map().get(&params.progress_token).cloned();
        if let Some(sink) = sink {
            sink.report(ToolProgress {
                progress: params.progress,
                total: params.total,
                message: params.message.as_deref().map(short),
            });
        }
    }
}

/// One line of at most [`MAX_MESSAGE`] bytes.
fn short(message: &str) -> String {
    let line = message.lines().next().unwrap_or("").trim();
    let mut cut = line.len().min(MAX_MESSAGE);
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    line[..cut].to_owned()
}

/// Calls a tool; progress the server reports goes to `sink` when someone listens to it.
pub(crate) async fn call(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    progress: &Progress,
    sink: &ProgressSink,
) -> Result<CallToolResult, ServiceError> {
    if !sink.is_listened() {
        return peer.call_tool(params).await;
    }
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    let _listening = Listening::new(progress, handle.progress_token.clone(), sink.clone());
    let mut abandoned = Abandoned {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let result = handle.await_response().await;
    abandoned.id = None;
    match result? {
        ServerResult::CallToolResult(result) => Ok(result),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// A call's registration; removed when the call ends.
struct Listening {
    progress: Progress,
    token: ProgressToken,
}

impl Listening {
    fn new(progress: &Progress, token: ProgressToken, sink: ProgressSink) -> Self {
        progress.map().insert(token.clone(), sink);
        Self {
            progress: progress.clone(),
            token,
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.progress.map().remove(&self.token);
    }
}

/// Tells the server a call was abandoned (dropped before its answer).
struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.peer.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let params = CancelledNotificationParam::new(
                    Some(id),
                    Some("the call was abandoned".to_owned()),
                );
                let _ = peer.notify_cancelled(params).await;
            });
        }
    }
}
