//! Reading a compressed table: [`Compressed`], the open mapping, its index records and
//! blocks (each block's checksum checked at its first decode), and the segment decoder of
//! every coder (coder 1's Huffman here, coders 4 and 5's rANS in `contexts.rs`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::Mmap;
use rayon::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::TableError;
use crate::format::{checksum, io_err, map as map_file};
use crate::{rans, Level};

use super::format::{
    CompressedHeader, Form, BLOCK_SEGMENTS, GROUP_BLOCKS, GROUP_RECORD, HEADER_LEN, MAX_CODE_LEN,
    TAIL, WIDE, WIDE_HEAD,
};
use super::huffman::{Model, FAST_BITS, LONG};
use super::{cache, contexts};

/// What went wrong in one block.
fn bad_block(path: &Path, seeds: u32, block: u64, what: &str) -> TableError {
    TableError::CorruptBlock {
        path: path.to_path_buf(),
        seeds,
        block,
        what: what.to_string(),
    }
}

/// One bit per block: set once the block's bytes have matched their checksum, so that a
/// block is hashed at its first decode only (a probe decodes a segment, and hashing its block
/// took a quarter of a probe's time). A bit is never set for a block that failed: a corrupt
/// block is an error at every decode.
struct Checked(Box<[AtomicU64]>);

impl Checked {
    fn new(blocks: u64) -> Checked {
        Checked(
            (0..blocks.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
        )
    }

    fn get(&self, b: u64) -> bool {
        self.0[(b / 64) as usize].load(Ordering::Relaxed) & (1 << (b % 64)) != 0
    }

    fn set(&self, b: u64) {
        self.0[(b / 64) as usize].fetch_or(1 << (b % 64), Ordering::Relaxed);
    }
}

impl std::fmt::Debug for Checked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let checked: u32 = self
            .0
            .iter()
            .map(|w| w.load(Ordering::Relaxed).count_ones())
            .sum();
        write!(f, "{checked} blocks checked")
    }
}

/// A table's model: Huffman codes (coder 1) or rANS frequencies (coders 4 and 5).
#[derive(Debug)]
enum Coding {
    Huffman(Model),
    Rans(rans::Model),
}

/// Where a block lies in the data (offsets from the data's start).
struct Span {
    /// Where its checksum starts: its first byte.
    from: u64,
    /// Where its first segment starts (after a wide block's lengths).
    start: u64,
    /// One past its last byte.
    end: u64,
    /// Its recorded checksum (the low 32 bits of the XXH3-64 of `from..end`).
    sum: u32,
    /// Its segments' lengths in bytes.
    lengths: [u16; BLOCK_SEGMENTS],
}

/// An open compressed table (the mapping and its decoder).
#[derive(Debug)]
pub struct Compressed {
    path: PathBuf,
    header: CompressedHeader,
    map: Mmap,
    coding: Coding,
    checked: Checked,
    /// Whether the index matched its hash (version 4) or the file its checksum (versions 1
    /// to 3), checked at the first decode.
    index: std::sync::OnceLock<bool>,
    /// This open's key in the threads' decoded segments ([`cache`]).
    key: u64,
}

