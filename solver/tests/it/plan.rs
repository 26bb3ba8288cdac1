//! `plan --calibration`: a machine's measured rates and traffic replace the defaults, the
//! options still win over the file, and a missing or malformed file is a one-line error.

use std::path::PathBuf;
use std::process::Output;

use awari_db::level_size;
use awari_solver::exits::lower_positions;
use awari_solver::plan::{duration, two_bit_pass_scale, Calibration, DEFAULT_RATE};
use awari_solver::sys::human;
use awari_solver::twobit;

use crate::common::{temp, BIN};

/// `plan` of levels 0..`max` on 1 thread with `args` besides: no database, disk to spare, and
/// the I/O made instant unless `args` give a bandwidth.
fn plan(max: u32, args: &[&str]) -> Output {
    let mut all = vec![
        "plan".to_string(),
        "--max-stones".into(),
        max.to_string(),
        "--threads".into(),
        "1".into(),
        "--disk".into(),
        "1000T".into(),
        "--db".into(),
        "/nonexistent/awari-plan-test".into(),
    ];
    if !args.contains(&"--disk-bandwidth") {
        all.extend(["--disk-bandwidth".into(), "1e12".into()]);
    }
    all.extend(args.iter().map(|a| a.to_string()));
    std::process::Command::new(BIN).args(&all).output().unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Level `n`'s row of a plan: its columns (sizes and durations are two words each).
fn row(plan: &str, n: u32) -> Vec<String> {
    let line = plan
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&n.to_string()))
        .unwrap_or_else(|| panic!("no level {n} in {plan}"));
    line.split_whitespace().map(str::to_string).collect()
}

/// The estimated time column of level `n`.
fn time(plan: &str, n: u32) -> String {
    row(plan, n)[10..12].join(" ")
}

/// The I/O column of level `n`.
fn io(plan: &str, n: u32) -> String {
    row(plan, n)[8..10].join(" ")
}

/// A calibration file with this text, in a directory of its own.
fn file(name: &str, text: &str) -> (PathBuf, String) {
    let dir = temp(name);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("calibration.json");
    std::fs::write(&path, text).unwrap();
    let arg = path.to_str().unwrap().to_string();
    (dir, arg)
}

