//! Building one level by retrograde analysis (DESIGN §4).
//!
//! Every position of the level in progress has one 16-bit word of state:
//!
//! ```text
//!  bit 15      14..11   10..8              7..0
//! +---------+--------+------------------+-----------------------------------------+
//! | settled | unused | counter          | unsettled: exit value (i8, -128 = none) |
//! |   0     |        | children not yet |                                         |
//! |         |        | known to be wins |                                         |
//! +---------+--------+------------------+-----------------------------------------+
//! |   1     |        |   unused         | settled: the value (i8)                 |
//! +---------+--------+------------------+-----------------------------------------+
//! ```
//!
//! 1. **Exits.** One parallel pass over the level computes, for every position, its *exit
//!    value*: the best `captures − value(child)` over its capturing moves, looked up in the
//!    finished lower levels (memory-mapped), or its terminal value; and its counter: the number
//!    of its non-capturing moves (whose children are in this level).
//! 2. **Settling.** For i = n, n−1, …, 1 a parallel scan seeds every unsettled position whose
//!    exit is ≥ i (a win by i) or whose exit is −i with every child already a win (a loss by
//!    i). Each newly settled position is propagated at once, depth first, to its predecessors
//!    (un-moves): a loss by i makes every unsettled predecessor a win by i; a win decrements
//!    each unsettled predecessor's counter, and a predecessor whose counter reaches zero with
//!    an exit ≤ −i is a loss by i. All updates are compare-and-swap on the word, so each
//!    position is settled exactly once, by one thread, and the result does not depend on the
//!    thread count or schedule: within step i every value settled is ±i, and which positions
//!    are settled is the attractor of the step, a set fixed by the game.
//! 3. What is never settled lies on endless cycles and is worth 0.
//!
//! Memory: 2 bytes per position of the level, plus the lower levels through the page cache.

use std::sync::atomic::{AtomicU16, Ordering::Relaxed};

use awari_db::{successor, Board, Level, Levels, Outcome, Rules};
use rayon::prelude::*;

const SETTLED: u16 = 0x8000;
const NO_EXIT: i8 = i8::MIN;
/// Positions per parallel work item.
const CHUNK: usize = 1 << 14;

#[inline]
fn unsettled(exit: i8, counter: u8) -> u16 {
    (u16::from(counter) << 8) | u16::from(exit as u8)
}

#[inline]
fn settled(value: i8) -> u16 {
    SETTLED | u16::from(value as u8)
}

#[inline]
fn exit_of(word: u16) -> i8 {
    word as u8 as i8
}

#[inline]
fn counter_of(word: u16) -> u8 {
    ((word >> 8) & 7) as u8
}

/// Per-phase progress reporting (implemented by the CLI's progress bars; a no-op in tests).
pub trait Progress: Sync {
    /// Work on level `n` (of `positions` positions) begins.
    fn level(&self, _n: u32, _positions: u64) {}
    /// A new phase begins with `total` units of work.
    fn phase(&self, name: &str, total: u64);
    /// `k` more units are done.
    fn advance(&self, k: u64);
}

/// Progress that reports nothing.
pub struct Silent;

impl Progress for Silent {
    fn phase(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
}

/// Counts of a built level, for the summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelCounts {
    /// Positions won by the side to move.
    pub wins: u64,
    /// Positions drawn.
    pub draws: u64,
    /// Positions lost by the side to move.
    pub losses: u64,
}

/// Bytes of memory the in-memory algorithm needs for level `n` (state words and write buffer).
pub fn memory_needed(n: u32) -> u64 {
    2 * awari_db::level_size(n) + WRITE_BLOCK as u64
}

const WRITE_BLOCK: usize = 16 << 20;

/// The state of a level under construction.
pub struct LevelBuilder<'a> {
    level: Level,
    rules: Rules,
    lower: &'a Levels,
    state: Vec<AtomicU16>,
}

impl<'a> LevelBuilder<'a> {
    /// Prepare level `n`; levels n−2 … n−15 (those a capture can reach) must be in `lower`.
    pub fn new(n: u32, rules: Rules, lower: &'a Levels) -> Result<Self, awari_db::DbError> {
        for k in 2..=n {
            if awari_db::level_exists(n - k) {
                lower.require(n - k)?;
            }
        }
        let level = Level::new(n);
        let mut state = Vec::new();
        state.resize_with(level.size() as usize, || AtomicU16::new(0));
        Ok(LevelBuilder {
            level,
            rules,
            lower,
            state,
        })
    }

    /// Run phases 1 and 2; afterwards [`LevelBuilder::value`] gives every value.
    pub fn solve(&self, progress: &dyn Progress) {
        self.compute_exits(progress);
        let n = self.level.seeds();
        progress.phase("settle", self.level.size());
        for i in (1..=n).rev() {
            self.settle_step(i as i8, progress);
        }
    }

