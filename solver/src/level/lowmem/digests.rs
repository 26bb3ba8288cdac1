//! The work file's page digests: a damaged `level-NN.lowmem/work` is refused, never built upon.
//!
//! The work file is read and written a whole streaming chunk at a time. Each of its pages
//! (4096 bytes, the last one shorter) has the XXH3-64 of its bytes as last written, held in
//! RAM; a read whose bytes hash to anything else is [`TableError::Damaged`], naming the
//! page's positions. A fresh work file's pages are zeros, and have the zeros' digest.
//!
//! A level built on one machine keeps the digests on disk too, for a resume, in
//! `level-NN.lowmem/digests`: 16 bytes a page (1/256 of the work file), nothing else.
//!
//! ```text
//! offset      size  field
//! 16 × p      8     page p: the XXH3-64 of its bytes before its last write (u64 LE)
//! 16 × p + 8  8     page p: the XXH3-64 of its bytes after it (u64 LE)
//! ```
//!
//! Before a chunk is written, the entries of its pages are written: each page's digest so
//! far, then the new one. A kill may come between the two writes, or in the middle of the
//! chunk's (the kernel copies a write into the page cache a page at a time, and a kill stops
//! it between pages): each page then hashes to one of its entry's two digests, and a resume
//! takes either. At each checkpoint every entry is made its page's digest twice (the file
//! rewritten and synced after the work file, before the checkpoint), so both are states of the
//! work from the checkpoint on, which a resume allows, page by page (see `checkpoint`). An
//! entry needs no checksum of its own: a damaged one can only make its page refused, since it
//! would have to equal the hash of the page's bytes to pass them.
//!
//! What they protect against is a killed process, whose writes the page cache keeps, in order.
//! After a crash of the machine (power lost between two checkpoints) the kernel may have put
//! some pages on disk and not their entries, or the other way round: a resume then finds a page
//! that matches neither of its digests and stops with the message that names it (the next run
//! starts the level afresh): the work is lost back to the level's start, never built upon.
//!
//! The digests cost a hash of each page read or written (XXH3 runs at many GB/s, the stream at
//! a few hundred MB/s), 16 bytes of RAM a page (0.4% of the work file) and as many written a
//! page written.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use awari_db::TableError;
use xxhash_rust::xxh3::xxh3_64;

use super::io;

/// Bytes of a page of the work file.
pub(super) const PAGE: u64 = 4096;
/// Bytes of an entry of the digests file.
const ENTRY: u64 = 16;

/// The digests of the pages of a work file of `len` positions (see the module).
pub(super) struct PageDigests {
    len: u64,
    /// Per page: the digest of its bytes as last written (or as confirmed by a read).
    now: Vec<AtomicU64>,
    /// Per page: a second digest its bytes may have, after a resume only (the bytes before
    /// the last write the run before made); the same as `now` otherwise.
    before: Vec<AtomicU64>,
    /// The digests file of a level built on one machine (none for a rank's slice).
    file: Option<(File, PathBuf)>,
}

/// Bytes of the digests file of a work file of `len` positions.
pub(super) fn file_len(len: u64) -> u64 {
    len.div_ceil(PAGE) * ENTRY
}

/// Bytes of RAM the digests of a work file of `len` positions take (as many as their file).
pub(super) fn memory(len: u64) -> u64 {
    file_len(len)
}

