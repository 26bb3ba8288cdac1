//! The solver crate's integration tests, in one binary: one link instead of one per file, and
//! libtest runs every test of the crate in parallel (`cargo test -p awari-solver --test it`;
//! a module's tests: `cargo test -p awari-solver --test it depth::`). The slow tier is the
//! tests marked `#[ignore]`, most of them in [`levels_to_20`].

mod build_depths;
mod build_json;
mod common;
mod compare;
mod contracts;
mod damage;
mod depth;
mod depth_classes;
mod depth_one_bit;
mod determinism;
mod distributed;
mod fuzz_regressions;
mod levels_to_20;
mod plan;
mod progress;
mod published;
mod reference;
mod verify;
