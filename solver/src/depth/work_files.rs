//! The work files of a depth pass besides its checkpoint: where they are, their removal, and
//! the reading back of a wave file (`level-NN.dwave-KKKK`, the positions at depth K as seed
//! records, see `crate::seed_records`), each record checked.

use std::path::{Path, PathBuf};

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
    RecordReader::open(path, 0, 1 << 16, size, false, None)
}
