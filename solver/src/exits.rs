//! The exits phase, streamed: every capture is found from its child, and the lower levels are
//! read once each, in index order.
//!
//! A position's *exit value* is the best `captures − value(child)` over its capturing moves,
//! or its terminal value. Looking each child up from its parent is a random read into a lower
//! level: fast while the lower levels sit in the page cache, and thousands of times slower
//! once they do not (at level 48 on a 512 GB machine, or above level 32 on 24 GB). So the
//! builder works the other way round. For each lower level m = n−2, n−3, …, n−18 it reads the
//! values in index order; every position C of level m is un-captured
//! ([`Board::for_each_uncapture`] with c = n − m) into its parents in level n, and each
//! parent's exit is raised to `c − value(C)` with an atomic maximum in RAM:
//!
//! ```text
//!   level n−2   ──────────────▶  (in order)  un-capture, c = 2  ─┐
//!   level n−3   ───────────▶                 un-capture, c = 3  ─┤   exit[q] = max(exit[q],
//!     …                                                          ├─▶          c − value)
//!   level n−18  ─▶                           un-capture, c = 18 ─┘   (RAM, at random)
//! ```
//!
//! The rest of a position's exit state — whether it is terminal, and how many non-capturing
//! moves it has — comes from a forward pass over level n itself (`exits::forward`), which reads no
//! table. Only the level in progress is touched at random, and it is in RAM.
//!
//! The low-memory builder keeps its exits on disk, so it runs the stream once per *bucket* of
//! level-n indices whose exit bytes fit in RAM, keeping the parents that fall in the bucket;
//! each pass reads the lower levels once more, in order (see [`crate::lowmem`]).

use std::ops::Range;
use std::sync::atomic::{AtomicU16, Ordering::Relaxed};
use std::time::Instant;

use awari_db::{level_exists, Access, Board, Level, Levels, ParentRange, QuietMoves, Rules, Table};
use rayon::prelude::*;

use crate::grain::STREAM_TASK;
use crate::progress::Progress;
use crate::settle::NO_EXIT;
use crate::sys;

/// What the slices of [`CaptureStream::run_in_slices`] must be a multiple of.
pub(crate) const SLICE_UNIT: u64 = STREAM_TASK;
/// Lower-level positions per read-ahead window (32 MiB of a table).
const WINDOW: u64 = 1 << 25;
/// Exit updates gathered before they are applied together (their cache misses overlap).
const BATCH: usize = 256;
/// The most seeds one capture takes: six opponent pits of 3 (a grand slam under `grand-slam`).
const MAX_CAPTURE: u32 = 18;

/// The exit buckets of a level of `size` positions from position `done` on: `(start, end)`
/// ranges of `bucket` positions (the last one shorter), each one pass over the lower levels
/// (the two-bit builder's exits phase, the depth pass's wave 0, the class pass's phase 1).
pub(crate) fn bucket_ranges(done: u64, size: u64, bucket: u64) -> Vec<(u64, u64)> {
    (done..size)
        .step_by(bucket as usize)
        .map(|s| (s, (s + bucket).min(size)))
        .collect()
}

/// Positions (and bytes) of the levels that captures from level `n` reach, n−2 … n−18: what
/// one stream pass reads.
pub fn lower_positions(n: u32) -> u64 {
    (2..=MAX_CAPTURE.min(n))
        .map(|c| n - c)
        .filter(|&m| level_exists(m))
        .map(awari_db::level_size)
        .sum()
}

/// The exit state of a position that reads no lower level: `(terminal value, 0)` for a
/// finished game, else `(NO_EXIT, number of non-capturing moves)`; the capture exits are
/// folded in afterwards by [`CaptureStream`]. `counter` keeps what consecutive boards share:
/// visit boards in index order (one counter per run of boards).
#[inline]
pub(crate) fn forward(board: &Board, rules: Rules, counter: &mut QuietMoves) -> (i8, u8) {
    match counter.count(board, rules) {
        Err(value) => (value, 0),
        Ok(quiet) => (NO_EXIT, quiet),
    }
}

/// The forward pass over a bucket of `level` from position `lo`, one element of `bucket` a
/// position: `set(element, terminal value or NO_EXIT)` for each, in parallel `chunk`s of
/// positions, each visited in index order (the two-bit builder's exits phase, the class pass's
/// phase 1).
pub(crate) fn forward_bucket<T: Sync>(
    level: Level,
    rules: Rules,
    lo: u64,
    bucket: &[T],
    chunk: usize,
    set: impl Fn(&T, i8) + Sync,
    progress: &dyn Progress,
) {
    bucket.par_chunks(chunk).enumerate().for_each(|(k, part)| {
        let start = lo + (k * chunk) as u64;
        let mut counter = QuietMoves::new();
        for (e, board) in part
            .iter()
            .zip(level.boards(start..start + part.len() as u64))
        {
            set(e, forward(&board, rules, &mut counter).0);
        }
        progress.advance(part.len() as u64);
    });
}

