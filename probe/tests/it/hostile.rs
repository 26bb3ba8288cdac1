//! Input a hostile or careless user gives the probe: damaged tables, paths that are not files,
//! endless stdin. Each is a one-line error with the documented exit code, at once: never a
//! panic, a hang or memory without limit.

use crate::common::{db, temp};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use awari_db::{level_path, Rules};

const BIN: &str = env!("CARGO_BIN_EXE_awari-probe");

/// The published VU example, a draw: its entry in level 16, and its move values −1 −1 −2 −2
/// −2 0.
const VU: [&str; 12] = ["1", "1", "1", "1", "1", "2", "4", "2", "3", "0", "0", "0"];
const VU_INDEX: u64 = 588953;

/// Wait for `child` at most `secs` seconds (killed past them: the test fails).
fn finish_within(mut child: Child, secs: u64) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(secs) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("still running after {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// `awari-probe args` with `stdin` (bytes, or a file such as `/dev/zero`), within 60 s.
fn probe(args: &[&str], stdin: Stdio) -> Output {
    let child = Command::new(BIN)
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish_within(child, 60)
}

/// `probe` with `input` written to its stdin.
fn probe_with(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let input = input.to_vec();
    std::thread::spawn(move || {
        use std::io::Write;
        let _ = pipe.write_all(&input);
    });
    finish_within(child, 60)
}

/// The run failed with exit code `code` and one line on stderr holding `needle`, no panic.
fn failed(out: &Output, code: i32, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line expected: {err}");
    assert!(err.contains(needle), "'{needle}' not in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A database of the test database's levels 0..=16 (values only) whose level 16 is a copy
/// holding `value` at the VU example's entry; the other levels are links.
fn damaged(name: &str, value: i8) -> PathBuf {
    let dir = temp(name);
    std::fs::create_dir_all(&dir).unwrap();
    let source = db(Rules::Awari);
    for n in (0..16).filter(|&n| awari_db::level_exists(n)) {
        std::os::unix::fs::symlink(level_path(source, n), level_path(&dir, n)).unwrap();
    }
    // Written with checksums that match: a table a faulty writer made, which only the
    // value's range (or `verify`) can catch. A changed byte under the old checksums is
    // caught before: see `a_changed_byte_is_found_by_its_chunk_check`.
    let table = awari_db::Table::open(level_path(source, 16), Default::default()).unwrap();
    let mut data = table.plain().unwrap().to_vec();
    data[VU_INDEX as usize] = value as u8;
    awari_db::write_table(level_path(&dir, 16), *table.header(), &data).unwrap();
    dir
}

/// A byte of a plain table changed under its checksums: `show`, `batch` and `line` name the
/// file and the chunk that fails, and answer nothing from it.
#[test]
fn a_changed_byte_is_found_by_its_chunk_check() {
    let dir = temp("changed-byte");
    std::fs::create_dir_all(&dir).unwrap();
    let source = db(Rules::Awari);
    for n in (0..16).filter(|&n| awari_db::level_exists(n)) {
        std::os::unix::fs::symlink(level_path(source, n), level_path(&dir, n)).unwrap();
    }
    let mut bytes = std::fs::read(level_path(source, 16)).unwrap();
    bytes[64 + VU_INDEX as usize] ^= 1;
    std::fs::write(level_path(&dir, 16), bytes).unwrap();
    let d = arg(&dir);
    for command in ["show", "line"] {
        let mut args = vec![command, "--db", d];
        args.extend(VU);
        failed(&probe(&args, Stdio::null()), 1, "level-16.values");
        failed(&probe(&args, Stdio::null()), 1, "does not match its digest");
    }
    let line = format!("{}\n", VU.join(" "));
    failed(
        &probe_with(&["batch", "--db", d], line.as_bytes()),
        1,
        "does not match its digest",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A stored value outside −16..16 in level 16: `show`, `batch` (plain and JSON) and `line`
/// each say which file and entry, and that the table is damaged.
#[test]
fn a_value_outside_its_level_is_an_error_everywhere() {
    let dir = damaged("value-127", 127);
    let d = arg(&dir);
    let want = format!(
        "level-16.values: entry {VU_INDEX} holds 127, outside -16..16: the table is damaged (run awari-solver verify)"
    );
    for command in ["show", "line"] {
        let mut args = vec![command, "--db", d];
        args.extend(VU);
        failed(&probe(&args, Stdio::null()), 1, &want);
    }
    let line = format!("{}\n", VU.join(" "));
    for flags in [&[][..], &["--json"], &["--depth"]] {
        let mut args = vec!["batch", "--db", d];
        args.extend(flags);
        failed(&probe_with(&args, line.as_bytes()), 1, &want);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A stored value in range that no move achieves (+16 for a draw whose moves give −1..0):
/// `line` says the tables are inconsistent there, not a panic; `show` still shows it.
#[test]
fn a_value_no_move_achieves_is_an_error_in_line() {
    let dir = damaged("value-unachieved", 16);
    let d = arg(&dir);
    let mut args = vec!["line", "--db", d];
    args.extend(VU);
    let out = probe(&args, Stdio::null());
    failed(&out, 1, "inconsistent at board 1 1 1 1 1 2 4 2 3 0 0 0");
    failed(&out, 1, "no move achieves it; run awari-solver verify");
    failed(&out, 1, &format!("entry {VU_INDEX}"));
    let mut args = vec!["show", "--db", d];
    args.extend(VU);
    let out = probe(&args, Stdio::null());
    assert!(out.status.success());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `batch < /dev/zero`: one endless line, refused once it passes 4096 bytes, at once, exit 2.
/// A long line after good ones is refused after they are answered, by its number.
#[test]
fn an_endless_line_is_refused() {
    let d = arg(db(Rules::Awari));
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let out = probe(&["batch", "--db", d], Stdio::from(zero));
    failed(&out, 2, "stdin line 1: longer than 4096 bytes");
    assert!(out.stdout.is_empty());

    let good = "0 0 0 0 0 0 0 0 0 0 0 1\n";
    let long = " ".repeat(5000);
    // The long line last, with and without its newline, or among others; or 4096 bytes of
    // spaces (blank: no answer) that are not too long.
    for (input, ok) in [
        (format!("{good}{good}{long}"), false),
        (format!("{good}{good}{long}\n{good}"), false),
        (
            format!("{good}{good}{}\n{good}", "1".repeat(3 << 20)),
            false,
        ),
        (format!("{good}{good}{}\n{good}", " ".repeat(4096)), true),
    ] {
        let out = probe_with(&["batch", "--db", d], input.as_bytes());
        let stdout = String::from_utf8_lossy(&out.stdout);
        if ok {
            assert!(out.status.success());
            assert_eq!(stdout, "-1\n-1\n-1\n");
        } else {
            failed(&out, 2, "stdin line 3: longer than 4096 bytes");
            assert_eq!(stdout, "-1\n-1\n");
        }
    }
}

/// A level that is a FIFO, or a dangling symlink; a depth table in a symlink loop: one line,
/// exit 1, at once.
#[test]
fn table_paths_that_are_not_files_are_refused_at_once() {
    let dir = damaged("not-files", 0);
    let d = arg(&dir);
    let twelve = level_path(&dir, 12);
    std::fs::remove_file(&twelve).unwrap();
    let made = Command::new("mkfifo").arg(&twelve).status().unwrap();
    assert!(made.success());
    for command in ["show", "line"] {
        failed(
            &probe(&[command, "--db", d, "start"], Stdio::null()),
            1,
            "level-12.values: not a regular file (it is a FIFO)",
        );
    }
    failed(
        &probe_with(&["batch", "--db", d], b"start\n"),
        1,
        "not a regular file (it is a FIFO)",
    );
    std::fs::remove_file(&twelve).unwrap();
    std::os::unix::fs::symlink(dir.join("nowhere"), &twelve).unwrap();
    failed(
        &probe(&["show", "--db", d, "start"], Stdio::null()),
        1,
        "level-12.values: dangling symlink",
    );
    std::fs::remove_file(&twelve).unwrap();
    std::os::unix::fs::symlink(level_path(db(Rules::Awari), 12), &twelve).unwrap();
    let depth = awari_db::depth_path(&dir, 12);
    std::os::unix::fs::symlink(&depth, &depth).unwrap();
    failed(
        &probe(&["show", "--db", d, "start"], Stdio::null()),
        1,
        "level-12.depth",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Captured counts whose sum overflows 32 bits are refused, not wrapped around to a sum that
/// passes.
#[test]
fn captured_counts_that_overflow_are_refused() {
    for captured in ["4294967295,1", "4294967295,4294967295", "4294967248,48"] {
        let out = probe(&["show", "--captured", captured, "start"], Stdio::null());
        // clap's usage error: the message, then a hint to --help.
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("seeds captured: the game has 48"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Depth tables of 2 bytes an entry holding 65535 everywhere: a board of a full opponent row,
/// valued by one ply, whose depth would be one more than its quiet child's is an error naming
/// the board, not an overflow.
#[test]
fn a_depth_one_past_the_largest_is_an_error() {
    use awari_db::{depth_path, write_table, Board, Header};
    let dir = temp("depth-overflow");
    std::fs::create_dir_all(&dir).unwrap();
    for n in 0..=12 {
        std::os::unix::fs::symlink(level_path(db(Rules::Awari), n), level_path(&dir, n)).unwrap();
        let deep = vec![0xff; 2 * awari_db::level_size(n) as usize];
        write_table(
            depth_path(&dir, n),
            Header::depth(Rules::Awari, n, 2),
            &deep,
        )
        .unwrap();
    }
    let database = awari_probe::Database::open(&dir, None).unwrap();
    let mut refused = 0;
    // Every mover row of up to 6 seeds against a full opponent row of ones.
    for x in 0..7u32.pow(6) {
        let mut pits = [1u8; 12];
        let mut r = x;
        for p in pits.iter_mut().take(6) {
            *p = (r % 7) as u8;
            r /= 7;
        }
        if pits[..6].iter().map(|&p| u32::from(p)).sum::<u32>() > 6 {
            continue;
        }
        let board = Board::new(pits).unwrap();
        match database.depth(&board) {
            Ok(d) => assert_eq!(d, Some(0), "{board}"),
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains("the largest a table can hold"), "{e}");
                refused += 1;
            }
        }
    }
    assert!(refused > 0);
    std::fs::remove_dir_all(&dir).unwrap();
}
