//! The conventions that hold today, checked rather than remembered (as rust-analyzer's tidy test
//! does): every Rust file opens with a `//!` paragraph, no product file (under `crates/*/src`) is
//! over 500 lines, no test skips by returning early — a test that needs Docker, Landlock, tmux
//! or sqld is `#[ignore = "needs …"]` and calls `test_support::need` first — and no target kept
//! out of test runs (`test = false`) has a test.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::path::{Path, PathBuf};

/// Longest product file, in lines (STYLE: past ~500 lines a module wants splitting).
const MAX_PRODUCT_LINES: usize = 500;

/// Lines after a `#[ignore = "needs …"]` within which `need(` must be called.
const NEED_WITHIN: usize = 10;

/// Lines after a print that mentions skipping within which a `return` counts as a silent skip.
const RETURN_WITHIN: usize = 5;

/// A Rust file of the workspace: its path relative to the root, and its text.
struct Source {
    path: String,
    text: String,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target" && !name.to_string_lossy().starts_with('.') {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `.rs` file under `crates/` and `tests/`.
fn sources() -> Vec<Source> {
    let root = oxydra_e2e::workspace_root();
    let mut paths = Vec::new();
    rust_files(&root.join("crates"), &mut paths);
    rust_files(&root.join("tests"), &mut paths);
    paths.sort();
    assert!(paths.len() > 50, "found only {} Rust files", paths.len());
    paths
        .into_iter()
        .map(|p| Source {
            text: std::fs::read_to_string(&p).unwrap(),
            path: p
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        })
        .collect()
}

/// Whether `path` is product code: under `crates/<crate>/src/`.
fn is_product(path: &str) -> bool {
    let mut parts = path.split('/');
    parts.next() == Some("crates") && parts.nth(1) == Some("src")
}

fn report(what: &str, problems: &[String]) {
    assert!(problems.is_empty(), "{what}:\n  {}", problems.join("\n  "));
}

#[test]
fn every_module_opens_with_a_doc_paragraph() {
    let problems: Vec<String> = sources()
        .iter()
        .filter(|s| !s.text.starts_with("//!"))
        .map(|s| {
            format!(
                "{}: start the file with a `//!` paragraph saying what it is",
                s.path
            )
        })
        .collect();
    report("modules without a `//!` paragraph", &problems);
}

#[test]
fn no_product_file_is_over_500_lines() {
    let problems: Vec<String> = sources()
        .iter()
        .filter(|s| is_product(&s.path))
        .filter_map(|s| {
            let lines = s.text.lines().count();
            (lines > MAX_PRODUCT_LINES).then(|| {
                format!(
                    "{}: {lines} lines (split it into modules of at most {MAX_PRODUCT_LINES})",
                    s.path
                )
            })
        })
        .collect();
    report("product files over 500 lines", &problems);
}

/// Silent skips in `text`: a print that mentions skipping followed closely by a `return`, and a
/// `#[ignore = "needs …"]` test that does not call `need(` first.
fn silent_skips(text: &str) -> Vec<(usize, &'static str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        let lower = trimmed.to_lowercase();
        let prints = ["eprintln!", "println!", "eprint!", "print!"]
            .iter()
            .any(|m| lower.contains(m));
        let after = |n: usize| lines.iter().skip(i + 1).take(n);
        if prints
            && lower.contains("skip")
            && after(RETURN_WITHIN).any(|l| l.trim_start().starts_with("return"))
        {
            found.push((
                i + 1,
                "prints a skip and returns: the test would count as `ok`",
            ));
        }
        if trimmed.starts_with("#[ignore = \"needs ")
            && !after(NEED_WITHIN).any(|l| l.contains("need("))
        {
            found.push((
                i + 1,
                "`#[ignore = \"needs …\"]` without `test_support::need(..)` first",
            ));
        }
    }
    found
}

#[test]
fn no_test_skips_by_returning_early() {
    let mut problems = Vec::new();
    for source in sources() {
        if source.path.ends_with("tests/tests/tidy.rs") {
            continue;
        }
        for (line, what) in silent_skips(&source.text) {
            problems.push(format!("{}:{line}: {what}", source.path));
        }
    }
    report("tests that can pass without running", &problems);
}

#[test]
fn the_skip_detector_finds_both_patterns_and_accepts_the_right_one() {
    // Built from parts, so that no scanner mistakes this fixture for a real skip.
    let early = format!(
        "fn t() {{\n    if !docker() {{\n        eprintln!(\"{}: no docker\");\n        return;\n    }}\n}}\n",
        ["SKIP", "PED"].concat()
    );
    assert_eq!(silent_skips(&early).len(), 1);
    let unchecked =
        "#[tokio::test]\n#[ignore = \"needs docker\"]\nasync fn t() {\n    run().await;\n}\n";
    assert_eq!(silent_skips(unchecked).len(), 1);
    let right = "#[tokio::test]\n#[ignore = \"needs docker\"]\nasync fn t() {\n    test_support::need(Need::Docker);\n    run().await;\n}\n";
    assert_eq!(silent_skips(right), Vec::new());
}

/// The files of a target: a library's whole `src/` (less `src/bin/`), a binary's own folder when
/// it is a `main.rs` of its own, else its one file.
fn target_files(kind: &str, src_path: &Path) -> Vec<PathBuf> {
    let dir = src_path.parent().unwrap_or(Path::new("."));
    let in_src = dir.file_name().is_some_and(|n| n == "src");
    let own_folder = src_path.file_name().is_some_and(|n| n == "main.rs") && !in_src;
    let mut files = Vec::new();
    if (kind == "lib" && in_src) || own_folder {
        rust_files(dir, &mut files);
        if kind == "lib" {
            files.retain(|f| !f.starts_with(dir.join("bin")));
        }
    } else {
        files.push(src_path.to_path_buf());
    }
    files
}

/// `test = false` keeps a target out of `cargo test --tests` (scripts/test.sh): right for a bench
/// or guest binary without tests, wrong the day one gets a test, which would then never run.
#[test]
fn targets_kept_out_of_test_runs_have_no_tests() {
    let root = oxydra_e2e::workspace_root();
    let meta = oxydra_e2e::cargo_metadata(&["--no-deps"]).unwrap();
    let mut problems = Vec::new();
    let mut kept_out = 0;
    for target in meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap())
    {
        let kind = target["kind"][0].as_str().unwrap();
        if target["test"] != false || !(kind == "lib" || kind == "bin") {
            continue;
        }
        kept_out += 1;
        for file in target_files(kind, Path::new(target["src_path"].as_str().unwrap())) {
            let text = std::fs::read_to_string(&file).unwrap();
            if text.contains("#[test]") || text.contains("#[tokio::test") {
                problems.push(format!(
                    "{}: has tests, but its target `{}` is `test = false`: remove that line from its Cargo.toml",
                    file.strip_prefix(&root).unwrap_or(&file).display(),
                    target["name"].as_str().unwrap()
                ));
            }
        }
    }
    assert!(
        kept_out > 0,
        "no `test = false` target found: is the metadata read right?"
    );
    report("tests that `cargo test --tests` would never run", &problems);
}
