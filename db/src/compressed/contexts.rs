//! Coder 4: the probe form's stored values coded by [`crate::rans`] under contexts that a
//! decoder rebuilds from the boards of the segment and the values it has decoded so far, with
//! no lookup:
//!
//! ```text
//!   context = ((class × S) + previous) × 8 + relation          S = 2n + 1 symbols
//!
//!   class     lands × 2 + threat: whether some move of the mover ends its sowing in an
//!             opponent's pit that then holds 2 or 3 seeds (a capture's first condition,
//!             from the pits alone), and the same for the opponent as if it moved
//!   previous  the symbol stored before it in the segment (value 0's for the first)
//!   relation  how the symbol stored one run back compares with the previous one: 0 none
//!             (no run back, or before the segment), 1 equal, 2 one above, 3 one below,
//!             4 two above, 5 two below, 6 more above, 7 more below
//! ```
//!
//! One run back is the board with a seed moved from pit 0 to pit 2, which the index puts
//! `pits[0] + pits[1] + 2` entries earlier (any such rule would do: the encoder and the
//! decoder compute the same one; this one finds a near relative). Measured on levels 16 and 20
//! (`db/examples/value_entropy.rs`): 0.3 bits a position less than under the previous symbol
//! alone (the context of the Huffman coder this one replaced).
//!
//! The encoder chooses the don't-cares' symbols by a shortest-path search over the segment
//! (the state after an entry is the symbol it stores, part of the next entries' contexts),
//! with costs in sixteenths of a bit. A relation's costs are judged
//! against a guess of the symbol one run back (what a free entry there stores is chosen in
//! the same search): the values in a first pass, that pass's own symbols in a second; the
//! cheaper path at its own contexts is coded (0.008-0.009 bits a position less at levels
//! 16..20, for about a third more encoding time).

use crate::board::PITS;
use crate::index::Level;
use crate::rans;

use super::FIXED;

/// Board classes: lands × threat.
pub(super) const CLASSES: usize = 4;
/// Relations of the symbol one run back to the previous one.
pub(super) const RELATIONS: usize = 8;
/// Sixteenths of a bit: the unit of the search's costs.
const SCALE: f32 = 16.0;

/// Contexts of a model of `symbols` symbols.
pub(super) const fn contexts(symbols: usize) -> usize {
    CLASSES * symbols * RELATIONS
}

#[inline]
fn context(symbols: usize, class: usize, previous: usize, relation: usize) -> usize {
    (class * symbols + previous) * RELATIONS + relation
}

/// Whether some pit of the mover (0..6) ends its sowing in an opponent's pit that then holds
/// 2 or 3 seeds. Sowing skips the origin: 11 pits a lap. (What [`features`] computes from
/// [`DEMAND`]; kept as the reference its test compares with.)
#[cfg(test)]
fn lands_on_two_or_three(pits: &[u8; PITS]) -> bool {
    (0..6).any(|i| {
        let s = usize::from(pits[i]);
        if s == 0 {
            return false;
        }
        let (laps, rest) = (s / 11, s % 11);
        let (last, extra) = if rest == 0 {
            ((i + 11) % 12, 0)
        } else {
            ((i + rest) % 12, 1)
        };
        let after = usize::from(pits[last]) + laps + extra;
        last >= 6 && (2..=3).contains(&after)
    })
}

/// `DEMAND[i][s]`: the counts an opponent's pit must hold for pit i's sowing of s seeds to end
/// there with 2 or 3 seeds: bit `3 × j + c` for a count c (0, 1 or 2) of the pit j where the
/// sowing ends, if that pit is on the other side of the board (sowing skips the origin: 11
/// pits a lap; the last pit gets a seed a lap, and one more unless the seeds end a lap
/// exactly). Rows of 64, so that any count of a board (at most 48) indexes them.
const DEMAND: [[u64; 64]; PITS] = {
    let mut t = [[0u64; 64]; PITS];
    let mut i = 0;
    while i < PITS {
        let mut s = 1;
        while s < 64 {
            let (laps, rest) = (s / 11, s % 11);
            let (last, extra) = if rest == 0 {
                ((i + 11) % 12, 0)
            } else {
                ((i + rest) % 12, 1)
            };
            let add = laps + extra;
            if (last >= 6) != (i >= 6) {
                let mut c = 0;
                while c < 3 {
                    if c + add == 2 || c + add == 3 {
                        t[i][s] |= 1 << (3 * last + c);
                    }
                    c += 1;
                }
            }
            s += 1;
        }
        i += 1;
    }
    t
};

