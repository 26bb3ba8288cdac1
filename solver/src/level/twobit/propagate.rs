//! The propagation of a settling step: the seed files read back in batches, and from each
//! seed, depth first by un-moves, everything that follows at the step (a lost child makes an
//! unsettled predecessor won; a won one makes a losable predecessor run the loss test). The
//! positions it settles go to the step's log (see `log`).
//!
//! **With depths** the step settles in waves instead, as the class pass of `crate::depth`
//! does a value class: the seeds are wave 0, and wave k's entries settle wave k+1, each
//! position of it at depth k+1 (its plies to conversion), in two halves:
//!
//! 1. the won entries: each losable predecessor runs the loss test, and is lost if every
//!    child is won. The wins of wave k+1 are not made yet, so a child won at depth k+1 fails
//!    the test: a loser's depth is one more than its deepest child's. A loss made now fails
//!    the tests that read it, as an unsettled child would;
//! 2. the lost entries: each unsettled predecessor is won (no loss test runs in this half).
//!
//! What a wave settles goes, besides the log with its depth, to two [`SpillingSet`]s (won,
//! lost), spilled to `wave-KKKKK.won-S` and `wave-KKKKK.lost-S` where they outgrow their
//! share of the log's memory, and read back in chunk order as the next wave's entries. The
//! step ends at a wave that settles nothing. The positions a step settles, and so the
//! values, are those of the depth-first propagation.
//!
//! With one bit (see `codes`) a loss is published: its predecessors are claimed won a batch
//! before itself is claimed lost (the lost seeds of the stream are not claimed yet), and a
//! position with an exit that passes the loss test is a candidate (see `candidates`), whose
//! rounds follow the seeds.

use awari_db::{Board, TableError};
use rayon::prelude::*;
use std::sync::atomic::Ordering::Relaxed;

use super::budget;
use super::codes::StateBits;
use super::log::{entry, SettledLog};
use super::stream::list_batch;
use super::work_files::{SEEDS_LOST, SEEDS_WON, WAVE_LOST, WAVE_WON};
use super::{TwoBit, CHUNK};
use crate::position_set::{Merged, SpillingSet};
use crate::progress::Progress;
use crate::seed_records::{decode_seeds, RecordReader};
use crate::settle::seed_boards;

/// Seeds propagated together from one chunk's list (their boards are held at once).
const SEED_SLICE: usize = 4096;
/// Entries a thread gathers (positions settled, candidates found) before it hands them on to
/// the log and the candidates.
const HAND_ON: usize = 1 << 14;
/// Settled positions whose predecessors are generated together (see [`TwoBit::propagate`]).
const BATCH: usize = 24;

/// With depths: the wave being settled, its depth and where its positions go.
pub(super) struct Wave<'w> {
    depth: u16,
    won: &'w SpillingSet,
    lost: &'w SpillingSet,
}

/// Chunks and their entries: offsets, and whether won.
type EntryBatch = Vec<(u32, Vec<(u32, bool)>)>;

