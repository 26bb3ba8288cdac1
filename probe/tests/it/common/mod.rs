//! Helpers shared by the probe's test files.

use awari_db::Board;
use proptest::prelude::*;
use serde_json::Value;

/// A board of up to `max` seeds, each seed in a pit drawn at random (the property tests'
/// boards: balanced rows, every level up to `max` about equally likely).
#[allow(dead_code)] // not every test file draws boards
pub fn any_board(max: u32) -> impl Strategy<Value = Board> {
    (0usize..=max as usize)
        .prop_flat_map(|seeds| prop::collection::vec(0usize..12, seeds))
        .prop_map(|pits_of_seeds| {
            let mut pits = [0u8; 12];
            for p in pits_of_seeds {
                pits[p] += 1;
            }
            Board::new(pits).unwrap()
        })
}

/// The published VU example, `1 1 1 1 1 2 4 2 3 0 0 0` (a `show --json` document): a draw
/// whose move values are −1 −1 −2 −2 −2 0, with pit 5 the only best move.
#[allow(dead_code)] // not every test file shows it
pub fn assert_vu_example(j: &Value) {
    assert_eq!(j["value"], 0);
    let values: Vec<i64> = j["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["value"].as_i64().unwrap())
        .collect();
    assert_eq!(values, [-1, -1, -2, -2, -2, 0]);
    assert_eq!(j["best"], serde_json::json!([5]));
}
