//! The work files of a depth pass besides its checkpoint: where they are, their removal, and
//! the reading back of a wave file (`level-NN.dwave-KKKK`, the positions at depth K as seed
//! records, see `crate::seed_records`), each record checked.

use crate::seed_records::Body;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use awari_db::table::{rename_into_place, tmp_path};
use awari_db::TableError;

use crate::seed_records::RecordReader;

/// The work files of level `n`'s depth pass in `dir`: the checkpoint, and wave file `k`.
pub fn resume_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("level-{n:02}.dresume"))
}

/// Wave file `k` of level `n`'s depth pass in `dir`.
pub(super) fn wave_path(dir: &Path, n: u32, k: u32) -> PathBuf {
    dir.join(format!("level-{n:02}.dwave-{k:04}"))
}

/// Remove the work files of level `n`'s depth pass in `dir`, of either pass, and their
/// `.tmp`s: the checkpoints (`level-NN.dresume`, `level-NN.dclasses`), the wave files
/// (`level-NN.dwave-KKKK`), and a class pass's class lists and class wave files
/// (`level-NN.dclass±VV`, `level-NN.dwave±VV-KKKK`). One read of the directory: trying every
/// name a pass could write cost a thousand system calls a level.
pub fn remove_work_files(dir: &Path, n: u32) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!("level-{n:02}.");
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|s| s.strip_prefix(&prefix)) else {
            continue;
        };
        if ["dresume", "dclass", "dwave"]
            .iter()
            .any(|kind| rest.starts_with(kind))
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// A wave file or class list of a level of `size` positions read back, record by record,
/// each checked (`crate::seed_records`).
pub(super) fn wave_reader(path: &Path, size: u64) -> Result<RecordReader<'static>, TableError> {
    RecordReader::open(path, 0, 1 << 16, size, Body::Seeds, None)
}

/// A wave file being written, a record at a time, in chunk order: to its `.tmp`, created at
/// the first record (or at once where `durable`), synced where `durable`, then renamed.
pub(super) struct WaveWriter {
    path: PathBuf,
    tmp: PathBuf,
    durable: bool,
    buffer: usize,
    file: Option<BufWriter<File>>,
    /// Bytes written.
    pub(super) bytes: u64,
}

impl WaveWriter {
    /// A writer of wave file `path` with a write buffer of `buffer` bytes.
    pub(super) fn new(path: &Path, durable: bool, buffer: usize) -> Result<Self, TableError> {
        let mut w = WaveWriter {
            path: path.to_path_buf(),
            tmp: tmp_path(path),
            durable,
            buffer,
            file: None,
            bytes: 0,
        };
        if durable {
            w.create()?;
        }
        Ok(w)
    }

    fn io(&self) -> impl Fn(std::io::Error) -> TableError + '_ {
        |source| TableError::Io {
            path: self.tmp.clone(),
            source,
        }
    }

    fn create(&mut self) -> Result<&mut BufWriter<File>, TableError> {
        if self.file.is_none() {
            let f = File::create(&self.tmp).map_err(self.io())?;
            self.file = Some(BufWriter::with_capacity(self.buffer, f));
        }
        Ok(self.file.as_mut().expect("created"))
    }

    /// Append one record.
    pub(super) fn write(&mut self, record: &[u8]) -> Result<(), TableError> {
        let tmp = self.tmp.clone();
        let io = move |source| TableError::Io { path: tmp, source };
        self.create()?.write_all(record).map_err(io)?;
        self.bytes += record.len() as u64;
        Ok(())
    }

    /// Put the file in place. With no record and not durable, no file is written (one at the
    /// path is removed): on a small level most waves of most value classes are empty, and
    /// creating and renaming their files was most of a class pass's time. A durable wave is
    /// always written, so that a resume can tell it from a lost file.
    pub(super) fn finish(mut self) -> Result<u64, TableError> {
        let Some(mut file) = self.file.take() else {
            return match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(TableError::Io {
                    path: self.path.clone(),
                    source: e,
                }),
                _ => Ok(0),
            };
        };
        file.flush().map_err(self.io())?;
        if self.durable {
            file.get_ref().sync_data().map_err(self.io())?;
            drop(file);
            rename_into_place(&self.tmp, &self.path)?;
        } else {
            drop(file);
            std::fs::rename(&self.tmp, &self.path).map_err(self.io())?;
        }
        Ok(self.bytes)
    }
}
