//! The level index: the Romein & Bal "Gödel number" of a board within its level.
//!
//! Level n holds every board with n seeds whose opponent row (pits 6..11) has an empty pit.
//! A board's index is its rank, among the boards of its level, in the lexicographic order of
//! the tuple (pit 11, pit 10, …, pit 0), smaller first.
//!
//! Ranking walks the pits from 11 down to 0; at each pit it adds the number of boards of the
//! level that agree on the pits already walked and hold fewer seeds in this one. That count
//! depends only on the pit, the seeds not yet placed, the seeds in this pit, and whether an
//! empty opponent pit has been seen, so it is one table lookup per pit.

use std::sync::OnceLock;

use crate::board::{Board, MAX_SEEDS, PITS};
use crate::packed::{nonzero_bytes, pack, unpack, zero_bytes, Packed, OPPONENT_ROW};

const N: usize = MAX_SEEDS as usize + 1;

/// Binomial coefficient C(n, k) for the small arguments used here.
pub fn binomial(n: u64, k: u64) -> u64 {
    if k > n {
        return 0;
    }
    let k = k.min(n - k);
    let mut r: u128 = 1;
    for i in 0..k {
        r = r * u128::from(n - i) / u128::from(i + 1);
    }
    r as u64
}

/// Ways to put `s` seeds in `k` pits.
fn spread(k: usize, s: i64) -> u64 {
    if s < 0 {
        return 0;
    }
    if k == 0 {
        return u64::from(s == 0);
    }
    binomial(s as u64 + k as u64 - 1, k as u64 - 1)
}

/// Boards of pits `p-1 ..= 0` holding `s` seeds, given whether an empty opponent pit has
/// already been seen among pits `11 ..= p`.
fn completions(p: usize, s: i64, zero_seen: bool) -> u64 {
    if zero_seen {
        return spread(p, s);
    }
    if p <= 6 {
        return 0;
    }
    // Opponent pits 6..p-1 must contain a zero: all boards minus those with all of them ≥ 1.
    let m = (p - 6) as i64;
    spread(p, s) - spread(p, s - m)
}

/// The index is a sum of offsets: `OFFSET[z][p][r][v]`, the boards of the level skipped by
/// putting `v` seeds in pit `p` when `r` seeds remain for pits `p ..= 0` and `z` says
/// whether an empty opponent pit was seen (2 × 12 × 49 × 49 entries, 451 KiB), one lookup per
/// pit for `rank`, and a short linear search per pit for `unrank`. The tests' second unrank
/// binary-searches offsets computed from a table 80 times smaller:
/// `CUMULATIVE[p][x + PAD] = C(x + p, p)`, the boards of any `p` pits with at most `x` seeds
/// (0 for x < 0). By the hockey-stick identity the offsets are differences of it (writing S
/// for CUMULATIVE[p] and m = p − 6):
///
/// ```text
/// OFFSET[true][p][r][v]        = S[r] − S[r−v]
/// OFFSET[false][p][r][v ≥ 1]   = S[r] − S[r−v] − (S[r−1−m] − S[r−v−m])   (p ≥ 6)
/// OFFSET[false][p][r][0]       = 0
/// ```
///
/// (with z false, a 0 in pit p leaves every completion of pits p−1..0; v ≥ 1 seeds leave only
/// those with an empty pit among 6..p−1: all completions minus those with every one of the m
/// pits holding a seed.)
struct Tables {
    /// `OFFSET[z][p]` at row `z × 12 + p`: fixed sizes, so clamped indices need no checks.
    offset: Box<[[[u64; N]; N]; 2 * PITS]>,
    sizes: [u64; N],
    /// `LOW_SPAN[r]`: the boards of pits 5..0 holding `r` seeds, C(r + 5, 5): the spread of
    /// indices that share a `rank_high`.
    low_spans: [u64; N],
}

impl Tables {
    /// The row of `OFFSET[z][p]`, indexed `[r][v]`.
    #[inline]
    fn row(&self, z: bool, p: usize) -> &[[u64; N]; N] {
        &self.offset[usize::from(z) * PITS + p]
    }

