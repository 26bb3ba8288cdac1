//! What a two-bit level needs: its memory (the states and the runs being gathered, or the
//! exits phase's bucket), its disk (the exit lists and the log), its sequential I/O,
//! and the size of the exit buckets and of the runs within a memory budget.

use awari_db::level_size;

use super::{StateBits, BUCKET_UNIT, CHUNK};

/// Most exit buckets (passes over the lower levels) the exits phase makes.
const MAX_PASSES: u64 = 16;
/// Fixed memory besides the per-position and per-thread parts: the process itself, the
/// record batches of the stream and the propagation, the conversion's window and the read
/// buffers of its files.
const FIXED: u64 = 24 << 20;
/// Memory per thread: a record's positions (8 bytes each; a list holds a fraction of a
/// chunk) and its boards.
const PER_THREAD: u64 = 4 * CHUNK;
/// The same with one bit, whose record batches are an eighth (`stream::list_batch`), whose
/// read and write buffers are smaller, and whose threads hand on what they gather every
/// 16384 entries: measured (`/proc/PID/smaps`, level 24 under its least `--memory`, 2
/// threads), the settling phase held 12 to 14 MiB besides its states, log and candidates,
/// most of it what the allocator's arenas keep of what the threads freed, and the conversion
/// 15 MiB besides its bucket (level 25 under 0.16 bytes a position).
const FIXED_ONE_BIT: u64 = 10 << 20;
const PER_THREAD_ONE_BIT: u64 = 3 << 20;

/// The fixed and per-thread memory with `bits` of state.
fn overhead(threads: usize, bits: StateBits) -> u64 {
    match bits {
        StateBits::Two => FIXED + threads as u64 * PER_THREAD,
        StateBits::One => FIXED_ONE_BIT + threads as u64 * PER_THREAD_ONE_BIT,
    }
}
/// Bytes of RAM per entry of the log: 8, and up to twice the capacity gathered at once (see
/// `log::SettledLog::add`).
const LOG_BYTES_PER_ENTRY: u64 = 16;
/// The fewest entries a run gathers, whatever the budget.
const MIN_LOG: u64 = 1 << 16;
/// The least memory the candidates (one bit, see `candidates`) are given before a round is
/// due, whatever the budget.
const MIN_CANDIDATE_BYTES: u64 = 1 << 20;

/// Bytes of state for level `n`.
fn state_bytes(n: u32, bits: StateBits) -> u64 {
    level_size(n).div_ceil(bits.per_word()) * 8
}

/// What the exits phase's bucket of `bucket` positions (bytes) leaves beside the states: the
/// settling phase's for its log (and, one bit, its candidates).
fn left_beside_states(n: u32, bucket: u64, bits: StateBits) -> u64 {
    let left = bucket.saturating_sub(state_bytes(n, bits) + list_index_bytes(n, bits));
    match bits {
        StateBits::Two => left,
        StateBits::One => left / 2,
    }
}

/// Entries the log gathers before it writes them, with exit buckets of `bucket` positions:
/// what the exits phase's bucket leaves beside the states (the settling phase gets as much
/// memory; the conversion holds a bucket's bytes), half of it with one bit.
pub(super) fn log_capacity(n: u32, bucket: u64, bits: StateBits) -> usize {
    // Never more entries than the level has positions.
    let most = awari_db::level_size(n).max(MIN_LOG);
    (left_beside_states(n, bucket, bits) / LOG_BYTES_PER_ENTRY).clamp(MIN_LOG, most) as usize
}

/// With depths: bytes held of the positions a wave finds of each sign before they spill, an
/// eighth of the log's share each (the log keeps half) less an empty set's (its locks): the
/// sets of the wave being read and of the wave being found are held at once, four in all.
/// `AWARI_WAVE_SET_BYTES` sets it (tests: 1 spills every addition).
pub(super) fn wave_set_bytes(n: u32, bucket: u64, bits: StateBits) -> u64 {
    std::env::var("AWARI_WAVE_SET_BYTES")
        .ok()
        .and_then(|b| b.parse().ok())
        .unwrap_or_else(|| {
            (log_capacity(n, bucket, bits) as u64 * LOG_BYTES_PER_ENTRY / 8)
                .saturating_sub(crate::position_set::PositionSet::empty_bytes(level_size(n)))
                .max(1)
        })
}

/// Bytes of candidates held before a round looks them up (one bit; two bits: none).
pub(super) fn candidate_bytes(n: u32, bucket: u64, bits: StateBits) -> u64 {
    match bits {
        StateBits::Two => 0,
        StateBits::One => left_beside_states(n, bucket, bits).max(MIN_CANDIDATE_BYTES),
    }
}

/// RAM of the settling phase of level `n`: the states, the runs, the candidates, per-thread
/// buffers.
fn settle_memory(n: u32, threads: usize, bucket: u64, bits: StateBits) -> u64 {
    state_bytes(n, bits)
        + log_capacity(n, bucket, bits) as u64 * LOG_BYTES_PER_ENTRY
        + candidate_bytes(n, bucket, bits)
        + list_index_bytes(n, bits)
        + overhead(threads, bits)
}

/// One bit: the index of the exit lists below 0, at most a (chunk, byte) pair of 16 bytes in
/// memory per chunk and list (`candidates::ListIndex`).
fn list_index_bytes(n: u32, bits: StateBits) -> u64 {
    match bits {
        StateBits::Two => 0,
        StateBits::One => level_size(n).div_ceil(CHUNK) * u64::from(n) * 16,
    }
}

