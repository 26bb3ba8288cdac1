//! What the fuzz targets share: small databases built once per process, per-process scratch
//! directories, the input cursor, and the "fix-ups" that put right the checksums a mutated
//! file would fail (so that the fuzzer reaches the decoders behind them, which a 32- or
//! 64-bit check would otherwise keep it from: each target fixes up only when a bit of its
//! input asks, and checks the unfixed bytes too).
//!
//! The fix-ups restate a few offsets of the formats (`db/src/table.rs`,
//! `db/src/compressed/format.rs`, `solver/src/checkpoint.rs`, `solver/src/seed_records.rs`);
//! a format change that moves them makes the fix-ups miss, never the targets fail.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use awari_db::compressed::{self, CompressedHeader, BLOCK_SEGMENTS, GROUP_BLOCKS, GROUP_RECORD};
use awari_db::Rules;
use awari_solver::build::{BuildOptions, Mode};
use awari_solver::depth::DepthForm;
use awari_solver::{Progress, Silent};
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

/// Every target runs on one thread (one core per fuzzer, as `scripts/fuzz.sh` runs them).
pub fn one_thread() {
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build_global();
}

/// A fresh scratch directory of this process, `awari-fuzz/NAME-PID` in `/dev/shm` where
/// there is one (the passes' fsyncs cost nothing there), else in `$TMPDIR`; those of
/// processes that have ended are removed first.
pub fn scratch(name: &str) -> PathBuf {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() && std::env::var_os("AWARI_FUZZ_TMP").is_none() {
        shm.to_path_buf()
    } else {
        std::env::var_os("AWARI_FUZZ_TMP").map_or_else(std::env::temp_dir, PathBuf::from)
    };
    let root = base.join("awari-fuzz");
    if let Ok(entries) = std::fs::read_dir(&root) {
        for e in entries.flatten() {
            let file = e.file_name().to_string_lossy().into_owned();
            let pid = file.rsplit('-').next().and_then(|p| p.parse::<u32>().ok());
            if let Some(pid) = pid {
                if !Path::new(&format!("/proc/{pid}")).exists() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
    }
    let dir = root.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Levels `0..=max` under awari, in memory, into `dir`; with `depth`, their depth tables.
pub fn build_db(dir: &Path, max: u32, depth: Option<DepthForm>) {
    let opts = BuildOptions {
        dir: dir.to_path_buf(),
        max_stones: max,
        rules: Rules::Awari,
        memory: None,
        depth: depth.is_some(),
        depth_form: depth.unwrap_or_default(),
        mode: Mode::InMemory,
        compress: false,
    };
    awari_solver::build(&opts, &Silent, |_| {}).expect("the fuzz targets' database");
}

/// `f`, again while it is interrupted by a signal (EINTR: libFuzzer's timer interrupts
/// `copy_file_range`, which `std::fs::copy` does not retry).
pub fn retry<T>(mut f: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// Whether an error's text says a system call was interrupted (see [`retry`]): a run that
/// met one proves nothing either way.
pub fn interrupted(error: &str) -> bool {
    error.contains("Interrupted system call")
}

/// Copy directory `from` into `to` (created; replaced if there), recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).expect("create dir");
    for e in std::fs::read_dir(from).expect("read dir").flatten() {
        let ty = e.file_type().expect("file type");
        if ty.is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            retry(|| std::fs::copy(e.path(), to.join(e.file_name()))).expect("copy");
        }
    }
}

/// Hard-link the files of directory `from` (no subdirectories) into `to`, made afresh: a
/// copy that costs nothing, as long as each file is replaced ([`replace`]), never written.
pub fn link_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).expect("create dir");
    for e in std::fs::read_dir(from).expect("read dir").flatten() {
        retry(|| std::fs::hard_link(e.path(), to.join(e.file_name()))).expect("link");
    }
}

/// Put together directory `to` (made afresh) from `from`: its tables hard-linked (never
/// written by a pass), every other file and directory (work files, which a resume truncates)
/// copied.
pub fn stage_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).expect("create dir");
    for e in std::fs::read_dir(from).expect("read dir").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let table = [".values", ".cvalues", ".depth", ".cdepth"]
            .iter()
            .any(|x| name.ends_with(x));
        if e.file_type().expect("file type").is_dir() {
            copy_dir(&e.path(), &to.join(&name));
        } else if table {
            retry(|| std::fs::hard_link(e.path(), to.join(&name))).expect("link");
        } else {
            retry(|| std::fs::copy(e.path(), to.join(&name))).expect("copy");
        }
    }
}

