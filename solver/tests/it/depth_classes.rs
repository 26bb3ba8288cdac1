//! The class-by-class depth pass ([`awari_solver::depth::ClassPass`], which reads the level's
//! values only in order) against the wave pass ([`DepthPass`], checked against the in-memory
//! builder by `depth.rs`): the same depth table, byte for byte, and the same report on every
//! level up to 12 under awari, 10 under the other rule sets (`AWARI_CLASSES_TOP` for another
//! top: 16 takes 150 s on 2 cores; the slow tier, `levels_to_20::depth`, checks up to 20), with small
//! phase-1 buckets and with one, and from self-contained compressed values; the same
//! unproven positions in a false table, and in a level of several chunks with many false
//! entries; a `depth` run
//! killed at several moments resumes to the same tables; `verify --prove` with
//! `AWARI_DEPTH=classes` proves a true database and refuses a false or changed one; the
//! class pass's value check reports what the streamed check reports, and its failures
//! survive a resume.

use std::path::Path;

use awari_db::{depth_path, level_exists, Level, Levels, Rules};
use awari_solver::depth::{ClassPass, DepthError, DepthPass, DepthReport};
use awari_solver::Silent;

use crate::common;
use common::{build_mode, s, temp, text, BIN};

fn top() -> u32 {
    std::env::var("AWARI_CLASSES_TOP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12)
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
    for rules in Rules::ALL {
        // The other rule sets differ in their moves alone: two levels fewer.
        let top = if rules == Rules::Awari {
            top()
        } else {
            top() - 2
        };
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

fn classes(args: &[&str]) -> std::process::Output {
    std::process::Command::new(BIN)
        .env("AWARI_DEPTH", "classes")
        .args(args)
        .output()
        .unwrap()
}

/// `depth` with `AWARI_DEPTH=classes`, killed (SIGKILL) at several moments (in phase 1, in
/// the classes, between levels), then run to its end, writes the wave pass's tables. Levels to
/// 16, so that the kills land inside levels: the slow tier's.
#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
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

/// A pass killed after its table was renamed into place, before its work files went (the
/// kill test above met it in CI): the next `depth` keeps the table and removes them.
#[test]
fn work_files_beside_a_finished_table_are_removed() {
    let dir = values_dir("leftover", Rules::Awari, 8);
    let o = classes(&["depth", "--threads", "2", "--db", s(&dir)]);
    assert!(o.status.success(), "{}", text(&o));
    let table = std::fs::read(depth_path(&dir, 8)).unwrap();
    for name in [
        "level-08.dwave+01-0000",
        "level-08.dwave-02-0003",
        "level-08.dclass-02",
        "level-08.dclasses",
        "level-08.dresume",
        "level-08.dwave-0003",
        "level-08.depth.tmp",
    ] {
        std::fs::write(dir.join(name), b"left behind").unwrap();
    }
    let o = classes(&["depth", "--threads", "2", "--db", s(&dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(depth_path(&dir, 8)).unwrap(), table);
    assert!(
        left_behind(&dir, 8).is_empty(),
        "{:?}",
        left_behind(&dir, 8)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `verify --prove` with `AWARI_DEPTH=classes` (the class pass, its value check folded into
/// its phase 1) proves every level of a true database, and refuses a false cycle (naming a board of
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
    let i = common::lower_a_won_value(&good, rules, 12);
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
    let mut data = crate::common::table_data(&path);
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

/// The level-`n` lines of a `verify` report that say what failed: its FAILED lines (less the
/// cost in parentheses, which names the method) and the examples below them.
fn failure_lines(t: &str, n: u32) -> Vec<String> {
    let head = format!("level {n:>2}: ");
    let mut out = Vec::new();
    let mut inside = false;
    for line in t.lines() {
        if let Some(rest) = line.strip_prefix(&head) {
            inside = rest.starts_with("FAILED");
            if inside {
                let cut = [" (depth pass", " (streamed", " (lookup"]
                    .iter()
                    .filter_map(|c| line.find(c))
                    .min()
                    .unwrap_or(line.len());
                out.push(line[..cut].to_string());
            }
        } else if inside && line.starts_with("  level ") {
            out.push(line.to_string());
        } else {
            inside = false;
        }
    }
    out
}

/// The failures of level `n` of `dir` reported by `verify --prove` by classes (in one bucket
/// and in several) and by the streamed check, which must agree; and the count of the wave
/// pass's check (`AWARI_DEPTH=waves`), which words them its own way.
fn same_failures(dir: &Path, n: u32, what: &str) -> Vec<String> {
    let stones = n.to_string();
    let base = ["verify", "--db", s(dir), "--stones", &stones];
    let run = |depth: &str, extra: &[&str]| {
        let o = std::process::Command::new(BIN)
            .env("AWARI_DEPTH", depth)
            .args(base.iter().chain(extra))
            .output()
            .unwrap();
        let t = text(&o);
        assert!(!o.status.success(), "{what}: {t}");
        t
    };
    let streamed = failure_lines(&run("classes", &["--method", "streamed"]), n);
    assert!(
        !streamed.is_empty(),
        "{what}: the streamed check found nothing"
    );
    for extra in [&["--prove"][..], &["--prove", "--memory", "33M"]] {
        let t = run("classes", extra);
        assert!(!t.contains("proven:"), "{what}: {t}");
        assert_eq!(failure_lines(&t, n), streamed, "{what} {extra:?}: {t}");
    }
    let waves = failure_lines(&run("waves", &["--prove"]), n);
    assert_eq!(
        waves.first(),
        streamed.first(),
        "{what}: the wave pass's count"
    );
    streamed
}

/// The value check of a class pass (`ClassPass::check_values`, folded into its phase 1): on
/// true values of levels 0..11 (0..8 under the rule sets other than awari, whose moves alone
/// differ; the slow tier checks awari's to 20) `verify --prove` by classes proves every
/// level, and `depth --check` writes the same tables as the wave pass (in one phase-1 bucket
/// and in several); on changed values (one +1, a terminal position's, one lowered below a
/// capture, a bad checksum) it reports what the streamed check reports.
#[test]
fn class_pass_checks_values() {
    for rules in Rules::ALL {
        let top = if rules == Rules::Awari { 11 } else { 8 };
        let dir = values_dir("check", rules, top);
        let o = classes(&["verify", "--db", s(&dir), "--prove"]);
        let t = text(&o);
        assert!(o.status.success(), "{rules}: {t}");
        for n in (0..=top).filter(|&n| level_exists(n)) {
            assert!(t.contains(&format!("level {n:>2}: ok")), "{rules}: {t}");
        }
        // The tables of a checked class pass, several buckets or one, are the wave pass's.
        let levels = Levels::open(&dir, Some(rules)).unwrap();
        let waves = temp(&format!("classes-check-waves-{rules}"));
        let checked = temp(&format!("classes-check-classes-{rules}"));
        std::fs::create_dir_all(&waves).unwrap();
        std::fs::create_dir_all(&checked).unwrap();
        for n in (0..=top).filter(|&n| level_exists(n)) {
            let want = DepthPass::open(&levels, n, &waves, u64::MAX)
                .unwrap()
                .check_values(4)
                .run(true, 4, &Silent)
                .unwrap();
            let bucket = if n % 2 == 0 { 1 } else { u64::MAX };
            let got = ClassPass::open(&levels, n, &checked, bucket)
                .unwrap()
                .check_values(4)
                .run(true, 4, &Silent)
                .unwrap();
            let what = format!("{rules} level {n}");
            same_report(&got, &want, &what);
            assert_eq!((got.inconsistent, want.inconsistent), (0, 0), "{what}");
            assert_eq!(
                std::fs::read(depth_path(&checked, n)).unwrap(),
                std::fs::read(depth_path(&waves, n)).unwrap(),
                "{what}: the tables differ"
            );
            assert!(left_behind(&checked, n).is_empty(), "{what}");
        }
        for d in [waves, checked] {
            let _ = std::fs::remove_dir_all(d);
        }
        // `depth --check` by classes writes them too.
        let depth = temp(&format!("classes-check-depth-{rules}"));
        common::copy_levels(&dir, &depth, 0..=top);
        let o = classes(&["depth", "--db", s(&depth), "--check", "--memory", "33M"]);
        assert!(o.status.success(), "{rules}: {}", text(&o));
        let o = std::process::Command::new(BIN)
            .env("AWARI_DEPTH", "waves")
            .args(["depth", "--db", s(&dir)])
            .output()
            .unwrap();
        assert!(o.status.success(), "{rules}: {}", text(&o));
        for n in (0..=top).filter(|&n| level_exists(n)) {
            assert!(
                std::fs::read(depth_path(&depth, n)).unwrap()
                    == std::fs::read(depth_path(&dir, n)).unwrap(),
                "{rules} level {n}: depth --check by classes differs"
            );
            std::fs::remove_file(depth_path(&dir, n)).unwrap();
        }
        let _ = std::fs::remove_dir_all(depth);
        if rules == Rules::Awari {
            corrupted_values(&dir, rules, top);
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Level `n` of `dir` changed four ways, each caught by `verify --prove` by classes as by the
/// streamed check (the level restored after each).
fn corrupted_values(dir: &Path, rules: Rules, n: u32) {
    let path = awari_db::level_path(dir, n);
    let file = std::fs::read(&path).unwrap();
    let data = crate::common::table_data(&path);
    let level = Level::new(n);
    let levels = Levels::open(dir, Some(rules)).unwrap();
    let write = |data: &[u8]| {
        awari_db::write_table(&path, awari_db::Header::values(rules, n), data).unwrap()
    };
    // One value made +1.
    let i = (0..level.size())
        .find(|&i| (data[i as usize] as i8) > 0 && level.unrank(i).quiet_moves(rules).is_ok())
        .unwrap();
    let mut d = data.clone();
    d[i as usize] = (d[i as usize] as i8 + 1) as u8;
    write(&d);
    let lines = same_failures(dir, n, "+1");
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&format!("index {i} board"))),
        "{lines:?}"
    );
    // A terminal position's value.
    let t = (0..level.size())
        .find(|&i| level.unrank(i).quiet_moves(rules).is_err())
        .unwrap();
    let mut d = data.clone();
    d[t as usize] = (d[t as usize] as i8 + 1) as u8;
    write(&d);
    let lines = same_failures(dir, n, "terminal");
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&format!("index {t} board")) && l.contains("(terminal)")),
        "{lines:?}"
    );
    // A value lowered below one of its captures.
    let (c, below) = (0..level.size())
        .find_map(|i| {
            let board = level.unrank(i);
            board.legal_moves(rules).iter().find_map(|m| {
                let got = m.captures as i8 - levels.value(&m.child).ok()?;
                (m.captures > 0 && got == data[i as usize] as i8).then_some((i, got - 1))
            })
        })
        .unwrap();
    let mut d = data.clone();
    d[c as usize] = below as u8;
    write(&d);
    let lines = same_failures(dir, n, "below a capture");
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&format!("index {c} board"))),
        "{lines:?}"
    );
    // A bad checksum: the data changed behind the header's back.
    let mut f = file.clone();
    f[64 + i as usize] = (f[64 + i as usize] as i8 + 1) as u8;
    std::fs::write(&path, &f).unwrap();
    let lines = same_failures(dir, n, "checksum");
    assert!(lines[0].contains("FAILED checksum"), "{lines:?}");
    std::fs::write(&path, &file).unwrap();
}

/// A progress that stops the pass (a panic) three quarters into its phase 1.
#[derive(Default)]
struct StopInLists {
    lists: std::sync::atomic::AtomicBool,
    total: std::sync::atomic::AtomicU64,
    seen: std::sync::atomic::AtomicU64,
}

impl awari_solver::Progress for StopInLists {
    fn phase(&self, name: &str, total: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.lists.store(name == "exits", Relaxed);
        self.total.store(total, Relaxed);
        self.seen.store(0, Relaxed);
    }
    fn advance(&self, k: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let seen = self.seen.fetch_add(k, Relaxed) + k;
        if self.lists.load(Relaxed) && seen > self.total.load(Relaxed) / 4 * 3 {
            panic!("stopped in phase 1");
        }
    }
}

/// The wrong entries a checked class pass found before it was stopped survive its resume:
/// the resumed pass reports the count and first ones of a pass never stopped.
#[test]
fn checked_class_pass_resumes_with_its_failures() {
    let rules = Rules::Awari;
    let n = 12;
    let dir = values_dir("check-resume", rules, n);
    let level = Level::new(n);
    let path = awari_db::level_path(&dir, n);
    let mut data = crate::common::table_data(&path);
    // Wrong entries early (in the first bucket) and late.
    let moving = |i: &u64| level.unrank(*i).quiet_moves(rules).is_ok();
    let early = (0..level.size()).find(moving).unwrap();
    let late = (0..level.size()).rev().find(moving).unwrap();
    for i in [early, late] {
        data[i as usize] = (data[i as usize] as i8 + 1) as u8;
    }
    awari_db::write_table(&path, awari_db::Header::values(rules, n), &data).unwrap();
    let levels = Levels::open(&dir, Some(rules)).unwrap();
    let once = temp("classes-check-once");
    let twice = temp("classes-check-twice");
    std::fs::create_dir_all(&once).unwrap();
    std::fs::create_dir_all(&twice).unwrap();
    let want = ClassPass::open(&levels, n, &once, 1)
        .unwrap()
        .check_values(5)
        .run(false, 5, &Silent)
        .unwrap();
    assert!(want.inconsistent >= 2, "{}", want.inconsistent);
    assert_eq!(want.inconsistent_examples[0].index, early);
    let stopped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ClassPass::open(&levels, n, &twice, 1)
            .unwrap()
            .check_values(5)
            .run(false, 5, &StopInLists::default())
    }));
    assert!(stopped.is_err(), "the pass was not stopped");
    assert!(twice.join(format!("level-{n}.dclasses")).exists());
    let got = ClassPass::open(&levels, n, &twice, 1)
        .unwrap()
        .check_values(5)
        .run(false, 5, &Silent)
        .unwrap();
    assert_eq!(got.resumed, Some(None), "it resumed in phase 1");
    assert_eq!(got.inconsistent, want.inconsistent);
    assert_eq!(got.inconsistent_examples, want.inconsistent_examples);
    same_report(&got, &want, "resumed");
    // An unchecked checkpoint is not resumed by a checked pass.
    let stopped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ClassPass::open(&levels, n, &twice, 1)
            .unwrap()
            .run(false, 5, &StopInLists::default())
    }));
    assert!(stopped.is_err(), "the pass was not stopped");
    let got = ClassPass::open(&levels, n, &twice, 1)
        .unwrap()
        .check_values(5)
        .run(false, 5, &Silent)
        .unwrap();
    assert_eq!(got.resumed, None, "it resumed an unchecked pass");
    assert_eq!(got.inconsistent, want.inconsistent);
    assert_eq!(got.inconsistent_examples, want.inconsistent_examples);
    for d in [dir, once, twice] {
        let _ = std::fs::remove_dir_all(d);
    }
}
