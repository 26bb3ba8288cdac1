//! `verify`: check every table of a database without trusting the builder.
//!
//! For each level, lowest first:
//! 1. the header (on open) and the checksum of the values (and depth) data;
//! 2. every entry recomputed from its children: `value == max over legal moves of
//!    (captures − value(child))`, or the terminal value (DESIGN §1);
//! 3. with a depth table, well-foundedness (see [`crate::depth`]): a won position has a
//!    value-optimal move that captures or leads to a smaller depth; every value-optimal
//!    non-capturing move of a lost position leads to a smaller depth; a depth-0 position that
//!    is won or lost converts at once (is terminal, or — when won — has a value-optimal capture).
//!
//! What this proves: if the move generator implements the rules, and every level passes 2 and
//! 3 (lower levels first), then every stored value is the game value (with endless play worth
//! 0). Step 2 alone does not: a set of positions on a cycle can be assigned a wrong value that
//! is locally consistent; step 3 rules that out by giving each side a strategy that forces the
//! stored value in finitely many plies (the winner's "depth decreases" moves; the loser cannot
//! escape, because each of its value-optimal quiet moves lowers the depth and its other moves
//! are worse by step 2). Without depth tables, `verify` reports that only step 2 was checked.
//! The move generator itself is checked by the test suite (OpenSpiel vectors, perft, hand-made
//! rule cases), not by `verify`.

use std::sync::Mutex;

use awari_db::{Board, DbError, Level, Levels, Outcome, Table, TableError};
use rayon::prelude::*;

use crate::level::Progress;

/// One entry that failed a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The level.
    pub level: u32,
    /// The entry's index.
    pub index: u64,
    /// Its board.
    pub board: Board,
    /// What failed, with the stored and recomputed figures.
    pub what: String,
}

/// The outcome of verifying one level.
#[derive(Debug)]
pub struct LevelVerdict {
    /// The level.
    pub level: u32,
    /// The checksum error, if any (then the entries were not checked).
    pub checksum: Option<TableError>,
    /// Number of entries that failed (all of them are counted).
    pub failures: u64,
    /// The first failures, in no particular order beyond "first found".
    pub examples: Vec<Mismatch>,
    /// Whether depths were checked too.
    pub depth_checked: bool,
}

impl LevelVerdict {
    /// Whether the level passed.
    pub fn passed(&self) -> bool {
        self.checksum.is_none() && self.failures == 0
    }
}

const CHUNK: u64 = 1 << 14;

/// Verify level `n` of `levels` (which must hold the levels it depends on).
pub fn verify_level(
    levels: &Levels,
    n: u32,
    keep: usize,
    progress: &dyn Progress,
) -> Result<LevelVerdict, DbError> {
    let table = levels.require(n)?;
    let depth = levels.depth_table(n);
    // Children in lower levels are looked up at random: read only the page that faults. The
    // level itself is read in order (and its quiet children near it), so it keeps read-ahead.
    levels.advise(awari_db::Access::Random);
    table.advise(awari_db::Access::Normal);
    if let Some(d) = depth {
        d.advise(awari_db::Access::Normal);
    }
    let mut verdict = LevelVerdict {
        level: n,
        checksum: None,
        failures: 0,
        examples: Vec::new(),
        depth_checked: depth.is_some(),
    };
    if let Err(e) = table.verify() {
        verdict.checksum = Some(e);
        return Ok(verdict);
    }
    if let Some(d) = depth {
        if let Err(e) = d.verify() {
            verdict.checksum = Some(e);
            return Ok(verdict);
        }
    }
    for s in 0..n {
        if awari_db::level_exists(s) {
            levels.require(s)?;
        }
    }
    let level = Level::new(n);
    let examples = Mutex::new(Vec::new());
    let rules = levels.rules();
    // The table and index of every level a child may be in: n (quiet moves), n−2, … (captures).
    let children = ChildLevels::new(levels, n)?;
    progress.phase("verify", level.size());
    let failures: u64 = (0..level.size().div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let start = c * CHUNK;
            let end = (start + CHUNK).min(level.size());
            let mut bad = 0u64;
            let mut boards = level.boards(start..end);
            let mut group = Group::default();
            for first in (start..end).step_by(GROUP) {
                group.fill(
                    &mut boards,
                    rules,
                    &children,
                    (end - first).min(GROUP as u64),
                );
                for (k, board) in group.boards.iter().enumerate() {
                    let idx = first + k as u64;
                    let stored = table.value(idx);
                    let Some(what) = check_entry(levels, &group, k, stored, depth, idx) else {
                        continue;
                    };
                    bad += 1;
                    let mut ex = examples.lock().expect("examples lock");
                    if ex.len() < keep {
                        ex.push(Mismatch {
                            level: n,
                            index: idx,
                            board: *board,
                            what,
                        });
                    }
                }
            }
            progress.advance(end - start);
            bad
        })
        .sum();
    verdict.failures = failures;
    verdict.examples = examples.into_inner().expect("examples lock");
    verdict.examples.sort_by_key(|m| m.index);
    Ok(verdict)
}

