//! The `awari` Python package: the databases `awari-solver` builds (and the published raw
//! `scores.N` files), and the rules, from Python. A thin layer over `awari-db` and
//! `awari-probe`: every answer and every error message is the library's, as the CLI gives it.
//!
//! A board is any sequence of 12 integers (pits 0..11 counted counter-clockwise from the side
//! to move, its own row first), or a string as the CLI takes it (`"start"`, `"1 1 1 …"`).

use std::path::PathBuf;

use awari_db::{Board, DbError, Level, Rules, SplitMix64};
use awari_probe::check_playable;
use numpy::ndarray::ArrayView2;
use numpy::{PyArray1, PyArray2, PyReadonlyArray2};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
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
                obj.get_type()
                    .name()
                    .map_or("this".into(), |n| n.to_string())
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
    rules
        .parse()
        .map_err(|e: awari_db::ParseRulesError| value_error(e.to_string()))
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

/// A database directory: the tables `awari-solver build` writes (plain or compressed), or the
/// VU release's raw `scores.N` files.
#[pyclass(frozen, module = "awari")]
struct Database {
    db: awari_probe::Database,
    path: PathBuf,
}

#[pymethods]
impl Database {
    /// Open the database in `path`. With `rules` ("awari", "abapa", "grand-slam" or "cross-wari") the
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

    /// Every legal move with its value, and whether it is best (one of `best_moves`).
    fn moves(&self, board: &Bound<'_, PyAny>) -> PyResult<Vec<Move>> {
        let board = board_arg(board)?;
        let moves = self.db.moves(&board).map_err(db_error)?;
        let best = self.db.best_moves(&board).map_err(db_error)?;
        Ok(moves
            .into_iter()
            .map(|(m, v)| Move {
                pit: m.pit,
                captures: m.captures,
                child: pits(&m.child),
                value: Some(v),
                best: best.contains(&m.pit),
            })
            .collect())
    }

    /// The perfect pits (empty at the end of the game): those whose move achieves the
    /// position's value and, where depth tables exist, of those the ones that convert a win
    /// fastest (a capture, else the smallest depth) or hold a loss longest.
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

    /// The values of many boards at once: an (N, 12) array of integers of any dtype and any
    /// strides in (read in place), an int8 array of N values out, checked and computed on
    /// all cores without the GIL.
    fn values<'py>(
        &self,
        py: Python<'py>,
        boards: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<i8>>> {
        let array = boards_array(py, boards)?;
        // One instance of the generic path per integer dtype: no converted copy of the input.
        macro_rules! by_dtype {
            ($($t:ty),*) => {
                $(
                    if let Ok(a) = array.extract::<PyReadonlyArray2<'py, $t>>() {
                        let values = self.values_of(py, a.as_array())?;
                        return Ok(PyArray1::from_vec(py, values));
                    }
                )*
            };
        }
        by_dtype!(u8, i64, i32, i16, i8, u16, u32, u64);
        let dtype: String = array.getattr("dtype")?.str()?.extract()?;
        Err(value_error(format!(
            "boards must be an (N, 12) array of integers, not of {dtype}"
        )))
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

/// The input of `values` as a NumPy array (lists and the like converted by `numpy.asarray`),
/// checked to be two-dimensional with 12 columns; its dtype and strides are left as they are.
fn boards_array<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let bad = |what: String| {
        value_error(format!(
            "boards must be an (N, 12) array of integers, {what}"
        ))
    };
    let np = py.import("numpy")?;
    let array = np
        .call_method1("asarray", (obj,))
        .map_err(|e| bad(format!("not {e}")))?;
    let ndim: usize = array.getattr("ndim")?.extract()?;
    if ndim != 2 {
        return Err(bad(format!("got {ndim} dimension(s)")));
    }
    let columns: usize = array.getattr("shape")?.get_item(1)?.extract()?;
    if columns != 12 {
        return Err(bad(format!("got {columns} columns")));
    }
    Ok(array)
}

/// An integer NumPy element a board array may hold, widened to i64 (a u64 above i64::MAX
/// saturates, which is refused like any pit count above 48).
trait Pit: numpy::Element + Copy + Sync {
    fn wide(self) -> i64;
}

