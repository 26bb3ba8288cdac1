//! Compressed tables on every level up to 20 (under awari; 16 under the other rule sets, whose
//! coding is the same): `compress` round trips each level; `build --compress` (each level built on compressed lower levels, then
//! compressed itself) gives the reference's values exactly; a raw VU directory converts; the
//! streamed `verify` passes on a compressed directory; an interrupted compression resumes; and
//! a corrupt compressed lower level stops a build with an error naming it.

use std::path::Path;

use awari_db::compressed::{Form, Layout, PROBE_SEGMENT_LOG2};
use awari_db::{compressed_path, level_exists, level_path, raw_path, Levels, Rules};
use awari_solver::build::{build, BuildOptions, Mode};
use awari_solver::compress::{compress_db, estimate_db};
use awari_solver::verify::verify_level_streamed;
use awari_solver::Silent;

use rayon::prelude::*;

use super::{reference, temp, TOP};

/// Every level of `a` decodes to exactly the values of `b`'s.
fn assert_same_values(a: &Levels, b: &Levels, top: u32) {
    for n in (0..=top).filter(|&n| level_exists(n)) {
        let (x, y) = (a.require(n).unwrap(), b.require(n).unwrap());
        let size = x.header().entries;
        assert_eq!(size, y.header().entries);
        let (mut p, mut q) = (Vec::new(), Vec::new());
        for start in (0..size).step_by(1 << 22) {
            let end = (start + (1 << 22)).min(size);
            assert!(
                x.read(start..end, &mut p).unwrap() == y.read(start..end, &mut q).unwrap(),
                "level {n}: values differ in {start}..{end}"
            );
        }
    }
}

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn compress_round_trips_every_level_to_20() {
    for rules in Rules::ALL {
        let plain = Levels::open(reference(rules), Some(rules)).unwrap();
        let out = temp(&format!("compressed-{rules}"));
        // The self-contained coder never reads the rules: levels to 20 under awari, to 16 under
        // the others (their values differ, their coding does not).
        let top = if rules == Rules::Awari { TOP } else { 16 };
        let stones: Vec<u32> = (0..=top).collect();
        let reports =
            compress_db(&plain, &out, &stones, Form::SelfContained, &Silent, |_| {}).unwrap();
        assert_eq!(
            reports.len(),
            (0..=top).filter(|&n| level_exists(n)).count()
        );
        let packed = Levels::open(&out, Some(rules)).unwrap();
        for n in (0..=top).filter(|&n| level_exists(n)) {
            let t = packed.require(n).unwrap();
            assert!(t.is_compressed() && t.path() == compressed_path(&out, n));
            t.verify().unwrap();
        }
        assert_same_values(&packed, &plain, top);
        // Levels above 12 are well under half their plain size; Cross-Wari's values spread
        // wider (fewer draws, longer wins), about half (3.75 to 4.19 bits at levels 12..16).
        let bound = if rules == Rules::CrossWari { 4.5 } else { 4.0 };
        for r in reports.iter().filter(|r| r.level >= 12) {
            assert!(r.bits_per_position() < bound, "{rules}: {r:?}");
        }
        // An estimate writes nothing and is the size where it samples every group (up to
        // level 16), within half a percent above.
        let estimates = estimate_db(&plain, &stones, Form::SelfContained, &Silent, |_| {}).unwrap();
        assert_eq!(estimates.len(), reports.len());
        for (e, r) in estimates.iter().zip(&reports) {
            assert!(e.estimated && e.level == r.level && e.entries == r.entries);
            if r.level <= 16 {
                assert_eq!(e.bytes, r.bytes, "{rules} level {}", r.level);
            } else {
                let ratio = e.bytes as f64 / r.bytes as f64;
                assert!(
                    (ratio - 1.0).abs() < 0.005,
                    "{rules} level {}: {ratio}",
                    r.level
                );
            }
        }
        assert!(!compressed_path(plain.dir(), TOP).exists());
        std::fs::remove_dir_all(&out).unwrap();
    }
}

