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
//! Memory: 2 bytes per position of the level. The lower levels are read once each, in order,
//! and need not stay in the page cache. (Depths come from the depth passes, [`crate::depth`],
//! over the finished table.)
//!
//! **Resuming** ([`LevelBuilder::open`]; the file in `memory/checkpoint.rs`): at a step
//! boundary every few minutes the state words are saved whole, with the step, to
//! `level-NN.mstate` (2 bytes a position of disk); a killed level loads them and goes on at
//! that step. Every position of the level is in the words, so the steps after the save settle
//! the same sets, and the table is the same bytes.
//!
//! Setting the environment variable `AWARI_TIMINGS` prints each level's forward-pass, stream
//! and settling times on stderr (for profiling).

mod checkpoint;

use std::sync::atomic::{AtomicU16, Ordering::Relaxed};

use awari_db::{Level, Levels, Rules};

use super::Solved;
use crate::exits::{forward_words, CaptureStream, ExitsMeter, ExitsStats};
pub use crate::progress::{Progress, Silent};
#[allow(clippy::wildcard_imports)]
use crate::settle::*;
pub use crate::settle::{BuilderError, LevelCounts};
pub(crate) use crate::state::StateArray;
use crate::twobit::Stage;
pub use checkpoint::{
    remove_saved_state, saved_state_bytes, saved_state_path, saved_state_stage, SAVE_SHARE,
};
use rayon::prelude::*;

/// Bytes of memory the in-memory algorithm needs for level `n`: the state words, the seeds of
/// a settling step held at once (at most an eighth of a byte per position, see
/// `LevelBuilder::settle_step`), and the write buffer.
pub fn memory_needed(n: u32) -> u64 {
    let size = awari_db::level_size(n);
    2 * size + size / 8 + size.min(WRITE_BLOCK as u64)
}

const WRITE_BLOCK: usize = 16 << 20;

/// The state of a level under construction.
pub struct LevelBuilder<'a> {
    level: Level,
    rules: Rules,
    stream: CaptureStream<'a>,
    state: StateArray,
    /// Where the state is saved between steps ([`LevelBuilder::open`]; `None`: never).
    durable: Option<checkpoint::Durable>,
}

impl<'a> LevelBuilder<'a> {
    /// Prepare level `n`; levels n−2 … n−18 (those a capture can reach) must be in `lower`.
    pub fn new(n: u32, rules: Rules, lower: &'a Levels) -> Result<Self, BuilderError> {
        let stream = CaptureStream::new(n, rules, lower)?;
        let level = Level::new(n);
        let state = StateArray::new(level.size() as usize)?;
        Ok(LevelBuilder {
            level,
            rules,
            stream,
            state,
            durable: None,
        })
    }

    /// Run phases 1 and 2, from where a save left the level if [`LevelBuilder::open`] loaded
    /// one (saving the state as it goes, if opened so); afterwards [`LevelBuilder::value`]
    /// gives every value.
    pub fn solve(&mut self, progress: &dyn Progress) -> Result<Solved, awari_db::TableError> {
        let t = std::time::Instant::now();
        let n = self.level.seeds();
        let resumed_at = self.durable.as_ref().and_then(|d| d.resumed_at);
        let exits = match (&self.durable, resumed_at) {
            (Some(d), Some(_)) => d.carried.exits(self.stream.positions()),
            _ => {
                let stats = self.compute_exits(progress)?;
                if let Some(d) = &mut self.durable {
                    d.carried
                        .add_exits(stats.seconds, stats.bytes_read, stats.passes);
                }
                stats
            }
        };
        let exits_seconds = t.elapsed().as_secs_f64();
        progress.phase("settle", self.level.size());
        if resumed_at.is_some() {
            progress.advance(self.settled());
        }
        let first = resumed_at.unwrap_or(n);
        if resumed_at.is_none() && n > 0 {
            self.save_if_due(n)?;
        }
        for i in (1..=first).rev() {
            progress.message(&format!("step {i}"));
            self.settle_step(i as i8, progress);
            if i > 1 {
                self.save_if_due(i - 1)?;
            }
        }
        if std::env::var_os("AWARI_TIMINGS").is_some() {
            eprintln!(
                "level {n}: exits {exits_seconds:.2} s, settle {:.2} s",
                t.elapsed().as_secs_f64() - exits_seconds
            );
        }
        Ok(match &self.durable {
            Some(d) => Solved {
                exits,
                earlier_seconds: d.carried.seconds,
                resumed: resumed_at.map(|next| (Stage::Settle { next }, d.resumes)),
            },
            None => Solved::fresh(exits),
        })
    }

    /// Positions settled (a resumed level's, for its progress).
    fn settled(&self) -> u64 {
        self.state
            .words()
            .par_iter()
            .filter(|w| w.load(Relaxed) & SETTLED != 0)
            .count() as u64
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
        forward_words(self.level, self.rules, self.chunks(), progress);
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

    /// Apply to predecessor `q` the news that one of its children was settled at step `i`
    /// (`child_won`: the child is a win by i for its mover). Returns whether `q` got settled.
    #[inline]
    fn update_predecessor(&self, q: u64, i: i8, child_won: bool) -> bool {
        update_word(&self.state.words()[q as usize], i, child_won)
    }

    /// The value of index `idx` after [`LevelBuilder::solve`].
    #[inline]
    pub fn value(&self, idx: u64) -> i8 {
        value_of(self.state.words()[idx as usize].load(Relaxed))
    }

    /// Stream the values, in index order, to `sink` in blocks.
    pub fn write_values(
        &self,
        mut sink: impl FnMut(&[u8]) -> Result<(), awari_db::TableError>,
    ) -> Result<(), awari_db::TableError> {
        let mut buf = vec![0u8; WRITE_BLOCK];
        for (b, words) in self.state.words().chunks(WRITE_BLOCK).enumerate() {
            let out = &mut buf[..words.len()];
            let base = b * WRITE_BLOCK;
            out.par_chunks_mut(CHUNK).enumerate().for_each(|(k, o)| {
                for (j, x) in o.iter_mut().enumerate() {
                    *x = self.value((base + k * CHUNK + j) as u64) as u8;
                }
            });
            sink(out)?;
        }
        Ok(())
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
