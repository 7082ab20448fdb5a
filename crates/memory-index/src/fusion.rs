//! Fusing the vector and keyword legs into one score in `0..=1`.
//!
//! Each leg's raw scores (cosine for vectors, negated BM25 for keywords) are first brought to
//! `0..=1` by the chosen [`Fusion`]; the fused score is the weighted sum divided by the sum of
//! the weights. A chunk missing from a leg scores 0 in it. An empty leg contributes nothing (its weight
//! still counts, so a hit found by both legs outranks one found by a single leg); a leg weighted 0 is
//! switched off. Relative normalizations never divide by zero: a flat leg (all scores equal, which
//! includes a single candidate) gives each member 1 under `MinMax`, and `s / max` is only taken for
//! `max > 0`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// The relative weight of each leg. Both ≥ 0, not both 0 (otherwise both count equally).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Weights {
    pub vector: f64,
    pub fts: f64,
}

/// The weights `[retrieval]` in `agent.toml` sets: every search surface (tools, recall, CLI) takes
/// them from here rather than copying fields by hand.
impl From<&types::RetrievalConfig> for Weights {
    fn from(config: &types::RetrievalConfig) -> Self {
        Self {
            vector: config.vector_weight,
            fts: config.fts_weight,
        }
    }
}

/// The configuration's defaults (`[retrieval]` in `agent.toml`): one source of truth.
impl Default for Weights {
    fn default() -> Self {
        Self::from(&types::RetrievalConfig::default())
    }
}

/// How each leg's raw scores are brought to `0..=1` before weighting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Fusion {
    /// The default. Vector leg: the cosine itself (already on an absolute `0..=1` scale for
    /// matches, so a weak semantic match stays weak); keyword leg: BM25 divided by the leg's best.
    /// Min-max on the vector leg stretches tiny cosine differences over the whole range and lets a
    /// barely related chunk outrank an exact keyword match.
    #[default]
    RawCosine,
    /// `(s - min) / (max - min)` per leg over the query's candidates; a flat leg gives 1.
    MinMax,
    /// `s / max` over the leg's candidates (raw scores are ≥ 0): keeps the gaps' proportions.
    MaxNorm,
    /// Reciprocal rank: `(k + 1) / (k + rank)`, rank 1 = best, so the best of a leg gives 1.
    Rrf { k: f64 },
}

