//! `verify`: check every table of a database without trusting the builder.
//!
//! For each level, lowest first:
//! 1. the header (on open) and the checksum of the values (and depth) data;
//! 2. every entry recomputed from its children: `value == max over legal moves of
//!    (captures − value(child))`, or the terminal value (docs/design.md, "The game and the
//!    rule sets");
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

use std::sync::atomic::AtomicU8;
use std::sync::Mutex;

use awari_db::{Board, DbError, Level, Levels, Outcome, Table, TableError};
use rayon::prelude::*;

use crate::progress::Progress;
use crate::state::StateArray;
pub use crate::streamed::Mismatch;

mod resume;

/// Why `verify` could not check a level (a failed check is not an error: it is in the
/// [`LevelVerdict`]).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// A level is missing or unreadable.
    #[error(transparent)]
    Db(#[from] DbError),
    /// Another process writes into the directory of the proof's work files.
    #[error(transparent)]
    Locked(#[from] crate::sys::LockError),
    /// The proof's depth pass failed (other than by a failed check).
    #[error(transparent)]
    Depth(#[from] crate::depth::DepthError),
    /// The accumulators of the streamed check could not be allocated.
    #[error("level {level}: cannot allocate the streamed check's {bytes} bytes: {source}")]
    Alloc {
        /// The level.
        level: u32,
        /// Bytes asked for.
        bytes: u64,
        /// The system's error.
        source: std::io::Error,
    },
}

impl From<TableError> for VerifyError {
    fn from(e: TableError) -> Self {
        VerifyError::Db(DbError::Table(e))
    }
}
use crate::grain::{MOVE_TASK, STREAM_TASK};
use crate::streamed::{compare_values, merge_examples, raise_exits, unmove_level};

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
    /// Buckets the streamed check made (each streams the lower levels and the level once);
    /// 0 for the lookup check.
    pub passes: u32,
    /// With `--prove` and no stored depth table: what the depth pass found (see
    /// [`crate::depth`]).
    pub proof: Option<Proof>,
}

/// What `verify --prove` found by computing a level's depths from its values.
#[derive(Clone, Debug)]
pub struct Proof {
    /// The largest depth to conversion.
    pub max_depth: u16,
    /// Won or lost positions without a finite depth (0 when the level is proven).
    pub unproven: u64,
    /// The first of them.
    pub examples: Vec<crate::depth::Unproven>,
}

impl LevelVerdict {
    /// Whether the level passed: checksums, every entry, and the proof when one was made.
    pub fn passed(&self) -> bool {
        self.checksum.is_none()
            && self.failures == 0
            && self.proof.as_ref().is_none_or(|p| p.unproven == 0)
    }

    /// Whether the level's values are proven: it passed, and its depths were checked (a
    /// stored depth table) or computed (`--prove`).
    pub fn proven(&self) -> bool {
        self.passed() && (self.depth_checked || self.proof.is_some())
    }
}

/// Record a failing entry in `examples` while it holds fewer than `keep`.
fn keep_example(
    examples: &Mutex<Vec<Mismatch>>,
    keep: usize,
    level: u32,
    index: u64,
    board: Board,
    what: String,
) {
    let mut ex = examples.lock().expect("examples lock");
    if ex.len() < keep {
        ex.push(Mismatch {
            level,
            index,
            board,
            what,
        });
    }
}

/// Verify level `n` of `levels` (which must hold the levels it depends on) by looking each
/// child up from its parent: random reads into the level and its lower levels, fast while
/// they are in the page cache; the only check of depth tables.
pub fn verify_level_lookup(
    levels: &Levels,
    n: u32,
    keep: usize,
    progress: &dyn Progress,
) -> Result<LevelVerdict, VerifyError> {
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
        passes: 0,
        proof: None,
    };
    if let Err(e) = table.verify() {
        verdict.checksum = Some(e);
        return Ok(verdict);
    }
    if let Some(d) = depth {
        if let Err(e) = d.verify().and_then(|()| d.check_blocks()) {
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
    let failures: u64 = (0..level.size().div_ceil(MOVE_TASK))
        .into_par_iter()
        .map(|c| -> Result<u64, DbError> {
            let start = c * MOVE_TASK;
            let end = (start + MOVE_TASK).min(level.size());
            let mut bad = 0u64;
            let mut boards = level.boards(start..end);
            let mut group = Group::default();
            // The level's own depths, read in order (a compressed table decodes each segment
            // once); the children's are looked up.
            let mut depths = vec![
                0u16;
                if depth.is_some() {
                    (end - start) as usize
                } else {
                    0
                }
            ];
            if depth.is_some() {
                levels.read_depths(n, start, &mut depths)?;
            }
            for first in (start..end).step_by(GROUP) {
                group.fill(
                    &mut boards,
                    rules,
                    &children,
                    (end - first).min(GROUP as u64),
                )?;
                for (k, board) in group.boards.iter().enumerate() {
                    let idx = first + k as u64;
                    let stored = levels.lookup(board, idx)?;
                    let d = depth.map(|_| depths[(idx - start) as usize]);
                    let Some(what) = check_entry(levels, &group, k, stored, d) else {
                        continue;
                    };
                    bad += 1;
                    keep_example(&examples, keep, n, idx, *board, what);
                }
            }
            progress.advance(end - start);
            Ok(bad)
        })
        .collect::<Result<Vec<u64>, _>>()?
        .iter()
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
    /// The directory, for the entries of tables in the probe form (resolved by a capture
    /// search).
    all: &'a Levels,
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
            all: levels,
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
    ) -> Result<(), DbError> {
        self.boards.clear();
        self.outcomes.clear();
        self.first_child.clear();
        let mut located: [(u64, Option<Board>); GROUP * 6] = [(0, None); GROUP * 6];
        let mut n = 0;
        for board in boards.take(count as usize) {
            let outcome = board.outcome(rules);
            self.first_child.push(n);
            if let Outcome::Moves(moves) = &outcome {
                for m in moves.iter() {
                    let seeds = children.seeds - u32::from(m.captures);
                    let (table, idx) = children.locate(&m.child, seeds);
                    // Its miss then overlaps the move generation of the rest of the group.
                    if let Some(data) = table.plain() {
                        crate::state::prefetch_line(&data[idx as usize]);
                    }
                    located[n] = (idx, Some(m.child));
                    n += 1;
                }
            }
            self.boards.push(board);
            self.outcomes.push(outcome);
        }
        self.first_child.push(n);
        // Independent loads, each prefetched when located: their cache misses overlap.
        self.values.clear();
        for &(idx, child) in &located[..n] {
            self.values
                .push(children.all.lookup(&child.expect("located"), idx)?);
        }
        Ok(())
    }
}

/// Check entry `k` of `group` (its stored value `stored`, its stored depth `d` where the
/// level has a depth table); `Some(description)` when it fails.
fn check_entry(
    levels: &Levels,
    group: &Group,
    k: usize,
    stored: i8,
    d: Option<u16>,
) -> Option<String> {
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
                    let cd = match levels.depth(&m.child) {
                        Ok(cd) => cd.expect("a quiet child is indexed, in a level with depths"),
                        Err(e) => return Some(format!("the depth of pit {}'s child: {e}", m.pit)),
                    };
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

/// How [`verify_level`] recomputes the entries of a level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// [`Method::Lookup`] where the level has a depth table (only it checks depths), else
    /// [`Method::Streamed`].
    Auto,
    /// Stream the level and its lower levels in index order ([`verify_level_streamed`]).
    Streamed,
    /// Look every child up from its parent ([`verify_level_lookup`]).
    Lookup,
}

/// What [`verify_level`] does.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// How the entries are recomputed.
    pub method: Method,
    /// RAM the streamed check may use for its accumulators (`None`: one bucket, the level).
    pub memory: Option<u64>,
    /// How many failing entries to keep per level.
    pub keep: usize,
    /// Also prove the values where no depth table is stored: compute the level's depths from
    /// its values (see [`crate::depth`]) and require every won or lost position to have one.
    pub prove: bool,
    /// Where the depth pass of `prove` keeps its work files (`None`: the database directory).
    pub work: Option<std::path::PathBuf>,
}

