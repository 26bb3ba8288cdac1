//! Helpers shared by the probe's test files: the test databases, built once for all of them,
//! and generated boards.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use awari_db::compressed::Form;
use awari_db::{Board, Rules};
use awari_solver::build::{build, BuildOptions};
use awari_solver::depth::DepthForm;
use awari_solver::Silent;
use proptest::prelude::*;
use serde_json::Value;

#[path = "../../../../solver/tests/it/common/contracts.rs"]
pub mod contracts;
#[path = "../../../../solver/tests/it/common/reference.rs"]
pub mod reference;
#[path = "../../../../db/tests/it/common/temp.rs"]
#[allow(dead_code)] // temp_created: the db tests'
mod temp;

pub use temp::temp;

/// The top level of each rule set's test database: 16 for awari (the tour's examples), 14 for
/// the others (the slow tier builds every rule set to 20).
pub fn top(rules: Rules) -> u32 {
    if rules == Rules::Awari {
        16
    } else {
        14
    }
}

/// One database per rule set with depth tables (levels 0..=`top`), built once for all the
/// crate's tests and kept for the next runs while these sources are unchanged (see
/// [`reference::shared_dir`]): in the target directory, never under the temporary directory
/// that a run would leave it in.
pub fn db(rules: Rules) -> &'static Path {
    // One cell per rule set: a test waits only for the rule set it asks for.
    static DBS: [OnceLock<PathBuf>; Rules::ALL.len()] =
        [const { OnceLock::new() }; Rules::ALL.len()];
    DBS[rules.code() as usize].get_or_init(|| {
        shared(&format!("probe-db-{rules}"), file!(), |dir| {
            let opts = BuildOptions {
                dir: dir.to_path_buf(),
                max_stones: top(rules),
                rules,
                memory: None,
                depth: true,
                mode: Default::default(),
                compress: false,
                // abapa's depth tables compressed: lines and best moves read them too.
                depth_form: if rules == Rules::Abapa {
                    DepthForm::Compressed
                } else {
                    DepthForm::Auto
                },
            };
            build(&opts, &Silent, |_| {}).unwrap();
        })
    })
}

/// [`reference::shared_dir`] `name`, keyed by the sources that build it (the db's and the
/// solver's, and `caller`, the test file that says how: a path from the workspace's root),
/// accepted where every table in it opens and verifies.
pub fn shared(name: &str, caller: &str, build: impl FnOnce(&Path)) -> PathBuf {
    let key = reference::sources_key(&[caller]);
    let verifies = |dir: &Path| {
        let tables: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        !tables.is_empty()
            && tables.iter().all(|t| {
                awari_db::Table::open(t, Default::default()).is_ok_and(|t| t.verify().is_ok())
            })
    };
    reference::shared_dir(name, key, verifies, build)
}

/// The top level of the test database compressed by [`compressed`].
pub const COMPRESSED_TOP: u32 = 14;

/// Levels 0..=[`COMPRESSED_TOP`] of awari's [`db`] compressed in `form` (self-contained or
/// the probe form), depth tables along: written once for all the crate's tests, never
/// changed by them (a test that damages one copies it).
pub fn compressed(form: Form) -> &'static Path {
    static DIRS: [OnceLock<PathBuf>; 2] = [OnceLock::new(), OnceLock::new()];
    let slot = match form {
        Form::SelfContained => 0,
        Form::CaptureDontCares => 1,
        _ => panic!("{form:?} is not a form of values"),
    };
    DIRS[slot].get_or_init(|| {
        shared(&format!("probe-compressed-{form:?}"), file!(), |packed| {
            let plain = awari_db::Levels::open(db(Rules::Awari), None).unwrap();
            let stones: Vec<u32> = (0..=COMPRESSED_TOP).collect();
            awari_solver::compress::compress_db(&plain, packed, &stones, form, &Silent, |_| {})
                .unwrap();
        })
    })
}

/// A board of up to `max` seeds, each seed in a pit drawn at random (the property tests'
/// boards: balanced rows, every level up to `max` about equally likely).
#[allow(dead_code)] // not every test file draws boards
pub fn any_board(max: u32) -> impl Strategy<Value = Board> {
    (0usize..=max as usize)
        .prop_flat_map(|seeds| prop::collection::vec(0usize..12, seeds))
        .prop_map(|pits_of_seeds| {
            let mut pits = [0u8; 12];
            for p in pits_of_seeds {
                pits[p] += 1;
            }
            Board::new(pits).unwrap()
        })
}

/// The published VU example, `1 1 1 1 1 2 4 2 3 0 0 0` (a `show --json` document): a draw
/// whose move values are −1 −1 −2 −2 −2 0, with pit 5 the only best move.
#[allow(dead_code)] // not every test file shows it
pub fn assert_vu_example(j: &Value) {
    assert_eq!(j["value"], 0);
    let values: Vec<i64> = j["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["value"].as_i64().unwrap())
        .collect();
    assert_eq!(values, [-1, -1, -2, -2, -2, 0]);
    assert_eq!(j["best"], serde_json::json!([5]));
}
