//! The user's notes over the gateway: `list_notes`, `search_notes`, `get_note`, `edit_note`,
//! `delete_note` against real libSQL files, through real WebSocket connections. A user reaches
//! only their own notes; bad requests are refused with what to fix and change nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly"
)]

use std::path::Path;
use std::sync::Arc;

use crate::common;

use common::{Client, code, provider, start, test_config, user_agent_without_memory};
use gateway::{Gateway, RunningGateway};
use memory::{Category, NoteMetadata};
use test_support::ScriptedLlm;
use types::{ClientFrame, ErrorCode, NoteRequest, NoteView, ServerFrame, UserId};

/// Saves `notes` (text, category) for `user` through a second connection to their database, as
/// the CLI or an earlier run of the agent would have; returns their ids.
pub(crate) async fn seed(
    root: &Path,
    user: &str,
    notes: &[(&str, Option<Category>)],
) -> Vec<String> {
    let store = common::open_store(root, user).await;
    let id = UserId::parse(user).unwrap();
    let mut ids = Vec::new();
    for (text, category) in notes {
        let metadata = NoteMetadata {
            category: *category,
            ..NoteMetadata::default()
        };
        ids.push(
            store
                .save(&id, None, text, metadata, memory::Similar::Unchecked)
                .await
                .and_then(memory::Saved::into_note)
                .unwrap()
                .note_id
                .to_string(),
        );
    }
    ids
}

pub(crate) async fn ask(client: &mut Client, frame: ClientFrame) -> ServerFrame {
    client.send(&frame).await;
    client.recv().await
}

fn list(limit: u32) -> ClientFrame {
    ClientFrame::Note(NoteRequest::ListNotes {
        category: None,
        cursor: None,
        limit,
    })
}

fn texts(notes: &[NoteView]) -> Vec<&str> {
    notes.iter().map(|n| n.text.as_str()).collect()
}

pub(crate) async fn listed(client: &mut Client) -> Vec<String> {
    match ask(client, list(200)).await {
        ServerFrame::NoteList { notes, .. } => notes.into_iter().map(|n| n.text).collect(),
        other => panic!("{other:?}"),
    }
}

async fn get(client: &mut Client, note_id: &str) -> ServerFrame {
    ask(
        client,
        ClientFrame::Note(NoteRequest::GetNote {
            note_id: note_id.into(),
        }),
    )
    .await
}

pub(crate) async fn gateway(root: &Path, server: &ScriptedLlm) -> RunningGateway {
    start(root, &["alice", "bob"], server, test_config()).await
}

