//! `plan`: what building levels 0..N takes, from the level sizes, measured build speeds (the
//! defaults below, or a machine's own from `scripts/calibrate.sh`) and a disk bandwidth.

use awari_db::{level_exists, level_size};

use crate::build::Mode;
use crate::exits::lower_positions;
use crate::level::memory_needed;
use crate::lowmem;
use crate::sys::human;
use crate::twobit;

pub use super::calibration::{Calibration, IoSample};
pub use super::cluster::{render_distributed, Cluster};

/// The default in-memory build speed per thread, positions per second: the 16-core machine
/// (16 threads, 125 GB) built levels 25..28 at 33.8, 33.4, 33.4 and 37.4 M positions/s
/// settling in rounds (`awari-solver build --max-stones 28 --threads 16`), 2.1–2.3 M/s per
/// thread; depth first, levels 25 and 26 ran at 37.0 and 41.1 M/s (2.3–2.6 M/s per thread).
/// Smaller levels run faster per position (level 24: 62.3 M/s, 3.9 M/s per thread), larger
/// ones slower: the rate of levels ≥ 25.
pub const DEFAULT_RATE: f64 = 2.3e6;
/// The default low-memory speed as a fraction of the in-memory one: not measured on the
/// 16-core machine; on the 2-core machine 0.88 on levels 0..24 (`scripts/ab.sh` with
/// `LOWMEM=1`) and 0.93 on level 27 alone.
pub const DEFAULT_LOW_RATIO: f64 = 0.88;
/// The default two-bit speed as a fraction of the in-memory one: level 28 on the 16-core
/// machine, 16.6 M positions/s in two-bit mode (`build --mode two-bit --threads 16`) against
/// 37.4 M/s in memory, with [`DEFAULT_TWO_BIT_PASSES`] exit passes.
pub const DEFAULT_TWO_BIT_RATIO: f64 = 16.6 / 37.4;
/// The exit passes of the two-bit measurement behind [`DEFAULT_TWO_BIT_RATIO`]: that build's
/// exit buckets held at most 0.32 bytes of exit per position of level 28, 4 passes.
pub const DEFAULT_TWO_BIT_PASSES: u64 = 4;
/// What one more exit pass adds to a two-bit level's time, as a fraction of its time with one
/// pass (each pass streams and un-captures the lower levels once more). Level 28 on the
/// 16-core machine: exits 21.86 s in two-bit mode (4 passes) against 8.52 s in memory (1), so
/// 4.45 s a pass, and 89.55 s in all, 76.2 s with one pass: 0.058. The 2-core machine agrees:
/// level 26 in two-bit mode, 125.1 s with 1 pass and 148.7 s with 4 (`--memory` 0.34 bytes
/// per position), 0.063 (see docs/performance.md). `plan` scales a two-bit rate measured with
/// P passes to a level's p passes by (1 + (p − 1) × this) / (1 + (P − 1) × this).
pub const TWO_BIT_PASS_COST: f64 = 0.058;
/// The default speed of the depth pass, and of `verify --prove` (the depth pass that also
/// recomputes every entry), as a fraction of the in-memory build: `verify --prove` of level 28
/// on the 16-core machine, 24.3 M positions/s with 16 threads, against 37.4 M/s building it.
/// The plain depth pass costs about 1/1.28 of the proof, so this is pessimistic for it.
pub const DEFAULT_DEPTH_RATIO: f64 = 24.3 / 37.4;
/// `verify --prove` by value class with one exit bucket, as a fraction of the speed of the
/// wave pass's proof, both on one machine: level 24 on the 2-core machine, the values in the
/// page cache, 81.6 s by waves against 84.2 s by classes (`AWARI_DEPTH=waves|classes`; see
/// docs/performance.md). `plan` scales the proof's rate by it, and by [`CLASS_PASS_COST`] a
/// further bucket.
pub const CLASS_PROVE_RATIO: f64 = 81.6 / 84.2;
/// What one more exit bucket adds to the class pass's time, as a fraction of its time with
/// one (phase 1 streams the lower levels and the level once per bucket, dropping the children
/// whose parents all lie outside it): level 24 on the 2-core machine, 84.2 s with 1 bucket,
/// 96.1 s with 3 and 105.4 s with 4 (`--memory` 191M and 130M), 0.08 by least squares
/// (0.18 before the children were filtered: 132.3 s with 4). A cgroup of 0.5 bytes per
/// position, page cache counted, took as long as the page cache did: the time is the
/// passes', not the drive's.
pub const CLASS_PASS_COST: f64 = 0.08;
/// The default sequential disk bandwidth, bytes per second: a SATA SSD (an assumption, not a
/// measurement; a fast NVMe drive does 2000 MB/s or more).
pub const DEFAULT_BANDWIDTH: f64 = 500e6;
/// Where the defaults come from, as the plan's assumptions line says.
pub const DEFAULT_SOURCE: &str = "defaults (16-core measurements)";

/// What the plan assumes about the machine.
#[derive(Clone, Debug)]
pub struct Machine {
    /// Bytes of memory a level may use (`None`: unknown, no limit).
    pub memory: Option<u64>,
    /// Free disk in the database directory (`None`: unknown, no limit).
    pub disk: Option<u64>,
    /// Cores.
    pub threads: usize,
    /// In-memory build speed per thread, positions per second.
    pub rate: f64,
    /// Low-memory speed as a fraction of the in-memory speed.
    pub low_ratio: f64,
    /// Two-bit speed as a fraction of the in-memory speed, with `two_bit_passes` exit passes
    /// (a level with another number of passes is scaled by [`two_bit_pass_scale`]).
    pub two_bit_ratio: f64,
    /// The exit passes `two_bit_ratio` was measured with.
    pub two_bit_passes: u64,
    /// The depth pass's speed as a fraction of the in-memory build speed (with depth tables).
    pub depth_ratio: f64,
    /// `verify --prove`'s speed as a fraction of the in-memory build speed.
    pub verify_ratio: f64,
    /// Sequential disk bandwidth, bytes per second.
    pub bandwidth: f64,
    /// The low-memory and two-bit levels' own disk traffic (the lower levels' passes apart)
    /// as a multiple of the model's ([`level_io`], [`twobit::work_io`]); 1 without a
    /// calibration.
    pub low_io_scale: f64,
    /// The same for the two-bit levels.
    pub two_bit_io_scale: f64,
    /// Where the rates come from, as the assumptions line says.
    pub source: String,
    /// Levels already in the database: their disk is already used, and they take no time.
    pub built: [bool; 49],
    /// Tables compressed as they are built (`build --compress`): disk per level from
    /// [`compressed_bytes`], and each level's plain table held until it is compressed.
    pub compress: bool,
    /// The level algorithm: [`Mode::Auto`] (in memory where it fits, else the faster by
    /// estimated time of those that fit, as `build` picks it) or the
    /// one `build --mode` would be given, for every level.
    pub mode: Mode,
}