impl PageDigests {
    /// The digests of a fresh work file of `len` positions (zeros), written to `path` where
    /// given.
    pub(super) fn fresh(len: u64, path: Option<PathBuf>) -> Result<Self, TableError> {
        let pages = len.div_ceil(PAGE);
        let full = xxh3_64(&[0u8; PAGE as usize]);
        let last = xxh3_64(&vec![0u8; (len - (pages.max(1) - 1) * PAGE) as usize]);
        let digest = |p: u64| if p + 1 == pages { last } else { full };
        let file = match path {
            Some(path) => {
                let file = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&path)
                    .map_err(io(&path))?;
                Some((file, path))
            }
            None => None,
        };
        let digests = Self {
            len,
            now: (0..pages).map(|p| AtomicU64::new(digest(p))).collect(),
            before: (0..pages).map(|p| AtomicU64::new(digest(p))).collect(),
            file,
        };
        digests.write_all()?;
        Ok(digests)
    }

    /// The digests of a work file of `len` positions kept in `path` by the run before; an
    /// error names what is wrong with the file (missing, or of another length).
    pub(super) fn load(len: u64, path: PathBuf) -> Result<Self, String> {
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if bytes.len() as u64 != file_len(len) {
            return Err(format!(
                "{} holds {} bytes, {} expected",
                path.display(),
                bytes.len(),
                file_len(len)
            ));
        }
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        let entries = bytes.chunks_exact(ENTRY as usize);
        let before = entries.clone().map(|e| AtomicU64::new(word(&e[..8])));
        let now = entries.map(|e| AtomicU64::new(word(&e[8..])));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self {
            len,
            now: now.collect(),
            before: before.collect(),
            file: Some((file, path)),
        })
    }

    /// The pages of `bytes` at `offset` of the work file: (index, bytes) each. They must be
    /// whole pages (the last one of the file may be short), as every read and write of the
    /// builder's is.
    fn pages<'b>(&self, offset: u64, bytes: &'b [u8]) -> impl Iterator<Item = (usize, &'b [u8])> {
        let end = offset + bytes.len() as u64;
        assert!(
            offset % PAGE == 0 && (end % PAGE == 0 || end == self.len) && end <= self.len,
            "work bytes {offset}..{end} are not whole pages"
        );
        let first = (offset / PAGE) as usize;
        bytes
            .chunks(PAGE as usize)
            .enumerate()
            .map(move |(k, page)| (first + k, page))
    }

    /// Check the bytes `bytes` just read at `offset` of the work file `work` against their
    /// pages' digests; they are confirmed as those pages' bytes from now on.
    pub(super) fn check(&self, work: &Path, offset: u64, bytes: &[u8]) -> Result<(), TableError> {
        for (p, page) in self.pages(offset, bytes) {
            let digest = xxh3_64(page);
            let now = self.now[p].load(Relaxed);
            if digest == now || digest == self.before[p].load(Relaxed) {
                self.now[p].store(digest, Relaxed);
                self.before[p].store(digest, Relaxed);
                continue;
            }
            let at = p as u64 * PAGE;
            return Err(TableError::Damaged {
                path: work.to_path_buf(),
                what: format!(
                    "positions {at}..{} do not match their digest (XXH3-64 {digest:#018x}, \
                     {now:#018x} kept)",
                    at + page.len() as u64
                ),
            });
        }
        Ok(())
    }

    /// Record that `bytes` are to be written at `offset` of the work file: their pages'
    /// digests become theirs, and the pages' entries in the digests file say both (written
    /// before the bytes are).
    pub(super) fn record(&self, offset: u64, bytes: &[u8]) -> Result<(), TableError> {
        let mut entries = Vec::with_capacity(bytes.len().div_ceil(PAGE as usize) * ENTRY as usize);
        for (p, page) in self.pages(offset, bytes) {
            let digest = xxh3_64(page);
            let old = self.now[p].swap(digest, Relaxed);
            self.before[p].store(digest, Relaxed);
            entries.extend_from_slice(&old.to_le_bytes());
            entries.extend_from_slice(&digest.to_le_bytes());
        }
        if let Some((file, path)) = &self.file {
            file.write_all_at(&entries, offset / PAGE * ENTRY)
                .map_err(io(path))?;
        }
        Ok(())
    }

    /// Before a checkpoint (the work file synced): every page's entry made its digest twice,
    /// the file written and synced.
    pub(super) fn settle(&self) -> Result<(), TableError> {
        for (before, now) in self.before.iter().zip(&self.now) {
            before.store(now.load(Relaxed), Relaxed);
        }
        self.write_all()
    }

    /// Write every entry to the digests file (where there is one) and sync it.
    fn write_all(&self) -> Result<(), TableError> {
        let Some((file, path)) = &self.file else {
            return Ok(());
        };
        let mut bytes = Vec::with_capacity(self.now.len() * ENTRY as usize);
        for (before, now) in self.before.iter().zip(&self.now) {
            bytes.extend_from_slice(&before.load(Relaxed).to_le_bytes());
            bytes.extend_from_slice(&now.load(Relaxed).to_le_bytes());
        }
        file.write_all_at(&bytes, 0).map_err(io(path))?;
        file.sync_data().map_err(io(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("awari-digests-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A fresh file's pages are zeros; a written page has its new bytes' digest, and any other
    /// bytes are refused by their positions. After a kill between the entries' write and the
    /// bytes', or in the middle of the bytes' (some pages written), a load takes each page's
    /// bytes before or after that write, and nothing else; a checkpoint's `settle` leaves
    /// only the bytes as they are.
    #[test]
    fn a_page_is_its_last_bytes_or_before_a_kill_the_ones_before() {
        let dir = scratch("kill");
        let (len, path, work) = (3 * PAGE + 5, dir.join("digests"), dir.join("work"));
        let d = PageDigests::fresh(len, Some(path.clone())).unwrap();
        let zeros = vec![0u8; 2 * PAGE as usize];
        d.check(&work, 0, &zeros).unwrap();
        d.check(&work, 2 * PAGE, &[0; PAGE as usize + 5]).unwrap();
        let mut one = zeros.clone();
        one[77] = 3;
        one[PAGE as usize + 9] = 1;
        d.record(0, &one).unwrap();
        d.check(&work, 0, &one).unwrap();
        let err = d.check(&work, 0, &zeros).unwrap_err().to_string();
        assert!(err.contains("positions 0..4096 do not match"), "{err}");
        d.settle().unwrap();
        let mut two = one.clone();
        two[78] = 4;
        two[PAGE as usize + 10] = 2;
        d.record(0, &two).unwrap();
        // Killed here: the entries written, the bytes perhaps not, or only their first page.
        let half: Vec<u8> = [&two[..PAGE as usize], &one[PAGE as usize..]].concat();
        for (bytes, ok) in [(&one, true), (&two, true), (&half, true), (&zeros, false)] {
            let loaded = PageDigests::load(len, path.clone()).unwrap();
            assert_eq!(loaded.check(&work, 0, bytes).is_ok(), ok);
            loaded
                .check(&work, 2 * PAGE, &[0; PAGE as usize + 5])
                .unwrap();
        }
        // Once one of the two is read, or the level checkpoints, only it is.
        for (read, other) in [(&one, &two), (&two, &one)] {
            let loaded = PageDigests::load(len, path.clone()).unwrap();
            loaded.check(&work, 0, read).unwrap();
            assert!(loaded.check(&work, 0, other).is_err());
        }
        let loaded = PageDigests::load(len, path.clone()).unwrap();
        loaded.settle().unwrap();
        let loaded = PageDigests::load(len, path.clone()).unwrap();
        assert!(loaded.check(&work, 0, &one).is_err());
        loaded.check(&work, 0, &two).unwrap();
        // A file of another length is not believed.
        std::fs::write(&path, [0u8; 63]).unwrap();
        let err = PageDigests::load(len, path).err().unwrap();
        assert!(err.contains("63 bytes, 64 expected"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Only whole pages are read and written: anything else is a bug, caught at once.
    #[test]
    #[should_panic(expected = "not whole pages")]
    fn a_part_of_a_page_is_a_bug() {
        let d = PageDigests::fresh(PAGE + 5, None).unwrap();
        let _ = d.check(Path::new("work"), 0, &[0; 5]);
    }
}
