//! Depth to conversion: what the `level-NN.depth` tables hold, and the compact algorithm that
//! computes them from a level's values.
//!
//! The depth of a position is the number of plies, with perfect play, until its value is
//! *converted*: until a capture or the end of the game, after which the lower levels take over.
//!
//! | position | depth |
//! |---|---|
//! | drawn (value 0) | 0 (no conversion needed; repetition divides the seeds) |
//! | terminal (no seeds, no move, forced eradication, failed feed) | 0 |
//! | won, and a capturing move achieves the value | 0 |
//! | lost, and only capturing moves achieve the value | 0 |
//! | won by v, otherwise | 1 + the smallest depth of a child lost by v (a value-optimal quiet move) |
//! | lost by v, otherwise | 1 + the largest depth of a child won by v (its value-optimal quiet moves) |
//!
//! So a winner always has a value-optimal move that captures or lowers the depth, and every
//! value-optimal quiet move of a loser lowers the depth: playing those, a won or lost position
//! reaches a capture or the end of the game, and the predicted score, in at most `depth` plies.
//! `awari-solver verify` checks exactly these two properties for every entry.
//!
//! Entries are one byte when the level's largest depth is below 256, otherwise two (u16 LE);
//! the header's "bytes per entry" says which. Depths never saturate: a level whose depth
//! exceeded 65535 would fail to build.
//!
//! # The compact algorithm
//!
//! The depths follow from the values alone: a quiet child `c` of `p` is value-optimal exactly
//! when `value(c) = −value(p)`, so each value class ±v is a breadth-first search of its own,
//! and all of them run together, wave by wave. [`DepthPass`] computes a level's depths from
//! its values table and the lower levels in 2 bits of RAM per position (0.25 bytes, under 0.33
//! in all), with the level's values read from their (memory-mapped) table:
//!
//! ```text
//!  RAM: 2 bits a position          disk: level-NN.dwave-KKKK, one file per wave k
//!  +-------+------------------+    +--------------------------------------------------+
//!  | 0 open| no depth yet     |    | per chunk of 2^20 positions, in chunk order: the |
//!  | 1 new | depth k+1, found |    | offsets of the positions at depth k (the seed-   |
//!  |       | by wave k        |    | record format of the two-bit builder)            |
//!  | 2 done| depth ≤ k        |    +--------------------------------------------------+
//!  +-------+------------------+    level-NN.dresume: where the pass stands
//! ```
//!
//! 1. **Wave 0** (the state is not allocated yet): the lower levels are streamed in index
//!    order and un-captured, as the builders' exits phase does (see [`crate::exits`]), and
//!    each capture's `captures − value(child)` is compared at once with its parent's stored
//!    value, setting a bit where it achieves it (and, with the value check, one where it
//!    exceeds it): 2 bits per position, so one stream for the whole level within the waves'
//!    budget (in buckets, each followed by a checkpoint, only below 0.25 bytes per position).
//!    A won position that is terminal or whose value a capture achieves, and a lost one with
//!    no quiet child of the opposite value, have depth 0; they are written to wave file 0.
//! 2. **Waves.** Every position of wave k is un-moved into its predecessors q with
//!    `value(q) = −value(p)`: a lost p makes an open q (won) *new*; a won p makes an open q
//!    (lost) new if every quiet child of q with value `value(p)` is *done* (a loss test that
//!    re-reads the children, as the two-bit builder's does). A child found by this same wave is
//!    *new*, not done, so a loser is found at 1 + the largest depth of its children exactly.
//!    Then the new positions become done and are written, in index order, to wave file k+1:
//!    its name is the checkpoint (written to `.tmp`, synced, renamed).
//! 3. **The table**: the wave files merged in index order into `level-NN.depth`.
//!
//! Positions never reached (draws, and in a false table any won or lost position on a cycle)
//! stay open: a won or lost position left open has no finite depth, so its value is not
//! proven, and the pass reports it ([`DepthReport::unproven`]) instead of writing a table.
//!
//! **Resuming.** A killed pass restarts from its last checkpoint: in wave 0, at the last
//! bucket (the wave file is cut back to the length the checkpoint records); in the waves, the
//! done states are read back from the wave files written (0..=k) and wave k is propagated
//! again, which finds the same new positions. So a kill loses at most one bucket or one wave;
//! below 15 seeds (a second or so a level) only wave 0 ends in a checkpoint, and a kill in the
//! waves loses the level's waves.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

use awari_db::table::{rename_into_place, tmp_path};
use awari_db::{
    depth_path, level_size, Board, DbError, Header, Level, Levels, QuietMoves, Rules, Table,
    TableError, TableWriter,
};
use rayon::prelude::*;

use crate::exits::{CaptureStream, ExitsStats};
use crate::progress::Progress;
use crate::settle::seed_boards;
use crate::state::StateArray;
use crate::sys;
use crate::twobit::{decode_seeds, encode_seeds, for_bits64};

/// Positions per chunk: the unit of the wave records (as the two-bit builder's).
const CHUNK: u64 = 1 << 20;
/// Positions per state word.
const PER_WORD: u64 = 32;
/// Positions per bit of the map of blocks holding new positions.
const BLOCK: u64 = 2048;
/// Chunks worked on together, in parallel, per thread (their records are held at once:
/// up to 8 bytes per position of a chunk).
const WINDOW_PER_THREAD: u64 = 2;

/// Chunks worked on together: [`WINDOW_PER_THREAD`] per thread.
fn window() -> u64 {
    WINDOW_PER_THREAD * rayon::current_num_threads() as u64
}
/// Bytes of wave records propagated together.
const WAVE_BATCH: usize = 4 << 20;
/// Wave entries whose predecessors are generated together (their misses overlap).
const BATCH: usize = 32;
/// Wave entries a thread takes at once (one unrank, then successor steps).
const SLICE: usize = 4096;
/// Positions of wave 0 a thread judges at once: a chunk is cut into these, so that a small
/// level (a few chunks) keeps every thread busy.
const SUB_CHUNK: u64 = 1 << 16;
/// Levels below this size cut wave 0's chunks into [`SUB_CHUNK`]s (up to level 19).
const SPLIT_BELOW: u64 = 1 << 26;
/// Positions of wave 0 whose quiet children are ranked and prefetched together.
const SEEDS_GROUP: usize = 32;
/// Fixed memory besides the per-position parts (with the windows' records, per thread).
const FIXED: u64 = 32 << 20;
/// Levels from this size on make every wave a checkpoint (see [`DepthPass::durable_waves`]):
/// level 15 (7.6 M positions) and up.
const DURABLE_WAVES_FROM: u64 = 1 << 22 | 1 << 21;
/// The most exit buckets (passes over the lower levels) wave 0 makes.
const MAX_PASSES: u64 = 16;

const OPEN: u64 = 0;
const NEW: u64 = 1;
const DONE: u64 = 2;
/// Bit 0 of every 2-bit lane.
const LOW_LANES: u64 = 0x5555_5555_5555_5555;

