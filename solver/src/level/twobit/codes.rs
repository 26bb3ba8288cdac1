//! How the two-bit builder holds a position: its 2-bit state in RAM (open, losable, won,
//! lost; 32 to a word) and its byte in the work file (an exit, or a flagged value); the SWAR
//! that reads 32 of each at once; and the reads and updates of one state, the loss test
//! included.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed, Ordering::SeqCst};

use awari_db::Board;

use super::{TwoBit, CHUNK, PER_WORD};
use crate::settle::NO_EXIT;

pub(super) const OPEN: u64 = 0;
pub(super) const LOSABLE: u64 = 1;
pub(super) const WON: u64 = 2;
pub(super) const LOST: u64 = 3;

/// The work-file byte of an unsettled position without an exit: −64, below every exit, so
/// that "exit ≤ −i" holds at every step, as it should (a loss needs only its children).
pub(super) const NO_EXIT_BYTE: u8 = (-64i8) as u8;

/// The work-file byte of a settled value (never 0): bits 7 and 6 differ, which they never do
/// in an exit byte (−48..48 and −64).
#[inline]
pub(super) fn value_byte(v: i8) -> u8 {
    debug_assert!(v != 0 && (-48..=48).contains(&v));
    (v as u8) ^ 0x80
}

#[inline]
pub(super) fn is_value(b: u8) -> bool {
    (b ^ (b << 1)) & 0x80 != 0
}

#[inline]
pub(super) fn value_of_byte(b: u8) -> i8 {
    (b ^ 0x80) as i8
}

/// The work-file byte of an exit as the exits phase holds it (`NO_EXIT`: none).
#[inline]
pub(super) fn exit_byte(exit: i8) -> u8 {
    if exit == NO_EXIT {
        NO_EXIT_BYTE
    } else {
        exit as u8
    }
}

/// The mask bit of an exit byte (see [`ChunkMasks`](super::ChunkMasks)).
#[inline]
pub(super) fn mask_bit(b: u8) -> u128 {
    1u128 << ((b as i8 as i32 + 64) as u32 & 127)
}

/// Bits 0, 2, 4, … (`odd` false) or 1, 3, 5, … (true) of a word, as 32 bits.
#[inline]
pub(super) fn lanes(w: u64, odd: bool) -> u32 {
    let mut x = (w >> u32::from(odd)) & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | (x >> 4)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x >> 8)) & 0x0000_ffff_0000_ffff;
    x = (x | (x >> 16)) & 0x0000_0000_ffff_ffff;
    x as u32
}

/// Bit 7 of each of 8 bytes, as 8 bits.
#[inline]
fn high_bits(x: u64) -> u32 {
    (((x >> 7) & 0x0101_0101_0101_0101).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32
}

/// For 32 bytes: which are flagged values, and which equal `a`, `b` and `c`.
#[inline]
pub(super) fn byte_masks(bytes: &[u8; 32], a: u8, b: u8, c: u8) -> (u32, u32, u32, u32) {
    const L: u64 = 0x0101_0101_0101_0101;
    let zero = |x: u64| !(((x & !(0x80 * L)) + 0x7f * L) | x) & (0x80 * L);
    let (mut f, mut ea, mut eb, mut ec) = (0, 0, 0, 0);
    for (k, eight) in bytes.chunks_exact(8).enumerate() {
        let x = u64::from_le_bytes(eight.try_into().expect("8 bytes"));
        let s = 8 * k as u32;
        f |= high_bits((x ^ (x << 1)) & (0x80 * L)) << s;
        ea |= high_bits(zero(x ^ (u64::from(a) * L))) << s;
        eb |= high_bits(zero(x ^ (u64::from(b) * L))) << s;
        ec |= high_bits(zero(x ^ (u64::from(c) * L))) << s;
    }
    (f, ea, eb, ec)
}

/// Call `f` with the index of every set bit of `bits`.
#[inline]
pub(super) fn for_bits(mut bits: u32, mut f: impl FnMut(usize)) {
    while bits != 0 {
        f(bits.trailing_zeros() as usize);
        bits &= bits - 1;
    }
}

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

    #[inline]
    pub(super) fn mark_pending(&self, q: u64) {
        let p = &self.chunks.pending[(q / CHUNK) as usize];
        if !p.load(Relaxed) {
            p.store(true, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_bytes_never_look_like_exits() {
        for v in (-48i8..=48).filter(|&v| v != 0) {
            let b = value_byte(v);
            assert!(is_value(b), "{v}");
            assert_eq!(value_of_byte(b), v);
        }
        for e in -48i8..=48 {
            assert!(!is_value(exit_byte(e)), "{e}");
        }
        assert!(!is_value(exit_byte(NO_EXIT)));
    }

    #[test]
    fn lane_and_byte_masks() {
        let mut rng = awari_db::SplitMix64(3);
        for _ in 0..10_000 {
            let w = rng.next_u64();
            let (odd, even) = (lanes(w, true), lanes(w, false));
            for k in 0..32 {
                assert_eq!(odd >> k & 1, (w >> (2 * k + 1) & 1) as u32);
                assert_eq!(even >> k & 1, (w >> (2 * k) & 1) as u32);
            }
            let mut bytes = [0u8; 32];
            for b in bytes.iter_mut() {
                *b = match rng.below(4) {
                    0 => 5,
                    1 => (-5i8) as u8,
                    _ => rng.below(256) as u8,
                };
            }
            let (f, a, b, c) = byte_masks(&bytes, 5, (-5i8) as u8, NO_EXIT_BYTE);
            for (k, &x) in bytes.iter().enumerate() {
                assert_eq!(f >> k & 1 == 1, is_value(x));
                assert_eq!(a >> k & 1 == 1, x == 5);
                assert_eq!(b >> k & 1 == 1, x == (-5i8) as u8);
                assert_eq!(c >> k & 1 == 1, x == NO_EXIT_BYTE);
            }
        }
    }
}
