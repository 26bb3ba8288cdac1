//! Phase 1 of a class pass, the class lists: in buckets of the level, each position's exit
//! byte computed as the two-bit builder's exits phase does (the forward pass, then the lower
//! levels streamed and un-captured with an atomic maximum), the bucket's stored values read in
//! index order, and every won or lost position appended to the list of its class (one file
//! per class and sign: `level-NN.dclass+VV`, `level-NN.dclass-VV`), a checkpoint after each
//! bucket.
//!
//! The byte is an accumulator of the streamed check (`crate::streamed`: 0 no candidate, else
//! the best candidate's code), its top bit marking a terminal position (set by the forward
//! pass; whose terminal value is recomputed where a won one's flag needs it).
//!
//! A won position's record flag says *depth 0*: its exit (its terminal value or its best
//! capture) equals its value. For a consistent table a capture never exceeds the value, so
//! "a capture achieves v" is "the best capture is v"; a table where a capture exceeds a
//! value, or a terminal position's stored value is not its terminal value, is wrong, and the
//! value check rejects it, not the lists.
//!
//! With the value check ([`ClassPass::check_values`]), each bucket goes on after its lists
//! as the streamed check's steps 2 and 3 (`crate::streamed::unmove_level`,
//! `crate::streamed::compare_values`): the level's own values streamed in order and un-moved
//! into the bucket's positions, raising the same bytes to `−value(child)`, then the bucket's
//! stored values compared with them. The lower levels are streamed once per bucket for both.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use awari_db::{level_size, Access, QuietMoves, TableError};
use rayon::prelude::*;

use super::super::CHUNK;
use super::{BadChecksum, ClassPass, ClassStage, DepthError, Inconsistent, LISTS};
use crate::exits::{forward, forward_bucket};
use crate::progress::Progress;
use crate::seed_records::{finish_record, new_record, push_flagged_seed};
use crate::settle::NO_EXIT;
use crate::state::StateArray;
use crate::streamed::{self, raise_exits, TERMINAL_MARK};

/// Fixed memory of phase 1 besides its bucket: the list writers' buffers, the pool, the main
/// heap (measured with `/proc/PID/smaps` at level 24: about 3 MiB besides its bucket on 2
/// threads; the model leaves room for a hundred lists at once)...
const FIXED: u64 = 8 << 20;
/// ... and per thread: the records of its group of chunks (about 1.5 bytes a position of 2
/// chunks) and what its allocator arena keeps.
const PER_THREAD: u64 = 4 << 20;

/// Phase 1's fixed memory besides its bucket, on `threads` threads.
fn fixed(threads: usize) -> u64 {
    FIXED + PER_THREAD * threads as u64
}
/// The most buckets (passes over the lower levels) phase 1 makes.
const MAX_PASSES: u64 = 16;
/// Buffer of each list file being appended to.
const LIST_BUFFER: usize = 64 << 10;

/// Positions per bucket of a class pass's phase 1 on `threads` threads within `budget` bytes
/// (`None`: the whole level): one exit byte per position, in whole chunks, what the fixed
/// part leaves of the budget, at least 1/16 of the level (as the two-bit builder sizes its
/// exit buckets).
pub fn class_bucket(n: u32, budget: Option<u64>, threads: usize) -> u64 {
    let size = level_size(n);
    let whole = size.div_ceil(CHUNK).max(1) * CHUNK;
    let min = size.div_ceil(MAX_PASSES).div_ceil(CHUNK).max(1) * CHUNK;
    let left = budget.map_or(whole, |b| b.saturating_sub(fixed(threads)));
    (left / CHUNK * CHUNK).clamp(min, whole)
}

/// RAM a class pass of level `n` on `threads` threads uses with buckets of `bucket`
/// positions: the larger of phase 1 (the bucket's exit bytes) and the classes (the state, as
/// [`super::super::memory_needed`]).
pub fn class_memory(n: u32, bucket: u64, threads: usize) -> u64 {
    super::super::memory_needed(n).max(bucket.min(level_size(n)) + fixed(threads))
}

