//! Wave 0 of a depth pass: the lower levels streamed and un-captured into bitmaps of where a
//! capture achieves (or exceeds) a parent's stored value, then the level judged chunk by chunk
//! and its depth-0 won and lost positions written to wave file 0, bucket by bucket, each
//! followed by a checkpoint.

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use awari_db::{Board, QuietMoves, TableError};
use rayon::prelude::*;

use super::{wave_path, window, DepthError, DepthPass, Stage, CHUNK};
use crate::grain::STREAM_TASK;
use crate::progress::Progress;
use crate::seed_records::encode_seeds;

/// Levels below this size cut wave 0's chunks into [`STREAM_TASK`]s, so that a small level (a
/// few chunks) keeps every thread busy (up to level 19).
const SPLIT_BELOW: u64 = 1 << 26;
/// Positions of wave 0 whose quiet children are ranked and prefetched together.
const SEEDS_GROUP: usize = 32;

/// Wave 0's capture bitmaps of one bucket of positions (`lo..`): where a capturing move
/// achieves the stored value, and (with the value check) where one exceeds it.
pub(super) struct CaptureBits {
    pub(super) achieved: Vec<AtomicU64>,
    pub(super) exceeded: Vec<AtomicU64>,
    pub(super) lo: u64,
}

impl CaptureBits {
    #[inline]
    fn set(&self, bits: &[AtomicU64], q: u64) {
        let k = q - self.lo;
        let word = &bits[(k / 64) as usize];
        let bit = 1u64 << (k % 64);
        if word.load(Relaxed) & bit == 0 {
            word.fetch_or(bit, Relaxed);
        }
    }

    #[inline]
    pub(super) fn get(&self, bits: &[AtomicU64], q: u64) -> bool {
        let k = q - self.lo;
        bits.get((k / 64) as usize)
            .is_some_and(|w| w.load(Relaxed) >> (k % 64) & 1 == 1)
    }
}

