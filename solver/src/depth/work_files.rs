//! The work files of a depth pass besides its checkpoint: where they are, their removal, and
//! the reading back of a wave file (`level-NN.dwave-KKKK`, the positions at depth K as seed
//! records, see `crate::seed_records`).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use awari_db::table::tmp_path;
use awari_db::TableError;

/// The work files of level `n`'s depth pass in `dir`: the checkpoint, and wave file `k`.
pub fn resume_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("level-{n:02}.dresume"))
}

/// Wave file `k` of level `n`'s depth pass in `dir`.
pub(super) fn wave_path(dir: &Path, n: u32, k: u32) -> PathBuf {
    dir.join(format!("level-{n:02}.dwave-{k:04}"))
}

/// Remove the work files of level `n`'s depth pass in `dir`, of either pass: the
/// checkpoints, the wave files, and a class pass's class lists and class wave files.
pub fn remove_work_files(dir: &Path, n: u32) {
    use super::classes::{class_resume_path, class_wave_path, list_path};
    for p in [resume_path(dir, n), class_resume_path(dir, n)] {
        let _ = std::fs::remove_file(tmp_path(&p));
        let _ = std::fs::remove_file(p);
    }
    for v in 1..=128u8 {
        for won in [true, false] {
            let _ = std::fs::remove_file(list_path(dir, n, v, won));
        }
        // Wave 0 of a class exists whenever a later one does.
        if class_wave_path(dir, n, v, true, 0).exists()
            || class_wave_path(dir, n, v, false, 0).exists()
            || class_wave_path(dir, n, v, true, 1).exists()
        {
            super::classes::remove_waves(dir, n, v);
        }
    }
    for k in 0.. {
        let p = wave_path(dir, n, k);
        let _ = std::fs::remove_file(tmp_path(&p));
        if std::fs::remove_file(&p).is_err() && k > 0 {
            break;
        }
    }
}

/// Reads a wave file back, record by record (chunk, body).
pub(super) struct WaveReader {
    inner: BufReader<File>,
    path: PathBuf,
    peeked: Option<(u32, Vec<u8>)>,
}

impl WaveReader {
    pub(super) fn open(path: &Path) -> Result<WaveReader, TableError> {
        let file = File::open(path).map_err(|source| TableError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(WaveReader {
            inner: BufReader::with_capacity(1 << 16, file),
            path: path.to_path_buf(),
            peeked: None,
        })
    }

    /// The next record, if any.
    fn next(&mut self) -> Result<Option<(u32, Vec<u8>)>, TableError> {
        if let Some(r) = self.peeked.take() {
            return Ok(Some(r));
        }
        let io = |source| TableError::Io {
            path: self.path.clone(),
            source,
        };
        let mut head = [0u8; 8];
        match self.inner.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(io(e)),
        }
        let chunk = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
        let mut body = vec![0u8; len];
        self.inner.read_exact(&mut body).map_err(io)?;
        Ok(Some((chunk, body)))
    }

    /// The next record if its chunk is below `chunk` (else it stays for the next call).
    pub(super) fn next_before(&mut self, chunk: u32) -> Result<Option<(u32, Vec<u8>)>, TableError> {
        match self.next()? {
            Some(r) if r.0 < chunk => Ok(Some(r)),
            other => {
                self.peeked = other;
                Ok(None)
            }
        }
    }

    /// Records totalling at least `bytes` (or what is left).
    pub(super) fn batch(&mut self, bytes: usize) -> Result<Vec<(u32, Vec<u8>)>, TableError> {
        let mut out = Vec::new();
        let mut total = 0;
        while total < bytes {
            match self.next()? {
                Some(r) => {
                    total += 8 + r.1.len();
                    out.push(r);
                }
                None => break,
            }
        }
        Ok(out)
    }
}
