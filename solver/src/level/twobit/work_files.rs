//! The work directory of a two-bit level, `level-NN.work/`, and its record files: their names,
//! their removal, and the counted writer and reader of records (the format of
//! `crate::seed_records`: per chunk of 2^20 positions, a record, checked when read back).
//!
//! ```text
//! level-NN.work/
//!   exit+05, exit-05, …   the positions whose exit is +5, −5, …   (written by the exits phase)
//!   exit-none             the positions without an exit (no capture, not terminal)
//!   seeds.won             the positions the stream of the step in progress settled as won
//!   seeds.lost            … and as lost (exit −i, every child won: the loss test)
//!   cand-000, cand-001, … one bit: candidates spilled in the step in progress (see
//!                         `candidates`), one record per chunk, removed once read
//!   part-000, part-001, … the positions settled so far with their values, one file per exit
//!                         bucket, a flush's records in chunk order (see `log`)
//!   depths                empty; there when the part files carry depths (`build --depth` in
//!                         two-bit mode: the steps settle in waves, see `propagate`)
//!   wave-00001.won-0, …   with depths: what wave 1 of the step in progress found, spilled
//!   wave-00001.lost-0, …  where it outgrew its memory (`crate::position_set`), removed once
//!                         read
//!   resume, resume.tmp    the checkpoint (see `checkpoint`)
//! ```
//!
//! The exit and seed files are in increasing chunk order with at most one record per chunk;
//! the exit lists hold each position at most once in all (exit 0 is in none), and a position
//! is in at most one part file, once (a position settles once).

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use awari_db::TableError;

use crate::seed_records::{Body, RecordReader};

/// The file whose presence says that the part files carry depths.
pub(super) const DEPTHS: &str = "depths";
/// The stems of the spill files of what a wave finds (with depths).
pub(super) const WAVE_WON: &str = "won-";
pub(super) const WAVE_LOST: &str = "lost-";

/// Disk I/O of the level in progress, counted as requested (work, seed and checkpoint files).
#[derive(Default)]
pub(super) struct IoCount {
    pub(super) read: AtomicU64,
    pub(super) written: AtomicU64,
}

/// The work directory of level `n` in `dir`.
pub fn work_dir(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("level-{n:02}.work"))
}

/// Remove the work files of level `n` (a level built, or built another way), those of the
/// former layout too (a work file `level-NN.work`, `level-NN.seeds`, `level-NN.resume`).
pub fn remove_work_files(dir: &Path, n: u32) {
    let work = work_dir(dir, n);
    if work.is_dir() {
        let _ = std::fs::remove_dir_all(&work);
    } else {
        let _ = std::fs::remove_file(&work);
    }
    for ext in ["seeds", "resume", "resume.tmp"] {
        let _ = std::fs::remove_file(dir.join(format!("level-{n:02}.{ext}")));
    }
}

/// Which exit list a position is in: an exit value (never 0), or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ExitList {
    Value(i8),
    NoExit,
}

impl ExitList {
    /// The list's index, 0..=97 (see [`ExitList::from_index`]).
    pub(super) fn index(self) -> usize {
        match self {
            ExitList::Value(e) => (i32::from(e) + 48) as usize,
            ExitList::NoExit => 97,
        }
    }

    pub(super) const COUNT: usize = 98;

    pub(super) fn from_index(k: usize) -> ExitList {
        if k == 97 {
            ExitList::NoExit
        } else {
            ExitList::Value(k as i8 - 48)
        }
    }

    pub(super) fn file_name(self) -> String {
        match self {
            ExitList::Value(e) => format!("exit{e:+03}"),
            ExitList::NoExit => "exit-none".into(),
        }
    }
}

/// The seed files of the step in progress: the stream's won and lost seeds.
pub(super) const SEEDS_WON: &str = "seeds.won";
pub(super) const SEEDS_LOST: &str = "seeds.lost";

