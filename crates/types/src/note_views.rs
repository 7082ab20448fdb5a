//! How the gateway protocol shows the user's notes: a note ([`NoteView`]), one of its versions
//! ([`NoteVersionView`]) with where it came from ([`ProvenanceView`]), and a deleted note that
//! can still be restored ([`DeletedNoteView`]), and how a search read the time its words speak of
//! ([`TimeReadView`]). Times are RFC 3339 UTC, except a reading's, which are in the user's zone.

use serde::{Deserialize, Serialize};

/// A saved note as shown to the user. `edit_token` (a hash of the text, `version` on the wire of
/// protocol 1) changes whenever the text does; `edit_note` must name the current one. A note's
/// numbered versions are its history's ([`NoteVersionView::version`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteView {
    pub note_id: String,
    pub text: String,
    #[serde(rename = "version")]
    pub edit_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    pub created_at: String,
    pub updated_at: String,
    /// Where the current text came from; absent for notes written before provenance was
    /// recorded. A note with `confirmed: false` is left out of automatic recall until
    /// `confirm_note`. Boxed: a note rides in many server frames, which stay small.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Box<ProvenanceView>>,
    /// For an unconfirmed note changed after untrusted input: the text the user last confirmed,
    /// which recall shows until the change is confirmed (what `confirm_note` would replace).
    /// Boxed, like `provenance`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_text: Option<Box<str>>,
}

/// One text a note has had. `version` counts from 1 (the first save) and is what
/// `restore_note` takes; `edit_token` is the note's [`NoteView::edit_token`] while this text is current.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteVersionView {
    pub version: u32,
    pub text: String,
    pub edit_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// When this text was written.
    pub saved_at: String,
    /// When the next version replaced it; absent for the current (or last) text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_at: Option<String>,
    /// Where this text came from; absent for notes written before provenance was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<ProvenanceView>,
}

/// Where a text came from: `origin` is `user`, `model`, `file`, `shell`, `web`, `import`, `mcp`
/// or `cli`; `confirmed` is false for text saved after untrusted tool output (kept out of
/// automatic recall until `confirm_note`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProvenanceView {
    pub origin: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    pub confirmed: bool,
}

/// A deleted note that `restore_note` can still bring back, until `purge_after`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeletedNoteView {
    pub note: NoteView,
    pub deleted_at: String,
    pub purge_after: String,
}

/// How a search read the time its words speak of ("last week", "before the trip"): the span it
/// ranks first, `[from, until)` in the user's time zone (RFC 3339 with that zone's offset; either
/// side absent when open), and the same said in words. A search whose words name no time (or an
/// event no memory dates) carries none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeReadView {
    /// The query's words that said it: `before the trip`.
    pub phrase: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// The IANA name of the zone it was read in.
    pub timezone: String,
    /// `read "before the trip" as before 3 March 2025 (when "Trip to Lisbon" was saved)`.
    pub read: String,
}
