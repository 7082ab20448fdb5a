//! Recipes never send the gateway token to an address read from `ipc/gateway.json`: the agent's
//! shell can rewrite that copy (`docs/guidebook/security.md`), so a recipe or script that takes
//! the port from it hands the token to whoever listens there. Every code block of the docs and
//! every script is read; the trusted endpoint is `.oxydra/gateway.json`.

#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

use std::path::{Path, PathBuf};

const PUBLIC_COPY: &str = "ipc/gateway.json";

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The lines of `text`'s fenced code blocks that mention the shell-writable copy.
fn code_lines_reading_the_public_copy(text: &str) -> Vec<usize> {
    let mut in_code = false;
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if in_code && line.contains(PUBLIC_COPY) {
            found.push(i + 1);
        }
    }
    found
}

#[test]
fn no_recipe_or_script_finds_the_gateway_in_ipc() {
    let root = oxydra_e2e::workspace_root();
    let mut paths = Vec::new();
    files(&root.join("docs"), &mut paths);
    files(&root.join("scripts"), &mut paths);
    paths.push(root.join("README.md"));
    let mut problems = Vec::new();
    for path in paths {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let shown = path.strip_prefix(&root).unwrap().display().to_string();
        let lines = if path.extension().is_some_and(|e| e == "md") {
            code_lines_reading_the_public_copy(&text)
        } else {
            let fenced = format!("```\n{text}\n```");
            code_lines_reading_the_public_copy(&fenced)
                .into_iter()
                .map(|l| l - 1)
                .collect()
        };
        problems.extend(lines.into_iter().map(|l| format!("{shown}:{l}")));
    }
    assert!(
        problems.is_empty(),
        "read the endpoint from .oxydra/gateway.json, never {PUBLIC_COPY}:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_detector_reads_only_code_blocks() {
    let text = "Prose may name ipc/gateway.json.\n```sh\ncat ws/ipc/gateway.json\n```\n";
    assert_eq!(code_lines_reading_the_public_copy(text), vec![3]);
}
