//! The in-memory level algorithm (phase 2; docs/design.md, "Building a level"): 2 bytes of RAM
//! per position, the fastest.
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
//! 1. **Exits.** Every position gets its *exit value*: the best `captures − value(child)` over
//!    its capturing moves, or its terminal value; and its counter: the number of its
//!    non-capturing moves (whose children are in this level). A forward pass over the level
//!    sets terminal values and counters; then the finished lower levels are streamed in order
//!    and un-captured into their parents here (see [`crate::exits`]).
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
//! With depth tables, step 2 runs in breadth-first waves instead (the seeds, then what they
//! settle, and so on) and each position's wave is recorded as its depth (see [`crate::depth`]).
//!
//! Memory: 2 bytes per position of the level (plus 2 for depths and the wave frontier when
//! depth tables are kept). The lower levels are read once each, in order, and need not stay
//! in the page cache.
//!
//! Setting the environment variable `AWARI_TIMINGS` prints each level's forward-pass, stream
//! and settling times on stderr (for profiling).

use std::sync::atomic::{AtomicU16, Ordering::Relaxed};

use awari_db::{Board, Level, Levels, QuietMoves, Rules};

use crate::exits::{forward, CaptureStream, ExitsMeter, ExitsStats};
pub use crate::progress::{Progress, Silent};
#[allow(clippy::wildcard_imports)]
use crate::settle::*;
pub use crate::settle::{BuilderError, LevelCounts};
pub(crate) use crate::state::StateArray;
use rayon::prelude::*;

/// More waves in one step than a depth entry can count (never seen; reported, not clipped).
#[derive(Debug, thiserror::Error)]
#[error(
    "level {level}: a depth to conversion exceeds 65535 plies, more than the depth table can hold"
)]
pub struct DepthOverflow {
    /// The level.
    pub level: u32,
}

/// Why a level could not be solved.
#[derive(Debug, thiserror::Error)]
pub enum SolveError {
    /// A depth too large for the depth table.
    #[error(transparent)]
    Depth(#[from] DepthOverflow),
    /// A lower level that could not be read (a corrupt block of a compressed table).
    #[error(transparent)]
    Table(#[from] awari_db::TableError),
}

/// Bytes of memory the in-memory algorithm needs for level `n`: the state words, the depth
/// words and an allowance for the breadth-first frontier when depths are kept, the seeds of a
/// settling step held at once (at most an eighth of a byte per position, see
/// `LevelBuilder::settle_step`), and the write buffer.
pub fn memory_needed(n: u32, keep_depth: bool) -> u64 {
    let size = awari_db::level_size(n);
    let per_position = if keep_depth { 2 + 2 + 4 } else { 2 };
    per_position * size + size / 8 + size.min(WRITE_BLOCK as u64)
}

const WRITE_BLOCK: usize = 16 << 20;

/// The state of a level under construction.
pub struct LevelBuilder<'a> {
    level: Level,
    rules: Rules,
    stream: CaptureStream<'a>,
    state: StateArray,
    depth: Option<Vec<AtomicU16>>,
}

impl<'a> LevelBuilder<'a> {
    /// Prepare level `n`; levels n−2 … n−18 (those a capture can reach) must be in `lower`.
    ///
    /// With `keep_depth`, settling runs in breadth-first waves and records each position's
    /// depth to conversion (2 more bytes per position).
    pub fn new(
        n: u32,
        rules: Rules,
        lower: &'a Levels,
        keep_depth: bool,
    ) -> Result<Self, BuilderError> {
        let stream = CaptureStream::new(n, rules, lower)?;
        let level = Level::new(n);
        let state = StateArray::new(level.size() as usize)?;
        let depth = keep_depth.then(|| {
            let mut d = Vec::new();
            d.resize_with(level.size() as usize, || AtomicU16::new(0));
            d
        });
        Ok(LevelBuilder {
            level,
            rules,
            stream,
            state,
            depth,
        })
    }

    /// Run phases 1 and 2; afterwards [`LevelBuilder::value`] gives every value (and
    /// [`LevelBuilder::depth`] every depth, when kept). Returns the largest depth and what the
    /// exits phase cost.
    pub fn solve(&mut self, progress: &dyn Progress) -> Result<(u16, ExitsStats), SolveError> {
        let t = std::time::Instant::now();
        let stats = self.compute_exits(progress)?;
        let exits = t.elapsed().as_secs_f64();
        let n = self.level.seeds();
        progress.phase("settle", self.level.size());
        let mut deepest = 0;
        for i in (1..=n).rev() {
            if self.depth.is_some() {
                deepest = deepest.max(self.settle_step_waves(i as i8, progress)?);
            } else {
                self.settle_step(i as i8, progress);
            }
        }
        if std::env::var_os("AWARI_TIMINGS").is_some() {
            eprintln!(
                "level {n}: exits {exits:.2} s, settle {:.2} s",
                t.elapsed().as_secs_f64() - exits
            );
        }
        Ok((deepest, stats))
    }

