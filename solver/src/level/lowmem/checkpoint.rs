//! Resuming a low-memory level: its work directory `level-NN.lowmem/` (the work file `work`,
//! one byte per position, its pages' digests `digests` (see `digests`) and the checkpoint
//! `resume`), the checkpoint's fields, and the passes that rebuild the packed states from the
//! work file when a killed level resumes. Every page of the work file a resume reads is
//! checked against its digests first; the checks of each byte below come after.
//!
//! A checkpoint costs a sync of the work file, a rewrite of its pages' digests (1/256 of the
//! work file) and a few hundred bytes: the states need not be saved, since the work file says
//! what they were. After the exits of positions `0..done`
//! (stage `Exits`), the states of those positions are their forward pass's, which a resume
//! runs again. Before step `i` (stage `Settle { next: i }`, written once step `i` is done:
//! every value of the steps above it is on disk, written by the streams of steps `i + 1` and
//! `i`), a position is
//! - settled at a step above `i` if its byte is a value `v` with `|v| > i` (see
//!   [`super::kernel::encode_value`]): code 18 or 19;
//! - else unsettled, its byte an exit, its counter the non-capturing children not won
//!   (counted by move generation over the codes just set; for an exit ≥ 0, which never makes
//!   the position losable, its non-capturing moves), `exit_ok` as of step `i + 1`.
//!
//! The run killed after the checkpoint may have gone on to settle positions at step `i` or
//! below and write their values, `±j` with `j ≤ i`. A resume puts such a value back as the
//! position's exit: an exit of `+j` wins at step `j`, and one of `−j` is losable from step `j`
//! on, which decides the position at step `j` just as the exit it replaces did (it was not
//! settled above `j`, and at step `j` it was won, or lost with `exit_ok` already set and every
//! child won). Each step settles the same sets again, so the table is the same bytes.
//!
//! That rebuild costs about a third of the level's build (scripts/bench-resume.sh). So a
//! checkpoint in the settling also writes the packed states as they stand after step `i`
//! (`states`, written whole, synced and renamed before the checkpoint names it by its
//! checksum), where the disk has room for them: a resume that finds them whole loads them and
//! goes on at step `i − 1` after one pass over the work file, which puts back as exits the
//! values of the positions the states hold unsettled (settled after the checkpoint). States
//! that are missing or fail their checksum are not believed: the rebuild above is the fallback.
//!
//! Stage `Convert`, after the last pass, has every value on disk: only the table is left to
//! write.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;

use awari_db::{level_size, Rules, TableError};
use rayon::prelude::*;

use super::kernel::decode;
use super::{chunks, LowMemoryBuilder, BITS, DONE_WIN, MASK, PER_WORD, SETTLED};
use crate::settle::Settle;

/// Positions whose children the states' rebuild counts together (a multiple of 12).
const COUNT_BATCH: usize = 12 * 8;
use crate::checkpoint::{CheckpointError, Fields, Kind};
pub(super) use crate::level::Carried;
use crate::progress::Progress;
use crate::settle::NO_EXIT;
use crate::twobit::Stage;

/// The checkpoint file `level-NN.lowmem/resume`, in the frame of `crate::checkpoint` (magic
/// b"AWARILMR", version 3: the work file has its digests beside it; the fields are version
/// 2's, and a checkpoint of an earlier version is not believed), whose fields are, in order:
///
/// ```text
/// field                                     type
/// rule set code                             u8
/// seeds of the level                        u32
/// positions of the level                    u64
/// stage: 0 exits, 1 settle, 2 write         u8
/// exits: positions done                     u64
/// settle: the next step                     u8
/// times the level was resumed so far        u32
/// carried over for the summary: seconds     f64, then work bytes read, written (u64)
/// exits: seconds, storage bytes read        f64, u64 (u64::MAX: unknown)
/// exits: passes over the lower levels       u32
/// settle: the states after step `next`      u8 (1: saved in `states`, 0: none), u64
///   saved, and their XXH3-64                   (the checksum)
/// ```
pub(super) struct Checkpoint {
    pub(super) stage: Stage,
    pub(super) resumes: u32,
    pub(super) carried: Carried,
    /// The checksum of the states saved after step `next` (stage `Settle`), if saved.
    pub(super) states: Option<u64>,
}

