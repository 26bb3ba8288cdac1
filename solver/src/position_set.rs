//! A set of positions of a level gathered in any order, from any thread, in bounded memory:
//! what the one-bit builder keeps of its candidates (`level::twobit::candidates`) and the
//! one-bit class search of a depth pass of the positions a wave finds
//! (`depth::classes::one_bit`).
//!
//! The positions are held per chunk of the level ([`CHUNK`] positions), compactly: a sorted
//! run without repeats, delta-coded (LEB128 gaps: about a byte a position at the densities
//! met, a few per cent of a level), and the offsets added since, merged into the run when they
//! reach a quarter of it. When the set reaches its capacity ([`PositionSet::full`]) its owner
//! **spills** it: [`PositionSet::take`] hands over every chunk's positions and
//! [`spill_records`] makes them seed records (see `crate::seed_records`), in chunk order, for
//! a file of the owner's. [`Merged`] reads the positions back, a chunk at a time in chunk
//! order, sorted and without repeats, from those still in RAM and every spill file at once.

use crate::seed_records::Body;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use awari_db::TableError;

use crate::seed_records::{chunk_limit, encode_seeds, for_each_seed, RecordReader, CHUNK};

/// Offsets added to a chunk before they are merged into its run, at least.
const MIN_PENDING: usize = 64;
/// Write buffer of a spill file.
const WRITE_BUFFER: usize = 64 << 10;
/// Read buffer of each spill file (all are read at once).
const SPILL_BUFFER: usize = 16 << 10;
/// Spill files of one set at most: at this many they are merged into one, so that reading
/// them back holds a bounded number of buffers.
pub(crate) const MAX_SPILLS: usize = 16;

/// One chunk's positions (offsets in the chunk).
#[derive(Default)]
pub(crate) struct Held {
    /// A sorted run without repeats, as LEB128 gaps (the first from −1).
    run: Vec<u8>,
    count: usize,
    /// Offsets added since, in any order.
    pending: Vec<u32>,
}

impl Held {
    /// Bytes of RAM it holds.
    fn bytes(&self) -> u64 {
        (self.run.capacity() + 4 * self.pending.capacity()) as u64
    }

    /// Every offset, sorted, without repeats: the pending ones sorted alone and merged into
    /// the run as it is decoded (the run is sorted already).
    pub(crate) fn sorted(&self) -> Vec<u32> {
        let mut pending = self.pending.clone();
        pending.sort_unstable();
        pending.dedup();
        let mut pending = pending.into_iter().peekable();
        let mut all = Vec::with_capacity(self.count + pending.len());
        let (mut x, mut shift, mut prev) = (0u32, 0u32, -1i64);
        for &b in &self.run {
            x |= u32::from(b & 0x7f) << shift;
            shift += 7;
            if b < 0x80 {
                prev += i64::from(x);
                let k = prev as u32;
                while let Some(p) = pending.next_if(|&p| p <= k) {
                    if p < k {
                        all.push(p);
                    }
                }
                all.push(k);
                (x, shift) = (0, 0);
            }
        }
        all.extend(pending);
        all
    }

    /// Merge the pending offsets into the run.
    fn merge(&mut self) {
        let all = self.sorted();
        let mut run = Vec::with_capacity(all.len() + all.len() / 4);
        let mut prev = -1i64;
        for &k in &all {
            let mut gap = (i64::from(k) - prev) as u32;
            prev = i64::from(k);
            while gap >= 0x80 {
                run.push(gap as u8 | 0x80);
                gap >>= 7;
            }
            run.push(gap as u8);
        }
        run.shrink_to_fit();
        self.run = run;
        self.count = all.len();
        self.pending = Vec::new();
    }
}

/// A set of positions of a level (see the module documentation).
pub(crate) struct PositionSet {
    chunks: Vec<Mutex<Held>>,
    /// Bytes held in all.
    bytes: AtomicU64,
    /// Bytes held before it is to be spilled (see [`PositionSet::full`]).
    capacity: u64,
}

