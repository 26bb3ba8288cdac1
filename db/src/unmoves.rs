//! Un-moves: the predecessors of a position (un-sowing) and the parents of a capture
//! (un-capturing), under each rule set: the inverse of `moves`, which the builders and the
//! depth pass run backwards from each settled position.

use crate::board::{Board, PITS};
use crate::index::Level;
use crate::moves::*;
use crate::packed::*;
use crate::parent_range::ParentRange;
use crate::rules::Rules;

impl Board {
    /// Every predecessor in the same level: each `(parent, pit)` such that `pit` is a legal,
    /// non-capturing move of the non-terminal `parent` leading to `self`.
    ///
    /// Parents are returned whether or not they are indexed (a parent whose opponent row is
    /// full is in no level; the caller filters with [`crate::Level::rank`]).
    ///
    /// Un-sowing: the side that moved is the opponent here, so rotate back; the pit it played
    /// is empty after the move; take back one seed from each pit the sowing passed, last seed
    /// first, for every feasible seed count, and keep the results whose move would not have
    /// captured. A non-capturing move is legal exactly when the child's mover row is non-empty
    /// (it did not eradicate, and it fed an empty row if it had to); under `abapa` a grand slam
    /// is a non-capturing move.
    pub fn for_each_predecessor(&self, rules: Rules, mut f: impl FnMut(Board, u8)) {
        unsow_all(pack(&self.pits()), rules, |parent, h, _| {
            f(Board::from_pits(unpack(parent)), h as u8);
        });
    }

    /// [`Board::for_each_predecessor`] with each indexed parent's index in `level` (the
    /// level of `self`): `f(index, parent)`; parents with a full opponent row are left out.
    ///
    /// Faster than ranking each parent: the part of the index that the opponent row fixes
    /// (`Level::rank_high`, internal) is computed once for every parent whose un-sowing did not
    /// reach that row.
    #[inline]
    pub fn for_each_ranked_predecessor(
        &self,
        rules: Rules,
        level: &Level,
        mut f: impl FnMut(u64, Board),
    ) {
        self.for_each_ranked_predecessor_pit(rules, level, |q, parent, _| f(q, parent));
    }

    /// [`Board::for_each_ranked_predecessor`] with the pit each parent played:
    /// `f(index, parent, pit)`.
    #[inline]
    pub fn for_each_ranked_predecessor_pit(
        &self,
        rules: Rules,
        level: &Level,
        mut f: impl FnMut(u64, Board, u8),
    ) {
        unsow_ranking_high(pack(&self.pits()), rules, level, |parent, h, high| {
            if let Some((high, r)) = high {
                f(
                    high + level.rank_low(parent, r),
                    Board::from_pits(unpack(parent)),
                    h as u8,
                );
            }
        });
    }

    /// Every parent that reaches `self` by a capturing move taking exactly `captures` seeds:
    /// each `(parent, pit)` such that `pit` is a legal move of `parent` that captures
    /// `captures` seeds and leads to `self`. The parent has `self.seeds() + captures` seeds.
    ///
    /// Un-capturing: rotate back to the side that moved (the board after capture). The capture
    /// emptied a run of opponent pits ending where the last seed fell, each of which held 2 or
    /// 3 after sowing, and stopped below the run at a pit holding neither (or at the mover's
    /// row). Sowing left a seed in every pit it passed except the run, and its first lap passed
    /// every pit from the one played up to the run; the pit played is empty afterwards. So:
    /// - the pit played is the *last* empty pit of the mover's row (sowing from an earlier
    ///   one would have passed, and filled, the later one);
    /// - the run starts at the first empty opponent pit, and no pit in between may be empty;
    /// - the pit just below the run must hold neither 2 nor 3.
    ///
    /// For every run length and every refill of the run with 2s and 3s totalling `captures`,
    /// un-sow from that pit with every seed count whose last seed falls at the top of the run.
    ///
    /// ```text
    ///   pit                    0  1  2  3  4  5 |  6  7  8  9 10 11
    ///   after capture          1  0  2  1  1  1 |  1  0  0  0  4  0   pit played: 1
    ///   sown (before capture)  1  0  2  1  1  1 |  1  3  2  0  4  0   run 7..8: 3 + 2
    ///   parent                 1  7  1  0  0  0 |  0  2  1  0  4  0   7 seeds from pit 1
    /// ```
    ///
    /// (Refilling the run with 2 + 3 instead gives a second parent, `… | 0 1 2 0 4 0`.)
    ///
    /// A capture is legal exactly when it leaves the opponent a seed (`awari`, `abapa`: the
    /// child's mover row is non-empty) or always (`grand-slam`, where a grand slam leaves a
    /// terminal child); the parent is then never terminal. Parents are returned whether or
    /// not they are indexed (filter with [`crate::Level::rank`]); each at most once.
    pub fn for_each_uncapture(&self, rules: Rules, captures: u8, mut f: impl FnMut(Board, u8)) {
        uncapture_all(pack(&self.pits()), rules, captures, |parent, h| {
            f(Board::from_pits(unpack(parent)), h as u8);
        });
    }

