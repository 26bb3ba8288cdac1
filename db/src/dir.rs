//! A database directory: one values table per level, all under one rule set. Every lookup
//! checks what it reads against the table's checksum before it believes it: a plain table's
//! 4 MiB chunk the first time an entry of it is read in this process
//! ([`Table::check_entries`]), a compressed table's block each time it is decoded.
//!
//! ```text
//! awari-db/
//!   level-00.values   header + 1 byte per position of level 0
//!   level-00.depth    (with `build --depth`) plies to conversion, same index
//!   level-21.cdepth   the same depths, compressed (the default above 20 seeds); a level is
//!                     read from its `.depth` file when it has both
//!   level-01.cvalues  (after `awari-solver compress` or `build --compress`) the same values,
//!                     compressed; a level is read from its `.values` file when it has both
//!                     (with `compress --probe`, the probe form: readable only through
//!                     [`Levels::lookup`], which resolves its capture don't-cares)
//!   …                 (level 47 never exists: every capture takes at least 2 seeds)
//! ```
//!
//! A directory of raw `scores.N` files from the VU 2024 release (no headers, `awari` rules)
//! is read too, when it holds no table (`level-NN.values` or `level-NN.cvalues`).

use std::path::{Path, PathBuf};

use crate::board::{Board, MAX_SEEDS};
use crate::error::TableError;
use crate::files::present;
use crate::index::Level;
use crate::moves::{Move, Outcome};
use crate::rules::Rules;
use crate::table::{Content, Expect, Table};

/// The file of level `seeds` in `dir`.
pub fn level_path(dir: &Path, seeds: u32) -> PathBuf {
    dir.join(format!("level-{seeds:02}.values"))
}

/// The compressed values file of level `seeds` in `dir`.
pub fn compressed_path(dir: &Path, seeds: u32) -> PathBuf {
    dir.join(format!("level-{seeds:02}.cvalues"))
}

/// The depth-to-conversion file of level `seeds` in `dir`.
pub fn depth_path(dir: &Path, seeds: u32) -> PathBuf {
    dir.join(format!("level-{seeds:02}.depth"))
}

/// The compressed depth-to-conversion file of level `seeds` in `dir`.
pub fn compressed_depth_path(dir: &Path, seeds: u32) -> PathBuf {
    dir.join(format!("level-{seeds:02}.cdepth"))
}

/// The raw VU file of level `seeds` in `dir`.
pub fn raw_path(dir: &Path, seeds: u32) -> PathBuf {
    dir.join(format!("scores.{seeds}"))
}

/// Whether level `seeds` can exist (47 cannot: every capture takes at least two seeds).
pub fn level_exists(seeds: u32) -> bool {
    seeds <= MAX_SEEDS && seeds != 47
}

