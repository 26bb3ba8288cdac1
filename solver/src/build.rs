//! Building a database directory: every missing level in order, each written atomically.

use std::path::{Path, PathBuf};
use std::time::Instant;

use awari_db::table::tmp_path;
use awari_db::{
    level_exists, level_path, level_size, Content, DbError, Expect, Header, Levels, Rules, Table,
    TableError, TableWriter,
};
use rayon::prelude::*;

use crate::level::{memory_needed, LevelBuilder, LevelCounts, Progress};
use crate::sys;

/// Why a build stopped.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A database directory problem (wrong rule set, unreadable table).
    #[error(transparent)]
    Db(#[from] DbError),
    /// The level could not be started.
    #[error(transparent)]
    Builder(#[from] crate::level::BuilderError),
    /// A table could not be written or reopened.
    #[error(transparent)]
    Table(#[from] TableError),
    /// The level would not fit in the memory the build may use.
    #[error("level {level} needs {} of memory ({positions} positions × 2 bytes + buffers) but only {} may be used (--memory); free memory or build fewer seeds", sys::human(*needed), sys::human(*available))]
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
    /// The directory could not be created.
    #[error("cannot create {}: {source}", dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// The error.
        source: std::io::Error,
    },
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
    /// Wins, draws and losses for the side to move.
    pub counts: LevelCounts,
    /// Peak resident memory while building it, if measured.
    pub peak_rss: Option<u64>,
}

/// Count wins, draws and losses in a values table (in parallel).
pub fn count_values(table: &Table) -> LevelCounts {
    table
        .data()
        .par_chunks(1 << 20)
        .map(|c| {
            let mut k = LevelCounts::default();
            for &b in c {
                match (b as i8).signum() {
                    1 => k.wins += 1,
                    0 => k.draws += 1,
                    _ => k.losses += 1,
                }
            }
            k
        })
        .reduce(LevelCounts::default, |a, b| LevelCounts {
            wins: a.wins + b.wins,
            draws: a.draws + b.draws,
            losses: a.losses + b.losses,
        })
}

/// Build every missing level `0..=max_stones` of `opts.dir` (skipping 47). Levels already
/// present are checked (header and size, by opening them) and kept, so an interrupted or
/// extended build resumes where it stopped. `on_level` is called after each level.
pub fn build(
    opts: &BuildOptions,
    progress: &dyn Progress,
    mut on_level: impl FnMut(&LevelReport),
) -> Result<(Levels, Vec<LevelReport>), BuildError> {
    std::fs::create_dir_all(&opts.dir).map_err(|source| BuildError::CreateDir {
        dir: opts.dir.clone(),
        source,
    })?;
    let mut levels = Levels::open(&opts.dir, Some(opts.rules))?;
    if levels.is_raw() {
        return Err(DbError::NotADirectory {
            dir: opts.dir.clone(),
            reason: "it holds published scores.N files; build into another directory".into(),
        }
        .into());
    }
    let mut reports = Vec::new();
    for n in (0..=opts.max_stones.min(48)).filter(|&n| level_exists(n)) {
        let path = level_path(&opts.dir, n);
        let _ = std::fs::remove_file(tmp_path(&path));
        if let Some(t) = levels.get(n) {
            let r = LevelReport {
                seeds: n,
                positions: level_size(n),
                seconds: None,
                counts: count_values(t),
                peak_rss: None,
            };
            on_level(&r);
            reports.push(r);
            continue;
        }
        check_resources(&opts.dir, n, opts.memory)?;
        sys::reset_peak_rss();
        let start = Instant::now();
        progress.level(n, level_size(n));
        let counts = build_level(&path, n, opts.rules, &levels, progress)?;
        let seconds = start.elapsed().as_secs_f64();
        let table = Table::open(
            &path,
            Expect {
                rules: Some(opts.rules),
                seeds: Some(n),
                content: Some(Content::Values),
            },
        )?;
        levels.insert(table);
        let r = LevelReport {
            seeds: n,
            positions: level_size(n),
            seconds: Some(seconds),
            counts,
            peak_rss: sys::peak_rss(),
        };
        on_level(&r);
        reports.push(r);
    }
    Ok((levels, reports))
}

/// Solve level `n` and write it atomically to `path`.
pub fn build_level(
    path: &Path,
    n: u32,
    rules: Rules,
    lower: &Levels,
    progress: &dyn Progress,
) -> Result<LevelCounts, BuildError> {
    let builder = LevelBuilder::new(n, rules, lower)?;
    builder.solve(progress);
    progress.phase("write", level_size(n));
    let mut w = TableWriter::create(path, Header::values(rules, n))?;
    let counts = builder.write_values(|d| {
        progress.advance(d.len() as u64);
        w.write(d)
    })?;
    drop(builder);
    w.finish()?;
    Ok(counts)
}

fn check_resources(dir: &Path, n: u32, memory: Option<u64>) -> Result<(), BuildError> {
    let needed = memory_needed(n);
    if let Some(available) = memory.or_else(sys::memory_available) {
        if needed > available {
            return Err(BuildError::Memory {
                level: n,
                positions: level_size(n),
                needed,
                available,
            });
        }
    }
    let disk = level_size(n) + awari_db::table::HEADER_LEN as u64;
    if let Some(free) = sys::disk_free(dir) {
        if disk > free {
            return Err(BuildError::Disk {
                level: n,
                dir: dir.to_path_buf(),
                needed: disk,
                free,
            });
        }
    }
    Ok(())
}
