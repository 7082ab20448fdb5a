//! Remote mode against a real `sqld` on loopback: what each misconfiguration says at open (one
//! clear line, no panic, no local file), and that a working server stores and finds notes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::sync::Arc;

use common::user;
use memory::{HashEmbedder, MemoryError, MemoryStore, RemoteProblem};
use test_support::{Need, Sqld, need};
use types::{EmbeddingBackend, EmbeddingConfig, MemoryConfig};

fn embedder() -> Arc<HashEmbedder> {
    Arc::new(HashEmbedder::new(common::DIMS))
}

async fn open_err(url: &str, token: &str) -> MemoryError {
    match MemoryStore::open(
        memory::Target::Remote { url, token },
        memory::OpenOptions::with_embedder(embedder()),
    )
    .await
    {
        Ok(_) => panic!("{url} opened"),
        Err(e) => e,
    }
}

fn problem(err: &MemoryError) -> Option<RemoteProblem> {
    match err {
        MemoryError::Remote { problem, .. } => Some(*problem),
        _ => None,
    }
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn a_remote_store_keeps_notes_across_reopen() {
    need(Need::Sqld);
    let server = Sqld::start_with_auth();
    let token = server.token(r#"{"a":"rw"}"#);
    let store = MemoryStore::open(
        memory::Target::Remote {
            url: &server.url(),
            token: &token,
        },
        memory::OpenOptions::with_embedder(embedder()),
    )
    .await
    .unwrap();
    let note = common::save_note(&store, &user("alice"), "the boiler code is 4417").await;
    drop(store);
    let again = MemoryStore::open(
        memory::Target::Remote {
            url: &server.url(),
            token: &token,
        },
        memory::OpenOptions::with_embedder(embedder()),
    )
    .await
    .unwrap();
    let notes = again.list_notes(&user("alice")).await.unwrap();
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].note_id, note.note_id);
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn each_misconfiguration_is_one_clear_line_at_open() {
    need(Need::Sqld);
    let server = Sqld::start_with_auth();
    let cases = [
        (
            "no token",
            open_err(&server.url(), "").await,
            RemoteProblem::Unauthorized,
        ),
        (
            "garbage token",
            open_err(&server.url(), "not-a-jwt").await,
            RemoteProblem::Unauthorized,
        ),
        (
            "expired token",
            open_err(&server.url(), &server.token(r#"{"a":"rw","exp":1}"#)).await,
            RemoteProblem::Unauthorized,
        ),
        (
            "another server's token",
            open_err(&server.url(), &server.foreign_token()).await,
            RemoteProblem::Unauthorized,
        ),
        (
            "read-only token",
            open_err(&server.url(), &server.token(r#"{"a":"ro"}"#)).await,
            RemoteProblem::ReadOnly,
        ),
    ];
    let stopped = {
        let gone = Sqld::start();
        gone.url()
    };
    let unreachable = open_err(&stopped, "").await;
    for (what, err, expected) in
        cases
            .into_iter()
            .chain([("stopped server", unreachable, RemoteProblem::Unreachable)])
    {
        let text = err.to_string();
        assert_eq!(problem(&err), Some(expected), "{what}: {text}");
        assert!(!text.contains('\n'), "{what}: one line: {text}");
    }
}

#[tokio::test]
async fn a_bad_url_fails_before_anything_connects() {
    let root = tempfile::tempdir().unwrap();
    for url in ["db.example.org", "ftp://db.example.org", "http://"] {
        let config = MemoryConfig {
            remote_url: Some(url.into()),
            embedding: EmbeddingConfig {
                backend: EmbeddingBackend::Hash,
                dimensions: Some(common::DIMS),
                ..EmbeddingConfig::default()
            },
            ..MemoryConfig::default()
        };
        let err = MemoryStore::open(
            memory::Target::Config {
                config: &config,
                user_root: root.path(),
            },
            memory::OpenOptions::default(),
        )
        .await
        .unwrap_err();
        assert_eq!(problem(&err), Some(RemoteProblem::BadUrl), "{url}: {err}");
    }
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        0,
        "no local file is created in remote mode"
    );
}
