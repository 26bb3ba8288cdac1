//! Level 19 (50 M positions) built by the binary in each resumable mode (two-bit, with depths
//! too, one-bit, low-memory, in memory) and killed with SIGKILL at random moments, at least twelve times
//! and at least three times in its settling steps. After every kill the directory holds only the tables,
//! the level's work directory and at worst a half-written table; the checkpoint there is
//! whole and never further back than after the kill before. The run that finishes says it
//! resumed and writes the in-memory table, byte for byte, and leaves no other file.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use awari_db::{depth_path, level_size, Rules};
use awari_solver::twobit::Stage;
use awari_solver::{lowmem, twobit, CheckpointError};

use super::two_bit::extra_files;
use super::{assert_level_same, copy_levels, reference, temp};
use crate::common::reference::in_memory_depths;

const N: u32 = 19;

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn killed_two_bit_build_resumes_to_the_same_bytes() {
    // 48 MB: exits in buckets of a few chunks, so the exits phase checkpoints too.
    killed_build_resumes(
        "two-bit",
        "48M",
        "level-19.work",
        twobit::checkpoint_stage,
        &[],
    );
}

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn killed_two_bit_build_with_depths_resumes_to_the_same_bytes() {
    // Its steps in waves, what each finds spilled past 64 KiB (spill files left by kills),
    // and its depth table written after the values: the in-memory build's depths.
    killed_build_resumes(
        "two-bit",
        "48M",
        "level-19.work",
        twobit::checkpoint_stage,
        &[("AWARI_WAVE_SET_BYTES", "65536")],
    );
}

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn killed_one_bit_build_resumes_to_the_same_bytes() {
    // The two-bit checkpoints, one bit a position: a kill in a round of candidates too, and
    // with candidates spilled (a store of 4 KiB), spill files left by the kill.
    killed_build_resumes(
        "one-bit",
        "48M",
        "level-19.work",
        twobit::checkpoint_stage,
        &[("AWARI_CANDIDATE_BYTES", "4096")],
    );
}

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn killed_low_memory_build_resumes_to_the_same_bytes() {
    // 45 MB: 0.67 bytes a position for the states, the rest for exits in 6 buckets, each
    // followed by a checkpoint.
    killed_build_resumes(
        "low-memory",
        "45M",
        "level-19.lowmem",
        lowmem::checkpoint_stage,
        &[],
    );
}

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn killed_in_memory_build_resumes_to_the_same_bytes() {
    // 2 bytes a position; its state saved at each step boundary (a save half written when a
    // kill comes mid-save: `level-19.mstate.tmp`).
    killed_build_resumes(
        "memory",
        "200M",
        "level-19.mstate",
        awari_solver::level::saved_state_stage,
        &[],
    );
}

type StageOf = fn(&Path, u32, Rules) -> Result<Option<Stage>, CheckpointError>;

fn killed_build_resumes(
    mode: &str,
    memory: &str,
    work: &str,
    stage_of: StageOf,
    env: &[(&str, &str)],
) {
    let bin = crate::common::BIN;
    let rules = Rules::Awari;
    let mem = reference(rules);
    let depths = env.iter().any(|(k, _)| *k == "AWARI_WAVE_SET_BYTES");
    let dir = temp(&format!(
        "{mode}-killed{}",
        if depths { "-depths" } else { "" }
    ));
    copy_levels(mem, &dir, 0..N);
    let depth_tables = in_memory_depths(mem);
    if depths {
        for n in 0..N {
            std::fs::copy(depth_path(&depth_tables, n), depth_path(&dir, n)).unwrap();
        }
    }
    let with_depths = ["--depth", "--depth-form", "plain"];
    let with_depths = if depths { &with_depths[..] } else { &[] };
    // The files a kill may leave besides the values (the depth tables of the levels below
    // and level 19's, whole or half written, where it writes depths).
    let expected = |f: &str| {
        f == work
            || f == format!("{work}.tmp")
            || f == "level-19.values"
            || f == "level-19.values.tmp"
            || (depths && (f.ends_with(".depth") || f == "level-19.depth.tmp"))
    };
    let args = [
        "build",
        "--max-stones",
        "19",
        "--mode",
        mode,
        "--threads",
        "2",
        "--memory",
        memory,
        "--db",
    ];
    let log = dir.with_extension("stderr");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut rng = awari_db::SplitMix64(seed);
    let out_path = dir.with_extension("stdout");
    let (mut kills, mut last, mut in_settle, mut stalls) = (0, 0u64, 0, 0);
    // Delays stretch when kills stop making progress (a loaded machine), so that the kills
    // reach the settling steps whatever the speed.
    let mut scale = 1.0f64;
    let mut finished_alone = None;
    while kills < 12 || in_settle < 3 {
        assert!(
            kills < 60,
            "{mode}: no progress after {kills} kills (seed {seed})"
        );
        // Checkpoints a few times a second (by default every 5 minutes), so that kills make
        // progress; some steps then end without one.
        let mut child = Command::new(bin)
            .env("AWARI_CHECKPOINT_SECONDS", "0.3")
            .envs(env.iter().copied())
            .args(args)
            .arg(&dir)
            .args(with_depths)
            .stdout(std::fs::File::create(&out_path).unwrap())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let delay = ((50 + rng.below(850)) as f64 * scale) as u64;
        std::thread::sleep(Duration::from_millis(delay));
        if let Some(status) = child.try_wait().unwrap() {
            assert!(
                status.success() && kills >= 10,
                "{mode}: the build ended by itself ({status}) after {kills} kills (seed {seed}): {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            finished_alone = Some(std::fs::read_to_string(&out_path).unwrap());
            break;
        }
        child.kill().unwrap(); // SIGKILL: no chance to clean up
        child.wait().unwrap();
        kills += 1;
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            !said.contains("starting afresh"),
            "{mode}: kill {kills} (seed {seed}): {said}"
        );
        for f in extra_files(&dir, N - 1) {
            assert!(
                expected(&f),
                "{mode}: unexpected {f} after kill {kills} (seed {seed})"
            );
        }
        let stage = stage_of(&dir, N, rules)
            .unwrap_or_else(|e| panic!("{mode}: kill {kills} (seed {seed}): {e}"));
        let at = stage.map_or(0, |s| s.progress(N));
        assert!(
            at >= last,
            "{mode}: kill {kills}: went back from {last} to {at} (seed {seed})"
        );
        stalls = if at == last { stalls + 1 } else { 0 };
        if stalls >= 2 {
            scale *= 1.5;
            stalls = 0;
        }
        last = at;
        in_settle += usize::from(matches!(stage, Some(Stage::Settle { .. })));
    }
    let text = match finished_alone {
        Some(text) => text,
        None => {
            let out = Command::new(bin)
                .envs(env.iter().copied())
                .args(args)
                .arg(&dir)
                .args(with_depths)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
    };
    assert!(text.contains("level 19: resumed at"), "{mode}: {text}");
    assert_level_same(mem, &dir, N);
    let mut left = extra_files(&dir, N);
    if depths {
        assert_eq!(
            std::fs::read(depth_path(&dir, N)).unwrap(),
            std::fs::read(depth_path(&depth_tables, N)).unwrap(),
            "{mode}: the depth tables differ"
        );
        left.retain(|f| !f.ends_with(".depth"));
    }
    assert_eq!(left, Vec::<String>::new(), "{mode}");
    assert!(level_size(N) > 40_000_000);
    std::fs::remove_dir_all(&dir).unwrap();
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(&out_path);
}
