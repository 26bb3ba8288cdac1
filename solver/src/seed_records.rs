//! The record files of every resumable pass: the two-bit builder's exit lists, seed files
//! and part files, the depth pass's wave files and the class pass's lists and waves. A file
//! is a sequence of records, each the positions of one chunk of 2^20 of the level:
//!
//! ```text
//! offset size  field
//!      0    4  chunk, u32 LE (below the level's chunk count)
//!      4    4  byte length L of the body, u32 LE (at most [`MAX_BODY`])
//!      8    4  check: the low 32 bits of XXH3-64 of the body, seeded with chunk << 32 | L
//!     12    L  body
//! ```
//!
//! The check covers the whole record, head included, so that no changed byte is believed:
//! [`RecordReader`] refuses a record that fails it (a [`TableError::Damaged`] naming the
//! file), as it refuses a chunk outside the level or a body too long to be one. A kill
//! leaves at worst a torn last record, which a resume cuts off (every file is truncated to
//! the length its checkpoint recorded).
//!
//! The body of a **seed record** (this module's [`encode_seeds`], [`push_seed`]): per
//! position, in increasing order of its offset in the chunk, a LEB128 varint of (gap from
//! the previous offset + 1) × 2 + a flag (won; "depth 0" in the class lists). The two-bit
//! builder's part files hold another body on the same records (`level/twobit/log.rs`).

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use awari_db::TableError;

/// Bytes of a record's head: chunk, length, check.
pub(crate) const HEAD: usize = 12;
/// Positions per chunk: a record's offsets are below it.
pub(crate) const CHUNK: u64 = 1 << 20;
/// The longest body a record may have: every position of a chunk, each with a 3-byte varint
/// and a value byte, is 4 MiB.
pub(crate) const MAX_BODY: usize = 4 << 20;

/// The check of a record of `chunk` whose body is `body`.
#[inline]
fn check(chunk: u32, body: &[u8]) -> u32 {
    let seed = u64::from(chunk) << 32 | body.len() as u64;
    xxhash_rust::xxh3::xxh3_64_with_seed(body, seed) as u32
}

/// A record being built: its head's room, to be filled by [`finish_record`].
pub(crate) fn new_record() -> Vec<u8> {
    vec![0u8; HEAD]
}

/// Whether a record being built (see [`new_record`]) holds no position yet.
pub(crate) fn is_empty_record(out: &[u8]) -> bool {
    out.len() <= HEAD
}

/// Write the head of a record built after [`new_record`]: its chunk, its body's length and
/// its check.
pub(crate) fn finish_record(out: &mut [u8], chunk: u32) {
    let (head, body) = out.split_at_mut(HEAD);
    head[0..4].copy_from_slice(&chunk.to_le_bytes());
    head[4..8].copy_from_slice(&(body.len() as u32).to_le_bytes());
    head[8..12].copy_from_slice(&check(chunk, body).to_le_bytes());
}

/// The body of a whole record (head included).
#[cfg(test)]
pub(crate) fn record_body(record: &[u8]) -> &[u8] {
    &record[HEAD..]
}

/// One chunk's seeds as a seed record (see the module documentation).
pub(crate) fn encode_seeds(chunk: u32, seeds: &[(u32, bool)]) -> Vec<u8> {
    let mut out = new_record();
    let mut prev: i64 = -1;
    for &(k, won) in seeds {
        push_flagged_seed(&mut out, &mut prev, k, won);
    }
    finish_record(&mut out, chunk);
    out
}

/// Append seed `k` (not won) to a record being built in `out` (see [`new_record`]), `prev`
/// the last offset in it (−1 to start with): the incremental [`encode_seeds`].
#[inline]
pub(crate) fn push_seed(out: &mut Vec<u8>, prev: &mut i64, k: u32) {
    push_flagged_seed(out, prev, k, false);
}