/// The forward pass of the in-memory state (one machine's or a rank's slice of it): each
/// word of `chunks` (a chunk's first position, its words) set to its position's exit state,
/// unsettled ([`crate::settle::unsettled`]), each chunk's boards visited in index order.
pub(crate) fn forward_words<'a>(
    level: Level,
    rules: Rules,
    chunks: impl ParallelIterator<Item = (u64, &'a [AtomicU16])>,
    progress: &dyn Progress,
) {
    chunks.for_each(|(start, words)| {
        let boards = level.boards(start..start + words.len() as u64);
        let mut counter = QuietMoves::new();
        for (word, board) in words.iter().zip(boards) {
            let (exit, quiet) = forward(&board, rules, &mut counter);
            word.store(crate::settle::unsettled(exit, quiet), Relaxed);
        }
        progress.advance(words.len() as u64);
    });
}

/// What the exits phase of one level cost, for the build summary.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExitsStats {
    /// Seconds spent in the exits phase (forward pass and every stream pass).
    pub seconds: f64,
    /// Bytes this process read from storage meanwhile (`read_bytes` of `/proc/self/io`: page
    /// cache misses in the lower levels; the level in progress is in RAM), if known.
    pub bytes_read: Option<u64>,
    /// Bytes of the lower levels the level depends on (levels n−2 … n−18): one stream pass.
    pub lower_bytes: u64,
    /// Stream passes made (1 in memory; one per bucket in low-memory mode).
    pub passes: u32,
}

/// Measures an exits phase: call [`ExitsMeter::finish`] at its end.
pub(crate) struct ExitsMeter {
    start: Instant,
    read_before: Option<u64>,
}

impl ExitsMeter {
    pub(crate) fn start() -> ExitsMeter {
        ExitsMeter {
            start: Instant::now(),
            read_before: sys::read_bytes(),
        }
    }

