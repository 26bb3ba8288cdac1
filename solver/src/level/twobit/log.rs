//! The log of settled positions: every position a step settles (the stream's seeds and what
//! the propagation reaches), with its value ±step, gathered in RAM across steps and, when the
//! gathered entries reach the capacity or a checkpoint is due, sorted and appended to the
//! **part files**, one per exit bucket of the level (`part-KKK`: the positions of bucket K).
//! The conversion then gives the table's values a bucket at a time, each from its part file
//! alone, in as much RAM as the exits phase used (see `convert`).
//!
//! A part file is a sequence of records (`crate::seed_records`: chunk, length, check, body),
//! a flush's records in increasing chunk order, each body: per position, in increasing
//! order, a LEB128 varint of (gap from the previous offset in the chunk + 1), then its value
//! (i8: +step won, −step lost), then, in a build that writes depths (its work directory holds
//! the file `depths`: see `work_files`), a LEB128 varint of its depth to conversion (the wave
//! of its step that settled it).

use std::path::Path;
use std::sync::Mutex;

use awari_db::TableError;
use rayon::prelude::*;

use super::work_files::{part_name, IoCount, RecordWriter};
use super::CHUNK;
use crate::seed_records::{finish_record, new_record};

/// Where a log entry's position starts: below it the depth (16 bits), the step (6) and
/// whether it is won (1). Level 48's positions take 38 bits: 61 in all.
const POS_SHIFT: u32 = 23;
const _: () = assert!(203_648_015_935 < 1u64 << (64 - POS_SHIFT)); // level 48's size

/// A log entry: position, step, whether it is won and its depth (0 in a build that writes
/// none), ordered by position.
#[inline]
pub(super) fn entry(q: u64, step: u32, won: bool, depth: u16) -> u64 {
    q << POS_SHIFT | u64::from(depth) << 7 | u64::from(step) << 1 | u64::from(won)
}

/// The depth of an entry.
#[inline]
fn depth(e: u64) -> u16 {
    (e >> 7) as u16
}

/// The value of an entry: +step if won, −step if lost.
#[inline]
fn value(e: u64) -> i8 {
    let step = ((e >> 1) & 63) as i8;
    if e & 1 == 1 {
        step
    } else {
        -step
    }
}

/// The settled positions gathered since the last flush, and where they go.
pub(super) struct SettledLog<'a> {
    work: &'a Path,
    /// Positions per part file (the exit bucket).
    bucket: u64,
    /// Entries gathered before they are flushed (see [`SettledLog::flush_if_full`]).
    capacity: usize,
    gathered: Mutex<Vec<u64>>,
    io: &'a IoCount,
    /// Whether the part files carry depths.
    depths: bool,
}

impl<'a> SettledLog<'a> {
    pub(super) fn new(
        work: &'a Path,
        bucket: u64,
        capacity: usize,
        io: &'a IoCount,
        depths: bool,
    ) -> Self {
        SettledLog {
            work,
            bucket,
            capacity,
            // Allocated once, never beyond twice the capacity (see `add`); untouched pages
            // cost no memory.
            gathered: Mutex::new(Vec::with_capacity(2 * capacity)),
            io,
            depths,
        }
    }

    /// The most entries to gather from one batch of seeds, so that a batch keeps within the
    /// capacity: the batch's bytes of seed records (about a seed a byte).
    pub(super) fn batch_bytes(&self, most: usize) -> usize {
        (self.capacity / 4).clamp(1 << 16, most)
    }

    /// Add `entries` (see [`entry`]). Called from worker threads; should the gathered
    /// entries reach twice the capacity (a batch that settled far more than its seeds),
    /// they are flushed at once, on this thread (no rayon call under the lock: a worker
    /// waiting in one may run another task that waits for the lock).
    pub(super) fn add(&self, entries: &[u64]) -> Result<(), TableError> {
        let mut g = self.gathered.lock().expect("log lock");
        for part in entries.chunks(self.capacity) {
            if g.len() + part.len() > 2 * self.capacity {
                g.sort_unstable();
                self.append(&g)?;
                g.clear();
            }
            g.extend_from_slice(part);
        }
        Ok(())
    }

    /// Flush if the gathered entries reach the capacity. Called between batches, outside
    /// the workers.
    pub(super) fn flush_if_full(&self) -> Result<(), TableError> {
        let full = self.gathered.lock().expect("log lock").len() >= self.capacity;
        if full {
            self.flush()?;
        }
        Ok(())
    }

    /// Sort what is gathered and append it to the part files, synced. Called between
    /// batches, when no worker adds. The vector is kept: it is allocated once.
    pub(super) fn flush(&self) -> Result<(), TableError> {
        let mut g = self.gathered.lock().expect("log lock");
        g.par_sort_unstable();
        self.append(&g)?;
        g.clear();
        Ok(())
    }

