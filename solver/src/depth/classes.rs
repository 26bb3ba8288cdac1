//! [`ClassPass`]: the depth pass that reads the level's values only in index order, a peer of
//! [`DepthPass`](super::DepthPass) for levels whose values do not fit in the page cache.
//!
//! [`DepthPass`](super::DepthPass) reads the level's values table at random (the parent's value of each capture,
//! a loser's children, each wave entry's predecessors): fast while the table sits in the page
//! cache, hopeless once it does not. This pass gets the same depths, byte for byte, from the
//! same 2 bits of RAM per position, and reads the values once, in order.
//!
//! A quiet child `c` of `p` is value-optimal exactly when `value(c) = −value(p)`, so
//! value-optimal moves only join positions of the same |value| = v, and each *value class*
//! ±v is a breadth-first search of its own. The pass runs them one at a time, v = 1, 2, …;
//! within a class the 2-bit codes stand for:
//!
//! ```text
//!  RAM: 2 bits a position (see `wave_state`)      disk (in the output directory)
//!  +--------------+---------------------------+   +-----------------------------------+
//!  | 0 open, won  | value +v, no depth yet    |   | level-NN.dclass+VV, dclass-VV:    |
//!  | 1 open, lost | value −v, no depth yet    |   |   the class's won (flag: depth 0) |
//!  | 3 new        | depth k+1, found by wave k|   |   and lost positions (phase 1)    |
//!  | 2 done       | depth ≤ k, or not of the  |   | level-NN.dwave+VV-KKKK, -VV-KKKK: |
//!  |              | class (draws, other v)    |   |   its won and lost ones at depth K|
//!  +--------------+---------------------------+   | level-NN.dclasses: the checkpoint |
//!                                                 +-----------------------------------+
//! ```
//!
//! so every question the old pass asked of the values table is a code lookup in RAM.
//!
//! 1. **The class lists** (`lists`), in exit buckets of the level (1 byte per position of a
//!    bucket, as the two-bit builder's exits phase), each followed by a checkpoint: each
//!    position's exit byte (the forward pass: terminal value or none; the lower levels
//!    streamed and un-captured with an atomic maximum: its best capture), then the bucket's
//!    stored values read in order, and every won or lost position appended to its class's
//!    list (seed records, see `crate::seed_records`); a won one is flagged *depth 0* when its
//!    exit byte equals its value. Draws go nowhere. With the value check
//!    ([`ClassPass::check_values`]), the bucket then goes on as the streamed check of
//!    `verify` does: the level's own values streamed and un-moved into it, folded into the
//!    same bytes, and its stored values compared with them (and the table's checksum).
//! 2. **Each class v** (`search`): every state set to done, the lists read back (won → open
//!    won, lost → open lost). Wave 0: a lost position none of whose quiet children is open
//!    won (no won position is done yet: "no quiet child of the opposite value"), and every
//!    flagged won one. Then waves k = 0, 1, … in two halves, which is what lets *new* carry
//!    no sign:
//!    - half 1: every won entry of wave k un-moved into its predecessors; an open lost one
//!      becomes new if none of its quiet children is open won (all its value-optimal
//!      children have depth ≤ k: the only new positions now are lost, and won ones of depth
//!      k+1 are still open, so they fail the test as the old pass's *new* ones do). The new
//!      ones are written, done, as the lost part of wave k+1;
//!    - half 2: every lost entry of wave k un-moved; an open won predecessor becomes new.
//!      They are written, done, as the won part of wave k+1.
//!
//!    The class ends at an empty wave; its positions still open have no finite depth
//!    (unproven).
//! 3. **The table** (`table`): depth = the wave number in the class (draws and depth-0
//!    positions: 0); all the wave files merged in index order, window by window of chunks,
//!    each file reopened at its remembered offset, so that thousands of them are never open
//!    at once.
//!
//! **Resuming** (`checkpoint`): after each bucket of phase 1 (the lists cut back to the
//! lengths recorded), after each class, and, from level 15 on, after each wave (the class's
//! states rebuilt from its lists and its wave files).
//!
//! Memory: the state (0.25 bytes per position), the block map and a fixed part; phase 1
//! holds its bucket's exit bytes instead (see [`class_bucket`]). Disk: the class lists and the
//! wave files, each about a byte per won or lost position at most. Reads: the lower levels
//! once per bucket, the values once (with the check: once more per bucket, and the bucket's
//! values again), the lists once per class, each wave file twice (its half, and the table).

mod checkpoint;
mod lists;
mod one_bit;
mod search;
mod table;

pub(super) use checkpoint::class_resume_path;
pub use lists::{class_bucket, class_memory};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use awari_db::{Level, Levels, Rules, Table, TableError};

