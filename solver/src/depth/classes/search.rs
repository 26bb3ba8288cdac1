//! One class of a class pass: the breadth-first search of the positions of value ±v, in
//! waves of two halves (won entries un-moved into their lost predecessors, then lost entries
//! into their won ones), and the positions it leaves open.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use awari_db::Board;
use rayon::prelude::*;

use super::super::wave_state::{WaveState, DONE};
use super::super::waves::{for_each_entry, propagate_file};
use super::super::{DepthError, Unproven, CHUNK, PER_WORD};
use super::lists::list_path;
use super::{ClassPass, ClassStage};
use crate::progress::Progress;

/// Open, won by v (see the module documentation of `classes`).
const OPEN_WON: u64 = 0;
/// Open, lost by v.
const OPEN_LOST: u64 = 1;
/// Losers whose quiet children are ranked and prefetched together.
const GROUP: usize = 32;

/// Wave file `k` of class `v`, won or lost, of level `n`'s pass in `dir`.
pub(crate) fn class_wave_path(dir: &Path, n: u32, v: u8, won: bool, k: u32) -> PathBuf {
    let sign = if won { '+' } else { '-' };
    dir.join(format!("level-{n:02}.dwave{sign}{v:02}-{k:04}"))
}

/// Remove the wave files of class `v` of level `n`'s pass in `dir` (and their `.tmp`s).
pub(crate) fn remove_waves(dir: &Path, n: u32, v: u8) {
    for k in 0.. {
        let mut any = false;
        for won in [true, false] {
            let p = class_wave_path(dir, n, v, won, k);
            let _ = std::fs::remove_file(awari_db::table::tmp_path(&p));
            any |= std::fs::remove_file(&p).is_ok();
        }
        if !any && k > 0 {
            break;
        }
    }
}

