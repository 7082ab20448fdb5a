//! The lexical half of the policy: turns the model's path string into a [`SafePath`] or says which
//! rule it broke. No file system access happens here.

use types::WorkspaceDir;

use crate::ToolError;

/// Longest path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// Longest single name accepted, in bytes (the common file system limit).
pub const MAX_NAME_BYTES: usize = 255;
/// Deepest path accepted, in components.
pub const MAX_DEPTH: usize = 32;

pub const RULE_RELATIVE: &str = "paths must be relative to the workspace, like shared/notes.md";
pub const RULE_SYMLINK: &str = "symbolic links are not followed; use the real path";
pub const RULE_PARENT: &str =
    "`..` is not allowed in paths; name the file from the workspace, like shared/notes.md";
pub const RULE_VAULT: &str = "`vault/` is read-only";
pub const RULE_ROOT_WRITE: &str =
    "the workspace root is read-only; write under shared/ or tmp/, like shared/notes.md";
pub const RULE_AREAS: &str =
    "only shared/, tmp/ and vault/ (read-only) are accessible; paths look like shared/notes.md";

/// What the caller wants to do with the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// A top-level directory the file tools may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Area {
    Shared,
    Tmp,
    Vault,
}

impl Area {
    pub const ALL: [Area; 3] = [Area::Shared, Area::Tmp, Area::Vault];

    pub fn dir(self) -> WorkspaceDir {
        match self {
            Area::Shared => WorkspaceDir::Shared,
            Area::Tmp => WorkspaceDir::Tmp,
            Area::Vault => WorkspaceDir::Vault,
        }
    }

    pub fn name(self) -> &'static str {
        self.dir().name()
    }

    pub fn is_writable(self) -> bool {
        !matches!(self, Area::Vault)
    }
}

/// A path that passed the lexical rules: either the workspace root (listing only) or an area and
/// plain names below it (no `.`, `..`, empty, encoded or look-alike components).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SafePath {
    area: Option<Area>,
    names: Vec<String>,
    /// Written with a trailing `/` (or `/.`): the caller means a directory.
    dir_syntax: bool,
}

impl SafePath {
    /// The workspace root itself.
    pub fn root() -> Self {
        Self {
            area: None,
            names: Vec::new(),
            dir_syntax: false,
        }
    }

    pub fn area(&self) -> Option<Area> {
        self.area
    }

    /// Names below the area, in order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Is this the root or an area's top directory?
    pub fn is_top_level(&self) -> bool {
        self.names.is_empty()
    }

    /// A child of this path (the name must come from a directory listing).
    pub fn join(&self, name: &str) -> Option<Self> {
        match self.area {
            None => {
                let area = Area::ALL.into_iter().find(|a| a.name() == name)?;
                Some(Self {
                    area: Some(area),
                    names: Vec::new(),
                    dir_syntax: false,
                })
            }
            Some(area) => {
                let mut names = self.names.clone();
                names.push(name.to_owned());
                Some(Self {
                    area: Some(area),
                    names,
                    dir_syntax: false,
                })
            }
        }
    }

    /// The parent and final name, or `None` for the root and area tops.
    pub fn split_last(&self) -> Option<(Self, &str)> {
        let (last, parent) = self.names.split_last()?;
        Some((
            Self {
                area: self.area,
                names: parent.to_vec(),
                dir_syntax: true,
            },
            last.as_str(),
        ))
    }

    /// Refuses a path written like a directory (`shared/notes.md/`) where a file is meant.
    pub fn require_file(&self) -> Result<(), ToolError> {
        if self.dir_syntax || self.names.is_empty() {
            return Err(ToolError::invalid(
                "path",
                format!(
                    "a file path like shared/notes.md, got the directory form `{}/`",
                    self.display()
                ),
            ));
        }
        Ok(())
    }

    /// Workspace-relative form without trailing slash: `shared/a/b.md`, `shared`, or `.`.
    pub fn display(&self) -> String {
        match self.area {
            None => ".".to_owned(),
            Some(area) => {
                let mut s = area.name().to_owned();
                for n in &self.names {
                    s.push('/');
                    s.push_str(n);
                }
                s
            }
        }
    }
}

