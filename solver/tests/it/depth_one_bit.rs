//! The class pass in one bit a position ([`ClassPass::one_bit`], `AWARI_DEPTH=one-bit`, and
//! what `depth` and `verify --prove` pick for a `--memory` below two bits a position) against
//! the wave pass: the same depth table, byte for byte, and the same report on every level up
//! to 12 under awari, 10 under the other rule sets, with what each wave finds spilled to work
//! files after every addition and with none spilled; the same unproven positions in a false
//! table; the command line's choice of it; and, in the slow tier, a `depth` run killed at
//! several moments resumes to the same tables.

use std::path::Path;

use awari_db::{depth_path, level_exists, Levels, Rules};
use awari_solver::depth::{ClassPass, DepthError, DepthPass};
use awari_solver::Silent;

use crate::common::{self, build_mode, s, temp, text, BIN};

fn values_dir(tag: &str, rules: Rules, top: u32) -> std::path::PathBuf {
    let dir = temp(&format!("one-bit-values-{tag}-{rules}"));
    build_mode(&dir, 2, rules, top, awari_solver::build::Mode::Auto);
    dir
}

/// Files of level `n` left in `dir` besides its tables.
fn left_behind(dir: &Path, n: u32) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| {
            f.starts_with(&format!("level-{n:02}."))
                && !f.ends_with(".depth")
                && !f.ends_with(".values")
        })
        .collect()
}