/// Verify level `n` of `levels` (which must hold the levels it depends on) by `options.method`.
pub fn verify_level(
    levels: &Levels,
    n: u32,
    options: &VerifyOptions,
    progress: &dyn Progress,
) -> Result<LevelVerdict, VerifyError> {
    // Tables in the probe form can only be looked up (a capture search per entry).
    let probe_form = (0..=n).any(|s| levels.get(s).is_some_and(|t| t.is_probe_form()));
    let lookup = match options.method {
        Method::Lookup => true,
        Method::Streamed => false,
        Method::Auto => levels.depth_table(n).is_some() || probe_form,
    };
    // The proof by a depth pass: where there is no depth table to check, or where the
    // streamed method was asked for (no random reads: the depth table is not read).
    let no_depths = levels.depth_table(n).is_none() || options.method == Method::Streamed;
    if options.prove && no_depths && !probe_form {
        return prove_level(levels, n, options, progress);
    }
    if lookup {
        verify_level_lookup(levels, n, options.keep, progress)
    } else {
        let bucket = streamed_bucket(n, options.memory);
        let resume = work_dir(levels, options)?;
        verify_level_streamed_resuming(levels, n, options.keep, bucket, Some(resume), progress)
    }
}

/// `verify --prove` of a level without a depth table: its checksum, then one depth pass (see
/// [`crate::depth`]) that recomputes every entry from its children in its stream of the lower
/// levels and computes every depth; the level is proven when no entry differs and every won
/// or lost position has a depth.
///
/// Where the level's values do not fit in the page cache ([`crate::depth::depth_algorithm`]),
/// the pass is a [`crate::depth::ClassPass`], whose phase 1 makes the checks of
/// [`verify_level_streamed`], the checksum included: it reads no file at random. The pass by
/// waves reads the level at random, so the checksum is checked before it.
fn prove_level(
    levels: &Levels,
    n: u32,
    options: &VerifyOptions,
    progress: &dyn Progress,
) -> Result<LevelVerdict, VerifyError> {
    let table = levels.require(n)?;
    let work = work_dir(levels, options)?;
    // One writer at a time where the work files go (a build, `depth`, another proof).
    let _lock = crate::sys::lock_dir(work)?;
    let pass = crate::depth::Pass::open(levels, n, work, options.memory)?;
    let mut verdict = LevelVerdict {
        level: n,
        checksum: None,
        failures: 0,
        examples: Vec::new(),
        depth_checked: false,
        passes: 0,
        proof: None,
    };
    if pass.algorithm() == crate::depth::DepthAlgorithm::Waves {
        verdict.checksum = table.verify().err();
        if verdict.checksum.is_some() {
            return Ok(verdict);
        }
    }
    let mismatches = |found: Vec<crate::depth::Inconsistent>| {
        let mut m: Vec<Mismatch> = found
            .into_iter()
            .map(|m| Mismatch {
                level: n,
                index: m.index,
                board: m.board,
                what: m.what,
            })
            .collect();
        m.sort_by_key(|m| m.index);
        m
    };
    let report = match pass
        .check_values(options.keep)
        .run(false, options.keep, progress)
    {
        Ok(report) => report,
        // A bad checksum ends the class pass after its value check, as it ends the streamed
        // one.
        Err(crate::depth::DepthError::Checksum(bad)) => {
            verdict.checksum = Some(bad.checksum);
            verdict.failures = bad.inconsistent;
            verdict.examples = mismatches(bad.examples);
            verdict.passes = bad.passes;
            return Ok(verdict);
        }
        Err(e) => return Err(e.into()),
    };
    verdict.failures = report.inconsistent;
    verdict.examples = mismatches(report.inconsistent_examples);
    verdict.passes = report.exits.passes;
    verdict.proof = Some(Proof {
        max_depth: report.max_depth,
        unproven: report.unproven,
        examples: report.examples,
    });
    Ok(verdict)
}

