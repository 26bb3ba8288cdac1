//! The distributed build: one level at a time over several ranks (MPI processes, see
//! [`crate::comm`]), each holding the state of its own slice of the level, byte-identical to
//! the single-machine build.
//!
//! ```text
//!   level n, index order:  | rank 0 | rank 1 | rank 2 | … |    slices cut at multiples of the
//!                                                             granule (4 Mi positions: one
//!                                                             checksum chunk of the table)
//! ```
//!
//! Each rank runs the in-memory algorithm on its slice (`in_memory`), with rayon threads
//! inside, 2 bytes per position of the slice, or the low-memory algorithm of [`crate::lowmem`]
//! on it (`low_memory`: 0.67 bytes per position and a work file), in the same phases and
//! rounds, each through the build's one driver ([`crate::build::level::run_level`]):
//!
//! 1. **Exits.** A forward pass over its slice; then every rank streams its own part (1/R) of
//!    every lower level, window by window, and un-captures it. A parent in its own slice gets
//!    its exit raised at once; the others are bucketed by owner and exchanged after each
//!    window (one all-to-all per round; every rank makes as many rounds), then applied by
//!    their owners. No rank reads another's data at random.
//! 2. **Settling.** Step i = n … 1 runs in rounds. In each round a rank applies the updates the
//!    others sent it in the previous round (and propagates what they settle), then scans
//!    the next part of its slice for seeds and propagates them. A predecessor in another
//!    rank's slice is not touched but bucketed for its owner: one message per pair of ranks
//!    per round, 8 bytes per update. The step ends when, summed over the ranks, nothing was
//!    sent and no slice is left to scan.
//! 3. **Output** (`output`). Each rank writes its slice of the table into the shared `.tmp` file and
//!    computes the checksum digests of its chunks; rank 0 fills in the header with the
//!    whole-file checksum and renames the file into place. Resumable per level as a local
//!    build is.
//!
//! Why the tables do not depend on the number of ranks or threads: within step i every
//! update is a commutative counter decrement or a settlement by ±i, and which positions step
//! i settles is the attractor of the step — however the updates are ordered or delayed
//! within it, the same set results (docs/design.md, "Building a level").

pub mod comm;
mod in_memory;
mod low_memory;
mod output;

use std::ops::Range;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use awari_db::table::tmp_path;
use awari_db::{
    level_exists, level_path, level_size, Content, DbError, Expect, Levels, Rules, Table,
};

use crate::build::level::{run_level, Plan};
use crate::build::{BuildError, BuildOptions, LevelReport, Mode};
use crate::comm::Comm;
use crate::cost::NotOffered;
use crate::exits::ExitsStats;
use crate::lowmem;
use crate::progress::Progress;
use crate::settle::LevelCounts;
use crate::sys;
use in_memory::InMemorySlice;
use low_memory::LowMemorySlice;
use output::SharedOutput;

/// Granule of the slices by default: one checksum chunk, so that every rank digests its own
/// chunks of the table.
pub const GRANULE_SHIFT: u32 = 22;
/// Positions of its slice a rank scans for seeds per settling round.
const ROUND: u64 = 1 << 22;
/// Lower-level positions a rank streams per exits round.
const WINDOW: u64 = 1 << 24;
/// Positions per block of the output.
const WRITE_BLOCK: u64 = awari_db::table::CHECKSUM_CHUNK as u64;

/// How a level is cut into the ranks' slices.
#[derive(Clone, Debug)]
pub struct Partition {
    shift: u32,
    /// `bounds[r]..bounds[r + 1]`: the slice of rank r.
    bounds: Vec<u64>,
    /// The owner of each granule.
    owners: Vec<u32>,
}

