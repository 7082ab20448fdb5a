//! `get_history`: a page of a session's stored messages, oldest first.

use types::{ErrorCode, ServerFrame, SessionId};

use super::{Conn, MAX_HISTORY_PAGE, Refusal};

impl Conn {
    pub(super) async fn history(
        &self,
        session: &SessionId,
        before: Option<u64>,
        limit: u32,
    ) -> Result<Option<ServerFrame>, Refusal> {
        if limit == 0 || limit > MAX_HISTORY_PAGE {
            return Err((
                ErrorCode::InvalidRequest,
                format!("limit must be between 1 and {MAX_HISTORY_PAGE}"),
            ));
        }
        self.lookup(session).await?;
        let page = usize::try_from(limit).unwrap_or(usize::MAX);
        let events = self
            .user
            .runtime
            .history_page(session, before, page)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "reading history failed");
                (
                    ErrorCode::Internal,
                    "could not read the history; try again".to_owned(),
                )
            })?;
        let next_before = match events.first() {
            Some(first) if events.len() == page && first.seq > 1 => Some(first.seq),
            _ => None,
        };
        let events = events
            .into_iter()
            .map(|e| types::HistoryEvent {
                number: e.seq,
                message: e.message,
                created_at: crate::user::rfc3339(e.created_at),
            })
            .collect();
        Ok(Some(ServerFrame::History {
            session_id: session.clone(),
            events,
            next_before,
        }))
    }
}
