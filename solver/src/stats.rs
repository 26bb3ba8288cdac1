//! Value histograms of a level, as Lincke's tables count them.

use std::collections::BTreeMap;

use awari_db::{Board, DbError, Levels, TableError};
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
            let start = c << 20;
            for (k, &b) in table
                .read(start..(start + (1 << 20)).min(size), &mut buf)?
                .iter()
                .enumerate()
            {
                // A value outside the level is damage, never a row of the histogram.
                if u32::from((b as i8).unsigned_abs()) > n {
                    return Err(DbError::Table(TableError::BadValue {
                        path: table.path().to_path_buf(),
                        index: start + k as u64,
                        value: b as i8,
                        seeds: n,
                    }));
                }
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

/// The histogram as the JSON of `stats --json` (docs/design.md, "Command-line contracts"):
/// `{"stones":N,"positions":P,"histogram":{"-2":c,…}}`.
pub fn to_json(n: u32, positions: u64, hist: &BTreeMap<i8, u64>) -> serde_json::Value {
    let mut h = serde_json::Map::new();
    for (v, c) in hist {
        h.insert(v.to_string(), (*c).into());
    }
    serde_json::json!({"stones": n, "positions": positions, "histogram": h})
}

/// The depths to conversion of one level, counted from its depth table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DepthHistogram {
    /// Positions of the level.
    pub positions: u64,
    /// Drawn positions (depth 0).
    pub draws: u64,
    /// Won positions per depth (index: the depth).
    pub won: Vec<u64>,
    /// Lost positions per depth.
    pub lost: Vec<u64>,
    /// The first position (by index) of the largest depth: index, board, value.
    pub deepest: Option<(u64, Board, i8)>,
}

impl DepthHistogram {
    /// The largest depth (0 for a level without won or lost positions).
    pub fn max_depth(&self) -> usize {
        self.won.len().max(self.lost.len()).saturating_sub(1)
    }
}

/// The histogram of depths to conversion of level `n`, from its depth table, by the sign of
/// each position's value.
pub fn depth_histogram(levels: &Levels, n: u32) -> Result<DepthHistogram, DbError> {
    let table = levels.require(n)?;
    if levels.depth_table(n).is_none() {
        return Err(DbError::MissingDepth {
            dir: levels.dir().to_path_buf(),
            seeds: n,
        });
    }
    let size = table.header().entries;
    let merge = |mut a: DepthHistogram, b: DepthHistogram| {
        a.positions += b.positions;
        a.draws += b.draws;
        // Each part's deepest position is at its largest depth; of equal depths the first.
        let depth_of =
            |h: &DepthHistogram| h.deepest.map(|(i, _, _)| (h.max_depth(), u64::MAX - i));
        let b_deeper = depth_of(&b) > depth_of(&a);
        for (x, y) in [(&mut a.won, &b.won), (&mut a.lost, &b.lost)] {
            if x.len() < y.len() {
                x.resize(y.len(), 0);
            }
            for (p, q) in x.iter_mut().zip(y) {
                *p += q;
            }
        }
        if b_deeper {
            a.deepest = b.deepest;
        }
        a
    };
    (0..size.div_ceil(1 << 20))
        .into_par_iter()
        .map(|c| -> Result<DepthHistogram, DbError> {
            let start = c << 20;
            let mut buf = Vec::new();
            let values = table.read(start..((c + 1) << 20).min(size), &mut buf)?;
            let mut depths = vec![0u16; values.len()];
            levels.read_depths(n, start, &mut depths)?;
            let mut h = DepthHistogram {
                positions: values.len() as u64,
                ..DepthHistogram::default()
            };
            let mut best: Option<(u16, u64)> = None;
            for (k, &b) in values.iter().enumerate() {
                let v = b as i8;
                let i = start + k as u64;
                let d = depths[k];
                let side = match v.signum() {
                    0 => {
                        h.draws += 1;
                        continue;
                    }
                    1 => &mut h.won,
                    _ => &mut h.lost,
                };
                if side.len() <= usize::from(d) {
                    side.resize(usize::from(d) + 1, 0);
                }
                side[usize::from(d)] += 1;
                if best.is_none_or(|(bd, _)| d > bd) {
                    best = Some((d, i));
                }
            }
            h.deepest = best.map(|(_, i)| {
                (
                    i,
                    awari_db::Level::new(n).unrank(i),
                    values[(i - start) as usize] as i8,
                )
            });
            Ok(h)
        })
        .try_reduce(DepthHistogram::default, |a, b| Ok(merge(a, b)))
}

/// The depth histogram as one JSON document: `{"stones":N,"positions":P,"max_depth":D,
/// "draws":c,"won":[c0,c1,…],"lost":[…],"deepest":{"index":i,"board":[12],"value":v}}`,
/// `won[d]` the won positions at depth d.
pub fn depth_to_json(n: u32, h: &DepthHistogram) -> serde_json::Value {
    let deepest = h
        .deepest
        .map(|(i, b, v)| serde_json::json!({"index": i, "board": b.pits().to_vec(), "value": v}));
    serde_json::json!({
        "stones": n,
        "positions": h.positions,
        "max_depth": h.max_depth(),
        "draws": h.draws,
        "won": h.won,
        "lost": h.lost,
        "deepest": deepest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use awari_db::{level_path, write_table, Header, Rules};

    /// A stored value outside its level is an error naming the entry, not a histogram row;
    /// the same table with the value in range counts it.
    #[test]
    fn a_value_outside_the_level_is_an_error() {
        let dir = std::env::temp_dir().join(format!("awari-stats-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let size = awari_db::level_size(2) as usize;
        for (value, bad) in [(2i8, false), (127, true)] {
            let mut data = vec![0u8; size];
            data[5] = value as u8;
            write_table(level_path(&dir, 2), Header::values(Rules::Awari, 2), &data).unwrap();
            let levels = Levels::open(&dir, Some(Rules::Awari)).unwrap();
            match histogram(&levels, 2, false) {
                Ok((total, map)) => {
                    assert!(!bad);
                    assert_eq!((total, map[&2]), (size as u64, 1));
                }
                Err(e) => {
                    assert!(bad, "{e}");
                    let text = e.to_string();
                    assert!(text.contains("entry 5 holds 127, outside -2..2"), "{text}");
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
