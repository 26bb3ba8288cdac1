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

pub mod line;

pub use line::{perfect_line, Line, LineEnd, Ply};

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
    /// The six pits.
    pub pits: [PitReport; 6],
    /// The legal pits whose value equals the position's (empty without a database).
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

    /// The legal pits that achieve the position's value (empty for a terminal position).
    pub fn best_moves(&self, board: &Board) -> Result<Vec<u8>, DbError> {
        let moves = self.moves(board)?;
        let best = moves.iter().map(|&(_, v)| v).max();
        Ok(moves
            .iter()
            .filter(|&&(_, v)| Some(v) == best)
            .map(|(m, _)| m.pit)
            .collect())
    }
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
    for (i, p) in pits.iter_mut().enumerate() {
        p.pit = i as u8;
        if let Some(m) = legal.get(i) {
            p.legal = true;
            p.captures = m.captures;
            p.child = Some(m.child);
            if let Some(db) = db {
                p.value = Some(db.levels.move_value(m)?);
            }
        }
    }
    let index = Level::new(seeds).rank(board);
    // The value: one stored entry for an indexed board; otherwise the game's end, or the
    // best of the pit values just looked up (what `Levels::value` would look up again).
    let value = match (db, index, terminal) {
        (None, _, _) => None,
        (Some(db), Some(i), _) => Some(db.levels.require(seeds)?.value(i)),
        (Some(_), None, Some(t)) => Some(t),
        (Some(_), None, None) => pits.iter().filter_map(|p| p.value).max(),
    };
    let best = match (value, terminal) {
        (Some(v), None) => pits
            .iter()
            .filter(|p| p.value == Some(v))
            .map(|p| p.pit)
            .collect(),
        _ => Vec::new(),
    };
    Ok(Report {
        board: *board,
        seeds,
        index,
        terminal,
        value,
        pits,
        best,
    })
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
/// already captured (`captured` = mover's, opponent's).
pub fn score_in_words(seeds: u32, value: i8, captured: Option<(u32, u32)>) -> String {
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

/// A value in words, for the side to move ("South" at the bottom of the diagram).
pub fn value_in_words(value: i8) -> String {
    match value {
        0 => "draw".to_string(),
        v if v > 0 => format!("the side to move wins by {v}"),
        v => format!("the side to move loses by {}", -v),
    }
}

impl Report {
    /// The JSON document of DESIGN §5.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        json!({
            "board": self.board.pits(),
            "seeds": self.seeds,
            "index": self.index,
            "terminal": self.terminal.is_some(),
            "value": self.value,
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

    /// The JSON document of [`Report::to_json`] as one line of text, appended to `out`:
    /// the same text as `to_json().to_string()`, written directly (about 20× faster), for
    /// `batch --json`.
    pub fn write_json(&self, out: &mut String) {
        /// Decimal digits of `x` (no `fmt` machinery: this runs for every batch line).
        fn num(out: &mut String, x: i64) {
            if x < 0 {
                out.push('-');
            }
            let mut x = x.unsigned_abs();
            // Pits, seeds and values: one or two digits, nearly always.
            if x < 10 {
                out.push((b'0' + x as u8) as char);
                return;
            }
            if x < 100 {
                out.push((b'0' + (x / 10) as u8) as char);
                out.push((b'0' + (x % 10) as u8) as char);
                return;
            }
            let mut digits = [0u8; 20];
            let mut n = 0;
            loop {
                digits[n] = b'0' + (x % 10) as u8;
                n += 1;
                x /= 10;
                if x == 0 {
                    break;
                }
            }
            for &d in digits[..n].iter().rev() {
                out.push(d as char);
            }
        }
        fn opt(out: &mut String, x: Option<i64>) {
            match x {
                Some(x) => num(out, x),
                None => out.push_str("null"),
            }
        }
        fn list(out: &mut String, xs: impl Iterator<Item = i64>) {
            out.push('[');
            for (i, x) in xs.enumerate() {
                if i > 0 {
                    out.push(',');
                }
                num(out, x);
            }
            out.push(']');
        }
        fn bool(out: &mut String, b: bool) {
            out.push_str(if b { "true" } else { "false" });
        }
        out.push_str("{\"board\":");
        list(out, self.board.pits().iter().map(|&p| i64::from(p)));
        out.push_str(",\"seeds\":");
        num(out, i64::from(self.seeds));
        out.push_str(",\"index\":");
        opt(out, self.index.map(|i| i as i64));
        out.push_str(",\"terminal\":");
        bool(out, self.terminal.is_some());
        out.push_str(",\"value\":");
        opt(out, self.value.map(i64::from));
        out.push_str(",\"moves\":[");
        for (i, p) in self.pits.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"pit\":");
            num(out, i64::from(p.pit));
            out.push_str(",\"legal\":");
            bool(out, p.legal);
            out.push_str(",\"captures\":");
            num(out, i64::from(p.captures));
            out.push_str(",\"child\":");
            match &p.child {
                Some(c) => list(out, c.pits().iter().map(|&p| i64::from(p))),
                None => out.push_str("null"),
            }
            out.push_str(",\"value\":");
            opt(out, p.value.map(i64::from));
            out.push('}');
        }
        out.push_str("],\"best\":");
        list(out, self.best.iter().map(|&b| i64::from(b)));
        out.push('}');
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
