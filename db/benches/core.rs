//! Micro-benchmarks of the hot operations of the builder: move generation, ranking,
//! incremental iteration, un-move and un-capture generation, in nanoseconds per position.
//!
//! Run with `cargo bench -p awari-db` (or `scripts/bench-core.sh`). A plain harness (no
//! extra crate): each case runs for about a second, three times, and the best run is kept.

use std::hint::black_box;
use std::time::Instant;

use awari_db::{Level, QuietMoves, Rules};

fn measure(name: &str, positions: u64, mut f: impl FnMut() -> u64) {
    let mut best = f64::INFINITY;
    let mut sink = 0u64;
    for _ in 0..3 {
        let t = Instant::now();
        sink = sink.wrapping_add(f());
        let ns = t.elapsed().as_nanos() as f64 / positions as f64;
        best = best.min(ns);
    }
    black_box(sink);
    println!(
        "{name:<40} {best:>8.1} ns/position  {:>7.2} M positions/s",
        1e3 / best
    );
}

fn main() {
    let level = Level::new(20);
    let count = 2_000_000u64;
    let start = level.size() / 3;
    let boards: Vec<_> = level.boards(start..start + count).collect();
    println!("level 20, {count} consecutive positions from index {start}");

    measure("iterate (successor)", count, || {
        level
            .boards(start..start + count)
            .map(|b| u64::from(b.pits()[0]))
            .sum()
    });
    measure("rank", count, || {
        boards.iter().map(|b| level.rank(b).unwrap_or(0)).sum()
    });
    measure("unrank", count / 10, || {
        (0..count / 10)
            .map(|i| u64::from(level.unrank(start + i * 7).pits()[3]))
            .sum()
    });
    for rules in Rules::ALL {
        measure(&format!("outcome / legal moves ({rules})"), count, || {
            boards
                .iter()
                .map(|b| b.legal_moves(rules).len() as u64)
                .sum()
        });
    }
    for rules in Rules::ALL {
        measure(
            &format!("quiet moves, forward pass ({rules})"),
            count,
            || {
                boards
                    .iter()
                    .map(|b| u64::from(b.quiet_moves(rules).unwrap_or(0)))
                    .sum()
            },
        );
    }
    for rules in Rules::ALL {
        measure(
            &format!("quiet moves in index order ({rules})"),
            count,
            || {
                let mut counter = QuietMoves::new();
                boards
                    .iter()
                    .map(|b| u64::from(counter.count(b, rules).unwrap_or(0)))
                    .sum()
            },
        );
    }
    // The exits stream: every position of level 20 un-captured into level 22 (c = 2) and 26
    // (c = 6), each parent ranked (by the ranked generator the builder uses); Cross-Wari
    // un-captures both ways.
    for rules in [Rules::Awari, Rules::CrossWari] {
        for c in [2u8, 6] {
            let up = Level::new(20 + u32::from(c));
            let mut parents = 0u64;
            for b in &boards {
                b.for_each_uncapture(rules, c, |_, _| parents += 1);
            }
            println!(
                "(un-captures taking {c}, {rules}: {:.3} parents per position)",
                parents as f64 / count as f64
            );
            measure(
                &format!("un-captures + rank ({rules}, c = {c})"),
                count,
                || {
                    let mut k = 0u64;
                    for b in &boards {
                        b.for_each_ranked_uncapture(rules, c, &up, |q, _| k += q);
                    }
                    k
                },
            );
        }
    }
    // The same boards in random order, as the settling phase meets them: the un-sowing loop's
    // branches no longer follow the index order.
    let mut shuffled = boards.clone();
    let mut rng = awari_db::SplitMix64(7);
    for k in (1..shuffled.len()).rev() {
        shuffled.swap(k, rng.below(k as u64 + 1) as usize);
    }
    measure("un-moves, random order (awari)", count, || {
        let mut k = 0u64;
        for b in &shuffled {
            b.for_each_predecessor(Rules::Awari, |p, _| k += u64::from(p.pits()[0]));
        }
        k
    });
    measure("ranked un-moves, random order (awari)", count, || {
        let mut k = 0u64;
        for b in &shuffled {
            b.for_each_ranked_predecessor(Rules::Awari, &level, |q, _| k += q);
        }
        k
    });
    let mut preds = 0u64;
    for b in &boards {
        b.for_each_predecessor(Rules::Awari, |_, _| preds += 1);
    }
    println!(
        "(un-moves: {:.3} predecessors per position)",
        preds as f64 / count as f64
    );
    for rules in Rules::ALL {
        measure(&format!("un-moves ({rules})"), count, || {
            let mut k = 0u64;
            for b in &boards {
                b.for_each_predecessor(rules, |p, _| k += u64::from(p.pits()[0]));
            }
            k
        });
        measure(&format!("un-moves + rank ({rules})"), count, || {
            let mut k = 0u64;
            for b in &boards {
                b.for_each_predecessor(rules, |p, _| k += level.rank(&p).unwrap_or(0));
            }
            k
        });
        measure(&format!("ranked un-moves ({rules})"), count, || {
            let mut k = 0u64;
            for b in &boards {
                b.for_each_ranked_predecessor(rules, &level, |q, _| k += q);
            }
            k
        });
    }
}
