//! The compressed table: one level's values (`level-NN.cvalues`) or depths to conversion
//! (`level-NN.cdepth`) in segments of canonical-Huffman codes, each decodable on its own, so
//! that one entry costs at most one segment decode (64 entries).
//!
//! ```text
//! offset size  field
//!      0    8  magic, b"AWARICV\x1a"
//!      8    4  format version, u32 LE: 2 (1, read too, differs only at offset 56)
//!     12    1  rule set: 0 awari, 1 abapa, 2 grand-slam
//!     13    1  index scheme: 1 = Romein & Bal numbering (as in the plain table)
//!     14    1  coder: 1 = canonical Huffman, one code per previous value (order 1), of the
//!              values (the self-contained form); 2 = the same, of the stored values of the
//!              probe form (capture don't-cares, below); 3 = the same, of depths to
//!              conversion (a depth table: every entry stored); 4 = rANS of the probe form's
//!              stored values under richer contexts (`compressed/contexts.rs`); 5 = rANS of
//!              depths to conversion under richer contexts (the same file)
//!     15    1  log2 of the entries per segment: 6 (64) with coder 1, 7 (128) with 2 and 3,
//!              8 (256, as written by default) or 7 with 4 and 5
//!     16    4  seed count n of the level, u32 LE
//!     20    4  model length, u32 LE: S² bytes for an alphabet of S symbols, S = 2n+1 values
//!              −n..n (coders 1, 2); 2 S² with coder 3, S = 1 + the level's largest depth
//!              (depths 0..S−1, S at most 256); 64 S² with coder 4 (32 S contexts);
//!              with coder 5 what its sparse model takes (12160 contexts)
//!     24    8  entry count, u64 LE (= size of the level)
//!     32    8  index offset, u64 LE (= 64 + model length)
//!     40    8  data offset, u64 LE (= index offset + groups × 120)
//!     48    8  checksum of bytes 64..end of file, u64 LE (the plain table's chunked XXH3)
//!     56    8  checksum of the model, u64 LE, checked on open: the XXH3-64 of bytes 8..48
//!              then the model (version 1: of the model alone)
//!     64    …  model: for each context, the code length (0..=11, 0 = unused) of each symbol,
//!              one byte each: S contexts (the previous symbol p) with coders 1 and 2; 2 S
//!              with coder 3 (won positions after depth p, then lost ones after depth p);
//!              with coder 4, each symbol's rANS frequency, u16 LE, in 32 S contexts (each
//!              row sums to 4096, every frequency at least 1); with coder 5, S as u16 LE,
//!              then for each of 12160 contexts its symbols of frequency above 0, as
//!              varints (`rans::Model::to_sparse_bytes`; rows sum to 4096)
//!      …    …  index: one 120-byte record per group of 8 blocks (64 segments)
//!                  0   8  byte offset of the group's first block in the data, u64 LE
//!                  8  16  start of each block, relative to the group, u16 LE × 8; bit 15
//!                         set: a *wide* block (below)
//!                 24  32  XXH3-64 of each block's bytes, low 32 bits, u32 LE × 8
//!                 56  64  length in bytes of each segment, u8 × 64 (8 per block; 0 for
//!                         a wide block's)
//!              (unused slots of the last group are zero)
//!      …    …  data: the blocks, then 8 zero bytes
//!
//!   block (one checksum) = 8 segments (each starting on a byte)
//!   wide block = its 8 segment lengths, u16 LE × 8, then its segments: only where a
//!                segment exceeds 255 bytes (256 entries of rare symbols), never at 128
//!   coder 1: segment 64 values, block 512, group 4096
//!   coders 2, 3 (and 4, 5 written for speed): segment 128 entries, block 1024, group 8192
//!   coders 4, 5 by default: segment 256 entries, block 2048, group 16384
//! ```
//!
//! **The probe form** (coder 2) stores a value only where it cannot be recovered from the
//! lower levels. Where the best capture achieves a position's value, the position is a
//! *don't-care*: it may store any value up to that one, and the encoder chooses the stored
//! values that make each segment's codes the shortest (a shortest-path search over the
//! segment: a choice is also the next entry's context). A terminal position's value is the rules', so it
//! may store anything. A reader resolves an entry with a capture search into the lower levels
//! (see [`crate::Levels`]):
//!
//! ```text
//!   terminal                  the rules' value (the stored one is ignored)
//!   has a capturing move      max(stored, best over capturing moves of captures − value(child))
//!   otherwise                 stored
//! ```
//!
//! So a table of this form can only be read through a database directory holding its lower
//! levels: [`Compressed::value`] and [`Compressed::read_into`] refuse it, and
//! [`Compressed::stored`] gives the stored value. The builder streams self-contained levels.
//!
//! Value v is symbol v+n. A symbol is coded with the code of its context, the previous value
//! in its segment (value 0 for the segment's first).
//!
//! **Depth tables** (coder 3) are coded against the level's values, which every reader has
//! beside them: a drawn position's depth is 0 and is not coded at all; a won or lost one's
//! depth d (symbol d) is coded with the code of its context, the position's side (won or
//! lost) and the depth of the last won or lost position before it in its segment (0 for the
//! first). So a depth is read with the values of its segment up to it
//! ([`Compressed::read_depths`]); the values' signs are what matters, and only the true
//! values (not a probe form's stored ones) give them. Codes are written least-significant bit
//! first, bit-reversed, so the decoder reads each with one lookup of the next 11 bits.
//!
//! Why these sizes: a random probe checks one block's checksum (about 200 bytes hashed, the
//! first time) and decodes on average half a segment, 32 dependent table lookups; the index
//! costs 0.23 bits per position (an offset, a checksum and 8 segment lengths per block).
//! Segments of 256 values with a checksum each cost 0.19 bits but made probes 4× slower
//! (`scripts/bench-compress.sh` measures the probe against the plain table). The rANS coders
//! (4 and 5) restart their state and their contexts at each segment, about 12 bits, and pay
//! 120 index bytes a group: at 256 entries a segment both are halved, about 0.12 bits a
//! position less than at 128, for twice the decoding a probe (`compress --segment` chooses).
//!
//! A block's checksum is checked at its first decode in a process (a bit per block, about
//! 0.05 % of the table's size in memory, remembers it), and a whole segment's codes must end on
//! its last byte: a corrupt block is an error naming the level and the block, at every decode,
//! never a wrong value.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::Mmap;
use rayon::prelude::*;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::error::TableError;
use crate::index::level_size;
use crate::rules::Rules;
use crate::table::{self, checksum, Header, Preamble, INDEX_ROMEIN_BAL};
use crate::{rans, Level};

mod cache;
mod contexts;

/// The first eight bytes of a compressed values table.
pub const MAGIC: [u8; 8] = *b"AWARICV\x1a";
/// The compressed format version this library writes: 2, whose model checksum covers the
/// header's bytes 8..48 as well (so that a damaged field is refused on open, where several
/// values are valid: the segment length of coders 4 and 5). Version 1 is read too.
pub const VERSION: u32 = 2;
/// The coder code of order-1 canonical Huffman of the values (the self-contained form).
pub const CODER_HUFFMAN_ORDER1: u8 = 1;
/// The coder code of order-1 canonical Huffman of the probe form's stored values (capture
/// don't-cares).
pub const CODER_CAPTURE_DONT_CARES: u8 = 2;
/// The coder code of order-1 canonical Huffman of depths to conversion (a `.cdepth` table).
pub const CODER_DEPTH_ORDER1: u8 = 3;
/// The coder code of rANS of the probe form's stored values under the board's class, the
/// previous symbol and the symbol one run back (see `compressed/contexts.rs`).
pub const CODER_RANS_CONTEXTS: u8 = 4;
/// The coder code of rANS of depths to conversion under the position's side and class and the
/// previous depth (see `compressed/contexts.rs`): a `.cdepth` table.
pub const CODER_DEPTH_RANS: u8 = 5;
/// The most symbols a depth table's alphabet has (depths 0..=255: a level with a deeper
/// position keeps its plain table).
pub const MAX_DEPTH_SYMBOLS: usize = 256;
/// log2 of the entries per segment of coders 2 and 3, and of coders 4 and 5 written for
/// probing speed (`compress --segment 128`): larger segments than coder 1's, a leaner index.
pub const PROBE_SEGMENT_LOG2: u8 = 7;
/// log2 of the entries per segment of coders 4 and 5 as written by default: half the restarts
/// and half the index of 128-entry segments, for twice the decoding a probe.
pub const LONG_SEGMENT_LOG2: u8 = 8;
/// The most entries a segment of any table holds.
pub const MAX_SEGMENT: usize = 1 << LONG_SEGMENT_LOG2;
/// Size of the header.
pub const HEADER_LEN: usize = 64;
/// log2 of the values per segment, the unit of decoding, of the self-contained form.
pub const SEGMENT_LOG2: u8 = 6;
/// Values per segment of the self-contained form.
pub const SEGMENT: usize = 1 << SEGMENT_LOG2;
/// Segments per block, the unit of the checksum.
pub const BLOCK_SEGMENTS: usize = 8;
/// Values per block of the self-contained form.
pub const BLOCK: usize = SEGMENT * BLOCK_SEGMENTS;
/// Blocks per index group.
pub const GROUP_BLOCKS: usize = 8;
/// Values per index group of the self-contained form.
pub const GROUP: usize = BLOCK * GROUP_BLOCKS;