    /// Append sorted `entries` to the part files, a record per chunk, and sync them.
    fn append(&self, entries: &[u64]) -> Result<(), TableError> {
        let chunk_shift = CHUNK.trailing_zeros() + POS_SHIFT;
        let mut rest = entries;
        while let Some(&first) = rest.first() {
            let part = (first >> POS_SHIFT) / self.bucket;
            let end = ((part + 1) * self.bucket) << POS_SHIFT;
            let n = rest.partition_point(|&e| e < end);
            let path = self.work.join(part_name(part as u32));
            let mut out = RecordWriter::open(&path, true, self.io)?;
            for run in rest[..n].chunk_by(|a, b| a >> chunk_shift == b >> chunk_shift) {
                out.write(&encode(run, chunk_shift, self.depths))?;
            }
            out.finish()?;
            rest = &rest[n..];
        }
        Ok(())
    }
}

/// Append `x` as a LEB128 varint.
fn push_varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// One chunk's sorted entries as a part-file record (with their depths where `depths`).
fn encode(run: &[u64], chunk_shift: u32, depths: bool) -> Vec<u8> {
    let mut out = new_record();
    let mut prev: i64 = -1;
    for &e in run {
        let k = ((e >> POS_SHIFT) % CHUNK) as i64;
        push_varint(&mut out, (k - prev) as u64);
        prev = k;
        out.push(value(e) as u8);
        if depths {
            push_varint(&mut out, u64::from(depth(e)));
        }
    }
    finish_record(&mut out, (run[0] >> chunk_shift) as u32);
    out
}

/// Call `f(offset, value, depth)` for every position of a part-file record's body below
/// `limit` (its chunk's positions in the level), the body carrying depths where `depths` (else
/// each depth is 0). A body its writer wrote decodes whole; on any other bytes this never
/// panics, and stops at the first offset at or past `limit`, a cut value or a cut depth.
pub(super) fn decode(body: &[u8], limit: u32, depths: bool, mut f: impl FnMut(u32, i8, u16)) {
    let mut i = 0;
    let mut prev = -1i64;
    let end = i64::from(limit).min(CHUNK as i64);
    while i < body.len() {
        let Some(x) = read_varint(body, &mut i) else {
            return;
        };
        // Every gap is at least 1: 0 is not a record's.
        let gap = x.min(CHUNK) as i64;
        prev += gap;
        let (true, Some(&v)) = (gap > 0 && prev < end, body.get(i)) else {
            return;
        };
        i += 1;
        let d = if depths {
            match read_varint(body, &mut i) {
                Some(d) => d.min(u64::from(u16::MAX)) as u16,
                None => return,
            }
        } else {
            0
        };
        f(prev as u32, v as i8, d);
    }
}

/// The LEB128 varint at `body[*i..]`, moving `i` past it (`None`: cut short).
fn read_varint(body: &[u8], i: &mut usize) -> Option<u64> {
    let (mut x, mut shift) = (0u64, 0u32);
    while let Some(&b) = body.get(*i) {
        *i += 1;
        if shift < 64 {
            x |= u64::from(b & 0x7f) << shift;
        }
        shift += 7;
        if b < 0x80 {
            return Some(x);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_garbage_never_leaves_the_chunk() {
        let mut rng = awari_db::SplitMix64(12);
        for depths in [false, true] {
            for len in 0..300 {
                let bytes: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
                decode(&bytes, u32::MAX, depths, |k, _, _| {
                    assert!(u64::from(k) < CHUNK)
                });
            }
            decode(&[0xff; 40], u32::MAX, depths, |_, _, _| {
                panic!("nothing decodes from this")
            });
        }
    }

    #[test]
    fn records_round_trip_with_and_without_depths() {
        let mut rng = awari_db::SplitMix64(9);
        for depths in [false, true] {
            let mut entries: Vec<u64> = (0..5000)
                .map(|_| {
                    let depth = if depths { rng.below(1 << 16) as u16 } else { 0 };
                    entry(
                        7 * CHUNK + rng.below(CHUNK),
                        1 + rng.below(48) as u32,
                        rng.below(2) == 1,
                        depth,
                    )
                })
                .collect();
            entries.push(entry(7 * CHUNK, 48, false, u16::from(depths) * u16::MAX));
            entries.sort_unstable();
            entries.dedup_by_key(|e| *e >> POS_SHIFT);
            let shift = CHUNK.trailing_zeros() + POS_SHIFT;
            let record = encode(&entries, shift, depths);
            assert_eq!(u32::from_le_bytes(record[0..4].try_into().unwrap()), 7);
            let mut back = Vec::new();
            decode(
                crate::seed_records::record_body(&record),
                u32::MAX,
                depths,
                |k, v, d| back.push((k, v, d)),
            );
            let want: Vec<(u32, i8, u16)> = entries
                .iter()
                .map(|&e| (((e >> POS_SHIFT) % CHUNK) as u32, value(e), depth(e)))
                .collect();
            assert_eq!(back, want);
            assert!(want.iter().any(|&(_, v, _)| v == -48));
            assert_eq!(want.iter().any(|&(_, _, d)| d == u16::MAX), depths);
        }
    }

    #[test]
    fn the_last_position_of_level_48_keeps_its_fields() {
        let q = awari_db::level_size(48) - 1;
        let e = entry(q, 48, true, u16::MAX);
        assert_eq!((e >> POS_SHIFT, value(e), depth(e)), (q, 48, u16::MAX));
    }
}
