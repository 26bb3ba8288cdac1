//! The low-memory level algorithm: 5 bits of RAM per position (0.67 bytes), exits and values
//! on disk, streamed.
//!
//! Every position's state is one of 20 codes, packed 12 to a 64-bit word (60 bits used):
//!
//! ```text
//! code  0..13  unsettled: code = 2 × counter + exit_ok
//!              counter  = non-capturing children not yet known to be wins (0..6)
//!              exit_ok  = its exit value is ≤ −i at the current step i (a loss if counter hits 0)
//! code 14..17  settled at step i (win, loss; 14, 15 for even i, 16, 17 for odd i), value not
//!              yet written
//! code 18, 19  settled at an earlier step (win, loss), value on disk
//! ```
//!
//! On disk, one byte per position (`level-NN.lowmem/work`): the exit value while a position is
//! unsettled, its final value once it is settled, encoded so that the byte says which it
//! holds (see `kernel`). Each step i = n … 1 is one parallel pass
//! over the level in chunks. Each chunk is first streamed: positions settled at step i+1 get
//! their value (±(i+1)) written in place of their exit; unsettled positions get
//! `exit_ok = exit ≤ −i`, and those whose exit decides them at step i are settled (seeds).
//! Then the chunk's seeds are propagated depth first to their predecessors by un-moves,
//! exactly as in the in-memory algorithm (the loss test reads `exit_ok` instead of the exit),
//! with compare-and-swap on the packed words.
//!
//! Propagation from one chunk reaches chunks not yet streamed at this step. That is sound:
//! - the two parities keep a position settled at step i apart from one settled at step i+1,
//!   whose value the stream is still to write;
//! - a stale `exit_ok` (exit ≤ −(i+1)) implies the fresh one, so a loss it allows is a loss
//!   at step i too; and a counter it leaves at zero with the exit −i is a seed of the stream.
//!
//! So every step settles the same set as the in-memory algorithm's.
//!
//! A last pass writes the values of step 1; the table is then the value of each byte that
//! holds one, 0 (a draw) for the others. Only the packed states are accessed at random; the
//! disk bytes are read and written in order. Since each step settles the same sets as the
//! in-memory algorithm, the table is the same, byte for byte (tested).
//!
//! **Resuming.** A level built on one machine writes a checkpoint (`level-NN.lowmem/resume`)
//! after each exit bucket, after the exits, at the first step boundary 5 minutes after the last
//! (`AWARI_CHECKPOINT_SECONDS`) and after the last pass: the work file synced, then where the
//! level stands. The states are not saved: a resume rebuilds them from the work file (see
//! `checkpoint`), so a kill loses at most the steps since the last checkpoint and a resume
//! costs a pass over the level. A rank's slice of a distributed build does not resume.
//!
//! # Files
//!
//! This file holds the builder and its phases; `kernel` holds the stream's rule on a packed
//! word and the work bytes' encoding, `checkpoint` the checkpoint and the states' rebuild,
//! `digests` the work file's page digests, which every read checks.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI8, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use awari_db::{level_size, Level, Levels, QuietMoves, Rules, TableError};
use rayon::prelude::*;

use crate::checkpoint::checkpoint_seconds;
use crate::exits::{forward, CaptureStream, ExitsMeter, ExitsStats};
use crate::level::Solved;
use crate::progress::Progress;
use crate::settle::{propagate_diverting, seed_boards, BuilderError, Settle, NO_EXIT};
use crate::state::StateArray;
use crate::twobit::Stage;

mod checkpoint;
mod digests;
mod kernel;

use super::Carried;
pub use checkpoint::{checkpoint_stage, remove_work_files, work_dir};
use digests::PageDigests;
use kernel::{encode_value, may_change, stream_word, StreamKernel};

const PER_WORD: u64 = 12;
const BITS: u32 = 5;
const MASK: u64 = 31;
/// The first settled code: 14, 15 (even steps) and 16, 17 (odd steps) are settled at the current
/// or the previous step; 18, 19 earlier.
const SETTLED: u64 = 14;
const DONE_WIN: u64 = 18;
/// Bits 4 and 1 of each of the 12 codes of a word: all set only when every code is 18 or 19.
const ALL_DONE: u64 = 0x094a_5294_a529_4a52;
const _: () = assert!(ALL_DONE == 0x0842_1084_2108_4210 | 0x0108_4210_8421_0842);

/// The code of a position settled at step `i`: won (for its mover) or lost.
#[inline]
fn new_code(i: i8, win: bool) -> u64 {
    SETTLED + 2 * (i as u64 & 1) + u64::from(!win)
}
/// Positions per streaming chunk (a multiple of 12, so chunks own whole words): 768 KiB on disk.
const CHUNK: u64 = PER_WORD << 16;
/// Chunks the table writer decodes in parallel before handing them on in order (12 MiB).
const WRITE_CHUNKS: u64 = 16;