/// Which form a compressed table is: three of values (two of them the probe form), one of
/// depths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Every value stored (coder 1): decoding needs nothing else. The builder streams these.
    SelfContained,
    /// Capture don't-cares (coder 2): smaller, resolved by a capture search at probe time.
    /// Read as ever; [`Form::ProbeRans`] is what `compress --probe` writes now.
    Probe,
    /// The probe form coded by rANS under richer contexts (coder 4): smaller again, for a
    /// decoder that steps the segment's boards.
    ProbeRans,
    /// Depths to conversion, every one stored (coder 3): a `.cdepth` table. Read as ever;
    /// [`Form::DepthRans`] is what the depth pass writes now.
    Depth,
    /// Depths to conversion by rANS under the position's side, class and size of value, the
    /// previous depth and the depth one run back (coder 5): a `.cdepth` table, smaller, for a
    /// decoder that steps the boards.
    DepthRans,
}

impl Form {
    const fn coder(self) -> u8 {
        match self {
            Form::SelfContained => CODER_HUFFMAN_ORDER1,
            Form::Probe => CODER_CAPTURE_DONT_CARES,
            Form::ProbeRans => CODER_RANS_CONTEXTS,
            Form::Depth => CODER_DEPTH_ORDER1,
            Form::DepthRans => CODER_DEPTH_RANS,
        }
    }

    /// Whether its model is rANS frequencies (coders 4 and 5) rather than code lengths.
    const fn uses_rans(self) -> bool {
        matches!(self, Form::ProbeRans | Form::DepthRans)
    }

    /// Whether a table of this form holds depths (either coder).
    pub const fn is_depth(self) -> bool {
        matches!(self, Form::Depth | Form::DepthRans)
    }

    /// Whether a table of this form stores capture don't-cares (either coder).
    pub const fn is_probe(self) -> bool {
        matches!(self, Form::Probe | Form::ProbeRans)
    }

    /// log2 of the entries per segment a table of this form is written with by default.
    pub const fn segment_log2(self) -> u8 {
        match self {
            Form::SelfContained => SEGMENT_LOG2,
            // Depths: the probe form's larger segments halve the index (0.12 bits a
            // position instead of 0.23, a third of what the codes save over plain).
            Form::Probe | Form::Depth => PROBE_SEGMENT_LOG2,
            Form::ProbeRans | Form::DepthRans => LONG_SEGMENT_LOG2,
        }
    }

    /// Whether a table of this form may have segments of 2^`log2` entries: the default, and
    /// with rANS (coders 4 and 5) 128 or 256.
    pub const fn allows_segment_log2(self, log2: u8) -> bool {
        log2 == self.segment_log2()
            || (self.uses_rans() && (log2 == PROBE_SEGMENT_LOG2 || log2 == LONG_SEGMENT_LOG2))
    }

    /// This form with segments of 2^`log2` entries.
    ///
    /// # Panics
    /// If the form does not allow them ([`Form::allows_segment_log2`]).
    pub const fn with_segment_log2(self, log2: u8) -> Layout {
        assert!(
            self.allows_segment_log2(log2),
            "a segment length the form does not allow"
        );
        Layout {
            form: self,
            segment_log2: log2,
        }
    }
}

/// What a table is written as: its form, and the entries per segment (what a probe decodes,
/// half of them on average, against what the segments' restarts and the index cost). A
/// [`Form`] is its default layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The form (the coder).
    pub form: Form,
    /// log2 of the entries per segment ([`Form::allows_segment_log2`]).
    pub segment_log2: u8,
}

impl From<Form> for Layout {
    fn from(form: Form) -> Layout {
        form.with_segment_log2(form.segment_log2())
    }
}

impl Layout {
    /// Entries per segment.
    pub const fn segment(self) -> usize {
        1 << self.segment_log2
    }

    /// Entries per block (one checksum).
    pub const fn block(self) -> usize {
        self.segment() * BLOCK_SEGMENTS
    }

    /// Entries per index group (one index record).
    pub const fn group(self) -> usize {
        self.block() * GROUP_BLOCKS
    }
}
/// Bytes of one index group record.
pub const GROUP_RECORD: usize =
    8 + 2 * GROUP_BLOCKS + 4 * GROUP_BLOCKS + GROUP_BLOCKS * BLOCK_SEGMENTS;
/// The longest code, in bits (the decoder looks this many bits up at once).
pub const MAX_CODE_LEN: u32 = 11;
/// Zero bytes after the data, so that the decoder may always read 8 bytes at once.
const TAIL: usize = 8;

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> TableError + '_ {
    move |source| TableError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The header fields of a compressed table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompressedHeader {
    /// The format version (1 or 2).
    pub version: u32,
    /// The form (the coder).
    pub form: Form,
    /// log2 of the entries per segment.
    pub segment_log2: u8,
    /// The rule set.
    pub rules: Rules,
    /// The level.
    pub seeds: u32,
    /// Symbols of the alphabet: 2n+1 for values, 1 + the largest depth for depths.
    pub symbols: u32,
    /// Number of entries (the level size).
    pub entries: u64,
    /// Offset of the index.
    pub index_offset: u64,
    /// Offset of the data.
    pub data_offset: u64,
    /// Checksum of everything after the header.
    pub checksum: u64,
    /// Checksum of the model.
    pub model_checksum: u64,
}

/// How entries map to symbols: value v is symbol v + n, depth d is symbol d.
#[derive(Clone, Copy, Debug)]
struct Alphabet {
    /// Symbols in all.
    symbols: usize,
    /// The symbol of entry 0 (value 0 or depth 0): every segment's first context.
    zero: usize,
    /// Whether entries are signed bytes (values) or unsigned (depths).
    signed: bool,
}

impl Alphabet {
    /// The alphabet of a table of `form` at level `seeds` with `symbols` symbols.
    fn new(form: Form, seeds: u32, symbols: usize) -> Alphabet {
        match form {
            Form::Depth | Form::DepthRans => Alphabet {
                symbols,
                zero: 0,
                signed: false,
            },
            Form::SelfContained | Form::Probe | Form::ProbeRans => Alphabet {
                symbols,
                zero: seeds as usize,
                signed: true,
            },
        }
    }

    /// The symbol of an entry's byte, if the alphabet has one.
    #[inline]
    fn symbol(self, v: u8) -> Option<usize> {
        let v = if self.signed {
            i32::from(v as i8)
        } else {
            i32::from(v)
        };
        let s = v + self.zero as i32;
        (0..self.symbols as i32).contains(&s).then_some(s as usize)
    }
}

impl CompressedHeader {
    fn symbols(&self) -> usize {
        self.symbols as usize
    }

    /// Contexts of the model: one per previous symbol, twice for depths (won and lost),
    /// 32 times with coder 4 (`compressed/contexts.rs`).
    fn contexts(&self) -> usize {
        match self.form {
            Form::Depth => 2 * self.symbols(),
            Form::SelfContained | Form::Probe => self.symbols(),
            Form::ProbeRans => contexts::contexts(self.symbols()),
            Form::DepthRans => contexts::DEPTH_CONTEXTS,
        }
    }

    /// Bytes of the model: a code length per context and symbol, or with coder 4 a 16-bit
    /// frequency; coder 5's sparse model takes what it takes, up to the index.
    fn model_len(&self) -> usize {
        if self.form == Form::DepthRans {
            return self.index_offset.saturating_sub(HEADER_LEN as u64) as usize;
        }
        let per = if self.form.uses_rans() { 2 } else { 1 };
        per * self.contexts() * self.symbols()
    }

    fn alphabet(&self) -> Alphabet {
        Alphabet::new(self.form, self.seeds, self.symbols())
    }

    /// The form and the segments' length.
    pub fn layout(&self) -> Layout {
        Layout {
            form: self.form,
            segment_log2: self.segment_log2,
        }
    }

    /// Entries per segment.
    pub fn segment(&self) -> usize {
        self.layout().segment()
    }

    fn segments(&self) -> u64 {
        self.entries.div_ceil(self.segment() as u64)
    }

    fn blocks(&self) -> u64 {
        self.entries.div_ceil(self.layout().block() as u64)
    }

