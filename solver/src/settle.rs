//! The settling core the level algorithms share (docs/design.md, "Building a level"): the
//! 16-bit state word of a position (see [`crate::level::memory`] for its layout) and its
//! updates, the seeds of a step, and the propagation of settled positions to their
//! predecessors by un-moves, over any state representation that implements [`Settle`] (in
//! memory, low-memory, distributed).
//!
//! The in-memory build saves these words as they are (`level-NN.mstate`): a change of their
//! layout is a new version of that file (`level/memory/checkpoint.rs`).

use std::sync::atomic::{AtomicU16, Ordering::Relaxed};

use awari_db::{successor, Board, Level, Rules};

pub(crate) const SETTLED: u16 = 0x8000;
pub(crate) const NO_EXIT: i8 = i8::MIN;
/// Positions per parallel work item ([`crate::grain::MOVE_TASK`]).
pub(crate) const CHUNK: usize = crate::grain::MOVE_TASK as usize;
/// Positions scanned for seeds in one parallel pass (see `settle_step`).
pub(crate) const WINDOW: usize = 1 << 26;
/// The win flag of a seed found by [`settle_seeds`] (its offset in the chunk is below).
pub(crate) const WON: u16 = 1 << 15;
const _: () = assert!(CHUNK <= WON as usize && WINDOW % CHUNK == 0);

#[inline]
pub(crate) fn unsettled(exit: i8, counter: u8) -> u16 {
    (u16::from(counter) << 8) | u16::from(exit as u8)
}

#[inline]
pub(crate) fn settled(value: i8) -> u16 {
    SETTLED | u16::from(value as u8)
}

#[inline]
pub(crate) fn exit_of(word: u16) -> i8 {
    word as u8 as i8
}

#[inline]
pub(crate) fn counter_of(word: u16) -> u8 {
    ((word >> 8) & 7) as u8
}

/// Whether step `i` settles the position of `word` from its own state: unsettled, and won by
/// an exit ≥ i, or lost by i with every child already a win (no branches: see `seed_chunk`).
#[inline]
pub(crate) fn is_seed(word: u16, i: i8) -> bool {
    let exit = exit_of(word);
    (word & SETTLED == 0) & ((exit >= i) | ((exit == -i) & (counter_of(word) == 0)))
}

/// Why a level could not be started.
#[derive(Debug, thiserror::Error)]
pub enum BuilderError {
    /// A lower level is missing or unreadable.
    #[error(transparent)]
    Db(#[from] awari_db::DbError),
    /// The state array could not be allocated.
    #[error("cannot allocate the level's state: {0}")]
    Alloc(#[from] std::io::Error),
    /// A work file could not be made or read.
    #[error(transparent)]
    Table(#[from] awari_db::TableError),
    /// A two-bit build with depths, resumed in one bit.
    #[error(
        "level {level} was begun in two-bit mode with depths, which it resumes in only: \
         give it the memory of two bits a position (`--mode two-bit`), or remove its \
         work directory to begin it again"
    )]
    DepthsInOneBit {
        /// The level.
        level: u32,
    },
}

/// Counts of a built level, for the summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelCounts {
    /// Positions won by the side to move.
    pub wins: u64,
    /// Positions drawn.
    pub draws: u64,
    /// Positions lost by the side to move.
    pub losses: u64,
}

impl LevelCounts {
    /// Count one value.
    #[inline]
    pub fn add(&mut self, v: i8) {
        match v.signum() {
            1 => self.wins += 1,
            0 => self.draws += 1,
            _ => self.losses += 1,
        }
    }

    /// The sum of two counts.
    pub fn merge(self, o: LevelCounts) -> LevelCounts {
        LevelCounts {
            wins: self.wins + o.wins,
            draws: self.draws + o.draws,
            losses: self.losses + o.losses,
        }
    }
}

