//! Validated identifiers: the vocabulary of who (user), where (session), when (turn) and what (note).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why an identifier was rejected. The message says what a valid one looks like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("{kind} must not be empty")]
    Empty { kind: &'static str },
    #[error("{kind} is longer than {max} bytes")]
    TooLong { kind: &'static str, max: usize },
    #[error(
        "{kind} may only contain letters, digits, '-', '_', '.' and '@', and must not start with '.' or '-'"
    )]
    BadCharacters { kind: &'static str },
    #[error("{kind} must not contain control characters")]
    ControlCharacters { kind: &'static str },
    #[error("note ids look like note-<uuid>, e.g. note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f")]
    BadNoteId,
}

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(value: String) -> Result<Self, IdError> {
                Self::parse(&value)
            }
        }

        impl std::str::FromStr for $name {
            type Err = IdError;
            fn from_str(value: &str) -> Result<Self, IdError> {
                Self::parse(value)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

string_id!(
    /// A user of the platform. Safe to use as a directory name: ASCII letters, digits, `-`, `_`,
    /// `.`, `@`; never starting with `.`; 1 to 64 bytes.
    UserId
);
string_id!(
    /// A conversation session, or a user's memory namespace `memory:{user_id}`.
    SessionId
);
string_id!(
    /// One turn (a user message and everything the agent does in answer).
    TurnId
);
string_id!(
    /// A saved note: `note-<uuid v4>`, stable across updates.
    NoteId
);

impl UserId {
    pub const MAX_LEN: usize = 64;

    pub fn parse(value: &str) -> Result<Self, IdError> {
        const KIND: &str = "user id";
        if value.is_empty() {
            return Err(IdError::Empty { kind: KIND });
        }
        if value.len() > Self::MAX_LEN {
            return Err(IdError::TooLong {
                kind: KIND,
                max: Self::MAX_LEN,
            });
        }
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@');
        // A leading '-' would read as an option on a command line (`runner --user -x`).
        if value.starts_with(['.', '-']) || !value.chars().all(allowed) {
            return Err(IdError::BadCharacters { kind: KIND });
        }
        Ok(Self(value.to_owned()))
    }
}

/// Printable text without control characters, bounded in length.
fn parse_text_id(kind: &'static str, value: &str, max: usize) -> Result<String, IdError> {
    if value.is_empty() {
        return Err(IdError::Empty { kind });
    }
    if value.len() > max {
        return Err(IdError::TooLong { kind, max });
    }
    if value.chars().any(char::is_control) {
        return Err(IdError::ControlCharacters { kind });
    }
    Ok(value.to_owned())
}

impl SessionId {
    pub const MAX_LEN: usize = 128;
    /// Prefix of every user memory namespace.
    pub const MEMORY_PREFIX: &'static str = "memory:";

    pub fn parse(value: &str) -> Result<Self, IdError> {
        parse_text_id("session id", value, Self::MAX_LEN).map(Self)
    }

    /// The session holding the user's saved notes: `memory:{user_id}`.
    pub fn user_memory(user: &UserId) -> Self {
        Self(format!("{}{}", Self::MEMORY_PREFIX, user))
    }

    /// True for a `memory:{user}` namespace, false for a conversation.
    pub fn is_user_memory(&self) -> bool {
        self.0.starts_with(Self::MEMORY_PREFIX)
    }
}

impl TurnId {
    pub const MAX_LEN: usize = 128;

    pub fn parse(value: &str) -> Result<Self, IdError> {
        parse_text_id("turn id", value, Self::MAX_LEN).map(Self)
    }
}

impl NoteId {
    pub const PREFIX: &'static str = "note-";

    /// Accepts exactly `note-` followed by a hyphenated lowercase or uppercase uuid.
    pub fn parse(value: &str) -> Result<Self, IdError> {
        let uuid = value.strip_prefix(Self::PREFIX).ok_or(IdError::BadNoteId)?;
        let groups: Vec<&str> = uuid.split('-').collect();
        let lengths = [8, 4, 4, 4, 12];
        let well_formed = groups.len() == lengths.len()
            && groups
                .iter()
                .zip(lengths)
                .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()));
        if !well_formed {
            return Err(IdError::BadNoteId);
        }
        Ok(Self(value.to_ascii_lowercase()))
    }

    /// Builds a note id from a uuid rendered as 36 hyphenated hex characters.
    pub fn from_uuid_str(uuid: &str) -> Result<Self, IdError> {
        Self::parse(&format!("{}{uuid}", Self::PREFIX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_user(input: &str, ok: bool) {
        assert_eq!(UserId::parse(input).is_ok(), ok, "user id {input:?}");
    }

    #[test]
    fn user_ids() {
        for good in ["alice", "bob-2", "a.b_c@d", "A1", "a-", "_x"] {
            check_user(good, true);
        }
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "-",
            "-rf",
            "--help",
            "a/b",
            "a\\b",
            "a b",
            "x\0",
            "ü",
            &"a".repeat(65),
        ] {
            check_user(bad, false);
        }
    }

    #[test]
    fn note_ids() {
        let id = NoteId::parse("note-3F2B5C1E-8d4a-4b6f-9c2d-1a2b3c4d5e6f").unwrap();
        assert_eq!(id.as_str(), "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f");
        for bad in [
            "",
            "note-",
            "3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f",
            "note-xyz",
            "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6",
            "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6g",
        ] {
            assert_eq!(NoteId::parse(bad), Err(IdError::BadNoteId), "{bad:?}");
        }
    }

    #[test]
    fn memory_namespace() {
        let alice = UserId::parse("alice").unwrap();
        let ns = SessionId::user_memory(&alice);
        assert_eq!(ns.as_str(), "memory:alice");
        assert!(ns.is_user_memory());
        assert!(!SessionId::parse("chat-1").unwrap().is_user_memory());
        assert!(SessionId::parse("a\nb").is_err());
    }

    #[test]
    fn serde_validates() {
        assert!(serde_json::from_str::<UserId>("\"../etc\"").is_err());
        let id: UserId = serde_json::from_str("\"alice\"").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"alice\"");
    }
}
