//! The cost model of a build: the memory, disk, traffic and time each level takes on a
//! machine ([`Machine`]), from the level sizes and measured rates (the defaults below, or a
//! calibration's). `build`, `plan` and the distributed build ask it which algorithm a level
//! takes ([`choose`]), `build` how long the levels left will take; `plan`
//! (`crate::report::plan`) prints it. Below `build`, above the level algorithms, whose memory
//! and traffic it reads.

use awari_db::{level_exists, level_size};

use crate::exits::lower_positions;
use crate::level::{memory_needed, Mode};
use crate::lowmem;
use crate::twobit;

mod calibration;

pub use calibration::{Calibration, CalibrationError, IoSample};

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
/// The depth pass and `verify --prove` by value class in one bit a position (for a `--memory`
/// below two bits), as a fraction of the speed of the two-bit class pass with as many exit
/// buckets: level 26 on the 2-core machine (`scripts/bench-depth.sh 26`, see
/// docs/performance.md), `depth` in one bit with 8 buckets at 0.73 of the two-bit class pass
/// with 4, [`CLASS_PASS_COST`] a bucket set apart.
pub const ONE_BIT_PROVE_RATIO: f64 =
    0.73 * (1.0 + 7.0 * CLASS_PASS_COST) / (1.0 + 3.0 * CLASS_PASS_COST);
/// Bytes a position the one-bit class pass moves besides the two-bit one's traffic with as
/// many buckets ([`crate::depth::class_prove_io`]): what its waves find, spilled and read
/// back (the same run: 21.5 bytes a position against 14.3, the lower levels' 4 further passes
/// 6.9 of the difference).
pub const ONE_BIT_PROVE_BYTES: f64 = 0.5;
/// A two-bit level built with its depths (`build --depth`: its steps settled in waves, its
/// depth table merged from its own files) against its values alone, in time: level 25 of awari
/// on the 2-core machine, `--memory` 0.34 bytes a position, 240.6 s against 174.1 s (and 162.4
/// s more for the depth pass after the values alone; level 24 under 0.36: 1.28;
/// `scripts/bench-build-depth.sh`, see docs/performance.md).
pub const TWO_BIT_DEPTHS_TIME: f64 = 240.6 / 174.1;
/// The bytes a position it reads and writes besides the values alone's: the part files read a
/// second time, the depth table, the depths in the part files, the waves' spills (the same
/// run: 13.9 read and 7.1 written against 9.3 and 4.6).
pub const TWO_BIT_DEPTHS_BYTES: f64 = 7.1;

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
pub(crate) const PROBE_FORM_BITS: [f64; 33] = [
    2048.0, 512.0, 184.615, 74.066, 32.674, 15.538, 8.346, 5.036, 3.744, 3.101, 2.582, 2.765,
    2.365, 2.495, 2.301, 2.351, 2.271, 2.322, 2.307, 2.345, 2.342, 2.359, 2.353, 2.370, 2.380,
    2.387, 2.420, 2.403, 2.403, 2.427, 2.418, 2.437, 2.429,
];
/// The least-squares growth of the probe form's bits per position over levels 24..32.
pub(crate) const PROBE_FORM_TREND: f64 = 0.0061;

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
pub(crate) fn two_bit_estimate(n: u32, m: &Machine) -> (u64, u64, f64, u64) {
    records_estimate(n, m, twobit::StateBits::Two)
}

/// The one-bit algorithm's speed as a share of the two-bit one's: level 26 of awari on 2
/// threads, one-bit under 0.16 bytes a position, two-bit under 0.34, in one run of
/// `scripts/bench-level.sh` (the other build paused): 252.5 s against 149.0 s (0.59; two runs
/// before its conversion's windows, 0.60 and 0.66; level 27: 0.60).
pub(crate) const ONE_BIT_SPEED: f64 = 0.6;
/// Bytes per position the one-bit algorithm moves besides the two-bit one's, the lower levels
/// and the conversion's windows apart: its rounds of candidates reading the exit lists below
/// 0, and the candidates it spills. Level 21 of awari under the memory of `plan --max-stones
/// 48 --memory 32G --threads 16`'s level 48 (`--memory 38270209`, 6 exit passes, 2 threads):
/// its own files 14.07 bytes a position read and written, of which 8.0 are two-bit's
/// ([`twobit::work_io`]) and 2.1 the conversion's second reading of the part files (its
/// `AWARI_TIMINGS` lines).
const ONE_BIT_ROUND_BYTES: f64 = 4.0;
/// Bytes per position of the log's part files, which the conversion reads once per window
/// ([`twobit::convert_reads`] a bucket): the same run read 4.23 in 2 windows a bucket.
const PART_BYTES: f64 = 2.1;

