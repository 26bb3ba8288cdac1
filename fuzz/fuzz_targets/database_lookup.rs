//! A database directory of levels 0..4 under awari (built at start-up: plain values and
//! depths; self-contained compressed values and compressed depths; or the probe form and
//! compressed depths) with one table file replaced by the input, opened as the probe opens
//! it, then every board of those levels looked up (value, stored value, depth, a depth range),
//! and for a few boards the probe's `report`, best moves and a perfect line. Only "no panic, no
//! hang, no huge allocation" is asserted: a damaged table is an error or (a plain one) any
//! value.
//!
//! Input: a byte choosing the directory, a byte choosing the file (bits 0-2 the level, modulo
//! 5; bit 3 the depth table instead of the values; bit 4 the other name, plain or
//! compressed), a byte of flags (bit 0 fix the checksums up, bit 1 open without naming the
//! rules), then the file.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use awari_db::{compressed_depth_path, compressed_path, depth_path, level_path, Level, Rules};
use awari_fuzz::{compressed_bases, fix_table, link_dir, one_thread, replace, scratch, Input};
use awari_probe::{perfect_line, report, Database};
use libfuzzer_sys::fuzz_target;

const TOP: u32 = 4;

struct Setup {
    /// The three databases.
    dirs: Vec<PathBuf>,
    /// Where each input's database is put together.
    work: PathBuf,
}

static SETUP: OnceLock<Setup> = OnceLock::new();

fn setup() -> Setup {
    one_thread();
    let root = scratch("database_lookup");
    let (plain, bases) = compressed_bases(&root.join("build"), TOP, &[0, 1, 2, 3, 4]);
    let mut dirs = vec![plain.clone()];
    // form 0: self-contained, form 1: the probe form (segments of 128).
    for form in 0..2 {
        let dir = root.join(format!("db-{form}"));
        std::fs::create_dir_all(&dir).unwrap();
        for n in 0..=TOP {
            let mine: Vec<_> = bases.iter().filter(|b| b.seeds == n).collect();
            std::fs::write(compressed_path(&dir, n), &mine[form].bytes).unwrap();
            std::fs::write(compressed_depth_path(&dir, n), &mine[3].bytes).unwrap();
        }
        dirs.push(dir);
    }
    Setup {
        dirs,
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
        let which = usize::from(input.u8()) % s.dirs.len();
        let file = input.u8();
        let flags = input.u8();
        let mut bytes = input.rest().to_vec();
        if flags & 1 != 0 {
            fix_table(&mut bytes);
        }
        let n = u32::from(file & 7) % (TOP + 1);
        let depth = file & 8 != 0;
        let compressed = (which != 0) != (file & 16 != 0);
        link_dir(&s.dirs[which], &s.work);
        let dir = &s.work;
        for p in [level_path(dir, n), compressed_path(dir, n)]
            .into_iter()
            .filter(|_| !depth)
            .chain([depth_path(dir, n), compressed_depth_path(dir, n)].into_iter().filter(|_| depth))
        {
            let _ = std::fs::remove_file(p);
        }
        let path = match (depth, compressed) {
            (false, false) => level_path(dir, n),
            (false, true) => compressed_path(dir, n),
            (true, false) => depth_path(dir, n),
            (true, true) => compressed_depth_path(dir, n),
        };
        replace(&path, &bytes);
        let rules = (flags & 2 == 0).then_some(Rules::Awari);
        let Ok(db) = Database::open(dir, rules) else {
            return;
        };
        let levels = db.levels();
        let mut k = 0u64;
        for m in 0..=TOP {
            let level = Level::new(m);
            let mut depths = vec![0u16; level.size() as usize];
            let _ = levels.read_depths(m, 0, &mut depths);
            let mut values = Vec::new();
            let _ = levels.read_values(m, 0..level.size(), &mut values);
            for (i, board) in level.boards(0..level.size()).enumerate() {
                let _ = levels.lookup(&board, i as u64);
                let _ = db.value(&board);
                let _ = db.depth(&board);
                k += 1;
                if k.is_multiple_of(97) {
                    let _ = db.moves(&board);
                    let _ = db.best_moves(&board);
                    if let Ok(r) = report(&board, db.rules(), Some(&db)) {
                        let mut out = Vec::new();
                        r.write_json(&mut out);
                        let _ = r.to_text(db.rules());
                    }
                    let _ = perfect_line(&db, &board, 40);
                }
            }
        }
    }
);
