//! A static rANS coder for short segments: one model of 12-bit frequencies per context, each
//! segment coded on its own, so that a reader decodes a bounded run of entries and nothing
//! before it.
//!
//! A segment is encoded backwards, starting from state 0 and writing nothing until the state
//! first reaches 2^23; from then on the state stays in 2^23..2^31, a byte going out whenever
//! the next symbol would push it past. The final state is written first, most significant byte
//! first, in as few bytes as the decoder needs, then the bytes that went out, in the order
//! the decoder takes them:
//!
//! ```text
//!   encoder:  x = 0 ── s[k-1] ── … ── s[1] ── s[0] ──▶ final state x_f
//!                       (no output while x < 2^23)
//!   segment:  [ x_f, MSB first: 0..=4 bytes | bytes, last written first ]
//!   decoder:  x = x_f ── s[0] ── s[1] ── … ── s[k-1] ──▶ back to 0
//!             (a byte is read while x < 2^23 and the segment has bytes left)
//! ```
//!
//! So a segment costs about the information of its symbols plus its final state's bytes,
//! where a coder that starts from 2^23, as usual, pays 23 bits a segment: at 128 entries a
//! segment, 0.18 bits a position. Where a rare symbol in the small states at the segment's
//! end would push a state past 2^31 (about 0.5 % of segments), the segment is coded from
//! 2^23 instead, with the same decoder. A decoder that reads every byte and ends in state 0
//! or 2^23 decoded the segment the encoder wrote, or bytes the table's checksum refuses.
//!
//! A model fitted by [`Model::fit`] gives every symbol of every context a frequency of at
//! least 1: any symbol can be coded in any context (a probe form's don't-cares may store a
//! value its context never saw). One fitted by [`Model::fit_seen`] gives the symbols a
//! context never saw frequency 0, and their share to the others: for tables whose every
//! (context, symbol) pair is counted before the model is fitted (depths). A symbol of
//! frequency 0 is never decoded, whatever the bytes.
//!
//! A context's slots 0..4096 go to its symbols in order of frequency, the most frequent first
//! (ties by symbol), so that the decoder finds a slot's symbol by a short linear search that
//! usually stops at the first one or two: a binary search over the cumulative frequencies took
//! 85 ns a symbol, its loads missing the cache one after another.

use std::sync::OnceLock;

use thiserror::Error;

/// Bits of a frequency: every context's frequencies sum to 2^12.
pub const PROBABILITY_BITS: u32 = 12;
/// The sum of every context's frequencies.
pub const TOTAL: u32 = 1 << PROBABILITY_BITS;
/// The lower bound of the state in its steady range 2^23..2^31.
pub const LOW: u64 = 1 << 23;
/// The most symbols a model's alphabet may have (each needs a frequency of at least 1).
pub const MAX_SYMBOLS: usize = 1 << 11;

/// A model that cannot be: frequencies that do not sum to [`TOTAL`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ModelError {
    /// Not a whole number of contexts, or an alphabet of no symbols or too many.
    #[error("{got} frequencies do not make contexts of {symbols} symbols (1..={MAX_SYMBOLS})")]
    Shape {
        /// Symbols per context.
        symbols: usize,
        /// Frequencies given.
        got: usize,
    },
    /// A context whose frequencies do not sum to [`TOTAL`].
    #[error("context {context}: frequencies sum to {got} (expected {TOTAL})")]
    Sum {
        /// The context.
        context: usize,
        /// Their sum.
        got: u32,
    },
}

