//! # awari-solver
//!
//! The parallel retrograde builder of Awari databases: one level per seed count, each solved
//! in memory on all cores (see [`level`]) and written as a memory-mapped table.
#![warn(missing_docs)]

pub mod build;
pub mod comm;
pub mod compare;
pub mod compress;
pub mod depth;
pub mod distributed;
pub mod exits;
pub mod level;
pub mod lowmem;
pub mod plan;
pub mod report;
mod rounds;
mod state;
pub mod stats;
pub mod sys;
pub mod twobit;
pub mod verify;

pub use build::{build, BuildError, BuildOptions, LevelReport};
pub use level::{LevelBuilder, LevelCounts, Progress, Silent};
