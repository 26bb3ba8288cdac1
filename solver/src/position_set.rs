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

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use awari_db::TableError;

use crate::seed_records::{chunk_limit, encode_seeds, for_each_seed, RecordReader, CHUNK};

/// Offsets added to a chunk before they are merged into its run, at least.
const MIN_PENDING: usize = 64;

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

    /// Every offset, sorted, without repeats.
    pub(crate) fn sorted(&self) -> Vec<u32> {
        let mut all = Vec::with_capacity(self.count + self.pending.len());
        let (mut x, mut shift, mut prev) = (0u32, 0u32, -1i64);
        for &b in &self.run {
            x |= u32::from(b & 0x7f) << shift;
            shift += 7;
            if b < 0x80 {
                prev += i64::from(x);
                all.push(prev as u32);
                (x, shift) = (0, 0);
            }
        }
        all.extend_from_slice(&self.pending);
        if !self.pending.is_empty() {
            all.sort_unstable();
            all.dedup();
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_gives_back_its_positions_sorted_once_each() {
        let size = 3 * CHUNK + 17;
        let set = PositionSet::new(size, u64::MAX);
        let mut expected = Vec::new();
        // Repeats, any order, over several chunks and several adds (merged runs and pending).
        let mut x = 12345u64;
        for _ in 0..40 {
            let mut found: Vec<u64> = (0..100)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (x >> 20) % size
                })
                .collect();
            expected.extend_from_slice(&found);
            set.add(&mut found);
        }
        expected.sort_unstable();
        expected.dedup();
        let mut merged = Merged::new(set.take(), Vec::new(), size);
        let mut got = Vec::new();
        while let Some((c, offsets)) = merged.next_chunk().unwrap() {
            got.extend(offsets.iter().map(|&k| u64::from(c) * CHUNK + u64::from(k)));
        }
        assert_eq!(got, expected);
        assert!(set.take().is_empty());
        assert!(!set.full());
    }
}
