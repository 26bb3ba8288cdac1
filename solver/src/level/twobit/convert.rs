//! The end of a two-bit level: the log's part files (see `log`) merged into the table's
//! values, one exit bucket at a time, in the memory the exits phase used: the bucket's bytes
//! zeroed (a draw), its part file read once and each position given its value, the bytes
//! handed on in order (the build's driver writes them: `crate::build::level`). With one bit,
//! whose settling leaves memory held by the allocator, a bucket goes in windows (see
//! `budget::convert_window`), its part file read once per window (usually two: the second
//! reads about 2 bytes a position more).

use awari_db::table::CHECKSUM_CHUNK;
use awari_db::TableError;

use super::log::decode;
use super::stream::list_batch;
use super::work_files::part_name;
use super::{budget, TwoBit, CHUNK};

const _: () = assert!(CHECKSUM_CHUNK as u64 % CHUNK == 0);

impl TwoBit<'_> {
    /// Merge the part files into the values, a bucket at a time into `sink` (see the module
    /// documentation).
    pub(super) fn convert(
        &self,
        mut sink: impl FnMut(&[u8]) -> Result<(), TableError>,
    ) -> Result<(), TableError> {
        let size = self.level.size();
        let window = budget::convert_window(self.level.seeds(), self.bucket, self.bits);
        let mut buf = Vec::new();
        for (k, start) in (0..size.max(1)).step_by(self.bucket as usize).enumerate() {
            let end = (start + self.bucket).min(size);
            let part = self.work.join(part_name(k as u32));
            // Each window reads the bucket's part file and keeps its own records: a record per
            // chunk and flush of the log, too many to note where each is at the largest levels.
            for from in (start..end.max(start + 1)).step_by(window as usize) {
                let to = (from + window).min(end);
                buf.clear();
                buf.resize((to - from) as usize, 0u8);
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
                        apply(&batch, &mut buf, chunks.start);
                    }
                }
                sink(&buf)?;
            }
        }
        Ok(())
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
/// `buf`) their values in `buf`, which starts at chunk `first`: halves of the records, and of
/// the buffer split between their chunks, in parallel.
fn apply(records: &[(u32, Vec<u8>)], buf: &mut [u8], first: u64) {
    let (Some(lo), Some(hi)) = (records.first(), records.last()) else {
        return;
    };
    if records.len() <= 8 || lo.0 == hi.0 {
        for (c, body) in records {
            let base = ((u64::from(*c) - first) * CHUNK) as usize;
            decode(body, u32::MAX, |o, v| {
                if let Some(b) = buf.get_mut(base + o as usize) {
                    *b = v as u8;
                }
            });
        }
        return;
    }
    let mid = records[records.len() / 2].0;
    let mut split = records.partition_point(|r| r.0 < mid);
    if split == 0 {
        split = records.partition_point(|r| r.0 <= lo.0);
    }
    // Both halves hold records: lo's chunk is below c, hi's at or above it.
    let c = u64::from(records[split].0);
    let at = (((c - first) * CHUNK) as usize).min(buf.len());
    let (left, right) = buf.split_at_mut(at);
    let (a, b) = records.split_at(split);
    rayon::join(|| apply(a, left, first), || apply(b, right, c));
}
