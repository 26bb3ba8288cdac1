//! Helpers shared by the solver's integration tests (included with `mod common;`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use awari_db::{level_exists, level_path, Rules};
use awari_solver::build::{build, BuildOptions, Mode};
use awari_solver::Silent;

/// A fresh (removed if present) directory under the system's temporary directory, named after
/// this process and `name`.
pub fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("awari-solver-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Build levels 0..=`max` of `dir` with `mode` on a pool of `threads` threads.
pub fn build_mode(dir: &Path, threads: usize, rules: Rules, max: u32, mode: Mode) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let opts = BuildOptions {
            dir: dir.to_path_buf(),
            max_stones: max,
            rules,
            memory: None,
            depth: false,
            mode,
            compress: false,
        };
        build(&opts, &Silent, |_| {}).unwrap();
    });
}

/// Copy the tables of `levels` (those that exist) from `from` into `to`, creating it.
pub fn copy_levels(from: &Path, to: &Path, levels: impl IntoIterator<Item = u32>) {
    std::fs::create_dir_all(to).unwrap();
    for n in levels.into_iter().filter(|&n| level_exists(n)) {
        std::fs::copy(level_path(from, n), level_path(to, n)).unwrap();
    }
}

/// Level `n` of `a` and of `b` are the same file, byte for byte.
pub fn assert_level_same(a: &Path, b: &Path, n: u32) {
    let x = std::fs::read(level_path(a, n)).unwrap();
    let y = std::fs::read(level_path(b, n)).unwrap();
    assert!(
        x == y,
        "level {n} differs between {} and {}",
        a.display(),
        b.display()
    );
}
