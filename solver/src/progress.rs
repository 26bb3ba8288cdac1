//! How every phase reports its progress: the [`Progress`] trait the command line's bars
//! implement (see [`crate::report::Bars`]), and [`Silent`].

/// Per-phase progress reporting (implemented by the CLI's progress bars; a no-op in tests).
pub trait Progress: Sync {
    /// Work on level `n` (of `positions` positions) begins.
    fn level(&self, _n: u32, _positions: u64) {}
    /// A new phase begins with `total` units of work.
    fn phase(&self, name: &str, total: u64);
    /// `k` more units are done.
    fn advance(&self, k: u64);
    /// What the current phase is doing now (e.g. which settling step), shown beside it.
    fn message(&self, _msg: &str) {}
}

/// Progress that reports nothing.
pub struct Silent;

impl Progress for Silent {
    fn phase(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
}