/// Each context's symbols of frequency above 0 by rank (most frequent first) with the end
/// of their slots, all the decoder reads; the encoder's rows of frequencies and first slots
/// per (context, symbol) are made from them on first use.
///
/// ```text
///   rows:   0      r1         r2 ...   one start per context, then the end
///   order:  s s s  s s s s s  ...      a context's symbols of frequency > 0, by rank
///   ends:   e e 4096 e e ... 4096      the end of each one's slots
/// ```
///
/// So a sparse model (a depth table's: thousands of contexts of a few symbols each) opens in
/// time and memory of its stored pairs, not of contexts × symbols.
#[derive(Clone, Debug)]
pub struct Model {
    symbols: usize,
    /// Per context: where its ranks start in `order` and `ends`; one more entry, the end.
    rows: Vec<u32>,
    /// Per rank: the symbol.
    order: Vec<u16>,
    /// Per rank: the end of its slots (each context's last is 4096).
    ends: Vec<u16>,
    /// Per context: its first rank, in one load (see [`Head`]).
    heads: Vec<Head>,
    /// The encoder's view, made on first use.
    dense: OnceLock<Dense>,
}

/// A context's start in `order` and `ends`, with its most frequent symbol and the end of
/// that one's slots beside it: most slots decode from this alone, one load after the context
/// is known, instead of three dependent ones.
#[derive(Clone, Copy, Debug, Default)]
struct Head {
    start: u32,
    first_end: u16,
    first_symbol: u16,
}

/// Per context and symbol (rows of `symbols`): the frequency and the first slot.
#[derive(Clone, Debug)]
struct Dense {
    freq: Vec<u16>,
    cum: Vec<u16>,
}

impl PartialEq for Model {
    fn eq(&self, other: &Model) -> bool {
        // The ranks are canonical (ties by symbol): equal ranks, equal frequencies.
        (self.symbols, &self.rows, &self.order, &self.ends)
            == (other.symbols, &other.rows, &other.order, &other.ends)
    }
}

impl Eq for Model {}

impl Model {
    /// The model of `counts` (one row of `symbols` per context): each symbol gets 1, and the
    /// rest of [`TOTAL`] is shared by the counts (a context never seen shares it evenly).
    ///
    /// # Panics
    /// If `symbols` is 0 or above [`MAX_SYMBOLS`], or `counts` is not whole rows.
    pub fn fit(symbols: usize, counts: &[u64]) -> Model {
        Model::fit_rows(symbols, counts, false)
    }

    /// The model of `counts` for a coder that codes only what was counted: a symbol never seen
    /// in a context gets frequency 0 there (and cannot be coded in it), each seen one at least
    /// 1, and the rest of [`TOTAL`] is shared by the counts, so that the probability the
    /// unseen symbols would take goes to the seen ones (a context never seen gives it all to
    /// symbol 0). For tables whose every (context, symbol) pair is known before the model is
    /// fitted, such as depths; [`Model::to_sparse_bytes`] stores such a model in about 2–3
    /// bytes a seen pair.
    ///
    /// # Panics
    /// As [`Model::fit`].
    pub fn fit_seen(symbols: usize, counts: &[u64]) -> Model {
        Model::fit_rows(symbols, counts, true)
    }

    /// [`Model::fit`], or with `seen_only` [`Model::fit_seen`].
    fn fit_rows(symbols: usize, counts: &[u64], seen_only: bool) -> Model {
        assert!(
            (1..=MAX_SYMBOLS).contains(&symbols) && counts.len() % symbols == 0,
            "{} counts in rows of {symbols}",
            counts.len()
        );
        let total_f = u64::from(TOTAL);
        let mut freq = Vec::with_capacity(counts.len());
        for row in counts.chunks(symbols) {
            let total: u64 = row.iter().sum();
            let mut f: Vec<u64> = if total == 0 && seen_only {
                // Nothing is coded here: all to symbol 0, the cheapest row to store.
                (0..symbols)
                    .map(|s| if s == 0 { total_f } else { 0 })
                    .collect()
            } else if total == 0 {
                (0..symbols as u64)
                    .map(|s| total_f / symbols as u64 + u64::from(s < total_f % symbols as u64))
                    .collect()
            } else {
                // Each symbol that must be codable gets 1, the counts share the rest
                // (128-bit products: counts may be up to a level's size).
                let floor = |k: u64| u64::from(k > 0 || !seen_only);
                let spare = total_f - row.iter().map(|&k| floor(k)).sum::<u64>();
                row.iter()
                    .map(|&k| {
                        floor(k) + (u128::from(k) * u128::from(spare) / u128::from(total)) as u64
                    })
                    .collect()
            };
            let sum: u64 = f.iter().sum();
            // The rounding's rest to the most frequent symbol, where it costs least.
            let top = (0..symbols).max_by_key(|&s| f[s]).expect("symbols > 0");
            f[top] += total_f - sum;
            freq.extend(f.iter().map(|&x| x as u16));
        }
        Model::from_frequencies(symbols, freq).expect("a fit makes a valid model")
    }

