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
//! Each rank runs the in-memory algorithm of [`crate::level`] on its slice, with rayon threads
//! inside, 2 bytes per position of the slice (or the low-memory algorithm of [`crate::lowmem`]
//! on it, 0.67 bytes per position and a work file, in the same phases and rounds:
//! [`build_level_distributed_low_memory`]):
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
//! 3. **Output.** Each rank writes its slice of the table into the shared `.tmp` file and
//!    computes the checksum digests of its chunks; rank 0 fills in the header with the
//!    whole-file checksum and renames the file into place. Resumable per level as a local
//!    build is.
//!
//! Why the tables do not depend on the number of ranks or threads: within step i every
//! update is a commutative counter decrement or a settlement by ±i, and which positions step
//! i settles is the attractor of the step — however the updates are ordered or delayed
//! within it, the same set results (docs/design.md, "Building a level").

pub mod comm;

use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicI8, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

use awari_db::table::tmp_path;
use awari_db::{
    level_exists, level_path, level_size, Board, Content, DbError, Expect, Header, Level, Levels,
    QuietMoves, Rules, SharedTable, Table,
};
use rayon::prelude::*;

use crate::build::{BuildError, BuildOptions, LevelReport, Mode};
use crate::comm::Comm;
use crate::exits::ExitsStats;
use crate::exits::{forward, CaptureStream};
use crate::grain::MOVE_TASK;
use crate::lowmem::{self, LowMemoryBuilder};
use crate::progress::Progress;
use crate::settle::{
    propagate_diverting, raise_exit, scan_seeds, seed_boards, unsettled, update_word, value_of,
    BuilderError, LevelCounts, Settle,
};
use crate::state::StateArray;
use crate::sys;

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

/// The state of one rank's slice of the level in progress.
struct Slice<'p> {
    level: Level,
    rules: Rules,
    lo: u64,
    state: StateArray,
    part: &'p Partition,
    me: usize,
}

impl Settle for Slice<'_> {
    const PREFETCHES: bool = cfg!(target_arch = "x86_64");

    #[inline]
    fn touch(&self, q: u64) -> u64 {
        u64::from(self.state.words()[(q - self.lo) as usize].load(Relaxed))
    }

    #[inline]
    fn prefetch(&self, q: u64) {
        self.state.prefetch((q - self.lo) as usize);
    }

    #[inline]
    fn update(&self, q: u64, i: i8, child_won: bool) -> bool {
        update_word(&self.state.words()[(q - self.lo) as usize], i, child_won)
    }
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

