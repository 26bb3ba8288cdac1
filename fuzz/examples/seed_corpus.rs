//! Write the seed corpora of the fuzz targets, `fuzz/corpus/TARGET/`, from real files: the
//! tables, compressed tables, checkpoints and record files that the solver writes for small
//! levels (built here, as the targets build them), and real batch lines, boards, queries and
//! calibration files, each with the prefix bytes its target reads first.
//!
//! `cargo run --release --manifest-path fuzz/Cargo.toml --example seed_corpus` (then
//! `scripts/fuzz.sh` minimises what the fuzzers add; the committed corpus is what this wrote
//! and `cargo fuzz cmin` kept).

use std::path::{Path, PathBuf};

use awari_db::{depth_path, level_path};
use awari_fuzz::{
    checkpoint_fields, compressed_bases, one_thread, passes, record_bodies, scratch, TwoBitFields,
    PASS_LEVEL,
};

struct Corpus(PathBuf);

impl Corpus {
    fn new(target: &str) -> Corpus {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("corpus")
            .join(target);
        std::fs::create_dir_all(&dir).unwrap();
        Corpus(dir)
    }

    fn add(&self, name: &str, prefix: &[u8], body: &[u8]) {
        let mut bytes = prefix.to_vec();
        bytes.extend_from_slice(body);
        std::fs::write(self.0.join(format!("seed-{name}")), bytes).unwrap();
    }
}

