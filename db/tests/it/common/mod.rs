//! Helpers shared by the integration tests (included with `mod common;`).
#![allow(dead_code)]

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
