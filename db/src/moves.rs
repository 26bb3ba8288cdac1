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

/// `SEED_PIT[h][s]`: the pit where the `s`-th seed sown from pit `h` falls (the pit played is
/// skipped on every lap), for the un-sowing loops: byte 15 of `SOW[h][s]`, unpacked at
/// compile time.
const SEED_PIT: [[u8; 49]; 6] = {
    let mut t = [[0u8; 49]; 6];
    let mut h = 0;
    while h < 6 {
        let mut s = 1;
        while s <= 48 {
            t[h][s] = (SOW[h][s] >> 120) as u8;
            s += 1;
        }
        h += 1;
    }
    t
};

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
/// its last seed (`SOW[h][s]`, or `SOW_CW[h][s]` for an odd pit under `cross-wari`) does not
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
        // clockwise past pit 0.
        let (entry, reaches) = if CROSS && s % 2 == 1 {
            (SOW_CW[h][s], s > h)
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
/// seed in each of the first s pits that sowing from `h` passes (`SOW[h][s]`, subtracted
/// pit by pit as s grows), with s seeds in `h`; it stops at the first pit that would go
/// below zero.
///
/// Under `cross-wari` a parent sowed counter-clockwise from an even count, or clockwise from
/// an odd one: the second are the mirror images of the counter-clockwise un-sowings of the
/// mirrored child (mirroring commutes with rotation; the pit played is mirrored back).
#[inline(always)]
fn unsow_all(child: Packed, rules: Rules, mut f: impl FnMut(Packed, usize, bool)) {
    if !rules.sows_both_ways() {
        return unsow_ccw::<ANY_COUNT>(child, rules, f);
    }
    unsow_ccw::<EVEN_COUNTS>(child, rules, &mut f);
    unsow_ccw::<ODD_COUNTS>(mirror_packed(child), rules, |parent, h, changed| {
        f(mirror_packed(parent), mirror_pit(h), changed)
    });
}

/// Seed counts `unsow_ccw` tries: any, or the odd or the even ones only (`cross-wari`).
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

/// [`unsow_all`]'s counter-clockwise un-sowings, of the seed counts `COUNTS` allows.
#[inline(always)]
fn unsow_ccw<const COUNTS: u8>(
    child: Packed,
    rules: Rules,
    mut f: impl FnMut(Packed, usize, bool),
) {
    // The mover's row of the child is the row the parent sowed into last: if empty, the
    // move eradicated (illegal without a capture).
    if child & !OPPONENT_ROW == 0 {
        return;
    }
    let a = rotate_packed(child);
    let empty = byte_mask(zero_bytes(a));
    // Opponent pits holding 2 or 3: a sowing ending there would have captured.
    let capturing = byte_mask(zero_bytes((a & BYTES_FE) ^ BYTES_02)) & 0xfc0;
    let mut origins = empty & 0x3f;
    while origins != 0 {
        let h = origins.trailing_zeros() as usize;
        origins &= origins - 1;
        // Bit j of a `path` mask is the pit the (j+1)-th seed sown from h falls in, on the
        // first lap: pits h+1, …, 11, 0, …, h−1.
        let path = |mask: u32| ((mask | (mask << 12)) >> (h + 1)) & 0x7ff;
        let blocked = path(empty);
        // Seed counts s = 1..=longest take a seed from non-empty pits only.
        let longest = if blocked == 0 {
            11
        } else {
            blocked.trailing_zeros() as usize
        };
        // Bit j stands for a sowing of j + 1 seeds.
        let allowed = match COUNTS {
            ODD_COUNTS => 0x555,
            EVEN_COUNTS => 0xaaa,
            _ => 0x7ff,
        };
        let mut counts = ((1u32 << longest) - 1) & !path(capturing) & allowed;
        if rules.grand_slam_captures_nothing() && !opponent_keeps_a_pit(a) {
            // A sowing that would capture every opponent seed is a grand slam: legal, and
            // it captures nothing (never where an opponent pit of the sown board holds 4 or
            // more).
            let mut slams = ((1u32 << longest) - 1) & path(capturing) & allowed;
            while slams != 0 {
                let j = slams.trailing_zeros() as usize;
                slams &= slams - 1;
                if captures_every_opponent_seed(&unpack(a), usize::from(SEED_PIT[h][j + 1])) {
                    counts |= 1 << j;
                }
            }
        }
        while counts != 0 {
            let s = counts.trailing_zeros() as usize + 1;
            counts &= counts - 1;
            let parent = a - (SOW[h][s] & PITS_MASK) + ((s as Packed) << (8 * h));
            f(parent, h, s + h > 5);
        }
        if longest == 11 {
            // Every other pit holds a seed: the sowing may go round again.
            unsow_laps::<COUNTS>(a, h, rules, &mut f);
        }
    }
}

/// The un-sowings from pit `h` of 12 seeds or more (see `unsow_all`), one seed at a time.
#[cold]
fn unsow_laps<const COUNTS: u8>(
    a: Packed,
    h: usize,
    rules: Rules,
    f: &mut impl FnMut(Packed, usize, bool),
) {
    let mut rem = a - (SOW[h][11] & PITS_MASK);
    for (s, &last) in SEED_PIT[h].iter().enumerate().skip(12) {
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
            && (!rules.grand_slam_captures_nothing()
                || !captures_every_opponent_seed(&unpack(a), last))
        {
            continue;
        }
        f(rem | ((s as Packed) << (8 * h)), h, true);
    }
}

/// Whether a capture ending at `last` on the sown board `a` takes every opponent seed.
fn captures_every_opponent_seed(a: &[u8; PITS], last: usize) -> bool {
    let mut j = last;
    while j >= 6 && (a[j] == 2 || a[j] == 3) {
        j -= 1;
    }
    // Pits 6..=j were not reached by the capture, nor were the pits after `last`.
    let before = if j >= 6 { &a[6..=j] } else { &a[6..6] };
    before.iter().all(|&p| p == 0) && a[last + 1..].iter().all(|&p| p == 0)
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
/// and the mirror images of those of the mirrored child from an odd one.
#[inline(always)]
fn uncapture_all(child: Packed, rules: Rules, captures: u8, mut f: impl FnMut(Packed, usize)) {
    if !rules.sows_both_ways() {
        return uncapture_ccw::<ANY_COUNT>(child, rules, captures, f);
    }
    uncapture_ccw::<EVEN_COUNTS>(child, rules, captures, &mut f);
    uncapture_ccw::<ODD_COUNTS>(mirror_packed(child), rules, captures, |parent, h| {
        f(mirror_packed(parent), mirror_pit(h))
    });
}

/// [`uncapture_all`]'s counter-clockwise un-captures, of the seed counts `COUNTS` allows.
#[inline(always)]
fn uncapture_ccw<const COUNTS: u8>(
    child: Packed,
    rules: Rules,
    captures: u8,
    mut f: impl FnMut(Packed, usize),
) {
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
    let h = 31 - (empty & 0x3f).leading_zeros() as usize;
    let low = (empty & 0xfc0).trailing_zeros() as usize;
    let below = pit(a, low - 1);
    if low > 6 && (below == 2 || below == 3) {
        // The capture would have gone on below the run.
        return;
    }
    // The run is empty pits from `low` on.
    let empties = (!(empty >> low)).trailing_zeros() as usize;
    let (shortest, longest) = (c.div_ceil(3), (c / 2).min(empties));
    for len in shortest..=longest {
        let last = low + len - 1;
        let threes = (c - 2 * len) as u32;
        let twos: Packed = (0..len).map(|k| 2 << (8 * (low + k))).sum();
        for mask in 0u32..(1 << len) {
            if mask.count_ones() != threes {
                continue;
            }
            let refill = (0..len)
                .filter(|k| mask >> k & 1 != 0)
                .fold(twos, |r, k| r + (1 << (8 * (low + k))));
            let sown = a + refill;
            let mut s = last - h;
            while s <= crate::MAX_SEEDS as usize {
                let path = SOW[h][s] & PITS_MASK;
                // Every pit keeps at least 0 (bytes below 0x80: no borrow crosses a byte).
                if ((sown | BYTES_80) - path) & BYTES_80 != BYTES_80 {
                    break;
                }
                if counts_allow::<COUNTS>(s) {
                    f(sown - path + ((s as Packed) << (8 * h)), h);
                }
                s += PITS - 1;
            }
        }
    }
}
