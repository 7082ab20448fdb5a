//! Example capture frames for the protocol schema (see `schema`).

use types::{
    CaptureReport, CapturedChange, ClientFrame, ConversationHitView, NearbyTurnView, PendingMemory,
    ServerFrame,
};

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
        note_text: full.then(|| "The user lives in Lisbon".to_owned()),
        session_id: "s-0b1c".into(),
        created_at: "2026-11-28T09:02:03.000Z".into(),
        untrusted: full.then(|| "web".to_owned()),
    }
}

fn hit(full: bool) -> ConversationHitView {
    ConversationHitView {
        session_id: "s-0b1c".into(),
        title: full.then(|| "Weekend plans".to_owned()),
        seq: 12,
        speaker: "user".into(),
        text: "We adopted a dog last week, we named him Biscuit".into(),
        date: "2026-11-21T18:04:00.000Z".into(),
        context: if full {
            vec![NearbyTurnView {
                speaker: "assistant".into(),
                text: "What a lovely name.".into(),
            }]
        } else {
            Vec::new()
        },
    }
}

pub(crate) fn client_examples() -> Vec<(ClientFrame, ClientFrame)> {
    vec![
        both(ClientFrame::ListPendingMemories),
        both(ClientFrame::AcceptMemory { id: 7 }),
        both(ClientFrame::RejectMemory { id: 7 }),
        both(ClientFrame::SearchConversations {
            query: "dog's name".into(),
            limit: 10,
        }),
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
        (
            ServerFrame::ConversationResults {
                query: "dog's name last week".into(),
                hits: vec![hit(true)],
                time: Some(crate::schema_notes::time_read()),
            },
            ServerFrame::ConversationResults {
                query: "dog's name".into(),
                hits: vec![hit(false)],
                time: None,
            },
        ),
    ]
}