/// Errors of a database directory.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// A table could not be opened.
    #[error(transparent)]
    Table(#[from] TableError),
    /// A level that a lookup needs has not been built.
    #[error("level {seeds} is missing from {}: run awari-solver build --db {} --max-stones {seeds}", dir.display(), dir.display())]
    MissingLevel {
        /// The directory.
        dir: PathBuf,
        /// The missing level.
        seeds: u32,
    },
    /// A level that a depth lookup needs has no depth table.
    #[error("level {seeds} of {} has no depth table: add one with awari-solver depth --db {} --stones {seeds}", dir.display(), dir.display())]
    MissingDepth {
        /// The directory.
        dir: PathBuf,
        /// The level.
        seeds: u32,
    },
    /// Tables of different rule sets in one directory, or a rule set other than the one asked for.
    #[error("{} holds {got} tables, expected {expected} (one rule set per database directory)", dir.display())]
    RulesMismatch {
        /// The directory.
        dir: PathBuf,
        /// The rule set asked for.
        expected: Rules,
        /// The rule set found.
        got: Rules,
    },
    /// Not a directory.
    #[error("{}: not a database directory ({reason})", dir.display())]
    NotADirectory {
        /// The path given.
        dir: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Tables that contradict each other at a board: each may pass its own checks, but
    /// together they are not the game's values (a damaged entry).
    #[error("the tables of {} are inconsistent at board {board} (level {}{}): {what}; run awari-solver verify --db {}", dir.display(), board.seeds(), index.map_or(String::new(), |i| format!(", entry {i}")), dir.display())]
    Inconsistent {
        /// The directory.
        dir: PathBuf,
        /// The board.
        board: Board,
        /// Its index in its level, if it has one.
        index: Option<u64>,
        /// What does not agree.
        what: String,
    },
}

/// `v`, read from entry `index` of `table`, if it is a value of the table's level (−n..n for
/// n seeds); else the error that names the file and the entry (a damaged table).
#[inline]
fn in_range(table: &Table, index: u64, v: i8) -> Result<i8, TableError> {
    if u32::from(v.unsigned_abs()) <= table.header().seeds {
        Ok(v)
    } else {
        Err(out_of_range(table, index, v))
    }
}

#[cold]
fn out_of_range(table: &Table, index: u64, v: i8) -> TableError {
    TableError::BadValue {
        path: table.path().to_path_buf(),
        index,
        value: v,
        seeds: table.header().seeds,
    }
}

/// The open levels of a database directory.
#[derive(Debug)]
pub struct Levels {
    dir: PathBuf,
    rules: Rules,
    raw: bool,
    tables: Vec<Option<Table>>,
    depths: Vec<Option<Table>>,
}

impl Levels {
    /// An empty set of levels for `dir` (used by the builder before anything is written).
    pub fn empty(dir: &Path, rules: Rules) -> Levels {
        Levels {
            dir: dir.to_path_buf(),
            rules,
            raw: false,
            tables: (0..=MAX_SEEDS).map(|_| None).collect(),
            depths: (0..=MAX_SEEDS).map(|_| None).collect(),
        }
    }

    /// Open every level present in `dir`. With `rules` given, every table must be of that rule
    /// set; without, the first table found decides (raw VU files are `awari`). A directory
    /// with no tables opens as empty with `rules` (default `awari`).
    ///
    /// A level is absent only where no file of its names exists: a dangling symlink, a
    /// symlink loop or a path that is not a regular file is an error, never a missing level.
    pub fn open(dir: &Path, rules: Option<Rules>) -> Result<Levels, DbError> {
        if !dir.is_dir() {
            return Err(DbError::NotADirectory {
                dir: dir.to_path_buf(),
                reason: match std::fs::metadata(dir) {
                    Ok(m) if m.is_file() => "it is a file".into(),
                    Ok(_) => "it is not a directory".into(),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        "it does not exist".into()
                    }
                    Err(e) => e.to_string(),
                },
            });
        }
        let mut levels = Levels::empty(dir, rules.unwrap_or_default());
        let mut decided = rules.is_some();
        for seeds in (0..=MAX_SEEDS).filter(|&s| level_exists(s)) {
            let mut path = level_path(dir, seeds);
            if !present(&path)? {
                path = compressed_path(dir, seeds);
                if !present(&path)? {
                    continue;
                }
            }
            let table = Table::open(
                &path,
                Expect {
                    rules: None,
                    seeds: Some(seeds),
                    content: Some(Content::Values),
                },
            )?;
            let got = table.header().rules;
            if !decided {
                levels.rules = got;
                decided = true;
            }
            if got != levels.rules {
                return Err(DbError::RulesMismatch {
                    dir: dir.to_path_buf(),
                    expected: levels.rules,
                    got,
                });
            }
            levels.tables[seeds as usize] = Some(table);
            levels.open_depth(seeds)?;
        }
        if levels.tables.iter().all(Option::is_none) {
            // Perhaps the published VU files.
            for seeds in (0..=MAX_SEEDS).filter(|&s| level_exists(s)) {
                let path = raw_path(dir, seeds);
                if present(&path)? {
                    levels.tables[seeds as usize] = Some(Table::open_raw(&path, seeds)?);
                    levels.raw = true;
                }
            }
            if levels.raw && levels.rules != Rules::Awari {
                return Err(DbError::RulesMismatch {
                    dir: dir.to_path_buf(),
                    expected: levels.rules,
                    got: Rules::Awari,
                });
            }
            // Depth tables written beside the published files (`awari-solver depth`).
            for seeds in levels.present().collect::<Vec<_>>() {
                levels.open_depth(seeds)?;
            }
        }
        Ok(levels)
    }

    /// Open the depth table of level `seeds`, if the directory has one: the plain one, else
    /// the compressed one.
    fn open_depth(&mut self, seeds: u32) -> Result<(), DbError> {
        let mut path = depth_path(&self.dir, seeds);
        if !present(&path)? {
            path = compressed_depth_path(&self.dir, seeds);
        }
        if present(&path)? {
            let depth = Table::open(
                &path,
                Expect {
                    rules: Some(self.rules),
                    seeds: Some(seeds),
                    content: Some(Content::Depth),
                },
            )?;
            self.depths[seeds as usize] = Some(depth);
        }
        Ok(())
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The rule set of every table here.
    pub fn rules(&self) -> Rules {
        self.rules
    }

    /// Whether the tables are raw VU `scores.N` files.
    pub fn is_raw(&self) -> bool {
        self.raw
    }

    /// The table of level `seeds`, if present.
    pub fn get(&self, seeds: u32) -> Option<&Table> {
        self.tables.get(seeds as usize).and_then(Option::as_ref)
    }

    /// The table of level `seeds`, or an error saying how to build it.
    pub fn require(&self, seeds: u32) -> Result<&Table, DbError> {
        self.get(seeds).ok_or_else(|| DbError::MissingLevel {
            dir: self.dir.clone(),
            seeds,
        })
    }

    /// The levels present, in increasing order.
    pub fn present(&self) -> impl Iterator<Item = u32> + '_ {
        (0..=MAX_SEEDS).filter(|&s| self.get(s).is_some())
    }

    /// Advise the kernel how every table (values and depths) will be read (see
    /// [`Table::advise`]).
    pub fn advise(&self, access: crate::Access) {
        for t in self.tables.iter().chain(&self.depths).flatten() {
            t.advise(access);
        }
    }

    /// Add (or replace) a level, e.g. one the builder just wrote.
    pub fn insert(&mut self, table: Table) {
        let s = table.header().seeds as usize;
        self.tables[s] = Some(table);
    }

    /// Add (or replace) a level's depth table.
    pub fn insert_depth(&mut self, table: Table) {
        let s = table.header().seeds as usize;
        self.depths[s] = Some(table);
    }

    /// The depth table of level `seeds`, if present.
    pub fn depth_table(&self, seeds: u32) -> Option<&Table> {
        self.depths.get(seeds as usize).and_then(Option::as_ref)
    }

    /// The depth to conversion of an indexed board, when its level has a depth table
    /// (`Ok(None)` otherwise, or for a board whose opponent row is full); a corrupt block of a
    /// compressed depth table is an error.
    pub fn depth(&self, board: &Board) -> Result<Option<u16>, DbError> {
        let seeds = board.seeds();
        if self.depth_table(seeds).is_none() {
            return Ok(None);
        };
        let Some(i) = Level::new(seeds).rank(board) else {
            return Ok(None);
        };
        let mut d = [0u16];
        self.read_depths(seeds, i, &mut d)?;
        Ok(Some(d[0]))
    }

    /// The depths of entries `start..start + out.len()` of level `seeds` into `out`, from
    /// its depth table (plain, or compressed and decoded against the level's values: see
    /// [`Table::read_depths`]).
    pub fn read_depths(&self, seeds: u32, start: u64, out: &mut [u16]) -> Result<(), DbError> {
        let table = self
            .depth_table(seeds)
            .ok_or_else(|| DbError::MissingDepth {
                dir: self.dir.clone(),
                seeds,
            })?;
        let context = table.depth_context(start..start + out.len() as u64);
        table.check_entries(start..start + out.len() as u64)?;
        let mut values = Vec::new();
        self.read_values(seeds, context, &mut values)?;
        table.read_depths(start, out, &values)?;
        Ok(())
    }

    /// The values of entries `range` of level `seeds` into `out` (replacing its contents):
    /// read in order from a plain or self-contained table; resolved one by one (a capture
    /// search each) from one in the probe form.
    pub fn read_values(
        &self,
        seeds: u32,
        range: std::ops::Range<u64>,
        out: &mut Vec<i8>,
    ) -> Result<(), DbError> {
        out.clear();
        if range.is_empty() {
            return Ok(());
        }
        let table = self.require(seeds)?;
        if table.is_probe_form() {
            let level = Level::new(seeds);
            for (i, board) in range.clone().zip(level.boards(range)) {
                out.push(self.lookup(&board, i)?);
            }
        } else {
            let mut buf = Vec::new();
            let start = range.start;
            out.extend(table.read(range, &mut buf)?.iter().map(|&b| b as i8));
            let n = table.header().seeds;
            if let Some(k) = out.iter().position(|v| u32::from(v.unsigned_abs()) > n) {
                return Err(out_of_range(table, start + k as u64, out[k]).into());
            }
        }
        Ok(())
    }

    /// The value of an indexed board (`None` if its opponent row is full).
    pub fn stored_value(&self, board: &Board) -> Result<Option<i8>, DbError> {
        match Level::new(board.seeds()).rank(board) {
            Some(i) => Ok(Some(self.lookup(board, i)?)),
            None => Ok(None),
        }
    }

    /// The value of an indexed board whose index in its level is `index` (the caller ranked
    /// it): one entry read, and for a level in the probe form a capture search into the
    /// lower levels (see [`crate::compressed`]). A stored value outside −n..n (n seeds) is
    /// an error naming the file and the entry ([`TableError::BadValue`]).
    #[inline]
    pub fn lookup(&self, board: &Board, index: u64) -> Result<i8, DbError> {
        // Every value is within −48..48, below the bound: `None` cannot come back.
        self.lookup_below(board, index, i8::MAX)?
            .ok_or_else(|| DbError::Inconsistent {
                dir: self.dir.clone(),
                board: *board,
                index: Some(index),
                what: "its value is not below 127".into(),
            })
    }

    /// The value of an indexed board if it is below `bound`, else `None`: the capture search
    /// of a probe-form entry with a bound (the moves that cannot change the answer are not
    /// searched).
    ///
    /// A probe-form entry stores at most its value, so a stored value at or above `bound`
    /// answers at once. Otherwise each capturing move matters only if it beats the best so far,
    /// `best`, that is if its child's value is below `captures − best`: the child is asked with
    /// that bound, and so on down the levels.
    fn lookup_below(&self, board: &Board, index: u64, bound: i8) -> Result<Option<i8>, DbError> {
        let table = self.require(board.seeds())?;
        if !table.is_probe_form() {
            table.check_entries(index..index + 1)?;
            let v = in_range(table, index, table.value(index)?)?;
            return Ok((v < bound).then_some(v));
        }
        let moves = match board.outcome(self.rules) {
            Outcome::Terminal(v) => return Ok((v < bound).then_some(v)),
            Outcome::Moves(moves) => moves,
        };
        // The capturing moves' children, their index records loading while this entry's
        // segment is decoded (the misses overlap).
        let mut children = [0u64; 6];
        for (m, slot) in moves.iter().filter(|m| m.captures > 0).zip(&mut children) {
            let child = &m.child;
            *slot = Level::new(child.seeds())
                .rank(child)
                .expect("the child of a move has an empty pit in its opponent row");
            if let Ok(t) = self.require(child.seeds()) {
                t.prefetch_value(*slot);
            }
        }
        let mut best = in_range(table, index, table.stored(index)?)?;
        if best >= bound {
            return Ok(None);
        }
        for (m, &index) in moves.iter().filter(|m| m.captures > 0).zip(&children) {
            let child = &m.child;
            // captures ≤ 48 and best ≥ −48: no overflow.
            let captures = m.captures as i8;
            if let Some(v) = self.lookup_below(child, index, captures - best)? {
                best = captures - v;
                if best >= bound {
                    return Ok(None);
                }
            }
        }
        Ok(Some(best))
    }

    /// The best over the capturing moves of `captures − value(child)` (`None`: no capture).
    fn best_capture(&self, moves: &crate::moves::MoveList) -> Result<Option<i8>, DbError> {
        let mut best = None;
        for m in moves.iter().filter(|m| m.captures > 0) {
            best = best.max(Some(self.move_value(m)?));
        }
        Ok(best)
    }

    /// What a position of value `value` may store in the probe form instead of its value:
    /// anything up to the returned ceiling (`None`: only its value). A terminal position may
    /// store anything; one whose best capture achieves its value, anything up to that value.
    pub fn dont_care_ceiling(&self, board: &Board, value: i8) -> Result<Option<i8>, DbError> {
        match board.outcome(self.rules) {
            Outcome::Terminal(_) => Ok(Some(board.seeds() as i8)),
            Outcome::Moves(moves) => {
                Ok((self.best_capture(&moves)? == Some(value)).then_some(value))
            }
        }
    }

    /// The value of any board for the side to move. An indexed board is one lookup; a board
    /// whose opponent row is full (the start position, or one a user typed) is valued by one
    /// ply: the best over its legal moves of `captures − value(child)`.
    pub fn value(&self, board: &Board) -> Result<i8, DbError> {
        if let Some(v) = self.stored_value(board)? {
            return Ok(v);
        }
        match board.outcome(self.rules) {
            Outcome::Terminal(v) => Ok(v),
            Outcome::Moves(moves) => {
                let mut best = i8::MIN;
                for m in moves.iter() {
                    best = best.max(self.move_value(m)?);
                }
                Ok(best)
            }
        }
    }

    /// The mover's value of playing `m`: `captures − value(child)`.
    pub fn move_value(&self, m: &Move) -> Result<i8, DbError> {
        let v = self
            .stored_value(&m.child)?
            .expect("the child of a move has an empty pit in its opponent row");
        Ok(m.captures as i8 - v)
    }
}
