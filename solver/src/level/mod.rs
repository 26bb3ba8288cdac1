//! Phase 2 of a level, settling (docs/design.md, "Building a level"), one file per algorithm;
//! all three write the same tables, byte for byte, and share the core in `crate::settle`:
//!
//! - [`memory`]: 2 bytes of RAM per position, the fastest;
//! - [`lowmem`]: 0.67 bytes per position, the exits and values streamed from a work file;
//! - [`twobit`]: under 0.33 bytes per position, no counters, exits and values in files
//!   written and read about once, checkpoints by time.
//!
//! The in-memory builder's items are re-exported here (`level::LevelBuilder`, …).

pub mod lowmem;
pub mod memory;
pub mod twobit;

pub use memory::*;

use crate::checkpoint::{CheckpointError, FieldReader, Fields};
use crate::exits::ExitsStats;
use twobit::Stage;

/// What an algorithm's solve (exits and settling) reports to the build's driver
/// (`crate::build::level`).
#[derive(Clone, Copy, Debug)]
pub struct Solved {
    /// What the exits phase cost, over every run of the level.
    pub exits: ExitsStats,
    /// Seconds of earlier runs of a resumed level, up to their last checkpoint.
    pub earlier_seconds: f64,
    /// Where this run resumed the level, and the resumes in all.
    pub resumed: Option<(Stage, u32)>,
}

impl Solved {
    /// A level solved in one run from its start.
    pub fn fresh(exits: ExitsStats) -> Solved {
        Solved {
            exits,
            earlier_seconds: 0.0,
            resumed: None,
        }
    }
}

/// What carried over from the runs of a level before a resume, for the summary. Every
/// resumable algorithm's checkpoint holds these fields, in this order ([`Carried::write`]):
///
/// ```text
/// field                                            type
/// seconds of the runs so far                       f64
/// work-file bytes read, written                    u64, u64
/// exits phase: seconds, storage bytes read         f64, u64 (u64::MAX: unknown)
/// exits phase: passes over the lower levels        u32
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Carried {
    /// Seconds of the earlier runs, up to their last checkpoint.
    pub(crate) seconds: f64,
    /// Work-file bytes they read and wrote.
    pub(crate) read: u64,
    pub(crate) written: u64,
    /// Their exits phase: seconds, storage bytes read (`None`: not known), passes.
    pub(crate) exits_seconds: f64,
    pub(crate) exits_read: Option<u64>,
    pub(crate) passes: u32,
}

impl Default for Carried {
    /// Nothing yet: no run, so nothing read.
    fn default() -> Carried {
        Carried {
            seconds: 0.0,
            read: 0,
            written: 0,
            exits_seconds: 0.0,
            exits_read: Some(0),
            passes: 0,
        }
    }
}

impl Carried {
    /// The exits phase of every run, with the lower levels' size.
    pub(crate) fn exits(&self, lower_bytes: u64) -> ExitsStats {
        ExitsStats {
            seconds: self.exits_seconds,
            bytes_read: self.exits_read,
            lower_bytes,
            passes: self.passes,
        }
    }

    /// Add an exits phase (or part of one) of this run.
    pub(crate) fn add_exits(&mut self, seconds: f64, read: Option<u64>, passes: u32) {
        self.exits_seconds += seconds;
        self.exits_read = self.exits_read.zip(read).map(|(a, b)| a + b);
        self.passes += passes;
    }

    /// Append its fields to a checkpoint's (see the type).
    pub(crate) fn write(&self, f: &mut Fields) {
        f.f64(self.seconds)
            .u64(self.read)
            .u64(self.written)
            .f64(self.exits_seconds)
            .u64(self.exits_read.unwrap_or(u64::MAX))
            .u32(self.passes);
    }

    /// Read its fields back, refusing times and totals no run reaches.
    pub(crate) fn read(r: &mut FieldReader) -> Result<Carried, CheckpointError> {
        let (seconds, read, written) = (r.seconds()?, r.tally()?, r.tally()?);
        let exits_seconds = r.seconds()?;
        let exits_read = match r.u64()? {
            u64::MAX => None,
            b if b <= crate::checkpoint::TALLY_MAX => Some(b),
            b => return Err(r.unusable(format!("a total of {b} that no run reaches"))),
        };
        Ok(Carried {
            seconds,
            read,
            written,
            exits_seconds,
            exits_read,
            passes: r.tally_u32()?,
        })
    }
}

/// The level algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// In memory when the level fits the memory budget, else low-memory.
    #[default]
    Auto,
    /// 2 bytes of RAM per position (8 with depth tables): the fastest; its state saved every few
    /// minutes, at a step boundary, where the disk has room (see [`memory`]).
    InMemory,
    /// 0.67 bytes of RAM per position, exits and values streamed from disk (see [`crate::lowmem`]).
    LowMemory,
    /// 0.25 bytes of RAM per position (under 0.33 in all), no counters, a checkpoint every few
    /// minutes: resumes inside a level (see [`crate::twobit`]).
    TwoBit,
    /// 0.125 bytes of RAM per position (about 0.16 in all): the two-bit algorithm with one bit
    /// a position, settled or not, its losses published predecessors first and the exits it
    /// must know read from its exit lists on disk (see [`crate::twobit`]).
    OneBit,
}

impl Mode {
    /// The name `--mode` and the summary use.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::InMemory => "memory",
            Mode::LowMemory => "low-memory",
            Mode::TwoBit => "two-bit",
            Mode::OneBit => "one-bit",
        }
    }
}
