//! How finely the passes cut a level for the threads: each grain defined once, named for the
//! work it divides. A grain only balances the threads against the cost of starting a task; no
//! file depends on one (the work files' unit is the seed records' chunk of 2^20 positions,
//! `seed_records::CHUNK`, and the tables' is their 4 MiB checksum chunk).

/// Positions per parallel task where each position costs move generation or un-moves:
/// settling, the lookup check, compressing, the distributed build's scans (16 Ki).
pub(crate) const MOVE_TASK: u64 = 1 << 14;

/// Positions per parallel task of a pass that streams tables in order: the exits' stream of
/// the lower levels, the streamed check's compare (and its buckets' unit), wave 0's
/// judgement of a small level (64 Ki).
pub(crate) const STREAM_TASK: u64 = 1 << 16;

/// Bytes per parallel task of a byte-for-byte comparison of two tables (`compare`, 1 MiB).
pub(crate) const COMPARE_TASK: u64 = 1 << 20;