    /// The `OFFSET` table, straight from its definition.
    fn offsets() -> Box<[[[u64; N]; N]; 2 * PITS]> {
        let mut offset: Box<[[[u64; N]; N]; 2 * PITS]> = vec![[[0u64; N]; N]; 2 * PITS]
            .into_boxed_slice()
            .try_into()
            .expect("2 × 12 rows");
        for z in [false, true] {
            for p in 0..PITS {
                for r in 0..N {
                    let mut acc = 0u64;
                    for v in 0..N {
                        offset[usize::from(z) * PITS + p][r][v] = acc;
                        if v <= r {
                            let z2 = z || (p >= 6 && v == 0);
                            acc += completions(p, (r - v) as i64, z2);
                        }
                    }
                }
            }
        }
        offset
    }

    fn build() -> Tables {
        let mut sizes = [0u64; N];
        for (n, size) in sizes.iter_mut().enumerate() {
            *size = completions(PITS, n as i64, false);
        }
        let mut low_spans = [0u64; N];
        for (r, span) in low_spans.iter_mut().enumerate() {
            *span = spread(6, r as i64);
        }
        Tables {
            offset: Tables::offsets(),
            sizes,
            low_spans,
        }
    }

    fn get() -> &'static Tables {
        static T: OnceLock<Tables> = OnceLock::new();
        T.get_or_init(Tables::build)
    }
}

/// Number of boards in level `n`: C(n+11, 11) − C(n+5, 11).
pub fn level_size(n: u32) -> u64 {
    if n > MAX_SEEDS {
        return 0;
    }
    completions(PITS, i64::from(n), false)
}

/// Number of boards with `n` seeds, indexed or not: C(n+11, 11).
pub fn all_boards(n: u32) -> u64 {
    spread(PITS, i64::from(n))
}

/// One level of the index: the boards with a given seed count and an empty opponent pit.
#[derive(Clone, Copy, Debug)]
pub struct Level {
    seeds: u32,
    size: u64,
    tables: &'static Tables,
}

impl std::fmt::Debug for Tables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tables")
    }
}

impl Level {
    /// Level `seeds` (0..=48).
    ///
    /// # Panics
    /// If `seeds` exceeds 48.
    pub fn new(seeds: u32) -> Level {
        assert!(seeds <= MAX_SEEDS, "level {seeds} > {MAX_SEEDS}");
        let tables = Tables::get();
        Level {
            seeds,
            size: tables.sizes[seeds as usize],
            tables,
        }
    }

    /// The seed count of this level.
    pub fn seeds(&self) -> u32 {
        self.seeds
    }

    /// Number of boards in the level.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The index of `board` in its level, or `None` when its opponent row is full (such a
    /// board is in no level). The board must hold this level's seed count.
    #[inline]
    pub fn rank(&self, board: &Board) -> Option<u64> {
        debug_assert_eq!(board.seeds(), self.seeds);
        self.rank_packed(pack(&board.pits()))
    }

    /// [`Level::rank`] of a packed board.
    #[inline]
    pub(crate) fn rank_packed(&self, packed: u128) -> Option<u64> {
        let (high, r) = self.rank_high(packed)?;
        Some(high + self.rank_low(packed, r))
    }

    /// The part of a board's index fixed by its opponent row, with the seeds the row leaves
    /// for pits 0..5: `(high, r)`, or `None` when the row is full (no level holds the board).
    /// The board is packed one pit per byte (pit i in byte i) and must hold this level's seed
    /// count; its index is `high + self.rank_low(board, r)`.
    ///
    /// ```text
    ///   index = Σ OFFSET[z][p][r_p][v_p] over p = 11..1
    ///         = (p = 11..6: rank_high, depends on pits 11..6 only)
    ///         + (p = 5..1:  rank_low, depends on pits 5..0 only, z being set by then)
    /// ```
    ///
    /// Un-sowing often leaves the opponent row as it was, so the predecessor generator ranks
    /// the high part once per child (see [`Board::for_each_ranked_predecessor`]).
    #[inline]
    pub(crate) fn rank_high(&self, packed: u128) -> Option<(u64, usize)> {
        let t = self.tables;
        let mut r = self.seeds as usize;
        let mut z = false;
        let mut index = 0u64;
        for p in (6..PITS).rev() {
            let v = ((packed >> (8 * p)) as u8 as usize).min(N - 1);
            index += t.row(z, p)[r.min(N - 1)][v];
            z |= v == 0;
            r = r.wrapping_sub(v);
        }
        z.then_some((index, r))
    }

