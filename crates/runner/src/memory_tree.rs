//! `runner memory export-tree DIR` and `import-tree DIR`: the user's `/memories` tree (the files
//! dialect's files, which are notes with a path) as real files in a directory of the operator's,
//! and back.
//!
//! Export writes into an empty or new directory, each file created afresh (never through an
//! existing file or link). Import reads regular files only (links are skipped, never followed),
//! checks each path as the `memory` tool does ([`read_tree`]), and writes each file in one
//! transaction with its audit row ([`write_tree`]): a new file is created, an existing one
//! replaced. Between the two the CLI governs the import (`crate::memory_governed`).

use std::io::Write;
use std::path::{Component, Path};

use anyhow::{Context, Result, bail};
use memory::{MEMORIES_ROOT, MemoryStore, PathExpect, PathPut};
use types::{AuditTag, UserId};

/// Writes every file of `user`'s tree below `dir`. Returns how many were written.
pub async fn export(store: &MemoryStore, user: &UserId, dir: &Path) -> Result<usize> {
    if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
        bail!(
            "{} is not empty: export the tree into a new or empty directory",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let entries = store.file_tree(user, MEMORIES_ROOT).await?;
    let mut written = 0;
    for entry in entries {
        let Some(file) = store.read_file(user, &entry.path).await? else {
            continue; // deleted meanwhile
        };
        let rel = Path::new(
            entry
                .path
                .trim_start_matches(MEMORIES_ROOT)
                .trim_start_matches('/'),
        );
        if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            bail!("stored path {:?} is not a plain relative path", entry.path);
        }
        let target = dir.join(rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&target)
            .with_context(|| format!("cannot create {}", target.display()))?;
        f.write_all(file.content.as_bytes())?;
        written += 1;
    }
    Ok(written)
}

/// The regular files below `dir` as `(path in the tree, text)`, each path checked as the
/// `memory` tool checks it. Nothing is written.
pub fn read_tree(dir: &Path) -> Result<Vec<(String, String)>> {
    let mut files = Vec::new();
    collect(dir, "", &mut files)?;
    files
        .into_iter()
        .map(|(rel, host)| {
            let raw = format!("{MEMORIES_ROOT}/{rel}");
            let path = tools::canonical_memory_path(&raw).map_err(|e| anyhow::anyhow!("{e}"))?;
            let text = std::fs::read_to_string(&host)
                .with_context(|| format!("{} is not a UTF-8 text file", host.display()))?;
            Ok((path, text))
        })
        .collect()
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
            .put_file_as(user, path, text, PathExpect::Absent, audit, imported())
            .await?
        {
            PathPut::Exists => {
                store
                    .put_file_as(user, path, text, PathExpect::Present, audit, imported())
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

fn collect(dir: &Path, prefix: &str, out: &mut Vec<(String, std::path::PathBuf)>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            bail!("{}: names must be UTF-8", entry.path().display());
        };
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let kind = entry.file_type()?; // does not follow links
        if kind.is_dir() {
            collect(&entry.path(), &rel, out)?;
        } else if kind.is_file() {
            out.push((rel, entry.path()));
        } else {
            tracing::warn!(path = %entry.path().display(), "skipped: not a regular file");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use memory::HashEmbedder;

    use super::*;

    #[tokio::test]
    async fn a_tree_survives_export_and_import() {
        let dir = tempfile::tempdir().unwrap();
        let embedder = || Arc::new(HashEmbedder::new(64));
        let from = MemoryStore::open_local(&dir.path().join("a/memory.db"), embedder())
            .await
            .unwrap();
        let to = MemoryStore::open_local(&dir.path().join("b/memory.db"), embedder())
            .await
            .unwrap();
        let user = UserId::parse("alice").unwrap();
        for (path, text) in [
            ("/memories/notes.md", "one\ntwo\n"),
            ("/memories/projects/x/plan.md", "the plan"),
        ] {
            from.put_file(&user, path, text, PathExpect::Absent, None)
                .await
                .unwrap();
        }
        let out = dir.path().join("tree");
        assert_eq!(export(&from, &user, &out).await.unwrap(), 2);
        assert_eq!(
            std::fs::read_to_string(out.join("projects/x/plan.md")).unwrap(),
            "the plan"
        );
        // A link in the tree is skipped, never followed.
        std::os::unix::fs::symlink("/etc/passwd", out.join("passwd")).unwrap();
        assert!(
            export(&from, &user, &out).await.is_err(),
            "refuses a non-empty directory"
        );
        let import = async |to: &MemoryStore| {
            let files = read_tree(&out).unwrap();
            write_tree(to, &user, &files, None).await.unwrap()
        };
        assert_eq!(import(&to).await, 2);
        let files = |s: &MemoryStore| {
            let (s, user) = (s.clone(), user.clone());
            async move {
                let mut all = Vec::new();
                for e in s.file_tree(&user, MEMORIES_ROOT).await.unwrap() {
                    all.push(s.read_file(&user, &e.path).await.unwrap().unwrap().content);
                }
                all
            }
        };
        assert_eq!(files(&from).await, files(&to).await);
        // Importing again replaces, never duplicates.
        assert_eq!(import(&to).await, 2);
        assert_eq!(to.file_tree(&user, MEMORIES_ROOT).await.unwrap().len(), 2);
    }
}
