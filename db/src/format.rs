//! What every table file shares, plain ([`crate::table`]) or compressed
//! ([`crate::compressed`]), so that neither format's module depends on the other: the header's
//! length and its preamble (the fields both headers hold at the same offsets, parsed and
//! checked by one function), the index scheme, the chunked checksum, the memory map, and the
//! atomic write through `NAME.tmp`.
//!
//! Each format's offsets are described once, in its own module; the preamble is the part of
//! both tables at offsets 0..20 and 24..32: the magic (0..8, each format its own), the format
//! version (8..12, each format its own), the rule set (12), the index scheme (13), the seed
//! count (16..20) and the entry count (24..32, the level's size).
//!
//! **Checksum.** The data is cut into 4 MiB chunks ([`CHECKSUM_CHUNK`], the last one shorter);
//! each chunk is hashed with XXH3-64 (seed 0); the checksum is XXH3-64 of the chunk hashes
//! written as u64 LE one after another. Chunks hash independently, so verification runs on
//! every core. A plain table's checksum is of its data section, a compressed table's of
//! everything after its header.
//!
//! **Writing.** A table is written to `NAME.tmp` ([`tmp_path`]), fsynced, and renamed over
//! `NAME` ([`rename_into_place`]), the directory synced after: a reader never sees a partial
//! table, and an interrupted writer leaves at worst a stale `.tmp` behind.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use rayon::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::TableError;
use crate::index::level_size;
use crate::rules::Rules;

/// Size of every table header, plain or compressed; a plain table's data starts here.
pub const HEADER_LEN: usize = 64;
/// The index scheme code of the Romein & Bal numbering (header byte 13).
pub const INDEX_ROMEIN_BAL: u8 = 1;
/// Chunk size of the checksum.
pub const CHECKSUM_CHUNK: usize = 4 << 20;

/// The checksum of a data section (see the module documentation), computed on all cores.
pub fn checksum(data: &[u8]) -> u64 {
    combine_digests(&chunk_digests(data))
}

/// The digests of a data section's checksum chunks, in order, computed on all cores.
pub fn chunk_digests(data: &[u8]) -> Vec<u64> {
    data.par_chunks(CHECKSUM_CHUNK).map(chunk_digest).collect()
}

/// The digest of one checksum chunk of a data section ([`CHECKSUM_CHUNK`] bytes, the last one
/// shorter).
pub fn chunk_digest(chunk: &[u8]) -> u64 {
    xxh3_64(chunk)
}

/// The checksum of a data section from the digests of its chunks, in order.
pub fn combine_digests(digests: &[u64]) -> u64 {
    let bytes: Vec<u8> = digests.iter().flat_map(|d| d.to_le_bytes()).collect();
    xxh3_64(&bytes)
}

/// What every table header, plain or compressed, starts with (see the module documentation).
pub(crate) struct Preamble {
    pub(crate) version: u32,
    pub(crate) rules: Rules,
    pub(crate) seeds: u32,
    pub(crate) entries: u64,
}

impl Preamble {
    /// Write the preamble, with `magic`, into header `h` (the other bytes untouched).
    pub(crate) fn write(&self, magic: [u8; 8], h: &mut [u8; HEADER_LEN]) {
        h[0..8].copy_from_slice(&magic);
        h[8..12].copy_from_slice(&self.version.to_le_bytes());
        h[12] = self.rules.code();
        h[13] = INDEX_ROMEIN_BAL;
        h[16..20].copy_from_slice(&self.seeds.to_le_bytes());
        h[24..32].copy_from_slice(&self.entries.to_le_bytes());
    }

