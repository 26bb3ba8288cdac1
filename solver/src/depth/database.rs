//! `awari-solver depth` over a database: a level's pass run to its table
//! ([`compute_depth`]), every level given one ([`add_depth_tables`]), and how each table is
//! stored, plain or compressed ([`DepthForm`]).

use std::path::{Path, PathBuf};
use std::time::Instant;

use awari_db::{depth_path, level_size, DbError, Levels, Table, TableError};

use super::{
    class_bucket, exit_bucket, one_bit_found, ClassPass, DepthError, DepthPass, DepthReport,
};
use crate::progress::Progress;
use crate::sys;

/// Which depth pass a level gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepthAlgorithm {
    /// [`DepthPass`]: all classes at once, the level's values read at random (fast while they
    /// sit in the page cache).
    Waves,
    /// [`ClassPass`]: one value class at a time, the level's values read in order.
    Classes,
    /// [`ClassPass`] in one bit a position ([`ClassPass::one_bit`]): for a memory below the
    /// two bits a position of the others ([`super::memory_needed`]).
    ClassesOneBit,
}

/// The depth pass for level `n` within `memory` bytes: `AWARI_DEPTH=classes`, `one-bit` or
/// `waves` if set; else [`DepthAlgorithm::ClassesOneBit`] where `memory` is below the two
/// bits a position of the others, [`DepthAlgorithm::Classes`] where the level's plain values (a byte a position)
/// and the pass's memory exceed the memory available (`MemAvailable`, the page cache that
/// can be reclaimed included), so that the old pass's random reads would miss the cache.
pub fn depth_algorithm(n: u32, memory: Option<u64>) -> DepthAlgorithm {
    match std::env::var("AWARI_DEPTH").as_deref() {
        Ok("classes") => return DepthAlgorithm::Classes,
        Ok("one-bit") => return DepthAlgorithm::ClassesOneBit,
        Ok("waves") => return DepthAlgorithm::Waves,
        _ => {}
    }
    if memory.is_some_and(|m| m < super::memory_needed(n)) {
        return DepthAlgorithm::ClassesOneBit;
    }
    match sys::memory_available() {
        Some(available) if !super::values_fit(n, memory, available) => DepthAlgorithm::Classes,
        _ => DepthAlgorithm::Waves,
    }
}

/// The one entry into the depth passes: the pass [`depth_algorithm`] picks for a level within
/// a memory budget, opened with the bucket that budget gives it ([`exit_bucket`] or
/// [`class_bucket`]). `depth`, `build --depth` and `verify --prove` all go through it.
pub enum Pass<'a> {
    /// By waves: [`DepthPass`].
    Waves(DepthPass<'a>),
    /// By value classes: [`ClassPass`].
    Classes(ClassPass<'a>),
}

impl<'a> Pass<'a> {
    /// Open level `n`'s pass of `levels`, its work files in `out`, within `memory` bytes
    /// (`None`: no limit); it resumes from a valid checkpoint in `out`.
    pub fn open(
        levels: &'a Levels,
        n: u32,
        out: &Path,
        memory: Option<u64>,
    ) -> Result<Pass<'a>, DepthError> {
        let threads = rayon::current_num_threads();
        Ok(match depth_algorithm(n, memory) {
            DepthAlgorithm::Waves => {
                Pass::Waves(DepthPass::open(levels, n, out, exit_bucket(n, memory))?)
            }
            DepthAlgorithm::Classes => Pass::Classes(ClassPass::open(
                levels,
                n,
                out,
                class_bucket(n, memory, threads),
            )?),
            DepthAlgorithm::ClassesOneBit => Pass::Classes(
                ClassPass::open(levels, n, out, class_bucket(n, memory, threads))?
                    .one_bit(one_bit_found(n, memory, threads)),
            ),
        })
    }

    /// Which pass this is.
    pub fn algorithm(&self) -> DepthAlgorithm {
        match self {
            Pass::Waves(_) => DepthAlgorithm::Waves,
            Pass::Classes(p) if p.is_one_bit() => DepthAlgorithm::ClassesOneBit,
            Pass::Classes(_) => DepthAlgorithm::Classes,
        }
    }

    /// Recompute every value from its children as well, keeping up to `keep` mismatches
    /// ([`DepthPass::check_values`], [`ClassPass::check_values`]).
    pub fn check_values(self, keep: usize) -> Self {
        match self {
            Pass::Waves(p) => Pass::Waves(p.check_values(keep)),
            Pass::Classes(p) => Pass::Classes(p.check_values(keep)),
        }
    }

    /// Run the pass to its end: the depth table written if `write`, up to `keep` examples of
    /// unproven positions kept ([`DepthPass::run`], [`ClassPass::run`]).
    pub fn run(
        self,
        write: bool,
        keep: usize,
        progress: &dyn Progress,
    ) -> Result<DepthReport, DepthError> {
        let n = match &self {
            Pass::Waves(p) => p.level.seeds(),
            Pass::Classes(p) => p.level.seeds(),
        };
        match self {
            Pass::Waves(p) => p.run(write, keep, progress),
            Pass::Classes(p) => p.run(write, keep, progress),
        }
        .map_err(|e| disk_full(e, n))
    }
}

