//! No damaged byte becomes a wrong table: a two-bit build (with its depths, too), a one-bit
//! build, a low-memory build (its work file, its digests, its saved states), an in-memory
//! build (its saved state), a depth pass by waves and one by value classes are stopped part
//! way (a panic from their progress reports, which leaves their work files and checkpoint as
//! a kill would), a byte of one of those files is changed at random, and the pass is run
//! again. Each run ends with the true table or a clean error (never a panic), and a run after
//! a clean error writes the true table.
//!
//! The fast tier changes a few dozen bytes per pass; the slow tier (`--include-ignored`) a
//! few hundred.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use awari_db::{depth_path, level_path, Levels, Rules, SplitMix64};
use awari_solver::build::{build_level, build_level_with_depths, BuiltLevel, Mode, Plan};
use awari_solver::depth::{ClassPass, DepthPass};
use awari_solver::twobit::Stage;
use awari_solver::Progress;

use crate::common::{build_mode, copy_levels, solver, temp, StopAt};

/// Progress that records its phases and messages, in order.
#[derive(Default)]
struct Calls(std::sync::Mutex<Vec<String>>);

impl Progress for Calls {
    fn phase(&self, name: &str, _: u64) {
        self.0.lock().unwrap().push(name.to_string());
    }
    fn advance(&self, _: u64) {}
    fn message(&self, text: &str) {
        self.0.lock().unwrap().push(text.to_string());
    }
}

/// The stop, for [`StopAt`], at `pass`'s phase `phase`: the calls counted in a whole run in a
/// copy of `base` (directory `name`).
fn stop_at_phase(pass: &dyn Pass, base: &Path, phase: &str, name: &str) -> usize {
    let dir = temp(name);
    copy_dir(base, &dir);
    let calls = Calls::default();
    pool().install(|| pass.run(&dir, &calls)).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let calls = calls.0.into_inner().unwrap();
    1 + calls
        .iter()
        .position(|c| c == phase)
        .unwrap_or_else(|| panic!("no phase {phase} in {calls:?}"))
}

fn pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap()
}

/// Every file under `dir`, recursively, whose name starts with `prefix`.
fn files_under(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with(prefix) {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            out.extend(files_under(&e.path(), ""));
        } else {
            out.push(e.path());
        }
    }
    out.sort();
    out
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Change one byte of one of `files` (chosen at random, as is the byte and the change).
fn damage(files: &[PathBuf], rng: &mut SplitMix64) -> String {
    let nonempty: Vec<&PathBuf> = files
        .iter()
        .filter(|p| std::fs::metadata(p).unwrap().len() > 0)
        .collect();
    let path = nonempty[rng.below(nonempty.len() as u64) as usize];
    let mut bytes = std::fs::read(path).unwrap();
    let at = rng.below(bytes.len() as u64) as usize;
    let flip = 1 + rng.below(255) as u8;
    bytes[at] ^= flip;
    std::fs::write(path, &bytes).unwrap();
    format!("{} byte {at} ^ {flip:#04x}", path.display())
}

/// What the damage test needs of one pass: run it in `dir` (stopped by `progress`), and the
/// files of its result.
trait Pass: Sync {
    fn run(&self, dir: &Path, progress: &dyn Progress) -> Result<(), String>;
    fn results(&self, dir: &Path) -> Vec<PathBuf>;
    /// What the names of its work files in `dir` start with.
    fn work_prefix(&self) -> String;
}

