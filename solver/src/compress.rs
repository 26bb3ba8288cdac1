//! Compression of a database directory (`awari-solver compress`, `build --compress`): each
//! values table, plain or a raw VU `scores.N` file, to its compressed form
//! (`level-NN.cvalues`, see [`awari_db::compressed`]), checked by decoding it back before it
//! is renamed into place. Levels already compressed in the output are kept, so an
//! interrupted run resumes at the level it was writing. Depth tables are compressed too
//! (`level-NN.cdepth`), or copied where they cannot be (a depth above 255).
//!
//! Two forms: the self-contained one, which the builder streams, and the smaller probe form
//! (`--probe`), whose capture don't-cares are found here with a capture search into the
//! source's lower levels, and resolved by the same search at probe time.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::time::Instant;

use awari_db::compressed::{self, Form, Layout};
use awari_db::{
    compressed_depth_path, compressed_path, depth_path, level_exists, level_path, DbError, Expect,
    Level, Levels, Table, TableError,
};
use rayon::prelude::*;

use crate::progress::Progress;

/// One level compressed (or found compressed and kept).
#[derive(Clone, Debug)]
pub struct CompressReport {
    /// The level.
    pub level: u32,
    /// Its entries.
    pub entries: u64,
    /// Bytes of the source table.
    pub source_bytes: u64,
    /// Bytes of the compressed file.
    pub bytes: u64,
    /// Seconds it took (`None`: it was already compressed and is kept).
    pub seconds: Option<f64>,
    /// Whether `bytes` is an estimate from a sample (`compress --estimate`): nothing written.
    pub estimated: bool,
}

impl CompressReport {
    /// Bits per position of the compressed file, all of it (header, model, index, data).
    pub fn bits_per_position(&self) -> f64 {
        8.0 * self.bytes as f64 / self.entries.max(1) as f64
    }
}

