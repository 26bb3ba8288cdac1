//! `awari-solver verify`: passes on good databases with depth tables in every rule set, and
//! fails — naming the level and a board — on a flipped byte, a changed value with a valid
//! checksum, and a changed depth with a valid checksum. A build killed at 20 moments and
//! resumed verifies and matches an uninterrupted build byte for byte.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use awari_db::{
    depth_path, level_exists, level_path, write_table, Content, Expect, Header, Level, Rules, Table,
};

use crate::common::{temp, text, BIN};

fn solver(args: &[&str], dir: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .arg("--db")
        .arg(dir)
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn verify_passes_and_catches_corruption() {
    for rules in Rules::ALL {
        // The corruptions below are made at 12 and 14 seeds of the awari tables; the other
        // rule sets are verified to 11 here (every level to 16 in the slow tier).
        let top = if rules == Rules::Awari { 14 } else { 11 };
        let dir = temp(&format!("ok-{rules}"));
        let o = solver(
            &[
                "build",
                "--max-stones",
                &top.to_string(),
                "--depth",
                "--rules",
                rules.name(),
            ],
            &dir,
        );
        assert!(o.status.success(), "{}", text(&o));
        let o = solver(&["verify"], &dir);
        let t = text(&o);
        assert!(o.status.success(), "{rules}: {t}");
        assert!(
            t.contains(&format!("level {top}: ok")) && t.contains("depths well-founded"),
            "{t}"
        );
        assert!(t.contains("every value is the game value"), "{t}");
        if rules != Rules::Awari {
            std::fs::remove_dir_all(&dir).unwrap();
            continue;
        }

        // 1. A flipped data byte: the checksum fails.
        let bad = temp("flip");
        copy_db(&dir, &bad, top);
        let f = level_path(&bad, 12);
        let mut bytes = std::fs::read(&f).unwrap();
        bytes[64 + 777] ^= 0x04;
        std::fs::write(&f, &bytes).unwrap();
        let o = solver(&["verify", "--stones", "12"], &bad);
        let t = text(&o);
        assert!(!o.status.success());
        assert!(
            t.contains("level 12: FAILED checksum") && t.contains("level-12.values"),
            "{t}"
        );

        // 2. A changed value with its checksum recomputed: recomputation fails at that board.
        copy_db(&dir, &bad, top);
        let level = Level::new(12);
        let table = open_values(&bad, 12);
        let mut data = table.plain().unwrap().to_vec();
        let idx = 123_456u64;
        let board = level.unrank(idx);
        data[idx as usize] = (data[idx as usize] as i8).wrapping_add(2) as u8;
        drop(table);
        write_table(
            level_path(&bad, 12),
            Header::values(Rules::Awari, 12),
            &data,
        )
        .unwrap();
        let o = solver(&["verify", "--stones", "12"], &bad);
        let t = text(&o);
        assert!(!o.status.success());
        assert!(t.contains("level 12: FAILED"), "{t}");
        assert!(
            t.contains(&format!("board {board}:")),
            "board {board} not named: {t}"
        );

        // 3. A depth changed consistently (checksum recomputed): a won position at depth > 0
        //    claimed to convert at once.
        copy_db(&dir, &bad, top);
        let values = open_values(&bad, 14);
        let depth = Table::open(
            depth_path(&bad, 14),
            Expect {
                content: Some(Content::Depth),
                ..Expect::default()
            },
        )
        .unwrap();
        let idx = (0..values.header().entries)
            .find(|&i| values.value(i).unwrap() > 0 && depth.plain().unwrap()[i as usize] >= 3)
            .expect("a won position with depth >= 3");
        let board = Level::new(14).unrank(idx);
        assert_eq!(depth.header().entry_bytes, 1);
        let mut d = depth.plain().unwrap().to_vec();
        d[idx as usize] = 0;
        drop(depth);
        write_table(depth_path(&bad, 14), Header::depth(Rules::Awari, 14, 1), &d).unwrap();
        let o = solver(&["verify", "--stones", "14"], &bad);
        let t = text(&o);
        assert!(!o.status.success());
        assert!(t.contains("level 14: FAILED"), "{t}");
        assert!(
            t.contains(&format!("board {board}:")) && t.contains("depth"),
            "{t}"
        );
        std::fs::remove_dir_all(&bad).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

fn open_values(dir: &Path, n: u32) -> Table {
    Table::open(level_path(dir, n), Expect::default()).unwrap()
}

fn copy_db(from: &Path, to: &Path, max: u32) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for n in (0..=max).filter(|&n| level_exists(n)) {
        std::fs::copy(level_path(from, n), level_path(to, n)).unwrap();
        std::fs::copy(depth_path(from, n), depth_path(to, n)).unwrap();
    }
}

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn twenty_kills_then_resume_verify_and_match() {
    let max = "15";
    let clean = temp("kill-clean");
    let o = solver(&["build", "--max-stones", max, "--depth"], &clean);
    assert!(o.status.success(), "{}", text(&o));
    let killed = temp("kill-killed");
    for trial in 0..20u64 {
        let mut child = Command::new(BIN)
            .args(["build", "--max-stones", max, "--depth", "--db"])
            .arg(&killed)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // 50 ms, 100 ms, … : early kills land in small levels, later ones mid-level.
        std::thread::sleep(Duration::from_millis(50 * (trial + 1)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
    }
    let o = solver(&["build", "--max-stones", max, "--depth"], &killed);
    assert!(o.status.success(), "{}", text(&o));
    let o = solver(&["verify"], &killed);
    assert!(o.status.success(), "{}", text(&o));
    for n in (0..=15).filter(|&n| level_exists(n)) {
        for p in [level_path, depth_path] {
            assert!(
                std::fs::read(p(&clean, n)).unwrap() == std::fs::read(p(&killed, n)).unwrap(),
                "level {n} differs after kills"
            );
        }
    }
    for d in [clean, killed] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// Run `verify` with `args` on `dir` until a run is killed (SIGKILL) after writing its
/// `checkpoint`.
fn kill_after_a_checkpoint(args: &[&str], dir: &Path, checkpoint: &Path) {
    for _ in 0..10 {
        let mut child = Command::new(BIN)
            .args(args)
            .arg("--db")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        while !checkpoint.exists() && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(1));
        }
        child.kill().unwrap(); // SIGKILL, or already ended by itself
        child.wait().unwrap();
        if checkpoint.exists() {
            return;
        }
    }
    panic!("never killed after a checkpoint");
}

/// A table changed between a killed `verify` and its resume fails its checksum, though the
/// change lies in a bucket the killed run checked: the checkpoint holds no digest of the
/// table, the resumed run hashes it again.
#[test]
fn a_table_changed_before_a_resumed_verify_fails_its_checksum() {
    let dir = temp("resume-changed");
    let o = solver(&["build", "--max-stones", "17"], &dir);
    assert!(o.status.success(), "{}", text(&o));
    let args = [
        "verify", "--stones", "17", "17", "--method", "streamed", "--memory", "68M",
    ];
    let checkpoint = dir.join("level-17.vresume");
    kill_after_a_checkpoint(&args, &dir, &checkpoint);
    let path = level_path(&dir, 17);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = awari_db::table::HEADER_LEN + 1000;
    bytes[at] = if bytes[at] == 0 { 1 } else { 0 };
    std::fs::write(&path, &bytes).unwrap();
    let resumed = solver(&args, &dir);
    assert!(
        text(&resumed).contains("resuming the check at bucket"),
        "{}",
        text(&resumed)
    );
    assert!(!resumed.status.success(), "{}", text(&resumed));
    assert!(text(&resumed).contains("checksum"), "{}", text(&resumed));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A streamed `verify` of a level in several buckets, killed once it has checkpointed a bucket,
/// resumes at its next bucket and gives the verdict of a run never killed, the failures found
/// before the kill included (a changed entry in the first bucket, a flipped byte in the last);
/// the checkpoint is gone after. Level 17 in 4 Mi-position buckets (64 MiB of slack besides).
#[test]
fn a_killed_streamed_verify_resumes_at_its_next_bucket() {
    let dir = temp("resume");
    let o = solver(&["build", "--max-stones", "17"], &dir);
    assert!(o.status.success(), "{}", text(&o));
    let path = level_path(&dir, 17);
    let mut bytes = std::fs::read(&path).unwrap();
    let (data, size) = (
        awari_db::table::HEADER_LEN,
        awari_db::level_size(17) as usize,
    );
    for at in [data + 1_000_000, data + size - 1000] {
        bytes[at] = bytes[at].wrapping_add(2);
    }
    std::fs::write(&path, &bytes).unwrap();
    let args = [
        "verify", "--stones", "17", "17", "--method", "streamed", "--memory", "68M",
    ];
    let whole = solver(&args, &dir);
    assert!(!whole.status.success(), "{}", text(&whole));
    let checkpoint = dir.join("level-17.vresume");
    assert!(!checkpoint.exists());
    kill_after_a_checkpoint(&args, &dir, &checkpoint);
    let resumed = solver(&args, &dir);
    assert!(
        text(&resumed).contains("resuming the check at bucket"),
        "{}",
        text(&resumed)
    );
    // The verdicts, less the run's figures (seconds, rates).
    let verdicts = |o: &Output| -> Vec<String> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| l.split(" (streamed").next().unwrap().to_string())
            .collect()
    };
    assert_eq!(verdicts(&resumed), verdicts(&whole));
    assert!(
        verdicts(&whole)
            .iter()
            .any(|l| l.contains("index 1000000 ")),
        "{:?}",
        verdicts(&whole)
    );
    assert_eq!(resumed.status.code(), whole.status.code());
    assert!(!checkpoint.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
