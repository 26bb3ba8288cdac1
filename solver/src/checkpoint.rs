//! The one codec of every checkpoint: the build's (two-bit `level-NN.work/resume`, low-memory
//! `level-NN.lowmem/resume`, in memory the head of `level-NN.mstate`), the depth pass's
//! `level-NN.dresume`, the class pass's `level-NN.dclasses` and the streamed check's
//! `level-NN.vresume`. Each kind has its own
//! magic and version, and its own fields, written and read in order by [`Fields`] and
//! [`FieldReader`]; the frame, the checksum over every byte and the atomic write are here,
//! once.
//!
//! ```text
//! offset  size  field
//!      0     8  magic, the kind's own (b"AWARICKP", b"AWARILMR", b"AWARIMST", b"AWARIDRS",
//!               b"AWARIDCL", b"AWARIVRS")
//!      8     4  version of the kind's fields, u32 LE
//!     12     4  F: bytes of the fields, u32 LE
//!     16     F  the fields, in the order the kind writes them: integers LE, f64 as its bits
//!               LE, byte strings as a u32 LE length and the bytes
//!   16+F     8  XXH3-64 of bytes 0..16+F
//! ```
//!
//! A checkpoint may also be the head of a larger file, zero-padded to a fixed length, its
//! body after it (the in-memory build's saved state: [`Fields::head`], [`read_head`]).
//!
//! A checkpoint is written to `NAME.tmp`, synced, and renamed over `NAME` (the directory
//! synced after), so that a kill leaves the old one or the new one. Reading refuses anything
//! that is not a regular file, longer than [`MAX_LEN`], of another magic or version, whose
//! checksum fails, or whose fields run past their end or stop short of it: a checkpoint is
//! believed whole or not at all, and a pass that cannot believe its checkpoint starts afresh,
//! saying why.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use awari_db::table::{rename_into_place, tmp_path};
use awari_db::TableError;
use xxhash_rust::xxh3::xxh3_64;

/// The longest checkpoint read: far above any written (a class pass's keeps a few thousand
/// examples), far below what would hurt to allocate.
pub(crate) const MAX_LEN: u64 = 64 << 20;

/// What a checkpoint records of the work files it relies on whose lengths it does not record
/// one by one: the XXH3-64 of their lengths, in an order its reader enumerates them in again
/// (u64 LE each; `u64::MAX` for a file missing). A file missing, cut or grown since (a record
/// dropped at a record boundary, which the records' own checks cannot see) changes it.
pub(crate) fn lengths_digest(files: impl IntoIterator<Item = PathBuf>) -> u64 {
    let bytes: Vec<u8> = files
        .into_iter()
        .flat_map(|p| {
            std::fs::metadata(p)
                .map_or(u64::MAX, |m| m.len())
                .to_le_bytes()
        })
        .collect();
    xxh3_64(&bytes)
}
const FRAME: usize = 16;

/// Seconds between checkpoints of a level build while it settles (two-bit, low-memory), unless
/// `AWARI_CHECKPOINT_SECONDS` says otherwise.
pub(crate) const CHECKPOINT_SECONDS: f64 = 300.0;
/// The largest time a checkpoint may carry over: about 31 years.
pub(crate) const SECONDS_MAX: f64 = 1e9;
/// The largest running total a checkpoint may carry over: 2^60 (an exbibyte), so that two of
/// them add without overflow.
pub(crate) const TALLY_MAX: u64 = 1 << 60;
/// The same for a `u32` total (passes, resumes).
pub(crate) const TALLY_MAX_U32: u32 = 1 << 30;

/// Seconds between checkpoints while settling: [`CHECKPOINT_SECONDS`], or
/// `AWARI_CHECKPOINT_SECONDS` (0: at every step).
pub(crate) fn checkpoint_seconds() -> f64 {
    std::env::var("AWARI_CHECKPOINT_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CHECKPOINT_SECONDS)
}

/// One kind of checkpoint: its magic and the version of its fields.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Kind {
    pub(crate) magic: [u8; 8],
    pub(crate) version: u32,
}

