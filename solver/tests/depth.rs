//! The compact depth pass ([`awari_solver::depth`]) against the in-memory builder's
//! breadth-first waves (the reference): the same depth at every entry of every level up to
//! `DEPTH_TOP` (16 here; 20 with `AWARI_DEPTH_TOP=20`) under the three rule sets, with small
//! buckets (several passes over the lower levels) and with one; a false table (a quiet cycle
//! labelled as a win) is refused, naming a board on the cycle; and a pass killed at every
//! checkpoint resumes to the same table.

use std::path::{Path, PathBuf};

use awari_db::{depth_path, level_exists, Content, Expect, Level, Levels, Rules, Table};
use awari_solver::depth::{compute_depth, DepthError, DepthPass};
use awari_solver::{LevelBuilder, Silent};

#[path = "common/mod.rs"]
mod common;
use common::{build_mode, temp};

fn top() -> u32 {
    std::env::var("AWARI_DEPTH_TOP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16)
}

/// The in-memory builder's depths of level `n` (its values must match the table's).
fn reference_depths(levels: &Levels, n: u32, rules: Rules) -> Vec<u16> {
    let mut b = LevelBuilder::new(n, rules, levels, true).unwrap();
    b.solve(&Silent).unwrap();
    let table = levels.require(n).unwrap();
    (0..Level::new(n).size())
        .map(|i| {
            assert_eq!(b.value(i), table.value(i).unwrap(), "level {n} index {i}");
            b.depth(i).unwrap()
        })
        .collect()
}

fn open_depth(dir: &Path, n: u32, rules: Rules) -> Table {
    Table::open(
        depth_path(dir, n),
        Expect {
            rules: Some(rules),
            seeds: Some(n),
            content: Some(Content::Depth),
        },
    )
    .unwrap()
}

fn values_dir(tag: &str, rules: Rules, top: u32) -> PathBuf {
    let dir = temp(&format!("depth-values-{tag}-{rules}"));
    build_mode(&dir, 2, rules, top, awari_solver::build::Mode::InMemory);
    dir
}

#[test]
fn compact_depths_equal_the_in_memory_waves() {
    let top = top();
    for rules in Rules::ALL {
        let dir = values_dir("all", rules, top);
        let levels = Levels::open(&dir, Some(rules)).unwrap();
        let out = temp(&format!("depth-out-{rules}"));
        std::fs::create_dir_all(&out).unwrap();
        for n in (0..=top).filter(|&n| level_exists(n)) {
            let want = reference_depths(&levels, n, rules);
            // Small buckets: wave 0 in several passes (at least 1 chunk each).
            let bucket = if n % 2 == 0 { 1 } else { u64::MAX };
            let r = DepthPass::open(&levels, n, &out, bucket)
                .unwrap()
                .run(true, 4, &Silent)
                .unwrap();
            assert_eq!(r.unproven, 0, "{rules} level {n}");
            let t = open_depth(&out, n, rules);
            t.verify().unwrap();
            let max = *want.iter().max().unwrap();
            assert_eq!(r.max_depth, max, "{rules} level {n}");
            assert_eq!(t.header().entry_bytes, if max < 256 { 1 } else { 2 });
            for (i, &d) in want.iter().enumerate() {
                assert_eq!(t.entry(i as u64), d, "{rules} level {n} index {i}");
            }
            let mut hist = vec![0u64; usize::from(max) + 1];
            for &d in &want {
                hist[usize::from(d)] += 1;
            }
            assert_eq!(r.histogram, hist, "{rules} level {n}");
            // Nothing left behind but the table.
            let left: Vec<_> = std::fs::read_dir(&out)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|f| f.starts_with(&format!("level-{n:02}.")) && !f.ends_with(".depth"))
                .collect();
            assert!(left.is_empty(), "{left:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// A quiet cycle labelled as a win passes the consistency check but has no finite depth:
/// the pass refuses it (no table written) and names a board of the cycle.
#[test]
fn a_false_cycle_is_refused() {
    for rules in Rules::ALL {
        let dir = values_dir("false", rules, 2);
        let changed = common::make_false_cycle(&dir, rules, 2);
        let levels = Levels::open(&dir, Some(rules)).unwrap();
        let out = temp(&format!("depth-false-{rules}"));
        std::fs::create_dir_all(&out).unwrap();
        // The lower levels are true: they get their depths.
        for n in 0..2 {
            compute_depth(&levels, n, &out, None, true, 4, &Silent).unwrap();
        }
        match compute_depth(&levels, 2, &out, None, true, 4, &Silent) {
            Err(DepthError::Unproven {
                level: 2,
                count,
                board,
                value,
                ..
            }) => {
                assert!(
                    count >= 2 && count as usize <= changed.len(),
                    "{rules}: {count}"
                );
                assert!(changed.contains(&board), "{rules}: {board}");
                assert!(value != 0);
            }
            other => panic!("{rules}: {other:?}"),
        }
        assert!(!depth_path(&out, 2).exists());
        // Without writing, the report lists them.
        let r = compute_depth(&levels, 2, &out, None, false, 100, &Silent).unwrap();
        assert!(r.unproven >= 2, "{rules}");
        assert_eq!(r.examples.len() as u64, r.unproven.min(100));
        for u in &r.examples {
            assert!(changed.contains(&u.board), "{rules}: {} is true", u.board);
        }
        assert!(
            r.examples.iter().any(|u| u.board == changed[0]),
            "{rules}: p named"
        );
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&out);
    }
}

#[test]
fn missing_levels_and_probe_form_are_errors() {
    let rules = Rules::Awari;
    let dir = values_dir("missing", rules, 6);
    let levels = Levels::open(&dir, Some(rules)).unwrap();
    let out = temp("depth-missing");
    std::fs::create_dir_all(&out).unwrap();
    match compute_depth(&levels, 9, &out, None, true, 1, &Silent) {
        Err(DepthError::Db(e)) => assert!(e.to_string().contains("level 9 is missing")),
        other => panic!("{other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&out);
}