impl Partition {
    /// Level `n` over `ranks` ranks, in slices of whole granules of 2^`shift` positions (the
    /// last one shorter), as equal as whole granules allow.
    pub fn new(n: u32, ranks: usize, shift: u32) -> Partition {
        let size = level_size(n);
        let units = size.div_ceil(1 << shift);
        let r = ranks as u64;
        let bounds: Vec<u64> = (0..=r)
            .map(|k| ((units * k / r) << shift).min(size))
            .collect();
        let mut owners = vec![0u32; units as usize];
        for k in 0..ranks {
            let (lo, hi) = (bounds[k] >> shift, bounds[k + 1].div_ceil(1 << shift));
            owners[lo as usize..hi as usize].fill(k as u32);
        }
        Partition {
            shift,
            bounds,
            owners,
        }
    }

    /// The slice of rank `r`.
    pub fn slice(&self, r: usize) -> Range<u64> {
        self.bounds[r]..self.bounds[r + 1]
    }

    /// The rank owning index `q`.
    #[inline]
    pub fn owner(&self, q: u64) -> usize {
        self.owners[(q >> self.shift) as usize] as usize
    }
}

/// What the communication of one level cost this rank, for the summary and the benchmark.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// 8-byte words this rank sent to other ranks (exit and settling updates).
    pub words_sent: u64,
    /// Non-empty messages this rank sent to other ranks.
    pub messages: u64,
    /// Exchanges (rounds) of the settling steps, over all steps.
    pub settle_rounds: u64,
    /// Exchanges of the exits phase.
    pub exit_rounds: u64,
}

/// One level built by a distributed build, as every rank sees it.
#[derive(Clone, Copy, Debug)]
pub struct DistributedLevel {
    /// Wins, draws and losses of the whole level.
    pub counts: LevelCounts,
    /// This rank's traffic.
    pub traffic: Traffic,
    /// Seconds of the exits phase and of settling (this rank).
    pub exits_seconds: f64,
    /// Seconds of settling.
    pub settle_seconds: f64,
}

/// What a rank's algorithm reports beside [`crate::build::level::BuiltLevel`].
#[derive(Clone, Copy, Debug, Default)]
struct RankCost {
    traffic: Traffic,
    settle_seconds: f64,
}

/// Build level `n` over the ranks of `comm` with the algorithm of `plan` (in memory, or
/// low-memory with its exit bucket: the same on every rank) on each rank's slice, through the
/// build's one driver ([`run_level`]), and write it into `dir` (shared by the ranks). Every rank
/// calls this with the same arguments; `lower` must hold the levels below.
#[allow(clippy::too_many_arguments)]
pub fn build_level_distributed(
    comm: &dyn Comm,
    dir: &Path,
    n: u32,
    rules: Rules,
    lower: &Levels,
    shift: u32,
    plan: Plan,
    progress: &dyn Progress,
) -> Result<DistributedLevel, BuildError> {
    let part = Partition::new(n, comm.size(), shift);
    let range = part.slice(comm.rank());
    let output = SharedOutput {
        comm,
        dir,
        n,
        rules,
        start: range.start,
    };
    let positions = range.end - range.start;
    progress.level(n, level_size(n));
    let (built, cost) = match plan {
        Plan::InMemory => {
            let mut slice = InMemorySlice::open(comm, n, rules, lower, &part)?;
            (
                run_level(&mut slice, &output, positions, progress)?,
                slice.cost,
            )
        }
        Plan::LowMemory { bucket } => {
            let mut slice = LowMemorySlice::open(comm, dir, n, rules, lower, &part, bucket)?;
            (
                run_level(&mut slice, &output, positions, progress)?,
                slice.cost,
            )
        }
        Plan::TwoBit { .. } => return Err(NotOffered(Mode::TwoBit).into()),
        Plan::OneBit { .. } => return Err(NotOffered(Mode::OneBit).into()),
    };
    Ok(DistributedLevel {
        counts: built.counts,
        traffic: cost.traffic,
        exits_seconds: built.exits.seconds,
        settle_seconds: cost.settle_seconds,
    })
}

