//! The machine's limit for the builder: random byte reads per second from an array far larger
//! than the caches, on all cores, in an anonymous map advised to use huge pages (as the
//! builder's state is). `scripts/ab.sh` divides positions per second by it.
//!
//! Each thread draws independent indices (a xorshift generator), so the cores keep many misses
//! in flight, as the builder's batched loads do.
//!
//! Usage: `cargo run --release -p awari-solver --example random_reads [GiB=2] [seconds=3]`
//! Prints one line: `random reads: R per second (T threads, G GiB, S s)`.

use std::time::{Duration, Instant};

use rayon::prelude::*;

fn main() {
    let mut args = std::env::args().skip(1);
    let gib: f64 = args.next().map_or(2.0, |a| a.parse().expect("GiB"));
    let seconds: f64 = args.next().map_or(3.0, |a| a.parse().expect("seconds"));
    let len = (gib * (1u64 << 30) as f64) as usize;
    let mut map = memmap2::MmapMut::map_anon(len).expect("anonymous map");
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::HugePage);
    // Touch every byte with a varied pattern, so every page is resident and distinct.
    map.par_chunks_mut(1 << 20)
        .enumerate()
        .for_each(|(c, chunk)| {
            for (i, b) in chunk.iter_mut().enumerate() {
                *b = (c ^ i) as u8;
            }
        });
    let data: &[u8] = &map;
    let threads = rayon::current_num_threads();
    let budget = Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let (reads, sink) = (0..threads)
        .into_par_iter()
        .map(|t| {
            let mut x =
                0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            let mut sum = 0u64;
            let mut reads = 0u64;
            while start.elapsed() < budget {
                for _ in 0..(1 << 16) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    sum = sum.wrapping_add(u64::from(data[(x % len as u64) as usize]));
                }
                reads += 1 << 16;
            }
            (reads, sum)
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 ^ b.1));
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "random reads: {:.0} per second ({threads} threads, {gib} GiB, {elapsed:.1} s; checksum {})",
        reads as f64 / elapsed,
        sink % 10
    );
}
