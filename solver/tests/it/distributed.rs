//! The distributed build writes the same bytes as the single-machine build, whatever the number
//! of ranks and the slice granule: ranks run as threads of this process (`ThreadComm`), so
//! the test needs no MPI. (`.ci/run` runs the same build under `mpirun` with the `mpi`
//! feature.)

use std::path::Path;

use awari_db::{level_exists, level_path, Rules};
use awari_solver::build::{build, BuildOptions, LevelReport, Mode};
use awari_solver::comm::{Comm, ThreadComm};
use awari_solver::distributed::build_distributed;
use awari_solver::Silent;

use crate::common::temp;

fn options(dir: &Path, rules: Rules, max: u32) -> BuildOptions {
    BuildOptions {
        dir: dir.to_path_buf(),
        max_stones: max,
        rules,
        memory: None,
        depth: false,
        mode: Mode::InMemory,
        compress: false,
        depth_form: Default::default(),
    }
}

/// Build with `ranks` ranks as threads, each rank's rayon work on one shared 2-thread pool.
fn build_ranks(dir: &Path, ranks: usize, shift: u32, rules: Rules, max: u32) {
    build_ranks_with(options(dir, rules, max), ranks, shift);
}

/// ... returning rank 0's reports.
fn build_ranks_with(opts: BuildOptions, ranks: usize, shift: u32) -> Vec<LevelReport> {
    let max = opts.max_stones;
    std::thread::scope(|s| {
        let handles: Vec<_> = ThreadComm::group(ranks)
            .into_iter()
            .map(|comm| {
                let opts = &opts;
                s.spawn(move || {
                    let mut sent = 0;
                    let reports = build_distributed(&comm, opts, shift, &Silent, |_, built| {
                        sent += built.map_or(0, |b| b.traffic.words_sent);
                    })
                    .unwrap_or_else(|e| panic!("rank {}: {e}", comm.rank()));
                    assert_eq!(
                        reports.len(),
                        (0..=max).filter(|&n| level_exists(n)).count()
                    );
                    // Small granules cut every level above a few seeds: updates must have
                    // crossed between the ranks.
                    if ranks > 1 && shift < 12 {
                        assert!(sent > 0, "rank {} sent nothing", comm.rank());
                    }
                    reports
                })
            })
            .collect();
        let mut all: Vec<Vec<LevelReport>> =
            handles.into_iter().map(|h| h.join().unwrap()).collect();
        all.swap_remove(0)
    })
}

/// Temporary files (`*.tmp`) left in `dir`.
fn leftovers(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .to_string_lossy()
                .ends_with(".tmp")
        })
        .count()
}

fn assert_same(a: &Path, b: &Path, max: u32) {
    for n in (0..=max).filter(|&n| level_exists(n)) {
        let x = std::fs::read(level_path(a, n)).unwrap();
        let y = std::fs::read(level_path(b, n)).unwrap();
        assert!(x == y, "level {n} differs: {} {}", a.display(), b.display());
    }
}

/// Levels 0..12 under awari: one rank; granules of 64 and 4096 positions, which cut every
/// level but the smallest, over 2 to 4 ranks; and 2^22 positions (a checksum chunk, the
/// default), which leaves these levels whole on rank 0.
#[test]
fn same_bytes_as_one_machine_for_one_to_four_ranks() {
    same_bytes_as_one_machine(
        Rules::Awari,
        12,
        &[(1, 22), (2, 6), (3, 12), (4, 6), (3, 22)],
    );
}

/// The default granule (2^22 positions) where it first cuts a level: 14 (4.46 M positions)
/// over 3 ranks.
#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn same_bytes_as_one_machine_where_the_default_granule_cuts_a_level() {
    same_bytes_as_one_machine(Rules::Awari, 14, &[(3, 22)]);
}

/// [`same_bytes_as_one_machine_for_one_to_four_ranks`] under the other three rule sets, with
/// the granules that cut every level (the rule set changes the moves that cross ranks, not how
/// levels are cut: one rank, and granules that leave the small levels whole, are awari's).
#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn same_bytes_as_one_machine_under_abapa_grand_slam_and_cross_wari() {
    for rules in [Rules::Abapa, Rules::GrandSlam, Rules::CrossWari] {
        same_bytes_as_one_machine(rules, 14, &[(2, 6), (3, 12), (4, 6)]);
    }
}

/// Levels 0..=`max` built over each `(ranks, log2 of the granule)` of `cuts` write what one
/// machine writes, and leave no temporary files.
fn same_bytes_as_one_machine(rules: Rules, max: u32, cuts: &[(usize, u32)]) {
    let local = temp(&format!("local-{rules}-{max}"));
    build(&options(&local, rules, max), &Silent, |_| {}).unwrap();
    for &(ranks, shift) in cuts {
        let dist = temp(&format!("r{ranks}-s{shift}-{rules}-{max}"));
        build_ranks(&dist, ranks, shift, rules, max);
        assert_same(&local, &dist, max);
        assert_eq!(leftovers(&dist), 0, "work files left in {}", dist.display());
        std::fs::remove_dir_all(&dist).unwrap();
    }
    std::fs::remove_dir_all(&local).unwrap();
}

