//! The work files of a two-bit level besides its checkpoint: where they are and their removal,
//! the reads and writes of the work file (counted), and the seed file of a step, written by
//! the stream and read back by the propagation (records of `crate::seed_records`).

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use awari_db::table::HEADER_LEN;
use awari_db::TableError;

use super::{TwoBit, CHUNK};

/// Disk I/O of the level in progress, counted as requested (work, seed and checkpoint files).
#[derive(Default)]
pub(super) struct IoCount {
    pub(super) read: AtomicU64,
    pub(super) written: AtomicU64,
}

/// A work file of the level, with its path for errors.
pub(super) struct WorkFile {
    pub(super) path: PathBuf,
    pub(super) file: File,
}

impl WorkFile {
    pub(super) fn io(&self) -> impl FnOnce(std::io::Error) -> TableError + '_ {
        |source| TableError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

/// The work files of level `n` in `dir`: work, seeds, checkpoint (and its `.tmp`).
pub fn work_paths(dir: &Path, n: u32) -> [PathBuf; 4] {
    let name = |ext: &str| dir.join(format!("level-{n:02}.{ext}"));
    [
        name("work"),
        name("seeds"),
        name("resume"),
        name("resume.tmp"),
    ]
}

/// Remove the work files of level `n` (a level built, or built another way).
pub fn remove_work_files(dir: &Path, n: u32) {
    for p in work_paths(dir, n) {
        let _ = std::fs::remove_file(p);
    }
}

impl TwoBit<'_> {
    pub(super) fn read_work(&self, start: u64, buf: &mut [u8]) -> Result<(), TableError> {
        self.io.read.fetch_add(buf.len() as u64, Relaxed);
        self.work
            .file
            .read_exact_at(buf, HEADER_LEN as u64 + start)
            .map_err(self.work.io())
    }

    pub(super) fn write_work(&self, start: u64, buf: &[u8]) -> Result<(), TableError> {
        self.io.written.fetch_add(buf.len() as u64, Relaxed);
        self.work
            .file
            .write_all_at(buf, HEADER_LEN as u64 + start)
            .map_err(self.work.io())
    }

    pub(super) fn chunk_range(&self, c: usize) -> (u64, u64) {
        let start = c as u64 * CHUNK;
        (start, (start + CHUNK).min(self.level.size()))
    }
}

/// The seed file of a step, written by the streaming threads a record at a time.
pub(super) struct SeedWriter<'a> {
    file: std::io::BufWriter<File>,
    path: PathBuf,
    io: &'a IoCount,
}

impl<'a> SeedWriter<'a> {
    pub(super) fn create(path: &Path, io: &'a IoCount) -> Result<SeedWriter<'a>, TableError> {
        let file = File::create(path).map_err(|source| TableError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(SeedWriter {
            file: std::io::BufWriter::with_capacity(1 << 20, file),
            path: path.to_path_buf(),
            io,
        })
    }

    pub(super) fn write(&mut self, record: &[u8]) -> Result<(), TableError> {
        self.io.written.fetch_add(record.len() as u64, Relaxed);
        self.file
            .write_all(record)
            .map_err(|source| TableError::Io {
                path: self.path.clone(),
                source,
            })
    }

    pub(super) fn finish(mut self) -> Result<(), TableError> {
        self.file.flush().map_err(|source| TableError::Io {
            path: self.path.clone(),
            source,
        })
    }
}

/// Reads a seed file back, record by record.
pub(super) struct SeedReader<'a> {
    pub(super) inner: BufReader<File>,
    pub(super) path: &'a Path,
    pub(super) io: &'a IoCount,
}

impl SeedReader<'_> {
    /// Records totalling at least `bytes` (or what is left): (chunk, body).
    pub(super) fn batch(&mut self, bytes: usize) -> Result<Vec<(u32, Vec<u8>)>, TableError> {
        let io = |source| TableError::Io {
            path: self.path.to_path_buf(),
            source,
        };
        let mut out = Vec::new();
        let mut total = 0;
        while total < bytes {
            let mut head = [0u8; 8];
            match self.inner.read_exact(&mut head) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                Err(e) => return Err(io(e)),
            }
            let chunk = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
            let len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
            let mut body = vec![0u8; len];
            self.inner.read_exact(&mut body).map_err(io)?;
            self.io.read.fetch_add(8 + len as u64, Relaxed);
            total += 8 + len;
            out.push((chunk, body));
        }
        Ok(out)
    }
}
