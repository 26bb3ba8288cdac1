//! What a level builder must know of each position's exit while it settles the level: the
//! measurements behind the design of a build in about one bit of RAM per position (issue 60).
//!
//! Usage: cargo run --release -p awari-db --example exit_classes -- DB LEVEL
//!
//! A position's *exit* is its best capture (`captures − value(child)`), or its value if the
//! game is over; positions with neither have no exit. At step i of the settling (i = n … 1),
//! a position not yet settled (|value| ≤ i) may be lost at i only if its exit is ≤ −i or it
//! has none: it is *losable*. A loss test reads that of every predecessor of a position won.
//! Positions with no exit are told apart by their moves alone (no capture); only those with
//! an exit need it stored. Prints, for the level:
//! - the shares of positions without an exit, terminal, and with an exit above, at and below 0;
//! - for each step i, the positions with an exit ≤ −i that are not yet settled (the set a
//!   builder must answer membership of), as a share of the level and as the bits a position
//!   that a static sorted set of them (Elias-Fano: 2 + log2(N/m) bits an entry) would take.

use awari_db::{Level, Levels, Outcome};
use rayon::prelude::*;

/// Exit classes: 0..=96 for exits −48..=48, 97 none, 98 terminal (its value its exit).
const NONE: usize = 97;
const TERMINAL: usize = 98;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(db), Some(n)) = (args.get(1), args.get(2).and_then(|s| s.parse::<u32>().ok())) else {
        eprintln!("usage: exit_classes DB LEVEL");
        std::process::exit(2);
    };
    let levels = Levels::open(db.as_ref(), None).unwrap_or_else(|e| {
        eprintln!("exit_classes: {e}");
        std::process::exit(1);
    });
    let table = levels.require(n).unwrap_or_else(|e| {
        eprintln!("exit_classes: {e}");
        std::process::exit(1);
    });
    let rules = levels.rules();
    let level = Level::new(n);
    let size = level.size();
    const PART: u64 = 1 << 20;
    // counts[class][value + 48]
    let counts = (0..size.div_ceil(PART))
        .into_par_iter()
        .map(|p| {
            let mut c = vec![[0u64; 97]; 99];
            let range = p * PART..((p + 1) * PART).min(size);
            for (i, board) in range.clone().zip(level.boards(range)) {
                let value = table.value(i).expect("a sound table");
                let class = match board.outcome(rules) {
                    Outcome::Terminal(v) => {
                        let _ = v;
                        TERMINAL
                    }
                    Outcome::Moves(moves) => moves
                        .iter()
                        .filter(|m| m.captures > 0)
                        .map(|m| levels.move_value(m).expect("lower levels present"))
                        .max()
                        .map_or(NONE, |e| (i32::from(e) + 48) as usize),
                };
                c[class][(i32::from(value) + 48) as usize] += 1;
            }
            c
        })
        .reduce(
            || vec![[0u64; 97]; 99],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(&b) {
                    for (u, v) in x.iter_mut().zip(y) {
                        *u += v;
                    }
                }
                a
            },
        );
    let total = |class: usize| counts[class].iter().sum::<u64>();
    let share = |k: u64| 100.0 * k as f64 / size as f64;
    let exits: Vec<u64> = (0..97).map(total).collect();
    let above: u64 = exits[49..].iter().sum();
    let below: u64 = exits[..48].iter().sum();
    println!("level {n} ({rules}): {size} positions");
    println!(
        "no exit {:.2}%, terminal {:.2}%, exit > 0 {:.2}%, exit 0 {:.2}%, exit < 0 {:.2}%",
        share(total(NONE)),
        share(total(TERMINAL)),
        share(above),
        share(exits[48]),
        share(below)
    );
    println!("step  losable by exit, unsettled   share    EF bits/position");
    let mut peak: f64 = 0.0;
    for i in (1..=n as i32).rev() {
        // Exit ≤ −i: classes 0 ..= 48 − i; unsettled at the start of step i: |value| ≤ i.
        let m: u64 = (0..=(48 - i) as usize)
            .map(|class| {
                (-i..=i)
                    .map(|v| counts[class][(v + 48) as usize])
                    .sum::<u64>()
            })
            .sum();
        let d = m as f64 / size as f64;
        let bits = if m == 0 {
            0.0
        } else {
            d * (2.0 + (1.0 / d).log2())
        };
        peak = peak.max(bits);
        println!("{i:4}  {m:26}  {:6.2}%  {bits:.3}", 100.0 * d);
    }
    println!("peak: {peak:.3} bits per position");
}
