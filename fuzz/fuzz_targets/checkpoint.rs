//! The solver's checkpoint readers: the input as the two-bit build's `level-NN.work/resume`
//! (read by `twobit::checkpoint_stage` and by `build_level` (two-bit)'s resume), as the depth
//! pass's `level-NN.dresume` (`DepthPass::open`, then its run), as the class pass's
//! `level-NN.dclasses` (`ClassPass::open`, then its run) or as the low-memory build's
//! `level-NN.lowmem/resume` (`lowmem::checkpoint_stage`, `build_level` (low-memory)'s
//! resume) or as the in-memory build's saved state `level-NN.mstate` (`saved_state_stage`,
//! `build_level` (in memory)'s resume; framed, the input is its head's fields and the words
//! are those of the directory's save, or zeros), in a directory of level 6 under awari
//! left by a pass stopped part way (at start-up: real work files) or in one without work
//! files. Asserted: no panic, no hang, no huge allocation; and where the checkpoint is the one
//! its pass left (the input unframed), a run that ends `Ok` writes the true table.
//!
//! Input: a byte of flags (bits 0-1 and 4 the kind: two-bit, depth, classes, low-memory, in
//! memory, modulo 5; bit 2 the input is the checkpoint's fields, framed and checksummed here,
//! else the whole file; bit 3 run the pass after opening it), a byte choosing the directory,
//! then the bytes.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use awari_db::{depth_path, level_path, Levels, Rules};
use awari_fuzz::{
    copy_dir, frame_checkpoint, one_thread, passes, replace, run_depth, scratch, stage_dir, Input,
    CLASS_CHECKPOINT, DEPTH_CHECKPOINT, LOW_MEMORY_CHECKPOINT, MEMORY_SAVE, MEMORY_SAVE_HEAD,
    PASS_LEVEL as N, TWO_BIT_CHECKPOINT,
};
use awari_solver::build::{build_level, Plan};
use awari_solver::depth::{ClassPass, DepthPass};
use awari_solver::twobit::checkpoint_stage;
use awari_solver::Silent;
use libfuzzer_sys::fuzz_target;

struct Kind {
    frame: ([u8; 8], u32),
    /// The checkpoint's path in a directory.
    file: &'static str,
    /// Directories to put the input in: stopped passes' (with their own checkpoint) and one
    /// with the tables only.
    dirs: Vec<PathBuf>,
    /// The table a run writes.
    want: Vec<u8>,
}

struct Setup {
    kinds: Vec<Kind>,
    work: PathBuf,
}

static SETUP: OnceLock<Setup> = OnceLock::new();

fn setup() -> Setup {
    one_thread();
    let root = scratch("checkpoint");
    let p = passes(&root);
    let want = std::fs::read(level_path(&p.full, N)).unwrap();
    let mut kinds = vec![Kind {
        frame: TWO_BIT_CHECKPOINT,
        file: "level-06.work/resume",
        dirs: p.two_bit,
        want: want.clone(),
    }];
    for (classes, frame, file, dirs) in [
        (false, DEPTH_CHECKPOINT, "level-06.dresume", p.waves),
        (true, CLASS_CHECKPOINT, "level-06.dclasses", p.classes),
    ] {
        let clean = root.join("want");
        copy_dir(&p.full, &clean);
        assert!(run_depth(&clean, classes, &Silent));
        let want = std::fs::read(depth_path(&clean, N)).unwrap();
        kinds.push(Kind {
            frame,
            file,
            dirs,
            want,
        });
    }
    kinds.push(Kind {
        frame: LOW_MEMORY_CHECKPOINT,
        file: "level-06.lowmem/resume",
        dirs: p.low_memory,
        want: want.clone(),
    });
    kinds.push(Kind {
        frame: MEMORY_SAVE,
        file: "level-06.mstate",
        dirs: p.memory,
        want,
    });
    // The frames above are the ones the passes write: a version bumped in the solver and not
    // here would leave every framed input refused at its version.
    for k in &kinds {
        for dir in &k.dirs {
            if let Ok(own) = std::fs::read(dir.join(k.file)) {
                let version = u32::from_le_bytes(own[8..12].try_into().unwrap());
                assert_eq!(
                    (&own[..8], version),
                    (&k.frame.0[..], k.frame.1),
                    "{}",
                    k.file
                );
            }
        }
    }
    Setup {
        kinds,
        work: root.join("work"),
    }
}

