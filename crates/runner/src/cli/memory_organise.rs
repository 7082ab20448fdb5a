//! The organising side of `runner memory`: `--category`/`--tag` filters, `list` pages (and what
//! expired), and `export` with filters as JSON Lines or Markdown.

use std::io::Write;

use anyhow::{Context, Result};
use chrono::{DateTime, NaiveDate, Utc};
use memory::{Category, ListQuery, MemoryStore, Note, QueryFilters};
use types::UserId;

use crate::args::Organise;
use crate::out::{field, write_json};

pub fn category(o: &Organise) -> Result<Option<Category>> {
    o.category
        .as_deref()
        .map(str::parse::<Category>)
        .transpose()
        .context("invalid --category")
}

/// The search filters of `--category` and `--tag` (any of the tags).
pub fn filters(o: &Organise) -> Result<QueryFilters> {
    Ok(QueryFilters {
        category: category(o)?,
        tags_any: o.tags.clone(),
        ..QueryFilters::default()
    })
}

/// One note on one line; its text and tags with control characters as escapes unless `raw`.
fn line(note: &Note, raw: bool) -> String {
    let mut labels = String::new();
    if let Some(c) = note.metadata.category {
        labels.push_str(&format!(" [{c}]"));
    }
    if !note.metadata.tags.is_empty() {
        let tags = note.metadata.tags.join(" #");
        labels.push_str(&format!(" #{}", field(&tags, raw)));
    }
    format!(
        "{}  {}{labels}  {}",
        note.note_id,
        note.created_at.format("%Y-%m-%d %H:%M"),
        field(&note.content, raw)
    )
}

pub struct ListArgs {
    pub organise: Organise,
    pub limit: usize,
    pub cursor: Option<String>,
    pub expired: bool,
    pub json: bool,
    pub raw: bool,
}

/// How `export` writes: JSON Lines, or Markdown (`raw`: notes' text as stored, control
/// characters and all).
#[derive(Debug, Clone, Copy)]
pub struct ExportFormat {
    pub markdown: bool,
    pub raw: bool,
}

pub async fn list(
    store: &MemoryStore,
    user: &UserId,
    args: ListArgs,
    out: &mut impl Write,
) -> Result<()> {
    if args.expired {
        let notes = store.upkeep().list_expired(user).await?;
        if args.json {
            write_json(out, &notes)?;
        } else {
            for note in &notes {
                let at = note
                    .metadata
                    .expires_at
                    .map(|t| t.to_rfc3339())
                    .unwrap_or_default();
                writeln!(out, "{}  (expired {at})", line(note, args.raw))?;
            }
        }
        return Ok(());
    }
    let query = ListQuery {
        category: category(&args.organise)?,
        tags_any: args.organise.tags.clone(),
        limit: args.limit,
        cursor: args.cursor,
    };
    let page = store.list(user, &query).await?;
    if args.json {
        write_json(out, &page)?;
        return Ok(());
    }
    for note in &page.notes {
        writeln!(out, "{}", line(note, args.raw))?;
    }
    match &page.next_cursor {
        Some(c) => writeln!(out, "({} total; next page: --cursor {c})", page.total)?,
        None => writeln!(out, "({} total)", page.total)?,
    }
    Ok(())
}

pub(crate) fn since(text: &str) -> Result<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    let day = NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .context("--since takes an RFC 3339 instant or a day YYYY-MM-DD")?;
    Ok(day.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
}

pub async fn export(
    store: &MemoryStore,
    user: &UserId,
    organise: &Organise,
    since_text: Option<&str>,
    format: ExportFormat,
    out: &mut impl Write,
) -> Result<()> {
    let wanted = category(organise)?;
    let since = since_text.map(since).transpose()?;
    let notes: Vec<Note> = store
        .export_notes(user)
        .await?
        .into_iter()
        .filter(|n| wanted.is_none() || n.metadata.category == wanted)
        .filter(|n| {
            organise.tags.is_empty() || n.metadata.tags.iter().any(|t| organise.tags.contains(t))
        })
        .filter(|n| since.is_none_or(|s| n.created_at >= s))
        .collect();
    if !format.markdown {
        for note in &notes {
            write_json(out, note)?;
        }
        return Ok(());
    }
    let raw = format.raw;
    // A body keeps its newlines (each continues the list item), nothing else raw.
    let body = |text: &str| match raw {
        true => text.to_owned(),
        false => types::terminal::escape_text(text).into_owned(),
    };
    writeln!(out, "# Memory of {user}")?;
    let groups = Category::ALL.map(Some).into_iter().chain([None]);
    for group in groups {
        let members: Vec<&Note> = notes
            .iter()
            .filter(|n| n.metadata.category == group)
            .collect();
        if members.is_empty() {
            continue;
        }
        let title = group.map_or("Uncategorized".to_owned(), |c| {
            let s = c.as_str();
            format!("{}{}", s[..1].to_uppercase(), &s[1..])
        });
        writeln!(out, "\n## {title}\n")?;
        for note in members {
            write!(out, "- {}", body(note.content.trim()).replace('\n', "\n  "))?;
            if !note.metadata.tags.is_empty() {
                let tags = note.metadata.tags.join(", ");
                write!(out, " (tags: {})", field(&tags, raw))?;
            }
            writeln!(out)?;
            if let Some(context) = &note.metadata.context {
                writeln!(out, "  Context: {}", field(context, raw))?;
            }
            if let Some(at) = note.metadata.expires_at {
                writeln!(out, "  Expires: {}", at.to_rfc3339())?;
            }
        }
    }
    Ok(())
}