/// Stop `pass` at several points, and at each, change a byte of its work files `trials`
/// times, checking that every run ends with `want`'s bytes (a file each of its results) or a
/// clean error. `name` names
/// its directories: tests running at once need names of their own.
fn damaged_runs_end_true_or_clean(
    name: &str,
    pass: &dyn Pass,
    base: &Path,
    want: &[Vec<u8>],
    stops: &[usize],
    trials: usize,
) {
    let mut rng = SplitMix64(0x5eed ^ trials as u64);
    let (mut errors, mut wrote) = (0, 0);
    for &stop in stops {
        let stopped = temp(&format!("damage-{name}-stopped"));
        copy_dir(base, &stopped);
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool().install(|| pass.run(&stopped, &StopAt::new(stop)))
        }));
        let work = files_under(&stopped, &pass.work_prefix());
        if r.is_ok() || work.is_empty() {
            // The pass ended before the stop, or left no work file: nothing to damage.
            std::fs::remove_dir_all(&stopped).unwrap();
            continue;
        }
        for _ in 0..trials {
            let trial = temp(&format!("damage-{name}-trial"));
            copy_dir(&stopped, &trial);
            let what = damage(&files_under(&trial, &pass.work_prefix()), &mut rng);
            let r = catch_unwind(AssertUnwindSafe(|| {
                pool().install(|| pass.run(&trial, &StopAt::new(0)))
            }));
            match r {
                Err(_) => panic!("{name}: a panic after {what}"),
                Ok(Ok(())) => {
                    assert!(
                        read(pass, &trial) == want,
                        "{name}: a wrong table after {what}"
                    );
                    wrote += 1;
                }
                Ok(Err(e)) => {
                    assert!(!e.is_empty() && !e.contains('\n'), "{name}: {e:?}");
                    errors += 1;
                    // Run again: the damage is never believed.
                    pool()
                        .install(|| pass.run(&trial, &StopAt::new(0)))
                        .unwrap();
                    assert!(
                        read(pass, &trial) == want,
                        "{name}: a wrong table after {what} and a rerun"
                    );
                }
            }
            std::fs::remove_dir_all(&trial).unwrap();
        }
        std::fs::remove_dir_all(&stopped).unwrap();
    }
    assert!(
        wrote + errors >= trials,
        "{name}: too few damaged runs ({wrote} tables, {errors} errors)"
    );
}

/// The bytes of `pass`'s results in `dir`.
fn read(pass: &dyn Pass, dir: &Path) -> Vec<Vec<u8>> {
    let read = |p: PathBuf| std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    pass.results(dir).into_iter().map(read).collect()
}

struct TwoBitPass {
    n: u32,
    /// The build settles in waves and writes the depth table too.
    depths: bool,
    /// The one-bit build (the two-bit checkpoints and work files, one bit a position).
    one_bit: bool,
}

impl Pass for TwoBitPass {
    fn run(&self, dir: &Path, progress: &dyn Progress) -> Result<(), String> {
        let levels = Levels::open(dir, Some(Rules::Awari)).map_err(|e| e.to_string())?;
        // Buckets of one checksum chunk: the exits phase checkpoints between them.
        let plan = if self.one_bit {
            Plan::OneBit { bucket: 1 }
        } else {
            Plan::TwoBit { bucket: 1 }
        };
        build_level_with_depths(
            dir,
            self.n,
            Rules::Awari,
            &levels,
            plan,
            self.depths,
            progress,
        )
        .map(|_| ())
        .map_err(|e| awari_db::one_line(&e))
    }
    fn results(&self, dir: &Path) -> Vec<PathBuf> {
        let mut results = vec![level_path(dir, self.n)];
        if self.depths {
            results.push(depth_path(dir, self.n));
        }
        results
    }
    fn work_prefix(&self) -> String {
        format!("level-{:02}.work", self.n)
    }
}

/// A level's build: in memory, saving its state at every step boundary, or low-memory in exit
/// buckets of a chunk, checkpointing at every step boundary.
struct BuildPass {
    n: u32,
    plan: Plan,
}

impl BuildPass {
    fn in_memory(n: u32) -> BuildPass {
        BuildPass {
            n,
            plan: Plan::InMemory,
        }
    }

    fn low_memory(n: u32) -> BuildPass {
        BuildPass {
            n,
            plan: Plan::LowMemory { bucket: 1 },
        }
    }

    fn build(&self, dir: &Path, progress: &dyn Progress) -> Result<BuiltLevel, String> {
        let levels = Levels::open(dir, Some(Rules::Awari)).map_err(|e| e.to_string())?;
        build_level(dir, self.n, Rules::Awari, &levels, self.plan, progress)
            .map_err(|e| awari_db::one_line(&e))
    }
}