impl PositionSet {
    /// An empty set for a level of `size` positions, full at `capacity` bytes.
    pub(crate) fn new(size: u64, capacity: u64) -> PositionSet {
        PositionSet {
            chunks: (0..size.div_ceil(CHUNK))
                .map(|_| Mutex::new(Held::default()))
                .collect(),
            bytes: AtomicU64::new(0),
            capacity,
        }
    }

    /// Bytes a set for a level of `size` positions holds when empty (a lock and two vectors a
    /// chunk): 64 a chunk, 12 MiB at level 48.
    pub(crate) fn empty_bytes(size: u64) -> u64 {
        size.div_ceil(CHUNK) * std::mem::size_of::<Mutex<Held>>() as u64
    }

    /// Add the positions `found` (reordered; repeats are kept once).
    pub(crate) fn add(&self, found: &mut [u64]) {
        found.sort_unstable();
        for group in found.chunk_by(|a, b| a / CHUNK == b / CHUNK) {
            let mut held = self.chunks[(group[0] / CHUNK) as usize]
                .lock()
                .expect("position set lock");
            let before = held.bytes();
            held.pending
                .extend(group.iter().map(|&q| (q % CHUNK) as u32));
            if held.pending.len() >= MIN_PENDING.max(held.count / 4) {
                held.merge();
            }
            let after = held.bytes();
            self.bytes.fetch_add(after, Relaxed);
            self.bytes.fetch_sub(before, Relaxed);
        }
    }

    /// Whether it has reached its capacity: its owner spills it.
    pub(crate) fn full(&self) -> bool {
        self.bytes.load(Relaxed) >= self.capacity
    }

    /// The positions held, per chunk in increasing order; none are left.
    pub(crate) fn take(&self) -> Vec<(u32, Held)> {
        let mut out = Vec::new();
        for (c, held) in self.chunks.iter().enumerate() {
            let mut held = held.lock().expect("position set lock");
            if held.count > 0 || !held.pending.is_empty() {
                self.bytes.fetch_sub(held.bytes(), Relaxed);
                out.push((c as u32, std::mem::take(&mut *held)));
            }
        }
        out
    }
}

/// The seed records (no flags) of positions taken from a set, in chunk order: what a spill
/// file holds.
pub(crate) fn spill_records(held: Vec<(u32, Held)>) -> impl Iterator<Item = Vec<u8>> {
    held.into_iter().map(|(c, h)| {
        let seeds: Vec<(u32, bool)> = h.sorted().into_iter().map(|k| (k, false)).collect();
        encode_seeds(c, &seeds)
    })
}

/// The positions of a set, read back a chunk at a time in chunk order: those taken from it
/// (`held`) and those of its spill files (`spills`, each in chunk order) merged.
pub(crate) struct Merged<'a> {
    held: std::iter::Peekable<std::vec::IntoIter<(u32, Held)>>,
    spills: Vec<RecordReader<'a>>,
    size: u64,
}

impl<'a> Merged<'a> {
    /// The positions `held` and those of the files `spills`, of a level of `size` positions.
    pub(crate) fn new(held: Vec<(u32, Held)>, spills: Vec<RecordReader<'a>>, size: u64) -> Self {
        Merged {
            held: held.into_iter().peekable(),
            spills,
            size,
        }
    }

    /// The next chunk holding positions, and their offsets, sorted, without repeats (`None`:
    /// none left).
    pub(crate) fn next_chunk(&mut self) -> Result<Option<(u32, Vec<u32>)>, TableError> {
        let mut next = self.held.peek().map(|(c, _)| *c);
        for r in self.spills.iter_mut() {
            if let Some(c) = r.peek_chunk()? {
                next = Some(next.map_or(c, |n| n.min(c)));
            }
        }
        let Some(c) = next else {
            return Ok(None);
        };
        let mut want = match self.held.next_if(|(k, _)| *k == c) {
            Some((_, h)) => h.sorted(),
            None => Vec::new(),
        };
        let limit = chunk_limit(c, self.size);
        let spilled = !self.spills.is_empty();
        for r in self.spills.iter_mut() {
            while let Some((_, body)) = r.next_before(c + 1)? {
                for_each_seed(&body, limit, |k, _| {
                    want.push(k);
                    true
                });
            }
        }
        if spilled {
            want.sort_unstable();
            want.dedup();
        }
        Ok(Some((c, want)))
    }
}

