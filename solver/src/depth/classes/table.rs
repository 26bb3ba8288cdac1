//! The depth table of a class pass: the wave files 1..=max of every class merged into
//! `level-NN.depth` in index order, window by window of chunks. There may be thousands of
//! wave files, so none is held open: each remembers where its next record starts and which
//! chunk it is of, and is reopened there for the windows it has records in.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::PathBuf;

use awari_db::{depth_path, Header, TableError, TableWriter};

use super::search::class_wave_path;
use super::{ClassPass, LISTS};
use crate::depth::{window, DepthError, CHUNK};
use crate::progress::Progress;
use crate::seed_records::decode_seeds;

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
    /// a window holds up to a quarter of a byte per position of the level).
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
        let per_window = (size / 4 / w as u64 / CHUNK).max(window());
        for first in (0..chunks).step_by(per_window as usize) {
            let last = (first + per_window).min(chunks);
            let lo = first * CHUNK;
            let hi = (last * CHUNK).min(size);
            let mut buf = vec![0u8; (hi - lo) as usize * w];
            for s in &mut sources {
                if s.next.is_some_and(|c| u64::from(c) < last) {
                    read_window(s, first, last, &mut buf, w)?;
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
) -> Result<(), TableError> {
    let io = |source| TableError::Io {
        path: s.path.clone(),
        source,
    };
    let mut f = File::open(&s.path).map_err(io)?;
    f.seek(SeekFrom::Start(s.offset)).map_err(io)?;
    let mut r = BufReader::with_capacity(1 << 16, f);
    loop {
        let mut head = [0u8; 8];
        match r.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                s.next = None;
                return Ok(());
            }
            Err(e) => return Err(io(e)),
        }
        let chunk = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
        if u64::from(chunk) >= last {
            s.next = Some(chunk);
            return Ok(());
        }
        let len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
        let mut body = vec![0u8; len];
        r.read_exact(&mut body).map_err(io)?;
        s.offset += 8 + len as u64;
        let base = (u64::from(chunk) - first) * CHUNK;
        for (o, _) in decode_seeds(&body) {
            let at = (base + u64::from(o)) as usize * w;
            if w == 1 {
                buf[at] = s.depth as u8;
            } else {
                buf[at..at + 2].copy_from_slice(&s.depth.to_le_bytes());
            }
        }
    }
}