/// Write `bytes` to `path`, replacing whatever is there (a hard link is unlinked, never
/// written through).
pub fn replace(path: &Path, bytes: &[u8]) {
    let _ = std::fs::remove_file(path);
    retry(|| std::fs::write(path, bytes)).expect("write");
}

/// The input, read from the front; what runs out reads as zeros.
pub struct Input<'a>(pub &'a [u8]);

impl<'a> Input<'a> {
    /// The next byte.
    pub fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    /// The next two bytes, LE.
    pub fn u16(&mut self) -> u16 {
        u16::from(self.u8()) | u16::from(self.u8()) << 8
    }

    /// The next three bytes, LE.
    pub fn u24(&mut self) -> u32 {
        u32::from(self.u16()) | u32::from(self.u8()) << 16
    }

    /// Up to `n` bytes.
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }

    /// The rest.
    pub fn rest(&mut self) -> &'a [u8] {
        self.take(usize::MAX)
    }

    /// Whether nothing is left.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Overwrite parts of `file`: the input as patches, each a 3-byte offset (taken modulo the
/// file's length), a length byte and that many bytes; at most `max` patches.
pub fn patch(file: &mut [u8], input: &mut Input, max: usize) {
    if file.is_empty() {
        return;
    }
    for _ in 0..max {
        if input.is_empty() {
            break;
        }
        let at = input.u24() as usize % file.len();
        let len = usize::from(input.u8());
        let bytes = input.take(len);
        let end = (at + bytes.len()).min(file.len());
        file[at..end].copy_from_slice(&bytes[..end - at]);
    }
}