impl Pass for BuildPass {
    fn run(&self, dir: &Path, progress: &dyn Progress) -> Result<(), String> {
        self.build(dir, progress).map(|_| ())
    }
    fn results(&self, dir: &Path) -> Vec<PathBuf> {
        vec![level_path(dir, self.n)]
    }
    fn work_prefix(&self) -> String {
        match self.plan {
            Plan::InMemory => format!("level-{:02}.mstate", self.n),
            _ => format!("level-{:02}.lowmem", self.n),
        }
    }
}

struct DepthWaves {
    n: u32,
    classes: bool,
}

impl Pass for DepthWaves {
    fn run(&self, dir: &Path, progress: &dyn Progress) -> Result<(), String> {
        let levels = Levels::open(dir, Some(Rules::Awari)).map_err(|e| e.to_string())?;
        if self.classes {
            ClassPass::open(&levels, self.n, dir, 1)
                .and_then(|p| p.run(true, 4, progress))
                .map(|_| ())
                .map_err(|e| awari_db::one_line(&e))
        } else {
            DepthPass::open(&levels, self.n, dir, 1)
                .and_then(|p| p.run(true, 4, progress))
                .map(|_| ())
                .map_err(|e| awari_db::one_line(&e))
        }
    }
    fn results(&self, dir: &Path) -> Vec<PathBuf> {
        vec![depth_path(dir, self.n)]
    }
    /// `level-NN.d…`: the checkpoint, the waves, the class lists (not the values).
    fn work_prefix(&self) -> String {
        format!("level-{:02}.d", self.n)
    }
}

/// The values of levels 0..=`top` in memory, in a directory of their own.
fn values(tag: &str, top: u32) -> PathBuf {
    let dir = temp(&format!("damage-values-{tag}"));
    build_mode(&dir, 2, Rules::Awari, top, Mode::InMemory);
    dir
}

/// The two-bit build of level `n`, with its depths where `depths` (their want: the depth pass
/// of the in-memory values).
fn two_bit(n: u32, depths: bool, trials: usize) {
    two_or_one_bit(n, depths, false, trials);
}

/// The one-bit build of level `n`.
fn one_bit(n: u32, trials: usize) {
    two_or_one_bit(n, false, true, trials);
}

fn two_or_one_bit(n: u32, depths: bool, one_bit: bool, trials: usize) {
    // Checkpoints at every step boundary.
    std::env::set_var("AWARI_CHECKPOINT_SECONDS", "0");
    let name = if one_bit { "one-bit" } else { "two-bit" };
    let tag = format!("{name}{}-{n}", if depths { "-depths" } else { "" });
    let reference = values(&tag, n);
    let mut want = vec![std::fs::read(level_path(&reference, n)).unwrap()];
    if depths {
        let levels = Levels::open(&reference, Some(Rules::Awari)).unwrap();
        pool()
            .install(|| {
                DepthPass::open(&levels, n, &reference, u64::MAX)?.run(true, 4, &StopAt::new(0))
            })
            .unwrap();
        want.push(std::fs::read(depth_path(&reference, n)).unwrap());
    }
    let base = temp(&format!("damage-{tag}-base"));
    copy_levels(&reference, &base, 0..n);
    let pass = TwoBitPass { n, depths, one_bit };
    damaged_runs_end_true_or_clean(&tag, &pass, &base, &want, &[2, 4, 7, 10], trials);
    std::fs::remove_dir_all(&reference).unwrap();
    std::fs::remove_dir_all(&base).unwrap();
}

/// The low-memory build of level `n`.
fn low_memory(n: u32, trials: usize) {
    // Phases exits, settle (calls 1, 2), then a message a step: stopped at the settling's
    // start and after the checkpoints before steps n − 1, n − 4 and n − 7.
    let pass = BuildPass::low_memory(n);
    damaged_build(&format!("low-memory-{n}"), n, &pass, &[2, 4, 7, 10], trials);
}

/// The in-memory build of level `n`.
fn in_memory(n: u32, trials: usize) {
    // Phases exits, settle (calls 1, 2), then a message a step: stopped after the saves
    // before steps n − 1, n − 4 and n − 7.
    let pass = BuildPass::in_memory(n);
    damaged_build(&format!("memory-{n}"), n, &pass, &[4, 7, 10], trials);
}