/// Errors of a compression run.
#[derive(Debug, thiserror::Error)]
pub enum CompressError {
    /// A directory or table problem.
    #[error(transparent)]
    Db(#[from] DbError),
    /// A table that could not be read or written.
    #[error(transparent)]
    Table(#[from] TableError),
    /// Another process writes into the output directory.
    #[error(transparent)]
    Locked(#[from] crate::sys::LockError),
    /// The output directory could not be made.
    #[error("cannot create {}: {source}", dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The output is the source directory.
    #[error("--out {} is the source directory; compress into another one (or build with --compress)", dir.display())]
    SameDirectory {
        /// The directory.
        dir: PathBuf,
    },
}

/// A failed lookup of level `n`'s writer (its table's errors as they are).
fn lookup_error(levels: &Levels, n: u32, e: DbError) -> TableError {
    match e {
        DbError::Table(t) => t,
        other => TableError::Lookup {
            path: levels.dir().join(format!("level-{n:02}")),
            source: Box::new(other),
        },
    }
}

/// The probe form's ceilings of entries `start..start + values.len()` of level `n`: a
/// capture search into `levels` for each (in parallel).
fn ceilings(
    levels: &Levels,
    n: u32,
    start: u64,
    values: &[u8],
    out: &mut [i8],
) -> Result<(), TableError> {
    const CHUNK: usize = crate::grain::MOVE_TASK as usize;
    let level = Level::new(n);
    out.par_chunks_mut(CHUNK)
        .zip(values.par_chunks(CHUNK))
        .enumerate()
        .try_for_each(|(c, (out, values))| {
            let first = start + (c * CHUNK) as u64;
            let boards = level.boards(first..first + values.len() as u64);
            for ((o, &v), board) in out.iter_mut().zip(values).zip(boards) {
                *o = levels
                    .dont_care_ceiling(&board, v as i8)
                    .map_err(|e| lookup_error(levels, n, e))?
                    .unwrap_or(compressed::FIXED);
            }
            Ok(())
        })
}

/// Compress level `n` of `source` to `path` (a `.cvalues` file), reporting to `progress`:
/// self-contained without `lower`; with the source's lower levels, `lower`, the probe form
/// ([`Form::CaptureDontCares`]) in its layout.
pub fn compress_table(
    source: &Table,
    lower: Option<(&Levels, Layout)>,
    path: &Path,
    progress: &dyn Progress,
) -> Result<CompressReport, CompressError> {
    run_table(source, lower, path, progress, false)
}

/// [`compress_table`] or, with `estimate_only`, its size estimated from a sample of the level
/// ([`compressed::estimate`]), nothing written (`path` then only names the level in errors).
fn run_table(
    source: &Table,
    lower: Option<(&Levels, Layout)>,
    path: &Path,
    progress: &dyn Progress,
    estimate_only: bool,
) -> Result<CompressReport, CompressError> {
    // A damaged source is named, never compressed into a table with fresh checksums.
    if !estimate_only {
        source.verify()?;
    }
    let h = *source.header();
    let n = h.seeds;
    let free = |start: u64, values: &[u8], out: &mut [i8]| {
        ceilings(
            lower.expect("the probe form's lower levels").0,
            n,
            start,
            values,
            out,
        )
    };
    let layout = lower.map_or(Form::SelfContained.into(), |(_, layout)| layout);
    let start = Instant::now();
    source.advise(awari_db::Access::Sequential);
    let passes = PassProgress::new(progress, h.entries);
    let size = if estimate_only {
        compressed::estimate_as
    } else {
        compressed::compress_as
    }(
        layout,
        path,
        h.rules,
        h.seeds,
        &|from, buf| {
            let mut scratch = Vec::new();
            let got = source.read(from..from + buf.len() as u64, &mut scratch)?;
            buf.copy_from_slice(got);
            Ok(())
        },
        lower.map(|_| &free as &compressed::ReadFreedom<'_>),
        &|p, entries| passes.tell(p, entries),
    )?;
    source.advise(awari_db::Access::Normal);
    Ok(CompressReport {
        level: h.seeds,
        entries: h.entries,
        source_bytes: source.file_len(),
        bytes: size.bytes,
        seconds: Some(start.elapsed().as_secs_f64()),
        estimated: estimate_only,
    })
}

/// The compressor's passes (0 count, 1 encode, 2 check) as phases of a [`Progress`].
struct PassProgress<'a> {
    progress: &'a dyn Progress,
    entries: u64,
    pass: AtomicU8,
    done: AtomicU64,
}

impl<'a> PassProgress<'a> {
    fn new(progress: &'a dyn Progress, entries: u64) -> PassProgress<'a> {
        PassProgress {
            progress,
            entries,
            pass: AtomicU8::new(u8::MAX),
            done: AtomicU64::new(0),
        }
    }

    /// Pass `p` has done `entries` entries.
    fn tell(&self, p: u8, entries: u64) {
        const NAMES: [&str; 3] = ["count", "encode", "check"];
        if self.pass.swap(p, Relaxed) != p {
            self.progress
                .phase(NAMES[usize::from(p.min(2))], self.entries);
            self.done.store(0, Relaxed);
        }
        let before = self.done.swap(entries, Relaxed);
        self.progress.advance(entries.saturating_sub(before));
    }
}

/// Compress level `n`'s plain depth table in `levels` to `path` (a `.cdepth` file, coded
/// against the level's values: see [`compressed::compress_depth`]), reporting to `progress`.
/// `None`, nothing written, for a table that cannot be: one of two bytes an entry (a depth
/// above 255), or one already compressed.
pub fn compress_depth_table(
    levels: &Levels,
    n: u32,
    path: &Path,
    progress: &dyn Progress,
) -> Result<Option<CompressReport>, DbError> {
    let source = levels.depth_table(n).ok_or_else(|| DbError::MissingDepth {
        dir: levels.dir().to_path_buf(),
        seeds: n,
    })?;
    let h = *source.header();
    let Some(data) = source.plain().filter(|_| h.entry_bytes == 1) else {
        return Ok(None);
    };
    // A damaged source is named, never compressed into a table with fresh checksums.
    source.verify()?;
    let start = Instant::now();
    source.advise(awari_db::Access::Sequential);
    let max_depth = data
        .par_chunks(1 << 20)
        .map(|c| c.iter().copied().max().unwrap_or(0))
        .max()
        .unwrap_or(0);
    let passes = PassProgress::new(progress, h.entries);
    let size = compressed::compress_depth(
        path,
        h.rules,
        h.seeds,
        max_depth,
        &|from, buf| {
            buf.copy_from_slice(&data[from as usize..from as usize + buf.len()]);
            Ok(())
        },
        &|from, buf| {
            let mut values = Vec::new();
            levels
                .read_values(n, from..from + buf.len() as u64, &mut values)
                .map_err(|e| lookup_error(levels, n, e))?;
            buf.iter_mut().zip(&values).for_each(|(b, &v)| *b = v as u8);
            Ok(())
        },
        &|p, entries| passes.tell(p, entries),
    )?;
    source.advise(awari_db::Access::Normal);
    Ok(Some(CompressReport {
        level: h.seeds,
        entries: h.entries,
        source_bytes: source.file_len(),
        bytes: size.bytes,
        seconds: Some(start.elapsed().as_secs_f64()),
        estimated: false,
    }))
}

/// Replace level `n`'s plain depth table in `levels` by its compressed form
/// (`level-NN.cdepth`): compress, reopen, and only then remove the plain file. `None` where
/// it cannot be compressed (see [`compress_depth_table`]): the plain table stays.
pub fn compress_depth_in_place(
    levels: &Levels,
    n: u32,
    progress: &dyn Progress,
) -> Result<Option<(CompressReport, Table)>, DbError> {
    let dir = levels.dir();
    let path = compressed_depth_path(dir, n);
    let Some(report) = compress_depth_table(levels, n, &path, progress)? else {
        return Ok(None);
    };
    let h = *levels.depth_table(n).expect("compressed from it").header();
    let compressed = Table::open(
        &path,
        Expect {
            rules: Some(h.rules),
            seeds: Some(h.seeds),
            content: Some(awari_db::Content::Depth),
        },
    )?;
    let plain = depth_path(dir, h.seeds);
    std::fs::remove_file(&plain).map_err(|source| TableError::Io {
        path: plain.clone(),
        source,
    })?;
    Ok(Some((report, compressed)))
}

/// What compressing levels `stones` (default: every level present) of `source` in `layout`
/// would take, each estimated from a sample of about 2048 groups of the level: nothing is
/// written. Calls `on_level` after each.
pub fn estimate_db(
    source: &Levels,
    stones: &[u32],
    layout: impl Into<Layout>,
    progress: &dyn Progress,
    mut on_level: impl FnMut(&CompressReport),
) -> Result<Vec<CompressReport>, CompressError> {
    let layout = layout.into();
    let form = layout.form;
    let mut reports = Vec::new();
    for n in chosen_levels(source, stones) {
        let table = source.require(n)?;
        let probe = form.is_probe();
        if probe {
            require_capture_levels(source, n)?;
        }
        progress.level(n, table.header().entries);
        let report = run_table(
            table,
            probe.then_some((source, layout)),
            &compressed_path(source.dir(), n),
            progress,
            true,
        )?;
        on_level(&report);
        reports.push(report);
    }
    Ok(reports)
}

/// The levels a run takes: `stones` that can exist, or every level present.
fn chosen_levels(source: &Levels, stones: &[u32]) -> Vec<u32> {
    if stones.is_empty() {
        source.present().collect()
    } else {
        stones
            .iter()
            .copied()
            .filter(|&n| level_exists(n))
            .collect()
    }
}

/// The probe form's capture search reads every level a capture from level `n` reaches.
fn require_capture_levels(source: &Levels, n: u32) -> Result<(), DbError> {
    for s in (0..n.saturating_sub(1)).filter(|&s| level_exists(s)) {
        source.require(s)?;
    }
    Ok(())
}

/// Compress levels `stones` (default: every level present) of `source` into directory `out`
/// in `layout` (a [`Form`] is its default layout), calling `on_level` after each.
pub fn compress_db(
    source: &Levels,
    out: &Path,
    stones: &[u32],
    layout: impl Into<Layout>,
    progress: &dyn Progress,
    mut on_level: impl FnMut(&CompressReport),
) -> Result<Vec<CompressReport>, CompressError> {
    let layout = layout.into();
    let form = layout.form;
    std::fs::create_dir_all(out).map_err(|source| CompressError::CreateDir {
        dir: out.to_path_buf(),
        source,
    })?;
    let same = match (source.dir().canonicalize(), out.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        return Err(CompressError::SameDirectory {
            dir: out.to_path_buf(),
        });
    }
    // One writer at a time into the output.
    let _lock = crate::sys::lock_dir(out)?;
    // The output's own tables must be of the same rule set.
    Levels::open(out, Some(source.rules()))?;
    let mut reports = Vec::new();
    for n in chosen_levels(source, stones) {
        let table = source.require(n)?;
        let path = compressed_path(out, n);
        let expect = Expect {
            rules: Some(source.rules()),
            seeds: Some(n),
            content: None,
        };
        let probe = form.is_probe();
        if probe {
            require_capture_levels(source, n)?;
        }
        let report = match Table::open(&path, expect) {
            // Kept only as asked: the same form and segment length (an older layout, or the
            // other form, is written again).
            Ok(kept) if kept.compressed_layout() == Some(layout) => CompressReport {
                level: n,
                entries: kept.header().entries,
                source_bytes: table.file_len(),
                bytes: kept.file_len(),
                seconds: None,
                estimated: false,
            },
            _ => {
                progress.level(n, table.header().entries);
                compress_table(table, probe.then_some((source, layout)), &path, progress)?
            }
        };
        // A depth table goes along, compressed (or as it is, if it is already, or has depths
        // above 255), so that `line` and `verify` on the output see what they saw on the
        // source.
        if let Some(depth) = source.depth_table(n) {
            let (cdepth, plain) = (compressed_depth_path(out, n), depth_path(out, n));
            if !cdepth.exists() && !plain.exists() {
                progress.level(n, depth.header().entries);
                if compress_depth_table(source, n, &cdepth, progress)?.is_none() {
                    let name = depth.path().file_name().expect("a table file has a name");
                    copy_into_place(depth.path(), &out.join(name))?;
                }
            }
        }
        on_level(&report);
        reports.push(report);
    }
    Ok(reports)
}

/// Copy the file `from` to `to` (to `.tmp`, synced, renamed).
fn copy_into_place(from: &Path, to: &Path) -> Result<(), TableError> {
    let tmp = awari_db::table::tmp_path(to);
    std::fs::copy(from, &tmp)
        .and_then(|_| std::fs::File::open(&tmp)?.sync_all())
        .map_err(|source| TableError::Io {
            path: to.to_path_buf(),
            source,
        })?;
    awari_db::table::rename_into_place(&tmp, to)
}

/// Replace level `n`'s plain table in `dir` by its compressed form (`build --compress`):
/// compress, reopen, and only then remove the plain file. Returns the report and the
/// compressed table.
pub fn compress_in_place(
    levels: &Levels,
    n: u32,
    progress: &dyn Progress,
) -> Result<(CompressReport, Table), CompressError> {
    let dir = levels.dir();
    let table = levels.require(n)?;
    let path = compressed_path(dir, n);
    let report = compress_table(table, None, &path, progress)?;
    let compressed = Table::open(
        &path,
        Expect {
            rules: Some(levels.rules()),
            seeds: Some(n),
            content: None,
        },
    )?;
    let plain = level_path(dir, n);
    std::fs::remove_file(&plain).map_err(|source| TableError::Io {
        path: plain.clone(),
        source,
    })?;
    Ok((report, compressed))
}
