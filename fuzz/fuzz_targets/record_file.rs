//! The record files of a two-bit build resumed: a work directory of level 6 under awari left
//! by a build stopped part way (real files and checkpoint, made at start-up), one of the
//! files its checkpoint lists (exit lists, part files) replaced by the input, the checkpoint
//! rewritten to list the input's length, then the build resumed with
//! `build_level` (two-bit). Asserted: no panic, no hang, no huge allocation; and where a record
//! of the input is damage (it fails its check, is torn, or its body is not well formed within
//! the level: `awari_fuzz::records_believed`), which a resume must never believe, the build
//! ends with the true table or an error, and a second run with the true table. Records that
//! pass every check are believed whatever they hold (the checks are against damage, not
//! forgery): then only "no panic".
//!
//! Input: a byte choosing the stopped build, a byte choosing the listed file, a byte of flags
//! (bit 0: the input is records, a chunk byte, a length byte and the body each, framed and
//! checked here; else the file's bytes), then the bytes.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use awari_db::{level_path, level_size, Levels, Rules};
use awari_fuzz::{
    checkpoint_fields, frame_checkpoint, interrupted, one_thread, passes, records,
    records_believed, replace, scratch, stage_dir, Input, TwoBitFields, PASS_LEVEL as N,
    TWO_BIT_CHECKPOINT,
};
use awari_solver::build::{build_level, Plan};
use awari_solver::twobit::work_dir;
use awari_solver::Silent;
use libfuzzer_sys::fuzz_target;

struct Snapshot {
    dir: PathBuf,
    fields: TwoBitFields,
}

struct Setup {
    snapshots: Vec<Snapshot>,
    want: Vec<u8>,
    work: PathBuf,
}

static SETUP: OnceLock<Setup> = OnceLock::new();

fn setup() -> Setup {
    one_thread();
    let root = scratch("record_file");
    let p = passes(&root);
    let want = std::fs::read(level_path(&p.full, N)).unwrap();
    let mut snapshots = Vec::new();
    for dir in p.two_bit {
        let Ok(file) = std::fs::read(dir.join(format!("level-{N:02}.work/resume"))) else {
            continue;
        };
        let fields = TwoBitFields::parse(checkpoint_fields(&file).unwrap()).unwrap();
        if !fields.files.is_empty() {
            snapshots.push(Snapshot { dir, fields });
        }
    }
    assert!(!snapshots.is_empty(), "no stopped build lists a file");
    Setup {
        snapshots,
        want,
        work: root.join("work"),
    }
}

/// Resume the build in `dir`: `Err` with the error's text.
fn build(dir: &std::path::Path) -> Result<(), String> {
    let levels = Levels::open(dir, Some(Rules::Awari)).unwrap();
    build_level(
        dir,
        N,
        Rules::Awari,
        &levels,
        Plan::TwoBit { bucket: 1 },
        &Silent,
    )
    .map(|_| ())
    .map_err(|e| awari_db::one_line(&e))
}

fuzz_target!(
    init: {
        SETUP.set(setup()).ok();
    },
    |data: &[u8]| {
        let s = SETUP.get().unwrap();
        let mut input = Input(data);
        let snap = &s.snapshots[usize::from(input.u8()) % s.snapshots.len()];
        let pick = usize::from(input.u8()) % snap.fields.files.len();
        let flags = input.u8();
        let chunks = level_size(N).div_ceil(1 << 20);
        let content = if flags & 1 != 0 {
            records(&mut input, chunks as u32)
        } else {
            input.rest().to_vec()
        };
        let dir = &s.work;
        stage_dir(&snap.dir, dir);
        let work = work_dir(dir, N);
        let mut fields = TwoBitFields {
            fixed: snap.fields.fixed.clone(),
            files: snap.fields.files.clone(),
        };
        let name = fields.files[pick].0.clone();
        fields.files[pick].1 = content.len() as u64;
        replace(&work.join(&name), &content);
        replace(
            &work.join("resume"),
            &frame_checkpoint(TWO_BIT_CHECKPOINT, &fields.to_bytes()),
        );
        // Damage (a failed check, a torn record, a body not well formed within the level) is
        // never believed; a record forged to pass every check is.
        let values = name.starts_with("part-");
        let believed = records_believed(&content, chunks, level_size(N), values);
        let first = build(dir);
        if !believed {
            let table = || std::fs::read(level_path(dir, N)).unwrap();
            match first {
                Ok(()) => assert!(table() == s.want, "a damaged {name} made a wrong table"),
                Err(e) if interrupted(&e) => {}
                Err(_) => match build(dir) {
                    Ok(()) => assert!(table() == s.want, "a damaged {name}, a second run: a wrong table"),
                    Err(e) if interrupted(&e) => {}
                    Err(e) => panic!("a second run after a damaged {name} failed: {e}"),
                },
            }
        }
    }
);
