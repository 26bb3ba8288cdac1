//! The compressed table format: round trips of synthetic levels, and every kind of damage
//! (a flipped data byte, a bad index entry, a truncated file, a wrong header or model) is a
//! clear error, never a wrong value.

use std::path::{Path, PathBuf};

use awari_db::compressed::{self, compress, Form, Layout, BLOCK};
use awari_db::{level_size, Expect, Rules, SplitMix64, Table, TableError};

use crate::common::temp_created;

/// Values of level `n` drawn from a skewed distribution over −n..n (runs and rare extremes,
/// as real levels have), reproducibly.
fn synthetic(n: u32, seed: u64) -> Vec<u8> {
    let mut rng = SplitMix64(seed);
    let mut prev = 0i32;
    (0..level_size(n))
        .map(|_| {
            let r = rng.below(100);
            let v = if r < 40 {
                prev
            } else if r < 95 {
                (rng.below(5) as i32 - 2).clamp(-(n as i32), n as i32)
            } else {
                rng.below(2 * u64::from(n) + 1) as i32 - n as i32
            };
            prev = v;
            v as i8 as u8
        })
        .collect()
}

fn write(path: &Path, rules: Rules, n: u32, values: &[u8]) -> compressed::CompressedSize {
    compress(
        path,
        rules,
        n,
        &|from, buf| {
            buf.copy_from_slice(&values[from as usize..from as usize + buf.len()]);
            Ok(())
        },
        None,
        &|_, _| {},
    )
    .unwrap()
}

/// Level `n`'s `values` in the probe form of `layout`, each entry free up to its `ceilings`
/// entry (or [`compressed::FIXED`]), to `path`.
fn write_probe(
    path: &Path,
    layout: Layout,
    rules: Rules,
    n: u32,
    values: &[u8],
    ceilings: &[i8],
) -> compressed::CompressedSize {
    compressed::compress_as(
        layout,
        path,
        rules,
        n,
        &|from, buf| {
            buf.copy_from_slice(&values[from as usize..from as usize + buf.len()]);
            Ok(())
        },
        Some(&|from, _, out| {
            out.copy_from_slice(&ceilings[from as usize..from as usize + out.len()]);
            Ok(())
        }),
        &|_, _| {},
    )
    .unwrap()
}

/// Ceilings of `values` as a probe form's capture search might give them: about a third of
/// the entries free up to their own value (drawn from `seed`), the others fixed.
fn free_at_value(values: &[u8], seed: u64) -> Vec<i8> {
    let mut rng = SplitMix64(seed);
    values
        .iter()
        .map(|&v| match rng.below(3) {
            0 => v as i8,
            _ => compressed::FIXED,
        })
        .collect()
}

fn open(path: &Path) -> Result<Table, TableError> {
    Table::open(path, Expect::default())
}