/// Why a depth pass stopped.
#[derive(Debug, thiserror::Error)]
pub enum DepthError {
    /// A level it needs is missing or unreadable.
    #[error(transparent)]
    Db(#[from] DbError),
    /// A table or work file could not be read or written.
    #[error(transparent)]
    Table(#[from] TableError),
    /// The state could not be allocated.
    #[error("cannot allocate the depth pass's state: {0}")]
    Alloc(std::io::Error),
    /// More waves than a depth entry can count.
    #[error("level {level}: a depth to conversion exceeds 65535 plies, more than a depth table can hold")]
    TooDeep {
        /// The level.
        level: u32,
    },
    /// Won or lost positions that no wave reached: their values are not those of the game.
    #[error("level {level}: {count} won or lost position(s) have no finite depth to conversion, so their values are not proven (first: index {index}, board {board}, stored value {value}); no depth table written")]
    Unproven {
        /// The level.
        level: u32,
        /// How many.
        count: u64,
        /// The first one's index.
        index: u64,
        /// Its board.
        board: Board,
        /// Its stored value.
        value: i8,
    },
    /// With the value check: entries that are not the best of their moves.
    #[error("level {level}: {count} entries are not the best of their moves (first: {first}); no depth table written")]
    Inconsistent {
        /// The level.
        level: u32,
        /// How many.
        count: u64,
        /// The first one found, described.
        first: String,
    },
    /// The level's values are in the probe form, which only a capture search resolves.
    #[error("{}: level {seeds} is in the probe form; compute depths from plain or self-contained compressed values", path.display())]
    ProbeForm {
        /// The file.
        path: PathBuf,
        /// The level.
        seeds: u32,
    },
}

/// A won or lost position without a finite depth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unproven {
    /// Its index.
    pub index: u64,
    /// Its board.
    pub board: Board,
    /// Its stored value.
    pub value: i8,
}

/// An entry whose stored value is not the best of its moves (`verify --prove`'s check).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inconsistent {
    /// Its index.
    pub index: u64,
    /// Its board.
    pub board: Board,
    /// What is wrong: the stored value, and what its moves give.
    pub what: String,
}

/// What a depth pass found.
#[derive(Clone, Debug)]
pub struct DepthReport {
    /// The level.
    pub level: u32,
    /// Its largest depth.
    pub max_depth: u16,
    /// Positions per depth (index d: depth d), over the whole level; depth 0 holds the draws
    /// and the positions that convert at once, and not the unproven ones.
    pub histogram: Vec<u64>,
    /// Drawn positions (all of depth 0).
    pub draws: u64,
    /// Won or lost positions without a finite depth (none in a table of the game's values).
    pub unproven: u64,
    /// The first of them, by index.
    pub examples: Vec<Unproven>,
    /// Seconds over all runs (each up to its last checkpoint, this one to its end).
    pub seconds: f64,
    /// Its exits phase (wave 0), over all runs.
    pub exits: ExitsStats,
    /// Where this run resumed: `Some(None)` in wave 0, `Some(Some(k))` after wave k.
    pub resumed: Option<Option<u32>>,
    /// Bytes of wave files written (this run).
    pub wave_bytes: u64,
    /// With [`DepthPass::check_values`]: entries whose value is not the best of their moves
    /// (over every run), and the first of them found by this one.
    pub inconsistent: u64,
    /// See `inconsistent`.
    pub inconsistent_examples: Vec<Inconsistent>,
    /// The depth table written, when one was.
    pub table: Option<PathBuf>,
}

/// Where a depth pass stands, as its checkpoint records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Wave 0 holds the positions `0..done`, in its first `bytes` bytes.
    Seeds { done: u64, bytes: u64 },
    /// Wave files 0..=k are complete.
    Waves { complete: u32 },
}

/// What carried over from earlier runs.
#[derive(Clone, Copy, Debug, Default)]
struct Carried {
    seconds: f64,
    exits_seconds: f64,
    exits_read: u64,
    passes: u32,
    resumes: u32,
    /// Mismatches the value check found in the buckets done.
    mismatches: u64,
}

/// The work files of level `n`'s depth pass in `dir`: the checkpoint, and wave file `k`.
pub fn resume_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("level-{n:02}.dresume"))
}

fn wave_path(dir: &Path, n: u32, k: u32) -> PathBuf {
    dir.join(format!("level-{n:02}.dwave-{k:04}"))
}

/// Remove the work files of level `n`'s depth pass in `dir`.
pub fn remove_work_files(dir: &Path, n: u32) {
    let _ = std::fs::remove_file(resume_path(dir, n));
    let _ = std::fs::remove_file(tmp_path(&resume_path(dir, n)));
    for k in 0.. {
        let p = wave_path(dir, n, k);
        let _ = std::fs::remove_file(tmp_path(&p));
        if std::fs::remove_file(&p).is_err() && k > 0 {
            break;
        }
    }
}

/// RAM the depth pass of level `n` needs at least: the state (2 bits a position), the block
/// map, and its fixed part; wave 0 needs no more (its bitmaps take 2 bits a position too).
pub fn memory_needed(n: u32) -> u64 {
    let size = level_size(n);
    size.div_ceil(PER_WORD) * 8 + size.div_ceil(BLOCK * 64) * 8 + FIXED
}

/// RAM the depth pass of level `n` uses within `budget` bytes (`None`: no limit): the larger
/// of wave 0 (its exit bucket) and the waves (the state).
pub fn memory_used(n: u32, budget: Option<u64>) -> u64 {
    memory_needed(n).max(exit_bucket(n, budget) / 4 + FIXED)
}

/// Bytes of wave files per position that the pass of a level writes, about (measured on
/// levels 20..24 of the awari rules: see docs/performance.md).
pub const WAVE_BYTES_PER_POSITION: f64 = 1.0;

/// Disk the depth pass of level `n` needs besides its table: the wave files.
pub fn disk_needed(n: u32) -> u64 {
    (level_size(n) as f64 * WAVE_BYTES_PER_POSITION * 1.25) as u64
}

/// Sequential bytes the depth pass of level `n` reads and writes with `passes` wave-0
/// buckets, as `plan` models it: the lower levels once per pass, the wave files written once
/// and read twice (propagated, then merged into the table), the table written once.
pub fn work_io(n: u32, passes: u64) -> u64 {
    let size = level_size(n);
    let waves = (size as f64 * WAVE_BYTES_PER_POSITION) as u64;
    crate::exits::lower_positions(n) * passes + 3 * waves + size
}

/// Positions per wave-0 bucket within `budget` bytes (`None`: no limit): two bits per
/// position (where a capture achieves the value, and where one exceeds it), in whole chunks,
/// at least 1/[`MAX_PASSES`] of the level. Within the 0.25 bytes per position that the waves'
/// state needs, that is the whole level: one stream of the lower levels.
pub fn exit_bucket(n: u32, budget: Option<u64>) -> u64 {
    let size = level_size(n);
    let whole = size.div_ceil(CHUNK).max(1) * CHUNK;
    let left = budget.map_or(u64::MAX, |b| b.saturating_sub(FIXED));
    let min = size.div_ceil(MAX_PASSES).div_ceil(CHUNK).max(1) * CHUNK;
    (left.saturating_mul(4) / CHUNK * CHUNK).clamp(min, whole)
}

/// Wave 0's capture bitmaps of one bucket of positions (`lo..`): where a capturing move
/// achieves the stored value, and (with the value check) where one exceeds it.
struct CaptureBits {
    achieved: Vec<AtomicU64>,
    exceeded: Vec<AtomicU64>,
    lo: u64,
}

impl CaptureBits {
    #[inline]
    fn set(&self, bits: &[AtomicU64], q: u64) {
        let k = q - self.lo;
        let word = &bits[(k / 64) as usize];
        let bit = 1u64 << (k % 64);
        if word.load(Relaxed) & bit == 0 {
            word.fetch_or(bit, Relaxed);
        }
    }

