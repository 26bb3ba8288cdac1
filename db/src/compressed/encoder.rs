//! Encoding one group of a table: the probe form's shortest-path choice of the symbols its
//! don't-cares store ([`segment_symbols`]), a segment's codes (Huffman here, with coder 3's
//! depth contexts; rANS in `contexts.rs`), and the group's index record and bytes
//! ([`encode_group`]) under a fitted [`Coder`].

use xxhash_rust::xxh3::xxh3_64;

use crate::{rans, Level};

use super::compress::FIXED;
use super::contexts;
use super::format::{Alphabet, Layout, BLOCK_SEGMENTS, GROUP_RECORD, WIDE};
use super::huffman::{Bits, Model};

/// The probe form's encoder's view of a model: code lengths per context and symbol
/// (`lengths[c * symbols + s]`, the code of `s` after `c`), every one non-zero.
pub(super) struct Costs {
    symbols: usize,
    lengths: Vec<u16>,
}

impl Costs {
    /// From code lengths per context and symbol.
    pub(super) fn new(symbols: usize, lengths: &[u8]) -> Costs {
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
pub(super) fn segment_symbols(
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

/// A level's fitted coder, with what the probe form's search weighs its choices by.
pub(super) enum Coder {
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

/// The coded symbols of one segment of a depth table, `depths`, with their contexts, given
/// the positions' `values`: `f(context, symbol)` for each won or lost position in order
/// (draws are depth 0, not coded). The context is the side (won: 0, lost: `symbols`) plus the
/// depth of the last won or lost position before it in the segment.
pub(super) fn for_each_depth_code(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compressed::format::Form;
    use crate::compressed::MAX_CODE_LEN;
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
}
