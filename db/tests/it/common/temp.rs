//! The integration tests' temporary directories, one helper for the three crates (the solver's
//! and the probe's tests include this file with `#[path]`).
//!
//! A test binary runs its tests in parallel in one process, each on a thread of its own: two
//! tests that picked the same name would remove each other's files (two db files' `chunks`
//! once did). So a name belongs to the first test (thread) that asks for it, and another test
//! asking for it fails at once, naming it. Within one test, asking again (as a loop does, for
//! a fresh copy each round) gives the same path, what the last round left removed. The path holds no test name:
//! tests match error messages, which name the files, against words.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::thread::ThreadId;

/// A fresh directory for this test: `awari-CRATE-PID-name` under the system's temporary
/// directory, removed if present and not created.
///
/// # Panics
/// If another test of this process has asked for `name`.
pub fn temp(name: &str) -> PathBuf {
    static OWNERS: Mutex<BTreeMap<String, ThreadId>> = Mutex::new(BTreeMap::new());
    let me = std::thread::current().id();
    let owner = *OWNERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(name.to_string())
        .or_insert(me);
    assert!(
        owner == me,
        "two tests use the temporary directory {name:?}: give this one another name"
    );
    let d = std::env::temp_dir().join(format!(
        "{}-{}-{name}",
        env!("CARGO_PKG_NAME"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// [`temp`], created (empty).
pub fn temp_created(name: &str) -> PathBuf {
    let d = temp(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}
