//! The depth table of a pass: wave files 1..=max merged, window by window of chunks, into
//! `level-NN.depth` (one byte a position, two past depth 255).

use std::path::PathBuf;

use awari_db::{depth_path, Header, TableWriter};
use rayon::prelude::*;

use super::work_files::wave_reader;
use super::{wave_path, window, DepthError, DepthPass, CHUNK};
use crate::progress::Progress;
use crate::seed_records::decode_seeds;

impl DepthPass<'_> {
    /// Merge wave files 1..=`max_depth` into the depth table, window by window of chunks.
    pub(super) fn write_table(
        &self,
        max_depth: u16,
        progress: &dyn Progress,
    ) -> Result<PathBuf, DepthError> {
        let n = self.level.seeds();
        let size = self.level.size();
        let width: u8 = if max_depth <= u16::from(u8::MAX) {
            1
        } else {
            2
        };
        let path = depth_path(&self.out, n);
        let mut writer = TableWriter::create(&path, Header::depth(self.rules, n, width))?;
        let chunks = size.div_ceil(CHUNK);
        let mut readers = (1..=u32::from(max_depth))
            .map(|k| wave_reader(&wave_path(&self.out, n, k), size).map(|r| (k as u16, r)))
            .collect::<Result<Vec<_>, _>>()?;
        let w = usize::from(width);
        let window = window();
        for first in (0..chunks).step_by(window as usize) {
            let last = (first + window).min(chunks);
            // The records of every wave for these chunks: (chunk, depth, body).
            let mut records: Vec<(u32, u16, Vec<u8>)> = Vec::new();
            for (k, r) in &mut readers {
                while let Some(rec) = r.next_before(last as u32)? {
                    records.push((rec.0, *k, rec.1));
                }
            }
            let lo = first * CHUNK;
            let hi = (last * CHUNK).min(size);
            let mut buf = vec![0u8; (hi - lo) as usize * w];
            buf.par_chunks_mut(CHUNK as usize * w)
                .enumerate()
                .for_each(|(j, out)| {
                    let c = (first + j as u64) as u32;
                    for (_, k, body) in records.iter().filter(|r| r.0 == c) {
                        for (o, _) in decode_seeds(body, u32::MAX) {
                            let o = o as usize * w;
                            if let Some(e) = out.get_mut(o..o + w) {
                                e.copy_from_slice(&k.to_le_bytes()[..w]);
                            }
                        }
                    }
                });
            writer.write(&buf)?;
            progress.advance(hi - lo);
        }
        writer.finish()?;
        Ok(path)
    }
}
