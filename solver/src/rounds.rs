//! Settling in rounds, for levels whose state is far larger than the caches.
//!
//! Depth-first propagation ([`crate::level::propagate`]) updates each predecessor the moment
//! it is generated: a read-modify-write at a random place of the state, prefetched while the
//! next predecessors are generated. That hides the misses while the state is a few hundred
//! megabytes, and less and less beyond: at level 27 (2 GiB of state) a perf profile of the
//! development machine puts half the time on the prefetch instructions themselves, and
//! settling took 97–104 s depth first against 86–87 s in rounds.
//!
//! A round takes a slice of the settled positions waiting to be propagated and works in two
//! parallel phases:
//!
//! ```text
//!  settled boards ──generate──▶ per thread, per region of 2^shift indices:
//!                   (un-moves,    [ (offset in region | child-won flag, predecessor) … ]
//!                    ranked)                        │
//!                                                   ▼ apply: each thread owns a range
//!                                                     of regions, and applies every
//!                                                     thread's updates for them
//!  newly settled boards ◀─────────────────────────────┘
//! ```
//!
//! 1. **Generate.** Each thread un-moves its share of the boards and appends every
//!    predecessor, with its offset and the flag, to that thread's list for the region of the
//!    level holding the predecessor's index. The lists are written in order, so this phase
//!    touches no state at all.
//! 2. **Apply.** Each thread owns a range of regions and applies every thread's updates for
//!    them. A region's words belong to one thread alone, so an update is a plain load and store
//!    ([`Settle::update_owned`]); its misses fall within one region, in a stream the task
//!    prefetches ahead of. The predecessors it settles are the next rounds' boards.
//!
//! The order in which a step's updates are applied changes nothing (see [`crate::level`]: a
//! step settles the attractor of its seeds, each position at ±i), so the tables are the same
//! bytes as depth-first propagation writes, which the tests check.

use awari_db::{Board, Level, Rules};
use rayon::prelude::*;

use crate::level::Settle;

/// Settled positions whose predecessors one round generates (about 3.5 updates each: 15 MiB
/// of update lists, which stay in the last-level cache between the two phases).
const ROUND: usize = 1 << 18;
/// The child-won flag of an update (the offset in its region is below it).
const WON: u32 = 1 << 31;
/// Regions hold at most 2^24 positions (the offset and the flag fit 32 bits), at least 2^12.
const SHIFT_RANGE: (u32, u32) = (12, 24);
/// Regions to aim for, at least (and 4 per thread), so that the apply phase balances across
/// threads; the blocks being filled, one per region and thread, stay a few megabytes.
const REGIONS: u64 = 64;

/// One predecessor update: the offset of the predecessor's index in its region (with [`WON`]
/// set when the child was won) and the predecessor's board.
#[derive(Clone, Copy, Default)]
struct Update {
    key: u32,
    board: Board,
}

/// Updates per block of a region's list (8 KiB).
const BLOCK: usize = 512;

/// One thread's share of a round, its buffers reused from round to round: once the largest
/// round so far has been seen, rounds allocate nothing.
#[derive(Default)]
struct Share {
    /// Per region, the updates this thread generated, in blocks of [`BLOCK`]: the full
    /// blocks, then the one being filled.
    full: Vec<Vec<Vec<Update>>>,
    filling: Vec<Vec<Update>>,
    /// Empty blocks, for the next round.
    spare: Vec<Vec<Update>>,
    /// The predecessors this thread's apply phase settled.
    found: Vec<(Board, bool)>,
}

impl Share {
    /// Append `u` to region `r`'s list.
    #[inline]
    fn push(&mut self, r: usize, u: Update) {
        let block = &mut self.filling[r];
        if block.len() == BLOCK {
            let fresh = self
                .spare
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(BLOCK));
            self.full[r].push(std::mem::replace(block, fresh));
        }
        self.filling[r].push(u);
    }

    /// Region `r`'s updates, block by block.
    fn blocks(&self, r: usize) -> impl Iterator<Item = &[Update]> {
        self.full[r]
            .iter()
            .chain(std::iter::once(&self.filling[r]))
            .map(Vec::as_slice)
    }

    /// Empty every list, keeping the blocks for the next round.
    fn clear(&mut self) {
        for (full, filling) in self.full.iter_mut().zip(&mut self.filling) {
            filling.clear();
            for mut block in full.drain(..) {
                block.clear();
                self.spare.push(block);
            }
        }
    }
}

