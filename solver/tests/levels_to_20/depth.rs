//! The compact depth pass gives the in-memory builder's breadth-first depths at every entry
//! of every level up to 20 under the three rule sets (the fast tier, `tests/depth.rs`, checks
//! levels up to 14), and `verify --prove`'s check of every entry agrees with the reference
//! values.

use awari_db::{level_exists, Level, Levels, Rules};
use awari_solver::depth::DepthPass;
use awari_solver::{LevelBuilder, Silent};

use crate::{reference, temp, TOP};

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn compact_depths_equal_the_in_memory_waves_to_20() {
    for rules in Rules::ALL {
        let dir = reference(rules);
        let levels = Levels::open(dir, Some(rules)).unwrap();
        let out = temp(&format!("depth-{rules}"));
        std::fs::create_dir_all(&out).unwrap();
        for n in (0..=TOP).filter(|&n| level_exists(n)) {
            let mut b = LevelBuilder::new(n, rules, &levels, true).unwrap();
            b.solve(&Silent).unwrap();
            let r = DepthPass::open(&levels, n, &out, u64::MAX)
                .unwrap()
                .check_values(4)
                .run(true, 4, &Silent)
                .unwrap();
            assert_eq!((r.unproven, r.inconsistent), (0, 0), "{rules} level {n}");
            let t =
                awari_db::Table::open(awari_db::depth_path(&out, n), awari_db::Expect::default())
                    .unwrap();
            t.verify().unwrap();
            let mut got = vec![0u16; Level::new(n).size() as usize];
            t.read_depths(0, &mut got, &[]).unwrap();
            let mut deepest = 0;
            for i in 0..Level::new(n).size() {
                let want = b.depth(i).unwrap();
                deepest = deepest.max(want);
                assert_eq!(got[i as usize], want, "{rules} level {n} index {i}");
            }
            assert_eq!(r.max_depth, deepest, "{rules} level {n}");
            std::fs::remove_file(awari_db::depth_path(&out, n)).unwrap();
        }
        std::fs::remove_dir_all(&out).unwrap();
    }
}
