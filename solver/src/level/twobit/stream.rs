//! The stream of a settling step: every chunk of the work file that can change at the step
//! read with its states, 32 positions at a time; values written, seeds found (and written to
//! the seed file), the positions that become losable loss-tested; only the changed pages of a
//! chunk written back.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Mutex;

use awari_db::TableError;
use rayon::prelude::*;

use super::codes::{
    byte_masks, for_bits, lanes, mask_bit, value_byte, value_of_byte, LOSABLE, LOST, NO_EXIT_BYTE,
    WON,
};
use super::work_files::SeedWriter;
use super::{TwoBit, CHUNK, PER_WORD};
use crate::seed_records::encode_seeds;
use crate::settle::seed_boards;
use crate::state::for_bits64;

impl TwoBit<'_> {
    /// The stream of step `i` (0: the last one, which only writes values): every chunk that
    /// can change, in parallel; the seeds go to the seed file. Returns the chunks streamed.
    pub(super) fn stream_step(&mut self, i: i8) -> Result<u64, TableError> {
        let n = self.level.seeds() as i8;
        let first = i == n;
        let seeds = Mutex::new(SeedWriter::create(&self.seeds_path, &self.io)?);
        let bit = |e: i8| mask_bit(e as u8);
        let todo: Vec<usize> = (0..self.chunks.masks.len())
            .filter(|&c| {
                first
                    || self.chunks.pending[c].load(Relaxed)
                    || (i > 0 && self.chunks.masks[c] & (bit(i) | bit(-i)) != 0)
            })
            .collect();
        todo.par_iter()
            .try_for_each(|&c| self.stream_chunk(i, c, first, &seeds))?;
        seeds.into_inner().expect("seed lock").finish()?;
        if i > 0 {
            for m in &mut self.chunks.masks {
                *m &= !(bit(i) | bit(-i));
            }
        }
        Ok(todo.len() as u64)
    }

    /// Stream chunk `c` at step `i` (see the module documentation).
    fn stream_chunk(
        &self,
        i: i8,
        c: usize,
        first: bool,
        seeds: &Mutex<SeedWriter>,
    ) -> Result<(), TableError> {
        let (start, end) = self.chunk_range(c);
        let len = (end - start) as usize;
        // Whole words: the padding is exit 0, which no step acts on.
        let mut buf = vec![0u8; len.next_multiple_of(PER_WORD as usize)];
        self.read_work(start, &mut buf[..len])?;
        self.chunks.pending[c].store(false, Relaxed);
        let active = i > 0;
        let prev = i + 1;
        let (eq_i, eq_neg, eq_none) = if active {
            (
                i as u8,
                (-i) as u8,
                if first { NO_EXIT_BYTE } else { (-i) as u8 },
            )
        } else {
            // Never matched: 0x40 is neither an exit nor a value byte.
            (0x40, 0x40, 0x40)
        };
        let mut dirty = DirtyPages::default();
        let mut found: Vec<(u32, bool)> = Vec::new();
        let mut candidates: Vec<(u32, bool)> = Vec::new();
        let words = &self.words()[(start / PER_WORD) as usize..];
        for (w, bytes) in buf.chunks_exact_mut(PER_WORD as usize).enumerate() {
            let bytes: &mut [u8; 32] = bytes.try_into().expect("32 bytes");
            let word = &words[w];
            let old = word.load(Relaxed);
            let settled = lanes(old, true);
            let low = lanes(old, false);
            let (flagged, is_i, is_neg, is_none) = byte_masks(bytes, eq_i, eq_neg, eq_none);
            let write = settled & !flagged;
            let leftover = !settled & flagged;
            let open = !settled & !flagged;
            let win = open & is_i;
            let losable = open & !low & (is_neg | is_none);
            if write | leftover | win | losable == 0 {
                continue;
            }
            let base = w as u32 * PER_WORD as u32;
            let mut new = old;
            for_bits(write, |k| {
                let lost = low >> k & 1 == 1;
                bytes[k] = value_byte(if lost { -prev } else { prev });
            });
            if write | win != 0 {
                dirty.mark(base as usize);
            }
            for_bits(leftover, |k| {
                // A seed of this step whose value an interrupted run wrote (see "Resuming").
                let v = value_of_byte(bytes[k]);
                new |= (if v > 0 { WON } else { LOST }) << (2 * k);
                found.push((base + k as u32, v > 0));
            });
            for_bits(win, |k| {
                new |= WON << (2 * k);
                bytes[k] = value_byte(i);
                found.push((base + k as u32, true));
            });
            for_bits(losable & !win, |k| {
                new |= LOSABLE << (2 * k);
                if is_neg >> k & 1 == 1 {
                    candidates.push((base + k as u32, false));
                }
            });
            if new != old {
                word.store(new, Relaxed);
            }
            if leftover != 0 {
                let bad = (0..32).filter(|&k| leftover >> k & 1 == 1).find(|&k| {
                    value_of_byte(bytes[k]).unsigned_abs() != i.unsigned_abs() || !active
                });
                if let Some(k) = bad {
                    return Err(TableError::Io {
                        path: self.work.path.clone(),
                        source: std::io::Error::other(format!(
                            "work file inconsistent with its checkpoint at position {}: value {} unsettled at step {i}; delete the level's work files to rebuild it",
                            start + u64::from(base) + k as u64,
                            value_of_byte(bytes[k])
                        )),
                    });
                }
            }
        }
        // The loss tests of the positions that became losable (their children read at random;
        // a child won in another chunk meanwhile is tested again by propagation).
        for ((board, _), k) in seed_boards(&self.level, start, candidates.iter().copied())
            .into_iter()
            .zip(candidates.iter().map(|&(k, _)| k))
        {
            if self.children_all_won(&board, None) {
                let q = start + u64::from(k);
                let word = &self.words()[(q / PER_WORD) as usize];
                let shift = 2 * (q % PER_WORD);
                word.store(word.load(Relaxed) | (LOST << shift), Relaxed);
                buf[k as usize] = value_byte(-i);
                dirty.mark(k as usize);
                found.push((k, false));
            }
        }
        for (a, b) in dirty.runs() {
            let b = b.min(len);
            self.write_work(start + a as u64, &buf[a..b])?;
        }
        if !found.is_empty() {
            found.sort_unstable_by_key(|&(k, _)| k);
            let record = encode_seeds(c as u32, &found);
            seeds.lock().expect("seed lock").write(&record)?;
        }
        Ok(())
    }
}

