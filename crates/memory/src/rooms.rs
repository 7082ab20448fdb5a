//! The store's rooms: views of one [`MemoryStore`] for what is not a note operation — the
//! `/memories` files, keyed notes, sessions (with their summaries), the audit log, token usage and
//! upkeep, schedules. Each is a borrowed handle (`store.files().read_file(..)`); the note operations
//! themselves are the store's own verbs.

use std::ops::Deref;

use crate::memory_store::MemoryStore;

macro_rules! room {
    ($(#[$doc:meta])* $name:ident, $method:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name<'a>(&'a MemoryStore);

        impl Deref for $name<'_> {
            type Target = MemoryStore;

            fn deref(&self) -> &MemoryStore {
                self.0
            }
        }

        impl MemoryStore {
            $(#[$doc])*
            pub fn $method(&self) -> $name<'_> {
                $name(self)
            }
        }
    };
}

room!(
    /// The `/memories` file tree: notes with a path (`notes/paths.rs`).
    Files,
    files
);
room!(
    /// Keyed notes per namespace (MCP `putMemory`; `notes/keyed.rs`).
    Keys,
    keys
);
room!(
    /// Sessions, their events and rolling summaries (`notes/sessions.rs`, `notes/summary.rs`).
    Sessions,
    sessions
);
room!(
    /// The audit log of governed calls (`notes/audit.rs`).
    Audit,
    audit
);
room!(
    /// Token usage per model call (`notes/usage.rs`).
    UsageLog,
    usage
);
room!(
    /// Upkeep: stats, expiry sweeps, tombstone purges, re-embedding, erasing, and the policy
    /// settings they apply.
    Upkeep,
    upkeep
);
room!(
    /// Schedules and their runs' notifications (`notes/schedules.rs`, `notes/schedule_runs.rs`).
    Schedules,
    schedules
);
room!(
    /// Capture's progress per session and the proposals waiting for the user (`notes/capture.rs`).
    Captures,
    captures
);
