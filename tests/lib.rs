//! Cross-crate tests live in `tests/tests/`; this library only holds helpers they share.

use std::path::{Path, PathBuf};

/// The workspace root (the directory holding the root `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}