/// Bits per position of the compressed tables of levels 0..=34, measured by
/// `scripts/bench-compress.sh` on the awari database (whole files: header, model and index
/// included).
const COMPRESSED_BITS: [f64; 35] = [
    1552.0, 135.333, 23.692, 6.747, 3.323, 2.399, 2.332, 2.328, 2.714, 2.979, 2.951, 3.527, 3.284,
    3.595, 3.477, 3.587, 3.552, 3.618, 3.617, 3.663, 3.680, 3.720, 3.736, 3.769, 3.788, 3.809,
    3.828, 3.850, 3.868, 3.889, 3.906, 3.919, 3.927, 3.938, 3.940,
];
/// The measured growth of the bits per position with the level over 24..34.
const COMPRESSED_TREND: f64 = 0.0159;

/// Bits per position of a compressed depth table (`level-NN.cdepth`, coder 5 in segments of
/// 256): levels 24..29 of the awari database (docs/performance.md; 2.45–2.48 at odd levels,
/// 2.26–2.28 at even ones; 2.48 in segments of 128).
pub const COMPRESSED_DEPTH_BITS: f64 = 2.38;

/// Bits per position of the probe form (`compress --probe`: coder 4, segments of 256; whole
/// files) of levels 0..=32 of the awari database: levels 0..20 written, 21..32 estimated from
/// samples (`compress --probe --estimate`; docs/performance.md). Levels 0..9 are mostly their
/// model.
const PROBE_FORM_BITS: [f64; 33] = [
    2048.0, 512.0, 184.615, 74.066, 32.674, 15.538, 8.346, 5.036, 3.744, 3.101, 2.582, 2.765,
    2.365, 2.495, 2.301, 2.351, 2.271, 2.322, 2.307, 2.345, 2.342, 2.359, 2.353, 2.370, 2.380,
    2.387, 2.420, 2.403, 2.403, 2.427, 2.418, 2.437, 2.429,
];
/// The least-squares growth of the probe form's bits per position over levels 24..32.
const PROBE_FORM_TREND: f64 = 0.0061;

/// Bytes of level `n` in the probe form: measured up to 32 seeds, the trend beyond.
pub fn probe_form_bytes(n: u32) -> u64 {
    let bits = match PROBE_FORM_BITS.get(n as usize) {
        Some(&b) => b,
        None => PROBE_FORM_BITS[32] + PROBE_FORM_TREND * f64::from(n - 32),
    };
    (level_size(n) as f64 * bits / 8.0).ceil() as u64
}

/// Bytes of level `n`'s depth table as `build --depth` stores it by default: plain (one byte
/// a position) up to [`crate::depth::PLAIN_DEPTH_UP_TO`] seeds, compressed above.
pub fn depth_bytes(n: u32) -> u64 {
    let p = level_size(n);
    if n <= crate::depth::PLAIN_DEPTH_UP_TO {
        p + 64
    } else {
        (p as f64 * COMPRESSED_DEPTH_BITS / 8.0).ceil() as u64
    }
}

/// Bytes of level `n`'s compressed table: measured up to 34 seeds, the trend beyond.
pub fn compressed_bytes(n: u32) -> u64 {
    let bits = match COMPRESSED_BITS.get(n as usize) {
        Some(&b) => b,
        None => COMPRESSED_BITS[34] + COMPRESSED_TREND * f64::from(n - 34),
    };
    (level_size(n) as f64 * bits / 8.0).ceil() as u64
}

/// Sequential bytes level `n` reads and writes: the lower levels n−2 … n−18 once per exits
/// pass; in low-memory mode also the work array (1 byte per position) written once by the
/// exits phase, read and written back once per settling step (n steps), and read once more
/// to write the table; and the table itself, written once.
pub fn level_io(n: u32, passes: u64, low_memory: bool) -> u64 {
    let lower = lower_positions(n);
    let size = level_size(n);
    let work = if low_memory {
        size * (1 + 2 * u64::from(n) + 1)
    } else {
        0
    };
    lower * passes + work + size
}

/// Sequential bytes level `n` reads and writes in two-bit mode with `passes` exit buckets:
/// the lower levels once per pass and its own files, the table included (see
/// [`twobit::work_io`], scaled by `scale`, 1 for the model as it is).
pub fn two_bit_io(n: u32, passes: u64, scale: f64) -> u64 {
    lower_positions(n) * passes + (twobit::work_io(n) as f64 * scale) as u64
}

/// Level `n` in the low-memory algorithm on machine `m`: its exit passes, RAM, compute
/// seconds and bytes of disk traffic.
fn low_memory_estimate(n: u32, m: &Machine) -> (u64, u64, f64, u64) {
    let p = level_size(n);
    let bucket = lowmem::exit_bucket(n, m.threads, m.memory);
    let passes = p.div_ceil(bucket);
    let ram = lowmem::memory_used(n, m.threads, bucket);
    let compute = p as f64 / (m.rate * m.threads as f64 * m.low_ratio);
    let lower = lower_positions(n) * passes;
    let own = (level_io(n, passes, true) - lower) as f64 * m.low_io_scale;
    (passes, ram, compute, lower + own as u64)
}