/// `HELD[c]`: bit c for a pit's count c of 0, 1 or 2, else nothing.
const HELD: [u64; 64] = {
    let mut t = [0u64; 64];
    t[0] = 1;
    t[1] = 2;
    t[2] = 4;
    t
};

/// A board's class (lands × 2 + threat) and how many entries back its run back is (0: none).
/// Lands: some pit of the mover ends its sowing in an opponent's pit that then holds 2 or 3
/// seeds; threat: the same for the opponent's pits. What each side's sowings demand of the
/// other's counts ([`DEMAND`]) against what the board holds (bit `3 × j + c` for each pit j
/// holding a count c of 0, 1 or 2): twelve independent table lookups, no branch. The decoder
/// does this for every entry before the one it reads.
#[inline(always)]
pub(super) fn features(pits: &[u8; PITS]) -> (usize, usize) {
    let (mut mover, mut opponent, mut held) = (0u64, 0u64, 0u64);
    for (i, &p) in pits.iter().enumerate() {
        let demand = DEMAND[i][usize::from(p) & 63];
        if i < 6 {
            mover |= demand;
        } else {
            opponent |= demand;
        }
        held |= HELD[usize::from(p) & 63] << (3 * i);
    }
    let class = usize::from(mover & held != 0) << 1 | usize::from(opponent & held != 0);
    let back = if pits[2] > 0 {
        usize::from(pits[0]) + usize::from(pits[1]) + 2
    } else {
        0
    };
    (class, back)
}

/// `RELATION_OF[(back − previous) mod 256]`: the relation of the symbol one run back to the
/// previous one (alphabets have at most 97 symbols, so the difference fits in an `i8`).
const RELATION_OF: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = match i as u8 as i8 {
            0 => 1,
            1 => 2,
            -1 => 3,
            2 => 4,
            -2 => 5,
            d if d > 0 => 6,
            _ => 7,
        };
        i += 1;
    }
    t
};

/// The relation of `back` (the symbol one run back) to `previous`: a table lookup, no branch
/// (the decoder's step waits on it).
#[inline]
fn relation(back: usize, previous: usize) -> usize {
    usize::from(RELATION_OF[back.wrapping_sub(previous) & 0xff])
}

/// The relation of entry `k` of a segment whose stored symbols so far are `stored`.
#[inline]
fn relation_at(stored: &[usize], k: usize, back: usize, previous: usize) -> usize {
    if back == 0 || back > k {
        0
    } else {
        relation(stored[k - back], previous)
    }
}

/// The search's view of a model: costs in sixteenths of a bit per context and symbol.
pub(super) struct Costs {
    symbols: usize,
    costs: Vec<u16>,
}

impl Costs {
    /// Before any fit: repeating the previous symbol costs a bit, any other two.
    pub(super) fn initial(symbols: usize) -> Costs {
        let costs = (0..contexts(symbols) * symbols)
            .map(|k| {
                let previous = (k / symbols / RELATIONS) % symbols;
                if k % symbols == previous {
                    SCALE as u16
                } else {
                    2 * SCALE as u16
                }
            })
            .collect();
        Costs { symbols, costs }
    }

    /// A fitted model's costs.
    pub(super) fn of(model: &rans::Model) -> Costs {
        let symbols = model.symbols();
        let costs = (0..model.contexts() * symbols)
            .map(|k| (model.bits(k / symbols, k % symbols) * SCALE).round() as u16)
            .collect();
        Costs { symbols, costs }
    }

    #[inline]
    fn row(&self, context: usize) -> &[u16] {
        &self.costs[context * self.symbols..(context + 1) * self.symbols]
    }
}

