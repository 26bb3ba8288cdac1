//! `awari-probe batch`'s input: any bytes as its stdin, answered by `batch::run` over levels
//! 0..6 under awari (plain values and depths, or the probe form and compressed depths), in
//! each of its answer forms. Asserted: no panic, no hang, no huge allocation, and no more
//! answers than input lines.
//!
//! Input: a byte choosing the database (bit 0) and the answer form (bits 1-2), then stdin.
#![no_main]

use std::sync::OnceLock;

use awari_db::{compressed_depth_path, compressed_path, Rules};
use awari_fuzz::{compressed_bases, one_thread, scratch, Input};
use awari_probe::batch::{run, Answer};
use awari_probe::Database;
use libfuzzer_sys::fuzz_target;

static DBS: OnceLock<Vec<Database>> = OnceLock::new();

fn setup() -> Vec<Database> {
    one_thread();
    let root = scratch("batch_line");
    let (plain, bases) = compressed_bases(&root, 6, &[0, 1, 2, 3, 4, 5, 6]);
    let probe = root.join("probe-form");
    std::fs::create_dir_all(&probe).unwrap();
    for n in 0..=6 {
        let mine: Vec<_> = bases.iter().filter(|b| b.seeds == n).collect();
        std::fs::write(compressed_path(&probe, n), &mine[2].bytes).unwrap();
        std::fs::write(compressed_depth_path(&probe, n), &mine[3].bytes).unwrap();
    }
    vec![
        Database::open(&plain, Some(Rules::Awari)).unwrap(),
        Database::open(&probe, Some(Rules::Awari)).unwrap(),
    ]
}

fuzz_target!(
    init: {
        DBS.set(setup()).ok();
    },
    |data: &[u8]| {
        let dbs = DBS.get().unwrap();
        let mut input = Input(data);
        let b = input.u8();
        let db = &dbs[usize::from(b & 1)];
        let answer = [Answer::Value, Answer::ValueDepth, Answer::Json, Answer::Value][usize::from(b >> 1 & 3)];
        let stdin = input.rest();
        let mut out = Vec::new();
        let _ = run(db, answer, stdin, &mut out);
        let lines = stdin.split(|&c| c == b'\n').count();
        let answers = out.iter().filter(|&&c| c == b'\n').count();
        assert!(answers <= lines, "{answers} answers to {lines} lines");
    }
);
