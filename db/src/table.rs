//! The table file: one level of one rule set, memory-mapped.
//!
//! ```text
//! offset size  field
//!      0    8  magic, b"AWARITB\x1a"
//!      8    4  format version, u32 LE (currently 2; version 1 has no chunk digests)
//!     12    1  rule set: 0 awari, 1 abapa, 2 grand-slam, 3 cross-wari
//!     13    1  index scheme: 1 = Romein & Bal lexicographic (pit 11 first) numbering
//!     14    1  content: 0 = values, 1 = depth to conversion
//!     15    1  bytes per entry: values 1 (i8, the mover's seed difference);
//!              depth 1 or 2 (u8 or u16 LE plies to conversion, as narrow as the level allows)
//!     16    4  seed count of the level, u32 LE
//!     20    4  reserved, zero
//!     24    8  entry count, u64 LE (= size of the level)
//!     32    8  data offset, u64 LE (= 64)
//!     40    8  checksum of the data section, u64 LE (the chunked XXH3, `format::checksum`)
//!     48    8  checksum of the header, u64 LE: XXH3-64 (seed 0) of bytes 0..48, checked on
//!              open; zero in some version-1 tables (written before it), not checked there
//!     56    8  reserved, zero (checked on open)
//!     64    D  data: entry count × bytes per entry, in index order
//!   64+D  8×C  (version 2) the digest of each of the data's C checksum chunks, u64 LE
//!              (`format::chunk_digest`): the checksum at offset 40 is their combination,
//!              so they are checked on open, and then let a reader check each chunk the
//!              first time it reads from it ([`Table::check_entries`])
//! ```
//!
//! A values table's data section is byte-for-byte the published `scores.N` file of the VU
//! 2024 release (one signed byte per position, no header); such a raw file can be opened with
//! [`Table::open_raw`].
//!
//! The header's preamble (offsets 0..20 and 24..32, shared with the compressed table), the
//! checksum, and the writing through `NAME.tmp`, fsync and rename are [`crate::format`]'s,
//! whose items are re-exported here.
//!
//! A table is stored plain (this module) or compressed ([`crate::compressed`]); [`Table`]
//! opens either, by its magic.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

use memmap2::Mmap;
use xxhash_rust::xxh3::xxh3_64;

use crate::compressed::{self, Compressed, CompressedHeader, Form};
use crate::error::TableError;
use crate::format::{commit_tmp, create_tmp, io_err, Preamble};
use crate::index::level_size;
use crate::rules::Rules;

mod writer;
pub use writer::{write_table, TableWriter};

pub use crate::format::{
    checksum, chunk_digest, chunk_digests, combine_digests, rename_into_place, tmp_path,
    CHECKSUM_CHUNK, HEADER_LEN, INDEX_ROMEIN_BAL,
};

/// The first eight bytes of every plain table file.
pub const MAGIC: [u8; 8] = *b"AWARITB\x1a";
/// The format version this library writes (it reads 1 and 2).
pub const VERSION: u32 = 2;

/// What a table's entries hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    /// One signed byte per position: the mover's seed difference with perfect play.
    Values,
    /// Plies to conversion (see the depth-table documentation in the solver).
    Depth,
}

impl Content {
    fn code(self) -> u8 {
        match self {
            Content::Values => 0,
            Content::Depth => 1,
        }
    }

    fn from_code(c: u8) -> Option<Content> {
        match c {
            0 => Some(Content::Values),
            1 => Some(Content::Depth),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Content::Values => "values",
            Content::Depth => "depth",
        }
    }
}

/// The header fields of a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The rule set the table was computed under.
    pub rules: Rules,
    /// What the entries hold.
    pub content: Content,
    /// Bytes per entry (1 for values).
    pub entry_bytes: u8,
    /// The level (seeds on the board).
    pub seeds: u32,
    /// Number of entries (the level size).
    pub entries: u64,
    /// Checksum of the data section.
    pub checksum: u64,
}