/// Scratch space of the search, reused from segment to segment.
#[derive(Default)]
pub(super) struct Scratch {
    bits: Vec<u16>,
    features: Vec<(usize, usize)>,
    stored: Vec<usize>,
    /// The first pass's symbols, which the second judges its relations against.
    first: Vec<usize>,
    /// The first pass's pairs, while the second runs.
    pairs: Vec<(usize, usize)>,
}

/// The (context, symbol) pairs coding one segment, into `pairs`: entries `first..` of
/// `level`, whose values are `values` (bytes of `i8`) and whose probe-form ceilings are
/// `ceilings` ([`FIXED`]: the value itself). Free entries store the symbols that make the
/// segment's cost under `costs` the least (see the module's documentation).
///
/// Two passes: the first judges each relation against the values one run back, the second
/// against the symbols the first chose there (what is then stored, where the path does not
/// change). The cheaper of the two paths, at its own contexts, is kept.
pub(super) fn segment_pairs(
    level: &Level,
    first: u64,
    values: &[u8],
    ceilings: &[i8],
    costs: &Costs,
    scratch: &mut Scratch,
    pairs: &mut Vec<(usize, usize)>,
) {
    let n = level.seeds() as usize;
    first_pass(level, first, values, ceilings, costs, scratch, pairs);
    // The second pass sees other guesses only where the first stored something other than
    // the value one run back of some entry; elsewhere it would find the same path again.
    let judged = &scratch.first;
    let other = scratch
        .features
        .iter()
        .enumerate()
        .any(|(k, &(_, back))| back != 0 && back <= k && pairs[k - back].1 != judged[k - back]);
    if !other {
        return;
    }
    let one = cost_of_pairs(costs, pairs);
    scratch.first.clear();
    scratch.first.extend(pairs.iter().map(|&(_, s)| s));
    std::mem::swap(&mut scratch.pairs, pairs);
    search(n, values, ceilings, costs, scratch, pairs);
    if cost_of_pairs(costs, pairs) > one {
        std::mem::swap(&mut scratch.pairs, pairs);
    }
}

/// [`segment_pairs`]' first pass: the segment's board features into `scratch.features`, and
/// the search with its relations judged against the values one run back.
fn first_pass(
    level: &Level,
    first: u64,
    values: &[u8],
    ceilings: &[i8],
    costs: &Costs,
    scratch: &mut Scratch,
    pairs: &mut Vec<(usize, usize)>,
) {
    let n = level.seeds() as usize;
    debug_assert_eq!(costs.symbols, 2 * n + 1);
    let len = values.len();
    scratch.features.clear();
    scratch.features.extend(
        level
            .boards(first..first + len as u64)
            .map(|b| features(&b.pits())),
    );
    scratch.first.clear();
    scratch.first.extend(
        values
            .iter()
            .map(|&v| (i32::from(v as i8) + n as i32) as usize),
    );
    search(n, values, ceilings, costs, scratch, pairs);
}

/// The cost of coding `pairs`, in sixteenths of a bit.
fn cost_of_pairs(costs: &Costs, pairs: &[(usize, usize)]) -> u32 {
    pairs.iter().map(|&(c, s)| u32::from(costs.row(c)[s])).sum()
}

