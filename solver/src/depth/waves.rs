//! The waves of a depth pass: each wave's positions un-moved into their value-optimal
//! predecessors, which become new (a winner at once, a loser once all its value-optimal
//! children are done), then the new positions made done and written to the next wave file.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Mutex;

use std::path::Path;

use awari_db::{Board, Level};
use rayon::prelude::*;

use super::wave_state::{WaveState, DONE};
use super::work_files::wave_reader;
use super::{wave_path, DepthError, DepthPass, Unproven, CHUNK};
use crate::seed_records::decode_seeds;
use crate::settle::seed_boards;

/// Bytes of wave records propagated together.
const WAVE_BATCH: usize = 4 << 20;
/// Wave entries whose predecessors are generated together (their misses overlap).
const BATCH: usize = 32;
/// Wave entries a thread takes at once (one unrank, then successor steps).
const SLICE: usize = 4096;
/// Levels from this size on make every wave a checkpoint (see [`DepthPass::durable_waves`]):
/// level 15 (7.6 M positions) and up.
pub(super) const DURABLE_WAVES_FROM: u64 = 1 << 22 | 1 << 21;

/// No depth yet (see `wave_state`).
const OPEN: u64 = 0;

impl DepthPass<'_> {
    #[inline]
    fn wave(&self) -> &WaveState {
        self.state.as_ref().expect("state allocated")
    }

    /// Mark the positions of wave file `k` done; returns how many it holds.
    pub(super) fn mark_done(&self, k: u32) -> Result<u64, DepthError> {
        let path = wave_path(&self.out, self.level.seeds(), k);
        for_each_entry(&path, self.level.size(), |q, _| {
            self.wave().or_code(q, DONE)
        })
    }

    /// Propagate wave `k` (see [`propagate_file`]): the new positions of wave k+1 are
    /// marked.
    pub(super) fn propagate(&self, k: u32) -> Result<(), DepthError> {
        let path = wave_path(&self.out, self.level.seeds(), k);
        propagate_file(&path, &self.level, |group| self.expand(group))
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
                self.wave().prefetch(q);
                preds.push((q, pred, h, w));
            });
        }
        // Losers to test: (q, the value of the child, where its other quiet children start).
        let mut losers: Vec<(u64, i8, usize)> = Vec::new();
        let mut children: Vec<u64> = Vec::new();
        for &(q, pred, h, w) in &preds {
            if self.values.get(q) != -w || self.wave().code(q) != OPEN {
                continue;
            }
            if w < 0 {
                // A lost child: the winner's shortest conversion goes through it.
                self.wave().make_new(q);
            } else {
                // A won child: the loser's other quiet children are ranked and prefetched
                // now, tested below, so that their misses overlap.
                losers.push((q, w, children.len()));
                pred.all_quiet_children(self.rules, &self.level, Some(h), |c| {
                    self.values.prefetch(c);
                    self.wave().prefetch(c);
                    children.push(c);
                    true
                });
            }
        }
        for (i, &(q, w, from)) in losers.iter().enumerate() {
            let to = losers.get(i + 1).map_or(children.len(), |l| l.2);
            if children[from..to]
                .iter()
                .all(|&c| self.values.get(c) != w || self.wave().code(c) == DONE)
            {
                // Every value-optimal child of the loser is done: this wave found its deepest.
                self.wave().make_new(q);
            }
        }
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
        let (count, bytes) = self
            .wave()
            .write_new(&path, self.durable_waves(), |q| self.values.get(q) > 0)?;
        self.wave_bytes.fetch_add(bytes, Relaxed);
        Ok(count)
    }

    /// The positions left open: (won or lost ones, draws, the first `keep` of the former by
    /// index).
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
                // The chunk's first ones (so that the smallest indices of all are kept,
                // whatever order the chunks end in).
                let mut mine = Vec::new();
                for q in start..end {
                    let v = self.values.get(q);
                    if v == 0 {
                        draws += 1;
                    } else if self.wave().code(q) != DONE {
                        bad += 1;
                        if mine.len() < keep.max(1) {
                            mine.push(Unproven {
                                index: q,
                                board: self.level.unrank(q),
                                value: v,
                            });
                        }
                    }
                }
                examples
                    .lock()
                    .expect("no panic holds it")
                    .append(&mut mine);
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

/// Read wave file `path` back in batches and hand `expand` its entries (index, board), each
/// record's positions in parallel, [`BATCH`] at a time: a wave's propagation, in either pass.
pub(super) fn propagate_file(
    path: &Path,
    level: &Level,
    expand: impl Fn(&[(u64, Board)]) + Sync,
) -> Result<(), DepthError> {
    let mut reader = wave_reader(path, level.size())?;
    loop {
        let batch = reader.batch(WAVE_BATCH)?;
        if batch.is_empty() {
            return Ok(());
        }
        // Each record's slices are shared out too: a small level's wave is a few records
        // (one per chunk of 2^20 positions), which alone would leave threads idle.
        batch.par_iter().for_each(|(c, body)| {
            let start = u64::from(*c) * CHUNK;
            let seeds = decode_seeds(body, crate::seed_records::chunk_limit(*c, level.size()));
            seeds.par_chunks(SLICE).for_each(|slice| {
                let boards = seed_boards(level, start, slice.iter().copied());
                let entries: Vec<(u64, Board)> = slice
                    .iter()
                    .zip(boards)
                    .map(|(&(o, _), (b, _))| (start + u64::from(o), b))
                    .collect();
                for group in entries.chunks(BATCH) {
                    expand(group);
                }
            });
        });
    }
}

/// Read the records of `path` back in batches and hand `f` every entry (index, flag), each
/// record in parallel: a wave file or a class list of a level of `size` positions marked into
/// the states.
pub(super) fn for_each_entry(
    path: &Path,
    size: u64,
    f: impl Fn(u64, bool) + Sync,
) -> Result<u64, DepthError> {
    let mut reader = wave_reader(path, size)?;
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
                let seeds = decode_seeds(body, crate::seed_records::chunk_limit(*c, size));
                for &(o, flag) in &seeds {
                    if start + u64::from(o) < size {
                        f(start + u64::from(o), flag);
                    }
                }
                seeds.len() as u64
            })
            .sum::<u64>();
    }
}