use super::wave_state::WaveState;
use super::waves::DURABLE_WAVES_FROM;
use super::{
    forget_damaged, remove_work_files, BadChecksum, DepthError, DepthReport, Inconsistent, Unproven,
};
use crate::exits::{CaptureStream, ExitsStats};
use crate::progress::Progress;
use crate::sys;

/// Class lists a level can have: won and lost for every |value| 1..=128 (a corrupt byte may
/// hold any i8; a true one at most the level's seeds).
const LISTS: usize = 256;

/// Where a class pass stands, as its checkpoint records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClassStage {
    /// Phase 1: the class lists hold the positions `0..done`.
    Lists { done: u64 },
    /// Classes 1..=`done` are complete.
    Classes { done: u8 },
    /// Classes below `class` are complete, and waves 0..=`complete` of `class`.
    Wave { class: u8, complete: u32 },
}

/// What carried over from earlier runs.
#[derive(Clone, Copy, Debug, Default)]
struct ClassCarried {
    seconds: f64,
    exits_seconds: f64,
    exits_read: u64,
    passes: u32,
    resumes: u32,
    /// Drawn positions of the buckets done.
    draws: u64,
    /// Whether phase 1 checked the values ([`ClassPass::check_values`]) in the buckets done.
    checked: bool,
    /// With the check: wrong entries in the buckets done.
    mismatches: u64,
    /// With the check of a plain table: the checksum of its data (computed in bucket 0).
    checksum: Option<u64>,
    /// Whether the waves of classes done were removed (by a pass that writes no table, as
    /// `verify --prove`'s): a pass that writes one does not resume from such a checkpoint.
    waves_dropped: bool,
}

/// The class-by-class depth pass of one level (see the module documentation).
pub struct ClassPass<'a> {
    pub(super) level: Level,
    rules: Rules,
    table: &'a Table,
    stream: CaptureStream<'a>,
    /// Where the work files (and the table, when written) go.
    out: PathBuf,
    bucket: u64,
    stage: ClassStage,
    /// Bytes of each class list (index: see `lists::list_index`).
    lists: Vec<u64>,
    carried: ClassCarried,
    /// Positions per depth over the waves written (index 0 unused until the end).
    histogram: Vec<u64>,
    /// Open positions left by the classes done, and the first of them by index.
    unproven: u64,
    examples: Vec<Unproven>,
    state: Option<WaveState>,
    /// With one bit a position ([`ClassPass::one_bit`]): the bits, and the memory of the
    /// positions a wave finds.
    open_bits: Option<one_bit::OpenBits>,
    one_bit: Option<u64>,
    started: Instant,
    resumed: Option<Option<u32>>,
    wave_bytes: AtomicU64,
    /// With [`ClassPass::check_values`]: how many wrong entries to keep.
    check: Option<usize>,
    /// The first wrong entries by index, of the buckets done.
    mismatch_examples: Vec<Inconsistent>,
}

