//! `compare`: two database directories, ours or raw VU `scores.N` files in any mix, level by
//! level: equal, or how many entries differ and the first few of them.
//!
//! Each level is streamed in index order (told to the kernel: read far ahead) and compared in
//! chunks on every core; nothing is looked up at random, so it runs at the speed the disk or
//! the page cache delivers the two tables.

use awari_db::{level_exists, Access, Board, DbError, Level, Levels, Table};
use rayon::prelude::*;

use crate::progress::Progress;

/// Bytes compared per parallel work item ([`crate::grain::COMPARE_TASK`]).
const CHUNK: usize = crate::grain::COMPARE_TASK as usize;
/// Bytes per window: the next one is read ahead while this one is compared.
const WINDOW: usize = 1 << 28;

/// One entry that differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// Its index in the level.
    pub index: u64,
    /// Its board.
    pub board: Board,
    /// The value in the first directory, and in the second.
    pub values: (i8, i8),
}

/// How one level compares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LevelComparison {
    /// Every entry is the same.
    Equal,
    /// `count` entries differ; the first ones (in index order) are given.
    Differ {
        /// How many entries differ.
        count: u64,
        /// The first of them.
        first: Vec<Difference>,
    },
    /// The level is in one directory only (`true`: in the first).
    OnlyIn(bool),
}

/// The comparison of one level, for the report.
#[derive(Clone, Debug)]
pub struct LevelReport {
    /// The level.
    pub level: u32,
    /// Its positions.
    pub positions: u64,
    /// The outcome.
    pub outcome: LevelComparison,
    /// Seconds it took.
    pub seconds: f64,
}

/// Whether `a` and `b` hold the same rule set, where both say (a raw VU directory says
/// nothing: its files have no header).
pub fn check_rules(a: &Levels, b: &Levels) -> Result<(), DbError> {
    if !a.is_raw() && !b.is_raw() && a.rules() != b.rules() {
        return Err(DbError::RulesMismatch {
            dir: b.dir().to_path_buf(),
            expected: a.rules(),
            got: b.rules(),
        });
    }
    Ok(())
}

/// Compare level `n` of the two tables, keeping the first `keep` differences.
pub fn compare_tables(
    n: u32,
    a: &Table,
    b: &Table,
    keep: usize,
    progress: &dyn Progress,
) -> Result<LevelComparison, awari_db::TableError> {
    let size = a.header().entries;
    debug_assert_eq!(
        size,
        b.header().entries,
        "both tables are checked to hold the level"
    );
    for t in [a, b] {
        t.advise(Access::Sequential);
    }
    let level = Level::new(n);
    let mut count = 0u64;
    let mut first: Vec<Difference> = Vec::new();
    let (mut xbuf, mut ybuf) = (Vec::new(), Vec::new());
    for start in (0..size as usize).step_by(WINDOW) {
        let end = (start + WINDOW).min(size as usize);
        let ahead = end as u64..(end + WINDOW).min(size as usize) as u64;
        a.prefetch(ahead.clone());
        b.prefetch(ahead);
        let window = start as u64..end as u64;
        let x = a.read(window.clone(), &mut xbuf)?;
        let y = b.read(window, &mut ybuf)?;
        let found: Vec<(u64, Vec<u64>)> = x
            .par_chunks(CHUNK)
            .zip(y.par_chunks(CHUNK))
            .enumerate()
            .map(|(k, (p, q))| {
                let base = (start + k * CHUNK) as u64;
                let mut c = 0;
                let mut at = Vec::new();
                if p != q {
                    for (j, (u, v)) in p.iter().zip(q).enumerate() {
                        if u != v {
                            c += 1;
                            if at.len() < keep {
                                at.push(base + j as u64);
                            }
                        }
                    }
                }
                progress.advance(p.len() as u64);
                (c, at)
            })
            .collect();
        for (c, at) in found {
            count += c;
            for i in at {
                if first.len() < keep {
                    let k = i as usize - start;
                    first.push(Difference {
                        index: i,
                        board: level.unrank(i),
                        values: (x[k] as i8, y[k] as i8),
                    });
                }
            }
        }
    }
    for t in [a, b] {
        t.advise(Access::Normal);
    }
    Ok(if count == 0 {
        LevelComparison::Equal
    } else {
        LevelComparison::Differ { count, first }
    })
}

/// Compare the levels `stones` (empty: every level in either directory) of `a` and `b`,
/// calling `on_level` with each level's report as it is done.
pub fn compare(
    a: &Levels,
    b: &Levels,
    stones: &[u32],
    keep: usize,
    progress: &dyn Progress,
    mut on_level: impl FnMut(&LevelReport),
) -> Result<Vec<LevelReport>, DbError> {
    check_rules(a, b)?;
    let levels: Vec<u32> = if stones.is_empty() {
        (0..=48)
            .filter(|&n| level_exists(n) && (a.get(n).is_some() || b.get(n).is_some()))
            .collect()
    } else {
        stones.to_vec()
    };
    let mut out = Vec::new();
    for n in levels {
        let t = std::time::Instant::now();
        let outcome = match (a.get(n), b.get(n)) {
            (Some(x), Some(y)) => {
                progress.level(n, x.header().entries);
                progress.phase("compare", x.header().entries);
                compare_tables(n, x, y, keep, progress)?
            }
            (Some(_), None) => LevelComparison::OnlyIn(true),
            (None, Some(_)) => LevelComparison::OnlyIn(false),
            (None, None) => {
                return Err(DbError::MissingLevel {
                    dir: a.dir().to_path_buf(),
                    seeds: n,
                })
            }
        };
        let r = LevelReport {
            level: n,
            positions: awari_db::level_size(n),
            outcome,
            seconds: t.elapsed().as_secs_f64(),
        };
        on_level(&r);
        out.push(r);
    }
    Ok(out)
}