/// Applies every lexical rule to `raw`.
pub fn check_path(raw: &str, access: Access) -> Result<SafePath, ToolError> {
    if raw.len() > MAX_PATH_BYTES {
        return Err(ToolError::denied(format!(
            "paths are limited to {MAX_PATH_BYTES} bytes"
        )));
    }
    if raw.chars().any(char::is_control) {
        return Err(ToolError::denied(
            "paths must not contain control characters",
        ));
    }
    if raw.contains('\\') {
        return Err(ToolError::denied(
            "use forward slashes in paths, like shared/notes.md",
        ));
    }
    if has_percent_escape(raw) {
        return Err(ToolError::denied(
            "percent-encoded paths are not accepted; write names as plain text",
        ));
    }
    if let Some(c) = raw.chars().find(|&c| is_lookalike(c)) {
        return Err(ToolError::denied(format!(
            "paths must not contain the look-alike or invisible character U+{:04X}; use plain `/` and `.`",
            u32::from(c)
        )));
    }
    if raw.starts_with('/') || raw.starts_with('~') {
        return Err(ToolError::denied(RULE_RELATIVE));
    }
    let trimmed = raw.strip_suffix('/').unwrap_or(raw);
    let mut names: Vec<&str> = Vec::new();
    if !trimmed.is_empty() {
        for name in trimmed.split('/') {
            match name {
                "" => {
                    return Err(ToolError::denied(
                        "paths must not contain empty names (`//`)",
                    ));
                }
                "." => {}
                ".." => return Err(ToolError::denied(RULE_PARENT)),
                _ if name.len() > MAX_NAME_BYTES => {
                    return Err(ToolError::denied(format!(
                        "file and directory names are limited to {MAX_NAME_BYTES} bytes"
                    )));
                }
                _ if name
                    .trim_matches(|c: char| c == '.' || c.is_whitespace())
                    .is_empty() =>
                {
                    return Err(ToolError::denied(
                        "names made only of dots or spaces are not allowed",
                    ));
                }
                _ => names.push(name),
            }
        }
    }
    if names.len() > MAX_DEPTH {
        return Err(ToolError::denied(format!(
            "paths are limited to {MAX_DEPTH} levels"
        )));
    }
    let Some((first, rest)) = names.split_first() else {
        return match access {
            Access::Read => Ok(SafePath::root()),
            Access::Write => Err(ToolError::denied(RULE_ROOT_WRITE)),
        };
    };
    let area = match WorkspaceDir::from_name(first) {
        Some(WorkspaceDir::Shared) => Area::Shared,
        Some(WorkspaceDir::Tmp) => Area::Tmp,
        Some(WorkspaceDir::Vault) => Area::Vault,
        Some(WorkspaceDir::Internal) => {
            return Err(ToolError::denied(
                "`.oxydra/` is internal and not accessible to tools",
            ));
        }
        Some(dir @ (WorkspaceDir::Logs | WorkspaceDir::Ipc)) => {
            return Err(ToolError::denied(format!(
                "`{}/` is not accessible to file tools",
                dir.name()
            )));
        }
        None if rest.is_empty() && access == Access::Write => {
            return Err(ToolError::denied(RULE_ROOT_WRITE));
        }
        None => return Err(ToolError::denied(RULE_AREAS)),
    };
    if access == Access::Write && !area.is_writable() {
        return Err(ToolError::denied(RULE_VAULT));
    }
    Ok(SafePath {
        area: Some(area),
        names: rest.iter().map(|s| (*s).to_owned()).collect(),
        dir_syntax: raw.ends_with('/') || raw.ends_with("/."),
    })
}

/// `%` followed by two hex digits anywhere (so `%2e`, `%2F`, and the `%25` of double encoding).
fn has_percent_escape(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    bytes
        .windows(3)
        .any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
}

/// Characters that render like `/`, `\`, `.` or `~`, and invisible formatting characters.
fn is_lookalike(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00A0 | 0x00AD | 0x02D9 | 0x0589 | 0x06D4 | 0x0701..=0x0702 | 0x115F..=0x1160
            | 0x180E | 0x2000..=0x200F | 0x2024..=0x2026 | 0x2028..=0x202F | 0x2044 | 0x205F..=0x206F
            | 0x2215 | 0x2216 | 0x2223 | 0x2571..=0x2572 | 0x27CB | 0x27CD | 0x29F5 | 0x29F8..=0x29F9
            | 0x2E31 | 0x2E33 | 0x3000 | 0x3002 | 0x3164 | 0x30FB | 0xFE52 | 0xFE68 | 0xFEFF
            | 0xFF00..=0xFFEF | 0xE0000..=0xE007F
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(raw: &str, access: Access, expected: Result<&str, &str>) {
        let got = check_path(raw, access)
            .map(|p| p.display())
            .map_err(|e| e.to_string());
        assert_eq!(
            got,
            expected.map(str::to_owned).map_err(str::to_owned),
            "path {raw:?}"
        );
    }

    #[test]
    fn plain_paths_normalise() {
        check("shared/notes.md", Access::Write, Ok("shared/notes.md"));
        check("./shared/./a/b.txt", Access::Read, Ok("shared/a/b.txt"));
        check("shared/", Access::Read, Ok("shared"));
        check("vault/key", Access::Read, Ok("vault/key"));
        check("", Access::Read, Ok("."));
        check(".", Access::Read, Ok("."));
        check(
            "shared/résumé 2024.md",
            Access::Write,
            Ok("shared/résumé 2024.md"),
        );
        check("shared/100%.txt", Access::Write, Ok("shared/100%.txt"));
        check("shared/backup~", Access::Write, Ok("shared/backup~"));
    }

    #[test]
    fn rules_are_named() {
        check("vault/key", Access::Write, Err(RULE_VAULT));
        check(
            ".oxydra/memory.db",
            Access::Read,
            Err("`.oxydra/` is internal and not accessible to tools"),
        );
        check(
            "logs/x",
            Access::Read,
            Err("`logs/` is not accessible to file tools"),
        );
        check("/etc/passwd", Access::Read, Err(RULE_RELATIVE));
        check("~/x", Access::Read, Err(RULE_RELATIVE));
        check("shared/../.oxydra", Access::Read, Err(RULE_PARENT));
        check("notes.md", Access::Write, Err(RULE_ROOT_WRITE));
        check("", Access::Write, Err(RULE_ROOT_WRITE));
        check("SHARED/x", Access::Read, Err(RULE_AREAS));
        check("other/x", Access::Write, Err(RULE_AREAS));
    }
}
