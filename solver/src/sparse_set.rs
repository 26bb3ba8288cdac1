//! A static set of `m` positions of a level of `N`, built once from the positions in increasing
//! order and then asked for membership, in about `m × (2 + log2(N/m))` bits (Elias-Fano).
//!
//! It is what a builder in about one bit and a third a position keeps of losability (see
//! docs/how-it-works.md, "A level in one bit a position": the one-bit builder looks it up on
//! disk instead, in rounds): the unsettled positions
//! whose exit is ≤ −i, at most about 5.6 % of a level, in about 0.35 bits a position of the
//! level.
//!
//! ```text
//!  x = (high, low): low = the ℓ low bits, ℓ = ⌊log2(N/m)⌋ (0 when m ≥ N/2), high = x >> ℓ
//!  lows:   the m low parts, ℓ bits each, in order
//!  highs:  for each high part h = 0, 1, …: a one per element whose high part is h, then a zero
//!          (m + (N >> ℓ) + 1 bits); the elements of bucket h follow the h-th zero (the first
//!          bucket starts the array)
//!  zeros:  the position of every 512th zero of `highs`, so that a bucket is found from the
//!          nearest sample by counting zeros in at most a few words
//! ```

/// Zeros between two samples of their positions.
const SAMPLE: u64 = 512;

/// A static set of positions below a bound (see the module).
#[derive(Clone, Debug)]
pub struct SparseSet {
    universe: u64,
    len: u64,
    low_bits: u32,
    lows: Vec<u64>,
    highs: Vec<u64>,
    /// `zeros[k]`: the position in `highs` of zero number `k × SAMPLE`.
    zeros: Vec<u64>,
}

/// Why a set could not be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SparseSetError {
    /// A position was not above the one before it.
    #[error("position {0} is not above the one before it")]
    NotIncreasing(u64),
    /// A position was not below the bound.
    #[error("position {0} is not below the bound {1}")]
    OutOfRange(u64, u64),
    /// More or fewer positions than announced.
    #[error("{got} positions, {announced} announced")]
    Count {
        /// Positions given.
        got: u64,
        /// Positions announced.
        announced: u64,
    },
}

impl SparseSet {
    /// The set of `len` positions, all below `universe`, given in increasing order by
    /// `positions`.
    pub fn build(
        universe: u64,
        len: u64,
        positions: impl IntoIterator<Item = u64>,
    ) -> Result<SparseSet, SparseSetError> {
        let low_bits = universe.checked_div(len).map_or(0, |r| r.max(1).ilog2());
        let buckets = universe >> low_bits;
        let high_len = len + buckets + 1;
        let mut set = SparseSet {
            universe,
            len,
            low_bits,
            lows: vec![0; (len * u64::from(low_bits)).div_ceil(64) as usize],
            highs: vec![0; high_len.div_ceil(64) as usize],
            zeros: Vec::with_capacity((buckets + 1).div_ceil(SAMPLE) as usize),
        };
        let mut count = 0u64;
        let mut previous: Option<u64> = None;
        // The next zero to write: the end of bucket `bucket`, at `at` in `highs`.
        let (mut bucket, mut at) = (0u64, 0u64);
        for x in positions {
            if x >= universe {
                return Err(SparseSetError::OutOfRange(x, universe));
            }
            if previous.is_some_and(|p| x <= p) {
                return Err(SparseSetError::NotIncreasing(x));
            }
            if count == len {
                return Err(SparseSetError::Count {
                    got: count + 1,
                    announced: len,
                });
            }
            previous = Some(x);
            let high = x >> low_bits;
            while bucket < high {
                set.end_bucket(bucket, at);
                bucket += 1;
                at += 1;
            }
            set.highs[(at / 64) as usize] |= 1 << (at % 64);
            at += 1;
            set.put_low(count, x);
            count += 1;
        }
        if count != len {
            return Err(SparseSetError::Count {
                got: count,
                announced: len,
            });
        }
        while bucket <= buckets {
            set.end_bucket(bucket, at);
            bucket += 1;
            at += 1;
        }
        Ok(set)
    }

    /// The zero that ends bucket `bucket`, at `at`: sampled every [`SAMPLE`] buckets.
    fn end_bucket(&mut self, bucket: u64, at: u64) {
        if bucket % SAMPLE == 0 {
            self.zeros.push(at);
        }
    }

    fn put_low(&mut self, k: u64, x: u64) {
        let l = u64::from(self.low_bits);
        if l == 0 {
            return;
        }
        let low = x & ((1 << l) - 1);
        let bit = k * l;
        let (w, s) = ((bit / 64) as usize, bit % 64);
        self.lows[w] |= low << s;
        if s + l > 64 {
            self.lows[w + 1] |= low >> (64 - s);
        }
    }

