//! `cargo bench -p awari-solver --bench bitmaps`: the depth passes' one-bit maps (wave 0's
//! capture bitmaps, the wave state's map of blocks holding new positions) as they are written,
//! hand-rolled over `AtomicU64` words, against the same maps as `bitvec`'s
//! `BitSlice<AtomicU64>` (the user's card names the crate): random sets from every thread
//! (most bits already set or not, as the passes find them), then random reads.
//!
//! Prints nanoseconds per operation of each, and bitvec's time over the hand-rolled one's,
//! best of five rounds each, the rounds alternated. The 2-bit state arrays are not compared:
//! they need an atomic or, xor and compare-and-swap of two bits in place, which bitvec does not
//! offer (its fields are read and written, not updated atomically).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use bitvec::prelude::*;
use rayon::prelude::*;

/// Bits in the map: 2^30 (128 MiB), far beyond the caches, as at level 30 and up.
const BITS: u64 = 1 << 30;
/// Operations per round.
const OPS: u64 = 1 << 26;
const ROUNDS: usize = 5;

/// The hand-rolled map, as `depth::wave_zero::CaptureBits` writes it.
fn set_hand(words: &[AtomicU64], k: u64) {
    let word = &words[(k / 64) as usize];
    let bit = 1u64 << (k % 64);
    if word.load(Relaxed) & bit == 0 {
        word.fetch_or(bit, Relaxed);
    }
}

fn get_hand(words: &[AtomicU64], k: u64) -> bool {
    words[(k / 64) as usize].load(Relaxed) >> (k % 64) & 1 == 1
}

/// The same through bitvec: the test before the write, then `set_aliased` (an atomic or).
fn set_bitvec(bits: &BitSlice<AtomicU64, Lsb0>, k: usize) {
    if !bits[k] {
        bits.set_aliased(k, true);
    }
}

/// A random index of the map: splitmix64 of `i` with `seed`.
fn index(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) % BITS
}

/// Seconds of `f` over every operation of a round, in parallel tasks of 64 Ki operations.
fn time(f: impl Fn(u64) -> u64 + Sync) -> f64 {
    let t = Instant::now();
    let sum: u64 = (0..OPS / (1 << 16))
        .into_par_iter()
        .map(|task| {
            (task << 16..(task + 1) << 16)
                .map(&f)
                .fold(0, u64::wrapping_add)
        })
        .sum();
    std::hint::black_box(sum);
    t.elapsed().as_secs_f64()
}

fn main() {
    let words: Vec<AtomicU64> = (0..BITS / 64).map(|_| AtomicU64::new(0)).collect();
    let bv: BitVec<AtomicU64, Lsb0> = BitVec::repeat(false, BITS as usize);
    let bits = bv.as_bitslice();
    let (mut best_hand, mut best_bitvec) = ([f64::MAX; 2], [f64::MAX; 2]);
    for round in 0..ROUNDS as u64 {
        let seed = round * 0x1234_5678_9ABC_DEF1;
        let sets = [
            time(|i| {
                set_hand(&words, index(seed, i));
                0
            }),
            time(|i| {
                set_bitvec(bits, index(seed, i) as usize);
                0
            }),
        ];
        let gets = [
            time(|i| u64::from(get_hand(&words, index(seed ^ 1, i)))),
            time(|i| u64::from(bits[index(seed ^ 1, i) as usize])),
        ];
        best_hand = [best_hand[0].min(sets[0]), best_hand[1].min(gets[0])];
        best_bitvec = [best_bitvec[0].min(sets[1]), best_bitvec[1].min(gets[1])];
    }
    // Both maps saw the same sets: they must hold the same bits.
    let same = words
        .iter()
        .zip(bv.as_raw_slice())
        .all(|(a, b)| a.load(Relaxed) == b.load(Relaxed));
    assert!(same, "the two maps differ");
    println!(
        "bitmaps: {} bits, {} random operations a round, {} threads, best of {ROUNDS}",
        BITS,
        OPS,
        rayon::current_num_threads()
    );
    for (k, what) in ["set (test, then atomic or)", "get"].iter().enumerate() {
        let ns = |s: f64| s * 1e9 / OPS as f64;
        println!(
            "{what:28} hand-rolled {:6.2} ns/op   bitvec {:6.2} ns/op   bitvec/hand {:.3}",
            ns(best_hand[k]),
            ns(best_bitvec[k]),
            best_bitvec[k] / best_hand[k]
        );
    }
}