    /// The model of stored frequencies, checked.
    pub fn from_frequencies(symbols: usize, freq: Vec<u16>) -> Result<Model, ModelError> {
        if !(1..=MAX_SYMBOLS).contains(&symbols) || freq.len() % symbols != 0 {
            return Err(ModelError::Shape {
                symbols,
                got: freq.len(),
            });
        }
        let mut builder = Ranks::new(symbols, freq.len() / symbols);
        for row in freq.chunks(symbols) {
            for (s, &f) in row.iter().enumerate().filter(|(_, &f)| f > 0) {
                builder.seen.push((s as u16, f));
            }
            builder.end_row()?;
        }
        Ok(builder.finish())
    }

    /// The encoder's frequencies and first slots, made from the ranks on first use.
    fn dense(&self) -> &Dense {
        self.dense.get_or_init(|| {
            let len = self.contexts() * self.symbols;
            let (mut freq, mut cum) = (vec![0u16; len], vec![0u16; len]);
            for (c, w) in self.rows.windows(2).enumerate() {
                let mut start = 0;
                for r in w[0] as usize..w[1] as usize {
                    let at = c * self.symbols + usize::from(self.order[r]);
                    (freq[at], cum[at]) = (self.ends[r] - start, start);
                    start = self.ends[r];
                }
            }
            Dense { freq, cum }
        })
    }