#[test]
fn one_bit_class_pass_writes_the_wave_pass_tables() {
    for rules in Rules::ALL {
        let top = if rules == Rules::Awari { 12 } else { 10 };
        let dir = values_dir("equal", rules, top);
        let levels = Levels::open(&dir, Some(rules)).unwrap();
        let waves = temp(&format!("one-bit-waves-{rules}"));
        let one_bit = temp(&format!("one-bit-classes-{rules}"));
        std::fs::create_dir_all(&waves).unwrap();
        std::fs::create_dir_all(&one_bit).unwrap();
        for n in (0..=top).filter(|&n| level_exists(n)) {
            let want = DepthPass::open(&levels, n, &waves, u64::MAX)
                .unwrap()
                .run(true, 4, &Silent)
                .unwrap();
            for capacity in [1, u64::MAX] {
                // A capacity of a byte: every addition spills.
                let got = ClassPass::open(&levels, n, &one_bit, u64::MAX)
                    .unwrap()
                    .one_bit(capacity)
                    .run(true, 4, &Silent)
                    .unwrap();
                let what = format!("{rules} level {n} capacity {capacity}");
                assert_eq!(got.max_depth, want.max_depth, "{what}");
                assert_eq!(got.histogram, want.histogram, "{what}");
                assert_eq!(got.draws, want.draws, "{what}");
                assert_eq!(got.unproven, 0, "{what}");
                assert_eq!(
                    std::fs::read(depth_path(&one_bit, n)).unwrap(),
                    std::fs::read(depth_path(&waves, n)).unwrap(),
                    "{what}: the tables differ"
                );
                assert!(
                    left_behind(&one_bit, n).is_empty(),
                    "{what}: {:?}",
                    left_behind(&one_bit, n)
                );
                std::fs::remove_file(depth_path(&one_bit, n)).unwrap();
            }
        }
        for d in [dir, waves, one_bit] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// A quiet cycle labelled as a win: the one-bit search finds the same unproven positions as
/// the wave pass (count, first examples, their stored values), and refuses to write a table.
#[test]
fn one_bit_class_pass_finds_the_same_unproven_positions() {
    for rules in Rules::ALL {
        let dir = values_dir("false", rules, 2);
        let changed = common::make_false_cycle(&dir, rules, 2);
        let levels = Levels::open(&dir, Some(rules)).unwrap();
        let out = temp(&format!("one-bit-false-{rules}"));
        std::fs::create_dir_all(&out).unwrap();
        for keep in [1, 100] {
            let want = DepthPass::open(&levels, 2, &out, u64::MAX)
                .unwrap()
                .run(false, keep, &Silent)
                .unwrap();
            let got = ClassPass::open(&levels, 2, &out, 1)
                .unwrap()
                .one_bit(1)
                .run(false, keep, &Silent)
                .unwrap();
            assert!(got.unproven >= 2, "{rules}");
            assert_eq!(got.unproven, want.unproven, "{rules} keep {keep}");
            assert_eq!(got.histogram, want.histogram, "{rules} keep {keep}");
            assert_eq!(got.examples, want.examples, "{rules} keep {keep}");
            assert!(got.examples.iter().all(|u| changed.contains(&u.board)));
        }
        match ClassPass::open(&levels, 2, &out, u64::MAX)
            .unwrap()
            .one_bit(u64::MAX)
            .run(true, 4, &Silent)
        {
            Err(DepthError::Unproven {
                level: 2, board, ..
            }) => assert!(changed.contains(&board), "{rules}: {board}"),
            other => panic!("{rules}: {other:?}"),
        }
        assert!(!depth_path(&out, 2).exists());
        assert!(left_behind(&out, 2).is_empty(), "{rules}");
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// `depth` and `verify --prove` given less than the two bits a position of the other passes
/// run the one-bit search (`AWARI_TIMINGS` names it): `depth` writes the wave pass's tables,
/// `verify --prove` (with no depth table to read) proves the levels.
#[test]
fn a_memory_below_two_bits_picks_one_bit() {
    let top = 12;
    let dir = values_dir("cli", Rules::Awari, top);
    let want = temp("one-bit-cli-want");
    common::copy_levels(&dir, &want, 0..=top);
    let o = std::process::Command::new(BIN)
        .env("AWARI_DEPTH", "waves")
        .args(["depth", "--threads", "2", "--db", s(&want)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let memory = awari_solver::depth::least_memory(top, 2);
    assert!(memory < awari_solver::depth::memory_needed(top));
    let memory = memory.to_string();
    for command in ["depth", "verify"] {
        let mut args = vec![
            command,
            "--threads",
            "2",
            "--memory",
            &memory,
            "--db",
            s(&dir),
        ];
        if command == "verify" {
            args.insert(1, "--prove");
            for n in 0..=top {
                let _ = std::fs::remove_file(depth_path(&dir, n));
            }
        }
        let o = std::process::Command::new(BIN)
            .env("AWARI_TIMINGS", "1")
            .args(&args)
            .output()
            .unwrap();
        let t = text(&o);
        assert!(o.status.success(), "{command}: {t}");
        assert!(
            t.contains(&format!("level {top} depth (classes, one bit)")),
            "{command}: {t}"
        );
        if command == "depth" {
            for n in (0..=top).filter(|&n| level_exists(n)) {
                assert_eq!(
                    std::fs::read(depth_path(&dir, n)).unwrap(),
                    std::fs::read(depth_path(&want, n)).unwrap(),
                    "level {n}"
                );
            }
        }
    }
    for d in [dir, want] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// `depth` in one bit (`AWARI_DEPTH=one-bit`, a `--memory` that spills what its waves find),
/// killed (SIGKILL) at several moments, then run to its end, writes the wave pass's tables.
#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn killed_one_bit_class_passes_resume_to_the_same_tables() {
    let top = 16;
    let dir = values_dir("kill", Rules::Awari, top);
    let want = temp("one-bit-kill-want");
    common::copy_levels(&dir, &want, 0..=top);
    let o = std::process::Command::new(BIN)
        .env("AWARI_DEPTH", "waves")
        .args(["depth", "--threads", "2", "--db", s(&want)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let killed = temp("one-bit-kill-killed");
    common::copy_levels(&dir, &killed, 0..=top);
    // A bit a position, the fixed part and about 1 MiB for what a wave finds.
    let memory = awari_solver::depth::least_memory(top, 2).to_string();
    let depth = |args: &[&str]| {
        let mut c = std::process::Command::new(BIN);
        c.env("AWARI_DEPTH", "one-bit")
            .args([
                "depth",
                "--threads",
                "2",
                "--memory",
                &memory,
                "--db",
                s(&killed),
            ])
            .args(args);
        c
    };
    for trial in 0..10u64 {
        let mut child = depth(&[])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(250 * (trial + 1)));
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let o = depth(&[]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    for n in (0..=top).filter(|&n| level_exists(n)) {
        assert!(
            std::fs::read(depth_path(&want, n)).unwrap()
                == std::fs::read(depth_path(&killed, n)).unwrap(),
            "level {n} differs after kills"
        );
        assert!(
            left_behind(&killed, n).is_empty(),
            "level {n}: {:?}",
            left_behind(&killed, n)
        );
    }
    for d in [dir, want, killed] {
        let _ = std::fs::remove_dir_all(d);
    }
}
