//! The propagation of a settling step: the seed files read back in batches, and from each
//! seed, depth first by un-moves, everything that follows at the step (a lost child makes an
//! unsettled predecessor won; a won one makes a losable predecessor run the loss test). The
//! positions it settles go to the step's log (see `log`).

use awari_db::{Board, TableError};
use rayon::prelude::*;

use super::codes::{LOSABLE, WON};
use super::log::{entry, SettledLog};
use super::stream::list_batch;
use super::work_files::{SEEDS_LOST, SEEDS_WON};
use super::{TwoBit, CHUNK, PER_WORD};
use crate::progress::Progress;
use crate::seed_records::decode_seeds;
use crate::settle::seed_boards;

/// Seeds propagated together from one chunk's list (their boards are held at once).
const SEED_SLICE: usize = 4096;
/// Settled positions whose predecessors are generated together (see [`TwoBit::propagate`]).
const BATCH: usize = 24;

impl TwoBit<'_> {
    /// The propagation of step `i`: the seed files read back in batches, each batch's
    /// records propagated in parallel; every position settled goes to `log`. Returns the
    /// positions it settled.
    pub(super) fn propagate_step(
        &self,
        i: u32,
        log: &SettledLog,
        progress: &dyn Progress,
    ) -> Result<u64, TableError> {
        let mut total = 0u64;
        for name in [SEEDS_WON, SEEDS_LOST] {
            let mut reader = self.records(&self.work.join(name))?;
            loop {
                let batch = reader.batch(log.batch_bytes(list_batch()))?;
                if batch.is_empty() {
                    break;
                }
                total += batch
                    .par_iter()
                    .map(|(c, bytes)| {
                        let start = u64::from(*c) * CHUNK;
                        let seeds = decode_seeds(
                            bytes,
                            crate::seed_records::chunk_limit(*c, self.level.size()),
                        );
                        progress.advance(seeds.len() as u64);
                        let mut settled = Vec::new();
                        for slice in seeds.chunks(SEED_SLICE) {
                            let mut stack = seed_boards(&self.level, start, slice.iter().copied());
                            self.propagate(&mut stack, i, &mut settled);
                        }
                        let count = settled.len() as u64;
                        progress.advance(count);
                        log.add(&settled).map(|()| count)
                    })
                    .sum::<Result<u64, TableError>>()?;
                log.flush_if_full()?;
            }
        }
        Ok(total)
    }

    /// Settle, depth first, everything that follows at the current step from the settled
    /// positions on `stack` (won: true). Software-pipelined, each stage a batch behind the
    /// one before, so that the cache misses of one batch overlap the work of the others: the
    /// predecessors of a batch of settled positions are generated and their states
    /// prefetched; those states are read (a lost child settles an unsettled predecessor as
    /// won; a won one starts the loss test of a losable predecessor); a loss test reads one
    /// child per batch, each ranked and prefetched a batch before it is read, and ends at the
    /// first child not won (most do at the first). Each position settled goes to `settled` as
    /// a log entry of step `step`.
    fn propagate(&self, stack: &mut Vec<(Board, bool)>, step: u32, settled: &mut Vec<u64>) {
        let mut ready: Vec<(u64, Board, bool, u8)> = Vec::with_capacity(BATCH * 8);
        let mut next: Vec<(u64, Board, bool, u8)> = Vec::with_capacity(BATCH * 8);
        // Loss tests under way: the predecessor, its board, the pit skipped (its move to the
        // won child), and the pit and index of the child to read next.
        let mut tests: Vec<(u64, Board, u8, u8, u64)> = Vec::with_capacity(BATCH * 8);
        let mut next_tests: Vec<(u64, Board, u8, u8, u64)> = Vec::with_capacity(BATCH * 8);
        // The next child of a test from pit `from` on, prefetched and queued; `false` when the
        // test has no child left (then every child is won: the predecessor is lost).
        let queue = |q: u64, pred: Board, skip: u8, from: u8, out: &mut Vec<_>| -> bool {
            match pred.next_quiet_child(self.rules, &self.level, from, Some(skip)) {
                Some((pit, c)) => {
                    self.state.prefetch((c / PER_WORD) as usize);
                    out.push((q, pred, skip, pit, c));
                    true
                }
                None => false,
            }
        };
        loop {
            let k = stack.len().saturating_sub(BATCH);
            for (board, won) in stack.drain(k..) {
                board.for_each_ranked_predecessor_pit(self.rules, &self.level, |q, pred, h| {
                    self.state.prefetch((q / PER_WORD) as usize);
                    next.push((q, pred, won, h));
                });
            }
            for &(q, pred, skip, pit, c) in &tests {
                if self.code(c) == WON
                    && !queue(q, pred, skip, pit + 1, &mut next_tests)
                    && self.settle(q, false)
                {
                    settled.push(entry(q, step, false));
                    stack.push((pred, false));
                }
            }
            tests.clear();
            for &(q, pred, child_won, h) in &ready {
                let now = if !child_won {
                    // A child lost: the predecessor wins.
                    self.settle(q, true)
                } else {
                    // The won child may have been its only one.
                    self.code(q) == LOSABLE
                        && !queue(q, pred, h, 0, &mut next_tests)
                        && self.settle(q, false)
                };
                if now {
                    settled.push(entry(q, step, !child_won));
                    stack.push((pred, !child_won));
                }
            }
            ready.clear();
            std::mem::swap(&mut ready, &mut next);
            std::mem::swap(&mut tests, &mut next_tests);
            if ready.is_empty() && tests.is_empty() && stack.is_empty() {
                return;
            }
        }
    }
}
