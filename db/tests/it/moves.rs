//! Move generation against OpenSpiel's `oware` (abapa) and hand-made cases for every rule.

use crate::common;

use awari_db::{Board, Level, Outcome, QuietMoves, Rules};
use common::pits_of;

fn b(p: [u8; 12]) -> Board {
    Board::from_pits(p)
}

#[test]
fn openspiel_vectors_abapa() {
    let text = include_str!("../data/abapa_openspiel.jsonl");
    let mut checked = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let board = b(pits_of(&v["board"]));
        let want: Vec<(u8, u8, Board)> = v["moves"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["pit"].as_u64().unwrap() as u8,
                    m["captures"].as_u64().unwrap() as u8,
                    b(pits_of(&m["child"])),
                )
            })
            .collect();
        let list = board.legal_moves(Rules::Abapa);
        let got: Vec<(u8, u8, Board)> = list.iter().map(|m| (m.pit, m.captures, m.child)).collect();
        assert_eq!(got, want, "board {board}");
        // The list's own accessors agree with its moves.
        assert_eq!(list.len(), want.len(), "board {board}");
        assert_eq!(list.is_empty(), want.is_empty(), "board {board}");
        for pit in 0..6 {
            let by_pit = want.iter().find(|m| usize::from(m.0) == pit);
            assert_eq!(
                list.get(pit).map(|m| m.child),
                by_pit.map(|m| m.2),
                "board {board} pit {pit}"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 3000);
}

fn perft(board: Board, rules: Rules, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    board
        .legal_moves(rules)
        .iter()
        .map(|m| perft(m.child, rules, depth - 1))
        .sum()
}

#[test]
fn perft_abapa_from_start() {
    let want = [6u64, 36, 190, 1014, 5219, 27332, 139157];
    for (d, &w) in want.iter().enumerate() {
        assert_eq!(
            perft(Board::START, Rules::Abapa, d as u32 + 1),
            w,
            "depth {}",
            d + 1
        );
    }
}

/// The rule sets that always sow counter-clockwise (all but cross-wari).
const COUNTER_CLOCKWISE: [Rules; 3] = [Rules::Awari, Rules::Abapa, Rules::GrandSlam];

fn terminal(board: Board, rules: Rules) -> Option<i8> {
    match board.outcome(rules) {
        Outcome::Terminal(v) => Some(v),
        Outcome::Moves(_) => None,
    }
}

fn pits(board: Board, rules: Rules) -> Vec<(u8, u8)> {
    board
        .legal_moves(rules)
        .iter()
        .map(|m| (m.pit, m.captures))
        .collect()
}