/// Positions checked together: their children are ranked first and their values read
/// together, so that the random reads into the tables are in flight at once.
const GROUP: usize = 32;

/// For each seed count s ≤ n that a child of a level-n position may have: the level and its
/// values table.
struct ChildLevels<'a> {
    /// The level of the positions checked: n.
    seeds: u32,
    levels: Vec<Option<(Level, &'a Table)>>,
}

impl<'a> ChildLevels<'a> {
    fn new(levels: &'a Levels, n: u32) -> Result<Self, DbError> {
        let mut v = Vec::new();
        for s in 0..=n {
            v.push(if awari_db::level_exists(s) {
                Some((Level::new(s), levels.require(s)?))
            } else {
                None
            });
        }
        Ok(ChildLevels {
            seeds: n,
            levels: v,
        })
    }

    /// Where the stored value of a child of `seeds` seeds is (indexed, of a level the
    /// constructor required).
    #[inline]
    fn locate(&self, child: &Board, seeds: u32) -> (&'a Table, u64) {
        let (level, table) = self.levels[seeds as usize]
            .as_ref()
            .expect("a child's level exists");
        let idx = level
            .rank(child)
            .expect("the child of a move has an empty pit in its opponent row");
        (table, idx)
    }
}

/// A group of consecutive positions: their outcomes and their children's stored values.
#[derive(Default)]
struct Group {
    boards: Vec<Board>,
    outcomes: Vec<Outcome>,
    /// The children's values, position after position, in move order.
    values: Vec<i8>,
    /// Where each position's children start in `values`.
    first_child: Vec<usize>,
}

impl Group {
    /// The next `count` positions of `boards`, with their children's values.
    fn fill(
        &mut self,
        boards: &mut impl Iterator<Item = Board>,
        rules: awari_db::Rules,
        children: &ChildLevels<'_>,
        count: u64,
    ) {
        self.boards.clear();
        self.outcomes.clear();
        self.first_child.clear();
        let mut located: [(Option<&Table>, u64); GROUP * 6] = [(None, 0); GROUP * 6];
        let mut n = 0;
        for board in boards.take(count as usize) {
            let outcome = board.outcome(rules);
            self.first_child.push(n);
            if let Outcome::Moves(moves) = &outcome {
                for m in moves.iter() {
                    let seeds = children.seeds - u32::from(m.captures);
                    let (table, idx) = children.locate(&m.child, seeds);
                    // Its miss then overlaps the move generation of the rest of the group.
                    crate::state::prefetch_line(&table.data()[idx as usize]);
                    located[n] = (Some(table), idx);
                    n += 1;
                }
            }
            self.boards.push(board);
            self.outcomes.push(outcome);
        }
        self.first_child.push(n);
        // Independent loads, each prefetched when located: their cache misses overlap.
        self.values.clear();
        self.values.extend(
            located[..n]
                .iter()
                .map(|&(t, idx)| t.expect("located").value(idx)),
        );
    }
}

/// Check entry `k` of `group` (its stored value `stored`; `idx` its index, for its depth);
/// `Some(description)` when it fails.
fn check_entry(
    levels: &Levels,
    group: &Group,
    k: usize,
    stored: i8,
    depth: Option<&awari_db::Table>,
    idx: u64,
) -> Option<String> {
    let d = depth.map(|t| t.entry(idx));
    match &group.outcomes[k] {
        Outcome::Terminal(t) => {
            let t = *t;
            if t != stored {
                return Some(format!("stored {stored}, recomputed {t} (terminal)"));
            }
            if let Some(d) = d {
                if stored != 0 && d != 0 {
                    return Some(format!("terminal but depth {d} (expected 0)"));
                }
            }
            None
        }
        Outcome::Moves(moves) => {
            let mut best = i8::MIN;
            let mut progress = false; // winner: a value-optimal capture or a smaller depth
            let mut stuck: Option<(u8, u16)> = None; // loser: a value-optimal quiet move that does not lower the depth
            let values = &group.values[group.first_child[k]..group.first_child[k + 1]];
            for (m, &cv) in moves.iter().zip(values) {
                let v = m.captures as i8 - cv;
                best = best.max(v);
                if v != stored {
                    continue;
                }
                let Some(d) = d else { continue };
                if m.captures > 0 {
                    progress = true;
                } else {
                    let cd = levels.depth(&m.child).expect("depth table of the level");
                    if cd < d {
                        progress = true;
                    } else if stuck.is_none() {
                        stuck = Some((m.pit, cd));
                    }
                }
            }
            if best != stored {
                return Some(format!("stored {stored}, recomputed {best}"));
            }
            let d = d?;
            if stored > 0 && !progress {
                return Some(format!(
                    "won by {stored} at depth {d}, but no value-optimal move captures or lowers the depth"
                ));
            }
            if stored < 0 {
                if let Some((pit, cd)) = stuck {
                    return Some(format!(
                        "lost by {} at depth {d}, but value-optimal pit {pit} leads to depth {cd}",
                        -stored
                    ));
                }
            }
            None
        }
    }
}
