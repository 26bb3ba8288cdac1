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
//! ([`Board::for_each_ranked_quiet_child`]) and is lost if every child's state is `won`. That
//! costs move generation and a few random reads per test, and saves 3 bits per position.
//!
//! 1. **Exits**, in buckets of the level as large as the memory allows (the state is not
//!    allocated yet): the forward pass sets each position's terminal value, the lower levels
//!    are streamed and un-captured into the bucket (see [`crate::exits`]), and the bucket's
//!    exit bytes are written to the work file in order. A checkpoint follows each bucket.
//! 2. **Settling**, for i = n … 1, in two phases:
//!    - *stream*: every chunk of the work file that can change at this step (see
//!      [`ChunkMasks`]) is read in order with its states: positions settled by the previous
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

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI8, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::Instant;

use awari_db::table::{
    chunk_digest, combine_digests, rename_into_place, CHECKSUM_CHUNK, HEADER_LEN,
};
use awari_db::{
    level_path, level_size, Board, Header, Level, Levels, QuietMoves, Rules, TableError,
};
use rayon::prelude::*;

use crate::exits::{forward, CaptureStream, ExitsStats};
use crate::lowmem::LowMemoryBuilder;
use crate::progress::Progress;
use crate::seed_records::{decode_seeds, encode_seeds};
use crate::settle::{seed_boards, BuilderError, LevelCounts, NO_EXIT};
use crate::state::StateArray;
use crate::sys;

/// Positions per state word.
const PER_WORD: u64 = 32;
/// Positions per chunk of the work file (1 MiB): the unit of streaming and of the masks.
const CHUNK: u64 = 1 << 20;
const _: () = assert!(CHUNK % PER_WORD == 0 && CHECKSUM_CHUNK as u64 % CHUNK == 0);
/// Most exit buckets (passes over the lower levels) the exits phase makes.
const MAX_PASSES: u64 = 16;
/// Seeds propagated together from one chunk's list (their boards are held at once).
const SEED_SLICE: usize = 4096;
/// Bytes of the seed file read and propagated in parallel at once.
const SEED_BATCH: usize = 4 << 20;
/// Settled positions whose predecessors are generated together (see [`TwoBit::propagate`]).
const BATCH: usize = 24;
/// Fixed memory besides the per-position and per-thread parts: the process itself, the
/// seed batch and the checkpoint writer's buffer.
const FIXED: u64 = 24 << 20;
/// Memory per thread: a chunk's bytes and its seeds while streaming.
const PER_THREAD: u64 = 2 * CHUNK;

const OPEN: u64 = 0;
const LOSABLE: u64 = 1;
const WON: u64 = 2;
const LOST: u64 = 3;

/// The work-file byte of an unsettled position without an exit: −64, below every exit, so
/// that "exit ≤ −i" holds at every step, as it should (a loss needs only its children).
const NO_EXIT_BYTE: u8 = (-64i8) as u8;

/// The work-file byte of a settled value (never 0): bits 7 and 6 differ, which they never do
/// in an exit byte (−48..48 and −64).
#[inline]
fn value_byte(v: i8) -> u8 {
    debug_assert!(v != 0 && (-48..=48).contains(&v));
    (v as u8) ^ 0x80
}

#[inline]
fn is_value(b: u8) -> bool {
    (b ^ (b << 1)) & 0x80 != 0
}

#[inline]
fn value_of_byte(b: u8) -> i8 {
    (b ^ 0x80) as i8
}

/// The work-file byte of an exit as the exits phase holds it (`NO_EXIT`: none).
#[inline]
fn exit_byte(exit: i8) -> u8 {
    if exit == NO_EXIT {
        NO_EXIT_BYTE
    } else {
        exit as u8
    }
}

/// The mask bit of an exit byte (see [`ChunkMasks`]).
#[inline]
fn mask_bit(b: u8) -> u128 {
    1u128 << ((b as i8 as i32 + 64) as u32 & 127)
}

/// Bits 0, 2, 4, … (`odd` false) or 1, 3, 5, … (true) of a word, as 32 bits.
#[inline]
pub(crate) fn lanes(w: u64, odd: bool) -> u32 {
    let mut x = (w >> u32::from(odd)) & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | (x >> 4)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x >> 8)) & 0x0000_ffff_0000_ffff;
    x = (x | (x >> 16)) & 0x0000_0000_ffff_ffff;
    x as u32
}

