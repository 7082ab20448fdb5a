//! What a test needs from the machine, checked without ever skipping silently.
//!
//! A test that needs Docker, Landlock, tmux or the `sqld` server is marked
//! `#[ignore = "needs docker"]` (resp. `"needs landlock"`, `"needs tmux"`, `"needs sqld"`) and calls
//! [`need`] first. Plain `cargo test` lists it as *ignored* in the summary; `scripts/test.sh` runs
//! it (`--include-ignored`) when everything is available, and always in CI, where a missing
//! requirement makes [`need`] panic and fails the run. A test never returns early and counts as
//! `ok` without having run.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A capability of the machine that some tests need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// A Docker engine that answers (`docker info`).
    Docker,
    /// Landlock in the running kernel (a ruleset can be created).
    Landlock,
    /// The `tmux` binary.
    Tmux,
    /// The real libSQL server `sqld` (see [`sqld_binary`]).
    Sqld,
    /// Running as root (what a runner needs to give each user's guests their own uid).
    Root,
    /// A Python with the official MCP SDK (PyPI `mcp`), see [`mcp_python`].
    McpPython,
    /// The Chromium browser (`chromium`, Debian's package), driven headless over its DevTools
    /// protocol.
    Chromium,
}

impl Need {
    /// The reason string used in `#[ignore = "..."]` for tests needing this.
    pub fn ignore_reason(self) -> &'static str {
        match self {
            Need::Docker => "needs docker",
            Need::Landlock => "needs landlock",
            Need::Tmux => "needs tmux",
            Need::Sqld => "needs sqld",
            Need::Root => "needs root",
            Need::McpPython => "needs python mcp",
            Need::Chromium => "needs chromium",
        }
    }

    /// Whether this machine has it.
    pub fn available(self) -> bool {
        match self {
            Need::Docker => Command::new("docker")
                .args(["info", "--format", "{{.ServerVersion}}"])
                .output()
                .is_ok_and(|o| o.status.success()),
            Need::Landlock => landlock_available(),
            Need::Tmux => Command::new("tmux")
                .arg("-V")
                .output()
                .is_ok_and(|o| o.status.success()),
            // The auth tests mint their JWTs with the `openssl` command.
            Need::Sqld => {
                sqld_binary().is_some()
                    && Command::new("openssl")
                        .arg("version")
                        .output()
                        .is_ok_and(|o| o.status.success())
            }
            Need::Root => std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Uid:"))
                    .and_then(|ids| ids.split_whitespace().nth(1))
                    == Some("0")
            }),
            Need::Chromium => Command::new("chromium")
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success()),
            Need::McpPython => mcp_python().is_some_and(|python| {
                Command::new(python)
                    .args(["-c", "import mcp.client.streamable_http"])
                    .output()
                    .is_ok_and(|o| o.status.success())
            }),
        }
    }

    fn how_to_fix(self) -> &'static str {
        match self {
            Need::Docker => "start a Docker engine (scripts/test.sh starts an installed dockerd)",
            Need::Landlock => {
                "run on a Linux kernel with Landlock enabled (5.13+, lsm=...,landlock)"
            }
            Need::Tmux => "install tmux (scripts/test.sh does)",
            Need::Sqld => {
                "put sqld at shared/tools/sqld/sqld above the repository (or set OXYDRA_SQLD) and install openssl (scripts/test.sh does)"
            }
            Need::Root => "run the tests as root (CI does)",
            Need::Chromium => "install Debian's chromium (scripts/test.sh does)",
            Need::McpPython => {
                "run scripts/test.sh (it installs the MCP Python SDK into target/mcp-venv), or set \
                 OXYDRA_MCP_PYTHON to a python that has `mcp` installed"
            }
        }
    }
}

/// Panics with a clear message when the machine lacks `what`: a test that needs it must either
/// run or fail, never pass without having run.
#[allow(
    clippy::panic,
    reason = "a missing requirement fails the test; that is the point"
)]
pub fn need(what: Need) {
    if !what.available() {
        panic!(
            "this test {} and the machine has none: {}",
            what.ignore_reason(),
            what.how_to_fix()
        );
    }
}

/// The same check as `sandbox::landlock_available` (test-support may not depend on product
/// crates): the kernel creates a Landlock ruleset.
fn landlock_available() -> bool {
    use landlock::{ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr};
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(Ruleset::create)
        .is_ok()
}

/// The `sqld` binary: `$OXYDRA_SQLD`, or `shared/tools/sqld/sqld` in the first directory above
/// this crate that has one (beside the repository or one of its worktrees' parents).
pub fn sqld_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("OXYDRA_SQLD") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|dir| dir.join("shared/tools/sqld/sqld"))
        .find(|p| p.is_file())
}

/// The Python with the MCP SDK: `$OXYDRA_MCP_PYTHON`, or `target/mcp-venv/bin/python` of the
/// workspace (where scripts/test.sh installs it).
pub fn mcp_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("OXYDRA_MCP_PYTHON") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    let p = target.join("mcp-venv/bin/python");
    p.is_file().then_some(p)
}
