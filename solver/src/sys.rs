//! What the operating system says about memory and disk (Linux `/proc`; elsewhere unknown).

use std::path::Path;

/// Bytes of memory available to new work, if known: `MemAvailable` (free memory and the page
/// cache that can be reclaimed), or less where this process's memory cgroup (a container, a
/// `systemd-run -p MemoryMax=`, `scripts/capped.sh`) leaves less: its limit less what it holds
/// besides reclaimable page cache. The cgroup's page cache is counted as available, as
/// `MemAvailable` counts the machine's.
pub fn memory_available() -> Option<u64> {
    let machine = meminfo_kib("MemAvailable:").map(|k| k * 1024);
    match (machine, cgroup_available()) {
        (Some(m), Some(c)) => Some(m.min(c)),
        (m, c) => m.or(c),
    }
}

/// What this process's memory cgroup leaves (see [`memory_available`]): `None` without one,
/// or without a limit.
fn cgroup_available() -> Option<u64> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read =
        |path: String| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    let stat = |path: String, key: &str| -> Option<u64> {
        let text = std::fs::read_to_string(path).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
    };
    for line in groups.lines() {
        let mut fields = line.splitn(3, ':');
        let (id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        if id == "0" && controllers.is_empty() {
            // cgroup v2: memory.max ("max": no limit), memory.current, and its file cache.
            let dir = format!("/sys/fs/cgroup{path}");
            let limit = read(format!("{dir}/memory.max"))?;
            let used = read(format!("{dir}/memory.current"))?;
            let cache = stat(format!("{dir}/memory.stat"), "file").unwrap_or(0);
            return Some(limit.saturating_sub(used.saturating_sub(cache)));
        }
        if controllers.split(',').any(|c| c == "memory") {
            // cgroup v1: an unlimited group reports a limit near 2^63.
            let dir = format!("/sys/fs/cgroup/memory{path}");
            let limit = read(format!("{dir}/memory.limit_in_bytes"))?;
            if limit >= 1 << 62 {
                return None;
            }
            let used = read(format!("{dir}/memory.usage_in_bytes"))?;
            let cache = stat(format!("{dir}/memory.stat"), "total_cache")
                .or_else(|| stat(format!("{dir}/memory.stat"), "cache"))
                .unwrap_or(0);
            return Some(limit.saturating_sub(used.saturating_sub(cache)));
        }
    }
    None
}

fn meminfo_kib(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// A `KEY: N kB` field of `/proc/self/status`, in bytes.
fn status_bytes(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = text
        .lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Peak resident set size of this process since the last [`reset_peak_rss`], in bytes.
pub fn peak_rss() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// Resident anonymous memory of this process (`RssAnon`: the heap and anonymous maps, not the
/// page cache of memory-mapped files), in bytes.
pub fn anon_rss() -> Option<u64> {
    status_bytes("RssAnon:")
}

/// Samples [`anon_rss`] every 20 ms on a background thread and keeps the largest value: the
/// kernel keeps a peak only for the total RSS, which also counts mapped table files.
pub struct AnonPeak {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: Option<std::thread::JoinHandle<u64>>,
}

impl AnonPeak {
    /// Start sampling.
    pub fn start() -> AnonPeak {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut peak = anon_rss().unwrap_or(0);
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(20));
                peak = peak.max(anon_rss().unwrap_or(0));
            }
            peak
        });
        AnonPeak {
            stop,
            handle: Some(handle),
        }
    }

    /// Stop sampling and return the peak (`None` where `/proc` is unavailable).
    pub fn finish(mut self) -> Option<u64> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let peak = self.handle.take()?.join().ok()?;
        (peak > 0).then_some(peak)
    }
}

/// Bytes this process has caused to be read from storage (`read_bytes` of `/proc/self/io`:
/// page-cache misses, not reads served from the cache), if known.
pub fn read_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("read_bytes:"))?
        .trim()
        .parse()
        .ok()
}

/// Bytes this process has read and written through system calls so far (`rchar` and
/// `wchar` of `/proc/self/io`: its files' reads and writes whether the page cache served them
/// or not; not what it reads through a memory map), if known.
pub fn io_chars() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    let field = |name: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name))?
            .trim()
            .parse()
            .ok()
    };
    Some((field("rchar:")?, field("wchar:")?))
}

