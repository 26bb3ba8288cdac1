//! Building a database directory: every missing level in order, each written atomically by
//! the one driver of a level's build (`level`), whatever algorithm builds it.

pub mod level;

use std::path::{Path, PathBuf};
use std::time::Instant;

use awari_db::table::tmp_path;
use awari_db::{
    depth_path, level_exists, level_path, level_size, Content, DbError, Expect, Levels, Rules,
    Table, TableError,
};
use rayon::prelude::*;

use crate::cost::{Choice, Needs};
use crate::exits::ExitsStats;
pub use crate::level::Mode;
use crate::level::{LevelCounts, Progress};
use crate::lowmem;
use crate::sys;
use crate::twobit::{self, Stage};
pub use level::{build_level, build_level_with_depths, BuiltLevel, Plan};

/// Why a build stopped.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A database directory problem (wrong rule set, unreadable table).
    #[error(transparent)]
    Db(#[from] DbError),
    /// The depth pass of a level failed (`--depth`).
    #[error(transparent)]
    DepthPass(#[from] crate::depth::DepthError),
    /// The level could not be started.
    #[error(transparent)]
    Builder(#[from] crate::level::BuilderError),
    /// A table could not be written or reopened.
    #[error(transparent)]
    Table(#[from] TableError),
    /// The level would not fit in the memory the build may use.
    #[error("level {level} needs {} ({needed} bytes) of memory for its {positions} positions but only {} ({available} bytes) may be used (--memory); free memory or build fewer seeds", sys::human(*needed), sys::human(*available))]
    Memory {
        /// The level.
        level: u32,
        /// Its positions.
        positions: u64,
        /// Bytes needed.
        needed: u64,
        /// Bytes allowed.
        available: u64,
    },
    /// The disk filled up while a level was being built (its progress so far is kept when the
    /// algorithm checkpoints). Nothing is left under a final name: a table is renamed into
    /// place only when whole.
    #[error("level {level}: the disk is full writing {} (the level needs about {} in all); free space there and run the build again{}", path.display(), sys::human(*needed), if *resumable { ", which resumes the level at its last checkpoint" } else { "" })]
    DiskFull {
        /// The level.
        level: u32,
        /// The file being written.
        path: PathBuf,
        /// Bytes the level needs on disk, its work files included (the estimate the build
        /// checks before it starts a level).
        needed: u64,
        /// Whether the level's progress is kept (a resumable algorithm, or a save of the
        /// in-memory state).
        resumable: bool,
    },
    /// Another process writes into the directory.
    #[error(transparent)]
    Locked(#[from] sys::LockError),
    /// The disk cannot hold the level's table.
    #[error("level {level} needs {} of disk in {} but only {} is free", sys::human(*needed), dir.display(), sys::human(*free))]
    Disk {
        /// The level.
        level: u32,
        /// The directory.
        dir: PathBuf,
        /// Bytes needed.
        needed: u64,
        /// Bytes free.
        free: u64,
    },
    /// An algorithm was asked for (`--mode`) that the build does not offer: two-bit in a
    /// distributed build.
    #[error(
        "{0}: a distributed build offers memory and low-memory (--mode auto picks between them)"
    )]
    NotOffered(#[from] crate::cost::NotOffered),
    /// Depth tables were asked of a distributed build.
    #[error("depth tables are not built by a distributed build; build them on one machine")]
    DistributedDepth,
    /// Another rank of a distributed build failed (its own message says why).
    #[error("{ranks} other rank(s) of the distributed build failed; see their messages")]
    OtherRank {
        /// How many ranks failed.
        ranks: u64,
    },
    /// The directory could not be created.
    #[error("cannot create {}: {source}", dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A level could not be compressed (`--compress`).
    #[error(transparent)]
    Compress(#[from] crate::compress::CompressError),
}

/// What a build is asked to do.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// The database directory.
    pub dir: PathBuf,
    /// Build levels 0..=max_stones.
    pub max_stones: u32,
    /// The rule set.
    pub rules: Rules,
    /// Bytes of memory the level in progress may use (default: what the machine has free).
    pub memory: Option<u64>,
    /// Also write depth-to-conversion tables (see [`crate::depth`]).
    pub depth: bool,
    /// How the depth tables are stored.
    pub depth_form: crate::depth::DepthForm,
    /// Which level algorithm to use.
    pub mode: Mode,
    /// Compress each level once it is built (and any plain level kept), replacing its plain
    /// table (see [`crate::compress`]); the levels above read it compressed.
    pub compress: bool,
}

/// One line of the build summary.
#[derive(Clone, Debug)]
pub struct LevelReport {
    /// The level.
    pub seeds: u32,
    /// Its positions.
    pub positions: u64,
    /// Seconds spent building it (`None`: it was already present and kept).
    pub seconds: Option<f64>,
    /// Wins, draws and losses for the side to move (`None` when kept: not read).
    pub counts: Option<LevelCounts>,
    /// Peak resident memory while building it, if measured.
    pub peak_rss: Option<u64>,
    /// The largest depth to conversion in the level, when depth tables are kept.
    pub max_depth: Option<u16>,
    /// The algorithm that built it (`None` when kept).
    pub mode: Option<Mode>,
    /// Peak resident anonymous memory (heap and state, not mapped files) while building it.
    pub peak_anon: Option<u64>,
    /// What its exits phase cost: time, and bytes read from the lower levels (`None` when
    /// kept).
    pub exits: Option<ExitsStats>,
    /// Bytes it read and wrote, as requested (not only page-cache misses): the lower levels
    /// once per exits pass, work and checkpoint files, and the table (`None` when kept).
    pub io: Option<LevelIo>,
    /// Where this run resumed the level, and how many times it was resumed in all (two-bit
    /// mode only; `None`: built from the start in one run).
    pub resumed: Option<(Stage, u32)>,
    /// Its compression, with `build --compress` (`None`: left plain, or kept compressed).
    pub compressed: Option<crate::compress::CompressReport>,
}

/// Bytes a level's build read and wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelIo {
    /// Bytes read: the lower levels (once per exits pass) and the work files.
    pub read: u64,
    /// Bytes written: the work files and the table.
    pub written: u64,
}

impl LevelReport {
    /// The line of a level already present and kept as it is (its data is not read).
    pub fn kept(n: u32) -> LevelReport {
        LevelReport {
            seeds: n,
            positions: level_size(n),
            seconds: None,
            counts: None,
            peak_rss: None,
            max_depth: None,
            mode: None,
            peak_anon: None,
            exits: None,
            io: None,
            resumed: None,
            compressed: None,
        }
    }
}

/// Count wins, draws and losses in a values table (in parallel; a compressed table is
/// decoded, each block checked).
pub fn count_values(table: &Table) -> Result<LevelCounts, TableError> {
    let size = table.header().entries;
    (0..size.div_ceil(1 << 20))
        .into_par_iter()
        .map(|c| {
            let mut buf = Vec::new();
            let data = table.read(c << 20..((c + 1) << 20).min(size), &mut buf)?;
            let mut k = LevelCounts::default();
            for &b in data {
                k.add(b as i8);
            }
            Ok(k)
        })
        .try_reduce(LevelCounts::default, |a, b| Ok(a.merge(b)))
}

/// A build error that is a full disk (ENOSPC on a file being written), as
/// [`BuildError::DiskFull`] with what level `n` in `mode` needs; others as they are.
fn disk_full(e: BuildError, n: u32, needed: u64, mode: Mode) -> BuildError {
    let table = match &e {
        BuildError::Table(t)
        | BuildError::Builder(crate::level::BuilderError::Table(t))
        | BuildError::DepthPass(crate::depth::DepthError::Table(t)) => t,
        _ => return e,
    };
    let path = match table {
        TableError::Io { path, source } if source.raw_os_error() == Some(28) => path.clone(),
        _ => return e,
    };
    // In memory: where a save of the state is on disk (the table goes beside it).
    let saved = path
        .parent()
        .is_some_and(|d| crate::level::saved_state_path(d, n).is_file());
    BuildError::DiskFull {
        level: n,
        path,
        needed,
        resumable: matches!(mode, Mode::TwoBit | Mode::OneBit | Mode::LowMemory)
            || (mode == Mode::InMemory && saved),
    }
}

/// Bytes of disk level `n` needs when built in `mode`: its table, its work files, and with
/// `depth` its depth table and the depth pass's wave files (about 1.5 bytes per position at
/// most, and a depth table of 1 byte per position, 2 past depth 255).
fn level_disk(n: u32, mode: Mode, depth: bool) -> u64 {
    let depth_bytes = if depth { 3 * level_size(n) } else { 0 };
    let work = match mode {
        Mode::LowMemory => lowmem::disk_needed(n),
        Mode::TwoBit | Mode::OneBit => twobit::disk_needed(n),
        _ => 0,
    };
    level_size(n) + depth_bytes + work + 2 * awari_db::table::HEADER_LEN as u64
}

/// Check the checksum of every level below `n` in `levels` that is not `checked` yet (each
/// read whole, on all cores), and mark it: a level is built only on lower levels whose data
/// is what was written. `AWARI_TIMINGS` prints the time it took.
fn check_lower_levels(levels: &Levels, n: u32, checked: &mut [bool]) -> Result<(), TableError> {
    let start = Instant::now();
    let mut bytes = 0;
    for m in 0..n {
        if let (Some(table), false) = (levels.get(m), checked[m as usize]) {
            table.verify()?;
            bytes += table.file_len();
            checked[m as usize] = true;
        }
    }
    if bytes > 0 && std::env::var_os("AWARI_TIMINGS").is_some() {
        eprintln!(
            "level {n}: lower levels checked, {} in {:.2} s",
            sys::human(bytes),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Build every missing level `0..=max_stones` of `opts.dir` (skipping 47). Levels already
/// present are checked (header and size, by opening them) and kept, so an interrupted or
/// extended build resumes where it stopped; before a level is built on them, each kept
/// level's checksum is checked once (all of its data read: a damaged lower level is an error
/// naming its file, never a wrong table above it). `on_level` is called after each level.
pub fn build(
    opts: &BuildOptions,
    progress: &dyn Progress,
    mut on_level: impl FnMut(&LevelReport),
) -> Result<(Levels, Vec<LevelReport>), BuildError> {
    std::fs::create_dir_all(&opts.dir).map_err(|source| BuildError::CreateDir {
        dir: opts.dir.clone(),
        source,
    })?;
    // One writer at a time in a directory (see `sys::DirLock`): a second would overwrite the
    // first's work files.
    let _lock = sys::lock_dir(&opts.dir)?;
    let mut levels = Levels::open(&opts.dir, Some(opts.rules))?;
    if levels.is_raw() {
        return Err(DbError::NotADirectory {
            dir: opts.dir.clone(),
            reason: "it holds published scores.N files; build into another directory".into(),
        }
        .into());
    }
    let mut reports = Vec::new();
    // The levels whose data is known good in this run: checked, or built by it.
    let mut checked = vec![false; 49];
    for n in (0..=opts.max_stones.min(48)).filter(|&n| level_exists(n)) {
        let path = level_path(&opts.dir, n);
        let _ = std::fs::remove_file(tmp_path(&path));
        let _ = std::fs::remove_file(tmp_path(&depth_path(&opts.dir, n)));
        if levels.get(n).is_some() {
            // A kill between a level's rename and the removal of its work files.
            twobit::remove_work_files(&opts.dir, n);
            lowmem::remove_work_files(&opts.dir, n);
            crate::level::remove_saved_state(&opts.dir, n);
            // Kept as it is: its data is not read (at 48 seeds the lower levels are hundreds
            // of GB, and a summary is no reason to read them), unless it is to be compressed
            // or is missing the depth table asked for (computed from its values).
            let mut r = LevelReport::kept(n);
            if opts.depth && levels.depth_table(n).is_none() {
                let start = Instant::now();
                progress.level(n, level_size(n));
                let d = add_depth(opts, &mut levels, n, progress)?;
                r.max_depth = Some(d.max_depth);
                r.seconds = Some(start.elapsed().as_secs_f64());
            }
            if opts.compress && !levels.require(n)?.is_compressed() {
                let (report, table) = crate::compress::compress_in_place(&levels, n, progress)?;
                levels.insert(table);
                r.compressed = Some(report);
            }
            on_level(&r);
            reports.push(r);
            continue;
        }
        check_lower_levels(&levels, n, &mut checked)?;
        let mode = choose_mode(&opts.dir, n, opts)?;
        sys::reset_peak_rss();
        let sampler = sys::AnonPeak::start();
        let start = Instant::now();
        progress.level(n, level_size(n));
        // Left by an earlier attempt at this level in another mode.
        if !matches!(mode, Mode::TwoBit | Mode::OneBit) {
            twobit::remove_work_files(&opts.dir, n);
        }
        if mode != Mode::LowMemory {
            lowmem::remove_work_files(&opts.dir, n);
        }
        if mode != Mode::InMemory {
            crate::level::remove_saved_state(&opts.dir, n);
        }
        let budget = opts.memory.or_else(sys::memory_available);
        let plan = Plan::new(mode, n, rayon::current_num_threads(), budget);
        let built = build_level_with_depths(
            &opts.dir, n, opts.rules, &levels, plan, opts.depth, progress,
        )
        .map_err(|e| disk_full(e, n, level_disk(n, mode, opts.depth), mode))?;
        let seconds = built.seconds;
        let expect = |content| Expect {
            rules: Some(opts.rules),
            seeds: Some(n),
            content: Some(content),
        };
        levels.insert(Table::open(&path, expect(Content::Values))?);
        checked[n as usize] = true;
        let max_depth = match built.max_depth {
            // Written by the build itself (two-bit, settled in waves; a level begun with
            // `--depth` writes one even when resumed without): stored as asked.
            Some(d) => {
                crate::depth::store_depth(&mut levels, n, opts.depth_form, progress)?;
                Some(d)
            }
            None if opts.depth => Some(add_depth(opts, &mut levels, n, progress)?.max_depth),
            None => None,
        };
        let seconds = if opts.depth {
            seconds.max(start.elapsed().as_secs_f64())
        } else {
            seconds
        };
        let r = LevelReport {
            seeds: n,
            positions: level_size(n),
            seconds: Some(seconds),
            counts: Some(built.counts),
            peak_rss: sys::peak_rss(),
            max_depth,
            mode: Some(mode),
            peak_anon: sampler.finish(),
            exits: Some(built.exits),
            io: Some(built.io),
            resumed: built.resumed,
            compressed: None,
        };
        let mut r = r;
        if opts.compress {
            let (report, table) = crate::compress::compress_in_place(&levels, n, progress)?;
            levels.insert(table);
            r.compressed = Some(report);
        }
        on_level(&r);
        reports.push(r);
    }
    Ok((levels, reports))
}

/// Compute level `n`'s depth table from its values (the compact pass, within the build's
/// memory; see [`crate::depth`]) and open it into `levels`.
fn add_depth(
    opts: &BuildOptions,
    levels: &mut Levels,
    n: u32,
    progress: &dyn Progress,
) -> Result<crate::depth::DepthReport, BuildError> {
    let budget = opts.memory.or_else(sys::memory_available);
    let report = crate::depth::compute_depth(levels, n, &opts.dir, budget, true, 10, progress)?;
    crate::depth::store_depth(levels, n, opts.depth_form, progress)?;
    Ok(report)
}

/// Pick the algorithm for level `n` ([`crate::cost::choose`]) and check that memory and disk
/// suffice for it.
fn choose_mode(dir: &Path, n: u32, opts: &BuildOptions) -> Result<Mode, BuildError> {
    let budget = opts.memory.or_else(sys::memory_available);
    let threads = rayon::current_num_threads();
    let needs = Needs::level(n, threads);
    let fresh = crate::cost::choose(opts.mode, needs, budget, || {
        crate::cost::auto_prefers_two_bit(n, threads, budget)
    })?;
    // `auto`: a level begun out of core resumes in its algorithm where that fits, even where
    // another would be chosen now (the level fits in memory under a larger --memory): the
    // work done is kept. (A named --mode is obeyed: the level begins again in it.)
    let begun = match opts.mode {
        Mode::Auto => begun_in(dir, n, opts.rules),
        _ => &[],
    };
    let resumed = begun.iter().find_map(|&m| {
        let c = crate::cost::choose(m, needs, budget, || false).ok()?;
        c.fits.then_some(c)
    });
    let choice = match resumed {
        Some(c) if c.mode != fresh.mode => {
            eprintln!(
                "level {n}: resuming in {} mode, as it began (`--mode {}` begins it again)",
                c.mode.name(),
                fresh.mode.name()
            );
            c
        }
        Some(c) => c,
        None => fresh,
    };
    let mode = fitting(n, choice, budget)?;
    let disk = level_disk(n, mode, opts.depth);
    if let Some(free) = sys::disk_free(dir) {
        // A resumed level's work files hold part of what it needs already.
        let held = match mode {
            Mode::LowMemory => allocated(&lowmem::work_dir(dir, n)),
            Mode::TwoBit | Mode::OneBit => allocated(&twobit::work_dir(dir, n)),
            _ => 0,
        };
        let free = free + held;
        if disk > free {
            return Err(BuildError::Disk {
                level: n,
                dir: dir.to_path_buf(),
                needed: disk,
                free,
            });
        }
    }
    Ok(mode)
}

/// The algorithms that can resume level `n` from a checkpoint in `dir`, the first preferred:
/// low-memory's, or two-bit's (which either width resumes, except one with depths).
fn begun_in(dir: &Path, n: u32, rules: Rules) -> &'static [Mode] {
    if matches!(lowmem::checkpoint_stage(dir, n, rules), Ok(Some(_))) {
        &[Mode::LowMemory]
    } else if matches!(twobit::checkpoint_stage(dir, n, rules), Ok(Some(_))) {
        &[Mode::TwoBit, Mode::OneBit]
    } else {
        &[]
    }
}

/// Bytes of disk the files directly in the directory `dir` take (0 if it is none).
fn allocated(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.blocks() * 512)
        .sum()
}

/// The mode of `choice` for level `n`, or the error that says it does not fit `budget` (`None`:
/// unknown, no limit): `build`'s and the distributed build's check.
pub(crate) fn fitting(n: u32, choice: Choice, budget: Option<u64>) -> Result<Mode, BuildError> {
    if !choice.fits {
        return Err(BuildError::Memory {
            level: n,
            positions: level_size(n),
            needed: choice.needed,
            available: budget.unwrap_or(0),
        });
    }
    Ok(choice.mode)
}
