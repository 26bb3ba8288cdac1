//! The two-bit level algorithm: 2 bits of RAM per position (0.25 bytes, under 0.33 in all),
//! no counters, the exits and the values in record files on disk, read and written in order,
//! each about once, and a checkpoint every few minutes, so that a level of hours resumes
//! where it was killed.
//!
//! ```text
//!  RAM (2 bits a position, 32 to a word)     disk, level-NN.work/ (see `work_files`)
//!  +--------+-------------------------+      +---------------------------------------+
//!  | 0 open | unsettled, exit > −i    |      | exit+NN, exit-NN, exit-none: the      |
//!  | 1 los- | unsettled, exit ≤ −i:   |      |   positions of each exit (delta-coded)|
//!  |   able | a loss once every child |      | part-KKK: the positions settled, with |
//!  |        | is won                  |      |   their values, per exit bucket       |
//!  | 2 won  | value ≥ i               |      | resume: the checkpoint (file lengths) |
//!  | 3 lost | value ≤ −i              |      +---------------------------------------+
//!  +--------+-------------------------+
//! ```
//!
//! The in-memory algorithm keeps, per position, a counter of children not yet known to be
//! wins; a loss is found when it reaches zero. Here the **loss test re-reads the children**
//! instead: when a child is won, each losable predecessor generates its non-capturing moves
//! ([`awari_db::Board::for_each_ranked_quiet_child`]) and is lost if every child's state is `won`. That
//! costs move generation and a few random reads per test, and saves 3 bits per position.
//!
//! 1. **Exits**, in buckets of the level as large as the memory allows (the state is not
//!    touched yet): the forward pass sets each position's terminal value, the lower levels
//!    are streamed and un-captured into the bucket (see [`crate::exits`]), and the bucket's
//!    positions are appended to the **exit lists**, one file per exit value (exit 0, which no
//!    step acts on, in none). A checkpoint follows each bucket.
//! 2. **Settling**, for i = n … 1, in two phases:
//!    - *stream*: the lists of exit +i and −i are read (see `stream`): a position of +i not
//!      yet won is won, a seed; one of −i becomes losable and is lost, a seed, if its
//!      children are all won. The seeds go to the seed files (`seeds.won`, `seeds.lost`).
//!    - *propagate*: the seed files are read back and propagated depth first by un-moves, as
//!      in the in-memory algorithm: a lost position makes each unsettled predecessor won; a
//!      won one makes each losable predecessor run the loss test.
//!
//!    Every position a step settles goes with its value ±i to the log, gathered in RAM and
//!    appended in sorted blocks to one part file per exit bucket (see `log`).
//!
//!    So a step reads only its two exit lists, not the level, and writes only what it settles.
//! 3. After step 1, the **conversion** hands the table's values to the build's driver a
//!    bucket at a time, each from its part file (see `convert`): a position in none is a
//!    draw.
//!
//! Every position a step settles is settled at ±i and the sets are those of the in-memory
//! algorithm (a loss test that fails in the stream, because a child is won later in the
//! step, is run again when that child is propagated), so the tables are the same, byte for
//! byte (tested on every level up to 20 under the rule sets).
//!
//! **Resuming.** Every file is synced when written, and after each exit bucket and at the
//! first step boundary 5 minutes after the last checkpoint (`AWARI_CHECKPOINT_SECONDS`), the
//! log is flushed and the checkpoint records where the build stands and each file's length
//! (see `checkpoint`). The states are not saved: a resume rolls the files back to the
//! checkpoint and rebuilds the states from them. A kill loses at most the steps since.
//!
//! Memory: the states (0.25 bytes per position), the log being gathered (what the budget
//! leaves) and, per thread, a record's positions; the exits phase holds its bucket's exit
//! bytes instead, and the conversion a bucket of the table. Disk: the exit lists and the log
//! (a few bytes per position, see [`disk_needed`]), then the table.
//!
//! **One bit** ([`StateBits::One`], `build --mode one-bit`): the same phases and files with one
//! bit a position, settled or not (see `codes`): losses published predecessors first, and
//! the losability of a position with an exit looked up in rounds of candidates in the exit
//! lists (see `candidates`).
//!
//! # Files
//!
//! This file holds the builder's types and its phases ([`TwoBit::open`], [`TwoBit::solve`], [`TwoBit::write_values`]);
//! the rest, one concept a file, in `twobit/`: `codes` (the 2-bit states and their updates,
//! the loss test), `budget` (the memory, disk and I/O a level needs, the exit buckets),
//! `work_files` (the work directory, its names, the record files' writer and reader),
//! `exits` (phase 1), `stream` and `propagate` (the two phases of a step), `log` (the settled
//! positions and their part files), `convert` (the files into the table) and `checkpoint`. The records are
//! encoded by `crate::seed_records`.