impl Header {
    /// A values header for level `seeds` under `rules` (checksum filled in when written).
    pub fn values(rules: Rules, seeds: u32) -> Header {
        Header {
            rules,
            content: Content::Values,
            entry_bytes: 1,
            seeds,
            entries: level_size(seeds),
            checksum: 0,
        }
    }

    /// A depth header for level `seeds` with `entry_bytes` (1 or 2) per entry.
    pub fn depth(rules: Rules, seeds: u32, entry_bytes: u8) -> Header {
        Header {
            content: Content::Depth,
            entry_bytes,
            ..Header::values(rules, seeds)
        }
    }

    /// The header as written to disk.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        let preamble = Preamble {
            version: VERSION,
            rules: self.rules,
            seeds: self.seeds,
            entries: self.entries,
        };
        preamble.write(MAGIC, &mut h);
        h[14] = self.content.code();
        h[15] = self.entry_bytes;
        h[32..40].copy_from_slice(&(HEADER_LEN as u64).to_le_bytes());
        h[40..48].copy_from_slice(&self.checksum.to_le_bytes());
        let own = xxh3_64(&h[..48]);
        h[48..56].copy_from_slice(&own.to_le_bytes());
        h
    }

    /// Parse and check a header read from `path`.
    pub fn from_bytes(path: &Path, h: &[u8]) -> Result<Header, TableError> {
        let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().expect("8 bytes"));
        let mismatch = |field, expected: String, got: String| TableError::Mismatch {
            path: path.to_path_buf(),
            field,
            expected,
            got,
        };
        let Preamble {
            version,
            rules,
            seeds,
            entries,
        } = Preamble::parse(path, h, MAGIC, 1..=VERSION)?;
        // A flipped bit in a field the checks below would accept (content, the data
        // checksum, ...) is caught here. Every version-2 table has the header checksum; a
        // version-1 one may have zero there, and is then checked by its data's checksum alone.
        let own = u64_at(48);
        if (version >= 2 || own != 0) && own != xxh3_64(&h[..48]) {
            return Err(mismatch(
                "header checksum (corrupt header)",
                format!("{own:016x}"),
                format!("{:016x}", xxh3_64(&h[..48])),
            ));
        }
        if u64_at(56) != 0 {
            return Err(mismatch(
                "reserved bytes 56..64 (corrupt header)",
                "0".into(),
                format!("{:016x}", u64_at(56)),
            ));
        }
        let content = Content::from_code(h[14])
            .ok_or_else(|| mismatch("content", "0 or 1".into(), h[14].to_string()))?;
        let entry_bytes = h[15];
        if !(entry_bytes == 1 || entry_bytes == 2) {
            return Err(mismatch(
                "bytes per entry",
                "1 or 2".into(),
                entry_bytes.to_string(),
            ));
        }
        let data_offset = u64_at(32);
        if data_offset != HEADER_LEN as u64 {
            return Err(mismatch(
                "data offset",
                HEADER_LEN.to_string(),
                data_offset.to_string(),
            ));
        }
        Ok(Header {
            rules,
            content,
            entry_bytes,
            seeds,
            entries,
            checksum: u64_at(40),
        })
    }

    /// Length of the data section in bytes.
    pub fn data_len(&self) -> u64 {
        self.entries * u64::from(self.entry_bytes)
    }

    /// The number of checksum chunks of the data section.
    pub fn chunks(&self) -> u64 {
        self.data_len().div_ceil(CHECKSUM_CHUNK as u64)
    }

    /// Length of a table file of this header, as this library writes it (version 2: header,
    /// data, chunk digests).
    pub fn file_len(&self) -> u64 {
        HEADER_LEN as u64 + self.data_len() + 8 * self.chunks()
    }
}

/// The chunk digests as the trailer of a version-2 table.
fn trailer(digests: &[u64]) -> Vec<u8> {
    digests.iter().flat_map(|d| d.to_le_bytes()).collect()
}

