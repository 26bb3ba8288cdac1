//! The slow tier's check that perfect play converts (`cargo test -- --ignored`, run by
//! `.ci/run`): with depth tables, level 20's compressed, `line` realises the predicted score of
//! every won position of a random sample of 1000 with 20 seeds. The tables are the slow tier's
//! shared reference (levels 0..20 built in memory, with the in-memory builder's depths).

use awari_db::{depth_path, level_exists, level_path, Levels, Rules, SplitMix64};
use awari_probe::{perfect_line, Database};
use awari_solver::depth::{store_depth, DepthForm};
use awari_solver::Silent;

use crate::common::{reference, temp};

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn line_realises_1000_won_positions_with_20_seeds() {
    let shared = reference::shared_reference(Rules::Awari);
    let depths = reference::in_memory_depths(&shared);
    let dir = temp("perfect");
    std::fs::create_dir_all(&dir).unwrap();
    // Hard links (copies where the file system has none): the reference stays as it is.
    let link = |from: &std::path::Path, to: &std::path::Path| {
        std::fs::hard_link(from, to)
            .or_else(|_| std::fs::copy(from, to).map(|_| ()))
            .unwrap()
    };
    for n in (0..=20).filter(|&n| level_exists(n)) {
        link(&level_path(&shared, n), &level_path(&dir, n));
        link(&depth_path(&depths, n), &depth_path(&dir, n));
    }
    let mut levels = Levels::open(&dir, Some(Rules::Awari)).unwrap();
    store_depth(&mut levels, 20, DepthForm::Compressed, &Silent).unwrap();
    drop(levels);
    let database = Database::open(&dir, None).unwrap();
    assert!(database.levels().depth_table(20).unwrap().is_compressed());
    let mut rng = SplitMix64(20);
    let (mut won, mut plies) = (0, 0);
    while won < 1000 {
        let board = rng.board(20);
        let line = perfect_line(&database, &board, 100_000).unwrap();
        if line.value == 0 {
            continue;
        }
        won += 1;
        plies += line.plies.len();
        assert!(line.complete(), "{board}: {:?}", line.end);
        assert_eq!(
            line.result[0] - line.result[1],
            f64::from(line.value),
            "{board}"
        );
    }
    eprintln!("1000 won positions with 20 seeds realised in {plies} plies");
    std::fs::remove_dir_all(&dir).unwrap();
}
