//! Moves (sowing and capture) and un-moves (un-sowing), under each rule set.

use crate::board::{Board, PITS};
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

/// A sowing before the rules judge it (internal to move generation and tests).
#[derive(Clone, Copy, Debug)]
struct Sowing {
    /// The board after sowing, before capture, unrotated (mover still on 0..5).
    sown: [u8; PITS],
    /// Where the last seed fell.
    last: usize,
    /// Seeds the capture rule takes (before any grand-slam rule).
    captured: u8,
    /// The board after capture, unrotated.
    after: [u8; PITS],
}

impl Sowing {
    /// Whether the opponent's row is empty after sowing and capture.
    fn eradicates(&self) -> bool {
        self.after[6..].iter().all(|&p| p == 0)
    }

    /// Whether sowing put any seed in the opponent's row.
    fn feeds(&self) -> bool {
        self.sown[6..].iter().any(|&p| p > 0)
    }
}

/// Sow pit `h` (which must be non-empty) and apply the capture rule.
fn sow(pits: &[u8; PITS], h: usize) -> Sowing {
    let s = usize::from(pits[h]);
    debug_assert!(s > 0);
    let mut sown = *pits;
    sown[h] = 0;
    let laps = (s / 11) as u8;
    let rem = s % 11;
    if laps > 0 {
        for (i, p) in sown.iter_mut().enumerate() {
            if i != h {
                *p += laps;
            }
        }
    }
    for k in 1..=rem {
        sown[(h + k) % PITS] += 1;
    }
    let last = (h + (s - 1) % 11 + 1) % PITS;
    let mut after = sown;
    let mut captured = 0u8;
    if last >= 6 {
        let mut j = last;
        while j >= 6 && (after[j] == 2 || after[j] == 3) {
            captured += after[j];
            after[j] = 0;
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

/// Sow pit `h` of `board` and return the board after sowing, before capture and rotation,
/// with the pit where the last seed fell. `None` if the pit is empty or not the mover's.
pub fn sow_only(board: &Board, h: usize) -> Option<(Board, usize)> {
    if h >= 6 || board.pits()[h] == 0 {
        return None;
    }
    let s = sow(&board.pits(), h);
    Some((Board::from_pits(s.sown), s.last))
}

fn rotate(pits: &[u8; PITS]) -> Board {
    Board::from_pits(*pits).rotated()
}

impl Board {
    /// The game-theoretic situation of this position under `rules`: terminal with its value,
    /// or its legal moves.
    pub fn outcome(&self, rules: Rules) -> Outcome {
        let pits = self.pits();
        let n = self.seeds() as i8;
        if self.mover_seeds() == 0 {
            return Outcome::Terminal(-n);
        }
        let opponent_empty = self.opponent_seeds() == 0;
        let mut list = MoveList::default();
        for h in 0..6 {
            if pits[h] == 0 {
                continue;
            }
            let s = sow(&pits, h);
            let m = match rules {
                Rules::Awari => {
                    if s.eradicates() {
                        continue;
                    }
                    Move {
                        pit: h as u8,
                        captures: s.captured,
                        child: rotate(&s.after),
                    }
                }
                Rules::Abapa | Rules::GrandSlam => {
                    if opponent_empty && !s.feeds() {
                        continue;
                    }
                    if rules == Rules::Abapa && s.captured > 0 && s.eradicates() {
                        // A grand slam is legal but captures nothing.
                        Move {
                            pit: h as u8,
                            captures: 0,
                            child: rotate(&s.sown),
                        }
                    } else {
                        // Under grand-slam a grand slam leaves the opponent without seeds:
                        // the child is terminal (−rest), so the move is worth +n.
                        Move {
                            pit: h as u8,
                            captures: s.captured,
                            child: rotate(&s.after),
                        }
                    }
                }
            };
            list.push(m);
        }
        if list.is_empty() {
            // awari: every move eradicates, so any may be played and the mover takes all;
            // abapa / grand-slam: the mover cannot feed the empty opponent and takes all.
            Outcome::Terminal(n)
        } else {
            Outcome::Moves(list)
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
        if self.mover_seeds() == 0 {
            return;
        }
        let a = self.rotated().pits();
        for h in 0..6 {
            if a[h] != 0 {
                continue;
            }
            let mut rem = a;
            let mut s = 0usize;
            loop {
                s += 1;
                let last = (h + (s - 1) % 11 + 1) % PITS;
                if rem[last] == 0 || s > 48 {
                    break;
                }
                rem[last] -= 1;
                if last >= 6 && (a[last] == 2 || a[last] == 3) {
                    // This sowing would have captured, unless abapa turns it into a
                    // grand slam that captures nothing.
                    if rules != Rules::Abapa || !captures_every_opponent_seed(&a, last) {
                        continue;
                    }
                }
                let mut parent = rem;
                parent[h] = s as u8;
                f(Board::from_pits(parent), h as u8);
            }
        }
    }

    /// The predecessors as a vector (see [`Board::for_each_predecessor`]).
    pub fn predecessors(&self, rules: Rules) -> Vec<(Board, u8)> {
        let mut v = Vec::new();
        self.for_each_predecessor(rules, |b, h| v.push((b, h)));
        v
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
