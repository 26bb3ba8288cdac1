//! The probe as users run it: the real binary over databases built in the test.

use crate::common::{self, compressed, db, temp, top, COMPRESSED_TOP};

use std::path::Path;
use std::process::{Command, Output, Stdio};

use awari_db::compressed::Form;
use awari_db::{level_exists, level_path, Board, Rules, SplitMix64};
use awari_probe::{perfect_line, report, Database, LineEnd};

const BIN: &str = env!("CARGO_BIN_EXE_awari-probe");

fn probe(args: &[&str], stdin: Option<&str>) -> Output {
    probe_bytes(args, stdin.map(str::as_bytes))
}

/// `awari-probe args` started with stdout and stderr piped, and stdin piped when `piped`.
fn spawn_probe(args: &[&str], piped: bool) -> std::process::Child {
    let mut cmd = Command::new(BIN);
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if piped { Stdio::piped() } else { Stdio::null() });
    cmd.spawn().unwrap()
}

/// `probe` with any bytes on stdin.
fn probe_bytes(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = spawn_probe(args, stdin.is_some());
    if let Some(text) = stdin {
        use std::io::Write;
        let mut input = child.stdin.take().unwrap();
        let text = text.to_vec();
        std::thread::spawn(move || input.write_all(&text).unwrap());
    }
    child.wait_with_output().unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `count` random boards of 0..=`top` seeds (within the test databases), the same for a seed.
fn random_boards(seed: u64, count: usize, top: u32) -> Vec<Board> {
    let mut rng = SplitMix64(seed);
    (0..count)
        .map(|_| {
            let n = rng.below(u64::from(top) + 1) as u32;
            rng.board(n)
        })
        .collect()
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn vu_example_and_start_positions() {
    let d = path_str(db(Rules::Awari));
    let j = json(&probe(
        &[
            "show", "--db", d, "--json", "1", "1", "1", "1", "1", "2", "4", "2", "3", "0", "0", "0",
        ],
        None,
    ));
    common::assert_vu_example(&j);
    assert_eq!(j["index"], 588953);
    // The same numbers in one word separated by commas, or in two quoted words.
    for words in [
        &["1,1,1,1,1,2,4,2,3,0,0,0"][..],
        &["1 1 1 1 1 2", "4,2,3,0,0,0"][..],
    ] {
        let mut args = vec!["show", "--db", d, "--json"];
        args.extend(words);
        assert_eq!(json(&probe(&args, None)), j, "{words:?}");
    }
    // A word that is not a number is named, however the numbers are grouped.
    let out = probe(&["show", "--db", d, "1 1 1 1 1 2", "4,2,3,0,0,x"], None);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("pit 11: 'x' is not a seed count"), "{e}");

    // One seed per pit: a draw, valued by one ply (the opponent row is full).
    let out = probe(
        &[
            "show", "--db", d, "1", "1", "1", "1", "1", "1", "1", "1", "1", "1", "1", "1",
        ],
        None,
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("value: +0 (draw)"), "{text}");
    assert!(text.contains("index: none"), "{text}");

    // The final score with --captured.
    let out = probe(
        &[
            "show",
            "--db",
            d,
            "--captured",
            "20,12",
            "1",
            "1",
            "1",
            "1",
            "1",
            "2",
            "4",
            "2",
            "3",
            "0",
            "0",
            "0",
        ],
        None,
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("final 28\u{2013}20"), "{text}");
}

#[test]
fn lines_end_with_the_predicted_score() {
    let mut rng = SplitMix64(99);
    for rules in Rules::ALL {
        let dir = db(rules);
        let database = Database::open(dir, None).unwrap();
        for k in 0..500 {
            let n = 1 + rng.below(u64::from(top(rules))) as u32;
            let board = rng.board(n);
            let line = perfect_line(&database, &board, 5000).unwrap();
            assert!(line.complete(), "{rules}: {board} ended {:?}", line.end);
            assert_eq!(
                line.result[0] - line.result[1],
                f64::from(line.value),
                "{rules}: {board}"
            );
            // Every seed is won, or shared on a repetition; under cross-wari the seeds left
            // when the game ends go to no one.
            let left = match (line.end, line.plies.last()) {
                (LineEnd::Terminal, Some(p)) if rules == Rules::CrossWari => p.board.seeds(),
                (LineEnd::Terminal, None) if rules == Rules::CrossWari => n,
                _ => 0,
            };
            assert_eq!(
                line.result[0] + line.result[1] + f64::from(left),
                f64::from(n)
            );
            // No position repeats while there is a win to realise: a repetition only ever
            // ends a drawn remainder (after the captures that realise the value).
            let mut seen = std::collections::HashSet::new();
            for p in &line.plies {
                if database.value(&p.board).unwrap() != 0 {
                    assert!(seen.insert(p.board), "{rules}: {board} repeats {}", p.board);
                }
            }
            // Every ply keeps the value: the mover's value = captures − next value.
            let mut v = line.value;
            for p in &line.plies {
                let next = database.value(&p.board).unwrap();
                assert_eq!(i16::from(p.captures) - i16::from(next), i16::from(v));
                v = next;
            }
            // The binary says the same, for some of them.
            if k % 50 == 0 {
                let words: Vec<String> = board.pits().iter().map(|p| p.to_string()).collect();
                let mut args = vec!["line", "--db", path_str(dir), "--json"];
                args.extend(words.iter().map(String::as_str));
                let j = json(&probe(&args, None));
                assert_eq!(j["value"], i64::from(line.value));
                assert_eq!(j["complete"], true);
                assert_eq!(j["plies"].as_array().unwrap().len(), line.plies.len());
                let r = &j["result"];
                assert_eq!(
                    r[0].as_f64().unwrap() - r[1].as_f64().unwrap(),
                    f64::from(line.value)
                );
            }
        }
    }
}

/// With depth tables, playing any of `best_moves` (what show's "best", serve's play, Python's
/// `best_moves` and `PerfectBot` choose from) on both sides realises every won position's
/// predicted score: no position repeats before the end, whichever perfect pit each side picks.
#[test]
fn best_moves_realise_every_win() {
    let mut rng = SplitMix64(2026);
    for rules in Rules::ALL {
        let database = Database::open(db(rules), None).unwrap();
        let mut won = 0;
        while won < 300 {
            let n = 2 + rng.below(u64::from(top(rules)) - 1) as u32;
            let start = rng.board(n);
            let value = database.value(&start).unwrap();
            if value == 0 {
                continue;
            }
            won += 1;
            let (mut board, mut side, mut score) = (start, 0usize, [0i32; 2]);
            let mut seen = std::collections::HashSet::new();
            loop {
                let best = database.best_moves(&board).unwrap();
                let Some(&pit) = best.get(rng.below(best.len().max(1) as u64) as usize) else {
                    // The game is over: the mover takes (left + terminal value) / 2.
                    let t = match board.outcome(rules) {
                        awari_db::Outcome::Terminal(t) => i32::from(t),
                        _ => unreachable!("moves but no best move"),
                    };
                    let left = board.seeds() as i32;
                    score[side] += (left + t) / 2;
                    score[1 - side] += (left - t) / 2;
                    break;
                };
                if database.value(&board).unwrap() == 0 {
                    // A draw is left: the seeds on the board are divided evenly.
                    let left = board.seeds() as i32;
                    score[0] += left / 2;
                    score[1] += left / 2;
                    break;
                }
                let m = *board.legal_moves(rules).get(usize::from(pit)).unwrap();
                assert!(
                    seen.insert(board),
                    "{rules}: from {start} the line repeats {board}"
                );
                if m.captures > 0 {
                    seen.clear();
                }
                score[side] += i32::from(m.captures);
                board = m.child;
                side = 1 - side;
            }
            assert_eq!(
                score[0] - score[1],
                i32::from(value),
                "{rules}: {start} worth {value}"
            );
        }
    }
}

#[test]
fn without_depth_tables_lines_never_claim_a_wrong_score() {
    let values_only = temp("values-only");
    std::fs::create_dir_all(&values_only).unwrap();
    for n in (0..=16).filter(|&n| level_exists(n)) {
        std::fs::copy(level_path(db(Rules::Awari), n), level_path(&values_only, n)).unwrap();
    }
    let database = Database::open(&values_only, None).unwrap();
    let mut rng = SplitMix64(1234);
    let (mut complete, mut unrealised) = (0, 0);
    for _ in 0..300 {
        let n = 1 + rng.below(16) as u32;
        let board = rng.board(n);
        let line = perfect_line(&database, &board, 5000).unwrap();
        if line.complete() {
            assert_eq!(
                line.result[0] - line.result[1],
                f64::from(line.value),
                "{board}"
            );
            complete += 1;
        } else {
            assert_eq!(line.end, LineEnd::Unrealised, "{board}");
            assert_ne!(line.value, 0);
            unrealised += 1;
        }
    }
    eprintln!("without depth tables: {complete} complete, {unrealised} stopped at a repetition");
    assert!(complete > 250);
    std::fs::remove_dir_all(&values_only).unwrap();
}

/// `batch --depth` prints `value depth`, the depth that `show` gives (boards with a full
/// opponent row included, valued and deepened by one ply), and a level without a depth table
/// is a one-line error.
#[test]
fn batch_depth_agrees_with_show() {
    let d = db(Rules::Awari);
    let database = Database::open(d, None).unwrap();
    let mut rng = SplitMix64(77);
    let mut boards: Vec<Board> = (0..300)
        .map(|_| {
            let n = 1 + rng.below(16) as u32;
            rng.board(n)
        })
        .collect();
    boards.push(Board::uniform(1));
    let input: String = boards.iter().map(|b| format!("{b}\n")).collect();
    let out = probe(&["batch", "--db", path_str(d), "--depth"], Some(&input));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for (b, line) in boards.iter().zip(text.lines()) {
        let r = report(b, Rules::Awari, Some(&database)).unwrap();
        let want = format!("{} {}", r.value.unwrap(), r.depth.unwrap());
        assert_eq!(line, want, "{b}");
    }
    assert_eq!(text.lines().count(), boards.len());
    let values_only = temp("batch-depth-values");
    std::fs::create_dir_all(&values_only).unwrap();
    for n in (0..=16).filter(|&n| level_exists(n)) {
        std::fs::copy(level_path(d, n), level_path(&values_only, n)).unwrap();
    }
    let out = probe(
        &["batch", "--db", path_str(&values_only), "--depth"],
        Some("1 1 1 1 1 1 0 0 0 0 0 0\n"),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has no depth table"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(out.stdout.is_empty());
    std::fs::remove_dir_all(&values_only).unwrap();
}

#[test]
fn batch_agrees_with_show() {
    let d = db(Rules::Awari);
    let database = Database::open(d, None).unwrap();
    let boards = random_boards(5, 10_000, 16);
    let input: String = boards.iter().map(|b| format!("{b}\n")).collect();
    let out = probe(&["batch", "--db", path_str(d)], Some(&input));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let values: Vec<i8> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(values.len(), boards.len());
    for (b, v) in boards.iter().zip(&values) {
        let r = report(b, Rules::Awari, Some(&database)).unwrap();
        assert_eq!(r.value, Some(*v), "{b}");
    }
    // Windows line ends, blank lines (no answer) and a last line without its newline.
    let input = format!("{}\r\n\n  \n{}\r\n{}", boards[0], boards[1], boards[2]);
    let out = probe(&["batch", "--db", path_str(d)], Some(&input));
    let expected: String = values[..3].iter().map(|v| format!("{v}\n")).collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
    // The JSON form is show's JSON, line for line.
    let few: String = boards[..30].iter().map(|b| format!("{b}\n")).collect();
    let out = probe(&["batch", "--db", path_str(d), "--json"], Some(&few));
    let lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    for (b, l) in boards[..30].iter().zip(&lines) {
        let words: Vec<String> = b.pits().iter().map(|p| p.to_string()).collect();
        let mut args = vec!["show", "--db", path_str(d), "--json"];
        args.extend(words.iter().map(String::as_str));
        let shown = json(&probe(&args, None));
        let batched: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(shown, batched);
    }
}

#[test]
fn a_compressed_directory_answers_like_the_plain_one() {
    compressed_answers_like_plain(Form::SelfContained);
}

#[test]
fn a_directory_in_the_probe_form_answers_like_the_plain_one() {
    compressed_answers_like_plain(Form::CaptureDontCares);
}

/// Levels 0..=`top` of the test database compressed in `form` answer `batch`, `show` and
/// `line` as the plain ones do, and a damaged block of level `top` (in a copy) is a one-line
/// error.
fn compressed_answers_like_plain(form: Form) {
    let d = db(Rules::Awari);
    let top = COMPRESSED_TOP;
    let packed = compressed(form);
    let opened = awari_db::Levels::open(packed, None).unwrap();
    assert_eq!(
        opened.require(top).unwrap().is_probe_form(),
        form.is_probe()
    );
    assert_eq!(opened.require(top).unwrap().compressed_form(), Some(form));
    assert!(awari_db::compressed_path(packed, top).exists() && !level_path(packed, top).exists());
    // 100,000 random boards through batch: the same answers, line for line.
    let boards = random_boards(23, 100_000, top);
    let input: String = boards.iter().map(|b| format!("{b}\n")).collect();
    let a = probe(&["batch", "--db", path_str(d)], Some(&input));
    let b = probe(&["batch", "--db", path_str(packed)], Some(&input));
    assert!(a.status.success() && b.status.success());
    assert_eq!(
        a.stdout.iter().filter(|&&c| c == b'\n').count(),
        boards.len()
    );
    assert!(a.stdout == b.stdout, "batch answers differ");
    // show and line (with the depth tables copied along) print the same, JSON and text.
    let ones = Board::new([1; 12]).unwrap();
    for board in boards.iter().step_by(5000).chain([&ones]) {
        let words: Vec<String> = board.pits().iter().map(|p| p.to_string()).collect();
        for command in ["show", "line"] {
            for json in [false, true] {
                let run = |dir: &Path| {
                    let mut args = vec![command, "--db", path_str(dir)];
                    if json {
                        args.push("--json");
                    }
                    args.extend(words.iter().map(String::as_str));
                    let out = probe(&args, None);
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    String::from_utf8(out.stdout)
                        .unwrap()
                        .replace(path_str(dir), "DB")
                };
                assert_eq!(run(d), run(packed), "{command} {board} json={json}");
            }
        }
    }
    // A damaged block: a one-line error naming the level and block, and exit status 1.
    let shared = packed;
    let packed = temp(&format!("damaged-{form:?}"));
    std::fs::create_dir_all(&packed).unwrap();
    for entry in std::fs::read_dir(shared).unwrap() {
        let from = entry.unwrap().path();
        std::fs::copy(&from, packed.join(from.file_name().unwrap())).unwrap();
    }
    let file = awari_db::compressed_path(&packed, top);
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() - 100;
    bytes[at] ^= 0x20;
    std::fs::write(&file, &bytes).unwrap();
    let level = awari_db::Level::new(top);
    let last: String = (level.size() - 400..level.size())
        .map(|i| format!("{}\n", level.unrank(i)))
        .collect();
    let out = probe(&["batch", "--db", path_str(&packed)], Some(&last));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("level {top}, block")) && err.contains("corrupt"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    std::fs::remove_dir_all(&packed).unwrap();
}

#[test]
fn raw_vu_directory_gives_the_same_answers() {
    let d = db(Rules::Awari);
    let raw = temp("raw");
    std::fs::create_dir_all(&raw).unwrap();
    for n in (0..=16).filter(|&n| level_exists(n)) {
        let bytes = std::fs::read(level_path(d, n)).unwrap();
        let data = &bytes[64..64 + awari_db::level_size(n) as usize];
        std::fs::write(raw.join(format!("scores.{n}")), data).unwrap();
    }
    let a = Database::open(d, None).unwrap();
    let b = Database::open(&raw, None).unwrap();
    assert!(b.levels().is_raw());
    let mut rng = SplitMix64(11);
    for _ in 0..2000 {
        let n = rng.below(17) as u32;
        let board = rng.board(n);
        assert_eq!(a.value(&board).unwrap(), b.value(&board).unwrap());
        // Without depth tables the raw files' best moves are every value-optimal move; ours
        // (with depths) are some of them.
        let (ours, raw_best) = (a.best_moves(&board).unwrap(), b.best_moves(&board).unwrap());
        assert!(ours.iter().all(|p| raw_best.contains(p)), "{board}");
        let v = b.value(&board).unwrap();
        let optimal: Vec<u8> = b
            .moves(&board)
            .unwrap()
            .iter()
            .filter(|(_, mv)| *mv == v)
            .map(|(m, _)| m.pit)
            .collect();
        assert_eq!(raw_best, optimal, "{board}");
    }
    let j = json(&probe(
        &[
            "show",
            "--db",
            path_str(&raw),
            "--json",
            "1",
            "1",
            "1",
            "1",
            "1",
            "2",
            "4",
            "2",
            "3",
            "0",
            "0",
            "0",
        ],
        None,
    ));
    assert_eq!(j["value"], 0);
    // The raw files are awari: asking for abapa is refused.
    let out = probe(
        &["show", "--db", path_str(&raw), "--rules", "abapa", "start"],
        None,
    );
    assert!(!out.status.success());
    std::fs::remove_dir_all(&raw).unwrap();
}

fn fails(args: &[&str], code: i32, needle: &str) {
    let out = probe(args, None);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert_eq!(
        err.trim().lines().count(),
        1,
        "one-line message expected: {err}"
    );
    assert!(err.contains(needle), "{args:?}: '{needle}' not in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// `fails` for a command on a board written as one string of numbers.
fn fails_board(command: &str, d: &str, board: &str, code: i32, needle: &str) {
    let mut args = vec![command, "--db", d];
    args.extend(board.split(' '));
    fails(&args, code, needle);
}

#[test]
fn errors_a_user_will_make() {
    let d = path_str(db(Rules::Awari));
    fails_board("show", d, "1 2 3", 2, "12 pits, got 3");
    fails_board("show", d, "0 0 0 0 0 0 0 0 0 0 0 -1", 2, "'-1'");
    fails_board("show", d, "47 0 0 0 0 0 0 0 0 0 0 0", 2, "47 seeds");
    fails_board("show", d, "40 9 0 0 0 0 0 0 0 0 0 0", 2, "49 seeds");
    fails_board("show", d, "x 0 0 0 0 0 0 0 0 0 0 0", 2, "'x'");
    fails_board(
        "show",
        d,
        "2 2 2 2 2 2 2 2 2 2 2 2",
        1,
        "level 24 is missing",
    );
    fails(&["line", "--db", d, "start"], 1, "level 48 is missing");
    fails_board(
        "show",
        d,
        "--rules grand-slam start",
        1,
        "expected grand-slam",
    );
    fails(
        &["show", "--db", "/nonexistent/awari", "start"],
        1,
        "does not exist",
    );

    // A corrupt header and a truncated file, in a copy of the database.
    let copy = temp("corrupt");
    std::fs::create_dir_all(&copy).unwrap();
    for n in 0..=12 {
        std::fs::copy(level_path(db(Rules::Awari), n), level_path(&copy, n)).unwrap();
    }
    let c = path_str(&copy);
    let f = level_path(&copy, 12);
    let bytes = std::fs::read(&f).unwrap();
    std::fs::write(&f, &bytes[..bytes.len() - 10]).unwrap();
    fails(&["show", "--db", c, "start"], 1, "truncated");
    let mut bad = bytes.clone();
    bad[0] = b'Z';
    std::fs::write(&f, &bad).unwrap();
    fails(&["show", "--db", c, "start"], 1, "bad magic");
    std::fs::write(&f, &bytes).unwrap();
    // A depth table: truncated, or of another level, is a one-line error, never a depth.
    let depth = awari_db::depth_path(&copy, 12);
    let dbytes = std::fs::read(awari_db::depth_path(db(Rules::Awari), 12)).unwrap();
    std::fs::write(&depth, &dbytes[..dbytes.len() - 1]).unwrap();
    fails(&["show", "--db", c, "start"], 1, "truncated");
    fails(&["line", "--db", c, "start"], 1, "truncated");
    std::fs::copy(awari_db::depth_path(db(Rules::Awari), 11), &depth).unwrap();
    fails(&["show", "--db", c, "start"], 1, "seed count mismatch");
    std::fs::remove_dir_all(&copy).unwrap();

    // A bad line in batch names the line.
    let out = probe(
        &["batch", "--db", d],
        Some("0 0 0 0 0 0 0 0 0 0 0 1\n1 2\n"),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stdin line 2"));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "-1");

    // A level the database lacks, on line 5 of a group of 16: lines 1..4 are answered first.
    let mut input = String::new();
    for _ in 0..4 {
        input.push_str("0 0 0 0 0 0 0 0 0 0 0 1\n");
    }
    input.push_str("2 2 2 2 2 2 2 2 2 2 2 0\n0 0 0 0 0 0 0 0 0 0 0 1\n");
    let out = probe(&["batch", "--db", d], Some(&input));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "-1\n".repeat(4));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("level 22 is missing"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Bytes that are not text, on line 3.
    let out = probe_bytes(
        &["batch", "--db", d],
        Some(b"0 0 0 0 0 0 0 0 0 0 0 1\n\n\xff 1\n"),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("stdin line 3: not UTF-8 text"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "-1\n");

    // Far into the input (batch answers blocks of lines on all cores): every line before the
    // bad one is answered, in order, and the error names the right line.
    let boards = random_boards(11, 70_000, 16);
    let mut input: String = boards.iter().map(|b| format!("{b}\n")).collect();
    input.push_str("1 2 3\n0 0 0 0 0 0 0 0 0 0 0 1\n");
    let out = probe(&["batch", "--db", d], Some(&input));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("stdin line 70001:"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let database = Database::open(db(Rules::Awari), None).unwrap();
    let answered: Vec<i8> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let expected: Vec<i8> = boards.iter().map(|b| database.value(b).unwrap()).collect();
    assert_eq!(answered, expected);
}

/// `batch --json` writes its JSON by hand; it must be the text `to_json` serializes to, for
/// every kind of board: every board of up to 7 seeds (terminal ones, full opponent rows,
/// illegal pits), random ones up to 16, with and without a database, in all three rule sets.
#[test]
fn hand_written_json_is_the_serialized_json() {
    for rules in Rules::ALL {
        let database = Database::open(db(rules), None).unwrap();
        let mut boards = Vec::new();
        for n in 0..=7 {
            let level = awari_db::Level::new(n);
            boards.extend((0..level.size()).map(|i| level.unrank(i)));
        }
        // Boards in no level: every opponent pit holds a seed.
        boards.push(Board::parse("0 0 0 0 0 0 1 1 1 1 1 1").unwrap());
        boards.push(Board::parse("3 0 2 1 0 1 1 1 1 1 1 1").unwrap());
        boards.push(Board::parse("1 0 2 0 0 3 1 2 1 1 2 1").unwrap());
        boards.extend(random_boards(3, 5_000, top(rules)));
        for b in &boards {
            for with_db in [Some(&database), None] {
                if with_db.is_none() && b.seeds() > 7 {
                    continue;
                }
                let r = report(b, rules, with_db).unwrap();
                let mut text = Vec::new();
                r.write_json(&mut text);
                assert_eq!(
                    String::from_utf8(text).unwrap(),
                    r.to_json().to_string(),
                    "{b} {rules}"
                );
            }
        }
    }
}

/// `show` picks up `./awari-db` by itself; when that database cannot answer (another rule set,
/// a level it lacks) the board is still shown, without values, with a note on stderr. An
/// explicit `--db` keeps its errors.
#[test]
fn implicit_database_never_turns_show_into_an_error() {
    let cwd = temp("implicit");
    std::fs::create_dir_all(&cwd).unwrap();
    std::os::unix::fs::symlink(db(Rules::Awari), cwd.join("awari-db")).unwrap();
    let show = |args: &[&str]| {
        Command::new(BIN)
            .current_dir(&cwd)
            .arg("show")
            .args(args)
            .output()
            .unwrap()
    };
    let vu = ["1", "1", "1", "1", "1", "2", "4", "2", "3", "0", "0", "0"];
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();

    let used = show(&vu);
    assert!(used.status.success());
    assert!(
        text(&used.stdout).contains("value: +0 (draw)"),
        "{}",
        text(&used.stdout)
    );

    let mut abapa = vec!["--rules", "abapa"];
    abapa.extend(vu);
    let other_rules = show(&abapa);
    assert!(
        other_rules.status.success(),
        "{}",
        text(&other_rules.stderr)
    );
    assert!(text(&other_rules.stdout).contains("rules: abapa"));
    assert!(text(&other_rules.stdout).contains("no database"));
    assert!(text(&other_rules.stderr).starts_with("note: ./awari-db not used"));
    assert_eq!(text(&other_rules.stderr).lines().count(), 1);

    let twenty = ["2", "2", "2", "2", "2", "2", "2", "2", "0", "2", "2", "0"];
    let missing = show(&twenty);
    assert!(missing.status.success(), "{}", text(&missing.stderr));
    assert!(text(&missing.stdout).contains("no database"));
    assert!(
        text(&missing.stderr).contains("level 20"),
        "{}",
        text(&missing.stderr)
    );

    let mut explicit = vec!["--db", "awari-db", "--rules", "abapa"];
    explicit.extend(vu);
    let refused = show(&explicit);
    assert_eq!(refused.status.code(), Some(1));
    let mut explicit20 = vec!["--db", "awari-db"];
    explicit20.extend(twenty);
    assert_eq!(show(&explicit20).status.code(), Some(1));
    std::fs::remove_dir_all(&cwd).unwrap();
}

/// Run `awari-probe args` with its standard output closed before it writes (a reader that
/// stopped, as `| head` does): it must exit 0 with nothing on stderr.
fn closed_stdout(args: &[&str], stdin: Option<&str>) {
    let mut child = spawn_probe(args, stdin.is_some());
    drop(child.stdout.take()); // the read end closed: every write fails with a broken pipe
    if let Some(text) = stdin {
        use std::io::Write;
        let mut input = child.stdin.take().unwrap();
        let text = text.as_bytes().to_vec();
        std::thread::spawn(move || {
            let _ = input.write_all(&text);
        });
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
    assert!(err.is_empty(), "{args:?}: {err}");
}

#[test]
fn a_closed_pipe_is_a_quiet_exit() {
    let d = path_str(db(Rules::Awari));
    let board = ["2", "2", "0", "0", "0", "0", "0", "2", "3", "0", "2", "1"];
    for cmd in ["show", "line"] {
        for json in [false, true] {
            let mut args = vec![cmd, "--db", d];
            if json {
                args.push("--json");
            }
            args.extend(board);
            closed_stdout(&args, None);
        }
    }
    let many: String = (0..20_000).map(|_| "2 2 0 0 0 0 0 2 3 0 2 1\n").collect();
    for flag in [None, Some("--json"), Some("--depth")] {
        let mut args = vec!["batch", "--db", d];
        args.extend(flag);
        closed_stdout(&args, Some(&many));
    }
    closed_stdout(&["--help"], None);
}

/// Under cross-wari the seeds left at the end go to no one: `line` says how many, its result
/// does not count them, and `show --captured` gives the final difference, not a split.
#[test]
fn cross_wari_leaves_the_last_seeds_to_no_one() {
    let dir = path_str(db(Rules::CrossWari));
    // Pit 0 sows clockwise into pit 11 and captures 2; the opponent's one seed then goes
    // clockwise into our pit 11, and we cannot feed: the game ends with 1 seed on the board.
    let board = ["1", "0", "0", "0", "0", "0", "1", "0", "0", "0", "0", "1"];
    let mut args = vec!["line", "--db", dir, "--json"];
    args.extend(board);
    let j = json(&probe(&args, None));
    assert_eq!(j["value"], 2);
    assert_eq!(j["result"], serde_json::json!([2, 0]));
    assert_eq!(j["end"], "terminal");
    let mut args = vec!["line", "--db", dir];
    args.extend(board);
    let text = String::from_utf8(probe(&args, None).stdout).unwrap();
    assert!(
        text.contains("(game over, 1 to no one), as predicted"),
        "{text}"
    );
    let mut args = vec!["show", "--db", dir, "--json", "--captured", "20,25"];
    args.extend(board);
    let j = json(&probe(&args, None));
    assert_eq!(j["final_difference"], 20 - 25 + 2);
    assert!(j.get("final").is_none(), "{j}");
    let mut args = vec!["show", "--db", dir, "--captured", "20,25"];
    args.extend(board);
    let text = String::from_utf8(probe(&args, None).stdout).unwrap();
    assert!(text.contains("final difference -3"), "{text}");
}

/// docs/design.md's command contracts against the probe's `--help`, both ways.
#[test]
fn the_command_contracts_in_design_md_are_the_probe_s_options() {
    common::contracts::check("awari-probe", &["--db"], |args| {
        let o = probe(args, None);
        assert!(o.status.success(), "{o:?}");
        String::from_utf8(o.stdout).unwrap()
    });
}

/// The fenced blocks of docs/cli.md, in order: (language, text).
fn cli_md_blocks() -> Vec<(String, String)> {
    let doc = common::contracts::repo_file("docs/cli.md");
    let mut blocks = Vec::new();
    let mut parts = doc.split("```").skip(1).step_by(2);
    for part in &mut parts {
        let (lang, text) = part.split_once('\n').unwrap();
        blocks.push((lang.to_string(), text.to_string()));
    }
    blocks
}

/// docs/cli.md shows `show`, `line` and `batch` as they are: each `awari-probe` command of its
/// examples, run on the test database (whose levels to 12 are the docs' database), prints the
/// document shown after it, and `batch`'s plain and `--depth` answers are its comments'.
#[test]
fn the_documents_in_cli_md_are_real_output() {
    let dir = path_str(db(Rules::Awari));
    let blocks = cli_md_blocks();
    let run = |command: &str, stdin: Option<&str>| {
        let args: Vec<&str> = command.split_whitespace().skip(1).collect();
        let args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "awari-db" { dir } else { *a })
            .collect();
        let out = probe(&args, stdin);
        assert!(out.status.success(), "{command}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let mut checked = 0;
    for (k, (lang, text)) in blocks.iter().enumerate() {
        if lang != "sh" {
            continue;
        }
        let shown = blocks.get(k + 1).filter(|(l, _)| l == "json").map(|b| &b.1);
        for line in text.lines() {
            let command = line.split(" #").next().unwrap().trim_end();
            let command = command.split(" < ").next().unwrap();
            if !command.starts_with("awari-probe show") && !command.starts_with("awari-probe line")
            {
                continue;
            }
            let shown = shown.unwrap_or_else(|| panic!("no document after {line}"));
            let want: serde_json::Value = serde_json::from_str(shown).unwrap();
            let got: serde_json::Value = serde_json::from_str(&run(command, None)).unwrap();
            assert_eq!(got, want, "docs/cli.md does not show `{command}` as it is");
            checked += 1;
        }
        // batch: the boards the block writes, each form's answers.
        if let Some(printf) = text.lines().find_map(|l| l.strip_prefix("printf '")) {
            let boards = printf.split('\'').next().unwrap().replace("\\n", "\n");
            for line in text.lines().filter(|l| l.starts_with("awari-probe batch")) {
                let (command, comment) = line.split_once(" < ").unwrap();
                let got = run(command, Some(&boards));
                let comment = comment.split_once('#').map(|c| c.1.trim());
                let want: Vec<String> = match comment {
                    Some(c) => c.split(", then ").map(str::to_string).collect(),
                    None => {
                        let shown = blocks[k + 1].1.lines().map(str::to_string).collect();
                        assert_eq!(blocks[k + 1].0, "json", "no document after {line}");
                        shown
                    }
                };
                let got: Vec<String> = got.lines().map(str::to_string).collect();
                if comment.is_some() {
                    assert_eq!(got, want, "docs/cli.md does not show `{command}` as it is");
                } else {
                    let parse = |v: &[String]| -> Vec<serde_json::Value> {
                        v.iter().map(|l| serde_json::from_str(l).unwrap()).collect()
                    };
                    assert_eq!(parse(&got), parse(&want), "`{command}` in docs/cli.md");
                }
                checked += 1;
            }
        }
    }
    assert_eq!(
        checked, 5,
        "the examples of show, line and batch (three forms)"
    );
}

/// The README's example of `show` is real output: every line it shows (its `…` stands for
/// lines left out) is a line the command prints, in the same order.
#[test]
fn the_readme_s_show_example_is_real_output() {
    let readme = common::contracts::repo_file("README.md");
    let block = readme
        .split("```console\n$ awari-probe show ")
        .nth(1)
        .expect("the README shows awari-probe show");
    let (board, rest) = block.split_once('\n').unwrap();
    let shown = rest.split("```").next().unwrap();
    let mut args = vec!["show", "--db", path_str(db(Rules::Awari))];
    args.extend(board.split_whitespace());
    let out = probe(&args, None);
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8(out.stdout).unwrap();
    let mut lines = printed.lines();
    for want in shown.lines().filter(|l| l.trim() != "…") {
        assert!(
            lines.any(|l| l == want),
            "README.md shows a line `awari-probe show {board}` does not print (in this order): {want:?}\n{printed}"
        );
    }
}