/// The per-position state a settling step updates, whatever its representation.
pub(crate) trait Settle: Sync {
    /// Read the memory holding `q`'s state (to bring it into cache before updating it).
    fn touch(&self, q: u64) -> u64;
    /// Whether [`Settle::prefetch`] issues prefetches (else the states of a batch are read
    /// with [`Settle::touch`] after the batch is generated).
    const PREFETCHES: bool = false;
    /// Start bringing `q`'s state into cache without waiting for it, as soon as `q` is
    /// generated (by default nothing: a read there would stall the generation).
    #[inline]
    fn prefetch(&self, _q: u64) {}
    /// Apply to `q` the news that a child was settled at step `i` (`child_won`: the child is a
    /// win by i for its mover). Returns whether this settled `q`.
    fn update(&self, q: u64, i: i8, child_won: bool) -> bool;
}

/// Settled positions whose predecessors are updated together (see [`propagate_diverting`]).
pub(crate) const BATCH: usize = 24;

/// Append to `out` the predecessors of `settled` (boards with their win flags) as (index,
/// board, flag), leaving to the caller those for which `divert(index, won)` returns true, and
/// start loading their states: each prefetched the moment it is ranked, or, for a state that
/// cannot prefetch, all read once the batch is generated.
pub(crate) fn gather<S: Settle>(
    state: &S,
    level: &Level,
    rules: Rules,
    settled: impl Iterator<Item = (Board, bool)>,
    out: &mut Vec<(u64, Board, bool)>,
    divert: &mut impl FnMut(u64, bool) -> bool,
) {
    let first = out.len();
    for (board, win) in settled {
        board.for_each_ranked_predecessor(rules, level, |q, pred| {
            if !divert(q, win) {
                state.prefetch(q);
                out.push((q, pred, win));
            }
        });
    }
    if !S::PREFETCHES {
        let mut touch = 0u64;
        for &(q, _, _) in &out[first..] {
            touch |= state.touch(q);
        }
        std::hint::black_box(touch);
    }
}

/// Settle, depth first, everything that follows at step `i` from the settled positions on
/// `stack`. Returns how many positions it settled.
pub(crate) fn propagate<S: Settle>(
    state: &S,
    level: &Level,
    rules: Rules,
    i: i8,
    stack: &mut Vec<(Board, bool)>,
) -> u64 {
    propagate_diverting(state, level, rules, i, stack, &mut |_, _| false)
}

/// [`propagate`], leaving to the caller each predecessor for which `divert(index, won)`
/// returns true (another rank's, in a distributed build).
pub(crate) fn propagate_diverting<S: Settle>(
    state: &S,
    level: &Level,
    rules: Rules,
    i: i8,
    stack: &mut Vec<(Board, bool)>,
    divert: &mut impl FnMut(u64, bool) -> bool,
) -> u64 {
    // Software-pipelined: the predecessors of one batch are generated and their words
    // prefetched while the previous batch's predecessors, prefetched one batch earlier, are
    // updated. The cache misses of one batch thus overlap the un-move generation of the next
    // instead of stalling the updates. Which batch goes first changes nothing: a step settles
    // the same positions, at the same values, in any order.
    let mut count = 0u64;
    let mut ready: Vec<(u64, Board, bool)> = Vec::with_capacity(BATCH * 8);
    let mut next: Vec<(u64, Board, bool)> = Vec::with_capacity(BATCH * 8);
    loop {
        let k = stack.len().saturating_sub(BATCH);
        gather(state, level, rules, stack.drain(k..), &mut next, divert);
        for &(q, pred, win) in &ready {
            if state.update(q, i, win) {
                stack.push((pred, !win));
                count += 1;
            }
        }
        ready.clear();
        std::mem::swap(&mut ready, &mut next);
        if ready.is_empty() && stack.is_empty() {
            return count;
        }
    }
}

