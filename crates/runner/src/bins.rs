//! Where the guest binaries are: next to the running executable (a `cargo build` puts every
//! package's binaries in one `target/<profile>/`), or in `$OXYDRA_BIN_DIR`.

use std::path::PathBuf;

use crate::RunnerError;

/// Environment variable naming the directory that holds `oxydra-vm` and `shell-vm`.
pub const BIN_DIR_ENV: &str = "OXYDRA_BIN_DIR";

/// The path of binary `name` (`oxydra-vm`, `shell-vm` or `oxydra-tui`), checked to exist.
pub fn guest_binary(name: &'static str) -> Result<PathBuf, RunnerError> {
    let dir = match std::env::var_os(BIN_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => std::env::current_exe()
            .map_err(RunnerError::io("find", "the runner executable"))?
            .parent()
            .map(PathBuf::from)
            .unwrap_or_default(),
    };
    let path = dir.join(name);
    if path.is_file() {
        return Ok(path);
    }
    let package = match name {
        "shell-vm" => "shell-daemon",
        "oxydra-tui" => "tui",
        _ => "runner",
    };
    Err(RunnerError::MissingBinary { name, package, dir })
}
