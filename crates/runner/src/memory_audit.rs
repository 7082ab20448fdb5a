//! `runner memory audit [--since T] [--json]`: the user's audit log of memory operations from
//! every surface (agent, MCP, CLI, gateway), oldest first. Rows never hold note text.
//!
//! Also what the CLI's own writes share with every other surface: the `cli` surface's secret
//! policy (secrets refused by default, with the same detector as the tools) and an audit row
//! inside the write's transaction.

use std::io::Write;

use anyhow::{Result, bail};
use memory::{AuditRecord, CallKey, MAX_AUDIT_ROWS, MemoryStore};
use tools::governance::{NOTES_NAMESPACE, pii};
use types::{AuditTag, CallSurface, GovernanceConfig, Operation, SecretAction, Surface};

use crate::memory_organise;

/// The key of a CLI write: no call id (not idempotent), audited as the `cli` surface.
pub(crate) fn cli_write(command: &str, key: Option<&str>) -> CallKey {
    CallKey::audit_only(AuditTag {
        surface: CallSurface::new(Surface::Cli).with_client("runner"),
        tool: format!("memory {command}"),
        operation: Operation::Write.as_str(),
        namespace: Some(NOTES_NAMESPACE.to_owned()),
        key: key.map(str::to_owned),
        redactions: Vec::new(),
    })
}

/// Refuses text holding a secret unless `[governance.surfaces.cli] secrets = "redact"`, and then
/// returns it redacted.
pub(crate) fn screen(config: &GovernanceConfig, text: &str) -> Result<String> {
    let has_secret = pii::find(text)
        .iter()
        .any(|f| f.kind == pii::PiiKind::Secret);
    if !has_secret {
        return Ok(text.to_owned());
    }
    match config.surfaces.policy(Surface::Cli).secrets {
        SecretAction::Reject => bail!(
            "this looks like a secret (an API key, token, password or private key): keep secrets \
             out of memory; nothing was saved"
        ),
        SecretAction::Redact => Ok(pii::redact(text, |k| k == pii::PiiKind::Secret).0),
    }
}

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