    fn low(&self, k: u64) -> u64 {
        let l = u64::from(self.low_bits);
        if l == 0 {
            return 0;
        }
        let bit = k * l;
        let (w, s) = ((bit / 64) as usize, bit % 64);
        let mut v = self.lows[w] >> s;
        if s + l > 64 {
            v |= self.lows[w + 1] << (64 - s);
        }
        v & ((1 << l) - 1)
    }

    /// The position in `highs` of zero number `j`.
    fn zero(&self, j: u64) -> u64 {
        let mut at = self.zeros[(j / SAMPLE) as usize];
        let mut left = j % SAMPLE;
        if left == 0 {
            return at;
        }
        // Zeros after `at`, word by word.
        at += 1;
        loop {
            let w = (at / 64) as usize;
            let s = at % 64;
            let zeros = !self.highs[w] >> s;
            let here = u64::from(zeros.count_ones()).min(64 - s);
            if here >= left {
                // The left-th zero in this word from bit s.
                let mut z = zeros;
                for _ in 1..left {
                    z &= z - 1;
                }
                return at + u64::from(z.trailing_zeros());
            }
            left -= here;
            at += 64 - s;
        }
    }

    /// Whether `x` is in the set.
    pub fn contains(&self, x: u64) -> bool {
        if x >= self.universe || self.len == 0 {
            return false;
        }
        let high = x >> self.low_bits;
        let low = x & ((1u64 << self.low_bits) - 1);
        // Bucket `high` begins after the zero that ends bucket high − 1.
        let begin = if high == 0 {
            0
        } else {
            self.zero(high - 1) + 1
        };
        // Its elements' ranks: ones before `begin` are the elements of earlier buckets.
        let mut rank = begin - high;
        let mut at = begin;
        while self.highs[(at / 64) as usize] >> (at % 64) & 1 == 1 {
            let l = self.low(rank);
            if l == low {
                return true;
            }
            if l > low {
                return false;
            }
            rank += 1;
            at += 1;
        }
        false
    }

    /// Positions in the set.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of memory its arrays take.
    pub fn bytes(&self) -> u64 {
        8 * (self.lows.len() + self.highs.len() + self.zeros.len()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(universe: u64, xs: &[u64]) {
        let set = SparseSet::build(universe, xs.len() as u64, xs.iter().copied()).unwrap();
        let members: std::collections::BTreeSet<u64> = xs.iter().copied().collect();
        for x in 0..universe.min(1 << 16) {
            assert_eq!(set.contains(x), members.contains(&x), "{x} of {universe}");
        }
        for &x in xs {
            assert!(set.contains(x));
            assert!(!set.contains(x.wrapping_add(universe)));
        }
    }

    #[test]
    fn holds_exactly_its_positions_at_every_density() {
        let mut rng = awari_db::SplitMix64(7);
        for &(universe, per_mille) in &[
            (1u64, 1000u64),
            (2, 500),
            (100, 0),
            (1000, 1),
            (1000, 999),
            (50_000, 56),
            (50_000, 500),
            (70_000, 3),
            (1 << 20, 56),
        ] {
            let xs: Vec<u64> = (0..universe)
                .filter(|_| rng.below(1000) < per_mille)
                .collect();
            check(universe, &xs);
        }
        // Every position, and buckets longer than a sample apart (empty stretches).
        check(5000, &(0..5000).collect::<Vec<_>>());
        check(10_000_000, &[0, 9_999_999]);
    }

    #[test]
    fn size_is_about_two_bits_and_the_low_part_an_element() {
        let mut rng = awari_db::SplitMix64(8);
        let universe = 1u64 << 22;
        let xs: Vec<u64> = (0..universe).filter(|_| rng.below(1000) < 56).collect();
        let set = SparseSet::build(universe, xs.len() as u64, xs.iter().copied()).unwrap();
        let bits = 8.0 * set.bytes() as f64 / xs.len() as f64;
        // ℓ = 4 at this density: 4 + about 2.1 + the samples.
        assert!((6.0..6.6).contains(&bits), "{bits} bits an element");
    }

    #[test]
    fn refuses_what_is_not_an_increasing_list_of_the_count_announced() {
        use SparseSetError::*;
        assert_eq!(
            SparseSet::build(10, 2, [3, 3]).unwrap_err(),
            NotIncreasing(3)
        );
        assert_eq!(
            SparseSet::build(10, 1, [10]).unwrap_err(),
            OutOfRange(10, 10)
        );
        assert_eq!(
            SparseSet::build(10, 1, [1, 2]).unwrap_err(),
            Count {
                got: 2,
                announced: 1
            }
        );
        assert_eq!(
            SparseSet::build(10, 3, [1, 2]).unwrap_err(),
            Count {
                got: 2,
                announced: 3
            }
        );
    }

    proptest! {
        #[test]
        fn membership_is_that_of_the_list(
            universe in 1u64..5000,
            picks in proptest::collection::vec(any::<u64>(), 0..400),
        ) {
            let mut xs: Vec<u64> = picks.iter().map(|p| p % universe).collect();
            xs.sort_unstable();
            xs.dedup();
            check(universe, &xs);
        }
    }
}