/// The same in the two-bit algorithm.
fn two_bit_estimate(n: u32, m: &Machine) -> (u64, u64, f64, u64) {
    let p = level_size(n);
    let bucket = twobit::exit_bucket(n, m.threads, m.memory);
    let passes = p.div_ceil(bucket);
    let ram = twobit::memory_used(n, m.threads, bucket);
    let compute = p as f64 / (m.rate * m.threads as f64 * m.two_bit_ratio)
        * two_bit_pass_scale(passes, m.two_bit_passes);
    (
        passes,
        ram,
        compute,
        two_bit_io(n, passes, m.two_bit_io_scale),
    )
}

/// What a two-bit level's compute time with `passes` exit passes is, as a multiple of one
/// with `measured` passes ([`TWO_BIT_PASS_COST`] a pass).
pub fn two_bit_pass_scale(passes: u64, measured: u64) -> f64 {
    let time = |p: u64| 1.0 + p.saturating_sub(1) as f64 * TWO_BIT_PASS_COST;
    time(passes) / time(measured)
}

/// Seconds `verify --prove` of level `n` takes on machine `m`, I/O included, and whether it
/// goes by value class: the wave pass (the value check in its wave 0) where the level's values
/// fit in the memory beside it ([`crate::depth::values_fit`]), else the class pass with its
/// folded value check, [`CLASS_PROVE_RATIO`] of the wave pass's speed with one exit bucket,
/// [`CLASS_PASS_COST`] more time each further bucket, with its traffic
/// ([`crate::depth::class_prove_io`]).
fn prove_estimate(n: u32, m: &Machine) -> (f64, bool) {
    let p = level_size(n);
    let per_sec = m.rate * m.threads as f64 * m.verify_ratio;
    let fits = m
        .memory
        .is_none_or(|memory| crate::depth::values_fit(n, Some(memory), memory));
    if fits {
        let passes = p.div_ceil(crate::depth::exit_bucket(n, m.memory));
        let io = crate::depth::work_io(n, passes);
        (p as f64 / per_sec + io as f64 / m.bandwidth, false)
    } else {
        let passes = p.div_ceil(crate::depth::class_bucket(n, m.memory));
        let io = crate::depth::class_prove_io(n, passes);
        let buckets = 1.0 + (passes - 1) as f64 * CLASS_PASS_COST;
        (
            p as f64 / (per_sec * CLASS_PROVE_RATIO) * buckets + io as f64 / m.bandwidth,
            true,
        )
    }
}

/// Whether level `n` takes less time in the two-bit algorithm than in the low-memory one on
/// machine `m`, compute and disk traffic counted (the auto mode's choice where both fit: the
/// low-memory algorithm computes about twice as fast, the two-bit one moves a fraction of the
/// bytes, so it is the disk's bandwidth against the cores that decides).
pub fn two_bit_is_faster(n: u32, m: &Machine) -> bool {
    let time = |(_, _, compute, io): (u64, u64, f64, u64)| compute + io as f64 / m.bandwidth;
    time(two_bit_estimate(n, m)) < time(low_memory_estimate(n, m))
}

/// [`two_bit_is_faster`] on a machine of `threads` threads and `memory` at the default rates
/// and bandwidth: `build`'s auto mode where both out-of-core algorithms fit.
pub fn auto_prefers_two_bit(n: u32, threads: usize, memory: Option<u64>) -> bool {
    two_bit_is_faster(n, &Machine::defaults(threads, memory))
}

impl Machine {
    /// A machine of `threads` threads and `memory` at the default rates and bandwidth, no
    /// level built, the mode chosen as `build` chooses it.
    pub fn defaults(threads: usize, memory: Option<u64>) -> Machine {
        Machine {
            memory,
            disk: None,
            threads,
            rate: DEFAULT_RATE,
            low_ratio: DEFAULT_LOW_RATIO,
            two_bit_ratio: DEFAULT_TWO_BIT_RATIO,
            two_bit_passes: DEFAULT_TWO_BIT_PASSES,
            depth_ratio: DEFAULT_DEPTH_RATIO,
            verify_ratio: DEFAULT_DEPTH_RATIO,
            bandwidth: DEFAULT_BANDWIDTH,
            low_io_scale: 1.0,
            two_bit_io_scale: 1.0,
            source: DEFAULT_SOURCE.into(),
            built: [false; 49],
            compress: false,
            mode: Mode::Auto,
        }
    }
}

/// What a build has left once level `n` is built in `seconds`: levels n+1..=`max` not built
/// yet, as [`seconds_left`] estimates them on `m`, scaled by the pace of level `n` (its
/// seconds over the plan's for it), in a line for the build's log: `None` where level `n`
/// took under [`PACE_SECONDS`] (too short to say), or nothing is left.
pub fn time_left(m: &Machine, max: u32, depth: bool, n: u32, seconds: f64) -> Option<String> {
    if seconds < PACE_SECONDS || n >= max {
        return None;
    }
    let planned = level_plan(n, m, depth).seconds(m);
    let left = seconds_left(n + 1, max, m, depth);
    if !(planned.is_finite() && planned > 0.0 && left > 0.0) {
        return None;
    }
    let pace = seconds / planned;
    // Level 47 does not exist: after 46 only 48 is left.
    let first = (n + 1..=max).find(|&k| level_exists(k)).unwrap_or(max);
    let what = if first == max {
        format!("level {max}")
    } else {
        format!("levels {first}..{max}")
    };
    Some(format!(
        "{what}: about {} more at this run's pace (level {n} took {pace:.2}× the time `plan` gives it)",
        duration(left * pace)
    ))
}

/// Which levels the database directory `db` holds, plain or compressed: [`Machine::built`].
pub fn built_levels(db: &std::path::Path) -> [bool; 49] {
    std::array::from_fn(|n| {
        level_exists(n as u32)
            && (awari_db::level_path(db, n as u32).exists()
                || awari_db::compressed_path(db, n as u32).exists())
    })
}

/// The least time of a level whose pace [`time_left`] extrapolates.
pub const PACE_SECONDS: f64 = 5.0;

/// How level `n` is built on machine `m` (with its depth pass where `depth`): what [`render`]
/// shows of it. `compute` is NaN where no algorithm fits.
struct LevelPlan {
    /// The algorithm, as the plan's mode column names it.
    mode: String,
    ram: u64,
    /// Seconds of computing.
    compute: f64,
    /// Bytes of sequential I/O.
    io: u64,
    /// Bytes of work files at the most.
    work: u64,
}

