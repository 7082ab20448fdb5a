//! What a `/memories` path the model sends may be, and its canonical form.
//!
//! A path starts with `/memories`, names files and directories with `/` between them, and never
//! leaves the tree: `..` anywhere, a sibling such as `/memories2`, NUL and other control or
//! invisible characters, backslashes, over-long names and absurd depths are refused before the
//! store is touched. Empty segments and `.` are dropped (`/memories//a/./b/` is `/memories/a/b`).

use memory::MEMORIES_ROOT;

use crate::ToolError;

/// Longest path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// Longest file or directory name, in bytes.
pub const MAX_NAME_BYTES: usize = 255;
/// Deepest path accepted, in names below `/memories`.
pub const MAX_DEPTH: usize = 16;

fn refuse(message: String) -> ToolError {
    ToolError::execution(message)
}

/// Characters that hide or reorder what a reader sees (zero-width, bidirectional controls, BOM).
fn invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// The canonical form of `raw` (`/memories` or `/memories/a/b`), or the refusal to show the model.
pub fn canonical(raw: &str) -> Result<String, ToolError> {
    if raw.len() > MAX_PATH_BYTES {
        return Err(refuse(format!(
            "Path is too long ({} bytes, at most {MAX_PATH_BYTES}): use shorter names under /memories",
            raw.len()
        )));
    }
    if raw.chars().any(|c| c.is_control() || invisible(c)) {
        return Err(refuse(
            "Path contains a control or invisible character (such as NUL or a newline): use \
             plain names like /memories/notes.md"
                .into(),
        ));
    }
    let Some(rest) = raw.strip_prefix(MEMORIES_ROOT) else {
        return Err(refuse(format!(
            "Path must start with /memories, got: {raw}"
        )));
    };
    if !rest.is_empty() && !rest.starts_with('/') {
        return Err(refuse(format!(
            "Path {raw} would escape /memories directory"
        )));
    }
    let mut names = Vec::new();
    for name in rest.split('/') {
        match name {
            "" | "." => {}
            ".." => {
                return Err(refuse(format!(
                    "Path {raw} would escape /memories directory"
                )));
            }
            _ if name.contains('\\') => {
                return Err(refuse(format!(
                    "Path {raw} contains a backslash: separate names with / only"
                )));
            }
            _ if name.len() > MAX_NAME_BYTES => {
                return Err(refuse(format!(
                    "A name in path {raw} is too long (at most {MAX_NAME_BYTES} bytes)"
                )));
            }
            _ => names.push(name),
        }
    }
    if names.len() > MAX_DEPTH {
        return Err(refuse(format!(
            "Path {raw} is too deep (at most {MAX_DEPTH} levels below /memories)"
        )));
    }
    Ok(if names.is_empty() {
        MEMORIES_ROOT.to_owned()
    } else {
        format!("{MEMORIES_ROOT}/{}", names.join("/"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms() {
        let ok = |raw: &str| canonical(raw).map_err(|e| e.to_string());
        assert_eq!(ok("/memories"), Ok("/memories".to_owned()));
        assert_eq!(ok("/memories/"), Ok("/memories".to_owned()));
        assert_eq!(ok("/memories//a/./b/"), Ok("/memories/a/b".to_owned()));
        assert_eq!(
            ok("/memories/../x"),
            Err("Path /memories/../x would escape /memories directory".to_owned())
        );
    }
}