    fn compute_exits(&self, progress: &dyn Progress) {
        let n = self.level.seeds();
        progress.phase("exits", self.level.size());
        let tables: Vec<Option<(&[u8], Level)>> = (0..=n)
            .map(|s| {
                self.lower
                    .get(s)
                    .filter(|_| s + 2 <= n)
                    .map(|t| (t.data(), Level::new(s)))
            })
            .collect();
        self.state
            .par_chunks(CHUNK)
            .enumerate()
            .for_each(|(c, words)| {
                let start = (c * CHUNK) as u64;
                let boards = self.level.boards(start..start + words.len() as u64);
                for (word, board) in words.iter().zip(boards) {
                    let w = match board.outcome(self.rules) {
                        Outcome::Terminal(v) => unsettled(v, 0),
                        Outcome::Moves(moves) => {
                            let mut exit = NO_EXIT;
                            let mut quiet = 0u8;
                            for m in moves.iter() {
                                if m.captures == 0 {
                                    quiet += 1;
                                } else {
                                    let s = n - u32::from(m.captures);
                                    let (data, lvl) =
                                        tables[s as usize].expect("lower level checked in new()");
                                    let i = lvl.rank(&m.child).expect("children are indexed");
                                    let v = m.captures as i8 - data[i as usize] as i8;
                                    exit = exit.max(v);
                                }
                            }
                            unsettled(exit, quiet)
                        }
                    };
                    word.store(w, Relaxed);
                }
                progress.advance(words.len() as u64);
            });
    }

    fn settle_step(&self, i: i8, progress: &dyn Progress) {
        self.state
            .par_chunks(CHUNK)
            .enumerate()
            .for_each(|(c, words)| {
                let start = (c * CHUNK) as u64;
                let mut stack: Vec<(Board, bool)> = Vec::new();
                let mut cursor: Option<(u64, Board)> = None;
                let mut settled_here = 0u64;
                for (k, word) in words.iter().enumerate() {
                    let mut w = word.load(Relaxed);
                    let win = loop {
                        if w & SETTLED != 0 {
                            break None;
                        }
                        let exit = exit_of(w);
                        let win = exit >= i;
                        if !(win || (exit == -i && counter_of(w) == 0)) {
                            break None;
                        }
                        let v = if win { i } else { -i };
                        // A failed exchange means another thread's propagation changed the
                        // word (settled it, or decremented its counter): look again.
                        match word.compare_exchange_weak(w, settled(v), Relaxed, Relaxed) {
                            Ok(_) => break Some(win),
                            Err(now) => w = now,
                        }
                    };
                    let Some(win) = win else {
                        continue;
                    };
                    let idx = start + k as u64;
                    let board = self.board_at(idx, &mut cursor);
                    stack.push((board, win));
                    settled_here += 1 + self.propagate(i, &mut stack);
                }
                progress.advance(settled_here);
            });
    }

    /// The board at `idx`, stepping from the last one looked up in this chunk when it is near.
    #[inline]
    fn board_at(&self, idx: u64, cursor: &mut Option<(u64, Board)>) -> Board {
        let board = match *cursor {
            Some((at, b)) if idx > at && idx - at <= 8 => {
                let mut b = b;
                for _ in at..idx {
                    b = successor(&b).expect("index within the level");
                }
                b
            }
            _ => self.level.unrank(idx),
        };
        *cursor = Some((idx, board));
        board
    }

    /// Settle, depth first, everything that follows from the positions on `stack` at step
    /// `i`. Returns how many positions it settled.
    fn propagate(&self, i: i8, stack: &mut Vec<(Board, bool)>) -> u64 {
        let mut count = 0;
        while let Some((board, win)) = stack.pop() {
            board.for_each_predecessor(self.rules, |pred, _| {
                let Some(q) = self.level.rank(&pred) else {
                    return;
                };
                let word = &self.state[q as usize];
                let mut w = word.load(Relaxed);
                loop {
                    if w & SETTLED != 0 {
                        return;
                    }
                    let (new, push) = if !win {
                        // A child lost by i: the predecessor wins by i.
                        (settled(i), true)
                    } else {
                        let left = counter_of(w) - 1;
                        let exit = exit_of(w);
                        if left == 0 && exit <= -i {
                            (settled(-i), true)
                        } else {
                            (unsettled(exit, left), false)
                        }
                    };
                    match word.compare_exchange_weak(w, new, Relaxed, Relaxed) {
                        Ok(_) => {
                            if push {
                                stack.push((pred, !win));
                                count += 1;
                            }
                            return;
                        }
                        Err(now) => w = now,
                    }
                }
            });
        }
        count
    }

    /// The value of index `idx` after [`LevelBuilder::solve`].
    #[inline]
    pub fn value(&self, idx: u64) -> i8 {
        let w = self.state[idx as usize].load(Relaxed);
        if w & SETTLED != 0 {
            w as u8 as i8
        } else {
            0
        }
    }

    /// Stream the values, in index order, to `sink` in blocks, and count wins, draws, losses.
    pub fn write_values(
        &self,
        mut sink: impl FnMut(&[u8]) -> Result<(), awari_db::TableError>,
    ) -> Result<LevelCounts, awari_db::TableError> {
        let mut counts = LevelCounts::default();
        let mut buf = vec![0u8; WRITE_BLOCK];
        for (b, words) in self.state.chunks(WRITE_BLOCK).enumerate() {
            let out = &mut buf[..words.len()];
            let base = b * WRITE_BLOCK;
            let c = out
                .par_chunks_mut(CHUNK)
                .enumerate()
                .map(|(k, o)| {
                    let mut c = LevelCounts::default();
                    for (j, x) in o.iter_mut().enumerate() {
                        let v = self.value((base + k * CHUNK + j) as u64);
                        *x = v as u8;
                        match v.signum() {
                            1 => c.wins += 1,
                            0 => c.draws += 1,
                            _ => c.losses += 1,
                        }
                    }
                    c
                })
                .reduce(LevelCounts::default, |a, b| LevelCounts {
                    wins: a.wins + b.wins,
                    draws: a.draws + b.draws,
                    losses: a.losses + b.losses,
                });
            counts.wins += c.wins;
            counts.draws += c.draws;
            counts.losses += c.losses;
            sink(out)?;
        }
        Ok(counts)
    }
}
