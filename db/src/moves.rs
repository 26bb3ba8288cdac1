//! Moves (sowing and capture) and un-moves (un-sowing), under each rule set.

use crate::board::{Board, PITS};
use crate::index::Level;
use crate::packed::*;
use crate::rules::Rules;

/// A legal move: the pit played, the seeds it captures and the resulting position,
/// rotated so that the next mover is again on pits 0..5.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    /// The pit played, 0..5.
    pub pit: u8,
    /// Seeds captured by the move (0 for a non-capturing move).
    pub captures: u8,
    /// The position after the move, from the next mover's side.
    pub child: Board,
}

/// At most six legal moves, without allocation.
#[derive(Clone, Copy, Debug, Default)]
pub struct MoveList {
    moves: [Option<Move>; 6],
    len: usize,
}

impl MoveList {
    fn push(&mut self, m: Move) {
        self.moves[self.len] = Some(m);
        self.len += 1;
    }

    /// The moves, in pit order.
    pub fn iter(&self) -> impl Iterator<Item = &Move> + '_ {
        self.moves[..self.len]
            .iter()
            .map(|m| m.as_ref().expect("filled slot"))
    }

    /// Number of legal moves.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no legal move.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The move from `pit`, if legal.
    pub fn get(&self, pit: usize) -> Option<&Move> {
        self.iter().find(|m| usize::from(m.pit) == pit)
    }
}

/// What a position offers the side to move.
#[derive(Clone, Copy, Debug)]
pub enum Outcome {
    /// The game is over; the value (−n..n) is the mover's seed difference.
    Terminal(i8),
    /// The legal moves (never empty).
    Moves(MoveList),
}

/// `SOW[h][s]`: what sowing `s` seeds from pit `h` counter-clockwise adds to each other pit,
/// and (in byte 15) the pit where the last seed falls. Built at compile time.
const SOW: [[Packed; 49]; 6] = sow_table(1);

/// `SOW_CW[h][s]`: as `SOW`, sowing clockwise (pits h−1, h−2, … mod 12), as `cross-wari`
/// sows a pit holding an odd number of seeds.
const SOW_CW: [[Packed; 49]; 6] = sow_table(PITS - 1);

/// The sowing table of a direction: each seed goes `step` pits on (mod 12), skipping the pit
/// played on every lap.
const fn sow_table(step: usize) -> [[Packed; 49]; 6] {
    let mut t = [[0u128; 49]; 6];
    let mut h = 0;
    while h < 6 {
        let mut s = 1;
        while s <= 48 {
            let mut add = [0u8; 16];
            let mut pos = h;
            let mut k = 0;
            while k < s {
                pos = (pos + step) % PITS;
                if pos == h {
                    pos = (pos + step) % PITS;
                }
                add[pos] += 1;
                k += 1;
            }
            add[15] = pos as u8;
            t[h][s] = u128::from_le_bytes(add);
            s += 1;
        }
        h += 1;
    }
    t
}

/// `SOW_CROSS[h][s]`: the sowing `cross-wari` makes of `s` seeds from pit `h`: `SOW[h][s]`
/// for an even `s`, `SOW_CW[h][s]` for an odd one, so that the quiet-move count looks a move
/// up without a branch on the parity.
const SOW_CROSS: [[Packed; 49]; 6] = {
    let mut t = [[0u128; 49]; 6];
    let mut h = 0;
    while h < 6 {
        let mut s = 1;
        while s <= 48 {
            t[h][s] = if s % 2 == 1 { SOW_CW[h][s] } else { SOW[h][s] };
            s += 1;
        }
        h += 1;
    }
    t
};

/// The pit where the `s`-th seed of a sowing from pit `h` falls (the pit played is skipped on
/// every lap), for the un-sowing loops: byte 15 of `table[h][s]`, unpacked at compile time.
const fn seed_pits(table: &[[Packed; 49]; 6]) -> [[u8; 49]; 6] {
    let mut t = [[0u8; 49]; 6];
    let mut h = 0;
    while h < 6 {
        let mut s = 1;
        while s <= 48 {
            t[h][s] = (table[h][s] >> 120) as u8;
            s += 1;
        }
        h += 1;
    }
    t
}

