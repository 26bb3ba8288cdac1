//! The propagation of a settling step: the seed file read back in batches, and from each
//! seed, depth first by un-moves, everything that follows at the step (a lost child makes an
//! unsettled predecessor won; a won one makes a losable predecessor run the loss test).

use std::fs::File;
use std::io::BufReader;

use awari_db::{Board, TableError};
use rayon::prelude::*;

use super::codes::{LOSABLE, WON};
use super::work_files::SeedReader;
use super::{TwoBit, CHUNK, PER_WORD};
use crate::progress::Progress;
use crate::seed_records::decode_seeds;
use crate::settle::seed_boards;

/// Seeds propagated together from one chunk's list (their boards are held at once).
const SEED_SLICE: usize = 4096;
/// Bytes of the seed file read and propagated in parallel at once.
const SEED_BATCH: usize = 4 << 20;
/// Settled positions whose predecessors are generated together (see [`TwoBit::propagate`]).
const BATCH: usize = 24;

impl TwoBit<'_> {
    /// The propagation of the current step: the seed file read back in batches, each batch's chunks
    /// propagated in parallel. Returns the positions it settled.
    pub(super) fn propagate_step(&self, progress: &dyn Progress) -> Result<u64, TableError> {
        let file = File::open(&self.seeds_path).map_err(|source| TableError::Io {
            path: self.seeds_path.clone(),
            source,
        })?;
        let mut reader = SeedReader {
            inner: BufReader::with_capacity(1 << 20, file),
            path: &self.seeds_path,
            io: &self.io,
        };
        let mut total = 0u64;
        loop {
            let batch = reader.batch(SEED_BATCH)?;
            if batch.is_empty() {
                return Ok(total);
            }
            total += batch
                .par_iter()
                .map(|(c, bytes)| {
                    let start = u64::from(*c) * CHUNK;
                    let seeds = decode_seeds(bytes);
                    progress.advance(seeds.len() as u64);
                    let mut count = 0;
                    for slice in seeds.chunks(SEED_SLICE) {
                        let mut stack = seed_boards(&self.level, start, slice.iter().copied());
                        count += self.propagate(&mut stack);
                    }
                    progress.advance(count);
                    count
                })
                .sum::<u64>();
        }
    }

    /// Settle, depth first, everything that follows at the current step from the settled
    /// positions on `stack` (won: true). Software-pipelined, each stage a batch behind the
    /// one before, so that the cache misses of one batch overlap the work of the others: the
    /// predecessors of a batch of settled positions are generated and their states
    /// prefetched; those states are read (a lost child settles an unsettled predecessor as
    /// won; a won one starts the loss test of a losable predecessor); a loss test reads one
    /// child per batch, each ranked and prefetched a batch before it is read, and ends at the
    /// first child not won (most do at the first).
    fn propagate(&self, stack: &mut Vec<(Board, bool)>) -> u64 {
        let mut count = 0u64;
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
                    self.mark_pending(q);
                    stack.push((pred, false));
                    count += 1;
                }
            }
            tests.clear();
            for &(q, pred, child_won, h) in &ready {
                let settled = if !child_won {
                    // A child lost: the predecessor wins.
                    self.settle(q, true)
                } else {
                    // The won child may have been its only one.
                    self.code(q) == LOSABLE
                        && !queue(q, pred, h, 0, &mut next_tests)
                        && self.settle(q, false)
                };
                if settled {
                    self.mark_pending(q);
                    stack.push((pred, !child_won));
                    count += 1;
                }
            }
            ready.clear();
            std::mem::swap(&mut ready, &mut next);
            std::mem::swap(&mut tests, &mut next_tests);
            if ready.is_empty() && tests.is_empty() && stack.is_empty() {
                return count;
            }
        }
    }
}
