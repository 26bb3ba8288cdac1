//! # awari-probe
//!
//! Look up values and perfect moves in Awari databases built by `awari-solver` (or the raw
//! `scores.N` files of the VU 2024 release).
//!
//! ```no_run
//! use awari_db::Board;
//! use awari_probe::Database;
//!
//! let db = Database::open("awari-db".as_ref(), None)?;
//! let board = Board::parse("1 1 1 1 1 2 4 2 3 0 0 0")?;
//! let v = db.value(&board)?; // seed difference the mover gets with perfect play
//! let best = db.best_moves(&board)?; // pits that achieve it
//! println!("value {v}, best {best:?}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

use std::path::Path;

pub mod batch;
pub mod line;

pub use line::{perfect_line, Line, LineEnd, Ply};

#[cfg(feature = "serve")]
pub mod serve;

use awari_db::{Board, DbError, Level, Levels, Outcome, Rules};

/// An open database directory, ready for lookups.
#[derive(Debug)]
pub struct Database {
    levels: Levels,
}

/// One pit of the side to move, as the probe reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PitReport {
    /// The pit, 0..5.
    pub pit: u8,
    /// Whether playing it is legal.
    pub legal: bool,
    /// Seeds it captures (0 when illegal).
    pub captures: u8,
    /// The position after it, from the next mover's side (`None` when illegal).
    pub child: Option<Board>,
    /// The mover's value if this move is played (`captures − value(child)`), with a database.
    pub value: Option<i8>,
}

/// Everything `show` says about a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The board.
    pub board: Board,
    /// Seeds on it.
    pub seeds: u32,
    /// Its index in its level (`None` when the opponent row is full).
    pub index: Option<u64>,
    /// The value when the game is over here.
    pub terminal: Option<i8>,
    /// The value for the side to move, with a database.
    pub value: Option<i8>,
    /// Its depth to conversion: plies until a capture or the end of the game with perfect
    /// play (0 for a draw), where the level has a depth table.
    pub depth: Option<u16>,
    /// The six pits.
    pub pits: [PitReport; 6],
    /// The perfect pits (empty without a database): those whose value equals the position's,
    /// and of those, where depth tables exist, the ones that convert a win fastest or hold a
    /// loss longest (see [`perfect_pits`]).
    pub best: Vec<u8>,
}

impl Database {
    /// Open the database in `dir`. With `rules`, the tables must be of that rule set.
    ///
    /// Probes are scattered lookups, so the kernel is told so (`MADV_RANDOM`): a page-cache
    /// miss then reads one page, not the 128 KiB around it.
    pub fn open(dir: &Path, rules: Option<Rules>) -> Result<Database, DbError> {
        let levels = Levels::open(dir, rules)?;
        levels.advise(awari_db::Access::Random);
        Ok(Database { levels })
    }

    /// The rule set of the database.
    pub fn rules(&self) -> Rules {
        self.levels.rules()
    }

    /// The underlying levels.
    pub fn levels(&self) -> &Levels {
        &self.levels
    }

    /// The value of `board` for the side to move: the seed difference (mover's future
    /// captures minus the opponent's) with perfect play. A board whose opponent row is full
    /// is valued by one ply of lookups.
    pub fn value(&self, board: &Board) -> Result<i8, DbError> {
        self.levels.value(board)
    }

    /// Every legal move with its value for the mover (`captures − value(child)`).
    pub fn moves(&self, board: &Board) -> Result<Vec<(awari_db::Move, i8)>, DbError> {
        board
            .legal_moves(self.rules())
            .iter()
            .map(|m| Ok((*m, self.levels.move_value(m)?)))
            .collect()
    }

    /// The perfect moves of `board` (empty for a terminal position): the legal pits that
    /// achieve the position's value and, where its level has a depth table, of those the ones
    /// that convert fastest when winning and hold out longest when losing (see
    /// [`perfect_pits`]). Playing them, every won position reaches its predicted score.
    pub fn best_moves(&self, board: &Board) -> Result<Vec<u8>, DbError> {
        let moves = self.moves(board)?;
        let Some(best) = moves.iter().map(|&(_, v)| v).max() else {
            return Ok(Vec::new());
        };
        let pits: Vec<(u8, u8, Option<Board>, i8)> = moves
            .iter()
            .map(|(m, v)| (m.pit, m.captures, Some(m.child), *v))
            .collect();
        perfect_pits(&self.levels, board, best, &pits)
    }

