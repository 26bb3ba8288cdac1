//! The checkpoint of a two-bit level, `level-NN.work/resume`: where the build stands and the
//! length of every file in the work directory, written after each exit bucket and at step
//! boundaries (a few hundred bytes: the states are not in it), and read back when a level
//! opens. While settling, a checkpoint is due once [`crate::checkpoint::CHECKPOINT_SECONDS`] have passed since the
//! last (`AWARI_CHECKPOINT_SECONDS` sets it; 0: at every step): it flushes the log.
//!
//! The states need no copy on disk: at the boundary before step j, with the log flushed, they
//! follow from the files. A position is won or lost if a part file holds it (its value says
//! which), else losable if its exit is −(j+1) … −n or it has none, else open. A resume
//! truncates every listed file to its recorded length, removes the files written since, and
//! rebuilds the states from the files ([`TwoBit::restore_states`]).

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use awari_db::{level_size, Rules, TableError};
use rayon::prelude::*;

use super::codes::{StateBits, LOST, WON};
use super::log::decode;
use super::stream::list_batch;
use super::work_files::{part_of, work_dir, ExitList};
use super::{Carried, Stage, TwoBit, CHUNK};
pub(super) use crate::checkpoint::checkpoint_seconds;
use crate::checkpoint::{CheckpointError, Fields, Kind};
use crate::seed_records::{decode_seeds, Body};

/// The checkpoint file: where the level stands, and the work directory's record files, in
/// the frame of `crate::checkpoint` (magic b"AWARICKP", version 3), whose fields are, in
/// order:
///
/// ```text
/// field                                   type
/// rule set code                           u8
/// stage: 0 exits, 1 settle, 2 convert     u8
/// settle: the next step                   u8
/// seed count of the level                 u32
/// times the level was resumed so far      u32
/// positions of the level                  u64
/// exits: positions done                   u64
/// carried over for the summary: seconds   f64, then bytes read, bytes written (u64)
/// exits seconds, exits bytes read         f64, u64 (u64::MAX: unknown)
/// exits passes                            u32
/// the exit bucket, in chunks of 2^20      u32
/// F: files listed                         u64
/// per file: its name, its length          byte string (UTF-8), u64
/// ```
pub(super) struct Checkpoint {
    pub(super) stage: Stage,
    pub(super) resumes: u32,
    pub(super) carried: Carried,
    pub(super) files: Vec<(String, u64)>,
    /// Positions per exit bucket (and part file).
    pub(super) bucket: u64,
}

const KIND: Kind = Kind {
    magic: *b"AWARICKP",
    version: 3,
};
pub(super) const CKPT_NAME: &str = "resume";
const CKPT_TMP: &str = "resume.tmp";

/// Whether `name` is one of the checkpoint's own files: not listed in it. (The table is
/// written only after the last checkpoint, so it is never listed either, and a resume
/// removes a half-written one.)
fn unlisted(name: &str) -> bool {
    name == CKPT_NAME || name == CKPT_TMP
}

