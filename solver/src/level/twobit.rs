//! The two-bit level algorithm: 2 bits of RAM per position (0.25 bytes, under 0.33 in all),
//! no counters, exits and values in a work file on disk, and a checkpoint at every step, so
//! that a level of hours resumes where it was killed.
//!
//! ```text
//!  RAM (2 bits a position, 32 to a word)     disk, level-NN.work (1 byte a position)
//!  +--------+-------------------------+      +---------------------------------------+
//!  | 0 open | unsettled, exit > −i    |      | unsettled: its exit (−48..48, none)   |
//!  | 1 los- | unsettled, exit ≤ −i:   |      | settled:   its value, flagged         |
//!  |   able | a loss once every child |      |            (v ^ 0x80: bits 7, 6 differ)|
//!  |        | is won                  |      +---------------------------------------+
//!  | 2 won  | value ≥ i               |      level-NN.seeds   the seeds of step i
//!  | 3 lost | value ≤ −i              |      level-NN.resume  the state at the last step
//!  +--------+-------------------------+                       boundary (checkpoint)
//! ```
//!
//! The in-memory algorithm keeps, per position, a counter of children not yet known to be
//! wins; a loss is found when it reaches zero. Here the **loss test re-reads the children**
//! instead: when a child is won, each losable predecessor generates its non-capturing moves
//! ([`awari_db::Board::for_each_ranked_quiet_child`]) and is lost if every child's state is `won`. That
//! costs move generation and a few random reads per test, and saves 3 bits per position.
//!
//! 1. **Exits**, in buckets of the level as large as the memory allows (the state is not
//!    allocated yet): the forward pass sets each position's terminal value, the lower levels
//!    are streamed and un-captured into the bucket (see [`crate::exits`]), and the bucket's
//!    exit bytes are written to the work file in order. A checkpoint follows each bucket.
//! 2. **Settling**, for i = n … 1, in two phases:
//!    - *stream*: every chunk of the work file that can change at this step (see
//!      `ChunkMasks`) is read in order with its states: positions settled by the previous
//!      step's propagation get their value ±(i+1) written; an unsettled position whose exit is
//!      i is won (a seed, its value i written at once); one whose exit is −i becomes losable
//!      and is lost (a seed) if its children are all won already. The seeds go to the seed
//!      file, in index order per chunk.
//!    - *propagate*: the seed file is read back and propagated depth first by un-moves, as in
//!      the in-memory algorithm: a lost position makes each unsettled predecessor won; a won
//!      one makes each losable predecessor run the loss test. Only the states change (in
//!      RAM); their values are written by the next step's stream.
//!
//!    The two phases do not overlap: a settled position whose byte still holds its exit was
//!    therefore settled by the previous step's propagation, and is worth ±(i+1).
//! 3. After step 1, a last stream writes ±1, then the work file is **converted in place**
//!    into the table (flagged values to plain ones, unsettled positions to 0, a draw), its
//!    header written, and renamed to `level-NN`: no second copy of the level on disk.
//!
//! Every position a step settles is settled at ±i and the sets are those of the in-memory
//! algorithm (a loss test that fails in the stream, because a child was won in another chunk
//! meanwhile, is run again when that child is propagated), so the tables are the same, byte
//! for byte (tested on every level up to 20 under the three rule sets).
//!
//! **Resuming.** At each step boundary the work file is synced and the states, the chunk
//! masks and where the build stands are written to `level-NN.resume` (to `.tmp`, synced,
//! renamed). Rerunning `build` after a kill starts the level from there: the stream's writes
//! since the checkpoint are of values it would write again (a settled position's ±(i+1), or a
//! seed's ±i, which the rerun recognises as the same seed), and propagation writes nothing to
//! disk. The conversion is idempotent too. The loss of a kill is at most one step.
//!
//! Memory: the states (0.25 bytes per position) and, per thread, a chunk's buffer; the exits
//! phase holds its bucket's exit bytes instead. Disk: the work file (1 byte per position,
//! which becomes the table) and the checkpoint (0.25 bytes per position, twice while a new
//! one replaces the old).
//!
//! # Files
//!
//! This file holds the builder's types and its driver ([`TwoBit::open`], [`TwoBit::run`]);
//! the rest, one concept a file, in `twobit/`: `codes` (the 2-bit states in RAM, the bytes of
//! the work file, and the SWAR over 32 of each), `budget` (the memory, disk and I/O a level
//! needs, and the exit buckets), `work_files` (the level's files: paths, removal, the work
//! file's reads and writes, the seed file), `exits` (phase 1), `stream` and `propagate` (the
//! two phases of a step), `convert` (the work file into the table) and `checkpoint` (the
//! checkpoint file, written and read back). The seed records are encoded by
//! `crate::seed_records`.

mod budget;
mod checkpoint;
mod codes;
mod convert;
mod exits;
mod propagate;
mod stream;
mod work_files;