/// Why a checkpoint is not used.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// It could not be read (other than by its absence).
    #[error("checkpoint {}: {source}", path.display())]
    Io {
        /// The checkpoint.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// It is damaged, of another format or version, or of another level or rule set, or the
    /// work files it relies on are not as it records.
    #[error("checkpoint {}: {why}", path.display())]
    Unusable {
        /// The checkpoint.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

impl CheckpointError {
    /// An unusable checkpoint at `path`, for `why`.
    pub(crate) fn unusable(path: &Path, why: impl Into<String>) -> CheckpointError {
        CheckpointError::Unusable {
            path: path.to_path_buf(),
            why: why.into(),
        }
    }
}

/// The fields of a checkpoint being written, in order.
#[derive(Default)]
pub(crate) struct Fields {
    buf: Vec<u8>,
}

impl Fields {
    pub(crate) fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }

    pub(crate) fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub(crate) fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub(crate) fn f64(&mut self, v: f64) -> &mut Self {
        self.u64(v.to_bits())
    }

    /// A byte string: its length (u32 LE), then its bytes.
    pub(crate) fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.u32(v.len() as u32);
        self.buf.extend_from_slice(v);
        self
    }

    /// The whole file: frame, fields, checksum.
    fn encode(&self, kind: Kind) -> Vec<u8> {
        let mut out = Vec::with_capacity(FRAME + self.buf.len() + 8);
        out.extend_from_slice(&kind.magic);
        out.extend_from_slice(&kind.version.to_le_bytes());
        out.extend_from_slice(&(self.buf.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.buf);
        let digest = xxh3_64(&out);
        out.extend_from_slice(&digest.to_le_bytes());
        out
    }

    /// The frame, fields and checksum as bytes, zero-padded to `len` (the head of a file
    /// whose body follows: [`read_head`]); `None` if they take more than `len`.
    pub(crate) fn head(&self, kind: Kind, len: usize) -> Option<Vec<u8>> {
        let mut bytes = self.encode(kind);
        (bytes.len() <= len).then(|| {
            bytes.resize(len, 0);
            bytes
        })
    }

    /// Write the checkpoint of `kind` to `path` atomically (`.tmp`, synced, renamed); returns
    /// the bytes written.
    pub(crate) fn write(&self, path: &Path, kind: Kind) -> Result<u64, TableError> {
        let bytes = self.encode(kind);
        let tmp = tmp_path(path);
        let io = |source| TableError::Io {
            path: tmp.clone(),
            source,
        };
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(&bytes).map_err(io)?;
        f.sync_all().map_err(io)?;
        drop(f);
        rename_into_place(&tmp, path)?;
        Ok(bytes.len() as u64)
    }
}

/// The fields of a checkpoint read back, in the order they were written.
pub(crate) struct FieldReader {
    path: PathBuf,
    fields: Vec<u8>,
    at: usize,
}

/// The metadata of the checkpoint at `path`, not following a link (`Ok(None)`: there is none).
pub(crate) fn metadata(path: &Path) -> Result<Option<std::fs::Metadata>, CheckpointError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(CheckpointError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Read the checkpoint of `kind` at `path` (`Ok(None)`: there is none), checked whole (see
/// the module documentation).
pub(crate) fn read(path: &Path, kind: Kind) -> Result<Option<FieldReader>, CheckpointError> {
    let io = |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    };
    let Some(meta) = metadata(path)? else {
        return Ok(None);
    };
    if !meta.is_file() {
        return Err(CheckpointError::unusable(path, "not a regular file"));
    }
    if meta.len() > MAX_LEN {
        return Err(CheckpointError::unusable(
            path,
            format!("{} bytes, more than a checkpoint holds", meta.len()),
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_LEN + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    decode(path, kind, bytes).map(Some)
}

/// Read the checkpoint of `kind` written by [`Fields::head`] as the first `len` bytes of
/// `file` (at `path`, for the errors): checked whole as [`read`] checks a file, and the
/// padding after it required to be zeros.
pub(crate) fn read_head(
    path: &Path,
    file: &mut impl Read,
    kind: Kind,
    len: usize,
) -> Result<FieldReader, CheckpointError> {
    let mut bytes = vec![0u8; len];
    file.read_exact(&mut bytes).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            CheckpointError::unusable(path, format!("shorter than its {len}-byte head"))
        } else {
            CheckpointError::Io {
                path: path.to_path_buf(),
                source: e,
            }
        }
    })?;
    if len >= FRAME {
        let fields = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes")) as usize;
        let end = (FRAME + 8).saturating_add(fields).min(len);
        // The padding is checked too: every byte of the head is one the writer wrote.
        if bytes[end..].iter().any(|&b| b != 0) {
            return Err(CheckpointError::unusable(
                path,
                "a byte that is not zero in its head's padding (damaged)",
            ));
        }
        bytes.truncate(end);
    }
    decode(path, kind, bytes)
}

/// Check a checkpoint's bytes and hand out its fields.
fn decode(path: &Path, kind: Kind, mut bytes: Vec<u8>) -> Result<FieldReader, CheckpointError> {
    let bad = |why: String| CheckpointError::unusable(path, why);
    if bytes.len() < FRAME + 8 {
        return Err(bad(format!("too short ({} bytes)", bytes.len())));
    }
    if bytes[0..8] != kind.magic {
        return Err(bad("not a checkpoint of this kind (bad magic)".into()));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != kind.version {
        return Err(bad(format!(
            "version {version}, this program writes {}",
            kind.version
        )));
    }
    let len = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes")) as usize;
    if bytes.len() != FRAME + len + 8 {
        return Err(bad(format!(
            "{} bytes, its frame says {}",
            bytes.len(),
            FRAME + len + 8
        )));
    }
    let end = FRAME + len;
    let digest = u64::from_le_bytes(bytes[end..].try_into().expect("8 bytes"));
    if xxh3_64(&bytes[..end]) != digest {
        return Err(bad("its checksum does not match (damaged)".into()));
    }
    bytes.truncate(end);
    Ok(FieldReader {
        path: path.to_path_buf(),
        fields: bytes,
        at: FRAME,
    })
}

impl FieldReader {
    /// An unusable checkpoint: this one, for `why`.
    pub(crate) fn unusable(&self, why: impl Into<String>) -> CheckpointError {
        CheckpointError::unusable(&self.path, why)
    }

    fn take(&mut self, n: usize) -> Result<&[u8], CheckpointError> {
        if self.fields.len() - self.at < n {
            return Err(self.unusable("its fields end early"));
        }
        self.at += n;
        Ok(&self.fields[self.at - n..self.at])
    }

    pub(crate) fn u8(&mut self) -> Result<u8, CheckpointError> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u32(&mut self) -> Result<u32, CheckpointError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, CheckpointError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    pub(crate) fn f64(&mut self) -> Result<f64, CheckpointError> {
        self.u64().map(f64::from_bits)
    }

    /// Seconds that earlier runs took: an `f64` from 0 to [`SECONDS_MAX`], else refused (so
    /// that what a resume adds to it is a time).
    pub(crate) fn seconds(&mut self) -> Result<f64, CheckpointError> {
        let s = self.f64()?;
        if !(0.0..=SECONDS_MAX).contains(&s) {
            return Err(self.unusable(format!("a time of {s} s that no run takes")));
        }
        Ok(s)
    }

    /// A running total (bytes, entries) as a `u64` of at most [`TALLY_MAX`], else refused, so
    /// that what a resume adds to it cannot overflow.
    pub(crate) fn tally(&mut self) -> Result<u64, CheckpointError> {
        let t = self.u64()?;
        if t > TALLY_MAX {
            return Err(self.unusable(format!("a total of {t} that no run reaches")));
        }
        Ok(t)
    }

    /// [`FieldReader::tally`] of a `u32` (passes, resumes), at most [`TALLY_MAX_U32`].
    pub(crate) fn tally_u32(&mut self) -> Result<u32, CheckpointError> {
        let t = self.u32()?;
        if t > TALLY_MAX_U32 {
            return Err(self.unusable(format!("a count of {t} that no run reaches")));
        }
        Ok(t)
    }

    /// A byte string (see [`Fields::bytes`]).
    pub(crate) fn bytes(&mut self) -> Result<Vec<u8>, CheckpointError> {
        let len = self.u32()? as usize;
        self.take(len).map(<[u8]>::to_vec)
    }

    /// A UTF-8 string written as [`Fields::bytes`].
    pub(crate) fn string(&mut self) -> Result<String, CheckpointError> {
        String::from_utf8(self.bytes()?).map_err(|_| self.unusable("a name that is not UTF-8"))
    }

    /// A count of items of at least `item` bytes each still to read: refused if the fields
    /// left cannot hold them (so that nothing is allocated from a count alone).
    pub(crate) fn count(&mut self, item: usize) -> Result<usize, CheckpointError> {
        let n = self.u64()?;
        let left = (self.fields.len() - self.at) as u64;
        if n.saturating_mul(item.max(1) as u64) > left {
            return Err(self.unusable(format!("a count of {n} that its fields cannot hold")));
        }
        Ok(n as usize)
    }

    /// Every field read: anything left over is refused.
    pub(crate) fn finish(self) -> Result<(), CheckpointError> {
        if self.at != self.fields.len() {
            return Err(self.unusable("fields left over"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIND: Kind = Kind {
        magic: *b"AWARITST",
        version: 3,
    };

    fn sample_fields() -> Fields {
        let mut f = Fields::default();
        f.u8(7)
            .u32(1234)
            .u64(u64::MAX - 5)
            .f64(2.5)
            .bytes(b"exit+05");
        f
    }

    fn sample() -> Vec<u8> {
        sample_fields().encode(KIND)
    }

    type Sample = (u8, u32, u64, f64, String);

    /// The fields of [`sample_fields`], read back whole.
    fn read_sample(mut r: FieldReader) -> Result<Sample, CheckpointError> {
        let got = (r.u8()?, r.u32()?, r.u64()?, r.f64()?, r.string()?);
        r.finish()?;
        Ok(got)
    }

    fn parse(bytes: Vec<u8>) -> Result<Sample, CheckpointError> {
        read_sample(decode(Path::new("ckpt"), KIND, bytes)?)
    }

    #[test]
    fn fields_round_trip() {
        assert_eq!(
            parse(sample()).unwrap(),
            (7, 1234, u64::MAX - 5, 2.5, "exit+05".to_string())
        );
    }

    #[test]
    fn every_changed_byte_and_every_cut_is_refused() {
        let good = sample();
        for at in 0..good.len() {
            for flip in [1u8, 0x40, 0xff] {
                let mut bad = good.clone();
                bad[at] ^= flip;
                assert!(parse(bad).is_err(), "byte {at} ^ {flip:#x} believed");
            }
        }
        for len in 0..good.len() {
            assert!(
                parse(good[..len].to_vec()).is_err(),
                "cut at {len} believed"
            );
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(parse(longer).is_err());
    }

    #[test]
    fn a_head_round_trips_and_a_changed_byte_or_a_cut_in_it_is_refused() {
        let good = sample();
        let parse_head =
            |bytes: &[u8]| read_sample(read_head(Path::new("state"), &mut &bytes[..], KIND, 64)?);
        let f = sample_fields();
        assert!(
            f.head(KIND, good.len() - 1).is_none(),
            "a head longer than asked"
        );
        let mut file = f.head(KIND, 64).unwrap();
        assert_eq!(file.len(), 64);
        assert_eq!(&file[..good.len()], &good[..]);
        file.extend_from_slice(b"the body, not read");
        assert_eq!(parse_head(&file).unwrap(), parse(good.clone()).unwrap());
        for at in 0..good.len() {
            let mut bad = file.clone();
            bad[at] ^= 0x40;
            assert!(parse_head(&bad).is_err(), "byte {at} changed, believed");
        }
        assert!(parse_head(&file[..63]).is_err(), "a cut head believed");
        for at in good.len()..64 {
            let mut bad = file.clone();
            bad[at] = 1;
            assert!(
                parse_head(&bad).is_err(),
                "padding byte {at} changed, believed"
            );
        }
    }

    #[test]
    fn fields_read_past_their_end_or_left_over_are_refused() {
        let mut f = Fields::default();
        f.u32(5);
        let bytes = f.encode(KIND);
        let mut r = decode(Path::new("x"), KIND, bytes.clone()).unwrap();
        assert!(r.u64().is_err());
        let r = decode(Path::new("x"), KIND, bytes.clone()).unwrap();
        assert!(r.finish().is_err());
        // A count its fields cannot hold allocates nothing.
        let mut f = Fields::default();
        f.u64(u64::MAX).u64(0);
        let mut r = decode(Path::new("x"), KIND, f.encode(KIND)).unwrap();
        assert!(r.count(8).is_err());
    }

    /// Times and running totals a resume adds to are read only where the sum is one: a time
    /// from 0 to `SECONDS_MAX` (no NaN, no infinity), a total up to `TALLY_MAX`.
    #[test]
    fn times_and_totals_no_run_reaches_are_refused() {
        let one = |f: &dyn Fn(&mut Fields), read: &dyn Fn(&mut FieldReader) -> bool| {
            let mut fields = Fields::default();
            f(&mut fields);
            read(&mut decode(Path::new("x"), KIND, fields.encode(KIND)).unwrap())
        };
        for (s, ok) in [
            (0.0, true),
            (12.5, true),
            (SECONDS_MAX, true),
            (-1.0, false),
            (f64::NAN, false),
            (f64::INFINITY, false),
            (SECONDS_MAX * 2.0, false),
        ] {
            assert_eq!(one(&|f| _ = f.f64(s), &|r| r.seconds().is_ok()), ok, "{s}");
        }
        for (t, ok) in [
            (0, true),
            (TALLY_MAX, true),
            (TALLY_MAX + 1, false),
            (u64::MAX, false),
        ] {
            assert_eq!(one(&|f| _ = f.u64(t), &|r| r.tally().is_ok()), ok, "{t}");
        }
        for (t, ok) in [
            (3, true),
            (TALLY_MAX_U32, true),
            (TALLY_MAX_U32 + 1, false),
            (u32::MAX, false),
        ] {
            assert_eq!(
                one(&|f| _ = f.u32(t), &|r| r.tally_u32().is_ok()),
                ok,
                "{t}"
            );
        }
    }

    #[test]
    fn another_kind_or_version_is_refused() {
        let other = Kind {
            magic: *b"AWARIOTH",
            version: 3,
        };
        assert!(decode(Path::new("x"), other, sample()).is_err());
        let newer = Kind { version: 4, ..KIND };
        assert!(decode(Path::new("x"), newer, sample()).is_err());
    }
}