fuzz_target!(
    init: {
        SETUP.set(setup()).ok();
    },
    |data: &[u8]| {
        let s = SETUP.get().unwrap();
        let mut input = Input(data);
        let flags = input.u8();
        let kind = usize::from(flags & 3 | (flags >> 2) & 4) % s.kinds.len();
        let k = &s.kinds[kind];
        let from = &k.dirs[usize::from(input.u8()) % k.dirs.len()];
        let bytes = input.rest();
        let file = if flags & 4 != 0 && kind == 4 {
            // The fields as the head, the words of the directory's save (or zeros) after it.
            let mut file = frame_checkpoint(k.frame, bytes);
            file.resize(file.len().max(MEMORY_SAVE_HEAD), 0);
            let words = 2 * awari_db::level_size(N) as usize;
            match std::fs::read(from.join(k.file)) {
                Ok(save) if save.len() == MEMORY_SAVE_HEAD + words => {
                    file.extend_from_slice(&save[MEMORY_SAVE_HEAD..]);
                }
                _ => file.resize(file.len() + words, 0),
            }
            file
        } else if flags & 4 != 0 {
            frame_checkpoint(k.frame, bytes)
        } else {
            bytes.to_vec()
        };
        // The pass's own checkpoint, unchanged: a resume that must end in the true table.
        let own = flags & 4 == 0 && std::fs::read(from.join(k.file)).is_ok_and(|c| c == file);
        let dir = &s.work;
        stage_dir(from, dir);
        let path = dir.join(k.file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        replace(&path, &file);
        let run = flags & 8 != 0;
        match kind {
            0 => {
                let _ = checkpoint_stage(dir, N, Rules::Awari);
                if run {
                    let levels = Levels::open(dir, Some(Rules::Awari)).unwrap();
                    let r = build_level(dir, N, Rules::Awari, &levels, Plan::TwoBit { bucket: 1 }, &Silent);
                    if r.is_ok() && own {
                        assert!(std::fs::read(level_path(dir, N)).unwrap() == k.want);
                    }
                }
            }
            4 => {
                let _ = awari_solver::level::saved_state_stage(dir, N, Rules::Awari);
                if run {
                    let levels = Levels::open(dir, Some(Rules::Awari)).unwrap();
                    let r = build_level(dir, N, Rules::Awari, &levels, Plan::InMemory, &Silent);
                    if r.is_ok() && own {
                        assert!(std::fs::read(level_path(dir, N)).unwrap() == k.want);
                    }
                }
            }
            3 => {
                let _ = awari_solver::lowmem::checkpoint_stage(dir, N, Rules::Awari);
                if run {
                    let levels = Levels::open(dir, Some(Rules::Awari)).unwrap();
                    let r = build_level(dir, N, Rules::Awari, &levels, Plan::LowMemory { bucket: 1 }, &Silent);
                    if r.is_ok() && own {
                        assert!(std::fs::read(level_path(dir, N)).unwrap() == k.want);
                    }
                }
            }
            _ => {
                let levels = Levels::open(dir, Some(Rules::Awari)).unwrap();
                let ended = if kind == 1 {
                    DepthPass::open(&levels, N, dir, 1).map(|p| run.then(|| p.run(true, 4, &Silent).is_ok()))
                } else {
                    ClassPass::open(&levels, N, dir, 1).map(|p| run.then(|| p.run(true, 4, &Silent).is_ok()))
                };
                if matches!(ended, Ok(Some(true))) && own {
                    assert!(std::fs::read(depth_path(dir, N)).unwrap() == k.want);
                }
            }
        }
    }
);
