//! Property tests (proptest): generated boards of any level up to 48, generated text and
//! generated damage to table files, each case shrunk to a smallest failing one.
//!
//! - the index is a bijection: every indexed board ranks inside its level and unranks back;
//! - un-moves invert moves: every quiet child lists its parent among its predecessors, and
//!   every capturing child lists it among its un-captures;
//! - board text never panics the parser, and what it accepts prints back the same;
//! - a values or depth table with any byte changed either fails to open, fails its checksum,
//!   or holds the same entries: never a panic, never a wrong value or depth that verifies;
//! - a compressed depth table with any byte changed either fails to open, or is an error where
//!   it is read, or reads the same depths: never a wrong depth;
//! - so does a compressed values table, in the probe form (segments of 256 and of 128) and
//!   the self-contained form: an error, or the values it stored.

use std::sync::OnceLock;

use awari_db::{compressed, level_size, write_table, Board, Expect, Header, Level, Rules, Table};

use proptest::prelude::*;

use crate::common::temp_created;

/// Compressed depth tables (the files' bytes, one per layout), their values and their depths.
type DepthSource = ([Vec<u8>; 2], Vec<i8>, Vec<u8>);

/// Compressed depth tables of level 9 with made-up values and depths (runs, a spread of
/// depths, 0 for every draw), in segments of 256 (what the depth pass writes) and of 128:
/// their files' bytes, the values and the depths.
fn cdepth_source() -> &'static DepthSource {
    static SOURCE: OnceLock<DepthSource> = OnceLock::new();
    SOURCE.get_or_init(|| {
        let n = 9;
        let size = level_size(n) as usize;
        let mut rng = awari_db::SplitMix64(9);
        let values: Vec<i8> = (0..size).map(|_| rng.below(19) as i8 - 9).collect();
        let depths: Vec<u8> = values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                if v == 0 {
                    0
                } else {
                    ((i / 50) % 37) as u8 + (i % 3) as u8
                }
            })
            .collect();
        let max = *depths.iter().max().unwrap();
        let dir = temp_created("prop-cd");
        let path = dir.join("level-09.cdepth");
        let short = compressed::Form::Depths.with_segment_log2(compressed::PROBE_SEGMENT_LOG2);
        let layouts = [compressed::Form::Depths.into(), short];
        let bytes = layouts.map(|layout: compressed::Layout| {
            compressed::compress_depth_as(
                layout,
                &path,
                Rules::Awari,
                n,
                max,
                &|from, buf| {
                    buf.copy_from_slice(&depths[from as usize..from as usize + buf.len()]);
                    Ok(())
                },
                &|from, buf| {
                    for (b, &v) in buf.iter_mut().zip(&values[from as usize..]) {
                        *b = v as u8;
                    }
                    Ok(())
                },
                &|_, _| {},
            )
            .unwrap();
            std::fs::read(&path).unwrap()
        });
        std::fs::remove_dir_all(&dir).unwrap();
        (bytes, values, depths)
    })
}

/// A plain table's header and its file's bytes.
type PlainSource = (Header, Vec<u8>);

/// A plain table and its file's bytes (as `write_table` writes them) of each level 0..=13,
/// values and depths (the same format, content 1), entry `i` holding `i % 7`: written once,
/// so that each case writes its damaged copy without the writer's fsync.
fn plain_sources() -> &'static Vec<[PlainSource; 2]> {
    static SOURCES: OnceLock<Vec<[PlainSource; 2]>> = OnceLock::new();
    SOURCES.get_or_init(|| {
        let dir = temp_created("prop-plain");
        let path = dir.join("level.values");
        let sources = (0..=13)
            .map(|level| {
                let size = level_size(level) as usize;
                let data: Vec<u8> = (0..size).map(|i| (i % 7) as u8).collect();
                [
                    Header::values(Rules::Awari, level),
                    Header::depth(Rules::Awari, level, 1),
                ]
                .map(|header| {
                    write_table(&path, header, &data).unwrap();
                    (header, std::fs::read(&path).unwrap())
                })
            })
            .collect();
        std::fs::remove_dir_all(&dir).unwrap();
        sources
    })
}

/// A compressed values table: its layout, its file's bytes and the values it stores.
type Source = (compressed::Layout, Vec<u8>, Vec<i8>);

