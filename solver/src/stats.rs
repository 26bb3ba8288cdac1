//! Value histograms of a level, as Lincke's tables count them.

use std::collections::BTreeMap;

use awari_db::{Board, DbError, Levels};
use rayon::prelude::*;

/// The histogram of values of level `n`: over its indexed boards, or, with
/// `all_configurations`, over all C(n+11, 11) boards with n seeds (the boards with a full
/// opponent row valued by one ply). Returns the number of boards and the counts per value.
pub fn histogram(
    levels: &Levels,
    n: u32,
    all_configurations: bool,
) -> Result<(u64, BTreeMap<i8, u64>), DbError> {
    let table = levels.require(n)?;
    let size = table.header().entries;
    let mut counts = (0..size.div_ceil(1 << 20))
        .into_par_iter()
        .map(|c| -> Result<[u64; 256], DbError> {
            let mut buf = Vec::new();
            let mut h = [0u64; 256];
            for &b in table.read(c << 20..((c + 1) << 20).min(size), &mut buf)? {
                h[b as usize] += 1;
            }
            Ok(h)
        })
        .try_reduce(|| [0u64; 256], |a, b| Ok(add(a, b)))?;
    if all_configurations && n >= 6 {
        // Boards whose opponent pits all hold a seed: one seed in each, plus any n−6 seeds.
        // They are enumerated with the mover's row outermost, pit 5 slowest: every child of
        // such a board (after any move) has that row, as sown, for its opponent row, the
        // most significant pits of the index. So consecutive boards look up neighbouring
        // entries of each level, and each thread sweeps the levels roughly in order instead
        // of at random (which thrashes once the levels outgrow the page cache).
        let m = n - 6;
        let extra = (0..=m)
            .flat_map(|p5| (0..=m - p5).map(move |p4| (p5, p4)))
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|(p5, p4)| -> Result<[u64; 256], DbError> {
                let mut h = [0u64; 256];
                let mut pits = [0u8; 12];
                pits[5] = p5 as u8;
                pits[4] = p4 as u8;
                let mut err = None;
                each_board(&mut pits, &ORDER, m - p5 - p4, &mut |mut b| {
                    if err.is_some() {
                        return;
                    }
                    for p in &mut b[6..] {
                        *p += 1;
                    }
                    match levels.value(&Board::from_pits(b)) {
                        Ok(v) => h[v as u8 as usize] += 1,
                        Err(e) => err = Some(e),
                    }
                });
                match err {
                    Some(e) => Err(e),
                    None => Ok(h),
                }
            })
            .try_reduce(|| [0u64; 256], |a, b| Ok(add(a, b)))?;
        counts = add(counts, extra);
    }
    let mut map = BTreeMap::new();
    let mut total = 0;
    for (b, &c) in counts.iter().enumerate() {
        if c > 0 {
            map.insert(b as u8 as i8, c);
            total += c;
        }
    }
    Ok((total, map))
}

fn add(mut a: [u64; 256], b: [u64; 256]) -> [u64; 256] {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
    a
}

/// The pits `each_board` fills below pits 5 and 4, outermost first.
const ORDER: [usize; 10] = [3, 2, 1, 0, 11, 10, 9, 8, 7, 6];

/// Call `f` for every filling of the pits in `order` (outermost first; the last takes what is
/// left) with exactly `left` seeds, the other pits as given.
fn each_board(pits: &mut [u8; 12], order: &[usize], left: u32, f: &mut impl FnMut([u8; 12])) {
    if let [last] = order {
        pits[*last] = left as u8;
        f(*pits);
        return;
    }
    for v in 0..=left {
        pits[order[0]] = v as u8;
        each_board(pits, &order[1..], left - v, f);
    }
}

/// The histogram as the JSON of DESIGN §5: `{"stones":N,"positions":P,"histogram":{"-2":c,…}}`.
pub fn to_json(n: u32, positions: u64, hist: &BTreeMap<i8, u64>) -> serde_json::Value {
    let mut h = serde_json::Map::new();
    for (v, c) in hist {
        h.insert(v.to_string(), (*c).into());
    }
    serde_json::json!({"stones": n, "positions": positions, "histogram": h})
}
