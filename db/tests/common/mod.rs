//! Helpers shared by the integration tests (included with `mod common;`).
#![allow(dead_code)]

use awari_db::Board;

/// A small deterministic generator (SplitMix64), so tests need no extra crate.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A uniformly random board with `n` seeds (stars and bars).
    pub fn board(&mut self, n: u32) -> Board {
        let slots = n as usize + 11;
        let mut bars = Vec::with_capacity(11);
        while bars.len() < 11 {
            let b = self.below(slots as u64) as usize;
            if !bars.contains(&b) {
                bars.push(b);
            }
        }
        bars.sort_unstable();
        let mut pits = [0u8; 12];
        let mut prev = 0usize;
        for (i, &b) in bars.iter().enumerate() {
            pits[i] = (b - prev) as u8;
            prev = b + 1;
        }
        pits[11] = (slots - prev) as u8;
        Board::from_pits(pits)
    }
}

pub fn pits_of(v: &serde_json::Value) -> [u8; 12] {
    let a = v.as_array().expect("array");
    assert_eq!(a.len(), 12);
    let mut p = [0u8; 12];
    for (i, x) in a.iter().enumerate() {
        p[i] = x.as_u64().expect("number") as u8;
    }
    p
}