#[test]
fn a_calibration_sets_the_rates_and_the_options_still_win() {
    let n = 28;
    let p = level_size(n) as f64;
    let defaults = stdout(&plan(n, &["--memory", "1T"]));
    assert_eq!(time(&defaults, n), duration(p / DEFAULT_RATE), "{defaults}");
    assert!(
        defaults.contains("from defaults (16-core measurements)"),
        "{defaults}"
    );
    let (dir, cal) = file(
        "plan-calibration",
        r#"{"machine": "crafted", "threads": 2, "level": 22,
            "rate_per_thread": {"memory": 1e6, "two_bit": 0.25e6, "verify": 0.5e6},
            "io_per_position": {"two_bit": 80.0}, "exit_passes": {"two_bit": 5}}"#,
    );
    // In memory at the file's 1 M positions/s: level 28 in 1482.5 s.
    let calibrated = stdout(&plan(n, &["--memory", "1T", "--calibration", &cal]));
    assert_eq!(time(&calibrated, n), duration(p / 1e6), "{calibrated}");
    assert_eq!(time(&calibrated, n), "24.7 min");
    let assumed = calibrated
        .lines()
        .find(|l| l.starts_with("assumed:"))
        .unwrap();
    assert!(
        assumed.contains(&format!("from calibration {cal}")),
        "{assumed}"
    );
    assert!(
        assumed.contains("in memory 1.00M, low-memory 0.88M, two-bit 0.25M"),
        "{assumed}"
    );
    // The option wins over the file.
    let given = stdout(&plan(
        n,
        &[
            "--memory",
            "1T",
            "--calibration",
            &cal,
            "--rate-per-thread",
            "2e6",
        ],
    ));
    assert_eq!(time(&given, n), duration(p / 2e6), "{given}");
    assert!(
        given.contains("with --rate-per-thread, --disk-bandwidth as given"),
        "{given}"
    );
    // Two-bit: the file's rate and its traffic, scaled from its level 22 to level 28.
    let two_bit = stdout(&plan(
        n,
        &["--memory", "1T", "--calibration", &cal, "--mode", "two-bit"],
    ));
    // The file's rate was measured with 5 exit passes; level 28 makes 1 here.
    let passes = level_size(n).div_ceil(twobit::exit_bucket(
        n,
        1,
        Some(1 << 40),
        twobit::StateBits::Two,
    ));
    assert_eq!(passes, 1);
    assert_eq!(
        time(&two_bit, n),
        duration(p / 0.25e6 * two_bit_pass_scale(1, 5)),
        "{two_bit}"
    );
    assert!(
        two_bit.contains("two-bit 0.25M (with 5 exit passes;"),
        "{two_bit}"
    );
    let scale = Calibration::parse(&std::fs::read_to_string(&cal).unwrap())
        .unwrap()
        .two_bit_io
        .unwrap()
        .scale(true)
        .unwrap();
    let measured = 80.0 * level_size(22) as f64 - (5 * lower_positions(22)) as f64;
    assert!(
        (scale - measured / twobit::work_io(22) as f64).abs() < 1e-12,
        "{scale}"
    );
    let want = lower_positions(n) * passes + (twobit::work_io(n) as f64 * scale) as u64;
    assert_eq!(io(&two_bit, n), human(want), "{two_bit}");
    let unscaled = stdout(&plan(n, &["--memory", "1T", "--mode", "two-bit"]));
    assert_ne!(io(&unscaled, n), io(&two_bit, n));
    // The bandwidth: the file has none, so the default; the option sets it.
    let slow = stdout(&plan(
        n,
        &[
            "--memory",
            "1T",
            "--calibration",
            &cal,
            "--disk-bandwidth",
            "100",
        ],
    ));
    assert!(slow.contains("sequential I/O 100 MB/s"), "{slow}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_bad_calibration_file_is_a_one_line_error() {
    let (dir, bad) = file(
        "plan-bad-calibration",
        r#"{"rate_per_thread": {"memory": "fast"}}"#,
    );
    let missing = dir.join("none.json");
    for (path, what) in [
        (
            bad.as_str(),
            "rate_per_thread.memory: expected a positive number",
        ),
        (missing.to_str().unwrap(), "No such file"),
        ("/", "not a regular file (it is a directory)"),
    ] {
        let o = plan(20, &["--calibration", path]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(o.stdout.is_empty());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("awari-solver: error: calibration file {path}: ")),
            "{err}"
        );
        assert!(err.contains(what), "{err}");
    }
    let (dir2, not_json) = file("plan-not-json", "rate=3\n");
    let o = plan(20, &["--calibration", &not_json]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        (o.status.code(), err.lines().count()),
        (Some(1), 1),
        "{err}"
    );
    assert!(err.contains("not JSON"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_dir_all(dir2);
}

/// Without --memory, `plan` (as `build`, `verify` and `depth`) takes the memory available, and
/// that is the memory cgroup's limit where the process runs in one that leaves less than the
/// machine has free (a container): run in a cgroup of 600 MiB, it plans with at most that.
/// Needs root and a cgroup memory controller (v1 or v2); elsewhere it says so and checks
/// nothing.
#[test]
fn the_memory_available_is_the_cgroups_where_it_is_less() {
    let v2 = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers");
    let v2 = std::fs::read_to_string(v2).is_ok_and(|c| c.split_whitespace().any(|x| x == "memory"));
    let base = if v2 {
        "/sys/fs/cgroup"
    } else {
        "/sys/fs/cgroup/memory"
    };
    let group = PathBuf::from(base).join(format!("awari-test-{}", std::process::id()));
    let limit_file = if v2 {
        "memory.max"
    } else {
        "memory.limit_in_bytes"
    };
    if std::fs::create_dir(&group).is_err()
        || std::fs::write(group.join(limit_file), (600u64 << 20).to_string()).is_err()
    {
        eprintln!("skipped: no memory cgroup can be made here (needs root)");
        let _ = std::fs::remove_dir(&group);
        return;
    }
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec {BIN} plan --max-stones 20 --threads 1 --disk 1T --db /nonexistent/awari-plan-test",
        group.display()
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir(&group);
    let text = stdout(&out);
    let limit = text
        .split("memory limit ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .expect("the plan's header names its memory limit");
    let bytes = awari_solver::sys::parse_size(&limit.replace(' ', "").replace("iB", "")).unwrap();
    assert!(
        bytes <= 600 << 20 && bytes > 400 << 20,
        "memory limit {limit} in a cgroup of 600 MiB"
    );
}

/// `awari-solver args`, which must finish within 30 s (killed past them: the test fails).
fn solver_within(args: &[&str]) -> Output {
    let mut child = std::process::Command::new(BIN)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(30) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{args:?}: still running after 30 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// It failed with `code` and one line on stderr holding `needle`.
fn refused(out: &Output, code: i32, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(err.contains(needle), "'{needle}' not in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A calibration "file" that never ends, or that is a FIFO no one writes, is refused at once;
/// one larger than 1 MiB after reading 1 MiB of it.
#[test]
fn a_calibration_that_is_not_a_small_file_is_refused_at_once() {
    let plan_with = |cal: &str| solver_within(&["plan", "--max-stones", "4", "--calibration", cal]);
    refused(
        &plan_with("/dev/zero"),
        1,
        "calibration file /dev/zero: not a regular file (it is a character device)",
    );
    let dir = temp("calibration-hostile");
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo.json");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    refused(&plan_with(fifo.to_str().unwrap()), 1, "(it is a FIFO)");
    let big = dir.join("big.json");
    std::fs::write(&big, vec![b' '; (1 << 20) + 1]).unwrap();
    refused(
        &plan_with(big.to_str().unwrap()),
        1,
        "larger than 1048576 bytes",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--threads` past 1024 (and 16 per core) and sizes of 0 or past 1 PiB are usage errors in
/// every command that takes them; `--threads 0` is one thread per core, as the help says.
#[test]
fn absurd_threads_and_sizes_are_refused() {
    for command in [
        &["build", "--max-stones", "2", "--db", "/nonexistent/awari-x"][..],
        &["verify", "--db", "/nonexistent/awari-x"],
        &["depth", "--db", "/nonexistent/awari-x"],
        &["compress", "--db", "/nonexistent/awari-x", "--estimate"],
        &["compare", "/nonexistent/a", "/nonexistent/b"],
        &["plan", "--max-stones", "4"],
    ] {
        for threads in ["100000", "18446744073709551616", "many"] {
            let mut args = command.to_vec();
            args.extend(["--threads", threads]);
            refused(
                &solver_within(&args),
                2,
                "expected a number of threads from 1 to",
            );
        }
    }
    for command in [
        &["build", "--max-stones", "2", "--db", "/nonexistent/awari-x"][..],
        &["verify", "--db", "/nonexistent/awari-x"],
        &["depth", "--db", "/nonexistent/awari-x"],
        &["plan", "--max-stones", "4"],
    ] {
        for (size, why) in [
            ("0", "at least 1 byte"),
            ("0.5", "at least 1 byte"),
            ("2000T", "more than 1 PiB"),
            ("1e30", "more than 1 PiB"),
            ("infT", "'infT' is not a size"),
            ("NaN", "'NaN'"),
            ("lots", "unknown size unit"),
            ("1.2.3G", "not a size"),
        ] {
            let mut args = command.to_vec();
            args.extend(["--memory", size]);
            refused(&solver_within(&args), 2, why);
        }
    }
    let cores = std::thread::available_parallelism().unwrap().get();
    let out = solver_within(&[
        "plan",
        "--max-stones",
        "4",
        "--threads",
        "0",
        "--disk",
        "1T",
    ]);
    let text = stdout(&out);
    assert!(
        text.contains(&format!("levels 0..4, {cores} threads")),
        "{text}"
    );
    let dir = temp("threads-0");
    let out = solver_within(&[
        "build",
        "--max-stones",
        "2",
        "--threads",
        "0",
        "--db",
        dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(&format!("with {cores} threads")), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