impl DepthPass<'_> {
    /// Wave 0 from position `done` on (its file holding `bytes` bytes so far), bucket by
    /// bucket, each followed by a checkpoint; returns the buckets made.
    pub(super) fn wave_zero(
        &mut self,
        done: u64,
        bytes: u64,
        progress: &dyn Progress,
    ) -> Result<u32, DepthError> {
        let n = self.level.seeds();
        let size = self.level.size();
        let path = wave_path(&self.out, n, 0);
        let io = |source| TableError::Io {
            path: path.clone(),
            source,
        };
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        file.set_len(bytes).map_err(io)?;
        let mut file = BufWriter::with_capacity(1 << 20, file);
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(bytes)).map_err(io)?;
        let buckets = crate::exits::bucket_ranges(done, size, self.bucket);
        progress.phase(
            "exits",
            (size - done) + buckets.len() as u64 * self.stream.positions(),
        );
        let mut written = bytes;
        for &(lo, hi) in &buckets {
            let words = (hi - lo).div_ceil(64) as usize;
            let bits = || (0..words).map(|_| AtomicU64::new(0)).collect::<Vec<_>>();
            let captures = CaptureBits {
                achieved: bits(),
                exceeded: if self.check.is_some() {
                    bits()
                } else {
                    Vec::new()
                },
                lo,
            };
            self.stream.run(
                lo..hi,
                |batch| {
                    // The entries of the batch's parents are read together (their misses
                    // overlap).
                    for &(q, _) in batch {
                        self.values.prefetch(q);
                    }
                    for &(q, candidate) in batch {
                        let v = self.values.get(q);
                        if candidate == v {
                            captures.set(&captures.achieved, q);
                        } else if candidate > v && self.check.is_some() {
                            captures.set(&captures.exceeded, q);
                        }
                    }
                },
                progress,
            )?;
            let exits = &captures;
            let chunks: Vec<u64> = (lo..hi).step_by(CHUNK as usize).collect();
            for window in chunks.chunks(window() as usize) {
                let records: Vec<Vec<u8>> = window
                    .par_iter()
                    .map(|&start| {
                        let end = (start + CHUNK).min(hi);
                        // Small levels only: a large one has chunks enough for every thread,
                        // and the parts would hold the chunk's seeds twice for a moment.
                        let seeds = if size < SPLIT_BELOW {
                            self.seeds_in_parts(start, end, exits)
                        } else {
                            self.seeds_of(start, end, exits)
                        };
                        progress.advance(end - start);
                        if seeds.is_empty() {
                            Vec::new()
                        } else {
                            encode_seeds((start / CHUNK) as u32, &seeds)
                        }
                    })
                    .collect();
                for r in records.iter().filter(|r| !r.is_empty()) {
                    file.write_all(r).map_err(io)?;
                    written += r.len() as u64;
                }
            }
            self.values.take_error()?;
            file.flush().map_err(io)?;
            file.get_ref().sync_data().map_err(io)?;
            self.stage = Stage::Seeds {
                done: hi,
                bytes: written,
            };
            if hi < size {
                self.write_checkpoint()?;
            }
        }
        self.wave_bytes.fetch_add(written - bytes, Relaxed);
        Ok(buckets.len() as u32)
    }

    /// [`DepthPass::seeds_of`] of `start..end` (within one chunk), its [`STREAM_TASK`]s judged
    /// in parallel; offsets from `start`.
    fn seeds_in_parts(&self, start: u64, end: u64, captures: &CaptureBits) -> Vec<(u32, bool)> {
        let parts: Vec<Vec<(u32, bool)>> = (start..end)
            .step_by(STREAM_TASK as usize)
            .collect::<Vec<u64>>()
            .into_par_iter()
            .map(|s| {
                let mut part = self.seeds_of(s, (s + STREAM_TASK).min(end), captures);
                // Offsets in the chunk, not in the part.
                let base = (s - start) as u32;
                part.iter_mut().for_each(|(o, _)| *o += base);
                part
            })
            .collect();
        parts.concat()
    }

    /// The positions of `start..end` at depth 0 that are won or lost (`captures` says where
    /// a capture achieves the stored value): a winner that is terminal or whose value a
    /// capture achieves, a loser with no quiet child of the opposite value. Offsets in the
    /// chunk, with the win flag.
    ///
    /// With [`DepthPass::check_values`], each entry is also recomputed from its children and
    /// compared with the stored one (see [`DepthPass::check_entry`]).
    fn seeds_of(&self, start: u64, end: u64, captures: &CaptureBits) -> Vec<(u32, bool)> {
        let mut out = Vec::new();
        let mut counter = QuietMoves::new();
        let mut boards = self.level.boards(start..end);
        // Positions are taken SEEDS_GROUP at a time: the children each one needs are ranked
        // and prefetched first, so that their cache misses overlap, then all are judged.
        let mut group: [(Board, i8, Option<i8>); SEEDS_GROUP] =
            [(Board::default(), 0, None); SEEDS_GROUP];
        let mut children = [0u64; SEEDS_GROUP * 6];
        let mut first = [0usize; SEEDS_GROUP + 1];
        let mut q0 = start;
        loop {
            let (mut g, mut n) = (0, 0);
            while g < SEEDS_GROUP {
                let Some(board) = boards.next() else { break };
                let v = self.values.get(q0 + g as u64);
                let terminal = counter.count(&board, self.rules).err();
                first[g] = n;
                // The value check reads every quiet child; without it only a loser's are
                // needed (does one have the opposite value?).
                if terminal.is_none() && (self.check.is_some() || v < 0) {
                    board.for_each_ranked_quiet_child(self.rules, &self.level, |c| {
                        self.values.prefetch(c);
                        children[n] = c;
                        n += 1;
                    });
                }
                group[g] = (board, v, terminal);
                g += 1;
            }
            first[g] = n;
            if g == 0 {
                return out;
            }
            for (i, (board, v, terminal)) in group[..g].iter().enumerate() {
                let (q, v, terminal) = (q0 + i as u64, *v, *terminal);
                let by_capture = captures.get(&captures.achieved, q);
                let quiet = &children[first[i]..first[i + 1]];
                let optimal_quiet = if self.check.is_some() {
                    self.check_entry(q, board, v, terminal, by_capture, quiet, captures)
                } else {
                    v < 0 && quiet.iter().any(|&c| self.values.get(c) == -v)
                };
                let seed = match v.signum() {
                    0 => false,
                    1 => terminal.is_some() || by_capture,
                    _ => !optimal_quiet,
                };
                if seed {
                    out.push(((q - start) as u32, v > 0));
                }
            }
            q0 += g as u64;
        }
    }
}