/// The boards of the seeds (offsets, in increasing order, in the chunk starting at `start`),
/// with their flags: each found by stepping from the previous one when it is near (a step
/// costs 2–10 ns, an unrank about 60), else by unranking.
pub(crate) fn seed_boards(
    level: &Level,
    start: u64,
    seeds: impl ExactSizeIterator<Item = (u32, bool)>,
) -> Vec<(Board, bool)> {
    const NEAR: u32 = 16;
    let mut out: Vec<(Board, bool)> = Vec::with_capacity(seeds.len());
    let mut prev: Option<(u32, Board)> = None;
    for (k, win) in seeds {
        let board = match prev {
            Some((at, mut b)) if k - at <= NEAR => {
                for _ in at..k {
                    b = successor(&b).expect("seed inside the level");
                }
                b
            }
            _ => level.unrank(start + u64::from(k)),
        };
        prev = Some((k, board));
        out.push((board, win));
    }
    out
}

/// The value a state word ends with: its value if settled, else 0 (an endless cycle, a draw).
#[inline]
pub(crate) fn value_of(w: u16) -> i8 {
    if w & SETTLED != 0 {
        w as u8 as i8
    } else {
        0
    }
}

/// Settle every position of `words` that step `i` settles from its own state (see `is_seed`),
/// calling `on_seed` with the offset of each; returns their offsets and win flags.
pub(crate) fn scan_seeds(
    i: i8,
    words: &[AtomicU16],
    mut on_seed: impl FnMut(usize),
) -> Vec<(u32, bool)> {
    let mut seeds: Vec<(u32, bool)> = Vec::new();
    // Most words are no seed, in an unpredictable pattern: test 64 at a time without
    // branches, then settle only the candidates (each looked at again, atomically).
    for (g, group) in words.chunks(64).enumerate() {
        let mut candidates = 0u64;
        for (k, word) in group.iter().enumerate() {
            candidates |= u64::from(is_seed(word.load(Relaxed), i)) << k;
        }
        while candidates != 0 {
            let k = g * 64 + candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            let word = &words[k];
            let mut w = word.load(Relaxed);
            while is_seed(w, i) {
                let win = exit_of(w) >= i;
                let v = if win { i } else { -i };
                // A failed exchange means another thread's propagation changed the word
                // (settled it, or decremented its counter): look again.
                match word.compare_exchange_weak(w, settled(v), Relaxed, Relaxed) {
                    Ok(_) => {
                        seeds.push((k as u32, win));
                        on_seed(k);
                        break;
                    }
                    Err(now) => w = now,
                }
            }
        }
    }
    seeds
}

/// Settle every position of `words` (a chunk) that step `i` settles from its own state (see
/// `is_seed`), with plain stores (no other thread may touch the words); returns each one's
/// offset, with [`WON`] set for a win.
pub(crate) fn settle_seeds(i: i8, words: &mut [u16]) -> Vec<u16> {
    const GROUP: usize = 32;
    debug_assert!(words.len() <= CHUNK);
    let mut seeds: Vec<u16> = Vec::new();
    let mut settle = |k: usize, word: &mut u16| {
        let win = exit_of(*word) >= i;
        *word = settled(if win { i } else { -i });
        seeds.push(k as u16 | if win { WON } else { 0 });
    };
    let base = words.len() / GROUP * GROUP;
    let mut groups = words.chunks_exact_mut(GROUP);
    for (g, group) in groups.by_ref().enumerate() {
        // Branch-free 16-bit arithmetic on a fixed-size group, which the compiler
        // vectorises; most groups hold no seed.
        let mut flags = [0u16; GROUP];
        for (f, &w) in flags.iter_mut().zip(group.iter()) {
            *f = seed_flag(w, i);
        }
        if flags.iter().fold(0, |a, &f| a | f) == 0 {
            continue;
        }
        for (k, word) in group.iter_mut().enumerate() {
            if flags[k] != 0 {
                settle(g * GROUP + k, word);
            }
        }
    }
    for (k, word) in groups.into_remainder().iter_mut().enumerate() {
        if is_seed(*word, i) {
            settle(base + k, word);
        }
    }
    seeds
}

