//! The checkpoint of a depth pass, `level-NN.dresume`: where it stands (in wave 0, or after
//! which wave) and what carried over, written after each bucket of wave 0 and each durable
//! wave, and read back, checked against the level and its wave files (every record of them),
//! when a pass opens.

use crate::seed_records::Body;
use std::sync::atomic::Ordering::Relaxed;

use super::work_files::{resume_path, wave_path};
use super::{Carried, DepthError, DepthPass, Stage};
use crate::checkpoint::{lengths_digest, CheckpointError, Fields, Kind};
use crate::seed_records::check_file;

/// The frame of `crate::checkpoint`, magic b"AWARIDRS", version 3 (version 2, without the
/// digest of the waves' lengths, is not believed).
const KIND: Kind = Kind {
    magic: *b"AWARIDRS",
    version: 3,
};

impl DepthPass<'_> {
    /// Write where the pass stands to `level-NN.dresume` (see `crate::checkpoint`), whose
    /// fields are, in order:
    ///
    /// ```text
    /// field                                          type
    /// rule set code                                  u8
    /// stage: 0 wave 0, 1 waves                       u8
    /// seed count of the level                        u32
    /// resumes so far                                 u32
    /// positions of the level                         u64
    /// wave 0: positions done, bytes of its file      u64, u64
    /// waves: the last complete wave                  u32
    /// exits passes                                   u32
    /// seconds so far, exits seconds                  f64, f64
    /// exits bytes read from storage                  u64
    /// mismatches the value check found so far        u64
    /// waves: the lengths of wave files 0..=complete  u64 (`checkpoint::lengths_digest`)
    /// ```
    pub(super) fn write_checkpoint(&self) -> Result<(), DepthError> {
        let n = self.level.seeds();
        let (stage, done, bytes, complete) = match self.stage {
            Stage::Seeds { done, bytes } => (0, done, bytes, 0),
            Stage::Waves { complete } => (1, 0, 0, complete),
        };
        let seconds = self.carried.seconds + self.started.elapsed().as_secs_f64();
        let mismatches = self.carried.mismatches + self.mismatches.load(Relaxed);
        let mut f = Fields::default();
        f.u8(self.rules.code())
            .u8(stage)
            .u32(n)
            .u32(self.carried.resumes)
            .u64(self.level.size())
            .u64(done)
            .u64(bytes)
            .u32(complete)
            .u32(self.carried.passes)
            .f64(seconds)
            .f64(self.carried.exits_seconds)
            .u64(self.carried.exits_read)
            .u64(mismatches)
            .u64(self.waves_digest(self.stage));
        f.write(&resume_path(&self.out, n), KIND)?;
        Ok(())
    }

    /// The digest of the wave files' lengths at `stage` (0 in wave 0, whose length the
    /// checkpoint records).
    fn waves_digest(&self, stage: Stage) -> u64 {
        let n = self.level.seeds();
        match stage {
            Stage::Seeds { .. } => 0,
            Stage::Waves { complete } => {
                lengths_digest((0..=complete).map(|k| wave_path(&self.out, n, k)))
            }
        }
    }

    /// The checkpoint in the output directory, checked against the level and its wave files,
    /// every record of them (`Ok(None)`: none).
    pub(super) fn read_checkpoint(&self) -> Result<Option<(Stage, Carried)>, CheckpointError> {
        let n = self.level.seeds();
        let Some(mut r) = crate::checkpoint::read(&resume_path(&self.out, n), KIND)? else {
            return Ok(None);
        };
        let (code, stage, seeds, resumes, size) =
            (r.u8()?, r.u8()?, r.u32()?, r.tally_u32()?, r.u64()?);
        let (done, bytes, complete, passes) = (r.u64()?, r.u64()?, r.u32()?, r.tally_u32()?);
        let carried = Carried {
            seconds: r.seconds()?,
            exits_seconds: r.seconds()?,
            exits_read: r.tally()?,
            passes,
            resumes,
            mismatches: r.tally()?,
        };
        let waves = r.u64()?;
        if code != self.rules.code() || seeds != n || size != self.level.size() {
            return Err(r.unusable(format!("not of level {n} under {}", self.rules)));
        }
        let stage = match stage {
            0 if done <= self.level.size() => Stage::Seeds { done, bytes },
            1 => Stage::Waves { complete },
            _ => return Err(r.unusable("unknown stage")),
        };
        // The wave files it relies on must be there, whole.
        let size = self.level.size();
        let damaged = |e: awari_db::TableError| r.unusable(e.to_string());
        match stage {
            Stage::Seeds { bytes, .. } => {
                let path = wave_path(&self.out, n, 0);
                let len = std::fs::metadata(&path).map_or(0, |m| m.len());
                if len < bytes {
                    return Err(r.unusable("wave 0 is shorter than it records"));
                }
                check_file(&path, bytes, size, Body::Seeds).map_err(damaged)?;
            }
            Stage::Waves { complete } => {
                for k in 0..=complete {
                    let path = wave_path(&self.out, n, k);
                    let Ok(meta) = std::fs::metadata(&path) else {
                        return Err(r.unusable(format!("wave file {k} is missing")));
                    };
                    check_file(&path, meta.len(), size, Body::Seeds).map_err(damaged)?;
                }
                if self.waves_digest(stage) != waves {
                    return Err(r.unusable("a wave file is not as long as it records"));
                }
            }
        }
        r.finish()?;
        Ok(Some((stage, carried)))
    }
}
