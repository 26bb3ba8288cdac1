//! The in-memory algorithm on one rank's slice of a distributed level (see the module
//! above): exits by a forward pass and a windowed, exchanged stream of the lower levels;
//! settling in rounds, the updates for other ranks' slices sent at the end of each.

use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use awari_db::{Board, Level, Levels, Rules};
use rayon::prelude::*;

use super::{
    all_ok, end_round, exchange, exit_word, settle_word, Outbox, Partition, RankCost, Traffic,
    ROUND, WINDOW, WRITE_BLOCK,
};
use crate::build::level::{Algorithm, Sink, Solved};
use crate::build::BuildError;
use crate::comm::Comm;
use crate::exits::{forward_words, CaptureStream, ExitsStats};
use crate::grain::MOVE_TASK;
use crate::progress::Progress;
use crate::settle::{
    propagate_diverting, raise_exit, scan_seeds, seed_boards, update_word, value_of, BuilderError,
    Settle,
};
use crate::state::StateArray;

/// The in-memory algorithm on one rank's slice of the level in progress.
pub(super) struct InMemorySlice<'p> {
    slice: Slice<'p>,
    comm: &'p dyn Comm,
    stream: CaptureStream<'p>,
    /// What the communication cost, and the seconds of settling.
    pub(super) cost: RankCost,
}

/// The state of one rank's slice: 2 bytes a position.
struct Slice<'p> {
    level: Level,
    rules: Rules,
    lo: u64,
    state: StateArray,
    part: &'p Partition,
    me: usize,
}

impl Settle for Slice<'_> {
    const PREFETCHES: bool = cfg!(target_arch = "x86_64");

    #[inline]
    fn touch(&self, q: u64) -> u64 {
        u64::from(self.state.words()[(q - self.lo) as usize].load(Relaxed))
    }

    #[inline]
    fn prefetch(&self, q: u64) {
        self.state.prefetch((q - self.lo) as usize);
    }

    #[inline]
    fn update(&self, q: u64, i: i8, child_won: bool) -> bool {
        update_word(&self.state.words()[(q - self.lo) as usize], i, child_won)
    }
}

impl<'p> InMemorySlice<'p> {
    /// Prepare this rank's slice of level `n` of `part` (every rank calls it: a rank that
    /// cannot allocate its state fails them all).
    pub(super) fn open(
        comm: &'p dyn Comm,
        n: u32,
        rules: Rules,
        lower: &'p Levels,
        part: &'p Partition,
    ) -> Result<InMemorySlice<'p>, BuildError> {
        let me = comm.rank();
        let range = part.slice(me);
        let setup = CaptureStream::new(n, rules, lower)
            .map_err(BuildError::from)
            .and_then(|stream| {
                let state = StateArray::new((range.end - range.start) as usize)
                    .map_err(BuilderError::Alloc)?;
                Ok((stream, state))
            });
        all_ok(comm, &setup)?;
        let (stream, state) = setup?;
        Ok(InMemorySlice {
            slice: Slice {
                level: Level::new(n),
                rules,
                lo: range.start,
                state,
                part,
                me,
            },
            comm,
            stream,
            cost: RankCost::default(),
        })
    }
}

impl Algorithm for InMemorySlice<'_> {
    fn solve(&mut self, progress: &dyn Progress) -> Result<Solved, BuildError> {
        let t = Instant::now();
        let slice = &self.slice;
        let len = slice.words().len() as u64;
        let ranks = self.comm.size() as u64;
        progress.phase("exits", len + self.stream.positions() / ranks);
        let mut traffic = Traffic::default();
        let exits = slice
            .compute_exits(self.comm, &self.stream, &mut traffic, progress)
            .map_err(BuildError::from);
        let exits_seconds = t.elapsed().as_secs_f64();
        all_ok(self.comm, &exits)?;
        exits?;
        progress.phase("settle", len);
        slice.settle(self.comm, &mut traffic, progress);
        self.cost = RankCost {
            traffic,
            settle_seconds: t.elapsed().as_secs_f64() - exits_seconds,
        };
        Ok(Solved::fresh(ExitsStats {
            seconds: exits_seconds,
            bytes_read: None,
            lower_bytes: crate::exits::lower_positions(slice.level.seeds()),
            passes: 1,
        }))
    }

    fn write_values(&mut self, sink: &mut Sink) -> Result<(), BuildError> {
        for block in self.slice.words().chunks(WRITE_BLOCK as usize) {
            let bytes: Vec<u8> = block
                .iter()
                .map(|w| value_of(w.load(Relaxed)) as u8)
                .collect();
            sink(&bytes)?;
        }
        Ok(())
    }
}