impl LevelPlan {
    /// Seconds in all on machine `m`: computing, and the I/O at its bandwidth (NaN where no
    /// algorithm fits).
    fn seconds(&self, m: &Machine) -> f64 {
        self.compute + self.io as f64 / m.bandwidth
    }
}

/// Level `n`'s [`LevelPlan`] on machine `m`: the first algorithm that fits, as `build` picks
/// it (or `m.mode`), at `m`'s rates.
fn level_plan(n: u32, m: &Machine, depth: bool) -> LevelPlan {
    let p = level_size(n);
    let per_sec = m.rate * m.threads as f64;
    let fits = |need: u64| m.memory.is_none_or(|b| need <= b);
    let in_memory = memory_needed(n, false);
    let low = lowmem::memory_needed(n, m.threads);
    let two_bit = twobit::memory_needed(n, m.threads);
    let may = |mode: Mode| m.mode == Mode::Auto || m.mode == mode;
    let both = m.mode == Mode::Auto && fits(low) && fits(two_bit);
    let low_memory_first = !both || !two_bit_is_faster(n, m);
    let (mode, ram, compute, io, work) = if may(Mode::InMemory) && fits(in_memory) {
        let io = level_io(n, 1, false);
        ("memory".to_string(), in_memory, p as f64 / per_sec, io, 0)
    } else if may(Mode::LowMemory) && fits(low) && low_memory_first {
        let (passes, ram, compute, io) = low_memory_estimate(n, m);
        let mode = if passes > 1 {
            format!("low-memory, {passes} exit passes")
        } else {
            "low-memory".to_string()
        };
        (mode, ram, compute, io, lowmem::disk_needed(n))
    } else if may(Mode::TwoBit) && fits(two_bit) {
        let (passes, ram, compute, io) = two_bit_estimate(n, m);
        let mode = if passes > 1 {
            format!("two-bit, {passes} exit passes")
        } else {
            "two-bit".to_string()
        };
        (mode, ram, compute, io, twobit::disk_needed(n))
    } else {
        let need = match m.mode {
            Mode::InMemory => in_memory,
            Mode::LowMemory => low,
            Mode::TwoBit => two_bit,
            Mode::Auto => low.min(two_bit),
        };
        ("does not fit".to_string(), need, f64::NAN, 0, 0)
    };
    // The depth pass after the values: its RAM, time, I/O and wave files.
    let (mode, ram, compute, io, work) = if depth {
        let passes = p.div_ceil(crate::depth::exit_bucket(n, m.memory));
        (
            format!("{mode}, then the depth pass"),
            ram.max(crate::depth::memory_used(n, m.memory)),
            compute + p as f64 / (per_sec * m.depth_ratio),
            io + crate::depth::work_io(n, passes),
            work.max(crate::depth::disk_needed(n)),
        )
    } else {
        (mode, ram, compute, io, work)
    };
    LevelPlan {
        mode,
        ram,
        compute,
        io,
        work,
    }
}

/// Seconds levels `from..=max` not yet built take on machine `m` (with their depth passes
/// where `depth`), I/O included, as [`render`] estimates them; levels that fit nowhere count 0.
pub fn seconds_left(from: u32, max: u32, m: &Machine, depth: bool) -> f64 {
    (from..=max)
        .filter(|&n| level_exists(n) && !m.built[n as usize])
        .map(|n| level_plan(n, m, depth).seconds(m))
        .filter(|s| s.is_finite())
        .sum()
}

