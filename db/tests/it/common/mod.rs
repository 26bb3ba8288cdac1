//! Helpers shared by the integration tests (included with `mod common;`).
#![allow(dead_code)]

pub mod temp;

pub use temp::temp_created;

pub fn pits_of(v: &serde_json::Value) -> [u8; 12] {
    let a = v.as_array().expect("array");
    assert_eq!(a.len(), 12);
    let mut p = [0u8; 12];
    for (i, x) in a.iter().enumerate() {
        p[i] = x.as_u64().expect("number") as u8;
    }
    p
}

/// Call `f` on every board with `left` seeds spread over pits `i..12` (pits before `i` as given).
pub fn for_all_boards(
    pits: &mut [u8; 12],
    i: usize,
    left: u32,
    f: &mut impl FnMut(awari_db::Board),
) {
    if i == 11 {
        pits[11] = left as u8;
        f(awari_db::Board::from_pits(*pits));
        return;
    }
    for v in 0..=left {
        pits[i] = v as u8;
        for_all_boards(pits, i + 1, left - v, f);
    }
}

/// The index ranges of `level` a bucket pass may meet, around the indices `found` of a child's
/// parents: the level's quarters, and for each index the ranges that end or begin at it (the
/// bounds exact: one in, one out). With `in_range`, a generator's indices in the range, each
/// range is checked to give exactly the indices of `found` that lie in it, in order.
pub fn check_parent_ranges(
    level: &awari_db::Level,
    found: &[u64],
    what: &str,
    mut in_range: impl FnMut(&awari_db::ParentRange) -> Vec<u64>,
) {
    let size = level.size();
    let mut ranges: Vec<std::ops::Range<u64>> =
        (0..4).map(|k| size * k / 4..size * (k + 1) / 4).collect();
    for &q in found {
        ranges.extend([q..q + 1, 0..q, q + 1..size, q.saturating_sub(7)..q]);
    }
    for range in ranges {
        let got = in_range(&level.parent_range(range.clone()));
        let expect: Vec<u64> = found
            .iter()
            .copied()
            .filter(|q| range.contains(q))
            .collect();
        assert_eq!(got, expect, "{what} in {range:?}");
    }
}
