//! A machine's measured rates for `plan`: the calibration file that `scripts/calibrate.sh`
//! writes and `plan --calibration FILE` reads.

use std::path::Path;

use awari_db::{level_exists, level_size};

use super::level_io;
use crate::exits::lower_positions;
use crate::twobit;

/// The most exit passes a calibration may say it measured with (a build makes at most a few
/// dozen): more would overflow the plan's sums of the lower levels' passes.
pub const MAX_EXIT_PASSES: u64 = 10_000;
/// The most a calibration's measured disk traffic may be of the plan's model
/// ([`IoSample::scale`]; a machine measures within a few times it): more would overflow the
/// plan's sums of bytes.
pub const MAX_IO_SCALE: f64 = 100.0;

/// The largest calibration file read: 1 MiB (`scripts/calibrate.sh` writes under 1 KiB).
pub const CALIBRATION_MAX: u64 = 1 << 20;

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

/// Why a calibration file was not used.
#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    /// The file could not be read, or is not a calibration file.
    #[error("calibration file {}: {what}", path.display())]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        what: String,
    },
    /// The path is not a regular file (a directory, a FIFO, a device), or names none.
    #[error("calibration file {0}")]
    NotAFile(awari_db::TableError),
    /// Its text is not a valid calibration (a key, a number, the JSON).
    #[error("{0}")]
    Invalid(String),
}

impl IoSample {
    /// The measured traffic of the level's own work (the lower levels' passes taken off) over
    /// what the plan's model gives it ([`level_io`] of the low-memory algorithm, or
    /// [`twobit::work_io`]): the factor by which the plan scales that model.
    pub fn scale(&self, two_bit: bool) -> Result<f64, CalibrationError> {
        let (n, passes) = (self.level, self.passes);
        let lower = (lower_positions(n) * passes) as f64;
        let measured = self.bytes_per_position * level_size(n) as f64 - lower;
        let modelled = if two_bit {
            twobit::work_io(n) as f64
        } else {
            level_io(n, passes, true) as f64 - lower
        };
        if measured <= 0.0 {
            return Err(CalibrationError::Invalid(format!(
                "{:.2} bytes per position is less than the lower levels' {passes} pass(es) alone ({:.2})",
                self.bytes_per_position,
                lower / level_size(n) as f64
            )));
        }
        Ok(measured / modelled)
    }
}

impl Calibration {
    /// Read a calibration file (see [`Calibration`]): a regular file of at most
    /// 1 MiB (`CALIBRATION_MAX`; a FIFO or a device such as `/dev/zero` is refused before it
    /// is read, a larger file after reading no more than that).
    pub fn read(path: &Path) -> Result<Calibration, CalibrationError> {
        use std::io::Read;
        let file = |what: String| CalibrationError::File {
            path: path.to_path_buf(),
            what,
        };
        awari_db::files::regular_file(path).map_err(|e| match e {
            // The path is said once, by this error.
            awari_db::TableError::Io { source, .. } => file(source.to_string()),
            e => CalibrationError::NotAFile(e),
        })?;
        let f = std::fs::File::open(path).map_err(|e| file(e.to_string()))?;
        let mut bytes = Vec::new();
        f.take(CALIBRATION_MAX + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| file(e.to_string()))?;
        if bytes.len() as u64 > CALIBRATION_MAX {
            return Err(file(format!(
                "larger than {CALIBRATION_MAX} bytes: not a calibration file"
            )));
        }
        let text = String::from_utf8(bytes).map_err(|_| file("not UTF-8 text".into()))?;
        Calibration::parse(&text).map_err(|e| file(e.to_string()))
    }

    /// Parse a calibration file's text: unknown keys, a missing in-memory rate, or a number
    /// that is not positive and finite are errors.
    pub fn parse(text: &str) -> Result<Calibration, CalibrationError> {
        Calibration::parse_text(text).map_err(CalibrationError::Invalid)
    }

    fn parse_text(text: &str) -> Result<Calibration, String> {
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
                .filter(|p| p.fract() == 0.0 && *p <= MAX_EXIT_PASSES as f64)
                .ok_or(format!(
                    "io_per_position.{mode} needs exit_passes.{mode}, a whole number 1..={MAX_EXIT_PASSES}"
                ))?;
            let s = IoSample {
                level: n,
                passes: p as u64,
                bytes_per_position: bytes,
            };
            let scale = s
                .scale(mode == "two_bit")
                .map_err(|e| format!("io_per_position.{mode}: {e}"))?;
            // The plan multiplies its model by this: a file far from any machine's (a typo)
            // would only make its figures overflow.
            if scale > MAX_IO_SCALE {
                return Err(format!(
                    "io_per_position.{mode}: {bytes} bytes per position is {scale:.3e} times the plan's model of level {n}, more than {MAX_IO_SCALE} (a machine measures within a few times it)"
                ));
            }
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let err = |text: &str| Calibration::parse(text).unwrap_err().to_string();
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
        // Found by fuzz/fuzz_targets/calibration.rs: absurd passes or traffic overflowed the
        // plan's sums (solver/tests/it/fuzz_regressions.rs runs `plan` on them).
        let passes = r#"{"level": 11, "rate_per_thread": {"memory": 1e6}, "io_per_position": {"two_bit": 30}, "exit_passes": {"two_bit": 1e20}}"#;
        assert!(
            err(passes).contains("a whole number 1..=10000"),
            "{}",
            err(passes)
        );
        let traffic = r#"{"level": 11, "rate_per_thread": {"memory": 1e6}, "io_per_position": {"low_memory": 1.02e13}, "exit_passes": {"low_memory": 4}}"#;
        assert!(
            err(traffic).contains("io_per_position.low_memory")
                && err(traffic).contains("more than 100"),
            "{}",
            err(traffic)
        );
        for e in [err("{"), err(no_passes), err(traffic)] {
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
