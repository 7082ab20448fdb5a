//! The file-access security policy.
//!
//! Two halves: [`check_path`] applies the lexical rules to the model's string (relative to the
//! workspace, no `..`, no encodings or look-alikes, only `shared/`, `tmp/` and read-only `vault/`),
//! and [`Workspace`] opens the result beneath the workspace root without following symbolic links,
//! so a link swapped in after the check cannot redirect the I/O.

mod beneath;
mod path;

pub use beneath::{Parents, Resolver, Workspace};
pub(crate) use beneath::{map_errno, open_dir_at, type_at};
pub use path::{
    Access, Area, MAX_DEPTH, MAX_NAME_BYTES, MAX_PATH_BYTES, RULE_AREAS, RULE_PARENT,
    RULE_RELATIVE, RULE_ROOT_WRITE, RULE_SYMLINK, RULE_VAULT, SafePath, check_path,
};
