//! Un-captures against moves: for every capture amount, a board's un-captures are exactly the
//! boards that reach it by a legal move capturing that many seeds, for all three rule sets.

use crate::common;

use std::collections::{HashMap, HashSet};

use awari_db::SplitMix64 as Rng;
use awari_db::{Board, Rules};

type Parents = HashSet<(Board, u8)>;

/// Forward: every board of at most `max` seeds, indexed or not, and each of its capturing
/// moves, keyed by (child, captures).
fn capturing_moves(rules: Rules, max: u32) -> HashMap<(Board, u8), Parents> {
    let mut forward: HashMap<(Board, u8), Parents> = HashMap::new();
    for n in 0..=max {
        let mut pits = [0u8; 12];
        common::for_all_boards(&mut pits, 0, n, &mut |parent| {
            for m in parent.legal_moves(rules).iter() {
                if m.captures > 0 {
                    assert_eq!(m.child.seeds() + u32::from(m.captures), n);
                    forward
                        .entry((m.child, m.captures))
                        .or_default()
                        .insert((parent, m.pit));
                }
            }
        });
    }
    forward
}

#[test]
fn exhaustive_up_to_12_seeds() {
    exhaustive(12, 500_000);
}

/// The slow tier's extra level (`.ci/run` runs the ignored tests): about twice the fast one.
#[test]
#[ignore = "slow tier: cargo test -- --include-ignored"]
fn exhaustive_up_to_13_seeds() {
    exhaustive(13, 1_000_000);
}

/// Every capturing move of every board of up to `max` seeds is found by un-capturing its
/// child, and nothing else is: at least `at_least` capturing moves a rule set.
fn exhaustive(max: u32, at_least: usize) {
    // Parents of up to `max` seeds: children of up to `max - 2` seeds, captures 2..=max.
    for rules in Rules::ALL {
        let mut forward = capturing_moves(rules, max);
        let total: usize = forward.values().map(HashSet::len).sum();
        assert!(total > at_least, "{rules}: only {total} capturing moves");
        for m in 0..=max - 2 {
            let mut pits = [0u8; 12];
            common::for_all_boards(&mut pits, 0, m, &mut |child| {
                for c in 2..=(max - m) as u8 {
                    let found = child.uncaptures(rules, c);
                    let set: Parents = found.iter().copied().collect();
                    assert_eq!(
                        set.len(),
                        found.len(),
                        "{rules}: duplicates for {child} c={c}"
                    );
                    let want = forward.remove(&(child, c)).unwrap_or_default();
                    assert_eq!(set, want, "{rules}: un-captures of {child} taking {c}");
                }
            });
        }
        assert!(forward.is_empty(), "{rules}: capturing moves never found");
    }
}

#[test]
fn random_boards_up_to_48() {
    let mut rng = Rng(4811);
    let mut found = 0usize;
    for rules in Rules::ALL {
        for _ in 0..200_000 / 3 {
            let n = 1 + rng.below(48) as u32;
            let board = rng.board(n);
            // Complete: every capturing move of the board is found from its child.
            for m in board.legal_moves(rules).iter().filter(|m| m.captures > 0) {
                assert!(
                    m.child
                        .uncaptures(rules, m.captures)
                        .contains(&(board, m.pit)),
                    "{rules}: {board} pit {} (captures {}) not found from {}",
                    m.pit,
                    m.captures,
                    m.child
                );
                found += 1;
            }
            // Sound: each un-capture of the board really captures into it; none takes fewer
            // than 2 seeds or makes a parent of more than 48.
            for c in 0..=18u8 {
                if c < 2 || n + u32::from(c) > 48 {
                    let none = board.uncaptures(rules, c);
                    assert!(none.is_empty(), "{rules}: {board} captures {c}: {none:?}");
                    continue;
                }
                for (parent, pit) in board.uncaptures(rules, c) {
                    let moves = parent.legal_moves(rules);
                    let m = moves.get(usize::from(pit)).unwrap_or_else(|| {
                        panic!("{rules}: {parent} pit {pit} not legal (child {board})")
                    });
                    assert_eq!((m.captures, m.child), (c, board), "{rules}: {parent}");
                    found += 1;
                }
            }
        }
    }
    assert!(found > 100_000, "only {found} captures checked");
}

