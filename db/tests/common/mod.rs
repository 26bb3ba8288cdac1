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
