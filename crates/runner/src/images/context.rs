//! A build context: a root filesystem (`rootfs/`) and a `Dockerfile`, written as a deterministic
//! tar (sorted entries, mtime 0, owner 0:0, fixed modes) whose SHA-256 names its content.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};
use tar::{EntryType, Header};

use crate::RunnerError;

/// Mode of directories, executables and shared libraries.
pub(crate) const MODE_EXEC: u32 = 0o755;
/// Mode of plain files (`/etc/passwd`).
pub(crate) const MODE_FILE: u32 = 0o644;
/// Mode of `/tmp`: everyone writes, only the owner removes.
pub(crate) const MODE_TMP: u32 = 0o1777;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir {
        mode: u32,
    },
    /// A host file's content (symlinks followed), read when the tar is written.
    HostFile {
        source: PathBuf,
        mode: u32,
    },
    Bytes {
        bytes: Vec<u8>,
        mode: u32,
    },
    Symlink {
        target: String,
    },
}

/// The image's filesystem, keyed by path without the leading `/` (`usr/local/bin/oxydra-vm`).
/// Each entry's parent directories are added with mode 0755.
#[derive(Debug, Default)]
pub(crate) struct Rootfs {
    nodes: BTreeMap<String, Node>,
}

impl Rootfs {
    pub(crate) fn dir(&mut self, path: &str, mode: u32) -> Result<(), RunnerError> {
        self.insert(path, Node::Dir { mode })
    }

    /// The content of host file `source` (a symlink is followed) at `path`.
    pub(crate) fn host_file(&mut self, path: &str, source: &Path) -> Result<(), RunnerError> {
        let node = Node::HostFile {
            source: source.to_owned(),
            mode: MODE_EXEC,
        };
        self.insert(path, node)
    }

    pub(crate) fn bytes(&mut self, path: &str, bytes: &[u8], mode: u32) -> Result<(), RunnerError> {
        let node = Node::Bytes {
            bytes: bytes.to_vec(),
            mode,
        };
        self.insert(path, node)
    }

    pub(crate) fn symlink(&mut self, path: &str, target: &str) -> Result<(), RunnerError> {
        let node = Node::Symlink {
            target: target.to_owned(),
        };
        self.insert(path, node)
    }

    /// How many entries (directories included) it holds.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    fn insert(&mut self, path: &str, node: Node) -> Result<(), RunnerError> {
        let key = normalize(path)?;
        let mut parent = String::new();
        let components: Vec<&str> = key.split('/').collect();
        for part in &components[..components.len() - 1] {
            if !parent.is_empty() {
                parent.push('/');
            }
            parent.push_str(part);
            match self.nodes.get(&parent) {
                None => {
                    self.nodes
                        .insert(parent.clone(), Node::Dir { mode: MODE_EXEC });
                }
                Some(Node::Dir { .. }) => {}
                Some(_) => return Err(clash(&parent)),
            }
        }
        match (self.nodes.get(&key), &node) {
            (None, _) => {}
            (Some(old), new) if old == new => {}
            (Some(Node::Dir { .. }), Node::Dir { .. }) => {}
            _ => return Err(clash(&key)),
        }
        self.nodes.insert(key, node);
        Ok(())
    }
}

fn clash(path: &str) -> RunnerError {
    problem(path, "a guest image cannot hold two different entries here")
}

fn problem(path: &str, problem: &str) -> RunnerError {
    RunnerError::Config {
        path: PathBuf::from(format!("/{}", path.trim_start_matches('/'))),
        problem: problem.to_owned(),
    }
}

/// `/a/b` (or `a/b`) as `a/b`; `..`, `.` and empty paths are refused.
fn normalize(path: &str) -> Result<String, RunnerError> {
    let mut parts = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::RootDir => {}
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            _ => {
                return Err(problem(
                    path,
                    "not a plain absolute path inside a guest image",
                ));
            }
        }
    }
    if parts.is_empty() {
        return Err(problem(
            path,
            "not a plain absolute path inside a guest image",
        ));
    }
    Ok(parts.join("/"))
}

/// A build context ready to send: the tar and the hex SHA-256 of its bytes.
#[derive(Debug)]
pub(crate) struct Context {
    pub(crate) tar: Vec<u8>,
    pub(crate) hash: String,
    /// Entries under `rootfs/`.
    pub(crate) entries: usize,
}

