//! `runner memory audit [--since T] [--limit N] [--before ID] [--json]`: the user's audit log of
//! memory operations from every surface (agent, MCP, CLI, gateway), newest first, a page at a
//! time (so a flood of reads never pushes a write out of view). Rows never hold note text.
//! Fields a caller chose (client name, namespace, key, note id, reason) are printed through
//! [`crate::out::field`]: a `\n`, `\r` or escape sequence in them shows as an escape, so it can
//! neither start a fake row nor drive the terminal (`--raw` prints them as stored).

use std::io::Write;

use anyhow::{Result, bail};
use memory::{AuditQuery, AuditRecord, MAX_AUDIT_ROWS, MemoryStore};

use crate::memory_organise;

/// Which page of the log to print.
#[derive(Debug, Clone, Default)]
pub(crate) struct AuditArgs<'a> {
    pub since: Option<&'a str>,
    /// The row id below which to start (the cursor a cut page names).
    pub before: Option<i64>,
    pub limit: usize,
}

pub(crate) async fn print(
    store: &MemoryStore,
    args: AuditArgs<'_>,
    json: bool,
    raw: bool,
    out: &mut impl Write,
) -> Result<()> {
    if !(1..=MAX_AUDIT_ROWS).contains(&args.limit) {
        bail!(
            "--limit must be between 1 and {MAX_AUDIT_ROWS}, got {}",
            args.limit
        );
    }
    let since = args.since.map(memory_organise::since).transpose()?;
    let query = AuditQuery {
        since,
        before: args.before,
        limit: args.limit,
    };
    let page = store.audit().audit_page(&query).await?;
    let rows = &page.rows;
    if json {
        crate::out::write_json(out, rows)?;
    } else {
        for row in rows {
            writeln!(out, "{}", line(row, raw))?;
        }
    }
    if let Some(before) = page.next_before {
        let note = format!(
            "(the newest {} rows; older rows: --before {before})",
            rows.len()
        );
        // In JSON the note goes to stderr, so stdout stays one JSON array.
        if json {
            writeln!(std::io::stderr(), "{note}")?;
        } else {
            writeln!(out, "{note}")?;
        }
    }
    Ok(())
}

/// `<time> <surface>[/<client>] <tool> <operation> <namespace> <key or note> <outcome>[ (<reason>)]
/// [redacted kind=n ...]`.
fn line(row: &AuditRecord, raw: bool) -> String {
    let mut parts = vec![
        row.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        match &row.client {
            Some(client) => format!("{}/{client}", row.surface),
            None => row.surface.clone(),
        },
        row.tool.clone(),
        row.operation.clone(),
        row.namespace.clone().unwrap_or_else(|| "-".into()),
        row.note_id
            .clone()
            .or_else(|| row.key.clone())
            .unwrap_or_else(|| "-".into()),
        match &row.reason {
            Some(reason) => format!("{} ({reason})", row.outcome),
            None => row.outcome.clone(),
        },
    ];
    if !row.redactions.is_empty() {
        let counts: Vec<String> = row
            .redactions
            .iter()
            .map(|(k, n)| format!("{k}={n}"))
            .collect();
        parts.push(format!("redacted {}", counts.join(",")));
    }
    crate::out::field(&parts.join(" "), raw).into_owned()
}
