//! Phase 1 of a two-bit level, the exits: in buckets of the level, the forward pass and the
//! lower levels streamed and un-captured into the bucket (see `crate::exits`), the bucket's
//! exit bytes written to the work file and its chunks' masks set, a checkpoint after each.

use std::sync::atomic::{AtomicI8, Ordering::Relaxed};

use awari_db::{QuietMoves, TableError};
use rayon::prelude::*;

use super::codes::{exit_byte, mask_bit};
use super::{Stage, TwoBit, CHUNK};
use crate::exits::forward;
use crate::lowmem::LowMemoryBuilder;
use crate::progress::Progress;
use crate::settle::NO_EXIT;

impl TwoBit<'_> {
    /// The exits phase from position `done` on, bucket by bucket, each followed by a
    /// checkpoint; returns the passes made.
    pub(super) fn compute_exits(
        &mut self,
        done: u64,
        progress: &dyn Progress,
    ) -> Result<u32, TableError> {
        let size = self.level.size();
        let buckets: Vec<(u64, u64)> = (done..size)
            .step_by(self.bucket as usize)
            .map(|s| (s, (s + self.bucket).min(size)))
            .collect();
        progress.phase(
            "exits",
            (size - done) + buckets.len() as u64 * self.stream.positions(),
        );
        let mut exits: Vec<AtomicI8> = Vec::new();
        for &(lo, hi) in &buckets {
            exits.clear();
            exits.resize_with((hi - lo) as usize, || AtomicI8::new(NO_EXIT));
            let level = self.level;
            let rules = self.rules;
            exits
                .par_chunks(CHUNK as usize)
                .enumerate()
                .for_each(|(k, part)| {
                    let start = lo + k as u64 * CHUNK;
                    let mut counter = QuietMoves::new();
                    for (e, board) in part
                        .iter()
                        .zip(level.boards(start..start + part.len() as u64))
                    {
                        e.store(forward(&board, rules, &mut counter).0, Relaxed);
                    }
                    progress.advance(part.len() as u64);
                });
            self.stream.run(
                lo..hi,
                |batch| {
                    for &(q, exit) in batch {
                        LowMemoryBuilder::raise(&exits, lo, q, exit);
                    }
                },
                progress,
            )?;
            let masks: Vec<(usize, u128)> = exits
                .par_chunks(CHUNK as usize)
                .enumerate()
                .map(|(k, part)| {
                    let start = lo + k as u64 * CHUNK;
                    let bytes: Vec<u8> = part.iter().map(|e| exit_byte(e.load(Relaxed))).collect();
                    let mask = bytes.iter().fold(0u128, |m, &b| m | mask_bit(b));
                    self.write_work(start, &bytes)?;
                    Ok(((start / CHUNK) as usize, mask))
                })
                .collect::<Result<_, TableError>>()?;
            for (c, m) in masks {
                self.chunks.masks[c] = m;
            }
            self.stage = Stage::Exits { done: hi };
            if hi < size {
                self.checkpoint(false)?;
            }
        }
        Ok(buckets.len() as u32)
    }
}