/// A seed as [`settle_seeds`] returns it, as (offset in its chunk, won).
#[inline]
pub(crate) fn seed_entry(&s: &u16) -> (u32, bool) {
    (u32::from(s & !WON), s & WON != 0)
}

/// `is_seed` as 0 or 1, in 16-bit arithmetic only (for vectorised scans).
#[inline]
pub(crate) fn seed_flag(word: u16, i: i8) -> u16 {
    let exit = ((word << 8) as i16) >> 8;
    let i = i16::from(i);
    let unsettled = u16::from(word as i16 >= 0);
    let win = u16::from(exit >= i);
    let loss = u16::from(exit == -i) & u16::from(word & 0x700 == 0);
    unsettled & (win | loss)
}

/// Apply to the state word of a predecessor the news that one of its children was settled at
/// step `i` (`child_won`: the child is a win by i for its mover). Returns whether this settled
/// the predecessor.
#[inline]
pub(crate) fn update_word(word: &AtomicU16, i: i8, child_won: bool) -> bool {
    let mut w = word.load(Relaxed);
    while let Some((new, done)) = next_word(w, i, child_won) {
        match word.compare_exchange_weak(w, new, Relaxed, Relaxed) {
            Ok(_) => return done,
            Err(now) => w = now,
        }
    }
    false
}

/// The state word `w` of a predecessor becomes after the news that one of its children was
/// settled at step `i` (see [`update_word`]), and whether that settles it; `None` when it was
/// settled already.
#[inline]
pub(crate) fn next_word(w: u16, i: i8, child_won: bool) -> Option<(u16, bool)> {
    if w & SETTLED != 0 {
        return None;
    }
    Some(if !child_won {
        // A child lost by i: the predecessor wins by i.
        (settled(i), true)
    } else {
        let left = counter_of(w) - 1;
        let exit = exit_of(w);
        if left == 0 && exit <= -i {
            // Every child is a win by at least i and no capture does better.
            (settled(-i), true)
        } else {
            (unsettled(exit, left), false)
        }
    })
}

/// Raise the exit value held in an unsettled word to at least `exit` (during phase 1 nothing
/// else changes the word, so only a concurrent raise can make the exchange fail).
#[inline]
pub(crate) fn raise_exit(word: &AtomicU16, exit: i8) {
    let mut w = word.load(Relaxed);
    while exit_of(w) < exit {
        match word.compare_exchange_weak(w, (w & 0xff00) | u16::from(exit as u8), Relaxed, Relaxed)
        {
            Ok(_) => return,
            Err(now) => w = now,
        }
    }
}

#[cfg(test)]
mod tests {
    //! The state word's rules checked against their meaning, word by word: what a step seeds,
    //! what a settled child does to its parent, how exits rise. The level algorithms' tests
    //! (value iteration, the published histograms) check the same rules through whole levels;
    //! these find a broken one in milliseconds and name the word.
    use super::*;
    use awari_db::SplitMix64;

    /// Every exit a word can hold: none, or a capture's value within ±48.
    fn exits() -> impl Iterator<Item = i8> {
        std::iter::once(NO_EXIT).chain(-48..=48)
    }

    /// The words an unsettled position can have: any exit, 0..=6 children left.
    fn unsettled_words() -> impl Iterator<Item = (i8, u8, u16)> {
        exits().flat_map(|e| (0..=6u8).map(move |c| (e, c, unsettled(e, c))))
    }

