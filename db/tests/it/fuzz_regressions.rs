//! Inputs the fuzz targets (`fuzz/`, `scripts/fuzz.sh`) found to crash a reader, each kept as
//! a test once fixed: the reader must refuse them with an error, never panic.

use awari_db::compressed::{self, compress, CompressedHeader};
use awari_db::{level_size, Expect, SplitMix64, Table, TableError};

use crate::common::temp_created;

/// `fuzz/fuzz_targets/table_open.rs` found it: a compressed table whose last index record
/// starts its blocks near `u64::MAX` made the length check's error message overflow (a panic
/// where overflow is checked, as in the tests and the fuzz builds; a wrong expected length in
/// release). It is a `BadLength` error naming the file.
#[test]
fn a_last_block_starting_near_the_end_of_u64_is_a_length_error() {
    let d = temp_created("last-block");
    let n = 9;
    let mut rng = SplitMix64(3);
    let values: Vec<u8> = (0..level_size(n))
        .map(|_| (rng.below(7) as i8 - 3) as u8)
        .collect();
    let path = d.join("level-09.cvalues");
    compress(
        &path,
        awari_db::Rules::Awari,
        n,
        &|from, buf| {
            buf.copy_from_slice(&values[from as usize..from as usize + buf.len()]);
            Ok(())
        },
        None,
        &|_, _| {},
    )
    .unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let h = CompressedHeader::from_bytes(&path, &bytes[..compressed::HEADER_LEN]).unwrap();
    let groups = h.entries.div_ceil(h.layout().group() as u64);
    let last = (h.index_offset + (groups - 1) * compressed::GROUP_RECORD as u64) as usize;
    for base in [u64::MAX, u64::MAX - 100, u64::MAX / 2] {
        bytes[last..last + 8].copy_from_slice(&base.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        match Table::open(&path, Expect::default()) {
            Err(TableError::BadLength { path: p, .. }) => assert_eq!(p, path),
            other => panic!("base {base:#x}: {other:?}"),
        }
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// `fuzz/fuzz_targets/table_open.rs` found it: a compressed table whose index record holds a
/// block start near `u64::MAX` made the prefetch of an entry's segment overflow (a panic where
/// overflow is checked). A prefetch is a hint: it never panics, and the lookup after it is an
/// error.
#[test]
fn a_prefetch_through_a_damaged_index_never_panics() {
    let d = temp_created("prefetch");
    let n = 9;
    let mut rng = SplitMix64(5);
    let values: Vec<u8> = (0..level_size(n))
        .map(|_| (rng.below(7) as i8 - 3) as u8)
        .collect();
    let path = d.join("level-09.cvalues");
    compress(
        &path,
        awari_db::Rules::Awari,
        n,
        &|from, buf| {
            buf.copy_from_slice(&values[from as usize..from as usize + buf.len()]);
            Ok(())
        },
        None,
        &|_, _| {},
    )
    .unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let h = CompressedHeader::from_bytes(&path, &bytes[..compressed::HEADER_LEN]).unwrap();
    // The first group's base offset: every block of it then starts near the end of u64.
    let first = h.index_offset as usize;
    bytes[first..first + 8].copy_from_slice(&(u64::MAX - 10).to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let t = Table::open(&path, Expect::default()).unwrap();
    for i in [0, 1, 100, 1000] {
        t.prefetch_value(i);
        t.prefetch_segment(i);
        assert!(t.value(i).is_err());
    }
    std::fs::remove_dir_all(&d).unwrap();
}
