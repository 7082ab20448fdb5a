//! Cross-crate tests live in `tests/tests/`; this library only holds helpers they share.

use std::path::{Path, PathBuf};

/// The workspace root (the directory holding the root `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `cargo metadata --format-version 1` of the workspace, with `extra` arguments (`--no-deps`);
/// the error says what failed.
pub fn cargo_metadata(extra: &[&str]) -> Result<serde_json::Value, String> {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1"])
        .args(extra)
        .current_dir(workspace_root())
        .output()
        .map_err(|e| format!("cargo metadata did not run: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata printed no JSON: {e}"))
}