/// Each rank with the low-memory algorithm on its slice (work file, packed states), with exit
/// buckets (budgets that make the largest levels stream the lower levels 2 or 3 times) and in
/// `auto` mode (the smaller levels in memory, the larger low-memory): the same bytes.
#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn low_memory_ranks_write_the_same_bytes() {
    const MIB: u64 = 1 << 20;
    for rules in [Rules::Awari, Rules::GrandSlam] {
        let local = temp(&format!("low-local-{rules}"));
        build(&options(&local, rules, 15), &Silent, |_| {}).unwrap();
        for (ranks, shift, mode, memory, max) in [
            (1, 8, Mode::LowMemory, 10 * MIB, 14),
            (2, 8, Mode::LowMemory, 7 * MIB, 14),
            (3, 12, Mode::LowMemory, 13 * MIB / 2, 14),
            (2, 8, Mode::Auto, 9 * MIB, 15),
        ] {
            let dist = temp(&format!("low-r{ranks}-{rules}-{mode:?}"));
            let opts = BuildOptions {
                memory: Some(memory),
                mode,
                ..options(&dist, rules, max)
            };
            let reports = build_ranks_with(opts, ranks, shift);
            let low = reports
                .iter()
                .filter(|r| r.mode == Some(Mode::LowMemory))
                .count();
            match mode {
                Mode::LowMemory => assert_eq!(low, reports.len()),
                _ => assert!(low > 0 && low < reports.len(), "{low} low-memory levels"),
            }
            assert_same(&local, &dist, max);
            assert_eq!(leftovers(&dist), 0, "work files left in {}", dist.display());
            std::fs::remove_dir_all(&dist).unwrap();
        }
        std::fs::remove_dir_all(&local).unwrap();
    }
}

/// A distributed build resumes: levels present are kept, the missing ones built.
#[test]
fn resumes_on_top_of_levels_present() {
    let rules = Rules::Awari;
    let local = temp("resume-local");
    build(&options(&local, rules, 13), &Silent, |_| {}).unwrap();
    let dist = temp("resume-dist");
    build_ranks(&dist, 2, 8, rules, 9);
    // A stale partial file of the next level, as a killed run leaves it.
    std::fs::write(
        awari_db::table::tmp_path(&level_path(&dist, 10)),
        b"partial",
    )
    .unwrap();
    build_ranks(&dist, 3, 8, rules, 13);
    assert_same(&local, &dist, 13);
    for d in [local, dist] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// A rank that fails makes every rank fail, with its own error or a note that another failed,
/// instead of leaving them waiting.
#[test]
fn a_failing_rank_fails_them_all() {
    let dir = temp("fail");
    std::fs::create_dir_all(&dir).unwrap();
    // A table of another rule set: every rank refuses the directory.
    build(&options(&dir, Rules::Abapa, 2), &Silent, |_| {}).unwrap();
    let opts = options(&dir, Rules::Awari, 6);
    let errors = two_ranks_fail(&opts);
    for e in &errors {
        assert!(e.contains("rule"), "{e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The errors of a distributed build of `opts` over two ranks (threads), each of which must fail.
fn two_ranks_fail(opts: &BuildOptions) -> Vec<String> {
    std::thread::scope(|s| {
        let handles: Vec<_> = ThreadComm::group(2)
            .into_iter()
            .map(|comm| {
                s.spawn(move || {
                    build_distributed(&comm, opts, 6, &Silent, |_, _| {})
                        .unwrap_err()
                        .to_string()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// The distributed build has no two-bit algorithm: `--mode two-bit` is refused at the first
/// level to build, rank 0 saying why and the others that it failed, and nothing is written.
#[test]
fn two_bit_is_not_offered() {
    let dir = temp("two-bit");
    let opts = BuildOptions {
        mode: Mode::TwoBit,
        ..options(&dir, Rules::Awari, 4)
    };
    let errors = two_ranks_fail(&opts);
    assert!(
        errors[0].starts_with("the two-bit algorithm is not offered by this build: a distributed build offers memory and low-memory"),
        "{}",
        errors[0]
    );
    assert!(errors[1].contains("other rank"), "{}", errors[1]);
    assert!(!level_path(&dir, 0).exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The plain binary (no `mpi` feature) says how to get a distributed build instead of
/// starting one; `plan --ranks` plans one.
#[test]
#[cfg(not(feature = "mpi"))]
fn the_plain_binary_explains_distributed_builds() {
    let bin = crate::common::BIN;
    let dir = temp("cli");
    let out = std::process::Command::new(bin)
        .args(["build", "--distributed", "--max-stones", "4", "--db"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--features mpi") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!dir.join("level-04.values").exists());
    let out = std::process::Command::new(bin)
        .args([
            "plan",
            "--ranks",
            "16",
            "--memory-per-rank",
            "64G",
            "--threads",
            "16",
        ])
        .output()
        .unwrap();
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && plan.contains("16 ranks × 16 threads"),
        "{plan}"
    );
    assert!(
        plan.lines().any(|l| l.trim_start().starts_with("48 ")),
        "{plan}"
    );
}