mod budget;
mod candidates;
mod checkpoint;
mod codes;
mod convert;
mod exits;
mod log;
mod propagate;
mod stream;
mod work_files;

pub use budget::{convert_reads, disk_needed, exit_bucket, memory_needed, memory_used, work_io};
pub use checkpoint::checkpoint_stage;
pub use codes::StateBits;
pub use work_files::{remove_work_files, work_dir};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use awari_db::{level_size, Level, Levels, Rules, TableError};

use super::{Carried, Solved};
use crate::exits::CaptureStream;
use crate::progress::Progress;
use crate::settle::BuilderError;
use crate::state::StateArray;
use crate::sys;
use checkpoint::read_checkpoint;
use log::SettledLog;
use work_files::{IoCount, DEPTHS, SEEDS_LOST, SEEDS_WON};

/// Positions per chunk (2^20): the unit of the record files (a record per chunk).
const CHUNK: u64 = crate::seed_records::CHUNK;
const _: () = assert!(CHUNK % StateBits::One.per_word() == 0);
/// What an exit bucket is a multiple of: whole checksum chunks of the table, which the
/// conversion writes a bucket at a time.
const BUCKET_UNIT: u64 = awari_db::table::CHECKSUM_CHUNK as u64;
const _: () = assert!(BUCKET_UNIT % CHUNK == 0);

/// Where a level's build stands, as a checkpoint records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The exits of positions `0..done` are in the work file.
    Exits {
        /// Positions done.
        done: u64,
    },
    /// Steps above `next` are settled; step `next` (1 or more) runs next.
    Settle {
        /// The next step.
        next: u32,
    },
    /// Every step is settled; the part files are being merged into the table.
    Convert,
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Stage::Exits { done } => write!(f, "exits, {done} positions done"),
            Stage::Settle { next } => write!(f, "step {next}"),
            Stage::Convert => write!(f, "the conversion to the table"),
        }
    }
}

/// Builds one level with the two-bit algorithm.
pub struct TwoBit<'a> {
    level: Level,
    rules: Rules,
    stream: CaptureStream<'a>,
    /// The work directory, `level-NN.work`.
    work: PathBuf,
    state: StateArray<AtomicU64>,
    bits: StateBits,
    /// One bit: the candidates of the step (see `candidates`).
    candidates: candidates::Candidates,
    /// One bit: where each exit list below 0 holds each chunk (built at the first round).
    list_index: std::sync::Mutex<candidates::ListIndex>,
    io: IoCount,
    bucket: u64,
    stage: Stage,
    resumes: u32,
    carried: Carried,
    started: Instant,
    /// Where this run began (`None`: from the start).
    resumed_from: Option<Stage>,
    /// Whether the steps settle in waves and the part files carry each position's depth (see
    /// `propagate`): the level's depth table comes from the build ([`TwoBit::write_depths`]).
    depths: bool,
    /// The largest depth, found by the conversion ([`TwoBit::write_values`]).
    max_depth: u16,
    /// With depths: the waves of the steps of this run.
    waves: AtomicU64,
}