impl Slice<'_> {
    fn words(&self) -> &[std::sync::atomic::AtomicU16] {
        self.state.words()
    }

    /// The slice's words in parallel work items, each with the index of its first position.
    fn chunks(
        &self,
    ) -> impl IndexedParallelIterator<Item = (u64, &[std::sync::atomic::AtomicU16])> {
        let lo = self.lo;
        self.words()
            .par_chunks(MOVE_TASK as usize)
            .enumerate()
            .map(move |(c, w)| (lo + c as u64 * MOVE_TASK, w))
    }

    fn exchange(
        &self,
        comm: &dyn Comm,
        out: Vec<Vec<u64>>,
        traffic: &mut Traffic,
    ) -> Vec<Vec<u64>> {
        exchange(comm, self.me, out, traffic)
    }

    /// Phase 1 on this rank (see the module documentation).
    fn compute_exits(
        &self,
        comm: &dyn Comm,
        stream: &CaptureStream<'_>,
        traffic: &mut Traffic,
        progress: &dyn Progress,
    ) -> Result<(), awari_db::TableError> {
        self.chunks().for_each(|(start, words)| {
            let boards = self.level.boards(start..start + words.len() as u64);
            let mut counter = QuietMoves::new();
            for (word, board) in words.iter().zip(boards) {
                let (exit, quiet) = forward(&board, self.rules, &mut counter);
                word.store(unsettled(exit, quiet), Relaxed);
            }
            progress.advance(words.len() as u64);
        });
        let ranks = comm.size();
        let (lo, words) = (self.lo, self.words());
        // A corrupt lower block is reported after the last round, so that every rank still
        // takes part in every exchange.
        let mut failed = Ok(());
        for window in stream.part_windows(self.me, ranks, WINDOW) {
            let outbox = Outbox::new(ranks);
            if let Some((source, positions)) = window {
                let len = positions.end - positions.start;
                let ran = stream.run_window(source, positions, |batch| {
                    let mut remote: Vec<Vec<u64>> = vec![Vec::new(); ranks];
                    for &(q, exit) in batch {
                        let owner = self.part.owner(q);
                        if owner == self.me {
                            raise_exit(&words[(q - lo) as usize], exit);
                        } else {
                            remote[owner].push(exit_word(q, exit));
                        }
                    }
                    outbox.add(&mut remote);
                });
                failed = failed.and(ran);
                progress.advance(len);
            }
            let inbox = self.exchange(comm, outbox.take(), traffic);
            traffic.exit_rounds += 1;
            inbox.par_iter().flatten().for_each(|&w| {
                let q = w & ((1 << 56) - 1);
                raise_exit(&words[(q - lo) as usize], (w >> 56) as u8 as i8);
            });
        }
        failed
    }

    /// Apply the settling updates other ranks sent (`inbox`) and the seeds of `scan` (a range
    /// of this slice) at step `i`, propagating everything they settle here; returns the
    /// updates for other ranks, by owner, and how many positions were settled.
    fn settle_round(&self, i: i8, inbox: &[Vec<u64>], scan: Range<u64>) -> (Vec<Vec<u64>>, u64) {
        let ranks = self.part.bounds.len() - 1;
        let outbox = Outbox::new(ranks);
        let settled = std::sync::atomic::AtomicU64::new(0);
        let run = |stack: &mut Vec<(Board, bool)>, seeds: u64| {
            let mut remote: Vec<Vec<u64>> = vec![Vec::new(); ranks];
            let count = seeds
                + propagate_diverting(self, &self.level, self.rules, i, stack, &mut |q, won| {
                    let owner = self.part.owner(q);
                    if owner == self.me {
                        return false;
                    }
                    remote[owner].push(settle_word(q, won));
                    true
                });
            outbox.add(&mut remote);
            settled.fetch_add(count, Relaxed);
        };
        // Updates from the other ranks: touched first in groups, so their misses overlap.
        let incoming: Vec<u64> = inbox.concat();
        incoming.par_chunks(1 << 12).for_each(|group| {
            let mut stack = Vec::new();
            for sub in group.chunks(64) {
                let mut touch = 0u64;
                for &w in sub {
                    touch |= self.touch(w & !(1 << 63));
                }
                std::hint::black_box(touch);
                for &w in sub {
                    let (q, won) = (w & !(1 << 63), w >> 63 == 1);
                    if self.update(q, i, won) {
                        stack.push((self.level.unrank(q), !won));
                    }
                }
            }
            let seeds = stack.len() as u64;
            run(&mut stack, seeds);
        });
        // This round's part of the slice: its seeds.
        let words = &self.words()[(scan.start - self.lo) as usize..(scan.end - self.lo) as usize];
        words
            .par_chunks(MOVE_TASK as usize)
            .enumerate()
            .for_each(|(c, w)| {
                let start = scan.start + c as u64 * MOVE_TASK;
                let seeds = scan_seeds(i, w, |_| {});
                if !seeds.is_empty() {
                    let mut stack = seed_boards(&self.level, start, seeds.iter().copied());
                    run(&mut stack, seeds.len() as u64);
                }
            });
        (outbox.take(), settled.into_inner())
    }

    /// Phase 2 on this rank: steps n … 1 in rounds (see the module documentation).
    fn settle(&self, comm: &dyn Comm, traffic: &mut Traffic, progress: &dyn Progress) {
        let (lo, hi) = (self.lo, self.lo + self.words().len() as u64);
        for i in (1..=self.level.seeds() as i8).rev() {
            let mut next = lo;
            let mut inbox: Vec<Vec<u64>> = Vec::new();
            loop {
                let scan = next..(next + ROUND).min(hi);
                next = scan.end;
                let (out, settled) = self.settle_round(i, &inbox, scan);
                progress.advance(settled);
                let done;
                (inbox, done) = end_round(comm, self.me, out, hi - next, traffic);
                if done {
                    break;
                }
            }
        }
    }
}

