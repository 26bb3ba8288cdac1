//! The checkpoint of a class pass, `level-NN.dclasses`: where it stands (in phase 1, after a
//! class, or after a wave of a class), the lengths of the class lists, and what the classes
//! done found (the histogram, the unproven positions), written after each bucket of phase 1,
//! each class and each durable wave, and read back, checked against the level and its work
//! files, when a pass opens.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use awari_db::table::{rename_into_place, tmp_path};
use awari_db::TableError;

use super::lists::list_path;
use super::search::class_wave_path;
use super::{ClassCarried, ClassPass, ClassStage, LISTS};
use crate::depth::{DepthError, Inconsistent, Unproven};

const MAGIC: &[u8; 8] = b"AWARIDCL";
/// Bytes before the list lengths.
const HEAD: usize = 128;
/// The format's version.
const VERSION: u32 = 2;
/// Flags (byte 108): phase 1 checks the values.
const CHECKED: u8 = 1;
/// Flags (byte 108): the checksum of the table's data is recorded.
const CHECKSUM: u8 = 2;

/// The checkpoint of level `n`'s class pass in `dir`.
pub(crate) fn class_resume_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("level-{n:02}.dclasses"))
}

impl ClassPass<'_> {
    /// Write where the pass stands to `level-NN.dclasses` (to `.tmp`, synced, renamed).
    ///
    /// ```text
    /// offset      size  field
    ///      0         8  magic, b"AWARIDCL"
    ///      8         4  version, u32 LE (2)
    ///     12         1  rule set code
    ///     13         1  stage: 0 lists, 1 classes, 2 a wave of a class
    ///     14         1  stage 1: the last complete class; stage 2: the class in progress
    ///     15         1  reserved
    ///     16         4  seed count of the level, u32 LE
    ///     20         4  resumes so far, u32 LE
    ///     24         8  positions of the level, u64 LE
    ///     32         8  stage 0: positions listed, u64 LE
    ///     40         4  stage 2: the last complete wave of the class, u32 LE
    ///     44         4  exits passes, u32 LE
    ///     48         8  seconds so far (f64 LE)
    ///     56         8  exits seconds (f64 LE)
    ///     64         8  exits bytes read from storage, u64 LE
    ///     72         8  draws, u64 LE
    ///     80         8  unproven positions of the classes done, u64 LE
    ///     88         4  H: histogram entries, u32 LE
    ///     92         4  E: unproven examples kept, u32 LE
    ///     96         8  value check: wrong entries of the buckets done, u64 LE
    ///    104         4  M: wrong entries kept, u32 LE
    ///    108         1  flags: 1 the values are checked, 2 the checksum is recorded
    ///    109         3  reserved
    ///    112         8  value check of a plain table: its data's checksum (bucket 0), u64 LE
    ///    120         8  reserved
    ///    128     8×256  bytes of each class list (won +1, lost −1, won +2, …), u64 LE
    ///   2176       8×H  positions per depth (index 0 unused), u64 LE
    ///      …      16×E  examples: index u64 LE, stored value i8, 7 reserved
    ///      …         …  M wrong entries, by index: index u64 LE, L u32 LE, L bytes of
    ///                   UTF-8 (what is wrong)
    ///      …         8  XXH3-64 of everything before
    /// ```
    pub(super) fn write_checkpoint(&self) -> Result<(), DepthError> {
        let n = self.level.seeds();
        let path = class_resume_path(&self.out, n);
        let tmp = tmp_path(&path);
        let mut h = vec![0u8; HEAD];
        h[0..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[12] = self.rules.code();
        let (stage, class, listed, complete) = match self.stage {
            ClassStage::Lists { done } => (0, 0, done, 0),
            ClassStage::Classes { done } => (1, done, 0, 0),
            ClassStage::Wave { class, complete } => (2, class, 0, complete),
        };
        h[13] = stage;
        h[14] = class;
        h[16..20].copy_from_slice(&n.to_le_bytes());
        h[20..24].copy_from_slice(&self.carried.resumes.to_le_bytes());
        h[24..32].copy_from_slice(&self.level.size().to_le_bytes());
        h[32..40].copy_from_slice(&listed.to_le_bytes());
        h[40..44].copy_from_slice(&complete.to_le_bytes());
        h[44..48].copy_from_slice(&self.carried.passes.to_le_bytes());
        let seconds = self.carried.seconds + self.started.elapsed().as_secs_f64();
        h[48..56].copy_from_slice(&seconds.to_le_bytes());
        h[56..64].copy_from_slice(&self.carried.exits_seconds.to_le_bytes());
        h[64..72].copy_from_slice(&self.carried.exits_read.to_le_bytes());
        h[72..80].copy_from_slice(&self.carried.draws.to_le_bytes());
        h[80..88].copy_from_slice(&self.unproven.to_le_bytes());
        h[88..92].copy_from_slice(&(self.histogram.len() as u32).to_le_bytes());
        h[92..96].copy_from_slice(&(self.examples.len() as u32).to_le_bytes());
        h[96..104].copy_from_slice(&self.carried.mismatches.to_le_bytes());
        h[104..108].copy_from_slice(&(self.mismatch_examples.len() as u32).to_le_bytes());
        h[108] = if self.carried.checked { CHECKED } else { 0 }
            | if self.carried.checksum.is_some() {
                CHECKSUM
            } else {
                0
            };
        h[112..120].copy_from_slice(&self.carried.checksum.unwrap_or(0).to_le_bytes());
        for &len in &self.lists {
            h.extend_from_slice(&len.to_le_bytes());
        }
        for &c in &self.histogram {
            h.extend_from_slice(&c.to_le_bytes());
        }
        for u in &self.examples {
            h.extend_from_slice(&u.index.to_le_bytes());
            h.push(u.value as u8);
            h.extend_from_slice(&[0; 7]);
        }
        for m in &self.mismatch_examples {
            h.extend_from_slice(&m.index.to_le_bytes());
            h.extend_from_slice(&(m.what.len() as u32).to_le_bytes());
            h.extend_from_slice(m.what.as_bytes());
        }
        let digest = xxhash_rust::xxh3::xxh3_64(&h);
        h.extend_from_slice(&digest.to_le_bytes());
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

    /// Read the checkpoint in the output directory into the pass, checked against the level
    /// and its work files: `Ok(false)` if there is none.
    pub(super) fn read_checkpoint(&mut self) -> Result<bool, String> {
        let n = self.level.seeds();
        let path = class_resume_path(&self.out, n);
        let mut h = Vec::new();
        match File::open(&path) {
            Ok(mut f) => f
                .read_to_end(&mut h)
                .map_err(|e| format!("{}: {e}", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let bad = |why: &str| Err(format!("checkpoint {}: {why}", path.display()));
        if h.len() < HEAD + 8 * LISTS + 8 {
            return bad("too short");
        }
        let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().expect("8 bytes"));
        let f64_at = |o: usize| f64::from_le_bytes(h[o..o + 8].try_into().expect("8 bytes"));
        let (hist, ex) = (u32_at(88) as usize, u32_at(92) as usize);
        if &h[0..8] != MAGIC || u32_at(8) != VERSION {
            return bad("not a valid checkpoint of this version");
        }
        // The wrong entries kept, each of its own length.
        let mut wrong = Vec::new();
        let mut end = (HEAD + 8 * LISTS)
            .saturating_add(8usize.saturating_mul(hist))
            .saturating_add(16usize.saturating_mul(ex));
        for _ in 0..u32_at(104) {
            if end.saturating_add(12) > h.len() {
                return bad("too short");
            }
            let len = u32_at(end + 8) as usize;
            let text = end + 12;
            if text.saturating_add(len) > h.len() {
                return bad("too short");
            }
            let Ok(what) = std::str::from_utf8(&h[text..text + len]) else {
                return bad("a wrong entry's text is not UTF-8");
            };
            wrong.push((u64_at(end), what.to_string()));
            end = text + len;
        }
        if h.len() != end + 8 || hist == 0 || xxhash_rust::xxh3::xxh3_64(&h[..end]) != u64_at(end) {
            return bad("not a valid checkpoint of this version");
        }
        if h[12] != self.rules.code() || u32_at(16) != n || u64_at(24) != self.level.size() {
            return bad(&format!("not of level {n} under {}", self.rules));
        }
        let stage = match h[13] {
            0 if u64_at(32) <= self.level.size() => ClassStage::Lists { done: u64_at(32) },
            1 => ClassStage::Classes { done: h[14] },
            2 if h[14] > 0 => ClassStage::Wave {
                class: h[14],
                complete: u32_at(40),
            },
            _ => return bad("unknown stage"),
        };
        let lists: Vec<u64> = (0..LISTS).map(|x| u64_at(HEAD + 8 * x)).collect();
        // The files it relies on must be there: the lists of the classes not done, at least
        // as long as recorded, and the waves of the class in progress.
        let first_open = match stage {
            ClassStage::Lists { .. } => 1,
            ClassStage::Classes { done } => u16::from(done) + 1,
            ClassStage::Wave { class, .. } => u16::from(class),
        };
        for (x, &len) in lists.iter().enumerate() {
            let v = (x / 2 + 1) as u16;
            if len == 0 || v < first_open {
                continue;
            }
            let p = list_path(&self.out, n, v as u8, x % 2 == 0);
            if std::fs::metadata(&p).map_or(0, |m| m.len()) < len {
                return bad(&format!("{} is shorter than it records", p.display()));
            }
        }
        if let ClassStage::Wave { class, complete } = stage {
            for k in 0..=complete {
                for won in [true, false] {
                    let p = class_wave_path(&self.out, n, class, won, k);
                    if !p.exists() {
                        return bad(&format!("{} is missing", p.display()));
                    }
                }
            }
        }
        let at = HEAD + 8 * LISTS;
        let first_example = at + 8 * hist;
        if (0..ex).any(|i| u64_at(first_example + 16 * i) >= self.level.size())
            || wrong.iter().any(|&(index, _)| index >= self.level.size())
        {
            return bad("an example outside the level");
        }
        self.histogram = (0..hist).map(|i| u64_at(at + 8 * i)).collect();
        let at = at + 8 * hist;
        self.examples = (0..ex)
            .map(|i| {
                let index = u64_at(at + 16 * i);
                Unproven {
                    index,
                    board: self.level.unrank(index),
                    value: h[at + 16 * i + 8] as i8,
                }
            })
            .collect();
        self.mismatch_examples = wrong
            .into_iter()
            .map(|(index, what)| Inconsistent {
                index,
                board: self.level.unrank(index),
                what,
            })
            .collect();
        self.unproven = u64_at(80);
        self.lists = lists;
        self.stage = stage;
        self.carried = ClassCarried {
            seconds: f64_at(48),
            exits_seconds: f64_at(56),
            exits_read: u64_at(64),
            passes: u32_at(44),
            resumes: u32_at(20),
            draws: u64_at(72),
            checked: h[108] & CHECKED != 0,
            mismatches: u64_at(96),
            checksum: (h[108] & CHECKSUM != 0).then(|| u64_at(112)),
        };
        Ok(true)
    }
}
