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

/// The level algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// In memory when the level fits the memory budget, else low-memory.
    #[default]
    Auto,
    /// 2 bytes of RAM per position (8 with depth tables): the fastest.
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