/// `pass`, a build of level `n` checkpointing (or saving) at every step boundary, stopped at
/// `stops`: its want is the in-memory table.
fn damaged_build(tag: &str, n: u32, pass: &dyn Pass, stops: &[usize], trials: usize) {
    std::env::set_var("AWARI_CHECKPOINT_SECONDS", "0");
    let reference = values(tag, n);
    let want = vec![std::fs::read(level_path(&reference, n)).unwrap()];
    let base = temp(&format!("damage-{tag}-base"));
    copy_levels(&reference, &base, 0..n);
    damaged_runs_end_true_or_clean(tag, pass, &base, &want, stops, trials);
    std::fs::remove_dir_all(&reference).unwrap();
    std::fs::remove_dir_all(&base).unwrap();
}

fn depth(n: u32, classes: bool, trials: usize) {
    let tag = if classes { "classes" } else { "waves" };
    let reference = values(&format!("{tag}-{n}"), n);
    let levels = Levels::open(&reference, Some(Rules::Awari)).unwrap();
    let out = temp(&format!("damage-{tag}-want-{n}"));
    std::fs::create_dir_all(&out).unwrap();
    pool()
        .install(|| DepthPass::open(&levels, n, &out, u64::MAX)?.run(true, 4, &StopAt::new(0)))
        .unwrap();
    let want = vec![std::fs::read(depth_path(&out, n)).unwrap()];
    drop(levels);
    let pass = DepthWaves { n, classes };
    damaged_runs_end_true_or_clean(
        &format!("{tag}-{n}"),
        &pass,
        &reference,
        &want,
        &[2, 4, 8, 16],
        trials,
    );
    std::fs::remove_dir_all(&reference).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
}

// The fast tier: small levels (whose depth passes checkpoint in wave 0 only), a few
// changed bytes at each stop.
#[test]
fn damaged_two_bit_work_files_never_make_a_wrong_table() {
    two_bit(12, false, 5);
}

#[test]
fn damaged_work_files_of_a_two_bit_build_with_depths_never_make_a_wrong_table() {
    two_bit(12, true, 5);
}

#[test]
fn damaged_one_bit_work_files_never_make_a_wrong_table() {
    one_bit(12, 5);
}

#[test]
fn damaged_low_memory_work_files_never_make_a_wrong_table() {
    low_memory(12, 5);
}

#[test]
fn damaged_saves_of_an_in_memory_build_never_make_a_wrong_table() {
    in_memory(12, 5);
}

/// A low-memory and a two-bit level stopped after their last step, as their tables are about
/// to be written, then damaged: a run that meets the damage while writing the table names it
/// and forgets the checkpoint, so the next run writes the true table (the low-memory build
/// once kept its checkpoint there, and every rerun met the same damage).
#[test]
fn damage_met_while_writing_the_table_is_not_met_again() {
    std::env::set_var("AWARI_CHECKPOINT_SECONDS", "0");
    let n = 12;
    let reference = values("write", n);
    let want = vec![std::fs::read(level_path(&reference, n)).unwrap()];
    let base = temp("damage-write-base");
    copy_levels(&reference, &base, 0..n);
    let low_memory = BuildPass::low_memory(n);
    let two_bit = TwoBitPass {
        n,
        depths: false,
        one_bit: false,
    };
    for (tag, pass) in [
        ("write-low-memory", &low_memory as &dyn Pass),
        ("write-two-bit", &two_bit),
    ] {
        let stop = stop_at_phase(pass, &base, "write", &format!("damage-{tag}-calls"));
        damaged_runs_end_true_or_clean(tag, pass, &base, &want, &[stop], 8);
    }
    std::fs::remove_dir_all(&reference).unwrap();
    std::fs::remove_dir_all(&base).unwrap();
}

