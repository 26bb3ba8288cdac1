//! The propagation of a settling step: the seed files read back in batches, and from each
//! seed, depth first by un-moves, everything that follows at the step (a lost child makes an
//! unsettled predecessor won; a won one makes a losable predecessor run the loss test). The
//! positions it settles go to the step's log (see `log`).
//!
//! With one bit (see `codes`) a loss is published: its predecessors are claimed won a batch
//! before itself is claimed lost (the lost seeds of the stream are not claimed yet), and a
//! position with an exit that passes the loss test is a candidate (see `candidates`), whose
//! rounds follow the seeds.

use awari_db::{Board, TableError};
use rayon::prelude::*;

use super::codes::StateBits;
use super::log::{entry, SettledLog};
use super::stream::list_batch;
use super::work_files::{SEEDS_LOST, SEEDS_WON};
use super::{TwoBit, CHUNK};
use crate::progress::Progress;
use crate::seed_records::decode_seeds;
use crate::settle::seed_boards;

/// Seeds propagated together from one chunk's list (their boards are held at once).
const SEED_SLICE: usize = 4096;
/// Entries a thread gathers (positions settled, candidates found) before it hands them on to
/// the log and the candidates.
const HAND_ON: usize = 1 << 14;
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
                let batch = reader.batch(log.batch_bytes(list_batch(self.bits)))?;
                if batch.is_empty() {
                    break;
                }
                total += batch
                    .par_iter()
                    .map(|(c, bytes)| {
                        let seeds = decode_seeds(
                            bytes,
                            crate::seed_records::chunk_limit(*c, self.level.size()),
                        );
                        progress.advance(seeds.len() as u64);
                        self.propagate_chunk(*c, &seeds, i, log, progress)
                    })
                    .sum::<Result<u64, TableError>>()?;
                log.flush_if_full()?;
                if self.bits == StateBits::One && self.candidates.full() {
                    self.spill_candidates()?;
                }
            }
        }
        if self.bits == StateBits::One {
            total += self.resolve_candidates(i, log, progress)?;
        }
        Ok(total)
    }

    /// Propagate the `seeds` of chunk `c` (offsets in increasing order, won: true) at step
    /// `i`; what it settles goes to `log`, the candidates it finds to theirs. Returns the
    /// positions it settled.
    pub(super) fn propagate_chunk(
        &self,
        c: u32,
        seeds: &[(u32, bool)],
        i: u32,
        log: &SettledLog,
        progress: &dyn Progress,
    ) -> Result<u64, TableError> {
        let start = u64::from(c) * CHUNK;
        let mut settled = Vec::new();
        let mut found = Vec::new();
        let mut count = 0;
        let mut hand_on = |settled: &mut Vec<u64>, found: &mut Vec<u64>| {
            self.candidates.add(found);
            found.clear();
            count += settled.len() as u64;
            progress.advance(settled.len() as u64);
            let added = log.add(settled);
            settled.clear();
            added
        };
        for slice in seeds.chunks(SEED_SLICE) {
            let mut stack = seed_boards(&self.level, start, slice.iter().copied());
            self.propagate(&mut stack, i, &mut settled, &mut found);
            // A thread's share of the memory stays small whatever the chunk settles.
            if settled.len() >= HAND_ON || found.len() >= HAND_ON {
                hand_on(&mut settled, &mut found)?;
            }
        }
        hand_on(&mut settled, &mut found)?;
        Ok(count)
    }

    /// Settle, depth first, everything that follows at the current step from the settled
    /// positions on `stack` (won: true). Software-pipelined, each stage a batch behind the
    /// one before, so that the cache misses of one batch overlap the work of the others: the
    /// predecessors of a batch of settled positions are generated and their states
    /// prefetched; those states are read (a lost child settles an unsettled predecessor as
    /// won; a won one starts the loss test of a losable predecessor); a loss test reads one
    /// child per batch, each ranked and prefetched a batch before it is read, and ends at the
    /// first child not won (most do at the first). Each position settled goes to `settled` as
    /// a log entry of step `step`. With one bit a lost position on the stack is published (see
    /// the module documentation) and the candidates found go to `found`.
    fn propagate(
        &self,
        stack: &mut Vec<(Board, bool)>,
        step: u32,
        settled: &mut Vec<u64>,
        found: &mut Vec<u64>,
    ) {
        let one_bit = self.bits == StateBits::One;
        // One bit: the lost positions whose predecessors are generated in this batch (`next`)
        // and in the batch before (`ready`), claimed once those are.
        let mut claim_next: Vec<u64> = Vec::new();
        let mut claim_ready: Vec<u64> = Vec::new();
        // A loss test of `q` passed: settle it (two bits), or publish it or make it a
        // candidate (one bit: after reading `q` unsettled again).
        let mut lost = |q: u64, pred: Board, settled: &mut Vec<u64>, stack: &mut Vec<_>| {
            if !one_bit {
                if self.settle(q, false) {
                    settled.push(entry(q, step, false));
                    stack.push((pred, false));
                }
            } else if !self.is_settled(q) {
                if pred.has_exit(self.rules) {
                    found.push(q);
                } else {
                    stack.push((pred, false));
                }
            }
        };
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
                    self.prefetch_state(c);
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
                    self.prefetch_state(q);
                    next.push((q, pred, won, h));
                });
                if one_bit && !won {
                    claim_next.push(self.level.rank(&board).expect("a board of the level"));
                }
            }
            for &(q, pred, skip, pit, c) in &tests {
                if self.child_won(c) && !queue(q, pred, skip, pit + 1, &mut next_tests) {
                    lost(q, pred, settled, stack);
                }
            }
            tests.clear();
            for &(q, pred, child_won, h) in &ready {
                if !child_won {
                    // A child lost: the predecessor wins.
                    if self.settle(q, true) {
                        settled.push(entry(q, step, true));
                        stack.push((pred, true));
                    }
                } else if self.may_lose(q) && !queue(q, pred, h, 0, &mut next_tests) {
                    // The won child was its only one.
                    lost(q, pred, settled, stack);
                }
            }
            ready.clear();
            // Their predecessors claimed: the losses published.
            for q in claim_ready.drain(..) {
                if self.settle(q, false) {
                    settled.push(entry(q, step, false));
                }
            }
            std::mem::swap(&mut ready, &mut next);
            std::mem::swap(&mut tests, &mut next_tests);
            std::mem::swap(&mut claim_ready, &mut claim_next);
            if ready.is_empty() && tests.is_empty() && stack.is_empty() && claim_ready.is_empty() {
                return;
            }
        }
    }
}
