//! `memory_search` results as the model sees them: one JSON object within a per-call budget.
//!
//! Results go in rank order. A note is shown **whole** (its full text and its `version`, which
//! `memory_update` needs) when it fits in what is left of the budget after keeping a small slot for
//! each later result; otherwise it is shown as an excerpt (its best-matching part) marked
//! `"partial": true` with the note's full `length` in characters, and without a version, so it
//! cannot be replaced by text written from the excerpt. A result that cannot fit even as an excerpt
//! is left out and counted in `"omitted"`. The output therefore never reaches the registry's cap
//! and is never cut inside the JSON.

use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;
use memory::{HitSource, SearchHit, edit_token};
use serde_json::{Value, json};

use crate::DEFAULT_OUTPUT_LIMIT;

/// Bytes the rendered results may take: the registry's cap less room for the envelope.
pub(crate) const SEARCH_BUDGET: usize = DEFAULT_OUTPUT_LIMIT - 1024;
/// Longest excerpt of a result that is not shown whole, in bytes.
const EXCERPT_BYTES: usize = 600;
/// Room kept for each later result while deciding whether a note can be shown whole.
const SLOT_PER_LATER_RESULT: usize = 420;

const PARTIAL_NOTE: &str = "Results with \"partial\": true show only an excerpt of a longer note \
    and carry no version: before memory_update, search again with a more specific query or \
    top_k 1 to see that note whole with its version.";
const OMITTED_NOTE: &str = "Some results were left out to fit (see \"omitted\"): search with a \
    more specific query or a smaller top_k to see them.";

/// The results within `budget` bytes, dated in the user's time zone `tz`; `extra` is a note to
/// add (e.g. a skipped search leg).
pub(crate) fn render(hits: &[SearchHit], budget: usize, extra: Option<&str>, tz: Tz) -> String {
    render_shown(hits, budget, extra, tz).text
}

/// `t` as the model reads a result's date: RFC 3339 in the user's time zone, the zone the
/// query's words about time were read in ("yesterday" is the user's yesterday, and so is the
/// day a result says). In UTC a message said at 08:00 on 3 March in Tokyo read as 2 March.
pub(crate) fn local_time(t: DateTime<Utc>, tz: Tz) -> String {
    t.with_timezone(&tz)
        .to_rfc3339_opts(SecondsFormat::Secs, /*use_z*/ true)
}

/// Rendered results, and which hit each shows.
pub(crate) struct Rendered {
    pub(crate) text: String,
    /// For each result, in order, the index of its hit (those left out to fit have none).
    pub(crate) shown: Vec<usize>,
}

/// [`render`], saying which hit each result shows.
pub(crate) fn render_shown(
    hits: &[SearchHit],
    budget: usize,
    extra: Option<&str>,
    tz: Tz,
) -> Rendered {
    let mut results = Vec::new();
    let mut shown = Vec::new();
    let (mut used, mut omitted, mut partial) = (0, 0usize, false);
    for (i, hit) in hits.iter().enumerate() {
        let later = hits.len() - i - 1;
        let reserve = later * SLOT_PER_LATER_RESULT;
        let whole = whole_entry(hit, tz);
        let fits = |entry: &Value, reserve: usize| used + size(entry) + reserve <= budget;
        let entry = match whole {
            Some(entry) if fits(&entry, reserve) => entry,
            _ => {
                let entry = excerpt_entry(hit, tz);
                if fits(&entry, 0) {
                    partial |= entry.get("partial").is_some();
                    entry
                } else {
                    omitted += 1;
                    continue;
                }
            }
        };
        used += size(&entry);
        results.push(entry);
        shown.push(i);
    }
    let mut out = json!({ "results": results });
    let mut notes: Vec<&str> = Vec::new();
    if omitted > 0 {
        out["omitted"] = json!(omitted);
        notes.push(OMITTED_NOTE);
    }
    if partial {
        notes.push(PARTIAL_NOTE);
    }
    notes.extend(extra);
    if !notes.is_empty() {
        out["note"] = json!(notes.join(" "));
    }
    Rendered {
        text: out.to_string(),
        shown,
    }
}

fn size(entry: &Value) -> usize {
    entry.to_string().len() + 1
}

fn base(hit: &SearchHit, text: &str, tz: Tz) -> Value {
    let mut entry = json!({
        "note_id": hit.note_id,
        "text": text,
        "score": (hit.score * 10_000.0).round() / 10_000.0,
        "source": hit.source.as_str(),
        "created_at": local_time(hit.created_at, tz),
        "updated_at": local_time(hit.updated_at, tz),
    });
    if let Some(category) = hit.category {
        entry["category"] = json!(category.as_str());
    }
    if !hit.tags.is_empty() {
        entry["tags"] = json!(hit.tags);
    }
    if hit.unconfirmed {
        entry["unconfirmed"] = json!(true);
    }
    entry
}

/// The mark of a rendered result that shows something the user has not confirmed (a note, a
/// schedule: see [`crate::Tool::untrusted_in`]): read back, it is untrusted text like a note.
/// A key of the JSON, so an item's own text cannot fake or hide it (quotes are escaped inside
/// strings).
pub(crate) fn shows_unconfirmed(output: &str) -> Option<types::UntrustedInput> {
    output
        .contains("\"unconfirmed\":true")
        .then_some(types::UntrustedInput::Note)
}

/// A note with its whole text and version (`None` when the whole text is not known).
fn whole_entry(hit: &SearchHit, tz: Tz) -> Option<Value> {
    match hit.source {
        HitSource::UserMemory => {
            let text = hit.note_text.as_deref()?;
            let mut entry = base(hit, text, tz);
            entry["version"] = json!(edit_token(text));
            if let Some(confirmed) = &hit.confirmed_text {
                entry["confirmed_text"] = json!(confirmed);
            }
            Some(entry)
        }
        // Messages cannot be updated: their best part is what the model needs.
        HitSource::Conversation => Some(base(hit, &hit.text, tz)),
    }
}

/// The best-matching part, at most [`EXCERPT_BYTES`], marked partial when it is not everything.
fn excerpt_entry(hit: &SearchHit, tz: Tz) -> Value {
    let excerpt = &hit.text[..hit.text.floor_char_boundary(EXCERPT_BYTES)];
    let mut entry = base(hit, excerpt, tz);
    if let Some(confirmed) = &hit.confirmed_text {
        entry["confirmed_text"] = json!(&confirmed[..confirmed.floor_char_boundary(EXCERPT_BYTES)]);
    }
    let whole_len = hit.note_text.as_deref().map(|t| t.chars().count());
    let is_whole = hit.note_text.as_deref() == Some(excerpt);
    if hit.source == HitSource::UserMemory && !is_whole {
        entry["partial"] = json!(true);
        if let Some(len) = whole_len {
            entry["length"] = json!(len);
        }
    } else if excerpt.len() < hit.text.len() {
        entry["partial"] = json!(true);
    }
    if is_whole && let Some(text) = &hit.note_text {
        entry["version"] = json!(edit_token(text));
    }
    entry
}