impl Slice<'_> {
    fn words(&self) -> &[std::sync::atomic::AtomicU16] {
        self.state.words()
    }

    /// The slice's words in parallel work items, each with the index of its first position.
    fn chunks(
        &self,
    ) -> impl IndexedParallelIterator<Item = (u64, &[std::sync::atomic::AtomicU16])> {
        let lo = self.lo;
        self.words()
            .par_chunks(MOVE_TASK as usize)
            .enumerate()
            .map(move |(c, w)| (lo + c as u64 * MOVE_TASK, w))
    }

    fn exchange(
        &self,
        comm: &dyn Comm,
        out: Vec<Vec<u64>>,
        traffic: &mut Traffic,
    ) -> Vec<Vec<u64>> {
        exchange(comm, self.me, out, traffic)
    }

    /// Phase 1 on this rank (see the module documentation).
    fn compute_exits(
        &self,
        comm: &dyn Comm,
        stream: &CaptureStream<'_>,
        traffic: &mut Traffic,
        progress: &dyn Progress,
    ) -> Result<(), awari_db::TableError> {
        forward_words(self.level, self.rules, self.chunks(), progress);
        let ranks = comm.size();
        let (lo, words) = (self.lo, self.words());
        // A corrupt lower block is reported after the last round, so that every rank still
        // takes part in every exchange.
        let mut failed = Ok(());
        for window in stream.part_windows(self.me, ranks, WINDOW) {
            let outbox = Outbox::new(ranks);
            if let Some((source, positions)) = window {
                let len = positions.end - positions.start;
                let ran = stream.run_window(source, positions, |batch| {
                    let mut remote: Vec<Vec<u64>> = vec![Vec::new(); ranks];
                    for &(q, exit) in batch {
                        let owner = self.part.owner(q);
                        if owner == self.me {
                            raise_exit(&words[(q - lo) as usize], exit);
                        } else {
                            remote[owner].push(exit_word(q, exit));
                        }
                    }
                    outbox.add(&mut remote);
                });
                failed = failed.and(ran);
                progress.advance(len);
            }
            let inbox = self.exchange(comm, outbox.take(), traffic);
            traffic.exit_rounds += 1;
            inbox.par_iter().flatten().for_each(|&w| {
                let q = w & ((1 << 56) - 1);
                raise_exit(&words[(q - lo) as usize], (w >> 56) as u8 as i8);
            });
        }
        failed
    }

    /// Apply the settling updates other ranks sent (`inbox`) and the seeds of `scan` (a range
    /// of this slice) at step `i`, propagating everything they settle here; returns the
    /// updates for other ranks, by owner, and how many positions were settled.
    fn settle_round(&self, i: i8, inbox: &[Vec<u64>], scan: Range<u64>) -> (Vec<Vec<u64>>, u64) {
        let ranks = self.part.bounds.len() - 1;
        let outbox = Outbox::new(ranks);
        let settled = std::sync::atomic::AtomicU64::new(0);
        let run = |stack: &mut Vec<(Board, bool)>, seeds: u64| {
            let mut remote: Vec<Vec<u64>> = vec![Vec::new(); ranks];
            let count = seeds
                + propagate_diverting(self, &self.level, self.rules, i, stack, &mut |q, won| {
                    let owner = self.part.owner(q);
                    if owner == self.me {
                        return false;
                    }
                    remote[owner].push(settle_word(q, won));
                    true
                });
            outbox.add(&mut remote);
            settled.fetch_add(count, Relaxed);
        };
        // Updates from the other ranks: touched first in groups, so their misses overlap.
        let incoming: Vec<u64> = inbox.concat();
        incoming.par_chunks(1 << 12).for_each(|group| {
            let mut stack = Vec::new();
            for sub in group.chunks(64) {
                let mut touch = 0u64;
                for &w in sub {
                    touch |= self.touch(w & !(1 << 63));
                }
                std::hint::black_box(touch);
                for &w in sub {
                    let (q, won) = (w & !(1 << 63), w >> 63 == 1);
                    if self.update(q, i, won) {
                        stack.push((self.level.unrank(q), !won));
                    }
                }
            }
            let seeds = stack.len() as u64;
            run(&mut stack, seeds);
        });
        // This round's part of the slice: its seeds.
        let words = &self.words()[(scan.start - self.lo) as usize..(scan.end - self.lo) as usize];
        words
            .par_chunks(MOVE_TASK as usize)
            .enumerate()
            .for_each(|(c, w)| {
                let start = scan.start + c as u64 * MOVE_TASK;
                let seeds = scan_seeds(i, w, |_| {});
                if !seeds.is_empty() {
                    let mut stack = seed_boards(&self.level, start, seeds.iter().copied());
                    run(&mut stack, seeds.len() as u64);
                }
            });
        (outbox.take(), settled.into_inner())
    }

    /// Phase 2 on this rank: steps n … 1 in rounds (see the module documentation).
    fn settle(&self, comm: &dyn Comm, traffic: &mut Traffic, progress: &dyn Progress) {
        let (lo, hi) = (self.lo, self.lo + self.words().len() as u64);
        for i in (1..=self.level.seeds() as i8).rev() {
            let mut next = lo;
            let mut inbox: Vec<Vec<u64>> = Vec::new();
            loop {
                let scan = next..(next + ROUND).min(hi);
                next = scan.end;
                let (out, settled) = self.settle_round(i, &inbox, scan);
                progress.advance(settled);
                let done;
                (inbox, done) = end_round(comm, self.me, out, hi - next, traffic);
                if done {
                    break;
                }
            }
        }
    }
}
