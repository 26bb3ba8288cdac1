//! Phase 2 of a level, settling (docs/design.md, "Building a level"), one file per algorithm;
//! all three write the same tables, byte for byte, and share the core in `crate::settle`:
//!
//! - [`memory`]: 2 bytes of RAM per position, the fastest; large levels propagate in
//!   [`rounds`](self) of updates grouped by region;
//! - [`lowmem`]: 0.67 bytes per position, the exits and values streamed from a work file;
//! - [`twobit`]: under 0.33 bytes per position, no counters, exits and values in files
//!   written and read about once, checkpoints by time.
//!
//! The in-memory builder's items are re-exported here (`level::LevelBuilder`, …).

pub mod lowmem;
pub mod memory;
pub(crate) mod rounds;
pub mod twobit;

pub use memory::*;
