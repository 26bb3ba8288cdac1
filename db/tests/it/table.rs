//! The table file: round trip, checksum, and the errors a corrupt or mismatched file gives.

use std::fs;
use std::path::PathBuf;

use awari_db::{level_size, write_table, Content, Expect, Header, Rules, Table, TableError};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("awari-db-test-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn sample(seeds: u32) -> Vec<u8> {
    (0..level_size(seeds))
        .map(|i| (i % 25) as i8 as u8 ^ (i >> 7) as u8)
        .collect()
}

fn expect(rules: Rules, seeds: u32) -> Expect {
    Expect {
        rules: Some(rules),
        seeds: Some(seeds),
        content: Some(Content::Values),
    }
}

#[test]
fn round_trip() {
    let d = dir("round");
    for seeds in [0u32, 1, 6, 9] {
        let data = sample(seeds);
        let path = d.join(format!("level-{seeds}"));
        let h = write_table(&path, Header::values(Rules::Abapa, seeds), &data).unwrap();
        assert!(!awari_db::table::tmp_path(&path).exists());
        let t = Table::open(&path, expect(Rules::Abapa, seeds)).unwrap();
        assert_eq!(t.header(), &h);
        assert_eq!(t.plain().unwrap(), &data[..]);
        assert_eq!(t.header().checksum, awari_db::checksum(&data));
        t.verify().unwrap();
        for i in [0, level_size(seeds) - 1] {
            assert_eq!(t.value(i).unwrap(), data[i as usize] as i8);
        }
    }
}

#[test]
fn checksum_spans_chunks() {
    // Level 12 is 1.3 MB; use a large synthetic buffer to cross the 4 MiB chunk boundary.
    let a = vec![3u8; 9 << 20];
    let mut b = a.clone();
    b[(4 << 20) + 17] ^= 1;
    assert_ne!(awari_db::checksum(&a), awari_db::checksum(&b));
    let mut w = awari_db::TableWriter::create(
        dir("chunks").join("t"),
        Header {
            entries: level_size(13),
            ..Header::values(Rules::Awari, 13)
        },
    )
    .unwrap();
    let data: Vec<u8> = (0..level_size(13)).map(|i| (i * 31 % 97) as u8).collect();
    // Written in odd-sized pieces, the checksum is that of the whole.
    for piece in data.chunks(1_000_003) {
        w.write(piece).unwrap();
    }
    let h = w.finish().unwrap();
    assert_eq!(h.checksum, awari_db::checksum(&data));
}

#[test]
fn flipped_byte_fails_verification() {
    let d = dir("flip");
    let path = d.join("level-9");
    write_table(&path, Header::values(Rules::Awari, 9), &sample(9)).unwrap();
    let mut bytes = fs::read(&path).unwrap();
    bytes[64 + 1234] ^= 0x10;
    fs::write(&path, &bytes).unwrap();
    let t = Table::open(&path, expect(Rules::Awari, 9)).expect("header and length are fine");
    let err = t.verify().unwrap_err();
    assert!(matches!(err, TableError::BadChecksum { .. }));
    let msg = err.to_string();
    assert!(msg.contains("level-9") && msg.contains("checksum"), "{msg}");
}