pub use budget::{disk_needed, exit_bucket, memory_needed, memory_used, work_io};
pub use checkpoint::checkpoint_stage;
pub use work_files::{remove_work_files, work_paths};

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use awari_db::table::{CHECKSUM_CHUNK, HEADER_LEN};
use awari_db::{level_size, Level, Levels, Rules, TableError};

use crate::exits::{CaptureStream, ExitsStats};
use crate::progress::Progress;
use crate::settle::{BuilderError, LevelCounts};
use crate::state::StateArray;
use crate::sys;
use budget::chunk_count;
use checkpoint::{read_checkpoint, BadCheckpoint, Checkpoint};
use work_files::{IoCount, WorkFile};

/// Positions per state word.
const PER_WORD: u64 = 32;
/// Positions per chunk of the work file (1 MiB): the unit of streaming and of the masks.
const CHUNK: u64 = 1 << 20;
const _: () = assert!(CHUNK % PER_WORD == 0 && CHECKSUM_CHUNK as u64 % CHUNK == 0);

/// Where a level's build stands, as a checkpoint records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The exits of positions `0..done` are in the work file.
    Exits {
        /// Positions done.
        done: u64,
    },
    /// Steps above `next` are settled; step `next` runs next (0: the last stream, which writes
    /// the values of step 1's propagation).
    Settle {
        /// The next step.
        next: u32,
    },
    /// Every value is in the work file; it is being converted into the table.
    Convert,
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Stage::Exits { done } => write!(f, "exits, {done} positions done"),
            Stage::Settle { next: 0 } => write!(f, "the last stream"),
            Stage::Settle { next } => write!(f, "step {next}"),
            Stage::Convert => write!(f, "the conversion to the table"),
        }
    }
}

/// What carried over from the runs before a resume, for the summary.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Carried {
    /// Seconds of the earlier runs, up to their last checkpoint.
    seconds: f64,
    /// Bytes read and written by them.
    read: u64,
    written: u64,
    /// Their exits phase.
    exits_seconds: f64,
    exits_read: u64,
    passes: u32,
}

/// The per-chunk summaries that let a step skip chunks: for each chunk, the set of exit bytes
/// among its unsettled positions (bit e + 64 for exit e), as of the exits phase less the steps
/// done (a superset of what is left), and whether its propagation settled any position whose
/// value is not written yet. A chunk is streamed at step i only if its mask holds i or −i, or
/// it has values to write, or i is the first step.
struct ChunkMasks {
    masks: Vec<u128>,
    pending: Vec<AtomicBool>,
}

/// Builds one level with the two-bit algorithm.
pub struct TwoBit<'a> {
    level: Level,
    rules: Rules,
    stream: CaptureStream<'a>,
    work: WorkFile,
    seeds_path: PathBuf,
    ckpt_path: PathBuf,
    /// Where the next checkpoint is written before it is renamed over `ckpt_path`.
    ckpt_tmp: PathBuf,
    chunks: ChunkMasks,
    state: StateArray<AtomicU64>,
    io: IoCount,
    bucket: u64,
    stage: Stage,
    resumes: u32,
    carried: Carried,
    started: Instant,
    /// Where this run began (`None`: from the start).
    resumed_from: Option<Stage>,
}

/// What [`TwoBit::run`] reports.
#[derive(Clone, Copy, Debug)]
pub struct TwoBitReport {
    /// Wins, draws and losses.
    pub counts: LevelCounts,
    /// The exits phase, over all runs.
    pub exits: ExitsStats,
    /// Bytes read and written, over all runs up to their checkpoints: the work, seed and
    /// checkpoint files and the table (the lower levels are in `exits`).
    pub bytes_read: u64,
    /// See `bytes_read`.
    pub bytes_written: u64,
    /// Seconds over all runs (each up to its last checkpoint, this one to its end).
    pub seconds: f64,
    /// Where this run resumed, if it did, and how many times the level was resumed in all.
    pub resumed: Option<(Stage, u32)>,
}