    #[test]
    fn a_word_holds_its_exit_and_counter_or_its_value() {
        for (e, c, w) in unsettled_words() {
            assert_eq!((exit_of(w), counter_of(w)), (e, c), "{w:#06x}");
            assert_eq!(w & SETTLED, 0);
            assert_eq!(value_of(w), 0, "an unsettled position ends a draw");
        }
        for v in -48..=48 {
            let w = settled(v);
            assert_ne!(w & SETTLED, 0);
            assert_eq!(value_of(w), v);
        }
        // Exits, counters and values are all told apart.
        let all: std::collections::HashSet<u16> = unsettled_words()
            .map(|(_, _, w)| w)
            .chain((-48..=48).map(settled))
            .collect();
        assert_eq!(all.len(), 98 * 7 + 97);
    }

    /// Step `i` seeds an unsettled position that an exit wins by at least i, or that is lost
    /// by i: no child left unsettled, and no exit better than -i.
    fn seeds_at(exit: i8, counter: u8, i: i8) -> bool {
        match exit {
            e if e >= i => true,
            e if e == -i => counter == 0,
            _ => false,
        }
    }

    #[test]
    fn seeds_are_wins_by_exits_and_losses_with_no_child_left() {
        for i in 1..=48 {
            for (e, c, w) in unsettled_words() {
                let want = seeds_at(e, c, i);
                assert_eq!(is_seed(w, i), want, "exit {e} counter {c} step {i}");
                assert_eq!(
                    seed_flag(w, i),
                    u16::from(want),
                    "exit {e} counter {c} step {i}"
                );
            }
            // A settled position is never a seed again, whatever its value.
            for v in -48..=48 {
                assert!(!is_seed(settled(v), i) && seed_flag(settled(v), i) == 0);
            }
        }
        // The vectorised flag agrees with the test on every 16-bit word, even those no
        // position has.
        for w in 0..=u16::MAX {
            for i in [1, 2, 7, 24, 48] {
                assert_eq!(
                    seed_flag(w, i),
                    u16::from(is_seed(w, i)),
                    "{w:#06x} step {i}"
                );
            }
        }
    }

    #[test]
    fn a_settled_child_settles_or_counts_down_its_parent() {
        for i in 1..=48 {
            for (e, c, w) in unsettled_words().filter(|&(_, c, _)| c > 0) {
                // A child lost by i: the parent moves there and wins by i.
                assert_eq!(next_word(w, i, false), Some((settled(i), true)));
                // A child won by i: one fewer to wait for; the last one loses the parent by i
                // unless an exit does better than -i.
                let want = if c == 1 && e <= -i {
                    (settled(-i), true)
                } else {
                    (unsettled(e, c - 1), false)
                };
                assert_eq!(
                    next_word(w, i, true),
                    Some(want),
                    "exit {e} counter {c} step {i}"
                );
                for won in [false, true] {
                    let atomic = AtomicU16::new(w);
                    let done = update_word(&atomic, i, won);
                    assert_eq!(Some((atomic.into_inner(), done)), next_word(w, i, won));
                }
            }
            for v in -48..=48 {
                for won in [false, true] {
                    assert_eq!(next_word(settled(v), i, won), None);
                    let atomic = AtomicU16::new(settled(v));
                    assert!(!update_word(&atomic, i, won));
                    assert_eq!(atomic.into_inner(), settled(v));
                }
            }
        }
    }

    #[test]
    fn exits_only_rise_and_keep_the_counter() {
        for (e, c, w) in unsettled_words() {
            for x in exits() {
                let want = unsettled(e.max(x), c);
                let shared = AtomicU16::new(w);
                raise_exit(&shared, x);
                assert_eq!(shared.into_inner(), want, "exit {e} raised to {x}");
            }
        }
    }

    /// Random words of positions: unsettled with small exits and counters (so that seeds of
    /// both kinds are common), or settled.
    fn random_words(rng: &mut SplitMix64, len: usize) -> Vec<u16> {
        (0..len)
            .map(|_| match rng.below(4) {
                0 => settled(rng.below(9) as i8 - 4),
                1 => unsettled(NO_EXIT, rng.below(3) as u8),
                _ => unsettled(rng.below(9) as i8 - 4, rng.below(3) as u8),
            })
            .collect()
    }

