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
//!   position has a capture, and the previous stored symbol.

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
            let capture = match b.outcome(rules) {
                Outcome::Terminal(_) => None,
                Outcome::Moves(moves) => moves
                    .iter()
                    .filter(|m| m.captures > 0)
                    .map(|m| levels.move_value(m).expect("lower levels present"))
                    .max(),
            };
            Position {
                value: table.value(i as u64).expect("a sound table"),
                seeds: b.mover_seeds() as u8,
                capture,
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
}
