//! The waves of a depth pass: each wave's positions un-moved into their value-optimal
//! predecessors, which become new (a winner at once, a loser once all its value-optimal
//! children are done), then the new positions made done and written to the next wave file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use awari_db::table::{rename_into_place, tmp_path};
use awari_db::{Board, TableError};
use rayon::prelude::*;

use super::work_files::WaveReader;
use super::{wave_path, window, DepthError, DepthPass, Unproven, BLOCK, CHUNK, PER_WORD};
use crate::seed_records::{decode_seeds, encode_seeds};
use crate::settle::seed_boards;
use crate::state::for_bits64;

/// Bytes of wave records propagated together.
const WAVE_BATCH: usize = 4 << 20;
/// Wave entries whose predecessors are generated together (their misses overlap).
const BATCH: usize = 32;
/// Wave entries a thread takes at once (one unrank, then successor steps).
const SLICE: usize = 4096;
/// Levels from this size on make every wave a checkpoint (see [`DepthPass::durable_waves`]):
/// level 15 (7.6 M positions) and up.
const DURABLE_WAVES_FROM: u64 = 1 << 22 | 1 << 21;

const OPEN: u64 = 0;
const NEW: u64 = 1;
const DONE: u64 = 2;
/// Bit 0 of every 2-bit lane.
const LOW_LANES: u64 = 0x5555_5555_5555_5555;

