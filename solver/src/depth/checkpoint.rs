//! The checkpoint of a depth pass, `level-NN.dresume`: where it stands (in wave 0, or after
//! which wave) and what carried over, written after each bucket of wave 0 and each durable
//! wave, and read back, checked against the level and its wave files, when a pass opens.

use std::fs::File;
use std::io::{Read, Write};
use std::sync::atomic::Ordering::Relaxed;

use awari_db::table::{rename_into_place, tmp_path};
use awari_db::TableError;

use super::work_files::{resume_path, wave_path};
use super::{Carried, DepthError, DepthPass, Stage};

impl DepthPass<'_> {
    /// Write where the pass stands to `level-NN.dresume` (to `.tmp`, synced, renamed).
    ///
    /// ```text
    /// offset size  field
    ///      0    8  magic, b"AWARIDRS"
    ///      8    4  version, u32 LE (1)
    ///     12    1  rule set code
    ///     13    1  stage: 0 wave 0, 1 waves
    ///     14    2  reserved
    ///     16    4  seed count of the level, u32 LE
    ///     20    4  resumes so far, u32 LE
    ///     24    8  positions of the level, u64 LE
    ///     32    8  wave 0: positions done, u64 LE
    ///     40    8  wave 0: bytes of its file, u64 LE
    ///     48    4  waves: the last complete wave, u32 LE
    ///     52    4  exits passes, u32 LE
    ///     56    8  seconds so far (f64 LE)
    ///     64    8  exits seconds (f64 LE)
    ///     72    8  exits bytes read from storage, u64 LE
    ///     80    8  mismatches the value check found so far, u64 LE
    ///     88    8  XXH3-64 of bytes 0..88
    /// ```
    pub(super) fn write_checkpoint(&self) -> Result<(), DepthError> {
        let n = self.level.seeds();
        let path = resume_path(&self.out, n);
        let tmp = tmp_path(&path);
        let mut h = [0u8; CKPT_LEN];
        h[0..8].copy_from_slice(CKPT_MAGIC);
        h[8..12].copy_from_slice(&1u32.to_le_bytes());
        h[12] = self.rules.code();
        let (stage, done, bytes, complete) = match self.stage {
            Stage::Seeds { done, bytes } => (0, done, bytes, 0),
            Stage::Waves { complete } => (1, 0, 0, complete),
        };
        h[13] = stage;
        h[16..20].copy_from_slice(&n.to_le_bytes());
        h[20..24].copy_from_slice(&self.carried.resumes.to_le_bytes());
        h[24..32].copy_from_slice(&self.level.size().to_le_bytes());
        h[32..40].copy_from_slice(&done.to_le_bytes());
        h[40..48].copy_from_slice(&bytes.to_le_bytes());
        h[48..52].copy_from_slice(&complete.to_le_bytes());
        h[52..56].copy_from_slice(&self.carried.passes.to_le_bytes());
        let seconds = self.carried.seconds + self.started.elapsed().as_secs_f64();
        h[56..64].copy_from_slice(&seconds.to_le_bytes());
        h[64..72].copy_from_slice(&self.carried.exits_seconds.to_le_bytes());
        h[72..80].copy_from_slice(&self.carried.exits_read.to_le_bytes());
        let mismatches = self.carried.mismatches + self.mismatches.load(Relaxed);
        h[80..88].copy_from_slice(&mismatches.to_le_bytes());
        let digest = xxhash_rust::xxh3::xxh3_64(&h[..88]);
        h[88..96].copy_from_slice(&digest.to_le_bytes());
        let io = |source| TableError::Io {
            path: tmp.clone(),
            source,
        };
        let mut f = File::create(&tmp).map_err(io)?;
        f.write_all(&h).map_err(io)?;
        f.sync_all().map_err(io)?;
        drop(f);
        rename_into_place(&tmp, &path)?;
        Ok(())
    }

    /// The checkpoint in the output directory, checked against the level and its wave files
    /// (`Ok(None)`: none).
    pub(super) fn read_checkpoint(&self) -> Result<Option<(Stage, Carried)>, String> {
        let n = self.level.seeds();
        let path = resume_path(&self.out, n);
        let mut h = [0u8; CKPT_LEN];
        match File::open(&path) {
            Ok(mut f) => f
                .read_exact(&mut h)
                .map_err(|e| format!("{}: {e}", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
        let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().expect("8 bytes"));
        let f64_at = |o: usize| f64::from_le_bytes(h[o..o + 8].try_into().expect("8 bytes"));
        let bad = |why: &str| Err(format!("checkpoint {}: {why}", path.display()));
        if &h[0..8] != CKPT_MAGIC
            || u32_at(8) != 1
            || xxhash_rust::xxh3::xxh3_64(&h[..88]) != u64_at(88)
        {
            return bad("not a valid checkpoint of this version");
        }
        if h[12] != self.rules.code() || u32_at(16) != n || u64_at(24) != self.level.size() {
            return bad(&format!("not of level {n} under {}", self.rules));
        }
        let stage = match h[13] {
            0 if u64_at(32) <= self.level.size() => Stage::Seeds {
                done: u64_at(32),
                bytes: u64_at(40),
            },
            1 => Stage::Waves {
                complete: u32_at(48),
            },
            _ => return bad("unknown stage"),
        };
        // The wave files it relies on must be there.
        match stage {
            Stage::Seeds { bytes, .. } => {
                let len = std::fs::metadata(wave_path(&self.out, n, 0)).map_or(0, |m| m.len());
                if len < bytes {
                    return bad("wave 0 is shorter than it records");
                }
            }
            Stage::Waves { complete } => {
                if let Some(k) = (0..=complete).find(|&k| !wave_path(&self.out, n, k).exists()) {
                    return bad(&format!("wave file {k} is missing"));
                }
            }
        }
        Ok(Some((
            stage,
            Carried {
                seconds: f64_at(56),
                exits_seconds: f64_at(64),
                exits_read: u64_at(72),
                passes: u32_at(52),
                resumes: u32_at(20),
                mismatches: u64_at(80),
            },
        )))
    }
}

const CKPT_MAGIC: &[u8; 8] = b"AWARIDRS";
const CKPT_LEN: usize = 96;