    /// Parse and check the preamble of a header of `magic` and one of `versions` read from
    /// `path` (`h`: the file's first bytes, all of them if it is shorter than a header): its
    /// length, the magic, the version, a rule set, the index scheme, a level and its size.
    pub(crate) fn parse(
        path: &Path,
        h: &[u8],
        magic: [u8; 8],
        versions: std::ops::RangeInclusive<u32>,
    ) -> Result<Preamble, TableError> {
        let mismatch = |field, expected: String, got: String| TableError::Mismatch {
            path: path.to_path_buf(),
            field,
            expected,
            got,
        };
        if h.len() < HEADER_LEN {
            return Err(TableError::TooShort {
                path: path.to_path_buf(),
                len: h.len() as u64,
            });
        }
        if h[0..8] != magic {
            let mut got = [0u8; 8];
            got.copy_from_slice(&h[..8]);
            return Err(TableError::BadMagic {
                path: path.to_path_buf(),
                expected: magic,
                got,
            });
        }
        let version = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
        if !versions.contains(&version) {
            return Err(TableError::BadVersion {
                path: path.to_path_buf(),
                expected: *versions.end(),
                got: version,
            });
        }
        let rules = Rules::from_code(h[12]).ok_or_else(|| {
            let codes = Rules::ALL.map(|r| r.code().to_string()).join(", ");
            mismatch("rule set", codes, h[12].to_string())
        })?;
        if h[13] != INDEX_ROMEIN_BAL {
            return Err(mismatch(
                "index scheme",
                INDEX_ROMEIN_BAL.to_string(),
                h[13].to_string(),
            ));
        }
        let seeds = u32::from_le_bytes(h[16..20].try_into().expect("4 bytes"));
        if seeds > 48 {
            return Err(mismatch("seed count", "0..=48".into(), seeds.to_string()));
        }
        let entries = u64::from_le_bytes(h[24..32].try_into().expect("8 bytes"));
        if entries != level_size(seeds) {
            return Err(mismatch(
                "entry count",
                level_size(seeds).to_string(),
                entries.to_string(),
            ));
        }
        Ok(Preamble {
            version,
            rules,
            seeds,
            entries,
        })
    }
}

/// An operating-system error on `path`, as a [`TableError`].
pub(crate) fn io_err(path: &Path) -> impl FnOnce(io::Error) -> TableError + '_ {
    move |source| TableError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Map the table file `file` (at `path`, for errors) read-only.
pub(crate) fn map(path: &Path, file: &File) -> Result<Mmap, TableError> {
    // SAFETY: the map is read-only and private to this process. Table files are written under
    // a temporary name and renamed into place, never modified in place by this project. A file
    // changed underneath us by another program can change what we read (caught by the
    // checksums before it is believed: `Table::check_entries`, the compressed blocks' checks,
    // `verify`); a file truncated underneath us makes a read past its new end raise SIGBUS,
    // which ends the process: that is outside what this contract can prevent (the kernel
    // offers no safe way to map a file others may shrink), and no program of this project
    // shrinks a table in place.
    unsafe { Mmap::map(file) }.map_err(io_err(path))
}

/// The temporary name a table is written under before it is renamed into place.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// Rename the synced `tmp` over `path` and sync the directory, so the new name survives a
/// crash (the last step of every table and checkpoint writer).
pub fn rename_into_place(tmp: &Path, path: &Path) -> Result<(), TableError> {
    fs::rename(tmp, path).map_err(io_err(path))?;
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// The `.tmp` file a table `path` is written to: created (emptied if it was there), open for
/// writing and reading back. [`commit_tmp`] puts it in place.
pub(crate) fn create_tmp(path: &Path) -> Result<(PathBuf, File), TableError> {
    let tmp = tmp_path(path);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(io_err(&tmp))?;
    Ok((tmp, file))
}

/// Fsync `file`, the whole of `tmp` as written, close it and rename it over `path`
/// ([`rename_into_place`]).
pub(crate) fn commit_tmp(file: File, tmp: &Path, path: &Path) -> Result<(), TableError> {
    file.sync_all().map_err(io_err(tmp))?;
    drop(file);
    rename_into_place(tmp, path)
}
