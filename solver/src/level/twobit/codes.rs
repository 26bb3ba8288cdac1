//! How the two-bit builder holds a position: its 2-bit state in RAM (open, losable, won,
//! lost; 32 to a word), and the reads and updates of one state, the loss test included.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed, Ordering::SeqCst};

use awari_db::Board;

use super::{TwoBit, PER_WORD};

/// Loss tests run together by [`TwoBit::all_children_won`].
const TEST_SLICE: usize = 256;

pub(super) const OPEN: u64 = 0;
pub(super) const LOSABLE: u64 = 1;
pub(super) const WON: u64 = 2;
pub(super) const LOST: u64 = 3;

impl TwoBit<'_> {
    #[inline]
    pub(super) fn words(&self) -> &[AtomicU64] {
        self.state.words()
    }

    #[inline]
    pub(super) fn code(&self, q: u64) -> u64 {
        (self.words()[(q / PER_WORD) as usize].load(SeqCst) >> (2 * (q % PER_WORD))) & 3
    }

    /// Settle `q` as won (from open or losable) or lost (from losable only); returns whether
    /// this call did it (exactly one call does, whatever the threads).
    #[inline]
    pub(super) fn settle(&self, q: u64, won: bool) -> bool {
        let word = &self.words()[(q / PER_WORD) as usize];
        let shift = 2 * (q % PER_WORD);
        let mut w = word.load(SeqCst);
        loop {
            let code = (w >> shift) & 3;
            let ok = if won {
                code == OPEN || code == LOSABLE
            } else {
                code == LOSABLE
            };
            if !ok {
                return false;
            }
            let new = (w & !(3 << shift)) | ((if won { WON } else { LOST }) << shift);
            match word.compare_exchange_weak(w, new, SeqCst, SeqCst) {
                Ok(_) => return true,
                Err(now) => w = now,
            }
        }
    }

    /// The loss test of each of `boards`: whether every non-capturing child is won. The
    /// children are made one at a time and the first that is not won ends a test: in a failing
    /// test (most are) that is after 1.5 children on average (level 18: 42 M tests, 10 M of
    /// them passing). Software-pipelined as the propagation's tests are: the next child of
    /// every board still under test is ranked and its state prefetched, then all those states
    /// are read, [`TEST_SLICE`] boards at a time (so that the lines prefetched stay cached
    /// until they are read).
    pub(super) fn all_children_won(&self, boards: &[Board]) -> Vec<bool> {
        let mut won = vec![true; boards.len()];
        let mut active: Vec<(usize, u8, u64)> = Vec::with_capacity(TEST_SLICE);
        let mut next: Vec<(usize, u8, u64)> = Vec::with_capacity(TEST_SLICE);
        // The next child of board `j` from pit `from` on, prefetched and queued.
        let queue = |j: usize, from: u8, out: &mut Vec<(usize, u8, u64)>| {
            if let Some((pit, c)) = boards[j].next_quiet_child(self.rules, &self.level, from, None)
            {
                self.state.prefetch((c / PER_WORD) as usize);
                out.push((j, pit, c));
            }
        };
        for first in (0..boards.len()).step_by(TEST_SLICE) {
            for j in first..(first + TEST_SLICE).min(boards.len()) {
                queue(j, 0, &mut active);
            }
            while !active.is_empty() {
                for &(j, pit, c) in &active {
                    if self.code(c) == WON {
                        queue(j, pit + 1, &mut next);
                    } else {
                        won[j] = false;
                    }
                }
                active.clear();
                std::mem::swap(&mut active, &mut next);
            }
        }
        won
    }

    /// Make `q` losable if it is open; returns whether it was. Only the thread that owns
    /// `q`'s chunk calls it, while no other thread settles a position of that chunk.
    #[inline]
    pub(super) fn make_losable(&self, q: u64) -> bool {
        let word = &self.words()[(q / PER_WORD) as usize];
        let shift = 2 * (q % PER_WORD);
        if (word.load(Relaxed) >> shift) & 3 != OPEN {
            return false;
        }
        word.fetch_or(LOSABLE << shift, Relaxed);
        true
    }

    /// Set `q`'s state to `code` (a resume restoring the states, one file at a time).
    #[inline]
    pub(super) fn set_code(&self, q: u64, code: u64) {
        let word = &self.words()[(q / PER_WORD) as usize];
        let shift = 2 * (q % PER_WORD);
        let mut w = word.load(Relaxed);
        loop {
            let new = (w & !(3 << shift)) | (code << shift);
            match word.compare_exchange_weak(w, new, Relaxed, Relaxed) {
                Ok(_) => return,
                Err(now) => w = now,
            }
        }
    }
}