    #[inline]
    fn get(&self, bits: &[AtomicU64], q: u64) -> bool {
        let k = q - self.lo;
        bits.get((k / 64) as usize)
            .is_some_and(|w| w.load(Relaxed) >> (k % 64) & 1 == 1)
    }
}

/// The values of the level, read at random.
enum Values<'a> {
    Plain(&'a [u8]),
    Table(&'a Table, Mutex<Option<TableError>>),
}

impl Values<'_> {
    #[inline]
    fn get(&self, i: u64) -> i8 {
        match self {
            Values::Plain(d) => d[i as usize] as i8,
            Values::Table(t, failed) => t.value(i).unwrap_or_else(|e| {
                failed.lock().expect("no panic holds it").get_or_insert(e);
                0
            }),
        }
    }

    #[inline]
    fn prefetch(&self, i: u64) {
        match self {
            Values::Plain(d) => crate::state::prefetch_line(&d[i as usize]),
            Values::Table(t, _) => t.prefetch_value(i),
        }
    }

    fn take_error(&self) -> Result<(), TableError> {
        match self {
            Values::Plain(_) => Ok(()),
            Values::Table(_, failed) => match failed.lock().expect("no panic holds it").take() {
                Some(e) => Err(e),
                None => Ok(()),
            },
        }
    }
}

/// The depth pass of one level (see the module documentation).
pub struct DepthPass<'a> {
    level: Level,
    rules: Rules,
    values: Values<'a>,
    stream: CaptureStream<'a>,
    /// Where the work files (and the table, when written) go.
    out: PathBuf,
    bucket: u64,
    state: Option<StateArray<AtomicU64>>,
    blocks: Vec<AtomicU64>,
    stage: Stage,
    carried: Carried,
    started: Instant,
    resumed: Option<Option<u32>>,
    wave_bytes: AtomicU64,
    /// With [`DepthPass::check_values`]: how many mismatches to keep.
    check: Option<usize>,
    mismatches: AtomicU64,
    mismatch_examples: Mutex<Vec<Inconsistent>>,
}

