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
//! On disk, one byte per position (`level-NN.work.tmp`): the exit value while a position is
//! unsettled, its final value once it is settled. Each step i = n … 1 is one parallel pass
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
//! A final pass writes the table: the disk byte of settled positions, 0 for the others. Only
//! the packed states are accessed at random; the disk bytes are read and written in order.
//! Since each step settles the same sets as the in-memory algorithm, the table is the same,
//! byte for byte (tested).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI8, AtomicU64, Ordering::Relaxed};

use awari_db::{level_size, Level, Levels, QuietMoves, Rules, TableError};
use rayon::prelude::*;

use crate::exits::{forward, CaptureStream, ExitsMeter, ExitsStats};
use crate::progress::Progress;
use crate::settle::{propagate_diverting, seed_boards, BuilderError, Settle, NO_EXIT};
use crate::state::StateArray;

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

/// RAM the settling phase needs for level `n`: the packed states and, per thread, the buffers
/// of one streaming chunk (3 bytes per position of the chunk at most).
fn settle_memory(n: u32, threads: usize) -> u64 {
    level_size(n).div_ceil(PER_WORD) * 8 + threads as u64 * 3 * CHUNK.min(level_size(n))
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
    let settle = len.div_ceil(PER_WORD) * 8 + threads as u64 * 3 * CHUNK.min(len);
    let least = len.div_ceil(MAX_PASSES).div_ceil(CHUNK) * CHUNK;
    let left = budget.map_or(len, |b| b.saturating_sub(settle));
    (left / CHUNK * CHUNK).clamp(least.max(CHUNK), len.div_ceil(CHUNK).max(1) * CHUNK)
}

/// RAM the low-memory algorithm needs for a slice of `len` positions (its smallest bucket).
pub(crate) fn slice_memory(len: u64, threads: usize) -> u64 {
    len.div_ceil(PER_WORD) * 8
        + threads as u64 * 3 * CHUNK.min(len)
        + len.div_ceil(MAX_PASSES).div_ceil(CHUNK) * CHUNK
}

/// Positions per streaming chunk of the low-memory algorithm.
pub(crate) const STREAM_CHUNK: u64 = CHUNK;