impl From<&CompressedHeader> for Header {
    /// The plain-table header a compressed table stands for (its checksum is the compressed
    /// file's): a values header, or a one-byte depth header for a depth table.
    fn from(c: &CompressedHeader) -> Header {
        let plain = match c.form {
            Form::Depths => Header::depth(c.rules, c.seeds, 1),
            Form::SelfContained | Form::CaptureDontCares => Header::values(c.rules, c.seeds),
        };
        Header {
            checksum: c.checksum,
            ..plain
        }
    }
}

/// A table written by several processes at once, each its own slices of the data (the
/// distributed build): one of them [`SharedTable::create`]s the `.tmp` file at its full
/// length, every one writes its slices with [`SharedTable::write_at`] and syncs them, and
/// the first, once all have, [`SharedTable::finish`]es it: checksum from the digests the
/// writers computed (chunks no single writer held whole are read back), header, fsync and
/// rename, as [`TableWriter::finish`] does.
pub struct SharedTable {
    path: PathBuf,
    tmp: PathBuf,
    file: File,
    header: Header,
}

impl SharedTable {
    /// Create the `.tmp` file of `path` at its full length (zeroed; the header last).
    pub fn create(path: impl AsRef<Path>, header: Header) -> Result<SharedTable, TableError> {
        let path = path.as_ref().to_path_buf();
        let (tmp, file) = create_tmp(&path)?;
        file.set_len(header.file_len()).map_err(io_err(&tmp))?;
        Ok(SharedTable {
            path,
            tmp,
            file,
            header,
        })
    }

    /// Open the `.tmp` file another process created.
    pub fn open(path: impl AsRef<Path>, header: Header) -> Result<SharedTable, TableError> {
        let path = path.as_ref().to_path_buf();
        let tmp = tmp_path(&path);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&tmp)
            .map_err(io_err(&tmp))?;
        Ok(SharedTable {
            path,
            tmp,
            file,
            header,
        })
    }

    /// Write `data` at data offset `start`; returns its digest when it is one whole checksum
    /// chunk (it starts on a chunk boundary and ends on the next one or at the end).
    pub fn write_at(&self, start: u64, data: &[u8]) -> Result<Option<u64>, TableError> {
        use std::os::unix::fs::FileExt;
        let end = start + data.len() as u64;
        if end > self.header.data_len() {
            return Err(TableError::BadLength {
                path: self.tmp.clone(),
                expected: HEADER_LEN as u64 + self.header.data_len(),
                got: HEADER_LEN as u64 + end,
            });
        }
        self.file
            .write_all_at(data, HEADER_LEN as u64 + start)
            .map_err(io_err(&self.tmp))?;
        let chunk = CHECKSUM_CHUNK as u64;
        let whole = start % chunk == 0
            && (data.len() as u64 == chunk || (end == self.header.data_len() && !data.is_empty()));
        Ok(whole.then(|| chunk_digest(data)))
    }

    /// Make this process's writes durable.
    pub fn sync(&self) -> Result<(), TableError> {
        self.file.sync_data().map_err(io_err(&self.tmp))
    }

    /// The number of checksum chunks of the data.
    pub fn chunks(&self) -> usize {
        self.header.data_len().div_ceil(CHECKSUM_CHUNK as u64) as usize
    }

    /// Fill in the checksum from `digests` (one per chunk; `None`: read it back), write the
    /// header, fsync and rename into place. Returns the final header.
    pub fn finish(mut self, digests: &[Option<u64>]) -> Result<Header, TableError> {
        use std::os::unix::fs::FileExt;
        assert_eq!(digests.len(), self.chunks(), "one digest per chunk");
        let len = self.header.data_len();
        let mut all = Vec::with_capacity(digests.len());
        let mut buf = Vec::new();
        for (c, d) in digests.iter().enumerate() {
            all.push(match d {
                Some(d) => *d,
                None => {
                    let start = c as u64 * CHECKSUM_CHUNK as u64;
                    buf.resize((len - start).min(CHECKSUM_CHUNK as u64) as usize, 0);
                    self.file
                        .read_exact_at(&mut buf, HEADER_LEN as u64 + start)
                        .map_err(io_err(&self.tmp))?;
                    chunk_digest(&buf)
                }
            });
        }
        self.header.checksum = combine_digests(&all);
        self.file
            .write_all_at(&trailer(&all), HEADER_LEN as u64 + len)
            .map_err(io_err(&self.tmp))?;
        self.file
            .write_all_at(&self.header.to_bytes(), 0)
            .map_err(io_err(&self.tmp))?;
        commit_tmp(self.file, &self.tmp, &self.path)?;
        Ok(self.header)
    }
}

