//! What a depth pass needs: its memory (the state, or wave 0's capture bitmaps), its disk (the
//! wave files), its sequential I/O, and the size of wave 0's buckets within a memory budget.

use awari_db::level_size;

use super::{BLOCK, CHUNK, PER_WORD};

/// Fixed memory besides the per-position parts (with the windows' records, per thread).
const FIXED: u64 = 32 << 20;
/// The most exit buckets (passes over the lower levels) wave 0 makes.
const MAX_PASSES: u64 = 16;

/// RAM the depth pass of level `n` needs at least: the state (2 bits a position), the block
/// map, and its fixed part; wave 0 needs no more (its bitmaps take 2 bits a position too).
pub fn memory_needed(n: u32) -> u64 {
    let size = level_size(n);
    size.div_ceil(PER_WORD) * 8 + size.div_ceil(BLOCK * 64) * 8 + FIXED
}

/// Fixed memory of the one-bit class search besides its bits and the positions its waves
/// find: the wave files' records read, the writers, the main heap...
const ONE_BIT_FIXED: u64 = 8 << 20;
/// ... and per thread: the records it decodes and what its allocator arena keeps (measured
/// with `/proc/PID/smaps` at level 24 on 2 threads: up to 13.4 MiB besides the bits and the
/// found positions in all, or besides the table's window that takes their place).
const ONE_BIT_PER_THREAD: u64 = 3 << 20;
/// The least memory for the positions a wave of the one-bit class search finds.
const ONE_BIT_MIN_FOUND: u64 = 1 << 20;

/// RAM the one-bit class search of level `n` on `threads` threads needs at least: a bit a position, its fixed
/// part, and a little for the positions a wave finds (which are spilled beyond); phase 1 of
/// its class pass fits in it too, in more buckets ([`super::class_bucket`]). The least
/// `--memory` a depth pass accepts.
pub fn least_memory(n: u32, threads: usize) -> u64 {
    level_size(n).div_ceil(64) * 8 + one_bit_fixed(n, threads) + ONE_BIT_MIN_FOUND
}

/// The one-bit class search's fixed memory of level `n` on `threads` threads: with its two
/// sets of found positions, empty.
fn one_bit_fixed(n: u32, threads: usize) -> u64 {
    ONE_BIT_FIXED
        + ONE_BIT_PER_THREAD * threads as u64
        + 2 * crate::position_set::PositionSet::empty_bytes(level_size(n))
}

/// The memory of the positions a wave of the one-bit class search of level `n` on `threads`
/// threads finds, within `budget` bytes (`None`: no limit, then as much as the bits): what
/// the bits and the fixed part leave.
pub fn one_bit_found(n: u32, budget: Option<u64>, threads: usize) -> u64 {
    let bits = level_size(n).div_ceil(64) * 8;
    budget
        .map_or(bits, |b| b.saturating_sub(bits + one_bit_fixed(n, threads)))
        .max(ONE_BIT_MIN_FOUND)
}

/// RAM the depth pass of level `n` on `threads` threads uses within `budget` bytes (`None`: no
/// limit): the larger of wave 0 (its exit bucket) and the waves (the state); below the two
/// bits a position of those, the one-bit class pass, which fills the budget.
pub fn memory_used(n: u32, budget: Option<u64>, threads: usize) -> u64 {
    match budget {
        Some(b) if b < memory_needed(n) => b.max(least_memory(n, threads)),
        _ => waves_memory(n, budget),
    }
}

/// RAM the wave pass of level `n` uses within `budget` bytes: the larger of wave 0 (its exit
/// bucket) and the waves (the state).
fn waves_memory(n: u32, budget: Option<u64>) -> u64 {
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
/// at least 1/`MAX_PASSES` of the level. Within the 0.25 bytes per position that the waves'
/// state needs, that is the whole level: one stream of the lower levels.
pub fn exit_bucket(n: u32, budget: Option<u64>) -> u64 {
    let size = level_size(n);
    let whole = size.div_ceil(CHUNK).max(1) * CHUNK;
    let left = budget.map_or(u64::MAX, |b| b.saturating_sub(FIXED));
    let min = size.div_ceil(MAX_PASSES).div_ceil(CHUNK).max(1) * CHUNK;
    (left.saturating_mul(4) / CHUNK * CHUNK).clamp(min, whole)
}

/// Whether the depth pass of level `n`, given `memory` bytes, leaves room for the level's
/// values (a byte a position) in `available` bytes: where it does not, its random reads of
/// them would miss the page cache, and the class pass ([`crate::depth::ClassPass`]), which
/// reads them in order, is chosen instead.
pub fn values_fit(n: u32, memory: Option<u64>, available: u64) -> bool {
    level_size(n) + waves_memory(n, memory) <= available
}

/// Bytes per position of a class pass's lists (each won or lost position's offset in its
/// class's list, delta-coded) and of its wave files (each position once, in the wave of its
/// depth): about a byte each. (`verify --prove` of level 24 by classes in a cgroup of 0.5
/// B/pos wrote 2.18 B/pos in all, the two kinds of file together.)
const CLASS_FILES_BYTES_PER_POSITION: f64 = 1.1;

/// Sequential bytes `verify --prove` of level `n` reads and writes by classes with `passes`
/// phase-1 buckets, as `plan` models it: per bucket the lower levels and the level's own
/// values once (the captures and the quiet moves of the value check), the bucket's values
/// twice (its class lists, its comparison); the lists and the wave files written once and read
/// once. With the level's own values read again per bucket, this is more than the wave pass's
/// [`work_io`], and it never reads at random.
pub fn class_prove_io(n: u32, passes: u64) -> u64 {
    let size = level_size(n);
    let files = (size as f64 * CLASS_FILES_BYTES_PER_POSITION) as u64;
    (crate::exits::lower_positions(n) + size) * passes + 2 * size + 4 * files
}