impl Compressed {
    /// Open a mapped compressed table: check the header, the length and the model.
    pub(crate) fn open(path: &Path, file: &File) -> Result<Compressed, TableError> {
        let len = file.metadata().map_err(io_err(path))?.len();
        let map = map_file(path, file)?;
        let header =
            CompressedHeader::from_bytes(path, &map[..(len as usize).min(HEADER_LEN + 2)])?;
        let min_len = header.data_offset + TAIL as u64;
        if len < min_len {
            return Err(TableError::BadLength {
                path: path.to_path_buf(),
                expected: min_len,
                got: len,
            });
        }
        let symbols = header.symbols();
        let model = &map[HEADER_LEN..header.index_offset as usize];
        let got = header.model_checksum_of(model);
        if got != header.model_checksum {
            return Err(TableError::BadChecksum {
                path: path.to_path_buf(),
                expected: header.model_checksum,
                got,
            });
        }
        let coding = if header.form.uses_rans() {
            let model = if header.form == Form::Depths {
                rans::Model::from_sparse_bytes(contexts::DEPTH_CONTEXTS, model)
            } else {
                rans::Model::from_le_bytes(symbols, model)
            };
            Coding::Rans(model.map_err(|e| TableError::Mismatch {
                path: path.to_path_buf(),
                field: "model",
                expected: format!("frequencies summing to {} in each context", rans::TOTAL),
                got: e.to_string(),
            })?)
        } else {
            Coding::Huffman(Model::from_lengths(symbols, model).ok_or_else(|| {
                TableError::Mismatch {
                    path: path.to_path_buf(),
                    field: "model",
                    expected: "prefix codes of at most 11 bits".into(),
                    got: "invalid code lengths".into(),
                }
            })?)
        };
        let table = Compressed {
            path: path.to_path_buf(),
            header,
            map,
            coding,
            checked: Checked::new(header.blocks()),
            index: std::sync::OnceLock::new(),
            key: cache::new_key(),
        };
        // The last block must end where the data does: a truncated or padded file is caught
        // here, not at the first probe of its end.
        let data_len = len - header.data_offset - TAIL as u64;
        if header.entries > 0 {
            let last = header.blocks() - 1;
            let end = table.block_span(last).end;
            if end != data_len {
                // `end` comes from the index record (a damaged one: anything up to u64::MAX).
                return Err(TableError::BadLength {
                    path: path.to_path_buf(),
                    expected: header
                        .data_offset
                        .saturating_add(end)
                        .saturating_add(TAIL as u64),
                    got: len,
                });
            }
        }
        Ok(table)
    }

    /// The header.
    pub fn header(&self) -> &CompressedHeader {
        &self.header
    }

    /// The mapping (for `madvise`).
    pub(crate) fn map(&self) -> &Mmap {
        &self.map
    }

    /// Bytes on disk.
    pub fn file_len(&self) -> u64 {
        self.map.len() as u64
    }

    fn record(&self, group: u64) -> &[u8] {
        let o = self.header.index_offset as usize + group as usize * GROUP_RECORD;
        &self.map[o..o + GROUP_RECORD]
    }

    /// Where block `b` lies in the data, its recorded checksum and its segment lengths (a
    /// wide block's from the head of its data: lengths 0 where that lies outside the data,
    /// whose end the block's then passes).
    fn block_span(&self, b: u64) -> Span {
        let r = self.record(b / GROUP_BLOCKS as u64);
        let j = (b % GROUP_BLOCKS as u64) as usize;
        let base = u64::from_le_bytes(r[0..8].try_into().expect("8 bytes"));
        let rel = u16::from_le_bytes([r[8 + 2 * j], r[9 + 2 * j]]);
        let from = base.saturating_add(u64::from(rel & !WIDE));
        let o = 24 + 4 * j;
        let sum = u32::from_le_bytes(r[o..o + 4].try_into().expect("4 bytes"));
        let mut lengths = [0u16; BLOCK_SEGMENTS];
        let start = if rel & WIDE == 0 {
            let o = 56 + BLOCK_SEGMENTS * j;
            for (l, &x) in lengths.iter_mut().zip(&r[o..o + BLOCK_SEGMENTS]) {
                *l = u16::from(x);
            }
            from
        } else {
            let data = &self.map[self.header.data_offset as usize..];
            let head = usize::try_from(from)
                .ok()
                .and_then(|f| data.get(f..f.checked_add(WIDE_HEAD)?));
            if let Some(head) = head {
                for (l, x) in lengths.iter_mut().zip(head.chunks_exact(2)) {
                    *l = u16::from_le_bytes([x[0], x[1]]);
                }
            }
            from.saturating_add(WIDE_HEAD as u64)
        };
        let len: u64 = lengths.iter().map(|&l| u64::from(l)).sum();
        Span {
            from,
            start,
            end: start.saturating_add(len),
            sum,
            lengths,
        }
    }

    fn corrupt(&self, b: u64, what: &str) -> TableError {
        bad_block(&self.path, self.header.seeds, b, what)
    }