/// A [`PositionSet`] that spills to files beside it when full (`STEM0`, `STEM1`, …), merging
/// them into one at [`MAX_SPILLS`], and reads back everything it holds in chunk order: what a
/// wave finds, in the one-bit class pass and in a two-bit build that writes depths.
pub(crate) struct SpillingSet {
    set: PositionSet,
    /// The spill files, and how many were written (their names' numbers).
    spills: Mutex<(Vec<PathBuf>, u64)>,
    /// The spill files' names, before their number.
    stem: PathBuf,
    size: u64,
    /// The first error of a spill, where it happened on a worker thread.
    error: Mutex<Option<TableError>>,
    /// Bytes of spill files written (merged ones included).
    spilled: AtomicU64,
}

impl SpillingSet {
    /// An empty set of a level of `size` positions, spilling to files named `stem` and a
    /// number at `capacity` bytes.
    pub(crate) fn new(stem: PathBuf, size: u64, capacity: u64) -> SpillingSet {
        SpillingSet {
            set: PositionSet::new(size, capacity),
            spills: Mutex::new((Vec::new(), 0)),
            stem,
            size,
            error: Mutex::new(None),
            spilled: AtomicU64::new(0),
        }
    }

    /// Add `found` (reordered), spilling the set when it is full (on any thread; an error is
    /// kept for [`SpillingSet::merged`]).
    pub(crate) fn add(&self, found: &mut [u64]) {
        if found.is_empty() {
            return;
        }
        self.set.add(found);
        if self.set.full() {
            if let Err(e) = self.spill() {
                self.error
                    .lock()
                    .expect("no panic holds it")
                    .get_or_insert(e);
            }
        }
    }

    fn spill(&self) -> Result<(), TableError> {
        let mut spills = self.spills.lock().expect("no panic holds it");
        if !self.set.full() {
            return Ok(());
        }
        let (files, written) = &mut *spills;
        let path = PathBuf::from(format!("{}{written}", self.stem.display()));
        *written += 1;
        let bytes = write_spill(&path, spill_records(self.set.take()))?;
        self.spilled.fetch_add(bytes, Relaxed);
        files.push(path);
        if files.len() >= MAX_SPILLS {
            // Merged into one: read back in chunk order, each chunk's positions once.
            let path = PathBuf::from(format!("{}{written}", self.stem.display()));
            *written += 1;
            let mut merged = Merged::new(Vec::new(), self.readers(files)?, self.size);
            let mut failed = None;
            let bytes = write_spill(
                &path,
                std::iter::from_fn(|| match merged.next_chunk() {
                    Ok(Some((c, offsets))) => {
                        let seeds: Vec<(u32, bool)> =
                            offsets.into_iter().map(|k| (k, false)).collect();
                        Some(encode_seeds(c, &seeds))
                    }
                    Ok(None) => None,
                    Err(e) => {
                        failed = Some(e);
                        None
                    }
                }),
            )?;
            if let Some(e) = failed {
                return Err(e);
            }
            self.spilled.fetch_add(bytes, Relaxed);
            for old in files.drain(..) {
                std::fs::remove_file(&old)
                    .map_err(|source| TableError::Io { path: old, source })?;
            }
            files.push(path);
        }
        Ok(())
    }

