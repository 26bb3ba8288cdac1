//! The value check of a depth pass (`verify --prove`, [`DepthPass::check_values`]): in wave 0,
//! every entry recomputed from its children and compared with the stored one.

use std::sync::atomic::Ordering::Relaxed;

use awari_db::Board;

use super::wave_zero::CaptureBits;
use super::{DepthPass, Inconsistent};

impl DepthPass<'_> {
    /// Recompute entry `idx` (its board, stored value `v`, terminal value if the game is over,
    /// whether a capture achieves `v`, the indices of its quiet children) from its children,
    /// recording a mismatch; returns
    /// whether a quiet move achieves `v`.
    ///
    /// Its value by the rules is its terminal value, or the best over its moves of
    /// `captures − value(child)`. So the stored value is right exactly when it is the terminal
    /// value, or when no move gives more (no capture exceeded it in the stream, no quiet child
    /// here) and some move gives it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn check_entry(
        &self,
        idx: u64,
        board: &Board,
        v: i8,
        terminal: Option<i8>,
        by_capture: bool,
        quiet: &[u64],
        captures: &CaptureBits,
    ) -> bool {
        let (what, optimal_quiet) = match terminal {
            Some(t) => (
                (t != v).then(|| format!("stored {v}, recomputed {t} (terminal)")),
                false,
            ),
            None => {
                let (mut best, mut optimal) = (i8::MIN, false);
                for &c in quiet {
                    let m = -self.values.get(c);
                    best = best.max(m);
                    optimal |= m == v;
                }
                let what = if captures.get(&captures.exceeded, idx) {
                    Some(format!("stored {v}, but a capture gives more"))
                } else if best > v {
                    Some(format!("stored {v}, recomputed {best} (a quiet move)"))
                } else if !(by_capture || optimal) {
                    Some(format!("stored {v}, but no move gives it"))
                } else {
                    None
                };
                (what, optimal)
            }
        };
        if let Some(what) = what {
            self.mismatches.fetch_add(1, Relaxed);
            let mut ex = self.mismatch_examples.lock().expect("no panic holds it");
            if ex.len() < self.check.unwrap_or(0) {
                ex.push(Inconsistent {
                    index: idx,
                    board: *board,
                    what,
                });
            }
        }
        optimal_quiet
    }
}
