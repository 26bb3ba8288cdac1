//! The checkpoint of a two-bit level, `level-NN.resume`: where the build stands, the chunk
//! masks and, while settling, the states, written at every step boundary (and after each exit
//! bucket) and read back, checked against the level and its work file, when a level opens.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use awari_db::table::{rename_into_place, HEADER_LEN};
use awari_db::{level_size, Rules, TableError};

use super::budget::chunk_count;
use super::work_files::{work_paths, IoCount};
use super::{Carried, Stage, TwoBit, PER_WORD};
use crate::state::StateArray;

/// The checkpoint file: where the level stands, the chunk masks and, while settling, the
/// states.
///
/// ```text
/// offset size  field
///      0    8  magic, b"AWARICKP"
///      8    4  version, u32 LE (1)
///     12    1  rule set code
///     13    1  stage: 0 exits, 1 settle, 2 convert
///     14    1  settle: the next step
///     15    1  1 when the states follow the masks (else all are 0: open)
///     16    4  seed count of the level, u32 LE
///     20    4  times the level was resumed so far, u32 LE
///     24    8  positions of the level, u64 LE
///     32    8  exits: positions done, u64 LE
///     40    8  chunks, u64 LE
///     48   40  carried over for the summary: seconds (f64), bytes read, bytes written,
///              exits seconds (f64), exits bytes read from storage (u64 LE each)
///     88    4  exits passes, u32 LE
///     92    4  reserved
///     96    8  XXH3-64 of the body
///    104   24  reserved, zero
///    128    …  body: per chunk its exit mask (u128 LE), then per chunk 1 byte (1: values
///              to write), then the states (u64 LE words, 32 positions each) if present
/// ```
pub(super) struct Checkpoint {
    pub(super) stage: Stage,
    pub(super) resumes: u32,
    pub(super) carried: Carried,
    pub(super) masks: Vec<u128>,
    pub(super) pending: Vec<bool>,
}

const CKPT_MAGIC: [u8; 8] = *b"AWARICKP";
const CKPT_VERSION: u32 = 1;
pub(super) const CKPT_HEADER: usize = 128;

/// Why a checkpoint was not used (it is then discarded and the level starts over).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct BadCheckpoint(pub(super) String);

impl TwoBit<'_> {
    /// Sync the work file and write the checkpoint of where the build stands (with the states
    /// when `with_state`), atomically.
    pub(super) fn checkpoint(&self, with_state: bool) -> Result<(), TableError> {
        self.work.file.sync_data().map_err(self.work.io())?;
        let tmp = &self.ckpt_tmp;
        let io = |source| TableError::Io {
            path: tmp.clone(),
            source,
        };
        let mut body = Vec::with_capacity(self.chunks.masks.len() * 17);
        for m in &self.chunks.masks {
            body.extend_from_slice(&m.to_le_bytes());
        }
        for p in &self.chunks.pending {
            body.push(u8::from(p.load(Relaxed)));
        }
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(&body);
        let words = self.words();
        let (stage, next) = match self.stage {
            Stage::Exits { .. } => (0u8, 0u8),
            Stage::Settle { next } => (1, next as u8),
            Stage::Convert => (2, 0),
        };
        let done = match self.stage {
            Stage::Exits { done } => done,
            _ => self.level.size(),
        };
        let mut f = File::create(tmp).map_err(io)?;
        f.write_all(&[0u8; CKPT_HEADER]).map_err(io)?;
        f.write_all(&body).map_err(io)?;
        let mut written = (CKPT_HEADER + body.len()) as u64;
        if with_state {
            let mut buf = Vec::with_capacity(1 << 20);
            for block in words.chunks(1 << 17) {
                buf.clear();
                for w in block {
                    buf.extend_from_slice(&w.load(Relaxed).to_le_bytes());
                }
                hasher.update(&buf);
                f.write_all(&buf).map_err(io)?;
                written += buf.len() as u64;
            }
        }
        let elapsed = self.carried.seconds + self.started.elapsed().as_secs_f64();
        let mut h = [0u8; CKPT_HEADER];
        h[0..8].copy_from_slice(&CKPT_MAGIC);
        h[8..12].copy_from_slice(&CKPT_VERSION.to_le_bytes());
        h[12] = self.rules.code();
        h[13] = stage;
        h[14] = next;
        h[15] = u8::from(with_state);
        h[16..20].copy_from_slice(&self.level.seeds().to_le_bytes());
        h[20..24].copy_from_slice(&self.resumes.to_le_bytes());
        h[24..32].copy_from_slice(&self.level.size().to_le_bytes());
        h[32..40].copy_from_slice(&done.to_le_bytes());
        h[40..48].copy_from_slice(&(self.chunks.masks.len() as u64).to_le_bytes());
        let read = self.carried.read + self.io.read.load(Relaxed);
        let wrote = self.carried.written + self.io.written.load(Relaxed) + written;
        h[48..56].copy_from_slice(&elapsed.to_bits().to_le_bytes());
        h[56..64].copy_from_slice(&read.to_le_bytes());
        h[64..72].copy_from_slice(&wrote.to_le_bytes());
        h[72..80].copy_from_slice(&self.carried.exits_seconds.to_bits().to_le_bytes());
        h[80..88].copy_from_slice(&self.carried.exits_read.to_le_bytes());
        h[88..92].copy_from_slice(&self.carried.passes.to_le_bytes());
        h[96..104].copy_from_slice(&hasher.digest().to_le_bytes());
        f.write_all_at(&h, 0).map_err(io)?;
        f.sync_all().map_err(io)?;
        // The checkpoint is read only on a resume: keep the page cache for the work file.
        let _ = rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed);
        self.io.written.fetch_add(written, Relaxed);
        rename_into_place(tmp, &self.ckpt_path)
    }
}

