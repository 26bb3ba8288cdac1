//! The table file: round trip, checksum, and the errors a corrupt or mismatched file gives.

use std::fs;

use awari_db::{level_size, write_table, Content, Expect, Header, Rules, Table, TableError};

use crate::common::temp_created;

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
    let d = temp_created("round");
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
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn checksum_spans_chunks() {
    // Level 12 is 1.3 MB; use a large synthetic buffer to cross the 4 MiB chunk boundary.
    let a = vec![3u8; 9 << 20];
    let mut b = a.clone();
    b[(4 << 20) + 17] ^= 1;
    assert_ne!(awari_db::checksum(&a), awari_db::checksum(&b));
    let d = temp_created("writer-chunks");
    let mut w = awari_db::TableWriter::create(
        d.join("t"),
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
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn flipped_byte_fails_verification() {
    let d = temp_created("flip");
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
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_files_fail_to_open_with_clear_messages() {
    let d = temp_created("bad");
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
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn raw_scores_file() {
    let d = temp_created("raw");
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
    fs::remove_dir_all(&d).unwrap();
}

/// Every header byte is checked on open: bytes 0..48 by the header's own checksum, which
/// catches a values table whose content byte turns into "depth" (a change every field check
/// accepts, found by the property test), the checksum itself, and the reserved bytes 56..64,
/// which must be zero. A version-2 table with no header checksum (zero there) is refused; a
/// version-1 table from before the header checksum still opens.
#[test]
fn a_flipped_header_byte_is_an_error_on_open() {
    let d = temp_created("flipped-header");
    let path = d.join("level-05.values");
    let data = sample(5);
    write_table(&path, Header::values(Rules::Awari, 5), &data).unwrap();
    let good = fs::read(&path).unwrap();
    for at in 0..64 {
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
    // Version 2 always has it: zero there is a damaged header.
    let mut zeroed = good.clone();
    zeroed[48..56].fill(0);
    fs::write(&path, &zeroed).unwrap();
    let e = Table::open(&path, Expect::default()).err().unwrap();
    assert!(e.to_string().contains("header checksum"), "{e}");
    // Version 1, written before the header checksum (zero there) and without chunk
    // digests: opened and read as before.
    let mut old = good[..64 + data.len()].to_vec();
    old[8..12].copy_from_slice(&1u32.to_le_bytes());
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

/// An empty or short file says how short it is, not "bad magic" over equal-looking bytes; a
/// compressed file's error names the compressed magic.
#[test]
fn short_files_and_magics_are_named_truly() {
    let d = temp_created("short");
    let path = d.join("level-06.values");
    write_table(&path, Header::values(Rules::Awari, 6), &sample(6)).unwrap();
    let good = fs::read(&path).unwrap();
    for len in [0usize, 5, 10, 63] {
        fs::write(&path, &good[..len]).unwrap();
        let e = Table::open(&path, Expect::default()).unwrap_err();
        assert!(matches!(e, TableError::TooShort { .. }), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("too short ({len} bytes, a header is 64)")),
            "{msg}"
        );
    }
    // Plain magic text, the unprintable byte escaped.
    let mut bytes = good.clone();
    bytes[0] = b'X';
    fs::write(&path, &bytes).unwrap();
    let msg = Table::open(&path, Expect::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains(r#"expected "AWARITB\x1a", got "XWARITB\x1a""#),
        "{msg}"
    );
    // A .cvalues or .cdepth file of neither magic: the compressed magic is expected.
    for name in ["level-06.cvalues", "level-06.cdepth"] {
        let c = d.join(name);
        fs::write(&c, &bytes).unwrap();
        let msg = Table::open(&c, Expect::default()).unwrap_err().to_string();
        assert!(msg.contains(r#"expected "AWARICV\x1a""#), "{msg}");
        // Too short is too short, whatever the name.
        fs::write(&c, b"AWARICV\x1a").unwrap();
        let msg = Table::open(&c, Expect::default()).unwrap_err().to_string();
        assert!(msg.contains("too short (8 bytes"), "{msg}");
    }
    fs::remove_dir_all(&d).unwrap();
}

/// `f` on a thread of its own, which must finish within 10 s (a FIFO opened for reading waits
/// for a writer: without the check, forever).
fn promptly<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()).unwrap());
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .expect("it did not return within 10 s")
}

/// A table path that is a FIFO, a device, a directory or a symlink loop is refused at once,
/// with a one-line error; a dangling symlink says so.
#[cfg(unix)]
#[test]
fn a_path_that_is_not_a_file_is_refused_at_once() {
    use std::os::unix::fs::symlink;
    let d = temp_created("not-a-file");
    let fifo = d.join("level-06.values");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let f = fifo.clone();
    let e = promptly(move || Table::open(&f, Expect::default()).unwrap_err().to_string());
    assert!(e.contains("not a regular file (it is a FIFO)"), "{e}");
    let f = fifo.clone();
    let e = promptly(move || Table::open_raw(&f, 6).unwrap_err().to_string());
    assert!(e.contains("FIFO"), "{e}");
    let e = Table::open_raw("/dev/zero", 6).unwrap_err().to_string();
    assert!(e.contains("(it is a character device)"), "{e}");
    let e = Table::open(&d, Expect::default()).unwrap_err().to_string();
    assert!(e.contains("(it is a directory)"), "{e}");
    symlink("loop-b", d.join("loop-a")).unwrap();
    symlink("loop-a", d.join("loop-b")).unwrap();
    let e = Table::open(d.join("loop-a"), Expect::default()).unwrap_err();
    assert!(matches!(e, TableError::Io { .. }), "{e}");
    symlink("nothing-here", d.join("dangling")).unwrap();
    let e = Table::open(d.join("dangling"), Expect::default()).unwrap_err();
    assert!(e.to_string().contains("dangling symlink"), "{e}");
    assert_eq!(e.to_string().lines().count(), 1, "{e}");
    fs::remove_dir_all(&d).unwrap();
}

/// A database directory: only a name that does not exist is a missing level or depth table;
/// a FIFO, a symlink loop or a dangling symlink in its place is an error naming the file.
#[cfg(unix)]
#[test]
fn a_directory_tells_a_missing_table_from_a_broken_one() {
    use awari_db::{depth_path, level_path, DbError, Levels};
    use std::os::unix::fs::symlink;
    let d = temp_created("levels");
    for n in 0..=3 {
        let zeros = vec![0u8; level_size(n) as usize];
        write_table(level_path(&d, n), Header::values(Rules::Awari, n), &zeros).unwrap();
    }
    let levels = Levels::open(&d, None).unwrap();
    assert_eq!(levels.present().collect::<Vec<_>>(), [0, 1, 2, 3]);
    assert!(levels.depth_table(3).is_none());

    // A depth table that is a symlink loop, or dangles: not "no depth table".
    let depth = depth_path(&d, 3);
    symlink(&depth, &depth).unwrap();
    let e = Levels::open(&d, None).unwrap_err();
    assert!(matches!(e, DbError::Table(TableError::Io { .. })), "{e}");
    assert!(e.to_string().contains("level-03.depth"), "{e}");
    fs::remove_file(&depth).unwrap();
    symlink(d.join("gone.depth"), &depth).unwrap();
    let e = Levels::open(&d, None).unwrap_err().to_string();
    assert!(e.contains("level-03.depth: dangling symlink"), "{e}");
    fs::remove_file(&depth).unwrap();

    // A level that is a FIFO: refused at once, not waited on.
    let four = level_path(&d, 4);
    let made = std::process::Command::new("mkfifo")
        .arg(&four)
        .status()
        .unwrap();
    assert!(made.success());
    let dd = d.clone();
    let e = promptly(move || Levels::open(&dd, None).unwrap_err().to_string());
    assert!(
        e.contains("level-04.values: not a regular file (it is a FIFO)"),
        "{e}"
    );
    fs::remove_file(&four).unwrap();
    // A dangling level: not "level 4 is missing, run build".
    symlink(d.join("elsewhere"), &four).unwrap();
    let e = Levels::open(&d, None).unwrap_err().to_string();
    assert!(
        e.contains("dangling symlink") && !e.contains("missing"),
        "{e}"
    );
    fs::remove_dir_all(&d).unwrap();

    // The directory itself: a FIFO is not "a file".
    let fifo_dir = temp_created("levels-fifo");
    let fifo = fifo_dir.join("db");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let e = Levels::open(&fifo, None).unwrap_err().to_string();
    assert!(e.contains("it is not a directory"), "{e}");
    fs::remove_dir_all(&fifo_dir).unwrap();
}

/// A stored value outside −n..n (n seeds) is an error naming the file and the entry, from
/// every read that answers with it: a lookup, a board's value, a range of values.
#[test]
fn a_value_outside_its_level_is_an_error_naming_the_entry() {
    use awari_db::{level_path, Level, Levels};
    let d = temp_created("bad-value");
    for n in 0..=5 {
        let zeros = vec![0u8; level_size(n) as usize];
        write_table(level_path(&d, n), Header::values(Rules::Awari, n), &zeros).unwrap();
    }
    let level = Level::new(5);
    let index = 100;
    let board = level.unrank(index);
    for stored in [127i8, 6, -6, -128] {
        let mut data = vec![0u8; level_size(5) as usize];
        data[index as usize] = stored as u8;
        write_table(level_path(&d, 5), Header::values(Rules::Awari, 5), &data).unwrap();
        let levels = Levels::open(&d, None).unwrap();
        let want = format!("level-05.values: entry {index} holds {stored}, outside -5..5: the table is damaged (run awari-solver verify)");
        let e = levels.lookup(&board, index).unwrap_err().to_string();
        assert!(e.contains(&want), "{e}");
        let e = levels.value(&board).unwrap_err().to_string();
        assert!(e.contains(&want), "{e}");
        let mut out = Vec::new();
        let e = levels
            .read_values(5, 90..110, &mut out)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&want), "{e}");
        // The entries around it are fine.
        assert_eq!(levels.lookup(&level.unrank(99), 99).unwrap(), 0);
        levels.read_values(5, 0..100, &mut out).unwrap();
    }
    // ±n itself is a value.
    let mut data = vec![0u8; level_size(5) as usize];
    data[index as usize] = -5i8 as u8;
    write_table(level_path(&d, 5), Header::values(Rules::Awari, 5), &data).unwrap();
    let levels = Levels::open(&d, None).unwrap();
    assert_eq!(levels.lookup(&board, index).unwrap(), -5);
    fs::remove_dir_all(&d).unwrap();
}

/// A version-2 table carries its chunk digests: a changed data byte is found by the first
/// read of its chunk (a lookup through the directory names the file), the other chunks read
/// as before; a changed digest is refused on open; a version-1 table (no digests, as written
/// before them) is checked whole on its first read.
#[test]
fn each_chunk_is_checked_the_first_time_it_is_read() {
    let d = temp_created("chunks");
    let n = 14; // 4.4 M entries: two checksum chunks
    let data = vec![0u8; level_size(n) as usize]; // every position a draw: valid values
    let path = awari_db::level_path(&d, n);
    write_table(&path, Header::values(Rules::Awari, n), &data).unwrap();
    let chunk = awari_db::table::CHECKSUM_CHUNK as u64;
    let len = fs::metadata(&path).unwrap().len();
    assert_eq!(len, 64 + level_size(n) + 8 * 2);
    let t = Table::open(&path, expect(Rules::Awari, n)).unwrap();
    t.check_entries(0..level_size(n)).unwrap();
    // A byte of the second chunk changed.
    let mut bytes = fs::read(&path).unwrap();
    bytes[(64 + chunk + 17) as usize] = 3;
    fs::write(&path, &bytes).unwrap();
    let t = Table::open(&path, expect(Rules::Awari, n)).unwrap();
    t.check_entries(0..10).unwrap();
    let err = t.check_entries(chunk + 5..chunk + 6).unwrap_err();
    assert!(
        matches!(err, TableError::CorruptBlock { block: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("level-14.values"), "{err}");
    // Through the directory: the board at an index of the second chunk is refused.
    let levels = awari_db::Levels::open(&d, Some(Rules::Awari)).unwrap();
    let level = awari_db::Level::new(n);
    let board = level.unrank(chunk + 17);
    let err = levels.value(&board).unwrap_err();
    assert!(err.to_string().contains("level-14.values"), "{err}");
    assert!(levels.value(&level.unrank(3)).is_ok());
    // A changed digest: refused on open.
    bytes[(64 + chunk + 17) as usize] = 0;
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(&path, &bytes).unwrap();
    let err = Table::open(&path, expect(Rules::Awari, n)).unwrap_err();
    assert!(matches!(err, TableError::BadChecksum { .. }), "{err}");
    // Version 1: no digests; the whole data is checked at the first read.
    bytes.truncate(bytes.len() - 16);
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    let own = xxhash_rust::xxh3::xxh3_64(&bytes[..48]);
    bytes[48..56].copy_from_slice(&own.to_le_bytes());
    fs::write(&path, &bytes).unwrap();
    let t = Table::open(&path, expect(Rules::Awari, n)).unwrap();
    t.check_entries(0..1).unwrap();
    bytes[(64 + chunk + 17) as usize] = 3;
    fs::write(&path, &bytes).unwrap();
    let t = Table::open(&path, expect(Rules::Awari, n)).unwrap();
    assert!(matches!(
        t.check_entries(0..1).unwrap_err(),
        TableError::BadChecksum { .. }
    ));
    fs::remove_dir_all(&d).unwrap();
}