/// Disk the low-memory algorithm needs besides the table itself: the work array.
pub fn disk_needed(n: u32) -> u64 {
    level_size(n)
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

/// What the stream does to a position at one step (see [`stream_word`]).
struct StreamKernel {
    /// The codes of the positions settled at the previous step: won, lost.
    done: [u8; 2],
    /// Their values (the previous step, won and lost), as disk bytes.
    values: [u8; 2],
    /// Whether this is a step (else the last pass, which only writes values).
    active: bool,
    /// The step.
    step: i8,
    /// Whether every word is run through the kernel: the first step, which sets `exit_ok` of
    /// the positions without an exit (see [`may_change`]).
    every_word: bool,
}

/// One in each of the twelve 5-bit codes of a packed word.
const CODES_01: u64 = {
    let mut x = 0;
    let mut k = 0;
    while k < PER_WORD {
        x |= 1 << (BITS as u64 * k);
        k += 1;
    }
    x
};

/// Whether [`stream_word`] can change a word at this step; false means it would return the
/// word unchanged, with no seeds and nothing to write, so the stream skips it. About two
/// thirds of the words a step streams are such, and this test costs a fifth of the kernel.
///
/// After the first step, an unsettled position's code is as the stream left it at the
/// previous step, so the kernel changes it only at the steps its exit decides something:
/// a win at step `exit` (a seed), `exit_ok` at step `−exit` (and, if its counter is already
/// 0, a loss). Unsettled positions have no exit above the step (they would have been won), and
/// `exit_ok` is sticky. So a word can change only where a code is one the previous step
/// settled (its value to write) or an exit byte is `±step`. Positions without an exit get
/// their `exit_ok` at the first step, which runs the kernel on every word. Settled positions'
/// bytes may match too (at worst a word is run needlessly); the values written earlier are
/// `±j` for steps `j` ≥ `step + 2`, which never match.
///
/// Propagation from other chunks may change the word meanwhile, but only by settling at this
/// step or by lowering a counter, neither of which the kernel would undo or act on.
#[inline(always)]
fn may_change(old: u64, bytes: &[u8; 12], k: &StreamKernel) -> bool {
    if k.every_word {
        return true;
    }
    // Codes done[0] and done[1] = done[0] + 1 (done[0] even): 0 or 1 after the xor, so zero
    // in bits 1..5. A 5-bit lane is nonzero when its low 4 bits plus 0xf, or the lane itself,
    // reach bit 4 (no carry leaves the lane: 0xe + 0xf < 0x20).
    let x = (old ^ (u64::from(k.done[0]) * CODES_01)) & (0x1e * CODES_01);
    let nonzero = (((x & (0xf * CODES_01)) + 0xf * CODES_01) | x) & (0x10 * CODES_01);
    if nonzero != 0x10 * CODES_01 {
        return true;
    }
    if !k.active {
        return false;
    }
    // Any exit byte equal to the step or to its negation: a zero lane after the xor (the
    // borrow test, exact for "any zero lane" whatever the bytes hold).
    use awari_db::packed::{BYTES_01 as B01, BYTES_80 as B80};
    let exit = byte_lanes(bytes);
    let any_zero = |x: u128| x.wrapping_sub(B01) & !x & B80 != 0;
    any_zero(exit ^ (u128::from(k.step as u8) * B01))
        || any_zero(exit ^ (u128::from((-k.step) as u8) * B01))
}

/// Twelve bytes as the twelve low byte lanes of a `u128` (the other four 0).
#[inline(always)]
fn byte_lanes(bytes: &[u8; 12]) -> u128 {
    let mut b16 = [0u8; 16];
    b16[..12].copy_from_slice(bytes);
    u128::from_le_bytes(b16)
}

/// The stream's work on one packed word (12 codes) and its 12 disk bytes (the exits of
/// unsettled positions): positions settled at the previous step get their value written and
/// their code marked done; unsettled ones get `exit_ok` for this step, and those their exit
/// decides are settled (seeds). Returns the new word, the seeds (bit k for position k, bit
/// 16 + k when it is a win), and the new bytes when any was written.
///
/// Branch-free SWAR on the 12 codes and 12 bytes as byte lanes of a `u128`: whether a position
/// is unsettled is unpredictable in the middle steps, and branches on it cost more than the
/// whole word. Every lane test below is a high bit: a sum that reaches 0x80 without leaving
/// its byte (codes are below 32; exits are shifted to 16..=112, `NO_EXIT` to 0).
#[inline(always)]
fn stream_word(old: u64, bytes: [u8; 12], k: &StreamKernel) -> (u64, u32, Option<[u8; 12]>) {
    use awari_db::packed::{
        byte_mask, zero_bytes, BYTES_01 as B01, BYTES_7F as B7F, BYTES_80 as B80,
    };
    // A lane's high bit spread over its byte.
    let spread = |high: u128| (high >> 7) * 0xff;
    let select = |m: u128, a: u128, b: u128| (a & spread(m)) | (b & !spread(m));
    let code = u128::from(unpack_codes(old & ((1 << 30) - 1)))
        | (u128::from(unpack_codes(old >> 30)) << 48);
    let exit = byte_lanes(&bytes);
    // u = exit + 128 (NO_EXIT: 0), then the others less 64: 16..=112.
    let u = exit ^ B80;
    let no_exit = !(((u & B7F) + B7F) | u) & B80;
    let u = u - ((0x40 * B01) & !spread(no_exit));
    let step = k.step as u8 as u128;
    let active = if k.active { B80 } else { 0 };
    let unsettled = !(code + (0x80 - SETTLED as u128) * B01) & B80 & active;
    let win = (u + (64 - step) * B01) & B80 & unsettled; // exit ≥ step
    let exit_ok = !(u + (63 + step) * B01) & B80; // exit ≤ −step
    let counter_zero = !(code + 0x7e * B01) & B80; // code 0 or 1
    let loss = unsettled & !win & counter_zero & exit_ok;
    let lane = |c: u8| u128::from(c) * B01;
    let done_win = zero_bytes(code ^ lane(k.done[0]));
    let done_loss = zero_bytes(code ^ lane(k.done[1]));
    let mut next = select(unsettled, (code & !B01) | (exit_ok >> 7), code);
    next = select(win, lane(new_code(k.step, true) as u8), next);
    next = select(loss, lane(new_code(k.step, false) as u8), next);
    next = select(
        done_win | done_loss,
        lane(DONE_WIN as u8) + (done_loss >> 7),
        next,
    );
    let new = pack_codes(next as u64) | (pack_codes((next >> 48) as u64) << 30);
    let found = byte_mask(win | loss) | (byte_mask(win) << 16);
    let written = (done_win | done_loss != 0).then(|| {
        let out = select(
            done_win,
            lane(k.values[0]),
            select(done_loss, lane(k.values[1]), exit),
        );
        let mut b = [0u8; 12];
        b.copy_from_slice(&out.to_le_bytes()[..12]);
        b
    });
    (new, found, written)
}

/// Six 5-bit codes (bits 0..30) spread to six bytes.
#[inline(always)]
fn unpack_codes(x: u64) -> u64 {
    const F: u64 = 0x1f | (0x1f << 24);
    let y = (x & 0x7fff) | ((x & 0x3fff_8000) << 9); // three codes at bit 0, three at bit 24
    (y & F) | ((y & (F << 5)) << 3) | ((y & (F << 10)) << 6)
}

/// Six bytes (each below 32) packed to six 5-bit codes: the inverse of `unpack_codes`.
#[inline(always)]
fn pack_codes(y: u64) -> u64 {
    const F: u64 = 0x1f | (0x1f << 24);
    let y = (y & F) | ((y >> 3) & (F << 5)) | ((y >> 6) & (F << 10));
    (y & 0x7fff) | ((y >> 9) & 0x3fff_8000)
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
    /// Bytes read from and written to the work file.
    work_read: AtomicU64,
    work_written: AtomicU64,
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
    /// Prepare level `n`, with its work array in `dir` and exit buckets of `bucket` positions
    /// (see [`exit_bucket`]; rounded up to whole chunks).
    pub fn new(
        dir: &Path,
        n: u32,
        rules: Rules,
        lower: &'a Levels,
        bucket: u64,
    ) -> Result<Self, BuilderError> {
        let work_path = dir.join(format!("level-{n:02}.work.tmp"));
        Self::slice(work_path, n, rules, lower, bucket, 0..level_size(n))
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
            .truncate(true)
            .open(&work_path)
            .map_err(io(&work_path))?;
        work.set_len(len).map_err(io(&work_path))?;
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
            work_read: AtomicU64::new(0),
            work_written: AtomicU64::new(0),
        })
    }

    fn chunks(&self) -> impl ParallelIterator<Item = (u64, u64)> {
        chunks(self.range.clone())
    }

    /// Read the work bytes of positions `start..` (in this builder's range).
    fn read(&self, start: u64, buf: &mut [u8]) -> Result<(), TableError> {
        self.work_read.fetch_add(buf.len() as u64, Relaxed);
        self.work
            .read_exact_at(buf, start - self.range.start)
            .map_err(io(&self.work_path))
    }

    fn write(&self, start: u64, buf: &[u8]) -> Result<(), TableError> {
        self.work_written.fetch_add(buf.len() as u64, Relaxed);
        self.work
            .write_all_at(buf, start - self.range.start)
            .map_err(io(&self.work_path))
    }

    /// Bytes read from and written to the work file so far.
    pub fn work_io(&self) -> (u64, u64) {
        (
            self.work_read.load(Relaxed),
            self.work_written.load(Relaxed),
        )
    }

    /// Solve the level; then [`LowMemoryBuilder::write_values`] streams the table. Returns
    /// what the exits phase cost.
    pub fn solve(&self, progress: &dyn Progress) -> Result<ExitsStats, TableError> {
        let n = self.level.seeds();
        let t = std::time::Instant::now();
        let exits = self.compute_exits(progress)?;
        let exits_seconds = t.elapsed().as_secs_f64();
        progress.phase("settle", self.level.size());
        for i in (1..=n as i8).rev() {
            self.stream_step(Some(i), progress)?;
        }
        self.stream_step(None, progress)?;
        if std::env::var_os("AWARI_TIMINGS").is_some() {
            eprintln!(
                "level {n}: exits {exits_seconds:.2} s, settle {:.2} s",
                t.elapsed().as_secs_f64() - exits_seconds
            );
        }
        Ok(exits)
    }

    /// Phase 1, one bucket of level indices at a time: the forward pass packs the counters
    /// and sets the bucket's exit bytes (in RAM), a stream of the lower levels raises them by
    /// every capture whose parent is in the bucket, and the bucket is written to the work
    /// array in order.
    fn compute_exits(&self, progress: &dyn Progress) -> Result<ExitsStats, TableError> {
        let passes = self.passes();
        let meter = ExitsMeter::start();
        progress.phase(
            "exits",
            self.level.size() + passes * self.stream.positions(),
        );
        let mut exits: Vec<AtomicI8> = Vec::new();
        let mut forward_seconds = 0.0;
        for b in 0..passes {
            let bucket = self.bucket_range(b);
            let t = std::time::Instant::now();
            self.forward_bucket(bucket.clone(), &mut exits, progress);
            forward_seconds += t.elapsed().as_secs_f64();
            let lo = bucket.start;
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
            self.write_bucket(bucket, &exits)?;
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

    /// Exit buckets of this builder's range.
    pub(crate) fn passes(&self) -> u64 {
        (self.range.end - self.range.start).div_ceil(self.bucket)
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
    fn stream_step(&self, i: Option<i8>, progress: &dyn Progress) -> Result<(), TableError> {
        self.chunks().try_for_each(|(start, end)| {
            let settled = self.stream_chunk(i, start, end, &mut |_, _| false)?;
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
        let prev = i.map_or(1, |i| i + 1);
        let kernel = StreamKernel {
            done: [new_code(prev, true) as u8, new_code(prev, false) as u8],
            values: [prev as u8, (-prev) as u8],
            // The last pass (no step) only writes the values of step 1.
            active: i.is_some(),
            step: i.unwrap_or(1),
            every_word: i == Some(self.level.seeds() as i8),
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
    /// and decoded in parallel, then handed on in order.
    pub fn write_values(
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

    /// The values of positions `start..end` (a whole chunk of this builder's range): the disk
    /// byte of settled positions, 0 for the others (never settled: an endless cycle, a draw).
    fn values_of_chunk(&self, start: u64, end: u64) -> Result<Vec<u8>, TableError> {
        let mut values = vec![0u8; (end - start) as usize];
        self.read(start, &mut values)?;
        let first = ((start - self.range.start) / PER_WORD) as usize;
        for (w, bytes) in values.chunks_mut(PER_WORD as usize).enumerate() {
            let word = self.state.words()[first + w].load(Relaxed);
            for (k, byte) in bytes.iter_mut().enumerate() {
                if (word >> (BITS as usize * k)) & MASK < SETTLED {
                    *byte = 0;
                }
            }
        }
        Ok(values)
    }
}

impl Drop for LowMemoryBuilder<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.work_path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stream's rule for one position, written plainly: (new code, new byte, seed, win).
    fn reference(code: u64, byte: u8, k: &StreamKernel) -> (u64, u8, bool, bool) {
        if code == u64::from(k.done[0]) || code == u64::from(k.done[1]) {
            let win = code == u64::from(k.done[0]);
            let value = if win { k.values[0] } else { k.values[1] };
            return (DONE_WIN + u64::from(!win), value, false, false);
        }
        if !k.active || code >= SETTLED {
            return (code, byte, false, false);
        }
        let (exit, i) = (byte as i8, k.step);
        let exit_ok = exit <= -i;
        if exit >= i && exit != NO_EXIT {
            (new_code(i, true), byte, true, true)
        } else if code / 2 == 0 && exit_ok {
            (new_code(i, false), byte, true, false)
        } else {
            (2 * (code / 2) + u64::from(exit_ok), byte, false, false)
        }
    }

    /// The SWAR kernel equals the plain rule on random words: every code, every exit byte
    /// (`NO_EXIT` and the ±48 range, at the edges of the lane tests), every step, the last pass.
    #[test]
    fn stream_word_equals_the_plain_rule() {
        let mut rng = awari_db::SplitMix64(12);
        for round in 0..200_000 {
            let step = 1 + rng.below(48) as i8;
            let prev = if round % 7 == 0 { 1 } else { step + 1 };
            let kernel = StreamKernel {
                done: [new_code(prev, true) as u8, new_code(prev, false) as u8],
                values: [prev as u8, (-prev) as u8],
                active: round % 7 != 0,
                step,
                every_word: false,
            };
            let mut word = 0u64;
            let mut bytes = [0u8; 12];
            for (j, b) in bytes.iter_mut().enumerate() {
                word |= rng.below(20) << (BITS as usize * j);
                *b = match rng.below(8) {
                    0 => NO_EXIT as u8,
                    1 => step as u8,
                    2 => (-step) as u8,
                    3 => (step - 1) as u8,
                    4 => (1 - step) as u8,
                    _ => (rng.below(97) as i8 - 48) as u8,
                };
            }
            let (new, found, written) = stream_word(word, bytes, &kernel);
            for (j, &b) in bytes.iter().enumerate() {
                let code = (word >> (BITS as usize * j)) & MASK;
                let (c, byte, seed, win) = reference(code, b, &kernel);
                let got_byte = written.map_or(b, |w| w[j]);
                assert_eq!(
                    (
                        (new >> (BITS as usize * j)) & MASK,
                        got_byte,
                        found >> j & 1 == 1,
                        found >> (16 + j) & 1 == 1
                    ),
                    (c, byte, seed, win),
                    "code {code}, exit {}, step {step}, last pass {}",
                    b as i8,
                    !kernel.active
                );
            }
            assert_eq!(new >> 60, 0);
        }
    }

    /// A word the stream skips is one the kernel leaves unchanged, on random words in the
    /// states the previous steps leave: unsettled positions with `exit_ok` as of the previous
    /// step (and never a zero counter with it set), positions settled earlier with their
    /// values written, at the previous step (values to write) or at this one.
    #[test]
    fn skipped_words_are_unchanged() {
        let mut rng = awari_db::SplitMix64(13);
        let (mut skipped, mut run) = (0, 0);
        for round in 0..300_000 {
            let last_pass = round % 5 == 0;
            let step = if last_pass {
                1
            } else {
                1 + rng.below(47) as i8
            };
            let prev = if last_pass { 1 } else { step + 1 };
            let kernel = StreamKernel {
                done: [new_code(prev, true) as u8, new_code(prev, false) as u8],
                values: [prev as u8, (-prev) as u8],
                active: !last_pass,
                step,
                every_word: false,
            };
            // Mostly unsettled positions and earlier values, so that many words are skipped.
            let rare = 1 + rng.below(40);
            let mut word = 0u64;
            let mut bytes = [0u8; 12];
            for (j, b) in bytes.iter_mut().enumerate() {
                let exit = |rng: &mut awari_db::SplitMix64| match rng.below(6) {
                    0 => NO_EXIT,
                    1 => -step,
                    2 => step - 1,
                    _ => rng.below(97) as i8 - 48,
                };
                let (code, byte) = match rng.below(rare) {
                    // Settled at the previous step, or at this one (by propagation).
                    0 => (new_code(prev, rng.below(2) == 0), exit(&mut rng) as u8),
                    1 if !last_pass => (new_code(step, rng.below(2) == 0), exit(&mut rng) as u8),
                    k if k % 2 == 0 => {
                        // Settled earlier, its value ±j written (j ≥ prev + 1).
                        let j = (prev + 1 + rng.below(48) as i8).min(48);
                        let win = rng.below(2) == 0;
                        let value = if win { j } else { -j };
                        (DONE_WIN + u64::from(!win), value as u8)
                    }
                    _ => {
                        // Unsettled: no exit above the step (it would have won), exit_ok as
                        // of the previous step, never a zero counter with exit_ok set.
                        let mut e = exit(&mut rng);
                        if !last_pass && e != NO_EXIT && e > step {
                            e = step;
                        }
                        if last_pass && e != NO_EXIT && e >= 1 {
                            e = 0;
                        }
                        let exit_ok = e == NO_EXIT || e <= -prev;
                        let counter = if exit_ok {
                            1 + rng.below(6)
                        } else {
                            rng.below(7)
                        };
                        (2 * counter + u64::from(exit_ok), e as u8)
                    }
                };
                word |= code << (BITS as usize * j);
                *b = byte;
            }
            if may_change(word, &bytes, &kernel) {
                run += 1;
                continue;
            }
            skipped += 1;
            assert_eq!(
                stream_word(word, bytes, &kernel),
                (word, 0, None),
                "step {step}, codes {word:#x}, bytes {bytes:?}"
            );
        }
        assert!(
            skipped > 30_000 && run > 30_000,
            "skipped {skipped}, run {run}"
        );
    }
}