/// Compressed values tables of level 9 with made-up values, a third of them free (a
/// ceiling at the value or anything), in the probe form (segments of 256 and of 128) and the
/// self-contained form: each file's bytes and the stored values it decodes to.
fn cvalues_sources() -> &'static Vec<Source> {
    static SOURCES: OnceLock<Vec<Source>> = OnceLock::new();
    SOURCES.get_or_init(|| {
        let n = 9;
        let size = level_size(n) as usize;
        let mut rng = awari_db::SplitMix64(11);
        let values: Vec<u8> = (0..size)
            .map(|i| (((i / 40) % 7) as i8 - 3 + rng.below(2) as i8) as u8)
            .collect();
        let ceilings: Vec<i8> = values
            .iter()
            .map(|&v| match rng.below(6) {
                0 => v as i8,
                1 => n as i8,
                _ => compressed::FIXED,
            })
            .collect();
        let dir = temp_created("prop-cv");
        let path = dir.join("level-09.cvalues");
        let read = |from: u64, buf: &mut [u8]| {
            buf.copy_from_slice(&values[from as usize..from as usize + buf.len()]);
            Ok(())
        };
        let free = |from: u64, _: &[u8], out: &mut [i8]| {
            out.copy_from_slice(&ceilings[from as usize..from as usize + out.len()]);
            Ok(())
        };
        use compressed::Form;
        let short = Form::CaptureDontCares.with_segment_log2(compressed::PROBE_SEGMENT_LOG2);
        let sources = [
            Form::CaptureDontCares.into(),
            short,
            Form::SelfContained.into(),
        ]
        .into_iter()
        .map(|layout: compressed::Layout| {
            let free: Option<&compressed::ReadFreedom<'_>> =
                layout.form.is_probe().then_some(&free);
            compressed::compress_as(layout, &path, Rules::Awari, n, &read, free, &|_, _| {})
                .unwrap();
            let t = Table::open(&path, Expect::default()).unwrap();
            let stored = (0..size as u64).map(|i| t.stored(i).unwrap()).collect();
            (layout, std::fs::read(&path).unwrap(), stored)
        })
        .collect();
        std::fs::remove_dir_all(&dir).unwrap();
        sources
    })
}

/// A board with at most 48 seeds, any spread (pits grow until the seeds run out).
fn board() -> impl Strategy<Value = Board> {
    (0u32..=48, prop::array::uniform12(0u32..=1000)).prop_map(|(seeds, weights)| {
        // Spread `seeds` over the pits in proportion to the weights, the rest to pit 0.
        let total: u32 = weights.iter().sum::<u32>().max(1);
        let mut pits = [0u8; 12];
        let mut left = seeds;
        for (p, w) in pits.iter_mut().zip(weights) {
            let k = (seeds * w / total).min(left);
            *p = k as u8;
            left -= k;
        }
        pits[0] += left as u8;
        Board::new(pits).expect("at most 48 seeds")
    })
}

