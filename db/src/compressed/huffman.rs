//! The canonical-Huffman codes of coder 1 (the self-contained form): code lengths limited to
//! [`MAX_CODE_LEN`] bits fitted to counts, the codes, the model's encode and decode tables
//! ([`Model`]), and the LSB-first bit writer ([`Bits`]).

use super::format::MAX_CODE_LEN;

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
pub(super) const FAST_BITS: u32 = 8;
/// The length field of a fast-table entry whose code is longer than [`FAST_BITS`].
pub(super) const LONG: u16 = 15;

/// The model of a level: code lengths per context, with encode and decode tables.
#[derive(Debug)]
pub(super) struct Model {
    pub(super) symbols: usize,
    /// Per context, 2^8 entries: symbol << 4 | length, or [`LONG`]; 0 = no code (corrupt).
    pub(super) fast: Vec<u16>,
    /// Per context, 2^11 entries: symbol << 4 | length; 0 = no code (corrupt data).
    pub(super) decode: Vec<u16>,
    /// Per context and symbol: (reversed code, length).
    pub(super) encode: Vec<(u32, u8)>,
}

impl Model {
    /// The model of code lengths per context and symbol (`lengths[c * symbols + s]`; as many
    /// contexts as rows of `symbols`).
    pub(super) fn from_lengths(symbols: usize, lengths: &[u8]) -> Option<Model> {
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

/// LSB-first bit writer.
pub(super) struct Bits {
    pub(super) out: Vec<u8>,
    acc: u64,
    fill: u32,
}

impl Bits {
    pub(super) fn new() -> Bits {
        Bits {
            out: Vec::new(),
            acc: 0,
            fill: 0,
        }
    }

    pub(super) fn put(&mut self, code: u32, len: u8) {
        self.acc |= u64::from(code) << self.fill;
        self.fill += u32::from(len);
        while self.fill >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.fill -= 8;
        }
    }

    pub(super) fn finish(&mut self) {
        if self.fill > 0 {
            self.out.push(self.acc as u8);
        }
        self.acc = 0;
        self.fill = 0;
    }
}

/// Code lengths of every context from counts: a symbol never counted in a context gets no
/// code there.
pub(super) fn fit(symbols: usize, counts: &[u64]) -> Vec<u8> {
    (0..counts.len() / symbols)
        .flat_map(|c| code_lengths(&counts[c * symbols..(c + 1) * symbols]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