/// Where `verify --prove`'s depth pass keeps its work files, made if missing (as `depth
/// --out` makes its directory).
fn work_dir<'a>(
    levels: &'a Levels,
    options: &'a VerifyOptions,
) -> Result<&'a std::path::Path, DbError> {
    let work = options.work.as_deref().unwrap_or(levels.dir());
    std::fs::create_dir_all(work).map_err(|source| {
        DbError::Table(TableError::Io {
            path: work.to_path_buf(),
            source,
        })
    })?;
    Ok(work)
}

/// RAM the streamed check keeps besides its accumulators (batches, examples, the pool).
const STREAM_SLACK: u64 = 64 << 20;

/// Positions per bucket of the streamed check of level `n` within `memory` bytes (`None`: the
/// whole level): one accumulator byte per position, in whole compare chunks, at least one.
pub fn streamed_bucket(n: u32, memory: Option<u64>) -> u64 {
    let size = awari_db::level_size(n);
    let whole = size.div_ceil(STREAM_TASK) * STREAM_TASK;
    let left = memory.map_or(whole, |m| m.saturating_sub(STREAM_SLACK));
    (left / STREAM_TASK * STREAM_TASK).clamp(STREAM_TASK, whole)
}

/// Verify level `n` of `levels` with no random reads into files.
///
/// For every position p, the value the rules give it is the best of its *exit* (its terminal
/// value, or its best capture `c − value(child)`) and of `−value(child)` over its
/// non-capturing moves. Rather than look the children up from p, every child is visited in
/// index order and un-moved into its parents, each raising its parents' accumulator:
///
/// ```text
///   level n−2 … n−18 ──▶ un-capture (as the build's exits phase) ─┐  acc[q] = max(acc[q],
///   level n          ──▶ un-move (non-capturing parents)         ─┴─▶         candidate)
///   level n, bucket  ──▶ forward (terminal?) and compare: stored == terminal value or acc
/// ```
///
/// The accumulators (one byte per position) live in RAM for one *bucket* of `bucket` indices
/// at a time (see [`streamed_bucket`]); each bucket streams the lower levels and the level
/// once more, and keeps the parents that fall in it. Only the accumulators are touched at
/// random. The checksum is computed on the first pass, and the entries are checked even when
/// it fails, so that the failing entries are named.
///
/// It proves what [`verify_level_lookup`] proves without depth tables, given that un-moves and
/// un-captures are the exact inverses of the moves (which the test suite checks).
pub fn verify_level_streamed(
    levels: &Levels,
    n: u32,
    keep: usize,
    bucket: u64,
    progress: &dyn Progress,
) -> Result<LevelVerdict, VerifyError> {
    verify_level_streamed_resuming(levels, n, keep, bucket, None, progress)
}