impl ClassPass<'_> {
    fn st(&self) -> &WaveState {
        self.state.as_ref().expect("state allocated")
    }

    /// Search class `v` to its end: from its start, or (`from`) after its wave `from`, which
    /// is on disk. Adds its waves to the histogram and its open positions to the unproven.
    pub(super) fn search_class(
        &mut self,
        v: u8,
        from: Option<u32>,
        keep: usize,
        progress: &dyn Progress,
    ) -> Result<(), DepthError> {
        let n = self.level.seeds();
        let st = self.st();
        st.fill(DONE);
        let (won_list, lost_list) = (
            list_path(&self.out, n, v, true),
            list_path(&self.out, n, v, false),
        );
        let exists = |p: &Path| p.exists();
        if exists(&won_list) {
            for_each_entry(&won_list, self.level.size(), |q, _| {
                st.flip_code(q, DONE ^ OPEN_WON)
            })?;
        }
        if exists(&lost_list) {
            for_each_entry(&lost_list, self.level.size(), |q, _| {
                st.flip_code(q, DONE ^ OPEN_LOST)
            })?;
        }
        let mut k = match from {
            None => {
                // Wave 0: the losers with no open won child (none is done yet), then the
                // flagged winners.
                if exists(&lost_list) {
                    propagate_file(&lost_list, &self.level, |group| {
                        let losers: Vec<(u64, Board, Option<u8>)> =
                            group.iter().map(|&(q, b)| (q, b, None)).collect();
                        self.test_losers(&losers);
                    })?;
                }
                let lost = self.collect(v, false, 0)?;
                if exists(&won_list) {
                    for_each_entry(&won_list, self.level.size(), |q, depth0| {
                        if depth0 {
                            st.make_new(q);
                        }
                    })?;
                }
                let won = self.collect(v, true, 0)?;
                progress.advance(lost + won);
                if self.durable_waves() {
                    self.stage = ClassStage::Wave {
                        class: v,
                        complete: 0,
                    };
                    self.write_checkpoint()?;
                }
                0
            }
            Some(k) => {
                let st = self.st();
                for j in 0..=k {
                    for (won, bits) in [(true, DONE ^ OPEN_WON), (false, DONE ^ OPEN_LOST)] {
                        let p = class_wave_path(&self.out, n, v, won, j);
                        let c =
                            for_each_entry(&p, self.level.size(), |q, _| st.flip_code(q, bits))?;
                        progress.advance(c);
                    }
                }
                k
            }
        };
        loop {
            let st = self.st();
            let (rules, level) = (self.rules, &self.level);
            // Half 1: won entries into their open lost predecessors (the loss test).
            let path = class_wave_path(&self.out, n, v, true, k);
            self.propagate_wave(&path, |group| {
                let mut losers = Vec::with_capacity(group.len() * 6);
                for &(_, board) in group {
                    board.for_each_ranked_predecessor_pit(rules, level, |q, pred, h| {
                        st.prefetch(q);
                        losers.push((q, pred, Some(h)));
                    });
                }
                losers.retain(|&(q, _, _)| st.code(q) == OPEN_LOST);
                self.test_losers(&losers);
            })?;
            let lost = self.collect(v, false, k + 1)?;
            // Half 2: lost entries into their open won predecessors.
            let path = class_wave_path(&self.out, n, v, false, k);
            self.propagate_wave(&path, |group| {
                let mut preds = Vec::with_capacity(group.len() * 6);
                for &(_, board) in group {
                    board.for_each_ranked_predecessor_pit(rules, level, |q, _, _| {
                        st.prefetch(q);
                        preds.push(q);
                    });
                }
                for q in preds {
                    if st.code(q) == OPEN_WON {
                        st.make_new(q);
                    }
                }
            })?;
            let won = self.collect(v, true, k + 1)?;
            let found = lost + won;
            progress.advance(found);
            if !self.end_wave(v, &mut k, found)? {
                break;
            }
        }
        let (count, found) = self.open_positions(v, keep);
        self.add_unproven(count, found, keep);
        Ok(())
    }

    /// The end of wave `k` of class `v`, which found `found` positions: none ends the class
    /// (false; its empty wave files removed); else they are counted at depth k+1, `k` moves
    /// on, and a durable wave is a checkpoint (true).
    pub(super) fn end_wave(&mut self, v: u8, k: &mut u32, found: u64) -> Result<bool, DepthError> {
        let n = self.level.seeds();
        if found == 0 {
            for won in [true, false] {
                let _ = std::fs::remove_file(class_wave_path(&self.out, n, v, won, *k + 1));
            }
            return Ok(false);
        }
        let d = (*k + 1) as usize;
        if self.histogram.len() <= d {
            self.histogram.resize(d + 1, 0);
        }
        self.histogram[d] += found;
        if *k + 1 == u32::from(u16::MAX) {
            return Err(DepthError::TooDeep { level: n });
        }
        *k += 1;
        if self.durable_waves() {
            self.stage = ClassStage::Wave {
                class: v,
                complete: *k,
            };
            self.write_checkpoint()?;
        }
        Ok(true)
    }

    /// The loss test of each (loser, board, the move not to look at): it becomes new if none
    /// of its quiet children is open won.
    fn test_losers(&self, losers: &[(u64, Board, Option<u8>)]) {
        let st = self.st();
        self.loss_test(
            losers,
            |c| st.prefetch(c),
            |c| st.code(c) == OPEN_WON,
            |q| {
                st.make_new(q);
            },
        );
    }

    /// The loss test of each (loser, board, the move not to look at) against the states
    /// `open_won` tells: `lost(q)` for each none of whose quiet children is open won. The
    /// children are ranked and prefetched a group at a time, then tested, so that their
    /// misses overlap.
    pub(super) fn loss_test(
        &self,
        losers: &[(u64, Board, Option<u8>)],
        prefetch: impl Fn(u64),
        open_won: impl Fn(u64) -> bool,
        mut lost: impl FnMut(u64),
    ) {
        let mut children: Vec<u64> = Vec::with_capacity(GROUP * 6);
        let mut first = Vec::with_capacity(GROUP + 1);
        for group in losers.chunks(GROUP) {
            children.clear();
            first.clear();
            for &(_, board, skip) in group {
                first.push(children.len());
                board.all_quiet_children(self.rules, &self.level, skip, |c| {
                    prefetch(c);
                    children.push(c);
                    true
                });
            }
            first.push(children.len());
            for (i, &(q, _, _)) in group.iter().enumerate() {
                if !children[first[i]..first[i + 1]]
                    .iter()
                    .any(|&c| open_won(c))
                {
                    lost(q);
                }
            }
        }
    }

    /// [`propagate_file`] of a wave file: one that is not there is an empty wave where waves
    /// are not durable (see `WaveState::write_new`), and an error where they are.
    pub(super) fn propagate_wave(
        &self,
        path: &Path,
        f: impl Fn(&[(u64, Board)]) + Sync,
    ) -> Result<(), DepthError> {
        if !self.durable_waves() && !path.exists() {
            return Ok(());
        }
        propagate_file(path, &self.level, f)?;
        Ok(())
    }

    /// Make the new positions done and write them to the won or lost wave file `k` of class
    /// `v`; returns how many there were.
    fn collect(&self, v: u8, won: bool, k: u32) -> Result<u64, DepthError> {
        let path = class_wave_path(&self.out, self.level.seeds(), v, won, k);
        let (count, bytes) = self.st().write_new(&path, self.durable_waves(), |_| won)?;
        self.wave_bytes
            .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
        Ok(count)
    }

    /// The positions class `v` left open: how many, and the first `keep` (at least one) by
    /// index.
    fn open_positions(&self, v: u8, keep: usize) -> (u64, Vec<Unproven>) {
        let st = self.st();
        let size = self.level.size();
        let keep = keep.max(1);
        let found = Mutex::new(Vec::new());
        let count = (0..size.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let (from, to) = (
                    c * CHUNK / PER_WORD,
                    ((c + 1) * CHUNK).min(size).div_ceil(PER_WORD),
                );
                let mut count = 0u64;
                let mut mine = Vec::new();
                for wi in from..to {
                    let w = st.words()[wi as usize].load(std::sync::atomic::Ordering::Relaxed);
                    // Open lanes have their high bit clear (the padding past the level is done).
                    let open = !w >> 1 & 0x5555_5555_5555_5555;
                    if open == 0 {
                        continue;
                    }
                    count += u64::from(open.count_ones());
                    crate::state::for_bits64(open, |lane| {
                        if mine.len() < keep {
                            let q = wi * PER_WORD + lane as u64 / 2;
                            // (Class 128 holds only −128: no i8 is +128.)
                            let value = if st.code(q) == OPEN_WON {
                                v as i8
                            } else {
                                (v as i8).wrapping_neg()
                            };
                            mine.push(Unproven {
                                index: q,
                                board: self.level.unrank(q),
                                value,
                            });
                        }
                    });
                }
                found.lock().expect("no panic holds it").append(&mut mine);
                count
            })
            .sum();
        let mut found = found.into_inner().expect("no panic holds it");
        found.sort_by_key(|u| u.index);
        found.truncate(keep);
        (count, found)
    }
}