/// Most stream passes the exits phase makes: the exit bytes of at least 1/8 of the level are
/// held in RAM at once.
const MAX_PASSES: u64 = 8;

/// RAM the settling phase needs for level `n`: the packed states, the work file's page
/// digests and, per thread, the buffers of one streaming chunk (3 bytes per position of the
/// chunk at most).
fn settle_memory(n: u32, threads: usize) -> u64 {
    let size = level_size(n);
    size.div_ceil(PER_WORD) * 8 + digests::memory(size) + threads as u64 * 3 * CHUNK.min(size)
}

/// The smallest exit bucket (positions) for level `n`: 1/8 of the level, in whole chunks.
fn min_bucket(n: u32) -> u64 {
    level_size(n).div_ceil(MAX_PASSES).div_ceil(CHUNK) * CHUNK
}

/// RAM the low-memory algorithm needs for level `n`: what settling needs plus the smallest
/// exit bucket (one byte per position of 1/8 of the level; see [`exit_bucket`]).
pub fn memory_needed(n: u32, threads: usize) -> u64 {
    settle_memory(n, threads) + min_bucket(n).min(level_size(n))
}

/// RAM the low-memory algorithm uses for level `n` with exit buckets of `bucket` positions.
pub fn memory_used(n: u32, threads: usize, bucket: u64) -> u64 {
    settle_memory(n, threads) + bucket.min(level_size(n))
}

/// Positions per exit bucket for level `n` within `budget` bytes of RAM (`None`: no limit, one
/// bucket): what is left after the settling memory, in whole chunks, between 1/8 of the level
/// and all of it. The exits phase streams the lower levels once per bucket.
pub fn exit_bucket(n: u32, threads: usize, budget: Option<u64>) -> u64 {
    let size = level_size(n);
    let left = budget.map_or(size, |b| b.saturating_sub(settle_memory(n, threads)));
    (left / CHUNK * CHUNK).clamp(min_bucket(n), size.div_ceil(CHUNK) * CHUNK)
}

/// Positions per exit bucket for a slice of `len` positions of a level within `budget` bytes
/// (`None`: one bucket): as [`exit_bucket`], for a rank's slice.
pub(crate) fn slice_bucket(len: u64, threads: usize, budget: Option<u64>) -> u64 {
    let settle =
        len.div_ceil(PER_WORD) * 8 + digests::memory(len) + threads as u64 * 3 * CHUNK.min(len);
    let least = len.div_ceil(MAX_PASSES).div_ceil(CHUNK) * CHUNK;
    let left = budget.map_or(len, |b| b.saturating_sub(settle));
    (left / CHUNK * CHUNK).clamp(least.max(CHUNK), len.div_ceil(CHUNK).max(1) * CHUNK)
}

/// RAM the low-memory algorithm needs for a slice of `len` positions (its smallest bucket).
pub(crate) fn slice_memory(len: u64, threads: usize) -> u64 {
    len.div_ceil(PER_WORD) * 8
        + digests::memory(len)
        + threads as u64 * 3 * CHUNK.min(len)
        + len.div_ceil(MAX_PASSES).div_ceil(CHUNK) * CHUNK
}

/// Positions per streaming chunk of the low-memory algorithm.
pub(crate) const STREAM_CHUNK: u64 = CHUNK;

/// Disk the low-memory algorithm needs besides the table itself: the work array and its page
/// digests.
pub fn disk_needed(n: u32) -> u64 {
    level_size(n) + digests::file_len(level_size(n))
}

/// The packed codes of the positions `base..` of the level (all of it, or a rank's slice).
struct Packed {
    base: u64,
    array: StateArray<AtomicU64>,
}

impl Packed {
    #[inline]
    fn words(&self) -> &[AtomicU64] {
        self.array.words()
    }

    /// Replace the code of `q` by `f(code)` (None: leave it) atomically; returns the old code
    /// and whether a change was made.
    #[inline]
    fn update(&self, q: u64, mut f: impl FnMut(u64) -> Option<u64>) -> (u64, bool) {
        let r = q - self.base;
        let word = &self.words()[(r / PER_WORD) as usize];
        let shift = BITS as u64 * (r % PER_WORD);
        let mut w = word.load(Relaxed);
        loop {
            let code = (w >> shift) & MASK;
            let Some(new) = f(code) else {
                return (code, false);
            };
            let nw = (w & !(MASK << shift)) | (new << shift);
            match word.compare_exchange_weak(w, nw, Relaxed, Relaxed) {
                Ok(_) => return (code, true),
                Err(now) => w = now,
            }
        }
    }
}