/// A table of memory, disk, I/O and estimated time per level, with totals.
///
/// Assumptions (printed with the table): each level is built in memory (2 bytes of RAM per
/// position of the level in progress; 8 with depth tables) when that fits the memory, else
/// with the low-memory algorithm (0.67 bytes per position while settling, plus exit bytes for
/// as much of the level as the memory allows — the lower levels are streamed once per such
/// bucket — and a 1-byte-per-position work file), else with the two-bit algorithm (0.25 bytes
/// per position and per-thread buffers; exit buckets of what the memory holds; exit lists and
/// a log of settled positions, each written and read about once, see [`twobit::work_io`]);
/// disk is 1 byte per position for values (or, with
/// `compress`, the measured compressed size of [`compressed_bytes`]; plus [`depth_bytes`] for
/// depths); compute time = positions / (threads × rate per thread), slowed by the
/// low-memory or two-bit ratio; I/O time = the sequential bytes of [`level_io`] and
/// [`two_bit_io`] (their own part scaled by the machine's measured traffic, if calibrated) at
/// the stated bandwidth, counted as if nothing were cached and nothing overlapped
/// (pessimistic: the lower levels are often still in the page cache, and streaming overlaps
/// computing). The rates are the defaults ([`DEFAULT_RATE`] and the ratios beside it) or a
/// calibration's; larger levels run somewhat slower per position (more cache misses), so
/// compute times are optimistic. A line after the total states the assumptions
/// ([`assumptions`]), and one the time `verify --prove` of the levels would take.
pub fn render(max: u32, m: &Machine, depth: bool) -> String {
    let mut s = String::new();
    let per_sec = m.rate * m.threads as f64;
    s.push_str(&format!(
        "plan: levels 0..{max}, {} threads at {:.2}M positions/s each ({:.1}M/s in memory, {:.0}% of that in low-memory mode, {:.0}% in two-bit mode), memory limit {}, disk free {}, sequential I/O at {:.0} MB/s{}{}\n",
        m.threads,
        m.rate / 1e6,
        per_sec / 1e6,
        m.low_ratio * 100.0,
        m.two_bit_ratio * 100.0,
        m.memory.map_or("unknown".into(), human),
        m.disk.map_or("unknown".into(), human),
        m.bandwidth / 1e6,
        match (depth, m.compress) {
            (true, true) => ", with depth tables, values compressed as built",
            (true, false) => ", with depth tables",
            (false, true) => ", tables compressed as built",
            (false, false) => "",
        },
        match m.mode {
            Mode::Auto => String::new(),
            mode => format!(", every level in {} mode", mode.name()),
        }
    ));
    s.push_str(&format!(
        "{:>5} {:>16} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}  {}\n",
        "level", "positions", "RAM", "disk", "disk total", "I/O", "est. time", "cumulative", "mode"
    ));
    let (mut disk_total, mut secs_total, mut peak_ram, mut io_total) = (0u64, 0f64, 0u64, 0u64);
    // Disk of the values and of the depth tables apart, and of the probe form's values.
    let (mut values_total, mut depth_total, mut probe_total) = (0u64, 0u64, 0u64);
    let mut first_unfit = None;
    let mut first_no_disk = None;
    let mut peak_work = 0u64;
    let mut disk_new = 0u64; // of the levels not built yet
                             // `verify --prove` of every level planned: the depth pass with the proof.
    let mut prove_secs = 0f64;
    let mut prove_classes = None;
    for n in (0..=max).filter(|&n| level_exists(n)) {
        let p = level_size(n);
        // Depth tables as stored by default: plain up to 20 seeds, compressed above.
        let depth_disk = if depth { depth_bytes(n) } else { 0 };
        let values_disk = if m.compress {
            compressed_bytes(n)
        } else {
            p + 64
        };
        let disk = values_disk + depth_disk;
        disk_total += disk;
        values_total += values_disk;
        depth_total += depth_disk;
        probe_total += probe_form_bytes(n);
        let (secs, by_classes) = prove_estimate(n, m);
        prove_secs += secs;
        if by_classes {
            prove_classes.get_or_insert(n);
        }
        if m.built[n as usize] {
            s.push_str(&format!(
                "{n:>5} {p:>16} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}  in the database\n",
                "–",
                human(disk),
                human(disk_total),
                "–",
                "–",
                duration(secs_total),
            ));
            continue;
        }
        disk_new += disk;
        let plan = level_plan(n, m, depth);
        let secs = plan.seconds(m);
        let LevelPlan {
            mode,
            ram,
            compute,
            io,
            work,
        } = plan;
        if compute.is_nan() && first_unfit.is_none() {
            first_unfit = Some(n);
        }
        // Compressed as built: the plain table stays until its compressed form is written.
        let work = work + if m.compress { p } else { 0 };
        peak_work = peak_work.max(work);
        let disk_ok = m.disk.is_none_or(|free| disk_new + work <= free);
        if !disk_ok && first_no_disk.is_none() {
            first_no_disk = Some(n);
        }
        if secs.is_finite() {
            secs_total += secs;
            io_total += io;
        }
        peak_ram = peak_ram.max(ram);
        s.push_str(&format!(
            "{n:>5} {p:>16} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}  {mode}{}\n",
            human(ram),
            human(disk),
            human(disk_total),
            human(io),
            if secs.is_finite() {
                duration(secs)
            } else {
                "-".into()
            },
            duration(secs_total),
            if disk_ok { "" } else { ", disk full" },
        ));
    }
    let positions: u64 = (0..=max).filter(|&n| level_exists(n)).map(level_size).sum();
    s.push_str(&format!(
        "total: {positions} positions, peak RAM {}, disk {}{}{}, sequential I/O {} ({} of it), about {}{}\n",
        human(peak_ram),
        human(disk_total),
        if depth {
            format!(
                " (values {}, depth tables {})",
                human(values_total),
                human(depth_total)
            )
        } else {
            String::new()
        },
        if peak_work > 0 {
            format!(
                " (+ {} of work files while the largest low-memory or two-bit level is built)",
                human(peak_work)
            )
        } else {
            String::new()
        },
        human(io_total),
        duration(io_total as f64 / m.bandwidth),
        duration(secs_total),
        if first_unfit.is_some() {
            " for the levels that fit in memory"
        } else {
            ""
        }
    ));
    s.push_str(&assumptions(m));
    s.push_str(&format!(
        "to prove: `verify --prove` of levels 0..{max} takes about {} more (the depth pass with the proof, its I/O included{})\n",
        duration(prove_secs),
        match prove_classes {
            Some(from) => format!(
                "; from level {from} on by value class: their values exceed the memory beside the pass, so they are read in order"
            ),
            None => String::new(),
        }
    ));
    if m.compress {
        s.push_str(&format!(
            "to download: the values in the probe form (`compress --probe`), {} ({:.2} bits a position){}\n",
            human(probe_total),
            8.0 * probe_total as f64 / positions as f64,
            if depth {
                format!(
                    ", with the depth tables {}",
                    human(probe_total + depth_total)
                )
            } else {
                String::new()
            }
        ));
    }
    if let Some(n) = first_unfit {
        s.push_str(&format!(
            "levels from {n} do not fit in {}{}\n",
            m.memory.map_or("memory".into(), human),
            ""
        ));
    }
    if let (Some(n), Some(free)) = (first_no_disk, m.disk) {
        s.push_str(&format!(
            "the disk fills at level {n}: the levels of 0..{max} not built yet need {} (+ {} of work file), {} is free\n",
            human(disk_new),
            human(peak_work),
            human(free)
        ));
    }
    s
}

/// The plan's assumptions in one line: the rates per thread of each mode, the out-of-core
/// modes' disk traffic against the model's, the bandwidth, and where they come from.
pub fn assumptions(m: &Machine) -> String {
    let mega = |ratio: f64| format!("{:.2}M", m.rate * ratio / 1e6);
    format!(
        "assumed: per thread, in memory {}, low-memory {}, two-bit {} (with {} exit passes; {:.1}% more time a pass), depth pass {}, verify --prove {} positions/s; low-memory and two-bit disk traffic {:.2}× and {:.2}× the model's; sequential I/O {:.0} MB/s; from {}\n",
        mega(1.0),
        mega(m.low_ratio),
        mega(m.two_bit_ratio),
        m.two_bit_passes,
        TWO_BIT_PASS_COST * 100.0,
        mega(m.depth_ratio),
        mega(m.verify_ratio),
        m.low_io_scale,
        m.two_bit_io_scale,
        m.bandwidth / 1e6,
        m.source
    )
}