/// One pass of [`segment_pairs`]' search, its relations judged against `scratch.first` (one
/// symbol an entry), its board features in `scratch.features`.
fn search(
    n: usize,
    values: &[u8],
    ceilings: &[i8],
    costs: &Costs,
    scratch: &mut Scratch,
    pairs: &mut Vec<(usize, usize)>,
) {
    let symbols = costs.symbols;
    let len = values.len();
    let Scratch {
        bits,
        features: feats,
        stored,
        first: judged,
        ..
    } = scratch;
    let value = |k: usize| (i32::from(values[k] as i8) + n as i32) as usize;
    let allowed = |k: usize| -> (usize, usize) {
        if k == usize::MAX {
            return (n, n);
        }
        match ceilings[k] {
            FIXED => (value(k), value(k)),
            top => (0, (i32::from(top).min(n as i32) + n as i32) as usize),
        }
    };
    // The symbol one run back, as the search judges it.
    let back_guess = |k: usize| -> Option<usize> {
        let back = feats[k].1;
        (back != 0 && back <= k).then(|| judged[k - back])
    };
    // bits[k * symbols + s]: the least cost of entries before k that leaves state s.
    bits.clear();
    bits.resize((len + 1) * symbols, 0);
    let mut reach = allowed(usize::MAX);
    for k in 0..len {
        let (lo, hi) = allowed(k);
        let class = feats[k].0;
        let guess = back_guess(k);
        let (row, next) = bits.split_at_mut((k + 1) * symbols);
        let row = &row[k * symbols..];
        let cost_of = |y: usize| {
            costs.row(context(
                symbols,
                class,
                y,
                guess.map_or(0, |g| relation(g, y)),
            ))
        };
        if lo == hi {
            // One symbol allowed (a fixed entry): one state to reach, from each of the last.
            next[lo] = (reach.0..=reach.1)
                .map(|y| row[y].saturating_add(cost_of(y)[lo]))
                .min()
                .expect("a reached state");
        } else {
            let next = &mut next[lo..=hi];
            next.fill(u16::MAX);
            for (y, &b) in row.iter().enumerate().take(reach.1 + 1).skip(reach.0) {
                for (x, &c) in next.iter_mut().zip(&cost_of(y)[lo..=hi]) {
                    *x = (*x).min(b.saturating_add(c));
                }
            }
        }
        reach = (lo, hi);
    }
    let last = len * symbols;
    let mut s = (reach.0..=reach.1)
        .min_by_key(|&s| (bits[last + s], s))
        .expect("a reached state");
    stored.clear();
    stored.resize(len, 0);
    for k in (0..len).rev() {
        stored[k] = s;
        let (lo, hi) = allowed(k.wrapping_sub(1));
        let target = bits[(k + 1) * symbols + s];
        let class = feats[k].0;
        let guess = back_guess(k);
        s = (lo..=hi)
            .find(|&y| {
                let r = guess.map_or(0, |g| relation(g, y));
                bits[k * symbols + y].saturating_add(costs.row(context(symbols, class, y, r))[s])
                    == target
            })
            .expect("the step that gave the state its cost");
    }
    // The contexts of the path chosen: its own symbols one run back.
    pairs.clear();
    let mut previous = n;
    for k in 0..len {
        let (class, back) = feats[k];
        let r = relation_at(stored, k, back, previous);
        pairs.push((context(symbols, class, previous, r), stored[k]));
        previous = stored[k];
    }
}

/// Decode entries `0..first + out.len()` of a segment of `level` whose first entry is
/// `start`, keeping entries `first..` in `out` (values, as `i8`). Whether a segment decoded
/// to its end came back to its start state is the caller's check (`whole`): the result is
/// false where it did not.
pub(super) fn decode(
    model: &rans::Model,
    level: &Level,
    start: u64,
    bytes: &[u8],
    first: usize,
    out: &mut [i8],
    whole: bool,
) -> bool {
    let n = level.seeds() as usize;
    let symbols = model.symbols();
    let stop = first + out.len();
    // The symbols decoded, entry k at WIDTH + k, after WIDTH of NONE: one run back from any
    // entry (at most 98 entries, 48 + 48 + 2) is in the array, and a run back before the
    // segment, or none (`back` 0, read as WIDTH back), is NONE, relation 0. No branch.
    const WIDTH: usize = super::MAX_SEGMENT;
    const NONE: u8 = u8::MAX;
    let mut stored = [NONE; 2 * WIDTH];
    let mut decoder = model.decoder(bytes);
    let mut previous = n;
    for (k, board) in level.boards(start..start + stop as u64).enumerate() {
        let (class, back) = features(&board.pits());
        let back = if back == 0 { WIDTH } else { back };
        let there = stored[WIDTH + k - back];
        let r = if there == NONE {
            0
        } else {
            relation(usize::from(there), previous)
        };
        let s = decoder.next(context(symbols, class, previous, r));
        // Alphabets have at most 97 symbols: never NONE.
        stored[WIDTH + k] = s as u8;
        previous = s;
        if k >= first {
            out[k - first] = (s as i32 - n as i32) as i8;
        }
    }
    !whole || decoder.finish()
}

