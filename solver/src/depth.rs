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
//!  | 3 new | depth k+1, found |    | offsets of the positions at depth k (the seed-   |
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
//!
//! # The class pass
//!
//! [`DepthPass`] reads the level's values table at random (wave 0's parents, a loser's
//! children, each wave entry's predecessors): fast while the table sits in the page cache,
//! and thousands of times slower once it does not (level 24 in 0.5 bytes of memory per
//! position, page cache included: 16 hours instead of a minute). [`ClassPass`] computes the
//! same table and report from the same 2 bits a position with no random read of any file:
//! the values are read once, in order, into one list per value class ±v, and each class is
//! then searched on its own, its codes standing for "won by v", "lost by v", new and done
//! (see `depth/classes.rs`). Its value check ([`ClassPass::check_values`], `verify --prove`
//! and `depth --check`) is the streamed check's ([`crate::verify::verify_level_streamed`]),
//! folded into its first phase.
//! [`depth_algorithm`] picks the pass: `AWARI_DEPTH=classes` or `waves`, else the class pass
//! where the level's values (a byte a position) and the pass's memory exceed the memory
//! available.
//!
//! # Files
//!
//! This file holds the pass's types and its driver ([`DepthPass::open`], [`DepthPass::run`]);
//! the rest, one concept a file, in `depth/`: `budget` (the memory, disk and I/O a pass
//! needs), `wave_zero` (the capture bitmaps and the depth-0 positions), `check` (the value
//! check of wave 0), `wave_state` (the 2-bit states and the block map, shared with the class
//! pass), `waves` (the waves' propagation), `table` (the wave files merged into the table),
//! `work_files` and `checkpoint` (the pass's files on disk, and resuming), `classes` (the
//! class pass, [`ClassPass`], with its own files in `depth/classes/`) and `database`
//! (`awari-solver depth`: the passes over a database, which pass a level gets, and how the
//! tables are stored). The wave files' records are encoded by `crate::seed_records`.

mod budget;
mod check;
mod checkpoint;
mod classes;
mod database;
mod table;
mod wave_state;
mod wave_zero;
mod waves;
mod work_files;

pub use budget::{
    class_prove_io, disk_needed, exit_bucket, least_memory, memory_needed, memory_used,
    one_bit_found, values_fit, work_io, WAVE_BYTES_PER_POSITION,
};
pub use classes::{class_bucket, class_memory, ClassPass};
pub use database::{
    add_depth_tables, compute_depth, depth_algorithm, store_depth, DepthAlgorithm, DepthForm,
    LevelDepth, Pass, PLAIN_DEPTH_UP_TO,
};
pub use work_files::{remove_work_files, resume_path};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

use awari_db::{Board, DbError, Level, Levels, Rules, Table, TableError};

use crate::exits::{CaptureStream, ExitsStats};
use crate::progress::Progress;
use crate::sys;
use wave_state::WaveState;
use work_files::wave_path;

/// Positions per chunk: the unit of the wave records (as the two-bit builder's).
const CHUNK: u64 = crate::seed_records::CHUNK;
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
    /// Another process writes into the directory.
    #[error(transparent)]
    Locked(#[from] crate::sys::LockError),
    /// The disk filled up under a work file or the table. Nothing is left under a final
    /// name; the wave files written so far are kept for a resume.
    #[error("level {level}: the disk is full writing {} (the depth pass needs about {} there, its wave files and its table); free space and run it again, which resumes it at its last checkpoint", path.display(), crate::sys::human(*needed))]
    DiskFull {
        /// The level.
        level: u32,
        /// The file being written.
        path: PathBuf,
        /// Bytes the pass needs on that disk ([`disk_needed`] and the table).
        needed: u64,
    },
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
    /// With the value check of a [`ClassPass`]: the level's checksum failed (its entries
    /// were checked all the same).
    #[error("{}", .0.checksum)]
    Checksum(Box<BadChecksum>),
    /// The level's values are in the probe form, which only a capture search resolves.
    #[error("{}: level {seeds} is in the probe form; compute depths from plain or self-contained compressed values", path.display())]
    ProbeForm {
        /// The file.
        path: PathBuf,
        /// The level.
        seeds: u32,
    },
}

/// What the value check of a [`ClassPass`] found in a level whose checksum failed.
#[derive(Debug)]
pub struct BadChecksum {
    /// The checksum's error.
    pub checksum: TableError,
    /// Entries that are not the best of their moves.
    pub inconsistent: u64,
    /// The first of them by index.
    pub examples: Vec<Inconsistent>,
    /// Buckets of the pass's phase 1 (over every run).
    pub passes: u32,
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
    /// Where this run resumed: `Some(None)` in wave 0, `Some(Some(k))` after wave k (a
    /// [`ClassPass`]: in its class lists, after wave k of the class in progress, 0 between
    /// classes).
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

/// The values of the level, read at random.
enum Values<'a> {
    /// A plain table and its data.
    Plain(&'a Table, &'a [u8]),
    Table(&'a Table, Mutex<Option<TableError>>),
}

impl Values<'_> {
    #[inline]
    fn get(&self, i: u64) -> i8 {
        match self {
            Values::Plain(_, d) => d[i as usize] as i8,
            Values::Table(t, failed) => t.value(i).unwrap_or_else(|e| {
                failed.lock().expect("no panic holds it").get_or_insert(e);
                0
            }),
        }
    }

    #[inline]
    fn prefetch(&self, i: u64) {
        match self {
            Values::Plain(_, d) => crate::state::prefetch_line(&d[i as usize]),
            Values::Table(t, _) => t.prefetch_value(i),
        }
    }

    fn take_error(&self) -> Result<(), TableError> {
        match self {
            Values::Plain(..) => Ok(()),
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
    state: Option<WaveState>,
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
            Some(d) => Values::Plain(table, d),
            None => Values::Table(table, Mutex::new(None)),
        };
        let rules = levels.rules();
        let stream = CaptureStream::new(n, rules, levels)?;
        let level = Level::new(n);
        let mut pass = DepthPass {
            level,
            rules,
            values,
            stream,
            out: out.to_path_buf(),
            bucket: bucket.clamp(1, level.size().max(1)).div_ceil(CHUNK) * CHUNK,
            state: None,
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
        self,
        write: bool,
        keep: usize,
        progress: &dyn Progress,
    ) -> Result<DepthReport, DepthError> {
        let checkpoint = resume_path(&self.out, self.level.seeds());
        // A plain table's values are read at random: its chunks are checked first, but where
        // the value check is to report the checksum with what it finds.
        if let (Values::Plain(table, _), None) = (&self.values, self.check) {
            table.check_entries(0..self.level.size())?;
        }
        self.run_from_stage(write, keep, progress)
            .inspect_err(|e| forget_damaged(e, &checkpoint))
    }

    fn run_from_stage(
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
        let state = WaveState::new(self.level.size()).map_err(DepthError::Alloc)?;
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
}

/// After a pass met a damaged work file (one its resume did not read), remove its
/// checkpoint `checkpoint`, so that the next run starts the level afresh rather than believe
/// the files again.
pub(crate) fn forget_damaged(e: &DepthError, checkpoint: &std::path::Path) {
    if let DepthError::Table(TableError::Damaged { .. }) = e {
        let _ = std::fs::remove_file(checkpoint);
    }
}