/// `SEED_PIT[h][s]`: [`seed_pits`] of `SOW` (counter-clockwise).
const SEED_PIT: [[u8; 49]; 6] = seed_pits(&SOW);
/// `SEED_PIT_CW[h][s]`: [`seed_pits`] of `SOW_CW` (clockwise).
const SEED_PIT_CW: [[u8; 49]; 6] = seed_pits(&SOW_CW);

/// A sowing before the rules judge it (internal to move generation).
#[derive(Clone, Copy, Debug)]
struct Sowing {
    /// The board after sowing, before capture, unrotated (mover still on 0..5).
    sown: Packed,
    /// Where the last seed fell.
    last: usize,
    /// Seeds the capture rule takes (before any grand-slam rule).
    captured: u8,
    /// The board after capture, unrotated.
    after: Packed,
}

impl Sowing {
    /// Whether the opponent's row is empty after sowing and capture.
    #[inline]
    fn eradicates(&self) -> bool {
        self.after & OPPONENT_ROW == 0
    }

    /// Whether sowing put any seed in the opponent's row.
    #[inline]
    fn feeds(&self) -> bool {
        self.sown & OPPONENT_ROW != 0
    }

    /// What `rules` make of this sowing (`opponent_empty`: the opponent's row was empty
    /// before it): `None` when the move is illegal, else the seeds it captures and the board
    /// after it, unrotated (docs/design.md, "The game and the rule sets"). Under `awari` an
    /// eradicating move is illegal here; a position all of whose moves eradicate is terminal.
    /// Under the other rule sets an empty opponent row must be fed; under `abapa` and
    /// `cross-wari` a grand slam captures nothing, and under `grand-slam` it captures (the
    /// child, with the opponent's row empty, is terminal).
    #[inline]
    fn judged(&self, rules: Rules, opponent_empty: bool) -> Option<(u8, Packed)> {
        match rules {
            Rules::Awari if self.eradicates() => None,
            Rules::Awari => Some((self.captured, self.after)),
            _ if opponent_empty && !self.feeds() => None,
            Rules::Abapa | Rules::CrossWari if self.captured > 0 && self.eradicates() => {
                Some((0, self.sown))
            }
            _ => Some((self.captured, self.after)),
        }
    }
}

/// Sow pit `h` (which must be non-empty) of the packed board in the direction `rules` give
/// it and apply the capture rule: counter-clockwise ([`sow`]), or under `cross-wari` from a
/// pit holding an odd number of seeds clockwise.
#[inline]
fn sow_by(x: Packed, h: usize, rules: Rules) -> Sowing {
    if rules.sows_both_ways() && pit(x, h) % 2 == 1 {
        sow_toward::<true>(x, h)
    } else {
        sow(x, h)
    }
}

/// Sow pit `h` (which must be non-empty) of the packed board counter-clockwise and apply the
/// capture rule.
#[inline]
fn sow(x: Packed, h: usize) -> Sowing {
    sow_toward::<false>(x, h)
}

/// Sow pit `h` (which must be non-empty) of the packed board, clockwise or counter-clockwise
/// (`SOW_CW` or `SOW`), and apply the capture rule: the capture walks back against the
/// sowing (towards higher pits after a clockwise one) while the pits hold 2 or 3 and are the
/// opponent's.
#[inline(always)]
fn sow_toward<const CLOCKWISE: bool>(x: Packed, h: usize) -> Sowing {
    let s = usize::from(pit(x, h));
    debug_assert!(s > 0 && s <= 48);
    let entry = if CLOCKWISE { SOW_CW[h][s] } else { SOW[h][s] };
    let last = (entry >> 120) as usize;
    let sown = (x & !(0xff << (8 * h))) + (entry & PITS_MASK);
    let mut after = sown;
    let mut captured = 0u8;
    let mut j = last;
    while (6..PITS).contains(&j) {
        let v = pit(after, j);
        if v != 2 && v != 3 {
            break;
        }
        captured += v;
        after &= !(0xff << (8 * j));
        if CLOCKWISE {
            j += 1;
        } else {
            j -= 1;
        }
    }
    Sowing {
        sown,
        last,
        captured,
        after,
    }
}