    fn groups(&self) -> u64 {
        self.entries.div_ceil(self.layout().group() as u64)
    }

    /// The header as written to disk.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..8].copy_from_slice(&MAGIC);
        h[8..12].copy_from_slice(&self.version.to_le_bytes());
        h[12] = self.rules.code();
        h[13] = INDEX_ROMEIN_BAL;
        h[14] = self.form.coder();
        h[15] = self.segment_log2;
        h[16..20].copy_from_slice(&self.seeds.to_le_bytes());
        h[20..24].copy_from_slice(&(self.model_len() as u32).to_le_bytes());
        h[24..32].copy_from_slice(&self.entries.to_le_bytes());
        h[32..40].copy_from_slice(&self.index_offset.to_le_bytes());
        h[40..48].copy_from_slice(&self.data_offset.to_le_bytes());
        h[48..56].copy_from_slice(&self.checksum.to_le_bytes());
        h[56..64].copy_from_slice(&self.model_checksum.to_le_bytes());
        h
    }

    /// Parse and check a header read from `path` (its first bytes are the magic; with coder 5,
    /// the two after the header too: the model's alphabet size).
    pub fn from_bytes(path: &Path, h: &[u8]) -> Result<CompressedHeader, TableError> {
        let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().expect("8 bytes"));
        let mismatch = |field, expected: String, got: String| TableError::Mismatch {
            path: path.to_path_buf(),
            field,
            expected,
            got,
        };
        let Preamble {
            version,
            rules,
            seeds,
            entries,
        } = Preamble::parse(path, h, MAGIC, 1..=VERSION)?;
        let form = match h[14] {
            CODER_HUFFMAN_ORDER1 => Form::SelfContained,
            CODER_CAPTURE_DONT_CARES => Form::Probe,
            CODER_DEPTH_ORDER1 => Form::Depth,
            CODER_RANS_CONTEXTS => Form::ProbeRans,
            CODER_DEPTH_RANS => Form::DepthRans,
            c => {
                return Err(mismatch(
                    "coder",
                    format!("{CODER_HUFFMAN_ORDER1}..={CODER_DEPTH_RANS}"),
                    c.to_string(),
                ))
            }
        };
        // Version 1 had one segment length per coder (at most 128 entries).
        if !form.allows_segment_log2(h[15]) || (version < 2 && h[15] > PROBE_SEGMENT_LOG2) {
            return Err(mismatch(
                "log2 values per segment",
                if version < 2 {
                    form.segment_log2().min(PROBE_SEGMENT_LOG2).to_string()
                } else if form.uses_rans() {
                    format!("{PROBE_SEGMENT_LOG2} or {LONG_SEGMENT_LOG2}")
                } else {
                    form.segment_log2().to_string()
                },
                h[15].to_string(),
            ));
        }
        let symbols = match form {
            Form::SelfContained | Form::Probe | Form::ProbeRans => 2 * seeds + 1,
            // Two square models, won and lost: the model length is 2 S².
            Form::Depth => (u32_at(20) / 2).isqrt(),
            // The sparse model's first two bytes.
            Form::DepthRans => match h.get(HEADER_LEN..HEADER_LEN + 2) {
                Some(b) => u32::from(u16::from_le_bytes([b[0], b[1]])),
                None => 0,
            },
        };
        let header = CompressedHeader {
            version,
            form,
            segment_log2: h[15],
            rules,
            seeds,
            symbols,
            entries,
            index_offset: u64_at(32),
            data_offset: u64_at(40),
            checksum: u64_at(48),
            model_checksum: u64_at(56),
        };
        let model_len = header.model_len() as u64;
        if u64::from(u32_at(20)) != model_len || symbols == 0 {
            return Err(mismatch(
                "model length",
                match form {
                    Form::Depth => format!("2 S² for S in 1..={MAX_DEPTH_SYMBOLS}"),
                    Form::DepthRans => {
                        format!("the bytes up to the index, an alphabet of 1..={MAX_DEPTH_SYMBOLS}")
                    }
                    _ => model_len.to_string(),
                },
                u32_at(20).to_string(),
            ));
        }
        if form.is_depth() && header.symbols() > MAX_DEPTH_SYMBOLS {
            return Err(mismatch(
                "depth symbols",
                format!("at most {MAX_DEPTH_SYMBOLS}"),
                symbols.to_string(),
            ));
        }
        if header.index_offset != HEADER_LEN as u64 + model_len {
            return Err(mismatch(
                "index offset",
                (HEADER_LEN as u64 + model_len).to_string(),
                header.index_offset.to_string(),
            ));
        }
        let data_offset = header.index_offset + header.groups() * GROUP_RECORD as u64;
        if header.data_offset != data_offset {
            return Err(mismatch(
                "data offset",
                data_offset.to_string(),
                header.data_offset.to_string(),
            ));
        }
        Ok(header)
    }

    /// The checksum of `model` as this header's version records it: of the model (version
    /// 1), or of the header's bytes 8..48 and then the model (version 2).
    pub fn model_checksum_of(&self, model: &[u8]) -> u64 {
        if self.version < 2 {
            return xxh3_64(model);
        }
        let mut hasher = Xxh3::new();
        hasher.update(&self.to_bytes()[8..48]);
        hasher.update(model);
        hasher.digest()
    }

    /// The plain-table header this table stands for (its checksum is this file's): a values
    /// header, or a one-byte depth header for a depth table.
    pub fn table_header(&self) -> Header {
        let plain = match self.form {
            Form::Depth | Form::DepthRans => Header::depth(self.rules, self.seeds, 1),
            Form::SelfContained | Form::Probe | Form::ProbeRans => {
                Header::values(self.rules, self.seeds)
            }
        };
        Header {
            checksum: self.checksum,
            ..plain
        }
    }
}

/// Code lengths of one context: canonical Huffman limited to [`MAX_CODE_LEN`] bits.
fn code_lengths(counts: &[u64]) -> Vec<u8> {
    let used: Vec<usize> = (0..counts.len()).filter(|&s| counts[s] > 0).collect();
    let mut lengths = vec![0u8; counts.len()];
    match used.len() {
        0 => return lengths,
        1 => {
            lengths[used[0]] = 1;
            return lengths;
        }
        _ => {}
    }
    let mut weights: Vec<u64> = used.iter().map(|&s| counts[s]).collect();
    loop {
        // Huffman by repeated merging of the two lightest (at most 97 symbols: quadratic is fine).
        let mut nodes: Vec<(u64, Vec<usize>)> = weights
            .iter()
            .enumerate()
            .map(|(k, &w)| (w, vec![k]))
            .collect();
        let mut depth = vec![0u32; used.len()];
        while nodes.len() > 1 {
            nodes.sort_by_key(|b| std::cmp::Reverse(b.0));
            let (wa, a) = nodes.pop().expect("two nodes");
            let (wb, b) = nodes.pop().expect("two nodes");
            for &k in a.iter().chain(&b) {
                depth[k] += 1;
            }
            nodes.push((wa + wb, [a, b].concat()));
        }
        if depth.iter().all(|&d| d <= MAX_CODE_LEN) {
            for (k, &s) in used.iter().enumerate() {
                lengths[s] = depth[k] as u8;
            }
            return lengths;
        }
        // Too deep: flatten the distribution and try again (rare symbols only).
        for w in &mut weights {
            *w = (*w >> 1).max(1);
        }
    }
}

/// Canonical codes (MSB-first values) for code lengths.
fn canonical_codes(lengths: &[u8]) -> Vec<u32> {
    let mut order: Vec<usize> = (0..lengths.len()).filter(|&s| lengths[s] > 0).collect();
    order.sort_by_key(|&s| (lengths[s], s));
    let mut codes = vec![0u32; lengths.len()];
    let mut code = 0u32;
    let mut prev_len = 0u8;
    for &s in &order {
        code <<= lengths[s] - prev_len;
        prev_len = lengths[s];
        codes[s] = code;
        code += 1;
    }
    codes
}

fn reverse(code: u32, len: u8) -> u32 {
    code.reverse_bits() >> (32 - u32::from(len))
}

/// Whether code lengths form a complete-or-under-full prefix code (Kraft sum ≤ 1).
fn kraft_ok(lengths: &[u8]) -> bool {
    let sum: u64 = lengths
        .iter()
        .filter(|&&l| l > 0)
        .map(|&l| 1u64 << (MAX_CODE_LEN - u32::from(l)))
        .sum();
    sum <= 1 << MAX_CODE_LEN
}

/// Bits the decoder's first lookup reads: codes up to this long (nearly all of them) are
/// decoded from a small table that stays in cache; longer ones from the full table.
const FAST_BITS: u32 = 8;
/// The length field of a fast-table entry whose code is longer than [`FAST_BITS`].
const LONG: u16 = 15;

