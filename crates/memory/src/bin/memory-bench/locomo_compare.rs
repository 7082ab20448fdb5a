//! A LoCoMo run's per-question NDCG@10 kept in a file, and a later run's modes compared with it
//! question by question (paired Δ and its standard error, overall and per category): how a
//! change of the store's ranking is measured against the code before it.
#![allow(clippy::print_stdout, reason = "bench report")]

use std::collections::BTreeMap;

use crate::BenchResult;
use crate::locomo::Options;
use crate::stats::mean;

/// The mode every earlier run is compared through.
const BASE_MODE: &str = "hybrid (store default)";
const CATEGORIES: [u8; 4] = [1, 2, 3, 4];

type PerMode = BTreeMap<String, Vec<(u8, f64)>>;

/// Writes `per_mode` to `options.save`; compares it with `options.baseline`.
pub fn save_and_compare(
    per_mode: &[(String, Vec<(u8, f64)>)],
    options: &Options,
) -> BenchResult<()> {
    let now: PerMode = per_mode.iter().cloned().collect();
    if let Some(path) = &options.save {
        std::fs::write(path, serde_json::to_string(&now)?)
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    let Some(path) = &options.baseline else {
        return Ok(());
    };
    let raw =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let before: PerMode = serde_json::from_str(&raw)?;
    let base = before
        .get(BASE_MODE)
        .ok_or_else(|| format!("{} has no {BASE_MODE:?}", path.display()))?;
    println!(
        "\nPaired NDCG@10 Δ ± s.e. vs the store default of {}:\n",
        path.display()
    );
    println!("| mode | all | 1 multi-hop | 2 temporal | 3 open-domain | 4 single-hop |");
    println!("|---|---|---|---|---|---|");
    for (name, outcomes) in per_mode {
        if outcomes.len() != base.len() {
            return Err(format!(
                "{name}: {} questions, baseline {}",
                outcomes.len(),
                base.len()
            )
            .into());
        }
        let cells: Vec<String> = std::iter::once(None)
            .chain(CATEGORIES.map(Some))
            .map(|c| delta(outcomes, base, c))
            .collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    Ok(())
}

/// Mean paired difference ± standard error over the questions of `category` (all when `None`).
pub fn delta(now: &[(u8, f64)], base: &[(u8, f64)], category: Option<u8>) -> String {
    let d: Vec<f64> = now
        .iter()
        .zip(base)
        .filter(|((c, _), _)| category.is_none_or(|k| *c == k))
        .map(|((_, a), (_, b))| a - b)
        .collect();
    let m = mean(&d);
    let var = d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (d.len().max(2) - 1) as f64;
    format!("{m:+.3} ± {:.3}", (var / d.len().max(1) as f64).sqrt())
}
