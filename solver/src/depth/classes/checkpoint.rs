//! The checkpoint of a class pass, `level-NN.dclasses`: where it stands (in phase 1, after a
//! class, or after a wave of a class), the lengths of the class lists, and what the classes
//! done found (the histogram, the unproven positions), written after each bucket of phase 1,
//! each class and each durable wave, and read back, checked against the level and its work
//! files, when a pass opens.

use crate::seed_records::Body;
use std::path::{Path, PathBuf};

use super::lists::list_path;
use super::search::class_wave_path;
use super::{ClassCarried, ClassPass, ClassStage, LISTS};
use crate::checkpoint::{lengths_digest, CheckpointError, Fields, Kind};
use crate::depth::{DepthError, Inconsistent, Unproven};
use crate::seed_records::check_file;

/// The frame of `crate::checkpoint`, magic b"AWARIDCL", version 4 (version 3, without the
/// digest of the waves' lengths, is not believed).
const KIND: Kind = Kind {
    magic: *b"AWARIDCL",
    version: 4,
};
/// Flags: phase 1 checks the values.
const CHECKED: u8 = 1;
/// Flags: the checksum of the table's data is recorded.
const CHECKSUM: u8 = 2;
/// Flags: the waves of the classes done are removed (a pass that writes no table).
const DROPPED: u8 = 4;

/// The checkpoint of level `n`'s class pass in `dir`.
pub(crate) fn class_resume_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("level-{n:02}.dclasses"))
}

