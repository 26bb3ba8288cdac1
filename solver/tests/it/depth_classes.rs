//! The class-by-class depth pass ([`awari_solver::depth::ClassPass`], which reads the level's
//! values only in order) against the wave pass ([`DepthPass`], checked against the in-memory
//! builder by `depth.rs`): the same depth table, byte for byte, and the same report on every
//! level up to 14 (`AWARI_CLASSES_TOP` for another top: 16 takes 150 s on 2 cores; the slow
//! tier, `levels_to_20::depth`, checks up to 20) under the three rule sets, with small
//! phase-1 buckets and with one, and from self-contained compressed values; the same
//! unproven positions in a false table, and in a level of several chunks with many false
//! entries; a `depth` run
//! killed at several moments resumes to the same tables; `verify --prove` with
//! `AWARI_DEPTH=classes` proves a true database and refuses a false or changed one.

use std::path::Path;

use awari_db::{depth_path, level_exists, Level, Levels, Rules};
use awari_solver::depth::{ClassPass, DepthError, DepthPass, DepthReport};
use awari_solver::Silent;

use crate::common;
use common::{build_mode, temp};

fn top() -> u32 {
    std::env::var("AWARI_CLASSES_TOP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(14)
}

fn values_dir(tag: &str, rules: Rules, top: u32) -> std::path::PathBuf {
    let dir = temp(&format!("classes-values-{tag}-{rules}"));
    build_mode(&dir, 2, rules, top, awari_solver::build::Mode::Auto);
    dir
}

/// The fields of two reports that must agree.
fn same_report(a: &DepthReport, b: &DepthReport, what: &str) {
    assert_eq!(a.max_depth, b.max_depth, "{what}: max depth");
    assert_eq!(a.histogram, b.histogram, "{what}: histogram");
    assert_eq!(a.draws, b.draws, "{what}: draws");
    assert_eq!(a.unproven, b.unproven, "{what}: unproven");
    assert_eq!(a.examples, b.examples, "{what}: examples");
}

/// Files of level `n` left in `dir` besides its depth table.
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
fn class_pass_writes_the_wave_pass_tables() {
    let top = top();
    for rules in Rules::ALL {
        let dir = values_dir("equal", rules, top);
        let levels = Levels::open(&dir, Some(rules)).unwrap();
        let waves = temp(&format!("classes-waves-{rules}"));
        let classes = temp(&format!("classes-classes-{rules}"));
        std::fs::create_dir_all(&waves).unwrap();
        std::fs::create_dir_all(&classes).unwrap();
        for n in (0..=top).filter(|&n| level_exists(n)) {
            let want = DepthPass::open(&levels, n, &waves, u64::MAX)
                .unwrap()
                .run(true, 4, &Silent)
                .unwrap();
            // Small buckets: phase 1 in several passes (at least 1 chunk each).
            let bucket = if n % 2 == 0 { 1 } else { u64::MAX };
            let got = ClassPass::open(&levels, n, &classes, bucket)
                .unwrap()
                .run(true, 4, &Silent)
                .unwrap();
            let what = format!("{rules} level {n}");
            same_report(&got, &want, &what);
            assert_eq!(got.unproven, 0, "{what}");
            assert_eq!(
                std::fs::read(depth_path(&classes, n)).unwrap(),
                std::fs::read(depth_path(&waves, n)).unwrap(),
                "{what}: the tables differ"
            );
            assert!(
                left_behind(&classes, n).is_empty(),
                "{what}: {:?}",
                left_behind(&classes, n)
            );
            // Without writing: the same report, no table, nothing left.
            std::fs::remove_file(depth_path(&classes, n)).unwrap();
            let r = ClassPass::open(&levels, n, &classes, u64::MAX)
                .unwrap()
                .run(false, 4, &Silent)
                .unwrap();
            same_report(&r, &want, &what);
            assert!(!depth_path(&classes, n).exists());
            assert!(left_behind(&classes, n).is_empty(), "{what}");
        }
        for d in [dir, waves, classes] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// A quiet cycle labelled as a win: the class pass finds the same unproven positions as the
/// wave pass (count and first examples), and refuses to write a table.
#[test]
fn class_pass_finds_the_same_unproven_positions() {
    for rules in Rules::ALL {
        let dir = values_dir("false", rules, 2);
        let changed = common::make_false_cycle(&dir, rules, 2);
        let levels = Levels::open(&dir, Some(rules)).unwrap();
        let out = temp(&format!("classes-false-{rules}"));
        std::fs::create_dir_all(&out).unwrap();
        for keep in [1, 100] {
            let want = DepthPass::open(&levels, 2, &out, u64::MAX)
                .unwrap()
                .run(false, keep, &Silent)
                .unwrap();
            let got = ClassPass::open(&levels, 2, &out, 1)
                .unwrap()
                .run(false, keep, &Silent)
                .unwrap();
            assert!(got.unproven >= 2, "{rules}");
            same_report(&got, &want, &format!("{rules} keep {keep}"));
            assert!(got.examples.iter().all(|u| changed.contains(&u.board)));
        }
        match ClassPass::open(&levels, 2, &out, u64::MAX)
            .unwrap()
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

const BIN: &str = env!("CARGO_BIN_EXE_awari-solver");

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn classes(args: &[&str]) -> std::process::Output {
    std::process::Command::new(BIN)
        .env("AWARI_DEPTH", "classes")
        .args(args)
        .output()
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `depth` with `AWARI_DEPTH=classes`, killed (SIGKILL) at several moments (in phase 1, in
/// the classes, between levels), then run to its end, writes the wave pass's tables.
#[test]
fn killed_class_passes_resume_to_the_same_tables() {
    let rules = Rules::Awari;
    let top = 16;
    let dir = values_dir("kill", rules, top);
    let want = temp("classes-kill-want");
    common::copy_levels(&dir, &want, 0..=top);
    let o = std::process::Command::new(BIN)
        .env("AWARI_DEPTH", "waves")
        .args(["depth", "--threads", "2", "--db", s(&want)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let killed = temp("classes-kill-killed");
    common::copy_levels(&dir, &killed, 0..=top);
    for trial in 0..8u64 {
        let mut child = std::process::Command::new(BIN)
            .env("AWARI_DEPTH", "classes")
            .args([
                "depth",
                "--threads",
                "2",
                "--memory",
                "48M",
                "--db",
                s(&killed),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300 * (trial + 1)));
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let o = classes(&["depth", "--threads", "2", "--db", s(&killed)]);
    assert!(o.status.success(), "{}", text(&o));
    for n in (0..=top).filter(|&n| level_exists(n)) {
        assert!(
            std::fs::read(depth_path(&want, n)).unwrap()
                == std::fs::read(depth_path(&killed, n)).unwrap(),
            "level {n} differs after kills"
        );
        assert!(left_behind(&killed, n).is_empty(), "level {n}");
    }
    for d in [dir, want, killed] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// `verify --prove` with `AWARI_DEPTH=classes` (the streamed value check, then the class
/// pass) proves every level of a true database, and refuses a false cycle (naming a board of
/// it) and a changed value (naming it); `depth --check` refuses the changed value too.
#[test]
fn verify_prove_by_classes() {
    let rules = Rules::Awari;
    let good = values_dir("prove-good", rules, 12);
    let o = classes(&["verify", "--db", s(&good), "--prove"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    for n in (0..=12).filter(|&n| level_exists(n)) {
        assert!(t.contains(&format!("level {n:>2}: ok")), "{t}");
    }
    assert!(t.contains("verified: every value is the game value"), "{t}");
    let names: Vec<String> = std::fs::read_dir(&good)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|f| f.ends_with(".values")), "{names:?}");

    let bad = values_dir("prove-bad", rules, 2);
    let changed = common::make_false_cycle(&bad, rules, 2);
    let o = classes(&["verify", "--db", s(&bad), "--prove"]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("level  2: NOT PROVEN"), "{t}");
    assert!(t.contains(&format!("board {}: stored", changed[0])), "{t}");

    let level = Level::new(12);
    let mut data = std::fs::read(awari_db::level_path(&good, 12)).unwrap()[64..].to_vec();
    let i = (0..level.size())
        .find(|&i| data[i as usize] as i8 > 2)
        .unwrap();
    data[i as usize] = (data[i as usize] as i8 - 2) as u8;
    awari_db::write_table(
        awari_db::level_path(&good, 12),
        awari_db::Header::values(rules, 12),
        &data,
    )
    .unwrap();
    let o = classes(&["verify", "--db", s(&good), "--prove", "--stones", "12"]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("level 12: FAILED"), "{t}");
    assert!(
        t.contains(&format!("index {i} board {}", level.unrank(i))),
        "{t}"
    );
    let o = classes(&["depth", "--db", s(&good), "--check", "--stones", "12"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("not the best of their moves") && t.contains(&format!("index {i} board")),
        "{t}"
    );
    assert!(!depth_path(&good, 12).exists());
    for d in [good, bad] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Self-contained compressed values (read by the class pass through `Table::read`, block by
/// block) give the same tables as the plain values give the wave pass.
#[test]
fn class_pass_reads_compressed_values() {
    let rules = Rules::Awari;
    let top = 12;
    let plain = values_dir("compressed-plain", rules, top);
    let packed = temp("classes-compressed-packed");
    let source = Levels::open(&plain, Some(rules)).unwrap();
    awari_solver::compress::compress_db(
        &source,
        &packed,
        &[],
        awari_db::compressed::Form::SelfContained,
        &Silent,
        |_| {},
    )
    .unwrap();
    let levels = Levels::open(&packed, Some(rules)).unwrap();
    let (waves, classes) = (
        temp("classes-compressed-waves"),
        temp("classes-compressed-out"),
    );
    std::fs::create_dir_all(&waves).unwrap();
    std::fs::create_dir_all(&classes).unwrap();
    for n in (0..=top).filter(|&n| level_exists(n)) {
        assert!(levels.require(n).unwrap().is_compressed());
        let want = DepthPass::open(&source, n, &waves, u64::MAX)
            .unwrap()
            .run(true, 4, &Silent)
            .unwrap();
        let got = ClassPass::open(&levels, n, &classes, 1)
            .unwrap()
            .run(true, 4, &Silent)
            .unwrap();
        same_report(&got, &want, &format!("level {n}"));
        assert_eq!(
            std::fs::read(depth_path(&classes, n)).unwrap(),
            std::fs::read(depth_path(&waves, n)).unwrap(),
            "level {n}"
        );
    }
    for d in [plain, packed, waves, classes] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// A level of several chunks with many false entries (non-terminal draws relabelled ±1, no
/// value check): both passes leave the same positions unproven, and name the same first
/// ones by index, whatever order their chunks end in.
#[test]
fn many_unproven_positions_across_chunks() {
    let rules = Rules::Awari;
    let n = 14;
    let dir = values_dir("many-unproven", rules, n);
    let level = Level::new(n);
    let path = awari_db::level_path(&dir, n);
    let mut data = std::fs::read(&path).unwrap()[64..].to_vec();
    let mut changed = 0;
    for (i, board) in (0..level.size()).zip(level.boards(0..level.size())) {
        if i % 997 == 0
            && data[i as usize] == 0
            && matches!(board.outcome(rules), awari_db::Outcome::Moves(_))
        {
            data[i as usize] = if changed % 2 == 0 { 1 } else { -1i8 as u8 };
            changed += 1;
        }
    }
    assert!(changed > 100);
    awari_db::write_table(&path, awari_db::Header::values(rules, n), &data).unwrap();
    let levels = Levels::open(&dir, Some(rules)).unwrap();
    let out = temp("classes-many-unproven");
    std::fs::create_dir_all(&out).unwrap();
    for keep in [3, 50] {
        let want = DepthPass::open(&levels, n, &out, u64::MAX)
            .unwrap()
            .run(false, keep, &Silent)
            .unwrap();
        let got = ClassPass::open(&levels, n, &out, 1)
            .unwrap()
            .run(false, keep, &Silent)
            .unwrap();
        assert!(got.unproven > 0 && got.examples.len() == keep);
        same_report(&got, &want, &format!("keep {keep}"));
    }
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_dir_all(out);
}