/// The index of the list of class `v` (1..=128), won or lost.
pub(super) fn list_index(v: u8, won: bool) -> usize {
    2 * (usize::from(v) - 1) + usize::from(!won)
}

/// The list of class `v`, won or lost, of level `n`'s pass in `dir`.
pub(crate) fn list_path(dir: &Path, n: u32, v: u8, won: bool) -> PathBuf {
    let sign = if won { '+' } else { '-' };
    dir.join(format!("level-{n:02}.dclass{sign}{v:02}"))
}

/// The exit value of a bucket byte (a code of the streamed check, see
/// [`streamed::candidate_code`]: the best capture, 0 for none; the top bit marks a terminal
/// position, whose terminal value `terminal()` gives): the best of its terminal value and
/// its captures, [`NO_EXIT`] for neither, as the two-bit builder's exit byte.
fn exit_value(byte: u8, terminal: impl FnOnce() -> i8) -> i8 {
    let code = byte & !TERMINAL_MARK;
    let capture = if code == 0 {
        NO_EXIT
    } else {
        streamed::decode(code)
    };
    if byte & TERMINAL_MARK != 0 {
        capture.max(terminal())
    } else {
        capture
    }
}

/// One chunk's class-list records (list index, record), in list order, and its draws.
pub(super) type ChunkLists = (Vec<(usize, Vec<u8>)>, u64);

/// The class-list records of one chunk (`chunk`), its positions' exit bytes `exit(j)` and
/// stored values `values[j]`: (list index, record) in list order, and the draws.
pub(super) fn classify(chunk: u32, mut exit: impl FnMut(usize) -> i8, values: &[u8]) -> ChunkLists {
    let mut lists: Vec<Option<(Vec<u8>, i64)>> = (0..LISTS).map(|_| None).collect();
    let mut draws = 0;
    for (j, &b) in values.iter().enumerate() {
        let v = b as i8;
        if v == 0 {
            draws += 1;
            continue;
        }
        let won = v > 0;
        let x = list_index(v.unsigned_abs(), won);
        let (out, prev) = lists[x].get_or_insert_with(|| (new_record(), -1));
        push_flagged_seed(out, prev, j as u32, won && exit(j) == v);
    }
    let records = lists
        .into_iter()
        .enumerate()
        .filter_map(|(x, l)| {
            l.map(|(mut out, _)| {
                finish_record(&mut out, chunk);
                (x, out)
            })
        })
        .collect();
    (records, draws)
}

