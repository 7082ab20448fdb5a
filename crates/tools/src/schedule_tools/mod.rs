//! The schedule tools: `schedule_create {when, instruction, title?}`, `schedule_list`,
//! `schedule_cancel {id}` and `schedule_pause {id, resume?}`, over the user's schedules in their
//! own store ([`memory::MemoryStore::create_schedule`] and its neighbours).
//!
//! Every call is governed like a memory call (namespace `schedules`: permission by class — a
//! create, pause or resume is a write, a cancel a delete, a list a read —, rate limits, PII and
//! secret screening of the title and instruction, an audit row in the write's own transaction);
//! none asks for approval. The user is the call's context's, never an argument: another user's
//! schedule is simply not found. [`Schedules`] is what the tools and the runtime's scheduler
//! share: the store, the settings, the clock and the wake-up the scheduler waits on.

mod cancel;
mod create;
mod list;
mod pause;
mod recurrence;
mod view;
mod when;

pub use view::{schedule_json, schedule_view};
pub use when::{When, next_run, parse_when, resolve_timezone};

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use memory::{MemoryError, MemoryStore, Origin, Provenance};
use tokio::sync::Notify;
use types::{SchedulesConfig, UntrustedInput};

use crate::spec::ToolSpec;
use crate::{MemoryAccess, ToolError};

pub const SCHEDULE_CREATE_TOOL_NAME: &str = "schedule_create";
pub const SCHEDULE_LIST_TOOL_NAME: &str = "schedule_list";
pub const SCHEDULE_CANCEL_TOOL_NAME: &str = "schedule_cancel";
pub const SCHEDULE_PAUSE_TOOL_NAME: &str = "schedule_pause";

/// The governance namespace of schedules.
pub const SCHEDULES_NAMESPACE: &str = "schedules";

/// The wall clock schedules are read against: the system's, or one a test moves.
pub trait WallClock: Send + Sync + fmt::Debug {
    fn now(&self) -> DateTime<Utc>;
}

/// The system's wall clock.
#[derive(Debug, Default)]
pub struct SystemWallClock;

impl WallClock for SystemWallClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A wall clock that stands still until moved (tests, benches).
#[derive(Debug)]
pub struct ManualWallClock(Mutex<DateTime<Utc>>);

impl ManualWallClock {
    pub fn new(at: DateTime<Utc>) -> Self {
        Self(Mutex::new(at))
    }

    pub fn set(&self, at: DateTime<Utc>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = at;
    }

    pub fn advance(&self, by: chrono::Duration) {
        let mut now = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *now += by;
    }
}

impl WallClock for ManualWallClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One user's schedules as the tools and the scheduler reach them.
#[derive(Debug, Clone)]
pub struct Schedules {
    pub store: MemoryStore,
    pub config: SchedulesConfig,
    pub timezone: Tz,
    pub clock: Arc<dyn WallClock>,
    /// Notified when a schedule is created, paused, resumed or cancelled, so that the scheduler
    /// works out its next wake-up again.
    pub wake: Arc<Notify>,
}

impl Schedules {
    /// Schedules in `store`, read in `timezone`, on the system clock.
    pub fn new(store: MemoryStore, config: SchedulesConfig, timezone: Tz) -> Self {
        Self {
            store,
            config,
            timezone,
            clock: Arc::new(SystemWallClock),
            wake: Arc::new(Notify::new()),
        }
    }

    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn WallClock>) -> Self {
        self.clock = clock;
        self
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }
}

/// The untrusted input a schedule was made after, which its runs carry (and its read-backs
/// show): the source its origin names, and for any other schedule the user has not confirmed
/// (made after an unconfirmed note was read back, or from a surface not trusted, its origin
/// staying `user`) that of a note read back. `None` for the user's own.
pub fn schedule_untrusted(provenance: &Provenance) -> Option<UntrustedInput> {
    match provenance.origin {
        Origin::File => Some(UntrustedInput::File),
        Origin::Shell => Some(UntrustedInput::Shell),
        Origin::Web => Some(UntrustedInput::Web),
        Origin::Mcp => Some(UntrustedInput::Client),
        _ if !provenance.confirmed => Some(UntrustedInput::Note),
        _ => None,
    }
}

/// The four schedule tools, as table rows.
pub(crate) static SCHEDULE_TOOLS: [&ToolSpec<Schedules>; 4] =
    [&create::SPEC, &list::SPEC, &cancel::SPEC, &pause::SPEC];

/// What a schedule call does, for governance.
fn access(operation: types::Operation, args: &serde_json::Value) -> MemoryAccess {
    let key = args.get("id").and_then(serde_json::Value::as_str);
    MemoryAccess {
        operation,
        namespace: SCHEDULES_NAMESPACE.to_owned(),
        text_fields: match operation {
            types::Operation::Write => &["title", "instruction"],
            _ => &[],
        },
        ..MemoryAccess::notes_read()
    }
    .with_key(key)
}

/// A store error as the model (or user) is told it: bad input in its own words, anything else
/// without detail.
fn schedule_error(error: MemoryError) -> ToolError {
    match error {
        MemoryError::InvalidInput(message) => ToolError::execution(message),
        other => {
            tracing::warn!(error = %other, "schedule operation failed");
            ToolError::execution("the schedules could not be reached; nothing was changed")
        }
    }
}

/// The `id` argument.
fn id_arg(args: &serde_json::Value) -> Result<&str, ToolError> {
    args.get("id")
        .and_then(serde_json::Value::as_str)
        .filter(|id| !id.trim().is_empty())
        .ok_or_else(|| ToolError::invalid("id", "the schedule's id, from schedule_list"))
}

fn id_schema(what: &str) -> serde_json::Value {
    serde_json::json!({
        "type": "string",
        "description": format!("The id of the schedule to {what} (from schedule_list), like sch-3f2b…")
    })
}
