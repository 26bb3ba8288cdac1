//! The slow tier's reference database, built once and shared by every test and every test
//! binary that needs it (the solver's `levels_to_20`, the probe's `perfect_play`): levels
//! 0..=[`shared_top`] of a rule set (20 under awari, 16 under the others) built by the
//! in-memory algorithm (the reference), with their depths beside them in [`in_memory_depths`],
//! from the independent breadth-first solver of `depths.rs`.
//!
//! ```text
//! <target>/tmp/reference-<rules>-<key>/        level-NN.values, 0..=20 (18)
//!                                  in-memory-depth/   level-NN.depth, 0..=20 (18)
//! <target>/tmp/reference-<rules>.lock          held while it is checked or built
//! <target>/tmp/reference-<rules>-<key>.in-use   held shared by each process that uses it
//! ```
//!
//! `<key>` is a hash of the Rust sources that write it (`db/src`, `solver/src`, this file and
//! `depths.rs`): a change to any of them builds a new one, and an unchanged tree reuses the
//! last one once its checksums verify. A file lock makes processes that start together
//! (nextest, two test binaries) build it once; it is built in `*.tmp` and renamed, so a killed
//! build leaves no half reference behind ([`shared_dir`], which the probe's tests use too).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use awari_db::{depth_path, level_exists, Content, Expect, Levels, Rules, Table};
use awari_solver::build::{build_level, Plan};
use awari_solver::Silent;

#[path = "depths.rs"]
pub mod depths;

/// The highest level of the shared reference, under awari.
pub const SHARED_TOP: u32 = 20;

/// The highest level of the shared reference under `rules`: [`SHARED_TOP`] under awari, 16
/// under the other rule sets. The rule sets differ only in their moves and captures, which the
/// db tests check against OpenSpiel, by hand, exhaustively on small levels and on random
/// boards up to 48 seeds; what depends on a level's size (the exits' window of 2^25
/// positions, the depth pass's split at 2^26, the distributed window of 2^24, the compressor's
/// batches of 2^24) does not look at the rules, and awari's levels 17 to 20 take it. Levels
/// 0..16 hold 16 % of the positions of levels 0..20, so each other rule set's builds,
/// identities and depth checks cost a sixth of awari's (CI's time: 18 made them half).
pub fn shared_top(rules: Rules) -> u32 {
    match rules {
        Rules::Awari => SHARED_TOP,
        _ => 16,
    }
}

/// The directory of the in-memory builder's depth tables of `reference`.
pub fn in_memory_depths(reference: &Path) -> PathBuf {
    reference.join("in-memory-depth")
}

/// Levels 0..=[`shared_top`] under `rules`, built in memory with their depths: the directory
/// of their values (see the module's documentation). Built on the first call of any process
/// for this tree of sources; later calls, here or in other processes, reuse it.
pub fn shared_reference(rules: Rules) -> PathBuf {
    let key = sources_key(&[
        "solver/tests/it/common/reference.rs",
        "solver/tests/it/common/depths.rs",
    ]);
    shared_dir(
        &format!("reference-{rules}"),
        key,
        |dir| verifies(dir, rules),
        |dir| build_reference(dir, rules),
    )
}

