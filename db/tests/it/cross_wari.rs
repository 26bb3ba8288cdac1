//! Cross-Wari by hand: moves stepped out pit by pit, in both directions, and the game's end
//! valued 0. (Un-moves against moves, exhaustively and on random boards, run for every rule
//! set in `unmoves.rs`, `uncaptures.rs` and `properties.rs`.)

use awari_db::{Board, Outcome, Rules};

fn b(p: [u8; 12]) -> Board {
    Board::from_pits(p)
}

/// The moves of `board` under cross-wari: (pit, captures, child).
fn moves(board: Board) -> Vec<(u8, u8, [u8; 12])> {
    board
        .legal_moves(Rules::CrossWari)
        .iter()
        .map(|m| (m.pit, m.captures, m.child.pits()))
        .collect()
}

/// Clockwise, the last seed captures across two pits, walking back towards higher pits.
///
/// ```text
///   pit            0  1  2  3  4  5 |  6  7  8  9 10 11
///   board          0  3  1  0  0  0 |  1  0  0  0  1  2    pit 1: 3 seeds, odd: clockwise
///   sown           1  0  1  0  0  0 |  1  0  0  0  2  3    into 0, 11, 10; last in 10
///   captured                                    2  3    10 holds 2, then 11 holds 3: 5
///   after          1  0  1  0  0  0 |  1  0  0  0  0  0    (pit 0 is ours: the walk stops)
///   child          1  0  0  0  0  0 |  1  0  1  0  0  0    rotated to the next mover
/// ```
///
/// Pit 2 (1 seed, clockwise) drops its seed in pit 1: nothing captured.
#[test]
fn a_clockwise_capture_across_two_pits() {
    let board = b([0, 3, 1, 0, 0, 0, 1, 0, 0, 0, 1, 2]);
    assert_eq!(
        moves(board),
        vec![
            (1, 5, [1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0]),
            (2, 0, [1, 0, 0, 0, 1, 2, 0, 4, 0, 0, 0, 0]),
        ]
    );
    // Under abapa pit 1 sows counter-clockwise, into 2, 3, 4: no capture.
    let abapa = board.legal_moves(Rules::Abapa);
    assert_eq!(abapa.get(1).unwrap().captures, 0);
    // The capture's un-capture gives back the board, from pit 1.
    let child = b([1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0]);
    assert!(child.uncaptures(Rules::CrossWari, 5).contains(&(board, 1)));
    assert!(!child.uncaptures(Rules::Abapa, 5).contains(&(board, 1)));
}

/// Clockwise, 15 seeds: the first lap passes the 11 other pits and skips pit 2, the second
/// goes on from pit 1 and ends in pit 10, which holds 2; pit 11 holds 2 too.
///
/// ```text
///   pit            0  1  2  3  4  5 |  6  7  8  9 10 11
///   board          0  0 15  0  0  0 |  0  0  0  0  0  0    pit 2: 15 seeds, odd: clockwise
///   lap 1 (11)     1  1  0  1  1  1 |  1  1  1  1  1  1    1, 0, 11, 10, …, 6, 5, 4, 3
///   lap 2 (4)      2  2  0  1  1  1 |  1  1  1  1  2  2    1, 0, 11, 10 (pit 2 skipped)
///   captured                                    2  2    last in 10: 2, then 11: 2 -> 4
///   child          1  1  1  1  0  0 |  2  2  0  1  1  1    rotated; pit 2 stays empty
/// ```
///
/// With 13 seeds the second lap stops in pit 0, in the mover's row: nothing captured.
#[test]
fn a_clockwise_lap_of_twelve_or_more_skips_its_pit() {
    let board = b([0, 0, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        moves(board),
        vec![(2, 4, [1, 1, 1, 1, 0, 0, 2, 2, 0, 1, 1, 1])]
    );
    let board = b([0, 0, 13, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        moves(board),
        vec![(2, 0, [1, 1, 1, 1, 1, 1, 2, 2, 0, 1, 1, 1])]
    );
    // The un-sowing finds the 13-seed parent among the child's predecessors.
    let child = b([1, 1, 1, 1, 1, 1, 2, 2, 0, 1, 1, 1]);
    assert!(child.predecessors(Rules::CrossWari).contains(&(board, 2)));
    // 14 seeds (even) sow counter-clockwise: 3..11, 0, 1 (11), then 3, 4, 5: last in pit 5.
    let board = b([0, 0, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        moves(board),
        vec![(2, 0, [1, 1, 1, 1, 1, 1, 1, 1, 0, 2, 2, 2])]
    );
}

/// The game ends when the mover has no seeds, or cannot feed an empty opponent: the seeds
/// left go to no one, so the value is 0 (abapa gives them to the side that can move).
///
/// ```text
///   pit            0  1  2  3  4  5 |  6  7  8  9 10 11
///   no seeds       0  0  0  0  0  0 |  0  3  0  2  0  0    abapa −5, cross-wari 0
///   cannot feed    0  0  0  2  1  0 |  0  0  0  0  0  0    pit 3 (2, counter-clockwise)
///                                                          reaches 5; pit 4 (1, clockwise)
///                                                          reaches 3: abapa +3, cross-wari 0
/// ```
///
/// No legal move ever leaves the next mover without seeds (an empty row must be fed, and a
/// grand slam captures nothing), so a game ends when the mover cannot feed. Played out:
///
/// ```text
///   pit            0  1  2  3  4  5 |  6  7  8  9 10 11
///   board          1  0  0  0  0  0 |  1  0  0  0  0  1    pit 0: 1 seed, clockwise into 11
///   captured                                       2    11 holds 2: 2 captured
///   child          1  0  0  0  0  0 |  0  0  0  0  0  0    the opponent keeps pit 6's seed
///   its move       pit 0: 1 seed, clockwise into pit 11: it feeds the empty row
///   grandchild     0  0  0  0  0  1 |  0  0  0  0  0  0    pit 5 sows clockwise into 4:
///                                                          cannot feed, the game ends at 0
/// ```
///
/// The first mover captured 2 and the last seed goes to no one: 2 − 0 to the first mover.
#[test]
fn the_seeds_left_at_the_end_go_to_no_one() {
    let terminal = |board: Board, rules| match board.outcome(rules) {
        Outcome::Terminal(v) => Some(v),
        Outcome::Moves(_) => None,
    };
    let no_seeds = b([0, 0, 0, 0, 0, 0, 0, 3, 0, 2, 0, 0]);
    assert_eq!(terminal(no_seeds, Rules::Abapa), Some(-5));
    assert_eq!(terminal(no_seeds, Rules::CrossWari), Some(0));
    let cannot_feed = b([0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(terminal(cannot_feed, Rules::Abapa), Some(3));
    assert_eq!(terminal(cannot_feed, Rules::CrossWari), Some(0));
    let board = b([1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
    assert_eq!(
        moves(board),
        vec![(0, 2, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])]
    );
    let child = b([1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        moves(child),
        vec![(0, 0, [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0])]
    );
    let grandchild = b([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    assert_eq!(terminal(grandchild, Rules::CrossWari), Some(0));
    assert_eq!(
        terminal(grandchild, Rules::Abapa),
        None,
        "counter-clockwise, 5 feeds 6"
    );
    // Under abapa the first move sows counter-clockwise, into pit 1: no capture.
    assert_eq!(board.legal_moves(Rules::Abapa).get(0).unwrap().captures, 0);
}
