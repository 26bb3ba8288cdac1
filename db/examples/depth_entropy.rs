//! How compressible a level's depths to conversion are under the contexts a depth coder could
//! use: the measurements behind coder 5's contexts (issue 35).
//!
//! Usage: cargo run --release -p awari-db --example depth_entropy -- DB LEVEL
//!
//! Reads the level's values and depths (a plain or compressed depth table), in segments of
//! 128 entries as the compressed tables code them. A draw's depth is 0 and is not coded; each
//! won or lost position's depth is coded in a context built from what a decoder has without
//! a lookup (the segment's boards, the level's values, the depths decoded before it):
//!
//! - `side`: won or lost; `class`: lands × threat, as coder 4's (`features` in
//!   `compressed/contexts.rs`: whether a sowing of the mover, or of the opponent, ends in a
//!   pit of the other side that then holds 2 or 3 seeds);
//! - `previous`: the depth of the last won or lost position before it in the segment (0 for
//!   the first);
//! - `size`: how much is won or lost, |value| in four classes (1, 2, 3–4, 5 or more);
//! - `back`: how the depth one run back (the board with a seed moved from pit 0 to pit 2,
//!   `pits[0] + pits[1] + 2` entries earlier, if in the segment; a draw's is 0) compares with
//!   the previous depth, in 8 classes (none, equal, ±1, ±2, more above, more below);
//! - `previous, bucketed`: the previous depth exactly to 11, then in 7 wider classes;
//! - `back's depth`: the depth one run back itself, in the same classes, or none (what coder 5
//!   codes with, beside side, class, size and the previous depth bucketed).
//!
//! For each context it prints, in bits per position of the level (draws included): the
//! entropy, the library's rANS coder's segments (each segment whole bytes, as the format
//! stores them) with a model of [`Model::fit`] (every symbol at least 1 in every context)
//! and of [`Model::fit_seen`] (unseen symbols 0), and the model's size as the format stores
//! it (2 bytes a context and symbol), which a larger level spreads thinner.

use std::path::Path;

use awari_db::rans::Model;
use awari_db::{Level, Levels};

/// Entries per segment, as the compressed tables code them.
const SEGMENT: usize = 128;

/// One coded entry's features.
#[derive(Clone, Copy)]
struct Coded {
    lost: bool,
    class: usize,
    previous: usize,
    size: usize,
    relation: usize,
    back_depth: Option<usize>,
    depth: usize,
}

/// Whether some pit of one side ends its sowing in a pit of the other side that then holds 2
/// or 3 seeds: (mover, opponent). The same test as coder 4's class.
fn class(pits: &[u8; 12]) -> usize {
    let mut hit = [false; 2];
    for i in 0..12 {
        let s = usize::from(pits[i]);
        if s == 0 {
            continue;
        }
        let (laps, rest) = (s / 11, s % 11);
        let (last, extra) = if rest == 0 {
            ((i + 11) % 12, 0)
        } else {
            ((i + rest) % 12, 1)
        };
        if (last >= 6) != (i >= 6) {
            let after = usize::from(pits[last]) + laps + extra;
            hit[i / 6] |= (2..=3).contains(&after);
        }
    }
    usize::from(hit[0]) << 1 | usize::from(hit[1])
}

fn relation(back: usize, previous: usize) -> usize {
    match back as isize - previous as isize {
        0 => 1,
        1 => 2,
        -1 => 3,
        2 => 4,
        -2 => 5,
        d if d > 0 => 6,
        _ => 7,
    }
}

fn bucket(p: usize) -> usize {
    match p {
        0..=11 => p,
        12..=15 => 12,
        16..=23 => 13,
        24..=31 => 14,
        32..=47 => 15,
        48..=63 => 16,
        64..=95 => 17,
        _ => 18,
    }
}

/// A context rule: its name, how many contexts per symbol of the alphabet (a multiple of
/// the previous depth's range, or a fixed count), and the context of a coded entry.
struct Rule {
    name: &'static str,
    contexts: fn(usize) -> usize,
    context: fn(&Coded, usize) -> usize,
}