/// Build level `n` over the ranks of `comm` and write it into `dir` (shared by the ranks):
/// every rank calls this with the same arguments. `lower` must hold the levels below.
pub fn build_level_distributed(
    comm: &dyn Comm,
    dir: &Path,
    n: u32,
    rules: Rules,
    lower: &Levels,
    shift: u32,
    progress: &dyn Progress,
) -> Result<DistributedLevel, BuildError> {
    let (me, ranks) = (comm.rank(), comm.size());
    let part = Partition::new(n, ranks, shift);
    let range = part.slice(me);
    let setup = CaptureStream::new(n, rules, lower)
        .map_err(BuildError::from)
        .and_then(|stream| {
            let state =
                StateArray::new((range.end - range.start) as usize).map_err(BuilderError::Alloc)?;
            Ok((stream, state))
        });
    all_ok(comm, &setup)?;
    let (stream, state) = setup?;
    let slice = Slice {
        level: Level::new(n),
        rules,
        lo: range.start,
        state,
        part: &part,
        me,
    };
    let mut traffic = Traffic::default();
    progress.level(n, level_size(n));
    let t = Instant::now();
    progress.phase(
        "exits",
        range.end - range.start + stream.positions() / ranks as u64,
    );
    slice.compute_exits(comm, &stream, &mut traffic, progress)?;
    let exits_seconds = t.elapsed().as_secs_f64();
    progress.phase("settle", range.end - range.start);
    slice.settle(comm, &mut traffic, progress);
    let settle_seconds = t.elapsed().as_secs_f64() - exits_seconds;
    progress.phase("write", range.end - range.start);
    let counts = write_distributed(comm, dir, n, rules, range.start, |sink| {
        for block in slice.words().chunks(WRITE_BLOCK as usize) {
            let bytes: Vec<u8> = block
                .iter()
                .map(|w| value_of(w.load(Relaxed)) as u8)
                .collect();
            sink(&bytes)?;
            progress.advance(block.len() as u64);
        }
        Ok(())
    })?;
    Ok(DistributedLevel {
        counts,
        traffic,
        exits_seconds,
        settle_seconds,
    })
}