    /// The depth to conversion of `board` (see [`perfect_pits`]): plies until a capture or
    /// the end of the game with perfect play, 0 for a draw; `None` where its level has no
    /// depth table. A board whose opponent row is full is given one ply: as a won position,
    /// 0 if a capture achieves its value, else 1 + the smallest depth of a value-optimal quiet
    /// child; as a lost one, 1 + the largest (0 when only captures keep its value).
    pub fn depth(&self, board: &Board) -> Result<Option<u16>, DbError> {
        let seeds = board.seeds();
        if self.levels.depth_table(seeds).is_none() {
            return Ok(None);
        }
        if Level::new(seeds).rank(board).is_some() {
            return self.levels.depth(board);
        }
        let value = self.value(board)?;
        if value == 0 {
            return Ok(Some(0));
        }
        let mut quiet: Option<u16> = None;
        let mut capture = false;
        for (m, v) in self.moves(board)? {
            if v != value {
                continue;
            }
            if m.captures > 0 {
                capture = true;
            } else {
                let d = self.levels.depth(&m.child)?.unwrap_or(0);
                quiet = Some(match quiet {
                    None => d,
                    Some(q) if value > 0 => q.min(d),
                    Some(q) => q.max(d),
                });
            }
        }
        Ok(Some(match (value > 0, capture, quiet) {
            (true, true, _) | (_, _, None) => 0,
            (_, _, Some(d)) => d.checked_add(1).ok_or_else(|| DbError::Inconsistent {
                dir: self.levels.dir().to_path_buf(),
                board: *board,
                index: None,
                what: format!("a child's depth is {d}, the largest a table can hold"),
            })?,
        }))
    }
}

/// The rank of a value-optimal move of a position worth `value` (larger is better), by depth
/// to conversion where the position's level has a depth table (`None` without one): a winner
/// prefers a capture (it converts at once), then the quiet move to the smallest depth; a loser
/// prefers the quiet move to the largest depth, and captures only when no quiet move keeps
/// its value. Draws and levels without depths rank every value-optimal move alike. A corrupt
/// block of a compressed depth table is an error.
pub fn depth_rank(
    levels: &Levels,
    value: i8,
    captures: u8,
    child: &Board,
) -> Result<Option<i32>, DbError> {
    if levels
        .depth_table(child.seeds() + u32::from(captures))
        .is_none()
    {
        return Ok(None);
    }
    Ok(Some(match (value.signum(), captures > 0) {
        (0, _) => 0,
        (1, true) => i32::MAX,
        (_, true) => -1,
        (sign, false) => {
            let d = i32::from(levels.depth(child)?.unwrap_or(0));
            if sign > 0 {
                -d
            } else {
                d
            }
        }
    }))
}

/// The perfect pits among `pits` (pit, captures, child, value; the child `None` for an
/// illegal move) of `board`, worth `value`: those whose value is `value`, and of those the
/// best by [`depth_rank`] where the board's level has a depth table.
pub fn perfect_pits(
    levels: &Levels,
    board: &Board,
    value: i8,
    pits: &[(u8, u8, Option<Board>, i8)],
) -> Result<Vec<u8>, DbError> {
    let mut optimal: Vec<(u8, i32)> = Vec::new();
    for &(pit, captures, child, v) in pits {
        let Some(child) = child.filter(|_| v == value) else {
            continue;
        };
        let rank = if levels.depth_table(board.seeds()).is_some() {
            depth_rank(levels, value, captures, &child)?.unwrap_or(0)
        } else {
            0
        };
        optimal.push((pit, rank));
    }
    let top = optimal.iter().map(|&(_, r)| r).max();
    Ok(optimal
        .iter()
        .filter(|&&(_, r)| Some(r) == top)
        .map(|&(p, _)| p)
        .collect())
}