/// `e`, or where it is a write that found the disk full (ENOSPC), the error that says so with
/// the space level `n`'s pass needs.
fn disk_full(e: DepthError, n: u32) -> DepthError {
    match e {
        DepthError::Table(TableError::Io { path, source }) if source.raw_os_error() == Some(28) => {
            DepthError::DiskFull {
                level: n,
                path,
                // The wave files, and a depth table of up to 2 bytes a position.
                needed: super::disk_needed(n) + 2 * level_size(n),
            }
        }
        e => e,
    }
}

/// Compute the depth table of level `n` of `levels` into `out` within `memory` bytes (`None`:
/// no limit), resuming a killed pass ([`Pass`]).
pub fn compute_depth(
    levels: &Levels,
    n: u32,
    out: &Path,
    memory: Option<u64>,
    write: bool,
    keep: usize,
    progress: &dyn Progress,
) -> Result<DepthReport, DepthError> {
    Pass::open(levels, n, out, memory)?.run(write, keep, progress)
}

/// Levels up to this many seeds keep plain depth tables under [`DepthForm::Auto`] (small,
/// and read most often); above it they are compressed.
pub const PLAIN_DEPTH_UP_TO: u32 = 20;

/// How a level's depth table is stored once computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DepthForm {
    /// Plain up to [`PLAIN_DEPTH_UP_TO`] seeds, compressed above.
    #[default]
    Auto,
    /// Always plain (`level-NN.depth`, one byte a position, two past depth 255).
    Plain,
    /// Always compressed (`level-NN.cdepth`; see [`awari_db::compressed`]), except a level
    /// with a depth above 255, which stays plain.
    Compressed,
}

impl DepthForm {
    /// Whether level `n`'s depth table is to be compressed.
    pub fn compresses(self, n: u32) -> bool {
        match self {
            DepthForm::Auto => n > PLAIN_DEPTH_UP_TO,
            DepthForm::Plain => false,
            DepthForm::Compressed => true,
        }
    }
}

/// Open level `n`'s depth table just written plain into `levels`' directory, into `levels`,
/// and where `form` compresses it, replace it by its compressed form (see
/// [`crate::compress::compress_depth_in_place`]). Returns the file kept and its bytes.
pub fn store_depth(
    levels: &mut Levels,
    n: u32,
    form: DepthForm,
    progress: &dyn Progress,
) -> Result<(PathBuf, u64), DepthError> {
    let plain = Table::open(
        depth_path(levels.dir(), n),
        awari_db::Expect {
            rules: Some(levels.rules()),
            seeds: Some(n),
            content: Some(awari_db::Content::Depth),
        },
    )?;
    levels.insert_depth(plain);
    store_as(levels, n, form, progress)
}

/// Store level `n`'s depth table, open in `levels`, as `form` asks: a plain one is replaced by
/// its compressed form where `form` compresses (see
/// [`crate::compress::compress_depth_in_place`]). Returns the file kept and its bytes.
fn store_as(
    levels: &mut Levels,
    n: u32,
    form: DepthForm,
    progress: &dyn Progress,
) -> Result<(PathBuf, u64), DepthError> {
    if form.compresses(n) {
        if let Some((_, table)) = crate::compress::compress_depth_in_place(levels, n, progress)? {
            levels.insert_depth(table);
        }
    }
    let t = levels.depth_table(n).expect("a depth table, open");
    Ok((t.path().to_path_buf(), t.file_len()))
}

/// One level of [`add_depth_tables`].
#[derive(Clone, Debug)]
pub struct LevelDepth {
    /// The level.
    pub level: u32,
    /// What its pass found (`None`: it had a depth table, kept).
    pub report: Option<DepthReport>,
    /// Seconds it took.
    pub seconds: f64,
    /// Peak resident anonymous memory meanwhile, if measured.
    pub peak_anon: Option<u64>,
    /// Its depth table's file.
    pub table: PathBuf,
    /// Bytes of its depth table.
    pub table_bytes: u64,
    /// Whether its values were checked too (so the level is proven).
    pub checked: bool,
    /// Bytes its pass read and wrote, if measured: its work files and table through system
    /// calls, and what it read through memory maps counted as a byte a position (the lower
    /// levels once per exit pass, the level's values once, and with the check once more per
    /// pass).
    pub traffic: Option<(u64, u64)>,
}