/// The probe form of every level up to 12 (coder 4: rANS), in segments of 256 under awari,
/// grand slam and cross-wari and of 128 under abapa (`--segment 128`): each entry resolved
/// by its capture search is the plain table's value; the files are well under the
/// self-contained form's size; `verify` (which looks the form up) passes; the builder refuses
/// it as a lower level with a one-line error; a self-contained level in the output is
/// replaced, a probe-form one kept.
#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn the_probe_form_resolves_to_the_plain_values() {
    // Each entry's capture search and the shortest-path encoder make this the slowest test per
    // position: level 12 keeps it about a minute of CPU under the four rule sets. (The fast
    // tier checks the probe form on 100,000 random boards of levels 0..14 through
    // `awari-probe batch`.)
    for rules in Rules::ALL {
        let (probe_top, layout): (u32, Layout) = match rules {
            Rules::Awari => (12, Form::CaptureDontCares.into()),
            Rules::Abapa => (
                12,
                Form::CaptureDontCares.with_segment_log2(PROBE_SEGMENT_LOG2),
            ),
            Rules::GrandSlam => (12, Form::CaptureDontCares.into()),
            Rules::CrossWari => (12, Form::CaptureDontCares.into()),
        };
        let stones: Vec<u32> = (0..=probe_top).collect();
        let plain = Levels::open(reference(rules), Some(rules)).unwrap();
        let out = temp(&format!("probe-{rules}"));
        // A self-contained level already there is not what was asked for: it is replaced.
        compress_db(
            &plain,
            &out,
            &[probe_top],
            Form::SelfContained,
            &Silent,
            |_| {},
        )
        .unwrap();
        let reports = compress_db(&plain, &out, &stones, layout, &Silent, |_| {}).unwrap();
        assert!(reports.iter().all(|r| r.seconds.is_some()), "{rules}");
        let probe = Levels::open(&out, Some(rules)).unwrap();
        for n in (0..=probe_top).filter(|&n| level_exists(n)) {
            let t = probe.require(n).unwrap();
            assert!(t.is_probe_form(), "{rules} level {n}");
            assert_eq!(t.compressed_layout(), Some(layout), "{rules} level {n}");
            t.verify().unwrap();
            t.check_blocks().unwrap();
            assert!(
                t.value(0).is_err(),
                "a lone read of the probe form is refused"
            );
            let values = plain.require(n).unwrap();
            let level = awari_db::Level::new(n);
            // On every core: each lookup is a capture search.
            let chunks: Vec<u64> = (0..level.size()).step_by(1 << 16).collect();
            chunks.into_par_iter().for_each(|start| {
                let end = (start + (1 << 16)).min(level.size());
                for (i, board) in (start..end).zip(level.boards(start..end)) {
                    assert_eq!(
                        probe.lookup(&board, i).unwrap(),
                        values.value(i).unwrap(),
                        "{rules} level {n} entry {i}"
                    );
                }
            });
        }
        for r in reports.iter().filter(|r| r.level >= 12) {
            assert!(r.bits_per_position() < 3.2, "{rules}: {r:?}");
        }
        // Its estimate, sampling every group at these levels, is its size.
        let estimates = estimate_db(&plain, &stones, layout, &Silent, |_| {}).unwrap();
        assert_eq!(estimates.len(), stones.len());
        for (e, r) in estimates.iter().zip(&reports) {
            assert_eq!((e.level, e.bytes), (r.level, r.bytes), "{rules}");
        }
        // Kept on a rerun.
        let again = compress_db(&plain, &out, &stones, layout, &Silent, |_| {}).unwrap();
        assert!(again.iter().all(|r| r.seconds.is_none()));
        // verify looks the form up (a capture search for every child), and passes.
        let v = awari_solver::verify::verify_level(
            &probe,
            probe_top,
            &awari_solver::verify::VerifyOptions {
                method: awari_solver::verify::Method::Auto,
                memory: None,
                keep: 10,
                prove: false,
                work: None,
            },
            &Silent,
        )
        .unwrap();
        assert!(v.passed(), "{rules}: {v:?}");
        // The builder streams its lower levels, which the probe form cannot give.
        let err = build(
            &BuildOptions {
                dir: out.clone(),
                max_stones: probe_top + 1,
                rules,
                memory: None,
                depth: false,
                mode: Mode::InMemory,
                compress: false,
                depth_form: Default::default(),
            },
            &Silent,
            |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("probe form") && err.lines().count() == 1,
            "{err}"
        );
        assert!(!level_path(&out, probe_top + 1).exists());
        std::fs::remove_dir_all(&out).unwrap();
    }
}

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn build_on_compressed_lower_levels_gives_the_same_tables() {
    // Levels 17 and 18 span several of the compressor's batches (2^24 entries) and read their
    // lower levels compressed as the ones above would; 19 and 20 would double the minutes.
    const BUILT_TOP: u32 = 18;
    let rules = Rules::Awari;
    let dir = temp("build-compress");
    let opts = BuildOptions {
        dir: dir.clone(),
        max_stones: BUILT_TOP,
        rules,
        memory: None,
        depth: false,
        mode: Mode::InMemory,
        compress: true,
        depth_form: Default::default(),
    };
    let mut compressed = 0;
    build(&opts, &Silent, |r| {
        compressed += usize::from(r.compressed.is_some())
    })
    .unwrap();
    assert_eq!(
        compressed,
        (0..=BUILT_TOP).filter(|&n| level_exists(n)).count()
    );
    for n in (0..=BUILT_TOP).filter(|&n| level_exists(n)) {
        assert!(
            !level_path(&dir, n).exists(),
            "level {n}: the plain table is replaced"
        );
        assert!(compressed_path(&dir, n).exists());
    }
    let built = Levels::open(&dir, Some(rules)).unwrap();
    let plain = Levels::open(reference(rules), Some(rules)).unwrap();
    assert_same_values(&built, &plain, BUILT_TOP);
    // The streamed check passes on the compressed levels (the top three here).
    for n in BUILT_TOP - 2..=BUILT_TOP {
        let v = verify_level_streamed(&built, n, 10, awari_db::level_size(n), &Silent).unwrap();
        assert!(v.passed(), "level {n}: {v:?}");
    }
    // A build kept compressed: rerun, nothing is rebuilt or recompressed.
    let mut rebuilt = 0;
    build(&opts, &Silent, |r| {
        rebuilt += usize::from(r.seconds.is_some() || r.compressed.is_some())
    })
    .unwrap();
    assert_eq!(rebuilt, 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn a_raw_vu_directory_converts_and_an_interrupted_run_resumes() {
    let from = reference(Rules::Awari);
    let raw = temp("compress-raw");
    std::fs::create_dir_all(&raw).unwrap();
    let top = 16;
    for n in (0..=top).filter(|&n| level_exists(n)) {
        let data = crate::common::table_data(&level_path(from, n));
        std::fs::write(raw_path(&raw, n), &data).unwrap();
    }
    let source = Levels::open(&raw, None).unwrap();
    assert!(source.is_raw());
    let out = temp("compress-raw-out");
    // Interrupted after level 10: the rerun keeps levels 0..10 and writes the rest.
    let first: Vec<u32> = (0..=10).collect();
    compress_db(&source, &out, &first, Form::SelfContained, &Silent, |_| {}).unwrap();
    // A stale temporary file, as a kill would leave it, is overwritten.
    std::fs::write(out.join("level-11.cvalues.tmp"), b"partial").unwrap();
    let mut kept = Vec::new();
    compress_db(&source, &out, &[], Form::SelfContained, &Silent, |r| {
        if r.seconds.is_none() {
            kept.push(r.level)
        }
    })
    .unwrap();
    assert_eq!(kept, first);
    assert!(!out.join("level-11.cvalues.tmp").exists());
    let packed = Levels::open(&out, Some(Rules::Awari)).unwrap();
    assert_same_values(&packed, &source, top);
    // The output directory must not be the source.
    let err = compress_db(&source, &raw, &[], Form::SelfContained, &Silent, |_| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("source directory"), "{err}");
    std::fs::remove_dir_all(&raw).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
#[ignore = "slow tier: .ci/run runs it (cargo test -- --include-ignored)"]
fn a_corrupt_compressed_lower_level_stops_the_build_with_its_name() {
    let rules = Rules::Awari;
    let plain = Levels::open(reference(rules), Some(rules)).unwrap();
    let dir = temp("lower-damaged");
    let lower: Vec<u32> = (0..=15).collect();
    compress_db(&plain, &dir, &lower, Form::SelfContained, &Silent, |_| {}).unwrap();
    damage(&compressed_path(&dir, 13));
    let opts = BuildOptions {
        dir: dir.clone(),
        max_stones: 15,
        rules,
        memory: None,
        depth: false,
        mode: Mode::InMemory,
        compress: false,
        depth_form: Default::default(),
    };
    // Levels 0..15 are present; the build checks the lower levels it will read first.
    let err = build(
        &BuildOptions {
            max_stones: 16,
            ..opts
        },
        &Silent,
        |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("level-13.cvalues") && err.contains("(corrupt file)"),
        "{err}"
    );
    assert!(!level_path(&dir, 16).exists());
    // The streamed check names it too.
    let levels = Levels::open(&dir, Some(rules)).unwrap();
    let v = verify_level_streamed(&levels, 13, 10, awari_db::level_size(13), &Silent).unwrap();
    assert!(!v.passed());
    let what = v.checksum.expect("a block error").to_string();
    assert!(what.contains("level 13, block"), "{what}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Flip one byte in the middle of a compressed table's data.
fn damage(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let data = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    let at = data + (bytes.len() - data) / 2;
    bytes[at] ^= 0x40;
    std::fs::write(path, &bytes).unwrap();
}
