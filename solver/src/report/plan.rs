//! `plan`: what building levels 0..N takes, from the level sizes, measured build speeds (the
//! defaults below, or a machine's own from `scripts/calibrate.sh`) and a disk bandwidth.

use std::path::Path;

use awari_db::{level_exists, level_size};

use crate::build::Mode;
use crate::exits::lower_positions;
use crate::level::memory_needed;
use crate::lowmem;
use crate::sys::human;
use crate::twobit;

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
/// 37.4 M/s in memory.
pub const DEFAULT_TWO_BIT_RATIO: f64 = 16.6 / 37.4;
/// The default speed of the depth pass, and of `verify --prove` (the depth pass that also
/// recomputes every entry), as a fraction of the in-memory build: `verify --prove` of level 28
/// on the 16-core machine, 24.3 M positions/s with 16 threads, against 37.4 M/s building it.
/// The plain depth pass costs about 1/1.28 of the proof, so this is pessimistic for it.
pub const DEFAULT_DEPTH_RATIO: f64 = 24.3 / 37.4;
/// The default sequential disk bandwidth, bytes per second: a SATA SSD (an assumption, not a
/// measurement; a fast NVMe drive does 2000 MB/s or more).
pub const DEFAULT_BANDWIDTH: f64 = 500e6;
/// Where the defaults come from, as the plan's assumptions line says.
pub const DEFAULT_SOURCE: &str = "defaults (16-core measurements)";

/// A machine's measured speeds, as `scripts/calibrate.sh` writes them: a JSON object
///
/// ```text
/// {
///   "machine": "2 cores, 23.4 GiB",          (free text, not read)
///   "threads": 2,                             (threads used to measure)
///   "level": 22,                              (the level measured)
///   "rate_per_thread": {"memory": 4.9e6, "low_memory": 4.2e6, "two_bit": 2.1e6,
///                       "depth": 1.9e6, "verify": 1.5e6},
///   "io_per_position": {"low_memory": 55.1, "two_bit": 61.0},
///   "exit_passes": {"low_memory": 4, "two_bit": 4},
///   "disk_bandwidth": {"write": 1.1e9, "read": 1.6e9},
///   "seconds": {...}, "peak_bytes_per_position": {...}   (what was measured, not read)
/// }
/// ```
///
/// Rates are positions per second per thread; `io_per_position` are the bytes read and
/// written per position of the level (the build summary's `I/O r/pos` and `w/pos`) with
/// `exit_passes` passes over the lower levels; bandwidths are bytes per second. Only
/// `rate_per_thread.memory` is required; what is missing keeps its default (a missing mode's
/// rate: its default fraction of the in-memory one).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Calibration {
    /// In-memory build, positions per second per thread.
    pub memory_rate: f64,
    /// Low-memory build, positions per second per thread.
    pub low_memory_rate: Option<f64>,
    /// Two-bit build, positions per second per thread.
    pub two_bit_rate: Option<f64>,
    /// The depth pass (`depth`), positions per second per thread.
    pub depth_rate: Option<f64>,
    /// `verify --prove`, positions per second per thread.
    pub verify_rate: Option<f64>,
    /// The low-memory build's disk traffic.
    pub low_memory_io: Option<IoSample>,
    /// The two-bit build's disk traffic.
    pub two_bit_io: Option<IoSample>,
    /// Sequential write bandwidth, bytes per second.
    pub disk_write: Option<f64>,
    /// Sequential read bandwidth, bytes per second.
    pub disk_read: Option<f64>,
}

/// Bytes read and written per position of one level built out of core.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IoSample {
    /// The level built.
    pub level: u32,
    /// Its passes over the lower levels (exit buckets).
    pub passes: u64,
    /// Bytes read and written per position of the level.
    pub bytes_per_position: f64,
}

impl IoSample {
    /// The measured traffic of the level's own work (the lower levels' passes taken off) over
    /// what the plan's model gives it ([`level_io`] of the low-memory algorithm, or
    /// [`twobit::work_io`]): the factor by which the plan scales that model.
    pub fn scale(&self, two_bit: bool) -> Result<f64, String> {
        let (n, passes) = (self.level, self.passes);
        let lower = (lower_positions(n) * passes) as f64;
        let measured = self.bytes_per_position * level_size(n) as f64 - lower;
        let modelled = if two_bit {
            twobit::work_io(n) as f64
        } else {
            level_io(n, passes, true) as f64 - lower
        };
        if measured <= 0.0 {
            return Err(format!(
                "{:.2} bytes per position is less than the lower levels' {passes} pass(es) alone ({:.2})",
                self.bytes_per_position,
                lower / level_size(n) as f64
            ));
        }
        Ok(measured / modelled)
    }
}

