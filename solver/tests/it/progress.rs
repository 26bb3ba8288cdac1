//! Progress in a log: with stderr not a terminal, `--log-every` prints plain progress lines.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use crate::common::{temp, BIN};

fn build(dir: &PathBuf, stones: &str, log_every: &str) -> Output {
    Command::new(BIN)
        .args([
            "build",
            "--max-stones",
            stones,
            "--log-every",
            log_every,
            "--db",
        ])
        .arg(dir)
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .output()
        .unwrap()
}

/// The progress lines of a run's stderr.
fn progress_lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains(" UTC level "))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_logged_build_prints_progress_lines_and_none_when_told_not_to() {
    let dir = temp("often");
    let out = build(&dir, "16", "0.01");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = progress_lines(&out);
    assert!(
        !lines.is_empty(),
        "no progress line in {:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in &lines {
        // 2026-12-01 23:10:05 UTC level 16 settle: 35.9% of 12.69M after 0:00:01, 5.11M/s, eta 0:00:02
        let (date, rest) = line.split_at(24);
        assert!(
            date.ends_with(" UTC ") && date.as_bytes()[4] == b'-',
            "{line}"
        );
        assert!(
            rest.starts_with("level ")
                && rest.contains("% of ")
                && rest.contains(" after ")
                && rest.contains("/s, eta "),
            "{line}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);

    let dir = temp("never");
    let out = build(&dir, "14", "0");
    assert!(out.status.success());
    assert_eq!(progress_lines(&out), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_interval_is_a_one_line_error() {
    let out = Command::new(BIN)
        .args(["plan", "--log-every", "soon"])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("expected a number of seconds"), "{err}");
}