/// Classes of the previous depth, and of the depth one run back: exact to 11, then wider.
const DEPTH_BUCKETS: usize = 19;
/// Classes of how much a position wins or loses: |value| 1, 2, 3–4, 5 or more.
const SIZES: usize = 4;

/// Contexts of coder 5's model (depths), whatever the alphabet: side (won, lost) × class ×
/// size × the previous won or lost position's depth (bucketed) × the depth one run back
/// (bucketed, or none).
pub(super) const DEPTH_CONTEXTS: usize = 2 * CLASSES * SIZES * DEPTH_BUCKETS * (DEPTH_BUCKETS + 1);

/// A depth's class: exact to 11, then 12–15, 16–23, 24–31, 32–47, 48–63, 64–95, 96 on.
#[inline]
fn depth_bucket(d: usize) -> usize {
    match d {
        0..=11 => d,
        12..=15 => 12,
        16..=23 => 13,
        24..=31 => 14,
        32..=47 => 15,
        48..=63 => 16,
        64..=95 => 17,
        _ => 18,
    }
}

/// The context of a won or lost position's depth: its value `v` (not 0), its board's
/// `class`, the `previous` coded depth in the segment, and the depth one run back (`None`:
/// no run back in the segment).
#[inline]
fn depth_context(v: i8, class: usize, previous: usize, back: Option<usize>) -> usize {
    let size = match v.unsigned_abs() {
        0 | 1 => 0,
        2 => 1,
        3 | 4 => 2,
        _ => 3,
    };
    let side = usize::from(v < 0);
    (((side * CLASSES + class) * SIZES + size) * DEPTH_BUCKETS + depth_bucket(previous))
        * (DEPTH_BUCKETS + 1)
        + back.map_or(DEPTH_BUCKETS, depth_bucket)
}

/// The depth one run back of entry `k` of a segment whose depths so far are `depths`.
#[inline]
fn depth_back(depths: &[u8], k: usize, back: usize) -> Option<usize> {
    (back != 0 && back <= k).then(|| usize::from(depths[k - back]))
}

/// The (context, depth) pairs coding one segment of a depth table (coder 5), into `pairs`:
/// entries `first..` of `level`, whose depths are `depths` and values `values`. A draw's
/// depth is 0 and not coded; a won or lost position's is coded in the context of
/// [`depth_context`]: its side and size, its class, the depth of the last won or lost position
/// before it in the segment (0 for the first), and the depth one run back (a draw's is 0).
pub(super) fn depth_pairs(
    level: &Level,
    first: u64,
    depths: &[u8],
    values: &[i8],
    pairs: &mut Vec<(usize, usize)>,
) {
    pairs.clear();
    let boards = level.boards(first..first + depths.len() as u64);
    let mut previous = 0;
    for (k, ((&d, &v), board)) in depths.iter().zip(values).zip(boards).enumerate() {
        if v == 0 {
            continue;
        }
        let (class, back) = features(&board.pits());
        let context = depth_context(v, class, previous, depth_back(depths, k, back));
        pairs.push((context, usize::from(d)));
        previous = usize::from(d);
    }
}