    /// The model as a table stores it: each frequency, u16 LE, one row per context.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        self.dense()
            .freq
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect()
    }

    /// The model of stored bytes ([`Model::to_le_bytes`]), checked as
    /// [`Model::from_frequencies`] does (an odd byte at the end is left over, so a shape error).
    pub fn from_le_bytes(symbols: usize, bytes: &[u8]) -> Result<Model, ModelError> {
        if bytes.len() % 2 != 0 {
            return Err(ModelError::Shape {
                symbols,
                got: bytes.len() / 2,
            });
        }
        let freq = bytes
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        Model::from_frequencies(symbols, freq)
    }

    /// The model as a table stores a sparse one (fitted by [`Model::fit_seen`]): the alphabet's
    /// size, then each context's symbols of frequency above 0, each after the gap since the
    /// last:
    ///
    /// ```text
    ///   u16 LE   S, symbols per context
    ///   per context:  m, then m × (gap, frequency)      each a LEB128 varint
    ///                 gap = symbol − (the last one + 1), from symbol 0
    /// ```
    pub fn to_sparse_bytes(&self) -> Vec<u8> {
        let mut out = (self.symbols as u16).to_le_bytes().to_vec();
        for row in self.dense().freq.chunks(self.symbols) {
            let seen = row.iter().filter(|&&f| f > 0).count();
            leb128(&mut out, seen as u64);
            let mut next = 0;
            for (s, &f) in row.iter().enumerate().filter(|(_, &f)| f > 0) {
                leb128(&mut out, (s - next) as u64);
                leb128(&mut out, u64::from(f));
                next = s + 1;
            }
        }
        out
    }

    /// The model of `contexts` contexts that [`Model::to_sparse_bytes`] stored, checked as
    /// [`Model::from_frequencies`] does; bytes that end early or late, a symbol past the
    /// alphabet or a frequency of 0 are a shape error.
    pub fn from_sparse_bytes(contexts: usize, bytes: &[u8]) -> Result<Model, ModelError> {
        let shape = |symbols| ModelError::Shape { symbols, got: 0 };
        if bytes.len() < 2 {
            return Err(shape(0));
        }
        let symbols = usize::from(u16::from_le_bytes([bytes[0], bytes[1]]));
        if !(1..=MAX_SYMBOLS).contains(&symbols) {
            return Err(shape(symbols));
        }
        let mut at = 2;
        let mut read = || -> Result<u64, ModelError> {
            let mut x = 0u64;
            for shift in (0..21).step_by(7) {
                let b = *bytes.get(at).ok_or(shape(symbols))?;
                at += 1;
                x |= u64::from(b & 0x7f) << shift;
                if b & 0x80 == 0 {
                    return Ok(x);
                }
            }
            Err(shape(symbols))
        };
        let mut builder = Ranks::new(symbols, contexts);
        for _ in 0..contexts {
            let seen = read()?;
            let mut next = 0u64;
            for _ in 0..seen {
                let s = next + read()?;
                let f = read()?;
                if s >= symbols as u64 || f == 0 || f > u64::from(TOTAL) {
                    return Err(shape(symbols));
                }
                builder.seen.push((s as u16, f as u16));
                next = s + 1;
            }
            builder.end_row()?;
        }
        if at != bytes.len() {
            return Err(shape(symbols));
        }
        Ok(builder.finish())
    }

    /// Symbols per context.
    pub fn symbols(&self) -> usize {
        self.symbols
    }

    /// Number of contexts.
    pub fn contexts(&self) -> usize {
        self.rows.len() - 1
    }

    /// The frequencies, one row of [`Model::symbols`] per context (what a table stores).
    pub fn frequencies(&self) -> &[u16] {
        &self.dense().freq
    }

    /// What coding `symbol` in `context` costs, in bits (−log2 of its probability).
    pub fn bits(&self, context: usize, symbol: usize) -> f32 {
        let f = self.dense().freq[context * self.symbols + symbol];
        PROBABILITY_BITS as f32 - f32::from(f).log2()
    }

    /// Append one segment coding `pairs` (context, symbol), in order, to `out`; returns
    /// whether it had to start from 2^23 (see the module's documentation).
    ///
    /// # Panics
    /// If a context or a symbol is out of the model's range, or a symbol has frequency 0 in
    /// its context (see [`Model::fit_seen`]).
    pub fn encode(&self, pairs: &[(usize, usize)], out: &mut Vec<u8>) -> bool {
        let dense = self.dense();
        let mut bytes = Vec::new();
        for start in [0, LOW] {
            bytes.clear();
            let mut x = start;
            let mut fits = true;
            for &(c, s) in pairs.iter().rev() {
                assert!(s < self.symbols, "symbol {s} of {}", self.symbols);
                let at = c * self.symbols + s;
                let (f, cum) = (u64::from(dense.freq[at]), u64::from(dense.cum[at]));
                assert!(f > 0, "symbol {s} has frequency 0 in context {c}");
                if x >= LOW {
                    let x_max = ((LOW >> PROBABILITY_BITS) << 8) * f;
                    while x >= x_max {
                        bytes.push(x as u8);
                        x >>= 8;
                    }
                }
                x = ((x / f) << PROBABILITY_BITS) + cum + x % f;
                if x >= LOW << 8 {
                    fits = false;
                    break;
                }
            }
            if !fits {
                continue;
            }
            // The final state: 4 bytes from 2^24, 3 from 2^23, below only the bytes it needs
            // (then nothing else went out: the decoder reads them all and stops).
            let len = if x >= LOW {
                if x >= LOW << 1 {
                    4
                } else {
                    3
                }
            } else {
                (64 - x.leading_zeros()).div_ceil(8) as usize
            };
            out.extend((0..len).rev().map(|k| (x >> (8 * k)) as u8));
            out.extend(bytes.iter().rev());
            return start != 0;
        }
        unreachable!("from 2^23 the state stays below 2^31")
    }

    /// A decoder of one segment's bytes.
    pub fn decoder<'a>(&'a self, bytes: &'a [u8]) -> Decoder<'a> {
        let mut d = Decoder {
            model: self,
            bytes,
            at: 0,
            x: 0,
        };
        d.refill();
        d
    }
}

