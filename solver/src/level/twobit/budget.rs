//! What a two-bit level needs: its memory (the states, or the exits phase's bucket), its disk
//! (the checkpoints), its sequential I/O, and the size of the exit buckets within a memory
//! budget.

use awari_db::level_size;

use super::checkpoint::CKPT_HEADER;
use super::{CHUNK, PER_WORD};

/// Most exit buckets (passes over the lower levels) the exits phase makes.
const MAX_PASSES: u64 = 16;
/// Fixed memory besides the per-position and per-thread parts: the process itself, the
/// seed batch and the checkpoint writer's buffer.
const FIXED: u64 = 24 << 20;
/// Memory per thread: a chunk's bytes and its seeds while streaming.
const PER_THREAD: u64 = 2 * CHUNK;

/// Bytes of state for level `n`.
fn state_bytes(n: u32) -> u64 {
    level_size(n).div_ceil(PER_WORD) * 8
}

pub(super) fn chunk_count(n: u32) -> u64 {
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
/// fixed parts leave of the budget, and of `EXITS_BYTES_PER_POSITION`, in whole chunks, and
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
