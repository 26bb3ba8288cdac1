//! `build --depth` of a level built in two-bit mode takes its depths from the build's own
//! waves (`level::twobit::propagate`), with no depth pass after it: the same values and depth
//! tables, byte for byte, as the in-memory build followed by the depth pass, on every level to
//! 13 under awari and 11 under the other rule sets, with what each wave finds spilled to work
//! files after every addition (awari) and held in RAM (the others). The slow tier kills such a
//! build again and again (`levels_to_20/killed.rs`).

use std::path::Path;
use std::process::Command;

use awari_db::{depth_path, level_exists, level_path, Rules};

use crate::common::{temp, BIN};

/// `awari-solver build --depth --depth-form plain` of levels 0..=top into `dir`.
fn build(dir: &Path, rules: Rules, top: u32, mode: &str, env: &[(&str, &str)]) -> String {
    let out = Command::new(BIN)
        .args([
            "build",
            "--depth",
            "--depth-form",
            "plain",
            "--threads",
            "3",
        ])
        .args(["--mode", mode, "--rules", &rules.to_string()])
        .args(["--max-stones", &top.to_string(), "--db"])
        .arg(dir)
        .env("AWARI_TIMINGS", "1")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{rules} {mode}: {text}");
    text
}

#[test]
fn two_bit_build_with_depths_writes_the_depth_pass_tables() {
    for rules in Rules::ALL {
        let top = if rules == Rules::Awari { 13 } else { 11 };
        let want = temp(&format!("build-depths-memory-{rules}"));
        let got = temp(&format!("build-depths-two-bit-{rules}"));
        build(&want, rules, top, "memory", &[]);
        // A set of a byte: every addition of a wave's positions spills to a file.
        let spill: &[(&str, &str)] = if rules == Rules::Awari {
            &[("AWARI_WAVE_SET_BYTES", "1")]
        } else {
            &[]
        };
        let said = build(&got, rules, top, "two-bit", spill);
        // The steps settled in waves (the in-memory build's depth pass is a separate pass,
        // whose tables these would equal too).
        assert!(
            said.contains(&format!("level {top} step 1: ")) && said.contains(" waves, "),
            "{rules}: {said}"
        );
        for n in (0..=top).filter(|&n| level_exists(n)) {
            for path in [level_path, depth_path] {
                assert_eq!(
                    std::fs::read(path(&got, n)).unwrap(),
                    std::fs::read(path(&want, n)).unwrap(),
                    "{rules} level {n}: {}",
                    path(&got, n).display()
                );
            }
        }
        let mut left: Vec<String> = std::fs::read_dir(&got)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|f| !f.ends_with(".values") && !f.ends_with(".depth"))
            .collect();
        left.sort();
        assert_eq!(left, Vec::<String>::new(), "{rules}");
        std::fs::remove_dir_all(&want).unwrap();
        std::fs::remove_dir_all(&got).unwrap();
    }
}

/// A level begun in two-bit mode with depths resumes with them, whatever the next run asks,
/// and in two bits only: one bit (which cannot keep a wave's order) is refused with a message
/// that says what to do, and leaves the work files as they were.
#[test]
fn a_level_begun_with_depths_resumes_with_them_in_two_bits_only() {
    use awari_solver::build::{build_level_with_depths, Plan};
    use awari_solver::twobit::{StateBits, TwoBit};
    use awari_solver::Silent;

    let rules = Rules::Awari;
    let n = 11;
    let want = temp("resume-depths-memory");
    let dir = temp("resume-depths-two-bit");
    build(&want, rules, n, "memory", &[]);
    crate::common::copy_levels(&want, &dir, 0..n);
    let levels = awari_db::Levels::open(&dir, Some(rules)).unwrap();
    // Solved to its end, not converted: its work directory and last checkpoint stay.
    let mut builder = TwoBit::open(&dir, n, rules, &levels, 1, StateBits::Two, true).unwrap();
    assert!(builder.has_depths());
    builder.solve(&Silent).unwrap();
    drop(builder);
    let refused = TwoBit::open(&dir, n, rules, &levels, 1, StateBits::One, false)
        .err()
        .expect("one bit refused");
    let said = refused.to_string();
    assert!(
        said.contains("with depths") && said.contains("--mode two-bit"),
        "{said}"
    );
    let again = TwoBit::open(&dir, n, rules, &levels, 1, StateBits::Two, false).unwrap();
    assert!(again.has_depths());
    drop(again);
    // The driver resumes it (at its conversion) and writes both tables.
    let built = build_level_with_depths(
        &dir,
        n,
        rules,
        &levels,
        Plan::TwoBit { bucket: 1 },
        false,
        &Silent,
    )
    .unwrap();
    assert!(built.resumed.is_some());
    assert!(built.max_depth.is_some());
    for path in [level_path, depth_path] {
        assert_eq!(
            std::fs::read(path(&dir, n)).unwrap(),
            std::fs::read(path(&want, n)).unwrap()
        );
    }
    std::fs::remove_dir_all(&want).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