    /// Seconds since the start.
    pub(crate) fn seconds(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    pub(crate) fn finish(self, stream: &CaptureStream<'_>, passes: u32) -> ExitsStats {
        let read = match (self.read_before, sys::read_bytes()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        ExitsStats {
            seconds: self.start.elapsed().as_secs_f64(),
            bytes_read: read,
            lower_bytes: stream.positions(),
            passes,
        }
    }
}

/// The lower levels of level n, streamed in index order and un-captured into level n.
pub(crate) struct CaptureStream<'a> {
    level: Level,
    rules: Rules,
    /// (seeds captured, the table of level n − captures, its level), largest level first.
    sources: Vec<(u8, &'a Table, Level)>,
    /// The first block of a compressed lower level that failed its check, if any: the pass
    /// skips it and returns the error at its end.
    failed: std::sync::Mutex<Option<awari_db::TableError>>,
}

impl<'a> CaptureStream<'a> {
    /// For level `n`; every existing level n−2 … n−18 must be in `lower` (it is checked).
    pub(crate) fn new(
        n: u32,
        rules: Rules,
        lower: &'a Levels,
    ) -> Result<CaptureStream<'a>, awari_db::DbError> {
        let mut sources = Vec::new();
        for c in 2..=MAX_CAPTURE.min(n) {
            let m = n - c;
            if level_exists(m) {
                sources.push((c as u8, lower.require(m)?, Level::new(m)));
            }
        }
        Ok(CaptureStream {
            level: Level::new(n),
            rules,
            sources,
            failed: std::sync::Mutex::new(None),
        })
    }

    /// Lower-level positions (and bytes) read by one pass.
    pub(crate) fn positions(&self) -> u64 {
        lower_positions(self.level.seeds())
    }

    /// One pass: for every capturing move of a level-n position whose index lies in `range`,
    /// hand `raise` the pair (index, `captures − value(child)`), in batches. `raise` must fold
    /// each pair in with a maximum; the order of the pairs is unspecified.
    pub(crate) fn run(
        &self,
        range: Range<u64>,
        raise: impl Fn(&[(u64, i8)]) + Sync,
        progress: &dyn Progress,
    ) -> Result<(), awari_db::TableError> {
        self.run_in_slices(range, WINDOW, raise, || {}, progress)
    }

    /// The error a pass met (a corrupt block of a compressed lower level), taken.
    fn take_error(&self) -> Result<(), awari_db::TableError> {
        match self.failed.lock().expect("no panic holds it").take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// [`CaptureStream::run`], calling `flush` after every `slice` lower positions (a
    /// multiple of [`SLICE_UNIT`]), when no call of `raise` is running.
    pub(crate) fn run_in_slices(
        &self,
        range: Range<u64>,
        slice: u64,
        raise: impl Fn(&[(u64, i8)]) + Sync,
        mut flush: impl FnMut(),
        progress: &dyn Progress,
    ) -> Result<(), awari_db::TableError> {
        debug_assert!(slice > 0 && slice % SLICE_UNIT == 0);
        let range = self.level.parent_range(range);
        for &(c, table, source) in &self.sources {
            table.advise(Access::Sequential);
            let size = source.size();
            // Window by window, the next one read ahead in the background meanwhile.
            table.prefetch(0..WINDOW.min(size));
            for window in (0..size).step_by(WINDOW as usize) {
                let last = (window + WINDOW).min(size);
                table.prefetch(last..(last + WINDOW).min(size));
                for from in (window..last).step_by(slice as usize) {
                    let to = (from + slice).min(last);
                    (0..(to - from).div_ceil(STREAM_TASK))
                        .into_par_iter()
                        .for_each(|k| {
                            let start = from + k * STREAM_TASK;
                            let end = (start + STREAM_TASK).min(to);
                            self.uncapture(c, table, &source, start..end, &range, &raise);
                            progress.advance(end - start);
                        });
                    flush();
                }
            }
            table.advise(Access::Normal);
        }
        self.take_error()
    }

    /// The windows of the lower levels that part `part` of `parts` streams, one per round:
    /// each lower level is cut into `parts` near-equal slices, and each slice into windows of
    /// at most `window` positions. Every part gets the same number of rounds (`None`: nothing
    /// to stream in that round), so that the parts of a distributed build can exchange what
    /// each round produced. Items: (source, positions of that lower level).
    pub(crate) fn part_windows(
        &self,
        part: usize,
        parts: usize,
        window: u64,
    ) -> Vec<Option<(usize, Range<u64>)>> {
        let mut rounds = Vec::new();
        for (s, &(_, _, source)) in self.sources.iter().enumerate() {
            let size = source.size();
            let (p, n) = (part as u64, parts as u64);
            let (lo, hi) = (size * p / n, size * (p + 1) / n);
            let per_part = size.div_ceil(n);
            for k in 0..per_part.div_ceil(window) {
                let start = (lo + k * window).min(hi);
                let end = (start + window).min(hi);
                rounds.push((start < end).then_some((s, start..end)));
            }
        }
        rounds
    }

    /// Un-capture positions `positions` of lower level `source` (an index into the sources,
    /// see [`CaptureStream::part_windows`]) on all cores, handing `raise` every parent in
    /// level n with its exit candidate, in batches.
    pub(crate) fn run_window(
        &self,
        source: usize,
        positions: Range<u64>,
        raise: impl Fn(&[(u64, i8)]) + Sync,
    ) -> Result<(), awari_db::TableError> {
        let (c, table, level) = self.sources[source];
        let whole = self.level.parent_range(0..self.level.size());
        table.prefetch(positions.clone());
        (0..(positions.end - positions.start).div_ceil(STREAM_TASK))
            .into_par_iter()
            .for_each(|k| {
                let start = positions.start + k * STREAM_TASK;
                let end = (start + STREAM_TASK).min(positions.end);
                self.uncapture(c, table, &level, start..end, &whole, &raise);
            });
        self.take_error()
    }

    /// Un-capture positions `chunk` of `source` (whose values are in `table`), `c` seeds
    /// below level n, and hand `raise` the parents whose index lies in `range`.
    fn uncapture(
        &self,
        c: u8,
        table: &Table,
        source: &Level,
        chunk: Range<u64>,
        range: &ParentRange,
        raise: &impl Fn(&[(u64, i8)]),
    ) {
        let mut buf = Vec::new();
        let values = match table.read(chunk.clone(), &mut buf) {
            Ok(v) => v,
            Err(e) => {
                self.failed
                    .lock()
                    .expect("no panic holds it")
                    .get_or_insert(e);
                return;
            }
        };
        let mut batch: Vec<(u64, i8)> = Vec::with_capacity(BATCH + 64);
        for (child, &v) in source.boards(chunk).zip(values) {
            let exit = c as i8 - v as i8;
            child.for_each_uncapture_index_in(self.rules, c, &self.level, range, |q| {
                batch.push((q, exit));
            });
            if batch.len() >= BATCH {
                raise(&batch);
                batch.clear();
            }
        }
        raise(&batch);
    }
}
