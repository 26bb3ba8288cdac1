//! Compression of a database directory (`awari-solver compress`, `build --compress`): each
//! values table, plain or a raw VU `scores.N` file, to its compressed form
//! (`level-NN.cvalues`, see [`awari_db::compressed`]), checked by decoding it back before it
//! is renamed into place. Levels already compressed in the output are kept, so an
//! interrupted run resumes at the level it was writing. Depth tables are copied as they are.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::time::Instant;

use awari_db::compressed;
use awari_db::{
    compressed_path, depth_path, level_exists, level_path, DbError, Expect, Levels, Table,
    TableError,
};

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

/// Compress level `n` of `source` to `path` (a `.cvalues` file), reporting to `progress`.
pub fn compress_table(
    source: &Table,
    path: &Path,
    progress: &dyn Progress,
) -> Result<CompressReport, TableError> {
    let h = *source.header();
    let start = Instant::now();
    source.advise(awari_db::Access::Sequential);
    let pass = AtomicU8::new(u8::MAX);
    let done = AtomicU64::new(0);
    const NAMES: [&str; 3] = ["count", "encode", "check"];
    let size = compressed::compress(
        path,
        h.rules,
        h.seeds,
        &|from, buf| {
            let mut scratch = Vec::new();
            let got = source.read(from..from + buf.len() as u64, &mut scratch)?;
            buf.copy_from_slice(got);
            Ok(())
        },
        &|p, entries| {
            if pass.swap(p, Relaxed) != p {
                progress.phase(NAMES[usize::from(p.min(2))], h.entries);
                done.store(0, Relaxed);
            }
            let before = done.swap(entries, Relaxed);
            progress.advance(entries.saturating_sub(before));
        },
    )?;
    source.advise(awari_db::Access::Normal);
    Ok(CompressReport {
        level: h.seeds,
        entries: h.entries,
        source_bytes: source.file_len(),
        bytes: size.bytes,
        seconds: Some(start.elapsed().as_secs_f64()),
    })
}

/// Compress levels `stones` (default: every level present) of `source` into directory `out`,
/// calling `on_level` after each.
pub fn compress_db(
    source: &Levels,
    out: &Path,
    stones: &[u32],
    progress: &dyn Progress,
    mut on_level: impl FnMut(&CompressReport),
) -> Result<Vec<CompressReport>, CompressError> {
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
    // The output's own tables must be of the same rule set.
    Levels::open(out, Some(source.rules()))?;
    let levels: Vec<u32> = if stones.is_empty() {
        source.present().collect()
    } else {
        stones
            .iter()
            .copied()
            .filter(|&n| level_exists(n))
            .collect()
    };
    let mut reports = Vec::new();
    for n in levels {
        let table = source.require(n)?;
        let path = compressed_path(out, n);
        let expect = Expect {
            rules: Some(source.rules()),
            seeds: Some(n),
            content: None,
        };
        let report = match Table::open(&path, expect) {
            Ok(kept) if kept.is_compressed() => CompressReport {
                level: n,
                entries: kept.header().entries,
                source_bytes: table.file_len(),
                bytes: kept.file_len(),
                seconds: None,
            },
            _ => {
                progress.level(n, table.header().entries);
                compress_table(table, &path, progress)?
            }
        };
        // A depth table goes along as it is (depths are not compressed), so that `line`
        // and `verify` on the output see what they saw on the source.
        let depth = depth_path(source.dir(), n);
        let to = depth_path(out, n);
        if source.depth_table(n).is_some() && !to.exists() {
            let tmp = awari_db::table::tmp_path(&to);
            std::fs::copy(&depth, &tmp)
                .and_then(|_| std::fs::File::open(&tmp)?.sync_all())
                .map_err(|source| TableError::Io {
                    path: to.clone(),
                    source,
                })?;
            awari_db::table::rename_into_place(&tmp, &to)?;
        }
        on_level(&report);
        reports.push(report);
    }
    Ok(reports)
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
    let report = compress_table(table, &path, progress)?;
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
