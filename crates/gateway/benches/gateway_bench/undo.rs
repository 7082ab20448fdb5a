//! `gateway-bench -- undo [--notes N] [--rounds R]`: what an undo from the TUI costs end to end
//! on loopback, sending the frames the TUI sends: `edit_note` back to the old text (an edit made
//! in `/memory`), `delete_note` (a note the agent saved), `restore_note` (a note the agent
//! deleted), and `note_history` then `restore_note` to the version before (a note the agent
//! updated: two round trips). The user's store holds N notes (default 10,000); each kind is
//! measured R times (default 300) from sending the first frame to receiving the last answer,
//! over a real WebSocket to a real gateway and libSQL file.

use std::sync::Arc;
use std::time::Instant;

use anyhow::bail;
use gateway::{Gateway, GatewayConfig, GatewayToken, UserAgent};
use memory::{HashEmbedder, MemoryStore, NoteMetadata};
use types::{ClientFrame, NoteRequest, ServerFrame, UserId, WorkspacePaths};

use super::{InstantProvider, compose, connect, percentiles, recv, send};

pub(crate) async fn run(notes: usize, rounds: usize) -> anyhow::Result<String> {
    let dir = tempfile::tempdir()?;
    let user = UserId::parse("bench")?;
    let paths = WorkspacePaths::for_user(dir.path(), &user);
    let store = MemoryStore::open(
        memory::Target::File(&paths.default_memory_db()),
        memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(256))),
    )
    .await?;
    for i in 0..notes {
        store
            .save(
                &user,
                None,
                &format!("background note {i}: likes tea variety {}", i % 97),
                NoteMetadata::default(),
                memory::Similar::Unchecked,
            )
            .await
            .and_then(memory::Saved::into_note)?;
    }
    let mut saved = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let note = store
            .save(
                &user,
                None,
                &format!("saved by the agent {i}"),
                NoteMetadata::default(),
                memory::Similar::Unchecked,
            )
            .await
            .and_then(memory::Saved::into_note)?;
        saved.push(note.note_id.to_string());
    }
    let edited = store
        .save(
            &user,
            None,
            "Drinks green tea",
            NoteMetadata::default(),
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)?;
    // What the agent deleted and updated, to take back.
    let mut deleted = Vec::with_capacity(rounds);
    let mut updated = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let gone = store
            .save(
                &user,
                None,
                &format!("deleted by the agent {i}"),
                NoteMetadata::default(),
                memory::Similar::Unchecked,
            )
            .await
            .and_then(memory::Saved::into_note)?;
        store.delete(&user, None, &gone.note_id).await.map(|_| ())?;
        deleted.push(gone.note_id.to_string());
        let changed = store
            .save(
                &user,
                None,
                &format!("lives in Lisbon {i}"),
                NoteMetadata::default(),
                memory::Similar::Unchecked,
            )
            .await
            .and_then(memory::Saved::into_note)?;
        store
            .update(
                &user,
                None,
                &changed.note_id,
                &format!("lives in Porto {i}"),
                None,
                memory::MetadataPatch::default(),
            )
            .await
            .and_then(memory::Written::into_note)?;
        updated.push(changed.note_id.to_string());
    }
    let token = GatewayToken::load_or_create(&paths.internal())?;
    let agent = UserAgent::new(
        user.clone(),
        token.clone(),
        paths,
        compose(&store, Arc::new(InstantProvider))?,
    );
    let mut gw = Gateway::new(GatewayConfig::default());
    gw.add_user(agent)?;
    let gw = gw.start().await?;
    let (mut ws, _) = connect(&gw.url(), token.secret(), &user).await?;

    // Undo of an edit: put the other text back, at the version the last change made.
    let texts = ["Drinks green tea", "Drinks black tea"];
    let mut version = memory::edit_token(texts[0]);
    let mut edits = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let frame = ClientFrame::Note(NoteRequest::EditNote {
            note_id: edited.note_id.to_string(),
            content: texts[(i + 1) % 2].into(),
            edit_token: version.clone(),
        });
        let start = Instant::now();
        send(&mut ws, &frame).await?;
        match recv(&mut ws).await? {
            ServerFrame::NoteEdited { note } => version = note.edit_token,
            other => bail!("expected note_edited, got {other:?}"),
        }
        edits.push(start.elapsed());
    }
    // Undo of a save: delete the note.
    let mut deletes = Vec::with_capacity(rounds);
    for note_id in saved {
        let start = Instant::now();
        send(
            &mut ws,
            &ClientFrame::Note(NoteRequest::DeleteNote { note_id }),
        )
        .await?;
        match recv(&mut ws).await? {
            ServerFrame::NoteDeleted { .. } => {}
            other => bail!("expected note_deleted, got {other:?}"),
        }
        deletes.push(start.elapsed());
    }
    // Undo of the agent's delete: restore the tombstone.
    let mut restores = Vec::with_capacity(rounds);
    for note_id in deleted {
        let start = Instant::now();
        let frame = ClientFrame::Note(NoteRequest::RestoreNote {
            note_id,
            version: None,
        });
        send(&mut ws, &frame).await?;
        match recv(&mut ws).await? {
            ServerFrame::NoteRestored { .. } => {}
            other => bail!("expected note_restored, got {other:?}"),
        }
        restores.push(start.elapsed());
    }
    // Undo of the agent's update: the history, then the version before the current one.
    let mut reverts = Vec::with_capacity(rounds);
    for note_id in updated {
        let start = Instant::now();
        let history = ClientFrame::Note(NoteRequest::NoteHistory {
            note_id: note_id.clone(),
        });
        send(&mut ws, &history).await?;
        let version = match recv(&mut ws).await? {
            ServerFrame::NoteVersions { versions, .. } => {
                versions.last().map_or(1, |v| v.version.saturating_sub(1))
            }
            other => bail!("expected note_versions, got {other:?}"),
        };
        let frame = ClientFrame::Note(NoteRequest::RestoreNote {
            note_id,
            version: Some(version),
        });
        send(&mut ws, &frame).await?;
        match recv(&mut ws).await? {
            ServerFrame::NoteRestored { note } if note.text.starts_with("lives in Lisbon") => {}
            other => bail!("expected note_restored to the old text, got {other:?}"),
        }
        reverts.push(start.elapsed());
    }
    gw.shutdown().await;
    Ok(format!(
        "undo on loopback, {notes} notes in the store\n  undo an edit (edit_note → note_edited): {}\n  undo a save (delete_note → note_deleted): {}\n  undo the agent's delete (restore_note → note_restored): {}\n  undo the agent's update (note_history + restore_note): {}\n",
        percentiles(edits),
        percentiles(deletes),
        percentiles(restores),
        percentiles(reverts)
    ))
}
