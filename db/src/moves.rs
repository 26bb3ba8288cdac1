//! Moves (sowing and capture) under each rule set; their inverses are in `unmoves`.

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
pub(crate) const SOW: [[Packed; 49]; 6] = sow_table(1);

/// `SOW_CW[h][s]`: as `SOW`, sowing clockwise (pits h−1, h−2, … mod 12), as `cross-wari`
/// sows a pit holding an odd number of seeds.
pub(crate) const SOW_CW: [[Packed; 49]; 6] = sow_table(PITS - 1);

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
pub(crate) const SEED_PIT: [[u8; 49]; 6] = seed_pits(&SOW);
/// `SEED_PIT_CW[h][s]`: [`seed_pits`] of `SOW_CW` (clockwise).
pub(crate) const SEED_PIT_CW: [[u8; 49]; 6] = seed_pits(&SOW_CW);

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

    /// Whether the position has an *exit*: the game is over, or a legal move captures (a
    /// builder's exits phase gives exactly these positions an exit value, from their end or
    /// their captures; the others have only quiet moves).
    pub fn has_exit(&self, rules: Rules) -> bool {
        match self.outcome(rules) {
            Outcome::Terminal(_) => true,
            Outcome::Moves(moves) => moves.iter().any(|m| m.captures > 0),
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
