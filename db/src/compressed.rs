//! The compressed table: one level's values (`level-NN.cvalues`) or depths to conversion
//! (`level-NN.cdepth`) in segments of codes, each decodable on its own, so that one entry
//! costs at most one segment decode (64 entries of canonical-Huffman codes, or up to 256 of
//! rANS).
//!
//! ```text
//! offset size  field
//!      0    8  magic, b"AWARICV\x1a"
//!      8    4  format version, u32 LE: 4 (3 and 2, read too, are the same but for the
//!              last 8 bytes; 1, read too, differs at offset 56 and in its segment lengths)
//!     12    1  rule set: 0 awari, 1 abapa, 2 grand-slam, 3 cross-wari
//!     13    1  index scheme: 1 = Romein & Bal numbering (as in the plain table)
//!     14    1  coder: 1 = canonical Huffman, one code per previous value (order 1), of the
//!              values (the self-contained form); 4 = rANS of the probe form's stored
//!              values (capture don't-cares, below) under richer contexts
//!              (`compressed/contexts.rs`); 5 = rANS of depths to conversion under richer
//!              contexts (a depth table, the same file). 2 and 3, Huffman coders of the probe
//!              form and of depths in versions 1 and 2, are no longer read (refused on open:
//!              [`TableError::RetiredCoder`](crate::TableError::RetiredCoder)) and never
//!              reused
//!     15    1  log2 of the entries per segment: 6 (64) with coder 1; 8 (256, as written by
//!              default) or 7 (128, and in version 1 only 7) with coders 4 and 5
//!     16    4  seed count n of the level, u32 LE
//!     20    4  model length, u32 LE: S² bytes for an alphabet of S symbols, S = 2n+1 values
//!              −n..n (coder 1); 64 S² with coder 4 (32 S contexts); with coder 5 what its
//!              sparse model takes (12160 contexts; S = 1 + the level's largest depth, depths
//!              0..S−1, S at most 256)
//!     24    8  entry count, u64 LE (= size of the level)
//!     32    8  index offset, u64 LE (= 64 + model length)
//!     40    8  data offset, u64 LE (= index offset + groups × 120)
//!     48    8  checksum of bytes 64..end of file, u64 LE (the chunked XXH3, as the plain
//!              table's: `format::checksum`)
//!     56    8  checksum of the model, u64 LE, checked on open: the XXH3-64 of bytes 8..48
//!              then the model (version 1: of the model alone)
//!     64    …  model: with coder 1, for each context (the previous symbol p) the code length
//!              (0..=11, 0 = unused) of each symbol, one byte each; with coder 4, each
//!              symbol's rANS frequency, u16 LE, in 32 S contexts (each row sums to 4096,
//!              every frequency at least 1); with coder 5, S as u16 LE, then for each of
//!              12160 contexts its symbols of frequency above 0, as varints
//!              (`rans::Model::to_sparse_bytes`; rows sum to 4096)
//!      …    …  index: one 120-byte record per group of 8 blocks (64 segments)
//!                  0   8  byte offset of the group's first block in the data, u64 LE
//!                  8  16  start of each block, relative to the group, u16 LE × 8; bit 15
//!                         set: a *wide* block (below)
//!                 24  32  XXH3-64 of each block's bytes, low 32 bits, u32 LE × 8
//!                 56  64  length in bytes of each segment, u8 × 64 (8 per block; 0 for
//!                         a wide block's)
//!              (unused slots of the last group are zero)
//!      …    …  data: the blocks, then 8 bytes: the XXH3-64 of the index, u64 LE, checked
//!              at a reader's first decode (versions 1 to 3: zero; the whole file's
//!              checksum is checked instead, once)
//!
//!   block (one checksum) = 8 segments (each starting on a byte)
//!   wide block = its 8 segment lengths, u16 LE × 8, then its segments: only where a
//!                segment exceeds 255 bytes (256 entries of rare symbols), never at 128
//!   coder 1: segment 64 values, block 512, group 4096
//!   coders 4, 5 written for speed (and in version 1): segment 128 entries, block 1024,
//!                group 8192
//!   coders 4, 5 by default: segment 256 entries, block 2048, group 16384
//! ```
//!
//! The header's preamble (offsets 0..20 and 24..32, the plain table's too), the checksum,
//! and the writing through `NAME.tmp`, fsync and rename are [`crate::format`]'s.
//!
//! **The probe form** (coder 4, [`Form::CaptureDontCares`]) stores a value only where it cannot be recovered from the
//! lower levels. Where the best capture achieves a position's value, the position is a
//! *don't-care*: it may store any value up to that one, and the encoder chooses the stored
//! values that make each segment's codes the shortest (a shortest-path search over the
//! segment: a choice is also the next entries' context). A terminal position's value is the
//! rules', so it may store anything. A reader resolves an entry with a capture search into the
//! lower levels (see [`crate::Levels`]):
//!
//! ```text
//!   terminal                  the rules' value (the stored one is ignored)
//!   has a capturing move      max(stored, best over capturing moves of captures − value(child))
//!   otherwise                 stored
//! ```
//!
//! So a table of this form can only be read through a database directory holding its lower
//! levels: [`Compressed::value`] and [`Compressed::read_into`] refuse it, and
//! [`Compressed::stored`] gives the stored value. The builder streams self-contained levels
//! ([`Form::SelfContained`], coder 1).
//!
//! Value v is symbol v+n. In the self-contained form a symbol is coded with the code of its
//! context, the previous value in its segment (value 0 for the segment's first); codes are
//! written least-significant bit first, bit-reversed, so the decoder reads each with one
//! lookup of the next 11 bits. The probe form's contexts add the board's class and the value
//! one run back (`compressed/contexts.rs`).
//!
//! **Depth tables** (coder 5, [`Form::Depths`]) are coded against the level's values, which
//! every reader has beside them: a drawn position's depth is 0 and is not coded at all; a won
//! or lost one's depth d (symbol d) is coded in a context of the position's side (won or
//! lost), its board's class, the size of its value, and the depths coded before it in its
//! segment. So a depth is read with the values of its segment up to it
//! ([`Compressed::read_depths`]); only the true values (not a probe form's stored ones) give
//! them.
//!
//! Why these sizes: a random probe checks one block's checksum (about 200 bytes hashed, the
//! first time) and decodes on average half a segment, 32 dependent table lookups; the index
//! costs 0.23 bits per position (an offset, a checksum and 8 segment lengths per block).
//! Segments of 256 values with a checksum each cost 0.19 bits but made probes 4× slower
//! (`scripts/bench-compress.sh` measures the probe against the plain table). The rANS coders
//! (4 and 5) restart their state and their contexts at each segment, about 12 bits, and pay
//! 120 index bytes a group: at 256 entries a segment both are halved, about 0.11 bits a
//! position less than at 128, for twice the decoding a probe (`compress --probe --segment`
//! chooses).
//!
//! A block's checksum is checked at its first decode in a process (a bit per block, about
//! 0.05 % of the table's size in memory, remembers it), and a whole segment's codes must end on
//! its last byte: a corrupt block is an error naming the level and the block, at every decode,
//! never a wrong value.
//!
//! The files: the constants, forms and header (`compressed/format.rs`), coder 1's Huffman
//! codes (`huffman.rs`), the reader (`reader.rs`), the encoder of a group (`encoder.rs`),
//! writing and estimating a table (`compress.rs`), coders 4 and 5 (`contexts.rs`), and the
//! threads' decoded segments (`cache.rs`).

mod cache;
mod compress;
mod contexts;
mod encoder;
mod format;
mod huffman;
mod reader;

pub use compress::{
    compress, compress_as, compress_depth, compress_depth_as, estimate, estimate_as,
    CompressedSize, ReadFreedom, ReadValues, FIXED,
};
pub use format::{
    CompressedHeader, Form, Layout, BLOCK, BLOCK_SEGMENTS, CODER_DEPTH_RANS, CODER_HUFFMAN_ORDER1,
    CODER_RANS_CONTEXTS, GROUP, GROUP_BLOCKS, GROUP_RECORD, HEADER_LEN, LONG_SEGMENT_LOG2, MAGIC,
    MAX_CODE_LEN, MAX_DEPTH_SYMBOLS, MAX_SEGMENT, PROBE_SEGMENT_LOG2, RETIRED_CODERS, SEGMENT,
    SEGMENT_LOG2, VERSION,
};
pub(crate) use reader::prefetch;
pub use reader::Compressed;