/// [`verify_level_streamed`], which, where the level takes more than one bucket and `resume`
/// names a directory, records there after each bucket what the buckets so far found
/// (`level-NN.vresume`, see `resume`), and begins where an earlier run of the same level, table
/// and bucket recorded it stopped. A checkpoint that cannot be written is said once and the
/// check goes on without.
pub fn verify_level_streamed_resuming(
    levels: &Levels,
    n: u32,
    keep: usize,
    bucket: u64,
    resume: Option<&std::path::Path>,
    progress: &dyn Progress,
) -> Result<LevelVerdict, VerifyError> {
    let table = levels.require(n)?;
    let rules = levels.rules();
    // A compressed table's blocks are each decoded and checked first: a corrupt one is named
    // (level and block) instead of stopping the passes below.
    if let Err(e) = table.check_blocks() {
        return Ok(LevelVerdict {
            level: n,
            checksum: Some(e),
            failures: 0,
            examples: Vec::new(),
            depth_checked: false,
            passes: 0,
            proof: None,
        });
    }
    let stream = crate::exits::CaptureStream::new(n, rules, levels)?;
    let level = Level::new(n);
    let size = level.size();
    let bucket = bucket.max(1);
    let passes = size.div_ceil(bucket).max(1);
    let mut checkpoint = resume
        .filter(|_| passes > 1)
        .map(|dir| resume::path(dir, n));
    let done = checkpoint
        .as_deref()
        .map_or_else(resume::Done::default, |path| {
            resume::read(path, rules, n, table, bucket)
        });
    let first = u64::from(done.buckets);
    if first > 0 {
        eprintln!(
            "level {n}: resuming the check at bucket {}/{passes} ({} entries failed before)",
            first + 1,
            done.failures
        );
    }
    progress.phase(
        "verify",
        (passes - first) * (stream.positions() + size) + size,
    );
    let mut examples = done.examples;
    let mut failures = done.failures;
    let mut digests = Vec::new();
    for b in first..passes {
        let range = (b * bucket).min(size)..((b + 1) * bucket).min(size);
        if passes > 1 {
            progress.message(&format!("bucket {}/{passes}", b + 1));
        }
        // A fresh map per bucket: zero (no candidate) without a pass over it.
        let acc: StateArray<AtomicU8> = StateArray::new((range.end - range.start) as usize)
            .map_err(|source| VerifyError::Alloc {
                level: n,
                bytes: range.end - range.start,
                source,
            })?;
        let words = acc.words();
        // 1. Captures: the lower levels, un-captured.
        stream.run(
            range.clone(),
            |batch| raise_exits(words, range.start, batch),
            progress,
        )?;
        // 2. Non-capturing moves: the level itself, un-moved (its checksum on this run's first
        // pass: a resumed run hashes the table as it is now).
        table.advise(awari_db::Access::Sequential);
        let digest = b == first && !table.is_raw() && !table.is_compressed();
        let chunk_digests =
            unmove_level(table, level, rules, range.clone(), words, digest, progress)?;
        if b == first {
            digests = chunk_digests;
        }
        // 3. Compare the bucket's stored values with what its children say.
        let (bad, found) = compare_values(table, level, rules, range, words, keep, progress)?;
        failures += bad;
        examples = merge_examples(examples, found, keep);
        table.advise(awari_db::Access::Normal);
        if let (Some(path), true) = (&checkpoint, b + 1 < passes) {
            let done = resume::Done {
                buckets: (b + 1) as u32,
                failures,
                examples: examples.clone(),
            };
            if let Err(e) = resume::write(path, rules, n, table, bucket, &done) {
                eprintln!("level {n}: going on without a checkpoint: {e}");
                checkpoint = None;
            }
        }
    }
    if let Some(path) = &checkpoint {
        let _ = std::fs::remove_file(path);
    }
    if table.is_compressed() {
        return Ok(LevelVerdict {
            level: n,
            checksum: table.verify().err(),
            failures,
            examples,
            depth_checked: false,
            passes: passes as u32,
            proof: None,
        });
    }
    let checksum = (!table.is_raw())
        .then(|| awari_db::table::combine_digests(&digests))
        .filter(|&got| got != table.header().checksum)
        .map(|got| TableError::BadChecksum {
            path: table.path().to_path_buf(),
            expected: table.header().checksum,
            got,
        });
    Ok(LevelVerdict {
        level: n,
        checksum,
        failures,
        examples,
        depth_checked: false,
        passes: passes as u32,
        proof: None,
    })
}