/// Sow pit `h` of `board` counter-clockwise and return the board after sowing, before capture
/// and rotation, with the pit where the last seed fell. `None` if the pit is empty or not the
/// mover's. (Under `cross-wari` an odd pit sows the other way: see [`Board::outcome`].)
pub fn sow_only(board: &Board, h: usize) -> Option<(Board, usize)> {
    if h >= 6 || board.pits()[h] == 0 {
        return None;
    }
    let s = sow(pack(&board.pits()), h);
    Some((Board::from_pits(unpack(s.sown)), s.last))
}

#[inline]
fn rotate(x: Packed) -> Board {
    Board::from_pits(unpack(rotate_packed(x)))
}

impl Board {
    /// The game-theoretic situation of this position under `rules`: terminal with its value,
    /// or its legal moves.
    pub fn outcome(&self, rules: Rules) -> Outcome {
        let x = pack(&self.pits());
        let n = self.seeds() as i8;
        if x & !OPPONENT_ROW == 0 {
            return Outcome::Terminal(rules.end_value(n, true));
        }
        let opponent_empty = x & OPPONENT_ROW == 0;
        let mut list = MoveList::default();
        for h in 0..6 {
            if pit(x, h) == 0 {
                continue;
            }
            let Some((captures, after)) = sow_by(x, h, rules).judged(rules, opponent_empty) else {
                continue;
            };
            let m = Move {
                pit: h as u8,
                captures,
                child: rotate(after),
            };
            list.push(m);
        }
        if list.is_empty() {
            // awari: every move eradicates, so any may be played and the mover takes all;
            // abapa / grand-slam: the mover cannot feed the empty opponent and takes all;
            // cross-wari: the seeds left go to no one.
            Outcome::Terminal(rules.end_value(n, false))
        } else {
            Outcome::Moves(list)
        }
    }

    /// What the position offers without building its children: `Err(value)` when the game
    /// is over (as [`Board::outcome`]'s `Terminal`), else `Ok(k)` with `k` the number of legal
    /// moves that capture nothing (those whose children stay in the same level).
    pub fn quiet_moves(&self, rules: Rules) -> Result<u8, i8> {
        let x = pack(&self.pits());
        match quiet_moves_fast(x, rules) {
            Some(quiet) => Ok(quiet),
            None => quiet_moves_sown(x, self.seeds() as i8, rules),
        }
    }

