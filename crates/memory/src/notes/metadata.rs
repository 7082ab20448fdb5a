//! What a note carries besides its text: category, tags, context, confidence and expiry.
//!
//! The metadata is stored twice in one write: as the note's JSON (exported and imported whole,
//! unknown fields kept) and as columns of `notes` (category, context, confidence, expires_at;
//! migration 4) so that filters and listing use indexes. Tags also travel in every chunk's
//! metadata, so both search legs filter on them before ranking. Everything is validated here,
//! once, whichever surface (notes tools, categorized tools, CLI import) wrote it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::MemoryError;
use crate::notes::note::Note;
use crate::notes::provenance::{Provenance, after_rewrite};
pub use memory_index::Category;

/// At most this many tags per note.
pub const MAX_TAGS: usize = 10;
/// At most this many characters per tag.
pub const MAX_TAG_CHARS: usize = 40;
/// At most this many characters of context.
pub const MAX_CONTEXT_CHARS: usize = 1000;

/// Optional facts about a note. Stored as JSON; every field is optional so that new fields can be
/// added without rewriting rows. Fields this version does not know are kept in `extra` and written
/// back unchanged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NoteMetadata {
    /// One of the known categories; an unknown value in an old row reads as none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_category"
    )]
    pub category: Option<Category>,
    /// Short labels ("travel", "project:oxydra"); filterable with `tags_any` / `tags_all`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Why the note matters, or when it was learned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// How sure the writer was, `0..=1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// After this instant the note is never returned, and the sweeper deletes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    /// Where the note came from (set by the writing surface from its context, never by a model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

fn lenient_category<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Category>, D::Error> {
    let raw = Option::<serde_json::Value>::deserialize(d)?;
    Ok(raw
        .as_ref()
        .and_then(serde_json::Value::as_str)
        .and_then(|s| s.parse().ok()))
}

impl NoteMetadata {
    /// Checks and normalises the fields (tags trimmed, deduplicated, in order).
    pub fn validated(mut self) -> Result<Self, MemoryError> {
        let mut tags: Vec<String> = Vec::with_capacity(self.tags.len());
        for tag in &self.tags {
            let tag = tag.trim();
            if tag.is_empty() || tag.chars().count() > MAX_TAG_CHARS {
                return Err(MemoryError::InvalidInput(format!(
                    "a tag must be 1 to {MAX_TAG_CHARS} characters"
                )));
            }
            if !tags.iter().any(|t| t == tag) {
                tags.push(tag.to_owned());
            }
        }
        if tags.len() > MAX_TAGS {
            return Err(MemoryError::InvalidInput(format!(
                "at most {MAX_TAGS} tags per note"
            )));
        }
        self.tags = tags;
        if let Some(context) = &self.context {
            let context = context.trim();
            if context.chars().count() > MAX_CONTEXT_CHARS {
                return Err(MemoryError::InvalidInput(format!(
                    "the context is too long (at most {MAX_CONTEXT_CHARS} characters)"
                )));
            }
            self.context = (!context.is_empty()).then(|| context.to_owned());
        }
        if let Some(c) = self.confidence
            && !(0.0..=1.0).contains(&c)
        {
            return Err(MemoryError::InvalidInput(
                "confidence must be between 0.0 and 1.0".into(),
            ));
        }
        Ok(self)
    }

    /// Whether the note has expired at `now`.
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|t| t <= now)
    }
}

/// Changes to a note's metadata made with an update; `None` keeps the field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetadataPatch {
    pub category: Option<Category>,
    pub tags: Option<Vec<String>>,
    /// `Some(None)` removes the expiry.
    pub expires_at: Option<Option<DateTime<Utc>>>,
    /// Where the new text comes from (an update in a turn that read untrusted input makes the
    /// note unconfirmed again); `None` keeps the note's provenance.
    pub provenance: Option<Provenance>,
}

impl MetadataPatch {
    pub fn is_empty(&self) -> bool {
        self.category.is_none()
            && self.tags.is_none()
            && self.expires_at.is_none()
            && self.provenance.is_none()
    }

    /// The metadata `old` has once rewritten to `content` under this patch. The patch's
    /// provenance is the new text's, except that a rewrite leaving the text as it was keeps a
    /// confirmed note confirmed ([`after_rewrite`]).
    pub(crate) fn rewrite(&self, old: &Note, content: &str) -> Result<NoteMetadata, MemoryError> {
        let mut metadata = self.apply(old.metadata.clone())?;
        metadata.provenance = after_rewrite(
            (&old.content, old.metadata.provenance.as_ref()),
            content,
            metadata.provenance,
        );
        Ok(metadata)
    }

    fn apply(&self, mut metadata: NoteMetadata) -> Result<NoteMetadata, MemoryError> {
        if let Some(category) = self.category {
            metadata.category = Some(category);
        }
        if let Some(tags) = &self.tags {
            metadata.tags = tags.clone();
        }
        if let Some(expires_at) = self.expires_at {
            metadata.expires_at = expires_at;
        }
        if let Some(provenance) = &self.provenance {
            metadata.provenance = Some(provenance.clone());
        }
        metadata.validated()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_rows_with_unknown_categories_still_read() {
        let m: NoteMetadata =
            serde_json::from_str(r#"{"category":"mood","tags":["a"],"x":1}"#).unwrap_or_default();
        assert_eq!(m.category, None);
        assert_eq!(m.tags, vec!["a".to_owned()]);
        assert!(m.extra.contains_key("x"));
    }

    #[test]
    fn validation_normalises_and_bounds() {
        let m = NoteMetadata {
            tags: vec![" a ".into(), "a".into(), "b".into()],
            context: Some("  ".into()),
            ..NoteMetadata::default()
        }
        .validated()
        .ok();
        assert_eq!(
            m.as_ref().map(|m| m.tags.clone()),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(m.and_then(|m| m.context), None);
        let bad = NoteMetadata {
            confidence: Some(1.5),
            ..NoteMetadata::default()
        };
        assert!(bad.validated().is_err());
        let many = NoteMetadata {
            tags: (0..11).map(|i| format!("t{i}")).collect(),
            ..NoteMetadata::default()
        };
        assert!(many.validated().is_err());
    }
}
