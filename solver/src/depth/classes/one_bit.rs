//! One class of a class pass in **one bit a position**: the same waves, the same wave files
//! and the same depths as `search`'s two bits, for a memory of about 0.16 bytes a position.
//!
//! The bit says *open*: the position is of the class (value ±v) and has no depth yet. Its
//! sign is not kept, because no question of the search needs it where the bit is set:
//!
//! - a position lost by v has no quiet child of value −v (it would win by v through it), so
//!   every quiet child of the class of a loser is won: "is this child open won" is "is it
//!   open";
//! - likewise every predecessor of the class of a lost position is won by v;
//! - a predecessor q of a won position may be either. If q is won and open, and its depth is
//!   not 0, a quiet move to a child lost by v achieves its value; that child is in wave k
//!   (then q is a predecessor of a lost entry of wave k, found in the same wave) or open
//!   (then q fails the loss test). So q passes the loss test as a loser exactly when it is
//!   lost, or won and found by the lost entries of the same wave.
//!
//! So each wave k, with no bit changed until its end:
//!
//! 1. every lost entry of wave k is un-moved; its open predecessors are won at depth k+1;
//! 2. every won entry of wave k is un-moved; its open predecessors none of whose quiet
//!    children is open are lost at depth k+1, less those step 1 found;
//! 3. both are gathered in [`PositionSet`]s (spilled to work files, `level-NN.dwave±VV-found-S`,
//!    when they outgrow their share of the memory), then written, sorted, as wave file k+1,
//!    won then lost, their bits cleared as they are.
//!
//! Wave 0 is the same: the losers none of whose quiet children is open, and the won positions
//! whose list flag says depth 0 (written straight from the class list).
//!
//! Memory: the bits (an eighth of a byte a position), the two sets within the budget's rest,
//! and a fixed part (see `budget::one_bit_found`).

use crate::seed_records::Body;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use awari_db::Board;
use rayon::prelude::*;

use super::super::waves::{for_each_entry, propagate_file};
use super::super::work_files::{wave_reader, WaveWriter};
use super::super::{DepthError, Unproven, CHUNK};
use super::lists::list_path;
use super::search::class_wave_path;
use super::{ClassPass, ClassStage};
use crate::position_set::SpillingSet;
use crate::progress::Progress;
use crate::seed_records::{chunk_limit, encode_seeds, for_each_seed, RecordReader};
use crate::state::{for_bits64, StateArray};

/// Write buffer of a wave file.
const WRITE_BUFFER: usize = 64 << 10;
/// Read buffer of each class list read in order.
const READ_BUFFER: usize = 64 << 10;

/// One bit a position: set while the position is of the class and has no depth yet.
pub(in crate::depth) struct OpenBits {
    words: StateArray<AtomicU64>,
    size: u64,
}

impl OpenBits {
    /// The bits of `size` positions, all clear.
    pub(in crate::depth) fn new(size: u64) -> std::io::Result<OpenBits> {
        Ok(OpenBits {
            words: StateArray::new(size.div_ceil(64) as usize)?,
            size,
        })
    }

    fn clear_all(&self) {
        self.words
            .words()
            .par_chunks(1 << 16)
            .for_each(|ws| ws.iter().for_each(|w| w.store(0, Relaxed)));
    }

    #[inline]
    fn set(&self, q: u64) {
        self.words.words()[(q / 64) as usize].fetch_or(1 << (q % 64), Relaxed);
    }

    #[inline]
    fn clear(&self, q: u64) {
        self.words.words()[(q / 64) as usize].fetch_and(!(1 << (q % 64)), Relaxed);
    }

    #[inline]
    fn is_open(&self, q: u64) -> bool {
        self.words.words()[(q / 64) as usize].load(Relaxed) >> (q % 64) & 1 != 0
    }

    #[inline]
    fn prefetch(&self, q: u64) {
        self.words.prefetch((q / 64) as usize);
    }
}