    /// The state words in parallel work items, each with the index of its first position.
    fn chunks(&self) -> impl IndexedParallelIterator<Item = (u64, &[AtomicU16])> {
        self.state
            .words()
            .par_chunks(CHUNK)
            .enumerate()
            .map(|(c, words)| ((c * CHUNK) as u64, words))
    }

    /// Phase 1: the forward pass (terminal values, non-capturing move counts), then one
    /// stream of the lower levels folding every capture into its parent's exit.
    fn compute_exits(&self, progress: &dyn Progress) -> Result<ExitsStats, awari_db::TableError> {
        let stream = &self.stream;
        let meter = ExitsMeter::start();
        progress.phase("exits", self.level.size() + stream.positions());
        self.chunks().for_each(|(start, words)| {
            let boards = self.level.boards(start..start + words.len() as u64);
            let mut counter = QuietMoves::new();
            for (word, board) in words.iter().zip(boards) {
                let (exit, quiet) = forward(&board, self.rules, &mut counter);
                word.store(unsettled(exit, quiet), Relaxed);
            }
            progress.advance(words.len() as u64);
        });
        let forward_seconds = meter.seconds();
        self.stream_exits(stream, progress)?;
        if std::env::var_os("AWARI_TIMINGS").is_some() {
            eprintln!(
                "level {}: forward pass {forward_seconds:.2} s, stream {:.2} s",
                self.level.seeds(),
                meter.seconds() - forward_seconds
            );
        }
        Ok(meter.finish(stream, 1))
    }

    /// The stream of phase 1, each batch of raises touched first so that their misses overlap.
    fn stream_exits(
        &self,
        stream: &CaptureStream,
        progress: &dyn Progress,
    ) -> Result<(), awari_db::TableError> {
        let words = self.state.words();
        stream.run(
            0..self.level.size(),
            |batch| {
                let mut touch = 0u16;
                for &(q, _) in batch {
                    touch |= words[q as usize].load(Relaxed);
                }
                std::hint::black_box(touch);
                for &(q, exit) in batch {
                    raise_exit(&words[q as usize], exit);
                }
            },
            progress,
        )
    }

    /// Scan for the positions that step `i` settles from their exits alone, settle them, and
    /// return them per chunk: (chunk start, offsets and win flags).
    fn seed_chunk(&self, i: i8, start: u64, words: &[AtomicU16]) -> Vec<(u32, bool)> {
        scan_seeds(i, words, |k| {
            if let Some(d) = &self.depth {
                d[(start + k as u64) as usize].store(0, Relaxed);
            }
        })
    }

    /// Step `i`, depth first, one segment of the level at a time: the segment's seeds are
    /// found and settled by a vectorised scan while no propagation runs (the state is
    /// borrowed exclusively), then each chunk's seeds are propagated in parallel.
    ///
    /// Scanning before propagating settles the same positions: propagation never makes an
    /// unsettled position a seed (a counter that reaches 0 with the exit ≤ −i settles it at
    /// once), so the seeds of step i are those of its start that propagation has not settled
    /// first, and either way they are settled at ±i.
    fn settle_step(&mut self, i: i8, progress: &dyn Progress) {
        let len = self.state.len();
        // Seeds held at once: 2 bytes each, at most a sixteenth of the level's positions
        // (0.125 bytes per position), plus one window's. A step seeds at most about 5% of
        // a level, so one segment is usually the whole level.
        let budget = (len / 16).max(WINDOW);
        let mut first = 0;
        while first < len {
            let mut seeds: Vec<Vec<u16>> = Vec::new();
            let (mut end, mut found) = (first, 0);
            while end < len && found < budget {
                let stop = (end + WINDOW).min(len);
                let window: Vec<Vec<u16>> = self.state.plain_mut()[end..stop]
                    .par_chunks_mut(CHUNK)
                    .map(|words| settle_seeds(i, words))
                    .collect();
                found += window.iter().map(Vec::len).sum::<usize>();
                seeds.extend(window);
                end = stop;
            }
            seeds.par_iter().enumerate().for_each(|(c, seeds)| {
                if seeds.is_empty() {
                    return;
                }
                let start = (first + c * CHUNK) as u64;
                let mut stack = seed_boards(&self.level, start, seeds.iter().map(seed_entry));
                let count =
                    stack.len() as u64 + propagate(&*self, &self.level, self.rules, i, &mut stack);
                progress.advance(count);
            });
            first = end;
        }
    }

