//! The compact depth pass ([`awari_solver::depth`]) against the tests' independent
//! breadth-first solver (`common/depths.rs`, the reference): the same depth at every entry of every level up to
//! 11 (`AWARI_DEPTH_TOP` for more; the slow tier, `tests/levels_to_20`, checks 20) under the three rule sets, with small
//! buckets (several passes over the lower levels) and with one; a false table (a quiet cycle
//! labelled as a win) is refused, naming a board on the cycle; and a pass killed at every
//! checkpoint resumes to the same table.

use std::path::{Path, PathBuf};

use awari_db::{depth_path, level_exists, Level, Levels, Rules};
use awari_solver::depth::{compute_depth, DepthError, DepthPass};
use awari_solver::Silent;

use crate::common;
use common::{build_mode, open_depth, s, solver, temp, text, BIN};

fn top() -> u32 {
    std::env::var("AWARI_DEPTH_TOP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(11)
}

/// The reference depths of level `n`, from its values (see `common/depths.rs`).
fn reference_depths(levels: &Levels, n: u32, rules: Rules) -> Vec<u16> {
    common::reference::depths::depths(levels, n, rules)
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
            let mut got = vec![0u16; want.len()];
            t.read_depths(0, &mut got, &[]).unwrap();
            for (i, &d) in want.iter().enumerate() {
                assert_eq!(got[i], d, "{rules} level {n} index {i}");
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

/// `verify` passes a consistent but false table as consistent and says it is not proven;
/// `verify --prove` fails on it, naming a board of the cycle; on the true table it says
/// "proven" at every level.
#[test]
fn verify_prove_rejects_a_false_cycle() {
    let rules = Rules::Awari;
    let good = values_dir("prove-good", rules, 12);
    let o = solver(&["verify", "--db", s(&good), "--prove"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    for n in (0..=12).filter(|&n| level_exists(n)) {
        assert!(
            t.contains(&format!("level {n:>2}: ok")) && t.contains("proven: every win"),
            "{t}"
        );
    }
    assert!(t.contains("verified: every value is the game value"), "{t}");
    // No work files are left behind, and no depth table is written.
    let names: Vec<String> = std::fs::read_dir(&good)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|f| f.ends_with(".values")), "{names:?}");

    let bad = values_dir("prove-bad", rules, 2);
    let changed = common::make_false_cycle(&bad, rules, 2);
    let o = solver(&["verify", "--db", s(&bad)]);
    let t = text(&o);
    assert!(o.status.success(), "the plain check passes it: {t}");
    assert!(
        t.contains("level  2: ok") && t.contains("not proven"),
        "{t}"
    );
    let o = solver(&["verify", "--db", s(&bad), "--prove"]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("level  2: NOT PROVEN"), "{t}");
    assert!(
        t.contains(&format!("board {}: stored", changed[0])),
        "names the relabelled board {}: {t}",
        changed[0]
    );
    // `depth` refuses it too, in one line, and writes no table for it.
    let o = solver(&["depth", "--db", s(&bad)]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("no finite depth"), "{t}");
    assert!(!depth_path(&bad, 2).exists());
    // A changed value (checksum recomputed) fails the proof's own consistency check, named.
    let changed = temp("depth-prove-changed");
    common::copy_levels(&good, &changed, 0..=12);
    let level = Level::new(12);
    let i = common::lower_a_won_value(&changed, rules, 12);
    let o = solver(&["verify", "--db", s(&changed), "--prove", "--stones", "12"]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("level 12: FAILED"), "{t}");
    assert!(
        t.contains(&format!("index {i} board {}:", level.unrank(i))),
        "{t}"
    );
    // `depth --check` refuses it too, naming it, and writes no table; on the true levels it
    // writes every table and says each level is proven.
    let o = solver(&["depth", "--db", s(&changed), "--check", "--stones", "12"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("not the best of their moves") && t.contains(&format!("index {i} board")),
        "{t}"
    );
    assert!(!depth_path(&changed, 12).exists());
    let o = solver(&["depth", "--db", s(&good), "--check"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert_eq!(t.matches("proven (values checked)").count(), 13, "{t}");
    for d in [good, bad, changed] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// `depth` on a directory of raw VU `scores.N` files, into another directory: the values are
/// linked there, the depth tables equal those of our own tables, and the result probes and
/// verifies as a database of its own.
#[test]
fn depth_on_raw_files_into_another_directory() {
    let ours = values_dir("raw-ours", Rules::Awari, 12);
    let raw = temp("depth-raw");
    std::fs::create_dir_all(&raw).unwrap();
    for n in (0..=12).filter(|&n| level_exists(n)) {
        let data = crate::common::table_data(&awari_db::level_path(&ours, n));
        std::fs::write(awari_db::raw_path(&raw, n), &data).unwrap();
    }
    let out = temp("depth-raw-out");
    let o = solver(&["depth", "--db", s(&raw), "--out", s(&out)]);
    assert!(o.status.success(), "{}", text(&o));
    let o = solver(&["depth", "--db", s(&ours)]);
    assert!(o.status.success(), "{}", text(&o));
    for n in (0..=12).filter(|&n| level_exists(n)) {
        assert_eq!(
            std::fs::read(depth_path(&out, n)).unwrap(),
            std::fs::read(depth_path(&ours, n)).unwrap(),
            "level {n}"
        );
        assert!(!depth_path(&raw, n).exists());
    }
    let levels = Levels::open(&out, None).unwrap();
    assert!(levels.is_raw());
    assert!(levels.depth_table(12).is_some());
    // Run again: every table is kept.
    let o = solver(&["depth", "--db", s(&raw), "--out", s(&out)]);
    let t = text(&o);
    assert!(
        o.status.success() && t.contains("0 depth table(s) written"),
        "{t}"
    );
    let o = solver(&["verify", "--db", s(&out)]);
    let t = text(&o);
    assert!(
        o.status.success() && t.contains("depths well-founded"),
        "{t}"
    );
    for d in [ours, raw, out] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// A `depth` run killed (SIGKILL) at ten moments, in wave 0 and in the waves, then run to its
/// end, writes the same tables, byte for byte, as the in-memory builder wrote beside the
/// shared reference (which an uninterrupted run writes too: `levels_to_20::depth`).
#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn killed_depth_runs_resume_to_the_same_tables() {
    let top = 17;
    // The values from the slow tier's shared reference (built once for every test).
    let reference = common::reference::shared_reference(Rules::Awari);
    let killed = temp("depth-kill-killed");
    common::copy_levels(&reference, &killed, 0..=top);
    for trial in 0..10u64 {
        let mut child = std::process::Command::new(BIN)
            .args(["depth", "--threads", "2", "--memory", "40M", "--db"])
            .arg(&killed)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(150 * (trial + 1)));
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let o = solver(&["depth", "--threads", "2", "--db", s(&killed)]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    eprintln!("{t}");
    let want = common::reference::in_memory_depths(&reference);
    for n in (0..=top).filter(|&n| level_exists(n)) {
        assert!(
            std::fs::read(depth_path(&want, n)).unwrap()
                == std::fs::read(depth_path(&killed, n)).unwrap(),
            "level {n} differs after kills"
        );
    }
    let _ = std::fs::remove_dir_all(killed);
}

/// Every subcommand of `awari-solver` with its standard output closed before it writes (a
/// reader that stopped, as `| head` does) exits 0, with nothing about it on stderr.
#[test]
fn a_closed_pipe_is_a_quiet_exit() {
    let dir = values_dir("pipe", Rules::Awari, 10);
    let d = s(&dir);
    // (A closed pipe ends `depth` at its first line: its tables are made beforehand.)
    assert!(solver(&["depth", "--db", d]).status.success());
    let out = temp("depth-pipe-out");
    let runs: Vec<Vec<&str>> = vec![
        vec!["build", "--db", d, "--max-stones", "10", "--log-every", "0"],
        vec!["depth", "--db", d],
        vec!["verify", "--db", d],
        vec!["verify", "--db", d, "--prove"],
        vec!["stats", "--db", d, "--stones", "10"],
        vec!["stats", "--db", d, "--stones", "10", "--depth", "--json"],
        vec!["compare", d, d],
        vec!["compress", "--db", d, "--out", s(&out)],
        vec!["plan", "--max-stones", "48"],
        vec!["--help"],
    ];
    for args in runs {
        let mut child = std::process::Command::new(BIN)
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{args:?}: {:?} {err}", o.status);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
    }
    for p in [dir, out] {
        let _ = std::fs::remove_dir_all(p);
    }
}

/// `compress --probe` writes segments of 256 entries, `--segment 128` of 128; both resolve to
/// the plain values; a level compressed in the other length is written again, one in the
/// same kept; and `--segment` without `--probe` is refused.
#[test]
fn compress_segment_chooses_the_probe_forms_segment_length() {
    use awari_db::compressed::{Form, LONG_SEGMENT_LOG2, PROBE_SEGMENT_LOG2};
    let dir = values_dir("segment", Rules::Awari, 10);
    let plain = Levels::open(&dir, Some(Rules::Awari)).unwrap();
    let out = temp("segment-out");
    for (flag, log2) in [(None, LONG_SEGMENT_LOG2), (Some("128"), PROBE_SEGMENT_LOG2)] {
        let mut args = vec!["compress", "--db", s(&dir), "--out", s(&out), "--probe"];
        if let Some(f) = flag {
            args.extend(["--segment", f]);
        }
        let o = solver(&args);
        assert!(o.status.success(), "{}", text(&o));
        assert!(!text(&o).contains("kept"), "{}", text(&o));
        let again = text(&solver(&args));
        assert!(
            again.contains("level 10 compressed") && again.contains("kept"),
            "{again}"
        );
        let probe = Levels::open(&out, Some(Rules::Awari)).unwrap();
        let want = Form::CaptureDontCares.with_segment_log2(log2);
        for n in (0..=10).filter(|&n| level_exists(n)) {
            assert_eq!(probe.require(n).unwrap().compressed_layout(), Some(want));
        }
        let level = Level::new(10);
        for (i, board) in (0..level.size())
            .zip(level.boards(0..level.size()))
            .step_by(7)
        {
            assert_eq!(
                probe.lookup(&board, i).unwrap(),
                plain.require(10).unwrap().value(i).unwrap(),
                "entry {i}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(out);
    let o = solver(&[
        "compress",
        "--db",
        s(&dir),
        "--estimate",
        "--segment",
        "128",
    ]);
    assert!(
        !o.status.success() && text(&o).contains("--probe"),
        "{}",
        text(&o)
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Every depth of `levels`' level `n`, read whole.
fn all_depths(levels: &Levels, n: u32) -> Vec<u16> {
    let mut d = vec![0u16; Level::new(n).size() as usize];
    levels.read_depths(n, 0, &mut d).unwrap();
    d
}

/// Compressed depth tables (`.cdepth`, coded against the values) hold the same depths as the
/// plain ones, read whole or a stretch from anywhere, through self-contained and probe-form
/// values alike; converting kept plain tables gives the same files as writing them
/// compressed; `verify` proves a level through them; a damaged block is an error where it
/// is read and in `verify`, never a wrong depth.
#[test]
fn compressed_depth_tables_hold_the_same_depths() {
    use awari_solver::depth::{add_depth_tables, DepthForm};
    for rules in Rules::ALL {
        // The other rule sets differ in their moves alone: fewer levels.
        let top = if rules == Rules::Awari { 12 } else { 10 };
        let plain = values_dir("cd-plain", rules, top);
        let add = |dir: &Path, form| {
            add_depth_tables(dir, None, &[], None, false, form, &Silent, |_| {}).unwrap();
        };
        let converted = temp(&format!("cd-converted-{rules}"));
        common::copy_levels(&plain, &converted, 0..=top);
        let direct = temp(&format!("cd-direct-{rules}"));
        common::copy_levels(&plain, &direct, 0..=top);
        add(&plain, DepthForm::Plain);
        for n in (0..=top).filter(|&n| level_exists(n)) {
            std::fs::copy(depth_path(&plain, n), depth_path(&converted, n)).unwrap();
        }
        add(&converted, DepthForm::Compressed);
        // Written compressed at once (awari only: the same code path for every rule set).
        let whole_run = rules == Rules::Awari;
        if whole_run {
            add(&direct, DepthForm::Compressed);
        }
        let want = Levels::open(&plain, Some(rules)).unwrap();
        let got = Levels::open(&converted, Some(rules)).unwrap();
        let mut rng = awari_db::SplitMix64(u64::from(top));
        for n in (0..=top).filter(|&n| level_exists(n)) {
            let cdepth = awari_db::compressed_depth_path(&converted, n);
            assert!(!depth_path(&converted, n).exists(), "{rules} level {n}");
            if whole_run {
                assert_eq!(
                    std::fs::read(&cdepth).unwrap(),
                    std::fs::read(awari_db::compressed_depth_path(&direct, n)).unwrap(),
                    "{rules} level {n}"
                );
            }
            assert!(got.depth_table(n).unwrap().is_compressed());
            let whole = all_depths(&want, n);
            assert_eq!(all_depths(&got, n), whole, "{rules} level {n}");
            let size = whole.len() as u64;
            for _ in 0..200 {
                let start = rng.below(size);
                let len = 1 + rng.below(150.min(size - start)) as usize;
                let mut d = vec![0u16; len];
                got.read_depths(n, start, &mut d).unwrap();
                assert_eq!(d[..], whole[start as usize..start as usize + len]);
                let board = Level::new(n).unrank(start);
                assert_eq!(
                    got.depth(&board).unwrap(),
                    Some(whole[start as usize]),
                    "{rules} {board}"
                );
            }
            // verify proves a level through them (one level: each child's depth decodes the
            // boards of its segment up to it, about 3 µs, so a level of a million positions
            // would take a quarter of a minute).
            if n == 10 {
                let v = awari_solver::verify::verify_level_lookup(&got, n, 4, &Silent).unwrap();
                assert!(v.proven(), "{rules} level {n}: {v:?}");
            }
        }
        // Values in the probe form: the depths' contexts come from their capture searches.
        let probe = temp(&format!("cd-probe-{rules}"));
        if !whole_run {
            for d in [&plain, &converted, &direct] {
                let _ = std::fs::remove_dir_all(d);
            }
            continue;
        }
        awari_solver::compress::compress_db(
            &want,
            &probe,
            &[],
            awari_db::compressed::Form::CaptureDontCares,
            &Silent,
            |_| {},
        )
        .unwrap();
        let p = Levels::open(&probe, Some(rules)).unwrap();
        // Level `top - 1` whole, and a stretch of `top` from its middle (each depth read
        // through probe-form values costs a few µs: their capture searches).
        for n in [top - 1, top] {
            assert!(p.get(n).unwrap().is_probe_form() && p.depth_table(n).unwrap().is_compressed());
            let whole = all_depths(&want, n);
            let (start, len) = if n == top {
                (whole.len() / 2 - 1000, 100_000)
            } else {
                (0, whole.len())
            };
            let mut d = vec![0u16; len];
            p.read_depths(n, start as u64, &mut d).unwrap();
            assert_eq!(d[..], whole[start..start + len], "{rules} level {n}");
        }
        // A damaged block: an error where read, and in verify.
        let n = top;
        let cdepth = awari_db::compressed_depth_path(&converted, n);
        let mut bytes = std::fs::read(&cdepth).unwrap();
        let at = bytes.len() - 100;
        bytes[at] ^= 0x10;
        drop(got);
        std::fs::write(&cdepth, &bytes).unwrap();
        let got = Levels::open(&converted, Some(rules)).unwrap();
        let mut d = vec![0u16; Level::new(n).size() as usize];
        assert!(got.read_depths(n, 0, &mut d).is_err(), "{rules}");
        let v = awari_solver::verify::verify_level_lookup(&got, n, 4, &Silent).unwrap();
        assert!(!v.passed(), "{rules}");
        for d in [&plain, &converted, &direct, &probe] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// A `--memory` below the least that the depth pass needs is refused, by `depth` and by
/// `verify --prove` where a level lacks its depth table, with one line naming that least;
/// once the tables exist, `verify --prove` needs no depth pass and runs in it.
#[test]
fn a_memory_below_the_depth_pass_least_is_refused() {
    let dir = values_dir("memory-floor", Rules::Awari, 8);
    // (`depth` runs a thread per core by default.)
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let least = awari_solver::depth::least_memory(8, cores);
    let below = format!("{}", least - 1);
    for args in [
        vec!["depth", "--memory", &below, "--db", s(&dir)],
        vec!["verify", "--prove", "--memory", &below, "--db", s(&dir)],
    ] {
        let o = solver(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {t}");
        assert_eq!(t.lines().count(), 1, "{args:?}: {t}");
        assert!(
            t.contains("needs at least") && t.contains("level 8"),
            "{args:?}: {t}"
        );
        assert!(!level_path_exists(&dir, 8), "{args:?} wrote a depth table");
    }
    let at = format!("{least}");
    let o = solver(&["depth", "--memory", &at, "--db", s(&dir)]);
    assert!(o.status.success(), "{}", text(&o));
    let o = solver(&["verify", "--prove", "--memory", "1", "--db", s(&dir)]);
    assert!(o.status.success(), "{}", text(&o));
    let _ = std::fs::remove_dir_all(dir);
}

fn level_path_exists(dir: &Path, n: u32) -> bool {
    depth_path(dir, n).exists()
}

/// `verify --prove --method streamed` on levels with depth tables proves them by a depth pass
/// (the streamed method reads no table at random, so not the depth table): it said "not
/// proven; --prove proves it" and proved nothing.
#[test]
fn verify_prove_streamed_proves_levels_that_have_depth_tables() {
    let dir = values_dir("prove-streamed", Rules::Awari, 10);
    let o = solver(&["depth", "--db", s(&dir)]);
    assert!(o.status.success(), "{}", text(&o));
    let o = solver(&[
        "verify",
        "--db",
        s(&dir),
        "--prove",
        "--method",
        "streamed",
        "--stones",
        "9",
        "10",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert_eq!(
        out.matches("proven: every win and loss converts").count(),
        2,
        "{out}"
    );
    assert!(!out.contains("not proven"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