    /// The bytes of block `b`, checked against its checksum (at its first decode: see
    /// [`Checked`]), with the data after it (the decoder reads up to 8 bytes past a code), and
    /// its segment lengths.
    fn block(&self, b: u64) -> Result<(&[u8], [u16; BLOCK_SEGMENTS]), TableError> {
        let Span {
            from,
            start,
            end,
            sum,
            lengths,
        } = self.block_span(b);
        if !*self.index.get_or_init(|| self.index_matches()) {
            return Err(self.damaged_index());
        }
        let data = &self.map[self.header.data_offset as usize..];
        if end > (data.len() - TAIL) as u64 {
            return Err(self.corrupt(b, "its index entry points outside the data"));
        }
        if !self.checked.get(b) {
            if xxh3_64(&data[from as usize..end as usize]) as u32 != sum {
                return Err(self.corrupt(b, "checksum mismatch"));
            }
            self.checked.set(b);
        }
        Ok((&data[start as usize..], lengths))
    }

    /// Values in segment `s` (a whole segment, the last one fewer).
    fn segment_values(&self, s: u64) -> usize {
        let per = self.header.segment() as u64;
        (self.header.entries - s * per).min(per) as usize
    }

    /// Whether this table is in the probe form (its entries need a capture search).
    pub fn is_probe_form(&self) -> bool {
        self.header.form.is_probe()
    }

    fn refuse_probe_form(&self) -> Result<(), TableError> {
        if self.is_probe_form() {
            return Err(TableError::ProbeForm {
                path: self.path.clone(),
                seeds: self.header.seeds,
            });
        }
        Ok(())
    }

    /// Decode values `first..first + out.len()` of segment `s` into `out`. A segment decoded
    /// to its end must end on its last byte.
    fn decode_segment(&self, s: u64, first: usize, out: &mut [i8]) -> Result<(), TableError> {
        if self.is_depth() {
            // Depths decode only with their values (see `read_depths`).
            return Err(TableError::Mismatch {
                path: self.path.clone(),
                field: "content",
                expected: "values".into(),
                got: "depth".into(),
            });
        }
        self.decode(s, first, out, None)
    }

    /// Decode entries `first..first + out.len()` of segment `s` into `out`: values, or with
    /// `values` (the values of the segment's entries `0..first + out.len()`) depths (their
    /// bytes: a depth above 127 wraps to a negative `i8`). A segment decoded to its end must
    /// end on its last byte.
    fn decode(
        &self,
        s: u64,
        first: usize,
        out: &mut [i8],
        values: Option<&[i8]>,
    ) -> Result<(), TableError> {
        let b = s / BLOCK_SEGMENTS as u64;
        let (bytes, lengths) = self.block(b)?;
        let k = (s % BLOCK_SEGMENTS as u64) as usize;
        let from: usize = lengths[..k].iter().map(|&l| usize::from(l)).sum();
        let len = usize::from(lengths[k]);
        let bytes = &bytes[from..];
        let stop = first + out.len();
        let whole = stop == self.segment_values(s);
        let model = match &self.coding {
            Coding::Huffman(model) => model,
            Coding::Rans(model) => {
                let level = Level::new(self.header.seeds);
                let start = s * self.header.segment() as u64;
                let bytes = &bytes[..len];
                let whole_and_back = match values {
                    Some(values) => contexts::decode_depths(
                        model, &level, start, bytes, first, out, values, whole,
                    ),
                    None => contexts::decode(model, &level, start, bytes, first, out, whole),
                };
                return if whole_and_back {
                    Ok(())
                } else {
                    Err(self.corrupt(b, "a segment's codes do not end on its last byte"))
                };
            }
        };
        // Coder 1: the values, each after the previous one (value 0 for the first).
        let zero = self.header.alphabet().zero;
        let size = 1usize << MAX_CODE_LEN;
        let mask = (size - 1) as u64;
        let fast_size = 1usize << FAST_BITS;
        let fast_mask = (fast_size - 1) as u64;
        let (fast, decode) = (&model.fast, &model.decode);
        let mut pos = 0usize; // bits
        let mut ctx = zero; // value 0
        for i in 0..stop {
            let at = pos >> 3;
            if at > len {
                return Err(self.corrupt(b, "codes run past the end of a segment"));
            }
            let word = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
            let bits = word >> (pos & 7);
            let mut e = fast[ctx * fast_size + (bits & fast_mask) as usize];
            if e == LONG {
                e = decode[ctx * size + (bits & mask) as usize];
            }
            if e == 0 {
                return Err(self.corrupt(b, "an invalid code"));
            }
            pos += usize::from(e & 15);
            ctx = usize::from(e >> 4);
            if i >= first {
                out[i - first] = (ctx as i32 - zero as i32) as i8;
            }
        }
        if pos.div_ceil(8) > len || (whole && pos.div_ceil(8) != len) {
            return Err(self.corrupt(b, "a segment's codes do not end on its last byte"));
        }
        Ok(())
    }

