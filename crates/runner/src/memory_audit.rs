//! `runner memory audit [--since T] [--json]`: the user's audit log of memory operations from
//! every surface (agent, MCP, CLI, gateway), oldest first. Rows never hold note text.

use std::io::Write;

use anyhow::Result;
use memory::{AuditRecord, MAX_AUDIT_ROWS, MemoryStore};

use crate::memory_organise;

pub(crate) async fn print(
    store: &MemoryStore,
    since: Option<&str>,
    json: bool,
    out: &mut impl Write,
) -> Result<()> {
    let since = since.map(memory_organise::since).transpose()?;
    let rows = store.audit_log(since, MAX_AUDIT_ROWS).await?;
    if json {
        serde_json::to_writer(&mut *out, &rows)?;
        writeln!(out)?;
        return Ok(());
    }
    for row in &rows {
        writeln!(out, "{}", line(row))?;
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
fn line(row: &AuditRecord) -> String {
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
    parts.join(" ")
}