#[test]
fn bad_files_fail_to_open_with_clear_messages() {
    let d = dir("bad");
    let path = d.join("level-6");
    write_table(&path, Header::values(Rules::Awari, 6), &sample(6)).unwrap();
    let good = fs::read(&path).unwrap();

    // Wrong magic.
    let mut bytes = good.clone();
    bytes[0] = b'X';
    fs::write(&path, &bytes).unwrap();
    let msg = Table::open(&path, expect(Rules::Awari, 6))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("level-6") && msg.contains("magic") && msg.contains("expected"),
        "{msg}"
    );

    // Wrong rule set asked for.
    fs::write(&path, &good).unwrap();
    let msg = Table::open(&path, expect(Rules::GrandSlam, 6))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("level-6")
            && msg.contains("rule set")
            && msg.contains("grand-slam")
            && msg.contains("awari"),
        "{msg}"
    );

    // Wrong level asked for.
    let msg = Table::open(&path, expect(Rules::Awari, 7))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("seed count") && msg.contains('7'), "{msg}");

    // Truncated.
    fs::write(&path, &good[..good.len() - 1]).unwrap();
    let err = Table::open(&path, expect(Rules::Awari, 6)).unwrap_err();
    assert!(matches!(err, TableError::BadLength { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("level-6") && msg.contains(&good.len().to_string()),
        "{msg}"
    );

    // Shorter than a header.
    fs::write(&path, &good[..10]).unwrap();
    assert!(Table::open(&path, Expect::default()).is_err());

    // Missing.
    let msg = Table::open(d.join("nope"), Expect::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("nope"), "{msg}");
}

#[test]
fn raw_scores_file() {
    let d = dir("raw");
    let data = sample(8);
    let path = d.join("scores.8");
    fs::write(&path, &data).unwrap();
    let t = Table::open_raw(&path, 8).unwrap();
    assert!(t.is_raw());
    assert_eq!(t.plain().unwrap(), &data[..]);
    assert_eq!(t.header().rules, Rules::Awari);
    t.verify().unwrap();
    let err = Table::open_raw(&path, 9).unwrap_err();
    assert!(matches!(err, TableError::BadLength { .. }));
}

/// Every header byte but the reserved ones is covered by the header's own checksum, checked
/// on open: a values table whose content byte turns into "depth" (a change every field check
/// accepts, found by the property test) is an error, as is a flip anywhere in bytes 0..56.
/// A table from before the header checksum (zero there) still opens.
#[test]
fn a_flipped_header_byte_is_an_error_on_open() {
    let d = dir("header");
    let path = d.join("level-05.values");
    let data = sample(5);
    write_table(&path, Header::values(Rules::Awari, 5), &data).unwrap();
    let good = fs::read(&path).unwrap();
    for at in 0..56 {
        for xor in [1u8, 0x80] {
            let mut bytes = good.clone();
            bytes[at] ^= xor;
            fs::write(&path, &bytes).unwrap();
            assert!(
                Table::open(&path, Expect::default()).is_err(),
                "byte {at} ^ {xor:#x} opened"
            );
        }
    }
    let mut bytes = good.clone();
    bytes[14] ^= 1;
    fs::write(&path, &bytes).unwrap();
    let e = Table::open(&path, Expect::default()).err().unwrap();
    assert!(e.to_string().contains("header checksum"), "{e}");
    // Written before the header checksum: zero there, opened and read as before.
    let mut old = good.clone();
    old[48..56].fill(0);
    fs::write(&path, &old).unwrap();
    let t = Table::open(&path, expect(Rules::Awari, 5)).unwrap();
    t.verify().unwrap();
    assert_eq!(t.value(7).unwrap(), data[7] as i8);
    fs::remove_dir_all(&d).unwrap();
}

/// The first ```text block of a source file's module documentation (`//!` lines).
fn module_doc_text_block(source: &str) -> String {
    let mut out = Vec::new();
    let mut inside = false;
    for line in source.lines().take_while(|l| l.starts_with("//!")) {
        let text = line.strip_prefix("//! ").unwrap_or(&line[3..]);
        if !inside {
            inside = text.starts_with("```text");
        } else if text.starts_with("```") {
            return out.join("\n");
        } else {
            out.push(text);
        }
    }
    panic!("no ```text block in the module documentation");
}

/// docs/format.md shows the two table headers' offset tables exactly as the code documents
/// them (the code's are the definition; a change to one must be made to the other).
#[test]
fn the_format_doc_shows_the_code_offset_tables() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("../docs/format.md")).unwrap();
    for source in ["src/table.rs", "src/compressed.rs"] {
        let table = module_doc_text_block(&std::fs::read_to_string(root.join(source)).unwrap());
        assert!(table.lines().count() > 10, "{source}: {table}");
        assert!(
            doc.contains(&format!("```text\n{table}\n```")),
            "docs/format.md does not show {source}'s table of offsets as it is:\n{table}"
        );
    }
}
