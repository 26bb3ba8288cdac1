//! The work files of a depth pass besides its checkpoint: where they are, their removal, and
//! the reading back of a wave file (`level-NN.dwave-KKKK`, the positions at depth K as seed
//! records, see `crate::seed_records`), each record checked.

use std::path::{Path, PathBuf};

use awari_db::table::tmp_path;
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

/// A wave file or class list of a level of `size` positions read back, record by record,
/// each checked (`crate::seed_records`).
pub(super) fn wave_reader(path: &Path, size: u64) -> Result<RecordReader<'static>, TableError> {
    RecordReader::open(path, 0, 1 << 16, size, false, None)
}