/// Reads go through each thread's decoded segments: a table opened in place of another (the
/// same level, other values, in the same thread and while the first is still open) reads its
/// own values, never the segments decoded from the first; and a damaged block read again after
/// a good one of the same table is still an error.
#[test]
fn decoded_segments_answer_only_for_their_own_table() {
    let d = temp_created("decoded-segments");
    let n = 9;
    let path = d.join("level-09.cvalues");
    let a = synthetic(n, 1);
    let b: Vec<u8> = a.iter().map(|&v| (-(v as i8)) as u8).collect();
    assert_ne!(a, b);
    write(&path, Rules::Awari, n, &a);
    let first = open(&path).unwrap();
    let size = a.len() as u64;
    for i in (0..size).step_by(7).chain(0..size) {
        assert_eq!(first.value(i).unwrap(), a[i as usize] as i8, "entry {i}");
    }
    let other = d.join("other.cvalues");
    write(&other, Rules::Awari, n, &b);
    std::fs::rename(&other, &path).unwrap();
    let second = open(&path).unwrap();
    for i in 0..size {
        assert_eq!(second.value(i).unwrap(), b[i as usize] as i8, "entry {i}");
        assert_eq!(first.value(i).unwrap(), a[i as usize] as i8, "entry {i}");
    }
    // A damaged last block: its entries are errors however often they are read, while the
    // first block, read before, still answers.
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() - 40;
    bytes[at] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let damaged = open(&path).unwrap();
    assert_eq!(damaged.value(0).unwrap(), b[0] as i8);
    for _ in 0..3 {
        assert!(damaged.value(size - 1).is_err());
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_probe_form_stores_each_value_or_something_up_to_its_ceiling() {
    let d = temp_created("probe-form");
    let cases = [(1, Rules::Abapa), (7, Rules::Awari), (11, Rules::GrandSlam)];
    // Segments of 256 (the default) and of 128 (probes twice as fast).
    let layouts = [
        Form::CaptureDontCares.into(),
        Form::CaptureDontCares.with_segment_log2(compressed::PROBE_SEGMENT_LOG2),
    ];
    for (layout, (n, rules)) in layouts
        .into_iter()
        .flat_map(|f: Layout| cases.map(|c| (f, c)))
    {
        let form = layout.form;
        let values = synthetic(n, 7 + u64::from(n));
        // About a third free: up to the value itself (a capture don't-care) or anything (a
        // terminal position), as the compressor's capture search would say.
        let mut rng = SplitMix64(5);
        let ceilings: Vec<i8> = values
            .iter()
            .map(|&v| match rng.below(6) {
                0 | 1 => v as i8,
                2 => n as i8,
                _ => compressed::FIXED,
            })
            .collect();
        let path = d.join(format!("level-{n:02}.cvalues"));
        let size = write_probe(&path, layout, rules, n, &values, &ceilings);
        let t = open(&path).unwrap();
        assert!(t.is_compressed() && t.is_probe_form());
        assert_eq!(t.compressed_form(), Some(form));
        assert_eq!(t.compressed_layout(), Some(layout));
        assert_eq!(t.file_len(), size.bytes);
        t.verify().unwrap();
        t.check_blocks().unwrap();
        let mut free = 0;
        for (i, (&v, &top)) in values.iter().zip(&ceilings).enumerate() {
            let s = t.stored(i as u64).unwrap();
            if top == compressed::FIXED {
                assert_eq!(s, v as i8, "level {n} entry {i}");
            } else {
                assert!(
                    s <= top && s >= -(n as i8),
                    "level {n} entry {i}: {s} > {top}"
                );
                free += usize::from(s != v as i8);
            }
        }
        // The encoder used the freedom, and a lone read of the table is refused.
        assert!(n < 2 || free > 0, "{form:?} level {n}");
        let refused = t.value(0).unwrap_err();
        assert!(matches!(refused, TableError::ProbeForm { seeds, .. } if seeds == n));
        assert!(refused.to_string().contains("probe form"), "{refused}");
        assert!(t.read(0..1, &mut Vec::new()).is_err());
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn round_trips_every_value_and_range() {
    let d = temp_created("round-trip");
    for (n, rules) in [
        (0, Rules::Awari),
        (1, Rules::Abapa),
        (2, Rules::GrandSlam),
        (7, Rules::Awari),
        (11, Rules::Abapa),
    ] {
        let values = synthetic(n, u64::from(n));
        let path = d.join(format!("level-{n:02}.cvalues"));
        let size = write(&path, rules, n, &values);
        let t = open(&path).unwrap();
        assert!(t.is_compressed());
        assert_eq!(t.header().rules, rules);
        assert_eq!(t.header().seeds, n);
        assert_eq!(t.header().entries, values.len() as u64);
        assert_eq!(t.file_len(), size.bytes);
        t.verify().unwrap();
        t.check_blocks().unwrap();
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(t.value(i as u64).unwrap(), v as i8, "level {n} entry {i}");
        }
        // Ranges that start and end inside segments and blocks, and cross them.
        let len = values.len() as u64;
        let mut rng = SplitMix64(99 + u64::from(n));
        let mut buf = Vec::new();
        for _ in 0..200 {
            let a = rng.below(len);
            let b = (a + rng.below(3 * BLOCK as u64)).min(len);
            assert_eq!(
                t.read(a..b, &mut buf).unwrap(),
                &values[a as usize..b as usize]
            );
        }
        assert_eq!(t.read(0..len, &mut buf).unwrap(), &values[..]);
        // No tmp file is left behind.
        assert!(!d.join(format!("level-{n:02}.cvalues.tmp")).exists());
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_out_of_range_value_is_refused() {
    let d = temp_created("range");
    let mut values = synthetic(6, 1);
    values[1000] = 7; // level 6 values are −6..6
    let err = compress(
        &d.join("level-06.cvalues"),
        Rules::Awari,
        6,
        &|from, buf| {
            buf.copy_from_slice(&values[from as usize..from as usize + buf.len()]);
            Ok(())
        },
        None,
        &|_, _| {},
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("value") && err.contains("entry 1000"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// A level-9 table, its values, and its bytes.
fn sample(d: &Path) -> (PathBuf, Vec<u8>, Vec<u8>) {
    let values = synthetic(9, 5);
    let path = d.join("level-09.cvalues");
    write(&path, Rules::Awari, 9, &values);
    let bytes = std::fs::read(&path).unwrap();
    (path, values, bytes)
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

#[test]
fn a_corrupt_block_is_an_error_naming_the_level_and_block() {
    let d = temp_created("block-flip");
    let (path, values, mut bytes) = sample(&d);
    let data = u64_at(&bytes, 40) as usize;
    let in_block = 5 * BLOCK as u64 + 17;
    assert_eq!(
        open(&path).unwrap().value(in_block).unwrap(),
        values[in_block as usize] as i8
    );
    // A byte of block 5: where it starts is in the index record of group 0.
    let index = u64_at(&bytes, 32) as usize;
    let start = u16::from_le_bytes([bytes[index + 8 + 2 * 5], bytes[index + 9 + 2 * 5]]) as usize;
    bytes[data + start + 3] ^= 0x10;
    let bad = d.join("bad.cvalues");
    std::fs::write(&bad, &bytes).unwrap();
    let t = open(&bad).expect("opening is cheap and does not read blocks");
    let err = t.value(in_block).unwrap_err().to_string();
    assert!(
        err.contains("level 9, block 5") && err.contains("(corrupt file)"),
        "{err}"
    );
    // Still an error at the next decode: a failed block is never remembered as checked.
    assert!(t.value(in_block).is_err());
    let err = t.check_blocks().unwrap_err().to_string();
    assert!(err.contains("block 5"), "{err}");
    assert!(t.verify().is_err());
    // Every other block still reads, and correctly.
    for i in (0..values.len() as u64).step_by(97) {
        if i / BLOCK as u64 != 5 {
            assert_eq!(t.value(i).unwrap(), values[i as usize] as i8);
        }
    }
    let mut buf = Vec::new();
    assert!(t.read(0..values.len() as u64, &mut buf).is_err());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_bad_index_entry_is_an_error_not_a_wrong_value() {
    let d = temp_created("index");
    let (_, values, bytes) = sample(&d);
    let index = u64_at(&bytes, 32) as usize;
    // Each kind of index field of group 1: base offset, block start, checksum, segment length.
    let record = index + compressed::GROUP_RECORD;
    for (field, offset) in [
        ("base", 0),
        ("start", 8 + 2),
        ("checksum", 24 + 4),
        ("length", 56 + 9),
    ] {
        let mut b = bytes.clone();
        b[record + offset] ^= 0x01;
        let path = d.join(format!("{field}.cvalues"));
        std::fs::write(&path, &b).unwrap();
        let t = open(&path).unwrap();
        // Every value of group 1 either errors or is right: never a wrong value.
        let group = compressed::GROUP as u64;
        let mut errors = 0;
        for i in group..(2 * group).min(values.len() as u64) {
            match t.value(i) {
                Ok(v) => assert_eq!(v, values[i as usize] as i8, "{field}: entry {i}"),
                Err(e) => {
                    errors += 1;
                    // The index's hash is checked before any block (version 4).
                    assert!(e.to_string().contains("index does not match"), "{e}");
                }
            }
        }
        assert!(errors > 0, "{field}: the damage was noticed");
        assert!(t.check_blocks().is_err(), "{field}");
    }
    // A base offset far past the end (no overflow, no panic: an error).
    let mut b = bytes.clone();
    b[record..record + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    let path = d.join("far.cvalues");
    std::fs::write(&path, &b).unwrap();
    let err = open(&path)
        .unwrap()
        .value(compressed::GROUP as u64)
        .unwrap_err()
        .to_string();
    assert!(err.contains("index does not match"), "{err}");
    // Two segment lengths of a block changed, their sum kept (so the block's own checksum
    // still holds): the index's hash refuses it, where a wrong value would have followed.
    let mut b = bytes.clone();
    let lengths = record + 56;
    assert!(b[lengths] > 0 && b[lengths + 1] < 255);
    b[lengths] -= 1;
    b[lengths + 1] += 1;
    let path = d.join("lengths.cvalues");
    std::fs::write(&path, &b).unwrap();
    let t = open(&path).unwrap();
    for i in [0, compressed::GROUP as u64] {
        let err = t.value(i).unwrap_err().to_string();
        assert!(err.contains("index does not match"), "{err}");
    }
    // A version-3 table (its last 8 bytes zero): the whole file's checksum, once.
    let mut v3 = b.clone();
    v3[8..12].copy_from_slice(&3u32.to_le_bytes());
    let model_end = u64_at(&v3, 32) as usize;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(&v3[8..48]);
    hasher.update(&v3[64..model_end]);
    v3[56..64].copy_from_slice(&hasher.digest().to_le_bytes());
    std::fs::write(&path, &v3).unwrap();
    let err = open(&path).unwrap().value(0).unwrap_err().to_string();
    assert!(err.contains("does not match its checksum"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// Level `n`'s made-up values with a third of them free, in the probe form of `layout`: the
/// file's bytes and the values it stores.
fn probe_form_bytes(d: &Path, n: u32, layout: Layout) -> (Vec<u8>, Vec<i8>) {
    let values = synthetic(n, 3);
    let ceilings = free_at_value(&values, 4);
    let path = d.join(format!("level-{n:02}.cvalues"));
    write_probe(&path, layout, Rules::Awari, n, &values, &ceilings);
    let t = open(&path).unwrap();
    let stored = (0..values.len() as u64)
        .map(|i| t.stored(i).unwrap())
        .collect();
    (std::fs::read(&path).unwrap(), stored)
}

/// The model checksum of format versions 2 and 3 covers the header, so a segment length
/// changed to the other one its coder allows is refused on open; a version-2 table (the same
/// bytes but the version and so that checksum) and a version-1 table (whose checksum covers
/// the model alone, as before) still read, with the segment lengths version 1 had.
#[test]
fn version_1_and_2_tables_still_read_and_a_changed_segment_length_is_refused() {
    let d = temp_created("versions");
    let short = Form::CaptureDontCares.with_segment_log2(compressed::PROBE_SEGMENT_LOG2);
    let refused = |name: &str, b: &[u8], needle: &str| {
        let path = d.join(format!("{name}.cvalues"));
        std::fs::write(&path, b).unwrap();
        let err = open(&path).unwrap_err().to_string();
        assert!(err.contains(needle), "{name}: {err}");
    };
    // Level 5 is one index group either way: only the checksum tells the lengths apart.
    let (long_bytes, _) = probe_form_bytes(&d, 5, Form::CaptureDontCares.into());
    assert_eq!(u32::from_le_bytes(long_bytes[8..12].try_into().unwrap()), 4);
    assert_eq!(long_bytes[15], compressed::LONG_SEGMENT_LOG2);
    let mut b = long_bytes.clone();
    b[15] = compressed::PROBE_SEGMENT_LOG2;
    refused("shortened", &b, "checksum mismatch");
    let (mut b, _) = probe_form_bytes(&d, 5, short);
    b[15] = compressed::LONG_SEGMENT_LOG2;
    refused("lengthened", &b, "checksum mismatch");

    let (bytes, stored) = probe_form_bytes(&d, 9, short);
    let model_end = u64_at(&bytes, 32) as usize;
    let reads_as_written = |b: &[u8]| {
        let path = d.join("level-09.cvalues");
        std::fs::write(&path, b).unwrap();
        let t = open(&path).unwrap();
        assert_eq!(t.compressed_layout(), Some(short));
        t.verify().unwrap();
        t.check_blocks().unwrap();
        for (i, &s) in stored.iter().enumerate() {
            assert_eq!(t.stored(i as u64).unwrap(), s, "entry {i}");
        }
    };
    // The same table as version 2 wrote it: the version, and the checksum over it.
    let mut v2 = bytes.clone();
    v2[8..12].copy_from_slice(&2u32.to_le_bytes());
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(&v2[8..48]);
    hasher.update(&v2[64..model_end]);
    v2[56..64].copy_from_slice(&hasher.digest().to_le_bytes());
    assert_ne!(
        v2[56..64],
        bytes[56..64],
        "the version is under the checksum"
    );
    reads_as_written(&v2);
    // And as version 1 wrote it: the version, and the model's own checksum.
    let mut v1 = bytes.clone();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    let sum = xxhash_rust::xxh3::xxh3_64(&v1[64..model_end]);
    v1[56..64].copy_from_slice(&sum.to_le_bytes());
    reads_as_written(&v1);
    // Version 1 never had segments of 256.
    let mut b = v1.clone();
    b[15] = compressed::LONG_SEGMENT_LOG2;
    refused("v1-long", &b, "values per segment");
    std::fs::remove_dir_all(&d).unwrap();
}

/// Tables of coders 2 and 3 (the Huffman coders of the probe form and of depths, which
/// versions 1 and 2 wrote) are refused on open, in any version, with one line naming the
/// coder and how to write the level again; an unknown coder is still a plain mismatch.
#[test]
fn a_table_of_a_retired_coder_is_refused_with_how_to_write_it_again() {
    let d = temp_created("retired");
    // A real header in segments of 128, as coders 2 and 3 had, with only its coder changed.
    let short = Form::CaptureDontCares.with_segment_log2(compressed::PROBE_SEGMENT_LOG2);
    let (bytes, _) = probe_form_bytes(&d, 9, short);
    assert_eq!(bytes[14], compressed::CODER_RANS_CONTEXTS);
    assert!(open(&d.join("level-09.cvalues")).is_ok());
    for version in 1u32..=3 {
        for (coder, name, remedy) in [
            (
                2u8,
                "level-09.cvalues",
                "awari-solver compress --probe --stones 9",
            ),
            (3, "level-09.cdepth", "awari-solver depth --stones 9"),
        ] {
            let mut b = bytes.clone();
            b[8..12].copy_from_slice(&version.to_le_bytes());
            b[14] = coder;
            let path = d.join(name);
            std::fs::write(&path, &b).unwrap();
            let err = open(&path).unwrap_err();
            assert!(
                matches!(err, TableError::RetiredCoder { coder: c, seeds: 9, .. } if c == coder),
                "version {version}, coder {coder}: {err:?}"
            );
            let line = awari_db::one_line(&err);
            assert!(!line.contains('\n'), "{line}");
            assert!(
                line.contains(&format!("coder {coder}, which is no longer read"))
                    && line.contains(remedy),
                "{line}"
            );
            // The header alone says it: nothing after it is read.
            std::fs::write(&path, &b[..compressed::HEADER_LEN]).unwrap();
            assert!(matches!(
                open(&path).unwrap_err(),
                TableError::RetiredCoder { .. }
            ));
            std::fs::remove_file(&path).unwrap();
        }
    }
    // A directory holding one: its open says the same.
    let mut b = bytes.clone();
    b[14] = 2;
    std::fs::write(d.join("level-09.cvalues"), &b).unwrap();
    let err = awari_db::Levels::open(&d, None).unwrap_err().to_string();
    assert!(err.contains("coder 2, which is no longer read"), "{err}");
    // A coder that never was is another error.
    let mut b = bytes.clone();
    b[14] = 6;
    std::fs::write(d.join("level-09.cvalues"), &b).unwrap();
    let err = open(&d.join("level-09.cvalues")).unwrap_err();
    assert!(
        matches!(err, TableError::Mismatch { field: "coder", .. }),
        "{err:?}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// A segment of more than 255 bytes (256 entries of nearly 8 bits: uniform depths) puts its
/// block's lengths at the head of its data (a wide block): the depths read back whole, from
/// anywhere and one at a time, and a damaged length there is an error, never a wrong depth.
#[test]
fn a_wide_block_holds_segments_of_more_than_255_bytes() {
    let d = temp_created("wide");
    let n = 12;
    let size = level_size(n) as usize;
    let mut rng = SplitMix64(8);
    // All won by 1: the contexts are few, so the model is near uniform over 256 depths.
    let values = vec![1i8; size];
    let depths: Vec<u8> = (0..size).map(|_| rng.below(256) as u8).collect();
    let path = d.join("level-12.cdepth");
    compressed::compress_depth(
        &path,
        Rules::Awari,
        n,
        255,
        &|from, buf| {
            buf.copy_from_slice(&depths[from as usize..from as usize + buf.len()]);
            Ok(())
        },
        &|_, buf| {
            buf.fill(1);
            Ok(())
        },
        &|_, _| {},
    )
    .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    // Block 0's start in group 0's record: bit 15 marks it wide.
    let index = u64_at(&bytes, 32) as usize;
    let rel = u16::from_le_bytes([bytes[index + 8], bytes[index + 9]]);
    assert!(rel & 0x8000 != 0, "block 0 is wide");
    let read = |t: &Table, from: u64, len: usize| -> Result<Vec<u16>, TableError> {
        let context = t.depth_context(from..from + len as u64);
        let v = &values[context.start as usize..context.end as usize];
        let mut got = vec![0u16; len];
        t.read_depths(from, &mut got, v).map(|()| got)
    };
    let t = open(&path).unwrap();
    t.verify().unwrap();
    let all = read(&t, 0, size).unwrap();
    assert!(all.iter().zip(&depths).all(|(&a, &b)| a == u16::from(b)));
    for _ in 0..200 {
        let from = rng.below(size as u64);
        let len = (1 + rng.below(600) as usize).min(size - from as usize);
        let got = read(&t, from, len).unwrap();
        for (k, &g) in got.iter().enumerate() {
            assert_eq!(
                g,
                u16::from(depths[from as usize + k]),
                "entry {}",
                from as usize + k
            );
        }
    }
    drop(t);
    // Each byte of block 0's lengths flipped: an error, or the right depths.
    let data = u64_at(&bytes, 40) as usize;
    for k in 0..16 {
        let mut b = bytes.clone();
        b[data + k] ^= 0x04;
        let bad = d.join("bad.cdepth");
        std::fs::write(&bad, &b).unwrap();
        let t = open(&bad).unwrap();
        for from in [0, 300, 1000, 2047] {
            if let Ok(got) = read(&t, from, 1) {
                assert_eq!(
                    got[0],
                    u16::from(depths[from as usize]),
                    "byte {k}, entry {from}"
                );
            }
        }
        assert!(read(&t, 0, 2048).is_err(), "byte {k}: block 0 is refused");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn truncated_and_wrong_headers_are_refused_on_open() {
    let d = temp_created("header");
    let (_, _, bytes) = sample(&d);
    let case = |name: &str, b: &[u8], needle: &str| {
        let path = d.join(format!("{name}.cvalues"));
        std::fs::write(&path, b).unwrap();
        let err = open(&path).unwrap_err().to_string();
        assert!(err.contains(needle), "{name}: {err}");
    };
    case("truncated", &bytes[..bytes.len() - 20], "wrong length");
    case(
        "short",
        &bytes[..40],
        "too short (40 bytes, a header is 64)",
    );
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0; 5]);
    case("longer", &longer, "wrong length");
    let mut b = bytes.clone();
    b[3] ^= 1;
    // Neither magic: the compressed one is named, as the file's name promises.
    case(
        "magic",
        &b,
        r#"bad magic: expected "AWARICV\x1a", got "AWASICV\x1a""#,
    );
    let mut b = bytes.clone();
    b[8] = 9;
    case("version", &b, "format version 9");
    let mut b = bytes.clone();
    b[16] = 10;
    case("seeds", &b, "mismatch");
    let mut b = bytes.clone();
    b[15] = 8;
    case("segment", &b, "values per segment");
    let mut b = bytes.clone();
    b[64 + 3] ^= 1;
    case("model", &b, "checksum mismatch");
    // What the caller expects is checked too.
    let path = d.join("level-09.cvalues");
    let err = Table::open(
        &path,
        Expect {
            rules: Some(Rules::Abapa),
            ..Expect::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("rule set mismatch"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_estimate_is_the_size_where_the_sample_is_the_whole_level_and_near_it_elsewhere() {
    // Levels 11 (every group sampled, both forms) and 17 (every second group of the
    // self-contained form).
    estimate_against_size(
        "estimate",
        &[(11, false, true), (11, true, true), (17, false, false)],
    );
}

/// Level 17 in the probe form (every one of its 8192-value groups sampled, in the encoder's
/// two batches): the slow tier's, for the probe form's search over 21 M entries.
#[test]
#[ignore = "slow tier: cargo test -- --include-ignored"]
fn an_estimate_of_a_level_of_two_batches_in_the_probe_form_is_its_size() {
    estimate_against_size("estimate-two-batches", &[(17, true, true)]);
}

/// Compress and estimate synthetic levels, each `(n, in the probe form, every group
/// sampled)`: the same entries, and the same bytes where every group is sampled, else within
/// half a percent but not the same.
fn estimate_against_size(name: &str, runs: &[(u32, bool, bool)]) {
    let d = temp_created(name);
    for &(n, probe, exact) in runs {
        let values = synthetic(n, 3 + u64::from(n));
        let ceilings = free_at_value(&values, 9);
        let read = |from: u64, buf: &mut [u8]| {
            buf.copy_from_slice(&values[from as usize..from as usize + buf.len()]);
            Ok(())
        };
        let free = |from: u64, _: &[u8], out: &mut [i8]| {
            out.copy_from_slice(&ceilings[from as usize..from as usize + out.len()]);
            Ok(())
        };
        let free: Option<&compressed::ReadFreedom<'_>> = if probe { Some(&free) } else { None };
        let path = d.join(format!("level-{n:02}-{probe}.cvalues"));
        let real = compress(&path, Rules::Awari, n, &read, free, &|_, _| {}).unwrap();
        let estimate =
            compressed::estimate(&path, Rules::Awari, n, &read, free, &|_, _| {}).unwrap();
        assert_eq!(estimate.entries, real.entries);
        if exact {
            assert_eq!(estimate.bytes, real.bytes, "level {n}, probe form {probe}");
        } else {
            let ratio = estimate.bytes as f64 / real.bytes as f64;
            assert!((ratio - 1.0).abs() < 0.005, "level {n}: {ratio}");
            assert_ne!(
                estimate.bytes, real.bytes,
                "level {n}: a sample, not the level"
            );
        }
        std::fs::remove_file(&path).unwrap();
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// A flip of any header byte (1 or 0x80) is an error on open or verify, or the same values:
/// never a table that reads other values.
#[test]
fn a_flipped_header_byte_is_an_error_or_the_same_values() {
    let d = temp_created("header-flips");
    let (path, values, bytes) = sample(&d);
    let mut opened = 0;
    for at in 0..64 {
        for xor in [1u8, 2, 0x80] {
            let mut b = bytes.clone();
            b[at] ^= xor;
            std::fs::write(&path, &b).unwrap();
            let Ok(t) = open(&path) else { continue };
            if t.verify().is_err() {
                continue;
            }
            opened += 1;
            for (i, &v) in values.iter().enumerate() {
                match t.value(i as u64) {
                    Ok(got) => assert_eq!(got, v as i8, "byte {at} ^ {xor:#x}: entry {i}"),
                    Err(_) => break,
                }
            }
        }
    }
    // Only the bytes nothing reads may change unnoticed.
    assert!(opened <= 3, "{opened} damaged headers opened");
    std::fs::remove_dir_all(&d).unwrap();
}
