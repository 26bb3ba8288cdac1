//! The streamed check's steps, shared by `verify` (its streamed method, [`crate::verify`]) and
//! the class pass's value check (`crate::depth::ClassPass`): accumulators of one byte per
//! position of a bucket, raised by the un-captured lower levels ([`raise_exits`]) and by the
//! level's own values un-moved ([`unmove_level`]), then each stored value compared with what
//! its children say ([`compare_values`]). Below both, so that neither imports the other.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use awari_db::{Board, Level, Table, TableError};
use rayon::prelude::*;

use crate::grain::STREAM_TASK;
use crate::progress::Progress;

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

/// Accumulator updates gathered before they are applied together (their misses overlap).
const RAISE_BATCH: usize = 256;

/// The top bit of an accumulator: kept by [`raise_codes`] (a class pass's mark of a terminal
/// position, see `crate::depth::ClassPass`); the streamed check leaves it clear.
pub(crate) const TERMINAL_MARK: u8 = 0x80;

/// Raise the accumulators `words` (of the positions from `lo`) to the codes of `batch`
/// (position, [`candidate_code`]): an atomic maximum of the low 7 bits, the top bit kept.
#[inline]
pub(crate) fn raise_codes(words: &[AtomicU8], lo: u64, batch: &[(u64, u8)]) {
    for &(q, _) in batch {
        crate::state::prefetch_line(&words[(q - lo) as usize]);
    }
    for &(q, code) in batch {
        let a = &words[(q - lo) as usize];
        let now = a.load(Relaxed);
        // The top bit never changes while codes are raised, so the maximum with it set
        // as `now` has it is the maximum of the codes.
        let want = (now & TERMINAL_MARK) | code;
        if now < want {
            a.fetch_max(want, Relaxed);
        }
    }
}

/// [`raise_codes`] for a batch of the capture stream (position, exit value).
pub(crate) fn raise_exits(words: &[AtomicU8], lo: u64, batch: &[(u64, i8)]) {
    let mut coded = [(0u64, 0u8); 64];
    for part in batch.chunks(coded.len()) {
        for (slot, &(q, exit)) in coded.iter_mut().zip(part) {
            *slot = (q, candidate_code(exit));
        }
        raise_codes(words, lo, &coded[..part.len()]);
    }
}

/// Step 2 of the streamed check: the whole level's stored values read in order, chunk by
/// chunk, and every child un-moved into its non-capturing predecessors that lie in `range`,
/// raising their accumulators (`words`, from `range.start`) to `−value(child)`. Returns the
/// digests of the table's checksum chunks when `digests` (else none).
pub(crate) fn unmove_level(
    table: &Table,
    level: Level,
    rules: awari_db::Rules,
    range: std::ops::Range<u64>,
    words: &[AtomicU8],
    digests: bool,
    progress: &dyn Progress,
) -> Result<Vec<u64>, TableError> {
    let size = level.size();
    let unit = awari_db::table::CHECKSUM_CHUNK as u64;
    let parents = level.parent_range(range.clone());
    let chunk_digests: Vec<u64> = (0..size.div_ceil(unit))
        .into_par_iter()
        .map(|k| -> Result<u64, TableError> {
            let start = k * unit;
            let end = (start + unit).min(size);
            let mut buf = Vec::new();
            let values = table.read_unchecked(start..end, &mut buf)?;
            let digest = if digests {
                awari_db::table::chunk_digest(values)
            } else {
                0
            };
            // Un-moved in smaller pieces, so that small levels use every core too.
            (start..end)
                .step_by(STREAM_TASK as usize)
                .collect::<Vec<_>>()
                .into_par_iter()
                .for_each(|from| {
                    let to = (from + STREAM_TASK).min(end);
                    let values = &values[(from - start) as usize..(to - start) as usize];
                    let mut batch = Vec::with_capacity(RAISE_BATCH + 12);
                    for (child, &v) in level.boards(from..to).zip(values) {
                        let code = candidate_code(-(v as i8));
                        child.for_each_predecessor_index_in(rules, &level, &parents, |q| {
                            batch.push((q, code));
                        });
                        if batch.len() >= RAISE_BATCH {
                            raise_codes(words, range.start, &batch);
                            batch.clear();
                        }
                    }
                    raise_codes(words, range.start, &batch);
                    progress.advance(to - from);
                });
            Ok(digest)
        })
        .collect::<Result<_, _>>()?;
    Ok(if digests { chunk_digests } else { Vec::new() })
}

/// Step 3 of the streamed check: the stored values of `range` read in order and compared
/// with their accumulators (`words`, from `range.start`; the low 7 bits): a terminal
/// position must hold its terminal value and have no child un-moved into it, any other the
/// best its moves gave. Returns the failures and the first `keep` of them by index.
pub(crate) fn compare_values(
    table: &Table,
    level: Level,
    rules: awari_db::Rules,
    range: std::ops::Range<u64>,
    words: &[AtomicU8],
    keep: usize,
    progress: &dyn Progress,
) -> Result<(u64, Vec<Mismatch>), TableError> {
    let n = level.seeds();
    let lo = range.start;
    let parts = range
        .clone()
        .step_by(STREAM_TASK as usize)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|start| -> Result<(u64, Vec<Mismatch>), TableError> {
            let end = (start + STREAM_TASK).min(range.end);
            let mut counter = awari_db::QuietMoves::new();
            let mut bad = 0u64;
            let mut found = Vec::new();
            let mut buf = Vec::new();
            let stored_values = table.read_unchecked(start..end, &mut buf)?;
            for (idx, board) in (start..end).zip(level.boards(start..end)) {
                let stored = stored_values[(idx - start) as usize] as i8;
                let code = words[(idx - lo) as usize].load(Relaxed) & !TERMINAL_MARK;
                let what = match counter.count(&board, rules) {
                    Err(t) if code != 0 => Some(format!(
                        "terminal ({t}), but un-moving a child reached it (recomputed {})",
                        decode(code)
                    )),
                    Err(t) if t != stored => {
                        Some(format!("stored {stored}, recomputed {t} (terminal)"))
                    }
                    Err(_) => None,
                    Ok(_) if code == 0 => Some(format!(
                        "stored {stored}, but no child un-moves into it although it has moves"
                    )),
                    Ok(_) if decode(code) != stored => {
                        Some(format!("stored {stored}, recomputed {}", decode(code)))
                    }
                    Ok(_) => None,
                };
                let Some(what) = what else { continue };
                bad += 1;
                if found.len() < keep {
                    found.push(Mismatch {
                        level: n,
                        index: idx,
                        board,
                        what,
                    });
                }
            }
            progress.advance(end - start);
            Ok((bad, found))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut failures = 0;
    let mut examples = Vec::new();
    for (bad, found) in parts {
        failures += bad;
        examples = merge_examples(examples, found, keep);
    }
    Ok((failures, examples))
}

/// The first `keep` by index of two lists of failures.
pub(crate) fn merge_examples(
    mut a: Vec<Mismatch>,
    mut b: Vec<Mismatch>,
    keep: usize,
) -> Vec<Mismatch> {
    a.append(&mut b);
    a.sort_by_key(|m| m.index);
    a.truncate(keep);
    a
}

/// The accumulator code of a candidate value: 0 is "no candidate yet", and larger codes are
/// larger values (a corrupt stored byte is clamped, so it cannot wrap).
#[inline]
pub(crate) fn candidate_code(value: i8) -> u8 {
    (value.clamp(-63, 63) + 64) as u8
}

/// The value of a non-zero accumulator code.
#[inline]
pub(crate) fn decode(code: u8) -> i8 {
    code as i8 - 64
}