/// Put right a plain table's checksums if `bytes` is one (`db/src/table.rs`): version 2's
/// chunk digests after the data and their combination, version 1's checksum of the data,
/// and the header's own.
pub fn fix_plain(bytes: &mut [u8]) {
    use awari_db::table::{chunk_digest, combine_digests, CHECKSUM_CHUNK};
    if bytes.len() < 64 || bytes[0..8] != awari_db::table::MAGIC {
        return;
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    let entries = u64::from_le_bytes(bytes[24..32].try_into().unwrap());
    let data = entries
        .saturating_mul(u64::from(bytes[15]))
        .min(bytes.len() as u64 - 64) as usize;
    let sum = if version >= 2 {
        let digests: Vec<u64> = bytes[64..64 + data]
            .chunks(CHECKSUM_CHUNK)
            .map(chunk_digest)
            .collect();
        let at = 64 + data;
        if at + 8 * digests.len() <= bytes.len() {
            for (k, d) in digests.iter().enumerate() {
                bytes[at + 8 * k..at + 8 * k + 8].copy_from_slice(&d.to_le_bytes());
            }
        }
        combine_digests(&digests)
    } else {
        awari_db::checksum(&bytes[64..])
    };
    bytes[40..48].copy_from_slice(&sum.to_le_bytes());
    let own = xxh3_64(&bytes[..48]);
    bytes[48..56].copy_from_slice(&own.to_le_bytes());
}

/// Put right a compressed table's checksums (each block's in the index, the index's hash at
/// the end, the model's, the file's) if its header parses. The block sums follow
/// `Compressed::block_span`.
pub fn fix_compressed(bytes: &mut [u8]) {
    const WIDE: u16 = 1 << 15;
    const WIDE_HEAD: usize = 2 * BLOCK_SEGMENTS;
    const TAIL: usize = 8;
    if bytes.len() < 8 || bytes[0..8] != compressed::MAGIC {
        return;
    }
    let head = &bytes[..bytes.len().min(compressed::HEADER_LEN + 2)];
    let Ok(h) = CompressedHeader::from_bytes(Path::new("fuzz"), head) else {
        return;
    };
    let (index, data) = (h.index_offset as usize, h.data_offset as usize);
    if data.saturating_add(TAIL) > bytes.len() || index > data {
        return;
    }
    let block = (h.segment() * BLOCK_SEGMENTS) as u64;
    let blocks = h.entries.div_ceil(block);
    let data_len = bytes.len() - data - TAIL;
    for b in 0..blocks {
        let r = index + (b / GROUP_BLOCKS as u64) as usize * GROUP_RECORD;
        if r + GROUP_RECORD > data {
            break;
        }
        let j = (b % GROUP_BLOCKS as u64) as usize;
        let rec = &bytes[r..r + GROUP_RECORD];
        let base = u64::from_le_bytes(rec[0..8].try_into().unwrap());
        let rel = u16::from_le_bytes([rec[8 + 2 * j], rec[9 + 2 * j]]);
        let from = base.saturating_add(u64::from(rel & !WIDE));
        let (start, lengths): (u64, u64) = if rel & WIDE == 0 {
            let o = 56 + BLOCK_SEGMENTS * j;
            (
                from,
                rec[o..o + BLOCK_SEGMENTS]
                    .iter()
                    .map(|&x| u64::from(x))
                    .sum(),
            )
        } else {
            let f = from as usize;
            let sum = match bytes[data..].get(f..f.saturating_add(WIDE_HEAD)) {
                Some(head) if from < data_len as u64 => head
                    .chunks_exact(2)
                    .map(|x| u64::from(u16::from_le_bytes([x[0], x[1]])))
                    .sum(),
                _ => 0,
            };
            (from.saturating_add(WIDE_HEAD as u64), sum)
        };
        let end = start.saturating_add(lengths);
        if end > data_len as u64 || from > end {
            continue;
        }
        let sum = xxh3_64(&bytes[data + from as usize..data + end as usize]) as u32;
        let o = r + 24 + 4 * j;
        bytes[o..o + 4].copy_from_slice(&sum.to_le_bytes());
    }
    // Version 4: the index's hash in the last 8 bytes.
    if h.version >= 4 {
        let hash = xxh3_64(&bytes[index..data]);
        let end = bytes.len();
        bytes[end - TAIL..].copy_from_slice(&hash.to_le_bytes());
    }
    let model = h.model_checksum_of(&bytes[compressed::HEADER_LEN..index]);
    bytes[56..64].copy_from_slice(&model.to_le_bytes());
    let file = awari_db::checksum(&bytes[compressed::HEADER_LEN..]);
    bytes[48..56].copy_from_slice(&file.to_le_bytes());
}

/// Either fix-up, whichever magic `bytes` has.
pub fn fix_table(bytes: &mut [u8]) {
    fix_plain(bytes);
    fix_compressed(bytes);
}

/// The checkpoint magics and versions (`solver/src/checkpoint.rs` and its kinds).
pub const TWO_BIT_CHECKPOINT: ([u8; 8], u32) = (*b"AWARICKP", 3);
/// The depth pass's `level-NN.dresume`.
pub const DEPTH_CHECKPOINT: ([u8; 8], u32) = (*b"AWARIDRS", 3);
/// The class pass's `level-NN.dclasses`.
pub const CLASS_CHECKPOINT: ([u8; 8], u32) = (*b"AWARIDCL", 4);
/// The low-memory build's `level-NN.lowmem/resume`.
pub const LOW_MEMORY_CHECKPOINT: ([u8; 8], u32) = (*b"AWARILMR", 3);
/// The head of the in-memory build's saved state, `level-NN.mstate`.
pub const MEMORY_SAVE: ([u8; 8], u32) = (*b"AWARIMST", 1);
/// Bytes of that head: the checkpoint, zero-padded; the state words follow.
pub const MEMORY_SAVE_HEAD: usize = 4096;

/// A checkpoint of `kind` whose fields are `fields`, framed and checksummed as
/// `solver/src/checkpoint.rs` writes one.
pub fn frame_checkpoint(kind: ([u8; 8], u32), fields: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(fields.len() + 24);
    out.extend_from_slice(&kind.0);
    out.extend_from_slice(&kind.1.to_le_bytes());
    out.extend_from_slice(&(fields.len() as u32).to_le_bytes());
    out.extend_from_slice(fields);
    let digest = xxh3_64(&out);
    out.extend_from_slice(&digest.to_le_bytes());
    out
}

/// The fields of a checkpoint file, if its frame is whole (not its checksum: not checked).
pub fn checkpoint_fields(file: &[u8]) -> Option<&[u8]> {
    let len = u32::from_le_bytes(file.get(12..16)?.try_into().ok()?) as usize;
    file.get(16..16 + len)
}

/// One record of a record file (`solver/src/seed_records.rs`), its head and check filled in.
pub fn record(chunk: u32, body: &[u8]) -> Vec<u8> {
    let seed = u64::from(chunk) << 32 | body.len() as u64;
    let check = xxh3_64_with_seed(body, seed) as u32;
    let mut out = Vec::with_capacity(12 + body.len());
    out.extend_from_slice(&chunk.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&check.to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// The input as records with their checks filled in: each a chunk byte (taken modulo
/// `chunks`), a length byte and that many bytes of body.
pub fn records(input: &mut Input, chunks: u32) -> Vec<u8> {
    let mut out = Vec::new();
    while !input.is_empty() {
        let chunk = u32::from(input.u8()) % chunks.max(1);
        let len = usize::from(input.u8());
        out.extend(record(chunk, input.take(len)));
    }
    out
}

/// The bodies of a record file's records (heads not checked), for seeds and corpora.
pub fn record_bodies(file: &[u8]) -> Vec<(u32, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 12 <= file.len() {
        let chunk = u32::from_le_bytes(file[at..at + 4].try_into().unwrap());
        let len = u32::from_le_bytes(file[at + 4..at + 8].try_into().unwrap()) as usize;
        let Some(body) = file.get(at + 12..at + 12 + len) else {
            break;
        };
        out.push((chunk, body));
        at += 12 + len;
    }
    out
}

/// Progress that panics at its `at`-th phase or message (0: never): a pass stopped part
/// way, its work files and checkpoint left as a kill would leave them.
pub struct StopAt {
    calls: AtomicUsize,
    at: usize,
}

impl StopAt {
    /// Stop at the `at`-th report.
    pub fn new(at: usize) -> StopAt {
        StopAt {
            calls: AtomicUsize::new(0),
            at,
        }
    }

    fn tick(&self) {
        if self.calls.fetch_add(1, SeqCst) + 1 == self.at {
            panic!("stopped by the fuzz set-up");
        }
    }
}

impl Progress for StopAt {
    fn phase(&self, _: &str, _: u64) {
        self.tick();
    }
    fn advance(&self, _: u64) {}
    fn message(&self, _: &str) {
        self.tick();
    }
}

/// Run `f`, which may be stopped by a [`StopAt`]: whether it ran to its end. The panic hook
/// (libFuzzer's aborts) is set aside meanwhile: only for the set-up, never for an input.
pub fn run_stopped(f: impl FnOnce()) -> bool {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = catch_unwind(AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    r.is_ok()
}

/// Snapshots of a pass stopped at each of `stops` (in copies of `base`, under `root`): the
/// directories where it left a checkpoint named `checkpoint` (relative to the directory).
pub fn stopped_snapshots(
    base: &Path,
    root: &Path,
    stops: &[usize],
    checkpoint: &str,
    run: impl Fn(&Path, &StopAt),
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for &stop in stops {
        let dir = root.join(format!("stop-{stop}"));
        copy_dir(base, &dir);
        let ended = run_stopped(|| run(&dir, &StopAt::new(stop)));
        if !ended && dir.join(checkpoint).is_file() {
            out.push(dir);
        } else {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    out
}

/// One valid compressed table of a small level, to be damaged by a target.
pub struct Base {
    /// Its level.
    pub seeds: u32,
    /// Its file name (`level-NN.cvalues` or `.cdepth`).
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The plain database (levels `0..=max` with plain depth tables) in `root/plain`, and
/// compressed tables of `levels` from it: per level, self-contained values, the probe form
/// with segments of 128 and of 256, and depths.
pub fn compressed_bases(root: &Path, max: u32, levels: &[u32]) -> (PathBuf, Vec<Base>) {
    use awari_db::compressed::Form;
    use awari_db::{compressed_depth_path, compressed_path, Levels};
    use awari_solver::compress::{compress_depth_table, compress_table};
    let plain = root.join("plain");
    build_db(&plain, max, Some(DepthForm::Plain));
    let db = Levels::open(&plain, Some(Rules::Awari)).expect("plain levels");
    let mut out = Vec::new();
    for &n in levels {
        let table = db.require(n).expect("level");
        let layouts = [
            None,
            Some(Form::CaptureDontCares.with_segment_log2(7)),
            Some(Form::CaptureDontCares.with_segment_log2(8)),
        ];
        for (k, layout) in layouts.into_iter().enumerate() {
            let dir = root.join(format!("form-{k}"));
            std::fs::create_dir_all(&dir).expect("dir");
            let path = compressed_path(&dir, n);
            compress_table(table, layout.map(|l| (&db, l)), &path, &Silent).expect("compress");
            out.push(Base {
                seeds: n,
                name: path.file_name().unwrap().to_string_lossy().into_owned(),
                bytes: std::fs::read(&path).expect("read"),
            });
        }
        let dir = root.join("depth");
        std::fs::create_dir_all(&dir).expect("dir");
        let path = compressed_depth_path(&dir, n);
        compress_depth_table(&db, n, &path, &Silent)
            .expect("compress depth")
            .expect("a one-byte depth table");
        out.push(Base {
            seeds: n,
            name: path.file_name().unwrap().to_string_lossy().into_owned(),
            bytes: std::fs::read(&path).expect("read"),
        });
    }
    (plain, out)
}

/// Whether every record of `file` passes what `RecordReader` checks (whole, of a chunk below
/// `chunks`, a body of at most 4 MiB, its check), and the file ends on a record: such a
/// file is believed by a resume, whatever its records hold (a forged or a genuine one).
pub fn records_pass(file: &[u8], chunks: u64) -> bool {
    let mut at = 0;
    while at < file.len() {
        let Some(head) = file.get(at..at + 12) else {
            return false;
        };
        let chunk = u32::from_le_bytes(head[0..4].try_into().unwrap());
        let len = u32::from_le_bytes(head[4..8].try_into().unwrap()) as usize;
        if u64::from(chunk) >= chunks || len > 4 << 20 {
            return false;
        }
        let Some(body) = file.get(at + 12..at + 12 + len) else {
            return false;
        };
        if record(chunk, body)[..12] != *head {
            return false;
        }
        at += 12 + len;
    }
    true
}

/// The two-bit checkpoint's fields (`solver/src/level/twobit/checkpoint.rs`): the fixed ones
/// (75 bytes), and the files it lists with their lengths.
pub struct TwoBitFields {
    /// Everything before the count of files.
    pub fixed: Vec<u8>,
    /// The files listed, with their lengths.
    pub files: Vec<(String, u64)>,
}

impl TwoBitFields {
    /// Parse a checkpoint's fields (`None` if they are not whole).
    pub fn parse(fields: &[u8]) -> Option<TwoBitFields> {
        const FIXED: usize = 3 + 4 + 4 + 8 * 7 + 4 + 4;
        let fixed = fields.get(..FIXED)?.to_vec();
        let mut r = Input(&fields[FIXED..]);
        let count = u64::from_le_bytes(r.take(8).try_into().ok()?);
        let mut files = Vec::new();
        for _ in 0..count {
            let len = u32::from_le_bytes(r.take(4).try_into().ok()?) as usize;
            let name = String::from_utf8(r.take(len).to_vec()).ok()?;
            let bytes = u64::from_le_bytes(r.take(8).try_into().ok()?);
            files.push((name, bytes));
        }
        r.is_empty().then_some(TwoBitFields { fixed, files })
    }

    /// The fields again.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.fixed.clone();
        out.extend_from_slice(&(self.files.len() as u64).to_le_bytes());
        for (name, len) in &self.files {
            out.extend_from_slice(&(name.len() as u32).to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&len.to_le_bytes());
        }
        out
    }
}

/// The level of the resumable passes' targets (`checkpoint`, `record_file`).
pub const PASS_LEVEL: u32 = 6;

/// Where the resumable passes' targets start from: level [`PASS_LEVEL`] under awari and the
/// levels below it, and directories of passes stopped part way (real work files and
/// checkpoints).
pub struct Passes {
    /// The two-bit build's: the levels below, and its stopped builds (checkpoint
    /// `level-06.work/resume`).
    pub two_bit: Vec<PathBuf>,
    /// The low-memory build's: the levels below, and its stopped builds (checkpoint
    /// `level-06.lowmem/resume`).
    pub low_memory: Vec<PathBuf>,
    /// The in-memory build's: the levels below, and its stopped builds (their state saved
    /// in `level-06.mstate`).
    pub memory: Vec<PathBuf>,
    /// The depth pass's (by waves): every level, and its stopped passes (`level-06.dresume`).
    pub waves: Vec<PathBuf>,
    /// The class pass's: every level, and its stopped passes (`level-06.dclasses`).
    pub classes: Vec<PathBuf>,
    /// The directory with the levels below [`PASS_LEVEL`].
    pub lower: PathBuf,
    /// The directory with every level up to [`PASS_LEVEL`].
    pub full: PathBuf,
}

/// Run the build of [`PASS_LEVEL`] by `plan` in `dir` (which holds the levels below it).
pub fn run_build(dir: &Path, plan: awari_solver::build::Plan, p: &dyn Progress) -> bool {
    let levels = awari_db::Levels::open(dir, Some(Rules::Awari)).expect("levels");
    awari_solver::build::build_level(dir, PASS_LEVEL, Rules::Awari, &levels, plan, p).is_ok()
}

/// Run the depth pass of [`PASS_LEVEL`] in `dir` (by value classes or by waves), writing its
/// table there.
pub fn run_depth(dir: &Path, classes: bool, p: &dyn Progress) -> bool {
    use awari_solver::depth::{ClassPass, DepthPass};
    let levels = awari_db::Levels::open(dir, Some(Rules::Awari)).expect("levels");
    let n = PASS_LEVEL;
    if classes {
        ClassPass::open(&levels, n, dir, 1)
            .and_then(|c| c.run(true, 4, p))
            .is_ok()
    } else {
        DepthPass::open(&levels, n, dir, 1)
            .and_then(|c| c.run(true, 4, p))
            .is_ok()
    }
}

/// Build the start of the passes' targets under `root` (a second or so).
pub fn passes(root: &Path) -> Passes {
    use awari_db::level_path;
    // A checkpoint at every step boundary.
    std::env::set_var("AWARI_CHECKPOINT_SECONDS", "0");
    let n = PASS_LEVEL;
    let full = root.join("full");
    build_db(&full, n, None);
    let lower = root.join("lower");
    std::fs::create_dir_all(&lower).expect("dir");
    for m in 0..n {
        std::fs::copy(level_path(&full, m), level_path(&lower, m)).expect("copy");
    }
    let stops: Vec<usize> = (1..=16).collect();
    let ckpt = format!("level-{n:02}.work/resume");
    let mut two_bit = stopped_snapshots(&lower, &root.join("two-bit"), &stops, &ckpt, |d, p| {
        run_build(d, awari_solver::build::Plan::TwoBit { bucket: 1 }, p);
    });
    two_bit.push(lower.clone());
    let ckpt = format!("level-{n:02}.lowmem/resume");
    let mut low_memory =
        stopped_snapshots(&lower, &root.join("low-memory"), &stops, &ckpt, |d, p| {
            run_build(d, awari_solver::build::Plan::LowMemory { bucket: 1 }, p);
        });
    low_memory.push(lower.clone());
    let save = format!("level-{n:02}.mstate");
    let mut memory = stopped_snapshots(&lower, &root.join("memory"), &stops, &save, |d, p| {
        run_build(d, awari_solver::build::Plan::InMemory, p);
    });
    memory.push(lower.clone());
    let depth = |classes: bool| {
        let (tag, file) = if classes {
            ("classes", format!("level-{n:02}.dclasses"))
        } else {
            ("waves", format!("level-{n:02}.dresume"))
        };
        let mut dirs = stopped_snapshots(&full, &root.join(tag), &stops, &file, |d, p| {
            run_depth(d, classes, p);
        });
        dirs.push(full.clone());
        dirs
    };
    let waves = depth(false);
    let classes = depth(true);
    Passes {
        two_bit,
        low_memory,
        memory,
        waves,
        classes,
        lower,
        full,
    }
}

/// Whether a resume believes the record file `file` of a level of `size` positions (`chunks`
/// chunks): every record passes what [`records_pass`] checks, and its body is well formed
/// within the level, as `seed_records::within_level` requires since the fuzz findings were
/// fixed (0f63c7f): gaps of at least 1, of at most 4 varint bytes, every offset below the
/// positions of its chunk in the level, the last varint whole, and (`values`: a part file's
/// body) a value byte after each. Anything else is damage, which must never be believed.
pub fn records_believed(file: &[u8], chunks: u64, size: u64, values: bool) -> bool {
    const CHUNK: u64 = 1 << 20;
    if !records_pass(file, chunks) {
        return false;
    }
    record_bodies(file).iter().all(|&(chunk, body)| {
        let limit = size.saturating_sub(u64::from(chunk) * CHUNK).min(CHUNK) as i64;
        let (mut x, mut shift, mut prev, mut i) = (0u64, 0u32, -1i64, 0);
        while i < body.len() {
            let b = body[i];
            i += 1;
            if shift >= 28 {
                return false;
            }
            x |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b < 0x80 {
                let gap = if values { x } else { x >> 1 } as i64;
                prev += gap;
                if gap == 0 || prev >= limit {
                    return false;
                }
                if values {
                    if i >= body.len() {
                        return false;
                    }
                    i += 1;
                }
                x = 0;
                shift = 0;
            }
        }
        shift == 0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fix-ups restate the formats: on a table as written they change nothing.
    #[test]
    fn fix_ups_leave_an_intact_table_as_it_is() {
        let root = scratch("lib-test");
        let (plain, bases) = compressed_bases(&root, 6, &[1, 6]);
        assert_eq!(bases.len(), 8);
        for b in &bases {
            let mut bytes = b.bytes.clone();
            fix_compressed(&mut bytes);
            assert!(bytes == b.bytes, "{} of level {}", b.name, b.seeds);
        }
        for n in 0..=6 {
            for path in [
                awari_db::level_path(&plain, n),
                awari_db::depth_path(&plain, n),
            ] {
                let original = std::fs::read(&path).unwrap();
                let mut bytes = original.clone();
                fix_plain(&mut bytes);
                assert!(bytes == original, "{}", path.display());
            }
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// The two-bit checkpoint's fields parse and write back the same, and records round-trip.
    #[test]
    fn checkpoint_fields_and_records_round_trip() {
        let root = scratch("lib-test-passes");
        let p = passes(&root);
        let mut seen = 0;
        for dir in &p.two_bit {
            let Ok(file) = std::fs::read(dir.join("level-06.work/resume")) else {
                continue;
            };
            let fields = checkpoint_fields(&file).unwrap();
            let parsed = TwoBitFields::parse(fields).unwrap();
            assert_eq!(parsed.to_bytes(), fields);
            assert_eq!(frame_checkpoint(TWO_BIT_CHECKPOINT, fields), file);
            for (name, len) in &parsed.files {
                let bytes = std::fs::read(dir.join("level-06.work").join(name)).unwrap();
                let bytes = &bytes[..*len as usize];
                assert!(records_pass(bytes, 1), "{name}");
                let values = name.starts_with("part-");
                assert!(
                    records_believed(bytes, 1, awari_db::level_size(6), values),
                    "{name}"
                );
                let again: Vec<u8> = record_bodies(bytes)
                    .iter()
                    .flat_map(|(c, b)| record(*c, b))
                    .collect();
                assert_eq!(again, bytes);
                seen += 1;
            }
        }
        assert!(seen > 0);
        // Low-memory builds stopped with a checkpoint: in the exits, settling, and after.
        let stages: std::collections::BTreeSet<String> = p
            .low_memory
            .iter()
            .filter_map(|d| {
                awari_solver::lowmem::checkpoint_stage(d, 6, Rules::Awari)
                    .unwrap()
                    .map(|s| {
                        format!("{s:?}")
                            .split_whitespace()
                            .next()
                            .unwrap()
                            .to_string()
                    })
            })
            .collect();
        assert!(stages.len() >= 2, "{stages:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