impl<'a> ClassPass<'a> {
    /// Prepare the class pass of level `n` of `levels` (which must hold it and its lower
    /// levels), its work files in `out`, phase 1 in buckets of `bucket` positions (see
    /// [`class_bucket`]); it resumes from a checkpoint in `out` if there is a valid one.
    pub fn open(
        levels: &'a Levels,
        n: u32,
        out: &Path,
        bucket: u64,
    ) -> Result<ClassPass<'a>, DepthError> {
        let table = levels.require(n)?;
        if table.is_probe_form() {
            return Err(DepthError::ProbeForm {
                path: table.path().to_path_buf(),
                seeds: n,
            });
        }
        let rules = levels.rules();
        let stream = CaptureStream::new(n, rules, levels)?;
        let level = Level::new(n);
        let mut pass = ClassPass {
            level,
            rules,
            table,
            stream,
            out: out.to_path_buf(),
            bucket: bucket.clamp(1, level.size().max(1)).div_ceil(super::CHUNK) * super::CHUNK,
            stage: ClassStage::Lists { done: 0 },
            lists: vec![0; LISTS],
            carried: ClassCarried::default(),
            histogram: vec![0],
            unproven: 0,
            examples: Vec::new(),
            state: None,
            open_bits: None,
            one_bit: None,
            started: Instant::now(),
            resumed: None,
            wave_bytes: AtomicU64::new(0),
            check: None,
            mismatch_examples: Vec::new(),
        };
        match pass.read_checkpoint() {
            Ok(true) => {
                pass.carried.resumes += 1;
                pass.resumed = Some(match pass.stage {
                    ClassStage::Lists { .. } => None,
                    ClassStage::Classes { .. } => Some(0),
                    ClassStage::Wave { complete, .. } => Some(complete),
                });
                pass.cut_lists()?;
            }
            Ok(false) => remove_work_files(out, n),
            Err(why) => {
                eprintln!("level {n}: depth pass starting afresh: {why}");
                pass.start_afresh();
            }
        }
        Ok(pass)
    }

    /// Forget what a checkpoint said, and its work files.
    fn start_afresh(&mut self) {
        remove_work_files(&self.out, self.level.seeds());
        self.stage = ClassStage::Lists { done: 0 };
        self.lists = vec![0; LISTS];
        self.carried = ClassCarried::default();
        self.histogram = vec![0];
        self.unproven = 0;
        self.examples.clear();
        self.mismatch_examples.clear();
        self.resumed = None;
    }

    /// Also check the values in phase 1, as the streamed check of `verify` does
    /// ([`crate::verify::verify_level_streamed`], whose steps it shares): per bucket, after
    /// its class lists, the level's own values streamed and un-moved into the bucket's
    /// positions, and each stored value compared with the best of its moves; the table's
    /// checksum too. The first `keep` wrong entries by index are kept (see
    /// [`DepthReport::inconsistent`]); a bad checksum ends the pass after phase 1 with
    /// [`DepthError::Checksum`]. A checkpoint made without the check is not resumed.
    pub fn check_values(mut self, keep: usize) -> Self {
        if self.resumed.is_some() && !self.carried.checked {
            eprintln!(
                "level {}: depth pass starting afresh: its checkpoint did not check the values",
                self.level.seeds()
            );
            self.start_afresh();
        }
        self.check = Some(keep);
        self.carried.checked = true;
        self
    }

    /// Search the classes in one bit a position instead of two (see `classes/one_bit.rs`),
    /// the positions each wave finds held in `capacity` bytes of RAM, spilled to work files
    /// beyond.
    pub fn one_bit(mut self, capacity: u64) -> Self {
        self.one_bit = Some(capacity);
        self
    }

    /// Whether it searches in one bit a position.
    pub fn is_one_bit(&self) -> bool {
        self.one_bit.is_some()
    }

    /// Run the pass to its end, as [`super::DepthPass::run`]: the same report, and with `write` the
    /// same table (only when every won or lost position has a depth: else
    /// [`DepthError::Unproven`]; with the value check, when no entry is wrong: else
    /// [`DepthError::Inconsistent`] after phase 1). The work files are removed at the end.
    pub fn run(
        self,
        write: bool,
        keep: usize,
        progress: &dyn Progress,
    ) -> Result<DepthReport, DepthError> {
        let checkpoint = class_resume_path(&self.out, self.level.seeds());
        self.run_from_stage(write, keep, progress)
            .inspect_err(|e| forget_damaged(e, &checkpoint))
    }

    fn run_from_stage(
        mut self,
        write: bool,
        keep: usize,
        progress: &dyn Progress,
    ) -> Result<DepthReport, DepthError> {
        let n = self.level.seeds();
        let size = self.level.size();
        if write && self.carried.waves_dropped && !matches!(self.stage, ClassStage::Lists { .. }) {
            eprintln!(
                "level {n}: depth pass starting afresh: its checkpoint was left by a pass that \
                 wrote no table and kept no waves"
            );
            self.start_afresh();
        }
        // Checkpoints from here on say whether this run keeps the waves of the classes done.
        self.carried.waves_dropped = !write;
        if let ClassStage::Lists { done } = self.stage {
            let t = Instant::now();
            let read0 = sys::read_bytes();
            let passes = self.class_lists(done, progress)?;
            self.carried.exits_seconds += t.elapsed().as_secs_f64();
            if let (Some(a), Some(b)) = (read0, sys::read_bytes()) {
                self.carried.exits_read += b.saturating_sub(a);
            }
            self.carried.passes += passes;
            if self.check.is_some() {
                self.end_check(write)?;
            }
            self.stage = ClassStage::Classes { done: 0 };
            self.write_checkpoint()?;
        }
        let timings = std::env::var_os("AWARI_TIMINGS").is_some();
        let kind = if self.is_one_bit() {
            "classes, one bit"
        } else {
            "classes"
        };
        if timings {
            eprintln!(
                "level {n} depth ({kind}): lists done at {:.2} s",
                self.started.elapsed().as_secs_f64()
            );
        }
        match self.one_bit {
            Some(_) => {
                self.open_bits = Some(one_bit::OpenBits::new(size).map_err(DepthError::Alloc)?)
            }
            None => self.state = Some(WaveState::new(size).map_err(DepthError::Alloc)?),
        }
        progress.phase("classes", size - self.carried.draws);
        for v in 1..=(LISTS / 2) as u8 {
            if self.lists[lists::list_index(v, true)] == 0
                && self.lists[lists::list_index(v, false)] == 0
            {
                continue;
            }
            let from = match self.stage {
                ClassStage::Classes { done } if v <= done => continue,
                ClassStage::Wave { class, .. } if v < class => continue,
                ClassStage::Wave { class, complete } if v == class => Some(complete),
                _ => None,
            };
            progress.message(&format!("class {v}"));
            match self.one_bit {
                Some(capacity) => self.search_class_one_bit(v, from, keep, capacity, progress)?,
                None => self.search_class(v, from, keep, progress)?,
            }
            self.stage = ClassStage::Classes { done: v };
            self.write_checkpoint()?;
            // Its lists are needed no more, nor its waves when no table is written.
            for won in [true, false] {
                let _ = std::fs::remove_file(lists::list_path(&self.out, n, v, won));
                if !write {
                    search::remove_waves(&self.out, n, v);
                }
            }
            if timings {
                eprintln!(
                    "level {n} depth ({kind}): class {v} done at {:.2} s",
                    self.started.elapsed().as_secs_f64()
                );
            }
        }
        self.state = None;
        self.open_bits = None;
        let max_depth = (self.histogram.len() - 1) as u16;
        let deeper: u64 = self.histogram[1..].iter().sum();
        let unproven = self.unproven;
        let mut histogram = self.histogram.clone();
        histogram[0] = size - deeper - unproven;
        let mut table = None;
        if write && unproven == 0 {
            progress.phase("write", size);
            table = Some(self.write_table(max_depth, progress)?);
        }
        remove_work_files(&self.out, n);
        if write && unproven > 0 {
            let first = &self.examples[0];
            return Err(DepthError::Unproven {
                level: n,
                count: unproven,
                index: first.index,
                board: first.board,
                value: first.value,
            });
        }
        let mut examples = self.examples;
        examples.truncate(keep.max(1));
        Ok(DepthReport {
            level: n,
            max_depth,
            histogram,
            draws: self.carried.draws,
            unproven,
            examples,
            seconds: self.carried.seconds + self.started.elapsed().as_secs_f64(),
            exits: ExitsStats {
                seconds: self.carried.exits_seconds,
                bytes_read: Some(self.carried.exits_read),
                lower_bytes: self.stream.positions(),
                passes: self.carried.passes,
            },
            resumed: self.resumed,
            wave_bytes: self.wave_bytes.load(Relaxed),
            inconsistent: self.carried.mismatches,
            inconsistent_examples: self.mismatch_examples,
            table,
        })
    }

    /// The end of a checked phase 1: a bad checksum is [`DepthError::Checksum`] (the work
    /// files removed), and with `write` a wrong entry [`DepthError::Inconsistent`].
    fn end_check(&mut self, write: bool) -> Result<(), DepthError> {
        let n = self.level.seeds();
        let table = self.table;
        let checksum = if table.is_compressed() {
            table.verify().err()
        } else if table.is_raw() {
            None
        } else {
            let got = self
                .carried
                .checksum
                .expect("bucket 0 computed the checksum");
            (got != table.header().checksum).then(|| TableError::BadChecksum {
                path: table.path().to_path_buf(),
                expected: table.header().checksum,
                got,
            })
        };
        if let Some(checksum) = checksum {
            remove_work_files(&self.out, n);
            return Err(DepthError::Checksum(Box::new(BadChecksum {
                checksum,
                inconsistent: self.carried.mismatches,
                examples: std::mem::take(&mut self.mismatch_examples),
                passes: self.carried.passes,
            })));
        }
        if write && self.carried.mismatches > 0 {
            remove_work_files(&self.out, n);
            return Err(DepthError::Inconsistent {
                level: n,
                count: self.carried.mismatches,
                first: self.mismatch_examples.first().map_or_else(
                    || "(found before a resume)".into(),
                    |m| format!("index {} board {}: {}", m.index, m.board, m.what),
                ),
            });
        }
        Ok(())
    }

    /// Whether each wave is a checkpoint: from level 15 on (see [`DepthPass`](super::DepthPass)'s waves).
    fn durable_waves(&self) -> bool {
        self.level.size() >= DURABLE_WAVES_FROM
    }

    /// Fold a class's open positions into the report's: their count, and the first `keep`
    /// of all by index.
    fn add_unproven(&mut self, count: u64, mut found: Vec<Unproven>, keep: usize) {
        self.unproven += count;
        self.examples.append(&mut found);
        self.examples.sort_by_key(|u| u.index);
        self.examples.truncate(keep.max(1));
    }
}