/// The model of a level: code lengths per context, with encode and decode tables.
#[derive(Debug)]
struct Model {
    symbols: usize,
    /// Per context, 2^8 entries: symbol << 4 | length, or [`LONG`]; 0 = no code (corrupt).
    fast: Vec<u16>,
    /// Per context, 2^11 entries: symbol << 4 | length; 0 = no code (corrupt data).
    decode: Vec<u16>,
    /// Per context and symbol: (reversed code, length).
    encode: Vec<(u32, u8)>,
}

impl Model {
    /// The model of code lengths per context and symbol (`lengths[c * symbols + s]`; as many
    /// contexts as rows of `symbols`).
    fn from_lengths(symbols: usize, lengths: &[u8]) -> Option<Model> {
        let size = 1usize << MAX_CODE_LEN;
        let contexts = lengths.len() / symbols;
        let mut decode = vec![0u16; contexts * size];
        let mut encode = vec![(0u32, 0u8); contexts * symbols];
        for c in 0..contexts {
            let row = &lengths[c * symbols..(c + 1) * symbols];
            if row.iter().any(|&l| u32::from(l) > MAX_CODE_LEN) || !kraft_ok(row) {
                return None;
            }
            let codes = canonical_codes(row);
            for s in 0..symbols {
                let l = row[s];
                if l == 0 {
                    continue;
                }
                let r = reverse(codes[s], l);
                encode[c * symbols + s] = (r, l);
                let entry = ((s as u16) << 4) | u16::from(l);
                let mut k = r as usize;
                while k < size {
                    decode[c * size + k] = entry;
                    k += 1 << l;
                }
            }
        }
        let fast_size = 1usize << FAST_BITS;
        let mut fast = vec![0u16; contexts * fast_size];
        for c in 0..contexts {
            for k in 0..fast_size {
                let e = decode[c * size + k];
                // Entry k of the full table, for a code of at most 8 bits, is the same for every
                // 11-bit extension of k; a longer code needs the full table.
                fast[c * fast_size + k] = if e != 0 && (e & 15) > FAST_BITS as u16 {
                    LONG
                } else if e == 0 {
                    // No code starts with these 8 bits, or only longer ones do.
                    let longer = (0..1usize << (MAX_CODE_LEN - FAST_BITS))
                        .any(|h| decode[c * size + k + (h << FAST_BITS)] != 0);
                    if longer {
                        LONG
                    } else {
                        0
                    }
                } else {
                    e
                };
            }
        }
        Some(Model {
            symbols,
            fast,
            decode,
            encode,
        })
    }
}

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

/// A table's model: Huffman codes (coders 1..3) or rANS frequencies (coder 4).
#[derive(Debug)]
enum Coding {
    Huffman(Model),
    Rans(rans::Model),
}

/// Bit 15 of a block's start in its group record: a *wide* block, whose segment lengths are
/// u16 LE at the head of its data ([`WIDE_HEAD`] bytes, covered by its checksum), the record's
/// bytes for them 0. Only a segment of more than 255 bytes needs it (256 entries of rare
/// symbols); a group's data stays under 32 KiB.
const WIDE: u16 = 1 << 15;
/// Bytes of a wide block's segment lengths.
const WIDE_HEAD: usize = 2 * BLOCK_SEGMENTS;

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
    /// This open's key in the threads' decoded segments ([`cache`]).
    key: u64,
}