/// Where the two-bit build of level `n` in `dir` stands, from its checkpoint (`Ok(None)`: it
/// has none). The whole checkpoint is read and checked, as a resume would.
pub fn checkpoint_stage(dir: &Path, n: u32, rules: Rules) -> Result<Option<Stage>, String> {
    let [work, _, ckpt, _] = work_paths(dir, n);
    let state =
        StateArray::new(level_size(n).div_ceil(PER_WORD) as usize).map_err(|e| e.to_string())?;
    read_checkpoint(&ckpt, &work, n, rules, &state, &IoCount::default())
        .map(|c| c.map(|c| c.stage))
        .map_err(|e| e.0)
}

/// Read the checkpoint of level `n` into `state`, checking it against the level, the rules
/// and the work file; `Ok(None)` when there is none.
pub(super) fn read_checkpoint(
    path: &Path,
    work: &Path,
    n: u32,
    rules: Rules,
    state: &StateArray<AtomicU64>,
    io: &IoCount,
) -> Result<Option<Checkpoint>, BadCheckpoint> {
    let bad = |why: String| BadCheckpoint(format!("checkpoint {}: {why}", path.display()));
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(bad(e.to_string())),
    };
    let size = level_size(n);
    match std::fs::metadata(work) {
        Ok(m) if m.len() == HEADER_LEN as u64 + size => {}
        Ok(m) => {
            return Err(bad(format!(
                "the work file holds {} bytes, expected {}",
                m.len(),
                HEADER_LEN as u64 + size
            )))
        }
        Err(e) => return Err(bad(format!("no work file {}: {e}", work.display()))),
    }
    let mut h = [0u8; CKPT_HEADER];
    f.read_exact(&mut h).map_err(|e| bad(e.to_string()))?;
    let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().expect("8 bytes"));
    let chunks = chunk_count(n);
    if h[0..8] != CKPT_MAGIC || u32_at(8) != CKPT_VERSION {
        return Err(bad("not a checkpoint of this version".into()));
    }
    if h[12] != rules.code() || u32_at(16) != n || u64_at(24) != size || u64_at(40) != chunks {
        return Err(bad(format!("not of level {n} under {rules}")));
    }
    let stage = match (h[13], h[14]) {
        (0, _) if u64_at(32) <= size => Stage::Exits { done: u64_at(32) },
        (1, next) if u32::from(next) <= n => Stage::Settle {
            next: u32::from(next),
        },
        (2, _) => Stage::Convert,
        _ => return Err(bad("unknown stage".into())),
    };
    let mut body = vec![0u8; chunks as usize * 17];
    f.read_exact(&mut body).map_err(|e| bad(e.to_string()))?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(&body);
    let masks = body[..chunks as usize * 16]
        .chunks_exact(16)
        .map(|m| u128::from_le_bytes(m.try_into().expect("16 bytes")))
        .collect();
    let pending = body[chunks as usize * 16..]
        .iter()
        .map(|&p| p == 1)
        .collect();
    let mut read = CKPT_HEADER as u64 + body.len() as u64;
    if h[15] == 1 {
        let mut buf = vec![0u8; 1 << 20];
        for block in state.words().chunks(1 << 17) {
            let bytes = &mut buf[..block.len() * 8];
            f.read_exact(bytes).map_err(|e| bad(e.to_string()))?;
            hasher.update(bytes);
            for (w, b) in block.iter().zip(bytes.chunks_exact(8)) {
                w.store(u64::from_le_bytes(b.try_into().expect("8 bytes")), Relaxed);
            }
            read += bytes.len() as u64;
        }
    }
    if hasher.digest() != u64_at(96) {
        return Err(bad("its checksum does not match".into()));
    }
    io.read.fetch_add(read, Relaxed);
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
        masks,
        pending,
    }))
}
