//! `runner memory audit [--since T] [--json]`: the user's audit log of memory operations from
//! every surface (agent, MCP, CLI, gateway), oldest first. Rows never hold note text. Fields a
//! caller chose (client name, namespace, key, note id, reason) are printed through
//! [`crate::out::field`]: a `\n`, `\r` or escape sequence in them shows as an escape, so it can
//! neither start a fake row nor drive the terminal (`--raw` prints them as stored).

use std::io::Write;

use anyhow::Result;
use memory::{AuditRecord, MAX_AUDIT_ROWS, MemoryStore};

use crate::memory_organise;

pub(crate) async fn print(
    store: &MemoryStore,
    since: Option<&str>,
    json: bool,
    raw: bool,
    out: &mut impl Write,
) -> Result<()> {
    let since = since.map(memory_organise::since).transpose()?;
    let rows = store.audit_log(since, MAX_AUDIT_ROWS).await?;
    if json {
        return crate::out::write_json(out, &rows);
    }
    for row in &rows {
        writeln!(out, "{}", line(row, raw))?;
    }
    if rows.len() == MAX_AUDIT_ROWS {
        writeln!(
            out,
            "(the first {MAX_AUDIT_ROWS} rows; pass a later --since for the rest)"
        )?;
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