/// What the caller expects of a table it opens; `None` fields are not checked.
#[derive(Clone, Copy, Debug, Default)]
pub struct Expect {
    /// The rule set.
    pub rules: Option<Rules>,
    /// The level.
    pub seeds: Option<u32>,
    /// The content kind.
    pub content: Option<Content>,
}

/// An open table, memory-mapped read-only. Opening checks the header and the file length;
/// the data is checked as it is read ([`Table::check_entries`]: a plain table's checksum
/// chunks each at its first read; a compressed table's blocks at each decode), and whole by
/// [`Table::verify`].
///
/// A table is stored plain (one byte per entry: a table of this library or a raw VU file) or
/// compressed (see [`crate::compressed`]); every reader goes through [`Table::value`] and
/// [`Table::read`], which decode a compressed table's blocks, checking each.
#[derive(Debug)]
pub struct Table {
    path: PathBuf,
    header: Header,
    store: Store,
    checks: ChunkChecks,
}

/// What a reader knows of a plain table's checksum chunks (see [`Table::check_entries`]).
#[derive(Debug, Default)]
struct ChunkChecks {
    /// Each chunk's digest, from a version-2 table's trailer (empty otherwise).
    digests: Box<[u64]>,
    /// A bit per chunk: checked in this process.
    checked: Box<[AtomicU64]>,
    /// A version-1 table (no digests): whether its whole data matched its checksum, checked
    /// once, the first time an entry is read.
    whole: OnceLock<bool>,
}

impl ChunkChecks {
    /// The checks of a table whose chunk digests are `digests`.
    fn of(digests: Vec<u64>) -> ChunkChecks {
        let words = digests.len().div_ceil(64);
        ChunkChecks {
            digests: digests.into_boxed_slice(),
            checked: (0..words).map(|_| AtomicU64::new(0)).collect(),
            whole: OnceLock::new(),
        }
    }
}

#[derive(Debug)]
enum Store {
    Plain { map: Option<Mmap>, offset: usize },
    Compressed(Box<Compressed>),
}

/// Map a plain table file of `len` bytes (nothing for an empty one).
fn map_file(path: &Path, file: &File, len: u64) -> Result<Option<Mmap>, TableError> {
    if len == 0 {
        return Ok(None);
    }
    crate::format::map(path, file).map(Some)
}

/// How a table's pages are about to be read, told to the kernel (`madvise`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// The kernel's default: read around each page fault.
    Normal,
    /// Scattered lookups (the probe, `verify`): read only the page that faulted, not the
    /// 128 KiB around it, which would mostly be wasted.
    Random,
    /// One pass in index order (the builder's exits): read far ahead, drop pages behind.
    Sequential,
}

impl Table {
    /// Advise the kernel how the data will be read. Only advice: where it is not supported
    /// the table reads the same, so failures are ignored.
    pub fn advise(&self, access: Access) {
        #[cfg(unix)]
        if let Some(map) = self.map() {
            let advice = match access {
                Access::Normal => memmap2::Advice::Normal,
                Access::Random => memmap2::Advice::Random,
                Access::Sequential => memmap2::Advice::Sequential,
            };
            let _ = map.advise(advice);
        }
        #[cfg(not(unix))]
        let _ = access;
    }