fn rules() -> impl Strategy<Value = Rules> {
    prop::sample::select(Rules::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn the_index_is_a_bijection(b in board()) {
        let level = Level::new(b.seeds());
        match level.rank(&b) {
            Some(i) => {
                prop_assert!(i < level.size());
                prop_assert_eq!(level.unrank(i), b);
            }
            // Only a full opponent row is outside the level.
            None => prop_assert!(b.opponent_row_full()),
        }
    }

    #[test]
    fn unmoves_invert_moves(b in board(), rules in rules()) {
        for m in b.legal_moves(rules).iter() {
            if m.captures == 0 {
                prop_assert!(
                    m.child.predecessors(rules).contains(&(b, m.pit)),
                    "{}: {} pit {} → {} is not un-moved", rules, b, m.pit, m.child
                );
            } else {
                prop_assert!(
                    m.child.uncaptures(rules, m.captures).contains(&(b, m.pit)),
                    "{}: {} pit {} → {} (captures {}) is not un-captured",
                    rules, b, m.pit, m.child, m.captures
                );
            }
        }
    }

    #[test]
    fn board_text_never_panics(text in "\\PC{0,40}|[0-9 ,]{0,40}") {
        if let Ok(b) = Board::parse(&text) {
            prop_assert!(b.seeds() <= 48);
            prop_assert_eq!(Board::parse(&b.to_string()).unwrap(), b);
        }
    }

    #[test]
    fn a_damaged_table_is_an_error_or_the_same_values(
        offset in 0usize..(64 + 2464320),
        xor in 1u8..=255,
        level in 0u32..=13,
        depth in any::<bool>(),
    ) {
        let dir = temp_created("prop");
        let path = dir.join(format!("level-{level:02}.values"));
        let size = awari_db::level_size(level) as usize;
        let data: Vec<u8> = (0..size).map(|i| (i % 7) as u8).collect();
        let (header, bytes) = &plain_sources()[level as usize][usize::from(depth)];
        let header = *header;
        let mut bytes = bytes.clone();
        let offset = offset % bytes.len();
        bytes[offset] ^= xor;
        std::fs::write(&path, &bytes).unwrap();
        if let Ok(t) = Table::open(&path, Expect::default()) {
            if t.verify().is_ok() {
                // Only a header byte nothing reads (reserved) may change unnoticed.
                prop_assert_eq!(t.header().seeds, level);
                prop_assert_eq!(t.header().content, header.content);
                if depth {
                    let mut d = vec![0u16; size];
                    t.read_depths(0, &mut d, &[]).unwrap();
                    for i in 0..size {
                        prop_assert_eq!(d[i], u16::from(data[i]));
                    }
                } else {
                    for i in 0..size as u64 {
                        prop_assert_eq!(t.value(i).unwrap(), data[i as usize] as i8);
                    }
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_compressed_values_table_is_an_error_or_the_same_values(
        which in 0usize..3,
        offset in any::<usize>(),
        xor in 1u8..=255,
        start in any::<u64>(),
        len in 1usize..300,
    ) {
        let (layout, bytes, stored) = &cvalues_sources()[which];
        let dir = temp_created("prop-cvd");
        let path = dir.join("level-09.cvalues");
        let mut bytes = bytes.clone();
        let offset = offset % bytes.len();
        bytes[offset] ^= xor;
        std::fs::write(&path, &bytes).unwrap();
        if let Ok(t) = Table::open(&path, Expect::default()) {
            prop_assert_eq!(t.compressed_layout(), Some(*layout));
            // The whole table, a stretch from anywhere and one entry: an error, or what was
            // stored.
            let size = stored.len() as u64;
            let start = start % size;
            for (from, to) in [(0, size), (start, (start + len as u64).min(size))] {
                let mut got = vec![0u8; (to - from) as usize];
                if t.read_stored(from, &mut got).is_ok() {
                    for (k, &v) in got.iter().enumerate() {
                        let i = from as usize + k;
                        prop_assert_eq!(v as i8, stored[i], "{:?} entry {}", layout, i);
                    }
                }
            }
            if let Ok(v) = t.stored(start) {
                prop_assert_eq!(v, stored[start as usize]);
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_compressed_depth_table_is_an_error_or_the_same_depths(
        which in 0usize..2,
        offset in any::<usize>(),
        xor in 1u8..=255,
        start in any::<u64>(),
        len in 1usize..300,
    ) {
        let (files, values, depths) = cdepth_source();
        let bytes = &files[which];
        let dir = temp_created("prop-cdd");
        let path = dir.join("level-09.cdepth");
        let mut bytes = bytes.clone();
        let offset = offset % bytes.len();
        bytes[offset] ^= xor;
        std::fs::write(&path, &bytes).unwrap();
        if let Ok(t) = Table::open(&path, Expect::default()) {
            prop_assert_eq!(t.header().content, awari_db::Content::Depth);
            // The whole table, and a stretch from anywhere (its context from its segment's
            // start): an error, or the depths.
            let size = values.len() as u64;
            let start = start % size;
            for (from, to) in [(0, size), (start, (start + len as u64).min(size))] {
                let context = t.depth_context(from..to);
                let v = &values[context.start as usize..context.end as usize];
                let mut got = vec![0u16; (to - from) as usize];
                if t.read_depths(from, &mut got, v).is_ok() {
                    for (k, &d) in got.iter().enumerate() {
                        prop_assert_eq!(d, u16::from(depths[from as usize + k]), "entry {}", from as usize + k);
                    }
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
