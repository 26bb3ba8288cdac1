//! The level index against the Romein & Bal reference numbering.

use crate::common;

use awari_db::SplitMix64 as Rng;
use awari_db::{all_boards, binomial, level_size, successor, Board, Level};
use common::pits_of;

#[test]
fn reference_numbering() {
    let text = include_str!("../data/goedel.jsonl");
    let mut n = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let board = Board::from_pits(pits_of(&v["board"]));
        let seeds = v["seeds"].as_u64().unwrap() as u32;
        let index = v["index"].as_u64().unwrap();
        assert_eq!(board.seeds(), seeds);
        let level = Level::new(seeds);
        assert_eq!(level.rank(&board), Some(index), "rank of {board}");
        assert_eq!(
            level.unrank(index),
            board,
            "unrank {index} in level {seeds}"
        );
        n += 1;
    }
    assert_eq!(n, 384);
}

#[test]
fn level_sizes_and_totals() {
    let mut total = 0u64;
    for n in 0..=48u32 {
        let want = binomial(u64::from(n) + 11, 11) - binomial(u64::from(n) + 5, 11);
        assert_eq!(level_size(n), want, "level {n}");
        assert_eq!(Level::new(n).size(), want);
        assert_eq!(all_boards(n), binomial(u64::from(n) + 11, 11));
        if n != 47 {
            total += want;
        }
    }
    assert_eq!(total, 889_063_398_405);
    assert_eq!(level_size(48), 203_648_015_935);
    assert_eq!(level_size(12), 1_339_702);
    assert_eq!((0..=24).map(level_size).sum::<u64>(), 1_165_184_475);
    assert_eq!((0..=36).map(level_size).sum::<u64>(), 58_610_417_580);
}

#[test]
fn exhaustive_round_trips_levels_0_to_10() {
    for n in 0..=10u32 {
        let level = Level::new(n);
        let mut count = 0u64;
        let mut prev: Option<[u8; 12]> = None;
        for (i, board) in level.boards(0..level.size()).enumerate() {
            let i = i as u64;
            assert_eq!(board.seeds(), n);
            assert!(!board.opponent_row_full());
            assert_eq!(level.rank(&board), Some(i), "{board}");
            assert_eq!(level.unrank(i), board);
            // Strictly increasing in the order (pit 11, ..., pit 0).
            let key = {
                let mut k = board.pits();
                k.reverse();
                k
            };
            if let Some(p) = prev {
                assert!(p < key);
            }
            prev = Some(key);
            count += 1;
        }
        assert_eq!(count, level.size(), "level {n}");
        // Every board with n seeds and a full opponent row is unindexed, and these are
        // exactly the ones the level leaves out.
        let full = all_boards(n) - level.size();
        let mut seen_full = 0;
        let mut pits = [0u8; 12];
        common::for_all_boards(&mut pits, 0, n, &mut |b| {
            if b.opponent_row_full() {
                assert_eq!(level.rank(&b), None);
                seen_full += 1;
            }
        });
        assert_eq!(seen_full, full);
    }
}

#[test]
fn random_ranks_in_large_levels() {
    let mut rng = Rng(7);
    for _ in 0..20_000 {
        let n = rng.below(49) as u32;
        let board = rng.board(n);
        let level = Level::new(n);
        match level.rank(&board) {
            Some(i) => {
                assert!(i < level.size());
                assert_eq!(level.unrank(i), board);
                // Iteration from i yields the same board, then its successor.
                let mut it = level.boards(i..level.size());
                assert_eq!(it.next(), Some(board));
                if i + 1 < level.size() {
                    let next = it.next().unwrap();
                    assert_eq!(level.rank(&next), Some(i + 1));
                    assert_eq!(successor(&board), Some(next));
                }
            }
            None => assert!(board.opponent_row_full()),
        }
    }
    // Last boards of each level.
    for n in 1..=48 {
        let level = Level::new(n);
        let last = level.unrank(level.size() - 1);
        assert_eq!(successor(&last), None);
        assert_eq!(last.pits()[11], n as u8);
    }
}

/// `boards` steps through long runs of every level in index order: each board ranks one
/// above the last (the step that moves a seed from pit 0 to pit 1, and the general one).
#[test]
fn boards_in_order_across_large_levels() {
    let mut rng = Rng(8);
    for _ in 0..400 {
        let n = 1 + rng.below(48) as u32;
        let level = Level::new(n);
        let start = rng.below(level.size());
        let end = (start + 3000).min(level.size());
        let mut count = 0;
        for (k, board) in level.boards(start..end).enumerate() {
            assert_eq!(
                level.rank(&board),
                Some(start + k as u64),
                "level {n}: {board}"
            );
            count += 1;
        }
        assert_eq!(count, end - start);
    }
}

/// A range of boards knows how many are left at every step, exactly (`size_hint`, `len`),
/// ranges past the level's end clipped to it (mutation testing: a hint of `(0, None)`, of
/// `(1, None)`, of an upper bound 0 or 1 passed every other test).
#[test]
fn board_ranges_know_how_many_boards_are_left() {
    for (n, start, end) in [
        (0, 0, 1),
        (3, 2, 40),
        (13, 1000, 1300),
        (9, 0, 0),
        (5, 250, 900),
    ] {
        let level = Level::new(n);
        let mut boards = level.boards(start..end);
        let mut left = end.min(level.size()).saturating_sub(start) as usize;
        loop {
            assert_eq!(boards.size_hint(), (left, Some(left)), "level {n}");
            assert_eq!(boards.len(), left, "level {n}");
            if boards.next().is_none() {
                break;
            }
            left -= 1;
        }
        assert_eq!((left, boards.next()), (0, None), "level {n}");
    }
}

/// An empty range of boards is empty wherever it lies, at the level's end and past it too (it
/// unranks nothing: mutation testing found `start < end` → `<=` unranking the index past the
/// last).
#[test]
fn empty_board_ranges_are_empty_anywhere() {
    for n in [0, 1, 5, 13] {
        let level = Level::new(n);
        let size = level.size();
        for (start, end) in [
            (0, 0),
            (size / 2, size / 2),
            (size, size),
            (size + 3, size + 9),
        ] {
            assert_eq!(
                level.boards(start..end).count(),
                0,
                "level {n}: {start}..{end}"
            );
        }
        assert_eq!(level.boards(size - 1..size + 5).count(), 1, "level {n}");
    }
}