impl Settle for Packed {
    const PREFETCHES: bool = cfg!(target_arch = "x86_64");

    #[inline]
    fn touch(&self, q: u64) -> u64 {
        self.words()[((q - self.base) / PER_WORD) as usize].load(Relaxed)
    }

    #[inline]
    fn prefetch(&self, q: u64) {
        self.array.prefetch(((q - self.base) / PER_WORD) as usize);
    }

    #[inline]
    fn update(&self, q: u64, i: i8, child_won: bool) -> bool {
        let mut settled = false;
        self.update(q, |code| {
            // Called again after a failed exchange: decide afresh from the current code.
            settled = false;
            if code >= SETTLED {
                return None;
            }
            if !child_won {
                settled = true;
                return Some(new_code(i, true));
            }
            let (counter, exit_ok) = (code / 2, code % 2);
            let left = counter - 1;
            if left == 0 && exit_ok == 1 {
                settled = true;
                Some(new_code(i, false))
            } else {
                Some(2 * left + exit_ok)
            }
        });
        settled
    }
}

/// Builds one level, or one rank's slice of it, with the low-memory algorithm.
pub struct LowMemoryBuilder<'a> {
    level: Level,
    rules: Rules,
    stream: CaptureStream<'a>,
    bucket: u64,
    /// The positions built here: the level, or a rank's slice (see [`crate::distributed`]).
    range: std::ops::Range<u64>,
    state: Packed,
    work: File,
    work_path: PathBuf,
    /// The digests of the work file's pages, checked at every read.
    digests: PageDigests,
    /// Bytes read from and written to the work file.
    work_read: AtomicU64,
    work_written: AtomicU64,
    /// A level built on one machine checkpoints and resumes; a rank's slice does not.
    durable: Option<Durable>,
    /// Whether the disk was found too full for the states (said once).
    said_no_room: std::sync::atomic::AtomicBool,
}

/// Where a resumable level stands, and what carried over from the runs before.
struct Durable {
    /// The work directory, `level-NN.lowmem`.
    dir: PathBuf,
    stage: Stage,
    resumes: u32,
    carried: Carried,
    started: Instant,
    /// Where this run began (`None`: from the start).
    resumed_from: Option<Stage>,
    /// The checksum of the states the checkpoint saved (after step `next`), if it did.
    states: Option<u64>,
}

