//! How compressible a level's values are: their empirical entropy, in bits per position,
//! under the contexts a table coder could use (the measurements behind the compressed table
//! format, issue 23, and behind its next step).
//!
//! Usage: cargo run --release -p awari-db --example value_entropy -- DB LEVEL
//!
//! Prints, for the level's values in index order:
//! - `order 0`: no context;
//! - `previous`, `previous two`: the previous value(s) in index order (what the compressed
//!   format codes with: the previous value);
//! - `seeds, previous`: the mover's seeds and the previous value;
//! - the share of positions with a capture that achieves their value (`don't-cares`);
//! - `don't-care`: what is stored may be anything no better than the best capture where a
//!   capture achieves the value (a probe then takes the maximum of the two), chosen as the
//!   most probable symbol of its context (the mover's seeds and the previous stored symbol),
//!   refined over three passes;
//! - `residual`: capture positions store their value less the best capture's (≥ 0; any value
//!   ≤ 0 where a capture achieves it), in the context of the mover's seeds, whether the
//!   position has a capture, and the previous stored symbol;
//! - `probe form, …`: what the probe form stores (a don't-care or terminal position stores
//!   its context's most probable allowed symbol, four passes), in segments of 128 values as it
//!   codes them, with the entropy and the size of an order-n Huffman code (no length limit)
//!   under four contexts, each decodable without a lookup:
//!   - `previous`: the previous stored value in the segment (what the removed coder 2 used);
//!   - `capture`: and whether the position has a capturing move (moves only, no lookup);
//!   - `run back`: and how the stored value one run back (the same board with a seed moved
//!     from pit 0 to pit 2, `pits[0] + pits[1] + 2` entries earlier, when in the segment)
//!     compares with the previous one: equal, ±1, ±2, above, below, or absent;
//!   - `capture, run back`: both;
//!   - `lands`: instead of `capture`, whether some move's last seed lands in an opponent's pit
//!     that then holds 2 or 3 seeds (sowing only: a few operations, where `capture` generates
//!     the moves; it agrees with `capture` at 99.8 % of level 16's positions);
//!   - `capture size`: the most seeds one move captures, in four classes (0, 1–3, 4–6, more);
//!   - `lands, threat`: `lands`, and the same test for the opponent, as if it were to move;
//!   - `lands, threat, back`: and the run back.
//!
//! Each `probe form` line gives the entropy, an order-n Huffman code (codes alone, then in
//! segments padded to a byte), and a rANS coder that starts each segment from state 0
//! (`awari_db::rans`, the library's coder; every segment decoded back and compared). Also printed: how often `lands`
//! agrees with `capture`.

use std::collections::HashMap;

use awari_db::{Level, Levels, Outcome};

/// Entropy in bits per symbol of (context, symbol) counts.
fn entropy(counts: &HashMap<(u64, i8), u64>) -> f64 {
    let mut per_context: HashMap<u64, u64> = HashMap::new();
    let mut total = 0;
    for (&(c, _), &k) in counts {
        *per_context.entry(c).or_default() += k;
        total += k;
    }
    let bits: f64 = counts
        .iter()
        .map(|(&(c, _), &k)| -(k as f64) * (k as f64 / per_context[&c] as f64).log2())
        .sum();
    bits / total.max(1) as f64
}

/// One position: its value, the mover's seeds, and its best capture value (`None`: no
/// capture; terminal positions have none).
struct Position {
    value: i8,
    seeds: u8,
    capture: Option<i8>,
    terminal: bool,
    /// Entries back to the same board with a seed moved from pit 0 to pit 2 (0: none).
    run_back: u8,
    /// The most seeds one legal move captures (0: no capture, or terminal).
    largest_capture: u8,
    /// Whether some move's last seed lands in an opponent's pit that then holds 2 or 3 seeds
    /// (sowing alone, no rule checks: a cheap stand-in for "has a capture").
    lands: bool,
    /// The same for the opponent, as if it were to move: a threat.
    threat: bool,
}

