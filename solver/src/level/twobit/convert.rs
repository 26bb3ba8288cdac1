//! The end of a two-bit level: the log's part files (see `log`) merged into the table's
//! values, one exit bucket at a time, in the memory the exits phase used: the bucket's bytes
//! zeroed (a draw), its part file read once and each position given its value, the bytes
//! handed on in order (the build's driver writes them: `crate::build::level`). With one bit,
//! whose settling leaves memory held by the allocator, a bucket goes in windows (see
//! `budget::convert_window`), its part file read once per window.

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
            // Where the records of the windows after the first are: (chunk, byte), read in
            // the first window's reading, so that the later windows read only their own.
            let mut later: Vec<(u32, u64)> = Vec::new();
            for from in (start..end.max(start + 1)).step_by(window as usize) {
                let to = (from + window).min(end);
                buf.clear();
                buf.resize((to - from) as usize, 0u8);
                let chunks = from / CHUNK..to.div_ceil(CHUNK);
                if part.exists() {
                    let mut reader = self.records(&part)?;
                    let mut records = Vec::new();
                    let mut bytes = 0;
                    let mut wanted = later
                        .iter()
                        .filter(|r| chunks.contains(&u64::from(r.0)))
                        .copied()
                        .collect::<Vec<_>>()
                        .into_iter();
                    loop {
                        let record = if from == start {
                            let at = reader.offset();
                            match reader.next_record()? {
                                Some((c, _)) if !(start..end).contains(&(u64::from(c) * CHUNK)) => {
                                    return Err(self.bad_part(k));
                                }
                                Some((c, _)) if !chunks.contains(&u64::from(c)) => {
                                    later.push((c, at));
                                    continue;
                                }
                                r => r,
                            }
                        } else {
                            let Some((c, at)) = wanted.next() else {
                                break;
                            };
                            reader.skip_to(at)?;
                            match reader.next_record()? {
                                Some(r) if r.0 == c => Some(r),
                                _ => return Err(self.bad_part(k)),
                            }
                        };
                        let Some(record) = record else {
                            break;
                        };
                        bytes += record.1.len();
                        records.push(record);
                        if bytes >= list_batch(self.bits) {
                            apply_records(&mut records, &mut buf, from / CHUNK);
                            bytes = 0;
                        }
                    }
                    apply_records(&mut records, &mut buf, from / CHUNK);
                }
                sink(&buf)?;
            }
        }
        Ok(())
    }

    /// A part file with a position outside its bucket, or not where the first window read
    /// it: the work directory is damaged.
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

/// [`apply`] on `records` sorted by chunk, then emptied.
fn apply_records(records: &mut Vec<(u32, Vec<u8>)>, buf: &mut [u8], first: u64) {
    records.sort_unstable_by_key(|r| r.0);
    apply(records, buf, first);
    records.clear();
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