    /// [`Board::for_each_uncapture`] with each indexed parent's index in `level` (the level
    /// of `self.seeds() + captures` seeds): `f(index, parent)`; parents with a full opponent
    /// row are left out.
    #[inline]
    pub fn for_each_ranked_uncapture(
        &self,
        rules: Rules,
        captures: u8,
        level: &Level,
        mut f: impl FnMut(u64, Board),
    ) {
        uncapture_all(pack(&self.pits()), rules, captures, |parent, _| {
            if let Some(q) = level.rank_packed(parent) {
                f(q, Board::from_pits(unpack(parent)));
            }
        });
    }

    /// [`Board::for_each_ranked_uncapture`]'s indices that lie in `range`, without the parent
    /// boards: `f(index)`. A child none of whose parents can lie in `range` is dropped before
    /// any is made (see [`ParentRange`]), and most parents outside it are rejected before their
    /// own row is ranked (from its opponent row alone): an exits pass over a bucket of a level.
    #[inline]
    pub fn for_each_uncapture_index_in(
        &self,
        rules: Rules,
        captures: u8,
        level: &Level,
        range: &ParentRange,
        mut f: impl FnMut(u64),
    ) {
        let child = pack(&self.pits());
        if !range.may_hold_a_parent_of(child, true) {
            return;
        }
        uncapture_all(child, rules, captures, |parent, _| {
            if let Some(q) = level.rank_packed_in(parent, range.range()) {
                f(q);
            }
        });
    }

    /// [`Board::for_each_ranked_predecessor`]'s indices that lie in `range`, without the
    /// parent boards: `f(index)`, filtered as [`Board::for_each_uncapture_index_in`] (a pass
    /// of the level's own moves into a bucket of it).
    #[inline]
    pub fn for_each_predecessor_index_in(
        &self,
        rules: Rules,
        level: &Level,
        range: &ParentRange,
        mut f: impl FnMut(u64),
    ) {
        let child = pack(&self.pits());
        if !range.may_hold_a_parent_of(child, false) {
            return;
        }
        unsow_ranking_high(child, rules, level, |parent, _, high| {
            if let Some(q) = level.rank_low_in(parent, high, range.range()) {
                f(q);
            }
        });
    }

    /// The un-captures as a vector (see [`Board::for_each_uncapture`]).
    pub fn uncaptures(&self, rules: Rules, captures: u8) -> Vec<(Board, u8)> {
        let mut v = Vec::new();
        self.for_each_uncapture(rules, captures, |b, h| v.push((b, h)));
        v
    }

    /// The predecessors as a vector (see [`Board::for_each_predecessor`]).
    pub fn predecessors(&self, rules: Rules) -> Vec<(Board, u8)> {
        let mut v = Vec::new();
        self.for_each_predecessor(rules, |b, h| v.push((b, h)));
        v
    }
}