impl ClassPass<'_> {
    /// Write where the pass stands to `level-NN.dclasses` (see `crate::checkpoint`), whose
    /// fields are, in order:
    ///
    /// ```text
    /// field                                                  type
    /// rule set code                                          u8
    /// stage: 0 lists, 1 classes, 2 a wave of a class         u8
    /// stage 1: the last complete class; 2: the one in progress u8
    /// seed count of the level                                u32
    /// resumes so far                                         u32
    /// positions of the level                                 u64
    /// stage 0: positions listed                              u64
    /// stage 2: the last complete wave of the class           u32
    /// exits passes                                           u32
    /// seconds so far, exits seconds                          f64, f64
    /// exits bytes read from storage                          u64
    /// draws, unproven positions of the classes done          u64, u64
    /// value check: wrong entries of the buckets done         u64
    /// flags: 1 the values are checked, 2 the checksum kept,  u8
    ///   4 the waves of the classes done removed
    /// value check of a plain table: its data's checksum      u64
    /// bytes of each class list (won +1, lost −1, won +2, …)  256 × u64
    /// H, then positions per depth (index 0 unused)           u64, H × u64
    /// E, then unproven examples: index, stored value         u64, E × (u64, u8)
    /// M, then wrong entries by index: index, what is wrong   u64, M × (u64, UTF-8 string)
    /// the lengths of the waves of the classes done and of    u64
    ///   the one in progress (`checkpoint::lengths_digest`)
    /// ```
    pub(super) fn write_checkpoint(&self) -> Result<(), DepthError> {
        let n = self.level.seeds();
        let (stage, class, listed, complete) = match self.stage {
            ClassStage::Lists { done } => (0, 0, done, 0),
            ClassStage::Classes { done } => (1, done, 0, 0),
            ClassStage::Wave { class, complete } => (2, class, 0, complete),
        };
        let seconds = self.carried.seconds + self.started.elapsed().as_secs_f64();
        let flags = if self.carried.checked { CHECKED } else { 0 }
            | if self.carried.checksum.is_some() {
                CHECKSUM
            } else {
                0
            }
            | if self.carried.waves_dropped {
                DROPPED
            } else {
                0
            };
        let mut f = Fields::default();
        f.u8(self.rules.code())
            .u8(stage)
            .u8(class)
            .u32(n)
            .u32(self.carried.resumes)
            .u64(self.level.size())
            .u64(listed)
            .u32(complete)
            .u32(self.carried.passes)
            .f64(seconds)
            .f64(self.carried.exits_seconds)
            .u64(self.carried.exits_read)
            .u64(self.carried.draws)
            .u64(self.unproven)
            .u64(self.carried.mismatches)
            .u8(flags)
            .u64(self.carried.checksum.unwrap_or(0));
        for &len in &self.lists {
            f.u64(len);
        }
        f.u64(self.histogram.len() as u64);
        for &c in &self.histogram {
            f.u64(c);
        }
        f.u64(self.examples.len() as u64);
        for u in &self.examples {
            f.u64(u.index).u8(u.value as u8);
        }
        f.u64(self.mismatch_examples.len() as u64);
        for m in &self.mismatch_examples {
            f.u64(m.index).bytes(m.what.as_bytes());
        }
        f.u64(lengths_digest(
            self.wave_files(self.stage, self.carried.waves_dropped),
        ));
        f.write(&class_resume_path(&self.out, n), KIND)?;
        Ok(())
    }

    /// The first class not done at `stage`.
    fn first_open(stage: ClassStage) -> u16 {
        match stage {
            ClassStage::Lists { .. } => 1,
            ClassStage::Classes { done } => u16::from(done) + 1,
            ClassStage::Wave { class, .. } => u16::from(class),
        }
    }

    /// The wave files a pass at `stage` relies on, in order: those of the classes done (each
    /// class's from wave 1 until one is there of neither sign), unless they are `dropped`,
    /// then those of the class in progress (waves 0..=complete).
    fn wave_files(&self, stage: ClassStage, dropped: bool) -> Vec<PathBuf> {
        let n = self.level.seeds();
        let mut files = Vec::new();
        let done = if dropped { 1 } else { Self::first_open(stage) };
        for v in 1..done.min(256) {
            for k in 1.. {
                let found: Vec<PathBuf> = [true, false]
                    .map(|won| class_wave_path(&self.out, n, v as u8, won, k))
                    .into_iter()
                    .filter(|p| p.exists())
                    .collect();
                if found.is_empty() {
                    break;
                }
                files.extend(found);
            }
        }
        if let ClassStage::Wave { class, complete } = stage {
            for k in 0..=complete {
                files.extend([true, false].map(|won| class_wave_path(&self.out, n, class, won, k)));
            }
        }
        files
    }

    /// Read the checkpoint in the output directory into the pass, checked against the level
    /// and its work files (every record of those it relies on): `Ok(false)` if there is none.
    pub(super) fn read_checkpoint(&mut self) -> Result<bool, CheckpointError> {
        let n = self.level.seeds();
        let size = self.level.size();
        let Some(mut r) = crate::checkpoint::read(&class_resume_path(&self.out, n), KIND)? else {
            return Ok(false);
        };
        let (code, stage, class, seeds, resumes) =
            (r.u8()?, r.u8()?, r.u8()?, r.u32()?, r.tally_u32()?);
        let (positions, listed, complete, passes) = (r.u64()?, r.u64()?, r.u32()?, r.tally_u32()?);
        if code != self.rules.code() || seeds != n || positions != size {
            return Err(r.unusable(format!("not of level {n} under {}", self.rules)));
        }
        let (seconds, exits_seconds, exits_read) = (r.seconds()?, r.seconds()?, r.tally()?);
        let (draws, unproven, mismatches) = (r.tally()?, r.tally()?, r.tally()?);
        let (flags, checksum) = (r.u8()?, r.u64()?);
        if flags & !(CHECKED | CHECKSUM | DROPPED) != 0 {
            return Err(r.unusable("flags this version does not know"));
        }
        let lists: Vec<u64> = (0..LISTS).map(|_| r.u64()).collect::<Result<_, _>>()?;
        let hist = r.count(8)?;
        let histogram: Vec<u64> = (0..hist).map(|_| r.u64()).collect::<Result<_, _>>()?;
        let ex = r.count(9)?;
        let mut examples = Vec::with_capacity(ex);
        for _ in 0..ex {
            let (index, value) = (r.u64()?, r.u8()? as i8);
            if index >= size {
                return Err(r.unusable("an example outside the level"));
            }
            examples.push(Unproven {
                index,
                board: self.level.unrank(index),
                value,
            });
        }
        let wrong = r.count(12)?;
        let mut mismatch_examples = Vec::with_capacity(wrong);
        for _ in 0..wrong {
            let (index, what) = (r.u64()?, r.string()?);
            if index >= size {
                return Err(r.unusable("an example outside the level"));
            }
            mismatch_examples.push(Inconsistent {
                index,
                board: self.level.unrank(index),
                what,
            });
        }
        let waves = r.u64()?;
        if hist == 0 {
            return Err(r.unusable("no histogram"));
        }
        let stage = match stage {
            0 if listed <= size => ClassStage::Lists { done: listed },
            1 => ClassStage::Classes { done: class },
            2 if class > 0 => ClassStage::Wave { class, complete },
            _ => return Err(r.unusable("unknown stage")),
        };
        // The files it relies on must be there, every record whole: the lists of the classes
        // not done, at least as long as recorded (checked to that length), and the waves of
        // the class in progress.
        let first_open = Self::first_open(stage);
        for (x, &len) in lists.iter().enumerate() {
            let v = (x / 2 + 1) as u16;
            if len == 0 || v < first_open {
                continue;
            }
            let p = list_path(&self.out, n, v as u8, x % 2 == 0);
            if std::fs::metadata(&p).map_or(0, |m| m.len()) < len {
                return Err(r.unusable(format!("{} is shorter than it records", p.display())));
            }
            check_file(&p, len, size, Body::Seeds).map_err(|e| r.unusable(e.to_string()))?;
        }
        // The waves of the classes done, which the table is merged from.
        for v in 1..first_open.min(256) {
            for k in 1.. {
                let mut any = false;
                for won in [true, false] {
                    let p = class_wave_path(&self.out, n, v as u8, won, k);
                    if let Ok(meta) = std::fs::metadata(&p) {
                        any = true;
                        check_file(&p, meta.len(), size, Body::Seeds)
                            .map_err(|e| r.unusable(e.to_string()))?;
                    }
                }
                if !any {
                    break;
                }
            }
        }
        if let ClassStage::Wave { class, complete } = stage {
            for k in 0..=complete {
                for won in [true, false] {
                    let p = class_wave_path(&self.out, n, class, won, k);
                    let Ok(meta) = std::fs::metadata(&p) else {
                        return Err(r.unusable(format!("{} is missing", p.display())));
                    };
                    check_file(&p, meta.len(), size, Body::Seeds)
                        .map_err(|e| r.unusable(e.to_string()))?;
                }
            }
        }
        if lengths_digest(self.wave_files(stage, flags & DROPPED != 0)) != waves {
            return Err(r.unusable("a wave file is missing or not as long as it records"));
        }
        r.finish()?;
        self.histogram = histogram;
        self.examples = examples;
        self.mismatch_examples = mismatch_examples;
        self.unproven = unproven;
        self.lists = lists;
        self.stage = stage;
        self.carried = ClassCarried {
            seconds,
            exits_seconds,
            exits_read,
            passes,
            resumes,
            draws,
            checked: flags & CHECKED != 0,
            mismatches,
            checksum: (flags & CHECKSUM != 0).then_some(checksum),
            waves_dropped: flags & DROPPED != 0,
        };
        Ok(true)
    }
}
