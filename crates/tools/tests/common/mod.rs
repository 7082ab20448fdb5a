//! A real workspace in a temporary directory, and helpers to call tools through the registry.

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the fixture"
)]
#![allow(
    clippy::unwrap_used,
    reason = "a fixture that cannot be built should fail the test"
)]

pub mod memory_env;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tools::{ToolOutcome, ToolRegistry};
use types::{SessionId, ToolExecutionContext, TurnId, UserId, WorkspacePaths};

pub const INTERNAL_SECRET: &str = "INTERNAL-DB-CONTENT";
pub const OUTSIDE_SECRET: &str = "OUTSIDE-HOST-CONTENT";
pub const VAULT_CONTENT: &str = "VAULT-CREDENTIAL";
pub const LOG_CONTENT: &str = "LOG-LINE";

/// `<tmp>/outside/secret.txt` and `<tmp>/ws/alice/{.oxydra,shared,tmp,vault,logs,ipc}` with
/// files and hostile symlinks.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub outside: PathBuf,
    pub registry: ToolRegistry,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        let root = dir.path().join("ws").join("alice");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), OUTSIDE_SECRET).unwrap();
        for sub in [".oxydra", "shared/docs", "tmp", "vault", "logs", "ipc"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        let write = |rel: &str, text: &str| std::fs::write(root.join(rel), text).unwrap();
        write(".oxydra/memory.db", INTERNAL_SECRET);
        write("shared/notes.md", "hello\nworld\n");
        write("shared/docs/a.md", "# A\nalpha line\n");
        write("shared/docs/b.txt", "beta\n");
        write("vault/api.key", VAULT_CONTENT);
        write("logs/run.log", LOG_CONTENT);
        write("ipc/marker", "ws://127.0.0.1:1");
        let link = |target: &Path, rel: &str| symlink(target, root.join(rel)).unwrap();
        link(&outside, "shared/out");
        link(Path::new("../../../outside"), "shared/out_rel");
        link(Path::new("../.oxydra"), "shared/internal");
        link(Path::new("../vault"), "shared/vault_link");
        link(Path::new("../.oxydra/memory.db"), "shared/db_link");
        link(&outside.join("secret.txt"), "shared/secret_link");
        link(Path::new("loop"), "shared/loop");
        link(Path::new("/etc"), "shared/etc");
        link(Path::new("../.oxydra"), "tmp/parent_link");
        link(Path::new("../logs"), "tmp/logs_link");
        Self {
            dir,
            root,
            outside,
            registry: tools::ToolSet::new(None).files().registry().unwrap(),
        }
    }

    pub fn ctx(&self) -> ToolExecutionContext {
        context("alice", &self.root)
    }

    pub async fn call(&self, tool: &str, args: Value) -> ToolOutcome {
        self.registry
            .execute(tool, &args.to_string(), &self.ctx())
            .await
    }

    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(rel)).ok()
    }

    /// Every file under `dir` (host path), as relative paths, links not followed.
    pub fn tree(&self, dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let entry = entry.unwrap();
                let path = entry.path();
                out.push(path.strip_prefix(dir).unwrap().display().to_string());
                if entry.file_type().unwrap().is_dir() {
                    stack.push(path);
                }
            }
        }
        out.sort();
        out
    }
}

pub fn context(user: &str, root: &Path) -> ToolExecutionContext {
    ToolExecutionContext::new(
        UserId::parse(user).unwrap(),
        SessionId::parse("session-1").unwrap(),
        TurnId::parse("turn-1").unwrap(),
        WorkspacePaths::new(root),
    )
}
