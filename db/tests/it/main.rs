//! The db crate's integration tests, in one binary: one link instead of one per file, and
//! libtest runs every test of the crate in parallel (`cargo test -p awari-db --test it`;
//! a module's tests: `cargo test -p awari-db --test it moves::`).

mod common;
mod compressed;
mod cross_wari;
mod fuzz_regressions;
mod index;
mod moves;
mod properties;
mod table;
mod uncaptures;
mod unmoves;