    /// The spill files `files` opened for reading.
    fn readers(&self, files: &[PathBuf]) -> Result<Vec<RecordReader<'static>>, TableError> {
        files
            .iter()
            .map(|p| RecordReader::open(p, 0, SPILL_BUFFER, self.size, Body::Seeds, None))
            .collect()
    }

    /// Every position found, a chunk at a time in order (the set is left empty).
    pub(crate) fn merged(&self) -> Result<Merged<'static>, TableError> {
        if let Some(e) = self.error.lock().expect("no panic holds it").take() {
            return Err(e);
        }
        let readers = self.readers(&self.spills.lock().expect("no panic holds it").0)?;
        Ok(Merged::new(self.set.take(), readers, self.size))
    }

    /// Bytes of spill files written so far (those merged into one included).
    pub(crate) fn spilled_bytes(&self) -> u64 {
        self.spilled.load(Relaxed)
    }

    /// Spill files written so far (those merged into one included).
    pub(crate) fn spills_written(&self) -> u64 {
        self.spills.lock().expect("no panic holds it").1
    }

    /// Spill files now held.
    #[cfg(test)]
    pub(crate) fn spill_files(&self) -> usize {
        self.spills.lock().expect("no panic holds it").0.len()
    }

    /// Remove the spill files (once [`SpillingSet::merged`] has been read).
    pub(crate) fn remove_spills(&self) -> Result<(), TableError> {
        for path in self.spills.lock().expect("no panic holds it").0.drain(..) {
            std::fs::remove_file(&path).map_err(|source| TableError::Io { path, source })?;
        }
        Ok(())
    }
}

/// Write the records `records` to the spill file `path`, not synced: a spill is read within
/// its wave, never after a kill.
pub(crate) fn write_spill(
    path: &Path,
    records: impl Iterator<Item = Vec<u8>>,
) -> Result<u64, TableError> {
    let io = |source| TableError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::create(path).map_err(io)?;
    let mut out = std::io::BufWriter::with_capacity(WRITE_BUFFER, file);
    let mut bytes = 0;
    for record in records {
        std::io::Write::write_all(&mut out, &record).map_err(io)?;
        bytes += record.len() as u64;
    }
    std::io::Write::flush(&mut out).map_err(io)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every position `merged` reads back, in order.
    fn read_back(mut merged: Merged) -> Vec<u64> {
        let mut got = Vec::new();
        while let Some((c, offsets)) = merged.next_chunk().unwrap() {
            got.extend(offsets.iter().map(|&k| u64::from(c) * CHUNK + u64::from(k)));
        }
        got
    }

    #[test]
    fn a_set_gives_back_its_positions_sorted_once_each() {
        let size = 3 * CHUNK + 17;
        let set = PositionSet::new(size, u64::MAX);
        let mut expected = Vec::new();
        // Repeats, any order, over several chunks and several adds (merged runs and pending):
        // half of them among 500 positions, repeated within an add, within the pending
        // offsets and between those and the run.
        let mut rng = awari_db::SplitMix64(12345);
        for _ in 0..40 {
            let mut found: Vec<u64> = (0..100)
                .map(|i| rng.below(if i % 2 == 0 { size } else { 500 }))
                .collect();
            expected.extend_from_slice(&found);
            set.add(&mut found);
        }
        expected.sort_unstable();
        expected.dedup();
        let got = read_back(Merged::new(set.take(), Vec::new(), size));
        assert_eq!(got, expected);
        assert!(set.take().is_empty());
        assert!(!set.full());
    }

    /// A set spilled after every addition: its spill files are merged at [`MAX_SPILLS`], and
    /// it reads back every position once, in order, from RAM and files together.
    #[test]
    fn found_positions_spill_merge_and_read_back_in_order() {
        let dir = std::env::temp_dir().join(format!("awari-found-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let size = 5 * CHUNK + 123;
        let found = SpillingSet::new(dir.join("f-"), size, 1);
        let mut want = Vec::new();
        let mut rng = awari_db::SplitMix64(7);
        for _ in 0..50 {
            let mut batch: Vec<u64> = (0..200).map(|_| rng.below(size)).collect();
            want.extend_from_slice(&batch);
            found.add(&mut batch);
        }
        want.sort_unstable();
        want.dedup();
        let (files, written) = (found.spill_files(), found.spills_written());
        assert!(written > MAX_SPILLS as u64 * 2, "{written} spills");
        assert!(files < MAX_SPILLS, "{files} files left");
        let got = read_back(found.merged().unwrap());
        assert_eq!(got, want);
        found.remove_spills().unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