impl ClassPass<'_> {
    /// Phase 1 from position `done` on, bucket by bucket, each followed by a checkpoint;
    /// returns the buckets made.
    pub(super) fn class_lists(
        &mut self,
        done: u64,
        progress: &dyn Progress,
    ) -> Result<u32, DepthError> {
        let size = self.level.size();
        let buckets = crate::exits::bucket_ranges(done, size, self.bucket);
        // With the check: the level once more per bucket, and the bucket's values again.
        let per_bucket = self.stream.positions() + self.check.map_or(0, |_| size);
        let again = self.check.map_or(0, |_| size - done);
        progress.phase(
            "exits",
            2 * (size - done) + again + buckets.len() as u64 * per_bucket,
        );
        if self.check.is_some() && done == 0 {
            // A compressed table's blocks are each decoded and checked first (as the streamed
            // check does): a corrupt one is named instead of stopping the passes below.
            if let Err(checksum) = self.table.check_blocks() {
                return Err(DepthError::Checksum(Box::new(BadChecksum {
                    checksum,
                    inconsistent: 0,
                    examples: Vec::new(),
                    passes: 0,
                })));
            }
        }
        let map: StateArray<AtomicU8> =
            StateArray::new(self.bucket.min(size) as usize).map_err(DepthError::Alloc)?;
        for &(lo, hi) in &buckets {
            // Every byte is set by the forward pass: a terminal position's is marked.
            let exits = &map.words()[..(hi - lo) as usize];
            forward_bucket(
                self.level,
                self.rules,
                lo,
                exits,
                CHUNK as usize,
                |e, exit| e.store(if exit == NO_EXIT { 0 } else { TERMINAL_MARK }, Relaxed),
                progress,
            );
            self.stream
                .run(lo..hi, |batch| raise_exits(exits, lo, batch), progress)?;
            self.write_lists(lo, exits, progress)?;
            if let Some(keep) = self.check {
                self.check_bucket(lo..hi, exits, keep, progress)?;
            }
            self.stage = ClassStage::Lists { done: hi };
            if hi < size {
                self.write_checkpoint()?;
            }
        }
        Ok(buckets.len() as u32)
    }

    /// The value check of the bucket `range` (its accumulators `exits` hold its captures):
    /// the level's own values streamed and un-moved into it (the checksum's digests on
    /// bucket 0), then its stored values compared, as the streamed check's steps 2 and 3.
    fn check_bucket(
        &mut self,
        range: Range<u64>,
        exits: &[AtomicU8],
        keep: usize,
        progress: &dyn Progress,
    ) -> Result<(), TableError> {
        let table = self.table;
        let digests = range.start == 0 && !table.is_raw() && !table.is_compressed();
        table.advise(Access::Sequential);
        let r = streamed::unmove_level(
            table,
            self.level,
            self.rules,
            range.clone(),
            exits,
            digests,
            progress,
        )
        .and_then(|d| {
            let found = streamed::compare_values(
                table, self.level, self.rules, range, exits, keep, progress,
            )?;
            Ok((d, found))
        });
        table.advise(Access::Normal);
        let (d, (bad, found)) = r?;
        if digests {
            self.carried.checksum = Some(awari_db::table::combine_digests(&d));
        }
        self.carried.mismatches += bad;
        self.mismatch_examples
            .extend(found.into_iter().map(|m| Inconsistent {
                index: m.index,
                board: m.board,
                what: m.what,
            }));
        self.mismatch_examples.sort_by_key(|m| m.index);
        self.mismatch_examples.truncate(keep);
        Ok(())
    }

    /// Read the stored values of the bucket starting at `lo` in order, a group of chunks in
    /// parallel at a time, and append its won and lost positions to the class lists (synced
    /// at the end); the draws are counted.
    fn write_lists(
        &mut self,
        lo: u64,
        exits: &[AtomicU8],
        progress: &dyn Progress,
    ) -> Result<(), TableError> {
        self.table.advise(Access::Sequential);
        let r = self.append_lists(lo, exits, progress);
        self.table.advise(Access::Normal);
        r
    }

    /// [`ClassPass::write_lists`], the table advised.
    fn append_lists(
        &mut self,
        lo: u64,
        exits: &[AtomicU8],
        progress: &dyn Progress,
    ) -> Result<(), TableError> {
        let n = self.level.seeds();
        let (level, rules) = (self.level, self.rules);
        let mut writers: Vec<Option<BufWriter<File>>> = (0..LISTS).map(|_| None).collect();
        let group = CHUNK as usize * 2 * rayon::current_num_threads();
        let table = self.table;
        // The value check reports the checksum with what it finds (`end_check`); without it,
        // the values are checked as they are read.
        let checks_itself = self.check.is_some();
        for (g, part) in exits.chunks(group).enumerate() {
            let first = lo + (g * group) as u64;
            let done: Vec<Result<ChunkLists, TableError>> = part
                .par_chunks(CHUNK as usize)
                .enumerate()
                .map(|(k, chunk)| {
                    let start = first + k as u64 * CHUNK;
                    let mut buf = Vec::new();
                    let range = start..start + chunk.len() as u64;
                    let values = if checks_itself {
                        table.read_unchecked(range, &mut buf)?
                    } else {
                        table.read(range, &mut buf)?
                    };
                    let mut counter = QuietMoves::new();
                    let exit = |j: usize| {
                        exit_value(chunk[j].load(Relaxed), || {
                            let board = level.unrank(start + j as u64);
                            forward(&board, rules, &mut counter).0
                        })
                    };
                    let r = classify((start / CHUNK) as u32, exit, values);
                    progress.advance(chunk.len() as u64);
                    Ok(r)
                })
                .collect();
            for r in done {
                let (records, draws) = r?;
                self.carried.draws += draws;
                for (x, record) in records {
                    let w = match &mut writers[x] {
                        Some(w) => w,
                        slot => {
                            let path = list_path(&self.out, n, (x / 2 + 1) as u8, x % 2 == 0);
                            slot.insert(open_at(&path, self.lists[x])?)
                        }
                    };
                    w.write_all(&record).map_err(|source| TableError::Io {
                        path: self.out.clone(),
                        source,
                    })?;
                    self.lists[x] += record.len() as u64;
                }
            }
        }
        for w in writers.into_iter().flatten() {
            let io = |source| TableError::Io {
                path: self.out.clone(),
                source,
            };
            let f = w.into_inner().map_err(|e| io(e.into_error()))?;
            f.sync_data().map_err(io)?;
        }
        Ok(())
    }

    /// Cut every class list back to the length the checkpoint records (a resumed pass: a
    /// killed bucket may have appended more), removing the empty ones.
    pub(super) fn cut_lists(&self) -> Result<(), TableError> {
        let n = self.level.seeds();
        for x in 0..LISTS {
            let path = list_path(&self.out, n, (x / 2 + 1) as u8, x % 2 == 0);
            if self.lists[x] == 0 {
                let _ = std::fs::remove_file(&path);
            } else if let Ok(f) = OpenOptions::new().write(true).open(&path) {
                f.set_len(self.lists[x])
                    .map_err(|source| TableError::Io { path, source })?;
            }
        }
        Ok(())
    }
}