impl Compressed {
    /// Open a mapped compressed table: check the header, the length and the model.
    pub(crate) fn open(path: &Path, file: &File) -> Result<Compressed, TableError> {
        let len = file.metadata().map_err(io_err(path))?.len();
        // SAFETY: as for plain tables (see `table::map_file`): read-only, private, and files are
        // only ever renamed into place; the slice length is fixed here.
        let map = unsafe { Mmap::map(file) }.map_err(io_err(path))?;
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
            let model = if header.form == Form::DepthRans {
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
            key: cache::new_key(),
        };
        // The last block must end where the data does: a truncated or padded file is caught
        // here, not at the first probe of its end.
        let data_len = len - header.data_offset - TAIL as u64;
        if header.entries > 0 {
            let last = header.blocks() - 1;
            let end = table.block_span(last).end;
            if end != data_len {
                return Err(TableError::BadLength {
                    path: path.to_path_buf(),
                    expected: header.data_offset + end + TAIL as u64,
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
        let zero = self.header.alphabet().zero;
        let size = 1usize << MAX_CODE_LEN;
        let mask = (size - 1) as u64;
        let fast_size = 1usize << FAST_BITS;
        let fast_mask = (fast_size - 1) as u64;
        let (fast, decode) = (&model.fast, &model.decode);
        let symbols = self.header.symbols();
        let mut pos = 0usize; // bits
        let mut ctx = zero; // value 0, or depth 0
        let mut last = 0usize; // depths: the last won or lost position's
        for i in 0..stop {
            if let Some(values) = values {
                match values[i].signum() {
                    0 => {
                        // A draw: depth 0, not coded.
                        if i >= first {
                            out[i - first] = 0;
                        }
                        continue;
                    }
                    1 => ctx = last,
                    _ => ctx = symbols + last,
                }
            }
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
            last = ctx;
            if i >= first {
                // A depth above 127 wraps here and back in the caller's `as u8`.
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
        let at = self.header.data_offset + span.start + from;
        for line in [at, at + 63] {
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
    /// ([`cache`]).
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
        Ok(())
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

/// LSB-first bit writer.
struct Bits {
    out: Vec<u8>,
    acc: u64,
    fill: u32,
}

impl Bits {
    fn new() -> Bits {
        Bits {
            out: Vec::new(),
            acc: 0,
            fill: 0,
        }
    }

    fn put(&mut self, code: u32, len: u8) {
        self.acc |= u64::from(code) << self.fill;
        self.fill += u32::from(len);
        while self.fill >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.fill -= 8;
        }
    }

    fn finish(&mut self) {
        if self.fill > 0 {
            self.out.push(self.acc as u8);
        }
        self.acc = 0;
        self.fill = 0;
    }
}

/// The symbol of entry `i`, whose byte is `v`, or an error naming it.
fn symbol(path: &Path, alphabet: Alphabet, i: u64, v: u8) -> Result<usize, TableError> {
    alphabet.symbol(v).ok_or_else(|| {
        let (field, expected, got) = if alphabet.signed {
            let n = alphabet.zero;
            (
                "value",
                format!("-{n}..={n} at entry {i}"),
                (v as i8).to_string(),
            )
        } else {
            let top = alphabet.symbols - 1;
            ("depth", format!("0..={top} at entry {i}"), v.to_string())
        };
        TableError::Mismatch {
            path: path.to_path_buf(),
            field,
            expected,
            got,
        }
    })
}

/// What [`compress`] reports.
#[derive(Clone, Copy, Debug)]
pub struct CompressedSize {
    /// Entries of the level.
    pub entries: u64,
    /// Bytes of the compressed file.
    pub bytes: u64,
}

impl CompressedSize {
    /// Bits per position of the whole file (header, model and index included).
    pub fn bits_per_position(&self) -> f64 {
        8.0 * self.bytes as f64 / self.entries.max(1) as f64
    }
}

/// Where [`compress`] reads a level's values: entries `start..start + buf.len()` into `buf`.
pub type ReadValues<'a> = dyn Fn(u64, &mut [u8]) -> Result<(), TableError> + Sync + 'a;

/// Where [`compress`] learns the probe form's don't-cares: for entries
/// `start..start + values.len()`, given their values, it fills `ceilings` with the highest
/// value each entry may store instead of its own, or [`FIXED`] where it must store its own.
pub type ReadFreedom<'a> = dyn Fn(u64, &[u8], &mut [i8]) -> Result<(), TableError> + Sync + 'a;

/// The ceiling of an entry that must store its own value.
pub const FIXED: i8 = i8::MIN;

/// Values per batch of the streamed compression (a multiple of a group).
const BATCH: u64 = 1 << 24;
// The largest group divides it, and with it every group (powers of two no larger).
const _: () = assert!(BATCH % (MAX_SEGMENT * BLOCK_SEGMENTS * GROUP_BLOCKS) as u64 == 0);

/// Code lengths of every context from counts; with `smooth`, every symbol gets a code (the
/// probe form's model is fitted to a sample, and the encoder may meet any pair).
fn fit(symbols: usize, counts: &[u64], smooth: bool) -> Vec<u8> {
    (0..counts.len() / symbols)
        .flat_map(|c| {
            let mut row = counts[c * symbols..(c + 1) * symbols].to_vec();
            if smooth {
                row.iter_mut().for_each(|k| *k = (*k).max(1));
            }
            code_lengths(&row)
        })
        .collect()
}

/// The probe form's encoder's view of a model: code lengths per context and symbol
/// (`lengths[c * symbols + s]`, the code of `s` after `c`), every one non-zero.
struct Costs {
    symbols: usize,
    lengths: Vec<u16>,
}

impl Costs {
    /// From code lengths per context and symbol.
    fn new(symbols: usize, lengths: &[u8]) -> Costs {
        let lengths = lengths[..symbols * symbols]
            .iter()
            .map(|&l| u16::from(l))
            .collect();
        Costs { symbols, lengths }
    }
}

/// The symbols one segment stores, into `out`: its values or, where the probe form leaves an
/// entry free (its ceiling is not [`FIXED`]), the symbols that make the segment's codes the
/// shortest under `costs`, found by a shortest-path search over the segment: the state after
/// an entry is the symbol it stores, the context of the next one. Values are already checked
/// to be in range.
///
/// ```text
///   entry      k-1            k
///   allowed   {v}        or  0..=ceiling       bits(k, s) = min over y of
///   states     y  ──────────▶  s                bits(k-1, y) + code length of s after y
/// ```
///
/// Every allowed state is reached (every code length is non-zero), and a segment's bits fit
/// 16 bits (128 codes of at most 11), so the search is a min-plus product whose rows the
/// compiler vectorises; the path is found afterwards by looking for the step that gave
/// each state its bits. Of equal paths the one with the lowest symbols wins: the choice is
/// deterministic.
fn segment_symbols(
    alphabet: Alphabet,
    values: &[u8],
    ceilings: Option<&[i8]>,
    costs: &Costs,
    bits: &mut Vec<u16>,
    out: &mut Vec<usize>,
) {
    out.clear();
    let symbol_of = |v: u8| {
        alphabet
            .symbol(v)
            .expect("entries are checked to be in range")
    };
    let n = alphabet.zero as u32;
    let Some(ceilings) = ceilings else {
        out.extend(values.iter().map(|&v| symbol_of(v)));
        return;
    };
    let symbols = costs.symbols;
    // The symbols entry k may store (k = -1: the segment's start, context value 0).
    let allowed = |k: usize| -> (usize, usize) {
        if k == usize::MAX {
            return (n as usize, n as usize);
        }
        let top = ceilings[k];
        if top == FIXED {
            let s = symbol_of(values[k]);
            (s, s)
        } else {
            (0, (i32::from(top).min(n as i32) + n as i32) as usize)
        }
    };
    // bits[k * symbols + s]: the fewest bits of entries before k that leave state s (row 0:
    // the start).
    bits.clear();
    bits.resize((values.len() + 1) * symbols, 0);
    let mut reach = allowed(usize::MAX);
    for k in 0..values.len() {
        let (lo, hi) = allowed(k);
        let (row, next) = bits.split_at_mut((k + 1) * symbols);
        let next = &mut next[lo..=hi];
        next.fill(u16::MAX);
        for y in reach.0..=reach.1 {
            let b = row[k * symbols + y];
            let after_y = &costs.lengths[y * symbols + lo..=y * symbols + hi];
            for (x, &c) in next.iter_mut().zip(after_y) {
                *x = (*x).min(b + c);
            }
        }
        reach = (lo, hi);
    }
    let last = values.len() * symbols;
    let mut s = (reach.0..=reach.1)
        .min_by_key(|&s| (bits[last + s], s))
        .expect("a reached state");
    out.resize(values.len(), 0);
    for k in (0..values.len()).rev() {
        out[k] = s;
        let (lo, hi) = allowed(k.wrapping_sub(1));
        let target = bits[(k + 1) * symbols + s];
        s = (lo..=hi)
            .find(|&y| bits[k * symbols + y] + costs.lengths[y * symbols + s] == target)
            .expect("the step that gave the state its bits");
    }
}

/// Encode one segment.
fn encode_segment(
    model: &Model,
    alphabet: Alphabet,
    values: &[u8],
    ceilings: Option<&[i8]>,
    costs: &Costs,
    scratch: &mut (Vec<u16>, Vec<usize>),
    bits: &mut Bits,
) {
    let symbols = model.symbols;
    if !alphabet.signed {
        // Depths: coded against the positions' values (the side information).
        let values_of = ceilings.expect("a depth table's values");
        for_each_depth_code(symbols, values, values_of, |ctx, s| {
            let (code, len) = model.encode[ctx * symbols + s];
            debug_assert!(len > 0, "a symbol without a code");
            bits.put(code, len);
        });
        bits.finish();
        return;
    }
    let (search, stored) = scratch;
    segment_symbols(alphabet, values, ceilings, costs, search, stored);
    let mut ctx = alphabet.zero;
    for &s in stored.iter() {
        let (code, len) = model.encode[ctx * symbols + s];
        debug_assert!(len > 0, "a symbol without a code");
        bits.put(code, len);
        ctx = s;
    }
    bits.finish();
}

/// Encode one group of entries, `first..first + group.len()` of the level: its index record
/// (the base offset left zero) and its bytes.
#[allow(clippy::too_many_arguments)]
fn encode_group(
    coder: &Coder,
    layout: Layout,
    alphabet: Alphabet,
    level: &Level,
    first: u64,
    group: &[u8],
    ceilings: Option<&[i8]>,
) -> (Vec<u8>, Vec<u8>) {
    let mut bits = Bits::new();
    let mut scratch = (Vec::new(), Vec::new());
    let mut search = contexts::Scratch::default();
    let mut pairs = Vec::new();
    let mut record = vec![0u8; GROUP_RECORD];
    for (j, block) in group.chunks(layout.block()).enumerate() {
        let start = bits.out.len();
        let mut lengths = [0usize; BLOCK_SEGMENTS];
        for (k, segment) in block.chunks(layout.segment()).enumerate() {
            let from = bits.out.len();
            let at = j * layout.block() + k * layout.segment();
            let c = ceilings.map(|c| &c[at..at + segment.len()]);
            match coder {
                Coder::Huffman { model, costs } => {
                    encode_segment(model, alphabet, segment, c, costs, &mut scratch, &mut bits);
                }
                Coder::Rans { model, costs } => {
                    let c = c.expect("the probe form's ceilings");
                    let at = first + at as u64;
                    contexts::segment_pairs(level, at, segment, c, costs, &mut search, &mut pairs);
                    model.encode(&pairs, &mut bits.out);
                }
                Coder::RansDepth { model } => {
                    let values = c.expect("a depth table's values");
                    contexts::depth_pairs(level, first + at as u64, segment, values, &mut pairs);
                    model.encode(&pairs, &mut bits.out);
                }
            }
            lengths[k] = bits.out.len() - from;
        }
        let mut rel = u16::try_from(start)
            .ok()
            .filter(|&r| r < WIDE)
            .expect("a group's data fits 32 KiB");
        if lengths.iter().all(|&l| l <= usize::from(u8::MAX)) {
            for (k, &l) in lengths.iter().enumerate() {
                record[56 + BLOCK_SEGMENTS * j + k] = l as u8;
            }
        } else {
            rel |= WIDE;
            let head = lengths.iter().flat_map(|&l| (l as u16).to_le_bytes());
            bits.out.splice(start..start, head);
        }
        record[8 + 2 * j..10 + 2 * j].copy_from_slice(&rel.to_le_bytes());
        let sum = xxh3_64(&bits.out[start..]) as u32;
        record[24 + 4 * j..28 + 4 * j].copy_from_slice(&sum.to_le_bytes());
    }
    (record, bits.out)
}

/// What the probe form's search weighs its choices by while a model is fitted: code lengths
/// (coder 2, and none for the forms without choices) or rANS costs (coder 4).
#[derive(Clone, Copy)]
enum Weights<'a> {
    Lengths(&'a Costs),
    Rans(&'a contexts::Costs),
}

/// A level's fitted coder, with what the probe form's search weighs its choices by.
enum Coder {
    /// Coders 1..3: the codes, and (the probe form) their lengths.
    Huffman { model: Model, costs: Costs },
    /// Coder 4: the frequencies, and their costs.
    Rans {
        model: rans::Model,
        costs: contexts::Costs,
    },
    /// Coder 5: the frequencies.
    RansDepth { model: rans::Model },
}

/// How many times the probe form's model is refitted to its own shortest codes (the sizes
/// settle by the fourth: 2.512 bits per position of level 16 after four, 2.524 after three).
const PROBE_FITS: usize = 4;

/// With rANS (coder 4), the first two refits see only every this many of the sample's
/// groups: they only steer the free entries' choices from the crude first costs, and the
/// last two, over the whole sample, give the model. The search's passes over the sample
/// cost 2.25 instead of 4, for 0.02 % more bytes at levels 14..18 and 0.06 % at level 20
/// (2.457 bits per position instead of 2.456).
const PROBE_EARLY_FIT_STRIDE: usize = 8;

/// Groups the probe form's model is fitted to: about 2048 spread over the level.
fn sample_stride(groups: u64) -> u64 {
    (groups / 2048).max(1)
}

/// Compress a level whose values `read` gives (entries `start..start + buf.len()` into
/// `buf`) to the compressed table `path`. Without `free`, the self-contained form: two
/// streamed passes (count, encode). With `free`, the probe form: its model is fitted to a
/// sample of the level, then one encoding pass; it is coder 4's ([`Form::ProbeRans`]). Either
/// way the file is then decoded back and compared with the source before it is renamed into
/// place (the probe form's stored values each checked against their value and ceiling).
/// `progress` is told the pass (0 count, 1 encode, 2 check) and how many entries it has done.
pub fn compress(
    path: &Path,
    rules: Rules,
    seeds: u32,
    read: &ReadValues<'_>,
    free: Option<&ReadFreedom<'_>>,
    progress: &(dyn Fn(u8, u64) + Sync),
) -> Result<CompressedSize, TableError> {
    let form = free.map_or(Form::SelfContained, |_| Form::ProbeRans);
    run(form.into(), path, rules, seeds, read, free, progress, false)
}

/// [`compress`] in a chosen layout of values: [`Form::SelfContained`] without `free`,
/// [`Form::Probe`] (coder 2, as older files are) or [`Form::ProbeRans`] with it, the latter
/// with segments of 128 or 256 entries ([`Form::with_segment_log2`]).
///
/// # Panics
/// If `layout` is a form of depths (see [`compress_depth`]), or `free` does not match it.
#[allow(clippy::too_many_arguments)]
pub fn compress_as(
    layout: impl Into<Layout>,
    path: &Path,
    rules: Rules,
    seeds: u32,
    read: &ReadValues<'_>,
    free: Option<&ReadFreedom<'_>>,
    progress: &(dyn Fn(u8, u64) + Sync),
) -> Result<CompressedSize, TableError> {
    let layout = layout.into();
    run(layout, path, rules, seeds, read, free, progress, false)
}

fn as_u8(b: &mut [i8]) -> &mut [u8] {
    // SAFETY: u8 and i8 have the same size, alignment and validity (every bit pattern).
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr().cast::<u8>(), b.len()) }
}

/// Compress a depth table of level `seeds` whose largest depth is `max_depth` (its entries,
/// one byte each, `read` gives) to the compressed depth table `path` (`level-NN.cdepth`),
/// coded against the level's values, which `values` gives (entries `start..` into a buffer,
/// as bytes): two streamed passes, then the file decoded back and compared before it is
/// renamed into place. A depth above `max_depth`, or a draw whose depth is not 0, is an error.
/// It is coder 5's ([`Form::DepthRans`]).
pub fn compress_depth(
    path: &Path,
    rules: Rules,
    seeds: u32,
    max_depth: u8,
    read: &ReadValues<'_>,
    values: &ReadValues<'_>,
    progress: &(dyn Fn(u8, u64) + Sync),
) -> Result<CompressedSize, TableError> {
    let form = Form::DepthRans;
    compress_depth_as(form, path, rules, seeds, max_depth, read, values, progress)
}

/// [`compress_depth`] in a chosen layout of depths: [`Form::DepthRans`] (with segments of 128
/// or 256 entries) or the older [`Form::Depth`] (coder 3).
///
/// # Panics
/// If `layout` is not a form of depths.
#[allow(clippy::too_many_arguments)]
pub fn compress_depth_as(
    layout: impl Into<Layout>,
    path: &Path,
    rules: Rules,
    seeds: u32,
    max_depth: u8,
    read: &ReadValues<'_>,
    values: &ReadValues<'_>,
    progress: &(dyn Fn(u8, u64) + Sync),
) -> Result<CompressedSize, TableError> {
    let layout = layout.into();
    assert!(layout.form.is_depth(), "{layout:?} is not a form of depths");
    let symbols = usize::from(max_depth) + 1;
    let side = |start: u64, _: &[u8], out: &mut [i8]| values(start, as_u8(out));
    let side = Side::Values(&side);
    run_with(
        path, rules, seeds, layout, symbols, read, side, progress, false,
    )
}

/// What [`run_with`] reads beside the entries: nothing (the self-contained form), the probe
/// form's ceilings, or a depth table's values (its contexts).
#[derive(Clone, Copy)]
enum Side<'a, 'b> {
    None,
    Ceilings(&'a ReadFreedom<'b>),
    Values(&'a ReadFreedom<'b>),
}

/// The coded symbols of one segment of a depth table, `depths`, with their contexts, given
/// the positions' `values`: `f(context, symbol)` for each won or lost position in order
/// (draws are depth 0, not coded). The context is the side (won: 0, lost: `symbols`) plus the
/// depth of the last won or lost position before it in the segment.
fn for_each_depth_code(
    symbols: usize,
    depths: &[u8],
    values: &[i8],
    mut f: impl FnMut(usize, usize),
) {
    let mut last = 0;
    for (&d, &v) in depths.iter().zip(values) {
        let side = match v.signum() {
            0 => continue,
            1 => 0,
            _ => symbols,
        };
        f(side + last, usize::from(d));
        last = usize::from(d);
    }
}

/// What [`compress`] would write, without writing: the model fitted to a sample of about
/// 2048 groups spread over the level (as the probe form's always is), those groups encoded,
/// and their bytes scaled to the level (the header, model and index counted exactly). Within
/// a few tenths of a percent of the real size where both were measured (docs/performance.md),
/// in seconds rather than the minutes or hours of a level. `path` names the level in errors;
/// `progress` is told pass 0 only.
pub fn estimate(
    path: &Path,
    rules: Rules,
    seeds: u32,
    read: &ReadValues<'_>,
    free: Option<&ReadFreedom<'_>>,
    progress: &(dyn Fn(u8, u64) + Sync),
) -> Result<CompressedSize, TableError> {
    let form = free.map_or(Form::SelfContained, |_| Form::ProbeRans);
    run(form.into(), path, rules, seeds, read, free, progress, true)
}

/// [`estimate`] in a chosen layout of values (as [`compress_as`]).
///
/// # Panics
/// As [`compress_as`].
#[allow(clippy::too_many_arguments)]
pub fn estimate_as(
    layout: impl Into<Layout>,
    path: &Path,
    rules: Rules,
    seeds: u32,
    read: &ReadValues<'_>,
    free: Option<&ReadFreedom<'_>>,
    progress: &(dyn Fn(u8, u64) + Sync),
) -> Result<CompressedSize, TableError> {
    let layout = layout.into();
    run(layout, path, rules, seeds, read, free, progress, true)
}

/// [`compress`] or [`estimate`] of a values table in `layout`: the probe form's two coders
/// with `free`, else the self-contained one.
#[allow(clippy::too_many_arguments)]
fn run(
    layout: Layout,
    path: &Path,
    rules: Rules,
    seeds: u32,
    read: &ReadValues<'_>,
    free: Option<&ReadFreedom<'_>>,
    progress: &(dyn Fn(u8, u64) + Sync),
    estimate_only: bool,
) -> Result<CompressedSize, TableError> {
    let form = layout.form;
    assert!(
        !form.is_depth() && form.is_probe() == free.is_some(),
        "a values table of {form:?} with{} ceilings",
        if free.is_some() { "" } else { "out" }
    );
    let symbols = 2 * seeds as usize + 1;
    let side = free.map_or(Side::None, Side::Ceilings);
    run_with(
        path,
        rules,
        seeds,
        layout,
        symbols,
        read,
        side,
        progress,
        estimate_only,
    )
}

/// Compress (or with `estimate_only`, estimate) a level's table of `form` over an alphabet of
/// `symbols` symbols.
#[allow(clippy::too_many_arguments)]
fn run_with(
    path: &Path,
    rules: Rules,
    seeds: u32,
    layout: Layout,
    symbols: usize,
    read: &ReadValues<'_>,
    side: Side<'_, '_>,
    progress: &(dyn Fn(u8, u64) + Sync),
    estimate_only: bool,
) -> Result<CompressedSize, TableError> {
    let entries = level_size(seeds);
    let form = layout.form;
    assert!(
        form.allows_segment_log2(layout.segment_log2),
        "{layout:?}: a segment length the form does not allow"
    );
    let alphabet = Alphabet::new(form, seeds, symbols);
    let depth = form.is_depth();
    debug_assert_eq!(matches!(side, Side::Ceilings(_)), form.is_probe());
    debug_assert_eq!(matches!(side, Side::Values(_)), depth);
    let level = Level::new(seeds);
    let contexts = match form {
        Form::Depth => 2 * symbols,
        Form::ProbeRans => contexts::contexts(symbols),
        Form::DepthRans => contexts::DEPTH_CONTEXTS,
        Form::SelfContained | Form::Probe => symbols,
    };
    let (seg, group) = (layout.segment(), layout.group());
    let groups = entries.div_ceil(group as u64);
    // A batch's entries, and its side information: the probe form's ceilings, or a depth
    // table's values.
    let read_fresh = |start: u64, end: u64| -> Result<(Vec<u8>, Option<Vec<i8>>), TableError> {
        let mut buf = vec![0u8; (end - start) as usize];
        read(start, &mut buf)?;
        let side = match side {
            Side::Ceilings(f) | Side::Values(f) => {
                let mut c = vec![FIXED; buf.len()];
                f(start, &buf, &mut c)?;
                Some(c)
            }
            Side::None => None,
        };
        Ok((buf, side))
    };
    // A level of one batch is read once, for the sample, the encoding and the check alike:
    // the probe form's ceilings (a capture search for each entry) would be the most costly
    // part of its compression three times over.
    let whole = match side {
        Side::Ceilings(_) if entries <= BATCH && !estimate_only => Some(read_fresh(0, entries)?),
        _ => None,
    };
    let read_batch = |start: u64, end: u64| match &whole {
        Some((values, side)) => {
            let (s, e) = (start as usize, end as usize);
            Ok((
                values[s..e].to_vec(),
                side.as_ref().map(|c| c[s..e].to_vec()),
            ))
        }
        None => read_fresh(start, end),
    };
    // The counts per context of entries `first..` (values or depths), coded as they will be:
    // the probe form's free entries as its search chooses them under `weights`.
    let count = |values: &[u8], ceilings: Option<&[i8]>, weights: Weights<'_>, first: u64| {
        let mut k = vec![0u64; contexts * symbols];
        let (mut search, mut stored, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
        let mut rans_search = contexts::Scratch::default();
        for (si, segment) in values.chunks(seg).enumerate() {
            let at = si * seg;
            for (j, &v) in segment.iter().enumerate() {
                symbol(path, alphabet, first + (at + j) as u64, v)?;
            }
            let c = ceilings.map(|c| &c[at..at + segment.len()]);
            if depth {
                let signs = c.expect("a depth table's values");
                if let Some(j) = (0..segment.len()).find(|&j| signs[j] == 0 && segment[j] != 0) {
                    return Err(TableError::Mismatch {
                        path: path.to_path_buf(),
                        field: "depth",
                        expected: format!("0 for a draw at entry {}", first + (at + j) as u64),
                        got: segment[j].to_string(),
                    });
                }
                if form == Form::DepthRans {
                    let start = first + at as u64;
                    contexts::depth_pairs(&level, start, segment, signs, &mut pairs);
                    for &(ctx, s) in &pairs {
                        k[ctx * symbols + s] += 1;
                    }
                } else {
                    for_each_depth_code(symbols, segment, signs, |ctx, s| {
                        k[ctx * symbols + s] += 1;
                    });
                }
                continue;
            }
            match weights {
                Weights::Lengths(costs) => {
                    let mut ctx = alphabet.zero;
                    segment_symbols(alphabet, segment, c, costs, &mut search, &mut stored);
                    for &s in &stored {
                        k[ctx * symbols + s] += 1;
                        ctx = s;
                    }
                }
                Weights::Rans(costs) => {
                    let c = c.expect("the probe form's ceilings");
                    let (start, scratch) = (first + at as u64, &mut rans_search);
                    contexts::segment_pairs(&level, start, segment, c, costs, scratch, &mut pairs);
                    for &(ctx, s) in &pairs {
                        k[ctx * symbols + s] += 1;
                    }
                }
            }
        }
        Ok::<_, TableError>(k)
    };
    let add = |mut a: Vec<u64>, b: Vec<u64>| {
        a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
        a
    };

    let mut sample: Vec<(u64, Vec<u8>, Option<Vec<i8>>)> = Vec::new();
    // The coder, and the model's bytes as the file stores them.
    let (coder, model_bytes) = if !form.is_probe() && !estimate_only {
        // Pass 1: the counts per context (segment by segment, as they will be coded).
        let no_costs = Costs::new(0, &[]);
        let mut counts = vec![0u64; contexts * symbols];
        for start in (0..entries).step_by(BATCH as usize) {
            let end = (start + BATCH).min(entries);
            let (buf, side) = read_batch(start, end)?;
            let part = buf
                .par_chunks(group)
                .enumerate()
                .map(|(g, chunk)| {
                    let s = side
                        .as_deref()
                        .map(|s| &s[g * group..g * group + chunk.len()]);
                    count(
                        chunk,
                        s,
                        Weights::Lengths(&no_costs),
                        start + (g * group) as u64,
                    )
                })
                .try_reduce(|| vec![0u64; contexts * symbols], |a, b| Ok(add(a, b)))?;
            counts = add(counts, part);
            progress(0, end);
        }
        if form == Form::DepthRans {
            // Every (context, depth) pair is counted: the ones never seen get nothing.
            let model = rans::Model::fit_seen(symbols, &counts);
            let bytes = model.to_sparse_bytes();
            (Coder::RansDepth { model }, bytes)
        } else {
            let lengths = fit(symbols, &counts, false);
            let model = Model::from_lengths(symbols, &lengths).expect("built within the limits");
            let costs = Costs::new(0, &[]);
            (Coder::Huffman { model, costs }, lengths)
        }
    } else {
        // Pass 1: a sample of groups, then the model refitted [`PROBE_FITS`] times, each to
        // the shortest codes of the sample's segments under the last model.
        let stride = sample_stride(groups);
        sample = (0..groups)
            .step_by(stride as usize)
            .collect::<Vec<_>>()
            .par_iter()
            .map(|&g| {
                let start = g * group as u64;
                let end = (start + group as u64).min(entries);
                let (v, c) = read_batch(start, end)?;
                progress(0, end);
                Ok((start, v, c))
            })
            .collect::<Result<_, TableError>>()?;
        if form == Form::ProbeRans {
            // The same refits, of rANS frequencies, from costs of a bit to repeat the
            // previous symbol and two for any other; the first two of a part of the sample.
            let mut costs = contexts::Costs::initial(symbols);
            let mut model = rans::Model::fit(symbols, &vec![0; contexts * symbols]);
            for fit in 1..=PROBE_FITS {
                let stride = if fit + 1 < PROBE_FITS {
                    PROBE_EARLY_FIT_STRIDE
                } else {
                    1
                };
                let counts = sample
                    .par_iter()
                    .step_by(stride)
                    .map(|(first, v, c)| count(v, c.as_deref(), Weights::Rans(&costs), *first))
                    .try_reduce(|| vec![0u64; contexts * symbols], |a, b| Ok(add(a, b)))?;
                model = rans::Model::fit(symbols, &counts);
                costs = contexts::Costs::of(&model);
            }
            let bytes = model.to_le_bytes();
            (Coder::Rans { model, costs }, bytes)
        } else {
            // The first model only asks for few changes of symbol: one bit to repeat the
            // previous symbol, two for any other. (The self-contained form, fitted to a
            // sample for an estimate, has no choices to make: one count.)
            let mut lengths: Vec<u8> = (0..contexts * symbols)
                .map(|k| if k / symbols == k % symbols { 1 } else { 2 })
                .collect();
            let fits = if form == Form::Probe { PROBE_FITS } else { 1 };
            for _ in 0..fits {
                let costs = Costs::new(symbols, &lengths);
                let counts = sample
                    .par_iter()
                    .map(|(first, v, c)| count(v, c.as_deref(), Weights::Lengths(&costs), *first))
                    .try_reduce(|| vec![0u64; contexts * symbols], |a, b| Ok(add(a, b)))?;
                lengths = fit(symbols, &counts, form == Form::Probe);
            }
            let model = Model::from_lengths(symbols, &lengths).expect("built within the limits");
            let costs = Costs::new(if form == Form::Probe { symbols } else { 0 }, &lengths);
            (Coder::Huffman { model, costs }, lengths)
        }
    };

    let index_offset = (HEADER_LEN + model_bytes.len()) as u64;
    let data_offset = index_offset + groups * GROUP_RECORD as u64;

    if estimate_only {
        let (sampled, bytes) = sample
            .par_iter()
            .map(|(first, v, c)| {
                let (_, data) =
                    encode_group(&coder, layout, alphabet, &level, *first, v, c.as_deref());
                (v.len() as u64, data.len() as u64)
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let data = (bytes as f64 * entries as f64 / sampled.max(1) as f64).round() as u64;
        return Ok(CompressedSize {
            entries,
            bytes: data_offset + data + TAIL as u64,
        });
    }

    // Pass 2: encode group by group, in parallel within a batch; the index records go to
    // their place, the data after them in order.
    let mut header = CompressedHeader {
        version: VERSION,
        form,
        segment_log2: layout.segment_log2,
        rules,
        seeds,
        symbols: symbols as u32,
        entries,
        index_offset,
        data_offset,
        checksum: 0,
        model_checksum: 0,
    };
    header.model_checksum = header.model_checksum_of(&model_bytes);
    let tmp = table::tmp_path(path);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(io_err(&tmp))?;
    file.write_all_at(&header.to_bytes(), 0)
        .map_err(io_err(&tmp))?;
    file.write_all_at(&model_bytes, HEADER_LEN as u64)
        .map_err(io_err(&tmp))?;
    let mut cursor = 0u64;
    for start in (0..entries).step_by(BATCH as usize) {
        let end = (start + BATCH).min(entries);
        let (buf, ceilings) = read_batch(start, end)?;
        if form.is_probe() {
            // The values' range (pass 1 checked only its sample).
            buf.par_iter()
                .enumerate()
                .try_for_each(|(k, &v)| symbol(path, alphabet, start + k as u64, v).map(|_| ()))?;
        }
        let encoded: Vec<(Vec<u8>, Vec<u8>)> = buf
            .par_chunks(group)
            .enumerate()
            .map(|(g, values)| {
                let c = ceilings
                    .as_deref()
                    .map(|c| &c[g * group..g * group + values.len()]);
                let first = start + (g * group) as u64;
                encode_group(&coder, layout, alphabet, &level, first, values, c)
            })
            .collect();
        let first_group = start / group as u64;
        let mut records = Vec::with_capacity(encoded.len() * GROUP_RECORD);
        let mut data = Vec::new();
        for (mut record, bytes) in encoded {
            record[0..8].copy_from_slice(&cursor.to_le_bytes());
            records.extend_from_slice(&record);
            cursor += bytes.len() as u64;
            data.extend_from_slice(&bytes);
        }
        file.write_all_at(&records, index_offset + first_group * GROUP_RECORD as u64)
            .map_err(io_err(&tmp))?;
        file.write_all_at(&data, data_offset + cursor - data.len() as u64)
            .map_err(io_err(&tmp))?;
        progress(1, end);
    }
    file.write_all_at(&[0u8; TAIL], data_offset + cursor)
        .map_err(io_err(&tmp))?;
    file.sync_data().map_err(io_err(&tmp))?;

    // Pass 3: decode it back and compare, then the checksum, the header, and the rename.
    let decoded = Compressed::open(&tmp, &file)?;
    for start in (0..entries).step_by(BATCH as usize) {
        let end = (start + BATCH).min(entries);
        let (want, ceilings) = read_batch(start, end)?;
        want.par_chunks(1 << 16)
            .enumerate()
            .try_for_each(|(c, w)| -> Result<(), TableError> {
                let from = start + (c << 16) as u64;
                let mut got = vec![0u8; w.len()];
                let tops = ceilings
                    .as_deref()
                    .map(|t| &t[c << 16..(c << 16) + w.len()]);
                if depth {
                    // Chunks start on a segment: their values are the context.
                    decoded.read_depths(from, &mut got, tops.expect("a depth table's values"))?;
                } else {
                    decoded.read_stored(from, &mut got)?;
                }
                let tops = tops.filter(|_| !depth);
                let wrong = |k: usize| {
                    let (g, v) = (got[k] as i8, w[k] as i8);
                    g != v && !tops.is_some_and(|t| t[k] != FIXED && g <= t[k] && v <= t[k])
                };
                if let Some(k) = (0..w.len()).find(|&k| wrong(k)) {
                    return Err(TableError::Mismatch {
                        path: tmp.clone(),
                        field: "decoded value",
                        expected: format!("{} at entry {}", w[k] as i8, from + k as u64),
                        got: (got[k] as i8).to_string(),
                    });
                }
                Ok(())
            })?;
        progress(2, end);
    }
    header.checksum = checksum(&decoded.map[HEADER_LEN..]);
    drop(decoded);
    file.write_all_at(&header.to_bytes(), 0)
        .map_err(io_err(&tmp))?;
    file.sync_all().map_err(io_err(&tmp))?;
    let bytes = file.metadata().map_err(io_err(&tmp))?.len();
    drop(file);
    table::rename_into_place(&tmp, path)?;
    Ok(CompressedSize { entries, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::SplitMix64;

    /// The bits of a segment's codes under `costs` (the start's context is value 0).
    fn segment_bits(n: u32, costs: &Costs, stored: &[usize]) -> u32 {
        let mut ctx = n as usize;
        stored
            .iter()
            .map(|&s| {
                let l = costs.lengths[ctx * costs.symbols + s];
                ctx = s;
                u32::from(l)
            })
            .sum()
    }

    #[test]
    fn free_entries_store_the_shortest_codes_they_may() {
        // Against every choice the free entries may make, on small random segments.
        let mut rng = SplitMix64(23);
        let (mut search, mut stored) = (Vec::new(), Vec::new());
        for _ in 0..2000 {
            let n = 1 + rng.below(3) as u32;
            let symbols = 2 * n as usize + 1;
            let lengths: Vec<u8> = (0..symbols * symbols)
                .map(|_| 1 + rng.below(MAX_CODE_LEN as u64) as u8)
                .collect();
            let costs = Costs::new(symbols, &lengths);
            let len = 1 + rng.below(7) as usize;
            let values: Vec<u8> = (0..len)
                .map(|_| (rng.below(symbols as u64) as i32 - n as i32) as i8 as u8)
                .collect();
            // Free entries: a ceiling at or above the value (a terminal's may be anything).
            let ceilings: Vec<i8> = values
                .iter()
                .map(|&v| match rng.below(3) {
                    0 => FIXED,
                    1 => v as i8,
                    _ => n as i8 + rng.below(2) as i8,
                })
                .collect();
            segment_symbols(
                Alphabet::new(Form::Probe, n, symbols),
                &values,
                Some(&ceilings),
                &costs,
                &mut search,
                &mut stored,
            );
            assert_eq!(stored.len(), len);
            for k in 0..len {
                let s = stored[k] as i32 - n as i32;
                if ceilings[k] == FIXED {
                    assert_eq!(
                        s,
                        i32::from(values[k] as i8),
                        "a fixed entry stores its value"
                    );
                } else {
                    assert!(
                        s <= i32::from(ceilings[k]),
                        "a free entry stays under its ceiling"
                    );
                }
            }
            // The fewest bits over every allowed choice.
            let mut best = u32::MAX;
            let mut choice = vec![0usize; len];
            let options = |k: usize| -> Vec<usize> {
                if ceilings[k] == FIXED {
                    vec![(values[k] as i8 as i32 + n as i32) as usize]
                } else {
                    (0..=(i32::from(ceilings[k]).min(n as i32) + n as i32) as usize).collect()
                }
            };
            fn walk(
                k: usize,
                choice: &mut Vec<usize>,
                options: &dyn Fn(usize) -> Vec<usize>,
                score: &dyn Fn(&[usize]) -> u32,
                best: &mut u32,
            ) {
                if k == choice.len() {
                    *best = (*best).min(score(choice));
                    return;
                }
                for s in options(k) {
                    choice[k] = s;
                    walk(k + 1, choice, options, score, best);
                }
            }
            walk(
                0,
                &mut choice,
                &options,
                &|c| segment_bits(n, &costs, c),
                &mut best,
            );
            assert_eq!(
                segment_bits(n, &costs, &stored),
                best,
                "{values:?} {ceilings:?}"
            );
        }
        // Without ceilings, the values themselves.
        segment_symbols(
            Alphabet::new(Form::SelfContained, 2, 5),
            &[0, 1, 0xfe],
            None,
            &Costs::new(0, &[]),
            &mut search,
            &mut stored,
        );
        assert_eq!(stored, [2, 3, 0]);
    }

    #[test]
    fn code_lengths_are_limited_and_prefix_free() {
        // Fibonacci weights make the deepest possible Huffman tree: 40 symbols would need codes
        // of 39 bits unlimited.
        let mut counts = vec![1u64, 1];
        while counts.len() < 40 {
            let k = counts.len();
            counts.push(counts[k - 1] + counts[k - 2]);
        }
        counts.extend([0, 0, 5]); // unused symbols get no code
        let lengths = code_lengths(&counts);
        assert!(lengths.iter().all(|&l| u32::from(l) <= MAX_CODE_LEN));
        assert_eq!(lengths[40], 0);
        assert!(lengths[42] > 0);
        assert!(kraft_ok(&lengths));
        // A lone symbol still gets a code, and the frequent symbols the short ones.
        assert_eq!(code_lengths(&[0, 7, 0]), vec![0, 1, 0]);
        assert!(lengths[39] <= lengths[0]);
    }
}