/// The same in the two-bit algorithm with `bits` of state: one bit at [`ONE_BIT_SPEED`] of its
/// speed, moving [`ONE_BIT_ROUND_BYTES`] a position more and [`PART_BYTES`] more for each
/// further window of its conversion (a model from the two-bit one's).
pub(crate) fn records_estimate(
    n: u32,
    m: &Machine,
    bits: twobit::StateBits,
) -> (u64, u64, f64, u64) {
    let p = level_size(n);
    let (speed, extra) = match bits {
        twobit::StateBits::Two => (1.0, 0.0),
        twobit::StateBits::One => (ONE_BIT_SPEED, ONE_BIT_ROUND_BYTES),
    };
    let bucket = twobit::exit_bucket(n, m.threads, m.memory, bits);
    let rereads = twobit::convert_reads(n, bucket, bits) - 1;
    let extra = (p as f64 * (extra + rereads as f64 * PART_BYTES)) as u64;
    let passes = p.div_ceil(bucket);
    let ram = twobit::memory_used(n, m.threads, bucket, bits);
    let compute = p as f64 / (m.rate * m.threads as f64 * m.two_bit_ratio * speed)
        * two_bit_pass_scale(passes, m.two_bit_passes);
    (
        passes,
        ram,
        compute,
        two_bit_io(n, passes, m.two_bit_io_scale) + extra,
    )
}

/// What a two-bit level's compute time with `passes` exit passes is, as a multiple of one
/// with `measured` passes ([`TWO_BIT_PASS_COST`] a pass).
pub fn two_bit_pass_scale(passes: u64, measured: u64) -> f64 {
    let time = |p: u64| 1.0 + p.saturating_sub(1) as f64 * TWO_BIT_PASS_COST;
    time(passes) / time(measured)
}

/// Which depth pass `verify --prove` of a level runs, as `plan` models it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProvePass {
    /// By waves, the level's values read at random from the page cache.
    Waves,
    /// By value class, in two bits a position.
    Classes,
    /// By value class, in one bit a position.
    OneBit,
}

/// Seconds `verify --prove` of level `n` takes on machine `m`, I/O included, and the pass it
/// runs: the wave pass (the value check in its wave 0) where the level's values fit in the
/// memory beside it ([`crate::depth::values_fit`]), else the class pass with its folded value
/// check, [`CLASS_PROVE_RATIO`] of the wave pass's speed with one exit bucket,
/// [`CLASS_PASS_COST`] more time each further bucket, with its traffic
/// ([`crate::depth::class_prove_io`]); in one bit a position where the memory is below two
/// ([`ONE_BIT_PROVE_RATIO`] of that speed, [`ONE_BIT_PROVE_BYTES`] more traffic).
pub(crate) fn prove_estimate(n: u32, m: &Machine) -> (f64, ProvePass) {
    let p = level_size(n);
    let per_sec = m.rate * m.threads as f64 * m.verify_ratio;
    let fits = m
        .memory
        .is_none_or(|memory| crate::depth::values_fit(n, Some(memory), memory));
    let one_bit = m
        .memory
        .is_some_and(|memory| memory < crate::depth::memory_needed(n));
    if fits && !one_bit {
        let passes = p.div_ceil(crate::depth::exit_bucket(n, m.memory));
        let io = crate::depth::work_io(n, passes);
        (
            p as f64 / per_sec + io as f64 / m.bandwidth,
            ProvePass::Waves,
        )
    } else {
        let passes = p.div_ceil(crate::depth::class_bucket(n, m.memory, m.threads));
        let mut io = crate::depth::class_prove_io(n, passes) as f64;
        let buckets = 1.0 + (passes - 1) as f64 * CLASS_PASS_COST;
        let mut speed = per_sec * CLASS_PROVE_RATIO;
        let mut pass = ProvePass::Classes;
        if one_bit {
            io += p as f64 * ONE_BIT_PROVE_BYTES;
            speed *= ONE_BIT_PROVE_RATIO;
            pass = ProvePass::OneBit;
        }
        (p as f64 / speed * buckets + io / m.bandwidth, pass)
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

/// The memory each level algorithm needs for a level (or a rank's slice of one), bytes: what
/// [`choose`] weighs against the budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    /// The in-memory algorithm's.
    pub in_memory: u64,
    /// The low-memory algorithm's, with its smallest exit bucket.
    pub low_memory: u64,
    /// The two-bit algorithm's, with its smallest exit bucket; `None` where the build does
    /// not offer it (the distributed build).
    pub two_bit: Option<u64>,
    /// The one-bit algorithm's, likewise.
    pub one_bit: Option<u64>,
}

impl Needs {
    /// Level `n`'s needs on one machine of `threads` threads (values only: the depth pass
    /// comes after), every algorithm offered.
    pub fn level(n: u32, threads: usize) -> Needs {
        Needs {
            in_memory: memory_needed(n),
            low_memory: lowmem::memory_needed(n, threads),
            two_bit: Some(twobit::memory_needed(n, threads, twobit::StateBits::Two)),
            one_bit: Some(twobit::memory_needed(n, threads, twobit::StateBits::One)),
        }
    }
}

/// The algorithm [`choose`] picks for a level, what it needs and whether that fits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The algorithm, never [`Mode::Auto`].
    pub mode: Mode,
    /// The memory it needs, bytes (what the error names where it does not fit).
    pub needed: u64,
    /// Whether `needed` is within the budget.
    pub fits: bool,
}

