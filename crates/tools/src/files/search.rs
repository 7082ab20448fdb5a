//! `file_search`: finds files by glob pattern and/or lines by text under a workspace directory.

use std::ops::ControlFlow;
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use globset::{GlobBuilder, GlobMatcher};
use rustix::fs::{self as rfs, Mode, OFlags};
use serde::Deserialize;
use serde_json::{Value, json};
use types::{SafetyTier, ToolExecutionContext};

use super::walk::{Depth, End, Entry, Kind, walk};
use super::{blocking, parse, read_text};
use crate::policy::{Access, Workspace, check_path};
use crate::{Tool, ToolError};

/// Most directory entries one search visits.
pub const MAX_SEARCH_VISITS: usize = 20_000;
const DEFAULT_RESULTS: usize = 50;
const MAX_LINE_CHARS: usize = 200;

/// Walks a directory (default: every accessible area) without following links. `glob` matches
/// file names (`*.md`) or, if it contains `/`, paths relative to the searched directory
/// (`docs/**/*.md`) or to the workspace (`shared/**/*.md`). `text` is a case-sensitive substring
/// looked for in text files up to 1 MiB; matches come back as `path:line: text`.
#[derive(Debug, Default)]
pub struct FileSearch;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    path: String,
    glob: Option<String>,
    text: Option<String>,
    max_results: Option<usize>,
}

#[async_trait::async_trait]
impl Tool for FileSearch {
    fn name(&self) -> &str {
        "file_search"
    }

    fn description(&self) -> &str {
        "Search the workspace for files whose name matches a glob (like *.md or docs/**/*.txt) \
         and/or lines containing a text (case-sensitive). path limits the search to a directory, \
         like shared/projects; empty searches shared/, tmp/ and vault/. At least one of glob and \
         text is required."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "path": {"type": "string", "maxLength": 1024,
                         "description": "Workspace-relative directory to search; empty for all"},
                "glob": {"type": "string", "minLength": 1, "maxLength": 256,
                         "description": "File name or relative path pattern, like *.md"},
                "text": {"type": "string", "minLength": 1, "maxLength": 1000,
                         "description": "Text to find inside files (case-sensitive)"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 200,
                                "description": "Most results to return (default 50)"}
            }
        })
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }

    fn reads_untrusted(&self) -> Option<types::UntrustedInput> {
        Some(types::UntrustedInput::File)
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(30)
    }

    async fn execute(&self, args: &Value, ctx: &ToolExecutionContext) -> Result<String, ToolError> {
        let args: Args = parse(args)?;
        if args.glob.is_none() && args.text.is_none() {
            return Err(ToolError::invalid(
                "glob",
                "given, or `text` given: at least one of them is required",
            ));
        }
        let path = check_path(&args.path, Access::Read)?;
        let glob = args.glob.as_deref().map(compile).transpose()?;
        let max_results = args.max_results.unwrap_or(DEFAULT_RESULTS);
        let root = ctx.workspace.root.clone();
        let cancel = ctx.cancellation.clone();
        blocking(move || {
            let ws = Workspace::open(&root)?;
            let base = path.display();
            let mut results: Vec<String> = Vec::new();
            let mut skipped = 0usize;
            let end = walk(
                &ws,
                &path,
                Depth::Recursive,
                MAX_SEARCH_VISITS,
                &cancel,
                &mut |entry, dir| {
                    if entry.kind != Kind::File {
                        return ControlFlow::Continue(());
                    }
                    if let Some(glob) = &glob
                        && !glob_matches(glob, entry, &base)
                    {
                        return ControlFlow::Continue(());
                    }
                    match &args.text {
                        None => results.push(entry.path.display()),
                        Some(needle) => match read_entry(dir, entry) {
                            Some(text) => {
                                for (i, line) in text.lines().enumerate() {
                                    if line.contains(needle.as_str()) {
                                        results.push(format!(
                                            "{}:{}: {}",
                                            entry.path.display(),
                                            i + 1,
                                            clip(line)
                                        ));
                                        if results.len() >= max_results {
                                            break;
                                        }
                                    }
                                }
                            }
                            None => skipped += 1,
                        },
                    }
                    if results.len() >= max_results {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                },
            )?;
            let mut out = if results.is_empty() {
                format!("no matches under `{base}`")
            } else {
                results.join("\n")
            };
            match end {
                End::Stopped => out.push_str(&format!(
                    "\n[stopped at {max_results} results; narrow the path, glob or text]"
                )),
                End::Capped => out.push_str(&format!(
                    "\n[stopped after visiting {MAX_SEARCH_VISITS} entries; search a subdirectory]"
                )),
                End::Complete => {}
            }
            if skipped > 0 {
                out.push_str(&format!(
                    "\n[{skipped} binary or oversized file(s) not searched]"
                ));
            }
            Ok(out)
        })
        .await
    }
}

fn compile(pattern: &str) -> Result<GlobMatcher, ToolError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| {
            ToolError::invalid(
                "glob",
                format!("a valid glob pattern like *.md ({})", e.kind()),
            )
        })
}

fn glob_matches(glob: &GlobMatcher, entry: &Entry, base: &str) -> bool {
    let full = entry.path.display();
    let relative = if base == "." {
        full.as_str()
    } else {
        full.strip_prefix(base)
            .map_or(full.as_str(), |r| r.trim_start_matches('/'))
    };
    glob.is_match(&entry.name) || glob.is_match(relative) || glob.is_match(&full)
}

/// The file's text, or `None` for binary, oversized or vanished files. Opened by its single name
/// in the directory descriptor, with `O_NOFOLLOW`.
fn read_entry(dir: std::os::fd::BorrowedFd<'_>, entry: &Entry) -> Option<String> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd: OwnedFd = rfs::openat(dir.as_fd(), entry.name.as_str(), flags, Mode::empty()).ok()?;
    let stat = rfs::fstat(&fd).ok()?;
    if rfs::FileType::from_raw_mode(stat.st_mode) != rfs::FileType::RegularFile {
        return None;
    }
    read_text(fd.into(), &entry.path).ok()
}

fn clip(line: &str) -> String {
    let line = line.trim_end();
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_owned();
    }
    let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{cut}…")
}