/// A model's ranks, built a context at a time: its symbols of frequency above 0 are pushed to
/// `seen`, then [`Ranks::end_row`] checks their sum and ranks them.
struct Ranks {
    seen: Vec<(u16, u16)>,
    model: Model,
}

impl Ranks {
    fn new(symbols: usize, contexts: usize) -> Ranks {
        let mut rows = Vec::with_capacity(contexts + 1);
        rows.push(0);
        Ranks {
            seen: Vec::new(),
            model: Model {
                symbols,
                rows,
                order: Vec::new(),
                ends: Vec::new(),
                heads: Vec::new(),
                dense: OnceLock::new(),
            },
        }
    }

    /// Rank the context's symbols (most frequent first, ties by symbol) after checking that
    /// their frequencies sum to [`TOTAL`].
    fn end_row(&mut self) -> Result<(), ModelError> {
        let m = &mut self.model;
        let context = m.rows.len() - 1;
        let sum: u32 = self.seen.iter().map(|&(_, f)| u32::from(f)).sum();
        if sum != TOTAL {
            return Err(ModelError::Sum { context, got: sum });
        }
        self.seen
            .sort_unstable_by_key(|&(s, f)| (std::cmp::Reverse(f), s));
        let mut end = 0u16;
        for &(s, f) in &self.seen {
            // The last end is 4096, which fits: the sum was checked.
            end += f;
            m.order.push(s);
            m.ends.push(end);
        }
        m.rows.push(m.order.len() as u32);
        self.seen.clear();
        Ok(())
    }

    fn finish(mut self) -> Model {
        let m = &mut self.model;
        m.heads = m
            .rows
            .windows(2)
            .map(|w| Head {
                // Every context has a symbol: its frequencies were checked to sum to 4096.
                start: w[0],
                first_end: m.ends[w[0] as usize],
                first_symbol: m.order[w[0] as usize],
            })
            .collect();
        self.model
    }
}

/// Append `x` as an unsigned LEB128 varint: 7 bits a byte, low first, the top bit set on all
/// but the last.
fn leb128(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Decodes one segment, a symbol at a time, each in the context its caller computes from
/// what came before.
#[derive(Debug)]
pub struct Decoder<'a> {
    model: &'a Model,
    bytes: &'a [u8],
    at: usize,
    x: u64,
}

