//! Phase 1 of a two-bit level, the exits: in buckets of the level, the forward pass and the
//! lower levels streamed and un-captured into the bucket (see `crate::exits`), the bucket's
//! positions appended to the exit lists (one file per exit value, see `work_files`), a
//! checkpoint after each.

use std::sync::atomic::{AtomicI8, Ordering::Relaxed};

use awari_db::TableError;
use rayon::prelude::*;

use super::work_files::{ExitList, RecordWriter};
use super::{Stage, TwoBit, CHUNK};
use crate::exits::forward_bucket;
use crate::lowmem::LowMemoryBuilder;
use crate::progress::Progress;
use crate::seed_records::{finish_record, is_empty_record, new_record, push_seed};
use crate::settle::BuilderError;
use crate::settle::NO_EXIT;
use crate::state::StateArray;

impl TwoBit<'_> {
    /// The exits phase from position `done` on, bucket by bucket, each followed by a
    /// checkpoint; returns the passes made.
    pub(super) fn compute_exits(
        &mut self,
        done: u64,
        progress: &dyn Progress,
    ) -> Result<u32, BuilderError> {
        let size = self.level.size();
        let buckets = crate::exits::bucket_ranges(done, size, self.bucket);
        progress.phase(
            "exits",
            (size - done) + buckets.len() as u64 * self.stream.positions(),
        );
        // An anonymous map, not a vector: freeing hundreds of megabytes through the
        // allocator would raise its threshold for maps, and the settling phase's smaller
        // buffers would then stay in its heap after they are freed.
        let map: StateArray<AtomicI8> =
            StateArray::new(self.bucket.min(size) as usize).map_err(BuilderError::Alloc)?;
        for &(lo, hi) in &buckets {
            // Every byte is set by the forward pass below.
            let exits = &map.words()[..(hi - lo) as usize];
            forward_bucket(
                self.level,
                self.rules,
                lo,
                exits,
                CHUNK as usize,
                |e, exit| e.store(exit, Relaxed),
                progress,
            );
            self.stream.run(
                lo..hi,
                |batch| {
                    for &(q, exit) in batch {
                        LowMemoryBuilder::raise(exits, lo, q, exit);
                    }
                },
                progress,
            )?;
            self.write_exit_lists(lo, exits)?;
            self.stage = Stage::Exits { done: hi };
            if hi < size {
                self.checkpoint()?;
            }
        }
        Ok(buckets.len() as u32)
    }
}

impl TwoBit<'_> {
    /// Append the bucket starting at `lo` to the exit lists, chunk by chunk in order (a group
    /// of chunks encoded in parallel at a time), and sync them.
    fn write_exit_lists(&self, lo: u64, exits: &[AtomicI8]) -> Result<(), TableError> {
        let mut writers: Vec<Option<RecordWriter>> = (0..ExitList::COUNT).map(|_| None).collect();
        // Chunks encoded at once: their records are about a byte a position in all (one bit,
        // whose budget leaves little beside the bucket: one a thread).
        let per_thread = match self.bits {
            super::StateBits::Two => 2,
            super::StateBits::One => 1,
        };
        let group = CHUNK as usize * per_thread * rayon::current_num_threads();
        for (g, part) in exits.chunks(group).enumerate() {
            let first = (lo + (g * group) as u64) / CHUNK;
            let records: Vec<Vec<(usize, Vec<u8>)>> = part
                .par_chunks(CHUNK as usize)
                .enumerate()
                .map(|(k, chunk)| {
                    // Per list, its record so far and the last offset in it.
                    let mut lists: Vec<(Vec<u8>, i64)> = Vec::new();
                    lists.resize_with(ExitList::COUNT, || (new_record(), -1));
                    for (j, e) in chunk.iter().enumerate() {
                        let list = match e.load(Relaxed) {
                            0 => continue,
                            NO_EXIT => ExitList::NoExit,
                            e => ExitList::Value(e),
                        };
                        let (out, prev) = &mut lists[list.index()];
                        push_seed(out, prev, j as u32);
                    }
                    let c = (first + k as u64) as u32;
                    lists
                        .into_iter()
                        .enumerate()
                        .filter(|(_, (out, _))| !is_empty_record(out))
                        .map(|(x, (mut out, _))| {
                            finish_record(&mut out, c);
                            (x, out)
                        })
                        .collect()
                })
                .collect();
            for (x, record) in records.into_iter().flatten() {
                let w = match &mut writers[x] {
                    Some(w) => w,
                    slot => {
                        let path = self.work.join(ExitList::from_index(x).file_name());
                        slot.insert(RecordWriter::open(&path, true, &self.io)?)
                    }
                };
                w.write(&record)?;
            }
        }
        for w in writers.into_iter().flatten() {
            w.finish()?;
        }
        Ok(())
    }
}
