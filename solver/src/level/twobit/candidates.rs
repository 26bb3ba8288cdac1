//! The candidates of a one-bit step (see `codes`): unsettled positions with an exit whose
//! children are all won, gathered as the propagation finds them. A **round** looks them up
//! in the exit lists of −n … −i on disk (read in order, each chunk's records decoded only
//! where a candidate is in the chunk): those found there are losable, so lost; each is
//! published (its predecessors won, then itself) and propagated, which may find more
//! candidates, until a round finds none. A candidate whose exit is above −i is dropped: if
//! its exit is below 0, the stream of that exit's step finds it lost there. Rounds run once
//! the step's seeds are propagated: a round reads the lists below −i whatever it looks up, so
//! the fewer the better.
//!
//! They are held in a [`PositionSet`] (about a byte a candidate at the densities met, 2 to 5 %
//! of a level at its largest). When they reach their memory they are **spilled**: written to
//! a file of the work directory
//! (`cand-000`, …: seed records in chunk order, see `work_files`), which the next round reads
//! beside those in RAM and then removes. Spills live within a step, and a checkpoint falls
//! between steps, so a resume never reads one (it removes any left).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use awari_db::TableError;
use rayon::prelude::*;

use super::log::SettledLog;
use super::work_files::{spill_name, ExitList, RecordWriter};
use super::{TwoBit, CHUNK};
use crate::position_set::{spill_records, Held, Merged, PositionSet};
use crate::progress::Progress;
use crate::seed_records::{chunk_limit, for_each_seed, RecordReader};

/// Chunks looked up together in a round per thread (their records gathered, about 150 KB a
/// chunk in all the lists below 0, then decoded in parallel).
const GROUP_PER_THREAD: usize = 4;
/// The read buffer of each exit list and spill file in a round (all are open at once).
const READ_BUFFER: usize = 16 << 10;

/// The candidates' memory before they are spilled, from `AWARI_CANDIDATE_BYTES` if set (tests
/// spill after every batch with it; the budget decides otherwise).
pub(super) fn capacity_override() -> Option<u64> {
    std::env::var("AWARI_CANDIDATE_BYTES").ok()?.parse().ok()
}

/// The candidates gathered since the last round.
pub(super) struct Candidates {
    set: PositionSet,
    /// The spill files not read yet, in the order written.
    spilled: Mutex<Vec<PathBuf>>,
    /// Spill files written, over the level (their names' numbers).
    pub(super) spills: AtomicU64,
    /// Rounds run, candidates looked up and found losable (for `AWARI_TIMINGS`).
    pub(super) rounds: AtomicU64,
    pub(super) looked_up: AtomicU64,
    pub(super) losable: AtomicU64,
    /// Nanoseconds of the lookups (records read and searched, on any thread).
    pub(super) lookup_nanos: AtomicU64,
}

impl Candidates {
    /// A store for a level of `size` positions (none: two bits) that is full at `capacity`
    /// bytes.
    pub(super) fn new(size: u64, capacity: u64) -> Candidates {
        Candidates {
            set: PositionSet::new(size, capacity),
            spilled: Mutex::new(Vec::new()),
            spills: AtomicU64::new(0),
            rounds: AtomicU64::new(0),
            looked_up: AtomicU64::new(0),
            losable: AtomicU64::new(0),
            lookup_nanos: AtomicU64::new(0),
        }
    }

    /// Add the positions `found` (reordered).
    pub(super) fn add(&self, found: &mut [u64]) {
        self.set.add(found);
    }

    /// Whether they are to be spilled.
    pub(super) fn full(&self) -> bool {
        self.set.full()
    }
}

/// Per exit value e (index e, from 1), the records of the exit list of −e: (chunk, byte).
pub(super) type ListIndex = Vec<Vec<(u32, u64)>>;