/// Stopped after a save, the in-memory build resumes at the save's step, says so, and writes
/// the table of a build never stopped; the save goes with the table in place.
#[test]
fn a_stopped_in_memory_build_resumes_at_its_last_save() {
    std::env::set_var("AWARI_CHECKPOINT_SECONDS", "0");
    let n = 12;
    let reference = values("memory-resume", n);
    let dir = temp("damage-memory-resume");
    copy_levels(&reference, &dir, 0..n);
    let pass = BuildPass::in_memory(n);
    // Stopped at the message of step n − 2: saved before it.
    let stopped = catch_unwind(AssertUnwindSafe(|| {
        pool().install(|| pass.build(&dir, &StopAt::new(5)))
    }));
    assert!(stopped.is_err(), "the build ended before its stop");
    let stage = awari_solver::level::saved_state_stage(&dir, n, Rules::Awari).unwrap();
    assert_eq!(stage, Some(Stage::Settle { next: n - 2 }));
    let built = pool()
        .install(|| pass.build(&dir, &StopAt::new(0)))
        .unwrap();
    assert_eq!(built.resumed, Some((Stage::Settle { next: n - 2 }, 1)));
    assert!(built.seconds > 0.0);
    // The save read back, and the two saves written (after the exits, after step n).
    let save = awari_solver::level::saved_state_bytes(n);
    assert!(built.io.read >= save, "{:?}", built.io);
    assert!(built.io.written >= 2 * save, "{:?}", built.io);
    assert_eq!(
        std::fs::read(level_path(&dir, n)).unwrap(),
        std::fs::read(level_path(&reference, n)).unwrap()
    );
    assert!(!awari_solver::level::saved_state_path(&dir, n).exists());
    // A save of another level, or of other rules, is not believed: the level starts afresh.
    std::fs::remove_file(level_path(&dir, n)).unwrap();
    let _ = catch_unwind(AssertUnwindSafe(|| {
        pool().install(|| pass.build(&dir, &StopAt::new(5)))
    }));
    let saved = awari_solver::level::saved_state_path(&dir, n);
    std::fs::rename(&saved, awari_solver::level::saved_state_path(&dir, n + 1)).unwrap();
    let err = awari_solver::level::saved_state_stage(&dir, n + 1, Rules::Awari).unwrap_err();
    assert!(err.to_string().contains("bytes"), "{err}");
    assert!(
        awari_solver::level::saved_state_stage(&dir, n, Rules::Abapa)
            .unwrap()
            .is_none()
    );
    std::fs::rename(awari_solver::level::saved_state_path(&dir, n + 1), &saved).unwrap();
    let err = awari_solver::level::saved_state_stage(&dir, n, Rules::Abapa).unwrap_err();
    assert!(err.to_string().contains("not of level"), "{err}");
    std::fs::remove_dir_all(&reference).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A save that cannot be written (here its `.tmp` is a directory) is not needed for the
/// table: the level goes on and writes the true table, and no save is left.
#[test]
fn a_save_that_fails_leaves_the_level_going() {
    std::env::set_var("AWARI_CHECKPOINT_SECONDS", "0");
    let n = 12;
    let reference = values("memory-save-fails", n);
    let dir = temp("damage-memory-save-fails");
    copy_levels(&reference, &dir, 0..n);
    let save = awari_solver::level::saved_state_path(&dir, n);
    let tmp = dir.join("level-12.mstate.tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let built = pool()
        .install(|| BuildPass::in_memory(n).build(&dir, &StopAt::new(0)))
        .unwrap();
    assert_eq!(built.resumed, None);
    assert_eq!(
        std::fs::read(level_path(&dir, n)).unwrap(),
        std::fs::read(level_path(&reference, n)).unwrap()
    );
    assert!(!save.exists());
    std::fs::remove_dir_all(&reference).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn damaged_depth_work_files_never_make_a_wrong_table() {
    depth(13, false, 3);
}

#[test]
fn damaged_class_pass_work_files_never_make_a_wrong_table() {
    depth(13, true, 3);
}

/// A wave file cut at a record boundary (here emptied: every record left whole, none
/// missing its check) or removed after a depth pass stopped in its waves is found by the
/// checkpoint's digest of the waves' lengths: the pass starts afresh and writes the true table.
/// Both passes, level 15 (the first whose waves are checkpoints).
#[test]
fn a_wave_file_cut_at_a_record_boundary_is_not_believed() {
    let n = 15;
    let reference = values("cut-waves", n);
    let levels = Levels::open(&reference, Some(Rules::Awari)).unwrap();
    let out = temp("damage-cut-waves-want");
    std::fs::create_dir_all(&out).unwrap();
    pool()
        .install(|| DepthPass::open(&levels, n, &out, u64::MAX)?.run(true, 4, &StopAt::new(0)))
        .unwrap();
    let want = vec![std::fs::read(depth_path(&out, n)).unwrap()];
    drop(levels);
    let mut cut = 0;
    for classes in [false, true] {
        let pass = DepthWaves { n, classes };
        for stop in [8, 16] {
            let stopped = temp("damage-cut-waves-stopped");
            copy_dir(&reference, &stopped);
            let r = catch_unwind(AssertUnwindSafe(|| {
                pool().install(|| pass.run(&stopped, &StopAt::new(stop)))
            }));
            assert!(r.is_err(), "the pass ended before stop {stop}");
            // The waves after wave 0 (`dwave-KKKK` with K > 0; `dwave±VV-KKKK` with K > 0).
            let waves: Vec<PathBuf> = files_under(&stopped, &format!("level-{n:02}.dwave"))
                .into_iter()
                .filter(|p| {
                    let name = p.file_name().unwrap().to_str().unwrap();
                    !name.ends_with("-0000") && !name.contains("found") && !name.ends_with(".tmp")
                })
                .filter(|p| std::fs::metadata(p).unwrap().len() > 0)
                .collect();
            for (k, wave) in waves.iter().take(2).enumerate() {
                let trial = temp("damage-cut-waves-trial");
                copy_dir(&stopped, &trial);
                let path = trial.join(wave.strip_prefix(&stopped).unwrap());
                if k == 0 {
                    std::fs::File::options()
                        .write(true)
                        .open(&path)
                        .unwrap()
                        .set_len(0)
                        .unwrap();
                } else {
                    std::fs::remove_file(&path).unwrap();
                }
                let what = format!(
                    "{} {}",
                    if k == 0 { "emptied" } else { "removed" },
                    path.display()
                );
                let r = pool().install(|| pass.run(&trial, &StopAt::new(0)));
                if r.is_err() {
                    pool()
                        .install(|| pass.run(&trial, &StopAt::new(0)))
                        .unwrap();
                }
                assert!(read(&pass, &trial) == want, "a wrong table after {what}");
                cut += 1;
                std::fs::remove_dir_all(&trial).unwrap();
            }
            std::fs::remove_dir_all(&stopped).unwrap();
        }
    }
    assert!(cut >= 6, "{cut} cut files");
    std::fs::remove_dir_all(&reference).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
}

/// The slow tier: level 15, the first whose waves are checkpoints, and about a hundred
/// changed bytes in all (the fuzz target `record_file` changes many more, see
/// docs/testing.md).
#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn a_hundred_damaged_work_files_never_make_a_wrong_table() {
    two_bit(14, false, 12);
    two_bit(14, true, 6);
    one_bit(14, 6);
    low_memory(14, 12);
    in_memory(14, 12);
    depth(15, false, 3);
    depth(15, true, 3);
}

/// Zero `len` bytes of level `n`'s data in `dir`, from its middle (the header intact).
fn zero_data(dir: &Path, n: u32, len: usize) {
    let path = level_path(dir, n);
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = 64 + (bytes.len() - 64) / 2;
    bytes[mid..mid + len].fill(0);
    std::fs::write(&path, bytes).unwrap();
}

/// A build on a lower level whose data no longer matches its checksum stops with an error
/// naming it, and writes nothing above; `compress` (plain or probe form, and `build
/// --compress`) refuses such a source rather than write fresh checksums over it.
#[test]
fn a_damaged_lower_level_or_compress_source_is_named_not_used() {
    let dir = values("lower", 13);
    zero_data(&dir, 12, 200);
    let s = dir.to_str().unwrap();
    let o = solver(&["build", "--db", s, "--max-stones", "14", "--threads", "2"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("level-12.values") && err.contains("checksum"),
        "{err}"
    );
    assert!(!level_path(&dir, 14).exists());
    let out = dir.with_extension("compressed");
    for probe in [false, true] {
        let mut args = vec!["compress", "--db", s, "--out", out.to_str().unwrap()];
        args.extend(["--stones", "12"]);
        if probe {
            args.push("--probe");
        }
        let o = solver(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains("level-12.values") && err.contains("checksum"),
            "{err}"
        );
        assert!(!awari_db::compressed_path(&out, 12).exists());
    }
    let o = solver(&["build", "--db", s, "--max-stones", "13", "--compress"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("level-12.values") && err.contains("checksum"),
        "{err}"
    );
    assert!(level_path(&dir, 12).exists());
    let _ = std::fs::remove_dir_all(&out);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Readers that read a plain table's values without a lookup check them first: `depth` (of a
/// damaged level, or on one), `build --depth` over a kept damaged level and `stats` stop with
/// an error naming the table, and write no depth table from it.
#[test]
fn depths_and_histograms_of_a_damaged_level_are_refused() {
    let dir = values("read", 13);
    zero_data(&dir, 11, 200);
    let s = dir.to_str().unwrap();
    let refused = |args: &[&str]| {
        let o = solver(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("level-11.values") && err.contains("checksum"),
            "{args:?}: {err}"
        );
    };
    // Level 13 captures into levels 11 and 10.
    for n in ["13", "11"] {
        refused(&["depth", "--db", s, "--stones", n]);
    }
    refused(&["build", "--db", s, "--max-stones", "13", "--depth"]);
    for n in [11, 13] {
        assert!(!depth_path(&dir, n).exists(), "level {n}'s depths");
    }
    refused(&["stats", "--db", s, "--stones", "11"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A class pass that writes no table (`verify --prove`'s) removes the waves of each class
/// done: stopped after some classes, it resumes between classes (its checkpoint's digest of
/// the waves' lengths leaves those waves out) and reports what a pass never stopped does. A
/// pass that writes the table does not take that checkpoint (the waves it would merge are
/// gone): it starts afresh and writes the true table.
#[test]
fn a_class_pass_without_a_table_resumes_and_one_with_a_table_starts_afresh() {
    let n = 13;
    let reference = values("no-table", n);
    let levels = Levels::open(&reference, Some(Rules::Awari)).unwrap();
    let out = temp("damage-no-table-want");
    std::fs::create_dir_all(&out).unwrap();
    let whole = pool()
        .install(|| ClassPass::open(&levels, n, &out, 1)?.run(true, 4, &StopAt::new(0)))
        .unwrap();
    let want = std::fs::read(depth_path(&out, n)).unwrap();
    drop(levels);
    let stop = |dir: &Path| {
        let levels = Levels::open(dir, Some(Rules::Awari)).unwrap();
        // Phases lists (1), classes (2), then a message a class: stopped at class 3's start.
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool().install(|| ClassPass::open(&levels, n, dir, 1)?.run(false, 4, &StopAt::new(5)))
        }));
        assert!(r.is_err(), "the pass ended before its stop");
    };
    let (proof, table) = (temp("damage-no-table-proof"), temp("damage-no-table-table"));
    for dir in [&proof, &table] {
        copy_dir(&reference, dir);
        stop(dir);
    }
    let levels = Levels::open(&proof, Some(Rules::Awari)).unwrap();
    let resumed = pool()
        .install(|| ClassPass::open(&levels, n, &proof, 1)?.run(false, 4, &StopAt::new(0)))
        .unwrap();
    assert_eq!(resumed.resumed, Some(Some(0)), "resumed between classes");
    assert_eq!(
        (resumed.histogram, resumed.unproven),
        (whole.histogram, whole.unproven)
    );
    let levels = Levels::open(&table, Some(Rules::Awari)).unwrap();
    let written = pool()
        .install(|| ClassPass::open(&levels, n, &table, 1)?.run(true, 4, &StopAt::new(0)))
        .unwrap();
    assert_eq!(
        written.resumed, None,
        "a table from a checkpoint without waves"
    );
    assert!(std::fs::read(depth_path(&table, n)).unwrap() == want);
    for dir in [&reference, &out, &proof, &table] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}