/// Seconds in words: `42 s`, `3.5 min`, `2.1 h`, `4.0 days`.
pub fn duration(secs: f64) -> String {
    if secs < 90.0 {
        format!("{secs:.0} s")
    } else if secs < 5400.0 {
        format!("{:.1} min", secs / 60.0)
    } else if secs < 172_800.0 {
        format!("{:.1} h", secs / 3600.0)
    } else {
        format!("{:.1} days", secs / 86400.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(memory: u64, disk: u64) -> Machine {
        Machine {
            memory: Some(memory),
            disk: Some(disk),
            threads: 2,
            rate: 2.0e6,
            low_ratio: 0.8,
            two_bit_ratio: 0.4,
            two_bit_passes: DEFAULT_TWO_BIT_PASSES,
            depth_ratio: 0.4,
            verify_ratio: 0.4,
            bandwidth: 500e6,
            low_io_scale: 1.0,
            two_bit_io_scale: 1.0,
            source: "the tests".into(),
            built: [false; 49],
            compress: false,
            mode: Mode::Auto,
        }
    }

    /// Levels already in the database take no time and no new disk.
    #[test]
    fn built_levels_need_no_new_disk() {
        let g = 1u64 << 30;
        // 0..36 needs 55 GiB of tables; with 0..34 built (31 GiB), 44 GiB free is enough.
        let fresh = render(36, &machine(22 * g, 44 * g), false);
        assert!(fresh.contains("the disk fills at level"), "{fresh}");
        let mut m = machine(22 * g, 44 * g);
        m.built[..=34].fill(true);
        let resumed = render(36, &m, false);
        assert!(!resumed.contains("disk full"), "{resumed}");
        let line34 = resumed
            .lines()
            .find(|l| l.trim_start().starts_with("34 "))
            .unwrap();
        assert!(line34.ends_with("in the database"), "{line34}");
        let line35 = resumed
            .lines()
            .find(|l| l.trim_start().starts_with("35 "))
            .unwrap();
        assert!(!line35.ends_with("in the database"), "{line35}");
    }

    #[test]
    fn io_counts_the_lower_levels_once_per_pass() {
        // Level 20 reads levels 2..=18 (c = 2..18) and writes itself.
        let lower: u64 = (2..=18).map(level_size).sum();
        assert_eq!(level_io(20, 1, false), lower + level_size(20));
        assert_eq!(level_io(20, 3, false), 3 * lower + level_size(20));
        // Low-memory: the work array once written, 2 × 20 steps, once read for the table.
        assert_eq!(
            level_io(20, 1, true),
            lower + level_size(20) * (1 + 40 + 1) + level_size(20)
        );
        // Level 2 reads level 0 only.
        assert_eq!(level_io(2, 1, false), 1 + level_size(2));
    }

    /// The 64 GB desktop of the two-bit algorithm: every level fits, the large ones in
    /// two-bit mode, level 48 with its exits in several passes.
    #[test]
    fn the_full_game_fits_a_64_gb_desktop() {
        let g = 1u64 << 30;
        let desktop = Machine {
            threads: 16,
            bandwidth: 2000e6,
            ..machine(64 * g, 2048 * g)
        };
        let plan = render(48, &desktop, false);
        assert!(
            !plan.contains("does not fit") && !plan.contains("disk full"),
            "{plan}"
        );
        let line48 = plan
            .lines()
            .find(|l| l.trim_start().starts_with("48 "))
            .unwrap();
        assert!(line48.contains("two-bit"), "{line48}");
        // Level 48 in two-bit mode: 0.25 bytes per position, under the 64 GiB.
        assert!(twobit::memory_needed(48, 16) <= 64 * g);
        assert!(twobit::memory_needed(48, 16) >= level_size(48) / 4);
    }

    /// The proof goes by value class from the first level whose values and the pass's
    /// memory exceed the machine's (64 GB: level 42, 58.8 G positions and 14.7 GB of state),
    /// and by waves below it and on a machine that holds every level's values.
    #[test]
    fn the_proof_goes_by_class_where_the_values_exceed_the_memory() {
        let g = 1u64 << 30;
        let prove_line = |memory: u64| {
            let plan = render(48, &machine(memory, 4096 * g), false);
            plan.lines()
                .find(|l| l.starts_with("to prove:"))
                .unwrap()
                .to_string()
        };
        let desktop = prove_line(64 * g);
        assert!(
            desktop.contains("from level 42 on by value class"),
            "{desktop}"
        );
        assert!(!prove_line(1024 * g).contains("value class"));
        let m = machine(64 * g, 4096 * g);
        assert!(!prove_estimate(41, &m).1 && prove_estimate(42, &m).1);
        // By class the proof reads the lower levels and the level once per bucket, more than
        // the wave pass moves, and takes longer per position.
        let (waves, classes) = (
            prove_estimate(42, &machine(1024 * g, 4096 * g)),
            prove_estimate(42, &m),
        );
        assert!(classes.0 > waves.0, "{classes:?} {waves:?}");
        // Each further exit bucket adds CLASS_PASS_COST of the one-bucket compute: level 48
        // on 64 GiB and on less, the I/O made free.
        let free_io = |memory: u64| Machine {
            bandwidth: f64::INFINITY,
            ..machine(memory, 4096 * g)
        };
        let compute = |memory: u64| {
            let buckets = level_size(48).div_ceil(crate::depth::class_bucket(48, Some(memory)));
            (buckets, prove_estimate(48, &free_io(memory)).0)
        };
        let (few, more) = (compute(64 * g), compute(16 * g));
        assert!(more.0 > few.0 && few.0 > 1, "{few:?} {more:?}");
        let one = |(b, t): (u64, f64)| t / (1.0 + (b - 1) as f64 * CLASS_PASS_COST);
        assert!(
            (one(few) - one(more)).abs() < 1e-9 * one(few),
            "{few:?} {more:?}"
        );
        let per_sec = 2.0e6 * 2.0 * 0.4 * CLASS_PROVE_RATIO;
        assert!((one(few) - level_size(48) as f64 / per_sec).abs() < 1e-6 * one(few));
    }

    #[test]
    fn render_says_where_memory_and_disk_run_out() {
        let g = 1u64 << 30;
        let plan = render(48, &machine(24 * g, 80 * g), false);
        assert!(plan.contains("low-memory"), "{plan}");
        assert!(plan.contains("does not fit"), "{plan}");
        assert!(plan.contains("the disk fills at level 37"), "{plan}");
        let big = render(48, &machine(512 * g, 2048 * g), false);
        assert!(
            !big.contains("does not fit") && !big.contains("disk full"),
            "{big}"
        );
        let line48 = big
            .lines()
            .find(|l| l.trim_start().starts_with("48 "))
            .unwrap();
        assert!(line48.ends_with("memory"), "{line48}");
        // With a budget below a level's in-memory need, its exits go in several buckets.
        let squeezed = render(36, &machine(12 * g, 2048 * g), false);
        let line36 = squeezed
            .lines()
            .find(|l| l.trim_start().starts_with("36 "))
            .unwrap();
        assert!(line36.contains("low-memory, 5 exit passes"), "{line36}");
    }

    #[test]
    fn depth_tables_are_plain_to_20_seeds_and_compressed_above() {
        assert_eq!(depth_bytes(20), level_size(20) + 64);
        assert_eq!(
            depth_bytes(21),
            (level_size(21) as f64 * COMPRESSED_DEPTH_BITS / 8.0).ceil() as u64
        );
        // The whole game: 828 GiB of values plus about 2.4 bits a position of depths.
        let plan = render(48, &machine(256 << 30, 4 << 40), true);
        let line = plan.lines().find(|l| l.starts_with("total:")).unwrap();
        assert!(
            line.contains("disk 1.0 TiB (values 828.00 GiB, depth tables 246.47 GiB)"),
            "{line}"
        );
    }

    #[test]
    fn compressed_tables_need_half_the_disk() {
        let plain = render(48, &machine(256 << 30, 4 << 40), false);
        let packed = render(
            48,
            &Machine {
                compress: true,
                ..machine(256 << 30, 4 << 40)
            },
            false,
        );
        let total = |plan: &str| -> String {
            let line = plan.lines().find(|l| l.starts_with("total:")).unwrap();
            line.split("disk ")
                .nth(1)
                .unwrap()
                .split([',', ' '])
                .next()
                .unwrap()
                .to_string()
        };
        assert!(packed.contains("tables compressed as built"), "{packed}");
        assert_eq!(total(&plain), "828.00", "{plain}");
        // 3.9 bits per position measured to 34 seeds, growing slowly: about 424 GiB.
        let g: f64 = total(&packed).parse().unwrap();
        assert!((400.0..460.0).contains(&g), "{packed}");
        assert_eq!(
            compressed_bytes(20),
            (80214915.0f64 * 3.680 / 8.0).ceil() as u64
        );
        // The download: the probe form, measured to 32 seeds, then its trend.
        let line = packed
            .lines()
            .find(|l| l.starts_with("to download:"))
            .unwrap();
        let probe = over_levels(48, probe_form_bytes);
        assert!(
            line.contains(&human(probe)) && !plain.contains("to download"),
            "{line}"
        );
        assert_eq!(
            probe_form_bytes(20),
            (80214915.0f64 * 2.342 / 8.0).ceil() as u64
        );
        let trend = PROBE_FORM_BITS[32] + 2.0 * PROBE_FORM_TREND;
        assert_eq!(
            probe_form_bytes(34),
            (level_size(34) as f64 * trend / 8.0).ceil() as u64
        );
    }

    /// Where both out-of-core algorithms fit, the auto mode takes the one estimated faster:
    /// two-bit on 16 threads (the low-memory work file's traffic outweighs its faster
    /// compute), low-memory on 2 (the compute is the larger part), and `plan` agrees with
    /// `build`'s choice.
    #[test]
    fn auto_mode_weighs_traffic_against_compute() {
        let g = 1u64 << 30;
        assert!(auto_prefers_two_bit(43, 16, Some(64 * g)));
        assert!(!auto_prefers_two_bit(35, 2, Some(16 * g)));
        let line = |threads: usize, memory: u64, n: u32| -> String {
            let plan = render(
                n,
                &Machine {
                    threads,
                    ..machine(memory, 2048 * g)
                },
                false,
            );
            let head = format!("{n:>5} ");
            plan.lines()
                .find(|l| l.starts_with(&head))
                .unwrap()
                .to_string()
        };
        assert!(
            line(16, 64 * g, 43).contains("two-bit"),
            "{}",
            line(16, 64 * g, 43)
        );
        assert!(
            line(2, 16 * g, 35).contains("low-memory"),
            "{}",
            line(2, 16 * g, 35)
        );
    }

    /// `plan --mode` plans every level with that algorithm, as `build --mode` builds it.
    #[test]
    fn a_forced_mode_applies_to_every_level() {
        let g = 1u64 << 30;
        let forced = |mode| {
            render(
                30,
                &Machine {
                    mode,
                    ..machine(64 * g, 2048 * g)
                },
                false,
            )
        };
        let two_bit = forced(Mode::TwoBit);
        let line = two_bit.lines().find(|l| l.starts_with("   22 ")).unwrap();
        // Its exits phase holds a byte per position of the bucket, as far as the memory
        // goes: level 22 in one pass with 64 GiB.
        assert!(line.ends_with("two-bit"), "{line}");
        assert!(two_bit.contains("every level in two-bit mode"), "{two_bit}");
        let low = forced(Mode::LowMemory);
        let line = low.lines().find(|l| l.starts_with("   30 ")).unwrap();
        assert!(line.ends_with("low-memory"), "{line}");
        // A level too large for the forced mode does not fit, even where another mode would.
        let tight = render(
            30,
            &Machine {
                mode: Mode::LowMemory,
                ..machine(1 << 30, 2048 * g)
            },
            false,
        );
        let line = tight.lines().find(|l| l.starts_with("   30 ")).unwrap();
        assert!(line.ends_with("does not fit"), "{line}");
        assert!(
            line.contains(&human(lowmem::memory_needed(30, 2))),
            "{line}"
        );
    }

    /// A two-bit level's compute scales with its exit passes against the passes its rate was
    /// measured with: with as many, the rate as it is; with fewer, faster; with more, slower.
    #[test]
    fn two_bit_compute_follows_the_exit_passes() {
        assert_eq!(two_bit_pass_scale(4, 4), 1.0);
        let one = two_bit_pass_scale(1, 4);
        assert!((one - 1.0 / (1.0 + 3.0 * TWO_BIT_PASS_COST)).abs() < 1e-12);
        assert!(two_bit_pass_scale(2, 4) > one && two_bit_pass_scale(5, 4) > 1.0);
        let g = 1u64 << 30;
        let m = Machine {
            threads: 16,
            mode: Mode::TwoBit,
            ..machine(64 * g, 2048 * g)
        };
        // Level 48 makes 3 passes on 64 GiB, level 40 one.
        for (n, passes) in [(48, 3), (40, 1)] {
            let (p, _, compute, _) = two_bit_estimate(n, &m);
            assert_eq!(p, passes);
            let flat = level_size(n) as f64 / (m.rate * 16.0 * m.two_bit_ratio);
            let want = flat * two_bit_pass_scale(passes, m.two_bit_passes);
            assert!((compute - want).abs() < 1e-6 * want && compute < flat);
            // Measured with as many passes as the level makes: the flat rate.
            let same = Machine {
                two_bit_passes: passes,
                ..m.clone()
            };
            assert!((two_bit_estimate(n, &same).2 - flat).abs() < 1e-6 * flat);
        }
        assert!(
            assumptions(&m).contains("two-bit 0.80M (with 4 exit passes; 5.8% more time a pass)")
        );
    }

    /// What a build has left: the plan's seconds for the levels above, scaled by the pace of
    /// the level just built; nothing for a short level or the last one.
    #[test]
    fn the_time_left_follows_the_pace_of_the_last_level() {
        let g = 1u64 << 30;
        let m = Machine::defaults(16, Some(64 * g));
        let planned = |n: u32| level_plan(n, &m, false).seconds(&m);
        let left = seconds_left(41, 48, &m, false);
        assert!(
            left > 0.0
                && (left
                    - (41..=48)
                        .filter(|&n| level_exists(n))
                        .map(planned)
                        .sum::<f64>())
                .abs()
                    < 1e-6 * left
        );
        // Level 40 at the plan's pace, then twice as slow.
        let line = time_left(&m, 48, false, 40, planned(40)).unwrap();
        assert!(
            line.starts_with(&format!("levels 41..48: about {} more", duration(left))),
            "{line}"
        );
        assert!(line.contains("level 40 took 1.00×"), "{line}");
        let slow = time_left(&m, 48, false, 40, 2.0 * planned(40)).unwrap();
        assert!(
            slow.contains(&duration(2.0 * left)) && slow.contains("2.00×"),
            "{slow}"
        );
        assert!(time_left(&m, 48, false, 46, planned(46))
            .unwrap()
            .starts_with("level 48: about"));
        // Too short to tell, or nothing left.
        assert_eq!(time_left(&m, 48, false, 20, PACE_SECONDS - 0.1), None);
        assert_eq!(time_left(&m, 48, false, 48, 1000.0), None);
        // Levels already built are not left.
        let mut built = m.clone();
        built.built[41..=48].iter_mut().for_each(|b| *b = true);
        assert_eq!(time_left(&built, 48, false, 40, planned(40)), None);
    }

    /// The traffic scales apply to the out-of-core levels' own I/O, not the lower levels'.
    #[test]
    fn io_scales_multiply_the_modelled_work_traffic() {
        let g = 1u64 << 30;
        let io_of = |m: &Machine, n: &str| -> String {
            let plan = render(48, m, false);
            let line = plan
                .lines()
                .find(|l| l.trim_start().starts_with(n))
                .unwrap();
            line.split_whitespace()
                .skip(8)
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
        };
        let base = Machine {
            threads: 16,
            ..machine(64 * g, 2048 * g)
        };
        let doubled = Machine {
            two_bit_io_scale: 2.0,
            low_io_scale: 3.0,
            ..base.clone()
        };
        let passes = level_size(48).div_ceil(twobit::exit_bucket(48, 16, Some(64 * g)));
        assert_eq!(passes, 3);
        let lower = lower_positions(48) * passes;
        assert_eq!(io_of(&base, "48 "), human(two_bit_io(48, passes, 1.0)));
        assert_eq!(
            io_of(&doubled, "48 "),
            human(lower + 2 * twobit::work_io(48))
        );
        let k = level_size(43).div_ceil(lowmem::exit_bucket(43, 16, Some(64 * g)));
        assert!(k > 1);
        let plain = level_io(43, k, true) - lower_positions(43) * k;
        // Level 43 in low-memory mode (the auto mode picks two-bit on 16 threads).
        let low = Machine {
            mode: Mode::LowMemory,
            ..doubled.clone()
        };
        assert_eq!(
            io_of(&low, "43 "),
            human(lower_positions(43) * k + 3 * plain)
        );
        let line = render(48, &doubled, false);
        assert!(
            line.contains("disk traffic 3.00× and 2.00× the model's"),
            "{line}"
        );
        assert!(line.contains("from the tests"), "{line}");
    }

    /// The sum of `bytes` over the levels 0..=max that exist.
    fn over_levels(max: u32, bytes: fn(u32) -> u64) -> u64 {
        (0..=max).filter(|&n| level_exists(n)).map(bytes).sum()
    }

    #[test]
    fn with_depth_tables_the_total_shows_values_and_depths_apart() {
        let plan = render(
            30,
            &Machine {
                compress: true,
                ..machine(256 << 30, 4 << 40)
            },
            true,
        );
        let total = plan.lines().find(|l| l.starts_with("total:")).unwrap();
        let values = over_levels(30, compressed_bytes);
        let depths = over_levels(30, depth_bytes);
        assert!(
            total.contains(&format!(
                "disk {} (values {}, depth tables {})",
                human(values + depths),
                human(values),
                human(depths)
            )),
            "{total}"
        );
        let download = plan
            .lines()
            .find(|l| l.starts_with("to download:"))
            .unwrap();
        let probe = over_levels(30, probe_form_bytes);
        assert!(
            download.contains(&format!("with the depth tables {}", human(probe + depths))),
            "{download}"
        );
    }
}
