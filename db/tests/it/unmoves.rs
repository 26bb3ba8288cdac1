//! Un-moves against moves: every child's predecessors are exactly the boards that reach it
//! by a legal non-capturing move, for all three rule sets.

use crate::common;

use std::collections::{HashMap, HashSet};

use awari_db::SplitMix64 as Rng;
use awari_db::{Board, Level, Rules};

#[test]
fn exhaustive_levels_0_to_9() {
    for rules in Rules::ALL {
        for n in 0..=9u32 {
            let level = Level::new(n);
            // Forward: every board of n seeds that can move (indexed or not; the start-like
            // boards with a full opponent row are parents too).
            let mut forward: HashMap<Board, HashSet<(Board, u8)>> = HashMap::new();
            let mut pits = [0u8; 12];
            common::for_all_boards(&mut pits, 0, n, &mut |parent| {
                for m in parent.legal_moves(rules).iter() {
                    if m.captures == 0 {
                        assert_eq!(m.child.seeds(), n);
                        assert!(level.rank(&m.child).is_some(), "children are indexed");
                        forward.entry(m.child).or_default().insert((parent, m.pit));
                    }
                }
            });
            for child in level.boards(0..level.size()) {
                let preds = child.predecessors(rules);
                let set: HashSet<(Board, u8)> = preds.iter().copied().collect();
                assert_eq!(set.len(), preds.len(), "duplicates for {child}");
                let want = forward.remove(&child).unwrap_or_default();
                assert_eq!(set, want, "{rules}: predecessors of {child}");
            }
            assert!(forward.is_empty());
        }
    }
}

#[test]
fn random_boards_up_to_48() {
    let mut rng = Rng(2026);
    for rules in Rules::ALL {
        for _ in 0..100_000 / 3 {
            let n = 1 + rng.below(48) as u32;
            let n = if n == 47 { 48 } else { n };
            let board = rng.board(n);
            // Sound: each predecessor really moves to the board.
            for (parent, pit) in board.predecessors(rules) {
                let m = parent.legal_moves(rules);
                let m = m.get(usize::from(pit)).unwrap_or_else(|| {
                    panic!("{rules}: {parent} pit {pit} not legal (child {board})")
                });
                assert_eq!(m.captures, 0);
                assert_eq!(m.child, board);
            }
            // Complete: each non-capturing move of the board is found from its child.
            for m in board.legal_moves(rules).iter().filter(|m| m.captures == 0) {
                assert!(
                    m.child.predecessors(rules).contains(&(board, m.pit)),
                    "{rules}: {board} pit {} not found from {}",
                    m.pit,
                    m.child
                );
            }
        }
    }
}

/// The ranked generator gives exactly the indexed predecessors, in the same order, each with
/// its index: every board of levels 0..9 and random boards of every level (many with every
/// other pit full, so that un-sowing goes round more than once), under all three rule sets;
/// and restricted to a range of the level, exactly those in it (the quarters of the level, and
/// ranges that end or begin at each predecessor's index: the bounds exact).
#[test]
fn ranked_predecessors_are_the_indexed_ones() {
    let check = |rules: Rules, level: &Level, child: &Board| {
        let want: Vec<(u64, Board)> = child
            .predecessors(rules)
            .into_iter()
            .filter_map(|(p, _)| level.rank(&p).map(|q| (q, p)))
            .collect();
        let mut got = Vec::new();
        child.for_each_ranked_predecessor(rules, level, |q, p| got.push((q, p)));
        assert_eq!(got, want, "{rules}: ranked predecessors of {child}");
        let qs: Vec<u64> = want.iter().map(|&(q, _)| q).collect();
        let what = format!("{rules}: predecessors of {child}");
        common::check_parent_ranges(level, &qs, &what, |parents| {
            let mut got = Vec::new();
            child.for_each_predecessor_index_in(rules, level, parents, |q| got.push(q));
            got
        });
    };
    let mut rng = Rng(48);
    let mut laps = 0;
    for rules in Rules::ALL {
        for n in 0..=9u32 {
            let level = Level::new(n);
            for child in level.boards(0..level.size()) {
                check(rules, &level, &child);
            }
        }
        for _ in 0..60_000 {
            let n = 1 + rng.below(48) as u32;
            let level = Level::new(n);
            let child = rng.board(n);
            check(rules, &level, &child);
            laps += usize::from(
                child
                    .predecessors(rules)
                    .iter()
                    .any(|&(p, h)| p.pits()[usize::from(h)] > 11),
            );
        }
    }
    assert!(
        laps > 1000,
        "only {laps} boards with a predecessor of 12 seeds or more"
    );
}