/// Un-sow the child `child` (packed, from its mover's side) in every way that a legal,
/// non-capturing move could have produced it (see [`Board::for_each_predecessor`]), calling
/// `f(parent, pit, row_changed)` with each parent (packed, from its mover's side), the pit it
/// played, and whether its opponent row differs from the child's mover row (the un-sowing
/// passed it).
///
/// With `a` the child rotated back (the sown board, the parent's row being pits 0..5): for
/// every empty pit `h` of that row and seed count s = 1, 2, …, the parent is `a` less one
/// seed in each of the first s pits that sowing from `h` passes (`SOW[h][s]`), with s seeds
/// in `h`; the counts stop at the first pit that would go below zero (see [`first_lap`]).
///
/// Under `cross-wari` a parent sowed counter-clockwise from an even count, or clockwise from
/// an odd one (`SOW_CW`): the counts of both directions are found for each pit `h` and taken
/// in one loop, as one mask (see [`UNSOW`]).
#[inline(always)]
fn unsow_all(child: Packed, rules: Rules, mut f: impl FnMut(Packed, usize, bool)) {
    // The mover's row of the child is the row the parent sowed into last: if empty, the
    // move eradicated (illegal without a capture).
    if child & !OPPONENT_ROW == 0 {
        return;
    }
    let a = rotate_packed(child);
    let empty = byte_mask(zero_bytes(a));
    // Opponent pits holding 2 or 3: a sowing ending there would have captured.
    let capturing = byte_mask(zero_bytes((a & BYTES_FE) ^ BYTES_02)) & 0xfc0;
    // A sowing that would capture every opponent seed is a grand slam: legal, and it
    // captures nothing. Only where every opponent pit of the sown board holding a seed holds
    // 2 or 3: a capture takes no other.
    let slams = rules.grand_slam_captures_nothing() && !empty & 0xfc0 == capturing;
    let both = rules.sows_both_ways();
    let masks = (empty, capturing);
    let mirrored = if both {
        (mirror_mask(empty), mirror_mask(capturing))
    } else {
        (0, 0)
    };
    let mut origins = empty & 0x3f;
    while origins != 0 {
        let h = origins.trailing_zeros() as usize;
        origins &= origins - 1;
        // Bit j: j + 1 seeds counter-clockwise; under `cross-wari`, bit 11 + j: j + 1 seeds
        // clockwise.
        let mut counts = if both {
            first_lap::<false, EVEN_COUNTS>(a, masks, h, slams)
                | first_lap::<true, ODD_COUNTS>(a, mirrored, 5 - h, slams) << 11
        } else {
            first_lap::<false, ANY_COUNT>(a, masks, h, slams)
        };
        while counts != 0 {
            let j = counts.trailing_zeros() as usize;
            counts &= counts - 1;
            let parent = a.wrapping_add(UNSOW[h][j]);
            f(parent, h, (parent ^ a) & OPPONENT_ROW != 0);
        }
        if empty == 1 << h {
            // Every other pit holds a seed: the sowing may go round again.
            if both {
                unsow_laps::<false, EVEN_COUNTS>(a, h, slams, &mut f);
                unsow_laps::<true, ODD_COUNTS>(a, h, slams, &mut f);
            } else {
                unsow_laps::<false, ANY_COUNT>(a, h, slams, &mut f);
            }
        }
    }
}

/// [`unsow_all`] with each parent's [`Level::rank_high`] in `level`: `f(parent, pit, high)`.
/// The opponent row's part of the index is computed once for all the parents whose un-sowing
/// left that row as it was (most of them), and again only for the others.
#[inline(always)]
fn unsow_ranking_high(
    child: Packed,
    rules: Rules,
    level: &Level,
    mut f: impl FnMut(Packed, usize, Option<(u64, usize)>),
) {
    let mut unchanged: Option<Option<(u64, usize)>> = None;
    unsow_all(child, rules, |parent, h, row_changed| {
        let high = if row_changed {
            level.rank_high(parent)
        } else {
            *unchanged.get_or_insert_with(|| level.rank_high(parent))
        };
        f(parent, h, high);
    });
}

/// `UNSOW[h][j]`: what un-sowing adds to the sown board to give the parent that sowed pit `h`
/// (its s seeds back in `h`, a seed less in every pit the sowing passed), as a wrapping
/// difference: for j < 11, s = j + 1 seeds counter-clockwise (`SOW`); for j ≥ 11, s = j − 10
/// seeds clockwise (`SOW_CW`). The parent is `a.wrapping_add(UNSOW[h][j])`, each of whose
/// pits is at least 0 where the un-sowing fits.
const UNSOW: [[Packed; 22]; 6] = {
    let mut t = [[0u128; 22]; 6];
    let mut h = 0;
    while h < 6 {
        let mut j = 0;
        while j < 22 {
            let (path, s) = if j < 11 {
                (SOW[h][j + 1], j + 1)
            } else {
                (SOW_CW[h][j - 10], j - 10)
            };
            t[h][j] = ((s as Packed) << (8 * h)).wrapping_sub(path & PITS_MASK);
            j += 1;
        }
        h += 1;
    }
    t
};