impl Calibration {
    /// Read a calibration file (see [`Calibration`]).
    pub fn read(path: &Path) -> Result<Calibration, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("calibration file {}: {e}", path.display()))?;
        Calibration::parse(&text).map_err(|e| format!("calibration file {}: {e}", path.display()))
    }

    /// Parse a calibration file's text: unknown keys, a missing in-memory rate, or a number
    /// that is not positive and finite are errors.
    pub fn parse(text: &str) -> Result<Calibration, String> {
        use serde_json::Value;
        let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
        let Value::Object(top) = doc else {
            return Err("expected a JSON object".into());
        };
        let number = |key: &str, v: &Value| -> Result<f64, String> {
            match v.as_f64() {
                Some(x) if x.is_finite() && x > 0.0 => Ok(x),
                _ => Err(format!("{key}: expected a positive number, got {v}")),
            }
        };
        // The named object's numbers, each of its keys one of `allowed`.
        let object = |key: &str, allowed: &[&str]| -> Result<Vec<(String, f64)>, String> {
            let Some(v) = top.get(key) else {
                return Ok(Vec::new());
            };
            let Value::Object(o) = v else {
                return Err(format!("{key}: expected an object, got {v}"));
            };
            o.iter()
                .map(|(k, v)| {
                    if !allowed.contains(&k.as_str()) {
                        return Err(format!(
                            "{key}.{k}: unknown key (expected one of {})",
                            allowed.join(", ")
                        ));
                    }
                    Ok((k.clone(), number(&format!("{key}.{k}"), v)?))
                })
                .collect()
        };
        const TOP: [&str; 9] = [
            "machine",
            "threads",
            "level",
            "rate_per_thread",
            "io_per_position",
            "exit_passes",
            "disk_bandwidth",
            "seconds",
            "peak_bytes_per_position",
        ];
        if let Some(k) = top.keys().find(|k| !TOP.contains(&k.as_str())) {
            return Err(format!(
                "{k}: unknown key (expected one of {})",
                TOP.join(", ")
            ));
        }
        for key in ["threads", "level"] {
            if let Some(v) = top.get(key) {
                if v.as_u64().is_none_or(|x| x == 0) {
                    return Err(format!("{key}: expected a positive whole number, got {v}"));
                }
            }
        }
        const MODES: [&str; 5] = ["memory", "low_memory", "two_bit", "depth", "verify"];
        const OUT_OF_CORE: [&str; 2] = ["low_memory", "two_bit"];
        let get = |pairs: &[(String, f64)], k: &str| {
            pairs.iter().find(|(key, _)| key == k).map(|&(_, x)| x)
        };
        let rates = object("rate_per_thread", &MODES)?;
        let io = object("io_per_position", &OUT_OF_CORE)?;
        let passes = object("exit_passes", &OUT_OF_CORE)?;
        let disk = object("disk_bandwidth", &["write", "read"])?;
        // What was measured besides, for people: any object.
        for key in ["seconds", "peak_bytes_per_position"] {
            if let Some(v) = top.get(key).filter(|v| !v.is_object()) {
                return Err(format!("{key}: expected an object, got {v}"));
            }
        }
        let memory_rate = get(&rates, "memory")
            .ok_or("rate_per_thread.memory: missing (the in-memory rate is required)")?;
        let level = top.get("level").and_then(Value::as_u64);
        let sample = |mode: &str| -> Result<Option<IoSample>, String> {
            let Some(bytes) = get(&io, mode) else {
                return Ok(None);
            };
            let n = match level {
                Some(n) if n <= 48 && level_exists(n as u32) => n as u32,
                Some(n) => return Err(format!("level: {n} is not a level")),
                None => return Err(format!("io_per_position.{mode} needs \"level\"")),
            };
            let p = get(&passes, mode)
                .filter(|p| p.fract() == 0.0)
                .ok_or(format!(
                    "io_per_position.{mode} needs exit_passes.{mode}, a whole number"
                ))?;
            let s = IoSample {
                level: n,
                passes: p as u64,
                bytes_per_position: bytes,
            };
            s.scale(mode == "two_bit")
                .map_err(|e| format!("io_per_position.{mode}: {e}"))?;
            Ok(Some(s))
        };
        Ok(Calibration {
            memory_rate,
            low_memory_rate: get(&rates, "low_memory"),
            two_bit_rate: get(&rates, "two_bit"),
            depth_rate: get(&rates, "depth"),
            verify_rate: get(&rates, "verify"),
            low_memory_io: sample("low_memory")?,
            two_bit_io: sample("two_bit")?,
            disk_write: get(&disk, "write"),
            disk_read: get(&disk, "read"),
        })
    }

    /// The sequential bandwidth the plan uses: the harmonic mean of the write and read
    /// bandwidths (writing and reading back the same bytes), or the one measured.
    pub fn bandwidth(&self) -> Option<f64> {
        match (self.disk_write, self.disk_read) {
            (Some(w), Some(r)) => Some(2.0 / (1.0 / w + 1.0 / r)),
            (w, r) => w.or(r),
        }
    }
}

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
    /// Two-bit speed as a fraction of the in-memory speed.
    pub two_bit_ratio: f64,
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
    /// The level algorithm: [`Mode::Auto`] (the first that fits, as `build` picks it) or the
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
    let compute = p as f64 / (m.rate * m.threads as f64 * m.two_bit_ratio);
    (
        passes,
        ram,
        compute,
        two_bit_io(n, passes, m.two_bit_io_scale),
    )
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
    let m = Machine {
        memory,
        disk: None,
        threads,
        rate: DEFAULT_RATE,
        low_ratio: DEFAULT_LOW_RATIO,
        two_bit_ratio: DEFAULT_TWO_BIT_RATIO,
        depth_ratio: DEFAULT_DEPTH_RATIO,
        verify_ratio: DEFAULT_DEPTH_RATIO,
        bandwidth: DEFAULT_BANDWIDTH,
        low_io_scale: 1.0,
        two_bit_io_scale: 1.0,
        source: DEFAULT_SOURCE.into(),
        built: [false; 49],
        compress: false,
        mode: Mode::Auto,
    };
    two_bit_is_faster(n, &m)
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
        let prove_passes = p.div_ceil(crate::depth::exit_bucket(n, m.memory));
        prove_secs += p as f64 / (per_sec * m.verify_ratio)
            + crate::depth::work_io(n, prove_passes) as f64 / m.bandwidth;
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
            if first_unfit.is_none() {
                first_unfit = Some(n);
            }
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
        // Compressed as built: the plain table stays until its compressed form is written.
        let work = work + if m.compress { p } else { 0 };
        peak_work = peak_work.max(work);
        let disk_ok = m.disk.is_none_or(|free| disk_new + work <= free);
        if !disk_ok && first_no_disk.is_none() {
            first_no_disk = Some(n);
        }
        let secs = compute + io as f64 / m.bandwidth;
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
        "to prove: `verify --prove` of levels 0..{max} takes about {} more (the depth pass with the proof, its I/O included)\n",
        duration(prove_secs)
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

