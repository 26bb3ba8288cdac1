//! Helpers shared by the solver's integration tests (included with `mod common;`).
#![allow(dead_code)]

pub mod contracts;
pub mod reference;
#[path = "../../../../db/tests/it/common/temp.rs"]
mod temp;

pub use temp::temp;

use std::path::Path;
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use awari_db::{level_exists, level_path, Rules};
use awari_solver::build::{build, BuildOptions, Mode};
use awari_solver::{Progress, Silent};

/// The solver binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_awari-solver");

/// Run the solver binary with `args` and collect its output.
pub fn solver(args: &[&str]) -> Output {
    std::process::Command::new(BIN).args(args).output().unwrap()
}

/// A command's standard output, then its standard error, as text (what an assertion shows).
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A path as a command line's argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Build levels 0..=`max` of `dir` with `mode` on a pool of `threads` threads.
pub fn build_mode(dir: &Path, threads: usize, rules: Rules, max: u32, mode: Mode) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let opts = BuildOptions {
            dir: dir.to_path_buf(),
            max_stones: max,
            rules,
            memory: None,
            depth: false,
            mode,
            compress: false,
            depth_form: Default::default(),
        };
        build(&opts, &Silent, |_| {}).unwrap();
    });
}

/// Copy the tables of `levels` (those that exist) from `from` into `to`, creating it.
pub fn copy_levels(from: &Path, to: &Path, levels: impl IntoIterator<Item = u32>) {
    std::fs::create_dir_all(to).unwrap();
    for n in levels.into_iter().filter(|&n| level_exists(n)) {
        std::fs::copy(level_path(from, n), level_path(to, n)).unwrap();
    }
}

/// Level `n`'s depth table in `dir`, opened as the depth table of level `n` under `rules`.
pub fn open_depth(dir: &Path, n: u32, rules: Rules) -> awari_db::Table {
    awari_db::Table::open(
        awari_db::depth_path(dir, n),
        awari_db::Expect {
            rules: Some(rules),
            seeds: Some(n),
            content: Some(awari_db::Content::Depth),
        },
    )
    .unwrap()
}

/// Level `n` of `a` and of `b` are the same file, byte for byte.
pub fn assert_level_same(a: &Path, b: &Path, n: u32) {
    let x = std::fs::read(level_path(a, n)).unwrap();
    let y = std::fs::read(level_path(b, n)).unwrap();
    assert!(
        x == y,
        "level {n} differs between {} and {}",
        a.display(),
        b.display()
    );
}

/// The value of `b` (of level `n`) recomputed from its children: the quiet ones from `vals`
/// (level `n`), the capturing ones from `levels`.
fn recompute(
    levels: &awari_db::Levels,
    vals: &[i8],
    n: u32,
    rules: Rules,
    b: &awari_db::Board,
) -> i8 {
    let level = awari_db::Level::new(n);
    match b.outcome(rules) {
        awari_db::Outcome::Terminal(t) => t,
        awari_db::Outcome::Moves(ms) => ms
            .iter()
            .map(|m| {
                let cv = if m.captures == 0 {
                    vals[level.rank(&m.child).unwrap() as usize]
                } else {
                    levels.value(&m.child).unwrap()
                };
                m.captures as i8 - cv
            })
            .max()
            .unwrap(),
    }
}

/// Make level `n` of `dir` (its top level) consistent but false: a drawn position `p` and a
/// drawn quiet child `c` of it are relabelled won by 1 and lost by 1, and the rest of the level
/// is recomputed from its children until nothing changes (the relabelling then holds on a
/// cycle of quiet moves, which the true values draw). Every entry then equals the best of its
/// moves, so the consistency check passes, but the won and lost positions of the cycle never
/// convert. Returns the boards whose values changed (the first is `p`).
pub fn make_false_cycle(dir: &Path, rules: Rules, n: u32) -> Vec<awari_db::Board> {
    use awari_db::{Level, Levels, Outcome};
    let levels = Levels::open(dir, Some(rules)).unwrap();
    let level = Level::new(n);
    let boards: Vec<_> = (0..level.size()).map(|i| level.unrank(i)).collect();
    let vals: Vec<i8> = levels
        .require(n)
        .unwrap()
        .plain()
        .unwrap()
        .iter()
        .map(|&b| b as i8)
        .collect();
    for (i, p) in boards.iter().enumerate() {
        if vals[i] != 0 {
            continue;
        }
        let Outcome::Moves(ms) = p.outcome(rules) else {
            continue;
        };
        for m in ms.iter().filter(|m| m.captures == 0) {
            let c = level.rank(&m.child).unwrap() as usize;
            if vals[c] != 0 {
                continue;
            }
            let mut w = vals.clone();
            w[i] = 1;
            w[c] = -1;
            let mut changed = true;
            for _ in 0..100 {
                if !changed {
                    break;
                }
                changed = false;
                for j in (0..boards.len()).filter(|&j| j != i && j != c) {
                    let r = recompute(&levels, &w, n, rules, &boards[j]);
                    if r != w[j] {
                        w[j] = r;
                        changed = true;
                    }
                }
            }
            let holds = !changed
                && recompute(&levels, &w, n, rules, p) == 1
                && recompute(&levels, &w, n, rules, &m.child) == -1;
            if holds {
                let mut out = vec![*p];
                out.extend(
                    (0..boards.len())
                        .filter(|&j| j != i && w[j] != vals[j])
                        .map(|j| boards[j]),
                );
                let data: Vec<u8> = w.iter().map(|&v| v as u8).collect();
                drop(levels);
                awari_db::write_table(
                    level_path(dir, n),
                    awari_db::Header::values(rules, n),
                    &data,
                )
                .unwrap();
                return out;
            }
        }
    }
    panic!("no consistent false cycle found in level {n} under {rules}");
}

/// Lower by 2 the first value of level `n` in `dir` above 2 (a win by 3 or more becomes one by
/// 1 or more less), the table rewritten with a new checksum: the entry is then not the best of
/// its moves, which only the consistency check finds. Returns its index.
pub fn lower_a_won_value(dir: &Path, rules: Rules, n: u32) -> u64 {
    let path = awari_db::level_path(dir, n);
    let mut data = table_data(&path);
    let i = data.iter().position(|&v| v as i8 > 2).unwrap();
    data[i] = (data[i] as i8 - 2) as u8;
    awari_db::write_table(&path, awari_db::Header::values(rules, n), &data).unwrap();
    i as u64
}

/// The data section of the plain table at `path` (between its header and its chunk digests).
pub fn table_data(path: &Path) -> Vec<u8> {
    awari_db::Table::open(path, Default::default())
        .unwrap()
        .plain()
        .unwrap()
        .to_vec()
}

/// Progress that stops the run at its `at`-th phase or message (0: never): an unwind, which
/// leaves the run's work files and checkpoint as a kill would.
pub struct StopAt {
    calls: AtomicUsize,
    at: usize,
}

impl StopAt {
    pub fn new(at: usize) -> StopAt {
        StopAt {
            calls: AtomicUsize::new(0),
            at,
        }
    }

    fn tick(&self) {
        if self.calls.fetch_add(1, SeqCst) + 1 == self.at {
            // Not `panic!`: `resume_unwind` unwinds without the panic hook, so the output
            // of a failing run is not buried under the backtraces of the planned stops.
            std::panic::resume_unwind(Box::new("stopped by the test"));
        }
    }
}

impl Progress for StopAt {
    fn phase(&self, _: &str, _: u64) {
        self.tick();
    }
    fn advance(&self, _: u64) {}
    fn message(&self, _: &str) {
        self.tick();
    }
}
