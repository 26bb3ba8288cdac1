//! `compare` passes on identical directories (ours against the VU layout), finds a single
//! flipped entry wherever it is, and says when a level is in one directory only.

use std::path::Path;
use std::process::Command;

use awari_db::{level_exists, level_path, raw_path, Levels, Rules};
use awari_solver::build::{build, BuildOptions, Mode};
use awari_solver::compare::{compare, LevelComparison};
use awari_solver::Silent;

use crate::common;
use common::temp;

/// A raw VU directory of the levels of `ours`: each table's data section as `scores.N`.
fn vu_copy(ours: &Path, max: u32, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for n in (0..=max).filter(|&n| level_exists(n)) {
        let data = crate::common::table_data(&level_path(ours, n));
        std::fs::write(raw_path(to, n), &data).unwrap();
    }
}

#[test]
fn compare_finds_one_difference_and_passes_identical_directories() {
    let ours = temp("ours");
    let opts = BuildOptions {
        dir: ours.clone(),
        max_stones: 13,
        rules: Rules::Awari,
        memory: None,
        depth: false,
        mode: Mode::InMemory,
        compress: false,
        depth_form: Default::default(),
    };
    build(&opts, &Silent, |_| {}).unwrap();
    let vu = temp("vu");
    vu_copy(&ours, 13, &vu);
    let bin = crate::common::BIN;
    let run = |a: &Path, b: &Path| {
        Command::new(bin)
            .arg("compare")
            .arg(a)
            .arg(b)
            .output()
            .unwrap()
    };
    let out = run(&ours, &vu);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("14 levels compared, 0 not equal"));

    // One entry flipped, first, in the middle and last of level 13 (2.5 M entries: the first,
    // second and third of its parallel chunks): found, with its board and both values.
    let size = awari_db::level_size(13);
    for at in [0, size / 2, size - 1] {
        let path = raw_path(&vu, 13);
        let mut bytes = std::fs::read(&path).unwrap();
        let was = bytes[at as usize] as i8;
        bytes[at as usize] = (was.wrapping_add(1)) as u8;
        std::fs::write(&path, &bytes).unwrap();
        let (a, b) = (
            Levels::open(&ours, None).unwrap(),
            Levels::open(&vu, None).unwrap(),
        );
        let reports = compare(&a, &b, &[], 3, &Silent, |_| {}).unwrap();
        for r in &reports {
            if r.level != 13 {
                assert_eq!(r.outcome, LevelComparison::Equal, "level {}", r.level);
                continue;
            }
            match &r.outcome {
                LevelComparison::Differ { count, first } => {
                    assert_eq!(*count, 1);
                    assert_eq!(first[0].index, at);
                    assert_eq!(first[0].board, awari_db::Level::new(13).unrank(at));
                    assert_eq!(first[0].values, (was, was.wrapping_add(1)));
                }
                other => panic!("level 13 at {at}: {other:?}"),
            }
        }
        let out = run(&ours, &vu);
        assert!(!out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("level 13: 1 of 2464320 entries differ"),
            "{text}"
        );
        assert!(text.contains(&format!("index {at}:")), "{text}");
        bytes[at as usize] = was as u8;
        std::fs::write(&path, &bytes).unwrap();
    }

    // A level in one directory only.
    std::fs::remove_file(raw_path(&vu, 12)).unwrap();
    let out = run(&ours, &vu);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("level 12: only in"));
    for d in [ours, vu] {
        std::fs::remove_dir_all(d).unwrap();
    }
}