/// [`push_seed`] with its flag (the class lists of a depth pass: "depth 0").
#[inline]
pub(crate) fn push_flagged_seed(out: &mut Vec<u8>, prev: &mut i64, k: u32, flag: bool) {
    let mut x = ((i64::from(k) - *prev) as u64) << 1 | u64::from(flag);
    *prev = i64::from(k);
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// The positions of chunk `chunk` in a level of `size` positions: what a record's offsets are
/// below (2^20 but in the level's last chunk).
pub(crate) fn chunk_limit(chunk: u32, size: u64) -> u32 {
    size.saturating_sub(u64::from(chunk) * CHUNK).min(CHUNK) as u32
}

/// The seeds of a record's body (see [`encode_seeds`]) whose offsets are below `limit` (the
/// positions of its chunk in the level, [`chunk_limit`]). A body its writer wrote decodes
/// whole; on any other bytes this never panics, and stops at the first offset at or past
/// `limit` (a record forged to pass its check cannot make a reader index past the level).
pub(crate) fn decode_seeds(bytes: &[u8], limit: u32) -> Vec<(u32, bool)> {
    let mut out = Vec::new();
    for_each_seed(bytes, limit, |k, flag| {
        out.push((k, flag));
        true
    });
    out
}

/// [`decode_seeds`] without gathering them: `f(offset, flag)` on each in turn, until it
/// returns `false`.
pub(crate) fn for_each_seed(bytes: &[u8], limit: u32, mut f: impl FnMut(u32, bool) -> bool) {
    let (mut x, mut shift, mut prev) = (0u64, 0u32, -1i64);
    for &b in bytes {
        if shift < 64 {
            x |= u64::from(b & 0x7f) << shift;
        }
        shift += 7;
        if b < 0x80 {
            // Every gap is at least 1: 0 is not a record's.
            let gap = (x >> 1).min(CHUNK) as i64;
            prev += gap;
            if gap == 0 || prev >= i64::from(limit).min(CHUNK as i64) || !f(prev as u32, x & 1 == 1)
            {
                return;
            }
            x = 0;
            shift = 0;
        }
    }
}

/// What follows each offset in a record's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Body {
    /// Nothing: seeds, the offset's gap carrying a flag in its low bit.
    Seeds,
    /// A value byte: a two-bit build's part file (`level::twobit::log`).
    Values,
    /// A value byte, then the depth as a LEB128 varint: a part file of a build with depths.
    ValuesAndDepths,
}

/// Whether the bodies `bytes` of a record of chunk `chunk` hold only offsets of the level's
/// `size` positions, each followed by what `body` says. A body its writer wrote always does;
/// one forged to pass its check may not, and is refused rather than let a reader index past
/// the level.
fn within_level(bytes: &[u8], chunk: u32, size: u64, body: Body) -> bool {
    let limit = i64::from(chunk_limit(chunk, size));
    let (mut x, mut shift, mut prev, mut i) = (0u64, 0u32, -1i64, 0);
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        if shift >= 28 {
            return false; // no gap of a chunk needs more than 3 bytes (4 with its flag)
        }
        x |= u64::from(b & 0x7f) << shift;
        shift += 7;
        if b < 0x80 {
            let gap = if body == Body::Seeds { x >> 1 } else { x } as i64;
            prev += gap;
            if gap == 0 || prev >= limit {
                return false;
            }
            if body != Body::Seeds {
                if i >= bytes.len() {
                    return false;
                }
                i += 1;
            }
            if body == Body::ValuesAndDepths {
                // A depth is a u16: at most 3 bytes.
                let Some(len) = bytes[i..].iter().take(3).position(|&b| b < 0x80) else {
                    return false;
                };
                i += len + 1;
            }
            x = 0;
            shift = 0;
        }
    }
    shift == 0
}

/// A record file read back in order, each record checked (see the module documentation).
pub(crate) struct RecordReader<'a> {
    inner: BufReader<File>,
    path: PathBuf,
    /// The level's positions: records of chunks past it, or with offsets past it, are refused.
    size: u64,
    /// Records of chunks at or above this are refused.
    chunks: u64,
    /// What follows each offset in a body.
    body: Body,
    /// Where the next record starts.
    offset: u64,
    /// Bytes read, added to as they are.
    counter: Option<&'a AtomicU64>,
    /// The next record, read ahead by [`RecordReader::peek_chunk`].
    peeked: Option<(u32, Vec<u8>)>,
}