const RULES: &[Rule] = &[
    Rule {
        name: "side, class, previous (coder 5 before)",
        contexts: |s| 8 * s,
        context: |c, s| ((usize::from(c.lost) * 4) + c.class) * s + c.previous,
    },
    Rule {
        name: "and size",
        contexts: |s| 32 * s,
        context: |c, s| (((usize::from(c.lost) * 4) + c.class) * 4 + c.size) * s + c.previous,
    },
    Rule {
        name: "and back",
        contexts: |s| 64 * s,
        context: |c, s| ((((usize::from(c.lost) * 4) + c.class) * s + c.previous) * 8) + c.relation,
    },
    Rule {
        name: "and size, back",
        contexts: |s| 256 * s,
        context: |c, s| {
            (((((usize::from(c.lost) * 4) + c.class) * 4 + c.size) * s + c.previous) * 8)
                + c.relation
        },
    },
    Rule {
        name: "side, class, size, back, previous bucketed",
        contexts: |_| 2 * 4 * 4 * 8 * 19,
        context: |c, _| {
            (((((usize::from(c.lost) * 4) + c.class) * 4 + c.size) * 19 + bucket(c.previous)) * 8)
                + c.relation
        },
    },
    Rule {
        name: "side, class, size, back's depth, previous, bucketed (coder 5)",
        contexts: |_| 2 * 4 * 4 * 20 * 19,
        context: |c, _| {
            (((((usize::from(c.lost) * 4) + c.class) * 4 + c.size) * 19 + bucket(c.previous)) * 20)
                + c.back_depth.map_or(19, bucket)
        },
    },
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: depth_entropy DB LEVEL");
        std::process::exit(2);
    }
    let levels = Levels::open(Path::new(&args[1]), None).unwrap_or_else(|e| {
        eprintln!("depth_entropy: {e}");
        std::process::exit(1);
    });
    let seeds: u32 = args[2].parse().expect("a level");
    let level = Level::new(seeds);
    let size = level.size();

    // The segments' coded entries, read once.
    let mut segments: Vec<Vec<Coded>> = Vec::new();
    let mut largest = 0;
    let chunk = (1u64 << 20).min(size.div_ceil(SEGMENT as u64) * SEGMENT as u64);
    let (mut values, mut depths) = (Vec::new(), vec![0u16; chunk as usize]);
    let mut at = 0;
    while at < size {
        let len = chunk.min(size - at);
        levels
            .read_values(seeds, at..at + len, &mut values)
            .expect("values");
        levels
            .read_depths(seeds, at, &mut depths[..len as usize])
            .expect("depths");
        let boards: Vec<[u8; 12]> = level.boards(at..at + len).map(|b| b.pits()).collect();
        for first in (0..len as usize).step_by(SEGMENT) {
            let end = (first + SEGMENT).min(len as usize);
            let mut coded = Vec::new();
            let mut previous = 0;
            for k in first..end {
                let (v, d) = (values[k], usize::from(depths[k]));
                largest = largest.max(d);
                if v == 0 {
                    continue;
                }
                let pits = &boards[k];
                let back = if pits[2] > 0 {
                    usize::from(pits[0]) + usize::from(pits[1]) + 2
                } else {
                    0
                };
                let back_depth =
                    (back != 0 && back <= k - first).then(|| usize::from(depths[k - back]));
                let relation = back_depth.map_or(0, |b| relation(b, previous));
                coded.push(Coded {
                    lost: v < 0,
                    class: class(pits),
                    previous,
                    size: match v.unsigned_abs() {
                        1 => 0,
                        2 => 1,
                        3..=4 => 2,
                        _ => 3,
                    },
                    relation,
                    back_depth,
                    depth: d,
                });
                previous = d;
            }
            segments.push(coded);
        }
        at += len;
    }
    let symbols = largest + 1;
    let coded: usize = segments.iter().map(Vec::len).sum();
    println!(
        "level {seeds}: {size} positions, {coded} won or lost ({:.1} %), largest depth {largest}",
        100.0 * coded as f64 / size as f64
    );
    println!(
        "{:<62} {:>8} {:>10} {:>10} {:>12} {:>9} {:>9}",
        "context", "entropy", "rANS fit", "fit_seen", "model bytes", "model", "sparse"
    );
    let per = |bits: f64| bits / size as f64;
    for rule in RULES {
        let contexts = (rule.contexts)(symbols);
        let mut counts = vec![0u64; contexts * symbols];
        for c in segments.iter().flatten() {
            counts[(rule.context)(c, symbols) * symbols + c.depth] += 1;
        }
        let mut info = 0.0;
        for row in counts.chunks(symbols) {
            let total: u64 = row.iter().sum();
            for &k in row.iter().filter(|&&k| k > 0) {
                info -= k as f64 * (k as f64 / total as f64).log2();
            }
        }
        let mut sizes = [0usize; 2];
        let sparse = Model::fit_seen(symbols, &counts).to_sparse_bytes().len();
        let mut pairs = Vec::new();
        let mut out = Vec::new();
        for (m, model) in [
            Model::fit(symbols, &counts),
            Model::fit_seen(symbols, &counts),
        ]
        .iter()
        .enumerate()
        {
            for seg in &segments {
                pairs.clear();
                pairs.extend(seg.iter().map(|c| ((rule.context)(c, symbols), c.depth)));
                out.clear();
                model.encode(&pairs, &mut out);
                let mut d = model.decoder(&out);
                assert!(pairs.iter().all(|&(c, s)| d.next(c) == s) && d.finish());
                sizes[m] += out.len();
            }
        }
        let model_bytes = 2 * contexts * symbols;
        println!(
            "{:<62} {:>8.3} {:>10.3} {:>10.3} {:>12} {:>9.3} {:>9.3}",
            rule.name,
            per(info),
            per(8.0 * sizes[0] as f64),
            per(8.0 * sizes[1] as f64),
            model_bytes,
            per(8.0 * model_bytes as f64),
            per(8.0 * sparse as f64),
        );
    }
}
