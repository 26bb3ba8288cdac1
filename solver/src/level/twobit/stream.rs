//! The stream of a settling step i: the exit lists of +i and −i read in order, record by
//! record (one chunk of the level each) in parallel. A position of the +i list that is not
//! settled yet is won, a seed; one of the −i list that is open becomes losable and is lost,
//! a seed, if its children are all won already (at the first step the positions without an
//! exit become losable too). The seeds go to the seed files, which the propagation reads
//! back, and to the log with their values (see `log`). With one bit (see `codes`) a lost
//! seed is not settled here: the propagation publishes it, and logs it then.

use awari_db::{Board, TableError};
use rayon::prelude::*;

use super::codes::StateBits;
use super::log::{entry, SettledLog};
use super::work_files::{ExitList, RecordWriter, SEEDS_LOST, SEEDS_WON};
use super::{TwoBit, CHUNK};
use crate::seed_records::{decode_seeds, encode_seeds};
use crate::settle::seed_boards;

/// Bytes of a record file read and worked on in parallel at once: 256 KiB per thread (what
/// a batch's records decode to, and the seeds they yield, are 8 bytes a position, their
/// boards 16 more); 32 KiB with one bit, whose budget leaves little beside the states.
pub(super) fn list_batch(bits: StateBits) -> usize {
    let per_thread = match bits {
        StateBits::Two => 256 << 10,
        StateBits::One => 32 << 10,
    };
    per_thread * rayon::current_num_threads()
}

impl TwoBit<'_> {
    /// The stream of step `i`; returns the seeds it found. With depths the lost seeds are
    /// found first, so that their loss tests see only the wins of the steps before: a child
    /// won by this stream is of depth 0, which makes its loser one of depth 1 at least (the
    /// propagation finds it).
    pub(super) fn stream_step(&self, i: u32, log: &SettledLog) -> Result<u64, TableError> {
        let mut seeds = 0;
        if self.depths {
            seeds += self.stream_lost(i, log)?;
            seeds += self.stream_won(i, log)?;
        } else {
            seeds += self.stream_won(i, log)?;
            seeds += self.stream_lost(i, log)?;
        }
        Ok(seeds)
    }

    /// The +i list: each position not settled yet is won, a seed.
    fn stream_won(&self, i: u32, log: &SettledLog) -> Result<u64, TableError> {
        let mut won = RecordWriter::open(&self.work.join(SEEDS_WON), false, &self.io)?;
        let seeds = self.each_record(
            ExitList::Value(i as i8),
            Some((&mut won, i, Some(log))),
            |c, offsets| {
                let start = u64::from(c) * CHUNK;
                offsets
                    .into_iter()
                    .filter(|&(k, _)| self.settle(start + u64::from(k), true))
                    .map(|(k, _)| (k, true))
                    .collect()
            },
        )?;
        won.finish()?;
        Ok(seeds)
    }

    /// The −i list (at the first step, the positions without an exit made losable before):
    /// each position becomes losable, and is lost, a seed, if its children are all won.
    fn stream_lost(&self, i: u32, log: &SettledLog) -> Result<u64, TableError> {
        let one_bit = self.bits == StateBits::One;
        let first = i == self.level.seeds() && !one_bit;
        let e = i as i8;
        if first {
            self.each_record(ExitList::NoExit, None, |c, offsets| {
                let start = u64::from(c) * CHUNK;
                for (k, _) in offsets {
                    self.make_losable(start + u64::from(k));
                }
                Vec::new()
            })?;
        }
        let mut lost = RecordWriter::open(&self.work.join(SEEDS_LOST), false, &self.io)?;
        let seeds = self.each_record(
            ExitList::Value(-e),
            Some((&mut lost, i, (!one_bit).then_some(log))),
            |c, offsets| {
                let start = u64::from(c) * CHUNK;
                let candidates: Vec<(u32, bool)> = offsets
                    .into_iter()
                    .filter(|&(k, _)| self.make_losable(start + u64::from(k)))
                    .collect();
                // The loss tests (children read at random, pipelined; a child won in another
                // chunk later is tested again by its propagation). A child won stays won, so
                // a test that passed still holds when its position is settled.
                let boards: Vec<Board> =
                    seed_boards(&self.level, start, candidates.iter().copied())
                        .into_iter()
                        .map(|(board, _)| board)
                        .collect();
                self.all_children_won(&boards)
                    .into_iter()
                    .zip(&candidates)
                    .filter(|&(lost, &(k, _))| {
                        let q = start + u64::from(k);
                        // One bit: unsettled still, so every child read settled is won.
                        lost && if one_bit {
                            !self.is_settled(q)
                        } else {
                            self.settle(q, false)
                        }
                    })
                    .map(|(_, &(k, _))| (k, false))
                    .collect()
            },
        )?;
        lost.finish()?;
        Ok(seeds)
    }

    /// Run `f` on every record of exit list `list` (its chunk and offsets), in parallel a
    /// batch at a time; what it returns (the seeds of step i, in increasing order) goes to
    /// the seed file `out`, in the list's chunk order, and to the log if given. Returns the
    /// seeds.
    fn each_record(
        &self,
        list: ExitList,
        mut out: Option<(&mut RecordWriter, u32, Option<&SettledLog>)>,
        f: impl Fn(u32, Vec<(u32, bool)>) -> Vec<(u32, bool)> + Sync,
    ) -> Result<u64, TableError> {
        let path = self.work.join(list.file_name());
        if !path.exists() {
            return Ok(0);
        }
        let mut reader = self.records(&path)?;
        let mut seeds = 0;
        loop {
            let batch = reader.batch(list_batch(self.bits))?;
            if batch.is_empty() {
                return Ok(seeds);
            }
            let found: Vec<(u32, Vec<(u32, bool)>)> = batch
                .par_iter()
                .map(|(c, body)| {
                    (
                        *c,
                        f(
                            *c,
                            decode_seeds(
                                body,
                                crate::seed_records::chunk_limit(*c, self.level.size()),
                            ),
                        ),
                    )
                })
                .collect();
            let Some((out, i, log)) = out.as_mut() else {
                continue;
            };
            let mut entries = Vec::new();
            for (c, s) in found.into_iter().filter(|(_, s)| !s.is_empty()) {
                seeds += s.len() as u64;
                out.write(&encode_seeds(c, &s))?;
                let Some(log) = log else {
                    continue;
                };
                let start = u64::from(c) * CHUNK;
                entries.clear();
                entries.extend(
                    s.iter()
                        .map(|&(k, won)| entry(start + u64::from(k), *i, won, 0)),
                );
                log.add(&entries)?;
            }
            if let Some(log) = log {
                log.flush_if_full()?;
            }
        }
    }
}
