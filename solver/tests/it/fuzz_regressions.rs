//! Inputs the fuzz targets (`fuzz/`, `scripts/fuzz.sh`; docs/testing.md, "Fuzzing") found to
//! crash a reader of the solver, each kept as a test.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use awari_db::{level_path, level_size, Levels, Rules};
use awari_solver::build::{build_level, Mode, Plan};
use awari_solver::twobit::{checkpoint_stage, work_dir, Stage};
use awari_solver::{Progress, Silent};

use crate::common::{build_mode, copy_levels, temp};

/// Progress that panics at its `at`-th phase or message: a build stopped part way.
struct StopAt(AtomicUsize, usize);

impl Progress for StopAt {
    fn phase(&self, _: &str, _: u64) {
        self.message("");
    }
    fn advance(&self, _: u64) {}
    fn message(&self, _: &str) {
        if self.0.fetch_add(1, SeqCst) + 1 == self.1 {
            panic!("stopped by the test");
        }
    }
}

/// A record of a record file (`solver/src/seed_records.rs`) with its check filled in: what a
/// writer would have written, or damage that happens to pass the 32-bit check.
fn record(chunk: u32, body: &[u8]) -> Vec<u8> {
    let seed = u64::from(chunk) << 32 | body.len() as u64;
    let check = xxhash_rust::xxh3::xxh3_64_with_seed(body, seed) as u32;
    let mut out = chunk.to_le_bytes().to_vec();
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&check.to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// Found by `fuzz/fuzz_targets/record_file.rs`, fixed: a record of an exit list
/// whose check passes but which holds an offset past the end of the level (here 20000 in
/// level 6's only chunk, of 12,376 positions) makes a resumed two-bit build index its state
/// array out of bounds (`make_losable`, `solver/src/level/twobit/codes.rs`, from
/// `stream.rs`; `restore_states` and the part files' `log::decode` alike). The record reader
/// bounded offsets by the chunk (2^20), not by the level. Now a record with an offset past
/// the positions of its chunk in the level is `TableError::Damaged`, like a failed check: a
/// clean error, then the true table (or the true table at once).
#[test]
fn an_exit_list_offset_past_the_level_is_refused_not_a_panic() {
    let n = 6;
    let full = temp("fuzz-offset-full");
    build_mode(&full, 2, Rules::Awari, n, Mode::InMemory);
    let want = std::fs::read(level_path(&full, n)).unwrap();
    let dir = temp("fuzz-offset");
    // Stopped as soon as its exits are done and checkpointed: step 6 reads exit-none next.
    let mut stopped = false;
    for at in 1..=8 {
        copy_levels(&full, &dir, 0..n);
        let _ = std::fs::remove_dir_all(work_dir(&dir, n));
        let levels = Levels::open(&dir, Some(Rules::Awari)).unwrap();
        let stop = StopAt(AtomicUsize::new(0), at);
        let run = catch_unwind(AssertUnwindSafe(|| {
            build_level(
                &dir,
                n,
                Rules::Awari,
                &levels,
                Plan::TwoBit { bucket: 1 },
                &stop,
            )
        }));
        let stage = checkpoint_stage(&dir, n, Rules::Awari).unwrap();
        if run.is_err() && stage == Some(Stage::Settle { next: n }) {
            stopped = true;
            break;
        }
    }
    assert!(stopped, "no stop left level {n} at its first step");
    // exit-none, the same length (so that its checkpoint still lists it whole), as one record
    // whose first offset is 20000: a gap of 20001, doubled, as a varint; then gaps of 1.
    let path = work_dir(&dir, n).join("exit-none");
    let len = std::fs::metadata(&path).unwrap().len() as usize;
    let mut body = Vec::new();
    let mut x = 20_001u64 << 1;
    while x >= 0x80 {
        body.push(x as u8 | 0x80);
        x >>= 7;
    }
    body.push(x as u8);
    assert!(len >= 12 + body.len(), "exit-none holds {len} bytes");
    body.resize(len - 12, 2);
    assert!(level_size(n) < 20_000);
    std::fs::write(&path, record(0, &body)).unwrap();
    let levels = Levels::open(&dir, Some(Rules::Awari)).unwrap();
    match build_level(
        &dir,
        n,
        Rules::Awari,
        &levels,
        Plan::TwoBit { bucket: 1 },
        &Silent,
    ) {
        Ok(_) => assert!(std::fs::read(level_path(&dir, n)).unwrap() == want),
        Err(e) => {
            let e = e.to_string();
            assert!(e.contains("exit-none"), "{e}");
            build_level(
                &dir,
                n,
                Rules::Awari,
                &levels,
                Plan::TwoBit { bucket: 1 },
                &Silent,
            )
            .unwrap();
            assert!(std::fs::read(level_path(&dir, n)).unwrap() == want);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&full).unwrap();
}

/// Found by `fuzz/fuzz_targets/checkpoint.rs`, fixed: a two-bit checkpoint (its
/// checksum whole) whose exit bucket is far beyond the level, here 2^32 − 1 chunks of 2^20
/// positions, is believed (`read_checkpoint` in `solver/src/level/twobit/checkpoint.rs`
/// checks the level, the stage and the files, not the bucket), and the settling log then
/// reserves as many bytes as the bucket has positions (`SettledLog::new`, `log.rs`, through
/// `budget::log_capacity`): 4 PiB, an allocation failure that aborted the process. Now a
/// bucket that is not a whole number of bucket units (4 chunks) or exceeds the level rounded
/// up to one makes the checkpoint unusable (the level starts afresh), and the log's capacity
/// is bounded by the level. The build runs as a child process (an abort would end the test
/// binary): it exits 0 with the true table.
#[test]
fn a_two_bit_bucket_beyond_the_level_is_refused_not_an_abort() {
    let n = 6;
    let full = temp("fuzz-bucket-full");
    build_mode(&full, 2, Rules::Awari, n, Mode::InMemory);
    let want = std::fs::read(level_path(&full, n)).unwrap();
    let dir = temp("fuzz-bucket");
    let mut stopped = false;
    for at in 1..=8 {
        copy_levels(&full, &dir, 0..n);
        let _ = std::fs::remove_dir_all(work_dir(&dir, n));
        let levels = Levels::open(&dir, Some(Rules::Awari)).unwrap();
        let stop = StopAt(AtomicUsize::new(0), at);
        let run = catch_unwind(AssertUnwindSafe(|| {
            build_level(
                &dir,
                n,
                Rules::Awari,
                &levels,
                Plan::TwoBit { bucket: 1 },
                &stop,
            )
        }));
        let stage = checkpoint_stage(&dir, n, Rules::Awari).unwrap();
        if run.is_err() && stage == Some(Stage::Settle { next: n }) {
            stopped = true;
            break;
        }
    }
    assert!(stopped, "no stop left level {n} at its first step");
    // The checkpoint's frame (solver/src/checkpoint.rs): 16 bytes, the fields, their XXH3-64;
    // the bucket is the u32 at offset 71 of the fields.
    let path = work_dir(&dir, n).join("resume");
    let mut file = std::fs::read(&path).unwrap();
    let end = file.len() - 8;
    file[16 + 71..16 + 75].copy_from_slice(&u32::MAX.to_le_bytes());
    let digest = xxhash_rust::xxh3::xxh3_64(&file[..end]);
    file[end..].copy_from_slice(&digest.to_le_bytes());
    std::fs::write(&path, &file).unwrap();
    assert!(
        checkpoint_stage(&dir, n, Rules::Awari).is_err(),
        "the forged checkpoint is not believed"
    );
    let out = std::process::Command::new(crate::common::BIN)
        .args(["build", "--db", dir.to_str().unwrap(), "--max-stones", "6"])
        .args(["--mode", "two-bit", "--threads", "1", "--log-every", "0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("starting afresh"), "{err}");
    assert!(std::fs::read(level_path(&dir, n)).unwrap() == want);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&full).unwrap();
}

/// Found by `fuzz/fuzz_targets/calibration.rs`, fixed: a calibration file whose measured
/// traffic is absurd (`io_per_position.low_memory` 1.02e13 bytes a position) passed every
/// check of `Calibration::parse` (positive, finite, more than the lower levels' passes), and
/// `plan` then overflowed adding it up (`low_memory_estimate` in `solver/src/cost.rs`, `lower
/// + own as u64` with `own` saturated at `u64::MAX`): a panic where overflow is checked (the
/// test profile's binaries), wrapped figures in release. Absurd exit passes (1e20)
/// overflowed in `IoSample::scale` the same way. Both are refused
/// (`solver/src/cost/calibration.rs`), in one line naming the field.
#[test]
fn an_absurd_calibrated_traffic_or_pass_count_is_refused_not_an_overflow() {
    let dir = temp("fuzz-calibration");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("calibration.json");
    for (field, io, passes) in [
        ("io_per_position.low_memory", "10222222222222.1", "4"),
        ("exit_passes.low_memory", "30.0", "1e20"),
    ] {
        std::fs::write(
            &path,
            format!(
                r#"{{"machine": "fuzz", "threads": 2, "level": 11,
  "rate_per_thread": {{"memory": 4.9e6, "low_memory": 4.2e6, "two_bit": 2.1e6}},
  "io_per_position": {{"low_memory": {io}, "two_bit": 30.0}},
  "exit_passes": {{"low_memory": {passes}, "two_bit": 4}},
  "disk_bandwidth": {{"write": 0.1e9, "read": 1.6e9}}}}"#
            ),
        )
        .unwrap();
        let out = std::process::Command::new(crate::common::BIN)
            .args(["plan", "--calibration", path.to_str().unwrap()])
            .args(["--threads", "2", "--memory", "8G", "--disk", "1T"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{field}: {err}");
        assert!(
            err.contains(field) && err.trim().lines().count() == 1,
            "{err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
