//! The probe crate's integration tests, in one binary: one link instead of one per file, and
//! libtest runs every test of the crate in parallel (`cargo test -p awari-probe --test it`;
//! a module's tests: `cargo test -p awari-probe --test it cli::`).

mod cli;
mod common;
mod hostile;
mod perfect_play;
mod properties;
mod serve;