    /// [`Level::rank_packed`] when the index lies in `range`, else `None`, deciding from the
    /// opponent row alone where it can: the boards that share a `rank_high` have indices
    /// `high .. high + C(r + 5, 5)`, and when that span misses `range` the own row is not
    /// ranked (an exits pass over a bucket of the level rejects most parents so).
    #[inline]
    pub(crate) fn rank_packed_in(&self, packed: u128, range: &std::ops::Range<u64>) -> Option<u64> {
        self.rank_low_in(packed, self.rank_high(packed), range)
    }

    /// [`Level::rank_packed_in`] given the board's [`Level::rank_high`] (which boards that
    /// share an opponent row share).
    #[inline]
    pub(crate) fn rank_low_in(
        &self,
        packed: u128,
        high: Option<(u64, usize)>,
        range: &std::ops::Range<u64>,
    ) -> Option<u64> {
        let (high, r) = high?;
        if high >= range.end || high + self.tables.low_spans[r.min(N - 1)] <= range.start {
            return None;
        }
        let q = high + self.rank_low(packed, r);
        range.contains(&q).then_some(q)
    }

    /// The part of a board's index fixed by its own row, given the seeds `r` in pits 0..5
    /// (see [`Level::rank_high`]).
    #[inline]
    pub(crate) fn rank_low(&self, packed: u128, mut r: usize) -> u64 {
        let t = self.tables;
        let mut index = 0u64;
        for p in (1..6).rev() {
            let v = ((packed >> (8 * p)) as u8 as usize).min(N - 1);
            index += t.row(true, p)[r.min(N - 1)][v];
            r = r.wrapping_sub(v);
        }
        index
    }

    /// The board at `index`.
    ///
    /// Walking the pits from 11 down, each pit's count is the largest `v` whose `OFFSET`
    /// does not pass the index, found by a linear search (counts are small: it beat a binary
    /// search over the `CUMULATIVE` table by 1.6×).
    ///
    /// # Panics
    /// If `index >= self.size()`.
    pub fn unrank(&self, mut index: u64) -> Board {
        assert!(
            index < self.size,
            "index {index} out of level {}",
            self.seeds
        );
        let mut pits = [0u8; PITS];
        let mut r = self.seeds as usize;
        let mut z = false;
        for p in (1..PITS).rev() {
            let row = &self.tables.row(z, p)[r];
            let mut v = 0;
            while v < r && row[v + 1] <= index {
                v += 1;
            }
            index -= row[v];
            pits[p] = v as u8;
            z |= p >= 6 && v == 0;
            r -= v;
        }
        pits[0] = r as u8;
        Board::from_pits(pits)
    }

    /// The boards with indices `start..end`, in index order, produced incrementally.
    pub fn boards(&self, range: std::ops::Range<u64>) -> Boards {
        let end = range.end.min(self.size);
        let start = range.start.min(end);
        Boards {
            next: if start < end {
                pack(&self.unrank(start).pits())
            } else {
                0
            },
            remaining: end - start,
        }
    }
}

/// The board following `b` in index order within its level, or `None` after the last.
#[inline]
pub fn successor(b: &Board) -> Option<Board> {
    successor_packed(pack(&b.pits())).map(|x| Board::from_pits(unpack(x)))
}

/// [`successor`] on a packed board: one lexicographic step, then, if that filled the
/// opponent row, a jump past every board sharing pits 7..11 with pit 6 ≥ 1 (all of them have
/// a full opponent row: put every lower seed in pit 6, the last of them, and step once more,
/// which empties pit 6).
#[inline]
fn successor_packed(x: Packed) -> Option<Packed> {
    if x & 0xff != 0 {
        // Most steps move one seed from pit 0 to pit 1 (both the mover's: the opponent row,
        // and so the level, stay as they were).
        return Some(x + 0xff);
    }
    let x = step_packed(x)?;
    if zero_bytes(x) & OPPONENT_ROW == 0 {
        // Seeds in pits 0..6: the seven low bytes summed by one multiply (at most 48 each,
        // so no byte of the sum overflows).
        let low = ((x as u64 & ((1 << 56) - 1)).wrapping_mul(0x0101_0101_0101_0101) >> 48) & 0xff;
        return step_packed((x & !((1 << 56) - 1)) | (Packed::from(low) << 48));
    }
    Some(x)
}

/// Lexicographic successor among all boards with the same seed count (pit 11 most
/// significant): the lowest non-empty pit i < 11 gives one seed to pit i+1 and the rest to
/// pit 0.
#[inline]
fn step_packed(x: Packed) -> Option<Packed> {
    let i = nonzero_bytes(x).trailing_zeros() as usize / 8;
    if i >= PITS - 1 {
        return None;
    }
    let t = (x >> (8 * i)) & 0xff;
    Some(x - (t << (8 * i)) + (1 << (8 * (i + 1))) + (t - 1))
}

