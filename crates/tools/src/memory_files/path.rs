//! What a `/memories` path the model sends may be, and its canonical form.
//!
//! A path starts with `/memories`, names files and directories with `/` between them, and never
//! leaves the tree: `..` anywhere, a sibling such as `/memories2`, NUL and other control or
//! invisible characters, backslashes, over-long names and absurd depths are refused before the
//! store is touched. Empty segments and `.` are dropped (`/memories//a/./b/` is `/memories/a/b`).
//!
//! One name, one file: a path is folded to its NFKC form before anything else, so the composed
//! and decomposed `café`, or `ｎｏｔｅｓ.md` and `notes.md`, are the same file (and a fullwidth
//! `．．` or `／` is checked as the `..` or `/` it becomes). A *new* name ([`canonical_new`]:
//! `create`, the target of `rename`, `runner memory import-tree`) must also not be confusable
//! with another: no leading or trailing space, no trailing dot, no word (run of letters) mixing
//! the Latin, Greek and Cyrillic scripts (`nоtes.md` with a Cyrillic `о`), and no leading dot —
//! `view` leaves hidden names out, and what cannot be listed is not created (so nothing is
//! recalled that `view` does not show), and no character a reader does not see (a soft hyphen, a
//! variation selector, a tag character, a Hangul filler).

use memory::MEMORIES_ROOT;
use unicode_normalization::UnicodeNormalization;

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

/// Characters that hide, reorder or break what a reader sees (zero-width, bidirectional
/// controls, BOM, and the line and paragraph separators, which end a line as a newline does):
/// refused in every path.
fn invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}' | '\u{FEFF}' | '\u{2028}' | '\u{2029}')
}

/// Characters a reader does not see, or sees as a blank, beyond [`invisible`]: Unicode's
/// default-ignorable code points (soft hyphen, joiners, variation selectors, tag characters,
/// Hangul fillers, ...), the interlinear annotation marks and the braille blank. A name holding
/// one could pass for another (`no\u{AD}tes.md` shows as `notes.md`), so no new name has them.
fn unseen(c: char) -> bool {
    matches!(c, '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}'..='\u{1160}'
        | '\u{17B4}'..='\u{17B5}' | '\u{180B}'..='\u{180F}' | '\u{2060}'..='\u{206F}'
        | '\u{2800}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FFA0}'
        | '\u{FFF0}'..='\u{FFFB}' | '\u{1BCA0}'..='\u{1BCA3}' | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0000}'..='\u{E0FFF}')
}

/// The script of a letter, among those whose letters look alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    Latin,
    Greek,
    Cyrillic,
}

fn script(c: char) -> Option<Script> {
    match c {
        'A'..='Z' | 'a'..='z' | '\u{00C0}'..='\u{024F}' | '\u{1E00}'..='\u{1EFF}' => {
            Some(Script::Latin)
        }
        '\u{0370}'..='\u{03FF}' | '\u{1F00}'..='\u{1FFF}' => Some(Script::Greek),
        '\u{0400}'..='\u{052F}' | '\u{1C80}'..='\u{1C8F}' | '\u{A640}'..='\u{A69F}' => {
            Some(Script::Cyrillic)
        }
        _ => None,
    }
}

/// Why `name` cannot be a new file or directory name, if it cannot.
fn confusable(name: &str) -> Option<&'static str> {
    if name.starts_with('.') {
        return Some(
            "starts with a dot: hidden names are left out of view, so they are not created",
        );
    }
    if name.starts_with(char::is_whitespace) || name.ends_with(char::is_whitespace) {
        return Some("starts or ends with a space");
    }
    if name.ends_with('.') {
        return Some("ends with a dot");
    }
    if name.chars().any(unseen) {
        return Some(
            "contains an invisible or blank character (such as a soft hyphen or a variation \
             selector), so it could pass for another name",
        );
    }
    // Word by word (a run of letters): `заметки.md` is two words, each of one script.
    let mut word: Option<Script> = None;
    let mixed = name.chars().any(|c| {
        if !c.is_alphabetic() {
            word = None;
            return false;
        }
        match (word, script(c)) {
            (Some(w), Some(s)) if w != s => true,
            (None, s) => {
                word = s;
                false
            }
            _ => false,
        }
    });
    if mixed {
        return Some(
            "mixes letters of two scripts (Latin, Greek, Cyrillic) that look alike, so it could \
             pass for another name",
        );
    }
    None
}