/// Build level `n` over the ranks of `comm` with the low-memory algorithm on each rank's slice
/// (see [`crate::lowmem`]: 0.67 bytes of RAM per position of the slice, its exits and values
/// in a work file `level-NN.work-RANK.tmp` in `dir`), exit buckets of `bucket` positions (the
/// same on every rank). Every rank calls this with the same arguments.
#[allow(clippy::too_many_arguments)]
pub fn build_level_distributed_low_memory(
    comm: &dyn Comm,
    dir: &Path,
    n: u32,
    rules: Rules,
    lower: &Levels,
    shift: u32,
    bucket: u64,
    progress: &dyn Progress,
) -> Result<DistributedLevel, BuildError> {
    let (me, ranks) = (comm.rank(), comm.size());
    let part = Partition::new(n, ranks, shift);
    let range = part.slice(me);
    let work = dir.join(format!("level-{n:02}.work-{me}.tmp"));
    let setup = LowMemoryBuilder::slice(work, n, rules, lower, bucket, range.clone())
        .map_err(BuildError::from);
    all_ok(comm, &setup)?;
    let builder = setup?;
    let bucket = builder.bucket();
    let stream = CaptureStream::new(n, rules, lower)?;
    let mut traffic = Traffic::default();
    progress.level(n, level_size(n));
    let t = Instant::now();
    // Every rank makes as many passes: enough for the largest slice.
    let largest = (0..ranks)
        .map(|r| part.slice(r).count() as u64)
        .max()
        .unwrap_or(0);
    let passes = largest.div_ceil(bucket.max(1)).max(1);
    progress.phase(
        "exits",
        range.end - range.start + passes * stream.positions() / ranks as u64,
    );
    let mut exits: Vec<AtomicI8> = Vec::new();
    for b in 0..passes {
        let mine = builder.bucket_range(b);
        builder.forward_bucket(mine.clone(), &mut exits, progress);
        // Bucket b of rank r: the b-th bucket of its slice (the same size on every rank).
        let in_bucket = |q: u64, r: usize| {
            let lo = part.slice(r).start + b * bucket;
            q >= lo && q < lo + bucket
        };
        let mut failed = Ok(());
        for window in stream.part_windows(me, ranks, WINDOW) {
            let outbox = Outbox::new(ranks);
            if let Some((source, positions)) = window {
                let len = positions.end - positions.start;
                let ran = stream.run_window(source, positions, |batch| {
                    let mut remote: Vec<Vec<u64>> = vec![Vec::new(); ranks];
                    for &(q, exit) in batch {
                        let owner = part.owner(q);
                        if !in_bucket(q, owner) {
                            continue;
                        }
                        if owner == me {
                            LowMemoryBuilder::raise(&exits, mine.start, q, exit);
                        } else {
                            remote[owner].push(exit_word(q, exit));
                        }
                    }
                    outbox.add(&mut remote);
                });
                failed = failed.and(ran);
                progress.advance(len);
            }
            let inbox = exchange(comm, me, outbox.take(), &mut traffic);
            traffic.exit_rounds += 1;
            inbox.par_iter().flatten().for_each(|&w| {
                let q = w & ((1 << 56) - 1);
                LowMemoryBuilder::raise(&exits, mine.start, q, (w >> 56) as u8 as i8);
            });
        }
        let written = failed
            .and_then(|()| builder.write_bucket(mine, &exits))
            .map_err(BuildError::from);
        all_ok(comm, &written)?;
        written?;
    }
    drop(exits);
    let exits_seconds = t.elapsed().as_secs_f64();
    progress.phase("settle", range.end - range.start);
    let per_round = ROUND.div_ceil(lowmem::STREAM_CHUNK);
    let divert = |remote: &mut Vec<Vec<u64>>, q: u64, won: bool| {
        let owner = part.owner(q);
        if owner == me {
            return false;
        }
        remote[owner].push(settle_word(q, won));
        true
    };
    for i in (1..=n as i8).rev() {
        let mut next = range.start;
        let mut inbox: Vec<Vec<u64>> = Vec::new();
        loop {
            let outbox = Outbox::new(ranks);
            let incoming: Vec<u64> = inbox.concat();
            incoming.par_chunks(1 << 12).for_each(|group| {
                let mut remote = vec![Vec::new(); ranks];
                let settled =
                    builder.apply_updates(i, group, &mut |q, won| divert(&mut remote, q, won));
                outbox.add(&mut remote);
                progress.advance(settled);
            });
            let (chunks, after) = builder.chunks_from(next, per_round);
            next = after;
            let streamed: Result<(), BuildError> = chunks.par_iter().try_for_each(|&(s, e)| {
                let mut remote = vec![Vec::new(); ranks];
                let settled = builder
                    .stream_chunk(Some(i), s, e, &mut |q, won| divert(&mut remote, q, won))?;
                outbox.add(&mut remote);
                progress.advance(settled);
                Ok(())
            });
            all_ok(comm, &streamed)?;
            streamed?;
            let out = outbox.take();
            let done;
            (inbox, done) = end_round(comm, me, out, range.end - next, &mut traffic);
            if done {
                break;
            }
        }
    }
    // The last pass writes the values step 1 settled (no propagation, no exchange).
    let (chunks, _) = builder.chunks_from(range.start, u64::MAX / lowmem::STREAM_CHUNK);
    let finished: Result<(), BuildError> = chunks
        .par_iter()
        .try_for_each(|&(s, e)| builder.finish_chunk(s, e).map_err(BuildError::from));
    all_ok(comm, &finished)?;
    finished?;
    let settle_seconds = t.elapsed().as_secs_f64() - exits_seconds;
    progress.phase("write", range.end - range.start);
    let counts = write_distributed(comm, dir, n, rules, range.start, |sink| {
        builder
            .write_values(|d| {
                progress.advance(d.len() as u64);
                sink(d)
            })
            .map(|_| ())
    })?;
    Ok(DistributedLevel {
        counts,
        traffic,
        exits_seconds,
        settle_seconds,
    })
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

/// Writes a rank's slice of the table in order, in blocks that end on checksum-chunk
/// boundaries, digesting the whole chunks it holds.
struct SliceSink<'t> {
    table: &'t SharedTable,
    /// Data offset of the next byte.
    at: u64,
    buf: Vec<u8>,
    /// (chunk index, digest) pairs.
    digests: Vec<u64>,
    counts: LevelCounts,
}