/// A wave's entries of one sign, a batch of chunks at a time: a seed file (wave 0) or what
/// the wave before found.
enum Entries<'r> {
    File(RecordReader<'r>),
    /// What a wave found, and whether it is won.
    Found(Merged<'static>, bool),
}

impl Entries<'_> {
    /// The next chunks' entries (offsets, and whether won), about `bytes` of records' worth.
    fn batch(&mut self, bytes: usize, size: u64) -> Result<EntryBatch, TableError> {
        match self {
            Entries::File(reader) => Ok(reader
                .batch(bytes)?
                .into_iter()
                .map(|(c, body)| {
                    let seeds = decode_seeds(&body, crate::seed_records::chunk_limit(c, size));
                    (c, seeds)
                })
                .collect()),
            Entries::Found(merged, won) => {
                let mut out = Vec::new();
                let mut held = 0;
                while held < bytes {
                    let Some((c, offsets)) = merged.next_chunk()? else {
                        break;
                    };
                    held += offsets.len();
                    out.push((c, offsets.into_iter().map(|k| (k, *won)).collect()));
                }
                Ok(out)
            }
        }
    }
}

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
        if self.depths {
            return self.propagate_waves(i, log, progress);
        }
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
                        self.propagate_chunk(*c, &seeds, i, log, progress, None)
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

    /// The propagation of step `i` in waves (see the module documentation), with depths.
    /// Returns the positions it settled; the waves it took are counted in `self.waves`.
    fn propagate_waves(
        &self,
        i: u32,
        log: &SettledLog,
        progress: &dyn Progress,
    ) -> Result<u64, TableError> {
        let size = self.level.size();
        let capacity = budget::wave_set_bytes(self.level.seeds(), self.bucket, self.bits);
        let bytes = log.batch_bytes(list_batch(self.bits));
        let mut entries = [
            Entries::File(self.records(&self.work.join(SEEDS_WON))?),
            Entries::File(self.records(&self.work.join(SEEDS_LOST))?),
        ];
        let mut total = 0u64;
        for depth in 1u16.. {
            let stem = |sign: &str| self.work.join(format!("wave-{depth:05}.{sign}"));
            let won = SpillingSet::new(stem(WAVE_WON), size, capacity);
            let lost = SpillingSet::new(stem(WAVE_LOST), size, capacity);
            let wave = Wave {
                depth,
                won: &won,
                lost: &lost,
            };
            let mut settled = 0u64;
            // The won entries first: their loss tests must not see this wave's wins.
            for source in entries.iter_mut() {
                loop {
                    let batch = source.batch(bytes, size)?;
                    if batch.is_empty() {
                        break;
                    }
                    settled += batch
                        .par_iter()
                        .map(|(c, seeds)| {
                            // The entries of later waves were counted when settled.
                            if depth == 1 {
                                progress.advance(seeds.len() as u64);
                            }
                            self.propagate_chunk(*c, seeds, i, log, progress, Some(&wave))
                        })
                        .sum::<Result<u64, TableError>>()?;
                    log.flush_if_full()?;
                }
            }
            self.waves.fetch_add(1, Relaxed);
            total += settled;
            // Spill files are written once and read back once (not synced: never resumed).
            let spilled = won.spilled_bytes() + lost.spilled_bytes();
            self.io.written.fetch_add(spilled, Relaxed);
            self.io.read.fetch_add(spilled, Relaxed);
            // The spill files of the wave before are read: they go.
            if depth > 1 {
                for stem in [WAVE_WON, WAVE_LOST] {
                    remove_spills(&self.work, depth - 1, stem)?;
                }
            }
            if settled > 0 && depth == u16::MAX {
                return Err(TableError::Io {
                    path: self.work.clone(),
                    source: std::io::Error::other(format!(
                        "step {i} of level {}: a wave {} plies from conversion, past the \
                         depths a table holds",
                        self.level.seeds(),
                        u16::MAX
                    )),
                });
            }
            if settled == 0 {
                drop(entries);
                for stem in [WAVE_WON, WAVE_LOST] {
                    remove_spills(&self.work, depth, stem)?;
                }
                break;
            }
            entries = [
                Entries::Found(won.merged()?, true),
                Entries::Found(lost.merged()?, false),
            ];
        }
        Ok(total)
    }

    /// Propagate the `seeds` of chunk `c` (offsets in increasing order, won: true) at step
    /// `i`; what it settles goes to `log`, the candidates it finds to theirs, and with depths
    /// (`wave`) to the wave's sets instead of on down. Returns the positions it settled.
    pub(super) fn propagate_chunk(
        &self,
        c: u32,
        seeds: &[(u32, bool)],
        i: u32,
        log: &SettledLog,
        progress: &dyn Progress,
        wave: Option<&Wave>,
    ) -> Result<u64, TableError> {
        let start = u64::from(c) * CHUNK;
        let mut settled = Vec::new();
        let mut found = Vec::new();
        // With depths: the positions settled (position × 2 + won), for the next wave.
        let mut next: Vec<u64> = Vec::new();
        let mut count = 0;
        let mut hand_on = |settled: &mut Vec<u64>, found: &mut Vec<u64>, next: &mut Vec<u64>| {
            self.candidates.add(found);
            found.clear();
            if let Some(w) = wave {
                let (mut won, mut lost): (Vec<u64>, Vec<u64>) =
                    next.iter().partition(|&&e| e & 1 == 1);
                for e in won.iter_mut().chain(lost.iter_mut()) {
                    *e >>= 1;
                }
                w.won.add(&mut won);
                w.lost.add(&mut lost);
                next.clear();
            }
            count += settled.len() as u64;
            progress.advance(settled.len() as u64);
            let added = log.add(settled);
            settled.clear();
            added
        };
        let depth = wave.map(|w| w.depth);
        for slice in seeds.chunks(SEED_SLICE) {
            let mut stack = seed_boards(&self.level, start, slice.iter().copied());
            self.propagate(&mut stack, i, &mut settled, &mut found, depth, &mut next);
            // A thread's share of the memory stays small whatever the chunk settles.
            if settled.len() >= HAND_ON || found.len() >= HAND_ON || next.len() >= HAND_ON {
                hand_on(&mut settled, &mut found, &mut next)?;
            }
        }
        hand_on(&mut settled, &mut found, &mut next)?;
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
    /// the module documentation) and the candidates found go to `found`. In a wave (`wave`:
    /// its depth) nothing settled goes on the stack, whose positions are the wave's entries,
    /// but to `grown`, as position × 2 + won.
    #[allow(clippy::too_many_arguments)]
    fn propagate(
        &self,
        stack: &mut Vec<(Board, bool)>,
        step: u32,
        settled: &mut Vec<u64>,
        found: &mut Vec<u64>,
        wave: Option<u16>,
        grown: &mut Vec<u64>,
    ) {
        let depth = wave.unwrap_or(0);
        let one_bit = self.bits == StateBits::One;
        // One bit: the lost positions whose predecessors are generated in this batch (`next`)
        // and in the batch before (`ready`), claimed once those are.
        let mut claim_next: Vec<u64> = Vec::new();
        let mut claim_ready: Vec<u64> = Vec::new();
        // A loss test of `q` passed: settle it (two bits), or publish it or make it a
        // candidate (one bit: after reading `q` unsettled again).
        let mut lost = |q: u64,
                        pred: Board,
                        settled: &mut Vec<u64>,
                        stack: &mut Vec<_>,
                        grown: &mut Vec<u64>| {
            if !one_bit {
                if self.settle(q, false) {
                    settled.push(entry(q, step, false, depth));
                    if wave.is_some() {
                        grown.push(q << 1);
                    } else {
                        stack.push((pred, false));
                    }
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
                    lost(q, pred, settled, stack, grown);
                }
            }
            tests.clear();
            for &(q, pred, child_won, h) in &ready {
                if !child_won {
                    // A child lost: the predecessor wins.
                    if self.settle(q, true) {
                        settled.push(entry(q, step, true, depth));
                        if wave.is_some() {
                            grown.push(q << 1 | 1);
                        } else {
                            stack.push((pred, true));
                        }
                    }
                } else if self.may_lose(q) && !queue(q, pred, h, 0, &mut next_tests) {
                    // The won child was its only one.
                    lost(q, pred, settled, stack, grown);
                }
            }
            ready.clear();
            // Their predecessors claimed: the losses published.
            for q in claim_ready.drain(..) {
                if self.settle(q, false) {
                    settled.push(entry(q, step, false, 0));
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

/// Remove the spill files of wave `depth`'s set `stem` (`WAVE_WON`, `WAVE_LOST`).
fn remove_spills(work: &std::path::Path, depth: u16, stem: &str) -> Result<(), TableError> {
    let prefix = format!("wave-{depth:05}.{stem}");
    let io = |source| TableError::Io {
        path: work.to_path_buf(),
        source,
    };
    for e in std::fs::read_dir(work).map_err(io)? {
        let e = e.map_err(io)?;
        if e.file_name().to_string_lossy().starts_with(&prefix) {
            std::fs::remove_file(e.path()).map_err(io)?;
        }
    }
    Ok(())
}