fn main() {
    one_thread();
    let root = scratch("seed_corpus");
    let (plain, bases) = compressed_bases(&root.join("bases"), 6, &[1, 3, 5, 6]);

    // table_open: [flags: kind | fix 4 | expect 8 | raw 16][seeds][pick 2] file
    let c = Corpus::new("table_open");
    for n in [1u32, 3, 6] {
        let v = std::fs::read(level_path(&plain, n)).unwrap();
        c.add(&format!("values-{n}"), &[8, n as u8, 7, 0], &v);
        c.add(&format!("values-{n}-fix"), &[4, n as u8, 200, 1], &v);
        c.add(&format!("raw-{n}"), &[16, n as u8, 9, 0], &v[64..]);
    }
    let d = std::fs::read(depth_path(&plain, 5)).unwrap();
    c.add("depth-5", &[2 | 8, 5, 40, 0], &d);
    for b in &bases {
        let kind = if b.name.ends_with("cdepth") { 3 } else { 1 };
        // One depth table: each is some 50 KB (its model).
        if kind == 3 && b.seeds != 1 {
            continue;
        }
        let form = b.bytes[14];
        let name = format!("{}-{}-coder{form}-seg{}", b.name, b.seeds, b.bytes[15]);
        c.add(&name, &[kind | 8, b.seeds as u8, 33, 0], &b.bytes);
        c.add(
            &format!("{name}-fix"),
            &[kind | 4, b.seeds as u8, 1, 1],
            &b.bytes,
        );
    }

    // compressed_probe: [base][flags: fix 1 | one range 2] patches
    let c = Corpus::new("compressed_probe");
    for (k, b) in bases.iter().enumerate() {
        c.add(&format!("base-{k}"), &[k as u8, 0], &[]);
        c.add(&format!("base-{k}-range"), &[k as u8, 2], &[]);
        // A byte of the index and one of the data changed, checksums fixed up.
        let h = awari_db::compressed::CompressedHeader::from_bytes(Path::new("x"), &b.bytes[..66])
            .unwrap();
        let (i, d) = (h.index_offset as u32 + 3, h.data_offset as u32 + 1);
        let mut p = Vec::new();
        for at in [i, d] {
            p.extend_from_slice(&at.to_le_bytes()[..3]);
            p.extend_from_slice(&[1, 0x5a]);
        }
        c.add(&format!("base-{k}-patched-fix"), &[k as u8, 1], &p);
    }

    // database_lookup: [dir][file: level | depth 8 | other name 16][flags: fix 1 | no rules 2] file
    let c = Corpus::new("database_lookup");
    let (small, small_bases) = compressed_bases(&root.join("small"), 4, &[0, 1, 2, 3, 4]);
    for n in [0u32, 2, 4] {
        let v = std::fs::read(level_path(&small, n)).unwrap();
        c.add(&format!("plain-values-{n}"), &[0, n as u8, 0], &v);
        let d = std::fs::read(depth_path(&small, n)).unwrap();
        c.add(&format!("plain-depth-{n}"), &[0, n as u8 | 8, 2], &d);
        let mine: Vec<_> = small_bases.iter().filter(|b| b.seeds == n).collect();
        c.add(
            &format!("compressed-values-{n}"),
            &[1, n as u8, 0],
            &mine[0].bytes,
        );
        c.add(&format!("probe-form-{n}"), &[2, n as u8, 0], &mine[1].bytes);
        if n == 4 {
            c.add(
                &format!("compressed-depth-{n}"),
                &[1, n as u8 | 8, 0],
                &mine[3].bytes,
            );
        }
    }

    // checkpoint: [flags: kind | framed 4 | run 8 | kind 4 16][dir] bytes
    // record_file: [snapshot][file][flags: framed records 1] bytes
    let p = passes(&root.join("passes"));
    let n = PASS_LEVEL;
    let c = Corpus::new("checkpoint");
    let r = Corpus::new("record_file");
    for (k, dir) in p.low_memory.iter().enumerate() {
        let Ok(file) = std::fs::read(dir.join(format!("level-{n:02}.lowmem/resume"))) else {
            continue;
        };
        let fields = checkpoint_fields(&file).unwrap();
        c.add(&format!("low-memory-{k}-run"), &[3 | 8, k as u8], &file);
        c.add(
            &format!("low-memory-{k}-fields-run"),
            &[3 | 4 | 8, k as u8],
            fields,
        );
    }
    // The in-memory build's saves: kind 4 is flag bit 4.
    for (k, dir) in p.memory.iter().enumerate() {
        let Ok(file) = std::fs::read(dir.join(format!("level-{n:02}.mstate"))) else {
            continue;
        };
        let fields = checkpoint_fields(&file).unwrap();
        c.add(&format!("memory-{k}-run"), &[16 | 8, k as u8], &file);
        c.add(
            &format!("memory-{k}-fields-run"),
            &[16 | 4 | 8, k as u8],
            fields,
        );
    }
    let mut snapshot = 0u8;
    for (k, dir) in p.two_bit.iter().enumerate() {
        let Ok(file) = std::fs::read(dir.join(format!("level-{n:02}.work/resume"))) else {
            continue;
        };
        let fields = checkpoint_fields(&file).unwrap();
        c.add(&format!("two-bit-{k}"), &[0, k as u8], &file);
        c.add(&format!("two-bit-{k}-run"), &[8, k as u8], &file);
        c.add(
            &format!("two-bit-{k}-fields-run"),
            &[4 | 8, k as u8],
            fields,
        );
        let listed = TwoBitFields::parse(fields).unwrap();
        if listed.files.is_empty() {
            continue;
        }
        for (f, (name, len)) in listed.files.iter().enumerate() {
            let bytes = std::fs::read(dir.join(format!("level-{n:02}.work")).join(name)).unwrap();
            let bytes = &bytes[..*len as usize];
            r.add(
                &format!("{snapshot}-{name}"),
                &[snapshot, f as u8, 0],
                bytes,
            );
            let mut framed = Vec::new();
            for (chunk, body) in record_bodies(bytes) {
                if body.len() < 256 {
                    framed.push(chunk as u8);
                    framed.push(body.len() as u8);
                    framed.extend_from_slice(body);
                }
            }
            r.add(
                &format!("{snapshot}-{name}-framed"),
                &[snapshot, f as u8, 1],
                &framed,
            );
        }
        snapshot += 1;
    }
    for (kind, dirs, file) in [
        (1u8, &p.waves, format!("level-{n:02}.dresume")),
        (2, &p.classes, format!("level-{n:02}.dclasses")),
    ] {
        for (k, dir) in dirs.iter().enumerate() {
            let Ok(bytes) = std::fs::read(dir.join(&file)) else {
                continue;
            };
            let fields = checkpoint_fields(&bytes).unwrap();
            c.add(&format!("{file}-{k}-run"), &[kind | 8, k as u8], &bytes);
            c.add(&format!("{file}-{k}-fields"), &[kind | 4, k as u8], fields);
        }
    }
    c.add("framed-empty", &[4, 0], &[]);

    // calibration: a file as scripts/calibrate.sh writes it, and the least one.
    let c = Corpus::new("calibration");
    c.add(
        "full",
        &[],
        br#"{
  "machine": "2 cores, 23.4 GiB", "threads": 2, "level": 22,
  "rate_per_thread": {"memory": 4.9e6, "low_memory": 4.2e6, "two_bit": 2.1e6, "depth": 1.9e6, "verify": 1.5e6},
  "io_per_position": {"low_memory": 55.1, "two_bit": 61.0},
  "exit_passes": {"low_memory": 4, "two_bit": 4},
  "disk_bandwidth": {"write": 1.1e9, "read": 1.6e9},
  "seconds": {"memory": 40.1}, "peak_bytes_per_position": {"two_bit": 0.34}
}
"#,
    );
    c.add("least", &[], br#"{"rate_per_thread": {"memory": 3e6}}"#);
    c.add("io-only", &[], br#"{"level": 18, "rate_per_thread": {"memory": 3e6, "two_bit": 1e6}, "io_per_position": {"two_bit": 40}, "exit_passes": {"two_bit": 2}}"#);

    // batch_line: [db | answer << 1] stdin
    let c = Corpus::new("batch_line");
    let lines = b"0 0 0 0 0 1 0 0 0 0 0 0\n1,1,1,1,1,1,0,0,0,0,0,0\n\n2 0 0 0 0 0 0 0 0 0 0 3\r\n0 0 0 0 0 0 1 1 1 1 1 1\n  0 1 0 1 0 1 0 1 0 1 0 1  \n";
    for mode in 0..6u8 {
        c.add(&format!("boards-{mode}"), &[mode], lines);
    }
    c.add(
        "bad-line",
        &[0],
        b"0 0 0 0 0 1 0 0 0 0 0 0\n1 2 3\n0 0 0 0 0 1 0 0 0 0 0 0\n",
    );
    c.add("too-many-seeds", &[2], b"4 4 4 4 4 4 4 4 4 4 4 4\nstart\n");
    c.add("no-newline", &[4], b"0 0 0 0 0 0 0 0 0 0 0 1");

    // board_parse: text
    let c = Corpus::new("board_parse");
    for (k, text) in [
        "1 1 1 1 1 2 4 2 3 0 0 0",
        "start",
        "4,4,4,4,4,4,4,4,4,4,4,4",
        " 0\t0 0 0 0 0 0 0 0 0 0 48 ",
        "10 1 2 3 4 5 6 7 0 0 0 10\r\n",
        "1 2 3 4 5 6 7 8 9 10 11 12",
        "0 0 0 0 0 0 1 1 1 1 1 1",
        "12,13",
        "1\n2\n3\n4\n5\n6\n0\n0\n0\n0\n0\n0",
    ]
    .iter()
    .enumerate()
    {
        c.add(&format!("{k}"), &[], text.as_bytes());
    }

    // serve_query: [method | prefix << 3 | json 64] uri-rest \n body
    let c = Corpus::new("serve_query");
    c.add("position", &[0], b"0,0,0,0,0,1,0,0,0,0,0,0");
    c.add(
        "position-captured",
        &[0],
        b"0,0,0,0,1,1,0,0,0,0,0,1&captured=20,22",
    );
    c.add("position-missing-level", &[0], b"start");
    c.add("line", &[1 << 3], b"1,0,0,0,0,1,0,0,1,0,0,0&max_plies=30");
    c.add(
        "line-words",
        &[6 << 3],
        b"10&board=0%200%200%200%200%201%200%200%200%200%200%200",
    );
    c.add(
        "batch",
        &[1 | 2 << 3 | 64],
        b"\n{\"boards\": [[0,0,0,0,0,1,0,0,0,0,0,0], \"1 1 1 1 1 1 0 0 0 0 0 0\", [\"0\",0,0,0,0,0,0,0,0,0,0,2]]}",
    );
    c.add("batch-not-json", &[1 | 2 << 3], b"\n{\"boards\": []}");
    c.add("health", &[3 << 3], b"");
    c.add("page", &[4 << 3], b"");
    c.add("no-route", &[7 << 3], b"/nothing/here?x=1");
    c.add("head-position", &[3], b"0,0,0,0,0,1,0,0,0,0,0,0");
    eprintln!("corpora written under {}", c.0.parent().unwrap().display());
}