#[tokio::test]
async fn a_user_lists_searches_reads_edits_and_deletes_their_notes() {
    let dir = tempfile::tempdir().unwrap();
    let ids = seed(
        dir.path(),
        "alice",
        &[
            ("Loves the trams in Lisbon", Some(Category::Preference)),
            ("Works on the Oxydra gateway", Some(Category::Fact)),
            ("Drinks tea, never coffee", Some(Category::Preference)),
        ],
    )
    .await;
    let server = ScriptedLlm::start().await;
    let gw = gateway(dir.path(), &server).await;
    let (mut a, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;

    // Newest first, paged by cursor.
    let (first, cursor) = match ask(&mut a, list(2)).await {
        ServerFrame::NoteList {
            notes,
            total,
            next_cursor,
        } => {
            assert_eq!(total, 3);
            (notes, next_cursor.expect("a second page"))
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(
        texts(&first),
        ["Drinks tea, never coffee", "Works on the Oxydra gateway"]
    );
    match ask(
        &mut a,
        ClientFrame::Note(NoteRequest::ListNotes {
            category: None,
            cursor: Some(cursor),
            limit: 2,
        }),
    )
    .await
    {
        ServerFrame::NoteList {
            notes, next_cursor, ..
        } => {
            assert_eq!(texts(&notes), ["Loves the trams in Lisbon"]);
            assert_eq!(next_cursor, None);
        }
        other => panic!("{other:?}"),
    }
    // One category.
    match ask(
        &mut a,
        ClientFrame::Note(NoteRequest::ListNotes {
            category: Some("fact".into()),
            cursor: None,
            limit: 10,
        }),
    )
    .await
    {
        ServerFrame::NoteList { notes, total, .. } => {
            assert_eq!(total, 1);
            assert_eq!(notes[0].category.as_deref(), Some("fact"));
            assert_eq!(texts(&notes), ["Works on the Oxydra gateway"]);
        }
        other => panic!("{other:?}"),
    }

    // Search answers whole notes with their version.
    let lisbon = match ask(
        &mut a,
        ClientFrame::Note(NoteRequest::SearchNotes {
            query: "trams Lisbon".into(),
            limit: 5,
        }),
    )
    .await
    {
        ServerFrame::NoteResults { query, notes, .. } => {
            assert_eq!(query, "trams Lisbon");
            assert_eq!(notes[0].note_id, ids[0], "{notes:?}");
            notes[0].clone()
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(lisbon.text, "Loves the trams in Lisbon");
    assert_eq!(
        get(&mut a, &ids[0]).await,
        ServerFrame::Note {
            note: lisbon.clone()
        }
    );

    // Edit at the version shown: same id and category, new text and version.
    let edited = match ask(
        &mut a,
        ClientFrame::Note(NoteRequest::EditNote {
            note_id: ids[0].clone(),
            content: "Loves the trams in Lisbon and Porto".into(),
            edit_token: lisbon.edit_token.clone(),
        }),
    )
    .await
    {
        ServerFrame::NoteEdited { note } => note,
        other => panic!("{other:?}"),
    };
    assert_eq!(edited.note_id, ids[0]);
    assert_eq!(edited.text, "Loves the trams in Lisbon and Porto");
    assert_eq!(edited.category.as_deref(), Some("preference"));
    assert_eq!(edited.created_at, lisbon.created_at);
    assert_ne!(edited.edit_token, lisbon.edit_token);

    // An edit at the old version is refused and changes nothing.
    let stale = ask(
        &mut a,
        ClientFrame::Note(NoteRequest::EditNote {
            note_id: ids[0].clone(),
            content: "Hates trams".into(),
            edit_token: lisbon.edit_token.clone(),
        }),
    )
    .await;
    assert_eq!(code(&stale), ErrorCode::NoteChanged, "{stale:?}");
    assert_eq!(
        get(&mut a, &ids[0]).await,
        ServerFrame::Note {
            note: edited.clone()
        }
    );
    // Search sees the current text only.
    match ask(
        &mut a,
        ClientFrame::Note(NoteRequest::SearchNotes {
            query: "Porto".into(),
            limit: 5,
        }),
    )
    .await
    {
        ServerFrame::NoteResults { notes, .. } => assert_eq!(notes[0], edited),
        other => panic!("{other:?}"),
    }

    // Delete: gone from reads, lists and search.
    assert_eq!(
        ask(
            &mut a,
            ClientFrame::Note(NoteRequest::DeleteNote {
                note_id: ids[1].clone()
            })
        )
        .await,
        ServerFrame::NoteDeleted {
            note_id: ids[1].clone()
        }
    );
    assert_eq!(code(&get(&mut a, &ids[1]).await), ErrorCode::NoteNotFound);
    assert_eq!(
        listed(&mut a).await,
        [
            "Drinks tea, never coffee",
            "Loves the trams in Lisbon and Porto"
        ]
    );
    let again = ask(
        &mut a,
        ClientFrame::Note(NoteRequest::DeleteNote {
            note_id: ids[1].clone(),
        }),
    )
    .await;
    assert_eq!(code(&again), ErrorCode::NoteNotFound);
    match ask(
        &mut a,
        ClientFrame::Note(NoteRequest::SearchNotes {
            query: "Oxydra gateway".into(),
            limit: 5,
        }),
    )
    .await
    {
        ServerFrame::NoteResults { notes, .. } => {
            assert!(notes.iter().all(|n| n.note_id != ids[1]), "{notes:?}");
        }
        other => panic!("{other:?}"),
    }
    gw.shutdown().await;
}

#[tokio::test]
async fn another_users_notes_are_out_of_reach() {
    let dir = tempfile::tempdir().unwrap();
    let bobs = seed(dir.path(), "bob", &[("Bob's bank is in Zurich", None)]).await;
    seed(dir.path(), "alice", &[("Alice likes Lisbon", None)]).await;
    let server = ScriptedLlm::start().await;
    let gw = gateway(dir.path(), &server).await;
    let (mut a, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;

    assert_eq!(listed(&mut a).await, ["Alice likes Lisbon"]);
    match ask(
        &mut a,
        ClientFrame::Note(NoteRequest::SearchNotes {
            query: "Bob bank Zurich".into(),
            limit: 10,
        }),
    )
    .await
    {
        ServerFrame::NoteResults { notes, .. } => {
            assert!(notes.iter().all(|n| n.note_id != bobs[0]), "{notes:?}");
        }
        other => panic!("{other:?}"),
    }
    let version = memory::edit_token("Bob's bank is in Zurich");
    for frame in [
        ClientFrame::Note(NoteRequest::GetNote {
            note_id: bobs[0].clone(),
        }),
        ClientFrame::Note(NoteRequest::EditNote {
            note_id: bobs[0].clone(),
            content: "Bob's bank is in Paris".into(),
            edit_token: version,
        }),
        ClientFrame::Note(NoteRequest::DeleteNote {
            note_id: bobs[0].clone(),
        }),
    ] {
        let answer = ask(&mut a, frame.clone()).await;
        assert_eq!(code(&answer), ErrorCode::NoteNotFound, "{frame:?}");
    }
    let (mut b, _) = Client::hello(&gw, dir.path(), "bob", None, None).await;
    assert_eq!(listed(&mut b).await, ["Bob's bank is in Zurich"]);
    gw.shutdown().await;
}

/// Each bad request gets `invalid_request` naming its frame, and the notes stay as they were.
#[tokio::test]
async fn bad_note_requests_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ids = seed(dir.path(), "alice", &[("Alice likes Lisbon", None)]).await;
    let server = ScriptedLlm::start().await;
    let gw = gateway(dir.path(), &server).await;
    let (mut a, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    let id = ids[0].clone();
    let version = memory::edit_token("Alice likes Lisbon");
    let edit = |content: &str, version: &str| {
        ClientFrame::Note(NoteRequest::EditNote {
            note_id: id.clone(),
            content: content.into(),
            edit_token: version.into(),
        })
    };
    let cases: Vec<(ClientFrame, &str)> = vec![
        (list(0), "limit must be between 1 and 200"),
        (list(201), "limit must be between 1 and 200"),
        (
            ClientFrame::Note(NoteRequest::ListNotes {
                category: Some("gossip".into()),
                cursor: None,
                limit: 5,
            }),
            "unknown category",
        ),
        (
            ClientFrame::Note(NoteRequest::ListNotes {
                category: None,
                cursor: Some("x~y".into()),
                limit: 5,
            }),
            "cursor",
        ),
        (
            ClientFrame::Note(NoteRequest::SearchNotes {
                query: "  ".into(),
                limit: 5,
            }),
            "the search is empty",
        ),
        (
            ClientFrame::Note(NoteRequest::SearchNotes {
                query: "word ".repeat(300),
                limit: 5,
            }),
            "the search is too long",
        ),
        (
            ClientFrame::Note(NoteRequest::GetNote {
                note_id: "../../etc/passwd".into(),
            }),
            "note_id must look like note-<uuid>",
        ),
        (
            ClientFrame::Note(NoteRequest::DeleteNote {
                note_id: "note-1".into(),
            }),
            "note_id must look like note-<uuid>",
        ),
        (edit("   ", &version), "the note is empty"),
        (edit(&"x".repeat(9000), &version), "too long"),
        (
            edit("my key is sk-abcdefghijklmnopqrstuvwx", &version),
            "secret",
        ),
        (edit("Alice likes Porto", " "), "version is empty"),
    ];
    for (frame, expected) in cases {
        let kind = serde_json::to_value(&frame).unwrap()["type"].clone();
        match ask(&mut a, frame).await {
            ServerFrame::Error {
                code,
                message,
                reference,
            } => {
                assert_eq!(code, ErrorCode::InvalidRequest, "{message}");
                assert!(message.contains(expected), "{message}");
                assert_eq!(reference.as_deref(), kind.as_str());
                assert!(!message.contains('/'), "no paths: {message}");
            }
            other => panic!("{other:?}"),
        }
    }
    match get(&mut a, &ids[0]).await {
        ServerFrame::Note { note } => {
            assert_eq!(note.text, "Alice likes Lisbon");
            assert_eq!(note.edit_token, version);
        }
        other => panic!("{other:?}"),
    }
    gw.shutdown().await;
}

#[tokio::test]
async fn without_memory_note_frames_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    let mut gw = Gateway::new(test_config());
    gw.add_user(user_agent_without_memory(
        dir.path(),
        "alice",
        provider(&server),
    ))
    .unwrap();
    let gw = gw.start().await.unwrap();
    let (mut a, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    let id = "note-00000000-0000-4000-8000-000000000000";
    let lifecycle = [
        ClientFrame::Note(NoteRequest::NoteHistory { note_id: id.into() }),
        ClientFrame::Note(NoteRequest::ListDeletedNotes),
        ClientFrame::Note(NoteRequest::RestoreNote {
            note_id: id.into(),
            version: None,
        }),
        ClientFrame::Note(NoteRequest::ConfirmNote { note_id: id.into() }),
    ];
    for frame in [list(10)].into_iter().chain(lifecycle) {
        let answer = ask(&mut a, frame).await;
        assert_eq!(code(&answer), ErrorCode::MemoryDisabled, "{answer:?}");
    }
    // The connection stays up.
    assert_eq!(ask(&mut a, ClientFrame::Ping).await, ServerFrame::Pong);
    gw.shutdown().await;
}

/// `alice`'s agent with `governance` over her store (audited there), composed as `oxydra-vm`
/// does it with a `[governance]` section.
pub(crate) async fn governed_gateway(
    root: &Path,
    server: &ScriptedLlm,
    config: types::GovernanceConfig,
) -> (RunningGateway, memory::MemoryStore) {
    governed_gateway_with(root, server, config, None).await
}

/// [`governed_gateway`], counting in `metrics` (served at `GET /metrics`) when given.
pub(crate) async fn governed_gateway_with(
    root: &Path,
    server: &ScriptedLlm,
    config: types::GovernanceConfig,
    metrics: Option<Arc<tools::MemoryMetrics>>,
) -> (RunningGateway, memory::MemoryStore) {
    let ws = types::WorkspacePaths::new(root.join("alice"));
    for dir in types::WorkspaceDir::ALL {
        std::fs::create_dir_all(ws.dir(dir)).unwrap();
    }
    let token = gateway::GatewayToken::load_or_create(&ws.internal()).unwrap();
    let store = common::open_store(root, "alice").await;
    let retrieval = types::RetrievalConfig::default();
    let mut governance = tools::Governance::new(config).with_audit(Arc::new(store.clone()));
    if let Some(metrics) = &metrics {
        governance = governance.with_metrics(Arc::clone(metrics));
    }
    let mut registry = tools::ToolRegistry::default().with_governance(Arc::new(governance));
    let builtin = tools::ToolSet::new(Some(Arc::new(store.clone()))).retrieval(&retrieval);
    for tool in builtin
        .builtin(types::MemoryDialect::Notes)
        .tools()
        .unwrap()
    {
        registry.register(tool).unwrap();
    }
    let runtime = runtime::AgentRuntime::new(
        provider(server),
        Arc::new(registry),
        types::RuntimeConfig::default(),
        common::limits(),
    )
    .with_memory(store.clone());
    let mut gw = Gateway::new(test_config());
    let mut agent = gateway::UserAgent::new(UserId::parse("alice").unwrap(), token, ws, runtime);
    if let Some(metrics) = metrics {
        agent = agent.with_metrics(move || metrics.render());
    }
    gw.add_user(agent).unwrap();
    (gw.start().await.unwrap(), store)
}

/// Edits and deletes pass the memory pipeline as the `gateway` surface: its policy applies and
/// each write leaves an audit row naming the surface.
#[tokio::test]
async fn edits_pass_the_memory_pipeline_as_the_gateway_surface() {
    let dir = tempfile::tempdir().unwrap();
    let ids = seed(dir.path(), "alice", &[("Alice likes Lisbon", None)]).await;
    let version = memory::edit_token("Alice likes Lisbon");
    let edit = |content: &str, version: &str| {
        ClientFrame::Note(NoteRequest::EditNote {
            note_id: ids[0].clone(),
            content: content.into(),
            edit_token: version.into(),
        })
    };
    let server = ScriptedLlm::start().await;

    // A read-only gateway surface refuses both writes and changes nothing.
    let mut config = types::GovernanceConfig::default();
    config.surfaces.gateway.read_only = Some(true);
    let (gw, _) = governed_gateway(dir.path(), &server, config).await;
    let (mut a, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    for frame in [
        edit("Alice likes Porto", &version),
        ClientFrame::Note(NoteRequest::DeleteNote {
            note_id: ids[0].clone(),
        }),
    ] {
        let answer = ask(&mut a, frame).await;
        assert_eq!(code(&answer), ErrorCode::NotAllowed, "{answer:?}");
    }
    assert_eq!(listed(&mut a).await, ["Alice likes Lisbon"]);
    drop(a);
    gw.shutdown().await;

    // The default policy: a secret is refused; a plain edit is made and audited as `gateway`.
    let (gw, store) =
        governed_gateway(dir.path(), &server, types::GovernanceConfig::default()).await;
    let (mut a, _) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    let secret = ask(
        &mut a,
        edit("my key is sk-abcdefghijklmnopqrstuvwx", &version),
    )
    .await;
    match &secret {
        ServerFrame::Error { code, message, .. } => {
            assert_eq!(*code, ErrorCode::InvalidRequest);
            assert!(message.contains("secret"), "{message}");
            assert!(!message.contains("sk-abc"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(listed(&mut a).await, ["Alice likes Lisbon"]);
    match ask(&mut a, edit("Alice likes Porto", &version)).await {
        ServerFrame::NoteEdited { note } => assert_eq!(note.text, "Alice likes Porto"),
        other => panic!("{other:?}"),
    }
    let rows = store.audit().audit_log(None, 100).await.unwrap();
    let edit_row = rows
        .iter()
        .find(|r| r.tool == "memory_update" && r.outcome == "ok")
        .unwrap_or_else(|| panic!("{rows:?}"));
    assert_eq!(edit_row.surface, "gateway");
    assert_eq!(edit_row.note_id.as_deref(), Some(ids[0].as_str()));
    gw.shutdown().await;
}
