//! Any bytes as a table file (`level-NN.values`, `.cvalues`, `.depth`, `.cdepth`, or a raw
//! `scores.N`) opened with `Table::open` / `Table::open_raw`; if it opens, its header, a few
//! entries at indices from the input, a range read, the block check and `verify`. Only "no
//! panic, no hang, no huge allocation" is asserted: a damaged table is an error or (a plain
//! table, until `verify`) any value.
//!
//! Input: a byte of flags (bits 0-1 the name's kind, bit 2 fix the checksums up, bit 3 open
//! with the name's level expected, bit 4 also `open_raw`), a byte of the name's level, two
//! index bytes, then the file.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use awari_db::{Content, Expect, Table};
use awari_fuzz::{fix_table, one_thread, replace, scratch, Input};
use libfuzzer_sys::fuzz_target;

static DIR: OnceLock<PathBuf> = OnceLock::new();

fn exercise(t: &Table, pick: u64) {
    let h = *t.header();
    let _ = (
        t.path(),
        t.is_raw(),
        t.is_compressed(),
        t.file_len(),
        t.plain(),
    );
    let _ = (
        t.is_probe_form(),
        t.compressed_form(),
        t.compressed_layout(),
    );
    let n = h.entries;
    if n == 0 {
        return;
    }
    let picks = [0, pick % n, n - 1, pick.wrapping_mul(0x9e37_79b9) % n];
    match h.content {
        Content::Values => {
            for &i in &picks {
                t.prefetch_value(i);
                t.prefetch_segment(i);
                let _ = t.value(i);
                let _ = t.stored(i);
            }
            let start = pick % n;
            let end = (start + 300).min(n);
            let mut buf = Vec::new();
            let _ = t.read(start..end, &mut buf);
            let mut out = vec![0u8; (end - start) as usize];
            let _ = t.read_stored(start, &mut out);
        }
        Content::Depth => {
            let start = pick % n;
            let end = (start + 300).min(n);
            let context = t.depth_context(start..end);
            // Values that are not the level's: a wrong depth or an error, never a panic.
            let values = vec![(pick % 7) as i8 - 3; (context.end - context.start) as usize];
            let mut out = vec![0u16; (end - start) as usize];
            let _ = t.read_depths(start, &mut out, &values);
        }
    }
    let _ = t.check_blocks();
    let _ = t.verify();
}

fuzz_target!(
    init: {
        one_thread();
        DIR.set(scratch("table_open")).unwrap();
    },
    |data: &[u8]| {
        let mut input = Input(data);
        let flags = input.u8();
        let seeds = u32::from(input.u8()) % 49;
        let pick = u64::from(input.u16());
        let mut file = input.rest().to_vec();
        if flags & 4 != 0 {
            fix_table(&mut file);
        }
        let ext = ["values", "cvalues", "depth", "cdepth"][usize::from(flags & 3)];
        let path = DIR.get().unwrap().join(format!("level-{seeds:02}.{ext}"));
        replace(&path, &file);
        let expect = if flags & 8 != 0 {
            Expect {
                rules: None,
                seeds: Some(seeds),
                content: Some(if ext.ends_with("depth") { Content::Depth } else { Content::Values }),
            }
        } else {
            Expect::default()
        };
        if let Ok(t) = Table::open(&path, expect) {
            exercise(&t, pick);
        }
        if flags & 16 != 0 {
            if let Ok(t) = Table::open_raw(&path, seeds) {
                exercise(&t, pick);
            }
        }
        let _ = std::fs::remove_file(&path);
    }
);