impl<'a> RecordReader<'a> {
    /// Open `path` from byte `offset` with a read buffer of `buffer` bytes, for a level of
    /// `size` positions, adding the bytes read to `counter`; its bodies as `body` says.
    pub(crate) fn open(
        path: &Path,
        offset: u64,
        buffer: usize,
        size: u64,
        body: Body,
        counter: Option<&'a AtomicU64>,
    ) -> Result<RecordReader<'a>, TableError> {
        let io = |source| TableError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = File::open(path).map_err(io)?;
        if offset > 0 {
            file.seek(SeekFrom::Start(offset)).map_err(io)?;
        }
        Ok(RecordReader {
            inner: BufReader::with_capacity(buffer, file),
            path: path.to_path_buf(),
            size,
            chunks: size.div_ceil(CHUNK),
            body,
            offset,
            counter,
            peeked: None,
        })
    }

    /// Where the next record (the one [`RecordReader::peek_chunk`] read, if it did) starts.
    pub(crate) fn offset(&self) -> u64 {
        match &self.peeked {
            Some((_, body)) => self.offset - (HEAD + body.len()) as u64,
            None => self.offset,
        }
    }

    fn damaged(&self, what: String) -> TableError {
        TableError::Damaged {
            path: self.path.clone(),
            what,
        }
    }

    /// Read the next record from the file, checked.
    fn read(&mut self) -> Result<Option<(u32, Vec<u8>)>, TableError> {
        let mut head = [0u8; HEAD];
        let mut got = 0;
        while got < HEAD {
            match self.inner.read(&mut head[got..]) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(TableError::Io {
                        path: self.path.clone(),
                        source,
                    })
                }
            }
        }
        if got == 0 {
            return Ok(None);
        }
        let at = self.offset;
        if got < HEAD {
            return Err(self.damaged(format!("a record cut short at byte {at}")));
        }
        let chunk = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
        let sum = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
        if u64::from(chunk) >= self.chunks || len > MAX_BODY {
            return Err(self.damaged(format!(
                "the record at byte {at} is of chunk {chunk} with {len} bytes: not a record of this level"
            )));
        }
        let mut body = vec![0u8; len];
        self.inner.read_exact(&mut body).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                self.damaged(format!("a record cut short at byte {at}"))
            } else {
                TableError::Io {
                    path: self.path.clone(),
                    source: e,
                }
            }
        })?;
        if check(chunk, &body) != sum {
            return Err(self.damaged(format!("the record at byte {at} fails its check")));
        }
        if !within_level(&body, chunk, self.size, self.body) {
            return Err(self.damaged(format!(
                "the record at byte {at} holds a position outside the level"
            )));
        }
        let bytes = (HEAD + len) as u64;
        self.offset += bytes;
        if let Some(c) = self.counter {
            c.fetch_add(bytes, Relaxed);
        }
        Ok(Some((chunk, body)))
    }

    /// Go on from byte `offset` of the file, where a record starts (a record's offset as
    /// [`RecordReader::offset`] gave it before it was read): within the read buffer without
    /// reading again.
    pub(crate) fn skip_to(&mut self, offset: u64) -> Result<(), TableError> {
        self.peeked = None;
        let delta = offset as i64 - self.offset as i64;
        self.inner
            .seek_relative(delta)
            .map_err(|source| TableError::Io {
                path: self.path.clone(),
                source,
            })?;
        self.offset = offset;
        Ok(())
    }

    /// The chunk of the next record (`None`: none left).
    pub(crate) fn peek_chunk(&mut self) -> Result<Option<u32>, TableError> {
        if self.peeked.is_none() {
            self.peeked = self.read()?;
        }
        Ok(self.peeked.as_ref().map(|r| r.0))
    }

    /// The next record: (chunk, body).
    pub(crate) fn next_record(&mut self) -> Result<Option<(u32, Vec<u8>)>, TableError> {
        match self.peeked.take() {
            Some(r) => Ok(Some(r)),
            None => self.read(),
        }
    }

    /// The next record if its chunk is below `chunk` (else it stays for the next call).
    pub(crate) fn next_before(&mut self, chunk: u32) -> Result<Option<(u32, Vec<u8>)>, TableError> {
        match self.peek_chunk()? {
            Some(c) if c < chunk => self.next_record(),
            _ => Ok(None),
        }
    }

    /// Records totalling at least `bytes` (or what is left).
    pub(crate) fn batch(&mut self, bytes: usize) -> Result<Vec<(u32, Vec<u8>)>, TableError> {
        let mut out = Vec::new();
        let mut total = 0;
        while total < bytes {
            match self.next_record()? {
                Some(r) => {
                    total += HEAD + r.1.len();
                    out.push(r);
                }
                None => break,
            }
        }
        Ok(out)
    }
}

