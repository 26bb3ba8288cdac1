//! The depth table of a class pass: the wave files 1..=max of every class merged into
//! `level-NN.depth` in index order, window by window of chunks. There may be thousands of
//! wave files, so none is held open: each remembers where its next record starts and which
//! chunk it is of, and is reopened there for the windows it has records in.

use crate::seed_records::Body;
use std::path::PathBuf;

use awari_db::{depth_path, Header, TableError, TableWriter};

use super::search::class_wave_path;
use super::{ClassPass, LISTS};
use crate::depth::{window, DepthError, CHUNK};
use crate::progress::Progress;
use crate::seed_records::{decode_seeds, RecordReader};

/// One wave file being merged.
struct Source {
    path: PathBuf,
    depth: u16,
    /// Where its next record starts.
    offset: u64,
    /// The chunk of its next record (`None`: it is read to its end); 0 before the first read.
    next: Option<u32>,
}

impl ClassPass<'_> {
    /// Merge the wave files of every class into the depth table (the state is freed by now:
    /// a window holds up to what it held, a quarter of a byte per position of the level with
    /// two bits, an eighth with one: what the waves found is freed too, but the allocator
    /// keeps much of it).
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
        let w = usize::from(width);
        let path = depth_path(&self.out, n);
        let mut writer = TableWriter::create(&path, Header::depth(self.rules, n, width))?;
        let mut sources = Vec::new();
        for v in 1..=(LISTS / 2) as u8 {
            for k in 1..=u32::from(max_depth) {
                let mut any = false;
                for won in [true, false] {
                    let p = class_wave_path(&self.out, n, v, won, k);
                    if p.exists() {
                        any = true;
                        sources.push(Source {
                            path: p,
                            depth: k as u16,
                            offset: 0,
                            next: Some(0),
                        });
                    }
                }
                if !any {
                    break;
                }
            }
        }
        let chunks = size.div_ceil(CHUNK);
        let state = match self.one_bit {
            Some(_) => size / 8,
            None => size / 4,
        };
        let per_window = (state / w as u64 / CHUNK).max(window());
        for first in (0..chunks).step_by(per_window as usize) {
            let last = (first + per_window).min(chunks);
            let lo = first * CHUNK;
            let hi = (last * CHUNK).min(size);
            let mut buf = vec![0u8; (hi - lo) as usize * w];
            for s in &mut sources {
                if s.next.is_some_and(|c| u64::from(c) < last) {
                    read_window(s, first, last, &mut buf, w, size)?;
                }
            }
            writer.write(&buf)?;
            progress.advance(hi - lo);
        }
        writer.finish()?;
        Ok(path)
    }
}

/// Write the depth of every entry of `s` in chunks `first..last` into `buf` (the window's
/// entries, `w` bytes each), leaving `s` at its first record past the window.
fn read_window(
    s: &mut Source,
    first: u64,
    last: u64,
    buf: &mut [u8],
    w: usize,
    size: u64,
) -> Result<(), TableError> {
    let mut r = RecordReader::open(&s.path, s.offset, 1 << 16, size, Body::Seeds, None)?;
    loop {
        match r.peek_chunk()? {
            None => {
                s.next = None;
                return Ok(());
            }
            Some(chunk) if u64::from(chunk) >= last || u64::from(chunk) < first => {
                // Past the window (a record before it would be out of order: damage).
                if u64::from(chunk) < first {
                    return Err(TableError::Damaged {
                        path: s.path.clone(),
                        what: format!("chunk {chunk} out of order"),
                    });
                }
                s.next = Some(chunk);
                s.offset = r.offset();
                return Ok(());
            }
            Some(_) => {}
        }
        let (chunk, body) = r.next_record()?.expect("peeked");
        s.offset = r.offset();
        let base = ((u64::from(chunk) - first) * CHUNK) as usize;
        for (o, _) in decode_seeds(&body, u32::MAX) {
            let at = (base + o as usize) * w;
            if let Some(e) = buf.get_mut(at..at + w) {
                e.copy_from_slice(&s.depth.to_le_bytes()[..w]);
            }
        }
    }
}