/// Bit 7 of each of 8 bytes, as 8 bits.
#[inline]
fn high_bits(x: u64) -> u32 {
    (((x >> 7) & 0x0101_0101_0101_0101).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32
}

/// For 32 bytes: which are flagged values, and which equal `a`, `b` and `c`.
#[inline]
fn byte_masks(bytes: &[u8; 32], a: u8, b: u8, c: u8) -> (u32, u32, u32, u32) {
    const L: u64 = 0x0101_0101_0101_0101;
    let zero = |x: u64| !(((x & !(0x80 * L)) + 0x7f * L) | x) & (0x80 * L);
    let (mut f, mut ea, mut eb, mut ec) = (0, 0, 0, 0);
    for (k, eight) in bytes.chunks_exact(8).enumerate() {
        let x = u64::from_le_bytes(eight.try_into().expect("8 bytes"));
        let s = 8 * k as u32;
        f |= high_bits((x ^ (x << 1)) & (0x80 * L)) << s;
        ea |= high_bits(zero(x ^ (u64::from(a) * L))) << s;
        eb |= high_bits(zero(x ^ (u64::from(b) * L))) << s;
        ec |= high_bits(zero(x ^ (u64::from(c) * L))) << s;
    }
    (f, ea, eb, ec)
}

/// Disk I/O of the level in progress, counted as requested (work, seed and checkpoint files).
#[derive(Default)]
struct IoCount {
    read: AtomicU64,
    written: AtomicU64,
}

/// A work file of the level, with its path for errors.
struct WorkFile {
    path: PathBuf,
    file: File,
}

impl WorkFile {
    fn io(&self) -> impl FnOnce(std::io::Error) -> TableError + '_ {
        |source| TableError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

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

/// The checkpoint file: where the level stands, the chunk masks and, while settling, the
/// states.
///
/// ```text
/// offset size  field
///      0    8  magic, b"AWARICKP"
///      8    4  version, u32 LE (1)
///     12    1  rule set code
///     13    1  stage: 0 exits, 1 settle, 2 convert
///     14    1  settle: the next step
///     15    1  1 when the states follow the masks (else all are 0: open)
///     16    4  seed count of the level, u32 LE
///     20    4  times the level was resumed so far, u32 LE
///     24    8  positions of the level, u64 LE
///     32    8  exits: positions done, u64 LE
///     40    8  chunks, u64 LE
///     48   40  carried over for the summary: seconds (f64), bytes read, bytes written,
///              exits seconds (f64), exits bytes read from storage (u64 LE each)
///     88    4  exits passes, u32 LE
///     92    4  reserved
///     96    8  XXH3-64 of the body
///    104   24  reserved, zero
///    128    …  body: per chunk its exit mask (u128 LE), then per chunk 1 byte (1: values
///              to write), then the states (u64 LE words, 32 positions each) if present
/// ```
struct Checkpoint {
    stage: Stage,
    resumes: u32,
    carried: Carried,
    masks: Vec<u128>,
    pending: Vec<bool>,
}

const CKPT_MAGIC: [u8; 8] = *b"AWARICKP";
const CKPT_VERSION: u32 = 1;
const CKPT_HEADER: usize = 128;

/// Why a checkpoint was not used (it is then discarded and the level starts over).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BadCheckpoint(String);

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

/// The work files of level `n` in `dir`: work, seeds, checkpoint (and its `.tmp`).
pub fn work_paths(dir: &Path, n: u32) -> [PathBuf; 4] {
    let name = |ext: &str| dir.join(format!("level-{n:02}.{ext}"));
    [
        name("work"),
        name("seeds"),
        name("resume"),
        name("resume.tmp"),
    ]
}

/// Remove the work files of level `n` (a level built, or built another way).
pub fn remove_work_files(dir: &Path, n: u32) {
    for p in work_paths(dir, n) {
        let _ = std::fs::remove_file(p);
    }
}

/// Bytes of state for level `n`.
fn state_bytes(n: u32) -> u64 {
    level_size(n).div_ceil(PER_WORD) * 8
}

fn chunk_count(n: u32) -> u64 {
    level_size(n).div_ceil(CHUNK).max(1)
}

/// RAM of the settling phase of level `n`: the states, the chunk masks, per-thread buffers.
fn settle_memory(n: u32, threads: usize) -> u64 {
    state_bytes(n) + chunk_count(n) * 17 + threads as u64 * PER_THREAD + FIXED
}

/// RAM of the exits phase of level `n` with buckets of `bucket` positions.
fn exits_memory(n: u32, threads: usize, bucket: u64) -> u64 {
    bucket.min(level_size(n)) + chunk_count(n) * 17 + threads as u64 * PER_THREAD + FIXED
}

/// The smallest exit bucket: 1/[`MAX_PASSES`] of the level, in whole chunks.
fn min_bucket(n: u32) -> u64 {
    level_size(n).div_ceil(MAX_PASSES).div_ceil(CHUNK).max(1) * CHUNK
}

/// RAM the two-bit algorithm needs for level `n` at least (with its smallest exit bucket).
pub fn memory_needed(n: u32, threads: usize) -> u64 {
    settle_memory(n, threads).max(exits_memory(n, threads, min_bucket(n)))
}

/// RAM it uses with exit buckets of `bucket` positions.
pub fn memory_used(n: u32, threads: usize, bucket: u64) -> u64 {
    settle_memory(n, threads).max(exits_memory(n, threads, bucket))
}

/// The most the exits phase holds, in bytes per position of the level, whatever the budget:
/// the algorithm stays under a third of a byte per position (a larger budget would only save
/// exit passes; the low-memory algorithm is for budgets of 0.67 bytes per position).
const EXITS_BYTES_PER_POSITION: f64 = 0.32;

/// Positions per exit bucket within `budget` bytes (`None`: no limit): what the exits phase's
/// fixed parts leave of the budget, and of [`EXITS_BYTES_PER_POSITION`], in whole chunks, and
/// at least 1/16 of the level.
pub fn exit_bucket(n: u32, threads: usize, budget: Option<u64>) -> u64 {
    let size = level_size(n);
    let fixed = exits_memory(n, threads, 0);
    let cap = ((size as f64 * EXITS_BYTES_PER_POSITION) as u64).max(state_bytes(n) + fixed);
    let left = budget.map_or(cap, |b| b.min(cap)).saturating_sub(fixed);
    (left / CHUNK * CHUNK).clamp(min_bucket(n), size.div_ceil(CHUNK).max(1) * CHUNK)
}

/// Disk it needs besides the table (which the work file becomes): two checkpoints.
pub fn disk_needed(n: u32) -> u64 {
    2 * (CKPT_HEADER as u64 + chunk_count(n) * 17 + state_bytes(n))
}

/// Sequential bytes level `n` reads and writes with `passes` exit buckets, as modelled by
/// `plan` (the lower levels apart): the exit bytes written once; per step, the chunks it
/// streams read (every chunk at the first step and the 20 steps nearest zero, where the exits
/// lie; a tenth of them at the others) and about half of them written back; the checkpoint
/// at every step; the conversion read and written once.
pub fn work_io(n: u32) -> u64 {
    let size = level_size(n);
    let steps = u64::from(n);
    let full = steps.min(21);
    let streamed = full * size + (steps - full) * size / 10;
    size + streamed * 3 / 2 + steps * state_bytes(n) + 2 * size
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

    // ----- the work file -------------------------------------------------------------------

    fn read_work(&self, start: u64, buf: &mut [u8]) -> Result<(), TableError> {
        self.io.read.fetch_add(buf.len() as u64, Relaxed);
        self.work
            .file
            .read_exact_at(buf, HEADER_LEN as u64 + start)
            .map_err(self.work.io())
    }

    fn write_work(&self, start: u64, buf: &[u8]) -> Result<(), TableError> {
        self.io.written.fetch_add(buf.len() as u64, Relaxed);
        self.work
            .file
            .write_all_at(buf, HEADER_LEN as u64 + start)
            .map_err(self.work.io())
    }

    fn chunk_range(&self, c: usize) -> (u64, u64) {
        let start = c as u64 * CHUNK;
        (start, (start + CHUNK).min(self.level.size()))
    }

    // ----- states --------------------------------------------------------------------------

    #[inline]
    fn words(&self) -> &[AtomicU64] {
        self.state.words()
    }

    #[inline]
    fn code(&self, q: u64) -> u64 {
        (self.words()[(q / PER_WORD) as usize].load(SeqCst) >> (2 * (q % PER_WORD))) & 3
    }

    /// Settle `q` as won (from open or losable) or lost (from losable only); returns whether
    /// this call did it (exactly one call does, whatever the threads).
    #[inline]
    fn settle(&self, q: u64, won: bool) -> bool {
        let word = &self.words()[(q / PER_WORD) as usize];
        let shift = 2 * (q % PER_WORD);
        let mut w = word.load(SeqCst);
        loop {
            let code = (w >> shift) & 3;
            let ok = if won {
                code == OPEN || code == LOSABLE
            } else {
                code == LOSABLE
            };
            if !ok {
                return false;
            }
            let new = (w & !(3 << shift)) | ((if won { WON } else { LOST }) << shift);
            match word.compare_exchange_weak(w, new, SeqCst, SeqCst) {
                Ok(_) => return true,
                Err(now) => w = now,
            }
        }
    }

    /// The loss test: whether every non-capturing child of `board` is won, but for the one
    /// its move from pit `skip` makes (known to be won). The children are made one at a time
    /// and the first that is not won ends the test: in a failing test (most are) that is
    /// after 1.5 children on average (level 18: 42 M tests, 10 M of them passing).
    #[inline]
    fn children_all_won(&self, board: &Board, skip: Option<u8>) -> bool {
        board.all_quiet_children(self.rules, &self.level, skip, |q| self.code(q) == WON)
    }

    #[inline]
    fn mark_pending(&self, q: u64) {
        let p = &self.chunks.pending[(q / CHUNK) as usize];
        if !p.load(Relaxed) {
            p.store(true, Relaxed);
        }
    }

    // ----- phase 1: exits ------------------------------------------------------------------

    /// The exits phase from position `done` on, bucket by bucket, each followed by a
    /// checkpoint; returns the passes made.
    fn compute_exits(&mut self, done: u64, progress: &dyn Progress) -> Result<u32, TableError> {
        let size = self.level.size();
        let buckets: Vec<(u64, u64)> = (done..size)
            .step_by(self.bucket as usize)
            .map(|s| (s, (s + self.bucket).min(size)))
            .collect();
        progress.phase(
            "exits",
            (size - done) + buckets.len() as u64 * self.stream.positions(),
        );
        let mut exits: Vec<AtomicI8> = Vec::new();
        for &(lo, hi) in &buckets {
            exits.clear();
            exits.resize_with((hi - lo) as usize, || AtomicI8::new(NO_EXIT));
            let level = self.level;
            let rules = self.rules;
            exits
                .par_chunks(CHUNK as usize)
                .enumerate()
                .for_each(|(k, part)| {
                    let start = lo + k as u64 * CHUNK;
                    let mut counter = QuietMoves::new();
                    for (e, board) in part
                        .iter()
                        .zip(level.boards(start..start + part.len() as u64))
                    {
                        e.store(forward(&board, rules, &mut counter).0, Relaxed);
                    }
                    progress.advance(part.len() as u64);
                });
            self.stream.run(
                lo..hi,
                |batch| {
                    for &(q, exit) in batch {
                        LowMemoryBuilder::raise(&exits, lo, q, exit);
                    }
                },
                progress,
            )?;
            let masks: Vec<(usize, u128)> = exits
                .par_chunks(CHUNK as usize)
                .enumerate()
                .map(|(k, part)| {
                    let start = lo + k as u64 * CHUNK;
                    let bytes: Vec<u8> = part.iter().map(|e| exit_byte(e.load(Relaxed))).collect();
                    let mask = bytes.iter().fold(0u128, |m, &b| m | mask_bit(b));
                    self.write_work(start, &bytes)?;
                    Ok(((start / CHUNK) as usize, mask))
                })
                .collect::<Result<_, TableError>>()?;
            for (c, m) in masks {
                self.chunks.masks[c] = m;
            }
            self.stage = Stage::Exits { done: hi };
            if hi < size {
                self.checkpoint(false)?;
            }
        }
        Ok(buckets.len() as u32)
    }

    // ----- phase 2: settling ---------------------------------------------------------------

    /// The stream of step `i` (0: the last one, which only writes values): every chunk that
    /// can change, in parallel; the seeds go to the seed file. Returns the chunks streamed.
    fn stream_step(&mut self, i: i8) -> Result<u64, TableError> {
        let n = self.level.seeds() as i8;
        let first = i == n;
        let seeds = Mutex::new(SeedWriter::create(&self.seeds_path, &self.io)?);
        let bit = |e: i8| mask_bit(e as u8);
        let todo: Vec<usize> = (0..self.chunks.masks.len())
            .filter(|&c| {
                first
                    || self.chunks.pending[c].load(Relaxed)
                    || (i > 0 && self.chunks.masks[c] & (bit(i) | bit(-i)) != 0)
            })
            .collect();
        todo.par_iter()
            .try_for_each(|&c| self.stream_chunk(i, c, first, &seeds))?;
        seeds.into_inner().expect("seed lock").finish()?;
        if i > 0 {
            for m in &mut self.chunks.masks {
                *m &= !(bit(i) | bit(-i));
            }
        }
        Ok(todo.len() as u64)
    }

    /// Stream chunk `c` at step `i` (see the module documentation).
    fn stream_chunk(
        &self,
        i: i8,
        c: usize,
        first: bool,
        seeds: &Mutex<SeedWriter>,
    ) -> Result<(), TableError> {
        let (start, end) = self.chunk_range(c);
        let len = (end - start) as usize;
        // Whole words: the padding is exit 0, which no step acts on.
        let mut buf = vec![0u8; len.next_multiple_of(PER_WORD as usize)];
        self.read_work(start, &mut buf[..len])?;
        self.chunks.pending[c].store(false, Relaxed);
        let active = i > 0;
        let prev = i + 1;
        let (eq_i, eq_neg, eq_none) = if active {
            (
                i as u8,
                (-i) as u8,
                if first { NO_EXIT_BYTE } else { (-i) as u8 },
            )
        } else {
            // Never matched: 0x40 is neither an exit nor a value byte.
            (0x40, 0x40, 0x40)
        };
        let mut dirty = DirtyPages::default();
        let mut found: Vec<(u32, bool)> = Vec::new();
        let mut candidates: Vec<(u32, bool)> = Vec::new();
        let words = &self.words()[(start / PER_WORD) as usize..];
        for (w, bytes) in buf.chunks_exact_mut(PER_WORD as usize).enumerate() {
            let bytes: &mut [u8; 32] = bytes.try_into().expect("32 bytes");
            let word = &words[w];
            let old = word.load(Relaxed);
            let settled = lanes(old, true);
            let low = lanes(old, false);
            let (flagged, is_i, is_neg, is_none) = byte_masks(bytes, eq_i, eq_neg, eq_none);
            let write = settled & !flagged;
            let leftover = !settled & flagged;
            let open = !settled & !flagged;
            let win = open & is_i;
            let losable = open & !low & (is_neg | is_none);
            if write | leftover | win | losable == 0 {
                continue;
            }
            let base = w as u32 * PER_WORD as u32;
            let mut new = old;
            for_bits(write, |k| {
                let lost = low >> k & 1 == 1;
                bytes[k] = value_byte(if lost { -prev } else { prev });
            });
            if write | win != 0 {
                dirty.mark(base as usize);
            }
            for_bits(leftover, |k| {
                // A seed of this step whose value an interrupted run wrote (see "Resuming").
                let v = value_of_byte(bytes[k]);
                new |= (if v > 0 { WON } else { LOST }) << (2 * k);
                found.push((base + k as u32, v > 0));
            });
            for_bits(win, |k| {
                new |= WON << (2 * k);
                bytes[k] = value_byte(i);
                found.push((base + k as u32, true));
            });
            for_bits(losable & !win, |k| {
                new |= LOSABLE << (2 * k);
                if is_neg >> k & 1 == 1 {
                    candidates.push((base + k as u32, false));
                }
            });
            if new != old {
                word.store(new, Relaxed);
            }
            if leftover != 0 {
                let bad = (0..32).filter(|&k| leftover >> k & 1 == 1).find(|&k| {
                    value_of_byte(bytes[k]).unsigned_abs() != i.unsigned_abs() || !active
                });
                if let Some(k) = bad {
                    return Err(TableError::Io {
                        path: self.work.path.clone(),
                        source: std::io::Error::other(format!(
                            "work file inconsistent with its checkpoint at position {}: value {} unsettled at step {i}; delete the level's work files to rebuild it",
                            start + u64::from(base) + k as u64,
                            value_of_byte(bytes[k])
                        )),
                    });
                }
            }
        }
        // The loss tests of the positions that became losable (their children read at random;
        // a child won in another chunk meanwhile is tested again by propagation).
        for ((board, _), k) in seed_boards(&self.level, start, candidates.iter().copied())
            .into_iter()
            .zip(candidates.iter().map(|&(k, _)| k))
        {
            if self.children_all_won(&board, None) {
                let q = start + u64::from(k);
                let word = &self.words()[(q / PER_WORD) as usize];
                let shift = 2 * (q % PER_WORD);
                word.store(word.load(Relaxed) | (LOST << shift), Relaxed);
                buf[k as usize] = value_byte(-i);
                dirty.mark(k as usize);
                found.push((k, false));
            }
        }
        for (a, b) in dirty.runs() {
            let b = b.min(len);
            self.write_work(start + a as u64, &buf[a..b])?;
        }
        if !found.is_empty() {
            found.sort_unstable_by_key(|&(k, _)| k);
            let record = encode_seeds(c as u32, &found);
            seeds.lock().expect("seed lock").write(&record)?;
        }
        Ok(())
    }

    /// The propagation of the current step: the seed file read back in batches, each batch's chunks
    /// propagated in parallel. Returns the positions it settled.
    fn propagate_step(&self, progress: &dyn Progress) -> Result<u64, TableError> {
        let file = File::open(&self.seeds_path).map_err(|source| TableError::Io {
            path: self.seeds_path.clone(),
            source,
        })?;
        let mut reader = SeedReader {
            inner: BufReader::with_capacity(1 << 20, file),
            path: &self.seeds_path,
            io: &self.io,
        };
        let mut total = 0u64;
        loop {
            let batch = reader.batch(SEED_BATCH)?;
            if batch.is_empty() {
                return Ok(total);
            }
            total += batch
                .par_iter()
                .map(|(c, bytes)| {
                    let start = u64::from(*c) * CHUNK;
                    let seeds = decode_seeds(bytes);
                    progress.advance(seeds.len() as u64);
                    let mut count = 0;
                    for slice in seeds.chunks(SEED_SLICE) {
                        let mut stack = seed_boards(&self.level, start, slice.iter().copied());
                        count += self.propagate(&mut stack);
                    }
                    progress.advance(count);
                    count
                })
                .sum::<u64>();
        }
    }

    /// Settle, depth first, everything that follows at the current step from the settled
    /// positions on `stack` (won: true). Software-pipelined, each stage a batch behind the
    /// one before, so that the cache misses of one batch overlap the work of the others: the
    /// predecessors of a batch of settled positions are generated and their states
    /// prefetched; those states are read (a lost child settles an unsettled predecessor as
    /// won; a won one starts the loss test of a losable predecessor); a loss test reads one
    /// child per batch, each ranked and prefetched a batch before it is read, and ends at the
    /// first child not won (most do at the first).
    fn propagate(&self, stack: &mut Vec<(Board, bool)>) -> u64 {
        let mut count = 0u64;
        let mut ready: Vec<(u64, Board, bool, u8)> = Vec::with_capacity(BATCH * 8);
        let mut next: Vec<(u64, Board, bool, u8)> = Vec::with_capacity(BATCH * 8);
        // Loss tests under way: the predecessor, its board, the pit skipped (its move to the
        // won child), and the pit and index of the child to read next.
        let mut tests: Vec<(u64, Board, u8, u8, u64)> = Vec::with_capacity(BATCH * 8);
        let mut next_tests: Vec<(u64, Board, u8, u8, u64)> = Vec::with_capacity(BATCH * 8);
        // The next child of a test from pit `from` on, prefetched and queued; `false` when the
        // test has no child left (then every child is won: the predecessor is lost).
        let queue = |q: u64, pred: Board, skip: u8, from: u8, out: &mut Vec<_>| -> bool {
            match pred.next_quiet_child(self.rules, &self.level, from, Some(skip)) {
                Some((pit, c)) => {
                    self.state.prefetch((c / PER_WORD) as usize);
                    out.push((q, pred, skip, pit, c));
                    true
                }
                None => false,
            }
        };
        loop {
            let k = stack.len().saturating_sub(BATCH);
            for (board, won) in stack.drain(k..) {
                board.for_each_ranked_predecessor_pit(self.rules, &self.level, |q, pred, h| {
                    self.state.prefetch((q / PER_WORD) as usize);
                    next.push((q, pred, won, h));
                });
            }
            for &(q, pred, skip, pit, c) in &tests {
                if self.code(c) == WON
                    && !queue(q, pred, skip, pit + 1, &mut next_tests)
                    && self.settle(q, false)
                {
                    self.mark_pending(q);
                    stack.push((pred, false));
                    count += 1;
                }
            }
            tests.clear();
            for &(q, pred, child_won, h) in &ready {
                let settled = if !child_won {
                    // A child lost: the predecessor wins.
                    self.settle(q, true)
                } else {
                    // The won child may have been its only one.
                    self.code(q) == LOSABLE
                        && !queue(q, pred, h, 0, &mut next_tests)
                        && self.settle(q, false)
                };
                if settled {
                    self.mark_pending(q);
                    stack.push((pred, !child_won));
                    count += 1;
                }
            }
            ready.clear();
            std::mem::swap(&mut ready, &mut next);
            std::mem::swap(&mut tests, &mut next_tests);
            if ready.is_empty() && tests.is_empty() && stack.is_empty() {
                return count;
            }
        }
    }

    // ----- the table -----------------------------------------------------------------------

    /// Convert the work file into the table in place, blocks of one checksum chunk at a time
    /// (several in parallel): flagged values become plain, unsettled positions 0; then the
    /// header, fsync and rename. Idempotent, so a kill here only means doing it again.
    fn convert(&self, progress: &dyn Progress) -> Result<LevelCounts, TableError> {
        let size = self.level.size();
        let block = CHECKSUM_CHUNK as u64;
        let blocks = size.div_ceil(block).max(1);
        let per_round = 2 * rayon::current_num_threads() as u64;
        let mut digests = Vec::with_capacity(blocks as usize);
        let mut counts = LevelCounts::default();
        for round in (0..blocks).step_by(per_round as usize) {
            let done: Vec<(u64, LevelCounts)> = (round..(round + per_round).min(blocks))
                .into_par_iter()
                .map(|b| {
                    let start = b * block;
                    let end = (start + block).min(size);
                    let mut buf = vec![0u8; (end - start) as usize];
                    self.read_work(start, &mut buf)?;
                    let mut c = LevelCounts::default();
                    let words = &self.words()[(start / PER_WORD) as usize..];
                    for (bytes, word) in buf.chunks_mut(PER_WORD as usize).zip(words) {
                        let w = word.load(Relaxed);
                        for (k, byte) in bytes.iter_mut().enumerate() {
                            let v = if (w >> (2 * k)) & 3 < WON {
                                0
                            } else if is_value(*byte) {
                                value_of_byte(*byte)
                            } else {
                                // Converted already, by a run this one resumes.
                                *byte as i8
                            };
                            *byte = v as u8;
                            c.add(v);
                        }
                    }
                    self.write_work(start, &buf)?;
                    progress.advance(buf.len() as u64);
                    Ok((chunk_digest(&buf), c))
                })
                .collect::<Result<_, TableError>>()?;
            for (d, c) in done {
                digests.push(d);
                counts = counts.merge(c);
            }
        }
        let mut header = Header::values(self.rules, self.level.seeds());
        header.checksum = combine_digests(&digests);
        self.work
            .file
            .write_all_at(&header.to_bytes(), 0)
            .map_err(self.work.io())?;
        self.work.file.sync_all().map_err(self.work.io())?;
        let dir = self.work.path.parent().unwrap_or(Path::new("."));
        rename_into_place(&self.work.path, &level_path(dir, self.level.seeds()))?;
        Ok(counts)
    }

    // ----- checkpoints ---------------------------------------------------------------------

    /// Sync the work file and write the checkpoint of where the build stands (with the states
    /// when `with_state`), atomically.
    fn checkpoint(&self, with_state: bool) -> Result<(), TableError> {
        self.work.file.sync_data().map_err(self.work.io())?;
        let tmp = &self.ckpt_tmp;
        let io = |source| TableError::Io {
            path: tmp.clone(),
            source,
        };
        let mut body = Vec::with_capacity(self.chunks.masks.len() * 17);
        for m in &self.chunks.masks {
            body.extend_from_slice(&m.to_le_bytes());
        }
        for p in &self.chunks.pending {
            body.push(u8::from(p.load(Relaxed)));
        }
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(&body);
        let words = self.words();
        let (stage, next) = match self.stage {
            Stage::Exits { .. } => (0u8, 0u8),
            Stage::Settle { next } => (1, next as u8),
            Stage::Convert => (2, 0),
        };
        let done = match self.stage {
            Stage::Exits { done } => done,
            _ => self.level.size(),
        };
        let mut f = File::create(tmp).map_err(io)?;
        f.write_all(&[0u8; CKPT_HEADER]).map_err(io)?;
        f.write_all(&body).map_err(io)?;
        let mut written = (CKPT_HEADER + body.len()) as u64;
        if with_state {
            let mut buf = Vec::with_capacity(1 << 20);
            for block in words.chunks(1 << 17) {
                buf.clear();
                for w in block {
                    buf.extend_from_slice(&w.load(Relaxed).to_le_bytes());
                }
                hasher.update(&buf);
                f.write_all(&buf).map_err(io)?;
                written += buf.len() as u64;
            }
        }
        let elapsed = self.carried.seconds + self.started.elapsed().as_secs_f64();
        let mut h = [0u8; CKPT_HEADER];
        h[0..8].copy_from_slice(&CKPT_MAGIC);
        h[8..12].copy_from_slice(&CKPT_VERSION.to_le_bytes());
        h[12] = self.rules.code();
        h[13] = stage;
        h[14] = next;
        h[15] = u8::from(with_state);
        h[16..20].copy_from_slice(&self.level.seeds().to_le_bytes());
        h[20..24].copy_from_slice(&self.resumes.to_le_bytes());
        h[24..32].copy_from_slice(&self.level.size().to_le_bytes());
        h[32..40].copy_from_slice(&done.to_le_bytes());
        h[40..48].copy_from_slice(&(self.chunks.masks.len() as u64).to_le_bytes());
        let read = self.carried.read + self.io.read.load(Relaxed);
        let wrote = self.carried.written + self.io.written.load(Relaxed) + written;
        h[48..56].copy_from_slice(&elapsed.to_bits().to_le_bytes());
        h[56..64].copy_from_slice(&read.to_le_bytes());
        h[64..72].copy_from_slice(&wrote.to_le_bytes());
        h[72..80].copy_from_slice(&self.carried.exits_seconds.to_bits().to_le_bytes());
        h[80..88].copy_from_slice(&self.carried.exits_read.to_le_bytes());
        h[88..92].copy_from_slice(&self.carried.passes.to_le_bytes());
        h[96..104].copy_from_slice(&hasher.digest().to_le_bytes());
        f.write_all_at(&h, 0).map_err(io)?;
        f.sync_all().map_err(io)?;
        // The checkpoint is read only on a resume: keep the page cache for the work file.
        let _ = rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed);
        self.io.written.fetch_add(written, Relaxed);
        rename_into_place(tmp, &self.ckpt_path)
    }
}

/// Where the two-bit build of level `n` in `dir` stands, from its checkpoint (`Ok(None)`: it
/// has none). The whole checkpoint is read and checked, as a resume would.
pub fn checkpoint_stage(dir: &Path, n: u32, rules: Rules) -> Result<Option<Stage>, String> {
    let [work, _, ckpt, _] = work_paths(dir, n);
    let state =
        StateArray::new(level_size(n).div_ceil(PER_WORD) as usize).map_err(|e| e.to_string())?;
    read_checkpoint(&ckpt, &work, n, rules, &state, &IoCount::default())
        .map(|c| c.map(|c| c.stage))
        .map_err(|e| e.0)
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

/// Read the checkpoint of level `n` into `state`, checking it against the level, the rules
/// and the work file; `Ok(None)` when there is none.
fn read_checkpoint(
    path: &Path,
    work: &Path,
    n: u32,
    rules: Rules,
    state: &StateArray<AtomicU64>,
    io: &IoCount,
) -> Result<Option<Checkpoint>, BadCheckpoint> {
    let bad = |why: String| BadCheckpoint(format!("checkpoint {}: {why}", path.display()));
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(bad(e.to_string())),
    };
    let size = level_size(n);
    match std::fs::metadata(work) {
        Ok(m) if m.len() == HEADER_LEN as u64 + size => {}
        Ok(m) => {
            return Err(bad(format!(
                "the work file holds {} bytes, expected {}",
                m.len(),
                HEADER_LEN as u64 + size
            )))
        }
        Err(e) => return Err(bad(format!("no work file {}: {e}", work.display()))),
    }
    let mut h = [0u8; CKPT_HEADER];
    f.read_exact(&mut h).map_err(|e| bad(e.to_string()))?;
    let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().expect("8 bytes"));
    let chunks = chunk_count(n);
    if h[0..8] != CKPT_MAGIC || u32_at(8) != CKPT_VERSION {
        return Err(bad("not a checkpoint of this version".into()));
    }
    if h[12] != rules.code() || u32_at(16) != n || u64_at(24) != size || u64_at(40) != chunks {
        return Err(bad(format!("not of level {n} under {rules}")));
    }
    let stage = match (h[13], h[14]) {
        (0, _) if u64_at(32) <= size => Stage::Exits { done: u64_at(32) },
        (1, next) if u32::from(next) <= n => Stage::Settle {
            next: u32::from(next),
        },
        (2, _) => Stage::Convert,
        _ => return Err(bad("unknown stage".into())),
    };
    let mut body = vec![0u8; chunks as usize * 17];
    f.read_exact(&mut body).map_err(|e| bad(e.to_string()))?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(&body);
    let masks = body[..chunks as usize * 16]
        .chunks_exact(16)
        .map(|m| u128::from_le_bytes(m.try_into().expect("16 bytes")))
        .collect();
    let pending = body[chunks as usize * 16..]
        .iter()
        .map(|&p| p == 1)
        .collect();
    let mut read = CKPT_HEADER as u64 + body.len() as u64;
    if h[15] == 1 {
        let mut buf = vec![0u8; 1 << 20];
        for block in state.words().chunks(1 << 17) {
            let bytes = &mut buf[..block.len() * 8];
            f.read_exact(bytes).map_err(|e| bad(e.to_string()))?;
            hasher.update(bytes);
            for (w, b) in block.iter().zip(bytes.chunks_exact(8)) {
                w.store(u64::from_le_bytes(b.try_into().expect("8 bytes")), Relaxed);
            }
            read += bytes.len() as u64;
        }
    }
    if hasher.digest() != u64_at(96) {
        return Err(bad("its checksum does not match".into()));
    }
    io.read.fetch_add(read, Relaxed);
    Ok(Some(Checkpoint {
        stage,
        resumes: u32_at(20),
        carried: Carried {
            seconds: f64::from_bits(u64_at(48)),
            read: u64_at(56),
            written: u64_at(64),
            exits_seconds: f64::from_bits(u64_at(72)),
            exits_read: u64_at(80),
            passes: u32_at(88),
        },
        masks,
        pending,
    }))
}

