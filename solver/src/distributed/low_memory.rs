//! The low-memory algorithm on one rank's slice of a distributed level (see the module above
//! and [`crate::lowmem`]: 0.67 bytes of RAM per position of the slice, its exits and values in
//! a work file `level-NN.work-RANK.tmp`), in the same phases and rounds as the in-memory one;
//! the lowmem builder's slice methods do the work on each part.

use std::path::Path;
use std::sync::atomic::AtomicI8;
use std::time::Instant;

use awari_db::{Levels, Rules};
use rayon::prelude::*;

use super::{
    all_ok, end_round, exchange, exit_word, settle_word, Outbox, Partition, RankCost, Traffic,
    ROUND, WINDOW,
};
use crate::build::level::{Algorithm, Sink, Solved};
use crate::build::BuildError;
use crate::comm::Comm;
use crate::exits::CaptureStream;
use crate::lowmem::{self, LowMemoryBuilder};
use crate::progress::Progress;

/// The low-memory algorithm on one rank's slice.
pub(super) struct LowMemorySlice<'p> {
    builder: LowMemoryBuilder<'p>,
    stream: CaptureStream<'p>,
    comm: &'p dyn Comm,
    part: &'p Partition,
    n: u32,
    /// What the communication cost, and the seconds of settling.
    pub(super) cost: RankCost,
}

impl<'p> LowMemorySlice<'p> {
    /// Prepare this rank's slice of level `n` of `part`, its work file in `dir`, exit buckets
    /// of `bucket` positions (the same on every rank). Every rank calls it.
    pub(super) fn open(
        comm: &'p dyn Comm,
        dir: &Path,
        n: u32,
        rules: Rules,
        lower: &'p Levels,
        part: &'p Partition,
        bucket: u64,
    ) -> Result<LowMemorySlice<'p>, BuildError> {
        let me = comm.rank();
        let work = dir.join(format!("level-{n:02}.work-{me}.tmp"));
        let setup = LowMemoryBuilder::slice(work, n, rules, lower, bucket, part.slice(me))
            .map_err(BuildError::from);
        all_ok(comm, &setup)?;
        Ok(LowMemorySlice {
            builder: setup?,
            stream: CaptureStream::new(n, rules, lower)?,
            comm,
            part,
            n,
            cost: RankCost::default(),
        })
    }
}

impl Algorithm for LowMemorySlice<'_> {
    fn solve(&mut self, progress: &dyn Progress) -> Result<Solved, BuildError> {
        let (builder, stream, comm, part, n) =
            (&self.builder, &self.stream, self.comm, self.part, self.n);
        let (me, ranks) = (comm.rank(), comm.size());
        let range = part.slice(me);
        let bucket = builder.bucket();
        let mut traffic = Traffic::default();
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
        self.cost = RankCost {
            traffic,
            settle_seconds,
        };
        Ok(Solved::fresh(crate::exits::ExitsStats {
            seconds: exits_seconds,
            bytes_read: None,
            lower_bytes: crate::exits::lower_positions(n),
            passes: passes as u32,
        }))
    }

    fn write_values(&mut self, sink: &mut Sink) -> Result<(), BuildError> {
        Ok(self.builder.write_values(sink)?)
    }

    fn work_io(&self) -> (u64, u64) {
        self.builder.work_io()
    }
}