/// The 4 KiB pages of a chunk's buffer that the stream changed: only they are written back.
#[derive(Default)]
struct DirtyPages([u64; DirtyPages::WORDS]);

impl DirtyPages {
    const PAGE: usize = 4096;
    const WORDS: usize = (CHUNK as usize / Self::PAGE).div_ceil(64);

    #[inline]
    fn mark(&mut self, offset: usize) {
        let p = offset / Self::PAGE;
        self.0[p / 64] |= 1 << (p % 64);
    }

    /// The changed byte ranges, runs of consecutive pages merged.
    fn runs(&self) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = Vec::new();
        for (w, &bits) in self.0.iter().enumerate() {
            for_bits64(bits, |k| {
                let a = (64 * w + k) * Self::PAGE;
                match out.last_mut() {
                    Some(last) if last.1 == a => last.1 = a + Self::PAGE,
                    _ => out.push((a, a + Self::PAGE)),
                }
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirty_pages_merge_into_runs() {
        let mut d = DirtyPages::default();
        for offset in [
            0,
            100,
            4096,
            3 * 4096 + 5,
            64 * 4096,
            65 * 4096,
            CHUNK as usize - 1,
        ] {
            d.mark(offset);
        }
        assert_eq!(
            d.runs(),
            vec![
                (0, 2 * 4096),
                (3 * 4096, 4 * 4096),
                (64 * 4096, 66 * 4096),
                (CHUNK as usize - 4096, CHUNK as usize)
            ]
        );
    }
}
