//! How the vector leg finds its candidates, and from what size it stops scanning exactly.

/// A session with at least this many rows is searched through its binary codes
/// ([`VectorLeg::Auto`]); smaller ones are scanned exactly. Measured (release, builtin-model
/// vectors, limit 50 as hybrid search asks at top 5, one core shared): exact 0.08 / 0.13 / 0.21 /
/// 2.0 ms at 2k / 5k / 10k / 100k rows, first pass 0.06 / 0.08 / 0.11 / 0.7 ms, recall@10 ≥ 0.9995.
/// Below a few thousand rows the saving is a few hundredths of a millisecond, not worth giving up
/// an exact answer.
pub const APPROX_MIN_ROWS: usize = 5_000;

/// How the vector leg finds its candidates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum VectorLeg {
    /// Exact scan for sessions below [`APPROX_MIN_ROWS`] rows, binary first pass above.
    #[default]
    Auto,
    /// Always the exact scan. Codes built before a switch to `Exact` are kept in step with the
    /// rows (so a switch back costs nothing) but none are built.
    Exact,
    /// The binary first pass at every size (for tests of the approximate path on small stores).
    Approximate,
}

impl VectorLeg {
    pub fn to_u8(self) -> u8 {
        match self {
            Self::Auto => 0,
            Self::Exact => 1,
            Self::Approximate => 2,
        }
    }

    pub fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::Exact,
            2 => Self::Approximate,
            _ => Self::Auto,
        }
    }

    /// Whether a session of `rows` rows keeps binary codes (`None`: leave them as they are).
    pub fn wants_codes(self, rows: usize) -> Option<bool> {
        match self {
            Self::Auto => Some(rows >= APPROX_MIN_ROWS),
            Self::Exact => None,
            Self::Approximate => Some(rows > 0),
        }
    }
}
