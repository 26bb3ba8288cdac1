//! The `awari` Python package: the databases `awari-solver` builds (and the published raw
//! `scores.N` files), and the rules, from Python. A thin layer over `awari-db` and
//! `awari-probe`: every answer and every error message is the library's, as the CLI gives it.
//!
//! A board is any sequence of 12 integers (pits 0..11 counted counter-clockwise from the side
//! to move, its own row first), or a string as the CLI takes it (`"start"`, `"1 1 1 …"`).

use std::path::PathBuf;

use awari_db::{Board, DbError, Level, Rules, SplitMix64};
use awari_probe::check_playable;
use numpy::{PyArray1, PyArray2, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;

create_exception!(
    awari,
    DatabaseError,
    PyException,
    "A database cannot answer: a level is missing, a table is corrupt or of another rule set."
);

fn db_error(e: DbError) -> PyErr {
    DatabaseError::new_err(e.to_string())
}

fn value_error(message: impl Into<String>) -> PyErr {
    PyValueError::new_err(message.into())
}

/// A board from a Python object: a string as the CLI takes it, or a sequence of 12 integers.
/// Errors carry the CLI's message.
fn board_arg(obj: &Bound<'_, PyAny>) -> PyResult<Board> {
    let board = if let Ok(text) = obj.extract::<String>() {
        Board::parse(&text)
    } else {
        let iter = obj.try_iter().map_err(|_| {
            value_error(format!(
                "a board is 12 pit counts or a string such as \"start\", not {}",
                obj.get_type().name().map_or("this".into(), |n| n.to_string())
            ))
        })?;
        let mut words = Vec::with_capacity(12);
        for item in iter {
            words.push(item?.str()?.to_string());
        }
        Board::parse_words(&words)
    }
    .map_err(|e| value_error(e.to_string()))?;
    check_playable(&board).map_err(value_error)?;
    Ok(board)
}

fn rules_arg(rules: &str) -> PyResult<Rules> {
    rules.parse().map_err(|e: awari_db::ParseRulesError| value_error(e.to_string()))
}

/// A board's pits as a Python list of ints (a `Vec<u8>` would become `bytes`).
fn pits(board: &Board) -> Vec<u32> {
    board.pits().iter().map(|&p| u32::from(p)).collect()
}

/// One legal move of a position.
#[pyclass(frozen, get_all, module = "awari")]
#[derive(Clone)]
struct Move {
    /// The pit played, 0..5 (from the side to move).
    pit: u8,
    /// Seeds captured.
    captures: u8,
    /// The position after the move, from the next mover's side.
    child: Vec<u32>,
    /// The mover's value of the move, `captures − value(child)` (None without a database).
    value: Option<i8>,
    /// Whether the move achieves the position's value (False without a database).
    best: bool,
}

#[pymethods]
impl Move {
    fn __repr__(&self) -> String {
        format!(
            "Move(pit={}, captures={}, child={:?}, value={}, best={})",
            self.pit,
            self.captures,
            self.child,
            self.value.map_or("None".into(), |v| v.to_string()),
            if self.best { "True" } else { "False" }
        )
    }
}

/// A database directory: the tables `awari-solver build` writes, or the VU release's raw
/// `scores.N` files.
#[pyclass(frozen, module = "awari")]
struct Database {
    db: awari_probe::Database,
    path: PathBuf,
}

#[pymethods]
impl Database {
    /// Open the database in `path`. With `rules` ("awari", "abapa" or "grand-slam") the
    /// tables must be of that rule set (raw `scores.N` files are `awari`).
    #[new]
    #[pyo3(signature = (path, rules=None))]
    fn new(path: PathBuf, rules: Option<&str>) -> PyResult<Self> {
        let rules = rules.map(rules_arg).transpose()?;
        let db = awari_probe::Database::open(&path, rules).map_err(db_error)?;
        Ok(Database { db, path })
    }

    /// The value of `board` for the side to move: the seed difference it obtains, from the
    /// seeds on the board, with perfect play (0: a draw).
    fn value(&self, py: Python<'_>, board: &Bound<'_, PyAny>) -> PyResult<i8> {
        let board = board_arg(board)?;
        py.detach(|| self.db.value(&board)).map_err(db_error)
    }

    /// Every legal move with its value, and whether it is best.
    fn moves(&self, board: &Bound<'_, PyAny>) -> PyResult<Vec<Move>> {
        let board = board_arg(board)?;
        let moves = self.db.moves(&board).map_err(db_error)?;
        let best = moves.iter().map(|&(_, v)| v).max();
        Ok(moves
            .into_iter()
            .map(|(m, v)| Move {
                pit: m.pit,
                captures: m.captures,
                child: pits(&m.child),
                value: Some(v),
                best: Some(v) == best,
            })
            .collect())
    }

    /// The pits whose move achieves the position's value (empty at the end of the game).
    fn best_moves(&self, board: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        let board = board_arg(board)?;
        let best = self.db.best_moves(&board).map_err(db_error)?;
        Ok(best.into_iter().map(u32::from).collect())
    }

    /// A perfect-play game from `board` to its end: the same document as
    /// `awari-probe line --json` (board, value, plies, result, complete, end).
    #[pyo3(signature = (board, max_plies=2000))]
    fn line<'py>(
        &self,
        py: Python<'py>,
        board: &Bound<'py, PyAny>,
        max_plies: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let board = board_arg(board)?;
        let line = py
            .detach(|| awari_probe::perfect_line(&self.db, &board, max_plies))
            .map_err(db_error)?;
        let text = line.to_json().to_string();
        py.import("json")?.call_method1("loads", (text,))
    }

    /// The levels (seed counts) present, in increasing order.
    #[getter]
    fn levels(&self) -> Vec<u32> {
        self.db.levels().present().collect()
    }

    /// The rule set of the tables.
    #[getter]
    fn rules(&self) -> &'static str {
        self.db.rules().name()
    }

    /// The values of many boards at once: an (N, 12) array of integers in, an int8 array of
    /// N values out, computed on all cores without the GIL.
    fn values<'py>(
        &self,
        py: Python<'py>,
        boards: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<i8>>> {
        let boards = boards_arg(py, boards)?;
        let values = py.detach(|| {
            boards
                .par_iter()
                .with_min_len(1 << 12)
                .map(|b| self.db.value(b))
                .collect::<Result<Vec<i8>, DbError>>()
        });
        Ok(PyArray1::from_vec(py, values.map_err(db_error)?))
    }

    fn __repr__(&self) -> String {
        format!(
            "awari.Database({:?}, rules={:?}, levels={:?})",
            self.path.display().to_string(),
            self.db.rules().name(),
            self.levels()
        )
    }
}

