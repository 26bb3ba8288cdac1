//! Helpers shared by the probe's test files.

use serde_json::Value;

/// The published VU example, `1 1 1 1 1 2 4 2 3 0 0 0` (a `show --json` document): a draw
/// whose move values are −1 −1 −2 −2 −2 0, with pit 5 the only best move.
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