    #[test]
    fn both_seed_scans_settle_the_seeds_and_nothing_else() {
        let mut rng = SplitMix64(4);
        // Lengths off the scans' groups of 32 and 64, and a whole chunk.
        for len in [0, 1, 31, 33, 64, 65, 1000, CHUNK] {
            for i in 1..=4 {
                let words = random_words(&mut rng, len);
                let mut want_seeds = Vec::new();
                let mut want_words = words.clone();
                for (k, w) in want_words.iter_mut().enumerate() {
                    if seeds_at(exit_of(*w), counter_of(*w), i) && *w & SETTLED == 0 {
                        let win = exit_of(*w) >= i;
                        want_seeds.push((k as u32, win));
                        *w = settled(if win { i } else { -i });
                    }
                }
                let mut plain = words.clone();
                let seeds: Vec<(u32, bool)> =
                    settle_seeds(i, &mut plain).iter().map(seed_entry).collect();
                assert_eq!(
                    (&seeds, &plain),
                    (&want_seeds, &want_words),
                    "len {len} step {i}"
                );
                let atomic: Vec<AtomicU16> = words.iter().map(|&w| AtomicU16::new(w)).collect();
                let mut called = Vec::new();
                let scanned = scan_seeds(i, &atomic, |k| called.push(k as u32));
                let after: Vec<u16> = atomic.into_iter().map(AtomicU16::into_inner).collect();
                assert_eq!(
                    (&scanned, &after),
                    (&want_seeds, &want_words),
                    "len {len} step {i}"
                );
                let offsets: Vec<u32> = want_seeds.iter().map(|s| s.0).collect();
                assert_eq!(called, offsets);
            }
        }
    }

    #[test]
    fn seed_boards_are_the_unranked_offsets() {
        let level = Level::new(12);
        let mut rng = SplitMix64(12);
        let start = 1000;
        // Offsets near each other (stepped to) and far apart (unranked), both flags.
        let mut k = 0u32;
        let mut seeds = Vec::new();
        for _ in 0..300 {
            let gap = if rng.below(2) == 0 { 16 } else { 200 };
            k += 1 + rng.below(gap) as u32;
            seeds.push((k, rng.below(2) == 0));
        }
        let boards = seed_boards(&level, start, seeds.iter().copied());
        assert_eq!(boards.len(), seeds.len());
        for (&(k, win), &(board, flag)) in seeds.iter().zip(&boards) {
            assert_eq!(
                (board, flag),
                (level.unrank(start + u64::from(k)), win),
                "offset {k}"
            );
        }
    }

    /// A level's words in plain atomics: the simplest state that settles.
    struct Words(Vec<AtomicU16>);

    impl Settle for Words {
        fn touch(&self, q: u64) -> u64 {
            u64::from(self.0[q as usize].load(Relaxed))
        }
        fn update(&self, q: u64, i: i8, child_won: bool) -> bool {
            update_word(&self.0[q as usize], i, child_won)
        }
    }

    /// A level's words at step `i` with some positions just seeded: each position unsettled
    /// with a random small exit and its number of quiet children as its counter, or settled
    /// already; about one in forty of the unsettled ones settled as a seed of step `i`
    /// (won or lost by i), returned with its board.
    fn seeded_level(rng: &mut SplitMix64, level: &Level, i: i8) -> (Vec<u16>, Vec<(Board, bool)>) {
        let mut seeds = Vec::new();
        let words = (0..level.size())
            .map(|q| {
                let board = level.unrank(q);
                let mut children = 0;
                let mut from = 0;
                while let Some((pit, _)) = board.next_quiet_child(Rules::Awari, level, from, None) {
                    children += 1;
                    from = pit + 1;
                }
                match rng.below(40) {
                    0..=4 => settled(rng.below(7) as i8 - 3),
                    5 => {
                        let win = rng.below(2) == 0;
                        seeds.push((board, win));
                        settled(if win { i } else { -i })
                    }
                    k => {
                        let exit = if k < 10 {
                            NO_EXIT
                        } else {
                            rng.below(7) as i8 - 3
                        };
                        unsettled(exit, children)
                    }
                }
            })
            .collect();
        (words, seeds)
    }