/// RAM of the exits phase of level `n` with buckets of `bucket` positions.
fn exits_memory(n: u32, threads: usize, bucket: u64, bits: StateBits) -> u64 {
    bucket.min(level_size(n)) + overhead(threads, bits)
}

/// The smallest exit bucket: 1/[`MAX_PASSES`] of the level, in whole bucket units.
fn min_bucket(n: u32) -> u64 {
    level_size(n)
        .div_ceil(MAX_PASSES)
        .div_ceil(BUCKET_UNIT)
        .max(1)
        * BUCKET_UNIT
}

/// RAM the algorithm needs for level `n` at least (with its smallest exit bucket), with
/// `bits` of state a position.
pub fn memory_needed(n: u32, threads: usize, bits: StateBits) -> u64 {
    memory_used(n, threads, min_bucket(n), bits)
}

/// RAM it uses with exit buckets of `bucket` positions.
pub fn memory_used(n: u32, threads: usize, bucket: u64, bits: StateBits) -> u64 {
    settle_memory(n, threads, bucket, bits).max(exits_memory(n, threads, bucket, bits))
}

/// Positions per exit bucket within `budget` bytes (`None`: the whole level): what the exits
/// phase's fixed parts leave of the budget, in whole bucket units (what the conversion writes
/// at a time), at least 1/16 of the level and at most all of it. A larger budget saves exit
/// passes (each reads the lower levels once more), and the settling phase gets as much for its
/// log: under 0.33 bytes per position, 4 passes.
pub fn exit_bucket(n: u32, threads: usize, budget: Option<u64>, bits: StateBits) -> u64 {
    let size = level_size(n);
    let fixed = exits_memory(n, threads, 0, bits);
    let whole = size.div_ceil(BUCKET_UNIT).max(1) * BUCKET_UNIT;
    let left = budget.map_or(whole, |b| b.saturating_sub(fixed));
    (left / BUCKET_UNIT * BUCKET_UNIT).clamp(min_bucket(n), whole)
}

/// The positions the conversion gives values at a time, with exit buckets of `bucket`: the
/// bucket (two bits), or with one bit what it leaves beside the settling's log and candidates
/// (the allocator keeps what they held), in whole bucket units; the part file of a bucket is
/// then read once per window.
pub(super) fn convert_window(n: u32, bucket: u64, bits: StateBits) -> u64 {
    let settled = match bits {
        StateBits::Two => 0,
        StateBits::One => {
            log_capacity(n, bucket, bits) as u64 * LOG_BYTES_PER_ENTRY
                + candidate_bytes(n, bucket, bits)
        }
    };
    (bucket.saturating_sub(settled) / BUCKET_UNIT * BUCKET_UNIT).clamp(BUCKET_UNIT, bucket)
}

/// How many times the conversion reads each bucket's part file, with exit buckets of
/// `bucket`: once per window (`convert_window`; two bits: once).
pub fn convert_reads(n: u32, bucket: u64, bits: StateBits) -> u64 {
    bucket.div_ceil(convert_window(n, bucket, bits)).max(1)
}

/// Bytes per position of the exit lists and the log at their largest (at most the 3.4 bytes
/// per position written besides the table at level 26, with a margin).
const FILES_BYTES_PER_POSITION: f64 = 4.0;

/// Disk the level needs besides its table: the exit lists and the log.
pub fn disk_needed(n: u32) -> u64 {
    (level_size(n) as f64 * FILES_BYTES_PER_POSITION) as u64
}

/// Bytes per position that a level reads and writes, the lower levels apart: the exit lists
/// written and read once, the seed files written and read once, the log written and read
/// once, the table written (7.9 measured at level 26 under 0.31 bytes of RAM per position:
/// see docs/performance.md).
const WORK_BYTES_PER_POSITION: f64 = 8.0;

/// Sequential bytes level `n` reads and writes, as modelled by `plan` (the lower levels
/// apart).
pub fn work_io(n: u32) -> u64 {
    (level_size(n) as f64 * WORK_BYTES_PER_POSITION) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The buckets and windows are whole bucket units, and with one bit a window and what the
    /// settling's log and candidates held fit the bucket (the memory the budget gave the
    /// exits phase), whatever the memory.
    #[test]
    fn buckets_and_windows_fit_their_memory() {
        for n in [12, 16, 20, 24, 26, 30, 40, 48] {
            for bits in [StateBits::Two, StateBits::One] {
                for budget in [None, Some(1 << 20), Some(level_size(n) / 6), Some(1 << 36)] {
                    let bucket = exit_bucket(n, 2, budget, bits);
                    assert_eq!(bucket % BUCKET_UNIT, 0);
                    assert!(bucket >= min_bucket(n));
                    if let Some(b) = budget {
                        if b >= memory_needed(n, 2, bits) {
                            assert!(memory_used(n, 2, bucket, bits) <= b, "{n} {bits:?} {b}");
                        }
                    }
                    let window = convert_window(n, bucket, bits);
                    assert_eq!(window % BUCKET_UNIT, 0);
                    assert!(window >= BUCKET_UNIT && window <= bucket);
                    let held = log_capacity(n, bucket, bits) as u64 * LOG_BYTES_PER_ENTRY
                        + candidate_bytes(n, bucket, bits);
                    match bits {
                        StateBits::Two => assert_eq!(window, bucket),
                        StateBits::One if window > BUCKET_UNIT => {
                            assert!(window + held <= bucket, "{n} {budget:?}")
                        }
                        StateBits::One => {}
                    }
                }
            }
        }
    }
}