const KIND: Kind = Kind {
    magic: *b"AWARILMR",
    version: 3,
};
const CKPT_NAME: &str = "resume";
pub(super) const WORK_NAME: &str = "work";
pub(super) const DIGESTS_NAME: &str = "digests";
const STATES_NAME: &str = "states";

/// The work directory of a low-memory level `n` in `dir`.
pub fn work_dir(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("level-{n:02}.lowmem"))
}

/// Remove the work directory of level `n` (a level built, or to be built another way).
pub fn remove_work_files(dir: &Path, n: u32) {
    let _ = std::fs::remove_dir_all(work_dir(dir, n));
}

/// Where the low-memory build of level `n` in `dir` stands, by its checkpoint (`Ok(None)`:
/// none).
pub fn checkpoint_stage(
    dir: &Path,
    n: u32,
    rules: Rules,
) -> Result<Option<Stage>, CheckpointError> {
    read_checkpoint(&work_dir(dir, n), n, rules).map(|c| c.map(|c| c.stage))
}

/// Read the checkpoint in the work directory `work` of level `n`, checked against the level,
/// the rules and the lengths of the work file and its digests; `Ok(None)` when there is none.
pub(super) fn read_checkpoint(
    work: &Path,
    n: u32,
    rules: Rules,
) -> Result<Option<Checkpoint>, CheckpointError> {
    let Some(mut r) = crate::checkpoint::read(&work.join(CKPT_NAME), KIND)? else {
        return Ok(None);
    };
    let size = level_size(n);
    let (code, seeds, positions) = (r.u8()?, r.u32()?, r.u64()?);
    if code != rules.code() || seeds != n || positions != size {
        return Err(r.unusable(format!("not of level {n} under {rules}")));
    }
    let (stage, done, next) = (r.u8()?, r.u64()?, r.u8()?);
    let stage = match stage {
        // Buckets are whole chunks (the last may end at the level's end): so are the exits done.
        0 if done <= size && (done % super::CHUNK == 0 || done == size) => Stage::Exits { done },
        1 if (1..=n).contains(&u32::from(next)) => Stage::Settle {
            next: u32::from(next),
        },
        2 => Stage::Convert,
        _ => return Err(r.unusable("unknown stage")),
    };
    let resumes = r.tally_u32()?;
    let carried = Carried::read(&mut r)?;
    let (saved, checksum) = (r.u8()?, r.u64()?);
    let states = (saved == 1 && matches!(stage, Stage::Settle { .. })).then_some(checksum);
    r.finish()?;
    let digests = super::digests::file_len(size);
    for (name, len) in [(WORK_NAME, size), (DIGESTS_NAME, digests)] {
        let path = work.join(name);
        let why = match std::fs::metadata(&path) {
            Ok(m) if m.is_file() && m.len() == len => continue,
            Ok(m) => format!("{} holds {} bytes, {len} expected", path.display(), m.len()),
            Err(e) => format!("no {name} file {}: {e}", path.display()),
        };
        return Err(CheckpointError::unusable(&work.join(CKPT_NAME), why));
    }
    Ok(Some(Checkpoint {
        stage,
        resumes,
        carried,
        states,
    }))
}

/// Whether the work byte `byte` is an exit of level `n` (`NO_EXIT` among them), not a value
/// nor a byte past the level's exits.
fn is_exit(byte: u8, n: i32) -> bool {
    matches!(decode(byte), Ok(e) if e == NO_EXIT || i32::from(e).abs() <= n)
}

/// Write the checkpoint of a level standing at `stage` into its work directory `work`
/// atomically; the work file must be synced first.
pub(super) fn write_checkpoint(
    work: &Path,
    rules: Rules,
    n: u32,
    stage: Stage,
    resumes: u32,
    carried: &Carried,
    states: Option<u64>,
) -> Result<u64, TableError> {
    let (code, done, next) = match stage {
        Stage::Exits { done } => (0u8, done, 0u8),
        Stage::Settle { next } => (1, 0, next as u8),
        Stage::Convert => (2, 0, 0),
    };
    let mut f = Fields::default();
    f.u8(rules.code())
        .u32(n)
        .u64(level_size(n))
        .u8(code)
        .u64(done)
        .u8(next)
        .u32(resumes);
    carried.write(&mut f);
    f.u8(u8::from(states.is_some())).u64(states.unwrap_or(0));
    f.write(&work.join(CKPT_NAME), KIND)
}