    /// What a walk one settled board at a time settles from `seeds`: the words after it, how
    /// many it settled, and the (index, won) news `divert` took, sorted.
    fn walk(
        level: &Level,
        i: i8,
        mut words: Vec<u16>,
        seeds: &[(Board, bool)],
        divert: impl Fn(u64) -> bool,
    ) -> (Vec<u16>, u64, Vec<(u64, bool)>) {
        let (mut count, mut diverted) = (0, Vec::new());
        let mut stack = seeds.to_vec();
        while let Some((board, win)) = stack.pop() {
            board.for_each_ranked_predecessor(Rules::Awari, level, |q, parent| {
                if divert(q) {
                    diverted.push((q, win));
                } else if let Some((new, done)) = next_word(words[q as usize], i, win) {
                    words[q as usize] = new;
                    if done {
                        count += 1;
                        stack.push((parent, !win));
                    }
                }
            });
        }
        diverted.sort_unstable();
        (words, count, diverted)
    }

    #[test]
    fn propagation_settles_what_a_walk_one_board_at_a_time_settles() {
        let level = Level::new(9);
        let mut rng = SplitMix64(9);
        for i in [1, 2, 3] {
            let (words, seeds) = seeded_level(&mut rng, &level, i);
            assert!(seeds.len() > 2 * BATCH, "{}", seeds.len());
            let atomics = |w: &[u16]| Words(w.iter().map(|&w| AtomicU16::new(w)).collect());
            let plain =
                |s: Words| -> Vec<u16> { s.0.into_iter().map(AtomicU16::into_inner).collect() };

            // Everything, pipelined in batches.
            let (want, want_count, _) = walk(&level, i, words.clone(), &seeds, |_| false);
            assert!(want_count > 100, "step {i}: {want_count}");
            let state = atomics(&words);
            let mut stack = seeds.clone();
            let count = propagate(&state, &level, Rules::Awari, i, &mut stack);
            assert!(stack.is_empty());
            assert_eq!(
                (count, plain(state)),
                (want_count, want.clone()),
                "step {i}"
            );

            // A third of the predecessors left to the caller, as another rank's.
            let theirs = |q: u64| q % 3 == 0;
            let (want_kept, kept_count, want_diverted) =
                walk(&level, i, words.clone(), &seeds, theirs);
            let state = atomics(&words);
            let mut stack = seeds.clone();
            let mut diverted = Vec::new();
            let count = propagate_diverting(
                &state,
                &level,
                Rules::Awari,
                i,
                &mut stack,
                &mut |q, won| {
                    diverted.push((q, won));
                    theirs(q)
                },
            );
            diverted.retain(|&(q, _)| theirs(q));
            diverted.sort_unstable();
            assert_eq!(
                (count, plain(state)),
                (kept_count, want_kept),
                "step {i}, diverting"
            );
            assert_eq!(diverted, want_diverted, "step {i}");
        }
    }

    #[test]
    fn counts_sort_values_by_sign_and_add_up() {
        let mut a = LevelCounts::default();
        for v in [3, 1, 0, -1, -2, -48, 48, 0] {
            a.add(v);
        }
        assert_eq!((a.wins, a.draws, a.losses), (3, 2, 3));
        let b = LevelCounts {
            wins: 10,
            draws: 20,
            losses: 30,
        };
        assert_eq!(
            a.merge(b),
            LevelCounts {
                wins: 13,
                draws: 22,
                losses: 33
            }
        );
    }
}