/// A list file opened for appending at `len` bytes (cut there).
fn open_at(path: &Path, len: u64) -> Result<BufWriter<File>, TableError> {
    let io = |source| TableError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io)?;
    f.set_len(len).map_err(io)?;
    f.seek(SeekFrom::Start(len)).map_err(io)?;
    Ok(BufWriter::with_capacity(LIST_BUFFER, f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seed_records::{decode_seeds, record_body};

    #[test]
    fn classify_sorts_positions_into_class_lists() {
        let values: Vec<u8> = [0i8, 3, -3, 1, -1, 3, 0, -2, 2, 48, -128]
            .iter()
            .map(|&v| v as u8)
            .collect();
        // Exit bytes: 3 at offset 1 (depth 0), a lower one at 5, terminal 1 at 3, a capture
        // of 2 at the loser 7 (losers are never flagged), none elsewhere.
        let exits = [0i8, 3, -128, 1, -128, 2, -128, -2, -128, 48, -128];
        let (records, draws) = classify(9, |j| exits[j], &values);
        assert_eq!(draws, 2);
        type Decoded = (usize, u32, Vec<(u32, bool)>);
        let got: Vec<Decoded> = records
            .iter()
            .map(|(x, r)| {
                let chunk = u32::from_le_bytes(r[0..4].try_into().unwrap());
                let len = u32::from_le_bytes(r[4..8].try_into().unwrap()) as usize;
                assert_eq!(len, record_body(r).len());
                (*x, chunk, decode_seeds(record_body(r), u32::MAX))
            })
            .collect();
        let want = vec![
            (list_index(1, true), 9, vec![(3, true)]),
            (list_index(1, false), 9, vec![(4, false)]),
            (list_index(2, true), 9, vec![(8, false)]),
            (list_index(2, false), 9, vec![(7, false)]),
            (list_index(3, true), 9, vec![(1, true), (5, false)]),
            (list_index(3, false), 9, vec![(2, false)]),
            (list_index(48, true), 9, vec![(9, true)]),
            (list_index(128, false), 9, vec![(10, false)]),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn list_indices_and_names_are_distinct() {
        let mut seen = std::collections::HashSet::new();
        let dir = Path::new("/x");
        for v in 1..=128u8 {
            for won in [true, false] {
                let x = list_index(v, won);
                assert!(x < LISTS && seen.insert(x));
                let name = list_path(dir, 7, v, won);
                assert_eq!(name.to_str().unwrap().len(), if v < 100 { 21 } else { 22 });
            }
        }
        assert_eq!(
            list_path(dir, 7, 3, true),
            Path::new("/x/level-07.dclass+03")
        );
        assert_eq!(
            list_path(dir, 7, 12, false),
            Path::new("/x/level-07.dclass-12")
        );
    }
}