/// The canonical form of `raw` as the path of something new (created, renamed to, imported):
/// [`canonical`], and each name neither hidden nor confusable with another.
pub fn canonical_new(raw: &str) -> Result<String, ToolError> {
    let path = canonical(raw)?;
    for name in path.split('/').skip(2) {
        if let Some(why) = confusable(name) {
            return Err(refuse(format!(
                "The name {name:?} in path {raw} {why}: choose a plain name like notes.md"
            )));
        }
    }
    Ok(path)
}

/// The canonical form of `raw` (`/memories` or `/memories/a/b`), or the refusal to show the model.
pub fn canonical(raw: &str) -> Result<String, ToolError> {
    let folded: String = raw.nfkc().collect();
    let raw = folded.as_str();
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
    fn look_alike_names_are_one_file_or_refused() {
        let ok = |raw: &str| canonical(raw).map_err(|e| e.to_string());
        let new = |raw: &str| canonical_new(raw).map_err(|e| e.to_string());
        let nfc = "/memories/caf\u{e9}.md";
        assert_eq!(ok("/memories/cafe\u{301}.md"), Ok(nfc.to_owned()));
        assert_eq!(
            ok("/memories/\u{ff4e}otes.md"),
            Ok("/memories/notes.md".to_owned())
        );
        assert!(ok("/memories/\u{ff0e}\u{ff0e}/x").is_err());
        for refused in [
            "/memories/n\u{43e}tes.md",
            "/memories/notes.md ",
            "/memories/notes.md.",
            "/memories/.hidden",
            "/memories/a/.git/config",
        ] {
            assert!(new(refused).is_err(), "{refused:?} accepted");
            assert!(ok(refused).is_ok(), "{refused:?} still reachable to delete");
        }
        assert_eq!(
            new("/memories/заметки.md"),
            Ok("/memories/заметки.md".to_owned())
        );
        assert_eq!(new("/memories/a/b.md"), Ok("/memories/a/b.md".to_owned()));
    }

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

    #[test]
    fn invisible_and_blank_names_are_refused() {
        let new = |raw: &str| canonical_new(raw).map_err(|e| e.to_string());
        // Characters a reader does not see (soft hyphen, joiners, variation selectors, tag
        // characters, Hangul fillers, braille blank): `no\u{ad}tes.md` would pass for notes.md.
        for c in [
            '\u{ad}',
            '\u{34f}',
            '\u{61c}',
            '\u{115f}',
            '\u{1160}',
            '\u{17b4}',
            '\u{180e}',
            '\u{206a}',
            '\u{3164}',
            '\u{fe0f}',
            '\u{ffa0}',
            '\u{fff9}',
            '\u{1d173}',
            '\u{e0001}',
            '\u{e0041}',
            '\u{2800}',
        ] {
            let raw = format!("/memories/no{c}tes.md");
            let refused = new(&raw).expect_err(&format!("{:x} accepted", c as u32));
            assert!(refused.contains("invisible"), "{:x}: {refused}", c as u32);
            // A file of that name written before stays reachable, to view or delete.
            assert!(canonical(&raw).is_ok(), "{:x}", c as u32);
        }
        // Line and paragraph separators break lines like a newline: refused for every command,
        // so a name cannot forge lines of a directory view.
        for c in ['\u{2028}', '\u{2029}'] {
            let raw = format!("/memories/a{c}0B\t/memories/fake.md");
            assert!(canonical(&raw).is_err(), "{:x} accepted", c as u32);
        }
        assert_eq!(
            new("/memories/notes.md"),
            Ok("/memories/notes.md".to_owned())
        );
    }
}