/// Iterator over a range of a level, in index order (see [`Level::boards`]).
#[derive(Clone, Debug)]
pub struct Boards {
    /// The next board, packed (meaningless once `remaining` is 0).
    next: Packed,
    remaining: u64,
}

impl Iterator for Boards {
    type Item = Board;

    #[inline]
    fn next(&mut self) -> Option<Board> {
        if self.remaining == 0 {
            return None;
        }
        let x = self.next;
        self.remaining -= 1;
        if self.remaining > 0 {
            self.next = successor_packed(x).expect("a successor within the level's size");
        }
        Some(Board::from_pits(unpack(x)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining as usize, Some(self.remaining as usize))
    }
}

/// The boards left are known exactly (`len`).
impl ExactSizeIterator for Boards {}

/// Once done, always done.
impl std::iter::FusedIterator for Boards {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SplitMix64;

    /// Zeros before x = 0 in a `CUMULATIVE` row: x goes down to −1 − m ≥ −6.
    const PAD: usize = 8;
    /// Length of a `CUMULATIVE` row: a power of two ≥ N + PAD, so a masked index needs no check.
    const CUMULATIVE_LEN: usize = 64;

    /// `CUMULATIVE[p][x + PAD] = C(x + p, p)` (see [`Tables`]).
    fn cumulative() -> [[u64; CUMULATIVE_LEN]; PITS] {
        let mut cumulative = [[0u64; CUMULATIVE_LEN]; PITS];
        for (p, row) in cumulative.iter_mut().enumerate() {
            for x in 0..N {
                row[x + PAD] = binomial((x + p) as u64, p as u64);
            }
        }
        cumulative
    }

    /// The board at `index` by a binary search of each pit's count over the offsets of the
    /// `CUMULATIVE` table (see [`Tables`]), which are non-decreasing in the count: what the
    /// test compares `unrank` with.
    ///
    /// # Panics
    /// If `index >= level.size()`.
    fn unrank_by_search(
        level: &Level,
        cumulative: &[[u64; CUMULATIVE_LEN]; PITS],
        mut index: u64,
    ) -> Board {
        assert!(
            index < level.size,
            "index {index} out of level {}",
            level.seeds
        );
        let mut pits = [0u8; PITS];
        let mut r = PAD + level.seeds as usize;
        let mut full = true; // every opponent pit walked so far holds a seed
        for p in (1..PITS).rev() {
            let s = &cumulative[p];
            let correct = full && p >= 6;
            let m = p.saturating_sub(6);
            // OFFSET[!full][p][r][v], as in `rank`.
            let offset = |v: usize| -> u64 {
                if v == 0 {
                    return 0;
                }
                let plain = s[r] - s[r - v];
                if correct {
                    plain - (s[r - 1 - m] - s[r - v - m])
                } else {
                    plain
                }
            };
            // The largest v whose offset does not pass the index (offset(0) = 0 always does).
            let (mut lo, mut hi) = (0, r - PAD);
            while lo < hi {
                let mid = (lo + hi).div_ceil(2);
                if offset(mid) <= index {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            index -= offset(lo);
            pits[p] = lo as u8;
            full &= !(p >= 6 && lo == 0);
            r -= lo;
        }
        pits[0] = (r - PAD) as u8;
        Board::from_pits(pits)
    }

    /// Every index of levels 0..=9 and random indices of every level (the first and last
    /// of each too): the linear-search unrank equals the binary-search one, and rank inverts it.
    #[test]
    fn unrank_equals_search_unrank() {
        let table = cumulative();
        let mut rng = SplitMix64(23);
        for n in 0..=MAX_SEEDS {
            let level = Level::new(n);
            let mut check = |i: u64| {
                let b = level.unrank(i);
                assert_eq!(
                    b,
                    unrank_by_search(&level, &table, i),
                    "level {n} index {i}"
                );
                assert_eq!(level.rank(&b), Some(i), "level {n} index {i}");
            };
            if n <= 9 {
                (0..level.size()).for_each(&mut check);
            } else {
                check(0);
                check(level.size() - 1);
                for _ in 0..20_000 {
                    check(rng.below(level.size()));
                }
            }
        }
    }
}