impl<'a> DepthPass<'a> {
    /// Prepare the depth pass of level `n` of `levels` (which must hold it and its lower
    /// levels), its work files in `out`, wave 0 in buckets of `bucket` positions (see
    /// [`exit_bucket`]); it resumes from a checkpoint in `out` if there is a valid one.
    pub fn open(
        levels: &'a Levels,
        n: u32,
        out: &Path,
        bucket: u64,
    ) -> Result<DepthPass<'a>, DepthError> {
        let table = levels.require(n)?;
        if table.is_probe_form() {
            return Err(DepthError::ProbeForm {
                path: table.path().to_path_buf(),
                seeds: n,
            });
        }
        let values = match table.plain() {
            Some(d) => Values::Plain(d),
            None => Values::Table(table, Mutex::new(None)),
        };
        let rules = levels.rules();
        let stream = CaptureStream::new(n, rules, levels)?;
        let level = Level::new(n);
        let blocks = (0..level.size().div_ceil(BLOCK * 64))
            .map(|_| AtomicU64::new(0))
            .collect();
        let mut pass = DepthPass {
            level,
            rules,
            values,
            stream,
            out: out.to_path_buf(),
            bucket: bucket.clamp(1, level.size().max(1)).div_ceil(CHUNK) * CHUNK,
            state: None,
            blocks,
            stage: Stage::Seeds { done: 0, bytes: 0 },
            carried: Carried::default(),
            started: Instant::now(),
            resumed: None,
            wave_bytes: AtomicU64::new(0),
            check: None,
            mismatches: AtomicU64::new(0),
            mismatch_examples: Mutex::new(Vec::new()),
        };
        match pass.read_checkpoint() {
            Ok(Some((stage, carried))) => {
                pass.stage = stage;
                pass.carried = carried;
                pass.carried.resumes += 1;
                pass.resumed = Some(match stage {
                    Stage::Seeds { .. } => None,
                    Stage::Waves { complete } => Some(complete),
                });
            }
            Ok(None) => remove_work_files(out, n),
            Err(why) => {
                eprintln!("level {n}: depth pass starting afresh: {why}");
                remove_work_files(out, n);
            }
        }
        Ok(pass)
    }

    /// Also recompute every entry from its children in wave 0, keeping the first `keep`
    /// mismatches (the consistency check of `verify`, done in the pass's own stream of the
    /// lower levels; see [`DepthReport::inconsistent`]).
    pub fn check_values(mut self, keep: usize) -> Self {
        self.check = Some(keep);
        self
    }

    /// Run the pass to its end. With `write`, the depth table `level-NN.depth` is written into
    /// the output directory (only when every won or lost position has a depth: else
    /// [`DepthError::Unproven`]); without, only the report is made (`verify --prove`). The work
    /// files are removed at the end.
    pub fn run(
        mut self,
        write: bool,
        keep: usize,
        progress: &dyn Progress,
    ) -> Result<DepthReport, DepthError> {
        let n = self.level.seeds();
        if let Stage::Seeds { done, bytes } = self.stage {
            let t = Instant::now();
            let read0 = sys::read_bytes();
            let passes = self.wave_zero(done, bytes, progress)?;
            self.carried.exits_seconds += t.elapsed().as_secs_f64();
            if let (Some(a), Some(b)) = (read0, sys::read_bytes()) {
                self.carried.exits_read += b.saturating_sub(a);
            }
            self.carried.passes += passes;
            self.stage = Stage::Waves { complete: 0 };
            self.write_checkpoint()?;
        }
        let timings = std::env::var_os("AWARI_TIMINGS").is_some();
        if timings {
            eprintln!(
                "level {n} depth: wave 0 done at {:.2} s",
                self.started.elapsed().as_secs_f64()
            );
        }
        let Stage::Waves { complete } = self.stage else {
            unreachable!("wave 0 is done")
        };
        let state = StateArray::new(self.level.size().div_ceil(PER_WORD) as usize)
            .map_err(DepthError::Alloc)?;
        self.state = Some(state);
        progress.phase("waves", self.level.size());
        let mut histogram = Vec::new();
        for k in 0..=complete {
            histogram.push(self.mark_done(k)?);
        }
        progress.advance(histogram.iter().sum());
        let mut k = complete;
        loop {
            progress.message(&format!("wave {}", k + 1));
            self.propagate(k)?;
            self.values.take_error()?;
            let found = self.collect(k + 1)?;
            progress.advance(found);
            if found == 0 {
                let _ = std::fs::remove_file(wave_path(&self.out, n, k + 1));
                break;
            }
            histogram.push(found);
            if k + 1 == u32::from(u16::MAX) {
                return Err(DepthError::TooDeep { level: n });
            }
            k += 1;
            self.stage = Stage::Waves { complete: k };
            if self.durable_waves() {
                self.write_checkpoint()?;
            }
        }
        let max_depth = k as u16;
        if timings {
            eprintln!(
                "level {n} depth: {k} waves done at {:.2} s",
                self.started.elapsed().as_secs_f64()
            );
        }
        let (unproven, draws, examples) = self.open_positions(keep)?;
        // Wave 0 counted only the positions that convert at once: depth 0 is the rest.
        let deeper: u64 = histogram[1..].iter().sum();
        histogram[0] = self.level.size() - deeper - unproven;
        let inconsistent = self.carried.mismatches + self.mismatches.load(Relaxed);
        let mut table = None;
        if write && unproven == 0 && inconsistent == 0 {
            progress.phase("write", self.level.size());
            table = Some(self.write_table(max_depth, progress)?);
        }
        remove_work_files(&self.out, n);
        if write && inconsistent > 0 {
            let first = self
                .mismatch_examples
                .lock()
                .expect("no panic")
                .first()
                .cloned();
            return Err(DepthError::Inconsistent {
                level: n,
                count: inconsistent,
                first: first.map_or_else(
                    || "(found before a resume)".into(),
                    |m| format!("index {} board {}: {}", m.index, m.board, m.what),
                ),
            });
        }
        if write && unproven > 0 {
            let first = &examples[0];
            return Err(DepthError::Unproven {
                level: n,
                count: unproven,
                index: first.index,
                board: first.board,
                value: first.value,
            });
        }
        Ok(DepthReport {
            level: n,
            max_depth,
            histogram,
            draws,
            unproven,
            examples,
            seconds: self.carried.seconds + self.started.elapsed().as_secs_f64(),
            exits: ExitsStats {
                seconds: self.carried.exits_seconds,
                bytes_read: Some(self.carried.exits_read),
                lower_bytes: self.stream.positions(),
                passes: self.carried.passes,
            },
            resumed: self.resumed,
            wave_bytes: self.wave_bytes.load(Relaxed),
            table,
            inconsistent,
            inconsistent_examples: self.mismatch_examples.into_inner().expect("no panic"),
        })
    }

    // ----- wave 0 --------------------------------------------------------------------------

    /// Wave 0 from position `done` on (its file holding `bytes` bytes so far), bucket by
    /// bucket, each followed by a checkpoint; returns the buckets made.
    fn wave_zero(
        &mut self,
        done: u64,
        bytes: u64,
        progress: &dyn Progress,
    ) -> Result<u32, DepthError> {
        let n = self.level.seeds();
        let size = self.level.size();
        let path = wave_path(&self.out, n, 0);
        let io = |source| TableError::Io {
            path: path.clone(),
            source,
        };
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        file.set_len(bytes).map_err(io)?;
        let mut file = BufWriter::with_capacity(1 << 20, file);
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(bytes)).map_err(io)?;
        let buckets: Vec<(u64, u64)> = (done..size)
            .step_by(self.bucket as usize)
            .map(|s| (s, (s + self.bucket).min(size)))
            .collect();
        progress.phase(
            "exits",
            (size - done) + buckets.len() as u64 * self.stream.positions(),
        );
        let mut written = bytes;
        for &(lo, hi) in &buckets {
            let words = (hi - lo).div_ceil(64) as usize;
            let bits = || (0..words).map(|_| AtomicU64::new(0)).collect::<Vec<_>>();
            let captures = CaptureBits {
                achieved: bits(),
                exceeded: if self.check.is_some() {
                    bits()
                } else {
                    Vec::new()
                },
                lo,
            };
            self.stream.run(
                lo..hi,
                |batch| {
                    // The entries of the batch's parents are read together (their misses
                    // overlap).
                    for &(q, _) in batch {
                        self.values.prefetch(q);
                    }
                    for &(q, candidate) in batch {
                        let v = self.values.get(q);
                        if candidate == v {
                            captures.set(&captures.achieved, q);
                        } else if candidate > v && self.check.is_some() {
                            captures.set(&captures.exceeded, q);
                        }
                    }
                },
                progress,
            )?;
            let exits = &captures;
            let chunks: Vec<u64> = (lo..hi).step_by(CHUNK as usize).collect();
            for window in chunks.chunks(window() as usize) {
                let records: Vec<Vec<u8>> = window
                    .par_iter()
                    .map(|&start| {
                        let end = (start + CHUNK).min(hi);
                        // Small levels only: a large one has chunks enough for every thread,
                        // and the parts would hold the chunk's seeds twice for a moment.
                        let seeds = if size < SPLIT_BELOW {
                            self.seeds_in_parts(start, end, exits)
                        } else {
                            self.seeds_of(start, end, exits)
                        };
                        progress.advance(end - start);
                        if seeds.is_empty() {
                            Vec::new()
                        } else {
                            encode_seeds((start / CHUNK) as u32, &seeds)
                        }
                    })
                    .collect();
                for r in records.iter().filter(|r| !r.is_empty()) {
                    file.write_all(r).map_err(io)?;
                    written += r.len() as u64;
                }
            }
            self.values.take_error()?;
            file.flush().map_err(io)?;
            file.get_ref().sync_data().map_err(io)?;
            self.stage = Stage::Seeds {
                done: hi,
                bytes: written,
            };
            if hi < size {
                self.write_checkpoint()?;
            }
        }
        self.wave_bytes.fetch_add(written - bytes, Relaxed);
        Ok(buckets.len() as u32)
    }

    /// [`DepthPass::seeds_of`] of `start..end` (within one chunk), its [`SUB_CHUNK`]s judged
    /// in parallel; offsets from `start`.
    fn seeds_in_parts(&self, start: u64, end: u64, captures: &CaptureBits) -> Vec<(u32, bool)> {
        let parts: Vec<Vec<(u32, bool)>> = (start..end)
            .step_by(SUB_CHUNK as usize)
            .collect::<Vec<u64>>()
            .into_par_iter()
            .map(|s| {
                let mut part = self.seeds_of(s, (s + SUB_CHUNK).min(end), captures);
                // Offsets in the chunk, not in the part.
                let base = (s - start) as u32;
                part.iter_mut().for_each(|(o, _)| *o += base);
                part
            })
            .collect();
        parts.concat()
    }

    /// The positions of `start..end` at depth 0 that are won or lost (`captures` says where
    /// a capture achieves the stored value): a winner that is terminal or whose value a
    /// capture achieves, a loser with no quiet child of the opposite value. Offsets in the
    /// chunk, with the win flag.
    ///
    /// With [`DepthPass::check_values`], each entry is also recomputed from its children and
    /// compared with the stored one (see [`DepthPass::check_entry`]).
    fn seeds_of(&self, start: u64, end: u64, captures: &CaptureBits) -> Vec<(u32, bool)> {
        let mut out = Vec::new();
        let mut counter = QuietMoves::new();
        let mut boards = self.level.boards(start..end);
        // Positions are taken SEEDS_GROUP at a time: the children each one needs are ranked
        // and prefetched first, so that their cache misses overlap, then all are judged.
        let mut group: [(Board, i8, Option<i8>); SEEDS_GROUP] =
            [(Board::default(), 0, None); SEEDS_GROUP];
        let mut children = [0u64; SEEDS_GROUP * 6];
        let mut first = [0usize; SEEDS_GROUP + 1];
        let mut q0 = start;
        loop {
            let (mut g, mut n) = (0, 0);
            while g < SEEDS_GROUP {
                let Some(board) = boards.next() else { break };
                let v = self.values.get(q0 + g as u64);
                let terminal = counter.count(&board, self.rules).err();
                first[g] = n;
                // The value check reads every quiet child; without it only a loser's are
                // needed (does one have the opposite value?).
                if terminal.is_none() && (self.check.is_some() || v < 0) {
                    board.for_each_ranked_quiet_child(self.rules, &self.level, |c| {
                        self.values.prefetch(c);
                        children[n] = c;
                        n += 1;
                    });
                }
                group[g] = (board, v, terminal);
                g += 1;
            }
            first[g] = n;
            if g == 0 {
                return out;
            }
            for (i, (board, v, terminal)) in group[..g].iter().enumerate() {
                let (q, v, terminal) = (q0 + i as u64, *v, *terminal);
                let by_capture = captures.get(&captures.achieved, q);
                let quiet = &children[first[i]..first[i + 1]];
                let optimal_quiet = if self.check.is_some() {
                    self.check_entry(q, board, v, terminal, by_capture, quiet, captures)
                } else {
                    v < 0 && quiet.iter().any(|&c| self.values.get(c) == -v)
                };
                let seed = match v.signum() {
                    0 => false,
                    1 => terminal.is_some() || by_capture,
                    _ => !optimal_quiet,
                };
                if seed {
                    out.push(((q - start) as u32, v > 0));
                }
            }
            q0 += g as u64;
        }
    }

    /// Recompute entry `idx` (its board, stored value `v`, terminal value if the game is over,
    /// whether a capture achieves `v`, the indices of its quiet children) from its children,
    /// recording a mismatch; returns
    /// whether a quiet move achieves `v`.
    ///
    /// Its value by the rules is its terminal value, or the best over its moves of
    /// `captures − value(child)`. So the stored value is right exactly when it is the terminal
    /// value, or when no move gives more (no capture exceeded it in the stream, no quiet child
    /// here) and some move gives it.
    #[allow(clippy::too_many_arguments)]
    fn check_entry(
        &self,
        idx: u64,
        board: &Board,
        v: i8,
        terminal: Option<i8>,
        by_capture: bool,
        quiet: &[u64],
        captures: &CaptureBits,
    ) -> bool {
        let (what, optimal_quiet) = match terminal {
            Some(t) => (
                (t != v).then(|| format!("stored {v}, recomputed {t} (terminal)")),
                false,
            ),
            None => {
                let (mut best, mut optimal) = (i8::MIN, false);
                for &c in quiet {
                    let m = -self.values.get(c);
                    best = best.max(m);
                    optimal |= m == v;
                }
                let what = if captures.get(&captures.exceeded, idx) {
                    Some(format!("stored {v}, but a capture gives more"))
                } else if best > v {
                    Some(format!("stored {v}, recomputed {best} (a quiet move)"))
                } else if !(by_capture || optimal) {
                    Some(format!("stored {v}, but no move gives it"))
                } else {
                    None
                };
                (what, optimal)
            }
        };
        if let Some(what) = what {
            self.mismatches.fetch_add(1, Relaxed);
            let mut ex = self.mismatch_examples.lock().expect("no panic holds it");
            if ex.len() < self.check.unwrap_or(0) {
                ex.push(Inconsistent {
                    index: idx,
                    board: *board,
                    what,
                });
            }
        }
        optimal_quiet
    }

    // ----- the waves -----------------------------------------------------------------------

    #[inline]
    fn words(&self) -> &[AtomicU64] {
        self.state.as_ref().expect("state allocated").words()
    }

    #[inline]
    fn code(&self, q: u64) -> u64 {
        (self.words()[(q / PER_WORD) as usize].load(Relaxed) >> (2 * (q % PER_WORD))) & 3
    }

    /// Make open position `q` new; whether this call did (it was open).
    #[inline]
    fn make_new(&self, q: u64) -> bool {
        let word = &self.words()[(q / PER_WORD) as usize];
        let shift = 2 * (q % PER_WORD);
        // Only open and new positions reach here (a done one is never changed while waves
        // propagate), so setting the low bit moves open to new and leaves new as it is.
        let old = word.fetch_or(NEW << shift, Relaxed);
        if (old >> shift) & 3 != OPEN {
            return false;
        }
        let b = q / BLOCK;
        let bit = 1u64 << (b % 64);
        let map = &self.blocks[(b / 64) as usize];
        if map.load(Relaxed) & bit == 0 {
            map.fetch_or(bit, Relaxed);
        }
        true
    }

    /// Mark the positions of wave file `k` done; returns how many it holds.
    fn mark_done(&self, k: u32) -> Result<u64, DepthError> {
        let mut reader = WaveReader::open(&wave_path(&self.out, self.level.seeds(), k))?;
        let mut count = 0;
        loop {
            let batch = reader.batch(WAVE_BATCH)?;
            if batch.is_empty() {
                return Ok(count);
            }
            count += batch
                .par_iter()
                .map(|(c, body)| {
                    let start = u64::from(*c) * CHUNK;
                    let seeds = decode_seeds(body);
                    for &(o, _) in &seeds {
                        let q = start + u64::from(o);
                        self.words()[(q / PER_WORD) as usize]
                            .fetch_or(DONE << (2 * (q % PER_WORD)), Relaxed);
                    }
                    seeds.len() as u64
                })
                .sum::<u64>();
        }
    }

    /// Propagate wave `k` (its file read back in batches, each record's positions in
    /// parallel): the new positions of wave k+1 are marked.
    fn propagate(&self, k: u32) -> Result<(), DepthError> {
        let mut reader = WaveReader::open(&wave_path(&self.out, self.level.seeds(), k))?;
        loop {
            let batch = reader.batch(WAVE_BATCH)?;
            if batch.is_empty() {
                return Ok(());
            }
            // Each record's slices are shared out too: a small level's wave is a few records
            // (one per chunk of 2^20 positions), which alone would leave threads idle.
            batch.par_iter().for_each(|(c, body)| {
                let start = u64::from(*c) * CHUNK;
                let seeds = decode_seeds(body);
                seeds.par_chunks(SLICE).for_each(|slice| {
                    let boards = seed_boards(&self.level, start, slice.iter().copied());
                    let entries: Vec<(u64, Board)> = slice
                        .iter()
                        .zip(boards)
                        .map(|(&(o, _), (b, _))| (start + u64::from(o), b))
                        .collect();
                    for group in entries.chunks(BATCH) {
                        self.expand(group);
                    }
                });
            });
        }
    }

    /// The predecessors of a group of wave entries: generated and their values and states
    /// prefetched, then each value-optimal open one made new (a winner at once, a loser if its
    /// loss test passes).
    fn expand(&self, group: &[(u64, Board)]) {
        let mut preds: Vec<(u64, Board, u8, i8)> = Vec::with_capacity(group.len() * 6);
        for &(p, board) in group {
            let w = self.values.get(p);
            board.for_each_ranked_predecessor_pit(self.rules, &self.level, |q, pred, h| {
                self.values.prefetch(q);
                self.state_prefetch(q);
                preds.push((q, pred, h, w));
            });
        }
        // Losers to test: (q, the value of the child, where its other quiet children start).
        let mut losers: Vec<(u64, i8, usize)> = Vec::new();
        let mut children: Vec<u64> = Vec::new();
        for &(q, pred, h, w) in &preds {
            if self.values.get(q) != -w || self.code(q) != OPEN {
                continue;
            }
            if w < 0 {
                // A lost child: the winner's shortest conversion goes through it.
                self.make_new(q);
            } else {
                // A won child: the loser's other quiet children are ranked and prefetched
                // now, tested below, so that their misses overlap.
                losers.push((q, w, children.len()));
                pred.all_quiet_children(self.rules, &self.level, Some(h), |c| {
                    self.values.prefetch(c);
                    self.state_prefetch(c);
                    children.push(c);
                    true
                });
            }
        }
        for (i, &(q, w, from)) in losers.iter().enumerate() {
            let to = losers.get(i + 1).map_or(children.len(), |l| l.2);
            if children[from..to]
                .iter()
                .all(|&c| self.values.get(c) != w || self.code(c) == DONE)
            {
                // Every value-optimal child of the loser is done: this wave found its deepest.
                self.make_new(q);
            }
        }
    }

    #[inline]
    fn state_prefetch(&self, q: u64) {
        self.state
            .as_ref()
            .expect("state allocated")
            .prefetch((q / PER_WORD) as usize);
    }

    /// Whether each wave is a checkpoint (its file synced, then the checkpoint written): from
    /// [`DURABLE_WAVES_FROM`] positions on. A smaller level's pass takes about a second, which
    /// a kill loses at most; its hundred-odd waves would spend more than that in fsync.
    fn durable_waves(&self) -> bool {
        self.level.size() >= DURABLE_WAVES_FROM
    }

    /// Make the new positions done and write them to wave file `k`, in index order (to its
    /// `.tmp`, synced where [`DepthPass::durable_waves`], renamed); returns how many there were.
    fn collect(&self, k: u32) -> Result<u64, DepthError> {
        let path = wave_path(&self.out, self.level.seeds(), k);
        let tmp = tmp_path(&path);
        let io = |source| TableError::Io {
            path: tmp.clone(),
            source,
        };
        let mut file = BufWriter::with_capacity(1 << 20, File::create(&tmp).map_err(io)?);
        let chunks = self.level.size().div_ceil(CHUNK);
        let mut count = 0u64;
        let mut bytes = 0u64;
        let window = window();
        for first in (0..chunks).step_by(window as usize) {
            let records: Vec<(u64, Vec<u8>)> = (first..(first + window).min(chunks))
                .into_par_iter()
                .map(|c| {
                    let found = self.collect_chunk(c);
                    let r = if found.is_empty() {
                        Vec::new()
                    } else {
                        encode_seeds(c as u32, &found)
                    };
                    (found.len() as u64, r)
                })
                .collect();
            for (found, r) in records {
                count += found;
                if !r.is_empty() {
                    file.write_all(&r).map_err(io)?;
                    bytes += r.len() as u64;
                }
            }
        }
        file.flush().map_err(io)?;
        if self.durable_waves() {
            file.get_ref().sync_data().map_err(io)?;
            drop(file);
            rename_into_place(&tmp, &path)?;
        } else {
            drop(file);
            std::fs::rename(&tmp, &path).map_err(io)?;
        }
        self.wave_bytes.fetch_add(bytes, Relaxed);
        Ok(count)
    }

    /// The new positions of chunk `c`, made done: their offsets, with the win flag.
    fn collect_chunk(&self, c: u64) -> Vec<(u32, bool)> {
        let start = c * CHUNK;
        let end = (start + CHUNK).min(self.level.size());
        let mut found = Vec::new();
        let words = self.words();
        let first_block = start / BLOCK;
        let last_block = end.div_ceil(BLOCK);
        for mw in (first_block / 64)..last_block.div_ceil(64) {
            let map = &self.blocks[mw as usize];
            let lo = (first_block.max(mw * 64) - mw * 64) as u32;
            let hi = (last_block.min(mw * 64 + 64) - mw * 64) as u32;
            let span = if hi - lo == 64 {
                u64::MAX
            } else {
                ((1u64 << (hi - lo)) - 1) << lo
            };
            let bits = map.load(Relaxed) & span;
            if bits == 0 {
                continue;
            }
            map.fetch_and(!bits, Relaxed);
            for_bits64(bits, |b| {
                let block = mw * 64 + b as u64;
                let from = block * BLOCK;
                let to = (from + BLOCK).min(end);
                for wi in from / PER_WORD..to.div_ceil(PER_WORD) {
                    let word = &words[wi as usize];
                    let w = word.load(Relaxed);
                    let new = w & LOW_LANES & !(w >> 1);
                    if new == 0 {
                        continue;
                    }
                    word.store(w ^ (new | (new << 1)), Relaxed);
                    for_bits64(new, |lane| {
                        let q = wi * PER_WORD + (lane as u64) / 2;
                        found.push(((q - start) as u32, self.values.get(q) > 0));
                    });
                }
            });
        }
        found
    }

    /// The positions left open: (won or lost ones, draws, the first `keep` of the former).
    fn open_positions(&self, keep: usize) -> Result<(u64, u64, Vec<Unproven>), DepthError> {
        let size = self.level.size();
        let examples = Mutex::new(Vec::new());
        let (unproven, draws) = (0..size.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let start = c * CHUNK;
                let end = (start + CHUNK).min(size);
                let (mut bad, mut draws) = (0u64, 0u64);
                for q in start..end {
                    let v = self.values.get(q);
                    if v == 0 {
                        draws += 1;
                    } else if self.code(q) != DONE {
                        bad += 1;
                        let mut ex = examples.lock().expect("no panic holds it");
                        if ex.len() < keep.max(1) {
                            ex.push(Unproven {
                                index: q,
                                board: self.level.unrank(q),
                                value: v,
                            });
                        }
                    }
                }
                (bad, draws)
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        self.values.take_error()?;
        let mut examples = examples.into_inner().expect("no panic holds it");
        examples.sort_by_key(|u| u.index);
        examples.truncate(keep.max(1));
        Ok((unproven, draws, examples))
    }

    // ----- the table -----------------------------------------------------------------------

    /// Merge wave files 1..=`max_depth` into the depth table, window by window of chunks.
    fn write_table(&self, max_depth: u16, progress: &dyn Progress) -> Result<PathBuf, DepthError> {
        let n = self.level.seeds();
        let size = self.level.size();
        let width: u8 = if max_depth <= u16::from(u8::MAX) {
            1
        } else {
            2
        };
        let path = depth_path(&self.out, n);
        let mut writer = TableWriter::create(&path, Header::depth(self.rules, n, width))?;
        let mut readers = (1..=u32::from(max_depth))
            .map(|k| WaveReader::open(&wave_path(&self.out, n, k)).map(|r| (k as u16, r)))
            .collect::<Result<Vec<_>, _>>()?;
        let chunks = size.div_ceil(CHUNK);
        let w = usize::from(width);
        let window = window();
        for first in (0..chunks).step_by(window as usize) {
            let last = (first + window).min(chunks);
            // The records of every wave for these chunks: (chunk, depth, body).
            let mut records: Vec<(u32, u16, Vec<u8>)> = Vec::new();
            for (k, r) in &mut readers {
                while let Some(rec) = r.next_before(last as u32)? {
                    records.push((rec.0, *k, rec.1));
                }
            }
            let lo = first * CHUNK;
            let hi = (last * CHUNK).min(size);
            let mut buf = vec![0u8; (hi - lo) as usize * w];
            buf.par_chunks_mut(CHUNK as usize * w)
                .enumerate()
                .for_each(|(j, out)| {
                    let c = (first + j as u64) as u32;
                    for (_, k, body) in records.iter().filter(|r| r.0 == c) {
                        for (o, _) in decode_seeds(body) {
                            let o = o as usize * w;
                            if w == 1 {
                                out[o] = *k as u8;
                            } else {
                                out[o..o + 2].copy_from_slice(&k.to_le_bytes());
                            }
                        }
                    }
                });
            writer.write(&buf)?;
            progress.advance(hi - lo);
        }
        writer.finish()?;
        Ok(path)
    }

    // ----- checkpoints ---------------------------------------------------------------------

    /// Write where the pass stands to `level-NN.dresume` (to `.tmp`, synced, renamed).
    ///
    /// ```text
    /// offset size  field
    ///      0    8  magic, b"AWARIDRS"
    ///      8    4  version, u32 LE (1)
    ///     12    1  rule set code
    ///     13    1  stage: 0 wave 0, 1 waves
    ///     14    2  reserved
    ///     16    4  seed count of the level, u32 LE
    ///     20    4  resumes so far, u32 LE
    ///     24    8  positions of the level, u64 LE
    ///     32    8  wave 0: positions done, u64 LE
    ///     40    8  wave 0: bytes of its file, u64 LE
    ///     48    4  waves: the last complete wave, u32 LE
    ///     52    4  exits passes, u32 LE
    ///     56    8  seconds so far (f64 LE)
    ///     64    8  exits seconds (f64 LE)
    ///     72    8  exits bytes read from storage, u64 LE
    ///     80    8  mismatches the value check found so far, u64 LE
    ///     88    8  XXH3-64 of bytes 0..88
    /// ```
    fn write_checkpoint(&self) -> Result<(), DepthError> {
        let n = self.level.seeds();
        let path = resume_path(&self.out, n);
        let tmp = tmp_path(&path);
        let mut h = [0u8; CKPT_LEN];
        h[0..8].copy_from_slice(CKPT_MAGIC);
        h[8..12].copy_from_slice(&1u32.to_le_bytes());
        h[12] = self.rules.code();
        let (stage, done, bytes, complete) = match self.stage {
            Stage::Seeds { done, bytes } => (0, done, bytes, 0),
            Stage::Waves { complete } => (1, 0, 0, complete),
        };
        h[13] = stage;
        h[16..20].copy_from_slice(&n.to_le_bytes());
        h[20..24].copy_from_slice(&self.carried.resumes.to_le_bytes());
        h[24..32].copy_from_slice(&self.level.size().to_le_bytes());
        h[32..40].copy_from_slice(&done.to_le_bytes());
        h[40..48].copy_from_slice(&bytes.to_le_bytes());
        h[48..52].copy_from_slice(&complete.to_le_bytes());
        h[52..56].copy_from_slice(&self.carried.passes.to_le_bytes());
        let seconds = self.carried.seconds + self.started.elapsed().as_secs_f64();
        h[56..64].copy_from_slice(&seconds.to_le_bytes());
        h[64..72].copy_from_slice(&self.carried.exits_seconds.to_le_bytes());
        h[72..80].copy_from_slice(&self.carried.exits_read.to_le_bytes());
        let mismatches = self.carried.mismatches + self.mismatches.load(Relaxed);
        h[80..88].copy_from_slice(&mismatches.to_le_bytes());
        let digest = xxhash_rust::xxh3::xxh3_64(&h[..88]);
        h[88..96].copy_from_slice(&digest.to_le_bytes());
        let io = |source| TableError::Io {
            path: tmp.clone(),
            source,
        };
        let mut f = File::create(&tmp).map_err(io)?;
        f.write_all(&h).map_err(io)?;
        f.sync_all().map_err(io)?;
        drop(f);
        rename_into_place(&tmp, &path)?;
        Ok(())
    }

    /// The checkpoint in the output directory, checked against the level and its wave files
    /// (`Ok(None)`: none).
    fn read_checkpoint(&self) -> Result<Option<(Stage, Carried)>, String> {
        let n = self.level.seeds();
        let path = resume_path(&self.out, n);
        let mut h = [0u8; CKPT_LEN];
        match File::open(&path) {
            Ok(mut f) => f
                .read_exact(&mut h)
                .map_err(|e| format!("{}: {e}", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
        let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().expect("8 bytes"));
        let f64_at = |o: usize| f64::from_le_bytes(h[o..o + 8].try_into().expect("8 bytes"));
        let bad = |why: &str| Err(format!("checkpoint {}: {why}", path.display()));
        if &h[0..8] != CKPT_MAGIC
            || u32_at(8) != 1
            || xxhash_rust::xxh3::xxh3_64(&h[..88]) != u64_at(88)
        {
            return bad("not a valid checkpoint of this version");
        }
        if h[12] != self.rules.code() || u32_at(16) != n || u64_at(24) != self.level.size() {
            return bad(&format!("not of level {n} under {}", self.rules));
        }
        let stage = match h[13] {
            0 if u64_at(32) <= self.level.size() => Stage::Seeds {
                done: u64_at(32),
                bytes: u64_at(40),
            },
            1 => Stage::Waves {
                complete: u32_at(48),
            },
            _ => return bad("unknown stage"),
        };
        // The wave files it relies on must be there.
        match stage {
            Stage::Seeds { bytes, .. } => {
                let len = std::fs::metadata(wave_path(&self.out, n, 0)).map_or(0, |m| m.len());
                if len < bytes {
                    return bad("wave 0 is shorter than it records");
                }
            }
            Stage::Waves { complete } => {
                if let Some(k) = (0..=complete).find(|&k| !wave_path(&self.out, n, k).exists()) {
                    return bad(&format!("wave file {k} is missing"));
                }
            }
        }
        Ok(Some((
            stage,
            Carried {
                seconds: f64_at(56),
                exits_seconds: f64_at(64),
                exits_read: u64_at(72),
                passes: u32_at(52),
                resumes: u32_at(20),
                mismatches: u64_at(80),
            },
        )))
    }
}

const CKPT_MAGIC: &[u8; 8] = b"AWARIDRS";
const CKPT_LEN: usize = 96;

/// Reads a wave file back, record by record (chunk, body).
struct WaveReader {
    inner: BufReader<File>,
    path: PathBuf,
    peeked: Option<(u32, Vec<u8>)>,
}

impl WaveReader {
    fn open(path: &Path) -> Result<WaveReader, TableError> {
        let file = File::open(path).map_err(|source| TableError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(WaveReader {
            inner: BufReader::with_capacity(1 << 16, file),
            path: path.to_path_buf(),
            peeked: None,
        })
    }

    /// The next record, if any.
    fn next(&mut self) -> Result<Option<(u32, Vec<u8>)>, TableError> {
        if let Some(r) = self.peeked.take() {
            return Ok(Some(r));
        }
        let io = |source| TableError::Io {
            path: self.path.clone(),
            source,
        };
        let mut head = [0u8; 8];
        match self.inner.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(io(e)),
        }
        let chunk = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
        let mut body = vec![0u8; len];
        self.inner.read_exact(&mut body).map_err(io)?;
        Ok(Some((chunk, body)))
    }

    /// The next record if its chunk is below `chunk` (else it stays for the next call).
    fn next_before(&mut self, chunk: u32) -> Result<Option<(u32, Vec<u8>)>, TableError> {
        match self.next()? {
            Some(r) if r.0 < chunk => Ok(Some(r)),
            other => {
                self.peeked = other;
                Ok(None)
            }
        }
    }

    /// Records totalling at least `bytes` (or what is left).
    fn batch(&mut self, bytes: usize) -> Result<Vec<(u32, Vec<u8>)>, TableError> {
        let mut out = Vec::new();
        let mut total = 0;
        while total < bytes {
            match self.next()? {
                Some(r) => {
                    total += 8 + r.1.len();
                    out.push(r);
                }
                None => break,
            }
        }
        Ok(out)
    }
}

/// Compute the depth table of level `n` of `levels` into `out` within `memory` bytes (`None`:
/// no limit), resuming a killed pass; see [`DepthPass`].
pub fn compute_depth(
    levels: &Levels,
    n: u32,
    out: &Path,
    memory: Option<u64>,
    write: bool,
    keep: usize,
    progress: &dyn Progress,
) -> Result<DepthReport, DepthError> {
    let bucket = exit_bucket(n, memory);
    DepthPass::open(levels, n, out, bucket)?.run(write, keep, progress)
}

/// Levels up to this many seeds keep plain depth tables under [`DepthForm::Auto`] (small,
/// and read most often); above it they are compressed.
pub const PLAIN_DEPTH_UP_TO: u32 = 20;

/// How a level's depth table is stored once computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DepthForm {
    /// Plain up to [`PLAIN_DEPTH_UP_TO`] seeds, compressed above.
    #[default]
    Auto,
    /// Always plain (`level-NN.depth`, one byte a position, two past depth 255).
    Plain,
    /// Always compressed (`level-NN.cdepth`; see [`awari_db::compressed`]), except a level
    /// with a depth above 255, which stays plain.
    Compressed,
}

impl DepthForm {
    /// Whether level `n`'s depth table is to be compressed.
    pub fn compresses(self, n: u32) -> bool {
        match self {
            DepthForm::Auto => n > PLAIN_DEPTH_UP_TO,
            DepthForm::Plain => false,
            DepthForm::Compressed => true,
        }
    }
}

/// Open level `n`'s depth table just written plain into `levels`' directory, into `levels`,
/// and where `form` compresses it, replace it by its compressed form (see
/// [`crate::compress::compress_depth_in_place`]). Returns the file kept and its bytes.
pub fn store_depth(
    levels: &mut Levels,
    n: u32,
    form: DepthForm,
    progress: &dyn Progress,
) -> Result<(PathBuf, u64), DepthError> {
    let plain = Table::open(
        depth_path(levels.dir(), n),
        awari_db::Expect {
            rules: Some(levels.rules()),
            seeds: Some(n),
            content: Some(awari_db::Content::Depth),
        },
    )?;
    levels.insert_depth(plain);
    store_as(levels, n, form, progress)
}

/// Store level `n`'s depth table, open in `levels`, as `form` asks: a plain one is replaced by
/// its compressed form where `form` compresses (see
/// [`crate::compress::compress_depth_in_place`]). Returns the file kept and its bytes.
fn store_as(
    levels: &mut Levels,
    n: u32,
    form: DepthForm,
    progress: &dyn Progress,
) -> Result<(PathBuf, u64), DepthError> {
    if form.compresses(n) {
        if let Some((_, table)) = crate::compress::compress_depth_in_place(levels, n, progress)? {
            levels.insert_depth(table);
        }
    }
    let t = levels.depth_table(n).expect("a depth table, open");
    Ok((t.path().to_path_buf(), t.file_len()))
}

/// One level of [`add_depth_tables`].
#[derive(Clone, Debug)]
pub struct LevelDepth {
    /// The level.
    pub level: u32,
    /// What its pass found (`None`: it had a depth table, kept).
    pub report: Option<DepthReport>,
    /// Seconds it took.
    pub seconds: f64,
    /// Peak resident anonymous memory meanwhile, if measured.
    pub peak_anon: Option<u64>,
    /// Its depth table's file.
    pub table: PathBuf,
    /// Bytes of its depth table.
    pub table_bytes: u64,
    /// Whether its values were checked too (so the level is proven).
    pub checked: bool,
}

/// `awari-solver depth`: add a depth table to every level of `stones` (all present if empty)
/// of the database `db` that has none, lowest first, written into `out` (default: `db`; else
/// `db`'s values tables are linked into `out`, which becomes a database directory of its own),
/// each pass within `memory` bytes. With `check`, each pass also recomputes every entry from
/// its children ([`DepthPass::check_values`]), so that a level written is proven (its values
/// consistent, and every win and loss converting); a wrong entry is an error
/// ([`DepthError::Inconsistent`]) and no table is written. Each table is stored in `form`
/// (a kept plain table too, compressed where `form` asks).
/// `on_level` is called after each level.
#[allow(clippy::too_many_arguments)]
pub fn add_depth_tables(
    db: &Path,
    out: Option<&Path>,
    stones: &[u32],
    memory: Option<u64>,
    check: bool,
    form: DepthForm,
    progress: &dyn Progress,
    mut on_level: impl FnMut(&LevelDepth),
) -> Result<Vec<LevelDepth>, DepthError> {
    let source = Levels::open(db, None)?;
    let dir = match out {
        Some(out) if out != db => {
            link_values(&source, out)?;
            out.to_path_buf()
        }
        _ => db.to_path_buf(),
    };
    drop(source);
    let mut levels = Levels::open(&dir, None)?;
    let mut wanted: Vec<u32> = if stones.is_empty() {
        levels.present().collect()
    } else {
        stones.to_vec()
    };
    wanted.sort_unstable();
    wanted.dedup();
    if wanted.is_empty() {
        return Err(DbError::NotADirectory {
            dir: db.to_path_buf(),
            reason: "it holds no levels".into(),
        }
        .into());
    }
    let mut done = Vec::new();
    for n in wanted {
        levels.require(n)?;
        if let Some(t) = levels.depth_table(n) {
            let start = Instant::now();
            // Kept, but stored as asked: a plain table is compressed.
            if form.compresses(n) && !t.is_compressed() {
                progress.level(n, level_size(n));
            }
            let (table, table_bytes) = store_as(&mut levels, n, form, progress)?;
            let r = LevelDepth {
                level: n,
                report: None,
                seconds: start.elapsed().as_secs_f64(),
                peak_anon: None,
                table,
                table_bytes,
                checked: false,
            };
            on_level(&r);
            done.push(r);
            continue;
        }
        let start = Instant::now();
        let peak = sys::AnonPeak::start();
        progress.level(n, level_size(n));
        let pass = DepthPass::open(&levels, n, &dir, exit_bucket(n, memory))?;
        let pass = if check { pass.check_values(10) } else { pass };
        let report = pass.run(true, 10, progress)?;
        let (table, table_bytes) = store_depth(&mut levels, n, form, progress)?;
        let r = LevelDepth {
            level: n,
            seconds: start.elapsed().as_secs_f64(),
            peak_anon: peak.finish(),
            table,
            table_bytes,
            report: Some(report),
            checked: check,
        };
        on_level(&r);
        done.push(r);
    }
    Ok(done)
}

/// Link every values table of `source` into `out` (created if missing) where `out` has none.
fn link_values(source: &Levels, out: &Path) -> Result<(), DepthError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TableError::Io { path, source }
    };
    std::fs::create_dir_all(out).map_err(io(out))?;
    for n in source.present() {
        let table = source.require(n)?;
        let from = std::fs::canonicalize(table.path()).map_err(io(table.path()))?;
        let name = from.file_name().expect("a table file has a name");
        let to = out.join(name);
        if !to.exists() {
            std::os::unix::fs::symlink(&from, &to).map_err(io(&to))?;
        }
    }
    Ok(())
}
