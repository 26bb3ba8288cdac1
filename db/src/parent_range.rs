//! A range of a level's indices as the un-move generators filter parents into it: a pass that
//! fills a bucket of the level streams every child (the lower levels for captures, the level
//! itself for quiet moves) and keeps the parents whose index lies in the bucket. Most parents
//! do not; this finds many of the children none of whose parents can, before any is made.
//!
//! Index order sorts a level's boards by pit 11 first (the mover's opponent's last pit; see
//! [`Level::rank`]), so every board of an index range has its pit 11 between those of the
//! range's first and last boards. A parent's pit 11 is what the move left there (the child's
//! pit 5, the child being seen from the other side) less the seeds the sowing dropped in it,
//! or, where the move captured pit 11, the 2 or 3 the sowing made it less those seeds:
//!
//! ```text
//!   child after the move, parent's side:  a[0..5] mover's row | a[6..11] opponent's row
//!   parent's pit 11 = a[11] − k           k = the times the sowing passed pit 11
//!                   = 2 or 3 − k ≤ 2      when pit 11 was captured (then a[11] = 0, k ≥ 1)
//! ```
//!
//! A sowing passes pit 11 at most once unless it goes round the board; each lap after the
//! first leaves a seed in every pit of the mover's row but the one played, which no capture
//! takes. So k ≤ 1 + the second smallest pit of a's mover row (the smallest may be the pit
//! played, empty): with two empty pits there, k ≤ 1.

use std::ops::Range;

use crate::index::Level;
use crate::packed::{pit, rotate_packed, Packed};

/// An index range of a level and the span of pit 11 over its boards (see the module).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParentRange {
    range: Range<u64>,
    /// Pit 11 of the range's first and last boards.
    pit11: (u8, u8),
}

impl Level {
    /// `range` (clamped to the level) as un-move generators filter parents into it.
    pub fn parent_range(&self, range: Range<u64>) -> ParentRange {
        let end = range.end.min(self.size());
        let start = range.start.min(end);
        let pit11 = if start < end {
            (
                self.unrank(start).pits()[11],
                self.unrank(end - 1).pits()[11],
            )
        } else {
            // No board: no parent can fall in it.
            (1, 0)
        };
        ParentRange {
            range: start..end,
            pit11,
        }
    }
}

impl ParentRange {
    /// The indices.
    pub fn range(&self) -> &Range<u64> {
        &self.range
    }

    /// Whether the child `child` (packed, from its mover's side) may have a parent in the
    /// range: by a non-capturing move, or with `captures` a capture (which may have emptied
    /// pit 11). `false` only where no parent can be (see the module); `true` says nothing.
    #[inline]
    pub(crate) fn may_hold_a_parent_of(&self, child: Packed, captures: bool) -> bool {
        let (lo, hi) = self.pit11;
        if lo > hi {
            // An empty range.
            return false;
        }
        let a = rotate_packed(child);
        let a11 = pit(a, 11);
        if captures && a11 == 0 {
            // Pit 11 captured (2 or 3 less at least the seed that made it so: 2 at most) or
            // left at 0.
            return lo <= 2;
        }
        if a11 < lo {
            return false;
        }
        if a11 <= hi {
            return true;
        }
        // a11 > hi: only a sowing that passed pit 11 more than a11 − hi times.
        a11 - hi <= most_passes_over_pit_11(a)
    }
}