/// Decode depths `0..first + out.len()` of a segment of a depth table (coder 5) of `level`
/// whose first entry is `start`, keeping entries `first..` in `out` (bytes, as `i8`), given
/// `values`, the values of the segment's entries `0..first + out.len()`. As [`decode`], false
/// where a whole segment did not come back to its start state.
#[allow(clippy::too_many_arguments)]
pub(super) fn decode_depths(
    model: &rans::Model,
    level: &Level,
    start: u64,
    bytes: &[u8],
    first: usize,
    out: &mut [i8],
    values: &[i8],
    whole: bool,
) -> bool {
    let stop = first + out.len();
    let mut depths = [0u8; super::MAX_SEGMENT];
    let mut decoder = model.decoder(bytes);
    let mut previous = 0;
    for (k, board) in level.boards(start..start + stop as u64).enumerate() {
        if values[k] != 0 {
            let (class, back) = features(&board.pits());
            let context = depth_context(values[k], class, previous, depth_back(&depths, k, back));
            let d = decoder.next(context);
            // The alphabet has at most 256 depths.
            depths[k] = d as u8;
            previous = d;
        }
        if k >= first {
            // A depth above 127 wraps here and back in the caller's `as u8`.
            out[k - first] = depths[k] as i8;
        }
    }
    !whole || decoder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::SplitMix64;

    #[test]
    fn lands_is_the_sowing_of_a_pit_into_two_or_three() {
        // Pit 5's 2 seeds end in pit 7, which then holds 2.
        let mut pits = [0u8; PITS];
        pits[5] = 2;
        pits[7] = 1;
        assert!(lands_on_two_or_three(&pits));
        pits[7] = 3; // then 4
        assert!(!lands_on_two_or_three(&pits));
        // 11 seeds from pit 0 go round once and end in pit 11 (the origin skipped).
        let mut pits = [0u8; PITS];
        pits[0] = 11;
        pits[11] = 1;
        assert!(lands_on_two_or_three(&pits));
        pits[11] = 0;
        assert!(!lands_on_two_or_three(&pits));
        // 12 seeds from pit 0: one more lap ends in pit 1, the mover's own.
        let mut pits = [0u8; PITS];
        pits[0] = 12;
        pits[1] = 1;
        assert!(!lands_on_two_or_three(&pits));
        // The threat is the opponent's sowing: pit 11's 2 seeds end in pit 1, then holding 2.
        let mut pits = [0u8; PITS];
        pits[11] = 2;
        pits[1] = 1;
        assert_eq!(features(&pits).0, 1);
        // The opponent's pit 6 sowing 2 ends in its own pit 8: nothing.
        let mut other = [0u8; PITS];
        other[6] = 2;
        other[8] = 1;
        assert_eq!(features(&other).0, 0);
        pits[0] = 4;
        pits[4] = 1;
        assert_eq!(
            features(&pits).0,
            1,
            "pit 0's 4 seeds end in pit 4, its own"
        );
    }

    #[test]
    fn the_table_gives_the_sowings_answers() {
        let mut rng = SplitMix64(31);
        for _ in 0..200_000 {
            let n = rng.below(49) as u32;
            let b = rng.board(n);
            let pits = b.pits();
            let mut turned = [0u8; PITS];
            for (i, p) in turned.iter_mut().enumerate() {
                *p = pits[(i + 6) % PITS];
            }
            let want = usize::from(lands_on_two_or_three(&pits)) << 1
                | usize::from(lands_on_two_or_three(&turned));
            assert_eq!(features(&pits).0, want, "{b:?}");
        }
    }

    #[test]
    fn one_run_back_is_the_board_with_a_seed_moved_from_pit_0_to_pit_2() {
        let mut rng = SplitMix64(5);
        for _ in 0..2000 {
            let n = 2 + rng.below(20) as u32;
            let level = Level::new(n);
            let i = rng.below(level.size());
            let b = level.unrank(i);
            let (_, back) = features(&b.pits());
            let mut pits = b.pits();
            if pits[2] == 0 {
                assert_eq!(back, 0);
                continue;
            }
            pits[2] -= 1;
            pits[0] += 1;
            let r = level
                .rank(&crate::Board::from_pits(pits))
                .expect("the same opponent row");
            assert_eq!(r + back as u64, i, "{b:?}");
        }
    }

    #[test]
    fn depth_buckets_are_exact_to_11_then_widen_and_never_overflow() {
        let buckets: Vec<usize> = (0..256).map(depth_bucket).collect();
        assert_eq!(&buckets[..12], &(0..12).collect::<Vec<_>>()[..]);
        assert!(buckets.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(buckets[255], DEPTH_BUCKETS - 1);
        assert_eq!((buckets[12], buckets[15], buckets[16]), (12, 12, 13));
        // Every context is in range, and the features each change it.
        let mut seen = std::collections::HashSet::new();
        for v in [-9i8, -3, -2, -1, 1, 2, 4, 48] {
            for class in 0..CLASSES {
                for previous in [0, 5, 13, 255] {
                    for back in [None, Some(0), Some(7), Some(200)] {
                        let c = depth_context(v, class, previous, back);
                        assert!(c < DEPTH_CONTEXTS);
                        seen.insert(c);
                    }
                }
            }
        }
        assert_eq!(seen.len(), 8 * CLASSES * 4 * 4);
    }

    #[test]
    fn depth_segments_decode_back_whole_and_in_part() {
        let mut rng = SplitMix64(17);
        let mut pairs = Vec::new();
        for _ in 0..300 {
            let n = 2 + rng.below(10) as u32;
            let level = Level::new(n);
            let len = (1 + rng.below(256)).min(level.size()) as usize;
            let first = rng.below(level.size() - len as u64 + 1);
            let symbols = 1 + rng.below(40) as usize;
            let values: Vec<i8> = (0..len)
                .map(|_| rng.below(2 * n as u64 + 1) as i8 - n as i8)
                .collect();
            let depths: Vec<u8> = values
                .iter()
                .map(|&v| {
                    if v == 0 {
                        0
                    } else {
                        rng.below(symbols as u64) as u8
                    }
                })
                .collect();
            depth_pairs(&level, first, &depths, &values, &mut pairs);
            assert_eq!(pairs.len(), values.iter().filter(|&&v| v != 0).count());
            let mut counts = vec![0u64; DEPTH_CONTEXTS * symbols];
            for &(c, s) in &pairs {
                counts[c * symbols + s] += 1;
            }
            let model = rans::Model::fit_seen(symbols, &counts);
            let mut bytes = Vec::new();
            model.encode(&pairs, &mut bytes);
            let mut out = vec![0i8; len];
            assert!(decode_depths(
                &model, &level, first, &bytes, 0, &mut out, &values, true
            ));
            assert_eq!(out.iter().map(|&d| d as u8).collect::<Vec<_>>(), depths);
            let from = rng.below(len as u64) as usize;
            let mut part = vec![0i8; len - from];
            assert!(decode_depths(
                &model, &level, first, &bytes, from, &mut part, &values, false
            ));
            assert_eq!(part, out[from..]);
        }
    }

    /// The cost of a segment's pairs under `costs`.
    fn cost(costs: &Costs, pairs: &[(usize, usize)]) -> u32 {
        cost_of_pairs(costs, pairs)
    }

    /// A random search problem: a level of 3..8 seeds, a model of random counts, a segment of
    /// 1..256 entries from anywhere in the level, random values, a third of them fixed, a
    /// third free up to their value and a third free.
    struct RandomSegment {
        n: u32,
        level: Level,
        symbols: usize,
        counts: Vec<u64>,
        costs: Costs,
        len: usize,
        first: u64,
        values: Vec<u8>,
        ceilings: Vec<i8>,
    }

    impl RandomSegment {
        fn draw(rng: &mut SplitMix64) -> RandomSegment {
            let n = 3 + rng.below(6) as u32;
            let level = Level::new(n);
            let symbols = 2 * n as usize + 1;
            let counts: Vec<u64> = (0..contexts(symbols) * symbols)
                .map(|_| rng.below(50))
                .collect();
            let costs = Costs::of(&rans::Model::fit(symbols, &counts));
            let len = (1 + rng.below(256)).min(level.size()) as usize;
            let first = rng.below(level.size() - len as u64 + 1);
            let values: Vec<u8> = (0..len)
                .map(|_| (rng.below(symbols as u64) as i32 - n as i32) as i8 as u8)
                .collect();
            let ceilings: Vec<i8> = values
                .iter()
                .map(|&v| match rng.below(3) {
                    0 => FIXED,
                    1 => v as i8,
                    _ => n as i8,
                })
                .collect();
            RandomSegment {
                n,
                level,
                symbols,
                counts,
                costs,
                len,
                first,
                values,
                ceilings,
            }
        }
    }

    /// The second pass, which judges relations against the first pass's symbols, keeps a
    /// path no dearer than the first's, and a cheaper one for some segments.
    #[test]
    fn the_second_pass_never_costs_more_and_sometimes_less() {
        let mut rng = SplitMix64(41);
        let mut scratch = Scratch::default();
        let (mut once, mut twice) = (Vec::new(), Vec::new());
        let mut cheaper = 0;
        for _ in 0..300 {
            let RandomSegment {
                level,
                costs,
                first,
                values,
                ceilings,
                ..
            } = RandomSegment::draw(&mut rng);
            // The first pass alone: relations judged against the values.
            first_pass(
                &level,
                first,
                &values,
                &ceilings,
                &costs,
                &mut scratch,
                &mut once,
            );
            segment_pairs(
                &level,
                first,
                &values,
                &ceilings,
                &costs,
                &mut scratch,
                &mut twice,
            );
            let (a, b) = (cost(&costs, &once), cost(&costs, &twice));
            assert!(b <= a, "{values:?} {ceilings:?}: {b} > {a}");
            cheaper += usize::from(b < a);
        }
        assert!(cheaper > 0, "the second pass never found a cheaper path");
    }

    #[test]
    fn the_search_keeps_fixed_entries_and_ceilings_and_beats_storing_the_values() {
        let mut rng = SplitMix64(29);
        let mut scratch = Scratch::default();
        let (mut pairs, mut plain) = (Vec::new(), Vec::new());
        for _ in 0..300 {
            let RandomSegment {
                n,
                level,
                symbols,
                counts,
                costs,
                len,
                first,
                values,
                ceilings,
            } = RandomSegment::draw(&mut rng);
            segment_pairs(
                &level,
                first,
                &values,
                &ceilings,
                &costs,
                &mut scratch,
                &mut pairs,
            );
            assert_eq!(pairs.len(), len);
            for (k, &(_, s)) in pairs.iter().enumerate() {
                let v = s as i32 - n as i32;
                match ceilings[k] {
                    FIXED => assert_eq!(v, i32::from(values[k] as i8)),
                    top => assert!(v <= i32::from(top)),
                }
            }
            // Every entry fixed: the values, in their own contexts.
            let fixed = vec![FIXED; len];
            segment_pairs(
                &level,
                first,
                &values,
                &fixed,
                &costs,
                &mut scratch,
                &mut plain,
            );
            // The search judged relations against the values, and the values are a choice
            // it had: its path costs no more than theirs, up to the relations it misjudged
            // (each at most the dearest symbol's 12 bits).
            let value = |k: usize| (i32::from(values[k] as i8) + n as i32) as usize;
            let misjudged = (0..len)
                .filter(|&k| {
                    let (_, back) = features(&level.unrank(first + k as u64).pits());
                    let previous = if k == 0 { n as usize } else { pairs[k - 1].1 };
                    back != 0
                        && back <= k
                        && relation(pairs[k - back].1, previous)
                            != relation(value(k - back), previous)
                })
                .count() as u32;
            assert!(
                cost(&costs, &pairs) <= cost(&costs, &plain) + misjudged * 12 * SCALE as u32,
                "{values:?} {ceilings:?}"
            );
            // And what it stores decodes back, from the boards alone.
            let model = rans::Model::fit(symbols, &counts);
            let mut bytes = Vec::new();
            model.encode(&pairs, &mut bytes);
            let mut out = vec![0i8; len];
            assert!(decode(&model, &level, first, &bytes, 0, &mut out, true));
            for (k, &(_, s)) in pairs.iter().enumerate() {
                assert_eq!(i32::from(out[k]), s as i32 - n as i32);
            }
            // A part of it too.
            let from = len / 2;
            let mut part = vec![0i8; len - from];
            assert!(decode(
                &model, &level, first, &bytes, from, &mut part, false
            ));
            assert_eq!(part, out[from..]);
        }
    }
}
