//! `runner usage --user U [--since DATE|DURATION] [--json]`: the tokens the user's agent used,
//! per model, summed over every conversation (or since a day, an instant, or a span back from
//! now such as `7d`), and what they cost at the `[pricing."<model>"]` prices of the user's
//! agent.toml. A model without a price is shown without a cost and named in the total's line.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use chrono::{DateTime, Utc};
use clap::Args;
use memory::UsageScope;
use serde::Serialize;

use crate::Global;
use crate::memory_cmd::{UserStore, give_back, open_user_store};

#[derive(Debug, Args)]
pub struct UsageArgs {
    /// Only calls at or after this day (YYYY-MM-DD), instant (RFC 3339) or span back from now
    /// (`30m`, `24h`, `7d`, `2w`).
    #[arg(long)]
    pub since: Option<String>,
    /// As JSON.
    #[arg(long)]
    pub json: bool,
    /// The workspace root holding one directory per user (default: runner.toml's workspace_root).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// agent.toml to read [memory] and [pricing] from (default: the user's).
    #[arg(long = "agent-config")]
    pub agent_config: Option<PathBuf>,
}

/// One model's line.
#[derive(Debug, Serialize)]
struct Row {
    model: String,
    prompt_tokens: u64,
    completion_tokens: u64,
    /// US dollars; `None` without a `[pricing]` entry for the model.
    cost_usd: Option<f64>,
}

pub async fn run(args: UsageArgs, global: &Global) -> Result<()> {
    // Bad input is refused before anything is opened.
    let since = args.since.as_deref().map(since).transpose()?;
    let root = args.root.clone();
    let result = match open_user_store(global, args.root, args.agent_config).await {
        Ok(us) => {
            let result = report(&us, since, args.json).await;
            us.store.close().await;
            result
        }
        Err(e) => Err(e),
    };
    give_back(root, global);
    result
}

async fn report(us: &UserStore, since: Option<DateTime<Utc>>, json: bool) -> Result<()> {
    let scope = since.map_or(UsageScope::AllSessions, UsageScope::Since);
    let rows: Vec<Row> = us
        .store
        .usage()
        .usage_by_model(&us.user, scope)
        .await?
        .into_iter()
        .map(|m| Row {
            cost_usd: us.config.pricing.get(&m.model).map(|p| p.cost(m.usage)),
            model: m.model,
            prompt_tokens: m.usage.prompt_tokens,
            completion_tokens: m.usage.completion_tokens,
        })
        .collect();
    let total: f64 = rows.iter().filter_map(|r| r.cost_usd).sum();
    let unpriced: Vec<&str> = rows
        .iter()
        .filter(|r| r.cost_usd.is_none())
        .map(|r| r.model.as_str())
        .collect();
    let mut out = std::io::stdout().lock();
    if json {
        let value = serde_json::json!({
            "user": us.user,
            "since": since,
            "models": rows,
            "total_cost_usd": total,
            "unpriced_models": unpriced,
        });
        return crate::out::write_json(&mut out, &value);
    }
    let when = since.map_or_else(
        || "all time".to_owned(),
        |t| format!("since {}", t.format("%Y-%m-%d %H:%M UTC")),
    );
    if rows.is_empty() {
        writeln!(out, "{}: no model calls recorded ({when})", us.user)?;
        return Ok(());
    }
    writeln!(out, "{}'s usage, {when}:", us.user)?;
    let width = rows.iter().map(|r| r.model.len()).max().unwrap_or(5).max(5);
    writeln!(
        out,
        "  {:<width$}  {:>12}  {:>12}  {:>10}",
        "model", "prompt", "completion", "cost"
    )?;
    for r in &rows {
        let cost = r.cost_usd.map_or_else(|| "-".to_owned(), dollars);
        writeln!(
            out,
            "  {:<width$}  {:>12}  {:>12}  {cost:>10}",
            crate::out::field(&r.model, false),
            r.prompt_tokens,
            r.completion_tokens,
        )?;
    }
    write!(out, "  total {}", dollars(total))?;
    if !unpriced.is_empty() {
        write!(
            out,
            " (not counted, no [pricing] entry: {})",
            crate::out::field(&unpriced.join(", "), false)
        )?;
    }
    writeln!(out)?;
    Ok(())
}

fn dollars(usd: f64) -> String {
    format!("${usd:.4}")
}

/// `--since`: a day, an instant, or a span back from now (`30m`, `24h`, `7d`, `2w`).
fn since(text: &str) -> Result<DateTime<Utc>> {
    let text = text.trim();
    let span = text
        .char_indices()
        .last()
        .and_then(|(at, unit)| Some((text[..at].parse::<u64>().ok()?, unit)));
    let Some((n, unit)) = span else {
        return crate::memory_organise::since(text).context(
            "--since takes a day (YYYY-MM-DD), an instant (RFC 3339) or a span such as 24h or 7d",
        );
    };
    let secs = match unit {
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        'w' => 604_800,
        _ => bail!("--since {text}: a span ends in m, h, d or w (e.g. 24h, 7d)"),
    };
    let back = n
        .checked_mul(secs)
        .and_then(|s| chrono::Duration::from_std(Duration::from_secs(s)).ok())
        .and_then(|d| Utc::now().checked_sub_signed(d))
        .with_context(|| format!("--since {text} reaches too far back"))?;
    Ok(back)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_days_instants_and_spans() {
        let day = since("2026-11-01").unwrap();
        assert_eq!(day.to_rfc3339(), "2026-11-01T00:00:00+00:00");
        let instant = since("2026-11-01T10:30:00+02:00").unwrap();
        assert_eq!(instant.to_rfc3339(), "2026-11-01T08:30:00+00:00");
        let week = Utc::now() - since("7d").unwrap();
        assert!((week.num_seconds() - 7 * 86_400).abs() < 60, "{week}");
        let hours = Utc::now() - since("24h").unwrap();
        assert!((hours.num_seconds() - 86_400).abs() < 60, "{hours}");
        for bad in ["7y", "yesterday", "", "-3d"] {
            assert!(since(bad).is_err(), "{bad}");
        }
    }
}
