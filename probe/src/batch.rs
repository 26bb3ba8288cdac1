//! The `batch` pipeline of `awari-probe batch`: boards in, one per line, values (or `show`
//! JSON) out, one per line, in input order, answered on all cores.

use std::io::{Read, Write};

use awari_db::{Board, DbError};
use rayon::prelude::*;

use crate::{check_playable, report, Database};

/// Why a batch stopped.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// A bad input line (the command line's exit code 2).
    #[error("stdin line {number}: {message}")]
    Line {
        /// Its line number, from 1.
        number: u64,
        /// What is wrong with it.
        message: String,
    },
    /// A lookup failed: a missing level, or a corrupt table.
    #[error(transparent)]
    Db(#[from] DbError),
    /// Reading the input or writing the answers failed.
    #[error("{what}: {source}")]
    Io {
        /// "reading stdin" or "writing stdout".
        what: &'static str,
        /// The error.
        source: std::io::Error,
    },
}

/// Input bytes per block: large enough to keep the cores busy, small enough to stream.
const BLOCK: usize = 1 << 20;
/// The longest input line, in bytes without its newline: a board takes under 40, and a longer
/// line is a bad line (so that input without newlines, such as `/dev/zero`, is refused at once
/// rather than held in memory).
pub const LINE_MAX: usize = 4096;
/// Lines per task within a block.
const TASK: usize = 1 << 10;

/// What `batch` prints per board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Its value.
    Value,
    /// Its value and its depth to conversion, `value depth` (every level asked must have a
    /// depth table).
    ValueDepth,
    /// `show`'s JSON document.
    Json,
}

/// Read boards from `input`, one per line, and write one answer per line to `output`: its
/// value, its value and depth, or `show`'s JSON document (see [`Answer`]).
///
/// Input is read in blocks of whole lines, and each block is answered on all cores, its
/// answers written in input order. The first bad line stops the run with its line number,
/// after every line before it has been answered, as does a line longer than [`LINE_MAX`]
/// bytes. Blank lines get no answer.
pub fn run(
    db: &Database,
    answer: Answer,
    mut input: impl Read,
    mut output: impl Write,
) -> Result<(), BatchError> {
    let write_err = |source| BatchError::Io {
        what: "writing stdout",
        source,
    };
    let mut first = 1u64; // the line number of the block's first line
    let mut block: Vec<u8> = Vec::with_capacity(2 * BLOCK);
    let mut rest: Vec<u8> = Vec::new(); // a line begun at the end of the previous block
    let mut texts: Vec<Vec<u8>> = Vec::new();
    loop {
        block.clear();
        block.append(&mut rest);
        let eof = fill(&mut input, &mut block, BLOCK)?;
        // Whole lines only: keep what follows the last newline for the next block, unless it
        // is already too long to be a line (it is then the bad line after the block's).
        let mut overlong = false;
        if !eof {
            let end = block.iter().rposition(|&b| b == b'\n').map_or(0, |k| k + 1);
            overlong = block.len() - end > LINE_MAX;
            if !overlong {
                rest.extend_from_slice(&block[end..]);
            }
            block.truncate(end);
        }
        if block.is_empty() {
            if overlong {
                return Err(too_long(first));
            }
            if eof {
                break;
            }
            continue;
        }
        let lines: Vec<&[u8]> = block.split_inclusive(|&b| b == b'\n').collect();
        let tasks = lines.len().div_ceil(TASK);
        if texts.len() < tasks {
            texts.resize_with(tasks, Vec::new);
        }
        // Each task's answers go to its own buffer, kept from block to block.
        let errors: Vec<Option<BatchError>> = texts[..tasks]
            .par_iter_mut()
            .zip(lines.par_chunks(TASK))
            .enumerate()
            .map(|(t, (text, chunk))| {
                text.clear();
                let start = first + (t * TASK) as u64;
                if answer != Answer::Json {
                    return answer_values(db, chunk, start, answer == Answer::ValueDepth, text)
                        .err();
                }
                for (k, line) in chunk.iter().enumerate() {
                    if let Err(e) = answer_json(db, line, start + k as u64, text) {
                        return Some(e);
                    }
                }
                None
            })
            .collect();
        for (text, err) in texts.iter().zip(errors) {
            output.write_all(text).map_err(write_err)?;
            if let Some(e) = err {
                output.flush().map_err(write_err)?;
                return Err(e);
            }
        }
        first += lines.len() as u64;
        if overlong {
            output.flush().map_err(write_err)?;
            return Err(too_long(first));
        }
        if eof {
            break;
        }
    }
    output.flush().map_err(write_err)
}

/// Append up to `want` bytes of `input` to `buf`; returns whether the input has ended.
fn fill(input: &mut impl Read, buf: &mut Vec<u8>, want: usize) -> Result<bool, BatchError> {
    let mut got = 0;
    while got < want {
        let k = input
            .by_ref()
            .take((want - got) as u64)
            .read_to_end(buf)
            .map_err(|source| BatchError::Io {
                what: "reading stdin",
                source,
            })?;
        if k == 0 {
            return Ok(true);
        }
        got += k;
    }
    Ok(false)
}