/// The spill file `k` of one-bit candidates.
pub(super) fn spill_name(k: u64) -> String {
    format!("cand-{k:03}")
}

/// The part file of exit bucket `k`.
pub(super) fn part_name(k: u32) -> String {
    format!("part-{k:03}")
}

/// The bucket of a part file (`None`: not a part file).
pub(super) fn part_of(name: &str) -> Option<u32> {
    name.strip_prefix("part-")?.parse().ok()
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TableError + '_ {
    move |source| TableError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The write buffer of a record file: the exits phase writes up to 97 at once, and most
/// records are larger (a record longer than the buffer is written without it).
const WRITE_BUFFER: usize = 16 << 10;

/// A record file written a record at a time (created, or appended to), counted.
pub(super) struct RecordWriter<'a> {
    file: BufWriter<File>,
    path: PathBuf,
    io: &'a IoCount,
}

impl<'a> RecordWriter<'a> {
    /// Open `path` for writing at its end (`append`), or afresh.
    pub(super) fn open(
        path: &Path,
        append: bool,
        io: &'a IoCount,
    ) -> Result<RecordWriter<'a>, TableError> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .append(append)
            .truncate(!append)
            .open(path)
            .map_err(io_err(path))?;
        Ok(RecordWriter {
            file: BufWriter::with_capacity(WRITE_BUFFER, file),
            path: path.to_path_buf(),
            io,
        })
    }

    pub(super) fn write(&mut self, record: &[u8]) -> Result<(), TableError> {
        self.io.written.fetch_add(record.len() as u64, Relaxed);
        self.file.write_all(record).map_err(io_err(&self.path))
    }

    /// Flush the file, not synced: for a file that no resume reads.
    pub(super) fn finish_unsynced(mut self) -> Result<(), TableError> {
        self.file.flush().map_err(io_err(&self.path))
    }

    /// Flush and sync the file: what it holds survives a crash.
    pub(super) fn finish(self) -> Result<(), TableError> {
        let path = self.path;
        let file = self
            .file
            .into_inner()
            .map_err(|e| io_err(&path)(e.into_error()))?;
        file.sync_data().map_err(io_err(&path))
    }
}

impl super::TwoBit<'_> {
    /// A record file of the work directory read back in order, each record checked, counted,
    /// with a read buffer of 1 MiB (one bit, whose budget leaves little beside the states:
    /// 128 KiB).
    pub(super) fn records(&self, path: &Path) -> Result<RecordReader<'_>, TableError> {
        let buffer = match self.bits {
            super::StateBits::Two => 1 << 20,
            super::StateBits::One => 128 << 10,
        };
        self.records_buffered(path, buffer)
    }

    /// The same with a read buffer of `buffer` bytes (a round of candidates reads every
    /// exit list below 0 at once: see `candidates`).
    pub(super) fn records_buffered(
        &self,
        path: &Path,
        buffer: usize,
    ) -> Result<RecordReader<'_>, TableError> {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let body = if name.is_some_and(|n| part_of(&n).is_some()) {
            self.part_body()
        } else {
            Body::Seeds
        };
        RecordReader::open(
            path,
            0,
            buffer,
            self.level.size(),
            body,
            Some(&self.io.read),
        )
    }

    /// What the part files' bodies hold after each offset.
    pub(super) fn part_body(&self) -> Body {
        if self.depths {
            Body::ValuesAndDepths
        } else {
            Body::Values
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_lists() {
        for k in 0..ExitList::COUNT {
            assert_eq!(ExitList::from_index(k).index(), k);
        }
        assert_eq!(ExitList::Value(5).file_name(), "exit+05");
        assert_eq!(ExitList::Value(-12).file_name(), "exit-12");
        assert_eq!(part_of(&part_name(7)), Some(7));
        assert_eq!(part_of(&part_name(1234)), Some(1234));
        assert_eq!(part_of("exit+05"), None);
        assert_eq!(part_of("resume"), None);
    }
}