/// `awari-solver depth`: add a depth table to every level of `stones` (all present if empty)
/// of the database `db` that has none, lowest first, written into `out` (default: `db`; else
/// `db`'s values tables are linked into `out`, which becomes a database directory of its own),
/// each pass within `memory` bytes. With `check`, each pass also recomputes every entry from
/// its children ([`DepthPass::check_values`]), so that a level written is proven (its values
/// consistent, and every win and loss converting); a wrong entry is an error
/// ([`DepthError::Inconsistent`]) and no table is written. Each table is stored in `form`
/// (a kept plain table too, compressed where `form` asks).
/// `on_level` is called after each level.
#[allow(clippy::too_many_arguments)]
pub fn add_depth_tables(
    db: &Path,
    out: Option<&Path>,
    stones: &[u32],
    memory: Option<u64>,
    check: bool,
    form: DepthForm,
    progress: &dyn Progress,
    mut on_level: impl FnMut(&LevelDepth),
) -> Result<Vec<LevelDepth>, DepthError> {
    let source = Levels::open(db, None)?;
    let dir = match out {
        Some(out) if out != db => {
            link_values(&source, out)?;
            out.to_path_buf()
        }
        _ => db.to_path_buf(),
    };
    drop(source);
    // One writer at a time: a second pass, or a build, would overwrite this one's work files.
    let _lock = crate::sys::lock_dir(&dir)?;
    let mut levels = Levels::open(&dir, None)?;
    let mut wanted: Vec<u32> = if stones.is_empty() {
        levels.present().collect()
    } else {
        stones.to_vec()
    };
    wanted.sort_unstable();
    wanted.dedup();
    if wanted.is_empty() {
        return Err(DbError::NotADirectory {
            dir: db.to_path_buf(),
            reason: "it holds no levels".into(),
        }
        .into());
    }
    let mut done = Vec::new();
    for n in wanted {
        levels.require(n)?;
        if let Some(t) = levels.depth_table(n) {
            // A pass killed between renaming its table into place and removing its work files
            // left them behind: they go, and any table being written.
            super::remove_work_files(&dir, n);
            let _ = std::fs::remove_file(awari_db::table::tmp_path(&depth_path(&dir, n)));
            let start = Instant::now();
            // Kept, but stored as asked: a plain table is compressed.
            if form.compresses(n) && !t.is_compressed() {
                progress.level(n, level_size(n));
            }
            let (table, table_bytes) = store_as(&mut levels, n, form, progress)?;
            let r = LevelDepth {
                level: n,
                report: None,
                seconds: start.elapsed().as_secs_f64(),
                peak_anon: None,
                table,
                table_bytes,
                checked: false,
                traffic: None,
            };
            on_level(&r);
            done.push(r);
            continue;
        }
        let start = Instant::now();
        let peak = sys::AnonPeak::start();
        let chars = sys::io_chars();
        progress.level(n, level_size(n));
        let pass = Pass::open(&levels, n, &dir, memory)?;
        let pass = if check { pass.check_values(10) } else { pass };
        let report = match pass.run(true, 10, progress) {
            // A bad checksum (found by the class pass's value check) is the table's error,
            // as the streamed check's.
            Err(DepthError::Checksum(bad)) => return Err(bad.checksum.into()),
            r => r?,
        };
        let traffic = chars.zip(sys::io_chars()).map(|((r0, w0), (r1, w1))| {
            let passes = u64::from(report.exits.passes);
            let mapped = report.exits.lower_bytes * passes
                + level_size(n) * (1 + if check { passes } else { 0 });
            (r1.saturating_sub(r0) + mapped, w1.saturating_sub(w0))
        });
        let (table, table_bytes) = store_depth(&mut levels, n, form, progress)?;
        let r = LevelDepth {
            traffic,
            level: n,
            seconds: start.elapsed().as_secs_f64(),
            peak_anon: peak.finish(),
            table,
            table_bytes,
            report: Some(report),
            checked: check,
        };
        on_level(&r);
        done.push(r);
    }
    Ok(done)
}

/// Link every values table of `source` into `out` (created if missing) where `out` has none.
fn link_values(source: &Levels, out: &Path) -> Result<(), DepthError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TableError::Io { path, source }
    };
    std::fs::create_dir_all(out).map_err(io(out))?;
    for n in source.present() {
        let table = source.require(n)?;
        let from = std::fs::canonicalize(table.path()).map_err(io(table.path()))?;
        let name = from.file_name().expect("a table file has a name");
        let to = out.join(name);
        if !to.exists() {
            std::os::unix::fs::symlink(&from, &to).map_err(io(&to))?;
        }
    }
    Ok(())
}
