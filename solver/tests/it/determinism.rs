//! Tables are byte-identical whatever the thread count, and a build killed mid-level and
//! restarted writes the same bytes as one that was not interrupted.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common;
use awari_db::{depth_path, level_exists, level_path, Rules};

use awari_solver::build::{build, BuildOptions, Mode};
use awari_solver::Silent;
use common::{assert_level_same, build_mode, temp};

fn build_with_threads(dir: &Path, threads: usize, rules: Rules, max: u32) {
    build_mode(dir, threads, rules, max, Mode::InMemory);
}

fn assert_same(a: &Path, b: &Path, max: u32) {
    for n in (0..=max).filter(|&n| level_exists(n)) {
        assert_level_same(a, b, n);
    }
}

#[test]
fn same_bytes_with_one_two_and_four_threads() {
    for rules in Rules::ALL {
        // The other rule sets differ in their moves alone: fewer levels (the slow tier takes
        // them to 16 under every mode).
        let top = if rules == Rules::Awari { 13 } else { 11 };
        let one = temp(&format!("t1-{rules}"));
        let two = temp(&format!("t2-{rules}"));
        let four = temp(&format!("t4-{rules}"));
        build_with_threads(&one, 1, rules, top);
        build_with_threads(&two, 2, rules, top);
        build_with_threads(&four, 4, rules, top);
        assert_same(&one, &two, top);
        assert_same(&one, &four, top);
        for d in [one, two, four] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }
}

#[test]
fn killed_build_resumes_to_the_same_bytes() {
    let bin = crate::common::BIN;
    let max = 16;
    let clean = temp("clean");
    build_with_threads(&clean, 2, Rules::Awari, max);
    let killed = temp("killed");
    for delay_ms in [300u64, 900, 1700] {
        let mut child = Command::new(bin)
            .args(["build", "--max-stones", &max.to_string(), "--db"])
            .arg(&killed)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL: no chance to clean up
        child.wait().unwrap();
    }
    let status = Command::new(bin)
        .args(["build", "--max-stones", &max.to_string(), "--db"])
        .arg(&killed)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert_same(&clean, &killed, max);
    let leftovers: Vec<_> = std::fs::read_dir(&killed)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "stale temporary files: {leftovers:?}");
    for d in [clean, killed] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// The fast tier's check of the two-bit algorithm (the slow tier, `tests/levels_to_20`, checks