/// A level algorithm asked for that the build does not offer ([`Needs::two_bit`] `None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the {} algorithm is not offered by this build", .0.name())]
pub struct NotOffered(pub Mode);

/// The algorithm for a level whose algorithms need `needs`, within `budget` bytes (`None`:
/// no limit), as `build`, `plan` and the distributed build all choose it: a forced `mode` is
/// kept, fitting or not; [`Mode::Auto`] takes in memory where it fits, else the out-of-core
/// algorithm that fits (where both do, two-bit if `prefers_two_bit`, asked only then: at
/// [`auto_prefers_two_bit`] for `build`, [`two_bit_is_faster`] for `plan`), else, where
/// nothing fits, the one of the smaller need (low-memory on a tie), so that the error names
/// the least memory that would do. Two-bit is forced or picked only where offered.
pub fn choose(
    mode: Mode,
    needs: Needs,
    budget: Option<u64>,
    prefers_two_bit: impl FnOnce() -> bool,
) -> Result<Choice, NotOffered> {
    let pick = |mode: Mode, needed: u64| Choice {
        mode,
        needed,
        fits: budget.is_none_or(|b| needed <= b),
    };
    let memory = pick(Mode::InMemory, needs.in_memory);
    let low = pick(Mode::LowMemory, needs.low_memory);
    let two_bit = needs.two_bit.map(|need| pick(Mode::TwoBit, need));
    let one_bit = needs.one_bit.map(|need| pick(Mode::OneBit, need));
    match (mode, two_bit) {
        (Mode::InMemory, _) => Ok(memory),
        (Mode::LowMemory, _) => Ok(low),
        (Mode::TwoBit, two_bit) => two_bit.ok_or(NotOffered(mode)),
        (Mode::OneBit, _) => one_bit.ok_or(NotOffered(mode)),
        (Mode::Auto, _) if memory.fits => Ok(memory),
        (Mode::Auto, None) => Ok(low),
        (Mode::Auto, Some(two_bit)) => Ok(match (low.fits, two_bit.fits, one_bit) {
            (true, true, _) if prefers_two_bit() => two_bit,
            (true, _, _) => low,
            (false, true, _) => two_bit,
            // Only one bit a position fits.
            (false, false, Some(one_bit)) if one_bit.fits => one_bit,
            // Nothing fits: the smallest need, for the error.
            (false, false, Some(one_bit)) if one_bit.needed < two_bit.needed.min(low.needed) => {
                one_bit
            }
            (false, false, _) if two_bit.needed < low.needed => two_bit,
            (false, false, _) => low,
        }),
    }
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
pub(crate) struct LevelPlan {
    /// The algorithm, as the plan's mode column names it.
    pub(crate) mode: String,
    pub(crate) ram: u64,
    /// Seconds of computing.
    pub(crate) compute: f64,
    /// Bytes of sequential I/O.
    pub(crate) io: u64,
    /// Bytes of work files at the most.
    pub(crate) work: u64,
}

impl LevelPlan {
    /// Seconds in all on machine `m`: computing, and the I/O at its bandwidth (NaN where no
    /// algorithm fits).
    pub(crate) fn seconds(&self, m: &Machine) -> f64 {
        self.compute + self.io as f64 / m.bandwidth
    }
}

/// The saves of its state an in-memory level of `compute` seconds makes, each `bytes`
/// written at `bandwidth` bytes a second: one every [`crate::checkpoint::CHECKPOINT_SECONDS`],
/// or every ten times a save's own time where that is longer (see `level::memory`).
pub(crate) fn memory_saves(compute: f64, bytes: u64, bandwidth: f64) -> u64 {
    let every = crate::checkpoint::CHECKPOINT_SECONDS
        .max(crate::level::SAVE_SHARE * bytes as f64 / bandwidth);
    (compute / every).floor() as u64
}

/// Level `n`'s [`LevelPlan`] on machine `m`, at `m`'s rates: the algorithm [`choose`] picks
/// for `m.mode`, as `build` picks it, the out-of-core algorithms' tie-break by
/// [`two_bit_is_faster`] on `m` (`build`'s, [`auto_prefers_two_bit`], is the same at the
/// default rates).
pub(crate) fn level_plan(n: u32, m: &Machine, depth: bool) -> LevelPlan {
    let p = level_size(n);
    let per_sec = m.rate * m.threads as f64;
    let choice = choose(m.mode, Needs::level(n, m.threads), m.memory, || {
        two_bit_is_faster(n, m)
    })
    .expect("one machine offers every algorithm");
    let (mode, ram, compute, io, work) = match choice.mode {
        _ if !choice.fits => ("does not fit".to_string(), choice.needed, f64::NAN, 0, 0),
        Mode::InMemory => {
            let compute = p as f64 / per_sec;
            // Its state saved every few minutes (written whole; its file the work file).
            let save = crate::level::saved_state_bytes(n);
            let saves = memory_saves(compute, save, m.bandwidth);
            let work = if saves > 0 { save } else { 0 };
            let io = level_io(n, 1, false) + saves * save;
            ("memory".to_string(), choice.needed, compute, io, work)
        }
        Mode::LowMemory => {
            let (passes, ram, compute, io) = low_memory_estimate(n, m);
            let mode = if passes > 1 {
                format!("low-memory, {passes} exit passes")
            } else {
                "low-memory".to_string()
            };
            (mode, ram, compute, io, lowmem::disk_needed(n))
        }
        mode => {
            let bits = if mode == Mode::OneBit {
                twobit::StateBits::One
            } else {
                twobit::StateBits::Two
            };
            let (passes, ram, compute, io) = records_estimate(n, m, bits);
            let name = mode.name();
            let mode = if passes > 1 {
                format!("{name}, {passes} exit passes")
            } else {
                name.to_string()
            };
            (mode, ram, compute, io, twobit::disk_needed(n))
        }
    };
    // The depth pass after the values: its RAM, time, I/O and wave files; in one bit a
    // position (by value class) where two do not fit. A two-bit level finds its depths as it
    // settles instead.
    let two_bit = choice.fits && choice.mode == Mode::TwoBit;
    let (mode, ram, compute, io, work) = if depth && two_bit {
        (
            format!("{mode}, with depths"),
            ram,
            compute * TWO_BIT_DEPTHS_TIME,
            io + (p as f64 * TWO_BIT_DEPTHS_BYTES) as u64,
            work,
        )
    } else if depth {
        let one_bit = m
            .memory
            .is_some_and(|memory| memory < crate::depth::memory_needed(n));
        let (what, secs, depth_io) = if one_bit {
            let passes = p.div_ceil(crate::depth::class_bucket(n, m.memory, m.threads));
            let buckets = 1.0 + (passes - 1) as f64 * CLASS_PASS_COST;
            let speed = per_sec * m.depth_ratio * CLASS_PROVE_RATIO * ONE_BIT_PROVE_RATIO;
            (
                "then the depth pass in one bit",
                p as f64 / speed * buckets,
                crate::depth::class_prove_io(n, passes) + (p as f64 * ONE_BIT_PROVE_BYTES) as u64,
            )
        } else {
            let passes = p.div_ceil(crate::depth::exit_bucket(n, m.memory));
            (
                "then the depth pass",
                p as f64 / (per_sec * m.depth_ratio),
                crate::depth::work_io(n, passes),
            )
        };
        (
            format!("{mode}, {what}"),
            ram.max(crate::depth::memory_used(n, m.memory, m.threads)),
            compute + secs,
            io + depth_io,
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
/// where `depth`), I/O included, as `plan` (`crate::report::plan::render`) estimates them; levels that fit nowhere count 0.
pub fn seconds_left(from: u32, max: u32, m: &Machine, depth: bool) -> f64 {
    (from..=max)
        .filter(|&n| level_exists(n) && !m.built[n as usize])
        .map(|n| level_plan(n, m, depth).seconds(m))
        .filter(|s| s.is_finite())
        .sum()
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
mod tests;
