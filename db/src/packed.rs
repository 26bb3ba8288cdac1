//! Boards packed one pit per byte into a `u128`, for the hot loops of move and un-move
//! generation and of the index: whole-board arithmetic and SWAR tests in registers. The byte
//! constants and lane tests are public, for the builder's other SWAR code (twelve lanes).
//!
//! ```text
//!  byte   15 14 13 12 | 11 10  9  8  7  6 |  5  4  3  2  1  0
//!         0  0  0  0  |  opponent's row   |  mover's row
//! ```

use crate::board::PITS;

/// A board packed one pit per byte into the low 96 bits of a `u128` (pit i in byte i).
/// No pit exceeds 48, so adding per-pit increments never carries between bytes.
pub(crate) type Packed = u128;

/// The opponent's row (pits 6..11).
pub(crate) const OPPONENT_ROW: Packed = ((1 << 48) - 1) << 48;

/// Pack twelve pits.
#[inline]
pub(crate) fn pack(pits: &[u8; PITS]) -> Packed {
    let mut b = [0u8; 16];
    b[..PITS].copy_from_slice(pits);
    u128::from_le_bytes(b)
}

/// The twelve pits of a packed board.
#[inline]
pub(crate) fn unpack(x: Packed) -> [u8; PITS] {
    let b = x.to_le_bytes();
    let mut p = [0u8; PITS];
    p.copy_from_slice(&b[..PITS]);
    p
}

/// Pit `i`.
#[inline]
pub(crate) fn pit(x: Packed, i: usize) -> u8 {
    (x >> (8 * i)) as u8
}

/// The position seen by the other player: rows swapped.
#[inline]
pub(crate) fn rotate_packed(x: Packed) -> Packed {
    ((x >> 48) | (x << 48)) & ((1 << 96) - 1)
}

/// The pit that pit `i` becomes when the board is seen in a mirror: each row reversed (pit
/// i becomes 5 − i, pit 6 + i becomes 11 − i), rows kept. A clockwise sowing from pit h is
/// the mirror image of a counter-clockwise one from pit 5 − h; mirroring commutes with
/// [`rotate_packed`] and is its own inverse.
#[inline]
pub(crate) const fn mirror_pit(i: usize) -> usize {
    if i < 6 {
        5 - i
    } else {
        17 - i
    }
}

/// `REVERSE6[m]`: the six low bits of `m` in reverse order.
const REVERSE6: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut m = 0;
    while m < 64 {
        let mut i = 0;
        while i < 6 {
            t[m] |= (((m >> i) & 1) << (5 - i)) as u8;
            i += 1;
        }
        m += 1;
    }
    t
};

/// A mask of pits (bit i: pit i, 0..11) seen in a mirror: bit i moves to bit
/// [`mirror_pit`]`(i)`. In masks of this frame a clockwise sowing from pit h walks as a
/// counter-clockwise one from 5 − h, so the un-moves of both directions share their code
/// without mirroring a board.
#[inline(always)]
pub(crate) fn mirror_mask(mask: u32) -> u32 {
    u32::from(REVERSE6[(mask & 63) as usize]) | u32::from(REVERSE6[(mask >> 6 & 63) as usize]) << 6
}

/// The twelve pits of a packed board.
pub(crate) const PITS_MASK: Packed = (1 << 96) - 1;
/// Byte constants: `BYTES_xy` holds xy in each of the twelve pit bytes.
pub const BYTES_01: Packed = 0x0101_0101_0101_0101_0101_0101;
pub(crate) const BYTES_02: Packed = 2 * BYTES_01;
/// 0x7f in each of the twelve bytes.
pub const BYTES_7F: Packed = 0x7f * BYTES_01;
/// 0x80 in each of the twelve bytes.
pub const BYTES_80: Packed = 0x80 * BYTES_01;
pub(crate) const BYTES_FE: Packed = 0xfe * BYTES_01;
/// 0xfc in each of the twelve bytes: a byte of 4 or more has one of these bits set.
pub(crate) const BYTES_FC: Packed = 0xfc * BYTES_01;

/// Whether some opponent pit (6..11) of `x` holds 4 seeds or more. Sowing only adds seeds to
/// the opponent's row and a capture takes pits of 2 or 3, so no move of such a position takes
/// every opponent seed: it cannot be a grand slam.
#[inline(always)]
pub(crate) fn opponent_keeps_a_pit(x: Packed) -> bool {
    x & OPPONENT_ROW & BYTES_FC != 0
}

/// The high bit of each of the twelve bytes set where that byte is 0 (bytes below 0x80: no
/// carry crosses a byte, since 0x7f + 0x7f < 0x100).
#[inline(always)]
pub fn zero_bytes(x: Packed) -> Packed {
    !(x + BYTES_7F) & BYTES_80
}

/// The high bit of each pit byte set where that pit holds a seed.
#[inline(always)]
pub(crate) fn nonzero_bytes(x: Packed) -> Packed {
    (x + BYTES_7F) & BYTES_80
}

/// Bit i set where byte i has its high bit set, for i in 0..12.
#[inline(always)]
pub fn byte_mask(high_bits: Packed) -> u32 {
    // Shift each byte's high bit to its bit 0, then gather 8 bytes per multiply: byte i's
    // bit lands in bit 56 + i of the product.
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let lo = ((high_bits as u64) >> 7).wrapping_mul(GATHER) >> 56;
    let hi = (((high_bits >> 64) as u64) >> 7).wrapping_mul(GATHER) >> 56;
    (lo | (hi << 8)) as u32
}

/// Seeds on a packed board: the twelve bytes summed by two multiplies.
#[inline(always)]
pub(crate) fn seeds_packed(x: Packed) -> u32 {
    const SUM: u64 = 0x0101_0101_0101_0101;
    let lo = (x as u64).wrapping_mul(SUM) >> 56;
    let hi = ((x >> 64) as u64).wrapping_mul(SUM) >> 56;
    (lo + hi) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The board seen in a mirror (each row reversed, rows kept): pit i of `x` becomes pit
    /// [`mirror_pit`]`(i)`.
    fn mirror_packed(x: Packed) -> Packed {
        const ROW: u64 = (1 << 48) - 1;
        let reverse = |row: u64| (row & ROW).swap_bytes() >> 16;
        Packed::from(reverse(x as u64)) | (Packed::from(reverse((x >> 48) as u64)) << 48)
    }

    #[test]
    fn mirroring_reverses_each_row_and_commutes_with_rotation() {
        let x = pack(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        let m = mirror_packed(x);
        assert_eq!(unpack(m), [6, 5, 4, 3, 2, 1, 12, 11, 10, 9, 8, 7]);
        assert_eq!(mirror_packed(m), x);
        assert_eq!(rotate_packed(m), mirror_packed(rotate_packed(x)));
        for i in 0..PITS {
            assert_eq!(pit(m, mirror_pit(i)), pit(x, i));
            assert_eq!(mirror_pit(mirror_pit(i)), i);
        }
    }

    #[test]
    fn a_mirrored_mask_is_the_mask_of_the_mirrored_board() {
        for mask in 0u32..1 << PITS {
            let x: Packed = (0..PITS)
                .filter(|&i| mask >> i & 1 == 0)
                .map(|i| 1 << (8 * i))
                .sum();
            assert_eq!(byte_mask(zero_bytes(x)), mask);
            let mirrored = mirror_mask(mask);
            assert_eq!(
                byte_mask(zero_bytes(mirror_packed(x))),
                mirrored,
                "{mask:#x}"
            );
            assert_eq!(mirror_mask(mirrored), mask);
        }
    }
}