impl<'a> TwoBit<'a> {
    /// Prepare level `n` in `dir`, resuming from its checkpoint if there is a valid one (else
    /// starting afresh), with exit buckets of `bucket` positions (see [`exit_bucket`]).
    pub fn open(
        dir: &Path,
        n: u32,
        rules: Rules,
        lower: &'a Levels,
        bucket: u64,
    ) -> Result<TwoBit<'a>, BuilderError> {
        let stream = CaptureStream::new(n, rules, lower)?;
        let [work_path, seeds_path, ckpt_path, ckpt_tmp] = work_paths(dir, n);
        let _ = std::fs::remove_file(&ckpt_tmp);
        let level = Level::new(n);
        let size = level.size();
        let chunks = chunk_count(n) as usize;
        let state =
            StateArray::new(size.div_ceil(PER_WORD) as usize).map_err(BuilderError::Alloc)?;
        let io = IoCount::default();
        let resumed = match read_checkpoint(&ckpt_path, &work_path, n, rules, &state, &io) {
            Ok(c) => c,
            Err(BadCheckpoint(why)) => {
                if ckpt_path.exists() || work_path.exists() {
                    eprintln!("level {n}: starting afresh: {why}");
                }
                None
            }
        };
        let open = |create: bool| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(create)
                .truncate(create)
                .open(&work_path)
                .map_err(|source| TableError::Io {
                    path: work_path.clone(),
                    source,
                })
        };
        let (file, ckpt) = match resumed {
            Some(c) => (open(false)?, c),
            None => {
                let _ = std::fs::remove_file(&ckpt_path);
                let f = open(true)?;
                f.set_len(HEADER_LEN as u64 + size)
                    .map_err(|source| TableError::Io {
                        path: work_path.clone(),
                        source,
                    })?;
                let c = Checkpoint {
                    stage: Stage::Exits { done: 0 },
                    resumes: 0,
                    carried: Carried::default(),
                    masks: vec![0; chunks],
                    pending: vec![false; chunks],
                };
                (f, c)
            }
        };
        let resumed_from = (ckpt.stage != Stage::Exits { done: 0 }).then_some(ckpt.stage);
        let resumes = ckpt.resumes + u32::from(resumed_from.is_some());
        Ok(TwoBit {
            level,
            rules,
            stream,
            work: WorkFile {
                path: work_path,
                file,
            },
            seeds_path,
            ckpt_path,
            ckpt_tmp,
            chunks: ChunkMasks {
                masks: ckpt.masks,
                pending: ckpt.pending.into_iter().map(AtomicBool::new).collect(),
            },
            state,
            io,
            bucket: bucket.max(1).div_ceil(CHUNK) * CHUNK,
            stage: ckpt.stage,
            resumes,
            carried: ckpt.carried,
            started: Instant::now(),
            resumed_from,
        })
    }

    /// Build the level to its table, `dir/level-NN` (renamed into place), from wherever it
    /// stands; the work files are removed at the end.
    pub fn run(mut self, progress: &dyn Progress) -> Result<TwoBitReport, TableError> {
        let n = self.level.seeds();
        if let Stage::Exits { done } = self.stage {
            let t = Instant::now();
            let read0 = sys::read_bytes();
            let passes = self.compute_exits(done, progress)?;
            let exits_seconds = t.elapsed().as_secs_f64();
            let exits_read = match (read0, sys::read_bytes()) {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => 0,
            };
            self.carried.exits_seconds += exits_seconds;
            self.carried.exits_read += exits_read;
            self.carried.passes += passes;
            self.stage = Stage::Settle { next: n };
            self.checkpoint(false)?;
        }
        let timings = std::env::var_os("AWARI_TIMINGS").is_some();
        progress.phase("settle", self.level.size());
        while let Stage::Settle { next } = self.stage {
            let t = Instant::now();
            progress.message(&format!("step {next}"));
            let streamed = self.stream_step(next as i8)?;
            let t_stream = t.elapsed().as_secs_f64();
            let settled = if next > 0 {
                self.propagate_step(progress)?
            } else {
                0
            };
            if timings {
                eprintln!(
                    "level {n} step {next}: {streamed} chunks streamed in {t_stream:.2} s, {settled} settled by propagation, {:.2} s",
                    t.elapsed().as_secs_f64()
                );
            }
            self.stage = if next == 0 {
                Stage::Convert
            } else {
                Stage::Settle { next: next - 1 }
            };
            self.checkpoint(true)?;
        }
        progress.phase("write", self.level.size());
        let counts = self.convert(progress)?;
        let _ = std::fs::remove_file(&self.ckpt_path);
        let _ = std::fs::remove_file(&self.seeds_path);
        Ok(TwoBitReport {
            counts,
            exits: ExitsStats {
                seconds: self.carried.exits_seconds,
                bytes_read: Some(self.carried.exits_read),
                lower_bytes: self.stream.positions(),
                passes: self.carried.passes,
            },
            bytes_read: self.carried.read + self.io.read.load(Relaxed),
            bytes_written: self.carried.written + self.io.written.load(Relaxed),
            seconds: self.carried.seconds + self.started.elapsed().as_secs_f64(),
            resumed: self.resumed_from.map(|s| (s, self.resumes)),
        })
    }
}

impl Stage {
    /// How far along the level this is, as a number that grows as the build proceeds
    /// (positions with exits, then one per step, then the conversion).
    pub fn progress(self, n: u32) -> u64 {
        let size = level_size(n);
        match self {
            Stage::Exits { done } => done,
            Stage::Settle { next } => size + 1 + u64::from(n - next),
            Stage::Convert => size + 2 + u64::from(n),
        }
    }
}
