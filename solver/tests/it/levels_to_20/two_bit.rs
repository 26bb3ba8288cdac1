//! The two-bit algorithm writes the in-memory algorithm's tables, byte for byte: every level
//! up to 20 under awari (level 19 by a build killed again and again, level 20 by `build
//! --mode auto` under a memory budget) and 16 under the other rule sets
//! ([`super::top_of`]), with exits in many buckets (a build killed again and again:
//! [`super::killed`]).

use std::path::Path;
use std::process::Command;

use awari_db::{level_exists, level_path, level_size, Levels, Rules};
use awari_solver::build::{build_level, Mode, Plan};
use awari_solver::Silent;

use super::{assert_level_same, build_mode, copy_levels, reference, temp, top_of, TOP};

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// The files in `dir` other than the tables of levels 0..=max.
pub(super) fn extra_files(dir: &Path, max: u32) -> Vec<String> {
    let tables: Vec<String> = (0..=max)
        .filter(|&n| level_exists(n))
        .map(|n| {
            level_path(dir, n)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| !tables.contains(f))
        .collect()
}

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn two_bit_writes_the_same_bytes_on_every_level_to_20() {
    for rules in Rules::ALL {
        let mem = reference(rules);
        // Awari's level 20 is the auto mode's test below and its level 19 the killed build's
        // (the same algorithm, under a memory budget, each compared byte for byte with the
        // in-memory table): building them here too would be two minutes of CPU for the same
        // bytes.
        let top = top_of(rules).min(TOP - 2);
        // More threads than the CI machine's cores: streams and propagations interleave.
        let dir = temp(&format!("two-bit-{rules}"));
        build_mode(&dir, 3, rules, top, Mode::TwoBit);
        for n in (0..=top).filter(|&n| level_exists(n)) {
            assert_level_same(mem, &dir, n);
        }
        assert_eq!(extra_files(&dir, top), Vec::<String>::new(), "{rules}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// The one-bit variant: the same bytes on every level to 20 under awari and to 16 under the
/// other rule sets, its candidates spilled to disk after every batch of seeds and every group
/// of a round (a store of 1 byte) under awari, and held in RAM under the others.
#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn one_bit_writes_the_same_bytes_on_every_level_to_20() {
    let bin = crate::common::BIN;
    for rules in Rules::ALL {
        let mem = reference(rules);
        let top = top_of(rules);
        let dir = temp(&format!("one-bit-{rules}"));
        let mut cmd = Command::new(bin);
        cmd.args(["build", "--mode", "one-bit", "--threads", "3", "--rules"])
            .arg(rules.to_string())
            .args(["--max-stones", &top.to_string(), "--db"])
            .arg(&dir)
            .stdout(std::process::Stdio::null());
        if rules == Rules::Awari {
            cmd.env("AWARI_CANDIDATE_BYTES", "1");
        }
        assert!(cmd.status().unwrap().success(), "{rules}");
        for n in (0..=top).filter(|&n| level_exists(n)) {
            assert_level_same(mem, &dir, n);
        }
        assert_eq!(extra_files(&dir, top), Vec::<String>::new(), "{rules}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Exits in the smallest buckets, one checksum chunk (4 Mi positions, what the conversion
/// writes a bucket at a time in): levels 15..17 under awari take 2, 4 and 5 passes over their
/// lower levels, each followed by a checkpoint, and their log has as many part files. Under awari only: the bucket
/// code (which positions a pass streams, where it checkpoints) does not look at the rules, and
/// the exits each rule set streams are the ones `two_bit_writes_the_same_bytes_on_every_level_to_20`
/// already checks under all three, in one bucket.
#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn two_bit_exit_buckets_write_the_same_bytes() {
    let rules = Rules::Awari;
    let mem = reference(rules);
    let dir = temp(&format!("buckets-{rules}"));
    copy_levels(mem, &dir, 0..15);
    let levels_passes = [(15, 2), (16, 4), (17, 5)];
    for (n, passes) in levels_passes {
        let levels = Levels::open(&dir, Some(rules)).unwrap();
        let built = pool(2)
            .install(|| build_level(&dir, n, rules, &levels, Plan::TwoBit { bucket: 1 }, &Silent))
            .unwrap();
        assert_eq!(built.exits.passes, passes, "{rules} level {n}");
        assert!(built.resumed.is_none());
        assert_level_same(mem, &dir, n);
    }
    assert_eq!(extra_files(&dir, 17), Vec::<String>::new(), "{rules}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `build --mode auto` takes the two-bit algorithm for a level that fits neither 2 bytes nor
/// the low-memory algorithm's 0.67 bytes per position of `--memory`, and keeps under 0.33.
/// It is also the test of awari's level 20 in two-bit mode: the bytes are the reference's.
#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn auto_mode_takes_two_bit_when_low_memory_does_not_fit() {
    use awari_solver::{lowmem, twobit};
    let rules = Rules::Awari;
    let mem = reference(rules);
    let dir = temp("two-bit-auto");
    copy_levels(mem, &dir, 0..TOP);
    let (two_bit, low) = (
        twobit::memory_needed(TOP, 2, twobit::StateBits::Two),
        lowmem::memory_needed(TOP, 2),
    );
    assert!(two_bit < low, "{two_bit} {low}");
    let budget = (two_bit + low) / 2;
    // The binary, so that the peak memory measured is this build's alone (the tests of this
    // file run side by side in one process).
    let out = Command::new(crate::common::BIN)
        .args(["build", "--threads", "2", "--max-stones", "20", "--memory"])
        .arg(budget.to_string())
        .arg("--db")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("20"))
        .unwrap_or_else(|| panic!("no row for level 20: {text}"))
        .split_whitespace()
        .collect();
    // level positions seconds pos/s RSS(2) B/pos anon(2) B/pos … mode
    assert_eq!(row.last(), Some(&"two-bit"), "{text}");
    let anon_per_position: f64 = row[9].parse().unwrap();
    let allowed = budget as f64 / level_size(TOP) as f64;
    assert!(
        anon_per_position <= allowed,
        "{anon_per_position} > {allowed} B/pos: {text}"
    );
    assert_level_same(mem, &dir, TOP);
    std::fs::remove_dir_all(&dir).unwrap();
}
