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

use std::sync::atomic::AtomicU16;
use std::sync::Mutex;

use awari_db::{Board, Level, Rules};
use rayon::prelude::*;

use crate::exits::{CaptureStream, SLICE_UNIT};
use crate::progress::Progress;
use crate::settle::{raise_exit_owned, Settle};
use crate::state::StateArray;

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

/// Lower-level positions un-captured per round of the exits phase (see
/// [`Rounds::stream_exits`]); a round's raises take 4 bytes each.
const EXITS_ROUND: u64 = 32 * SLICE_UNIT;

/// Settled positions per task of a round's generate phase.
const GENERATE_TASK: usize = 1024;

/// Updates per block of a region's list (8 KiB).
const BLOCK: usize = 512;

/// Per region, the entries one thread generated in a round, in blocks of [`BLOCK`] (the full
/// blocks, then the one being filled), reused from round to round: once the largest round so
/// far has been seen, rounds allocate nothing, and a round that crowds one region does not
/// leave that region's list large for good.
struct RegionLists<T> {
    full: Vec<Vec<Vec<T>>>,
    filling: Vec<Vec<T>>,
    /// Empty blocks, for the next round.
    spare: Vec<Vec<T>>,
}

impl<T: Copy> RegionLists<T> {
    fn new(regions: usize) -> RegionLists<T> {
        RegionLists {
            full: (0..regions).map(|_| Vec::new()).collect(),
            filling: (0..regions).map(|_| Vec::with_capacity(BLOCK)).collect(),
            spare: Vec::new(),
        }
    }

    /// Append `entry` to region `r`'s list.
    #[inline]
    fn push(&mut self, r: usize, entry: T) {
        let block = &mut self.filling[r];
        if block.len() == BLOCK {
            let fresh = self
                .spare
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(BLOCK));
            self.full[r].push(std::mem::replace(block, fresh));
        }
        self.filling[r].push(entry);
    }

    /// Region `r`'s entries, block by block.
    fn blocks(&self, r: usize) -> impl Iterator<Item = &[T]> {
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
    /// Per thread of the pool: the updates it generated in this round (each thread locks
    /// only its own, so the locks are never contended).
    lists: Vec<Mutex<RegionLists<Update>>>,
    /// Per thread: the predecessors its share of the apply phase settled.
    found: Vec<Mutex<Vec<(Board, bool)>>>,
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
        Rounds {
            size: round.max(1),
            shift,
            regions,
            lists: (0..threads)
                .map(|_| Mutex::new(RegionLists::new(regions)))
                .collect(),
            found: (0..threads).map(|_| Mutex::new(Vec::new())).collect(),
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
        // Both phases are scheduled dynamically (a shared machine may slow one thread); each
        // task appends to the buffers of the thread running it.
        let threads = self.lists.len();
        let own = |t: Option<usize>| t.unwrap_or(0) % threads;
        let lists = &self.lists;
        settled.par_chunks(GENERATE_TASK).for_each(|boards| {
            let mut lists = lists[own(rayon::current_thread_index())]
                .lock()
                .expect("no round panics");
            for &(board, won) in boards {
                let flag = if won { WON } else { 0 };
                board.for_each_ranked_predecessor(rules, level, |q, pred| {
                    let u = Update {
                        key: (q & mask) as u32 | flag,
                        board: pred,
                    };
                    lists.push((q >> shift) as usize, u);
                });
            }
        });
        let mut all: Vec<_> = self
            .lists
            .iter_mut()
            .map(|l| l.get_mut().expect("no round panics"))
            .collect();
        let found_by = &self.found;
        by_region(&all, regions, shift, |base, block| {
            let mut out = found_by[own(rayon::current_thread_index())]
                .lock()
                .expect("no round panics");
            apply(state, i, base, block, &mut out);
        });
        for l in &mut all {
            l.clear();
        }
        for out in &mut self.found {
            let out = out.get_mut().expect("no round panics");
            found.extend_from_slice(out);
            out.clear();
        }
    }

    /// The exits phase's stream of captures (see [`crate::exits`]) in rounds: each round
    /// un-captures [`EXITS_ROUND`] lower positions in parallel, every thread appending each
    /// raise, as the offset of its parent in the parent's region and the exit value in the
    /// low byte, to its list for that region; then the raises are applied region by region,
    /// each region by one thread, with plain loads and stores.
    pub(crate) fn stream_exits(
        &self,
        stream: &CaptureStream,
        state: &StateArray,
        progress: &dyn Progress,
    ) -> Result<(), awari_db::TableError> {
        let (shift, regions) = (self.shift, self.regions);
        let mask = (1u64 << shift) - 1;
        let threads = rayon::current_num_threads().max(1);
        let lists: Vec<Mutex<RegionLists<u32>>> = (0..threads)
            .map(|_| Mutex::new(RegionLists::new(regions)))
            .collect();
        let size = state.len() as u64;
        stream.run_in_slices(
            0..size,
            EXITS_ROUND,
            |batch| {
                // Each thread has its own lists: the lock is never contended.
                let t = rayon::current_thread_index().unwrap_or(0) % threads;
                let mut lists = lists[t].lock().expect("no raise panics");
                for &(q, exit) in batch {
                    let entry = ((q & mask) as u32) << 8 | u32::from(exit as u8);
                    lists.push((q >> shift) as usize, entry);
                }
            },
            || {
                let mut all: Vec<_> = lists
                    .iter()
                    .map(|l| l.lock().expect("no raise panics"))
                    .collect();
                by_region(&all, regions, shift, |base, block| {
                    raise_all(state, base, block)
                });
                for l in &mut all {
                    l.clear();
                }
            },
            progress,
        )
    }
}