/// Describe `board` under `rules`, with values when a database is given.
pub fn report(board: &Board, rules: Rules, db: Option<&Database>) -> Result<Report, DbError> {
    let seeds = board.seeds();
    let outcome = board.outcome(rules);
    let terminal = match outcome {
        Outcome::Terminal(v) => Some(v),
        Outcome::Moves(_) => None,
    };
    let legal = board.legal_moves(rules);
    let mut pits = [PitReport {
        pit: 0,
        legal: false,
        captures: 0,
        child: None,
        value: None,
    }; 6];
    // The children's entries are located first and then read together, so that the
    // processor has all the (random, mostly uncached) reads in flight at once.
    let mut entries: [Option<(Board, u64)>; 6] = [None; 6];
    for (i, p) in pits.iter_mut().enumerate() {
        p.pit = i as u8;
        if let Some(m) = legal.get(i) {
            p.legal = true;
            p.captures = m.captures;
            p.child = Some(m.child);
            if let Some(db) = db {
                let seeds = m.child.seeds();
                let index = Level::new(seeds)
                    .rank(&m.child)
                    .expect("the child of a move has an empty pit in its opponent row");
                db.levels.require(seeds)?.prefetch_value(index);
                entries[i] = Some((m.child, index));
            }
        }
    }
    for (p, entry) in pits.iter_mut().zip(entries) {
        if let Some((child, index)) = entry {
            p.value = Some(p.captures as i8 - db.expect("located").levels.lookup(&child, index)?);
        }
    }
    let index = Level::new(seeds).rank(board);
    // The value: one stored entry for an indexed board; otherwise the game's end, or the
    // best of the pit values just looked up (what `Levels::value` would look up again).
    let value = match (db, index, terminal) {
        (None, _, _) => None,
        (Some(db), Some(i), _) => Some(db.levels.lookup(board, i)?),
        (Some(_), None, Some(t)) => Some(t),
        (Some(_), None, None) => pits.iter().filter_map(|p| p.value).max(),
    };
    let depth = match (db, value) {
        (Some(db), Some(_)) => db.depth(board)?,
        _ => None,
    };
    let best = match (value, terminal, db) {
        (Some(v), None, Some(db)) => {
            let candidates: Vec<(u8, u8, Option<Board>, i8)> = pits
                .iter()
                .filter_map(|p| Some((p.pit, p.captures, p.child, p.value?)))
                .collect();
            perfect_pits(&db.levels, board, v, &candidates)?
        }
        _ => Vec::new(),
    };
    Ok(Report {
        board: *board,
        seeds,
        index,
        terminal,
        value,
        depth,
        pits,
        best,
    })
}

/// Seeds already captured, as `show --captured` and the server's `captured=` take them:
/// "a,b" (the side to move's, the opponent's).
pub fn parse_captured(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("'{s}': expected two counts, e.g. 10,16"))?;
    let p = |x: &str| {
        x.trim()
            .parse::<u32>()
            .map_err(|_| format!("'{x}' is not a seed count"))
    };
    let (a, b) = (p(a)?, p(b)?);
    if u64::from(a) + u64::from(b) > 48 {
        return Err(format!("{a} + {b} seeds captured: the game has 48"));
    }
    Ok((a, b))
}

/// The longest line [`Report::write_json`] can write, with room to spare: seven boards of at
/// most 36 characters, 20-digit numbers and the keys come to about 700.
const JSON_LINE_MAX: usize = 1024;

/// One JSON line being written into a fixed buffer (no capacity checks or calls per byte:
/// this runs for every `batch --json` line).
struct JsonLine {
    buf: [u8; JSON_LINE_MAX],
    len: usize,
}

impl JsonLine {
    #[inline(always)]
    fn text(&mut self, s: &[u8]) {
        self.buf[self.len..self.len + s.len()].copy_from_slice(s);
        self.len += s.len();
    }

    /// Decimal digits of `x`: one or two for pits, seeds and values, nearly always.
    #[inline(always)]
    fn num(&mut self, x: i64) {
        if x < 0 {
            self.text(b"-");
        }
        let mut x = x.unsigned_abs();
        if x < 10 {
            self.text(&[b'0' + x as u8]);
        } else if x < 100 {
            self.text(&[b'0' + (x / 10) as u8, b'0' + (x % 10) as u8]);
        } else {
            let mut digits = [0u8; 20];
            let mut n = digits.len();
            while x > 0 {
                n -= 1;
                digits[n] = b'0' + (x % 10) as u8;
                x /= 10;
            }
            self.text(&digits[n..]);
        }
    }