/// The most times a move that left `a` (the parent's side) can have passed pit 11: 1, plus one
/// for each lap the second smallest pit of the mover's row allows (see the module).
#[inline]
fn most_passes_over_pit_11(a: Packed) -> u8 {
    let (mut least, mut second) = (u8::MAX, u8::MAX);
    for i in 0..6 {
        let v = pit(a, i);
        if v < least {
            second = least;
            least = v;
        } else if v < second {
            second = v;
        }
    }
    second.saturating_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packed::pack;
    use crate::{level_exists, Board, Rules, SplitMix64};

    /// Every parent of every child sampled (both kinds of move, every rule set) whose index
    /// lies in a range lies there only if the filter let its child through: the filter never
    /// drops a child with a parent in range. And it drops some.
    #[test]
    fn no_child_with_a_parent_in_range_is_dropped() {
        let mut rng = SplitMix64(41);
        let mut dropped = 0u64;
        let mut kept_with_parents = 0u64;
        for rules in Rules::ALL {
            for n in [6u32, 11, 17, 23, 30, 38, 46] {
                let parent_level = Level::new(n);
                // A few ranges: quarters, tiny ones, one spanning a pit-11 boundary.
                let size = parent_level.size();
                let mut ranges: Vec<Range<u64>> =
                    (0..4).map(|k| size * k / 4..size * (k + 1) / 4).collect();
                for _ in 0..4 {
                    let s = rng.below(size);
                    ranges.push(s..(s + 1 + rng.below(size / 50 + 1)).min(size));
                }
                let ranges: Vec<ParentRange> = ranges
                    .into_iter()
                    .map(|r| parent_level.parent_range(r))
                    .collect();
                // Quiet moves: children in the same level; captures: children c below.
                for c in [0u8, 2, 3, 4, 5, 6] {
                    let Some(m) = n.checked_sub(u32::from(c)).filter(|&m| level_exists(m)) else {
                        continue;
                    };
                    let child_level = Level::new(m);
                    for _ in 0..3000 {
                        let child = child_level.unrank(rng.below(child_level.size()));
                        let parents: Vec<u64> = if c == 0 {
                            let mut v = Vec::new();
                            child.for_each_ranked_predecessor(rules, &parent_level, |q, _| {
                                v.push(q)
                            });
                            v
                        } else {
                            let mut v = Vec::new();
                            child.for_each_ranked_uncapture(rules, c, &parent_level, |q, _| {
                                v.push(q)
                            });
                            v
                        };
                        for r in &ranges {
                            let through = r.may_hold_a_parent_of(pack(&child.pits()), c > 0);
                            let inside = parents.iter().any(|q| r.range().contains(q));
                            assert!(
                                through || !inside,
                                "{rules:?} level {n}, c {c}: {child:?} dropped from {r:?}"
                            );
                            dropped += u64::from(!through);
                            kept_with_parents += u64::from(through && inside);
                        }
                    }
                }
            }
        }
        assert!(dropped > 0 && kept_with_parents > 0);
    }

    /// The bound on the passes over pit 11: one more than the second smallest pit of the
    /// mover's row, whichever pits hold them (ties too); the opponent's row does not count.
    #[test]
    fn the_passes_over_pit_11_follow_the_second_smallest_pit() {
        for (row, most) in [
            ([0, 0, 4, 4, 4, 4], 1),
            ([0, 5, 3, 9, 7, 6], 4),
            ([4, 4, 4, 4, 4, 0], 5),
            ([2, 2, 7, 8, 9, 0], 3),
            ([6, 1, 1, 8, 0, 3], 2),
            ([7, 9, 8, 0, 6, 12], 7),
        ] {
            let mut pits = [0u8; 12];
            pits[..6].copy_from_slice(&row);
            pits[6..].copy_from_slice(&[0, 1, 0, 2, 0, 3]);
            assert_eq!(most_passes_over_pit_11(pack(&pits)), most, "{row:?}");
        }
    }

    /// The pit-11 span of a range: the first and last boards', and no board of the range
    /// outside it.
    #[test]
    fn the_span_bounds_pit_11_over_the_range() {
        let level = Level::new(12);
        let size = level.size();
        for r in [0..size, 0..1, size / 3..size / 2, size - 5..size] {
            let pr = level.parent_range(r.clone());
            let (lo, hi) = pr.pit11;
            for b in level.boards(r) {
                let p = b.pits()[11];
                assert!(lo <= p && p <= hi, "{b:?} outside {lo}..={hi}");
            }
        }
        let empty = level.parent_range(5..5);
        let b: Board = level.unrank(5);
        assert!(!empty.may_hold_a_parent_of(pack(&b.pits()), true));
    }
}