/// The reusable buffers of the rounds of one level (see the module documentation).
pub(crate) struct Rounds {
    /// Settled positions per round.
    size: usize,
    /// Regions are `1 << shift` positions.
    shift: u32,
    regions: usize,
    /// One per thread of the pool.
    shares: Vec<Share>,
}

impl Rounds {
    /// Buffers for a level of `size` positions, on the current thread pool.
    pub(crate) fn new(size: u64) -> Rounds {
        Rounds::with_size(size, ROUND)
    }

    /// Buffers for a level of `size` positions, in rounds of `round` settled positions (the
    /// tests make them small, to have many).
    pub(crate) fn with_size(size: u64, round: usize) -> Rounds {
        let threads = rayon::current_num_threads().max(1);
        let target = (size / REGIONS.max(4 * threads as u64)).max(1);
        let shift = target.ilog2().clamp(SHIFT_RANGE.0, SHIFT_RANGE.1);
        let regions = (size >> shift) as usize + 1;
        let share = || Share {
            full: (0..regions).map(|_| Vec::new()).collect(),
            filling: (0..regions).map(|_| Vec::with_capacity(BLOCK)).collect(),
            ..Share::default()
        };
        Rounds {
            size: round.max(1),
            shift,
            regions,
            shares: (0..threads).map(|_| share()).collect(),
        }
    }

    /// Settled positions per round: what [`Rounds::run`] should be given at once.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// One round of step `i`: apply to their predecessors the news that `settled` (boards
    /// with their flags: true, won by i; false, lost by i) were settled, and append to
    /// `found` the predecessors this settles, with their flags.
    pub(crate) fn run<S: Settle>(
        &mut self,
        state: &S,
        level: &Level,
        rules: Rules,
        i: i8,
        settled: &[(Board, bool)],
        found: &mut Vec<(Board, bool)>,
    ) {
        let (shift, regions) = (self.shift, self.regions);
        let mask = (1u64 << shift) - 1;
        let threads = self.shares.len();
        let per_share = settled.len().div_ceil(threads);
        self.shares
            .par_iter_mut()
            .enumerate()
            .for_each(|(t, share)| {
                let from = (t * per_share).min(settled.len());
                for &(board, won) in &settled[from..(from + per_share).min(settled.len())] {
                    let flag = if won { WON } else { 0 };
                    board.for_each_ranked_predecessor(rules, level, |q, pred| {
                        let u = Update {
                            key: (q & mask) as u32 | flag,
                            board: pred,
                        };
                        share.push((q >> shift) as usize, u);
                    });
                }
            });
        // Thread t owns regions t·R/T .. (t+1)·R/T and applies every thread's updates of them.
        let mut outs: Vec<Vec<(Board, bool)>> = self
            .shares
            .iter_mut()
            .map(|s| std::mem::take(&mut s.found))
            .collect();
        let shares = &self.shares;
        outs.par_iter_mut().enumerate().for_each(|(t, out)| {
            out.clear();
            for r in regions * t / threads..regions * (t + 1) / threads {
                let base = (r as u64) << shift;
                for block in shares.iter().flat_map(|s| s.blocks(r)) {
                    apply(state, i, base, block, out);
                }
            }
        });
        for (share, out) in self.shares.iter_mut().zip(outs) {
            found.extend_from_slice(&out);
            share.found = out;
        }
        self.shares.par_iter_mut().for_each(Share::clear);
    }
}

/// Apply `list`, the updates of one region (starting at index `base`), pushing onto `found`
/// the predecessors they settle.
#[inline]
fn apply<S: Settle>(state: &S, i: i8, base: u64, list: &[Update], found: &mut Vec<(Board, bool)>) {
    /// Updates between a prefetch and its use.
    const AHEAD: usize = 16;
    let index = |u: &Update| base + u64::from(u.key & !WON);
    for u in list.iter().take(AHEAD) {
        state.prefetch(index(u));
    }
    for (k, u) in list.iter().enumerate() {
        if let Some(later) = list.get(k + AHEAD) {
            state.prefetch(index(later));
        }
        let won = u.key & WON != 0;
        if state.update_owned(index(u), i, won) {
            found.push((u.board, !won));
        }
    }
}