/// Updates bucketed by their owner, gathered from the tasks of a parallel pass.
struct Outbox {
    lists: Mutex<Vec<Vec<u64>>>,
}

impl Outbox {
    fn new(ranks: usize) -> Outbox {
        Outbox {
            lists: Mutex::new(vec![Vec::new(); ranks]),
        }
    }

    /// Move a task's buckets in.
    fn add(&self, local: &mut [Vec<u64>]) {
        let mut lists = self.lists.lock().expect("no task panicked");
        for (all, mine) in lists.iter_mut().zip(local.iter_mut()) {
            all.append(mine);
        }
    }

    fn take(self) -> Vec<Vec<u64>> {
        self.lists.into_inner().expect("no task panicked")
    }
}

/// A settling update on the wire: the predecessor's index, and whether the child won.
#[inline]
fn settle_word(q: u64, child_won: bool) -> u64 {
    q | (u64::from(child_won) << 63)
}

/// An exit update on the wire: the parent's index (< 2^56) and its exit candidate.
#[inline]
fn exit_word(q: u64, exit: i8) -> u64 {
    q | (u64::from(exit as u8) << 56)
}

/// The end of a settling round: exchange `out`, and tell whether the step is over (summed over
/// the ranks, nothing was sent and no position is `left` to scan). Returns what came in.
fn end_round(
    comm: &dyn Comm,
    me: usize,
    out: Vec<Vec<u64>>,
    left: u64,
    traffic: &mut Traffic,
) -> (Vec<Vec<u64>>, bool) {
    let sent: u64 = out
        .iter()
        .enumerate()
        .filter(|&(r, _)| r != me)
        .map(|(_, l)| l.len() as u64)
        .sum();
    let totals = comm.sum(&[sent, left]);
    let inbox = exchange(comm, me, out, traffic);
    traffic.settle_rounds += 1;
    (inbox, totals == [0, 0])
}

/// Exchange `out` (counting this rank's traffic) and return what came in.
fn exchange(
    comm: &dyn Comm,
    me: usize,
    out: Vec<Vec<u64>>,
    traffic: &mut Traffic,
) -> Vec<Vec<u64>> {
    for (r, list) in out.iter().enumerate() {
        if r != me && !list.is_empty() {
            traffic.words_sent += list.len() as u64;
            traffic.messages += 1;
        }
    }
    comm.exchange(out)
}

/// Whether every rank got through a step: each passes its own outcome. A rank that failed
/// keeps its own error (the caller returns it); the others get [`BuildError::OtherRank`], so
/// that no rank is left waiting in a collective operation.
fn all_ok<T>(comm: &dyn Comm, mine: &Result<T, BuildError>) -> Result<(), BuildError> {
    let failed = comm.sum(&[u64::from(mine.is_err())])[0];
    if failed > 0 && mine.is_ok() {
        return Err(BuildError::OtherRank { ranks: failed });
    }
    Ok(())
}

/// What each algorithm needs of a rank for a slice of `len` positions of a level on `threads`
/// threads, bytes: in memory its states, 2 bytes a position, and a write block; low-memory
/// [`lowmem::slice_memory`]; no two-bit (the distributed build does not offer it).
pub(crate) fn slice_needs(len: u64, threads: usize) -> crate::cost::Needs {
    crate::cost::Needs {
        in_memory: 2 * len + len.min(WRITE_BLOCK),
        low_memory: lowmem::slice_memory(len, threads),
        two_bit: None,
        one_bit: None,
    }
}