/// What a distributed plan assumes about the cluster.
#[derive(Clone, Copy, Debug)]
pub struct Cluster {
    /// MPI ranks.
    pub ranks: usize,
    /// Memory each rank may use.
    pub memory_per_rank: u64,
    /// Cores per rank.
    pub threads: usize,
    /// In-memory build speed per thread, positions per second (single machine).
    pub rate: f64,
    /// Speed of the distributed build as a fraction of a threaded one on the same cores.
    pub efficiency: f64,
    /// Speed of the low-memory algorithm as a fraction of the in-memory one (a rank whose
    /// slice does not fit in memory builds it with the low-memory algorithm).
    pub low_ratio: f64,
    /// Bytes sent between ranks per position built, measured with 2 ranks (half of the
    /// updates cross); with R ranks (R − 1)/R of them do.
    pub traffic_2: f64,
    /// Network bandwidth each rank can send at, bytes per second.
    pub network: f64,
    /// Sequential bandwidth at which each rank reads its part of the lower levels from the
    /// shared directory, bytes per second.
    pub disk: f64,
}

/// A table of the per-rank memory, traffic and time of a distributed build of levels 0..N.
///
/// Assumptions (printed with the table): every rank holds 2 bytes per position of its slice
/// when that fits its memory, else 0.67 bytes per position and exit buckets (the low-memory
/// algorithm, slower by the low-memory ratio, whose work file streams add I/O); compute time = positions / (ranks ×
/// threads × rate × efficiency); each rank sends its share of the traffic, at the stated
/// network bandwidth, while computing stops (the exchanges are blocking); each rank reads
/// 1/R of the lower levels (once per level) and writes 1/R of the table, at the stated disk
/// bandwidth. Nothing overlaps, so the times are pessimistic on that count and optimistic on
/// the speed of large levels (more cache misses).
pub fn render_distributed(max: u32, c: &Cluster) -> String {
    let r = c.ranks as f64;
    let per_position = c.traffic_2 * 2.0 * (r - 1.0) / r;
    let per_sec = c.rate * c.threads as f64 * r * c.efficiency;
    let mut s = format!(
        "plan: levels 0..{max} on {} ranks × {} threads at {:.2}M positions/s each, {:.0}% of that distributed ({:.1}M/s in all; {:.0}% of that in low-memory mode), {} of memory per rank, network {:.2} GB/s per rank ({:.1} Gbit/s), {:.2} bytes sent per position built ({:.2} measured with 2 ranks), lower levels read at {:.0} MB/s per rank\n",
        c.ranks,
        c.threads,
        c.rate / 1e6,
        c.efficiency * 100.0,
        per_sec / 1e6,
        c.low_ratio * 100.0,
        human(c.memory_per_rank),
        c.network / 1e9,
        c.network * 8.0 / 1e9,
        per_position,
        c.traffic_2,
        c.disk / 1e6,
    );
    s.push_str(&format!(
        "{:>5} {:>16} {:>12} {:>14} {:>11} {:>11} {:>11}  {}\n",
        "level", "positions", "RAM/rank", "sent/rank", "network", "est. time", "cumulative", ""
    ));
    let (mut total, mut peak, mut sent_total) = (0f64, 0u64, 0f64);
    let mut first_unfit = None;
    for n in (0..=max).filter(|&n| level_exists(n)) {
        let p = level_size(n);
        let slice = p.div_ceil(c.ranks as u64);
        let in_memory = 2 * slice + slice.min(4 << 20);
        let low = lowmem::slice_memory(slice, c.threads);
        let (ram, low_mode, fits) = if in_memory <= c.memory_per_rank {
            (in_memory, false, true)
        } else {
            (low, true, low <= c.memory_per_rank)
        };
        let (passes, work) = if low_mode {
            let bucket = lowmem::slice_bucket(slice, c.threads, Some(c.memory_per_rank));
            (slice.div_ceil(bucket), slice * (2 * u64::from(n) + 2))
        } else {
            (1, 0)
        };
        let sent = per_position * p as f64 / r;
        let network = sent / c.network;
        let io =
            ((crate::exits::lower_positions(n) * passes + p) as f64 / r + work as f64) / c.disk;
        let compute = p as f64 / per_sec / if low_mode { c.low_ratio } else { 1.0 };
        let secs = compute + network + io;
        if !fits && first_unfit.is_none() {
            first_unfit = Some(n);
        }
        if fits {
            total += secs;
            sent_total += sent;
            peak = peak.max(ram);
        }
        s.push_str(&format!(
            "{n:>5} {p:>16} {:>12} {:>14} {:>11} {:>11} {:>11}  {}\n",
            human(ram),
            human(sent as u64),
            duration(network),
            if fits { duration(secs) } else { "-".into() },
            duration(total),
            match (fits, low_mode, passes) {
                (false, _, _) => "does not fit".to_string(),
                (true, true, 1) => "low-memory".to_string(),
                (true, true, k) => format!("low-memory, {k} exit passes"),
                _ => String::new(),
            }
        ));
    }
    s.push_str(&format!(
        "total: peak RAM per rank {}, {} sent per rank, about {}{}\n",
        human(peak),
        human(sent_total as u64),
        duration(total),
        if first_unfit.is_some() {
            " for the levels that fit"
        } else {
            ""
        }
    ));
    if let Some(n) = first_unfit {
        s.push_str(&format!(
            "levels from {n} do not fit in {} per rank, even with the low-memory algorithm: more ranks or more memory\n",
            human(c.memory_per_rank),
        ));
    }
    s
}

