//! The end of a two-bit level: the log's part files (see `log`) merged into the table's
//! values, one exit bucket at a time, in the memory the exits phase used: the bucket's bytes
//! zeroed (a draw), its part file read once and each position given its value, the bytes
//! handed on in order (the build's driver writes them: `crate::build::level`). With one bit,
//! whose settling leaves memory held by the allocator, a bucket goes in windows (see
//! `budget::convert_window`), its part file read once per window (usually two: the second
//! reads about 2 bytes a position more).
//!
//! With depths the part files are merged a second time, into the level's depth table
//! (`level-NN.depth`: a draw's depth is 0), a byte a position, or two (in windows of half a
//! bucket) where the conversion of the values found a depth above 255.

use awari_db::table::CHECKSUM_CHUNK;
use std::sync::atomic::Ordering::Relaxed;

use awari_db::{depth_path, Header, TableError, TableWriter};

use super::log::decode;
use super::stream::list_batch;
use super::work_files::part_name;
use super::{budget, TwoBit, BUCKET_UNIT, CHUNK};

const _: () = assert!(CHECKSUM_CHUNK as u64 % CHUNK == 0);

/// What the conversion takes of each position of the part files.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    /// Its value, a byte.
    Value,
    /// Its depth, little-endian in this many bytes (1 or 2).
    Depth(usize),
}

impl TwoBit<'_> {
    /// Merge the part files into the values, a bucket at a time into `sink` (see the module
    /// documentation). Returns the largest depth (0 without depths).
    pub(super) fn convert(
        &self,
        sink: impl FnMut(&[u8]) -> Result<(), TableError>,
    ) -> Result<u16, TableError> {
        self.merge_parts(Field::Value, sink)
    }

    /// With depths, after [`TwoBit::convert`] found the largest, `max_depth`: merge the part
    /// files into the level's depth table in the database directory (written as `*.tmp`,
    /// synced and renamed).
    pub(super) fn convert_depths(&self, max_depth: u16) -> Result<(), TableError> {
        let n = self.level.seeds();
        let width: u8 = if max_depth <= u16::from(u8::MAX) {
            1
        } else {
            2
        };
        let dir = self
            .work
            .parent()
            .expect("a work directory in the database");
        let mut writer =
            TableWriter::create(depth_path(dir, n), Header::depth(self.rules, n, width))?;
        self.merge_parts(Field::Depth(usize::from(width)), |d| {
            self.io.written.fetch_add(d.len() as u64, Relaxed);
            writer.write(d)
        })?;
        writer.finish()?;
        Ok(())
    }

    /// The part files merged into `field`'s bytes in index order, into `sink`, a window of a
    /// bucket at a time. Returns the largest depth read.
    fn merge_parts(
        &self,
        field: Field,
        mut sink: impl FnMut(&[u8]) -> Result<(), TableError>,
    ) -> Result<u16, TableError> {
        let size = self.level.size();
        let width = match field {
            Field::Value => 1,
            Field::Depth(w) => w as u64,
        };
        // A window's bytes within the window of values (whole bucket units).
        let window = budget::convert_window(self.level.seeds(), self.bucket, self.bits);
        let window = (window / width / BUCKET_UNIT * BUCKET_UNIT).max(BUCKET_UNIT);
        let mut max_depth = 0;
        let mut buf = Vec::new();
        let (read0, mut windows) = (self.io.read.load(Relaxed), 0);
        for (k, start) in (0..size.max(1)).step_by(self.bucket as usize).enumerate() {
            let end = (start + self.bucket).min(size);
            let part = self.work.join(part_name(k as u32));
            // Each window reads the bucket's part file and keeps its own records: a record per
            // chunk and flush of the log, too many to note where each is at the largest levels.
            for from in (start..end.max(start + 1)).step_by(window as usize) {
                let to = (from + window).min(end);
                buf.clear();
                buf.resize(((to - from) * width) as usize, 0u8);
                let chunks = from / CHUNK..to.div_ceil(CHUNK);
                if part.exists() {
                    let mut reader = self.records(&part)?;
                    loop {
                        let mut batch = reader.batch(list_batch(self.bits))?;
                        if batch.is_empty() {
                            break;
                        }
                        if batch
                            .iter()
                            .any(|r| !(start..end).contains(&(u64::from(r.0) * CHUNK)))
                        {
                            return Err(self.bad_part(k));
                        }
                        batch.retain(|r| chunks.contains(&u64::from(r.0)));
                        batch.sort_unstable_by_key(|r| r.0);
                        let d = apply(&batch, &mut buf, chunks.start, field, self.depths);
                        max_depth = max_depth.max(d);
                    }
                }
                sink(&buf)?;
                windows += 1;
            }
        }
        if std::env::var_os("AWARI_TIMINGS").is_some() {
            eprintln!(
                "level {} conversion: {windows} windows of {window} positions, buckets of {}; part files read {:.2} B/pos",
                self.level.seeds(),
                self.bucket,
                (self.io.read.load(Relaxed) - read0) as f64 / size.max(1) as f64
            );
        }
        Ok(max_depth)
    }

    /// A part file with a position outside its bucket: the work directory is damaged.
    fn bad_part(&self, k: usize) -> TableError {
        TableError::Damaged {
            path: self.work.join(part_name(k as u32)),
            what: "a position outside its bucket".into(),
        }
    }

    /// The error of an I/O call on the work directory itself (listing it, a file's length).
    pub(super) fn dir_error(&self) -> impl Fn(std::io::Error) -> TableError + '_ {
        |source| TableError::Io {
            path: self.work.clone(),
            source,
        }
    }
}

/// Give the positions of `records` (sorted by chunk, every chunk from `first` on and inside
/// `buf`) their `field` in `buf`, which starts at chunk `first` (the part files carrying
/// depths where `depths`): halves of the records, and of the buffer split between their
/// chunks, in parallel. Returns the largest depth read.
fn apply(
    records: &[(u32, Vec<u8>)],
    buf: &mut [u8],
    first: u64,
    field: Field,
    depths: bool,
) -> u16 {
    let (Some(lo), Some(hi)) = (records.first(), records.last()) else {
        return 0;
    };
    let width = match field {
        Field::Value => 1,
        Field::Depth(w) => w,
    };
    if records.len() <= 8 || lo.0 == hi.0 {
        let mut max_depth = 0;
        for (c, body) in records {
            let base = ((u64::from(*c) - first) * CHUNK) as usize;
            decode(body, u32::MAX, depths, |o, v, d| {
                max_depth = max_depth.max(d);
                let at = (base + o as usize) * width;
                if let Some(b) = buf.get_mut(at..at + width) {
                    match field {
                        Field::Value => b[0] = v as u8,
                        Field::Depth(w) => b.copy_from_slice(&d.to_le_bytes()[..w]),
                    }
                }
            });
        }
        return max_depth;
    }
    let mid = records[records.len() / 2].0;
    let mut split = records.partition_point(|r| r.0 < mid);
    if split == 0 {
        split = records.partition_point(|r| r.0 <= lo.0);
    }
    // Both halves hold records: lo's chunk is below c, hi's at or above it.
    let c = u64::from(records[split].0);
    let at = (((c - first) * CHUNK) as usize * width).min(buf.len());
    let (left, right) = buf.split_at_mut(at);
    let (a, b) = records.split_at(split);
    let (x, y) = rayon::join(
        || apply(a, left, first, field, depths),
        || apply(b, right, c, field, depths),
    );
    x.max(y)
}
