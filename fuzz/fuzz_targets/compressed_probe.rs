//! A valid compressed table of a small level (self-contained values, the probe form with
//! segments of 128 or 256, or depths; built at start-up) with parts overwritten by the
//! input, then opened and read: every entry, the block check, `verify`. The point is the
//! compressed reader's index records, block spans and segment decoders (Huffman, rANS
//! contexts, depth contexts). Only "no panic, no hang, no huge allocation" is asserted.
//!
//! Input: a byte choosing the table, a byte of flags (bit 0 fix the checksums up after
//! patching, so that the decoders see the damage; bit 1 read in one range), then patches
//! (3-byte offset, length byte, bytes; see `awari_fuzz::patch`).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use awari_db::{Content, Expect, Levels, Rules, Table};
use awari_fuzz::{
    compressed_bases, fix_compressed, one_thread, patch, replace, scratch, Base, Input,
};
use libfuzzer_sys::fuzz_target;

struct Setup {
    dir: PathBuf,
    bases: Vec<Base>,
    /// The true values of each level, for the depth tables' reads.
    values: Vec<Vec<i8>>,
}

static SETUP: OnceLock<Setup> = OnceLock::new();

fn setup() -> Setup {
    one_thread();
    let root = scratch("compressed_probe");
    let (plain, bases) = compressed_bases(&root, 6, &[1, 3, 5, 6]);
    let db = Levels::open(&plain, Some(Rules::Awari)).unwrap();
    let values = (0..=6)
        .map(|n| {
            let t = db.require(n).unwrap();
            let mut buf = Vec::new();
            let v = t.read(0..t.header().entries, &mut buf).unwrap();
            v.iter().map(|&b| b as i8).collect()
        })
        .collect();
    let dir = root.join("probe");
    std::fs::create_dir_all(&dir).unwrap();
    Setup { dir, bases, values }
}

fuzz_target!(
    init: {
        SETUP.set(setup()).ok();
    },
    |data: &[u8]| {
        let s = SETUP.get().unwrap();
        let mut input = Input(data);
        let base = &s.bases[usize::from(input.u8()) % s.bases.len()];
        let flags = input.u8();
        let mut file = base.bytes.clone();
        patch(&mut file, &mut input, 16);
        if flags & 1 != 0 {
            fix_compressed(&mut file);
        }
        let path = s.dir.join(&base.name);
        replace(&path, &file);
        let Ok(t) = Table::open(&path, Expect::default()) else {
            return;
        };
        let n = t.header().entries;
        match t.header().content {
            Content::Values => {
                if flags & 2 != 0 {
                    let mut out = vec![0u8; n as usize];
                    let _ = t.read_stored(0, &mut out);
                    let mut buf = Vec::new();
                    let _ = t.read(0..n, &mut buf);
                } else {
                    for i in 0..n {
                        if i.is_multiple_of(37) {
                            t.prefetch_value(i);
                            t.prefetch_segment(i);
                        }
                        let _ = t.stored(i);
                        let _ = t.value(i);
                    }
                }
            }
            Content::Depth => {
                let seeds = t.header().seeds as usize;
                let truth = s.values.get(seeds).filter(|v| v.len() as u64 == n);
                let step = if flags & 2 != 0 { n } else { 97 };
                let mut start = 0;
                while start < n {
                    let end = (start + step).min(n);
                    let context = t.depth_context(start..end);
                    let values: Vec<i8> = match truth {
                        Some(v) => v[context.start as usize..context.end as usize].to_vec(),
                        None => vec![0; (context.end - context.start) as usize],
                    };
                    let mut out = vec![0u16; (end - start) as usize];
                    let _ = t.read_depths(start, &mut out, &values);
                    start = end;
                }
            }
        }
        let _ = t.check_blocks();
        let _ = t.verify();
    }
);