/// The first-lap seed counts (1..=11) that un-sow the sown board `a` into a legal
/// non-capturing move from pit `k` counter-clockwise, or with `CW` from pit 5 − k clockwise,
/// of the counts `COUNTS` allows: bit j for j + 1 seeds. `(empty, capturing)`: the masks of
/// the empty pits and of the opponent pits holding 2 or 3, mirrored with `CW` (bit i: pit
/// [`mirror_pit`]`(i)`), in which frame the clockwise sowing from 5 − k walks as a
/// counter-clockwise one from `k`. `slams`: whether a sowing that would capture may be a
/// grand slam, legal and capturing nothing.
#[inline(always)]
fn first_lap<const CW: bool, const COUNTS: u8>(
    a: Packed,
    (empty, capturing): (u32, u32),
    k: usize,
    slams: bool,
) -> u32 {
    // Bit j of a `path` mask is the pit the (j+1)-th seed sown from k falls in, on the
    // first lap: pits k+1, …, 11, 0, …, k−1.
    let path = |mask: u32| ((mask | (mask << 12)) >> (k + 1)) & 0x7ff;
    let blocked = path(empty);
    // Seed counts s = 1..=longest take a seed from non-empty pits only.
    let fits = if blocked == 0 {
        0x7ff
    } else {
        (1u32 << blocked.trailing_zeros()) - 1
    };
    let allowed = match COUNTS {
        ODD_COUNTS => 0x555,
        EVEN_COUNTS => 0xaaa,
        _ => 0x7ff,
    };
    let mut counts = fits & !path(capturing) & allowed;
    if slams {
        let h = if CW { 5 - k } else { k };
        let (_, seed_pit) = tables::<CW>();
        let mut captures = fits & path(capturing) & allowed;
        while captures != 0 {
            let j = captures.trailing_zeros() as usize;
            captures &= captures - 1;
            if captures_every_opponent_seed::<CW>(a, usize::from(seed_pit[h][j + 1])) {
                counts |= 1 << j;
            }
        }
    }
    counts
}

/// Seed counts the un-sowings try: any, or the odd or the even ones only (`cross-wari`).
const ANY_COUNT: u8 = 0;
const ODD_COUNTS: u8 = 1;
const EVEN_COUNTS: u8 = 2;

/// Whether a sowing of `s` seeds is one of `COUNTS` (`ANY_COUNT`, `ODD_COUNTS`, `EVEN_COUNTS`).
#[inline(always)]
const fn counts_allow<const COUNTS: u8>(s: usize) -> bool {
    match COUNTS {
        ODD_COUNTS => s % 2 == 1,
        EVEN_COUNTS => s % 2 == 0,
        _ => true,
    }
}

/// The sowing table of a direction and its seed pits: `SOW` and `SEED_PIT`, or with `CW`
/// `SOW_CW` and `SEED_PIT_CW`.
#[inline(always)]
fn tables<const CW: bool>() -> (&'static [[Packed; 49]; 6], &'static [[u8; 49]; 6]) {
    if CW {
        (&SOW_CW, &SEED_PIT_CW)
    } else {
        (&SOW, &SEED_PIT)
    }
}

/// The un-sowings from pit `h` of 12 seeds or more (see `unsow_all`), one seed at a time, in
/// one direction (`CW`: clockwise).
#[cold]
fn unsow_laps<const CW: bool, const COUNTS: u8>(
    a: Packed,
    h: usize,
    slams: bool,
    f: &mut impl FnMut(Packed, usize, bool),
) {
    let (sow, seed_pit) = tables::<CW>();
    let mut rem = a - (sow[h][11] & PITS_MASK);
    for (s, &last) in seed_pit[h].iter().enumerate().skip(12) {
        let last = usize::from(last);
        if pit(rem, last) == 0 {
            break;
        }
        rem -= 1 << (8 * last);
        if !counts_allow::<COUNTS>(s) {
            continue;
        }
        let v = pit(a, last);
        if last >= 6
            && (v == 2 || v == 3)
            && (!slams || !captures_every_opponent_seed::<CW>(a, last))
        {
            continue;
        }
        f(rem | ((s as Packed) << (8 * h)), h, true);
    }
}

/// Whether a capture ending at `last` on the sown board `a` takes every opponent seed: the
/// opponent pits left once the walk back from `last` (towards lower pits, or with `CW`
/// higher ones) has taken each pit of 2 or 3 are all empty.
fn captures_every_opponent_seed<const CW: bool>(a: Packed, last: usize) -> bool {
    let mut left = a & OPPONENT_ROW;
    let mut j = last;
    while (6..PITS).contains(&j) && matches!(pit(a, j), 2 | 3) {
        left &= !(0xff << (8 * j));
        j = if CW { j + 1 } else { j - 1 };
    }
    left == 0
}

