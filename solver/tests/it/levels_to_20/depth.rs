//! The compact depth pass gives the in-memory builder's breadth-first depths (the reference's,
//! written when it was built) at every entry of every level up to 20 under awari and 16 under
//! the other rule sets ([`top_of`]; the fast tier, `tests/depth.rs`, checks levels up to 11),
//! and `verify --prove`'s check of every entry agrees with the reference values on a few small
//! levels under awari (`streamed_verify.rs` recomputes the rest twice, streamed and by lookup,
//! up to [`verify_top`]; the check costs about as much as the rest of the pass's wave 0).

use awari_db::{depth_path, level_exists, Level, Levels, Rules};
use awari_solver::depth::DepthPass;
use awari_solver::Silent;

use super::{reference, temp, top_of, verify_top};
use crate::common::open_depth;
use crate::common::reference::in_memory_depths;

/// The depths of level `n`'s table in `dir`, checksum verified.
fn depths(dir: &std::path::Path, rules: Rules, n: u32) -> Vec<u16> {
    let t = open_depth(dir, n, rules);
    t.verify().unwrap();
    let mut got = vec![0u16; Level::new(n).size() as usize];
    t.read_depths(0, &mut got, &[]).unwrap();
    got
}

/// Whether the pass also checks level `n`'s values: where `streamed_verify.rs` does not
/// (above [`verify_top`]), and under awari on the levels up to 12.
fn value_check(rules: Rules, n: u32) -> bool {
    n > verify_top(rules) || (rules == Rules::Awari && n <= 12)
}

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn compact_depths_equal_the_in_memory_waves_to_20() {
    for rules in Rules::ALL {
        let dir = reference(rules);
        let levels = Levels::open(dir, Some(rules)).unwrap();
        let out = temp(&format!("depth-{rules}"));
        std::fs::create_dir_all(&out).unwrap();
        for n in (0..=top_of(rules)).filter(|&n| level_exists(n)) {
            let pass = DepthPass::open(&levels, n, &out, u64::MAX).unwrap();
            let pass = if value_check(rules, n) {
                pass.check_values(4)
            } else {
                pass
            };
            let r = pass.run(true, 4, &Silent).unwrap();
            assert_eq!((r.unproven, r.inconsistent), (0, 0), "{rules} level {n}");
            let got = depths(&out, rules, n);
            let want = depths(&in_memory_depths(dir), rules, n);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g, w, "{rules} level {n} index {i}");
            }
            assert_eq!(
                r.max_depth,
                want.iter().copied().max().unwrap(),
                "{rules} level {n}"
            );
            std::fs::remove_file(depth_path(&out, n)).unwrap();
        }
        std::fs::remove_dir_all(&out).unwrap();
    }
}

/// The class pass ([`awari_solver::depth::ClassPass`]) gives the same tables, byte for byte,
/// as the in-memory builder on the same levels (with phase 1 in four buckets on the odd
/// levels from 13 up, and in one bit a position on the even ones, what its waves find held in
/// 1/256 of a byte a position, so spilled on the larger levels).
#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn class_pass_depths_equal_the_in_memory_waves_to_20() {
    for rules in Rules::ALL {
        let dir = reference(rules);
        let levels = Levels::open(dir, Some(rules)).unwrap();
        let out = temp(&format!("classes-{rules}"));
        std::fs::create_dir_all(&out).unwrap();
        for n in (0..=top_of(rules)).filter(|&n| level_exists(n)) {
            // Four buckets (whole chunks, so from level 13 up): each is a pass over the lower
            // levels, and buckets of one chunk made level 19 fifty of them.
            let bucket = if n % 2 == 1 {
                awari_db::level_size(n).div_ceil(4)
            } else {
                u64::MAX
            };
            let mut pass = awari_solver::depth::ClassPass::open(&levels, n, &out, bucket).unwrap();
            if n % 2 == 0 {
                pass = pass.one_bit(awari_db::level_size(n) / 256);
            }
            let r = pass.run(true, 4, &Silent).unwrap();
            assert_eq!(r.unproven, 0, "{rules} level {n}");
            assert!(
                std::fs::read(depth_path(&out, n)).unwrap()
                    == std::fs::read(depth_path(&in_memory_depths(dir), n)).unwrap(),
                "{rules} level {n}"
            );
            std::fs::remove_file(depth_path(&out, n)).unwrap();
        }
        std::fs::remove_dir_all(&out).unwrap();
    }
}
