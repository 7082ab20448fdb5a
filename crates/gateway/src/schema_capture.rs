//! Example capture frames for the protocol schema (see `schema`).

use types::{CaptureReport, CapturedChange, ClientFrame, PendingMemory, ServerFrame};

use crate::schema::both;

const NOTE: &str = "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f";

fn change() -> CapturedChange {
    CapturedChange {
        action: "added".into(),
        note_id: NOTE.into(),
        text: "The user's sister Ana is a doctor".into(),
        confirmed: true,
    }
}

fn pending(full: bool) -> PendingMemory {
    PendingMemory {
        id: 7,
        action: if full { "update" } else { "delete" }.into(),
        note_id: Some(NOTE.into()),
        content: full.then(|| "The user lives in Porto".to_owned()),
        session_id: "s-0b1c".into(),
        created_at: "2026-11-28T09:02:03.000Z".into(),
    }
}

pub(crate) fn client_examples() -> Vec<(ClientFrame, ClientFrame)> {
    vec![
        both(ClientFrame::ListPendingMemories),
        both(ClientFrame::AcceptMemory { id: 7 }),
        both(ClientFrame::RejectMemory { id: 7 }),
    ]
}

pub(crate) fn server_examples() -> Vec<(ServerFrame, ServerFrame)> {
    let report = |full: bool| CaptureReport {
        session_id: "s-0b1c".into(),
        turn_id: "t-2".into(),
        changes: if full { vec![change()] } else { Vec::new() },
        pending: if full {
            vec![pending(true)]
        } else {
            Vec::new()
        },
    };
    vec![
        (
            ServerFrame::MemoryCaptured {
                report: report(true),
            },
            ServerFrame::MemoryCaptured {
                report: report(false),
            },
        ),
        (
            ServerFrame::PendingMemories {
                memories: vec![pending(true)],
            },
            ServerFrame::PendingMemories {
                memories: vec![pending(false)],
            },
        ),
        (
            ServerFrame::MemoryAccepted {
                id: 7,
                change: Some(change()),
            },
            ServerFrame::MemoryAccepted {
                id: 7,
                change: None,
            },
        ),
        both(ServerFrame::MemoryRejected { id: 7 }),
    ]
}
