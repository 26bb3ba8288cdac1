//! The format's constants, its forms ([`Form`]) and layouts ([`Layout`]), and the header
//! ([`CompressedHeader`]): the 64 bytes at offset 0, written and parsed and checked here, and
//! how a table's entries map to symbols ([`Alphabet`]). The table of offsets is the module
//! documentation of [`crate::compressed`].

use std::path::Path;

use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::error::TableError;
use crate::format::Preamble;
use crate::rules::Rules;

use super::contexts;

/// The first eight bytes of a compressed values table.
pub const MAGIC: [u8; 8] = *b"AWARICV\x1a";
/// The compressed format version this library writes: 4, whose tables are of coders 1, 4 and 5
/// only, and end with the XXH3-64 of their index (3, read too, ends with 8 zero bytes: its
/// index is checked by the whole file's checksum, once, at the first decode). Versions 1 and
/// 2 of those coders are read too (version 2's model checksum, as 3's,
/// covers the header's bytes 8..48, so that a damaged field is refused on open where several
/// values are valid: the segment length of coders 4 and 5; version 1's covers the model
/// alone). Coders 2 and 3, which only versions 1 and 2 had, are refused
/// ([`TableError::RetiredCoder`]).
pub const VERSION: u32 = 4;
/// The coder code of order-1 canonical Huffman of the values (the self-contained form).
pub const CODER_HUFFMAN_ORDER1: u8 = 1;
/// The coder code of rANS of the probe form's stored values under the board's class, the
/// previous symbol and the symbol one run back (see `compressed/contexts.rs`).
pub const CODER_RANS_CONTEXTS: u8 = 4;
/// The coder code of rANS of depths to conversion under the position's side and class and the
/// previous depth (see `compressed/contexts.rs`): a `.cdepth` table.
pub const CODER_DEPTH_RANS: u8 = 5;
/// The coder codes no longer read: 2 (order-1 Huffman of the probe form's stored values) and
/// 3 (order-1 Huffman of depths to conversion), superseded by coders 4 and 5. They are never
/// reused: a table of either is refused on open.
pub const RETIRED_CODERS: [u8; 2] = [2, 3];
/// The most symbols a depth table's alphabet has (depths 0..=255: a level with a deeper
/// position keeps its plain table).
pub const MAX_DEPTH_SYMBOLS: usize = 256;
/// log2 of the entries per segment of coders 4 and 5 written for probing speed (`compress
/// --segment 128`), and their only one in version 1: larger segments than coder 1's, a leaner
/// index.
pub const PROBE_SEGMENT_LOG2: u8 = 7;
/// log2 of the entries per segment of coders 4 and 5 as written by default: half the restarts
/// and half the index of 128-entry segments, for twice the decoding a probe.
pub const LONG_SEGMENT_LOG2: u8 = 8;
/// The most entries a segment of any table holds.
pub const MAX_SEGMENT: usize = 1 << LONG_SEGMENT_LOG2;
/// Size of the header (as a plain table's).
pub use crate::format::HEADER_LEN;
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

/// Which form a compressed table is, by what it stores: every value, the values for probing
/// (the probe form), or depths to conversion. Each form has one coder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Every value stored (coder 1: order-1 canonical Huffman): decoding needs nothing else.
    /// The builder streams these.
    SelfContained,
    /// Values for probing, the probe form (coder 4): a position whose value a capture
    /// achieves (a capture don't-care) stores whatever is cheapest up to it, and is resolved
    /// by a capture search into the lower levels at probe time. rANS under contexts that a
    /// decoder rebuilds by stepping the segment's boards.
    CaptureDontCares,
    /// Depths to conversion, coded against the level's values (coder 5): a `.cdepth` table.
    /// rANS under the position's side, class and size of value, the previous depth and the
    /// depth one run back, for a decoder that steps the boards.
    Depths,
}

impl Form {
    const fn coder(self) -> u8 {
        match self {
            Form::SelfContained => CODER_HUFFMAN_ORDER1,
            Form::CaptureDontCares => CODER_RANS_CONTEXTS,
            Form::Depths => CODER_DEPTH_RANS,
        }
    }

    /// Whether its model is rANS frequencies (coders 4 and 5) rather than code lengths.
    pub(super) const fn uses_rans(self) -> bool {
        !matches!(self, Form::SelfContained)
    }

    /// Whether a table of this form holds depths.
    pub const fn is_depth(self) -> bool {
        matches!(self, Form::Depths)
    }

    /// Whether a table of this form stores capture don't-cares.
    pub const fn is_probe(self) -> bool {
        matches!(self, Form::CaptureDontCares)
    }