    /// Start loading what [`Compressed::value`] of `i` reads first (its index record), so
    /// that the misses of several lookups overlap.
    #[inline]
    pub fn prefetch_value(&self, i: u64) {
        let group = i / self.header.layout().group() as u64;
        let o = self.header.index_offset as usize + group as usize * GROUP_RECORD;
        for line in [o, o + 64, o + GROUP_RECORD - 1] {
            prefetch(&self.map[line]);
        }
    }

    /// Start loading the bytes of entry `i`'s segment, once its index record has been loaded
    /// ([`Compressed::prefetch_value`]): the second step of overlapping several lookups' misses.
    #[inline]
    pub fn prefetch_segment(&self, i: u64) {
        let s = i / self.header.segment() as u64;
        let span = self.block_span(s / BLOCK_SEGMENTS as u64);
        let k = (s % BLOCK_SEGMENTS as u64) as usize;
        let from: u64 = span.lengths[..k].iter().map(|&l| u64::from(l)).sum();
        // A damaged index may hold anything: a hint never overflows, and reads nothing past
        // the map.
        let at = self
            .header
            .data_offset
            .saturating_add(span.start)
            .saturating_add(from);
        for line in [at, at.saturating_add(63)] {
            if let Some(b) = self.map.get(line as usize) {
                prefetch(b);
            }
        }
    }

    /// The value of entry `i` (an error for the probe form, whose entries need a capture
    /// search: see [`Compressed::stored`]).
    pub fn value(&self, i: u64) -> Result<i8, TableError> {
        self.refuse_probe_form()?;
        self.stored(i)
    }

    /// Whether this is a depth table (`.cdepth`).
    pub fn is_depth(&self) -> bool {
        self.header.form.is_depth()
    }

    /// The entries whose values a read of depths `range` needs (see
    /// [`Compressed::read_depths`]): from the start of `range`'s first segment to its end.
    pub fn depth_context(&self, range: std::ops::Range<u64>) -> std::ops::Range<u64> {
        let per = self.header.segment() as u64;
        range.start / per * per..range.end
    }

    /// Decode the depths of entries `start..start + out.len()` of a depth table into `out`,
    /// given `values`, the level's values of entries
    /// [`depth_context`](Compressed::depth_context)`(start..start + out.len())`. The values
    /// must be the level's own: others decode to wrong depths or a corrupt-block error.
    pub fn read_depths(&self, start: u64, out: &mut [u8], values: &[i8]) -> Result<(), TableError> {
        let context = self.depth_context(start..start + out.len() as u64);
        if !self.is_depth() || values.len() as u64 != context.end - context.start {
            return Err(TableError::Mismatch {
                path: self.path.clone(),
                field: "depth read",
                expected: format!(
                    "a depth table and the values of entries {}..{}",
                    context.start, context.end
                ),
                got: format!("{:?} and {} values", self.header.form, values.len()),
            });
        }
        let per = self.header.segment() as u64;
        self.by_segment(start, out, |s, k, part| {
            let v = (s * per - context.start) as usize;
            self.decode(s, k, part, Some(&values[v..v + k + part.len()]))
        })
    }