/// Major page faults of this process so far (those that waited for storage), if known.
pub fn major_faults() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces:
    // state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt(12).
    text.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(9)?
        .parse()
        .ok()
}

/// Reset the peak RSS counter (Linux ≥ 4.0), so a level's peak can be measured on its own.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// An exclusive lock on a database directory, held while a build, a depth pass (`depth`), a
/// compression (its output) or a proof (`verify --prove`, where its work files go) writes into
/// it: `flock` on
/// the directory itself (no file is made), released when this is dropped or the process ends,
/// however it ends (SIGKILL included), so that no lock is ever left stale.
pub struct DirLock {
    _dir: std::fs::File,
}

/// Why a directory could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock: it writes into the directory.
    #[error("another awari-solver process (a build, a depth pass, a compression or a proof) is writing into {}: wait for it to end, or use another directory", .0.display())]
    Busy(std::path::PathBuf),
    /// The directory could not be opened or locked.
    #[error("cannot lock {}: {source}", path.display())]
    Io {
        /// The directory.
        path: std::path::PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// Lock the directory `dir` (see [`DirLock`]), at once or not at all.
pub fn lock_dir(dir: &Path) -> Result<DirLock, LockError> {
    let io = |source| LockError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(dir).map_err(io)?;
    #[cfg(unix)]
    {
        use rustix::fs::{flock, FlockOperation};
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
                return Err(LockError::Busy(dir.to_path_buf()))
            }
            Err(e) => return Err(io(e.into())),
        }
    }
    Ok(DirLock { _dir: file })
}

/// Bytes available to this (unprivileged) user on the file system holding `dir`, if known
/// (`statvfs`: free blocks for unprivileged users × fragment size).
pub fn disk_free(dir: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        let st = rustix::fs::statvfs(dir).ok()?;
        Some(st.f_bavail.saturating_mul(st.f_frsize))
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

/// The largest size [`parse_size`] takes: 1 PiB, more memory or disk than any one machine
/// this runs on has.
pub const SIZE_MAX: u64 = 1 << 50;

/// Parse a size such as `512M`, `2G`, `1.5G`, `300000000` (bytes; K/M/G/T are powers of 1024),
/// from 1 byte to [`SIZE_MAX`].
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (num, mult) = match t.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                'B' => 1,
                _ => return Err(format!("'{text}': unknown size unit (use K, M, G or T)")),
            };
            (&t[..t.len() - 1], m)
        }
        _ => (t, 1),
    };
    let x: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a size (e.g. 512M, 2G, 1.5G)"))?;
    let bytes = x * mult as f64;
    if !bytes.is_finite() {
        return Err(format!("'{text}' is not a size (e.g. 512M, 2G, 1.5G)"));
    }
    if bytes < 1.0 {
        return Err(format!(
            "'{text}' is not a size (it must be at least 1 byte)"
        ));
    }
    if bytes > SIZE_MAX as f64 {
        return Err(format!(
            "'{text}' is more than 1 PiB: not a size a machine has"
        ));
    }
    Ok(bytes as u64)
}

/// A byte count for people: `1.5 GiB`.
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 40) as f64 {
        format!("{:.1} TiB", b / (1u64 << 40) as f64)
    } else if b >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else if bytes >= 1024 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_free_and_process_io_are_read() {
        let free = disk_free(&std::env::temp_dir()).expect("statvfs works here");
        assert!(free > 0);
        assert!(disk_free(Path::new("/no/such/directory")).is_none());
        if Path::new("/proc/self/io").exists() {
            assert!(read_bytes().is_some());
            assert!(major_faults().is_some());
        }
        assert_eq!(human(512), "512 B");
        assert_eq!(human(3 << 30), "3.00 GiB");
    }

    #[test]
    fn absurd_sizes_are_refused() {
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("1024T"), Ok(SIZE_MAX));
        assert_eq!(parse_size("1"), Ok(1));
        for bad in [
            "0", "0G", "0.1", "-1G", "1025T", "1e300", "inf", "infG", "NaN", "", "G", "12Q", "x",
        ] {
            let e = parse_size(bad).expect_err(bad);
            assert!(e.contains(&format!("'{bad}'")), "{bad}: {e}");
        }
    }
}