impl ClassPass<'_> {
    fn open_bits(&self) -> &OpenBits {
        self.open_bits.as_ref().expect("open bits allocated")
    }

    /// Search class `v` to its end in one bit a position, as `search_class` does in two: from
    /// its start, or (`from`) after its wave `from`, which is on disk.
    pub(super) fn search_class_one_bit(
        &mut self,
        v: u8,
        from: Option<u32>,
        keep: usize,
        capacity: u64,
        progress: &dyn Progress,
    ) -> Result<(), DepthError> {
        let n = self.level.seeds();
        let size = self.level.size();
        let bits = self.open_bits();
        bits.clear_all();
        let (won_list, lost_list) = (
            list_path(&self.out, n, v, true),
            list_path(&self.out, n, v, false),
        );
        for list in [&won_list, &lost_list] {
            if list.exists() {
                for_each_entry(list, size, |q, _| bits.set(q))?;
            }
        }
        let stem = |won: bool| {
            let sign = if won { '+' } else { '-' };
            self.out
                .join(format!("level-{n:02}.dwave{sign}{v:02}-found-"))
        };
        let won = SpillingSet::new(stem(true), size, capacity / 2);
        let lost = SpillingSet::new(stem(false), size, capacity / 2);
        let mut k = match from {
            None => {
                // Wave 0: the losers none of whose quiet children is open (won), then the
                // winners flagged depth 0.
                if lost_list.exists() {
                    propagate_file(&lost_list, &self.level, |group| {
                        let losers: Vec<(u64, Board, Option<u8>)> =
                            group.iter().map(|&(q, b)| (q, b, None)).collect();
                        let mut passed = Vec::new();
                        self.loss_test(
                            &losers,
                            |c| bits.prefetch(c),
                            |c| bits.is_open(c),
                            |q| passed.push(q),
                        );
                        lost.add(&mut passed);
                    })?;
                }
                let w =
                    self.write_flagged(&won_list, &class_wave_path(&self.out, n, v, true, 0))?;
                let l = self.write_found(
                    &lost,
                    &class_wave_path(&self.out, n, v, false, 0),
                    false,
                    None,
                )?;
                progress.advance(w + l);
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
                for j in 0..=k {
                    for sign in [true, false] {
                        let p = class_wave_path(&self.out, n, v, sign, j);
                        progress.advance(for_each_entry(&p, size, |q, _| bits.clear(q))?);
                    }
                }
                k
            }
        };
        loop {
            let bits = self.open_bits();
            let (rules, level) = (self.rules, &self.level);
            // Lost entries into their open predecessors: won.
            let path = class_wave_path(&self.out, n, v, false, k);
            self.propagate_wave(&path, |group| {
                let mut preds = Vec::with_capacity(group.len() * 6);
                for &(_, board) in group {
                    board.for_each_ranked_predecessor_pit(rules, level, |q, _, _| {
                        bits.prefetch(q);
                        preds.push(q);
                    });
                }
                preds.retain(|&q| bits.is_open(q));
                won.add(&mut preds);
            })?;
            // Won entries into their open predecessors that pass the loss test: lost, unless
            // won above.
            let path = class_wave_path(&self.out, n, v, true, k);
            self.propagate_wave(&path, |group| {
                let mut losers = Vec::with_capacity(group.len() * 6);
                for &(_, board) in group {
                    board.for_each_ranked_predecessor_pit(rules, level, |q, pred, h| {
                        bits.prefetch(q);
                        losers.push((q, pred, Some(h)));
                    });
                }
                losers.retain(|&(q, _, _)| bits.is_open(q));
                let mut passed = Vec::new();
                self.loss_test(
                    &losers,
                    |c| bits.prefetch(c),
                    |c| bits.is_open(c),
                    |q| passed.push(q),
                );
                lost.add(&mut passed);
            })?;
            let won_path = class_wave_path(&self.out, n, v, true, k + 1);
            let w = self.write_found(&won, &won_path, true, None)?;
            let won_file = (w > 0 || self.durable_waves()).then_some(won_path.as_path());
            let l = self.write_found(
                &lost,
                &class_wave_path(&self.out, n, v, false, k + 1),
                false,
                won_file,
            )?;
            let found = w + l;
            progress.advance(found);
            if !self.end_wave(v, &mut k, found)? {
                break;
            }
        }
        if std::env::var_os("AWARI_TIMINGS").is_some() {
            let spilled = |f: &SpillingSet| f.spills_written();
            eprintln!(
                "level {n} depth (classes, one bit): class {v}: {} waves, {} spill files",
                k + 1,
                spilled(&won) + spilled(&lost)
            );
        }
        let (count, found) = self.open_one_bit(v, keep, &won_list)?;
        self.add_unproven(count, found, keep);
        Ok(())
    }

    /// Write the positions of `found`, less those of the wave file `except` (the same wave's
    /// won), to the wave file `path` in order, each flagged `won` (as `search` flags them),
    /// their bits cleared; returns how many.
    fn write_found(
        &self,
        found: &SpillingSet,
        path: &Path,
        won: bool,
        except: Option<&Path>,
    ) -> Result<u64, DepthError> {
        let size = self.level.size();
        let mut except = except.map(|p| wave_reader(p, size)).transpose()?;
        let mut out = WaveWriter::new(path, self.durable_waves(), WRITE_BUFFER)?;
        let mut merged = found.merged()?;
        let bits = self.open_bits();
        let mut count = 0;
        while let Some((c, mut offsets)) = merged.next_chunk()? {
            if let Some(r) = &mut except {
                while let Some((rc, body)) = r.next_before(c + 1)? {
                    if rc == c {
                        let mut known = offsets.as_slice();
                        let mut drop = Vec::new();
                        for_each_seed(&body, chunk_limit(c, size), |o, _| {
                            while known.first().is_some_and(|&x| x < o) {
                                known = &known[1..];
                            }
                            if known.first() == Some(&o) {
                                drop.push(o);
                            }
                            !known.is_empty()
                        });
                        offsets.retain(|o| drop.binary_search(o).is_err());
                    }
                }
            }
            if offsets.is_empty() {
                continue;
            }
            let start = u64::from(c) * CHUNK;
            for &o in &offsets {
                bits.clear(start + u64::from(o));
            }
            count += offsets.len() as u64;
            let seeds: Vec<(u32, bool)> = offsets.into_iter().map(|o| (o, won)).collect();
            out.write(&encode_seeds(c, &seeds))?;
        }
        drop(merged);
        found.remove_spills()?;
        self.wave_bytes.fetch_add(out.finish()?, Relaxed);
        Ok(count)
    }

    /// Write the won positions of the class list `list` flagged depth 0 to the wave file
    /// `path` (wave 0, won), their bits cleared; returns how many.
    fn write_flagged(&self, list: &Path, path: &Path) -> Result<u64, DepthError> {
        let size = self.level.size();
        let mut out = WaveWriter::new(path, self.durable_waves(), WRITE_BUFFER)?;
        let bits = self.open_bits();
        let mut count = 0;
        if list.exists() {
            let mut r = RecordReader::open(list, 0, READ_BUFFER, size, Body::Seeds, None)?;
            while let Some((c, body)) = r.next_record()? {
                let mut seeds = Vec::new();
                for_each_seed(&body, chunk_limit(c, size), |o, depth0| {
                    if depth0 {
                        seeds.push((o, true));
                    }
                    true
                });
                if seeds.is_empty() {
                    continue;
                }
                for &(o, _) in &seeds {
                    bits.clear(u64::from(c) * CHUNK + u64::from(o));
                }
                count += seeds.len() as u64;
                out.write(&encode_seeds(c, &seeds))?;
            }
        }
        self.wave_bytes.fetch_add(out.finish()?, Relaxed);
        Ok(count)
    }

    /// The positions class `v` left open: how many, and the first `keep` (at least one) by
    /// index, each signed by whether the won list `won_list` holds it.
    fn open_one_bit(
        &self,
        v: u8,
        keep: usize,
        won_list: &Path,
    ) -> Result<(u64, Vec<Unproven>), DepthError> {
        let words = self.open_bits().words.words();
        let keep = keep.max(1);
        let count: u64 = words
            .par_iter()
            .map(|w| u64::from(w.load(Relaxed).count_ones()))
            .sum();
        if count == 0 {
            return Ok((0, Vec::new()));
        }
        let mut first = Vec::new();
        for (wi, w) in words.iter().enumerate() {
            for_bits64(w.load(Relaxed), |b| {
                if first.len() < keep {
                    first.push(wi as u64 * 64 + b as u64);
                }
            });
            if first.len() >= keep {
                break;
            }
        }
        let won: Mutex<Vec<u64>> = Mutex::new(Vec::new());
        if won_list.exists() {
            for_each_entry(won_list, self.open_bits().size, |q, _| {
                if first.binary_search(&q).is_ok() {
                    won.lock().expect("no panic holds it").push(q);
                }
            })?;
        }
        let won = won.into_inner().expect("no panic holds it");
        let found = first
            .into_iter()
            .map(|q| Unproven {
                index: q,
                board: self.level.unrank(q),
                // (Class 128 holds only −128: no i8 is +128.)
                value: if won.contains(&q) {
                    v as i8
                } else {
                    (v as i8).wrapping_neg()
                },
            })
            .collect();
        Ok((count, found))
    }
}
