//! # awari-solver
//!
//! The parallel retrograde builder of Awari databases: one level per seed count, solved on
//! all cores and written as a memory-mapped table, then verified.
//!
//! ```text
//! report/         what the command line prints: progress bars, summaries, plan, cluster
//! distributed/    the same build over MPI ranks (comm: the messages)
//! build/          the levels in order: the algorithm chosen (cost), then the one driver of a
//!                 level (build/level: solve → write → finish) for every algorithm, local or
//!                 a rank's slice; with --depth the depth pass, with --compress compress
//! verify          every entry recomputed from its children (streamed, or by lookup), and
//!                 with --prove the depth passes; compare and stats beside it
//! cost            the cost model: memory, disk, traffic and time per level, calibration
//! depth/          the depth passes (by waves, by value classes), their work files
//! compress        the compressed forms, written from a level
//! streamed        the streamed check's steps (verify's, and the class pass's value check)
//! level/          phase 2, one file per algorithm: memory, lowmem (0.67 B/pos), twobit
//!                 (0.33 B/pos, resumable); the algorithm's name (Mode)
//! exits           phase 1: the lower levels streamed in order and un-captured
//! settle, state, checkpoint, seed_records, grain, progress, sys: the pieces underneath
//! ```
//!
//! Modules import only what is below them in this picture (doc links aside): an algorithm
//! never calls back into `build`, the cost model never into what prints it.
#![warn(missing_docs)]

pub mod build;
mod checkpoint;
pub mod compare;
pub mod compress;
pub mod cost;
pub mod depth;
pub mod distributed;
pub mod exits;
mod grain;
pub mod level;
mod position_set;
pub mod progress;
pub mod report;
mod seed_records;
mod settle;
pub mod sparse_set;
mod state;
pub mod stats;
mod streamed;
pub mod sys;
pub mod verify;

pub use build::{build, BuildError, BuildOptions, LevelReport};
pub use checkpoint::CheckpointError;
pub use distributed::comm;
pub use level::{lowmem, twobit, LevelBuilder, LevelCounts};
pub use progress::{Progress, Silent};
pub use report::plan;