/// Fused scores, best first (ties by chunk id for a stable order).
pub fn fuse(
    fusion: Fusion,
    weights: Weights,
    vector: &[(i64, f64)],
    fts: &[(i64, f64)],
) -> Vec<(i64, f64)> {
    let (wv, wf) = sanitize(weights);
    let total = wv + wf;
    let mut fused: HashMap<i64, f64> = HashMap::new();
    for (leg, weight, is_vector) in [(vector, wv, true), (fts, wf, false)] {
        // A leg weighted 0 is switched off: its candidates do not become hits.
        if weight == 0.0 {
            continue;
        }
        let normalized = match fusion {
            Fusion::RawCosine if is_vector => leg
                .iter()
                .filter(|(_, s)| s.is_finite())
                .map(|&(id, s)| (id, s.clamp(0.0, 1.0)))
                .collect(),
            Fusion::RawCosine => normalize(Fusion::MaxNorm, leg),
            other => normalize(other, leg),
        };
        for (id, score) in normalized {
            *fused.entry(id).or_default() += weight * score / total;
        }
    }
    let mut out: Vec<(i64, f64)> = fused
        .into_iter()
        .map(|(id, s)| (id, s.clamp(0.0, 1.0)))
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// Usable weights: non-finite or negative count as 0; both 0 count as equal.
pub fn sanitize(weights: Weights) -> (f64, f64) {
    let clean = |w: f64| if w.is_finite() && w > 0.0 { w } else { 0.0 };
    let (v, f) = (clean(weights.vector), clean(weights.fts));
    if v + f > 0.0 { (v, f) } else { (1.0, 1.0) }
}

/// The leg's scores in `0..=1`. `leg` is best first for `Rrf`.
fn normalize(fusion: Fusion, leg: &[(i64, f64)]) -> Vec<(i64, f64)> {
    let scores = leg.iter().map(|(_, s)| *s).filter(|s| s.is_finite());
    let max = scores.clone().fold(f64::NEG_INFINITY, f64::max);
    let min = scores.fold(f64::INFINITY, f64::min);
    // Empty legs have max < min; they are "flat" too but have no members to score.
    let flat = max - min <= f64::EPSILON * max.abs().max(1.0) || max < min;
    leg.iter()
        .enumerate()
        .filter(|(_, (_, s))| s.is_finite())
        .map(|(rank, &(id, s))| {
            let n = match fusion {
                Fusion::MinMax if flat => 1.0,
                Fusion::MinMax => (s - min) / (max - min),
                Fusion::MaxNorm | Fusion::RawCosine if max > 0.0 => (s / max).max(0.0),
                Fusion::MaxNorm | Fusion::RawCosine => 0.0,
                Fusion::Rrf { k } => {
                    let k = if k.is_finite() && k >= 0.0 { k } else { 60.0 };
                    (k + 1.0) / (k + 1.0 + rank as f64)
                }
            };
            (id, n)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Weights = Weights {
        vector: 0.7,
        fts: 0.3,
    };

    #[test]
    fn weights_come_from_the_retrieval_config() {
        let config = types::RetrievalConfig {
            vector_weight: 0.25,
            fts_weight: 0.75,
            ..types::RetrievalConfig::default()
        };
        assert_eq!(
            Weights::from(&config),
            Weights {
                vector: 0.25,
                fts: 0.75
            }
        );
        assert_eq!(
            Weights::default(),
            Weights::from(&types::RetrievalConfig::default())
        );
    }

    fn check(fusion: Fusion, vector: &[(i64, f64)], fts: &[(i64, f64)], expected: &[(i64, f64)]) {
        let got = fuse(fusion, W, vector, fts);
        assert_eq!(got.len(), expected.len(), "{got:?}");
        for ((gid, gs), (eid, es)) in got.iter().zip(expected) {
            assert_eq!(gid, eid, "{got:?}");
            assert!((gs - es).abs() < 1e-9, "{got:?} vs {expected:?}");
        }
    }

    #[test]
    fn min_max() {
        let m = Fusion::MinMax;
        check(
            m,
            &[(1, 0.9), (2, 0.5)],
            &[(2, 8.0), (3, 4.0)],
            &[(1, 0.7), (2, 0.3), (3, 0.0)],
        );
        // Empty legs: nothing from them, no NaN.
        check(m, &[], &[], &[]);
        check(m, &[(1, 0.9), (2, 0.3)], &[], &[(1, 0.7), (2, 0.0)]);
        // Flat legs: every member counts as the leg's best.
        check(m, &[(1, 0.4)], &[(1, 2.0), (2, 2.0)], &[(1, 1.0), (2, 0.3)]);
    }

    #[test]
    fn raw_cosine() {
        let r = Fusion::RawCosine;
        check(
            r,
            &[(1, 0.2), (2, 0.1)],
            &[(2, 6.0), (3, 3.0)],
            &[(2, 0.37), (3, 0.15), (1, 0.14)],
        );
        // A flat vector leg keeps its absolute level.
        check(r, &[(1, 0.05)], &[], &[(1, 0.035)]);
    }

    #[test]
    fn max_norm_and_rrf() {
        check(
            Fusion::MaxNorm,
            &[(1, 0.8), (2, 0.4)],
            &[(2, 5.0)],
            &[(1, 0.7), (2, 0.65)],
        );
        check(
            Fusion::Rrf { k: 0.0 },
            &[(1, 0.9), (2, 0.8)],
            &[(2, 3.0)],
            &[(1, 0.7), (2, 0.65)],
        );
    }

    #[test]
    fn default_weights_are_the_configuration_defaults() {
        let config = types::RetrievalConfig::default();
        assert_eq!(
            Weights::default(),
            Weights {
                vector: config.vector_weight,
                fts: config.fts_weight,
            }
        );
    }

    #[test]
    fn weights_are_sanitized() {
        let got = fuse(
            Fusion::MinMax,
            Weights {
                vector: f64::NAN,
                fts: 0.0,
            },
            &[(1, 0.5)],
            &[(2, 1.0)],
        );
        assert_eq!(got, [(1, 0.5), (2, 0.5)]);
        let keywords_only = fuse(
            Fusion::MinMax,
            Weights {
                vector: 0.0,
                fts: 1.0,
            },
            &[(1, 0.5)],
            &[(2, 1.0)],
        );
        assert_eq!(keywords_only, [(2, 1.0)]);
    }
}