/// Whether some pit's sowing ends in an opponent's pit that then holds 2 or 3 seeds: the
/// first condition of a capture, from the pits alone (grand slams and feeding not checked).
fn lands_on_two_or_three(pits: &[u8; 12]) -> bool {
    (0..6).any(|i| {
        let s = usize::from(pits[i]);
        if s == 0 {
            return false;
        }
        // Sowing skips the origin pit: 11 pits a lap.
        let (laps, rest) = (s / 11, s % 11);
        let (last, extra) = if rest == 0 {
            ((i + 11) % 12, 0)
        } else {
            ((i + rest) % 12, 1)
        };
        let after = usize::from(pits[last]) + laps + extra;
        last >= 6 && (2..=3).contains(&after)
    })
}

/// Huffman code lengths of symbol counts (no length limit), by merging the two lightest.
fn huffman_lengths(counts: &[u64]) -> Vec<u32> {
    let mut lengths = vec![0u32; counts.len()];
    let mut nodes: Vec<(u64, Vec<usize>)> = (0..counts.len())
        .filter(|&s| counts[s] > 0)
        .map(|s| (counts[s], vec![s]))
        .collect();
    if nodes.len() == 1 {
        lengths[nodes[0].1[0]] = 1;
    }
    while nodes.len() > 1 {
        nodes.sort_by_key(|node| std::cmp::Reverse(node.0));
        let (wa, a) = nodes.pop().expect("two nodes");
        let (wb, b) = nodes.pop().expect("two nodes");
        for &s in a.iter().chain(&b) {
            lengths[s] += 1;
        }
        nodes.push((wa + wb, [a, b].concat()));
    }
    lengths
}

/// The probe form's stored values in segments of 128, under a context of `features` classes
/// (a function of the position) × the previous stored value × `relations` classes of the
/// value one run back: its entropy and the sizes of two coders (see [`Coded`]).
fn probe_form(
    positions: &[Position],
    n: i32,
    features: usize,
    feature: &dyn Fn(&Position) -> usize,
    relations: bool,
) -> Coded {
    let symbols = (2 * n + 1) as usize;
    let classes = if relations { 8 } else { 1 };
    let contexts = features * symbols * classes;
    let mut probability = vec![0.0f64; contexts * symbols];
    let (mut entropy, mut huffman) = (0.0, 0.0);
    // The last pass's (context, symbol) pairs, segment by segment, for the coders below.
    let mut coded_segments: Vec<Vec<(usize, usize)>> = Vec::new();
    let mut last_counts = Vec::new();
    for pass in 0..4 {
        let mut counts = vec![0u64; contexts * symbols];
        coded_segments.clear();
        for segment in positions.chunks(128) {
            let mut stored: Vec<usize> = Vec::with_capacity(128);
            let mut pairs = Vec::with_capacity(128);
            for (k, p) in segment.iter().enumerate() {
                let prev = stored.last().copied().unwrap_or(n as usize);
                let back = usize::from(p.run_back);
                let relation = if !relations || back == 0 || back > k {
                    0
                } else {
                    match stored[k - back] as i32 - prev as i32 {
                        0 => 1,
                        1 => 2,
                        -1 => 3,
                        2 => 4,
                        -2 => 5,
                        d if d > 0 => 6,
                        _ => 7,
                    }
                };
                let c = (feature(p) * symbols + prev) * classes + relation;
                let ceiling = if p.terminal {
                    Some(n)
                } else if p.capture == Some(p.value) {
                    Some(i32::from(p.value))
                } else {
                    None
                };
                let x = match ceiling {
                    None => i32::from(p.value),
                    Some(top) if pass == 0 => {
                        let previous = prev as i32 - n;
                        if previous <= top {
                            previous
                        } else {
                            i32::from(p.value)
                        }
                    }
                    Some(top) => (-n..=top)
                        .max_by(|&a, &b| {
                            let row = &probability[c * symbols..];
                            row[(a + n) as usize].total_cmp(&row[(b + n) as usize])
                        })
                        .expect("a non-empty range"),
                };
                counts[c * symbols + (x + n) as usize] += 1;
                stored.push((x + n) as usize);
                pairs.push((c, (x + n) as usize));
            }
            coded_segments.push(pairs);
        }
        let (mut bits, mut coded) = (0.0, 0u64);
        for c in 0..contexts {
            let row = &counts[c * symbols..(c + 1) * symbols];
            let total: u64 = row.iter().sum();
            let lengths = huffman_lengths(row);
            for s in 0..symbols {
                let q = if total == 0 {
                    0.0
                } else {
                    row[s] as f64 / total as f64
                };
                probability[c * symbols + s] = q;
                if row[s] > 0 {
                    bits -= row[s] as f64 * q.log2();
                    coded += row[s] * u64::from(lengths[s]);
                }
            }
        }
        let len = positions.len().max(1) as f64;
        (entropy, huffman) = (bits / len, coded as f64 / len);
        last_counts = counts;
    }
    let len = positions.len().max(1) as f64;
    let model = awari_db::rans::Model::fit(symbols, &last_counts);
    let mut lengths = vec![0u32; contexts * symbols];
    for c in 0..contexts {
        let row = &last_counts[c * symbols..(c + 1) * symbols];
        lengths[c * symbols..(c + 1) * symbols].copy_from_slice(&huffman_lengths(row));
    }
    let (mut rans_bytes, mut huffman_bytes, mut fallbacks) = (0u64, 0u64, 0u64);
    for pairs in &coded_segments {
        let mut bytes = Vec::new();
        let fell_back = model.encode(pairs, &mut bytes);
        let mut decoder = model.decoder(&bytes);
        for &(c, symbol) in pairs {
            assert_eq!(decoder.next(c), symbol, "a segment decoded back");
        }
        assert!(decoder.finish());
        rans_bytes += bytes.len() as u64;
        fallbacks += u64::from(fell_back);
        let bits: u64 = pairs
            .iter()
            .map(|&(c, x)| u64::from(lengths[c * symbols + x]))
            .sum();
        huffman_bytes += bits.div_ceil(8);
    }
    Coded {
        entropy,
        huffman,
        huffman_segments: 8.0 * huffman_bytes as f64 / len,
        rans_segments: 8.0 * rans_bytes as f64 / len,
        fallbacks: fallbacks as f64 / coded_segments.len().max(1) as f64,
    }
}