impl<'t> SliceSink<'t> {
    fn new(table: &'t SharedTable, start: u64) -> SliceSink<'t> {
        SliceSink {
            table,
            at: start,
            buf: Vec::with_capacity(WRITE_BLOCK as usize),
            digests: Vec::new(),
            counts: LevelCounts::default(),
        }
    }

    fn push(&mut self, mut data: &[u8]) -> Result<(), awari_db::TableError> {
        while !data.is_empty() {
            let pos = self.at + self.buf.len() as u64;
            let room = ((pos / WRITE_BLOCK + 1) * WRITE_BLOCK - pos) as usize;
            let take = room.min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if take == room {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), awari_db::TableError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.buf.iter().for_each(|&v| self.counts.add(v as i8));
        if let Some(d) = self.table.write_at(self.at, &self.buf)? {
            self.digests.extend([self.at / WRITE_BLOCK, d]);
        }
        self.at += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    fn finish(mut self) -> Result<(LevelCounts, Vec<u64>), awari_db::TableError> {
        self.flush()?;
        self.table.sync()?;
        Ok((self.counts, self.digests))
    }
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

/// Phase 3: every rank writes its slice; rank 0 finishes the file.
fn write_distributed(
    comm: &dyn Comm,
    dir: &Path,
    n: u32,
    rules: Rules,
    start: u64,
    fill: impl FnOnce(
        &mut dyn FnMut(&[u8]) -> Result<(), awari_db::TableError>,
    ) -> Result<(), awari_db::TableError>,
) -> Result<LevelCounts, BuildError> {
    let path = level_path(dir, n);
    let header = Header::values(rules, n);
    let me = comm.rank();
    let created: Result<Option<SharedTable>, BuildError> = if me == 0 {
        SharedTable::create(&path, header)
            .map(Some)
            .map_err(Into::into)
    } else {
        Ok(None)
    };
    all_ok(comm, &created)?;
    let table = match created? {
        Some(t) => Ok(t),
        None => SharedTable::open(&path, header).map_err(BuildError::from),
    };
    let written = table.and_then(|table| {
        let mut sink = SliceSink::new(&table, start);
        fill(&mut |d: &[u8]| sink.push(d))?;
        let (counts, digests) = sink.finish()?;
        Ok((table, counts, digests))
    });
    all_ok(comm, &written)?;
    let (table, counts, digests) = written?;
    // Every rank's slice is on disk: rank 0 gathers the digests and finishes the file.
    let mut out = vec![Vec::new(); comm.size()];
    out[0] = digests;
    let got = comm.exchange(out);
    let finished: Result<(), BuildError> = if me == 0 {
        let mut all = vec![None; table.chunks()];
        for pair in got.concat().chunks(2) {
            all[pair[0] as usize] = Some(pair[1]);
        }
        table.finish(&all).map(|_| ()).map_err(Into::into)
    } else {
        Ok(())
    };
    all_ok(comm, &finished)?;
    finished?;
    let c = comm.sum(&[counts.wins, counts.draws, counts.losses]);
    Ok(LevelCounts {
        wins: c[0],
        draws: c[1],
        losses: c[2],
    })
}

/// What each algorithm needs of a rank for a slice of `len` positions of a level on `threads`
/// threads, bytes: in memory its states, 2 bytes a position, and a write block; low-memory
/// [`lowmem::slice_memory`]; no two-bit (the distributed build does not offer it).
pub(crate) fn slice_needs(len: u64, threads: usize) -> crate::cost::Needs {
    crate::cost::Needs {
        in_memory: 2 * len + len.min(WRITE_BLOCK),
        low_memory: lowmem::slice_memory(len, threads),
        two_bit: None,
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
        let bucket = comm.sum(&[mine?])[0];
        sys::reset_peak_rss();
        let sampler = sys::AnonPeak::start();
        let start = Instant::now();
        let built = if bucket == 0 {
            build_level_distributed(comm, &opts.dir, n, opts.rules, &levels, shift, progress)?
        } else {
            build_level_distributed_low_memory(
                comm, &opts.dir, n, opts.rules, &levels, shift, bucket, progress,
            )?
        };
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
            mode: Some(if bucket == 0 {
                Mode::InMemory
            } else {
                Mode::LowMemory
            }),
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
