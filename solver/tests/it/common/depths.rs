//! The reference's depth tables, from an independent breadth-first solver written plainly
//! over the db crate's public moves and un-moves: the depth passes (`awari_solver::depth`)
//! are checked against it, and it shares no code with them or with the builders.
//!
//! A position's depth is the wave of its step that settles it (docs/design.md, "Depth"):
//!
//! ```text
//!   value 0                                      depth 0 (never settled)
//!   won by i,  its exit (best capture or end) i  depth 0 (a seed)
//!   won by i,  else                              1 + the least depth of its quiet children
//!                                                    lost by i
//!   lost by i, no quiet child won by exactly i   depth 0 (a seed: its exit is −i)
//!   lost by i, else                              1 + the greatest depth of its quiet
//!                                                    children won by exactly i
//! ```
//!
//! Computed from the level's values (the in-memory builder's) breadth first: the seeds, then
//! from each wave's positions their predecessors by un-moves, a won predecessor taking the
//! first wave that reaches it, a lost one the wave that counts down its last child won by i.
#![allow(dead_code)]

use std::path::Path;
use std::sync::atomic::{AtomicU16, AtomicU8, Ordering::Relaxed};

use awari_db::table::TableWriter;
use awari_db::{depth_path, Header, Level, Levels, Outcome, Rules};
use rayon::prelude::*;

/// Not reached yet.
const UNSET: u16 = u16::MAX;

/// Write the depth table of level `n` (its values and those of the levels below in `levels`)
/// as `level-NN.depth` in `out`: one byte an entry where the deepest fits, else two.
pub fn write_depth_table(levels: &Levels, n: u32, rules: Rules, out: &Path) {
    let depths = depths(levels, n, rules);
    let deepest = depths.iter().copied().max().unwrap_or(0);
    let width: u8 = if deepest <= u16::from(u8::MAX) { 1 } else { 2 };
    let mut w = TableWriter::create(depth_path(out, n), Header::depth(rules, n, width)).unwrap();
    for block in depths.chunks(1 << 20) {
        let bytes: Vec<u8> = if width == 1 {
            block.iter().map(|&d| d as u8).collect()
        } else {
            block.iter().flat_map(|d| d.to_le_bytes()).collect()
        };
        w.write(&bytes).unwrap();
    }
    w.finish().unwrap();
}

/// Every depth of level `n` (see the module).
pub fn depths(levels: &Levels, n: u32, rules: Rules) -> Vec<u16> {
    let level = Level::new(n);
    let table = levels.get(n).expect("the level's values");
    let value = |q: u64| table.value(q).unwrap();
    let size = level.size();
    let depth: Vec<AtomicU16> = (0..size).map(|_| AtomicU16::new(UNSET)).collect();
    // Lost positions: their quiet moves to a child won by exactly their |value|, not yet
    // reached.
    let pending: Vec<AtomicU8> = (0..size).map(|_| AtomicU8::new(0)).collect();
    const PART: u64 = 1 << 14;
    let seeds: Vec<u64> = (0..size.div_ceil(PART))
        .into_par_iter()
        .flat_map_iter(|k| {
            let range = k * PART..((k + 1) * PART).min(size);
            let mut seeds = Vec::new();
            for (q, board) in range.clone().zip(level.boards(range)) {
                let v = value(q);
                if v == 0 {
                    depth[q as usize].store(0, Relaxed);
                    continue;
                }
                let (mut exit, mut last) = (None::<i8>, 0u8);
                match board.outcome(rules) {
                    Outcome::Terminal(t) => exit = Some(t),
                    Outcome::Moves(moves) => {
                        for m in moves.iter() {
                            if m.captures == 0 {
                                let c = level.rank(&m.child).expect("a quiet child is indexed");
                                last += u8::from(value(c) == -v && v < 0);
                            } else {
                                let below = n - u32::from(m.captures);
                                let c = Level::new(below).rank(&m.child).expect("indexed");
                                let child = levels.get(below).expect("a lower level");
                                let e = m.captures as i8 - child.value(c).unwrap();
                                exit = Some(exit.map_or(e, |x| x.max(e)));
                            }
                        }
                    }
                }
                let seed = if v > 0 {
                    exit == Some(v)
                } else {
                    assert!(
                        last > 0 || exit == Some(v),
                        "level {n}, position {q}: lost by {v} with no reason"
                    );
                    last == 0
                };
                pending[q as usize].store(last, Relaxed);
                if seed {
                    depth[q as usize].store(0, Relaxed);
                    seeds.push(q);
                }
            }
            seeds
        })
        .collect();
    let mut frontier = seeds;
    let mut wave: u16 = 0;
    while !frontier.is_empty() {
        let next = wave + 1;
        frontier = frontier
            .par_chunks(256)
            .flat_map_iter(|part| {
                let mut out = Vec::new();
                for &p in part {
                    let v = value(p);
                    level
                        .unrank(p)
                        .for_each_ranked_predecessor(rules, &level, |q, _| {
                            if value(q) != -v {
                                return;
                            }
                            let reached = if v < 0 {
                                // A won predecessor: the first wave to reach it.
                                depth[q as usize]
                                    .compare_exchange(UNSET, next, Relaxed, Relaxed)
                                    .is_ok()
                            } else {
                                // A lost one: its last child won by i.
                                pending[q as usize].fetch_sub(1, Relaxed) == 1 && {
                                    depth[q as usize].store(next, Relaxed);
                                    true
                                }
                            };
                            if reached {
                                out.push(q);
                            }
                        });
                }
                out
            })
            .collect();
        wave = next;
    }
    depth
        .into_iter()
        .enumerate()
        .map(|(q, d)| {
            let d = d.into_inner();
            assert_ne!(
                d, UNSET,
                "level {n}, position {q}: settled but never reached"
            );
            d
        })
        .collect()
}