    #[inline(always)]
    fn opt(&mut self, x: Option<i64>) {
        match x {
            Some(x) => self.num(x),
            None => self.text(b"null"),
        }
    }

    #[inline(always)]
    fn bool(&mut self, b: bool) {
        self.text(if b { b"true" } else { b"false" });
    }

    #[inline(always)]
    fn board(&mut self, b: &Board) {
        self.text(b"[");
        for (i, &p) in b.pits().iter().enumerate() {
            if i > 0 {
                self.text(b",");
            }
            self.num(i64::from(p));
        }
        self.text(b"]");
    }
}

/// Check that a board can occur in a game: 47 seeds never can (every capture takes at least
/// two seeds from 48).
pub fn check_playable(board: &Board) -> Result<(), String> {
    if board.seeds() == 47 {
        return Err(
            "a board with 47 seeds cannot occur (every capture takes at least 2 of the 48)".into(),
        );
    }
    Ok(())
}

/// A seed count for people: whole, or with `.5` when an odd number of seeds was divided.
pub fn seeds_text(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// The final score in words: the split of the seeds left given the value, plus what each side
/// already captured (`captured` = mover's, opponent's). Under `cross-wari` the seeds left at
/// the end go to no one, so the value gives the difference of the final scores only.
pub fn score_in_words(seeds: u32, value: i8, captured: Option<(u32, u32)>, rules: Rules) -> String {
    if rules.sows_both_ways() {
        let mut s = format!(
            "South (to move) ends {} seed(s) ahead of North on the {seeds} seeds left ({} rules: \
             those left at the end go to no one)",
            signed(i32::from(value)),
            rules
        );
        if let Some((a, b)) = captured {
            let lead = i64::from(a) - i64::from(b) + i64::from(value);
            s.push_str(&format!(": final difference {}", signed(lead as i32)));
        }
        return s;
    }
    let mover = (f64::from(seeds) + f64::from(value)) / 2.0;
    let other = f64::from(seeds) - mover;
    let fmt = seeds_text;
    let mut s = format!(
        "South (to move) captures {} of the {seeds} seeds left, North {}",
        fmt(mover),
        fmt(other)
    );
    if let Some((a, b)) = captured {
        s.push_str(&format!(
            ": final {}\u{2013}{}",
            fmt(f64::from(a) + mover),
            fmt(f64::from(b) + other)
        ));
    }
    s
}

/// A signed number of seeds: "+3", "0", "−2" (ASCII minus sign).
fn signed(x: i32) -> String {
    if x > 0 {
        format!("+{x}")
    } else {
        x.to_string()
    }
}

/// A value in words, for the side to move ("South" at the bottom of the diagram).
pub fn value_in_words(value: i8) -> String {
    match value {
        0 => "draw".to_string(),
        v if v > 0 => format!("the side to move wins by {v}"),
        v => format!("the side to move loses by {}", -v),
    }
}

impl Report {
    /// The JSON document of a position, as `show --json` and `batch --json` print it
    /// (docs/design.md, "Command-line contracts").
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        json!({
            "board": self.board.pits(),
            "seeds": self.seeds,
            "index": self.index,
            "terminal": self.terminal.is_some(),
            "value": self.value,
            "depth": self.depth,
            "moves": self.pits.iter().map(|p| json!({
                "pit": p.pit,
                "legal": p.legal,
                "captures": p.captures,
                "child": p.child.map(|c| c.pits()),
                "value": p.value,
            })).collect::<Vec<_>>(),
            "best": self.best,
        })
    }

    /// The document `show --json` prints: [`Report::to_json`], plus `final` (the predicted
    /// final score of both sides) when the value is known and `captured` is given. Under
    /// `cross-wari`, where the seeds left at the end go to no one, the value fixes only the
    /// difference of the final scores: `final_difference` (mover's minus opponent's) instead.
    pub fn show_json(&self, captured: Option<(u32, u32)>, rules: Rules) -> serde_json::Value {
        let mut j = self.to_json();
        if let (Some(v), Some((a, b)), true) = (self.value, captured, rules.sows_both_ways()) {
            j["final_difference"] = serde_json::json!(i64::from(a) - i64::from(b) + i64::from(v));
        } else if let (Some(v), Some((a, b))) = (self.value, captured) {
            let seeds = f64::from(self.seeds);
            let mover = (seeds + f64::from(v)) / 2.0;
            j["final"] = serde_json::json!([
                line::json_num(f64::from(a) + mover),
                line::json_num(f64::from(b) + seeds - mover)
            ]);
        }
        j
    }

    /// The JSON document of [`Report::to_json`] as one line of text (UTF-8), appended to
    /// `out`: the same text as `to_json().to_string()`, written directly (about 20× faster),
    /// for `batch --json`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        let mut w = JsonLine {
            buf: [0; JSON_LINE_MAX],
            len: 0,
        };
        w.text(b"{\"board\":");
        w.board(&self.board);
        w.text(b",\"seeds\":");
        w.num(i64::from(self.seeds));
        w.text(b",\"index\":");
        w.opt(self.index.map(|i| i as i64));
        w.text(b",\"terminal\":");
        w.bool(self.terminal.is_some());
        w.text(b",\"value\":");
        w.opt(self.value.map(i64::from));
        w.text(b",\"depth\":");
        w.opt(self.depth.map(i64::from));
        w.text(b",\"moves\":[");
        for (i, p) in self.pits.iter().enumerate() {
            if i > 0 {
                w.text(b",");
            }
            w.text(b"{\"pit\":");
            w.num(i64::from(p.pit));
            w.text(b",\"legal\":");
            w.bool(p.legal);
            w.text(b",\"captures\":");
            w.num(i64::from(p.captures));
            w.text(b",\"child\":");
            match &p.child {
                Some(c) => w.board(c),
                None => w.text(b"null"),
            }
            w.text(b",\"value\":");
            w.opt(p.value.map(i64::from));
            w.text(b"}");
        }
        w.text(b"],\"best\":[");
        for (i, &b) in self.best.iter().enumerate() {
            if i > 0 {
                w.text(b",");
            }
            w.num(i64::from(b));
        }
        w.text(b"]}");
        out.extend_from_slice(&w.buf[..w.len]);
    }

    /// The human-readable form: diagram, facts, and one line per pit.
    pub fn to_text(&self, rules: Rules) -> String {
        let mut s = self.board.diagram();
        s.push_str(&format!("rules: {rules}\nseeds: {}\n", self.seeds));
        match self.index {
            Some(i) => s.push_str(&format!("index: {i} in level {}\n", self.seeds)),
            None => s.push_str(
                "index: none (the opponent row is full, so the board is in no level; valued by one ply)\n",
            ),
        }
        if let Some(t) = self.terminal {
            s.push_str(&format!(
                "terminal: yes, the game is over: {}\n",
                value_in_words(t)
            ));
        } else {
            s.push_str("terminal: no\n");
        }
        if let Some(v) = self.value {
            s.push_str(&format!("value: {v:+} ({})\n", value_in_words(v)));
        }
        if let Some(d) = self.depth {
            s.push_str(&format!(
                "depth: {d} ({})\n",
                match (d, self.value.unwrap_or(0).signum()) {
                    (_, 0) => "a draw: nothing to convert".to_string(),
                    (0, 1) => "a capture, or the end of the game, realises the value now".into(),
                    (0, _) => "only captures keep the value: it is realised now".into(),
                    (_, 1) => "plies until a capture realises the win, with perfect play".into(),
                    (_, _) => "plies the loss can be held before a capture realises it".into(),
                }
            ));
        }
        s.push_str("moves:\n");
        for p in &self.pits {
            if !p.legal {
                s.push_str(&format!("  pit {}: illegal\n", p.pit));
                continue;
            }
            let child = p.child.expect("legal move has a child");
            s.push_str(&format!(
                "  pit {}: captures {:>2}  child {}",
                p.pit, p.captures, child
            ));
            if let Some(v) = p.value {
                s.push_str(&format!("  value {v:+}"));
                if self.best.contains(&p.pit) {
                    s.push_str("  best");
                }
            }
            s.push('\n');
        }
        s
    }
}