/// The one rule the un-capture generator owns on its own: a capture stops below the run at a
/// pit holding neither 2 nor 3. A hand case: sowing 2 seeds from pit 5 into pits 6 and 7.
#[test]
fn capture_run_stops_at_first_pit_not_two_or_three() {
    // Parent: pit 5 holds 2; pits 6 and 7 hold 1 and 2, sown to 2 and 3: captures 5.
    let parent = Board::from_pits([1, 0, 0, 0, 0, 2, 1, 2, 0, 0, 0, 4]);
    let m = *parent.legal_moves(Rules::Awari).get(5).expect("legal");
    assert_eq!(m.captures, 5);
    assert!(m.child.uncaptures(Rules::Awari, 5).contains(&(parent, 5)));
    // The board where only pit 7's 3 is gone and pit 6 still holds its 2 is no child of that
    // parent: the capture would not have stopped above the 2.
    let not_child = Board::from_pits([2, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0, 0]);
    assert_eq!(
        not_child.rotated().pits(),
        [1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 4]
    );
    assert!(!not_child.uncaptures(Rules::Awari, 3).contains(&(parent, 5)));
    // Without the 2 below (pit 6 sown to 1), the 3 alone is captured.
    let parent1 = Board::from_pits([1, 0, 0, 0, 0, 2, 0, 2, 0, 0, 0, 4]);
    let m1 = *parent1.legal_moves(Rules::Awari).get(5).expect("legal");
    assert_eq!(m1.captures, 3);
    assert!(m1.child.uncaptures(Rules::Awari, 3).contains(&(parent1, 5)));
}

/// The example drawn in the documentation of `for_each_uncapture`.
#[test]
fn documented_example() {
    let parent = Board::from_pits([1, 7, 1, 0, 0, 0, 0, 2, 1, 0, 4, 0]);
    let m = *parent.legal_moves(Rules::Awari).get(1).expect("legal");
    assert_eq!(m.captures, 5);
    assert_eq!(
        m.child.rotated().pits(),
        [1, 0, 2, 1, 1, 1, 1, 0, 0, 0, 4, 0]
    );
    // The run could also have held 2 then 3: a second parent, one seed moved between them.
    let other = Board::from_pits([1, 7, 1, 0, 0, 0, 0, 1, 2, 0, 4, 0]);
    let found: HashSet<(Board, u8)> = m.child.uncaptures(Rules::Awari, 5).into_iter().collect();
    assert_eq!(found, HashSet::from([(parent, 1), (other, 1)]));
}

/// The ranked generator gives exactly the indexed un-captures, in the same order, each with
/// its index in the parents' level: every board of up to 8 seeds (7 under the rule sets other
/// than awari) and random boards of every level, every capture amount, under every rule set;
/// and restricted to a range of the level, exactly those in it.
#[test]
fn ranked_uncaptures_are_the_indexed_ones() {
    let check = |rules: Rules, child: &Board, c: u8| {
        let level = awari_db::Level::new(child.seeds() + u32::from(c));
        let want: Vec<(u64, Board)> = child
            .uncaptures(rules, c)
            .into_iter()
            .filter_map(|(p, _)| level.rank(&p).map(|q| (q, p)))
            .collect();
        let mut got = Vec::new();
        child.for_each_ranked_uncapture(rules, c, &level, |q, p| got.push((q, p)));
        assert_eq!(got, want, "{rules}: ranked un-captures of {child}, c = {c}");
        // Restricted to a range of the level, exactly those in it.
        let qs: Vec<u64> = want.iter().map(|&(q, _)| q).collect();
        let what = format!("{rules}: un-captures of {child}, c = {c},");
        common::check_parent_ranges(&level, &qs, &what, |parents| {
            let mut got = Vec::new();
            child.for_each_uncapture_index_in(rules, c, &level, parents, |q| got.push(q));
            got
        });
        want.len()
    };
    let mut rng = Rng(18);
    let mut found = 0;
    for rules in Rules::ALL {
        let top = if rules == Rules::Awari { 8 } else { 7 };
        for n in 0..=top {
            let mut pits = [0u8; 12];
            common::for_all_boards(&mut pits, 0, n, &mut |child| {
                for c in 2..=(48 - n).min(18) as u8 {
                    found += check(rules, &child, c);
                }
            });
        }
        for _ in 0..30_000 {
            let n = rng.below(47) as u32;
            let child = rng.board(n);
            for c in 2..=(48 - n).min(18) as u8 {
                found += check(rules, &child, c);
            }
        }
    }
    assert!(found > 100_000, "only {found} un-captures compared");
}