impl<'a> TwoBit<'a> {
    /// Prepare level `n` in `dir`, resuming from its checkpoint if there is a valid one (else
    /// starting afresh), with exit buckets of `bucket` positions (see [`exit_bucket`]) and
    /// `bits` of state per position. A checkpoint does not depend on `bits` (at a step
    /// boundary the states follow from the files alone): either width resumes either's,
    /// except that one with depths resumes in two bits only.
    ///
    /// With `depths` (and two bits), a level begun afresh settles its steps in waves and
    /// writes the depth of each position it settles (see `propagate`); a resumed level
    /// carries on as it began, with depths or without (see [`TwoBit::has_depths`]).
    pub fn open(
        dir: &Path,
        n: u32,
        rules: Rules,
        lower: &'a Levels,
        bucket: u64,
        bits: StateBits,
        depths: bool,
    ) -> Result<TwoBit<'a>, BuilderError> {
        let stream = CaptureStream::new(n, rules, lower)?;
        let work = work_dir(dir, n);
        let level = Level::new(n);
        let state = StateArray::new(level.size().div_ceil(bits.per_word()) as usize)
            .map_err(BuilderError::Alloc)?;
        let checkpoint = match read_checkpoint(&work, n, rules) {
            Ok(c) => c,
            Err(why) => {
                if work.is_dir() {
                    eprintln!("level {n}: starting afresh: {why}");
                }
                None
            }
        };
        if checkpoint.is_none() {
            remove_work_files(dir, n);
        }
        std::fs::create_dir_all(&work).map_err(|source| TableError::Io {
            path: work.clone(),
            source,
        })?;
        let mut builder = TwoBit {
            level,
            rules,
            stream,
            work,
            state,
            bits,
            candidates: candidates::Candidates::new(
                if bits == StateBits::One {
                    level.size()
                } else {
                    0
                },
                candidates::capacity_override()
                    .unwrap_or_else(|| budget::candidate_bytes(n, bucket, bits)),
            ),
            list_index: std::sync::Mutex::new(Vec::new()),
            io: IoCount::default(),
            bucket: bucket.max(1).div_ceil(BUCKET_UNIT) * BUCKET_UNIT,
            stage: Stage::Exits { done: 0 },
            resumes: 0,
            carried: Carried::default(),
            started: Instant::now(),
            resumed_from: None,
            depths: false,
            max_depth: 0,
            waves: AtomicU64::new(0),
        };
        if let Some(c) = checkpoint {
            // The part files follow the buckets of the run that wrote them, and carry depths
            // if it wrote them.
            builder.bucket = c.bucket;
            builder.depths = c.files.iter().any(|(f, _)| f == DEPTHS);
            if let Err(e) = builder.roll_back(&c.files) {
                let TableError::Damaged { .. } = e else {
                    return Err(e.into());
                };
                eprintln!("level {n}: starting afresh: {e}");
                remove_work_files(dir, n);
                std::fs::create_dir_all(&builder.work).map_err(|source| TableError::Io {
                    path: builder.work.clone(),
                    source,
                })?;
                builder.bucket = bucket.max(1).div_ceil(BUCKET_UNIT) * BUCKET_UNIT;
                builder.begin_depths(depths)?;
                return Ok(builder);
            }
            if builder.depths && bits == StateBits::One {
                return Err(BuilderError::DepthsInOneBit { level: n });
            }
            if let Stage::Settle { next } = c.stage {
                builder.restore_states(next)?;
            }
            builder.stage = c.stage;
            builder.carried = c.carried;
            builder.resumed_from = (c.stage != Stage::Exits { done: 0 }).then_some(c.stage);
            builder.resumes = c.resumes + u32::from(builder.resumed_from.is_some());
        } else {
            builder.begin_depths(depths)?;
        }
        Ok(builder)
    }

    /// At a fresh start: settle in waves and write depths where `depths` and two bits, and
    /// say so in the work directory (an empty file, which every checkpoint lists).
    fn begin_depths(&mut self, depths: bool) -> Result<(), BuilderError> {
        self.depths = depths && self.bits == StateBits::Two;
        if self.depths {
            let path = self.work.join(DEPTHS);
            let io = |source| TableError::Io {
                path: path.clone(),
                source,
            };
            std::fs::File::create(&path)
                .and_then(|f| f.sync_all())
                .map_err(io)?;
        }
        Ok(())
    }

    /// Whether the build writes depths: then [`TwoBit::write_depths`] writes the level's
    /// depth table after its values.
    pub fn has_depths(&self) -> bool {
        self.depths
    }

    /// Solve the level from wherever it stands: the exits (those not done), then every step
    /// not settled, a checkpoint at least every few minutes; afterwards
    /// [`TwoBit::write_values`] converts the work files into the table's values. A damaged
    /// work file (one the resume did not read: a resume checks those it relies on) ends the
    /// run with [`TableError::Damaged`] and removes the checkpoint, so that the next run
    /// starts the level afresh.
    pub fn solve(&mut self, progress: &dyn Progress) -> Result<Solved, BuilderError> {
        let solved = self.solve_from_stage(progress);
        self.forget_if_damaged(solved)
    }

    /// The values, in index order, from the part files (see `convert`), a bucket at a time
    /// into `sink`, after [`TwoBit::solve`]. Reads the files only: a kill here means doing it
    /// again.
    pub fn write_values(
        &mut self,
        sink: impl FnMut(&[u8]) -> Result<(), TableError>,
    ) -> Result<(), BuilderError> {
        // The states are not needed any more: their memory goes to the conversion.
        self.state = StateArray::new(1).map_err(BuilderError::Alloc)?;
        let converted = self.convert(sink).map_err(BuilderError::from);
        self.max_depth = self.forget_if_damaged(converted)?;
        Ok(())
    }

    /// With depths ([`TwoBit::has_depths`]), after [`TwoBit::write_values`]: the level's depth
    /// table, `level-NN.depth` in the database directory, from the part files. Returns its
    /// largest depth (`None`: the build writes none).
    pub fn write_depths(&mut self) -> Result<Option<u16>, BuilderError> {
        if !self.depths {
            return Ok(None);
        }
        let written = self
            .convert_depths(self.max_depth)
            .map_err(BuilderError::from);
        self.forget_if_damaged(written)?;
        Ok(Some(self.max_depth))
    }

    /// Bytes the work and checkpoint files read and wrote, over every run of the level.
    pub fn work_io(&self) -> (u64, u64) {
        (
            self.carried.read + self.io.read.load(Relaxed),
            self.carried.written + self.io.written.load(Relaxed),
        )
    }

    /// The table is in place: the work directory goes.
    pub fn finish(&mut self) {
        let _ = std::fs::remove_dir_all(&self.work);
    }

    /// `result`, after removing the checkpoint if it is a damaged work file.
    fn forget_if_damaged<T>(&self, result: Result<T, BuilderError>) -> Result<T, BuilderError> {
        if let Err(BuilderError::Table(TableError::Damaged { .. })) = &result {
            let _ = std::fs::remove_file(self.work.join(checkpoint::CKPT_NAME));
        }
        result
    }

    fn solve_from_stage(&mut self, progress: &dyn Progress) -> Result<Solved, BuilderError> {
        let n = self.level.seeds();
        if let Stage::Exits { done } = self.stage {
            let t = Instant::now();
            let read0 = sys::read_bytes();
            let passes = self.compute_exits(done, progress)?;
            let exits_seconds = t.elapsed().as_secs_f64();
            let exits_read = match (read0, sys::read_bytes()) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                _ => None,
            };
            self.carried.add_exits(exits_seconds, exits_read, passes);
            self.stage = if n == 0 {
                Stage::Convert
            } else {
                Stage::Settle { next: n }
            };
            self.checkpoint()?;
        }
        let timings = std::env::var_os("AWARI_TIMINGS").is_some();
        progress.phase("settle", self.level.size());
        let log = SettledLog::new(
            &self.work,
            self.bucket,
            // With depths, half of it: the rest holds what each wave finds.
            budget::log_capacity(n, self.bucket, self.bits) >> u32::from(self.depths),
            &self.io,
            self.depths,
        );
        let every = checkpoint::checkpoint_seconds();
        let mut last_checkpoint = Instant::now();
        while let Stage::Settle { next } = self.stage {
            let t = Instant::now();
            progress.message(&format!("step {next}"));
            let seeds = self.stream_step(next, &log)?;
            let t_stream = t.elapsed().as_secs_f64();
            let settled = self.propagate_step(next, &log, progress)?;
            if timings {
                let c = &self.candidates;
                let waves = if self.depths {
                    format!(" in {} waves", self.waves.swap(0, Relaxed))
                } else {
                    String::new()
                };
                eprintln!(
                    "level {n} step {next}: {seeds} seeds in {t_stream:.2} s, {settled} settled by propagation{waves}, {:.2} s; rounds {}, spill files {} so far, lookups {:.2} s of threads, candidates {}, losable {}; work files read {:.2} and written {:.2} B/pos so far",
                    t.elapsed().as_secs_f64(),
                    c.rounds.swap(0, Relaxed),
                    c.spills.load(Relaxed),
                    c.lookup_nanos.swap(0, Relaxed) as f64 * 1e-9,
                    c.looked_up.swap(0, Relaxed),
                    c.losable.swap(0, Relaxed),
                    self.io.read.load(Relaxed) as f64 / self.level.size() as f64,
                    self.io.written.load(Relaxed) as f64 / self.level.size() as f64,
                );
            }
            for name in [SEEDS_WON, SEEDS_LOST] {
                let _ = std::fs::remove_file(self.work.join(name));
            }
            self.stage = if next == 1 {
                Stage::Convert
            } else {
                Stage::Settle { next: next - 1 }
            };
            if next == 1 || last_checkpoint.elapsed().as_secs_f64() >= every {
                log.flush()?;
                self.checkpoint()?;
                last_checkpoint = Instant::now();
            }
        }
        drop(log);
        Ok(Solved {
            exits: self.carried.exits(self.stream.positions()),
            earlier_seconds: self.carried.seconds,
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
