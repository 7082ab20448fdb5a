//! `/export [md|jsonl] [path]`: the current conversation, fetched whole from the gateway a page
//! at a time (`get_history`, newest page first), rendered by the shared
//! [`types::export_conversation`] and handed to the app loop as an [`ExportFile`] to write (the
//! reducer does no I/O). Without a path the file is `oxydra-<session>.<md|jsonl>` in the working
//! directory; an existing file is never overwritten.

use std::path::PathBuf;

use types::{ClientFrame, ExportFormat, HistoryEvent, SessionId};

use super::{App, Entry};

/// Messages asked for per page while exporting (the gateway's largest page).
const EXPORT_PAGE: u32 = 200;

/// An export on its way: the pages received so far, newest first.
#[derive(Debug)]
pub(super) struct Exporting {
    format: ExportFormat,
    path: PathBuf,
    session: SessionId,
    pages: Vec<Vec<HistoryEvent>>,
}

/// A conversation to write to a new file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportFile {
    pub path: PathBuf,
    pub text: String,
    pub messages: usize,
}

impl App {
    /// `/export`: asks for the newest page of the current session.
    pub(super) fn export(
        &mut self,
        format: ExportFormat,
        path: Option<String>,
    ) -> Vec<ClientFrame> {
        let Some(session) = self.current_session_id().cloned() else {
            self.push(Entry::error(
                "Not connected to a session yet: nothing to export.",
            ));
            return Vec::new();
        };
        if self.exporting.is_some() {
            self.push(Entry::info("An export is already on its way."));
            return Vec::new();
        }
        let path = PathBuf::from(
            path.unwrap_or_else(|| format!("oxydra-{}.{}", session.as_str(), format.extension())),
        );
        self.exporting = Some(Exporting {
            format,
            path,
            session: session.clone(),
            pages: Vec::new(),
        });
        vec![ClientFrame::GetHistory {
            session_id: session,
            before: None,
            limit: EXPORT_PAGE,
        }]
    }

    /// A history page while exporting: kept, and the next one asked for until the first
    /// message is in. `None` when no export is waiting for this session's pages.
    pub(super) fn export_page(
        &mut self,
        session: &SessionId,
        events: &[HistoryEvent],
        next_before: Option<u64>,
    ) -> Option<Vec<ClientFrame>> {
        let exporting = self.exporting.as_mut().filter(|e| e.session == *session)?;
        exporting.pages.push(events.to_vec());
        if let Some(before) = next_before {
            return Some(vec![ClientFrame::GetHistory {
                session_id: session.clone(),
                before: Some(before),
                limit: EXPORT_PAGE,
            }]);
        }
        let done = self.exporting.take()?;
        let events: Vec<HistoryEvent> = done.pages.into_iter().rev().flatten().collect();
        let title = self.session.as_ref().and_then(|s| s.title.clone());
        let transcript = types::export::Transcript {
            session_id: &done.session,
            title: title.as_deref(),
            events: &events,
        };
        self.export_file = Some(ExportFile {
            path: done.path,
            text: types::export_conversation(done.format, &transcript),
            messages: events.len(),
        });
        Some(Vec::new())
    }

    /// The file an export is ready to write (for the app loop), at most once.
    pub fn take_export(&mut self) -> Option<ExportFile> {
        self.export_file.take()
    }

    /// How writing the export ended.
    pub fn exported(&mut self, file: &ExportFile, result: Result<(), String>) {
        let shown = file.path.display();
        self.push(match result {
            Ok(()) => Entry::info(format!("Exported {} messages to {shown}.", file.messages)),
            Err(why) => Entry::error(format!("Not exported to {shown}: {why}")),
        });
    }
}
