//! The 2-bit states of a breadth-first depth search, 32 to a word, with the map of blocks
//! that hold *new* positions: what [`super::DepthPass`]'s waves and
//! [`super::ClassPass`]'s classes share.
//!
//! A lane holds one of four codes. Two of them are the same for both passes, and make the
//! wave mechanics below work whatever the other two mean:
//!
//! | code | [`super::DepthPass`] | [`super::ClassPass`] |
//! |---|---|---|
//! | 0 | open: no depth yet | open, won by v: no depth yet |
//! | 1 | (unused) | open, lost by v: no depth yet |
//! | 2 ([`DONE`]) | depth ≤ k | depth ≤ k, or not of the class |
//! | 3 ([`NEW`]) | depth k+1, found by wave k | the same |
//!
//! [`WaveState::make_new`] turns an open lane (0 or 1) into [`NEW`] with one `fetch_or` of
//! both bits, and [`WaveState::write_new`] turns every new lane into [`DONE`] (clearing its
//! low bit) while writing its position to the next wave file, in index order, guided by the
//! block map (one bit per [`BLOCK`] positions holding a new one).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use awari_db::TableError;
use rayon::prelude::*;

use super::work_files::WaveWriter;
use super::{window, BLOCK, CHUNK, PER_WORD};
use crate::seed_records::encode_seeds;
use crate::state::{for_bits64, StateArray};

/// Depth known (at most the wave in progress), or, in a class pass, not of the class.
pub(super) const DONE: u64 = 2;
/// Found by the wave in progress.
pub(super) const NEW: u64 = 3;
/// Bit 0 of every 2-bit lane.
const LOW_LANES: u64 = 0x5555_5555_5555_5555;

/// The states of a level's positions, 2 bits each, and the map of blocks holding new ones.
pub(super) struct WaveState {
    state: StateArray<AtomicU64>,
    blocks: Vec<AtomicU64>,
    size: u64,
}

impl WaveState {
    /// The states of `size` positions, all 0 (open).
    pub(super) fn new(size: u64) -> std::io::Result<WaveState> {
        Ok(WaveState {
            state: StateArray::new(size.div_ceil(PER_WORD) as usize)?,
            blocks: (0..size.div_ceil(BLOCK * 64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            size,
        })
    }

    /// The state words (32 positions each).
    #[inline]
    pub(super) fn words(&self) -> &[AtomicU64] {
        self.state.words()
    }

    /// The code of position `q`.
    #[inline]
    pub(super) fn code(&self, q: u64) -> u64 {
        (self.words()[(q / PER_WORD) as usize].load(Relaxed) >> (2 * (q % PER_WORD))) & 3
    }

    /// Prefetch the word of position `q`.
    #[inline]
    pub(super) fn prefetch(&self, q: u64) {
        self.state.prefetch((q / PER_WORD) as usize);
    }

    /// Or `bits` into the code of `q` (a done mark: 0 becomes [`DONE`]).
    #[inline]
    pub(super) fn or_code(&self, q: u64, bits: u64) {
        self.words()[(q / PER_WORD) as usize].fetch_or(bits << (2 * (q % PER_WORD)), Relaxed);
    }

    /// Flip `bits` of the code of `q` (a known code to another: 2 ^ 2 = 0, 2 ^ 3 = 1).
    #[inline]
    pub(super) fn flip_code(&self, q: u64, bits: u64) {
        self.words()[(q / PER_WORD) as usize].fetch_xor(bits << (2 * (q % PER_WORD)), Relaxed);
    }

    /// Set every lane to `code`.
    pub(super) fn fill(&self, code: u64) {
        let pattern = LOW_LANES * code;
        self.words()
            .par_chunks(1 << 16)
            .for_each(|ws| ws.iter().for_each(|w| w.store(pattern, Relaxed)));
    }

    /// Make open position `q` (code 0 or 1) new; whether this call did (it was not new yet).
    /// Only open and new positions may reach here: a done one is never changed while a wave
    /// propagates.
    #[inline]
    pub(super) fn make_new(&self, q: u64) -> bool {
        let word = &self.words()[(q / PER_WORD) as usize];
        let shift = 2 * (q % PER_WORD);
        let old = word.fetch_or(NEW << shift, Relaxed);
        if (old >> shift) & 3 == NEW {
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

    /// Make the new positions done and write them to the wave file `path`, in index order
    /// (see [`WaveWriter`]: to its `.tmp`, synced where `durable`, renamed; none when empty
    /// and not `durable`), each with the flag `flag(q)`; returns how many there were and the
    /// bytes written.
    pub(super) fn write_new(
        &self,
        path: &Path,
        durable: bool,
        flag: impl Fn(u64) -> bool + Sync,
    ) -> Result<(u64, u64), TableError> {
        let mut file = WaveWriter::new(path, durable, 1 << 20)?;
        let chunks = self.size.div_ceil(CHUNK);
        let mut count = 0u64;
        let window = window();
        for first in (0..chunks).step_by(window as usize) {
            let records: Vec<(u64, Vec<u8>)> = (first..(first + window).min(chunks))
                .into_par_iter()
                .map(|c| {
                    let mut found = Vec::new();
                    self.take_new(c, |q| found.push(((q - c * CHUNK) as u32, flag(q))));
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
                    file.write(&r)?;
                }
            }
        }
        let bytes = file.finish()?;
        Ok((count, bytes))
    }

    /// The new positions of chunk `c`, made done, handed to `f` in index order.
    fn take_new(&self, c: u64, mut f: impl FnMut(u64)) {
        let start = c * CHUNK;
        let end = (start + CHUNK).min(self.size);
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
                    // New is 3: both bits of the lane set; done (2) clears the low one.
                    let new = w & (w >> 1) & LOW_LANES;
                    if new == 0 {
                        continue;
                    }
                    word.store(w ^ new, Relaxed);
                    for_bits64(new, |lane| f(wi * PER_WORD + (lane as u64) / 2));
                }
            });
        }
    }
}
