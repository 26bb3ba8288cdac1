//! The checkpoint of a two-bit level, `level-NN.work/resume`: where the build stands and the
//! length of every file in the work directory, written after each exit bucket and at step
//! boundaries (a few hundred bytes: the states are not in it), and read back when a level
//! opens. While settling, a checkpoint is due once [`CHECKPOINT_SECONDS`] have passed since the
//! last (`AWARI_CHECKPOINT_SECONDS` sets it; 0: at every step): it flushes the log.
//!
//! The states need no copy on disk: at the boundary before step j, with the log flushed, they
//! follow from the files. A position is won or lost if a part file holds it (its value says
//! which), else losable if its exit is −(j+1) … −n or it has none, else open. A resume
//! truncates every listed file to its recorded length, removes the files written since, and
//! rebuilds the states from the files ([`TwoBit::restore_states`]).

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use awari_db::table::rename_into_place;
use awari_db::{level_size, Rules, TableError};
use rayon::prelude::*;

use super::codes::{LOST, WON};
use super::log::decode;
use super::stream::list_batch;
use super::work_files::{part_of, work_dir, ExitList, RecordReader};
use super::{Carried, Stage, TwoBit, CHUNK};
use crate::seed_records::decode_seeds;

/// The checkpoint file: where the level stands, and the work directory's record files.
///
/// ```text
/// offset size  field
///      0    8  magic, b"AWARICKP"
///      8    4  version, u32 LE (2)
///     12    1  rule set code
///     13    1  stage: 0 exits, 1 settle, 2 convert
///     14    1  settle: the next step
///     15    1  reserved, zero
///     16    4  seed count of the level, u32 LE
///     20    4  times the level was resumed so far, u32 LE
///     24    8  positions of the level, u64 LE
///     32    8  exits: positions done, u64 LE
///     40    8  files listed, u64 LE
///     48   40  carried over for the summary: seconds (f64), bytes read, bytes written,
///              exits seconds (f64), exits bytes read from storage (u64 LE each)
///     88    4  exits passes, u32 LE
///     92    4  the exit bucket, in chunks of 2^20 positions, u32 LE
///     96    8  XXH3-64 of the body
///    104   24  reserved, zero
///    128    …  body: per file, its name's length (u8), its name (UTF-8), its length (u64 LE)
/// ```
pub(super) struct Checkpoint {
    pub(super) stage: Stage,
    pub(super) resumes: u32,
    pub(super) carried: Carried,
    pub(super) files: Vec<(String, u64)>,
    /// Positions per exit bucket (and part file).
    pub(super) bucket: u64,
}

/// Seconds between checkpoints while settling, unless `AWARI_CHECKPOINT_SECONDS` says
/// otherwise.
pub(super) const CHECKPOINT_SECONDS: f64 = 300.0;