    /// The legal moves (empty for a terminal position).
    pub fn legal_moves(&self, rules: Rules) -> MoveList {
        match self.outcome(rules) {
            Outcome::Terminal(_) => MoveList::default(),
            Outcome::Moves(list) => list,
        }
    }

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
        let child = pack(&self.pits());
        let mut unchanged: Option<Option<(u64, usize)>> = None;
        unsow_all(child, rules, |parent, h, row_changed| {
            let high = if row_changed {
                level.rank_high(parent)
            } else {
                *unchanged.get_or_insert_with(|| level.rank_high(parent))
            };
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
    /// boards: `f(index)`. Most parents outside `range` are rejected before their own row is
    /// ranked (see [`Level::rank_packed_in`]): an exits pass over a bucket of a level.
    #[inline]
    pub fn for_each_uncapture_index_in(
        &self,
        rules: Rules,
        captures: u8,
        level: &Level,
        range: &std::ops::Range<u64>,
        mut f: impl FnMut(u64),
    ) {
        uncapture_all(pack(&self.pits()), rules, captures, |parent, _| {
            if let Some(q) = level.rank_packed_in(parent, range) {
                f(q);
            }
        });
    }

    /// The index in `level` (the level of `self`) of the child of every legal move of `self`
    /// that captures nothing: `f(index)`, in pit order. These are the moves
    /// [`Board::quiet_moves`] counts (under `abapa` a grand slam is one of them); nothing for a
    /// terminal position. Such a child is always indexed: the pit played is empty in its
    /// opponent row.
    #[inline]
    pub fn for_each_ranked_quiet_child(&self, rules: Rules, level: &Level, mut f: impl FnMut(u64)) {
        self.all_quiet_children(rules, level, None, |q| {
            f(q);
            true
        });
    }

    /// Whether `test(index)` holds for the child of every non-capturing move of `self` (as
    /// [`Board::for_each_ranked_quiet_child`] gives them) except the move from pit `skip`:
    /// the children are made and ranked one at a time, in pit order, and the first that fails
    /// ends the search.
    ///
    /// The two-bit builder's loss test: is every child won? It needs no counter per position,
    /// and a failing test usually stops at the first or second child.
    #[inline]
    pub fn all_quiet_children(
        &self,
        rules: Rules,
        level: &Level,
        skip: Option<u8>,
        mut test: impl FnMut(u64) -> bool,
    ) -> bool {
        let mut from = 0;
        while let Some((pit, q)) = self.next_quiet_child(rules, level, from, skip) {
            if !test(q) {
                return false;
            }
            from = pit + 1;
        }
        true
    }

    /// The first non-capturing move of `self` from a pit `from` or later, other than `skip`:
    /// its pit and its child's index in `level` (the level of `self`), or `None`. Stepping
    /// `from` past each pit found visits [`Board::for_each_ranked_quiet_child`]'s children one
    /// at a time (the two-bit builder reads each child's state a batch after ranking it).
    #[inline]
    pub fn next_quiet_child(
        &self,
        rules: Rules,
        level: &Level,
        from: u8,
        skip: Option<u8>,
    ) -> Option<(u8, u64)> {
        let x = pack(&self.pits());
        if x & !OPPONENT_ROW == 0 {
            return None;
        }
        let opponent_empty = x & OPPONENT_ROW == 0;
        for h in usize::from(from)..6 {
            if pit(x, h) == 0 || skip == Some(h as u8) {
                continue;
            }
            let child = match sow_by(x, h, rules).judged(rules, opponent_empty) {
                Some((0, child)) => child,
                _ => continue,
            };
            let q = level
                .rank_packed(rotate_packed(child))
                .expect("the pit played is empty in the child's opponent row");
            return Some((h as u8, q));
        }
        None
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

/// [`Board::quiet_moves`] by sowing every move: the full count, for the positions
/// [`quiet_moves_fast`] leaves undecided (`x` packed, `n` its seeds).
fn quiet_moves_sown(x: Packed, n: i8, rules: Rules) -> Result<u8, i8> {
    if x & !OPPONENT_ROW == 0 {
        return Err(rules.end_value(n, true));
    }
    let opponent_empty = x & OPPONENT_ROW == 0;
    let (mut legal, mut quiet) = (false, 0u8);
    for h in 0..6 {
        if pit(x, h) == 0 {
            continue;
        }
        let Some((captures, _)) = sow_by(x, h, rules).judged(rules, opponent_empty) else {
            continue;
        };
        legal = true;
        quiet += u8::from(captures == 0);
    }
    if legal {
        Ok(quiet)
    } else {
        Err(rules.end_value(n, false))
    }
}

/// [`Board::quiet_moves`] without sowing, when it finds a legal non-capturing move (else
/// `None`, and the full count decides): a move of `s` seeds from pit `h` captures nothing when
/// its last seed (`SOW[h][s]`, or `SOW_CROSS[h][s]` under `cross-wari`) does not
/// make an opponent pit 2 or 3, and is then legal when the opponent's row is not empty or the
/// sowing reaches it (no eradication, and an empty row is fed). Under `abapa` and `cross-wari`
/// a capture may be a grand slam, which counts as non-capturing: each capturing move is sown
/// to tell (see [`combine_quiet`]).
#[inline]
fn quiet_moves_fast(x: Packed, rules: Rules) -> Option<u8> {
    combine_quiet(x, quiet_part_of::<0, 6>(x, rules.sows_both_ways()), rules)
}

/// [`quiet_part`] with its direction rule chosen at run time (`cross`: `cross-wari`).
#[inline(always)]
fn quiet_part_of<const FROM: usize, const TO: usize>(x: Packed, cross: bool) -> (u8, u8) {
    if cross {
        quiet_part::<FROM, TO, true>(x)
    } else {
        quiet_part::<FROM, TO, false>(x)
    }
}

/// The fast count's verdict from its sum over all six pits of the packed board `x`:
/// `(quiet, capturing)`, bit h of `capturing` set when the move from pit h captures. `None`
/// (the full count decides) when no legal move is known. Where a grand slam captures nothing
/// (`abapa`, `cross-wari`) each capturing move is sown, and one that eradicates counts as
/// quiet; a capture is always legal there (it fed the opponent's row), so the position is
/// not terminal.
#[inline(always)]
fn combine_quiet(x: Packed, (quiet, capturing): (u8, u8), rules: Rules) -> Option<u8> {
    if capturing != 0 && rules.grand_slam_captures_nothing() {
        if opponent_keeps_a_pit(x) {
            return Some(quiet);
        }
        let mut slams = 0u8;
        let mut pits = capturing;
        while pits != 0 {
            let h = pits.trailing_zeros() as usize;
            pits &= pits - 1;
            slams += u8::from(sow_by(x, h, rules).eradicates());
        }
        return Some(quiet + slams);
    }
    (quiet > 0).then_some(quiet)
}

/// The moves from pits `FROM..TO` in [`quiet_moves_fast`]: how many are legal and capture
/// nothing, and which capture (bit h: pit h; `CROSS`: an odd pit sows clockwise). A move from pit
/// `h` ≥ 2 depends on pits 2..11 only: its seeds, the opponent pit its last seed lands in
/// (a seed landing in pit 0 or 1 captures nothing), and whether the opponent row is empty.
#[inline(always)]
fn quiet_part<const FROM: usize, const TO: usize, const CROSS: bool>(x: Packed) -> (u8, u8) {
    let opponent_seeds = x & OPPONENT_ROW != 0;
    let (mut quiet, mut capturing) = (0u8, 0u8);
    for h in FROM..TO {
        let s = usize::from(pit(x, h));
        // Whether the sowing reaches the opponent's row: counter-clockwise past pit 5,
        // clockwise past pit 0; under `cross-wari` the table entry tells (whether it adds to
        // that row), without a branch on the parity.
        let (entry, reaches) = if CROSS {
            let entry = SOW_CROSS[h][s];
            (entry, entry & OPPONENT_ROW != 0)
        } else {
            (SOW[h][s], s + h > 5)
        };
        let last = (entry >> 120) as usize;
        let landed = pit(x, last) + pit(entry, last);
        let capture = last >= 6 && (landed == 2 || landed == 3);
        let played = s != 0;
        capturing |= u8::from(played & capture) << h;
        quiet += u8::from(played & !capture & (opponent_seeds | reaches));
    }
    (quiet, capturing)
}

/// [`Board::quiet_moves`] for boards visited in index order (the builder's forward pass):
/// consecutive boards mostly differ in pits 0 and 1 only, so the moves from pits 2..5 are
/// counted once per run of boards sharing pits 2..11.
#[derive(Clone, Debug)]
pub struct QuietMoves {
    /// Pits 2..11 of the board the cached part was counted for (pits 0 and 1 zeroed; all ones
    /// before the first board, which no board matches).
    key: Packed,
    /// The moves from pits 2..5 of that board: (quiet, capturing), as [`quiet_part`].
    part: (u8, u8),
    /// Whether `part` was counted under `cross-wari` (both directions).
    cross: bool,
}

impl Default for QuietMoves {
    fn default() -> QuietMoves {
        QuietMoves::new()
    }
}

impl QuietMoves {
    /// A counter with nothing cached.
    pub fn new() -> QuietMoves {
        QuietMoves {
            key: Packed::MAX,
            part: (0, 0),
            cross: false,
        }
    }

    /// `board.quiet_moves(rules)`.
    #[inline]
    pub fn count(&mut self, board: &Board, rules: Rules) -> Result<u8, i8> {
        let x = pack(&board.pits());
        let cross = rules.sows_both_ways();
        let key = x & !0xffff;
        if key != self.key || cross != self.cross {
            self.key = key;
            self.cross = cross;
            self.part = quiet_part_of::<2, 6>(x, cross);
        }
        let low = quiet_part_of::<0, 2>(x, cross);
        let sum = (low.0 + self.part.0, low.1 | self.part.1);
        match combine_quiet(x, sum, rules) {
            Some(quiet) => Ok(quiet),
            None => quiet_moves_sown(x, board.seeds() as i8, rules),
        }
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