/// Build every missing level `0..=opts.max_stones` of `opts.dir` (a directory every rank
/// sees) over the ranks of `comm`: every rank calls this with the same options. Levels already
/// present are kept, so an interrupted build resumes at the level it was building. Each level
/// is split into slices of whole granules of 2^`shift` positions (see [`Partition`]).
/// `on_level` is called after each level with its report and, for a level built, what it
/// cost this rank.
pub fn build_distributed(
    comm: &dyn Comm,
    opts: &BuildOptions,
    shift: u32,
    progress: &dyn Progress,
    mut on_level: impl FnMut(&LevelReport, Option<&DistributedLevel>),
) -> Result<Vec<LevelReport>, BuildError> {
    let me = comm.rank();
    let opened = (|| {
        if opts.depth {
            return Err(BuildError::DistributedDepth);
        }
        std::fs::create_dir_all(&opts.dir).map_err(|source| BuildError::CreateDir {
            dir: opts.dir.clone(),
            source,
        })?;
        let levels = Levels::open(&opts.dir, Some(opts.rules))?;
        if levels.is_raw() {
            return Err(DbError::NotADirectory {
                dir: opts.dir.clone(),
                reason: "it holds published scores.N files; build into another directory".into(),
            }
            .into());
        }
        Ok(levels)
    })();
    all_ok(comm, &opened)?;
    let mut levels = opened?;
    let mut reports = Vec::new();
    for n in (0..=opts.max_stones.min(48)).filter(|&n| level_exists(n)) {
        let path = level_path(&opts.dir, n);
        // Rank 0 decides what is present, so that all ranks agree.
        let present = comm.sum(&[u64::from(me == 0 && levels.get(n).is_some())])[0] > 0;
        let expect = Expect {
            rules: Some(opts.rules),
            seeds: Some(n),
            content: Some(Content::Values),
        };
        if present {
            if levels.get(n).is_none() {
                levels.insert(Table::open(&path, expect)?);
            }
            let r = LevelReport::kept(n);
            on_level(&r, None);
            reports.push(r);
            continue;
        }
        if me == 0 {
            let _ = std::fs::remove_file(tmp_path(&path));
        }
        // Rank 0 chooses the algorithm and the exit bucket for the largest slice, within its
        // memory budget (--memory is per rank), and tells the others.
        let part = Partition::new(n, comm.size(), shift);
        let largest = (0..comm.size())
            .map(|r| part.slice(r).count() as u64)
            .max()
            .unwrap_or(0);
        let threads = rayon::current_num_threads();
        let budget = opts.memory.or_else(sys::memory_available);
        // No two-bit here: the tie-break between the out-of-core algorithms is never asked.
        let choice =
            crate::cost::choose(opts.mode, slice_needs(largest, threads), budget, || false)
                .map_err(BuildError::from)
                .and_then(|c| crate::build::fitting(n, c, budget))
                .map(|mode| match mode {
                    Mode::InMemory => 0,
                    _ => lowmem::slice_bucket(largest, threads, budget),
                });
        let mine = if me == 0 { choice } else { Ok(0) };
        all_ok(comm, &mine)?;
        // 0: in memory; else the low-memory exit bucket.
        let plan = match comm.sum(&[mine?])[0] {
            0 => Plan::InMemory,
            bucket => Plan::LowMemory { bucket },
        };
        sys::reset_peak_rss();
        let sampler = sys::AnonPeak::start();
        let start = Instant::now();
        let built = build_level_distributed(
            comm, &opts.dir, n, opts.rules, &levels, shift, plan, progress,
        )?;
        let seconds = start.elapsed().as_secs_f64();
        let opened = Table::open(&path, expect).map_err(BuildError::from);
        all_ok(comm, &opened)?;
        levels.insert(opened?);
        let r = LevelReport {
            seeds: n,
            positions: level_size(n),
            seconds: Some(seconds),
            counts: Some(built.counts),
            peak_rss: sys::peak_rss(),
            max_depth: None,
            mode: Some(plan.mode()),
            peak_anon: sampler.finish(),
            exits: Some(ExitsStats {
                seconds: built.exits_seconds,
                bytes_read: None,
                lower_bytes: crate::exits::lower_positions(n),
                passes: 1,
            }),
            io: None,
            resumed: None,
            compressed: None,
        };
        on_level(&r, Some(&built));
        reports.push(r);
    }
    Ok(reports)
}
