//! Small statistics: percentiles, ranking metrics, a seeded random generator, process memory.

/// Nearest-rank percentile of `values` (sorted here); 0 for an empty slice.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// NDCG@k with binary relevance: `ranked[i]` tells whether the i-th result is relevant;
/// `relevant` is the number of relevant documents that exist.
pub fn ndcg_at(ranked: &[bool], relevant: usize, k: usize) -> f64 {
    let gain = |rank: usize| 1.0 / ((rank + 2) as f64).log2();
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .filter(|(_, r)| **r)
        .map(|(i, _)| gain(i))
        .sum();
    let ideal: f64 = (0..relevant.min(k)).map(gain).sum();
    if ideal > 0.0 { dcg / ideal } else { 0.0 }
}

/// Share of the `relevant` documents found in the first `k` results.
pub fn recall_at(ranked: &[bool], relevant: usize, k: usize) -> f64 {
    let found = ranked.iter().take(k).filter(|r| **r).count();
    if relevant > 0 {
        found as f64 / relevant as f64
    } else {
        0.0
    }
}

/// splitmix64: tiny, seeded, good enough for synthetic data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..1`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.unit() * n as f64) as usize % n.max(1)
    }

    /// Skewed towards small indices (a rough Zipf): frequent words come first in their lists.
    pub fn skewed(&mut self, n: usize) -> usize {
        (self.unit().powf(2.2) * n as f64) as usize % n.max(1)
    }

    pub fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words.get(self.skewed(words.len())).copied().unwrap_or("")
    }
}

/// Resident set size of this process in bytes (`VmRSS` of `/proc/self/status`), 0 if unknown.
pub fn rss_bytes() -> u64 {
    status_kib("VmRSS:")
}

/// Peak resident memory of this process so far (`VmHWM`).
pub fn peak_rss_bytes() -> u64 {
    status_kib("VmHWM:")
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// A directory under the system temp dir, removed when dropped.
#[derive(Debug)]
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(label: &str) -> std::io::Result<Self> {
        let dir = std::env::temp_dir().join(format!(
            "memory-bench-{}-{label}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(Self(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics() {
        assert_eq!(percentile(&[3.0, 1.0, 2.0, 4.0], 50.0), 2.0);
        assert_eq!(percentile(&[3.0, 1.0, 2.0, 4.0], 95.0), 4.0);
        assert_eq!(ndcg_at(&[true, false], 1, 10), 1.0);
        assert!((ndcg_at(&[false, true], 1, 10) - 1.0 / 3f64.log2()).abs() < 1e-12);
        assert_eq!(recall_at(&[false, true, false], 2, 10), 0.5);
    }
}
