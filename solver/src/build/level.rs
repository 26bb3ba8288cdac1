//! The one driver of a level's build, whatever builds it: [`run_level`] takes an
//! [`Algorithm`] (in memory, low-memory, two-bit; on one machine, or on a rank's slice of a
//! distributed build) and an [`Output`] (the table on this machine, or a rank's slice of the
//! shared one), and runs the same sequence for all of them:
//!
//! ```text
//!   solve (exits, settling; a resumed level from where it stands)
//!     → the values in index order, a block at a time, through the output
//!       (which counts them, checksums, syncs and renames the table into place)
//!     → finish (the algorithm's work files go)
//! ```
//!
//! [`build_level`] is the entry for one machine: the algorithm [`Plan`] names, written into
//! the database directory.

use std::path::Path;
use std::time::Instant;

use awari_db::table::TableWriter;
use awari_db::{level_path, level_size, Header, Levels, Rules, TableError};
use rayon::prelude::*;

use super::{BuildError, LevelIo};
use crate::exits::ExitsStats;
pub use crate::level::Solved;
use crate::level::{LevelBuilder, LevelCounts, Mode, Progress};
use crate::lowmem::LowMemoryBuilder;
use crate::twobit::{Stage, StateBits, TwoBit};

/// A block of values handed to an [`Output`].
pub type Sink<'s> = dyn FnMut(&[u8]) -> Result<(), TableError> + 's;

/// A level's algorithm, as [`run_level`] drives it.
pub trait Algorithm {
    /// Exits and settling, from wherever the level stands (a resumable algorithm resumes).
    fn solve(&mut self, progress: &dyn Progress) -> Result<Solved, BuildError>;
    /// Every value of its positions, in index order, a block at a time, into `sink`.
    fn write_values(&mut self, sink: &mut Sink) -> Result<(), BuildError>;
    /// After [`Algorithm::write_values`]: the level's depth table, written into the database
    /// directory by an algorithm that found the depths as it settled (a two-bit build asked
    /// for them); returns its largest depth, or `None` where it found none.
    fn write_depths(&mut self) -> Result<Option<u16>, BuildError> {
        Ok(None)
    }
    /// Bytes its work files read and wrote, over every run of the level (after
    /// [`Algorithm::write_values`]).
    fn work_io(&self) -> (u64, u64) {
        (0, 0)
    }
    /// The table is in place: remove what the algorithm left on disk.
    fn finish(&mut self) {}
}

/// Where a level's table goes.
pub trait Output {
    /// Write the table from the blocks `fill` hands over (the positions this output covers,
    /// in index order) and put it in place; returns the whole level's wins, draws and losses.
    fn write(
        &self,
        fill: &mut dyn FnMut(&mut Sink) -> Result<(), BuildError>,
    ) -> Result<LevelCounts, BuildError>;
}

/// What [`run_level`] produced.
#[derive(Clone, Copy, Debug)]
pub struct BuiltLevel {
    /// Wins, draws and losses for the side to move.
    pub counts: LevelCounts,
    /// What the exits phase cost.
    pub exits: ExitsStats,
    /// Bytes read and written: the lower levels once per exits pass, the work files, the
    /// table (this run's share of it: a rank's slice).
    pub io: LevelIo,
    /// Seconds over every run of the level.
    pub seconds: f64,
    /// Where this run resumed, and the resumes in all.
    pub resumed: Option<(Stage, u32)>,
    /// The largest depth of the depth table the algorithm wrote (`None`: it wrote none).
    pub max_depth: Option<u16>,
}

/// Run `algorithm` for its `positions` and write its values through `output` (see the
/// module).
pub fn run_level(
    algorithm: &mut dyn Algorithm,
    output: &dyn Output,
    positions: u64,
    progress: &dyn Progress,
) -> Result<BuiltLevel, BuildError> {
    let start = Instant::now();
    let solved = algorithm.solve(progress)?;
    progress.phase("write", positions);
    let counts = output.write(&mut |sink| {
        algorithm.write_values(&mut |d: &[u8]| {
            progress.advance(d.len() as u64);
            sink(d)
        })
    })?;
    let max_depth = algorithm.write_depths()?;
    algorithm.finish();
    let (work_read, work_written) = algorithm.work_io();
    let exits = solved.exits;
    Ok(BuiltLevel {
        counts,
        exits,
        io: LevelIo {
            read: exits.lower_bytes * u64::from(exits.passes) + work_read,
            written: positions + work_written,
        },
        seconds: solved.earlier_seconds + start.elapsed().as_secs_f64(),
        resumed: solved.resumed,
        max_depth,
    })
}

/// The wins, draws and losses among `values` (in parallel).
pub fn count(values: &[u8]) -> LevelCounts {
    values
        .par_chunks(1 << 20)
        .map(|part| {
            let mut c = LevelCounts::default();
            part.iter().for_each(|&v| c.add(v as i8));
            c
        })
        .reduce(LevelCounts::default, LevelCounts::merge)
}

/// The values table of one level on this machine: `level-NN.values` in a directory, written
/// as `*.tmp`, synced and renamed when whole.
pub struct LocalTable<'p> {
    dir: &'p Path,
    n: u32,
    rules: Rules,
}

impl Output for LocalTable<'_> {
    fn write(
        &self,
        fill: &mut dyn FnMut(&mut Sink) -> Result<(), BuildError>,
    ) -> Result<LevelCounts, BuildError> {
        let mut w = TableWriter::create(
            level_path(self.dir, self.n),
            Header::values(self.rules, self.n),
        )?;
        let mut counts = LevelCounts::default();
        fill(&mut |d: &[u8]| {
            counts = counts.merge(count(d));
            w.write(d)
        })?;
        w.finish()?;
        Ok(counts)
    }
}