/// Hand `f` every block of every thread's lists (`lists`, one per thread), region by region
/// in parallel, with the index the region starts at: all the blocks of one region go to one
/// task, so `f` owns the region's state words meanwhile.
fn by_region<T: Copy + Sync, L: std::ops::Deref<Target = RegionLists<T>> + Sync>(
    lists: &[L],
    regions: usize,
    shift: u32,
    f: impl Fn(u64, &[T]) + Sync,
) {
    (0..regions).into_par_iter().for_each(|r| {
        for block in lists.iter().flat_map(|l| l.blocks(r)) {
            f((r as u64) << shift, block);
        }
    });
}

/// Call `f` with each entry of `list` in order, having called `prefetch` with the entry
/// [`AHEAD`] places later, so that its state arrives while the entries before it are used.
#[inline]
fn prefetched<T>(list: &[T], prefetch: impl Fn(&T), mut f: impl FnMut(&T)) {
    for e in list.iter().take(AHEAD) {
        prefetch(e);
    }
    for (k, e) in list.iter().enumerate() {
        if let Some(later) = list.get(k + AHEAD) {
            prefetch(later);
        }
        f(e);
    }
}

/// Entries between a prefetch and its use (see [`prefetched`]).
const AHEAD: usize = 16;

/// Apply the raises `block` (offsets in the region starting at index `base`, exit values in
/// the low byte).
#[inline]
fn raise_all(state: &StateArray, base: u64, block: &[u32]) {
    let index = |e: &u32| (base + u64::from(e >> 8)) as usize;
    let words: &[AtomicU16] = state.words();
    prefetched(
        block,
        |e| state.prefetch(index(e)),
        |e| raise_exit_owned(&words[index(e)], *e as u8 as i8),
    );
}

/// Apply `list`, the updates of one region (starting at index `base`), pushing onto `found`
/// the predecessors they settle.
#[inline]
fn apply<S: Settle>(state: &S, i: i8, base: u64, list: &[Update], found: &mut Vec<(Board, bool)>) {
    let index = |u: &Update| base + u64::from(u.key & !WON);
    prefetched(
        list,
        |u| state.prefetch(index(u)),
        |u| {
            let won = u.key & WON != 0;
            if state.update_owned(index(u), i, won) {
                found.push((u.board, !won));
            }
        },
    );
}