/// Check every record of the file `path` up to byte `len` (which must end on a record) for a
/// level of `size` positions (bodies as `body` says): what a resume
/// does to each file it relies on before it believes it.
pub(crate) fn check_file(path: &Path, len: u64, size: u64, body: Body) -> Result<(), TableError> {
    let mut reader = RecordReader::open(path, 0, 1 << 20, size, body, None)?;
    while reader.offset() < len {
        if reader.next_record()?.is_none() {
            break;
        }
    }
    if reader.offset() != len {
        return Err(TableError::Damaged {
            path: path.to_path_buf(),
            what: format!(
                "its records end at byte {}, its checkpoint says {len}",
                reader.offset()
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_records_round_trip() {
        let mut rng = awari_db::SplitMix64(4);
        let mut seeds: Vec<(u32, bool)> = (0..5000)
            .map(|_| (rng.below(1 << 20) as u32, rng.below(2) == 1))
            .collect();
        seeds.sort_unstable_by_key(|&(k, _)| k);
        seeds.dedup_by_key(|s| s.0);
        seeds.insert(0, (0, true));
        seeds.dedup_by_key(|s| s.0);
        let r = encode_seeds(7, &seeds);
        assert_eq!(u32::from_le_bytes(r[0..4].try_into().unwrap()), 7);
        assert_eq!(decode_seeds(record_body(&r), u32::MAX), seeds);
        // Built a seed at a time, the flags all unset.
        let (mut out, mut prev) = (new_record(), -1);
        for &(k, _) in &seeds {
            push_seed(&mut out, &mut prev, k);
        }
        finish_record(&mut out, 7);
        let unflagged: Vec<(u32, bool)> = seeds.iter().map(|&(k, _)| (k, false)).collect();
        assert_eq!(out, encode_seeds(7, &unflagged));
    }

    #[test]
    fn decoding_garbage_never_leaves_the_chunk() {
        let mut rng = awari_db::SplitMix64(11);
        for len in 0..200 {
            let bytes: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
            assert!(decode_seeds(&bytes, u32::MAX)
                .iter()
                .all(|&(k, _)| u64::from(k) < CHUNK));
            assert!(decode_seeds(&bytes, 100).iter().all(|&(k, _)| k < 100));
            // What the reader lets through stays inside the level.
            if within_level(&bytes, 0, 100, Body::Seeds) {
                assert!(decode_seeds(&bytes, 100).iter().all(|&(k, _)| k < 100));
            }
        }
        assert!(decode_seeds(&[0xff; 40], u32::MAX).is_empty());
    }

    #[test]
    fn part_bodies_are_checked_with_their_depths() {
        // Offsets 0 and 5 (gaps 1, 5), value bytes, and depths 3 and 300 (two varint bytes).
        let with_depths = [1, 2, 3, 5, 0xfe, 0xac, 0x02];
        assert!(within_level(&with_depths, 0, 100, Body::ValuesAndDepths));
        assert!(!within_level(&with_depths, 0, 100, Body::Values));
        // Cut inside a depth, a depth of 4 bytes (past u16), an offset past the level.
        assert!(!within_level(
            &with_depths[..6],
            0,
            100,
            Body::ValuesAndDepths
        ));
        assert!(!within_level(
            &[1, 2, 0x80, 0x80, 0x80, 0x01],
            0,
            100,
            Body::ValuesAndDepths
        ));
        assert!(!within_level(&with_depths, 0, 5, Body::ValuesAndDepths));
        assert!(within_level(&[1, 2, 5, 0xfe], 0, 100, Body::Values));
    }

    /// A directory removed when dropped.
    struct Scratch(PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn write_file(records: &[Vec<u8>]) -> (Scratch, PathBuf) {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "awari-records-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("list");
        std::fs::write(&path, records.concat()).unwrap();
        (Scratch(dir), path)
    }

    fn read_all(path: &Path, chunks: u64) -> Result<Vec<(u32, Vec<u8>)>, TableError> {
        let mut r = RecordReader::open(path, 0, 64, chunks * CHUNK, Body::Seeds, None)?;
        let mut out = Vec::new();
        while let Some(rec) = r.next_record()? {
            out.push(rec);
        }
        Ok(out)
    }

    #[test]
    fn every_changed_byte_is_refused() {
        let records: Vec<Vec<u8>> = (0..4u32)
            .map(|c| encode_seeds(c, &[(1, true), (5, false), (1000 + c, true)]))
            .collect();
        let (_dir, path) = write_file(&records);
        let good = read_all(&path, 4).unwrap();
        assert_eq!(good.len(), 4);
        check_file(
            &path,
            std::fs::metadata(&path).unwrap().len(),
            4 * CHUNK,
            Body::Seeds,
        )
        .unwrap();
        let bytes = std::fs::read(&path).unwrap();
        for at in 0..bytes.len() {
            for flip in [1u8, 0x80, 0xff] {
                let mut bad = bytes.clone();
                bad[at] ^= flip;
                std::fs::write(&path, &bad).unwrap();
                let err = read_all(&path, 4).expect_err("a changed byte is refused");
                assert!(matches!(err, TableError::Damaged { .. }), "{err}");
            }
        }
        // A chunk outside the level, a file cut short, a length that is not the checkpoint's.
        std::fs::write(&path, &bytes).unwrap();
        assert!(read_all(&path, 3).is_err());
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(read_all(&path, 4).is_err());
        std::fs::write(&path, &bytes).unwrap();
        assert!(check_file(&path, bytes.len() as u64 - 1, 4 * CHUNK, Body::Seeds).is_err());
        assert!(check_file(&path, bytes.len() as u64 + 1, 4 * CHUNK, Body::Seeds).is_err());
        // An offset past a short level: refused.
        assert!(read_all(&path, 1).is_err());
        assert!(RecordReader::open(&path, 0, 64, 3 * CHUNK + 1001, Body::Seeds, None).is_ok());
    }

    #[test]
    fn reading_from_an_offset_and_before_a_chunk() {
        let records: Vec<Vec<u8>> = (0..5u32).map(|c| encode_seeds(c, &[(c, false)])).collect();
        let (_dir, path) = write_file(&records);
        let mut r = RecordReader::open(&path, 0, 64, 5 * CHUNK, Body::Seeds, None).unwrap();
        assert_eq!(r.next_before(2).unwrap().unwrap().0, 0);
        assert_eq!(r.next_before(2).unwrap().unwrap().0, 1);
        assert!(r.next_before(2).unwrap().is_none());
        let at = r.offset();
        assert_eq!(at, (records[0].len() + records[1].len()) as u64);
        let mut again = RecordReader::open(&path, at, 64, 5 * CHUNK, Body::Seeds, None).unwrap();
        assert_eq!(again.next_record().unwrap().unwrap().0, 2);
    }
}
