//! How the two-bit builder holds a position: its state in RAM, and the reads and updates of
//! one state, the loss test included. Two widths ([`StateBits`]):
//!
//! - **two bits** (32 to a word): open, losable, won, lost;
//! - **one bit** (64 to a word): settled or not. A loss is *published* predecessors first
//!   (each claimed won), then itself, so that an unsettled position never has a settled lost
//!   child: a loss test's "every child won" is "every child settled" (read, then the position
//!   itself read again unsettled: had a child read settled been lost, the position would have
//!   been claimed before it). Whether an unsettled position is losable is not stored: one
//!   without an exit (no capture, not over) always is, told by its moves; one with an exit
//!   that passes the test is a *candidate*, looked up in the exit lists ≤ −i on disk (see
//!   `candidates`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed, Ordering::SeqCst};

use awari_db::Board;

use super::TwoBit;

/// Loss tests run together by [`TwoBit::all_children_won`].
const TEST_SLICE: usize = 256;

pub(super) const OPEN: u64 = 0;
pub(super) const LOSABLE: u64 = 1;
pub(super) const WON: u64 = 2;
pub(super) const LOST: u64 = 3;

/// The bits of RAM the builder keeps per position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateBits {
    /// Open, losable, won or lost.
    Two,
    /// Settled or not; losability from the moves and the exit lists.
    One,
}

impl StateBits {
    /// Positions per 64-bit state word.
    pub const fn per_word(self) -> u64 {
        match self {
            StateBits::Two => 32,
            StateBits::One => 64,
        }
    }
}

impl TwoBit<'_> {
    #[inline]
    pub(super) fn words(&self) -> &[AtomicU64] {
        self.state.words()
    }

    #[inline]
    fn one_bit(&self) -> bool {
        self.bits == StateBits::One
    }

    /// The word holding `q`'s state and the shift of its state in it.
    #[inline]
    fn slot(&self, q: u64) -> (&AtomicU64, u64) {
        if self.one_bit() {
            (&self.words()[(q / 64) as usize], q % 64)
        } else {
            (&self.words()[(q / 32) as usize], 2 * (q % 32))
        }
    }

    /// Prefetch the word holding `q`'s state.
    #[inline]
    pub(super) fn prefetch_state(&self, q: u64) {
        self.state.prefetch((q / self.bits.per_word()) as usize);
    }

    /// `q`'s 2-bit code (two bits only).
    #[inline]
    pub(super) fn code(&self, q: u64) -> u64 {
        let (word, shift) = self.slot(q);
        (word.load(SeqCst) >> shift) & 3
    }

    /// Whether `q` is settled.
    #[inline]
    pub(super) fn is_settled(&self, q: u64) -> bool {
        let (word, shift) = self.slot(q);
        let w = word.load(SeqCst) >> shift;
        if self.one_bit() {
            w & 1 == 1
        } else {
            w & 3 >= WON
        }
    }

    /// Whether child `c` counts as won in a loss test: won (two bits), settled (one bit: the
    /// test then reads its position again, see the module documentation).
    #[inline]
    pub(super) fn child_won(&self, c: u64) -> bool {
        if self.one_bit() {
            self.is_settled(c)
        } else {
            self.code(c) == WON
        }
    }

    /// Whether a won child makes `q` run the loss test: `q` losable (two bits), unsettled
    /// (one bit: its losability is asked only if the test passes).
    #[inline]
    pub(super) fn may_lose(&self, q: u64) -> bool {
        if self.one_bit() {
            !self.is_settled(q)
        } else {
            self.code(q) == LOSABLE
        }
    }

    /// Settle `q` as won (from open or losable) or lost (from losable only; one bit: from
    /// unsettled, the caller knowing it lost and its predecessors published); returns whether
    /// this call did it (exactly one call does, whatever the threads).
    #[inline]
    pub(super) fn settle(&self, q: u64, won: bool) -> bool {
        let (word, shift) = self.slot(q);
        if self.one_bit() {
            let bit = 1 << shift;
            return word.fetch_or(bit, SeqCst) & bit == 0;
        }
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
                self.prefetch_state(c);
                out.push((j, pit, c));
            }
        };
        for first in (0..boards.len()).step_by(TEST_SLICE) {
            for j in first..(first + TEST_SLICE).min(boards.len()) {
                queue(j, 0, &mut active);
            }
            while !active.is_empty() {
                for &(j, pit, c) in &active {
                    if self.child_won(c) {
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

    /// Make `q` losable if it is open; returns whether it was (one bit: whether it is
    /// unsettled, which is all a loss test needs: nothing is stored). Only the thread that
    /// owns `q`'s chunk calls it, while no other thread settles a position of that chunk.
    #[inline]
    pub(super) fn make_losable(&self, q: u64) -> bool {
        if self.one_bit() {
            return !self.is_settled(q);
        }
        let (word, shift) = self.slot(q);
        if (word.load(Relaxed) >> shift) & 3 != OPEN {
            return false;
        }
        word.fetch_or(LOSABLE << shift, Relaxed);
        true
    }

    /// Set `q`'s state to `code` (a resume restoring the states, one file at a time; one
    /// bit: settled, whatever the code).
    #[inline]
    pub(super) fn set_code(&self, q: u64, code: u64) {
        let (word, shift) = self.slot(q);
        if self.one_bit() {
            word.fetch_or(1 << shift, Relaxed);
            return;
        }
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