/// `<target>/tmp/<name>-<key>`, written by `build` on the first call of any process for this
/// `key` and reused by later calls, here or in other processes, while `verifies` accepts it.
/// `build` writes `<name>-<key>.tmp`, renamed when it returns; a file lock, `<name>.lock`,
/// makes processes that start together (nextest, two test binaries) build it once. Before a
/// build, the copies of other keys go (and a killed build's leftovers), but not one that a
/// running process uses: each process holds `<name>-<key>.in-use` locked shared while it lives.
/// So a tree of sources keeps one copy, whatever the number of runs.
pub fn shared_dir(
    name: &str,
    key: u64,
    verifies: impl FnOnce(&Path) -> bool,
    build: impl FnOnce(&Path),
) -> PathBuf {
    use rustix::fs::{flock, FlockOperation};
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(tmp).unwrap();
    let lock = std::fs::File::create(tmp.join(format!("{name}.lock"))).unwrap();
    flock(&lock, FlockOperation::LockExclusive).unwrap();
    let ours = format!("{key:016x}");
    let path = |k: &str, ext: &str| tmp.join(format!("{name}-{k}{ext}"));
    let dir = path(&ours, "");
    // Held for the rest of this process (the file stays open: its lock goes when it exits).
    let in_use = std::fs::File::create(path(&ours, ".in-use")).unwrap();
    flock(&in_use, FlockOperation::LockShared).unwrap();
    std::mem::forget(in_use);
    if dir.exists() && verifies(&dir) {
        return dir;
    }
    let prefix = format!("{name}-");
    let mut keys: Vec<String> = std::fs::read_dir(tmp)
        .unwrap()
        .filter_map(|e| {
            let file = e.unwrap().file_name().to_string_lossy().into_owned();
            Some(file.strip_prefix(&prefix)?.get(..16)?.to_string())
        })
        .collect();
    keys.sort();
    keys.dedup();
    let remove = |k: &str| {
        for p in [path(k, ""), path(k, ".tmp")] {
            if p.exists() {
                std::fs::remove_dir_all(&p).unwrap();
            }
        }
    };
    for k in keys.iter().filter(|k| **k != ours) {
        let other = std::fs::File::create(path(k, ".in-use")).unwrap();
        if flock(&other, FlockOperation::NonBlockingLockExclusive).is_ok() {
            remove(k);
            std::fs::remove_file(path(k, ".in-use")).unwrap();
        }
    }
    remove(&ours);
    build(&path(&ours, ".tmp"));
    std::fs::rename(path(&ours, ".tmp"), &dir).unwrap();
    dir
}

/// Build levels 0..=[`shared_top`] into `dir` in memory, and each level's depth table into
/// [`in_memory_depths`] (see `depths.rs`).
fn build_reference(dir: &Path, rules: Rules) {
    let out = in_memory_depths(dir);
    std::fs::create_dir_all(&out).unwrap();
    for n in (0..=shared_top(rules)).filter(|&n| level_exists(n)) {
        let lower = Levels::open(dir, Some(rules)).unwrap();
        build_level(dir, n, rules, &lower, Plan::InMemory, &Silent).unwrap();
        let levels = Levels::open(dir, Some(rules)).unwrap();
        depths::write_depth_table(&levels, n, rules, &out);
    }
}

/// Every table of the reference in `dir` is there and its checksum holds.
fn verifies(dir: &Path, rules: Rules) -> bool {
    (0..=shared_top(rules))
        .filter(|&n| level_exists(n))
        .all(|n| {
            let expect = |content| Expect {
                rules: Some(rules),
                seeds: Some(n),
                content: Some(content),
            };
            let values = Table::open(awari_db::level_path(dir, n), expect(Content::Values));
            let depth = Table::open(
                depth_path(&in_memory_depths(dir), n),
                expect(Content::Depth),
            );
            matches!((values, depth), (Ok(v), Ok(d)) if v.verify().is_ok() && d.verify().is_ok())
        })
}

/// A hash of the Rust sources under `db/src` and `solver/src` and of the files `extra` (paths
/// from the workspace's root): what a directory built from them depends on. Where one of them
/// changed after this test binary was built (it was built from other sources), the key is
/// this process's own, never reused.
pub fn sources_key(extra: &[&str]) -> u64 {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    for d in ["db/src", "solver/src"] {
        collect(&root.join(d), &mut files);
    }
    files.extend(extra.iter().map(|f| root.join(f)));
    files.sort();
    let built = std::fs::metadata(std::env::current_exe().unwrap())
        .and_then(|m| m.modified())
        .unwrap();
    let mut all = Vec::new();
    for f in files {
        all.extend_from_slice(f.strip_prefix(root).unwrap().to_string_lossy().as_bytes());
        all.push(0);
        all.extend_from_slice(&std::fs::read(&f).unwrap());
        if std::fs::metadata(&f).unwrap().modified().unwrap() > built {
            let now = std::time::SystemTime::now();
            all.extend_from_slice(format!("{} {now:?}", std::process::id()).as_bytes());
        }
    }
    awari_db::table::checksum(&all)
}

/// The `.rs` files under `dir` (an editor's hidden files, such as a lock that is a dangling
/// link or a swap file, are not sources).
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            collect(&p, out);
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}
