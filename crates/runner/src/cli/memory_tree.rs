//! `runner memory export-tree DIR` and `import-tree DIR`: the user's `/memories` tree (the files
//! dialect's files, which are notes with a path) as real files in a directory of the operator's,
//! and back.
//!
//! Both run as root on a directory the CLI opened with [`runner::open_operator_dir`] (which
//! refuses one the user's shell can write unless the operator insists), and go on from there one
//! name at a time through [`SafeDir`]: nothing below the target is ever resolved as a path again,
//! so a link planted or flipped there while the command runs is never followed.
//!
//! Export writes into an empty or new directory, each directory made with `mkdirat` and opened
//! `O_NOFOLLOW`, each file created `O_EXCL | O_NOFOLLOW` (never through an existing file or
//! link). Import reads each name through the descriptor it opened `O_NOFOLLOW` and whose type it
//! checked with `fstat` (links, FIFOs, devices and hard-linked files are skipped unread), checks
//! each path as the `memory` tool does ([`read_tree`]), and writes each file in one transaction
//! with its audit row ([`write_tree`]): a new file is created, an existing one replaced. Between
//! the two the CLI governs the import (`crate::memory_governed`).

use std::io::{Read, Write};
use std::path::{Component, Path};

use anyhow::{Context, Result, bail};
use memory::{MEMORIES_ROOT, MemoryStore, PathExpect, PathPut};
use runner::{Entry, SafeDir};
use types::{AuditTag, UserId};

/// Largest file import reads (a larger one is an error, not a truncated note).
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Writes every file of `user`'s tree below `dir` (opened, and empty). Returns how many were
/// written.
pub async fn export(store: &MemoryStore, user: &UserId, dir: &SafeDir) -> Result<usize> {
    let entries = store.files().file_tree(user, MEMORIES_ROOT).await?;
    let mut written = 0;
    for entry in entries {
        let Some(file) = store.files().read_file(user, &entry.path).await? else {
            continue; // deleted meanwhile
        };
        let rel = Path::new(
            entry
                .path
                .trim_start_matches(MEMORIES_ROOT)
                .trim_start_matches('/'),
        );
        let names: Option<Vec<&str>> = rel
            .components()
            .map(|c| match c {
                Component::Normal(n) => n.to_str(),
                _ => None,
            })
            .collect();
        let Some((name, parents)) = names.as_deref().and_then(<[&str]>::split_last) else {
            bail!("stored path {:?} is not a plain relative path", entry.path);
        };
        let mut parent = None;
        for part in parents {
            let here: &SafeDir = parent.as_ref().unwrap_or(dir);
            parent = Some(here.subdir(part, Some(0o700))?);
        }
        let here = parent.as_ref().unwrap_or(dir);
        let mut f = here.create_new(name, 0o600)?;
        f.write_all(file.content.as_bytes())
            .with_context(|| format!("cannot write {}", here.path().join(name).display()))?;
        written += 1;
    }
    Ok(written)
}

/// The regular files below `dir` as `(path in the tree, text)`, each path checked as the
/// `memory` tool checks a new file's (no hidden or look-alike names). Nothing is written.
pub fn read_tree(dir: &SafeDir) -> Result<Vec<(String, String)>> {
    let mut files = Vec::new();
    collect(dir, "", &mut files)?;
    Ok(files)
}

/// What an imported file records as its provenance: an import, outside any conversation.
fn imported() -> Option<memory::Provenance> {
    Some(memory::Provenance::outside_turn(memory::Origin::Import))
}

/// Writes `files` (from [`read_tree`]) into `user`'s tree, each in one transaction that also
/// records its audit row when `audit` is given. Returns how many were written.
pub async fn write_tree(
    store: &MemoryStore,
    user: &UserId,
    files: &[(String, String)],
    audit: Option<&AuditTag>,
) -> Result<usize> {
    let mut written = 0;
    for (path, text) in files {
        let put = match store
            .files()
            .put_file(user, path, text, PathExpect::Absent, audit, imported())
            .await?
        {
            PathPut::Exists => {
                store
                    .files()
                    .put_file(user, path, text, PathExpect::Present, audit, imported())
                    .await?
            }
            other => other,
        };
        match put {
            PathPut::Written(_) => written += 1,
            PathPut::UnderFile(file) => bail!("{path}: {file} is a file, not a directory"),
            other => bail!("{path} could not be written ({other:?})"),
        }
    }
    Ok(written)
}

