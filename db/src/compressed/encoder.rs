//! Encoding one group of a table: a segment's codes (Huffman here, for the self-contained
//! form; rANS, with the probe form's choice of the symbols its don't-cares store, in
//! `contexts.rs`), and the group's index record and bytes ([`encode_group`]) under a fitted
//! [`Coder`].

use xxhash_rust::xxh3::xxh3_64;

use crate::{rans, Level};

use super::contexts;
use super::format::{Alphabet, Layout, BLOCK_SEGMENTS, GROUP_RECORD, WIDE};
use super::huffman::{Bits, Model};

/// Encode one segment of the self-contained form: each value's code after the previous value
/// (value 0 for the first). Values are already checked to be in range.
fn encode_segment(model: &Model, alphabet: Alphabet, values: &[u8], bits: &mut Bits) {
    let symbols = model.symbols;
    let mut ctx = alphabet.zero;
    for &v in values {
        let s = alphabet
            .symbol(v)
            .expect("entries are checked to be in range");
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
pub(super) fn encode_group(
    coder: &Coder,
    layout: Layout,
    alphabet: Alphabet,
    level: &Level,
    first: u64,
    group: &[u8],
    ceilings: Option<&[i8]>,
) -> (Vec<u8>, Vec<u8>) {
    let mut bits = Bits::new();
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
                Coder::Huffman { model } => encode_segment(model, alphabet, segment, &mut bits),
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

/// A level's fitted coder, with what the probe form's search weighs its choices by.
pub(super) enum Coder {
    /// Coder 1: the codes.
    Huffman { model: Model },
    /// Coder 4: the frequencies, and their costs.
    Rans {
        model: rans::Model,
        costs: contexts::Costs,
    },
    /// Coder 5: the frequencies.
    RansDepth { model: rans::Model },
}