    /// Ask the kernel to read entries `range` into the page cache now, in the background
    /// (`MADV_WILLNEED`): the next stretch of a sequential pass, read while this one is
    /// worked on. Only advice, like [`Table::advise`].
    pub fn prefetch(&self, range: std::ops::Range<u64>) {
        #[cfg(unix)]
        if let Store::Plain {
            map: Some(map),
            offset,
        } = &self.store
        {
            let width = u64::from(self.header.entry_bytes.max(1));
            let start = (*offset as u64 + range.start * width).min(map.len() as u64);
            let end = (*offset as u64 + range.end * width).min(map.len() as u64);
            if start < end {
                let _ = map.advise_range(
                    memmap2::Advice::WillNeed,
                    start as usize,
                    (end - start) as usize,
                );
            }
        }
        #[cfg(not(unix))]
        let _ = range;
    }

    /// Open a table file written by this library, checking its header against `expect` and
    /// its length against the header. A path that is not a regular file (a FIFO, a device, a
    /// directory) is refused before it is opened.
    pub fn open(path: impl AsRef<Path>, expect: Expect) -> Result<Table, TableError> {
        let path = path.as_ref();
        let (file, len) = crate::files::open_regular(path)?;
        let mut head = [0u8; HEADER_LEN];
        let got = read_prefix(&file, &mut head).map_err(io_err(path))?;
        let compressed = got >= 8 && head[0..8] == compressed::MAGIC;
        // A whole header of neither magic: the error names the magic its name promises.
        let named_compressed = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("cvalues" | "cdepth")
        );
        if got == HEADER_LEN && !compressed && head[0..8] != MAGIC && named_compressed {
            let mut magic = [0u8; 8];
            magic.copy_from_slice(&head[0..8]);
            return Err(TableError::BadMagic {
                path: path.to_path_buf(),
                expected: compressed::MAGIC,
                got: magic,
            });
        }
        let (header, store) = if compressed {
            let c = Compressed::open(path, &file)?;
            (
                Header::from(c.header()),
                Some(Store::Compressed(Box::new(c))),
            )
        } else {
            (Header::from_bytes(path, &head[..got])?, None)
        };
        let check = |field: &'static str, expected: String, got: String| {
            if expected != got {
                Err(TableError::Mismatch {
                    path: path.to_path_buf(),
                    field,
                    expected,
                    got,
                })
            } else {
                Ok(())
            }
        };
        if let Some(r) = expect.rules {
            check("rule set", r.name().into(), header.rules.name().into())?;
        }
        if let Some(s) = expect.seeds {
            check("seed count", s.to_string(), header.seeds.to_string())?;
        }
        if let Some(c) = expect.content {
            check("content", c.name().into(), header.content.name().into())?;
        }
        if let Some(store) = store {
            return Ok(Table {
                path: path.to_path_buf(),
                header,
                store,
                checks: ChunkChecks::default(),
            });
        }
        // Version 2 ends with the chunk digests; version 1 at the data's end.
        let version = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
        let expected_len = if version >= 2 {
            header.file_len()
        } else {
            HEADER_LEN as u64 + header.data_len()
        };
        if len != expected_len {
            return Err(TableError::BadLength {
                path: path.to_path_buf(),
                expected: expected_len,
                got: len,
            });
        }
        let map = map_file(path, &file, len)?;
        let mut checks = ChunkChecks::default();
        if version >= 2 {
            let at = (HEADER_LEN as u64 + header.data_len()) as usize;
            let digests: Vec<u64> = map
                .as_ref()
                .map_or(&[][..], |m| &m[at..])
                .chunks_exact(8)
                .map(|d| u64::from_le_bytes(d.try_into().expect("8 bytes")))
                .collect();
            let got = combine_digests(&digests);
            if got != header.checksum {
                return Err(TableError::BadChecksum {
                    path: path.to_path_buf(),
                    expected: header.checksum,
                    got,
                });
            }
            checks = ChunkChecks::of(digests);
        }
        Ok(Table {
            path: path.to_path_buf(),
            header,
            store: Store::Plain {
                map,
                offset: HEADER_LEN,
            },
            checks,
        })
    }

    /// Open a raw `scores.N` file of the VU 2024 release: no header, one signed byte per
    /// position of level `seeds` under the `awari` rules. Its length must be exactly the level
    /// size. There is no checksum to verify.
    pub fn open_raw(path: impl AsRef<Path>, seeds: u32) -> Result<Table, TableError> {
        let path = path.as_ref();
        let (file, len) = crate::files::open_regular(path)?;
        let entries = level_size(seeds);
        if len != entries {
            return Err(TableError::BadLength {
                path: path.to_path_buf(),
                expected: entries,
                got: len,
            });
        }
        let map = map_file(path, &file, len)?;
        Ok(Table {
            path: path.to_path_buf(),
            header: Header::values(Rules::Awari, seeds),
            store: Store::Plain { map, offset: 0 },
            checks: ChunkChecks::default(),
        })
    }

    /// The file this table was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header (for a raw file, the one implied by its name and size; checksum 0).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Whether this is a raw `scores.N` file without header.
    pub fn is_raw(&self) -> bool {
        matches!(self.store, Store::Plain { offset: 0, .. })
    }

    /// Whether this table is stored compressed.
    pub fn is_compressed(&self) -> bool {
        matches!(self.store, Store::Compressed(_))
    }

    /// Bytes of the file on disk.
    pub fn file_len(&self) -> u64 {
        match &self.store {
            Store::Plain { map, .. } => map.as_ref().map_or(0, |m| m.len() as u64),
            Store::Compressed(c) => c.file_len(),
        }
    }

    fn map(&self) -> Option<&Mmap> {
        match &self.store {
            Store::Plain { map, .. } => map.as_ref(),
            Store::Compressed(c) => Some(c.map()),
        }
    }

    /// The data section of a plain table, one byte (or two) per entry; `None` for a compressed
    /// one, which is read with [`Table::read`].
    #[inline]
    pub fn plain(&self) -> Option<&[u8]> {
        match &self.store {
            Store::Plain {
                map: Some(m),
                offset,
            } => Some(&m[*offset..*offset + self.header.data_len() as usize]),
            Store::Plain { map: None, .. } => Some(&[]),
            Store::Compressed(_) => None,
        }
    }

    /// Entries `range` of a values table as bytes (each an `i8`), checked against the table's
    /// checksum first ([`Table::check_entries`]: a plain table's chunks each once in this
    /// process; a compressed table checks each block it decodes): borrowed from a plain table,
    /// decoded into `buf` from a compressed one.
    pub fn read<'a>(
        &'a self,
        range: std::ops::Range<u64>,
        buf: &'a mut Vec<u8>,
    ) -> Result<&'a [u8], TableError> {
        self.check_entries(range.clone())?;
        self.read_unchecked(range, buf)
    }

    /// [`Table::read`] without a plain table's chunk check, for a reader that checks the
    /// checksum itself and reports what it finds besides (`verify`, a checked depth pass).
    pub fn read_unchecked<'a>(
        &'a self,
        range: std::ops::Range<u64>,
        buf: &'a mut Vec<u8>,
    ) -> Result<&'a [u8], TableError> {
        match &self.store {
            Store::Plain { .. } => {
                let data = self.plain().expect("plain");
                Ok(&data[range.start as usize..range.end as usize])
            }
            Store::Compressed(c) => {
                buf.clear();
                buf.resize((range.end - range.start) as usize, 0);
                c.read_into(range.start, buf)?;
                Ok(&buf[..])
            }
        }
    }

    /// The value stored for index `i` of a values table (a compressed table decodes and
    /// checks its block: a corrupt one is an error, never a wrong value).
    #[inline]
    pub fn value(&self, i: u64) -> Result<i8, TableError> {
        match &self.store {
            Store::Plain {
                map: Some(m),
                offset,
            } => Ok(m[offset + i as usize] as i8),
            Store::Plain { map: None, .. } => panic!("entry {i} of an empty table"),
            Store::Compressed(c) => c.value(i),
        }
    }

    /// What is stored for index `i`: its value, except in a table of the probe form, whose
    /// don't-cares store anything up to it (see [`crate::compressed`]); read those through
    /// [`crate::Levels`], which resolves them.
    #[inline]
    pub fn stored(&self, i: u64) -> Result<i8, TableError> {
        match &self.store {
            Store::Compressed(c) => c.stored(i),
            Store::Plain { .. } => self.value(i),
        }
    }

    /// What is stored for entries `start..start + out.len()` (see [`Table::stored`]), as bytes.
    pub fn read_stored(&self, start: u64, out: &mut [u8]) -> Result<(), TableError> {
        match &self.store {
            Store::Compressed(c) => c.read_stored(start, out),
            Store::Plain { .. } => {
                let data = self.plain().expect("plain");
                out.copy_from_slice(&data[start as usize..start as usize + out.len()]);
                Ok(())
            }
        }
    }

    /// Whether this table is compressed in the probe form (its entries need a capture search:
    /// [`Table::value`] and [`Table::read`] refuse it).
    pub fn is_probe_form(&self) -> bool {
        matches!(&self.store, Store::Compressed(c) if c.is_probe_form())
    }

    /// The form of a compressed table (which coder wrote it), `None` for a plain one.
    pub fn compressed_form(&self) -> Option<compressed::Form> {
        match &self.store {
            Store::Compressed(c) => Some(c.header().form),
            Store::Plain { .. } => None,
        }
    }

    /// The form and segment length of a compressed table (`None` for a plain one).
    pub fn compressed_layout(&self) -> Option<compressed::Layout> {
        match &self.store {
            Store::Compressed(c) => Some(c.header().layout()),
            Store::Plain { .. } => None,
        }
    }

    /// Start loading what [`Table::value`] of `i` reads first, so that the cache misses of a
    /// group of lookups overlap (the probe's batches). Only a hint.
    #[inline]
    pub fn prefetch_value(&self, i: u64) {
        match &self.store {
            Store::Plain {
                map: Some(m),
                offset,
            } => {
                if let Some(b) = m.get(offset + i as usize) {
                    compressed::prefetch(b);
                }
            }
            Store::Plain { map: None, .. } => {}
            Store::Compressed(c) => c.prefetch_value(i),
        }
    }

    /// The second step after [`Table::prefetch_value`] for a compressed table: start loading
    /// the bytes of entry `i`'s segment, whose place the (by now loaded) index record gives.
    /// Nothing for a plain table. Only a hint.
    #[inline]
    pub fn prefetch_segment(&self, i: u64) {
        if let Store::Compressed(c) = &self.store {
            c.prefetch_segment(i);
        }
    }

    /// The entries whose values a read of depths `range` needs (see
    /// [`Table::read_depths`]): none for a plain depth table; for a compressed one, from the
    /// start of `range`'s first segment to its end.
    pub fn depth_context(&self, range: std::ops::Range<u64>) -> std::ops::Range<u64> {
        match &self.store {
            Store::Compressed(c) => c.depth_context(range),
            Store::Plain { .. } => range.start..range.start,
        }
    }

    /// Entries `start..start + out.len()` of a depth table into `out`. `values` are the
    /// level's values of entries [`Table::depth_context`]`(start..start + out.len())`: none
    /// for a plain table; a compressed one (`.cdepth`) is coded against them, and decodes in
    /// whole segments, checking their blocks (a corrupt one is an error, never a wrong depth).
    pub fn read_depths(
        &self,
        start: u64,
        out: &mut [u16],
        values: &[i8],
    ) -> Result<(), TableError> {
        debug_assert_eq!(self.header.content, Content::Depth);
        let (from, to) = (start as usize, start as usize + out.len());
        match &self.store {
            Store::Compressed(c) => {
                let mut bytes = vec![0u8; out.len()];
                c.read_depths(start, &mut bytes, values)?;
                out.iter_mut()
                    .zip(&bytes)
                    .for_each(|(d, &b)| *d = u16::from(b));
            }
            Store::Plain { .. } => {
                let data = self.plain().expect("plain");
                if self.header.entry_bytes == 1 {
                    out.iter_mut()
                        .zip(&data[from..to])
                        .for_each(|(d, &b)| *d = u16::from(b));
                } else {
                    out.iter_mut()
                        .zip(data[2 * from..2 * to].chunks_exact(2))
                        .for_each(|(d, b)| *d = u16::from_le_bytes([b[0], b[1]]));
                }
            }
        }
        Ok(())
    }

    /// Check the data behind entries `range` against the table's checksum before they are
    /// believed: in a version-2 plain table, each checksum chunk (4 MiB) the range touches,
    /// the first time in this process (a bit per chunk; then an atomic load per call); in a
    /// version-1 one, its whole data once. A compressed table checks each block as it
    /// decodes it, and a raw VU file has no checksum: both pass. A chunk that fails is
    /// [`TableError::CorruptBlock`], naming the file.
    pub fn check_entries(&self, range: std::ops::Range<u64>) -> Result<(), TableError> {
        let Some(data) = self.plain().filter(|_| !self.is_raw()) else {
            return Ok(());
        };
        let c = &self.checks;
        if c.digests.is_empty() {
            if *c.whole.get_or_init(|| self.verify().is_ok()) {
                return Ok(());
            }
            return self.verify();
        }
        let width = u64::from(self.header.entry_bytes.max(1));
        let chunk = CHECKSUM_CHUNK as u64;
        if range.is_empty() {
            return Ok(());
        }
        let first = range.start * width / chunk;
        let last = ((range.end * width - 1) / chunk).min(c.digests.len() as u64 - 1);
        let check = |k: u64| -> Result<(), TableError> {
            let (word, bit) = (&c.checked[(k / 64) as usize], 1u64 << (k % 64));
            if word.load(Relaxed) & bit != 0 {
                return Ok(());
            }
            let start = (k * chunk) as usize;
            let end = (start + CHECKSUM_CHUNK).min(data.len());
            if chunk_digest(&data[start..end]) != c.digests[k as usize] {
                return Err(TableError::CorruptBlock {
                    path: self.path.clone(),
                    seeds: self.header.seeds,
                    block: k,
                    what: format!(
                        "checksum chunk {k} (bytes {start}..{end} of the data) does not match its digest"
                    ),
                });
            }
            word.fetch_or(bit, Relaxed);
            Ok(())
        };
        // A read of a few chunks hashes them here; a long range (a whole level checked before
        // it is read at random) on all cores.
        if last - first < 8 {
            (first..=last).try_for_each(check)
        } else {
            use rayon::prelude::*;
            (first..=last).into_par_iter().try_for_each(check)
        }
    }

    /// Decode and check every block of a compressed table (each block's checksum, and that
    /// its codes are whole); a plain table has no blocks and passes.
    pub fn check_blocks(&self) -> Result<(), TableError> {
        match &self.store {
            Store::Compressed(c) => c.check_blocks(),
            Store::Plain { .. } => Ok(()),
        }
    }

    /// Recompute the checksum (on all cores) and compare it with the header: of the data of a
    /// plain table, of everything after the header of a compressed one (whose blocks are
    /// each checked again as they are decoded). Raw files have no checksum and always pass.
    pub fn verify(&self) -> Result<(), TableError> {
        if self.is_raw() {
            return Ok(());
        }
        if let Store::Compressed(c) = &self.store {
            return c.verify();
        }
        let data = self.plain().expect("plain");
        let digests = chunk_digests(data);
        let got = combine_digests(&digests);
        if got != self.header.checksum {
            return Err(TableError::BadChecksum {
                path: self.path.clone(),
                expected: self.header.checksum,
                got,
            });
        }
        // The whole data is what was written: [`Table::check_entries`] need not hash its
        // chunks again (a version-1 table, which has none, is checked whole at its first read
        // as before: `check_entries` calls this).
        let c = &self.checks;
        if !c.digests.is_empty() && c.digests[..] == digests[..] {
            for word in c.checked.iter() {
                word.store(u64::MAX, Relaxed);
            }
        }
        Ok(())
    }
}

fn read_prefix(mut file: &File, buf: &mut [u8]) -> io::Result<usize> {
    use std::io::Read;
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..])? {
            0 => break,
            k => got += k,
        }
    }
    Ok(got)
}
