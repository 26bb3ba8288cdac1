//! The end of a two-bit level: the work file converted into the table in place (flagged
//! values to plain ones, unsettled positions to 0, a draw), its header written, and renamed to
//! `level-NN`.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use awari_db::table::{chunk_digest, combine_digests, rename_into_place, CHECKSUM_CHUNK};
use awari_db::{level_path, Header, TableError};
use rayon::prelude::*;

use super::codes::{is_value, value_of_byte, WON};
use super::{TwoBit, PER_WORD};
use crate::progress::Progress;
use crate::settle::LevelCounts;

impl TwoBit<'_> {
    /// Convert the work file into the table in place, blocks of one checksum chunk at a time
    /// (several in parallel): flagged values become plain, unsettled positions 0; then the
    /// header, fsync and rename. Idempotent, so a kill here only means doing it again.
    pub(super) fn convert(&self, progress: &dyn Progress) -> Result<LevelCounts, TableError> {
        let size = self.level.size();
        let block = CHECKSUM_CHUNK as u64;
        let blocks = size.div_ceil(block).max(1);
        let per_round = 2 * rayon::current_num_threads() as u64;
        let mut digests = Vec::with_capacity(blocks as usize);
        let mut counts = LevelCounts::default();
        for round in (0..blocks).step_by(per_round as usize) {
            let done: Vec<(u64, LevelCounts)> = (round..(round + per_round).min(blocks))
                .into_par_iter()
                .map(|b| {
                    let start = b * block;
                    let end = (start + block).min(size);
                    let mut buf = vec![0u8; (end - start) as usize];
                    self.read_work(start, &mut buf)?;
                    let mut c = LevelCounts::default();
                    let words = &self.words()[(start / PER_WORD) as usize..];
                    for (bytes, word) in buf.chunks_mut(PER_WORD as usize).zip(words) {
                        let w = word.load(Relaxed);
                        for (k, byte) in bytes.iter_mut().enumerate() {
                            let v = if (w >> (2 * k)) & 3 < WON {
                                0
                            } else if is_value(*byte) {
                                value_of_byte(*byte)
                            } else {
                                // Converted already, by a run this one resumes.
                                *byte as i8
                            };
                            *byte = v as u8;
                            c.add(v);
                        }
                    }
                    self.write_work(start, &buf)?;
                    progress.advance(buf.len() as u64);
                    Ok((chunk_digest(&buf), c))
                })
                .collect::<Result<_, TableError>>()?;
            for (d, c) in done {
                digests.push(d);
                counts = counts.merge(c);
            }
        }
        let mut header = Header::values(self.rules, self.level.seeds());
        header.checksum = combine_digests(&digests);
        self.work
            .file
            .write_all_at(&header.to_bytes(), 0)
            .map_err(self.work.io())?;
        self.work.file.sync_all().map_err(self.work.io())?;
        let dir = self.work.path.parent().unwrap_or(Path::new("."));
        rename_into_place(&self.work.path, &level_path(dir, self.level.seeds()))?;
        Ok(counts)
    }
}