/// The 4 KiB pages of a chunk's buffer that the stream changed: only they are written back.
#[derive(Default)]
struct DirtyPages([u64; DirtyPages::WORDS]);

impl DirtyPages {
    const PAGE: usize = 4096;
    const WORDS: usize = (CHUNK as usize / Self::PAGE).div_ceil(64);

    #[inline]
    fn mark(&mut self, offset: usize) {
        let p = offset / Self::PAGE;
        self.0[p / 64] |= 1 << (p % 64);
    }

    /// The changed byte ranges, runs of consecutive pages merged.
    fn runs(&self) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = Vec::new();
        for (w, &bits) in self.0.iter().enumerate() {
            for_bits64(bits, |k| {
                let a = (64 * w + k) * Self::PAGE;
                match out.last_mut() {
                    Some(last) if last.1 == a => last.1 = a + Self::PAGE,
                    _ => out.push((a, a + Self::PAGE)),
                }
            });
        }
        out
    }
}

#[inline]
pub(crate) fn for_bits64(mut bits: u64, mut f: impl FnMut(usize)) {
    while bits != 0 {
        f(bits.trailing_zeros() as usize);
        bits &= bits - 1;
    }
}

/// Call `f` with the index of every set bit of `bits`.
#[inline]
pub(crate) fn for_bits(mut bits: u32, mut f: impl FnMut(usize)) {
    while bits != 0 {
        f(bits.trailing_zeros() as usize);
        bits &= bits - 1;
    }
}

