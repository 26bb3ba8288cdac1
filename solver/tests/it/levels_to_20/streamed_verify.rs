//! The streamed `verify` (children un-moved into their parents, in index order) passes every
//! level to 20 under awari (16 under the other rule sets), as the lookup `verify` (children
//! looked up from their parents) does (to 18 under awari); it finds one changed entry wherever it lies — in the
//! first, a middle or the last bucket, at a bucket's edge, in the level or in a lower level —
//! and names its board, and it checks a raw VU directory.

use std::path::Path;

use awari_db::{level_exists, level_path, raw_path, write_table, Header, Level, Levels, Rules};
use awari_solver::verify::{verify_level_lookup, verify_level_streamed, LevelVerdict};
use awari_solver::Silent;

use super::{copy_levels, reference, temp, verify_top};

fn streamed(levels: &Levels, n: u32, bucket: u64) -> LevelVerdict {
    verify_level_streamed(levels, n, 1000, bucket, &Silent).unwrap()
}

fn lookup(levels: &Levels, n: u32) -> LevelVerdict {
    verify_level_lookup(levels, n, 1000, &Silent).unwrap()
}

/// Level `n` of `dir` with entry `idx` changed to another value, the checksum recomputed
/// (`fix_checksum`) or left stale; returns the new value.
fn change_entry(dir: &Path, rules: Rules, n: u32, idx: u64, fix_checksum: bool) -> i8 {
    let path = level_path(dir, n);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = awari_db::table::HEADER_LEN + idx as usize;
    let old = bytes[at] as i8;
    // Any other value is wrong: an entry's recomputed value does not depend on itself.
    let new = if old < n as i8 { old + 1 } else { old - 1 };
    bytes[at] = new as u8;
    if fix_checksum {
        let end = awari_db::table::HEADER_LEN + awari_db::level_size(n) as usize;
        let data = bytes[awari_db::table::HEADER_LEN..end].to_vec();
        std::fs::remove_file(&path).unwrap();
        write_table(&path, Header::values(rules, n), &data).unwrap();
    } else {
        std::fs::write(&path, &bytes).unwrap();
    }
    new
}

/// Both checks go to [`verify_top`]: 20 under awari and 16 under the other rule sets. Under
/// awari the lookup check stops at 18: levels 19 and 20
/// (132 M positions, each child looked up) would be a minute and a half of CI's CPU, and the
/// two checks already agree on 19 levels that span one bucket, many chunks and every rule.
#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn streamed_agrees_with_lookup_on_every_level_to_20() {
    for rules in Rules::ALL {
        let levels = Levels::open(reference(rules), Some(rules)).unwrap();
        let top = verify_top(rules);
        // The top level in three buckets (below), the others in one.
        for n in (0..top).filter(|&n| level_exists(n)) {
            let size = awari_db::level_size(n);
            let s = streamed(&levels, n, size);
            assert!(s.passed() && s.passes == 1, "{rules} level {n}: {s:?}");
            if n <= 18 {
                let l = lookup(&levels, n);
                assert!(l.passed(), "{rules} level {n}: {l:?}");
            }
        }
        // The top level in three buckets, the last one short.
        let s = streamed(&levels, top, awari_db::level_size(top) / 3 + 1000);
        assert!(s.passed() && s.passes == 3, "{rules}: {s:?}");
    }
}

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn streamed_finds_a_changed_entry_in_every_bucket_position() {
    let rules = Rules::Awari;
    let good = reference(rules);
    // Level 15 (about 7.5 M positions) in five buckets, over a changed level 13 below it.
    let n = 15;
    let size = awari_db::level_size(n);
    let bucket = size / 5 + 7; // five buckets, the last one short
    let level = Level::new(n);
    let places = [
        ("first entry", 0),
        ("last of the first bucket", bucket - 1),
        ("first of the second bucket", bucket),
        ("middle", size / 2),
        ("last entry", size - 1),
    ];
    for (k, (where_, idx)) in places.into_iter().enumerate() {
        // The checksum recomputed (only the entry check can find it), and once left stale.
        for fix in [true, false].into_iter().take(if k == 3 { 2 } else { 1 }) {
            let bad = temp("streamed-bad");
            copy_levels(good, &bad, 0..=n);
            let new = change_entry(&bad, rules, n, idx, fix);
            let levels = Levels::open(&bad, Some(rules)).unwrap();
            let s = streamed(&levels, n, bucket);
            assert_eq!(s.passes, 5);
            assert!(!s.passed(), "{where_}: {s:?}");
            assert_eq!(s.checksum.is_some(), !fix, "{where_}: {s:?}");
            let board = level.unrank(idx);
            let named = s
                .examples
                .iter()
                .find(|m| m.index == idx)
                .unwrap_or_else(|| panic!("{where_}: entry {idx} not named: {:?}", s.examples));
            assert_eq!(named.board, board);
            assert!(named.what.contains(&format!("stored {new}")), "{named:?}");
            // The lookup check names the same entries (the changed one, and the parents whose
            // best move went through it).
            if fix {
                let l = lookup(&levels, n);
                let a: Vec<u64> = s.examples.iter().map(|m| m.index).collect();
                let b: Vec<u64> = l.examples.iter().map(|m| m.index).collect();
                assert_eq!((s.failures, a), (l.failures, b), "{where_}");
            }
            drop(levels);
            std::fs::remove_dir_all(&bad).unwrap();
        }
    }

    // A changed entry of a lower level: its own check finds it, and the check of a level
    // that captures into it reads it through the un-capture stream, not by lookup.
    let m = 13;
    let bad = temp("streamed-bad-lower");
    copy_levels(good, &bad, 0..=n);
    let lower_size = awari_db::level_size(m);
    for idx in [0, lower_size / 2, lower_size - 1] {
        change_entry(&bad, rules, m, idx, true);
    }
    let levels = Levels::open(&bad, Some(rules)).unwrap();
    let own = streamed(&levels, m, lower_size / 3 + 1);
    let found: Vec<u64> = own.examples.iter().map(|e| e.index).collect();
    for idx in [0, lower_size / 2, lower_size - 1] {
        assert!(found.contains(&idx), "level {m} entry {idx}: {own:?}");
    }
    let above = streamed(&levels, n, bucket);
    let l = lookup(&levels, n);
    assert_eq!(
        above.failures, l.failures,
        "level {n} over a changed level {m}"
    );
    drop(levels);
    std::fs::remove_dir_all(&bad).unwrap();

    // A raw VU directory (headerless scores.N files): passes, and a changed byte is found.
    let vu = temp("streamed-vu");
    std::fs::create_dir_all(&vu).unwrap();
    for k in (0..=n).filter(|&k| level_exists(k)) {
        let data = crate::common::table_data(&level_path(good, k));
        std::fs::write(raw_path(&vu, k), &data).unwrap();
    }
    let levels = Levels::open(&vu, None).unwrap();
    assert!(levels.is_raw());
    for k in [12, n] {
        assert!(streamed(&levels, k, bucket).passed(), "raw level {k}");
    }
    drop(levels);
    let path = raw_path(&vu, n);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[size as usize / 3] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let levels = Levels::open(&vu, None).unwrap();
    let s = streamed(&levels, n, bucket);
    assert!(!s.passed() && s.checksum.is_none());
    assert!(s.examples.iter().any(|m| m.index == size / 3), "{s:?}");
    drop(levels);
    std::fs::remove_dir_all(&vu).unwrap();
}