/// Un-capture the packed child `child` (see [`Board::for_each_uncapture`]), calling
/// `f(parent, pit)` with each parent (packed, from its mover's side) and the pit it played.
///
/// With `a` the child rotated back: the pit played `h` is the last empty pit of `a`'s row
/// 0..5, the run starts at the first empty opponent pit `low`, and for a run of `len` pits
/// ending at `last` every refill with 2s and 3s totalling `captures` gives a sown board. The
/// sowings from `h` whose last seed falls at `last` have `last − h + 11k` seeds, k = 0, 1, …;
/// the first lap always fits (every pit from h+1 to last holds a seed: h is the last empty
/// pit of its row, `low` the first of the other), a later one while no pit would go below zero.
///
/// Under `cross-wari`, as [`unsow_all`]: the counter-clockwise un-captures from an even count,
/// and the clockwise ones from an odd count, found by the same walk over the mirrored mask of
/// empty pits.
#[inline(always)]
fn uncapture_all(child: Packed, rules: Rules, captures: u8, mut f: impl FnMut(Packed, usize)) {
    let c = usize::from(captures);
    if c < 2 || seeds_packed(child) as usize + c > crate::MAX_SEEDS as usize {
        return;
    }
    // The capture left the opponent a seed (the child's mover row), except under grand-slam.
    if rules != Rules::GrandSlam && child & !OPPONENT_ROW == 0 {
        return;
    }
    let a = rotate_packed(child);
    let empty = byte_mask(zero_bytes(a));
    if empty & 0x3f == 0 || empty & 0xfc0 == 0 {
        return;
    }
    if !rules.sows_both_ways() {
        return uncapture_toward::<false, ANY_COUNT>(a, empty, c, &mut f);
    }
    uncapture_toward::<false, EVEN_COUNTS>(a, empty, c, &mut f);
    uncapture_toward::<true, ODD_COUNTS>(a, mirror_mask(empty), c, &mut f);
}

/// [`uncapture_all`]'s un-captures of `c` seeds in one direction (`CW`: clockwise), of the
/// seed counts `COUNTS` allows, from the board `a` after capture and its mask of empty pits,
/// mirrored with `CW` (bit i: pit [`mirror_pit`]`(i)`; in that frame a clockwise sowing runs
/// as a counter-clockwise one).
#[inline(always)]
fn uncapture_toward<const CW: bool, const COUNTS: u8>(
    a: Packed,
    empty: u32,
    c: usize,
    f: &mut impl FnMut(Packed, usize),
) {
    // The board's pit at bit i of the mask.
    let at = |i: usize| if CW { mirror_pit(i) } else { i };
    let k = 31 - (empty & 0x3f).leading_zeros() as usize;
    let h = at(k);
    let low = (empty & 0xfc0).trailing_zeros() as usize;
    if low > 6 && matches!(pit(a, at(low - 1)), 2 | 3) {
        // The capture would have gone on below the run.
        return;
    }
    // The run is empty pits from `low` on.
    let empties = (!(empty >> low)).trailing_zeros() as usize;
    let (shortest, longest) = (c.div_ceil(3), (c / 2).min(empties));
    let (sow, _) = tables::<CW>();
    // Seed counts 11 apart alternate in parity: with one parity only, every other one.
    let step = if COUNTS == ANY_COUNT {
        PITS - 1
    } else {
        2 * (PITS - 1)
    };
    for len in shortest..=longest {
        let last = low + len - 1;
        let mut first = last - k;
        if !counts_allow::<COUNTS>(first) {
            // The next count goes round once more and takes a seed from every pit but `h`:
            // none is possible while a pit outside the refilled run stays empty.
            let run = ((1u32 << len) - 1) << low;
            if empty & !(1 << k) & !run != 0 {
                continue;
            }
            first += PITS - 1;
        }
        let threes = c - 2 * len;
        let twos: Packed = (0..len).map(|j| 2 << (8 * at(low + j))).sum();
        // The refills: 2 in every pit of the run and 3 in the pits of `mask`, every mask of
        // `threes` bits in increasing order (each the next number with as many bits).
        let mut mask = (1u32 << threes) - 1;
        while mask < 1 << len {
            let mut refill = twos;
            let mut bits = mask;
            while bits != 0 {
                refill += 1 << (8 * at(low + bits.trailing_zeros() as usize));
                bits &= bits - 1;
            }
            let sown = a + refill;
            let mut s = first;
            while s <= crate::MAX_SEEDS as usize {
                let path = sow[h][s] & PITS_MASK;
                // Every pit keeps at least 0 (bytes below 0x80: no borrow crosses a byte).
                // A larger count takes at least as much from every pit: none fits either.
                if ((sown | BYTES_80) - path) & BYTES_80 != BYTES_80 {
                    break;
                }
                f(sown - path + ((s as Packed) << (8 * h)), h);
                s += step;
            }
            if mask == 0 {
                break;
            }
            let t = mask | (mask - 1);
            mask = (t + 1) | (((!t & (t + 1)) - 1) >> (mask.trailing_zeros() + 1));
        }
    }
}