/// Streaming chunks of `range` (which starts a whole number of chunks after the builder's first
/// position), in parallel: (start, end).
fn chunks(range: std::ops::Range<u64>) -> impl ParallelIterator<Item = (u64, u64)> {
    let (lo, hi) = (range.start, range.end);
    (0..(hi - lo).div_ceil(CHUNK))
        .into_par_iter()
        .map(move |c| (lo + c * CHUNK, (lo + (c + 1) * CHUNK).min(hi)))
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TableError + '_ {
    move |source| TableError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl<'a> LowMemoryBuilder<'a> {
    /// Prepare level `n`, with its work directory in `dir` (see [`work_dir`]) and exit
    /// buckets of `bucket` positions (see [`exit_bucket`]; rounded up to whole chunks),
    /// resuming from the level's checkpoint there if it has a valid one (else starting
    /// afresh, saying why when there was one).
    pub fn open(
        dir: &Path,
        n: u32,
        rules: Rules,
        lower: &'a Levels,
        bucket: u64,
    ) -> Result<Self, BuilderError> {
        let work = work_dir(dir, n);
        let size = level_size(n);
        let digests_path = work.join(checkpoint::DIGESTS_NAME);
        let found = checkpoint::read_checkpoint(&work, n, rules)
            .map_err(|e| e.to_string())
            .and_then(|c| match c {
                Some(c) => Ok(Some((c, PageDigests::load(size, digests_path.clone())?))),
                None => Ok(None),
            });
        let found = found.unwrap_or_else(|why| {
            eprintln!("level {n}: starting afresh: {why}");
            None
        });
        if found.is_none() {
            remove_work_files(dir, n);
        }
        let io_dir = |source| TableError::Io {
            path: work.clone(),
            source,
        };
        std::fs::create_dir_all(&work).map_err(io_dir)?;
        let work_path = work.join(checkpoint::WORK_NAME);
        let (found, digests) = match found {
            Some((c, digests)) => (Some(c), (digests, false)),
            None => (None, (PageDigests::fresh(size, Some(digests_path))?, true)),
        };
        let mut builder = Self::create(work_path, n, rules, lower, bucket, 0..size, digests)?;
        let mut durable = Durable {
            dir: work,
            stage: Stage::Exits { done: 0 },
            resumes: 0,
            carried: Carried::default(),
            started: Instant::now(),
            resumed_from: None,
            states: None,
        };
        if let Some(c) = found {
            durable.stage = c.stage;
            durable.carried = c.carried;
            durable.resumed_from = (c.stage != Stage::Exits { done: 0 }).then_some(c.stage);
            durable.resumes = c.resumes + u32::from(durable.resumed_from.is_some());
            durable.states = c.states;
        }
        builder.durable = Some(durable);
        Ok(builder)
    }

    /// Prepare the positions `range` of level `n` (a rank's slice), with the work array at
    /// `work_path`.
    pub(crate) fn slice(
        work_path: PathBuf,
        n: u32,
        rules: Rules,
        lower: &'a Levels,
        bucket: u64,
        range: std::ops::Range<u64>,
    ) -> Result<Self, BuilderError> {
        let digests = PageDigests::fresh(range.end - range.start, None)?;
        Self::create(work_path, n, rules, lower, bucket, range, (digests, true))
    }

    /// A builder of the positions `range` of level `n` over the work file at `work_path`,
    /// whose pages have `digests`, emptied to `fresh` work (else kept, for a resume).
    fn create(
        work_path: PathBuf,
        n: u32,
        rules: Rules,
        lower: &'a Levels,
        bucket: u64,
        range: std::ops::Range<u64>,
        (digests, fresh): (PageDigests, bool),
    ) -> Result<Self, BuilderError> {
        let stream = CaptureStream::new(n, rules, lower)?;
        let bucket = bucket.max(1).div_ceil(CHUNK) * CHUNK;
        let level = Level::new(n);
        let len = range.end - range.start;
        let array =
            StateArray::new(len.div_ceil(PER_WORD) as usize).map_err(BuilderError::Alloc)?;
        let work = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(fresh)
            .open(&work_path)
            .map_err(io(&work_path))?;
        if fresh {
            work.set_len(len).map_err(io(&work_path))?;
        }
        Ok(LowMemoryBuilder {
            level,
            rules,
            stream,
            bucket,
            state: Packed {
                base: range.start,
                array,
            },
            range,
            work,
            work_path,
            digests,
            work_read: AtomicU64::new(0),
            work_written: AtomicU64::new(0),
            durable: None,
            said_no_room: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn chunks(&self) -> impl ParallelIterator<Item = (u64, u64)> {
        chunks(self.range.clone())
    }

    /// Read the work bytes of the chunk at `start` (of this builder's range), checked against
    /// its pages' digests.
    fn read(&self, start: u64, buf: &mut [u8]) -> Result<(), TableError> {
        self.work_read.fetch_add(buf.len() as u64, Relaxed);
        let offset = start - self.range.start;
        self.work
            .read_exact_at(buf, offset)
            .map_err(io(&self.work_path))?;
        self.digests.check(&self.work_path, offset, buf)
    }

    /// Write the work bytes of the chunk at `start`, its pages' digests recorded first.
    fn write(&self, start: u64, buf: &[u8]) -> Result<(), TableError> {
        self.work_written.fetch_add(buf.len() as u64, Relaxed);
        let offset = start - self.range.start;
        self.digests.record(offset, buf)?;
        self.work
            .write_all_at(buf, offset)
            .map_err(io(&self.work_path))
    }

    /// Bytes read from and written to the work file, over every run of the level.
    pub fn work_io(&self) -> (u64, u64) {
        let (read, written) = self
            .durable
            .as_ref()
            .map_or((0, 0), |d| (d.carried.read, d.carried.written));
        (
            read + self.work_read.load(Relaxed),
            written + self.work_written.load(Relaxed),
        )
    }

    /// Solve the level from wherever it stands (a resumed level from its checkpoint, see
    /// `checkpoint`), with a checkpoint after each exit bucket and at the first step
    /// boundary 5 minutes (`AWARI_CHECKPOINT_SECONDS`) after the last; then [`LowMemoryBuilder::write_values`]
    /// streams the table. A damaged work file ends the run with [`TableError::Damaged`] and
    /// removes the checkpoint, so that the next run starts the level afresh.
    pub fn solve(&mut self, progress: &dyn Progress) -> Result<Solved, BuilderError> {
        let solved = self.solve_from_stage(progress);
        self.forget_if_damaged(solved)
    }

    /// `result`, after removing the checkpoint if it is a damaged work file: the next run
    /// starts the level afresh instead of meeting the damage again.
    fn forget_if_damaged<T>(&self, result: Result<T, BuilderError>) -> Result<T, BuilderError> {
        if let (Err(BuilderError::Table(TableError::Damaged { .. })), Some(d)) =
            (&result, &self.durable)
        {
            checkpoint::forget(&d.dir);
        }
        result
    }

    fn solve_from_stage(&mut self, progress: &dyn Progress) -> Result<Solved, BuilderError> {
        let n = self.level.seeds();
        let t = Instant::now();
        let stage = self
            .durable
            .as_ref()
            .map_or(Stage::Exits { done: 0 }, |d| d.stage);
        let mut exits = self
            .durable
            .as_ref()
            .map_or_else(Carried::default, |d| d.carried);
        if let Stage::Exits { done } = stage {
            if done > self.range.start {
                self.restore_exits(done, progress)?;
            }
            let this_run = self.compute_exits(done, progress)?;
            exits.add_exits(this_run.seconds, this_run.bytes_read, this_run.passes);
            if let Some(d) = &mut self.durable {
                d.carried.exits_seconds = exits.exits_seconds;
                d.carried.exits_read = exits.exits_read;
                d.carried.passes = exits.passes;
            }
            let next = if n == 0 {
                Stage::Convert
            } else {
                Stage::Settle { next: n }
            };
            self.checkpoint(next, None)?;
        }
        let exits_seconds = t.elapsed().as_secs_f64();
        // The first step this run makes.
        let mut from = n;
        if let Stage::Settle { next } = stage {
            let r = Instant::now();
            let saved = self
                .durable
                .as_ref()
                .and_then(|d| d.states.map(|s| (d.dir.clone(), s)));
            let loaded = match saved {
                Some((dir, checksum)) => self.load_states(&dir, checksum)?,
                None => false,
            };
            let how = if loaded {
                self.restore_loaded(next, progress)?;
                from = next - 1;
                "loaded after step"
            } else {
                self.restore_settle(next, progress)?;
                from = next;
                "rebuilt before step"
            };
            if std::env::var_os("AWARI_TIMINGS").is_some() {
                eprintln!(
                    "level {n}: states {how} {next} in {:.2} s",
                    r.elapsed().as_secs_f64()
                );
            }
        }
        if let Stage::Exits { .. } | Stage::Settle { .. } = stage {
            progress.phase("settle", self.level.size());
            let every = checkpoint_seconds();
            let mut last = Instant::now();
            for i in (1..=from).rev() {
                progress.message(&format!("step {i}"));
                // The first step of a run sets every position's `exit_ok` afresh.
                self.stream_step(Some(i as i8), i == from, progress)?;
                // Every value of the steps above i is on disk now (see `checkpoint`).
                if i > 1 && last.elapsed().as_secs_f64() >= every {
                    self.checkpoint(Stage::Settle { next: i }, None)?;
                    last = Instant::now();
                }
            }
            self.stream_step(None, from == 0, progress)?;
            self.checkpoint(Stage::Convert, None)?;
        }
        if std::env::var_os("AWARI_TIMINGS").is_some() {
            eprintln!(
                "level {n}: exits {exits_seconds:.2} s, settle {:.2} s",
                t.elapsed().as_secs_f64() - exits_seconds
            );
        }
        let exits = exits.exits(self.stream.positions());
        Ok(match &self.durable {
            None => Solved::fresh(exits),
            Some(d) => Solved {
                exits,
                earlier_seconds: d.carried.seconds,
                resumed: d.resumed_from.map(|s| (s, d.resumes)),
            },
        })
    }

    /// Record that the level stands at `stage` (a level built on one machine; nothing for a
    /// rank's slice): the work file synced, then the checkpoint written.
    /// The exits phase's figures are those of `exits` where given (a part of the phase),
    /// else those of the whole phase.
    fn checkpoint(&mut self, stage: Stage, exits: Option<Carried>) -> Result<(), TableError> {
        let Some(d) = &mut self.durable else {
            return Ok(());
        };
        self.work.sync_data().map_err(io(&self.work_path))?;
        self.digests.settle()?;
        // The states after step `next`, saved where the disk has room (the settling only).
        let dir = d.dir.clone();
        let states = match stage {
            Stage::Settle { next } if next < self.level.seeds() => self.save_states(&dir)?,
            _ => None,
        };
        let Some(d) = &mut self.durable else {
            return Ok(());
        };
        let mut carried = exits.unwrap_or(d.carried);
        carried.seconds = d.carried.seconds + d.started.elapsed().as_secs_f64();
        carried.read = d.carried.read + self.work_read.load(Relaxed);
        carried.written = d.carried.written + self.work_written.load(Relaxed);
        checkpoint::write_checkpoint(
            &d.dir,
            self.rules,
            self.level.seeds(),
            stage,
            d.resumes,
            &carried,
            states,
        )?;
        d.stage = stage;
        if stage == Stage::Convert {
            Self::forget_states(&d.dir);
        }
        Ok(())
    }

    /// The table is in place: the work directory goes (a rank's slice's work file goes when
    /// its builder is dropped).
    pub fn finish(&mut self) {
        if let Some(d) = &self.durable {
            let _ = std::fs::remove_dir_all(&d.dir);
        }
    }

    /// Phase 1, from position `from` on, one bucket of level indices at a time: the forward
    /// pass packs the counters and sets the bucket's exit bytes (in RAM), a stream of the
    /// lower levels raises them by every capture whose parent is in the bucket, and the bucket
    /// is written to the work array in order; a checkpoint follows each bucket.
    fn compute_exits(
        &mut self,
        from: u64,
        progress: &dyn Progress,
    ) -> Result<ExitsStats, TableError> {
        let from = from.max(self.range.start);
        let passes = (self.range.end - from).div_ceil(self.bucket);
        let meter = ExitsMeter::start();
        progress.phase(
            "exits",
            (self.range.end - from) + passes * self.stream.positions(),
        );
        let mut exits: Vec<AtomicI8> = Vec::new();
        let mut forward_seconds = 0.0;
        let mut lo = from;
        let carried = self.durable.as_ref().map(|d| d.carried);
        for b in 0..passes {
            let bucket = lo..(lo + self.bucket).min(self.range.end);
            let t = std::time::Instant::now();
            self.forward_bucket(bucket.clone(), &mut exits, progress);
            forward_seconds += t.elapsed().as_secs_f64();
            self.stream.run(
                bucket.clone(),
                |batch| {
                    let mut touch = 0i8;
                    for &(q, _) in batch {
                        touch |= exits[(q - lo) as usize].load(Relaxed);
                    }
                    std::hint::black_box(touch);
                    for &(q, exit) in batch {
                        Self::raise(&exits, lo, q, exit);
                    }
                },
                progress,
            )?;
            self.write_bucket(bucket.clone(), &exits)?;
            lo = bucket.end;
            if let (Some(c), true) = (carried, lo < self.range.end) {
                // (Storage read in a part of the phase is not known: none is recorded.)
                let exits = Carried {
                    exits_seconds: c.exits_seconds + meter.seconds(),
                    exits_read: None,
                    passes: c.passes + b as u32 + 1,
                    ..c
                };
                self.checkpoint(Stage::Exits { done: lo }, Some(exits))?;
            }
        }
        if std::env::var_os("AWARI_TIMINGS").is_some() {
            eprintln!(
                "level {}: forward pass {forward_seconds:.2} s, stream and write {:.2} s",
                self.level.seeds(),
                meter.seconds() - forward_seconds
            );
        }
        Ok(meter.finish(&self.stream, passes as u32))
    }

    /// Bucket `b` of this builder's range (empty past the last).
    pub(crate) fn bucket_range(&self, b: u64) -> std::ops::Range<u64> {
        let lo = (self.range.start + b * self.bucket).min(self.range.end);
        lo..(lo + self.bucket).min(self.range.end)
    }

    /// The forward pass over `bucket`: pack its counters, set its exit bytes in `exits`.
    pub(crate) fn forward_bucket(
        &self,
        bucket: std::ops::Range<u64>,
        exits: &mut Vec<AtomicI8>,
        progress: &dyn Progress,
    ) {
        let lo = bucket.start;
        exits.clear();
        exits.resize_with((bucket.end - lo) as usize, || AtomicI8::new(NO_EXIT));
        let exits = &*exits;
        chunks(bucket).for_each(|(start, end)| {
            // A chunk owns whole words: build each from its 12 codes (counter, exit_ok 0).
            let mut boards = self.level.boards(start..end);
            let mut counter = QuietMoves::new();
            let first = ((start - self.range.start) / PER_WORD) as usize;
            for (w, group) in (start..end).step_by(PER_WORD as usize).enumerate() {
                let mut word = 0u64;
                for (k, q) in (group..(group + PER_WORD).min(end)).enumerate() {
                    let board = boards.next().expect("chunk inside the level");
                    let (exit, quiet) = forward(&board, self.rules, &mut counter);
                    exits[(q - lo) as usize].store(exit, Relaxed);
                    word |= (2 * u64::from(quiet)) << (BITS as u64 * k as u64);
                }
                self.state.words()[first + w].store(word, Relaxed);
            }
            progress.advance(end - start);
        });
    }

    /// Write the exit bytes of `bucket` to the work array.
    pub(crate) fn write_bucket(
        &self,
        bucket: std::ops::Range<u64>,
        exits: &[AtomicI8],
    ) -> Result<(), TableError> {
        let lo = bucket.start;
        chunks(bucket).try_for_each(|(start, end)| {
            let bytes: Vec<u8> = exits[(start - lo) as usize..(end - lo) as usize]
                .iter()
                .map(|e| e.load(Relaxed) as u8)
                .collect();
            self.write(start, &bytes)
        })
    }

    /// Step `i` (or, with `None` after step 1, the last pass), one chunk at a time: write the
    /// values of the positions the previous step settled, update `exit_ok`, settle the
    /// positions whose exit decides them at step `i`, and propagate them.
    /// `first`: the first step of a run, which runs the stream's rule on every word.
    fn stream_step(
        &self,
        i: Option<i8>,
        first: bool,
        progress: &dyn Progress,
    ) -> Result<(), TableError> {
        self.chunks().try_for_each(|(start, end)| {
            let settled = self.stream_words(i, first, start, end, &mut |_, _| false)?;
            progress.advance(settled);
            Ok(())
        })
    }

    /// The chunks of this builder's range from `from` on, `count` of them at most: (start,
    /// end) each; returns them and where the next ones start.
    pub(crate) fn chunks_from(&self, from: u64, count: u64) -> (Vec<(u64, u64)>, u64) {
        let end = from
            .saturating_add(count.saturating_mul(CHUNK))
            .min(self.range.end);
        let list = (from..end)
            .step_by(CHUNK as usize)
            .map(|c| (c, (c + CHUNK).min(end)))
            .collect();
        (list, end)
    }

    /// One chunk of [`LowMemoryBuilder::stream_step`]: positions `start..end` (a whole chunk
    /// of this builder's range); predecessors for which `divert(index, won)` returns true are
    /// left to the caller. Returns how many positions it settled.
    pub(crate) fn stream_chunk(
        &self,
        i: Option<i8>,
        start: u64,
        end: u64,
        divert: &mut impl FnMut(u64, bool) -> bool,
    ) -> Result<u64, TableError> {
        let first = i == Some(self.level.seeds() as i8);
        self.stream_words(i, first, start, end, divert)
    }

    /// [`LowMemoryBuilder::stream_chunk`], on every word if `first` (else on those
    /// [`kernel::may_change`] picks).
    fn stream_words(
        &self,
        i: Option<i8>,
        first: bool,
        start: u64,
        end: u64,
        divert: &mut impl FnMut(u64, bool) -> bool,
    ) -> Result<u64, TableError> {
        let prev = i.map_or(1, |i| i + 1);
        let kernel = StreamKernel {
            done: [new_code(prev, true) as u8, new_code(prev, false) as u8],
            values: [encode_value(prev), encode_value(-prev)],
            // The last pass (no step) only writes the values of step 1.
            active: i.is_some(),
            step: i.unwrap_or(1),
            every_word: first || i == Some(self.level.seeds() as i8),
        };
        // Whole words: a short last chunk's buffer is padded with zeros (code 0 and exit 0,
        // which no step changes).
        let len = (end - start) as usize;
        let mut buf = vec![0u8; len.next_multiple_of(PER_WORD as usize)];
        self.read(start, &mut buf[..len])?;
        let mut dirty = false;
        let mut seeds: Vec<(u32, bool)> = Vec::new();
        // Propagation from other chunks may change a word meanwhile: each word's 12 codes
        // are rewritten and exchanged as one, and decided afresh if the exchange fails.
        let first = ((start - self.range.start) / PER_WORD) as usize;
        for (w, bytes) in buf.chunks_exact_mut(PER_WORD as usize).enumerate() {
            let bytes: &mut [u8; 12] = bytes.try_into().expect("12 bytes");
            let word = &self.state.words()[first + w];
            let mut old = word.load(Relaxed);
            if old & ALL_DONE == ALL_DONE || !may_change(old, bytes, &kernel) {
                // All 12 settled at earlier steps (codes 18, 19: bits 4 and 1 set, which no
                // other code has both of), or nothing to do at this step.
                continue;
            }
            loop {
                let (new, found, written) = stream_word(old, *bytes, &kernel);
                // Every position settled at the previous step changes code: no change means
                // nothing to write either.
                if new == old {
                    break;
                }
                match word.compare_exchange_weak(old, new, Relaxed, Relaxed) {
                    Ok(_) => {
                        if let Some(b) = written {
                            *bytes = b;
                            dirty = true;
                        }
                        let base = (w as u64 * PER_WORD) as u32;
                        let mut bits = found & 0xffff;
                        while bits != 0 {
                            let k = bits.trailing_zeros();
                            bits &= bits - 1;
                            seeds.push((base + k, found & (0x10000 << k) != 0));
                        }
                        break;
                    }
                    Err(now) => old = now,
                }
            }
        }
        if dirty {
            self.write(start, &buf[..len])?;
        }
        if let (false, Some(i)) = (seeds.is_empty(), i) {
            let mut stack = seed_boards(&self.level, start, seeds.iter().copied());
            let count = seeds.len() as u64
                + propagate_diverting(&self.state, &self.level, self.rules, i, &mut stack, divert);
            return Ok(count);
        }
        Ok(0)
    }

    /// Apply at step `i` the updates other ranks sent (see [`crate::distributed`]: each the
    /// index of a position of this range, bit 63 set when the child won), propagating what
    /// they settle; returns how many positions were settled.
    pub(crate) fn apply_updates(
        &self,
        i: i8,
        words: &[u64],
        divert: &mut impl FnMut(u64, bool) -> bool,
    ) -> u64 {
        let mut stack = Vec::new();
        for sub in words.chunks(64) {
            let mut touch = 0u64;
            for &w in sub {
                touch |= self.state.touch(w & !(1 << 63));
            }
            std::hint::black_box(touch);
            for &w in sub {
                let (q, won) = (w & !(1 << 63), w >> 63 == 1);
                if Settle::update(&self.state, q, i, won) {
                    stack.push((self.level.unrank(q), !won));
                }
            }
        }
        let seeds = stack.len() as u64;
        seeds + propagate_diverting(&self.state, &self.level, self.rules, i, &mut stack, divert)
    }

    /// Positions per exit bucket (a whole number of chunks).
    pub(crate) fn bucket(&self) -> u64 {
        self.bucket
    }

    /// Raise the exit byte of `q` (in `bucket`, whose bytes are `exits`) to `exit`.
    /// A plain load first, so that a raise that changes nothing costs no locked instruction.
    #[inline]
    pub(crate) fn raise(exits: &[AtomicI8], bucket_start: u64, q: u64, exit: i8) {
        let byte = &exits[(q - bucket_start) as usize];
        if byte.load(Relaxed) < exit {
            byte.fetch_max(exit, Relaxed);
        }
    }

    /// The last pass, after step 1 (see [`LowMemoryBuilder::stream_step`]).
    pub(crate) fn finish_chunk(&self, start: u64, end: u64) -> Result<(), TableError> {
        self.stream_chunk(None, start, end, &mut |_, _| false)
            .map(|_| ())
    }

    /// Stream the values, in index order, to `sink`. Blocks of `WRITE_CHUNKS` chunks are read
    /// and decoded in parallel, then handed on in order. A damaged work file removes the
    /// checkpoint, as in [`LowMemoryBuilder::solve`].
    pub fn write_values(
        &self,
        sink: impl FnMut(&[u8]) -> Result<(), TableError>,
    ) -> Result<(), BuilderError> {
        let written = self.stream_values(sink).map_err(BuilderError::from);
        self.forget_if_damaged(written)
    }

    fn stream_values(
        &self,
        mut sink: impl FnMut(&[u8]) -> Result<(), TableError>,
    ) -> Result<(), TableError> {
        let mut start = self.range.start;
        while start < self.range.end {
            let end = (start + WRITE_CHUNKS * CHUNK).min(self.range.end);
            let block: Vec<Vec<u8>> = chunks(start..end)
                .map(|(s, e)| self.values_of_chunk(s, e))
                .collect::<Result<_, _>>()?;
            for values in block {
                sink(&values)?;
            }
            start = end;
        }
        Ok(())
    }

    /// The values of positions `start..end` (a whole chunk of this builder's range): the value
    /// a settled position's work byte holds, 0 for the others (their byte an exit: never
    /// settled, an endless cycle, a draw).
    fn values_of_chunk(&self, start: u64, end: u64) -> Result<Vec<u8>, TableError> {
        let mut values = vec![0u8; (end - start) as usize];
        self.read(start, &mut values)?;
        for byte in &mut values {
            *byte = kernel::decode(*byte).err().unwrap_or(0) as u8;
        }
        Ok(values)
    }
}

impl Drop for LowMemoryBuilder<'_> {
    /// A rank's slice removes its work file; a resumable level keeps its work directory
    /// (removed by [`LowMemoryBuilder::finish`] once the table is in place).
    fn drop(&mut self) {
        if self.durable.is_none() {
            let _ = std::fs::remove_file(&self.work_path);
        }
    }
}
