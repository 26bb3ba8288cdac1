//! Reproducible random boards (for tests, benchmarks and data generation), with no extra crate.

use crate::board::{Board, PITS};

/// SplitMix64: a small, fast, well-mixed 64-bit generator; the same seed gives the same stream.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (n > 0; the tiny modulo bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A uniformly random board among all boards with `n` seeds (indexed or not): the 11
    /// separators of "stars and bars" at distinct random places among n + 11.
    pub fn board(&mut self, n: u32) -> Board {
        let slots = n as usize + PITS - 1;
        let mut bars = [0usize; PITS - 1];
        let mut k = 0;
        while k < PITS - 1 {
            let b = self.below(slots as u64) as usize;
            if !bars[..k].contains(&b) {
                bars[k] = b;
                k += 1;
            }
        }
        bars.sort_unstable();
        let mut pits = [0u8; PITS];
        let mut prev = 0usize;
        for (i, &b) in bars.iter().enumerate() {
            pits[i] = (b - prev) as u8;
            prev = b + 1;
        }
        pits[PITS - 1] = (slots - prev) as u8;
        Board::from_pits(pits)
    }
}