impl TwoBit<'_> {
    /// The index of the exit lists below 0, built at the level's first round by reading them
    /// once (they do not change after the exits phase), so that a round reads only the records
    /// of the chunks holding candidates.
    fn list_index(&self) -> Result<std::sync::MutexGuard<'_, ListIndex>, TableError> {
        let mut index = self.list_index.lock().expect("list index lock");
        if index.is_empty() {
            let n = self.level.seeds();
            let mut built: ListIndex = vec![Vec::new(); n as usize + 1];
            for e in 1..=n {
                let path = self.work.join(ExitList::Value(-(e as i8)).file_name());
                if !path.exists() {
                    continue;
                }
                let mut r = self.records(&path)?;
                loop {
                    let at = r.offset();
                    let Some((chunk, _)) = r.next_record()? else {
                        break;
                    };
                    built[e as usize].push((chunk, at));
                }
            }
            *index = built;
        }
        Ok(index)
    }

    /// Write the candidates held in RAM to a new spill file, which the next round reads.
    pub(super) fn spill_candidates(&self) -> Result<(), TableError> {
        let held = self.candidates.set.take();
        if held.is_empty() {
            return Ok(());
        }
        let k = self.candidates.spills.fetch_add(1, Relaxed);
        let path = self.work.join(spill_name(k));
        let mut out = RecordWriter::open(&path, false, &self.io)?;
        for record in spill_records(held) {
            out.write(&record)?;
        }
        // Not synced: a spill is never read after a kill (see the module documentation).
        out.finish_unsynced()?;
        self.candidates
            .spilled
            .lock()
            .expect("spill lock")
            .push(path);
        Ok(())
    }

    /// Rounds until no candidate is left, in RAM or spilled; returns the positions they
    /// settled.
    pub(super) fn resolve_candidates(
        &self,
        i: u32,
        log: &SettledLog,
        progress: &dyn Progress,
    ) -> Result<u64, TableError> {
        let mut total = 0;
        loop {
            let held = self.candidates.set.take();
            let spilled = std::mem::take(&mut *self.candidates.spilled.lock().expect("spill lock"));
            if held.is_empty() && spilled.is_empty() {
                return Ok(total);
            }
            total += self.round(held, &spilled, i, log, progress)?;
            for path in spilled {
                std::fs::remove_file(&path).map_err(|source| TableError::Io { path, source })?;
            }
            self.candidates.rounds.fetch_add(1, Relaxed);
        }
    }

    /// A round: the candidates `held` in RAM and those of the files `spills` looked up in the
    /// exit lists of −n … −i, a group of chunks at a time, and those found there published
    /// and propagated (the candidates this finds are spilled when they reach their memory);
    /// returns the positions settled.
    fn round(
        &self,
        held: Vec<(u32, Held)>,
        spills: &[PathBuf],
        i: u32,
        log: &SettledLog,
        progress: &dyn Progress,
    ) -> Result<u64, TableError> {
        let n = self.level.seeds();
        let index = self.list_index()?;
        // The exit lists of −i … −n that have records, each with its index.
        let mut readers: Vec<(RecordReader, &[(u32, u64)])> = Vec::new();
        for e in i..=n {
            let path = self.work.join(ExitList::Value(-(e as i8)).file_name());
            if !index[e as usize].is_empty() {
                readers.push((
                    self.records_buffered(&path, READ_BUFFER)?,
                    &index[e as usize],
                ));
            }
        }
        let spills = spills
            .iter()
            .map(|path| self.records_buffered(path, READ_BUFFER))
            .collect::<Result<Vec<_>, _>>()?;
        let mut settled = 0;
        let mut wanted = Merged::new(held, spills, self.level.size());
        loop {
            let t = std::time::Instant::now();
            let mut group: Vec<(u32, Vec<u32>)> = Vec::new();
            while group.len() < GROUP_PER_THREAD * rayon::current_num_threads() {
                match wanted.next_chunk()? {
                    Some(chunk) => group.push(chunk),
                    None => break,
                }
            }
            if group.is_empty() {
                return Ok(settled);
            }
            // Each chunk's records, from every list: read where the index puts them.
            let mut bodies: Vec<Vec<Vec<u8>>> = vec![Vec::new(); group.len()];
            for (r, index) in &mut readers {
                for (g, (c, _)) in group.iter().enumerate() {
                    let Ok(k) = index.binary_search_by_key(c, |&(chunk, _)| chunk) else {
                        continue;
                    };
                    let at = index[k].1;
                    if r.offset() != at {
                        r.skip_to(at)?;
                    }
                    match r.next_record()? {
                        Some((chunk, body)) if chunk == *c => bodies[g].push(body),
                        _ => {
                            return Err(TableError::Damaged {
                                path: self.work.clone(),
                                what: format!("an exit list changed under its index at byte {at}"),
                            })
                        }
                    }
                }
            }
            self.candidates
                .lookup_nanos
                .fetch_add(t.elapsed().as_nanos() as u64, Relaxed);
            settled += group
                .into_par_iter()
                .zip(bodies)
                .map(|((c, want), bodies)| {
                    let t = std::time::Instant::now();
                    self.candidates
                        .looked_up
                        .fetch_add(want.len() as u64, Relaxed);
                    let mut hits = Vec::new();
                    let limit = chunk_limit(c, self.level.size());
                    for body in bodies {
                        // Both sorted: merged, and read no further than the last candidate.
                        let mut rest = want.as_slice();
                        for_each_seed(&body, limit, |k, _| {
                            while rest.first().is_some_and(|&w| w < k) {
                                rest = &rest[1..];
                            }
                            // (A candidate found twice and published since is dropped.)
                            if rest.first() == Some(&k)
                                && !self.is_settled(u64::from(c) * CHUNK + u64::from(k))
                            {
                                hits.push((k, false));
                            }
                            !rest.is_empty()
                        });
                    }
                    hits.sort_unstable();
                    self.candidates
                        .losable
                        .fetch_add(hits.len() as u64, Relaxed);
                    self.candidates
                        .lookup_nanos
                        .fetch_add(t.elapsed().as_nanos() as u64, Relaxed);
                    self.propagate_chunk(c, &hits, i, log, progress, None)
                })
                .sum::<Result<u64, TableError>>()?;
            log.flush_if_full()?;
            if self.candidates.full() {
                self.spill_candidates()?;
            }
        }
    }
}