macro_rules! pit {
    ($($t:ty),*) => {
        $(
            impl Pit for $t {
                #[inline]
                fn wide(self) -> i64 {
                    i64::try_from(self).unwrap_or(i64::MAX)
                }
            }
        )*
    };
}
pit!(u8, i8, i16, i32, i64, u16, u32, u64);

fn row_board(row: &[i64; 12]) -> Result<Board, String> {
    let mut p = [0u8; 12];
    let mut ok = true;
    for (slot, &x) in p.iter_mut().zip(row) {
        ok &= (0..=i64::from(awari_db::MAX_SEEDS)).contains(&x);
        *slot = x.clamp(0, 255) as u8;
    }
    let board = if ok {
        Board::new(p).map_err(|e| e.to_string())?
    } else {
        let words: Vec<String> = row.iter().map(|&x| x.to_string()).collect();
        Board::parse_words(&words).map_err(|e| e.to_string())?
    };
    check_playable(&board)?;
    Ok(board)
}

/// Why a row of `values` has no value.
enum RowError {
    Board(usize, String),
    Db(DbError),
}

impl Database {
    /// The values of the rows of `boards` (12 integers each, any strides), in parallel
    /// without the GIL; the first bad row (in order) is the error.
    ///
    /// Rows go in groups of `GROUP`: every row's entry is located first (rank), then the
    /// entries are read together, so that their random reads are in flight at once. A
    /// contiguous array is read as one slice; any other through its strides, in place.
    fn values_of<T: Pit>(&self, py: Python<'_>, boards: ArrayView2<'_, T>) -> PyResult<Vec<i8>> {
        const GROUP: usize = 16;
        let levels = self.db.levels();
        let rows = boards.nrows();
        let flat = boards.as_slice();
        let row = |r: usize| -> [i64; 12] {
            match flat {
                Some(f) => std::array::from_fn(|c| f[12 * r + c].wide()),
                None => std::array::from_fn(|c| boards[[r, c]].wide()),
            }
        };
        let group = |g: usize, out: &mut [i8]| -> Result<(), RowError> {
            let mut entries: [Option<(awari_db::Board, u64)>; GROUP] = [None; GROUP];
            for (k, o) in out.iter_mut().enumerate() {
                let r = g * GROUP + k;
                let board = row_board(&row(r)).map_err(|e| RowError::Board(r, e))?;
                let seeds = board.seeds();
                match Level::new(seeds).rank(&board) {
                    Some(i) => {
                        let table = levels.require(seeds).map_err(RowError::Db)?;
                        table.prefetch_value(i);
                        entries[k] = Some((board, i));
                    }
                    // A full opponent row: valued by one ply of lookups.
                    None => *o = self.db.value(&board).map_err(RowError::Db)?,
                }
            }
            // A compressed table's segments, now that their index records are in cache.
            for (board, i) in entries.iter().flatten() {
                if let Ok(table) = levels.require(board.seeds()) {
                    table.prefetch_segment(*i);
                }
            }
            for (o, entry) in out.iter_mut().zip(entries) {
                if let Some((board, i)) = entry {
                    *o = levels.lookup(&board, i).map_err(RowError::Db)?;
                }
            }
            Ok(())
        };
        let mut values = vec![0i8; rows];
        let result = py.detach(|| {
            values
                .par_chunks_mut(GROUP)
                .enumerate()
                .with_min_len(1 << 8)
                .try_for_each(|(g, out)| group(g, out))
                // Parallel work reports some error: report the first row's instead.
                .or_else(|_| {
                    let mut out = vec![0i8; rows];
                    out.chunks_mut(GROUP)
                        .enumerate()
                        .try_for_each(|(g, out)| group(g, out))
                })
        });
        result.map_err(|e| match e {
            RowError::Board(r, message) => value_error(format!("row {r}: {message}")),
            RowError::Db(e) => db_error(e),
        })?;
        Ok(values)
    }
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

/// Perfect-play Awari (Oware): the solved game's databases and rules (the native part of
/// the `awari` package, which re-exports it).
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Database>()?;
    m.add_class::<Move>()?;
    m.add("DatabaseError", m.py().get_type::<DatabaseError>())?;
    m.add_function(wrap_pyfunction!(moves, m)?)?;
    m.add_function(wrap_pyfunction!(index, m)?)?;
    m.add_function(wrap_pyfunction!(board, m)?)?;
    m.add_function(wrap_pyfunction!(random_boards, m)?)?;
    Ok(())
}