/// The seed file of a step, written by the streaming threads a record at a time.
struct SeedWriter<'a> {
    file: std::io::BufWriter<File>,
    path: PathBuf,
    io: &'a IoCount,
}

impl<'a> SeedWriter<'a> {
    fn create(path: &Path, io: &'a IoCount) -> Result<SeedWriter<'a>, TableError> {
        let file = File::create(path).map_err(|source| TableError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(SeedWriter {
            file: std::io::BufWriter::with_capacity(1 << 20, file),
            path: path.to_path_buf(),
            io,
        })
    }

    fn write(&mut self, record: &[u8]) -> Result<(), TableError> {
        self.io.written.fetch_add(record.len() as u64, Relaxed);
        self.file
            .write_all(record)
            .map_err(|source| TableError::Io {
                path: self.path.clone(),
                source,
            })
    }

    fn finish(mut self) -> Result<(), TableError> {
        self.file.flush().map_err(|source| TableError::Io {
            path: self.path.clone(),
            source,
        })
    }
}

/// Reads a seed file back, record by record.
struct SeedReader<'a> {
    inner: BufReader<File>,
    path: &'a Path,
    io: &'a IoCount,
}

impl SeedReader<'_> {
    /// Records totalling at least `bytes` (or what is left): (chunk, body).
    fn batch(&mut self, bytes: usize) -> Result<Vec<(u32, Vec<u8>)>, TableError> {
        let io = |source| TableError::Io {
            path: self.path.to_path_buf(),
            source,
        };
        let mut out = Vec::new();
        let mut total = 0;
        while total < bytes {
            let mut head = [0u8; 8];
            match self.inner.read_exact(&mut head) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                Err(e) => return Err(io(e)),
            }
            let chunk = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
            let len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
            let mut body = vec![0u8; len];
            self.inner.read_exact(&mut body).map_err(io)?;
            self.io.read.fetch_add(8 + len as u64, Relaxed);
            total += 8 + len;
            out.push((chunk, body));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_bytes_never_look_like_exits() {
        for v in (-48i8..=48).filter(|&v| v != 0) {
            let b = value_byte(v);
            assert!(is_value(b), "{v}");
            assert_eq!(value_of_byte(b), v);
        }
        for e in -48i8..=48 {
            assert!(!is_value(exit_byte(e)), "{e}");
        }
        assert!(!is_value(exit_byte(NO_EXIT)));
    }

    #[test]
    fn lane_and_byte_masks() {
        let mut rng = awari_db::SplitMix64(3);
        for _ in 0..10_000 {
            let w = rng.next_u64();
            let (odd, even) = (lanes(w, true), lanes(w, false));
            for k in 0..32 {
                assert_eq!(odd >> k & 1, (w >> (2 * k + 1) & 1) as u32);
                assert_eq!(even >> k & 1, (w >> (2 * k) & 1) as u32);
            }
            let mut bytes = [0u8; 32];
            for b in bytes.iter_mut() {
                *b = match rng.below(4) {
                    0 => 5,
                    1 => (-5i8) as u8,
                    _ => rng.below(256) as u8,
                };
            }
            let (f, a, b, c) = byte_masks(&bytes, 5, (-5i8) as u8, NO_EXIT_BYTE);
            for (k, &x) in bytes.iter().enumerate() {
                assert_eq!(f >> k & 1 == 1, is_value(x));
                assert_eq!(a >> k & 1 == 1, x == 5);
                assert_eq!(b >> k & 1 == 1, x == (-5i8) as u8);
                assert_eq!(c >> k & 1 == 1, x == NO_EXIT_BYTE);
            }
        }
    }

    #[test]
    fn dirty_pages_merge_into_runs() {
        let mut d = DirtyPages::default();
        for offset in [
            0,
            100,
            4096,
            3 * 4096 + 5,
            64 * 4096,
            65 * 4096,
            CHUNK as usize - 1,
        ] {
            d.mark(offset);
        }
        assert_eq!(
            d.runs(),
            vec![
                (0, 2 * 4096),
                (3 * 4096, 4 * 4096),
                (64 * 4096, 66 * 4096),
                (CHUNK as usize - 4096, CHUNK as usize)
            ]
        );
    }
}