/// Remove the checkpoint of the work directory `work`: the next run starts the level afresh.
pub(super) fn forget(work: &Path) {
    let _ = std::fs::remove_file(work.join(CKPT_NAME));
}

/// Bytes of the packed states written or read at once.
const STATES_BLOCK: usize = 1 << 24;

impl LowMemoryBuilder<'_> {
    /// Save the packed states to `states` in the work directory `work` (written whole to
    /// `states.tmp`, synced, renamed); returns their checksum, or `None` (and a line, once)
    /// where the disk has no room for them beside 1 GiB.
    pub(super) fn save_states(&self, work: &Path) -> Result<Option<u64>, TableError> {
        use std::io::Write;
        let words = self.state.words();
        let bytes = 8 * words.len() as u64;
        let path = work.join(STATES_NAME);
        let tmp = awari_db::table::tmp_path(&path);
        let held = std::fs::metadata(&path).map_or(0, |m| m.len());
        if crate::sys::disk_free(work).is_some_and(|free| free + held < bytes + (1 << 30)) {
            if !self.said_no_room.swap(true, Relaxed) {
                eprintln!(
                    "level {}: no room on disk for the states ({}): a resume will rebuild them",
                    self.level.seeds(),
                    crate::sys::human(bytes)
                );
            }
            let _ = std::fs::remove_file(&path);
            return Ok(None);
        }
        let io = |source| TableError::Io {
            path: tmp.clone(),
            source,
        };
        let mut f = std::io::BufWriter::with_capacity(
            STATES_BLOCK,
            std::fs::File::create(&tmp).map_err(io)?,
        );
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        let mut block = Vec::with_capacity(STATES_BLOCK);
        for part in words.chunks(STATES_BLOCK / 8) {
            block.clear();
            for w in part {
                block.extend_from_slice(&w.load(Relaxed).to_le_bytes());
            }
            hasher.update(&block);
            f.write_all(&block).map_err(io)?;
        }
        let f = f.into_inner().map_err(|e| io(e.into_error()))?;
        f.sync_all().map_err(io)?;
        drop(f);
        awari_db::table::rename_into_place(&tmp, &path)?;
        self.work_written.fetch_add(bytes, Relaxed);
        Ok(Some(hasher.digest()))
    }

    /// Load the states saved with checksum `checksum` from the work directory `work`; false
    /// (the states then to be rebuilt) if they are missing, of another length or checksum.
    pub(super) fn load_states(&self, work: &Path, checksum: u64) -> Result<bool, TableError> {
        use std::io::Read;
        let path = work.join(STATES_NAME);
        let words = self.state.words();
        let Ok(file) = std::fs::File::open(&path) else {
            return Ok(false);
        };
        let io = |source| TableError::Io {
            path: path.clone(),
            source,
        };
        if file.metadata().map_err(io)?.len() != 8 * words.len() as u64 {
            return Ok(false);
        }
        let mut reader = std::io::BufReader::with_capacity(STATES_BLOCK, file);
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        let mut block = vec![0u8; STATES_BLOCK];
        for part in words.chunks(STATES_BLOCK / 8) {
            let bytes = &mut block[..8 * part.len()];
            reader.read_exact(bytes).map_err(io)?;
            hasher.update(bytes);
            for (w, b) in part.iter().zip(bytes.chunks_exact(8)) {
                w.store(u64::from_le_bytes(b.try_into().expect("8 bytes")), Relaxed);
            }
        }
        self.work_read.fetch_add(8 * words.len() as u64, Relaxed);
        Ok(hasher.digest() == checksum)
    }

    /// Remove the saved states (the conversion needs none).
    pub(super) fn forget_states(work: &Path) {
        let _ = std::fs::remove_file(work.join(STATES_NAME));
    }

    /// After loading the states saved after step `done`: the values the work file holds for
    /// positions the states hold unsettled (written after the checkpoint) go back as their
    /// exits (see the module); a settled position whose byte is no value of a step above
    /// `done`, or any byte no exit or value of the level has, is [`TableError::Damaged`].
    pub(super) fn restore_loaded(
        &self,
        done: u32,
        progress: &dyn Progress,
    ) -> Result<(), TableError> {
        let n = self.level.seeds() as i32;
        let done = done as i32;
        progress.phase("restore", self.range.end - self.range.start);
        chunks(self.range.clone()).try_for_each(|(start, end)| {
            let len = (end - start) as usize;
            let mut buf = vec![0u8; len];
            self.read(start, &mut buf)?;
            let mut dirty = false;
            for (k, byte) in buf.iter_mut().enumerate() {
                let at = start + k as u64;
                let code = self.code(at);
                let ok = match decode(*byte) {
                    Err(v) if code >= DONE_WIN => {
                        i32::from(v).abs() > done && i32::from(v).abs() <= n
                    }
                    Err(v) if code < SETTLED => {
                        if (1..done).contains(&i32::from(v).abs()) {
                            *byte = v as u8;
                            dirty = true;
                            true
                        } else {
                            false
                        }
                    }
                    // Settled at step `done`: its value written again by the next stream.
                    Err(v) => i32::from(v).abs() == done,
                    Ok(_) => code < DONE_WIN && is_exit(*byte, n),
                };
                if !ok {
                    return Err(self.damaged(at, *byte));
                }
            }
            if dirty {
                self.write(start, &buf)?;
            }
            progress.advance(end - start);
            Ok(())
        })
    }

    /// The states of positions `0..done` after the exits of a resumed level: their forward
    /// pass again, a bucket at a time (its exits are on disk already). Each of those bytes is
    /// checked first: one that is no exit of this level (a value, which the exits phase never
    /// writes, or a byte past the level's exits) is [`TableError::Damaged`], as is any the
    /// stream could not read.
    pub(super) fn restore_exits(
        &self,
        done: u64,
        progress: &dyn Progress,
    ) -> Result<(), TableError> {
        let n = self.level.seeds() as i32;
        chunks(self.range.start..done).try_for_each(|(start, end)| {
            let mut buf = vec![0u8; (end - start) as usize];
            self.read(start, &mut buf)?;
            match buf.iter().position(|&b| !is_exit(b, n)) {
                Some(k) => Err(self.damaged(start + k as u64, buf[k])),
                None => Ok(()),
            }
        })?;
        progress.phase("restore", done);
        let mut scratch = Vec::new();
        let mut lo = self.range.start;
        while lo < done {
            let hi = (lo + self.bucket).min(done);
            self.forward_bucket(lo..hi, &mut scratch, progress);
            lo = hi;
        }
        Ok(())
    }

    /// The states before step `next` of a resumed level, from the work file (see the module):
    /// one pass sets the settled codes and puts the values of later steps back as exits, a
    /// second counts each unsettled position's children not won. A byte that is neither an
    /// exit nor a value of this level is [`TableError::Damaged`].
    pub(super) fn restore_settle(
        &self,
        next: u32,
        progress: &dyn Progress,
    ) -> Result<(), TableError> {
        let n = self.level.seeds() as i32;
        let i = next as i32;
        progress.phase("restore", 2 * (self.range.end - self.range.start));
        chunks(self.range.clone()).try_for_each(|(start, end)| {
            let len = (end - start) as usize;
            let mut buf = vec![0u8; len];
            self.read(start, &mut buf)?;
            let mut dirty = false;
            let first = ((start - self.range.start) / PER_WORD) as usize;
            for (w, bytes) in buf.chunks_mut(PER_WORD as usize).enumerate() {
                let mut word = 0u64;
                for (k, byte) in bytes.iter_mut().enumerate() {
                    let at = start + (w as u64) * PER_WORD + k as u64;
                    let code = match decode(*byte) {
                        Err(v) if (1..=n).contains(&i32::from(v).abs()) => {
                            if i32::from(v).abs() > i {
                                DONE_WIN + u64::from(v < 0)
                            } else {
                                // Settled after the checkpoint: its value is its exit.
                                *byte = v as u8;
                                dirty = true;
                                u64::from(i32::from(v) <= -(i + 1))
                            }
                        }
                        Ok(e) if e == NO_EXIT => 1,
                        Ok(e) if i32::from(e).abs() <= n => u64::from(i32::from(e) <= -(i + 1)),
                        _ => return Err(self.damaged(at, *byte)),
                    };
                    word |= code << (BITS as u64 * k as u64);
                }
                self.state.words()[first + w].store(word, Relaxed);
            }
            if dirty {
                self.write(start, &buf)?;
            }
            progress.advance(end - start);
            Ok(())
        })?;
        let rules = self.rules;
        let level = &self.level;
        chunks(self.range.clone()).try_for_each(|(start, end)| {
            let mut boards = level.boards(start..end);
            let first = ((start - self.range.start) / PER_WORD) as usize;
            // Positions counted together: every child of a batch is ranked and its word
            // prefetched before the first is read, so that the cache misses overlap.
            let mut children: Vec<(u32, u64)> = Vec::with_capacity(COUNT_BATCH * 6);
            let mut open = [0u64; COUNT_BATCH];
            let mut exits = vec![0u8; (end - start) as usize];
            self.read(start, &mut exits)?;
            let mut lo = start;
            while lo < end {
                let hi = (lo + COUNT_BATCH as u64).min(end);
                children.clear();
                open[..(hi - lo) as usize].fill(0);
                for (k, q) in (lo..hi).enumerate() {
                    let board = boards.next().expect("chunk inside the level");
                    if self.code(q) >= SETTLED {
                        continue;
                    }
                    if exits[(q - start) as usize] as i8 >= 0 || next == self.level.seeds() {
                        // An exit ≥ 0 never makes the position losable: its counter never
                        // decides anything, and its moves are an upper bound that no
                        // decrement passes. Before the first step no child is won: the
                        // counter is the moves.
                        open[k] = u64::from(board.quiet_moves(rules).unwrap_or(0));
                        continue;
                    }
                    board.for_each_ranked_quiet_child(rules, level, |c| {
                        Settle::prefetch(&self.state, c);
                        children.push((k as u32, c));
                    });
                }
                for &(k, c) in &children {
                    open[k as usize] += u64::from(self.code(c) != DONE_WIN);
                }
                // Batches are whole words (COUNT_BATCH is a multiple of 12): this thread's.
                for (w, group) in (lo..hi).step_by(PER_WORD as usize).enumerate() {
                    let word_index = first + ((lo - start) / PER_WORD) as usize + w;
                    let slot = &self.state.words()[word_index];
                    let mut word = slot.load(Relaxed);
                    for q in group..(group + PER_WORD).min(hi) {
                        let shift = BITS as u64 * ((q - group) % PER_WORD);
                        let code = (word >> shift) & MASK;
                        if code < SETTLED {
                            let count = open[(q - lo) as usize];
                            word = (word & !(MASK << shift)) | ((2 * count + (code & 1)) << shift);
                        }
                    }
                    // Other chunks read only the settled codes of this word, which stay.
                    slot.store(word, Relaxed);
                }
                lo = hi;
            }
            progress.advance(end - start);
            Ok(())
        })
    }

    /// The code of position `q` (of this builder's range).
    fn code(&self, q: u64) -> u64 {
        let r = q - self.range.start;
        (self.state.words()[(r / PER_WORD) as usize].load(Relaxed)
            >> (BITS as u64 * (r % PER_WORD)))
            & MASK
    }

    fn damaged(&self, at: u64, byte: u8) -> TableError {
        TableError::Damaged {
            path: self.work_path.clone(),
            what: format!(
                "position {at} holds {byte:#04x}, which is no exit or value its state allows at level {}",
                self.level.seeds()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use awari_db::{level_path, level_size, Levels, Rules, TableError};

    use super::super::digests::PAGE;
    use super::{decode, is_exit};
    use crate::build::{build_level, Plan};
    use crate::progress::Silent;
    use crate::settle::BuilderError;
    use crate::twobit::Stage;

    use super::super::{exit_bucket, LowMemoryBuilder, CHUNK};

    const N: u32 = 16;
    const RULES: Rules = Rules::Awari;

    /// A scratch directory with levels 0..=N built in memory in `memory/`; returns it and
    /// level N's table.
    fn reference(name: &str) -> (PathBuf, Vec<u8>) {
        let root = std::env::temp_dir().join(format!("awari-lowmem-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let mem = root.join("memory");
        std::fs::create_dir_all(&mem).unwrap();
        for m in (0..=N).filter(|&m| awari_db::level_exists(m)) {
            let levels = Levels::open(&mem, Some(RULES)).unwrap();
            build_level(&mem, m, RULES, &levels, Plan::InMemory, &Silent).unwrap();
        }
        let want = std::fs::read(level_path(&mem, N)).unwrap();
        (root, want)
    }

    /// A directory under `root` holding the reference's levels below N.
    fn lower_levels(root: &Path, name: &str) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for m in (0..N).filter(|&m| awari_db::level_exists(m)) {
            std::fs::copy(level_path(&root.join("memory"), m), level_path(&dir, m)).unwrap();
        }
        dir
    }

    /// How a damaged byte at position `at` is said: the positions of its page.
    fn page_of(at: u64) -> String {
        let page = at / PAGE * PAGE;
        format!("positions {page}..{} ", (page + PAGE).min(level_size(N)))
    }

    /// A resume of `dir` refused, its work file `work` damaged as `what` says; the next run
    /// starts afresh and writes `want`.
    fn refused_then_true(dir: &Path, levels: &Levels, work: &Path, what: &str, want: &[u8]) {
        let err = resume(dir, levels).unwrap_err();
        let crate::BuildError::Builder(BuilderError::Table(TableError::Damaged {
            path,
            what: said,
        })) = &err
        else {
            panic!("{err}");
        };
        assert_eq!(path, work);
        assert!(said.contains(what), "{said}");
        assert!(!work.with_file_name("resume").exists());
        let built = resume(dir, levels).unwrap();
        assert!(built.resumed.is_none());
        assert!(std::fs::read(level_path(dir, N)).unwrap() == want);
    }

    fn resume(dir: &Path, levels: &Levels) -> Result<crate::build::BuiltLevel, crate::BuildError> {
        let plan = Plan::LowMemory {
            bucket: exit_bucket(N, 2, None),
        };
        build_level(dir, N, RULES, levels, plan, &Silent)
    }

    /// A run killed after the checkpoint at the end of step `i`, in the middle of the next
    /// steps' streams (every other chunk of step `i − 1` streamed, its values half written,
    /// and with `further`, the whole of step `i − 1` and half of step `i − 2`), resumes to the
    /// bytes of the in-memory table: the values written after the checkpoint go back as exits.
    /// With the states the checkpoint saved (`saved`: it goes on at step `i − 1`), and with
    /// them gone or damaged (they are rebuilt, and step `i` is made again). Level 16 under
    /// awari, 8 chunks; at the first step, a middle one and the last.
    #[test]
    fn a_resume_after_a_kill_mid_step_writes_the_same_table() {
        let (root, want) = reference("resume");
        let mut cases = 0;
        let steps = [(N, false), (9, false), (9, true), (3, true), (2, false)];
        for ((i, further), states) in steps
            .into_iter()
            .flat_map(|c| [(c, "saved"), (c, "gone")])
            .chain([((9, true), "damaged")])
        {
            let dir = lower_levels(&root, &format!("step-{i}-{further}-{states}"));
            let levels = Levels::open(&dir, Some(RULES)).unwrap();
            let bucket = exit_bucket(N, 2, None);
            {
                let mut b = LowMemoryBuilder::open(&dir, N, RULES, &levels, bucket).unwrap();
                assert!(b.range.end > 6 * CHUNK);
                b.compute_exits(0, &Silent).unwrap();
                for s in (i..=N).rev() {
                    b.stream_step(Some(s as i8), s == N, &Silent).unwrap();
                }
                b.checkpoint(Stage::Settle { next: i }, None).unwrap();
                let half = |b: &LowMemoryBuilder, step: u32, odd: u64| {
                    for (k, (start, end)) in b.chunks_from(0, u64::MAX).0.into_iter().enumerate() {
                        if k as u64 % 2 == odd {
                            b.stream_chunk(Some(step as i8), start, end, &mut |_, _| false)
                                .unwrap();
                        }
                    }
                };
                if further && i > 2 {
                    b.stream_step(Some(i as i8 - 1), false, &Silent).unwrap();
                    half(&b, i - 2, 1);
                } else if i > 1 {
                    half(&b, i - 1, 0);
                }
                // Dropped without finishing: the work directory stays, as after a kill.
            }
            let saved = super::work_dir(&dir, N).join(super::STATES_NAME);
            assert_eq!(saved.exists(), i < N, "states after step {i}");
            match states {
                "gone" => {
                    let _ = std::fs::remove_file(&saved);
                }
                "damaged" if i < N => {
                    let mut bytes = std::fs::read(&saved).unwrap();
                    bytes[1000] ^= 4;
                    std::fs::write(&saved, bytes).unwrap();
                }
                _ => {}
            }
            let built = resume(&dir, &levels).unwrap();
            assert_eq!(built.resumed.map(|r| r.0), Some(Stage::Settle { next: i }));
            let got = std::fs::read(level_path(&dir, N)).unwrap();
            assert!(
                got == want,
                "resumed after step {i} (further: {further}, states {states}): another table"
            );
            assert!(!super::work_dir(&dir, N).exists());
            cases += 1;
        }
        assert_eq!(cases, 11);
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A checkpoint of an earlier version (its work file without digests) is not believed:
    /// the level starts afresh, saying why.
    #[test]
    fn an_earlier_version_checkpoint_is_not_believed() {
        use crate::checkpoint::{Fields, Kind};
        let dir = std::env::temp_dir().join(format!("awari-lowmem-v2-{}", std::process::id()));
        let work = super::work_dir(&dir, 5);
        std::fs::create_dir_all(&work).unwrap();
        let size = awari_db::level_size(5);
        std::fs::write(work.join(super::WORK_NAME), vec![0u8; size as usize]).unwrap();
        let mut f = Fields::default();
        f.u8(RULES.code())
            .u32(5)
            .u64(size)
            .u8(1)
            .u64(0)
            .u8(3)
            .u32(2);
        crate::level::Carried::default().write(&mut f);
        f.u8(0).u64(0);
        let v2 = Kind {
            version: 2,
            ..super::KIND
        };
        f.write(&work.join(super::CKPT_NAME), v2).unwrap();
        let err = super::read_checkpoint(&work, 5, RULES).err().unwrap();
        assert!(
            err.to_string().contains("version 2, this program writes 3"),
            "{err}"
        );
        // The same fields in this version, without the digests beside the work file.
        f.write(&work.join(super::CKPT_NAME), super::KIND).unwrap();
        let err = super::read_checkpoint(&work, 5, RULES).err().unwrap();
        assert!(err.to_string().contains("no digests file"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Exits done part way through a chunk, which no run records (found by the fuzz target
    /// `checkpoint`: its reads then took a part of a chunk): not believed.
    #[test]
    fn exits_done_within_a_chunk_are_not_believed() {
        use crate::checkpoint::Fields;
        let dir = std::env::temp_dir().join(format!("awari-lowmem-part-{}", std::process::id()));
        let work = super::work_dir(&dir, N);
        std::fs::create_dir_all(&work).unwrap();
        let size = level_size(N);
        std::fs::write(work.join(super::WORK_NAME), vec![0u8; size as usize]).unwrap();
        std::fs::write(
            work.join(super::DIGESTS_NAME),
            vec![0u8; super::super::digests::file_len(size) as usize],
        )
        .unwrap();
        for (done, ok) in [(6144, false), (CHUNK, true), (size, true)] {
            let mut f = Fields::default();
            f.u8(RULES.code())
                .u32(N)
                .u64(size)
                .u8(0)
                .u64(done)
                .u8(0)
                .u32(0);
            crate::level::Carried::default().write(&mut f);
            f.u8(0).u64(0);
            f.write(&work.join(super::CKPT_NAME), super::KIND).unwrap();
            let read = super::read_checkpoint(&work, N, RULES);
            assert_eq!(read.is_ok(), ok, "exits done {done}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A changed work byte (to an exit of 53 at 16 seeds, to a value of 0) stops the resume
    /// with the work file's name and its chunk's positions (their digest does not match), and
    /// removes the checkpoint: the next run starts afresh and writes the true table. Bytes the
    /// run wrote that the checkpoint does not allow are refused by the position. A checkpoint
    /// whose work file has another length is not believed: that run starts afresh at once.
    #[test]
    fn a_damaged_work_file_is_never_believed() {
        let (root, want) = reference("damaged");
        for (k, byte) in [(0u64, 53u8), (1, super::super::kernel::encode_value(0))] {
            let dir = lower_levels(&root, &format!("damaged-{k}"));
            let levels = Levels::open(&dir, Some(RULES)).unwrap();
            let bucket = exit_bucket(N, 2, None);
            {
                let mut b = LowMemoryBuilder::open(&dir, N, RULES, &levels, bucket).unwrap();
                b.compute_exits(0, &Silent).unwrap();
                b.stream_step(Some(N as i8), true, &Silent).unwrap();
                b.checkpoint(Stage::Settle { next: N }, None).unwrap();
            }
            let work = super::work_dir(&dir, N).join(super::WORK_NAME);
            let at = 3 * CHUNK + 1234 + k;
            let mut bytes = std::fs::read(&work).unwrap();
            bytes[at as usize] = byte;
            std::fs::write(&work, &bytes).unwrap();
            refused_then_true(&dir, &levels, &work, &page_of(at), &want);
        }
        // A value turned into its opposite: a byte the checkpoint allows, the digest alone
        // finds it.
        let dir = lower_levels(&root, "opposite");
        let levels = Levels::open(&dir, Some(RULES)).unwrap();
        {
            let bucket = exit_bucket(N, 2, None);
            let mut b = LowMemoryBuilder::open(&dir, N, RULES, &levels, bucket).unwrap();
            b.compute_exits(0, &Silent).unwrap();
            for step in [N, N - 1, N - 2] {
                b.stream_step(Some(step as i8), step == N, &Silent).unwrap();
            }
            b.checkpoint(Stage::Settle { next: N - 2 }, None).unwrap();
        }
        let work = super::work_dir(&dir, N).join(super::WORK_NAME);
        let mut bytes = std::fs::read(&work).unwrap();
        let at = bytes
            .iter()
            .position(|&b| matches!(decode(b), Err(v) if i32::from(v).abs() > N as i32 - 2))
            .expect("a value of a step above the checkpoint's");
        let Err(v) = decode(bytes[at]) else {
            unreachable!()
        };
        bytes[at] = super::super::kernel::encode_value(-v);
        std::fs::write(&work, &bytes).unwrap();
        refused_then_true(&dir, &levels, &work, &page_of(at as u64), &want);
        // A checkpoint of the exits phase part way (checksummed, so believed) over a work
        // file that holds values (two steps streamed): the bytes it takes for exits are
        // refused, not streamed; and a byte past the level's exits too.
        for (k, byte) in [(0u64, None), (1, Some(0x3fu8))] {
            let dir = lower_levels(&root, &format!("exits-{k}"));
            let levels = Levels::open(&dir, Some(RULES)).unwrap();
            let bucket = exit_bucket(N, 2, None);
            let size = level_size(N);
            // Exits done up to a bucket's end: a whole number of chunks.
            let half = size / 2 / CHUNK * CHUNK;
            let work = super::work_dir(&dir, N).join(super::WORK_NAME);
            {
                let mut b = LowMemoryBuilder::open(&dir, N, RULES, &levels, bucket).unwrap();
                b.compute_exits(0, &Silent).unwrap();
                if byte.is_none() {
                    for step in [N, N - 1, N - 2] {
                        b.stream_step(Some(step as i8), step == N, &Silent).unwrap();
                    }
                }
                b.checkpoint(Stage::Exits { done: half }, None).unwrap();
            }
            let mut bytes = std::fs::read(&work).unwrap();
            let what = if let Some(byte) = byte {
                bytes[(size / 3) as usize] = byte;
                std::fs::write(&work, &bytes).unwrap();
                page_of(size / 3)
            } else {
                let first = bytes[..half as usize]
                    .iter()
                    .position(|&b| !is_exit(b, N as i32))
                    .expect("a byte that is no exit below the checkpoint");
                format!("position {first} ")
            };
            refused_then_true(&dir, &levels, &work, &what, &want);
        }
        // A work file cut short.
        let dir = lower_levels(&root, "short");
        let levels = Levels::open(&dir, Some(RULES)).unwrap();
        {
            let mut b =
                LowMemoryBuilder::open(&dir, N, RULES, &levels, exit_bucket(N, 2, None)).unwrap();
            b.compute_exits(0, &Silent).unwrap();
            b.checkpoint(Stage::Settle { next: N }, None).unwrap();
        }
        let work = super::work_dir(&dir, N).join(super::WORK_NAME);
        let len = std::fs::metadata(&work).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&work)
            .unwrap()
            .set_len(len - 1)
            .unwrap();
        let err = super::checkpoint_stage(&dir, N, RULES).unwrap_err();
        assert!(err.to_string().contains("bytes"), "{err}");
        let built = resume(&dir, &levels).unwrap();
        assert!(built.resumed.is_none());
        assert!(std::fs::read(level_path(&dir, N)).unwrap() == want);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