/// The plan's assumptions in one line: the rates per thread of each mode, the out-of-core
/// modes' disk traffic against the model's, the bandwidth, and where they come from.
pub fn assumptions(m: &Machine) -> String {
    let mega = |ratio: f64| format!("{:.2}M", m.rate * ratio / 1e6);
    format!(
        "assumed: per thread, in memory {}, low-memory {}, two-bit {}, depth pass {}, verify --prove {} positions/s; low-memory and two-bit disk traffic {:.2}× and {:.2}× the model's; sequential I/O {:.0} MB/s; from {}\n",
        mega(1.0),
        mega(m.low_ratio),
        mega(m.two_bit_ratio),
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
    fn distributed_plan_of_the_full_game() {
        let c = Cluster {
            ranks: 16,
            memory_per_rank: 64 << 30,
            threads: 16,
            rate: 2.0e6,
            efficiency: 0.7,
            low_ratio: 0.8,
            traffic_2: 14.0,
            network: 1.25e9,
            disk: 500e6,
        };
        let s = render_distributed(48, &c);
        let row = |s: &str, n: &str| -> String {
            let line = s.lines().find(|l| l.trim_start().starts_with(n));
            line.expect("a row per level").to_string()
        };
        // Level 48: 203.6 G positions, 2 bytes each over 16 ranks (+ 4 MiB) = 23.71 GiB per rank.
        assert!(row(&s, "48 ").contains("203648015935"), "{s}");
        assert!(row(&s, "48 ").contains("23.71 GiB"), "{s}");
        assert!(
            !s.contains("does not fit") && !s.contains("low-memory,"),
            "{s}"
        );
        // 4 GiB per rank holds level 39's slices in memory (3.5 GiB), not level 40's (4.4 GiB):
        // from there on the ranks run the low-memory algorithm, and level 48 fits no way.
        let small = render_distributed(
            48,
            &Cluster {
                memory_per_rank: 4 << 30,
                ..c
            },
        );
        assert!(!row(&small, "39 ").contains("low-memory"), "{small}");
        assert!(row(&small, "40 ").contains("low-memory"), "{small}");
        assert!(row(&small, "48 ").contains("does not fit"), "{small}");
        assert!(small.contains("levels from"), "{small}");
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

    const CALIBRATION: &str = r#"{
        "machine": "a test", "threads": 2, "level": 22,
        "rate_per_thread": {"memory": 5e6, "low_memory": 4e6, "two_bit": 2e6, "depth": 1.5e6, "verify": 1e6},
        "io_per_position": {"low_memory": 60.0, "two_bit": 70.0},
        "exit_passes": {"low_memory": 4, "two_bit": 4},
        "disk_bandwidth": {"write": 1e9, "read": 2e9},
        "seconds": {"memory": 40.1}, "peak_bytes_per_position": {"two_bit": 0.34}
    }"#;

    #[test]
    fn a_calibration_file_is_read() {
        let c = Calibration::parse(CALIBRATION).unwrap();
        assert_eq!(c.memory_rate, 5e6);
        assert_eq!(c.two_bit_rate, Some(2e6));
        assert_eq!(c.verify_rate, Some(1e6));
        let io = c.two_bit_io.unwrap();
        assert_eq!((io.level, io.passes, io.bytes_per_position), (22, 4, 70.0));
        // Writing and reading 1 byte takes 1.5 ns: 1.33 GB/s.
        assert!((c.bandwidth().unwrap() - 4e9 / 3.0).abs() < 1.0);
        // The scale: the measured work traffic over the model's.
        let lower = (lower_positions(22) * 4) as f64;
        let p = level_size(22) as f64;
        let want = (70.0 * p - lower) / twobit::work_io(22) as f64;
        assert!((io.scale(true).unwrap() - want).abs() < 1e-9);
        // Only the in-memory rate is required.
        let least = Calibration::parse(r#"{"rate_per_thread": {"memory": 3e6}}"#).unwrap();
        assert_eq!(least.bandwidth(), None);
        assert_eq!(least.low_memory_io, None);
    }

    #[test]
    fn a_malformed_calibration_says_what_is_wrong() {
        let err = |text: &str| Calibration::parse(text).unwrap_err();
        assert!(err("{").starts_with("not JSON"), "{}", err("{"));
        assert!(err("[1]").contains("JSON object"));
        assert!(err(r#"{"rate_per_thread": {}}"#).contains("rate_per_thread.memory: missing"));
        assert!(err(r#"{"rate_per_thread": {"memory": -1}}"#).contains("positive number"));
        assert!(err(r#"{"rate_per_thread": {"memory": "fast"}}"#).contains("positive number"));
        assert!(err(r#"{"rate_per_thread": {"memroy": 1}}"#).contains("unknown key"));
        assert!(err(r#"{"rates": 1}"#).contains("rates: unknown key"));
        let no_passes = r#"{"level": 22, "rate_per_thread": {"memory": 1e6}, "io_per_position": {"two_bit": 70}}"#;
        assert!(err(no_passes).contains("exit_passes.two_bit"));
        let too_little = r#"{"level": 22, "rate_per_thread": {"memory": 1e6},
            "io_per_position": {"two_bit": 1}, "exit_passes": {"two_bit": 4}}"#;
        assert!(err(too_little).contains("less than the lower levels"));
        assert!(err(r#"{"level": 47, "rate_per_thread": {"memory": 1e6}, "io_per_position": {"two_bit": 70}, "exit_passes": {"two_bit": 1}}"#).contains("not a level"));
        for e in [err("{"), err(no_passes)] {
            assert!(!e.contains('\n'), "{e}");
        }
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
