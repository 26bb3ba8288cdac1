//! # awari-solver
//!
//! The parallel retrograde builder of Awari databases: one level per seed count, solved on
//! all cores and written as a memory-mapped table, then verified.
//!
//! ```text
//! build           the driver of one level: choose the algorithm → exits → settle → write
//!  ├─ exits       phase 1: the lower levels streamed in order and un-captured
//!  ├─ level/      phase 2, one file per algorithm: memory, lowmem (0.67 B/pos),
//!  │              twobit (0.33 B/pos, resumable), and rounds (the in-memory propagation
//!  │              of large levels)
//!  ├─ settle      the settling core they share: state words, seeds, propagation
//!  └─ compress    (with --compress) each level compressed once it is built
//! distributed/    the same build over MPI ranks (comm: the messages)
//! verify          every entry recomputed from its children; compare, stats
//! report/         what the command line prints: progress bars, summary, plan
//! progress, state, sys, depth: the pieces underneath
//! ```
//!
//! Modules only import downwards in this picture: an algorithm never calls back into `build`.
#![warn(missing_docs)]

pub mod build;
mod checkpoint;
pub mod compare;
pub mod compress;
pub mod depth;
pub mod distributed;
pub mod exits;
pub mod level;
pub mod progress;
pub mod report;
mod seed_records;
mod settle;
mod state;
pub mod stats;
pub mod sys;
pub mod verify;

pub use build::{build, BuildError, BuildOptions, LevelReport};
pub use checkpoint::CheckpointError;
pub use distributed::comm;
pub use level::{lowmem, twobit, LevelBuilder, LevelCounts};
pub use progress::{Progress, Silent};
pub use report::plan;