fn collect(dir: &SafeDir, prefix: &str, out: &mut Vec<(String, String)>) -> Result<()> {
    for name in dir.names()? {
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        match dir.open_entry(&name)? {
            Entry::Dir(sub) => collect(&sub, &rel, out)?,
            Entry::File(file) => {
                let shown = dir.path().join(&name);
                let raw = format!("{MEMORIES_ROOT}/{rel}");
                let path =
                    tools::canonical_new_memory_path(&raw).map_err(|e| anyhow::anyhow!("{e}"))?;
                let mut bytes = Vec::new();
                file.take(MAX_FILE_BYTES + 1)
                    .read_to_end(&mut bytes)
                    .with_context(|| format!("cannot read {}", shown.display()))?;
                if bytes.len() as u64 > MAX_FILE_BYTES {
                    bail!("{} is larger than 16 MiB", shown.display());
                }
                let text = String::from_utf8(bytes)
                    .with_context(|| format!("{} is not a UTF-8 text file", shown.display()))?;
                out.push((path, text));
            }
            Entry::Skipped(why) => {
                tracing::warn!(path = %dir.path().join(&name).display(), why, "skipped");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "memory_tree_tests.rs"]
mod race_tests;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use memory::HashEmbedder;

    use super::*;

    #[tokio::test]
    async fn a_tree_survives_export_and_import() {
        let dir = tempfile::tempdir().unwrap();
        let embedder = || Arc::new(HashEmbedder::new(64));
        let from = MemoryStore::open(
            memory::Target::File(&dir.path().join("a/memory.db")),
            memory::OpenOptions::with_embedder(embedder()),
        )
        .await
        .unwrap();
        let to = MemoryStore::open(
            memory::Target::File(&dir.path().join("b/memory.db")),
            memory::OpenOptions::with_embedder(embedder()),
        )
        .await
        .unwrap();
        let user = UserId::parse("alice").unwrap();
        for (path, text) in [
            ("/memories/notes.md", "one\ntwo\n"),
            ("/memories/projects/x/plan.md", "the plan"),
        ] {
            from.files()
                .put_file(&user, path, text, PathExpect::Absent, None, None)
                .await
                .unwrap();
        }
        let out = dir.path().join("tree");
        let policy = runner::TargetPolicy::default();
        let open = |want| runner::open_operator_dir(&out, want, &policy);
        assert_eq!(
            export(&from, &user, &open(runner::Want::NewOrEmpty).unwrap())
                .await
                .unwrap(),
            2
        );
        assert_eq!(
            std::fs::read_to_string(out.join("projects/x/plan.md")).unwrap(),
            "the plan"
        );
        // A link in the tree is skipped, never followed.
        std::os::unix::fs::symlink("/etc/passwd", out.join("passwd")).unwrap();
        assert!(
            open(runner::Want::NewOrEmpty).is_err(),
            "refuses a non-empty directory"
        );
        let import = async |to: &MemoryStore| {
            let files = read_tree(&open(runner::Want::Existing).unwrap()).unwrap();
            write_tree(to, &user, &files, None).await.unwrap()
        };
        assert_eq!(import(&to).await, 2);
        let files = |s: &MemoryStore| {
            let (s, user) = (s.clone(), user.clone());
            async move {
                let mut all = Vec::new();
                for e in s.files().file_tree(&user, MEMORIES_ROOT).await.unwrap() {
                    all.push(
                        s.files()
                            .read_file(&user, &e.path)
                            .await
                            .unwrap()
                            .unwrap()
                            .content,
                    );
                }
                all
            }
        };
        assert_eq!(files(&from).await, files(&to).await);
        // Importing again replaces, never duplicates.
        assert_eq!(import(&to).await, 2);
        assert_eq!(
            to.files()
                .file_tree(&user, MEMORIES_ROOT)
                .await
                .unwrap()
                .len(),
            2
        );
    }
}
