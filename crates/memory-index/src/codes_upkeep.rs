//! Building, rebuilding and dropping a matrix's binary codes as its size and the leg want.

use super::SessionMatrix;
use crate::sign_codes::{Centring, SignCodes};
use crate::vector_leg::VectorLeg;

impl SessionMatrix {
    /// Builds, rebuilds or drops the binary codes after changes, as `leg` wants for this size.
    pub(super) fn maintain(&mut self, dims: usize, leg: VectorLeg) {
        let rows = self.ids.len();
        let Some(wanted) = leg.wants_codes(rows) else {
            return;
        };
        if !wanted {
            self.signs = None;
        } else if self.signs.as_ref().is_none_or(|s| s.is_stale(rows)) {
            let started = std::time::Instant::now();
            // What live probes learnt of the queries stays true of the grown session.
            let learnt = self.signs.as_ref().map_or(0.0, SignCodes::learnt_share);
            let signs = SignCodes::build(&self.codes, &self.scales, dims, Centring::Mean);
            signs.raise(learnt);
            let share = signs.needed_share();
            self.signs = Some(signs);
            tracing::debug!(
                rows,
                share,
                elapsed = ?started.elapsed(),
                "built and measured the binary codes"
            );
        }
    }
}