    /// Cut entries `start..start + out.len()` at segment boundaries: `f(segment, first entry in
    /// it, the part of out for it)` for each piece, in order.
    fn by_segment(
        &self,
        start: u64,
        out: &mut [u8],
        mut f: impl FnMut(u64, usize, &mut [i8]) -> Result<(), TableError>,
    ) -> Result<(), TableError> {
        let per = self.header.segment() as u64;
        let end = start + out.len() as u64;
        let mut i = start;
        while i < end {
            let s = i / per;
            let k = (i % per) as usize;
            let take = ((per - k as u64).min(end - i)) as usize;
            let o = (i - start) as usize;
            f(s, k, as_i8(&mut out[o..o + take]))?;
            i += take as u64;
        }
        Ok(())
    }

    /// The value stored for entry `i`: the value itself in the self-contained form; in the
    /// probe form, where the best capture achieves it, anything up to it (module docs).
    /// A segment decoded a moment ago on this thread is read from its decoded copy
    /// (`compressed/cache.rs`).
    pub fn stored(&self, i: u64) -> Result<i8, TableError> {
        let per = self.header.segment() as u64;
        let s = i / per;
        cache::entry(self.key, s, (i % per) as usize, |out| {
            self.decode_segment(s, 0, out)
        })
    }

    /// Decode entries `start..start + out.len()` into `out` (as bytes, like a plain table);
    /// an error for the probe form (see [`Compressed::read_stored`]).
    pub fn read_into(&self, start: u64, out: &mut [u8]) -> Result<(), TableError> {
        self.refuse_probe_form()?;
        self.read_stored(start, out)
    }

    /// Decode the stored values of entries `start..start + out.len()` into `out`.
    pub fn read_stored(&self, start: u64, out: &mut [u8]) -> Result<(), TableError> {
        self.by_segment(start, out, |s, k, part| self.decode_segment(s, k, part))
    }

    /// Decode every block (on all cores) and check each: the first corrupt one is the error.
    /// A depth table's blocks need the level's values, so they are checked as they are read
    /// (every block's checksum is checked by [`Compressed::verify`] too): nothing here.
    pub fn check_blocks(&self) -> Result<(), TableError> {
        if self.is_depth() {
            return Ok(());
        }
        (0..self.header.segments())
            .into_par_iter()
            .try_for_each_init(
                || vec![0i8; self.header.segment()],
                |out, s| {
                    let len = self.segment_values(s);
                    self.decode_segment(s, 0, &mut out[..len])
                },
            )
    }

    /// Recompute the checksum of everything after the header and compare it.
    pub fn verify(&self) -> Result<(), TableError> {
        let got = checksum(&self.map[HEADER_LEN..]);
        if got != self.header.checksum {
            return Err(TableError::BadChecksum {
                path: self.path.clone(),
                expected: self.header.checksum,
                got,
            });
        }
        // The whole file is as written: its index too.
        let _ = self.index.set(true);
        Ok(())
    }

    /// Whether the index is as written: its hash against the file's last 8 bytes (version
    /// 4), or the whole file against its checksum (before, whose last bytes are zero).
    fn index_matches(&self) -> bool {
        if self.header.version < 4 {
            return checksum(&self.map[HEADER_LEN..]) == self.header.checksum;
        }
        let index = &self.map[self.header.index_offset as usize..self.header.data_offset as usize];
        let tail = &self.map[self.map.len() - TAIL..];
        xxh3_64(index).to_le_bytes() == tail
    }

    /// The error of an index that does not match (see [`Compressed::index_matches`]).
    fn damaged_index(&self) -> TableError {
        let what = if self.header.version < 4 {
            "the file does not match its checksum"
        } else {
            "its index does not match its hash"
        };
        TableError::Damaged {
            path: self.path.clone(),
            what: what.into(),
        }
    }
}

/// A hint to load the cache line of `x`.
#[inline]
pub(crate) fn prefetch(x: &u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults, and it reads or writes nothing the
    // program can observe. The address is that of a live reference.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(x).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

fn as_i8(b: &mut [u8]) -> &mut [i8] {
    // SAFETY: u8 and i8 have the same size, alignment and validity (every bit pattern).
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr().cast::<i8>(), b.len()) }
}