impl DepthPass<'_> {
    #[inline]
    fn words(&self) -> &[AtomicU64] {
        self.state.as_ref().expect("state allocated").words()
    }

    #[inline]
    fn code(&self, q: u64) -> u64 {
        (self.words()[(q / PER_WORD) as usize].load(Relaxed) >> (2 * (q % PER_WORD))) & 3
    }

    /// Make open position `q` new; whether this call did (it was open).
    #[inline]
    fn make_new(&self, q: u64) -> bool {
        let word = &self.words()[(q / PER_WORD) as usize];
        let shift = 2 * (q % PER_WORD);
        // Only open and new positions reach here (a done one is never changed while waves
        // propagate), so setting the low bit moves open to new and leaves new as it is.
        let old = word.fetch_or(NEW << shift, Relaxed);
        if (old >> shift) & 3 != OPEN {
            return false;
        }
        let b = q / BLOCK;
        let bit = 1u64 << (b % 64);
        let map = &self.blocks[(b / 64) as usize];
        if map.load(Relaxed) & bit == 0 {
            map.fetch_or(bit, Relaxed);
        }
        true
    }

    /// Mark the positions of wave file `k` done; returns how many it holds.
    pub(super) fn mark_done(&self, k: u32) -> Result<u64, DepthError> {
        let mut reader = WaveReader::open(&wave_path(&self.out, self.level.seeds(), k))?;
        let mut count = 0;
        loop {
            let batch = reader.batch(WAVE_BATCH)?;
            if batch.is_empty() {
                return Ok(count);
            }
            count += batch
                .par_iter()
                .map(|(c, body)| {
                    let start = u64::from(*c) * CHUNK;
                    let seeds = decode_seeds(body);
                    for &(o, _) in &seeds {
                        let q = start + u64::from(o);
                        self.words()[(q / PER_WORD) as usize]
                            .fetch_or(DONE << (2 * (q % PER_WORD)), Relaxed);
                    }
                    seeds.len() as u64
                })
                .sum::<u64>();
        }
    }

    /// Propagate wave `k` (its file read back in batches, each record's positions in
    /// parallel): the new positions of wave k+1 are marked.
    pub(super) fn propagate(&self, k: u32) -> Result<(), DepthError> {
        let mut reader = WaveReader::open(&wave_path(&self.out, self.level.seeds(), k))?;
        loop {
            let batch = reader.batch(WAVE_BATCH)?;
            if batch.is_empty() {
                return Ok(());
            }
            // Each record's slices are shared out too: a small level's wave is a few records
            // (one per chunk of 2^20 positions), which alone would leave threads idle.
            batch.par_iter().for_each(|(c, body)| {
                let start = u64::from(*c) * CHUNK;
                let seeds = decode_seeds(body);
                seeds.par_chunks(SLICE).for_each(|slice| {
                    let boards = seed_boards(&self.level, start, slice.iter().copied());
                    let entries: Vec<(u64, Board)> = slice
                        .iter()
                        .zip(boards)
                        .map(|(&(o, _), (b, _))| (start + u64::from(o), b))
                        .collect();
                    for group in entries.chunks(BATCH) {
                        self.expand(group);
                    }
                });
            });
        }
    }

    /// The predecessors of a group of wave entries: generated and their values and states
    /// prefetched, then each value-optimal open one made new (a winner at once, a loser if its
    /// loss test passes).
    fn expand(&self, group: &[(u64, Board)]) {
        let mut preds: Vec<(u64, Board, u8, i8)> = Vec::with_capacity(group.len() * 6);
        for &(p, board) in group {
            let w = self.values.get(p);
            board.for_each_ranked_predecessor_pit(self.rules, &self.level, |q, pred, h| {
                self.values.prefetch(q);
                self.state_prefetch(q);
                preds.push((q, pred, h, w));
            });
        }
        // Losers to test: (q, the value of the child, where its other quiet children start).
        let mut losers: Vec<(u64, i8, usize)> = Vec::new();
        let mut children: Vec<u64> = Vec::new();
        for &(q, pred, h, w) in &preds {
            if self.values.get(q) != -w || self.code(q) != OPEN {
                continue;
            }
            if w < 0 {
                // A lost child: the winner's shortest conversion goes through it.
                self.make_new(q);
            } else {
                // A won child: the loser's other quiet children are ranked and prefetched
                // now, tested below, so that their misses overlap.
                losers.push((q, w, children.len()));
                pred.all_quiet_children(self.rules, &self.level, Some(h), |c| {
                    self.values.prefetch(c);
                    self.state_prefetch(c);
                    children.push(c);
                    true
                });
            }
        }
        for (i, &(q, w, from)) in losers.iter().enumerate() {
            let to = losers.get(i + 1).map_or(children.len(), |l| l.2);
            if children[from..to]
                .iter()
                .all(|&c| self.values.get(c) != w || self.code(c) == DONE)
            {
                // Every value-optimal child of the loser is done: this wave found its deepest.
                self.make_new(q);
            }
        }
    }

    #[inline]
    fn state_prefetch(&self, q: u64) {
        self.state
            .as_ref()
            .expect("state allocated")
            .prefetch((q / PER_WORD) as usize);
    }

    /// Whether each wave is a checkpoint (its file synced, then the checkpoint written): from
    /// [`DURABLE_WAVES_FROM`] positions on. A smaller level's pass takes about a second, which
    /// a kill loses at most; its hundred-odd waves would spend more than that in fsync.
    pub(super) fn durable_waves(&self) -> bool {
        self.level.size() >= DURABLE_WAVES_FROM
    }

    /// Make the new positions done and write them to wave file `k`, in index order (to its
    /// `.tmp`, synced where [`DepthPass::durable_waves`], renamed); returns how many there were.
    pub(super) fn collect(&self, k: u32) -> Result<u64, DepthError> {
        let path = wave_path(&self.out, self.level.seeds(), k);
        let tmp = tmp_path(&path);
        let io = |source| TableError::Io {
            path: tmp.clone(),
            source,
        };
        let mut file = BufWriter::with_capacity(1 << 20, File::create(&tmp).map_err(io)?);
        let chunks = self.level.size().div_ceil(CHUNK);
        let mut count = 0u64;
        let mut bytes = 0u64;
        let window = window();
        for first in (0..chunks).step_by(window as usize) {
            let records: Vec<(u64, Vec<u8>)> = (first..(first + window).min(chunks))
                .into_par_iter()
                .map(|c| {
                    let found = self.collect_chunk(c);
                    let r = if found.is_empty() {
                        Vec::new()
                    } else {
                        encode_seeds(c as u32, &found)
                    };
                    (found.len() as u64, r)
                })
                .collect();
            for (found, r) in records {
                count += found;
                if !r.is_empty() {
                    file.write_all(&r).map_err(io)?;
                    bytes += r.len() as u64;
                }
            }
        }
        file.flush().map_err(io)?;
        if self.durable_waves() {
            file.get_ref().sync_data().map_err(io)?;
            drop(file);
            rename_into_place(&tmp, &path)?;
        } else {
            drop(file);
            std::fs::rename(&tmp, &path).map_err(io)?;
        }
        self.wave_bytes.fetch_add(bytes, Relaxed);
        Ok(count)
    }

    /// The new positions of chunk `c`, made done: their offsets, with the win flag.
    fn collect_chunk(&self, c: u64) -> Vec<(u32, bool)> {
        let start = c * CHUNK;
        let end = (start + CHUNK).min(self.level.size());
        let mut found = Vec::new();
        let words = self.words();
        let first_block = start / BLOCK;
        let last_block = end.div_ceil(BLOCK);
        for mw in (first_block / 64)..last_block.div_ceil(64) {
            let map = &self.blocks[mw as usize];
            let lo = (first_block.max(mw * 64) - mw * 64) as u32;
            let hi = (last_block.min(mw * 64 + 64) - mw * 64) as u32;
            let span = if hi - lo == 64 {
                u64::MAX
            } else {
                ((1u64 << (hi - lo)) - 1) << lo
            };
            let bits = map.load(Relaxed) & span;
            if bits == 0 {
                continue;
            }
            map.fetch_and(!bits, Relaxed);
            for_bits64(bits, |b| {
                let block = mw * 64 + b as u64;
                let from = block * BLOCK;
                let to = (from + BLOCK).min(end);
                for wi in from / PER_WORD..to.div_ceil(PER_WORD) {
                    let word = &words[wi as usize];
                    let w = word.load(Relaxed);
                    let new = w & LOW_LANES & !(w >> 1);
                    if new == 0 {
                        continue;
                    }
                    word.store(w ^ (new | (new << 1)), Relaxed);
                    for_bits64(new, |lane| {
                        let q = wi * PER_WORD + (lane as u64) / 2;
                        found.push(((q - start) as u32, self.values.get(q) > 0));
                    });
                }
            });
        }
        found
    }

    /// The positions left open: (won or lost ones, draws, the first `keep` of the former).
    pub(super) fn open_positions(
        &self,
        keep: usize,
    ) -> Result<(u64, u64, Vec<Unproven>), DepthError> {
        let size = self.level.size();
        let examples = Mutex::new(Vec::new());
        let (unproven, draws) = (0..size.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let start = c * CHUNK;
                let end = (start + CHUNK).min(size);
                let (mut bad, mut draws) = (0u64, 0u64);
                for q in start..end {
                    let v = self.values.get(q);
                    if v == 0 {
                        draws += 1;
                    } else if self.code(q) != DONE {
                        bad += 1;
                        let mut ex = examples.lock().expect("no panic holds it");
                        if ex.len() < keep.max(1) {
                            ex.push(Unproven {
                                index: q,
                                board: self.level.unrank(q),
                                value: v,
                            });
                        }
                    }
                }
                (bad, draws)
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        self.values.take_error()?;
        let mut examples = examples.into_inner().expect("no panic holds it");
        examples.sort_by_key(|u| u.index);
        examples.truncate(keep.max(1));
        Ok((unproven, draws, examples))
    }
}