/// Bits per position of the probe form's stored values under one context.
struct Coded {
    /// The empirical entropy.
    entropy: f64,
    /// An order-n Huffman code, the codes alone.
    huffman: f64,
    /// The same, each segment padded to a byte (as the format stores them).
    huffman_segments: f64,
    /// The rANS coder below, each segment on its own, whole bytes.
    rans_segments: f64,
    /// The share of segments that started from the full state (see `awari_db::rans::Model::encode`).
    fallbacks: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(db), Some(n)) = (args.get(1), args.get(2).and_then(|s| s.parse::<u32>().ok())) else {
        eprintln!("usage: value_entropy DB LEVEL");
        std::process::exit(2);
    };
    let levels = Levels::open(db.as_ref(), None).unwrap_or_else(|e| {
        eprintln!("value_entropy: {e}");
        std::process::exit(1)
    });
    let rules = levels.rules();
    let level = Level::new(n);
    let table = levels.require(n).expect("the level is present");
    let positions: Vec<Position> = level
        .boards(0..level.size())
        .enumerate()
        .map(|(i, b)| {
            let outcome = b.outcome(rules);
            let capture = match outcome {
                Outcome::Terminal(_) => None,
                Outcome::Moves(moves) => moves
                    .iter()
                    .filter(|m| m.captures > 0)
                    .map(|m| levels.move_value(m).expect("lower levels present"))
                    .max(),
            };
            let pits = b.pits();
            let largest_capture = match outcome {
                Outcome::Terminal(_) => 0,
                Outcome::Moves(moves) => moves.iter().map(|m| m.captures).max().unwrap_or(0),
            };
            Position {
                largest_capture,
                lands: lands_on_two_or_three(&pits),
                threat: lands_on_two_or_three(&b.rotated().pits()),
                value: table.value(i as u64).expect("a sound table"),
                seeds: b.mover_seeds() as u8,
                capture,
                terminal: matches!(outcome, Outcome::Terminal(_)),
                run_back: if pits[2] > 0 {
                    pits[0] + pits[1] + 2
                } else {
                    0
                },
            }
        })
        .collect();
    let count = |f: &dyn Fn(usize) -> (u64, i8)| {
        let mut c: HashMap<(u64, i8), u64> = HashMap::new();
        for i in 0..positions.len() {
            *c.entry(f(i)).or_default() += 1;
        }
        entropy(&c)
    };
    let v = |i: usize| positions[i].value;
    let before = |i: usize, k: usize| if i >= k { v(i - k) } else { 0 } as u8 as u64;
    let dont_care: Vec<bool> = positions
        .iter()
        .map(|p| p.capture == Some(p.value))
        .collect();
    println!("level {n} ({} positions, {rules} rules)", positions.len());
    println!("  order 0           {:.3}", count(&|i| (0, v(i))));
    println!(
        "  previous          {:.3}",
        count(&|i| (before(i, 1), v(i)))
    );
    println!(
        "  previous two      {:.3}",
        count(&|i| (before(i, 1) << 8 | before(i, 2), v(i)))
    );
    let seeds = |i: usize| u64::from(positions[i].seeds);
    println!(
        "  seeds, previous   {:.3}",
        count(&|i| (seeds(i) << 8 | before(i, 1), v(i)))
    );
    println!(
        "  don't-cares       {:.1}%",
        100.0 * dont_care.iter().filter(|&&d| d).count() as f64 / positions.len().max(1) as f64
    );
    // The stored symbols, the free ones chosen as their context's most probable allowed symbol.
    let refine = |target: &dyn Fn(usize) -> i8,
                  ceiling: &dyn Fn(usize) -> Option<i8>,
                  context: &dyn Fn(usize) -> u64| {
        let mut model: HashMap<(u64, i8), u64> = HashMap::new();
        let mut bits = 0.0;
        for pass in 0..3 {
            let mut counts: HashMap<(u64, i8), u64> = HashMap::new();
            let mut stored_prev = 0i8;
            for i in 0..positions.len() {
                let c = context(i) << 8 | stored_prev as u8 as u64;
                let s = match ceiling(i) {
                    // First pass: repeat the previous symbol where allowed.
                    Some(top) if pass == 0 => {
                        if stored_prev <= top {
                            stored_prev
                        } else {
                            target(i)
                        }
                    }
                    Some(top) => (-(n as i8)..=top)
                        .max_by_key(|&y| model.get(&(c, y)).copied().unwrap_or(0))
                        .expect("a non-empty range"),
                    None => target(i),
                };
                *counts.entry((c, s)).or_default() += 1;
                stored_prev = s;
            }
            bits = entropy(&counts);
            model = counts;
        }
        bits
    };
    let dc = refine(&|i| v(i), &|i| dont_care[i].then_some(v(i)), &|i| seeds(i));
    println!("  don't-care        {dc:.3}");
    let residual = |i: usize| match positions[i].capture {
        Some(e) => v(i) - e,
        None => v(i),
    };
    let rs = refine(&residual, &|i| dont_care[i].then_some(0), &|i| {
        seeds(i) << 1 | u64::from(positions[i].capture.is_some())
    });
    println!("  residual          {rs:.3}");
    let has_capture = |p: &Position| usize::from(p.capture.is_some());
    let lands = |p: &Position| usize::from(p.lands);
    // The largest capture in 4 classes: none, 2-3, 4-6, more.
    let size = |p: &Position| match p.largest_capture {
        0 => 0,
        1..=3 => 1,
        4..=6 => 2,
        _ => 3,
    };
    let none: &dyn Fn(&Position) -> usize = &|_| 0;
    let agree = positions
        .iter()
        .filter(|p| p.lands == p.capture.is_some())
        .count();
    println!(
        "  lands agrees with has a capture at {:.1}% of positions",
        100.0 * agree as f64 / positions.len().max(1) as f64
    );
    let threat = |p: &Position| usize::from(p.lands) << 1 | usize::from(p.threat);
    type Feature<'a> = &'a dyn Fn(&Position) -> usize;
    let contexts: [(&str, usize, Feature, bool); 9] = [
        ("previous", 1, none, false),
        ("capture", 2, &has_capture, false),
        ("lands", 2, &lands, false),
        ("capture size", 4, &size, false),
        ("run back", 1, none, true),
        ("capture, run back", 2, &has_capture, true),
        ("lands, run back", 2, &lands, true),
        ("lands, threat", 4, &threat, false),
        ("lands, threat, back", 4, &threat, true),
    ];
    for (name, features, feature, relations) in contexts {
        let r = probe_form(&positions, n as i32, features, feature, relations);
        println!(
            "  probe form, {name:18} entropy {:.3}, Huffman {:.3} ({:.3} in byte segments), rANS {:.3} in byte segments ({:.1}% from the full state)",
            r.entropy,
            r.huffman,
            r.huffman_segments,
            r.rans_segments,
            100.0 * r.fallbacks
        );
    }
}