    /// Step `i`, breadth first: wave 0 is the seeds, wave k+1 what wave k settles; a position's
    /// wave is its depth to conversion (see [`crate::depth`]). Returns the deepest wave.
    fn settle_step_waves(&self, i: i8, progress: &dyn Progress) -> Result<u16, DepthOverflow> {
        let mut frontier: Vec<(Board, bool)> = self
            .chunks()
            .flat_map_iter(|(start, words)| {
                let seeds = self.seed_chunk(i, start, words);
                seed_boards(&self.level, start, seeds.iter().copied())
            })
            .collect();
        let mut wave: u16 = 0;
        while !frontier.is_empty() {
            progress.advance(frontier.len() as u64);
            if wave == u16::MAX {
                return Err(DepthOverflow {
                    level: self.level.seeds(),
                });
            }
            let next = wave + 1;
            frontier = frontier
                .par_chunks(BATCH)
                .fold(Vec::new, |mut out, batch| {
                    let on_settled = |q: u64| {
                        if let Some(d) = &self.depth {
                            d[q as usize].store(next, Relaxed);
                        }
                    };
                    expand(
                        self,
                        &self.level,
                        self.rules,
                        i,
                        batch,
                        &mut out,
                        on_settled,
                        &mut |_, _| false,
                    );
                    out
                })
                .reduce(Vec::new, |mut a, mut b| {
                    a.append(&mut b);
                    a
                });
            if !frontier.is_empty() {
                wave = next;
            }
        }
        Ok(wave)
    }

    /// Apply to predecessor `q` the news that one of its children was settled at step `i`
    /// (`child_won`: the child is a win by i for its mover). Returns whether `q` got settled.
    #[inline]
    fn update_predecessor(&self, q: u64, i: i8, child_won: bool) -> bool {
        update_word(&self.state.words()[q as usize], i, child_won)
    }

    /// The depth to conversion of index `idx` (0 for draws), when depths are kept.
    #[inline]
    pub fn depth(&self, idx: u64) -> Option<u16> {
        let d = self.depth.as_ref()?;
        if self.value(idx) == 0 {
            Some(0)
        } else {
            Some(d[idx as usize].load(Relaxed))
        }
    }

    /// The value of index `idx` after [`LevelBuilder::solve`].
    #[inline]
    pub fn value(&self, idx: u64) -> i8 {
        value_of(self.state.words()[idx as usize].load(Relaxed))
    }

    /// Stream the depths, in index order, to `sink` as `width`-byte little-endian entries.
    pub fn write_depths(
        &self,
        width: u8,
        mut sink: impl FnMut(&[u8]) -> Result<(), awari_db::TableError>,
    ) -> Result<(), awari_db::TableError> {
        let size = self.level.size();
        let per_block = (WRITE_BLOCK / usize::from(width)) as u64;
        let mut buf = Vec::with_capacity(WRITE_BLOCK);
        let mut start = 0u64;
        while start < size {
            let end = (start + per_block).min(size);
            buf.clear();
            for idx in start..end {
                let d = self.depth(idx).expect("depths kept");
                if width == 1 {
                    buf.push(d as u8);
                } else {
                    buf.extend_from_slice(&d.to_le_bytes());
                }
            }
            sink(&buf)?;
            start = end;
        }
        Ok(())
    }

    /// Stream the values, in index order, to `sink` in blocks, and count wins, draws, losses.
    pub fn write_values(
        &self,
        mut sink: impl FnMut(&[u8]) -> Result<(), awari_db::TableError>,
    ) -> Result<LevelCounts, awari_db::TableError> {
        let mut counts = LevelCounts::default();
        let mut buf = vec![0u8; WRITE_BLOCK];
        for (b, words) in self.state.words().chunks(WRITE_BLOCK).enumerate() {
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
                        c.add(v);
                    }
                    c
                })
                .reduce(LevelCounts::default, LevelCounts::merge);
            counts = counts.merge(c);
            sink(out)?;
        }
        Ok(counts)
    }
}

impl Settle for LevelBuilder<'_> {
    #[inline]
    fn touch(&self, q: u64) -> u64 {
        u64::from(self.state.words()[q as usize].load(Relaxed))
    }

    const PREFETCHES: bool = cfg!(target_arch = "x86_64");

    #[inline]
    fn prefetch(&self, q: u64) {
        self.state.prefetch(q as usize);
    }

    #[inline]
    fn update(&self, q: u64, i: i8, child_won: bool) -> bool {
        self.update_predecessor(q, i, child_won)
    }
}
