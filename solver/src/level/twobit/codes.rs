//! How the two-bit builder holds a position: its 2-bit state in RAM (open, losable, won,
//! lost; 32 to a word), and the reads and updates of one state, the loss test included.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed, Ordering::SeqCst};

use awari_db::Board;

use super::{TwoBit, PER_WORD};

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

    /// The loss test: whether every non-capturing child of `board` is won, but for the one
    /// its move from pit `skip` makes (known to be won). The children are made one at a time
    /// and the first that is not won ends the test: in a failing test (most are) that is
    /// after 1.5 children on average (level 18: 42 M tests, 10 M of them passing).
    #[inline]
    pub(super) fn children_all_won(&self, board: &Board, skip: Option<u8>) -> bool {
        board.all_quiet_children(self.rules, &self.level, skip, |q| self.code(q) == WON)
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
