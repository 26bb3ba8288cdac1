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
}

impl Mode {
    /// The name `--mode` and the summary use.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::InMemory => "memory",
            Mode::LowMemory => "low-memory",
            Mode::TwoBit => "two-bit",
        }
    }
}
