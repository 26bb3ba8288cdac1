//! The slow tier's check that perfect play converts (`cargo test -- --ignored`, run by
//! `.ci/run`): with depth tables, here compressed ones, `line` realises the predicted score of
//! every won position of a random sample of 1000 with 20 seeds.

use awari_db::{Rules, SplitMix64};
use awari_probe::{perfect_line, Database};
use awari_solver::build::{build, BuildOptions};
use awari_solver::depth::DepthForm;
use awari_solver::Silent;

#[test]
#[ignore = "slow tier (about 2 minutes): .ci/run runs it"]
fn line_realises_1000_won_positions_with_20_seeds() {
    let dir = std::env::temp_dir().join(format!("awari-probe-{}-perfect", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = BuildOptions {
        dir: dir.clone(),
        max_stones: 20,
        rules: Rules::Awari,
        memory: None,
        depth: true,
        mode: Default::default(),
        compress: false,
        depth_form: DepthForm::Compressed,
    };
    build(&opts, &Silent, |_| {}).unwrap();
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