impl Context {
    /// `Dockerfile` then `rootfs/...`, every header fixed, so equal inputs give equal bytes.
    pub(crate) fn new(dockerfile: &str, rootfs: &Rootfs) -> Result<Self, RunnerError> {
        let mut tar = tar::Builder::new(Vec::new());
        let written = append_bytes(&mut tar, "Dockerfile", dockerfile.as_bytes(), MODE_FILE)
            .and_then(|()| append_dir(&mut tar, "rootfs", MODE_EXEC));
        written.map_err(RunnerError::io("write", "the image build context"))?;
        for (key, node) in &rootfs.nodes {
            let path = format!("rootfs/{key}");
            let written = match node {
                Node::Dir { mode } => append_dir(&mut tar, &path, *mode),
                Node::Bytes { bytes, mode } => append_bytes(&mut tar, &path, bytes, *mode),
                Node::Symlink { target } => {
                    let mut header = header(EntryType::Symlink, 0o777, 0);
                    tar.append_link(&mut header, &path, target)
                }
                Node::HostFile { source, mode } => {
                    let file = File::open(source).map_err(RunnerError::io("read", source))?;
                    let meta = file.metadata().map_err(RunnerError::io("read", source))?;
                    let mut header = header(EntryType::Regular, *mode, meta.len());
                    tar.append_data(&mut header, &path, file)
                        .map_err(RunnerError::io("read", source))?;
                    Ok(())
                }
            };
            written.map_err(RunnerError::io("write", "the image build context"))?;
        }
        let tar = tar
            .into_inner()
            .map_err(RunnerError::io("write", "the image build context"))?;
        let hash = Sha256::digest(&tar)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(Self {
            tar,
            hash,
            entries: rootfs.len(),
        })
    }
}

fn append_dir(tar: &mut tar::Builder<Vec<u8>>, path: &str, mode: u32) -> std::io::Result<()> {
    let mut header = header(EntryType::Directory, mode, 0);
    tar.append_data(&mut header, path, std::io::empty())
}

fn append_bytes(
    tar: &mut tar::Builder<Vec<u8>>,
    path: &str,
    bytes: &[u8],
    mode: u32,
) -> std::io::Result<()> {
    let mut header = header(EntryType::Regular, mode, bytes.len() as u64);
    tar.append_data(&mut header, path, bytes)
}

fn header(kind: EntryType, mode: u32, size: u64) -> Header {
    let mut header = Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(dir: &Path, lib: &[u8]) -> Context {
        std::fs::write(dir.join("libx.so.1"), lib).unwrap();
        let mut rootfs = Rootfs::default();
        rootfs.dir("/tmp", MODE_TMP).unwrap();
        rootfs
            .host_file("/usr/lib/libx.so.1", &dir.join("libx.so.1"))
            .unwrap();
        rootfs
            .bytes("/etc/passwd", b"root:x:0:0::/:/bin/sh\n", MODE_FILE)
            .unwrap();
        rootfs.symlink("/bin/sh", "busybox").unwrap();
        Context::new("FROM scratch\n", &rootfs).unwrap()
    }

    #[test]
    fn the_same_input_gives_the_same_hash_and_a_changed_byte_another() {
        let dir = tempfile::tempdir().unwrap();
        let first = context(dir.path(), b"\x7fELF one");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let again = context(dir.path(), b"\x7fELF one");
        assert_eq!((first.hash.len(), &first.hash), (64, &again.hash));
        assert_eq!(first.tar, again.tar);
        let changed = context(dir.path(), b"\x7fELF onE");
        assert_ne!(first.hash, changed.hash);
    }

    #[test]
    fn entries_are_sorted_with_parents_fixed_modes_and_no_owner() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = context(dir.path(), b"lib");
        let mut archive = tar::Archive::new(&ctx.tar[..]);
        let mut seen = Vec::new();
        for entry in archive.entries().unwrap() {
            let entry = entry.unwrap();
            let h = entry.header();
            assert_eq!(
                (h.mtime().unwrap(), h.uid().unwrap(), h.gid().unwrap()),
                (0, 0, 0)
            );
            let link = entry.link_name().unwrap().map(|l| l.display().to_string());
            seen.push((
                entry.path().unwrap().display().to_string(),
                h.mode().unwrap(),
                link,
            ));
        }
        let expected: Vec<(String, u32, Option<String>)> = [
            ("Dockerfile", 0o644, None),
            ("rootfs", 0o755, None),
            ("rootfs/bin", 0o755, None),
            ("rootfs/bin/sh", 0o777, Some("busybox")),
            ("rootfs/etc", 0o755, None),
            ("rootfs/etc/passwd", 0o644, None),
            ("rootfs/tmp", 0o1777, None),
            ("rootfs/usr", 0o755, None),
            ("rootfs/usr/lib", 0o755, None),
            ("rootfs/usr/lib/libx.so.1", 0o755, None),
        ]
        .into_iter()
        .map(|(p, m, l)| (p.to_owned(), m, l.map(str::to_owned)))
        .collect();
        assert_eq!(seen, expected);
        assert_eq!(ctx.entries, 8);
    }

    #[test]
    fn clashing_or_escaping_paths_are_refused() {
        let mut rootfs = Rootfs::default();
        rootfs.bytes("/etc/passwd", b"a", MODE_FILE).unwrap();
        rootfs.bytes("/etc/passwd", b"a", MODE_FILE).unwrap();
        assert!(rootfs.bytes("/etc/passwd", b"b", MODE_FILE).is_err());
        assert!(rootfs.bytes("/etc/passwd/x", b"b", MODE_FILE).is_err());
        assert!(rootfs.dir("/a/../b", MODE_EXEC).is_err());
        assert!(rootfs.dir("/", MODE_EXEC).is_err());
    }
}