/// every level to 20 under the three rule sets, its buckets and resumes): the same bytes as in
/// memory to 14 seeds.
#[test]
fn two_bit_mode_writes_the_same_bytes() {
    let rules = Rules::Awari;
    let mem = temp(&format!("tb-mem-{rules}"));
    let two = temp(&format!("tb-two-{rules}"));
    build_mode(&mem, 2, rules, 14, Mode::InMemory);
    // More threads than cores: streams and propagations interleave.
    build_mode(&two, 3, rules, 14, Mode::TwoBit);
    assert_same(&mem, &two, 14);
    for d in [mem, two] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// The fast tier's check of the one-bit algorithm (the slow tier checks every level to 20
/// under every rule set, and its kills): the same bytes as in memory to 14 seeds, under awari
/// and cross-wari (sown both ways), with more threads than cores.
#[test]
fn one_bit_mode_writes_the_same_bytes() {
    for rules in [Rules::Awari, Rules::CrossWari] {
        let mem = temp(&format!("ob-mem-{rules}"));
        let one = temp(&format!("ob-one-{rules}"));
        build_mode(&mem, 2, rules, 14, Mode::InMemory);
        build_mode(&one, 3, rules, 14, Mode::OneBit);
        assert_same(&mem, &one, 14);
        for d in [mem, one] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }
}

/// Candidates spilled to disk after every batch of seeds and every group of a round (a store
/// of 1 byte, through the binary's environment), each round reading them beside those held:
/// the same bytes, and spills made (the builder's timings say how many).
#[test]
fn one_bit_candidates_spilled_write_the_same_bytes() {
    let bin = crate::common::BIN;
    let mem = temp("ob-spilled-mem");
    let one = temp("ob-spilled-one");
    build_mode(&mem, 2, Rules::Awari, 13, Mode::InMemory);
    let out = Command::new(bin)
        .args([
            "build",
            "--mode",
            "one-bit",
            "--threads",
            "2",
            "--max-stones",
            "13",
            "--db",
        ])
        .arg(&one)
        .env("AWARI_CANDIDATE_BYTES", "1")
        .env("AWARI_TIMINGS", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_same(&mem, &one, 13);
    // "level 13 step 1: … spill files N so far, …"
    let stderr = String::from_utf8_lossy(&out.stderr);
    let spills: u64 = stderr
        .lines()
        .filter(|l| l.starts_with("level 13 step 1:"))
        .filter_map(|l| {
            l.split("spill files ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .next()
        .expect("the timings of level 13's last step");
    assert!(spills >= 10, "only {spills} spills at level 13");
    assert!(!one.join("level-13.work").exists());
    for d in [mem, one] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn low_memory_mode_writes_the_same_bytes() {
    for rules in Rules::ALL {
        let mem = temp(&format!("mem-{rules}"));
        let low1 = temp(&format!("low1-{rules}"));
        let low2 = temp(&format!("low2-{rules}"));
        // More threads than cores: chunks streamed while others propagate into them.
        let low5 = temp(&format!("low5-{rules}"));
        build_mode(&mem, 2, rules, 14, Mode::InMemory);
        build_mode(&low1, 1, rules, 14, Mode::LowMemory);
        build_mode(&low2, 2, rules, 14, Mode::LowMemory);
        build_mode(&low5, 5, rules, 14, Mode::LowMemory);
        assert_same(&mem, &low1, 14);
        assert_same(&mem, &low2, 14);
        assert_same(&mem, &low5, 14);
        // The work array is removed.
        assert!(std::fs::read_dir(&low2).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("work")));
        for d in [mem, low1, low2, low5] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }
}

#[test]
fn auto_mode_switches_to_low_memory_under_a_small_budget() {
    let dir = temp("auto");
    let opts = BuildOptions {
        dir: dir.clone(),
        max_stones: 14,
        rules: Rules::Awari,
        // With 2 threads: level 13 needs 7.4 MB in memory; level 14 needs 13.1 MB in memory
        // but 7.6 MB in low-memory mode.
        memory: Some(10 << 20),
        depth: false,
        mode: Mode::Auto,
        compress: false,
        depth_form: Default::default(),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let (_, reports) = pool.install(|| build(&opts, &Silent, |_| {})).unwrap();
    let modes: Vec<_> = reports.iter().map(|r| r.mode).collect();
    assert_eq!(modes[13], Some(Mode::InMemory));
    assert_eq!(modes[14], Some(Mode::LowMemory));
    // Too small for either: a clear error naming the level (level 10 needs 1.05 MB).
    let small = temp("auto-small");
    let err = pool
        .install(|| {
            build(
                &BuildOptions {
                    dir: small.clone(),
                    memory: Some(1 << 20),
                    ..opts.clone()
                },
                &Silent,
                |_| {},
            )
        })
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("level 10 needs") && err.contains("memory"),
        "{err}"
    );
    std::fs::remove_dir_all(&small).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `auto` resumes a level begun out of core in the algorithm it began in, even where the level
/// now fits in memory (`--mode`'s help: "a level begun in one of them resumes in it"; it once
/// began such a level again in memory, and the work was lost): level 14 begun in low-memory
/// and in two-bit mode, stopped in its settling steps, resumes under `auto` with no memory
/// limit in its own algorithm, to the in-memory build's bytes.
#[test]
fn auto_mode_resumes_a_level_in_the_algorithm_it_began_in() {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    std::env::set_var("AWARI_CHECKPOINT_SECONDS", "0");
    let mem = temp("auto-resume-memory");
    build_mode(&mem, 2, Rules::Awari, 14, Mode::InMemory);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    for began in [Mode::LowMemory, Mode::TwoBit] {
        let dir = temp(&format!("auto-resume-{}", began.name()));
        common::copy_levels(&mem, &dir, 0..14);
        let opts = BuildOptions {
            dir: dir.clone(),
            max_stones: 14,
            rules: Rules::Awari,
            memory: None,
            depth: false,
            mode: began,
            compress: false,
            depth_form: Default::default(),
        };
        // Its exits and settling phases, then a message a step: stopped after a few steps.
        let stop = common::StopAt::new(6);
        let stopped = catch_unwind(AssertUnwindSafe(|| {
            pool.install(|| build(&opts, &stop, |_| {}))
        }));
        assert!(stopped.is_err(), "{}: not stopped", began.name());
        let auto = BuildOptions {
            mode: Mode::Auto,
            ..opts
        };
        let (_, reports) = pool.install(|| build(&auto, &Silent, |_| {})).unwrap();
        assert_eq!(reports[14].mode, Some(began));
        assert!(reports[14].resumed.is_some(), "{}", began.name());
        assert_same(&mem, &dir, 14);
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::remove_dir_all(&mem).unwrap();
}

/// The low-memory exits phase in several buckets (each a stream of the lower levels that keeps
/// only the parents inside the bucket) writes the same bytes as one bucket in memory.
#[test]
fn low_memory_exit_buckets_write_the_same_bytes() {
    low_memory_exit_buckets(&[Rules::Awari]);
}

/// [`low_memory_exit_buckets_write_the_same_bytes`] under the other two rule sets.
#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn low_memory_exit_buckets_under_abapa_and_grand_slam() {
    low_memory_exit_buckets(&[Rules::Abapa, Rules::GrandSlam]);
}

fn low_memory_exit_buckets(rule_sets: &[Rules]) {
    use awari_db::Levels;
    use awari_solver::build::{build_level, Plan};
    let (lo, hi) = (11, 15);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    for &rules in rule_sets {
        let mem = temp(&format!("bucket-mem-{rules}"));
        build_mode(&mem, 2, rules, hi, Mode::InMemory);
        let low = temp(&format!("bucket-low-{rules}"));
        std::fs::create_dir_all(&low).unwrap();
        for n in (0..lo).filter(|&n| level_exists(n)) {
            std::fs::copy(level_path(&mem, n), level_path(&low, n)).unwrap();
        }
        for n in lo..=hi {
            let levels = Levels::open(&low, Some(rules)).unwrap();
            // One chunk (786,432 positions) per bucket: levels 11..15 take 1 to 8 passes.
            let built = pool
                .install(|| {
                    build_level(
                        &low,
                        n,
                        rules,
                        &levels,
                        Plan::LowMemory { bucket: 1 },
                        &Silent,
                    )
                })
                .unwrap();
            let size = awari_db::level_size(n);
            assert_eq!(
                u64::from(built.exits.passes),
                size.div_ceil(786_432),
                "level {n}"
            );
        }
        assert_same(&mem, &low, hi);
        for d in [mem, low] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }
}

/// A second build, a depth pass or a proof into a directory that a build is writing into is
/// refused at once, with one line that says so, and changes nothing; once the first is killed (SIGKILL), its lock is
/// gone with it and the next build finishes the work.
#[test]
fn a_second_build_into_the_same_directory_is_refused() {
    let bin = crate::common::BIN;
    let dir = temp("locked");
    std::fs::create_dir_all(&dir).unwrap();
    let args = ["build", "--max-stones", "18", "--threads", "1", "--db"];
    let mut first = Command::new(bin)
        .args(args)
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Under way once its first table is in place.
    while !level_path(&dir, 0).exists() {
        assert!(first.try_wait().unwrap().is_none(), "the first build ended");
        std::thread::sleep(Duration::from_millis(5));
    }
    // A second build, a depth pass, a proof (whose work files would go there too) and a
    // compression into it.
    let source = temp("locked-source");
    build_mode(&source, 1, Rules::Awari, 3, Mode::InMemory);
    let compress = ["compress", "--db", source.to_str().unwrap(), "--out"];
    let dir_arg = dir.to_str().unwrap();
    for second in [
        &args[..],
        &["depth", "--db"],
        &["verify", "--prove", "--stones", "0", "--db"],
        &compress[..],
    ] {
        let start = std::time::Instant::now();
        let out = Command::new(bin)
            .args(second)
            .arg(dir_arg)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{second:?}: {said}");
        assert!(
            said.contains("another awari-solver process (a build, a depth pass, a compression or a proof) is writing into"),
            "{second:?}: {said}"
        );
        assert_eq!(said.matches("error:").count(), 1, "{said}");
        assert!(start.elapsed() < Duration::from_secs(5));
    }
    assert!(
        !depth_path(&dir, 0).exists(),
        "a depth table written beside the build"
    );
    assert!(
        !dir.join("level-00.cvalues").exists(),
        "a table compressed into it"
    );
    assert!(
        first.try_wait().unwrap().is_none(),
        "the first build ended before the test"
    );
    first.kill().unwrap();
    first.wait().unwrap();
    let third = Command::new(bin).args(args).arg(&dir).output().unwrap();
    assert!(
        third.status.success(),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
    assert!(level_path(&dir, 18).exists());
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&source).unwrap();
}
