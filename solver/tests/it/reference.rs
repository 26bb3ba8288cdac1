//! A slow, obviously correct second solver, written without un-moves, counters or the
//! table format, must agree with the builder on every position of levels 0..8, under all
//! three rule sets.
//!
//! The reference is plain value iteration: start every non-terminal position of a level at 0
//! and repeat `v(p) = max over legal moves (captures − v(child))` over the whole level until
//! nothing changes. After t sweeps, v is the value of the game cut off after t plies with the
//! cut-off scored 0; a side that can force a result of ±i forces it within finitely many plies,
//! and a side that cannot is kept from it forever, so the iteration becomes stationary exactly
//! at the game's value with endless play scored 0 — the value the tables define.

use std::collections::HashMap;

use awari_db::{Board, Level, Outcome, Rules};
use awari_solver::build::{build, BuildOptions};
use awari_solver::Silent;

use crate::common::temp;

fn boards_of(n: u32) -> Vec<Board> {
    // Every board with n seeds whose opponent row has an empty pit, by brute force.
    let mut out = Vec::new();
    let mut pits = [0u8; 12];
    fn rec(p: &mut [u8; 12], i: usize, left: u32, out: &mut Vec<Board>) {
        if i == 11 {
            p[11] = left as u8;
            if p[6..].contains(&0) {
                out.push(Board::from_pits(*p));
            }
            return;
        }
        for v in 0..=left {
            p[i] = v as u8;
            rec(p, i + 1, left - v, out);
        }
    }
    rec(&mut pits, 0, n, &mut out);
    out
}

fn reference_values(rules: Rules, max: u32) -> Vec<HashMap<Board, i8>> {
    let mut done: Vec<HashMap<Board, i8>> = Vec::new();
    for n in 0..=max {
        let boards = boards_of(n);
        let mut v: HashMap<Board, i8> = boards.iter().map(|&b| (b, 0)).collect();
        loop {
            let mut next = HashMap::with_capacity(v.len());
            for &b in &boards {
                let x = match b.outcome(rules) {
                    Outcome::Terminal(t) => t,
                    Outcome::Moves(ms) => ms
                        .iter()
                        .map(|m| {
                            let c = if m.captures == 0 {
                                v[&m.child]
                            } else {
                                done[(n - u32::from(m.captures)) as usize][&m.child]
                            };
                            m.captures as i8 - c
                        })
                        .max()
                        .unwrap(),
                };
                next.insert(b, x);
            }
            if next == v {
                break;
            }
            v = next;
        }
        done.push(v);
    }
    done
}

#[test]
fn builder_agrees_with_value_iteration_levels_0_to_8() {
    for rules in Rules::ALL {
        let dir = temp(&format!("reference-{rules}"));
        let opts = BuildOptions {
            dir: dir.clone(),
            max_stones: 8,
            rules,
            memory: None,
            depth: false,
            mode: Default::default(),
            compress: false,
            depth_form: Default::default(),
        };
        let (levels, _) = build(&opts, &Silent, |_| {}).unwrap();
        let reference = reference_values(rules, 8);
        for (n, want) in reference.iter().enumerate() {
            let level = Level::new(n as u32);
            assert_eq!(want.len() as u64, level.size());
            let table = levels.get(n as u32).unwrap();
            for (b, &v) in want {
                let i = level.rank(b).unwrap();
                assert_eq!(table.value(i).unwrap(), v, "{rules}: level {n}, board {b}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