/// An (N, 12) array of boards from any array-like of integers, each row checked.
fn boards_arg(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Vec<Board>> {
    let kwargs = PyDict::new(py);
    kwargs.set_item("dtype", "int64")?;
    let array = py
        .import("numpy")?
        .call_method("ascontiguousarray", (obj,), Some(&kwargs))
        .map_err(|e| value_error(format!("boards must be an (N, 12) array of integers: {e}")))?;
    let array: PyReadonlyArray2<'_, i64> = array.extract().map_err(|_| {
        value_error(format!(
            "boards must be an (N, 12) array of integers, got {} dimension(s)",
            array
                .getattr("ndim")
                .and_then(|d| d.extract::<usize>())
                .unwrap_or(0)
        ))
    })?;
    if array.shape()[1] != 12 {
        return Err(value_error(format!(
            "boards must be an (N, 12) array of integers, got {} columns",
            array.shape()[1]
        )));
    }
    let view = array.as_array();
    let mut out = Vec::with_capacity(view.nrows());
    for (r, row) in view.outer_iter().enumerate() {
        let mut p = [0u8; 12];
        let mut ok = true;
        for (slot, &x) in p.iter_mut().zip(row.iter()) {
            ok &= (0..=i64::from(awari_db::MAX_SEEDS)).contains(&x);
            *slot = x.clamp(0, 255) as u8;
        }
        let board = if ok {
            Board::new(p).map_err(|e| e.to_string())
        } else {
            // The CLI's message for the first bad pit.
            let words: Vec<String> = row.iter().map(|x| x.to_string()).collect();
            Board::parse_words(&words).map_err(|e| e.to_string())
        }
        .and_then(|b| check_playable(&b).map(|()| b))
        .map_err(|e| value_error(format!("row {r}: {e}")))?;
        out.push(board);
    }
    Ok(out)
}

/// The legal moves of `board` under `rules`, without values (no database needed).
#[pyfunction]
#[pyo3(signature = (board, rules="awari"))]
fn moves(board: &Bound<'_, PyAny>, rules: &str) -> PyResult<Vec<Move>> {
    let board = board_arg(board)?;
    let rules = rules_arg(rules)?;
    Ok(board
        .legal_moves(rules)
        .iter()
        .map(|m| Move {
            pit: m.pit,
            captures: m.captures,
            child: pits(&m.child),
            value: None,
            best: false,
        })
        .collect())
}

/// The index of `board` in its level (the Romein & Bal numbering), or None when its opponent
/// row is full (such a board is in no level).
#[pyfunction]
fn index(board: &Bound<'_, PyAny>) -> PyResult<Option<u64>> {
    let board = board_arg(board)?;
    Ok(Level::new(board.seeds()).rank(&board))
}

/// The board at `index` of level `level` (the inverse of `index`).
#[pyfunction]
fn board(level: u32, index: u64) -> PyResult<Vec<u32>> {
    check_level(level)?;
    let l = Level::new(level);
    if index >= l.size() {
        return Err(value_error(format!(
            "index {index} is past the end of level {level} ({} positions)",
            l.size()
        )));
    }
    Ok(pits(&l.unrank(index)))
}

fn check_level(level: u32) -> PyResult<()> {
    if !awari_db::level_exists(level) {
        return Err(value_error(format!(
            "there is no level {level}: levels are 0..48 seeds, and 47 never occurs"
        )));
    }
    Ok(())
}

/// `n` positions of level `seeds` drawn uniformly at random (reproducibly, from `seed`), as an
/// (n, 12) uint8 array.
#[pyfunction]
#[pyo3(signature = (seeds, n, seed=0))]
fn random_boards<'py>(
    py: Python<'py>,
    seeds: u32,
    n: usize,
    seed: u64,
) -> PyResult<Bound<'py, PyArray2<u8>>> {
    check_level(seeds)?;
    let level = Level::new(seeds);
    let mut rng = SplitMix64(seed);
    let rows: Vec<Vec<u8>> = (0..n)
        .map(|_| level.unrank(rng.below(level.size())).pits().to_vec())
        .collect();
    if rows.is_empty() {
        return Ok(PyArray2::zeros(py, [0, 12], false));
    }
    PyArray2::from_vec2(py, &rows).map_err(|e| value_error(e.to_string()))
}

/// Perfect-play Awari (Oware): the solved game's databases and rules.
#[pymodule]
fn awari(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Database>()?;
    m.add_class::<Move>()?;
    m.add("DatabaseError", m.py().get_type::<DatabaseError>())?;
    m.add_function(wrap_pyfunction!(moves, m)?)?;
    m.add_function(wrap_pyfunction!(index, m)?)?;
    m.add_function(wrap_pyfunction!(board, m)?)?;
    m.add_function(wrap_pyfunction!(random_boards, m)?)?;
    Ok(())
}