/// Seconds between checkpoints while settling.
pub(super) fn checkpoint_seconds() -> f64 {
    std::env::var("AWARI_CHECKPOINT_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CHECKPOINT_SECONDS)
}

const CKPT_MAGIC: [u8; 8] = *b"AWARICKP";
const CKPT_VERSION: u32 = 2;
const CKPT_HEADER: usize = 128;
const CKPT_NAME: &str = "resume";
const CKPT_TMP: &str = "resume.tmp";

/// Why a checkpoint was not used (it is then discarded and the level starts over).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct BadCheckpoint(pub(super) String);

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
        let tmp = self.work.join(CKPT_TMP);
        let io = |source| TableError::Io {
            path: tmp.clone(),
            source,
        };
        let mut files: Vec<(String, u64)> = Vec::new();
        for entry in std::fs::read_dir(&self.work).map_err(self.dir_error())? {
            let entry = entry.map_err(self.dir_error())?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !unlisted(&name) {
                files.push((name, entry.metadata().map_err(self.dir_error())?.len()));
            }
        }
        files.sort();
        let mut body = Vec::new();
        for (name, len) in &files {
            body.push(name.len() as u8);
            body.extend_from_slice(name.as_bytes());
            body.extend_from_slice(&len.to_le_bytes());
        }
        let (stage, next) = match self.stage {
            Stage::Exits { .. } => (0u8, 0u8),
            Stage::Settle { next } => (1, next as u8),
            Stage::Convert => (2, 0),
        };
        let done = match self.stage {
            Stage::Exits { done } => done,
            _ => self.level.size(),
        };
        let written = (CKPT_HEADER + body.len()) as u64;
        let elapsed = self.carried.seconds + self.started.elapsed().as_secs_f64();
        let mut h = [0u8; CKPT_HEADER];
        h[0..8].copy_from_slice(&CKPT_MAGIC);
        h[8..12].copy_from_slice(&CKPT_VERSION.to_le_bytes());
        h[12] = self.rules.code();
        h[13] = stage;
        h[14] = next;
        h[16..20].copy_from_slice(&self.level.seeds().to_le_bytes());
        h[20..24].copy_from_slice(&self.resumes.to_le_bytes());
        h[24..32].copy_from_slice(&self.level.size().to_le_bytes());
        h[32..40].copy_from_slice(&done.to_le_bytes());
        h[40..48].copy_from_slice(&(files.len() as u64).to_le_bytes());
        let read = self.carried.read + self.io.read.load(Relaxed);
        let wrote = self.carried.written + self.io.written.load(Relaxed) + written;
        h[48..56].copy_from_slice(&elapsed.to_bits().to_le_bytes());
        h[56..64].copy_from_slice(&read.to_le_bytes());
        h[64..72].copy_from_slice(&wrote.to_le_bytes());
        h[72..80].copy_from_slice(&self.carried.exits_seconds.to_bits().to_le_bytes());
        h[80..88].copy_from_slice(&self.carried.exits_read.to_le_bytes());
        h[88..92].copy_from_slice(&self.carried.passes.to_le_bytes());
        h[92..96].copy_from_slice(&((self.bucket / CHUNK) as u32).to_le_bytes());
        h[96..104].copy_from_slice(&xxhash_rust::xxh3::xxh3_64(&body).to_le_bytes());
        let mut f = File::create(&tmp).map_err(io)?;
        f.write_all(&h).map_err(io)?;
        f.write_all(&body).map_err(io)?;
        f.sync_all().map_err(io)?;
        self.io.written.fetch_add(written, Relaxed);
        rename_into_place(&tmp, &self.work.join(CKPT_NAME))
    }

    /// Bring the work directory back to the checkpoint: files written since removed, listed
    /// ones truncated to their recorded lengths.
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
        Ok(())
    }

    /// The states at the boundary before step `next` (see the module documentation), from
    /// the files.
    pub(super) fn restore_states(&self, next: u32) -> Result<(), TableError> {
        let n = self.level.seeds();
        // (file, whether it is a part file: else an exit list of losable positions)
        let mut files: Vec<(String, bool)> = Vec::new();
        if next < n {
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
            let mut reader = RecordReader::open(&path, 1 << 20, &self.io)?;
            loop {
                let batch = reader.batch(list_batch())?;
                if batch.is_empty() {
                    break;
                }
                batch.par_iter().for_each(|(c, body)| {
                    let start = u64::from(*c) * CHUNK;
                    if part {
                        decode(body, |k, v| {
                            self.set_code(start + u64::from(k), if v > 0 { WON } else { LOST });
                        });
                    } else {
                        for (k, _) in decode_seeds(body) {
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
pub fn checkpoint_stage(dir: &Path, n: u32, rules: Rules) -> Result<Option<Stage>, String> {
    read_checkpoint(&work_dir(dir, n), n, rules)
        .map(|c| c.map(|c| c.stage))
        .map_err(|e| e.0)
}

/// Read the checkpoint of level `n` in its work directory `work`, checking it against the
/// level, the rules and the files (each at least as long as recorded); `Ok(None)` when there
/// is none.
pub(super) fn read_checkpoint(
    work: &Path,
    n: u32,
    rules: Rules,
) -> Result<Option<Checkpoint>, BadCheckpoint> {
    let path = work.join(CKPT_NAME);
    let bad = |why: String| BadCheckpoint(format!("checkpoint {}: {why}", path.display()));
    let mut f = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(bad(e.to_string())),
    };
    let size = level_size(n);
    let mut h = [0u8; CKPT_HEADER];
    f.read_exact(&mut h).map_err(|e| bad(e.to_string()))?;
    let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().expect("8 bytes"));
    if h[0..8] != CKPT_MAGIC || u32_at(8) != CKPT_VERSION {
        return Err(bad("not a checkpoint of this version".into()));
    }
    if h[12] != rules.code() || u32_at(16) != n || u64_at(24) != size {
        return Err(bad(format!("not of level {n} under {rules}")));
    }
    let stage = match (h[13], h[14]) {
        (0, _) if u64_at(32) <= size => Stage::Exits { done: u64_at(32) },
        (1, next) if (1..=n).contains(&u32::from(next)) => Stage::Settle {
            next: u32::from(next),
        },
        (2, _) => Stage::Convert,
        _ => return Err(bad("unknown stage".into())),
    };
    let mut body = Vec::new();
    f.read_to_end(&mut body).map_err(|e| bad(e.to_string()))?;
    if xxhash_rust::xxh3::xxh3_64(&body) != u64_at(96) {
        return Err(bad("its checksum does not match".into()));
    }
    let mut files = Vec::new();
    let mut rest = &body[..];
    for _ in 0..u64_at(40) {
        let len = *rest.first().ok_or_else(|| bad("truncated".into()))? as usize;
        if rest.len() < 1 + len + 8 {
            return Err(bad("truncated".into()));
        }
        let name = String::from_utf8_lossy(&rest[1..1 + len]).into_owned();
        let bytes = u64::from_le_bytes(rest[1 + len..9 + len].try_into().expect("8 bytes"));
        rest = &rest[9 + len..];
        match std::fs::metadata(work.join(&name)) {
            Ok(m) if m.len() >= bytes => {}
            Ok(m) => {
                return Err(bad(format!(
                    "{name} holds {} bytes, {bytes} expected",
                    m.len()
                )))
            }
            Err(e) => return Err(bad(format!("no {name}: {e}"))),
        }
        files.push((name, bytes));
    }
    Ok(Some(Checkpoint {
        stage,
        resumes: u32_at(20),
        carried: Carried {
            seconds: f64::from_bits(u64_at(48)),
            read: u64_at(56),
            written: u64_at(64),
            exits_seconds: f64::from_bits(u64_at(72)),
            exits_read: u64_at(80),
            passes: u32_at(88),
        },
        files,
        bucket: u64::from(u32_at(92)).max(1) * CHUNK,
    }))
}