impl TwoBit<'_> {
    /// Write the checkpoint of where the build stands, atomically. Every record file is
    /// synced already (by its writer).
    pub(super) fn checkpoint(&self) -> Result<(), TableError> {
        let mut files: Vec<(String, u64)> = Vec::new();
        for entry in std::fs::read_dir(&self.work).map_err(self.dir_error())? {
            let entry = entry.map_err(self.dir_error())?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !unlisted(&name) {
                files.push((name, entry.metadata().map_err(self.dir_error())?.len()));
            }
        }
        files.sort();
        let (stage, next) = match self.stage {
            Stage::Exits { .. } => (0u8, 0u8),
            Stage::Settle { next } => (1, next as u8),
            Stage::Convert => (2, 0),
        };
        let done = match self.stage {
            Stage::Exits { done } => done,
            _ => self.level.size(),
        };
        let elapsed = self.carried.seconds + self.started.elapsed().as_secs_f64();
        let read = self.carried.read + self.io.read.load(Relaxed);
        // (The checkpoint's own few hundred bytes are counted once it is written.)
        let wrote = self.carried.written + self.io.written.load(Relaxed);
        let mut f = Fields::default();
        f.u8(self.rules.code())
            .u8(stage)
            .u8(next)
            .u32(self.level.seeds())
            .u32(self.resumes)
            .u64(self.level.size())
            .u64(done);
        Carried {
            seconds: elapsed,
            read,
            written: wrote,
            ..self.carried
        }
        .write(&mut f);
        f.u32((self.bucket / CHUNK) as u32).u64(files.len() as u64);
        for (name, len) in &files {
            f.bytes(name.as_bytes()).u64(*len);
        }
        let written = f.write(&self.work.join(CKPT_NAME), KIND)?;
        self.io.written.fetch_add(written, Relaxed);
        Ok(())
    }

    /// Bring the work directory back to the checkpoint: files written since removed, listed
    /// ones truncated to their recorded lengths, then every record of them checked (a
    /// [`TableError::Damaged`] if one fails: the caller starts the level afresh).
    pub(super) fn roll_back(&self, files: &[(String, u64)]) -> Result<(), TableError> {
        for entry in std::fs::read_dir(&self.work).map_err(self.dir_error())? {
            let entry = entry.map_err(self.dir_error())?;
            let name = entry.file_name().to_string_lossy().into_owned();
            match files.iter().find(|(f, _)| *f == name) {
                Some(&(_, len)) => {
                    let f = std::fs::OpenOptions::new()
                        .write(true)
                        .open(entry.path())
                        .map_err(self.dir_error())?;
                    f.set_len(len).map_err(self.dir_error())?;
                    f.sync_all().map_err(self.dir_error())?;
                }
                None if name == CKPT_NAME => {}
                None => std::fs::remove_file(entry.path()).map_err(self.dir_error())?,
            }
        }
        let size = self.level.size();
        files.par_iter().try_for_each(|(name, len)| {
            let body = if part_of(name).is_some() {
                self.part_body()
            } else {
                Body::Seeds
            };
            crate::seed_records::check_file(&self.work.join(name), *len, size, body)
        })
    }

    /// The states at the boundary before step `next` (see the module documentation), from
    /// the files.
    pub(super) fn restore_states(&self, next: u32) -> Result<(), TableError> {
        let n = self.level.seeds();
        // (file, whether it is a part file: else an exit list of losable positions)
        let mut files: Vec<(String, bool)> = Vec::new();
        // One bit keeps no losable state: the part files alone.
        if next < n && self.bits == StateBits::Two {
            files.push((ExitList::NoExit.file_name(), false));
            files
                .extend(((next + 1)..=n).map(|e| (ExitList::Value(-(e as i8)).file_name(), false)));
        }
        for entry in std::fs::read_dir(&self.work).map_err(self.dir_error())? {
            let name = entry.map_err(self.dir_error())?.file_name();
            let name = name.to_string_lossy().into_owned();
            if part_of(&name).is_some() {
                files.push((name, true));
            }
        }
        for (name, part) in files {
            let path = self.work.join(&name);
            if !path.exists() {
                continue;
            }
            let mut reader = self.records(&path)?;
            loop {
                let batch = reader.batch(list_batch(self.bits))?;
                if batch.is_empty() {
                    break;
                }
                batch.par_iter().for_each(|(c, body)| {
                    let start = u64::from(*c) * CHUNK;
                    if part {
                        decode(
                            body,
                            crate::seed_records::chunk_limit(*c, self.level.size()),
                            self.depths,
                            |k, v, _| {
                                self.set_code(start + u64::from(k), if v > 0 { WON } else { LOST });
                            },
                        );
                    } else {
                        for (k, _) in decode_seeds(
                            body,
                            crate::seed_records::chunk_limit(*c, self.level.size()),
                        ) {
                            self.make_losable(start + u64::from(k));
                        }
                    }
                });
            }
        }
        Ok(())
    }
}

/// Where the two-bit build of level `n` in `dir` stands, from its checkpoint (`Ok(None)`: it
/// has none). The checkpoint is read and checked against the files, as a resume would.
pub fn checkpoint_stage(
    dir: &Path,
    n: u32,
    rules: Rules,
) -> Result<Option<Stage>, CheckpointError> {
    read_checkpoint(&work_dir(dir, n), n, rules).map(|c| c.map(|c| c.stage))
}

/// Read the checkpoint of level `n` in its work directory `work`, checking it against the
/// level, the rules and the files (each at least as long as recorded); `Ok(None)` when there
/// is none.
pub(super) fn read_checkpoint(
    work: &Path,
    n: u32,
    rules: Rules,
) -> Result<Option<Checkpoint>, CheckpointError> {
    let Some(mut r) = crate::checkpoint::read(&work.join(CKPT_NAME), KIND)? else {
        return Ok(None);
    };
    let size = level_size(n);
    let (code, stage, next, seeds, resumes) = (r.u8()?, r.u8()?, r.u8()?, r.u32()?, r.tally_u32()?);
    let (positions, done) = (r.u64()?, r.u64()?);
    if code != rules.code() || seeds != n || positions != size {
        return Err(r.unusable(format!("not of level {n} under {rules}")));
    }
    let stage = match (stage, next) {
        (0, _) if done <= size => Stage::Exits { done },
        (1, next) if (1..=n).contains(&u32::from(next)) => Stage::Settle {
            next: u32::from(next),
        },
        (2, _) => Stage::Convert,
        _ => return Err(r.unusable("unknown stage")),
    };
    let carried = Carried::read(&mut r)?;
    // Whole bucket units, and no more than the level rounded up to one: any other bucket is
    // not one a build chose (the settling log is sized by it).
    let bucket = u64::from(r.u32()?) * CHUNK;
    let unit = super::BUCKET_UNIT;
    if bucket == 0 || bucket % unit != 0 || bucket > size.div_ceil(unit) * unit {
        return Err(r.unusable(format!("an exit bucket of {bucket} positions")));
    }
    let count = r.count(12)?;
    let mut files = Vec::with_capacity(count);
    for _ in 0..count {
        let name = r.string()?;
        let bytes = r.u64()?;
        if name.contains('/') || name.contains('\\') || unlisted(&name) || name.starts_with('.') {
            return Err(r.unusable(format!("a file name {name:?} it never lists")));
        }
        match std::fs::metadata(work.join(&name)) {
            Ok(m) if m.len() >= bytes => {}
            Ok(m) => {
                return Err(r.unusable(format!("{name} holds {} bytes, {bytes} expected", m.len())))
            }
            Err(e) => return Err(r.unusable(format!("no {name}: {e}"))),
        }
        files.push((name, bytes));
    }
    r.finish()?;
    Ok(Some(Checkpoint {
        stage,
        resumes,
        carried,
        files,
        bucket,
    }))
}