    /// log2 of the entries per segment a table of this form is written with by default.
    pub const fn segment_log2(self) -> u8 {
        match self {
            Form::SelfContained => SEGMENT_LOG2,
            Form::CaptureDontCares | Form::Depths => LONG_SEGMENT_LOG2,
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
/// Bytes after the data (zero in versions 1 to 3, the index's XXH3-64 in version 4), so that
/// the decoder may always read 8 bytes at once.
pub(super) const TAIL: usize = 8;

/// The header fields of a compressed table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompressedHeader {
    /// The format version (1 to 4).
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
pub(super) struct Alphabet {
    /// Symbols in all.
    pub(super) symbols: usize,
    /// The symbol of entry 0 (value 0 or depth 0): every segment's first context.
    pub(super) zero: usize,
    /// Whether entries are signed bytes (values) or unsigned (depths).
    pub(super) signed: bool,
}

impl Alphabet {
    /// The alphabet of a table of `form` at level `seeds` with `symbols` symbols.
    pub(super) fn new(form: Form, seeds: u32, symbols: usize) -> Alphabet {
        match form {
            Form::Depths => Alphabet {
                symbols,
                zero: 0,
                signed: false,
            },
            Form::SelfContained | Form::CaptureDontCares => Alphabet {
                symbols,
                zero: seeds as usize,
                signed: true,
            },
        }
    }

    /// The symbol of an entry's byte, if the alphabet has one.
    #[inline]
    pub(super) fn symbol(self, v: u8) -> Option<usize> {
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
    pub(super) fn symbols(&self) -> usize {
        self.symbols as usize
    }

    /// Bytes of the model: with coder 1 a code length per previous symbol and symbol, with
    /// coder 4 a 16-bit frequency per context (`compressed/contexts.rs`) and symbol; coder 5's
    /// sparse model takes what it takes, up to the index.
    fn model_len(&self) -> usize {
        let s = self.symbols();
        match self.form {
            Form::SelfContained => s * s,
            Form::CaptureDontCares => 2 * contexts::contexts(s) * s,
            Form::Depths => self.index_offset.saturating_sub(HEADER_LEN as u64) as usize,
        }
    }

    pub(super) fn alphabet(&self) -> Alphabet {
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

    pub(super) fn segments(&self) -> u64 {
        self.entries.div_ceil(self.segment() as u64)
    }

    pub(super) fn blocks(&self) -> u64 {
        self.entries.div_ceil(self.layout().block() as u64)
    }

    fn groups(&self) -> u64 {
        self.entries.div_ceil(self.layout().group() as u64)
    }

    /// The header as written to disk.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        let preamble = Preamble {
            version: self.version,
            rules: self.rules,
            seeds: self.seeds,
            entries: self.entries,
        };
        preamble.write(MAGIC, &mut h);
        h[14] = self.form.coder();
        h[15] = self.segment_log2;
        h[20..24].copy_from_slice(&(self.model_len() as u32).to_le_bytes());
        h[32..40].copy_from_slice(&self.index_offset.to_le_bytes());
        h[40..48].copy_from_slice(&self.data_offset.to_le_bytes());
        h[48..56].copy_from_slice(&self.checksum.to_le_bytes());
        h[56..64].copy_from_slice(&self.model_checksum.to_le_bytes());
        h
    }

    /// Parse and check a header read from `path` (its first bytes are the magic; with coder 5,
    /// the two after the header too: the model's alphabet size). A table of a retired coder (2
    /// or 3) is refused with [`TableError::RetiredCoder`].
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
            CODER_RANS_CONTEXTS => Form::CaptureDontCares,
            CODER_DEPTH_RANS => Form::Depths,
            c if RETIRED_CODERS.contains(&c) => {
                return Err(TableError::RetiredCoder {
                    path: path.to_path_buf(),
                    seeds,
                    coder: c,
                })
            }
            c => {
                return Err(mismatch(
                    "coder",
                    format!("{CODER_HUFFMAN_ORDER1}, {CODER_RANS_CONTEXTS} or {CODER_DEPTH_RANS}"),
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
            Form::SelfContained | Form::CaptureDontCares => 2 * seeds + 1,
            // The sparse model's first two bytes.
            Form::Depths => match h.get(HEADER_LEN..HEADER_LEN + 2) {
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
                    Form::Depths => {
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
    /// 1), or of the header's bytes 8..48 and then the model (versions 2 on).
    pub fn model_checksum_of(&self, model: &[u8]) -> u64 {
        if self.version < 2 {
            return xxh3_64(model);
        }
        let mut hasher = Xxh3::new();
        hasher.update(&self.to_bytes()[8..48]);
        hasher.update(model);
        hasher.digest()
    }
}

/// Bit 15 of a block's start in its group record: a *wide* block, whose segment lengths are
/// u16 LE at the head of its data ([`WIDE_HEAD`] bytes, covered by its checksum), the record's
/// bytes for them 0. Only a segment of more than 255 bytes needs it (256 entries of rare
/// symbols); a group's data stays under 32 KiB.
pub(super) const WIDE: u16 = 1 << 15;
/// Bytes of a wide block's segment lengths.
pub(super) const WIDE_HEAD: usize = 2 * BLOCK_SEGMENTS;
