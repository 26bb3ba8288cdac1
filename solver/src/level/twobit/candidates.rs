//! The candidates of a one-bit step (see `codes`): unsettled positions with an exit whose
//! children are all won, gathered in RAM as the propagation finds them. A **round** looks
//! them up in the exit lists of −n … −i on disk (read in order, a chunk's record decoded
//! only where a candidate is in the chunk): those found there are losable, so lost; each is
//! published (its predecessors won, then itself) and propagated, which may find more
//! candidates, until a round finds none. A candidate whose exit is above −i is dropped: if
//! its exit is below 0 the stream of that exit's step finds it lost there. Rounds run when
//! the candidates reach their capacity and at the end of the step's propagation.

use std::sync::Mutex;

use awari_db::TableError;
use rayon::prelude::*;

use super::log::SettledLog;
use super::stream::list_batch;
use super::work_files::ExitList;
use super::{TwoBit, CHUNK};
use crate::progress::Progress;
use crate::seed_records::{chunk_limit, decode_seeds};

/// The candidates gathered since the last round.
pub(super) struct Candidates {
    gathered: Mutex<Vec<u64>>,
    /// Candidates gathered before a round is due (see [`Candidates::full`]).
    capacity: usize,
}

impl Candidates {
    pub(super) fn new(capacity: usize) -> Candidates {
        Candidates {
            gathered: Mutex::new(Vec::new()),
            capacity,
        }
    }

    pub(super) fn add(&self, found: &[u64]) {
        if !found.is_empty() {
            self.gathered
                .lock()
                .expect("candidates lock")
                .extend_from_slice(found);
        }
    }

    /// Whether a round is due.
    pub(super) fn full(&self) -> bool {
        self.gathered.lock().expect("candidates lock").len() >= self.capacity
    }

    /// The candidates gathered, sorted and without repeats; none are left.
    fn take(&self) -> Vec<u64> {
        let mut c = std::mem::take(&mut *self.gathered.lock().expect("candidates lock"));
        c.sort_unstable();
        c.dedup();
        c
    }
}

impl TwoBit<'_> {
    /// Rounds until no candidate is left (see the module documentation); returns the
    /// positions they settled.
    pub(super) fn resolve_candidates(
        &self,
        i: u32,
        log: &SettledLog,
        progress: &dyn Progress,
    ) -> Result<u64, TableError> {
        let mut total = 0;
        loop {
            let candidates = self.candidates.take();
            if candidates.is_empty() {
                return Ok(total);
            }
            let lost = self.losable(&candidates, i)?;
            // Per chunk, the offsets lost: propagated in parallel, each chunk's in order.
            let mut chunks: Vec<(u32, Vec<(u32, bool)>)> = Vec::new();
            for q in lost {
                let (c, k) = ((q / CHUNK) as u32, (q % CHUNK) as u32);
                match chunks.last_mut() {
                    Some((last, offsets)) if *last == c => offsets.push((k, false)),
                    _ => chunks.push((c, vec![(k, false)])),
                }
            }
            total += chunks
                .into_par_iter()
                .map(|(c, seeds)| self.propagate_chunk(c, &seeds, i, log, progress))
                .sum::<Result<u64, TableError>>()?;
            log.flush_if_full()?;
        }
    }

    /// The `candidates` (sorted) in the exit lists of −n … −i, in increasing order.
    fn losable(&self, candidates: &[u64], i: u32) -> Result<Vec<u64>, TableError> {
        let n = self.level.seeds();
        let mut found = Vec::new();
        for e in i..=n {
            let path = self.work.join(ExitList::Value(-(e as i8)).file_name());
            if !path.exists() {
                continue;
            }
            let mut reader = self.records(&path)?;
            loop {
                let batch = reader.batch(list_batch())?;
                if batch.is_empty() {
                    break;
                }
                let hits: Vec<Vec<u64>> = batch
                    .par_iter()
                    .map(|(c, body)| {
                        let start = u64::from(*c) * CHUNK;
                        let from = candidates.partition_point(|&q| q < start);
                        let to = candidates.partition_point(|&q| q < start + CHUNK);
                        if from == to {
                            return Vec::new();
                        }
                        let mut want = candidates[from..to].iter().peekable();
                        let mut hits = Vec::new();
                        for (k, _) in decode_seeds(body, chunk_limit(*c, self.level.size())) {
                            let q = start + u64::from(k);
                            while want.next_if(|&&w| w < q).is_some() {}
                            if want.next_if(|&&w| w == q).is_some() {
                                hits.push(q);
                            }
                            if want.peek().is_none() {
                                break;
                            }
                        }
                        hits
                    })
                    .collect();
                found.extend(hits.into_iter().flatten());
            }
        }
        found.sort_unstable();
        Ok(found)
    }
}