#[test]
fn sowing_and_simple_capture() {
    // Pit 5 with 2 seeds: sows 6 and 7; pit 7 holds 2 -> capture; walking back, pit 6 holds 2.
    let board = b([0, 0, 0, 0, 0, 2, 1, 1, 0, 0, 0, 1]);
    let m = *board.legal_moves(Rules::Awari).get(5).unwrap();
    assert_eq!(m.captures, 4);
    // After capture (unrotated): [0,0,0,0,0,0, 0,0,0,0,0,1]; rotated for the next mover.
    assert_eq!(m.child, b([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
    // The walk back stops at the mover's row: pit 6 captured, pit 5 is ours.
    let board = b([0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 1]);
    let m = *board.legal_moves(Rules::Awari).get(4).unwrap();
    assert_eq!(m.captures, 0, "last seed lands in pit 5, our own row");
    let board = b([0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 1]);
    let m = *board.legal_moves(Rules::Awari).get(5).unwrap();
    assert_eq!(m.captures, 3);
    // A chain broken by a pit that does not hold 2 or 3.
    let board = b([0, 0, 0, 0, 0, 4, 1, 3, 1, 2, 0, 0]);
    let m = *board.legal_moves(Rules::Awari).get(5).unwrap();
    assert_eq!(
        m.captures, 5,
        "pit 9 (3) and pit 8 (2) captured, pit 7 (4) stops"
    );
}

#[test]
fn twelve_plus_seed_lap_skips_origin() {
    // 12 seeds from pit 0: one lap of 11 pits skips pit 0, the 12th lands in pit 1.
    let board = b([12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    let m = *board.legal_moves(Rules::Awari).get(0).unwrap();
    let unrotated = m.child.rotated().pits();
    assert_eq!(unrotated, [0, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]);
    assert_eq!(m.captures, 0, "the last seed is in our own row");
    // 17 seeds from pit 0 into an empty opponent row: pits 1..6 get 2, 7..11 get 1; the last
    // lands in pit 6 with 2 seeds and captures it; the walk back stops at our row.
    // (Under cross-wari an odd pit sows clockwise: tests/it/cross_wari.rs.)
    let board = b([17, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    for rules in COUNTER_CLOCKWISE {
        let m = *board.legal_moves(rules).get(0).unwrap();
        assert_eq!(m.captures, 2, "{rules}");
        assert_eq!(
            m.child.rotated().pits(),
            [0, 2, 2, 2, 2, 2, 0, 1, 1, 1, 1, 1]
        );
    }
    // 48 seeds in one pit: four laps and 4 more.
    let board = b([0, 0, 0, 48, 0, 0, 0, 0, 0, 0, 0, 0]);
    let (sown, last) = awari_db::sow_only(&board, 3).unwrap();
    assert_eq!(last, 7);
    assert_eq!(sown.pits(), [4, 4, 4, 0, 5, 5, 5, 5, 4, 4, 4, 4]);
    assert_eq!(sown.seeds(), 48);
    let m = *board.legal_moves(Rules::Awari).get(3).unwrap();
    assert_eq!(m.captures, 0);
}

#[test]
fn awari_forbids_eradication_when_another_move_exists() {
    // Pit 5 (1 seed) makes pit 6 hold 2 and captures every opponent seed (a grand slam).
    // Pit 0 is a quiet alternative.
    let board = b([1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0]);
    assert_eq!(pits(board, Rules::Awari), vec![(0, 0)]);
    // abapa: both legal, the grand slam captures nothing.
    assert_eq!(pits(board, Rules::Abapa), vec![(0, 0), (5, 0)]);
    let gs = board.legal_moves(Rules::Abapa).get(5).copied().unwrap();
    assert_eq!(
        gs.child.rotated().pits(),
        [1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0]
    );
    // grand-slam: both legal; the grand slam captures 2 and leaves the opponent no seed, so
    // the child is terminal with value -(rest) and the move is worth +n.
    assert_eq!(pits(board, Rules::GrandSlam), vec![(0, 0), (5, 2)]);
    let m = board.legal_moves(Rules::GrandSlam).get(5).copied().unwrap();
    let child_value = terminal(m.child, Rules::GrandSlam).expect("game over");
    assert_eq!(child_value, -1);
    assert_eq!(m.captures as i8 - child_value, board.seeds() as i8);
}

#[test]
fn awari_forced_eradication_takes_everything() {
    // Only move: pit 5 captures the opponent's only seeds.
    let board = b([0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0]);
    assert_eq!(terminal(board, Rules::Awari), Some(2));
    // Opponent empty and no move reaches them: every move eradicates (awari) / cannot feed.
    let board = b([3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(terminal(board, Rules::Awari), Some(4));
    assert_eq!(terminal(board, Rules::Abapa), Some(4));
    assert_eq!(terminal(board, Rules::GrandSlam), Some(4));
}

#[test]
fn empty_opponent_must_be_fed() {
    // Pit 4 (2 seeds) reaches pit 6; pit 0 (1 seed) does not.
    let board = b([1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
    for rules in COUNTER_CLOCKWISE {
        assert_eq!(pits(board, rules), vec![(4, 0)], "{rules}");
    }
    // Under cross-wari pit 0's one seed sows clockwise, into pit 11: both feed.
    assert_eq!(pits(board, Rules::CrossWari), vec![(0, 0), (4, 0)]);
    // Pit 1 (2 seeds, counter-clockwise: pits 2, 3) cannot feed, and no other pit can move.
    let board = b([0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(terminal(board, Rules::Abapa), Some(2));
    assert_eq!(
        terminal(board, Rules::CrossWari),
        Some(0),
        "the seeds go to no one"
    );
}

#[test]
fn mover_without_seeds_loses_the_rest() {
    let board = b([0, 0, 0, 0, 0, 0, 0, 3, 0, 2, 0, 0]);
    for rules in COUNTER_CLOCKWISE {
        assert_eq!(terminal(board, rules), Some(-5), "{rules}");
    }
    // Under cross-wari the seeds left go to no one.
    assert_eq!(terminal(board, Rules::CrossWari), Some(0));
    assert_eq!(terminal(Board::default(), Rules::Awari), Some(0));
}

#[test]
fn abapa_grand_slam_over_several_pits() {
    // Pit 5 with 3 seeds: pits 6, 7, 8 become 2, 2, 2: every opponent seed.
    let board = b([0, 1, 0, 0, 0, 3, 1, 1, 1, 0, 0, 0]);
    assert_eq!(pits(board, Rules::Awari), vec![(1, 0)]);
    assert_eq!(pits(board, Rules::Abapa), vec![(1, 0), (5, 0)]);
    assert_eq!(pits(board, Rules::GrandSlam), vec![(1, 0), (5, 6)]);
    // Under cross-wari pit 5's 3 seeds sow clockwise (pits 4, 3, 2): nothing to capture.
    assert_eq!(pits(board, Rules::CrossWari), vec![(1, 0), (5, 0)]);
    // Not a grand slam when an opponent seed survives (pit 11).
    let board = b([0, 1, 0, 0, 0, 3, 1, 1, 1, 0, 0, 1]);
    for rules in COUNTER_CLOCKWISE {
        assert_eq!(pits(board, rules), vec![(1, 0), (5, 6)], "{rules}");
    }
}

/// `quiet_moves` (the builder's forward pass) agrees with `outcome` on every board of up to 10
/// seeds and on random boards up to 48, in every rule set.
#[test]
fn quiet_moves_agree_with_outcome() {
    let check = |board: Board, rules: Rules| {
        let want = match board.outcome(rules) {
            Outcome::Terminal(v) => Err(v),
            Outcome::Moves(m) => Ok(m.iter().filter(|m| m.captures == 0).count() as u8),
        };
        assert_eq!(board.quiet_moves(rules), want, "{rules}: {board}");
    };
    for rules in Rules::ALL {
        for n in 0..=10 {
            let mut pits = [0u8; 12];
            common::for_all_boards(&mut pits, 0, n, &mut |board| check(board, rules));
        }
        let mut rng = awari_db::SplitMix64(99);
        for _ in 0..100_000 {
            let n = rng.below(49) as u32;
            check(rng.board(n), rules);
        }
    }
}

/// `QuietMoves`, which reuses the moves from pits 2..5 across consecutive boards, counts as
/// `quiet_moves` on every board of levels 0..12 in index order, and on runs of boards from
/// random places in every level up to 48, in every rule set.
#[test]
fn quiet_moves_in_index_order() {
    let mut rng = awari_db::SplitMix64(5);
    for rules in Rules::ALL {
        let mut runs: Vec<(u32, u64, u64)> =
            (0..=12).map(|n| (n, 0, Level::new(n).size())).collect();
        for _ in 0..300 {
            let n = 13 + rng.below(36) as u32;
            let start = rng.below(Level::new(n).size());
            runs.push((n, start, start + 2000));
        }
        for (n, start, end) in runs {
            let mut counter = QuietMoves::new();
            for board in Level::new(n).boards(start..end) {
                assert_eq!(
                    counter.count(&board, rules),
                    board.quiet_moves(rules),
                    "{rules}: {board}"
                );
            }
        }
    }
}

/// `for_each_ranked_quiet_child` gives the index of the child of every legal move that
/// captures nothing, in pit order, as `outcome` and `rank` do: every board of up to 10 seeds
/// and random boards up to 48, in every rule set (the two-bit builder's loss test).
#[test]
fn ranked_quiet_children_agree_with_outcome() {
    let check = |board: Board, rules: Rules| {
        let level = Level::new(board.seeds());
        let want: Vec<u64> = match board.outcome(rules) {
            Outcome::Terminal(_) => Vec::new(),
            Outcome::Moves(m) => m
                .iter()
                .filter(|m| m.captures == 0)
                .map(|m| level.rank(&m.child).expect("a child is indexed"))
                .collect(),
        };
        let mut got = Vec::new();
        board.for_each_ranked_quiet_child(rules, &level, |q| got.push(q));
        assert_eq!(got, want, "{rules}: {board}");
        // Skipping a pit leaves out that move's child; a failing test stops the search.
        let quiet: Vec<(u8, u64)> = board
            .legal_moves(rules)
            .iter()
            .filter(|m| m.captures == 0)
            .map(|m| (m.pit, level.rank(&m.child).unwrap()))
            .collect();
        for skip in 0..6u8 {
            let mut seen = Vec::new();
            assert!(board.all_quiet_children(rules, &level, Some(skip), |q| {
                seen.push(q);
                true
            }));
            let want: Vec<u64> = quiet.iter().filter(|m| m.0 != skip).map(|m| m.1).collect();
            assert_eq!(seen, want, "{rules}: {board}, skip {skip}");
        }
        // One at a time: each pit found, then the next from the pit after it.
        let mut from = 0;
        let mut stepped = Vec::new();
        while let Some((pit, q)) = board.next_quiet_child(rules, &level, from, None) {
            stepped.push((pit, q));
            from = pit + 1;
        }
        assert_eq!(stepped, quiet, "{rules}: {board}");
        if let Some(&(_, first)) = quiet.first() {
            let mut calls = 0;
            assert!(!board.all_quiet_children(rules, &level, None, |q| {
                calls += 1;
                q != first
            }));
            assert_eq!(calls, 1);
        }
    };
    let mut checked = 0u64;
    for rules in Rules::ALL {
        for n in 0..=10 {
            let mut pits = [0u8; 12];
            common::for_all_boards(&mut pits, 0, n, &mut |board| {
                check(board, rules);
                checked += 1;
            });
        }
        let mut rng = awari_db::SplitMix64(17);
        for _ in 0..100_000 {
            let n = rng.below(49) as u32;
            check(rng.board(n), rules);
        }
    }
    assert!(checked > 3 * 300_000, "{checked}");
}

/// `sow_only`: the board after sowing, before capture and rotation, and where the last seed
/// fell; `None` for an empty pit or one of the opponent's.
#[test]
fn sow_only_sows_the_movers_non_empty_pits_only() {
    let board = b([0, 2, 0, 0, 0, 13, 1, 1, 0, 0, 0, 4]);
    assert_eq!(awari_db::sow_only(&board, 0), None, "empty pit");
    for h in 6..12 {
        assert_eq!(awari_db::sow_only(&board, h), None, "opponent pit {h}");
    }
    let (sown, last) = awari_db::sow_only(&board, 1).unwrap();
    assert_eq!(
        (sown.pits(), last),
        ([0, 0, 1, 1, 0, 13, 1, 1, 0, 0, 0, 4], 3)
    );
    // 13 seeds from pit 5: a lap of the other 11 pits, then 2 more, skipping pit 5.
    let (sown, last) = awari_db::sow_only(&board, 5).unwrap();
    assert_eq!(
        (sown.pits(), last),
        ([1, 3, 1, 1, 1, 0, 3, 3, 1, 1, 1, 5], 7)
    );
    // Before capture: pits 7 and 6 hold 3 each, which the move then captures.
    let m = *board.legal_moves(Rules::Awari).get(5).unwrap();
    assert_eq!(m.captures, 6);
}