impl Decoder<'_> {
    fn refill(&mut self) {
        while self.x < LOW && self.at < self.bytes.len() {
            self.x = self.x << 8 | u64::from(self.bytes[self.at]);
            self.at += 1;
        }
    }

    /// The next symbol, coded in `context`. Any bytes decode to some symbols; whether they
    /// were a segment is [`Decoder::finish`]'s answer.
    ///
    /// # Panics
    /// If `context` is out of the model's range.
    #[inline(always)]
    pub fn next(&mut self, context: usize) -> usize {
        let m = self.model;
        let head = m.heads[context];
        let slot = (self.x & u64::from(TOTAL - 1)) as u16;
        let (start, end, symbol) = if slot < head.first_end {
            (0, head.first_end, head.first_symbol)
        } else {
            // The first rank whose slots end past `slot` (the last one's end, 4096, always
            // does).
            let mut rank = head.start as usize + 1;
            while m.ends[rank] <= slot {
                rank += 1;
            }
            (m.ends[rank - 1], m.ends[rank], m.order[rank])
        };
        self.x = u64::from(end - start) * (self.x >> PROBABILITY_BITS) + u64::from(slot - start);
        self.refill();
        usize::from(symbol)
    }

    /// Whether the segment was read to its last byte and the state is back where the encoder
    /// started (0, or 2^23): a whole segment, decoded as written.
    pub fn finish(&self) -> bool {
        self.at == self.bytes.len() && (self.x == 0 || self.x == LOW)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::SplitMix64;
    use proptest::prelude::*;

    fn skewed(symbols: usize, contexts: usize, seed: u64) -> Model {
        let mut rng = SplitMix64(seed);
        let counts: Vec<u64> = (0..symbols * contexts)
            .map(|i| {
                let r = rng.next_u64();
                // Most mass on a few symbols, some never seen.
                match r % 4 {
                    0 => 0,
                    1 => r % 7,
                    2 => 1000 + r % 100_000,
                    _ => (i % symbols) as u64 * 3,
                }
            })
            .collect();
        Model::fit(symbols, &counts)
    }

    fn round_trip(m: &Model, pairs: &[(usize, usize)]) -> usize {
        let mut out = vec![0xAB];
        m.encode(pairs, &mut out);
        let seg = &out[1..];
        let mut d = m.decoder(seg);
        for &(c, s) in pairs {
            assert_eq!(d.next(c), s);
        }
        assert!(d.finish(), "{pairs:?}");
        seg.len()
    }

    #[test]
    fn fitted_rows_sum_to_the_total_and_keep_every_symbol() {
        let m = skewed(69, 40, 1);
        for row in m.frequencies().chunks(69) {
            assert_eq!(row.iter().map(|&f| u32::from(f)).sum::<u32>(), TOTAL);
            assert!(row.iter().all(|&f| f >= 1));
        }
        // A context never seen: even.
        let m = Model::fit(3, &[0, 0, 0]);
        assert_eq!(m.frequencies(), &[1366, 1365, 1365]);
        // Counts beyond 32 bits do not overflow.
        let m = Model::fit(2, &[u64::MAX / 2, u64::MAX / 4]);
        assert_eq!(
            m.frequencies().iter().map(|&f| u32::from(f)).sum::<u32>(),
            TOTAL
        );
        assert!(m.bits(0, 0) < m.bits(0, 1));
    }

    #[test]
    fn fit_seen_gives_unseen_symbols_nothing_and_seen_ones_at_least_1() {
        let counts = [0, 5, 0, 1_000_000, 0, 0, 0, 0, 1, 0, 0, 0];
        let m = Model::fit_seen(4, &counts);
        let f = m.frequencies();
        assert_eq!(f[0], 0);
        assert!(f[1] >= 1 && f[3] > 4000);
        // A row never seen gives it all to symbol 0.
        assert_eq!(&f[4..8], &[TOTAL as u16, 0, 0, 0]);
        assert_eq!(&f[8..12], &[TOTAL as u16, 0, 0, 0]);
        for row in f.chunks(4) {
            assert_eq!(row.iter().map(|&x| u32::from(x)).sum::<u32>(), TOTAL);
        }
        // The seen symbols cost less than under `fit`, which keeps 1 for each unseen one.
        assert!(m.bits(0, 3) < Model::fit(4, &counts).bits(0, 3));
        assert_eq!(m.bits(2, 0), 0.0);
        // What was counted codes and decodes; an unseen symbol is never decoded.
        let pairs = [(0, 3), (0, 1), (2, 0), (0, 3), (0, 3)];
        round_trip(&m, &pairs);
        let mut rng = SplitMix64(8);
        for _ in 0..200 {
            let bytes: Vec<u8> = (0..8).map(|_| rng.next_u64() as u8).collect();
            let mut d = m.decoder(&bytes);
            for _ in 0..20 {
                let s = d.next(0);
                assert!(s == 1 || s == 3, "{s}");
                assert_eq!(d.next(2), 0);
            }
        }
    }

    #[test]
    fn sparse_bytes_give_the_same_model_and_refuse_damage() {
        let counts: Vec<u64> = (0..300u64 * 6)
            .map(|i| {
                if i % 7 == 0 || i % 11 == 0 {
                    i * 31 % 1000
                } else {
                    0
                }
            })
            .collect();
        let m = Model::fit_seen(300, &counts);
        let bytes = m.to_sparse_bytes();
        let read = Model::from_sparse_bytes(6, &bytes).unwrap();
        assert_eq!(read, m);
        // The encoder's rows, made from the ranks read, are the fitted ones: a segment coded
        // with the model read decodes with the fitted one.
        assert_eq!(read.frequencies(), m.frequencies());
        let pairs: Vec<(usize, usize)> = (0..6 * 300)
            .filter(|&i| counts[i] > 0)
            .map(|i| (i / 300, i % 300))
            .collect();
        let mut out = Vec::new();
        read.encode(&pairs, &mut out);
        let mut d = m.decoder(&out);
        assert!(pairs.iter().all(|&(c, s)| d.next(c) == s) && d.finish());
        // Far smaller than the dense rows where most symbols are unseen.
        assert!(bytes.len() * 3 < m.to_le_bytes().len(), "{}", bytes.len());
        // A row of one symbol: its count, the gap and 4096 in two bytes.
        let one = Model::fit_seen(3, &[0, 0, 5]);
        assert_eq!(one.to_sparse_bytes(), vec![3, 0, 1, 2, 0x80, 0x20]);
        // Too short, too long, the wrong number of contexts, a symbol past the alphabet, a
        // frequency of 0, rows that do not sum to 4096: errors, never a model.
        assert!(Model::from_sparse_bytes(6, &bytes[..bytes.len() - 1]).is_err());
        assert!(Model::from_sparse_bytes(6, &[&bytes[..], &[0]].concat()).is_err());
        assert!(Model::from_sparse_bytes(5, &bytes).is_err());
        assert!(Model::from_sparse_bytes(1, &[3, 0, 1, 3, 0x80, 0x20]).is_err());
        assert!(Model::from_sparse_bytes(1, &[3, 0, 1, 2, 0]).is_err());
        assert!(Model::from_sparse_bytes(1, &[3, 0, 1, 2, 0x80, 0x10]).is_err());
        assert!(Model::from_sparse_bytes(1, &[0, 0, 0]).is_err());
        assert!(Model::from_sparse_bytes(1, &[]).is_err());
        // Any bytes: an error or a model, never a panic.
        let mut rng = SplitMix64(12);
        for _ in 0..2000 {
            let mut bad = bytes.clone();
            let at = (rng.next_u64() % bad.len() as u64) as usize;
            bad[at] = rng.next_u64() as u8;
            if let Ok(other) = Model::from_sparse_bytes(6, &bad) {
                assert_eq!(other.contexts(), 6);
            }
        }
    }

    #[test]
    #[should_panic(expected = "frequency 0")]
    fn an_unseen_symbol_cannot_be_encoded() {
        let m = Model::fit_seen(3, &[4, 0, 1]);
        m.encode(&[(0, 1)], &mut Vec::new());
    }

    #[test]
    fn bad_frequencies_are_errors() {
        assert_eq!(
            Model::from_frequencies(2, vec![4095, 1, 7]),
            Err(ModelError::Shape { symbols: 2, got: 3 })
        );
        assert_eq!(
            Model::from_frequencies(2, vec![4095, 1, 4000, 1]),
            Err(ModelError::Sum {
                context: 1,
                got: 4001
            })
        );
        assert!(Model::from_frequencies(0, vec![]).is_err());
    }

    #[test]
    fn stored_bytes_give_the_same_model() {
        let m = skewed(7, 3, 6);
        let bytes = m.to_le_bytes();
        assert_eq!(bytes.len(), 2 * 7 * 3);
        let read = Model::from_le_bytes(7, &bytes).unwrap();
        assert_eq!(read.frequencies(), m.frequencies());
        assert_eq!(read, m);
        assert!(Model::from_le_bytes(7, &bytes[1..]).is_err());
    }

    #[test]
    fn an_empty_segment_is_no_bytes() {
        let m = skewed(5, 2, 2);
        assert_eq!(round_trip(&m, &[]), 0);
    }

    #[test]
    fn a_likely_segment_costs_its_information_and_a_few_bytes() {
        // 96 symbols at probability 3/4 and 32 at 1/4: 104 bits of information, so 13
        // bytes and at most the final state's few more.
        let m = Model::from_frequencies(2, vec![3072, 1024]).unwrap();
        let pairs: Vec<(usize, usize)> = (0..128).map(|i| (0, usize::from(i % 4 == 3))).collect();
        let len = round_trip(&m, &pairs);
        assert!((13..=16).contains(&len), "{len}");
        // The most probable symbol at cumulative frequency 0 from state 0 costs nothing.
        assert_eq!(round_trip(&m, &[(0, 0); 100]), 0);
    }

    #[test]
    fn rare_symbols_at_the_end_fall_back_to_the_full_start() {
        // Eleven symbols of one bit each take state 0 to about 2^22 (no byte out yet); a
        // symbol of probability 1/4096 there would take it to about 2^34: the segment is
        // coded from 2^23 instead.
        let m = Model::from_frequencies(2, vec![2048, 2048, 4095, 1]).unwrap();
        let mut pairs = vec![(1, 1)];
        pairs.extend([(0, 1); 11]);
        assert!(m.encode(&pairs, &mut Vec::new()));
        round_trip(&m, &pairs);
        // The same rare symbol in the large states fits.
        pairs.rotate_left(1);
        assert!(!m.encode(&pairs, &mut Vec::new()));
        round_trip(&m, &pairs);
    }

    #[test]
    fn a_changed_byte_is_caught_or_decodes_otherwise() {
        let m = skewed(9, 3, 3);
        let mut rng = SplitMix64(4);
        let pairs: Vec<(usize, usize)> = (0..128)
            .map(|_| ((rng.next_u64() % 3) as usize, (rng.next_u64() % 9) as usize))
            .collect();
        let mut seg = Vec::new();
        m.encode(&pairs, &mut seg);
        let mut caught = 0;
        for at in 0..seg.len() {
            let mut bad = seg.clone();
            bad[at] ^= 0x10;
            let mut d = m.decoder(&bad);
            let got: Vec<usize> = pairs.iter().map(|&(c, _)| d.next(c)).collect();
            // Other bytes, other symbols: the coder is a bijection from each start state.
            assert!(got.iter().zip(&pairs).any(|(g, p)| *g != p.1), "byte {at}");
            caught += usize::from(!d.finish());
        }
        // Most changes are caught by the end state alone (the table's checksum catches all).
        assert!(caught * 10 >= seg.len() * 9, "{caught} of {}", seg.len());
    }

    proptest! {
        #[test]
        fn segments_round_trip(
            symbols in 1usize..80,
            contexts in 1usize..6,
            seed in any::<u64>(),
            raw in proptest::collection::vec((any::<u16>(), any::<u16>()), 0..300),
        ) {
            let m = skewed(symbols, contexts, seed);
            let pairs: Vec<(usize, usize)> = raw
                .iter()
                .map(|&(c, s)| (usize::from(c) % contexts, usize::from(s) % symbols))
                .collect();
            round_trip(&m, &pairs);
        }

        #[test]
        fn any_bytes_decode_without_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
            n in 0usize..200,
        ) {
            let m = skewed(13, 2, 5);
            let mut d = m.decoder(&bytes);
            for k in 0..n {
                prop_assert!(d.next(k % 2) < 13);
            }
            let _ = d.finish();
        }
    }
}