/// Which algorithm builds a level on one machine, with its exit bucket (positions; see
/// [`crate::lowmem::exit_bucket`] and [`crate::twobit::exit_bucket`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// 2 bytes of RAM per position.
    InMemory,
    /// 0.67 bytes per position.
    LowMemory {
        /// Positions per exit bucket.
        bucket: u64,
    },
    /// Under 0.33 bytes per position, resumable.
    TwoBit {
        /// Positions per exit bucket.
        bucket: u64,
    },
    /// About 0.16 bytes per position, resumable.
    OneBit {
        /// Positions per exit bucket.
        bucket: u64,
    },
}

impl Plan {
    /// The plan for level `n` in `mode` (not [`Mode::Auto`]: that is chosen first) on
    /// `threads` threads within `budget` bytes (`None`: no limit).
    pub fn new(mode: Mode, n: u32, threads: usize, budget: Option<u64>) -> Plan {
        match mode {
            Mode::LowMemory => Plan::LowMemory {
                bucket: crate::lowmem::exit_bucket(n, threads, budget),
            },
            Mode::TwoBit => Plan::TwoBit {
                bucket: crate::twobit::exit_bucket(n, threads, budget, StateBits::Two),
            },
            Mode::OneBit => Plan::OneBit {
                bucket: crate::twobit::exit_bucket(n, threads, budget, StateBits::One),
            },
            Mode::InMemory | Mode::Auto => Plan::InMemory,
        }
    }

    /// Its algorithm's name.
    pub fn mode(self) -> Mode {
        match self {
            Plan::InMemory => Mode::InMemory,
            Plan::LowMemory { .. } => Mode::LowMemory,
            Plan::TwoBit { .. } => Mode::TwoBit,
            Plan::OneBit { .. } => Mode::OneBit,
        }
    }
}

/// Build level `n` with the algorithm of `plan` and write it atomically into `dir` as
/// `level-NN.values` (a two-bit level resumes from its checkpoint there, if it has one).
/// `lower` must hold the levels a capture reaches.
pub fn build_level(
    dir: &Path,
    n: u32,
    rules: Rules,
    lower: &Levels,
    plan: Plan,
    progress: &dyn Progress,
) -> Result<BuiltLevel, BuildError> {
    build_level_with_depths(dir, n, rules, lower, plan, false, progress)
}

/// [`build_level`], asking for the level's depth table where the algorithm finds depths as
/// it settles (`depths`: the two-bit one, begun afresh with them; see
/// [`crate::twobit::TwoBit::open`]). [`BuiltLevel::max_depth`] says whether it wrote one.
pub fn build_level_with_depths(
    dir: &Path,
    n: u32,
    rules: Rules,
    lower: &Levels,
    plan: Plan,
    depths: bool,
    progress: &dyn Progress,
) -> Result<BuiltLevel, BuildError> {
    let mut algorithm: Box<dyn Algorithm + '_> = match plan {
        Plan::InMemory => Box::new(LevelBuilder::open(dir, n, rules, lower)?),
        Plan::LowMemory { bucket } => {
            Box::new(LowMemoryBuilder::open(dir, n, rules, lower, bucket)?)
        }
        Plan::TwoBit { bucket } => Box::new(TwoBit::open(
            dir,
            n,
            rules,
            lower,
            bucket,
            StateBits::Two,
            depths,
        )?),
        Plan::OneBit { bucket } => Box::new(TwoBit::open(
            dir,
            n,
            rules,
            lower,
            bucket,
            StateBits::One,
            false,
        )?),
    };
    run_level(
        algorithm.as_mut(),
        &LocalTable { dir, n, rules },
        level_size(n),
        progress,
    )
}

impl Algorithm for LevelBuilder<'_> {
    fn solve(&mut self, progress: &dyn Progress) -> Result<Solved, BuildError> {
        Ok(LevelBuilder::solve(self, progress)?)
    }

    fn write_values(&mut self, sink: &mut Sink) -> Result<(), BuildError> {
        Ok(LevelBuilder::write_values(self, sink)?)
    }

    fn work_io(&self) -> (u64, u64) {
        LevelBuilder::work_io(self)
    }

    fn finish(&mut self) {
        LevelBuilder::forget_save(self);
    }
}

impl Algorithm for LowMemoryBuilder<'_> {
    fn solve(&mut self, progress: &dyn Progress) -> Result<Solved, BuildError> {
        Ok(LowMemoryBuilder::solve(self, progress)?)
    }

    fn write_values(&mut self, sink: &mut Sink) -> Result<(), BuildError> {
        Ok(LowMemoryBuilder::write_values(self, sink)?)
    }

    fn work_io(&self) -> (u64, u64) {
        LowMemoryBuilder::work_io(self)
    }

    fn finish(&mut self) {
        LowMemoryBuilder::finish(self);
    }
}

impl Algorithm for TwoBit<'_> {
    fn solve(&mut self, progress: &dyn Progress) -> Result<Solved, BuildError> {
        Ok(TwoBit::solve(self, progress)?)
    }

    fn write_values(&mut self, sink: &mut Sink) -> Result<(), BuildError> {
        Ok(TwoBit::write_values(self, sink)?)
    }

    fn write_depths(&mut self) -> Result<Option<u16>, BuildError> {
        Ok(TwoBit::write_depths(self)?)
    }

    fn work_io(&self) -> (u64, u64) {
        TwoBit::work_io(self)
    }

    fn finish(&mut self) {
        TwoBit::finish(self);
    }
}
