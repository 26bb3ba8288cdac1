//! Perfect-play lines: a game from a position to its end, both sides playing value-optimal moves.

use std::collections::HashSet;

use awari_db::{Board, DbError, Outcome};

use crate::Database;

/// One ply of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ply {
    /// Whether the side to move at the line's first board plays this ply.
    pub by_first_mover: bool,
    /// The pit played (from the side to move).
    pub pit: u8,
    /// Seeds captured.
    pub captures: u8,
    /// The position after the ply, from the next mover's side.
    pub board: Board,
}

/// How a line ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineEnd {
    /// The game ended by the rules (no seeds, no move, or a forced eradication / failed feed).
    Terminal,
    /// A position repeated in a drawn position: the seeds left are divided evenly.
    Repetition,
    /// A position repeated while the value was not 0: without depth-to-conversion tables the
    /// probe cannot tell which value-optimal move makes progress, so the line stops.
    Unrealised,
    /// The ply limit was reached.
    PlyLimit,
}

/// A perfect-play line.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The first position.
    pub board: Board,
    /// Its value for its side to move.
    pub value: i8,
    /// The plies played.
    pub plies: Vec<Ply>,
    /// Seeds of the first board won by its mover and by the opponent (halves when an odd
    /// number of seeds is divided at a repetition). Meaningful when `complete`.
    pub result: [f64; 2],
    /// How the line ended.
    pub end: LineEnd,
}

impl Line {
    /// Whether the line reached the end of the game (so `result[0] − result[1] == value`).
    pub fn complete(&self) -> bool {
        matches!(self.end, LineEnd::Terminal | LineEnd::Repetition)
    }

    /// The JSON document of docs/design.md, "Command-line contracts".
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "board": self.board.pits(),
            "value": self.value,
            "plies": self.plies.iter().map(|p| serde_json::json!({
                "pit": p.pit, "captures": p.captures, "board": p.board.pits(),
            })).collect::<Vec<_>>(),
            "result": [json_num(self.result[0]), json_num(self.result[1])],
            "complete": self.complete(),
            "end": match self.end {
                LineEnd::Terminal => "terminal",
                LineEnd::Repetition => "repetition",
                LineEnd::Unrealised => "unrealised",
                LineEnd::PlyLimit => "ply-limit",
            },
        })
    }
}

/// A seed count as JSON: an integer when whole, else a half.
pub fn json_num(x: f64) -> serde_json::Value {
    if x.fract() == 0.0 {
        serde_json::Value::from(x as i64)
    } else {
        serde_json::Value::from(x)
    }
}

/// Play a perfect line from `board`, at most `max_plies` plies.
///
/// Each side plays a value-optimal move, preferring one to a position not seen since the last
/// capture. With depth-to-conversion tables (`awari-solver build --depth`), the side that wins
/// captures or lowers the depth, and the side that loses keeps the depth as long as it can:
/// every won or lost line then ends with the predicted score. Without them, the largest
/// capture is preferred. When every value-optimal move repeats a position: in a drawn position
/// the game ends by repetition (seeds divided evenly); otherwise the line stops as
/// [`LineEnd::Unrealised`] rather than claim a score it cannot show.
pub fn perfect_line(db: &Database, board: &Board, max_plies: usize) -> Result<Line, DbError> {
    let value = db.value(board)?;
    let mut plies = Vec::new();
    let mut won = [0u32; 2]; // by the first mover, by the other
    let mut side = 0usize;
    let mut current = *board;
    let mut seen: HashSet<Board> = HashSet::new();
    seen.insert(current);
    let end = loop {
        if plies.len() >= max_plies {
            break LineEnd::PlyLimit;
        }
        let moves = match current.outcome(db.rules()) {
            Outcome::Terminal(t) => {
                // The mover gets (left + t) / 2 of the seeds left; under cross-wari they go
                // to no one (t = 0).
                if !db.rules().sows_both_ways() {
                    let left = current.seeds() as i32;
                    let mover = ((left + i32::from(t)) / 2) as u32;
                    won[side] += mover;
                    won[1 - side] += left as u32 - mover;
                }
                break LineEnd::Terminal;
            }
            Outcome::Moves(m) => m,
        };
        let v = db.value(&current)?;
        let depths = db.levels().depth_table(current.seeds()).is_some();
        let levels = db.levels();
        let mut best: Option<(awari_db::Move, bool, i32)> = None;
        for m in moves.iter() {
            if db.levels().move_value(m)? != v {
                continue;
            }
            let fresh = m.captures > 0 || !seen.contains(&m.child);
            // With depth tables: the winner converts (captures) or lowers the depth as fast as
            // it can; the loser keeps the depth as long as it can and captures only when that
            // is all that keeps its value.
            let rank = if depths {
                crate::depth_rank(levels, v, m.captures, &m.child)?.unwrap_or(0)
            } else {
                i32::from(m.captures)
            };
            let better = match best {
                None => true,
                Some((_, bfresh, brank)) => (fresh, rank) > (bfresh, brank),
            };
            if better {
                best = Some((*m, fresh, rank));
            }
        }
        // A stored value that no move achieves: a damaged entry (here or in a child's level).
        let Some((m, fresh, _)) = best else {
            return Err(DbError::Inconsistent {
                dir: levels.dir().to_path_buf(),
                board: current,
                index: awari_db::Level::new(current.seeds()).rank(&current),
                what: format!("its value is {v:+}, and no move achieves it"),
            });
        };
        if !fresh {
            if v == 0 {
                let left = current.seeds() as f64 / 2.0;
                let mut r = [f64::from(won[0]), f64::from(won[1])];
                r[0] += left;
                r[1] += left;
                return Ok(Line {
                    board: *board,
                    value,
                    plies,
                    result: r,
                    end: LineEnd::Repetition,
                });
            }
            break LineEnd::Unrealised;
        }
        won[side] += u32::from(m.captures);
        if m.captures > 0 {
            seen.clear();
        }
        seen.insert(m.child);
        plies.push(Ply {
            by_first_mover: side == 0,
            pit: m.pit,
            captures: m.captures,
            board: m.child,
        });
        current = m.child;
        side = 1 - side;
    };
    Ok(Line {
        board: *board,
        value,
        plies,
        result: [f64::from(won[0]), f64::from(won[1])],
        end,
    })
}