/// The error of line `number`, longer than [`LINE_MAX`] bytes.
fn too_long(number: u64) -> BatchError {
    BatchError::Line {
        number,
        message: format!("longer than {LINE_MAX} bytes (a board is 12 numbers)"),
    }
}

/// The board of one input line (`None` for a blank line), checked as `show` checks it.
fn parse_line(line: &[u8], number: u64) -> Result<Option<Board>, BatchError> {
    let bad = |message: String| BatchError::Line { number, message };
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    if text.strip_suffix(b"\r").unwrap_or(text).len() > LINE_MAX {
        return Err(too_long(number));
    }
    let board = match Board::parse_simple(line) {
        Some(board) => board,
        None => {
            let text = std::str::from_utf8(line)
                .map_err(|_| bad("not UTF-8 text".into()))?
                .trim();
            if text.is_empty() {
                return Ok(None);
            }
            Board::parse(text).map_err(|e| bad(e.to_string()))?
        }
    };
    check_playable(&board).map_err(bad)?;
    Ok(Some(board))
}

/// Append the answer to one `--json` input line (nothing for a blank line).
fn answer_json(
    db: &Database,
    line: &[u8],
    number: u64,
    out: &mut Vec<u8>,
) -> Result<(), BatchError> {
    if let Some(board) = parse_line(line, number)? {
        report(&board, db.rules(), Some(db))?.write_json(out);
        out.push(b'\n');
    }
    Ok(())
}

/// Append the values of `lines` (the first is line `first`), one per non-blank line. Lines go
/// in groups of 16: every entry is located first (rank), then the 16 are read together, so
/// that their random reads are in flight at once. On an error, the lines before it are
/// answered first.
fn answer_values(
    db: &Database,
    lines: &[&[u8]],
    first: u64,
    depth: bool,
    out: &mut Vec<u8>,
) -> Result<(), BatchError> {
    const GROUP: usize = 16;
    for (g, group) in lines.chunks(GROUP).enumerate() {
        let mut values: [Option<i8>; GROUP] = [None; GROUP];
        let mut entries: [Option<(awari_db::Board, u64)>; GROUP] = [None; GROUP];
        let mut failure = None;
        for (k, line) in group.iter().enumerate() {
            let number = first + (g * GROUP + k) as u64;
            let located = parse_line(line, number).and_then(|board| {
                let Some(board) = board else { return Ok(()) };
                let seeds = board.seeds();
                match awari_db::Level::new(seeds).rank(&board) {
                    Some(i) => {
                        let table = db.levels().require(seeds).map_err(BatchError::Db)?;
                        table.prefetch_value(i);
                        entries[k] = Some((board, i));
                    }
                    // A full opponent row: valued by one ply of lookups.
                    None => values[k] = Some(db.value(&board).map_err(BatchError::Db)?),
                }
                Ok(())
            });
            if let Err(e) = located {
                failure = Some((k, e));
                break;
            }
        }
        let answered = failure.as_ref().map_or(group.len(), |f| f.0);
        let mut boards: [Option<Board>; GROUP] = [None; GROUP];
        // A compressed table's segments, now that their index records are in cache.
        for (board, i) in entries.iter().take(answered).flatten() {
            if let Ok(table) = db.levels().require(board.seeds()) {
                table.prefetch_segment(*i);
            }
        }
        for (k, (v, entry)) in values.iter_mut().zip(entries).take(answered).enumerate() {
            if let Some((board, i)) = entry {
                *v = Some(db.levels().lookup(&board, i)?);
                boards[k] = Some(board);
            }
        }
        if depth {
            // Boards with a full opponent row were valued by one ply: find them again.
            for (k, line) in group.iter().enumerate().take(answered) {
                if boards[k].is_none() && values[k].is_some() {
                    boards[k] = parse_line(line, first + (g * GROUP + k) as u64)?;
                }
            }
        }
        for (v, board) in values.iter().zip(&boards).take(answered) {
            let Some(v) = v else { continue };
            let d = match board.filter(|_| depth) {
                Some(board) => Some(db.depth(&board)?.ok_or_else(|| DbError::MissingDepth {
                    dir: db.levels().dir().to_path_buf(),
                    seeds: board.seeds(),
                })?),
                None => None,
            };
            if *v < 0 {
                out.push(b'-');
            }
            let a = v.unsigned_abs();
            if a >= 10 {
                out.push(b'0' + a / 10);
            }
            out.push(b'0' + a % 10);
            if let Some(d) = d {
                out.push(b' ');
                out.extend_from_slice(d.to_string().as_bytes());
            }
            out.push(b'\n');
        }
        if let Some((_, e)) = failure {
            return Err(e);
        }
    }
    Ok(())
}
